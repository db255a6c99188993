/* fit.c -- solving under a budget until the plan fits by the memory model (fit.h). */
#include "solve/fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formulate/ilp.h"

/* ---- greedy repair ---- */

/* Index of P for the repair: nodes' follow groups, rows per node, edges and aliases per node. */
typedef struct rep_index {
    size_t n, nl;
    size_t *root;                /* follow root of every node */
    size_t *gstart, *gmem;       /* members of the group of root r: gmem[gstart[r]..gstart[r+1]) */
    size_t ns;                   /* liveness segments (formulate/problem.h) */
    /* the entries of node v, [rstart[v], rstart[v+1]): the point (t < nl) or segment
       (nl + j) that holds it, and its memory vector; a point's rows are its own entries and
       its segment chains' (as_problem_live_bytes), not written out per point */
    size_t *rstart, *rpart;
    const double **rm;
    size_t *sstart, *spt;        /* points whose chains hold segment j (once per chain) */
    size_t *estart, *eidx;       /* edges of node v */
    size_t *astart, *aidx;       /* aliases of node v */
} rep_index;

/* Counting sort of PAIRS (key, value) into CSR START/VAL over N keys. */
static void
csr(size_t n, const size_t *key, const size_t *val, size_t m, size_t **start, size_t **out)
{
    size_t i, *at;

    *start = as_xcalloc(n + 1, sizeof **start);
    *out = as_xcalloc(m + 1, sizeof **out);
    for (i = 0; i < m; i++)
        (*start)[key[i] + 1]++;
    for (i = 0; i < n; i++)
        (*start)[i + 1] += (*start)[i];
    at = as_xcalloc(n + 1, sizeof *at);
    memcpy(at, *start, n * sizeof *at);
    for (i = 0; i < m; i++)
        (*out)[at[key[i]]++] = val[i];
    free(at);
}

/* Edges (ALIASES 0) or alias pairs (1) of P, M of them, per node: CSR START/IDX over N nodes. */
static void
pairs_csr(const as_problem *p, size_t n, size_t m, int aliases, size_t **start, size_t **idx)
{
    size_t *key = as_xcalloc(2 * m + 1, sizeof *key), *val = as_xcalloc(2 * m + 1, sizeof *val);
    size_t e;

    for (e = 0; e < m; e++) {
        key[2 * e] = aliases ? as_problem_alias(p, e)->a : as_problem_edge(p, e)->u;
        key[2 * e + 1] = aliases ? as_problem_alias(p, e)->b : as_problem_edge(p, e)->v;
        val[2 * e] = val[2 * e + 1] = e;
    }
    csr(n, key, val, 2 * m, start, idx);
    free(key);
    free(val);
}

/* Part T of P's rows: point T (< NL), else segment T - NL (its own entries). */
static const as_plive *
part(const as_problem *p, size_t nl, size_t t)
{
    return t < nl ? as_problem_live(p, t) : as_problem_live_seg(p, t - nl);
}

/* Memory vector of entry E of part Q. */
static const double *
part_m(const as_problem *p, const as_plive *q, size_t e)
{
    return q->m != NULL && q->m[e] != NULL ? q->m[e] : as_problem_node(p, q->nodes[e])->m;
}

static void
rep_index_init(rep_index *ix, const as_problem *p)
{
    size_t v, t, e, n = as_problem_nnodes(p), nl = as_problem_nlive(p), m = 0, i;
    size_t ns = as_problem_nsegs(p);
    size_t *key, *val, *ent;

    memset(ix, 0, sizeof *ix);
    ix->n = n;
    ix->nl = nl;
    ix->root = as_xcalloc(n + 1, sizeof *ix->root);
    for (v = 0; v < n; v++) {
        size_t r = v;
        while (as_problem_node(p, r)->follow != AS_NO_FOLLOW)
            r = as_problem_node(p, r)->follow;
        ix->root[v] = r;
    }
    val = as_xcalloc(n + 1, sizeof *val);
    for (v = 0; v < n; v++)
        val[v] = v;
    csr(n, ix->root, val, n, &ix->gstart, &ix->gmem);
    free(val);
    ix->ns = ns;
    for (t = 0; t < nl + ns; t++) /* own entries of the points and the segments */
        m += part(p, nl, t)->n;
    key = as_xcalloc(m + 1, sizeof *key);
    val = as_xcalloc(m + 1, sizeof *val);
    ent = as_xcalloc(m + 1, sizeof *ent);
    for (t = 0, i = 0; t < nl + ns; t++) {
        const as_plive *q = part(p, nl, t);
        for (e = 0; e < q->n; e++, i++) {
            key[i] = q->nodes[e];
            val[i] = t;
            ent[i] = i;
        }
    }
    csr(n, key, val, m, &ix->rstart, &ix->rpart);
    free(ix->rstart);
    free(val); /* the parts are in rpart: VAL now takes each entry's number */
    csr(n, key, ent, m, &ix->rstart, &val);
    ix->rm = as_xcalloc(m + 1, sizeof *ix->rm);
    for (t = 0, i = 0; t < nl + ns; t++) { /* entry number -> vector */
        const as_plive *q = part(p, nl, t);
        for (e = 0; e < q->n; e++, i++)
            ent[i] = (size_t)e;
    }
    for (t = 0, i = 0; t < nl + ns; t++) {
        const as_plive *q = part(p, nl, t);
        for (e = 0; e < q->n; e++, i++)
            key[i] = t;
    }
    for (i = 0; i < m; i++)
        ix->rm[i] = part_m(p, part(p, nl, key[val[i]]), ent[val[i]]);
    free(key);
    free(val);
    free(ent);
    /* segment -> the points whose chains hold it: the parts as_plive_iter walks */
    m = 0;
    for (t = 0; t < nl; t++) {
        const as_plive *q;
        as_plive_iter it;
        for (as_plive_begin(&it, p, as_problem_live(p, t)), q = as_plive_next(&it); q != NULL;
             q = as_plive_next(&it))
            m++;
    }
    key = as_xcalloc(m + 1, sizeof *key);
    val = as_xcalloc(m + 1, sizeof *val);
    for (t = 0, i = 0; t < nl; t++) {
        const as_plive *q;
        as_plive_iter it;
        for (as_plive_begin(&it, p, as_problem_live(p, t)), q = as_plive_next(&it); q != NULL;
             q = as_plive_next(&it), i++) {
            key[i] = (size_t)(q - as_problem_live_seg(p, 0));
            val[i] = t;
        }
    }
    csr(ns, key, val, m, &ix->sstart, &ix->spt);
    free(key);
    free(val);
    pairs_csr(p, n, as_problem_nedges(p), 0, &ix->estart, &ix->eidx);
    pairs_csr(p, n, as_problem_naliases(p), 1, &ix->astart, &ix->aidx);
}

