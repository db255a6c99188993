/* cmd_strategies.c -- `autoshard strategies`: list every op's sharding
 * strategies on a mesh with their specs and costs, i.e. what the solver
 * chooses from.
 *
 *   autoshard strategies GRAPH --mesh M [--hw H] [--cost-model C]
 *                        [--alpha A0,A1] [--beta B0,B1] [--json] [--op NAME]
 */
#include "config.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"
#include "graph/io.h"
#include "spmd/cost.h"
#include "spmd/hw.h"
#include "spmd/rules.h"
#include "spmd/strategy.h"

enum { OPT_MESH = 256, OPT_HW, OPT_COST, OPT_ALPHA, OPT_BETA, OPT_JSON, OPT_OP, OPT_CACHE };

#define STRAT_MAX_PARAMS 8

static int strategies_exec(int argc, char **argv);

const struct as_cmd as_cmd_strategies = {
    .name = "strategies",
    .args = "GRAPH --mesh M [--hw H] [--cost-model C] [--alpha A] [--beta B] [--json] "
            "[--op NAME]",
    .summary = "list each op's sharding strategies on a mesh with their costs",
    .help = "For every op of GRAPH (or only --op NAME, an op or a declared tensor), print\n"
            "the strategies the solver chooses from: name, compute and communication\n"
            "time, bytes per device of the outputs, and the spec of every input and\n"
            "output (docs/strategies.md explains names and specs).  A trained\n"
            "parameter's memory counts its value, gradient and optimizer states (its\n"
            "states then show 0).\n"
            "\nOptions:\n"
            "  --mesh M            device mesh: 8, 2x4, dp=2,tp=4 (required)\n"
            "  --hw NAME|FILE      hardware profile (default a100-dgx; `autoshard hw`)\n"
            "  --cost-model C      roofline (default), alpa or distir\n"
            "  --alpha A0,A1       alpa: per-axis latency terms\n"
            "  --beta B0,B1        alpa: per-axis inverse bandwidths\n"
            "  --op NAME           only this op (or declared tensor)\n"
            "  --json              print JSON instead\n"
            "  --rules-cache F|off sharding-rule cache file\n",
    .exec = strategies_exec,
};

typedef struct strat_cli {
    const char *graph, *mesh, *hw, *cost, *op, *cache;
    const char *params[STRAT_MAX_PARAMS];
    char *owned[STRAT_MAX_PARAMS];
    size_t nparams;
    int json;
} strat_cli;

