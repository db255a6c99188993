/* problem.c -- the choice problem (cost graph): building, validation,
 * evaluation of plans, and the JSON cost-graph file (docs/costgraph.md).
 *
 * DESIGN: records (as_pnode, as_pedge, ...) live in growable vectors and
 * their arrays in the problem's arena, so a whole problem is released by one
 * as_arena_free plus a few vector frees.  Node names are unique and indexed
 * by a string map.  Plans are checked here, independently of any solver:
 * the solve driver calls as_problem_check on every plan a backend returns.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formulate/ilp.h"
#include "formulate/problem.h"

struct as_problem {
    as_arena *arena;
    AS_VEC(as_pnode) nodes;
    AS_VEC(as_pedge) edges;
    AS_VEC(as_plive) live;
    AS_VEC(as_plive) segs;           /**< liveness segments (seg = parent), parents first */
    AS_VEC(double) seg_hi;           /**< each segment's largest bytes, its parents'
                                          included */
    AS_VEC(as_palias) aliases;
    AS_VEC(size_t *) nogoods;
    as_strmap names;  /**< node name -> index */
    double memory;    /**< bytes per device, 0 = none */
    double offset;    /**< seconds */
    size_t nperm;     /**< axis permutations of the nodes' images (0: none) */
    as_vpool vpool; /**< the memory vectors entries copied into the arena, each once
                         (make_entries): a reduced 3-axis problem's rows repeat the same
                         vectors (gpt3-175b 4x4x4: 639k entries of 273 strategies on
                         average, 1.4 GB as copies) */
    int valid;        /**< as_problem_validate passed and nothing was added or set since:
                           it returns at once (a solve validates the same problem 3 times) */
    const unsigned char *live_on; /**< as_problem_set_live_mask (borrowed), or NULL */
};

#define MEM_TOL(x) (1e-9 * fabs(x) + 1e-6)

as_problem *
as_problem_new(void)
{
    as_problem *p = as_xcalloc(1, sizeof *p);

    p->arena = as_arena_new();
    as_strmap_init(&p->names);
    return p;
}

void
as_problem_free(as_problem *p)
{
    if (p == NULL)
        return;
    AS_VEC_FREE(&p->nodes);
    AS_VEC_FREE(&p->edges);
    AS_VEC_FREE(&p->live);
    as_vpool_destroy(&p->vpool);
    AS_VEC_FREE(&p->segs);
    AS_VEC_FREE(&p->seg_hi);
    AS_VEC_FREE(&p->aliases);
    AS_VEC_FREE(&p->nogoods);
    as_strmap_destroy(&p->names);
    as_arena_free(p->arena);
    free(p);
}

static double *
dup_vec(as_arena *a, const double *x, size_t n)
{
    double *y = as_arena_calloc(a, n ? n : 1, sizeof *y);

    if (x != NULL)
        memcpy(y, x, n * sizeof *y);
    return y;
}

int
as_problem_add_node(as_problem *p, const char *name, size_t k, const double *c, const double *d,
                    const double *m, size_t *id, as_err *err)
{
    as_pnode nd = {0};
    int64_t old;

    p->valid = 0;
    if (name == NULL || name[0] == '\0')
        return as_errf(err, AS_EUSAGE, "node %zu: empty name", p->nodes.n);
    if (as_strmap_get(&p->names, name, (size_t)-1, &old))
        return as_errf(err, AS_EUSAGE, "duplicate node name '%s' (nodes %lld and %zu)", name,
                       (long long)old, p->nodes.n);
    if (k == 0)
        return as_errf(err, AS_EUSAGE, "node '%s': no strategies", name);
    nd.name = as_arena_strdup(p->arena, name);
    nd.k = k;
    nd.c = dup_vec(p->arena, c, k);
    nd.d = dup_vec(p->arena, d, k);
    nd.m = dup_vec(p->arena, m, k);
    nd.follow = AS_NO_FOLLOW;
    as_strmap_put(&p->names, nd.name, (int64_t)p->nodes.n);
    if (id != NULL)
        *id = p->nodes.n;
    AS_VEC_PUSH(&p->nodes, nd);
    return AS_OK;
}

int
as_problem_set_strategy_name(as_problem *p, size_t v, size_t s, const char *name, as_err *err)
{
    as_pnode *nd;
    const char **names;

    p->valid = 0;
    if (v >= p->nodes.n || s >= p->nodes.v[v].k || name == NULL)
        return as_errf(err, AS_EUSAGE, "strategy name: node %zu strategy %zu out of range", v, s);
    nd = &p->nodes.v[v];
    if (nd->snames == NULL)
        nd->snames = as_arena_calloc(p->arena, nd->k, sizeof(char *));
    names = (const char **)nd->snames;
    names[s] = as_arena_strdup(p->arena, name);
    return AS_OK;
}

int
as_problem_set_axis_image(as_problem *p, size_t v, size_t nperm, const size_t *img, as_err *err)
{
    as_pnode *nd;
    size_t *dst, i;

    p->valid = 0;
    if (v >= p->nodes.n || nperm == 0 || nperm > AS_AXIS_PERM_MAX ||
        (p->nperm != 0 && p->nperm != nperm))
        return as_errf(err, AS_EUSAGE, "axis image: node %zu or %zu permutations out of range", v,
                       nperm);
    nd = &p->nodes.v[v];
    for (i = 0; i < nperm * nd->k; i++)
        if (img[i] != AS_NO_IMAGE && img[i] >= nd->k)
            return as_errf(err, AS_EUSAGE, "axis image: node %zu: strategy %zu out of range", v,
                           img[i]);
    dst = as_arena_calloc(p->arena, nperm * nd->k, sizeof *dst);
    memcpy(dst, img, nperm * nd->k * sizeof *dst);
    nd->img = dst;
    p->nperm = nperm;
    return AS_OK;
}

size_t
as_problem_axis_perms(const as_problem *p)
{
    return p->nperm;
}

int
as_problem_set_follow(as_problem *p, size_t v, size_t leader, as_err *err)
{
    p->valid = 0;
    if (v >= p->nodes.n || (leader != AS_NO_FOLLOW && leader >= p->nodes.n))
        return as_errf(err, AS_EUSAGE, "follow: node %zu or leader %zu out of range", v, leader);
    p->nodes.v[v].follow = leader;
    return AS_OK;
}

int
as_problem_add_edge(as_problem *p, size_t u, size_t v, const double *r, as_err *err)
{
    p->valid = 0;
    if (u >= p->nodes.n || v >= p->nodes.n) /* as_problem_add_edge_ref says so */
        return as_problem_add_edge_ref(p, u, v, r, err);
    return as_problem_add_edge_ref(p, u, v,
                                   dup_vec(p->arena, r, p->nodes.v[u].k * p->nodes.v[v].k), err);
}

int
as_problem_add_edge_ref(as_problem *p, size_t u, size_t v, const double *r, as_err *err)
{
    as_pedge e;

    p->valid = 0;
    if (u >= p->nodes.n || v >= p->nodes.n)
        return as_errf(err, AS_EUSAGE, "edge %zu: node index out of range (%zu -> %zu, %zu nodes)",
                       p->edges.n, u, v, p->nodes.n);
    e.u = u;
    e.v = v;
    e.r = r;
    AS_VEC_PUSH(&p->edges, e);
    return AS_OK;
}

/* X[0..k) in P's arena: a copy made before for the same values, else a new one. */
static const double *
intern_vec(as_problem *p, const double *x, size_t k)
{
    const double *y = as_vpool_find(&p->vpool, x, k);

    if (y == NULL) {
        y = dup_vec(p->arena, x, k);
        as_vpool_add(&p->vpool, y, k);
    }
    return y;
}

/* Entries NODES[0..n) with vectors M (NULL: the nodes' own) copied into P's arena as L
   (equal copies shared: entries' vectors are read-only). */
