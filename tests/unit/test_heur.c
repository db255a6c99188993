/* test_heur.c -- the heuristic backends (beam, mcts): beam with an
 * unbounded width equals brute force on random cost graphs (memory rows,
 * alias pairs, follow links, with and without the reductions); every plan
 * they return fits; mcts gives one plan per seed; their gap is measured
 * against the reductions' bound; bad parameters are usage errors.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formulate/build.h"
#include "graph/autodiff.h"
#include "graph/presets.h"
#include "solve/heur.h"
#include "solve/solver.h"
#include "tap.h"

static as_problem *
instance(int i)
{
    as_random_opts o;
    as_problem *p;

    as_random_opts_init(&o);
    o.seed = (uint64_t)i + 100;
    o.nodes = 5 + (size_t)(i % 5);
    o.edges = o.nodes + (size_t)(i % 4);
    o.kmin = 2;
    o.kmax = i % 2 ? 4 : 3;
    o.follow = i % 3 == 0 ? 0.3 : 0;
    o.live_window = i % 4 == 1 ? 0 : 3;
    o.memory_frac = i % 4 == 1 ? 0 : 0.05 + 0.1 * (i % 3);
    o.aliases = i % 5 == 2 ? 1 : 0;
    p = as_problem_random(&o);
    if (i == 14) /* below what any plan needs: infeasible */
        as_problem_set_memory(p, as_problem_peak_lower_bound(p) - 1);
    return p;
}

static as_outcome
run(const as_problem *p, const char *solver, unsigned reduce, const char *param, uint64_t seed,
    as_solve_result *res)
{
    as_solve_opts o;
    as_err err = {0};
    const char *params[1] = {param};

    as_solve_opts_init(&o);
    o.solver = solver;
    o.reduce = reduce;
    o.lim.seed = seed;
    o.params = params;
    o.nparams = param != NULL;
    if (as_solve_problem(p, &o, res, &err) != AS_OK) {
        diag("%s: %s", solver, err.msg);
        memset(res, 0, sizeof *res);
        return AS_OUTCOME_NOTRUN;
    }
    return res->outcome;
}

/* SOLVER with two parameters, no reductions. */
static as_outcome
run2(const as_problem *p, const char *solver, const char *p1, const char *p2,
     as_solve_result *res)
{
    as_solve_opts o;
    as_err err = {0};
    const char *params[2] = {p1, p2};

    as_solve_opts_init(&o);
    o.solver = solver;
    o.reduce = 0;
    o.params = params;
    o.nparams = 2;
    if (as_solve_problem(p, &o, res, &err) != AS_OK) {
        diag("%s: %s", solver, err.msg);
        memset(res, 0, sizeof *res);
        return AS_OUTCOME_NOTRUN;
    }
    return res->outcome;
}

static int
fits(const as_problem *p, const as_plan *pl)
{
    double obj;
    as_err err;

    return as_problem_check(p, pl->choice, &obj, NULL, &err) == AS_OK &&
           fabs(obj - pl->objective) <= 1e-9 * fmax(1, fabs(obj));
}

/* Beam with a width no instance reaches is exhaustive: it equals brute force. */
static void
test_beam_exact(int i, unsigned reduce)
{
    as_problem *p = instance(i);
    as_solve_result rb, rh;
    as_outcome ob = run(p, "brute", 0, NULL, 1, &rb);
    as_outcome oh = run(p, "beam", reduce, "beam/width=100000000", 1, &rh);

    if (ob == AS_OUTCOME_OPTIMAL) {
        ok(oh == AS_OUTCOME_FEASIBLE && rh.nplans == 1 && fits(p, &rh.plans[0]) &&
               fabs(rh.plans[0].objective - rb.plans[0].objective) <=
                   1e-9 * fabs(rb.plans[0].objective),
           "instance %d (reduce %#x): unbounded beam %.9g = brute %.9g", i, reduce,
           rh.nplans ? rh.plans[0].objective : NAN, rb.plans[0].objective);
        if (reduce != 0 && rh.nplans == 1)
            ok(rh.plans[0].bound <= rh.plans[0].objective + 1e-12 &&
                   rh.plans[0].bound <= rb.plans[0].objective * (1 + 1e-9) + 1e-12,
               "instance %d: beam's bound %.9g is below the optimum %.9g", i,
               rh.plans[0].bound, rb.plans[0].objective);
    } else {
        ok(oh == AS_OUTCOME_LIMIT && rh.nplans == 0,
           "instance %d: no plan fits, beam finds none (outcome %s)", i, as_outcome_name(oh));
    }
    as_solve_result_free(&rb);
    as_solve_result_free(&rh);
    as_problem_free(p);
}

/* Beam's merge of partial plans with the same future (the same strategies on the frontier
   and bytes at the open liveness points): on a chain of 40 nodes with 4 strategies and a
   3-node liveness window (without and under a budget), a step keeps at most 4 frontier
   strategies times 4^3 byte sums: a beam of width 20000 holds a few hundred partial plans
   a pass (under 5000 in all, its nodes) and finds the ILP's optimum.  With keys that
   differ for equal partial plans it held 18336 and 89277.  Unpolished (beam/polish=0):
   the beam of that width alone, not the narrower and relaxed ones polishing adds. */
static void
test_beam_merge(void)
{
    as_random_opts o;
    as_problem *p;
    as_solve_result rb, rg;
    int w;

    for (w = 0; w < 2; w++) {
        as_random_opts_init(&o);
        o.seed = 7 + (uint64_t)w;
        o.nodes = 40;
        o.edges = 39; /* a chain */
        o.kmin = o.kmax = 4;
        o.live_window = 3;
        o.memory_frac = w ? 0.3 : 0;
        p = as_problem_random(&o);
        run(p, "glpk", 0, NULL, 1, &rg);
        if (run2(p, "beam", "beam/width=20000", "beam/polish=0", &rb) == AS_OUTCOME_FEASIBLE &&
            rg.nplans == 1 && rb.nplans == 1)
            ok(rb.plans[0].nodes < 5000 &&
                   fabs(rb.plans[0].objective - rg.plans[0].objective) <=
                       1e-9 * fabs(rg.plans[0].objective),
               "chain of 40 %s: beam width 20000 holds %ld < 5000 partial plans, its plan "
               "%.9g = the ILP's %.9g", w ? "under a budget" : "without a budget",
               rb.plans[0].nodes, rb.plans[0].objective, rg.plans[0].objective);
        else
            ok(0, "chain of 40 (budget %d): beam and glpk find a plan", w);
        as_solve_result_free(&rb);
        as_solve_result_free(&rg);
        as_problem_free(p);
    }
}

/* Narrow beams and mcts return valid plans no cheaper than the optimum; mcts (which starts
   from beam K=10's plan, no dearer than K=1's) no dearer than beam K=1. */
