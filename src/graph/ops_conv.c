/* ops_conv.c -- op family 'conv': conv2d (NCHW activations, OIHW weights,
 * optional bias, stride / symmetric padding / dilation / groups), batchnorm
 * (training-mode batch statistics over every dim but 1), maxpool2d and
 * avgpool2d, and their gradient ops.
 *
 * DESIGN: conv2d and its two gradients share one loop nest over
 * (n, o, oh, ow, ci, ki, kj) that pairs an output element with the input and
 * weight elements it reads; the three kernels differ only in which product
 * they accumulate where.  The gradient ops are themselves linear in each
 * input, so they have gradient rules too (conv2d_grad_input's is a conv2d and
 * a conv2d_grad_weight, and so on).  Pools share a window iterator.
 * avgpool2d divides by the full window size kh*kw, counting padded positions
 * as zeros (PyTorch's default count_include_pad=True); maxpool2d ignores
 * padded positions, and its gradient goes to the first maximum of a window.
 * Padding is limited to half the window so that every window sees the input.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "ops_internal.h"

/* Geometry of a 2-D convolution or pooling. */
typedef struct conv_geom {
    int64_t n, c, h, w;      /**< input [N, C, H, W] */
    int64_t o, cg, kh, kw;   /**< weight [O, C/groups, kh, kw]; pools: o = c, cg = 1 */
    int64_t oh, ow;          /**< output spatial dims */
    int64_t sh, sw;          /**< strides */
    int64_t ph, pw;          /**< padding on each side */
    int64_t dh, dw;          /**< dilation */
    int64_t groups;          /**< channel groups (pools: 1) */
} conv_geom;

/* Which product a conv loop accumulates. */
enum { CONV_FWD, CONV_DX, CONV_DW };

/* Attribute helpers. */

/*
 * Read a 2-entry int-list attribute KEY (one entry = both dims; absent or
 * empty = DFLT) into V, checking each entry is >= MIN.
 */
static int
pair_attr(const as_opinfo *info, const char *key, int64_t dflt, int64_t min, int64_t *v,
          as_err *err)
{
    const int64_t *a;
    int n = OPI_INTS(info, key, &a);

    if (n <= 0) {
        v[0] = v[1] = dflt;
    } else if (n == 1) {
        v[0] = v[1] = a[0];
    } else if (n == 2) {
        v[0] = a[0];
        v[1] = a[1];
    } else {
        return as_graph_i_shape_err(err, info, "%s needs 1 or 2 entries, got %d", key, n);
    }
    if (v[0] < min || v[1] < min)
        return as_graph_i_shape_err(err, info, "%s [%lld,%lld] must be >= %lld", key,
                                    (long long)v[0], (long long)v[1], (long long)min);
    return AS_OK;
}

/* A rank-4 shape from int-list attribute KEY (dims >= 1), dtype DT. */
static int
shape4_attr(const as_opinfo *info, const char *key, as_dtype dt, as_shape *s, as_err *err)
{
    const int64_t *a;
    int n = OPI_INTS(info, key, &a), i;

    if (n != 4)
        return as_graph_i_shape_err(err, info, "%s needs 4 entries, got %d", key, n < 0 ? 0 : n);
    s->dtype = dt;
    s->rank = 4;
    for (i = 0; i < 4; i++) {
        if (a[i] < 1)
            return as_graph_i_shape_err(err, info, "%s dim %d is %lld (must be >= 1)", key, i,
                                        (long long)a[i]);
        s->dim[i] = a[i];
    }
    return AS_OK;
}

/* Check S is a rank-4 float tensor; WHAT names it in the message. */
static int
need_nchw(const as_opinfo *info, const as_shape *s, const char *what, as_err *err)
{
    char b[256];

    if (s->rank != 4 || !as_dtype_is_float(s->dtype))
        return as_graph_i_shape_err(err, info, "%s must be a float [N,C,H,W] tensor, got %s",
                                    what, as_shape_str(s, b, sizeof b));
    return AS_OK;
}

/* Check DY has the shape WANT (the forward op's output). */
static int
need_dy(const as_opinfo *info, const as_shape *dy, const as_shape *want, as_err *err)
{
    char b1[256], b2[256];

    if (!as_shape_equal(dy, want))
        return as_graph_i_shape_err(err, info, "dy is %s but the forward output is %s",
                                    as_shape_str(dy, b1, sizeof b1),
                                    as_shape_str(want, b2, sizeof b2));
    return AS_OK;
}

/* Output extent of a window of K (dilation D) sliding with stride S over N + 2P. */
static int64_t
out_extent(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d)
{
    int64_t span = d * (k - 1) + 1;

    return n + 2 * p < span ? 0 : (n + 2 * p - span) / s + 1;
}

/* conv2d geometry */

