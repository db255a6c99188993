/* ilp.h -- the solver-neutral integer linear program of a choice problem
 * (Alpa's intra-operator formulation, docs/ilp.md).
 *
 * Columns: s_<id>_<p> (binary, node id, strategy p) for every node, then
 * e_<j>_<p>_<q> (continuous in [0,1], integral whenever the s are) for every
 * edge j with a non-constant matrix, then under a budget mseg_<j> (continuous:
 * the bytes of liveness segment j, its parents' included, in units of the budget)
 * for every segment a memory row uses.  Rows: one_<id> (sum s = 1),
 * eu_<j>_<p> / ev_<j>_<q> (edge marginals equal the node variables), seg_<j>
 * (mseg_<j> = its entries + mseg_<parent>), mem_<t> (memory at liveness point t:
 * its entries + its segments' mseg columns), alias_<i>_<p>_<q>, fol_<id>_<p>
 * (unmerged follow links), cut_<i> (no-goods).  Arrays are 0-based; row
 * bounds use -HUGE_VAL / HUGE_VAL for a free side.  Everything returned is
 * owned by the ILP and valid until as_ilp_free().  Each backend converts to
 * its own indexing in its own file.
 */
#ifndef AS_ILP_H
#define AS_ILP_H

/** Costs (seconds) from which a choice is forbidden in the ILP (upper bound 0, cost 0). */
#define AS_ILP_FORBIDDEN_COST 1e12
/** Exported MPS/LP: the column, fixed at 1, whose cost is the objective's constant. */
#define AS_ILP_CONST_COL "obj_const"

#include <stddef.h>

#include "autoshard.h"
#include "formulate/problem.h"

typedef struct as_ilp as_ilp; /* opaque: owns an arena */

/** ILP size, for reports. */
typedef struct as_ilp_stats {
    size_t cols;     /**< variables */
    size_t int_cols; /**< binary variables */
    size_t rows;     /**< constraints */
    size_t nnz;      /**< non-zeros of the constraint matrix */
    int uncounted;   /**< 1: not counted (no time left under the time limit); the rest 0 */
} as_ilp_stats;

/** Read-only view of the arrays (0-based). */
typedef struct as_ilp_view {
    size_t ncols, nrows, nnz;
    const double *obj;              /**< ncols objective coefficients, seconds */
    double offset;                  /**< objective constant, seconds */
    const double *col_lb, *col_ub;  /**< ncols bounds */
    const unsigned char *col_int;   /**< ncols: 1 = binary */
    const char *const *col_name;    /**< ncols names, stable (see above) */
    const double *row_lb, *row_ub;  /**< nrows bounds, +-HUGE_VAL when free */
    const char *const *row_name;    /**< nrows names */
    const int *ti, *tj;             /**< nnz triplets (row, column), row by row */
    const double *tv;               /**< nnz values */
    const int *cbeg;                /**< ncols + 1 column starts (CSC) */
    const int *cind;                /**< nnz row indices (CSC) */
    const double *cval;             /**< nnz values (CSC) */
} as_ilp_view;

/** Build options; initialise with as_ilp_opts_init. */
typedef struct as_ilp_opts {
    const size_t *node_ids; /**< id used in names for each node (e.g. the original index of a
                                 reduced node); NULL = the node's own index */
    const size_t *const *strategy_ids; /**< id used in names for each strategy of each node
                                            (e.g. the original index); NULL = its own */
} as_ilp_opts;

void as_ilp_opts_init(as_ilp_opts *o);
/**
 * Build the ILP of P (which must be valid).  A memory row is added per
 * liveness point when P's budget is > 0.  AS_EUSAGE if the ILP would exceed
 * INT_MAX entries.  Time and space linear in the size of the result.
 */
int as_ilp_build(const as_problem *p, const as_ilp_opts *o, as_ilp **out, as_err *err);
void as_ilp_free(as_ilp *ilp);
/** The sizes as_ilp_build would give, counted without building (linear time; for reports). */
int as_ilp_count(const as_problem *p, as_ilp_stats *st, as_err *err);
const as_ilp_view *as_ilp_data(const as_ilp *ilp);
void as_ilp_stats_get(const as_ilp *ilp, as_ilp_stats *st);
/**
 * Factor a backend should multiply the objective by (and divide its answers
 * by): 1 / the geometric mean of the non-zero |objective coefficients|, so
 * they are O(1).  Costs in seconds are 1e-9..1e-3; LP solvers' absolute
 * optimality and pruning tolerances (1e-7..1e-9) would otherwise decide the
 * last digits of the optimum, and GLPK and CBC disagreed by up to 1e-4
 * relative under memory rows.  A power of two, so scaling is exact.
 */
double as_ilp_obj_scale(const as_ilp *ilp);
/** Column of s_v[s]. */
size_t as_ilp_scol(const as_ilp *ilp, size_t v, size_t s);
/** Find a column by name; returns 1 and sets *j if found. */
int as_ilp_find_col(const as_ilp *ilp, const char *name, size_t *j);
/**
 * Read one strategy per node from column values X (ncols).  AS_ESOLVER if a
 * node's s values are not one 1 and zeros within 1e-6.
 */
int as_ilp_assignment(const as_ilp *ilp, const double *x, size_t *choice, as_err *err);
/** The column values X (ncols) of the plan CHOICE (one strategy per node): s and e columns. */
void as_ilp_point(const as_ilp *ilp, const size_t *choice, double *x);

/* Export and external solutions (export.c). */
struct glp_prob;
/**
 * Load the ILP into an empty GLPK problem (1-based, names set, objective
 * constant as coefficient 0), checking every input first since GLPK aborts
 * on misuse.  AS_EINTERNAL if the ILP is malformed.
 */
int as_ilp_load_glpk(const as_ilp *ilp, struct glp_prob *lp, as_err *err);
typedef enum as_ilp_format { AS_ILP_MPS, AS_ILP_LP } as_ilp_format;
/** Write the ILP as free MPS or CPLEX LP with GLPK's writers, atomically ("-" = stdout). */
int as_ilp_write(const as_ilp *ilp, as_ilp_format fmt, const char *path, as_err *err);

/** Status a solution file reports. */
typedef enum as_sol_status {
    AS_SOL_UNKNOWN = 0, /**< file does not say */
    AS_SOL_OPTIMAL,
    AS_SOL_FEASIBLE,    /**< stopped with an incumbent */
    AS_SOL_INFEASIBLE,
    AS_SOL_NONE         /**< stopped without a solution */
} as_sol_status;

/**
 * Read a solution written by an external solver for this ILP's MPS/LP file:
 * CBC's `solu` file, glpsol's --write (raw) or -o (printable) output,
 * Gurobi/HiGHS-style "name value" files.  Fills X (ncols, zeros for
 * variables the file omits), *status, and *objective (NAN if absent).
 * AS_EPARSE with "FILE:LINE: ..." on anything it cannot understand.
 */
int as_ilp_read_solution(const as_ilp *ilp, const char *path, double *x, as_sol_status *status,
                         double *objective, as_err *err);
/** The same for TEXT (LEN bytes) already in memory; PATH names it in messages. */
int as_ilp_parse_solution(const as_ilp *ilp, const char *path, const char *text, size_t len, double *x,
                          as_sol_status *status, double *objective, as_err *err);

#endif /* AS_ILP_H */
