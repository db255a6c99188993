/* ops_hlo.c -- op family 'hlo': the XLA HLO constructs the other families
 * do not cover, used by the HLO importer (reader_hlo.c).
 *
 * dot_general, gather, scatter, dynamic_slice, dynamic_update_slice,
 * reduce_window and conv_general follow the HLO operation semantics
 * (https://openxla.org/xla/operation_semantics) and have double-precision
 * reference kernels.  The collectives already present in a dump
 * (all_reduce, all_gather, reduce_scatter, all_to_all, collective_permute)
 * and `opaque` (custom-call, while, conditional, unknown ops) have shape
 * inference and a cost estimate but no kernel: AS_OPF_OPAQUE, replicate only.
 * None has a gradient rule: an imported HLO module is already a full step.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

/* Is V[0..N) a list of distinct dims < RANK? */
static int
hlo_dims_ok(const int64_t *v, int n, int rank)
{
    int i, j;

    for (i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= rank)
            return 0;
        for (j = 0; j < i; j++)
            if (v[j] == v[i])
                return 0;
    }
    return 1;
}

static int
hlo_in_list(const int64_t *v, int n, int64_t x)
{
    int i;

    for (i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

/* An attribute list, empty when absent. */
static int
hlo_ints(const as_opinfo *info, const char *key, const int64_t **v)
{
    int n = OPI_INTS(info, key, v);

    if (n < 0) {
        *v = NULL;
        return 0;
    }
    return n;
}

/* ---- dot_general ---- */

typedef struct dot_dims {
    const int64_t *lb, *rb, *lc, *rc;
    int nb, nc;
    int lfree[AS_MAX_RANK], rfree[AS_MAX_RANK];
    int nlf, nrf;
} dot_dims;

static int
dot_get(const as_opinfo *info, dot_dims *d, as_err *err)
{
    const as_shape *a = &info->in[0], *b = &info->in[1];
    int nrb, nrc, i;

    d->nb = hlo_ints(info, "lhs_batch", &d->lb);
    nrb = hlo_ints(info, "rhs_batch", &d->rb);
    d->nc = hlo_ints(info, "lhs_contract", &d->lc);
    nrc = hlo_ints(info, "rhs_contract", &d->rc);
    if (d->nb != nrb || d->nc != nrc)
        return as_graph_i_shape_err(err, info, "lhs and rhs list different numbers of %s dims",
                                    d->nb != nrb ? "batch" : "contracting");
    if (!hlo_dims_ok(d->lb, d->nb, a->rank) || !hlo_dims_ok(d->rb, d->nb, b->rank) ||
        !hlo_dims_ok(d->lc, d->nc, a->rank) || !hlo_dims_ok(d->rc, d->nc, b->rank))
        return as_graph_i_shape_err(err, info, "batch/contracting dims out of range or repeated");
    for (i = 0; i < d->nb; i++)
        if (a->dim[d->lb[i]] != b->dim[d->rb[i]] || hlo_in_list(d->lc, d->nc, d->lb[i]) ||
            hlo_in_list(d->rc, d->nc, d->rb[i]))
            return as_graph_i_shape_err(err, info, "batch dim %d: sizes differ or overlap", i);
    for (i = 0; i < d->nc; i++)
        if (a->dim[d->lc[i]] != b->dim[d->rc[i]])
            return as_graph_i_shape_err(err, info,
                                        "contracting dims differ: lhs dim %d is %lld, rhs dim %d "
                                        "is %lld",
                                        (int)d->lc[i], (long long)a->dim[d->lc[i]], (int)d->rc[i],
                                        (long long)b->dim[d->rc[i]]);
    d->nlf = d->nrf = 0;
    for (i = 0; i < a->rank; i++)
        if (!hlo_in_list(d->lb, d->nb, i) && !hlo_in_list(d->lc, d->nc, i))
            d->lfree[d->nlf++] = i;
    for (i = 0; i < b->rank; i++)
        if (!hlo_in_list(d->rb, d->nb, i) && !hlo_in_list(d->rc, d->nc, i))
            d->rfree[d->nrf++] = i;
    if (d->nb + d->nlf + d->nrf > AS_MAX_RANK)
        return as_graph_i_shape_err(err, info, "result rank exceeds %d", AS_MAX_RANK);
    return AS_OK;
}

static int
dot_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    dot_dims d;
    int i, r = 0;

    AS_CHECK(as_graph_i_same_dtype(info, 0, 1, err));
    AS_CHECK(dot_get(info, &d, err));
    out->dtype = info->in[0].dtype;
    for (i = 0; i < d.nb; i++)
        out->dim[r++] = info->in[0].dim[d.lb[i]];
    for (i = 0; i < d.nlf; i++)
        out->dim[r++] = info->in[0].dim[d.lfree[i]];
    for (i = 0; i < d.nrf; i++)
        out->dim[r++] = info->in[1].dim[d.rfree[i]];
    out->rank = r;
    *nout = 1;
    return AS_OK;
}

/* Product of the contracting dims of the lhs. */
static double
dot_contract_size(const as_opinfo *info)
{
    const int64_t *lc;
    int n = hlo_ints(info, "lhs_contract", &lc), i;
    double k = 1.0;

    for (i = 0; i < n; i++)
        if (lc[i] >= 0 && lc[i] < info->in[0].rank)
            k *= (double)info->in[0].dim[lc[i]];
    return k;
}

static double
dot_flops(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 2.0 * dot_contract_size(info));
}

