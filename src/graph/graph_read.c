/* graph_read.c -- reading a graph file of any supported format.
 *
 * The format is detected from the content, never the file name: XLA HLO
 * module text starts with "HloModule"; a binary ONNX ModelProto starts with
 * one of its field tags (reader_onnx.c); everything else is read as .asg
 * (whose reader also rejects binary data with a position).  Every graph
 * read here has passed the igraph checks of graph_check.c.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io.h"
#include "reader_hlo.h"
#include "reader_onnx.h"

as_graph_format
as_graph_detect(const char *text, size_t len)
{
    if (as_onnx_detect(text, len))
        return AS_FMT_ONNX;
    return as_hlo_detect(text, len) ? AS_FMT_HLO : AS_FMT_ASG;
}

/* PATH names the .asg reader's input (its default graph name); NAME the HLO reader's and messages. */
static int
graph_parse(const char *path, const char *name, const char *text, size_t len, as_graph **out,
            as_err *err)
{
    as_graph *g = NULL;
    int rc;
    as_graph_format fmt = as_graph_detect(text, len);

    as_igraph_setup();
    if (fmt == AS_FMT_ONNX)
        rc = as_onnx_read(name, text, len, &g, err);
    else if (fmt == AS_FMT_HLO)
        rc = as_hlo_read(name, text, len, &g, err);
    else
        rc = as_graph_parse_asg(path, text, len, &g, err);
    if (rc != AS_OK)
        return rc;
    if ((rc = as_graph_check(g, err)) != AS_OK) {
        as_err_prefix(err, "%s: ", name);
        as_graph_free(g);
        return rc;
    }
    *out = g;
    return AS_OK;
}

int
as_graph_parse(const char *name, const char *text, size_t len, as_graph **out, as_err *err)
{
    return graph_parse(name, name, text, len, out, err);
}

int
as_graph_read(const char *path, as_graph **out, as_err *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc;

    AS_CHECK(as_read_file(path, &text, &len, err));
    rc = graph_parse(path, strcmp(path, "-") == 0 ? "<stdin>" : path, text, len, out, err);
    free(text);
    return rc;
}
