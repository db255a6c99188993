/* ops_nn.c -- op family 'nn': matmul, softmax / log_softmax, layernorm,
 * rmsnorm, embedding, one_hot, cross_entropy, mse_loss, and the gradient
 * ops their rules emit (docs/ops.md, section "nn").
 *
 * DESIGN: every op here works on dense row-major doubles.  Ops that
 * normalise "over the last dim" view their input as ROWS x H; softmax views
 * it as OUTER x N x INNER around its axis.  Matmul broadcasts batch dims
 * numpy-style: the kernel walks the output batch index and finds each
 * operand's matrix through broadcast strides (stride 0 on stretched dims).
 * Gradient rules emit other registry ops by name (matmul with transposes,
 * reshape, reduce_sum through as_grad_unbroadcast) so the backward graph is
 * as shardable as the forward one.  None of these ops is FOLLOW: each ties
 * some dims together (the contracted dim, the normalised dim).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "autodiff.h"
#include "ops_internal.h"

/* ---------------------------------------------------------------- helpers */

/* View S as ROWS x H, H its last dim (a scalar is one row of one). */
static void
nn_rows(const as_shape *s, int64_t *rows, int64_t *h)
{
    *h = s->rank > 0 ? s->dim[s->rank - 1] : 1;
    *rows = *h > 0 ? as_shape_numel(s) / *h : 0;
}

/* View S as OUTER x N x INNER around dim AXIS. */
static void
nn_axis_split(const as_shape *s, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
    int i;

    *outer = *inner = 1;
    for (i = 0; i < axis; i++)
        *outer *= s->dim[i];
    for (i = axis + 1; i < s->rank; i++)
        *inner *= s->dim[i];
    *n = s->dim[axis];
}

/* Check that inputs I and J have the same shape (dims and dtype). */
static int
nn_same_shape(const as_opinfo *info, int i, int j, const char *what, as_err *err)
{
    char si[128], sj[128];

    if (!as_shape_equal(&info->in[i], &info->in[j]))
        return as_graph_i_shape_err(err, info, "%s differ in shape: %s vs %s", what,
                                    as_shape_str(&info->in[i], si, sizeof si),
                                    as_shape_str(&info->in[j], sj, sizeof sj));
    return AS_OK;
}

/* Check that input J holds one element (the incoming gradient of a loss). */
static int
nn_need_scalar(const as_opinfo *info, int j, as_err *err)
{
    char s[128];

    if (as_shape_numel(&info->in[j]) != 1)
        return as_graph_i_shape_err(err, info, "input %d must be a scalar, got %s", j,
                                    as_shape_str(&info->in[j], s, sizeof s));
    return as_graph_i_need_float(info, j, err);
}

/* Check an eps attribute (>= 0). */
static int
nn_check_eps(const as_opinfo *info, as_err *err)
{
    double eps = OPI_FLOAT(info, "eps", 0.0);

    if (!(eps >= 0.0))
        return as_graph_i_shape_err(err, info, "eps must be >= 0, got %g", eps);
    return AS_OK;
}

/* Output 0 gets the shape of input J. */
static int
nn_out_like(const as_opinfo *info, int j, as_shape *out, int *nout)
{
    out[0] = info->in[j];
    *nout = 1;
    return AS_OK;
}

/* Shape of tensor ID of the graph being differentiated. */
static as_shape
nn_tshape(as_gradctx *c, int32_t id)
{
    return as_graph_tensor(as_grad_graph(c), id)->shape;
}

/* ----------------------------------------------------------------- matmul */

/* Geometry of a (batched, transposed, broadcast) matmul. */
typedef struct mm_geom {
    int ta, tb;          /**< transpose flags */
    int64_t m, k, n;     /**< per-matrix sizes of op(a)[m,k] x op(b)[k,n] */
    as_shape abat, bbat; /**< batch dims of a and b (leading rank-2 dims) */
    as_shape obat;       /**< broadcast batch dims of the output */
} mm_geom;

/* Work out and check the matmul geometry of INFO's inputs. */
static int
mm_geometry(const as_opinfo *info, mm_geom *g, as_err *err)
{
    const as_shape *a = &info->in[0], *b = &info->in[1];
    int64_t ta = OPI_INT(info, "transpose_a", 0), tb = OPI_INT(info, "transpose_b", 0);
    int64_t ka, kb;
    char sa[128], sb[128], note[64] = "";
    int i, r;

    if (a->rank < 2 || b->rank < 2)
        return as_graph_i_shape_err(err, info,
                                    "operands must have rank >= 2 (use reshape to make a "
                                    "vector a [1,k] or [k,1] matrix): %s x %s",
                                    as_shape_str(a, sa, sizeof sa), as_shape_str(b, sb, sizeof sb));
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
        return as_graph_i_shape_err(err, info, "transpose_a and transpose_b must be 0 or 1");
    AS_CHECK(as_graph_i_same_dtype(info, 0, 1, err));
    g->ta = (int)ta;
    g->tb = (int)tb;
    g->m = ta ? a->dim[a->rank - 1] : a->dim[a->rank - 2];
    ka = ta ? a->dim[a->rank - 2] : a->dim[a->rank - 1];
    kb = tb ? b->dim[b->rank - 1] : b->dim[b->rank - 2];
    g->n = tb ? b->dim[b->rank - 2] : b->dim[b->rank - 1];
    if (ta || tb)
        snprintf(note, sizeof note, " (transpose_a=%d transpose_b=%d)", g->ta, g->tb);
    if (ka != kb)
        return as_graph_i_shape_err(err, info, "inner dims differ: %s x %s%s",
                                    as_shape_str(a, sa, sizeof sa), as_shape_str(b, sb, sizeof sb),
                                    note);
    g->k = ka;
    g->abat = *a;
    g->abat.rank = a->rank - 2;
    g->bbat = *b;
    g->bbat.rank = b->rank - 2;
    r = g->abat.rank > g->bbat.rank ? g->abat.rank : g->bbat.rank;
    g->obat.dtype = a->dtype;
    g->obat.rank = r;
    for (i = 0; i < r; i++) {
        int ia = g->abat.rank - r + i, ib = g->bbat.rank - r + i;
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return as_graph_i_shape_err(err, info, "batch dims do not broadcast: %s x %s",
                                        as_shape_str(a, sa, sizeof sa),
                                        as_shape_str(b, sb, sizeof sb));
        g->obat.dim[i] = da == 1 ? db : da;
    }
    return AS_OK;
}

