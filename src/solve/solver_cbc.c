/* solver_cbc.c -- COIN-OR CBC through its C API (coin/Cbc_C_Interface.h).
 *
 * Built only when configure finds cbc.pc (HAVE_CBC).  The ILP's CSC arrays
 * are 0-based, which is what Cbc_loadProblem takes, so no copy beyond the
 * bound conversion (HUGE_VAL -> COIN_DBL_MAX) is needed.  Limits map to
 * CBC's own parameters (seconds, ratioGap, threads, logLevel).  CBC has no
 * objective constant in loadProblem: the ILP's offset is added back here.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <Cbc_C_Interface.h>

#include "solve/solver.h"

#define SOLVER_NAME "cbc"
#define SOLVER_DESC "COIN-OR CBC branch-and-cut (exact; --threads)"

struct as_solver_data {
    int cuts;      /**< "cbc/cuts" 0/1: CBC's default cut generators, default 1 */
    int heuristics; /**< "cbc/heuristics" 0/1, default 1 */
};

static AS_DECL_SOLVER_NEW(cbc_new)
{
    *data = as_xcalloc(1, sizeof **data);
    (*data)->cuts = 1;
    (*data)->heuristics = 1;
    return AS_OK;
}

static AS_DECL_SOLVER_FREE(cbc_free)
{
    free(data);
}

static AS_DECL_SOLVER_PARAM(cbc_param)
{
    int *dst = strcmp(key, "cuts") == 0 ? &data->cuts
               : strcmp(key, "heuristics") == 0 ? &data->heuristics
                                                : NULL;

    if (dst == NULL)
        return as_errf(err, AS_EUSAGE, "unknown parameter '%s/%s'", SOLVER_NAME, key);
    if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
        return as_errf(err, AS_EUSAGE, "parameter '%s/%s' must be 0 or 1", SOLVER_NAME, key);
    *dst = value[0] == '1';
    return AS_OK;
}

static double
cbc_inf(double x)
{
    return x == HUGE_VAL ? DBL_MAX : x == -HUGE_VAL ? -DBL_MAX : x;
}

/* Load the ILP into M. */
static void
cbc_load(Cbc_Model *m, const as_ilp_view *iv, double scale)
{
    CoinBigIndex *beg = as_xcalloc(iv->ncols + 1, sizeof *beg);
    double *obj = as_xcalloc(iv->ncols + 1, sizeof *obj);
    double *rlb = as_xcalloc(iv->nrows + 1, sizeof *rlb), *rub = as_xcalloc(iv->nrows + 1,
                                                                            sizeof *rub);
    size_t i;

    for (i = 0; i <= iv->ncols; i++)
        beg[i] = iv->cbeg[i];
    for (i = 0; i < iv->ncols; i++)
        obj[i] = iv->obj[i] * scale;
    for (i = 0; i < iv->nrows; i++) {
        rlb[i] = cbc_inf(iv->row_lb[i]);
        rub[i] = cbc_inf(iv->row_ub[i]);
    }
    Cbc_loadProblem(m, (int)iv->ncols, (int)iv->nrows, beg, iv->cind, iv->cval, iv->col_lb,
                    iv->col_ub, obj, rlb, rub);
    for (i = 0; i < iv->ncols; i++)
        if (iv->col_int[i])
            Cbc_setInteger(m, (int)i);
    free(obj);
    free(rub);
    free(rlb);
    free(beg);
}

static void
cbc_limits(Cbc_Model *m, const as_solver_data *data, const as_limits *lim)
{
    char buf[64];

    Cbc_setParameter(m, "logLevel", as_verbosity >= 2 ? "1" : "0");
    if (lim->time_limit_s > 0) {
        snprintf(buf, sizeof buf, "%.3f", lim->time_limit_s);
        Cbc_setParameter(m, "seconds", buf);
        Cbc_setMaximumSeconds(m, lim->time_limit_s);
    }
    if (lim->gap > 0) {
        snprintf(buf, sizeof buf, "%.17g", lim->gap);
        Cbc_setParameter(m, "ratioGap", buf);
    }
    if (lim->threads > 1) {
        snprintf(buf, sizeof buf, "%d", lim->threads);
        Cbc_setParameter(m, "threads", buf);
    }
    if (!data->cuts)
        Cbc_setParameter(m, "cuts", "off");
    if (!data->heuristics)
        Cbc_setParameter(m, "heuristics", "off");
}

static AS_DECL_SOLVER_SOLVE(cbc_solve)
{
    as_ilp *ilp = NULL;
    const as_ilp_view *iv;
    const double *x;
    double scale;
    Cbc_Model *m;
    int rc = AS_OK;

    AS_CHECK(as_ilp_build(p, NULL, &ilp, err));
    iv = as_ilp_data(ilp);
    m = Cbc_newModel();
    scale = as_ilp_obj_scale(ilp);
    cbc_load(m, iv, scale); /* objective in O(1) units (as_ilp_obj_scale) */
    cbc_limits(m, data, lim);
    if (lim->start != NULL) { /* the reductions' plan as the first incumbent */
        double *x0 = as_xcalloc(iv->ncols + 1, sizeof *x0);
        int *idx = as_xcalloc(iv->ncols + 1, sizeof *idx);
        size_t j;
        as_ilp_point(ilp, lim->start, x0);
        for (j = 0; j < iv->ncols; j++)
            idx[j] = (int)j;
        Cbc_setMIPStartI(m, (int)iv->ncols, idx, x0);
        free(x0);
        free(idx);
    }
    Cbc_solve(m);
    out->nodes = Cbc_getNodeCount(m);
    if (Cbc_isAbandoned(m)) {
        rc = as_errf(err, AS_ESOLVER, "CBC abandoned the solve (numerical difficulties)");
        goto out;
    }
    if (Cbc_isProvenInfeasible(m)) {
        *outcome = AS_OUTCOME_INFEASIBLE;
        goto out;
    }
    x = Cbc_bestSolution(m);
    if (x == NULL) {
        *outcome = AS_OUTCOME_LIMIT;
        goto out;
    }
    *outcome = Cbc_isProvenOptimal(m) ? AS_OUTCOME_OPTIMAL : AS_OUTCOME_FEASIBLE;
    AS_CHECK_GOTO(rc, as_ilp_assignment(ilp, x, out->choice, err), out);
    out->objective = Cbc_getObjValue(m) / scale + iv->offset;
    out->bound = Cbc_getBestPossibleObjValue(m) / scale + iv->offset;
out:
    Cbc_deleteModel(m);
    as_ilp_free(ilp);
    return rc;
}

const as_solver_ops as_solver_cbc = {
    .name = SOLVER_NAME,
    .desc = SOLVER_DESC,
    .flags = AS_SOLVER_EXACT,
    .new_data = cbc_new,
    .free_data = cbc_free,
    .set_param = cbc_param,
    .solve = cbc_solve,
};
