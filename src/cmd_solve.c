/* cmd_solve.c -- `autoshard solve`: choose one sharding strategy per op of
 * a graph on a mesh (or of a cost graph), print a summary, write the plan.
 *
 *   autoshard solve [GRAPH] --mesh M [--hw H] [--cost-model C] [--alpha A] [--beta B]
 *                   [--solver glpk|cbc|brute] [--memory BYTES|auto] [--time-limit S]
 *                   [--gap G] [--threads N] [--top K] [--no-reduce] [--set S/K=V]...
 *                   [--solution SOLFILE] [-o plan.json] [--emit jax|dtensor]
 *   autoshard solve --costgraph FILE [same solver options]
 *   autoshard solve          (built-in default: GPT-2 small training step on 8 A100s)
 *
 * Graph solves go graph -> problem (formulate/build.h) -> as_solve_problem
 * -> plans (as_plan_from_choice); the summary groups ops by repeated layer
 * and adds up the bytes every collective moves.  solve_graph_finish() gets
 * the solved plans and does everything after the solve (print, write,
 * emit), so further consumers of plans go there.  Exit 3 when no plan fits
 * the memory budget; the message gives the peak of the cheapest plan
 * without the budget (found by solving again without it) and the lower
 * bound no plan can beat.
 */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"
#include "cmd_train.h"
#include "formulate/build.h"
#include "formulate/group.h"
#include "formulate/progress.h"
#include "graph/autodiff.h"
#include "solve/recompute_search.h"
#include "graph/io.h"
#include "graph/presets.h"
#include "spmd/rules.h"
#include "sim/lower.h"
#include "solve/solver.h"
#include "solve/fit.h"

enum { OPT_CG = 256, OPT_MEM, OPT_TIME, OPT_GAP, OPT_THREADS, OPT_TOP, OPT_NORED, OPT_SET,
       OPT_SOL, OPT_MESH, OPT_HW, OPT_COST, OPT_ALPHA, OPT_BETA, OPT_EMIT, OPT_CACHE, OPT_ALL,
       OPT_SIM, OPT_GROUP, OPT_NOTIE, OPT_BEAMW, OPT_EPISODES, OPT_SEED, OPT_MICRO,
       OPT_RECOMP, OPT_PIPE, OPT_STAGES, OPT_SCHED, OPT_ROLE, OPT_ZERO, OPT_ILPCAP };

#define SOLVE_MAX_PARAMS 32
#define SOLVE_MAX_CPARAMS 8

/* The built-in problem of a bare `autoshard solve` (docs/solve.md). */
#define DEFAULT_PRESET "gpt2-small"
#define DEFAULT_MESH "2x4"
#define DEFAULT_BATCH 32

typedef struct solve_cli {
    const char *costgraph, *graph, *out, *solution, *emit, *cache;
    const char *roles;                   /**< --role (as_build_opts.roles) */
    int zero;                            /**< --zero (as_build_opts.zero) */
    as_graph_setup setup;
    double memory;                       /**< bytes, < 0 = the file's / none for graphs */
    int memory_auto;                     /**< --memory auto: the profile's usable memory */
    int all;                             /**< --all: every op in the table */
    int simulate;                        /**< --simulate: lower and simulate the plans */
    int no_tie;                          /**< --no-tie: repeated layers solved apart */
    double t_start;                      /**< as_now() at the start: --time-limit counts
                                              from here (building, reductions, solves) */
    as_train_cli train;                  /**< --microbatches, --recompute (cmd_train.h) */
    FILE *errfp;                         /**< solve_fit's messages: stderr, or a sink while
                                              --recompute auto tries a candidate */
    as_solve_opts o;
    const char *params[SOLVE_MAX_PARAMS];
    const char *cparams[SOLVE_MAX_CPARAMS];
    char *owned[SOLVE_MAX_CPARAMS];
    char heur[2][48];                    /**< --beam-width, --episodes as solver parameters */
} solve_cli;

static int solve_exec(int argc, char **argv);

const struct as_cmd as_cmd_solve = {
    .name = "solve",
    .args = "[GRAPH --mesh M | --costgraph FILE] [--solver NAME] [--memory BYTES|auto] "
            "[--top K] [-o PLAN] [--emit jax|dtensor]",
    .summary = "choose one sharding strategy per op: solve the ILP of a graph on a mesh",
    .help = "GRAPH is any graph file (.asg or XLA HLO text; '-' = stdin).  Without GRAPH\n"
            "and --costgraph, solves the built-in default: a GPT-2 small training step\n"
            "(adam, batch 32) on 8 A100s (mesh 2x4), memory from the profile, and\n"
            "simulates the plan.\n"
            "\nGraph options:\n"
            "  --mesh M             device mesh: 8, 2x4, dp=2,tp=4 (required with GRAPH)\n"
            "  --hw NAME|FILE       hardware profile (default a100-dgx; `autoshard hw`)\n"
            "  --cost-model C       roofline (default), alpa or distir\n"
            "  --alpha A0,A1        alpa: per-axis latency terms\n"
            "  --beta B0,B1         alpa: per-axis inverse bandwidths\n"
            "  --rules-cache F|off  sharding-rule cache file\n"
            "  --emit jax|dtensor   print a JAX PartitionSpec / PyTorch DTensor placements\n"
            "                       per parameter and input (stdout; summary to stderr)\n"
            "  --all                list every op in the strategy table, not only\n"
            "                       contractions and parameters\n"
            "  --microbatches K     gradient accumulation: the ILP sees one of K microbatches\n"
            "                       (batch / K), objective K x (forward + backward) +\n"
            "                       gradient synchronisation + update, as simulated with\n"
            "                       `simulate --microbatches K` (K must divide the batch)\n"
            "  --recompute R        none (default), full (per layer: keep its input, recompute\n"
            "                       its forward in the backward) or selective (recompute the\n"
            "                       attention core), or auto (the layers recomputed fully\n"
            "                       chosen under the budget, recorded in the plan);\n"
            "                       simulate with the same --recompute R\n"
            "  --pipeline P         P pipeline stages cut at layer boundaries, each solved on\n"
            "                       its own --mesh (P x its devices in all; docs/solve.md)\n"
            "  --stages N1,N2,..    layers per stage (default: balanced by FLOPs)\n"
            "  --schedule S         1f1b (default) or gpipe: microbatches in flight per stage\n"
            "  --simulate           lower the plan and simulate it (time, throughput, peak\n"
            "                       memory); with --top K, rank the K plans by simulated\n"
            "                       time next to the solver's order (on for the default)\n"
            "\nSolver options:\n"
            "  --costgraph FILE     solve a cost graph instead (JSON, docs/costgraph.md)\n"
            "  -s, --solver NAME    glpk (default), cbc, brute, beam, mcts\n"
            "  --beam-width K       beam: partial plans kept (default 32)\n"
            "  --episodes N         mcts: episodes (default 1000; --time-limit also stops it)\n"
            "  --seed S             mcts: random seed (default 1); one seed, one plan\n"
            "  --memory BYTES|auto  per-device budget (suffixes K M G T = 1000^n,\n"
            "                       Ki Mi Gi Ti = 1024^n, optional B); auto = the\n"
            "                       profile's usable memory (memory - reserved_memory,\n"
            "                       `hw show`); 0 = none (graph default)\n"
            "  --time-limit S       seconds from the start: building, reductions and every\n"
            "                       solve (all --top plans, re-solves for memory)\n"
            "  --gap G              a plan within relative gap G of the bound is optimal\n"
            "                       (default 1e-4; 0 = prove the exact optimum)\n"
            "  --threads N          solver threads (cbc)\n"
            "  --top K              the K best distinct plans (no-good cuts; docs/ilp.md)\n"
            "  --no-reduce          solve the plain ILP: no follow merging, no elimination\n"
            "  --ilp-cap N          glpk/cbc get an ILP of at most about N edge variables:\n"
            "                       a larger one keeps the strategies the reductions' bound\n"
            "                       rates best (\"restricted\"; default 750000, 0 = none)\n"
            "  --group REGEX        repeated layers: node names matching REGEX (PCRE2) whose\n"
            "                       first capture is the layer index; default: found from\n"
            "                       the names (h.3.*); isomorphic layers share one strategy\n"
            "  --no-tie             solve repeated layers apart\n"
            "  --role AXIS=ROLE,..  axis roles: data (only batch dims split on it; parameters\n"
            "                       replicated), tensor (no batch dim split on it), auto\n"
            "                       (default, the ILP chooses); e.g. --mesh dp=2,tp=4\n"
            "                       --role dp=data,tp=tensor (docs/strategies.md)\n"
            "  --zero Z             ZeRO over the data axes: 1 shards optimizer states\n"
            "                       (master weights included), 2 gradients too, 3 the\n"
            "                       parameters too (gathered before each use); 0 (default)\n"
            "  --set S/KEY=VALUE    backend parameter, e.g. glpk/presolve=0\n"
            "  --solution FILE      read an external solver's solution for the model that\n"
            "                       `autoshard export` wrote (CBC, glpsol -w/-o, Gurobi, HiGHS)\n"
            "  -o FILE              write the plan as JSON ('-' = stdout; summary to stderr);\n"
            "                       with --top K > 1 a JSON array of the K plans\n"
            "\nSolvers: glpk (linked, default), cbc (when built with CBC), brute (exhaustive,\n"
            "at most 1e7 plans); heuristics: beam (MetaDist's beam search), mcts (Monte Carlo\n"
            "tree search); they report the reductions' bound and their gap to it.  Formulation and reductions: docs/ilp.md; output: docs/solve.md.\n"
            "Exit 3 when no plan fits the memory budget (the message says what the cheapest\n"
            "plan needs).\n",
    .exec = solve_exec,
};


/* S is an integer in 1..HI (one usage message for every bad value, no double report). */
static int
parse_int_in(const char *s, double lo, double hi, double *out)
{
    char *end;
    double x = strtod(s, &end);

    if (end == s || *end != '\0' || !isfinite(x) || x < lo || x > hi || x != floor(x))
        return 0;
    *out = x;
    return 1;
}

static int
parse_num(const char *opt, const char *s, double lo, double *out)
{
    char *end;
    double x = strtod(s, &end);

    if (end == s || *end != '\0' || !isfinite(x) || x < lo)
        return as_cmd_usage(&as_cmd_solve, "%s must be a number >= %g, got '%s'", opt, lo, s);
    *out = x;
    return AS_EXIT_OK;
}

