/* reader_onnx_ops.c -- ONNX op types onto the op registry, and constant
 * folding (docs/onnx.md has the table).
 *
 * ox_fold computes nodes whose inputs are all known constants (and Shape of
 * any tensor, whose shape is static): the Shape -> Gather -> Unsqueeze ->
 * Concat -> Reshape chains PyTorch writes become the constant shape the
 * Reshape reads.  ox_emit maps one node onto one or more registry ops; the
 * last op of a node takes the node's output name.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reader_onnx_internal.h"

#define OX_FOLD_MAX ((int64_t)1 << 16) /* largest constant a fold may produce */
#define MAXL 64                         /* longest int list attribute read */
#define OX_DIM_MAX ((int64_t)1 << 32)   /* largest kernel, stride, dilation, pad or repeat */

static int
is(const Onnx__NodeProto *n, const char *t)
{
    return strcmp(n->op_type, t) == 0;
}

static const char *
oname(ox *o, const Onnx__NodeProto *n, int k)
{
    return ox_name(o, (size_t)k < n->n_output ? n->output[k] : "v");
}

/* Is output K of node N wanted (named and read or a graph output)? */
static int
out_used(ox *o, const Onnx__NodeProto *n, int k)
{
    int vi;

    if ((size_t)k >= n->n_output || n->output[k][0] == '\0')
        return 0;
    vi = ox_find(o, n->output[k]);
    return vi >= 0 && o->vals.v[vi].nuse > 0;
}

/* The final op of node N: named after output 0 and bound to it. */
static int
emit1(ox *o, const Onnx__NodeProto *n, const char *optype, const int32_t *in, int nin,
      const as_attr *attr, int nattr)
{
    int32_t outs[AS_MAX_OUTS];

    AS_CHECK(ox_op(o, n, optype, oname(o, n, 0), in, nin, attr, nattr, outs, NULL));
    return ox_bind(o, n, 0, outs[0]);
}

/* An intermediate op of node N (fresh name). */
static int
mid(ox *o, const Onnx__NodeProto *n, const char *optype, const int32_t *in, int nin,
    const as_attr *attr, int nattr, int32_t *out)
{
    int32_t outs[AS_MAX_OUTS];

    AS_CHECK(ox_op(o, n, optype, NULL, in, nin, attr, nattr, outs, NULL));
    *out = outs[0];
    return AS_OK;
}

static int
reshape_to(ox *o, const Onnx__NodeProto *n, int32_t x, int rank, const int64_t *dims, int final,
           int32_t *out)
{
    as_attr at[1] = {AS_ATTR_V("shape", rank, dims)};
    const as_shape *s = ox_shape(o, x);

    if (s->rank == rank && (rank == 0 || memcmp(s->dim, dims, sizeof *dims * (size_t)rank) == 0)) {
        *out = x;
        return final ? ox_bind(o, n, 0, x) : AS_OK;
    }
    if (final) {
        /* the op's own result: the node's output may be unnamed (nothing to look up) */
        int32_t outs[AS_MAX_OUTS];

        AS_CHECK(ox_op(o, n, "reshape", oname(o, n, 0), &x, 1, at, 1, outs, NULL));
        *out = outs[0];
        return ox_bind(o, n, 0, outs[0]);
    }
    return mid(o, n, "reshape", &x, 1, at, 1, out);
}

static int
norm_axis(ox *o, const Onnx__NodeProto *n, int64_t a, int rank, int *out)
{
    if (a < -rank || a >= rank)
        return ox_nerr(o, n, "axis %lld out of range for rank %d", (long long)a, rank);
    *out = (int)(a < 0 ? a + rank : a);
    return AS_OK;
}

/* An integer list from constant input J (or attribute ATTR for older opsets); count or -1 if absent. */
static int
ints_of(ox *o, const Onnx__NodeProto *n, int j, const char *attr, int64_t *v, int max, int *cnt)
{
    const ox_const *c;
    int64_t k;

    *cnt = -1;
    if (ox_has_in(n, j)) {
        c = ox_cin(o, n, j);
        if (c == NULL || c->i == NULL)
            return ox_nerr(o, n, "input %d ('%.80s') must be an integer constant", j + 1,
                           n->input[j]);
        if (c->n > max)
            return ox_nerr(o, n, "input %d has more than %d values", j + 1, max);
        for (k = 0; k < c->n; k++)
            v[k] = c->i[k];
        *cnt = (int)c->n;
        return AS_OK;
    }
    if (attr != NULL) {
        int r = ox_attr_ints(n, attr, v, max);
        if (r == -2)
            return ox_nerr(o, n, "attribute '%s' has more than %d values", attr, max);
        *cnt = r;
    }
    return AS_OK;
}

/* A scalar float from constant input J; 0 if not constant. */
static int
scalar_of(ox *o, const Onnx__NodeProto *n, int j, double *v)
{
    const ox_const *c = ox_cin(o, n, j);

    if (c == NULL || c->n != 1)
        return 0;
    *v = c->f != NULL ? c->f[0] : (double)c->i[0];
    return 1;
}

/* ------------------------------------------------------------ shape helpers */

/* Numpy broadcast of A and B into OUT; 0 if they do not broadcast. */
static int
bcast(const as_shape *a, const as_shape *b, as_shape *out)
{
    int r = a->rank > b->rank ? a->rank : b->rank, i;

    out->dtype = a->dtype;
    out->rank = r;
    for (i = 0; i < r; i++) {
        int ia = a->rank - r + i, ib = b->rank - r + i;
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return 0;
        out->dim[i] = da == 1 ? db : da;
    }
    return 1;
}

/* Target of Reshape(x, shape) with ONNX's 0 (copy) and -1 (infer). */
static int
reshape_dims(ox *o, const Onnx__NodeProto *n, const as_shape *x, const int64_t *sh, int r,
             int allowzero, as_shape *out)
{
    int64_t known = 1, total = as_shape_numel(x);
    int i, neg = -1;

    if (r > AS_MAX_RANK)
        return ox_nerr(o, n, "target rank %d is more than %d", r, AS_MAX_RANK);
    *out = *x;
    out->rank = r;
    for (i = 0; i < r; i++) {
        int64_t d = sh[i];
        if (d == 0 && !allowzero) {
            if (i >= x->rank)
                return ox_nerr(o, n, "shape[%d] = 0 copies a dim the input does not have", i);
            d = x->dim[i];
        }
        if (d == -1) {
            if (neg >= 0)
                return ox_nerr(o, n, "more than one -1 in the target shape");
            neg = i;
            d = 1;
        } else if (d < 0)
            return ox_nerr(o, n, "negative dim %lld in the target shape", (long long)d);
        out->dim[i] = d;
        if (!as_mul_ok(known, d, &known))
            return ox_nerr(o, n, "target shape overflows");
    }
    if (neg >= 0) {
        if (known == 0 || total % known != 0)
            return ox_nerr(o, n, "cannot infer the -1 dim: %lld elements into %lld",
                           (long long)total, (long long)known);
        out->dim[neg] = total / known;
    } else if (known != total)
        return ox_nerr(o, n, "target shape has %lld elements, the input %lld", (long long)known,
                       (long long)total);
    return AS_OK;
}

/* Output shape of Squeeze / Unsqueeze / Flatten / Reshape of input X (constant inputs read). */
static int
view_shape(ox *o, const Onnx__NodeProto *n, const as_shape *x, as_shape *out)
{
    int64_t v[MAXL];
    int cnt, i;

    *out = *x;
    if (is(n, "Reshape")) {
        AS_CHECK(ints_of(o, n, 1, NULL, v, MAXL, &cnt));
        if (cnt < 0)
            return ox_nerr(o, n, "needs a shape input");
        return reshape_dims(o, n, x, v, cnt, (int)ox_attr_i(n, "allowzero", 0), out);
    }
    if (is(n, "Flatten")) {
        int a = 0;
        int64_t p = 1, q = 1;
        AS_CHECK(norm_axis(o, n, ox_attr_i(n, "axis", 1), x->rank + 1, &a));
        for (i = 0; i < x->rank; i++) {
            if (i < a)
                p *= x->dim[i];
            else
                q *= x->dim[i];
        }
        out->rank = 2;
        out->dim[0] = p;
        out->dim[1] = q;
        return AS_OK;
    }
    if (is(n, "Squeeze")) {
        char drop[AS_MAX_RANK] = {0};
        AS_CHECK(ints_of(o, n, 1, o->opset < 13 ? "axes" : NULL, v, MAXL, &cnt));
        for (i = 0; i < cnt; i++) {
            int a = 0;
            AS_CHECK(norm_axis(o, n, v[i], x->rank, &a));
            if (x->dim[a] != 1)
                return ox_nerr(o, n, "cannot squeeze dim %d of size %lld", a,
                               (long long)x->dim[a]);
            drop[a] = 1;
        }
        out->rank = 0;
        for (i = 0; i < x->rank; i++)
            if (!(cnt < 0 ? x->dim[i] == 1 : drop[i]))
                out->dim[out->rank++] = x->dim[i];
        return AS_OK;
    }
    if (is(n, "Unsqueeze")) {
        char ins[2 * AS_MAX_RANK] = {0};
        int r, k = 0;
        AS_CHECK(ints_of(o, n, 1, o->opset < 13 ? "axes" : NULL, v, MAXL, &cnt));
        if (cnt < 0)
            return ox_nerr(o, n, "needs axes");
        r = x->rank + cnt;
        if (r > AS_MAX_RANK)
            return ox_nerr(o, n, "result rank %d is more than %d", r, AS_MAX_RANK);
        for (i = 0; i < cnt; i++) {
            int a = 0;
            AS_CHECK(norm_axis(o, n, v[i], r, &a));
            ins[a] = 1;
        }
        out->rank = r;
        for (i = 0; i < r; i++)
            out->dim[i] = ins[i] ? 1 : x->dim[k++];
        return AS_OK;
    }
    return ox_nerr(o, n, "not a view op");
}

/* ---------------------------------------------------------------- folding */

/* A double as int64, saturated (NaN: 0): converting an out-of-range double is undefined. */
static int64_t
d2i(double f)
{
    if (!(f == f))
        return 0;
    if (f >= 9.2e18)
        return INT64_MAX;
    if (f <= -9.2e18)
        return INT64_MIN;
    return (int64_t)f;
}

/* Wrapping integer arithmetic (constants from a file may overflow). */
#define WADD(x, y) ((int64_t)((uint64_t)(x) + (uint64_t)(y)))
#define WSUB(x, y) ((int64_t)((uint64_t)(x) - (uint64_t)(y)))
#define WMUL(x, y) ((int64_t)((uint64_t)(x) * (uint64_t)(y)))

static int64_t
ci(const ox_const *c, int64_t k)
{
    return c->i != NULL ? c->i[k] : d2i(c->f[k]);
}

static double
cf(const ox_const *c, int64_t k)
{
    return c->f != NULL ? c->f[k] : (double)c->i[k];
}

static void
cset(ox_const *c, int64_t k, double f, int64_t i, int isf)
{
    if (c->f != NULL)
        c->f[k] = isf ? f : (double)i;
    else
        c->i[k] = isf ? d2i(f) : i;
    if (c->shape.dtype == AS_DT_PRED && c->i != NULL)
        c->i[k] = c->i[k] != 0;
}

