/* solver.h -- one interface for every search backend (SCIP's plugin style).
 *
 * A backend turns an as_problem (formulate/problem.h) into an assignment:
 * one strategy per node.  ILP backends (glpk, cbc) lower it with
 * as_ilp_build(); brute enumerates.  The driver as_solve() applies
 * namespaced parameters, times the call and validates what comes back; the
 * top-level as_solve_problem() adds reductions, k-best no-good cuts,
 * recovery of eliminated choices and a final check against the original
 * problem.  Error codes (as_status) are kept apart from outcomes.
 * Arrays in results are malloc'ed and released by the matching *_free.
 */
#ifndef AS_SOLVER_H
#define AS_SOLVER_H

#include <stdint.h>
#include <stdio.h>

#include "autoshard.h"
#include "formulate/ilp.h"
#include "formulate/problem.h"

typedef enum as_outcome {
    AS_OUTCOME_NOTRUN = 0, /**< did not run (zero limit, unsupported size) */
    AS_OUTCOME_OPTIMAL,    /**< proven optimal (exact backends only) */
    AS_OUTCOME_FEASIBLE,   /**< plan found, optimality not proven */
    AS_OUTCOME_INFEASIBLE, /**< proven: no plan fits the memory caps */
    AS_OUTCOME_LIMIT       /**< stopped by a limit without a plan */
} as_outcome;

/** "optimal", "feasible", ... */
const char *as_outcome_name(as_outcome o);
/** Relative gap (OBJ - BOUND) / |OBJ| of a plan costing OBJ above a lower BOUND. */
double as_rel_gap(double obj, double bound);

/** Limits every backend honours (as far as it can). */
typedef struct as_limits {
    double time_limit_s; /**< seconds, 0 = no limit */
    double gap;          /**< relative MIP gap at which to stop, 0 = prove optimality */
    int threads;         /**< 0 = backend default */
    uint64_t seed;       /**< for seeded backends */
    int verbosity;       /**< 0 quiet, 1 normal, 2 backend log on stderr */
    const size_t *start; /**< a plan of the problem solved (one strategy per node) for the
                              backend to start from as its incumbent, or NULL */
    /**
     * The caller's check of a plan (CHOICE: one strategy per node of the problem given to
     * as_solve_problem; as_solve sees it on the problem it solves) against what the rows
     * cannot see: `solve` passes the simulator's peak memory (resharded copies, partial
     * sums) against the budget.  1: fits; 0: not.  NULL: the rows decide.  The heuristics
     * (beam, mcts) call it on the plans that would become their answer and return the
     * cheapest that passes, else the cheapest that passes the rows (as_limits_fits);
     * as_solve_problem returns the cheapest that failed it too (as_solve_result.over).
     */
    int (*fits)(void *ud, const size_t *choice);
    void *fits_ud;
} as_limits;

/** LIM's fits check of CHOICE (1 without one). */
int as_limits_fits(const as_limits *lim, const size_t *choice);

/**
 * A heuristic's answer under a fits check: the cheapest plan offered that passes it
 * (BEST, OBJ) and the cheapest offered that does not (OVER, OVER_OBJ: returned when no
 * plan passes, so that the caller sees what the rows let through).  N strategies a plan.
 */
typedef struct as_keeper {
    size_t n;
    double obj, over_obj; /**< INFINITY: none */
    size_t *best, *over;
    long checks;          /**< fits checks made */
    double failed[16];    /**< objectives of the last plans that failed the check */
    int nfailed;
} as_keeper;

void as_keeper_init(as_keeper *k, size_t n);
void as_keeper_free(as_keeper *k);
/**
 * Offer CHOICE (it passes the problem's rows) of objective OBJ: 1 it is the new best,
 * 0 it is not cheaper than the best (not checked), -1 cheaper but it fails LIM's check.
 */