static int
make_entries(as_problem *p, const size_t *nodes, const double *const *m, size_t n,
             const char *what, size_t idx, as_plive *l, as_err *err)
{
    size_t i, *nv;
    const double **mv;

    p->valid = 0;
    for (i = 0; i < n; i++)
        if (nodes[i] >= p->nodes.n)
            return as_errf(err, AS_EUSAGE, "%s %zu: node index %zu out of range", what, idx,
                           nodes[i]);
    nv = as_arena_calloc(p->arena, n ? n : 1, sizeof *nv);
    mv = as_arena_calloc(p->arena, n ? n : 1, sizeof *mv);
    for (i = 0; i < n; i++) {
        nv[i] = nodes[i];
        mv[i] = m != NULL && m[i] != NULL ? intern_vec(p, m[i], p->nodes.v[nodes[i]].k)
                                          : p->nodes.v[nodes[i]].m;
    }
    l->n = n;
    l->nodes = nv;
    l->m = mv;
    l->resident = 0;
    l->seg = AS_NO_SEG;
    for (i = 0; i < AS_LIVE_MORE; i++)
        l->more[i] = AS_NO_SEG;
    return AS_OK;
}

int
as_problem_add_liveness_seg(as_problem *p, const size_t *nodes, const double *const *m,
                            size_t n, double resident, const size_t *seg, size_t nseg,
                            as_err *err)
{
    as_plive l;
    size_t i, k = 0;

    p->valid = 0;
    for (i = 0; i < nseg; i++)
        if (seg[i] != AS_NO_SEG && seg[i] >= p->segs.n)
            return as_errf(err, AS_EUSAGE, "liveness point %zu: segment %zu out of range",
                           p->live.n, seg[i]);
    AS_CHECK(make_entries(p, nodes, m, n, "liveness point", p->live.n, &l, err));
    l.resident = resident;
    for (i = 0; i < nseg; i++) {
        if (seg[i] == AS_NO_SEG)
            continue;
        if (k > AS_LIVE_MORE)
            return as_errf(err, AS_EUSAGE, "liveness point %zu: more than %d segments",
                           p->live.n, AS_LIVE_MORE + 1);
        if (k == 0)
            l.seg = seg[i];
        else
            l.more[k - 1] = seg[i];
        k++;
    }
    AS_VEC_PUSH(&p->live, l);
    return AS_OK;
}

int
as_problem_add_liveness_m(as_problem *p, const size_t *nodes, const double *const *m, size_t n,
                          double resident, as_err *err)
{
    p->valid = 0;
    return as_problem_add_liveness_seg(p, nodes, m, n, resident, NULL, 0, err);
}

int
as_problem_add_liveness(as_problem *p, const size_t *nodes, size_t n, double resident,
                        as_err *err)
{
    p->valid = 0;
    return as_problem_add_liveness_m(p, nodes, NULL, n, resident, err);
}

int
as_problem_add_live_seg(as_problem *p, const size_t *nodes, const double *const *m, size_t n,
                        size_t parent, size_t *id, as_err *err)
{
    as_plive l;
    double hi, mx;
    size_t i, s;

    p->valid = 0;
    if (parent != AS_NO_SEG && parent >= p->segs.n)
        return as_errf(err, AS_EUSAGE, "liveness segment %zu: parent %zu is not an earlier "
                       "segment", p->segs.n, parent);
    AS_CHECK(make_entries(p, nodes, m, n, "liveness segment", p->segs.n, &l, err));
    l.seg = parent;
    hi = parent != AS_NO_SEG ? p->seg_hi.v[parent] : 0;
    for (i = 0; i < n; i++) {
        mx = 0;
        for (s = 0; s < p->nodes.v[l.nodes[i]].k; s++)
            mx = fmax(mx, l.m[i][s]);
        hi += mx;
    }
    if (id != NULL)
        *id = p->segs.n;
    AS_VEC_PUSH(&p->segs, l);
    AS_VEC_PUSH(&p->seg_hi, hi);
    return AS_OK;
}

size_t as_problem_nsegs(const as_problem *p) { return p->segs.n; }
const as_plive *as_problem_live_seg(const as_problem *p, size_t j) { return &p->segs.v[j]; }

/* The sum of V over the segments a point L holds (its chains' last segments). */
static double
chains(const as_plive *l, const double *v)
{
    double sum = l->seg != AS_NO_SEG ? v[l->seg] : 0;
    int i;

    for (i = 0; i < AS_LIVE_MORE; i++)
        if (l->more[i] != AS_NO_SEG)
            sum += v[l->more[i]];
    return sum;
}

const as_plive *
as_plive_begin(as_plive_iter *it, const as_problem *p, const as_plive *l)
{
    int i;

    it->p = p;
    it->e = l;
    it->nnext = 0;
    for (i = AS_LIVE_MORE; i-- > 0;)
        if (l->more[i] != AS_NO_SEG)
            it->next[it->nnext++] = l->more[i];
    return l;
}

const as_plive *
as_plive_next(as_plive_iter *it)
{
    size_t j = it->e->seg;

    if (j == AS_NO_SEG && it->nnext > 0) /* the end of a chain: the next one */
        j = it->next[--it->nnext];
    it->e = j != AS_NO_SEG ? &it->p->segs.v[j] : NULL;
    return it->e;
}

double *
as_problem_seg_bytes(const as_problem *p, const size_t *x)
{
    double *sum = as_xcalloc(p->segs.n + 1, sizeof *sum);
    size_t j, i;

    for (j = 0; j < p->segs.n; j++) {
        const as_plive *l = &p->segs.v[j];
        sum[j] = l->seg != AS_NO_SEG ? sum[l->seg] : 0;
        for (i = 0; i < l->n; i++)
            sum[j] += l->m[i][x[l->nodes[i]]];
    }
    return sum;
}

double
as_problem_live_bytes(const as_problem *p, size_t t, const double *segs, const size_t *x)
{
    const as_plive *l = &p->live.v[t];
    double sum = l->resident + chains(l, segs);
    size_t i;

    for (i = 0; i < l->n; i++)
        sum += l->m[i][x[l->nodes[i]]];
    return sum;
}

int
as_problem_add_alias(as_problem *p, size_t a, size_t b, const unsigned char *bad, as_err *err)
{
    as_palias al;
    size_t n;

    p->valid = 0;
    if (a >= p->nodes.n || b >= p->nodes.n)
        return as_errf(err, AS_EUSAGE, "alias %zu: node index out of range", p->aliases.n);
    n = p->nodes.v[a].k * p->nodes.v[b].k;
    al.a = a;
    al.b = b;
    al.bad = as_arena_calloc(p->arena, n, 1);
    if (bad != NULL)
        memcpy((unsigned char *)al.bad, bad, n);
    AS_VEC_PUSH(&p->aliases, al);
    return AS_OK;
}

int
as_problem_add_nogood(as_problem *p, const size_t *choice, as_err *err)
{
    size_t *c = as_arena_memdup(p->arena, choice, (p->nodes.n ? p->nodes.n : 1) * sizeof *c);
    size_t i;

    p->valid = 0;
    for (i = 0; i < p->nodes.n; i++)
        if (choice[i] >= p->nodes.v[i].k)
            return as_errf(err, AS_EUSAGE, "no-good: strategy %zu of node '%s' out of range",
                           choice[i], p->nodes.v[i].name);
    AS_VEC_PUSH(&p->nogoods, c);
    return AS_OK;
}

void
as_problem_set_memory(as_problem *p, double bytes)
{
    p->valid = 0;
    p->memory = bytes;
}

void
as_problem_set_offset(as_problem *p, double seconds)
{
    p->valid = 0;
    p->offset = seconds;
}

