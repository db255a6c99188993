/* heur.c -- the problem as decision units for the search heuristics (heur.h). */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solve/heur.h"

#define UNSET ((size_t)-1)

/* Root of V's follow chain (validated problems have no cycles). */
static size_t
root_of(const as_problem *p, size_t v)
{
    while (as_problem_node(p, v)->follow != AS_NO_FOLLOW)
        v = as_problem_node(p, v)->follow;
    return v;
}

typedef struct hm_tmp {
    size_t unit, point;
    double *dm;
} hm_tmp;

/* Append L, pointing at unit AT, to LINKS (*NL used of *CAP). */
static void
add_link(as_hlink **links, size_t *nl, size_t *cap, size_t at, as_hlink l)
{
    if (*nl == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *links = as_xreallocarray(*links, *cap, sizeof **links);
    }
    (*links)[*nl] = l;
    (*links)[*nl].other = at;
    (*nl)++;
}

/* Gather links (both directions) into H's CSR arrays. */
static void
build_links(as_heur *h)
{
    const as_problem *p = h->p;
    size_t ne = as_problem_nedges(p), na = as_problem_naliases(p), j, nl = 0, cap = 0, u, i;
    as_hlink *tmp = NULL;
    size_t *own = NULL, ocap = 0;

    for (j = 0; j < ne + na; j++) {
        size_t a, b, ua, ub;
        as_hlink l = {0};
        if (j < ne) {
            const as_pedge *e = as_problem_edge(p, j);
            a = e->u;
            b = e->v;
            l.r = e->r;
        } else {
            const as_palias *al = as_problem_alias(p, j - ne);
            a = al->a;
            b = al->b;
            l.bad = al->bad;
        }
        ua = h->unit[a];
        ub = h->unit[b];
        if (ua == ub) {
            size_t s, k = h->k[ua];
            for (s = 0; s < k; s++) {
                if (l.r != NULL)
                    h->cost[ua][s] += l.r[s * k + s];
                else if (l.bad[s * k + s])
                    h->cost[ua][s] = INFINITY;
            }
            continue;
        }
        if (nl + 2 > ocap) {
            ocap = ocap ? 2 * ocap : 64;
            own = as_xreallocarray(own, ocap, sizeof *own);
        }
        l.own_is_u = 1;
        l.ko = h->k[ub];
        own[nl] = ua;
        add_link(&tmp, &nl, &cap, ub, l);
        l.own_is_u = 0;
        l.ko = h->k[ua];
        own[nl] = ub;
        add_link(&tmp, &nl, &cap, ua, l);
    }
    h->lstart = as_xcalloc(h->nu + 2, sizeof *h->lstart);
    for (i = 0; i < nl; i++)
        h->lstart[own[i] + 2]++;
    for (u = 0; u < h->nu; u++)
        h->lstart[u + 2] += h->lstart[u + 1];
    /* every edge matrix also transposed, so that both ends read it by rows: one copy per
       edge, shared by its two links (tmp holds each edge's links side by side) */
    h->tr = as_xcalloc(nl / 2 + 1, sizeof *h->tr);
    for (i = 0; i + 1 < nl; i += 2) {
        as_hlink *a = &tmp[i], *b = &tmp[i + 1]; /* a: u's side (own_is_u), b: v's */
        size_t ku = b->ko, kv = a->ko, pi, q;
        double *t;
        if (a->r == NULL)
            continue;
        t = h->tr[h->ntr++] = as_xcalloc(ku * kv + 1, sizeof *t);
        for (pi = 0; pi < ku; pi++)
            for (q = 0; q < kv; q++)
                t[q * ku + pi] = a->r[pi * kv + q];
        a->ro = a->r;
        a->rt = t;
        b->ro = t;
        b->rt = a->r;
    }
    h->link = as_xcalloc(nl + 1, sizeof *h->link);
    for (i = 0; i < nl; i++)
        h->link[h->lstart[own[i] + 1]++] = tmp[i];
    free(tmp);
    free(own);
}

/* Runs of equal memory at consecutive binding points, per unit. */
static void
build_runs(as_heur *h)
{
    size_t u, i, nr = 0;

    h->rstart = as_xcalloc(h->nu + 2, sizeof *h->rstart);
    h->run = as_xcalloc(h->hstart[h->nu] + 1, sizeof *h->run);
    for (u = 0; u < h->nu; u++) {
        h->rstart[u] = nr;
        for (i = h->hstart[u]; i < h->hstart[u + 1]; i++) {
            const as_hmem *m = &h->hm[i];
            as_hrun *r = nr > h->rstart[u] ? &h->run[nr - 1] : NULL;
            if (r != NULL && r->hi == m->point &&
                (r->dm == m->dm || memcmp(r->dm, m->dm, h->k[u] * sizeof *m->dm) == 0)) {
                r->hi++;
                continue;
            }
            h->run[nr].lo = m->point;
            h->run[nr].hi = m->point + 1;
            h->run[nr].dm = m->dm;
            nr++;
        }
    }
    h->rstart[h->nu] = nr;
}

/* Memory of every unit at every liveness point that can bind. */
static void
build_memory(as_heur *h)
{
    const as_problem *p = h->p;
    size_t t, i, s, nt = as_problem_nlive(p), nh = 0, hcap = 0, u;
    size_t *slot = as_xcalloc(h->nu + 1, sizeof *slot);  /* index into tmp + 1, this point */
    size_t *stamp = as_xcalloc(h->nu + 1, sizeof *stamp); /* point + 1 the slot is for */
    hm_tmp *tmp = NULL;
    as_vpool pl = {0};

    h->cap = as_problem_memory_cap(p);
    h->base = as_xcalloc(nt + 1, sizeof *h->base);
    for (t = 0; isfinite(h->cap) && t < nt; t++) {
        const as_plive *l = as_problem_live(p, t), *e;
        as_plive_iter it;
        size_t b = h->nbind, j, first = nh;
        if (!as_problem_live_binds(p, t))
            continue;
        h->nbind++;
        h->base[b] = l->resident;
        /* the point's entries, then its segments' */
        for (e = as_plive_begin(&it, p, l); e != NULL; e = as_plive_next(&it)) {
            for (j = 0; j < e->n; j++) {
                size_t v = e->nodes[j], k;
                double lo = INFINITY;
                hm_tmp *x;
                u = h->unit[v];
                k = h->k[u];
                for (s = 0; s < k; s++)
                    lo = fmin(lo, e->m[j][s]);
                h->base[b] += lo;
                if (stamp[u] != b + 1) {
                    if (nh == hcap) {
                        hcap = hcap ? 2 * hcap : 64;
                        tmp = as_xreallocarray(tmp, hcap, sizeof *tmp);
                    }
                    tmp[nh].unit = u;
                    tmp[nh].point = b;
                    tmp[nh].dm = as_xcalloc(k, sizeof *tmp[nh].dm);
                    stamp[u] = b + 1;
                    slot[u] = nh++;
                }
                x = &tmp[slot[u]];
                for (s = 0; s < k; s++)
                    x->dm[s] += e->m[j][s] - lo;
            }
        }
        /* the point's vectors are complete: each held once (gpt3-175b 4x4x4 under a
           budget: 639k (unit, point) pairs of 273 strategies on average, 1.4 GB a view as
           copies, and MCTS holds three views) */
        for (j = first; j < nh; j++)
            tmp[j].dm = as_vpool_take(&pl, tmp[j].dm, h->k[tmp[j].unit]);
    }
    h->dmv = (double **)pl.v; /* owned from here */
    h->ndmv = pl.n;
    pl.v = NULL;
    as_vpool_destroy(&pl);
    h->hstart = as_xcalloc(h->nu + 2, sizeof *h->hstart);
    for (i = 0; i < nh; i++)
        h->hstart[tmp[i].unit + 2]++;
    for (u = 0; u < h->nu; u++)
        h->hstart[u + 2] += h->hstart[u + 1];
    h->hm = as_xcalloc(nh + 1, sizeof *h->hm);
    for (i = 0; i < nh; i++) {
        as_hmem *m = &h->hm[h->hstart[tmp[i].unit + 1]++];
        m->point = tmp[i].point;
        m->dm = tmp[i].dm;
        for (s = 0; s < h->k[tmp[i].unit]; s++)
            h->mw[tmp[i].unit][s] += tmp[i].dm[s];
    }
    free(tmp);
    free(slot);
    free(stamp);
    build_runs(h);
}

void
as_heur_init(as_heur *h, const as_problem *p)
{
    as_heur_init_ex(h, p, 0);
}

