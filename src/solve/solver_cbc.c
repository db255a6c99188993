/* solver_cbc.c -- COIN-OR CBC through its C API (coin/Cbc_C_Interface.h).
 *
 * Built only when configure finds cbc.pc (HAVE_CBC).  The ILP's CSC arrays
 * are 0-based, which is what Cbc_loadProblem takes; the copy handed to CBC
 * converts bounds (HUGE_VAL -> COIN_DBL_MAX) and rescales columns and rows
 * of tiny range (cbc_load).  Limits map to
 * CBC's own parameters (seconds, ratioGap, threads, logLevel).  CBC has no
 * objective constant in loadProblem: the ILP's offset is a column fixed at 1.
 *
 * The driver's start plan is CBC's MIP start by default ("cbc/start=mip";
 * "none" leaves it out).  Without it CBC spent its time finding a plan the
 * reductions had already found, and stopped short of the proof: gpt3-175b
 * 16x8 under 298.65 GiB ended at a 0.136 % gap, with it optimal in 27 s
 * (docs/ilp.md, "CBC and the start plan").  The driver keeps the start plan
 * either way: a CBC run that stops without a plan of its own returns the
 * limit and the driver answers with the start plan; a CBC plan dearer than
 * the start gives way to the start, with CBC's bound.
 *
 * CBC checks its time limit between branch-and-bound nodes only: its root
 * LP and cuts on a large ILP can run far past it.  With a time limit the
 * solve therefore runs in a forked child that sends its answer back through
 * a pipe; CBC's own limit (wall clock) is the limit less 5 % (at most
 * 1 s), and the parent kills the child at the limit and reports the limit
 * (the driver then falls back to the reductions' plan, if any).  Without a
 * limit it runs in-process.
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
    int mipstart;   /**< "cbc/start" none (0) or mip (1, default): the start plan as CBC's
                         first incumbent (the driver keeps the plan as its fallback either way) */
};

static AS_DECL_SOLVER_NEW(cbc_new)
{
    *data = as_xcalloc(1, sizeof **data);
    (*data)->cuts = 1;
    (*data)->heuristics = 1;
    (*data)->mipstart = 1;
    return AS_OK;
}

static AS_DECL_SOLVER_FREE(cbc_free)
{
    free(data);
}

