/* solver.c -- the solver registry and the driver around every backend:
 * parameters, timing, validation of returned plans, reductions, recovery of
 * eliminated choices and the k-best loop.
 *
 * DESIGN: a backend only ever sees the (reduced) problem and returns an
 * assignment of it.  as_solve() checks that assignment against that problem
 * (SCIP's heur.c does the same for heuristics); as_solve_problem() then
 * recovers the full plan and checks it again against the original problem,
 * recomputing the objective from the original cost vectors, so a wrong
 * reduction is caught as surely as a wrong backend.  k-best adds one
 * no-good cut per plan found on the reduced variables, with the PBQP
 * eliminations switched off (see docs/ilp.md for why that is needed).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solve/solver.h"
#include "solve/fit.h"
#include "formulate/group.h"

#define OBJ_RTOL 1e-6

static const as_solver_ops *const solver_table[] = {
    &as_solver_glpk,
#ifdef HAVE_CBC
    &as_solver_cbc,
#endif
    &as_solver_brute,
    &as_solver_beam,
    &as_solver_mcts,
    NULL,
};

const char *
as_outcome_name(as_outcome o)
{
    switch (o) {
    case AS_OUTCOME_OPTIMAL:
        return "optimal";
    case AS_OUTCOME_FEASIBLE:
        return "feasible";
    case AS_OUTCOME_INFEASIBLE:
        return "infeasible";
    case AS_OUTCOME_LIMIT:
        return "limit";
    default:
        return "notrun";
    }
}

void
as_limits_init(as_limits *lim)
{
    memset(lim, 0, sizeof *lim);
    lim->seed = 1;
    lim->verbosity = 1;
}

int
as_limits_fits(const as_limits *lim, const size_t *choice)
{
    return lim->fits == NULL || lim->fits(lim->fits_ud, choice);
}

void
as_keeper_init(as_keeper *k, size_t n)
{
    memset(k, 0, sizeof *k);
    k->n = n;
    k->obj = k->over_obj = INFINITY;
    k->best = as_xcalloc(n + 1, sizeof *k->best);
    k->over = as_xcalloc(n + 1, sizeof *k->over);
}

void
as_keeper_free(as_keeper *k)
{
    free(k->best);
    free(k->over);
    memset(k, 0, sizeof *k);
}

int
as_keeper_offer(as_keeper *k, const as_limits *lim, const size_t *choice, double obj)
{
    if (!(obj < k->obj))
        return 0;
    if (lim->fits != NULL)
        k->checks++;
    if (as_limits_fits(lim, choice)) {
        k->obj = obj;
        memcpy(k->best, choice, k->n * sizeof *choice);
        return 1;
    }
    if (obj < k->over_obj) {
        k->over_obj = obj;
        memcpy(k->over, choice, k->n * sizeof *choice);
    }
    k->failed[k->nfailed++ % 16] = obj;
    return -1;
}

int
as_keeper_failed(const as_keeper *k, double obj)
{
    int i;

    for (i = 0; i < k->nfailed && i < 16; i++)
        if (fabs(k->failed[i] - obj) <= 1e-12 * fabs(obj))
            return 1;
    return 0;
}

double
as_keeper_answer(const as_keeper *k, size_t *out)
{
    if (isfinite(k->obj)) {
        memcpy(out, k->best, k->n * sizeof *out);
        return k->obj;
    }
    if (isfinite(k->over_obj))
        memcpy(out, k->over, k->n * sizeof *out);
    return k->over_obj;
}

void
as_assignment_init(as_assignment *a, size_t n)
{
    memset(a, 0, sizeof *a);
    a->n = n;
    a->choice = as_xcalloc(n + 1, sizeof *a->choice);
    a->bound = -HUGE_VAL;
    a->nodes = -1;
}

void
as_assignment_free(as_assignment *a)
{
    free(a->choice);
    a->choice = NULL;
}

void
as_solve_opts_init(as_solve_opts *o)
{
    memset(o, 0, sizeof *o);
    o->solver = "glpk";
    as_limits_init(&o->lim);
    o->reduce = AS_REDUCE_ALL;
    o->top = 1;
    o->count_before = 1;
}

const as_solver_ops *
as_solver_find(const char *name, as_err *err)
{
    char names[256] = "";
    size_t i;

    for (i = 0; solver_table[i] != NULL; i++) {
        if (strcmp(solver_table[i]->name, name) == 0)
            return solver_table[i];
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 solver_table[i]->name);
    }
    as_errf(err, AS_EUSAGE, "unknown solver '%s' (built: %s)", name, names);
    return NULL;
}

void
as_solver_list(FILE *fp)
{
    size_t i;

    for (i = 0; solver_table[i] != NULL; i++)
        fprintf(fp, "  %-8s %s\n", solver_table[i]->name, solver_table[i]->desc);
}

/* Apply "name/key=value" parameters addressed to OPS. */
static int
solve_params(const as_solver_ops *ops, as_solver_data *data, const char *const *params,
             size_t nparams, as_err *err)
{
    size_t i, len = strlen(ops->name);
    char *key;
    const char *eq;
    int rc;

    for (i = 0; i < nparams; i++) {
        if (strncmp(params[i], ops->name, len) != 0 || params[i][len] != '/')
            continue;
        eq = strchr(params[i], '=');
        if (eq == NULL)
            return as_errf(err, AS_EUSAGE, "parameter '%s': expected KEY=VALUE", params[i]);
        if (ops->set_param == NULL)
            return as_errf(err, AS_EUSAGE, "solver '%s' has no parameters", ops->name);
        key = as_xstrndup(params[i] + len + 1, (size_t)(eq - params[i] - (ptrdiff_t)len - 1));
        rc = ops->set_param(data, key, eq + 1, err);
        free(key);
        AS_CHECK(rc);
    }
    return AS_OK;
}

static int
obj_close(double a, double b, double rtol)
{
    return fabs(a - b) <= rtol * fmax(1.0, fmax(fabs(a), fabs(b)));
}

/* Framework-side check of what a backend returned (SCIP's heur.c). */
static int
solve_validate(const as_solver_ops *ops, const as_problem *p, as_assignment *a,
               as_outcome outcome, as_err *err)
{
    double obj;

    if (outcome < AS_OUTCOME_NOTRUN || outcome > AS_OUTCOME_LIMIT)
        return as_errf(err, AS_EINTERNAL, "solver '%s' returned unknown outcome %d", ops->name,
                       (int)outcome);
    if (outcome != AS_OUTCOME_OPTIMAL && outcome != AS_OUTCOME_FEASIBLE)
        return AS_OK;
    if (as_problem_check(p, a->choice, &obj, NULL, err) != AS_OK) {
        as_err_prefix(err, "solver '%s' returned an invalid plan: ", ops->name);
        err->code = AS_EINTERNAL;
        return AS_EINTERNAL;
    }
    if (!obj_close(obj, a->objective, OBJ_RTOL))
        return as_errf(err, AS_EINTERNAL, "solver '%s' reported objective %.17g, plan costs %.17g",
                       ops->name, a->objective, obj);
    a->objective = obj;
    if (outcome == AS_OUTCOME_OPTIMAL) { /* proven within the requested gap */
        a->bound = isfinite(a->bound) ? fmin(a->bound, obj) : obj;
        a->gap = as_rel_gap(obj, a->bound);
    } else if (isfinite(a->bound)) {
        a->bound = fmin(a->bound, obj);
        a->gap = as_rel_gap(obj, a->bound);
    } else {
        a->gap = HUGE_VAL;
    }
    return AS_OK;
}