static int
solve_graph_opt(solve_cli *c, int opt)
{
    switch (opt) {
    case OPT_MESH:
        c->setup.mesh = optarg;
        return AS_EXIT_OK;
    case OPT_HW:
        c->setup.hw = optarg;
        return AS_EXIT_OK;
    case OPT_COST:
        c->setup.cost = optarg;
        return AS_EXIT_OK;
    case OPT_ALPHA:
    case OPT_BETA:
        if (c->setup.nparams == SOLVE_MAX_CPARAMS)
            return as_cmd_usage(&as_cmd_solve, "too many cost-model parameters");
        c->owned[c->setup.nparams] =
            as_xasprintf("%s=%s", opt == OPT_ALPHA ? "alpha" : "beta", optarg);
        c->cparams[c->setup.nparams] = c->owned[c->setup.nparams];
        c->setup.nparams++;
        return AS_EXIT_OK;
    case OPT_EMIT:
        if (strcmp(optarg, "jax") != 0 && strcmp(optarg, "dtensor") != 0)
            return as_cmd_usage(&as_cmd_solve, "--emit takes jax or dtensor, got '%s'", optarg);
        c->emit = optarg;
        return AS_EXIT_OK;
    case OPT_CACHE:
        c->cache = optarg;
        return AS_EXIT_OK;
    case OPT_ALL:
        c->all = 1;
        return AS_EXIT_OK;
    case OPT_SIM:
        c->simulate = 1;
        return AS_EXIT_OK;
    case OPT_GROUP:
        c->setup.group = optarg;
        return AS_EXIT_OK;
    case OPT_ROLE:
        c->roles = optarg;
        return AS_EXIT_OK;
    case OPT_ZERO:
        if (optarg[0] < '0' || optarg[0] > '3' || optarg[1] != '\0') {
            fprintf(stderr, "autoshard: --zero takes 0, 1, 2 or 3, got '%s'\n", optarg);
            return AS_EXIT_USAGE; /* one line, as --role */
        }
        c->zero = optarg[0] - '0';
        return AS_EXIT_OK;
    case OPT_NOTIE:
        c->no_tie = 1;
        return AS_EXIT_OK;
    case OPT_MICRO:
        return as_train_cli_micro(&c->train, optarg);
    case OPT_RECOMP:
        return as_train_cli_recompute(&as_cmd_solve, &c->train.recompute, optarg);
    case OPT_PIPE:
    case OPT_STAGES:
    case OPT_SCHED:
        return as_train_cli_pipeline(&c->train, opt == OPT_PIPE ? "pipeline" : opt == OPT_STAGES
                                     ? "stages" : "schedule", optarg);
    default:
        return as_cmd_usage(&as_cmd_solve, "unknown option");
    }
}

static int
solve_opt(solve_cli *c, int opt)
{
    double x;

    switch (opt) {
    case OPT_CG:
        c->costgraph = optarg;
        return AS_EXIT_OK;
    case 's':
        c->o.solver = optarg;
        return AS_EXIT_OK;
    case 'o':
        c->out = optarg;
        return AS_EXIT_OK;
    case OPT_SOL:
        c->solution = optarg;
        return AS_EXIT_OK;
    case OPT_MEM:
        c->memory_auto = strcmp(optarg, "auto") == 0;
        if (!c->memory_auto && !as_parse_bytes(optarg, &c->memory))
            return as_cmd_usage(&as_cmd_solve, "--memory: bad byte count '%s' (e.g. 16GiB, "
                                "40GB, auto)", optarg);
        return AS_EXIT_OK;
    case OPT_TIME:
        return parse_num("--time-limit", optarg, 0, &c->o.lim.time_limit_s);
    case OPT_GAP:
        return parse_num("--gap", optarg, 0, &c->o.lim.gap);
    case OPT_THREADS:
        if (!parse_int_in(optarg, 1, 1024, &x))
            return as_cmd_usage(&as_cmd_solve, "--threads must be an integer in 1..1024, got '%s'",
                                optarg);
        c->o.lim.threads = (int)x;
        return AS_EXIT_OK;
    case OPT_TOP:
        if (!parse_int_in(optarg, 1, 10000, &x))
            return as_cmd_usage(&as_cmd_solve, "--top must be an integer in 1..10000, got '%s'",
                                optarg);
        c->o.top = (size_t)x;
        return AS_EXIT_OK;
    case OPT_NORED:
        c->o.reduce = 0;
        return AS_EXIT_OK;
    case OPT_ILPCAP:
        if (!parse_int_in(optarg, 0, 1e12, &x))
            return as_cmd_usage(&as_cmd_solve, "--ilp-cap must be an integer in 0..1e12, got "
                                "'%s'", optarg);
        c->o.ilp_cap = (size_t)x;
        return AS_EXIT_OK;
    case OPT_BEAMW:
    case OPT_EPISODES: {
        const char *what = opt == OPT_BEAMW ? "--beam-width" : "--episodes";
        double hi = opt == OPT_BEAMW ? 1e8 : 1e9;
        char *h = c->heur[opt == OPT_EPISODES];
        if (!parse_int_in(optarg, 1, hi, &x))
            return as_cmd_usage(&as_cmd_solve, "%s must be an integer in 1..%.0f, got '%s'", what,
                                hi, optarg);
        if (c->o.nparams == SOLVE_MAX_PARAMS)
            return as_cmd_usage(&as_cmd_solve, "too many solver parameters");
        snprintf(h, sizeof c->heur[0], "%s=%.0f",
                 opt == OPT_BEAMW ? "beam/width" : "mcts/episodes", x);
        c->params[c->o.nparams++] = h;
        return AS_EXIT_OK;
    }
    case OPT_SEED:
        if (!parse_int_in(optarg, 0, 9007199254740992.0, &x))
            return as_cmd_usage(&as_cmd_solve, "--seed must be an integer in 0..2^53, got '%s'",
                                optarg);
        c->o.lim.seed = (uint64_t)x;
        return AS_EXIT_OK;
    case OPT_SET:
        if (c->o.nparams == SOLVE_MAX_PARAMS)
            return as_cmd_usage(&as_cmd_solve, "too many --set options");
        c->params[c->o.nparams++] = optarg;
        return AS_EXIT_OK;
    default:
        return solve_graph_opt(c, opt);
    }
}

static int
solve_parse(int argc, char **argv, solve_cli *c)
{
    static const struct option opts[] = {
        {"costgraph", required_argument, NULL, OPT_CG}, {"solver", required_argument, NULL, 's'},
        {"memory", required_argument, NULL, OPT_MEM}, {"time-limit", required_argument, NULL, OPT_TIME},
        {"gap", required_argument, NULL, OPT_GAP}, {"threads", required_argument, NULL, OPT_THREADS},
        {"top", required_argument, NULL, OPT_TOP}, {"no-reduce", no_argument, NULL, OPT_NORED},
        {"set", required_argument, NULL, OPT_SET}, {"solution", required_argument, NULL, OPT_SOL},
        {"output", required_argument, NULL, 'o'}, {"mesh", required_argument, NULL, OPT_MESH},
        {"hw", required_argument, NULL, OPT_HW}, {"cost-model", required_argument, NULL, OPT_COST},
        {"alpha", required_argument, NULL, OPT_ALPHA}, {"beta", required_argument, NULL, OPT_BETA},
        {"emit", required_argument, NULL, OPT_EMIT}, {"rules-cache", required_argument, NULL,
        OPT_CACHE}, {"all", no_argument, NULL, OPT_ALL}, {"simulate", no_argument, NULL, OPT_SIM},
        {"group", required_argument, NULL, OPT_GROUP}, {"no-tie", no_argument, NULL, OPT_NOTIE},
        {"beam-width", required_argument, NULL, OPT_BEAMW},
        {"episodes", required_argument, NULL, OPT_EPISODES},
        {"seed", required_argument, NULL, OPT_SEED},
        {"microbatches", required_argument, NULL, OPT_MICRO},
        {"recompute", required_argument, NULL, OPT_RECOMP},
        {"pipeline", required_argument, NULL, OPT_PIPE},
        {"stages", required_argument, NULL, OPT_STAGES},
        {"schedule", required_argument, NULL, OPT_SCHED},
        {"role", required_argument, NULL, OPT_ROLE}, {"zero", required_argument, NULL, OPT_ZERO},
        {"ilp-cap", required_argument, NULL, OPT_ILPCAP},
        {NULL, 0, NULL, 0}};
    int opt, rc;

    opterr = 0;
    while ((opt = getopt_long(argc, argv, "s:o:", opts, NULL)) != -1) {
        if (opt == '?' || opt == ':')
            return as_cmd_usage(&as_cmd_solve, "bad or incomplete option '%s'",
                                argv[optind - 1]);
        if ((rc = solve_opt(c, opt)) != AS_EXIT_OK)
            return rc;
    }
    if (argc - optind > 1)
        return as_cmd_usage(&as_cmd_solve, "expected at most one GRAPH file, got %d",
                            argc - optind);
    c->graph = optind < argc ? argv[optind] : NULL;
    c->o.params = c->params;
    c->setup.params = c->cparams;
    if (c->costgraph != NULL && (c->graph != NULL || c->setup.mesh != NULL))
        return as_cmd_usage(&as_cmd_solve, "give either GRAPH --mesh M or --costgraph FILE");
    if (c->costgraph != NULL && (c->emit != NULL || c->memory_auto || c->train.micro > 1 ||
                                 c->train.recompute != AS_RECOMPUTE_NONE))
        return as_cmd_usage(&as_cmd_solve, "--emit, --memory auto, --microbatches and "
                            "--recompute need a GRAPH");
    if (c->graph != NULL && c->setup.mesh == NULL)
        return as_cmd_usage(&as_cmd_solve, "missing --mesh M for graph '%s'", c->graph);
    if (c->graph == NULL && c->costgraph == NULL && c->solution != NULL)
        return as_cmd_usage(&as_cmd_solve, "--solution needs GRAPH --mesh M or --costgraph");
    if (c->emit != NULL && c->out != NULL && strcmp(c->out, "-") == 0)
        return as_cmd_usage(&as_cmd_solve, "--emit and -o - both write to stdout");
    if (c->costgraph != NULL && (c->setup.group != NULL || c->no_tie))
        return as_cmd_usage(&as_cmd_solve, "--group and --no-tie need a GRAPH");
    if ((c->train.stages != NULL || c->train.schedule != NULL) && c->train.pipeline < 2)
        return as_cmd_usage(&as_cmd_solve, "--stages and --schedule need --pipeline P (P >= 2)");
    if (c->train.recompute == AS_RECOMPUTE_AUTO &&
        (c->train.pipeline > 1 || c->solution != NULL || c->emit != NULL))
        return as_cmd_usage(&as_cmd_solve, "--recompute auto does not combine with %s (give "
                            "none, full or selective)", c->train.pipeline > 1 ? "--pipeline"
                            : c->solution != NULL ? "--solution" : "--emit");
    if (c->train.pipeline > 1 && (c->graph == NULL || c->solution != NULL || c->o.top > 1))
        return as_cmd_usage(&as_cmd_solve, "--pipeline needs a GRAPH, one plan (no --top) and "
                            "no --solution");
    if (c->costgraph != NULL && (c->roles != NULL || c->zero > 0))
        return as_cmd_usage(&as_cmd_solve, "--role and --zero need a GRAPH");
    if (c->roles != NULL || c->zero > 0) { /* one line now, before the graph is read */
        as_mesh *m = NULL;
        uint8_t role[AS_MESH_MAX_AXES] = {0};
        as_err e = {0};
        if (as_mesh_parse(c->setup.mesh ? c->setup.mesh : DEFAULT_MESH, &m, &e) == AS_OK &&
            (c->roles == NULL || as_mesh_parse_roles(m, c->roles, role, &e) == AS_OK) &&
            c->zero > 0 && memchr(role, AS_ROLE_DATA, sizeof role) == NULL)
            as_errf(&e, AS_EUSAGE, "--zero %d needs a data axis to shard over (--role "
                    "AXIS=data)", c->zero);
        as_mesh_free(m);
        if (e.code != AS_OK)
            return as_cmd_fail(&e); /* one line, as a bad --mesh */
    }
    /* an external solution is for the model `export` wrote: untied */
    c->setup.tie = !c->no_tie && c->solution == NULL;
    return AS_EXIT_OK;
}

/* ---- output ---- */

