/* bench_heur.c -- the heuristic solvers against the ILP: for training steps
 * of transformer presets on meshes of an a100-dgx cluster (roofline cost
 * model), without a budget and with a binding one (halfway between the
 * smallest peak any plan can have and the peak of the ILP's plan without a
 * budget), the time and the objective of beam (K = 1, 10, 100) and mcts
 * (1,000 and 10,000 episodes), with their gap to the ILP's plan (GLPK at the
 * default gap) and to the reductions' lower bound.
 *
 *   bench_heur [-t SECONDS] [-p PRESET] [-m MESH] [-b BATCH] [-q] [-u]
 *              [-w REFS | -r REFS...] [-s SOLVER] [-x SOLVER/KEY=VALUE]
 *
 * -t limits every solve (default 120 s); -p and -m run one preset or mesh;
 * -b sets the global batch (default 8); -q: beam K=1,10 and mcts 1,000 only;
 * -u: layers untied (autoshard solve --no-tie); by default repeated layers
 * are tied as autoshard solve ties them.  -w appends the ILP's results to
 * REFS, a line "preset mesh tied|untied nobudget_obj peak budget_obj
 * nobudget_bound budget_bound"; -r reads them from REFS instead of solving the
 * ILP again (the ILP does not change when the heuristics do).  -r may be given
 * up to 8 times: the cheapest plan of the files is the reference, and the two
 * bounds may be absent (older files).  -s runs only the heuristic runs whose
 * label starts with SOLVER ("beam", "mcts", "beam K=100"; "beam K=1$": that
 * label only).  At the end a table: CPU seconds (user + system) and the gap to
 * the reference, the ILP's own gap to its bound, the best plan of the row.  -x
 * adds a parameter to every heuristic run (e.g. -x mcts/start=none,
 * -x mcts/pairs=1; the other solver ignores it; up to 8 -x).  By default the
 * figures are what `autoshard solve` gives a user: beam and mcts start from the
 * driver's bound-pruning plan too (docs/ilp.md, Heuristics), and each solve says
 * on stderr whose plan won; -x beam/seed=none -x mcts/start=beam gives the
 * searches' own figures.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "formulate/build.h"
#include "graph/autodiff.h"
#include "graph/presets.h"
#include "solve/solver.h"

typedef struct run {
    const char *solver, *param, *label;
} run;

static const run runs[] = {
    {"beam", "beam/width=1", "beam K=1"},       {"beam", "beam/width=10", "beam K=10"},
    {"beam", "beam/width=100", "beam K=100"},   {"mcts", "mcts/episodes=1000", "mcts 1k"},
    {"mcts", "mcts/episodes=10000", "mcts 10k"},
};

static int quick;
static int untied; /* -u: solve the layers apart (autoshard solve --no-tie) */
static const char *only_s; /* -s: the runs whose label starts with this */
static FILE *refs_w;        /* -w */
#define MAX_EXTRA 8
static const char *extra[MAX_EXTRA]; /* -x */
static size_t nextra;

/* The table printed at the end: one row per preset, mesh and budget. */
#define NRUNS (sizeof runs / sizeof runs[0])
typedef struct row {
    char name[96];
    double ref, bound, cpu[NRUNS], obj[NRUNS], ms_ep[NRUNS]; /* bound: the ILP's, NAN unknown */
    int start[NRUNS]; /* the plan is the driver's start (the bound pruning's), polished */
} row;
static row table[64];
static size_t nrows;

static double
cpu_now(void)
{
    struct rusage ru, rc;
    getrusage(RUSAGE_SELF, &ru);
    getrusage(RUSAGE_CHILDREN, &rc); /* glpk and cbc solve in a forked child */
    return (double)(ru.ru_utime.tv_sec + rc.ru_utime.tv_sec) +
           1e-6 * (double)(ru.ru_utime.tv_usec + rc.ru_utime.tv_usec) +
           (double)(ru.ru_stime.tv_sec + rc.ru_stime.tv_sec) +
           1e-6 * (double)(ru.ru_stime.tv_usec + rc.ru_stime.tv_usec);
}