static void
test_valid(int i)
{
    static const char *const cfg[][2] = {{"beam", "beam/width=1"},
                                         {"beam", "beam/width=3"},
                                         {"mcts", "mcts/episodes=50"},
                                         {"mcts", "mcts/start=none"}};
    as_problem *p = instance(i);
    as_solve_result rb, rh;
    as_outcome ob = run(p, "brute", 0, NULL, 1, &rb);
    double obj[4];
    size_t c;

    for (c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        as_outcome oh = run(p, cfg[c][0], AS_REDUCE_ALL, cfg[c][1], 7, &rh);
        obj[c] = INFINITY;
        if (oh == AS_OUTCOME_FEASIBLE) {
            ok(rh.nplans == 1 && fits(p, &rh.plans[0]) && ob == AS_OUTCOME_OPTIMAL &&
                   rh.plans[0].objective >= rb.plans[0].objective * (1 - 1e-12),
               "instance %d: %s plan fits and costs %.9g >= optimum", i, cfg[c][1],
               rh.plans[0].objective);
            if (rh.nplans == 1)
                obj[c] = rh.plans[0].objective;
        } else {
            ok(oh == AS_OUTCOME_LIMIT, "instance %d: %s finds no plan (%s)", i, cfg[c][1],
               as_outcome_name(oh));
        }
        as_solve_result_free(&rh);
    }
    ok(obj[2] <= obj[0] * (1 + 1e-12) || isinf(obj[0]),
       "instance %d: mcts %.9g no dearer than beam K=1 %.9g, its first incumbent", i, obj[2],
       obj[0]);
    if (!isfinite(as_problem_memory_cap(p)))
        ok(obj[1] <= obj[0] * (1 + 1e-12) || isinf(obj[0]),
           "instance %d: beam K=3 %.9g no dearer than beam K=1 %.9g (it runs K=1 too)", i,
           obj[1], obj[0]);
    as_solve_result_free(&rb);
    as_problem_free(p);
}

/* The default beam runs both ways and keeps the cheaper plan: no dearer than either. */
static void
test_beam_order(int i)
{
    static const char *const cfg[] = {"beam/order=fwd", "beam/order=rev", "beam/order=both"};
    as_problem *p = instance(i);
    as_solve_result r;
    double obj[3];
    size_t c;

    for (c = 0; c < 3; c++) {
        const char *params[2] = {"beam/width=2", cfg[c]};
        as_solve_opts o;
        as_err err = {0};
        as_solve_opts_init(&o);
        o.solver = "beam";
        o.params = params;
        o.nparams = 2;
        obj[c] = INFINITY;
        if (as_solve_problem(p, &o, &r, &err) == AS_OK) {
            if (r.nplans == 1 && fits(p, &r.plans[0]))
                obj[c] = r.plans[0].objective;
            as_solve_result_free(&r);
        }
    }
    ok(obj[2] == fmin(obj[0], obj[1]),
       "instance %d: beam both ways %.9g = the cheaper of forward %.9g and backward %.9g", i,
       obj[2], obj[0], obj[1]);
    as_problem_free(p);
}

/* Beam of widths 1, 10, 100 on P (groups: tied classes or NULL); every plan must fit. */
static void
beam_widths(const as_problem *p, struct as_group_result *groups, double obj[3])
{
    static const char *const w[3] = {"beam/width=1", "beam/width=10", "beam/width=100"};
    size_t c;

    for (c = 0; c < 3; c++) {
        as_solve_opts o;
        as_solve_result r;
        as_err err = {0};
        const char *params[1] = {w[c]};
        as_solve_opts_init(&o);
        o.solver = "beam";
        o.params = params;
        o.nparams = 1;
        o.groups = groups;
        obj[c] = INFINITY;
        if (as_solve_problem(p, &o, &r, &err) == AS_OK) {
            if (r.nplans == 1 && fits(p, &r.plans[0]))
                obj[c] = r.plans[0].objective;
            as_solve_result_free(&r);
        }
    }
}

/*
 * A wider beam never returns a dearer plan: of the widths 1, 10 and 100, each under a
 * budget (width W also runs every power of ten below it, with and without the budget).
 * On random budgeted graphs and on two small transformer training steps (2 layers, hidden
 * 128, mesh 4) under budgets where a beam that ran only its own width (and K=1 with the
 * budget) was not monotone: gpt2 at 10 % of the way from the least peak to K=1's
 * no-budget plan's peak (K=1 0.001881544 s, K=10 0.00190167, K=100 0.00189144), bert at
 * 30 % (K=1 0.00209171, K=10 and K=100 0.00209256).
 */
static void
test_beam_monotone(void)
{
    static const struct {
        const char *preset;
        double frac;
    } tf[] = {{"gpt2-small", 0.1}, {"bert-large", 0.3}};
    int i, mono = 0, n = 0;
    size_t c;
    double obj[3];

    for (i = 0; i < 12; i++) {
        as_random_opts o;
        as_problem *p;
        as_random_opts_init(&o);
        o.seed = (uint64_t)i + 1000;
        o.nodes = 20 + (size_t)(i % 7) * 5;
        o.edges = o.nodes + o.nodes / 4;
        o.kmin = 3;
        o.kmax = 8;
        o.follow = 0.1;
        o.live_window = 8 + (size_t)(i % 3);
        o.memory_frac = 0.02 + 0.1 * (i % 4);
        o.aliases = (size_t)(i % 3);
        p = as_problem_random(&o);
        beam_widths(p, NULL, obj);
        n++;
        /* (when no plan fits, all three find none) */
        mono += (obj[1] <= obj[0] && obj[2] <= obj[1]) || (isinf(obj[0]) && isinf(obj[2]));
        if (!(obj[1] <= obj[0] && obj[2] <= obj[1]))
            diag("random %d: K=1 %.9g K=10 %.9g K=100 %.9g", i, obj[0], obj[1], obj[2]);
        as_problem_free(p);
    }
    ok(mono == n, "beam on %d random budgeted graphs: K=100 <= K=10 <= K=1 on %d", n, mono);
    for (c = 0; c < sizeof tf / sizeof tf[0]; c++) {
        const as_preset *pr = as_preset_find(tf[c].preset);
        as_preset_cfg cfg;
        as_train_opts t;
        as_graph *g = NULL;
        as_graph_setup su = {.mesh = "4"};
        as_graph_problem gp;
        as_err err = {0};
        as_solve_opts so;
        as_solve_result r;
        const char *params[1] = {"beam/width=1"};
        double lb, peak = NAN;

        if (pr == NULL) {
            ok(0, "preset %s", tf[c].preset);
            continue;
        }
        cfg = pr->cfg;
        cfg.layers = 2;
        cfg.hidden = 128;
        cfg.heads = 2;
        cfg.seq = 32;
        cfg.ffn = 0;
        cfg.vocab = 1000;
        cfg.batch = 8;
        as_train_opts_init(&t);
        as_build_opts_init(&su.build);
        su.build.memory = 0;
        su.tie = 1;
        if (as_preset_build(pr, &cfg, &g, &err) != AS_OK || as_autodiff(g, &t, &err) != AS_OK ||
            as_graph_problem_init(&gp, g, &su, &err) != AS_OK) {
            ok(0, "%s: %s", tf[c].preset, err.msg);
            continue;
        }
        as_solve_opts_init(&so);
        so.solver = "beam";
        so.params = params;
        so.nparams = 1;
        so.groups = gp.groups;
        if (as_solve_problem(gp.p, &so, &r, &err) == AS_OK) {
            if (r.nplans == 1)
                peak = r.plans[0].peak;
            as_solve_result_free(&r);
        }
        as_problem_set_memory(gp.p, 1);
        lb = as_problem_peak_lower_bound(gp.p);
        as_problem_set_memory(gp.p, lb + tf[c].frac * (peak - lb));
        beam_widths(gp.p, gp.groups, obj);
        ok(isfinite(obj[2]) && obj[1] <= obj[0] && obj[2] <= obj[1],
           "%s, 2 layers, mesh 4, budget %.0f %% of the way: beam K=1 %.9g >= K=10 %.9g >= "
           "K=100 %.9g", tf[c].preset, 100 * tf[c].frac, obj[0], obj[1], obj[2]);
        as_graph_problem_free(&gp);
    }
}

