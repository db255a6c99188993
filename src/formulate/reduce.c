/* reduce.c -- exact reductions of the choice problem, and recovery.
 *
 * DESIGN: the problem is copied into a working multigraph over leaders
 * (nodes that follow nobody): a follower adds its cost vector to its
 * leader's and its edges are re-attached to the leader (an edge inside one
 * follow group becomes the diagonal of its matrix, added to the cost).
 * Parallel edges are summed, constant matrices go to the objective offset.
 * Then the PBQP reductions (Scholz & Eckstein; Hames & Scholz) run to a
 * fixpoint on nodes that no memory, alias or no-good row mentions:
 *   R0: degree 0 -> pick argmin c_x, offset += min;
 *   R1: neighbour y -> c_y[p] += min_q (R_yx[p,q] + c_x[q]);
 *   R2: neighbours y, z -> R_yz[p,r] += min_q (R_yx[p,q] + c_x[q] + R_xz[q,r]).
 * Each elimination stores the argmin table indexed by its neighbours'
 * choices; recovery replays them in reverse order, so every table lookup
 * sees neighbours that are already decided.  All three are exact: for any
 * fixed choice of the remaining nodes the eliminated node's best response is
 * what the table holds, and its cost is what was folded in.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formulate/problem.h"

typedef struct wedge {
    size_t u, v;  /**< leader indices */
    double *r;    /**< k_u x k_v row-major */
    int alive;
} wedge;

typedef struct wnode {
    double *cost;         /**< c + d of the whole follow group plus folded costs */
    int pinned, alive;
    AS_VEC(size_t) adj;   /**< incident edge indices (dead ones skipped) */
} wnode;

typedef struct elim {
    size_t x, y, z;   /**< eliminated node, neighbours (deg 1: y; deg 2: y, z) */
    size_t kz;        /**< strategies of z (deg 2) */
    int deg;
    size_t choice;    /**< deg 0 */
    size_t *best;     /**< deg 1: [p_y]; deg 2: [p_y * k_z + p_z] */
} elim;

struct as_reduction {
    size_t n;               /**< nodes of the original problem */
    size_t *leader;         /**< leader of each original node */
    size_t *origin;         /**< reduced index -> original index */
    size_t nred;
    AS_VEC(elim) elims;
    as_reduce_stats stats;
};

typedef struct work {
    const as_problem *p;
    unsigned flags;
    wnode *nodes;
    AS_VEC(wedge) edges;
    double offset;
    as_reduction *red;
} work;

static size_t
kof(const work *w, size_t v)
{
    return as_problem_node(w->p, v)->k;
}

/* R value for node FROM at strategy A and the other end at B. */
static double
rget(const work *w, const wedge *e, size_t from, size_t a, size_t b)
{
    return e->u == from ? e->r[a * kof(w, e->v) + b] : e->r[b * kof(w, e->v) + a];
}

static int
is_const(const double *r, size_t n)
{
    size_t i;

    for (i = 1; i < n; i++)
        if (r[i] != r[0])
            return 0;
    return 1;
}

/* Add matrix R (k_u x k_v) between U and V, merging with a live edge there. Takes R. */
static void
work_add_edge(work *w, size_t u, size_t v, double *r)
{
    size_t i, p, q, ku = kof(w, u), kv = kof(w, v);
    wedge e;

    for (i = 0; i < w->nodes[u].adj.n; i++) {
        wedge *o = &w->edges.v[w->nodes[u].adj.v[i]];
        if (!o->alive || (o->u != v && o->v != v))
            continue;
        for (p = 0; p < ku; p++)
            for (q = 0; q < kv; q++)
                if (o->u == u)
                    o->r[p * kv + q] += r[p * kv + q];
                else
                    o->r[q * ku + p] += r[p * kv + q];
        free(r);
        w->red->stats.merged_edges++;
        if ((w->flags & AS_REDUCE_CONST) && is_const(o->r, ku * kv)) {
            w->offset += o->r[0];
            o->alive = 0;
            w->red->stats.const_edges++;
        }
        return;
    }
    if ((w->flags & AS_REDUCE_CONST) && is_const(r, ku * kv)) {
        w->offset += r[0];
        free(r);
        w->red->stats.const_edges++;
        return;
    }
    e.u = u;
    e.v = v;
    e.r = r;
    e.alive = 1;
    AS_VEC_PUSH(&w->edges, e);
    AS_VEC_PUSH(&w->nodes[u].adj, w->edges.n - 1);
    AS_VEC_PUSH(&w->nodes[v].adj, w->edges.n - 1);
}

