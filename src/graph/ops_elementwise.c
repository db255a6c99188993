/* ops_elementwise.c -- op family 'elementwise' (docs/ops.md): broadcasting
 * binary arithmetic, unary math, scale/cast/bias_add/dropout, compare,
 * select, clamp, the four reductions, and the gradient ops their rules emit.
 *
 * DESIGN: every pointwise kernel is one scalar function of up to three
 * operands run by ew_apply(), which walks the output's multi-index and reads
 * each operand through numpy broadcast strides (stride 0 on stretched dims),
 * so every op works on any rank up to AS_MAX_RANK.  A small ew_ctx carries
 * the attribute a kernel needs (scale factor, compare direction, cast
 * target).  Reductions are described by a bit mask of reduced input dims;
 * their kernels map each input element to its output element through
 * strides that are 0 on reduced dims, which does not depend on keepdims.
 * Gradient rules copy what they need from the op and its tensor shapes
 * before emitting anything, because emitting ops may move the graph's arrays.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "ops_internal.h"

#define EW_MAX_IN 3
#define SQRT_2_OVER_PI 0.79788456080286535588 /* sqrt(2/pi), gelu's tanh approximation */
#define TWO_OVER_SQRT_PI 1.12837916709551257390 /* 2/sqrt(pi), erf' */
#define GELU_C 0.044715

/* Attribute values a scalar kernel needs. */
typedef struct ew_ctx {
    double a;    /**< scale factor; dropout's 1/(1-p) */
    int k;       /**< compare direction; minmax select*2+which; 1 = integer division */
    as_dtype dt; /**< cast target */
} ew_ctx;

typedef double (*ew_fn)(const double *v, const ew_ctx *ctx);

/* Compare directions, in the order of the index in ew_ctx.k. */
static const char *const cmp_names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
#define CMP_COUNT 6

/* ---------------------------------------------------------------------- */
/* Kernel machinery                                                         */
/* ---------------------------------------------------------------------- */

/* Compute OUT[i] = F(in[0][.], in[1][.], ...) over output 0's shape, inputs broadcast. */
static void
ew_apply(const as_opinfo *info, const double *const *in, double *out, ew_fn f,
         const ew_ctx *ctx)
{
    const as_shape *os = &info->out[0];
    int64_t st[EW_MAX_IN][AS_MAX_RANK], idx[AS_MAX_RANK] = {0}, k = 0;
    double v[EW_MAX_IN];
    int j, d, n = info->nin < EW_MAX_IN ? info->nin : EW_MAX_IN;

    if (as_shape_numel(os) == 0)
        return;
    for (j = 0; j < n; j++)
        as_graph_i_bcast_strides(&info->in[j], os, st[j]);
    do {
        for (j = 0; j < n; j++) {
            int64_t off = 0;
            for (d = 0; d < os->rank; d++)
                off += idx[d] * st[j][d];
            v[j] = in[j][off];
        }
        out[k++] = f(v, ctx);
    } while (as_graph_i_next(idx, os));
}

/* Define NAME_kernel running scalar function FN without attributes. */
#define EW_KERNEL(name, fn)                                                                        \
    static void name##_kernel(const as_opinfo *info, const double *const *in, double *const *out) \
    {                                                                                              \
        ew_apply(info, in, out[0], fn, NULL);                                                      \
    }

/*
 * Scalar functions: V holds the operands in input order.  SCALAR defines
 * one whose value is the expression EXPR of v[].
 */
#define SCALAR(name, expr)                                                                         \
    static double name(const double *v, const ew_ctx *c)                                           \
    {                                                                                              \
        (void)c;                                                                                   \
        return (expr);                                                                             \
    }

SCALAR(f_add, v[0] + v[1])
SCALAR(f_sub, v[0] - v[1])
SCALAR(f_mul, v[0] * v[1])

/* Integer division truncates toward zero; x / 0 is 0 for integers (defined, unlike C). */
static double
f_div(const double *v, const ew_ctx *c)
{
    if (c != NULL && c->k == 1)
        return v[1] == 0.0 ? 0.0 : trunc(v[0] / v[1]);
    return v[0] / v[1];
}

/* max/min: ties pick operand 0, matching minmax_grad. */
SCALAR(f_max, v[0] >= v[1] ? v[0] : v[1])
SCALAR(f_min, v[0] <= v[1] ? v[0] : v[1])
SCALAR(f_pow, pow(v[0], v[1]))
SCALAR(f_neg, -v[0])
SCALAR(f_abs, fabs(v[0]))
SCALAR(f_sign, (double)((v[0] > 0.0) - (v[0] < 0.0)))
SCALAR(f_relu, v[0] > 0.0 ? v[0] : 0.0)

/* gelu(x) = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks & Gimpel). */
static double
f_gelu(const double *v, const ew_ctx *c)
{
    double x = v[0];

    (void)c;
    return 0.5 * x * (1.0 + tanh(SQRT_2_OVER_PI * (x + GELU_C * x * x * x)));
}

SCALAR(f_tanh, tanh(v[0]))

/* Logistic function, written so exp() never overflows. */
static double
f_sigmoid(const double *v, const ew_ctx *c)
{
    double e;

    (void)c;
    if (v[0] >= 0.0)
        return 1.0 / (1.0 + exp(-v[0]));
    e = exp(v[0]);
    return e / (1.0 + e);
}

SCALAR(f_exp, exp(v[0]))
SCALAR(f_log, log(v[0]))
SCALAR(f_sqrt, sqrt(v[0]))
SCALAR(f_rsqrt, 1.0 / sqrt(v[0]))
SCALAR(f_square, v[0] * v[0])
SCALAR(f_erf, erf(v[0]))

static double
f_scale(const double *v, const ew_ctx *c)
{
    return v[0] * c->a;
}

/* Float targets keep the value (the reference runs in double); integers truncate toward zero. */
static double
f_cast(const double *v, const ew_ctx *c)
{
    if (c->dt == AS_DT_PRED)
        return v[0] != 0.0 ? 1.0 : 0.0;
    if (as_dtype_is_float(c->dt))
        return v[0];
    return trunc(v[0]);
}

static double
f_dropout(const double *v, const ew_ctx *c)
{
    return v[0] * v[1] * c->a;
}

static double
f_compare(const double *v, const ew_ctx *c)
{
    switch (c->k) {
    case 0:
        return v[0] == v[1];
    case 1:
        return v[0] != v[1];
    case 2:
        return v[0] < v[1];
    case 3:
        return v[0] <= v[1];
    case 4:
        return v[0] > v[1];
    default:
        return v[0] >= v[1];
    }
}