static void
dot_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *a = &info->in[0], *b = &info->in[1], *o = &info->out[0];
    int64_t sa[AS_MAX_RANK], sb[AS_MAX_RANK], oi[AS_MAX_RANK] = {0}, ci[AS_MAX_RANK] = {0};
    as_shape cs;
    dot_dims d;
    as_err e;
    int64_t k = 0;
    int i;

    if (dot_get(info, &d, &e) != AS_OK)
        return;
    as_graph_i_strides(a, sa);
    as_graph_i_strides(b, sb);
    cs.rank = d.nc;
    for (i = 0; i < d.nc; i++)
        cs.dim[i] = a->dim[d.lc[i]];
    do {
        int64_t abase = 0, bbase = 0;
        double acc = 0.0;
        int r = 0;
        for (i = 0; i < d.nb; i++, r++) {
            abase += oi[r] * sa[d.lb[i]];
            bbase += oi[r] * sb[d.rb[i]];
        }
        for (i = 0; i < d.nlf; i++, r++)
            abase += oi[r] * sa[d.lfree[i]];
        for (i = 0; i < d.nrf; i++, r++)
            bbase += oi[r] * sb[d.rfree[i]];
        memset(ci, 0, sizeof ci);
        do {
            int64_t ao = abase, bo = bbase;
            for (i = 0; i < d.nc; i++) {
                ao += ci[i] * sa[d.lc[i]];
                bo += ci[i] * sb[d.rc[i]];
            }
            acc += in[0][ao] * in[1][bo];
        } while (d.nc > 0 && as_graph_i_next(ci, &cs));
        out[0][k++] = acc;
    } while (o->rank > 0 && as_graph_i_next(oi, o));
}

/* ---- conv_general ---- */

/*
 * dim_labels "b01f_01io->b01f": for the input, kernel and output, where the
 * batch (b) / feature (f), input (i) / output (o) features and spatial dims
 * (0, 1, ...) sit.  SP[k] is the position of spatial dim k.
 */
typedef struct conv_layout {
    int nsp;
    int in_b, in_f, in_sp[AS_MAX_RANK];
    int k_i, k_o, k_sp[AS_MAX_RANK];
    int out_b, out_f, out_sp[AS_MAX_RANK];
} conv_layout;

/* One part of dim_labels: C1 and C2 once each, spatial digits 0..n-3 once each. */
static int
conv_parse_part(const char *s, size_t n, char c1, char c2, int *p1, int *p2, int *sp, int *nsp)
{
    unsigned seen = 0;
    size_t i;

    *p1 = *p2 = -1;
    *nsp = 0;
    if (n < 2 || n > AS_MAX_RANK)
        return 0;
    for (i = 0; i < n; i++) {
        int d = s[i] - '0';
        if (s[i] == c1 && *p1 < 0)
            *p1 = (int)i;
        else if (s[i] == c2 && *p2 < 0)
            *p2 = (int)i;
        else if (d >= 0 && d < (int)n - 2 && !(seen & 1u << d)) {
            seen |= 1u << d;
            sp[d] = (int)i;
            (*nsp)++;
        } else {
            return 0;
        }
    }
    return *p1 >= 0 && *p2 >= 0 && *nsp + 2 == (int)n;
}

static int
conv_layout_parse(const char *lab, conv_layout *l)
{
    const char *u = strchr(lab, '_'), *arrow = strstr(lab, "->");
    int n1, n2, n3;

    if (u == NULL || arrow == NULL || arrow < u)
        return 0;
    if (!conv_parse_part(lab, (size_t)(u - lab), 'b', 'f', &l->in_b, &l->in_f, l->in_sp, &n1) ||
        !conv_parse_part(u + 1, (size_t)(arrow - u - 1), 'i', 'o', &l->k_i, &l->k_o, l->k_sp,
                         &n2) ||
        !conv_parse_part(arrow + 2, strlen(arrow + 2), 'b', 'f', &l->out_b, &l->out_f,
                         l->out_sp, &n3))
        return 0;
    l->nsp = n1;
    return n1 == n2 && n2 == n3;
}

static int64_t
conv_at(const int64_t *v, int n, int k, int64_t dflt)
{
    return k < n ? v[k] : dflt;
}

/* The window of a conv_general: per spatial dim, defaults filled in. */
typedef struct conv_win {
    conv_layout l;
    int64_t st[AS_MAX_RANK], lo[AS_MAX_RANK], hi[AS_MAX_RANK];
    int64_t ld[AS_MAX_RANK], rd[AS_MAX_RANK], rev[AS_MAX_RANK];
    int64_t groups, bgroups;
} conv_win;