/* Fill G from input X, weight W and the conv attributes; checks consistency. */
static int
conv_geometry(const as_opinfo *info, const as_shape *x, const as_shape *w, conv_geom *g,
              as_err *err)
{
    int64_t st[2], pd[2], dl[2];
    char b1[256], b2[256];

    AS_CHECK(need_nchw(info, x, "input", err));
    AS_CHECK(need_nchw(info, w, "weight", err));
    if (x->dtype != w->dtype)
        return as_graph_i_shape_err(err, info, "input %s and weight %s differ in type",
                                    as_shape_str(x, b1, sizeof b1), as_shape_str(w, b2, sizeof b2));
    AS_CHECK(pair_attr(info, "stride", 1, 1, st, err));
    AS_CHECK(pair_attr(info, "padding", 0, 0, pd, err));
    AS_CHECK(pair_attr(info, "dilation", 1, 1, dl, err));
    g->groups = OPI_INT(info, "groups", 1);
    if (g->groups < 1)
        return as_graph_i_shape_err(err, info, "groups must be >= 1, got %lld",
                                    (long long)g->groups);
    g->n = x->dim[0], g->c = x->dim[1], g->h = x->dim[2], g->w = x->dim[3];
    g->o = w->dim[0], g->cg = w->dim[1], g->kh = w->dim[2], g->kw = w->dim[3];
    g->sh = st[0], g->sw = st[1], g->ph = pd[0], g->pw = pd[1], g->dh = dl[0], g->dw = dl[1];
    if (g->c != g->cg * g->groups)
        return as_graph_i_shape_err(err, info,
                                    "input has %lld channels but weight expects %lld (groups=%lld)",
                                    (long long)g->c, (long long)(g->cg * g->groups),
                                    (long long)g->groups);
    if (g->o % g->groups != 0)
        return as_graph_i_shape_err(err, info, "%lld output channels not divisible by groups=%lld",
                                    (long long)g->o, (long long)g->groups);
    g->oh = out_extent(g->h, g->kh, g->sh, g->ph, g->dh);
    g->ow = out_extent(g->w, g->kw, g->sw, g->pw, g->dw);
    if (g->oh < 1 || g->ow < 1)
        return as_graph_i_shape_err(err, info, "kernel %lldx%lld (dilation %lldx%lld) does not "
                                    "fit input %s with padding [%lld,%lld]",
                                    (long long)g->kh, (long long)g->kw, (long long)g->dh,
                                    (long long)g->dw, as_shape_str(x, b1, sizeof b1),
                                    (long long)g->ph, (long long)g->pw);
    return AS_OK;
}

/* The conv output shape [N, O, OH, OW] of G. */
static as_shape
conv_out_shape(const conv_geom *g, as_dtype dt)
{
    as_shape s = {dt, 4, {g->n, g->o, g->oh, g->ow}};

    return s;
}

/* FLOPs of one conv loop nest: 2 N O OH OW (C/groups) kh kw. */
static double
conv_geom_flops(const conv_geom *g)
{
    return 2.0 * (double)g->n * (double)g->o * (double)g->oh * (double)g->ow * (double)g->cg *
           (double)g->kh * (double)g->kw;
}

/*
 * The shared conv loop nest.  CONV_FWD: OUT=y += A=x * B=w; CONV_DX:
 * OUT=dx += A=dy * B=w; CONV_DW: OUT=dw += A=dy * B=x.  OUT must be zeroed.
 */
static void
conv_loop(const conv_geom *g, int mode, const double *a, const double *b, double *out)
{
    int64_t og = g->o / g->groups, n, o, oh, ow, ci, ki, kj;

    for (n = 0; n < g->n; n++)
        for (o = 0; o < g->o; o++)
            for (oh = 0; oh < g->oh; oh++)
                for (ow = 0; ow < g->ow; ow++) {
                    int64_t yi = ((n * g->o + o) * g->oh + oh) * g->ow + ow;
                    double acc = 0.0;
                    for (ci = 0; ci < g->cg; ci++) {
                        int64_t cin = (o / og) * g->cg + ci;
                        for (ki = 0; ki < g->kh; ki++) {
                            int64_t ih = oh * g->sh - g->ph + ki * g->dh;
                            if (ih < 0 || ih >= g->h)
                                continue;
                            for (kj = 0; kj < g->kw; kj++) {
                                int64_t iw = ow * g->sw - g->pw + kj * g->dw;
                                int64_t xi, wi;
                                if (iw < 0 || iw >= g->w)
                                    continue;
                                xi = ((n * g->c + cin) * g->h + ih) * g->w + iw;
                                wi = ((o * g->cg + ci) * g->kh + ki) * g->kw + kj;
                                if (mode == CONV_FWD)
                                    acc += a[xi] * b[wi];
                                else if (mode == CONV_DX)
                                    out[xi] += a[yi] * b[wi];
                                else
                                    out[wi] += a[yi] * b[xi];
                            }
                        }
                    }
                    if (mode == CONV_FWD)
                        out[yi] = acc;
                }
}

/* conv2d */