/* Live incident edges of X, up to 3, into OUT; returns the count (3 = "3 or more"). */
static size_t
work_degree(const work *w, size_t x, size_t out[3])
{
    size_t i, d = 0;

    for (i = 0; i < w->nodes[x].adj.n && d < 3; i++)
        if (w->edges.v[w->nodes[x].adj.v[i]].alive)
            out[d++] = w->nodes[x].adj.v[i];
    return d;
}

static void
work_init(work *w, const as_problem *p)
{
    size_t n = as_problem_nnodes(p), v, s, t, i;
    as_reduction *red = w->red;

    w->nodes = as_xcalloc(n, sizeof *w->nodes);
    for (v = 0; v < n; v++) {
        size_t l = v;
        while ((w->flags & AS_REDUCE_FOLLOW) && as_problem_node(p, l)->follow != AS_NO_FOLLOW)
            l = as_problem_node(p, l)->follow;
        red->leader[v] = l;
        if (l != v)
            red->stats.followers++;
    }
    for (v = 0; v < n; v++) {
        const as_pnode *nd = as_problem_node(p, v);
        wnode *L = &w->nodes[red->leader[v]];
        if (L->cost == NULL)
            L->cost = as_xcalloc(nd->k, sizeof *L->cost);
        for (s = 0; s < nd->k; s++)
            L->cost[s] += nd->c[s] + nd->d[s];
        L->alive = 1;
        /* unmerged follow links must stay visible: pin both ends */
        if (nd->follow != AS_NO_FOLLOW && red->leader[v] == v)
            w->nodes[v].pinned = w->nodes[nd->follow].pinned = 1;
    }
    for (t = 0; as_problem_memory(p) > 0 && t < as_problem_nlive(p); t++) {
        const as_plive *l = as_problem_live(p, t);
        if (!as_problem_live_binds(p, t))
            continue;
        for (i = 0; i < l->n; i++)
            for (s = 0; s < as_problem_node(p, l->nodes[i])->k; s++)
                if (l->m[i][s] != 0)
                    w->nodes[red->leader[l->nodes[i]]].pinned = 1;
    }
    for (i = 0; i < as_problem_naliases(p); i++) {
        w->nodes[red->leader[as_problem_alias(p, i)->a]].pinned = 1;
        w->nodes[red->leader[as_problem_alias(p, i)->b]].pinned = 1;
    }
    for (v = 0; as_problem_nnogoods(p) > 0 && v < n; v++)
        w->nodes[v].pinned = 1;
}

static void
work_edges(work *w)
{
    const as_problem *p = w->p;
    size_t j, a, b, ka, kb, s, q;

    for (j = 0; j < as_problem_nedges(p); j++) {
        const as_pedge *e = as_problem_edge(p, j);
        a = w->red->leader[e->u];
        b = w->red->leader[e->v];
        ka = kof(w, e->u);
        kb = kof(w, e->v);
        if (a == b) { /* both ends share one strategy index */
            for (s = 0; s < ka; s++)
                w->nodes[a].cost[s] += e->r[s * kb + s];
            continue;
        }
        double *r = as_xmalloc(ka * kb * sizeof *r);
        for (s = 0; s < ka; s++)
            for (q = 0; q < kb; q++)
                r[s * kb + q] = e->r[s * kb + q];
        work_add_edge(w, a, b, r);
    }
}

static void
elim_deg0(work *w, size_t x)
{
    elim el = {.x = x, .deg = 0};
    size_t s;

    for (s = 1; s < kof(w, x); s++)
        if (w->nodes[x].cost[s] < w->nodes[x].cost[el.choice])
            el.choice = s;
    w->offset += w->nodes[x].cost[el.choice];
    AS_VEC_PUSH(&w->red->elims, el);
    w->red->stats.elim[0]++;
}

