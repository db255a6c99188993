/* test_ops_nn.c -- the nn and optim op families: shape inference and its
 * error messages, FLOP counts and flags, reference kernels against values
 * computed by hand, every gradient rule against central finite differences,
 * the shape of the emitted matmul backward, and one Adam step by hand.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/autodiff.h"
#include "graph/graph.h"
#include "graph/registry.h"
#include "tap.h"
#include "unit/gradcheck.h"

#define GC_TOL 1e-6

/* Shape literal: SH(AS_DT_F32, 2, 3) is f32[2,3]. */
#define SH(dt, ...)                                                                                \
    shape_of((dt), (const int64_t[]){__VA_ARGS__},                                                 \
             (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define F32 AS_DT_F32
#define I32 AS_DT_I32

static as_shape
shape_of(as_dtype dt, const int64_t *d, int rank)
{
    as_shape s;
    int i;

    memset(&s, 0, sizeof s);
    s.dtype = dt;
    s.rank = rank;
    for (i = 0; i < rank; i++)
        s.dim[i] = d[i];
    return s;
}

static as_shape
scalar_of(as_dtype dt)
{
    return shape_of(dt, NULL, 0);
}

/* What building one op on declared inputs gave. */
typedef struct built {
    int rc;       /**< status of as_graph_add_op */
    char out[64]; /**< output 0's shape as text */
    double flops; /**< as_op_flops */
    double bytes; /**< as_op_bytes */
    unsigned flags;
    as_err err;
} built;

/* Declare inputs of shapes IN and append one OPTYPE op; report what happened. */
static built
build(const char *optype, const as_shape *in, int nin, const as_attr *attr, int nattr)
{
    as_graph *g = as_graph_new("t");
    int32_t ids[8], opid = -1;
    built b;
    int i;

    memset(&b, 0, sizeof b);
    for (i = 0; i < nin; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "in%d", i);
        if (as_graph_add_tensor(g, nm, &in[i], AS_TK_INPUT, -1, &ids[i], &b.err) != AS_OK) {
            b.rc = b.err.code;
            goto out;
        }
    }
    b.rc = as_graph_add_op(g, optype, NULL, 0, ids, nin, attr, nattr, &opid, &b.err);
    if (b.rc == AS_OK) {
        const as_op *op = as_graph_op(g, opid);
        as_shape ins[8], outs[AS_MAX_OUTS];
        as_opinfo info;
        for (i = 0; i < op->nout; i++)
            outs[i] = as_graph_tensor(g, op->out[i])->shape;
        as_graph_op_in_shapes(g, op, ins);
        info.def = op->def;
        info.nin = op->nin;
        info.in = ins;
        info.nout = op->nout;
        info.out = outs;
        info.nattr = op->nattr;
        info.attr = op->attr;
        as_shape_str(&outs[0], b.out, sizeof b.out);
        b.flops = as_op_flops(&info);
        b.bytes = as_op_bytes(&info);
        b.flags = op->def->flags;
    }
out:
    as_graph_free(g);
    return b;
}

/* Does building OPTYPE fail with a message containing WANT? */
static void
expect_err(const char *optype, const as_shape *in, int nin, const as_attr *attr, int nattr,
           const char *want, const char *desc)
{
    built b = build(optype, in, nin, attr, nattr);

    if (!ok(b.rc == AS_EPARSE && strstr(b.err.msg, want) != NULL, "%s", desc))
        diag("  rc %d, message '%s', want '%s'", b.rc, b.err.msg, want);
}

static void
test_infer(void)
{
    as_shape in[3];
    as_attr ta = AS_ATTR_I("transpose_a", 1), tb = AS_ATTR_I("transpose_b", 1);
    as_attr tab[2] = {AS_ATTR_I("transpose_a", 1), AS_ATTR_I("transpose_b", 1)};

    in[0] = SH(F32, 2, 3);
    in[1] = SH(F32, 3, 4);
    is_str(build("matmul", in, 2, NULL, 0).out, "f32[2,4]", "matmul [2,3]x[3,4]");
    in[0] = SH(F32, 3, 2);
    is_str(build("matmul", in, 2, &ta, 1).out, "f32[2,4]", "matmul transpose_a");
    in[0] = SH(F32, 2, 3);
    in[1] = SH(F32, 4, 3);
    is_str(build("matmul", in, 2, &tb, 1).out, "f32[2,4]", "matmul transpose_b");
    in[0] = SH(F32, 3, 2);
    is_str(build("matmul", in, 2, tab, 2).out, "f32[2,4]", "matmul both transposed");
    in[0] = SH(F32, 5, 2, 3);
    in[1] = SH(F32, 3, 4);
    is_str(build("matmul", in, 2, NULL, 0).out, "f32[5,2,4]", "matmul rank 3 x rank 2");
    in[0] = SH(F32, 2, 3);
    in[1] = SH(F32, 5, 3, 4);
    is_str(build("matmul", in, 2, NULL, 0).out, "f32[5,2,4]", "matmul rank 2 x rank 3");
    in[0] = SH(F32, 2, 1, 2, 3);
    in[1] = SH(F32, 5, 3, 4);
    is_str(build("matmul", in, 2, NULL, 0).out, "f32[2,5,2,4]", "matmul batch broadcast");
    in[0] = SH(F32, 8, 16);
    in[1] = SH(F32, 32, 4);
    expect_err("matmul", in, 2, NULL, 0, "matmul: inner dims differ: f32[8,16] x f32[32,4]",
               "matmul inner dims message");
    expect_err("matmul", in, 2, &tb, 1, "(transpose_a=0 transpose_b=1)",
               "matmul message names the transposes");
    in[0] = SH(F32, 4);
    in[1] = SH(F32, 4, 2);
    expect_err("matmul", in, 2, NULL, 0, "rank >= 2", "matmul rejects a rank-1 operand");
    {
        as_attr t2 = AS_ATTR_I("transpose_a", 2);
        in[0] = SH(F32, 4, 4);
        expect_err("matmul", in, 2, &t2, 1, "must be 0 or 1", "matmul transpose_a=2");
    }
    in[0] = SH(F32, 2, 3, 4);
    in[1] = SH(F32, 5, 4, 2);
    expect_err("matmul", in, 2, NULL, 0, "batch dims do not broadcast: f32[2,3,4] x f32[5,4,2]",
               "matmul batch mismatch message");
    in[0] = SH(F32, 2, 3);
    in[1] = SH(AS_DT_BF16, 3, 2);
    expect_err("matmul", in, 2, NULL, 0, "differ in type", "matmul dtype mismatch");

    in[0] = SH(F32, 4, 10);
    is_str(build("softmax", in, 1, NULL, 0).out, "f32[4,10]", "softmax shape");
    {
        as_attr ax = AS_ATTR_I("axis", 2);
        expect_err("softmax", in, 1, &ax, 1, "axis 2 out of range for f32[4,10]",
                   "softmax bad axis");
    }
    in[0] = SH(I32, 4, 10);
    expect_err("log_softmax", in, 1, NULL, 0, "must be floating point", "log_softmax on ints");

    in[0] = SH(F32, 2, 3, 8);
    in[1] = SH(F32, 8);
    in[2] = SH(F32, 8);
    is_str(build("layernorm", in, 3, NULL, 0).out, "f32[2,3,8]", "layernorm shape");
    in[1] = SH(F32, 4);
    expect_err("layernorm", in, 3, NULL, 0,
               "layernorm: gamma must be f32[8] (the last dim of f32[2,3,8]), got f32[4]",
               "layernorm gamma size message");
    in[1] = SH(F32, 8);
    in[2] = SH(F32, 3, 8);
    expect_err("layernorm", in, 3, NULL, 0, "beta must be f32[8]", "layernorm beta shape");
    {
        as_attr eps = AS_ATTR_F("eps", -1.0);
        in[2] = SH(F32, 8);
        expect_err("layernorm", in, 3, &eps, 1, "eps must be >= 0", "layernorm negative eps");
    }
    in[1] = SH(F32, 8);
    is_str(build("rmsnorm", in, 2, NULL, 0).out, "f32[2,3,8]", "rmsnorm shape");
    is_str(build("rmsnorm_grad_gamma", (as_shape[]){in[0], in[0]}, 2, NULL, 0).out, "f32[8]",
           "rmsnorm_grad_gamma shape");

    in[0] = SH(F32, 10, 8);
    in[1] = SH(I32, 2, 3);
    is_str(build("embedding", in, 2, NULL, 0).out, "f32[2,3,8]", "embedding shape");
    in[1] = SH(F32, 2, 3);
    expect_err("embedding", in, 2, NULL, 0, "embedding: input 1 must be integer",
               "embedding float ids");
    {
        as_attr voc = AS_ATTR_I("vocab", 10);
        in[0] = SH(F32, 2, 3, 8);
        in[1] = SH(I32, 2, 3);
        is_str(build("embedding_grad", in, 2, &voc, 1).out, "f32[10,8]", "embedding_grad shape");
        in[1] = SH(I32, 2, 4);
        expect_err("embedding_grad", in, 2, &voc, 1, "dy must be the ids shape plus [hidden]",
                   "embedding_grad shape mismatch");
    }
    {
        as_attr oh[2] = {AS_ATTR_I("depth", 5), AS_ATTR_S("dtype", "bf16")};
        in[0] = SH(I32, 2, 3);
        is_str(build("one_hot", in, 1, oh, 2).out, "bf16[2,3,5]", "one_hot shape and dtype");
        oh[0] = AS_ATTR_I("depth", 0);
        expect_err("one_hot", in, 1, oh, 2, "depth must be >= 1", "one_hot depth 0");
    }

    in[0] = SH(F32, 4, 10);
    in[1] = SH(I32, 4);
    is_str(build("cross_entropy", in, 2, NULL, 0).out, "f32[]", "cross_entropy is a scalar");
    in[1] = SH(I32, 4, 1);
    expect_err("cross_entropy", in, 2, NULL, 0,
               "labels must have the shape of logits without its last dim: logits f32[4,10], "
               "labels i32[4,1]",
               "cross_entropy labels shape message");
    in[1] = SH(F32, 4);
    expect_err("cross_entropy", in, 2, NULL, 0, "must be integer", "cross_entropy float labels");
    in[0] = SH(F32, 4, 10);
    in[1] = SH(F32, 4, 9);
    expect_err("mse_loss", in, 2, NULL, 0, "pred and target differ in shape", "mse_loss shapes");
    in[1] = SH(F32, 4, 10);
    is_str(build("mse_loss", in, 2, NULL, 0).out, "f32[]", "mse_loss is a scalar");

    in[0] = SH(F32, 4, 10);
    in[1] = SH(F32, 4, 10);
    in[2] = SH(F32, 10, 4);
    expect_err("adam_update", in, 3, NULL, 0, "input 2 must have the shape of input 0",
               "adam_update shape mismatch");
    {
        as_attr b1 = AS_ATTR_F("beta1", 1.0);
        expect_err("adam_m", in, 2, &b1, 1, "beta1 must be in [0, 1)", "adam_m beta1 range");
    }
    is_str(build("sgd_update", in, 2, NULL, 0).out, "f32[4,10]", "sgd_update shape");
}

static void
test_flops_flags(void)
{
    as_shape in[3];
    unsigned opt = AS_OPF_OPTIMIZER | AS_OPF_ELEMENTWISE | AS_OPF_FOLLOW;
    built b;

    in[0] = SH(F32, 4, 2, 3);
    in[1] = SH(F32, 3, 5);
    b = build("matmul", in, 2, NULL, 0);
    is_double(b.flops, 2.0 * 4 * 2 * 5 * 3, 1e-12, "matmul flops = 2*batch*m*n*k");
    ok(!(b.flags & (AS_OPF_FOLLOW | AS_OPF_ELEMENTWISE)), "matmul is not FOLLOW");
    in[0] = SH(F32, 4, 10);
    b = build("softmax", in, 1, NULL, 0);
    is_double(b.flops, 200.0, 1e-12, "softmax ~5 flops per element");
    ok(!(b.flags & AS_OPF_FOLLOW), "softmax is not FOLLOW");
    in[1] = SH(I32, 4);
    b = build("cross_entropy", in, 2, NULL, 0);
    is_double(b.flops, 200.0, 1e-12, "cross_entropy ~5*C per row");
    ok(b.flags & AS_OPF_LOSS, "cross_entropy is a loss");
    in[1] = SH(F32, 10);
    in[2] = SH(F32, 10);
    is_double(build("layernorm", in, 3, NULL, 0).flops, 320.0, 1e-12, "layernorm ~8 per element");
    in[1] = SH(F32, 4, 10);
    in[2] = SH(F32, 4, 10);
    b = build("adam_update", in, 3, NULL, 0);
    is_double(b.flops, 400.0, 1e-12, "adam_update ~10 per element");
    ok((b.flags & opt) == opt && !(b.flags & AS_OPF_GRAD), "adam_update flags");
    ok(build("mse_loss", in, 2, NULL, 0).flags & AS_OPF_LOSS, "mse_loss is a loss");
    in[2] = SH(F32, 10);
    ok(build("layernorm_grad_x", in, 3, NULL, 0).flags & AS_OPF_GRAD, "layernorm_grad_x is GRAD");
    /* ids i32[2,3] (24 bytes) + 6 rows of 8 floats read and written (2 * 192). */
    in[0] = SH(F32, 10, 8);
    in[1] = SH(I32, 2, 3);
    is_double(build("embedding", in, 2, NULL, 0).bytes, 408.0, 1e-12,
              "embedding bytes count the gathered rows, not the table");
}

/* Run OPTYPE's kernel and compare output 0 with WANT[0..n). */
static void
check_kernel(const char *optype, const as_shape *shapes, int nin, const double *const *in,
             const as_attr *attr, int nattr, const double *want, int n, const char *desc)
{
    double got[64];
    as_err err;
    int i, bad = -1;

    if (run_kernel(optype, shapes, nin, in, attr, nattr, got, NULL, &err) != AS_OK) {
        ok(0, "%s", desc);
        diag("  %s", err.msg);
        return;
    }
    for (i = 0; i < n && bad < 0; i++)
        if (!(fabs(got[i] - want[i]) <= 1e-9 * (fabs(want[i]) > 1 ? fabs(want[i]) : 1)))
            bad = i;
    if (!ok(bad < 0, "%s", desc))
        diag("  element %d: got %.12g, want %.12g", bad, got[bad], want[bad]);
}

static void
test_matmul_values(void)
{
    static const double a[] = {1, 2, 3, 4, 5, 6};    /* [2,3] */
    static const double at[] = {1, 4, 2, 5, 3, 6};   /* a^T [3,2] */
    static const double b[] = {7, 8, 9, 10, 11, 12}; /* [3,2] */
    static const double bt[] = {7, 9, 11, 8, 10, 12};
    static const double c[] = {58, 64, 139, 154};
    static const double a2[] = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6}; /* [2,2,3] */
    static const double c2[] = {58, 64, 139, 154, -58, -64, -139, -154};
    static const double b2[] = {7, 8, 9, 10, 11, 12, 1, 0, 0, 1, 0, 0}; /* [2,3,2] */
    static const double c3[] = {58, 64, 139, 154, 1, 2, 4, 5};
    as_attr ta = AS_ATTR_I("transpose_a", 1), tb = AS_ATTR_I("transpose_b", 1);
    as_attr tab[2] = {AS_ATTR_I("transpose_a", 1), AS_ATTR_I("transpose_b", 1)};
    as_shape s[2];

    s[0] = SH(F32, 2, 3);
    s[1] = SH(F32, 3, 2);
    check_kernel("matmul", s, 2, (const double *[]){a, b}, NULL, 0, c, 4, "matmul [2,3]x[3,2]");
    s[0] = SH(F32, 3, 2);
    check_kernel("matmul", s, 2, (const double *[]){at, b}, &ta, 1, c, 4, "matmul transpose_a");
    s[0] = SH(F32, 2, 3);
    s[1] = SH(F32, 2, 3);
    check_kernel("matmul", s, 2, (const double *[]){a, bt}, &tb, 1, c, 4, "matmul transpose_b");
    s[0] = SH(F32, 3, 2);
    check_kernel("matmul", s, 2, (const double *[]){at, bt}, tab, 2, c, 4,
                 "matmul both transposed");
    s[0] = SH(F32, 2, 2, 3);
    s[1] = SH(F32, 3, 2);
    check_kernel("matmul", s, 2, (const double *[]){a2, b}, NULL, 0, c2, 8,
                 "matmul batched [2,2,3]x[3,2]");
    s[0] = SH(F32, 2, 3);
    s[1] = SH(F32, 2, 3, 2);
    check_kernel("matmul", s, 2, (const double *[]){a, b2}, NULL, 0, c3, 8,
                 "matmul [2,3]x[2,3,2] broadcasts a");
}