static int
conv2d_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    conv_geom g;
    char b[256];

    AS_CHECK(conv_geometry(info, &info->in[0], &info->in[1], &g, err));
    if (info->nin > 2) {
        const as_shape *bias = &info->in[2];
        if (bias->rank != 1 || bias->dim[0] != g.o || bias->dtype != info->in[0].dtype)
            return as_graph_i_shape_err(err, info, "bias must be %s[%lld], got %s",
                                        as_dtype_name(info->in[0].dtype), (long long)g.o,
                                        as_shape_str(bias, b, sizeof b));
    }
    out[0] = conv_out_shape(&g, info->in[0].dtype);
    *nout = 1;
    return AS_OK;
}

static double
conv2d_flops(const as_opinfo *info)
{
    conv_geom g;
    as_err err;

    if (conv_geometry(info, &info->in[0], &info->in[1], &g, &err) != AS_OK)
        return 0.0;
    return conv_geom_flops(&g);
}

static void
conv2d_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    conv_geom g;
    as_err err;
    int64_t plane, i, o;

    if (conv_geometry(info, &info->in[0], &info->in[1], &g, &err) != AS_OK)
        return; /* unreachable: the shapes were inferred */
    conv_loop(&g, CONV_FWD, in[0], in[1], out[0]);
    if (info->nin < 3)
        return;
    plane = g.oh * g.ow;
    for (i = 0; i < g.n * g.o; i++)
        for (o = 0; o < plane; o++)
            out[0][i * plane + o] += in[2][i % g.o];
}

/* Attributes stride, padding, dilation, groups of OP into A[0..4). */
static void
conv_attrs(const as_op *op, as_attr *a)
{
    static const char *const keys[4] = {"stride", "padding", "dilation", "groups"};
    int k;

    for (k = 0; k < 4; k++) {
        const as_attr *f = as_attr_find(op->attr, op->nattr, keys[k]);
        a[k] = f != NULL ? *f : (k == 3 ? AS_ATTR_I("groups", 1) : AS_ATTR_V(keys[k], 0, NULL));
    }
}

/*
 * d conv2d: dx = conv2d_grad_input(dy, w), dw = conv2d_grad_weight(dy, x),
 * dbias = reduce_sum(dy, [0,2,3]).
 */
static int
conv2d_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_graph *gr = as_grad_graph(c);
    int32_t x = op->in[0], w = op->in[1], pair[2];
    int nin = op->nin, j;
    as_shape xs = as_graph_tensor(gr, x)->shape, ws = as_graph_tensor(gr, w)->shape;
    static const int64_t bias_dims[3] = {0, 2, 3};
    as_attr a[5];

    for (j = 0; j < nin; j++)
        din[j] = -1;
    if (dout[0] < 0)
        return AS_OK;
    conv_attrs(op, a);
    pair[0] = dout[0];
    if (as_grad_needs(c, 0)) {
        pair[1] = w;
        a[4] = AS_ATTR_V("input_shape", 4, xs.dim);
        AS_CHECK(as_grad_emit(c, "conv2d_grad_input", pair, 2, a, 5, &din[0], err));
    }
    if (as_grad_needs(c, 1)) {
        pair[1] = x;
        a[4] = AS_ATTR_V("weight_shape", 4, ws.dim);
        AS_CHECK(as_grad_emit(c, "conv2d_grad_weight", pair, 2, a, 5, &din[1], err));
    }
    if (nin > 2 && as_grad_needs(c, 2)) {
        a[0] = AS_ATTR_V("dims", 3, bias_dims);
        a[1] = AS_ATTR_I("keepdims", 0);
        AS_CHECK(as_grad_emit(c, "reduce_sum", &dout[0], 1, a, 2, &din[2], err));
    }
    return AS_OK;
}

/* conv2d_grad_input(dy, w) */

static int
conv2d_grad_input_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    conv_geom g;
    as_shape xs, ys;

    AS_CHECK(shape4_attr(info, "input_shape", info->in[0].dtype, &xs, err));
    AS_CHECK(conv_geometry(info, &xs, &info->in[1], &g, err));
    ys = conv_out_shape(&g, xs.dtype);
    AS_CHECK(need_dy(info, &info->in[0], &ys, err));
    out[0] = xs;
    *nout = 1;
    return AS_OK;
}

static double
conv2d_grad_input_flops(const as_opinfo *info)
{
    conv_geom g;
    as_shape xs;
    as_err err;

    if (shape4_attr(info, "input_shape", info->in[0].dtype, &xs, &err) != AS_OK ||
        conv_geometry(info, &xs, &info->in[1], &g, &err) != AS_OK)
        return 0.0;
    return conv_geom_flops(&g);
}

static void
conv2d_grad_input_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    conv_geom g;
    as_err err;

    memset(out[0], 0, (size_t)as_shape_numel(&info->out[0]) * sizeof(double));
    if (conv_geometry(info, &info->out[0], &info->in[1], &g, &err) == AS_OK)
        conv_loop(&g, CONV_DX, in[0], in[1], out[0]);
}

/*
 * conv2d_grad_input is bilinear in (dy, w): with cotangent r (shaped like
 * x), d/d dy = conv2d(r, w) and d/d w = conv2d_grad_weight(dy, r).
 */
