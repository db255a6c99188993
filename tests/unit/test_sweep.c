/* test_sweep.c -- the sweep's progress estimate (src/sweep/sweep.c as_sweep_eta). */
#include "config.h"

#include <math.h>

#include "sweep/sweep.h"
#include "tap.h"

int
main(void)
{
    plan_lazy();
    /* 3 solved lines of 10 s each, 10 pruned lines: 5 left take 5 x 10 s, not the
       elapsed time over 13 lines (the pruned ones counted as done) */
    ok(fabs(as_sweep_eta(5, 3, 30.0, 13, 31.3, 1, 0) - 50.0) < 1e-9,
       "pruned lines are not samples: 5 left x 10 s");
    ok(as_sweep_eta(5, 3, 30.0, 13, 31.3, 1, 0) > 31.3 / 13 * 5 * 4,
       "well above the old estimate (elapsed / lines x left)");
    ok(fabs(as_sweep_eta(6, 3, 30.0, 13, 31.3, 2, 0) - 30.0) < 1e-9, "two jobs: half");
    ok(fabs(as_sweep_eta(4, 0, 0, 8, 0.8, 1, 30) - 120.0) < 1e-9,
       "only pruned lines so far: the time limit a configuration");
    ok(fabs(as_sweep_eta(4, 0, 0, 8, 0.8, 1, 0) - 0.4) < 1e-9,
       "only pruned, no limit: elapsed per line");
    ok(isnan(as_sweep_eta(4, 0, 0, 0, 0, 1, 0)), "nothing to go on: NAN");
    ok(as_sweep_eta(0, 3, 30.0, 13, 31.3, 1, 30) == 0, "nothing left: 0");
    ok(fabs(as_sweep_eta(2, 4, 2.0, 4, 2.1, 1, 30) - 1.0) < 1e-9,
       "no pruned lines: the mean of the solved ones");
    return done_testing();
}