/* Read and check the attributes and operand shapes of a conv_general. */
static int
conv_get(const as_opinfo *info, conv_win *c, as_err *err)
{
    static const char *const keys[6] = {"stride", "pad_lo", "pad_hi", "lhs_dilate",
                                        "rhs_dilate", "rhs_reversal"};
    static const int64_t dflt[6] = {1, 0, 0, 1, 1, 0};
    static const int64_t minv[6] = {1, INT64_MIN, INT64_MIN, 1, 1, 0};
    int64_t *dst[6] = {c->st, c->lo, c->hi, c->ld, c->rd, c->rev};
    const as_shape *x = &info->in[0], *w = &info->in[1];
    const char *lab = OPI_STR(info, "dim_labels", "");
    int a, k;

    if (!conv_layout_parse(lab, &c->l))
        return as_graph_i_shape_err(err, info, "bad dim_labels '%s' (want e.g. b01f_01io->b01f)",
                                    lab);
    if (x->rank != c->l.nsp + 2 || w->rank != c->l.nsp + 2)
        return as_graph_i_shape_err(err, info, "dim_labels '%s' need rank %d operands, got %d "
                                    "and %d", lab, c->l.nsp + 2, x->rank, w->rank);
    for (a = 0; a < 6; a++) {
        const int64_t *v;
        int n = hlo_ints(info, keys[a], &v);
        if (n != 0 && n != c->l.nsp)
            return as_graph_i_shape_err(err, info, "%s has %d entries for %d spatial dims",
                                        keys[a], n, c->l.nsp);
        for (k = 0; k < c->l.nsp; k++) {
            dst[a][k] = conv_at(v, n, k, dflt[a]);
            /* |values| <= 2^40 keep the window arithmetic (conv_infer, the evaluator) in range */
            if (dst[a][k] < minv[a] || (a == 5 && dst[a][k] > 1) ||
                dst[a][k] > ((int64_t)1 << 40) || dst[a][k] < -((int64_t)1 << 40))
                return as_graph_i_shape_err(err, info, "%s entry %d is %lld", keys[a], k,
                                            (long long)dst[a][k]);
        }
    }
    c->groups = OPI_INT(info, "feature_group_count", 1);
    c->bgroups = OPI_INT(info, "batch_group_count", 1);
    if (c->groups < 1 || c->bgroups < 1)
        return as_graph_i_shape_err(err, info, "group counts must be >= 1");
    if (c->groups > 1 && c->bgroups > 1)
        return as_graph_i_shape_err(err, info, "feature_group_count and batch_group_count cannot "
                                    "both be > 1");
    if (x->dim[c->l.in_f] != w->dim[c->l.k_i] * c->groups)
        return as_graph_i_shape_err(err, info, "input has %lld features but the kernel expects "
                                    "%lld x %lld groups", (long long)x->dim[c->l.in_f],
                                    (long long)w->dim[c->l.k_i], (long long)c->groups);
    if (w->dim[c->l.k_o] % (c->groups * c->bgroups) != 0)
        return as_graph_i_shape_err(err, info, "%lld output features not divisible by the group "
                                    "count", (long long)w->dim[c->l.k_o]);
    if (x->dim[c->l.in_b] % c->bgroups != 0)
        return as_graph_i_shape_err(err, info, "batch %lld not divisible by batch_group_count "
                                    "%lld", (long long)x->dim[c->l.in_b], (long long)c->bgroups);
    return AS_OK;
}

static int
conv_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[0], *w = &info->in[1];
    conv_win c;
    int k;

    AS_CHECK(as_graph_i_same_dtype(info, 0, 1, err));
    AS_CHECK(conv_get(info, &c, err));
    out->dtype = x->dtype;
    out->rank = c.l.nsp + 2;
    out->dim[c.l.out_b] = x->dim[c.l.in_b] / c.bgroups;
    out->dim[c.l.out_f] = w->dim[c.l.k_o];
    for (k = 0; k < c.l.nsp; k++) {
        int64_t in, win;
        /* dilated and padded sizes, checked: dims, dilations and pads come from the input */
        if (!as_mul_ok(x->dim[c.l.in_sp[k]] - 1, c.ld[k], &in) || !as_add_ok(in, 1, &in) ||
            !as_add_ok(in, c.lo[k], &in) || !as_add_ok(in, c.hi[k], &in) ||
            !as_mul_ok(w->dim[c.l.k_sp[k]] - 1, c.rd[k], &win) || !as_add_ok(win, 1, &win))
            return as_graph_i_shape_err(err, info, "spatial dim %d: the padded or dilated size "
                                        "overflows 64 bits", k);
        if (x->dim[c.l.in_sp[k]] < 1 || w->dim[c.l.k_sp[k]] < 1 || in < win)
            return as_graph_i_shape_err(err, info, "spatial dim %d: window %lld larger than the "
                                        "padded input %lld", k, (long long)win, (long long)in);
        out->dim[c.l.out_sp[k]] = (in - win) / c.st[k] + 1;
    }
    *nout = 1;
    return AS_OK;
}

/* 2 * output elements * (input features / groups) * kernel window size. */
static double
conv_flops(const as_opinfo *info)
{
    conv_win c;
    as_err e;
    double k = 1.0;
    int i;

    if (conv_get(info, &c, &e) != AS_OK)
        return 0.0;
    for (i = 0; i < c.l.nsp; i++)
        k *= (double)info->in[1].dim[c.l.k_sp[i]];
    k *= (double)info->in[1].dim[c.l.k_i];
    return as_graph_i_flops_per_out(info, 2.0 * k);
}

/*
 * Reference kernel (HLO semantics).  Output feature o belongs to feature
 * group o / (O / feature_group_count), which reads that group's input
 * features, and to batch group o / (O / batch_group_count), which reads input
 * batch bg * (N / batch_group_count) + b.  Spatially, output position p and
 * kernel tap t read the lhs-dilated, padded input at p * stride - pad_lo +
 * t * rhs_dilate, which is input element q / lhs_dilate when q is a multiple
 * of lhs_dilate (holes and padding read 0); rhs_reversal uses tap K-1-t.
 */