static void
print_sizes(FILE *fp, const char *what, const as_ilp_stats *st)
{
    if (st->uncounted)
        fprintf(fp, "%-13snot counted (too large, or no time left under --time-limit)\n", what);
    else
        fprintf(fp, "%-13s%zu variables (%zu binary), %zu rows, %zu non-zeros\n", what,
                st->cols, st->int_cols, st->rows, st->nnz);
}

static void
print_plan(FILE *fp, const as_problem *p, const as_plan *pl, const char *solver, size_t idx)
{
    char b1[32], b2[32], sb[32];
    size_t v;

    fprintf(fp, "%-13s%s\n", "solver", solver);
    fprintf(fp, "%-13s%s%s\n", "status", as_outcome_name(pl->status),
            pl->timed ? " (the time limit cut the search: the plan may differ run to run)" : "");
    fprintf(fp, "%-13s%.9g s\n", "objective", pl->objective);
    if (isfinite(pl->bound))
        fprintf(fp, "%-13s%.9g s\n%-13s%.3g%%\n", "bound", pl->bound, "gap",
                100 * fmax(0, as_rel_gap(pl->objective, pl->bound)));
    else
        fprintf(fp, "%-13s(none)\n", "bound");
    fprintf(fp, "%-13s%.3f s", "time", pl->time_s);
    if (pl->nodes >= 0)
        fprintf(fp, ", %ld nodes", pl->nodes);
    fputc('\n', fp);
    if (as_problem_nlive(p) > 0)
        fprintf(fp, "%-13s%s per device (budget %s)\n", "peak memory",
                as_fmt_bytes(pl->peak, b1, sizeof b1),
                as_problem_memory(p) > 0 ? as_fmt_bytes(as_problem_memory(p), b2, sizeof b2)
                                         : "none");
    if (idx > 0)
        return;
    fprintf(fp, "strategies:\n");
    for (v = 0; v < as_problem_nnodes(p); v++)
        fprintf(fp, "  %-24s %s\n", as_problem_node(p, v)->name,
                as_problem_strategy_name(p, v, pl->choice[v], sb, sizeof sb));
}

static json_t *
plan_json(const as_problem *p, const as_plan *pl)
{
    json_t *o = json_object(), *nodes = json_array();
    char sb[32];
    size_t v;

    json_object_set_new(o, "status", json_string(as_outcome_name(pl->status)));
    json_object_set_new(o, "objective", json_real(pl->objective));
    json_object_set_new(o, "bound", isfinite(pl->bound) ? json_real(pl->bound) : json_null());
    json_object_set_new(o, "gap", isfinite(pl->bound)
                                      ? json_real(fmax(0, as_rel_gap(pl->objective, pl->bound)))
                                      : json_null());
    json_object_set_new(o, "time", json_real(pl->time_s));
    json_object_set_new(o, "peak_memory", json_real(pl->peak));
    for (v = 0; v < as_problem_nnodes(p); v++)
        json_array_append_new(nodes, json_pack("{s:s,s:I,s:s}", "name",
                                               as_problem_node(p, v)->name, "strategy",
                                               (json_int_t)pl->choice[v], "strategy_name",
                                               as_problem_strategy_name(p, v, pl->choice[v], sb,
                                                                        sizeof sb)));
    json_object_set_new(o, "nodes", nodes);
    return o;
}

static int
write_plans(const char *path, const as_problem *p, const as_plan *plans, size_t n,
            const char *solver, as_err *err)
{
    json_t *root = plan_json(p, &plans[0]), *arr = json_array();
    char *s;
    size_t i;
    int rc;

    json_object_set_new(root, "solver", json_string(solver));
    json_object_set_new(root, "memory_budget", json_real(as_problem_memory(p)));
    for (i = 0; n > 1 && i < n; i++)
        json_array_append_new(arr, plan_json(p, &plans[i]));
    if (n > 1)
        json_object_set_new(root, "plans", arr);
    else
        json_decref(arr);
    s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    rc = as_write_file_atomic(path, s, strlen(s), err);
    if (rc == AS_OK && path != NULL && strcmp(path, "-") == 0)
        putchar('\n');
    free(s);
    return rc;
}

/* No plan fits: find what the cheapest plan needs without the budget. */
static int
solve_infeasible(as_problem *p, const solve_cli *c)
{
    as_solve_opts o = c->o;
    as_solve_result res;
    as_err err = {0};
    char b1[32], b2[32], b3[32];
    double budget = as_problem_memory(p);

    as_problem_set_memory(p, 0);
    o.top = 1;
    if (as_solve_problem(p, &o, &res, &err) != AS_OK)
        return as_cmd_fail(&err);
    as_problem_set_memory(p, budget);
    if (res.nplans == 0 && res.outcome != AS_OUTCOME_INFEASIBLE) {
        /* the budget is proven infeasible, but the solve without it hit the time limit */
        as_solve_result_free(&res);
        fprintf(stderr, "autoshard: no plan fits in %s per device (proven); solver '%s' then "
                "stopped at the time limit (%g s) without a plan when solving without the "
                "memory limit, and no plan can need less than %s\n",
                as_fmt_bytes(budget, b1, sizeof b1), o.solver, o.lim.time_limit_s,
                as_fmt_bytes(as_problem_peak_lower_bound(p), b3, sizeof b3));
        return AS_EXIT_INFEAS;
    }
    if (res.nplans == 0) {
        as_solve_result_free(&res);
        fprintf(stderr, "autoshard: no plan satisfies the alias constraints, whatever the "
                "memory budget\n");
        return AS_EXIT_INFEAS;
    }
    fprintf(stderr, "autoshard: no plan fits in %s per device; the cheapest plan without a "
            "memory limit needs %s per device (solved again without the limit), and no plan "
            "can need less than %s\n", as_fmt_bytes(budget, b1, sizeof b1),
            as_fmt_bytes(res.plans[0].peak, b2, sizeof b2),
            as_fmt_bytes(as_problem_peak_lower_bound(p), b3, sizeof b3));
    as_solve_result_free(&res);
    return AS_EXIT_INFEAS;
}

/*
 * A hopeless budget is rejected before any reduction or ILP: no plan can
 * peak below the largest, over liveness points, of resident bytes plus the
 * smallest memory of every live node (as_problem_peak_lower_bound).
 * Returns AS_EXIT_INFEAS after one line, or AS_EXIT_OK.
 */
static int
solve_hopeless(const as_problem *p)
{
    double budget = as_problem_memory(p), lb;
    char b1[32], b2[32];

    if (budget <= 0)
        return AS_EXIT_OK;
    lb = as_problem_peak_lower_bound(p);
    if (lb <= budget * (1 + 1e-9))
        return AS_EXIT_OK;
    fprintf(stderr, "autoshard: no plan fits in %s per device: every plan needs at least %s "
            "(resident state plus the smallest layout of every tensor live at the fullest "
            "point; found before building the ILP)\n", as_fmt_bytes(budget, b1, sizeof b1),
            as_fmt_bytes(lb, b2, sizeof b2));
    return AS_EXIT_INFEAS;
}

static int
solve_external(as_problem *p, const solve_cli *c, FILE *fp)
{
    as_plan plan;
    as_sol_status st;
    as_err err = {0};
    int rc;

    if (as_solve_from_values(p, c->o.reduce, c->solution, &plan, &st, &err) != AS_OK)
        return as_cmd_fail(&err);
    if (plan.choice == NULL) {
        fprintf(stderr, "autoshard: %s: the solver found %s\n", c->solution,
                st == AS_SOL_INFEASIBLE ? "the model infeasible (no plan fits the limits)"
                                        : "no solution");
        return st == AS_SOL_INFEASIBLE ? AS_EXIT_INFEAS : AS_EXIT_RUNTIME;
    }
    print_plan(fp, p, &plan, "external", 0);
    rc = c->out ? write_plans(c->out, p, &plan, 1, "external", &err) : AS_OK;
    as_plan_free(&plan);
    return rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
}

static void
print_summary(FILE *fp, const as_problem *p, const char *what, unsigned reduce,
              const as_solve_result *r)
{
    const as_reduce_stats *s = &r->red;

    fprintf(fp, "%-13s%s: %zu nodes, %zu edges, %zu liveness points, %zu aliases\n",
            "cost graph", what, as_problem_nnodes(p), as_problem_nedges(p),
            as_problem_nlive(p), as_problem_naliases(p));
    if (reduce) {
        fprintf(fp, "%-13s%zu followers and %zu alias pairs merged, %zu constant and %zu "
                "parallel edges, eliminated %zu/%zu/%zu of degree 0/1/2 and %zu with one "
                "strategy left\n", "reductions", s->followers, s->aliases, s->const_edges,
                s->merged_edges, s->elim[0], s->elim[1], s->elim[2], s->single);
        if (s->bound_rounds > 0)
            fprintf(fp, "%-13s%d rounds: lower bound %.9g s, plan %.9g s; %zu strategies "
                    "can be in no optimal plan, %zu dominated\n", "bound", s->bound_rounds, s->lb,
                    s->ub, s->pruned, s->dominated);
        if (s->timed_out)
            fprintf(fp, "%-13sthe bound rounds stopped at 80 %% of the time limit\n", "");
        if (s->restricted > 0)
            fprintf(fp, "%-13sthe ILP keeps the strategies the bound rates best (--ilp-cap): "
                    "%zu left out, a plan with one costs at least %.9g s; optimal only when "
                    "that proves it\n", "restricted", s->restricted, s->cut);
        fprintf(fp, "%-13s%zu nodes, %zu edges, %zu strategies\n", "left", s->nodes, s->edges,
                s->strategies);
        if (r->rowgen_rounds > 0) /* the figures above are the last round's */
            fprintf(fp, "%-13s%zu of %zu liveness points kept as rows after %zu rounds "
                    "(row generation: the rest fit the plan; docs/ilp.md)\n", "rows",
                    r->rowgen_points, as_problem_nlive(p), r->rowgen_rounds);
    }
    print_sizes(fp, "ILP before", &r->before);
    print_sizes(fp, "ILP after", &r->after);
    fprintf(fp, "%-13s%.3f s\n", "build", r->build_s);
    fflush(fp);
}

static int
solve_costgraph(as_problem *p, solve_cli *c)
{
    FILE *fp = c->out != NULL && strcmp(c->out, "-") == 0 ? stderr : stdout;
    as_solve_result res;
    as_err err = {0};
    size_t i;
    int rc;

    if (c->solution != NULL)
        return solve_external(p, c, fp);
    if ((rc = solve_hopeless(p)) != AS_EXIT_OK)
        return rc;
    if (as_solve_problem(p, &c->o, &res, &err) != AS_OK)
        return as_cmd_fail(&err);
    print_summary(fp, p, c->costgraph, c->o.reduce, &res);
    if (res.outcome == AS_OUTCOME_INFEASIBLE) {
        as_solve_result_free(&res);
        return solve_infeasible(p, c);
    }
    if (res.nplans == 0) {
        as_solve_result_free(&res);
        fprintf(stderr, "autoshard: stopped at the time limit (%g s) without a feasible plan "
                "(reductions and solver '%s')\n", c->o.lim.time_limit_s, c->o.solver);
        return AS_EXIT_RUNTIME;
    }
    print_plan(fp, p, &res.plans[0], c->o.solver, 0);
    for (i = 1; i < res.nplans; i++)
        fprintf(fp, "plan %-8zu%.9g s (%s)\n", i + 1, res.plans[i].objective,
                as_outcome_name(res.plans[i].status));
    if (c->o.top > 1 && res.nplans < c->o.top)
        fprintf(fp, "(only %zu distinct plans within the limits)\n", res.nplans);
    rc = c->out ? write_plans(c->out, p, res.plans, res.nplans, c->o.solver, &err) : AS_OK;
    as_solve_result_free(&res);
    return rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
}

