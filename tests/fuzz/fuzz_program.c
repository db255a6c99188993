/* fuzz_program.c -- fuzz target: event programs (as_sim_prog_parse, as
 * as_sim_prog_read calls it: text with a NUL byte is refused first).  An
 * accepted program is written and read back to the same text, then
 * checked and simulated.  Seeds: tests/fuzz/corpus/program.
 */
#include "config.h"

#include "fuzz.h"
#include "sim/sim.h"

static char *
prog_text(const as_sim_prog *p, size_t *len)
{
    char *buf = NULL;
    FILE *fp = open_memstream(&buf, len);
    as_err err = {0};

    if (fp == NULL)
        as_oom(0, "open_memstream");
    if (as_sim_prog_write(p, fp, &err) != AS_OK)
        fuzz_fail("cannot write an accepted program", &err);
    fclose(fp);
    return buf;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size), *t1, *t2;
    as_sim_prog *p = NULL, *p2 = NULL;
    as_sim_result *res = NULL;
    as_sim_opts o;
    as_err err = {0};
    size_t n1, n2;
    int rc;

    as_lib_hooks_install();
    if (strlen(text) != size) { /* as_sim_prog_read refuses NUL bytes before parsing */
        free(text);
        return 0;
    }
    rc = as_sim_prog_parse("fuzz", text, &p, &err);
    fuzz_check_rc(rc, &err);
    if (rc == AS_OK) {
        t1 = prog_text(p, &n1);
        if (as_sim_prog_parse("<written>", t1, &p2, &err) != AS_OK) {
            fprintf(stderr, "%s\n", t1);
            fuzz_fail("a program written as text does not read back", &err);
        }
        t2 = prog_text(p2, &n2);
        if (n1 != n2 || memcmp(t1, t2, n1) != 0)
            fuzz_fail("program write -> read -> write differs", &err);
        as_sim_opts_init(&o);
        rc = as_sim_run(p, &o, &res, &err);
        if (rc == AS_EIO && err.code == AS_EIO && err.msg[0] != '\0' &&
            strchr(err.msg, '\n') == NULL)
            rc = AS_OK; /* hw=FILE names a profile that cannot be read: exit 1, as --hw FILE */
        fuzz_check_rc(rc, &err);
        as_sim_result_free(res);
        free(t1);
        free(t2);
        as_sim_prog_free(p2);
        as_sim_prog_free(p);
    }
    free(text);
    return 0;
}