static void
conv_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *x = &info->in[0], *w = &info->in[1], *o = &info->out[0];
    int64_t sx[AS_MAX_RANK], sw[AS_MAX_RANK], oi[AS_MAX_RANK] = {0}, n = 0;
    int64_t cg, og, obg, nb;
    as_shape ks; /* the kernel's spatial extent */
    conv_win c;
    as_err e;
    int k;

    if (conv_get(info, &c, &e) != AS_OK || as_shape_numel(o) == 0)
        return;
    as_graph_i_strides(x, sx);
    as_graph_i_strides(w, sw);
    cg = w->dim[c.l.k_i];
    og = w->dim[c.l.k_o] / c.groups;
    obg = w->dim[c.l.k_o] / c.bgroups;
    nb = x->dim[c.l.in_b] / c.bgroups;
    ks.rank = c.l.nsp;
    for (k = 0; k < c.l.nsp; k++)
        ks.dim[k] = w->dim[c.l.k_sp[k]];
    do {
        int64_t f = oi[c.l.out_f], xbase, wbase, ci, ti[AS_MAX_RANK] = {0};
        double acc = 0.0;
        xbase = ((f / obg) * nb + oi[c.l.out_b]) * sx[c.l.in_b] + (f / og) * cg * sx[c.l.in_f];
        wbase = f * sw[c.l.k_o];
        if (as_shape_numel(&ks) > 0)
            do {
                int64_t xo = xbase, wo = wbase;
                int inb = 1;
                for (k = 0; k < c.l.nsp && inb; k++) {
                    int64_t q = oi[c.l.out_sp[k]] * c.st[k] - c.lo[k] + ti[k] * c.rd[k];
                    int64_t xd = x->dim[c.l.in_sp[k]];
                    inb = q >= 0 && q % c.ld[k] == 0 && q / c.ld[k] < xd;
                    xo += (q / c.ld[k]) * sx[c.l.in_sp[k]];
                    wo += (c.rev[k] ? ks.dim[k] - 1 - ti[k] : ti[k]) * sw[c.l.k_sp[k]];
                }
                if (inb)
                    for (ci = 0; ci < cg; ci++)
                        acc += in[0][xo + ci * sx[c.l.in_f]] * in[1][wo + ci * sw[c.l.k_i]];
            } while (ks.rank > 0 && as_graph_i_next(ti, &ks));
        out[0][n++] = acc;
    } while (o->rank > 0 && as_graph_i_next(oi, o));
}

/* ---- gather ---- */

typedef struct gather_dims {
    const int64_t *offset, *collapsed, *map, *sizes;
    int noff, ncol, nmap, nsizes;
    int ivd;
} gather_dims;

static void
gather_get(const as_opinfo *info, gather_dims *g)
{
    g->noff = hlo_ints(info, "offset_dims", &g->offset);
    g->ncol = hlo_ints(info, "collapsed_slice_dims", &g->collapsed);
    g->nmap = hlo_ints(info, "start_index_map", &g->map);
    g->nsizes = hlo_ints(info, "slice_sizes", &g->sizes);
    g->ivd = (int)OPI_INT(info, "index_vector_dim", 0);
}

static int
gather_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[0], *ix = &info->in[1];
    int nbatch, r, k = 0, b = 0, i;
    int64_t nvec;
    gather_dims g;

    AS_CHECK(as_graph_i_need_int(info, 1, err));
    gather_get(info, &g);
    if (g.ivd < 0 || g.ivd > ix->rank)
        return as_graph_i_shape_err(err, info, "index_vector_dim %d out of range", g.ivd);
    nvec = g.ivd < ix->rank ? ix->dim[g.ivd] : 1;
    nbatch = ix->rank - (g.ivd < ix->rank ? 1 : 0);
    r = nbatch + g.noff;
    if (g.nsizes != x->rank || nvec != g.nmap || !hlo_dims_ok(g.map, g.nmap, x->rank) ||
        !hlo_dims_ok(g.collapsed, g.ncol, x->rank) || g.noff + g.ncol != x->rank ||
        r > AS_MAX_RANK || !hlo_dims_ok(g.offset, g.noff, r))
        return as_graph_i_shape_err(err, info, "inconsistent gather dimension numbers");
    for (i = 0; i < x->rank; i++)
        if (g.sizes[i] < 0 || g.sizes[i] > x->dim[i] ||
            (hlo_in_list(g.collapsed, g.ncol, i) && g.sizes[i] != 1))
            return as_graph_i_shape_err(err, info, "slice size %d out of range", i);
    out->dtype = x->dtype;
    out->rank = r;
    for (i = 0; i < r; i++) {
        if (hlo_in_list(g.offset, g.noff, i)) {
            while (hlo_in_list(g.collapsed, g.ncol, k))
                k++;
            out->dim[i] = g.sizes[k++];
        } else {
            if (b == g.ivd)
                b++;
            out->dim[i] = ix->dim[b++];
        }
    }
    *nout = 1;
    return AS_OK;
}

