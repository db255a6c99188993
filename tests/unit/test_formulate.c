/* test_formulate.c -- the cost graph (build, validation, JSON file round
 * trip and errors), the ILP (sizes, names) and the reductions (exact: the
 * optimum of the reduced problem, recovered, equals the original optimum on
 * random instances, checked by enumeration).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formulate/dual.h"
#include "formulate/ilp.h"
#include "formulate/problem.h"
#include "tap.h"

/* The plan after X in odometer order; 0 when X was the last. */
static int
next_plan(const as_problem *p, size_t *x)
{
    size_t v, n = as_problem_nnodes(p);

    for (v = 0; v < n; v++) {
        if (++x[v] < as_problem_node(p, v)->k)
            return 1;
        x[v] = 0;
    }
    return 0;
}

/* Exhaustive optimum of P (HUGE_VAL if infeasible), plan in X. */
static double
best_of(const as_problem *p, size_t *best)
{
    size_t n = as_problem_nnodes(p), *x = calloc(n + 1, sizeof *x);
    double obj, min = HUGE_VAL;

    do {
        if (as_problem_check(p, x, &obj, NULL, NULL) == AS_OK && obj < min) {
            min = obj;
            if (best != NULL)
                memcpy(best, x, n * sizeof *x);
        }
    } while (next_plan(p, x));
    free(x);
    return min;
}

static void
test_build_errors(void)
{
    as_problem *p = as_problem_new();
    double c[3] = {1, 2, 3}, r[9] = {0};
    size_t a, b, id;
    as_err err = {0};

    is_int(as_problem_add_node(p, "a", 3, c, NULL, NULL, &a, &err), AS_OK, "add node a");
    is_int(as_problem_add_node(p, "a", 3, c, NULL, NULL, &id, &err), AS_EUSAGE,
           "duplicate node name rejected");
    is_int(as_problem_add_node(p, "z", 0, c, NULL, NULL, &id, &err), AS_EUSAGE,
           "node without strategies rejected");
    as_problem_add_node(p, "b", 3, c, NULL, NULL, &b, &err);
    is_int(as_problem_add_edge(p, a, 7, r, &err), AS_EUSAGE, "edge to a missing node rejected");
    as_problem_add_edge(p, a, b, r, &err);
    is_int(as_problem_validate(p, &err), AS_OK, "valid problem");
    /* validation is remembered until the problem changes */
    is_int(as_problem_validate(p, &err), AS_OK, "valid problem, again");
    as_problem_set_offset(p, NAN);
    is_int(as_problem_validate(p, &err), AS_EPARSE, "a NaN offset set after validation rejected");
    as_problem_set_offset(p, 0);
    is_int(as_problem_validate(p, &err), AS_OK, "valid again");
    as_problem_set_memory(p, -1);
    is_int(as_problem_validate(p, &err), AS_EPARSE, "a negative budget set after validation "
           "rejected");
    as_problem_set_memory(p, 0);
    as_problem_add_edge(p, b, a, r, &err);
    is_int(as_problem_validate(p, &err), AS_EPARSE, "duplicate (reversed) edge rejected");
    ok(strstr(err.msg, "duplicate") != NULL, "message: %s", err.msg);
    as_problem_free(p);

    p = as_problem_new();
    as_problem_add_node(p, "a", 3, c, NULL, NULL, &a, &err);
    as_problem_add_node(p, "b", 3, c, NULL, NULL, &b, &err);
    as_problem_set_follow(p, a, b, &err);
    as_problem_set_follow(p, b, a, &err);
    is_int(as_problem_validate(p, &err), AS_EPARSE, "follow cycle rejected");
    ok(strstr(err.msg, "cycle") != NULL, "message: %s", err.msg);
    as_problem_free(p);

    p = as_problem_new();
    c[1] = NAN;
    as_problem_add_node(p, "a", 3, c, NULL, NULL, &a, &err);
    is_int(as_problem_validate(p, &err), AS_EPARSE, "NaN cost rejected");
    ok(strstr(err.msg, "not finite") != NULL, "message: %s", err.msg);
    as_problem_free(p);
    c[1] = 2;
    p = as_problem_new();
    as_problem_add_node(p, "a", 3, c, NULL, c, &a, &err);
    as_problem_add_node(p, "b", 2, c, NULL, NULL, &b, &err);
    as_problem_set_follow(p, b, a, &err);
    is_int(as_problem_validate(p, &err), AS_EPARSE, "follow with different strategy counts");
    as_problem_add_edge(p, a, a, r, &err);
    as_problem_free(p);
}

/* Each malformed text must fail with AS_EPARSE and a message containing WANT. */
static void
test_parse_errors(void)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1, 2]}", "<t>:1:"},
        {"garbage", "<t>:1:"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1, NaN]}]}", "<t>:1:"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1, 1e999]}]}", "<t>:1:"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1, 2], \"d\": [1]}]}",
         "nodes[0].d: expected 2 numbers, got 1"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1, 2], \"m\": [1, -4]}]}",
         "nodes[0].m[1]: memory -4 is negative"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1]}], \"edges\": [{\"u\": 0, \"v\": 3, "
         "\"r\": [[0]]}]}", "edges[0].v: node index 3 out of range"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1]}, {\"name\": \"b\", \"c\": [1, 2]}], "
         "\"edges\": [{\"u\": 0, \"v\": 1, \"r\": [[0]]}]}", "edges[0].r[0]: expected 2 numbers"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1]}, {\"name\": \"b\", \"c\": [1]}], \"edges\": "
         "[{\"u\": 0, \"v\": 1, \"r\": [[0]]}, {\"u\": 1, \"v\": 0, \"r\": [[1]]}]}",
         "duplicate of edge 0"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1]}], \"edges\": [{\"u\": 0, \"v\": 0, "
         "\"r\": [[0]]}]}", "self-loop"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1]}, {\"name\": \"a\", \"c\": [1]}]}",
         "duplicate node name 'a'"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1], \"follow\": 0}]}", "follows itself"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1, 2]}, {\"name\": \"b\", \"c\": [1], "
         "\"follow\": 0}]}", "follows node 0 with 2 strategies"},
        {"{\"nodes\": [{\"name\": \"a\", \"c\": [1]}], \"aliases\": [{\"a\": 0, \"b\": 0, "
         "\"incompatible\": [[2]]}]}", "entries must be 0 or 1"},
        {"{\"nodes\": []}", "nodes: expected a non-empty array"},
        {"{\"memory\": -1, \"nodes\": [{\"name\": \"a\", \"c\": [1]}]}", "memory: expected"},
        {"[1, 2]", "expected a JSON object"},
    };
    size_t i;
    as_problem *p;
    as_err err;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(&err, 0, sizeof err);
        p = NULL;
        is_int(as_problem_parse(cases[i].text, strlen(cases[i].text), "<t>", &p, &err),
               AS_EPARSE, "malformed cost graph %zu rejected", i);
        ok(p == NULL && strstr(err.msg, cases[i].want) != NULL, "message '%s' contains '%s'",
           err.msg, cases[i].want);
    }
}

