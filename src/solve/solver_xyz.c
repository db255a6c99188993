/* solver_xyz.c -- template for a new backend (SCIP's heur_xyz.c).
 *
 * Copy this file to solver_<name>.c, rename the constants and functions,
 * add it to SOLVE_SRC in Makefile.am and to solver_table in solver.c.  It is
 * compiled but not registered, so it cannot go stale.  As a template it
 * implements the simplest real heuristic: every leader takes its cheapest
 * strategy (c + d), followers copy it; the driver validates the plan, so a
 * plan that breaks a memory or alias row is reported as "limit" instead.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solve/solver.h"

#define SOLVER_NAME "xyz"
#define SOLVER_DESC "template: cheapest strategy per node (not registered)"

struct as_solver_data {
    int use_comm; /**< "xyz/use_comm" 0/1: count communication d as well as c, default 1 */
};

static AS_DECL_SOLVER_NEW(xyz_new)
{
    *data = as_xcalloc(1, sizeof **data);
    (*data)->use_comm = 1;
    return AS_OK;
}

static AS_DECL_SOLVER_FREE(xyz_free)
{
    free(data);
}

static AS_DECL_SOLVER_PARAM(xyz_param)
{
    if (strcmp(key, "use_comm") != 0)
        return as_errf(err, AS_EUSAGE, "unknown parameter '%s/%s'", SOLVER_NAME, key);
    if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
        return as_errf(err, AS_EUSAGE, "parameter '%s/%s' must be 0 or 1", SOLVER_NAME, key);
    data->use_comm = value[0] == '1';
    return AS_OK;
}

static AS_DECL_SOLVER_SOLVE(xyz_solve)
{
    size_t n = as_problem_nnodes(p), v, s, r;

    (void)lim;
    for (v = 0; v < n; v++) {
        const as_pnode *nd = as_problem_node(p, v);
        for (s = 1; s < nd->k; s++) {
            double a = nd->c[s] + (data->use_comm ? nd->d[s] : 0);
            double b = nd->c[out->choice[v]] + (data->use_comm ? nd->d[out->choice[v]] : 0);
            if (a < b)
                out->choice[v] = s;
        }
    }
    for (v = 0; v < n; v++) {
        for (r = v; as_problem_node(p, r)->follow != AS_NO_FOLLOW;)
            r = as_problem_node(p, r)->follow;
        out->choice[v] = out->choice[r];
    }
    if (as_problem_check(p, out->choice, &out->objective, NULL, NULL) != AS_OK) {
        *outcome = AS_OUTCOME_LIMIT;
        return AS_OK;
    }
    *outcome = AS_OUTCOME_FEASIBLE;
    return AS_OK;
}

const as_solver_ops as_solver_xyz = {
    .name = SOLVER_NAME,
    .desc = SOLVER_DESC,
    .flags = 0,
    .new_data = xyz_new,
    .free_data = xyz_free,
    .set_param = xyz_param,
    .solve = xyz_solve,
};
