/* cmd_simulate.c -- `autoshard simulate`: run an event program through the
 * schedule-exact simulator and print its report (docs/sim.md); the program
 * is read from a file or lowered from a graph and a plan.
 *
 *   autoshard simulate --program FILE | GRAPH --plan PLAN [--mesh M]
 *                      [--pipeline P --microbatches K --schedule S]
 *                      [--hw NAME|FILE] [--cost-model M]
 *                      [--set KEY=VALUE]... [--no-overlap] [--capacity BYTES]
 *                      [--json] [--trace FILE] [--print-program]
 */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_train.h"
#include "graph/io.h"
#include "spmd/rules.h"
#include "sim/lower.h"
#include "sim/sim.h"

enum {
    OPT_PROGRAM = 256,
    OPT_HW,
    OPT_COST,
    OPT_SET,
    OPT_NO_OVERLAP,
    OPT_CAPACITY,
    OPT_JSON,
    OPT_TRACE,
    OPT_PRINT,
    OPT_PLAN,
    OPT_MESH,
    OPT_PIPELINE,
    OPT_MICRO,
    OPT_SCHED,
    OPT_NO_SYM,
    OPT_RECOMP
};

#define SIM_MAX_PARAMS 16

typedef struct sim_cli {
    const char *program;                 /**< --program */
    const char *graph, *plan;            /**< GRAPH --plan */
    as_lower_opts lo;
    const char *trace;                   /**< --trace */
    const char *params[SIM_MAX_PARAMS];  /**< --set */
    int json, print;
    as_sim_opts o;
    as_recompute recompute;              /**< --recompute (cmd_train.h) */
    int recompute_given;                 /**< else the plan's (solve --pipeline records it) */
} sim_cli;

static int simulate_exec(int argc, char **argv);

const struct as_cmd as_cmd_simulate = {
    .name = "simulate",
    .args = "(--program FILE | GRAPH --plan PLAN [--pipeline P --microbatches K --schedule S]) "
            "[--hw NAME|FILE] [--cost-model M] [--no-overlap] [--json] [--trace FILE]",
    .summary = "simulate an event program: time, memory, bubbles, critical path",
    .help = "Options:\n"
            "  --program FILE       event program text (docs/sim.md); '-' reads stdin\n"
            "  GRAPH --plan PLAN    lower GRAPH (.asg, HLO) under PLAN (JSON from `solve`)\n"
            "  --mesh M             check the mesh: the plan's (pipeline: P x the plan's)\n"
            "  --pipeline P         split the ops into P stages, each on its own copy of the\n"
            "                       plan's mesh: at the plan's stages (`solve --pipeline`),\n"
            "                       else of balanced cost (default: the plan's, else 1)\n"
            "  --microbatches K     microbatches per iteration (default: the plan's, else 1;\n"
            "                       without --pipeline: gradient accumulation)\n"
            "  --schedule S         gpipe or 1f1b (default: the plan's, else 1f1b); a setting\n"
            "                       the plan contradicts is an error\n"
            "  --no-symmetry        simulate every device (default: devices whose programs\n"
            "                       are identical are simulated once, exactly)\n"
            "  --recompute R        none, full, selective or auto: the step `solve --recompute R`\n"
            "                       planned (activation recomputation; default: the plan's)\n"
            "  --hw NAME|FILE       hardware profile (default: the program's hw=, else a100-dgx)\n"
            "  --cost-model M       roofline, alpa or distir (default: the program's cost=,\n"
            "                       else roofline); costs events given without time=\n"
            "  --set KEY=VALUE      cost-model parameter (repeatable)\n"
            "  --no-overlap         one stream per device: communication does not overlap\n"
            "                       computation\n"
            "  --capacity BYTES     memory per device for OOM flags (default: the profile's\n"
            "                       usable memory, memory - reserved_memory)\n"
            "  --json               print the report as JSON\n"
            "  --trace FILE         write a Chrome trace (open in Perfetto) atomically\n"
            "  --print-program      print the program in canonical text form and exit\n"
            "\nA deadlocked program, an unproduced tensor or a malformed line is an input\n"
            "error (exit 2) naming the line.\n",
    .exec = simulate_exec,
};