as_problem *
as_problem_clone(const as_problem *p)
{
    as_problem *q = as_problem_new();
    size_t i, s;

    for (i = 0; i < p->nodes.n; i++) {
        const as_pnode *nd = &p->nodes.v[i];
        as_problem_add_node(q, nd->name, nd->k, nd->c, nd->d, nd->m, NULL, NULL);
        q->nodes.v[i].follow = nd->follow;
        for (s = 0; nd->snames != NULL && s < nd->k; s++)
            if (nd->snames[s] != NULL)
                as_problem_set_strategy_name(q, i, s, nd->snames[s], NULL);
        if (nd->img != NULL)
            as_problem_set_axis_image(q, i, p->nperm, nd->img, NULL);
    }
    for (i = 0; i < p->edges.n; i++)
        as_problem_add_edge(q, p->edges.v[i].u, p->edges.v[i].v, p->edges.v[i].r, NULL);
    for (i = 0; i < p->segs.n + p->live.n; i++) { /* segments first: points refer to them */
        const as_plive *l = i < p->segs.n ? &p->segs.v[i] : &p->live.v[i - p->segs.n];
        const double **m = as_xcalloc(l->n + 1, sizeof *m);
        for (s = 0; s < l->n; s++) /* NULL: the node's own vector, as in P */
            m[s] = l->m[s] == p->nodes.v[l->nodes[s]].m ? NULL : l->m[s];
        if (i < p->segs.n)
            as_problem_add_live_seg(q, l->nodes, m, l->n, l->seg, NULL, NULL);
        else
        {
            size_t segs[1 + AS_LIVE_MORE];
            segs[0] = l->seg;
            memcpy(segs + 1, l->more, sizeof l->more);
            as_problem_add_liveness_seg(q, l->nodes, m, l->n, l->resident, segs,
                                        1 + AS_LIVE_MORE, NULL);
        }
        free(m);
    }
    for (i = 0; i < p->aliases.n; i++)
        as_problem_add_alias(q, p->aliases.v[i].a, p->aliases.v[i].b, p->aliases.v[i].bad, NULL);
    for (i = 0; i < p->nogoods.n; i++)
        as_problem_add_nogood(q, p->nogoods.v[i], NULL);
    q->memory = p->memory;
    q->offset = p->offset;
    if (p->live_on != NULL) /* the clone keeps the mask, in its own arena */
        q->live_on = as_arena_memdup(q->arena, p->live_on, p->live.n + 1);
    return q;
}

/* Queries. */

size_t as_problem_nnodes(const as_problem *p) { return p->nodes.n; }
size_t as_problem_nedges(const as_problem *p) { return p->edges.n; }
size_t as_problem_nlive(const as_problem *p) { return p->live.n; }
size_t as_problem_naliases(const as_problem *p) { return p->aliases.n; }
size_t as_problem_nnogoods(const as_problem *p) { return p->nogoods.n; }
const as_pnode *as_problem_node(const as_problem *p, size_t v) { return &p->nodes.v[v]; }
const as_pedge *as_problem_edge(const as_problem *p, size_t j) { return &p->edges.v[j]; }
const as_plive *as_problem_live(const as_problem *p, size_t t) { return &p->live.v[t]; }
const as_palias *as_problem_alias(const as_problem *p, size_t i) { return &p->aliases.v[i]; }
const size_t *as_problem_nogood(const as_problem *p, size_t i) { return p->nogoods.v[i]; }
double as_problem_memory(const as_problem *p) { return p->memory; }
double as_problem_offset(const as_problem *p) { return p->offset; }

int
as_problem_find(const as_problem *p, const char *name, size_t *v)
{
    int64_t x;

    if (!as_strmap_get(&p->names, name, (size_t)-1, &x))
        return 0;
    *v = (size_t)x;
    return 1;
}

const char *
as_problem_strategy_name(const as_problem *p, size_t v, size_t s, char *buf, size_t n)
{
    const as_pnode *nd = &p->nodes.v[v];

    if (nd->snames != NULL && s < nd->k && nd->snames[s] != NULL)
        return nd->snames[s];
    snprintf(buf, n, "S%zu", s);
    return buf;
}

double
as_problem_space(const as_problem *p)
{
    double x = 1;
    size_t i;

    for (i = 0; i < p->nodes.n; i++)
        if (p->nodes.v[i].follow == AS_NO_FOLLOW)
            x *= (double)p->nodes.v[i].k;
    return x;
}

/* Validation. */

static int
check_vec(const double *x, size_t k, int mem, const char *what, const char *node, as_err *err)
{
    size_t s;

    for (s = 0; s < k; s++) {
        if (!isfinite(x[s]))
            return as_errf(err, AS_EPARSE, "node '%s': %s[%zu] is not finite", node, what, s);
        if (mem && x[s] < 0)
            return as_errf(err, AS_EPARSE, "node '%s': memory %s[%zu] = %g is negative", node,
                           what, s, x[s]);
    }
    return AS_OK;
}

static int
validate_nodes(const as_problem *p, as_err *err)
{
    size_t i, j, hops;

    for (i = 0; i < p->nodes.n; i++) {
        const as_pnode *nd = &p->nodes.v[i];
        AS_CHECK(check_vec(nd->c, nd->k, 0, "c", nd->name, err));
        AS_CHECK(check_vec(nd->d, nd->k, 0, "d", nd->name, err));
        AS_CHECK(check_vec(nd->m, nd->k, 1, "m", nd->name, err));
        if (nd->follow == AS_NO_FOLLOW)
            continue;
        if (nd->follow >= p->nodes.n)
            return as_errf(err, AS_EPARSE, "node '%s': follow index %zu out of range", nd->name,
                           nd->follow);
        if (p->nodes.v[nd->follow].k != nd->k)
            return as_errf(err, AS_EPARSE,
                           "node '%s' (%zu strategies) follows '%s' (%zu strategies): "
                           "counts differ", nd->name, nd->k, p->nodes.v[nd->follow].name,
                           p->nodes.v[nd->follow].k);
        for (j = nd->follow, hops = 0; p->nodes.v[j].follow != AS_NO_FOLLOW; hops++) {
            if (j == i || hops > p->nodes.n)
                return as_errf(err, AS_EPARSE, "node '%s': follow cycle", nd->name);
            j = p->nodes.v[j].follow;
        }
        if (j == i)
            return as_errf(err, AS_EPARSE, "node '%s': follow cycle", nd->name);
    }
    return AS_OK;
}

/* An edge's sort key: its node pair (duplicates) or its matrix and size (checked once). */
typedef struct edge_key {
    uintptr_t x, y;
    size_t j;
} edge_key;

static int
edge_key_cmp(const void *pa, const void *pb)
{
    const edge_key *a = pa, *b = pb;

    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    if (a->y != b->y)
        return a->y < b->y ? -1 : 1;
    return a->j < b->j ? -1 : a->j > b->j;
}

/*
 * FIRST[j] = the smallest index with the same key as edge j (sorting, not a
 * string map: this runs before every solve).
 */
static void
first_of(edge_key *k, size_t n, size_t *first)
{
    size_t i;

    qsort(k, n, sizeof *k, edge_key_cmp);
    for (i = 0; i < n; i++)
        first[k[i].j] = i > 0 && k[i].x == k[i - 1].x && k[i].y == k[i - 1].y
                            ? first[k[i - 1].j] : k[i].j;
}

static int
validate_edges(const as_problem *p, as_err *err)
{
    size_t ne = p->edges.n, j, q;
    edge_key *k = as_xcalloc(ne + 1, sizeof *k);
    size_t *dup = as_xcalloc(ne + 1, sizeof *dup), *chk = as_xcalloc(ne + 1, sizeof *chk);
    int rc = AS_OK;

    for (j = 0; j < ne; j++) {
        const as_pedge *e = &p->edges.v[j];
        k[j].x = e->u < e->v ? e->u : e->v;
        k[j].y = e->u < e->v ? e->v : e->u;
        k[j].j = j;
    }
    first_of(k, ne, dup);
    for (j = 0; j < ne; j++) {
        const as_pedge *e = &p->edges.v[j];
        k[j].x = (uintptr_t)e->r;
        k[j].y = p->nodes.v[e->u].k * p->nodes.v[e->v].k;
        k[j].j = j;
    }
    first_of(k, ne, chk);
    for (j = 0; j < ne && rc == AS_OK; j++) {
        const as_pedge *e = &p->edges.v[j];
        size_t n = p->nodes.v[e->u].k * p->nodes.v[e->v].k;
        if (e->u == e->v) {
            rc = as_errf(err, AS_EPARSE, "edge %zu: self-loop on node '%s'", j,
                         p->nodes.v[e->u].name);
            break;
        }
        if (dup[j] != j) {
            rc = as_errf(err, AS_EPARSE, "edge %zu: duplicate of edge %lld ('%s' - '%s')", j,
                         (long long)dup[j], p->nodes.v[e->u].name, p->nodes.v[e->v].name);
            break;
        }
        /* a matrix shared by many edges (as_problem_add_edge_ref) is checked once */
        if (chk[j] != j)
            continue;
        for (q = 0; q < n; q++)
            if (!isfinite(e->r[q])) {
                rc = as_errf(err, AS_EPARSE, "edge %zu ('%s' -> '%s'): r[%zu][%zu] is not finite",
                             j, p->nodes.v[e->u].name, p->nodes.v[e->v].name,
                             q / p->nodes.v[e->v].k, q % p->nodes.v[e->v].k);
                break;
            }
    }
    free(k);
    free(dup);
    free(chk);
    return rc;
}