/* The ILP's results for PRESET on MESH from the -r files (each line "preset mesh tied|untied
   nobudget_obj peak budget_obj", as -w writes it, optionally followed by the two bounds
   "nobudget_bound budget_bound", NAN or absent when unknown): the cheapest objectives of the
   lines whose peak is the first's (the peak sets the budget), the highest bounds.  1 if
   found. */
static const char *refs_rv[8]; /* -r, up to 8 files */
static size_t nrefs_r;

static int
read_ref(const char *preset, const char *mesh, double *obj, double *peak, double *bobj,
         double *lbd, double *blbd)
{
    size_t fi;
    int found = 0;

    *lbd = *blbd = NAN;
    for (fi = 0; fi < nrefs_r; fi++) {
        FILE *f = fopen(refs_rv[fi], "r");
        char line[512], pr[64], me[32], ti[16];
        double a, b, c, d, e;
        if (f == NULL)
            continue;
        while (fgets(line, sizeof line, f) != NULL) {
            int n = sscanf(line, "%63s %31s %15s %lf %lf %lf %lf %lf", pr, me, ti, &a, &b, &c,
                           &d, &e);
            if (n < 6 || strcmp(pr, preset) != 0 || strcmp(me, mesh) != 0 ||
                strcmp(ti, untied ? "untied" : "tied") != 0)
                continue;
            if (!found) {
                *obj = a;
                *peak = b;
                *bobj = c;
                found = 1;
            } else if (fabs(b - *peak) > 1e-9 * *peak) {
                fprintf(stderr, "bench_heur: %s %s in %s: peak %.17g is not %.17g (another "
                        "budget): line ignored\n", preset, mesh, refs_rv[fi], b, *peak);
                continue;
            } else {
                *obj = fmin(*obj, a);
                *bobj = fmin(*bobj, c);
            }
            if (n >= 7 && isfinite(d) && !(d <= *lbd))
                *lbd = d;
            if (n >= 8 && isfinite(e) && !(e <= *blbd))
                *blbd = e;
        }
        fclose(f);
    }
    return found;
}
static struct as_group_result *groups; /* tied classes, for settling the plans */
static double ilp_bound; /* the last ILP solve's bound (NAN: none) */

/* Solve P once; prints a line; returns the objective (INFINITY without a plan). */
static double
one(const as_problem *p, const char *solver, const char *param, const char *label, double tlim,
    double ref, double *peak, double *cpu, double *ms_ep, int *start)
{
    as_solve_opts o;
    as_solve_result r;
    as_err err = {0};
    const char *params[1 + MAX_EXTRA] = {param};
    double obj = INFINITY;

    as_solve_opts_init(&o);
    o.solver = solver;
    o.lim.time_limit_s = tlim;
    o.lim.gap = AS_DEFAULT_GAP;
    o.params = params;
    memcpy(params + 1, extra, nextra * sizeof *extra);
    o.nparams = param != NULL ? 1 + nextra : 0;
    o.groups = groups;
    *cpu = cpu_now();
    if (as_solve_problem(p, &o, &r, &err) != AS_OK) {
        printf("  %-11s error: %s\n", label, err.msg);
        fflush(stdout);
        return INFINITY;
    }
    *cpu = cpu_now() - *cpu;
    printf("  %-11s %8.3f s (cpu %7.3f s)  %-8s", label, r.total_s, *cpu,
           as_outcome_name(r.outcome));
    if (r.nplans > 0) {
        obj = r.plans[0].objective;
        if (peak != NULL)
            *peak = r.plans[0].peak;
        if (strcmp(solver, "glpk") == 0)
            ilp_bound = r.plans[0].bound;
        printf("  obj %.9g s", obj);
        if (isfinite(ref))
            printf("  vs ILP %+7.3f%%", 100 * (obj - ref) / ref);
        if (isfinite(r.plans[0].bound))
            printf("  gap to bound %7.3f%%", 100 * fmax(0, r.plans[0].gap));
        if (start != NULL)
            *start = r.plans[0].from_start;
        if (r.plans[0].from_start)
            printf("  (the start's plan)");
        if (strcmp(solver, "mcts") == 0 && r.plans[0].nodes > 0) {
            *ms_ep = 1e3 * r.plans[0].time_s / (double)r.plans[0].nodes;
            printf("  %ld episodes, %.3f ms/episode (wall), %.3f (cpu)", r.plans[0].nodes,
                   *ms_ep, 1e3 * *cpu / (double)r.plans[0].nodes);
            if (r.plans[0].loop_cpu_s > 0) /* the episode loop alone, timed inside mcts */
                printf(", %.3f (cpu, episodes alone: %.0f a second)",
                       1e3 * r.plans[0].loop_cpu_s / (double)r.plans[0].nodes,
                       (double)r.plans[0].nodes / r.plans[0].loop_cpu_s);
        }
        if (r.plans[0].timed) {
            printf("  (the time limit cut the search)");
        }
    }
    printf("  (peak RSS %.0f MiB)\n", (double)as_peak_rss() / 1048576.0);
    fflush(stdout);
    as_solve_result_free(&r);
    return obj;
}

