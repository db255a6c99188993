/* recompute_search.c -- the search of `solve --recompute auto` (see recompute_search.h). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/registry.h"
#include "solve/recompute_search.h"

/* Setting states. */
enum { ST_NEW, ST_FITS, ST_NOFIT, ST_UNKNOWN, ST_PRUNED };

typedef struct rs {
    const as_recomp_ops *ops;
    void *ud;
    int nl, ncls;
    const int *cls;          /* [nl] */
    int *size;               /* [ncls] layers per class */
    int *rank;               /* [nl] position of the layer in its class */
    double *pre;             /* [ncls][max+1] copies' time of the first c layers of a class */
    int maxsz;
    size_t nset;
    unsigned char *st;       /* [nset] */
    double *obj, *lbd;       /* [nset] a solved setting's objective and bound */
    double lb0;              /* base bound, -HUGE_VAL unknown */
    int *cnt, *on;           /* scratch */
    size_t best;             /* setting kept, (size_t)-1 none */
    AS_VEC(size_t) nofit;    /* settings that do not fit (their down-sets do not either) */
    FILE *log;
    as_recomp_result *out;
} rs;

static void
rs_decode(const rs *w, size_t idx, int *cnt)
{
    int c;

    for (c = 0; c < w->ncls; c++) {
        cnt[c] = (int)(idx % (size_t)(w->size[c] + 1));
        idx /= (size_t)(w->size[c] + 1);
    }
}

static size_t
rs_encode(const rs *w, const int *cnt)
{
    size_t idx = 0;
    int c;

    for (c = w->ncls - 1; c >= 0; c--)
        idx = idx * (size_t)(w->size[c] + 1) + (size_t)cnt[c];
    return idx;
}

static double
rs_bound(const rs *w, const int *cnt)
{
    double b = isfinite(w->lb0) ? w->lb0 : -HUGE_VAL;
    int c;

    for (c = 0; c < w->ncls; c++)
        b += w->pre[(size_t)c * (size_t)(w->maxsz + 1) + (size_t)cnt[c]];
    return b;
}

static int
rs_total(const rs *w, const int *cnt)
{
    int c, t = 0;

    for (c = 0; c < w->ncls; c++)
        t += cnt[c];
    return t;
}

/* Is setting CNT below (count by count) one that does not fit? */
static int
rs_dominated(const rs *w, const int *cnt)
{
    int *x = w->on; /* scratch: on is rebuilt before every try */
    size_t i;
    int c;

    for (i = 0; i < w->nofit.n; i++) {
        rs_decode(w, w->nofit.v[i], x);
        for (c = 0; c < w->ncls && cnt[c] <= x[c]; c++)
            ;
        if (c == w->ncls)
            return 1;
    }
    return 0;
}

static void
rs_label(const rs *w, const int *cnt)
{
    int c;

    for (c = 0; c < w->ncls; c++)
        fprintf(w->log, "%s%d", c ? "+" : "", cnt[c]);
}

/* Solve setting CNT (not tried yet). */
static int
rs_try(rs *w, const int *cnt, as_err *err)
{
    size_t idx = rs_encode(w, cnt);
    double obj = HUGE_VAL, bnd = -HUGE_VAL;
    int j, fits = 0, rc;

    for (j = 0; j < w->nl; j++)
        w->on[j] = w->rank[j] < cnt[w->cls[j]];
    rc = w->ops->try_set(w->ud, w->on, &fits, &obj, &bnd, err);
    if (rc != AS_OK) {
        w->ops->drop(w->ud);
        w->st[idx] = ST_UNKNOWN;
        return rc;
    }
    w->out->tried++;
    fprintf(w->log, "%s", w->out->tried > 1 ? ", " : "");
    rs_label(w, cnt);
    if (fits > 0) {
        fprintf(w->log, ": %.6g s", obj);
        w->st[idx] = ST_FITS;
        w->obj[idx] = obj;
        w->lbd[idx] = isfinite(bnd) ? fmin(bnd, obj) : -HUGE_VAL;
    } else {
        fprintf(w->log, fits == 0 ? ": no fit" : ": stopped");
        w->st[idx] = fits == 0 ? ST_NOFIT : ST_UNKNOWN;
        if (fits == 0)
            AS_VEC_PUSH(&w->nofit, idx);
    }
    if (fits > 0 && (w->best == (size_t)-1 || obj < w->obj[w->best] ||
                     (obj <= w->obj[w->best] && rs_total(w, cnt) < w->out->nbest))) {
        w->ops->keep(w->ud);
        w->best = idx;
        w->out->nbest = rs_total(w, cnt);
    } else {
        w->ops->drop(w->ud);
    }
    return AS_OK;
}