/* Reader errors point at the value they name (as_json_locate). */
static void
test_json_pos(void)
{
    static const char text[] = "{\n  \"nodes\": [\n    {\"name\": \"a\", \"c\": [1, \"x\"]},\n"
                               "    {\"name\": \"b\", \"c\": [2]}\n  ],\n  \"memory\": -1\n}\n";
    static const struct {
        const char *path;
        int line, col;
    } cases[] = {
        {"", 1, 1},          {"nodes", 2, 12},      {"nodes[0]", 3, 5}, {"nodes[0].c[1]", 3, 28},
        {"nodes[1].c", 4, 24}, {"'memory'", 6, 13}, {"nodes[7]", 2, 12}, {"edges", 1, 1},
    };
    as_problem *p = NULL;
    as_err err;
    int line, col;
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int found;

        line = col = 0;
        found = as_json_locate(text, sizeof text - 1, cases[i].path, &line, &col);
        ok(found && line == cases[i].line && col == cases[i].col,
           "'%s' at %d:%d (want %d:%d)", cases[i].path, line, col, cases[i].line, cases[i].col);
    }
    ok(!as_json_locate(text, sizeof text - 1, "node 'a'", &line, &col), "a phrase is not a path");
    {
        /* jansson ends a number at a NUL byte; the scan must step over it (a fuzz finding: hang) */
        static const char nul[] = "{\"a\": [80\0], \"b\": 2}";

        ok(as_json_locate(nul, sizeof nul - 1, "b", &line, &col) && line == 1 && col == 19,
           "a NUL byte after a number is stepped over");
    }
    memset(&err, 0, sizeof err);
    as_problem_parse(text, sizeof text - 1, "<t>", &p, &err);
    is_str(err.msg, "<t>:6:13: memory: expected bytes >= 0", "the reader's message has it");
}

static void
test_roundtrip(void)
{
    as_random_opts o;
    as_problem *p, *q = NULL, *r;
    char *s1, *s2;
    as_err err = {0};
    size_t a;
    double m1[3] = {1, 2, 3};
    const double *mv[1] = {m1};

    as_random_opts_init(&o);
    o.nodes = 12;
    o.edges = 16;
    o.follow = 0.3;
    o.live_window = 3;
    o.aliases = 2;
    o.memory_frac = 0.5;
    p = as_problem_random(&o);
    as_problem_set_strategy_name(p, 0, 1, "S(0)", &err);
    as_problem_find(p, "op0", &a);
    as_problem_add_liveness_m(p, &a, mv, 1, 7, &err);
    as_problem_set_offset(p, 0.25);
    s1 = as_problem_dumps(p);
    is_int(as_problem_parse(s1, strlen(s1), "rt", &q, &err), AS_OK, "written cost graph reads back");
    s2 = q ? as_problem_dumps(q) : as_xstrdup("");
    ok(strcmp(s1, s2) == 0, "write -> read -> write is identical (%zu bytes)", strlen(s1));
    r = as_problem_clone(p);
    free(s2);
    s2 = as_problem_dumps(r);
    ok(strcmp(s1, s2) == 0, "clone is identical");
    free(s1);
    free(s2);
    as_problem_free(r);
    as_problem_free(q);
    as_problem_free(p);
}

/* Entries' memory vectors given by the caller are copied once per distinct value:
   equal copies share one vector (a reduced 3-axis problem's rows repeat them), unequal
   ones do not, and the values stay what was given. */
static void
test_live_shared(void)
{
    as_problem *p = as_problem_new();
    as_err err = {0};
    double c[3] = {1, 2, 3}, m0[3] = {4, 5, 6}, m1[3] = {4, 5, 6}, m2[3] = {4, 5, 7};
    double z0[3] = {0, 1, 2}, z1[3] = {-0.0, 1, 2};
    const double *v01[2] = {m0, m1}, *v2[1] = {m2}, *vz[2] = {z0, z1};
    size_t a, b, ab[2];
    const as_plive *l0, *l1, *l2;

    as_problem_add_node(p, "a", 3, c, NULL, c, &a, &err);
    as_problem_add_node(p, "b", 3, c, NULL, c, &b, &err);
    ab[0] = a;
    ab[1] = b;
    as_problem_add_liveness_m(p, ab, v01, 2, 0, &err);
    as_problem_add_liveness_m(p, &b, v2, 1, 0, &err);
    as_problem_add_liveness_m(p, ab, vz, 2, 0, &err);
    l0 = as_problem_live(p, 0);
    l1 = as_problem_live(p, 1);
    l2 = as_problem_live(p, 2);
    ok(l0->m[0] == l0->m[1] && l0->m[0] != m0, "equal memory vectors: one copy for both");
    ok(l1->m[0] != l0->m[0] && l1->m[0][2] == 7 && l0->m[0][2] == 6,
       "a vector that differs in one strategy gets its own copy");
    ok(l2->m[0] == l2->m[1] && l2->m[1][0] == 0, "-0 and 0 are one value");
    ok(l0->m[0][0] == 4 && l0->m[0][1] == 5 && as_problem_validate(p, &err) == AS_OK,
       "the shared copy holds the values given; the problem is valid");
    as_problem_free(p);
}

static void
test_ilp(void)
{
    const char *top = getenv("top_srcdir");
    char *path = as_xasprintf("%s/tests/data/costgraph/tiny.json", top ? top : ".");
    as_problem *p = NULL;
    as_ilp *ilp = NULL;
    as_ilp_stats st;
    as_err err = {0};
    size_t j;

    is_int(as_problem_read(path, &p, &err), AS_OK, "read tiny.json");
    free(path);
    if (p == NULL)
        return;
    is_int(as_ilp_build(p, NULL, &ilp, &err), AS_OK, "build its ILP");
    as_ilp_stats_get(ilp, &st);
    /* s: 3+2+2+3; e: 3x2 + 2x3 + 3x3 (edge 2 is constant); rows: 4 one_, 5+5+6 marginals, 2 fol_ */
    is_int(st.cols, 31, "31 columns");
    is_int(st.int_cols, 10, "10 binary");
    is_int(st.rows, 22, "22 rows");
    is_double(as_ilp_data(ilp)->offset, 1.0, 1e-12, "constant edge folded into the offset");
    ok(as_ilp_find_col(ilp, "s_3_2", &j) && j == as_ilp_scol(ilp, 3, 2), "s_3_2 names column");
    ok(as_ilp_find_col(ilp, "e_3_2_1", &j) && !as_ilp_data(ilp)->col_int[j], "edge columns are "
       "continuous");
    ok(!as_ilp_find_col(ilp, "e_2_0_0", &j), "no columns for a constant edge");
    as_ilp_free(ilp);
    as_problem_set_memory(p, 1e-3);
    as_ilp_build(p, NULL, &ilp, &err);
    as_ilp_stats_get(ilp, &st);
    {
        size_t t, nb = 0;
        for (t = 0; t < as_problem_nlive(p); t++)
            nb += (size_t)as_problem_live_binds(p, t);
        ok(nb >= 1, "a tiny budget can bind at %zu of %zu points", nb, as_problem_nlive(p));
        is_int(st.rows, 22 + nb, "one memory row per liveness point that can bind");
    }
    as_problem_set_memory(p, 1e12);
    as_ilp_free(ilp);
    as_ilp_build(p, NULL, &ilp, &err);
    as_ilp_stats_get(ilp, &st);
    is_int(st.rows, 22, "no memory rows when no point can bind");
    as_ilp_free(ilp);
    as_problem_free(p);
}

/* Lagrangian bounds the branching of the bound pruning computed (over the instances). */
static size_t bb_nodes;