static int
simulate_parse(int argc, char **argv, sim_cli *c)
{
    static const struct option opts[] = {
        {"program", required_argument, NULL, OPT_PROGRAM},
        {"hw", required_argument, NULL, OPT_HW},
        {"cost-model", required_argument, NULL, OPT_COST},
        {"set", required_argument, NULL, OPT_SET},
        {"no-overlap", no_argument, NULL, OPT_NO_OVERLAP},
        {"capacity", required_argument, NULL, OPT_CAPACITY},
        {"json", no_argument, NULL, OPT_JSON},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"print-program", no_argument, NULL, OPT_PRINT},
        {"plan", required_argument, NULL, OPT_PLAN},
        {"mesh", required_argument, NULL, OPT_MESH},
        {"pipeline", required_argument, NULL, OPT_PIPELINE},
        {"microbatches", required_argument, NULL, OPT_MICRO},
        {"schedule", required_argument, NULL, OPT_SCHED},
        {"no-symmetry", no_argument, NULL, OPT_NO_SYM},
        {"recompute", required_argument, NULL, OPT_RECOMP},
        {NULL, 0, NULL, 0}};
    char *end;
    int ch;

    opterr = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_PROGRAM:
            c->program = optarg;
            break;
        case OPT_HW:
            c->o.hw = optarg;
            break;
        case OPT_COST:
            c->o.cost_model = optarg;
            break;
        case OPT_SET:
            if (c->o.nparams == SIM_MAX_PARAMS)
                return as_cmd_usage(&as_cmd_simulate, "too many --set (at most %d)",
                                    SIM_MAX_PARAMS);
            c->params[c->o.nparams++] = optarg;
            break;
        case OPT_NO_OVERLAP:
            c->o.overlap = 0;
            break;
        case OPT_CAPACITY:
            c->o.capacity = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !isfinite(c->o.capacity) || c->o.capacity <= 0)
                return as_cmd_usage(&as_cmd_simulate, "--capacity must be a number > 0, got '%s'",
                                    optarg);
            break;
        case OPT_JSON:
            c->json = 1;
            break;
        case OPT_TRACE:
            c->trace = optarg;
            break;
        case OPT_PRINT:
            c->print = 1;
            break;
        case OPT_PLAN:
            c->plan = optarg;
            break;
        case OPT_MESH:
            c->lo.mesh = optarg;
            break;
        case OPT_PIPELINE:
            if (as_cmd_count_opt(&as_cmd_simulate, "pipeline", optarg, &c->lo.pipeline) != AS_EXIT_OK)
                return AS_EXIT_USAGE;
            c->lo.given |= AS_LOWER_GIVEN_PIPELINE;
            break;
        case OPT_MICRO:
            if (as_cmd_count_opt(&as_cmd_simulate, "microbatches", optarg, &c->lo.nmicro) != AS_EXIT_OK)
                return AS_EXIT_USAGE;
            c->lo.given |= AS_LOWER_GIVEN_MICRO;
            break;
        case OPT_SCHED:
            if (!as_sim_sched_parse(optarg, &c->lo.sched))
                return as_cmd_usage(&as_cmd_simulate, "--schedule must be gpipe or 1f1b, got '%s'",
                                    optarg);
            c->lo.given |= AS_LOWER_GIVEN_SCHED;
            break;
        case OPT_NO_SYM:
            c->lo.no_symmetry = 1;
            break;
        case OPT_RECOMP:
            c->recompute_given = 1;
            if (as_train_cli_recompute(&as_cmd_simulate, &c->recompute, optarg) != AS_EXIT_OK)
                return AS_EXIT_USAGE;
            break;
        default:
            return as_cmd_usage(&as_cmd_simulate, "unknown or incomplete option '%s'",
                                argv[optind - 1]);
        }
    }
    if (optind < argc)
        c->graph = argv[optind++];
    if (optind < argc)
        return as_cmd_usage(&as_cmd_simulate, "unexpected argument '%s'", argv[optind]);
    if (c->program == NULL && (c->graph == NULL || c->plan == NULL))
        return as_cmd_usage(&as_cmd_simulate, "give --program FILE, or GRAPH and --plan PLAN");
    if (c->program != NULL && (c->graph != NULL || c->plan != NULL))
        return as_cmd_usage(&as_cmd_simulate, "--program cannot be combined with GRAPH or --plan");
    c->o.params = c->params;
    c->lo.hw = c->o.hw;
    c->lo.cost_model = c->o.cost_model;
    c->lo.params = c->params;
    c->lo.nparams = c->o.nparams;
    c->lo.plan_name = c->plan;
    return AS_EXIT_OK;
}

static int
simulate_exec(int argc, char **argv)
{
    as_sim_prog *prog = NULL;
    as_sim_result *res = NULL;
    as_err err = {0};
    sim_cli c;
    int rc;

    memset(&c, 0, sizeof c);
    as_sim_opts_init(&c.o);
    as_lower_opts_init(&c.lo);
    if ((rc = simulate_parse(argc, argv, &c)) != AS_EXIT_OK)
        return rc;
    if (c.program != NULL) {
        if (as_sim_prog_read(c.program, &prog, &err) != AS_OK)
            return as_cmd_fail(&err);
    } else {
        as_graph *g = NULL;
        as_shard_plan *plan = NULL;
        const char *rl = NULL;

        rc = as_graph_read(c.graph, &g, &err);
        if (rc == AS_OK)
            rc = as_shard_plan_read(c.plan, &plan, &err);
        if (rc == AS_OK)
            rc = as_train_plan_recompute(plan, c.plan, c.recompute_given, &c.recompute, &rl,
                                         &err);
        if (rc == AS_OK)
            rc = as_train_apply_recompute(c.recompute, rl, &g, &err);
        if (rc == AS_OK)
            rc = as_sim_lower(g, plan, &c.lo, &prog, &err);
        as_shard_plan_free(plan);
        as_graph_free(g);
        as_rules_reset();
        if (rc != AS_OK)
            return as_cmd_fail(&err);
    }
    if (c.print) {
        rc = as_sim_prog_write(prog, stdout, &err) == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
        goto out;
    }
    if (as_sim_run(prog, &c.o, &res, &err) != AS_OK) {
        rc = as_cmd_fail(&err);
        goto out;
    }
    if (c.trace != NULL && as_sim_trace_write(prog, res, c.trace, &err) != AS_OK) {
        rc = as_cmd_fail(&err);
        goto out;
    }
    if (c.json) {
        if (as_sim_report_json(prog, res, stdout, &err) != AS_OK) {
            rc = as_cmd_fail(&err);
            goto out;
        }
    } else {
        as_sim_report_text(prog, res, as_verbosity >= 2, stdout);
    }
    rc = AS_EXIT_OK;
    {
        /* a device out of memory: the report is printed, the plan does not fit (exit 3) */
        int d, n = 0;
        for (d = 0; d < res->ndevices; d++)
            n += res->dev[d].oom != 0;
        if (n > 0) {
            char cap[32];
            fprintf(stderr, "autoshard: out of memory on %d of %d devices (capacity %s)\n", n,
                    res->ndevices, as_fmt_bytes(res->capacity, cap, sizeof cap));
            rc = AS_EXIT_INFEAS;
        }
    }
out:
    as_sim_result_free(res);
    as_sim_prog_free(prog);
    return rc;
}