/* The counts of the first K layers in program order. */
static void
rs_prefix(const rs *w, int k, int *cnt)
{
    int j;

    memset(cnt, 0, (size_t)w->ncls * sizeof *cnt);
    for (j = 0; j < k; j++)
        cnt[w->cls[j]]++;
}

/* Try CNT unless tried or below a setting that does not fit; *FITS its state. */
static int
rs_visit(rs *w, const int *cnt, int *fits, as_err *err)
{
    size_t idx = rs_encode(w, cnt);
    int rc = AS_OK;

    if (w->st[idx] == ST_NEW && rs_dominated(w, cnt)) {
        w->st[idx] = ST_PRUNED;
        w->out->pruned++;
    }
    if (w->st[idx] == ST_NEW)
        rc = rs_try(w, cnt, err);
    *fits = w->st[idx] == ST_FITS;
    return rc;
}

static int
rs_past(double time_limit_s, double t0)
{
    return time_limit_s > 0 && as_now() - t0 >= time_limit_s;
}

static const rs *sort_w;
static double *sort_b;

static int
by_bound(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int cx[64], cy[64], tx, ty;

    if (sort_b[x] != sort_b[y])
        return sort_b[x] < sort_b[y] ? -1 : 1;
    if (sort_w->ncls <= 64) { /* ties: fewer layers first */
        rs_decode(sort_w, x, cx);
        rs_decode(sort_w, y, cy);
        tx = rs_total(sort_w, cx);
        ty = rs_total(sort_w, cy);
        if (tx != ty)
            return tx < ty ? -1 : 1;
    }
    return x < y ? -1 : x > y;
}

static int
rs_run(rs *w, double gap, double time_limit_s, double t0, as_err *err)
{
    size_t i, *ord = NULL;
    double *bnd = NULL;
    int fits, rc, lo, hi, k;

    /* nothing recomputed, then the base bound: the budget may not bind at all */
    memset(w->cnt, 0, (size_t)w->ncls * sizeof *w->cnt);
    AS_CHECK(rs_visit(w, w->cnt, &fits, err));
    AS_CHECK(w->ops->base_bound(w->ud, &w->lb0, err));
    if (fits && isfinite(w->lb0) && w->obj[0] <= w->lb0 * (1 + gap) + 1e-15) {
        fprintf(w->log, " (the budget does not bind)");
        return AS_OK;
    }
    if (!fits) {
        /* every layer, then bisection on the first k for the fewest that fit */
        rs_prefix(w, w->nl, w->cnt);
        AS_CHECK(rs_visit(w, w->cnt, &fits, err));
        if (!fits)
            return AS_OK;
        lo = 0;
        hi = w->nl;
        while (hi - lo > 1 && !rs_past(time_limit_s, t0)) {
            k = lo + (hi - lo) / 2;
            rs_prefix(w, k, w->cnt);
            AS_CHECK(rs_visit(w, w->cnt, &fits, err));
            if (fits)
                hi = k;
            else
                lo = k;
        }
    }
    /* every setting, cheapest bound first */
    ord = as_xmalloc(w->nset * sizeof *ord);
    bnd = as_xmalloc(w->nset * sizeof *bnd);
    for (i = 0; i < w->nset; i++) {
        ord[i] = i;
        rs_decode(w, i, w->cnt);
        bnd[i] = rs_bound(w, w->cnt);
    }
    sort_w = w;
    sort_b = bnd;
    qsort(ord, w->nset, sizeof *ord, by_bound);
    rc = AS_OK;
    for (i = 0; i < w->nset && rc == AS_OK; i++) {
        size_t idx = ord[i];
        if (w->st[idx] != ST_NEW)
            continue;
        if (w->best != (size_t)-1 && bnd[idx] >= w->obj[w->best] * (1 - gap))
            break; /* every setting left costs at least the plan kept */
        if (rs_past(time_limit_s, t0)) {
            w->out->timed_out = 1;
            break;
        }
        rs_decode(w, idx, w->cnt);
        rc = rs_visit(w, w->cnt, &fits, err);
    }
    free(ord);
    free(bnd);
    return rc;
}