void
as_heur_init_ex(as_heur *h, const as_problem *p, int reverse)
{
    size_t v, u, i, s, ord;

    memset(h, 0, sizeof *h);
    h->p = p;
    h->n = as_problem_nnodes(p);
    h->reverse = reverse;
    h->unit = as_xcalloc(h->n + 1, sizeof *h->unit);
    for (v = 0; v < h->n; v++)
        h->unit[v] = UNSET;
    for (ord = 0; ord < h->n; ord++) {
        v = reverse ? h->n - 1 - ord : ord;
        if (as_problem_node(p, v)->follow == AS_NO_FOLLOW)
            h->unit[v] = h->nu++;
    }
    for (v = 0; v < h->n; v++)
        if (h->unit[v] == UNSET)
            h->unit[v] = h->unit[root_of(p, v)];
    h->k = as_xcalloc(h->nu + 1, sizeof *h->k);
    h->mstart = as_xcalloc(h->nu + 2, sizeof *h->mstart);
    h->mem = as_xcalloc(h->n + 1, sizeof *h->mem);
    for (v = 0; v < h->n; v++) {
        h->mstart[h->unit[v] + 2]++;
        if (as_problem_node(p, v)->follow == AS_NO_FOLLOW)
            h->k[h->unit[v]] = as_problem_node(p, v)->k;
    }
    for (u = 0; u < h->nu; u++)
        h->mstart[u + 2] += h->mstart[u + 1];
    for (v = 0; v < h->n; v++)
        h->mem[h->mstart[h->unit[v] + 1]++] = v;
    h->cost = as_xcalloc(h->nu + 1, sizeof *h->cost);
    h->mw = as_xcalloc(h->nu + 1, sizeof *h->mw);
    h->share = as_xcalloc(h->nu + 1, sizeof *h->share);
    for (u = 0; u < h->nu; u++) {
        h->cost[u] = as_xcalloc(h->k[u], sizeof **h->cost);
        h->mw[u] = as_xcalloc(h->k[u], sizeof **h->mw);
        for (i = h->mstart[u]; i < h->mstart[u + 1]; i++) {
            const as_pnode *nd = as_problem_node(p, h->mem[i]);
            for (s = 0; s < h->k[u]; s++)
                h->cost[u][s] += nd->c[s] + nd->d[s];
        }
    }
    build_links(h);
    build_memory(h);
    for (u = 0; u < h->nu; u++)
        for (i = h->lstart[u]; i < h->lstart[u + 1]; i++) {
            as_hlink *l = &h->link[i];
            size_t q, ku = h->k[u];
            if (l->r == NULL)
                continue;
            l->minr = as_xcalloc(ku, sizeof *l->minr);
            l->minro = as_xcalloc(l->ko, sizeof *l->minro);
            for (q = 0; q < l->ko; q++)
                l->minro[q] = INFINITY;
            for (s = 0; s < ku; s++) {
                double lo = INFINITY;
                for (q = 0; q < l->ko; q++) {
                    double r = l->r[l->own_is_u ? s * l->ko + q : q * ku + s];
                    lo = fmin(lo, r);
                    l->minro[q] = fmin(l->minro[q], r);
                }
                l->minr[s] = lo;
            }
        }
    for (u = 0; u < h->nu; u++) {
        double lo = INFINITY, hi = -INFINITY;
        for (s = 0; s < h->k[u]; s++)
            if (isfinite(h->cost[u][s])) {
                lo = fmin(lo, h->cost[u][s]);
                hi = fmax(hi, h->cost[u][s]);
            }
        h->share[u] = hi > lo ? hi - lo : 0;
        for (i = h->lstart[u]; i < h->lstart[u + 1]; i++) {
            const as_hlink *l = &h->link[i];
            size_t q, nr = h->k[u] * l->ko;
            if (l->r == NULL)
                continue;
            lo = INFINITY;
            hi = -INFINITY;
            for (q = 0; q < nr; q++) {
                lo = fmin(lo, l->r[q]);
                hi = fmax(hi, l->r[q]);
            }
            h->share[u] += (hi - lo) / 2; /* each edge is shared by its two units */
        }
    }
}

void
as_heur_free(as_heur *h)
{
    size_t u, i;

    for (u = 0; u < h->nu; u++) {
        free(h->cost[u]);
        free(h->mw[u]);
    }
    for (i = 0; i < h->ndmv; i++)
        free(h->dmv[i]);
    free(h->dmv);
    for (i = 0; h->lstart != NULL && i < h->lstart[h->nu]; i++)
        free(h->link[i].minr), free(h->link[i].minro);
    for (i = 0; i < h->ntr; i++)
        free(h->tr[i]);
    free(h->tr);
    free(h->cost);
    free(h->mw);
    free(h->share);
    free(h->unit);
    free(h->k);
    free(h->mstart);
    free(h->mem);
    free(h->lstart);
    free(h->link);
    free(h->hstart);
    free(h->hm);
    free(h->rstart);
    free(h->run);
    free(h->base);
    memset(h, 0, sizeof *h);
}

double
as_heur_step_cost(const as_heur *h, const size_t *x, size_t u, size_t s)
{
    double c = h->cost[u][s];
    size_t i, ku = h->k[u];

    for (i = h->lstart[u]; i < h->lstart[u + 1] && isfinite(c); i++) {
        const as_hlink *l = &h->link[i];
        size_t o = x[l->other];
        size_t at;
        if (o == UNSET)
            continue;
        at = l->own_is_u ? s * l->ko + o : o * ku + s;
        if (l->r != NULL)
            c += l->r[at];
        else if (l->bad[at])
            c = INFINITY;
    }
    return c;
}

void
as_heur_greedy(const as_heur *h, size_t *x, double lambda)
{
    size_t u, s, i, kmax = 1;
    double *cv;

    for (u = 0; u < h->nu; u++)
        kmax = h->k[u] > kmax ? h->k[u] : kmax;
    cv = as_xcalloc(kmax, sizeof *cv);
    for (u = 0; u < h->nu; u++) {
        size_t best = 0, ku = h->k[u];
        double bc = INFINITY, bm = INFINITY;
        if (x[u] != UNSET)
            continue;
        /* the cost against the assigned units (links in order, as as_heur_step_cost adds
           them), then the cheapest resharding to the open ones */
        memcpy(cv, h->cost[u], ku * sizeof *cv);
        for (i = h->lstart[u]; i < h->lstart[u + 1]; i++) {
            const as_hlink *l = &h->link[i];
            size_t o = x[l->other];
            if (o == UNSET)
                continue;
            if (l->r != NULL) {
                const double *rt = l->rt + o * ku;
                for (s = 0; s < ku; s++)
                    cv[s] += rt[s];
            } else {
                for (s = 0; s < ku; s++)
                    if (l->bad[l->own_is_u ? s * l->ko + o : o * ku + s])
                        cv[s] = INFINITY;
            }
        }
        for (i = h->lstart[u]; i < h->lstart[u + 1]; i++)
            if (h->link[i].minr != NULL && x[h->link[i].other] == UNSET)
                for (s = 0; s < ku; s++)
                    cv[s] += h->link[i].minr[s];
        for (s = 0; s < ku; s++) {
            double c = cv[s], m = h->mw[u][s];
            int better;
            if (isinf(lambda))
                better = isfinite(c) && (m < bm || (m == bm && c < bc));
            else {
                c += lambda * m;
                better = c < bc;
            }
            if (better || (s == 0 && !isfinite(bc))) {
                best = s;
                bc = c;
                bm = m;
            }
        }
        x[u] = best;
    }
    free(cv);
}

static void memory_of(const as_heur *h, const size_t *x, double *tot);

double
as_heur_eval(const as_heur *h, const size_t *x, double *tot)
{
    double c = 0;
    size_t u, i;

    for (u = 0; u < h->nu && isfinite(c); u++) {
        c += h->cost[u][x[u]];
        for (i = h->lstart[u]; i < h->lstart[u + 1]; i++) {
            const as_hlink *l = &h->link[i];
            size_t o = x[l->other], at;
            if (l->other > u)
                continue; /* each link once, at its later unit */
            at = l->own_is_u ? x[u] * l->ko + o : o * h->k[u] + x[u];
            if (l->r != NULL)
                c += l->r[at];
            else if (l->bad[at])
                c = INFINITY;
        }
    }
    if (!isfinite(c) || h->nbind == 0 || isinf(h->cap))
        return c; /* no budget (or a view without it, MCTS's repair gate): nothing to exceed */
    {
        /* TOT may be NULL: scratch of our own (a budget binds here) */
        double *mine = tot == NULL ? as_xmalloc(h->nbind * sizeof *mine) : NULL;
        double *use = tot != NULL ? tot : mine;
        memory_of(h, x, use);
        for (i = 0; i < h->nbind && isfinite(c); i++)
            if (use[i] > h->cap)
                c = INFINITY;
        free(mine);
    }
    return c;
}

double
as_heur_peak(const as_heur *h, const size_t *x, double *tot)
{
    size_t i;
    double peak = 0;

    if (h->nbind == 0)
        return 0;
    memory_of(h, x, tot);
    for (i = 0; i < h->nbind; i++)
        peak = tot[i] > peak ? tot[i] : peak;
    return peak;
}

void
as_heur_expand(const as_heur *h, const size_t *x, size_t *choice)
{
    size_t v;

    for (v = 0; v < h->n; v++)
        choice[v] = x[h->unit[v]];
}

/*
 * The memory at every binding point while a search moves units: a segment tree
 * with range add and range maximum, so that a move costs O(runs x log points)
 * instead of O(points).
 */
typedef struct seg {
    size_t n, size;
    double *mx, *lz; /* 2 * size: maximum of the node's range, pending add */
} seg;

/* The larger of A and B, neither a NaN (fmax is a libm call: the tree's hot path) */
static inline double
dmax(double a, double b)
{
    return a > b ? a : b;
}

static void
seg_init(seg *t, const double *v, size_t n)
{
    size_t i;

    t->n = n;
    for (t->size = 1; t->size < n; t->size *= 2)
        ;
    t->mx = as_xcalloc(2 * t->size, sizeof *t->mx);
    t->lz = as_xcalloc(2 * t->size, sizeof *t->lz);
    for (i = 0; i < t->size; i++)
        t->mx[t->size + i] = i < n ? v[i] : -INFINITY;
    for (i = t->size - 1; i >= 1; i--)
        t->mx[i] = dmax(t->mx[2 * i], t->mx[2 * i + 1]);
}

static void
seg_free(seg *t)
{
    free(t->mx);
    free(t->lz);
}

