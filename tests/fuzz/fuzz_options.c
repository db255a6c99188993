/* fuzz_options.c -- fuzz target: the option values the command line
 * parses: meshes (--mesh 2x4, dp=2,tp=4), byte sizes (--memory 80GiB) and
 * pipeline schedules.  Each input line is given to every parser.
 * Seeds: tests/fuzz/corpus/options.
 */
#include "config.h"

#include <math.h>

#include "fuzz.h"
#include "sim/sim.h"
#include "spmd/mesh.h"

static void
one(const char *s)
{
    as_mesh *m = NULL;
    as_err err = {0};
    as_sim_sched sched;
    double bytes;
    int rc;

    rc = as_mesh_parse(s, &m, &err);
    fuzz_check_rc(rc, &err);
    if (rc == AS_OK) {
        as_mesh *m2 = NULL;
        char str[256];

        if (as_mesh_ndevices(m) < 1)
            fuzz_fail("mesh without devices accepted", &err);
        snprintf(str, sizeof str, "%s", as_mesh_str(m));
        if (as_mesh_parse(str, &m2, &err) != AS_OK || strcmp(as_mesh_str(m2), str) != 0 ||
            as_mesh_ndevices(m2) != as_mesh_ndevices(m))
            fuzz_fail("a mesh printed does not parse back to itself", &err);
        as_mesh_free(m2);
        as_mesh_free(m);
    }
    if (as_parse_bytes(s, &bytes) && !(isfinite(bytes) && bytes >= 0))
        fuzz_fail("a byte size that is not a finite number >= 0 accepted", &err);
    (void)as_sim_sched_parse(s, &sched);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size), *line = text, *nl;

    for (;;) {
        nl = strchr(line, '\n');
        if (nl != NULL)
            *nl = '\0';
        one(line);
        if (nl == NULL)
            break;
        line = nl + 1;
    }
    free(text);
    return 0;
}