/*
 * A backend's tolerances can let its plan exceed a memory row by a few bytes (GLPK with the
 * rows in units of the budget: 4 bytes over 2.45 MiB).  Then that plan is not a solution: solve
 * again with the budget lowered by the excess, at least 1e-5 of it, doubling each time (up to
 * 4 times), so that what is returned fits P, or the outcome says that nothing does (exit 3,
 * not an "invalid plan").  RC is
 * solve_validate's status; other failures are returned as they are.
 */
static int
solve_refit_memory(const as_solver_ops *ops, as_solver_data *data, const as_problem *p,
                   const as_limits *lim, as_assignment *out, as_outcome *outcome, int rc,
                   as_err *err)
{
    double budget = as_problem_memory(p), cur = budget;
    int tries;

    for (tries = 0; tries < 4 && budget > 0 && rc != AS_OK; tries++) {
        double need = as_problem_peak(p, out->choice);
        as_problem *q;
        as_err e2;
        if (!(need > budget)) /* not (only) the memory rows */
            return rc;
        as_debug("solve: the plan needs %.3f B in the memory rows, budget %.3f B; solving again", need, budget);
        /* GLPK takes a binary within 1e-5 of 1 for 1: lower by at least that share of the
         * budget, doubling on every try */
        cur -= fmax(need - budget, fmax(1.0, 1e-5 * budget)) * (double)(1 << tries);
        if (cur <= 0)
            return rc;
        q = as_problem_clone(p);
        as_problem_set_memory(q, cur);
        as_assignment_free(out);
        as_assignment_init(out, as_problem_nnodes(p));
        *outcome = AS_OUTCOME_NOTRUN;
        as_err_clear(&e2);
        rc = ops->solve(data, q, lim, out, outcome, &e2);
        as_problem_free(q);
        if (rc != AS_OK) {
            *err = e2;
            return rc;
        }
        as_err_clear(err);
        rc = solve_validate(ops, p, out, *outcome, err);
    }
    return rc;
}

int
as_solve(const as_solver_ops *ops, const as_problem *p, const as_limits *lim,
         const char *const *params, size_t nparams, as_assignment *out, as_outcome *outcome,
         as_err *err)
{
    as_solver_data *data = NULL;
    double t0;
    int rc;

    as_assignment_init(out, as_problem_nnodes(p));
    *outcome = AS_OUTCOME_NOTRUN;
    AS_CHECK(as_problem_validate(p, err));
    if (ops->new_data != NULL)
        AS_CHECK(ops->new_data(&data, err));
    AS_CHECK_GOTO(rc, solve_params(ops, data, params, nparams, err), out);
    t0 = as_now();
    rc = ops->solve(data, p, lim, out, outcome, err);
    out->time_s = as_now() - t0;
    if (rc != AS_OK) {
        if (strncmp(err->msg, ops->name, strlen(ops->name)) != 0)
            as_err_prefix(err, "solver '%s': ", ops->name);
        goto out;
    }
    rc = solve_validate(ops, p, out, *outcome, err);
    if (rc != AS_OK && *outcome != AS_OUTCOME_NOTRUN)
        rc = solve_refit_memory(ops, data, p, lim, out, outcome, rc, err);
out:
    if (ops->free_data != NULL)
        ops->free_data(data);
    return rc;
}

double
as_rel_gap(double obj, double bound)
{
    return (obj - bound) / fmax(fabs(obj), 1e-300);
}

/* ---- top level ---- */

int
as_solve_build_ilp(const as_problem *p, unsigned reduce, as_problem **rp, as_reduction **red,
                   as_ilp **ilp, as_err *err)
{
    return as_solve_build_ilp_by(p, reduce, 0, rp, red, ilp, err);
}

int
as_solve_build_ilp_by(const as_problem *p, unsigned reduce, double deadline, as_problem **rp,
                      as_reduction **red, as_ilp **ilp, as_err *err)
{
    as_reduce_opts ro = {.flags = reduce, .deadline = deadline, .abort_at = deadline,
                         .whole = 1};
    as_ilp_opts io;
    size_t *ids = NULL, i, s, **sids = NULL;
    int rc;

    *rp = NULL;
    *red = NULL;
    as_ilp_opts_init(&io);
    if (reduce != 0) {
        AS_CHECK(as_reduce_ex(p, &ro, rp, red, err));
        if (as_problem_nnodes(*rp) == 0 && (reduce & AS_REDUCE_PBQP)) {
            /* everything eliminated: an empty ILP cannot be written, keep the nodes */
            as_problem_free(*rp);
            as_reduction_free(*red);
            *rp = NULL;
            *red = NULL;
            ro.flags = reduce & ~AS_REDUCE_PBQP;
            AS_CHECK(as_reduce_ex(p, &ro, rp, red, err));
        }
        ids = as_xcalloc(as_problem_nnodes(*rp) + 1, sizeof *ids);
        sids = as_xcalloc(as_problem_nnodes(*rp) + 1, sizeof *sids);
        for (i = 0; i < as_problem_nnodes(*rp); i++) {
            ids[i] = as_reduction_origin(*red, i);
            sids[i] = as_xcalloc(as_problem_node(*rp, i)->k, sizeof **sids);
            for (s = 0; s < as_problem_node(*rp, i)->k; s++)
                sids[i][s] = as_reduction_strategy(*red, i, s);
        }
        io.node_ids = ids;
        io.strategy_ids = (const size_t *const *)sids;
    } else {
        AS_CHECK(as_problem_validate(p, err));
    }
    rc = as_ilp_build(*rp != NULL ? *rp : p, &io, ilp, err);
    if (rc == AS_OK && deadline > 0 && as_now() > deadline) {
        as_ilp_free(*ilp);
        *ilp = NULL;
        rc = as_errf(err, AS_ESOLVER, "time limit reached while building the ILP");
    }
    for (i = 0; sids != NULL && i < as_problem_nnodes(*rp); i++)
        free(sids[i]);
    free(sids);
    free(ids);
    if (rc != AS_OK) {
        as_problem_free(*rp);
        as_reduction_free(*red);
        *rp = NULL;
        *red = NULL;
    }
    return rc;
}

void
as_plan_free(as_plan *plan)
{
    free(plan->choice);
    plan->choice = NULL;
}

void
as_solve_result_free(as_solve_result *res)
{
    size_t i;

    for (i = 0; i < res->nplans; i++)
        as_plan_free(&res->plans[i]);
    free(res->plans);
    res->plans = NULL;
    res->nplans = 0;
    as_plan_free(&res->over);
    as_duals_free(res->duals);
    res->duals = NULL;
}

/*
 * Is there time left under O's limit (counted from T0) to count P's ILP?  as_ilp_count reads
 * every matrix entry: about 50 ns each on a loaded machine.
 */
static int
count_in_time(const as_problem *p, const as_solve_opts *o, double t0)
{
    double entries = 0;
    size_t j;

    if (o->lim.time_limit_s <= 0)
        return 1;
    for (j = 0; j < as_problem_nedges(p); j++) {
        const as_pedge *e = as_problem_edge(p, j);
        entries += (double)as_problem_node(p, e->u)->k * (double)as_problem_node(p, e->v)->k;
    }
    return as_now() - t0 + 5e-8 * entries < o->lim.time_limit_s;
}

