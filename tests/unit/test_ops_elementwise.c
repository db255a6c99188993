/* test_ops_elementwise.c -- the elementwise op family: shape inference and
 * its errors, FLOPs and flags, kernel values computed by hand (broadcasting,
 * integer division, reductions over several dims, rank 8), the structure of
 * emitted gradient graphs, and finite-difference checks of every gradient
 * rule (tests/unit/gradcheck.c).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "tap.h"

#define F32 AS_DT_F32
#define GRAD_TOL 1e-6
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Largest |got - want| over N values. */
static double
max_diff(const double *got, const double *want, int n)
{
    double m = 0.0;
    int i;

    for (i = 0; i < n; i++) {
        double d = fabs(got[i] - want[i]);
        if (!(d <= m)) /* NaN counts as a mismatch */
            m = isnan(d) ? INFINITY : d;
    }
    return m;
}

/* Run OPTYPE and compare its N outputs with WANT; one test point. */
static void
check_kernel(const char *what, const char *optype, const as_shape *shapes, int nin,
             const double *const *in, const as_attr *attr, int nattr, const double *want, int n)
{
    double out[256];
    as_shape os;
    as_err err;
    int rc;

    as_err_clear(&err);
    rc = run_kernel(optype, shapes, nin, in, attr, nattr, out, &os, &err);
    if (rc != AS_OK) {
        ok(0, "%s: %s", what, err.msg);
        return;
    }
    if (as_shape_numel(&os) != n) {
        ok(0, "%s: output has %lld elements, want %d", what, (long long)as_shape_numel(&os), n);
        return;
    }
    ok(max_diff(out, want, n) <= 1e-12, "%s", what);
}

/* Infer OPTYPE's output 0; returns the status and fills *OUT / ERR. */
static int
infer(const char *optype, const as_shape *in, int nin, const as_attr *attr, int nattr,
      as_shape *out, as_err *err)
{
    const as_op_def *def = as_registry_find(optype, (size_t)-1);
    as_arena *arena = as_arena_new();
    as_shape outs[AS_MAX_OUTS];
    as_attr *bound = NULL;
    int nbound = 0, nout = 0, rc;

    as_err_clear(err);
    if (def == NULL) {
        rc = as_errf(err, AS_EPARSE, "unknown op type '%s'", optype);
    } else {
        rc = as_registry_bind_attrs(def, attr, nattr, arena, &bound, &nbound, err);
        if (rc == AS_OK)
            rc = as_op_infer(def, in, nin, bound, nbound, outs, &nout, err);
        if (rc == AS_OK && out != NULL)
            *out = outs[0];
    }
    as_arena_free(arena);
    return rc;
}

/* Inference of OPTYPE must fail with a message containing NEEDLE. */
static void
infer_fails(const char *optype, const as_shape *in, int nin, const as_attr *attr, int nattr,
            const char *needle)
{
    as_err err;
    int rc = infer(optype, in, nin, attr, nattr, NULL, &err);

    ok(rc == AS_EPARSE && strstr(err.msg, needle) != NULL, "%s rejected: %s", optype,
       rc == AS_OK ? "(accepted)" : err.msg);
}

/* Inference of OPTYPE gives the shape written WANT ("f32[2,3]"). */
static void
infer_is(const char *optype, const as_shape *in, int nin, const as_attr *attr, int nattr,
         const char *want)
{
    as_shape out;
    as_err err;
    char buf[128];

    if (infer(optype, in, nin, attr, nattr, &out, &err) != AS_OK) {
        ok(0, "%s infers %s: %s", optype, want, err.msg);
        return;
    }
    is_str(as_shape_str(&out, buf, sizeof buf), want, "%s infers %s", optype, want);
}

/* One gradcheck test point. */
static void
check_grad(const char *what, const char *optype, const as_shape *in, int nin,
           const as_attr *attr, int nattr, unsigned positive, uint64_t seed)
{
    double e = gradcheck(optype, in, nin, attr, nattr, positive, seed);

    ok(e >= 0.0 && e < GRAD_TOL, "gradient of %s (max error %.3g)", what, e);
}

