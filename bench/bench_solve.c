/* bench_solve.c -- the exact solvers on real training graphs: GPT-3 1.3B
 * (24 layers, hidden 2048, seq 2048, one Adam step) on meshes 2x4 and 4x2
 * of an a100-dgx node with the roofline cost model, and the built-in
 * default of `autoshard solve` (GPT-2 small, batch 32, mesh 2x4, 80 GB).
 * GPT-3 1.3B runs with batch 8, which fits a device (the preset's batch 512
 * needs > 800 GiB per device whatever the plan), without a budget and with
 * a binding one: halfway between the smallest peak any plan can have and
 * the peak of the plan that is optimal without a budget.  The preset's batch
 * 512 runs without a budget.  Per run: ILP size before and after the
 * reductions, time to build and reduce, solve time, status and gap, for GLPK
 * and CBC at the command line's default gap (1e-4), and the process's peak
 * RSS so far (CBC with a time limit runs in a child, not counted).
 *
 *   bench_solve [-t SECONDS] [-g GAP] [-m MESH] [-d]
 *
 * -t limits every solve (default 120 s) so the bench always finishes; -g
 * sets the relative gap (0 = prove the exact optimum); -m runs GPT-3 1.3B on
 * that mesh only; -d runs only the default.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formulate/build.h"
#include "graph/autodiff.h"
#include "graph/presets.h"
#include "solve/solver.h"

static double gap = AS_DEFAULT_GAP;

static const char *const solvers[] = {"glpk",
#ifdef HAVE_CBC
                                      "cbc",
#endif
                                      NULL};

/* Solve P with SOLVER under TLIM, print one line; the plan's peak (or -1). */
static double
bench_run(const as_problem *p, const char *solver, double tlim, const char *tag)
{
    as_solve_opts o;
    as_solve_result r;
    as_err err = {0};
    double t0 = as_now(), peak = -1;

    as_solve_opts_init(&o);
    o.solver = solver;
    o.lim.time_limit_s = tlim;
    o.lim.gap = gap;
    if (as_solve_problem(p, &o, &r, &err) != AS_OK) {
        printf("  %-5s %-8s error: %s\n", solver, tag, err.msg);
        fflush(stdout);
        return -1;
    }
    printf("  %-5s %-8s ILP %6zu cols %6zu rows %7zu nnz -> %6zu cols %6zu rows %7zu nnz  "
           "reduce+ILP %5.2f s  solve %7.2f s  %-10s",
           solver, tag, r.before.cols, r.before.rows, r.before.nnz, r.after.cols, r.after.rows,
           r.after.nnz, r.build_s, r.total_s - r.build_s, as_outcome_name(r.outcome));
    if (r.nplans > 0) {
        printf(" obj %.9g s  gap %.2g  peak %.2f GiB", r.plans[0].objective, r.plans[0].gap,
               r.plans[0].peak / (1024.0 * 1024 * 1024));
        peak = r.plans[0].peak;
    }
    printf("  (wall %.2f s, peak RSS so far %.0f MiB)\n", as_now() - t0,
           (double)as_peak_rss() / 1048576.0);
    fflush(stdout);
    as_solve_result_free(&r);
    return peak;
}

/*
 * Build G (taken over) on MESH with MEMORY (0 none, < 0 the profile's) and
 * bench it; with MEMRUNS (and no MEMORY) again under a binding budget.
 */
