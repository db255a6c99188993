/* test_build.c -- the choice problem of a small MLP training step on a
 * mesh: node and edge counts against the graph, every matrix sized and
 * valued as the strategy layer says, alias rows, liveness points; then an
 * assignment -> plan -> JSON -> plan round trip and the JAX / DTensor text.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formulate/build.h"
#include "formulate/group.h"
#include "formulate/ilp.h"
#include "formulate/plan.h"
#include "graph/autodiff.h"
#include "graph/io.h"
#include "graph/presets.h"
#include "solve/solver.h"
#include "spmd/rules.h"
#include "tap.h"

static const char mlp[] = "graph mlp2\n"
                          "input x : f32[16,32] batch=0\n"
                          "input y : f32[16,8] batch=0\n"
                          "param w1 : f32[32,64]\n"
                          "param w2 : f32[64,8]\n"
                          "h = matmul(x, w1)\n"
                          "a = relu(h)\n"
                          "p = matmul(a, w2)\n"
                          "l = mse_loss(p, y)\n"
                          "output l\n"
                          "train optimizer=adam\n";

/* Distinct (producer node, consumer node) pairs of G under MAP. */
static size_t
count_pairs(const as_graph *g, const as_build_map *map)
{
    size_t n = 0;
    int32_t i;
    int j, j2;

    for (i = 0; i < as_graph_nops(g); i++) {
        const as_op *op = as_graph_op(g, i);
        for (j = 0; j < op->nin; j++) {
            int dup = 0;
            for (j2 = 0; j2 < j; j2++)
                dup |= as_build_map_tensor_node(map, op->in[j2]) ==
                       as_build_map_tensor_node(map, op->in[j]);
            n += !dup;
        }
    }
    return n;
}

static void
check_problem(const as_graph *g, const as_problem *p, const as_build_map *map)
{
    size_t v, j, bad = 0, ndecl = 0, nstates = 0, nupd = 0;
    size_t *zero = as_xcalloc(as_problem_nnodes(p), sizeof *zero);
    double obj, peak, want = 0;
    as_err err;
    int32_t t;

    for (t = 0; t < as_graph_ntensors(g); t++) {
        const as_tensor *tt = as_graph_tensor(g, t);
        ndecl += tt->producer < 0;
        nstates += tt->kind == AS_TK_STATE;
        nupd += tt->producer < 0 && tt->update >= 0;
    }
    is_int((long)ndecl, 8, "2 inputs + 2 params + 4 adam states declared");
    is_int((long)as_problem_nnodes(p), (long)(ndecl + (size_t)as_graph_nops(g)),
           "one node per declared tensor and per op");
    is_int((long)as_problem_nedges(p), (long)count_pairs(g, map),
           "one edge per (producer, consumer)");
    for (j = 0; j < as_problem_nedges(p); j++) {
        const as_pedge *e = as_problem_edge(p, j);
        const as_pnode *u = as_problem_node(p, e->u), *w = as_problem_node(p, e->v);
        size_t q;
        if (u->k != (size_t)as_build_map_node_set(map, e->u)->n ||
            w->k != (size_t)as_build_map_node_set(map, e->v)->n)
            bad++;
        for (q = 0; q < u->k * w->k; q++)
            if (!isfinite(e->r[q]) || e->r[q] < 0)
                bad++;
        if (e->r[0] != 0)
            bad++; /* replicated -> replicated is free */
    }
    is_int((long)bad, 0, "every matrix is k_u x k_v, finite, and rep->rep is free");
    is_int((long)as_problem_naliases(p), (long)(nstates + nupd),
           "alias rows: state~param, and param/state~update producer");
    ok(as_problem_nlive(p) > 0, "liveness points (%zu)", as_problem_nlive(p));
    is_int(as_problem_validate(p, &err), AS_OK, "problem validates");
    is_int(as_problem_check(p, zero, &obj, &peak, &err), AS_OK, "all-replicated is feasible");
    for (v = 0; v < as_problem_nnodes(p); v++)
        want += as_problem_node(p, v)->c[0] + as_problem_node(p, v)->d[0];
    is_double(obj, want, 1e-12, "all-replicated objective = sum of compute (no resharding)");
    ok(peak > 0, "peak memory %g", peak);
    free(zero);
}

/* Choose, per node, the first strategy whose name is NAME (else keep 0), respecting aliases. */
static void
dp_choice(const as_problem *p, const as_build_map *map, size_t *choice)
{
    size_t v;

    for (v = 0; v < as_problem_nnodes(p); v++) {
        const as_strategy_set *set = as_build_map_node_set(map, v);
        int32_t t = as_build_map_node_tensor(map, v);
        int i = -1;
        if (t >= 0)
            i = as_strat_find(set, set->s[0].out[0].rank == 2 ? "[dp,None]" : "[None]");
        else
            i = as_strat_find(set, "batch(dp)");
        choice[v] = i >= 0 ? (size_t)i : 0;
    }
}

