/* test_solve_graphs.c -- exact solvers on tiny graphs built op by op:
 * brute force over the original problem (or the reduced one when the
 * original space exceeds brute's 1e7 plans) = GLPK's optimum (= CBC's when
 * built in) to 1e-9 relative, without and with a binding memory budget, on
 * meshes 2 and 2x2; every plan is checked on the problem and turned into a
 * shard plan.  The budget cases are skipped above 1e6 plans (memory rows
 * block the eliminations, and brute force would take seconds).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formulate/build.h"
#include "graph/autodiff.h"
#include "solve/solver.h"
#include "tap.h"

static as_err gerr;

static int32_t
tensor(as_graph *g, const char *name, as_tensor_kind kind, as_dtype dt, int rank, int64_t d0,
       int64_t d1)
{
    as_shape sh = {.dtype = dt, .rank = rank, .dim = {d0, d1}};
    int32_t id = -1;

    if (as_graph_add_tensor(g, name, &sh, kind, kind == AS_TK_INPUT ? 0 : -1, &id, &gerr) != AS_OK)
        diag("tensor %s: %s", name, gerr.msg);
    return id;
}

static int32_t
op(as_graph *g, const char *type, const char *out, int32_t a, int32_t b, int32_t c,
   const as_attr *attr, int nattr)
{
    int32_t in[3] = {a, b, c}, id;
    int nin = c >= 0 ? 3 : b >= 0 ? 2 : 1;
    const char *names[1] = {out};

    if (as_graph_add_op(g, type, names, 1, in, nin, attr, nattr, &id, &gerr) != AS_OK) {
        diag("op %s: %s", out, gerr.msg);
        return -1;
    }
    return as_graph_find(g, out);
}

#define F32 AS_DT_F32

/* The tiny graphs; each returns its graph (outputs marked). */
static as_graph *
build_case(int i, const char **name)
{
    as_graph *g = as_graph_new("tiny");
    int32_t x, w, w2, h, a, b, t;
    static const int64_t perm[2] = {1, 0};
    as_attr tp = AS_ATTR_V("perm", 2, perm);
    as_train_opts to;

    switch (i) {
    case 0:
        *name = "matmul";
        x = tensor(g, "x", AS_TK_INPUT, F32, 2, 16, 32);
        w = tensor(g, "w", AS_TK_PARAM, F32, 2, 32, 64);
        h = op(g, "matmul", "h", x, w, -1, NULL, 0);
        break;
    case 1:
        *name = "matmul+relu";
        x = tensor(g, "x", AS_TK_INPUT, F32, 2, 16, 32);
        w = tensor(g, "w", AS_TK_PARAM, F32, 2, 32, 64);
        a = op(g, "matmul", "a", x, w, -1, NULL, 0);
        h = op(g, "relu", "h", a, -1, -1, NULL, 0);
        break;
    case 2:
        *name = "two matmuls";
        x = tensor(g, "x", AS_TK_INPUT, F32, 2, 16, 32);
        w = tensor(g, "w", AS_TK_PARAM, F32, 2, 32, 64);
        w2 = tensor(g, "w2", AS_TK_PARAM, F32, 2, 64, 8);
        a = op(g, "matmul", "a", x, w, -1, NULL, 0);
        h = op(g, "matmul", "h", a, w2, -1, NULL, 0);
        break;
    case 3:
        *name = "add of two matmuls";
        x = tensor(g, "x", AS_TK_INPUT, F32, 2, 16, 32);
        w = tensor(g, "w", AS_TK_PARAM, F32, 2, 32, 64);
        w2 = tensor(g, "w2", AS_TK_PARAM, F32, 2, 32, 64);
        a = op(g, "matmul", "a", x, w, -1, NULL, 0);
        b = op(g, "matmul", "b", x, w2, -1, NULL, 0);
        h = op(g, "add", "h", a, b, -1, NULL, 0);
        break;
    case 4:
        *name = "layernorm+matmul";
        x = tensor(g, "x", AS_TK_INPUT, F32, 2, 16, 32);
        a = tensor(g, "gamma", AS_TK_PARAM, F32, 1, 32, 0);
        b = tensor(g, "beta", AS_TK_PARAM, F32, 1, 32, 0);
        w = tensor(g, "w", AS_TK_PARAM, F32, 2, 32, 64);
        t = op(g, "layernorm", "n", x, a, b, NULL, 0);
        h = op(g, "matmul", "h", t, w, -1, NULL, 0);
        break;
    case 5:
        *name = "matmul+softmax";
        x = tensor(g, "x", AS_TK_INPUT, F32, 2, 16, 32);
        w = tensor(g, "w", AS_TK_PARAM, F32, 2, 32, 64);
        a = op(g, "matmul", "a", x, w, -1, NULL, 0);
        h = op(g, "softmax", "h", a, -1, -1, NULL, 0);
        break;
    case 6:
        *name = "embedding+matmul";
        x = tensor(g, "ids", AS_TK_INPUT, AS_DT_I32, 1, 16, 0);
        a = tensor(g, "table", AS_TK_PARAM, F32, 2, 128, 32);
        w = tensor(g, "w", AS_TK_PARAM, F32, 2, 32, 64);
        t = op(g, "embedding", "e", a, x, -1, NULL, 0);
        h = op(g, "matmul", "h", t, w, -1, NULL, 0);
        break;
    case 7:
        *name = "transpose+matmul";
        x = tensor(g, "x", AS_TK_INPUT, F32, 2, 32, 16);
        w = tensor(g, "w", AS_TK_PARAM, F32, 2, 32, 64);
        t = op(g, "transpose", "xt", x, -1, -1, &tp, 1);
        h = op(g, "matmul", "h", t, w, -1, NULL, 0);
        break;
    case 8:
        *name = "matmul+gelu+matmul";
        x = tensor(g, "x", AS_TK_INPUT, F32, 2, 16, 32);
        w = tensor(g, "w", AS_TK_PARAM, F32, 2, 32, 64);
        w2 = tensor(g, "w2", AS_TK_PARAM, F32, 2, 64, 32);
        a = op(g, "matmul", "a", x, w, -1, NULL, 0);
        t = op(g, "gelu", "g", a, -1, -1, NULL, 0);
        h = op(g, "matmul", "h", t, w2, -1, NULL, 0);
        break;
    case 9:
        *name = "residual: x + matmul(x)";
        x = tensor(g, "x", AS_TK_INPUT, F32, 2, 16, 32);
        w = tensor(g, "w", AS_TK_PARAM, F32, 2, 32, 32);
        a = op(g, "matmul", "a", x, w, -1, NULL, 0);
        h = op(g, "add", "h", x, a, -1, NULL, 0);
        break;
    default:
        *name = "1-layer MLP training step (sgd)";
        x = tensor(g, "x", AS_TK_INPUT, F32, 2, 16, 32);
        b = tensor(g, "y", AS_TK_INPUT, F32, 2, 16, 8);
        w = tensor(g, "w", AS_TK_PARAM, F32, 2, 32, 8);
        a = op(g, "matmul", "p", x, w, -1, NULL, 0);
        h = op(g, "mse_loss", "l", a, b, -1, NULL, 0);
        if (h >= 0) {
            as_graph_mark_output(g, h);
            as_train_opts_init(&to);
            to.optimizer = "sgd";
            if (as_autodiff(g, &to, &gerr) != AS_OK) {
                diag("autodiff: %s", gerr.msg);
                h = -1;
            }
        }
        if (h < 0) {
            as_graph_free(g);
            return NULL;
        }
        return g;
    }
    if (h < 0) {
        as_graph_free(g);
        return NULL;
    }
    as_graph_mark_output(g, h);
    return g;
}
#define NCASES 11