SCALAR(f_select, v[0] != 0.0 ? v[1] : v[2])

/* clamp(lo, x, hi) = min(max(x, lo), hi), ties as in max/min. */
static double
f_clamp(const double *v, const ew_ctx *c)
{
    double m = v[1] >= v[0] ? v[1] : v[0];

    (void)c;
    return m <= v[2] ? m : v[2];
}

/* Gradient ops: V = (dy, x or y, ...). */
SCALAR(f_relu_grad, v[1] > 0.0 ? v[0] : 0.0)

/* d gelu/dx = (1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 x^2), t = tanh(u). */
static double
f_gelu_grad(const double *v, const ew_ctx *c)
{
    double x = v[1], t = tanh(SQRT_2_OVER_PI * (x + GELU_C * x * x * x));

    (void)c;
    return v[0] * (0.5 * (1.0 + t) +
                   0.5 * x * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_C * x * x));
}

SCALAR(f_tanh_grad, v[0] * (1.0 - v[1] * v[1]))
SCALAR(f_sigmoid_grad, v[0] * v[1] * (1.0 - v[1]))

/* y = sqrt(x): dy/dx = 1 / (2y). */
SCALAR(f_sqrt_grad, v[0] * 0.5 / v[1])

/* y = x^(-1/2): dy/dx = -x^(-3/2) / 2 = -y^3 / 2. */
SCALAR(f_rsqrt_grad, -0.5 * v[0] * v[1] * v[1] * v[1])
SCALAR(f_erf_grad, v[0] * TWO_OVER_SQRT_PI * exp(-v[1] * v[1]))

/* d(a^b)/da = b a^(b-1). */
SCALAR(f_pow_grad_a, v[0] * v[2] * pow(v[1], v[2] - 1.0))

/* d(a^b)/db = a^b ln a; 0 at a = 0 (the limit for b > 0), NaN for a < 0. */
static double
f_pow_grad_b(const double *v, const ew_ctx *c)
{
    (void)c;
    if (v[1] == 0.0)
        return 0.0;
    return v[0] * pow(v[1], v[2]) * log(v[1]);
}

/* c->k = select*2 + which, select 0 = max, 1 = min; operand 0 wins ties. */
static double
f_minmax_grad(const double *v, const ew_ctx *c)
{
    int a_wins = (c->k >> 1) == 0 ? v[1] >= v[2] : v[1] <= v[2];
    int which = c->k & 1;

    return a_wins == (which == 0) ? v[0] : 0.0;
}

EW_KERNEL(add, f_add)
EW_KERNEL(sub, f_sub)
EW_KERNEL(mul, f_mul)
EW_KERNEL(max, f_max)
EW_KERNEL(min, f_min)
EW_KERNEL(pow, f_pow)
EW_KERNEL(neg, f_neg)
EW_KERNEL(abs, f_abs)
EW_KERNEL(sign, f_sign)
EW_KERNEL(relu, f_relu)
EW_KERNEL(gelu, f_gelu)
EW_KERNEL(tanh, f_tanh)
EW_KERNEL(sigmoid, f_sigmoid)
EW_KERNEL(exp, f_exp)
EW_KERNEL(log, f_log)
EW_KERNEL(sqrt, f_sqrt)
EW_KERNEL(rsqrt, f_rsqrt)
EW_KERNEL(square, f_square)
EW_KERNEL(erf, f_erf)
EW_KERNEL(select, f_select)
EW_KERNEL(clamp, f_clamp)
EW_KERNEL(relu_grad, f_relu_grad)
EW_KERNEL(gelu_grad, f_gelu_grad)
EW_KERNEL(tanh_grad, f_tanh_grad)
EW_KERNEL(sigmoid_grad, f_sigmoid_grad)
EW_KERNEL(sqrt_grad, f_sqrt_grad)
EW_KERNEL(rsqrt_grad, f_rsqrt_grad)
EW_KERNEL(erf_grad, f_erf_grad)
EW_KERNEL(pow_grad_a, f_pow_grad_a)
EW_KERNEL(pow_grad_b, f_pow_grad_b)
EW_KERNEL(bias_add, f_add)

static void
div_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    ew_ctx c = {.k = !as_dtype_is_float(info->out[0].dtype)};

    ew_apply(info, in, out[0], f_div, &c);
}

static void
scale_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    ew_ctx c = {.a = OPI_FLOAT(info, "factor", 1.0)};

    ew_apply(info, in, out[0], f_scale, &c);
}

static void
cast_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    ew_ctx c = {.dt = info->out[0].dtype};

    ew_apply(info, in, out[0], f_cast, &c);
}

static void
dropout_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    ew_ctx c = {.a = 1.0 / (1.0 - OPI_FLOAT(info, "p", 0.1))};

    ew_apply(info, in, out[0], f_dropout, &c);
}

/* Index of compare direction NAME, or -1. */
static int
cmp_index(const char *name)
{
    int i;

    for (i = 0; name != NULL && i < CMP_COUNT; i++)
        if (strcmp(name, cmp_names[i]) == 0)
            return i;
    return -1;
}

static void
compare_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    ew_ctx c = {.k = cmp_index(OPI_STR(info, "direction", "eq"))};

    ew_apply(info, in, out[0], f_compare, &c);
}

static void
minmax_grad_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const char *sel = OPI_STR(info, "select", "max");
    ew_ctx c = {.k = (strcmp(sel, "min") == 0) * 2 + (OPI_INT(info, "which", 0) != 0)};

    ew_apply(info, in, out[0], f_minmax_grad, &c);
}

/* ---------------------------------------------------------------------- */
/* Reductions                                                               */
/* ---------------------------------------------------------------------- */

enum { RED_SUM, RED_MEAN, RED_MAX, RED_MIN };

/*
 * Bit mask of the dims of X reduced by INFO's `dims` attribute (empty = all);
 * checks range, duplicates and keepdims.
 */