static void
test_mlp(void)
{
    as_graph *g = NULL;
    as_mesh *m = NULL;
    as_cost_model *cm = NULL;
    as_problem *p = NULL;
    as_build_map *map = NULL;
    as_build_opts o;
    as_shard_plan *pl = NULL, *back = NULL;
    as_plan_source src = {"test", "optimal", 1.5, 1.25, 1e6};
    as_build_stats st;
    as_hw hw;
    as_err err;
    size_t *choice;
    char *s1, *s2;

    if (as_graph_parse_asg("mlp.asg", mlp, strlen(mlp), &g, &err) != AS_OK ||
        as_mesh_parse("dp=2,tp=2", &m, &err) != AS_OK || !as_hw_find_builtin("a100-dgx", &hw) ||
        as_cost_model_new(&as_cost_roofline, &hw, m, NULL, 0, &cm, &err) != AS_OK) {
        diag("setup: %s", err.msg);
        exit(1);
    }
    as_build_opts_init(&o);
    o.memory = -1;
    is_int(as_problem_from_graph(g, m, cm, &o, &p, &map, &err), AS_OK, "build: %s", err.msg);
    is_double(as_problem_memory(p), hw.memory - hw.reserved_memory, 1e-12,
              "--memory auto = the profile's memory less its reserved memory");
    ok(hw.reserved_memory > 0 && as_hw_usable_memory(&hw) == as_problem_memory(p),
       "--memory auto = as_hw_usable_memory (%.0f B reserved)", hw.reserved_memory);
    check_problem(g, p, map);
    as_build_map_stats(map, &st);
    ok(st.strat.set_hits > 0, "identical signatures reuse sets (%ld hits)", st.strat.set_hits);
    diag("nodes %zu edges %zu points %zu (dropped %zu) entries %.0f", st.nodes, st.edges,
         st.live_points, st.points_dropped, st.matrix_entries);

    choice = as_xcalloc(as_problem_nnodes(p), sizeof *choice);
    { /* as_build_add_copies stops at its deadline (solve/fit.c passes the time limit) */
        size_t v, n = as_problem_nnodes(p), a0 = 0, a1 = 1, nl = as_problem_nlive(p);
        unsigned long r = 12345;
        int tries, rc0 = AS_OK, rc1 = AS_OK;
        as_err e2 = {0};
        for (tries = 0; tries < 50 && a0 == 0; tries++) {
            as_problem *q = as_problem_clone(p);
            for (v = 0; v < n; v++) {
                r = r * 6364136223846793005ul + 1442695040888963407ul;
                choice[v] = (size_t)(r >> 33) % as_problem_node(p, v)->k;
            }
            rc0 = as_build_add_copies(map, q, choice, 0, &a0, &e2);
            if (a0 > 0) {
                ok(as_problem_nlive(q) == nl + a0, "copies: %zu points added", a0);
                as_problem_free(q);
                q = as_problem_clone(p);
                rc1 = as_build_add_copies(map, q, choice, as_now() - 1, &a1, &e2);
                ok(rc1 == AS_ESOLVER && a1 == 0 && as_problem_nlive(q) == nl &&
                       strstr(e2.msg, "time limit") != NULL,
                   "copies: past the deadline nothing is added, AS_ESOLVER (%s)", e2.msg);
            }
            as_problem_free(q);
        }
        ok(rc0 == AS_OK && a0 > 0, "copies: a random plan with copies (%d tries)", tries);
    }
    dp_choice(p, map, choice);
    is_int(as_plan_from_choice(map, choice, &src, &pl, &err), AS_OK, "plan from choice");
    {
        char buf[AS_SPEC_TEXT_MAX];
        const as_plan_tensor *x = as_shard_plan_tensor(pl, "x");
        const as_plan_op *h = as_shard_plan_op(pl, "h");
        ok(x != NULL && strcmp(as_spec_str(&x->spec, pl->mesh, buf, sizeof buf), "[dp,None]") == 0,
           "x split over dp");
        ok(h != NULL && strcmp(h->strategy, "batch(dp)") == 0, "h is batch(dp)");
        ok(strcmp(pl->cost_model, "roofline") == 0 && strcmp(pl->hw, "a100-dgx") == 0,
           "plan records model and hardware");
    }
    s1 = as_shard_plan_dumps(pl);
    is_int(as_shard_plan_parse(s1, strlen(s1), "plan.json", &back, &err), AS_OK, "read back: %s",
           err.msg);
    s2 = back != NULL ? as_shard_plan_dumps(back) : as_xstrdup("");
    is_str(s2, s1, "plan -> JSON -> plan -> JSON identical");
    ok(back != NULL && back->ntensors == pl->ntensors && back->nops == pl->nops &&
           back->bound == 1.25 && back->objective == 1.5,
       "counts and numbers survive");
    free(s1);
    free(s2);
    as_shard_plan_free(back);
    back = NULL;
    is_int(as_shard_plan_parse("{\"format\":\"autoshard-plan\",\"mesh\":\"2x0\"}", 40, "bad.json",
                               &back, &err),
           AS_EPARSE, "bad mesh in a plan: %s", err.msg);
    is_int(as_shard_plan_parse("{", 1, "bad.json", &back, &err), AS_EPARSE, "bad JSON: %s",
           err.msg);
    free(choice);
    as_shard_plan_free(pl);
    as_build_map_free(map);
    as_problem_free(p);
    as_cost_model_free(cm);
    as_mesh_free(m);
    as_graph_free(g);
}

static void
test_emit(void)
{
    as_shard_plan *pl;
    as_shape sh = {.dtype = AS_DT_F32, .rank = 2, .dim = {8, 16}};
    as_spec sp;
    as_err err;
    char *buf = NULL;
    size_t len = 0;
    FILE *fp;

    as_shard_plan_new("dp=2,tp=4", &pl, &err);
    as_spec_parse("[None,tp]", pl->mesh, 2, &sp, &err);
    as_shard_plan_add_tensor(pl, "w1", AS_TK_PARAM, &sh, &sp, &err);
    as_spec_parse("[(dp,tp),None]", pl->mesh, 2, &sp, &err);
    as_shard_plan_add_tensor(pl, "x", AS_TK_INPUT, &sh, &sp, &err);
    as_spec_parse("[dp,None]", pl->mesh, 2, &sp, &err);
    as_shard_plan_add_tensor(pl, "h", AS_TK_ACT, &sh, &sp, &err);
    as_spec_parse("[None,(dp,tp)]", pl->mesh, 2, &sp, &err);
    is_int(as_shard_plan_add_tensor(pl, "bad", AS_TK_ACT, &sh, &sp, &err), AS_OK, "16 over 8");
    sh.dim[1] = 12;
    is_int(as_shard_plan_add_tensor(pl, "bad2", AS_TK_ACT, &sh, &sp, &err), AS_EUSAGE,
           "12 over 8 rejected: %s", err.msg);
    fp = open_memstream(&buf, &len);
    as_shard_plan_emit(pl, "jax", fp, &err);
    fclose(fp);
    ok(strstr(buf, "'w1': NamedSharding(mesh, PartitionSpec(None, 'tp')),") != NULL, "jax w1");
    ok(strstr(buf, "'x': NamedSharding(mesh, PartitionSpec(('dp', 'tp'), None)),") != NULL,
       "jax x over two axes");
    ok(strstr(buf, "MESH_AXES = ('dp', 'tp')\n") != NULL, "jax mesh axes");
    ok(strstr(buf, "'h'") == NULL, "activations not emitted");
    free(buf);
    fp = open_memstream(&buf, &len);
    as_shard_plan_emit(pl, "dtensor", fp, &err);
    fclose(fp);
    ok(strstr(buf, "'w1': [Replicate(), Shard(1)],") != NULL, "dtensor w1");
    ok(strstr(buf, "'x': [Shard(0), Shard(0)],") != NULL, "dtensor x");
    ok(strstr(buf, "MESH_SHAPE = (2, 4)\n") != NULL, "dtensor mesh shape");
    free(buf);
    is_int(as_shard_plan_emit(pl, "onnx", stdout, &err), AS_EUSAGE, "unknown format: %s",
           err.msg);
    as_shard_plan_free(pl);
}