/* Add D to [lo, hi) within node X covering [nl, nr). */
static void
seg_add(seg *t, size_t x, size_t nl, size_t nr, size_t lo, size_t hi, double d)
{
    size_t mid;

    if (hi <= nl || nr <= lo)
        return;
    if (lo <= nl && nr <= hi) {
        t->mx[x] += d;
        t->lz[x] += d;
        return;
    }
    mid = (nl + nr) / 2;
    seg_add(t, 2 * x, nl, mid, lo, hi, d);
    seg_add(t, 2 * x + 1, mid, nr, lo, hi, d);
    t->mx[x] = dmax(t->mx[2 * x], t->mx[2 * x + 1]) + t->lz[x];
}

static double
seg_max(const seg *t, size_t x, size_t nl, size_t nr, size_t lo, size_t hi)
{
    size_t mid;

    if (hi <= nl || nr <= lo)
        return -INFINITY;
    if (lo <= nl && nr <= hi)
        return t->mx[x];
    mid = (nl + nr) / 2;
    return dmax(seg_max(t, 2 * x, nl, mid, lo, hi), seg_max(t, 2 * x + 1, mid, nr, lo, hi)) +
           t->lz[x];
}

/* Add D to the points [LO, HI), as seg_add does, without recursion (the hot path of
   the local searches' moves): the nodes within it take D (mx and lz), then the
   nodes that hold LO or HI - 1 but are not within it are recomputed from their children,
   bottom up -- the same nodes and operations as the recursive form, so the same values. */
static void
seg_add_it(seg *t, size_t lo, size_t hi, double d)
{
    size_t l = lo + t->size, r = hi + t->size, k, i, a, w;

    if (lo >= hi) {
        seg_add(t, 1, 0, t->size, lo, hi, d);
        return;
    }
    for (; l < r; l >>= 1, r >>= 1) {
        if (l & 1) {
            t->mx[l] += d;
            t->lz[l++] += d;
        }
        if (r & 1) {
            t->mx[--r] += d;
            t->lz[r] += d;
        }
    }
    for (k = 1, w = 2; w <= t->size; k++, w *= 2) {
        i = (lo + t->size) >> k;
        a = i * w - t->size;
        if (lo > a || a + w > hi)
            t->mx[i] = dmax(t->mx[2 * i], t->mx[2 * i + 1]) + t->lz[i];
        if (((hi - 1 + t->size) >> k) != i) {
            i = (hi - 1 + t->size) >> k;
            a = i * w - t->size;
            if (lo > a || a + w > hi)
                t->mx[i] = dmax(t->mx[2 * i], t->mx[2 * i + 1]) + t->lz[i];
        }
    }
}

/* Child C (width W) of a node on the path of LO or HI - 1: its maximum as the recursive form
   returns it (PI, PJ: the path nodes at C's level, RL, RR: theirs). */
static inline double
seg_child(const seg *t, size_t c, size_t w, size_t lo, size_t hi, size_t pi, double rl,
          size_t pj, double rr)
{
    size_t a;

    if (c == pi)
        return rl;
    if (c == pj)
        return rr;
    a = c * w - t->size;
    return lo <= a && a + w <= hi ? t->mx[c] : -INFINITY;
}

/* The maximum over the points [LO, HI), as seg_max gives it, bottom up along the paths of LO and
   HI - 1, with the recursive form's operations in its order. */
static double
seg_max_it(const seg *t, size_t lo, size_t hi)
{
    size_t pi, pj, i, j, a, w;
    double rl, rr, nl, nr;

    if (lo >= hi)
        return seg_max(t, 1, 0, t->size, lo, hi);
    pi = lo + t->size;
    pj = hi - 1 + t->size;
    rl = t->mx[pi];
    rr = t->mx[pj];
    for (w = 2; w <= t->size; w *= 2) {
        i = pi >> 1;
        j = pj >> 1;
        a = i * w - t->size;
        if (lo <= a && a + w <= hi)
            nl = t->mx[i];
        else
            nl = dmax(seg_child(t, 2 * i, w / 2, lo, hi, pi, rl, pj, rr),
                      seg_child(t, 2 * i + 1, w / 2, lo, hi, pi, rl, pj, rr)) + t->lz[i];
        if (j == i) {
            nr = nl;
        } else {
            a = j * w - t->size;
            if (lo <= a && a + w <= hi)
                nr = t->mx[j];
            else
                nr = dmax(seg_child(t, 2 * j, w / 2, lo, hi, pi, rl, pj, rr),
                          seg_child(t, 2 * j + 1, w / 2, lo, hi, pi, rl, pj, rr)) + t->lz[j];
        }
        pi = i;
        pj = j;
        rl = nl;
        rr = nr;
    }
    return rl;
}

/* The memory of the complete assignment X at every binding point, into TOT (nbind). */
static void
memory_of(const as_heur *h, const size_t *x, double *tot)
{
    size_t u, i;
    double acc = 0;

    memset(tot, 0, (h->nbind + 1) * sizeof *tot);
    for (u = 0; u < h->nu; u++)
        for (i = h->rstart[u]; i < h->rstart[u + 1]; i++) {
            tot[h->run[i].lo] += h->run[i].dm[x[u]];
            tot[h->run[i].hi] -= h->run[i].dm[x[u]];
        }
    for (i = 0; i < h->nbind; i++) {
        acc += tot[i];
        tot[i] = h->base[i] + acc;
    }
}

/* Memory at every binding point still fits if unit U moves from strategy A to B. */
static int
move_fits(const as_heur *h, const seg *t, size_t u, size_t a, size_t b)
{
    size_t i;

    for (i = h->rstart[u]; i < h->rstart[u + 1]; i++) {
        const as_hrun *r = &h->run[i];
        double d = r->dm[b] - r->dm[a];
        /* the highest point of all (the root) first: most moves fit below it */
        if (d > 0 && t->mx[1] + d > h->cap && seg_max_it(t, r->lo, r->hi) + d > h->cap)
            return 0;
    }
    return 1;
}

static void
move_apply(const as_heur *h, seg *t, size_t *x, size_t u, size_t b)
{
    size_t i;

    for (i = h->rstart[u]; t->n > 0 && i < h->rstart[u + 1]; i++) {
        const as_hrun *r = &h->run[i];
        double d = r->dm[b] - r->dm[x[u]];
        if (d != 0)
            seg_add_it(t, r->lo, r->hi, d);
    }
    x[u] = b;
}

/* Memory still fits if U moves from A0 to A and W from B0 to B together: a merge of the
   two units' runs (each in increasing order) into pieces where both deltas are constant. */
static int
pair_fits(const as_heur *h, const seg *t, size_t u, size_t a0, size_t a, size_t w, size_t b0,
          size_t b)
{
    size_t i = h->rstart[u], ie = h->rstart[u + 1], j = h->rstart[w], je = h->rstart[w + 1];
    size_t pos = 0;

    while (i < ie || j < je) {
        const as_hrun *ru = i < ie ? &h->run[i] : NULL, *rw = j < je ? &h->run[j] : NULL;
        size_t lo = SIZE_MAX, hi = SIZE_MAX;
        double d = 0;
        /* the next piece starts at the first uncovered point of either run */
        if (ru != NULL)
            lo = ru->lo > pos ? ru->lo : pos;
        if (rw != NULL) {
            size_t lw = rw->lo > pos ? rw->lo : pos;
            lo = lw < lo ? lw : lo;
        }
        if (ru != NULL && ru->lo <= lo) {
            d += ru->dm[a] - ru->dm[a0];
            hi = ru->hi;
        } else if (ru != NULL)
            hi = ru->lo;
        if (rw != NULL && rw->lo <= lo) {
            d += rw->dm[b] - rw->dm[b0];
            hi = rw->hi < hi ? rw->hi : hi;
        } else if (rw != NULL)
            hi = rw->lo < hi ? rw->lo : hi;
        if (d > 0 && t->mx[1] + d > h->cap && seg_max_it(t, lo, hi) + d > h->cap)
            return 0;
        pos = hi;
        if (ru != NULL && ru->hi <= pos)
            i++;
        if (rw != NULL && rw->hi <= pos)
            j++;
    }
    return 1;
}

int
as_heur_improve(const as_heur *h, size_t *x, int max_sweeps)
{
    return as_heur_improve_ex(h, x, max_sweeps, 1);
}

/*
 * Local search state: every unit's cost vector against the others' current strategies
 * (g[u][s] = own cost + the links at the others' strategies; nbad: alias pairs broken),
 * kept up to date as units move, so that a unit's best strategy costs O(k) instead of
 * O(k x links), and a pair move O(k_u x k_w) (pruned by a bound) instead of
 * O((k_u + k_w) x links + k_u x k_w).
 */
typedef struct ls {
    const as_heur *h;
    size_t *x;
    double *gbuf;
    double **g;
    unsigned *bbuf;
    unsigned **nbad;
    unsigned char *dirty; /* singles: the unit's vector or strategy changed since it was
                             last looked at, or a better strategy did not fit the budget */
    unsigned char *pdirty; /* pairs: the same for the pairs the unit is in */
    seg tot;
    size_t clock;          /* moves made */
    size_t *chg;           /* nu: the clock when the unit's vector or strategy last changed */
    size_t *btried;        /* nu: the clock when a block move around the unit last failed
                              (0: never); it fails again while nothing in it changed */
    size_t *ctried;        /* nu: the clock when every chain move from the unit last failed
                              (0: never); they fail again while nothing within CHAIN_DEPTH
                              links of it changed */
    size_t *ulog;          /* while logging: (unit, its chg before) pairs, so that a move
                              undone leaves the clocks as they were */
    size_t nulog, culog;
    int logging;
} ls;

