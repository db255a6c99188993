/* bench_onnx.c -- speed of the ONNX importer on a GPT-2 small training step.
 *
 * Builds the training step autoshard itself derives for GPT-2 small (gen
 * gpt2-small --train: 12 layers, h=768, seq 1024, batch 512, forward,
 * backward and Adam) and writes it as one ONNX graph the way a training
 * exporter does: forward ops as standard ONNX ops (MatMul with explicit
 * Transpose nodes, Add, LayerNormalization, Softmax, the five-node Erf GELU,
 * Gather, SoftmaxCrossEntropyLoss, Reshape with shape initializers), Adam
 * expanded into elementwise nodes (12 per parameter), gradient kernels
 * (LayerNormalizationGrad, SoftmaxGrad, GeluGrad, ...) as nodes of a custom
 * domain with their shapes in value_info, parameters as graph inputs; the
 * forward and backward passes are unrolled for 3 micro-batches whose
 * gradients are summed before the optimizer (gradient accumulation).  The
 * protobuf is encoded here by hand (wire format).  Then imports it with
 * as_graph_parse (detection, import, igraph checks) and prints nodes,
 * bytes, import time (best of 5) and peak RSS.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/autodiff.h"
#include "graph/io.h"
#include "graph/presets.h"
#include "graph/registry.h"

typedef AS_VEC(uint8_t) buf;

static void
pb_raw(buf *b, const void *p, size_t n)
{
    AS_VEC_RESERVE(b, b->n + n);
    memcpy(b->v + b->n, p, n);
    b->n += n;
}

static void
pb_vint(buf *b, uint64_t v)
{
    uint8_t t[10];
    size_t k = 0;

    do {
        t[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pb_raw(b, t, k);
}

static void
pb_int(buf *b, int field, int64_t v)
{
    pb_vint(b, (uint64_t)field << 3);
    pb_vint(b, (uint64_t)v);
}

static void
pb_bytes(buf *b, int field, const void *p, size_t n)
{
    pb_vint(b, (uint64_t)field << 3 | 2);
    pb_vint(b, n);
    pb_raw(b, p, n);
}

static void
pb_str(buf *b, int field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

static void
pb_msg(buf *b, int field, const buf *m)
{
    pb_bytes(b, field, m->v, m->n);
}

/* ONNX elem type of a dtype. */
static int
onnx_type(as_dtype t)
{
    switch (t) {
    case AS_DT_F16: return 10;
    case AS_DT_BF16: return 16;
    case AS_DT_I32: return 6;
    case AS_DT_I64: return 7;
    case AS_DT_PRED: return 9;
    default: return 1;
    }
}

/* ValueInfoProto NAME : S into field FIELD of G. */
static void
value_info(buf *g, int field, const char *name, const as_shape *s)
{
    buf vi = {0}, tp = {0}, tt = {0}, sh = {0};
    int i;

    for (i = 0; i < s->rank; i++) {
        buf d = {0};
        pb_int(&d, 1, s->dim[i]);
        pb_msg(&sh, 1, &d);
        free(d.v);
    }
    pb_int(&tt, 1, onnx_type(s->dtype));
    pb_msg(&tt, 2, &sh);
    pb_msg(&tp, 1, &tt);
    pb_str(&vi, 1, name);
    pb_msg(&vi, 2, &tp);
    pb_msg(g, field, &vi);
    free(vi.v);
    free(tp.v);
    free(tt.v);
    free(sh.v);
}

typedef struct wr {
    buf g;      /* GraphProto being built */
    long nodes;
    long fresh;
} wr;