static int
mm_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    mm_geom g;

    AS_CHECK(mm_geometry(info, &g, err));
    if (g.obat.rank + 2 > AS_MAX_RANK)
        return as_graph_i_shape_err(err, info, "result rank exceeds %d", AS_MAX_RANK);
    out[0] = g.obat;
    out[0].dim[g.obat.rank] = g.m;
    out[0].dim[g.obat.rank + 1] = g.n;
    out[0].rank = g.obat.rank + 2;
    *nout = 1;
    return AS_OK;
}

/* 2·batch·m·n·k: one multiply-add per (i, j, p) of every output matrix. */
static double
mm_flops(const as_opinfo *info)
{
    mm_geom g;
    as_err err;

    if (mm_geometry(info, &g, &err) != AS_OK)
        return 0.0;
    return 2.0 * (double)as_shape_numel(&g.obat) * (double)g.m * (double)g.n * (double)g.k;
}

static void
mm_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t idx[AS_MAX_RANK] = {0}, sa[AS_MAX_RANK], sb[AS_MAX_RANK];
    int64_t a_i, a_p, b_p, b_j, i, j, p;
    double *c = out[0];
    mm_geom g;
    as_err err;

    if (mm_geometry(info, &g, &err) != AS_OK)
        return;
    as_graph_i_bcast_strides(&g.abat, &g.obat, sa);
    as_graph_i_bcast_strides(&g.bbat, &g.obat, sb);
    /* Element strides of op(a)[i,p] and op(b)[p,j] inside one matrix. */
    a_i = g.ta ? 1 : g.k;
    a_p = g.ta ? g.m : 1;
    b_p = g.tb ? 1 : g.n;
    b_j = g.tb ? g.k : 1;
    do {
        int64_t oa = 0, ob = 0;
        const double *a, *b;
        int d;
        for (d = 0; d < g.obat.rank; d++) {
            oa += idx[d] * sa[d];
            ob += idx[d] * sb[d];
        }
        a = in[0] + oa * g.m * g.k;
        b = in[1] + ob * g.k * g.n;
        memset(c, 0, (size_t)(g.m * g.n) * sizeof *c);
        for (i = 0; i < g.m; i++)
            for (p = 0; p < g.k; p++) {
                double av = a[i * a_i + p * a_p];
                for (j = 0; j < g.n; j++)
                    c[i * g.n + j] += av * b[p * b_p + j * b_j];
            }
        c += g.m * g.n;
    } while (as_graph_i_next(idx, &g.obat));
}

/* Emit matmul(X, Y) with the given transposes into *OUT. */
static int
mm_emit(as_gradctx *c, int32_t x, int32_t y, int ta, int tb, int32_t *out, as_err *err)
{
    int32_t in[2] = {x, y};
    as_attr at[2] = {AS_ATTR_I("transpose_a", ta), AS_ATTR_I("transpose_b", tb)};

    return as_grad_emit(c, "matmul", in, 2, at, 2, out, err);
}

/* Emit reshape(X) to [D0, D1] into *OUT. */
static int
nn_emit_reshape2(as_gradctx *c, int32_t x, int64_t d0, int64_t d1, int32_t *out, as_err *err)
{
    int64_t shp[2] = {d0, d1};
    as_attr at = AS_ATTR_V("shape", 2, shp);

    return as_grad_emit(c, "reshape", &x, 1, &at, 1, out, err);
}

/*
 * C = op(A)·op(B).  With op(A) = A' and op(B) = B': dA' = dC·B'^T and
 * dB' = A'^T·dC; a transposed operand takes the transpose of that, which
 * swaps the operands of the gradient matmul.  Broadcast batch dims are
 * summed away by as_grad_unbroadcast, except for the common x[...,m,k]·w[k,n]
 * where dw = x^T·dy over all rows is one matmul on reshaped 2-d views (no
 * [batch,k,n] intermediate, no reduce_sum).
 */
static int
mm_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op; /* emitting may move the op array */
    int ta = as_attr_int(o.attr, o.nattr, "transpose_a", 0) != 0;
    int tb = as_attr_int(o.attr, o.nattr, "transpose_b", 0) != 0;
    int32_t a = o.in[0], b = o.in[1], dy = dout[0], t;
    as_shape sa = nn_tshape(c, a), sb = nn_tshape(c, b), sy;

    din[0] = din[1] = -1;
    if (dy < 0)
        return AS_OK;
    sy = nn_tshape(c, dy);
    if (as_grad_needs(c, 0)) {
        if (!ta)
            AS_CHECK(mm_emit(c, dy, b, 0, !tb, &t, err));
        else
            AS_CHECK(mm_emit(c, b, dy, tb, 1, &t, err));
        AS_CHECK(as_grad_unbroadcast(c, t, &sa, &din[0], err));
    }
    if (as_grad_needs(c, 1)) {
        if (sb.rank == 2 && sa.rank > 2 && !ta) {
            int64_t k = sa.dim[sa.rank - 1], n = sy.dim[sy.rank - 1];
            int64_t rows = as_shape_numel(&sa) / k;
            int32_t a2, dy2;
            AS_CHECK(nn_emit_reshape2(c, a, rows, k, &a2, err));
            AS_CHECK(nn_emit_reshape2(c, dy, rows, n, &dy2, err));
            if (!tb)
                AS_CHECK(mm_emit(c, a2, dy2, 1, 0, &din[1], err));
            else
                AS_CHECK(mm_emit(c, dy2, a2, 1, 0, &din[1], err));
        } else {
            if (!tb)
                AS_CHECK(mm_emit(c, a, dy, !ta, 0, &t, err));
            else
                AS_CHECK(mm_emit(c, dy, a, 1, ta, &t, err));
            AS_CHECK(as_grad_unbroadcast(c, t, &sb, &din[1], err));
        }
    }
    return AS_OK;
}

