/* solver_mcts.c -- Monte Carlo tree search over the strategy choices
 * (PartIR / automap style).
 *
 * One decision per unit (a node with its followers, heur.h), taken in order
 * of how much the unit's choice can move the objective, largest first.  An
 * episode walks down the tree by UCT (mean reward + C * sqrt(ln N / n)),
 * adds one child (an untried strategy, picked at random), completes the plan
 * greedily (every undecided unit, in topological order on even episodes and
 * from the graph's end on odd ones, takes its cheapest
 * strategy against the units assigned so far; with probability EPS a random
 * one) and scores it: reward = REF / objective, REF being the first plan's
 * objective; a plan that breaks the memory budget is repaired (the cheapest
 * bytes off its highest point, as_hls_repair), else completed again with
 * the least memory first, and scores 0 if it still does not fit.  The best
 * plan seen is returned.  Stops after EPISODES episodes or at the time
 * limit; one seed gives one plan (when the time limit does not cut it: when it
 * does, as_assignment.timed says so and the driver says it on stderr).
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solve/heur.h"
#include "solve/solver.h"

#define SOLVER_NAME "mcts"
#define SOLVER_DESC "Monte Carlo tree search, one decision per op group, greedy rollouts"
#define UNSET ((size_t)-1)
#define MAX_EPISODES 1e9
#define AUTO_UNITS 1000 /* polish every rollout up to this many units */
#define NEAR_PAIRS 0.02 /* under a budget, pair moves for rollouts within 2 % of the best */
#define POLISH_OVER 1.5 /* rollouts more than this many times over the budget: no polish */

struct as_solver_data {
    double episodes; /**< "mcts/episodes", default 1000 */
    double c;        /**< "mcts/c": UCT exploration constant, default 0.2 */
    double eps;      /**< "mcts/eps": random choice in rollouts, default 0.02 */
    int polish;      /**< "mcts/polish": 0 never; 1 plans better than any before (single
                          and pair moves); 2 also every rollout (single moves); default
                          (-1) 2 up to AUTO_UNITS units, else 1 */
    int order;       /**< "mcts/order": rollouts complete the units in topological order
                          (0, "fwd", default) or from the graph's end (1, "rev") */
    int start;       /**< "mcts/start": the first incumbent: beam's plan with beam/seed=bound
                          ("bound", 2, default: the better of beam's own and the start
                          plan the driver gives, the bound pruning's, polished; the output
                          says which won), beam's own ("beam", 1: beam/seed=none) or none
                          ("none", 0: the first rollout's plan) */
    int pairs;       /**< "mcts/pairs" 0/1: polish every rollout with pair moves too (1), or
                          only the rollouts better than any before (0); default (-1) 0,
                          and under a budget also the rollouts within NEAR_PAIRS of the best
                          (pair moves of every rollout made an episode 1.4-1.8 ms on 2-D
                          meshes, for the same plans; under a budget they were on for every
                          rollout until the search started from beam K=1's plan) */
    int swidth;      /**< "mcts/start-width": the width of the beam whose plan is the first
                          incumbent (mcts/start=beam), default 10 (under their budgets on the
                          copies-within-a-pass model, bert-large 8 and gpt3-13b 2x4, MCTS
                          1k returned beam K=1's plan, 7.5 % and 2.0 % over beam K=10's) */
    int repair;      /**< "mcts/repair" 0/1: a rollout over the budget is repaired where it
                          is (as_hls_repair: the cheapest bytes off the highest point, then
                          single moves) before it is completed again with the least memory
                          first; default 1 (without it, under bert-large 8's budget every
                          rollout fell back to least memory and MCTS returned beam K=1's
                          plan, +5.5 % over the ILP's) */
};

static AS_DECL_SOLVER_NEW(mcts_new)
{
    *data = as_xcalloc(1, sizeof **data);
    (*data)->episodes = 1000;
    (*data)->c = 0.2;
    (*data)->eps = 0.02;
    (*data)->polish = -1;
    (*data)->order = 0;
    (*data)->pairs = -1;
    (*data)->start = 2;
    (*data)->repair = 1;
    (*data)->swidth = 10;
    return AS_OK;
}

static AS_DECL_SOLVER_FREE(mcts_free)
{
    free(data);
}

