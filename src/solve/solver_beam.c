/* solver_beam.c -- beam search over the strategy choices (MetaDist, Alg. 2).
 *
 * Units (a node with the nodes that follow it, heur.h) are assigned in
 * topological order, and (beam/order=both, the default) in a second beam from
 * the graph's end; the cheaper plan wins.  A partial plan's cost is the compute and
 * communication of its units plus the resharding on every edge whose two
 * ends are assigned; the WIDTH cheapest partial plans are kept and each is
 * extended by every strategy of the next unit.  A partial plan whose memory
 * lower bound (resident bytes plus, at every liveness point that can bind,
 * the chosen bytes of assigned entries and the cheapest of the others)
 * exceeds the budget, or that breaks an alias pair, is dropped.
 *
 * A partial plan only needs what later steps read: the strategies of
 * assigned units with an edge to an unassigned one (the frontier) and the
 * bytes at liveness points that are partly assigned.  Both live in slots
 * allocated once for every partial plan, so a step costs O(WIDTH * k *
 * (links + points)) plus copying the slots of the survivors, and the whole
 * search is linear in the number of ops.  Two partial plans with the same
 * frontier and the same partial bytes have the same futures: only the
 * cheaper is kept (dynamic programming; with an unbounded width the search
 * is exact).  That merge is off when the problem carries no-good cuts (k-best),
 * whose test needs the whole plan.  At the time limit the remaining units
 * are added with a width of 1.  With the polish (the default), a width also
 * runs every power of ten below it, each under a budget once more without it
 * (plans repaired to fit): a width is never dearer than 1, 10, 100, ... at or
 * below it.  beam/seed=bound (the default) also offers the start plan the caller
 * gives, polished: the driver gives the bound pruning's plan, which it computes for
 * the lower bound anyway; the output says whose plan won (seed_start, beam_solve).
 * beam/seed=none: the beam's own plan alone.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solve/heur.h"
#include "solve/solver.h"

#define SOLVER_NAME "beam"
#define SOLVER_DESC "beam search, K cheapest partial plans in topological order (MetaDist)"
#define UNSET ((size_t)-1)
#define DEFAULT_WIDTH 32
#define MAX_WIDTH 100000000.0
#define BOTH_MAX_K 100 /* polish both directions' plans up to this many strategies a node */

enum { ORDER_FWD, ORDER_REV, ORDER_BOTH };

struct as_solver_data {
    size_t width; /**< "beam/width": partial plans kept, default 32 */
    int polish;   /**< "beam/polish" 0/1: improve each final plan by ICM, default 1 */
    int order;    /**< "beam/order" fwd, rev or both (default): the units in topological
                       order, from the graph's end, or one beam each way, the better plan */
    int seed;     /**< "beam/seed" bound (default) or none: also polish the start plan the
                       caller gives (the driver's: its bound pruning's plan, seed_start)
                       and return it when it beats the beam's own; say which won */
};

static AS_DECL_SOLVER_NEW(beam_new)
{
    *data = as_xcalloc(1, sizeof **data);
    (*data)->width = DEFAULT_WIDTH;
    (*data)->polish = 1;
    (*data)->order = ORDER_BOTH;
    (*data)->seed = 1;
    return AS_OK;
}

static AS_DECL_SOLVER_FREE(beam_free)
{
    free(data);
}

static AS_DECL_SOLVER_PARAM(beam_param)
{
    char *end;
    double x;

    if (strcmp(key, "polish") == 0) {
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
            return as_errf(err, AS_EUSAGE, "parameter 'beam/polish' must be 0 or 1");
        data->polish = value[0] == '1';
        return AS_OK;
    }
    if (strcmp(key, "seed") == 0) {
        if (strcmp(value, "none") != 0 && strcmp(value, "bound") != 0)
            return as_errf(err, AS_EUSAGE, "parameter 'beam/seed' must be none or bound");
        data->seed = value[0] == 'b';
        return AS_OK;
    }
    if (strcmp(key, "order") == 0) {
        if (strcmp(value, "fwd") == 0)
            data->order = ORDER_FWD;
        else if (strcmp(value, "rev") == 0)
            data->order = ORDER_REV;
        else if (strcmp(value, "both") == 0)
            data->order = ORDER_BOTH;
        else
            return as_errf(err, AS_EUSAGE, "parameter 'beam/order' must be fwd, rev or both");
        return AS_OK;
    }
    if (strcmp(key, "width") != 0)
        return as_errf(err, AS_EUSAGE, "unknown parameter '%s/%s'", SOLVER_NAME, key);
    x = strtod(value, &end);
    if (end == value || *end != '\0' || !(x >= 1 && x <= MAX_WIDTH) || x != floor(x))
        return as_errf(err, AS_EUSAGE, "beam width must be an integer in 1..%.0f, got '%s'",
                       MAX_WIDTH, value);
    data->width = (size_t)x;
    return AS_OK;
}

/* ---- slots: which unit strategies and point bytes a partial plan carries ---- */

