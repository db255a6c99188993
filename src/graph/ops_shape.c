/* ops_shape.c -- op family 'shape': transpose, reshape, broadcast, concat,
 * split, slice (and slice_grad, the gradient of a strided slice), pad,
 * zeros, iota and identity.  Pure data movement: FLOPs are 0 and bytes the
 * registry default.  Every op accepts any dtype and rank up to AS_MAX_RANK.
 *
 * DESIGN: the kernels of transpose, broadcast, slice, pad and slice_grad are
 * one strided copy.  For gathers, output element idx reads input element
 * base + sum_i idx[i]*st[i]; for scatters, input element idx is written to
 * output element base + sum_i idx[i]*st[i].  Transpose, broadcast (stride 0
 * on stretched dims) and slice are gathers; pad and slice_grad scatter into
 * an output pre-filled with the padding value.  Concat and split move
 * contiguous runs of outer x inner blocks.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "autodiff.h"
#include "ops_internal.h"

/* Helpers. */

/* Format an int list as "[a,b,c]" into BUF. */
static const char *
fmt_ints(const int64_t *v, int n, char *buf, size_t size)
{
    size_t k = 0;
    int i;

    buf[0] = '\0';
    k += (size_t)snprintf(buf, size, "[");
    for (i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? "," : "", (long long)v[i]);
    if (k < size)
        snprintf(buf + k, size - k, "]");
    return buf;
}

/* Int-list attribute KEY of the op being inferred or run; 0 entries when absent. */
static int
attr_ints(const as_opinfo *info, const char *key, const int64_t **v)
{
    int n = OPI_INTS(info, key, v);

    if (n < 0) {
        *v = NULL;
        n = 0;
    }
    return n;
}

/* Int-list attribute KEY of a graph op (gradient rules). */
static int
op_ints(const as_op *op, const char *key, const int64_t **v)
{
    int n = as_attr_ints(op->attr, op->nattr, key, v);

    if (n < 0) {
        *v = NULL;
        n = 0;
    }
    return n;
}

/* Shape of tensor ID in the graph being differentiated. */
static as_shape
grad_shape(as_gradctx *c, int32_t id)
{
    return as_graph_tensor(as_grad_graph(c), id)->shape;
}

/* Set DIN[0..n) to -1 (no gradient). */
static void
no_grads(int32_t *din, int n)
{
    int j;

    for (j = 0; j < n; j++)
        din[j] = -1;
}

/* Parse a shape attribute (dims >= 0) of a 0-input op into OUT. */
static int
shape_from_attr(const as_opinfo *info, const char *key, as_shape *out, as_err *err)
{
    const int64_t *v;
    int n = attr_ints(info, key, &v), i;
    char b[256];

    if (n > AS_MAX_RANK)
        return as_graph_i_shape_err(err, info, "%s %s has more than %d dims", key,
                                    fmt_ints(v, n, b, sizeof b), AS_MAX_RANK);
    out->rank = n;
    for (i = 0; i < n; i++) {
        if (v[i] < 0)
            return as_graph_i_shape_err(err, info, "%s %s has a negative dim", key,
                                        fmt_ints(v, n, b, sizeof b));
        out->dim[i] = v[i];
    }
    return AS_OK;
}

/* Parse the dtype attribute "dtype" into *T. */
static int
dtype_from_attr(const as_opinfo *info, const char *dflt, as_dtype *t, as_err *err)
{
    const char *s = OPI_STR(info, "dtype", dflt);

    if (!as_dtype_parse(s, strlen(s), t))
        return as_graph_i_shape_err(err, info, "unknown dtype '%s'", s);
    return AS_OK;
}

/* Strided gather: OUT[k] = IN[base + sum idx[i]*st[i]] over OSHAPE. */
static void
gather_strided(const as_shape *oshape, const double *in, int64_t base, const int64_t *st,
               double *out)
{
    int64_t idx[AS_MAX_RANK] = {0}, n = as_shape_numel(oshape), k, off;
    int i;

    for (k = 0; k < n; k++) {
        off = base;
        for (i = 0; i < oshape->rank; i++)
            off += idx[i] * st[i];
        out[k] = in[off];
        as_graph_i_next(idx, oshape);
    }
}