/* ---------------------------------------------------------------- softmax */

/* Normalised axis attribute of an op whose input 0 is the reference shape. */
static int
sm_axis(const as_opinfo *info, int *axis, as_err *err)
{
    int64_t a = OPI_INT(info, "axis", -1);
    char s[128];

    if (!as_graph_i_axis(a, info->in[0].rank, axis))
        return as_graph_i_shape_err(err, info, "axis %lld out of range for %s", (long long)a,
                                    as_shape_str(&info->in[0], s, sizeof s));
    return AS_OK;
}

static int
sm_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    int axis;

    AS_CHECK(as_graph_i_need_float(info, 0, err));
    AS_CHECK(sm_axis(info, &axis, err));
    return nn_out_like(info, 0, out, nout);
}

/* softmax_grad(dy, y) / log_softmax_grad(dy, y): same shapes. */
static int
sm_grad_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    int axis;

    AS_CHECK(as_graph_i_need_float(info, 0, err));
    AS_CHECK(nn_same_shape(info, 0, 1, "dy and y", err));
    AS_CHECK(sm_axis(info, &axis, err));
    return nn_out_like(info, 0, out, nout);
}

/* Softmax along the axis, stabilised by subtracting the maximum; IS_LOG: log_softmax. */
static void
sm_run(const as_opinfo *info, const double *x, double *y, int is_log)
{
    int64_t outer, n, inner, o, i, j;
    int axis = 0;

    (void)as_graph_i_axis(OPI_INT(info, "axis", -1), info->in[0].rank, &axis);
    nn_axis_split(&info->in[0], axis, &outer, &n, &inner);
    for (o = 0; o < outer; o++)
        for (i = 0; i < inner; i++) {
            const double *xr = x + o * n * inner + i;
            double *yr = y + o * n * inner + i;
            double mx = xr[0], sum = 0.0;
            for (j = 1; j < n; j++)
                if (xr[j * inner] > mx)
                    mx = xr[j * inner];
            for (j = 0; j < n; j++)
                sum += exp(xr[j * inner] - mx);
            for (j = 0; j < n; j++)
                yr[j * inner] = is_log ? xr[j * inner] - mx - log(sum)
                                    : exp(xr[j * inner] - mx) / sum;
        }
}

static void
softmax_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    sm_run(info, in[0], out[0], 0);
}

static void
log_softmax_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    sm_run(info, in[0], out[0], 1);
}

/*
 * Backward of softmax (IS_LOG = 0): dx = y·(dy − Σ dy·y); of log_softmax
 * (IS_LOG = 1): dx = dy − exp(y)·Σ dy, sums along the axis.
 */
static void
sm_grad_run(const as_opinfo *info, const double *dy, const double *y, double *dx,
            int is_log)
{
    int64_t outer, n, inner, o, i, j;
    int axis = 0;

    (void)as_graph_i_axis(OPI_INT(info, "axis", -1), info->in[0].rank, &axis);
    nn_axis_split(&info->in[0], axis, &outer, &n, &inner);
    for (o = 0; o < outer; o++)
        for (i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            double s = 0.0;
            for (j = 0; j < n; j++)
                s += is_log ? dy[base + j * inner] : dy[base + j * inner] * y[base + j * inner];
            for (j = 0; j < n; j++) {
                int64_t e = base + j * inner;
                dx[e] = is_log ? dy[e] - exp(y[e]) * s : y[e] * (dy[e] - s);
            }
        }
}

static void
softmax_grad_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    sm_grad_run(info, in[0], in[1], out[0], 0);
}

static void
log_softmax_grad_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    sm_grad_run(info, in[0], in[1], out[0], 1);
}

/* Forward: max, subtract, exp, sum, divide (or log and subtract): ~5 per element. */
static double
flops_5(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 5.0);
}

/* Backward: product (or exp), row sum, subtract, scale: ~4 per element. */
static double
flops_4(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 4.0);
}

/* Both softmax flavours: one gradient op on (dy, y) with the same axis. */
static int
sm_grad_rule(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, const char *type,
             as_err *err)
{
    as_op o = *op;
    int32_t in[2];

    din[0] = -1;
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    in[0] = dout[0];
    in[1] = o.out[0];
    return as_grad_emit(c, type, in, 2, o.attr, o.nattr, &din[0], err);
}

static int
softmax_grad_rule(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    return sm_grad_rule(c, op, dout, din, "softmax_grad", err);
}

static int
log_softmax_grad_rule(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din,
                      as_err *err)
{
    return sm_grad_rule(c, op, dout, din, "log_softmax_grad", err);
}

/* ------------------------------------------------------ layernorm, rmsnorm */

