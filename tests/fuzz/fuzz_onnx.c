/* fuzz_onnx.c -- fuzz target: binary ONNX models (as_onnx_read directly, so
 * every input reaches the protobuf decoder and the importer, whether or not
 * as_graph_detect would take it for ONNX), then the igraph checks, what
 * `inspect` computes, and the .asg writer: an imported graph written as
 * .asg reads back to the same text.  Seeds: tests/fuzz/corpus/onnx (the
 * models of tests/data/onnx).
 */
#include "config.h"

#include "fuzz.h"
#include "graph/check.h"
#include "graph/graph.h"
#include "graph/io.h"
#include "graph/reader_onnx.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size), *t1 = NULL, *t2 = NULL;
    as_graph *g = NULL, *g2 = NULL;
    as_graph_stats st;
    as_err err = {0};
    size_t n1, n2;
    int rc;

    as_lib_hooks_install();
    as_igraph_setup();
    as_verbosity = 0; /* no warning line per opaque op on every run */
    rc = as_onnx_read("fuzz.onnx", text, size, &g, &err);
    fuzz_check_rc(rc, &err);
    if (rc == AS_OK) {
        rc = as_graph_check(g, &err);
        fuzz_check_rc(rc, &err);
    }
    if (rc == AS_OK) {
        memset(&st, 0, sizeof st);
        rc = as_graph_stats_compute(g, &st, &err);
        fuzz_check_rc(rc, &err);
        if (rc == AS_OK)
            as_graph_stats_free(&st);
        if (as_graph_write_asg_buf(g, &t1, &n1, &err) != AS_OK) {
            fuzz_check_rc(err.code, &err); /* a name the grammar cannot write */
        } else {
            if (as_graph_parse("<written>", t1, n1, &g2, &err) != AS_OK) {
                fprintf(stderr, "%s\n", t1);
                fuzz_fail("an imported ONNX graph written as .asg does not read back", &err);
            }
            if (as_graph_write_asg_buf(g2, &t2, &n2, &err) != AS_OK || n1 != n2 ||
                memcmp(t1, t2, n1) != 0)
                fuzz_fail("ONNX -> .asg -> read -> .asg is not byte-identical", &err);
            as_graph_free(g2);
        }
    }
    as_graph_free(g);
    free(t1);
    free(t2);
    free(text);
    return 0;
}