static int
red_mask(const as_opinfo *info, const as_shape *x, unsigned *mask, as_err *err)
{
    const int64_t *v = NULL;
    int n = OPI_INTS(info, "dims", &v), i, d;
    int64_t keep = OPI_INT(info, "keepdims", 0);
    char s[128];

    *mask = 0;
    if (keep != 0 && keep != 1)
        return as_graph_i_shape_err(err, info, "keepdims must be 0 or 1, got %lld",
                                    (long long)keep);
    if (n <= 0) {
        *mask = (1u << x->rank) - 1u;
        return AS_OK;
    }
    for (i = 0; i < n; i++) {
        if (!as_graph_i_axis(v[i], x->rank, &d))
            return as_graph_i_shape_err(err, info, "dims[%d] = %lld is out of range for %s", i,
                                        (long long)v[i], as_shape_str(x, s, sizeof s));
        if (*mask & (1u << d))
            return as_graph_i_shape_err(err, info, "dim %d is listed twice in dims", d);
        *mask |= 1u << d;
    }
    return AS_OK;
}

/* Shape of X reduced over MASK (KEEP: reduced dims stay as 1). */
static void
red_shape(const as_shape *x, unsigned mask, int keep, as_shape *out)
{
    int d;

    out->dtype = x->dtype;
    out->rank = 0;
    for (d = 0; d < x->rank; d++) {
        if (!(mask & (1u << d)))
            out->dim[out->rank++] = x->dim[d];
        else if (keep)
            out->dim[out->rank++] = 1;
    }
}

/*
 * Strides, per dim of X, of the element of the reduced output it lands in
 * (0 on reduced dims); the same for keepdims 0 and 1.
 */
static void
red_out_strides(const as_shape *x, unsigned mask, int64_t *st)
{
    int64_t s = 1;
    int d;

    for (d = x->rank - 1; d >= 0; d--) {
        if (mask & (1u << d)) {
            st[d] = 0;
        } else {
            st[d] = s;
            s *= x->dim[d];
        }
    }
}

static int64_t
red_offset(const int64_t *idx, const int64_t *st, int rank)
{
    int64_t off = 0;
    int d;

    for (d = 0; d < rank; d++)
        off += idx[d] * st[d];
    return off;
}

static void
red_run(const as_opinfo *info, const double *x, double *y, int kind)
{
    const as_shape *xs = &info->in[0];
    int64_t st[AS_MAX_RANK], idx[AS_MAX_RANK] = {0}, ny = as_shape_numel(&info->out[0]);
    int64_t nx = as_shape_numel(xs), i = 0, k;
    unsigned mask;
    as_err err;

    if (red_mask(info, xs, &mask, &err) != AS_OK)
        return; /* inference already rejected these attributes */
    red_out_strides(xs, mask, st);
    for (k = 0; k < ny; k++)
        y[k] = kind == RED_MAX ? -INFINITY : kind == RED_MIN ? INFINITY : 0.0;
    if (nx == 0)
        return;
    do {
        int64_t o = red_offset(idx, st, xs->rank);
        double v = x[i++];
        if (kind == RED_MAX)
            y[o] = v > y[o] ? v : y[o];
        else if (kind == RED_MIN)
            y[o] = v < y[o] ? v : y[o];
        else
            y[o] += v;
    } while (as_graph_i_next(idx, xs));
    if (kind == RED_MEAN && ny > 0)
        for (k = 0; k < ny; k++)
            y[k] /= (double)(nx / ny);
}

static void
reduce_sum_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    red_run(info, in[0], out[0], RED_SUM);
}

static void
reduce_mean_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    red_run(info, in[0], out[0], RED_MEAN);
}

static void
reduce_max_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    red_run(info, in[0], out[0], RED_MAX);
}

static void
reduce_min_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    red_run(info, in[0], out[0], RED_MIN);
}

/*
 * reduce_max_grad(dy, x, y): dy flows to the elements of x equal to their
 * reduced value y, split evenly among ties (as TensorFlow and JAX do).
 */
static void
reduce_minmax_grad_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *xs = &info->in[1];
    int64_t st[AS_MAX_RANK], idx[AS_MAX_RANK] = {0}, i = 0;
    int64_t ny = as_shape_numel(&info->in[0]), nx = as_shape_numel(xs);
    const double *dy = in[0], *x = in[1], *y = in[2];
    double *cnt;
    unsigned mask;
    as_err err;

    if (nx == 0 || red_mask(info, xs, &mask, &err) != AS_OK)
        return;
    red_out_strides(xs, mask, st);
    cnt = as_xcalloc((size_t)(ny > 0 ? ny : 1), sizeof *cnt);
    do {
        int64_t o = red_offset(idx, st, xs->rank);
        if (x[i++] == y[o])
            cnt[o] += 1.0;
    } while (as_graph_i_next(idx, xs));
    i = 0;
    memset(idx, 0, sizeof idx);
    do {
        int64_t o = red_offset(idx, st, xs->rank);
        out[0][i] = x[i] == y[o] ? dy[o] / cnt[o] : 0.0;
        i++;
    } while (as_graph_i_next(idx, xs));
    free(cnt);
}

/* ---------------------------------------------------------------------- */
/* Shape inference                                                          */
/* ---------------------------------------------------------------------- */

/* Binary broadcasting op: a and b of one dtype. */
static int
binary_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(as_graph_i_same_dtype(info, 0, 1, err));
    if (info->in[0].dtype == AS_DT_PRED)
        return as_graph_i_shape_err(err, info, "arithmetic on pred values; cast them first");
    AS_CHECK(as_graph_i_broadcast(info->def->name, &info->in[0], &info->in[1], out, err));
    *nout = 1;
    return AS_OK;
}

static int
binary_float_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(as_graph_i_need_float(info, 0, err));
    return binary_infer(info, out, nout, err);
}

/* Unary op valid on any numeric dtype. */
static int
unary_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    if (info->in[0].dtype == AS_DT_PRED)
        return as_graph_i_shape_err(err, info, "arithmetic on pred values; cast them first");
    out[0] = info->in[0];
    *nout = 1;
    return AS_OK;
}

/* Unary op on floating-point values (transcendental functions, scale). */
static int
unary_float_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(as_graph_i_need_float(info, 0, err));
    out[0] = info->in[0];
    *nout = 1;
    return AS_OK;
}

static int
scale_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    double f = OPI_FLOAT(info, "factor", 1.0);

    if (!isfinite(f))
        return as_graph_i_shape_err(err, info, "factor must be finite");
    return unary_float_infer(info, out, nout, err);
}

static int
cast_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const char *name = OPI_STR(info, "dtype", "");
    as_dtype t;

    if (!as_dtype_parse(name, strlen(name), &t))
        return as_graph_i_shape_err(err, info, "unknown dtype '%s'", name);
    out[0] = info->in[0];
    out[0].dtype = t;
    *nout = 1;
    return AS_OK;
}