/* One seed, one plan; the seeds explore differently. */
static void
test_mcts_seed(void)
{
    as_random_opts o;
    as_problem *p;
    as_solve_result a, b;
    uint64_t seed;
    int same = 1;

    as_random_opts_init(&o);
    o.seed = 5;
    o.nodes = 40;
    o.edges = 60;
    o.kmin = 2;
    o.kmax = 5;
    o.live_window = 4;
    o.memory_frac = 0.3;
    p = as_problem_random(&o);
    for (seed = 1; seed <= 5; seed++) {
        run(p, "mcts", 0, "mcts/episodes=300", seed, &a);
        run(p, "mcts", 0, "mcts/episodes=300", seed, &b);
        same &= a.nplans == 1 && b.nplans == 1 &&
                memcmp(a.plans[0].choice, b.plans[0].choice,
                       as_problem_nnodes(p) * sizeof *a.plans[0].choice) == 0;
        as_solve_result_free(&a);
        as_solve_result_free(&b);
    }
    ok(same, "mcts: the same seed gives the same plan (seeds 1..5)");
    as_problem_free(p);
}

/*
 * A 4-layer MLP training step (gen mlp-1b --layers 4 --hidden 1024 --batch 64 --train,
 * exported with --cost-model alpa on meshes 4 and 8): mcts with 1,000 episodes finds the
 * ILP's optimum, Megatron's pattern (column, then row, per pair of layers), for every seed.
 */
static void
test_megatron(const char *file)
{
    const char *top = getenv("top_srcdir");
    char *path = as_xasprintf("%s/tests/data/costgraph/%s", top ? top : ".", file), buf[32];
    as_problem *p;
    as_solve_result rg, rm;
    as_err err;
    uint64_t seed;
    int found = 0, pattern = 0;

    if (as_problem_read(path, &p, &err) != AS_OK) {
        ok(0, "%s: %s", file, err.msg);
        free(path);
        return;
    }
    run(p, "glpk", AS_REDUCE_ALL, NULL, 1, &rg);
    for (seed = 1; seed <= 25; seed++) {
        size_t l, v;
        int pat = 1;
        if (run(p, "mcts", AS_REDUCE_ALL, "mcts/episodes=1000", seed, &rm) != AS_OUTCOME_FEASIBLE)
            continue;
        found += fabs(rm.plans[0].objective - rg.plans[0].objective) <=
                 1e-9 * rg.plans[0].objective;
        for (l = 0; l < 4; l++) {
            char name[32];
            snprintf(name, sizeof name, "h.%zu.fc.mm", l);
            pat &= as_problem_find(p, name, &v) &&
                   strncmp(as_problem_strategy_name(p, v, rm.plans[0].choice[v], buf, sizeof buf),
                           l % 2 ? "row(" : "column(", l % 2 ? 4 : 7) == 0;
        }
        pattern += pat;
        as_solve_result_free(&rm);
    }
    ok(found == 25, "%s: mcts finds the optimum %.9g for %d of 25 seeds", file,
       rg.plans[0].objective, found);
    ok(pattern == 25, "%s: mcts's plan is column, row, column, row for %d of 25 seeds", file,
       pattern);
    as_solve_result_free(&rg);
    as_problem_free(p);
    free(path);
}

static void
test_params(void)
{
    static const char *const bad[] = {"beam/width=0", "beam/width=-3", "beam/width=1.5",
                                      "beam/width=x", "beam/polish=2", "beam/order=up",
                                      "mcts/order=both", "mcts/episodes=0",
                                      "mcts/episodes=-1", "mcts/c=-1", "mcts/eps=2",
                                      "mcts/nope=1", "mcts/pairs=2", "mcts/repair=2",
                                      "mcts/start-width=0", "beam/seed=yes",
                                      "mcts/start=reductions"};
    as_problem *p = instance(2);
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        as_solve_opts o;
        as_solve_result r;
        as_err err = {0};
        int rc;
        as_solve_opts_init(&o);
        o.solver = strncmp(bad[i], "beam", 4) == 0 ? "beam" : "mcts";
        o.params = &bad[i];
        o.nparams = 1;
        rc = as_solve_problem(p, &o, &r, &err);
        ok(rc == AS_EUSAGE, "%s is a usage error (%s)", bad[i], err.msg);
        if (rc == AS_OK)
            as_solve_result_free(&r);
    }
    as_problem_free(p);
}

/*
 * The repair as heur.h states it, computed plainly: the memory at every point summed afresh
 * every step, a move's cost from the unit's links (as_heur_step_cost).
 * as_heur_repair and as_hls_repair keep both incrementally and must agree with it.
 */
static int
repair_plain(const as_heur *h, size_t *x, int max_steps)
{
    int step, okr = 0;

    for (step = 0; step < max_steps; step++) {
        size_t u, s, i, j, at = 0, bu = (size_t)-1, bs = 0;
        double peak = -INFINITY, best = INFINITY;
        for (i = 0; i < h->nbind; i++) {
            double m = h->base[i];
            for (u = 0; u < h->nu; u++)
                for (j = h->rstart[u]; j < h->rstart[u + 1]; j++)
                    if (h->run[j].lo <= i && i < h->run[j].hi)
                        m += h->run[j].dm[x[u]];
            if (m > peak) {
                peak = m;
                at = i;
            }
        }
        if (!(peak > h->cap)) {
            okr = 1;
            break;
        }
        for (u = 0; u < h->nu; u++)
            for (s = 0; s < h->k[u]; s++) {
                double dm = 0, dc, q;
                int holds = 0;
                for (j = h->rstart[u]; j < h->rstart[u + 1]; j++)
                    if (h->run[j].lo <= at && at < h->run[j].hi) {
                        holds = 1;
                        dm += h->run[j].dm[s] - h->run[j].dm[x[u]];
                    }
                if (!holds || s == x[u] || !(dm < 0))
                    continue;
                dc = as_heur_step_cost(h, x, u, s) - as_heur_step_cost(h, x, u, x[u]);
                if (!isfinite(dc))
                    continue;
                q = dc / fmin(-dm, peak - h->cap);
                if (q < best) {
                    best = q;
                    bu = u;
                    bs = s;
                }
            }
        if (bu == (size_t)-1)
            break;
        x[bu] = bs;
    }
    return okr;
}

/*
 * One truth: the units' view of a plan (as_heur_eval: costs, links, memory as runs of
 * binding points) gives the problem's objective minus its offset, and calls a plan over
 * the budget exactly when as_problem_check does; local improvement never makes a plan
 * dearer or pushes it over the budget.
 */
