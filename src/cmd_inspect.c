/* cmd_inspect.c -- `autoshard inspect FILE|- [--json]`: a summary of a
 * graph (ops by type, parameters, FLOPs per step, bytes of parameters,
 * gradients and optimizer state, peak activation memory, longest path), as
 * text or as one JSON object with a stable key order.
 *
 * For a training graph it also prints the usual 6·params·tokens estimate of
 * a step's FLOPs and the ratio of the graph's FLOPs to it.
 */
#include "config.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "graph/check.h"
#include "graph/io.h"

/* 6 * params * tokens, or 0 when there are no tokens. */
static double
inspect_ref_flops(const as_graph_stats *st)
{
    return 6.0 * (double)st->params * st->tokens;
}

static void
inspect_text(const as_graph *g, const as_graph_stats *st, FILE *fp)
{
    char a[64], b[64];
    int k;

    fprintf(fp, "graph: %s\n", as_graph_name(g));
    fprintf(fp, "ops: %lld (%lld tensors)\n", (long long)st->nops, (long long)st->ntensors);
    for (k = 0; k < st->nby_type; k++)
        fprintf(fp, "  %-24s %lld\n", st->by_type[k].type, (long long)st->by_type[k].count);
    fprintf(fp, "parameters: %s (%lld)\n", as_fmt_si((double)st->params, a, sizeof a),
            (long long)st->params);
    fprintf(fp, "flops per step: %s (%.6g)\n", as_fmt_si(st->flops, a, sizeof a), st->flops);
    fprintf(fp, "precision: %s\n", as_precision_name(st->precision));
    fprintf(fp, "parameter bytes: %s\n", as_fmt_bytes((double)st->param_bytes, a, sizeof a));
    if (st->master_bytes > 0)
        fprintf(fp, "master weight bytes: %s\n",
                as_fmt_bytes((double)st->master_bytes, a, sizeof a));
    fprintf(fp, "gradient bytes: %s\n", as_fmt_bytes((double)st->grad_bytes, a, sizeof a));
    fprintf(fp, "optimizer state bytes: %s\n", as_fmt_bytes((double)st->state_bytes, a, sizeof a));
    if (st->const_bytes > 0)
        fprintf(fp, "constant bytes: %s\n", as_fmt_bytes((double)st->const_bytes, a, sizeof a));
    fprintf(fp, "input bytes: %s\n", as_fmt_bytes((double)st->input_bytes, a, sizeof a));
    fprintf(fp, "peak activation memory: %s",
            as_fmt_bytes((double)st->peak_activation_bytes, a, sizeof a));
    if (st->peak_op >= 0)
        fprintf(fp, " (at op '%s')", as_graph_op(g, st->peak_op)->name);
    fputc('\n', fp);
    fprintf(fp, "longest path: %lld ops; most expensive path: %s FLOPs\n",
            (long long)st->longest_path_ops, as_fmt_si(st->longest_path_flops, b, sizeof b));
    if (st->training && st->tokens > 0) {
        double ref = inspect_ref_flops(st);
        fprintf(fp, "training step: 6*params*tokens = %s (tokens %.0f); flops / reference = %.3f\n",
                as_fmt_si(ref, a, sizeof a), st->tokens, ref > 0 ? st->flops / ref : 0.0);
    } else if (st->training) {
        fprintf(fp, "training step: no data input, no 6*params*tokens reference\n");
    }
}