static int
bias_add_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[0], *b = &info->in[1];
    char sx[128], sb[128];

    AS_CHECK(as_graph_i_need_float(info, 0, err));
    AS_CHECK(as_graph_i_same_dtype(info, 0, 1, err));
    if (x->rank < 1 || b->rank != 1 || b->dim[0] != x->dim[x->rank - 1])
        return as_graph_i_shape_err(err, info,
                                    "bias must be rank 1 and match the last dim of x: %s + %s",
                                    as_shape_str(x, sx, sizeof sx), as_shape_str(b, sb, sizeof sb));
    out[0] = *x;
    *nout = 1;
    return AS_OK;
}

/* Same rank and dims (dtypes may differ). */
static int
same_dims(const as_shape *a, const as_shape *b)
{
    int d;

    if (a->rank != b->rank)
        return 0;
    for (d = 0; d < a->rank; d++)
        if (a->dim[d] != b->dim[d])
            return 0;
    return 1;
}

static int
dropout_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    double p = OPI_FLOAT(info, "p", 0.1);
    char sx[128], sm[128];

    AS_CHECK(as_graph_i_need_float(info, 0, err));
    if (!(p >= 0.0 && p < 1.0))
        return as_graph_i_shape_err(err, info, "p must be in [0, 1), got %g", p);
    if (!same_dims(&info->in[0], &info->in[1]))
        return as_graph_i_shape_err(err, info, "mask %s must have the shape of x %s",
                                    as_shape_str(&info->in[1], sm, sizeof sm),
                                    as_shape_str(&info->in[0], sx, sizeof sx));
    out[0] = info->in[0];
    *nout = 1;
    return AS_OK;
}

static int
compare_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const char *dir = OPI_STR(info, "direction", "");

    if (cmp_index(dir) < 0)
        return as_graph_i_shape_err(err, info,
                                    "direction must be one of eq ne lt le gt ge, got '%s'", dir);
    AS_CHECK(as_graph_i_same_dtype(info, 0, 1, err));
    AS_CHECK(as_graph_i_broadcast(info->def->name, &info->in[0], &info->in[1], out, err));
    out[0].dtype = AS_DT_PRED;
    *nout = 1;
    return AS_OK;
}

static int
select_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    as_shape ab;
    char s[128];

    if (info->in[0].dtype != AS_DT_PRED)
        return as_graph_i_shape_err(err, info, "predicate must be pred, got %s",
                                    as_shape_str(&info->in[0], s, sizeof s));
    AS_CHECK(as_graph_i_same_dtype(info, 1, 2, err));
    AS_CHECK(as_graph_i_broadcast(info->def->name, &info->in[1], &info->in[2], &ab, err));
    AS_CHECK(as_graph_i_broadcast(info->def->name, &ab, &info->in[0], out, err));
    *nout = 1;
    return AS_OK;
}

static int
clamp_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[1];
    char sx[128], sb[128];
    int j;

    AS_CHECK(unary_infer(info, out, nout, err)); /* rejects pred lo */
    AS_CHECK(as_graph_i_same_dtype(info, 0, 1, err));
    AS_CHECK(as_graph_i_same_dtype(info, 2, 1, err));
    for (j = 0; j < 3; j += 2)
        if (info->in[j].rank != 0 && !same_dims(&info->in[j], x))
            return as_graph_i_shape_err(err, info, "%s %s must be a scalar or shaped like x %s",
                                        j == 0 ? "lo" : "hi",
                                        as_shape_str(&info->in[j], sb, sizeof sb),
                                        as_shape_str(x, sx, sizeof sx));
    out[0] = *x;
    *nout = 1;
    return AS_OK;
}

static int
reduce_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    unsigned mask;

    if (info->in[0].dtype == AS_DT_PRED)
        return as_graph_i_shape_err(err, info, "cannot reduce pred values; cast them first");
    AS_CHECK(red_mask(info, &info->in[0], &mask, err));
    red_shape(&info->in[0], mask, OPI_INT(info, "keepdims", 0) != 0, &out[0]);
    *nout = 1;
    return AS_OK;
}

/* Gradient op on (dy, t, ...): floats of one dtype, output broadcast(all). */
static int
grad_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    as_shape acc = info->in[0];
    int j;

    AS_CHECK(as_graph_i_need_float(info, 0, err));
    for (j = 1; j < info->nin; j++) {
        AS_CHECK(as_graph_i_same_dtype(info, 0, j, err));
        AS_CHECK(as_graph_i_broadcast(info->def->name, &acc, &info->in[j], &acc, err));
    }
    out[0] = acc;
    *nout = 1;
    return AS_OK;
}

static int
minmax_grad_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const char *sel = OPI_STR(info, "select", "");
    int64_t which = OPI_INT(info, "which", 0);

    if (strcmp(sel, "max") != 0 && strcmp(sel, "min") != 0)
        return as_graph_i_shape_err(err, info, "select must be max or min, got '%s'", sel);
    if (which != 0 && which != 1)
        return as_graph_i_shape_err(err, info, "which must be 0 or 1, got %lld",
                                    (long long)which);
    return grad_infer(info, out, nout, err);
}

/* reduce_max_grad(dy, x, y): dy and y have x's reduced shape; output is shaped like x. */
static int
reduce_grad_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[1];
    as_shape r;
    unsigned mask;
    char s1[128], s2[128];
    int j;

    AS_CHECK(as_graph_i_need_float(info, 1, err));
    AS_CHECK(red_mask(info, x, &mask, err));
    red_shape(x, mask, OPI_INT(info, "keepdims", 0) != 0, &r);
    for (j = 0; j < 3; j += 2) {
        AS_CHECK(as_graph_i_same_dtype(info, j, 1, err));
        if (!same_dims(&info->in[j], &r))
            return as_graph_i_shape_err(err, info, "%s %s must have the reduced shape %s",
                                        j == 0 ? "dy" : "y",
                                        as_shape_str(&info->in[j], s1, sizeof s1),
                                        as_shape_str(&r, s2, sizeof s2));
    }
    out[0] = *x;
    *nout = 1;
    return AS_OK;
}

/* Integer or pred dropout masks hold 0 or 1. */
static void
dropout_irange(const as_opinfo *info, int j, int64_t *lo, int64_t *hi)
{
    (void)info;
    (void)j;
    *lo = 0;
    *hi = 1;
}

/* ---------------------------------------------------------------------- */
/* FLOPs                                                                    */
/* ---------------------------------------------------------------------- */