/* Check a per-feature vector input J (gamma, beta) is [h], h = last dim of input X. */
static int
norm_check_vec(const as_opinfo *info, int x, int j, const char *what, as_err *err)
{
    const as_shape *xs = &info->in[x], *v = &info->in[j];
    char s1[128], s2[128];

    if (v->rank != 1 || v->dim[0] != xs->dim[xs->rank - 1] || v->dtype != xs->dtype)
        return as_graph_i_shape_err(err, info,
                                    "%s must be %s[%lld] (the last dim of %s), got %s", what,
                                    as_dtype_name(xs->dtype), (long long)xs->dim[xs->rank - 1],
                                    as_shape_str(xs, s1, sizeof s1),
                                    as_shape_str(v, s2, sizeof s2));
    return AS_OK;
}

/* Check input X is a float tensor of rank >= 1 (what the norms normalise). */
static int
norm_check_x(const as_opinfo *info, int x, as_err *err)
{
    char s[128];

    AS_CHECK(as_graph_i_need_float(info, x, err));
    if (info->in[x].rank < 1)
        return as_graph_i_shape_err(err, info, "input %d must have rank >= 1, got %s", x,
                                    as_shape_str(&info->in[x], s, sizeof s));
    return nn_check_eps(info, err);
}

/* layernorm(x, gamma, beta), rmsnorm(x, gamma). */
static int
norm_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(norm_check_x(info, 0, err));
    AS_CHECK(norm_check_vec(info, 0, 1, "gamma", err));
    if (info->nin > 2)
        AS_CHECK(norm_check_vec(info, 0, 2, "beta", err));
    return nn_out_like(info, 0, out, nout);
}

/* *_grad_x(dy, x, gamma) -> like x. */
static int
norm_grad_x_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(norm_check_x(info, 1, err));
    AS_CHECK(nn_same_shape(info, 0, 1, "dy and x", err));
    AS_CHECK(norm_check_vec(info, 1, 2, "gamma", err));
    return nn_out_like(info, 1, out, nout);
}

/* *_grad_gamma(dy, x) -> [h]. */
static int
norm_grad_gamma_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[1];

    AS_CHECK(norm_check_x(info, 1, err));
    AS_CHECK(nn_same_shape(info, 0, 1, "dy and x", err));
    out[0].dtype = x->dtype;
    out[0].rank = 1;
    out[0].dim[0] = x->dim[x->rank - 1];
    *nout = 1;
    return AS_OK;
}

/* Mean and 1/sqrt(var + eps) of row X[0..H) (biased variance). */
static void
ln_stats(const double *x, int64_t h, double eps, double *mu, double *rstd)
{
    double s = 0.0, v = 0.0;
    int64_t j;

    for (j = 0; j < h; j++)
        s += x[j];
    s /= (double)h;
    for (j = 0; j < h; j++)
        v += (x[j] - s) * (x[j] - s);
    *mu = s;
    *rstd = 1.0 / sqrt(v / (double)h + eps);
}

/* 1/sqrt(mean(x²) + eps) of row X[0..H). */
static double
rms_rstd(const double *x, int64_t h, double eps)
{
    double s = 0.0;
    int64_t j;

    for (j = 0; j < h; j++)
        s += x[j] * x[j];
    return 1.0 / sqrt(s / (double)h + eps);
}

/* y = (x − mean)·rstd·gamma + beta, per row. */
static void
layernorm_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    double eps = OPI_FLOAT(info, "eps", 1e-5), mu, rstd;
    int64_t rows, h, r, j;

    nn_rows(&info->in[0], &rows, &h);
    for (r = 0; r < rows; r++) {
        const double *x = in[0] + r * h;
        double *y = out[0] + r * h;
        ln_stats(x, h, eps, &mu, &rstd);
        for (j = 0; j < h; j++)
            y[j] = (x[j] - mu) * rstd * in[1][j] + in[2][j];
    }
}

/*
 * With xh = (x − mu)·rstd and g = dy·gamma:
 * dx = rstd·(g − mean(g) − xh·mean(g·xh)), per row.
 */
static void
layernorm_grad_x_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    double eps = OPI_FLOAT(info, "eps", 1e-5), mu, rstd;
    int64_t rows, h, r, j;

    nn_rows(&info->in[1], &rows, &h);
    for (r = 0; r < rows; r++) {
        const double *dy = in[0] + r * h, *x = in[1] + r * h, *gamma = in[2];
        double *dx = out[0] + r * h, mg = 0.0, mgx = 0.0;
        ln_stats(x, h, eps, &mu, &rstd);
        for (j = 0; j < h; j++) {
            double g = dy[j] * gamma[j];
            mg += g;
            mgx += g * (x[j] - mu) * rstd;
        }
        mg /= (double)h;
        mgx /= (double)h;
        for (j = 0; j < h; j++)
            dx[j] = rstd * (dy[j] * gamma[j] - mg - (x[j] - mu) * rstd * mgx);
    }
}

/* dgamma = Σ_rows dy·xh. */
static void
layernorm_grad_gamma_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    double eps = OPI_FLOAT(info, "eps", 1e-5), mu, rstd;
    int64_t rows, h, r, j;

    nn_rows(&info->in[1], &rows, &h);
    memset(out[0], 0, (size_t)h * sizeof(double));
    for (r = 0; r < rows; r++) {
        const double *dy = in[0] + r * h, *x = in[1] + r * h;
        ln_stats(x, h, eps, &mu, &rstd);
        for (j = 0; j < h; j++)
            out[0][j] += dy[j] * (x[j] - mu) * rstd;
    }
}

