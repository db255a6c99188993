/* cmd_hw.c -- `autoshard hw`: list and show hardware profiles, and show how a
 * mesh lies on a profile's nodes with the cost of each collective per axis.
 *
 *   autoshard hw list
 *   autoshard hw show NAME|FILE [--json]
 *   autoshard hw mesh MESH [--hw NAME|FILE] [--cost-model M] [--alpha ..] [--beta ..]
 *                          [--set KEY=VALUE]... [--bytes N]
 */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"
#include "spmd/cost.h"

enum { OPT_JSON = 256, OPT_HW, OPT_COST, OPT_ALPHA, OPT_BETA, OPT_SET, OPT_BYTES };

#define HW_MAX_PARAMS 16

typedef struct hw_opts {
    int json;                            /**< --json */
    const char *hw;                      /**< --hw, default a100-dgx */
    const char *cost;                    /**< --cost-model, default roofline */
    const char *params[HW_MAX_PARAMS];   /**< "key=value" for the cost model */
    char *owned[HW_MAX_PARAMS];          /**< params built from --alpha/--beta */
    size_t nparams, nowned;
    double bytes;                        /**< --bytes, default 1e9 */
} hw_opts;

static int hw_exec(int argc, char **argv);

const struct as_cmd as_cmd_hw = {
    .name = "hw",
    .args = "list | show NAME|FILE [--json] | mesh MESH [--hw NAME|FILE] [options]",
    .summary = "list and show hardware profiles; cost collectives on a mesh",
    .help = "Actions:\n"
            "  list                 one line per built-in profile\n"
            "  show NAME|FILE       every field of a profile (as a profile file)\n"
            "  mesh MESH            axes of MESH (2x4, dp=2,tp=4) on the profile's nodes,\n"
            "                       intra/inter-node links and the time of each collective\n"
            "\nOptions:\n"
            "  --json               show: print JSON instead\n"
            "  --hw NAME|FILE       mesh: hardware profile (default a100-dgx)\n"
            "  --cost-model M       mesh: roofline (default), alpa or distir\n"
            "  --alpha A0,A1,..     mesh: alpa's alpha per axis\n"
            "  --beta B0,B1,..      mesh: alpa's beta per axis\n"
            "  --set KEY=VALUE      mesh: other cost-model parameter (repeatable)\n"
            "  --bytes N            mesh: collective size in bytes (default 1e9)\n"
            "\nProfile files: key = value lines, see docs/hw.md.\n",
    .exec = hw_exec,
};

static void
hw_opts_free(hw_opts *o)
{
    size_t i;

    for (i = 0; i < o->nowned; i++)
        free(o->owned[i]);
}

static int
hw_add_param(hw_opts *o, const char *key, const char *val)
{
    char *p;

    if (o->nparams == HW_MAX_PARAMS)
        return as_cmd_usage(&as_cmd_hw, "too many cost-model parameters (at most %d)",
                            HW_MAX_PARAMS);
    if (key == NULL) {
        o->params[o->nparams++] = val;
        return AS_EXIT_OK;
    }
    p = as_xasprintf("%s=%s", key, val);
    o->owned[o->nowned++] = p;
    o->params[o->nparams++] = p;
    return AS_EXIT_OK;
}

/* Parse options into *O; returns AS_EXIT_OK or the exit code of a usage error. */
static int
hw_parse(int argc, char **argv, hw_opts *o)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, OPT_JSON},        {"hw", required_argument, NULL, OPT_HW},
        {"cost-model", required_argument, NULL, OPT_COST},
        {"alpha", required_argument, NULL, OPT_ALPHA}, {"beta", required_argument, NULL, OPT_BETA},
        {"set", required_argument, NULL, OPT_SET},    {"bytes", required_argument, NULL, OPT_BYTES},
        {NULL, 0, NULL, 0}};
    char *end;
    int c, rc = AS_EXIT_OK;

    opterr = 0;
    while (rc == AS_EXIT_OK && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case OPT_JSON:
            o->json = 1;
            break;
        case OPT_HW:
            o->hw = optarg;
            break;
        case OPT_COST:
            o->cost = optarg;
            break;
        case OPT_ALPHA:
        case OPT_BETA:
            rc = hw_add_param(o, c == OPT_ALPHA ? "alpha" : "beta", optarg);
            break;
        case OPT_SET:
            rc = hw_add_param(o, NULL, optarg);
            break;
        case OPT_BYTES:
            o->bytes = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !isfinite(o->bytes) || o->bytes < 0)
                rc = as_cmd_usage(&as_cmd_hw, "--bytes must be a number >= 0, got '%s'", optarg);
            break;
        default:
            rc = as_cmd_usage(&as_cmd_hw, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    return rc;
}