/* Flat index into A (broadcast against OUT) for output flat index K. */
static int64_t
bidx(const as_shape *a, const as_shape *out, int64_t k)
{
    int64_t idx = 0, stride = 1;
    int i;

    for (i = out->rank - 1; i >= 0; i--) {
        int64_t d = out->dim[i], p = k % d;
        int ia = a->rank - out->rank + i;
        k /= d;
        if (ia >= 0) {
            if (a->dim[ia] != 1)
                idx += p * stride;
            stride *= a->dim[ia];
        }
    }
    return idx;
}

static int
fold_binary(ox *o, const Onnx__NodeProto *n, const ox_const *a, const ox_const *b, ox_const **out)
{
    as_shape s;
    int64_t k;
    int isf = a->f != NULL || b->f != NULL, cmp = 0;
    ox_const *c;

    if (!bcast(&a->shape, &b->shape, &s))
        return ox_nerr(o, n, "operands do not broadcast");
    if (as_shape_numel(&s) > OX_FOLD_MAX)
        return AS_OK;
    if (is(n, "Equal") || is(n, "Less") || is(n, "Greater") || is(n, "LessOrEqual") ||
        is(n, "GreaterOrEqual") || is(n, "And") || is(n, "Or"))
        cmp = 1;
    if (cmp)
        s.dtype = AS_DT_PRED;
    c = ox_const_new(o, &s);
    for (k = 0; k < c->n; k++) {
        int64_t ia = bidx(&a->shape, &s, k), ib = bidx(&b->shape, &s, k);
        double x = cf(a, ia), y = cf(b, ib), r = 0;
        int64_t xi = ci(a, ia), yi = ci(b, ib), ri = 0;
        if (is(n, "Add")) { r = x + y; ri = WADD(xi, yi); }
        else if (is(n, "Sub")) { r = x - y; ri = WSUB(xi, yi); }
        else if (is(n, "Mul")) { r = x * y; ri = WMUL(xi, yi); }
        else if (is(n, "Div")) {
            r = x / y;
            if (!isf && yi == 0)
                return ox_nerr(o, n, "integer division by zero in a constant");
            ri = !isf ? (yi == -1 ? WSUB(0, xi) : xi / yi) : 0;
        } else if (is(n, "Mod")) {
            if (!isf && yi == 0)
                return ox_nerr(o, n, "integer modulo by zero in a constant");
            r = fmod(x, y);
            ri = !isf ? (yi == -1 ? 0 : xi % yi) : 0;
        } else if (is(n, "Pow")) { r = pow(x, y); ri = d2i(pow((double)xi, (double)yi)); }
        else if (is(n, "Max")) { r = x > y ? x : y; ri = xi > yi ? xi : yi; }
        else if (is(n, "Min")) { r = x < y ? x : y; ri = xi < yi ? xi : yi; }
        else if (is(n, "Equal")) ri = isf ? x == y : xi == yi;
        else if (is(n, "Less")) ri = isf ? x < y : xi < yi;
        else if (is(n, "Greater")) ri = isf ? x > y : xi > yi;
        else if (is(n, "LessOrEqual")) ri = isf ? x <= y : xi <= yi;
        else if (is(n, "GreaterOrEqual")) ri = isf ? x >= y : xi >= yi;
        else if (is(n, "And")) ri = xi && yi;
        else if (is(n, "Or")) ri = xi || yi;
        cset(c, k, r, ri, isf && !cmp);
    }
    *out = c;
    return AS_OK;
}

static int
fold_unary(ox *o, const Onnx__NodeProto *n, const ox_const *a, ox_const **out)
{
    ox_const *c = ox_const_new(o, &a->shape);
    int64_t k;

    if (is(n, "Not"))
        c->shape.dtype = AS_DT_PRED;
    for (k = 0; k < a->n; k++) {
        double x = cf(a, k);
        int64_t xi = ci(a, k);
        if (is(n, "Neg")) cset(c, k, -x, WSUB(0, xi), a->f != NULL);
        else if (is(n, "Abs")) cset(c, k, fabs(x), xi < 0 ? WSUB(0, xi) : xi, a->f != NULL);
        else if (is(n, "Sqrt")) cset(c, k, sqrt(x), 0, 1);
        else if (is(n, "Floor")) cset(c, k, floor(x), xi, a->f != NULL);
        else if (is(n, "Ceil")) cset(c, k, ceil(x), xi, a->f != NULL);
        else if (is(n, "Reciprocal")) cset(c, k, 1.0 / x, 0, 1);
        else if (is(n, "Not")) cset(c, k, 0, xi == 0, 0);
        else if (is(n, "Identity")) cset(c, k, x, xi, a->f != NULL);
    }
    *out = c;
    return AS_OK;
}

/* Elements of a constant with a new shape (same count). */
static ox_const *
fold_view(ox *o, const ox_const *a, const as_shape *s)
{
    ox_const *c = ox_const_new(o, s);

    if (c->f != NULL && a->f != NULL)
        memcpy(c->f, a->f, sizeof *c->f * (size_t)a->n);
    else if (c->i != NULL && a->i != NULL)
        memcpy(c->i, a->i, sizeof *c->i * (size_t)a->n);
    return c;
}

static int
fold_cast(ox *o, const Onnx__NodeProto *n, const ox_const *a, ox_const **out)
{
    as_shape s = a->shape;
    int64_t k;
    ox_const *c;

    if (!ox_dtype((int32_t)ox_attr_i(n, "to", 1), &s.dtype))
        return ox_nerr(o, n, "unsupported target type %lld", (long long)ox_attr_i(n, "to", 0));
    c = ox_const_new(o, &s);
    for (k = 0; k < a->n; k++)
        cset(c, k, cf(a, k), ci(a, k), a->f != NULL);
    *out = c;
    return AS_OK;
}

/* Gather along AXIS of constant A with constant indices IX. */
static int
fold_gather(ox *o, const Onnx__NodeProto *n, const ox_const *a, const ox_const *ix, ox_const **out)
{
    as_shape s;
    int ax = 0, i, r = 0;
    int64_t outer = 1, inner = 1, k, d;
    ox_const *c;

    AS_CHECK(norm_axis(o, n, ox_attr_i(n, "axis", 0), a->shape.rank, &ax));
    if (ix->i == NULL)
        return ox_nerr(o, n, "indices must be integers");
    if (a->shape.rank - 1 + ix->shape.rank > AS_MAX_RANK)
        return ox_nerr(o, n, "result rank is more than %d", AS_MAX_RANK);
    s.dtype = a->shape.dtype;
    for (i = 0; i < ax; i++)
        s.dim[r++] = a->shape.dim[i], outer *= a->shape.dim[i];
    for (i = 0; i < ix->shape.rank; i++)
        s.dim[r++] = ix->shape.dim[i];
    for (i = ax + 1; i < a->shape.rank; i++)
        s.dim[r++] = a->shape.dim[i], inner *= a->shape.dim[i];
    s.rank = r;
    if (as_shape_numel(&s) > OX_FOLD_MAX)
        return AS_OK;
    d = a->shape.dim[ax];
    c = ox_const_new(o, &s);
    for (k = 0; k < c->n; k++) {
        int64_t in = k % inner, rest = k / inner, j = rest % ix->n, ou = rest / ix->n;
        int64_t idx = ix->i[j] < 0 ? ix->i[j] + d : ix->i[j];
        if (idx < 0 || idx >= d)
            return ox_nerr(o, n, "index %lld out of range [0, %lld)", (long long)ix->i[j],
                           (long long)d);
        cset(c, k, cf(a, (ou * d + idx) * inner + in), ci(a, (ou * d + idx) * inner + in),
             a->f != NULL);
    }
    *out = c;
    return AS_OK;
}

static int
fold_concat(ox *o, const Onnx__NodeProto *n, ox_const **out)
{
    const ox_const *c0 = ox_cin(o, n, 0);
    int ni = ox_nin(n), j, ax = 0, i;
    as_shape s = c0->shape;
    int64_t outer = 1, k = 0;
    ox_const *c;

    AS_CHECK(norm_axis(o, n, ox_attr_i(n, "axis", 0), s.rank, &ax));
    s.dim[ax] = 0;
    for (j = 0; j < ni; j++) {
        const ox_const *cj = ox_cin(o, n, j);
        if (cj->shape.rank != s.rank)
            return ox_nerr(o, n, "inputs differ in rank");
        for (i = 0; i < s.rank; i++)
            if (i != ax && cj->shape.dim[i] != s.dim[i])
                return ox_nerr(o, n, "inputs differ in dim %d", i);
        s.dim[ax] += cj->shape.dim[ax];
    }
    if (as_shape_numel(&s) > OX_FOLD_MAX)
        return AS_OK;
    for (i = 0; i < ax; i++)
        outer *= s.dim[i];
    c = ox_const_new(o, &s);
    for (int64_t ou = 0; ou < outer; ou++)
        for (j = 0; j < ni; j++) {
            const ox_const *cj = ox_cin(o, n, j);
            int64_t blk = outer ? cj->n / outer : 0, t;
            for (t = 0; t < blk; t++, k++)
                cset(c, k, cf(cj, ou * blk + t), ci(cj, ou * blk + t), cj->f != NULL);
        }
    *out = c;
    return AS_OK;
}

/* Normalised begin/end/step per dim for Slice on shape X; 0 if a negative step is used. */
static int
slice_params(ox *o, const Onnx__NodeProto *n, const as_shape *x, int64_t *b, int64_t *e,
             int64_t *st, int *ok)
{
    int64_t sv[MAXL], ev[MAXL], av[MAXL], pv[MAXL];
    int ns, ne, na, np, i;

    *ok = 1;
    if (o->opset < 10) {
        ns = ox_attr_ints(n, "starts", sv, MAXL);
        ne = ox_attr_ints(n, "ends", ev, MAXL);
        na = ox_attr_ints(n, "axes", av, MAXL);
        np = -1;
    } else {
        AS_CHECK(ints_of(o, n, 1, NULL, sv, MAXL, &ns));
        AS_CHECK(ints_of(o, n, 2, NULL, ev, MAXL, &ne));
        AS_CHECK(ints_of(o, n, 3, NULL, av, MAXL, &na));
        AS_CHECK(ints_of(o, n, 4, NULL, pv, MAXL, &np));
    }
    if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (np >= 0 && np != ns))
        return ox_nerr(o, n, "starts, ends, axes and steps must be constants of one length");
    for (i = 0; i < x->rank; i++) {
        b[i] = 0;
        e[i] = x->dim[i];
        st[i] = 1;
    }
    for (i = 0; i < ns; i++) {
        int a = 0;
        int64_t d, lo, hi;
        AS_CHECK(norm_axis(o, n, na >= 0 ? av[i] : i, x->rank, &a));
        d = x->dim[a];
        st[a] = np >= 0 ? pv[i] : 1;
        if (st[a] == 0)
            return ox_nerr(o, n, "step 0");
        if (st[a] < 0) {
            *ok = 0;
            return AS_OK;
        }
        lo = sv[i] < 0 ? sv[i] + d : sv[i];
        hi = ev[i] < 0 ? ev[i] + d : ev[i];
        lo = lo < 0 ? 0 : lo > d ? d : lo;
        hi = hi < 0 ? 0 : hi > d ? d : hi;
        if (hi < lo)
            hi = lo;
        b[a] = lo;
        e[a] = hi;
    }
    return AS_OK;
}