static void
rep_index_free(rep_index *ix)
{
    free(ix->root);
    free(ix->gstart);
    free(ix->gmem);
    free(ix->rstart);
    free(ix->rpart);
    free(ix->rm);
    free(ix->sstart);
    free(ix->spt);
    free(ix->estart);
    free(ix->eidx);
    free(ix->astart);
    free(ix->aidx);
}

/* Scratch of one move's evaluation. */
typedef struct rep_work {
    double *delta;          /* per row */
    size_t *touched, nt;    /* rows with a delta */
    double *sdelta;         /* per segment */
    size_t *stouched, nst;  /* segments with a delta */
    unsigned *rstamp, *sstamp, *estamp, *astamp, stamp;
} rep_work;

/* Strategy of node W if group G moved to Q. */
#define REP_AT(ix, x, g, q, w) ((ix)->root[w] == (g) ? (q) : (x)[w])

/* Move group G to Q under X: its cost change.  0 if the move breaks an alias row. */
static int
rep_cost(const as_problem *p, const rep_index *ix, rep_work *w, const size_t *x, size_t g,
         size_t q, double *dcost)
{
    size_t a, i;
    double dc = 0;

    w->stamp++;
    for (a = ix->gstart[g]; a < ix->gstart[g + 1]; a++) {
        size_t v = ix->gmem[a];
        const as_pnode *nd = as_problem_node(p, v);
        for (i = ix->astart[v]; i < ix->astart[v + 1]; i++) {
            const as_palias *al = as_problem_alias(p, ix->aidx[i]);
            if (w->astamp[ix->aidx[i]] == w->stamp)
                continue;
            w->astamp[ix->aidx[i]] = w->stamp;
            if (al->bad[REP_AT(ix, x, g, q, al->a) * as_problem_node(p, al->b)->k +
                        REP_AT(ix, x, g, q, al->b)])
                return 0;
        }
        dc += nd->c[q] + nd->d[q] - nd->c[x[v]] - nd->d[x[v]];
        for (i = ix->estart[v]; i < ix->estart[v + 1]; i++) {
            const as_pedge *e = as_problem_edge(p, ix->eidx[i]);
            size_t kv = as_problem_node(p, e->v)->k;
            if (w->estamp[ix->eidx[i]] == w->stamp)
                continue;
            w->estamp[ix->eidx[i]] = w->stamp;
            dc += e->r[REP_AT(ix, x, g, q, e->u) * kv + REP_AT(ix, x, g, q, e->v)] -
                  e->r[x[e->u] * kv + x[e->v]];
        }
    }
    *dcost = dc;
    return 1;
}

/* Move group G to Q under X: the rows' changes in W (delta, touched) and *DEXCESS, the change
   of the bytes above BUDGET summed over the rows.  Reads every row of every member: a weight
   is in every point, so this is the dear part of a move (rep_cost first). */
static void
rep_rows(const rep_index *ix, rep_work *w, const double *sum, double budget, const size_t *x,
         size_t g, size_t q, double *dexcess)
{
    size_t a, i, j;
    double de = 0;

    w->stamp++;
    w->nt = w->nst = 0;
    for (a = ix->gstart[g]; a < ix->gstart[g + 1]; a++) {
        size_t v = ix->gmem[a];
        for (i = ix->rstart[v]; i < ix->rstart[v + 1]; i++) {
            size_t t = ix->rpart[i];
            const double *m = ix->rm[i];
            if (t >= ix->nl) { /* a segment: its points below, once */
                t -= ix->nl;
                if (w->sstamp[t] != w->stamp) {
                    w->sstamp[t] = w->stamp;
                    w->sdelta[t] = 0;
                    w->stouched[w->nst++] = t;
                }
                w->sdelta[t] += m[q] - m[x[v]];
                continue;
            }
            if (w->rstamp[t] != w->stamp) {
                w->rstamp[t] = w->stamp;
                w->delta[t] = 0;
                w->touched[w->nt++] = t;
            }
            w->delta[t] += m[q] - m[x[v]];
        }
    }
    for (j = 0; j < w->nst; j++) {
        size_t sg = w->stouched[j];
        for (i = ix->sstart[sg]; i < ix->sstart[sg + 1]; i++) {
            size_t t = ix->spt[i];
            if (w->rstamp[t] != w->stamp) {
                w->rstamp[t] = w->stamp;
                w->delta[t] = 0;
                w->touched[w->nt++] = t;
            }
            w->delta[t] += w->sdelta[sg];
        }
    }
    for (j = 0; j < w->nt; j++) {
        size_t t = w->touched[j];
        de += fmax(0, sum[t] + w->delta[t] - budget) - fmax(0, sum[t] - budget);
    }
    *dexcess = de;
}

/*
 * Move group G to Q under X: *DCOST, *DEXCESS (change of the bytes above BUDGET summed over
 * the rows).  0 if the move breaks an alias row.
 */
static int
rep_eval(const as_problem *p, const rep_index *ix, rep_work *w, const double *sum, double budget,
         const size_t *x, size_t g, size_t q, double *dcost, double *dexcess)
{
    if (!rep_cost(p, ix, w, x, g, q, dcost))
        return 0;
    rep_rows(ix, w, sum, budget, x, g, q, dexcess);
    return 1;
}

#define REP_TRY 6

/* A move of group G to Q: its cost per byte above the budget removed, and the bytes. */
typedef struct rep_move {
    double score, de;
    size_t g, q;
} rep_move;

static int
move_cmp(const void *a, const void *b)
{
    const rep_move *x = a, *y = b;

    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    if (x->de != y->de)
        return x->de < y->de ? -1 : 1;
    return x->g < y->g ? -1 : x->g > y->g;
}