int
as_problem_validate(const as_problem *p, as_err *err)
{
    size_t t, i, s;

    if (p->valid)
        return AS_OK;
    if (p->nodes.n == 0)
        return as_errf(err, AS_EPARSE, "cost graph has no nodes");
    if (!isfinite(p->memory) || p->memory < 0)
        return as_errf(err, AS_EPARSE, "memory budget %g is not a finite number >= 0", p->memory);
    if (!isfinite(p->offset))
        return as_errf(err, AS_EPARSE, "objective offset is not finite");
    AS_CHECK(validate_nodes(p, err));
    AS_CHECK(validate_edges(p, err));
    for (t = 0; t < p->live.n; t++) {
        const as_plive *l = &p->live.v[t];
        if (!isfinite(l->resident) || l->resident < 0)
            return as_errf(err, AS_EPARSE, "liveness point %zu: resident bytes %g invalid", t,
                           l->resident);
        for (i = 0; i < l->n; i++)
            for (s = 0; s < p->nodes.v[l->nodes[i]].k; s++)
                if (!isfinite(l->m[i][s]) || l->m[i][s] < 0)
                    return as_errf(err, AS_EPARSE, "liveness point %zu: memory of '%s' invalid",
                                   t, p->nodes.v[l->nodes[i]].name);
    }
    for (t = 0; t < p->segs.n; t++) {
        const as_plive *l = &p->segs.v[t];
        for (i = 0; i < l->n; i++)
            for (s = 0; s < p->nodes.v[l->nodes[i]].k; s++)
                if (!isfinite(l->m[i][s]) || l->m[i][s] < 0)
                    return as_errf(err, AS_EPARSE, "liveness segment %zu: memory of '%s' "
                                   "invalid", t, p->nodes.v[l->nodes[i]].name);
    }
    ((as_problem *)p)->valid = 1; /* p is never const itself: callers lend it as const */
    return AS_OK;
}

/* Plans. */

double
as_problem_eval(const as_problem *p, const size_t *x)
{
    double obj = p->offset;
    size_t i;

    for (i = 0; i < p->nodes.n; i++)
        obj += p->nodes.v[i].c[x[i]] + p->nodes.v[i].d[x[i]];
    for (i = 0; i < p->edges.n; i++) {
        const as_pedge *e = &p->edges.v[i];
        obj += e->r[x[e->u] * p->nodes.v[e->v].k + x[e->v]];
    }
    return obj;
}

double
as_problem_peak(const as_problem *p, const size_t *x)
{
    double peak = 0, sum, *segs = as_problem_seg_bytes(p, x);
    size_t t;

    for (t = 0; t < p->live.n; t++) {
        if (p->live_on != NULL && !p->live_on[t])
            continue;
        sum = as_problem_live_bytes(p, t, segs, x);
        if (sum > peak)
            peak = sum;
    }
    free(segs);
    return peak;
}

void
as_problem_set_live_mask(as_problem *p, const unsigned char *on)
{
    p->live_on = on;
}

double
as_problem_live_expanded(const as_problem *p)
{
    double *len = as_xcalloc(p->segs.n + 1, sizeof *len), tot = 0;
    size_t t;
    int i;

    for (t = 0; t < p->segs.n; t++) /* parents come first */
        len[t] = (double)p->segs.v[t].n +
                 (p->segs.v[t].seg != AS_NO_SEG ? len[p->segs.v[t].seg] : 0);
    for (t = 0; t < p->live.n; t++) {
        const as_plive *l = &p->live.v[t];
        if (!as_problem_live_binds(p, t))
            continue;
        tot += (double)l->n + (l->seg != AS_NO_SEG ? len[l->seg] : 0);
        for (i = 0; i < AS_LIVE_MORE; i++)
            if (l->more[i] != AS_NO_SEG)
                tot += len[l->more[i]];
    }
    free(len);
    return tot;
}

/* Strategy S of node V can be in a plan: neither it nor the strategy of the
 * same index on its follow chain costs AS_ILP_FORBIDDEN_COST or more (what the
 * ILP forbids: strategies an axis role rules out). */
static int
allowed(const as_problem *p, size_t v, size_t s)
{
    size_t hops;

    for (hops = 0; hops <= p->nodes.n; hops++) {
        const as_pnode *nd = &p->nodes.v[v];
        if (!(nd->c[s] + nd->d[s] < AS_ILP_FORBIDDEN_COST))
            return 0;
        if (nd->follow == AS_NO_FOLLOW)
            return 1;
        v = nd->follow;
    }
    return 1;
}

/* The smallest bytes of entry I of L over the strategies a plan may hold,
 * OK[OFF[node] + s] (over all of them when none is allowed: no plan then, the
 * bound stays finite). */
static double
entry_lo(const as_problem *p, const as_plive *l, size_t i, const unsigned char *ok,
         const size_t *off)
{
    double lo = INFINITY, any = INFINITY;
    size_t s, v = l->nodes[i];

    for (s = 0; s < p->nodes.v[v].k; s++) {
        any = fmin(any, l->m[i][s]);
        if (ok[off[v] + s] && l->m[i][s] < lo)
            lo = l->m[i][s];
    }
    return isfinite(lo) ? lo : any;
}

double
as_problem_peak_lower_bound(const as_problem *p)
{
    double peak = 0, sum, *seg = as_xmalloc((p->segs.n + 1) * sizeof *seg);
    size_t t, i, s, tot = 0, *off = as_xmalloc((p->nodes.n + 1) * sizeof *off);
    unsigned char *ok;

    /* which strategies a plan may hold: once per node */
    for (t = 0; t < p->nodes.n; t++) {
        off[t] = tot;
        tot += p->nodes.v[t].k;
    }
    ok = as_xmalloc(tot + 1);
    for (t = 0; t < p->nodes.n; t++)
        for (s = 0; s < p->nodes.v[t].k; s++)
            ok[off[t] + s] = (unsigned char)allowed(p, t, s);
    /* once per segment (parents come first), shared by every point holding it */
    for (t = 0; t < p->segs.n; t++) {
        const as_plive *l = &p->segs.v[t];
        seg[t] = l->seg != AS_NO_SEG ? seg[l->seg] : 0;
        for (i = 0; i < l->n; i++)
            seg[t] += entry_lo(p, l, i, ok, off);
    }
    for (t = 0; t < p->live.n; t++) {
        const as_plive *l = &p->live.v[t];
        sum = l->resident + chains(l, seg);
        for (i = 0; i < l->n; i++)
            sum += entry_lo(p, l, i, ok, off);
        peak = fmax(peak, sum);
    }
    free(seg);
    free(off);
    free(ok);
    return peak;
}

double
as_problem_memory_cap(const as_problem *p)
{
    return p->memory > 0 ? p->memory + MEM_TOL(p->memory) : INFINITY;
}