int
as_recompute_search(const as_recomp_space *sp, const as_recomp_ops *ops, void *ud,
                    double time_limit_s, double t0, as_recomp_result *out, as_err *err)
{
    rs w;
    size_t len = 0, nset = 1, i;
    int c, j, rc, one = 0;
    int *cnt = as_xcalloc((size_t)sp->nl + 1, sizeof *cnt);

    memset(out, 0, sizeof *out);
    out->bound = -HUGE_VAL;
    memset(&w, 0, sizeof w);
    /* classes: too many settings -> one class (the first k layers in program order) */
    for (c = 0; c < sp->ncls; c++)
        cnt[c] = 0;
    for (j = 0; j < sp->nl; j++)
        cnt[sp->cls[j]]++;
    for (c = 0; c < sp->ncls && nset <= AS_RECOMP_MAX_SETTINGS; c++)
        nset *= (size_t)cnt[c] + 1;
    if (nset > AS_RECOMP_MAX_SETTINGS || sp->ncls < 1) {
        one = 1;
        nset = (size_t)sp->nl + 1;
    }
    w.ops = ops;
    w.ud = ud;
    w.nl = sp->nl;
    w.ncls = one ? 1 : sp->ncls;
    w.cls = sp->cls;
    if (one) {
        int *z = as_xcalloc((size_t)sp->nl + 1, sizeof *z);
        w.cls = z;
    }
    w.size = as_xcalloc((size_t)w.ncls + 1, sizeof *w.size);
    w.rank = as_xcalloc((size_t)w.nl + 1, sizeof *w.rank);
    for (j = 0; j < w.nl; j++)
        w.rank[j] = w.size[w.cls[j]]++;
    for (c = 0; c < w.ncls; c++)
        w.maxsz = w.size[c] > w.maxsz ? w.size[c] : w.maxsz;
    w.pre = as_xcalloc((size_t)w.ncls * (size_t)(w.maxsz + 1) + 1, sizeof *w.pre);
    for (j = 0; j < w.nl; j++) {
        size_t base = (size_t)w.cls[j] * (size_t)(w.maxsz + 1);
        w.pre[base + (size_t)w.rank[j] + 1] =
            w.pre[base + (size_t)w.rank[j]] + (sp->cost != NULL ? fmax(sp->cost[j], 0) : 0);
    }
    w.nset = nset;
    w.st = as_xcalloc(nset + 1, 1);
    w.obj = as_xcalloc(nset + 1, sizeof *w.obj);
    w.lbd = as_xcalloc(nset + 1, sizeof *w.lbd);
    w.lb0 = -HUGE_VAL;
    w.cnt = as_xcalloc((size_t)w.ncls + 1, sizeof *w.cnt);
    w.on = as_xcalloc((size_t)(w.nl > w.ncls ? w.nl : w.ncls) + 1, sizeof *w.on);
    w.best = (size_t)-1;
    w.out = out;
    out->nsettings = (int)nset;
    if ((w.log = open_memstream(&out->log, &len)) == NULL) {
        rc = as_errf(err, AS_EIO, "--recompute auto: cannot open a memory stream");
        goto done;
    }
    if (one && sp->ncls > 1)
        fprintf(w.log, "(one class: %d classes would make too many settings) ", sp->ncls);
    rc = rs_run(&w, sp->gap, time_limit_s, t0, err);
    if (rc != AS_OK && w.best != (size_t)-1 && rs_past(time_limit_s, t0)) {
        fprintf(w.log, ", stopped at the time limit");
        out->timed_out = 1;
        rc = AS_OK;
    }
    /* the bound on every setting: a solved one's by its ILP, the others' by theirs */
    out->bound = w.best != (size_t)-1 ? w.obj[w.best] : HUGE_VAL;
    for (i = 0; i < nset; i++) {
        rs_decode(&w, i, w.cnt);
        if (w.st[i] == ST_FITS)
            out->bound = fmin(out->bound, w.lbd[i]);
        else if (w.st[i] == ST_NEW || w.st[i] == ST_UNKNOWN)
            out->bound = fmin(out->bound, rs_bound(&w, w.cnt));
        if (w.st[i] == ST_NEW && !out->timed_out)
            out->pruned++; /* by its bound */
    }
    fclose(w.log);
    if (w.best != (size_t)-1) {
        rs_decode(&w, w.best, w.cnt);
        out->best = as_xcalloc((size_t)w.nl + 1, sizeof *out->best);
        for (j = 0; j < w.nl; j++)
            out->best[j] = w.rank[j] < w.cnt[w.cls[j]];
    }
done:
    if (one)
        free((int *)w.cls);
    free(cnt);
    free(w.size);
    free(w.rank);
    free(w.pre);
    free(w.st);
    free(w.obj);
    free(w.lbd);
    free(w.cnt);
    free(w.on);
    AS_VEC_FREE(&w.nofit);
    return rc;
}