static AS_DECL_SOLVER_PARAM(mcts_param)
{
    char *end;
    double x = strtod(value, &end);
    int bad = end == value || *end != '\0' || !isfinite(x);

    if (strcmp(key, "episodes") == 0) {
        if (bad || x < 1 || x > MAX_EPISODES || x != floor(x))
            return as_errf(err, AS_EUSAGE, "episodes must be an integer in 1..%.0f, got '%s'",
                           MAX_EPISODES, value);
        data->episodes = x;
    } else if (strcmp(key, "c") == 0) {
        if (bad || x < 0)
            return as_errf(err, AS_EUSAGE, "parameter 'mcts/c' must be a number >= 0");
        data->c = x;
    } else if (strcmp(key, "polish") == 0) {
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0 && strcmp(value, "2") != 0)
            return as_errf(err, AS_EUSAGE, "parameter 'mcts/polish' must be 0, 1 or 2");
        data->polish = value[0] - '0';
    } else if (strcmp(key, "order") == 0) {
        if (strcmp(value, "fwd") != 0 && strcmp(value, "rev") != 0)
            return as_errf(err, AS_EUSAGE, "parameter 'mcts/order' must be fwd or rev");
        data->order = value[0] == 'r';
    } else if (strcmp(key, "pairs") == 0) {
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
            return as_errf(err, AS_EUSAGE, "parameter 'mcts/pairs' must be 0 or 1");
        data->pairs = value[0] == '1';
    } else if (strcmp(key, "start") == 0) {
        if (strcmp(value, "beam") != 0 && strcmp(value, "none") != 0 &&
            strcmp(value, "bound") != 0)
            return as_errf(err, AS_EUSAGE, "parameter 'mcts/start' must be beam, bound or none");
        data->start = strcmp(value, "beam") == 0 ? 1 : strcmp(value, "bound") == 0 ? 2 : 0;
    } else if (strcmp(key, "start-width") == 0) {
        if (bad || x < 1 || x > 1000 || x != floor(x))
            return as_errf(err, AS_EUSAGE, "parameter 'mcts/start-width' must be an integer in 1..1000");
        data->swidth = (int)x;
    } else if (strcmp(key, "repair") == 0) {
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
            return as_errf(err, AS_EUSAGE, "parameter 'mcts/repair' must be 0 or 1");
        data->repair = value[0] == '1';
    } else if (strcmp(key, "eps") == 0) {
        if (bad || x < 0 || x > 1)
            return as_errf(err, AS_EUSAGE, "parameter 'mcts/eps' must be in 0..1");
        data->eps = x;
    } else {
        return as_errf(err, AS_EUSAGE, "unknown parameter '%s/%s'", SOLVER_NAME, key);
    }
    return AS_OK;
}

/* A tree node: the decision at depth d (group dec[d]) and its children. */
typedef struct tnode {
    double n, w;     /**< visits, summed reward */
    size_t child;    /**< first of k slots in the child pool (index + 1, 0 = not tried) */
    uint32_t tried;  /**< children added */
} tnode;

typedef struct mcts {
    const as_heur *h;
    const as_problem *p;
    size_t *dec;      /**< depth -> group */
    size_t **sorder;  /**< unit -> its allowed strategies */
    size_t *nallow;   /**< unit -> how many */
    size_t ng;        /**< decision groups */
    size_t *gstart, *gmem; /**< members of group g: gmem[gstart[g] .. gstart[g+1]) */
    size_t **gallow;  /**< group -> strategies every member allows */
    size_t *gn;       /**< group -> how many */
    tnode *t;
    size_t nt, tcap;
    size_t *pool;     /**< child slots */
    size_t npool, pcap;
    as_rng rng;
    const as_heur *hr; /**< the units numbered the other way, or NULL */
    size_t *xr;        /**< nu: scratch for rollouts on hr */
} mcts;