static void
test_nn_values(void)
{
    static const double x3[] = {1, 2, 3};
    static const double big[] = {1000, 1001, 1002};
    static const double sm[] = {0.0900305731703805, 0.2447284710547976, 0.6652409557748219};
    static const double lsm[] = {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806};
    static const double x23[] = {0, 1, 2, 0, 1, 2}; /* [2,3]; axis 0 pairs are equal */
    static const double half[] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    static const double row[] = {1, 2, 3, 4}, ones[] = {1, 1, 1, 1}, zeros[] = {0, 0, 0, 0};
    static const double two[] = {2, 2, 2, 2}, one[] = {1, 1, 1, 1};
    static const double ln[] = {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579,
                                1.3416407864998738};
    static const double ln2[] = {-1.6832815729997477, 0.1055728090000842, 1.8944271909999158,
                                 3.6832815729997477};
    static const double rx[] = {3, 4}, rg[] = {1, 2};
    static const double rms[] = {0.848528137423857, 2.262741699796952};
    as_attr ax0 = AS_ATTR_I("axis", 0), eps0 = AS_ATTR_F("eps", 0.0);
    as_shape s[3];

    s[0] = SH(F32, 3);
    check_kernel("softmax", s, 1, (const double *[]){x3}, NULL, 0, sm, 3, "softmax of [1,2,3]");
    check_kernel("softmax", s, 1, (const double *[]){big}, NULL, 0, sm, 3,
                 "softmax is stable at 1000");
    check_kernel("log_softmax", s, 1, (const double *[]){x3}, NULL, 0, lsm, 3,
                 "log_softmax of [1,2,3]");
    check_kernel("log_softmax", s, 1, (const double *[]){big}, NULL, 0,
                 (const double[]){lsm[0], lsm[1], lsm[2]}, 3, "log_softmax is stable at 1000");
    s[0] = SH(F32, 2, 3);
    check_kernel("softmax", s, 1, (const double *[]){x23}, &ax0, 1, half, 6,
                 "softmax along axis 0");
    s[0] = SH(F32, 1, 4);
    s[1] = SH(F32, 4);
    s[2] = SH(F32, 4);
    check_kernel("layernorm", s, 3, (const double *[]){row, ones, zeros}, &eps0, 1, ln, 4,
                 "layernorm of [1,2,3,4]");
    check_kernel("layernorm", s, 3, (const double *[]){row, two, one}, &eps0, 1, ln2, 4,
                 "layernorm with gamma=2 beta=1");
    s[0] = SH(F32, 2);
    s[1] = SH(F32, 2);
    check_kernel("rmsnorm", s, 2, (const double *[]){rx, rg}, &eps0, 1, rms, 2,
                 "rmsnorm of [3,4] gamma [1,2]");
}