static int
inspect_json(const as_graph *g, const as_graph_stats *st, FILE *fp)
{
    json_t *o = json_object(), *types = json_object();
    int k, rc;

    json_object_set_new(o, "name", json_string(as_graph_name(g)));
    json_object_set_new(o, "ops", json_integer(st->nops));
    json_object_set_new(o, "tensors", json_integer(st->ntensors));
    for (k = 0; k < st->nby_type; k++)
        json_object_set_new(types, st->by_type[k].type, json_integer(st->by_type[k].count));
    json_object_set_new(o, "ops_by_type", types);
    json_object_set_new(o, "params", json_integer(st->params));
    json_object_set_new(o, "flops", json_real(st->flops));
    json_object_set_new(o, "precision", json_string(as_precision_name(st->precision)));
    json_object_set_new(o, "param_bytes", json_integer(st->param_bytes));
    json_object_set_new(o, "master_bytes", json_integer(st->master_bytes));
    json_object_set_new(o, "grad_bytes", json_integer(st->grad_bytes));
    json_object_set_new(o, "state_bytes", json_integer(st->state_bytes));
    json_object_set_new(o, "const_bytes", json_integer(st->const_bytes));
    json_object_set_new(o, "input_bytes", json_integer(st->input_bytes));
    json_object_set_new(o, "peak_activation_bytes", json_integer(st->peak_activation_bytes));
    json_object_set_new(o, "peak_op", st->peak_op >= 0
                                          ? json_string(as_graph_op(g, st->peak_op)->name)
                                          : json_null());
    json_object_set_new(o, "longest_path_ops", json_integer(st->longest_path_ops));
    json_object_set_new(o, "longest_path_flops", json_real(st->longest_path_flops));
    json_object_set_new(o, "training", json_boolean(st->training));
    json_object_set_new(o, "tokens", json_real(st->tokens));
    if (st->training && st->tokens > 0) {
        double ref = inspect_ref_flops(st);
        json_object_set_new(o, "ref_flops", json_real(ref));
        json_object_set_new(o, "flops_ratio", json_real(ref > 0 ? st->flops / ref : 0.0));
    }
    rc = json_dumpf(o, fp, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    fputc('\n', fp);
    json_decref(o);
    return rc;
}

static int
inspect_exec(int argc, char **argv)
{
    static const struct option lopts[] = {{"json", no_argument, NULL, 'j'},
                                          {NULL, 0, NULL, 0}};
    as_graph_stats st;
    as_graph *g = NULL;
    as_err err;
    int c, json = 0, rc;

    as_err_clear(&err);
    while ((c = getopt_long(argc, argv, "j", lopts, NULL)) != -1) {
        if (c == 'j')
            json = 1;
        else
            return as_cmd_usage(&as_cmd_inspect, NULL);
    }
    if (optind + 1 != argc)
        return as_cmd_usage(&as_cmd_inspect, optind == argc ? "missing graph file"
                                                            : "too many arguments");
    if (as_graph_read(argv[optind], &g, &err) != AS_OK)
        return as_cmd_fail(&err);
    if (as_graph_stats_compute(g, &st, &err) != AS_OK) {
        as_err_prefix(&err, "%s: ", strcmp(argv[optind], "-") == 0 ? "<stdin>" : argv[optind]);
        as_graph_free(g);
        return as_cmd_fail(&err);
    }
    if (json)
        rc = inspect_json(g, &st, stdout);
    else
        rc = (inspect_text(g, &st, stdout), 0);
    as_graph_stats_free(&st);
    as_graph_free(g);
    if (rc != 0 || fflush(stdout) != 0) {
        as_errf(&err, AS_EIO, "cannot write to standard output");
        return as_cmd_fail(&err);
    }
    return AS_EXIT_OK;
}

const struct as_cmd as_cmd_inspect = {
    .name = "inspect",
    .args = "FILE|- [--json]",
    .summary = "summarise a graph: ops, parameters, FLOPs, memory, longest path",
    .help = "Reads FILE (.asg or XLA HLO text, detected from the content; - is stdin)\n"
            "and prints its op counts by type, parameter count, FLOPs per step, precision,\n"
            "bytes per class (parameters, fp32 master weights, gradients with their fp32\n"
            "accumulators, optimizer state), peak activation memory (single device,\n"
            "program order) and the longest dependency path.  For a training\n"
            "graph it compares the FLOPs with 6*params*tokens.\n\n"
            "Options:\n"
            "  --json    print one JSON object instead of text\n",
    .exec = inspect_exec,
};
