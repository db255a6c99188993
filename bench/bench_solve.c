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
 * RSS so far, and the largest solver child's (GLPK and CBC with a time limit
 * run in a forked child).
 *
 *   bench_solve [-t SECONDS] [-g GAP] [-m MESH] [-d] [-s CASE]
 *
 * -t limits every solve (default 120 s) so the bench always finishes; -g
 * sets the relative gap (0 = prove the exact optimum); -m runs GPT-3 1.3B on
 * that mesh only; -d runs only the default.
 *
 * -s runs issue 11's scale targets instead, the cases whose name starts with
 * CASE ("13b", "175b", "175b-16x8", "all"): gpt3-13b batch 16 on 2x8
 * (target <= 10 s, <= 1 GB), gpt3-175b batch 64 on 8x8 and 16x8 (<= 60 s,
 * <= 2 GB), the 3-axis meshes: gpt3-1.3b batch 64 on 2x2x2 and 2x4x2 and
 * gpt3-175b batch 1536 on 4x4x4 (<= 60 s, <= 2 GB), each with repeated layers tied as `autoshard solve` ties them
 * (period 2, plans settled), without a budget and with a binding one
 * (halfway, as above), GLPK and CBC.  They take minutes and gigabytes: not
 * part of the default run; run one case per process for its peak RSS
 * (`bench_solve -t 60 -s 13b`).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "formulate/build.h"
#include "formulate/group.h"
#include "graph/autodiff.h"
#include "graph/presets.h"
#include "solve/solver.h"

static double gap = AS_DEFAULT_GAP;

static const char *const solvers[] = {"glpk",
#ifdef HAVE_CBC
                                      "cbc",
#endif
                                      NULL};

/* Peak RSS of the largest child waited for (GLPK and CBC under a time limit), bytes. */
static double
children_rss(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_CHILDREN, &ru) != 0)
        return 0;
    return (double)ru.ru_maxrss * 1024.0;
}

/* Solve P with SOLVER under TLIM, print one line; the plan's peak (or -1). */
static double
bench_run(const as_problem *p, struct as_group_result *groups, const char *solver, double tlim,
          const char *tag)
{
    as_solve_opts o;
    as_solve_result r;
    as_err err = {0};
    double t0 = as_now(), peak = -1;

    as_solve_opts_init(&o);
    o.solver = solver;
    o.lim.time_limit_s = tlim;
    o.lim.gap = gap;
    o.groups = groups;
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
    printf("  (wall %.2f s, peak RSS so far %.0f MiB, solver children %.0f MiB)\n",
           as_now() - t0, (double)as_peak_rss() / 1048576.0, children_rss() / 1048576.0);
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
            int tie, double tlim)
{
    as_graph_setup su = {.mesh = mesh, .tie = tie};
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
    if (gp.groups != NULL && gp.groups->nclass > 0)
        printf("  tied %s..%s: %zu blocks, period %d, %zu sets of variables\n",
               gp.groups->cls[0].first, gp.groups->cls[0].last, gp.groups->cls[0].nblocks,
               gp.groups->period, gp.groups->cls[0].sets);
    fflush(stdout);
    for (i = 0; solvers[i] != NULL; i++) {
        double pk = bench_run(gp.p, gp.groups, solvers[i], tlim,
                              memory != 0 ? "profile" : "no-mem");
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
                bench_run(gp.p, gp.groups, solvers[i], tlim, "memory");
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

/* Issue 11's targets: the cases whose name starts with WHICH ("all": every one). */
static int
bench_scale(const char *which, double tlim)
{
    static const struct {
        const char *name, *preset, *mesh;
        int64_t batch;
    } cases[] = {
        {"13b-2x8", "gpt3-13b", "2x8", 16},
        {"175b-8x8", "gpt3-175b", "8x8", 64},
        {"175b-16x8", "gpt3-175b", "16x8", 64},
        {"1.3b-2x2x2", "gpt3-1.3b", "2x2x2", 64},
        {"1.3b-2x4x2", "gpt3-1.3b", "2x4x2", 64},
        {"175b-4x4x4", "gpt3-175b", "4x4x4", 1536},
    };
    size_t i, n = 0;
    int rc = 0;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        as_graph *g;
        char what[96];
        double t0 = as_now();
        if (strcmp(which, "all") != 0 && strncmp(cases[i].name, which, strlen(which)) != 0)
            continue;
        n++;
        if ((g = train_graph(cases[i].preset, cases[i].batch)) == NULL)
            return 1;
        snprintf(what, sizeof what, "%s batch %lld train (adam), tied", cases[i].preset,
                 (long long)cases[i].batch);
        printf("graph built in %.2f s\n", as_now() - t0);
        rc |= bench_graph(g, what, cases[i].mesh, 0, 1, 1, tlim);
        printf("  case %s: %.2f s in all, peak RSS %.0f MiB\n", cases[i].name, as_now() - t0,
               (double)as_peak_rss() / 1048576.0);
        fflush(stdout);
    }
    if (n == 0) {
        fprintf(stderr, "bench_solve: -s %s: no such case (13b-2x8, 175b-8x8, 175b-16x8, "
                "1.3b-2x2x2, 1.3b-2x4x2, 175b-4x4x4, all)\n", which);
        return 2;
    }
    return rc;
}

int
main(int argc, char **argv)
{
    const char *meshes[] = {"2x4", "4x2", NULL}, *only = NULL, *scale = NULL;
    double tlim = 120;
    int c, rc = 0, dflt_only = 0;
    size_t i;

    while ((c = getopt(argc, argv, "t:g:m:ds:")) != -1) {
        switch (c) {
        case 't': tlim = strtod(optarg, NULL); break;
        case 'g': gap = strtod(optarg, NULL); break;
        case 'm': only = optarg; break;
        case 'd': dflt_only = 1; break;
        case 's': scale = optarg; break;
        default:
            fprintf(stderr, "usage: bench_solve [-t SECONDS] [-g GAP] [-m MESH] [-d] "
                    "[-s 13b|175b|175b-8x8|175b-16x8|1.3b|175b-4x4x4|all]\n");
            return 2;
        }
    }
    if (!(tlim > 0)) {
        fprintf(stderr, "bench_solve: -t needs a positive number of seconds\n");
        return 2;
    }
    printf("time limit %g s per solve, relative gap %g; a100-dgx, roofline\n", tlim, gap);
    if (scale != NULL)
        return bench_scale(scale, tlim);
    for (i = 0; !dflt_only && meshes[i] != NULL; i++) {
        as_graph *g;
        if (only != NULL && strcmp(only, meshes[i]) != 0)
            continue;
        if ((g = train_graph("gpt3-1.3b", 8)) == NULL)
            return 1;
        rc |= bench_graph(g, "gpt3-1.3b batch 8 train (adam)", meshes[i], 0, 1, 0, tlim);
        if ((g = train_graph("gpt3-1.3b", 0)) == NULL)
            return 1;
        rc |= bench_graph(g, "gpt3-1.3b batch 512 train (adam)", meshes[i], 0, 0, 0, tlim);
    }
    if (only == NULL) {
        as_graph *g = train_graph("gpt2-small", 32);
        if (g == NULL)
            return 1;
        rc |= bench_graph(g, "default: gpt2-small batch 32 train (adam)", "2x4", -1, 0, 0,
                          tlim);
    }
    return rc;
}