static int
fold_slice(ox *o, const Onnx__NodeProto *n, const ox_const *a, ox_const **out)
{
    int64_t b[AS_MAX_RANK], e[AS_MAX_RANK], st[AS_MAX_RANK], k;
    as_shape s = a->shape;
    int ok, i;
    ox_const *c;

    AS_CHECK(slice_params(o, n, &a->shape, b, e, st, &ok));
    if (!ok)
        return AS_OK;
    for (i = 0; i < s.rank; i++)
        s.dim[i] = e[i] > b[i] ? (e[i] - b[i] - 1) / st[i] + 1 : 0;
    c = ox_const_new(o, &s);
    for (k = 0; k < c->n; k++) {
        int64_t rem = k, src = 0, stride = 1;
        for (i = s.rank - 1; i >= 0; i--) {
            int64_t p = rem % s.dim[i];
            rem /= s.dim[i];
            src += (b[i] + p * st[i]) * stride;
            stride *= a->shape.dim[i];
        }
        cset(c, k, cf(a, src), ci(a, src), a->f != NULL);
    }
    *out = c;
    return AS_OK;
}

/* Value of a Constant node. */
static int
fold_constant(ox *o, const Onnx__NodeProto *n, int *done)
{
    const Onnx__AttributeProto *a;
    as_shape s;
    ox_const *c = NULL;
    size_t k;

    memset(&s, 0, sizeof s);
    if ((a = ox_attr(n, "value")) != NULL && a->t != NULL) {
        AS_CHECK(ox_tensor_shape(o, a->t, "constant", &s));
        AS_CHECK(ox_tensor_const(o, a->t, &s, &c));
        if (c == NULL) { /* too big to fold (or no data): a constant tensor of its shape */
            int32_t t;
            if (as_graph_add_tensor(o->g, oname(o, n, 0), &s, AS_TK_CONST, -1, &t, o->err) !=
                AS_OK)
                return ox_nerr(o, n, "%s", "cannot declare the constant");
            *done = 1;
            return ox_bind(o, n, 0, t);
        }
    } else if ((a = ox_attr(n, "value_float")) != NULL) {
        s.dtype = AS_DT_F32;
        c = ox_const_new(o, &s);
        c->f[0] = a->f;
    } else if ((a = ox_attr(n, "value_int")) != NULL) {
        s.dtype = AS_DT_I64;
        c = ox_const_new(o, &s);
        c->i[0] = a->i;
    } else if ((a = ox_attr(n, "value_floats")) != NULL) {
        s.dtype = AS_DT_F32;
        s.rank = 1;
        s.dim[0] = (int64_t)a->n_floats;
        c = ox_const_new(o, &s);
        for (k = 0; k < a->n_floats; k++)
            c->f[k] = a->floats[k];
    } else if ((a = ox_attr(n, "value_ints")) != NULL) {
        s.dtype = AS_DT_I64;
        s.rank = 1;
        s.dim[0] = (int64_t)a->n_ints;
        c = ox_const_new(o, &s);
        for (k = 0; k < a->n_ints; k++)
            c->i[k] = a->ints[k];
    } else
        return ox_nerr(o, n, "a Constant needs a value attribute (value, value_float, "
                       "value_int, value_floats or value_ints)");
    *done = 1;
    return ox_bind_const(o, n, 0, c);
}

int
ox_fold(ox *o, const Onnx__NodeProto *n, int *done)
{
    const ox_const *a, *b;
    ox_const *c = NULL;
    as_shape s;
    int ni = ox_nin(n), j;

    *done = 0;
    if (n->domain != NULL && n->domain[0] != '\0' && strcmp(n->domain, "ai.onnx") != 0)
        return AS_OK;
    if (is(n, "Constant"))
        return fold_constant(o, n, done);
    if (is(n, "Shape") || is(n, "Size")) {
        int64_t st, en, k;
        if (!ox_in_shape(o, n, 0, &s))
            return ox_nerr(o, n, "needs one input");
        if (is(n, "Size")) {
            as_shape sc;
            memset(&sc, 0, sizeof sc);
            sc.dtype = AS_DT_I64;
            c = ox_const_new(o, &sc);
            c->i[0] = as_shape_numel(&s);
        } else {
            as_shape sv;
            st = ox_attr_i(n, "start", 0);
            en = ox_attr_i(n, "end", s.rank);
            st = st < 0 ? st + s.rank : st;
            en = en < 0 ? en + s.rank : en;
            st = st < 0 ? 0 : st > s.rank ? s.rank : st;
            en = en < st ? st : en > s.rank ? s.rank : en;
            memset(&sv, 0, sizeof sv);
            sv.dtype = AS_DT_I64;
            sv.rank = 1;
            sv.dim[0] = en - st;
            c = ox_const_new(o, &sv);
            for (k = st; k < en; k++)
                c->i[k - st] = s.dim[k];
        }
        *done = 1;
        return ox_bind_const(o, n, 0, c);
    }
    if (ni == 0)
        return AS_OK;
    for (j = 0; j < ni; j++)
        if (!ox_has_in(n, j) || ox_cin(o, n, j) == NULL)
            return AS_OK; /* a non-constant (or absent) input: emitted as ops */
    a = ox_cin(o, n, 0);
    b = ni > 1 ? ox_cin(o, n, 1) : NULL;
    if (is(n, "ConstantOfShape")) {
        const Onnx__AttributeProto *v = ox_attr(n, "value");
        int64_t k;
        ox_const *vc = NULL;
        if (a->i == NULL || a->shape.rank != 1 || a->n > AS_MAX_RANK)
            return ox_nerr(o, n, "the shape input must be a 1-D integer constant");
        memset(&s, 0, sizeof s);
        s.dtype = AS_DT_F32;
        s.rank = (int)a->n;
        for (k = 0; k < a->n; k++) {
            if (a->i[k] < 0)
                return ox_nerr(o, n, "negative dim %lld", (long long)a->i[k]);
            s.dim[k] = a->i[k];
        }
        if (v != NULL && v->t != NULL) {
            as_shape vs;
            AS_CHECK(ox_tensor_shape(o, v->t, "value", &vs));
            AS_CHECK(ox_tensor_const(o, v->t, &vs, &vc));
            s.dtype = vs.dtype;
        }
        {
            as_err e2;
            if (as_shape_validate(&s, 0, &e2) != AS_OK)
                return ox_nerr(o, n, "%s", e2.msg);
        }
        if (as_shape_numel(&s) > OX_FOLD_MAX) { /* a big filled tensor: a constant of its shape */
            int32_t t;
            if (as_graph_add_tensor(o->g, oname(o, n, 0), &s, AS_TK_CONST, -1, &t, o->err) !=
                AS_OK)
                return ox_nerr(o, n, "cannot declare the constant");
            *done = 1;
            return ox_bind(o, n, 0, t);
        }
        c = ox_const_new(o, &s);
        for (k = 0; k < c->n; k++)
            cset(c, k, vc != NULL && vc->n > 0 ? cf(vc, 0) : 0.0,
                 vc != NULL && vc->n > 0 ? ci(vc, 0) : 0, c->f != NULL);
    } else if (is(n, "Identity") || is(n, "Neg") || is(n, "Abs") || is(n, "Sqrt") ||
               is(n, "Floor") || is(n, "Ceil") || is(n, "Reciprocal") || is(n, "Not")) {
        AS_CHECK(fold_unary(o, n, a, &c));
    } else if (is(n, "Cast")) {
        AS_CHECK(fold_cast(o, n, a, &c));
    } else if ((is(n, "Add") || is(n, "Sub") || is(n, "Mul") || is(n, "Div") || is(n, "Mod") ||
                is(n, "Pow") || is(n, "Equal") || is(n, "Less") || is(n, "Greater") ||
                is(n, "LessOrEqual") || is(n, "GreaterOrEqual") || is(n, "And") ||
                is(n, "Or") || ((is(n, "Max") || is(n, "Min")) && ni == 2)) &&
               ni == 2) {
        AS_CHECK(fold_binary(o, n, a, b, &c));
    } else if (is(n, "Reshape") || is(n, "Flatten") || is(n, "Squeeze") || is(n, "Unsqueeze")) {
        AS_CHECK(view_shape(o, n, &a->shape, &s));
        c = fold_view(o, a, &s);
    } else if (is(n, "Gather") && ni == 2) {
        AS_CHECK(fold_gather(o, n, a, b, &c));
    } else if (is(n, "Concat")) {
        AS_CHECK(fold_concat(o, n, &c));
    } else if (is(n, "Slice")) {
        AS_CHECK(fold_slice(o, n, a, &c));
    } else if (is(n, "Where") && ni == 3) {
        const ox_const *e = ox_cin(o, n, 2);
        as_shape t;
        int64_t k;
        if (!bcast(&a->shape, &b->shape, &t) || !bcast(&t, &e->shape, &s))
            return ox_nerr(o, n, "operands do not broadcast");
        s.dtype = b->shape.dtype;
        if (as_shape_numel(&s) <= OX_FOLD_MAX) {
            c = ox_const_new(o, &s);
            for (k = 0; k < c->n; k++) {
                const ox_const *src = ci(a, bidx(&a->shape, &s, k)) ? b : e;
                int64_t ik = bidx(&src->shape, &s, k);
                cset(c, k, cf(src, ik), ci(src, ik), src->f != NULL);
            }
        }
    } else if (is(n, "Range") && ni == 3 && a->n == 1 && b->n == 1 && ox_cin(o, n, 2)->n == 1) {
        double st = cf(a, 0), lim = cf(b, 0), d = cf(ox_cin(o, n, 2), 0);
        double cnt = d != 0 ? ceil((lim - st) / d) : -1;
        int64_t k;
        if (!(cnt >= 0 && cnt <= (double)OX_FOLD_MAX))
            return cnt < 0 && d == 0 ? ox_nerr(o, n, "delta 0") : AS_OK;
        memset(&s, 0, sizeof s);
        s.dtype = a->shape.dtype;
        s.rank = 1;
        s.dim[0] = (int64_t)cnt;
        c = ox_const_new(o, &s);
        for (k = 0; k < c->n; k++)
            cset(c, k, st + (double)k * d, WADD(ci(a, 0), WMUL(k, ci(ox_cin(o, n, 2), 0))),
                 a->f != NULL);
    } else if (is(n, "Trilu") && a->shape.rank >= 2) {
        int64_t k = b != NULL && b->n == 1 ? ci(b, 0) : 0, e, r = a->shape.dim[a->shape.rank - 2];
        int64_t cc = a->shape.dim[a->shape.rank - 1];
        int up = ox_attr_i(n, "upper", 1) != 0;
        c = ox_const_new(o, &a->shape);
        for (e = 0; e < a->n; e++) {
            int64_t col = e % cc, row = (e / cc) % r;
            int keep = up ? col - row >= k : col - row <= k;
            cset(c, e, keep ? cf(a, e) : 0.0, keep ? ci(a, e) : 0, a->f != NULL);
        }
    } else if (is(n, "Expand") && ni == 2) {
        as_shape t;
        int64_t k;
        if (b->i == NULL || b->shape.rank != 1 || b->n > AS_MAX_RANK)
            return ox_nerr(o, n, "the shape input must be a 1-D integer constant");
        memset(&t, 0, sizeof t);
        t.rank = (int)b->n;
        for (k = 0; k < b->n; k++)
            t.dim[k] = b->i[k];
        if (!bcast(&a->shape, &t, &s))
            return ox_nerr(o, n, "shape does not broadcast");
        s.dtype = a->shape.dtype;
        {
            as_err e2; /* the target shape is data: negative or overflowing dims are errors */
            if (as_shape_validate(&s, 0, &e2) != AS_OK)
                return ox_nerr(o, n, "%s", e2.msg);
        }
        if (as_shape_numel(&s) <= OX_FOLD_MAX) {
            c = ox_const_new(o, &s);
            for (k = 0; k < c->n; k++) {
                int64_t ik = bidx(&a->shape, &s, k);
                cset(c, k, cf(a, ik), ci(a, ik), a->f != NULL);
            }
        }
    }
    if (c == NULL)
        return AS_OK;
    *done = 1;
    return ox_bind_const(o, n, 0, c);
}