static void
test_data_values(void)
{
    static const double table[] = {1, 2, 3, 4, 5, 6}; /* [3,2] */
    static const double ids[] = {2, 0, 2};
    static const double rows[] = {5, 6, 1, 2, 5, 6};
    static const double dy[] = {1, 2, 3, 4, 5, 6};
    static const double dtab[] = {3, 4, 0, 0, 6, 8};
    static const double oh[] = {0, 0, 1, 1, 0, 0, 0, 0, 1};
    static const double logits[] = {1, 2, 3, 1, 1, 1}, labels[] = {2, 0};
    static const double dl[] = {1};
    /* rows of softmax − one_hot, halved (mean over 2 rows) */
    static const double dce[] = {0.0450152865851902, 0.1223642355273988, -0.16737952211258905,
                                 -1.0 / 3.0, 1.0 / 6.0, 1.0 / 6.0};
    static const double pred[] = {1, 2, 3}, target[] = {1, 0, 0};
    static const double dmse[] = {0, 4.0 / 3.0, 2.0};
    as_attr voc = AS_ATTR_I("vocab", 3), depth = AS_ATTR_I("depth", 3);
    as_shape s[3];

    s[0] = SH(F32, 3, 2);
    s[1] = SH(I32, 3);
    check_kernel("embedding", s, 2, (const double *[]){table, ids}, NULL, 0, rows, 6,
                 "embedding gathers rows 2,0,2");
    s[0] = SH(F32, 3, 2);
    check_kernel("embedding_grad", s, 2, (const double *[]){dy, ids}, &voc, 1, dtab, 6,
                 "embedding_grad scatter-adds repeated ids");
    s[0] = SH(I32, 3);
    check_kernel("one_hot", s, 1, (const double *[]){ids}, &depth, 1, oh, 9, "one_hot");
    s[0] = SH(I32, 2);
    check_kernel("one_hot", s, 1, (const double *[]){(const double[]){-1, 3}}, &depth, 1,
                 (const double[]){0, 0, 0, 0, 0, 0}, 6, "one_hot of out-of-range ids is zero");
    s[0] = SH(F32, 3, 2);
    s[1] = SH(I32, 2);
    check_kernel("embedding", s, 2, (const double *[]){table, (const double[]){7, 1}}, NULL, 0,
                 (const double[]){0, 0, 3, 4}, 4, "embedding of an out-of-range id is a zero row");
    s[0] = SH(F32, 2, 3);
    s[1] = SH(I32, 2);
    check_kernel("cross_entropy", s, 2, (const double *[]){logits, labels}, NULL, 0,
                 (const double[]){(0.4076059644443806 + log(3.0)) / 2.0}, 1,
                 "cross_entropy of known logits");
    s[0] = scalar_of(F32);
    s[1] = SH(F32, 2, 3);
    s[2] = SH(I32, 2);
    check_kernel("cross_entropy_grad", s, 3, (const double *[]){dl, logits, labels}, NULL, 0, dce,
                 6, "cross_entropy_grad = (softmax - one_hot)/rows");
    s[0] = SH(F32, 3);
    s[1] = SH(F32, 3);
    check_kernel("mse_loss", s, 2, (const double *[]){pred, target}, NULL, 0,
                 (const double[]){13.0 / 3.0}, 1, "mse_loss");
    s[0] = scalar_of(F32);
    s[1] = SH(F32, 3);
    s[2] = SH(F32, 3);
    check_kernel("mse_loss_grad", s, 3, (const double *[]){dl, pred, target}, NULL, 0, dmse, 3,
                 "mse_loss_grad = 2/n (pred - target)");
}