/* The sizes of P's ILP; too large to count is reported as not counted, not an error. */
static int
ilp_stats_of(const as_problem *p, as_ilp_stats *st, as_err *err)
{
    as_err e2 = {0};

    (void)err;
    if (as_ilp_count(p, st, &e2) != AS_OK) {
        memset(st, 0, sizeof *st);
        st->uncounted = 1;
    }
    return AS_OK;
}

/* Recover the full plan of A, check it on the original P, and append it to RES; a plan
   holding a forbidden strategy is not appended (*DROPPED = 1, RES's outcome says why). */
static int
solve_keep(const as_problem *p, const as_reduction *red, const as_assignment *a,
           as_outcome outcome, double gap, as_solve_result *res, int *dropped, as_err *err)
{
    as_plan pl = {0};
    size_t n = as_problem_nnodes(p);

    pl.choice = as_xcalloc(n + 1, sizeof *pl.choice);
    if (red != NULL)
        as_reduction_recover(red, a->choice, pl.choice);
    else
        memcpy(pl.choice, a->choice, n * sizeof *pl.choice);
    if (as_problem_check(p, pl.choice, &pl.objective, &pl.peak, err) != AS_OK) {
        as_err_prefix(err, "recovered plan is invalid: ");
        err->code = AS_EINTERNAL;
        free(pl.choice);
        return AS_EINTERNAL;
    }
    if (!obj_close(pl.objective, a->objective, OBJ_RTOL)) {
        free(pl.choice);
        return as_errf(err, AS_EINTERNAL, "recovered plan costs %.17g, reduced problem said %.17g",
                       pl.objective, a->objective);
    }
    pl.bound = a->bound;
    pl.gap = a->gap;
    if (!(pl.objective < AS_ILP_FORBIDDEN_COST)) {
        /* the plan holds a strategy an axis role forbids (the reductions and the start plans
           carry them at their finite cost, the ILP does not): no plan.  When its bound is
           that high too, every plan within the rows holds one: none fits (bert-exlarge 2x8,
           --role data,tensor, 21.49 GiB: the reductions' plan, 1e13 s, was "optimal") */
        double b = a->bound;
        if (red != NULL && isfinite(res->red.lb) && res->red.lb > b)
            b = res->red.lb;
        free(pl.choice);
        if (res->nplans == 0)
            res->outcome = outcome == AS_OUTCOME_OPTIMAL && b >= AS_ILP_FORBIDDEN_COST
                               ? AS_OUTCOME_INFEASIBLE
                               : AS_OUTCOME_LIMIT;
        *dropped = 1;
        return AS_OK;
    }
    if (red != NULL && res->nplans == 0) {
        /* a bound of the reduced problem holds for the original up to the gap pruning's cut;
           the Lagrangian bound holds for the original in any case */
        const as_reduce_stats *st = &res->red;
        double b = fmin(pl.bound, st->cut);
        if (isfinite(st->lb) && st->lb > b)
            b = st->lb;
        pl.bound = fmin(b, pl.objective);
        pl.gap = as_rel_gap(pl.objective, pl.bound);
        /* a restricted ILP's optimum is optimal only when the bound proves it (the solver's
           gap or less; the strategies left out cost at least cut) */
        if (st->restricted > 0 && outcome == AS_OUTCOME_OPTIMAL &&
            !(pl.gap <= fmax(gap, 1e-9)))
            outcome = AS_OUTCOME_FEASIBLE;
    }
    pl.time_s = a->time_s;
    pl.nodes = a->nodes;
    pl.from_start = a->from_start;
    pl.timed = a->timed || res->start_timed;
    pl.loop_cpu_s = a->loop_cpu_s;
    pl.status = outcome;
    res->plans = as_xreallocarray(res->plans, res->nplans + 1, sizeof *res->plans);
    res->plans[res->nplans++] = pl;
    return AS_OK;
}

/* Everything was eliminated: the offset is the optimum and recovery gives the plan. */
static int
solve_trivial(const as_problem *p, const as_problem *rp, const as_reduction *red,
              double gap, as_solve_result *res, as_err *err)
{
    as_assignment a;
    int rc, dropped = 0;

    as_assignment_init(&a, 0);
    a.objective = a.bound = as_problem_offset(rp);
    a.nodes = 0;
    res->outcome = AS_OUTCOME_OPTIMAL;
    rc = solve_keep(p, red, &a, AS_OUTCOME_OPTIMAL, gap, res, &dropped, err);
    if (rc == AS_OK && !dropped)
        res->outcome = res->plans[0].status; /* a restriction's, unproven: feasible */
    as_assignment_free(&a);
    return rc;
}

/*
 * Start plans for the k-best loop: the reductions' plan (entry 0) and its
 * single-node variations (as_reduction_candidates), each with its cost and
 * whether a returned plan is it.
 */
typedef struct loop_cands {
    const size_t *start, *node, *strat; /**< entry j > 0 is start with node[j-1] = strat[j-1] */
    size_t n;                           /**< entries, 0 without a start */
    double *cost;
    unsigned char *used;
} loop_cands;

/* Entry J of LC as a plan in BUF (NN nodes). */
static size_t *
cands_plan(const loop_cands *lc, size_t j, size_t nn, size_t *buf)
{
    memcpy(buf, lc->start, nn * sizeof *buf);
    if (j > 0)
        buf[lc->node[j - 1]] = lc->strat[j - 1];
    return buf;
}

static void
cands_init(loop_cands *lc, const as_problem *rp, const as_reduction *red, size_t *buf)
{
    size_t j, nn = as_problem_nnodes(rp);

    memset(lc, 0, sizeof *lc);
    if (red == NULL || (lc->start = as_reduction_start(red)) == NULL)
        return;
    lc->n = 1 + as_reduction_candidates(red, &lc->node, &lc->strat);
    lc->cost = as_xcalloc(lc->n, sizeof *lc->cost);
    lc->used = as_xcalloc(lc->n, 1);
    for (j = 0; j < lc->n; j++)
        lc->cost[j] = as_problem_eval(rp, cands_plan(lc, j, nn, buf));
}

/* Mark the entry that CHOICE (a returned plan of the reduced problem) is, if any. */
static void
cands_mark(loop_cands *lc, size_t nn, const size_t *choice)
{
    size_t v, diff = 0, at = 0, j;

    for (v = 0; lc->n > 0 && v < nn && diff < 2; v++)
        if (choice[v] != lc->start[v]) {
            diff++;
            at = v;
        }
    if (lc->n == 0 || diff > 1)
        return;
    if (diff == 0) {
        lc->used[0] = 1;
        return;
    }
    for (j = 1; j < lc->n; j++)
        if (lc->node[j - 1] == at && lc->strat[j - 1] == choice[at])
            lc->used[j] = 1;
}

/* The cheapest entry no returned plan is, in BUF with *COST; NULL if none. */
static const size_t *
cands_pick(const loop_cands *lc, size_t nn, size_t *buf, double *cost)
{
    size_t j, best = lc->n;

    for (j = 0; j < lc->n; j++)
        if (!lc->used[j] && (best == lc->n || lc->cost[j] < lc->cost[best]))
            best = j;
    if (best == lc->n)
        return NULL;
    *cost = lc->cost[best];
    return cands_plan(lc, best, nn, buf);
}

