/* recompute_search.h -- which layers `solve --recompute auto` recomputes:
 * the search over k, the number of leading layers (program order) that are
 * recomputed fully, of the step that fits the memory budget at the least
 * objective (docs/solve.md "--recompute auto").
 *
 * The search does not build or solve anything itself: the caller evaluates a
 * candidate k (rewrites the step, builds and solves its ILP, checks the plan's
 * memory by the simulator) through callbacks, so this layer stays below the
 * command line and the simulator.  k = 0 is solved first.  When it fits and
 * the budget does not bind (its plan is as fast as with no budget), that is
 * the answer.  When it fits and the budget binds, k = L, L-1, ... 1 are
 * solved (recomputing may free memory for faster layouts) and the least
 * objective kept, the scan stopping at a k that does not fit.  When it does
 * not fit, the fewest layers that fit are found by bisection between 0 and
 * L (about log2 L solves instead of L): recomputing fewer layers only holds
 * more memory, and each recomputed layer adds its forward time to the
 * objective, so the fewest that fit are the fastest (the objectives tried
 * are reported, and the least of them kept, so a case where this does not
 * hold is visible).  A candidate stopped by the time limit ends the search
 * with the best plan found before it, if there is one.
 */
#ifndef AS_RECOMPUTE_SEARCH_H
#define AS_RECOMPUTE_SEARCH_H

#include "autoshard.h"

/** Callbacks of the search; UD is passed through. */
typedef struct as_recomp_ops {
    /** Solve the step with the first K layers recomputed: *FITS (a plan that fits the
        budget) and *OBJECTIVE (its objective, seconds).  The candidate stays pending
        until keep or drop.  An error ends the search. */
    int (*try_k)(void *ud, int k, int *fits, double *objective, as_err *err);
    /** The pending candidate becomes the best one (the previous best is dropped). */
    void (*keep)(void *ud);
    /** The pending candidate is dropped. */
    void (*drop)(void *ud);
    /** *UNBOUND = 1 when the best candidate (k = 0) is as fast as the plan of the same
        step with no budget at all (the budget does not bind). */
    int (*unbound)(void *ud, int *unbound, as_err *err);
} as_recomp_ops;

typedef struct as_recomp_result {
    int best;       /**< k of the plan kept, -1 when no candidate fits */
    int tried;      /**< candidates solved */
    int timed_out;  /**< the time limit stopped the search (best: the best before it) */
    char *log;      /**< "0: no fit, 2: 0.00296 s, 1: 0.00277 s" in the order tried (malloc'd) */
} as_recomp_result;

/**
 * Search k in 0..NL as described above.  TIME_LIMIT_S > 0 (seconds since T0):
 * a candidate that fails once the limit has passed ends the search instead of
 * failing it, when a candidate fitted before.  Returns AS_OK, or the error of a
 * candidate (OUT->log still set).  Free OUT->log with free().
 */
int as_recompute_search(int nl, const as_recomp_ops *ops, void *ud, double time_limit_s,
                        double t0, as_recomp_result *out, as_err *err);

#endif