/*
 * Cost descent of X that fits P's rows (sums SUM): each pass moves every group to its
 * cheapest strategy that keeps every row within the budget, until a pass moves none or
 * DEADLINE.  The repair's moves are chosen per byte and can cost more than they must.
 */
static size_t
rep_descend(const as_problem *p, const rep_index *ix, rep_work *w, double *sum, double budget,
            size_t *x, double deadline)
{
    size_t g, q, pass, moved = 0, n = ix->n;

    for (pass = 0; pass < 4; pass++) {
        size_t before = moved;
        for (g = 0; g < n; g++) {
            size_t k = as_problem_node(p, g)->k, bq = k, i, a;
            double bdc = 0, dc, de;
            if (ix->root[g] != g)
                continue;
            if (deadline > 0 && as_now() > deadline) /* every group: g & 15 missed most roots */
                return moved;
            for (q = 0; q < k; q++) {
                size_t j;
                int over = 0;
                /* the cost first: the rows only for a move that would lower it (gpt3-13b 2x8
                   under 53.61 GiB: the descent read every row of every move, 23 s wall) */
                if (q == x[g] || !rep_cost(p, ix, w, x, g, q, &dc) || !(dc < bdc - 1e-12))
                    continue;
                rep_rows(ix, w, sum, budget, x, g, q, &de);
                for (j = 0; j < w->nt && !over; j++)
                    over = sum[w->touched[j]] + w->delta[w->touched[j]] > budget;
                if (!over) {
                    bdc = dc;
                    bq = q;
                }
            }
            if (bq == k)
                continue;
            rep_eval(p, ix, w, sum, budget, x, g, bq, &dc, &de);
            for (i = 0; i < w->nt; i++)
                sum[w->touched[i]] += w->delta[w->touched[i]];
            for (a = ix->gstart[g]; a < ix->gstart[g + 1]; a++)
                x[ix->gmem[a]] = bq;
            moved++;
        }
        if (moved == before)
            break;
    }
    return moved;
}

/* The best move of each group of part PT not stamped in this step (GSTAMP), into CAND. */
static void
rep_part(const as_problem *p, const rep_index *ix, rep_work *w, const double *sum,
         double budget, const size_t *x, const as_plive *pt, unsigned *gstamp, size_t steps,
         rep_move *cand, size_t *nc)
{
    size_t e, q, c, nq, try[REP_TRY];

    for (e = 0; e < pt->n; e++) {
        const double *lme = part_m(p, pt, e);
        size_t v = pt->nodes[e], g = ix->root[v], k = as_problem_node(p, g)->k;
        rep_move best = {HUGE_VAL, 0, 0, 0};
        if (gstamp[g] == steps + 1 || !(lme[x[v]] > 0))
            continue;
        gstamp[g] = (unsigned)steps + 1;
        /* the REP_TRY strategies that lower this entry most (a scan of every strategy of
           every group in gpt3-13b's rows with copies took seconds) */
        for (q = 0, nq = 0; q < k; q++) {
            size_t j;
            if (q == x[g] || !(lme[q] < lme[x[v]]))
                continue;
            for (j = nq < REP_TRY ? nq++ : REP_TRY; j > 0 && lme[try[j - 1]] > lme[q]; j--)
                if (j < REP_TRY)
                    try[j] = try[j - 1];
            if (j < REP_TRY)
                try[j] = q;
        }
        for (c = 0; c < nq; c++) {
            double dc, de, score;
            q = try[c];
            /* never a strategy the ILP forbids (an axis role's): bytes bought with
               AS_ILP_FORBIDDEN_COST make a plan no one can run */
            if (!rep_eval(p, ix, w, sum, budget, x, g, q, &dc, &de) || !(de < 0) ||
                !(dc < AS_ILP_FORBIDDEN_COST))
                continue;
            score = dc / -de;
            if (score < best.score || (score == best.score && de < best.de))
                best = (rep_move){score, de, g, q};
        }
        if (best.score < HUGE_VAL)
            cand[(*nc)++] = best;
    }
}

/* as_fit_repair, then (DESCEND) rep_descend.  KEEP (NULL: none) holds P's index between
   calls while P's rows stay the same (n 0: none yet; the caller frees it): building it takes
   3.5 s on gpt3-175b 8x8 with its copies, as long as the descent. */
