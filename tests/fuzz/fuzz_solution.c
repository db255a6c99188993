/* fuzz_solution.c -- fuzz target: solution files of external solvers (CBC
 * solu, glpsol -w and -o, Gurobi/HiGHS "name value") read back for the
 * plain ILP of tests/data/costgraph/tiny.json, as `solve --costgraph
 * tiny.json --no-reduce --solution FILE` reads them
 * (as_ilp_parse_solution).  Seeds: tests/fuzz/corpus/solution.
 */
#include "config.h"

#include <math.h>

#include "formulate/ilp.h"
#include "formulate/problem.h"
#include "fuzz.h"

/* tests/data/costgraph/tiny.json */
static const char tiny[] =
    "{\"memory\": 0,\n"
    " \"nodes\": [\n"
    "  {\"name\": \"a\", \"c\": [1, 2, 3], \"m\": [4, 2, 1]},\n"
    "  {\"name\": \"b\", \"c\": [2, 1], \"d\": [0, 0.5], \"m\": [2, 1]},\n"
    "  {\"name\": \"c\", \"c\": [1, 1], \"follow\": 1, \"strategies\": [\"R\", \"S\"]},\n"
    "  {\"name\": \"d\", \"c\": [5, 1, 2], \"m\": [1, 1, 1]}\n"
    " ],\n"
    " \"edges\": [\n"
    "  {\"u\": 0, \"v\": 1, \"r\": [[0, 1], [1, 0], [2, 2]]},\n"
    "  {\"u\": 1, \"v\": 3, \"r\": [[0, 1, 1], [1, 0, 3]]},\n"
    "  {\"u\": 2, \"v\": 3, \"r\": [[1, 1, 1], [1, 1, 1]]},\n"
    "  {\"u\": 0, \"v\": 3, \"r\": [[0, 1, 1], [1, 0, 3], [3, 3, 0]]}\n"
    " ],\n"
    " \"liveness\": [{\"nodes\": [0, 1], \"resident\": 1}, {\"nodes\": [1, 2, 3]}]\n"
    "}\n"
;

static as_problem *p;
static as_ilp *ilp;
static double *x;

static void
setup(void)
{
    as_err err = {0};

    as_lib_hooks_install();
    if (as_problem_parse(tiny, strlen(tiny), "tiny.json", &p, &err) != AS_OK ||
        as_ilp_build(p, NULL, &ilp, &err) != AS_OK)
        fuzz_fail("cannot build the ILP of tiny.json", &err);
    x = as_xcalloc(as_ilp_data(ilp)->ncols, sizeof *x);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    as_sol_status status;
    double objective;
    as_err err = {0};
    int rc;

    if (ilp == NULL)
        setup();
    rc = as_ilp_parse_solution(ilp, "fuzz", (const char *)data, size, x, &status, &objective,
                               &err);
    fuzz_check_rc(rc, &err);
    if (rc == AS_OK && !isnan(objective) && !isfinite(objective))
        fuzz_fail("an infinite objective accepted", &err);
    return 0;
}