static void
ls_init(ls *st, const as_heur *h, size_t *x)
{
    size_t u, s, i, nk = 0;

    memset(st, 0, sizeof *st);
    st->h = h;
    st->x = x;
    for (u = 0; u < h->nu; u++)
        nk += h->k[u];
    st->gbuf = as_xcalloc(nk + 1, sizeof *st->gbuf);
    st->bbuf = as_xcalloc(nk + 1, sizeof *st->bbuf);
    st->g = as_xcalloc(h->nu + 1, sizeof *st->g);
    st->nbad = as_xcalloc(h->nu + 1, sizeof *st->nbad);
    st->dirty = as_xcalloc(h->nu + 1, 1);
    st->pdirty = as_xcalloc(h->nu + 1, 1);
    st->chg = as_xcalloc(h->nu + 1, sizeof *st->chg);
    st->btried = as_xcalloc(h->nu + 1, sizeof *st->btried);
    st->ctried = as_xcalloc(h->nu + 1, sizeof *st->ctried);
    st->clock = 1;
    nk = 0;
    for (u = 0; u < h->nu; u++) {
        size_t ku = h->k[u];
        double *g = st->g[u] = st->gbuf + nk;
        unsigned *nb = st->nbad[u] = st->bbuf + nk;
        nk += ku;
        st->dirty[u] = st->pdirty[u] = 1;
        for (s = 0; s < ku; s++)
            g[s] = h->cost[u][s];
        memset(nb, 0, ku * sizeof *nb);
        for (i = h->lstart[u]; i < h->lstart[u + 1]; i++) {
            const as_hlink *l = &h->link[i];
            size_t o = x[l->other];
            if (l->r != NULL) {
                const double *rt = l->rt + o * ku;
                for (s = 0; s < ku; s++)
                    g[s] += rt[s];
            } else {
                for (s = 0; s < ku; s++)
                    nb[s] += l->bad[l->own_is_u ? s * l->ko + o : o * ku + s];
            }
        }
    }
    if (h->nbind > 0) {
        double *mem = as_xcalloc(h->nbind + 1, sizeof *mem);
        memory_of(h, x, mem);
        seg_init(&st->tot, mem, h->nbind);
        free(mem);
    }
}

static void
ls_free(ls *st)
{
    free(st->gbuf);
    free(st->bbuf);
    free(st->g);
    free(st->nbad);
    free(st->dirty);
    free(st->pdirty);
    free(st->chg);
    free(st->btried);
    free(st->ctried);
    free(st->ulog);
    seg_free(&st->tot);
}

/* The cost of unit U at strategy S against the others (INFINITY if an alias forbids it). */
static double
ls_cost(const ls *st, size_t u, size_t s)
{
    return st->nbad[u][s] ? INFINITY : st->g[u][s];
}

/* While logging, remember unit U's change clock before it is overwritten. */
static void
ls_log(ls *st, size_t u)
{
    if (!st->logging)
        return;
    if (st->nulog + 2 > st->culog) {
        st->culog = st->culog ? 2 * st->culog : 256;
        st->ulog = as_xreallocarray(st->ulog, st->culog, sizeof *st->ulog);
    }
    st->ulog[st->nulog++] = u;
    st->ulog[st->nulog++] = st->chg[u];
}

/* Stop logging; with UNDO, put the logged clocks back (the log in reverse: first values
   last), as if the moves since logging began, undone, had not happened. */
static void
ls_unlog(ls *st, int undo)
{
    st->logging = 0;
    while (undo && st->nulog > 0) {
        st->nulog -= 2;
        st->chg[st->ulog[st->nulog]] = st->ulog[st->nulog + 1];
    }
}

/* Unit U takes strategy B: its neighbours' vectors and the memory follow. */
static void
ls_move(ls *st, size_t u, size_t b)
{
    const as_heur *h = st->h;
    size_t a = st->x[u], i, t, ku = h->k[u];

    if (a == b)
        return;
    st->clock++;
    ls_log(st, u);
    st->chg[u] = st->clock;
    for (i = h->lstart[u]; i < h->lstart[u + 1]; i++) {
        const as_hlink *l = &h->link[i];
        size_t o = l->other, ko = l->ko;
        double *g = st->g[o];
        st->dirty[o] = st->pdirty[o] = 1;
        ls_log(st, o);
        st->chg[o] = st->clock;
        if (l->r != NULL) {
            const double *ra = l->ro + a * ko, *rb = l->ro + b * ko;
            for (t = 0; t < ko; t++)
                g[t] += rb[t] - ra[t];
        } else {
            unsigned *nb = st->nbad[o];
            for (t = 0; t < ko; t++) {
                size_t ia = l->own_is_u ? a * ko + t : t * ku + a;
                size_t ib = l->own_is_u ? b * ko + t : t * ku + b;
                nb[t] += (unsigned)l->bad[ib] - (unsigned)l->bad[ia];
            }
        }
    }
    st->pdirty[u] = 1;
    move_apply(h, &st->tot, st->x, u, b);
}

/* One sweep of single moves in unit order; the number of moves. */
/* The caller's deadline passed (checked every 16th unit U). */
static int
late(const as_heur *h, size_t u)
{
    return h->deadline > 0 && (u & 15) == 0 && as_now() > h->deadline;
}

static size_t
ls_sweep(ls *st)
{
    const as_heur *h = st->h;
    size_t u, s, moves = 0;

    for (u = 0; u < h->nu && !late(h, u); u++) {
        size_t cur = st->x[u], best = cur, ku = h->k[u];
        double bc;
        if (!st->dirty[u])
            continue; /* nothing around it moved: its best is what it has */
        st->dirty[u] = 0;
        bc = ls_cost(st, u, cur);
        for (s = 0; s < ku; s++) {
            double c;
            if (s == cur)
                continue;
            c = ls_cost(st, u, s);
            if (!(c < bc - 1e-12 * fabs(bc)))
                continue;
            if (h->nbind == 0 || move_fits(h, &st->tot, u, cur, s)) {
                best = s;
                bc = c;
            } else {
                st->dirty[u] = 1; /* it may fit once others move */
            }
        }
        if (best != cur) {
            ls_move(st, u, best);
            moves++;
        }
    }
    return moves;
}

/*
 * Pair moves: for every pair of units joined by an edge, the best pair of strategies
 * given every other unit's (ICM cannot make two coupled units change together).  Returns
 * the number of moves made.
 */
static size_t
ls_pairs(ls *st)
{
    const as_heur *h = st->h;
    size_t *x = st->x;
    size_t u, i, j, moves = 0, kmax = 1, nl, *lk, *seen;
    double *cu, *cw;
    unsigned char *pd = as_xcalloc(h->nu + 1, 1);

    /* a pair whose two vectors and strategies did not change since it was last looked
       at (and did not miss the budget) has no better pair of strategies now */
    for (u = 0; u < h->nu; u++) {
        kmax = h->k[u] > kmax ? h->k[u] : kmax;
        pd[u] = st->pdirty[u];
        st->pdirty[u] = 0;
    }
    cu = as_xcalloc(kmax, sizeof *cu);
    cw = as_xcalloc(kmax, sizeof *cw);
    lk = as_xcalloc(h->lstart[h->nu] + 1, sizeof *lk);
    seen = as_xcalloc(h->nu + 1, sizeof *seen);
    for (u = 0; u < h->nu && !late(h, u); u++)
        for (i = h->lstart[u]; i < h->lstart[u + 1]; i++) {
            const as_hlink *l = &h->link[i];
            size_t w = l->other, a0 = x[u], b0 = x[w], a, b, ba = a0, bb = b0, ku = h->k[u];
            size_t kw = h->k[w];
            double best, mincw = INFINITY;
            int has_r = 0;
            if (w < u || seen[w] == u + 1)
                continue; /* each pair once, from its earlier unit */
            seen[w] = u + 1;
            if (!pd[u] && !pd[w] && !st->pdirty[u] && !st->pdirty[w])
                continue;
            nl = 0;
            for (j = i; j < h->lstart[u + 1]; j++)
                if (h->link[j].other == w) {
                    lk[nl++] = j;
                    has_r |= h->link[j].r != NULL;
                }
            if (!has_r)
                continue;
#define LIDX(m, a, b) ((m)->own_is_u ? (a) * (m)->ko + (b) : (b) * ku + (a))
            /* each end's cost against everything but the other end */
            for (a = 0; a < ku; a++) {
                double c = st->g[u][a];
                unsigned nb = st->nbad[u][a];
                for (j = 0; j < nl; j++) {
                    const as_hlink *m = &h->link[lk[j]];
                    if (m->r != NULL)
                        c -= m->rt[b0 * ku + a];
                    else
                        nb -= m->bad[LIDX(m, a, b0)];
                }
                cu[a] = nb ? INFINITY : c;
            }
            for (b = 0; b < kw; b++) {
                double c = st->g[w][b];
                unsigned nb = st->nbad[w][b];
                for (j = 0; j < nl; j++) {
                    const as_hlink *m = &h->link[lk[j]];
                    if (m->r != NULL)
                        c -= m->ro[a0 * kw + b];
                    else
                        nb -= m->bad[LIDX(m, a0, b)];
                }
                cw[b] = nb ? INFINITY : c;
                mincw = fmin(mincw, cw[b]);
            }
            best = st->g[u][a0] + cw[b0];
            for (a = 0; a < ku; a++) {
                double mr = 0; /* the cheapest the links can cost with a */
                if (!isfinite(cu[a]))
                    continue;
                for (j = 0; j < nl; j++)
                    if (h->link[lk[j]].minr != NULL)
                        mr += h->link[lk[j]].minr[a];
                if (!(cu[a] + mincw + mr < best - 1e-12 * fabs(best)))
                    continue; /* no strategy of w makes a pay */
                for (b = 0; b < kw; b++) {
                    double c = cu[a] + cw[b];
                    int bad = 0;
                    if (!(c + mr < best - 1e-12 * fabs(best)))
                        continue;
                    for (j = 0; j < nl && !bad; j++) {
                        const as_hlink *m = &h->link[lk[j]];
                        if (m->r != NULL)
                            c += m->ro[a * kw + b];
                        else
                            bad = m->bad[LIDX(m, a, b)];
                    }
                    if (bad || !(c < best - 1e-12 * fabs(best)))
                        continue;
                    if (h->nbind > 0 && !pair_fits(h, &st->tot, u, a0, a, w, b0, b)) {
                        st->pdirty[u] = st->pdirty[w] = 1; /* it may fit later */
                        continue;
                    }
                    best = c;
                    ba = a;
                    bb = b;
                }
            }
#undef LIDX
            if (ba != a0 || bb != b0) {
                ls_move(st, u, ba);
                ls_move(st, w, bb);
                moves++;
            }
        }
    for (; u < h->nu; u++) /* stopped at the deadline: the pairs not looked at stay due */
        st->pdirty[u] |= pd[u];
    free(cu);
    free(cw);
    free(lk);
    free(seen);
    free(pd);
    return moves;
}