static void
cands_free(loop_cands *lc)
{
    free(lc->cost);
    free(lc->used);
}

/* Does plan CHOICE satisfy every row of P? */
static int
start_fits(const as_problem *p, const size_t *choice)
{
    as_err e;
    double obj;

    return as_problem_check(p, choice, &obj, NULL, &e) == AS_OK;
}

/*
 * A plan of RP that fits its budget from a quick beam search (at most a tenth of the time
 * left), into START with its cost; 0 if the beam finds none.
 */
static int
beam_start(const as_problem *rp, const as_solve_opts *o, double t0, size_t *start, double *cost)
{
    as_err e = {0};
    const as_solver_ops *beam = as_solver_find("beam", &e);
    as_limits bl = o->lim;
    as_assignment a;
    as_outcome out = AS_OUTCOME_LIMIT;
    int ok = 0;

    if (beam == NULL)
        return 0;
    bl.start = NULL;
    bl.verbosity = 0;
    bl.fits = NULL; /* the caller's check takes plans of the problem given, not of RP; the
                       ILP's start only has to fit RP's rows */
    if (o->lim.time_limit_s > 0) {
        bl.time_limit_s = 0.1 * (o->lim.time_limit_s - (as_now() - t0));
        if (bl.time_limit_s <= 0.05)
            return 0;
    }
    if (as_solve(beam, rp, &bl, NULL, 0, &a, &out, &e) == AS_OK &&
        (out == AS_OUTCOME_OPTIMAL || out == AS_OUTCOME_FEASIBLE) && start_fits(rp, a.choice)) {
        memcpy(start, a.choice, as_problem_nnodes(rp) * sizeof *start);
        *cost = as_problem_eval(rp, start);
        ok = 1;
    }
    as_assignment_free(&a);
    return ok;
}

/*
 * O's incumbent (a plan of P) as a plan of RP in OUT with its cost: every node of RP takes the
 * strategy that is the incumbent's strategy of its origin.  0 when the reductions dropped one
 * of those strategies, or the plan does not fit RP.
 */
static int
incumbent_start(const as_problem *rp, const as_reduction *red, const size_t *inc, size_t *out,
                double *cost)
{
    size_t i, s, nn = as_problem_nnodes(rp);

    for (i = 0; i < nn; i++) {
        size_t v = red != NULL ? as_reduction_origin(red, i) : i, k = as_problem_node(rp, i)->k;
        for (s = 0; s < k; s++)
            if ((red != NULL ? as_reduction_strategy(red, i, s) : s) == inc[v])
                break;
        if (s == k)
            return 0;
        out[i] = s;
    }
    if (!start_fits(rp, out))
        return 0;
    *cost = as_problem_eval(rp, out);
    return 1;
}

/* The caller's fits check (as_limits) of a plan of the problem solved (RP): recovered first
   (RED NULL: none); while RECORD, the cheapest plan that fails it goes to OVER. */
typedef struct fits_red {
    const as_problem *rp;
    const as_reduction *red;
    const as_limits *lim; /* the caller's */
    size_t *full;         /* one strategy per node of the original problem */
    int record;
    size_t *over;         /* a plan of RP that fits its rows, fails the check; OVER_OBJ */
    double over_obj;      /* its objective, INFINITY: none */
} fits_red;

static int
fits_recovered(void *ud, const size_t *choice)
{
    fits_red *f = ud;
    const size_t *full = choice;
    as_err e = {0};
    double obj;
    int ok;

    if (f->red != NULL) {
        as_reduction_recover(f->red, choice, f->full);
        full = f->full;
    }
    ok = f->lim->fits(f->lim->fits_ud, full);
    if (!ok && f->record && as_problem_check(f->rp, choice, &obj, NULL, &e) == AS_OK &&
        obj < f->over_obj) {
        f->over_obj = obj;
        memcpy(f->over, choice, as_problem_nnodes(f->rp) * sizeof *choice);
    }
    return ok;
}

/*
 * The heuristic's cheapest plan by the rows, F's OVER, when it failed the caller's check and is
 * cheaper than RES's plan (that passed it): recovered and checked on P into RES->over, with
 * the plan's bound (as_solve_result.over).
 */
static void
keep_over(const as_problem *p, const fits_red *f, as_solve_result *res)
{
    as_plan pl = {0};
    size_t n = as_problem_nnodes(p);
    as_err e = {0};

    if (!(f->over_obj < INFINITY) || res->nplans != 1)
        return;
    pl.choice = as_xcalloc(n + 1, sizeof *pl.choice);
    if (f->red != NULL)
        as_reduction_recover(f->red, f->over, pl.choice);
    else
        memcpy(pl.choice, f->over, n * sizeof *pl.choice);
    if (as_problem_check(p, pl.choice, &pl.objective, &pl.peak, &e) != AS_OK ||
        !(pl.objective < AS_ILP_FORBIDDEN_COST) ||
        !(pl.objective < res->plans[0].objective - 1e-12 * fabs(res->plans[0].objective))) {
        free(pl.choice);
        return;
    }
    pl.bound = fmin(res->plans[0].bound, pl.objective);
    pl.gap = as_rel_gap(pl.objective, pl.bound);
    pl.time_s = res->plans[0].time_s;
    pl.nodes = res->plans[0].nodes;
    pl.status = AS_OUTCOME_FEASIBLE;
    res->over = pl;
}

/* The k-best loop on the (reduced, mutable) problem RP; the time limit counts from T0.
   HPLAN: a plan of RP that fits its rows (the bound pruning's, heuristic_bound) for a
   heuristic to start from in the first solve, or NULL. */
