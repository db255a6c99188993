/* test_hlo.c -- unit tests of the HLO importer (reader_hlo.c, hlo_parse.c)
 * and of the HLO-only ops (ops_hlo.c): mapping, names, parameters and
 * updates, undefined typed operands, shape checks, error positions, and the
 * reference kernels.  conv_general is checked against the registry's conv2d
 * (NCHW/OIHW) on random data by permuting layouts, and on a hand-computed
 * NHWC/HWIO case.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/reader_hlo.h"
#include "graph/registry.h"
#include "tap.h"

static const char *const mlp =
    "HloModule m, input_output_alias={ {0}: (1, {}, may-alias) }\n"
    "\n"
    "%sum (a: f32[], b: f32[]) -> f32[] {\n"
    "  %a = f32[] parameter(0)\n"
    "  %b = f32[] parameter(1)\n"
    "  ROOT %s = f32[] add(%a, %b)\n"
    "}\n"
    "\n"
    "ENTRY %main (x: f32[4,8], w: f32[8,2]) -> (f32[8,2], f32[]) {\n"
    "  %x = f32[4,8]{1,0} parameter(0)\n"
    "  %w = f32[8,2]{1,0} parameter(1), metadata={op_name=\"a{b}, c\"}\n"
    "  %d = f32[4,2]{1,0} dot(f32[4,8]{1,0} %x, /*index=1*/f32[8,2]{1,0} %w), "
    "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  %z = f32[] constant(0)\n"
    "  %l = f32[] reduce(%d, %z), dimensions={0,1}, to_apply=%sum\n"
    "  %neg = f32[8,2]{1,0} negate(w)\n"
    "  ROOT %t = (f32[8,2]{1,0}, f32[]) tuple(%neg, %l)\n"
    "}\n";

static int
read_err(const char *text, as_err *err)
{
    as_graph *g = NULL;
    int rc = as_hlo_read("t.hlo", text, strlen(text), &g, err);

    as_graph_free(g);
    return rc;
}

static void
test_import(void)
{
    as_graph *g = NULL;
    as_err err;
    int32_t w, neg;

    ok(as_hlo_detect(mlp, strlen(mlp)), "detects HloModule text");
    ok(!as_hlo_detect("graph g\n", 8), "does not detect .asg text");
    is_int(as_hlo_read("t.hlo", mlp, strlen(mlp), &g, &err), AS_OK, "reads a small module");
    if (g == NULL) {
        diag("%s", err.msg);
        return;
    }
    is_int(as_graph_nops(g), 3, "dot, reduce and negate become 3 ops");
    is_str(as_graph_op(g, 0)->def->name, "matmul", "dot -> matmul");
    is_str(as_graph_op(g, 1)->def->name, "reduce_sum", "reduce(add) -> reduce_sum");
    w = as_graph_find(g, "w");
    neg = as_graph_find(g, "neg");
    is_int(as_graph_tensor(g, w)->kind, AS_TK_PARAM, "aliased, updated parameter is a param");
    is_int(as_graph_tensor(g, as_graph_find(g, "x"))->kind, AS_TK_PARAM,
           "unaliased float rank-2 parameter is a param (weights of an inference dump)");
    is_int(as_graph_tensor(g, w)->update, neg, "input_output_alias ties w to its new value");
    is_int(as_graph_tensor(g, as_graph_find(g, "z"))->kind, AS_TK_CONST, "constant -> const");
    is_int(as_graph_noutputs(g), 2, "ROOT tuple leaves are the outputs");
    as_graph_free(g);
}

static void
test_errors(void)
{
    as_err err;

    is_int(read_err("", &err), AS_EPARSE, "empty text");
    is_str(err.msg, "t.hlo:1:1: empty file: expected 'HloModule'", "empty: message");
    is_int(read_err("HloModule m\n\x01\x02", &err), AS_EPARSE, "binary garbage");
    is_str(err.msg, "t.hlo:2:1: unexpected byte 0x01 (binary file?)", "garbage: position");
    is_int(read_err("HloModule m\nENTRY %e () -> f32[] {\n  %c = f32[] constant(1)\n", &err),
           AS_EPARSE, "truncated computation");
    is_int(read_err("HloModule m\nENTRY %e () -> f32[2] {\n  ROOT %c = f32[3]{0} iota(), "
                    "iota_dimension=0\n  %d = f32[3] negate(%c)\n}\n", &err),
           AS_OK, "ROOT need not be last");
    is_int(read_err("HloModule m\nENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2] parameter(0)\n"
                    "  ROOT %n = f32[3] negate(%p)\n}\n", &err),
           AS_EPARSE, "declared shape disagrees");
    is_str(err.msg, "t.hlo:4:9: 'n' declares f32[3] but negate gives f32[2]", "mismatch message");
    is_int(read_err("HloModule m\nENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2] parameter(0)\n"
                    "  %p = f32[2] parameter(1)\n  ROOT %n = f32[2] negate(%p)\n}\n", &err),
           AS_EPARSE, "duplicate instruction name");
    is_int(read_err("HloModule m\nENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2 parameter(0)\n}\n",
                    &err),
           AS_EPARSE, "malformed shape");
}