static void
test_eval(int i)
{
    as_problem *p = instance(i);
    as_heur h;
    size_t *x, *choice, u, t, agree = 0, same = 0, nfeas = 0, better = 0, tries = 200;
    size_t over = 0, repaired = 0, rfits = 0, rsame = 0, nofree = 0;
    double *tot;
    uint64_t r = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);

    as_heur_init(&h, p);
    x = calloc(h.nu + 1, sizeof *x);
    choice = calloc(h.n + 1, sizeof *choice);
    tot = calloc(h.nbind + 1, sizeof *tot);
    for (t = 0; t < tries; t++) {
        double v, obj = NAN, v2, obj2 = NAN;
        int okc, okx;
        for (u = 0; u < h.nu; u++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            x[u] = (size_t)(r >> 33) % h.k[u];
        }
        v = as_heur_eval(&h, x, tot);
        as_heur_expand(&h, x, choice);
        okc = as_problem_check(p, choice, &obj, NULL, NULL) == AS_OK;
        agree += okc == (isfinite(v) != 0);
        {
            /* the view without the budget (MCTS's repair gate, which skips the memory):
               the same cost for every plan that fits */
            as_heur hf = h;
            double vf;
            hf.cap = INFINITY;
            vf = as_heur_eval(&hf, x, tot);
            nofree += isfinite(v) && vf != v;
        }
        if (isfinite(as_problem_memory_cap(p)) &&
            as_problem_peak(p, choice) > as_problem_memory_cap(p)) {
            /* over the budget: a repair that says it fits, fits */
            over++;
            {
                /* the incremental repairs (plain state, and a local search that was
                   elsewhere before) make the plain repair's moves */
                size_t *y = malloc((h.nu + 1) * sizeof *y), *z = malloc((h.nu + 1) * sizeof *z);
                as_hls *q;
                int oky, okz;
                memcpy(y, x, h.nu * sizeof *y);
                memcpy(z, x, h.nu * sizeof *z);
                oky = repair_plain(&h, y, 4 * (int)h.nu + 16);
                for (u = 0; u < h.nu; u++)
                    z[u] = (z[u] + 1) % h.k[u];
                q = as_hls_new(&h, z);
                as_hls_set(q, x);
                okz = as_hls_repair(q, 4 * (int)h.nu + 16);
                memcpy(z, as_hls_x(q), h.nu * sizeof *z);
                as_hls_free(q);
                okx = as_heur_repair(&h, x, 4 * (int)h.nu + 16);
                rsame += oky == okx && okz == okx && memcmp(x, y, h.nu * sizeof *x) == 0 &&
                         memcmp(x, z, h.nu * sizeof *x) == 0;
                free(y);
                free(z);
            }
            if (okx) {
                repaired++;
                as_heur_expand(&h, x, choice);
                rfits += as_problem_peak(p, choice) <= as_problem_memory_cap(p);
            }
            continue;
        }
        if (!okc)
            continue;
        nfeas++;
        same += fabs(v + as_problem_offset(p) - obj) <= 1e-9 * fmax(1, fabs(obj));
        as_heur_improve(&h, x, 20);
        v2 = as_heur_eval(&h, x, tot);
        as_heur_expand(&h, x, choice);
        better += as_problem_check(p, choice, &obj2, NULL, NULL) == AS_OK && obj2 <= obj + 1e-9 &&
                  fabs(v2 + as_problem_offset(p) - obj2) <= 1e-9 * fmax(1, fabs(obj2));
    }
    ok(agree == tries && same == nfeas && better == nfeas,
       "instance %d: as_heur_eval = as_problem_check on %zu random plans (%zu fit: same "
       "objective %zu, improved and still fitting %zu)", i, agree, nfeas, same, better);
    ok(nofree == 0, "instance %d: as_heur_eval without the budget = with it on every plan that fits",
       i);
    {
        /* the memory vectors are held once per value (build_memory's pool): two (unit,
           point) pairs that add the same bytes share one, different bytes never do */
        size_t a, b, nh = h.hstart[h.nu], bad = 0, shared = 0;
        for (a = 0; a < nh; a++)
            for (b = a + 1; b < nh; b++) {
                size_t ka = 0, kb = 0;
                int eq;
                for (u = 0; u < h.nu; u++) {
                    if (a >= h.hstart[u] && a < h.hstart[u + 1])
                        ka = h.k[u];
                    if (b >= h.hstart[u] && b < h.hstart[u + 1])
                        kb = h.k[u];
                }
                eq = ka == kb && memcmp(h.hm[a].dm, h.hm[b].dm, ka * sizeof(double)) == 0;
                bad += eq != (h.hm[a].dm == h.hm[b].dm);
                shared += h.hm[a].dm == h.hm[b].dm;
            }
        ok(bad == 0 && h.ndmv <= nh, "instance %d: %zu memory vectors for %zu (unit, point) "
           "pairs, %zu pairs of them shared, equal exactly when shared", i, h.ndmv, nh, shared);
    }
    ok(rfits == repaired && (over == 0 || i == 14 || repaired > 0),
       "instance %d: as_heur_repair: %zu of %zu plans over the budget repaired, %zu fit", i,
       repaired, over, rfits);
    ok(rsame == over, "instance %d: as_heur_repair and as_hls_repair = the plain repair on %zu "
       "of %zu plans over the budget", i, rsame, over);
    free(x);
    free(choice);
    free(tot);
    as_heur_free(&h);
    as_problem_free(p);
}

/*
 * A block that must switch together: a path of BLOCK_N units, each sharded (0) or
 * replicated (1); resharding between two neighbours that differ costs 10; replicating
 * costs 1 more on every unit but the last, which saves 9.  All replicated is the optimum
 * (-9 + (BLOCK_N - 1) < 0), every partial switch pays a boundary of 10.  From all
 * sharded, no single or pair move helps (the last unit alone: -9 + 10), and a chain of
 * best answers stops at once (a neighbour of a replicated unit: 10 sharded, 1 + 10
 * replicated); the block move re-solves the path exactly.  Beam with width 1 in node
 * order (the last unit decided last) ends all sharded, so its final polish needs it too.
 */
#define BLOCK_N 6

static void
test_block(void)
{
    as_problem *p = as_problem_new();
    as_err err = {0};
    as_heur h;
    as_solve_result res;
    double r[4] = {0, 10, 10, 0}, c[2], best = INFINITY, v0, v;
    size_t x[BLOCK_N], u, id, m;
    int ok_build = 1, stuck, all1 = 1;

    for (u = 0; u < BLOCK_N; u++) {
        char name[16];
        c[0] = 0;
        c[1] = u + 1 < BLOCK_N ? 1 : -9;
        snprintf(name, sizeof name, "b%zu", u);
        ok_build &= as_problem_add_node(p, name, 2, c, NULL, NULL, &id, &err) == AS_OK;
        if (u > 0)
            ok_build &= as_problem_add_edge(p, u - 1, u, r, &err) == AS_OK;
    }
    ok_build &= as_problem_validate(p, &err) == AS_OK;
    ok(ok_build, "block instance builds (%s)", err.msg);
    as_heur_init(&h, p);
    for (m = 0; m < (1u << BLOCK_N); m++) { /* brute force */
        for (u = 0; u < BLOCK_N; u++)
            x[u] = (m >> u) & 1;
        best = fmin(best, as_heur_eval(&h, x, NULL));
    }
    for (u = 0; u < BLOCK_N; u++)
        x[u] = 0;
    v0 = as_heur_eval(&h, x, NULL);
    stuck = !as_heur_improve(&h, x, 20) && !as_heur_chain(&h, x, 10);
    ok(stuck && as_heur_eval(&h, x, NULL) == v0 && v0 > best,
       "block: single, pair and chain moves are stuck at %g (optimum %g)", v0, best);
    ok(as_heur_block(&h, x, AS_HEUR_BLOCK_UNITS, 3, 0), "block: the block move moves");
    v = as_heur_eval(&h, x, NULL);
    for (u = 0; u < BLOCK_N; u++)
        all1 &= x[u] == 1;
    ok(fabs(v - best) <= 1e-12 && all1, "block: the block move reaches the optimum %g (%g)",
       best, v);
    {
        as_solve_opts o;
        const char *params[2] = {"beam/width=1", "beam/order=fwd"};
        as_solve_opts_init(&o);
        o.solver = "beam";
        o.params = params;
        o.nparams = 2;
        if (as_solve_problem(p, &o, &res, &err) != AS_OK)
            memset(&res, 0, sizeof res);
    }
    ok(res.outcome == AS_OUTCOME_FEASIBLE && res.nplans > 0 &&
           fabs(res.plans[0].objective - best) <= 1e-9,
       "block: beam width 1 in node order, polished, reaches the optimum %g (%g)", best,
       res.nplans > 0 ? res.plans[0].objective : NAN);
    as_solve_result_free(&res);
    as_heur_free(&h);
    as_problem_free(p);
}

/* A caller's check (as_limits fits) that rejects every plan costing less than THR. */
typedef struct fits_thr {
    const as_problem *p;
    double thr;
    long calls;
} fits_thr;

static int
fits_above(void *ud, const size_t *choice)
{
    fits_thr *f = ud;

    f->calls++;
    return as_problem_eval(f->p, choice) >= f->thr;
}