/* ---------------------------------------------------------------- emitting */

static const char *const unary_map[][2] = {
    {"Relu", "relu"}, {"Tanh", "tanh"}, {"Sigmoid", "sigmoid"}, {"Exp", "exp"}, {"Log", "log"},
    {"Sqrt", "sqrt"}, {"Neg", "neg"}, {"Abs", "abs"}, {"Sign", "sign"}, {"Erf", "erf"},
    {"Gelu", "gelu"}, {NULL, NULL}};
static const char *const binary_map[][2] = {
    {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Pow", "pow"},
    {"Max", "max"}, {"Min", "min"}, {"Sum", "add"}, {"And", "min"}, {"Or", "max"},
    {NULL, NULL}};
static const char *const cmp_map[][2] = {
    {"Equal", "eq"}, {"Less", "lt"}, {"Greater", "gt"}, {"LessOrEqual", "le"},
    {"GreaterOrEqual", "ge"}, {NULL, NULL}};

static const char *
map_of(const char *const (*m)[2], const char *t)
{
    int i;

    for (i = 0; m[i][0] != NULL; i++)
        if (strcmp(m[i][0], t) == 0)
            return m[i][1];
    return NULL;
}

/* Cast tensor X to dtype DT (no op when it already is). */
static int
cast_to(ox *o, const Onnx__NodeProto *n, int32_t x, as_dtype dt, int32_t *out)
{
    as_attr at[1] = {AS_ATTR_S("dtype", as_dtype_name(dt))};

    if (ox_shape(o, x)->dtype == dt) {
        *out = x;
        return AS_OK;
    }
    return mid(o, n, "cast", &x, 1, at, 1, out);
}

static int
single_user(ox *o, const Onnx__NodeProto *n, int k)
{
    return ox_single_user(o, n, k);
}

static int
const_near(ox *o, const Onnx__NodeProto *n, int j, double want)
{
    double v;

    return scalar_of(o, n, j, &v) && fabs(v - want) < 1e-4 * fabs(want);
}

/*
 * Erf GELU as PyTorch writes it: Div(x, 1.4142) -> Erf -> Add(., 1) ->
 * Mul(x, .) -> Mul(., 0.5), each intermediate read once: one `gelu` op.
 */
static int
try_gelu(ox *o, int ni, const Onnx__NodeProto *n, int *done)
{
    const Onnx__NodeProto *e, *ad, *m1, *m2;
    int ie, ia, i1, i2, xj;

    *done = 0;
    if (!(is(n, "Div") && const_near(o, n, 1, 1.41421356)) &&
        !(is(n, "Mul") && const_near(o, n, 1, 0.70710678)))
        return AS_OK;
    if ((ie = single_user(o, n, 0)) < 0 || !is(e = o->graph->node[ie], "Erf"))
        return AS_OK;
    if ((ia = single_user(o, e, 0)) < 0 || !is(ad = o->graph->node[ia], "Add") ||
        ox_nin(ad) != 2 || !(const_near(o, ad, 0, 1.0) || const_near(o, ad, 1, 1.0)))
        return AS_OK;
    if ((i1 = single_user(o, ad, 0)) < 0 || !is(m1 = o->graph->node[i1], "Mul") ||
        ox_nin(m1) != 2)
        return AS_OK;
    xj = strcmp(m1->input[0], ad->output[0]) == 0 ? 1 : 0;
    if (strcmp(m1->input[xj], n->input[0]) != 0)
        return AS_OK;
    if ((i2 = single_user(o, m1, 0)) < 0 || !is(m2 = o->graph->node[i2], "Mul") ||
        ox_nin(m2) != 2 || !(const_near(o, m2, 0, 0.5) || const_near(o, m2, 1, 0.5)))
        return AS_OK;
    {
        int32_t x, outs[AS_MAX_OUTS];
        AS_CHECK(ox_in(o, n, 0, &x));
        AS_CHECK(ox_op(o, m2, "gelu", oname(o, m2, 0), &x, 1, NULL, 0, outs, NULL));
        AS_CHECK(ox_bind(o, m2, 0, outs[0]));
    }
    o->skip[ie] = o->skip[ia] = o->skip[i1] = o->skip[i2] = 1;
    (void)ni;
    *done = 1;
    return AS_OK;
}

static int
emit_binary(ox *o, const Onnx__NodeProto *n, const char *op)
{
    int32_t a, b;
    double v;
    int ni = ox_nin(n), j;

    if (ni == 1) {
        AS_CHECK(ox_in(o, n, 0, &a));
        return ox_bind(o, n, 0, a);
    }
    if (ni > 2) { /* variadic Max/Min/Sum: a chain */
        AS_CHECK(ox_in(o, n, 0, &a));
        for (j = 1; j < ni; j++) {
            int32_t in[2];
            in[0] = a;
            AS_CHECK(ox_in(o, n, j, &in[1]));
            if (j == ni - 1)
                return emit1(o, n, op, in, 2, NULL, 0);
            AS_CHECK(mid(o, n, op, in, 2, NULL, 0, &a));
        }
    }
    /* a scalar constant factor: scale; x^2: square; x^0.5: sqrt */
    if ((is(n, "Mul") || is(n, "Div")) && (scalar_of(o, n, 1, &v) || scalar_of(o, n, 0, &v))) {
        int cj = ox_cin(o, n, 1) != NULL && ox_cin(o, n, 1)->n == 1 ? 1 : 0;
        as_shape xs;
        if (!(is(n, "Div") && cj == 0) && ox_in_shape(o, n, 1 - cj, &xs) &&
            as_dtype_is_float(xs.dtype) && ox_cin(o, n, 1 - cj) == NULL) {
            double f = 1.0;
            scalar_of(o, n, cj, &f);
            {
                as_attr at[1] = {AS_ATTR_F("factor", is(n, "Div") ? 1.0 / f : f)};
                AS_CHECK(ox_in(o, n, 1 - cj, &a));
                return emit1(o, n, "scale", &a, 1, at, 1);
            }
        }
    }
    if (is(n, "Pow") && scalar_of(o, n, 1, &v) && (v == 2.0 || v == 0.5 || v == 1.0)) {
        AS_CHECK(ox_in(o, n, 0, &a));
        if (v == 1.0)
            return ox_bind(o, n, 0, a);
        return emit1(o, n, v == 2.0 ? "square" : "sqrt", &a, 1, NULL, 0);
    }
    AS_CHECK(ox_in(o, n, 0, &a));
    AS_CHECK(ox_in(o, n, 1, &b));
    ox_bias_role(o, a, b);
    if (ox_shape(o, a)->dtype != ox_shape(o, b)->dtype)
        AS_CHECK(cast_to(o, n, b, ox_shape(o, a)->dtype, &b));
    /* activation + rank-1 bias along the last dim: bias_add (as gen's linear layers) */
    if (is(n, "Add")) {
        const as_shape *sa = ox_shape(o, a), *sb = ox_shape(o, b);
        int32_t in[2];
        if (sb->rank == 1 && sa->rank >= 2 && sa->dim[sa->rank - 1] == sb->dim[0] &&
            as_graph_tensor(o->g, b)->kind == AS_TK_PARAM) {
            in[0] = a;
            in[1] = b;
            return emit1(o, n, "bias_add", in, 2, NULL, 0);
        }
        if (sa->rank == 1 && sb->rank >= 2 && sb->dim[sb->rank - 1] == sa->dim[0] &&
            as_graph_tensor(o->g, a)->kind == AS_TK_PARAM) {
            in[0] = b;
            in[1] = a;
            return emit1(o, n, "bias_add", in, 2, NULL, 0);
        }
    }
    {
        int32_t in[2] = {a, b};
        return emit1(o, n, op, in, 2, NULL, 0);
    }
}

static int
emit_matmul(ox *o, const Onnx__NodeProto *n)
{
    int32_t a, b, in[2], y;
    const as_shape *sa, *sb;
    int va, vb, ta, tb;
    as_shape outs;

    AS_CHECK(ox_in(o, n, 0, &a));
    AS_CHECK(ox_in(o, n, 1, &b));
    sa = ox_shape(o, a);
    sb = ox_shape(o, b);
    ta = o->vals.v[ox_find(o, n->input[0])].tr;
    tb = o->vals.v[ox_find(o, n->input[1])].tr;
    if (ta || tb) { /* operands are transposes folded into the flags (rank >= 2) */
        as_attr at[2] = {AS_ATTR_I("transpose_a", ta), AS_ATTR_I("transpose_b", tb)};
        in[0] = a;
        in[1] = b;
        return emit1(o, n, "matmul", in, 2, at, 2);
    }
    va = sa->rank == 1;
    vb = sb->rank == 1;
    if (va) {
        int64_t d[2] = {1, sa->dim[0]};
        AS_CHECK(reshape_to(o, n, a, 2, d, 0, &a));
    }
    if (vb) {
        int64_t d[2] = {sb->dim[0], 1};
        AS_CHECK(reshape_to(o, n, b, 2, d, 0, &b));
    }
    in[0] = a;
    in[1] = b;
    if (!va && !vb)
        return emit1(o, n, "matmul", in, 2, NULL, 0);
    AS_CHECK(mid(o, n, "matmul", in, 2, NULL, 0, &y));
    outs = *ox_shape(o, y);
    if (vb)
        outs.rank--;
    if (va) {
        outs.dim[outs.rank - (vb ? 1 : 2)] = outs.dim[outs.rank - (vb ? 0 : 1)];
        outs.rank--;
    }
    return reshape_to(o, n, y, outs.rank, outs.dim, 1, &y);
}

static int
emit_gemm(ox *o, const Onnx__NodeProto *n)
{
    double alpha = ox_attr_f(n, "alpha", 1.0), beta = ox_attr_f(n, "beta", 1.0);
    int64_t ta = ox_attr_i(n, "transA", 0), tb = ox_attr_i(n, "transB", 0);
    as_attr at[2] = {AS_ATTR_I("transpose_a", ta != 0), AS_ATTR_I("transpose_b", tb != 0)};
    int32_t in[2], y, c;
    int has_c = ox_has_in(n, 2) && beta != 0.0;

    AS_CHECK(ox_in(o, n, 0, &in[0]));
    AS_CHECK(ox_in(o, n, 1, &in[1]));
    if (!has_c && alpha == 1.0)
        return emit1(o, n, "matmul", in, 2, at, 2);
    AS_CHECK(mid(o, n, "matmul", in, 2, at, 2, &y));
    if (alpha != 1.0) {
        as_attr sc[1] = {AS_ATTR_F("factor", alpha)};
        if (!has_c)
            return emit1(o, n, "scale", &y, 1, sc, 1);
        AS_CHECK(mid(o, n, "scale", &y, 1, sc, 1, &y));
    }
    AS_CHECK(ox_in(o, n, 2, &c));
    if (beta != 1.0) {
        as_attr sc[1] = {AS_ATTR_F("factor", beta)};
        AS_CHECK(mid(o, n, "scale", &c, 1, sc, 1, &c));
    }
    in[0] = y;
    in[1] = c;
    if (ox_shape(o, c)->rank == 1 && ox_shape(o, c)->dim[0] == ox_shape(o, y)->dim[1])
        return emit1(o, n, "bias_add", in, 2, NULL, 0);
    return emit1(o, n, "add", in, 2, NULL, 0);
}

/* pads of a Conv/Pool node for spatial dims of X (kernel K, stride S, dilation D). */
static int
spatial_pads(ox *o, const Onnx__NodeProto *n, const as_shape *x, int ns, const int64_t *k,
             const int64_t *s, const int64_t *d, int64_t *lo, int64_t *hi)
{
    char ap[32] = "NOTSET";
    int64_t p[2 * AS_MAX_RANK];
    int np, i;

    ox_attr_s(n, "auto_pad", ap, sizeof ap);
    np = ox_attr_ints(n, "pads", p, 2 * AS_MAX_RANK);
    for (i = 0; i < ns; i++)
        if (k[i] < 1 || k[i] > OX_DIM_MAX || s[i] < 1 || s[i] > OX_DIM_MAX || d[i] < 1 ||
            d[i] > OX_DIM_MAX)
            return ox_nerr(o, n, "kernel, stride or dilation out of range in dim %d", i);
    for (i = 0; i < 2 * ns && i < np; i++)
        if (p[i] > OX_DIM_MAX || p[i] < -OX_DIM_MAX)
            return ox_nerr(o, n, "pad %lld out of range", (long long)p[i]);
    for (i = 0; i < ns; i++) {
        lo[i] = hi[i] = 0;
        if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
            int64_t in = x->dim[2 + i], out = (in + s[i] - 1) / s[i];
            double t = (double)(out - 1) * (double)s[i] + (double)(k[i] - 1) * (double)d[i] + 1.0 -
                       (double)in;
            int64_t tot;
            if (t > (double)OX_DIM_MAX)
                return ox_nerr(o, n, "SAME padding of dim %d out of range", i);
            tot = t < 0 ? 0 : (int64_t)t;
            lo[i] = strcmp(ap, "SAME_UPPER") == 0 ? tot / 2 : tot - tot / 2;
            hi[i] = tot - lo[i];
        } else if (strcmp(ap, "VALID") != 0 && np == 2 * ns) {
            lo[i] = p[i];
            hi[i] = p[i + ns];
            if (lo[i] < 0 || hi[i] < 0)
                return ox_nerr(o, n, "negative pads");
        } else if (strcmp(ap, "VALID") != 0 && np >= 0 && np != 2 * ns)
            return ox_nerr(o, n, "pads has %d values for %d spatial dims", np, ns);
    }
    return AS_OK;
}