static double last_flops; /* FLOPs of the last op run_kernel ran */
static as_err kernel_err; /* its error, if any */

/*
 * Run the reference kernel of OPTYPE on IN (shapes INS) after inferring the
 * output (OUT NULL: only infer and cost).
 */
static int
run_kernel(const char *optype, const as_shape *ins, int nin, const double *const *in,
           const as_attr *attr, int nattr, double *out, as_shape *os)
{
    const as_op_def *def = as_registry_find(optype, (size_t)-1);
    as_arena *a = as_arena_new();
    as_attr *bound;
    as_opinfo info;
    int nb, nout, rc;

    rc = as_registry_bind_attrs(def, attr, nattr, a, &bound, &nb, &kernel_err);
    if (rc == AS_OK)
        rc = as_op_infer(def, ins, nin, bound, nb, os, &nout, &kernel_err);
    if (rc == AS_OK) {
        double *outs[1] = {out};
        info.def = def;
        info.nin = nin;
        info.in = ins;
        info.nout = 1;
        info.out = os;
        info.nattr = nb;
        info.attr = bound;
        last_flops = as_op_flops(&info);
        if (out != NULL)
            def->kernel(&info, in, outs);
    } else if (out != NULL) {
        diag("%s", kernel_err.msg);
    }
    as_arena_free(a);
    return rc;
}

static void
test_kernels(void)
{
    /* dot_general: batch 2 of [2x3] . [3x1] */
    as_shape s[3] = {{AS_DT_F32, 3, {2, 2, 3}}, {AS_DT_F32, 3, {2, 3, 1}}}, os;
    double a[12] = {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0}, b[6] = {1, 1, 1, 2, 3, 4}, o[16];
    const double *in[3] = {a, b};
    int64_t zb[1] = {0}, lc[1] = {2}, rc[1] = {1};
    as_attr at[4] = {AS_ATTR_V("lhs_batch", 1, zb), AS_ATTR_V("rhs_batch", 1, zb),
                     AS_ATTR_V("lhs_contract", 1, lc), AS_ATTR_V("rhs_contract", 1, rc)};
    is_int(run_kernel("dot_general", s, 2, in, at, 4, o, &os), AS_OK, "dot_general infers");
    is_int(os.rank, 3, "dot_general rank");
    ok(o[0] == 6 && o[1] == 15 && o[2] == 2 && o[3] == 3, "dot_general values");

    /* gather rows 2 and 0 of a [3,2] table */
    {
        as_shape gs[2] = {{AS_DT_F32, 2, {3, 2}}, {AS_DT_I32, 1, {2}}};
        double t[6] = {0, 1, 10, 11, 20, 21}, ids[2] = {2, 0};
        const double *gin[2] = {t, ids};
        int64_t off[1] = {1}, col[1] = {0}, map[1] = {0}, sz[2] = {1, 2};
        as_attr ga[5] = {AS_ATTR_V("offset_dims", 1, off), AS_ATTR_V("collapsed_slice_dims", 1, col),
                         AS_ATTR_V("start_index_map", 1, map), AS_ATTR_I("index_vector_dim", 1),
                         AS_ATTR_V("slice_sizes", 2, sz)};
        is_int(run_kernel("gather", gs, 2, gin, ga, 5, o, &os), AS_OK, "gather infers");
        ok(os.rank == 2 && os.dim[0] == 2 && os.dim[1] == 2, "gather shape [2,2]");
        ok(o[0] == 20 && o[1] == 21 && o[2] == 0 && o[3] == 1, "gather values");
    }
    /* dynamic_slice clamps its start */
    {
        as_shape ds[3] = {{AS_DT_F32, 1, {5}}, {AS_DT_I32, 0, {0}}};
        double x[5] = {0, 1, 2, 3, 4}, st[1] = {4};
        const double *din[2] = {x, st};
        int64_t sz[1] = {2};
        as_attr da[1] = {AS_ATTR_V("sizes", 1, sz)};
        is_int(run_kernel("dynamic_slice", ds, 2, din, da, 1, o, &os), AS_OK, "dynamic_slice");
        ok(o[0] == 3 && o[1] == 4, "dynamic_slice start clamped to 3");
    }
}

