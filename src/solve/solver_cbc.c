/* solver_cbc.c -- COIN-OR CBC through its C API (coin/Cbc_C_Interface.h).
 *
 * Built only when configure finds cbc.pc (HAVE_CBC).  The ILP's CSC arrays
 * are 0-based, which is what Cbc_loadProblem takes, so no copy beyond the
 * bound conversion (HUGE_VAL -> COIN_DBL_MAX) is needed.  Limits map to
 * CBC's own parameters (seconds, ratioGap, threads, logLevel).  CBC has no
 * objective constant in loadProblem: the ILP's offset is added back here.
 *
 * CBC checks its time limit between branch-and-bound nodes only: its root
 * LP and cuts on a large ILP can run far past it.  With a time limit the
 * solve therefore runs in a forked child that sends its answer back through
 * a pipe; the parent gives it the limit plus a grace of 1 s + 5 %, then
 * kills it and reports the limit (the driver then falls back to the
 * reductions' plan, if any).  Without a limit it runs in-process.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* What a solve ended with; the column values travel separately. */
enum { CBC_NONE, CBC_ABANDONED, CBC_INFEASIBLE, CBC_SOLUTION };
typedef struct cbc_result {
    int state;
    int optimal;
    double obj, bound; /**< in the scaled units, without the offset */
    long nodes;
} cbc_result;

/* Solve M in this process; X gets NCOLS values when there is a solution. */
static void
cbc_collect(Cbc_Model *m, size_t ncols, cbc_result *r, double *x)
{
    const double *sol;

    memset(r, 0, sizeof *r);
    Cbc_solve(m);
    r->nodes = Cbc_getNodeCount(m);
    if (Cbc_isAbandoned(m)) {
        r->state = CBC_ABANDONED;
    } else if (Cbc_isProvenInfeasible(m)) {
        r->state = CBC_INFEASIBLE;
    } else if ((sol = Cbc_bestSolution(m)) != NULL) {
        r->state = CBC_SOLUTION;
        r->optimal = Cbc_isProvenOptimal(m);
        r->obj = Cbc_getObjValue(m);
        r->bound = Cbc_getBestPossibleObjValue(m);
        memcpy(x, sol, ncols * sizeof *x);
    }
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

/* Write all of BUF; the child's side of the pipe. */
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

/* Solve M in a child killed after LIMIT seconds plus a grace; in-process if fork fails. */
static void
cbc_forked(Cbc_Model *m, size_t ncols, double limit, cbc_result *r, double *x)
{
    double deadline = as_now() + limit * 1.02 + 0.5; /* the limit covers the whole run */
    int fd[2], status;
    pid_t pid;

    fflush(NULL);
    if (pipe(fd) != 0 || (pid = fork()) < 0) {
        cbc_collect(m, ncols, r, x);
        return;
    }
    if (pid == 0) { /* child: solve, send, leave without running atexit handlers */
        close(fd[0]);
        cbc_collect(m, ncols, r, x);
        write_all(fd[1], r, sizeof *r);
        if (r->state == CBC_SOLUTION)
            write_all(fd[1], x, ncols * sizeof *x);
        _exit(0);
    }
    close(fd[1]);
    memset(r, 0, sizeof *r);
    if (!read_until(fd[0], r, sizeof *r, deadline) ||
        (r->state == CBC_SOLUTION && !read_until(fd[0], x, ncols * sizeof *x, deadline))) {
        kill(pid, SIGKILL); /* past the limit (or the child died): no answer */
        memset(r, 0, sizeof *r);
    }
    close(fd[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
}

static AS_DECL_SOLVER_SOLVE(cbc_solve)
{
    as_ilp *ilp = NULL;
    const as_ilp_view *iv;
    double scale, *x1, t0 = as_now();
    as_limits left = *lim; /* the limit covers building and loading the ILP */
    Cbc_Model *m;
    cbc_result res;
    int rc = AS_OK;

    AS_CHECK(as_ilp_build(p, NULL, &ilp, err));
    iv = as_ilp_data(ilp);
    x1 = as_xcalloc(iv->ncols + 1, sizeof *x1);
    m = Cbc_newModel();
    scale = as_ilp_obj_scale(ilp);
    cbc_load(m, iv, scale); /* objective in O(1) units (as_ilp_obj_scale) */
    if (lim->time_limit_s > 0)
        left.time_limit_s = fmax(lim->time_limit_s - (as_now() - t0), 0.001);
    cbc_limits(m, data, &left);
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
    if (lim->time_limit_s > 0)
        cbc_forked(m, iv->ncols, left.time_limit_s, &res, x1);
    else
        cbc_collect(m, iv->ncols, &res, x1);
    out->nodes = res.nodes;
    if (res.state == CBC_ABANDONED) {
        rc = as_errf(err, AS_ESOLVER, "CBC abandoned the solve (numerical difficulties)");
        goto out;
    }
    if (res.state == CBC_INFEASIBLE) {
        *outcome = AS_OUTCOME_INFEASIBLE;
        goto out;
    }
    if (res.state != CBC_SOLUTION) {
        *outcome = AS_OUTCOME_LIMIT;
        goto out;
    }
    *outcome = res.optimal ? AS_OUTCOME_OPTIMAL : AS_OUTCOME_FEASIBLE;
    AS_CHECK_GOTO(rc, as_ilp_assignment(ilp, x1, out->choice, err), out);
    out->objective = res.obj / scale + iv->offset;
    out->bound = res.bound / scale + iv->offset;
out:
    Cbc_deleteModel(m);
    free(x1);
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