static int
conv2d_grad_input_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din,
                       as_err *err)
{
    as_graph *gr = as_grad_graph(c);
    int32_t dy = op->in[0], w = op->in[1], pair[2];
    as_shape ws = as_graph_tensor(gr, w)->shape;
    as_attr a[5];

    din[0] = din[1] = -1;
    if (dout[0] < 0)
        return AS_OK;
    conv_attrs(op, a);
    if (as_grad_needs(c, 0)) {
        pair[0] = dout[0];
        pair[1] = w;
        AS_CHECK(as_grad_emit(c, "conv2d", pair, 2, a, 4, &din[0], err));
    }
    if (as_grad_needs(c, 1)) {
        pair[0] = dy;
        pair[1] = dout[0];
        a[4] = AS_ATTR_V("weight_shape", 4, ws.dim);
        AS_CHECK(as_grad_emit(c, "conv2d_grad_weight", pair, 2, a, 5, &din[1], err));
    }
    return AS_OK;
}

/* conv2d_grad_weight(dy, x) */

static int
conv2d_grad_weight_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    conv_geom g;
    as_shape ws, ys;

    AS_CHECK(shape4_attr(info, "weight_shape", info->in[0].dtype, &ws, err));
    AS_CHECK(conv_geometry(info, &info->in[1], &ws, &g, err));
    ys = conv_out_shape(&g, ws.dtype);
    AS_CHECK(need_dy(info, &info->in[0], &ys, err));
    out[0] = ws;
    *nout = 1;
    return AS_OK;
}

static double
conv2d_grad_weight_flops(const as_opinfo *info)
{
    conv_geom g;
    as_shape ws;
    as_err err;

    if (shape4_attr(info, "weight_shape", info->in[0].dtype, &ws, &err) != AS_OK ||
        conv_geometry(info, &info->in[1], &ws, &g, &err) != AS_OK)
        return 0.0;
    return conv_geom_flops(&g);
}

static void
conv2d_grad_weight_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    conv_geom g;
    as_err err;

    memset(out[0], 0, (size_t)as_shape_numel(&info->out[0]) * sizeof(double));
    if (conv_geometry(info, &info->in[1], &info->out[0], &g, &err) == AS_OK)
        conv_loop(&g, CONV_DW, in[0], in[1], out[0]);
}

/*
 * conv2d_grad_weight is bilinear in (dy, x): with cotangent r (shaped like
 * w), d/d dy = conv2d(x, r) and d/d x = conv2d_grad_input(dy, r).
 */
static int
conv2d_grad_weight_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din,
                        as_err *err)
{
    as_graph *gr = as_grad_graph(c);
    int32_t dy = op->in[0], x = op->in[1], pair[2];
    as_shape xs = as_graph_tensor(gr, x)->shape;
    as_attr a[5];

    din[0] = din[1] = -1;
    if (dout[0] < 0)
        return AS_OK;
    conv_attrs(op, a);
    if (as_grad_needs(c, 0)) {
        pair[0] = x;
        pair[1] = dout[0];
        AS_CHECK(as_grad_emit(c, "conv2d", pair, 2, a, 4, &din[0], err));
    }
    if (as_grad_needs(c, 1)) {
        pair[0] = dy;
        pair[1] = dout[0];
        a[4] = AS_ATTR_V("input_shape", 4, xs.dim);
        AS_CHECK(as_grad_emit(c, "conv2d_grad_input", pair, 2, a, 5, &din[1], err));
    }
    return AS_OK;
}

/* batchnorm */

/* Check x [N, C, ...] (rank >= 2, float) and per-channel inputs J.. of shape [C]. */
static int
bn_check(const as_opinfo *info, int first_chan, as_err *err)
{
    const as_shape *x = &info->in[first_chan == 2 ? 1 : 0];
    char b1[256], b2[256];
    int j;

    if (x->rank < 2 || !as_dtype_is_float(x->dtype))
        return as_graph_i_shape_err(err, info, "x must be a float [N,C,...] tensor, got %s",
                                    as_shape_str(x, b1, sizeof b1));
    for (j = first_chan; j < info->nin; j++) {
        const as_shape *s = &info->in[j];
        if (s->rank != 1 || s->dim[0] != x->dim[1] || s->dtype != x->dtype)
            return as_graph_i_shape_err(err, info, "input %d must be %s[%lld] (one per channel "
                                        "of %s), got %s", j, as_dtype_name(x->dtype),
                                        (long long)x->dim[1], as_shape_str(x, b1, sizeof b1),
                                        as_shape_str(s, b2, sizeof b2));
    }
    return AS_OK;
}

/* Sizes of x [N, C, rest...]: N, C and the product of the rest. */
static void
bn_dims(const as_shape *x, int64_t *n, int64_t *c, int64_t *inner)
{
    int i;

    *n = x->dim[0];
    *c = x->dim[1];
    *inner = 1;
    for (i = 2; i < x->rank; i++)
        *inner *= x->dim[i];
}