static int64_t
hlo_clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void
gather_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *x = &info->in[0], *ix = &info->in[1], *o = &info->out[0];
    int64_t sx[AS_MAX_RANK], si[AS_MAX_RANK], oi[AS_MAX_RANK] = {0}, n = 0;
    gather_dims g;

    gather_get(info, &g);
    as_graph_i_strides(x, sx);
    as_graph_i_strides(ix, si);
    do {
        int64_t bidx[AS_MAX_RANK] = {0}, pos[AS_MAX_RANK] = {0}, off = 0;
        int i, b = 0, k = 0;
        for (i = 0; i < o->rank; i++)
            if (!hlo_in_list(g.offset, g.noff, i)) {
                if (b == g.ivd)
                    b++;
                bidx[b++] = oi[i];
            }
        for (i = 0; i < g.nmap; i++) {
            int64_t io = 0;
            int d;
            for (d = 0; d < ix->rank; d++)
                io += (d == g.ivd ? i : bidx[d]) * si[d];
            pos[g.map[i]] = (int64_t)in[1][io];
        }
        for (i = 0; i < x->rank; i++)
            pos[i] = hlo_clamp(pos[i], 0, x->dim[i] - g.sizes[i]);
        for (i = 0; i < o->rank; i++)
            if (hlo_in_list(g.offset, g.noff, i)) {
                while (hlo_in_list(g.collapsed, g.ncol, k))
                    k++;
                pos[k++] += oi[i];
            }
        for (i = 0; i < x->rank; i++)
            off += pos[i] * sx[i];
        out[0][n++] = in[0][off];
    } while (o->rank > 0 && as_graph_i_next(oi, o));
}

static double
hlo_flops_zero(const as_opinfo *info)
{
    (void)info;
    return 0.0;
}

static void
gather_irange(const as_opinfo *info, int j, int64_t *lo, int64_t *hi)
{
    int64_t m = info->in[0].dim[0];
    int i;

    (void)j;
    for (i = 1; i < info->in[0].rank; i++)
        if (info->in[0].dim[i] < m)
            m = info->in[0].dim[i];
    *lo = 0;
    *hi = m - 1;
}

/* ---- scatter ---- */

typedef struct scatter_dims {
    const int64_t *window, *inserted, *map;
    int nwin, nins, nmap, ivd;
} scatter_dims;

static void
scatter_get(const as_opinfo *info, scatter_dims *s)
{
    s->nwin = hlo_ints(info, "update_window_dims", &s->window);
    s->nins = hlo_ints(info, "inserted_window_dims", &s->inserted);
    s->nmap = hlo_ints(info, "scatter_dims_to_operand_dims", &s->map);
    s->ivd = (int)OPI_INT(info, "index_vector_dim", 0);
}

static int
scatter_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[0], *ix = &info->in[1], *u = &info->in[2];
    const char *comb = OPI_STR(info, "combine", "assign");
    int nbatch;
    scatter_dims s;

    AS_CHECK(as_graph_i_need_int(info, 1, err));
    AS_CHECK(as_graph_i_same_dtype(info, 0, 2, err));
    scatter_get(info, &s);
    if (strcmp(comb, "assign") != 0 && strcmp(comb, "add") != 0 && strcmp(comb, "max") != 0 &&
        strcmp(comb, "min") != 0 && strcmp(comb, "mul") != 0)
        return as_graph_i_shape_err(err, info, "unknown combine '%s'", comb);
    if (s.ivd < 0 || s.ivd > ix->rank)
        return as_graph_i_shape_err(err, info, "index_vector_dim %d out of range", s.ivd);
    nbatch = ix->rank - (s.ivd < ix->rank ? 1 : 0);
    if (u->rank != nbatch + s.nwin || s.nwin + s.nins != x->rank ||
        (s.ivd < ix->rank ? ix->dim[s.ivd] : 1) != s.nmap ||
        !hlo_dims_ok(s.window, s.nwin, u->rank) || !hlo_dims_ok(s.inserted, s.nins, x->rank) ||
        !hlo_dims_ok(s.map, s.nmap, x->rank))
        return as_graph_i_shape_err(err, info, "inconsistent scatter dimension numbers");
    {
        /* Update dims: scatter dims match the indices' batch dims, window dims fit the operand. */
        int i, b = 0, k = 0;
        for (i = 0; i < u->rank; i++) {
            if (!hlo_in_list(s.window, s.nwin, i)) {
                if (b == s.ivd)
                    b++;
                if (b >= ix->rank || u->dim[i] != ix->dim[b])
                    return as_graph_i_shape_err(err, info,
                                                "updates dim %d does not match the indices", i);
                b++;
            } else {
                while (hlo_in_list(s.inserted, s.nins, k))
                    k++;
                if (k >= x->rank || u->dim[i] > x->dim[k])
                    return as_graph_i_shape_err(err, info,
                                                "updates window dim %d is larger than the operand",
                                                i);
                k++;
            }
        }
    }
    *out = *x;
    *nout = 1;
    return AS_OK;
}

static double
hlo_combine(const char *c, double a, double b)
{
    switch (c[0]) {
    case 'a':
        return c[1] == 'd' ? a + b : b;
    case 'm':
        return c[1] == 'u' ? a * b : c[1] == 'a' ? (a > b ? a : b) : (a < b ? a : b);
    default:
        return b;
    }
}

static void
scatter_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *x = &info->in[0], *ix = &info->in[1], *u = &info->in[2];
    const char *comb = OPI_STR(info, "combine", "assign");
    int64_t sx[AS_MAX_RANK], si[AS_MAX_RANK], ui[AS_MAX_RANK] = {0}, n = 0;
    scatter_dims s;

    scatter_get(info, &s);
    as_graph_i_strides(x, sx);
    as_graph_i_strides(ix, si);
    memcpy(out[0], in[0], (size_t)as_shape_numel(x) * sizeof(double));
    do {
        int64_t bidx[AS_MAX_RANK] = {0}, pos[AS_MAX_RANK] = {0}, off = 0;
        int i, b = 0, k = 0, inb = 1;
        for (i = 0; i < u->rank; i++)
            if (!hlo_in_list(s.window, s.nwin, i)) {
                if (b == s.ivd)
                    b++;
                bidx[b++] = ui[i];
            }
        for (i = 0; i < s.nmap; i++) {
            int64_t io = 0;
            int d;
            for (d = 0; d < ix->rank; d++)
                io += (d == s.ivd ? i : bidx[d]) * si[d];
            pos[s.map[i]] = (int64_t)in[1][io];
        }
        for (i = 0; i < u->rank; i++)
            if (hlo_in_list(s.window, s.nwin, i)) {
                while (hlo_in_list(s.inserted, s.nins, k))
                    k++;
                pos[k++] += ui[i];
            }
        for (i = 0; i < x->rank; i++) {
            inb &= pos[i] >= 0 && pos[i] < x->dim[i];
            off += pos[i] * sx[i];
        }
        if (inb) /* XLA skips out-of-bounds updates */
            out[0][off] = hlo_combine(comb, out[0][off], in[2][n]);
        n++;
    } while (u->rank > 0 && as_graph_i_next(ui, u));
}

