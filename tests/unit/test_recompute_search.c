/* test_recompute_search.c -- the search of `solve --recompute auto`
 * (solve/recompute_search.h) on synthetic steps: layer j frees FREE[j]
 * bytes when recomputed and adds COST[j] seconds; a setting fits when its
 * memory is within the budget; its objective is a base plus its layers'
 * time, plus a penalty when it is within 10 % of the budget (the budget
 * binds).  The search must return the setting a scan of every setting
 * would (counts per class, earliest layers first), solve fewer, and stop on
 * the time limit with the best setting found before it.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/io.h"
#include "solve/recompute_search.h"
#include "tap.h"

#define NL_MAX 24

typedef struct step {
    int nl, ncls, cls[NL_MAX];
    double free_[NL_MAX], cost[NL_MAX];
    double mem0, budget, obj0, bind;
    int fail_at; /* the try that errs (the time limit), -1 none */
    int ntry, nkeep, ndrop, pending_n, kept_n;
    double pending_obj, kept_obj;
} step;

static double
st_mem(const step *s, const int *on)
{
    double m = s->mem0;
    int j;

    for (j = 0; j < s->nl; j++)
        m -= on[j] ? s->free_[j] : 0;
    return m;
}

static double
st_obj(const step *s, const int *on)
{
    double o = s->obj0;
    int j;

    for (j = 0; j < s->nl; j++)
        o += on[j] ? s->cost[j] : 0;
    return o + (st_mem(s, on) > 0.9 * s->budget ? s->bind : 0);
}

static int
st_try(void *ud, const int *on, int *fits, double *objective, double *bound, as_err *err)
{
    step *s = ud;

    if (s->ntry++ == s->fail_at)
        return as_errf(err, AS_ESOLVER, "time limit");
    *fits = st_mem(s, on) <= s->budget;
    *objective = *fits ? st_obj(s, on) : HUGE_VAL;
    *bound = *objective;
    s->pending_obj = *objective;
    return AS_OK;
}

static void
st_keep(void *ud)
{
    step *s = ud;

    s->kept_obj = s->pending_obj;
    s->nkeep++;
}

static void
st_drop(void *ud)
{
    ((step *)ud)->ndrop++;
}

static int
st_base(void *ud, double *lb, as_err *err)
{
    (void)err;
    *lb = ((step *)ud)->obj0;
    return AS_OK;
}

static const as_recomp_ops ops = {st_try, st_keep, st_drop, st_base};

/* The least objective over every setting (counts per class, earliest layers first). */
static double
scan_best(const step *s)
{
    int cnt[NL_MAX], size[NL_MAX], rank[NL_MAX], on[NL_MAX], j, c;
    double best = HUGE_VAL;

    memset(size, 0, sizeof size);
    for (j = 0; j < s->nl; j++)
        rank[j] = size[s->cls[j]]++;
    memset(cnt, 0, sizeof cnt);
    for (;;) {
        for (j = 0; j < s->nl; j++)
            on[j] = rank[j] < cnt[s->cls[j]];
        if (st_mem(s, on) <= s->budget)
            best = fmin(best, st_obj(s, on));
        for (c = 0; c < s->ncls && ++cnt[c] > size[c]; c++)
            cnt[c] = 0;
        if (c == s->ncls)
            return best;
    }
}

static void
check(const char *what, step s, double time_limit, int want_timeout)
{
    as_recomp_space sp = {s.nl, s.ncls, s.cls, s.cost, 1e-9};
    as_recomp_result r;
    as_err err = {0};
    double want = scan_best(&s);
    int rc;

    s.kept_obj = HUGE_VAL;
    rc = as_recompute_search(&sp, &ops, &s, time_limit, time_limit > 0 ? -1e9 : 0, &r, &err);
    if (want_timeout)
        ok(rc == AS_OK && r.timed_out && r.best != NULL && isfinite(s.kept_obj) &&
               r.bound <= s.kept_obj,
           "%s: stopped at the time limit with the best before it (%g s, bound %g, %d "
           "solves; %s)", what, s.kept_obj, r.bound, s.ntry, r.log ? r.log : "");
    else
        ok(rc == AS_OK && !r.timed_out && (isinf(want) ? r.best == NULL : r.best != NULL) &&
               s.kept_obj == want && s.nkeep + s.ndrop == s.ntry &&
               (r.best == NULL || r.bound <= want) && r.tried + r.pruned == r.nsettings,
           "%s: %g s as the full scan (%g), %d of %d settings solved (%s)", what, s.kept_obj,
           want, r.tried, r.nsettings, r.log ? r.log : "");
    as_recomp_result_free(&r);
}