static int
solve_loop(const as_problem *p, as_problem *rp, const as_reduction *red, const as_solve_opts *o,
           double t0, const size_t *hplan, as_solve_result *res, as_err *err)
{
    const as_solver_ops *ops = as_solver_find(o->solver ? o->solver : "glpk", err);
    as_limits lim = o->lim;
    as_assignment a;
    as_outcome outcome;
    size_t i, nn = as_problem_nnodes(rp), *buf, *hstart, *istart;
    double lb = red != NULL ? as_reduction_stats(red)->lb : NAN, cost = HUGE_VAL, icost = 0;
    loop_cands lc;
    fits_red fr = {rp, red, &o->lim, NULL, 0, NULL, INFINITY};
    int rc = AS_OK, said_timed = 0;

    if (ops == NULL)
        return AS_EUSAGE;
    if (o->lim.fits != NULL) {
        if (red != NULL)
            fr.full = as_xcalloc(as_problem_nnodes(p) + 1, sizeof *fr.full);
        /* a heuristic's first solve: its cheapest plan that fails the check too, for the
           caller's refit (as_solve_result.over) */
        fr.record = !(ops->flags & AS_SOLVER_EXACT);
        if (fr.record)
            fr.over = as_xcalloc(nn + 1, sizeof *fr.over);
        lim.fits = fits_recovered;
        lim.fits_ud = &fr;
    }
    buf = as_xcalloc(nn + 1, sizeof *buf);
    hstart = as_xcalloc(nn + 1, sizeof *hstart);
    istart = as_xcalloc(nn + 1, sizeof *istart);
    if (o->distinct != NULL && o->top > 1)
        o->distinct(o->distinct_ud, NULL, 0); /* a new solve: no layout returned yet */
    /* a heuristic (beam, mcts) is not given the reductions' plan (what the eliminations leave
       solves most graphs on its own); its start is the bound pruning's plan (HPLAN), which it
       polishes and returns when that beats its own search (beam/seed, mcts/start) */
    cands_init(&lc, rp, (ops->flags & AS_SOLVER_EXACT) ? red : NULL, buf);
    for (i = 0; i < (o->top ? o->top : 1); i++) {
        if (i > 0 && o->lim.time_limit_s > 0 && as_now() - t0 >= o->lim.time_limit_s)
            break; /* at the limit: the plans found so far */
        lim.start = cands_pick(&lc, nn, buf, &cost);
        if (i == 0 && o->incumbent != NULL && (ops->flags & AS_SOLVER_EXACT) &&
            incumbent_start(rp, red, o->incumbent, istart, &icost) &&
            (lim.start == NULL || icost < cost || !start_fits(rp, lim.start))) {
            lim.start = istart; /* the caller's plan: cheaper, or the only one that fits */
            cost = icost;
        }
        if (i == 0 && (ops->flags & AS_SOLVER_EXACT) && as_problem_memory(rp) > 0 &&
            (lim.start == NULL || !start_fits(rp, lim.start)) &&
            beam_start(rp, o, t0, hstart, &cost)) {
            /* under a budget the reductions' plan may not fit: the ILP then starts from
               nothing and can reach its limit without a plan; a quick beam gives it one */
            lim.start = hstart;
        }
        if (lim.start != NULL && isfinite(lb) && cost - lb <= o->lim.gap * fabs(cost)) {
            /* the reductions' bound (a bound for every plan) proves this one: no solve */
            as_assignment_init(&a, nn);
            memcpy(a.choice, lim.start, nn * sizeof *a.choice);
            a.objective = cost;
            a.bound = fmin(lb, cost);
            a.gap = as_rel_gap(cost, a.bound);
            a.nodes = 0;
            outcome = AS_OUTCOME_OPTIMAL;
            goto keep;
        }
        if (o->lim.time_limit_s > 0) {
            /* what is left, less a reserve for recovering and checking the plan and for the
               caller's own checks (the simulator's peak: 1.5 s on gpt3-13b) */
            lim.time_limit_s = o->lim.time_limit_s - (as_now() - t0) -
                               fmin(2.0, 0.05 * o->lim.time_limit_s);
            if (lim.time_limit_s <= 0.01 && lim.start == NULL) {
                if (i == 0) /* the reductions used up the time: no solve ran */
                    res->outcome = AS_OUTCOME_LIMIT;
                break;
            }
        }
        if (o->lim.time_limit_s > 0 && lim.time_limit_s <= 0.01) { /* no time to start one */
            as_assignment_init(&a, as_problem_nnodes(rp));
            a.bound = -HUGE_VAL;
            outcome = AS_OUTCOME_LIMIT;
        } else {
            if (!(ops->flags & AS_SOLVER_EXACT))
                lim.start = i == 0 ? hplan : NULL; /* later plans: no-good cuts may cut it */
            rc = as_solve(ops, rp, &lim, o->params, o->nparams, &a, &outcome, err);
            if (rc == AS_OK && a.timed && !said_timed++ && !res->start_timed &&
                o->lim.verbosity > 0) /* heuristic_bound said it for its own stop */
                as_info("%s: the time limit cut the search; the plan may differ from run to "
                        "run (with a limit that does not bind, one seed gives one plan)",
                        ops->name);
        }
        if (i == 0)
            fr.record = 0;
        if (rc == AS_OK && lim.start != NULL &&
            (outcome == AS_OUTCOME_OPTIMAL || outcome == AS_OUTCOME_FEASIBLE) &&
            cost < a.objective - o->lim.gap * fabs(a.objective) - 1e-12 * fabs(cost) &&
            start_fits(rp, lim.start)) {
            /* a known plan beats the solver's: its plan is not optimal and its bound is no
             * bound; keep the known plan with the reductions' bound */
            memcpy(a.choice, lim.start, nn * sizeof *a.choice);
            a.objective = as_problem_eval(rp, a.choice);
            a.bound = isfinite(lb) ? fmin(lb, a.objective) : -HUGE_VAL;
            a.gap = isfinite(a.bound) ? as_rel_gap(a.objective, a.bound) : HUGE_VAL;
            outcome = AS_OUTCOME_FEASIBLE;
        }
        if (rc == AS_OK && outcome == AS_OUTCOME_LIMIT && lim.start != NULL) {
            /* stopped before a plan of its own: the start plan fits every row */
            memcpy(a.choice, lim.start, as_problem_nnodes(rp) * sizeof *a.choice);
            a.from_start = !(ops->flags & AS_SOLVER_EXACT);
            a.objective = as_problem_eval(rp, a.choice);
            a.bound = fmin(isfinite(a.bound) ? fmax(a.bound, lb) : lb, a.objective);
            a.gap = as_rel_gap(a.objective, a.bound);
            outcome = AS_OUTCOME_FEASIBLE;
        }
    keep:
        if (i == 0 && res->nplans == 0)
            res->outcome = outcome;
        if (rc == AS_OK && (outcome == AS_OUTCOME_OPTIMAL || outcome == AS_OUTCOME_FEASIBLE)) {
            int dropped = 0;
            rc = solve_keep(p, red, &a, outcome, o->lim.gap, res, &dropped, err);
            if (rc == AS_OK && dropped) { /* a forbidden strategy: no (further) plan */
                as_assignment_free(&a);
                break;
            }
            if (rc == AS_OK && i == 0 && res->nplans == 1) { /* a restriction's, unproven */
                res->outcome = res->plans[0].status;
                keep_over(p, &fr, res);
            }
            cands_mark(&lc, nn, a.choice);
            if (rc == AS_OK && o->distinct != NULL && o->top > 1 &&
                !o->distinct(o->distinct_ud, res->plans[res->nplans - 1].choice,
                             res->plans[res->nplans - 1].objective)) {
                /* the same layout as a plan returned: cut it off, look further */
                free(res->plans[--res->nplans].choice);
                as_plan_free(&res->over);
                fr.over_obj = INFINITY;
                res->skipped++;
                if (res->skipped > AS_SOLVE_MAX_SKIPS * o->top)
                    i = o->top; /* enough looking */
                else
                    i--;
            }
        }
        else
            i = o->top; /* no (further) plan */
        if (rc == AS_OK && i + 1 < o->top)
            rc = as_problem_add_nogood(rp, a.choice, err);
        as_assignment_free(&a);
        if (rc != AS_OK)
            break;
    }
    for (i = 1; i < res->nplans; i++) { /* within a gap, a later plan may be a bit cheaper */
        as_plan x = res->plans[i];
        size_t j = i;
        for (; j > 0 && res->plans[j - 1].objective > x.objective; j--)
            res->plans[j] = res->plans[j - 1];
        res->plans[j] = x;
    }
    cands_free(&lc);
    free(buf);
    free(hstart);
    free(istart);
    free(fr.full);
    free(fr.over);
    return rc;
}

/* 1 if O's backend is a heuristic (not exact). */
static int
heuristic(const as_solve_opts *o)
{
    as_err e;
    const as_solver_ops *ops = as_solver_find(o->solver ? o->solver : "glpk", &e);

    return ops != NULL && !(ops->flags & AS_SOLVER_EXACT);
}