/* Reduced optimum (recovered) equals the original optimum. */
static void
test_reduce_exact(int seed)
{
    as_random_opts o;
    as_problem *p, *rp;
    as_reduction *red;
    as_err err = {0};
    size_t *x, *full;
    double want, got, obj;
    const as_reduce_stats *st;

    as_random_opts_init(&o);
    o.seed = (uint64_t)seed;
    o.nodes = 6 + seed % 4;
    o.edges = o.nodes + seed % 5;
    o.kmax = 3 + seed % 2;
    o.follow = seed % 3 ? 0.25 : 0;
    o.live_window = seed % 4 == 0 ? 2 : 0;
    o.memory_frac = seed % 4 == 0 ? 0.2 : 0;
    o.aliases = seed % 5 == 0;
    if (seed > 30) { /* aliases that merge (k <= 4: one partner each) or stay rows, budgets */
        o.nodes = 6 + seed % 3;
        o.edges = o.nodes + 1 + seed % 4;
        o.kmax = 3 + seed % 3;
        o.follow = seed % 4 == 0 ? 0.2 : 0;
        o.aliases = 1 + (size_t)seed % 3;
        o.live_window = 2 + (size_t)seed % 3;
        o.memory_frac = seed % 2 ? 0.15 + 0.1 * (seed % 5) : 0;
    }
    p = as_problem_random(&o);
    want = best_of(p, NULL);
    is_int(as_reduce(p, AS_REDUCE_ALL, &rp, &red, &err), AS_OK, "seed %d: reduce", seed);
    x = calloc(as_problem_nnodes(rp) + 1, sizeof *x);
    full = calloc(as_problem_nnodes(p) + 1, sizeof *full);
    got = as_problem_nnodes(rp) > 0 ? best_of(rp, x) : as_problem_offset(rp);
    st = as_reduction_stats(red);
    bb_nodes += st->bb_nodes;
    ok(!(st->lb > want + 1e-9 * fmax(1, fabs(want))), "seed %d: the pruning's bound %.9g (%zu "
       "branching bounds) is below the optimum %.9g", seed, st->lb, st->bb_nodes, want);
    is_double(isinf(want) && isinf(got) ? 0 : got, isinf(want) && isinf(got) ? 0 : want, 1e-9,
              "seed %d: reduced optimum = original (%zu -> %zu nodes, elim "
              "%zu/%zu/%zu/%zu, %zu followers, %zu aliases merged, %zu pruned, %zu dominated)",
              seed, as_problem_nnodes(p), as_problem_nnodes(rp), st->elim[0], st->elim[1],
              st->elim[2], st->single, st->followers, st->aliases, st->pruned, st->dominated);
    if (isfinite(want)) {
        as_reduction_recover(red, x, full);
        ok(as_problem_check(p, full, &obj, NULL, &err) == AS_OK && fabs(obj - want) <= 1e-9 *
           fmax(1, fabs(want)), "seed %d: recovered plan is valid and optimal", seed);
    }
    free(x);
    free(full);
    as_reduction_free(red);
    as_problem_free(rp);
    as_problem_free(p);
}

/*
 * as_reduce_gap: the reduced optimum is within the gap of the original's,
 * and min(reduced optimum, cut) and the pruning's lower bound are bounds.
 */
static void
test_reduce_gap(int seed)
{
    as_random_opts o;
    as_problem *p, *rp;
    as_reduction *red;
    as_err err = {0};
    size_t *x;
    double want, got, gap = 0.05 * (1 + seed % 4);
    const as_reduce_stats *st;
    as_reduce_opts ro = {0};

    as_random_opts_init(&o);
    o.seed = (uint64_t)seed;
    o.nodes = 6 + seed % 3;
    o.edges = o.nodes + 1 + seed % 4;
    o.kmax = 3 + seed % 3;
    o.aliases = (size_t)seed % 2;
    o.live_window = 2 + (size_t)seed % 3;
    o.memory_frac = seed % 3 ? 0.15 + 0.1 * (seed % 5) : 0;
    p = as_problem_random(&o);
    want = best_of(p, NULL);
    ro.flags = AS_REDUCE_ALL;
    ro.gap = gap;
    ro.top = 1;
    is_int(as_reduce_ex(p, &ro, &rp, &red, &err), AS_OK, "seed %d: reduce", seed);
    x = calloc(as_problem_nnodes(rp) + 1, sizeof *x);
    got = as_problem_nnodes(rp) > 0 ? best_of(rp, x) : as_problem_offset(rp);
    st = as_reduction_stats(red);
    if (isinf(want)) {
        ok(isinf(got), "seed %d: gap %g: infeasible stays infeasible", seed, gap);
    } else {
        ok(got >= want - 1e-9 * fabs(want) && got * (1 - gap) <= want + 1e-9 * fabs(want),
           "seed %d: gap %g: reduced optimum %.9g within the gap of %.9g (cut %.9g, %zu pruned)",
           seed, gap, got, want, st->cut, st->pruned);
        bb_nodes += st->bb_nodes;
        ok(fmin(got, st->cut) <= want + 1e-9 * fabs(want) &&
           !(st->lb > want + 1e-9 * fabs(want)), "seed %d: gap %g: min(reduced optimum, cut) "
           "and the pruning's bound are lower bounds", seed, gap);
    }
    free(x);
    as_reduction_free(red);
    as_problem_free(rp);
    as_problem_free(p);
}

/*
 * as_reduce_opts.incumbent: the pruning starts from a caller's plan that fits (the dearest
 * plan that fits, then the optimum itself: its cost is then the exact threshold), and the
 * reduced optimum, recovered, is still the original's; the pruning's bound stays below it.
 */
static void
test_reduce_incumbent(int seed)
{
    as_random_opts o;
    as_problem *p, *rp;
    as_reduction *red;
    as_err err = {0};
    size_t n, *x, *y, *inc[2], *full;
    double want, worst = -HUGE_VAL, got, obj;
    int which;

    as_random_opts_init(&o);
    o.seed = (uint64_t)seed + 1000;
    o.nodes = 6 + seed % 3;
    o.edges = o.nodes + 1 + seed % 4;
    o.kmax = 3 + seed % 3;
    o.follow = seed % 4 == 0 ? 0.2 : 0;
    o.aliases = (size_t)seed % 3;
    o.live_window = 2 + (size_t)seed % 3;
    o.memory_frac = 0.15 + 0.1 * (seed % 5);
    p = as_problem_random(&o);
    n = as_problem_nnodes(p);
    inc[0] = calloc(n + 1, sizeof *inc[0]);
    inc[1] = calloc(n + 1, sizeof *inc[1]);
    x = calloc(n + 1, sizeof *x);
    want = best_of(p, inc[1]);
    do { /* the dearest plan that fits */
        if (as_problem_check(p, x, &obj, NULL, NULL) == AS_OK && obj > worst) {
            worst = obj;
            memcpy(inc[0], x, n * sizeof *x);
        }
    } while (next_plan(p, x));
    free(x);
    for (which = 0; which < 2 && isfinite(want); which++) {
        as_reduce_opts ro = {.flags = AS_REDUCE_ALL, .top = 1, .incumbent = inc[which]};
        is_int(as_reduce_ex(p, &ro, &rp, &red, &err), AS_OK, "seed %d: reduce from a plan",
               seed);
        y = calloc(as_problem_nnodes(rp) + 1, sizeof *y);
        full = calloc(n + 1, sizeof *full);
        got = as_problem_nnodes(rp) > 0 ? best_of(rp, y) : as_problem_offset(rp);
        bb_nodes += as_reduction_stats(red)->bb_nodes;
        is_double(got, want, 1e-9, "seed %d: from the %s plan that fits (%.9g): reduced optimum "
                  "= original (%zu pruned)", seed, which ? "cheapest" : "dearest",
                  which ? want : worst, as_reduction_stats(red)->pruned);
        if (as_problem_nnodes(rp) > 0) { /* the solver's start: no dearer than the caller's */
            const size_t *st = as_reduction_start(red);
            double sc = HUGE_VAL;
            if (st != NULL) {
                memcpy(y, st, as_problem_nnodes(rp) * sizeof *y);
                as_reduction_recover(red, y, full);
                if (as_problem_check(p, full, &sc, NULL, &err) != AS_OK)
                    sc = HUGE_VAL;
            }
            ok(sc <= (which ? want : worst) + 1e-9 * fabs(worst), "seed %d: start plan %.9g, "
               "no dearer than the caller's", seed, sc);
        }
        got = as_problem_nnodes(rp) > 0 ? best_of(rp, y) : as_problem_offset(rp);
        as_reduction_recover(red, y, full);
        ok(as_problem_check(p, full, &obj, NULL, &err) == AS_OK &&
           fabs(obj - want) <= 1e-9 * fmax(1, fabs(want)) &&
           !(as_reduction_stats(red)->lb > want + 1e-9 * fabs(want)),
           "seed %d: recovered plan is valid and optimal, the pruning's bound below it", seed);
        free(y);
        free(full);
        as_reduction_free(red);
        as_problem_free(rp);
    }
    free(inc[0]);
    free(inc[1]);
    as_problem_free(p);
}