static int
bench_graph(as_graph *g, const char *what, const char *mesh, double memory, int memruns,
            double tlim)
{
    as_graph_setup su = {.mesh = mesh};
    as_graph_problem gp;
    as_err err = {0};
    double peak = -1, budget;
    size_t i;

    as_build_opts_init(&su.build);
    su.build.memory = memory;
    if (as_graph_problem_init(&gp, g, &su, &err) != AS_OK) {
        fprintf(stderr, "bench_solve: %s on %s: %s\n", what, mesh, err.msg);
        return 1;
    }
    printf("%s on %s: %d ops, %zu nodes, %zu edges, %zu liveness points; problem build %.2f s; "
           "memory %s\n", what, mesh, (int)as_graph_nops(gp.g), as_problem_nnodes(gp.p),
           as_problem_nedges(gp.p), as_problem_nlive(gp.p), gp.build_s,
           memory != 0 ? "the profile's" : "none");
    fflush(stdout);
    for (i = 0; solvers[i] != NULL; i++) {
        double pk = bench_run(gp.p, solvers[i], tlim, memory != 0 ? "profile" : "no-mem");
        if (pk > 0 && (peak < 0 || pk < peak))
            peak = pk;
    }
    if (memory == 0 && memruns) {
        double lb;
        as_problem_set_memory(gp.p, 1); /* the lower bound looks at binding points only */
        lb = as_problem_peak_lower_bound(gp.p);
        if (peak < 0 || !(peak > lb * (1 + 1e-6))) {
            printf("  no plan without a budget within the limit, or no budget can bind: no "
                   "memory runs\n");
        } else {
            budget = lb + 0.5 * (peak - lb);
            as_problem_set_memory(gp.p, budget);
            printf("  budget halfway between the lower bound %.2f GiB and the peak %.2f GiB = "
                   "%.2f GiB\n", lb / (1024.0 * 1024 * 1024), peak / (1024.0 * 1024 * 1024),
                   budget / (1024.0 * 1024 * 1024));
            for (i = 0; solvers[i] != NULL; i++)
                bench_run(gp.p, solvers[i], tlim, "memory");
        }
    }
    as_graph_problem_free(&gp);
    return 0;
}

/* The training graph of PRESET with BATCH (0 = the preset's), or NULL. */
static as_graph *
train_graph(const char *preset, int64_t batch)
{
    const as_preset *pr = as_preset_find(preset);
    as_preset_cfg cfg;
    as_train_opts t;
    as_graph *g = NULL;
    as_err err = {0};

    if (pr == NULL) {
        fprintf(stderr, "bench_solve: no preset %s\n", preset);
        return NULL;
    }
    cfg = pr->cfg;
    if (batch > 0)
        cfg.batch = batch;
    as_train_opts_init(&t);
    t.mixed = cfg.mixed;
    if (as_preset_build(pr, &cfg, &g, &err) != AS_OK || as_autodiff(g, &t, &err) != AS_OK) {
        fprintf(stderr, "bench_solve: %s: %s\n", preset, err.msg);
        as_graph_free(g);
        return NULL;
    }
    return g;
}

int
main(int argc, char **argv)
{
    const char *meshes[] = {"2x4", "4x2", NULL}, *only = NULL;
    double tlim = 120;
    int c, rc = 0, dflt_only = 0;
    size_t i;

    while ((c = getopt(argc, argv, "t:g:m:d")) != -1) {
        switch (c) {
        case 't': tlim = strtod(optarg, NULL); break;
        case 'g': gap = strtod(optarg, NULL); break;
        case 'm': only = optarg; break;
        case 'd': dflt_only = 1; break;
        default:
            fprintf(stderr, "usage: bench_solve [-t SECONDS] [-g GAP] [-m MESH] [-d]\n");
            return 2;
        }
    }
    if (!(tlim > 0)) {
        fprintf(stderr, "bench_solve: -t needs a positive number of seconds\n");
        return 2;
    }
    printf("time limit %g s per solve, relative gap %g; a100-dgx, roofline\n", tlim, gap);
    for (i = 0; !dflt_only && meshes[i] != NULL; i++) {
        as_graph *g;
        if (only != NULL && strcmp(only, meshes[i]) != 0)
            continue;
        if ((g = train_graph("gpt3-1.3b", 8)) == NULL)
            return 1;
        rc |= bench_graph(g, "gpt3-1.3b batch 8 train (adam)", meshes[i], 0, 1, tlim);
        if ((g = train_graph("gpt3-1.3b", 0)) == NULL)
            return 1;
        rc |= bench_graph(g, "gpt3-1.3b batch 512 train (adam)", meshes[i], 0, 0, tlim);
    }
    if (only == NULL) {
        as_graph *g = train_graph("gpt2-small", 32);
        if (g == NULL)
            return 1;
        rc |= bench_graph(g, "default: gpt2-small batch 32 train (adam)", "2x4", -1, 0, tlim);
    }
    return rc;
}
