/* group.c -- repeated layers: canonical forms of blocks and follow links (group.h). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formulate/group.h"
#include "libhooks.h"

typedef struct block {
    size_t fam;          /* family index */
    const char *label;   /* "h.3" or the capture (arena) */
    long num;            /* order inside the family */
    size_t order;        /* first appearance */
    AS_VEC(size_t) nodes;
    uint64_t hash;
    size_t cls;          /* class index, (size_t)-1 = none yet */
} block;

static uint64_t
mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    return h;
}

static uint64_t
str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The first "SEG.N." of NAME (SEG not starting with a digit): family SEG, label "SEG.N". */
static int
layer_of(const char *name, size_t *fam_pos, size_t *fam_len, size_t *lab_len, long *num)
{
    const char *seg = name, *q;

    for (;;) {
        const char *dot = strchr(seg, '.');
        if (dot == NULL)
            return 0;
        for (q = dot + 1; *q >= '0' && *q <= '9'; q++)
            ;
        if (q > dot + 1 && *q == '.' && dot > seg && !(seg[0] >= '0' && seg[0] <= '9')) {
            *fam_pos = (size_t)(seg - name);
            *fam_len = (size_t)(dot - seg);
            *lab_len = (size_t)(q - seg);
            *num = strtol(dot + 1, NULL, 10);
            return 1;
        }
        seg = dot + 1;
    }
}

typedef struct grouper {
    const as_graph *g;
    const as_build_map *map;
    as_problem *p;
    as_arena *arena;
    as_strmap fams, blks;
    AS_VEC(const char *) famname;
    AS_VEC(size_t) famblocks; /* blocks of each family */
    as_strmap occ;            /* "block\x1frole" -> nodes of that role so far */
    char **role;              /* [nnodes] role key "d.h.*.mlp.fc1.mm#0" (malloc'ed) or NULL */
    AS_VEC(block) b;
    size_t *blk;    /* [nnodes] block of each node, (size_t)-1 = none */
    size_t *pos;    /* [nnodes] position inside its block */
    uint64_t *nh;   /* [nnodes] node signature */
} grouper;

static void
assign(grouper *w, size_t v, const char *fam, size_t famlen, const char *lab, size_t lablen,
       size_t idx_pos, size_t idx_len, long num)
{
    const char *name = as_problem_node(w->p, v)->name;
    char key[512], role[400], *end;
    int64_t f, bi, occ = 0;
    int n;

    n = snprintf(key, sizeof key, "%.*s", (int)famlen, fam);
    if (n < 0 || (size_t)n >= sizeof key)
        return;
    if (!as_strmap_get(&w->fams, key, (size_t)-1, &f)) {
        f = (int64_t)w->famname.n;
        AS_VEC_PUSH(&w->famname, as_arena_strdup(w->arena, key));
        AS_VEC_PUSH(&w->famblocks, 0);
        as_strmap_put(&w->fams, w->famname.v[f], f);
    }
    n = snprintf(key, sizeof key, "%lld\x1f%.*s", (long long)f, (int)lablen, lab);
    if (n < 0 || (size_t)n >= sizeof key)
        return;
    /* the role: the name with its layer index as '*', autodiff's trailing numbers dropped */
    n = snprintf(role, sizeof role, "%.*s*%s", (int)idx_pos, name, name + idx_pos + idx_len);
    if (n < 0 || (size_t)n >= sizeof role)
        return;
    while ((end = strrchr(role, '.')) != NULL && end[1] >= '0' && end[1] <= '9' &&
           strspn(end + 1, "0123456789") == strlen(end + 1))
        *end = '\0';
    if (!as_strmap_get(&w->blks, key, (size_t)-1, &bi)) {
        block nb;
        memset(&nb, 0, sizeof nb);
        nb.fam = (size_t)f;
        nb.label = as_arena_strndup(w->arena, lab, lablen);
        nb.num = num;
        nb.order = w->b.n;
        nb.cls = (size_t)-1;
        bi = (int64_t)w->b.n;
        AS_VEC_PUSH(&w->b, nb);
        w->famblocks.v[f]++;
        as_strmap_put(&w->blks, as_arena_strdup(w->arena, key), bi);
    }
    /* k-th node of this role in the block: "role#k" */
    n = snprintf(key, sizeof key, "%lld\x1f%s", (long long)bi, role);
    if (n > 0 && (size_t)n < sizeof key) {
        as_strmap_get(&w->occ, key, (size_t)-1, &occ);
        as_strmap_put(&w->occ, occ == 0 ? as_arena_strdup(w->arena, key) : key, occ + 1);
    }
    w->role[v] = as_xasprintf("%s#%lld", role, (long long)occ);
    w->blk[v] = (size_t)bi;
    AS_VEC_PUSH(&w->b.v[bi].nodes, v);
}