/* y = x·rstd·gamma, rstd = 1/sqrt(mean(x²) + eps), per row. */
static void
rmsnorm_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    double eps = OPI_FLOAT(info, "eps", 1e-6);
    int64_t rows, h, r, j;

    nn_rows(&info->in[0], &rows, &h);
    for (r = 0; r < rows; r++) {
        const double *x = in[0] + r * h;
        double rstd = rms_rstd(x, h, eps);
        for (j = 0; j < h; j++)
            out[0][r * h + j] = x[j] * rstd * in[1][j];
    }
}

/* With g = dy·gamma: dx = rstd·g − x·rstd³·mean(g·x), per row. */
static void
rmsnorm_grad_x_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    double eps = OPI_FLOAT(info, "eps", 1e-6);
    int64_t rows, h, r, j;

    nn_rows(&info->in[1], &rows, &h);
    for (r = 0; r < rows; r++) {
        const double *dy = in[0] + r * h, *x = in[1] + r * h, *gamma = in[2];
        double rstd = rms_rstd(x, h, eps), mgx = 0.0;
        for (j = 0; j < h; j++)
            mgx += dy[j] * gamma[j] * x[j];
        mgx /= (double)h;
        for (j = 0; j < h; j++)
            out[0][r * h + j] = rstd * dy[j] * gamma[j] - x[j] * rstd * rstd * rstd * mgx;
    }
}

/* dgamma = Σ_rows dy·x·rstd. */
static void
rmsnorm_grad_gamma_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    double eps = OPI_FLOAT(info, "eps", 1e-6);
    int64_t rows, h, r, j;

    nn_rows(&info->in[1], &rows, &h);
    memset(out[0], 0, (size_t)h * sizeof(double));
    for (r = 0; r < rows; r++) {
        const double *dy = in[0] + r * h, *x = in[1] + r * h;
        double rstd = rms_rstd(x, h, eps);
        for (j = 0; j < h; j++)
            out[0][j] += dy[j] * x[j] * rstd;
    }
}

/*
 * layernorm: mean (1), centre (1), square and sum (2), scale by rstd (1),
 * gamma (1), beta (1), plus the per-row rsqrt amortised: ~8 per element.
 */
static double
layernorm_flops(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 8.0);
}

/* rmsnorm: square and sum (2), scale by rstd (1), gamma (1): ~4 per element. */
static double
rmsnorm_flops(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 4.0);
}

/*
 * layernorm_grad_x: statistics again (4), xh (2), g (1), two row sums (4),
 * final combination (3): ~14 per element.
 */
static double
layernorm_grad_x_flops(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 14.0);
}

/* *_grad_gamma: statistics (4 or 2), xh (2), product and accumulate (2): ~8 per x element. */
static double
norm_grad_gamma_flops(const as_opinfo *info)
{
    return 8.0 * (double)as_shape_numel(&info->in[1]);
}

/* rmsnorm_grad_x: rstd (2), g·x sum (3), final combination (4): ~9 per element. */
static double
rmsnorm_grad_x_flops(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 9.0);
}

/*
 * layernorm(x, gamma, beta) and rmsnorm(x, gamma): dx and dgamma are ops of
 * their own; beta's gradient is dy summed over all rows, i.e. the gradient of
 * a [h] vector broadcast to x (as_grad_unbroadcast emits the reduce_sum).
 */
static int
norm_grad_rule(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, int rms,
               as_err *err)
{
    as_op o = *op;
    int32_t in[3];

    din[0] = din[1] = -1;
    if (o.nin > 2)
        din[2] = -1;
    if (dout[0] < 0)
        return AS_OK;
    in[0] = dout[0];
    in[1] = o.in[0];
    in[2] = o.in[1];
    if (as_grad_needs(c, 0))
        AS_CHECK(as_grad_emit(c, rms ? "rmsnorm_grad_x" : "layernorm_grad_x", in, 3, o.attr,
                              o.nattr, &din[0], err));
    if (as_grad_needs(c, 1))
        AS_CHECK(as_grad_emit(c, rms ? "rmsnorm_grad_gamma" : "layernorm_grad_gamma", in, 2,
                              o.attr, o.nattr, &din[1], err));
    if (o.nin > 2 && as_grad_needs(c, 2)) {
        as_shape sb = nn_tshape(c, o.in[2]);
        AS_CHECK(as_grad_unbroadcast(c, dout[0], &sb, &din[2], err));
    }
    return AS_OK;
}

static int
layernorm_grad_rule(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    return norm_grad_rule(c, op, dout, din, 0, err);
}

static int
rmsnorm_grad_rule(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    return norm_grad_rule(c, op, dout, din, 1, err);
}

/* ------------------------------------------------------ embedding, one_hot */

/* Output shape IDS + [LAST] with dtype DT into OUT[0]. */
static int
nn_ids_plus(const as_opinfo *info, const as_shape *ids, int64_t last, as_dtype dt, as_shape *out,
            int *nout, as_err *err)
{
    if (ids->rank + 1 > AS_MAX_RANK)
        return as_graph_i_shape_err(err, info, "result rank exceeds %d", AS_MAX_RANK);
    out[0] = *ids;
    out[0].dtype = dt;
    out[0].dim[ids->rank] = last;
    out[0].rank = ids->rank + 1;
    *nout = 1;
    return AS_OK;
}

/* embedding(table[V, H], ids[...]) -> [..., H]. */
static int
emb_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *t = &info->in[0];
    char s[128];

    AS_CHECK(as_graph_i_need_float(info, 0, err));
    if (t->rank != 2)
        return as_graph_i_shape_err(err, info, "table must be [vocab, hidden], got %s",
                                    as_shape_str(t, s, sizeof s));
    AS_CHECK(as_graph_i_need_int(info, 1, err));
    return nn_ids_plus(info, &info->in[1], t->dim[1], t->dtype, out, nout, err);
}

