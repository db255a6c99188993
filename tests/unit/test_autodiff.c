/* test_autodiff.c -- the training-step transform: backward ops in reverse
 * program order, gradient accumulation for tensors with several users,
 * optimizer updates with their state, and whole-graph gradients checked
 * against finite differences through the reference interpreter.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "tap.h"

static int32_t
decl(as_graph *g, const char *name, as_tensor_kind kind, as_shape s)
{
    int32_t id = -1;
    as_err err;

    if (as_graph_add_tensor(g, name, &s, kind, kind == AS_TK_INPUT ? 0 : -1, &id, &err) != AS_OK)
        diag("decl %s: %s", name, err.msg);
    return id;
}

static int32_t
op(as_graph *g, const char *type, const char *name, const int32_t *in, int nin, const as_attr *a,
   int na)
{
    int32_t id;
    as_err err;

    if (as_graph_add_op(g, type, &name, 1, in, nin, a, na, &id, &err) != AS_OK) {
        diag("op %s: %s", name, err.msg);
        return -1;
    }
    return as_graph_op(g, id)->out[0];
}

/* A 2-layer MLP whose first weight is used twice (gradients accumulate). */
static as_graph *
mlp(void)
{
    as_graph *g = as_graph_new("mlp");
    int32_t x = decl(g, "x", AS_TK_INPUT, mkshape(AS_DT_F32, 2, 4, 6));
    int32_t y = decl(g, "y", AS_TK_INPUT, mkshape(AS_DT_F32, 2, 4, 3));
    int32_t w1 = decl(g, "w1", AS_TK_PARAM, mkshape(AS_DT_F32, 2, 6, 5));
    int32_t b1 = decl(g, "b1", AS_TK_PARAM, mkshape(AS_DT_F32, 1, 5));
    int32_t w2 = decl(g, "w2", AS_TK_PARAM, mkshape(AS_DT_F32, 2, 5, 3));
    int32_t in[2], h, h2, s, a, p, l;

    in[0] = x, in[1] = w1;
    h = op(g, "matmul", "h", in, 2, NULL, 0);
    h2 = op(g, "matmul", "h2", in, 2, NULL, 0);
    in[0] = h, in[1] = h2;
    s = op(g, "add", "s", in, 2, NULL, 0);
    in[0] = s, in[1] = b1;
    s = op(g, "bias_add", "hb", in, 2, NULL, 0);
    a = op(g, "tanh", "a", &s, 1, NULL, 0);
    in[0] = a, in[1] = w2;
    p = op(g, "matmul", "p", in, 2, NULL, 0);
    in[0] = p, in[1] = y;
    l = op(g, "mse_loss", "loss", in, 2, NULL, 0);
    if (l >= 0)
        as_graph_mark_output(g, l);
    return g;
}

/* Max relative error of every parameter gradient of trained graph G vs. finite differences. */
static double
whole_graph_check(as_graph *g, int32_t loss)
{
    int32_t nt = as_graph_ntensors(g), t;
    double **vals = as_xcalloc((size_t)nt, sizeof *vals), worst = 0.0;
    as_rng rng;
    as_err err;

    as_rng_seed(&rng, 42);
    as_graph_random_inputs(g, &rng, vals);
    if (as_graph_eval(g, vals, &err) != AS_OK) {
        diag("eval: %s", err.msg);
        worst = -1;
        goto out;
    }
    for (t = 0; t < nt; t++) {
        const as_tensor *p = as_graph_tensor(g, t);
        int32_t gid = -1, u;
        int64_t i, n;
        double *saved;
        if (p->kind != AS_TK_PARAM)
            continue;
        for (u = 0; u < nt; u++)
            if ((as_graph_tensor(g, u)->flags & AS_TF_GRAD) && as_graph_tensor(g, u)->of == t)
                gid = u;
        if (gid < 0) {
            diag("no gradient for %s", p->name);
            worst = -1;
            goto out;
        }
        n = as_shape_numel(&p->shape);
        saved = as_xmalloc((size_t)n * sizeof *saved);
        memcpy(saved, vals[gid], (size_t)n * sizeof *saved);
        for (i = 0; i < n; i++) {
            double x0 = vals[t][i], fp, fm, fd, e;
            vals[t][i] = x0 + 1e-6;
            as_graph_eval(g, vals, &err);
            fp = vals[loss][0];
            vals[t][i] = x0 - 1e-6;
            as_graph_eval(g, vals, &err);
            fm = vals[loss][0];
            vals[t][i] = x0;
            fd = (fp - fm) / 2e-6;
            e = fabs(fd - saved[i]) / (fabs(saved[i]) > 1 ? fabs(saved[i]) : 1);
            if (e > worst)
                worst = e;
        }
        free(saved);
    }
out:
    for (t = 0; t < nt; t++)
        free(vals[t]);
    free(vals);
    return worst;
}