/* Solve P with SOLVER and REDUCE flags; the objective, or NAN. */
static double
solve_obj(const as_problem *p, const char *solver, unsigned reduce)
{
    as_solve_opts o;
    as_solve_result r;
    as_err err = {0};
    double obj = NAN;

    as_solve_opts_init(&o);
    o.solver = solver;
    o.reduce = reduce;
    if (as_solve_problem(p, &o, &r, &err) != AS_OK) {
        diag("%s: %s", solver, err.msg);
        return NAN;
    }
    if (r.nplans > 0 && r.plans[0].status == AS_OUTCOME_OPTIMAL)
        obj = r.plans[0].objective;
    as_solve_result_free(&r);
    return obj;
}

/*
 * Reductions keep the optimum on problems built from real graphs (small
 * presets, training steps) on 1-D and 2-D meshes, with and without a
 * binding memory budget; GLPK and CBC agree.
 */
static void
test_real_graphs(void)
{
    static const struct {
        const char *preset, *mesh;
        as_preset_cfg cfg;
    } cases[] = {
        {"mlp-1b", "4", {.layers = 2, .hidden = 256, .batch = 64}},
        {"mlp-1b", "2x2", {.layers = 2, .hidden = 256, .batch = 64}},
        {"gpt2-small", "4", {.layers = 1, .hidden = 128, .heads = 2, .seq = 64, .batch = 4,
                             .vocab = 512}},
        {"gpt2-small", "2x2", {.layers = 1, .hidden = 128, .heads = 2, .seq = 64, .batch = 4,
                               .vocab = 512}},
        {"bert-base", "4", {.layers = 1, .hidden = 128, .heads = 2, .seq = 64, .batch = 4,
                            .vocab = 512}},
    };
    size_t i;
    int mem;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const as_preset *pr = as_preset_find(cases[i].preset);
        as_preset_cfg cfg = pr->cfg;
        as_graph_setup su = {.mesh = cases[i].mesh};
        as_graph_problem gp;
        as_train_opts t;
        as_graph *g;
        as_err err = {0};
        cfg.layers = cases[i].cfg.layers;
        cfg.hidden = cases[i].cfg.hidden;
        cfg.batch = cases[i].cfg.batch;
        if (cases[i].cfg.heads) {
            cfg.heads = cases[i].cfg.heads;
            cfg.seq = cases[i].cfg.seq;
            cfg.vocab = cases[i].cfg.vocab;
            cfg.ffn = 0;
        }
        as_train_opts_init(&t);
        if (as_preset_build(pr, &cfg, &g, &err) != AS_OK || as_autodiff(g, &t, &err) != AS_OK) {
            ok(0, "%s: build graph: %s", cases[i].preset, err.msg);
            continue;
        }
        as_build_opts_init(&su.build);
        if (as_graph_problem_init(&gp, g, &su, &err) != AS_OK) {
            ok(0, "%s on %s: problem: %s", cases[i].preset, cases[i].mesh, err.msg);
            continue;
        }
        for (mem = 0; mem < 2; mem++) {
            double full, red, cbc, plain;
            if (mem) { /* a binding budget: 3/4 of the way from the lower bound to the peak */
                as_solve_opts o;
                as_solve_result r;
                as_solve_opts_init(&o);
                as_solve_problem(gp.p, &o, &r, &err);
                as_problem_set_memory(gp.p, 0.75 * r.plans[0].peak +
                                                0.25 * as_problem_peak_lower_bound(gp.p));
                as_solve_result_free(&r);
            }
            /* the plain ILP with CBC when built in (GLPK needs 30 s on the 2x2 budget case;
               make check stays fast), the reduced one with GLPK: exactness of the
               reductions and agreement of the backends in one comparison */
#ifdef HAVE_CBC
            plain = solve_obj(gp.p, "cbc", 0);
#else
            plain = solve_obj(gp.p, "glpk", 0);
#endif
            red = solve_obj(gp.p, "glpk", AS_REDUCE_ALL);
            full = plain;
            ok(isfinite(plain) && fabs(red - full) <= 1e-9 * fabs(full),
               "%s on %s%s: reduced optimum %.12g = plain %.12g", cases[i].preset, cases[i].mesh,
               mem ? " (memory budget)" : "", red, full);
#ifdef HAVE_CBC
            /* objective scaling (as_ilp_obj_scale) makes the backends agree, also
               under a binding memory budget */
            cbc = solve_obj(gp.p, "cbc", AS_REDUCE_ALL);
            ok(fabs(cbc - full) <= 1e-6 * fabs(full), "%s on %s%s: cbc %.12g = glpk %.12g",
               cases[i].preset, cases[i].mesh, mem ? " (memory budget)" : "", cbc, full);
#else
            (void)cbc;
#endif
        }
        as_graph_problem_free(&gp);
    }
}