static void
test_externs(void)
{
    static const char *const frag =
        "HloModule frag\n"
        "\n"
        "ENTRY %e (p: f32[2]) -> f32[3] {\n"
        "  %g = f32[3]{0} get-tuple-element((f32[2]{0}, f32[3]{0}) %ar.1), index=1\n"
        "  ROOT %n = f32[3]{0} negate(f32[3]{0} %g)\n"
        "}\n";
    as_graph *g = NULL;
    as_err err;
    int32_t t0, t1;

    is_int(as_hlo_read("t.hlo", frag, strlen(frag), &g, &err), AS_OK,
           "an undefined operand with a written tuple type imports");
    if (g == NULL) {
        diag("%s", err.msg);
        return;
    }
    t0 = as_graph_find(g, "ar.1.0");
    t1 = as_graph_find(g, "ar.1.1");
    ok(t0 >= 0 && t1 >= 0, "one input per tuple element");
    if (t0 >= 0 && t1 >= 0) {
        is_int(as_graph_tensor(g, t1)->kind, AS_TK_INPUT, "the element is an input");
        is_int(as_graph_tensor(g, t1)->shape.dim[0], 3, "of its written shape f32[3]");
        is_int(as_graph_tensor(g, t0)->shape.dim[0], 2, "element 0 is f32[2]");
    }
    is_int(as_graph_nops(g), 1, "get-tuple-element resolves statically: one op (negate)");
    if (as_graph_nops(g) == 1)
        is_int(as_graph_op(g, 0)->in[0], t1, "negate reads element 1");
    as_graph_free(g);

    is_int(read_err("HloModule m\nENTRY %e () -> f32[2] {\n  ROOT %n = f32[2] negate(%u.1)\n}\n",
                    &err),
           AS_EPARSE, "an undefined operand without a type is an error");
    is_str(err.msg, "t.hlo:3:28: undefined instruction 'u.1' in 'e'", "its message");
    is_int(read_err("HloModule m\nENTRY %e () -> f32[2] {\n  %a = f32[2] negate(f32[2] %b)\n"
                    "  ROOT %b = f32[2] negate(%a)\n}\n", &err),
           AS_EPARSE, "a typed reference defined later in the computation is still an error");
    is_str(err.msg, "t.hlo:3:30: undefined instruction 'b' in 'e'", "forward reference message");
}

/* ---- conv_general against conv2d ---- */

/* Fill V[0..N) with uniform numbers in [-1, 1). */
static void
fill_random(as_rng *r, double *v, int64_t n)
{
    int64_t i;

    for (i = 0; i < n; i++)
        v[i] = 2.0 * as_rng_uniform(r) - 1.0;
}

/* Advance the row-major multi-index IDX over S; 0 after the last. */
static int
next_idx(int64_t *idx, const as_shape *s)
{
    int i;

    for (i = s->rank - 1; i >= 0; i--) {
        if (++idx[i] < s->dim[i])
            return 1;
        idx[i] = 0;
    }
    return 0;
}

/*
 * Copy SRC, in canonical order [C0, C1, spatial 0, spatial 1, ...] with
 * shape *CANON, into DST laid out as LAB (LEN chars, e.g. "b01f"); its
 * shape goes to *DS.
 */
static void
to_layout(const double *src, const as_shape *canon, const char *lab, int len, char c0, char c1,
          double *dst, as_shape *ds)
{
    int pos[AS_MAX_RANK], a, i;
    int64_t idx[AS_MAX_RANK] = {0}, st[AS_MAX_RANK], n = 0;

    for (a = 0; a < canon->rank; a++) {
        char c = a == 0 ? c0 : a == 1 ? c1 : (char)('0' + a - 2);
        for (i = 0; i < len; i++)
            if (lab[i] == c)
                pos[a] = i;
    }
    ds->dtype = canon->dtype;
    ds->rank = canon->rank;
    for (a = 0; a < canon->rank; a++)
        ds->dim[pos[a]] = canon->dim[a];
    st[ds->rank - 1] = 1;
    for (i = ds->rank - 2; i >= 0; i--)
        st[i] = st[i + 1] * ds->dim[i + 1];
    do {
        int64_t off = 0;
        for (a = 0; a < canon->rank; a++)
            off += idx[a] * st[pos[a]];
        dst[off] = src[n++];
    } while (next_idx(idx, canon));
}