/* Per-channel mean and 1/sqrt(var + eps) of X (biased variance); caller frees. */
static void
bn_stats(const as_shape *xs, const double *x, double eps, double **mean, double **rstd)
{
    int64_t n, c, inner, i, ch, k;
    double m;

    bn_dims(xs, &n, &c, &inner);
    m = (double)(n * inner);
    *mean = as_xcalloc((size_t)c, sizeof(double));
    *rstd = as_xcalloc((size_t)c, sizeof(double));
    for (i = 0; i < n; i++)
        for (ch = 0; ch < c; ch++)
            for (k = 0; k < inner; k++)
                (*mean)[ch] += x[(i * c + ch) * inner + k];
    for (ch = 0; ch < c; ch++)
        (*mean)[ch] /= m;
    for (i = 0; i < n; i++)
        for (ch = 0; ch < c; ch++)
            for (k = 0; k < inner; k++) {
                double d = x[(i * c + ch) * inner + k] - (*mean)[ch];
                (*rstd)[ch] += d * d;
            }
    for (ch = 0; ch < c; ch++)
        (*rstd)[ch] = 1.0 / sqrt((*rstd)[ch] / m + eps);
}

static int
batchnorm_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(bn_check(info, 1, err));
    out[0] = info->in[0];
    *nout = 1;
    return AS_OK;
}

/* Statistics cost 4 FLOPs per element (mean 1, variance 3); normalise + affine 4. */
static double
batchnorm_flops(const as_opinfo *info)
{
    return 8.0 * (double)as_shape_numel(&info->in[0]);
}

static void
batchnorm_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t n, c, inner, i, ch, k;
    double *mean, *rstd;

    bn_dims(&info->in[0], &n, &c, &inner);
    bn_stats(&info->in[0], in[0], OPI_FLOAT(info, "eps", 1e-5), &mean, &rstd);
    for (i = 0; i < n; i++)
        for (ch = 0; ch < c; ch++)
            for (k = 0; k < inner; k++) {
                int64_t at = (i * c + ch) * inner + k;
                out[0][at] = (in[0][at] - mean[ch]) * rstd[ch] * in[1][ch] + in[2][ch];
            }
    free(mean);
    free(rstd);
}

/*
 * d batchnorm: dx = batchnorm_grad_x(dy, x, gamma), dgamma =
 * batchnorm_grad_gamma(dy, x), dbeta = reduce_sum(dy) over all dims but 1.
 */
static int
batchnorm_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    int32_t x = op->in[0], gamma = op->in[1], tri[3];
    const as_attr *eps = as_attr_find(op->attr, op->nattr, "eps");
    as_attr a[2];
    as_shape xs = as_graph_tensor(as_grad_graph(c), x)->shape;
    int64_t dims[AS_MAX_RANK];
    int i, nd = 0, na = eps != NULL;

    din[0] = din[1] = din[2] = -1;
    if (dout[0] < 0)
        return AS_OK;
    if (eps != NULL)
        a[0] = *eps;
    tri[0] = dout[0];
    tri[1] = x;
    tri[2] = gamma;
    if (as_grad_needs(c, 0))
        AS_CHECK(as_grad_emit(c, "batchnorm_grad_x", tri, 3, a, na, &din[0], err));
    if (as_grad_needs(c, 1))
        AS_CHECK(as_grad_emit(c, "batchnorm_grad_gamma", tri, 2, a, na, &din[1], err));
    if (as_grad_needs(c, 2)) {
        for (i = 0; i < xs.rank; i++)
            if (i != 1)
                dims[nd++] = i;
        a[0] = AS_ATTR_V("dims", nd, dims);
        a[1] = AS_ATTR_I("keepdims", 0);
        AS_CHECK(as_grad_emit(c, "reduce_sum", &dout[0], 1, a, 2, &din[2], err));
    }
    return AS_OK;
}

/* Check dy has x's shape (inputs 0 and 1 of the batchnorm gradient ops). */
static int
bn_need_dy(const as_opinfo *info, as_err *err)
{
    return need_dy(info, &info->in[0], &info->in[1], err);
}

static int
batchnorm_grad_x_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(bn_check(info, 2, err));
    AS_CHECK(bn_need_dy(info, err));
    out[0] = info->in[1];
    *nout = 1;
    return AS_OK;
}

/* Statistics 4 per element, xhat 2, two sums 3, the combination 4. */
static double
batchnorm_grad_x_flops(const as_opinfo *info)
{
    return 13.0 * (double)as_shape_numel(&info->in[1]);
}

/*
 * With xhat = (x - mean) * rstd and M elements per channel:
 * dx = gamma * rstd / M * (M dy - sum(dy) - xhat * sum(dy xhat)).
 */