static void
test_infer(void)
{
    as_shape a23 = mkshape(F32, 2, 2, 3), b3 = mkshape(F32, 1, 3), c4 = mkshape(F32, 1, 4);
    as_shape i23 = mkshape(AS_DT_I32, 2, 2, 3), p23 = mkshape(AS_DT_PRED, 2, 2, 3);
    as_shape x234 = mkshape(F32, 3, 2, 3, 4), s0 = mkshape(F32, 0);
    as_shape in[3];
    int64_t d02[] = {0, 2}, dneg[] = {-1}, ddup[] = {1, -2}, dbad[] = {3};
    as_attr a;

    in[0] = a23;
    in[1] = b3;
    infer_is("add", in, 2, NULL, 0, "f32[2,3]");
    in[0] = mkshape(F32, 2, 2, 1);
    in[1] = mkshape(F32, 2, 1, 3);
    infer_is("mul", in, 2, NULL, 0, "f32[2,3]");
    in[0] = a23;
    in[1] = c4;
    infer_fails("add", in, 2, NULL, 0, "cannot broadcast f32[2,3] with f32[4]");
    in[1] = i23;
    infer_fails("sub", in, 2, NULL, 0, "differ in type");
    in[0] = i23;
    infer_is("div", in, 2, NULL, 0, "i32[2,3]");
    infer_fails("pow", in, 2, NULL, 0, "floating point");
    infer_fails("log", &i23, 1, NULL, 0, "must be floating point");
    infer_is("abs", &i23, 1, NULL, 0, "i32[2,3]");
    infer_fails("neg", &p23, 1, NULL, 0, "pred");

    a = AS_ATTR_S("dtype", "bf16");
    infer_is("cast", &a23, 1, &a, 1, "bf16[2,3]");
    a = AS_ATTR_S("dtype", "f31");
    infer_fails("cast", &a23, 1, &a, 1, "unknown dtype 'f31'");
    a = AS_ATTR_F("factor", NAN);
    infer_fails("scale", &a23, 1, &a, 1, "finite");

    in[0] = a23;
    in[1] = b3;
    infer_is("bias_add", in, 2, NULL, 0, "f32[2,3]");
    in[1] = c4;
    infer_fails("bias_add", in, 2, NULL, 0, "last dim of x");

    in[1] = p23;
    a = AS_ATTR_F("p", 1.0);
    infer_fails("dropout", in, 2, &a, 1, "p must be in [0, 1)");
    in[1] = mkshape(AS_DT_PRED, 1, 3);
    infer_fails("dropout", in, 2, NULL, 0, "must have the shape of x");

    in[1] = b3;
    a = AS_ATTR_S("direction", "lt");
    infer_is("compare", in, 2, &a, 1, "pred[2,3]");
    a = AS_ATTR_S("direction", "less");
    infer_fails("compare", in, 2, &a, 1, "direction must be one of");

    in[0] = mkshape(AS_DT_PRED, 2, 2, 1);
    in[1] = b3;
    in[2] = s0;
    infer_is("select", in, 3, NULL, 0, "f32[2,3]");
    in[0] = a23;
    infer_fails("select", in, 3, NULL, 0, "predicate must be pred");

    in[0] = s0;
    in[1] = a23;
    in[2] = a23;
    infer_is("clamp", in, 3, NULL, 0, "f32[2,3]");
    in[2] = b3;
    infer_fails("clamp", in, 3, NULL, 0, "hi f32[3] must be a scalar or shaped like x");

    {
        as_attr r[2] = {AS_ATTR_V("dims", 2, d02), AS_ATTR_I("keepdims", 0)};
        infer_is("reduce_sum", &x234, 1, r, 2, "f32[3]");
        r[1] = AS_ATTR_I("keepdims", 1);
        infer_is("reduce_max", &x234, 1, r, 2, "f32[1,3,1]");
        r[0] = AS_ATTR_V("dims", 1, dneg);
        infer_is("reduce_mean", &x234, 1, r, 2, "f32[2,3,1]");
        r[0] = AS_ATTR_V("dims", 0, d02);
        r[1] = AS_ATTR_I("keepdims", 0);
        infer_is("reduce_min", &x234, 1, r, 2, "f32[]");
        r[0] = AS_ATTR_V("dims", 2, ddup);
        infer_fails("reduce_sum", &x234, 1, r, 2, "dim 1 is listed twice");
        r[0] = AS_ATTR_V("dims", 1, dbad);
        infer_fails("reduce_sum", &x234, 1, r, 2, "dims[0] = 3 is out of range for f32[2,3,4]");
        r[0] = AS_ATTR_V("dims", 1, d02);
        r[1] = AS_ATTR_I("keepdims", 2);
        infer_fails("reduce_sum", &x234, 1, r, 2, "keepdims must be 0 or 1");
        infer_fails("reduce_sum", &x234, 1, NULL, 0, "needs attribute 'dims'");
    }

    /* Gradient ops. */
    {
        as_attr r[2] = {AS_ATTR_V("dims", 2, d02), AS_ATTR_I("keepdims", 0)};
        as_attr m[2] = {AS_ATTR_S("select", "median"), AS_ATTR_I("which", 0)};
        in[0] = mkshape(F32, 1, 3);
        in[1] = x234;
        in[2] = mkshape(F32, 1, 3);
        infer_is("reduce_max_grad", in, 3, r, 2, "f32[2,3,4]");
        in[0] = mkshape(F32, 1, 4);
        infer_fails("reduce_min_grad", in, 3, r, 2, "dy f32[4] must have the reduced shape f32[3]");
        in[0] = a23;
        in[1] = b3;
        in[2] = a23;
        infer_is("pow_grad_a", in, 3, NULL, 0, "f32[2,3]");
        infer_fails("minmax_grad", in, 3, m, 2, "select must be max or min");
        in[1] = i23;
        infer_fails("relu_grad", in, 2, NULL, 0, "differ in type");
    }
}