/* ---- graphs: the strategy table ---- */

/*
 * Repeated layers are found by name: the first "SEG.N." in a node name (N
 * decimal) names its layer "SEG.N" of family SEG, so h.3.mlp.fc1.mm,
 * d.h.3.mlp.fc1.mm and adam_m.h.3.mlp.fc1.w.new all belong to layer h.3.
 * A family seen with two or more N is repeated; its other names are not.
 */
typedef struct layer_ref {
    size_t fam_pos, fam_len; /**< SEG within the name */
    size_t num_len;          /**< digits after "SEG." */
    long num;
} layer_ref;

static int
layer_of(const char *name, layer_ref *lr)
{
    const char *seg = name, *q;

    for (;;) {
        const char *dot = strchr(seg, '.');
        if (dot == NULL)
            return 0;
        for (q = dot + 1; *q >= '0' && *q <= '9'; q++)
            ;
        if (q > dot + 1 && *q == '.' && dot > seg && !(seg[0] >= '0' && seg[0] <= '9')) {
            lr->fam_pos = (size_t)(seg - name);
            lr->fam_len = (size_t)(dot - seg);
            lr->num_len = (size_t)(q - dot - 1);
            lr->num = strtol(dot + 1, NULL, 10);
            return 1;
        }
        seg = dot + 1;
    }
}

/* Name of node V with its layer number replaced by '*' into BUF. */
static const char *
layer_role(const char *name, const layer_ref *lr, char *buf, size_t n)
{
    size_t at = lr->fam_pos + lr->fam_len + 1;

    char *end;

    snprintf(buf, n, "%.*s*%s", (int)at, name, name + at + lr->num_len);
    /* autodiff numbers its ops (d.h.3.fc.mm.283): drop trailing numbers */
    while ((end = strrchr(buf, '.')) != NULL && end[1] >= '0' && end[1] <= '9' &&
           strspn(end + 1, "0123456789") == strlen(end + 1))
        *end = '\0';
    return buf;
}

typedef struct graph_view {
    const as_graph_problem *gp;
    const size_t *choice;
    int all;
} graph_view;

/* 1 if node V belongs in the short table: parameters and contractions. */
static int
node_shown(const graph_view *w, size_t v)
{
    int32_t op = as_build_map_node_op(w->gp->map, v), t;
    const char *ty;

    if (w->all)
        return 1;
    if (op < 0) {
        t = as_build_map_node_tensor(w->gp->map, v);
        return as_graph_tensor(w->gp->g, t)->kind == AS_TK_PARAM;
    }
    ty = as_graph_op(w->gp->g, op)->def->name;
    return strstr(ty, "matmul") != NULL || strstr(ty, "dot") != NULL ||
           strstr(ty, "conv") != NULL || strstr(ty, "einsum") != NULL;
}

static const char *
node_strategy(const graph_view *w, size_t v)
{
    return as_build_map_node_set(w->gp->map, v)->s[w->choice[v]].name;
}

static void
table_row(FILE *fp, const graph_view *w, size_t v, const char *note)
{
    const as_problem *p = w->gp->p;
    int32_t op = as_build_map_node_op(w->gp->map, v);
    static const char *const kinds[] = {"act", "input", "param", "state", "const"};
    int32_t t = op >= 0 ? -1 : as_build_map_node_tensor(w->gp->map, v);
    int kind = t >= 0 ? (int)as_graph_tensor(w->gp->g, t)->kind : -1;
    const char *ty = op >= 0 ? as_graph_op(w->gp->g, op)->def->name
                     : kind >= 0 && kind < 5 ? kinds[kind] : "tensor";

    fprintf(fp, "  %-36s %-12s %s%s\n", as_problem_node(p, v)->name, ty, node_strategy(w, v),
            note);
}

/* Occurrence of V's role among the nodes of its layer before it (NODES order). */
static size_t
role_occurrence(const graph_view *w, const size_t *nodes, size_t n, size_t at,
                const layer_ref *refs, const char *role)
{
    char r2[256];
    size_t i, occ = 0;

    for (i = 0; i < at && i < n; i++)
        if (refs[nodes[i]].num == refs[nodes[at]].num &&
            strcmp(layer_role(as_problem_node(w->gp->p, nodes[i])->name, &refs[nodes[i]], r2,
                              sizeof r2), role) == 0)
            occ++;
    return occ;
}

/* Rows of layer NUM (among NODES) whose role is missing from layer REP or chose otherwise. */
static size_t
layer_diff(const graph_view *w, const size_t *nodes, size_t n, long rep, long num,
           const layer_ref *refs, size_t *diff)
{
    const as_problem *p = w->gp->p;
    char r1[256], r2[256];
    size_t i, j, nd = 0;

    for (i = 0; i < n; i++) {
        size_t v = nodes[i], occ, seen = 0;
        int found = 0;
        if (refs[v].num != num)
            continue;
        layer_role(as_problem_node(p, v)->name, &refs[v], r1, sizeof r1);
        occ = role_occurrence(w, nodes, n, i, refs, r1);
        for (j = 0; j < n && !found; j++) {
            size_t u = nodes[j];
            if (refs[u].num != rep ||
                strcmp(layer_role(as_problem_node(p, u)->name, &refs[u], r2, sizeof r2), r1) != 0)
                continue;
            if (seen++ == occ)
                found = 1 + (strcmp(node_strategy(w, u), node_strategy(w, v)) == 0);
        }
        if (found != 2)
            diff[nd++] = v;
    }
    return nd;
}

/* Signature of every layer number NUMS[i]: "role=strategy;" in node order. */
static char **
layer_sigs(const graph_view *w, const size_t *nodes, size_t n, const layer_ref *refs,
           const long *nums, size_t nnums)
{
    char **sig = as_xcalloc(nnums + 1, sizeof *sig), role[256];
    size_t i, j;

    for (j = 0; j < nnums; j++) {
        AS_VEC(char) b = {0};
        for (i = 0; i < n; i++) {
            size_t v = nodes[i], len;
            char *row;
            if (refs[v].num != nums[j])
                continue;
            layer_role(as_problem_node(w->gp->p, v)->name, &refs[v], role, sizeof role);
            row = as_xasprintf("%s=%s;", role, node_strategy(w, v));
            len = strlen(row);
            AS_VEC_RESERVE(&b, b.n + len + 1);
            memcpy(b.v + b.n, row, len);
            b.n += len;
            free(row);
        }
        AS_VEC_PUSH(&b, '\0');
        sig[j] = b.v;
    }
    return sig;
}

/* One repeated family: the most common layer in full, then which layers chose alike. */
static void
print_family(FILE *fp, const graph_view *w, const char *fam, const size_t *nodes, size_t n,
             const layer_ref *refs)
{
    AS_VEC(long) nums = {0};
    size_t i, j, hidden = 0, best = 0, bestc = 0, *diff = as_xcalloc(n + 1, sizeof *diff);
    char **sig;
    long rep;
    int same_any = 0;

    for (i = 0; i < n; i++) {
        int seen = 0;
        for (j = 0; j < nums.n && !seen; j++)
            seen = nums.v[j] == refs[nodes[i]].num;
        if (!seen)
            AS_VEC_PUSH(&nums, refs[nodes[i]].num);
    }
    sig = layer_sigs(w, nodes, n, refs, nums.v, nums.n);
    for (i = 0; i < nums.n; i++) {
        size_t cnt = 0;
        for (j = 0; j < nums.n; j++)
            cnt += strcmp(sig[i], sig[j]) == 0;
        if (cnt > bestc) {
            bestc = cnt;
            best = i;
        }
    }
    rep = nums.v[best];
    fprintf(fp, "layer %s.%ld (representative of %zu layers %s.*):\n", fam, rep, nums.n, fam);
    for (i = 0; i < n; i++) {
        if (refs[nodes[i]].num != rep)
            continue;
        if (node_shown(w, nodes[i]))
            table_row(fp, w, nodes[i], "");
        else
            hidden++;
    }
    if (hidden > 0)
        fprintf(fp, "  (+%zu other ops of the layer; --all lists them)\n", hidden);
    fprintf(fp, "  layers that chose identically:");
    for (j = 0; j < nums.n; j++)
        if (j != best && strcmp(sig[j], sig[best]) == 0) {
            fprintf(fp, " %s.%ld", fam, nums.v[j]);
            same_any = 1;
        }
    fprintf(fp, "%s\n", same_any ? "" : " none");
    for (j = 0; j < nums.n; j++) {
        size_t nd;
        if (strcmp(sig[j], sig[best]) == 0)
            continue;
        nd = layer_diff(w, nodes, n, rep, nums.v[j], refs, diff);
        if (nd == 0) { /* its ops are not the representative's: nothing to compare op by op */
            fprintf(fp, "  layer %s.%ld: the same choices for every op it shares with %s.%ld "
                    "(its set of ops differs)\n", fam, nums.v[j], fam, nums.v[best]);
            continue;
        }
        fprintf(fp, "  layer %s.%ld differs in %zu op%s:\n", fam, nums.v[j], nd,
                nd == 1 ? "" : "s");
        for (i = 0; i < nd && i < 12; i++)
            table_row(fp, w, diff[i], "");
        if (nd > 12)
            fprintf(fp, "  (+%zu more)\n", nd - 12);
    }
    for (j = 0; j < nums.n; j++)
        free(sig[j]);
    free(sig);
    AS_VEC_FREE(&nums);
    free(diff);
}

static void
print_table(FILE *fp, const graph_view *w)
{
    const as_problem *p = w->gp->p;
    size_t n = as_problem_nnodes(p), v, i, hidden = 0, nfam = 0;
    layer_ref *refs = as_xcalloc(n + 1, sizeof *refs);
    unsigned char *fam_ok = as_xcalloc(n + 1, 1), *done = as_xcalloc(n + 1, 1);
    size_t *members = as_xcalloc(n + 1, sizeof *members);

    /* a node is in a repeated family when another node of its family has another number */
    for (v = 0; v < n; v++)
        if (!layer_of(as_problem_node(p, v)->name, &refs[v]))
            refs[v].num = -1;
    for (v = 0; v < n; v++) {
        const char *nv = as_problem_node(p, v)->name;
        size_t m = 0;
        if (refs[v].num < 0 || done[v])
            continue;
        for (i = v; i < n; i++) {
            const char *ni = as_problem_node(p, i)->name;
            if (refs[i].num >= 0 && !done[i] && refs[i].fam_len == refs[v].fam_len &&
                strncmp(ni + refs[i].fam_pos, nv + refs[v].fam_pos, refs[v].fam_len) == 0)
                members[m++] = i;
        }
        for (i = 0; i < m; i++)
            if (refs[members[i]].num != refs[v].num)
                break;
        if (i == m)
            continue; /* one number only: not repeated */
        for (i = 0; i < m; i++) {
            done[members[i]] = 1;
            fam_ok[members[i]] = 1;
        }
        if (nfam++ == 0)
            fprintf(fp, "strategies (repeated layers: one shown in full):\n");
        {
            char fam[128];
            snprintf(fam, sizeof fam, "%.*s", (int)refs[v].fam_len, nv + refs[v].fam_pos);
            print_family(fp, w, fam, members, m, refs);
        }
    }
    fprintf(fp, "%s:\n", nfam ? "other ops" : "strategies");
    for (v = 0; v < n; v++) {
        if (fam_ok[v])
            continue;
        if (node_shown(w, v))
            table_row(fp, w, v, "");
        else
            hidden++;
    }
    if (hidden > 0)
        fprintf(fp, "  (+%zu other ops and tensors; --all lists them)\n", hidden);
    free(refs);
    free(fam_ok);
    free(done);
    free(members);
}