static int
rep_run(const as_problem *p, size_t *x, double deadline, int descend, rep_index *keep)
{
    double budget = as_problem_memory(p), *sum, *segs, excess = 0;
    rep_index ix;
    rep_work w;
    size_t t, steps, n = as_problem_nnodes(p);
    unsigned *gstamp, *sseen;
    rep_move *cand;
    int fits, late = 0;
    unsigned long polls = 0;
    double t_start = as_now();

    if (budget <= 0)
        return 1;
    if (keep != NULL && keep->n > 0)
        ix = *keep;
    else
        rep_index_init(&ix, p);
    memset(&w, 0, sizeof w);
    w.delta = as_xcalloc(ix.nl + 1, sizeof *w.delta);
    w.touched = as_xcalloc(ix.nl + 1, sizeof *w.touched);
    w.rstamp = as_xcalloc(ix.nl + 1, sizeof *w.rstamp);
    w.sdelta = as_xcalloc(ix.ns + 1, sizeof *w.sdelta);
    w.stouched = as_xcalloc(ix.ns + 1, sizeof *w.stouched);
    w.sstamp = as_xcalloc(ix.ns + 1, sizeof *w.sstamp);
    w.estamp = as_xcalloc(as_problem_nedges(p) + 1, sizeof *w.estamp);
    w.astamp = as_xcalloc(as_problem_naliases(p) + 1, sizeof *w.astamp);
    gstamp = as_xcalloc(n + 1, sizeof *gstamp);
    sseen = as_xcalloc(ix.ns + 1, sizeof *sseen);
    sum = as_xcalloc(ix.nl + 1, sizeof *sum);
    segs = as_problem_seg_bytes(p, x);
    for (t = 0; t < ix.nl; t++) {
        sum[t] = as_problem_live_bytes(p, t, segs, x);
        excess += fmax(0, sum[t] - budget);
    }
    free(segs);
    cand = as_xcalloc(n + 1, sizeof *cand);
    for (steps = 0; excess > 0 && steps < 4 * n + 16; steps++) {
        size_t nc = 0, c, moved = 0;
        if (deadline > 0 && as_now() > deadline)
            break;
        /* every group with bytes in a row above the budget: its best move.  A point's
           parts: its own entries, then each chain from its start up; a segment seen once
           this step ends its chain there (it and its parents were walked, their groups
           stamped: the HLO step's 260k points over hold 966 M entries in their chains) */
        for (t = 0; t < ix.nl && !late; t++) {
            const as_plive *l = as_problem_live(p, t);
            size_t ch[1 + AS_LIVE_MORE], ci, sg;
            if (sum[t] <= budget)
                continue;
            /* a scan of the HLO step's points with its copies takes 15 s: look at the clock */
            if (deadline > 0 && (++polls & 63) == 0 && as_now() > deadline)
                late = 1;
            rep_part(p, &ix, &w, sum, budget, x, l, gstamp, steps, cand, &nc);
            ch[0] = l->seg;
            memcpy(ch + 1, l->more, sizeof l->more);
            for (ci = 0; ci < 1 + AS_LIVE_MORE; ci++)
                for (sg = ch[ci]; sg != AS_NO_SEG && sseen[sg] != steps + 1;
                     sg = as_problem_live_seg(p, sg)->seg) {
                    sseen[sg] = (unsigned)steps + 1;
                    rep_part(p, &ix, &w, sum, budget, x, as_problem_live_seg(p, sg), gstamp,
                             steps, cand, &nc);
                }
        }
        if (nc == 0 || late)
            break; /* no move lowers the excess, or the time is up */
        /* the moves in order of score, each checked again after those before it: one scan
           makes several moves (a scan of gpt3-13b's rows with its copies takes seconds) */
        qsort(cand, nc, sizeof *cand, move_cmp);
        for (c = 0; c < nc && excess > 0 && !late; c++) {
            size_t a, i;
            double dc, de;
            if (deadline > 0 && (c & 63) == 63 && as_now() > deadline) {
                late = 1;
                break;
            }
            if (!rep_eval(p, &ix, &w, sum, budget, x, cand[c].g, cand[c].q, &dc, &de) ||
                !(de < 0) || !(dc < AS_ILP_FORBIDDEN_COST) ||
                (c > 0 && dc > 0 && dc / -de > 2 * fmax(cand[c].score, 0)))
                continue;
            for (i = 0; i < w.nt; i++) {
                size_t r = w.touched[i];
                excess += fmax(0, sum[r] + w.delta[r] - budget) - fmax(0, sum[r] - budget);
                sum[r] += w.delta[r];
            }
            for (a = ix.gstart[cand[c].g]; a < ix.gstart[cand[c].g + 1]; a++)
                x[ix.gmem[a]] = cand[c].q;
            moved++;
        }
        if (moved == 0)
            break;
        excess = 0; /* summed again: no drift */
        for (t = 0; t < ix.nl; t++)
            excess += fmax(0, sum[t] - budget);
    }
    free(cand);
    fits = excess <= 0;
    if (getenv("AS_DEBUG_FIT") != NULL)
        fprintf(stderr, "fit: repair %zu steps, %.3f s, %.0f B above the budget left\n", steps,
                as_now() - t_start, excess);
    if (fits && descend) {
        size_t moved = rep_descend(p, &ix, &w, sum, budget, x, deadline);
        if (getenv("AS_DEBUG_FIT") != NULL)
            fprintf(stderr, "fit: descent %zu moves, %.3f s, %.9g s\n", moved,
                    as_now() - t_start, as_problem_eval(p, x));
    }
    if (fits) {
        as_err e2;
        double obj;
        fits = as_problem_check(p, x, &obj, NULL, &e2) == AS_OK; /* no-goods, rounding */
    }
    free(sum);
    free(gstamp);
    free(sseen);
    free(w.delta);
    free(w.touched);
    free(w.rstamp);
    free(w.sdelta);
    free(w.stouched);
    free(w.sstamp);
    free(w.estamp);
    free(w.astamp);
    if (keep != NULL)
        *keep = ix;
    else
        rep_index_free(&ix);
    return fits;
}

int
as_fit_repair(const as_problem *p, size_t *x, double deadline)
{
    return rep_run(p, x, deadline, 0, NULL);
}

/* ---- the refit rounds ---- */

/* Re-solves when the memory model's peak of the best plan exceeds the budget: in all, and
 * the first ones that add the plan's resharded copies to the rows. */
#define FIT_ROUNDS 8
#define FIT_COPY_ROUNDS 4

/* The best plan that fits by the memory model so far. */
typedef struct fit_best {
    as_plan pl;  /* pl.choice NULL: none */
    double rows; /* its peak by the rows of the round that found it */
} fit_best;

/* Keep a copy of plan PL (N nodes, peak by the model) in B when it fits BUDGET and is cheaper. */
static void
best_take(fit_best *b, const as_plan *pl, size_t n, double budget, double rows)
{
    if (pl->choice == NULL || !(pl->peak <= budget * (1 + 1e-9)) ||
        !(pl->objective < AS_ILP_FORBIDDEN_COST))
        return; /* a plan holding a forbidden strategy is no plan */
    if (b->pl.choice != NULL && b->pl.objective <= pl->objective)
        return;
    free(b->pl.choice);
    b->pl = *pl;
    b->rows = rows;
    b->pl.choice = as_xcalloc(n + 1, sizeof *b->pl.choice);
    memcpy(b->pl.choice, pl->choice, n * sizeof *b->pl.choice);
}

/* RES's first plan becomes B's (RES keeps its others; an empty RES gets one plan). */
static void
best_into(fit_best *b, as_solve_result *res)
{
    if (res->nplans == 0) {
        res->plans = as_xcalloc(1, sizeof *res->plans);
        res->nplans = 1;
    } else {
        as_plan_free(&res->plans[0]);
    }
    res->plans[0] = b->pl;
    b->pl.choice = NULL;
}