/* Pad X explicitly with LO/HI on its spatial dims (value V). */
static int
pad_spatial(ox *o, const Onnx__NodeProto *n, int32_t x, int ns, const int64_t *lo,
            const int64_t *hi, double v, int32_t *out)
{
    int64_t l[AS_MAX_RANK] = {0}, h[AS_MAX_RANK] = {0};
    int i;
    as_attr at[3];

    for (i = 0; i < ns; i++) {
        l[2 + i] = lo[i];
        h[2 + i] = hi[i];
    }
    at[0] = AS_ATTR_V("lo", ns + 2, l);
    at[1] = AS_ATTR_V("hi", ns + 2, h);
    at[2] = AS_ATTR_F("value", v);
    return mid(o, n, "pad", &x, 1, at, 3, out);
}

static int
emit_conv(ox *o, const Onnx__NodeProto *n)
{
    int32_t x, w, bias = -1, in[3];
    const as_shape *xs, *ws;
    int64_t k[AS_MAX_RANK], s[AS_MAX_RANK], d[AS_MAX_RANK], lo[AS_MAX_RANK], hi[AS_MAX_RANK];
    int64_t g = ox_attr_i(n, "group", 1);
    int ns, i, sym = 1, nk;

    AS_CHECK(ox_in(o, n, 0, &x));
    AS_CHECK(ox_in(o, n, 1, &w));
    if (ox_has_in(n, 2))
        AS_CHECK(ox_in(o, n, 2, &bias));
    xs = ox_shape(o, x);
    ws = ox_shape(o, w);
    ns = xs->rank - 2;
    if (ns < 1 || ws->rank != xs->rank)
        return ox_nerr(o, n, "input rank %d and weight rank %d do not make a convolution",
                       xs->rank, ws->rank);
    nk = ox_attr_ints(n, "kernel_shape", k, AS_MAX_RANK);
    for (i = 0; i < ns; i++) {
        k[i] = nk == ns ? k[i] : ws->dim[2 + i];
        s[i] = d[i] = 1;
    }
    if (ox_attr_ints(n, "strides", s, AS_MAX_RANK) == -2 ||
        ox_attr_ints(n, "dilations", d, AS_MAX_RANK) == -2)
        return ox_nerr(o, n, "too many strides or dilations");
    AS_CHECK(spatial_pads(o, n, xs, ns, k, s, d, lo, hi));
    for (i = 0; i < ns; i++)
        sym &= lo[i] == hi[i];
    if (ns == 2) {
        int64_t pad[2] = {lo[0], lo[1]};
        as_attr at[4] = {AS_ATTR_V("stride", 2, s), AS_ATTR_V("padding", 2, pad),
                         AS_ATTR_V("dilation", 2, d), AS_ATTR_I("groups", g)};
        if (!sym) {
            AS_CHECK(pad_spatial(o, n, x, ns, lo, hi, 0.0, &x));
            pad[0] = pad[1] = 0;
        }
        in[0] = x;
        in[1] = w;
        in[2] = bias;
        return emit1(o, n, "conv2d", in, bias >= 0 ? 3 : 2, at, 4);
    }
    {
        /* 1-D / 3-D: conv_general in NC... / OI... layout, bias added after */
        char lab[64];
        int32_t y;
        size_t p = 0;
        lab[p++] = 'b';
        lab[p++] = 'f';
        for (i = 0; i < ns; i++)
            lab[p++] = (char)('0' + i);
        memcpy(lab + p, "_oi", 3);
        p += 3;
        for (i = 0; i < ns; i++)
            lab[p++] = (char)('0' + i);
        memcpy(lab + p, "->bf", 4);
        p += 4;
        for (i = 0; i < ns; i++)
            lab[p++] = (char)('0' + i);
        lab[p] = '\0';
        {
            as_attr at[5] = {AS_ATTR_S("dim_labels", lab), AS_ATTR_V("stride", ns, s),
                             AS_ATTR_V("pad_lo", ns, lo), AS_ATTR_V("pad_hi", ns, hi),
                             AS_ATTR_V("rhs_dilate", ns, d)};
            as_attr at6[6];
            memcpy(at6, at, sizeof at);
            at6[5] = AS_ATTR_I("feature_group_count", g);
            in[0] = x;
            in[1] = w;
            if (bias < 0)
                return emit1(o, n, "conv_general", in, 2, at6, 6);
            AS_CHECK(mid(o, n, "conv_general", in, 2, at6, 6, &y));
        }
        {
            int64_t bd[AS_MAX_RANK];
            bd[0] = ox_shape(o, bias)->dim[0];
            for (i = 0; i < ns; i++)
                bd[1 + i] = 1;
            AS_CHECK(reshape_to(o, n, bias, ns + 1, bd, 0, &bias));
        }
        in[0] = y;
        in[1] = bias;
        return emit1(o, n, "add", in, 2, NULL, 0);
    }
}

static int
emit_pool(ox *o, const Onnx__NodeProto *n, int max)
{
    int32_t x;
    const as_shape *xs;
    int64_t k[AS_MAX_RANK], s[AS_MAX_RANK], d[AS_MAX_RANK], lo[AS_MAX_RANK], hi[AS_MAX_RANK];
    int nk, i, sym = 1;

    AS_CHECK(ox_in(o, n, 0, &x));
    xs = ox_shape(o, x);
    nk = ox_attr_ints(n, "kernel_shape", k, AS_MAX_RANK);
    if (xs->rank != 4 || nk != 2 || out_used(o, n, 1))
        return ox_opaque(o, n, (double)as_shape_numel(xs));
    for (i = 0; i < 2; i++)
        s[i] = d[i] = 1;
    ox_attr_ints(n, "strides", s, AS_MAX_RANK);
    ox_attr_ints(n, "dilations", d, AS_MAX_RANK);
    if (d[0] != 1 || d[1] != 1)
        return ox_opaque(o, n, (double)as_shape_numel(xs));
    AS_CHECK(spatial_pads(o, n, xs, 2, k, s, d, lo, hi));
    if (ox_attr_i(n, "ceil_mode", 0))
        for (i = 0; i < 2; i++) {
            int64_t span = xs->dim[2 + i] + lo[i] + hi[i] - k[i];
            if (span >= 0 && span % s[i] != 0 &&
                (span / s[i] + 1) * s[i] < xs->dim[2 + i] + lo[i]) /* last window starts inside */
                hi[i] += s[i] - span % s[i];
        }
    for (i = 0; i < 2; i++)
        sym &= lo[i] == hi[i];
    if (!sym) {
        AS_CHECK(pad_spatial(o, n, x, 2, lo, hi, max ? -INFINITY : 0.0, &x));
        lo[0] = lo[1] = 0;
    }
    {
        int64_t pad[2] = {lo[0], lo[1]};
        as_attr at[3] = {AS_ATTR_V("kernel", 2, k), AS_ATTR_V("stride", 2, s),
                         AS_ATTR_V("padding", 2, pad)};
        return emit1(o, n, max ? "maxpool2d" : "avgpool2d", &x, 1, at, 3);
    }
}

static int
emit_global_pool(ox *o, const Onnx__NodeProto *n, int max)
{
    int32_t x;
    const as_shape *xs;

    AS_CHECK(ox_in(o, n, 0, &x));
    xs = ox_shape(o, x);
    if (xs->rank < 3)
        return ox_nerr(o, n, "needs an input of rank 3 or more (batch, channels, spatial dims), "
                       "got rank %d", xs->rank);
    if (xs->rank == 4) {
        int64_t k[2] = {xs->dim[2], xs->dim[3]};
        as_attr at[1] = {AS_ATTR_V("kernel", 2, k)};
        return emit1(o, n, max ? "maxpool2d" : "avgpool2d", &x, 1, at, 1);
    }
    {
        int64_t dims[AS_MAX_RANK];
        int i;
        for (i = 2; i < xs->rank; i++)
            dims[i - 2] = i;
        as_attr at[2] = {AS_ATTR_V("dims", xs->rank - 2, dims), AS_ATTR_I("keepdims", 1)};
        return emit1(o, n, max ? "reduce_max" : "reduce_mean", &x, 1, at, 2);
    }
}