/* One Adam step by hand (Kingma & Ba, Algorithm 1), and SGD / momentum. */
static void
test_optim_values(void)
{
    static const double p[] = {1.0, -2.0}, g[] = {0.5, 0.1}, m0[] = {0.2, -0.1},
                        v0[] = {0.04, 0.01};
    double m1[2], v1[2], want[2], mh, vh;
    as_attr a1 = AS_ATTR_F("beta1", 0.9), a2 = AS_ATTR_F("beta2", 0.999);
    as_attr up[3] = {AS_ATTR_F("lr", 0.01), AS_ATTR_I("step", 3), AS_ATTR_F("eps", 1e-8)};
    as_attr lr = AS_ATTR_F("lr", 0.1), mu = AS_ATTR_F("mu", 0.5);
    as_shape s[3] = {SH(F32, 2), SH(F32, 2), SH(F32, 2)};
    int i;

    for (i = 0; i < 2; i++) {
        m1[i] = 0.9 * m0[i] + 0.1 * g[i];
        v1[i] = 0.999 * v0[i] + 0.001 * g[i] * g[i];
    }
    check_kernel("adam_m", s, 2, (const double *[]){m0, g}, &a1, 1, m1, 2, "adam_m");
    check_kernel("adam_v", s, 2, (const double *[]){v0, g}, &a2, 1, v1, 2, "adam_v");
    for (i = 0; i < 2; i++) {
        mh = m1[i] / (1.0 - 0.9 * 0.9 * 0.9);
        vh = v1[i] / (1.0 - 0.999 * 0.999 * 0.999);
        want[i] = p[i] - 0.01 * mh / (sqrt(vh) + 1e-8);
    }
    check_kernel("adam_update", s, 3, (const double *[]){p, m1, v1}, up, 3, want, 2,
                 "adam_update at step 3, bias-corrected");
    /* Step 1 from zero state moves each weight by lr·sign(g) (up to eps). */
    {
        double m[2], v[2], w[2];
        for (i = 0; i < 2; i++) {
            m[i] = 0.1 * g[i];
            v[i] = 0.001 * g[i] * g[i];
            w[i] = p[i] - 0.01 * (g[i] / (fabs(g[i]) + 1e-8));
        }
        up[1] = AS_ATTR_I("step", 1);
        check_kernel("adam_update", s, 3, (const double *[]){p, m, v}, up, 3, w, 2,
                     "adam step 1 moves by lr*sign(g)");
    }
    check_kernel("sgd_update", s, 2, (const double *[]){p, g}, &lr, 1,
                 (const double[]){0.95, -2.01}, 2, "sgd_update");
    check_kernel("momentum_buf", s, 2, (const double *[]){m0, g}, &mu, 1,
                 (const double[]){0.6, 0.05}, 2, "momentum_buf");
    check_kernel("momentum_update", s, 2, (const double *[]){p, g}, &lr, 1,
                 (const double[]){0.95, -2.01}, 2, "momentum_update");
}