/*
 * RES's first plan passed the heuristic's fits check (as_limits) and a cheaper plan by the
 * rows did not (RES->over): the first, with its peak by the model, is kept in B as the plan
 * that fits so far; the cheaper one takes its place when it is cheaper than B's, for the
 * refit rounds to add its resharded copies to the rows (the rows alone and the heuristic's
 * search under the check: t5-base 2x4 under 1.08 GiB, beam K=1 returned a plan at 42.7 %
 * of its bound; its start, 0.0303 s, failed the check).  RES->over is freed.
 */
static void
over_first(const as_fit_opts *fo, as_solve_result *res, fit_best *b, size_t n, double budget,
           double *sim_s)
{
    as_plan *pl = &res->plans[0], t;
    double rows = pl->peak, peak = 0, ts = as_now();
    as_err e2 = {0};

    if (res->over.choice == NULL || res->nplans == 0)
        return;
    if (fo->peak(fo->ud, pl, &peak, &e2) == AS_OK) {
        *sim_s = fmax(*sim_s, as_now() - ts);
        pl->peak = peak;
        best_take(b, pl, n, budget, rows);
        pl->peak = rows;
        if (b->pl.choice == NULL || res->over.objective < b->pl.objective) {
            t = *pl;
            *pl = res->over;
            res->over = t;
            fprintf(fo->log, "%-13sthe solver's plan fits, %.9g s; refitting from its cheapest "
                    "plan by the rows, %.9g s, which does not\n", "refit", t.objective,
                    pl->objective);
        }
    }
    as_plan_free(&res->over);
}

/*
 * A plan of P that fits its rows, from FROM (a plan of P): FROM repaired (as_fit_repair), its
 * peak by the model in *PL.  When the repaired plan's own copies take it over BUDGET, they go
 * into P's rows too and the repair goes on from it (up to FIT_START_ROUNDS times): moving a
 * consumer off one copy can make another downstream.  0 if the repair does not reach the rows,
 * or the plan does not lower.
 */
#define FIT_START_ROUNDS 8

static int
fit_start(as_build_map *map, as_problem *p, const as_fit_opts *fo, const as_plan *from,
          double bound, double budget, double deadline, double ddeadline, double *copies_s,
          as_plan *pl)
{
    size_t n = as_problem_nnodes(p), added = 0, *prev = as_xcalloc(n + 1, sizeof *prev);
    double rb = as_problem_memory(p), tb = rb, peak = HUGE_VAL, prev_peak = HUGE_VAL;
    as_err e2 = {0};
    int r, ok = 0;
    rep_index ix = {0}; /* P's, while its rows stay as they are */

    memset(pl, 0, sizeof *pl);
    pl->choice = as_xcalloc(n + 1, sizeof *pl->choice);
    memcpy(pl->choice, from->choice, n * sizeof *pl->choice);
    for (r = 0; r < FIT_START_ROUNDS; r++) {
        double t_it = as_now();
        if (!rep_run(p, pl->choice, deadline, 0, &ix) ||
            fo->peak(fo->ud, pl, &peak, &e2) != AS_OK)
            break;
        if (getenv("AS_DEBUG_FIT") != NULL)
            fprintf(stderr, "fit: repaired plan %.9g s, rows %.0f B, model %.0f B\n",
                    as_problem_eval(p, pl->choice), as_problem_peak(p, pl->choice), peak);
        ok = 1;
        memcpy(prev, pl->choice, n * sizeof *prev);
        prev_peak = peak;
        if (peak <= budget * (1 + 1e-9) || (deadline > 0 && as_now() > deadline))
            break;
        /* its own copies into the rows (they grow P: gpt3-13b gets 2644 rows each time, and
           the next repair takes longer), unless the time left is short for that */
        /* COPIES_S: the longest as_build_add_copies so far (it does not stop at the limit:
           gpt3-175b 16x8 under 300 GiB overran a 60 s limit by 15 s in it) */
        if (deadline > 0 && deadline - as_now() < 4 * (as_now() - t_it) + 2 * *copies_s) {
            added = 0;
        } else {
            double tc = as_now();
            rep_index_free(&ix); /* the rows change */
            memset(&ix, 0, sizeof ix);
            if (as_build_add_copies(map, p, pl->choice, deadline, &added, &e2) != AS_OK)
                break; /* out of time: the last plan that fit the rows */
            *copies_s = fmax(*copies_s, as_now() - tc);
        }
        if (added > 0 && as_problem_peak(p, pl->choice) > as_problem_memory(p) * (1 + 1e-9))
            continue; /* its own copies cut it off: repair against them */
        /* over by what the rows do not hold (partial sums, communication buffers): repair
           against rows lowered by the excess, as a refit round would */
        tb -= peak - budget + 0.005 * budget;
        if (tb <= 0)
            break;
        as_problem_set_memory(p, tb);
    }
    as_problem_set_memory(p, rb);
    /* the last plan that fit the rows (and lowered), if it still fits them */
    memcpy(pl->choice, prev, n * sizeof *prev);
    free(prev);
    if (!ok || !(as_problem_peak(p, pl->choice) <= rb * (1 + 1e-9))) {
        rep_index_free(&ix);
        as_plan_free(pl);
        return 0;
    }
    if (prev_peak <= budget * (1 + 1e-9) && (ddeadline <= 0 || as_now() < ddeadline)) {
        /* it fits: the moves the repair made per byte may cost more than they must; a cost
           descent within the rows, kept when the model agrees it still fits.  It may run
           until DDEADLINE (later than DEADLINE): it stops by itself once no move lowers the
           cost, and on gpt3-175b 8x8 under 394 GiB its 8 moves take 17.2 to 14.3 s while the
           round's solve from it finds nothing in the time left */
        as_plan d = *pl;
        double dpeak;
        d.choice = as_xcalloc(n + 1, sizeof *d.choice);
        memcpy(d.choice, pl->choice, n * sizeof *d.choice);
        if (rep_run(p, d.choice, ddeadline, 1, &ix) &&
            as_problem_eval(p, d.choice) < as_problem_eval(p, pl->choice) &&
            fo->peak(fo->ud, &d, &dpeak, &e2) == AS_OK && dpeak <= budget * (1 + 1e-9)) {
            free(pl->choice);
            pl->choice = d.choice;
            prev_peak = dpeak;
        } else {
            free(d.choice);
        }
    }
    rep_index_free(&ix);
    pl->objective = as_problem_eval(p, pl->choice);
    pl->bound = isfinite(bound) ? fmin(bound, pl->objective) : -HUGE_VAL;
    pl->gap = isfinite(pl->bound) ? as_rel_gap(pl->objective, pl->bound) : HUGE_VAL;
    pl->status = AS_OUTCOME_FEASIBLE;
    pl->nodes = 0;
    pl->peak = prev_peak;
    return 1;
}