static int
check_rows(const as_problem *p, const size_t *x, as_err *err)
{
    size_t t, i, j;
    char b1[32], b2[32];
    double *segs = p->memory > 0 ? as_problem_seg_bytes(p, x) : NULL;

    for (t = 0; p->memory > 0 && t < p->live.n; t++) {
        double sum;
        if (p->live_on != NULL && !p->live_on[t])
            continue;
        sum = as_problem_live_bytes(p, t, segs, x);
        if (sum > as_problem_memory_cap(p)) {
            free(segs);
            as_fmt_bytes(sum, b1, sizeof b1);
            as_fmt_bytes(p->memory, b2, sizeof b2);
            if (strcmp(b1, b2) == 0) { /* 976.56 KiB and 976.56 KiB: tell them apart */
                snprintf(b1, sizeof b1, "%.0f B", ceil(sum));
                snprintf(b2, sizeof b2, "%.0f B", floor(p->memory));
            }
            return as_errf(err, AS_EINFEAS, "liveness point %zu needs %s per device, budget %s", t,
                           b1, b2);
        }
    }
    free(segs);
    for (i = 0; i < p->aliases.n; i++) {
        const as_palias *a = &p->aliases.v[i];
        if (a->bad[x[a->a] * p->nodes.v[a->b].k + x[a->b]])
            return as_errf(err, AS_EINFEAS, "alias %zu: strategies %zu of '%s' and %zu of '%s' "
                           "are incompatible", i, x[a->a], p->nodes.v[a->a].name, x[a->b],
                           p->nodes.v[a->b].name);
    }
    for (i = 0; i < p->nogoods.n; i++) {
        for (j = 0; j < p->nodes.n && p->nogoods.v[i][j] == x[j]; j++)
            ;
        if (j == p->nodes.n)
            return as_errf(err, AS_EINFEAS, "plan equals excluded plan %zu", i);
    }
    return AS_OK;
}

int
as_problem_check(const as_problem *p, const size_t *x, double *objective, double *peak,
                 as_err *err)
{
    size_t i;

    for (i = 0; i < p->nodes.n; i++) {
        const as_pnode *nd = &p->nodes.v[i];
        if (x[i] >= nd->k)
            return as_errf(err, AS_EINFEAS, "strategy %zu for node '%s' out of range (%zu)", x[i],
                           nd->name, nd->k);
        if (nd->follow != AS_NO_FOLLOW && x[nd->follow] != x[i])
            return as_errf(err, AS_EINFEAS, "node '%s' has strategy %zu but follows '%s' with %zu",
                           nd->name, x[i], p->nodes.v[nd->follow].name, x[nd->follow]);
    }
    AS_CHECK(check_rows(p, x, err));
    if (objective != NULL)
        *objective = as_problem_eval(p, x);
    if (peak != NULL)
        *peak = as_problem_peak(p, x);
    return AS_OK;
}

/* ---- Cost-graph files (JSON) ---- */

/* Read a JSON array of K finite numbers at PATH into X. */
static int
json_vec(json_t *a, size_t k, double *x, int nonneg, const char *file, const char *path,
         as_err *err)
{
    size_t s;

    if (!json_is_array(a))
        return as_errf(err, AS_EPARSE, "%s: %s: expected an array of %zu numbers", file, path, k);
    if (json_array_size(a) != k)
        return as_errf(err, AS_EPARSE, "%s: %s: expected %zu numbers, got %zu", file, path, k,
                       json_array_size(a));
    for (s = 0; s < k; s++) {
        json_t *v = json_array_get(a, s);
        if (!json_is_number(v))
            return as_errf(err, AS_EPARSE, "%s: %s[%zu]: expected a number", file, path, s);
        x[s] = json_number_value(v);
        if (!isfinite(x[s]))
            return as_errf(err, AS_EPARSE, "%s: %s[%zu]: not a finite number", file, path, s);
        if (nonneg && x[s] < 0)
            return as_errf(err, AS_EPARSE, "%s: %s[%zu]: memory %g is negative", file, path, s,
                           x[s]);
    }
    return AS_OK;
}

/* Read a non-negative integer index below N. */
static int
json_index(json_t *v, size_t n, size_t *out, const char *file, const char *path, as_err *err)
{
    json_int_t i;

    if (!json_is_integer(v))
        return as_errf(err, AS_EPARSE, "%s: %s: expected a node index", file, path);
    i = json_integer_value(v);
    if (i < 0 || (size_t)i >= n)
        return as_errf(err, AS_EPARSE, "%s: %s: node index %lld out of range (%zu nodes)", file,
                       path, (long long)i, n);
    *out = (size_t)i;
    return AS_OK;
}

/* Read a K1 x K2 matrix (array of K1 arrays of K2) row-major into X. */
static int
json_mat(json_t *a, size_t k1, size_t k2, double *x, const char *file, const char *path,
         as_err *err)
{
    char sub[96];
    size_t i;

    if (!json_is_array(a) || json_array_size(a) != k1)
        return as_errf(err, AS_EPARSE, "%s: %s: expected %zu rows of %zu numbers", file, path, k1,
                       k2);
    for (i = 0; i < k1; i++) {
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        AS_CHECK(json_vec(json_array_get(a, i), k2, x + i * k2, 0, file, sub, err));
    }
    return AS_OK;
}

static int
parse_nodes(as_problem *p, json_t *arr, const char *file, as_err *err)
{
    char path[96];
    size_t i, k, s, id;
    double *buf = NULL;
    int rc = AS_OK;

    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return as_errf(err, AS_EPARSE, "%s: nodes: expected a non-empty array", file);
    for (i = 0; i < json_array_size(arr) && rc == AS_OK; i++) {
        json_t *nd = json_array_get(arr, i), *c = json_object_get(nd, "c");
        json_t *name = json_object_get(nd, "name"), *sn = json_object_get(nd, "strategies");
        snprintf(path, sizeof path, "nodes[%zu]", i);
        if (!json_is_object(nd) || !json_is_string(name) || !json_is_array(c)) {
            rc = as_errf(err, AS_EPARSE, "%s: %s: expected an object with \"name\" and \"c\"",
                         file, path);
            break;
        }
        k = json_array_size(c);
        if (k == 0) {
            rc = as_errf(err, AS_EPARSE, "%s: %s.c: no strategies", file, path);
            break;
        }
        buf = as_xreallocarray(buf, 3 * k, sizeof *buf);
        memset(buf, 0, 3 * k * sizeof *buf);
        snprintf(path, sizeof path, "nodes[%zu].c", i);
        AS_CHECK_GOTO(rc, json_vec(c, k, buf, 0, file, path, err), out);
        snprintf(path, sizeof path, "nodes[%zu].d", i);
        if (json_object_get(nd, "d") != NULL)
            AS_CHECK_GOTO(rc, json_vec(json_object_get(nd, "d"), k, buf + k, 0, file, path, err),
                          out);
        snprintf(path, sizeof path, "nodes[%zu].m", i);
        if (json_object_get(nd, "m") != NULL)
            AS_CHECK_GOTO(rc, json_vec(json_object_get(nd, "m"), k, buf + 2 * k, 1, file, path,
                                       err), out);
        rc = as_problem_add_node(p, json_string_value(name), k, buf, buf + k, buf + 2 * k, &id,
                                 err);
        if (rc != AS_OK) {
            as_err_prefix(err, "%s: nodes[%zu]: ", file, i);
            rc = err->code = AS_EPARSE;
            break;
        }
        if (sn != NULL && (!json_is_array(sn) || json_array_size(sn) != k)) {
            rc = as_errf(err, AS_EPARSE, "%s: nodes[%zu].strategies: expected %zu names", file, i,
                         k);
            break;
        }
        for (s = 0; sn != NULL && s < k; s++) {
            if (!json_is_string(json_array_get(sn, s))) {
                rc = as_errf(err, AS_EPARSE, "%s: nodes[%zu].strategies[%zu]: expected a string",
                             file, i, s);
                goto out;
            }
            as_problem_set_strategy_name(p, id, s, json_string_value(json_array_get(sn, s)), err);
        }
    }
out:
    free(buf);
    return rc;
}

