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
#include "formulate/build.h"
#include "formulate/problem.h"
#include "graph/io.h"
#include "spmd/cost.h"
#include "spmd/hw.h"
#include "spmd/rules.h"
#include "spmd/strategy.h"

enum { OPT_MESH = 256, OPT_HW, OPT_COST, OPT_ALPHA, OPT_BETA, OPT_JSON, OPT_OP, OPT_CACHE, OPT_DOM,
       OPT_MEM };

#define STRAT_MAX_PARAMS 8

static int strategies_exec(int argc, char **argv);

const struct as_cmd as_cmd_strategies = {
    .name = "strategies",
    .args = "GRAPH --mesh M [--hw H] [--cost-model C] [--alpha A] [--beta B] [--json] "
            "[--op NAME] [--dominance [--memory BYTES|auto]]",
    .summary = "list each op's sharding strategies on a mesh with their costs",
    .help = "For every op of GRAPH (or only --op NAME, an op or a declared tensor), print\n"
            "the strategies the solver chooses from: name, compute and communication\n"
            "time, bytes per device of the outputs, and the spec of every input and\n"
            "output (docs/strategies.md explains names and specs).  A trained\n"
            "parameter's memory counts its value, gradient and optimizer states (its\n"
            "states then show 0).  Each op's line counts its strategies and those\n"
            "that split a dim over several mesh axes; the last line sums them.\n"
            "\nOptions:\n"
            "  --mesh M            device mesh: 8, 2x4, dp=2,tp=4 (required)\n"
            "  --hw NAME|FILE      hardware profile (default a100-dgx; `autoshard hw`)\n"
            "  --cost-model C      roofline (default), alpa or distir\n"
            "  --alpha A0,A1       alpa: per-axis latency terms\n"
            "  --beta B0,B1        alpa: per-axis inverse bandwidths\n"
            "  --op NAME           only this op (or declared tensor)\n"
            "  --json              print JSON instead\n"
            "  --rules-cache F|off sharding-rule cache file\n"
            "  --dominance         also count, per op, the strategies left by the exact\n"
            "                      dominance of `solve` (docs/ilp.md, reduction 6: dropped\n"
            "                      only when another is no worse in cost, in every\n"
            "                      neighbour's resharding and, under --memory, in bytes)\n"
            "  --memory BYTES|auto the budget --dominance assumes (default none: memory\n"
            "                      is then no constraint and does not count)\n",
    .exec = strategies_exec,
};

typedef struct strat_cli {
    const char *graph, *mesh, *hw, *cost, *op, *cache;
    const char *params[STRAT_MAX_PARAMS];
    char *owned[STRAT_MAX_PARAMS];
    size_t nparams;
    int json, dominance, memory_auto;
    double memory;
} strat_cli;