static int
fits_none(void *ud, const size_t *choice)
{
    (void)ud;
    (void)choice;
    return 0;
}

static int
fits_all(void *ud, const size_t *choice)
{
    (void)ud;
    (void)choice;
    return 1;
}

/*
 * The caller's check of a plan (solve passes the simulator's peak against the budget:
 * resharded copies the rows do not see).  as_keeper keeps the cheapest plan that passes
 * and, apart, the cheapest that fails; the answer is the first, else the second.  Beam
 * and mcts under a check nothing passes return the cheapest plan by the rows (the
 * caller then says why it does not fit), and under one every plan passes the same plan
 * as without a check; either way they ask it.
 */
static void
test_fits(int i)
{
    as_problem *p = instance(i);
    as_solve_result r, r0;
    as_solve_opts o;
    as_err err = {0};
    fits_thr f = {p, 0, 0};
    int k, pass;

    for (k = 0; k < 2; k++) {
        const char *solver = k ? "mcts" : "beam";
        const char *params[1] = {k ? "mcts/episodes=100" : "beam/width=4"};
        as_outcome o0 = run(p, solver, AS_REDUCE_ALL, params[0], 1, &r0);
        for (pass = 0; pass < 2; pass++) {
            as_solve_opts_init(&o);
            o.solver = solver;
            o.params = params;
            o.nparams = 1;
            o.lim.fits = fits_above;
            o.lim.fits_ud = &f;
            f.thr = pass ? -INFINITY : INFINITY;
            f.calls = 0;
            if (as_solve_problem(p, &o, &r, &err) != AS_OK) {
                diag("%s: %s", solver, err.msg);
                memset(&r, 0, sizeof r);
            }
            ok(r.outcome == o0 && r.nplans == r0.nplans &&
                   (r.nplans == 0 ||
                    (fits(p, &r.plans[0]) && f.calls > 0 &&
                     fabs(r.plans[0].objective - r0.plans[0].objective) <=
                         1e-9 * fmax(1, fabs(r0.plans[0].objective)))),
               "instance %d: %s under a check %s returns its plan without one (%.9g, %.9g; "
               "%ld checks)", i, solver, pass ? "every plan passes" : "nothing passes",
               r.nplans ? r.plans[0].objective : NAN, r0.nplans ? r0.plans[0].objective : NAN,
               f.calls);
            as_solve_result_free(&r);
        }
        as_solve_result_free(&r0);
    }
    as_problem_free(p);
}

/* as_keeper: the cheapest that passes, else the cheapest that fails; failed objectives. */
static void
test_keeper(void)
{
    as_keeper k;
    as_limits lim;
    size_t a[2] = {0, 1}, b[2] = {1, 1}, c[2] = {1, 0}, out[2] = {9, 9};
    int r1, r2, r3, r4;

    as_limits_init(&lim);
    as_keeper_init(&k, 2);
    ok(isinf(as_keeper_answer(&k, out)) && out[0] == 9, "keeper: nothing offered, no answer");
    /* checks with a fixed verdict: the plans' objectives are given, not evaluated */
    r1 = as_keeper_offer(&k, &lim, a, 5); /* no check: passes */
    as_keeper_free(&k);
    as_keeper_init(&k, 2);
    lim.fits = fits_none;
    r2 = as_keeper_offer(&k, &lim, a, 5); /* fails */
    r3 = as_keeper_offer(&k, &lim, b, 3); /* fails, cheaper */
    ok(r1 == 1 && r2 == -1 && r3 == -1 && as_keeper_answer(&k, out) == 3 && out[0] == 1 &&
           out[1] == 1 && as_keeper_failed(&k, 5) && as_keeper_failed(&k, 3) &&
           !as_keeper_failed(&k, 4),
       "keeper: with no plan passing, the cheapest that failed is the answer");
    lim.fits = fits_all;
    r3 = as_keeper_offer(&k, &lim, c, 7); /* passes, dearer */
    r4 = as_keeper_offer(&k, &lim, a, 8); /* not cheaper than the best that passes */
    ok(r3 == 1 && r4 == 0 && as_keeper_answer(&k, out) == 7 && out[0] == 1 && out[1] == 0,
       "keeper: a plan that passes beats cheaper ones that fail");
    as_keeper_free(&k);
}

/*
 * Relabel moves: a ring of 100 nodes, strategies named "[x]" and "[y]", 10 per edge
 * whose ends differ, "[y]" 0.1 cheaper everywhere.  All "[x]" is stuck for single, pair
 * and chain moves and for 64-unit blocks (a block saves at most 6.4 and cuts two edges,
 * +20); the relabel "[x]" -> "[y]" of every unit at once reaches the optimum, all "[y]".
 */
#define RING_N 100
static void
test_relabel(void)
{
    as_problem *p = as_problem_new();
    as_err err = {0};
    as_heur h;
    double r[4] = {0, 10, 10, 0}, c[2] = {0.1, 0}, v0, v;
    size_t x[RING_N], u, id;
    int ok_build = 1, all1 = 1, stuck;

    for (u = 0; u < RING_N; u++) {
        char name[16];
        snprintf(name, sizeof name, "r%zu", u);
        ok_build &= as_problem_add_node(p, name, 2, c, NULL, NULL, &id, &err) == AS_OK;
        ok_build &= as_problem_set_strategy_name(p, id, 0, "[x]", &err) == AS_OK;
        ok_build &= as_problem_set_strategy_name(p, id, 1, "[y]", &err) == AS_OK;
        if (u > 0)
            ok_build &= as_problem_add_edge(p, u - 1, u, r, &err) == AS_OK;
    }
    ok_build &= as_problem_add_edge(p, 0, RING_N - 1, r, &err) == AS_OK;
    ok_build &= as_problem_validate(p, &err) == AS_OK;
    ok(ok_build, "ring instance builds (%s)", err.msg);
    as_heur_init(&h, p);
    for (u = 0; u < RING_N; u++)
        x[u] = 0;
    v0 = as_heur_eval(&h, x, NULL);
    stuck = !as_heur_improve(&h, x, 20) && !as_heur_chain(&h, x, 10) &&
            !as_heur_block(&h, x, AS_HEUR_BLOCK_UNITS, 3, 0);
    ok(stuck && as_heur_eval(&h, x, NULL) == v0,
       "relabel: single, pair, chain and block moves are stuck at %g", v0);
    ok(as_heur_relabel(&h, x, 0), "relabel: the relabel move moves");
    v = as_heur_eval(&h, x, NULL);
    for (u = 0; u < RING_N; u++)
        all1 &= x[u] == 1;
    ok(all1 && fabs(v - (v0 - 0.1 * RING_N)) <= 1e-9,
       "relabel: every unit at \"[y]\", the optimum %g (%g)", v0 - 0.1 * RING_N, v);
    as_heur_free(&h);
    as_problem_free(p);
}

/*
 * Axis-map moves: the ring of test_relabel with strategy names of its own at every unit
 * ("r<u>[x]", "r<u>[y]": no name shared, so no relabel), the two each other's image under
 * the swap of the mesh axes (as a builder gives them, as_problem_set_axis_image).  All
 * "[x]" is stuck for single, pair, chain, block and relabel moves; the axis map swaps every
 * unit at once and reaches the optimum.  A clone keeps the images.
 */