static int
parse_follow(as_problem *p, json_t *arr, const char *file, as_err *err)
{
    char path[64];
    size_t i, f;

    for (i = 0; i < json_array_size(arr); i++) {
        json_t *fv = json_object_get(json_array_get(arr, i), "follow");
        if (fv == NULL || json_is_null(fv))
            continue;
        snprintf(path, sizeof path, "nodes[%zu].follow", i);
        AS_CHECK(json_index(fv, p->nodes.n, &f, file, path, err));
        if (f == i)
            return as_errf(err, AS_EPARSE, "%s: %s: node follows itself", file, path);
        if (p->nodes.v[f].k != p->nodes.v[i].k)
            return as_errf(err, AS_EPARSE, "%s: %s: follows node %zu with %zu strategies, has %zu",
                           file, path, f, p->nodes.v[f].k, p->nodes.v[i].k);
        p->nodes.v[i].follow = f;
    }
    return AS_OK;
}

static int
parse_edges(as_problem *p, json_t *arr, const char *file, as_err *err)
{
    char path[64];
    size_t j, u, v;
    double *r = NULL;
    int rc = AS_OK;

    if (arr != NULL && !json_is_array(arr))
        return as_errf(err, AS_EPARSE, "%s: edges: expected an array", file);
    for (j = 0; j < json_array_size(arr); j++) {
        json_t *e = json_array_get(arr, j);
        snprintf(path, sizeof path, "edges[%zu].u", j);
        AS_CHECK_GOTO(rc, json_index(json_object_get(e, "u"), p->nodes.n, &u, file, path, err),
                      out);
        snprintf(path, sizeof path, "edges[%zu].v", j);
        AS_CHECK_GOTO(rc, json_index(json_object_get(e, "v"), p->nodes.n, &v, file, path, err),
                      out);
        r = as_xreallocarray(r, p->nodes.v[u].k * p->nodes.v[v].k + 1, sizeof *r);
        snprintf(path, sizeof path, "edges[%zu].r", j);
        AS_CHECK_GOTO(rc, json_mat(json_object_get(e, "r"), p->nodes.v[u].k, p->nodes.v[v].k, r,
                                   file, path, err), out);
        as_problem_add_edge(p, u, v, r, err);
    }
out:
    free(r);
    return rc;
}

/* Liveness point or segment WHAT ("liveness[3]", "segments[2]") with explicit memory
   vectors: "m": [[...], ...], one per entry.  SEG: a segment (parent SEGS[0]), else a point
   in segments SEGS[0..1 + AS_LIVE_MORE). */
static int
parse_live_m(as_problem *p, json_t *ms, const size_t *nodes, size_t n, double resident,
             const size_t *segs, const char *what, int seg, const char *file,
             as_err *err)
{
    char path[96];
    double **m = as_xcalloc(n + 1, sizeof *m);
    size_t i;
    int rc = AS_OK;

    if (!json_is_array(ms) || json_array_size(ms) != n) {
        rc = as_errf(err, AS_EPARSE, "%s: %s.m: expected %zu vectors", file, what, n);
        goto out;
    }
    for (i = 0; i < n; i++) {
        m[i] = as_xcalloc(p->nodes.v[nodes[i]].k, sizeof **m);
        snprintf(path, sizeof path, "%s.m[%zu]", what, i);
        AS_CHECK_GOTO(rc, json_vec(json_array_get(ms, i), p->nodes.v[nodes[i]].k, m[i], 1, file,
                                   path, err), out);
    }
    rc = seg ? as_problem_add_live_seg(p, nodes, (const double *const *)m, n, segs[0], NULL, err)
             : as_problem_add_liveness_seg(p, nodes, (const double *const *)m, n, resident,
                                           segs, 1 + AS_LIVE_MORE, err);
out:
    for (i = 0; i < n; i++)
        free(m[i]);
    free(m);
    return rc;
}

/* Segment index V (KEY of WHAT) into *OUT: an earlier segment. */
static int
json_seg(const as_problem *p, json_t *v, const char *key, const char *what, const char *file,
         size_t *out, as_err *err)
{
    json_int_t j = json_integer_value(v);

    if (!json_is_integer(v) || j < 0 || (size_t)j >= as_problem_nsegs(p))
        return as_errf(err, AS_EPARSE, "%s: %s.%s: expected the index of an earlier segment "
                       "(%zu so far)", file, what, key, as_problem_nsegs(p));
    *out = (size_t)j;
    return AS_OK;
}

/* One liveness point WHAT ("segments": [j, ...]), or segment when SEG ("parent": j; no
   resident bytes). */
static int
parse_point(as_problem *p, json_t *l, const char *what, int seg, const char *file, as_err *err)
{
    char path[96];
    json_t *ns = json_object_get(l, "nodes"), *res = json_object_get(l, "resident");
    json_t *up = json_object_get(l, seg ? "parent" : "segments");
    double resident = 0;
    size_t i, *nodes, segs[1 + AS_LIVE_MORE];
    int rc = AS_OK;

    if (!json_is_array(ns))
        return as_errf(err, AS_EPARSE, "%s: %s.nodes: expected an array", file, what);
    if (res != NULL) {
        resident = json_number_value(res);
        if (!json_is_number(res) || resident < 0 || seg)
            return as_errf(err, AS_EPARSE, "%s: %s.resident: expected bytes >= 0%s", file, what,
                           seg ? " in a point, not a segment" : "");
    }
    for (i = 0; i < 1 + AS_LIVE_MORE; i++)
        segs[i] = AS_NO_SEG;
    if (up != NULL && seg)
        AS_CHECK(json_seg(p, up, "parent", what, file, &segs[0], err));
    if (up != NULL && !seg) {
        if (!json_is_array(up) || json_array_size(up) > 1 + AS_LIVE_MORE)
            return as_errf(err, AS_EPARSE, "%s: %s.segments: expected an array of at most %d "
                           "segment indices", file, what, 1 + AS_LIVE_MORE);
        for (i = 0; i < json_array_size(up); i++)
            AS_CHECK(json_seg(p, json_array_get(up, i), "segments", what, file, &segs[i], err));
    }
    nodes = as_xcalloc(json_array_size(ns) + 1, sizeof *nodes);
    for (i = 0; i < json_array_size(ns); i++) {
        snprintf(path, sizeof path, "%s.nodes[%zu]", what, i);
        AS_CHECK_GOTO(rc, json_index(json_array_get(ns, i), p->nodes.n, &nodes[i], file, path,
                                     err), out);
    }
    if (json_object_get(l, "m") != NULL)
        rc = parse_live_m(p, json_object_get(l, "m"), nodes, json_array_size(ns), resident,
                          segs, what, seg, file, err);
    else if (seg)
        rc = as_problem_add_live_seg(p, nodes, NULL, json_array_size(ns), segs[0], NULL, err);
    else
        rc = as_problem_add_liveness_seg(p, nodes, NULL, json_array_size(ns), resident, segs,
                                         1 + AS_LIVE_MORE, err);
out:
    free(nodes);
    return rc;
}

/* The segments SEGS (each after its parent), then the liveness points ARR. */
static int
parse_live(as_problem *p, json_t *arr, json_t *segs, const char *file, as_err *err)
{
    char what[64];
    size_t t;

    if (arr != NULL && !json_is_array(arr))
        return as_errf(err, AS_EPARSE, "%s: liveness: expected an array", file);
    if (segs != NULL && !json_is_array(segs))
        return as_errf(err, AS_EPARSE, "%s: segments: expected an array", file);
    for (t = 0; t < json_array_size(segs); t++) {
        snprintf(what, sizeof what, "segments[%zu]", t);
        AS_CHECK(parse_point(p, json_array_get(segs, t), what, 1, file, err));
    }
    for (t = 0; t < json_array_size(arr); t++) {
        snprintf(what, sizeof what, "liveness[%zu]", t);
        AS_CHECK(parse_point(p, json_array_get(arr, t), what, 0, file, err));
    }
    return AS_OK;
}