static void
test_flops_flags(void)
{
    const as_op_def *d;
    as_shape x = mkshape(F32, 2, 4, 5), red = mkshape(F32, 1, 4);
    as_opinfo info = {NULL, 1, &x, 1, &x, 0, NULL};
    as_err err;

    ok(as_registry_selfcheck(&err) == AS_OK, "registry self-check: %s", err.msg);
    d = as_registry_find("add", (size_t)-1);
    ok(d != NULL && (d->flags & (AS_OPF_ELEMENTWISE | AS_OPF_FOLLOW)) ==
                        (AS_OPF_ELEMENTWISE | AS_OPF_FOLLOW),
       "add is elementwise and follows");
    info.def = d;
    is_double(as_op_flops(&info), 20.0, 1e-12, "add: 1 flop per output element");
    info.def = as_registry_find("gelu", (size_t)-1);
    is_double(as_op_flops(&info), 160.0, 1e-12, "gelu: 8 flops per element");
    d = as_registry_find("reduce_sum", (size_t)-1);
    ok(d != NULL && (d->flags & AS_OPF_FOLLOW) && !(d->flags & AS_OPF_ELEMENTWISE),
       "reduce_sum follows but is not elementwise");
    info.def = d;
    info.out = &red;
    is_double(as_op_flops(&info), 20.0, 1e-12, "reduce_sum: 1 flop per input element");
    info.def = as_registry_find("reduce_mean", (size_t)-1);
    is_double(as_op_flops(&info), 24.0, 1e-12, "reduce_mean: sum plus a division per output");
    d = as_registry_find("compare", (size_t)-1);
    ok(d != NULL && (d->flags & AS_OPF_NOGRAD), "compare is not differentiable");
    d = as_registry_find("sign", (size_t)-1);
    ok(d != NULL && (d->flags & AS_OPF_NOGRAD), "sign is not differentiable");
    {
        static const char *const gops[] = {"relu_grad", "gelu_grad", "tanh_grad",
                                           "sigmoid_grad", "sqrt_grad", "rsqrt_grad",
                                           "erf_grad", "pow_grad_a", "pow_grad_b",
                                           "minmax_grad", "reduce_max_grad", "reduce_min_grad"};
        int i, good = 0;
        for (i = 0; i < NELEM(gops); i++) {
            d = as_registry_find(gops[i], (size_t)-1);
            good += d != NULL && (d->flags & AS_OPF_GRAD) && d->kernel != NULL;
        }
        is_int(good, NELEM(gops), "all 12 gradient ops exist with AS_OPF_GRAD and a kernel");
    }
}

static void
test_binary_kernels(void)
{
    as_shape s[2];
    double a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30};
    double c2[2] = {2, -3}, r3[3] = {1, 2, 4};
    const double *in[2] = {a, b};

    s[0] = mkshape(F32, 2, 2, 3);
    s[1] = mkshape(F32, 1, 3);
    {
        double w[6] = {11, 22, 33, 14, 25, 36};
        check_kernel("add broadcasts [2,3] + [3]", "add", s, 2, in, NULL, 0, w, 6);
    }
    {
        double w[6] = {-9, -18, -27, -6, -15, -24};
        check_kernel("sub broadcasts [2,3] - [3]", "sub", s, 2, in, NULL, 0, w, 6);
    }
    s[0] = mkshape(F32, 2, 2, 1);
    s[1] = mkshape(F32, 2, 1, 3);
    in[0] = c2;
    in[1] = r3;
    {
        double w[6] = {2, 4, 8, -3, -6, -12};
        check_kernel("mul broadcasts [2,1] * [1,3]", "mul", s, 2, in, NULL, 0, w, 6);
    }
    {
        double w[6] = {2, 1, 0.5, -3, -1.5, -0.75};
        check_kernel("div broadcasts [2,1] / [1,3]", "div", s, 2, in, NULL, 0, w, 6);
    }
    {
        double ia[4] = {-7, 7, 9, 5}, ib[4] = {2, -2, 4, 0};
        double w[4] = {-3, -3, 2, 0};
        s[0] = mkshape(AS_DT_I32, 1, 4);
        s[1] = s[0];
        in[0] = ia;
        in[1] = ib;
        check_kernel("integer div truncates toward zero, x/0 = 0", "div", s, 2, in, NULL, 0, w,
                     4);
    }
    {
        double x[4] = {1, -2, 3, 0.5}, y[4] = {1, 2, -3, 2};
        double wmax[4] = {1, 2, 3, 2}, wmin[4] = {1, -2, -3, 0.5};
        double wpow[4] = {1, 4, 1.0 / 27.0, 0.25};
        s[0] = mkshape(F32, 1, 4);
        s[1] = s[0];
        in[0] = x;
        in[1] = y;
        check_kernel("max", "max", s, 2, in, NULL, 0, wmax, 4);
        check_kernel("min", "min", s, 2, in, NULL, 0, wmin, 4);
        check_kernel("pow", "pow", s, 2, in, NULL, 0, wpow, 4);
    }
}