/* Single moves until none helps, then pair moves, and again; the number of moves. */
static size_t
ls_improve(ls *st, int max_sweeps, int use_pairs)
{
    size_t moves = 0;
    int sweep, changed = 1, pairs = 0;

    for (sweep = 0; changed && sweep < max_sweeps && !late(st->h, 0); sweep++) {
        size_t m = ls_sweep(st);
        moves += m;
        changed = m > 0;
        if (!changed && use_pairs && pairs < max_sweeps) { /* a local optimum of singles */
            size_t pm = ls_pairs(st);
            pairs++;
            moves += pm;
            changed = pm > 0;
        }
    }
    return moves;
}

/* The first binding point where the memory in T is highest (its value: the root). */
static size_t
seg_argmax(const seg *t)
{
    size_t x = 1;

    while (x < t->size)
        x = t->mx[2 * x] >= t->mx[2 * x + 1] ? 2 * x : 2 * x + 1;
    return x - t->size;
}

/*
 * as_heur_repair on the local search's state: the highest point from the memory tree
 * (O(log points)), a move's cost change from the units' vectors (O(1) instead of a pass
 * over the unit's links), the memory and the vectors updated by the move alone -- so a
 * step costs one pass over the units' runs, not a recount of the plan's memory and its
 * links (MCTS repairs its rollouts over the budget this way).  The moves made.
 */
static size_t
ls_repair(ls *st, int max_steps, int *ok)
{
    const as_heur *h = st->h;
    size_t moves = 0;
    int step;

    *ok = h->nbind == 0;
    for (step = 0; !*ok && step < max_steps; step++) {
        size_t u, s, i, at = seg_argmax(&st->tot), bu = UNSET, bs = 0;
        double peak = st->tot.mx[1], best = INFINITY;
        if (!(peak > h->cap)) {
            *ok = 1;
            break;
        }
        /* the move with the least cost per byte it takes off the highest point */
        for (u = 0; u < h->nu; u++) {
            size_t xu = st->x[u];
            double cur;
            for (i = h->rstart[u]; i < h->rstart[u + 1]; i++)
                if (h->run[i].lo <= at && at < h->run[i].hi)
                    break;
            if (i == h->rstart[u + 1])
                continue; /* the unit holds nothing at that point */
            cur = ls_cost(st, u, xu);
            for (s = 0; s < h->k[u]; s++) {
                size_t j;
                double dm = 0, dc, r;
                if (s == xu)
                    continue;
                for (j = i; j < h->rstart[u + 1]; j++)
                    if (h->run[j].lo <= at && at < h->run[j].hi)
                        dm += h->run[j].dm[s] - h->run[j].dm[xu];
                if (!(dm < 0))
                    continue;
                dc = ls_cost(st, u, s) - cur;
                if (!isfinite(dc))
                    continue;
                r = dc / fmin(-dm, peak - h->cap);
                if (r < best) {
                    best = r;
                    bu = u;
                    bs = s;
                }
            }
        }
        if (bu == UNSET)
            break; /* nothing takes bytes off the highest point */
        ls_move(st, bu, bs);
        moves++;
    }
    return moves;
}

int
as_heur_repair(const as_heur *h, size_t *x, int max_steps)
{
    ls st;
    int ok;

    ls_init(&st, h, x);
    ls_repair(&st, max_steps, &ok);
    ls_free(&st);
    return ok;
}

int
as_heur_improve_ex(const as_heur *h, size_t *x, int max_sweeps, int use_pairs)
{
    ls st;
    size_t moves;

    ls_init(&st, h, x);
    moves = ls_improve(&st, max_sweeps, use_pairs);
    ls_free(&st);
    return (int)(moves > 0);
}

/*
 * Chain moves (ejection chains): unit U takes strategy S, then the units around it
 * answer in breadth-first order, each with its best strategy against the others', up to
 * CHAIN_DEPTH links away and CHAIN_UNITS units; the chain is kept if the plan got cheaper
 * and still fits.  This is how a run of ops leaves data parallelism for Megatron's
 * column-then-row pattern together, which no single or pair move can do.  The cost
 * change is summed move by move from the units' vectors (each move's change given the
 * others' strategies at that moment), so a chain costs O(its units x (k + links x k)).
 */
#define CHAIN_DEPTH 4
#define CHAIN_UNITS 48

typedef struct chain {
    size_t *in;     /* nu: stamp of the chain a unit is in */
    size_t *old;    /* nu: its strategy before the chain */
    size_t *list, *depth, n, stamp;
    size_t *bq, *bd; /* nu: breadth-first queue and depths (chain_settled) */
} chain;

static void
chain_alloc(chain *c, size_t nu)
{
    c->in = as_xcalloc(nu + 1, sizeof *c->in);
    c->old = as_xcalloc(nu + 1, sizeof *c->old);
    c->list = as_xcalloc(CHAIN_UNITS + 1, sizeof *c->list);
    c->depth = as_xcalloc(CHAIN_UNITS + 1, sizeof *c->depth);
    c->bq = as_xcalloc(nu + 1, sizeof *c->bq);
    c->bd = as_xcalloc(nu + 1, sizeof *c->bd);
}

static void
chain_release(chain *c)
{
    free(c->in);
    free(c->old);
    free(c->list);
    free(c->depth);
    free(c->bq);
    free(c->bd);
}

/*
 * 1 if every chain move from U failed before and nothing it reads changed since: no unit
 * within CHAIN_DEPTH links of U (whose vectors and strategies are all a chain from U looks
 * at) changed its vector or strategy.  A chain undone leaves the clocks as they were
 * (ls_log), so only kept moves count.  Then the chains from U fail again (the same
 * computation on the same numbers), and are skipped.
 */
static int
chain_settled(const ls *st, chain *c, size_t u)
{
    const as_heur *h = st->h;
    size_t head = 0, n = 0, i, since = st->ctried[u];

    if (since == 0 || st->chg[u] > since)
        return 0;
    c->stamp++;
    c->in[u] = c->stamp;
    c->bq[n] = u;
    c->bd[n++] = 0;
    while (head < n) {
        size_t w = c->bq[head], dw = c->bd[head++];
        if (dw >= CHAIN_DEPTH)
            continue;
        for (i = h->lstart[w]; i < h->lstart[w + 1]; i++) {
            size_t o = h->link[i].other;
            if (c->in[o] == c->stamp)
                continue;
            if (st->chg[o] > since)
                return 0;
            c->in[o] = c->stamp;
            c->bq[n] = o;
            c->bd[n++] = dw + 1;
        }
    }
    return 1;
}

static size_t
chain_moves(ls *st, chain *c)
{
    const as_heur *h = st->h;
    size_t *x = st->x;
    size_t u, s, j, i, moves = 0;

    for (u = 0; u < h->nu && !late(h, u); u++) {
        int kept = 0, over = 0; /* a chain from u kept; one turned down by the budget only */
        if (chain_settled(st, c, u))
            continue;
        for (s = 0; s < h->k[u]; s++) {
            size_t head = 0;
            double d;
            long nbad;
            if (s == x[u] || !isfinite(h->cost[u][s]))
                continue;
            st->logging = 1;
            st->nulog = 0;
            c->stamp++;
            c->n = 0;
            c->in[u] = c->stamp;
            c->old[u] = x[u];
            c->list[c->n] = u;
            c->depth[c->n++] = 0;
            d = st->g[u][s] - st->g[u][x[u]];
            nbad = (long)st->nbad[u][s] - (long)st->nbad[u][x[u]];
            ls_move(st, u, s);
            while (head < c->n) {
                size_t w = c->list[head], dw = c->depth[head++];
                if (dw >= CHAIN_DEPTH)
                    continue;
                for (i = h->lstart[w]; i < h->lstart[w + 1] && c->n < CHAIN_UNITS; i++) {
                    size_t o = h->link[i].other, b = x[o], t;
                    double bc;
                    if (c->in[o] == c->stamp)
                        continue;
                    bc = ls_cost(st, o, b);
                    for (t = 0; t < h->k[o]; t++) {
                        double ct = t == x[o] ? bc : ls_cost(st, o, t);
                        if (ct < bc - 1e-12 * fabs(bc)) {
                            bc = ct;
                            b = t;
                        }
                    }
                    if (b == x[o])
                        continue;
                    c->in[o] = c->stamp;
                    c->old[o] = x[o];
                    c->list[c->n] = o;
                    c->depth[c->n++] = dw + 1;
                    d += st->g[o][b] - st->g[o][x[o]];
                    nbad += (long)st->nbad[o][b] - (long)st->nbad[o][x[o]];
                    ls_move(st, o, b);
                }
            }
            {
                int keep = nbad <= 0 && d < -1e-12 * fabs(h->share[u] + 1e-300) && d < 0;
                if (keep && h->nbind > 0) {
                    keep = st->tot.mx[1] <= h->cap;
                    over |= !keep;
                }
                if (keep) {
                    ls_unlog(st, 0);
                    moves++;
                    kept = 1;
                    continue;
                }
                for (j = c->n; j-- > 0;)
                    ls_move(st, c->list[j], c->old[c->list[j]]);
                ls_unlog(st, 1); /* undone: the clocks as they were */
            }
        }
        if (!kept && !over)
            st->ctried[u] = st->clock;
    }
    return moves;
}