/* The ILP (unless REF is given: finite, or -r) and the heuristics on P; a table row. */
static double
bench_problem(const as_problem *p, double tlim, const char *name, const char *tag, double ref,
              double bound, double *peak, double *bound_out)
{
    size_t i;
    row *rw = nrows < sizeof table / sizeof table[0] ? &table[nrows++] : &table[nrows - 1];
    double cpu;

    printf(" %s\n", tag);
    memset(rw, 0, sizeof *rw);
    snprintf(rw->name, sizeof rw->name, "%s", name);
    rw->bound = NAN;
    if (nrefs_r == 0) {
        ilp_bound = NAN;
        ref = one(p, "glpk", NULL, "ILP (glpk)", tlim, INFINITY, peak, &cpu, &rw->ms_ep[0],
                  NULL);
        rw->bound = ilp_bound;
        *bound_out = ilp_bound;
    } else {
        printf("  ILP (glpk)  from %s%s: obj %.9g s", refs_rv[0], nrefs_r > 1 ? " etc." : "",
               ref);
        if (isfinite(bound))
            printf(", its bound %.9g s (gap %.3f%%)", bound, 100 * (ref - bound) / ref);
        printf("\n");
        rw->bound = bound;
    }
    rw->ref = ref;
    for (i = 0; i < NRUNS; i++) {
        rw->cpu[i] = rw->obj[i] = NAN;
        rw->ms_ep[i] = 0;
        if (quick && (strstr(runs[i].label, "100") || strstr(runs[i].label, "10k")))
            continue;
        if (only_s != NULL && strncmp(runs[i].label, only_s, strlen(only_s)) != 0 &&
            !(only_s[strlen(only_s) - 1] == '$' &&
              strncmp(runs[i].label, only_s, strlen(only_s) - 1) == 0 &&
              runs[i].label[strlen(only_s) - 1] == '\0'))
            continue;
        rw->obj[i] = one(p, runs[i].solver, runs[i].param, runs[i].label, tlim, ref, NULL,
                         &rw->cpu[i], &rw->ms_ep[i], &rw->start[i]);
    }
    return ref;
}