/* Build preset PRESET (with CFG overrides, training step) on a 1-D mesh of 4 under alpa. */
static int
alpa_problem(const char *preset, const as_preset_cfg *over, as_graph_problem *gp)
{
    static const char *const no_params[] = {NULL};
    const as_preset *pr = as_preset_find(preset);
    as_preset_cfg cfg = pr->cfg;
    as_graph_setup su = {.mesh = "4", .cost = "alpa", .params = no_params};
    as_train_opts t;
    as_graph *g;
    as_err err = {0};

    cfg.layers = over->layers;
    cfg.hidden = over->hidden;
    cfg.batch = over->batch;
    if (over->heads) {
        cfg.heads = over->heads;
        cfg.seq = over->seq;
        cfg.vocab = over->vocab;
        cfg.ffn = 0;
    }
    as_train_opts_init(&t);
    if (as_preset_build(pr, &cfg, &g, &err) != AS_OK || as_autodiff(g, &t, &err) != AS_OK) {
        diag("%s: %s", preset, err.msg);
        return -1;
    }
    as_build_opts_init(&su.build);
    if (as_graph_problem_init(gp, g, &su, &err) != AS_OK) {
        diag("%s: %s", preset, err.msg);
        return -1;
    }
    return 0;
}

/* Strategy name chosen for the op producing tensor NAME (or "?"). */
static const char *
op_strategy(const as_graph_problem *gp, const size_t *choice, const char *name)
{
    int32_t t = as_graph_find(gp->g, name);
    size_t v;

    if (t < 0 || as_graph_tensor(gp->g, t)->producer < 0)
        return "?";
    v = as_build_map_op_node(gp->map, as_graph_tensor(gp->g, t)->producer);
    return as_build_map_node_set(gp->map, v)->s[choice[v]].name;
}

/* Spec of tensor NAME under CHOICE: per dim the mesh axis splitting it, "-" if none. */
static void
tensor_split(const as_graph_problem *gp, const size_t *choice, const char *name, char *out)
{
    int32_t t = as_graph_find(gp->g, name);
    const as_spec *sp;
    int d, k;

    strcpy(out, "?");
    if (t < 0)
        return;
    sp = as_build_map_tensor_spec(gp->map, t, choice);
    for (d = 0; d < as_graph_tensor(gp->g, t)->shape.rank; d++) {
        out[d] = '-';
        for (k = 0; k < AS_MESH_MAX_AXES; k++)
            if (sp->axis[k] == d)
                out[d] = 'x';
    }
    out[as_graph_tensor(gp->g, t)->shape.rank] = '\0';
}

static int
starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * Alpa's MLP and BERT tests (tests/shard_parallel/test_mlp.py, test_bert.py)
 * under --cost-model alpa on a 1-D mesh of 4: Megatron's pattern for a
 * narrow-batch wide MLP and a BERT layer, data parallelism for a wide-batch
 * narrow MLP.  Asserted on the solved assignment, not on printed text.
 */
static void
test_alpa_patterns(void)
{
    static const as_preset_cfg mp = {.layers = 6, .hidden = 256, .batch = 32};
    static const as_preset_cfg dp = {.layers = 6, .hidden = 32, .batch = 256};
    static const as_preset_cfg bert = {.layers = 1, .hidden = 128, .heads = 8, .seq = 8,
                                       .batch = 8, .vocab = 512};
    static const char *const bert_mm[][2] = {
        {"h.0.attn.q.mm", "column"}, {"h.0.attn.k.mm", "column"}, {"h.0.attn.v.mm", "column"},
        {"h.0.attn.out.mm", "row"},  {"h.0.mlp.fc1.mm", "column"}, {"h.0.mlp.fc2.mm", "row"},
    };
    as_graph_problem gp;
    as_solve_opts o;
    as_solve_result r;
    as_err err = {0};
    char name[64], spec[AS_MAX_RANK + 2];
    size_t i, bad;
    int k;

    as_solve_opts_init(&o);
    /* Megatron: layer k column-split (weight [None,x]) when k is even, row-split when odd */
    if (alpa_problem("mlp-1b", &mp, &gp) == 0) {
        if (as_solve_problem(gp.p, &o, &r, &err) == AS_OK && r.nplans == 1) {
            for (k = 0, bad = 0; k < 6; k++) {
                const char *st;
                snprintf(name, sizeof name, "h.%d.fc.mm", k);
                st = op_strategy(&gp, r.plans[0].choice, name);
                snprintf(name, sizeof name, "h.%d.fc.w", k);
                tensor_split(&gp, r.plans[0].choice, name, spec);
                if (!starts(st, k % 2 ? "row(x)" : "column(x)") ||
                    strcmp(spec, k % 2 ? "x-" : "-x") != 0) {
                    diag("layer %d: %s, weight %s", k, st, spec);
                    bad++;
                }
            }
            is_int((long)bad, 0, "alpa, MLP 6x256 batch 32: layers alternate column / row");
            /* Alpa's expected objective: 5 all-reduces of the activations (+ penalties) */
            is_double(r.plans[0].objective, 5 * (1 + 2 * 0.75 * 32 * 256 * 4 + 0.01), 20,
                      "alpa, MLP: objective = 5 all-reduces of batch x hidden (%.6g)",
                      r.plans[0].objective);
            as_solve_result_free(&r);
        } else {
            ok(0, "alpa MLP solve: %s", err.msg);
        }
        as_graph_problem_free(&gp);
    }
    /* data parallel: every matmul of the forward pass batch-split, every parameter replicated */
    if (alpa_problem("mlp-1b", &dp, &gp) == 0) {
        if (as_solve_problem(gp.p, &o, &r, &err) == AS_OK && r.nplans == 1) {
            int32_t t;
            for (k = 0, bad = 0; k < 6; k++) {
                snprintf(name, sizeof name, "h.%d.fc.mm", k);
                if (!starts(op_strategy(&gp, r.plans[0].choice, name), "batch(x)")) {
                    diag("%s: %s", name, op_strategy(&gp, r.plans[0].choice, name));
                    bad++;
                }
            }
            for (t = 0; t < as_graph_ntensors(gp.g); t++) {
                const as_tensor *tt = as_graph_tensor(gp.g, t);
                if (tt->kind != AS_TK_PARAM)
                    continue;
                tensor_split(&gp, r.plans[0].choice, tt->name, spec);
                if (strchr(spec, 'x') != NULL) {
                    diag("%s: %s", tt->name, spec);
                    bad++;
                }
            }
            is_int((long)bad, 0, "alpa, MLP 6x32 batch 256: data parallel, weights replicated");
            as_solve_result_free(&r);
        } else {
            ok(0, "alpa DP solve: %s", err.msg);
        }
        as_graph_problem_free(&gp);
    }
    /* BERT layer: QKV column, attention output row, FFN1 column, FFN2 row */
    if (alpa_problem("bert-base", &bert, &gp) == 0) {
        if (as_solve_problem(gp.p, &o, &r, &err) == AS_OK && r.nplans == 1) {
            for (i = 0, bad = 0; i < sizeof bert_mm / sizeof bert_mm[0]; i++) {
                const char *st = op_strategy(&gp, r.plans[0].choice, bert_mm[i][0]);
                if (!starts(st, bert_mm[i][1])) {
                    diag("%s: %s, want %s", bert_mm[i][0], st, bert_mm[i][1]);
                    bad++;
                }
            }
            is_int((long)bad, 0, "alpa, BERT layer: QKV column, attn out row, FFN column/row");
            as_solve_result_free(&r);
        } else {
            ok(0, "alpa BERT solve: %s", err.msg);
        }
        as_graph_problem_free(&gp);
    }
}