int
as_heur_chain(const as_heur *h, size_t *x, int max_rounds)
{
    chain c = {0};
    ls st;
    size_t moves = 0, m;
    int r;

    ls_init(&st, h, x);
    chain_alloc(&c, h->nu);
    for (r = 0; r < max_rounds && !late(h, 0); r++) {
        m = chain_moves(&st, &c);
        moves += m;
        if (m == 0)
            break;
        ls_improve(&st, 20, 1);
    }
    chain_release(&c);
    ls_free(&st);
    return moves > 0;
}

struct as_hls {
    ls st;
    chain c;
    size_t moves; /* since the vectors were last computed afresh */
};

as_hls *
as_hls_new(const as_heur *h, const size_t *x)
{
    as_hls *q = as_xcalloc(1, sizeof *q);
    size_t *own = as_xcalloc(h->nu + 1, sizeof *own);

    memcpy(own, x, h->nu * sizeof *own);
    ls_init(&q->st, h, own);
    chain_alloc(&q->c, h->nu);
    return q;
}

void
as_hls_free(as_hls *q)
{
    size_t *own;

    if (q == NULL)
        return;
    own = q->st.x;
    ls_free(&q->st);
    free(own);
    chain_release(&q->c);
    free(q);
}

/* Recompute the vectors afresh now and then: the updates add rounding. */
#define HLS_REFRESH 200000

void
as_hls_set(as_hls *q, const size_t *x)
{
    const as_heur *h = q->st.h;
    size_t u;

    if (q->moves > HLS_REFRESH) {
        size_t *own = q->st.x;
        unsigned char *d = as_xcalloc(h->nu + 1, 2);
        memcpy(d, q->st.dirty, h->nu);
        memcpy(d + h->nu + 1, q->st.pdirty, h->nu);
        ls_free(&q->st);
        ls_init(&q->st, h, own);
        memcpy(q->st.dirty, d, h->nu); /* what was settled stays settled */
        memcpy(q->st.pdirty, d + h->nu + 1, h->nu);
        free(d);
        q->moves = 0;
    }
    for (u = 0; u < h->nu; u++)
        if (q->st.x[u] != x[u]) {
            ls_move(&q->st, u, x[u]);
            q->moves++;
        }
}

int
as_hls_improve(as_hls *q, int max_sweeps, int use_pairs)
{
    size_t m = ls_improve(&q->st, max_sweeps, use_pairs);
    q->moves += m;
    return m > 0;
}

int
as_hls_chain(as_hls *q, int max_rounds)
{
    size_t moves = 0, m;
    int r;

    for (r = 0; r < max_rounds; r++) {
        m = chain_moves(&q->st, &q->c);
        moves += m;
        if (m == 0)
            break;
        q->moves += m + ls_improve(&q->st, 20, 1);
    }
    return moves > 0;
}

int
as_hls_repair(as_hls *q, int max_steps)
{
    int ok;

    q->moves += ls_repair(&q->st, max_steps, &ok);
    return ok;
}

const size_t *
as_hls_x(const as_hls *q)
{
    return q->st.x;
}

/*
 * Block moves (a large neighbourhood): the units within a few links of a seed unit
 * (breadth first, up to AS_HEUR_BLOCK_UNITS) are re-solved together with every other
 * unit fixed, exactly on the breadth-first tree: each block unit's strategies cost its
 * vector minus the links of the tree (own cost plus the links to the fixed units, and
 * the block's links off the tree at the other end's current strategy, or in a second
 * try at their cheapest), and dynamic programming over the tree (children to parents,
 * then back down) gives the cheapest strategies of the whole block on these terms in
 * O(block x k^2).  The move is then made unit by unit, the block's units answer it with
 * their best strategies, its true change is summed from the vectors (the links off the
 * tree at their real strategies), and the tree is solved again from there; the cheapest
 * result is kept if the plan got cheaper and still fits.  This
 * switches a whole attention or MLP block (its weight, gradient, optimizer states and
 * the matmuls that read them) from sharded to replicated on one mesh axis together,
 * which no single, pair or chain move reaches: each unit alone, or a short chain of
 * best answers, pays resharding to the rest of the block.
 */
typedef struct blk {
    size_t bu, kmax;
    size_t *in, stamp;    /* nu: stamp of the block a unit is in */
    size_t *pos;          /* nu: its position in the block */
    size_t *list, n;      /* the block's units, breadth first */
    size_t *par;          /* bu: position of the unit's parent on the tree */
    double *sub;          /* bu x kmax: cheapest cost of the unit's subtree given s */
    size_t *arg;          /* bu x kmax: the unit's best strategy given its parent's */
    size_t *to, *old, *best; /* bu: the block's new, old and best strategies */
    double *tmp;          /* kmax */
    long *nb;             /* kmax: alias pairs broken per strategy of one unit */
    size_t *lk;           /* maxdeg: a unit's links to its parent on the tree */
} blk;

static void
blk_init(blk *b, const as_heur *h, size_t bu)
{
    size_t u, maxdeg = 1;

    memset(b, 0, sizeof *b);
    b->bu = bu;
    b->kmax = 1;
    for (u = 0; u < h->nu; u++) {
        b->kmax = h->k[u] > b->kmax ? h->k[u] : b->kmax;
        if (h->lstart[u + 1] - h->lstart[u] > maxdeg)
            maxdeg = h->lstart[u + 1] - h->lstart[u];
    }
    b->in = as_xcalloc(h->nu + 1, sizeof *b->in);
    b->pos = as_xcalloc(h->nu + 1, sizeof *b->pos);
    b->list = as_xcalloc(bu + 1, sizeof *b->list);
    b->par = as_xcalloc(bu + 1, sizeof *b->par);
    b->to = as_xcalloc(bu + 1, sizeof *b->to);
    b->old = as_xcalloc(bu + 1, sizeof *b->old);
    b->best = as_xcalloc(bu + 1, sizeof *b->best);
    b->sub = as_xcalloc(bu * b->kmax + 1, sizeof *b->sub);
    b->arg = as_xcalloc(bu * b->kmax + 1, sizeof *b->arg);
    b->tmp = as_xcalloc(b->kmax + 1, sizeof *b->tmp);
    b->nb = as_xcalloc(b->kmax + 1, sizeof *b->nb);
    b->lk = as_xcalloc(maxdeg + 1, sizeof *b->lk);
}

static void
blk_free(blk *b)
{
    free(b->in);
    free(b->pos);
    free(b->list);
    free(b->par);
    free(b->to);
    free(b->old);
    free(b->best);
    free(b->sub);
    free(b->arg);
    free(b->tmp);
    free(b->nb);
    free(b->lk);
}

/* The block around SEED, breadth first, with its tree (b->par). */
static void
blk_grow(const as_heur *h, blk *b, size_t seed)
{
    size_t head = 0, i;

    b->stamp++;
    b->n = 0;
    b->in[seed] = b->stamp;
    b->pos[seed] = 0;
    b->par[0] = 0;
    b->list[b->n++] = seed;
    while (head < b->n && b->n < b->bu) {
        size_t w = b->list[head++];
        for (i = h->lstart[w]; i < h->lstart[w + 1] && b->n < b->bu; i++) {
            size_t o = h->link[i].other;
            if (b->in[o] == b->stamp)
                continue;
            b->in[o] = b->stamp;
            b->pos[o] = b->n;
            b->par[b->n] = head - 1;
            b->list[b->n++] = o;
        }
    }
}

/* The block's cheapest strategies on the tree (b->to), the links off the tree at the
   current strategies. */