/*
 * The bound pruning alone (no eliminations, no dominance: the rounds see every node) on
 * budgeted instances whose rounded plans are often not optimal: its bound, raised by the
 * branching on the rows' nodes, stays at or below the optimum found by enumeration.
 */
/* Timed instances of test_reduce_branch that branched, and the most bounds one took. */
static size_t bb_timed, bb_most;

/*
 * TIMED: under a deadline, where the branching goes on (best first, each leaf split on a node
 * of its own plan) until every leaf reaches the plan or the time is out, not 24 bounds.
 */
static void
test_reduce_branch(int seed, int timed)
{
    as_random_opts o;
    as_problem *p, *rp;
    as_reduction *red;
    as_err err = {0};
    double want;
    const as_reduce_stats *st;
    as_reduce_opts ro = {.flags = AS_REDUCE_BOUND, .top = 1};

    if (timed) {
        ro.deadline = as_now() + 2;
        ro.abort_at = ro.deadline + 1;
    }

    as_random_opts_init(&o);
    o.seed = (uint64_t)seed + 2000;
    o.nodes = timed ? 9 : 8; /* timed: 9 nodes of up to 5 strategies branch more often */
    o.edges = 12 + seed % 4;
    o.kmax = timed ? 5 : 4;
    o.live_window = 3 + (size_t)seed % 3;
    o.memory_frac = timed ? 0.05 + 0.02 * (seed % 6) : 0.1 + 0.05 * (seed % 6);
    p = as_problem_random(&o);
    want = best_of(p, NULL);
    is_int(as_reduce_ex(p, &ro, &rp, &red, &err), AS_OK, "seed %d: bound only", seed);
    st = as_reduction_stats(red);
    bb_nodes += st->bb_nodes;
    if (timed && st->bb_nodes > 0)
        bb_timed++;
    if (timed && st->bb_nodes > bb_most)
        bb_most = st->bb_nodes;
    ok(isinf(want) || !(st->lb > want + 1e-9 * fmax(1, fabs(want))), "seed %d%s: bound %.9g "
       "(%zu branching bounds, plan %.9g) at most the optimum %.9g", seed,
       timed ? " (timed)" : "", st->lb, st->bb_nodes, st->ub, want);
    /* the plan may come from a leaf of the branching: a plan, so no cheaper than the optimum */
    ok(isinf(want) || !(st->ub < want - 1e-9 * fmax(1, fabs(want))), "seed %d%s: plan %.9g at "
       "least the optimum %.9g", seed, timed ? " (timed)" : "", st->ub, want);
    as_reduction_free(red);
    as_problem_free(rp);
    as_problem_free(p);
}

static size_t bb_mixed, bb_closed, bb_plain_runs, bb_plain_mixed;

/*
 * A deep branching (up to 200 bounds, no deadline) on binding budgets: its leaves split where
 * their Lagrangian steps chose between strategies.  Its bound stays at most the optimum
 * (enumeration), and its plan at least.
 */
static void
test_reduce_branch_deep(int seed)
{
    as_random_opts o;
    as_problem *p, *rp;
    as_reduction *red;
    as_err err = {0};
    double want;
    const as_reduce_stats *st;
    as_reduce_opts ro = {.flags = AS_REDUCE_BOUND, .top = 1, .bb_evals = 200};

    as_random_opts_init(&o);
    o.seed = (uint64_t)seed + 5000;
    o.nodes = 10;
    o.edges = 13 + seed % 5;
    o.kmax = 4;
    o.live_window = 3 + (size_t)seed % 4;
    o.memory_frac = 0.1 + 0.08 * (seed % 5);
    p = as_problem_random(&o);
    want = best_of(p, NULL);
    is_int(as_reduce_ex(p, &ro, &rp, &red, &err), AS_OK, "deep %d: bound only", seed);
    st = as_reduction_stats(red);
    bb_mixed += st->bb_mixed;
    bb_closed += isfinite(want) && st->lb >= want - 1e-9 * fmax(1, fabs(want));
    ok(isinf(want) || !(st->lb > want + 1e-9 * fmax(1, fabs(want))), "deep %d: bound %.9g (%zu "
       "branching bounds, %zu mixed splits) at most the optimum %.9g", seed, st->lb,
       st->bb_nodes, st->bb_mixed, want);
    ok(isinf(want) || !(st->ub < want - 1e-9 * fmax(1, fabs(want))), "deep %d: plan %.9g at "
       "least the optimum %.9g", seed, st->ub, want);
    if (st->bb_mixed > 0) { /* again as the heuristics' start runs it: no mixed splits */
        as_reduce_opts po = ro;
        as_reduction_free(red);
        as_problem_free(rp);
        po.bb_plain = 1;
        is_int(as_reduce_ex(p, &po, &rp, &red, &err), AS_OK, "deep %d: bb_plain", seed);
        st = as_reduction_stats(red);
        bb_plain_runs++;
        bb_plain_mixed += st->bb_mixed;
        ok(isinf(want) || (!(st->lb > want + 1e-9 * fmax(1, fabs(want))) &&
                           !(st->ub < want - 1e-9 * fmax(1, fabs(want)))),
           "deep %d, bb_plain: bound %.9g, plan %.9g, optimum %.9g", seed, st->lb, st->ub, want);
    }
    as_reduction_free(red);
    as_problem_free(rp);
    as_problem_free(p);
}

/*
 * A frustrated 3-cycle (each edge costs 1 when its ends agree, 2-state nodes):
 * TRW-S's bound stays below the optimum, so a run goes on until it stalls;
 * with its deadline already passed it stops after one sweep, and what it
 * returns is still a plan and a bound.
 */