/* A small GPT training step with LAYERS identical layers. */
static as_graph *
tiny_gpt(int layers)
{
    const as_preset *pr = as_preset_find("gpt2-small");
    as_preset_cfg cfg = pr->cfg;
    as_train_opts t;
    as_graph *g = NULL;
    as_err err = {0};

    cfg.layers = layers;
    cfg.hidden = 64;
    cfg.heads = 2;
    cfg.seq = 16;
    cfg.batch = 4;
    cfg.vocab = 100;
    cfg.ffn = 0;
    as_train_opts_init(&t);
    if (as_preset_build(pr, &cfg, &g, &err) != AS_OK || as_autodiff(g, &t, &err) != AS_OK) {
        diag("tiny gpt: %s", err.msg);
        as_graph_free(g);
        return NULL;
    }
    return g;
}

/*
 * Repeated layers (formulate/group.h): identical layers are found and tied;
 * without a memory budget the tied optimum equals the untied one, and the
 * tied plan is a valid plan of the untied problem with the same objective.
 * A --group regex that does not compile, has no capture, matches nothing
 * or groups blocks that are not isomorphic is a usage error.
 */
static void
test_group(void)
{
    static const char *const meshes[] = {"4", "2x2"};
    static const struct {
        const char *re;
        int ok;
    } res[] = {
        {"h\\.(\\d+)\\.", 1}, {"^(?:d\\.|adam_[mv]\\.)?h\\.(\\d+)\\.", 1}, {"h\\.(\\d+", 0},
        {"h\\.\\d+\\.", 0}, {"^zz(\\d+)", 0}, {"^(wte|wpe)$", 0},
    };
    size_t m, i;

    for (m = 0; m < sizeof meshes / sizeof meshes[0]; m++) {
        as_graph_setup su = {.mesh = meshes[m], .tie = 1};
        as_graph_setup sn = {.mesh = meshes[m]};
        as_graph_problem gt, gn;
        as_graph *g1 = tiny_gpt(3), *g2 = tiny_gpt(3);
        as_err err = {0};
        double tied, untied, obj = NAN;
        as_solve_opts o;
        as_solve_result r;
        if (g1 == NULL || g2 == NULL) {
            ok(0, "tiny gpt");
            as_graph_free(g1);
            as_graph_free(g2);
            continue;
        }
        as_build_opts_init(&su.build);
        as_build_opts_init(&sn.build);
        if (as_graph_problem_init(&gt, g1, &su, &err) != AS_OK ||
            as_graph_problem_init(&gn, g2, &sn, &err) != AS_OK) {
            ok(0, "group: problem: %s", err.msg);
            continue;
        }
        ok(gt.groups != NULL && gt.groups->nclass == 1 && gt.groups->cls[0].nblocks == 3 &&
               gt.groups->period == AS_GROUP_PERIOD && gt.groups->cls[0].sets == 2 &&
               strcmp(gt.groups->cls[0].first, "h.0") == 0 &&
               strcmp(gt.groups->cls[0].last, "h.2") == 0 && gt.groups->followers > 0,
           "mesh %s: the 3 layers h.0..h.2 are found and tied (%zu follow links)", meshes[m],
           gt.groups != NULL ? gt.groups->followers : 0);
        tied = solve_obj(gt.p, "glpk", AS_REDUCE_ALL);
        untied = solve_obj(gn.p, "glpk", AS_REDUCE_ALL);
        ok(isfinite(tied) && fabs(tied - untied) <= 1e-9 * fabs(untied),
           "mesh %s: tied optimum %.12g = untied %.12g (no budget)", meshes[m], tied, untied);
#ifdef HAVE_CBC
        if (m == 0) /* the plain ILP (follow rows, no merging); GLPK takes minutes on it */
            ok(fabs(solve_obj(gt.p, "cbc", 0) - tied) <= 1e-9 * fabs(tied),
               "mesh %s: tied, plain ILP with follow rows = reduced", meshes[m]);
#endif
        as_solve_opts_init(&o);
        o.groups = gt.groups;
        if (as_solve_problem(gt.p, &o, &r, &err) == AS_OK && r.nplans > 0) {
            int good = as_problem_check(gn.p, r.plans[0].choice, &obj, NULL, &err) == AS_OK;
            const as_group_class *k = &gt.groups->cls[0];
            size_t j, same = 0;
            ok(good && fabs(obj - tied) <= 1e-9 * fabs(tied),
               "mesh %s: the tied plan is a plan of the untied problem, objective %.12g",
               meshes[m], obj);
            for (j = 0; j < k->nodes; j++)
                same += r.plans[0].choice[k->lead[0][j]] == r.plans[0].choice[k->lead[1][j]];
            ok(gt.groups->settled == 1 && same == k->nodes,
               "mesh %s: even and odd layers settled to one plan (%zu of %zu nodes alike)",
               meshes[m], same, k->nodes);
            as_solve_result_free(&r);
        } else {
            ok(0, "mesh %s: solve tied: %s", meshes[m], err.msg);
        }
        as_graph_problem_free(&gt);
        as_graph_problem_free(&gn);
    }
    for (i = 0; i < sizeof res / sizeof res[0]; i++) {
        as_graph_setup su = {.mesh = "4", .tie = 1, .group = res[i].re};
        as_graph_problem gp;
        as_graph *g = tiny_gpt(2);
        as_err err = {0};
        int rc;
        as_build_opts_init(&su.build);
        rc = as_graph_problem_init(&gp, g, &su, &err);
        if (res[i].ok)
            ok(rc == AS_OK && gp.groups->nclass == 1 && gp.groups->cls[0].nblocks == 2,
               "--group '%s' ties 2 blocks %s", res[i].re, err.msg);
        else
            ok(rc == AS_EUSAGE && strchr(err.msg, '\n') == NULL &&
                   strncmp(err.msg, "--group '", 9) == 0,
               "--group '%s' is a usage error: %s", res[i].re, err.msg);
        if (rc == AS_OK)
            as_graph_problem_free(&gp);
    }
}

