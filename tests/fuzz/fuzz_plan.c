/* fuzz_plan.c -- fuzz target: plan JSON as `solve -o` writes it and
 * `simulate`/`lower`/`rank --plans` read it (as_shard_plan_parse).  An
 * accepted plan is written and read back to the same text.
 * Seeds: tests/fuzz/corpus/plan.
 */
#include "config.h"

#include "formulate/plan.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size), *s1, *s2;
    as_shard_plan *p = NULL, *p2 = NULL;
    as_err err = {0};
    int rc;

    as_lib_hooks_install();
    rc = as_shard_plan_parse(text, size, "fuzz", &p, &err);
    fuzz_check_rc(rc, &err);
    if (rc == AS_OK) {
        s1 = as_shard_plan_dumps(p);
        if (as_shard_plan_parse(s1, strlen(s1), "<written>", &p2, &err) != AS_OK)
            fuzz_fail("a plan written as JSON does not read back", &err);
        s2 = as_shard_plan_dumps(p2);
        if (strcmp(s1, s2) != 0)
            fuzz_fail("plan write -> read -> write differs", &err);
        free(s1);
        free(s2);
        as_shard_plan_free(p2);
        as_shard_plan_free(p);
    }
    free(text);
    return 0;
}