/* Strided scatter: OUT[base + sum idx[i]*st[i]] = IN[k] over ISHAPE. */
static void
scatter_strided(const as_shape *ishape, const double *in, int64_t base, const int64_t *st,
                double *out)
{
    int64_t idx[AS_MAX_RANK] = {0}, n = as_shape_numel(ishape), k, off;
    int i;

    for (k = 0; k < n; k++) {
        off = base;
        for (i = 0; i < ishape->rank; i++)
            off += idx[i] * st[i];
        out[off] = in[k];
        as_graph_i_next(idx, ishape);
    }
}

/* transpose */

static int
transpose_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[0];
    const int64_t *perm;
    int n = attr_ints(info, "perm", &perm), seen[AS_MAX_RANK] = {0}, i;
    char b[256];

    for (i = 0; i < n && n == x->rank; i++) {
        if (perm[i] < 0 || perm[i] >= x->rank || seen[perm[i]])
            break;
        seen[perm[i]] = 1;
    }
    if (n != x->rank || i < n)
        return as_graph_i_shape_err(err, info, "perm %s is not a permutation of %d dims",
                                    fmt_ints(perm, n, b, sizeof b), x->rank);
    *out = *x;
    for (i = 0; i < n; i++)
        out->dim[i] = x->dim[perm[i]];
    *nout = 1;
    return AS_OK;
}

static void
transpose_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const int64_t *perm;
    int64_t xst[AS_MAX_RANK], st[AS_MAX_RANK];
    int n = attr_ints(info, "perm", &perm), i;

    as_graph_i_strides(&info->in[0], xst);
    for (i = 0; i < n; i++)
        st[i] = xst[perm[i]];
    gather_strided(&info->out[0], in[0], 0, st, out[0]);
}

/* d transpose(x, perm) = transpose(dy, inverse(perm)). */
static int
transpose_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    const int64_t *perm;
    int64_t inv[AS_MAX_RANK];
    int n = op_ints(op, "perm", &perm), i;
    as_attr a;

    no_grads(din, 1);
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    for (i = 0; i < n; i++)
        inv[perm[i]] = i;
    a = AS_ATTR_V("perm", n, inv);
    return as_grad_emit(c, "transpose", &dout[0], 1, &a, 1, &din[0], err);
}

/* reshape */

static int
reshape_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[0];
    const int64_t *v;
    int n = attr_ints(info, "shape", &v), infer_at = -1, i;
    int64_t known = 1, numel = as_shape_numel(x);
    char b[256], sx[256];

    if (n > AS_MAX_RANK)
        return as_graph_i_shape_err(err, info, "shape %s has more than %d dims",
                                    fmt_ints(v, n, b, sizeof b), AS_MAX_RANK);
    for (i = 0; i < n; i++) {
        if (v[i] == -1 && infer_at < 0) {
            infer_at = i;
            continue;
        }
        if (v[i] < 0)
            return as_graph_i_shape_err(err, info,
                                        "shape %s: dims must be >= 0, with at most one -1",
                                        fmt_ints(v, n, b, sizeof b));
        if (!as_mul_ok(known, v[i], &known))
            return as_graph_i_shape_err(err, info, "shape %s has too many elements",
                                        fmt_ints(v, n, b, sizeof b));
    }
    if ((infer_at >= 0 && (known == 0 || numel % known != 0)) ||
        (infer_at < 0 && known != numel))
        return as_graph_i_shape_err(err, info, "cannot reshape %s (%lld elements) to %s",
                                    as_shape_str(x, sx, sizeof sx), (long long)numel,
                                    fmt_ints(v, n, b, sizeof b));
    out->dtype = x->dtype;
    out->rank = n;
    for (i = 0; i < n; i++)
        out->dim[i] = i == infer_at ? numel / known : v[i];
    *nout = 1;
    return AS_OK;
}

/* reshape and identity: the row-major data is unchanged. */
static void
copy_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    memcpy(out[0], in[0], (size_t)as_shape_numel(&info->in[0]) * sizeof(double));
}

/* d reshape(x) = reshape(dy, shape(x)). */
static int
reshape_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_shape xs;
    as_attr a;

    no_grads(din, 1);
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    xs = grad_shape(c, op->in[0]);
    a = AS_ATTR_V("shape", xs.rank, xs.dim);
    return as_grad_emit(c, "reshape", &dout[0], 1, &a, 1, &din[0], err);
}

/* broadcast */