static int
parse_aliases(as_problem *p, json_t *arr, const char *file, as_err *err)
{
    char path[64];
    size_t i, a, b, s, n;
    double *x = NULL;
    unsigned char *bad = NULL;
    int rc = AS_OK;

    if (arr != NULL && !json_is_array(arr))
        return as_errf(err, AS_EPARSE, "%s: aliases: expected an array", file);
    for (i = 0; i < json_array_size(arr); i++) {
        json_t *al = json_array_get(arr, i);
        snprintf(path, sizeof path, "aliases[%zu].a", i);
        AS_CHECK_GOTO(rc, json_index(json_object_get(al, "a"), p->nodes.n, &a, file, path, err),
                      out);
        snprintf(path, sizeof path, "aliases[%zu].b", i);
        AS_CHECK_GOTO(rc, json_index(json_object_get(al, "b"), p->nodes.n, &b, file, path, err),
                      out);
        n = p->nodes.v[a].k * p->nodes.v[b].k;
        x = as_xreallocarray(x, n, sizeof *x);
        bad = as_xrealloc(bad, n);
        snprintf(path, sizeof path, "aliases[%zu].incompatible", i);
        AS_CHECK_GOTO(rc, json_mat(json_object_get(al, "incompatible"), p->nodes.v[a].k,
                                   p->nodes.v[b].k, x, file, path, err), out);
        for (s = 0; s < n; s++) {
            if (x[s] != 0 && x[s] != 1) {
                rc = as_errf(err, AS_EPARSE, "%s: %s: entries must be 0 or 1", file, path);
                goto out;
            }
            bad[s] = x[s] != 0;
        }
        as_problem_add_alias(p, a, b, bad, err);
    }
out:
    free(x);
    free(bad);
    return rc;
}

static int
parse_root(as_problem *p, json_t *root, const char *file, as_err *err)
{
    json_t *mem = json_object_get(root, "memory"), *off = json_object_get(root, "offset");
    json_t *fmt = json_object_get(root, "format");

    if (!json_is_object(root))
        return as_errf(err, AS_EPARSE, "%s: expected a JSON object at the top level", file);
    if (fmt != NULL && (!json_is_string(fmt) ||
                        strcmp(json_string_value(fmt), "autoshard-costgraph") != 0))
        return as_errf(err, AS_EPARSE, "%s: format: expected \"autoshard-costgraph\"", file);
    if (mem != NULL && (!json_is_number(mem) || json_number_value(mem) < 0))
        return as_errf(err, AS_EPARSE, "%s: memory: expected bytes >= 0", file);
    if (off != NULL && !json_is_number(off))
        return as_errf(err, AS_EPARSE, "%s: offset: expected a number of seconds", file);
    p->memory = mem != NULL ? json_number_value(mem) : 0;
    p->offset = off != NULL ? json_number_value(off) : 0;
    AS_CHECK(parse_nodes(p, json_object_get(root, "nodes"), file, err));
    AS_CHECK(parse_follow(p, json_object_get(root, "nodes"), file, err));
    AS_CHECK(parse_edges(p, json_object_get(root, "edges"), file, err));
    AS_CHECK(parse_live(p, json_object_get(root, "liveness"), json_object_get(root, "segments"),
                         file, err));
    AS_CHECK(parse_aliases(p, json_object_get(root, "aliases"), file, err));
    return AS_OK;
}

int
as_problem_parse(const char *text, size_t len, const char *name, as_problem **out, as_err *err)
{
    json_error_t jerr;
    json_t *root;
    as_problem *p;
    int rc;

    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return as_errf(err, AS_EPARSE, "%s:%d:%d: %s", name, jerr.line > 0 ? jerr.line : 1,
                       jerr.column > 0 ? jerr.column : 1, jerr.text);
    p = as_problem_new();
    rc = parse_root(p, root, name, err);
    if (rc == AS_OK && (rc = as_problem_validate(p, err)) != AS_OK)
        as_err_prefix(err, "%s: ", name);
    if (rc != AS_OK)
        as_err_json_pos(err, name, text, len);
    json_decref(root);
    if (rc != AS_OK) {
        as_problem_free(p);
        return rc;
    }
    *out = p;
    return AS_OK;
}

int
as_problem_read(const char *path, as_problem **out, as_err *err)
{
    char *buf;
    size_t len;
    int rc;

    AS_CHECK(as_read_file(path, &buf, &len, err));
    rc = as_problem_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

/* Writing. */

static json_t *
jvec(const double *x, size_t k)
{
    json_t *a = json_array();
    size_t s;

    for (s = 0; s < k; s++)
        json_array_append_new(a, json_real(x[s]));
    return a;
}

static json_t *
jmat(const double *x, size_t k1, size_t k2)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; i < k1; i++)
        json_array_append_new(a, jvec(x + i * k2, k2));
    return a;
}