/* ---- graphs: collectives ---- */

/* Is T a parameter gradient ZeRO-3 reduce-scatters over data axes (as_zero_reduce_saving)? */
static int
zero3_grad(const as_graph_problem *gp, int32_t t)
{
    int zero = 0;
    const as_tensor *tt = as_graph_tensor(gp->g, t);

    as_build_map_roles(gp->map, &zero);
    return zero >= 3 && (tt->flags & AS_TF_GRAD) && tt->of >= 0;
}

/*
 * Add the collectives that strategy S of SET (op OP, -1 for a declared tensor) implies by
 * resolving partial outputs.
 */
static void
strategy_colls(const as_graph_problem *gp, const as_strategy_set *set, const as_strategy *s,
               int32_t op, double *bytes)
{
    const uint8_t *role = as_build_map_roles(gp->map, NULL);
    const as_mesh *m = gp->mesh;
    const as_strategy *base = NULL;
    int i, o, k, naxes = as_mesh_naxes(m);

    if (s->resolve == AS_RESOLVE_NONE)
        return;
    for (i = 0; i < set->n && base == NULL; i++)
        if (set->s[i].resolve == AS_RESOLVE_NONE && memcmp(set->s[i].rule, s->rule,
                                                           sizeof s->rule) == 0)
            base = &set->s[i];
    if (base == NULL)
        return;
    for (o = 0; o < set->nout; o++) {
        as_spec sp = base->out[o];
        for (k = 0; k < naxes; k++) {
            if (sp.axis[k] != AS_SPEC_P)
                continue;
            if (s->resolve == AS_RESOLVE_ALLREDUCE) {
                int rs = op >= 0 && o < as_graph_op(gp->g, op)->nout && role[k] == AS_ROLE_DATA &&
                         zero3_grad(gp, as_graph_op(gp->g, op)->out[o]);
                bytes[rs ? AS_COLL_REDUCE_SCATTER : AS_COLL_ALL_REDUCE] +=
                    as_spec_local_bytes(&sp, &set->out_shape[o], m);
                sp.axis[k] = AS_SPEC_R;
            } else {
                bytes[AS_COLL_REDUCE_SCATTER] += as_spec_local_bytes(&sp, &set->out_shape[o], m);
                sp.axis[k] = (int8_t)s->resolve;
            }
            sp.partial[k] = 0;
        }
    }
}

/*
 * Bytes per collective kind (cost.h's byte conventions) of the plan CHOICE:
 * partial outputs resolved inside ops, and every resharding step on the
 * edges (as_reshard_steps), as the ILP charges them; ZeRO-3's gathers of a
 * parameter before each op reading it and its gradient's reduce-scatter.
 */
static void
plan_collectives(const as_graph_problem *gp, const size_t *choice, double *bytes)
{
    const as_graph *g = gp->g;
    as_reshard_step steps[AS_RESHARD_MAX_STEPS];
    size_t v;
    int32_t i;
    int j, k, ns, zero = 0;
    const uint8_t *role = as_build_map_roles(gp->map, &zero);

    memset(bytes, 0, AS_COLL_COUNT * sizeof *bytes);
    for (v = 0; v < as_problem_nnodes(gp->p); v++) {
        const as_strategy_set *set = as_build_map_node_set(gp->map, v);
        strategy_colls(gp, set, &set->s[choice[v]], as_build_map_node_op(gp->map, v), bytes);
    }
    for (i = 0; i < as_graph_nops(g); i++) {
        const as_op *op = as_graph_op(g, i);
        size_t v2 = as_build_map_op_node(gp->map, i);
        const as_strategy *s = &as_build_map_node_set(gp->map, v2)->s[choice[v2]];
        for (j = 0; j < op->nin; j++) {
            int32_t t = op->in[j];
            if (t < 0)
                continue;
            const as_tensor *tt = as_graph_tensor(g, t);
            int j2;
            ns = as_reshard_steps(gp->cm, &tt->shape,
                                  as_build_map_tensor_spec(gp->map, t, choice), &s->in[j],
                                  steps, NULL);
            for (k = 0; k < ns; k++)
                if (steps[k].kind >= 0 && steps[k].kind < AS_COLL_COUNT)
                    bytes[steps[k].kind == AS_COLL_ALL_REDUCE && role[steps[k].axis] ==
                                  AS_ROLE_DATA && zero3_grad(gp, t)
                              ? AS_COLL_REDUCE_SCATTER
                              : steps[k].kind] += steps[k].bytes;
            for (j2 = 0; j2 < j && op->in[j2] != t; j2++)
                ;
            if (zero < 3 || j2 < j || (op->flags & AS_OF_OPTIMIZER) || tt->kind != AS_TK_PARAM ||
                tt->update < 0 || tt->producer >= 0)
                continue;
            ns = as_zero_gather_steps(gp->cm, &tt->shape,
                                      as_build_map_tensor_spec(gp->map, t, choice), role, steps,
                                      NULL);
            for (k = 0; k < ns; k++)
                bytes[AS_COLL_ALL_GATHER] += steps[k].bytes;
        }
    }
}

static void
print_collectives(FILE *fp, const as_graph_problem *gp, const size_t *choice)
{
    double bytes[AS_COLL_COUNT];
    char b[32];
    int k;

    plan_collectives(gp, choice, bytes);
    fprintf(fp, "bytes moved per step (all-reduce: buffer per device; gather/scatter: full "
            "size; all-to-all: per device):\n");
    for (k = 0; k < AS_COLL_COUNT; k++)
        if (k != AS_COLL_SEND || bytes[k] > 0)
            fprintf(fp, "  %-15s %s\n", as_coll_name((as_coll)k),
                    as_fmt_bytes(bytes[k], b, sizeof b));
}

/* ---- graphs: solve and report ---- */

/* Which repeated blocks share one set of variables (formulate/group.h). */
static void
print_groups(FILE *fp, const as_graph_problem *gp)
{
    const as_group_result *r = gp->groups;
    size_t i;

    if (r == NULL)
        return;
    if (r->period == 0 || r->nclass == 0) {
        fprintf(fp, "%-13s%s\n", "tied", r->nclass > 0 ? "none (--no-tie)"
                                                       : "none (no repeated blocks found)");
        return;
    }
    for (i = 0; i < r->nclass; i++)
        fprintf(fp, "%-13s%s..%s: %zu blocks of %zu nodes, period %d: %zu set%s of variables\n",
                i == 0 ? "tied" : "", r->cls[i].first, r->cls[i].last, r->cls[i].nblocks,
                r->cls[i].nodes, r->period, r->cls[i].sets, r->cls[i].sets == 1 ? "" : "s");
    if (r->untied > 0)
        fprintf(fp, "%-13s%zu blocks differ from every other and are solved apart\n", "",
                r->untied);
    if (r->loose > 0)
        fprintf(fp, "%-13s%zu nodes of a role not every block has are solved apart\n", "",
                r->loose);
}

static void
print_graph_header(FILE *fp, const solve_cli *c, const as_graph_problem *gp)
{
    char b[32];
    double mem = as_problem_memory(gp->p);

    fprintf(fp, "%-13s%s (%s): %d ops, %d tensors\n", "graph", as_graph_name(gp->g),
            c->graph != NULL ? c->graph : "built-in " DEFAULT_PRESET " --train",
            as_graph_nops(gp->g), as_graph_ntensors(gp->g));
    fprintf(fp, "%-13s%s on %s, cost model %s\n", "mesh", as_mesh_str(gp->mesh), gp->hw.name,
            as_cost_model_ops(gp->cm)->name);
    fprintf(fp, "%-13s%s\n", "memory", mem > 0 ? as_fmt_bytes(mem, b, sizeof b) : "no limit");
    fprintf(fp, "%-13s%.3f s\n", "problem", gp->build_s);
    print_groups(fp, gp);
}

static void
print_graph_plan(FILE *fp, const as_plan *pl, const char *solver, double budget, double rows)
{
    char b1[32], b2[32], b3[32];

    fprintf(fp, "%-13s%s\n", "solver", solver);
    fprintf(fp, "%-13s%s%s\n", "status", as_outcome_name(pl->status),
            pl->timed ? " (the time limit cut the search: the plan may differ run to run)" : "");
    fprintf(fp, "%-13s%.9g s\n", "objective", pl->objective);
    if (isfinite(pl->bound))
        fprintf(fp, "%-13s%.9g s\n%-13s%.3g%%\n", "bound", pl->bound, "gap",
                100 * fmax(0, as_rel_gap(pl->objective, pl->bound)));
    else
        fprintf(fp, "%-13s(none)\n", "bound");
    fprintf(fp, "%-13s%.3f s", "time", pl->time_s);
    if (pl->nodes >= 0)
        fprintf(fp, ", %ld nodes", pl->nodes);
    fputc('\n', fp);
    if (pl->peak >= 0 && rows >= 0)
        fprintf(fp, "%-13s%s per device (budget %s; ILP rows %s)\n", "peak memory",
                as_fmt_bytes(pl->peak, b1, sizeof b1),
                budget > 0 ? as_fmt_bytes(budget, b2, sizeof b2) : "none",
                as_fmt_bytes(rows, b3, sizeof b3));
    else if (pl->peak >= 0)
        fprintf(fp, "%-13s%s per device (budget %s)\n", "peak memory",
                as_fmt_bytes(pl->peak, b1, sizeof b1),
                budget > 0 ? as_fmt_bytes(budget, b2, sizeof b2) : "none");
}

/* Write N plans: one JSON object, or an array when there are several. */
static int
write_shard_plans(const char *path, as_shard_plan **plans, size_t n, as_err *err)
{
    AS_VEC(char) buf = {0};
    size_t i;
    int rc;

    if (n == 1)
        return as_shard_plan_write(plans[0], path, err);
    AS_VEC_PUSH(&buf, '[');
    for (i = 0; i < n; i++) {
        char *s = as_shard_plan_dumps(plans[i]);
        size_t len = strlen(s);
        while (len > 0 && s[len - 1] == '\n')
            len--;
        if (i > 0)
            AS_VEC_PUSH(&buf, ',');
        AS_VEC_PUSH(&buf, '\n');
        AS_VEC_RESERVE(&buf, buf.n + len);
        memcpy(buf.v + buf.n, s, len);
        buf.n += len;
        free(s);
    }
    AS_VEC_PUSH(&buf, '\n');
    AS_VEC_PUSH(&buf, ']');
    AS_VEC_PUSH(&buf, '\n');
    rc = as_write_file_atomic(path, buf.v, buf.n, err);
    AS_VEC_FREE(&buf);
    return rc;
}

/*
 * Everything after the solve: the plans of the original graph, in order of
 * objective, are printed, written (-o) and emitted (--emit).
 */
