/* cmd_export.c -- `autoshard export`: write the ILP of a graph on a mesh
 * or of a cost graph for external solvers (free MPS or CPLEX LP, through
 * GLPK's writers), or the cost graph itself (after --memory), atomically.
 *
 *   autoshard export GRAPH --mesh M [--hw H] [--cost-model C] [--alpha A] [--beta B]
 *                    [--format mps|lp|costgraph] [--no-reduce] [--memory BYTES|auto]
 *                    [--time-limit S] [-o OUT]
 *   autoshard export --costgraph FILE [--format ...] [--no-reduce] [--memory BYTES]
 *                    [--time-limit S] [-o OUT]
 *
 * --time-limit covers building the problem, the reductions and the ILP: when it runs out,
 * exit 1 with one line and nothing written (a less reduced ILP would not be the one
 * `solve --solution` rebuilds).
 *
 * The MPS/LP names (s_<node>_<p>, e_<edge>_<p>_<q>) are stable, so the
 * solution an external solver writes can be read back with
 * `autoshard solve --costgraph FILE --solution SOL` or `autoshard solve GRAPH
 * --mesh M --solution SOL` (same mesh, model, --memory and --no-reduce):
 * both build the problem and the ILP with the same code (as_graph_problem_init,
 * as_solve_build_ilp).
 */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "formulate/build.h"
#include "graph/io.h"
#include "spmd/rules.h"
#include "solve/solver.h"

enum { OPT_CG = 256, OPT_FMT, OPT_NORED, OPT_MEM, OPT_MESH, OPT_HW, OPT_COST, OPT_ALPHA,
       OPT_BETA, OPT_TIME };

#define EXPORT_MAX_CPARAMS 8

static int export_exec(int argc, char **argv);

const struct as_cmd as_cmd_export = {
    .name = "export",
    .args = "[GRAPH --mesh M | --costgraph FILE] [--format mps|lp|costgraph] [--no-reduce] "
            "[--time-limit S] [-o OUT]",
    .summary = "write the ILP (MPS, LP) or the cost graph for other tools",
    .help = "GRAPH is any graph file (.asg or XLA HLO text; '-' = stdin), built on the\n"
            "mesh as `autoshard solve` does; or give a cost graph.\n"
            "\nOptions:\n"
            "  --mesh M             device mesh (required with GRAPH)\n"
            "  --hw NAME|FILE       hardware profile (default a100-dgx)\n"
            "  --cost-model C       roofline (default), alpa or distir\n"
            "  --alpha A0,A1        alpa: per-axis latency terms\n"
            "  --beta B0,B1         alpa: per-axis inverse bandwidths\n"
            "  --costgraph FILE     cost graph (JSON, docs/costgraph.md)\n"
            "  --format F           mps (free MPS, default), lp (CPLEX LP) or costgraph\n"
            "  --no-reduce          export the plain ILP (no follow merging, no elimination);\n"
            "                       pass the same flag to `solve --solution`\n"
            "  --memory BYTES|auto  per-device budget to write into the model (suffixes as\n"
            "                       for solve; auto = the profile's usable memory; 0 = none)\n"
            "  --time-limit S       seconds for building, reducing and the ILP; when they\n"
            "                       run out: exit 1, nothing written (default: none)\n"
            "  -o FILE              output file (default '-': stdout)\n"
            "\nVariables are named s_<node>_<strategy> and e_<edge>_<p>_<q> (docs/ilp.md).\n",
    .exec = export_exec,
};

typedef struct export_cli {
    const char *costgraph, *format, *out, *graph;
    unsigned reduce;
    double memory;
    double time_limit; /**< seconds, 0 = none */
    int memory_auto;
    as_graph_setup setup;
    const char *cparams[EXPORT_MAX_CPARAMS];
    char *owned[EXPORT_MAX_CPARAMS];
} export_cli;


static int
export_graph_opt(export_cli *c, int opt)
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
    default: /* OPT_ALPHA, OPT_BETA */
        if (c->setup.nparams == EXPORT_MAX_CPARAMS)
            return as_cmd_usage(&as_cmd_export, "too many cost-model parameters");
        c->owned[c->setup.nparams] =
            as_xasprintf("%s=%s", opt == OPT_ALPHA ? "alpha" : "beta", optarg);
        c->cparams[c->setup.nparams] = c->owned[c->setup.nparams];
        c->setup.nparams++;
        return AS_EXIT_OK;
    }
}