static void
test_unary_kernels(void)
{
    as_shape s = mkshape(F32, 1, 4);
    double x[4] = {1.0, -1.0, 0.5, 0.0}, pos[4] = {4.0, 1.0, 0.25, 2.0};
    const double *in[1] = {x};
    static const struct {
        const char *op;
        int positive;
        double w[4];
    } cases[] = {
        {"neg", 0, {-1.0, 1.0, -0.5, 0.0}},
        {"abs", 0, {1.0, 1.0, 0.5, 0.0}},
        {"sign", 0, {1.0, -1.0, 1.0, 0.0}},
        {"relu", 0, {1.0, 0.0, 0.5, 0.0}},
        /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed with Python's math module */
        {"gelu", 0, {0.8411919906082768, -0.15880800939172324, 0.34571400982514394, 0.0}},
        {"tanh", 0, {0.7615941559557649, -0.7615941559557649, 0.46211715726000974, 0.0}},
        {"sigmoid", 0, {0.7310585786300049, 0.2689414213699951, 0.6224593312018546, 0.5}},
        {"exp", 0, {2.718281828459045, 0.36787944117144233, 1.6487212707001282, 1.0}},
        {"erf", 0, {0.8427007929497149, -0.8427007929497149, 0.5204998778130465, 0.0}},
        {"square", 0, {1.0, 1.0, 0.25, 0.0}},
        {"log", 1, {1.3862943611198906, 0.0, -1.3862943611198906, 0.6931471805599453}},
        {"sqrt", 1, {2.0, 1.0, 0.5, 1.4142135623730951}},
        {"rsqrt", 1, {0.5, 1.0, 2.0, 0.7071067811865475}},
    };
    char what[64];
    int i;

    for (i = 0; i < NELEM(cases); i++) {
        in[0] = cases[i].positive ? pos : x;
        snprintf(what, sizeof what, "%s kernel values", cases[i].op);
        check_kernel(what, cases[i].op, &s, 1, in, NULL, 0, cases[i].w, 4);
    }
    {
        double big[2] = {-800.0, 800.0}, w[2] = {0.0, 1.0};
        as_shape s2 = mkshape(F32, 1, 2);
        in[0] = big;
        check_kernel("sigmoid saturates without NaN at +-800", "sigmoid", &s2, 1, in, NULL, 0, w,
                     2);
    }
}

static void
test_misc_kernels(void)
{
    as_shape s[3];
    double x[4] = {-1.7, 2.9, 0.0, 3.0};
    const double *in[3] = {x, NULL, NULL};
    as_attr a;

    s[0] = mkshape(F32, 2, 2, 2);
    a = AS_ATTR_F("factor", 2.5);
    {
        double w[4] = {-4.25, 7.25, 0.0, 7.5};
        check_kernel("scale factor=2.5", "scale", s, 1, in, &a, 1, w, 4);
    }
    a = AS_ATTR_S("dtype", "i32");
    {
        double w[4] = {-1, 2, 0, 3};
        check_kernel("cast to i32 truncates toward zero", "cast", s, 1, in, &a, 1, w, 4);
    }
    a = AS_ATTR_S("dtype", "pred");
    {
        double w[4] = {1, 1, 0, 1};
        check_kernel("cast to pred is x != 0", "cast", s, 1, in, &a, 1, w, 4);
    }
    {
        double b[2] = {10, 20}, w[4] = {8.3, 22.9, 10, 23};
        s[1] = mkshape(F32, 1, 2);
        in[1] = b;
        check_kernel("bias_add adds along the last dim", "bias_add", s, 2, in, NULL, 0, w, 4);
    }
    {
        double m[4] = {1, 0, 1, 1}, w[4] = {-3.4, 0, 0, 6};
        s[1] = mkshape(AS_DT_PRED, 2, 2, 2);
        in[1] = m;
        a = AS_ATTR_F("p", 0.5);
        check_kernel("dropout p=0.5 keeps masked values, doubled", "dropout", s, 2, in, &a, 1, w,
                     4);
    }
    {
        static const char *const dirs[] = {"eq", "ne", "lt", "le", "gt", "ge"};
        static const double want[6][3] = {{0, 1, 0}, {1, 0, 1}, {1, 0, 0},
                                          {1, 1, 0}, {0, 0, 1}, {0, 1, 1}};
        double ca[3] = {1, 2, 3}, cb[3] = {2, 2, 2};
        char what[64];
        int i;
        s[0] = mkshape(F32, 1, 3);
        s[1] = s[0];
        in[0] = ca;
        in[1] = cb;
        for (i = 0; i < 6; i++) {
            a = AS_ATTR_S("direction", dirs[i]);
            snprintf(what, sizeof what, "compare direction=%s", dirs[i]);
            check_kernel(what, "compare", s, 2, in, &a, 1, want[i], 3);
        }
    }
    {
        double p[2] = {1, 0}, av[3] = {1, 2, 3}, bv[1] = {-5}, w[6] = {1, 2, 3, -5, -5, -5};
        s[0] = mkshape(AS_DT_PRED, 2, 2, 1);
        s[1] = mkshape(F32, 1, 3);
        s[2] = mkshape(F32, 0);
        in[0] = p;
        in[1] = av;
        in[2] = bv;
        check_kernel("select broadcasts pred[2,1], f32[3], f32[]", "select", s, 3, in, NULL, 0,
                     w, 6);
    }
    {
        double lo[1] = {-1}, xv[5] = {-3, -1, 0.5, 2, 9}, hi[1] = {2}, w[5] = {-1, -1, 0.5, 2, 2};
        s[0] = mkshape(F32, 0);
        s[1] = mkshape(F32, 1, 5);
        s[2] = mkshape(F32, 0);
        in[0] = lo;
        in[1] = xv;
        in[2] = hi;
        check_kernel("clamp with scalar bounds", "clamp", s, 3, in, NULL, 0, w, 5);
    }
}