/*
 * Per output element.  Simple arithmetic, comparisons and selects are 1;
 * transcendental functions count the arithmetic of a typical libm/CUDA
 * implementation, an estimate meant for the roofline, not a measurement:
 * sqrt, rsqrt 2; exp, log, sigmoid (exp + add + div) 4; tanh, erf 6;
 * gelu (cube, 3 mul-adds, tanh, 2 mul) 8; pow (exp of b*log a) 10.
 * Gradient ops: the forward cost plus the chain-rule arithmetic.
 */
#define FLOPS_K(k)                                                                                 \
    static double flops_##k(const as_opinfo *info)                                                 \
    {                                                                                              \
        return as_graph_i_flops_per_out(info, (double)(k));                                        \
    }
FLOPS_K(1)
FLOPS_K(2)
FLOPS_K(3)
FLOPS_K(4)
FLOPS_K(6)
FLOPS_K(8)
FLOPS_K(10)
FLOPS_K(12)
FLOPS_K(14)
FLOPS_K(16)

/* Reductions: one add (or compare) per input element. */
static double
flops_reduce(const as_opinfo *info)
{
    return (double)as_shape_numel(&info->in[0]);
}

/* Mean: the sum plus one division per output element. */
static double
flops_reduce_mean(const as_opinfo *info)
{
    return flops_reduce(info) + as_graph_i_flops_per_out(info, 1.0);
}

/* ---------------------------------------------------------------------- */
/* Gradient rules                                                           */
/* ---------------------------------------------------------------------- */

/* Shape of tensor ID (a copy: emitting ops may move the tensor array). */
static as_shape
tshape(as_gradctx *c, int32_t id)
{
    return as_graph_tensor(as_grad_graph(c), id)->shape;
}

/* Does input J of OP need a gradient, and can it have one (float)? */
static int
wants(as_gradctx *c, const as_op *op, int j)
{
    return as_grad_needs(c, j) && as_dtype_is_float(tshape(c, op->in[j]).dtype);
}

/* Emit OPTYPE(a, b) without attributes. */
static int
emit2(as_gradctx *c, const char *optype, int32_t a, int32_t b, int32_t *out, as_err *err)
{
    int32_t in[2] = {a, b};

    return as_grad_emit(c, optype, in, 2, NULL, 0, out, err);
}

/* Emit OPTYPE(a) with attributes. */
static int
emit1(as_gradctx *c, const char *optype, int32_t a, const as_attr *attr, int nattr, int32_t *out,
      as_err *err)
{
    return as_grad_emit(c, optype, &a, 1, attr, nattr, out, err);
}

/* Store in DIN[J] gradient G reduced to the shape of input J of OP. */
static int
unb(as_gradctx *c, const as_op *op, int j, int32_t g, int32_t *din, as_err *err)
{
    as_shape s = tshape(c, op->in[j]);

    return as_grad_unbroadcast(c, g, &s, &din[j], err);
}

/* Start a rule: no input has a gradient yet; returns 0 if there is nothing to do. */
static int
grad_begin(const as_op *op, const int32_t *dout, int32_t *din)
{
    int j;

    for (j = 0; j < op->nin; j++)
        din[j] = -1;
    return dout[0] >= 0;
}

static int
add_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    int j;

    if (!grad_begin(&o, dout, din))
        return AS_OK;
    for (j = 0; j < 2; j++)
        if (wants(c, &o, j))
            AS_CHECK(unb(c, &o, j, dout[0], din, err));
    return AS_OK;
}

static int
sub_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    int32_t t;

    if (!grad_begin(&o, dout, din))
        return AS_OK;
    if (wants(c, &o, 0))
        AS_CHECK(unb(c, &o, 0, dout[0], din, err));
    if (wants(c, &o, 1)) {
        AS_CHECK(emit1(c, "neg", dout[0], NULL, 0, &t, err));
        AS_CHECK(unb(c, &o, 1, t, din, err));
    }
    return AS_OK;
}

static int
mul_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    int32_t t;
    int j;

    if (!grad_begin(&o, dout, din))
        return AS_OK;
    for (j = 0; j < 2; j++) {
        if (!wants(c, &o, j))
            continue;
        AS_CHECK(emit2(c, "mul", dout[0], o.in[1 - j], &t, err));
        AS_CHECK(unb(c, &o, j, t, din, err));
    }
    return AS_OK;
}

/* y = a / b: da = dy / b; db = -(dy / b) * y. */
static int
div_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    int32_t t, u, v;

    if (!grad_begin(&o, dout, din))
        return AS_OK;
    if (!wants(c, &o, 0) && !wants(c, &o, 1))
        return AS_OK;
    AS_CHECK(emit2(c, "div", dout[0], o.in[1], &t, err));
    if (wants(c, &o, 0))
        AS_CHECK(unb(c, &o, 0, t, din, err));
    if (wants(c, &o, 1)) {
        AS_CHECK(emit2(c, "mul", t, o.out[0], &u, err));
        AS_CHECK(emit1(c, "neg", u, NULL, 0, &v, err));
        AS_CHECK(unb(c, &o, 1, v, din, err));
    }
    return AS_OK;
}

/* Emit minmax_grad(dy, a, b) select=SEL which=WHICH. */
static int
emit_minmax_grad(as_gradctx *c, int32_t dy, int32_t a, int32_t b, const char *sel, int which,
                 int32_t *out, as_err *err)
{
    int32_t in[3] = {dy, a, b};
    as_attr at[2] = {AS_ATTR_S("select", sel), AS_ATTR_I("which", which)};

    return as_grad_emit(c, "minmax_grad", in, 3, at, 2, out, err);
}

static int
minmax_grad_rule(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err,
                 const char *sel)
{
    as_op o = *op;
    int32_t t;
    int j;

    if (!grad_begin(&o, dout, din))
        return AS_OK;
    for (j = 0; j < 2; j++) {
        if (!wants(c, &o, j))
            continue;
        AS_CHECK(emit_minmax_grad(c, dout[0], o.in[0], o.in[1], sel, j, &t, err));
        AS_CHECK(unb(c, &o, j, t, din, err));
    }
    return AS_OK;
}

static int
max_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    return minmax_grad_rule(c, op, dout, din, err, "max");
}

static int
min_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    return minmax_grad_rule(c, op, dout, din, err, "min");
}

