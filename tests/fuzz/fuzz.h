/* fuzz.h -- what every fuzz target in tests/fuzz/ shares: the input as a
 * NUL-terminated copy, and the checks that make a finding of anything short
 * of "one clear line" (docs/fuzzing.md).
 *
 * A target defines LLVMFuzzerTestOneInput.  Built with clang
 * -fsanitize=fuzzer it is a libFuzzer binary (make fuzz); linked with
 * replay.c it is a plain program that replays its corpus and every past
 * crash (make check).  A target reports a bad error (empty, several lines,
 * a code that is not a parse/usage error) with abort(), so libFuzzer saves
 * the input and the replay fails.
 */
#ifndef AS_FUZZ_H
#define AS_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "autoshard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A malloc'ed NUL-terminated copy of the input. */
static inline char *
fuzz_text(const uint8_t *data, size_t size)
{
    char *s = as_xmalloc(size + 1);

    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Report a finding: the message on stderr, then abort() (libFuzzer keeps the input). */
static inline void
fuzz_fail(const char *what, const as_err *err)
{
    fprintf(stderr, "fuzz finding: %s (code %d, message '%s')\n", what, err->code, err->msg);
    abort();
}

/*
 * The result RC of a reader with error ERR: AS_OK, or an input error
 * (AS_EPARSE, AS_EUSAGE, or AS_EINFEAS where a reader proves a limit) with
 * one non-empty line.  AS_EINTERNAL ("a bug") and AS_EIO from a buffer are
 * findings.
 */
static inline void
fuzz_check_rc(int rc, const as_err *err)
{
    if (rc == AS_OK)
        return;
    if (rc != err->code)
        fuzz_fail("return code differs from err->code", err);
    if (rc != AS_EPARSE && rc != AS_EUSAGE && rc != AS_EINFEAS)
        fuzz_fail("not an input error", err);
    if (err->msg[0] == '\0')
        fuzz_fail("empty message", err);
    if (strchr(err->msg, '\n') != NULL || strchr(err->msg, '\r') != NULL)
        fuzz_fail("message of more than one line", err);
}

#endif /* AS_FUZZ_H */