/* Solve P with SOLVER; outcome and objective in *OC / *OBJ, the plan checked on P and GP. */
static int
solve_one(const as_graph_problem *gp, const char *solver, unsigned reduce, as_outcome *oc,
          double *obj, double *peak)
{
    as_solve_opts o;
    as_solve_result r;
    as_err err = {0};
    as_shard_plan *sp = NULL;
    as_plan_source src = {solver, "optimal", 0, 0, -1};
    double o2, pk;
    int good = 1;

    as_solve_opts_init(&o);
    o.solver = solver;
    o.reduce = reduce;
    *obj = NAN;
    if (as_solve_problem(gp->p, &o, &r, &err) != AS_OK) {
        diag("%s: %s", solver, err.msg);
        return 0;
    }
    *oc = r.outcome;
    if (r.nplans > 0) {
        *obj = r.plans[0].objective;
        *peak = r.plans[0].peak;
        if (as_problem_check(gp->p, r.plans[0].choice, &o2, &pk, &err) != AS_OK ||
            fabs(o2 - *obj) > 1e-9 * fabs(o2)) {
            diag("%s: plan does not check: %s", solver, err.msg);
            good = 0;
        } else if (as_plan_from_choice(gp->map, r.plans[0].choice, &src, &sp, &err) != AS_OK) {
            diag("%s: shard plan: %s", solver, err.msg);
            good = 0;
        }
        as_shard_plan_free(sp);
        if (r.plans[0].status != AS_OUTCOME_OPTIMAL)
            good = 0;
    }
    as_solve_result_free(&r);
    return good;
}

static double
space(const as_problem *p)
{
    double s = 1;
    size_t v;

    for (v = 0; v < as_problem_nnodes(p); v++)
        s *= (double)as_problem_node(p, v)->k;
    return s;
}