/*
 * Map x's dims to output dims for broadcast: MAP[i] is the output dim of x's
 * dim i (explicit DIMS, HLO semantics, or numpy right-alignment when DIMS is
 * empty).  Checks every x dim is 1 or equal to its output dim.
 */
static int
broadcast_map(const as_opinfo *info, const as_shape *x, const int64_t *shape, int ns, int *map,
              as_err *err)
{
    const int64_t *dims;
    int nd = attr_ints(info, "dims", &dims), i;
    char b1[256], b2[256], sx[256];

    as_shape_str(x, sx, sizeof sx);
    if (ns > AS_MAX_RANK || ns < x->rank)
        return as_graph_i_shape_err(err, info, "cannot broadcast %s to %s", sx,
                                    fmt_ints(shape, ns, b1, sizeof b1));
    if (nd == 0 && x->rank > 0) {
        for (i = 0; i < x->rank; i++)
            map[i] = ns - x->rank + i;
    } else {
        if (nd != x->rank)
            return as_graph_i_shape_err(err, info, "dims %s must have one entry per dim of %s",
                                        fmt_ints(dims, nd, b2, sizeof b2), sx);
        for (i = 0; i < nd; i++) {
            if (dims[i] < 0 || dims[i] >= ns || (i > 0 && dims[i] <= dims[i - 1]))
                return as_graph_i_shape_err(err, info,
                                            "dims %s must be increasing output dims below %d",
                                            fmt_ints(dims, nd, b2, sizeof b2), ns);
            map[i] = (int)dims[i];
        }
    }
    for (i = 0; i < ns; i++)
        if (shape[i] < 0)
            return as_graph_i_shape_err(err, info, "shape %s has a negative dim",
                                        fmt_ints(shape, ns, b1, sizeof b1));
    for (i = 0; i < x->rank; i++)
        if (x->dim[i] != 1 && x->dim[i] != shape[map[i]])
            return as_graph_i_shape_err(err, info, "cannot broadcast %s to %s: dim %d is %lld, "
                                        "output dim %d is %lld", sx,
                                        fmt_ints(shape, ns, b1, sizeof b1), i,
                                        (long long)x->dim[i], map[i], (long long)shape[map[i]]);
    return AS_OK;
}

static int
broadcast_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const int64_t *shape;
    int ns = attr_ints(info, "shape", &shape), map[AS_MAX_RANK], i;

    AS_CHECK(broadcast_map(info, &info->in[0], shape, ns, map, err));
    out->dtype = info->in[0].dtype;
    out->rank = ns;
    for (i = 0; i < ns; i++)
        out->dim[i] = shape[i];
    *nout = 1;
    return AS_OK;
}

static void
broadcast_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *x = &info->in[0], *o = &info->out[0];
    int64_t xst[AS_MAX_RANK], st[AS_MAX_RANK] = {0};
    int map[AS_MAX_RANK], i;
    as_err err;

    if (broadcast_map(info, x, o->dim, o->rank, map, &err) != AS_OK)
        return; /* unreachable: the shapes were inferred */
    as_graph_i_strides(x, xst);
    for (i = 0; i < x->rank; i++)
        st[map[i]] = x->dim[i] == 1 ? 0 : xst[i];
    gather_strided(o, in[0], 0, st, out[0]);
}

/*
 * d broadcast(x) = reduce_sum of dy over every output dim that x does not
 * map to or stretches from 1, then reshape to x's shape (re-inserting 1s).
 */
static int
broadcast_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_shape xs, ys;
    as_opinfo info;
    int64_t red[AS_MAX_RANK];
    int map[AS_MAX_RANK], keep[AS_MAX_RANK] = {0}, nred = 0, i;
    int32_t g;
    as_attr a[2];

    no_grads(din, 1);
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    xs = grad_shape(c, op->in[0]);
    ys = grad_shape(c, dout[0]);
    memset(&info, 0, sizeof info);
    info.def = op->def;
    info.nin = 1;
    info.in = &xs;
    info.nattr = op->nattr;
    info.attr = op->attr;
    AS_CHECK(broadcast_map(&info, &xs, ys.dim, ys.rank, map, err));
    for (i = 0; i < xs.rank; i++)
        if (xs.dim[i] == ys.dim[map[i]])
            keep[map[i]] = 1;
    for (i = 0; i < ys.rank; i++)
        if (!keep[i])
            red[nred++] = i;
    g = dout[0];
    if (nred > 0) {
        a[0] = AS_ATTR_V("dims", nred, red);
        a[1] = AS_ATTR_I("keepdims", 0);
        AS_CHECK(as_grad_emit(c, "reduce_sum", &g, 1, a, 2, &g, err));
    }
    if (nred > 0 && ys.rank - nred == xs.rank) {
        din[0] = g; /* the reduction already has x's shape */
        return AS_OK;
    }
    a[0] = AS_ATTR_V("shape", xs.rank, xs.dim);
    return as_grad_emit(c, "reshape", &g, 1, a, 1, &din[0], err);
}