/* Gradient check OPTYPE; report the error. */
static void
gc(const char *optype, const as_shape *in, int nin, const as_attr *attr, int nattr,
   const char *desc)
{
    double e = gradcheck(optype, in, nin, attr, nattr, 0, 42);

    if (!ok(e >= 0.0 && e < GC_TOL, "gradcheck %s", desc))
        diag("  max error %g", e);
}

static void
test_gradcheck(void)
{
    static const int tr[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
    as_attr at[2], ax0 = AS_ATTR_I("axis", 0), ax1 = AS_ATTR_I("axis", -1);
    as_shape s[3];
    char desc[96];
    int i;

    /* op(a)[3,4] x op(b)[4,5] in all four transpose combinations, plain and broadcast. */
    for (i = 0; i < 4; i++) {
        int ta = tr[i][0], tb = tr[i][1];
        at[0] = AS_ATTR_I("transpose_a", ta);
        at[1] = AS_ATTR_I("transpose_b", tb);
        s[0] = ta ? SH(F32, 4, 3) : SH(F32, 3, 4);
        s[1] = tb ? SH(F32, 5, 4) : SH(F32, 4, 5);
        snprintf(desc, sizeof desc, "matmul ta=%d tb=%d", ta, tb);
        gc("matmul", s, 2, at, 2, desc);
        s[0] = ta ? SH(F32, 2, 3, 4, 3) : SH(F32, 2, 3, 3, 4);
        snprintf(desc, sizeof desc, "matmul [2,3,..] x rank 2, ta=%d tb=%d", ta, tb);
        gc("matmul", s, 2, at, 2, desc);
        s[0] = ta ? SH(F32, 4, 3) : SH(F32, 3, 4);
        s[1] = tb ? SH(F32, 2, 5, 4) : SH(F32, 2, 4, 5);
        snprintf(desc, sizeof desc, "matmul rank 2 x [2,..], ta=%d tb=%d", ta, tb);
        gc("matmul", s, 2, at, 2, desc);
    }
    s[0] = SH(F32, 2, 3, 4);
    s[1] = SH(F32, 2, 4, 2);
    gc("matmul", s, 2, NULL, 0, "matmul batched [2,3,4]x[2,4,2]");
    s[0] = SH(F32, 2, 1, 3, 4);
    s[1] = SH(F32, 3, 4, 2);
    gc("matmul", s, 2, NULL, 0, "matmul size-1 batch broadcast [2,1,3,4]x[3,4,2]");

    s[0] = SH(F32, 3, 4);
    gc("softmax", s, 1, &ax0, 1, "softmax axis 0");
    gc("softmax", s, 1, &ax1, 1, "softmax axis -1");
    s[0] = SH(F32, 2, 3, 4);
    at[0] = AS_ATTR_I("axis", 1);
    gc("softmax", s, 1, at, 1, "softmax middle axis of [2,3,4]");
    gc("log_softmax", s, 1, NULL, 0, "log_softmax axis -1");
    gc("log_softmax", s, 1, &ax0, 1, "log_softmax axis 0");

    s[0] = SH(F32, 2, 3, 5);
    s[1] = SH(F32, 5);
    s[2] = SH(F32, 5);
    gc("layernorm", s, 3, NULL, 0, "layernorm x, gamma, beta");
    s[0] = SH(F32, 5);
    gc("layernorm", s, 3, NULL, 0, "layernorm of one vector");
    s[0] = SH(F32, 2, 3, 5);
    gc("rmsnorm", s, 2, NULL, 0, "rmsnorm x, gamma");

    s[0] = SH(F32, 6, 4);
    s[1] = SH(I32, 2, 5);
    gc("embedding", s, 2, NULL, 0, "embedding w.r.t. the table");
    s[0] = SH(F32, 4, 7);
    s[1] = SH(I32, 4);
    gc("cross_entropy", s, 2, NULL, 0, "cross_entropy w.r.t. logits");
    s[0] = SH(F32, 2, 3, 7);
    s[1] = SH(I32, 2, 3);
    gc("cross_entropy", s, 2, NULL, 0, "cross_entropy on [2,3,7] logits");
    s[0] = SH(F32, 3, 4);
    s[1] = SH(F32, 3, 4);
    gc("mse_loss", s, 2, NULL, 0, "mse_loss w.r.t. pred and target");
}

/*
 * x[2,3,4]·w[4,5]: the weight gradient is one matmul on 2-d views
 * ([6,4]^T x [6,5]), with no reduce_sum over a [2,4,5] intermediate.
 */
static void
test_matmul_backward_shape(void)
{
    as_graph *g = as_graph_new("mm");
    as_shape xs = SH(F32, 2, 3, 4), ws = SH(F32, 4, 5), ts = SH(F32, 2, 3, 5);
    int32_t x, w, t, in[2], id, nred = 0, nflat = 0;
    as_train_opts o;
    as_err err;
    int rc, i;

    as_train_opts_init(&o);
    o.optimizer = "sgd";
    rc = as_graph_add_tensor(g, "x", &xs, AS_TK_INPUT, 0, &x, &err);
    if (rc == AS_OK)
        rc = as_graph_add_tensor(g, "w", &ws, AS_TK_PARAM, -1, &w, &err);
    if (rc == AS_OK)
        rc = as_graph_add_tensor(g, "t", &ts, AS_TK_INPUT, 0, &t, &err);
    in[0] = x;
    in[1] = w;
    if (rc == AS_OK)
        rc = as_graph_add_op(g, "matmul", (const char *[]){"y"}, 1, in, 2, NULL, 0, &id, &err);
    in[0] = as_graph_find(g, "y");
    in[1] = t;
    if (rc == AS_OK)
        rc = as_graph_add_op(g, "mse_loss", (const char *[]){"l"}, 1, in, 2, NULL, 0, &id, &err);
    if (rc == AS_OK) {
        as_graph_mark_output(g, as_graph_find(g, "l"));
        rc = as_autodiff(g, &o, &err);
    }
    if (!ok(rc == AS_OK, "autodiff of x[2,3,4]·w[4,5]"))
        diag("  %s", err.msg);
    for (i = 0; rc == AS_OK && i < as_graph_nops(g); i++) {
        const as_op *op = as_graph_op(g, i);
        const as_shape *os = &as_graph_tensor(g, op->out[0])->shape;
        if (strcmp(op->def->name, "reduce_sum") == 0)
            nred++;
        if (strcmp(op->def->name, "matmul") == 0 && os->rank == 2 && os->dim[0] == 4 &&
            as_attr_int(op->attr, op->nattr, "transpose_a", 0) == 1)
            nflat++;
    }
    is_int(nflat, 1, "dw is one matmul transpose_a=1 giving [4,5]");
    is_int(nred, 0, "no reduce_sum for dw");
    as_graph_free(g);
}

int
main(void)
{
    plan_lazy();
    test_infer();
    test_flops_flags();
    test_matmul_values();
    test_nn_values();
    test_data_values();
    test_optim_values();
    test_gradcheck();
    test_matmul_backward_shape();
    return done_testing();
}