/* Automatic blocks: the first SEG.N. of every node name. */
static void
find_auto(grouper *w)
{
    size_t v, n = as_problem_nnodes(w->p), fp, fl, ll;
    long num;

    for (v = 0; v < n; v++) {
        const char *name = as_problem_node(w->p, v)->name;
        if (layer_of(name, &fp, &fl, &ll, &num))
            assign(w, v, name + fp, fl, name + fp, ll, fp + fl + 1, ll - fl - 1, num);
    }
}

/* Blocks of REGEX: the first capture group of the first match. */
static int
find_regex(grouper *w, const char *regex, as_err *err)
{
    pcre2_code *re;
    pcre2_match_data *md;
    PCRE2_SIZE off;
    uint32_t ncap = 0;
    size_t v, n = as_problem_nnodes(w->p);
    int code, rc = AS_OK;

    re = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, 0, &code, &off,
                       as_pcre2_ccontext());
    if (re == NULL) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return as_errf(err, AS_EUSAGE, "--group '%s': %s at offset %zu", regex, (char *)msg,
                       (size_t)off);
    }
    pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &ncap);
    if (ncap < 1) {
        pcre2_code_free(re);
        return as_errf(err, AS_EUSAGE, "--group '%s': no capture group (the capture is the "
                       "layer index, e.g. 'h\\.(\\d+)\\.')", regex);
    }
    md = pcre2_match_data_create_from_pattern(re, as_pcre2_gcontext());
    for (v = 0; v < n; v++) {
        const char *name = as_problem_node(w->p, v)->name;
        PCRE2_SIZE *ov;
        char *endp;
        long num;
        if (pcre2_match(re, (PCRE2_SPTR)name, strlen(name), 0, 0, md, NULL) < 2)
            continue;
        ov = pcre2_get_ovector_pointer(md);
        if (ov[2] == PCRE2_UNSET || ov[3] <= ov[2])
            continue;
        num = strtol(name + ov[2], &endp, 10);
        if (endp != name + ov[3])
            num = (long)w->b.n; /* not a number: order of appearance */
        assign(w, v, regex, strlen(regex), name + ov[2], (size_t)(ov[3] - ov[2]), ov[2],
               (size_t)(ov[3] - ov[2]), num);
    }
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    if (w->b.n == 0)
        rc = as_errf(err, AS_EUSAGE, "--group '%s' matches no op or tensor name", regex);
    return rc;
}

typedef struct rnode {
    const char *role;
    size_t v;
} rnode;

static int
rnode_cmp(const void *a, const void *b)
{
    return strcmp(((const rnode *)a)->role, ((const rnode *)b)->role);
}

/*
 * Keep in each block the nodes whose role every block of the family has
 * (GPT's grad.h.N.res2 sums layer N+1's gradients: the last layer has none),
 * in role order, so that position j is one role in every block.  Returns
 * the number of nodes left out.
 */
static size_t
align(grouper *w)
{
    as_strmap cnt;
    AS_VEC(rnode) tmp = {0};
    size_t i, j, n = as_problem_nnodes(w->p), loose = 0;
    char key[512];
    int64_t c;

    as_strmap_init(&cnt);
    for (i = 0; i < n; i++) {
        if (w->blk[i] == (size_t)-1)
            continue;
        snprintf(key, sizeof key, "%zu\x1f%s", w->b.v[w->blk[i]].fam, w->role[i]);
        c = 0;
        as_strmap_get(&cnt, key, (size_t)-1, &c);
        as_strmap_put(&cnt, c == 0 ? as_arena_strdup(w->arena, key) : key, c + 1); /* replace
                                                                     keeps the first key */
    }
    for (i = 0; i < w->b.n; i++) {
        block *b = &w->b.v[i];
        tmp.n = 0;
        for (j = 0; j < b->nodes.n; j++) {
            size_t v = b->nodes.v[j];
            snprintf(key, sizeof key, "%zu\x1f%s", b->fam, w->role[v]);
            if (as_strmap_get(&cnt, key, (size_t)-1, &c) && (size_t)c == w->famblocks.v[b->fam])
                AS_VEC_PUSH(&tmp, ((rnode){w->role[v], v}));
            else {
                w->blk[v] = (size_t)-1;
                loose++;
            }
        }
        if (tmp.n > 1) /* none: tmp.v is NULL, which qsort may not be given */
            qsort(tmp.v, tmp.n, sizeof *tmp.v, rnode_cmp);
        for (j = 0; j < tmp.n; j++) {
            b->nodes.v[j] = tmp.v[j].v;
            w->pos[tmp.v[j].v] = j;
        }
        b->nodes.n = tmp.n;
    }
    AS_VEC_FREE(&tmp);
    as_strmap_destroy(&cnt);
    return loose;
}

