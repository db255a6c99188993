/* cmd_export.c -- `autoshard export`: write the ILP of a cost graph for
 * external solvers (free MPS or CPLEX LP, through GLPK's writers), or the
 * cost graph itself (after --memory), atomically.
 *
 *   autoshard export --costgraph FILE [--format mps|lp|costgraph] [--no-reduce]
 *                    [--memory BYTES] [-o OUT]
 *
 * The MPS/LP names (s_<node>_<p>, e_<edge>_<p>_<q>) are stable, so the
 * solution an external solver writes can be read back with
 * `autoshard solve --costgraph FILE --solution SOL` (same --no-reduce).
 */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "solve/solver.h"

enum { OPT_CG = 256, OPT_FMT, OPT_NORED, OPT_MEM };

static int export_exec(int argc, char **argv);

const struct as_cmd as_cmd_export = {
    .name = "export",
    .args = "--costgraph FILE [--format mps|lp|costgraph] [--no-reduce] [-o OUT]",
    .summary = "write the ILP (MPS, LP) or the cost graph for other tools",
    .help = "Options:\n"
            "  --costgraph FILE     cost graph (JSON, docs/costgraph.md)\n"
            "  --format F           mps (free MPS, default), lp (CPLEX LP) or costgraph\n"
            "  --no-reduce          export the plain ILP (no follow merging, no elimination);\n"
            "                       pass the same flag to `solve --solution`\n"
            "  --memory BYTES       per-device budget to write into the model (0 = none)\n"
            "  -o FILE              output file (default '-': stdout)\n"
            "\nVariables are named s_<node>_<strategy> and e_<edge>_<p>_<q> (docs/ilp.md).\n",
    .exec = export_exec,
};

typedef struct export_cli {
    const char *costgraph, *format, *out;
    unsigned reduce;
    double memory;
} export_cli;

static int
export_parse(int argc, char **argv, export_cli *c)
{
    static const struct option opts[] = {
        {"costgraph", required_argument, NULL, OPT_CG}, {"format", required_argument, NULL, OPT_FMT},
        {"no-reduce", no_argument, NULL, OPT_NORED}, {"memory", required_argument, NULL, OPT_MEM},
        {"output", required_argument, NULL, 'o'}, {NULL, 0, NULL, 0}};
    char *end;
    int opt;

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
            c->memory = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !isfinite(c->memory) || c->memory < 0)
                return as_cmd_usage(&as_cmd_export, "--memory must be bytes >= 0, got '%s'",
                                    optarg);
            break;
        case 'o':
            c->out = optarg;
            break;
        default:
            return as_cmd_usage(&as_cmd_export, "bad or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return as_cmd_usage(&as_cmd_export, "exporting graph '%s' needs --mesh, not available "
                            "yet; give a cost graph with --costgraph", argv[optind]);
    if (c->costgraph == NULL)
        return as_cmd_usage(&as_cmd_export, "missing --costgraph FILE");
    if (strcmp(c->format, "mps") != 0 && strcmp(c->format, "lp") != 0 &&
        strcmp(c->format, "costgraph") != 0)
        return as_cmd_usage(&as_cmd_export, "--format must be mps, lp or costgraph, got '%s'",
                            c->format);
    return AS_EXIT_OK;
}

static int
export_exec(int argc, char **argv)
{
    export_cli c = {NULL, "mps", "-", AS_REDUCE_ALL, -1};
    as_problem *p = NULL, *rp = NULL;
    as_reduction *red = NULL;
    as_ilp *ilp = NULL;
    as_err err = {0};
    int rc;

    if ((rc = export_parse(argc, argv, &c)) != AS_EXIT_OK)
        return rc;
    if (as_problem_read(c.costgraph, &p, &err) != AS_OK)
        return as_cmd_fail(&err);
    if (c.memory >= 0)
        as_problem_set_memory(p, c.memory);
    if (strcmp(c.format, "costgraph") == 0)
        rc = as_problem_write(p, c.out, &err);
    else if ((rc = as_solve_build_ilp(p, c.reduce, &rp, &red, &ilp, &err)) == AS_OK)
        rc = as_ilp_write(ilp, strcmp(c.format, "mps") == 0 ? AS_ILP_MPS : AS_ILP_LP, c.out,
                          &err);
    as_ilp_free(ilp);
    as_reduction_free(red);
    as_problem_free(rp);
    as_problem_free(p);
    return rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
}