static double
scatter_flops(const as_opinfo *info)
{
    const char *comb = OPI_STR(info, "combine", "assign");

    return strcmp(comb, "assign") == 0 ? 0.0 : (double)as_shape_numel(&info->in[2]);
}

/* ---- dynamic_slice, dynamic_update_slice ---- */

/* Check the start indices from input FIRST on: one integer scalar per dim of input 0. */
static int
dyn_check_idx(const as_opinfo *info, int first, as_err *err)
{
    int i;

    if (info->nin - first != info->in[0].rank)
        return as_graph_i_shape_err(err, info, "needs %d start indices, got %d",
                                    info->in[0].rank, info->nin - first);
    for (i = first; i < info->nin; i++) {
        AS_CHECK(as_graph_i_need_int(info, i, err));
        if (info->in[i].rank != 0)
            return as_graph_i_shape_err(err, info, "start index %d must be a scalar", i - first);
    }
    return AS_OK;
}

static int
dslice_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const int64_t *sz;
    int n = hlo_ints(info, "sizes", &sz), i;

    AS_CHECK(dyn_check_idx(info, 1, err));
    if (n != info->in[0].rank)
        return as_graph_i_shape_err(err, info, "sizes has %d entries for rank %d", n,
                                    info->in[0].rank);
    *out = info->in[0];
    for (i = 0; i < n; i++) {
        if (sz[i] < 0 || sz[i] > info->in[0].dim[i])
            return as_graph_i_shape_err(err, info, "size %lld of dim %d out of range",
                                        (long long)sz[i], i);
        out->dim[i] = sz[i];
    }
    *nout = 1;
    return AS_OK;
}

/* Start position clamped so that a block of SIZE fits (HLO semantics). */
static void
dyn_starts(const as_opinfo *info, const double *const *in, int first, const as_shape *blk,
           int64_t *start)
{
    int i;

    for (i = 0; i < info->in[0].rank; i++)
        start[i] = hlo_clamp((int64_t)in[first + i][0], 0, info->in[0].dim[i] - blk->dim[i]);
}

static void
dslice_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *x = &info->in[0], *o = &info->out[0];
    int64_t sx[AS_MAX_RANK], st[AS_MAX_RANK], oi[AS_MAX_RANK] = {0}, n = 0;

    as_graph_i_strides(x, sx);
    dyn_starts(info, in, 1, o, st);
    if (as_shape_numel(o) == 0)
        return;
    do {
        int64_t off = 0;
        int i;
        for (i = 0; i < x->rank; i++)
            off += (st[i] + oi[i]) * sx[i];
        out[0][n++] = in[0][off];
    } while (o->rank > 0 && as_graph_i_next(oi, o));
}

static int
dupdate_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    int i;

    AS_CHECK(as_graph_i_same_dtype(info, 0, 1, err));
    AS_CHECK(dyn_check_idx(info, 2, err));
    if (info->in[1].rank != info->in[0].rank)
        return as_graph_i_shape_err(err, info, "update rank %d differs from operand rank %d",
                                    info->in[1].rank, info->in[0].rank);
    for (i = 0; i < info->in[0].rank; i++)
        if (info->in[1].dim[i] > info->in[0].dim[i])
            return as_graph_i_shape_err(err, info, "update larger than operand in dim %d", i);
    *out = info->in[0];
    *nout = 1;
    return AS_OK;
}

static void
dupdate_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *x = &info->in[0], *u = &info->in[1];
    int64_t sx[AS_MAX_RANK], st[AS_MAX_RANK], ui[AS_MAX_RANK] = {0}, n = 0;

    as_graph_i_strides(x, sx);
    dyn_starts(info, in, 2, u, st);
    memcpy(out[0], in[0], (size_t)as_shape_numel(x) * sizeof(double));
    if (as_shape_numel(u) == 0)
        return;
    do {
        int64_t off = 0;
        int i;
        for (i = 0; i < x->rank; i++)
            off += (st[i] + ui[i]) * sx[i];
        out[0][off] = in[1][n++];
    } while (u->rank > 0 && as_graph_i_next(ui, u));
}

static void
dyn_irange(const as_opinfo *info, int j, int64_t *lo, int64_t *hi)
{
    int first = info->nin - info->in[0].rank, d = j - first;

    *lo = 0;
    *hi = d >= 0 && d < info->in[0].rank ? info->in[0].dim[d] - 1 : 0;
}

/* ---- reduce_window ---- */