static void
test_reduce_kernels(void)
{
    as_shape s = mkshape(F32, 3, 2, 3, 4);
    double x[24];
    const double *in[1] = {x};
    int64_t d02[] = {0, 2}, dm1[] = {-1}, d1[] = {1};
    as_attr r[2] = {AS_ATTR_V("dims", 2, d02), AS_ATTR_I("keepdims", 0)};
    int i;

    for (i = 0; i < 24; i++) /* x[i][j][k] = 12 i + 4 j + k */
        x[i] = i;
    {
        /* sum over i, k of 12 i + 4 j + k = 8 * 4 j + 12 * 4 + 2 * 6 = 32 j + 60 */
        double w[3] = {60, 92, 124};
        check_kernel("reduce_sum dims=[0,2] of [2,3,4]", "reduce_sum", &s, 1, in, r, 2, w, 3);
        r[1] = AS_ATTR_I("keepdims", 1);
        check_kernel("reduce_sum dims=[0,2] keepdims=1", "reduce_sum", &s, 1, in, r, 2, w, 3);
    }
    {
        double w[3] = {7.5, 11.5, 15.5};
        check_kernel("reduce_mean dims=[0,2]", "reduce_mean", &s, 1, in, r, 2, w, 3);
    }
    r[0] = AS_ATTR_V("dims", 1, dm1);
    r[1] = AS_ATTR_I("keepdims", 0);
    {
        double w[6] = {3, 7, 11, 15, 19, 23};
        check_kernel("reduce_max dims=[-1]", "reduce_max", &s, 1, in, r, 2, w, 6);
    }
    r[0] = AS_ATTR_V("dims", 1, d1);
    {
        double w[8] = {0, 1, 2, 3, 12, 13, 14, 15};
        check_kernel("reduce_min dims=[1]", "reduce_min", &s, 1, in, r, 2, w, 8);
    }
    r[0] = AS_ATTR_V("dims", 0, d1);
    {
        double w[1] = {276};
        check_kernel("reduce_sum dims=[] sums everything", "reduce_sum", &s, 1, in, r, 2, w, 1);
    }
    {
        /* reduce_max_grad: ties share the gradient evenly. */
        double dy[2] = {6, 1}, xv[6] = {1, 3, 3, 5, 4, 2}, y[2] = {3, 5};
        double w[6] = {0, 3, 3, 1, 0, 0};
        const double *gin[3] = {dy, xv, y};
        as_shape gs[3];
        gs[0] = mkshape(F32, 1, 2);
        gs[1] = mkshape(F32, 2, 2, 3);
        gs[2] = gs[0];
        r[0] = AS_ATTR_V("dims", 1, dm1);
        check_kernel("reduce_max_grad splits ties evenly", "reduce_max_grad", gs, 3, gin, r, 2, w,
                     6);
    }
}