/* A node OP(ins) -> outs with up to 2 attributes: int K=V, ints K=[..]. */
static void
node(wr *w, const char *op, const char *domain, const char *const *ins, int nin,
     const char *const *outs, int nout, const char *ak, int64_t av, const char *lk,
     const int64_t *lv, int ln)
{
    buf n = {0};
    int i;

    for (i = 0; i < nin; i++)
        pb_str(&n, 1, ins[i]);
    for (i = 0; i < nout; i++)
        pb_str(&n, 2, outs[i]);
    pb_str(&n, 4, op);
    if (ak != NULL) {
        buf a = {0};
        pb_str(&a, 1, ak);
        pb_int(&a, 3, av);
        pb_int(&a, 20, 2);
        pb_msg(&n, 5, &a);
        free(a.v);
    }
    if (lk != NULL) {
        buf a = {0};
        pb_str(&a, 1, lk);
        for (i = 0; i < ln; i++)
            pb_int(&a, 8, lv[i]);
        pb_int(&a, 20, 7);
        pb_msg(&n, 5, &a);
        free(a.v);
    }
    if (domain != NULL)
        pb_str(&n, 7, domain);
    pb_msg(&w->g, 1, &n);
    free(n.v);
    w->nodes++;
}

static const char *
tmp(wr *w, char *b, size_t n)
{
    snprintf(b, n, "t%ld", w->fresh++);
    return b;
}

/* An int64 initializer NAME = V[0..n). */
static void
init_i64(wr *w, const char *name, const int64_t *v, int n)
{
    buf t = {0};
    int i;

    if (n > 0)
        pb_int(&t, 1, n);
    pb_int(&t, 2, 7);
    for (i = 0; i < n; i++)
        pb_int(&t, 7, v[i]);
    pb_str(&t, 8, name);
    pb_msg(&w->g, 5, &t);
    free(t.v);
}

static void
init_f32(wr *w, const char *name, float v)
{
    buf t = {0};

    pb_int(&t, 2, 1);
    pb_str(&t, 8, name);
    pb_bytes(&t, 9, &v, 4);
    pb_msg(&w->g, 5, &t);
    free(t.v);
}

#define MICRO 3 /* micro-batches unrolled, gradients accumulated before the optimizer */
static int cur_mb = -1;

/* ONNX name of tensor ID: produced tensors of micro-batch cur_mb get ".mbK". */
static const char *
nm(const as_graph *g, int32_t id)
{
    static char bufs[16][300];
    static int k;
    const as_tensor *t = as_graph_tensor(g, id);

    if (t->producer < 0 || cur_mb < 0)
        return t->name;
    k = (k + 1) % 16;
    snprintf(bufs[k], sizeof bufs[k], "%s.mb%d", t->name, cur_mb);
    return bufs[k];
}
#define NM(id) nm(g, (id))
#define IN1(x) ((const char *const[]){(x)})
#define IN2(x, y) ((const char *const[]){(x), (y)})
#define IN3(x, y, z) ((const char *const[]){(x), (y), (z)})