static void
blk_dp(ls *st, blk *b, int optimistic)
{
    const as_heur *h = st->h;
    size_t *x = st->x;
    size_t i, p, s, t, kmax = b->kmax;

#define ON_TREE(p, q) ((q) != (p) && (b->par[p] == (q) || b->par[q] == (p)))
    /* each unit's terms: its vector without the tree's links at the current strategies
       (link by link, each strategy's terms in link order) */
    for (p = 0; p < b->n; p++) {
        size_t v = b->list[p], kv = h->k[v];
        double *sub = b->sub + p * kmax;
        long *nb = b->nb;
        for (s = 0; s < kv; s++) {
            sub[s] = st->g[v][s];
            nb[s] = (long)st->nbad[v][s];
        }
        for (i = h->lstart[v]; i < h->lstart[v + 1]; i++) {
            const as_hlink *l = &h->link[i];
            size_t o = l->other;
            if (b->in[o] != b->stamp)
                continue;
            if (!ON_TREE(p, b->pos[o])) {
                if (!optimistic)
                    continue;
                /* off the tree, optimistic: a link at its cheapest (once), an alias
                   pair left to the check of the move */
                if (l->r != NULL) {
                    const double *rt = l->rt + x[o] * kv;
                    if (b->pos[o] < p)
                        for (s = 0; s < kv; s++)
                            sub[s] += l->minr[s] - rt[s];
                    else
                        for (s = 0; s < kv; s++)
                            sub[s] -= rt[s];
                } else {
                    for (s = 0; s < kv; s++)
                        nb[s] -= l->bad[l->own_is_u ? s * l->ko + x[o] : x[o] * kv + s];
                }
                continue;
            }
            if (l->r != NULL) {
                const double *rt = l->rt + x[o] * kv;
                for (s = 0; s < kv; s++)
                    sub[s] -= rt[s];
            } else {
                for (s = 0; s < kv; s++)
                    nb[s] -= l->bad[l->own_is_u ? s * l->ko + x[o] : x[o] * kv + s];
            }
        }
        for (s = 0; s < kv; s++)
            if (nb[s] > 0)
                sub[s] = INFINITY;
    }
    /* children to parents: the parent's cost given t gains the child's best answer */
    for (p = b->n; p-- > 1;) {
        size_t v = b->list[p], kv = h->k[v], q = b->par[p], w = b->list[q], kw = h->k[w];
        const double *sub = b->sub + p * kmax;
        double *psub = b->sub + q * kmax;
        size_t *arg = b->arg + p * kmax, nl = 0, j;
        for (i = h->lstart[v]; i < h->lstart[v + 1]; i++)
            if (h->link[i].other == w)
                b->lk[nl++] = i;
        for (t = 0; t < kw; t++) {
            double bc = INFINITY;
            size_t bs = x[v];
            if (!isfinite(psub[t]))
                continue;
            if (nl == 1 && h->link[b->lk[0]].r != NULL) {
                /* one edge to the parent (the common case): its row for t read in order */
                const double *rt = h->link[b->lk[0]].rt + t * kv;
                for (s = 0; s < kv; s++) {
                    double c = sub[s] + rt[s];
                    if (c < bc) {
                        bc = c;
                        bs = s;
                    }
                }
                b->tmp[t] = bc;
                arg[t] = bs;
                continue;
            }
            for (s = 0; s < kv; s++) {
                double c = sub[s];
                int bad = 0;
                if (!(c < bc))
                    continue;
                for (j = 0; j < nl && !bad; j++) {
                    const as_hlink *l = &h->link[b->lk[j]];
                    if (l->r != NULL)
                        c += l->ro[s * kw + t];
                    else
                        bad = l->bad[l->own_is_u ? s * kw + t : t * kv + s];
                }
                if (!bad && c < bc) {
                    bc = c;
                    bs = s;
                }
            }
            b->tmp[t] = bc;
            arg[t] = bs;
        }
        for (t = 0; t < kw; t++)
            if (isfinite(psub[t]))
                psub[t] += b->tmp[t];
    }
    /* the root's best, then down the tree */
    {
        const double *sub = b->sub;
        size_t v = b->list[0], bs = x[v];
        double bc = sub[x[v]];
        for (s = 0; s < h->k[v]; s++)
            if (sub[s] < bc) {
                bc = sub[s];
                bs = s;
            }
        b->to[0] = bs;
        if (!isfinite(bc)) { /* nothing fits on the tree: stay */
            for (p = 0; p < b->n; p++)
                b->to[p] = x[b->list[p]];
            return;
        }
    }
    for (p = 1; p < b->n; p++)
        b->to[p] = b->arg[p * kmax + b->to[b->par[p]]];
#undef ON_TREE
}

/* Re-solve the block around SEED; 1 if it moved (cheaper and within the budget), 0 if
   not, -1 if not tried (nothing in the block changed since a try last failed).  The
   tree's answer is made, and solved again with the links off the tree at the new
   strategies, BLOCK_ITER times; the cheapest of these that fits is kept. */
#define BLOCK_ITER 4

static int
blk_solve(ls *st, blk *b, size_t seed, int optimistic)
{
    const as_heur *h = st->h;
    size_t *x = st->x;
    size_t p, it, nm, bestit = 0;
    int r;
    double d = 0, bd = 0;
    long nbad = 0;

    blk_grow(h, b, seed);
    if (b->n < 3)
        return 0; /* single and pair moves cover it */
    if (!optimistic && st->btried[seed] > 0) {
        size_t last = 0;
        for (p = 0; p < b->n; p++)
            last = st->chg[b->list[p]] > last ? st->chg[b->list[p]] : last;
        if (last <= st->btried[seed])
            return -1; /* nothing in it changed since it last failed: it fails again */
    }
    for (p = 0; p < b->n; p++)
        b->old[p] = x[b->list[p]];
    st->logging = 1; /* a try undone leaves the clocks as they were */
    st->nulog = 0;
    for (it = 1; it <= BLOCK_ITER; it++) {
        blk_dp(st, b, optimistic && it == 1);
        nm = 0;
        for (p = 0; p < b->n; p++) {
            size_t v = b->list[p], a = b->to[p];
            if (a == x[v])
                continue;
            d += st->g[v][a] - st->g[v][x[v]];
            nbad += (long)st->nbad[v][a] - (long)st->nbad[v][x[v]];
            ls_move(st, v, a);
            nm++;
        }
        if (nm == 0)
            break;
        /* the block's units answer the move with their best strategies (what the tree
           got wrong off the tree) */
        for (r = 0; r < 2; r++)
            for (p = 0; p < b->n; p++) {
                size_t v = b->list[p], a = x[v], s;
                double bc = ls_cost(st, v, a);
                for (s = 0; s < h->k[v]; s++) {
                    double c = ls_cost(st, v, s);
                    if (c < bc - 1e-12 * fabs(bc)) {
                        bc = c;
                        a = s;
                    }
                }
                if (a == x[v])
                    continue;
                d += st->g[v][a] - st->g[v][x[v]];
                nbad += (long)st->nbad[v][a] - (long)st->nbad[v][x[v]];
                ls_move(st, v, a);
            }
        if (nbad <= 0 && d < bd && d < -1e-12 * fabs(h->share[seed] + 1e-300) &&
            (h->nbind == 0 || st->tot.mx[1] <= h->cap)) {
            bd = d;
            bestit = it;
            for (p = 0; p < b->n; p++)
                b->best[p] = x[b->list[p]];
        }
    }
    for (p = b->n; p-- > 0;)
        ls_move(st, b->list[p], b->old[p]);
    /* nothing kept: the clocks as they were, so that the units this try moved and moved
       back do not count as changed for the next seeds */
    ls_unlog(st, bestit == 0);
    if (bestit == 0)
        return 0;
    for (p = 0; p < b->n; p++)
        ls_move(st, b->list[p], b->best[p]);
    return 1;
}

static const double *share_key;