/* Seconds the reductions of gpt3-13b 2x8 take before their first bound round (1.7 s loaded): a
   solve to close the gap needs about that and a bound round more to gain anything. */
#define FIT_GAP_MIN_S 2.0

/*
 * A heuristic's plan PL fits, LEFT seconds left: its bound raised by the reductions of P
 * run from the plan (its cost prunes them, their bound rounds and branching get the time),
 * as an exact backend's solve for the gap starts, the plan kept whatever they find (the
 * heuristic's answer stays its own).  The heuristic's bound is the bound pruning's on the
 * merged problem with at most half of the first solve's time (gpt3-175b 4x4x4 under 324
 * GiB at -t 60: 15.83, the plan 2.9 % above it, the command done after 36 s; GLPK's solve
 * for the gap reached 16.10).  The new bound counts when P's rows are the first solve's.
 */
static void
heur_close_gap(as_problem *p, const as_solve_opts *o, double left, int rows_first, as_plan *pl,
               FILE *log)
{
    double t1 = as_now(), lb;
    as_reduce_opts ro = {.flags = o->reduce, .gap = o->lim.gap,
                         .top = 1, .incumbent = pl->choice, .branch = 1,
                         .deadline = t1 + 0.9 * left, .abort_at = t1 + left};
    as_problem *rp = NULL;
    as_reduction *red = NULL;
    as_err e2 = {0};

    if (!rows_first || !(o->reduce & AS_REDUCE_BOUND))
        return; /* a bound of other rows, or none asked for (--no-reduce) */
    if (as_reduce_ex(p, &ro, &rp, &red, &e2) != AS_OK)
        return; /* out of time in the reductions: the bound as it is */
    lb = as_reduction_stats(red)->lb;
    as_reduction_free(red);
    as_problem_free(rp);
    if (isfinite(lb) && lb > pl->bound) {
        pl->bound = fmin(lb, pl->objective);
        pl->gap = as_rel_gap(pl->objective, pl->bound); /* the status stays a heuristic's */
    }
    fprintf(log, "%-13sthe plan fits: the reductions ran again from it for its bound (%.1f s): "
            "%.9g s, bound %.9g s, gap %.3g%%\n", "gap", as_now() - t1, pl->objective,
            pl->bound, 100 * fmax(0, as_rel_gap(pl->objective, pl->bound)));
}

/*
 * RES's first plan fits the budget (by the model) with time left under the limit: spend it on
 * the gap.  Solve P again from that plan (its cost prunes the reductions, whose bound rounds
 * and branching get the time the first solve left unused), until the limit less two checks
 * by the model (SIM_S each).  A cheaper plan replaces it when the model says it fits too.
 * The new bound counts only when P's rows are those of the first solve (ROWS_FIRST): then it
 * bounds every plan that fits, as the first one does.  *ROWS gets the kept plan's rows' peak.
 */
static void
fit_close_gap(as_problem *p, const as_solve_opts *o, const as_fit_opts *fo, double sim_s,
              double budget, int rows_first, as_solve_result *res, double *rows)
{
    as_plan *pl = &res->plans[0];
    double limit = o->lim.time_limit_s, left, bound = pl->bound, peak = HUGE_VAL, t1 = as_now();
    const as_solver_ops *ops = as_solver_find(o->solver ? o->solver : "glpk", NULL);
    double tol = fmax(o->lim.gap, 1e-9); /* proven: within the gap asked for, or rounding */
    as_solve_opts so = *o;
    as_solve_result r2;
    as_err e2 = {0};

    left = limit - (t1 - fo->t0) - 2 * sim_s - 0.5;
    if (!fo->close_gap || !(limit > 0) || o->top > 1 || res->nplans != 1 || ops == NULL ||
        !(pl->gap > tol) || left < FIT_GAP_MIN_S)
        return;
    if (!(ops->flags & AS_SOLVER_EXACT)) {
        heur_close_gap(p, o, left, rows_first, pl, fo->log);
        return;
    }
    so.incumbent = pl->choice;
    so.branch_inc = 1;
    /* the first solve's multipliers and TRW-S messages at its first round's best bound (same
       problem, same rows): the first round goes on from there, not from none (gpt3-175b
       4x4x4 under 324 GiB: 16.093 at once, where TRW-S from none took its 6-9 s to 15.84;
       the first rounds' problems are alike, the later rounds' pruned ones are not: those
       multipliers gave gpt3-13b 2x8 under 53.61 GiB a lower first bound than none) */
    so.duals_from = rows_first ? res->duals : NULL;
    so.lim.time_limit_s = left;
    so.count_before = 0;
    if (as_solve_problem(p, &so, &r2, &e2) != AS_OK)
        return; /* out of time in the reductions: the plan as it is */
    if (r2.nplans > 0) {
        as_plan *q = &r2.plans[0];
        double qrows = q->peak;
        if (rows_first && isfinite(q->bound))
            bound = isfinite(bound) ? fmax(bound, q->bound) : q->bound;
        if (q->objective < pl->objective - 1e-12 * fabs(pl->objective) &&
            limit - (as_now() - fo->t0) > sim_s && fo->peak(fo->ud, q, &peak, &e2) == AS_OK &&
            peak <= budget * (1 + 1e-9)) {
            size_t *c = pl->choice;
            pl->choice = q->choice;
            q->choice = c;
            pl->objective = q->objective;
            pl->peak = peak;
            pl->nodes = q->nodes;
            *rows = qrows;
        }
        if (isfinite(bound)) {
            pl->bound = fmin(bound, pl->objective);
            pl->gap = as_rel_gap(pl->objective, pl->bound);
            pl->status = pl->gap <= tol ? AS_OUTCOME_OPTIMAL : AS_OUTCOME_FEASIBLE;
        }
    }
    fprintf(fo->log, "%-13sthe plan fits: solved again from it for its gap (%.1f s): %.9g s, "
            "bound %.9g s, gap %.3g%%\n", "gap", as_now() - t1, pl->objective, pl->bound,
            100 * fmax(0, as_rel_gap(pl->objective, pl->bound)));
    as_solve_result_free(&r2);
}