static AS_DECL_SOLVER_PARAM(cbc_param)
{
    int *dst;

    if (strcmp(key, "start") == 0) {
        if (strcmp(value, "none") != 0 && strcmp(value, "mip") != 0)
            return as_errf(err, AS_EUSAGE, "parameter '%s/%s' must be none or mip", SOLVER_NAME,
                           key);
        data->mipstart = value[0] == 'm';
        return AS_OK;
    }
    dst = strcmp(key, "cuts") == 0 ? &data->cuts
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

/*
 * CBC's preprocessing (CglPreProcess, on by default) works on the unscaled model and
 * mishandles a continuous column whose range is below its tolerances (~1e-8): it
 * declares the problem infeasible.  The ILP has such columns under a budget: mv_<c> and
 * mseg_<j> are bytes in units of the budget, and a scalar's 4 bytes against a 1.3 GB
 * budget give mv in [0, 2.96e-9] with coefficients ~1e-9 in its defining row (bert-large
 * on 2x4 and gpt3-1.3b on 2x8 under bench_heur's budgets: "infeasible" where GLPK finds
 * the optimum; four binaries and one such row suffice, tests/unit/test_solve.c).  So the
 * model CBC gets is rescaled: a continuous column with an upper bound below TINY is
 * x = c * y with c a power of two (y's upper bound in [0.5, 1)), and a row whose largest
 * |coefficient| is then below TINY is multiplied by a power of two that brings it to
 * [0.5, 1).  Powers of two: the scaling is exact, and so is mapping values back.
 */
#define CBC_TINY 0x1p-10

typedef struct cbc_scaling {
    double *col; /**< ncols: x_j = col[j] * (CBC's value) */
} cbc_scaling;

/* Load the ILP into M (objective times SCALE), rescaled as above; SC gets the column factors. */
static void
cbc_load(Cbc_Model *m, const as_ilp_view *iv, double scale, cbc_scaling *sc)
{
    CoinBigIndex *beg = as_xcalloc(iv->ncols + 2, sizeof *beg);
    double *obj = as_xcalloc(iv->ncols + 1, sizeof *obj);
    double *val = as_xcalloc(iv->nnz + 1, sizeof *val);
    double *clb = as_xcalloc(iv->ncols + 1, sizeof *clb);
    double *cub = as_xcalloc(iv->ncols + 1, sizeof *cub);
    double *rlb = as_xcalloc(iv->nrows + 1, sizeof *rlb);
    double *rub = as_xcalloc(iv->nrows + 1, sizeof *rub);
    double *rmax = as_xcalloc(iv->nrows + 1, sizeof *rmax);
    double *rsc = as_xcalloc(iv->nrows + 1, sizeof *rsc);
    size_t i, j;
    int e;

    sc->col = as_xcalloc(iv->ncols + 1, sizeof *sc->col);
    sc->col[iv->ncols] = 1;
    for (j = 0; j < iv->ncols; j++) {
        double c = 1;
        if (!iv->col_int[j] && iv->col_lb[j] >= 0 && iv->col_ub[j] > 0 &&
            iv->col_ub[j] < CBC_TINY) {
            frexp(iv->col_ub[j], &e);
            c = ldexp(1.0, e);
        }
        sc->col[j] = c;
        clb[j] = cbc_inf(iv->col_lb[j] / c);
        cub[j] = cbc_inf(iv->col_ub[j] / c);
        obj[j] = iv->obj[j] * scale * c;
        beg[j] = iv->cbeg[j];
        for (i = (size_t)iv->cbeg[j]; i < (size_t)iv->cbeg[j + 1]; i++) {
            val[i] = iv->cval[i] * c;
            rmax[iv->cind[i]] = fmax(rmax[iv->cind[i]], fabs(val[i]));
        }
    }
    /* the objective's constant as a column fixed at 1 (as exported, AS_ILP_CONST_COL): CBC's
       ratioGap is then relative to the whole objective, as GLPK's mip_gap is (without it
       CBC's gap was relative to the objective less the constant: bert-large 2x4 ran on at
       a gap of 7e-5 of the whole, asked for 1e-4) */
    beg[iv->ncols] = beg[iv->ncols + 1] = iv->cbeg[iv->ncols];
    clb[iv->ncols] = cub[iv->ncols] = 1;
    obj[iv->ncols] = iv->offset * scale;
    for (i = 0; i < iv->nrows; i++) {
        rsc[i] = 1;
        if (rmax[i] > 0 && rmax[i] < CBC_TINY) {
            frexp(rmax[i], &e);
            rsc[i] = ldexp(1.0, -e);
        }
        rlb[i] = cbc_inf(iv->row_lb[i] * rsc[i]);
        rub[i] = cbc_inf(iv->row_ub[i] * rsc[i]);
    }
    for (i = 0; i < iv->nnz; i++)
        val[i] *= rsc[iv->cind[i]];
    Cbc_loadProblem(m, (int)iv->ncols + 1, (int)iv->nrows, beg, iv->cind, val, clb, cub, obj, rlb,
                    rub);
    for (j = 0; j < iv->ncols; j++)
        if (iv->col_int[j])
            Cbc_setInteger(m, (int)j);
    free(rsc);
    free(rmax);
    free(cub);
    free(clb);
    free(val);
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
        /* wall-clock seconds (CBC counts CPU time by default: on a busy machine it ran
           past the limit), less a margin for its last node and sending the answer back:
           the parent kills the child at the limit itself (cbc_forked) */
        double s = lim->time_limit_s - fmin(1.0, 0.05 * lim->time_limit_s);
        Cbc_setParameter(m, "timeMode", "elapsed");
        snprintf(buf, sizeof buf, "%.3f", s);
        Cbc_setParameter(m, "seconds", buf);
        Cbc_setMaximumSeconds(m, s);
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
    double obj, bound; /**< in the scaled units (the constant is a column) */
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
    /* the limit covers the whole run: no grace beyond it (the caller's limit already leaves
       room for what follows; a grace of 2 % + 0.5 s made runs end 1-3 s past --time-limit) */
    double deadline = as_now() + limit;
    int fd[2], status;
    pid_t pid;

    fflush(NULL);
    if (pipe(fd) != 0 || (pid = fork()) < 0) {
        cbc_collect(m, ncols, r, x);
        return;
    }
    if (pid == 0) { /* child: solve, send, leave without running atexit handlers */
        close(fd[0]);
        dup2(STDERR_FILENO, STDOUT_FILENO); /* CBC's log (-v 2) is detail: stderr, not the output */
        setvbuf(stdout, NULL, _IOLBF, 0); /* line by line: the parent may kill this child */
        cbc_collect(m, ncols, r, x);
        write_all(fd[1], r, sizeof *r);
        if (r->state == CBC_SOLUTION)
            write_all(fd[1], x, ncols * sizeof *x);
        fflush(NULL); /* _exit would drop CBC's buffered log */
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

/* Do the column values X (unscaled) satisfy every bound and row of IV (within 1e-9)? */
static int
cbc_point_fits(const as_ilp_view *iv, const double *x)
{
    double *act = as_xcalloc(iv->nrows + 1, sizeof *act);
    size_t i, j;
    int ok = 1;

    for (j = 0; j < iv->ncols; j++) {
        if (x[j] < iv->col_lb[j] - 1e-9 || x[j] > iv->col_ub[j] + 1e-9)
            ok = 0;
        for (i = (size_t)iv->cbeg[j]; i < (size_t)iv->cbeg[j + 1]; i++)
            act[iv->cind[i]] += iv->cval[i] * x[j];
    }
    for (i = 0; ok && i < iv->nrows; i++)
        if (act[i] < iv->row_lb[i] - 1e-9 || act[i] > iv->row_ub[i] + 1e-9)
            ok = 0;
    free(act);
    return ok;
}

/* One CBC run on the ILP; PREPROCESS 0 turns CBC's preprocessing off. */
static void
cbc_run(const as_ilp_view *iv, double scale, const as_solver_data *data, const as_limits *lim,
        const double *x0, int preprocess, cbc_result *res, double *x1)
{
    Cbc_Model *m = Cbc_newModel();
    cbc_scaling sc;
    size_t j;

    cbc_load(m, iv, scale, &sc); /* objective in O(1) units (as_ilp_obj_scale) */
    cbc_limits(m, data, lim);
    if (!preprocess)
        Cbc_setParameter(m, "preprocess", "off");
    if (x0 != NULL && data->mipstart) { /* the start plan as the first incumbent */
        double *y0 = as_xcalloc(iv->ncols + 1, sizeof *y0);
        int *idx = as_xcalloc(iv->ncols + 1, sizeof *idx);
        for (j = 0; j <= iv->ncols; j++) {
            idx[j] = (int)j;
            y0[j] = x0[j] / sc.col[j];
        }
        y0[iv->ncols] = 1;
        Cbc_setMIPStartI(m, (int)iv->ncols + 1, idx, y0);
        free(y0);
        free(idx);
    }
    if (lim->time_limit_s > 0)
        cbc_forked(m, iv->ncols + 1, lim->time_limit_s, res, x1);
    else
        cbc_collect(m, iv->ncols + 1, res, x1);
    if (res->state == CBC_SOLUTION)
        for (j = 0; j < iv->ncols; j++)
            x1[j] *= sc.col[j];
    Cbc_deleteModel(m);
    free(sc.col);
}

static AS_DECL_SOLVER_SOLVE(cbc_solve)
{
    as_ilp *ilp = NULL;
    const as_ilp_view *iv;
    double scale, *x0 = NULL, *x1, t0 = as_now();
    as_limits left = *lim; /* the limit covers building and loading the ILP */
    cbc_result res;
    int rc = AS_OK;

    AS_CHECK(as_ilp_build(p, NULL, &ilp, err));
    iv = as_ilp_data(ilp);
    x1 = as_xcalloc(iv->ncols + 1, sizeof *x1);
    scale = as_ilp_obj_scale(ilp);
    if (lim->start != NULL) { /* the reductions' plan as the first incumbent */
        x0 = as_xcalloc(iv->ncols + 1, sizeof *x0);
        as_ilp_point(ilp, lim->start, x0);
    }
    if (lim->time_limit_s > 0)
        left.time_limit_s = fmax(lim->time_limit_s - (as_now() - t0), 0.001);
    cbc_run(iv, scale, data, &left, x0, 1, &res, x1);
    if (res.state == CBC_INFEASIBLE && x0 != NULL && cbc_point_fits(iv, x0)) {
        /* a plan fits, so "infeasible" is CBC's error: once more without its preprocessing
           (the one part of CBC that has claimed it on a feasible ILP), in the time left */
        long nodes = res.nodes;
        if (lim->time_limit_s > 0)
            left.time_limit_s = lim->time_limit_s - (as_now() - t0);
        if (lim->time_limit_s > 0 && left.time_limit_s < 0.05)
            res.state = CBC_NONE; /* no time left: the driver keeps the start plan */
        else
            cbc_run(iv, scale, data, &left, x0, 0, &res, x1);
        res.nodes += nodes;
        if (res.state == CBC_INFEASIBLE) {
            rc = as_errf(err, AS_ESOLVER,
                         "CBC reports the ILP infeasible, but the start plan fits it");
            goto out;
        }
    }
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
        *outcome = AS_OUTCOME_LIMIT; /* the driver keeps the start plan */
        goto out;
    }
    *outcome = res.optimal ? AS_OUTCOME_OPTIMAL : AS_OUTCOME_FEASIBLE;
    out->objective = res.obj / scale; /* the constant is in (cbc_load) */
    out->bound = res.bound / scale;
    if (x0 != NULL && !res.optimal) {
        /* without the MIP start CBC can stop at the limit with a plan dearer than the start:
           then the start is the answer, with CBC's bound (a bound on every plan).  A plan CBC
           calls optimal is left to the driver's check against the start (solver.c) */
        double o0 = iv->offset;
        size_t j;
        for (j = 0; j < iv->ncols; j++)
            o0 += iv->obj[j] * x0[j];
        if (o0 < out->objective - 1e-12 * fabs(o0) && cbc_point_fits(iv, x0)) {
            memcpy(x1, x0, iv->ncols * sizeof *x1);
            out->objective = o0;
        }
    }
    AS_CHECK_GOTO(rc, as_ilp_assignment(ilp, x1, out->choice, err), out);
out:
    free(x0);
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