static void
test_grad_kernels(void)
{
    as_shape s[3];
    double dy[3] = {2, 2, 2}, a[3] = {1, 2, 3}, b[3] = {1, 1, 4};
    const double *in[3] = {dy, a, b};
    as_attr m[2] = {AS_ATTR_S("select", "max"), AS_ATTR_I("which", 0)};

    s[0] = s[1] = s[2] = mkshape(F32, 1, 3);
    {
        double w[3] = {2, 2, 0};
        check_kernel("minmax_grad max which=0 (tie goes to a)", "minmax_grad", s, 3, in, m, 2, w,
                     3);
    }
    m[1] = AS_ATTR_I("which", 1);
    {
        double w[3] = {0, 0, 2};
        check_kernel("minmax_grad max which=1", "minmax_grad", s, 3, in, m, 2, w, 3);
    }
    m[0] = AS_ATTR_S("select", "min");
    {
        double w[3] = {0, 2, 0};
        check_kernel("minmax_grad min which=1", "minmax_grad", s, 3, in, m, 2, w, 3);
    }
    {
        /* gelu_grad(1, x) against a central difference of the gelu kernel. */
        double one[1] = {1}, x[1] = {0.7}, xp[1] = {0.7 + 1e-5}, xm[1] = {0.7 - 1e-5};
        double g = 0, fp = 0, fm = 0;
        const double *gi[2] = {one, x};
        as_shape s1 = mkshape(F32, 0), gs[2];
        as_err err;
        gs[0] = gs[1] = s1;
        run_kernel("gelu_grad", gs, 2, gi, NULL, 0, &g, NULL, &err);
        gi[0] = xp;
        run_kernel("gelu", &s1, 1, gi, NULL, 0, &fp, NULL, &err);
        gi[0] = xm;
        run_kernel("gelu", &s1, 1, gi, NULL, 0, &fm, NULL, &err);
        is_double(g, (fp - fm) / 2e-5, 1e-8, "gelu_grad matches the derivative of gelu");
    }
    {
        double d1[2] = {1, 1}, y[2] = {0.5, 2.0}, w[2] = {-0.0625, -4.0};
        in[0] = d1;
        in[1] = y;
        s[0] = s[1] = mkshape(F32, 1, 2);
        check_kernel("rsqrt_grad = -y^3/2", "rsqrt_grad", s, 2, in, NULL, 0, w, 2);
    }
}

/* Kernels on rank 8 with broadcasting on several dims. */
static void
test_rank8(void)
{
    as_shape s[2];
    double a[16], b[16], out[256], want = 0.0;
    const double *in[2] = {a, b};
    as_err err;
    int i, okv = 1;

    s[0] = mkshape(F32, 8, 2, 1, 2, 1, 2, 1, 2, 1);
    s[1] = mkshape(F32, 8, 1, 2, 1, 2, 1, 2, 1, 2);
    for (i = 0; i < 16; i++) {
        a[i] = i;
        b[i] = 100 * i;
    }
    if (run_kernel("add", s, 2, in, NULL, 0, out, NULL, &err) != AS_OK) {
        ok(0, "rank-8 add: %s", err.msg);
        return;
    }
    /* out[i0..i7] = a[i0,i2,i4,i6] + b[i1,i3,i5,i7]: bits of the flat index interleave. */
    for (i = 0; i < 256; i++) {
        int ia = ((i >> 7) & 1) << 3 | ((i >> 5) & 1) << 2 | ((i >> 3) & 1) << 1 | ((i >> 1) & 1);
        int ib = ((i >> 6) & 1) << 3 | ((i >> 4) & 1) << 2 | ((i >> 2) & 1) << 1 | (i & 1);
        if (out[i] != a[ia] + b[ib])
            okv = 0;
        want += a[ia] + b[ib];
    }
    ok(okv, "rank-8 add broadcasts on alternating dims");
    {
        int64_t dims[] = {0, 3, 5, 7};
        as_attr r[2] = {AS_ATTR_V("dims", 4, dims), AS_ATTR_I("keepdims", 0)};
        double sum[16] = {0}, total = 0.0;
        const double *rin[1] = {out};
        as_shape full = mkshape(F32, 8, 2, 2, 2, 2, 2, 2, 2, 2);
        if (run_kernel("reduce_sum", &full, 1, rin, r, 2, sum, NULL, &err) != AS_OK) {
            ok(0, "rank-8 reduce_sum: %s", err.msg);
            return;
        }
        for (i = 0; i < 16; i++)
            total += sum[i];
        is_double(total, want, 1e-12, "rank-8 reduce_sum over 4 dims keeps the total");
    }
}

/* Count ops of type NAME among the backward ops of G. */
static int
count_ops(const as_graph *g, const char *name)
{
    int32_t i;
    int n = 0;

    for (i = 0; i < as_graph_nops(g); i++) {
        const as_op *op = as_graph_op(g, i);
        n += (op->flags & AS_OF_BACKWARD) && strcmp(op->def->name, name) == 0;
    }
    return n;
}