/* P with every point's segments expanded into its own entries: no segments. */
static as_problem *
expand_segments(const as_problem *p)
{
    as_problem *q = as_problem_new();
    size_t v, j, t;

    for (v = 0; v < as_problem_nnodes(p); v++) {
        const as_pnode *nd = as_problem_node(p, v);
        as_problem_add_node(q, nd->name, nd->k, nd->c, nd->d, nd->m, NULL, NULL);
        for (j = 0; nd->snames != NULL && j < nd->k; j++) /* the relabel move reads them */
            as_problem_set_strategy_name(q, v, j, nd->snames[j], NULL);
    }
    for (v = 0; v < as_problem_nnodes(p); v++)
        if (as_problem_node(p, v)->follow != AS_NO_FOLLOW)
            as_problem_set_follow(q, v, as_problem_node(p, v)->follow, NULL);
    for (j = 0; j < as_problem_nedges(p); j++)
        as_problem_add_edge(q, as_problem_edge(p, j)->u, as_problem_edge(p, j)->v,
                            as_problem_edge(p, j)->r, NULL);
    for (j = 0; j < as_problem_naliases(p); j++)
        as_problem_add_alias(q, as_problem_alias(p, j)->a, as_problem_alias(p, j)->b,
                             as_problem_alias(p, j)->bad, NULL);
    for (t = 0; t < as_problem_nlive(p); t++) {
        const as_plive *l = as_problem_live(p, t), *e;
        as_plive_iter it;
        AS_VEC(size_t) nodes = {0};
        AS_VEC(const double *) m = {0};
        for (e = as_plive_begin(&it, p, l); e != NULL; e = as_plive_next(&it))
            for (j = 0; j < e->n; j++) {
                AS_VEC_PUSH(&nodes, e->nodes[j]);
                AS_VEC_PUSH(&m, e->m[j]);
            }
        as_problem_add_liveness_m(q, nodes.v, m.v, nodes.n, l->resident, NULL);
        AS_VEC_FREE(&nodes);
        AS_VEC_FREE(&m);
    }
    as_problem_set_memory(q, as_problem_memory(p));
    as_problem_set_offset(q, as_problem_offset(p));
    return q;
}