static void
test_mlp_adam(void)
{
    as_graph *g = mlp();
    as_train_opts o;
    as_err err;
    int32_t nfwd = as_graph_nops(g), i, nstate = 0, nupd = 0, ngrad = 0, nbwd = 0, nopt = 0;
    int ok_order = 1;

    as_train_opts_init(&o);
    ok(as_autodiff(g, &o, &err) == AS_OK, "adam training step builds: %s", err.msg);
    for (i = 0; i < as_graph_ntensors(g); i++) {
        const as_tensor *t = as_graph_tensor(g, i);
        nstate += t->kind == AS_TK_STATE;
        nupd += t->kind == AS_TK_PARAM && t->update >= 0;
        ngrad += (t->flags & AS_TF_GRAD) != 0;
    }
    for (i = nfwd; i < as_graph_nops(g); i++) {
        const as_op *p = as_graph_op(g, i);
        nbwd += (p->flags & AS_OF_BACKWARD) != 0;
        nopt += (p->flags & AS_OF_OPTIMIZER) != 0;
        if ((p->flags & AS_OF_BACKWARD) && i > nfwd && (as_graph_op(g, i - 1)->flags &
                                                        AS_OF_OPTIMIZER))
            ok_order = 0;
    }
    is_int(nstate, 6, "two adam states per parameter");
    is_int(nupd, 3, "every parameter has an update");
    is_int(ngrad, 3, "three parameter gradients flagged");
    is_int(nopt, 9, "three optimizer ops per parameter");
    ok(nbwd >= 8, "backward ops emitted (%d)", nbwd);
    ok(ok_order, "optimizer ops come after the backward pass");
    ok(as_graph_train(g) == NULL, "train request consumed");
    {
        double e = whole_graph_check(g, as_graph_find(g, "loss"));
        ok(e >= 0 && e < 1e-6, "MLP gradients (w1 used twice) match finite differences (%.2g)", e);
    }
    ok(as_autodiff(g, &o, &err) != AS_OK && strstr(err.msg, "already"),
       "differentiating a training step twice is refused: %s", err.msg);
    as_graph_free(g);
}

/* sgd: p.new = p - lr * grad exactly. */
static void
test_sgd_values(void)
{
    as_graph *g = mlp();
    as_train_opts o;
    as_err err;
    int32_t nt, w2, w2n, gw2 = -1, t;
    double **vals, maxd = 0;
    as_rng rng;
    int64_t i;

    as_train_opts_init(&o);
    o.optimizer = "sgd";
    o.lr = 0.5;
    ok(as_autodiff(g, &o, &err) == AS_OK, "sgd step builds: %s", err.msg);
    nt = as_graph_ntensors(g);
    w2 = as_graph_find(g, "w2");
    w2n = as_graph_tensor(g, w2)->update;
    for (t = 0; t < nt; t++)
        if ((as_graph_tensor(g, t)->flags & AS_TF_GRAD) && as_graph_tensor(g, t)->of == w2)
            gw2 = t;
    vals = as_xcalloc((size_t)nt, sizeof *vals);
    as_rng_seed(&rng, 7);
    as_graph_random_inputs(g, &rng, vals);
    ok(w2n >= 0 && gw2 >= 0 && as_graph_eval(g, vals, &err) == AS_OK, "sgd step evaluates");
    if (w2n >= 0 && gw2 >= 0)
        for (i = 0; i < 15; i++)
            maxd = fmax(maxd, fabs(vals[w2n][i] - (vals[w2][i] - 0.5 * vals[gw2][i])));
    ok(maxd < 1e-12, "w2.new = w2 - lr * grad (max diff %.2g)", maxd);
    for (t = 0; t < nt; t++)
        free(vals[t]);
    free(vals);
    as_graph_free(g);
}