static void
batchnorm_grad_x_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const double *dy = in[0], *x = in[1], *gamma = in[2];
    int64_t n, c, inner, i, ch, k;
    double *mean, *rstd, *sdy, *sdyx, m;

    bn_dims(&info->in[1], &n, &c, &inner);
    m = (double)(n * inner);
    bn_stats(&info->in[1], x, OPI_FLOAT(info, "eps", 1e-5), &mean, &rstd);
    sdy = as_xcalloc((size_t)c, sizeof(double));
    sdyx = as_xcalloc((size_t)c, sizeof(double));
    for (i = 0; i < n; i++)
        for (ch = 0; ch < c; ch++)
            for (k = 0; k < inner; k++) {
                int64_t at = (i * c + ch) * inner + k;
                sdy[ch] += dy[at];
                sdyx[ch] += dy[at] * (x[at] - mean[ch]) * rstd[ch];
            }
    for (i = 0; i < n; i++)
        for (ch = 0; ch < c; ch++)
            for (k = 0; k < inner; k++) {
                int64_t at = (i * c + ch) * inner + k;
                double xhat = (x[at] - mean[ch]) * rstd[ch];
                out[0][at] = gamma[ch] * rstd[ch] / m * (m * dy[at] - sdy[ch] - xhat * sdyx[ch]);
            }
    free(mean);
    free(rstd);
    free(sdy);
    free(sdyx);
}

static int
batchnorm_grad_gamma_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[1];

    AS_CHECK(bn_check(info, 2, err));
    AS_CHECK(bn_need_dy(info, err));
    out[0].dtype = x->dtype;
    out[0].rank = 1;
    out[0].dim[0] = x->dim[1];
    *nout = 1;
    return AS_OK;
}

/* Statistics 4 per element, xhat 2, multiply-add 2. */
static double
batchnorm_grad_gamma_flops(const as_opinfo *info)
{
    return 8.0 * (double)as_shape_numel(&info->in[1]);
}

/* dgamma[c] = sum over all but dim 1 of dy * xhat. */
static void
batchnorm_grad_gamma_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const double *dy = in[0], *x = in[1];
    int64_t n, c, inner, i, ch, k;
    double *mean, *rstd;

    bn_dims(&info->in[1], &n, &c, &inner);
    bn_stats(&info->in[1], x, OPI_FLOAT(info, "eps", 1e-5), &mean, &rstd);
    memset(out[0], 0, (size_t)c * sizeof(double));
    for (i = 0; i < n; i++)
        for (ch = 0; ch < c; ch++)
            for (k = 0; k < inner; k++) {
                int64_t at = (i * c + ch) * inner + k;
                out[0][ch] += dy[at] * (x[at] - mean[ch]) * rstd[ch];
            }
    free(mean);
    free(rstd);
}

/* Pools */

/* Pool geometry of input X from kernel / stride (empty = kernel) / padding. */
static int
pool_geometry(const as_opinfo *info, const as_shape *x, conv_geom *g, as_err *err)
{
    int64_t k[2], st[2], pd[2];
    const int64_t *v;
    char b[256];

    AS_CHECK(need_nchw(info, x, "input", err));
    if (OPI_INTS(info, "kernel", &v) <= 0)
        return as_graph_i_shape_err(err, info, "kernel needs 1 or 2 entries, got 0");
    AS_CHECK(pair_attr(info, "kernel", 1, 1, k, err));
    if (OPI_INTS(info, "stride", &v) > 0) {
        AS_CHECK(pair_attr(info, "stride", 1, 1, st, err));
    } else {
        st[0] = k[0];
        st[1] = k[1];
    }
    AS_CHECK(pair_attr(info, "padding", 0, 0, pd, err));
    if (2 * pd[0] > k[0] || 2 * pd[1] > k[1])
        return as_graph_i_shape_err(err, info, "padding [%lld,%lld] exceeds half the kernel "
                                    "[%lld,%lld]", (long long)pd[0], (long long)pd[1],
                                    (long long)k[0], (long long)k[1]);
    g->n = x->dim[0], g->c = x->dim[1], g->h = x->dim[2], g->w = x->dim[3];
    g->o = g->c, g->cg = 1, g->kh = k[0], g->kw = k[1], g->groups = 1;
    g->sh = st[0], g->sw = st[1], g->ph = pd[0], g->pw = pd[1], g->dh = g->dw = 1;
    g->oh = out_extent(g->h, g->kh, g->sh, g->ph, 1);
    g->ow = out_extent(g->w, g->kw, g->sw, g->pw, 1);
    if (g->oh < 1 || g->ow < 1)
        return as_graph_i_shape_err(err, info, "kernel %lldx%lld does not fit input %s with "
                                    "padding [%lld,%lld]", (long long)g->kh, (long long)g->kw,
                                    as_shape_str(x, b, sizeof b), (long long)g->ph,
                                    (long long)g->pw);
    return AS_OK;
}

/* What pool_run computes. */
enum { POOL_MAX, POOL_AVG, POOL_MAX_GRAD, POOL_AVG_GRAD };

/*
 * Visit every pool window (output element yi of plane n*C + c) over its
 * in-bounds input positions in row-major window order.  POOL_MAX / POOL_AVG:
 * OUT = pool(A); POOL_MAX_GRAD: OUT += A (dy) at the first maximum of X;
 * POOL_AVG_GRAD: OUT += A (dy) / (kh kw) over the window.  OUT must be
 * zeroed for the gradients.
 */