static int
strat_parse(int argc, char **argv, strat_cli *c)
{
    static const struct option opts[] = {
        {"mesh", required_argument, NULL, OPT_MESH}, {"hw", required_argument, NULL, OPT_HW},
        {"cost-model", required_argument, NULL, OPT_COST},
        {"alpha", required_argument, NULL, OPT_ALPHA}, {"beta", required_argument, NULL, OPT_BETA},
        {"json", no_argument, NULL, OPT_JSON}, {"op", required_argument, NULL, OPT_OP},
        {"rules-cache", required_argument, NULL, OPT_CACHE},
        {"dominance", no_argument, NULL, OPT_DOM}, {"memory", required_argument, NULL, OPT_MEM},
        {NULL, 0, NULL, 0}};
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
        case OPT_DOM:
            c->dominance = 1;
            break;
        case OPT_MEM:
            c->memory_auto = strcmp(optarg, "auto") == 0;
            if (!c->memory_auto && !as_parse_bytes(optarg, &c->memory))
                return as_cmd_usage(&as_cmd_strategies, "--memory: bad byte count '%s'", optarg);
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
    if ((c->memory_auto || c->memory > 0) && !c->dominance)
        return as_cmd_usage(&as_cmd_strategies, "--memory needs --dominance");
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

/* Strategy counts of one op or declared tensor. */
typedef struct strat_counts {
    int n, multi;          /**< strategies, and those splitting a dim over several axes */
    long kept, kept_multi; /**< --dominance: of the problem node's, left by dominance; -1 = not run */
    long k;                /**< --dominance: strategies of the problem node */
} strat_counts;

/* --dominance: the problem of the graph and the reductions that keep every node. */
typedef struct strat_dom {
    as_graph_problem gp;
    as_problem *rp;
    as_reduction *red;
    size_t *ridx; /**< original leader -> reduced node, or (size_t)-1 */
    unsigned char *mark;
} strat_dom;

static void
counts_init(strat_counts *ct, const as_strategy_set *set)
{
    int i;

    ct->n = set->n;
    ct->multi = 0;
    for (i = 0; i < set->n; i++)
        ct->multi += as_strat_multi_axis(set, i);
    ct->kept = ct->kept_multi = ct->k = -1;
}

/* The strategies of problem node V that dominance left (its leader's, mapped), into CT. */
static void
counts_kept(strat_counts *ct, const strat_dom *d, size_t v)
{
    const as_strategy_set *set = as_build_map_node_set(d->gp.map, v);
    size_t k = as_problem_node(d->gp.p, v)->k, l = as_reduction_leader(d->red, v), i, s;

    ct->k = (long)k;
    ct->kept = ct->kept_multi = 0;
    memset(d->mark, 0, k);
    i = d->ridx[l];
    if (i == (size_t)-1) { /* decided: one strategy */
        ct->kept = 1;
        return;
    }
    for (s = 0; s < as_problem_node(d->rp, i)->k; s++)
        d->mark[as_reduction_map(d->red, v, as_reduction_strategy(d->red, i, s))] = 1;
    for (s = 0; s < k; s++)
        if (d->mark[s]) {
            ct->kept++;
            ct->kept_multi += set != NULL && (int)s < set->n && as_strat_multi_axis(set, (int)s);
        }
}

static void
print_set_text(const as_mesh *m, const char *name, const char *type, const char *sig,
               const as_strategy_set *set, const strat_counts *ct)
{
    char in[512], out[512], mem[32];
    int i;

    printf("%s  %s  %s  (%d strateg%s", name, type, sig, set->n, set->n == 1 ? "y" : "ies");
    if (ct->multi > 0)
        printf(", %d split a dim over several axes", ct->multi);
    if (ct->kept >= 0)
        printf("; dominance leaves %ld of %ld, %ld of them multi-axis", ct->kept, ct->k,
               ct->kept_multi);
    printf(")\n");
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
         const as_strategy_set *set, const strat_counts *ct)
{
    json_t *o = json_object(), *arr = json_array();
    int i;

    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "type", json_string(type));
    json_object_set_new(o, "signature", json_string(sig));
    json_object_set_new(o, "multi_axis", json_integer(ct->multi));
    if (ct->kept >= 0) {
        json_object_set_new(o, "problem_strategies", json_integer(ct->k));
        json_object_set_new(o, "kept", json_integer(ct->kept));
        json_object_set_new(o, "kept_multi_axis", json_integer(ct->kept_multi));
    }
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
           const strat_dom *d, as_err *err)
{
    static const char *const kinds[] = {"act", "input", "param", "state", "const"};
    json_t *arr = c->json ? json_array() : NULL;
    char sig[1024];
    int32_t i, found = 0;
    int rc = AS_OK;
    strat_counts ct;
    double tot[4] = {0, 0, 0, 0}; /* strategies, multi-axis, kept, kept multi-axis */

    for (i = 0; i < as_graph_ntensors(g); i++) {
        const as_tensor *t = as_graph_tensor(g, i);
        const as_strategy_set *set;
        if (t->producer >= 0 || c->op == NULL || strcmp(c->op, t->name) != 0)
            continue;
        set = as_strat_tensor_batch(ctx, &t->shape, t->kind, strat_factor(g, t), t->batch_dim);
        as_shape_str(&t->shape, sig, sizeof sig);
        found++;
        counts_init(&ct, set);
        if (d != NULL)
            counts_kept(&ct, d, as_build_map_tensor_node(d->gp.map, i));
        if (arr != NULL)
            json_array_append_new(arr, set_json(m, t->name, kinds[t->kind], sig, set, &ct));
        else
            print_set_text(m, t->name, kinds[t->kind], sig, set, &ct);
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
        counts_init(&ct, set);
        if (d != NULL)
            counts_kept(&ct, d, as_build_map_op_node(d->gp.map, i));
        tot[0] += ct.n;
        tot[1] += ct.multi;
        tot[2] += (double)ct.kept;
        tot[3] += (double)ct.kept_multi;
        if (arr != NULL)
            json_array_append_new(arr, set_json(m, op->name, op->def->name, sig, set, &ct));
        else
            print_set_text(m, op->name, op->def->name, sig, set, &ct);
    }
    if (rc == AS_OK && arr == NULL && c->op == NULL) {
        printf("%d ops: %.0f strategies, %.0f split a dim over several axes", (int)as_graph_nops(g),
               tot[0], tot[1]);
        if (d != NULL)
            printf("; dominance leaves %.0f, %.0f of them multi-axis", tot[2], tot[3]);
        printf("\n");
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

/*
 * --dominance: build the problem as `solve` does (layers not tied, so every op keeps its own
 * strategies) and run the reductions that keep every node: follow and alias merging, constant
 * edges, dominance (no eliminations, no bound pruning).
 */
static int
dom_init(const strat_cli *c, strat_dom *d, as_err *err)
{
    as_graph_setup su = {.mesh = c->mesh, .hw = c->hw, .cost = c->cost, .params = c->params,
                         .nparams = c->nparams};
    as_graph *g;
    size_t i, n, kmax = 1;

    AS_CHECK(as_graph_read(c->graph, &g, err));
    as_build_opts_init(&su.build);
    su.build.memory = c->memory_auto ? -1 : c->memory;
    AS_CHECK(as_graph_problem_init(&d->gp, g, &su, err));
    AS_CHECK(as_reduce(d->gp.p, AS_REDUCE_FOLLOW | AS_REDUCE_ALIAS | AS_REDUCE_CONST |
                       AS_REDUCE_DOMINATED, &d->rp, &d->red, err));
    n = as_problem_nnodes(d->gp.p);
    d->ridx = as_xcalloc(n + 1, sizeof *d->ridx);
    for (i = 0; i < n; i++) {
        d->ridx[i] = (size_t)-1;
        if (as_problem_node(d->gp.p, i)->k > kmax)
            kmax = as_problem_node(d->gp.p, i)->k;
    }
    d->mark = as_xcalloc(kmax + 1, 1);
    for (i = 0; i < as_problem_nnodes(d->rp); i++)
        d->ridx[as_reduction_origin(d->red, i)] = i;
    return AS_OK;
}

static void
dom_free(strat_dom *d)
{
    as_reduction_free(d->red);
    as_problem_free(d->rp);
    as_graph_problem_free(&d->gp);
    free(d->ridx);
    free(d->mark);
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
    strat_dom d;
    size_t i;
    int rc;

    memset(&d, 0, sizeof d);
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
    if (c.dominance && dom_init(&c, &d, &err) != AS_OK) {
        rc = as_cmd_fail(&err);
        goto out;
    }
    if (strat_list(&c, g, ctx, m, c.dominance ? &d : NULL, &err) != AS_OK)
        rc = as_cmd_fail(&err);
out:
    dom_free(&d);
    as_strat_ctx_free(ctx);
    as_cost_model_free(cm);
    as_mesh_free(m);
    as_graph_free(g);
    for (i = 0; i < c.nparams; i++)
        free(c.owned[i]);
    as_rules_reset();
    return rc;
}
