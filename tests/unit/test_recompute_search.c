/* test_recompute_search.c -- the search of `solve --recompute auto`
 * (solve/recompute_search.h) on synthetic steps: candidate k fits when its
 * memory (decreasing in k) is within the budget; its objective is a base
 * plus k times the time of one recomputed layer, minus what the budget
 * costs when it binds.  The search must return the k a scan of every
 * candidate would, with fewer solves, and stop on the time limit with the
 * best candidate found before it.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solve/recompute_search.h"
#include "tap.h"

typedef struct step {
    int nl;
    double mem0, per_layer, budget; /* memory of k: mem0 - k * per_layer */
    double obj0, recomp;            /* objective of k: obj0 + k * recomp (+ bind) */
    double bind;                    /* extra objective when within 10 % of the budget */
    int fail_at;                    /* candidate that errs (the time limit), -1 none */
    int pending, kept, nkeep, ndrop, ntry;
} step;

static int
st_fits(const step *s, int k)
{
    return s->mem0 - k * s->per_layer <= s->budget;
}

static double
st_obj(const step *s, int k)
{
    double m = s->mem0 - k * s->per_layer;

    return s->obj0 + k * s->recomp + (m > 0.9 * s->budget ? s->bind : 0);
}

static int
st_try(void *ud, int k, int *fits, double *objective, as_err *err)
{
    step *s = ud;

    s->ntry++;
    s->pending = k;
    if (k == s->fail_at)
        return as_errf(err, AS_ESOLVER, "time limit");
    *fits = st_fits(s, k);
    *objective = *fits ? st_obj(s, k) : HUGE_VAL;
    return AS_OK;
}

static void
st_keep(void *ud)
{
    step *s = ud;

    s->kept = s->pending;
    s->nkeep++;
}

static void
st_drop(void *ud)
{
    ((step *)ud)->ndrop++;
}

static int
st_unbound(void *ud, int *unbound, as_err *err)
{
    step *s = ud;

    (void)err;
    *unbound = s->bind == 0 || s->mem0 <= 0.9 * s->budget;
    return AS_OK;
}

static const as_recomp_ops ops = {st_try, st_keep, st_drop, st_unbound};

/* the k of least objective over all that fit (ties: fewer), by a scan of every k */
static int
scan_best(const step *s)
{
    int k, best = -1;

    for (k = 0; k <= s->nl; k++)
        if (st_fits(s, k) && (best < 0 || st_obj(s, k) < st_obj(s, best)))
            best = k;
    return best;
}

static void
check(const char *what, step s, double time_limit, int want_timeout)
{
    as_recomp_result r;
    as_err err = {0};
    int rc, want = scan_best(&s);

    s.kept = -1;
    rc = as_recompute_search(s.nl, &ops, &s, time_limit, time_limit > 0 ? -1e9 : 0, &r, &err);
    if (want_timeout) {
        ok(rc == AS_OK && r.timed_out && r.best >= 0 && r.best == s.kept,
           "%s: stopped at the time limit with the best before it (k = %d, %d solves; %s)",
           what, r.best, s.ntry, r.log ? r.log : "");
    } else {
        ok(rc == AS_OK && !r.timed_out && r.best == want && (want < 0 || s.kept == want) &&
               s.nkeep + s.ndrop == s.ntry,
           "%s: k = %d as the full scan (%d), kept, %d solves for %d layers (%s)", what, r.best,
           want, s.ntry, s.nl, r.log ? r.log : "");
    }
    free(r.log);
}

int
main(void)
{
    step s;
    int nl;

    plan_lazy();
    for (nl = 1; nl <= 40; nl += 13) {
        int need;
        for (need = 0; need <= nl + 1; need += (nl > 4 ? 3 : 1)) {
            char what[96];
            memset(&s, 0, sizeof s);
            s.nl = nl;
            s.per_layer = 10;
            s.budget = 1000;
            s.mem0 = s.budget + need * s.per_layer - 5; /* the fewest that fit: need */
            s.obj0 = 1;
            s.recomp = 0.01;
            s.fail_at = -1;
            snprintf(what, sizeof what, "%d layers, %d needed", nl, need);
            check(what, s, 0, 0);
        }
    }
    /* nothing recomputed fits, the budget binds near it: recomputing nine layers is faster */
    memset(&s, 0, sizeof s);
    s.nl = 12;
    s.per_layer = 10;
    s.budget = 1000;
    s.mem0 = 990;
    s.obj0 = 1;
    s.recomp = 0.01;
    s.bind = 0.5;
    s.fail_at = -1;
    check("budget binds at k = 0", s, 0, 0);
    /* the unbound budget: k = 0 and one solve */
    s.bind = 0;
    check("budget does not bind", s, 0, 0);
    /* the time limit at the candidate below the fewest that fit */
    memset(&s, 0, sizeof s);
    s.nl = 24;
    s.per_layer = 10;
    s.budget = 1000;
    s.mem0 = 1085; /* 9 needed */
    s.obj0 = 1;
    s.recomp = 0.01;
    s.fail_at = 8;
    check("time limit at k = 8", s, 1, 1);
    return done_testing();
}