/*
 * The lower bound a heuristic's plan is measured against: the bound pruning's
 * (TRW-S with Lagrangian memory multipliers) on RP, whose pruned problem is
 * thrown away.  Sets ST's lb and bound rounds.  Its plan, recovered on RP, goes
 * into PLAN (as_problem_nnodes(RP) entries) when it fits RP's rows: *GOT = 1.  The
 * heuristic gets it as its start (as_limits.start, solve_loop): t5-base 2x8 under its
 * budget, beam and mcts on their own returned 0.0389387, this plan is 0.0384495.
 */
/* The bounds heuristic_bound's branching computes (reduce.c work_branch), with and without
   a time limit: on bench_heur's gpt2-small, bert-large and t5-base budget cells every start
   is as cheap as with the old timed work or cheaper; 12 gave dearer starts on bert-large 8
   (+0.11 %) and gpt2-small 2x4 (+0.06 %), 64 the same starts at 1.3-1.8 times the CPU
   (docs/ilp.md, Heuristics) */
#define HEUR_BB_EVALS 24

static int
heuristic_bound(const as_problem *rp, const as_solve_opts *o, double t0, as_reduce_stats *st,
                size_t *plan, int *got, int *timed, as_err *err)
{
    /* the same work with and without a time limit (fixed_work, HEUR_BB_EVALS bounds of the
       branching): the start, and so the heuristic's plan, does not depend on the time */
    as_reduce_opts ro = {.flags = AS_REDUCE_BOUND, .gap = o->lim.gap, .top = 1,
                         .fixed_work = 1, .bb_evals = HEUR_BB_EVALS, .bb_plain = 1};
    as_problem *bp = NULL;
    as_reduction *bred = NULL;

    if (as_problem_nnodes(rp) == 0)
        return AS_OK;
    /* under a time limit a safety stop at half of what is left, for the heuristic the rest;
       past it the bound is the rounds' so far, still a bound, but the start then depends on
       the time.  Before 2b7d764 this was the bound pruning's budget, a fifth, which its
       branching used up (gpt2-small 8 under bench_heur's budget, beam K=1 at -t 120: 6.6-12.2
       s CPU, 0.8 s now); on bert-large 2x8 the fixed work took 24 s of wall time on a machine
       at load 7, which a fifth of 120 s cut */
    if (o->lim.time_limit_s > 0)
        ro.deadline = as_now() + 0.5 * fmax(0, t0 + o->lim.time_limit_s - as_now());
    AS_CHECK(as_reduce_ex(rp, &ro, &bp, &bred, err));
    st->lb = as_reduction_stats(bred)->lb;
    st->ub = as_reduction_stats(bred)->ub;
    st->bound_rounds = as_reduction_stats(bred)->bound_rounds;
    *timed = as_reduction_stats(bred)->timed_out;
    if (*timed && o->lim.verbosity > 0)
        as_info("%s: the bound pruning for the start stopped at its safety stop (half of the "
                "time left): the start, and so the plan, may differ from run to run",
                o->solver);
    if (as_reduction_start(bred) != NULL) {
        as_reduction_recover(bred, as_reduction_start(bred), plan);
        *got = start_fits(rp, plan);
    }
    as_reduction_free(bred);
    as_problem_free(bp);
    return AS_OK;
}

/* The chosen solver's parameters (O's "solver/key=value" for it), checked as the backend
   takes them: the backend may never run (the reductions solve the problem), and a bad one
   would then pass unseen. */
static int
check_params(const as_solve_opts *o, as_err *err)
{
    const as_solver_ops *ops = as_solver_find(o->solver ? o->solver : "glpk", err);
    as_solver_data *data = NULL;
    int rc;

    if (ops == NULL)
        return err->code;
    if (ops->new_data != NULL)
        AS_CHECK(ops->new_data(&data, err));
    rc = solve_params(ops, data, o->params, o->nparams, err);
    if (ops->free_data != NULL)
        ops->free_data(data);
    return rc;
}

static int solve_once(const as_problem *p, const as_solve_opts *o, as_solve_result *res,
                      as_err *err);
static int solve_rowgen(const as_problem *p, const as_solve_opts *o, as_solve_result *res,
                        as_err *err);

int
as_solve_problem(const as_problem *p, const as_solve_opts *o, as_solve_result *res, as_err *err)
{
    double above = o->rowgen_above != 0 ? o->rowgen_above : AS_ROWGEN_ENTRIES, ex;

    memset(res, 0, sizeof *res); /* as solve_once leaves it when P is not valid */
    AS_CHECK(as_problem_validate(p, err));
    if (o->top <= 1 && o->reduce != 0 && as_problem_memory(p) > 0 && above >= 0) {
        ex = as_problem_live_expanded(p);
        as_debug("solve: the binding rows hold %.0f entries with their chains (row generation "
                 "above %.0f)", ex, above);
        if (ex > above)
            return solve_rowgen(p, o, res, err);
    }
    return solve_once(p, o, res, err);
}

