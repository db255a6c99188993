/* cmd_lower.c -- `autoshard lower`: lower a graph under a sharding plan to
 * an event program (docs/sim.md "Lowering") and write its text, which
 * `autoshard simulate --program` reads back.
 *
 *   autoshard lower GRAPH --plan PLAN [--mesh M] [--hw H] [--cost-model C]
 *                   [--set KEY=VALUE]... [--pipeline P --microbatches K
 *                   --schedule S] [-o FILE]
 */
#include "config.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_train.h"
#include "graph/io.h"
#include "sim/lower.h"
#include "spmd/rules.h"

enum { OPT_PLAN = 256, OPT_MESH, OPT_HW, OPT_COST, OPT_SET, OPT_PIPELINE, OPT_MICRO, OPT_SCHED, OPT_NO_SYM };

#define LOWER_MAX_PARAMS 16

typedef struct lower_cli {
    const char *graph, *plan, *output;
    const char *params[LOWER_MAX_PARAMS];
    as_lower_opts lo;
} lower_cli;

static int lower_exec(int argc, char **argv);

const struct as_cmd as_cmd_lower = {
    .name = "lower",
    .args = "GRAPH --plan PLAN [--pipeline P --microbatches K --schedule S] [-o FILE]",
    .summary = "lower a graph under a sharding plan to a simulator event program",
    .help = "Options:\n"
            "  --plan PLAN          plan JSON (from `autoshard solve`)\n"
            "  --mesh M             check the mesh: the plan's (pipeline: P x the plan's)\n"
            "  --hw NAME|FILE       hardware profile (default: the plan's)\n"
            "  --cost-model M       roofline or distir (default: the plan's; alpa plans\n"
            "                       are lowered with roofline)\n"
            "  --set KEY=VALUE      cost-model parameter (repeatable)\n"
            "  --pipeline P         split the ops into P stages, each on its own copy of the\n"
            "                       plan's mesh: at the plan's stages (`solve --pipeline`),\n"
            "                       else of balanced cost (default: the plan's, else 1)\n"
            "  --microbatches K     microbatches per iteration (default: the plan's, else 1;\n"
            "                       without --pipeline: gradient accumulation)\n"
            "  --schedule S         gpipe or 1f1b (default: the plan's, else 1f1b); a setting\n"
            "                       the plan contradicts is an error\n"
            "  --no-symmetry        list every device's events (default: devices whose\n"
            "                       programs are identical mirror one: 'mirror' lines)\n"
            "  -o, --output FILE    write the program there atomically (default stdout)\n"
            "\nThe program text reads back with `autoshard simulate --program FILE` to the\n"
            "same result as `autoshard simulate GRAPH --plan PLAN`.  A plan that does not\n"
            "match the graph is an input error (exit 2) naming the first mismatch.\n",
    .exec = lower_exec,
};

static int
lower_parse(int argc, char **argv, lower_cli *c)
{
    static const struct option opts[] = {
        {"plan", required_argument, NULL, OPT_PLAN},
        {"mesh", required_argument, NULL, OPT_MESH},
        {"hw", required_argument, NULL, OPT_HW},
        {"cost-model", required_argument, NULL, OPT_COST},
        {"set", required_argument, NULL, OPT_SET},
        {"pipeline", required_argument, NULL, OPT_PIPELINE},
        {"microbatches", required_argument, NULL, OPT_MICRO},
        {"schedule", required_argument, NULL, OPT_SCHED},
        {"no-symmetry", no_argument, NULL, OPT_NO_SYM},
        {"output", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0}};
    int ch;

    opterr = 0;
    while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_PLAN:
            c->plan = optarg;
            break;
        case OPT_MESH:
            c->lo.mesh = optarg;
            break;
        case OPT_HW:
            c->lo.hw = optarg;
            break;
        case OPT_COST:
            c->lo.cost_model = optarg;
            break;
        case OPT_SET:
            if (c->lo.nparams == LOWER_MAX_PARAMS)
                return as_cmd_usage(&as_cmd_lower, "too many --set (at most %d)",
                                    LOWER_MAX_PARAMS);
            c->params[c->lo.nparams++] = optarg;
            break;
        case OPT_PIPELINE:
            if (as_cmd_count_opt(&as_cmd_lower, "pipeline", optarg, &c->lo.pipeline) != AS_EXIT_OK)
                return AS_EXIT_USAGE;
            c->lo.given |= AS_LOWER_GIVEN_PIPELINE;
            break;
        case OPT_MICRO:
            if (as_cmd_count_opt(&as_cmd_lower, "microbatches", optarg, &c->lo.nmicro) != AS_EXIT_OK)
                return AS_EXIT_USAGE;
            c->lo.given |= AS_LOWER_GIVEN_MICRO;
            break;
        case OPT_SCHED:
            if (!as_sim_sched_parse(optarg, &c->lo.sched))
                return as_cmd_usage(&as_cmd_lower, "--schedule must be gpipe or 1f1b, got '%s'",
                                    optarg);
            c->lo.given |= AS_LOWER_GIVEN_SCHED;
            break;
        case 'o':
            c->output = optarg;
            break;
        case OPT_NO_SYM:
            c->lo.no_symmetry = 1;
            break;
        default:
            return as_cmd_usage(&as_cmd_lower, "unknown or incomplete option '%s'",
                                argv[optind - 1]);
        }
    }
    if (optind < argc)
        c->graph = argv[optind++];
    if (optind < argc)
        return as_cmd_usage(&as_cmd_lower, "unexpected argument '%s'", argv[optind]);
    if (c->graph == NULL || c->plan == NULL)
        return as_cmd_usage(&as_cmd_lower, "GRAPH and --plan PLAN are required");
    c->lo.params = c->params;
    c->lo.plan_name = c->plan;
    return AS_EXIT_OK;
}

static int
lower_exec(int argc, char **argv)
{
    as_graph *g = NULL;
    as_shard_plan *plan = NULL;
    as_sim_prog *prog = NULL;
    as_err err = {0};
    lower_cli c;
    as_recompute rm = AS_RECOMPUTE_NONE;
    const char *rl = NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *fp;
    int rc;

    memset(&c, 0, sizeof c);
    as_lower_opts_init(&c.lo);
    if ((rc = lower_parse(argc, argv, &c)) != AS_EXIT_OK)
        return rc;
    rc = as_graph_read(c.graph, &g, &err);
    if (rc == AS_OK)
        rc = as_shard_plan_read(c.plan, &plan, &err);
    if (rc == AS_OK) /* the step `solve --pipeline` recorded */
        rc = as_train_plan_recompute(plan, c.plan, 0, &rm, &rl, &err);
    if (rc == AS_OK)
        rc = as_train_apply_recompute(rm, rl, &g, &err);
    if (rc == AS_OK)
        rc = as_sim_lower(g, plan, &c.lo, &prog, &err);
    if (rc == AS_OK) {
        /* render to memory, then write atomically */
        if ((fp = open_memstream(&buf, &len)) == NULL) {
            rc = as_errf(&err, AS_EIO, "out of memory");
        } else {
            rc = as_sim_prog_write(prog, fp, &err);
            if (fclose(fp) != 0 && rc == AS_OK)
                rc = as_errf(&err, AS_EIO, "out of memory");
        }
    }
    if (rc == AS_OK)
        rc = as_write_file_atomic(c.output, buf, len, &err);
    free(buf);
    as_sim_prog_free(prog);
    as_shard_plan_free(plan);
    as_graph_free(g);
    as_rules_reset();
    return rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
}