static int
emit_batchnorm(ox *o, const Onnx__NodeProto *n)
{
    double eps = ox_attr_f(n, "epsilon", 1e-5);
    /* opsets 14+: training_mode; before: the 5-output form is training, the 1-output form test */
    int train = ox_attr_i(n, "training_mode", 0) != 0 || out_used(o, n, 1) || out_used(o, n, 2) ||
                out_used(o, n, 3) || out_used(o, n, 4) ||
                (o->opset < 14 && n->n_output > 1 && ox_attr_i(n, "is_test", 0) == 0);
    int32_t x, sc, b, mean, var, in[3], y;
    const as_shape *xs;
    int k, i;

    AS_CHECK(ox_in(o, n, 0, &x));
    AS_CHECK(ox_in(o, n, 1, &sc));
    AS_CHECK(ox_in(o, n, 2, &b));
    xs = ox_shape(o, x);
    if (xs->rank < 2)
        return ox_nerr(o, n, "input must have rank >= 2");
    if (train) {
        as_attr at[1] = {AS_ATTR_F("eps", eps)};
        in[0] = x;
        in[1] = sc;
        in[2] = b;
        AS_CHECK(emit1(o, n, "batchnorm", in, 3, at, 1));
        /* running / saved statistics that something reads: the batch mean and variance */
        for (k = 1; k < (int)n->n_output && k < 5; k++) {
            int64_t dims[AS_MAX_RANK];
            int nd = 0;
            int32_t m, t;
            if (!out_used(o, n, k))
                continue;
            for (i = 0; i < xs->rank; i++)
                if (i != 1)
                    dims[nd++] = i;
            {
                as_attr ra[2] = {AS_ATTR_V("dims", nd, dims), AS_ATTR_I("keepdims", 0)};
                if (k % 2 == 1) { /* mean (running mean, saved mean) */
                    AS_CHECK(ox_op(o, n, "reduce_mean", oname(o, n, k), &x, 1, ra, 2, &m, NULL));
                    AS_CHECK(ox_bind(o, n, k, m));
                } else {           /* variance: mean of squares (shape-equal estimate) */
                    AS_CHECK(mid(o, n, "square", &x, 1, NULL, 0, &t));
                    AS_CHECK(ox_op(o, n, "reduce_mean", oname(o, n, k), &t, 1, ra, 2, &m, NULL));
                    AS_CHECK(ox_bind(o, n, k, m));
                }
            }
        }
        return AS_OK;
    }
    /* inference: y = x * a + c with a = scale / sqrt(var + eps), c = B - mean * a (per channel) */
    AS_CHECK(ox_in(o, n, 3, &mean));
    AS_CHECK(ox_in(o, n, 4, &var));
    {
        int32_t e, t, a, c;
        int64_t cd[AS_MAX_RANK];
        as_attr sa[1] = {AS_ATTR_F("factor", 1.0)};
        (void)sa;
        AS_CHECK(ox_scalar(o, ox_shape(o, var)->dtype, eps, &e));
        in[0] = var;
        in[1] = e;
        AS_CHECK(mid(o, n, "add", in, 2, NULL, 0, &t));
        AS_CHECK(mid(o, n, "sqrt", &t, 1, NULL, 0, &t));
        in[0] = sc;
        in[1] = t;
        AS_CHECK(mid(o, n, "div", in, 2, NULL, 0, &a));
        in[0] = mean;
        in[1] = a;
        AS_CHECK(mid(o, n, "mul", in, 2, NULL, 0, &t));
        in[0] = b;
        in[1] = t;
        AS_CHECK(mid(o, n, "sub", in, 2, NULL, 0, &c));
        cd[0] = xs->dim[1];
        for (i = 2; i < xs->rank; i++)
            cd[i - 1] = 1;
        AS_CHECK(reshape_to(o, n, a, xs->rank - 1, cd, 0, &a));
        AS_CHECK(reshape_to(o, n, c, xs->rank - 1, cd, 0, &c));
        in[0] = x;
        in[1] = a;
        AS_CHECK(mid(o, n, "mul", in, 2, NULL, 0, &y));
        in[0] = y;
        in[1] = c;
        return emit1(o, n, "add", in, 2, NULL, 0);
    }
}

static int
emit_layernorm(ox *o, const Onnx__NodeProto *n)
{
    double eps = ox_attr_f(n, "epsilon", 1e-5);
    int32_t x, g, b, in[3], y;
    const as_shape *xs;
    int ax = 0, i;
    int64_t h = 1;
    as_attr at[1] = {AS_ATTR_F("eps", eps)};

    if (out_used(o, n, 1) || out_used(o, n, 2))
        return ox_opaque(o, n, 0.0);
    AS_CHECK(ox_in(o, n, 0, &x));
    AS_CHECK(ox_in(o, n, 1, &g));
    xs = ox_shape(o, x);
    AS_CHECK(norm_axis(o, n, ox_attr_i(n, "axis", -1), xs->rank, &ax));
    for (i = ax; i < xs->rank; i++)
        h *= xs->dim[i];
    if (ox_has_in(n, 2))
        AS_CHECK(ox_in(o, n, 2, &b));
    else {
        int64_t d[1] = {h};
        as_attr za[2] = {AS_ATTR_V("shape", 1, d),
                         AS_ATTR_S("dtype", as_dtype_name(ox_shape(o, g)->dtype))};
        AS_CHECK(mid(o, n, "zeros", NULL, 0, za, 2, &b));
    }
    if (ax == xs->rank - 1) {
        in[0] = x;
        in[1] = g;
        in[2] = b;
        return emit1(o, n, "layernorm", in, 3, at, 1);
    }
    {
        int64_t d[AS_MAX_RANK], one[1] = {h};
        as_shape back = *xs;
        for (i = 0; i < ax; i++)
            d[i] = xs->dim[i];
        d[ax] = h;
        AS_CHECK(reshape_to(o, n, x, ax + 1, d, 0, &x));
        AS_CHECK(reshape_to(o, n, g, 1, one, 0, &g));
        AS_CHECK(reshape_to(o, n, b, 1, one, 0, &b));
        in[0] = x;
        in[1] = g;
        in[2] = b;
        AS_CHECK(mid(o, n, "layernorm", in, 3, at, 1, &y));
        return reshape_to(o, n, y, back.rank, back.dim, 1, &y);
    }
}

static int
emit_softmax(ox *o, const Onnx__NodeProto *n, const char *op)
{
    int32_t x, y;
    const as_shape *xs;
    int ax = 0, i;

    AS_CHECK(ox_in(o, n, 0, &x));
    xs = ox_shape(o, x);
    AS_CHECK(norm_axis(o, n, ox_attr_i(n, "axis", o->opset >= 13 ? -1 : 1), xs->rank, &ax));
    if (o->opset >= 13 || ax == xs->rank - 1) {
        as_attr at[1] = {AS_ATTR_I("axis", ax)};
        return emit1(o, n, op, &x, 1, at, 1);
    }
    { /* opsets < 13: softmax over the flattened dims from axis on */
        as_shape back = *xs;
        int64_t d[2] = {1, 1};
        as_attr at[1] = {AS_ATTR_I("axis", 1)};
        for (i = 0; i < xs->rank; i++)
            d[i < ax ? 0 : 1] *= xs->dim[i];
        AS_CHECK(reshape_to(o, n, x, 2, d, 0, &x));
        AS_CHECK(mid(o, n, op, &x, 1, at, 1, &y));
        return reshape_to(o, n, y, back.rank, back.dim, 1, &y);
    }
}

static int
emit_dropout(ox *o, const Onnx__NodeProto *n)
{
    double p = ox_attr_f(n, "ratio", 0.5);
    int train = 0;
    int32_t x;

    AS_CHECK(ox_in(o, n, 0, &x));
    if (ox_has_in(n, 1)) {
        if (!scalar_of(o, n, 1, &p))
            return ox_nerr(o, n, "ratio must be a constant");
    }
    if (ox_has_in(n, 2)) {
        double t;
        if (!scalar_of(o, n, 2, &t))
            return ox_nerr(o, n, "training_mode must be a constant");
        train = t != 0.0;
    }
    if (o->opset < 7 && ox_attr_i(n, "is_test", 0) == 0)
        train = 1;
    if (!train || p == 0.0) {
        AS_CHECK(ox_bind(o, n, 0, x));
        if (out_used(o, n, 1)) { /* an all-true mask */
            as_attr at[2] = {AS_ATTR_V("shape", ox_shape(o, x)->rank, ox_shape(o, x)->dim),
                             AS_ATTR_S("dtype", "pred")};
            int32_t m;
            AS_CHECK(ox_op(o, n, "zeros", oname(o, n, 1), NULL, 0, at, 2, &m, NULL));
            return ox_bind(o, n, 1, m);
        }
        return AS_OK;
    }
    if (!(p > 0.0 && p < 1.0))
        return ox_nerr(o, n, "ratio %g is not in [0, 1)", p);
    { /* the random mask is a per-step input, as in the registry's dropout */
        int32_t in[2], m;
        as_shape ms = *ox_shape(o, x);
        as_attr at[1] = {AS_ATTR_F("p", p)};
        char buf[300];
        ms.dtype = AS_DT_PRED;
        snprintf(buf, sizeof buf, "%s.mask", oname(o, n, 0));
        if (as_graph_add_tensor(o->g, as_graph_fresh_name(o->g, buf), &ms, AS_TK_INPUT,
                                ms.rank > 0 ? 0 : -1, &m, o->err) != AS_OK)
            return ox_nerr(o, n, "cannot declare the mask");
        in[0] = x;
        in[1] = m;
        AS_CHECK(emit1(o, n, "dropout", in, 2, at, 1));
        return ox_bind(o, n, 1, m);
    }
}

static int
emit_view(ox *o, const Onnx__NodeProto *n)
{
    int32_t x, y;
    as_shape s;

    AS_CHECK(ox_in(o, n, 0, &x));
    AS_CHECK(view_shape(o, n, ox_shape(o, x), &s));
    return reshape_to(o, n, x, s.rank, s.dim, 1, &y);
}

static int
emit_transpose(ox *o, const Onnx__NodeProto *n)
{
    int32_t x;
    int64_t p[AS_MAX_RANK];
    int np, i, r;

    AS_CHECK(ox_in(o, n, 0, &x));
    r = ox_shape(o, x)->rank;
    np = ox_attr_ints(n, "perm", p, AS_MAX_RANK);
    if (np < 0)
        for (i = 0, np = r; i < r; i++)
            p[i] = r - 1 - i;
    for (i = 0; i < np && p[i] == i; i++)
        ;
    if (i == np && np == r)
        return ox_bind(o, n, 0, x);
    if (np == r && r >= 2 && i == r - 2 && p[r - 2] == r - 1 && p[r - 1] == r - 2) {
        /* a swap of the last two dims read only by a MatMul: its transpose_a/b flag */
        int u = single_user(o, n, 0), vi = n->n_output > 0 ? ox_find(o, n->output[0]) : -1;
        if (u >= 0 && vi >= 0 && is(o->graph->node[u], "MatMul") && ox_nin(o->graph->node[u]) == 2 &&
            strcmp(o->graph->node[u]->input[0], o->graph->node[u]->input[1]) != 0) {
            o->vals.v[vi].tid = x;
            o->vals.v[vi].tr = 1;
            return AS_OK;
        }
    }
    {
        as_attr at[1] = {AS_ATTR_V("perm", np, p)};
        return emit1(o, n, "transpose", &x, 1, at, 1);
    }
}

static int
emit_concat(ox *o, const Onnx__NodeProto *n)
{
    int ni = ox_nin(n), j, ax = 0;
    int32_t *in;

    if (ni < 1) /* the first input's rank gives the axis range */
        return ox_nerr(o, n, "Concat needs at least one input");
    in = as_arena_alloc(o->arena, sizeof *in * (size_t)(ni + 1));
    for (j = 0; j < ni; j++)
        AS_CHECK(ox_in(o, n, j, &in[j]));
    if (ni == 1)
        return ox_bind(o, n, 0, in[0]);
    AS_CHECK(norm_axis(o, n, ox_attr_i(n, "axis", 0), ox_shape(o, in[0])->rank, &ax));
    {
        as_attr at[1] = {AS_ATTR_I("axis", ax)};
        return emit1(o, n, "concat", in, ni, at, 1);
    }
}