static int
share_cmp(const void *a, const void *b, void *ctx)
{
    const double *sh = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (sh[x] != sh[y])
        return sh[x] > sh[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Insertion-free stable sort of units by share (qsort_r is not portable). */
static void
sort_by_share(size_t *v, size_t n, const double *sh)
{
    size_t w, i, j, *tmp = as_xcalloc(n + 1, sizeof *tmp);

    /* bottom-up merge sort */
    for (w = 1; w < n; w *= 2) {
        for (i = 0; i < n; i += 2 * w) {
            size_t a = i, am = i + w < n ? i + w : n, b = am, bm = i + 2 * w < n ? i + 2 * w : n;
            for (j = i; j < bm; j++)
                tmp[j] = (a < am && (b >= bm || share_cmp(&v[a], &v[b], (void *)sh) <= 0))
                             ? v[a++] : v[b++];
        }
        memcpy(v, tmp, n * sizeof *v);
    }
    free(tmp);
}

static size_t
tree_add(mcts *m, size_t depth)
{
    size_t id, k = depth < m->ng ? m->gn[m->dec[depth]] : 0;

    if (m->nt == m->tcap) {
        m->tcap = m->tcap ? 2 * m->tcap : 1024;
        m->t = as_xreallocarray(m->t, m->tcap, sizeof *m->t);
    }
    if (m->npool + k > m->pcap) {
        while (m->npool + k > m->pcap)
            m->pcap = m->pcap ? 2 * m->pcap : 4096;
        m->pool = as_xreallocarray(m->pool, m->pcap, sizeof *m->pool);
    }
    id = m->nt++;
    memset(&m->t[id], 0, sizeof m->t[id]);
    m->t[id].child = m->npool;
    memset(m->pool + m->npool, 0, k * sizeof *m->pool);
    m->npool += k;
    return id;
}

/* Complete X greedily; with probability EPS an undecided unit takes a random strategy. */
static void
rollout(mcts *m, size_t *x, double eps, double lambda, int back)
{
    const as_heur *h = m->h;
    size_t u, nu = h->nu;

    if (eps > 0)
        for (u = 0; u < nu; u++)
            if (x[u] == UNSET && m->nallow[u] > 0 && as_rng_uniform(&m->rng) < eps)
                x[u] = m->sorder[u][as_rng_range(&m->rng, 0, (int64_t)m->nallow[u] - 1)];
    if (!back || m->hr == NULL) {
        as_heur_greedy(h, x, lambda);
        return;
    }
    /* the same units numbered the other way: unit u is unit nu - 1 - u there */
    for (u = 0; u < nu; u++)
        m->xr[nu - 1 - u] = x[u];
    as_heur_greedy(m->hr, m->xr, lambda);
    for (u = 0; u < nu; u++)
        x[u] = m->xr[nu - 1 - u];
}

/*
 * Decision groups: one unit each.  (Tying by name, h.3.x with h.7.x, was tried and
 * dropped: an MLP's layers alternate column and row in the best plan, so same-named ops
 * of different layers must be free to differ; tied layers come from the problem.)
 */
static void
build_groups(mcts *m)
{
    const as_heur *h = m->h;
    size_t u, s, nu = h->nu;

    m->ng = nu;
    m->gstart = as_xcalloc(nu + 2, sizeof *m->gstart);
    m->gmem = as_xcalloc(nu + 1, sizeof *m->gmem);
    m->gallow = as_xcalloc(nu + 1, sizeof *m->gallow);
    m->gn = as_xcalloc(nu + 1, sizeof *m->gn);
    for (u = 0; u < nu; u++) {
        m->gstart[u + 1] = u + 1;
        m->gmem[u] = u;
        m->gallow[u] = as_xcalloc(h->k[u] + 1, sizeof **m->gallow);
        for (s = 0; s < h->k[u]; s++)
            if (isfinite(h->cost[u][s]))
                m->gallow[u][m->gn[u]++] = s;
    }
}

static void
set_group(const mcts *m, size_t *x, size_t g, size_t s)
{
    size_t i;

    for (i = m->gstart[g]; i < m->gstart[g + 1]; i++)
        x[m->gmem[i]] = s;
}

/* Polish X in place with the local search *Q (made at the first call): single moves, pair
   moves too if PAIRS, then CHAINS rounds of chain moves. */
static void
polish(const as_heur *h, as_hls **q, size_t *x, int chains, int pairs)
{
    if (*q == NULL)
        *q = as_hls_new(h, x);
    else
        as_hls_set(*q, x);
    as_hls_improve(*q, 20, pairs);
    if (chains > 0)
        as_hls_chain(*q, chains);
    memcpy(x, as_hls_x(*q), h->nu * sizeof *x);
}

/* CPU seconds of the process (the episode loop's own time, as_assignment.loop_cpu_s). */
static double
cpu_now(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/*
 * The first incumbent: beam's plan (width mcts/start-width) (solver_beam.c, run through the driver, which
 * checks it; under the caller's fits check beam returns the cheapest plan that passes),
 * with at most half the time limit; with BOUND (mcts/start=bound, the default) beam also
 * gets LIM's start plan (the driver's: the bound pruning's) and says whose plan won
 * (beam/seed=bound; unless -q).  Its plan into CHOICE and its objective into *OBJ; 0 if
 * it found none.  *TIMED: 1 if beam's half of the time limit (a safety stop: beam's work is
 * counted, its width and ladder) cut it.
 */
static int
beam_seed(const as_problem *p, const as_limits *lim, int width, int bound, size_t *choice,
          double *obj, int *from_start, int *timed)
{
    char wp[32];
    const char *params[2] = {NULL, bound ? "beam/seed=bound" : "beam/seed=none"};
    as_limits bl = *lim;
    as_assignment a;
    as_outcome oc = AS_OUTCOME_LIMIT;
    as_err e = {0};
    int ok = 0, rc;

    snprintf(wp, sizeof wp, "beam/width=%d", width);
    params[0] = wp;
    bl.start = bound ? lim->start : NULL; /* the driver's: the bound pruning's plan */
    if (lim->time_limit_s > 0)
        bl.time_limit_s = 0.5 * lim->time_limit_s;
    rc = as_solve(&as_solver_beam, p, &bl, params, 2, &a, &oc, &e);
    if (rc == AS_OK)
        *timed = a.timed;
    if (rc == AS_OK && (oc == AS_OUTCOME_OPTIMAL || oc == AS_OUTCOME_FEASIBLE) &&
        isfinite(a.objective)) {
        memcpy(choice, a.choice, as_problem_nnodes(p) * sizeof *choice);
        *obj = a.objective;
        *from_start = a.from_start;
        ok = 1;
    }
    as_assignment_free(&a);
    return ok;
}

static AS_DECL_SOLVER_SOLVE(mcts_solve)
{
    as_heur h, hr, hfree;
    mcts m;
    size_t u, s, d, ep, *x, *xd, *ownx, *path, *choice;
    size_t nepi = (size_t)data->episodes;
    double ref = 0, bestraw = INFINITY, t0 = as_now(), *gshare, obj, val, off = 0;
    double seedobj = INFINITY, ownobj = INFINITY; /* beam's start; the search's own best */
    as_keeper kp; /* the best plan; under the caller's fits check, the best that passes */
    double *tot;
    int pol, pairs, seeded = 0, seed_from_start = 0; /* beam's plan is the driver's start */
    int beam_timed = 0;  /* the time limit cut the start beam */
    int over;            /* the rollout as completed is far over the budget (POLISH_OVER) */
    double cpu0;         /* CPU time at the first episode */
    /* the local search, carried from rollout to rollout: one per rollout order (forward on
       even episodes, from the end on odd ones) and per kind (cheapest first, or least
       memory first for a rollout over the budget), so that a rollout moves it only where
       it differs from the last of its kind (one search for all: most of the units moved
       every episode; bert-large 2x4 under a budget, 1.8 ms an episode) */
    as_hls *qs[4] = {NULL, NULL, NULL, NULL}, **qp;

    as_heur_init_ex(&h, p, data->order);
    as_heur_init_ex(&hr, p, !data->order);
    hfree = h;
    hfree.cap = INFINITY; /* h's view without the budget (the repair's gate) */
    h.deadline = hr.deadline = lim->time_limit_s > 0 ? t0 + lim->time_limit_s : 0;
    memset(&m, 0, sizeof m);
    m.h = &h;
    m.hr = &hr;
    m.xr = as_xcalloc(h.nu + 1, sizeof *m.xr);
    m.p = p;
    as_rng_seed(&m.rng, lim->seed);
    m.sorder = as_xcalloc(h.nu + 1, sizeof *m.sorder);
    m.nallow = as_xcalloc(h.nu + 1, sizeof *m.nallow);
    for (u = 0; u < h.nu; u++) {
        m.sorder[u] = as_xcalloc(h.k[u] + 1, sizeof **m.sorder);
        for (s = 0; s < h.k[u]; s++)
            if (isfinite(h.cost[u][s]))
                m.sorder[u][m.nallow[u]++] = s;
    }
    build_groups(&m);
    m.dec = as_xcalloc(m.ng + 1, sizeof *m.dec);
    gshare = as_xcalloc(m.ng + 1, sizeof *gshare);
    for (d = 0; d < m.ng; d++) {
        m.dec[d] = d;
        for (u = m.gstart[d]; u < m.gstart[d + 1]; u++)
            gshare[d] += h.share[m.gmem[u]];
    }
    sort_by_share(m.dec, m.ng, gshare);
    x = as_xcalloc(h.nu + 1, sizeof *x);
    xd = as_xcalloc(h.nu + 1, sizeof *xd);
    ownx = as_xcalloc(h.nu + 1, sizeof *ownx);
    path = as_xcalloc(m.ng + 2, sizeof *path);
    choice = as_xcalloc(h.n + 1, sizeof *choice);
    pol = data->polish >= 0 ? data->polish : h.nu <= AUTO_UNITS ? 2 : 1;
    pairs = data->pairs > 0;
    as_keeper_init(&kp, h.n);
    tot = as_xcalloc(h.nbind + 1, sizeof *tot);
    tree_add(&m, 0);
    if (data->start &&
        beam_seed(p, lim, data->swidth, data->start == 2, choice, &obj, &seed_from_start,
                  &beam_timed)) {
        /* beam's plan is the first incumbent (the answer unless the search finds a
           cheaper plan); the search itself is as without it: the reward's reference is the
           first rollout's objective, and a rollout is polished further (pair, chain, block
           moves) when it beats every rollout before (not the incumbent, a polished plan
           few raw rollouts would beat) */
        for (u = 0; u < h.n; u++)
            x[h.unit[u]] = choice[u];
        val = as_heur_eval(&h, x, tot);
        if (isfinite(val) && as_keeper_offer(&kp, lim, choice, obj) > 0) {
            off = obj - val;
            seeded = 1;
            seedobj = kp.obj;
        }
    }
    cpu0 = cpu_now();
    for (ep = 0; ep < nepi; ep++) {
        size_t node = 0, np = 0;
        double r;
        if (lim->time_limit_s > 0 && ep > 0 && as_now() - t0 > lim->time_limit_s)
            break;
        for (u = 0; u < h.nu; u++)
            x[u] = UNSET;
        path[np++] = 0;
        for (d = 0; d < m.ng; d++) {
            tnode *tn = &m.t[node];
            size_t un = m.dec[d], k = m.gn[un], pick = 0, c;
            if (k == 0)
                break; /* every strategy forbidden: the rollout scores 0 */
            if (tn->tried < k) { /* add an untried child, chosen at random */
                size_t r0 = (size_t)as_rng_range(&m.rng, 0, (int64_t)(k - tn->tried) - 1), i;
                for (i = 0; i < k; i++)
                    if (m.pool[tn->child + i] == 0 && r0-- == 0)
                        break;
                c = tree_add(&m, d + 1);
                tn = &m.t[node]; /* the tree may have moved */
                m.pool[tn->child + i] = c + 1;
                tn->tried++;
                set_group(&m, x, un, m.gallow[un][i]);
                path[np++] = c;
                node = c;
                d++;
                break;
            }
            {
                double bv = -INFINITY, lg = log(tn->n > 1 ? tn->n : 1);
                size_t i;
                for (i = 0; i < k; i++) {
                    const tnode *ch = &m.t[m.pool[tn->child + i] - 1];
                    double v = ch->w / ch->n + data->c * sqrt(lg / ch->n);
                    if (v > bv) {
                        bv = v;
                        pick = i;
                    }
                }
            }
            set_group(&m, x, un, m.gallow[un][pick]);
            node = m.pool[tn->child + pick] - 1;
            path[np++] = node;
        }
        memcpy(xd, x, h.nu * sizeof *x); /* the decisions of this episode */
        rollout(&m, x, ep == 0 ? 0 : data->eps, 0, (int)(ep & 1));
        qp = &qs[ep & 1];
        /* a rollout far over the budget as completed is not polished: the polish's moves
           only take bytes off the points over the budget, never enough there, so the plan
           stays over and is completed again below, the polish wasted (t5-base 2x4 under
           its budget, 1k episodes: of 518 rollouts over the budget, the polish brought 14
           within it, all at most 1.26 times over; the other 504 stayed over, 500 of them
           2 times over or more; bert-large 2x8: 500 of 1000 rollouts stayed over, the
           polish of each wasted about 0.8 ms CPU on a loaded machine) */
        over = h.nbind > 0 && as_heur_peak(&h, x, tot) > POLISH_OVER * h.cap;
        if (pol == 2 && !over)
            polish(&h, qp, x, 0, pairs);
        val = over ? INFINITY : as_heur_eval(&h, x, tot);
        if (pol == 2 && !pairs && data->pairs < 0 && h.nbind > 0 && isfinite(val) &&
            val < bestraw * (1 + NEAR_PAIRS)) {
            /* under a budget, a rollout near the best gets pair moves too (single moves
               alone are stuck more often there: two units trade memory) */
            as_hls_improve(*qp, 20, 1);
            memcpy(x, as_hls_x(*qp), h.nu * sizeof *x);
            val = as_heur_eval(&h, x, tot);
        }
        if (!isfinite(val) && h.nbind > 0 && data->repair &&
            (isinf(kp.obj) || as_heur_eval(&hfree, x, tot) + off < kp.obj)) {
            /* over the budget: repaired where it is, incrementally in the local search
               (a step is one pass over the units' memory runs), then settled -- only if
               the plan without the budget beats the best plan (a repair makes it dearer:
               repairing every rollout cost bert-large 2x8 ~1.7 ms CPU an episode) */
            if (*qp == NULL)
                *qp = as_hls_new(&h, x);
            else
                as_hls_set(*qp, x);
            if (as_hls_repair(*qp, 4 * (int)h.nu + 16)) {
                if (pol == 2)
                    as_hls_improve(*qp, 20, 0);
                memcpy(x, as_hls_x(*qp), h.nu * sizeof *x);
                val = as_heur_eval(&h, x, tot);
            }
        }
        if (!isfinite(val)) {
            /* over the budget (or excluded): the undecided units take the least memory */
            memcpy(x, xd, h.nu * sizeof *x);
            rollout(&m, x, 0, INFINITY, (int)(ep & 1));
            qp = &qs[2 + (ep & 1)];
            if (pol == 2)
                polish(&h, qp, x, 0, pairs);
            val = as_heur_eval(&h, x, tot);
        }
        r = 0;
        obj = INFINITY;
        if (isfinite(val) && (isinf(bestraw) || val < bestraw - 1e-12 * fabs(bestraw))) {
            /* better than any rollout before: polish (pair moves too) and check it on
               the problem itself, which alone decides what becomes the plan */
            bestraw = val;
            if (pol > 0) {
                double pv;
                polish(&h, qp, x, 3, 1);
                /* still the best plan after polishing: block moves too (whole attention
                   or MLP blocks re-solved with the rest fixed) */
                pv = as_heur_eval(&h, x, tot);
                if (isfinite(pv) && (isinf(kp.obj) || pv + off < kp.obj - 1e-12 * fabs(kp.obj)) &&
                    as_hls_block(*qp, AS_HEUR_BLOCK_UNITS, 1,
                                 lim->time_limit_s > 0 ? t0 + lim->time_limit_s : 0)) {
                    as_hls_chain(*qp, 3);
                    memcpy(x, as_hls_x(*qp), h.nu * sizeof *x);
                }
            }
            as_heur_expand(&h, x, choice);
            if (as_problem_check(p, choice, &obj, NULL, NULL) != AS_OK)
                obj = INFINITY;
            else
                off = obj - as_heur_eval(&h, x, tot);
            if (isfinite(obj) && obj < ownobj) {
                ownobj = obj; /* the search's own best, the incumbent aside */
                memcpy(ownx, x, h.nu * sizeof *x);
            }
            if (isfinite(obj) && as_keeper_offer(&kp, lim, choice, obj) < 0)
                obj = INFINITY; /* over the caller's check: no reward */
        } else if (isfinite(val)) {
            obj = val + off;
            if (lim->fits != NULL && as_keeper_failed(&kp, obj)) {
                obj = INFINITY; /* the plan that failed the check, most likely: no reward */
            } else if (lim->fits != NULL && obj < kp.obj * (1 - 1e-12) &&
                       kp.checks < 4 + (long)(ep / 100)) {
                /* the best rollouts so far fail the caller's check (resharded copies): a
                   dearer one that beats the best that passes is checked too, a few times
                   every hundred episodes (the check simulates the plan) */
                as_heur_expand(&h, x, choice);
                if (as_problem_check(p, choice, &obj, NULL, NULL) != AS_OK ||
                    as_keeper_offer(&kp, lim, choice, obj) < 0)
                    obj = INFINITY;
            }
        }
        if (isfinite(obj)) {
            if (ref == 0)
                ref = fmax(obj, 1e-300);
            r = ref / fmax(obj, 1e-300);
        }
        for (u = 0; u < np; u++) {
            m.t[path[u]].n += 1;
            m.t[path[u]].w += r;
        }
    }
    out->nodes = (long)ep;
    out->loop_cpu_s = cpu_now() - cpu0;
    if (lim->verbosity > 1 && ep > 0)
        as_info("mcts: %zu episodes in %.3f s CPU: %.3f ms an episode, %.0f a second", ep,
                out->loop_cpu_s, 1e3 * out->loop_cpu_s / (double)ep,
                out->loop_cpu_s > 0 ? (double)ep / out->loop_cpu_s : 0.0);
    if (isfinite(kp.obj) && pol > 0 && (!(seeded && kp.obj == seedobj) || isfinite(ownobj))) {
        /* the best plan, polished with pair, chain and block moves -- or, when the best is
           still beam's start (which beam polished so already), the search's own best */
        if (seeded && kp.obj == seedobj)
            memcpy(x, ownx, h.nu * sizeof *x);
        else
            for (u = 0; u < h.n; u++)
                x[h.unit[u]] = kp.best[u];
        as_heur_improve(&h, x, 50);
        as_heur_chain(&h, x, 10);
        /* and block, relabel and axis-map moves: whole attention or MLP blocks re-solved
           with the rest fixed, a strategy name or the mesh axes changed everywhere */
        as_heur_polish_blocks(&h, x, lim->time_limit_s > 0 ? t0 + lim->time_limit_s : 0, &qs[0]);
        as_heur_expand(&h, x, choice);
        if (as_problem_check(p, choice, &obj, NULL, NULL) == AS_OK)
            as_keeper_offer(&kp, lim, choice, obj);
    }
    /* the best plan; when none passes the caller's check, the cheapest the rows let through
       (the caller sees why it does not fit) */
    out->objective = as_keeper_answer(&kp, out->choice);
    out->from_start = seeded && kp.obj == seedobj && seed_from_start;
    if (seeded && lim->verbosity > 0) {
        if (kp.obj == seedobj)
            as_info("mcts: the plan is its start, beam's (beam/width=%d%s): %.9g s; the "
                    "search's own best: %.9g s (before tied layers are settled)", data->swidth,
                    data->start == 2 ? ", with the start above" : ", seed=none", seedobj,
                    ownobj);
        else
            as_info("mcts: the plan is the search's own, %.9g s; its start, beam's: %.9g s "
                    "(before tied layers are settled)", kp.obj, seedobj);
    }
    /* every stop the clock makes (the episodes, the start beam's half, the local searches'
       and the polish's deadlines) is checked against t0 + the limit: past it at the end, one
       of them may have cut the search (before it, none did) */
    out->timed = beam_timed || (lim->time_limit_s > 0 && as_now() - t0 > lim->time_limit_s);
    if (isfinite(out->objective)) {
        *outcome = AS_OUTCOME_FEASIBLE;
    } else {
        *outcome = AS_OUTCOME_LIMIT;
    }
    for (u = 0; u < h.nu; u++)
        free(m.sorder[u]);
    free(m.sorder);
    free(m.nallow);
    for (u = 0; u < m.ng; u++)
        free(m.gallow[u]);
    free(m.gallow);
    free(m.gn);
    free(m.gstart);
    free(m.gmem);
    free(gshare);
    free(xd);
    free(ownx);
    free(m.dec);
    free(m.t);
    free(m.pool);
    free(x);
    free(path);
    free(choice);
    free(tot);
    as_keeper_free(&kp);
    free(m.xr);
    for (u = 0; u < 4; u++)
        as_hls_free(qs[u]);
    as_heur_free(&hr);
    as_heur_free(&h);
    return AS_OK;
}

const as_solver_ops as_solver_mcts = {
    .name = SOLVER_NAME,
    .desc = SOLVER_DESC,
    .flags = AS_SOLVER_SEEDED,
    .new_data = mcts_new,
    .free_data = mcts_free,
    .set_param = mcts_param,
    .solve = mcts_solve,
};