/* One registry op of G as ONNX nodes. */
static void
emit(wr *w, const as_graph *g, const as_op *op)
{
    const char *name = op->def->name, *out = NM(op->out[0]);
    char a[64], b[64], c[64], d[64];
    int i;

    if (strcmp(name, "matmul") == 0) {
        const char *x = NM(op->in[0]), *y = NM(op->in[1]);
        int64_t perm[AS_MAX_RANK];
        for (i = 0; i < 2; i++) {
            const as_shape *s = &as_graph_tensor(g, op->in[i])->shape;
            int r = s->rank, k;
            if (!as_attr_int(op->attr, op->nattr, i ? "transpose_b" : "transpose_a", 0))
                continue;
            for (k = 0; k < r; k++)
                perm[k] = k;
            perm[r - 2] = r - 1;
            perm[r - 1] = r - 2;
            node(w, "Transpose", NULL, IN1(i ? y : x), 1, IN1(tmp(w, i ? b : a, 64)), 1, NULL, 0,
                 "perm", perm, r);
            if (i)
                y = b;
            else
                x = a;
        }
        node(w, "MatMul", NULL, IN2(x, y), 2, IN1(out), 1, NULL, 0, NULL, NULL, 0);
    } else if (strcmp(name, "add") == 0 || strcmp(name, "bias_add") == 0) {
        node(w, "Add", NULL, IN2(NM(op->in[0]), NM(op->in[1])), 2, IN1(out), 1, NULL, 0, NULL,
             NULL, 0);
    } else if (strcmp(name, "reshape") == 0) {
        const as_shape *s = &as_graph_tensor(g, op->out[0])->shape;
        snprintf(a, sizeof a, "%s.shape", out);
        init_i64(w, a, s->dim, s->rank);
        node(w, "Reshape", NULL, IN2(NM(op->in[0]), a), 2, IN1(out), 1, NULL, 0, NULL, NULL, 0);
    } else if (strcmp(name, "transpose") == 0) {
        const int64_t *p;
        int np = as_attr_ints(op->attr, op->nattr, "perm", &p);
        node(w, "Transpose", NULL, IN1(NM(op->in[0])), 1, IN1(out), 1, NULL, 0, "perm", p, np);
    } else if (strcmp(name, "scale") == 0) {
        snprintf(a, sizeof a, "%s.factor", out);
        init_f32(w, a, (float)as_attr_float(op->attr, op->nattr, "factor", 1.0));
        node(w, "Mul", NULL, IN2(NM(op->in[0]), a), 2, IN1(out), 1, NULL, 0, NULL, NULL, 0);
    } else if (strcmp(name, "reduce_sum") == 0) {
        const int64_t *dims;
        int nd = as_attr_ints(op->attr, op->nattr, "dims", &dims);
        snprintf(a, sizeof a, "%s.axes", out);
        init_i64(w, a, dims, nd);
        node(w, "ReduceSum", NULL, IN2(NM(op->in[0]), a), 2, IN1(out), 1, "keepdims",
             as_attr_int(op->attr, op->nattr, "keepdims", 0), NULL, NULL, 0);
    } else if (strcmp(name, "layernorm") == 0) {
        node(w, "LayerNormalization", NULL, IN3(NM(op->in[0]), NM(op->in[1]), NM(op->in[2])), 3,
             IN1(out), 1, "axis", -1, NULL, NULL, 0);
    } else if (strcmp(name, "softmax") == 0) {
        node(w, "Softmax", NULL, IN1(NM(op->in[0])), 1, IN1(out), 1, "axis", -1, NULL, NULL, 0);
    } else if (strcmp(name, "gelu") == 0) { /* PyTorch's exact GELU: five nodes */
        snprintf(a, sizeof a, "%s.c", out);
        init_f32(w, a, 1.41421356f);
        snprintf(b, sizeof b, "%s.one", out);
        init_f32(w, b, 1.0f);
        snprintf(c, sizeof c, "%s.half", out);
        init_f32(w, c, 0.5f);
        {
            char t1[64], t2[64], t3[64], t4[64];
            node(w, "Div", NULL, IN2(NM(op->in[0]), a), 2, IN1(tmp(w, t1, 64)), 1, NULL, 0, NULL,
                 NULL, 0);
            node(w, "Erf", NULL, IN1(t1), 1, IN1(tmp(w, t2, 64)), 1, NULL, 0, NULL, NULL, 0);
            node(w, "Add", NULL, IN2(t2, b), 2, IN1(tmp(w, t3, 64)), 1, NULL, 0, NULL, NULL, 0);
            node(w, "Mul", NULL, IN2(NM(op->in[0]), t3), 2, IN1(tmp(w, t4, 64)), 1, NULL, 0, NULL,
                 NULL, 0);
            node(w, "Mul", NULL, IN2(t4, c), 2, IN1(out), 1, NULL, 0, NULL, NULL, 0);
        }
    } else if (strcmp(name, "embedding") == 0) {
        node(w, "Gather", NULL, IN2(NM(op->in[0]), NM(op->in[1])), 2, IN1(out), 1, "axis", 0,
             NULL, NULL, 0);
    } else if (strcmp(name, "cross_entropy") == 0) {
        const as_shape *s = &as_graph_tensor(g, op->in[0])->shape;
        int64_t d2[2] = {as_shape_numel(s) / s->dim[s->rank - 1], s->dim[s->rank - 1]},
                d1[1] = {d2[0]};
        snprintf(a, sizeof a, "%s.s2", out);
        init_i64(w, a, d2, 2);
        snprintf(b, sizeof b, "%s.s1", out);
        init_i64(w, b, d1, 1);
        {
            char t1[64], t2[64];
            node(w, "Reshape", NULL, IN2(NM(op->in[0]), a), 2, IN1(tmp(w, t1, 64)), 1, NULL, 0,
                 NULL, NULL, 0);
            node(w, "Reshape", NULL, IN2(NM(op->in[1]), b), 2, IN1(tmp(w, t2, 64)), 1, NULL, 0,
                 NULL, NULL, 0);
            node(w, "SoftmaxCrossEntropyLoss", NULL, IN2(t1, t2), 2, IN1(out), 1, NULL, 0, NULL,
                 NULL, 0);
        }
    } else if (strcmp(name, "adam_m") == 0 || strcmp(name, "adam_v") == 0) {
        /* m' = b1*m + (1-b1)*g ; v' = b2*v + (1-b2)*g*g */
        int isv = name[5] == 'v';
        const char *gr = NM(op->in[1]);
        char t1[64], t2[64], t3[64];
        snprintf(a, sizeof a, "%s.beta", out);
        init_f32(w, a, isv ? 0.999f : 0.9f);
        snprintf(b, sizeof b, "%s.omb", out);
        init_f32(w, b, isv ? 0.001f : 0.1f);
        if (isv) {
            node(w, "Mul", NULL, IN2(gr, gr), 2, IN1(tmp(w, t3, 64)), 1, NULL, 0, NULL, NULL, 0);
            gr = t3;
        }
        node(w, "Mul", NULL, IN2(NM(op->in[0]), a), 2, IN1(tmp(w, t1, 64)), 1, NULL, 0, NULL,
             NULL, 0);
        node(w, "Mul", NULL, IN2(gr, b), 2, IN1(tmp(w, t2, 64)), 1, NULL, 0, NULL, NULL, 0);
        node(w, "Add", NULL, IN2(t1, t2), 2, IN1(out), 1, NULL, 0, NULL, NULL, 0);
    } else if (strcmp(name, "adam_update") == 0) {
        /* p' = p - lr * m / (sqrt(v) + eps) */
        char t1[64], t2[64], t3[64], t4[64];
        snprintf(a, sizeof a, "%s.eps", out);
        init_f32(w, a, 1e-8f);
        snprintf(b, sizeof b, "%s.lr", out);
        init_f32(w, b, 1e-3f);
        node(w, "Sqrt", NULL, IN1(NM(op->in[2])), 1, IN1(tmp(w, t1, 64)), 1, NULL, 0, NULL, NULL, 0);
        node(w, "Add", NULL, IN2(t1, a), 2, IN1(tmp(w, t2, 64)), 1, NULL, 0, NULL, NULL, 0);
        node(w, "Div", NULL, IN2(NM(op->in[1]), t2), 2, IN1(tmp(w, t3, 64)), 1, NULL, 0, NULL,
             NULL, 0);
        node(w, "Mul", NULL, IN2(t3, b), 2, IN1(tmp(w, t4, 64)), 1, NULL, 0, NULL, NULL, 0);
        node(w, "Sub", NULL, IN2(NM(op->in[0]), t4), 2, IN1(out), 1, NULL, 0, NULL, NULL, 0);
    } else { /* gradient kernels and the rest: a custom-domain node with declared shapes */
        const char *ins[16];
        const char *outs[AS_MAX_OUTS];
        for (i = 0; i < op->nin && i < 16; i++)
            ins[i] = NM(op->in[i]);
        for (i = 0; i < op->nout; i++) {
            outs[i] = NM(op->out[i]);
            value_info(&w->g, 13, outs[i], &as_graph_tensor(g, op->out[i])->shape);
        }
        snprintf(d, sizeof d, "%s", name);
        node(w, d, "ai.autoshard.grad", ins, op->nin < 16 ? op->nin : 16, outs, op->nout, NULL,
             0, NULL, NULL, 0);
    }
}