static void
elim_deg1(work *w, size_t x, wedge *e)
{
    size_t y = e->u == x ? e->v : e->u, ky = kof(w, y), kx = kof(w, x), p, q;
    elim el = {.x = x, .y = y, .deg = 1};

    el.best = as_xcalloc(ky, sizeof *el.best);
    for (p = 0; p < ky; p++) {
        double best = INFINITY;
        for (q = 0; q < kx; q++) {
            double v = rget(w, e, y, p, q) + w->nodes[x].cost[q];
            if (v < best) {
                best = v;
                el.best[p] = q;
            }
        }
        w->nodes[y].cost[p] += best;
    }
    e->alive = 0;
    AS_VEC_PUSH(&w->red->elims, el);
    w->red->stats.elim[1]++;
}

static void
elim_deg2(work *w, size_t x, wedge *e1, wedge *e2)
{
    size_t y = e1->u == x ? e1->v : e1->u, z = e2->u == x ? e2->v : e2->u;
    size_t ky = kof(w, y), kz = kof(w, z), kx = kof(w, x), p, r, q;
    elim el = {.x = x, .y = y, .z = z, .deg = 2, .kz = kz};
    double *n = as_xmalloc(ky * kz * sizeof *n);

    el.best = as_xcalloc(ky * kz, sizeof *el.best);
    for (p = 0; p < ky; p++)
        for (r = 0; r < kz; r++) {
            double best = INFINITY;
            for (q = 0; q < kx; q++) {
                double v = rget(w, e1, y, p, q) + w->nodes[x].cost[q] + rget(w, e2, z, r, q);
                if (v < best) {
                    best = v;
                    el.best[p * kz + r] = q;
                }
            }
            n[p * kz + r] = best;
        }
    e1->alive = e2->alive = 0; /* before work_add_edge, which may move w->edges.v */
    AS_VEC_PUSH(&w->red->elims, el);
    w->red->stats.elim[2]++;
    work_add_edge(w, y, z, n);
}

/* Run R0/R1/R2 on unpinned leaders until nothing changes. */
static void
work_pbqp(work *w)
{
    size_t n = as_problem_nnodes(w->p), x, deg, inc[3], y, z;
    AS_VEC(size_t) stack = {0};

    for (x = n; x-- > 0;)
        if (w->nodes[x].alive && !w->nodes[x].pinned)
            AS_VEC_PUSH(&stack, x);
    while (stack.n > 0) {
        x = stack.v[--stack.n];
        if (!w->nodes[x].alive || w->nodes[x].pinned)
            continue;
        deg = work_degree(w, x, inc);
        if (deg > 2)
            continue;
        w->nodes[x].alive = 0;
        if (deg == 0) {
            elim_deg0(w, x);
            continue;
        }
        y = w->edges.v[inc[0]].u == x ? w->edges.v[inc[0]].v : w->edges.v[inc[0]].u;
        AS_VEC_PUSH(&stack, y);
        if (deg == 1) {
            elim_deg1(w, x, &w->edges.v[inc[0]]);
            continue;
        }
        z = w->edges.v[inc[1]].u == x ? w->edges.v[inc[1]].v : w->edges.v[inc[1]].u;
        AS_VEC_PUSH(&stack, z);
        elim_deg2(w, x, &w->edges.v[inc[0]], &w->edges.v[inc[1]]);
    }
    AS_VEC_FREE(&stack);
}

/* Map liveness, aliases and no-goods of P onto the reduced problem Q. */
static void
work_rows(work *w, as_problem *q, const size_t *newidx)
{
    const as_problem *p = w->p;
    size_t t, i, v, n = as_problem_nnodes(p);
    size_t *nodes, *choice;

    for (t = 0; as_problem_memory(p) > 0 && t < as_problem_nlive(p); t++) {
        const as_plive *l = as_problem_live(p, t);
        if (!as_problem_live_binds(p, t))
            continue;
        nodes = as_xcalloc(l->n + 1, sizeof *nodes);
        for (i = 0; i < l->n; i++)
            nodes[i] = newidx[w->red->leader[l->nodes[i]]];
        as_problem_add_liveness_m(q, nodes, l->m, l->n, l->resident, NULL);
        free(nodes);
    }
    for (i = 0; i < as_problem_naliases(p); i++) {
        const as_palias *a = as_problem_alias(p, i);
        as_problem_add_alias(q, newidx[w->red->leader[a->a]], newidx[w->red->leader[a->b]], a->bad,
                             NULL);
    }
    choice = as_xcalloc(as_problem_nnodes(q) + 1, sizeof *choice);
    for (i = 0; i < as_problem_nnogoods(p); i++) {
        const size_t *ng = as_problem_nogood(p, i);
        for (v = 0; v < n && ng[v] == ng[w->red->leader[v]]; v++)
            choice[newidx[w->red->leader[v]]] = ng[v];
        if (v == n) /* a no-good that breaks a follow link cannot match any plan */
            as_problem_add_nogood(q, choice, NULL);
    }
    free(choice);
}