/* concat */

static int
concat_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x0 = &info->in[0];
    int axis, j, i;
    char s0[256], sj[256];

    if (!as_graph_i_axis(OPI_INT(info, "axis", 0), x0->rank, &axis))
        return as_graph_i_shape_err(err, info, "axis %lld out of range for %s",
                                    (long long)OPI_INT(info, "axis", 0),
                                    as_shape_str(x0, s0, sizeof s0));
    *out = *x0;
    for (j = 1; j < info->nin; j++) {
        const as_shape *xj = &info->in[j];
        int bad = xj->rank != x0->rank || xj->dtype != x0->dtype;
        for (i = 0; i < x0->rank && !bad; i++)
            bad = i != axis && xj->dim[i] != x0->dim[i];
        if (bad)
            return as_graph_i_shape_err(err, info, "input %d %s does not match input 0 %s "
                                        "outside axis %d", j, as_shape_str(xj, sj, sizeof sj),
                                        as_shape_str(x0, s0, sizeof s0), axis);
        if (!as_add_ok(out->dim[axis], xj->dim[axis], &out->dim[axis]))
            return as_graph_i_shape_err(err, info, "concatenated dim overflows");
    }
    *nout = 1;
    return AS_OK;
}

/* Outer and inner block sizes around AXIS of S. */
static void
split_blocks(const as_shape *s, int axis, int64_t *outer, int64_t *inner)
{
    int i;

    *outer = 1;
    *inner = 1;
    for (i = 0; i < axis; i++)
        *outer *= s->dim[i];
    for (i = axis + 1; i < s->rank; i++)
        *inner *= s->dim[i];
}

static void
concat_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *o = &info->out[0];
    int64_t outer, inner, pos = 0, r;
    int axis = 0, j;

    as_graph_i_axis(OPI_INT(info, "axis", 0), o->rank, &axis);
    split_blocks(o, axis, &outer, &inner);
    for (j = 0; j < info->nin; j++) {
        int64_t run = info->in[j].dim[axis] * inner;
        for (r = 0; r < outer; r++)
            memcpy(out[0] + r * o->dim[axis] * inner + pos, in[j] + r * run,
                   (size_t)run * sizeof(double));
        pos += run;
    }
}

/* d concat(x0..xn) = slice of dy per input along the axis. */
static int
concat_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    const int32_t *ins = op->in;
    int nin = op->nin, axis = 0, j, i;
    as_shape ys = grad_shape(c, op->out[0]), xs;
    int64_t begin[AS_MAX_RANK] = {0}, end[AS_MAX_RANK], pos = 0;
    as_attr a[2];

    no_grads(din, nin);
    if (dout[0] < 0)
        return AS_OK;
    as_graph_i_axis(as_attr_int(op->attr, op->nattr, "axis", 0), ys.rank, &axis);
    for (j = 0; j < nin; j++) {
        xs = grad_shape(c, ins[j]);
        if (as_grad_needs(c, j)) {
            for (i = 0; i < ys.rank; i++) {
                begin[i] = i == axis ? pos : 0;
                end[i] = i == axis ? pos + xs.dim[axis] : ys.dim[i];
            }
            a[0] = AS_ATTR_V("begin", ys.rank, begin);
            a[1] = AS_ATTR_V("end", ys.rank, end);
            AS_CHECK(as_grad_emit(c, "slice", &dout[0], 1, a, 2, &din[j], err));
        }
        pos += xs.dim[axis];
    }
    return AS_OK;
}

/* split */

