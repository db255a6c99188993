/* solver_glpk.c -- the default backend: GLPK's simplex and branch-and-cut.
 *
 * The ILP (formulate/ilp.h) is loaded into a glp_prob by as_ilp_load_glpk
 * (export.c, shared with the MPS/LP writers), then solved in two steps:
 * glp_simplex with presolve for the LP relaxation (its value is the root
 * bound, and an infeasible relaxation proves the ILP infeasible), then
 * glp_intopt with presolve, the time limit and the relative gap.  A
 * callback records the best open node's bound and the tree size.  GLPK
 * aborts on misuse, so every input is checked before a glp_* call
 * (as_ilp_load_glpk does that), and its return code and solution status are
 * mapped to as_status and as_outcome here only.
 *
 * Under a time limit the solve runs in a child process that the parent
 * stops at the limit plus a grace: GLPK checks tm_lim only between simplex
 * iterations, and its presolver and basis factorisation on a large LP took
 * several seconds past it (gpt3-13b on 2x8 under a budget: 4.5 s).  The
 * caller then keeps the reductions' plan (solver.c).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glpk.h>

#include "libhooks.h"
#include "solve/solver.h"

#define SOLVER_NAME "glpk"
#define SOLVER_DESC "GLPK simplex + branch-and-cut (exact; default)"

struct as_solver_data {
    int presolve;  /**< "glpk/presolve" 0/1, default 1 */
    int cuts;      /**< "glpk/cuts" 0/1: Gomory, MIR, cover and clique cuts, default 1 */
};

typedef struct glpk_cb_info {
    double bound;  /**< best open node's bound, -HUGE_VAL until known */
    long nodes;
    double *start; /**< 1-based column values of a plan to offer as incumbent, or NULL */
} glpk_cb_info;

static void
glpk_cb(glp_tree *tree, void *info)
{
    glpk_cb_info *ci = info;
    int a, n, t, best;

    if (ci->start != NULL && glp_ios_reason(tree) == GLP_IHEUR) {
        glp_ios_heur_sol(tree, ci->start); /* rejected if no better than the incumbent */
        ci->start = NULL;
    }
    glp_ios_tree_size(tree, &a, &n, &t);
    ci->nodes = t;
    best = glp_ios_best_node(tree);
    if (best != 0)
        ci->bound = glp_ios_node_bound(tree, best);
}

static AS_DECL_SOLVER_NEW(glpk_new)
{
    *data = as_xcalloc(1, sizeof **data);
    (*data)->presolve = 1;
    (*data)->cuts = 1;
    return AS_OK;
}

static AS_DECL_SOLVER_FREE(glpk_free)
{
    free(data);
}

static AS_DECL_SOLVER_PARAM(glpk_param)
{
    int *dst = strcmp(key, "presolve") == 0 ? &data->presolve
               : strcmp(key, "cuts") == 0   ? &data->cuts
                                            : NULL;

    if (dst == NULL)
        return as_errf(err, AS_EUSAGE, "unknown parameter '%s/%s'", SOLVER_NAME, key);
    if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
        return as_errf(err, AS_EUSAGE, "parameter '%s/%s' must be 0 or 1", SOLVER_NAME, key);
    *dst = value[0] == '1';
    return AS_OK;
}

static int
glpk_ms(double seconds)
{
    if (seconds <= 0)
        return INT32_MAX;
    return seconds * 1000 >= INT32_MAX ? INT32_MAX : (int)fmax(1, seconds * 1000);
}

/* LP relaxation: sets *outcome on infeasible/limit, *root to its value. */
static int
glpk_relax(glp_prob *lp, const as_limits *lim, double t0, double *root, as_outcome *outcome,
           as_err *err)
{
    glp_smcp sm;
    int ret;

    glp_init_smcp(&sm);
    sm.presolve = GLP_ON;
    sm.msg_lev = as_verbosity >= 2 ? GLP_MSG_ON : GLP_MSG_OFF;
    if (lim->time_limit_s > 0) /* what building and loading the ILP left */
        sm.tm_lim = glpk_ms(fmax(lim->time_limit_s - (as_now() - t0), 0.001));
    ret = glp_simplex(lp, &sm);
    if (ret == GLP_ENOPFS || (ret == 0 && glp_get_status(lp) == GLP_NOFEAS)) {
        *outcome = AS_OUTCOME_INFEASIBLE;
        return AS_OK;
    }
    if (ret == GLP_ETMLIM || ret == GLP_EITLIM) {
        *outcome = AS_OUTCOME_LIMIT;
        return AS_OK;
    }
    if (ret != 0 || glp_get_status(lp) != GLP_OPT)
        return as_errf(err, AS_ESOLVER, "glp_simplex failed (code %d, status %d)", ret,
                       glp_get_status(lp));
    *root = glp_get_obj_val(lp);
    return AS_OK;
}