static int
pow_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    static const char *const gops[2] = {"pow_grad_a", "pow_grad_b"};
    as_op o = *op;
    int32_t in[3], t;
    int j;

    if (!grad_begin(&o, dout, din))
        return AS_OK;
    in[0] = dout[0];
    in[1] = o.in[0];
    in[2] = o.in[1];
    for (j = 0; j < 2; j++) {
        if (!wants(c, &o, j))
            continue;
        AS_CHECK(as_grad_emit(c, gops[j], in, 3, NULL, 0, &t, err));
        AS_CHECK(unb(c, &o, j, t, din, err));
    }
    return AS_OK;
}

static int
neg_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;

    if (grad_begin(&o, dout, din) && wants(c, &o, 0))
        AS_CHECK(emit1(c, "neg", dout[0], NULL, 0, &din[0], err));
    return AS_OK;
}

/* abs' = sign(x) (0 at x = 0, a subgradient). */
static int
abs_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    int32_t s;

    if (grad_begin(&o, dout, din) && wants(c, &o, 0)) {
        AS_CHECK(emit1(c, "sign", o.in[0], NULL, 0, &s, err));
        AS_CHECK(emit2(c, "mul", dout[0], s, &din[0], err));
    }
    return AS_OK;
}

/* Piecewise constant or non-float output (sign, compare): zero gradient, no ops. */
static int
zero_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    (void)c;
    (void)err;
    grad_begin(op, dout, din);
    return AS_OK;
}

/*
 * Unary op whose gradient is one binary op GOP(dy, t): t = the input x
 * (USE_Y 0) or the output y (USE_Y 1).
 */
static int
unary_rule(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err,
           const char *gop, int use_y)
{
    as_op o = *op;

    if (grad_begin(&o, dout, din) && wants(c, &o, 0))
        AS_CHECK(emit2(c, gop, dout[0], use_y ? o.out[0] : o.in[0], &din[0], err));
    return AS_OK;
}

#define UNARY_GRAD(name, gop, use_y)                                                               \
    static int name##_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din,     \
                           as_err *err)                                                            \
    {                                                                                              \
        return unary_rule(c, op, dout, din, err, gop, use_y);                                      \
    }
UNARY_GRAD(relu, "relu_grad", 0)
UNARY_GRAD(gelu, "gelu_grad", 0)
UNARY_GRAD(tanh, "tanh_grad", 1)
UNARY_GRAD(sigmoid, "sigmoid_grad", 1)
UNARY_GRAD(exp, "mul", 1)
UNARY_GRAD(log, "div", 0)
UNARY_GRAD(sqrt, "sqrt_grad", 1)
UNARY_GRAD(rsqrt, "rsqrt_grad", 1)
UNARY_GRAD(erf, "erf_grad", 0)

/* square' = 2 x dy. */
static int
square_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    as_attr two = AS_ATTR_F("factor", 2.0);
    int32_t t;

    if (grad_begin(&o, dout, din) && wants(c, &o, 0)) {
        AS_CHECK(emit2(c, "mul", dout[0], o.in[0], &t, err));
        AS_CHECK(emit1(c, "scale", t, &two, 1, &din[0], err));
    }
    return AS_OK;
}

static int
scale_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    as_attr f = AS_ATTR_F("factor", as_attr_float(o.attr, o.nattr, "factor", 1.0));

    if (grad_begin(&o, dout, din) && wants(c, &o, 0))
        AS_CHECK(emit1(c, "scale", dout[0], &f, 1, &din[0], err));
    return AS_OK;
}

/* Float-to-float casts pass the gradient back in x's dtype; casts to or from integers have none. */
static int
cast_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    as_shape x, y;
    as_attr dt;

    if (!grad_begin(&o, dout, din) || !wants(c, &o, 0))
        return AS_OK;
    x = tshape(c, o.in[0]);
    y = tshape(c, o.out[0]);
    if (!as_dtype_is_float(y.dtype))
        return AS_OK;
    if (x.dtype == y.dtype) {
        din[0] = dout[0];
        return AS_OK;
    }
    dt = AS_ATTR_S("dtype", as_dtype_name(x.dtype));
    return emit1(c, "cast", dout[0], &dt, 1, &din[0], err);
}

static int
bias_add_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    return add_grad(c, op, dout, din, err);
}

/* dropout is linear in x with the same mask: dx = dropout(dy, mask). The mask has no gradient. */
static int
dropout_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    int32_t in[2];
    as_attr p = AS_ATTR_F("p", as_attr_float(o.attr, o.nattr, "p", 0.1));

    if (!grad_begin(&o, dout, din) || !wants(c, &o, 0))
        return AS_OK;
    in[0] = dout[0];
    in[1] = o.in[1];
    return as_grad_emit(c, "dropout", in, 2, &p, 1, &din[0], err);
}

/* select(p, a, b): da = dy * p, db = dy - dy * p (p cast to dy's dtype); p has none. */
static int
select_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    as_attr dt;
    int32_t p, m, t;

    if (!grad_begin(&o, dout, din) || (!wants(c, &o, 1) && !wants(c, &o, 2)))
        return AS_OK;
    dt = AS_ATTR_S("dtype", as_dtype_name(tshape(c, dout[0]).dtype));
    AS_CHECK(emit1(c, "cast", o.in[0], &dt, 1, &p, err));
    AS_CHECK(emit2(c, "mul", dout[0], p, &m, err));
    if (wants(c, &o, 1))
        AS_CHECK(unb(c, &o, 1, m, din, err));
    if (wants(c, &o, 2)) {
        AS_CHECK(emit2(c, "sub", dout[0], m, &t, err));
        AS_CHECK(unb(c, &o, 2, t, din, err));
    }
    return AS_OK;
}

/*
 * clamp(lo, x, hi) = min(m, hi) with m = max(x, lo) recomputed here; the
 * gradient is routed by minmax_grad with the kernels' tie rules.
 */
static int
clamp_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    int32_t m, gm, t;
    int need_lo, need_x, need_hi;

    if (!grad_begin(&o, dout, din))
        return AS_OK;
    need_lo = wants(c, &o, 0);
    need_x = wants(c, &o, 1);
    need_hi = wants(c, &o, 2);
    if (!need_lo && !need_x && !need_hi)
        return AS_OK;
    AS_CHECK(emit2(c, "max", o.in[1], o.in[0], &m, err));
    if (need_hi) {
        AS_CHECK(emit_minmax_grad(c, dout[0], m, o.in[2], "min", 1, &t, err));
        AS_CHECK(unb(c, &o, 2, t, din, err));
    }
    if (!need_lo && !need_x)
        return AS_OK;
    AS_CHECK(emit_minmax_grad(c, dout[0], m, o.in[2], "min", 0, &gm, err));
    if (need_x)
        AS_CHECK(emit_minmax_grad(c, gm, o.in[1], o.in[0], "max", 0, &din[1], err));
    if (need_lo) {
        AS_CHECK(emit_minmax_grad(c, gm, o.in[1], o.in[0], "max", 1, &t, err));
        AS_CHECK(unb(c, &o, 0, t, din, err));
    }
    return AS_OK;
}

