/* fit.h -- solving under a budget until the plan fits by the memory model.
 *
 * The ILP's memory rows do not hold a plan's resharded copies (a copy's
 * bytes depend on both endpoints' strategies): a plan that fits the rows can
 * exceed the budget once lowered.  as_solve_fit checks every plan with the
 * caller's peak (the simulator's, through a callback: solve does not depend
 * on sim), adds the plan's copies to the rows (as_build_add_copies) or
 * tightens them, and solves again.  Each refit round starts from a plan that
 * fits the new rows: the previous plan repaired (as_fit_repair) and checked
 * with the peak callback, so the round ends with a plan that fits even when
 * the solver reaches its limit first; the best plan that fits so far is
 * what is returned when the time runs out.
 */
#ifndef AS_FIT_H
#define AS_FIT_H

#include <stdio.h>

#include "formulate/build.h"
#include "solve/solver.h"

/** Peak bytes per device of plan PL (of the problem solved) by the memory model. */
typedef int (*as_fit_peak_fn)(void *ud, const as_plan *pl, double *peak, as_err *err);

typedef struct as_fit_opts {
    as_fit_peak_fn peak; /**< required */
    void *ud;
    double t0;           /**< as_now() at which the limit (o->lim.time_limit_s) started */
    FILE *log;           /**< one "refit" line per round */
    FILE *errfp;         /**< why no plan is returned */
    int close_gap;       /**< 1: once the first plan fits (by the model) with a gap and time
                              is left under the limit, solve again from it for its gap (a
                              cheaper plan that fits replaces it; the bound is raised) */
} as_fit_opts;

typedef enum as_fit_status {
    AS_FIT_OK = 0,  /**< RES's first plan fits by the memory model (or there is no budget, or
                         the plan does not lower: *ROWS is then -1 and a warning was printed) */
    AS_FIT_INFEAS,  /**< no plan fits (said on errfp; RES freed) */
    AS_FIT_LIMIT,   /**< out of time before a plan that fits (said on errfp; RES freed) */
    AS_FIT_ERROR    /**< ERR set */
} as_fit_status;

/**
 * RES holds the first solve of P (with O, under P's budget).  Give every
 * plan its peak by FO->peak; while the first does not fit the budget, add
 * its resharded copies to P's rows (the first rounds) or lower the rows'
 * budget, and solve again from the repaired plan.  *ROWS gets the first
 * plan's peak by the rows.  P's budget is restored on return.
 */
as_fit_status as_solve_fit(as_build_map *map, as_problem *p, const as_solve_opts *o,
                           const as_fit_opts *fo, as_solve_result *res, double *rows,
                           as_err *err);

/**
 * Greedy repair of plan CHOICE of P (follow links respected) until it fits
 * P's rows: each step moves one node and its followers to the strategy
 * that removes the most bytes above the budget, summed over the rows, per
 * second of cost it adds (a consumer moved to the layout its producer gives
 * drops the copy's bytes from the rows as_build_add_copies adds).  Stops at
 * DEADLINE (as_now(), 0 = none).  1 if CHOICE fits every row of P after,
 * else 0 (CHOICE is then the best reached).
 */
int as_fit_repair(const as_problem *p, size_t *choice, double deadline);

#endif /* AS_FIT_H */