static void
test_axismap(void)
{
    as_problem *p = as_problem_new(), *q;
    as_err err = {0};
    as_heur h;
    double r[4] = {0, 10, 10, 0}, c[2] = {0.1, 0}, v0, v;
    size_t x[RING_N], u, id, img[2] = {1, 0};
    int ok_build = 1, all1 = 1, stuck;

    for (u = 0; u < RING_N; u++) {
        char name[16], sn[32];
        snprintf(name, sizeof name, "r%zu", u);
        ok_build &= as_problem_add_node(p, name, 2, c, NULL, NULL, &id, &err) == AS_OK;
        snprintf(sn, sizeof sn, "r%zu[x]", u);
        ok_build &= as_problem_set_strategy_name(p, id, 0, sn, &err) == AS_OK;
        snprintf(sn, sizeof sn, "r%zu[y]", u);
        ok_build &= as_problem_set_strategy_name(p, id, 1, sn, &err) == AS_OK;
        ok_build &= as_problem_set_axis_image(p, id, 1, img, &err) == AS_OK;
        if (u > 0)
            ok_build &= as_problem_add_edge(p, u - 1, u, r, &err) == AS_OK;
    }
    ok_build &= as_problem_add_edge(p, 0, RING_N - 1, r, &err) == AS_OK;
    ok_build &= as_problem_validate(p, &err) == AS_OK;
    ok(ok_build, "axis map: ring instance builds (%s)", err.msg);
    ok(as_problem_set_axis_image(p, 0, 2, img, NULL) != AS_OK &&
           as_problem_set_axis_image(p, 0, 1, (size_t[]){2, 0}, NULL) != AS_OK,
       "axis map: another permutation count or an image out of range is refused");
    as_heur_init(&h, p);
    for (u = 0; u < RING_N; u++)
        x[u] = 0;
    v0 = as_heur_eval(&h, x, NULL);
    stuck = !as_heur_improve(&h, x, 20) && !as_heur_chain(&h, x, 10) &&
            !as_heur_block(&h, x, AS_HEUR_BLOCK_UNITS, 3, 0) && !as_heur_relabel(&h, x, 0);
    ok(stuck && as_heur_eval(&h, x, NULL) == v0,
       "axis map: single, pair, chain, block and relabel moves are stuck at %g", v0);
    ok(as_heur_axismap(&h, x, 0), "axis map: the axis-map move moves");
    v = as_heur_eval(&h, x, NULL);
    for (u = 0; u < RING_N; u++)
        all1 &= x[u] == 1;
    ok(all1 && fabs(v - (v0 - 0.1 * RING_N)) <= 1e-9,
       "axis map: every unit at \"[y]\", the optimum %g (%g)", v0 - 0.1 * RING_N, v);
    ok(!as_heur_axismap(&h, x, 0), "axis map: nothing more at the optimum");
    as_heur_free(&h);
    q = as_problem_clone(p);
    ok(as_problem_axis_perms(q) == 1 && as_problem_node(q, 7)->img != NULL &&
           as_problem_node(q, 7)->img[0] == 1 && as_problem_node(q, 7)->img[1] == 0,
       "axis map: a clone keeps the images");
    as_problem_free(q);
    as_problem_free(p);
}

/*
 * Block moves skip a seed whose block tried and failed and has not changed since (the
 * units a failed try moved and moved back keep their change clocks: without that, nothing
 * was ever skipped).  The skip must be exact without a budget: block moves run to the end
 * (a round that keeps nothing), and then a fresh search from the result, which skips
 * nothing in its first round, finds no block move either.  Random instances of 300 units,
 * blocks of 8 units, random starts.
 */
static void
test_block_skip(void)
{
    size_t inst, u, moved = 0, still = 0, runs = 0;
    uint64_t r = 0x2545f4914f6cdd1dull;

    for (inst = 0; inst < 6; inst++) {
        as_random_opts ro;
        as_problem *p;
        as_heur h;
        size_t *x, t;

        as_random_opts_init(&ro);
        ro.seed = 4100 + inst;
        ro.nodes = 300;
        ro.edges = ro.nodes + ro.nodes / 2;
        ro.kmin = 3;
        ro.kmax = 6;
        ro.live_window = 0;
        ro.memory_frac = 0;
        p = as_problem_random(&ro);
        as_heur_init(&h, p);
        x = calloc(h.nu + 1, sizeof *x);
        for (t = 0; t < 4; t++) {
            double v0, v1;
            for (u = 0; u < h.nu; u++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                x[u] = (size_t)(r >> 33) % h.k[u];
            }
            v0 = as_heur_eval(&h, x, NULL);
            moved += as_heur_block(&h, x, 8, 1000, 0);
            v1 = as_heur_eval(&h, x, NULL);
            still += !as_heur_block(&h, x, 8, 1, 0) && v1 <= v0;
            runs++;
        }
        free(x);
        as_heur_free(&h);
        as_problem_free(p);
    }
    ok(moved == runs && still == runs,
       "block moves to the end, skipping unchanged blocks: a fresh search finds no block "
       "move after any of them (%zu of %zu; %zu moved)", still, runs, moved);
}

/* SOLVER with the driver's default reductions (heuristic_bound: the bound pruning's plan
   is the heuristic's start) and up to three parameters. */
static int
run_red(const as_problem *p, const char *solver, const char *p1, const char *p2, const char *p3,
        const char *p4, as_solve_result *res)
{
    as_solve_opts o;
    as_err err = {0};
    const char *params[4] = {p1, p2, p3, p4};

    as_solve_opts_init(&o);
    o.solver = solver;
    o.params = params;
    o.nparams = p4 != NULL ? 4 : p3 != NULL ? 3 : p2 != NULL ? 2 : 1;
    if (as_solve_problem(p, &o, res, &err) != AS_OK || res->nplans != 1) {
        if (err.msg[0] != '\0')
            diag("%s: %s", solver, err.msg);
        if (res->nplans == 0)
            memset(res, 0, sizeof *res);
        else
            as_solve_result_free(res);
        return 0;
    }
    return 1;
}

/*
 * The driver's start for a heuristic (as_solve_problem, heuristic_bound): the bound
 * pruning's plan (AS_REDUCE_BOUND on the problem the heuristic gets: P with followers,
 * constant edges and alias pairs merged), computed here as the driver does.  By default
 * (beam/seed=bound, mcts/start=bound) beam and mcts are never dearer than it, on random
 * budgeted graphs where the raw beam K=1 (beam/polish=0, beam/seed=none) and mcts's search
 * without a start (mcts/start=none) are dearer than it on some.  (mcts from beam K=1's own
 * plan, mcts/start=beam, is not: beam's polish reaches the plan on these small graphs.)
 */