as_fit_status
as_solve_fit(as_build_map *map, as_problem *p, const as_solve_opts *o, const as_fit_opts *fo,
             as_solve_result *res, double *rows, as_err *err)
{
    double budget = as_problem_memory(p), rb = budget, peak = 0, limit = o->lim.time_limit_s;
    double bound0 = res->nplans > 0 ? res->plans[0].bound : -HUGE_VAL;
    size_t n = as_problem_nnodes(p), i;
    char b1[32], b2[32], b3[32];
    as_solve_opts so = *o;
    fit_best best = {{0}, 0};
    as_plan start = {0};
    as_err e2 = {0};
    as_fit_status st = AS_FIT_OK;
    double deadline, ddeadline, sim_s = 0, copies_s = 0;
    int round;

    for (round = 0;; round++) {
        if (budget > 0)
            over_first(fo, res, &best, n, budget, &sim_s);
        *rows = res->plans[0].peak;
        for (i = 0; i < res->nplans; i++) {
            double ts = as_now();
            if (i == 0 && best.pl.choice != NULL &&
                memcmp(res->plans[0].choice, best.pl.choice, n * sizeof *best.pl.choice) == 0) {
                res->plans[0].peak = best.pl.peak; /* the start plan came back: known */
                continue;
            }
            if (fo->peak(fo->ud, &res->plans[i], &peak, &e2) != AS_OK) {
                fprintf(fo->errfp, "autoshard: warning: peak memory from the ILP's rows only "
                        "(the plan does not lower: %s)\n", e2.msg);
                *rows = -1;
                goto out;
            }
            res->plans[i].peak = peak;
            sim_s = fmax(sim_s, as_now() - ts);
        }
        if (budget <= 0)
            break;
        best_take(&best, &res->plans[0], n, budget, *rows);
        if (res->plans[0].peak <= budget * (1 + 1e-9)) {
            if (best.pl.choice != NULL && best.pl.objective < res->plans[0].objective) {
                *rows = best.rows;
                best_into(&best, res); /* a repaired plan of an earlier round is cheaper */
            }
            /* time left: on its gap (a later round's rows hold copies: its bound is not one) */
            fit_close_gap(p, o, fo, sim_s, budget, round == 0, res, rows);
            break;
        }
        /* another round adds copies, repairs and checks a plan before it solves (none of it
           stops at the limit: on gpt3-13b 2x8 with two plans' copies in the rows that overran
           a 150 s limit by 17 s): not when the time left is short for that and a plan fits */
        if (limit > 0 && best.pl.choice != NULL &&
            limit - (as_now() - fo->t0) < 4 * sim_s + 1)
            goto take_best;
        /* no plan fits and the time is out (adding a huge plan's copies takes seconds: on
           gpt3-175b 4x4x4 under 324 GiB it ran 100 s past a 60 s limit) */
        if (limit > 0 && limit - (as_now() - fo->t0) < sim_s + 0.5)
            goto out_of_time;
        if (round < FIT_COPY_ROUNDS) {
            size_t added = 0;
            double tc = as_now();
            /* it stops at the limit less a check by the model (gpt3-175b 4x4x4 under
               324 GiB ran 80-176 s past a 60 s limit in it) */
            if (as_build_add_copies(map, p, res->plans[0].choice,
                                    limit > 0 ? fo->t0 + limit - sim_s - 0.5 : 0, &added,
                                    err) != AS_OK) {
                if (err->code == AS_ESOLVER) { /* the limit */
                    as_err_clear(err);
                    goto out_of_time;
                }
                st = AS_FIT_ERROR;
                goto out;
            }
            copies_s = fmax(copies_s, as_now() - tc);
            /* progress only when the rows now cut the plan off: copies already in the rows
               (added in an earlier round) leave the rows' budget to lower */
            if (added > 0 && as_problem_peak(p, res->plans[0].choice) > rb * (1 + 1e-9)) {
                fprintf(fo->log, "%-13sthe plan needs %s per device (rows %s); its resharded "
                        "copies now in %zu more rows, solving again\n", "refit",
                        as_fmt_bytes(res->plans[0].peak, b1, sizeof b1),
                        as_fmt_bytes(*rows, b2, sizeof b2), added);
                goto again;
            }
        }
        rb -= res->plans[0].peak - budget + 0.005 * budget;
        if (round + 1 >= FIT_ROUNDS || rb <= 0) {
            if (best.pl.choice != NULL)
                goto take_best;
            fprintf(fo->errfp, "autoshard: no plan found that fits in %s per device: after %d "
                    "solves with the ILP's rows tightened to %s, the best plan needs %s with its "
                    "resharded copies and partial sums (rows: %s)\n",
                    as_fmt_bytes(budget, b1, sizeof b1), round + 1,
                    as_fmt_bytes(rb, b2, sizeof b2),
                    as_fmt_bytes(res->plans[0].peak, b3, sizeof b3),
                    as_fmt_bytes(*rows, b2, sizeof b2));
            st = AS_FIT_INFEAS;
            goto fail;
        }
        fprintf(fo->log, "%-13sthe plan needs %s per device (rows %s + resharded copies and "
                "partial sums); solving again with the rows' budget at %s\n", "refit",
                as_fmt_bytes(res->plans[0].peak, b1, sizeof b1),
                as_fmt_bytes(*rows, b2, sizeof b2), as_fmt_bytes(rb, b3, sizeof b3));
    again:
        as_problem_set_memory(p, rb);
        /* the round's start: the plan repaired to fit the new rows, else the best plan that
           fits so far (repaired too when the new rows cut it off) */
        as_plan_free(&start);
        so.incumbent = NULL;
        /* the repair may take most of the time left: on gpt3-13b the solve from it rarely
           improves on it in time, and without it a round has no plan to fall back on */
        deadline = limit > 0 ? as_now() + 0.8 * (limit - (as_now() - fo->t0)) : 0;
        /* the descent: up to the limit, less two checks by the model and the output */
        ddeadline = limit > 0 ? fo->t0 + limit - 2 * sim_s - 0.5 : 0;
        if (fit_start(map, p, fo, &res->plans[0], bound0, budget, deadline, ddeadline,
                      &copies_s, &start) ||
            (best.pl.choice != NULL && fit_start(map, p, fo, &best.pl, bound0, budget, deadline,
                                                 ddeadline, &copies_s, &start))) {
            so.incumbent = start.choice;
            best_take(&best, &start, n, budget, as_problem_peak(p, start.choice));
            fprintf(fo->log, "%-13sstarting from a plan that fits the new rows: %.9g s, %s "
                    "per device%s\n", "refit", start.objective,
                    as_fmt_bytes(start.peak, b1, sizeof b1),
                    start.peak <= budget * (1 + 1e-9) ? "" : " (over the budget)");
        }
        if (limit > 0) { /* the limit covers every round */
            /* less the time to check the plan it returns (the simulator: 1.5 s on gpt3-13b) */
            so.lim.time_limit_s = limit - (as_now() - fo->t0) - sim_s;
            if (so.lim.time_limit_s <= 0) {
            out_of_time:
                if (best.pl.choice != NULL)
                    goto take_best;
                fprintf(fo->errfp, "autoshard: stopped at the time limit (%g s) before a plan "
                        "that fits in %s per device: the best plan needs %s with its resharded "
                        "copies and partial sums\n", limit, as_fmt_bytes(budget, b1, sizeof b1),
                        as_fmt_bytes(res->plans[0].peak, b2, sizeof b2));
                st = AS_FIT_LIMIT; /* out of time: not proven that no plan fits */
                goto fail;
            }
        }
        as_solve_result_free(res);
        if (as_solve_problem(p, &so, res, err) != AS_OK) {
            if (best.pl.choice != NULL && err->code == AS_ESOLVER) {
                as_err_clear(err); /* out of time in the reductions: the plan that fits */
                goto take_best;
            }
            st = AS_FIT_ERROR;
            goto out;
        }
        if (res->nplans == 0 && best.pl.choice != NULL)
            goto take_best; /* the solver ran out of time (or no plan fits the new rows) */
        if (res->nplans == 0 && res->outcome != AS_OUTCOME_INFEASIBLE && !(limit > 0)) {
            /* a heuristic found none and no limit stopped it */
            fprintf(fo->errfp, "autoshard: no plan found that fits in %s per device: with the "
                    "ILP's rows tightened to %s to leave room for resharded copies and partial "
                    "sums, solver '%s' found no plan (a heuristic: not a proof)\n",
                    as_fmt_bytes(budget, b1, sizeof b1), as_fmt_bytes(rb, b2, sizeof b2),
                    so.solver != NULL ? so.solver : "glpk");
            st = AS_FIT_INFEAS;
            goto fail;
        }
        if (res->nplans == 0 && res->outcome != AS_OUTCOME_INFEASIBLE) {
            fprintf(fo->errfp, "autoshard: stopped at the time limit (%g s) before a plan that "
                    "fits in %s per device: with the ILP's rows tightened to %s to leave room "
                    "for resharded copies and partial sums, the solver found no plan in time\n",
                    limit, as_fmt_bytes(budget, b1, sizeof b1), as_fmt_bytes(rb, b2, sizeof b2));
            st = AS_FIT_LIMIT; /* out of time: not proven that no plan fits */
            goto fail;
        }
        if (res->nplans == 0) {
            /* the rows hold the copies of the plans tried, charged to the readers' strategies
               for the producers' layouts of those plans, and may be tightened: no plan fits
               them, which proves nothing about plans that make other copies */
            fprintf(fo->errfp, "autoshard: no plan found that fits in %s per device: no plan "
                    "fits the ILP's rows%s%s with the resharded copies of the plans tried (not "
                    "a proof: another plan makes other copies)\n",
                    as_fmt_bytes(budget, b1, sizeof b1), rb < budget ? " tightened to " : "",
                    rb < budget ? as_fmt_bytes(rb, b2, sizeof b2) : "");
            st = AS_FIT_INFEAS;
            goto fail;
        }
        if (limit > 0 && best.pl.choice != NULL && limit - (as_now() - fo->t0) <= 0 &&
            best.pl.objective <= res->plans[0].objective)
            goto take_best; /* no time to check the solver's plan, and it is no cheaper */
    }
    goto out;
take_best:
    fprintf(fo->log, "%-13sthe best plan that fits: %.9g s, %s per device\n", "refit",
            best.pl.objective, as_fmt_bytes(best.pl.peak, b1, sizeof b1));
    *rows = best.rows;
    best_into(&best, res);
    goto out;
fail:
    as_solve_result_free(res);
out:
    /* a later round's rows hold one plan's copies, which another plan may not make: the
       first solve's bound is the one that holds for every plan that fits */
    for (i = 0; st == AS_FIT_OK && round > 0 && isfinite(bound0) && i < res->nplans; i++) {
        as_plan *pl = &res->plans[i];
        /* not the round's own bound, even when lower: it bounds that round's rows only */
        pl->bound = fmin(bound0, pl->objective);
        pl->gap = as_rel_gap(pl->objective, pl->bound);
        if (pl->status == AS_OUTCOME_OPTIMAL && pl->gap > o->lim.gap)
            pl->status = AS_OUTCOME_FEASIBLE;
    }
    /* say why the time left does not go into the gap (bert-large 2x4 under 1.261 GiB
       ended at 0.316 % after 1.2 s of a 60 s limit, with nothing to tell why) */
    if (st == AS_FIT_OK && round > 0 && isfinite(bound0) && res->nplans > 0 &&
        res->plans[0].gap > o->lim.gap)
        fprintf(fo->log, "%-13sthe bound is the first solve's, whose rows leave out resharded "
                "copies: it holds for every plan; the refit's rows (the copies of the plans "
                "tried, a lowered budget) bound only the plans that fit them, so no further "
                "solve raises it (docs/ilp.md, Memory)\n", "gap");
    as_problem_set_memory(p, budget);
    as_plan_free(&start);
    as_plan_free(&best.pl);
    return st;
}