static void
test_momentum_and_errors(void)
{
    as_graph *g = mlp();
    as_train_opts o;
    as_err err;
    int32_t i, nstate = 0;

    as_train_opts_init(&o);
    o.optimizer = "momentum";
    ok(as_autodiff(g, &o, &err) == AS_OK, "momentum step builds: %s", err.msg);
    for (i = 0; i < as_graph_ntensors(g); i++)
        nstate += as_graph_tensor(g, i)->kind == AS_TK_STATE;
    is_int(nstate, 3, "one momentum buffer per parameter");
    as_graph_free(g);

    g = mlp();
    o.optimizer = "adagrad";
    ok(as_autodiff(g, &o, &err) == AS_EPARSE && strstr(err.msg, "unknown optimizer"),
       "unknown optimizer rejected: %s", err.msg);
    as_graph_free(g);

    g = as_graph_new("noloss");
    {
        int32_t x = decl(g, "x", AS_TK_PARAM, mkshape(AS_DT_F32, 2, 2, 2));
        op(g, "relu", "r", &x, 1, NULL, 0);
    }
    as_train_opts_init(&o);
    ok(as_autodiff(g, &o, &err) == AS_EPARSE && strstr(err.msg, "no scalar loss"),
       "graph without a loss rejected: %s", err.msg);
    as_graph_free(g);
}

/* A tiny attention block with embedding, layernorm, softmax and cross-entropy. */
static void
test_attention_block(void)
{
    as_graph *g = as_graph_new("attn");
    int32_t ids = decl(g, "ids", AS_TK_INPUT, mkshape(AS_DT_I32, 2, 2, 3));
    int32_t lab = decl(g, "labels", AS_TK_INPUT, mkshape(AS_DT_I32, 2, 2, 3));
    int32_t wte = decl(g, "wte", AS_TK_PARAM, mkshape(AS_DT_F32, 2, 5, 4));
    int32_t gam = decl(g, "ln.g", AS_TK_PARAM, mkshape(AS_DT_F32, 1, 4));
    int32_t bet = decl(g, "ln.b", AS_TK_PARAM, mkshape(AS_DT_F32, 1, 4));
    int32_t wq = decl(g, "wq", AS_TK_PARAM, mkshape(AS_DT_F32, 2, 4, 4));
    int32_t wk = decl(g, "wk", AS_TK_PARAM, mkshape(AS_DT_F32, 2, 4, 4));
    int32_t in[3], e, x, q, k, s, p, c, r, lg, l;
    as_attr tb = AS_ATTR_I("transpose_b", 1), sc = AS_ATTR_F("factor", 0.5);
    as_train_opts o;
    as_err err;

    in[0] = wte, in[1] = ids;
    e = op(g, "embedding", "emb", in, 2, NULL, 0);
    in[0] = e, in[1] = gam, in[2] = bet;
    x = op(g, "layernorm", "ln", in, 3, NULL, 0);
    in[0] = x, in[1] = wq;
    q = op(g, "matmul", "q", in, 2, NULL, 0);
    in[1] = wk;
    k = op(g, "matmul", "k", in, 2, NULL, 0);
    in[0] = q, in[1] = k;
    s = op(g, "matmul", "scores", in, 2, &tb, 1);
    s = op(g, "scale", "scaled", &s, 1, &sc, 1);
    p = op(g, "softmax", "probs", &s, 1, NULL, 0);
    in[0] = p, in[1] = x;
    c = op(g, "matmul", "ctx", in, 2, NULL, 0);
    in[0] = c, in[1] = e;
    r = op(g, "add", "resid", in, 2, NULL, 0);
    in[0] = r, in[1] = wte;
    lg = op(g, "matmul", "logits", in, 2, &tb, 1);
    in[0] = lg, in[1] = lab;
    l = op(g, "cross_entropy", "loss", in, 2, NULL, 0);
    ok(l >= 0, "attention block builds");
    if (l < 0) {
        as_graph_free(g);
        return;
    }
    as_graph_mark_output(g, l);
    as_train_opts_init(&o);
    ok(as_autodiff(g, &o, &err) == AS_OK, "attention block differentiates: %s", err.msg);
    {
        double e2 = whole_graph_check(g, l);
        ok(e2 >= 0 && e2 < 1e-6, "attention block gradients (tied embedding) match FD (%.2g)", e2);
    }
    as_graph_free(g);
}

int
main(void)
{
    plan_lazy();
    test_mlp_adam();
    test_sgd_values();
    test_momentum_and_errors();
    test_attention_block();
    return done_testing();
}
