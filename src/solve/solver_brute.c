/* solver_brute.c -- exhaustive enumeration, the reference for tests.
 *
 * Enumerates every strategy of every node that follows nobody (followers
 * copy their leader's index), checks each plan with as_problem_check and
 * keeps the cheapest.  Refuses problems with more than 1e7 plans
 * ("brute/max" raises the cap).  Exact: optimal or infeasible, or limit
 * when the time runs out first.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solve/solver.h"

#define SOLVER_NAME "brute"
#define SOLVER_DESC "exhaustive enumeration (exact; tests; at most 1e7 plans)"

struct as_solver_data {
    double max; /**< "brute/max": most plans to enumerate, default 1e7 */
};

static AS_DECL_SOLVER_NEW(brute_new)
{
    *data = as_xcalloc(1, sizeof **data);
    (*data)->max = 1e7;
    return AS_OK;
}

static AS_DECL_SOLVER_FREE(brute_free)
{
    free(data);
}

static AS_DECL_SOLVER_PARAM(brute_param)
{
    char *end;
    double x;

    if (strcmp(key, "max") != 0)
        return as_errf(err, AS_EUSAGE, "unknown parameter '%s/%s'", SOLVER_NAME, key);
    x = strtod(value, &end);
    if (end == value || *end != '\0' || !(x >= 1))
        return as_errf(err, AS_EUSAGE, "parameter '%s/max' must be a number >= 1", SOLVER_NAME);
    data->max = x;
    return AS_OK;
}

/* Advance the odometer over free nodes; returns 0 when it wraps around. */
static int
brute_next(const as_problem *p, const size_t *root, size_t *x)
{
    size_t n = as_problem_nnodes(p), v;

    for (v = 0; v < n; v++) {
        if (root[v] != v)
            continue;
        if (++x[v] < as_problem_node(p, v)->k)
            return 1;
        x[v] = 0;
    }
    return 0;
}

static AS_DECL_SOLVER_SOLVE(brute_solve)
{
    size_t n = as_problem_nnodes(p), v, *root, *x;
    double t0 = as_now(), obj, best = HUGE_VAL, space = as_problem_space(p);
    long count = 0;
    int more = 1;

    if (space > data->max)
        return as_errf(err, AS_EUSAGE, "%s: %.3g plans, more than the limit %.3g (brute/max)",
                       SOLVER_NAME, space, data->max);
    root = as_xcalloc(n + 1, sizeof *root);
    x = as_xcalloc(n + 1, sizeof *x);
    for (v = 0; v < n; v++)
        for (root[v] = v; as_problem_node(p, root[v])->follow != AS_NO_FOLLOW;)
            root[v] = as_problem_node(p, root[v])->follow;
    *outcome = AS_OUTCOME_INFEASIBLE;
    while (more) {
        for (v = 0; v < n; v++)
            x[v] = x[root[v]];
        if (as_problem_check(p, x, &obj, NULL, NULL) == AS_OK && obj < best) {
            best = obj;
            memcpy(out->choice, x, n * sizeof *x);
            *outcome = AS_OUTCOME_OPTIMAL;
        }
        count++;
        if ((count & 4095) == 0 && lim->time_limit_s > 0 && as_now() - t0 > lim->time_limit_s) {
            *outcome = *outcome == AS_OUTCOME_OPTIMAL ? AS_OUTCOME_FEASIBLE : AS_OUTCOME_LIMIT;
            break;
        }
        more = brute_next(p, root, x);
    }
    out->objective = best;
    out->nodes = count;
    free(x);
    free(root);
    return AS_OK;
}

const as_solver_ops as_solver_brute = {
    .name = SOLVER_NAME,
    .desc = SOLVER_DESC,
    .flags = AS_SOLVER_EXACT,
    .new_data = brute_new,
    .free_data = brute_free,
    .set_param = brute_param,
    .solve = brute_solve,
};