static void
test_mrf_deadline(void)
{
    static const double c0[2] = {0, 0.1}, c1[2] = {0.2, 0}, c2[2] = {0, 0};
    static const double agree[4] = {1, 0, 0, 1};
    static const size_t k[3] = {2, 2, 2}, eu[3] = {0, 1, 0}, ev[3] = {1, 2, 2};
    const double *c[3] = {c0, c1, c2}, *r[3] = {agree, agree, agree};
    as_mrf g = {.n = 3, .k = k, .c = c, .m = 3, .eu = eu, .ev = ev, .r = r};
    as_mrf_result res;
    as_mrf_state *st = as_mrf_state_new(&g);

    as_mrf_state_run(st, 300, &res);
    ok(res.iters > 1, "mrf: without a deadline the run takes %d sweeps", res.iters);
    ok(res.lb <= res.ub + 1e-12, "mrf: bound %g <= plan %g", res.lb, res.ub);
    as_mrf_result_free(&res, g.n);
    as_mrf_state_set_deadline(st, as_now() - 1);
    as_mrf_state_run(st, 300, &res);
    ok(res.iters == 1, "mrf: a passed deadline stops the run after one sweep (%d)", res.iters);
    ok(res.lb <= res.ub + 1e-12 && res.ub >= 1 - 1e-12,
       "mrf: it still returns a plan (%g) and a bound (%g)", res.ub, res.lb);
    as_mrf_result_free(&res, g.n);
    /* a floor: past the deadline the run still makes its sweeps, unless the hard stop
       passed too */
    as_mrf_state_set_floor(st, 5, as_now() + 600);
    as_mrf_state_run(st, 300, &res);
    ok(res.iters == 5, "mrf: past the deadline a floor of 5 sweeps makes 5 (%d)", res.iters);
    ok(res.lb <= res.ub + 1e-12, "mrf: floor: bound %g <= plan %g", res.lb, res.ub);
    as_mrf_result_free(&res, g.n);
    as_mrf_state_set_floor(st, 5, as_now() - 1);
    as_mrf_state_run(st, 300, &res);
    ok(res.iters == 1, "mrf: a passed hard stop ends the run after one sweep (%d)", res.iters);
    as_mrf_result_free(&res, g.n);
    as_mrf_state_free(st);
}

/*
 * Message passing over classes of identical rows and columns (resharding matrices depend
 * on the layouts only) gives the same numbers as over the plain matrices: random cyclic
 * graphs whose matrices repeat rows and columns (k 6-24, a few layouts each), bound,
 * plan, sweeps and every reduced cost equal bit for bit; and on a tree the bound meets
 * the plan (the local polytope is exact there).
 */
static void
test_mrf_classes(void)
{
    int seed, bad = 0, tree_bad = 0, compressed = 0;

    for (seed = 1; seed <= 12; seed++) {
        size_t n = 5 + (size_t)seed % 4, m = seed % 3 == 0 ? n - 1 : n + 2 + (size_t)seed % 3;
        size_t k[12], eu[16], ev[16], i, j, p, q, lay[12][24];
        double *c[12], *r[16];
        as_mrf g;
        as_mrf_result a, b;
        uint64_t x = (uint64_t)seed * 0x9e3779b97f4a7c15ULL;
#define RND() (x = x * 6364136223846793005ULL + 1442695040888963407ULL, (x >> 33))
        for (i = 0; i < n; i++) {
            k[i] = 6 + RND() % 19;
            c[i] = calloc(k[i], sizeof *c[i]);
            for (p = 0; p < k[i]; p++) {
                c[i][p] = (double)(RND() % 1000) / 7.0;
                lay[i][p] = RND() % 4; /* the strategy's layout */
            }
        }
        for (j = 0; j < m; j++) { /* a tree on the first n - 1 edges, then chords */
            eu[j] = j < n - 1 ? RND() % (j + 1) : RND() % n;
            ev[j] = j < n - 1 ? j + 1 : (eu[j] + 1 + RND() % (n - 1)) % n;
            r[j] = calloc(k[eu[j]] * k[ev[j]], sizeof *r[j]);
        }
        for (j = 0; j < m; j++) {
            double t[4][4];
            for (p = 0; p < 4; p++)
                for (q = 0; q < 4; q++)
                    t[p][q] = p == q ? 0 : (double)(1 + RND() % 500) / 3.0;
            for (p = 0; p < k[eu[j]]; p++)
                for (q = 0; q < k[ev[j]]; q++)
                    r[j][p * k[ev[j]] + q] = t[lay[eu[j]][p]][lay[ev[j]][q]];
        }
        g = (as_mrf){.n = n, .k = k, .c = (const double *const *)c, .m = m, .eu = eu, .ev = ev,
                     .r = (const double *const *)r};
        as_mrf_no_classes = 1;
        as_mrf_dual(&g, 300, &a);
        as_mrf_no_classes = 0;
        as_mrf_dual(&g, 300, &b);
        if (a.lb != b.lb || a.ub != b.ub || a.iters != b.iters)
            bad++;
        for (i = 0; i < n; i++) {
            if (a.plan[i] != b.plan[i] || memcmp(a.gap[i], b.gap[i], k[i] * sizeof *a.gap[i]))
                bad++;
            compressed += k[i] > 8; /* 4 layouts: rows and columns repeat */
        }
        if (m == n - 1 && fabs(b.ub - b.lb) > 1e-9 * fabs(b.ub))
            tree_bad++;
        as_mrf_result_free(&a, n);
        as_mrf_result_free(&b, n);
        for (i = 0; i < n; i++)
            free(c[i]);
        for (j = 0; j < m; j++)
            free(r[j]);
#undef RND
    }
    ok(compressed > 0, "mrf classes: instances with repeated rows and columns (%d nodes)",
       compressed);
    ok(bad == 0, "mrf classes: bound, plan, sweeps and reduced costs equal with and without "
       "the classes (%d differences)", bad);
    ok(tree_bad == 0, "mrf classes: on trees the bound meets the plan (%d misses)", tree_bad);
}

/*
 * The reduced costs against enumeration: on random cyclic MRFs (k 2-4, 5-7 nodes), after
 * 1, 2 and 300 sweeps, every plan with s_v = p costs at least lb + gap[v][p] (the cheapest
 * such plan found by enumerating them all), and the edges' share makes some of them
 * tight where the nodes' own reduced costs are flat.
 */