/* Sizes of split's outputs along its axis into SIZES; returns the count or -1 (error set). */
static int
split_sizes(const as_opinfo *info, const as_shape *x, int *axis, int64_t *sizes, as_err *err)
{
    const int64_t *sz;
    int ns = attr_ints(info, "sizes", &sz), i;
    int64_t parts = OPI_INT(info, "parts", 0), sum = 0;
    char sx[256], b[512];

    as_shape_str(x, sx, sizeof sx);
    if (!as_graph_i_axis(OPI_INT(info, "axis", 0), x->rank, axis)) {
        as_graph_i_shape_err(err, info, "axis %lld out of range for %s",
                             (long long)OPI_INT(info, "axis", 0), sx);
        return -1;
    }
    if ((ns > 0) == (parts > 0) || parts < 0) {
        as_graph_i_shape_err(err, info, "give exactly one of sizes= (non-empty) and parts= (> 0)");
        return -1;
    }
    if (ns > AS_MAX_OUTS || parts > AS_MAX_OUTS) {
        as_graph_i_shape_err(err, info, "at most %d outputs", AS_MAX_OUTS);
        return -1;
    }
    if (parts > 0) {
        if (x->dim[*axis] % parts != 0) {
            as_graph_i_shape_err(err, info, "%lld parts do not divide dim %d (%lld) of %s",
                                 (long long)parts, *axis, (long long)x->dim[*axis], sx);
            return -1;
        }
        for (i = 0; i < parts; i++)
            sizes[i] = x->dim[*axis] / parts;
        return (int)parts;
    }
    for (i = 0; i < ns; i++) {
        if (sz[i] < 1 || !as_add_ok(sum, sz[i], &sum)) {
            as_graph_i_shape_err(err, info, "sizes %s must be >= 1", fmt_ints(sz, ns, b,
                                                                              sizeof b));
            return -1;
        }
        sizes[i] = sz[i];
    }
    if (sum != x->dim[*axis]) {
        as_graph_i_shape_err(err, info, "sizes %s sum to %lld but dim %d of %s is %lld",
                             fmt_ints(sz, ns, b, sizeof b), (long long)sum, *axis, sx,
                             (long long)x->dim[*axis]);
        return -1;
    }
    return ns;
}

static int
split_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    int64_t sizes[AS_MAX_OUTS];
    int axis, n = split_sizes(info, &info->in[0], &axis, sizes, err), k;

    if (n < 0)
        return err->code;
    for (k = 0; k < n; k++) {
        out[k] = info->in[0];
        out[k].dim[axis] = sizes[k];
    }
    *nout = n;
    return AS_OK;
}

static void
split_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *x = &info->in[0];
    int64_t outer, inner, pos = 0, r;
    int axis = 0, k;

    as_graph_i_axis(OPI_INT(info, "axis", 0), x->rank, &axis);
    split_blocks(x, axis, &outer, &inner);
    for (k = 0; k < info->nout; k++) {
        int64_t run = info->out[k].dim[axis] * inner;
        for (r = 0; r < outer; r++)
            memcpy(out[k] + r * run, in[0] + r * x->dim[axis] * inner + pos,
                   (size_t)run * sizeof(double));
        pos += run;
    }
}

/* d split(x) = concat of the output gradients, zeros where an output has none. */
static int
split_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    const int32_t *outs = op->out;
    int nout = op->nout, axis = 0, k;
    as_shape xs = grad_shape(c, op->in[0]), os;
    int32_t parts[AS_MAX_OUTS];
    as_attr a[2];

    no_grads(din, 1);
    if (!as_grad_needs(c, 0))
        return AS_OK;
    as_graph_i_axis(as_attr_int(op->attr, op->nattr, "axis", 0), xs.rank, &axis);
    for (k = 0; k < nout; k++) {
        parts[k] = dout[k];
        if (parts[k] >= 0)
            continue;
        os = grad_shape(c, outs[k]);
        a[0] = AS_ATTR_V("shape", os.rank, os.dim);
        a[1] = AS_ATTR_S("dtype", as_dtype_name(os.dtype));
        AS_CHECK(as_grad_emit(c, "zeros", NULL, 0, a, 2, &parts[k], err));
    }
    a[0] = AS_ATTR_I("axis", axis);
    return as_grad_emit(c, "concat", parts, nout, a, 1, &din[0], err);
}

/* slice and slice_grad */

/*
 * Check begin/end/strides against X (the sliced tensor) and compute the
 * sliced shape into *OUT: out.dim[i] = ceil((end - begin) / stride).
 */