static int
rwin_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const as_shape *x = &info->in[0];
    const int64_t *win, *st, *lo, *hi;
    int nw = hlo_ints(info, "window", &win), ns = hlo_ints(info, "stride", &st);
    int nlo = hlo_ints(info, "pad_lo", &lo), nhi = hlo_ints(info, "pad_hi", &hi), i;
    const char *red = OPI_STR(info, "reducer", "sum");

    if (strcmp(red, "sum") != 0 && strcmp(red, "max") != 0 && strcmp(red, "min") != 0)
        return as_graph_i_shape_err(err, info, "unknown reducer '%s'", red);
    if (nw != x->rank || (ns != 0 && ns != x->rank) || (nlo != 0 && nlo != x->rank) ||
        (nhi != 0 && nhi != x->rank))
        return as_graph_i_shape_err(err, info, "window attributes need %d entries", x->rank);
    *out = *x;
    for (i = 0; i < x->rank; i++) {
        int64_t s = conv_at(st, ns, i, 1);
        int64_t in = x->dim[i] + conv_at(lo, nlo, i, 0) + conv_at(hi, nhi, i, 0);
        if (win[i] < 1 || s < 1 || in < win[i])
            return as_graph_i_shape_err(err, info, "window does not fit dim %d", i);
        out->dim[i] = (in - win[i]) / s + 1;
    }
    *nout = 1;
    return AS_OK;
}

static void
rwin_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    const as_shape *x = &info->in[0], *o = &info->out[0];
    const int64_t *win, *st, *lo;
    int ns = hlo_ints(info, "stride", &st), nlo = hlo_ints(info, "pad_lo", &lo);
    const char *red = OPI_STR(info, "reducer", "sum");
    double init = OPI_FLOAT(info, "init", 0.0);
    int64_t sx[AS_MAX_RANK], oi[AS_MAX_RANK] = {0}, n = 0;
    as_shape ws;
    int i;

    ws.rank = hlo_ints(info, "window", &win);
    for (i = 0; i < ws.rank; i++)
        ws.dim[i] = win[i];
    as_graph_i_strides(x, sx);
    do {
        int64_t wi[AS_MAX_RANK] = {0};
        double acc = init;
        do {
            int64_t off = 0;
            int inb = 1;
            for (i = 0; i < x->rank; i++) {
                int64_t p = oi[i] * conv_at(st, ns, i, 1) + wi[i] - conv_at(lo, nlo, i, 0);
                inb &= p >= 0 && p < x->dim[i];
                off += p * sx[i];
            }
            if (inb) /* padding holds the init value */
                acc = red[1] == 'u' ? acc + in[0][off] : hlo_combine(red, acc, in[0][off]);
        } while (ws.rank > 0 && as_graph_i_next(wi, &ws));
        out[0][n++] = acc;
    } while (o->rank > 0 && as_graph_i_next(oi, o));
}

static double
rwin_flops(const as_opinfo *info)
{
    const int64_t *win;
    int n = hlo_ints(info, "window", &win), i;
    double k = 1.0;

    for (i = 0; i < n; i++)
        k *= (double)win[i];
    return as_graph_i_flops_per_out(info, k);
}

/* ---- collectives ---- */

static int
coll_group(const as_opinfo *info, int64_t *gs, as_err *err)
{
    *gs = OPI_INT(info, "group_size", 1);
    if (*gs < 1)
        return as_graph_i_shape_err(err, info, "group_size must be >= 1");
    return AS_OK;
}

static int
coll_same_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    int64_t gs;

    AS_CHECK(coll_group(info, &gs, err));
    *out = info->in[0];
    *nout = 1;
    return AS_OK;
}

/* all_gather multiplies dim `dim` by the group size; reduce_scatter divides it. */
static int
coll_dim_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    int64_t gs;
    int d;

    AS_CHECK(coll_group(info, &gs, err));
    if (info->in[0].rank == 0 && gs == 1) { /* scalars ride along in combined collectives */
        *out = info->in[0];
        *nout = 1;
        return AS_OK;
    }
    if (!as_graph_i_axis(OPI_INT(info, "dim", 0), info->in[0].rank, &d))
        return as_graph_i_shape_err(err, info, "dim %lld out of range for rank %d",
                                    (long long)OPI_INT(info, "dim", 0), info->in[0].rank);
    *out = info->in[0];
    if (strcmp(info->def->name, "all_gather") == 0) {
        if (!as_mul_ok(out->dim[d], gs, &out->dim[d]))
            return as_graph_i_shape_err(err, info, "gathered size overflows");
    } else {
        if (out->dim[d] % gs != 0)
            return as_graph_i_shape_err(err, info, "dim %d (%lld) not divisible by group size "
                                        "%lld", d, (long long)out->dim[d], (long long)gs);
        out->dim[d] /= gs;
    }
    *nout = 1;
    return AS_OK;
}

/* Reductions: one combine per received element ((g-1)/g of the input per device). */
static double
coll_reduce_flops(const as_opinfo *info)
{
    double gs = (double)OPI_INT(info, "group_size", 1);

    return (double)as_shape_numel(&info->in[0]) * (gs - 1.0) / gs;
}

/* ---- opaque ---- */

/*
 * Output shapes come from attributes: out_dtypes "f32,s32", out_ranks [2,0],
 * out_dims [8,512] (the dims of all outputs, concatenated).
 */