/* Input I of a node inside block B: its position there + 1, or 0 from outside. */
static uint64_t
rel(const grouper *w, size_t b, size_t u)
{
    return w->blk[u] == b ? (uint64_t)w->pos[u] + 1 : 0;
}

/* Signature of node V: its strategy set, type and inputs relative to its block. */
static uint64_t
node_sig(const grouper *w, size_t v)
{
    const as_build_map *map = w->map;
    int32_t op = as_build_map_node_op(map, v), t = as_build_map_node_tensor(map, v);
    uint64_t h = mix(0x5157, (uint64_t)(uintptr_t)as_build_map_node_set(map, v));
    size_t b = w->blk[v];
    int j;

    h = mix(h, as_problem_node(w->p, v)->k);
    if (op >= 0) {
        const as_op *o = as_graph_op(w->g, op);
        h = mix(h, str_hash(o->def->name));
        h = mix(h, (uint64_t)o->nin);
        for (j = 0; j < o->nin; j++) {
            int32_t in = o->in[j];
            const as_tensor *tt = as_graph_tensor(w->g, in);
            int k = 0;
            if (tt->producer >= 0) {
                const as_op *po = as_graph_op(w->g, tt->producer);
                for (k = 0; k < po->nout && po->out[k] != in; k++)
                    ;
            }
            h = mix(h, rel(w, b, as_build_map_tensor_node(map, in)));
            h = mix(h, (uint64_t)k);
        }
        for (j = 0; j < o->nattr; j++) {
            const as_attr *a = &o->attr[j];
            int e;
            h = mix(mix(h, str_hash(a->key)), (uint64_t)a->i);
            h = mix(h, a->s != NULL ? str_hash(a->s) : 0);
            for (e = 0; e < a->n; e++)
                h = mix(h, (uint64_t)a->v[e]);
        }
    } else if (t >= 0) {
        const as_tensor *tt = as_graph_tensor(w->g, t);
        h = mix(h, 0x7e + (uint64_t)tt->kind);
        if (tt->of >= 0)
            h = mix(h, 1 + rel(w, b, as_build_map_tensor_node(map, tt->of)));
    }
    return h;
}