static int
strat_parse(int argc, char **argv, strat_cli *c)
{
    static const struct option opts[] = {
        {"mesh", required_argument, NULL, OPT_MESH}, {"hw", required_argument, NULL, OPT_HW},
        {"cost-model", required_argument, NULL, OPT_COST},
        {"alpha", required_argument, NULL, OPT_ALPHA}, {"beta", required_argument, NULL, OPT_BETA},
        {"json", no_argument, NULL, OPT_JSON}, {"op", required_argument, NULL, OPT_OP},
        {"rules-cache", required_argument, NULL, OPT_CACHE}, {NULL, 0, NULL, 0}};
    int opt;

    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case OPT_MESH:
            c->mesh = optarg;
            break;
        case OPT_HW:
            c->hw = optarg;
            break;
        case OPT_COST:
            c->cost = optarg;
            break;
        case OPT_ALPHA:
        case OPT_BETA:
            if (c->nparams == STRAT_MAX_PARAMS)
                return as_cmd_usage(&as_cmd_strategies, "too many cost-model parameters");
            c->owned[c->nparams] =
                as_xasprintf("%s=%s", opt == OPT_ALPHA ? "alpha" : "beta", optarg);
            c->params[c->nparams] = c->owned[c->nparams];
            c->nparams++;
            break;
        case OPT_JSON:
            c->json = 1;
            break;
        case OPT_OP:
            c->op = optarg;
            break;
        case OPT_CACHE:
            c->cache = optarg;
            break;
        default:
            return as_cmd_usage(&as_cmd_strategies, "unknown or incomplete option '%s'",
                                argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return as_cmd_usage(&as_cmd_strategies, "expected one GRAPH file, got %d",
                            argc - optind);
    c->graph = argv[optind];
    if (c->mesh == NULL)
        return as_cmd_usage(&as_cmd_strategies, "missing --mesh M");
    return AS_EXIT_OK;
}

/* Specs of strategy S as "a x b -> c" into SB. */
static void
spec_list(const as_mesh *m, const as_spec *specs, int n, const char *sep, char *buf, size_t len)
{
    char sp[AS_SPEC_TEXT_MAX];
    size_t pos = 0;
    int i;

    buf[0] = '\0';
    for (i = 0; i < n && pos < len; i++) {
        int w = snprintf(buf + pos, len - pos, "%s%s", i ? sep : "",
                         as_spec_str(&specs[i], m, sp, sizeof sp));
        if (w < 0)
            break;
        pos += (size_t)w;
    }
}

static void
print_set_text(const as_mesh *m, const char *name, const char *type, const char *sig,
               const as_strategy_set *set)
{
    char in[512], out[512], mem[32];
    int i;

    printf("%s  %s  %s  (%d strateg%s)\n", name, type, sig, set->n, set->n == 1 ? "y" : "ies");
    printf("  %3s  %-38s %11s %11s %11s  %s\n", "#", "strategy", "compute", "comm", "memory",
           "inputs -> outputs");
    for (i = 0; i < set->n; i++) {
        const as_strategy *s = &set->s[i];
        spec_list(m, s->in, set->nin, " x ", in, sizeof in);
        spec_list(m, s->out, set->nout, ", ", out, sizeof out);
        printf("  %3d  %-38s %11.4g %11.4g %11s  %s%s%s\n", i, s->name, s->compute, s->comm,
               as_fmt_bytes(s->mem, mem, sizeof mem), in, set->nin ? " -> " : "", out);
    }
}

static json_t *
specs_json(const as_mesh *m, const as_spec *specs, int n)
{
    json_t *a = json_array();
    char sp[AS_SPEC_TEXT_MAX];
    int i;

    for (i = 0; i < n; i++)
        json_array_append_new(a, json_string(as_spec_str(&specs[i], m, sp, sizeof sp)));
    return a;
}

static json_t *
set_json(const as_mesh *m, const char *name, const char *type, const char *sig,
         const as_strategy_set *set)
{
    json_t *o = json_object(), *arr = json_array();
    int i;

    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "type", json_string(type));
    json_object_set_new(o, "signature", json_string(sig));
    for (i = 0; i < set->n; i++) {
        const as_strategy *s = &set->s[i];
        json_t *js = json_object();
        json_object_set_new(js, "name", json_string(s->name));
        json_object_set_new(js, "compute", json_real(s->compute));
        json_object_set_new(js, "comm", json_real(s->comm));
        json_object_set_new(js, "memory", json_real(s->mem));
        json_object_set_new(js, "in", specs_json(m, s->in, set->nin));
        json_object_set_new(js, "out", specs_json(m, s->out, set->nout));
        json_array_append_new(arr, js);
    }
    json_object_set_new(o, "strategies", arr);
    return o;
}

/* Signature text of op OP: "f32[8,16] x f32[16,4] -> f32[8,4]". */
static void
op_sig(const as_graph *g, const as_op *op, char *buf, size_t len)
{
    char sh[96];
    size_t pos = 0;
    int i;

    buf[0] = '\0';
    for (i = 0; i < op->nin + op->nout && pos < len; i++) {
        int t = i < op->nin ? op->in[i] : op->out[i - op->nin];
        const char *sep = i == 0 ? "" : i == op->nin ? " -> " : i < op->nin ? " x " : ", ";
        int w = snprintf(buf + pos, len - pos, "%s%s", sep,
                         as_shape_str(&as_graph_tensor(g, t)->shape, sh, sizeof sh));
        if (w < 0)
            break;
        pos += (size_t)w;
    }
}