int
main(void)
{
    const as_preset *p = as_preset_find("gpt2-small");
    as_graph *g = NULL, *imp = NULL;
    as_train_opts t;
    as_err err = {0};
    wr w;
    buf m = {0}, os = {0};
    double best = 1e9;
    int32_t i;
    int k;

    memset(&w, 0, sizeof w);
    if (p == NULL || as_preset_build(p, NULL, &g, &err) != AS_OK) {
        fprintf(stderr, "bench_onnx: %s\n", err.msg);
        return 1;
    }
    as_train_opts_init(&t);
    if (as_autodiff(g, &t, &err) != AS_OK) {
        fprintf(stderr, "bench_onnx: %s\n", err.msg);
        return 1;
    }
    for (i = 0; i < as_graph_ntensors(g); i++) {
        const as_tensor *x = as_graph_tensor(g, i);
        if (x->producer < 0)
            value_info(&w.g, 11, x->name, &x->shape);
    }
    for (k = 0; k < MICRO; k++) { /* forward + backward per micro-batch */
        cur_mb = k;
        for (i = 0; i < as_graph_nops(g); i++)
            if (!(as_graph_op(g, i)->flags & AS_OF_OPTIMIZER))
                emit(&w, g, as_graph_op(g, i));
    }
    for (i = 0; i < as_graph_ntensors(g); i++) { /* accumulate: grad = grad.mb0 + grad.mb1 + ... */
        const as_tensor *x = as_graph_tensor(g, i);
        char a[300], b[300], c[300];
        if (!(x->flags & AS_TF_GRAD) || x->producer < 0)
            continue;
        cur_mb = 0;
        snprintf(a, sizeof a, "%s", nm(g, i));
        for (k = 1; k < MICRO; k++) {
            cur_mb = k;
            snprintf(b, sizeof b, "%s", nm(g, i));
            snprintf(c, sizeof c, "%s.acc%d", x->name, k);
            node(&w, "Add", NULL, IN2(a, b), 2, IN1(k == MICRO - 1 ? x->name : c), 1, NULL, 0,
                 NULL, NULL, 0);
            snprintf(a, sizeof a, "%s", c);
        }
    }
    cur_mb = -1;
    for (i = 0; i < as_graph_nops(g); i++)
        if (as_graph_op(g, i)->flags & AS_OF_OPTIMIZER)
            emit(&w, g, as_graph_op(g, i));
    for (i = 0; i < as_graph_noutputs(g); i++) { /* the loss of each micro-batch, the updates */
        const as_tensor *x = as_graph_tensor(g, as_graph_output(g, i));
        for (k = 0; k < MICRO; k++) {
            cur_mb = x->producer >= 0 && !(as_graph_op(g, x->producer)->flags & AS_OF_OPTIMIZER)
                         ? k : -1;
            value_info(&w.g, 12, nm(g, as_graph_output(g, i)), &x->shape);
            if (cur_mb < 0)
                break;
        }
    }
    cur_mb = -1;
    pb_str(&w.g, 2, "gpt2_small_train_step");
    pb_int(&m, 1, 8);
    pb_str(&m, 2, "bench_onnx");
    pb_msg(&m, 7, &w.g);
    pb_str(&os, 1, "");
    pb_int(&os, 2, 17);
    pb_msg(&m, 8, &os);
    as_verbosity = 0;
    for (k = 0; k < 5; k++) {
        double t0 = as_now(), t1;
        if (as_graph_parse("gpt2_small_train_step.onnx", (const char *)m.v, m.n, &imp, &err) !=
            AS_OK) {
            fprintf(stderr, "bench_onnx: %s\n", err.msg);
            return 1;
        }
        t1 = as_now();
        best = t1 - t0 < best ? t1 - t0 : best;
        if (k < 4)
            as_graph_free(imp);
    }
    {
        char rss[32];
        printf("onnx import: GPT-2 small training step, %ld nodes (%.2f MiB protobuf) -> %d ops, "
               "%d tensors\n", w.nodes, (double)m.n / 1048576.0, (int)as_graph_nops(imp),
               (int)as_graph_ntensors(imp));
        printf("import time: %.3f s best of 5 (target < 0.2 s); peak RSS: %s\n", best,
               as_fmt_bytes((double)as_peak_rss(), rss, sizeof rss));
    }
    as_graph_free(imp);
    as_graph_free(g);
    free(w.g.v);
    free(m.v);
    free(os.v);
    return 0;
}