static void
print_table(void)
{
    size_t r, i;

    printf("\n| problem | ref obj (s) | ref gap to bound |");
    for (i = 0; i < NRUNS; i++)
        printf(" %s |", runs[i].label);
    printf(" best known (s) | ref vs best |\n|---|---|---|");
    for (i = 0; i < NRUNS + 2; i++)
        printf("---|");
    printf("\n");
    for (r = 0; r < nrows; r++) {
        double ref = table[r].ref, best = ref;
        printf("| %s | %.6g |", table[r].name, ref);
        if (isfinite(table[r].bound) && isfinite(ref))
            printf(" %.2f%% |", 100 * (ref - table[r].bound) / ref);
        else
            printf(" ? |");
        for (i = 0; i < NRUNS; i++) {
            double o = table[r].obj[i];
            if (isnan(table[r].cpu[i]))
                printf(" - |");
            else if (!isfinite(o))
                printf(" %.2f s, no plan |", table[r].cpu[i]);
            else if (isfinite(ref))
                printf(" %.2f s, %+.2f%%%s |", table[r].cpu[i], 100 * (o - ref) / ref,
                       table[r].start[i] ? " (start)" : "");
            else
                printf(" %.2f s, %.6g%s |", table[r].cpu[i], o,
                       table[r].start[i] ? " (start)" : "");
            if (isfinite(o) && !(best <= o))
                best = o;
        }
        if (isfinite(best) && isfinite(ref))
            printf(" %.6g | %+.2f%% |\n", best, 100 * (ref - best) / best);
        else
            printf(" %.6g | - |\n", best);
    }
    printf("(CPU seconds user+system per solve, building the problem excluded; gap = "
           "(objective - ref) / ref, ref = the cheapest ILP plan in the refs (or solved here); "
           "ref gap to bound: the ILP's own, when the refs give it; best known: the cheapest "
           "of the row; (start): the plan is the driver's start, the bound pruning's plan, "
           "polished, not the search's own; -x beam/seed=none -x mcts/start=beam: the "
           "searches' own)\n");
}

static int
bench_preset(const char *preset, int64_t batch, const char *mesh, double tlim)
{
    const as_preset *pr = as_preset_find(preset);
    as_preset_cfg cfg;
    as_train_opts t;
    as_graph *g = NULL;
    as_graph_setup su = {.mesh = mesh};
    as_graph_problem gp;
    as_err err = {0};
    double peak = -1, lb, ref = INFINITY, bref = INFINITY, lbd = NAN, blbd = NAN;
    char name[96];

    if (pr == NULL) {
        fprintf(stderr, "bench_heur: no preset %s\n", preset);
        return 1;
    }
    cfg = pr->cfg;
    cfg.batch = batch;
    as_train_opts_init(&t);
    if (as_preset_build(pr, &cfg, &g, &err) != AS_OK || as_autodiff(g, &t, &err) != AS_OK) {
        fprintf(stderr, "bench_heur: %s: %s\n", preset, err.msg);
        as_graph_free(g);
        return 1;
    }
    as_build_opts_init(&su.build);
    su.build.memory = 0;
    su.tie = !untied; /* as autoshard solve */
    if (as_graph_problem_init(&gp, g, &su, &err) != AS_OK) {
        fprintf(stderr, "bench_heur: %s on %s: %s\n", preset, mesh, err.msg);
        return 1;
    }
    groups = gp.groups;
    printf("%s batch %lld train (adam) on %s, %s: %d ops, %zu nodes, %zu edges; build %.2f s\n",
           preset, (long long)batch, mesh, untied ? "untied" : "layers tied",
           (int)as_graph_nops(gp.g), as_problem_nnodes(gp.p), as_problem_nedges(gp.p),
           gp.build_s);
    fflush(stdout);
    if (nrefs_r > 0 && !read_ref(preset, mesh, &ref, &peak, &bref, &lbd, &blbd)) {
        fprintf(stderr, "bench_heur: %s on %s: not in %s%s\n", preset, mesh, refs_rv[0],
                nrefs_r > 1 ? " etc." : "");
        as_graph_problem_free(&gp);
        return 1;
    }
    snprintf(name, sizeof name, "%s %s", preset, mesh);
    ref = bench_problem(gp.p, tlim, name, "no budget", ref, lbd, &peak, &lbd);
    as_problem_set_memory(gp.p, 1);
    lb = as_problem_peak_lower_bound(gp.p);
    if (peak > lb * (1 + 1e-6)) {
        char tag[128];
        as_problem_set_memory(gp.p, lb + 0.5 * (peak - lb));
        snprintf(tag, sizeof tag, "budget %.3f GiB (halfway between %.3f and %.3f GiB)",
                 (lb + 0.5 * (peak - lb)) / 1073741824.0, lb / 1073741824.0,
                 peak / 1073741824.0);
        snprintf(name, sizeof name, "%s %s budget", preset, mesh);
        bref = bench_problem(gp.p, tlim, name, tag, bref, blbd, NULL, &blbd);
    } else {
        printf(" no budget can bind\n");
    }
    if (refs_w != NULL) {
        fprintf(refs_w, "%s %s %s %.17g %.17g %.17g %.17g %.17g\n", preset, mesh,
                untied ? "untied" : "tied", ref, peak, bref, lbd, blbd);
        fflush(refs_w);
    }
    as_graph_problem_free(&gp);
    return 0;
}