static int
slice_shape(const as_opinfo *info, const as_shape *x, as_shape *out, as_err *err)
{
    const int64_t *b, *e, *s;
    int nb = attr_ints(info, "begin", &b), ne = attr_ints(info, "end", &e);
    int ns = attr_ints(info, "strides", &s), i;
    char sx[256], b1[256], b2[256], b3[256];

    as_shape_str(x, sx, sizeof sx);
    if (nb != x->rank || ne != x->rank || (ns != 0 && ns != x->rank))
        return as_graph_i_shape_err(err, info, "begin %s, end %s and strides %s need %d "
                                    "entries for %s", fmt_ints(b, nb, b1, sizeof b1),
                                    fmt_ints(e, ne, b2, sizeof b2), fmt_ints(s, ns, b3, sizeof b3),
                                    x->rank, sx);
    *out = *x;
    for (i = 0; i < x->rank; i++) {
        int64_t st = ns ? s[i] : 1;
        if (b[i] < 0 || b[i] > e[i] || e[i] > x->dim[i] || st < 1)
            return as_graph_i_shape_err(err, info, "dim %d of %s: need 0 <= begin (%lld) <= "
                                        "end (%lld) <= %lld and stride (%lld) >= 1", i, sx,
                                        (long long)b[i], (long long)e[i], (long long)x->dim[i],
                                        (long long)st);
        /* ceil((end - begin) / stride) without end - begin + stride - 1, which overflows
           for a stride near INT64_MAX (a fuzzed HLO slice) */
        out->dim[i] = e[i] == b[i] ? 0 : 1 + (e[i] - b[i] - 1) / st;
    }
    return AS_OK;
}

static int
slice_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(slice_shape(info, &info->in[0], out, err));
    *nout = 1;
    return AS_OK;
}

/* Base offset and strides of the sliced elements inside the full tensor FULL. */
static int64_t
slice_index(const as_opinfo *info, const as_shape *full, int64_t *st)
{
    const int64_t *b, *s;
    int64_t fst[AS_MAX_RANK], base = 0;
    int ns, i;

    attr_ints(info, "begin", &b);
    ns = attr_ints(info, "strides", &s);
    as_graph_i_strides(full, fst);
    for (i = 0; i < full->rank; i++) {
        /* a stride past the dim takes one element: the dim's size does the same without
           overflowing (slice_shape checked begin and end) */
        int64_t si = ns ? s[i] : 1;
        if (si > full->dim[i])
            si = full->dim[i] > 0 ? full->dim[i] : 1;
        base += b[i] * fst[i];
        st[i] = si * fst[i];
    }
    return base;
}

static void
slice_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t st[AS_MAX_RANK], base = slice_index(info, &info->in[0], st);

    gather_strided(&info->out[0], in[0], base, st, out[0]);
}

/* Does the slice op have a stride other than 1? */
static int
op_strided(const as_op *op)
{
    const int64_t *s;
    int n = op_ints(op, "strides", &s), i;

    for (i = 0; i < n; i++)
        if (s[i] != 1)
            return 1;
    return 0;
}

/* d slice(x) = pad(dy) with zeros, or slice_grad(dy) for a strided slice. */
static int
slice_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_shape xs;
    const int64_t *b, *e, *s;
    int nb = op_ints(op, "begin", &b), ne = op_ints(op, "end", &e), ns = op_ints(op, "strides", &s);
    int64_t hi[AS_MAX_RANK];
    as_attr a[4];
    int i;

    no_grads(din, 1);
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    xs = grad_shape(c, op->in[0]);
    if (op_strided(op)) {
        a[0] = AS_ATTR_V("input_shape", xs.rank, xs.dim);
        a[1] = AS_ATTR_V("begin", nb, b);
        a[2] = AS_ATTR_V("end", ne, e);
        a[3] = AS_ATTR_V("strides", ns, s);
        return as_grad_emit(c, "slice_grad", &dout[0], 1, a, 4, &din[0], err);
    }
    for (i = 0; i < xs.rank; i++)
        hi[i] = xs.dim[i] - e[i];
    a[0] = AS_ATTR_V("lo", nb, b);
    a[1] = AS_ATTR_V("hi", xs.rank, hi);
    return as_grad_emit(c, "pad", &dout[0], 1, a, 2, &din[0], err);
}