static void
pool_run(const conv_geom *g, int mode, const double *a, const double *x, double *out)
{
    int64_t plane, oh, ow, ki, kj, yi = 0;
    double inv = 1.0 / (double)(g->kh * g->kw);

    for (plane = 0; plane < g->n * g->c; plane++)
        for (oh = 0; oh < g->oh; oh++)
            for (ow = 0; ow < g->ow; ow++, yi++) {
                double best = -HUGE_VAL, sum = 0.0;
                int64_t arg = -1;
                for (ki = 0; ki < g->kh; ki++) {
                    int64_t ih = oh * g->sh - g->ph + ki;
                    if (ih < 0 || ih >= g->h)
                        continue;
                    for (kj = 0; kj < g->kw; kj++) {
                        int64_t iw = ow * g->sw - g->pw + kj, xi;
                        if (iw < 0 || iw >= g->w)
                            continue;
                        xi = (plane * g->h + ih) * g->w + iw;
                        if (mode == POOL_AVG)
                            sum += a[xi];
                        else if (mode == POOL_AVG_GRAD)
                            out[xi] += a[yi] * inv;
                        else if (arg < 0 || x[xi] > best)
                            best = x[xi], arg = xi;
                    }
                }
                if (mode == POOL_MAX)
                    out[yi] = best;
                else if (mode == POOL_AVG)
                    out[yi] = sum * inv;
                else if (mode == POOL_MAX_GRAD && arg >= 0)
                    out[arg] += a[yi];
            }
}

static int
pool_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    conv_geom g;

    AS_CHECK(pool_geometry(info, &info->in[0], &g, err));
    out[0] = conv_out_shape(&g, info->in[0].dtype);
    *nout = 1;
    return AS_OK;
}

/*
 * One compare or add per window position of every output element.  The
 * pooled input is x (input 0), maxpool2d_grad's x (input 1), or
 * avgpool2d_grad's input_shape.
 */
static double
pool_flops(const as_opinfo *info)
{
    conv_geom g;
    as_shape xs;
    as_err err;
    const int64_t *v;

    if (OPI_INTS(info, "input_shape", &v) >= 0) {
        if (shape4_attr(info, "input_shape", info->in[0].dtype, &xs, &err) != AS_OK)
            return 0.0;
    } else {
        xs = info->in[info->nin - 1];
    }
    if (pool_geometry(info, &xs, &g, &err) != AS_OK)
        return 0.0;
    return (double)(g.n * g.c * g.oh * g.ow) * (double)(g.kh * g.kw);
}

static void
maxpool2d_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    conv_geom g;
    as_err err;

    if (pool_geometry(info, &info->in[0], &g, &err) == AS_OK)
        pool_run(&g, POOL_MAX, in[0], in[0], out[0]);
}

static void
avgpool2d_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    conv_geom g;
    as_err err;

    if (pool_geometry(info, &info->in[0], &g, &err) == AS_OK)
        pool_run(&g, POOL_AVG, in[0], NULL, out[0]);
}

/* Attributes kernel, stride, padding of OP into A[0..3). */
static void
pool_attrs(const as_op *op, as_attr *a)
{
    static const char *const keys[3] = {"kernel", "stride", "padding"};
    int k;

    for (k = 0; k < 3; k++) {
        const as_attr *f = as_attr_find(op->attr, op->nattr, keys[k]);
        a[k] = f != NULL ? *f : AS_ATTR_V(keys[k], 0, NULL);
    }
}

/* d maxpool2d = maxpool2d_grad(dy, x): dy routed to each window's first maximum. */
static int
maxpool2d_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    int32_t pair[2];
    as_attr a[3];

    din[0] = -1;
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    pool_attrs(op, a);
    pair[0] = dout[0];
    pair[1] = op->in[0];
    return as_grad_emit(c, "maxpool2d_grad", pair, 2, a, 3, &din[0], err);
}

/* d avgpool2d = avgpool2d_grad(dy): dy / (kh kw) spread over each window. */
static int
avgpool2d_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_shape xs;
    as_attr a[4];

    din[0] = -1;
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    xs = as_graph_tensor(as_grad_graph(c), op->in[0])->shape;
    pool_attrs(op, a);
    a[3] = AS_ATTR_V("input_shape", 4, xs.dim);
    return as_grad_emit(c, "avgpool2d_grad", &dout[0], 1, a, 4, &din[0], err);
}

static int
maxpool2d_grad_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    conv_geom g;
    as_shape ys;

    AS_CHECK(pool_geometry(info, &info->in[1], &g, err));
    ys = conv_out_shape(&g, info->in[1].dtype);
    AS_CHECK(need_dy(info, &info->in[0], &ys, err));
    out[0] = info->in[1];
    *nout = 1;
    return AS_OK;
}

