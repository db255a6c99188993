/* cmd_convert.c -- `autoshard convert IN [-o OUT]`: read a graph in any
 * supported format (detected from its content) and write it as canonical
 * .asg, atomically (a failed write never leaves a partial file).  Without
 * -o, or with -o -, the text goes to stdout.
 */
#include "config.h"

#include <getopt.h>
#include <stdlib.h>

#include "cmd.h"
#include "graph/io.h"

static int
convert_exec(int argc, char **argv)
{
    static const struct option lopts[] = {{"output", required_argument, NULL, 'o'},
                                          {NULL, 0, NULL, 0}};
    const char *output = "-";
    as_graph *g = NULL;
    as_err err;
    int c, rc;

    as_err_clear(&err);
    while ((c = getopt_long(argc, argv, "o:", lopts, NULL)) != -1) {
        if (c == 'o')
            output = optarg;
        else
            return as_cmd_usage(&as_cmd_convert, NULL);
    }
    if (optind + 1 != argc)
        return as_cmd_usage(&as_cmd_convert, optind == argc ? "missing input file"
                                                            : "too many arguments");
    if (as_graph_read(argv[optind], &g, &err) != AS_OK)
        return as_cmd_fail(&err);
    rc = as_graph_save(g, output, &err);
    as_graph_free(g);
    if (rc != AS_OK)
        return as_cmd_fail(&err);
    return AS_EXIT_OK;
}

const struct as_cmd as_cmd_convert = {
    .name = "convert",
    .args = "IN [-o OUT.asg]",
    .summary = "convert a graph (.asg or XLA HLO text) to canonical .asg",
    .help = "Reads IN (- is stdin; the format is detected from the content), checks\n"
            "it, expands a `train` directive, and writes the graph as canonical .asg:\n"
            "reading the result and converting again gives the same bytes.\n\n"
            "Options:\n"
            "  -o, --output FILE   write to FILE atomically (default, or -: stdout)\n",
    .exec = convert_exec,
};