static int
slice_grad_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    as_shape full, sl;
    char s1[256], s2[256];

    AS_CHECK(shape_from_attr(info, "input_shape", &full, err));
    full.dtype = info->in[0].dtype;
    AS_CHECK(slice_shape(info, &full, &sl, err));
    if (!as_shape_equal(&sl, &info->in[0]))
        return as_graph_i_shape_err(err, info, "dy is %s but the slice of %s is %s",
                                    as_shape_str(&info->in[0], s1, sizeof s1),
                                    as_shape_str(&full, s2, sizeof s2),
                                    as_shape_str(&sl, s1, sizeof s1));
    *out = full;
    *nout = 1;
    return AS_OK;
}

static void
slice_grad_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t st[AS_MAX_RANK], base = slice_index(info, &info->out[0], st);

    memset(out[0], 0, (size_t)as_shape_numel(&info->out[0]) * sizeof(double));
    scatter_strided(&info->in[0], in[0], base, st, out[0]);
}

/* slice_grad is linear in dy: its gradient is the same strided slice. */
static int
slice_grad_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    const int64_t *b, *e, *s;
    int nb = op_ints(op, "begin", &b), ne = op_ints(op, "end", &e), ns = op_ints(op, "strides", &s);
    as_attr a[3];

    no_grads(din, 1);
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    a[0] = AS_ATTR_V("begin", nb, b);
    a[1] = AS_ATTR_V("end", ne, e);
    a[2] = AS_ATTR_V("strides", ns, s);
    return as_grad_emit(c, "slice", &dout[0], 1, a, 3, &din[0], err);
}

/* pad */

static int
pad_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[0];
    const int64_t *lo, *hi;
    int nl = attr_ints(info, "lo", &lo), nh = attr_ints(info, "hi", &hi), i;
    char sx[256], b1[256], b2[256];

    as_shape_str(x, sx, sizeof sx);
    if (nl != x->rank || nh != x->rank)
        return as_graph_i_shape_err(err, info, "lo %s and hi %s need %d entries for %s",
                                    fmt_ints(lo, nl, b1, sizeof b1),
                                    fmt_ints(hi, nh, b2, sizeof b2), x->rank, sx);
    *out = *x;
    for (i = 0; i < x->rank; i++) {
        if (lo[i] < 0 || hi[i] < 0)
            return as_graph_i_shape_err(err, info, "lo %s and hi %s must be >= 0",
                                        fmt_ints(lo, nl, b1, sizeof b1),
                                        fmt_ints(hi, nh, b2, sizeof b2));
        if (!as_add_ok(out->dim[i], lo[i], &out->dim[i]) ||
            !as_add_ok(out->dim[i], hi[i], &out->dim[i]))
            return as_graph_i_shape_err(err, info, "padded dim %d overflows", i);
    }
    *nout = 1;
    return AS_OK;
}

static void
pad_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *o = &info->out[0];
    const int64_t *lo;
    int64_t ost[AS_MAX_RANK], base = 0, k, n = as_shape_numel(o);
    double value = OPI_FLOAT(info, "value", 0.0);
    int i;

    attr_ints(info, "lo", &lo);
    as_graph_i_strides(o, ost);
    for (i = 0; i < o->rank; i++)
        base += lo[i] * ost[i];
    for (k = 0; k < n; k++)
        out[0][k] = value;
    scatter_strided(&info->in[0], in[0], base, ost, out[0]);
}

/* d pad(x) = slice(dy, lo, lo + dims(x)). */
static int
pad_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    as_shape xs;
    const int64_t *lo;
    int nl = op_ints(op, "lo", &lo), i;
    int64_t end[AS_MAX_RANK];
    as_attr a[2];

    no_grads(din, 1);
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    xs = grad_shape(c, op->in[0]);
    for (i = 0; i < xs.rank; i++)
        end[i] = lo[i] + xs.dim[i];
    a[0] = AS_ATTR_V("begin", nl, lo);
    a[1] = AS_ATTR_V("end", xs.rank, end);
    return as_grad_emit(c, "slice", &dout[0], 1, a, 2, &din[0], err);
}

/* zeros, iota, identity */

static int
zeros_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(dtype_from_attr(info, "f32", &out->dtype, err));
    AS_CHECK(shape_from_attr(info, "shape", out, err));
    *nout = 1;
    return AS_OK;
}

static void
zeros_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    (void)in;
    memset(out[0], 0, (size_t)as_shape_numel(&info->out[0]) * sizeof(double));
}