int as_keeper_offer(as_keeper *k, const as_limits *lim, const size_t *choice, double obj);
/** 1 if a plan of objective OBJ failed K's check (the same plan, most likely). */
int as_keeper_failed(const as_keeper *k, double obj);
/** The answer into OUT (N entries): the best, else the cheapest over; its objective, or
    INFINITY when nothing was offered (OUT untouched). */
double as_keeper_answer(const as_keeper *k, size_t *out);

void as_limits_init(as_limits *lim);

/**
 * The command line's relative gap: a plan within 1e-4 of the bound counts as
 * optimal (the default of Gurobi, CPLEX and HiGHS; docs/ilp.md).
 */
#define AS_DEFAULT_GAP 1e-4

/** What a backend returns besides the outcome. */
typedef struct as_assignment {
    size_t n;          /**< nodes of the problem solved */
    size_t *choice;    /**< n strategy indices (valid for optimal/feasible) */
    double objective;  /**< seconds, offset included */
    double bound;      /**< best lower bound, seconds; -HUGE_VAL when unknown */
    double gap;        /**< relative gap (objective - bound) / |objective| (within the
                          requested gap when optimal) */
    double time_s;     /**< wall seconds (set by the driver) */
    long nodes;        /**< branch-and-bound nodes (or enumerated plans), -1 unknown */
    int from_start;    /**< heuristics: 1 if the plan is the caller's start plan (lim->start,
                            the driver's bound-pruning plan), polished, not the search's own */
    int timed;         /**< heuristics: 1 if the time limit (or a safety stop under it) cut
                            the search: the plan may differ from run to run (else the work is
                            counted, not timed, and one seed gives one plan) */
    double loop_cpu_s; /**< mcts: CPU seconds of the episode loop alone (nodes episodes),
                            0 unknown */
} as_assignment;

/** Allocate choice for N nodes and reset the numbers. */
void as_assignment_init(as_assignment *a, size_t n);
void as_assignment_free(as_assignment *a);

typedef struct as_solver_data as_solver_data; /* completed privately in each solver_*.c */

#define AS_DECL_SOLVER_NEW(x) int x(as_solver_data **data, as_err *err)
#define AS_DECL_SOLVER_FREE(x) void x(as_solver_data *data)
#define AS_DECL_SOLVER_PARAM(x)                                                                    \
    int x(as_solver_data *data, const char *key, const char *value, as_err *err)
#define AS_DECL_SOLVER_SOLVE(x)                                                                    \
    int x(as_solver_data *data, const as_problem *p, const as_limits *lim, as_assignment *out,     \
          as_outcome *outcome, as_err *err)

#define AS_SOLVER_EXACT 0x1u  /* can prove optimality/infeasibility */
#define AS_SOLVER_SEEDED 0x2u /* uses lim->seed; results vary with it */

typedef struct as_solver_ops {
    const char *name;                  /**< "glpk", "cbc", "brute" */
    const char *desc;                  /**< one line for `autoshard solve --help` */
    unsigned flags;                    /**< AS_SOLVER_* */
    AS_DECL_SOLVER_NEW((*new_data));   /**< may be NULL: no private data */
    AS_DECL_SOLVER_FREE((*free_data)); /**< may be NULL */
    AS_DECL_SOLVER_PARAM((*set_param)); /**< may be NULL: backend has no params */
    AS_DECL_SOLVER_SOLVE((*solve));    /**< required; out->choice is preallocated */
} as_solver_ops;

extern const as_solver_ops as_solver_glpk, as_solver_brute, as_solver_beam, as_solver_mcts,
    as_solver_xyz;
#ifdef HAVE_CBC
extern const as_solver_ops as_solver_cbc;
#endif

/* Registry and driver (solver.c). */
/** Look up a registered backend; AS_EUSAGE listing the names if unknown. */
const as_solver_ops *as_solver_find(const char *name, as_err *err);
/** One line per registered backend: "  name  description". */
void as_solver_list(FILE *fp);
/**
 * Run backend OPS on P (valid, any follow links respected) with PARAMS
 * ("name/key=value"; others' names are ignored), time it and validate the
 * result: a plan must pass as_problem_check on P and its objective must
 * match the recomputed one within 1e-6 relative, else AS_EINTERNAL
 * ("solver 'x' returned ...").  OUT is initialised here; free it.
 */