/* A and B agree within a relative 1e-12 (sums of the same bytes in another order). */
static int
near(double a, double b)
{
    return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

/*
 * Liveness segments (problem.h): a training step's points share the base and the
 * activations kept for the backward pass as segments; every reader of points sees the
 * same bytes as with each point's entries written out: peaks of random plans, the
 * lower bound, which rows can bind, the plan check, the ILP's memory rows (with the
 * segments' columns) at random plans, the optimum under a binding budget, the heuristics'
 * plans, and a cost-graph file round trip.
 */

/*
 * Random plans of P (20) through its ILP (as_ilp_point): every mem_<t> row's activity in bytes
 * = X's point t written out; returns how many differ, with the rows in *NROW and the mv_<c>
 * columns in *MV (1: no ILP).
 */
static size_t
ilp_rows_bytes(const as_problem *p, const as_problem *x, size_t *choice, size_t *nrow, size_t *mv)
{
    as_ilp *ilp = NULL;
    as_err err = {0};
    const as_ilp_view *iv;
    double *xv, *act, *segs;
    size_t bad = 0, i, r, t, v, n = as_problem_nnodes(p);

    if (as_ilp_build(p, NULL, &ilp, &err) != AS_OK) {
        ok(0, "segments: ILP: %s", err.msg);
        return 1;
    }
    iv = as_ilp_data(ilp);
    xv = calloc(iv->ncols + 1, sizeof *xv);
    act = calloc(iv->nrows + 1, sizeof *act);
    for (i = 0; i < iv->ncols; i++)
        *mv += strncmp(iv->col_name[i], "mv_", 3) == 0;
    for (r = 0; r < 20; r++) {
        for (v = 0; v < n; v++)
            choice[v] = (size_t)rand() % as_problem_node(p, v)->k;
        as_ilp_point(ilp, choice, xv);
        memset(act, 0, (iv->nrows + 1) * sizeof *act);
        for (i = 0; i < iv->nnz; i++)
            act[iv->ti[i]] += iv->tv[i] * xv[iv->tj[i]];
        segs = as_problem_seg_bytes(x, choice);
        for (i = 0; i < iv->nrows; i++) {
            if (strncmp(iv->row_name[i], "mvd_", 4) == 0 || strncmp(iv->row_name[i], "seg_", 4) == 0)
                bad += fabs(act[i]) > 1e-12; /* the defining rows hold at the point */
            if (sscanf(iv->row_name[i], "mem_%zu", &t) != 1)
                continue;
            (*nrow)++;
            bad += fabs(act[i] * as_problem_memory(x) + as_problem_live(x, t)->resident -
                        as_problem_live_bytes(x, t, segs, choice)) > 1e-9 * as_problem_memory(x);
        }
        free(segs);
    }
    free(xv);
    free(act);
    as_ilp_free(ilp);
    return bad;
}

static void
test_segments(int layers, int solve)
{
    as_graph_setup su = {.mesh = "2"};
    as_graph_problem gp;
    as_problem *x, *rt = NULL;
    as_err err = {0};
    as_ilp_stats a, b;
    size_t n, t, r, v, *choice, bad = 0, binds = 0, nb = 0;
    double obj_s, obj_x, lo;
    char *json;
    const char *heur[] = {"beam", "mcts"};

    as_build_opts_init(&su.build);
    if (as_graph_problem_init(&gp, tiny_gpt(layers), &su, &err) != AS_OK) {
        ok(0, "segments: problem: %s", err.msg);
        return;
    }
    x = expand_segments(gp.p);
    n = as_problem_nnodes(gp.p);
    ok(as_problem_nsegs(gp.p) > (layers > 2 ? 1u : 0u) && as_problem_nsegs(x) == 0,
       "segments, %d layers: %zu segments, %zu points", layers, as_problem_nsegs(gp.p),
       as_problem_nlive(gp.p));
    choice = calloc(n + 1, sizeof *choice);
    srand(7);
    for (r = 0; r < 200; r++) {
        for (v = 0; v < n; v++)
            choice[v] = r == 0 ? 0 : (size_t)rand() % as_problem_node(gp.p, v)->k;
        bad += !near(as_problem_peak(gp.p, choice), as_problem_peak(x, choice));
    }
    ok(bad == 0, "segments: the peak of 200 random plans = with the points written out (%zu "
       "differ)", bad);
    lo = as_problem_peak_lower_bound(gp.p);
    ok(near(lo, as_problem_peak_lower_bound(x)), "segments: lower bound %.0f = %.0f", lo,
       as_problem_peak_lower_bound(x));
    /* a binding budget: halfway from the lower bound to the all-replicated plan's peak */
    memset(choice, 0, (n + 1) * sizeof *choice);
    as_problem_set_memory(gp.p, 0.5 * (lo + as_problem_peak(gp.p, choice)));
    as_problem_set_memory(x, as_problem_memory(gp.p));
    for (t = 0; t < as_problem_nlive(gp.p); t++) {
        binds += as_problem_live_binds(gp.p, t) != as_problem_live_binds(x, t);
        nb += (size_t)as_problem_live_binds(gp.p, t);
    }
    ok(binds == 0 && nb > 0, "segments: the same %zu points can bind", nb);
    ok(as_problem_check(gp.p, choice, NULL, NULL, NULL) ==
           as_problem_check(x, choice, NULL, NULL, NULL),
       "segments: the plan check agrees");
    if (as_ilp_count(gp.p, &a, &err) == AS_OK && as_ilp_count(x, &b, &err) == AS_OK)
        ok(a.nnz < b.nnz, "segments: the ILP has %zu non-zeros, %zu written out", a.nnz, b.nnz);
    /* the ILP's memory rows at random plans: mem_<t> with the mseg columns = the bytes; also
       of the problem written out, whose repeated entries share mv_<c> columns */
    for (r = 0; r < 2; r++) {
        size_t nrow = 0, mv = 0;
        bad = ilp_rows_bytes(r ? x : gp.p, x, choice, &nrow, &mv);
        ok(bad == 0 && nrow > 0 && (r == 0 || mv > 0), "segments%s: %zu ILP memory rows at 20 "
           "random plans = the bytes written out (%zu differ, %zu mv columns)",
           r ? " written out" : "", nrow, bad, mv);
    }
    for (r = 0; r < 2 && solve; r++) { /* glpk needs minutes on the larger ones */
        as_solve_opts o;
        as_solve_result rs, rx;
        as_solve_opts_init(&o);
        o.solver = heur[r];
        o.reduce = 0;
        if (as_solve_problem(gp.p, &o, &rs, &err) == AS_OK &&
            as_solve_problem(x, &o, &rx, &err) == AS_OK && rs.nplans > 0 && rx.nplans > 0)
            ok(rs.plans[0].objective == rx.plans[0].objective &&
                   near(rs.plans[0].peak, rx.plans[0].peak),
               "segments: %s finds the same plan (%.12g = %.12g, peak %.0f = %.0f)", heur[r],
               rs.plans[0].objective, rx.plans[0].objective, rs.plans[0].peak, rx.plans[0].peak);
        else
            ok(0, "segments: %s: %s", heur[r], err.msg);
        as_solve_result_free(&rs);
        as_solve_result_free(&rx);
    }
    obj_x = solve ? solve_obj(x, "glpk", AS_REDUCE_ALL) : 0;
    obj_s = solve ? solve_obj(gp.p, "glpk", AS_REDUCE_ALL) : 0;
    if (solve)
        ok(isfinite(obj_s) && fabs(obj_s - obj_x) <= 1e-6 * fabs(obj_x),
           "segments: reduced optimum %.12g = %.12g", obj_s, obj_x);
    json = as_problem_dumps(gp.p);
    if (as_problem_parse(json, strlen(json), "seg.json", &rt, &err) != AS_OK)
        diag("segments: %s", err.msg);
    ok(rt != NULL && as_problem_nsegs(rt) == as_problem_nsegs(gp.p) &&
           as_problem_peak(rt, choice) == as_problem_peak(gp.p, choice),
       "segments: a cost-graph file keeps them");
    free(json);
    as_problem_free(rt);
    free(choice);
    as_problem_free(x);
    as_graph_problem_free(&gp);
}

/* Built ILPs with shared memory columns (mv_<c>, ilp.c's mvshare) in count_matches. */
static size_t count_shared;

/* as_ilp_count == the built ILP's size (one truth: the report's "ILP before" line). */
static int
count_matches(const as_problem *p, const char *what)
{
    as_ilp_stats a, b;
    as_ilp *ilp = NULL;
    as_err err = {0};
    size_t j;
    int good;

    memset(&a, 0xff, sizeof a);
    if (as_ilp_count(p, &a, &err) != AS_OK || as_ilp_build(p, NULL, &ilp, &err) != AS_OK) {
        ok(0, "%s: count/build: %s", what, err.msg);
        as_ilp_free(ilp);
        return 0;
    }
    as_ilp_stats_get(ilp, &b);
    count_shared += as_ilp_find_col(ilp, "mv_0", &j);
    good = a.cols == b.cols && a.int_cols == b.int_cols && a.rows == b.rows && a.nnz == b.nnz;
    if (!good)
        ok(0, "%s: counted %zu cols (%zu int), %zu rows, %zu nnz; built %zu (%zu), %zu, %zu",
           what, a.cols, a.int_cols, a.rows, a.nnz, b.cols, b.int_cols, b.rows, b.nnz);
    as_ilp_free(ilp);
    return good;
}

static void
test_ilp_count(void)
{
    static const char *const meshes[] = {"4", "2x2"};
    size_t m, seed, good = 0, tried = 0;

    for (m = 0; m < 2; m++) {
        as_graph_setup su = {.mesh = meshes[m], .tie = 1};
        as_graph_problem gp;
        as_err err = {0};
        char what[64];
        size_t *choice;
        as_build_opts_init(&su.build);
        if (as_graph_problem_init(&gp, tiny_gpt(3), &su, &err) != AS_OK) {
            ok(0, "count: problem: %s", err.msg);
            continue;
        }
        snprintf(what, sizeof what, "gpt mesh %s tied", meshes[m]);
        ok(count_matches(gp.p, what), "%s: as_ilp_count = built ILP", what);
        as_problem_set_memory(gp.p, as_problem_peak_lower_bound(gp.p) * 1.05);
        choice = calloc(as_problem_nnodes(gp.p) + 1, sizeof *choice);
        as_problem_add_nogood(gp.p, choice, &err);
        free(choice);
        snprintf(what, sizeof what, "gpt mesh %s, budget and no-good", meshes[m]);
        ok(count_matches(gp.p, what), "%s: as_ilp_count = built ILP", what);
        as_graph_problem_free(&gp);
    }
    for (seed = 1; seed <= 60; seed++) {
        as_random_opts o;
        as_problem *p;
        char what[64];
        as_random_opts_init(&o);
        o.seed = seed;
        o.nodes = 5 + seed % 20;
        o.edges = o.nodes + seed % 7;
        o.kmin = 1 + seed % 3;
        o.kmax = o.kmin + seed % 6;
        o.follow = (seed % 4) * 0.1;
        o.live_window = seed % 5;
        o.aliases = seed % 3;
        o.memory_frac = (seed % 3) * 0.3;
        if ((p = as_problem_random(&o)) == NULL)
            continue;
        snprintf(what, sizeof what, "random seed %zu", seed);
        tried++;
        good += (size_t)count_matches(p, what);
        as_problem_free(p);
    }
    ok(tried > 50 && good == tried, "as_ilp_count = built ILP on %zu of %zu random problems",
       good, tried);
    ok(count_shared > 10, "%zu of them share memory entries in mv_<c> columns", count_shared);
}

/*
 * K > 1 microbatches: a reshard into a forward or backward op costs K times (the matrix of
 * K = 1 times K, exactly), and edges that borrow one shared matrix at K = 1 borrow one at K
 * too (made once per map, not copied per edge).
 */
static void
test_micro_share(void)
{
    as_graph *g = NULL;
    as_mesh *m = NULL;
    as_cost_model *cm = NULL;
    as_problem *p1 = NULL, *p4 = NULL;
    as_build_map *m1 = NULL, *m4 = NULL;
    as_build_opts o;
    as_hw hw;
    as_err err = {0};
    size_t j, j2, n = 0, bad = 0, times4 = 0, same1 = 0, same4 = 0;

    const as_preset *pr = as_preset_find("mlp-1b");
    as_preset_cfg cfg = pr->cfg;
    as_train_opts t;

    cfg.layers = 3; /* repeated layers: edges that reshard alike */
    cfg.hidden = 256;
    cfg.batch = 64;
    as_train_opts_init(&t);
    if (as_preset_build(pr, &cfg, &g, &err) != AS_OK || as_autodiff(g, &t, &err) != AS_OK ||
        as_mesh_parse("2x2", &m, &err) != AS_OK || !as_hw_find_builtin("a100-dgx", &hw) ||
        as_cost_model_new(&as_cost_roofline, &hw, m, NULL, 0, &cm, &err) != AS_OK) {
        diag("setup: %s", err.msg);
        exit(1);
    }
    as_build_opts_init(&o);
    is_int(as_problem_from_graph(g, m, cm, &o, &p1, &m1, &err), AS_OK, "K = 1: %s", err.msg);
    o.microbatches = 4;
    is_int(as_problem_from_graph(g, m, cm, &o, &p4, &m4, &err), AS_OK, "K = 4: %s", err.msg);
    is_int((long)as_problem_nedges(p4), (long)as_problem_nedges(p1), "the same edges");
    for (j = 0; j < as_problem_nedges(p1) && j < as_problem_nedges(p4); j++) {
        const as_pedge *a = as_problem_edge(p1, j), *b = as_problem_edge(p4, j);
        size_t q, kk = as_problem_node(p1, a->u)->k * as_problem_node(p1, a->v)->k, four = 0;
        for (q = 0; q < kk; q++) {
            four += b->r[q] != a->r[q];
            bad += b->r[q] != a->r[q] && b->r[q] != 4 * a->r[q];
        }
        times4 += four > 0;
        for (j2 = j + 1; j2 < as_problem_nedges(p1); j2++)
            if (as_problem_edge(p1, j2)->r == a->r) {
                same1++;
                same4 += as_problem_edge(p4, j2)->r == b->r;
            }
        n++;
    }
    is_int((long)bad, 0, "every entry at K = 4 is K = 1's or 4 x it (%zu edges)", n);
    ok(times4 > 0, "%zu edges cost 4 x", times4);
    ok(same1 > 0, "edges share a matrix at K = 1 (%zu pairs)", same1);
    is_int((long)same4, (long)same1, "and the same pairs share one at K = 4");
    as_problem_free(p1);
    as_problem_free(p4);
    as_build_map_free(m1);
    as_build_map_free(m4);
    as_cost_model_free(cm);
    as_mesh_free(m);
    as_graph_free(g);
}

int
main(void)
{
    as_rules_set_cache_path("off");
    test_mlp();
    test_micro_share();
    test_emit();
    test_real_graphs();
    test_alpa_patterns();
    test_group();
    test_ilp_count();
    test_segments(6, 0);
    test_segments(2, 1);
    as_rules_reset();
    return done_testing();
}