static int
iota_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    int dim;
    char s[256];

    AS_CHECK(dtype_from_attr(info, "i32", &out->dtype, err));
    AS_CHECK(shape_from_attr(info, "shape", out, err));
    if (!as_graph_i_axis(OPI_INT(info, "dim", 0), out->rank, &dim))
        return as_graph_i_shape_err(err, info, "dim %lld out of range for %s",
                                    (long long)OPI_INT(info, "dim", 0),
                                    as_shape_str(out, s, sizeof s));
    *nout = 1;
    return AS_OK;
}

static void
iota_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *o = &info->out[0];
    int64_t idx[AS_MAX_RANK] = {0}, n = as_shape_numel(o), k;
    int dim = 0;

    (void)in;
    as_graph_i_axis(OPI_INT(info, "dim", 0), o->rank, &dim);
    for (k = 0; k < n; k++) {
        out[0][k] = (double)idx[dim];
        as_graph_i_next(idx, o);
    }
}

static int
identity_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    (void)err;
    *out = info->in[0];
    *nout = 1;
    return AS_OK;
}

/* d identity(x) = identity(dy): a fresh tensor, so gradient names stay distinct. */
static int
identity_grad(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din, as_err *err)
{
    (void)op;
    no_grads(din, 1);
    if (dout[0] < 0 || !as_grad_needs(c, 0))
        return AS_OK;
    return as_grad_emit(c, "identity", &dout[0], 1, NULL, 0, &din[0], err);
}

/* The table (sorted by registry.c; kept alphabetical here for reading). */
const as_op_def as_ops_shape[] = {
    {"broadcast", 1, 1, AS_OPF_FOLLOW, 0, "shape:I dims:I=[]",
     "x broadcast to shape (dims: HLO mapping of x's dims; empty: numpy alignment)",
     broadcast_infer, NULL, NULL, broadcast_kernel, broadcast_grad, NULL},
    {"concat", 1, 1, AS_OPF_VARIADIC, 0, "axis:i", "concatenation of the inputs along axis",
     concat_infer, NULL, NULL, concat_kernel, concat_grad, NULL},
    {"identity", 1, 1, AS_OPF_FOLLOW, 0, "", "copy of x", identity_infer, NULL, NULL,
     copy_kernel, identity_grad, NULL},
    {"iota", 0, 0, AS_OPF_NOGRAD, 0, "shape:I dim:i=0 dtype:s=i32", "index along dim",
     iota_infer, NULL, NULL, iota_kernel, NULL, NULL},
    {"pad", 1, 1, 0, 0, "lo:I hi:I value:f=0", "x padded with value (lo/hi >= 0 per dim)",
     pad_infer, NULL, NULL, pad_kernel, pad_grad, NULL},
    {"reshape", 1, 1, AS_OPF_FOLLOW | AS_OPF_RESHAPE, 0, "shape:I",
     "same elements, new shape (one entry may be -1)", reshape_infer, NULL, NULL, copy_kernel,
     reshape_grad, NULL},
    {"slice", 1, 1, 0, 0, "begin:I end:I strides:I=[]", "x[begin:end:strides] per dim",
     slice_infer, NULL, NULL, slice_kernel, slice_grad, NULL},
    {"slice_grad", 1, 1, AS_OPF_GRAD, 0, "input_shape:I begin:I end:I strides:I=[]",
     "gradient of a strided slice: dy scattered into zeros of input_shape", slice_grad_infer,
     NULL, NULL, slice_grad_kernel, slice_grad_grad, NULL},
    {"split", 1, 1, 0, 0, "axis:i sizes:I=[] parts:i=0",
     "several outputs: equal parts or explicit sizes along axis", split_infer, NULL, NULL,
     split_kernel, split_grad, NULL},
    {"transpose", 1, 1, AS_OPF_FOLLOW, 0, "perm:I", "x permuted: out.dim[i] = x.dim[perm[i]]",
     transpose_infer, NULL, NULL, transpose_kernel, transpose_grad, NULL},
    {"zeros", 0, 0, AS_OPF_NOGRAD, 0, "shape:I dtype:s=f32", "a tensor of zeros", zeros_infer,
     NULL, NULL, zeros_kernel, NULL, NULL},
};
const int as_ops_shape_count = (int)(sizeof as_ops_shape / sizeof as_ops_shape[0]);