int as_solve(const as_solver_ops *ops, const as_problem *p, const as_limits *lim,
             const char *const *params, size_t nparams, as_assignment *out, as_outcome *outcome,
             as_err *err);

/* Top level: reductions, k-best, recovery. */
typedef struct as_solve_opts {
    const char *solver;          /**< backend name, default "glpk" */
    as_limits lim;
    unsigned reduce;             /**< AS_REDUCE_* flags, default AS_REDUCE_ALL */
    size_t top;                  /**< plans wanted (k-best), default 1 */
    const char *const *params;   /**< "solver/key=value" */
    size_t nparams;
    struct as_group_result *groups; /**< tied classes of P: the plan is made uniform where
                                         that costs nothing (as_group_settle); NULL = none */
    /**
     * k-best (top > 1): whether a plan is a new layout.  Called with each plan found
     * (CHOICE per node of P, its OBJECTIVE): 1 keeps it (the callee remembers it), 0 cuts
     * it off without counting it and solves again (at most AS_SOLVE_MAX_SKIPS x top such
     * plans per call).  Called with CHOICE NULL when a solve starts (forget every plan).
     * NULL: every distinct assignment is a plan (formulate/build.h as_layout_distinct).
     */
    int (*distinct)(void *ud, const size_t *choice, double objective);
    void *distinct_ud;
    /**
     * A plan of P (one strategy per node, follow links respected) that fits every row of P,
     * or NULL: the backend starts from it (mapped onto the reduced problem; not when the
     * reductions dropped one of its strategies) when the reductions' plan is dearer or does
     * not fit.  The caller keeps it as its fallback (solve/fit.c).
     */
    const size_t *incumbent;
    /** With an incumbent: the reductions' branching still runs (as_reduce_opts.branch; the
        solve for the gap of a plan that fits, solve/fit.c). */
    int branch_inc;
    /** 1: the caller holds a plan of its own, of cost OWN_OBJ (the sweep's sibling start):
        out of time, the reductions give up (AS_ESOLVER) rather than run past the limit for a
        plan no cheaper (as_reduce_opts.own_plan).  0 (default): they give a plan that fits. */
    int own_plan;
    double own_obj;
    /** 1 (default): count the unreduced ILP's sizes (as_solve_result before, reported
        only; as_ilp_count reads every matrix entry); 0: leave them uncounted. */
    int count_before;
    /** > 0, an exact backend, top 1: the ILP handed to it has at most about this many edge
        columns; a larger reduced problem is restricted to the strategies the reductions'
        bound rates best (as_reduce_opts.ilp_cap).  Its plans are then proven optimal only
        when the bound of what was left out (stats.cut) proves them.  0 (default): none. */
    size_t ilp_cap;
    /** The reductions' Lagrangian starts from these multipliers (as_solve_result.duals of a
        solve of the same problem with the same rows), when they bound higher. */
    const as_duals *duals_from;
    /** Row generation (solve_rowgen in solver.c) when the binding rows' entries with their
        chains expanded (as_problem_live_expanded) exceed this; 0: AS_ROWGEN_ENTRIES; < 0:
        never (top > 1 never does). */
    double rowgen_above;
} as_solve_opts;

#define AS_SOLVE_MAX_SKIPS 16
/** `solve --ilp-cap`'s default (edge columns): docs/ilp.md "The ILP size cap". */
#define AS_SOLVE_ILP_CAP 750000

void as_solve_opts_init(as_solve_opts *o);