static void
test_seed_bound(void)
{
    int i, dearer = 0, mdearer = 0, never = 1, seeded_ok = 1, mcts_ok = 1, n = 0;
    int said = 1, said_own = 1;
    double own;

    for (i = 0; i < 12; i++) {
        as_random_opts o;
        as_problem *p, *rp = NULL, *bp = NULL;
        as_reduction *red = NULL, *bred = NULL;
        as_reduce_opts ro = {.flags = AS_REDUCE_FOLLOW | AS_REDUCE_CONST | AS_REDUCE_ALIAS,
                             .gap = AS_DEFAULT_GAP, .top = 1};
        as_reduce_opts bo = {.flags = AS_REDUCE_BOUND, .gap = AS_DEFAULT_GAP, .top = 1};
        as_solve_result r;
        as_err err = {0};
        const size_t *st;
        double bobj = INFINITY;
        as_random_opts_init(&o);
        o.seed = (uint64_t)i + 2000;
        o.nodes = 20 + (size_t)(i % 4) * 5;
        o.edges = o.nodes + o.nodes / 3;
        o.kmin = 3;
        o.kmax = 6;
        o.live_window = 8;
        o.memory_frac = 0.05 + 0.1 * (i % 3);
        p = as_problem_random(&o);
        if (as_reduce_ex(p, &ro, &rp, &red, &err) == AS_OK && as_problem_nnodes(rp) > 0 &&
            as_reduce_ex(rp, &bo, &bp, &bred, &err) == AS_OK &&
            (st = as_reduction_start(bred)) != NULL) {
            size_t *mid = as_xcalloc(as_problem_nnodes(rp) + 1, sizeof *mid);
            size_t *full = as_xcalloc(as_problem_nnodes(p) + 1, sizeof *full);
            as_reduction_recover(bred, st, mid);
            if (as_problem_check(rp, mid, &bobj, NULL, NULL) == AS_OK) {
                as_reduction_recover(red, mid, full);
                if (as_problem_check(p, full, &bobj, NULL, NULL) != AS_OK)
                    bobj = INFINITY;
            } else {
                bobj = INFINITY;
            }
            free(mid);
            free(full);
        }
        as_reduction_free(bred);
        as_problem_free(bp);
        as_reduction_free(red);
        as_problem_free(rp);
        if (!isfinite(bobj)) {
            as_problem_free(p);
            continue;
        }
        n++;
        own = INFINITY;
        if (run_red(p, "beam", "beam/width=1", "beam/polish=0", "beam/seed=none", NULL, &r)) {
            own = r.plans[0].objective;
            dearer += own > bobj * (1 + 1e-9);
            said_own &= !r.plans[0].from_start;
            as_solve_result_free(&r);
        }
        if (run_red(p, "beam", "beam/width=1", "beam/polish=0", NULL, NULL, &r)) {
            seeded_ok &= fits(p, &r.plans[0]);
            never &= r.plans[0].objective <= bobj * (1 + 1e-9);
            /* the plan says whether it is the start's: it is exactly when the start (not
               polished: polish=0) is cheaper than the beam's own */
            said &= r.plans[0].from_start == (bobj < own * (1 - 1e-9)) ||
                    fabs(bobj - own) <= 1e-9 * fabs(own);
            as_solve_result_free(&r);
        } else {
            seeded_ok = 0;
        }
        if (run_red(p, "mcts", "mcts/episodes=1", "mcts/start=none", "mcts/polish=0", NULL,
                    &r)) {
            mdearer += r.plans[0].objective > bobj * (1 + 1e-9);
            as_solve_result_free(&r);
        }
        if (run_red(p, "mcts", "mcts/episodes=1", "mcts/start-width=1", "mcts/polish=0", NULL,
                    &r)) {
            mcts_ok &= fits(p, &r.plans[0]) && r.plans[0].objective <= bobj * (1 + 1e-9);
            as_solve_result_free(&r);
        } else {
            mcts_ok = 0;
        }
        as_problem_free(p);
    }
    ok(n >= 8, "the bound pruning gives a plan on %d of 12 budgeted graphs", n);
    ok(dearer > 0, "beam K=1 on its own (polish=0, seed=none) is dearer than the bound "
       "pruning's plan on %d graphs", dearer);
    ok(seeded_ok && never, "beam (seed=bound, the default): never dearer than the bound "
       "pruning's plan");
    ok(said, "beam: the plan says it is the start's exactly when the start beats the "
       "beam's own");
    ok(said_own, "beam/seed=none: no plan says it is the start's");
    ok(mdearer > 0, "mcts's search on its own (start=none, 1 episode, polish=0) is dearer "
       "than the bound pruning's plan on %d graphs", mdearer);
    ok(mcts_ok, "mcts (start=bound, the default): never dearer than the bound pruning's plan");
}

/* SOLVER (one parameter) through the driver, with a time limit of LIMIT s (0: none); its plan
   into *PL (choice copied), 0 when it gives none. */
static int
run_timed(const as_problem *p, const char *solver, const char *param, double limit, as_plan *pl,
          int *timed)
{
    as_solve_opts o;
    as_solve_result r;
    as_err err = {0};
    const char *params[1] = {param};
    size_t n = as_problem_nnodes(p);

    as_solve_opts_init(&o);
    o.solver = solver;
    o.params = params;
    o.nparams = 1;
    o.lim.time_limit_s = limit;
    o.lim.verbosity = 0;
    if (as_solve_problem(p, &o, &r, &err) != AS_OK) { /* r is freed */
        diag("%s: %s", solver, err.msg);
        return 0;
    }
    if (r.nplans != 1) {
        as_solve_result_free(&r);
        return 0;
    }
    *pl = r.plans[0];
    pl->choice = as_xcalloc(n + 1, sizeof *pl->choice);
    memcpy(pl->choice, r.plans[0].choice, n * sizeof *pl->choice);
    *timed = r.start_timed;
    as_solve_result_free(&r);
    return 1;
}

/* A random budgeted instance of N nodes (SEED) for the timing tests below. */
static as_problem *
timing_instance(uint64_t seed, size_t n)
{
    as_random_opts ro;

    as_random_opts_init(&ro);
    ro.seed = seed;
    ro.nodes = n;
    ro.edges = ro.nodes + ro.nodes / 3;
    ro.kmin = 3;
    ro.kmax = 6;
    ro.live_window = 8;
    ro.memory_frac = 0.05;
    return as_problem_random(&ro);
}

/*
 * The same seed gives the same plan under --time-limit (issue 15): the driver's start for
 * beam and mcts (heuristic_bound) does the same work with and without a limit
 * (as_reduce_opts.fixed_work; the limit is only a safety stop, start_timed when it hits).
 * The instance is one where the old timed work differed: the bound pruning with a deadline
 * and without fixed_work lets its branching run on (up to 4096 bounds, not 24: 106 here) and
 * reaches another bound or a cheaper plan in a fraction of a second (checked below).  With
 * that behaviour (fixed_work 0 and bb_evals 0 in heuristic_bound) both driver checks below
 * fail: the bound and plan under the limit are not those without it.  The seed was chosen
 * again when the branching learnt to split where the Lagrangian steps mixed (bb_frac): on
 * the old seed, 3006, the timed work no longer branched further; and again when a leaf's
 * step factor started at least at 1 (BB_THETA, 3d20a81): on 3007 the timed work reached
 * another bound but the same plan.  Seed 3009: 106 bounds against 24, 0.13 s; since the
 * multipliers come from column generation and its cheaper plans are repaired, 58 bounds
 * against 24, another bound (the plan is the same: found without the deadline too).
 */
