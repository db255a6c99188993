/* graph_read.c -- reading a graph file of any supported format.
 *
 * The format is detected from the content, never the file name: XLA HLO
 * module text starts with "HloModule"; everything else is read as .asg
 * (whose reader also rejects binary data with a position).  Every graph
 * read here has passed the igraph checks of graph_check.c.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io.h"
#include "reader_hlo.h"

as_graph_format
as_graph_detect(const char *text, size_t len)
{
    return as_hlo_detect(text, len) ? AS_FMT_HLO : AS_FMT_ASG;
}

int
as_graph_read(const char *path, as_graph **out, as_err *err)
{
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    as_graph *g = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc;

    as_igraph_setup();
    AS_CHECK(as_read_file(path, &text, &len, err));
    if (as_graph_detect(text, len) == AS_FMT_HLO)
        rc = as_hlo_read(name, text, len, &g, err);
    else
        rc = as_graph_parse_asg(path, text, len, &g, err);
    free(text);
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
