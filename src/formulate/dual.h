/* dual.h -- a lower bound, reduced costs and a good plan for a pairwise
 * choice problem without side rows (a min-sum Markov random field), by
 * sequential tree-reweighted message passing (TRW-S, Kolmogorov 2006) and
 * iterated conditional modes.
 *
 * The reductions (reduce.c) use it to remove strategies that cannot be in
 * any optimal plan: after message passing the objective is reparametrised
 * as sum_v t_v(s_v) + sum_e t_e(s_u, s_v) with the same value for every
 * plan, so LB = sum_v min t_v + sum_e min t_e bounds every plan from below
 * and every plan with s_x = p costs at least LB + (t_x(p) - min t_x).  A
 * strategy whose bound exceeds the cost of a known plan is never optimal.
 */
#ifndef AS_DUAL_H
#define AS_DUAL_H

#include <stddef.h>
#include <stdint.h>

/** A pairwise problem; every array is borrowed. */
typedef struct as_mrf {
    size_t n;                  /**< nodes */
    const size_t *k;           /**< strategies per node, >= 1 */
    const double *const *c;    /**< n cost vectors (k[v] entries) */
    size_t m;                  /**< edges */
    const size_t *eu, *ev;     /**< endpoints of each edge, eu[j] != ev[j] */
    const double *const *r;    /**< m matrices, k[eu] x k[ev] row-major */
} as_mrf;

/** What as_mrf_dual computes; free with as_mrf_result_free. */
typedef struct as_mrf_result {
    double lb;        /**< lower bound on every plan's cost */
    double ub;        /**< cost of plan */
    double **gap;     /**< n vectors: every plan with s_v = p costs >= lb + gap[v][p] */
    size_t *plan;     /**< the best plan found (n entries) */
    int iters;        /**< message-passing sweeps run */
    int stopped;      /**< 1: the run passed its stop time (as_mrf_state_set_stop) and gave up
                           mid-sweep: lb, gap and plan are not set (gap NULL) */
} as_mrf_result;

/**
 * Run at most MAX_ITERS forward+backward sweeps (stopping early when the
 * bound stalls or meets the plan), then improve the plan by ICM.
 * Deterministic.  Time O(iters * sum_e k_u k_v).
 */
void as_mrf_dual(const as_mrf *g, int max_iters, as_mrf_result *res);

/** Message-passing state kept between runs (warm start). */
typedef struct as_mrf_state as_mrf_state;
/** Start from zero messages on G, which must outlive the state. */
as_mrf_state *as_mrf_state_new(const as_mrf *g);
/** Like as_mrf_state_new, or NULL when STOP (an as_now() time; 0 = never) passes while it
    sorts the matrices' rows and columns into classes (a pass over every matrix). */
as_mrf_state *as_mrf_state_new_until(const as_mrf *g, double stop);
/** Runs give up as soon as STOP passes (an as_now() time; 0 = never, the default), even in
    the middle of a sweep, with res->stopped = 1: for a caller who has a plan of its own and
    no use for a late bound (the deadline, by contrast, ends a run after a whole sweep). */
void as_mrf_state_set_stop(as_mrf_state *st, double stop);
/** Runs stop after the sweep that passes DEADLINE (an as_now() time; 0 = never). */
void as_mrf_state_set_deadline(as_mrf_state *st, double deadline);
/** Past the deadline, a run still makes MIN_ITERS sweeps unless HARD (an as_now() time;
    0 = none) passes too: a bound after one sweep is far weaker than after ten
    (gpt3-1.3b 2x4x2: 6 % against 0.9 % under the plan) and ten cost a fraction of a second. */
void as_mrf_state_set_floor(as_mrf_state *st, int min_iters, double hard);
/** Edge E's message at its end SIDE (0: eu[E], 1: ev[E]; k of that end entries).  A
    caller may overwrite it, then call as_mrf_state_sync: every set of messages is a
    reparametrisation, so the bound stays valid (a warm start from an earlier run). */
double *as_mrf_state_msg(as_mrf_state *st, size_t e, int side);
/** The node costs G->c changed: take them up, keeping the messages. */
void as_mrf_state_sync(as_mrf_state *st);
/** Like as_mrf_dual, continuing from ST's messages (RES is overwritten). */
void as_mrf_state_run(as_mrf_state *st, int max_iters, as_mrf_result *res);
void as_mrf_state_free(as_mrf_state *st);
void as_mrf_result_free(as_mrf_result *res, size_t n);
/** Tests: nonzero makes the message passing use every matrix as it is, without its
    classes of identical rows and columns (the results are the same, bit for bit). */
extern int as_mrf_no_classes;

/** Cost of PLAN (n entries). */
double as_mrf_eval(const as_mrf *g, const size_t *plan);

/** A line's hash and its index: sorted by as_hidx_cmp (hash, then index), equal lines
    (rows or columns of a cost matrix) come together (dual.c, reduce.c's ILP size cap). */
typedef struct as_hidx {
    uint64_t h;
    size_t i;
} as_hidx;

/** qsort comparator of as_hidx: by hash, then by index. */
int as_hidx_cmp(const void *a, const void *b);

#endif /* AS_DUAL_H */