/* Memory factor of a declared tensor, as the problem builder uses it (formulate/build.h). */
static double
strat_factor(const as_graph *g, const as_tensor *t)
{
    int32_t i, n = 0;

    if (t->kind == AS_TK_STATE)
        return t->of >= 0 ? 0 : 1;
    if (t->kind != AS_TK_PARAM || t->update < 0)
        return 1;
    for (i = 0; i < as_graph_ntensors(g); i++)
        n += as_graph_tensor(g, i)->kind == AS_TK_STATE && as_graph_tensor(g, i)->of == t->id;
    return 2 + n;
}

static int
strat_list(const strat_cli *c, const as_graph *g, as_strat_ctx *ctx, const as_mesh *m,
           as_err *err)
{
    static const char *const kinds[] = {"act", "input", "param", "state", "const"};
    json_t *arr = c->json ? json_array() : NULL;
    char sig[1024];
    int32_t i, found = 0;
    int rc = AS_OK;

    for (i = 0; i < as_graph_ntensors(g); i++) {
        const as_tensor *t = as_graph_tensor(g, i);
        const as_strategy_set *set;
        if (t->producer >= 0 || c->op == NULL || strcmp(c->op, t->name) != 0)
            continue;
        set = as_strat_tensor_batch(ctx, &t->shape, t->kind, strat_factor(g, t), t->batch_dim);
        as_shape_str(&t->shape, sig, sizeof sig);
        found++;
        if (arr != NULL)
            json_array_append_new(arr, set_json(m, t->name, kinds[t->kind], sig, set));
        else
            print_set_text(m, t->name, kinds[t->kind], sig, set);
    }
    for (i = 0; i < as_graph_nops(g) && rc == AS_OK; i++) {
        const as_op *op = as_graph_op(g, i);
        const as_strategy_set *set;
        as_opview v;
        if (c->op != NULL && strcmp(c->op, op->name) != 0)
            continue;
        found++;
        as_opview_init(&v, g, op);
        rc = as_strat_op(ctx, &v.info, &set, err);
        as_opview_free(&v);
        if (rc != AS_OK) {
            as_err_prefix(err, "op '%s': ", op->name);
            break;
        }
        op_sig(g, op, sig, sizeof sig);
        if (arr != NULL)
            json_array_append_new(arr, set_json(m, op->name, op->def->name, sig, set));
        else
            print_set_text(m, op->name, op->def->name, sig, set);
    }
    if (rc == AS_OK && c->op != NULL && found == 0)
        rc = as_errf(err, AS_EUSAGE, "%s: no op or declared tensor named '%s'", c->graph,
                     c->op);
    if (rc == AS_OK && arr != NULL) {
        char *s = json_dumps(arr, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        if (s != NULL)
            printf("%s\n", s);
        free(s);
    }
    json_decref(arr);
    return rc;
}

static int
strategies_exec(int argc, char **argv)
{
    strat_cli c = {.hw = "a100-dgx", .cost = "roofline"};
    const as_cost_ops *ops;
    as_graph *g = NULL;
    as_mesh *m = NULL;
    as_cost_model *cm = NULL;
    as_strat_ctx *ctx = NULL;
    as_hw hw;
    as_err err = {0};
    size_t i;
    int rc;

    if ((rc = strat_parse(argc, argv, &c)) != AS_EXIT_OK)
        goto out;
    if (c.cache != NULL)
        as_rules_set_cache_path(c.cache);
    if (as_mesh_parse(c.mesh, &m, &err) != AS_OK || as_hw_load(c.hw, &hw, &err) != AS_OK ||
        (ops = as_cost_model_find(c.cost, &err)) == NULL ||
        as_cost_model_new(ops, &hw, m, c.params, c.nparams, &cm, &err) != AS_OK ||
        as_graph_read(c.graph, &g, &err) != AS_OK) {
        rc = as_cmd_fail(&err);
        goto out;
    }
    ctx = as_strat_ctx_new(cm);
    if (strat_list(&c, g, ctx, m, &err) != AS_OK)
        rc = as_cmd_fail(&err);
out:
    as_strat_ctx_free(ctx);
    as_cost_model_free(cm);
    as_mesh_free(m);
    as_graph_free(g);
    for (i = 0; i < c.nparams; i++)
        free(c.owned[i]);
    as_rules_reset();
    return rc;
}