static int
block_cmp(const void *a, const void *b)
{
    const block *x = a, *y = b;

    if (x->fam != y->fam)
        return x->fam < y->fam ? -1 : 1;
    if (x->num != y->num)
        return x->num < y->num ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Same canonical form: same size and node signatures (hash first). */
static int
same_form(const grouper *w, const block *a, const block *b)
{
    size_t j;

    if (a->hash != b->hash || a->nodes.n != b->nodes.n)
        return 0;
    for (j = 0; j < a->nodes.n; j++)
        if (w->nh[a->nodes.v[j]] != w->nh[b->nodes.v[j]] ||
            as_build_map_node_set(w->map, a->nodes.v[j]) !=
                as_build_map_node_set(w->map, b->nodes.v[j]))
            return 0;
    return 1;
}

static int
not_isomorphic(const grouper *w, const char *regex, const block *a, const block *b, as_err *err)
{
    size_t j;

    if (a->nodes.n != b->nodes.n)
        return as_errf(err, AS_EUSAGE, "--group '%s': blocks '%s' (%zu nodes) and '%s' (%zu "
                       "nodes) are not isomorphic", regex, a->label, a->nodes.n, b->label,
                       b->nodes.n);
    for (j = 0; j < a->nodes.n && w->nh[a->nodes.v[j]] == w->nh[b->nodes.v[j]]; j++)
        ;
    if (j == a->nodes.n)
        j = 0;
    return as_errf(err, AS_EUSAGE, "--group '%s': blocks '%s' and '%s' are not isomorphic: "
                   "'%s' and '%s' differ in type, shape, attributes or inputs", regex, a->label,
                   b->label, as_problem_node(w->p, a->nodes.v[j])->name,
                   as_problem_node(w->p, b->nodes.v[j])->name);
}

void
as_group_result_free(as_group_result *res)
{
    size_t i, j;

    if (res == NULL)
        return;
    for (i = 0; i < res->nclass; i++) {
        free(res->cls[i].family);
        free(res->cls[i].first);
        free(res->cls[i].last);
        for (j = 0; j < AS_GROUP_MAX_PERIOD; j++)
            free(res->cls[i].lead[j]);
    }
    free(res->cls);
    memset(res, 0, sizeof *res);
}

int
as_group_tie(const as_graph *g, const as_build_map *map, as_problem *p, const char *regex,
             int period, as_group_result *res, as_err *err)
{
    grouper w;
    size_t n = as_problem_nnodes(p), v, i, j, c;
    AS_VEC(size_t) rep = {0}; /* representative block of each class */
    int rc = AS_OK;

    memset(res, 0, sizeof *res);
    memset(&w, 0, sizeof w);
    if (period > AS_GROUP_MAX_PERIOD)
        period = AS_GROUP_MAX_PERIOD;
    w.g = g;
    w.map = map;
    w.p = p;
    w.arena = as_arena_new();
    as_strmap_init(&w.fams);
    as_strmap_init(&w.blks);
    w.blk = as_xmalloc((n + 1) * sizeof *w.blk);
    w.pos = as_xcalloc(n + 1, sizeof *w.pos);
    w.nh = as_xcalloc(n + 1, sizeof *w.nh);
    w.role = as_xcalloc(n + 1, sizeof *w.role);
    as_strmap_init(&w.occ);
    for (v = 0; v < n; v++)
        w.blk[v] = (size_t)-1;
    if (regex != NULL)
        rc = find_regex(&w, regex, err);
    else
        find_auto(&w);
    if (rc != AS_OK)
        goto out;
    res->loose = align(&w);
    for (i = 0; regex != NULL && i < w.b.n; i++)
        if (w.b.v[i].nodes.n == 0) {
            rc = as_errf(err, AS_EUSAGE, "--group '%s': block '%s' has no node whose role "
                         "(name with the layer as '*') every other block has", regex,
                         w.b.v[i].label);
            goto out;
        }
    /* canonical forms */
    for (i = 0; i < w.b.n; i++) {
        block *b = &w.b.v[i];
        uint64_t h = mix(0xb10c, b->nodes.n);
        for (j = 0; j < b->nodes.n; j++)
            h = mix(h, w.nh[b->nodes.v[j]] = node_sig(&w, b->nodes.v[j]));
        b->hash = h;
    }
    /* sorting moves blocks: w.blk is not used after this point */
    if (w.b.n > 1) /* no blocks: w.b.v is NULL, which qsort may not be given */
        qsort(w.b.v, w.b.n, sizeof *w.b.v, block_cmp);
    res->blocks = w.b.n;
    for (i = 0; i < w.b.n; i++) {
        block *b = &w.b.v[i];
        for (c = 0; c < rep.n; c++) {
            const block *r = &w.b.v[rep.v[c]];
            if (r->fam == b->fam && same_form(&w, r, b))
                break;
        }
        if (c == rep.n) {
            if (regex != NULL && rep.n > 0) {
                rc = not_isomorphic(&w, regex, &w.b.v[rep.v[0]], b, err);
                goto out;
            }
            AS_VEC_PUSH(&rep, i);
        }
        b->cls = c;
    }
    /*
     * Tie the blocks of each class with period PERIOD: a block whose layer
     * is d after the class's first one follows the first block of its
     * residue d mod PERIOD (period 2: even and odd layers, two sets of
     * variables, so Megatron's column/row alternation is a tied plan).
     */
    res->period = period;
    for (c = 0; c < rep.n; c++) {
        const block *r = &w.b.v[rep.v[c]];
        size_t nb = 0, nsets = 0, last = rep.v[c], lead[AS_GROUP_MAX_PERIOD], ph;
        if (regex == NULL && r->nodes.n < 2) { /* "add.5.clone": a name, not a layer */
            res->untied++;
            continue;
        }
        for (i = 0; i < AS_GROUP_MAX_PERIOD; i++)
            lead[i] = (size_t)-1;
        for (i = rep.v[c]; i < w.b.n; i++) {
            const block *b = &w.b.v[i], *l;
            if (b->cls != c)
                continue;
            nb++;
            last = i;
            if (period < 1)
                continue;
            ph = (size_t)(((b->num - r->num) % period + period) % period);
            if (lead[ph] == (size_t)-1) {
                lead[ph] = i;
                nsets++;
                continue;
            }
            l = &w.b.v[lead[ph]];
            for (j = 0; j < b->nodes.n; j++) {
                AS_CHECK_GOTO(rc, as_problem_set_follow(p, b->nodes.v[j], l->nodes.v[j], err),
                              out);
                res->followers++;
            }
        }
        if (nb < 2) {
            res->untied++;
            continue;
        }
        res->cls = as_xrealloc(res->cls, (res->nclass + 1) * sizeof *res->cls);
        memset(&res->cls[res->nclass], 0, sizeof *res->cls);
        res->cls[res->nclass].family = as_xasprintf("%s", w.famname.v[r->fam]);
        res->cls[res->nclass].first = as_xasprintf("%s", r->label);
        res->cls[res->nclass].last = as_xasprintf("%s", w.b.v[last].label);
        res->cls[res->nclass].nblocks = nb;
        res->cls[res->nclass].nodes = r->nodes.n;
        res->cls[res->nclass].sets = nsets;
        for (i = 0, ph = 0; i < (size_t)period; i++) {
            size_t k, *ln;
            if (lead[i] == (size_t)-1)
                continue;
            ln = res->cls[res->nclass].lead[ph++] = as_xmalloc((r->nodes.n + 1) * sizeof *ln);
            for (k = 0; k < r->nodes.n; k++)
                ln[k] = w.b.v[lead[i]].nodes.v[k];
        }
        res->nclass++;
    }
out:
    for (i = 0; i < w.b.n; i++)
        AS_VEC_FREE(&w.b.v[i].nodes);
    AS_VEC_FREE(&w.b);
    AS_VEC_FREE(&w.famname);
    AS_VEC_FREE(&rep);
    as_strmap_destroy(&w.fams);
    as_strmap_destroy(&w.blks);
    as_strmap_destroy(&w.occ);
    for (v = 0; v < n; v++)
        free(w.role[v]);
    free(w.role);
    AS_VEC_FREE(&w.famblocks);
    as_arena_free(w.arena);
    free(w.blk);
    free(w.pos);
    free(w.nh);
    if (rc != AS_OK)
        as_group_result_free(res);
    return rc;
}

/* Followers take their leader's strategy (chains followed to the root). */
static void
follow_roots(const as_problem *p, size_t *x)
{
    size_t v, r, n = as_problem_nnodes(p);

    for (v = 0; v < n; v++) {
        for (r = v; as_problem_node(p, r)->follow != AS_NO_FOLLOW;)
            r = as_problem_node(p, r)->follow;
        x[v] = x[r];
    }
}

size_t
as_group_settle(as_group_result *res, const as_problem *p, size_t *choice, double *objective,
                double *peak)
{
    size_t n = as_problem_nnodes(p), c, s, t, j, done = 0, *x;
    double obj, pk, o2, p2, cap;
    as_err err = {0};

    if (res == NULL || choice == NULL || as_problem_check(p, choice, &obj, &pk, &err) != AS_OK)
        return 0;
    cap = as_problem_memory_cap(p);
    if (pk > cap)
        cap = pk;
    x = as_xmalloc((n + 1) * sizeof *x);
    for (c = 0; c < res->nclass; c++) {
        const as_group_class *k = &res->cls[c];
        for (s = 0; k->sets > 1 && s < k->sets; s++) {
            memcpy(x, choice, n * sizeof *x);
            for (t = 0; t < k->sets; t++)
                for (j = 0; t != s && j < k->nodes; j++)
                    x[k->lead[t][j]] = x[k->lead[s][j]];
            follow_roots(p, x);
            if (as_problem_check(p, x, &o2, &p2, &err) != AS_OK ||
                o2 > obj + 1e-9 * fabs(obj) || p2 > cap)
                continue;
            memcpy(choice, x, n * sizeof *x);
            obj = o2;
            pk = p2;
            done++;
            break;
        }
    }
    free(x);
    res->settled += done;
    if (objective != NULL)
        *objective = obj;
    if (peak != NULL)
        *peak = pk;
    return done;
}