/* Row index of id value V in a table of N rows, or -1 when out of range. */
static int64_t
nn_id(double v, int64_t n)
{
    return v >= 0.0 && v < (double)n ? (int64_t)v : -1;
}

/* Gather rows; an id outside [0, V) yields a zero row (and no gradient). */
static void
emb_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t v = info->in[0].dim[0], h = info->in[0].dim[1];
    int64_t n = as_shape_numel(&info->in[1]), r, row;

    for (r = 0; r < n; r++) {
        if ((row = nn_id(in[1][r], v)) >= 0)
            memcpy(out[0] + r * h, in[0] + row * h, (size_t)h * sizeof(double));
        else
            memset(out[0] + r * h, 0, (size_t)h * sizeof(double));
    }
}

/* A gather reads the ids and only the rows it copies, not the whole table. */
static double
emb_bytes(const as_opinfo *info)
{
    double rows = (double)as_shape_numel(&info->in[1]) * (double)info->in[0].dim[1];

    return (double)as_shape_bytes(&info->in[1]) +
           2.0 * rows * (double)as_dtype_size(info->in[0].dtype);
}

static void
emb_irange(const as_opinfo *info, int j, int64_t *lo, int64_t *hi)
{
    (void)j;
    *lo = 0;
    *hi = info->in[0].dim[0] - 1;
}

/* The table's gradient is a scatter-add of dy into [V, H]; ids get none. */
static int
emb_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    as_shape st = nn_tshape(c, o.in[0]);
    as_attr at = AS_ATTR_I("vocab", st.dim[0]);
    int32_t in[2];

    din[0] = din[1] = -1;
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    in[0] = dout[0];
    in[1] = o.in[1];
    return as_grad_emit(c, "embedding_grad", in, 2, &at, 1, &din[0], err);
}

/* embedding_grad(dy[..., H], ids[...]) vocab=V -> [V, H]. */
static int
emb_grad_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *dy = &info->in[0], *ids = &info->in[1];
    int64_t vocab = OPI_INT(info, "vocab", 0);
    char s1[128], s2[128];
    int i, bad;

    AS_CHECK(as_graph_i_need_float(info, 0, err));
    AS_CHECK(as_graph_i_need_int(info, 1, err));
    if (vocab < 1)
        return as_graph_i_shape_err(err, info, "vocab must be >= 1, got %lld", (long long)vocab);
    bad = dy->rank != ids->rank + 1;
    for (i = 0; !bad && i < ids->rank; i++)
        bad = dy->dim[i] != ids->dim[i];
    if (bad)
        return as_graph_i_shape_err(err, info, "dy must be the ids shape plus [hidden]: %s vs %s",
                                    as_shape_str(dy, s1, sizeof s1),
                                    as_shape_str(ids, s2, sizeof s2));
    out[0].dtype = dy->dtype;
    out[0].rank = 2;
    out[0].dim[0] = vocab;
    out[0].dim[1] = dy->dim[dy->rank - 1];
    *nout = 1;
    return AS_OK;
}

static void
emb_grad_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t v = OPI_INT(info, "vocab", 1), h = info->in[0].dim[info->in[0].rank - 1];
    int64_t n = as_shape_numel(&info->in[1]), r, j, row;

    memset(out[0], 0, (size_t)(v * h) * sizeof(double));
    for (r = 0; r < n; r++)
        if ((row = nn_id(in[1][r], v)) >= 0)
            for (j = 0; j < h; j++)
                out[0][row * h + j] += in[0][r * h + j];
}

/* One add per element of dy. */
static double
emb_grad_flops(const as_opinfo *info)
{
    return (double)as_shape_numel(&info->in[0]);
}

static void
emb_grad_irange(const as_opinfo *info, int j, int64_t *lo, int64_t *hi)
{
    (void)j;
    *lo = 0;
    *hi = OPI_INT(info, "vocab", 1) - 1;
}

/* one_hot(ids[...]) depth= dtype= -> [..., depth]. */
static int
one_hot_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    int64_t depth = OPI_INT(info, "depth", 0);
    const char *dts = OPI_STR(info, "dtype", "f32");
    as_dtype dt;

    AS_CHECK(as_graph_i_need_int(info, 0, err));
    if (depth < 1)
        return as_graph_i_shape_err(err, info, "depth must be >= 1, got %lld", (long long)depth);
    if (!as_dtype_parse(dts, strlen(dts), &dt))
        return as_graph_i_shape_err(err, info, "unknown dtype '%s'", dts);
    return nn_ids_plus(info, &info->in[0], depth, dt, out, nout, err);
}

/* An id outside [0, depth) gives an all-zero row, as in XLA and TensorFlow. */
static void
one_hot_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t depth = OPI_INT(info, "depth", 1), n = as_shape_numel(&info->in[0]), r, row;

    memset(out[0], 0, (size_t)(n * depth) * sizeof(double));
    for (r = 0; r < n; r++)
        if ((row = nn_id(in[0][r], depth)) >= 0)
            out[0][r * depth + row] = 1.0;
}

static void
one_hot_irange(const as_opinfo *info, int j, int64_t *lo, int64_t *hi)
{
    (void)j;
    *lo = 0;
    *hi = OPI_INT(info, "depth", 1) - 1;
}

/* ------------------------------------------------------------------ losses */