typedef struct slots {
    size_t nf, np;          /**< slots per partial plan */
    size_t *fslot;          /**< unit -> frontier slot, UNSET if never read later */
    size_t *last;           /**< unit -> last unit that reads its strategy (<= u: none) */
    size_t *pslot;          /**< binding point -> slot */
    size_t *pfirst, *plast; /**< binding point -> first and last unit that touches it */
    size_t *newp_start, *newp;  /**< points whose first unit is u */
    size_t *endp_start, *endp;  /**< points whose last unit is u */
    size_t *endf_start, *endf;  /**< units whose strategy is last read at u */
} slots;

/* CSR of items ITEM[i] keyed by KEY[i] (n items, nu keys). */
static void
csr(size_t nu, size_t n, const size_t *key, const size_t *item, size_t **start, size_t **out)
{
    size_t i, u;

    *start = as_xcalloc(nu + 2, sizeof **start);
    *out = as_xcalloc(n + 1, sizeof **out);
    for (i = 0; i < n; i++)
        (*start)[key[i] + 2]++;
    for (u = 0; u < nu; u++)
        (*start)[u + 2] += (*start)[u + 1];
    for (i = 0; i < n; i++)
        (*out)[(*start)[key[i] + 1]++] = item[i];
}

static void
slots_init(slots *sl, const as_heur *h)
{
    size_t u, i, b, nu = h->nu, nb = h->nbind, *fkey, *fitem, nfe = 0, *idx;
    size_t *freef, nfreef = 0, *freep, nfreep = 0;

    memset(sl, 0, sizeof *sl);
    sl->fslot = as_xcalloc(nu + 1, sizeof *sl->fslot);
    sl->last = as_xcalloc(nu + 1, sizeof *sl->last);
    sl->pslot = as_xcalloc(nb + 1, sizeof *sl->pslot);
    sl->pfirst = as_xcalloc(nb + 1, sizeof *sl->pfirst);
    sl->plast = as_xcalloc(nb + 1, sizeof *sl->plast);
    for (b = 0; b < nb; b++)
        sl->pfirst[b] = UNSET;
    for (u = 0; u < nu; u++) {
        sl->last[u] = u;
        for (i = h->lstart[u]; i < h->lstart[u + 1]; i++)
            if (h->link[i].other > sl->last[u])
                sl->last[u] = h->link[i].other;
        for (i = h->hstart[u]; i < h->hstart[u + 1]; i++) {
            b = h->hm[i].point;
            if (sl->pfirst[b] == UNSET)
                sl->pfirst[b] = u;
            sl->plast[b] = u;
        }
    }
    fkey = as_xcalloc(nu + nb + 1, sizeof *fkey);
    fitem = as_xcalloc(nu + nb + 1, sizeof *fitem);
    idx = as_xcalloc(nu + nb + 1, sizeof *idx);
    for (u = 0; u < nu; u++)
        if (sl->last[u] > u) {
            fkey[nfe] = sl->last[u];
            fitem[nfe++] = u;
        }
    csr(nu, nfe, fkey, fitem, &sl->endf_start, &sl->endf);
    nfe = 0;
    for (b = 0; b < nb; b++)
        if (sl->pfirst[b] != UNSET) {
            fkey[nfe] = sl->pfirst[b];
            idx[nfe] = sl->plast[b];
            fitem[nfe++] = b;
        }
    csr(nu, nfe, fkey, fitem, &sl->newp_start, &sl->newp);
    csr(nu, nfe, idx, fitem, &sl->endp_start, &sl->endp);
    free(fkey);
    free(fitem);
    free(idx);
    /* allocate slots in step order, reusing what earlier steps released */
    freef = as_xcalloc(nu + 1, sizeof *freef);
    freep = as_xcalloc(nb + 1, sizeof *freep);
    for (u = 0; u < nu; u++) {
        for (i = sl->newp_start[u]; i < sl->newp_start[u + 1]; i++) {
            b = sl->newp[i];
            sl->pslot[b] = nfreep > 0 ? freep[--nfreep] : sl->np++;
        }
        sl->fslot[u] = UNSET;
        if (sl->last[u] > u) {
            sl->fslot[u] = nfreef > 0 ? freef[--nfreef] : sl->nf++;
        }
        for (i = sl->endp_start[u]; i < sl->endp_start[u + 1]; i++)
            freep[nfreep++] = sl->pslot[sl->endp[i]];
        for (i = sl->endf_start[u]; i < sl->endf_start[u + 1]; i++)
            freef[nfreef++] = sl->fslot[sl->endf[i]];
    }
    free(freef);
    free(freep);
}

static void
slots_free(slots *sl)
{
    free(sl->fslot);
    free(sl->last);
    free(sl->pslot);
    free(sl->pfirst);
    free(sl->plast);
    free(sl->newp_start);
    free(sl->newp);
    free(sl->endp_start);
    free(sl->endp);
    free(sl->endf_start);
    free(sl->endf);
}

/* ---- the beam ---- */

typedef struct cand {
    double score;  /**< c plus the cheapest resharding to the open units */
    double c;      /**< cost of the partial plan */
    uint32_t j, s; /**< parent partial plan, strategy */
} cand;