static as_problem *
work_output(work *w)
{
    const as_problem *p = w->p;
    size_t n = as_problem_nnodes(p), v, s, j, id;
    size_t *newidx = as_xcalloc(n + 1, sizeof *newidx);
    as_problem *q = as_problem_new();
    as_reduction *red = w->red;

    red->origin = as_xcalloc(n + 1, sizeof *red->origin);
    for (v = 0; v < n; v++) {
        const as_pnode *nd = as_problem_node(p, v);
        newidx[v] = (size_t)-1;
        if (!w->nodes[v].alive)
            continue;
        as_problem_add_node(q, nd->name, nd->k, w->nodes[v].cost, NULL, nd->m, &id, NULL);
        for (s = 0; nd->snames != NULL && s < nd->k; s++)
            if (nd->snames[s] != NULL)
                as_problem_set_strategy_name(q, id, s, nd->snames[s], NULL);
        newidx[v] = id;
        red->origin[id] = v;
    }
    red->nred = as_problem_nnodes(q);
    for (v = 0; v < n; v++) /* follow links kept when not merged (both ends pinned) */
        if (w->nodes[v].alive && as_problem_node(p, v)->follow != AS_NO_FOLLOW)
            as_problem_set_follow(q, newidx[v], newidx[as_problem_node(p, v)->follow], NULL);
    for (j = 0; j < w->edges.n; j++)
        if (w->edges.v[j].alive)
            as_problem_add_edge(q, newidx[w->edges.v[j].u], newidx[w->edges.v[j].v],
                                w->edges.v[j].r, NULL);
    work_rows(w, q, newidx);
    as_problem_set_memory(q, as_problem_memory(p));
    as_problem_set_offset(q, as_problem_offset(p) + w->offset);
    red->stats.nodes = as_problem_nnodes(q);
    red->stats.edges = as_problem_nedges(q);
    free(newidx);
    return q;
}

int
as_reduce(const as_problem *p, unsigned flags, as_problem **out, as_reduction **redp,
          as_err *err)
{
    size_t n = as_problem_nnodes(p), v, j;
    work w = {.p = p, .flags = flags};
    as_reduction *red;

    AS_CHECK(as_problem_validate(p, err));
    red = as_xcalloc(1, sizeof *red);
    red->n = n;
    red->leader = as_xcalloc(n, sizeof *red->leader);
    w.red = red;
    work_init(&w, p);
    work_edges(&w);
    if (flags & AS_REDUCE_PBQP)
        work_pbqp(&w);
    *out = work_output(&w);
    *redp = red;
    for (v = 0; v < n; v++) {
        free(w.nodes[v].cost);
        AS_VEC_FREE(&w.nodes[v].adj);
    }
    for (j = 0; j < w.edges.n; j++)
        free(w.edges.v[j].r);
    AS_VEC_FREE(&w.edges);
    free(w.nodes);
    return AS_OK;
}

size_t
as_reduction_origin(const as_reduction *red, size_t i)
{
    return red->origin[i];
}

void
as_reduction_recover(const as_reduction *red, const size_t *reduced, size_t *full)
{
    size_t i, v;

    for (i = 0; i < red->nred; i++)
        full[red->origin[i]] = reduced[i];
    for (i = red->elims.n; i-- > 0;) {
        const elim *el = &red->elims.v[i];
        if (el->deg == 0)
            full[el->x] = el->choice;
        else if (el->deg == 1)
            full[el->x] = el->best[full[el->y]];
        else
            full[el->x] = el->best[full[el->y] * el->kz + full[el->z]];
    }
    for (v = 0; v < red->n; v++)
        full[v] = full[red->leader[v]];
}

const as_reduce_stats *
as_reduction_stats(const as_reduction *red)
{
    return &red->stats;
}

void
as_reduction_free(as_reduction *red)
{
    size_t i;

    if (red == NULL)
        return;
    for (i = 0; i < red->elims.n; i++)
        free(red->elims.v[i].best);
    AS_VEC_FREE(&red->elims);
    free(red->leader);
    free(red->origin);
    free(red);
}