static double
max_diff(const double *a, const double *b, int64_t n)
{
    double m = 0.0;
    int64_t i;

    for (i = 0; i < n; i++)
        m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

/* One 2-D configuration: x[n,c,h,w], w[o,c/g,kh,kw]. */
typedef struct conv_case {
    int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, g;
    const char *labels;
} conv_case;

/* conv_general in layout CC->labels equals conv2d (NCHW/OIHW) on the same data. */
static void
check_vs_conv2d(as_rng *r, const conv_case *cc)
{
    as_shape xs = {AS_DT_F32, 4, {cc->n, cc->c, cc->h, cc->w}};
    as_shape ws = {AS_DT_F32, 4, {cc->o, cc->c / cc->g, cc->kh, cc->kw}};
    as_shape s2[2] = {xs, ws}, sg[2], ys, yg, yp;
    int64_t nx = as_shape_numel(&xs), nw = as_shape_numel(&ws);
    double *x = malloc(sizeof *x * (size_t)nx), *w = malloc(sizeof *w * (size_t)nw);
    double *xp = malloc(sizeof *xp * (size_t)nx), *wp = malloc(sizeof *wp * (size_t)nw);
    double *y = calloc(4096, sizeof *y), *yl = calloc(4096, sizeof *yl);
    double *g = calloc(4096, sizeof *g), f2;
    const char *lab = cc->labels, *u = strchr(lab, '_'), *ar = strstr(lab, "->");
    int64_t st[2] = {cc->sh, cc->sw}, pd[2] = {cc->ph, cc->pw}, dl[2] = {cc->dh, cc->dw};
    as_attr a2[4] = {AS_ATTR_V("stride", 2, st), AS_ATTR_V("padding", 2, pd),
                     AS_ATTR_V("dilation", 2, dl), AS_ATTR_I("groups", cc->g)};
    as_attr ag[6] = {AS_ATTR_S("dim_labels", lab), AS_ATTR_V("stride", 2, st),
                     AS_ATTR_V("pad_lo", 2, pd), AS_ATTR_V("pad_hi", 2, pd),
                     AS_ATTR_V("rhs_dilate", 2, dl), AS_ATTR_I("feature_group_count", cc->g)};
    const double *i2[2] = {x, w}, *ig[2] = {xp, wp};
    char what[160];

    snprintf(what, sizeof what, "%s x[%lld,%lld,%lld,%lld] k%lldx%lld s%lld,%lld p%lld,%lld "
             "d%lld,%lld g%lld", lab, (long long)cc->n, (long long)cc->c, (long long)cc->h,
             (long long)cc->w, (long long)cc->kh, (long long)cc->kw, (long long)cc->sh,
             (long long)cc->sw, (long long)cc->ph, (long long)cc->pw, (long long)cc->dh,
             (long long)cc->dw, (long long)cc->g);
    fill_random(r, x, nx);
    fill_random(r, w, nw);
    to_layout(x, &xs, lab, (int)(u - lab), 'b', 'f', xp, &sg[0]);
    to_layout(w, &ws, u + 1, (int)(ar - u - 1), 'o', 'i', wp, &sg[1]);
    if (run_kernel("conv2d", s2, 2, i2, a2, 4, y, &ys) != AS_OK ||
        as_shape_numel(&ys) > 4096) {
        ok(0, "conv2d runs: %s", what);
        goto out;
    }
    f2 = last_flops;
    if (!ok(run_kernel("conv_general", sg, 2, ig, ag, 6, g, &yg) == AS_OK, "conv_general: %s",
            what))
        goto out;
    to_layout(y, &ys, ar + 2, (int)strlen(ar + 2), 'b', 'f', yl, &yp);
    ok(as_shape_equal(&yp, &yg), "  output shape matches conv2d's");
    is_double(max_diff(yl, g, as_shape_numel(&yg)) + 1.0, 1.0, 1e-12, "  values match conv2d");
    is_double(last_flops, f2, 1e-12, "  FLOPs match conv2d's");
    is_double(last_flops,
              2.0 * (double)as_shape_numel(&yg) * (double)(cc->c / cc->g) *
                  (double)(cc->kh * cc->kw),
              1e-12, "  FLOPs = 2 * out * C/groups * kh * kw");
out:
    free(x);
    free(w);
    free(xp);
    free(wp);
    free(y);
    free(yl);
    free(g);
}

/*
 * lhs_dilate and asymmetric / negative padding: conv_general in NCHW equals
 * conv2d (no padding) on the input dilated and padded by hand; rhs_reversal
 * equals conv2d with the kernel flipped by hand.
 */
static void
check_dilate_pad(as_rng *r)
{
    enum { N = 2, C = 2, H = 5, W = 4, O = 3, KH = 3, KW = 2 };
    int64_t ld[2] = {2, 3}, lo[2] = {2, -1}, hi[2] = {0, 3}, st[2] = {1, 2}, rd[2] = {1, 2};
    int64_t rev[2] = {1, 0}, dh, dwd, n, c, i, j, o, zero2[2] = {0, 0};
    double x[N * C * H * W], w[O * C * KH * KW], wf[O * C * KH * KW], *xd, y[4096], g[4096];
    as_shape s[2] = {{AS_DT_F32, 4, {N, C, H, W}}, {AS_DT_F32, 4, {O, C, KH, KW}}}, sd[2], ys,
             yg;
    as_attr ag[7] = {AS_ATTR_S("dim_labels", "bf01_oi01->bf01"), AS_ATTR_V("stride", 2, st),
                     AS_ATTR_V("pad_lo", 2, lo), AS_ATTR_V("pad_hi", 2, hi),
                     AS_ATTR_V("lhs_dilate", 2, ld), AS_ATTR_V("rhs_dilate", 2, rd),
                     AS_ATTR_V("rhs_reversal", 2, rev)};
    as_attr a2[3] = {AS_ATTR_V("stride", 2, st), AS_ATTR_V("dilation", 2, rd),
                     AS_ATTR_V("padding", 2, zero2)};
    const double *ig[2] = {x, w}, *i2[2];

    fill_random(r, x, N * C * H * W);
    fill_random(r, w, O * C * KH * KW);
    dh = (H - 1) * ld[0] + 1 + lo[0] + hi[0];
    dwd = (W - 1) * ld[1] + 1 + lo[1] + hi[1];
    xd = calloc((size_t)(N * C * dh * dwd), sizeof *xd);
    for (n = 0; n < N; n++)
        for (c = 0; c < C; c++)
            for (i = 0; i < dh; i++)
                for (j = 0; j < dwd; j++) {
                    int64_t p = i - lo[0], q = j - lo[1];
                    if (p >= 0 && q >= 0 && p % ld[0] == 0 && q % ld[1] == 0 &&
                        p / ld[0] < H && q / ld[1] < W)
                        xd[((n * C + c) * dh + i) * dwd + j] =
                            x[((n * C + c) * H + p / ld[0]) * W + q / ld[1]];
                }
    for (o = 0; o < O * C; o++) /* flip the kernel in H (rhs_reversal={1,0}) */
        for (i = 0; i < KH; i++)
            for (j = 0; j < KW; j++)
                wf[(o * KH + i) * KW + j] = w[(o * KH + (KH - 1 - i)) * KW + j];
    sd[0] = s[0];
    sd[0].dim[2] = dh;
    sd[0].dim[3] = dwd;
    sd[1] = s[1];
    i2[0] = xd;
    i2[1] = wf;
    is_int(run_kernel("conv2d", sd, 2, i2, a2, 3, y, &ys), AS_OK, "conv2d on the dilated input");
    is_int(run_kernel("conv_general", s, 2, ig, ag, 7, g, &yg), AS_OK,
           "conv_general with lhs_dilate, asymmetric and negative padding, rhs_reversal");
    ok(as_shape_equal(&ys, &yg), "  same shape as conv2d on the hand-dilated input");
    is_double(max_diff(y, g, as_shape_numel(&yg)) + 1.0, 1.0, 1e-12, "  same values");
    free(xd);
}

/* batch_group_count=2: output feature o reads batch group o / (O/2). */
static void
check_batch_groups(as_rng *r)
{
    enum { N = 4, C = 3, H = 4, W = 4, O = 4, K = 3 };
    double x[N * C * H * W], w[O * C * K * K], full[4096], g[4096];
    as_shape s[2] = {{AS_DT_F32, 4, {N, C, H, W}}, {AS_DT_F32, 4, {O, C, K, K}}}, ys, yg;
    int64_t pad[2] = {1, 1}, b, o, p;
    as_attr ag[4] = {AS_ATTR_S("dim_labels", "bf01_oi01->bf01"), AS_ATTR_V("pad_lo", 2, pad),
                     AS_ATTR_V("pad_hi", 2, pad), AS_ATTR_I("batch_group_count", 2)};
    as_attr a2[1] = {AS_ATTR_V("padding", 2, pad)};
    const double *in[2] = {x, w};
    double d = 0.0;

    fill_random(r, x, N * C * H * W);
    fill_random(r, w, O * C * K * K);
    is_int(run_kernel("conv2d", s, 2, in, a2, 1, full, &ys), AS_OK, "conv2d, all batches");
    is_int(run_kernel("conv_general", s, 2, in, ag, 4, g, &yg), AS_OK,
           "conv_general batch_group_count=2");
    ok(yg.dim[0] == N / 2 && yg.dim[1] == O, "  output batch N/2, features O");
    for (b = 0; b < N / 2; b++)
        for (o = 0; o < O; o++)
            for (p = 0; p < H * W; p++) {
                double e = full[(((o / 2) * 2 + b) * O + o) * H * W + p];
                d = fmax(d, fabs(g[(b * O + o) * H * W + p] - e));
            }
    is_double(d + 1.0, 1.0, 1e-12, "  out[b,o] = conv2d(x[(o/2)*2+b], w[o])");
}

/*
 * 1-D (b0f_0io->b0f) against conv2d with width 1, and 3-D (b012f_012io->b012f)
 * against a sum over the depth taps of conv2d on depth slices.
 */
static void
check_1d_3d(as_rng *r)
{
    enum { N = 2, C = 4, L = 9, O = 6, K = 3, D = 4, KD = 2, G = 2 };
    double x[N * C * D * L * L], w[O * (C / G) * KD * K * K], xc[N * C * L], wc[O * C * K];
    double y[8192], g[8192], sl[4096], ws[4096], acc[8192];
    int64_t st1[1] = {2}, pd1[1] = {1}, dl1[1] = {2}, n, c, l, o, i, dd, kd, p, od = D - KD + 1;
    int64_t st2[2] = {2, 2}, pd2[2] = {1, 1};
    int64_t st3[3] = {1, 2, 2}, pd3[3] = {0, 1, 1};
    as_shape s1[2] = {{AS_DT_F32, 3, {N, L, C}}, {AS_DT_F32, 3, {K, C, O}}};
    as_shape s2[2] = {{AS_DT_F32, 4, {N, C, L, 1}}, {AS_DT_F32, 4, {O, C, K, 1}}}, ys, yg;
    as_shape s3[2] = {{AS_DT_F32, 5, {N, D, L, L, C}}, {AS_DT_F32, 5, {KD, K, K, C / G, O}}};
    as_shape ss[2] = {{AS_DT_F32, 4, {N, C, L, L}}, {AS_DT_F32, 4, {O, C / G, K, K}}};
    as_attr a1[4] = {AS_ATTR_S("dim_labels", "b0f_0io->b0f"), AS_ATTR_V("stride", 1, st1),
                     AS_ATTR_V("pad_lo", 1, pd1), AS_ATTR_V("rhs_dilate", 1, dl1)};
    as_attr a1b[4] = {AS_ATTR_S("dim_labels", "b0f_0io->b0f"), AS_ATTR_V("stride", 1, st1),
                      AS_ATTR_V("pad_lo", 1, pd1), AS_ATTR_V("pad_hi", 1, pd1)};
    int64_t st2b[2] = {2, 1}, pd2b[2] = {1, 0}, dl2[2] = {2, 1};
    as_attr a2[3] = {AS_ATTR_V("stride", 2, st2b), AS_ATTR_V("padding", 2, pd2b),
                     AS_ATTR_V("dilation", 2, dl2)};
    as_attr a3[5] = {AS_ATTR_S("dim_labels", "b012f_012io->b012f"), AS_ATTR_V("stride", 3, st3),
                     AS_ATTR_V("pad_lo", 3, pd3), AS_ATTR_V("pad_hi", 3, pd3),
                     AS_ATTR_I("feature_group_count", G)};
    as_attr as2[3] = {AS_ATTR_V("stride", 2, st2), AS_ATTR_V("padding", 2, pd2),
                      AS_ATTR_I("groups", G)};
    const double *in1[2] = {x, w}, *in2[2] = {xc, wc}, *ins[2] = {sl, ws};
    double d = 0.0;
    int ok3 = 1;

    /* 1-D: x[n,l,c] (b0f), w[k,c,o] (0io); conv2d wants x[n,c,l,1], w[o,c,k,1] */
    fill_random(r, x, N * L * C);
    fill_random(r, w, K * C * O);
    for (n = 0; n < N; n++)
        for (l = 0; l < L; l++)
            for (c = 0; c < C; c++)
                xc[(n * C + c) * L + l] = x[(n * L + l) * C + c];
    for (i = 0; i < K; i++)
        for (c = 0; c < C; c++)
            for (o = 0; o < O; o++)
                wc[(o * C + c) * K + i] = w[(i * C + c) * O + o];
    is_int(run_kernel("conv2d", s2, 2, in2, a2, 3, y, &ys), AS_OK, "conv2d with width 1");
    is_int(run_kernel("conv_general", s1, 2, in1, a1, 4, g, &yg), AS_OK,
           "1-D conv_general b0f_0io->b0f (pad_lo only, stride 2, rhs_dilate 2)");
    is_int(run_kernel("conv_general", s1, 2, in1, a1b, 4, NULL, &ys), AS_OK,
           "1-D shape with pad 1 on both sides");
    /* pad_hi=0 in a1: the last output of the padded version may be missing */
    ok(yg.rank == 3 && yg.dim[0] == N && yg.dim[2] == O, "  1-D output [N, L', O]");
    {
        int64_t l2 = yg.dim[1], lc = 0;
        run_kernel("conv2d", s2, 2, in2, a2, 3, y, &ys);
        lc = ys.dim[2];
        ok(l2 <= lc, "  1-D length %lld <= conv2d's %lld", (long long)l2, (long long)lc);
        for (n = 0; n < N; n++)
            for (l = 0; l < l2; l++)
                for (o = 0; o < O; o++)
                    d = fmax(d, fabs(g[(n * l2 + l) * O + o] - y[(n * O + o) * lc + l]));
        is_double(d + 1.0, 1.0, 1e-12, "  1-D values match conv2d");
    }

    /* 3-D, NDHWC / DHWIO with 2 feature groups: depth stride 1, no depth padding */
    fill_random(r, x, N * D * L * L * C);
    fill_random(r, w, KD * K * K * (C / G) * O);
    if (!ok(run_kernel("conv_general", s3, 2, in1, a3, 5, g, &yg) == AS_OK,
            "3-D conv_general b012f_012io->b012f, groups 2"))
        return;
    ok(yg.rank == 5 && yg.dim[1] == od && yg.dim[4] == O, "  3-D output [N, D-KD+1, ., ., O]");
    memset(acc, 0, sizeof acc);
    for (dd = 0; dd < od; dd++)
        for (kd = 0; kd < KD; kd++) {
            for (n = 0; n < N; n++) /* slice depth dd + kd of x as NCHW */
                for (c = 0; c < C; c++)
                    for (i = 0; i < L * L; i++)
                        sl[(n * C + c) * L * L + i] = x[((n * D + dd + kd) * L * L + i) * C + c];
            for (o = 0; o < O; o++) /* tap kd of w as OIHW */
                for (c = 0; c < C / G; c++)
                    for (i = 0; i < K * K; i++)
                        ws[(o * (C / G) + c) * K * K + i] =
                            w[((kd * K * K + i) * (C / G) + c) * O + o];
            ok3 &= run_kernel("conv2d", ss, 2, ins, as2, 3, y, &ys) == AS_OK;
            for (n = 0; n < N; n++)
                for (o = 0; o < O; o++)
                    for (p = 0; p < ys.dim[2] * ys.dim[3]; p++)
                        acc[((n * od + dd) * ys.dim[2] * ys.dim[3] + p) * O + o] +=
                            y[(n * O + o) * ys.dim[2] * ys.dim[3] + p];
        }
    ok(ok3 && yg.dim[2] == ys.dim[2] && yg.dim[3] == ys.dim[3], "  3-D spatial dims match");
    is_double(max_diff(acc, g, as_shape_numel(&yg)) + 1.0, 1.0, 1e-12,
              "  3-D values = sum over depth taps of conv2d");
}

static void
test_conv(void)
{
    static const conv_case cases[] = {
        {2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, "b01f_01io->b01f"},
        {2, 4, 9, 8, 6, 3, 2, 2, 1, 1, 0, 1, 2, 2, "b01f_01io->b01f"},
        {1, 4, 8, 8, 4, 3, 3, 2, 2, 2, 1, 2, 1, 4, "bf01_oi01->bf01"},
        {3, 2, 6, 7, 5, 2, 3, 1, 2, 0, 2, 2, 1, 1, "f0b1_i1o0->1bf0"},
        {2, 6, 10, 5, 9, 3, 1, 3, 1, 1, 0, 2, 1, 3, "0fb1_o1i0->b10f"},
    };
    /* hand-computed NHWC/HWIO: x = 1..9 in a 3x3 image, two output features */
    as_shape hs[2] = {{AS_DT_F32, 4, {1, 3, 3, 1}}, {AS_DT_F32, 4, {2, 2, 1, 2}}}, os;
    double hx[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    /* w[kh][kw][i][o]: o=0 is the diagonal [1 0; 0 1], o=1 is [0 2; 0 0] */
    double hw[8] = {1, 0, 0, 2, 0, 0, 1, 0}, ho[16];
    static const double want[8] = {6, 4, 8, 6, 12, 10, 14, 12};
    const double *hin[2] = {hx, hw};
    as_attr ha[1] = {AS_ATTR_S("dim_labels", "b01f_01io->b01f")};
    int64_t st3[3] = {1, 1, 1};
    as_attr bad[3] = {AS_ATTR_S("dim_labels", "b01f_01io->b01f"), AS_ATTR_V("stride", 3, st3),
                      AS_ATTR_I("feature_group_count", 1)};
    as_rng r;
    size_t i;

    is_int(run_kernel("conv_general", hs, 2, hin, ha, 1, ho, &os), AS_OK, "hand case infers");
    ok(os.rank == 4 && os.dim[1] == 2 && os.dim[2] == 2 && os.dim[3] == 2, "hand case [1,2,2,2]");
    is_double(max_diff(ho, want, 8) + 1.0, 1.0, 1e-15,
              "hand case: x[i,j]+x[i+1,j+1] and 2 x[i,j+1], interleaved NHWC");
    is_double(last_flops, 2.0 * 8 * 1 * 4, 1e-12, "hand case FLOPs 2*8*1*4");

    as_rng_seed(&r, 42);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_vs_conv2d(&r, &cases[i]);
    check_dilate_pad(&r);
    check_batch_groups(&r);
    check_1d_3d(&r);

    is_int(run_kernel("conv_general", hs, 2, hin, bad, 3, NULL, &os), AS_EPARSE,
           "a stride list longer than the spatial dims is rejected");
    ha[0] = AS_ATTR_S("dim_labels", "b00f_01io->b01f");
    is_int(run_kernel("conv_general", hs, 2, hin, ha, 1, NULL, &os), AS_EPARSE,
           "a repeated spatial label is rejected");
    is_str(kernel_err.msg, "conv_general: bad dim_labels 'b00f_01io->b01f' (want e.g. "
           "b01f_01io->b01f)", "  with the labels in the message");
    {
        as_shape gs[2] = {{AS_DT_F32, 4, {2, 2, 2, 4}}, {AS_DT_F32, 4, {1, 1, 2, 4}}};
        as_attr both[3] = {AS_ATTR_S("dim_labels", "b01f_01io->b01f"),
                           AS_ATTR_I("feature_group_count", 2), AS_ATTR_I("batch_group_count", 2)};
        is_int(run_kernel("conv_general", gs, 2, hin, both, 3, NULL, &os), AS_EPARSE,
               "feature and batch groups both > 1 rejected");
    }
}

/* The op the HLO convolution in WINDOW / LABELS maps to (x [2,4,8,8] or NHWC, w OIHW/HWIO). */
static const char *
conv_mapped(const char *conv_line, as_graph **gp)
{
    char text[1024];
    as_err err;

    snprintf(text, sizeof text,
             "HloModule c\nENTRY %%e (x: f32[2,4,8,8], w: f32[6,2,3,3]) -> f32[] {\n"
             "  %%x = f32[2,4,8,8]{3,2,1,0} parameter(0)\n"
             "  %%w = f32[6,2,3,3]{3,2,1,0} parameter(1)\n"
             "  ROOT %%conv.1 = %s\n}\n", conv_line);
    *gp = NULL;
    if (as_hlo_read("t.hlo", text, strlen(text), gp, &err) != AS_OK) {
        diag("%s", err.msg);
        return "(error)";
    }
    return as_graph_nops(*gp) == 1 ? as_graph_op(*gp, 0)->def->name : "(ops)";
}

static void
test_conv_mapping(void)
{
    as_graph *g;
    const int64_t *v;
    const as_op *op;

    is_str(conv_mapped("f32[2,6,4,8]{3,2,1,0} convolution(%x, %w), window={size=3x3 stride=2x1 "
                       "pad=1_1x1_1 rhs_dilate=1x1}, dim_labels=bf01_oi01->bf01, "
                       "feature_group_count=2", &g),
           "conv2d", "NCHW/OIHW, symmetric padding -> conv2d");
    if (g != NULL && as_graph_nops(g) == 1) {
        op = as_graph_op(g, 0);
        ok(as_attr_ints(op->attr, op->nattr, "stride", &v) == 2 && v[0] == 2 && v[1] == 1,
           "  stride=[2,1]");
        ok(as_attr_ints(op->attr, op->nattr, "padding", &v) == 2 && v[0] == 1 && v[1] == 1,
           "  padding=[1,1]");
        is_int(as_attr_int(op->attr, op->nattr, "groups", 0), 2, "  groups=2");
    }
    as_graph_free(g);
    is_str(conv_mapped("f32[2,6,3,3]{3,2,1,0} convolution(%x, %w), window={size=3x3 stride=2x2 "
                       "pad=1_1x1_1 rhs_dilate=2x2}, dim_labels=bf01_oi01->bf01, "
                       "feature_group_count=2", &g),
           "conv2d", "rhs_dilate becomes conv2d's dilation");
    if (g != NULL && as_graph_nops(g) == 1) {
        op = as_graph_op(g, 0);
        ok(as_attr_ints(op->attr, op->nattr, "dilation", &v) == 2 && v[0] == 2 && v[1] == 2,
           "  dilation=[2,2]");
    }
    as_graph_free(g);
    is_str(conv_mapped("f32[2,6,4,8]{3,2,1,0} convolution(%x, %w), window={size=3x3 stride=2x1 "
                       "pad=0_1x1_1}, dim_labels=bf01_oi01->bf01, feature_group_count=2", &g),
           "conv_general", "asymmetric padding -> conv_general");
    as_graph_free(g);
    is_str(conv_mapped("f32[2,6,15,15]{3,2,1,0} convolution(%x, %w), window={size=3x3 "
                       "pad=1_1x1_1 lhs_dilate=2x2}, dim_labels=bf01_oi01->bf01, "
                       "feature_group_count=2", &g),
           "conv_general", "lhs_dilate -> conv_general");
    as_graph_free(g);
    is_str(conv_mapped("f32[2,6,8,8]{3,2,1,0} convolution(%x, %w), window={size=3x3 "
                       "pad=1_1x1_1 rhs_reversal=1x1}, dim_labels=bf01_oi01->bf01, "
                       "feature_group_count=2", &g),
           "conv_general", "rhs_reversal -> conv_general");
    if (g != NULL && as_graph_nops(g) == 1) {
        op = as_graph_op(g, 0);
        ok(as_attr_ints(op->attr, op->nattr, "rhs_reversal", &v) == 2 && v[0] == 1 && v[1] == 1,
           "  rhs_reversal=[1,1] kept");
    }
    as_graph_free(g);
    is_str(conv_mapped("f32[2,6,6,6]{3,2,1,0} convolution(%x, %w), window={size=3x3}, "
                       "dim_labels=bf01_oi01->b01f, feature_group_count=2", &g),
           "conv_general", "another output layout (NHWC) -> conv_general");
    as_graph_free(g);
}

int
main(void)
{
    test_import();
    test_errors();
    test_externs();
    test_kernels();
    test_conv();
    test_conv_mapping();
    return done_testing();
}
