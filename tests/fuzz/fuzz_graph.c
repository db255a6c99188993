/* fuzz_graph.c -- fuzz target: graph files as every command reads them
 * (as_graph_parse: .asg or HLO text by content, then the igraph checks),
 * then what `inspect` computes from a graph that was accepted, and for .asg
 * the writer: an accepted graph written and read back gives the same text.
 * Seeds: tests/fuzz/corpus/asg and tests/fuzz/corpus/hlo (one binary, two
 * corpora; `make fuzz` runs both as the targets asg and hlo).
 */
#include "config.h"

#include "fuzz.h"
#include "graph/check.h"
#include "graph/graph.h"
#include "graph/io.h"

static void
roundtrip(const as_graph *g)
{
    as_graph *g2 = NULL;
    as_err err = {0};
    char *t1 = NULL, *t2 = NULL;
    size_t n1, n2;

    if (as_graph_write_asg_buf(g, &t1, &n1, &err) != AS_OK) {
        fuzz_check_rc(err.code, &err); /* a name the grammar cannot write: an input error */
        return;
    }
    if (as_graph_parse("<written>", t1, n1, &g2, &err) != AS_OK) {
        fprintf(stderr, "%s\n", t1);
        fuzz_fail("a graph written as .asg does not read back", &err);
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
    int rc, hlo;

    as_lib_hooks_install();
    hlo = as_graph_detect(text, size) == AS_FMT_HLO;
    rc = as_graph_parse("fuzz", text, size, &g, &err);
    fuzz_check_rc(rc, &err);
    if (rc == AS_OK) {
        memset(&st, 0, sizeof st);
        rc = as_graph_stats_compute(g, &st, &err);
        fuzz_check_rc(rc, &err);
        if (rc == AS_OK)
            as_graph_stats_free(&st);
        if (!hlo)
            roundtrip(g);
        as_graph_free(g);
    }
    free(text);
    return 0;
}
