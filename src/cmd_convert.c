/* cmd_convert.c -- `autoshard convert IN [-o OUT]`: read a graph in any
 * supported format (detected from its content) and write it as canonical
 * .asg, atomically (a failed write never leaves a partial file).  Without
 * -o, or with -o -, the text goes to stdout.
 */
#include "config.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "graph/autodiff.h"
#include "graph/check.h"
#include "graph/io.h"

static int
convert_exec(int argc, char **argv)
{
    static const struct option lopts[] = {{"output", required_argument, NULL, 'o'},
                                          {"train", no_argument, NULL, 't'},
                                          {"optimizer", required_argument, NULL, 'p'},
                                          {NULL, 0, NULL, 0}};
    const char *output = "-", *optimizer = NULL;
    int train = 0;
    as_graph *g = NULL;
    as_err err;
    int c, rc;

    as_err_clear(&err);
    while ((c = getopt_long(argc, argv, "o:", lopts, NULL)) != -1) {
        if (c == 'o')
            output = optarg;
        else if (c == 't')
            train = 1;
        else if (c == 'p')
            optimizer = optarg;
        else
            return as_cmd_usage(&as_cmd_convert, NULL);
    }
    if (optind + 1 != argc)
        return as_cmd_usage(&as_cmd_convert, optind == argc ? "missing input file"
                                                            : "too many arguments");
    if (optimizer != NULL && !train)
        return as_cmd_usage(&as_cmd_convert, "--optimizer needs --train");
    if (optimizer != NULL && strcmp(optimizer, "adam") != 0 && strcmp(optimizer, "sgd") != 0 &&
        strcmp(optimizer, "momentum") != 0)
        return as_cmd_usage(&as_cmd_convert, "--optimizer must be adam, sgd or momentum");
    if (as_graph_read(argv[optind], &g, &err) != AS_OK)
        return as_cmd_fail(&err);
    if (train) { /* as `gen --train`: backward pass and optimizer after the forward graph */
        as_train_opts t;
        as_train_opts_init(&t);
        if (optimizer != NULL)
            t.optimizer = optimizer;
        if ((rc = as_autodiff(g, &t, &err)) == AS_OK)
            rc = as_graph_check(g, &err);
        if (rc != AS_OK) {
            as_graph_free(g);
            return as_cmd_fail(&err);
        }
    }
    rc = as_graph_save(g, output, &err);
    as_graph_free(g);
    if (rc != AS_OK)
        return as_cmd_fail(&err);
    return AS_EXIT_OK;
}

const struct as_cmd as_cmd_convert = {
    .name = "convert",
    .args = "IN [--train [--optimizer O]] [-o OUT.asg]",
    .summary = "convert a graph (.asg, XLA HLO text or ONNX) to canonical .asg",
    .help = "Reads IN (- is stdin; the format is detected from the content), checks\n"
            "it, expands a `train` directive, and writes the graph as canonical .asg:\n"
            "reading the result and converting again gives the same bytes.\n\n"
            "Options:\n"
            "  -o, --output FILE   write to FILE atomically (default, or -: stdout)\n"
            "  --train             append the backward pass and optimizer update to a forward\n"
            "                      graph whose first output is a scalar loss (as gen --train)\n"
            "  --optimizer O       with --train: adam (default), sgd or momentum\n",
    .exec = convert_exec,
};
