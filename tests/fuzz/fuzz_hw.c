/* fuzz_hw.c -- fuzz target: hardware profile files (as_hw_parse, as
 * as_hw_read calls it: text with a NUL byte is refused before parsing).
 * Seeds: tests/fuzz/corpus/hw.
 */
#include "config.h"

#include "fuzz.h"
#include "spmd/hw.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    as_hw hw;
    as_err err = {0};

    if (strlen(text) == size) /* as_hw_read refuses NUL bytes before parsing */
        fuzz_check_rc(as_hw_parse("fuzz", text, &hw, &err), &err);
    free(text);
    return 0;
}