static void
maxpool2d_grad_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    conv_geom g;
    as_err err;

    memset(out[0], 0, (size_t)as_shape_numel(&info->out[0]) * sizeof(double));
    if (pool_geometry(info, &info->in[1], &g, &err) == AS_OK)
        pool_run(&g, POOL_MAX_GRAD, in[0], in[1], out[0]);
}

static int
avgpool2d_grad_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    conv_geom g;
    as_shape xs, ys;

    AS_CHECK(shape4_attr(info, "input_shape", info->in[0].dtype, &xs, err));
    AS_CHECK(pool_geometry(info, &xs, &g, err));
    ys = conv_out_shape(&g, xs.dtype);
    AS_CHECK(need_dy(info, &info->in[0], &ys, err));
    out[0] = xs;
    *nout = 1;
    return AS_OK;
}

static void
avgpool2d_grad_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    conv_geom g;
    as_err err;

    memset(out[0], 0, (size_t)as_shape_numel(&info->out[0]) * sizeof(double));
    if (pool_geometry(info, &info->out[0], &g, &err) == AS_OK)
        pool_run(&g, POOL_AVG_GRAD, in[0], NULL, out[0]);
}

/* avgpool2d_grad is linear in dy: its gradient is avgpool2d of the cotangent. */
static int
avgpool2d_grad_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din,
                    as_err *err)
{
    as_attr a[3];

    din[0] = -1;
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    pool_attrs(op, a);
    return as_grad_emit(c, "avgpool2d", &dout[0], 1, a, 3, &din[0], err);
}

#define CONV_ATTRS "stride:I=[1,1] padding:I=[0,0] dilation:I=[1,1] groups:i=1"
#define POOL_ATTRS "kernel:I stride:I=[] padding:I=[0,0]"

const as_op_def as_ops_conv[] = {
    {"avgpool2d", 1, 1, 0, 0, POOL_ATTRS,
     "average over kh x kw windows of NCHW x (padding counted as zeros: count_include_pad=1)",
     pool_infer, pool_flops, NULL, avgpool2d_kernel, avgpool2d_grad, NULL},
    {"avgpool2d_grad", 1, 1, AS_OPF_GRAD, 0, POOL_ATTRS " input_shape:I",
     "gradient of avgpool2d: dy / (kh kw) spread over each window", avgpool2d_grad_infer,
     pool_flops, NULL, avgpool2d_grad_kernel, avgpool2d_grad_grad, NULL},
    {"batchnorm", 3, 3, 0, 0, "eps:f=1e-5",
     "training-mode batch normalisation of x[N,C,...] over all dims but 1", batchnorm_infer,
     batchnorm_flops, NULL, batchnorm_kernel, batchnorm_grad, NULL},
    {"batchnorm_grad_gamma", 2, 2, AS_OPF_GRAD, 0, "eps:f=1e-5",
     "gradient of batchnorm wrt gamma: sum of dy * xhat per channel", batchnorm_grad_gamma_infer,
     batchnorm_grad_gamma_flops, NULL, batchnorm_grad_gamma_kernel, NULL, NULL},
    {"batchnorm_grad_x", 3, 3, AS_OPF_GRAD, 0, "eps:f=1e-5",
     "gradient of batchnorm wrt x (through the batch statistics)", batchnorm_grad_x_infer,
     batchnorm_grad_x_flops, NULL, batchnorm_grad_x_kernel, NULL, NULL},
    {"conv2d", 2, 3, 0, 0, CONV_ATTRS,
     "2-D convolution of NCHW x with OIHW w (+ optional bias[O])", conv2d_infer, conv2d_flops,
     NULL, conv2d_kernel, conv2d_grad, NULL},
    {"conv2d_grad_input", 2, 2, AS_OPF_GRAD, 0, CONV_ATTRS " input_shape:I",
     "gradient of conv2d wrt its input (transposed convolution of dy with w)",
     conv2d_grad_input_infer, conv2d_grad_input_flops, NULL, conv2d_grad_input_kernel,
     conv2d_grad_input_grad, NULL},
    {"conv2d_grad_weight", 2, 2, AS_OPF_GRAD, 0, CONV_ATTRS " weight_shape:I",
     "gradient of conv2d wrt its weight (correlation of x with dy)", conv2d_grad_weight_infer,
     conv2d_grad_weight_flops, NULL, conv2d_grad_weight_kernel, conv2d_grad_weight_grad, NULL},
    {"maxpool2d", 1, 1, 0, 0, POOL_ATTRS,
     "maximum over kh x kw windows of NCHW x (padding ignored)", pool_infer, pool_flops, NULL, maxpool2d_kernel, maxpool2d_grad, NULL},
    {"maxpool2d_grad", 2, 2, AS_OPF_GRAD, 0, POOL_ATTRS,
     "gradient of maxpool2d: dy routed to each window's first maximum of x",
     maxpool2d_grad_infer, pool_flops, NULL, maxpool2d_grad_kernel, NULL, NULL},
};
const int as_ops_conv_count = (int)(sizeof as_ops_conv / sizeof as_ops_conv[0]);