/* Differentiate OPTYPE(x, ...) on params of SHAPES; returns the graph or NULL. */
static as_graph *
backward_of(const char *optype, const as_shape *shapes, int nin, const as_attr *attr, int nattr,
            int32_t *grad_x0)
{
    as_graph *g = as_graph_new("t");
    int32_t xs[3], y, dy, op_id, *grad_of = NULL;
    as_shape ys;
    as_err err;
    char name[16];
    int j;

    for (j = 0; j < nin; j++) {
        snprintf(name, sizeof name, "x%d", j);
        if (as_graph_add_tensor(g, name, &shapes[j],
                                as_dtype_is_float(shapes[j].dtype) ? AS_TK_PARAM : AS_TK_INPUT, -1,
                                &xs[j], &err) != AS_OK)
            goto fail;
    }
    if (as_graph_add_op(g, optype, NULL, 0, xs, nin, attr, nattr, &op_id, &err) != AS_OK)
        goto fail;
    y = as_graph_op(g, op_id)->out[0];
    ys = as_graph_tensor(g, y)->shape;
    if (as_graph_add_tensor(g, "dy", &ys, AS_TK_CONST, -1, &dy, &err) != AS_OK)
        goto fail;
    grad_of = as_xmalloc((size_t)as_graph_ntensors(g) * sizeof *grad_of);
    if (as_grad_backward(g, 1, &y, &dy, grad_of, &err) != AS_OK)
        goto fail;
    *grad_x0 = grad_of[xs[0]];
    free(grad_of);
    return g;
fail:
    diag("backward of %s: %s", optype, err.msg);
    free(grad_of);
    as_graph_free(g);
    return NULL;
}

static void
test_grad_structure(void)
{
    as_shape x = mkshape(F32, 3, 2, 3, 4), s[2];
    int64_t d02[] = {0, 2};
    as_attr r[2] = {AS_ATTR_V("dims", 2, d02), AS_ATTR_I("keepdims", 0)};
    as_graph *g;
    int32_t gx = -1;

    g = backward_of("reduce_sum", &x, 1, r, 2, &gx);
    ok(g != NULL && count_ops(g, "broadcast") == 1 && gx >= 0 &&
           as_shape_equal(&as_graph_tensor(g, gx)->shape, &x),
       "reduce_sum's gradient is one broadcast to x's shape");
    as_graph_free(g);
    g = backward_of("reduce_mean", &x, 1, r, 2, &gx);
    ok(g != NULL && count_ops(g, "broadcast") == 1 && count_ops(g, "scale") == 1,
       "reduce_mean's gradient is scale + broadcast");
    as_graph_free(g);
    s[0] = mkshape(F32, 2, 2, 3);
    s[1] = mkshape(AS_DT_PRED, 2, 2, 3);
    g = backward_of("dropout", s, 2, NULL, 0, &gx);
    ok(g != NULL && count_ops(g, "dropout") == 1 && gx >= 0,
       "dropout's gradient is dropout with the same mask");
    as_graph_free(g);
    s[1] = mkshape(F32, 1, 3);
    g = backward_of("bias_add", s, 2, NULL, 0, &gx);
    ok(g != NULL && count_ops(g, "reduce_sum") == 1, "bias_add's bias gradient is one reduce_sum");
    as_graph_free(g);
    g = backward_of("exp", s, 1, NULL, 0, &gx);
    ok(g != NULL && count_ops(g, "mul") == 1 && as_graph_nops(g) == 2,
       "exp's gradient is dy * y, one mul");
    as_graph_free(g);
}