/* Map glp_intopt's return code and glp_mip_status to an outcome. */
static int
glpk_mip_outcome(glp_prob *lp, int ret, as_outcome *outcome, as_err *err)
{
    int st = glp_mip_status(lp);

    if (ret == GLP_ENOPFS || st == GLP_NOFEAS) {
        *outcome = AS_OUTCOME_INFEASIBLE;
        return AS_OK;
    }
    if (ret != 0 && ret != GLP_ETMLIM && ret != GLP_EMIPGAP && ret != GLP_ESTOP)
        return as_errf(err, AS_ESOLVER, "glp_intopt failed (code %d)", ret);
    if (st == GLP_OPT || (st == GLP_FEAS && ret == GLP_EMIPGAP))
        /* proven within the requested gap counts as optimal, as CBC reports it */
        *outcome = ret == 0 || ret == GLP_EMIPGAP ? AS_OUTCOME_OPTIMAL : AS_OUTCOME_FEASIBLE;
    else if (st == GLP_FEAS)
        *outcome = AS_OUTCOME_FEASIBLE;
    else
        *outcome = AS_OUTCOME_LIMIT;
    return AS_OK;
}

static int
glpk_run(as_solver_data *data, glp_prob *lp, const as_ilp *ilp, const as_limits *lim, double t0,
         as_assignment *out, as_outcome *outcome, as_err *err)
{
    const as_ilp_view *iv = as_ilp_data(ilp);
    glpk_cb_info ci = {-HUGE_VAL, 0, NULL};
    double root = -HUGE_VAL, *x, scale = as_ilp_obj_scale(ilp), *startx = NULL;
    glp_iocp io;
    size_t j;
    int ret;

    /* objective in O(1) units (as_ilp_obj_scale); answers are scaled back below */
    for (j = 0; j < iv->ncols; j++)
        glp_set_obj_coef(lp, (int)j + 1, iv->obj[j] * scale);
    glp_set_obj_coef(lp, 0, iv->offset * scale);
    AS_CHECK(glpk_relax(lp, lim, t0, &root, outcome, err));
    root /= scale;
    if (*outcome != AS_OUTCOME_NOTRUN)
        return AS_OK;
    glp_init_iocp(&io);
    io.presolve = data->presolve ? GLP_ON : GLP_OFF;
    io.msg_lev = as_verbosity >= 2 ? GLP_MSG_ON : GLP_MSG_OFF;
    io.mip_gap = lim->gap;
    /* prune only on real ties (the objective is O(1) after scaling) */
    io.tol_obj = 1e-12;
    io.gmi_cuts = io.mir_cuts = io.cov_cuts = io.clq_cuts = data->cuts ? GLP_ON : GLP_OFF;
    if (lim->time_limit_s > 0) {
        double left = lim->time_limit_s - (as_now() - t0);
        io.tm_lim = glpk_ms(fmax(left, 0.001));
    }
    io.cb_func = glpk_cb;
    io.cb_info = &ci;
    if (lim->start != NULL) {
        /* the callback sees the problem as loaded only without the MIP presolver; the
           LP relaxation above left an optimal basis, which is what intopt then needs */
        startx = as_xcalloc(iv->ncols + 1, sizeof *startx);
        as_ilp_point(ilp, lim->start, startx + 1);
        ci.start = startx;
        io.presolve = GLP_OFF;
    }
    ret = glp_intopt(lp, &io);
    if (ret == GLP_EROOT && startx != NULL) { /* no optimal basis for intopt: presolve again */
        io.presolve = data->presolve ? GLP_ON : GLP_OFF;
        ci.start = NULL; /* the presolved problem's columns are not the ILP's */
        ret = glp_intopt(lp, &io);
    }
    free(startx);
    AS_CHECK(glpk_mip_outcome(lp, ret, outcome, err));
    out->nodes = ci.nodes;
    out->bound = fmax(root, ci.bound / scale);
    if (*outcome != AS_OUTCOME_OPTIMAL && *outcome != AS_OUTCOME_FEASIBLE)
        return AS_OK;
    x = as_xcalloc(iv->ncols + 1, sizeof *x);
    for (j = 0; j < iv->ncols; j++)
        x[j] = glp_mip_col_val(lp, (int)j + 1);
    ret = as_ilp_assignment(ilp, x, out->choice, err);
    free(x);
    AS_CHECK(ret);
    out->objective = glp_mip_obj_val(lp) / scale;
    if (ret == 0 && *outcome == AS_OUTCOME_OPTIMAL) /* the whole tree was searched */
        out->bound = out->objective;
    return AS_OK;
}