/*
 * Check the plans with the simulator (src/sim/lower.h): one plan gets its
 * simulated iteration time, throughput and peak memory; several are ranked
 * by simulated time next to the solver's order.
 */
static int
solve_simulate(const solve_cli *c, const as_graph_problem *gp, as_shard_plan **plans, size_t n,
               as_err *err)
{
    FILE *fp = (c->out != NULL && strcmp(c->out, "-") == 0) || c->emit != NULL ? stderr : stdout;
    as_lower_opts lo;
    as_sim_opts so;
    char b1[32], b2[32];

    as_lower_opts_init(&lo);
    lo.hw = c->setup.hw;
    lo.mesh = c->setup.mesh;
    as_train_cli_lower_opts(&c->train, &lo);
    as_sim_opts_init(&so);
    if (n == 1) {
        as_sim_result *r = NULL;
        double peak = 0;
        int d, oom = 0;
        AS_CHECK(as_sim_plan(as_train_cli_lower_graph(&c->train, gp->g), plans[0], &lo, &so, &r,
                             NULL, err));
        for (d = 0; d < r->ndevices; d++) {
            if (r->dev[d].peak > peak)
                peak = r->dev[d].peak;
            oom += r->dev[d].oom;
        }
        fprintf(fp, "\nsimulated (%s, %s): iteration %.4g s", r->hw, r->model, r->time);
        if (r->throughput > 0)
            fprintf(fp, ", %.4g samples/s", r->throughput);
        fprintf(fp, ", peak memory %s per device", as_fmt_bytes(peak, b1, sizeof b1));
        if (oom > 0)
            fprintf(fp, " (OOM on %d of %d devices: capacity %s)\n", oom, r->ndevices,
                    as_fmt_bytes(r->capacity, b2, sizeof b2));
        else
            fprintf(fp, " (fits %s)\n", as_fmt_bytes(r->capacity, b2, sizeof b2));
        fprintf(fp, "bubble %.3f, %zu events (%zu costed once, %zu from the cache)\n", r->bubble,
                r->nevents, r->cost_misses, r->cost_hits);
        as_sim_result_free(r);
    } else {
        char **names = as_xcalloc(n, sizeof *names);
        as_rank_result rr;
        size_t i;
        int rc;
        for (i = 0; i < n; i++)
            names[i] = as_xasprintf("plan %zu", i + 1);
        fputc('\n', fp);
        rc = as_sim_rank_plans(as_train_cli_lower_graph(&c->train, gp->g),
                               (const as_shard_plan *const *)plans,
                               (const char *const *)names, NULL, n, &lo, &so, fp, &rr, err);
        if (rc == AS_OK)
            as_rank_result_free(&rr);
        for (i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return rc;
    }
    return AS_OK;
}

static int
solve_graph_finish(const solve_cli *c, const as_graph_problem *gp, as_shard_plan **plans,
                   size_t n, as_err *err)
{
    if (c->out != NULL)
        AS_CHECK(write_shard_plans(c->out, plans, n, err));
    if (c->emit != NULL)
        AS_CHECK(as_shard_plan_emit(plans[0], c->emit, stdout, err));
    if (c->simulate && n > 0)
        AS_CHECK(solve_simulate(c, gp, plans, n, err));
    return AS_OK;
}

static int
graph_plans(const solve_cli *c, const as_graph_problem *gp, const as_plan *pls, size_t n,
            const char *solver, as_err *err)
{
    as_shard_plan **plans = as_xcalloc(n + 1, sizeof *plans);
    size_t i;
    int rc = AS_OK;

    for (i = 0; i < n && rc == AS_OK; i++) {
        as_plan_source src = {solver, as_outcome_name(pls[i].status), pls[i].objective,
                              pls[i].bound, pls[i].peak};
        rc = as_plan_from_choice(gp->map, pls[i].choice, &src, &plans[i], err);
        if (rc == AS_OK)
            as_train_cli_plan(&c->train, plans[i]);
    }
    if (rc == AS_OK)
        rc = solve_graph_finish(c, gp, plans, n, err);
    for (i = 0; i < n; i++)
        as_shard_plan_free(plans[i]);
    free(plans);
    return rc;
}

static void
print_graph_result(FILE *fp, const solve_cli *c, const as_graph_problem *gp,
                   const as_plan *pl, size_t n, const char *solver, double rows)
{
    graph_view w = {gp, pl[0].choice, c->all};
    size_t i;

    print_graph_plan(fp, &pl[0], solver, as_problem_memory(gp->p), rows);
    print_table(fp, &w);
    print_collectives(fp, gp, pl[0].choice);
    for (i = 1; i < n; i++) {
        char pk[32];
        fprintf(fp, "plan %-8zu%.9g s (%s, peak %s per device)\n", i + 1, pl[i].objective,
                as_outcome_name(pl[i].status), as_fmt_bytes(pl[i].peak, pk, sizeof pk));
    }
    if (c->o.top > 1 && n < c->o.top)
        fprintf(fp, "(only %zu distinct plans within the limits)\n", n);
}

static int
solve_graph_external(const solve_cli *c, as_graph_problem *gp, FILE *fp)
{
    as_plan plan;
    as_sol_status st;
    as_err err = {0};
    int rc;

    if (as_solve_from_values(gp->p, c->o.reduce, c->solution, &plan, &st, &err) != AS_OK)
        return as_cmd_fail(&err);
    if (plan.choice == NULL) {
        fprintf(stderr, "autoshard: %s: the solver found %s\n", c->solution,
                st == AS_SOL_INFEASIBLE ? "the model infeasible (no plan fits the limits)"
                                        : "no solution");
        return st == AS_SOL_INFEASIBLE ? AS_EXIT_INFEAS : AS_EXIT_RUNTIME;
    }
    print_graph_result(fp, c, gp, &plan, 1, "external", -1);
    rc = graph_plans(c, gp, &plan, 1, "external", &err);
    as_plan_free(&plan);
    return rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
}

/*
 * The memory model (docs/sim.md "Memory"): *PEAK gets the largest peak per
 * device of the plan of PL as the simulator counts it -- the liveness the
 * ILP's rows see plus what they cannot (resharded copies of inputs, partial
 * sums before their all-reduce, communication overlapping compute) -- so
 * that `solve` and `simulate` report the same figure for the same plan.
 */
static int
plan_sim_peak(const solve_cli *c, const as_graph_problem *gp, const as_plan *pl,
              const char *solver, double *peak, as_err *err)
{
    as_plan_source src = {solver, as_outcome_name(pl->status), pl->objective, pl->bound,
                          pl->peak};
    as_shard_plan *sp = NULL;
    as_sim_result *r = NULL;
    as_lower_opts lo;
    int d, rc;

    AS_CHECK(as_plan_from_choice(gp->map, pl->choice, &src, &sp, err));
    as_train_cli_plan(&c->train, sp);
    as_lower_opts_init(&lo);
    lo.hw = c->setup.hw;
    lo.mesh = c->setup.mesh;
    as_train_cli_lower_opts(&c->train, &lo);
    rc = as_sim_plan(as_train_cli_lower_graph(&c->train, gp->g), sp, &lo, NULL, &r, NULL, err);
    as_shard_plan_free(sp);
    if (rc != AS_OK)
        return rc;
    *peak = 0;
    for (d = 0; d < r->ndevices; d++)
        *peak = fmax(*peak, r->dev[d].peak);
    as_sim_result_free(r);
    return AS_OK;
}

/* The heuristics' check of a plan against the budget by the memory model (as_limits fits):
 * the simulator's peak, which sees the resharded copies and partial sums the rows do not. */
typedef struct fit_check {
    const solve_cli *c;
    const as_graph_problem *gp;
    double budget; /* the user's, not the rows' tightened one */
} fit_check;

static int
fit_check_fn(void *ud, const size_t *choice)
{
    const fit_check *f = ud;
    as_plan pl = {.choice = (size_t *)choice, .peak = -1, .status = AS_OUTCOME_FEASIBLE};
    as_err e2 = {0};
    double peak = 0;

    if (plan_sim_peak(f->c, f->gp, &pl, f->c->o.solver, &peak, &e2) != AS_OK)
        return 1; /* the plan does not lower: the rows decide (solve_fit warns) */
    return peak <= f->budget * (1 + 1e-9);
}

/* With a budget, O's heuristics check their plans with fit_check_fn on F. */
static void
fit_check_set(const solve_cli *c, const as_graph_problem *gp, as_solve_opts *o, fit_check *f)
{
    f->c = c;
    f->gp = gp;
    f->budget = as_problem_memory(gp->p);
    if (f->budget > 0) {
        o->lim.fits = fit_check_fn;
        o->lim.fits_ud = f;
    }
}

/* as_fit_peak_fn: the simulator's peak of a plan (plan_sim_peak). */
typedef struct fit_ctx {
    const solve_cli *c;
    const as_graph_problem *gp;
} fit_ctx;

static int
fit_peak(void *ud, const as_plan *pl, double *peak, as_err *err)
{
    const fit_ctx *x = ud;

    return plan_sim_peak(x->c, x->gp, pl, x->c->o.solver, peak, err);
}

/*
 * Give every plan of RES its peak by the memory model and solve again until the first fits
 * the budget (solve/fit.h as_solve_fit); *ROWS gets its peak by the ILP's rows.
 * --time-limit covers every solve since T0; CLOSE_GAP: the time left once a plan fits goes
 * to its gap (as_fit_opts.close_gap).  Returns AS_EXIT_OK, or AS_EXIT_INFEAS /
 * AS_EXIT_RUNTIME after printing why (RES freed), or AS_EXIT_RUNTIME with ERR set.
 */
static int
solve_fit(const solve_cli *c, as_graph_problem *gp, as_solve_result *res, double t0,
          double *rows, FILE *fp, int close_gap, as_err *err)
{
    fit_ctx x = {c, gp};
    as_fit_opts fo = {fit_peak, &x, t0, fp, c->errfp, close_gap};
    as_solve_opts o = c->o;
    fit_check fc;

    fit_check_set(c, gp, &o, &fc); /* the heuristics check their plans with the simulator */
    switch (as_solve_fit(gp->map, gp->p, &o, &fo, res, rows, err)) {
    case AS_FIT_OK:
        return AS_EXIT_OK;
    case AS_FIT_INFEAS:
        return AS_EXIT_INFEAS;
    default:
        return AS_EXIT_RUNTIME;
    }
}

static int solve_graph_after(solve_cli *c, as_graph_problem *gp, as_solve_opts *op,
                             as_solve_result *rp, int rc0, double t0, FILE *fp, as_err *errp);

static int
solve_graph_run(solve_cli *c, as_graph_problem *gp)
{
    FILE *fp = (c->out != NULL && strcmp(c->out, "-") == 0) || c->emit != NULL ? stderr : stdout;
    as_solve_result res;
    as_solve_opts o = c->o;
    as_err err = {0};
    as_layout_set *ls = NULL;
    double t0 = c->t_start;
    fit_check fc;
    int rc;

    fit_check_set(c, gp, &o, &fc);
    print_graph_header(fp, c, gp);
    fflush(fp);
    if (c->solution != NULL)
        return solve_graph_external(c, gp, fp);
    if ((rc = solve_hopeless(gp->p)) != AS_EXIT_OK)
        return rc;
    if (o.lim.time_limit_s > 0) { /* the limit counts from the start: building included */
        o.lim.time_limit_s -= as_now() - t0;
        if (o.lim.time_limit_s <= 0) {
            fprintf(stderr, "autoshard: time limit (%g s) reached after building the problem, "
                    "before any plan\n", c->o.lim.time_limit_s);
            return AS_EXIT_RUNTIME;
        }
    }
    if (o.lim.time_limit_s > 0 && as_problem_memory(gp->p) > 0)
        o.lim.time_limit_s *= 0.5; /* a budget: leave half for refit rounds (solve_fit) */
    if (o.top > 1) { /* k-best: distinct layouts (refits in solve_fit too) */
        ls = as_layout_set_new(gp->map);
        o.distinct = c->o.distinct = as_layout_distinct;
        o.distinct_ud = c->o.distinct_ud = ls;
    }
    rc = as_solve_problem(gp->p, &o, &res, &err);
    rc = solve_graph_after(c, gp, &o, &res, rc, t0, fp, &err);
    c->o.distinct = NULL;
    c->o.distinct_ud = NULL;
    as_layout_set_free(ls);
    return rc;
}

/* The rest of solve_graph_run once the first solve returned RC (RES). */
static int
solve_graph_after(solve_cli *c, as_graph_problem *gp, as_solve_opts *op, as_solve_result *rp,
                  int rc0, double t0, FILE *fp, as_err *errp)
{
    as_solve_opts o = *op;
    as_solve_result res = *rp;
    as_err err = *errp;
    double rows = -1;
    int rc;

    if (rc0 != AS_OK)
        return as_cmd_fail(&err);
    if (res.nplans == 0 && res.outcome == AS_OUTCOME_LIMIT && o.lim.time_limit_s > 0 &&
        c->o.lim.time_limit_s - (as_now() - t0) > 1) {
        /* no plan in the half kept for refits: a plan needs the rest more than a refit does */
        as_solve_result_free(&res);
        o.lim.time_limit_s = c->o.lim.time_limit_s - (as_now() - t0);
        if (as_solve_problem(gp->p, &o, &res, &err) != AS_OK)
            return as_cmd_fail(&err);
    }
    print_summary(fp, gp->p, as_graph_name(gp->g), c->o.reduce, &res);
    if (res.skipped > 0)
        fprintf(fp, "%-13s%zu more plans cut off as the same layout as one kept (mesh-axis "
                "symmetry, or a tie that changes no parameter's or input's spec)\n", "layouts",
                res.skipped);
    if (res.outcome == AS_OUTCOME_INFEASIBLE) {
        as_solve_result_free(&res);
        return solve_infeasible(gp->p, c);
    }
    if (res.nplans == 0) {
        as_solve_result_free(&res);
        fprintf(stderr, "autoshard: stopped at the time limit (%g s) without a feasible plan "
                "(reductions and solver '%s')\n", c->o.lim.time_limit_s, c->o.solver);
        return AS_EXIT_RUNTIME;
    }
    if ((rc = solve_fit(c, gp, &res, t0, &rows, fp, 1, &err)) != AS_EXIT_OK)
        return rc == AS_EXIT_RUNTIME && err.msg[0] ? as_cmd_fail(&err) : rc; /* else said */
    print_graph_result(fp, c, gp, res.plans, res.nplans, c->o.solver, rows);
    rc = graph_plans(c, gp, res.plans, res.nplans, c->o.solver, &err);
    as_solve_result_free(&res);
    return rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
}

/* The graph of a bare `autoshard solve`: GPT-2 small, one adam training step. */
static int
default_graph(as_graph **out, as_err *err)
{
    const as_preset *pr = as_preset_find(DEFAULT_PRESET);
    as_preset_cfg cfg;
    as_train_opts t;
    int rc;

    if (pr == NULL)
        return as_errf(err, AS_EINTERNAL, "preset '%s' missing", DEFAULT_PRESET);
    cfg = pr->cfg;
    cfg.batch = DEFAULT_BATCH;
    AS_CHECK(as_preset_build(pr, &cfg, out, err));
    as_train_opts_init(&t);
    t.mixed = cfg.mixed;
    if ((rc = as_autodiff(*out, &t, err)) != AS_OK) {
        as_graph_free(*out);
        *out = NULL;
    }
    return rc;
}

/* ---- --recompute auto (docs/solve.md "Activation recomputation") ---- */

/* Seconds a setting of --recompute auto may take without --time-limit (its plan then
   comes with its gap): no single ILP stalls the search. */
#define AUTO_LEAF_S 30.0
/* Seconds after which the search starts no more settings without --time-limit (it
   returns the best plan with the search's gap). */
#define AUTO_SEARCH_S 120.0

/* One setting of --recompute auto: the step with the layers of a list recomputed. */
typedef struct auto_cand {
    int fits;            /* 1 a plan that fits: RES, ROWS hold it; 0 none; -1 stopped */
    double objective;    /* its objective, s (HUGE_VAL when none fits) */
    double bound;        /* its ILP's lower bound, s */
    int nrec;            /* layers recomputed */
    as_graph_problem gp; /* zeroed when not built */
    as_solve_result res;
    double rows;
    as_train_cli train;  /* the step (owns the layer list and the whole graph) */
    int built, solved;
} auto_cand;

static void
auto_cand_free(auto_cand *x)
{
    if (x->solved)
        as_solve_result_free(&x->res);
    if (x->built)
        as_graph_problem_free(&x->gp);
    as_train_cli_free(&x->train);
    memset(x, 0, sizeof *x);
}

static int
solve_load_graph(const solve_cli *c, as_graph **g, as_err *err)
{
    return c->graph == NULL ? default_graph(g, err) : as_graph_read(c->graph, g, err);
}

/* The seconds a setting started now may take: what is left of --time-limit, else
   AUTO_LEAF_S. */
static double
auto_leaf_limit(const solve_cli *c)
{
    return c->o.lim.time_limit_s > 0 ? c->o.lim.time_limit_s - (as_now() - c->t_start)
                                     : AUTO_LEAF_S;
}

/*
 * Solve the step with the layers LIST (comma-separated) recomputed fully into X, quietly:
 * solve and fit as solve_graph_run does, within auto_leaf_limit.  Returns AS_OK (X->fits
 * says whether a plan fits) or an error.
 */
static int
auto_try(solve_cli *c, const as_train_cli *base, const char *list, int nrec, auto_cand *x,
         FILE *sink, as_err *err)
{
    as_solve_opts o = c->o;
    as_graph *g = NULL;
    double budget, limit = auto_leaf_limit(c), t1 = as_now(), keep_limit;
    int rc;

    memset(x, 0, sizeof *x);
    x->nrec = nrec;
    x->objective = HUGE_VAL;
    x->bound = -HUGE_VAL;
    x->train = *base;
    x->train.full = NULL;
    x->train.layers = as_xstrdup(list);
    if (limit <= 0) {
        x->fits = -1;
        return as_errf(err, AS_ESOLVER, "--recompute auto: time limit (%g s) reached",
                       c->o.lim.time_limit_s);
    }
    AS_CHECK(solve_load_graph(c, &g, err));
    if ((rc = as_train_cli_graph(&x->train, &g, &c->setup.build, err)) != AS_OK) {
        as_graph_free(g);
        return rc;
    }
    AS_CHECK(as_graph_problem_init(&x->gp, g, &c->setup, err));
    x->built = 1;
    budget = as_problem_memory(x->gp.p);
    if (budget > 0 && as_problem_peak_lower_bound(x->gp.p) > budget * (1 + 1e-9))
        return AS_OK; /* hopeless (solve_hopeless) */
    o.groups = x->gp.groups;
    o.top = 1;
    o.lim.time_limit_s = fmax(limit - (as_now() - t1), 0.01);
    if (budget > 0)
        o.lim.time_limit_s *= 0.5; /* leave half for refit rounds (solve_fit) */
    if ((rc = as_solve_problem(x->gp.p, &o, &x->res, err)) != AS_OK) {
        if (rc != AS_ESOLVER)
            return rc;
        as_debug("--recompute auto: %s", err->msg); /* the setting's time limit */
        err->msg[0] = 0;
        x->fits = -1;
        return AS_OK;
    }
    x->solved = 1;
    if (x->res.nplans == 0) {
        x->fits = x->res.outcome == AS_OUTCOME_INFEASIBLE ? 0 : -1;
        as_solve_result_free(&x->res);
        x->solved = 0;
        return AS_OK;
    }
    c->train = x->train; /* solve_fit simulates this step */
    c->o.groups = x->gp.groups;
    c->errfp = sink;
    keep_limit = c->o.lim.time_limit_s; /* solve_fit: the setting's limit from its start */
    c->o.lim.time_limit_s = limit;
    /* a setting's plan is compared by cost: the search wants the time for the next
       setting, not the plan's gap */
    rc = solve_fit(c, &x->gp, &x->res, t1, &x->rows, sink, 0, err);
    c->o.lim.time_limit_s = keep_limit;
    c->errfp = stderr;
    memset(&c->train, 0, sizeof c->train);
    if (rc == AS_EXIT_INFEAS) { /* RES freed */
        x->solved = 0;
        return AS_OK;
    }
    if (rc != AS_EXIT_OK) { /* stopped in the refit rounds */
        x->solved = 0;
        if (err->msg[0] && !(limit > 0 && as_now() - t1 >= limit))
            return err->code;
        err->msg[0] = 0;
        x->fits = -1;
        return AS_OK;
    }
    x->fits = 1;
    x->objective = x->res.plans[0].objective;
    x->bound = x->res.plans[0].bound;
    return AS_OK;
}

/* The settings of --recompute auto for the search (solve/recompute_search.h). */
typedef struct auto_ctx {
    solve_cli *c;
    as_train_cli base;
    char **keys; /* [nl] layer keys, forward order */
    int nl;
    FILE *sink;
    as_graph_problem *gp0; /* the step with nothing recomputed, no budget */
    int nstopped;          /* settings stopped without a plan */
    auto_cand best, cur;
} auto_ctx;

static int
auto_cb_try(void *ud, const int *on, int *fits, double *objective, double *bound,
            as_err *err)
{
    auto_ctx *x = ud;
    double t1 = as_now();
    char *list = as_xstrdup("");
    int j, n = 0, rc;

    for (j = 0; j < x->nl; j++)
        if (on[j]) {
            char *s = as_xasprintf("%s%s%s", list, n++ ? "," : "", x->keys[j]);
            free(list);
            list = s;
        }
    rc = auto_try(x->c, &x->base, list, n, &x->cur, x->sink, err);
    *fits = x->cur.fits;
    x->nstopped += rc != AS_OK || *fits < 0;
    *objective = x->cur.objective;
    *bound = x->cur.bound;
    as_info("--recompute auto: %d of %d layers recomputed%s%s%s: %s (%.2f s)", n, x->nl,
            n ? " (" : "", list, n ? ")" : "",
            rc != AS_OK || *fits < 0 ? "stopped" : *fits ? "fits" : "no fit", as_now() - t1);
    free(list);
    return rc;
}

static void
auto_cb_keep(void *ud)
{
    auto_ctx *x = ud;

    auto_cand_free(&x->best);
    x->best = x->cur;
    memset(&x->cur, 0, sizeof x->cur);
}

static void
auto_cb_drop(void *ud)
{
    auto_cand_free(&((auto_ctx *)ud)->cur);
}

/* The base bound: X->gp0 solved (solve/recompute_search.h). */
static int
auto_cb_base(void *ud, double *lb, as_err *err)
{
    auto_ctx *x = ud;
    as_solve_opts o = x->c->o;
    as_solve_result r;
    double t1 = as_now(), limit = auto_leaf_limit(x->c);

    *lb = -HUGE_VAL;
    if (x->gp0 == NULL || limit <= 0)
        return AS_OK;
    o.groups = x->gp0->groups;
    o.top = 1;
    o.lim.start = NULL;
    o.lim.time_limit_s = limit;
    AS_CHECK(as_solve_problem(x->gp0->p, &o, &r, err));
    if (r.nplans > 0 && isfinite(r.plans[0].bound))
        *lb = fmin(r.plans[0].bound, r.plans[0].objective);
    as_info("--recompute auto: bound with nothing recomputed, no budget: %.9g s "
            "(%.2f s)", *lb, as_now() - t1);
    as_solve_result_free(&r);
    return AS_OK;
}

/*
 * --recompute auto: the setting of the per-layer recompute binaries (one
 * count per class of identical layers) whose step's plan fits the budget at
 * the least objective, by solve/recompute_search.h's search with exact
 * bounds (docs/solve.md).
 */
static int
solve_auto(solve_cli *c)
{
    static const as_recomp_ops ops = {auto_cb_try, auto_cb_keep, auto_cb_drop, auto_cb_base};
    FILE *fp = c->out != NULL && strcmp(c->out, "-") == 0 ? stderr : stdout;
    auto_ctx x;
    auto_cand best;
    as_recomp_result sr = {0};
    as_recomp_space sp = {0};
    as_graph_problem gp0;
    as_graph_setup s0 = c->setup;
    as_graph *g = NULL, *r = NULL;
    as_err err = {0};
    char *keys = NULL, *k, *save = NULL, stopped[64] = "";
    int nl = 0, rc, *cls = NULL, period, j, have0 = 0;
    double *cost = NULL;
    as_train_cli t0;

    memset(&x, 0, sizeof x);
    memset(&gp0, 0, sizeof gp0);
    x.c = c;
    x.base = c->train;
    memset(&c->train, 0, sizeof c->train);
    if (solve_load_graph(c, &g, &err) != AS_OK)
        return as_cmd_fail(&err);
    if (as_graph_recompute(g, AS_RECOMPUTE_AUTO, NULL, &r, NULL, &err) != AS_OK) {
        as_graph_free(g);
        return as_cmd_fail(&err);
    }
    keys = as_graph_layer_list(g, r, &nl);
    cls = as_xcalloc((size_t)nl + 1, sizeof *cls);
    cost = as_xcalloc((size_t)nl + 1, sizeof *cost);
    x.keys = as_xcalloc((size_t)nl + 1, sizeof *x.keys);
    for (j = 0, k = strtok_r(keys, ",", &save); k != NULL && j < nl;
         k = strtok_r(NULL, ",", &save))
        x.keys[j++] = as_xstrdup(k);
    free(keys);
    keys = NULL;
    /* classes of identical layers, in the residues of tying */
    period = !c->setup.tie ? 1 : c->setup.tie_period > 0 ? c->setup.tie_period : AS_GROUP_PERIOD;
    {
        char *list = as_xstrdup("");
        for (j = 0; j < nl; j++) {
            char *s = as_xasprintf("%s%s%s", list, j ? "," : "", x.keys[j]);
            free(list);
            list = s;
        }
        sp.ncls = as_recompute_classes(g, list, nl, period, cls);
        free(list);
    }
    /* the step with nothing recomputed, tied as the settings are, without a budget: the
       base bound and the least time of each layer's copies */
    t0 = x.base;
    t0.full = NULL;
    t0.layers = as_xstrdup("");
    s0.build.memory = 0;
    s0.build.liveness = 0;
    if (as_train_cli_graph(&t0, &g, &s0.build, &err) != AS_OK)
        as_graph_free(g);
    else if (as_graph_problem_init(&gp0, g, &s0, &err) == AS_OK)
        have0 = 1; /* GP0 owns G (or freed it) */
    if (have0) {
        as_recompute_costs(&gp0, r, (const char *const *)x.keys, nl, cost);
    } else {
        as_debug("--recompute auto: no base bound (%s)", err.msg);
        err.msg[0] = 0;
    }
    g = NULL;
    as_graph_free(r);
    sp.nl = nl;
    sp.cls = cls;
    sp.cost = cost;
    sp.gap = c->o.lim.gap;
    x.nl = nl;
    x.gp0 = have0 ? &gp0 : NULL;
    if ((x.sink = fopen("/dev/null", "w")) == NULL) {
        fprintf(stderr, "autoshard: --recompute auto: cannot open /dev/null\n");
        rc = AS_EXIT_RUNTIME;
        goto out;
    }
    rc = as_recompute_search(&sp, &ops, &x,
                             c->o.lim.time_limit_s > 0 ? c->o.lim.time_limit_s : AUTO_SEARCH_S,
                             c->t_start, &sr, &err);
    fclose(x.sink);
    auto_cand_free(&x.cur);
    best = x.best;
    memset(&x.best, 0, sizeof x.best);
    if (rc != AS_OK) {
        auto_cand_free(&best);
        rc = as_cmd_fail(&err);
        goto out;
    }
    if (sr.best == NULL) {
        auto_cand_free(&best);
        if (sr.timed_out || x.nstopped > 0) {
            fprintf(stderr, "autoshard: --recompute auto: stopped at the time limit (%g s) "
                    "without a plan that fits (tried: %s)\n",
                    c->o.lim.time_limit_s > 0 ? c->o.lim.time_limit_s : AUTO_SEARCH_S,
                    sr.log != NULL ? sr.log : "");
            rc = AS_EXIT_RUNTIME;
        } else {
            fprintf(stderr, "autoshard: --recompute auto: no plan fits, even with every layer "
                    "recomputed\n");
            rc = AS_EXIT_INFEAS;
        }
        goto out;
    }
    /* the gap of the search: the least bound of every setting */
    if (isfinite(sr.bound) && sr.bound < best.res.plans[0].bound) {
        as_plan *pl = &best.res.plans[0];
        pl->bound = sr.bound;
        pl->gap = as_rel_gap(pl->objective, pl->bound);
        if (pl->gap > c->o.lim.gap)
            pl->status = AS_OUTCOME_FEASIBLE;
    }
    if (sr.timed_out && c->o.lim.time_limit_s > 0)
        snprintf(stopped, sizeof stopped, ", stopped at the time limit");
    else if (sr.timed_out)
        snprintf(stopped, sizeof stopped, ", stopped after %g s (no --time-limit)",
                 AUTO_SEARCH_S);
    c->train = best.train;
    c->o.groups = best.gp.groups;
    print_graph_header(fp, c, &best.gp);
    fprintf(fp, "%-13sauto: %d of %d layers recomputed fully%s%s%s; %d of %d settings solved, "
            "%d cut by bound or fit%s (%d class%s of identical layers, earliest first; as "
            "tried: %s)\n", "recompute", best.nrec, nl, best.nrec ? " (" : "",
            best.nrec ? best.train.layers : "", best.nrec ? ")" : "", sr.tried, sr.nsettings,
            sr.pruned, stopped, sp.ncls,
            sp.ncls == 1 ? "" : "es", sr.log != NULL ? sr.log : "");
    print_summary(fp, best.gp.p, as_graph_name(best.gp.g), c->o.reduce, &best.res);
    print_graph_result(fp, c, &best.gp, best.res.plans, best.res.nplans, c->o.solver,
                       best.rows);
    rc = graph_plans(c, &best.gp, best.res.plans, best.res.nplans, c->o.solver, &err);
    memset(&c->train, 0, sizeof c->train);
    auto_cand_free(&best);
    rc = rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
out:
    if (have0)
        as_graph_problem_free(&gp0);
    as_train_cli_free(&t0);
    for (j = 0; j < nl; j++)
        free(x.keys[j]);
    free(x.keys);
    free(cls);
    free(cost);
    as_recomp_result_free(&sr);
    return rc;
}

static int
solve_graph(solve_cli *c)
{
    as_graph_problem gp;
    as_graph *g = NULL;
    as_err err = {0};
    int rc;

    if (c->graph == NULL) {
        if (c->setup.mesh == NULL)
            c->setup.mesh = DEFAULT_MESH;
        c->simulate = 1;
        if (c->memory < 0)
            c->memory_auto = 1;
        rc = default_graph(&g, &err);
    } else {
        rc = as_graph_read(c->graph, &g, &err);
    }
    if (rc != AS_OK)
        return as_cmd_fail(&err);
    as_build_opts_init(&c->setup.build);
    c->setup.build.roles = c->roles;
    c->setup.build.zero = c->zero;
    c->setup.build.memory = c->memory_auto ? -1 : c->memory > 0 ? c->memory : 0;
    if (c->o.lim.time_limit_s > 0)
        c->setup.build.deadline = c->t_start + c->o.lim.time_limit_s;
    if (c->train.recompute == AS_RECOMPUTE_AUTO) {
        as_graph_free(g);
        return solve_auto(c);
    }
    if (c->train.pipeline > 1) { /* cmd_pipeline.c */
        as_pipe_cli pc = {c->graph, &c->setup, &c->o, c->t_start, c->out, c->emit,
                          (c->out != NULL && strcmp(c->out, "-") == 0) || c->emit != NULL
                              ? stderr : stdout};
        return as_train_pipeline_solve(&c->train, g, &pc);
    }
    if (as_train_cli_graph(&c->train, &g, &c->setup.build, &err) != AS_OK) {
        as_graph_free(g);
        return as_cmd_fail(&err);
    }
    if (as_graph_problem_init(&gp, g, &c->setup, &err) != AS_OK) {
        as_train_cli_free(&c->train);
        return as_cmd_fail(&err);
    }
    c->o.groups = gp.groups; /* tied plans made uniform where that costs nothing */
    rc = solve_graph_run(c, &gp);
    as_graph_problem_free(&gp);
    as_train_cli_free(&c->train);
    return rc;
}

static int
solve_exec(int argc, char **argv)
{
    solve_cli c = {0};
    as_problem *p = NULL;
    as_err err = {0};
    size_t i;
    int rc;

    as_solve_opts_init(&c.o);
    c.t_start = as_now();
    as_progress_enable(as_verbosity > 0);
    c.memory = -1;
    c.errfp = stderr;
    c.o.lim.verbosity = as_verbosity;
    c.o.lim.gap = AS_DEFAULT_GAP;
    c.o.ilp_cap = AS_SOLVE_ILP_CAP;
    if ((rc = solve_parse(argc, argv, &c)) != AS_EXIT_OK)
        goto out;
    if (as_solver_find(c.o.solver, &err) == NULL) {
        rc = as_cmd_usage(&as_cmd_solve, "%s", err.msg);
        goto out;
    }
    if (c.costgraph == NULL) {
        if (c.cache != NULL)
            as_rules_set_cache_path(c.cache);
        rc = solve_graph(&c);
        as_rules_reset();
        goto out;
    }
    if (as_problem_read(c.costgraph, &p, &err) != AS_OK) {
        rc = as_cmd_fail(&err);
        goto out;
    }
    if (c.memory >= 0)
        as_problem_set_memory(p, c.memory);
    rc = solve_costgraph(p, &c);
    as_problem_free(p);
out:
    for (i = 0; i < c.setup.nparams; i++)
        free(c.owned[i]);
    return rc;
}