static int
emit_split(ox *o, const Onnx__NodeProto *n)
{
    int32_t x, outs[AS_MAX_OUTS];
    int64_t sz[AS_MAX_OUTS];
    int ns, ax = 0, k, no = (int)n->n_output, nout;
    const as_shape *xs;

    AS_CHECK(ox_in(o, n, 0, &x));
    xs = ox_shape(o, x);
    AS_CHECK(norm_axis(o, n, ox_attr_i(n, "axis", 0), xs->rank, &ax));
    if (no < 1 || no > AS_MAX_OUTS)
        return ox_nerr(o, n, "%d outputs (1 to %d supported)", no, AS_MAX_OUTS);
    AS_CHECK(ints_of(o, n, 1, o->opset < 13 ? "split" : NULL, sz, AS_MAX_OUTS, &ns));
    if (ns < 0) {
        int64_t d = xs->dim[ax], per = (d + no - 1) / no;
        for (k = 0; k < no; k++) {
            sz[k] = d - per * k < per ? d - per * k : per;
            if (sz[k] < 0)
                sz[k] = 0;
        }
        ns = no;
    }
    if (ns != no)
        return ox_nerr(o, n, "split has %d sizes for %d outputs", ns, no);
    {
        as_attr at[2] = {AS_ATTR_I("axis", ax), AS_ATTR_V("sizes", ns, sz)};
        const char *names[AS_MAX_OUTS];
        int32_t opid;
        const as_op *op;
        for (k = 0; k < no; k++)
            names[k] = n->output[k][0] ? oname(o, n, k) : NULL;
        if (as_graph_add_op(o->g, "split", names, no, &x, 1, at, 2, &opid, o->err) != AS_OK) {
            char msg[sizeof o->err->msg];
            snprintf(msg, sizeof msg, "%s", o->err->msg);
            return ox_nerr(o, n, "%s", msg);
        }
        op = as_graph_op(o->g, opid);
        nout = op->nout;
        for (k = 0; k < nout && k < AS_MAX_OUTS; k++)
            outs[k] = op->out[k];
    }
    for (k = 0; k < no && k < nout; k++)
        AS_CHECK(ox_bind(o, n, k, outs[k]));
    return AS_OK;
}

static int
emit_slice(ox *o, const Onnx__NodeProto *n)
{
    int32_t x;
    int64_t b[AS_MAX_RANK], e[AS_MAX_RANK], st[AS_MAX_RANK];
    const as_shape *xs;
    int ok, i, full = 1;

    AS_CHECK(ox_in(o, n, 0, &x));
    xs = ox_shape(o, x);
    AS_CHECK(slice_params(o, n, xs, b, e, st, &ok));
    if (!ok)
        return ox_opaque(o, n, 0.0);
    for (i = 0; i < xs->rank; i++)
        full &= b[i] == 0 && e[i] == xs->dim[i] && st[i] == 1;
    if (full)
        return ox_bind(o, n, 0, x);
    {
        as_attr at[3] = {AS_ATTR_V("begin", xs->rank, b), AS_ATTR_V("end", xs->rank, e),
                         AS_ATTR_V("strides", xs->rank, st)};
        return emit1(o, n, "slice", &x, 1, at, 3);
    }
}

static int
emit_expand(ox *o, const Onnx__NodeProto *n)
{
    int32_t x;
    int64_t v[AS_MAX_RANK];
    int cnt, i;
    as_shape t, s;

    AS_CHECK(ox_in(o, n, 0, &x));
    AS_CHECK(ints_of(o, n, 1, NULL, v, AS_MAX_RANK, &cnt));
    if (cnt < 0)
        return ox_nerr(o, n, "needs a shape input");
    memset(&t, 0, sizeof t);
    t.rank = cnt;
    for (i = 0; i < cnt; i++)
        t.dim[i] = v[i];
    if (!bcast(ox_shape(o, x), &t, &s))
        return ox_nerr(o, n, "shape does not broadcast with the input");
    if (as_shape_equal(&s, ox_shape(o, x)))
        return ox_bind(o, n, 0, x);
    {
        as_attr at[1] = {AS_ATTR_V("shape", s.rank, s.dim)};
        return emit1(o, n, "broadcast", &x, 1, at, 1);
    }
}

static int
emit_tile(ox *o, const Onnx__NodeProto *n)
{
    int32_t x, y;
    int64_t rep[AS_MAX_RANK], d[AS_MAX_RANK], b[AS_MAX_RANK], f[AS_MAX_RANK];
    const as_shape *xs;
    int cnt, i;

    AS_CHECK(ox_in(o, n, 0, &x));
    xs = ox_shape(o, x);
    AS_CHECK(ints_of(o, n, 1, NULL, rep, AS_MAX_RANK, &cnt));
    if (cnt != xs->rank || 2 * cnt > AS_MAX_RANK)
        return ox_opaque(o, n, 0.0);
    for (i = 0; i < cnt; i++) {
        if (rep[i] < 1 || !as_mul_ok(rep[i], xs->dim[i], &f[i]))
            return ox_nerr(o, n, "repeat %lld of dim %d is out of range", (long long)rep[i], i);
        d[2 * i] = 1;
        d[2 * i + 1] = xs->dim[i];
        b[2 * i] = rep[i];
        b[2 * i + 1] = xs->dim[i];
    }
    AS_CHECK(reshape_to(o, n, x, 2 * cnt, d, 0, &y));
    {
        as_attr at[1] = {AS_ATTR_V("shape", 2 * cnt, b)};
        AS_CHECK(mid(o, n, "broadcast", &y, 1, at, 1, &y));
    }
    return reshape_to(o, n, y, cnt, f, 1, &y);
}

/* Gather: an embedding lookup, a slice for a constant scalar index, else an HLO gather. */
static int
emit_gather(ox *o, const Onnx__NodeProto *n)
{
    int32_t x, ix, y;
    const as_shape *xs, *is_;
    const ox_const *c = ox_cin(o, n, 1);
    int ax = 0, i, r, q;

    AS_CHECK(ox_in(o, n, 0, &x));
    xs = ox_shape(o, x);
    AS_CHECK(norm_axis(o, n, ox_attr_i(n, "axis", 0), xs->rank, &ax));
    if (c != NULL && c->i != NULL && c->n == 1) { /* x.select(ax, k) */
        int64_t k = c->i[0] < 0 ? c->i[0] + xs->dim[ax] : c->i[0];
        int64_t b[AS_MAX_RANK] = {0}, e[AS_MAX_RANK], od[AS_MAX_RANK];
        int nr = 0;
        if (k < 0 || k >= xs->dim[ax])
            return ox_nerr(o, n, "index %lld out of range", (long long)c->i[0]);
        for (i = 0; i < xs->rank; i++)
            e[i] = xs->dim[i];
        b[ax] = k;
        e[ax] = k + 1;
        {
            as_attr at[2] = {AS_ATTR_V("begin", xs->rank, b), AS_ATTR_V("end", xs->rank, e)};
            AS_CHECK(mid(o, n, "slice", &x, 1, at, 2, &y));
        }
        for (i = 0; i < c->shape.rank + xs->rank; i++)
            ;
        for (i = 0; i < xs->rank; i++) {
            if (i == ax && c->shape.rank == 1)
                od[nr++] = 1;
            else if (i != ax)
                od[nr++] = xs->dim[i];
        }
        return reshape_to(o, n, y, nr, od, 1, &y);
    }
    AS_CHECK(ox_in(o, n, 1, &ix));
    xs = ox_shape(o, x);
    is_ = ox_shape(o, ix);
    if (ax == 0 && xs->rank == 2 && as_dtype_is_float(xs->dtype) && !as_dtype_is_float(is_->dtype)) {
        int32_t in[2] = {x, ix};
        return emit1(o, n, "embedding", in, 2, NULL, 0);
    }
    q = is_->rank;
    r = xs->rank;
    if (r - 1 + q > AS_MAX_RANK)
        return ox_nerr(o, n, "result rank is more than %d", AS_MAX_RANK);
    {
        int64_t off[AS_MAX_RANK], col[1] = {ax}, map[1] = {ax}, sz[AS_MAX_RANK];
        int no = 0;
        int32_t in[2] = {x, ix};
        for (i = 0; i < ax; i++)
            off[no++] = i;
        for (i = ax + 1; i < r; i++)
            off[no++] = i - 1 + q;
        for (i = 0; i < r; i++)
            sz[i] = i == ax ? 1 : xs->dim[i];
        {
            as_attr at[5] = {AS_ATTR_V("offset_dims", no, off),
                             AS_ATTR_V("collapsed_slice_dims", 1, col),
                             AS_ATTR_V("start_index_map", 1, map), AS_ATTR_I("index_vector_dim", q),
                             AS_ATTR_V("slice_sizes", r, sz)};
            return emit1(o, n, "gather", in, 2, at, 5);
        }
    }
}

/* GatherElements: an HLO gather whose index vectors are (iota, ..., indices, ..., iota). */
static int
emit_gather_elements(ox *o, const Onnx__NodeProto *n)
{
    int32_t x, ix, parts[AS_MAX_RANK], v;
    const as_shape *xs;
    as_shape is_;
    int ax = 0, r, i;
    int64_t d[AS_MAX_RANK + 1], map[AS_MAX_RANK], col[AS_MAX_RANK], sz[AS_MAX_RANK];

    AS_CHECK(ox_in(o, n, 0, &x));
    AS_CHECK(ox_in(o, n, 1, &ix));
    xs = ox_shape(o, x);
    is_ = *ox_shape(o, ix);
    r = xs->rank;
    if (is_.rank != r || r + 1 > AS_MAX_RANK)
        return ox_nerr(o, n, "indices must have the rank of data (at most %d)", AS_MAX_RANK - 1);
    AS_CHECK(norm_axis(o, n, ox_attr_i(n, "axis", 0), r, &ax));
    for (i = 0; i < r; i++)
        d[i] = is_.dim[i];
    d[r] = 1;
    for (i = 0; i < r; i++) {
        if (i == ax)
            AS_CHECK(reshape_to(o, n, ix, r + 1, d, 0, &parts[i]));
        else {
            as_attr at[3] = {AS_ATTR_V("shape", r + 1, d), AS_ATTR_I("dim", i),
                             AS_ATTR_S("dtype", as_dtype_name(is_.dtype))};
            AS_CHECK(mid(o, n, "iota", NULL, 0, at, 3, &parts[i]));
        }
        map[i] = col[i] = i;
        sz[i] = 1;
    }
    {
        as_attr at[1] = {AS_ATTR_I("axis", r)};
        AS_CHECK(mid(o, n, "concat", parts, r, at, 1, &v));
    }
    {
        int32_t in[2] = {x, v};
        as_attr at[5] = {AS_ATTR_V("offset_dims", 0, map), AS_ATTR_V("collapsed_slice_dims", r, col),
                         AS_ATTR_V("start_index_map", r, map), AS_ATTR_I("index_vector_dim", r),
                         AS_ATTR_V("slice_sizes", r, sz)};
        return emit1(o, n, "gather", in, 2, at, 5);
    }
}