/* Build and load the ILP of P, then solve it (T0: when the limit started). */
static int
glpk_whole(as_solver_data *data, const as_problem *p, const as_limits *lim, double t0,
           as_assignment *out, as_outcome *outcome, as_err *err)
{
    as_ilp *ilp = NULL;
    glp_prob *lp = NULL;
    int rc;

    as_glpk_hooks();
    AS_CHECK(as_ilp_build(p, NULL, &ilp, err));
    lp = glp_create_prob();
    AS_CHECK_GOTO(rc, as_ilp_load_glpk(ilp, lp, err), out);
    rc = glpk_run(data, lp, ilp, lim, t0, out, outcome, err);
out:
    glp_delete_prob(lp);
    as_ilp_free(ilp);
    return rc;
}

/* Read N bytes from FD into BUF before DEADLINE (as_now() seconds); 1 if all came. */
static int
read_until(int fd, void *buf, size_t n, double deadline)
{
    char *p = buf;

    while (n > 0) {
        struct pollfd pf = {fd, POLLIN, 0};
        double left = deadline - as_now();
        ssize_t got;
        int pr;
        if (left <= 0)
            return 0;
        pr = poll(&pf, 1, (int)fmin(left * 1000 + 1, 1e9));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return 0;
        got = read(fd, p, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return 0;
        p += got;
        n -= (size_t)got;
    }
    return 1;
}

static void
write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;

    while (n > 0) {
        ssize_t put = write(fd, p, n);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return;
        p += put;
        n -= (size_t)put;
    }
}

/* What the child sends back before the choice vector. */
typedef struct glpk_answer {
    int rc;
    as_outcome outcome;
    double objective, bound;
    long nodes;
    as_err err;
} glpk_answer;

/*
 * glpk_whole in a child killed at T0 + the limit + a grace (0.25 s); past it,
 * or if the child dies, the outcome is LIMIT with no plan.  In-process when
 * fork fails.
 */
static int
glpk_forked(as_solver_data *data, const as_problem *p, const as_limits *lim, double t0,
            as_assignment *out, as_outcome *outcome, as_err *err)
{
    double deadline = t0 + lim->time_limit_s + 0.25;
    glpk_answer ans;
    int fd[2], status;
    pid_t pid;

    fflush(NULL);
    if (pipe(fd) != 0)
        return glpk_whole(data, p, lim, t0, out, outcome, err);
    if ((pid = fork()) < 0) {
        close(fd[0]);
        close(fd[1]);
        return glpk_whole(data, p, lim, t0, out, outcome, err);
    }
    if (pid == 0) { /* child: solve, send, leave without running atexit handlers */
        close(fd[0]);
        memset(&ans, 0, sizeof ans);
        ans.rc = glpk_whole(data, p, lim, t0, out, &ans.outcome, &ans.err);
        ans.objective = out->objective;
        ans.bound = out->bound;
        ans.nodes = out->nodes;
        write_all(fd[1], &ans, sizeof ans);
        if (ans.rc == AS_OK)
            write_all(fd[1], out->choice, out->n * sizeof *out->choice);
        _exit(0);
    }
    close(fd[1]);
    if (!read_until(fd[0], &ans, sizeof ans, deadline) ||
        (ans.rc == AS_OK && !read_until(fd[0], out->choice, out->n * sizeof *out->choice,
                                        deadline))) {
        kill(pid, SIGKILL); /* past the limit (or the child died): no answer */
        memset(&ans, 0, sizeof ans);
        ans.outcome = AS_OUTCOME_LIMIT;
        ans.bound = -HUGE_VAL;
    }
    close(fd[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (ans.rc != AS_OK) {
        *err = ans.err;
        return ans.rc;
    }
    *outcome = ans.outcome;
    out->objective = ans.objective;
    out->bound = ans.bound;
    out->nodes = ans.nodes;
    return AS_OK;
}

static AS_DECL_SOLVER_SOLVE(glpk_solve)
{
    double t0 = as_now(); /* the limit covers building and loading the ILP */

    if (lim->time_limit_s > 0)
        return glpk_forked(data, p, lim, t0, out, outcome, err);
    return glpk_whole(data, p, lim, t0, out, outcome, err);
}

const as_solver_ops as_solver_glpk = {
    .name = SOLVER_NAME,
    .desc = SOLVER_DESC,
    .flags = AS_SOLVER_EXACT,
    .new_data = glpk_new,
    .free_data = glpk_free,
    .set_param = glpk_param,
    .solve = glpk_solve,
};