static void
test_mrf_gaps(void)
{
    int seed, bad = 0, tight = 0, flat = 0, runs = 0;

    for (seed = 1; seed <= 30; seed++) {
        size_t n = 5 + (size_t)seed % 3, m = n + 1 + (size_t)seed % 3;
        size_t k[8], eu[12], ev[12], i, j, p, plan[8], tot = 1, code, it;
        double *c[8], *r[12], best[8][4];
        static const int iters[3] = {1, 2, 300};
        as_mrf g;
        uint64_t x = (uint64_t)seed * 0x2545f4914f6cdd1dULL;
#define RND() (x = x * 6364136223846793005ULL + 1442695040888963407ULL, (x >> 33))
        for (i = 0; i < n; i++) {
            k[i] = 2 + RND() % 3;
            tot *= k[i];
            c[i] = calloc(k[i], sizeof *c[i]);
            for (p = 0; p < k[i]; p++)
                c[i][p] = (double)(RND() % 100) / 7.0;
        }
        for (j = 0; j < m; j++) {
            eu[j] = j < n - 1 ? RND() % (j + 1) : RND() % n;
            ev[j] = j < n - 1 ? j + 1 : (eu[j] + 1 + RND() % (n - 1)) % n;
            r[j] = calloc(k[eu[j]] * k[ev[j]], sizeof *r[j]);
            for (p = 0; p < k[eu[j]] * k[ev[j]]; p++)
                r[j][p] = (double)(RND() % 300) / 11.0;
        }
        g = (as_mrf){.n = n, .k = k, .c = (const double *const *)c, .m = m, .eu = eu, .ev = ev,
                     .r = (const double *const *)r};
        for (i = 0; i < n; i++)
            for (p = 0; p < 4; p++)
                best[i][p] = INFINITY;
        for (code = 0; code < tot; code++) {
            size_t y = code;
            double v;
            for (i = 0; i < n; i++) {
                plan[i] = y % k[i];
                y /= k[i];
            }
            v = as_mrf_eval(&g, plan);
            for (i = 0; i < n; i++)
                if (v < best[i][plan[i]])
                    best[i][plan[i]] = v;
        }
        for (it = 0; it < 3; it++) {
            as_mrf_result a;
            as_mrf_state *st = as_mrf_state_new(&g);
            as_mrf_state_run(st, iters[it], &a);
            runs++;
            for (i = 0; i < n; i++) {
                for (p = 0; p < k[i]; p++) {
                    double want = a.lb + a.gap[i][p];
                    if (want > best[i][p] + 1e-9 * fabs(best[i][p]))
                        bad++;
                    if (fabs(want - best[i][p]) <= 1e-9 * fabs(best[i][p]) &&
                        a.gap[i][p] > 1e-6)
                        tight++;
                }
            }
            for (i = 0; i < n; i++) { /* nodes handing all of t_v on: flat node costs */
                double lo = INFINITY, hi = -INFINITY;
                for (p = 0; p < k[i]; p++) {
                    lo = fmin(lo, a.gap[i][p]);
                    hi = fmax(hi, a.gap[i][p]);
                }
                flat += hi > lo + 1e-6;
            }
            as_mrf_result_free(&a, n);
            as_mrf_state_free(st);
        }
        for (i = 0; i < n; i++)
            free(c[i]);
        for (j = 0; j < m; j++)
            free(r[j]);
#undef RND
    }
    ok(bad == 0, "mrf gaps: on %d runs every plan with s_v = p costs at least lb + gap[v][p] "
       "(%d violations against enumeration)", runs, bad);
    /* the nodes' own reduced costs alone: 36 tight, 197 nodes not flat */
    ok(tight > 50 && flat > 300, "mrf gaps: with the edges' share %d reduced costs are tight, "
       "%d nodes not flat", tight, flat);
}

/* A passed abort time stops the reductions while they build the memory rows (gpt3-175b's
   with every resharded copy took 9 s past the limit): AS_ESOLVER, even with few edges. */
static void
test_reduce_abort_rows(void)
{
    static const double c[2] = {1, 2}, d[2] = {0, 0}, m[2] = {4, 1}, r[4] = {0, 1, 1, 0};
    as_problem *p = as_problem_new();
    as_reduce_opts ro = {.flags = AS_REDUCE_ALL};
    as_problem *q = NULL;
    as_reduction *red = NULL;
    as_err err = {0};
    size_t v[3], t, nb = 0;

    for (t = 0; t < 3; t++) {
        char name[8];
        snprintf(name, sizeof name, "n%zu", t);
        as_problem_add_node(p, name, 2, c, d, m, &v[t], &err);
    }
    as_problem_add_edge(p, v[0], v[1], r, &err);
    as_problem_add_edge(p, v[1], v[2], r, &err);
    for (t = 0; t < 40; t++)
        as_problem_add_liveness(p, v, 1 + t % 3, 0.01 * (double)t, &err);
    as_problem_set_memory(p, 8);
    for (t = 0; t < as_problem_nlive(p); t++)
        nb += (size_t)as_problem_live_binds(p, t);
    ok(nb >= 16, "rows: %zu of %zu points can bind", nb, as_problem_nlive(p));
    is_int(as_reduce_ex(p, &ro, &q, &red, &err), AS_OK, "rows: reduce without an abort time");
    as_problem_free(q);
    as_reduction_free(red);
    q = NULL;
    red = NULL;
    ro.abort_at = as_now() - 1;
    is_int(as_reduce_ex(p, &ro, &q, &red, &err), AS_ESOLVER,
           "rows: a passed abort time stops the reductions (%s)", err.msg);
    ok(q == NULL && red == NULL, "rows: no problem out");
    as_problem_free(p);
}

/*
 * The reductions' shortcuts (rows of an elimination taken from an equal row) change nothing:
 * the reduced problem (written with 17 digits) and the recovered plan are the same with
 * and without them, on instances with many strategies per node (4 spec labels: rows repeat).
 */
static void
test_reduce_shortcuts(void)
{
    int seed;
    size_t diff = 0, runs = 0, shortcuts = 0;

    for (seed = 1; seed <= 80; seed++) {
        as_random_opts o;
        as_problem *p, *rp[2];
        as_reduction *red[2];
        as_err err = {0};
        char *d[2];
        int plain;

        as_random_opts_init(&o);
        o.seed = (uint64_t)seed + 1000;
        o.nodes = 8 + seed % 5;
        o.edges = o.nodes + seed % 4;
        o.kmin = 4;
        o.kmax = 6 + seed % 4;
        o.follow = seed % 3 ? 0.2 : 0;
        o.live_window = seed % 4 == 0 ? 2 : 0;
        o.memory_frac = seed % 4 == 0 ? 0.3 : 0;
        if (seed > 40) { /* budgets everywhere: work_refresh's witnesses (rows lose entries
                            and whole rows as strategies go) */
            o.live_window = 2 + (size_t)seed % 3;
            o.memory_frac = 0.1 + 0.05 * (seed % 5);
        }
        p = as_problem_random(&o);
        for (plain = 0; plain < 2; plain++) {
            size_t before = as_reduce_shortcuts;
            as_reduce_plain = plain;
            rp[plain] = NULL;
            red[plain] = NULL;
            if (as_reduce(p, AS_REDUCE_ALL, &rp[plain], &red[plain], &err) != AS_OK) {
                d[plain] = as_xstrdup("error");
                continue;
            }
            d[plain] = as_problem_dumps(rp[plain]);
            if (!plain)
                shortcuts += as_reduce_shortcuts - before;
        }
        as_reduce_plain = 0;
        runs++;
        if (strcmp(d[0], d[1]) != 0) {
            diff++;
        } else if (rp[0] != NULL && rp[1] != NULL) {
            size_t nr = as_problem_nnodes(rp[0]), n = as_problem_nnodes(p);
            size_t *x = calloc(nr + 1, sizeof *x), *f0 = calloc(n + 1, sizeof *f0);
            size_t *f1 = calloc(n + 1, sizeof *f1);
            if (nr > 0)
                best_of(rp[0], x);
            as_reduction_recover(red[0], x, f0);
            as_reduction_recover(red[1], x, f1);
            diff += memcmp(f0, f1, n * sizeof *f0) != 0;
            free(x);
            free(f0);
            free(f1);
        }
        for (plain = 0; plain < 2; plain++) {
            free(d[plain]);
            if (red[plain] != NULL)
                as_reduction_free(red[plain]);
            if (rp[plain] != NULL)
                as_problem_free(rp[plain]);
        }
        as_problem_free(p);
    }
    /* parallel edges whose sum is constant (edge_into drops it, the grouped sums fall back),
       one of them reversed, and an edge inside a group */
    for (seed = 0; seed < 2; seed++) {
        as_problem *p = as_problem_new(), *rp[2];
        as_reduction *red[2];
        as_err err = {0};
        double c[2] = {1, 2}, r1[4] = {0, 1, 0, 0}, r2[4] = {1, 0, 1, 1}, r3[4] = {2, 0, 5, 1};
        double r4[4] = {1, 3, 0, 2};
        size_t x, x2, x3, y, z;
        char *d[2];
        int plain;

        as_problem_add_node(p, "x", 2, c, NULL, NULL, &x, &err);
        as_problem_add_node(p, "x2", 2, c, NULL, NULL, &x2, &err);
        as_problem_add_node(p, "x3", 2, c, NULL, NULL, &x3, &err);
        as_problem_add_node(p, "y", 2, c, NULL, NULL, &y, &err);
        as_problem_add_node(p, "z", 2, c, NULL, NULL, &z, &err);
        as_problem_set_follow(p, x2, x, &err);
        as_problem_set_follow(p, x3, x, &err);
        as_problem_add_edge(p, x, y, r1, &err);
        if (seed == 0)
            as_problem_add_edge(p, x2, y, r2, &err); /* r1 + r2: all 1 */
        else
            as_problem_add_edge(p, y, x2, r2, &err); /* reversed: not constant */
        as_problem_add_edge(p, x, x2, r4, &err);
        as_problem_add_edge(p, y, z, r3, &err);
        as_problem_add_edge(p, x3, y, r4, &err); /* after a drop: a new edge, after y - z */
        as_problem_add_edge(p, x, z, r4, &err);
        as_problem_add_edge(p, x2, z, r3, &err);
        for (plain = 0; plain < 2; plain++) {
            as_reduce_plain = plain;
            is_int(as_reduce(p, AS_REDUCE_FOLLOW | AS_REDUCE_CONST, &rp[plain], &red[plain], &err),
                   AS_OK, "reduce shortcuts: parallel edges %d, plain %d", seed, plain);
            d[plain] = as_problem_dumps(rp[plain]);
        }
        as_reduce_plain = 0;
        ok(strcmp(d[0], d[1]) == 0, "reduce shortcuts: parallel edges %d: the same reduced problem "
           "(offset %g, %zu edges)", seed, as_problem_offset(rp[0]), as_problem_nedges(rp[0]));
        for (plain = 0; plain < 2; plain++) {
            free(d[plain]);
            as_reduction_free(red[plain]);
            as_problem_free(rp[plain]);
        }
        as_problem_free(p);
    }
    ok(shortcuts > 0, "reduce shortcuts: they ran (%zu times on %zu instances)", shortcuts, runs);
    ok(diff == 0, "reduce shortcuts: reduced problems and recovered plans equal with and without "
       "them (%zu differences)", diff);
}