/** One plan of the original problem. */
typedef struct as_plan {
    size_t *choice;    /**< strategy per original node */
    double objective;  /**< seconds, recomputed on the original problem */
    double bound;      /**< seconds, -HUGE_VAL when unknown */
    double gap;        /**< relative */
    double peak;       /**< bytes per device, max over liveness points */
    double time_s;     /**< seconds in the backend */
    long nodes;        /**< branch-and-bound nodes, -1 unknown */
    as_outcome status; /**< optimal or feasible */
    int from_start;    /**< as_assignment's: a heuristic returned its start plan, polished */
    int timed;         /**< as_assignment's, or as_solve_result.start_timed: the time limit
                            cut a heuristic's search; the plan may differ from run to run */
    double loop_cpu_s; /**< as_assignment's: mcts's episode loop, CPU seconds */
} as_plan;

typedef struct as_solve_result {
    as_outcome outcome;       /**< of the first solve (infeasible / limit: no plans) */
    size_t nplans;            /**< <= top: fewer when no more feasible plans exist */
    as_plan *plans;           /**< in order of objective */
    as_ilp_stats before;      /**< ILP of the original problem */
    as_ilp_stats after;       /**< ILP that reached the backend */
    as_reduce_stats red;      /**< what the reductions did */
    size_t skipped;           /**< plans cut off as a layout already returned (distinct) */
    double build_s;           /**< seconds spent reducing and building */
    double total_s;           /**< seconds in total */
    as_duals *duals;          /**< the reductions' Lagrangian multipliers, or NULL (top 1; for
                                   as_solve_opts.duals_from of a solve of the same problem) */
    int start_timed;          /**< beam, mcts: the bound pruning that gives their start stopped
                                   at its safety deadline (half of the time left): the
                                   plan may depend on the time (otherwise it does not) */
    /** beam, mcts under a fits check (as_limits): the cheapest plan of the first solve that
        fits the rows but failed the check, when it is cheaper than plans[0] (which passed
        it); choice NULL: none.  Its bound is plans[0]'s.  The caller may refit from it
        (solve/fit.c: its copies into the rows) and keep plans[0] as the plan that fits. */
    as_plan over;
    size_t rowgen_rounds;     /**< row generation (as_solve_problem): rounds, 0 = not used */
    size_t rowgen_points;     /**< the liveness points it kept as rows */
} as_solve_result;

/** Binding rows' entries (as_problem_live_expanded) above which as_solve_problem generates
    the rows it needs instead of handing every one to the reductions. */
#define AS_ROWGEN_ENTRIES 1e8

/**
 * Solve P with O: reduce (PBQP eliminations are switched off when top > 1,
 * see docs/ilp.md), solve, recover, validate every plan on P, and repeat
 * with a no-good cut for each further plan.  AS_OK also when the outcome is
 * infeasible or limit (nplans == 0).
 */
int as_solve_problem(const as_problem *p, const as_solve_opts *o, as_solve_result *res,
                     as_err *err);
void as_solve_result_free(as_solve_result *res);

/**
 * Turn column values X of the ILP of P (built with the same REDUCE flags,
 * as by `autoshard export`) into a plan of P, checked on P.  AS_EPARSE when
 * the values do not form a valid plan.
 */
int as_solve_from_values(const as_problem *p, unsigned reduce, const char *solpath,
                         as_plan *plan, as_sol_status *status, as_err *err);
/**
 * Build the (reduced) ILP of P as export and --solution see it (*RP and *RED
 * are NULL when REDUCE is 0).  When the reductions would eliminate every
 * node, the PBQP eliminations are left out so that the ILP is not empty.
 */
int as_solve_build_ilp(const as_problem *p, unsigned reduce, as_problem **rp, as_reduction **red,
                       as_ilp **ilp, as_err *err);
/**
 * as_solve_build_ilp with a time limit: AS_ESOLVER "time limit" when the as_now() time
 * DEADLINE (0 = none) passes while reducing or building, never a less reduced ILP (the
 * same REDUCE flags must give the same ILP for --solution).
 */
int as_solve_build_ilp_by(const as_problem *p, unsigned reduce, double deadline,
                          as_problem **rp, as_reduction **red, as_ilp **ilp, as_err *err);
void as_plan_free(as_plan *plan);

#endif /* AS_SOLVER_H */