static void
test_seed_timing(void)
{
    as_problem *p, *rp = NULL, *bp = NULL;
    as_reduction *red = NULL, *bred = NULL;
    as_reduce_opts fo = {.flags = AS_REDUCE_FOLLOW | AS_REDUCE_CONST | AS_REDUCE_ALIAS,
                         .gap = AS_DEFAULT_GAP, .top = 1};
    as_reduce_stats st[3];
    as_err err = {0};
    int i, k, ok_red = 1;
    static const char *const runs[][2] = {{"beam", "beam/width=1"},
                                          {"mcts", "mcts/episodes=50"}};

    p = timing_instance(3009, 80);
    ok_red = as_reduce_ex(p, &fo, &rp, &red, &err) == AS_OK;
    for (i = 0; i < 3 && ok_red; i++) { /* none; a deadline; a deadline with fixed work */
        as_reduce_opts bo = {.flags = AS_REDUCE_BOUND, .gap = AS_DEFAULT_GAP, .top = 1,
                             .deadline = i > 0 ? as_now() + 100 : 0, .fixed_work = i == 2};
        ok_red = as_reduce_ex(rp, &bo, &bp, &bred, &err) == AS_OK;
        if (ok_red)
            st[i] = *as_reduction_stats(bred);
        as_reduction_free(bred);
        as_problem_free(bp);
        bred = NULL;
        bp = NULL;
    }
    /* another bound or another plan: the driver checks below compare both (since the
       Lagrangian repairs its cheaper plans, the plan is found without the deadline too) */
    ok(ok_red && st[1].bb_nodes > st[0].bb_nodes &&
           (st[1].lb > st[0].lb + 1e-6 || st[1].ub < st[0].ub - 1e-6),
       "timing matters here: the bound pruning under a deadline (no fixed work) branches on "
       "(%zu bounds, not %zu) to another bound (%.9g, not %.9g) or plan (%.9g, not %.9g)",
       ok_red ? st[1].bb_nodes : 0, ok_red ? st[0].bb_nodes : 0, ok_red ? st[1].lb : 0,
       ok_red ? st[0].lb : 0, ok_red ? st[1].ub : 0, ok_red ? st[0].ub : 0);
    ok(ok_red && st[2].bb_nodes == st[0].bb_nodes && st[2].lb == st[0].lb &&
           st[2].ub == st[0].ub && !st[2].timed_out,
       "with fixed work the deadline changes nothing: %zu bounds, lb %.9g, plan %.9g",
       ok_red ? st[2].bb_nodes : 0, ok_red ? st[2].lb : 0, ok_red ? st[2].ub : 0);
    as_reduction_free(red);
    as_problem_free(rp);
    for (k = 0; k < 2; k++) {
        as_plan pl[3];
        int got = 1, same = 1, timed = 0, t, m;
        size_t v;
        for (m = 0; m < 3; m++) { /* no limit, then twice under one */
            got = run_timed(p, runs[k][0], runs[k][1], m == 0 ? 0 : 100 + 20 * m, &pl[m], &t);
            if (!got)
                break;
            timed |= m > 0 && t;
        }
        for (i = 1; got && i < 3; i++) {
            for (v = 0; v < as_problem_nnodes(p); v++)
                same &= pl[i].choice[v] == pl[0].choice[v];
            same &= pl[i].objective == pl[0].objective && pl[i].bound == pl[0].bound;
        }
        ok(got && same && !timed,
           "%s: the same plan, objective (%.9g) and bound (%.9g) without a time limit and "
           "twice under one (the start's safety stop not hit)", runs[k][0],
           got ? pl[0].objective : 0, got ? pl[0].bound : 0);
        for (i = 0; i < m; i++)
            free(pl[i].choice);
    }
    as_problem_free(p);
}

/*
 * A time limit that cuts the search is said (issue 15 item 2): as_plan.timed (the CLI's
 * status, and a line on stderr) when mcts runs out of time before its episodes, not when a
 * limit leaves the counted work enough time -- and then the plan is the one without a limit.
 * Before, nothing said it: the plan silently depended on the time.
 */
static void
test_time_cut(void)
{
    as_problem *p;
    as_plan pl[4];
    int got[4], t, i, same = 1;
    size_t v;
    static const char *const runs[][3] = {{"mcts", "mcts/episodes=1000000000", "0.4"},
                                          {"mcts", "mcts/episodes=40", "0"},
                                          {"mcts", "mcts/episodes=40", "90"},
                                          {"beam", "beam/width=4", "90"}};

    p = timing_instance(3006, 60);
    for (i = 0; i < 4; i++)
        got[i] = run_timed(p, runs[i][0], runs[i][1], atof(runs[i][2]), &pl[i], &t);
    ok(got[0] && pl[0].timed && pl[0].nodes < 1000000000L,
       "mcts, 1e9 episodes under a 0.4 s limit: the plan says the limit cut the search "
       "(%ld episodes)", got[0] ? pl[0].nodes : 0L);
    for (v = 0; got[1] && got[2] && v < as_problem_nnodes(p); v++)
        same &= pl[1].choice[v] == pl[2].choice[v];
    ok(got[1] && got[2] && !pl[1].timed && !pl[2].timed && same &&
           pl[1].objective == pl[2].objective,
       "mcts, 40 episodes, without a limit and under 90 s: not cut, the same plan");
    ok(got[3] && !pl[3].timed, "beam K=4 under 90 s: not cut");
    for (i = 0; i < 4; i++)
        if (got[i])
            free(pl[i].choice);
    as_problem_free(p);
}

/*
 * as_solve_result.over: under a check that rejects the heuristic's own plan (and every
 * cheaper one), the plan returned passes it, and the cheapest plan that failed comes back
 * apart when it is cheaper: it fits the rows, costs less than the threshold, and its bound
 * is the returned plan's.  Under a check nothing fails, or nothing passes, there is none
 * (the cheapest plan by the rows is then the answer itself).  solve/fit.c refits from it.
 */
static void
test_over(void)
{
    int i, k, pass, got = 0, bad = 0, none_ok = 1;

    for (i = 0; i < 20; i++) {
        as_problem *p = instance(i);
        for (k = 0; k < 2; k++) {
            const char *solver = k ? "mcts" : "beam";
            const char *params[1] = {k ? "mcts/episodes=100" : "beam/width=4"};
            as_solve_result r0, r;
            as_solve_opts o;
            as_err err = {0};
            fits_thr f = {p, 0, 0};
            if (run(p, solver, AS_REDUCE_ALL, params[0], 1, &r0) == AS_OUTCOME_NOTRUN ||
                r0.nplans == 0) {
                as_solve_result_free(&r0);
                continue;
            }
            for (pass = 0; pass < 3; pass++) {
                as_solve_opts_init(&o);
                o.solver = solver;
                o.params = params;
                o.nparams = 1;
                o.lim.fits = fits_above;
                o.lim.fits_ud = &f;
                /* 0: the plan without a check fails, 1: every plan passes, 2: none does */
                f.thr = pass == 0   ? r0.plans[0].objective + 1e-9 * fabs(r0.plans[0].objective)
                        : pass == 1 ? -INFINITY
                                    : INFINITY;
                if (as_solve_problem(p, &o, &r, &err) != AS_OK) {
                    diag("%s: %s", solver, err.msg);
                    bad++;
                    continue;
                }
                if (pass > 0) {
                    none_ok &= r.over.choice == NULL;
                } else if (r.over.choice != NULL) {
                    as_plan *q = &r.over;
                    got++;
                    if (!(r.nplans == 1 && fits(p, q) && q->objective < f.thr &&
                          r.plans[0].objective >= f.thr &&
                          q->objective < r.plans[0].objective && q->bound <= q->objective &&
                          q->bound == fmin(r.plans[0].bound, q->objective))) {
                        diag("instance %d %s: over %.9g (bound %.9g), plan %.9g (bound "
                             "%.9g), threshold %.9g", i, solver, q->objective, q->bound,
                             r.nplans ? r.plans[0].objective : NAN,
                             r.nplans ? r.plans[0].bound : NAN, f.thr);
                        bad++;
                    }
                }
                as_solve_result_free(&r);
            }
            as_solve_result_free(&r0);
        }
        as_problem_free(p);
    }
    ok(bad == 0 && got > 0, "over: the cheapest plan that failed the check, apart from the "
       "plan that passed, fits the rows and is cheaper (%d instances had one)", got);
    ok(none_ok, "over: none when every plan passes the check, or none does");
}

int
main(void)
{
    int i;

    plan_lazy();
    for (i = 0; i < 20; i++) {
        test_beam_exact(i, 0);
        test_beam_exact(i, AS_REDUCE_ALL);
        test_valid(i);
        test_beam_order(i);
        test_eval(i);
        test_fits(i);
    }
    test_beam_merge();
    test_beam_monotone();
    test_mcts_seed();
    test_megatron("mlp4l-alpa-m4.json");
    test_megatron("mlp4l-alpa-m8.json");
    test_params();
    test_block();
    test_keeper();
    test_relabel();
    test_axismap();
    test_block_skip();
    test_seed_bound();
    test_seed_timing();
    test_time_cut();
    test_over();
    return done_testing();
}