void
as_recomp_result_free(as_recomp_result *r)
{
    free(r->best);
    free(r->log);
    memset(r, 0, sizeof *r);
}

/* ---- classes of layers ---- */

static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

int
as_recompute_classes(const as_graph *g, const char *keys, int nl, int period, int *cls)
{
    uint64_t *sig = as_xcalloc((size_t)nl + 1, sizeof *sig);
    int *sigid = as_xcalloc((size_t)nl + 1, sizeof *sigid);
    int *seen = as_xcalloc((size_t)nl + 1, sizeof *seen);
    int *clsof = as_xmalloc(((size_t)nl * (size_t)(period > 0 ? period : 1) + 1) * sizeof *clsof);
    char **kv = as_xcalloc((size_t)nl + 1, sizeof *kv); /* the map borrows its keys */
    as_strmap idx;
    const char *s = keys;
    int j = 0, nsig = 0, ncls = 0, i, k, o;
    int32_t op;

    if (period < 1)
        period = 1;
    as_strmap_init(&idx);
    while (j < nl && *s) {
        const char *e = strchr(s, ',');
        size_t n = e != NULL ? (size_t)(e - s) : strlen(s);
        kv[j] = as_xstrndup(s, n);
        as_strmap_put(&idx, kv[j], j);
        sig[j++] = 14695981039346656037ull;
        s += n + (e != NULL);
    }
    for (op = 0; op < as_graph_nops(g); op++) {
        const as_op *x = as_graph_op(g, op);
        size_t st, len = as_graph_layer_key(x->name, &st);
        int64_t L;
        if (len == 0 || (x->flags & (AS_OF_BACKWARD | AS_OF_OPTIMIZER)) ||
            !as_strmap_get(&idx, x->name + st, len, &L) || L < 0 || L >= nl)
            continue;
        sig[L] = fnv(sig[L], x->def->name, strlen(x->def->name) + 1);
        sig[L] = fnv(sig[L], &x->nin, sizeof x->nin);
        for (k = 0; k < x->nin + x->nout; k++) {
            const as_shape *sh =
                &as_graph_tensor(g, k < x->nin ? x->in[k] : x->out[k - x->nin])->shape;
            int d = (int)sh->dtype;
            sig[L] = fnv(sig[L], &d, sizeof d);
            sig[L] = fnv(sig[L], &sh->rank, sizeof sh->rank);
            sig[L] = fnv(sig[L], sh->dim, (size_t)sh->rank * sizeof *sh->dim);
        }
    }
    for (i = 0; i < nl * period; i++)
        clsof[i] = -1;
    for (i = 0; i < nl; i++) {
        for (k = 0; k < i && sig[k] != sig[i]; k++)
            ;
        sigid[i] = k < i ? sigid[k] : nsig++;
        o = seen[sigid[i]]++ % period;
        if (clsof[sigid[i] * period + o] < 0)
            clsof[sigid[i] * period + o] = ncls++;
        cls[i] = clsof[sigid[i] * period + o];
    }
    as_strmap_destroy(&idx);
    for (i = 0; i < nl; i++)
        free(kv[i]);
    free(kv);
    free(sig);
    free(sigid);
    free(seen);
    free(clsof);
    return ncls;
}

/* ---- the base bound ---- */

static void
key_map(as_strmap *idx, const char *const *keys, int nl)
{
    int j;

    as_strmap_init(idx);
    for (j = 0; j < nl; j++)
        as_strmap_put(idx, keys[j], j);
}

void
as_recompute_costs(const as_graph_problem *gp, const as_graph *rc, const char *const *keys,
                   int nl, double *cost)
{
    as_strmap idx;
    int32_t o;
    int j;

    key_map(&idx, keys, nl);
    for (j = 0; j < nl; j++)
        cost[j] = 0;
    for (o = 0; o < as_graph_nops(rc); o++) {
        const char *nm = as_graph_op(rc, o)->name;
        size_t v, st, len, s;
        int64_t L;
        double m = HUGE_VAL;
        const as_pnode *nd;
        if (strncmp(nm, "rc.", 3) != 0 || !as_problem_find(gp->p, nm + 3, &v))
            continue; /* not a copy, or its original unknown: 0 (still a bound) */
        len = as_graph_layer_key(nm + 3, &st);
        if (len == 0 || !as_strmap_get(&idx, nm + 3 + st, len, &L))
            continue;
        nd = as_problem_node(gp->p, v);
        for (s = 0; s < nd->k; s++)
            m = fmin(m, nd->c[s] + nd->d[s]);
        if (isfinite(m) && m > 0)
            cost[L] += m;
    }
    as_strmap_destroy(&idx);
}