static int
solve_once(const as_problem *p, const as_solve_opts *o, as_solve_result *res, as_err *err)
{
    unsigned flags = o->reduce;
    as_problem *rp = NULL;
    as_reduction *red = NULL;
    double t0 = as_now();
    size_t *hplan = NULL; /* the bound pruning's plan of RP, a heuristic's start */
    int rc, hgot = 0;

    memset(res, 0, sizeof *res);
    AS_CHECK(as_problem_validate(p, err));
    AS_CHECK(check_params(o, err));
    if (flags != 0 && heuristic(o)) {
        /* beam and mcts search the problem with its structure merged (followers, constant
           edges, alias pairs), not what the eliminations and the bound pruning leave: those
           solve most graphs on their own and would leave the heuristic nothing to do */
        flags &= AS_REDUCE_FOLLOW | AS_REDUCE_CONST | AS_REDUCE_ALIAS;
    }
    /* the sizes of the unreduced ILP are only reported: under a time limit they are counted
       at the end, when time is left (as_ilp_count reads every matrix entry) */
    if (!o->count_before)
        res->before.uncounted = 1;
    else if (o->lim.time_limit_s <= 0)
        AS_CHECK(ilp_stats_of(p, &res->before, err));
    if (getenv("AS_DEBUG_REDUCE") != NULL)
        fprintf(stderr, "solve: ILP before %.3f s\n", as_now() - t0);
    if (flags != 0) {
        /* the pruning may use the gap too: the solver then only has to beat the reductions'
           plan by more than the gap; for k-best (top > 1) as_reduce_ex keeps every plan up
           to a top-th one and turns eliminations and dominance off */
        as_reduce_opts ro = {.flags = flags, .gap = o->lim.gap, .top = o->top,
                             .layouts = o->distinct != NULL && o->top > 1,
                             .incumbent = o->incumbent, /* its cost bounds the pruning */
                             .branch = o->branch_inc, /* the caller's own plan: */
                             .own_plan = o->own_plan, .own_obj = o->own_obj,
                             .ilp_cap = o->top <= 1 ? o->ilp_cap : 0,
                             .duals_from = o->top <= 1 ? o->duals_from : NULL};
        /* distinct layouts: the loop looks at most at top x (1 + AS_SOLVE_MAX_SKIPS) plans
           in order of cost, and the bound pruning keeps every strategy of those */
        if (ro.layouts)
            ro.top = o->top * (1 + AS_SOLVE_MAX_SKIPS);
        /* the limit covers the reductions: their bound rounds stop at 80 % of it, leaving
           the rest for the solver (or for returning the rounds' plan as feasible) */
        if (o->lim.time_limit_s > 0) {
            /* for a plan's gap (branch_inc) the rounds' branching is what closes it */
            ro.deadline = t0 + (o->branch_inc ? 0.9 : 0.8) * o->lim.time_limit_s;
            ro.abort_at = t0 + o->lim.time_limit_s;
        }
        AS_CHECK(as_reduce_ex(p, &ro, &rp, &red, err));
        if (getenv("AS_DEBUG_REDUCE") != NULL)
            fprintf(stderr, "solve: reduced %.3f s\n", as_now() - t0);
        res->red = *as_reduction_stats(red);
        if (o->top <= 1) /* for a solve of the same problem to start from (solve/fit.c) */
            res->duals = as_reduction_take_duals(red);
        if (o->reduce & AS_REDUCE_BOUND & ~flags) {
            hplan = as_xcalloc(as_problem_nnodes(rp) + 1, sizeof *hplan);
            AS_CHECK_GOTO(rc, heuristic_bound(rp, o, t0, &res->red, hplan, &hgot,
                                                          &res->start_timed, err), out);
        }
    } else {
        rp = as_problem_clone(p);
        res->red.nodes = as_problem_nnodes(p);
        res->red.edges = as_problem_nedges(p);
    }
    if (as_problem_nnodes(rp) > 0 && count_in_time(rp, o, t0))
        AS_CHECK_GOTO(rc, ilp_stats_of(rp, &res->after, err), out);
    else if (as_problem_nnodes(rp) > 0)
        res->after.uncounted = 1;
    res->build_s = as_now() - t0;
    if (getenv("AS_DEBUG_REDUCE") != NULL) {
        size_t v, ks = 0;
        for (v = 0; v < as_problem_nnodes(rp); v++)
            ks += as_problem_node(rp, v)->k;
        fprintf(stderr, "solve: reduced problem %zu nodes, %zu strategies, %zu edges, %zu rows; "
                "ILP %zu cols, %zu rows, %zu nnz%s\n", as_problem_nnodes(rp), ks,
                as_problem_nedges(rp), as_problem_nlive(rp), res->after.cols, res->after.rows,
                res->after.nnz, res->after.uncounted ? " (uncounted)" : "");
    }
    if (as_problem_nnodes(rp) == 0)
        rc = solve_trivial(p, rp, red, o->lim.gap, res, err);
    else
        rc = solve_loop(p, rp, red, o, t0, hgot ? hplan : NULL, res, err); /* the limit covers
                                                                                the reductions */
    if (rc == AS_OK && o->lim.time_limit_s > 0 && o->count_before) {
        if (count_in_time(p, o, t0))
            rc = ilp_stats_of(p, &res->before, err);
        else
            res->before.uncounted = 1;
    }
    if (rc == AS_OK && o->groups != NULL && res->nplans == 1) { /* k-best: plans stay apart */
        as_plan *pl = &res->plans[0];
        if (as_group_settle(o->groups, p, pl->choice, &pl->objective, &pl->peak) > 0)
            pl->gap = as_rel_gap(pl->objective, pl->bound);
    }
out:
    res->total_s = as_now() - t0;
    if (rc != AS_OK)
        as_solve_result_free(res);
    free(hplan);
    as_reduction_free(red);
    as_problem_free(rp);
    return rc;
}

/* ---- row generation ---- */

/* The points a round adds (the most broken first). */
#define ROWGEN_ADD 256

typedef struct rg_point {
    double over;
    size_t t;
} rg_point;