static int
export_parse(int argc, char **argv, export_cli *c)
{
    static const struct option opts[] = {
        {"costgraph", required_argument, NULL, OPT_CG}, {"format", required_argument, NULL, OPT_FMT},
        {"no-reduce", no_argument, NULL, OPT_NORED}, {"memory", required_argument, NULL, OPT_MEM},
        {"output", required_argument, NULL, 'o'}, {"mesh", required_argument, NULL, OPT_MESH},
        {"hw", required_argument, NULL, OPT_HW}, {"cost-model", required_argument, NULL, OPT_COST},
        {"alpha", required_argument, NULL, OPT_ALPHA}, {"beta", required_argument, NULL, OPT_BETA},
        {"time-limit", required_argument, NULL, OPT_TIME}, {NULL, 0, NULL, 0}};
    int opt, rc;
    char *end;

    opterr = 0;
    while ((opt = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
        switch (opt) {
        case OPT_CG:
            c->costgraph = optarg;
            break;
        case OPT_FMT:
            c->format = optarg;
            break;
        case OPT_NORED:
            c->reduce = 0;
            break;
        case OPT_MEM:
            c->memory_auto = strcmp(optarg, "auto") == 0;
            if (!c->memory_auto && !as_parse_bytes(optarg, &c->memory))
                return as_cmd_usage(&as_cmd_export, "--memory: bad byte count '%s'", optarg);
            break;
        case OPT_MESH:
        case OPT_HW:
        case OPT_COST:
        case OPT_ALPHA:
        case OPT_BETA:
            if ((rc = export_graph_opt(c, opt)) != AS_EXIT_OK)
                return rc;
            break;
        case OPT_TIME:
            c->time_limit = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !(c->time_limit >= 0) || c->time_limit > 1e9)
                return as_cmd_usage(&as_cmd_export, "--time-limit must be a number >= 0, got '%s'",
                                    optarg);
            break;
        case 'o':
            c->out = optarg;
            break;
        default:
            return as_cmd_usage(&as_cmd_export, "bad or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind > 1)
        return as_cmd_usage(&as_cmd_export, "expected one GRAPH file, got %d", argc - optind);
    c->graph = optind < argc ? argv[optind] : NULL;
    c->setup.params = c->cparams;
    if ((c->graph == NULL) == (c->costgraph == NULL))
        return as_cmd_usage(&as_cmd_export, "give either GRAPH --mesh M or --costgraph FILE");
    if (c->graph != NULL && c->setup.mesh == NULL)
        return as_cmd_usage(&as_cmd_export, "missing --mesh M for graph '%s'", c->graph);
    if (c->costgraph != NULL && c->memory_auto)
        return as_cmd_usage(&as_cmd_export, "--memory auto needs a GRAPH");
    if (strcmp(c->format, "mps") != 0 && strcmp(c->format, "lp") != 0 &&
        strcmp(c->format, "costgraph") != 0)
        return as_cmd_usage(&as_cmd_export, "--format must be mps, lp or costgraph, got '%s'",
                            c->format);
    return AS_EXIT_OK;
}

/* The problem of the graph (same setup as `solve GRAPH`) or of the cost graph. */
static int
export_problem(export_cli *c, double deadline, as_graph_problem *gp, as_problem **p,
               as_err *err)
{
    as_graph *g;

    if (c->costgraph != NULL) {
        AS_CHECK(as_problem_read(c->costgraph, p, err));
        if (c->memory >= 0)
            as_problem_set_memory(*p, c->memory);
        return AS_OK;
    }
    AS_CHECK(as_graph_read(c->graph, &g, err));
    as_build_opts_init(&c->setup.build);
    c->setup.build.memory = c->memory_auto ? -1 : c->memory > 0 ? c->memory : 0;
    c->setup.build.deadline = deadline;
    AS_CHECK(as_graph_problem_init(gp, g, &c->setup, err));
    *p = gp->p;
    return AS_OK;
}

static int
export_exec(int argc, char **argv)
{
    export_cli c = {NULL, "mps", "-", NULL, AS_REDUCE_ALL, -1, 0, 0, {0}, {0}, {0}};
    as_graph_problem gp;
    as_problem *p = NULL, *rp = NULL;
    as_reduction *red = NULL;
    as_ilp *ilp = NULL;
    as_err err = {0};
    double t0 = as_now(), deadline = 0;
    size_t i;
    int rc;

    memset(&gp, 0, sizeof gp);
    if ((rc = export_parse(argc, argv, &c)) != AS_EXIT_OK)
        goto out;
    if (c.time_limit > 0)
        deadline = t0 + c.time_limit;
    if ((rc = export_problem(&c, deadline, &gp, &p, &err)) != AS_OK)
        ;
    else if (strcmp(c.format, "costgraph") == 0)
        rc = as_problem_write(p, c.out, &err);
    else if ((rc = as_solve_build_ilp_by(p, c.reduce, deadline, &rp, &red, &ilp, &err)) == AS_OK)
        rc = as_ilp_write(ilp, strcmp(c.format, "mps") == 0 ? AS_ILP_MPS : AS_ILP_LP, c.out,
                          &err);
    if (rc == AS_ESOLVER && deadline > 0 && as_now() > deadline) { /* the time ran out */
        char *tail = strstr(err.msg, ", no plan"), what[sizeof err.msg];
        if (tail != NULL)
            *tail = '\0';
        snprintf(what, sizeof what, "%s", err.msg);
        snprintf(err.msg, sizeof err.msg, "%.400s (--time-limit %g s); nothing written", what,
                 c.time_limit);
    }
    rc = rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
out:
    as_ilp_free(ilp);
    as_reduction_free(red);
    as_problem_free(rp);
    if (gp.p != NULL)
        as_graph_problem_free(&gp);
    else
        as_problem_free(p);
    for (i = 0; i < c.setup.nparams; i++)
        free(c.owned[i]);
    if (c.graph != NULL)
        as_rules_reset();
    return rc;
}