static int
opaque_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    const char *dt = OPI_STR(info, "out_dtypes", "");
    const int64_t *rk, *dm;
    int nr = hlo_ints(info, "out_ranks", &rk), nd = hlo_ints(info, "out_dims", &dm);
    int i, j, used = 0;

    if (nr > AS_MAX_OUTS)
        return as_graph_i_shape_err(err, info, "too many outputs (%d)", nr);
    for (i = 0; i < nr; i++) {
        const char *end = strchr(dt, ',');
        size_t len = end != NULL ? (size_t)(end - dt) : strlen(dt);
        if (!as_dtype_parse(dt, len, &out[i].dtype))
            return as_graph_i_shape_err(err, info, "out_dtypes: bad type for output %d", i);
        if (rk[i] < 0 || rk[i] > AS_MAX_RANK || used + rk[i] > nd)
            return as_graph_i_shape_err(err, info, "out_ranks/out_dims inconsistent");
        out[i].rank = (int)rk[i];
        for (j = 0; j < out[i].rank; j++)
            out[i].dim[j] = dm[used++];
        dt = end != NULL ? end + 1 : dt + len;
    }
    if (used != nd || *dt != '\0')
        return as_graph_i_shape_err(err, info, "out_dims/out_dtypes have extra entries");
    *nout = nr;
    return AS_OK;
}

static double
opaque_flops(const as_opinfo *info)
{
    return OPI_FLOAT(info, "flops", 0.0);
}

#define COLL_FLAGS (AS_OPF_COLLECTIVE | AS_OPF_OPAQUE | AS_OPF_NOGRAD)

const as_op_def as_ops_hlo[] = {
    {"all_gather", 1, 1, COLL_FLAGS, 0, "dim:i group_size:i=1",
     "collective in the imported module: gather along dim over a group", coll_dim_infer,
     hlo_flops_zero, NULL, NULL, NULL, NULL},
    {"all_reduce", 1, 1, COLL_FLAGS, 0, "reducer:s=sum group_size:i=1",
     "collective in the imported module: reduce over a group", coll_same_infer,
     coll_reduce_flops, NULL, NULL, NULL, NULL},
    {"all_to_all", 1, 1, COLL_FLAGS, 0, "dim:i=0 group_size:i=1",
     "collective in the imported module: all-to-all exchange", coll_same_infer, hlo_flops_zero,
     NULL, NULL, NULL, NULL},
    {"collective_permute", 1, 1, COLL_FLAGS, 0, "group_size:i=1",
     "collective in the imported module: send to a peer", coll_same_infer, hlo_flops_zero, NULL,
     NULL, NULL, NULL},
    {"conv_general", 2, 2, 0, 0,
     "dim_labels:s stride:I=[] pad_lo:I=[] pad_hi:I=[] lhs_dilate:I=[] rhs_dilate:I=[] "
     "rhs_reversal:I=[] feature_group_count:i=1 batch_group_count:i=1",
     "HLO convolution: any dim_labels layout, 1-3+ spatial dims, window, groups", conv_infer,
     conv_flops, NULL, conv_kernel, NULL, NULL},
    {"dot_general", 2, 2, 0, 0, "lhs_batch:I=[] rhs_batch:I=[] lhs_contract:I=[] rhs_contract:I=[]",
     "HLO dot: out = batch dims, lhs free dims, rhs free dims", dot_infer, dot_flops, NULL,
     dot_kernel, NULL, NULL},
    {"dynamic_slice", 2, 2, AS_OPF_VARIADIC, ~1u, "sizes:I",
     "x[start : start + sizes] (one scalar start per dim, clamped)", dslice_infer,
     hlo_flops_zero, NULL, dslice_kernel, NULL, dyn_irange},
    {"dynamic_update_slice", 3, 3, AS_OPF_VARIADIC, ~3u, "",
     "x with update written at start (one scalar start per dim, clamped)", dupdate_infer,
     hlo_flops_zero, NULL, dupdate_kernel, NULL, dyn_irange},
    {"gather", 2, 2, 0, 0x2u,
     "offset_dims:I collapsed_slice_dims:I start_index_map:I index_vector_dim:i slice_sizes:I",
     "HLO gather (starts clamped into range)", gather_infer, hlo_flops_zero, NULL, gather_kernel,
     NULL, gather_irange},
    {"opaque", 0, 0, AS_OPF_OPAQUE | AS_OPF_VARIADIC | AS_OPF_NOGRAD, 0,
     "hlo_op:s out_dtypes:s out_ranks:I out_dims:I flops:f=0 target:s=",
     "an HLO op autoshard cannot model: shapes and FLOPs given, replicate only", opaque_infer,
     opaque_flops, NULL, NULL, NULL, NULL},
    {"reduce_scatter", 1, 1, COLL_FLAGS, 0, "dim:i reducer:s=sum group_size:i=1",
     "collective in the imported module: reduce, then scatter along dim", coll_dim_infer,
     coll_reduce_flops, NULL, NULL, NULL, NULL},
    {"reduce_window", 1, 1, 0, 0, "window:I stride:I=[] pad_lo:I=[] pad_hi:I=[] reducer:s=sum "
     "init:f=0",
     "HLO reduce-window (sum, max or min; padding holds init)", rwin_infer, rwin_flops, NULL,
     rwin_kernel, NULL, NULL},
    {"scatter", 3, 3, 0, 0x2u,
     "update_window_dims:I inserted_window_dims:I scatter_dims_to_operand_dims:I "
     "index_vector_dim:i combine:s=assign",
     "HLO scatter (combine assign/add/mul/max/min; out-of-bounds updates skipped)",
     scatter_infer, scatter_flops, NULL, scatter_kernel, NULL, gather_irange},
};
const int as_ops_hlo_count = (int)(sizeof as_ops_hlo / sizeof as_ops_hlo[0]);