static int
rg_cmp(const void *a, const void *b)
{
    const rg_point *x = a, *y = b;

    if (x->over != y->over)
        return x->over > y->over ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

/*
 * Row generation, for budgets whose rows the reductions cannot hold (as_problem_live_expanded
 * above AS_ROWGEN_ENTRIES: the 312k-instruction HLO step has 286k binding points of 3.4k
 * entries each once their segment chains are expanded, 966 M, where gpt3-175b's tied layers
 * have 23 M).  P with a live mask is a relaxation of P: its bound is P's bound and a plan of
 * it that fits every point of P is P's plan.  Round 1 keeps no point; each round solves the
 * masked problem, checks its plan on every point (as_problem_seg_bytes: one pass), keeps it
 * when it fits, else repairs a copy on P (as_fit_repair; a plan that fits, the next round's
 * incumbent) and adds the ROWGEN_ADD points it breaks most.  It stops when the plan fits (the
 * masked problem's outcome is P's), when the best repaired plan is within the gap of the
 * bound, or at the time limit with the best plan that fits and the highest bound.
 */
static int
solve_rowgen(const as_problem *p, const as_solve_opts *o, as_solve_result *res, as_err *err)
{
    size_t nl = as_problem_nlive(p), n = as_problem_nnodes(p), t, nv, round, kept = 0;
    unsigned char *on = as_xcalloc(nl + 1, 1);
    rg_point *cand = as_xcalloc(nl + 1, sizeof *cand);
    size_t *best = NULL, *fix = as_xcalloc(n + 1, sizeof *fix);
    double t0 = as_now(), budget = as_problem_memory(p), lb = -HUGE_VAL, ub = HUGE_VAL;
    double gap = o->lim.gap > 0 ? o->lim.gap : 1e-9;
    as_problem *mp = (as_problem *)p; /* never const itself (as_problem_validate's note): the
                                         mask is on only while a round solves */
    as_solve_result last;
    int have = 0, rc = AS_OK, fits_all = 0;

    memset(&last, 0, sizeof last);
    memset(res, 0, sizeof *res);
    if (o->incumbent != NULL) { /* fits every row of P */
        best = as_xmalloc((n + 1) * sizeof *best);
        memcpy(best, o->incumbent, n * sizeof *best);
        ub = as_problem_eval(p, best);
    }
    for (round = 0;; round++) {
        as_solve_opts o2 = *o;
        as_solve_result r;
        as_plan *pl;
        double *segs, tr, left;
        int fitted;
        if (o->lim.time_limit_s > 0) {
            left = o->lim.time_limit_s - (as_now() - t0);
            if (round > 0 && left < 0.05 * o->lim.time_limit_s)
                break;
            o2.lim.time_limit_s = fmax(left, 0.01);
        }
        o2.incumbent = best;
        o2.branch_inc = best != NULL && o->branch_inc;
        o2.duals_from = NULL; /* other rows */
        o2.count_before = 0;
        as_problem_set_live_mask(mp, on);
        rc = solve_once(mp, &o2, &r, err);
        as_problem_set_live_mask(mp, NULL);
        as_debug("solve: row generation round %zu: %zu of %zu points kept, %s, %.3f s", round,
                 kept, nl, rc != AS_OK ? "failed" : r.nplans > 0 ? "a plan" : "no plan",
                 as_now() - t0);
        if (rc != AS_OK) {
            if (best != NULL && err->code == AS_ESOLVER) { /* out of time: the best so far */
                as_err_clear(err);
                rc = AS_OK;
            }
            break;
        }
        if (have)
            as_solve_result_free(&last);
        last = r;
        have = 1;
        if (r.nplans == 0) /* the relaxation has none (infeasible: P neither), or no time */
            break;
        pl = &r.plans[0];
        if (pl->bound > lb)
            lb = pl->bound;
        segs = as_problem_seg_bytes(p, pl->choice);
        for (t = nv = 0; t < nl; t++) {
            double use = as_problem_live_bytes(p, t, segs, pl->choice);
            if (use > budget * (1 + 1e-9) && !on[t])
                cand[nv++] = (rg_point){use - budget, t};
        }
        free(segs);
        if (nv == 0) { /* fits P: the relaxation's outcome is P's */
            fits_all = 1;
            if (pl->objective < ub) {
                ub = pl->objective;
                free(best);
                best = as_xmalloc((n + 1) * sizeof *best);
                memcpy(best, pl->choice, n * sizeof *best);
            }
            break;
        }
        memcpy(fix, pl->choice, n * sizeof *fix);
        tr = as_now();
        /* not from the first round's plan: nothing held it down (the HLO step: 260k points
           over, 10 s to give up), and one round of rows usually brings a plan that fits.
           Under a limit only with a quarter of it left: the repair's index and first scan
           do not stop (5.5 s on the 104k-instruction step's rows with copies, where the
           limit was passed by that much) */
        left = o->lim.time_limit_s > 0 ? o->lim.time_limit_s - (tr - t0) : HUGE_VAL;
        fitted = round > 0 && left > 0.25 * o->lim.time_limit_s &&
                 as_fit_repair(p, fix, tr + (o->lim.time_limit_s > 0
                                                 ? fmin(0.05 * o->lim.time_limit_s, 0.5 * left)
                                                 : 5));
        as_debug("solve: row generation round %zu: %zu points over, the repair %s (%.3f s)",
                 round, nv, fitted ? "fits" : "does not fit", as_now() - tr);
        if (fitted) {
            double obj = as_problem_eval(p, fix);
            if (obj < ub) {
                ub = obj;
                free(best);
                best = as_xmalloc((n + 1) * sizeof *best);
                memcpy(best, fix, n * sizeof *best);
            }
        }
        qsort(cand, nv, sizeof *cand, rg_cmp);
        for (t = 0; t < nv && t < ROWGEN_ADD; t++)
            on[cand[t].t] = 1;
        kept += t;
        if (best != NULL && as_rel_gap(ub, lb) <= gap)
            break;
    }
    if (rc != AS_OK)
        goto out;
    if (!have) { /* the first round ran out of time with an incumbent of the caller's */
        memset(&last, 0, sizeof last);
        last.outcome = AS_OUTCOME_FEASIBLE;
        have = 1;
    }
    *res = last;
    have = 0;
    res->rowgen_rounds = round + 1;
    res->rowgen_points = kept;
    if (best == NULL) { /* no plan that fits P */
        if (res->nplans > 0 && !fits_all) {
            for (t = 0; t < res->nplans; t++)
                as_plan_free(&res->plans[t]);
            res->nplans = 0;
            res->outcome = AS_OUTCOME_LIMIT;
        }
        goto out;
    }
    if (res->nplans == 0) {
        res->plans = as_xcalloc(1, sizeof *res->plans);
        res->nplans = 1;
        res->plans[0].nodes = -1;
    }
    if (!fits_all || res->plans[0].objective > ub) {
        as_plan *pl = &res->plans[0];
        free(pl->choice);
        pl->choice = best;
        best = NULL;
        pl->objective = ub;
        pl->bound = lb;
        pl->gap = as_rel_gap(ub, lb);
        pl->status = pl->gap <= gap ? AS_OUTCOME_OPTIMAL : AS_OUTCOME_FEASIBLE;
        res->outcome = pl->status;
    }
    res->plans[0].peak = as_problem_peak(p, res->plans[0].choice);
out:
    if (have)
        as_solve_result_free(&last);
    res->total_s = as_now() - t0;
    free(best);
    free(fix);
    free(cand);
    free(on);
    return rc;
}

/* ---- external solutions ---- */

/*
 * Compare the objective a solution file states with the plan's: autoshard's files state
 * seconds x as_ilp_obj_scale with the constant in a fixed column; files written before put the
 * constant in the objective row's RHS, which solvers read with either sign or ignore, so
 * accept those three too.
 */
static int
file_obj_ok(double fobj, double obj, double offset, double scale)
{
    /* files autoshard writes state seconds x SCALE, the constant included (a fixed column) */
    if (!isnan(fobj) && obj_close(fobj / scale, obj, 1e-5))
        return 1;
    return isnan(fobj) || obj_close(fobj, obj, 1e-5) || obj_close(fobj + offset, obj, 1e-5) ||
           obj_close(fobj + 2 * offset, obj, 1e-5);
}

int
as_solve_from_values(const as_problem *p, unsigned reduce, const char *solpath, as_plan *plan,
                     as_sol_status *status, as_err *err)
{
    as_problem *rp = NULL;
    as_reduction *red = NULL;
    as_ilp *ilp = NULL;
    double *x = NULL, fobj = NAN;
    size_t *rc_choice = NULL, n = as_problem_nnodes(p);
    int rc;

    memset(plan, 0, sizeof *plan);
    AS_CHECK(as_solve_build_ilp(p, reduce, &rp, &red, &ilp, err));
    x = as_xcalloc(as_ilp_data(ilp)->ncols + 1, sizeof *x);
    AS_CHECK_GOTO(rc, as_ilp_read_solution(ilp, solpath, x, status, &fobj, err), out);
    if (*status == AS_SOL_INFEASIBLE || *status == AS_SOL_NONE)
        goto out;
    rc_choice = as_xcalloc(as_problem_nnodes(rp ? rp : p) + 1, sizeof *rc_choice);
    if ((rc = as_ilp_assignment(ilp, x, rc_choice, err)) != AS_OK) {
        as_err_prefix(err, "%s: ", solpath);
        rc = err->code = AS_EPARSE;
        goto out;
    }
    plan->choice = as_xcalloc(n + 1, sizeof *plan->choice);
    if (red != NULL)
        as_reduction_recover(red, rc_choice, plan->choice);
    else
        memcpy(plan->choice, rc_choice, n * sizeof *rc_choice);
    if ((rc = as_problem_check(p, plan->choice, &plan->objective, &plan->peak, err)) != AS_OK) {
        as_err_prefix(err, "%s: not a valid plan: ", solpath);
        rc = err->code = AS_EPARSE;
        goto out;
    }
    if (!file_obj_ok(fobj, plan->objective, as_ilp_data(ilp)->offset, as_ilp_obj_scale(ilp))) {
        rc = as_errf(err, AS_EPARSE, "%s: states objective %.10g but the plan costs %.10g "
                     "(solution of another model?)", solpath, fobj, plan->objective);
        goto out;
    }
    plan->status = *status == AS_SOL_OPTIMAL ? AS_OUTCOME_OPTIMAL : AS_OUTCOME_FEASIBLE;
    plan->bound = *status == AS_SOL_OPTIMAL ? plan->objective : -HUGE_VAL;
    plan->nodes = -1;
out:
    if (rc != AS_OK)
        as_plan_free(plan);
    free(rc_choice);
    free(x);
    as_ilp_free(ilp);
    as_reduction_free(red);
    as_problem_free(rp);
    return rc;
}