static void
uniform(step *s, int nl, int ncls, int need)
{
    int j;

    memset(s, 0, sizeof *s);
    s->nl = nl;
    s->ncls = ncls;
    for (j = 0; j < nl; j++) {
        s->cls[j] = j % ncls;
        s->free_[j] = 10;
        s->cost[j] = 0.01;
    }
    s->budget = 1000;
    s->mem0 = s->budget + need * 10 - 5; /* the fewest that fit: need */
    s->obj0 = 1;
    s->fail_at = -1;
}

int
main(void)
{
    step s;
    char what[96];
    int nl, need, ncls, j, cls[NL_MAX];

    plan_lazy();
    for (ncls = 1; ncls <= 2; ncls++)
        for (nl = 1; nl <= 24; nl += 7)
            for (need = 0; need <= nl + 1; need += (nl > 4 ? 3 : 1)) {
                uniform(&s, nl, ncls, need);
                snprintf(what, sizeof what, "%d layers in %d classes, %d needed", nl, ncls,
                         need);
                check(what, s, 0, 0);
            }
    /* the budget binds at none: recomputing layers buys the penalty back */
    uniform(&s, 12, 2, 0);
    s.mem0 = 990;
    s.bind = 0.5;
    check("budget binds at none", s, 0, 0);
    s.bind = 0;
    check("budget does not bind: one setting", s, 0, 0);
    /* a wide layer: recomputing it alone fits, the narrow one alone does not, and the
       first k in program order would recompute both */
    memset(&s, 0, sizeof s);
    s.nl = 2;
    s.ncls = 2;
    s.cls[1] = 1;
    s.free_[0] = 4096;
    s.free_[1] = 16384;
    s.cost[0] = 0.001;
    s.cost[1] = 0.004;
    s.mem0 = 410628;
    s.budget = 400000;
    s.obj0 = 1;
    s.fail_at = -1;
    check("wide MLP: the wide layer alone", s, 0, 0);
    /* even layers free more than odd ones: counts per class beat the first k */
    uniform(&s, 24, 2, 9);
    for (j = 0; j < 24; j++)
        s.free_[j] = j % 2 ? 6 : 14;
    check("unequal classes", s, 0, 0);
    /* the time limit at the fifth setting */
    uniform(&s, 24, 2, 9);
    s.fail_at = 4;
    check("time limit at the fifth setting", s, 1, 1);
    /* classes of a graph's layers: identical layers by residue */
    {
        as_graph *g = NULL;
        as_err err = {0};
        int n = 0, nc;
        const char *src = "graph t\n"
                          "input x : f32[4,8]\n"
                          "param h.0.w : f32[8,8]\nparam h.1.w : f32[8,8]\n"
                          "param h.2.w : f32[8,16]\nparam h.3.w : f32[16,8]\n"
                          "h.0.y : f32[4,8] = matmul(x, h.0.w)\n"
                          "h.1.y : f32[4,8] = matmul(h.0.y, h.1.w)\n"
                          "h.2.y : f32[4,16] = matmul(h.1.y, h.2.w)\n"
                          "h.3.y : f32[4,8] = matmul(h.2.y, h.3.w)\n"
                          "";
        if (as_graph_parse("t", src, strlen(src), &g, &err) == AS_OK) {
            nc = as_recompute_classes(g, "h.0,h.1,h.2,h.3", 4, 2, cls);
            ok(nc == 4 && cls[0] == 0 && cls[1] == 1 && cls[2] == 2 && cls[3] == 3,
               "classes, period 2: h.0 and h.1 identical but of residues 0 and 1 (%d)", nc);
            nc = as_recompute_classes(g, "h.0,h.1,h.2,h.3", 4, 1, cls);
            ok(nc == 3 && cls[0] == 0 && cls[1] == 0 && cls[2] == 1 && cls[3] == 2,
               "classes, untied: h.0 = h.1, h.2 and h.3 apart (%d)", nc);
            as_graph_free(g);
            n = 1;
        }
        ok(n, "graph parsed (%s)", err.msg);
    }
    return done_testing();
}