/*
 * A stop time (as_mrf_state_set_stop): a run past it gives up at once, flagged, and
 * as_mrf_state_new_until returns NULL once it passes while the classes are built; a stop
 * that does not come changes nothing (the same bound, plan and sweeps).
 */
static void
test_mrf_stop(void)
{
    enum { N = 41, K = 8 };
    static size_t k[N], eu[N], ev[N];
    static double cc[N][K], rr[N][K * K];
    const double *c[N], *r[N];
    as_mrf g;
    as_mrf_result a, b;
    as_mrf_state *st;
    size_t i, p;
    uint64_t x = 12345;
    int same = 1;

    for (i = 0; i < N; i++) { /* an odd cycle of N nodes, K strategies in 2 layouts that
                                 clash when equal: frustrated, TRW-S runs many sweeps */
        k[i] = K;
        eu[i] = i;
        ev[i] = (i + 1) % N;
        for (p = 0; p < K; p++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            cc[i][p] = (double)(x >> 54);
        }
        for (p = 0; p < K * K; p++)
            rr[i][p] = (p / K) % 2 != (p % K) % 2 ? 0 : 1000 + (double)((p * 7 + i) % 5);
        c[i] = cc[i];
        r[i] = rr[i];
    }
    g = (as_mrf){.n = N, .k = k, .c = c, .m = N, .eu = eu, .ev = ev, .r = r};
    ok(as_mrf_state_new_until(&g, as_now() - 1) == NULL,
       "mrf stop: a passed stop ends building the classes (NULL)");
    st = as_mrf_state_new(&g);
    as_mrf_state_run(st, 300, &a);
    as_mrf_state_free(st);
    st = as_mrf_state_new_until(&g, as_now() + 600);
    ok(st != NULL, "mrf stop: a stop to come builds the state");
    as_mrf_state_set_stop(st, as_now() + 600);
    as_mrf_state_run(st, 300, &b);
    ok(!a.stopped && !b.stopped, "mrf stop: runs before their stop are not flagged");
    for (i = 0; i < N; i++)
        same &= a.plan[i] == b.plan[i] && memcmp(a.gap[i], b.gap[i], K * sizeof **a.gap) == 0;
    ok(same && a.lb == b.lb && a.ub == b.ub && a.iters == b.iters && a.iters > 1,
       "mrf stop: a stop that does not come changes nothing (%d sweeps, lb %g)", a.iters, a.lb);
    as_mrf_result_free(&a, N);
    as_mrf_result_free(&b, N);
    as_mrf_state_set_stop(st, as_now() - 1);
    as_mrf_state_run(st, 300, &b);
    ok(b.stopped && b.iters == 0, "mrf stop: a passed stop ends the run in its first sweep "
       "(stopped %d, %d sweeps)", b.stopped, b.iters);
    as_mrf_result_free(&b, N);
    as_mrf_state_free(st);
}

/*
 * The caller's own plan (as_reduce_opts.own_plan, the sweep's sibling start): out of time
 * the reductions give up (AS_ESOLVER) instead of running the first bound round for a plan
 * of their own, whether the round would start past the deadline or its TRW-S passes the
 * abort time; without own_plan the same calls give a plan (the first round runs); with
 * time to spare own_plan changes nothing.
 */
static void
test_reduce_own_plan(void)
{
    as_random_opts o;
    as_problem *p, *q = NULL;
    as_reduction *red = NULL;
    as_err err = {0};
    as_reduce_opts ro = {.flags = AS_REDUCE_BOUND};
    size_t *x;
    char *d0, *d1;
    int own, rc[2][2];

    as_random_opts_init(&o);
    o.seed = 77;
    o.nodes = 12;
    o.edges = 14; /* under 16: the edges' abort check does not come first */
    o.kmin = 4;
    o.kmax = 8;
    p = as_problem_random(&o);
    x = calloc(as_problem_nnodes(p) + 1, sizeof *x);
    ro.own_obj = as_problem_eval(p, x); /* a plan of the caller */
    for (own = 0; own < 2; own++) {
        ro.own_plan = own;
        /* the first round would start past the deadline */
        ro.deadline = as_now() - 1;
        ro.abort_at = as_now() + 600;
        rc[own][0] = as_reduce_ex(p, &ro, &q, &red, &err);
        ok(rc[own][0] != AS_OK || (q != NULL && as_reduction_stats(red)->bound_rounds == 1),
           "own plan %d: past the deadline, a reduction that ends ran its first round", own);
        as_problem_free(q);
        as_reduction_free(red);
        q = NULL;
        red = NULL;
        /* no deadline, but the abort time passed: the round's TRW-S stops (without own_plan
           nothing checks it any more: the round runs) */
        ro.deadline = 0;
        ro.abort_at = as_now() - 1;
        rc[own][1] = as_reduce_ex(p, &ro, &q, &red, &err);
        as_problem_free(q);
        as_reduction_free(red);
        q = NULL;
        red = NULL;
    }
    ok(rc[0][0] == AS_OK && rc[0][1] == AS_OK,
       "own plan: without one, out of time the first round still gives a plan (%d, %d)",
       rc[0][0], rc[0][1]);
    ok(rc[1][0] == AS_ESOLVER && rc[1][1] == AS_ESOLVER,
       "own plan: with one, out of time the reductions give up (%d, %d: %s)", rc[1][0],
       rc[1][1], err.msg);
    /* with time: the same reduced problem */
    ro.deadline = as_now() + 600;
    ro.abort_at = as_now() + 900;
    ro.own_plan = 0;
    is_int(as_reduce_ex(p, &ro, &q, &red, &err), AS_OK, "own plan: with time, without one");
    d0 = as_problem_dumps(q);
    as_problem_free(q);
    as_reduction_free(red);
    ro.own_plan = 1;
    is_int(as_reduce_ex(p, &ro, &q, &red, &err), AS_OK, "own plan: with time, with one");
    d1 = as_problem_dumps(q);
    ok(strcmp(d0, d1) == 0, "own plan: with time, the same reduced problem");
    free(d0);
    free(d1);
    free(x);
    as_problem_free(q);
    as_reduction_free(red);
    as_problem_free(p);
}