/*
 * Broadcast dy back over the reduced dims of x.  keepdims 1: dy has x's
 * rank, numpy broadcasting (dims=[]); keepdims 0: dims lists the kept dims
 * of x, where dy's dims land (HLO semantics).
 */
static int
reduce_back(as_gradctx *c, const as_op *op, int32_t dy, int32_t *out, as_err *err)
{
    as_shape x = tshape(c, op->in[0]);
    as_opinfo info = {op->def, 1, &x, 0, NULL, op->nattr, op->attr};
    int64_t shape[AS_MAX_RANK], dims[AS_MAX_RANK];
    int keep = as_attr_int(op->attr, op->nattr, "keepdims", 0) != 0, d, nd = 0;
    unsigned mask;
    as_attr at[2];

    AS_CHECK(red_mask(&info, &x, &mask, err));
    for (d = 0; d < x.rank; d++) {
        shape[d] = x.dim[d];
        if (!keep && !(mask & (1u << d)))
            dims[nd++] = d;
    }
    at[0] = AS_ATTR_V("shape", x.rank, shape);
    at[1] = AS_ATTR_V("dims", nd, dims);
    return emit1(c, "broadcast", dy, at, 2, out, err);
}

static int
reduce_sum_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;

    if (grad_begin(&o, dout, din) && wants(c, &o, 0))
        AS_CHECK(reduce_back(c, &o, dout[0], &din[0], err));
    return AS_OK;
}

/* mean: scale dy by 1/count on the small reduced tensor, then broadcast. */
static int
reduce_mean_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    as_shape x, y;
    as_attr f;
    int32_t t;

    if (!grad_begin(&o, dout, din) || !wants(c, &o, 0))
        return AS_OK;
    x = tshape(c, o.in[0]);
    y = tshape(c, o.out[0]);
    f = AS_ATTR_F("factor", (double)as_shape_numel(&y) / (double)as_shape_numel(&x));
    AS_CHECK(emit1(c, "scale", dout[0], &f, 1, &t, err));
    return reduce_back(c, &o, t, &din[0], err);
}

static int
reduce_minmax_grad_rule(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din,
                        as_err *err, const char *gop)
{
    as_op o = *op;
    const int64_t *dims = NULL;
    int n;
    int32_t in[3];
    as_attr at[2];

    if (!grad_begin(&o, dout, din) || !wants(c, &o, 0))
        return AS_OK;
    n = as_attr_ints(o.attr, o.nattr, "dims", &dims);
    at[0] = AS_ATTR_V("dims", n > 0 ? n : 0, dims);
    at[1] = AS_ATTR_I("keepdims", as_attr_int(o.attr, o.nattr, "keepdims", 0));
    in[0] = dout[0];
    in[1] = o.in[0];
    in[2] = o.out[0];
    return as_grad_emit(c, gop, in, 3, at, 2, &din[0], err);
}

static int
reduce_max_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    return reduce_minmax_grad_rule(c, op, dout, din, err, "reduce_max_grad");
}

static int
reduce_min_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    return reduce_minmax_grad_rule(c, op, dout, din, err, "reduce_min_grad");
}

/* ---------------------------------------------------------------------- */
/* The table                                                                */
/* ---------------------------------------------------------------------- */

#define EW (AS_OPF_ELEMENTWISE | AS_OPF_FOLLOW)
#define EWG (AS_OPF_ELEMENTWISE | AS_OPF_FOLLOW | AS_OPF_GRAD)
#define RED_ATTRS "dims:I keepdims:i=0"