/* Check logits (input L, float, rank >= 1) and labels (input L + 1, integer, logits minus C). */
static int
ce_check(const as_opinfo *info, int l, as_err *err)
{
    const as_shape *lg = &info->in[l], *lb = &info->in[l + 1];
    char s1[128], s2[128];
    int i, bad;

    AS_CHECK(as_graph_i_need_float(info, l, err));
    AS_CHECK(as_graph_i_need_int(info, l + 1, err));
    if (lg->rank < 1)
        return as_graph_i_shape_err(err, info, "logits must have rank >= 1, got %s",
                                    as_shape_str(lg, s1, sizeof s1));
    bad = lb->rank != lg->rank - 1;
    for (i = 0; !bad && i < lb->rank; i++)
        bad = lb->dim[i] != lg->dim[i];
    if (bad)
        return as_graph_i_shape_err(err, info,
                                    "labels must have the shape of logits without its last "
                                    "dim: logits %s, labels %s",
                                    as_shape_str(lg, s1, sizeof s1),
                                    as_shape_str(lb, s2, sizeof s2));
    return AS_OK;
}

static int
ce_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(ce_check(info, 0, err));
    memset(&out[0], 0, sizeof out[0]);
    out[0].dtype = info->in[0].dtype;
    *nout = 1;
    return AS_OK;
}

/* cross_entropy_grad(dl, logits, labels) -> like logits. */
static int
ce_grad_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(nn_need_scalar(info, 0, err));
    AS_CHECK(ce_check(info, 1, err));
    return nn_out_like(info, 1, out, nout);
}

/*
 * Mean over rows of logsumexp(row) − row[label] (stable: shifted by the row
 * maximum).  A label outside [0, C) makes the loss NaN, so bad data shows.
 */
static void
ce_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t rows, c, r, j, lab;
    double total = 0.0;

    nn_rows(&info->in[0], &rows, &c);
    for (r = 0; r < rows; r++) {
        const double *x = in[0] + r * c;
        double mx = x[0], s = 0.0;
        for (j = 1; j < c; j++)
            if (x[j] > mx)
                mx = x[j];
        for (j = 0; j < c; j++)
            s += exp(x[j] - mx);
        lab = nn_id(in[1][r], c);
        total += lab >= 0 ? mx + log(s) - x[lab] : NAN;
    }
    out[0][0] = total / (double)rows;
}

/* dlogits = dl/rows · (softmax(row) − one_hot(label)). */
static void
ce_grad_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t rows, c, r, j, lab, count = OPI_INT(info, "count", 0);
    double scale;

    nn_rows(&info->in[1], &rows, &c);
    /* count = rows of the whole batch: a shard of rows then computes its rows exactly. */
    scale = in[0][0] / (double)(count > 0 ? count : rows);
    for (r = 0; r < rows; r++) {
        const double *x = in[1] + r * c;
        double *dx = out[0] + r * c, mx = x[0], s = 0.0;
        for (j = 1; j < c; j++)
            if (x[j] > mx)
                mx = x[j];
        for (j = 0; j < c; j++)
            s += exp(x[j] - mx);
        lab = nn_id(in[2][r], c);
        for (j = 0; j < c; j++)
            dx[j] = lab >= 0 ? scale * (exp(x[j] - mx) / s - (j == lab ? 1.0 : 0.0)) : NAN;
    }
}

/* Per row of C logits: max, subtract, exp, sum (4·C), log and pick: ~5·C. */
static double
ce_flops(const as_opinfo *info)
{
    return 5.0 * (double)as_shape_numel(&info->in[0]);
}

/* Softmax again (~5·C per row) and subtract-scale (1·C): ~6 per logit. */
static double
ce_grad_flops(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 6.0);
}

static void
ce_irange(const as_opinfo *info, int j, int64_t *lo, int64_t *hi)
{
    const as_shape *lg = &info->in[j - 1]; /* labels follow logits */

    *lo = 0;
    *hi = lg->dim[lg->rank - 1] - 1;
}

static int
ce_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    int32_t in[3];

    din[0] = din[1] = -1;
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    int64_t rows = as_shape_numel(&as_graph_tensor(as_grad_graph(c), o.in[1])->shape);
    as_attr a = AS_ATTR_I("count", rows);

    in[0] = dout[0];
    in[1] = o.in[0];
    in[2] = o.in[1];
    return as_grad_emit(c, "cross_entropy_grad", in, 3, &a, 1, &din[0], err);
}

static int
mse_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(as_graph_i_need_float(info, 0, err));
    AS_CHECK(nn_same_shape(info, 0, 1, "pred and target", err));
    memset(&out[0], 0, sizeof out[0]);
    out[0].dtype = info->in[0].dtype;
    *nout = 1;
    return AS_OK;
}

/* mse_loss_grad(dl, pred, target) -> like pred. */
static int
mse_grad_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(nn_need_scalar(info, 0, err));
    AS_CHECK(as_graph_i_need_float(info, 1, err));
    AS_CHECK(nn_same_shape(info, 1, 2, "pred and target", err));
    return nn_out_like(info, 1, out, nout);
}

static void
mse_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t n = as_shape_numel(&info->in[0]), i;
    double s = 0.0;

    for (i = 0; i < n; i++)
        s += (in[0][i] - in[1][i]) * (in[0][i] - in[1][i]);
    out[0][0] = s / (double)n;
}

/* dpred = dl·2/n·(pred − target). */
static void
mse_grad_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t n = as_shape_numel(&info->in[1]), i, count = OPI_INT(info, "count", 0);
    double scale = 2.0 * in[0][0] / (double)(count > 0 ? count : n);

    for (i = 0; i < n; i++)
        out[0][i] = scale * (in[1][i] - in[2][i]);
}

/* Subtract, square, accumulate: 3 per element (forward and backward alike). */
static double
mse_flops(const as_opinfo *info)
{
    return 3.0 * (double)as_shape_numel(&info->in[info->nin - 2]);
}