static int
cand_less(const cand *a, const cand *b)
{
    if (a->score != b->score)
        return a->score < b->score;
    if (a->j != b->j)
        return a->j < b->j;
    return a->s < b->s;
}

static int
cand_cmp(const void *a, const void *b)
{
    return cand_less(a, b) ? -1 : cand_less(b, a) ? 1 : 0;
}

/* Move the M smallest of X[0..n) to the front (Hoare's selection). */
static void
cand_select(cand *x, size_t n, size_t m)
{
    size_t lo = 0, hi = n; /* the answer lies in [lo, hi) */

    while (hi - lo > 1) {
        cand piv = x[lo + (hi - lo) / 2], t;
        size_t i, lt = lo, k;
        /* three-way partition: < piv, == piv, > piv */
        for (k = lo; k < hi; k++)
            if (cand_less(&x[k], &piv)) {
                t = x[k];
                x[k] = x[lt];
                x[lt++] = t;
            }
        i = lt;
        for (k = lt; k < hi; k++)
            if (!cand_less(&piv, &x[k])) {
                t = x[k];
                x[k] = x[i];
                x[i++] = t;
            }
        if (m <= lt)
            hi = lt;
        else if (m <= i)
            return;
        else
            lo = i;
    }
}

/* The partial plans of one step. */
typedef struct beam {
    size_t n, cap;
    double *cost;
    double *score; /**< cost plus the open edges' cheapest resharding */
    uint64_t *key; /**< hash of the live frontier strategies and point bytes (key_f, key_p) */
    uint32_t *fr; /**< n x nf strategies */
    double *mp;   /**< n x np bytes */
    uint32_t *id; /**< n: index of this partial plan in the trace of its step */
} beam;

static void
beam_reserve(beam *b, size_t cap, const slots *sl)
{
    if (cap <= b->cap)
        return;
    b->cap = cap;
    b->cost = as_xreallocarray(b->cost, cap, sizeof *b->cost);
    b->score = as_xreallocarray(b->score, cap, sizeof *b->score);
    b->key = as_xreallocarray(b->key, cap, sizeof *b->key);
    b->fr = as_xreallocarray(b->fr, cap * (sl->nf ? sl->nf : 1), sizeof *b->fr);
    b->mp = as_xreallocarray(b->mp, cap * (sl->np ? sl->np : 1), sizeof *b->mp);
    b->id = as_xreallocarray(b->id, cap, sizeof *b->id);
}

static void
beam_free_(beam *b)
{
    free(b->cost);
    free(b->score);
    free(b->key);
    free(b->fr);
    free(b->mp);
    free(b->id);
}

/* Trace: for every step, the parent and strategy of each kept partial plan. */
typedef struct trace {
    size_t n, cap;
    uint32_t *parent, *s;
    size_t *start; /**< nu + 1: where each step's entries begin */
} trace;

static void
trace_push(trace *t, uint32_t parent, uint32_t s)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 1024;
        t->parent = as_xreallocarray(t->parent, t->cap, sizeof *t->parent);
        t->s = as_xreallocarray(t->s, t->cap, sizeof *t->s);
    }
    t->parent[t->n] = parent;
    t->s[t->n++] = s;
}

/* Hash set of partial plans (by frontier and point bytes) of the step being built. */
typedef struct dedup {
    size_t mask;
    size_t *tab; /**< index into the next beam + 1, 0 = empty */
} dedup;

/* A partial plan's key (its live frontier strategies and point bytes) is hashed as the
   exclusive or of one term per live slot, so that a step updates it with the slots it
   changes, not all live ones (the frontier of a 60-layer model holds thousands). */
static uint64_t
mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The term of frontier slot Q holding strategy S. */
static uint64_t
key_f(size_t q, uint32_t s)
{
    return mix64(((uint64_t)q << 32) ^ s);
}

/* The term of point slot Q holding V bytes. */
static uint64_t
key_p(size_t q, double v)
{
    uint64_t bits;
    v += 0.0; /* -0.0 == 0.0 */
    memcpy(&bits, &v, sizeof bits);
    return mix64(bits ^ mix64(~(uint64_t)q));
}

static int
key_equal(const beam *b, size_t i1, size_t i2, const slots *sl, const size_t *lf, size_t nlf,
          const size_t *lp, size_t nlp)
{
    size_t i;

    for (i = 0; i < nlf; i++)
        if (b->fr[i1 * sl->nf + lf[i]] != b->fr[i2 * sl->nf + lf[i]])
            return 0;
    for (i = 0; i < nlp; i++)
        if (b->mp[i1 * sl->np + lp[i]] != b->mp[i2 * sl->np + lp[i]])
            return 0;
    return 1;
}

static const double *qsort_cost;