int
main(int argc, char **argv)
{
    static const char *const presets[] = {"gpt2-small", "bert-large", "t5-base", "gpt3-1.3b",
                                          "gpt3-13b", NULL};
    static const char *const meshes[] = {"8", "2x4", "2x8", NULL};
    const char *only_p = NULL, *only_m = NULL;
    double tlim = 120;
    int64_t batch = 8;
    int c, rc = 0;
    size_t i, j;

    while ((c = getopt(argc, argv, "t:p:m:b:quw:r:s:x:")) != -1) {
        switch (c) {
        case 't': tlim = strtod(optarg, NULL); break;
        case 'p': only_p = optarg; break;
        case 'm': only_m = optarg; break;
        case 'b': batch = strtoll(optarg, NULL, 10); break;
        case 'q': quick = 1; break;
        case 'u': untied = 1; break;
        case 'w':
            refs_w = fopen(optarg, "a");
            if (refs_w == NULL) {
                perror(optarg);
                return 2;
            }
            break;
        case 'r':
            if (nrefs_r == sizeof refs_rv / sizeof refs_rv[0]) {
                fprintf(stderr, "bench_heur: at most %zu -r files\n", nrefs_r);
                return 2;
            }
            refs_rv[nrefs_r++] = optarg;
            break;
        case 's': only_s = optarg; break;
        case 'x':
            if (nextra == MAX_EXTRA) {
                fprintf(stderr, "bench_heur: at most %d -x\n", MAX_EXTRA);
                return 2;
            }
            extra[nextra++] = optarg;
            break;
        default:
            fprintf(stderr, "usage: bench_heur [-t SECONDS] [-p PRESET] [-m MESH] [-b BATCH] "
                            "[-q] [-u] [-w REFS | -r REFS...] [-s SOLVER] [-x SOLVER/KEY=VALUE]\n");
            return 2;
        }
    }
    if (!(tlim > 0) || batch < 1) {
        fprintf(stderr, "bench_heur: -t needs seconds > 0, -b a batch >= 1\n");
        return 2;
    }
    printf("time limit %g s per solve; a100-dgx, roofline; gaps: to the ILP's plan and to the "
           "reductions' lower bound\n", tlim);
    for (i = 0; presets[i] != NULL; i++) {
        if (only_p != NULL && strcmp(only_p, presets[i]) != 0)
            continue;
        for (j = 0; meshes[j] != NULL; j++)
            if (only_m == NULL || strcmp(only_m, meshes[j]) == 0)
                rc |= bench_preset(presets[i], batch, meshes[j], tlim);
    }
    if (only_p != NULL && as_preset_find(only_p) != NULL) {
        int known = 0;
        for (i = 0; presets[i] != NULL; i++)
            known |= strcmp(presets[i], only_p) == 0;
        for (j = 0; !known && meshes[j] != NULL; j++)
            if (only_m == NULL || strcmp(only_m, meshes[j]) == 0)
                rc |= bench_preset(only_p, batch, meshes[j], tlim);
    }
    print_table();
    if (refs_w != NULL)
        fclose(refs_w);
    return rc;
}