static int
share_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (share_key[x] != share_key[y])
        return share_key[x] > share_key[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Sort V (unit numbers) by decreasing SH, ties by unit number. */
static void
share_sort(size_t *v, size_t n, const double *sh)
{
    share_key = sh;
    qsort(v, n, sizeof *v, share_cmp);
}

/* Rounds of block moves, every unit a seed (largest share first), each kept move
   followed by single and pair moves; until a round keeps nothing, MAX_ROUNDS ran or
   DEADLINE (an as_now() time, 0 = none) passed.  The number of moves. */
static size_t
blk_moves(ls *st, size_t bu, int max_rounds, double deadline)
{
    const as_heur *h = st->h;
    blk b;
    size_t *order, u, moves = 0, m;
    int r;

    if (h->nu < 3 || bu < 3)
        return 0;
    blk_init(&b, h, bu);
    order = as_xcalloc(h->nu + 1, sizeof *order);
    for (u = 0; u < h->nu; u++)
        order[u] = u;
    share_sort(order, h->nu, h->share);
    for (r = 0; r < max_rounds; r++) {
        m = 0;
        for (u = 0; u < h->nu; u++) {
            if (deadline > 0 && (u & 15) == 0 && as_now() > deadline)
                break;
            size_t v = order[u];
            int got = blk_solve(st, &b, v, 0);
            if (got == 0)
                got = blk_solve(st, &b, v, 1);
            if (got == 0)
                st->btried[v] = st->clock;
            if (got == 1) {
                m++;
                ls_improve(st, 20, 1);
            }
        }
        moves += m;
        if (m == 0 || (deadline > 0 && as_now() > deadline))
            break;
    }
    free(order);
    blk_free(&b);
    return moves;
}

int
as_heur_block(const as_heur *h, size_t *x, size_t units, int max_rounds, double deadline)
{
    ls st;
    size_t moves;

    ls_init(&st, h, x);
    moves = blk_moves(&st, units, max_rounds, deadline);
    ls_free(&st);
    return moves > 0;
}

int
as_hls_block(as_hls *q, size_t units, int max_rounds, double deadline)
{
    size_t m = blk_moves(&q->st, units, max_rounds, deadline);
    q->moves += m * units;
    return m > 0;
}

int
as_heur_polish_blocks(const as_heur *h, size_t *x, double deadline, as_hls **q)
{
    as_hls *qb = as_hls_new(h, x);
    int moved = 0, again;

    if (as_hls_block(qb, AS_HEUR_BLOCK_UNITS, 3, deadline)) {
        memcpy(x, as_hls_x(qb), h->nu * sizeof *x);
        as_heur_chain(h, x, 3);
        moved = 1;
    }
    /* relabel moves: every unit at one strategy name to another at once; then axis-map
       moves: every unit's specs with the mesh axes permuted at once */
    for (again = 0; again < 2; again++) {
        if (!(again == 0 ? as_heur_relabel_in(h, x, deadline, q)
                         : as_heur_axismap_in(h, x, deadline, q)))
            continue;
        moved = 1;
        as_hls_set(qb, x);
        as_hls_block(qb, AS_HEUR_BLOCK_UNITS, 3, deadline);
        memcpy(x, as_hls_x(qb), h->nu * sizeof *x);
    }
    as_hls_free(qb);
    return moved;
}

/* ---- relabel moves ---- */

/*
 * Settle Y (a whole-plan move: relabel, axis map) by single, pair and chain moves in the
 * local search *Q (made at the first call, then moved to each Y): the moves after the
 * first only look again where Y and what came before differ (the units' dirty flags and
 * chain_settled), so trying a few such moves costs little more than one.
 */
static void
settle(const as_heur *h, as_hls **q, size_t *y)
{
    if (*q == NULL)
        *q = as_hls_new(h, y);
    else
        as_hls_set(*q, y);
    as_hls_improve(*q, 50, 1);
    as_hls_chain(*q, 5);
    memcpy(y, as_hls_x(*q), h->nu * sizeof *y);
}

#define RELABEL_MIN 4 /* units sharing a strategy name for a relabel move to be tried */
#define RELABEL_TRY 6 /* relabels polished, cheapest (before the polish) first */

static const char *
unit_sname(const as_heur *h, size_t u, size_t s)
{
    const as_pnode *nd = as_problem_node(h->p, h->mem[h->mstart[u]]);

    return nd->snames != NULL ? nd->snames[s] : NULL;
}

/* Y = X with every unit whose strategy is named A taking the one named B where it has it;
   the number of units moved. */
static size_t
relabel(const as_heur *h, const size_t *x, const char *a, const char *b, size_t *y)
{
    size_t u, s, n = 0;

    for (u = 0; u < h->nu; u++) {
        const char *cur = unit_sname(h, u, x[u]);
        y[u] = x[u];
        if (cur == NULL || strcmp(cur, a) != 0)
            continue;
        for (s = 0; s < h->k[u]; s++) {
            const char *nm = unit_sname(h, u, s);
            if (nm != NULL && strcmp(nm, b) == 0 && isfinite(h->cost[u][s])) {
                y[u] = s;
                n++;
                break;
            }
        }
    }
    return n;
}

int
as_heur_relabel(const as_heur *h, size_t *x, double deadline)
{
    as_hls *q = NULL;
    int moved = as_heur_relabel_in(h, x, deadline, &q);

    as_hls_free(q);
    return moved;
}

int
as_heur_relabel_in(const as_heur *h, size_t *x, double deadline, as_hls **qq)
{
    AS_VEC(const char *) names = {0};
    AS_VEC(size_t) count = {0};
    size_t u, s, i, j, t, *y = as_xcalloc(h->nu + 1, sizeof *y);
    const char *ta[RELABEL_TRY], *tb[RELABEL_TRY];
    double *tot = as_xcalloc(h->nbind + 2, sizeof *tot); /* as_heur_eval's scratch */
    double tv[RELABEL_TRY], best = as_heur_eval(h, x, tot);
    size_t nt = 0;
    int moved = 0;
    as_hls *q = *qq; /* settles the relabelled plans */

    if (!isfinite(best))
        goto out;
    /* the strategy names in use, with how many units use each */
    for (u = 0; u < h->nu; u++) {
        const char *cur = unit_sname(h, u, x[u]);
        if (cur == NULL)
            continue;
        for (i = 0; i < names.n && strcmp(names.v[i], cur) != 0; i++)
            ;
        if (i == names.n) {
            AS_VEC_PUSH(&names, cur);
            AS_VEC_PUSH(&count, 0);
        }
        count.v[i]++;
    }
    /* every relabel A -> B of a name A used often, evaluated as it is: the cheapest few */
    for (i = 0; i < names.n; i++) {
        AS_VEC(const char *) bs = {0};
        if (count.v[i] < RELABEL_MIN)
            continue;
        if (deadline > 0 && as_now() > deadline)
            break;
        for (u = 0; u < h->nu; u++) {
            const char *cur = unit_sname(h, u, x[u]);
            if (cur == NULL || strcmp(cur, names.v[i]) != 0)
                continue;
            for (s = 0; s < h->k[u]; s++) {
                const char *nm = unit_sname(h, u, s);
                if (nm == NULL || s == x[u])
                    continue;
                for (j = 0; j < bs.n && strcmp(bs.v[j], nm) != 0; j++)
                    ;
                if (j == bs.n)
                    AS_VEC_PUSH(&bs, nm);
            }
        }
        for (j = 0; j < bs.n; j++) {
            double v;
            if (relabel(h, x, names.v[i], bs.v[j], y) < RELABEL_MIN)
                continue;
            v = as_heur_eval(h, y, tot);
            if (!isfinite(v) || fabs(v - best) <= 1e-12 * fabs(best) ||
                (nt == RELABEL_TRY && v >= tv[nt - 1]))
                continue; /* over the budget, the same cost (an equivalent name), or dearer */
            t = nt < RELABEL_TRY ? nt++ : nt - 1;
            for (; t > 0 && tv[t - 1] > v; t--) {
                tv[t] = tv[t - 1];
                ta[t] = ta[t - 1];
                tb[t] = tb[t - 1];
            }
            tv[t] = v;
            ta[t] = names.v[i];
            tb[t] = bs.v[j];
        }
        AS_VEC_FREE(&bs);
    }
    /* the cheapest relabels, settled by single, pair and chain moves: the best if cheaper */
    {
        size_t *x0 = as_xcalloc(h->nu + 1, sizeof *x0);
        memcpy(x0, x, h->nu * sizeof *x0);
        for (t = 0; t < nt; t++) {
            double v;
            if (deadline > 0 && as_now() > deadline)
                break;
            size_t nm = relabel(h, x0, ta[t], tb[t], y);
            settle(h, &q, y);
            v = as_heur_eval(h, y, tot);
            as_debug("relabel %s -> %s: %zu units, %.9g as it is, %.9g settled (plan %.9g)",
                     ta[t], tb[t], nm, tv[t], v, best);
            if (isfinite(v) && v < best - 1e-12 * fabs(best)) {
                best = v;
                memcpy(x, y, h->nu * sizeof *x);
                moved = 1;
            }
        }
        free(x0);
    }
out:
    AS_VEC_FREE(&names);
    AS_VEC_FREE(&count);
    *qq = q;
    free(tot);
    free(y);
    return moved;
}

/* ---- axis-map moves ---- */

/* Strategy of unit U that S becomes under axis permutation J, or S (no image, or the image
   forbidden by an alias inside the unit). */
static size_t
unit_image(const as_heur *h, size_t u, size_t s, size_t j)
{
    const as_pnode *nd = as_problem_node(h->p, h->mem[h->mstart[u]]);
    size_t t;

    if (nd->img == NULL || nd->k != h->k[u])
        return s;
    t = nd->img[j * nd->k + s];
    return t != AS_NO_IMAGE && isfinite(h->cost[u][t]) ? t : s;
}

int
as_heur_axismap(const as_heur *h, size_t *x, double deadline)
{
    as_hls *q = NULL;
    int moved = as_heur_axismap_in(h, x, deadline, &q);

    as_hls_free(q);
    return moved;
}

int
as_heur_axismap_in(const as_heur *h, size_t *x, double deadline, as_hls **qq)
{
    size_t np = as_problem_axis_perms(h->p), j, u, moved_units;
    size_t *y, *z;
    double *tot, best, v, v0;
    int moved = 0, form;
    as_hls *q = *qq; /* settles the mapped plans */

    if (np == 0 || h->nu == 0)
        return 0;
    y = as_xcalloc(h->nu + 1, sizeof *y);
    z = as_xcalloc(h->nu + 1, sizeof *z);
    tot = as_xcalloc(h->nbind + 2, sizeof *tot);
    best = as_heur_eval(h, x, tot);
    if (!isfinite(best))
        goto out;
    memcpy(z, x, h->nu * sizeof *z); /* every permutation maps the plan as it came */
    for (j = 0; j < np; j++)
        for (form = 0; form < 2; form++) {
            if (deadline > 0 && as_now() > deadline)
                goto out;
            /* form 0: every unit mapped; form 1: only the units whose own cost (compute and
               communication, links aside: the neighbours move too) falls */
            moved_units = 0;
            for (u = 0; u < h->nu; u++) {
                size_t t = unit_image(h, u, z[u], j);
                y[u] = z[u];
                if (t == z[u])
                    continue;
                if (form == 1 && !(h->cost[u][t] < h->cost[u][z[u]]))
                    continue;
                y[u] = t;
                moved_units++;
            }
            if (moved_units == 0)
                continue;
            v0 = as_heur_eval(h, y, tot);
            settle(h, &q, y);
            v = as_heur_eval(h, y, tot);
            as_debug("axis map %zu%s: %zu units, %.9g as it is, %.9g settled (plan %.9g)", j,
                     form ? " (where cheaper)" : "", moved_units, v0, v, best);
            if (isfinite(v) && v < best - 1e-12 * fabs(best)) {
                best = v;
                memcpy(x, y, h->nu * sizeof *x);
                moved = 1;
            }
        }
out:
    *qq = q;
    free(tot);
    free(y);
    free(z);
    return moved;
}