/* clang-format off */
const as_op_def as_ops_elementwise[] = {
    /* name, min_in, max_in, flags, int_inputs, attrs, doc,
     * infer, flops, bytes, kernel, grad, irange */
    {"add", 2, 2, EW, 0, NULL, "a + b (broadcast)",
     binary_infer, flops_1, NULL, add_kernel, add_grad, NULL},
    {"sub", 2, 2, EW, 0, NULL, "a - b (broadcast)",
     binary_infer, flops_1, NULL, sub_kernel, sub_grad, NULL},
    {"mul", 2, 2, EW, 0, NULL, "a * b (broadcast)",
     binary_infer, flops_1, NULL, mul_kernel, mul_grad, NULL},
    {"div", 2, 2, EW, 0, NULL, "a / b (broadcast; integers truncate toward zero)",
     binary_infer, flops_1, NULL, div_kernel, div_grad, NULL},
    {"max", 2, 2, EW, 0, NULL, "elementwise maximum (broadcast)",
     binary_infer, flops_1, NULL, max_kernel, max_grad, NULL},
    {"min", 2, 2, EW, 0, NULL, "elementwise minimum (broadcast)",
     binary_infer, flops_1, NULL, min_kernel, min_grad, NULL},
    {"pow", 2, 2, EW, 0, NULL, "a ^ b (broadcast)",
     binary_float_infer, flops_10, NULL, pow_kernel, pow_grad, NULL},
    {"neg", 1, 1, EW, 0, NULL, "-x",
     unary_infer, flops_1, NULL, neg_kernel, neg_grad, NULL},
    {"abs", 1, 1, EW, 0, NULL, "|x|",
     unary_infer, flops_1, NULL, abs_kernel, abs_grad, NULL},
    {"sign", 1, 1, EW | AS_OPF_NOGRAD, 0, NULL, "-1, 0 or 1 by the sign of x",
     unary_infer, flops_1, NULL, sign_kernel, zero_grad, NULL},
    {"relu", 1, 1, EW, 0, NULL, "max(x, 0)",
     unary_infer, flops_1, NULL, relu_kernel, relu_grad, NULL},
    {"gelu", 1, 1, EW, 0, NULL, "GELU, tanh approximation",
     unary_float_infer, flops_8, NULL, gelu_kernel, gelu_grad, NULL},
    {"tanh", 1, 1, EW, 0, NULL, "hyperbolic tangent",
     unary_float_infer, flops_6, NULL, tanh_kernel, tanh_grad, NULL},
    {"sigmoid", 1, 1, EW, 0, NULL, "1 / (1 + exp(-x))",
     unary_float_infer, flops_4, NULL, sigmoid_kernel, sigmoid_grad, NULL},
    {"exp", 1, 1, EW, 0, NULL, "e^x",
     unary_float_infer, flops_4, NULL, exp_kernel, exp_grad, NULL},
    {"log", 1, 1, EW, 0, NULL, "natural logarithm",
     unary_float_infer, flops_4, NULL, log_kernel, log_grad, NULL},
    {"sqrt", 1, 1, EW, 0, NULL, "square root",
     unary_float_infer, flops_2, NULL, sqrt_kernel, sqrt_grad, NULL},
    {"rsqrt", 1, 1, EW, 0, NULL, "1 / sqrt(x)",
     unary_float_infer, flops_2, NULL, rsqrt_kernel, rsqrt_grad, NULL},
    {"square", 1, 1, EW, 0, NULL, "x * x",
     unary_infer, flops_1, NULL, square_kernel, square_grad, NULL},
    {"erf", 1, 1, EW, 0, NULL, "error function",
     unary_float_infer, flops_6, NULL, erf_kernel, erf_grad, NULL},
    {"scale", 1, 1, EW, 0, "factor:f", "x * factor",
     scale_infer, flops_1, NULL, scale_kernel, scale_grad, NULL},
    {"cast", 1, 1, EW, 0, "dtype:s", "x converted to dtype (float to int truncates toward zero)",
     cast_infer, flops_1, NULL, cast_kernel, cast_grad, NULL},
    {"bias_add", 2, 2, EW, 0, NULL, "x + b, b rank 1 along x's last dim",
     bias_add_infer, flops_1, NULL, bias_add_kernel, bias_add_grad, NULL},
    {"dropout", 2, 2, EW, 0, "p:f=0.1", "x * mask / (1 - p), mask an input",
     dropout_infer, flops_2, NULL, dropout_kernel, dropout_grad, dropout_irange},
    {"compare", 2, 2, EW | AS_OPF_NOGRAD, 0, "direction:s", "a OP b as pred (eq ne lt le gt ge)",
     compare_infer, flops_1, NULL, compare_kernel, zero_grad, NULL},
    {"select", 3, 3, EW, 0, NULL, "pred ? a : b (broadcast)",
     select_infer, flops_1, NULL, select_kernel, select_grad, NULL},
    {"clamp", 3, 3, EW, 0, NULL, "min(max(x, lo), hi)",
     clamp_infer, flops_2, NULL, clamp_kernel, clamp_grad, NULL},
    {"reduce_sum", 1, 1, AS_OPF_FOLLOW, 0, RED_ATTRS, "sum over dims ([] = all)",
     reduce_infer, flops_reduce, NULL, reduce_sum_kernel, reduce_sum_grad, NULL},
    {"reduce_mean", 1, 1, AS_OPF_FOLLOW, 0, RED_ATTRS, "mean over dims ([] = all)",
     reduce_infer, flops_reduce_mean, NULL, reduce_mean_kernel, reduce_mean_grad, NULL},
    {"reduce_max", 1, 1, AS_OPF_FOLLOW, 0, RED_ATTRS, "maximum over dims ([] = all)",
     reduce_infer, flops_reduce, NULL, reduce_max_kernel, reduce_max_grad, NULL},
    {"reduce_min", 1, 1, AS_OPF_FOLLOW, 0, RED_ATTRS, "minimum over dims ([] = all)",
     reduce_infer, flops_reduce, NULL, reduce_min_kernel, reduce_min_grad, NULL},
    /* Gradient ops (inputs: dy first). */
    {"relu_grad", 2, 2, EWG, 0, NULL, "dy * (x > 0)",
     grad_infer, flops_1, NULL, relu_grad_kernel, NULL, NULL},
    {"gelu_grad", 2, 2, EWG, 0, NULL, "dy * gelu'(x)",
     grad_infer, flops_14, NULL, gelu_grad_kernel, NULL, NULL},
    {"tanh_grad", 2, 2, EWG, 0, NULL, "dy * (1 - y^2)",
     grad_infer, flops_3, NULL, tanh_grad_kernel, NULL, NULL},
    {"sigmoid_grad", 2, 2, EWG, 0, NULL, "dy * y * (1 - y)",
     grad_infer, flops_3, NULL, sigmoid_grad_kernel, NULL, NULL},
    {"sqrt_grad", 2, 2, EWG, 0, NULL, "dy / (2 y)",
     grad_infer, flops_2, NULL, sqrt_grad_kernel, NULL, NULL},
    {"rsqrt_grad", 2, 2, EWG, 0, NULL, "-dy * y^3 / 2",
     grad_infer, flops_4, NULL, rsqrt_grad_kernel, NULL, NULL},
    {"erf_grad", 2, 2, EWG, 0, NULL, "dy * 2/sqrt(pi) * exp(-x^2)",
     grad_infer, flops_8, NULL, erf_grad_kernel, NULL, NULL},
    {"pow_grad_a", 3, 3, EWG, 0, NULL, "dy * b * a^(b-1)",
     grad_infer, flops_12, NULL, pow_grad_a_kernel, NULL, NULL},
    {"pow_grad_b", 3, 3, EWG, 0, NULL, "dy * a^b * ln a",
     grad_infer, flops_16, NULL, pow_grad_b_kernel, NULL, NULL},
    {"minmax_grad", 3, 3, EWG, 0, "select:s=max which:i=0",
     "dy where operand `which` won max/min(a, b) (ties: operand 0)",
     minmax_grad_infer, flops_2, NULL, minmax_grad_kernel, NULL, NULL},
    {"reduce_max_grad", 3, 3, AS_OPF_FOLLOW | AS_OPF_GRAD, 0, RED_ATTRS,
     "dy routed to the maxima of x (ties split evenly)",
     reduce_grad_infer, flops_2, NULL, reduce_minmax_grad_kernel, NULL, NULL},
    {"reduce_min_grad", 3, 3, AS_OPF_FOLLOW | AS_OPF_GRAD, 0, RED_ATTRS,
     "dy routed to the minima of x (ties split evenly)",
     reduce_grad_infer, flops_2, NULL, reduce_minmax_grad_kernel, NULL, NULL},
};
/* clang-format on */

const int as_ops_elementwise_count =
    (int)(sizeof as_ops_elementwise / sizeof as_ops_elementwise[0]);