static int
same(double a, double b)
{
    return (isnan(a) && isnan(b)) || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

static void
test_tiny(void)
{
    static const char *const meshes[] = {"2", "2x2"};
    int i, m, mem;

    for (i = 0; i < NCASES; i++) {
        for (m = 0; m < 2; m++) {
            const char *name = "?";
            as_graph *g = build_case(i, &name);
            as_graph_setup su = {.mesh = meshes[m]};
            as_graph_problem gp;
            as_err err = {0};
            double peak = -1;

            if (g == NULL) {
                ok(0, "case %d (%s): graph builds", i, name);
                continue;
            }
            as_build_opts_init(&su.build);
            if (as_graph_problem_init(&gp, g, &su, &err) != AS_OK) {
                ok(0, "%s on %s: problem: %s", name, meshes[m], err.msg);
                continue;
            }
            for (mem = 0; mem < 2; mem++) {
                double sp = space(gp.p), ob = NAN, og = NAN, oc = NAN, pk = -1;
                unsigned red = sp <= 1e7 ? 0 : AS_REDUCE_ALL;
                as_outcome cb = AS_OUTCOME_NOTRUN, cg = AS_OUTCOME_NOTRUN;
                int good;
                if (mem) { /* halfway between the lower bound and the free optimum's peak */
                    double lb = as_problem_peak_lower_bound(gp.p);
                    if (sp > 1e6) { /* memory rows block the eliminations; keep the test fast */
                        diag("%s on %s: %.3g plans: no budget case", name, meshes[m], sp);
                        continue;
                    }
                    if (!(peak > lb)) {
                        diag("%s on %s: the optimum's peak is the lower bound: no budget case",
                             name, meshes[m]);
                        continue;
                    }
                    as_problem_set_memory(gp.p, 0.5 * (peak + lb));
                }
                good = solve_one(&gp, "brute", red, &cb, &ob, &pk);
                if (!mem)
                    peak = pk;
                good &= solve_one(&gp, "glpk", AS_REDUCE_ALL, &cg, &og, &pk);
                ok(good && cb == cg && (cb == AS_OUTCOME_OPTIMAL || cb == AS_OUTCOME_INFEASIBLE) &&
                       same(ob, og),
                   "%s on %s%s: brute%s %.12g (%s) = glpk %.12g (%s), %.3g plans", name,
                   meshes[m], mem ? " (budget)" : "", red ? " (reduced)" : "", ob,
                   as_outcome_name(cb), og, as_outcome_name(cg), sp);
#ifdef HAVE_CBC
                {
                    as_outcome cc = AS_OUTCOME_NOTRUN;
                    good = solve_one(&gp, "cbc", AS_REDUCE_ALL, &cc, &oc, &pk);
                    ok(good && cc == cb && same(ob, oc), "%s on %s%s: cbc %.12g = brute", name,
                       meshes[m], mem ? " (budget)" : "", oc);
                }
#else
                (void)oc;
#endif
            }
            as_graph_problem_free(&gp);
        }
    }
}

/*
 * A 3-axis mesh (2x2x2): strategies that split a dim over several axes are
 * many; the exact dominance (with the other reductions) keeps the optimum of
 * the ILP without it (follow and alias merging only), without and with a
 * binding budget, and does drop strategies.
 */
static void
test_3axis(void)
{
    static const int cases[] = {2, 8, 9, 10};
    const unsigned plain = AS_REDUCE_FOLLOW | AS_REDUCE_ALIAS | AS_REDUCE_CONST;
    size_t dropped = 0;
    int i, mem;

    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const char *name = "?";
        as_graph *g = build_case(cases[i], &name);
        as_graph_setup su = {.mesh = "2x2x2"};
        as_graph_problem gp;
        as_err err = {0};
        double peak = -1;

        if (g == NULL) {
            ok(0, "case %d (%s): graph builds", cases[i], name);
            continue;
        }
        as_build_opts_init(&su.build);
        if (as_graph_problem_init(&gp, g, &su, &err) != AS_OK) {
            ok(0, "%s on 2x2x2: problem: %s", name, err.msg);
            continue;
        }
        for (mem = 0; mem < 2; mem++) {
            as_solve_opts o;
            as_solve_result r;
            double op = NAN, od = NAN, pk = -1;
            as_outcome cp = AS_OUTCOME_NOTRUN;
            int good;
            if (mem) {
                double lb = as_problem_peak_lower_bound(gp.p);
                if (!(peak > lb)) {
                    diag("%s on 2x2x2: no budget can bind", name);
                    continue;
                }
                as_problem_set_memory(gp.p, 0.5 * (peak + lb));
            }
            good = solve_one(&gp, "glpk", plain, &cp, &op, &pk);
            if (!mem)
                peak = pk;
            as_solve_opts_init(&o);
            o.solver = "glpk";
            o.reduce = AS_REDUCE_ALL;
            if (as_solve_problem(gp.p, &o, &r, &err) != AS_OK) {
                ok(0, "%s on 2x2x2: %s", name, err.msg);
                continue;
            }
            if (r.nplans > 0)
                od = r.plans[0].objective;
            dropped += r.red.dominated;
            ok(good && cp == r.outcome && same(op, od),
               "%s on 2x2x2%s: with dominance %.12g (%zu strategies dropped) = without %.12g (%s)",
               name, mem ? " (budget)" : "", od, r.red.dominated, op, as_outcome_name(cp));
            as_solve_result_free(&r);
        }
        as_graph_problem_free(&gp);
    }
    ok(dropped > 0, "dominance drops strategies on 2x2x2 (%zu)", dropped);
}

int
main(void)
{
    test_tiny();
    test_3axis();
    return done_testing();
}