static int
hw_show(const char *spec, int json)
{
    as_err err = {0};
    as_hw hw;
    json_t *j;
    char *s;

    if (as_hw_load(spec, &hw, &err) != AS_OK)
        return as_cmd_fail(&err);
    if (!json) {
        as_hw_print(&hw, stdout);
        return AS_EXIT_OK;
    }
    j = as_hw_to_json(&hw);
    s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(j);
    if (s == NULL) {
        as_errf(&err, AS_EINTERNAL, "cannot encode profile '%s' as JSON", hw.name);
        return as_cmd_fail(&err);
    }
    printf("%s\n", s);
    free(s);
    return AS_EXIT_OK;
}

/* Print the axes of MESH on CM's profile and the collective times. */
static void
hw_print_mesh(const as_cost_model *cm, const hw_opts *o)
{
    const as_mesh *m = as_cost_model_mesh(cm);
    const as_hw *hw = as_cost_model_hw(cm);
    int k, c;

    printf("mesh %s on %s: %d devices, %d node%s of %d, cost model %s\n", as_mesh_str(m),
           hw->name, as_mesh_ndevices(m), as_mesh_nnodes(m, hw->devices_per_node),
           as_mesh_nnodes(m, hw->devices_per_node) == 1 ? "" : "s", hw->devices_per_node,
           as_cost_model_ops(cm)->name);
    printf("%-4s %-8s %6s %7s  %s\n", "axis", "name", "size", "stride", "link");
    for (k = 0; k < as_mesh_naxes(m); k++)
        printf("%-4d %-8s %6d %7d  %s\n", k, as_mesh_axis_name(m, k), as_mesh_axis_size(m, k),
               as_mesh_axis_stride(m, k), as_link_name(as_cost_axis_link(cm, k)));
    printf("\ncollective of %.6g bytes per axis (%s):\n%-8s", o->bytes,
           strcmp(as_cost_model_ops(cm)->name, "alpa") == 0 ? "alpa cost units" : "seconds",
           "name");
    for (c = 0; c < AS_COLL_COUNT; c++)
        printf(" %14s", as_coll_name((as_coll)c));
    printf("\n");
    for (k = 0; k < as_mesh_naxes(m); k++) {
        printf("%-8s", as_mesh_axis_name(m, k));
        for (c = 0; c < AS_COLL_COUNT; c++)
            printf(" %14.6g", as_cost_collective(cm, (as_coll)c, o->bytes, k));
        printf("\n");
    }
    if (as_cost_model_ops(cm)->replicated_penalty != NULL)
        printf("\nreplicated-parameter penalty: %.6g\n", as_cost_replicated_penalty(cm));
}

static int
hw_mesh(const char *spec, const hw_opts *o)
{
    const as_cost_ops *ops;
    as_cost_model *cm = NULL;
    as_mesh *m = NULL;
    as_err err = {0};
    as_hw hw;
    int rc = AS_OK;

    AS_CHECK_GOTO(rc, as_mesh_parse(spec, &m, &err), out);
    AS_CHECK_GOTO(rc, as_hw_load(o->hw, &hw, &err), out);
    if ((ops = as_cost_model_find(o->cost, &err)) == NULL) {
        rc = err.code;
        goto out;
    }
    AS_CHECK_GOTO(rc, as_cost_model_new(ops, &hw, m, o->params, o->nparams, &cm, &err), out);
    hw_print_mesh(cm, o);
out:
    as_cost_model_free(cm);
    as_mesh_free(m);
    return rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
}

static int
hw_exec(int argc, char **argv)
{
    hw_opts o = {.hw = "a100-dgx", .cost = "roofline", .bytes = 1e9};
    const char *action;
    int rc, nops;

    if ((rc = hw_parse(argc, argv, &o)) != AS_EXIT_OK)
        goto out;
    nops = argc - optind;
    action = nops > 0 ? argv[optind] : NULL;
    if (action == NULL) {
        rc = as_cmd_usage(&as_cmd_hw, "missing action (list, show or mesh)");
    } else if (strcmp(action, "list") == 0 && nops == 1) {
        as_hw_list(stdout);
        rc = AS_EXIT_OK;
    } else if (strcmp(action, "show") == 0 && nops == 2) {
        rc = hw_show(argv[optind + 1], o.json);
    } else if (strcmp(action, "mesh") == 0 && nops == 2) {
        rc = hw_mesh(argv[optind + 1], &o);
    } else if (strcmp(action, "list") == 0 || strcmp(action, "show") == 0 ||
               strcmp(action, "mesh") == 0) {
        rc = as_cmd_usage(&as_cmd_hw, "wrong number of arguments for 'hw %s'", action);
    } else {
        rc = as_cmd_usage(&as_cmd_hw, "unknown action '%s' (list, show or mesh)", action);
    }
out:
    hw_opts_free(&o);
    return rc;
}