static json_t *
dump_nodes(const as_problem *p)
{
    json_t *arr = json_array(), *o, *sn;
    size_t i, s;
    char buf[32];

    for (i = 0; i < p->nodes.n; i++) {
        const as_pnode *nd = &p->nodes.v[i];
        o = json_object();
        json_object_set_new(o, "name", json_string(nd->name));
        json_object_set_new(o, "c", jvec(nd->c, nd->k));
        json_object_set_new(o, "d", jvec(nd->d, nd->k));
        json_object_set_new(o, "m", jvec(nd->m, nd->k));
        if (nd->follow != AS_NO_FOLLOW)
            json_object_set_new(o, "follow", json_integer((json_int_t)nd->follow));
        if (nd->snames != NULL) {
            sn = json_array();
            for (s = 0; s < nd->k; s++)
                json_array_append_new(sn, json_string(as_problem_strategy_name(p, i, s, buf,
                                                                               sizeof buf)));
            json_object_set_new(o, "strategies", sn);
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

/* One liveness point as {"nodes": [...], "resident": R[, "segment": J][, "m": [...]]}, or
   segment (SEG) as {"nodes": [...][, "parent": J][, "m": [...]]}. */
static json_t *
dump_point(const as_problem *p, const as_plive *l, int seg)
{
    json_t *ns = json_array(), *o;
    size_t j;

    for (j = 0; j < l->n; j++)
        json_array_append_new(ns, json_integer((json_int_t)l->nodes[j]));
    o = json_pack("{s:o}", "nodes", ns);
    if (!seg)
        json_object_set_new(o, "resident", json_real(l->resident));
    if (seg && l->seg != AS_NO_SEG)
        json_object_set_new(o, "parent", json_integer((json_int_t)l->seg));
    if (!seg && l->seg != AS_NO_SEG) {
        json_t *sg = json_array();
        json_array_append_new(sg, json_integer((json_int_t)l->seg));
        for (j = 0; j < AS_LIVE_MORE; j++)
            if (l->more[j] != AS_NO_SEG)
                json_array_append_new(sg, json_integer((json_int_t)l->more[j]));
        json_object_set_new(o, "segments", sg);
    }
    for (j = 0; j < l->n; j++)
        if (l->m[j] != p->nodes.v[l->nodes[j]].m)
            break;
    if (j < l->n) { /* explicit memory vectors (e.g. a reduced problem) */
        json_t *ms = json_array();
        for (j = 0; j < l->n; j++)
            json_array_append_new(ms, jvec(l->m[j], p->nodes.v[l->nodes[j]].k));
        json_object_set_new(o, "m", ms);
    }
    return o;
}

static json_t *
dump_rest(const as_problem *p, json_t *root)
{
    json_t *arr, *o;
    size_t i, j, s;
    double *x;

    arr = json_array();
    for (j = 0; j < p->edges.n; j++) {
        const as_pedge *e = &p->edges.v[j];
        o = json_pack("{s:I,s:I}", "u", (json_int_t)e->u, "v", (json_int_t)e->v);
        json_object_set_new(o, "r", jmat(e->r, p->nodes.v[e->u].k, p->nodes.v[e->v].k));
        json_array_append_new(arr, o);
    }
    json_object_set_new(root, "edges", arr);
    if (p->segs.n > 0) {
        arr = json_array();
        for (i = 0; i < p->segs.n; i++)
            json_array_append_new(arr, dump_point(p, &p->segs.v[i], 1));
        json_object_set_new(root, "segments", arr);
    }
    arr = json_array();
    for (i = 0; i < p->live.n; i++)
        json_array_append_new(arr, dump_point(p, &p->live.v[i], 0));
    json_object_set_new(root, "liveness", arr);
    arr = json_array();
    for (i = 0; i < p->aliases.n; i++) {
        const as_palias *a = &p->aliases.v[i];
        size_t n = p->nodes.v[a->a].k * p->nodes.v[a->b].k;
        x = as_xcalloc(n, sizeof *x);
        for (s = 0; s < n; s++)
            x[s] = a->bad[s];
        o = json_pack("{s:I,s:I}", "a", (json_int_t)a->a, "b", (json_int_t)a->b);
        json_object_set_new(o, "incompatible", jmat(x, p->nodes.v[a->a].k, p->nodes.v[a->b].k));
        json_array_append_new(arr, o);
        free(x);
    }
    json_object_set_new(root, "aliases", arr);
    return root;
}

char *
as_problem_dumps(const as_problem *p)
{
    json_t *root = json_object();
    char *s, *out;

    json_object_set_new(root, "format", json_string("autoshard-costgraph"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "memory", json_real(p->memory));
    json_object_set_new(root, "offset", json_real(p->offset));
    json_object_set_new(root, "nodes", dump_nodes(p));
    dump_rest(p, root);
    s = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    out = as_xasprintf("%s\n", s);
    free(s);
    return out;
}

int
as_problem_write(const as_problem *p, const char *path, as_err *err)
{
    char *s = as_problem_dumps(p);
    int rc = as_write_file_atomic(path, s, strlen(s), err);

    free(s);
    return rc;
}

/* ---- random instances ---- */

void
as_random_opts_init(as_random_opts *o)
{
    memset(o, 0, sizeof *o);
    o->nodes = 10;
    o->edges = 12;
    o->kmin = 2;
    o->kmax = 4;
    o->seed = 1;
}

/* Node costs: label 0 is replicated (slow, big), others are sharded variants. */
static void
random_node(as_rng *r, size_t k, const int *label, double size, double *c, double *d, double *m)
{
    size_t s;

    for (s = 0; s < k; s++) {
        double shards = label[s] == 0 ? 1 : label[s] == 3 ? 4 : 2;
        c[s] = size / shards * (0.8 + 0.4 * as_rng_uniform(r));
        d[s] = label[s] == 0 ? 0 : size * 0.3 * as_rng_uniform(r) * (as_rng_uniform(r) < 0.5);
        m[s] = floor(size * 1000 / shards);
    }
}

static void
random_edges(as_problem *p, as_rng *r, const as_random_opts *o, int **labels, const double *size)
{
    size_t i, added = 0, tries = 0, u, v, a, b;
    double *mat;

    for (i = 1; i < o->nodes; i++) {
        size_t ku = p->nodes.v[i - 1].k, kv = p->nodes.v[i].k;
        mat = as_xcalloc(ku * kv, sizeof *mat);
        for (a = 0; a < ku; a++)
            for (b = 0; b < kv; b++)
                mat[a * kv + b] = labels[i - 1][a] == labels[i][b] ? 0
                                  : size[i - 1] * (0.5 + as_rng_uniform(r));
        as_problem_add_edge(p, i - 1, i, mat, NULL);
        free(mat);
        added++;
    }
    while (added < o->edges && tries++ < 20 * o->edges && o->nodes > 2) {
        v = (size_t)as_rng_range(r, 2, (int64_t)o->nodes - 1);
        u = v - (size_t)as_rng_range(r, 2, v < 6 ? (int64_t)v : 6);
        for (i = 0; i < p->edges.n; i++)
            if (p->edges.v[i].u == u && p->edges.v[i].v == v)
                break;
        if (i < p->edges.n)
            continue;
        mat = as_xcalloc(p->nodes.v[u].k * p->nodes.v[v].k, sizeof *mat);
        for (a = 0; a < p->nodes.v[u].k; a++)
            for (b = 0; b < p->nodes.v[v].k; b++)
                mat[a * p->nodes.v[v].k + b] = labels[u][a] == labels[v][b] ? 0
                                               : size[u] * (0.5 + as_rng_uniform(r));
        as_problem_add_edge(p, u, v, mat, NULL);
        free(mat);
        added++;
    }
}

static void
random_rows(as_problem *p, as_rng *r, const as_random_opts *o, int **labels)
{
    size_t i, t, a, b, *nodes = as_xcalloc(o->live_window + 1, sizeof *nodes);
    double maxpeak = 0, sum, hi;
    unsigned char *bad;

    for (t = 0; o->live_window > 0 && t < o->nodes; t++) {
        size_t n = 0, first = t + 1 >= o->live_window ? t + 1 - o->live_window : 0;
        sum = 500;
        for (i = first; i <= t; i++) {
            nodes[n++] = i;
            for (a = 0, hi = 0; a < p->nodes.v[i].k; a++)
                hi = fmax(hi, p->nodes.v[i].m[a]);
            sum += hi;
        }
        maxpeak = fmax(maxpeak, sum);
        as_problem_add_liveness(p, nodes, n, 500, NULL);
    }
    free(nodes);
    if (o->memory_frac > 0 && o->live_window > 0) {
        double lb = as_problem_peak_lower_bound(p);
        p->memory = floor(lb + o->memory_frac * (maxpeak - lb));
    }
    for (i = 0; i < o->aliases && o->nodes > 1; i++) {
        size_t x = (size_t)as_rng_range(r, 0, (int64_t)o->nodes - 1), y;
        y = (size_t)as_rng_range(r, 0, (int64_t)o->nodes - 1);
        if (x == y)
            y = (x + 1) % o->nodes;
        bad = as_xcalloc(p->nodes.v[x].k * p->nodes.v[y].k, 1);
        for (a = 0; a < p->nodes.v[x].k; a++)
            for (b = 0; b < p->nodes.v[y].k; b++)
                bad[a * p->nodes.v[y].k + b] = labels[x][a] != labels[y][b];
        as_problem_add_alias(p, x, y, bad, NULL);
        free(bad);
    }
}

as_problem *
as_problem_random(const as_random_opts *o)
{
    as_problem *p = as_problem_new();
    as_rng r;
    size_t i, s, k;
    int **labels = as_xcalloc(o->nodes + 1, sizeof *labels);
    double *size = as_xcalloc(o->nodes + 1, sizeof *size), *c, *d, *m;
    char name[32];

    as_rng_seed(&r, o->seed);
    for (i = 0; i < o->nodes; i++) {
        int follows = i > 0 && as_rng_uniform(&r) < o->follow;
        k = follows ? p->nodes.v[i - 1].k
                    : (size_t)as_rng_range(&r, (int64_t)o->kmin, (int64_t)o->kmax);
        labels[i] = as_xcalloc(k, sizeof **labels);
        for (s = 0; s < k; s++) /* label 0 first, then a random mix */
            labels[i][s] = follows ? labels[i - 1][s] : s < 4 ? (int)s : (int)as_rng_range(&r, 0, 3);
        size[i] = 1 + 9 * as_rng_uniform(&r);
        c = as_xcalloc(3 * k, sizeof *c);
        d = c + k;
        m = c + 2 * k;
        random_node(&r, k, labels[i], size[i], c, d, m);
        snprintf(name, sizeof name, "op%zu", i);
        as_problem_add_node(p, name, k, c, d, m, NULL, NULL);
        if (follows)
            p->nodes.v[i].follow = i - 1;
        free(c);
    }
    random_edges(p, &r, o, labels, size);
    random_rows(p, &r, o, labels);
    for (i = 0; i < o->nodes; i++)
        free(labels[i]);
    free(labels);
    free(size);
    return p;
}

int
as_problem_live_binds(const as_problem *p, size_t t)
{
    const as_plive *l = as_problem_live(p, t);
    double mem = as_problem_memory(p);
    double worst = l->resident + chains(l, p->seg_hi.v);
    size_t i, s;

    if (mem <= 0 || (p->live_on != NULL && !p->live_on[t]))
        return 0;
    for (i = 0; i < l->n; i++) {
        double mx = 0;
        for (s = 0; s < as_problem_node(p, l->nodes[i])->k; s++)
            mx = fmax(mx, l->m[i][s]);
        worst += mx;
    }
    return worst > mem;
}