/* Second reductions of test_reduce_duals that started from the first one's multipliers. */
static size_t duals_used;
/* Of those, the ones that also started TRW-S from the first one's messages. */
static size_t msgs_carried, msgs_whole;
/* Of those, the ones whose Lagrangian started from the first one's plans. */
static size_t plans_carried;

/*
 * A second reduction of the same problem from the first one's plan starts its Lagrangian from
 * the first one's multipliers (as_reduction_take_duals, as_reduce_opts.duals_from: solve/fit.c
 * does so for the gap): its bound stays at or below the optimum found by enumeration.
 */
static void
test_reduce_duals(int seed)
{
    as_random_opts o;
    as_problem *p, *rp = NULL, *rp2 = NULL;
    as_reduction *red = NULL, *red2 = NULL;
    as_duals *d;
    as_err err = {0};
    double want, obj;
    size_t n, *y, *full;
    const size_t *st;
    as_reduce_opts ro = {.flags = AS_REDUCE_ALL, .top = 1};

    as_random_opts_init(&o);
    o.seed = (uint64_t)seed + 4000;
    o.nodes = 9;
    o.edges = 12 + seed % 4;
    o.kmax = 5;
    o.live_window = 3 + (size_t)seed % 3;
    o.memory_frac = 0.05 + 0.02 * (seed % 6);
    p = as_problem_random(&o);
    n = as_problem_nnodes(p);
    want = best_of(p, NULL);
    is_int(as_reduce_ex(p, &ro, &rp, &red, &err), AS_OK, "duals %d: first reduction", seed);
    d = as_reduction_take_duals(red);
    st = as_reduction_start(red);
    y = calloc(as_problem_nnodes(rp) + 1, sizeof *y);
    full = calloc(n + 1, sizeof *full);
    if (d != NULL && st != NULL && isfinite(want)) {
        /* a deadline long past: the first round's first TRW-S run makes one sweep, so its
           bound is the carried messages' (at least theirs), not one of a converged run */
        as_reduce_opts r2 = {.flags = AS_REDUCE_ALL, .top = 1, .branch = 1, .duals_from = d,
                             .deadline = seed % 2 ? 1e-3 : 0};
        memcpy(y, st, as_problem_nnodes(rp) * sizeof *y);
        as_reduction_recover(red, y, full);
        if (as_problem_check(p, full, &obj, NULL, &err) == AS_OK) {
            r2.incumbent = full;
            is_int(as_reduce_ex(p, &r2, &rp2, &red2, &err), AS_OK,
                   "duals %d: second reduction", seed);
            duals_used += (size_t)as_reduction_stats(red2)->duals_used;
            msgs_carried += as_reduction_stats(red2)->msg_carried > 0;
            plans_carried += as_reduction_stats(red2)->plans_carried > 0;
            ok(as_reduction_stats(red2)->plans_carried <= d->nplans,
               "duals %d: %zu of the first's %zu plans carried", seed,
               as_reduction_stats(red2)->plans_carried, d->nplans);
            /* the same graph, every edge's messages carried: the bound starts at theirs (a
               graph with more edges, an elimination the incumbent undid, may start lower) */
            if (as_reduction_stats(red2)->msg_carried > 0 &&
                as_reduction_stats(red2)->msg_carried == as_reduction_stats(red2)->msg_edges) {
                msgs_whole++;
                ok(as_reduction_stats(red2)->warm_lb >= d->lb - 1e-9 * fmax(1, fabs(d->lb)),
                   "duals %d: from the first's messages at its multipliers, the bound %.12g "
                   "is at least theirs %.12g", seed, as_reduction_stats(red2)->warm_lb, d->lb);
            }
            ok(!(as_reduction_stats(red2)->lb > want + 1e-9 * fmax(1, fabs(want))),
               "duals %d: bound %.9g (%s the first's multipliers; the first %.9g) at most the "
               "optimum %.9g", seed, as_reduction_stats(red2)->lb,
               as_reduction_stats(red2)->duals_used ? "from" : "not from",
               as_reduction_stats(red)->lb, want);
        }
    }
    as_duals_free(d);
    free(y);
    free(full);
    as_reduction_free(red2);
    as_problem_free(rp2);
    as_reduction_free(red);
    as_problem_free(rp);
    as_problem_free(p);
}

int
main(void)
{
    int s;

    plan_lazy();
    test_build_errors();
    test_parse_errors();
    test_json_pos();
    test_roundtrip();
    test_live_shared();
    test_ilp();
    test_mrf_deadline();
    test_mrf_stop();
    test_mrf_classes();
    test_mrf_gaps();
    test_reduce_abort_rows();
    test_reduce_own_plan();
    test_reduce_shortcuts();
    for (s = 1; s <= 90; s++)
        test_reduce_exact(s);
    for (s = 1; s <= 40; s++)
        test_reduce_gap(s);
    for (s = 1; s <= 40; s++)
        test_reduce_incumbent(s);
    for (s = 1; s <= 30; s++)
        test_reduce_branch(s, 0);
    for (s = 1; s <= 40; s++)
        test_reduce_branch(s, 1);
    for (s = 1; s <= 60; s++)
        test_reduce_duals(s);
    for (s = 1; s <= 60; s++)
        test_reduce_branch_deep(s);
    /* the splits from the Lagrangian's master mix ran (a count that stays 0 fails: the mix
       not counted), and their bounds are checked above */
    ok(bb_mixed >= 1, "deep branching: %zu splits where the Lagrangian's mix chose between "
       "strategies (%zu of 60 bounds reach the optimum)", bb_mixed, bb_closed);
    ok(bb_plain_runs > 0 && bb_plain_mixed == 0, "bb_plain: the %zu instances with mixed "
       "splits branched again without (%zu)", bb_plain_runs, bb_plain_mixed);
    ok(duals_used >= 5, "a second reduction started from the first one's multipliers %zu "
       "times", duals_used);
    ok(msgs_carried >= 5 && msgs_whole >= 5, "a second reduction started TRW-S from the first "
       "one's messages %zu times, %zu of them on the same graph (their bounds checked above)",
       msgs_carried, msgs_whole);
    ok(plans_carried >= 5, "a second reduction's Lagrangian started from the first one's plans "
       "%zu times (their bounds checked above)", plans_carried);
    ok(bb_timed >= 5, "the timed branching ran on %zu instances (most bounds: %zu)", bb_timed,
       bb_most);
    /* the branching on memory rows' nodes ran, and its bounds were checked above */
    ok(bb_nodes > 0, "the bound pruning's branching ran on the budgeted instances (%zu bounds)",
       bb_nodes);
    return done_testing();
}