/* dtarget = −dpred, which is mse_loss_grad with pred and target swapped. */
static int
mse_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_op o = *op;
    int32_t in[3];

    as_attr a = AS_ATTR_I("count", as_shape_numel(&as_graph_tensor(as_grad_graph(c),
                                                                    o.in[0])->shape));

    din[0] = din[1] = -1;
    if (dout[0] < 0)
        return AS_OK;
    in[0] = dout[0];
    in[1] = o.in[0];
    in[2] = o.in[1];
    if (as_grad_needs(c, 0))
        AS_CHECK(as_grad_emit(c, "mse_loss_grad", in, 3, &a, 1, &din[0], err));
    in[1] = o.in[1];
    in[2] = o.in[0];
    if (as_grad_needs(c, 1))
        AS_CHECK(as_grad_emit(c, "mse_loss_grad", in, 3, &a, 1, &din[1], err));
    return AS_OK;
}

/* ------------------------------------------------------------------- table */

const as_op_def as_ops_nn[] = {
    {"matmul", 2, 2, 0, 0, "transpose_a:i=0 transpose_b:i=0",
     "C = op(A) x op(B) over the last two dims; batch dims broadcast", mm_infer, mm_flops, NULL,
     mm_kernel, mm_grad, NULL},
    {"softmax", 1, 1, 0, 0, "axis:i=-1", "softmax along axis (max-shifted)", sm_infer, flops_5,
     NULL, softmax_kernel, softmax_grad_rule, NULL},
    {"log_softmax", 1, 1, 0, 0, "axis:i=-1", "log of softmax along axis (max-shifted)", sm_infer,
     flops_5, NULL, log_softmax_kernel, log_softmax_grad_rule, NULL},
    {"softmax_grad", 2, 2, AS_OPF_GRAD, 0, "axis:i=-1", "dx = y*(dy - sum(dy*y)) for y = softmax",
     sm_grad_infer, flops_4, NULL, softmax_grad_kernel, NULL, NULL},
    {"log_softmax_grad", 2, 2, AS_OPF_GRAD, 0, "axis:i=-1",
     "dx = dy - exp(y)*sum(dy) for y = log_softmax", sm_grad_infer, flops_4, NULL,
     log_softmax_grad_kernel, NULL, NULL},
    {"layernorm", 3, 3, 0, 0, "eps:f=1e-5", "layer normalisation over the last dim", norm_infer,
     layernorm_flops, NULL, layernorm_kernel, layernorm_grad_rule, NULL},
    {"layernorm_grad_x", 3, 3, AS_OPF_GRAD, 0, "eps:f=1e-5", "layernorm: gradient of x",
     norm_grad_x_infer, layernorm_grad_x_flops, NULL, layernorm_grad_x_kernel, NULL, NULL},
    {"layernorm_grad_gamma", 2, 2, AS_OPF_GRAD, 0, "eps:f=1e-5", "layernorm: gradient of gamma",
     norm_grad_gamma_infer, norm_grad_gamma_flops, NULL, layernorm_grad_gamma_kernel, NULL, NULL},
    {"rmsnorm", 2, 2, 0, 0, "eps:f=1e-6", "x / rms(x) * gamma over the last dim", norm_infer,
     rmsnorm_flops, NULL, rmsnorm_kernel, rmsnorm_grad_rule, NULL},
    {"rmsnorm_grad_x", 3, 3, AS_OPF_GRAD, 0, "eps:f=1e-6", "rmsnorm: gradient of x",
     norm_grad_x_infer, rmsnorm_grad_x_flops, NULL, rmsnorm_grad_x_kernel, NULL, NULL},
    {"rmsnorm_grad_gamma", 2, 2, AS_OPF_GRAD, 0, "eps:f=1e-6", "rmsnorm: gradient of gamma",
     norm_grad_gamma_infer, norm_grad_gamma_flops, NULL, rmsnorm_grad_gamma_kernel, NULL, NULL},
    {"embedding", 2, 2, 0, 0x2u, "", "rows of table[V,H] selected by integer ids", emb_infer,
     NULL, emb_bytes, emb_kernel, emb_grad, emb_irange},
    {"embedding_grad", 2, 2, AS_OPF_GRAD, 0x2u, "vocab:i",
     "scatter-add of dy[...,H] into [vocab,H] at ids", emb_grad_infer, emb_grad_flops, NULL,
     emb_grad_kernel, NULL, emb_grad_irange},
    {"one_hot", 1, 1, AS_OPF_NOGRAD, 0x1u, "depth:i dtype:s=f32", "[..., depth] indicator of ids",
     one_hot_infer, NULL, NULL, one_hot_kernel, NULL, one_hot_irange},
    {"cross_entropy", 2, 2, AS_OPF_LOSS, 0x2u, "",
     "mean over rows of -log softmax(logits)[label]", ce_infer, ce_flops, NULL, ce_kernel,
     ce_grad, ce_irange},
    {"cross_entropy_grad", 3, 3, AS_OPF_GRAD, 0x4u, "count:i=0",
     "dlogits = dl/count * (softmax(logits) - one_hot(labels)); count = rows of the batch "
     "(0: this input's rows)", ce_grad_infer, ce_grad_flops,
     NULL, ce_grad_kernel, NULL, ce_irange},
    {"mse_loss", 2, 2, AS_OPF_LOSS, 0, "", "mean((pred - target)^2)", mse_infer, mse_flops, NULL,
     mse_kernel, mse_grad, NULL},
    {"mse_loss_grad", 3, 3, AS_OPF_GRAD, 0, "count:i=0",
     "dpred = dl * 2/count * (pred - target); count = elements of the batch (0: this input's)",
     mse_grad_infer, mse_flops, NULL, mse_grad_kernel, NULL, NULL},
};
const int as_ops_nn_count = (int)(sizeof as_ops_nn / sizeof as_ops_nn[0]);