static int
emit_reduce(ox *o, const Onnx__NodeProto *n, const char *op)
{
    int32_t x;
    int64_t ax[AS_MAX_RANK];
    int cnt, i, keep = (int)ox_attr_i(n, "keepdims", 1);
    int from_input = (is(n, "ReduceSum") && o->opset >= 13) || o->opset >= 18;
    const as_shape *xs;

    AS_CHECK(ox_in(o, n, 0, &x));
    xs = ox_shape(o, x);
    AS_CHECK(ints_of(o, n, from_input ? 1 : -1, from_input ? NULL : "axes", ax, AS_MAX_RANK, &cnt));
    if (cnt <= 0) {
        if (cnt == 0 && ox_attr_i(n, "noop_with_empty_axes", 0))
            return ox_bind(o, n, 0, x);
        cnt = 0;
    }
    for (i = 0; i < cnt; i++) {
        int a = 0;
        AS_CHECK(norm_axis(o, n, ax[i], xs->rank, &a));
        ax[i] = a;
    }
    {
        as_attr at[2] = {AS_ATTR_V("dims", cnt, ax), AS_ATTR_I("keepdims", keep)};
        return emit1(o, n, op, &x, 1, at, 2);
    }
}

static int
emit_pad(ox *o, const Onnx__NodeProto *n)
{
    int32_t x;
    int64_t p[2 * AS_MAX_RANK], axes[AS_MAX_RANK], lo[AS_MAX_RANK] = {0}, hi[AS_MAX_RANK] = {0};
    int cnt, na = -1, i, r;
    char mode[32] = "constant";
    double v = 0.0;

    ox_attr_s(n, "mode", mode, sizeof mode);
    AS_CHECK(ox_in(o, n, 0, &x));
    r = ox_shape(o, x)->rank;
    if (strcmp(mode, "constant") != 0)
        return ox_opaque(o, n, 0.0);
    if (o->opset < 11) {
        cnt = ox_attr_ints(n, "pads", p, 2 * AS_MAX_RANK);
        v = ox_attr_f(n, "value", 0.0);
    } else {
        AS_CHECK(ints_of(o, n, 1, NULL, p, 2 * AS_MAX_RANK, &cnt));
        if (ox_has_in(n, 2) && !scalar_of(o, n, 2, &v))
            return ox_nerr(o, n, "constant_value must be a constant");
        AS_CHECK(ints_of(o, n, 3, NULL, axes, AS_MAX_RANK, &na));
    }
    if (na < 0) {
        na = r;
        for (i = 0; i < r; i++)
            axes[i] = i;
    }
    if (cnt != 2 * na)
        return ox_nerr(o, n, "pads has %d values for %d axes", cnt, na);
    for (i = 0; i < na; i++) {
        int a = 0;
        AS_CHECK(norm_axis(o, n, axes[i], r, &a));
        lo[a] = p[i];
        hi[a] = p[i + na];
        if (lo[a] > OX_DIM_MAX || hi[a] > OX_DIM_MAX)
            return ox_nerr(o, n, "pad out of range");
        if (lo[a] < 0 || hi[a] < 0)
            return ox_opaque(o, n, 0.0);
    }
    {
        as_attr at[3] = {AS_ATTR_V("lo", r, lo), AS_ATTR_V("hi", r, hi), AS_ATTR_F("value", v)};
        return emit1(o, n, "pad", &x, 1, at, 3);
    }
}

static int
emit_sce_loss(ox *o, const Onnx__NodeProto *n)
{
    char red[16] = "mean";
    int32_t x, lab, in[2], y;
    const as_shape *xs;
    int i;

    ox_attr_s(n, "reduction", red, sizeof red);
    if (ox_has_in(n, 2) || strcmp(red, "none") == 0)
        return ox_opaque(o, n, 0.0);
    AS_CHECK(ox_in(o, n, 0, &x));
    AS_CHECK(ox_in(o, n, 1, &lab));
    xs = ox_shape(o, x);
    if (xs->rank < 2)
        return ox_nerr(o, n, "scores must have rank >= 2");
    if (xs->rank > 2) { /* [N, C, d...] -> [N, d..., C] */
        int64_t p[AS_MAX_RANK];
        p[0] = 0;
        for (i = 2; i < xs->rank; i++)
            p[i - 1] = i;
        p[xs->rank - 1] = 1;
        {
            as_attr at[1] = {AS_ATTR_V("perm", xs->rank, p)};
            AS_CHECK(mid(o, n, "transpose", &x, 1, at, 1, &x));
        }
    }
    in[0] = x;
    in[1] = lab;
    if (strcmp(red, "sum") != 0)
        AS_CHECK(emit1(o, n, "cross_entropy", in, 2, NULL, 0));
    else {
        as_attr at[1] = {AS_ATTR_F("factor", (double)as_shape_numel(ox_shape(o, lab)))};
        AS_CHECK(mid(o, n, "cross_entropy", in, 2, NULL, 0, &y));
        AS_CHECK(emit1(o, n, "scale", &y, 1, at, 1));
    }
    if (out_used(o, n, 1)) {
        int32_t lp;
        as_attr at[1] = {AS_ATTR_I("axis", 1)};
        AS_CHECK(ox_in(o, n, 0, &x));
        AS_CHECK(ox_op(o, n, "log_softmax", oname(o, n, 1), &x, 1, at, 1, &lp, NULL));
        return ox_bind(o, n, 1, lp);
    }
    return AS_OK;
}

/* Elementwise ONNX ops kept as opaque: estimated at one FLOP per element. */
static int
opaque_ew(const Onnx__NodeProto *n)
{
    static const char *const ew[] = {"LeakyRelu", "Elu", "Selu", "Softplus", "Softsign",
                                     "HardSigmoid", "HardSwish", "Mish", "PRelu", "Clip",
                                     "Floor", "Ceil", "Round", "Sin", "Cos", "Mod", "Xor",
                                     "IsNaN", "IsInf", "Celu", "ThresholdedRelu", NULL};
    int i;

    for (i = 0; ew[i] != NULL; i++)
        if (is(n, ew[i]))
            return 1;
    return 0;
}

int
ox_emit(ox *o, int ni, const Onnx__NodeProto *n)
{
    const char *m;
    int32_t x, in[3];
    int done;

    if (n->domain != NULL && n->domain[0] != '\0' && strcmp(n->domain, "ai.onnx") != 0)
        return ox_opaque(o, n, 0.0);
    if ((m = map_of(unary_map, n->op_type)) != NULL && ox_nin(n) == 1) {
        AS_CHECK(ox_in(o, n, 0, &x));
        return emit1(o, n, m, &x, 1, NULL, 0);
    }
    if (is(n, "Identity")) {
        AS_CHECK(ox_in(o, n, 0, &x));
        return ox_bind(o, n, 0, x);
    }
    if (is(n, "Reciprocal")) {
        AS_CHECK(ox_in(o, n, 0, &in[1]));
        AS_CHECK(ox_scalar(o, ox_shape(o, in[1])->dtype, 1.0, &in[0]));
        return emit1(o, n, "div", in, 2, NULL, 0);
    }
    if ((m = map_of(binary_map, n->op_type)) != NULL) {
        AS_CHECK(try_gelu(o, ni, n, &done));
        if (done)
            return AS_OK;
        return emit_binary(o, n, m);
    }
    if ((m = map_of(cmp_map, n->op_type)) != NULL && ox_nin(n) == 2) {
        as_attr at[1] = {AS_ATTR_S("direction", m)};
        AS_CHECK(ox_in(o, n, 0, &in[0]));
        AS_CHECK(ox_in(o, n, 1, &in[1]));
        if (ox_shape(o, in[0])->dtype != ox_shape(o, in[1])->dtype)
            AS_CHECK(cast_to(o, n, in[1], ox_shape(o, in[0])->dtype, &in[1]));
        return emit1(o, n, "compare", in, 2, at, 1);
    }
    if (is(n, "Not")) {
        as_attr at[1] = {AS_ATTR_S("direction", "eq")};
        AS_CHECK(ox_in(o, n, 0, &in[0]));
        AS_CHECK(ox_scalar(o, AS_DT_PRED, 0.0, &in[1]));
        return emit1(o, n, "compare", in, 2, at, 1);
    }
    if (is(n, "Where")) {
        AS_CHECK(ox_in(o, n, 0, &in[0]));
        AS_CHECK(ox_in(o, n, 1, &in[1]));
        AS_CHECK(ox_in(o, n, 2, &in[2]));
        if (ox_shape(o, in[1])->dtype != ox_shape(o, in[2])->dtype)
            AS_CHECK(cast_to(o, n, in[2], ox_shape(o, in[1])->dtype, &in[2]));
        return emit1(o, n, "select", in, 3, NULL, 0);
    }
    if (is(n, "Cast")) {
        as_dtype dt;
        if (!ox_dtype((int32_t)ox_attr_i(n, "to", 0), &dt))
            return ox_nerr(o, n, "unsupported target type %lld",
                           (long long)ox_attr_i(n, "to", 0));
        AS_CHECK(ox_in(o, n, 0, &x));
        if (ox_shape(o, x)->dtype == dt)
            return ox_bind(o, n, 0, x);
        {
            as_attr at[1] = {AS_ATTR_S("dtype", as_dtype_name(dt))};
            return emit1(o, n, "cast", &x, 1, at, 1);
        }
    }
    if (is(n, "MatMul"))
        return emit_matmul(o, n);
    if (is(n, "Gemm"))
        return emit_gemm(o, n);
    if (is(n, "Conv"))
        return emit_conv(o, n);
    if (is(n, "MaxPool") || is(n, "AveragePool"))
        return emit_pool(o, n, is(n, "MaxPool"));
    if (is(n, "GlobalAveragePool") || is(n, "GlobalMaxPool"))
        return emit_global_pool(o, n, is(n, "GlobalMaxPool"));
    if (is(n, "BatchNormalization"))
        return emit_batchnorm(o, n);
    if (is(n, "LayerNormalization"))
        return emit_layernorm(o, n);
    if (is(n, "Softmax"))
        return emit_softmax(o, n, "softmax");
    if (is(n, "LogSoftmax"))
        return emit_softmax(o, n, "log_softmax");
    if (is(n, "Dropout"))
        return emit_dropout(o, n);
    if (is(n, "Reshape") || is(n, "Flatten") || is(n, "Squeeze") || is(n, "Unsqueeze"))
        return emit_view(o, n);
    if (is(n, "Transpose"))
        return emit_transpose(o, n);
    if (is(n, "Concat"))
        return emit_concat(o, n);
    if (is(n, "Split"))
        return emit_split(o, n);
    if (is(n, "Slice"))
        return emit_slice(o, n);
    if (is(n, "Expand"))
        return emit_expand(o, n);
    if (is(n, "Tile"))
        return emit_tile(o, n);
    if (is(n, "Gather"))
        return emit_gather(o, n);
    if (is(n, "GatherElements"))
        return emit_gather_elements(o, n);
    if (is(n, "ReduceMean"))
        return emit_reduce(o, n, "reduce_mean");
    if (is(n, "ReduceSum"))
        return emit_reduce(o, n, "reduce_sum");
    if (is(n, "ReduceMax"))
        return emit_reduce(o, n, "reduce_max");
    if (is(n, "ReduceMin"))
        return emit_reduce(o, n, "reduce_min");
    if (is(n, "Pad"))
        return emit_pad(o, n);
    if (is(n, "SoftmaxCrossEntropyLoss"))
        return emit_sce_loss(o, n);
    if (is(n, "ConstantOfShape"))
        return ox_nerr(o, n, "the shape input must be a constant");
    if (opaque_ew(n)) {
        as_shape s;
        double f = ox_in_shape(o, n, 0, &s) ? (double)as_shape_numel(&s) : 0.0;
        return ox_opaque(o, n, f);
    }
    return ox_opaque(o, n, 0.0);
}