static int
order_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (qsort_cost[x] != qsort_cost[y])
        return qsort_cost[x] < qsort_cost[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Final plans that fail the caller's fits check (as_limits) before a pass stops looking:
   the check simulates the plan */
#define BEAM_FIT_FAILS 16

/*
 * One beam over the units of P numbered forward (REVERSE = 0) or from the graph's end;
 * the final plans are offered to KP, cheapest first.  T0: start of the solve.
 */
static void
beam_pass(as_solver_data *data, const as_problem *p, const as_limits *lim, int reverse,
          size_t width, int relax, double t0, as_keeper *kp,
          as_outcome *outcome, long *nodes)
{
    as_heur h;
    slots sl;
    beam cur = {0}, nxt = {0}, tmpb;
    trace tr = {0};
    cand *cands = NULL;
    size_t ncap = 0, u, i, j, *lf, *lp, nlf = 0, nlp = 0, *posf, *posp;
    size_t *x = NULL, best, *order = NULL, *choice = NULL, *xp = NULL;
    as_hls *ls = NULL; /* the final plans' polish */
    int pass, nfail = 0;
    double obj, cap;
    dedup dd = {0};
    int merge = as_problem_nnogoods(p) == 0, limited = 0;

    as_heur_init_ex(&h, p, reverse);
    h.deadline = lim->time_limit_s > 0 ? t0 + lim->time_limit_s : 0;
    cap = h.cap;
    if (relax)
        h.cap = INFINITY; /* the beam without the budget; its plans repaired to fit */
    slots_init(&sl, &h);
    tr.start = as_xcalloc(h.nu + 2, sizeof *tr.start);
    lf = as_xcalloc(sl.nf + 1, sizeof *lf);
    lp = as_xcalloc(sl.np + 1, sizeof *lp);
    posf = as_xcalloc(sl.nf + 1, sizeof *posf);
    posp = as_xcalloc(sl.np + 1, sizeof *posp);
    beam_reserve(&cur, 1, &sl);
    cur.n = 1;
    cur.cost[0] = cur.score[0] = as_problem_offset(p);
    cur.key[0] = 0; /* nothing live */
    cur.id[0] = 0;
    for (u = 0; u < h.nu && cur.n > 0; u++) {
        size_t k = h.k[u], nc = 0, take, lb = h.lstart[u], le = h.lstart[u + 1];
        size_t hb = h.hstart[u], he = h.hstart[u + 1];
        if (!limited && lim->time_limit_s > 0 && as_now() - t0 > lim->time_limit_s) {
            limited = 1; /* finish greedily */
            width = 1;
        }
        /* points that start here hold nothing yet */
        for (i = sl.newp_start[u]; i < sl.newp_start[u + 1]; i++)
            for (j = 0; j < cur.n; j++)
                cur.mp[j * sl.np + sl.pslot[sl.newp[i]]] = 0;
        if (cur.n * k > ncap) {
            ncap = cur.n * k;
            cands = as_xreallocarray(cands, ncap, sizeof *cands);
        }
        for (j = 0; j < cur.n; j++) {
            const uint32_t *fr = cur.fr + j * sl.nf;
            const double *mp = cur.mp + j * sl.np;
            size_t s;
            for (s = 0; s < k; s++) {
                double c = cur.cost[j] + h.cost[u][s], f = cur.score[j] - cur.cost[j];
                for (i = lb; i < le && isfinite(c); i++) {
                    const as_hlink *l = &h.link[i];
                    size_t o, at;
                    if (l->other > u) {
                        if (l->minr != NULL)
                            f += l->minr[s]; /* opened: its cheapest case until closed */
                        continue;
                    }
                    o = fr[sl.fslot[l->other]];
                    at = l->own_is_u ? s * l->ko + o : o * k + s;
                    if (l->r != NULL) {
                        c += l->r[at];
                        f -= l->minro[o]; /* closed: the estimate gives way to the cost */
                    } else if (l->bad[at]) {
                        c = INFINITY;
                    }
                }
                for (i = hb; i < he && isfinite(c); i++) {
                    const as_hmem *m = &h.hm[i];
                    if (h.base[m->point] + mp[sl.pslot[m->point]] + m->dm[s] > h.cap)
                        c = INFINITY;
                }
                if (!isfinite(c))
                    continue;
                cands[nc].c = c;
                cands[nc].score = c + fmax(f, 0);
                cands[nc].j = (uint32_t)j;
                cands[nc++].s = (uint32_t)s;
            }
        }
        /* the slots live after this step, for the merge */
        for (i = sl.newp_start[u]; i < sl.newp_start[u + 1]; i++) {
            posp[sl.pslot[sl.newp[i]]] = nlp;
            lp[nlp++] = sl.pslot[sl.newp[i]];
        }
        if (sl.fslot[u] != UNSET) {
            posf[sl.fslot[u]] = nlf;
            lf[nlf++] = sl.fslot[u];
        }
        for (i = sl.endp_start[u]; i < sl.endp_start[u + 1]; i++) {
            size_t q = sl.pslot[sl.endp[i]], at = posp[q];
            lp[at] = lp[--nlp];
            posp[lp[at]] = at;
        }
        for (i = sl.endf_start[u]; i < sl.endf_start[u + 1]; i++) {
            size_t q = sl.fslot[sl.endf[i]], at = posf[q];
            lf[at] = lf[--nlf];
            posf[lf[at]] = at;
        }
        /* the cheapest candidates first */
        take = nc;
        if (nc > 2 * width) {
            take = 2 * width;
            cand_select(cands, nc, take);
        }
        qsort(cands, take, sizeof *cands, cand_cmp);
        beam_reserve(&nxt, take < width ? take : width, &sl);
        if (merge) {
            size_t want = 16;
            while (want < 2 * (take < width ? take : width))
                want *= 2;
            if (want - 1 != dd.mask) {
                free(dd.tab);
                dd.mask = want - 1;
                dd.tab = as_xcalloc(want, sizeof *dd.tab);
            } else {
                memset(dd.tab, 0, want * sizeof *dd.tab);
            }
        }
        tr.start[u] = tr.n;
        nxt.n = 0;
        for (i = 0; i < take && nxt.n < width; i++) {
            const cand *cd = &cands[i];
            size_t w = nxt.n, q;
            uint64_t key = cur.key[cd->j];
            uint32_t *nfr = nxt.fr + w * sl.nf;
            double *nmp = nxt.mp + w * sl.np;
            memcpy(nfr, cur.fr + cd->j * sl.nf, sl.nf * sizeof *nxt.fr);
            memcpy(nmp, cur.mp + cd->j * sl.np, sl.np * sizeof *nxt.mp);
            /* the key: points that start here enter at 0 bytes, the touched ones change,
               those that end here and the strategies read last here leave, U's enters */
            for (q = sl.newp_start[u]; q < sl.newp_start[u + 1]; q++)
                key ^= key_p(sl.pslot[sl.newp[q]], 0);
            for (q = hb; q < he; q++) {
                size_t ps = sl.pslot[h.hm[q].point];
                key ^= key_p(ps, nmp[ps]);
                nmp[ps] += h.hm[q].dm[cd->s];
                key ^= key_p(ps, nmp[ps]);
            }
            for (q = sl.endp_start[u]; q < sl.endp_start[u + 1]; q++) {
                size_t ps = sl.pslot[sl.endp[q]];
                key ^= key_p(ps, nmp[ps]);
            }
            for (q = sl.endf_start[u]; q < sl.endf_start[u + 1]; q++) {
                size_t fs = sl.fslot[sl.endf[q]];
                key ^= key_f(fs, nfr[fs]);
            }
            if (sl.fslot[u] != UNSET) {
                nfr[sl.fslot[u]] = cd->s;
                key ^= key_f(sl.fslot[u], cd->s);
            }
            nxt.key[w] = key;
            nxt.cost[w] = cd->c;
            nxt.score[w] = cd->score;
            if (merge) {
                size_t at = key & dd.mask, dup = 0;
                for (; dd.tab[at] != 0; at = (at + 1) & dd.mask)
                    if (nxt.key[dd.tab[at] - 1] == key &&
                        key_equal(&nxt, dd.tab[at] - 1, w, &sl, lf, nlf, lp, nlp)) {
                        dup = 1; /* a cheaper one (candidates come cheapest first) is kept */
                        break;
                    }
                if (dup)
                    continue;
                dd.tab[at] = w + 1;
            }
            nxt.id[w] = (uint32_t)(tr.n - tr.start[u]);
            trace_push(&tr, cur.id[cd->j], cd->s);
            nxt.n++;
        }
        /* parents are indices into the previous step's trace entries */
        tmpb = cur;
        cur = nxt;
        nxt = tmpb;
    }
    tr.start[h.nu] = tr.n;
    h.cap = cap;
    if (u == h.nu && cur.n > 0) {
        choice = as_xcalloc(h.n + 1, sizeof *choice);
        xp = as_xcalloc(h.nu + 1, sizeof *xp);
        /* the final partial plans are complete: cheapest that passes every row */
        x = as_xcalloc(h.nu + 1, sizeof *x);
        order = as_xcalloc(cur.n, sizeof *order);
        for (j = 0; j < cur.n; j++)
            order[j] = j;
        qsort_cost = cur.cost;
        qsort(order, cur.n, sizeof *order, order_cmp); /* complete: cheapest first */
        for (best = 0; best < cur.n; best++) {
            size_t e = tr.start[h.nu - 1] + cur.id[order[best]], uu;
            int passed = 0;
            if (isfinite(kp->obj) && lim->time_limit_s > 0 && as_now() - t0 > lim->time_limit_s)
                break; /* out of time: the plans checked so far */
            if (nfail >= BEAM_FIT_FAILS)
                break; /* the cheapest fail the caller's check: enough simulations */
            for (uu = h.nu; uu-- > 0;) {
                x[uu] = tr.s[e];
                if (uu > 0)
                    e = tr.start[uu - 1] + tr.parent[e];
            }
            if (relax && !as_heur_repair(&h, x, 4 * (int)h.nu + 16))
                continue; /* no repair fits */
            for (pass = 0; pass < 2; pass++) {
                /* polished first; the plan as found if the polished one is excluded (k-best) */
                if (pass == 0 && data->polish) {
                    /* one local search for all the final plans: they share most units, and
                       a plan moves it only where it differs from the one before */
                    if (ls == NULL)
                        ls = as_hls_new(&h, x);
                    else
                        as_hls_set(ls, x);
                    as_hls_improve(ls, 100, 1);
                    as_hls_chain(ls, 5);
                    memcpy(xp, as_hls_x(ls), h.nu * sizeof *xp);
                    as_heur_expand(&h, xp, choice);
                } else {
                    as_heur_expand(&h, x, choice);
                }
                if (as_problem_check(p, choice, &obj, NULL, NULL) == AS_OK) {
                    int got = as_keeper_offer(kp, lim, choice, obj);
                    passed = got >= 0;
                    nfail += got < 0;
                    if (got != 0)
                        *outcome = AS_OUTCOME_FEASIBLE;
                    if (got >= 0 || !data->polish)
                        break;
                    continue; /* fails the caller's check: the plan as found may pass */
                }
                if (!data->polish)
                    break;
            }
            if (!data->polish && passed)
                break; /* cheapest first: the first that passes */
        }
    } else if (h.nu == 0) {
        size_t *none = as_xcalloc(h.n + 1, sizeof *none);
        if (as_problem_check(p, none, &obj, NULL, NULL) == AS_OK &&
            as_keeper_offer(kp, lim, none, obj) != 0)
            *outcome = AS_OUTCOME_FEASIBLE;
        free(none);
    }
    as_hls_free(ls);
    *nodes += (long)tr.n;
    free(choice);
    free(xp);
    free(x);
    free(order);
    free(cands);
    free(dd.tab);
    free(lf);
    free(lp);
    free(posf);
    free(posp);
    free(tr.parent);
    free(tr.s);
    free(tr.start);
    beam_free_(&cur);
    beam_free_(&nxt);
    slots_free(&sl);
    as_heur_free(&h);
}

/* The best plan, polished by block moves (a whole attention or MLP block re-solved with
   the rest fixed: what the beam's per-unit choices and the single, pair and chain moves
   miss); offered to KP if it passes the problem's check. */
static void
block_polish(const as_problem *p, const as_limits *lim, double t0, as_keeper *kp)
{
    as_heur h;
    size_t u, *x, *choice;
    double obj;
    int moved;
    as_hls *q = NULL; /* settles the relabels and axis maps: one search for both */

    as_heur_init(&h, p);
    h.deadline = lim->time_limit_s > 0 ? t0 + lim->time_limit_s : 0;
    x = as_xcalloc(h.nu + 1, sizeof *x);
    choice = as_xcalloc(h.n + 1, sizeof *choice);
    for (u = 0; u < h.n; u++)
        x[h.unit[u]] = kp->best[u];
    moved = as_heur_polish_blocks(&h, x, lim->time_limit_s > 0 ? t0 + lim->time_limit_s : 0, &q);
    if (moved) {
        as_heur_expand(&h, x, choice);
        if (as_problem_check(p, choice, &obj, NULL, NULL) == AS_OK)
            as_keeper_offer(kp, lim, choice, obj);
    }
    as_hls_free(q);
    free(x);
    free(choice);
    as_heur_free(&h);
}

/* Strategies per node of P, on average. */
static double
mean_k(const as_problem *p)
{
    size_t i, n = as_problem_nnodes(p);
    double sum = 0;

    for (i = 0; i < n; i++)
        sum += (double)as_problem_node(p, i)->k;
    return n > 0 ? sum / (double)n : 0;
}

/* The cheaper plans of FROM into TO (both already checked). */
static void
keeper_take(as_keeper *to, const as_keeper *from)
{
    if (from->obj < to->obj) {
        to->obj = from->obj;
        memcpy(to->best, from->best, to->n * sizeof *to->best);
    }
    if (from->over_obj < to->over_obj) {
        to->over_obj = from->over_obj;
        memcpy(to->over, from->over, to->n * sizeof *to->over);
    }
    to->checks += from->checks;
}

/* A relaxed run's plan is block-polished only within this factor of the best plan so far
   (bert-large 2x8 under a budget, K=1: 23 % above, and its polish doubled beam's time; the
   one it is for, gpt2-small 2x4, 3 % above) */
#define RELAX_NEAR 1.10

/* The plans block_polish has started from: polishing one again gives the same plan (its
   moves depend on the plan alone), which is already among the results. */
typedef struct polished {
    size_t n, cnt, cap;
    size_t *x; /**< cnt plans of n nodes */
} polished;

/* 1 if X was polished before; else records it and returns 0. */
static int
polished_seen(polished *ps, const size_t *x)
{
    size_t i;

    for (i = 0; i < ps->cnt; i++)
        if (memcmp(ps->x + i * ps->n, x, ps->n * sizeof *x) == 0)
            return 1;
    if (ps->cnt == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 8;
        ps->x = as_xreallocarray(ps->x, ps->cap * (ps->n ? ps->n : 1), sizeof *ps->x);
    }
    memcpy(ps->x + ps->cnt++ * ps->n, x, ps->n * sizeof *x);
    return 0;
}

/* One beam of WIDTH each way (RELAX: without the budget, its plans repaired to fit), each
   direction's best plan polished unless PS says it was before; the best into KP.  PRE[2]:
   each direction's plan before the block polish goes out there; with RELAX, a direction
   whose plan costs what came in (the same plan as the beam with the budget found, already
   polished) or more than RELAX_NEAR times KP's best is not polished again. */
static void
beam_run(as_solver_data *data, const as_problem *p, const as_limits *lim, size_t width,
         int relax, double t0, as_keeper *kp, as_outcome *outcome, long *nodes, double *pre,
         polished *ps)
{
    int dir;
    as_keeper kd[2]; /* the best plan of each direction; under the caller's fits check,
                        the best that passes */

    as_keeper_init(&kd[0], as_problem_nnodes(p));
    as_keeper_init(&kd[1], as_problem_nnodes(p));
    for (dir = 0; dir < 2; dir++) {
        int reverse = data->order == ORDER_BOTH ? dir : data->order == ORDER_REV;
        if (dir == 1 && (data->order != ORDER_BOTH || as_problem_nnodes(p) == 0))
            break;
        if (dir == 1 && lim->time_limit_s > 0 && as_now() - t0 > lim->time_limit_s)
            break;
        beam_pass(data, p, lim, reverse, width, relax, t0, &kd[dir], outcome, nodes);
    }
    /* each direction's best plan polished by block, relabel and axis-map moves: the
       cheaper plan before them is not always the cheaper after (gpt2-small 2x4 under a
       budget: +4.98 % of the ILP from the cheaper, +4.37 % from the other; gpt3-13b 2x4:
       +1.84 %, 0.00 %; only within 5 % of the cheaper, the latter stayed +1.84 %).  The
       block moves cost O(k^2) a link: the other direction only up to BOTH_MAX_K strategies
       a node on average (1-D and 2-D meshes: up to about 60; gpt2-small on 2x2x2 has 250,
       and its beam K=1 took 65 s CPU with both polished against 37 s) */
    for (dir = 0; dir < 2; dir++) {
        int cheaper = !(kd[!dir].obj < kd[dir].obj);
        int again = !relax || (kd[dir].obj != pre[dir] && kd[dir].obj <= RELAX_NEAR * kp->obj);
        pre[dir] = kd[dir].obj;
        if (data->polish && isfinite(kd[dir].obj) && as_problem_nnodes(p) > 0 &&
            (cheaper || mean_k(p) <= BOTH_MAX_K) && again && !polished_seen(ps, kd[dir].best))
            block_polish(p, lim, t0, &kd[dir]);
    }
    keeper_take(kp, &kd[0]);
    keeper_take(kp, &kd[1]);
    as_keeper_free(&kd[0]);
    as_keeper_free(&kd[1]);
}

/*
 * beam/seed=bound (the default): the start plan the caller gives (as_limits.start; the
 * driver, as_solve_problem, gives the plan of the bound pruning it runs for a heuristic's
 * lower bound: TRW-S with Lagrangian memory multipliers), block-polished (with POLISH,
 * beam/polish), into KS; the
 * beam's own plans go elsewhere and the better is the answer (beam_solve says which).
 * Nothing is recomputed: without a start there is no seed.  t5-base 2x8 under its
 * budget: every width and MCTS returned 0.0389387 on their own, the bound pruning's plan
 * is 0.0384495 (1.27 % cheaper: weights sharded along y or replicated, not along x, a
 * plan 240 units away that no move of the polish reaches), polished 0.0384453.  Returns
 * the start's objective, INFINITY without one that fits the rows.
 */
static double
seed_start(const as_problem *p, const as_limits *lim, double t0, int polish, as_keeper *ks,
           as_outcome *outcome, double *secs)
{
    double obj, ts = as_now();
    int got;

    if (lim->start == NULL || as_problem_check(p, lim->start, &obj, NULL, NULL) != AS_OK)
        return INFINITY;
    got = as_keeper_offer(ks, lim, lim->start, obj);
    if (got > 0)
        *outcome = AS_OUTCOME_FEASIBLE;
    /* polished also when it fails the caller's check: the polish may move it to a plan
       that passes (block_polish offers only what passes the rows; the keeper checks) */
    if (polish && got != 0) {
        as_keeper tmp;
        size_t n = as_problem_nnodes(p);
        as_keeper_init(&tmp, n);
        memcpy(tmp.best, lim->start, n * sizeof *tmp.best);
        tmp.obj = obj;
        block_polish(p, lim, t0, &tmp);
        if (tmp.obj < obj) { /* passed the check in block_polish */
            keeper_take(ks, &tmp);
            *outcome = AS_OUTCOME_FEASIBLE;
        }
        as_keeper_free(&tmp);
    }
    *secs = as_now() - ts;
    return obj;
}

/* Widths at most this many powers of ten below the width asked for are run too */
#define LADDER_MAX 12

static AS_DECL_SOLVER_SOLVE(beam_solve)
{
    double t0 = as_now();
    long nodes = 0;
    size_t ladder[LADDER_MAX + 1], nl = 0, w, l;
    as_keeper kp; /* the best plan; under the caller's fits check, the best that passes */
    as_keeper kw; /* the best plan of one width */
    as_keeper ks; /* the start plan (beam/seed=bound), polished */
    polished ps = {as_problem_nnodes(p), 0, 0, NULL};
    int budget = isfinite(as_problem_memory_cap(p));
    double sobj = INFINITY, ssec = 0; /* the start plan's objective, unpolished; the
                                           seconds its polish took */

    (void)err;
    *outcome = AS_OUTCOME_LIMIT;
    as_keeper_init(&kp, as_problem_nnodes(p));
    /* The width asked for, then (polished) every power of ten below it, K=1 first: a wider
       beam keeps other partial plans than a narrower one, and the polish, not the beam,
       finds most of the cost (gpt3-1.3b 2x8: K=1 at the ILP's plan, K=10 +1.13 %;
       gpt2-small 2x4 under its budget: K=10 at the best known plan, K=100 +2.31 %).  So a
       width is never dearer than any power of ten at or below it (1, 10, 100, ...): of
       the widths 1, 10, 100 a wider one never returns a dearer plan.  Each width runs
       once with the budget and once without it, its plans repaired to fit
       (as_heur_repair) before the polish: the budget's beam spends memory early and the
       polish, which keeps every plan within the budget, cannot trade it back (gpt2-small
       2x4, K=1: +4.37 % of the ILP's plan, with this -1.17 %). */
    as_keeper_init(&ks, as_problem_nnodes(p));
    if (data->seed)
        sobj = seed_start(p, lim, t0, data->polish, &ks, outcome, &ssec);
    ladder[nl++] = data->width;
    if (data->polish)
        for (w = 1; w < data->width && nl < LADDER_MAX; w *= 10)
            ladder[nl++] = w;
    for (l = 0; l < nl; l++) {
        double pre[2] = {INFINITY, INFINITY}; /* this width's unpolished plans */
        if (l > 0 && lim->time_limit_s > 0 && as_now() - t0 > lim->time_limit_s)
            break;
        /* a width's runs see only its own plans (the relaxed run's polish is gated on
           the width's best): what a width returns does not depend on the others */
        as_keeper_init(&kw, as_problem_nnodes(p));
        beam_run(data, p, lim, ladder[l], 0, t0, &kw, outcome, &nodes, pre, &ps);
        if (budget && data->polish &&
            !(lim->time_limit_s > 0 && as_now() - t0 > lim->time_limit_s))
            beam_run(data, p, lim, ladder[l], 1, t0, &kw, outcome, &nodes, pre, &ps);
        keeper_take(&kp, &kw);
        as_keeper_free(&kw);
    }
    free(ps.x);
    /* which plan won, said (unless -q; not when beam runs as the ILP's start, verbosity 0;
       inside mcts too, for mcts's start, which mcts's own line refers to): the beam's own,
       or the start's polished (a tie is the beam's) */
    if (isfinite(sobj)) {
        double own = isfinite(kp.obj) ? kp.obj : kp.over_obj;
        double st = isfinite(ks.obj) ? ks.obj : ks.over_obj;
        out->from_start = isfinite(ks.obj) ? ks.obj < kp.obj : !isfinite(kp.obj) && st < own;
        if (lim->verbosity > 0 && out->from_start)
            as_info("beam: the plan is the start's (the bound pruning's plan, %.9g s), "
                    "polished: %.9g s (%.2f s); the beam's own: %.9g s (before tied layers "
                    "are settled)", sobj, st, ssec, own);
        else if (lim->verbosity > 0)
            as_info("beam: the plan is the beam's own, %.9g s; the start's (the bound "
                    "pruning's plan, %.9g s), polished: %.9g s (%.2f s%s; before tied layers "
                    "are settled)", own, sobj, st, ssec,
                    !isfinite(ks.obj) && st < own ? "; the caller's memory check put it over "
                                                    "the budget" : "");
    }
    keeper_take(&kp, &ks);
    as_keeper_free(&ks);
    /* the best plan; when none passes the caller's check, the cheapest the rows let through
       (the caller sees why it does not fit) */
    out->objective = as_keeper_answer(&kp, out->choice);
    as_keeper_free(&kp);
    out->nodes = nodes;
    /* the work is counted (widths, passes, rounds); every stop the clock makes (a pass
       finished greedily, a width, direction or relaxed run skipped, a polish's deadline) is
       checked against t0 + the limit: past it now, one of them may have cut the search */
    out->timed = lim->time_limit_s > 0 && as_now() - t0 > lim->time_limit_s;
    return AS_OK;
}

const as_solver_ops as_solver_beam = {
    .name = SOLVER_NAME,
    .desc = SOLVER_DESC,
    .flags = 0,
    .new_data = beam_new,
    .free_data = beam_free,
    .set_param = beam_param,
    .solve = beam_solve,
};
