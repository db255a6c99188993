/* fuzz_onnx.c -- fuzz target: ONNX models as every command reads them
 * (as_onnx_read on the raw bytes, then the igraph checks), then what
 * `inspect` computes from a graph that was accepted, and the .asg writer:
 * an imported graph written and read back gives the same text.
 * Seeds: tests/fuzz/corpus/onnx (the small models of tests/data/onnx and
 * hand-made graphs that exercise constant folding and the op mappings).
 */
#include "config.h"

#include "fuzz.h"
#include "graph/check.h"
#include "graph/graph.h"
#include "graph/io.h"
#include "graph/reader_onnx.h"

static void
roundtrip(const as_graph *g)
{
    as_graph *g2 = NULL;
    as_err err = {0};
    char *t1 = NULL, *t2 = NULL;
    size_t n1, n2;

    if (as_graph_write_asg_buf(g, &t1, &n1, &err) != AS_OK)
        fuzz_fail("an imported ONNX graph cannot be written as .asg", &err);
    if (as_graph_parse("<written>", t1, n1, &g2, &err) != AS_OK) {
        fprintf(stderr, "%s\n", t1);
        fuzz_fail("an imported ONNX graph written as .asg does not read back", &err);
    }
    if (as_graph_write_asg_buf(g2, &t2, &n2, &err) != AS_OK || n1 != n2 || memcmp(t1, t2, n1) != 0)
        fuzz_fail("write -> read -> write is not byte-identical", &err);
    as_graph_free(g2);
    free(t1);
    free(t2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    as_graph *g = NULL;
    as_graph_stats st;
    as_err err = {0};
    int rc, v = as_verbosity;

    as_lib_hooks_install();
    as_igraph_setup();
    as_verbosity = 0; /* the opaque-op warning is not a finding */
    /* "fuzz.onnx": external data is looked up (and must be missing) in the current directory */
    rc = as_onnx_read("fuzz.onnx", text, size, &g, &err);
    as_verbosity = v;
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
        roundtrip(g);
    }
    as_graph_free(g);
    free(text);
    return 0;
}