static void
test_gradients(void)
{
    static const char *const binary[] = {"add", "sub", "mul", "div", "max", "min", "pow"};
    static const char *const unary[] = {"neg", "abs", "relu", "gelu", "tanh", "sigmoid", "exp",
                                        "log", "sqrt", "rsqrt", "square", "erf"};
    as_shape s[3];
    char what[96];
    int i;

    /* Binary ops: same shape, [2,3] op [3], [2,1] op [1,3], [3] op [2,3]. */
    for (i = 0; i < NELEM(binary); i++) {
        unsigned pos = strcmp(binary[i], "pow") == 0 ? 1u : strcmp(binary[i], "div") == 0 ? 2u
                                                                                          : 0u;
        s[0] = mkshape(F32, 2, 2, 3);
        s[1] = mkshape(F32, 2, 2, 3);
        snprintf(what, sizeof what, "%s [2,3] x [2,3]", binary[i]);
        check_grad(what, binary[i], s, 2, NULL, 0, pos, 11u + (unsigned)i);
        s[1] = mkshape(F32, 1, 3);
        snprintf(what, sizeof what, "%s [2,3] x [3]", binary[i]);
        check_grad(what, binary[i], s, 2, NULL, 0, pos, 21u + (unsigned)i);
        s[0] = mkshape(F32, 2, 2, 1);
        s[1] = mkshape(F32, 2, 1, 3);
        snprintf(what, sizeof what, "%s [2,1] x [1,3]", binary[i]);
        check_grad(what, binary[i], s, 2, NULL, 0, pos, 31u + (unsigned)i);
    }
    s[0] = mkshape(F32, 1, 3);
    s[1] = mkshape(F32, 3, 2, 2, 3);
    check_grad("sub [3] - [2,2,3]", "sub", s, 2, NULL, 0, 0, 41);
    check_grad("div [3] / [2,2,3]", "div", s, 2, NULL, 0, 2u, 42);

    for (i = 0; i < NELEM(unary); i++) {
        const char *op = unary[i];
        unsigned pos = (!strcmp(op, "log") || !strcmp(op, "sqrt") || !strcmp(op, "rsqrt")) ? 1u
                                                                                           : 0u;
        s[0] = mkshape(F32, 3, 2, 3, 2);
        snprintf(what, sizeof what, "%s [2,3,2]", op);
        check_grad(what, op, s, 1, NULL, 0, pos, 51u + (unsigned)i);
    }

    {
        as_attr a = AS_ATTR_F("factor", -1.5);
        s[0] = mkshape(F32, 2, 3, 2);
        check_grad("scale factor=-1.5", "scale", s, 1, &a, 1, 0, 71);
        a = AS_ATTR_S("dtype", "f64");
        check_grad("cast f32 -> f64", "cast", s, 1, &a, 1, 0, 72);
        s[1] = mkshape(F32, 1, 2);
        check_grad("bias_add [3,2] + [2]", "bias_add", s, 2, NULL, 0, 0, 73);
        s[1] = mkshape(AS_DT_PRED, 2, 3, 2);
        a = AS_ATTR_F("p", 0.25);
        check_grad("dropout p=0.25 (pred mask)", "dropout", s, 2, &a, 1, 0, 74);
        s[1] = mkshape(AS_DT_I8, 2, 3, 2);
        check_grad("dropout p=0.25 (i8 mask of 0/1)", "dropout", s, 2, &a, 1, 0, 75);
    }
    s[0] = mkshape(AS_DT_PRED, 2, 2, 3);
    s[1] = mkshape(F32, 2, 2, 3);
    s[2] = mkshape(F32, 1, 3);
    check_grad("select pred[2,3], [2,3], [3]", "select", s, 3, NULL, 0, 0, 81);
    s[0] = mkshape(AS_DT_PRED, 2, 2, 1);
    s[1] = mkshape(F32, 0);
    s[2] = mkshape(F32, 2, 2, 3);
    check_grad("select pred[2,1], [], [2,3]", "select", s, 3, NULL, 0, 0, 82);
    /* clamp: bounds drawn in [-1,1) like x, so all three branches occur. */
    s[0] = mkshape(F32, 2, 3, 4);
    s[1] = s[0];
    s[2] = s[0];
    check_grad("clamp with elementwise bounds", "clamp", s, 3, NULL, 0, 0, 83);
    s[0] = mkshape(F32, 0);
    s[2] = mkshape(F32, 0);
    check_grad("clamp with scalar bounds", "clamp", s, 3, NULL, 0, 0, 84);
}

static void
test_reduce_gradients(void)
{
    static const char *const ops[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"};
    as_shape x = mkshape(F32, 3, 2, 3, 4);
    int64_t d02[] = {0, 2}, dm1[] = {-1, 0};
    char what[96];
    int i, k;

    for (i = 0; i < NELEM(ops); i++) {
        for (k = 0; k < 2; k++) {
            as_attr r[2] = {AS_ATTR_V("dims", 2, d02), AS_ATTR_I("keepdims", k)};
            snprintf(what, sizeof what, "%s dims=[0,2] keepdims=%d", ops[i], k);
            check_grad(what, ops[i], &x, 1, r, 2, 0, 91u + (unsigned)(2 * i + k));
        }
        {
            as_attr r[2] = {AS_ATTR_V("dims", 0, d02), AS_ATTR_I("keepdims", 0)};
            snprintf(what, sizeof what, "%s dims=[] (all)", ops[i]);
            check_grad(what, ops[i], &x, 1, r, 2, 0, 101u + (unsigned)i);
        }
        {
            as_attr r[2] = {AS_ATTR_V("dims", 2, dm1), AS_ATTR_I("keepdims", 1)};
            snprintf(what, sizeof what, "%s dims=[-1,0] keepdims=1", ops[i]);
            check_grad(what, ops[i], &x, 1, r, 2, 0, 111u + (unsigned)i);
        }
    }
}

int
main(void)
{
    plan_lazy();
    test_infer();
    test_flops_flags();
    test_binary_kernels();
    test_unary_kernels();
    test_misc_kernels();
    test_reduce_kernels();
    test_grad_kernels();
    test_rank8();
    test_grad_structure();
    test_gradients();
    test_reduce_gradients();
    return done_testing();
}
