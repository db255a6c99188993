/* bench_ilp.c -- ILP size and solve time on random Alpa-style cost graphs
 * (chain with skip edges, 4-16 strategies, resharding zero on matching
 * specs), with glpk and cbc, with and without reductions, and with a binding
 * memory budget.
 *
 *   bench_ilp [-n NODES] [-e EDGES] [-s SEED] [-t SECONDS] [-w FILE]
 *
 * -w writes the instance as a cost graph and exits (used for instances/).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "solve/solver.h"

static void
bench_one(const as_problem *p, const char *solver, unsigned reduce, double tlim, const char *tag)
{
    as_solve_opts o;
    as_solve_result r;
    as_err err = {0};
    double t0 = as_now();

    as_solve_opts_init(&o);
    o.solver = solver;
    o.reduce = reduce;
    o.lim.time_limit_s = tlim;
    if (as_solve_problem(p, &o, &r, &err) != AS_OK) {
        printf("%-6s %-9s %-8s error: %s\n", solver, reduce ? "reduced" : "plain", tag, err.msg);
        return;
    }
    printf("%-6s %-9s %-8s ILP %7zu cols %7zu rows %8zu nnz -> %7zu cols %7zu rows %8zu nnz  "
           "build %6.2f s  solve %7.2f s  %-10s obj %.6g\n",
           solver, reduce ? "reduced" : "plain", tag, r.before.cols, r.before.rows, r.before.nnz,
           r.after.cols, r.after.rows, r.after.nnz, r.build_s,
           r.nplans ? r.plans[0].time_s : as_now() - t0 - r.build_s, as_outcome_name(r.outcome),
           r.nplans ? r.plans[0].objective : 0.0);
    fflush(stdout);
    as_solve_result_free(&r);
}

int
main(int argc, char **argv)
{
    as_random_opts o;
    as_problem *p;
    const char *write = NULL;
    double tlim = 120;
    int c, with_glpk_plain = 1;
    const char *solvers[] = {
#ifdef HAVE_CBC
        "cbc",
#endif
        "glpk", NULL};
    size_t i;

    as_random_opts_init(&o);
    o.nodes = 2500;
    o.edges = 3200;
    o.kmin = 4;
    o.kmax = 16;
    o.follow = 0.3;
    while ((c = getopt(argc, argv, "n:e:s:t:w:f:a:m:W:g")) != -1) {
        switch (c) {
        case 'n': o.nodes = strtoul(optarg, NULL, 10); break;
        case 'e': o.edges = strtoul(optarg, NULL, 10); break;
        case 's': o.seed = strtoull(optarg, NULL, 10); break;
        case 't': tlim = strtod(optarg, NULL); break;
        case 'w': write = optarg; break;
        case 'f': o.follow = strtod(optarg, NULL); break;
        case 'a': o.aliases = strtoul(optarg, NULL, 10); break;
        case 'm': o.memory_frac = strtod(optarg, NULL); break;
        case 'W': o.live_window = strtoul(optarg, NULL, 10); break;
        case 'g': with_glpk_plain = 0; break;
        default:
            fprintf(stderr, "usage: bench_ilp [-n N] [-e E] [-s SEED] [-t S] [-f FOLLOW] "
                    "[-a ALIASES] [-W WINDOW -m MEMFRAC] [-g] [-w FILE]\n");
            return 2;
        }
    }
    p = as_problem_random(&o);
    if (write != NULL) {
        as_err err = {0};
        if (as_problem_write(p, write, &err) != AS_OK) {
            fprintf(stderr, "bench_ilp: %s\n", err.msg);
            return 1;
        }
        as_problem_free(p);
        return 0;
    }
    printf("random Alpa-style cost graph: %zu nodes, %zu edges, %zu-%zu strategies, "
           "%.0f%% followers, seed %llu; time limit %g s per run\n", o.nodes, o.edges, o.kmin,
           o.kmax, 100 * o.follow, (unsigned long long)o.seed, tlim);
    for (i = 0; solvers[i] != NULL; i++) {
        bench_one(p, solvers[i], AS_REDUCE_ALL, tlim, "no-mem");
        if (strcmp(solvers[i], "glpk") != 0 || with_glpk_plain)
            bench_one(p, solvers[i], 0, tlim, "no-mem");
    }
    as_problem_free(p);
    o.live_window = 8;
    o.memory_frac = 0.15;
    p = as_problem_random(&o);
    printf("same shape with liveness windows of 8 and a binding budget of %.0f bytes\n",
           as_problem_memory(p));
    for (i = 0; solvers[i] != NULL; i++)
        bench_one(p, solvers[i], AS_REDUCE_ALL, tlim, "memory");
    as_problem_free(p);
    return 0;
}
