/* test_ops_conv.c -- the conv op family (src/graph/ops_conv.c): conv2d
 * shapes, FLOPs and hand-computed values (stride, padding, groups, bias),
 * batchnorm, max/avg pooling, error messages, and every gradient rule
 * against finite differences.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "graph/ops_internal.h"
#include "tap.h"

#define F32(...) mkshape(AS_DT_F32, __VA_ARGS__)
#define F64(...) mkshape(AS_DT_F64, __VA_ARGS__)

/* Do OUT[0..n) and WANT[0..n) agree to 1e-12? */
static int
close_to(const double *out, const double *want, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (fabs(out[i] - want[i]) > 1e-12 * (1.0 + fabs(want[i]))) {
            diag("  element %d: got %.17g, want %.17g", i, out[i], want[i]);
            return 0;
        }
    return 1;
}

/* Infer OPTYPE on SHAPES through a graph; returns the error message or "" on success. */
static const char *
infer_msg(const char *optype, const as_shape *shapes, int nin, const as_attr *attr, int nattr,
          as_shape *out, double *flops)
{
    static as_err err;
    as_graph *g = as_graph_new("t");
    int32_t ids[8], op;
    char name[16];
    int j, rc = AS_OK;

    as_err_clear(&err);
    for (j = 0; j < nin && rc == AS_OK; j++) {
        snprintf(name, sizeof name, "x%d", j);
        rc = as_graph_add_tensor(g, name, &shapes[j], AS_TK_INPUT, -1, &ids[j], &err);
    }
    if (rc == AS_OK)
        rc = as_graph_add_op(g, optype, NULL, 0, ids, nin, attr, nattr, &op, &err);
    if (rc == AS_OK) {
        const as_op *o = as_graph_op(g, op);
        as_shape in[8], outs[AS_MAX_OUTS];
        as_opinfo info;
        int k;
        as_graph_op_in_shapes(g, o, in);
        for (k = 0; k < o->nout; k++)
            outs[k] = as_graph_tensor(g, o->out[k])->shape;
        info.def = o->def;
        info.nin = o->nin;
        info.in = in;
        info.nout = o->nout;
        info.out = outs;
        info.nattr = o->nattr;
        info.attr = o->attr;
        if (out != NULL)
            *out = outs[0];
        if (flops != NULL)
            *flops = as_op_flops(&info);
    }
    as_graph_free(g);
    return rc == AS_OK ? "" : err.msg;
}

static const char *
sstr(const as_shape *s)
{
    static char buf[4][128];
    static int k;

    k = (k + 1) % 4;
    return as_shape_str(s, buf[k], sizeof buf[k]);
}

/* x[r][c] = 4r + c + 1 on a 4x4 plane, optionally negated. */
static void
fill_plane(double *x, double sign)
{
    int i;

    for (i = 0; i < 16; i++)
        x[i] = sign * (i + 1);
}

static void
test_conv_values(void)
{
    as_shape s[3] = {F32(4, 1, 1, 4, 4), F32(4, 1, 1, 3, 3), F32(1, 1)}, o;
    double x[16], w[9] = {0, 1, 0, 1, 1, 1, 0, 1, 0}, b[1] = {0.5}, out[16];
    double want[4] = {8, 16, 37, 55}, wantb[4] = {8.5, 16.5, 37.5, 55.5};
    const double *ins[3] = {x, w, b};
    int64_t two[2] = {2, 2}, one[2] = {1, 1};
    as_attr a[2] = {AS_ATTR_V("stride", 2, two), AS_ATTR_V("padding", 2, one)};
    as_err err;

    fill_plane(x, 1.0);
    ok(run_kernel("conv2d", s, 2, ins, a, 2, out, &o, &err) == AS_OK, "conv2d runs: %s", err.msg);
    is_str(sstr(&o), "f32[1,1,2,2]", "3x3 conv, stride 2, padding 1 on 4x4 gives 2x2");
    ok(close_to(out, want, 4), "plus-shaped kernel, stride 2, padding 1, by hand");
    ok(run_kernel("conv2d", s, 3, ins, a, 2, out, &o, &err) == AS_OK && close_to(out, wantb, 4),
       "conv2d with bias adds it per output channel");
}

static void
test_conv_groups(void)
{
    as_shape s[2] = {F32(4, 1, 2, 1, 2), F32(4, 2, 1, 1, 1)}, o, g[2];
    double x[4] = {1, 2, 10, 20}, w[2] = {2, 3}, out[4], want[4] = {2, 4, 30, 60};
    const double *ins[2] = {x, w};
    as_attr a = AS_ATTR_I("groups", 2);
    int64_t dil[2] = {2, 2};
    double flops = 0;
    as_err err;

    ok(run_kernel("conv2d", s, 2, ins, &a, 1, out, &o, &err) == AS_OK && close_to(out, want, 4),
       "groups=2 with 1x1 kernels scales each channel by its own weight");
    g[0] = F32(4, 2, 4, 8, 8);
    g[1] = F32(4, 6, 2, 3, 3);
    is_str(infer_msg("conv2d", g, 2, &a, 1, &o, &flops), "", "grouped conv infers");
    is_str(sstr(&o), "f32[2,6,6,6]", "grouped conv shape");
    is_double(flops, 2.0 * 2 * 6 * 6 * 6 * 2 * 3 * 3, 1e-12, "grouped conv FLOPs");
    g[1] = F32(4, 5, 2, 3, 3);
    a = AS_ATTR_I("groups", 2);
    ok(strstr(infer_msg("conv2d", g, 2, &a, 1, NULL, NULL), "not divisible by groups=2") != NULL,
       "output channels not divisible by groups rejected");
    g[1] = F32(4, 6, 4, 3, 3);
    is_str(infer_msg("conv2d", g, 2, NULL, 0, &o, NULL), "", "ungrouped conv infers");
    is_str(sstr(&o), "f32[2,6,6,6]", "ungrouped conv shape");
    g[0] = F32(4, 1, 3, 5, 5);
    g[1] = F32(4, 2, 4, 3, 3);
    is_str(infer_msg("conv2d", g, 2, NULL, 0, NULL, NULL),
           "conv2d: input has 3 channels but weight expects 4 (groups=1)",
           "channel mismatch message");
    g[0] = F32(4, 1, 1, 7, 7);
    g[1] = F32(4, 1, 1, 3, 3);
    a = AS_ATTR_V("dilation", 2, dil);
    is_str(infer_msg("conv2d", g, 2, &a, 1, &o, NULL), "", "dilated conv infers");
    is_str(sstr(&o), "f32[1,1,3,3]", "dilation 2 widens a 3x3 kernel to 5x5");
    g[0] = F32(4, 1, 1, 2, 2);
    ok(strstr(infer_msg("conv2d", g, 2, NULL, 0, NULL, NULL), "does not fit") != NULL,
       "kernel larger than the input rejected");
    g[0] = F32(3, 1, 1, 4);
    ok(strstr(infer_msg("conv2d", g, 2, NULL, 0, NULL, NULL), "[N,C,H,W]") != NULL,
       "rank-3 input rejected");
}

static void
test_conv_errors(void)
{
    as_shape s[3] = {F32(4, 2, 3, 6, 6), F32(4, 4, 3, 3, 3), F32(1, 5)}, dy[2];
    int64_t xs[4] = {2, 3, 6, 6}, ws[4] = {4, 3, 3, 3}, bad[3] = {1, 2, 3};
    as_attr a;
    double flops = 0;

    ok(strstr(infer_msg("conv2d", s, 3, NULL, 0, NULL, NULL), "bias must be f32[4]") != NULL,
       "bias of the wrong length rejected");
    dy[0] = F32(4, 2, 4, 4, 4);
    dy[1] = s[1];
    a = AS_ATTR_V("input_shape", 4, xs);
    is_str(infer_msg("conv2d_grad_input", dy, 2, &a, 1, NULL, &flops), "",
           "conv2d_grad_input infers");
    is_double(flops, 2.0 * 2 * 4 * 4 * 4 * 3 * 3 * 3, 1e-12, "conv2d_grad_input FLOPs");
    dy[0] = F32(4, 2, 4, 5, 5);
    ok(strstr(infer_msg("conv2d_grad_input", dy, 2, &a, 1, NULL, NULL), "dy is f32[2,4,5,5]") !=
           NULL, "conv2d_grad_input with a wrong dy rejected");
    a = AS_ATTR_V("input_shape", 3, bad);
    ok(strstr(infer_msg("conv2d_grad_input", dy, 2, &a, 1, NULL, NULL), "needs 4 entries") != NULL,
       "input_shape of 3 entries rejected");
    dy[0] = F32(4, 2, 4, 4, 4);
    dy[1] = s[0];
    a = AS_ATTR_V("weight_shape", 4, ws);
    is_str(infer_msg("conv2d_grad_weight", dy, 2, &a, 1, NULL, &flops), "",
           "conv2d_grad_weight infers");
    is_double(flops, 2.0 * 2 * 4 * 4 * 4 * 3 * 3 * 3, 1e-12, "conv2d_grad_weight FLOPs");
}

static void
test_batchnorm(void)
{
    as_shape s[3] = {F64(2, 4, 1), F64(1, 1), F64(1, 1)}, o, r4[3];
    double x[4] = {1, 2, 3, 4}, gm[1] = {2}, bt[1] = {1}, out[4], flops = 0;
    double want[4] = {-1.6832815729997477, 0.10557280900008414, 1.8944271909999157,
                      3.6832815729997477};
    const double *ins[3] = {x, gm, bt};
    as_attr a = AS_ATTR_F("eps", 0.0);
    as_err err;

    ok(run_kernel("batchnorm", s, 3, ins, &a, 1, out, &o, &err) == AS_OK &&
           close_to(out, want, 4), "batchnorm of 1..4 with gamma 2, beta 1, eps 0 by hand");
    r4[0] = F32(4, 2, 3, 4, 4);
    r4[1] = F32(1, 3);
    r4[2] = F32(1, 3);
    is_str(infer_msg("batchnorm", r4, 3, NULL, 0, &o, &flops), "", "rank-4 batchnorm infers");
    is_str(sstr(&o), "f32[2,3,4,4]", "batchnorm keeps the shape");
    is_double(flops, 8.0 * 96, 1e-12, "batchnorm FLOPs are 8 per element");
    r4[1] = F32(1, 4);
    ok(strstr(infer_msg("batchnorm", r4, 3, NULL, 0, NULL, NULL), "input 1 must be f32[3]") !=
           NULL, "gamma of the wrong length rejected");
    r4[0] = F32(1, 3);
    ok(strstr(infer_msg("batchnorm", r4, 3, NULL, 0, NULL, NULL), "[N,C,...]") != NULL,
       "rank-1 batchnorm input rejected");
}

static void
test_pools(void)
{
    as_shape x = F32(4, 1, 1, 4, 4), o, big = F32(4, 1, 1, 6, 6);
    double in[16], out[16], dy[4] = {1, 2, 3, 4}, gx[16];
    double wmax[4] = {6, 8, 14, 16}, wavg[4] = {3.5, 5.5, 11.5, 13.5};
    double wneg[4] = {-1, -2, -5, -6}, wavgpad[4] = {14.0 / 9, 30.0 / 9, 57.0 / 9, 99.0 / 9};
    double wgrad[16] = {0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4};
    const double *ins[2] = {in, in};
    int64_t k2[1] = {2}, k3[2] = {3, 3}, s2[2] = {2, 2}, p1[2] = {1, 1}, k23[2] = {2, 3};
    int64_t p2[2] = {2, 2}, ish[4] = {1, 1, 4, 4};
    as_attr a[4] = {AS_ATTR_V("kernel", 1, k2)};
    as_shape gs[2] = {F32(4, 1, 1, 2, 2), x};
    as_err err;

    fill_plane(in, 1.0);
    ok(run_kernel("maxpool2d", &x, 1, ins, a, 1, out, &o, &err) == AS_OK && close_to(out, wmax, 4),
       "maxpool 2x2 (stride defaults to kernel) by hand");
    is_str(sstr(&o), "f32[1,1,2,2]", "maxpool shape");
    ok(run_kernel("avgpool2d", &x, 1, ins, a, 1, out, &o, &err) == AS_OK && close_to(out, wavg, 4),
       "avgpool 2x2 by hand");
    ins[0] = dy;
    ok(run_kernel("maxpool2d_grad", gs, 2, ins, a, 1, gx, &o, &err) == AS_OK &&
           close_to(gx, wgrad, 16), "maxpool2d_grad routes dy to each window's maximum");
    a[1] = AS_ATTR_V("input_shape", 4, ish);
    ok(run_kernel("avgpool2d_grad", gs, 1, ins, a, 2, gx, &o, &err) == AS_OK &&
           gx[0] == 0.25 && gx[15] == 1.0, "avgpool2d_grad spreads dy / 4");
    ins[0] = in;
    a[0] = AS_ATTR_V("kernel", 2, k3);
    a[1] = AS_ATTR_V("stride", 2, s2);
    a[2] = AS_ATTR_V("padding", 2, p1);
    ok(run_kernel("avgpool2d", &x, 1, ins, a, 3, out, &o, &err) == AS_OK &&
           close_to(out, wavgpad, 4), "avgpool 3x3 pad 1 divides by 9 (count_include_pad)");
    fill_plane(in, -1.0);
    ok(run_kernel("maxpool2d", &x, 1, ins, a, 3, out, &o, &err) == AS_OK && close_to(out, wneg, 4),
       "maxpool ignores padding (negative inputs)");
    a[0] = AS_ATTR_V("kernel", 2, k23);
    is_str(infer_msg("avgpool2d", &big, 1, a, 1, &o, NULL), "", "2x3 pool infers");
    is_str(sstr(&o), "f32[1,1,3,2]", "stride defaults to the kernel per dim");
    a[2] = AS_ATTR_V("padding", 2, p2);
    ok(strstr(infer_msg("maxpool2d", &big, 1, a, 3, NULL, NULL), "exceeds half the kernel") !=
           NULL, "padding beyond half the kernel rejected");
}

/* conv2d gradients: stride, padding, dilation, groups, bias. */
static void
test_conv_gradcheck(void)
{
    as_shape s[3] = {F32(4, 2, 3, 5, 5), F32(4, 4, 3, 3, 3), F32(1, 4)};
    as_shape sg[3] = {F32(4, 2, 4, 5, 6), F32(4, 6, 2, 3, 2), F32(1, 6)};
    as_shape gi[2] = {F32(4, 2, 4, 3, 3), F32(4, 4, 3, 3, 3)};
    as_shape gw[2] = {F32(4, 2, 4, 3, 3), F32(4, 2, 3, 5, 5)};
    int64_t st[2] = {2, 1}, pd[2] = {1, 2}, dl[2] = {2, 1}, two[2] = {2, 2}, one[2] = {1, 1};
    int64_t xs[4] = {2, 3, 5, 5}, ws[4] = {4, 3, 3, 3};
    as_attr a[5];
    double e;

    e = gradcheck("conv2d", s, 2, NULL, 0, 0, 1);
    ok(e >= 0 && e < 1e-6, "gradcheck conv2d plain (err %.3g)", e);
    a[0] = AS_ATTR_V("stride", 2, two);
    a[1] = AS_ATTR_V("padding", 2, one);
    e = gradcheck("conv2d", s, 2, a, 2, 0, 2);
    ok(e >= 0 && e < 1e-6, "gradcheck conv2d stride 2 padding 1 (err %.3g)", e);
    a[0] = AS_ATTR_V("dilation", 2, two);
    e = gradcheck("conv2d", s, 2, a, 2, 0, 3);
    ok(e >= 0 && e < 1e-6, "gradcheck conv2d dilation 2 padding 1 (err %.3g)", e);
    e = gradcheck("conv2d", s, 3, NULL, 0, 0, 4);
    ok(e >= 0 && e < 1e-6, "gradcheck conv2d with bias (err %.3g)", e);
    a[0] = AS_ATTR_I("groups", 2);
    e = gradcheck("conv2d", sg, 2, a, 1, 0, 5);
    ok(e >= 0 && e < 1e-6, "gradcheck conv2d groups 2 (err %.3g)", e);
    a[1] = AS_ATTR_V("stride", 2, st);
    a[2] = AS_ATTR_V("padding", 2, pd);
    a[3] = AS_ATTR_V("dilation", 2, dl);
    e = gradcheck("conv2d", sg, 3, a, 4, 0, 6);
    ok(e >= 0 && e < 1e-6, "gradcheck conv2d groups+stride+padding+dilation+bias (err %.3g)", e);
    a[0] = AS_ATTR_V("stride", 2, two);
    a[1] = AS_ATTR_V("padding", 2, one);
    a[2] = AS_ATTR_V("input_shape", 4, xs);
    e = gradcheck("conv2d_grad_input", gi, 2, a, 3, 0, 7);
    ok(e >= 0 && e < 1e-6, "gradcheck conv2d_grad_input (double backward) (err %.3g)", e);
    a[2] = AS_ATTR_V("weight_shape", 4, ws);
    e = gradcheck("conv2d_grad_weight", gw, 2, a, 3, 0, 8);
    ok(e >= 0 && e < 1e-6, "gradcheck conv2d_grad_weight (double backward) (err %.3g)", e);
}

/* sum_i r_i * batchnorm(x, gamma, beta)_i, the objective of bn_kernel_fd. */
static double
bn_objective(const as_shape *s, const double *const *in, const double *r, double *y)
{
    as_err err;
    double f = 0.0;
    int64_t i, n = as_shape_numel(&s[0]);

    if (run_kernel("batchnorm", s, 3, in, NULL, 0, y, NULL, &err) != AS_OK)
        return NAN;
    for (i = 0; i < n; i++)
        f += r[i] * y[i];
    return f;
}

/*
 * The batchnorm gradient kernels against central differences of the forward
 * kernel alone (independent of the autodiff engine): d/dx and d/dgamma of
 * sum r * batchnorm(x) for X of shape S[0].
 */
static void
bn_kernel_fd(const as_shape *s, uint64_t seed)
{
    int64_t n = as_shape_numel(&s[0]), c = s[0].dim[1], i;
    double *x = as_xmalloc((size_t)n * sizeof *x), *r = as_xmalloc((size_t)n * sizeof *r);
    double *y = as_xmalloc((size_t)n * sizeof *y), *dx = as_xmalloc((size_t)n * sizeof *dx);
    double gm[8], bt[8], dg[8], worst = 0.0, *vars[2] = {NULL, gm}, *an[2] = {dx, dg};
    const double *fwd[3] = {x, gm, bt}, *gin[3] = {r, x, gm};
    as_shape gs[3] = {s[0], s[0], s[1]};
    as_rng rng;
    as_err err;
    int v, ok1, ok2;
    char buf[64];

    vars[0] = x;
    as_rng_seed(&rng, seed);
    for (i = 0; i < n; i++) {
        x[i] = 2.0 * as_rng_uniform(&rng) - 1.0;
        r[i] = 2.0 * as_rng_uniform(&rng) - 1.0;
    }
    for (i = 0; i < c; i++) {
        gm[i] = 2.0 * as_rng_uniform(&rng) - 1.0;
        bt[i] = 2.0 * as_rng_uniform(&rng) - 1.0;
    }
    ok1 = run_kernel("batchnorm_grad_x", gs, 3, gin, NULL, 0, dx, NULL, &err) == AS_OK;
    ok2 = run_kernel("batchnorm_grad_gamma", gs, 2, gin, NULL, 0, dg, NULL, &err) == AS_OK;
    for (v = 0; v < 2 && ok1 && ok2; v++)
        for (i = 0; i < (v == 0 ? n : c); i++) {
            double x0 = vars[v][i], fp, fm, e;
            vars[v][i] = x0 + 1e-6;
            fp = bn_objective(s, fwd, r, y);
            vars[v][i] = x0 - 1e-6;
            fm = bn_objective(s, fwd, r, y);
            vars[v][i] = x0;
            e = fabs((fp - fm) / 2e-6 - an[v][i]) / (fabs(an[v][i]) > 1.0 ? fabs(an[v][i]) : 1.0);
            if (!(e <= worst))
                worst = e;
        }
    ok(ok1 && ok2 && worst < 1e-6, "batchnorm_grad_x/gamma kernels match differences on %s "
       "(err %.3g)", as_shape_str(&s[0], buf, sizeof buf), worst);
    free(x);
    free(r);
    free(y);
    free(dx);
}

static void
test_norm_pool_gradcheck(void)
{
    as_shape b2[3] = {F32(2, 5, 3), F32(1, 3), F32(1, 3)};
    as_shape b4[3] = {F32(4, 2, 3, 2, 3), F32(1, 3), F32(1, 3)};
    as_shape b3[3] = {F32(3, 3, 2, 4), F32(1, 2), F32(1, 2)};
    as_shape p = F32(4, 2, 2, 5, 5);
    int64_t k2[1] = {2}, k3[2] = {3, 3}, s2[2] = {2, 2}, p1[2] = {1, 1}, s1[1] = {1};
    int64_t ish[4] = {2, 2, 5, 5};
    as_attr a[4];
    double e;

    bn_kernel_fd(b2, 21);
    bn_kernel_fd(b4, 22);
    e = gradcheck("batchnorm", b2, 3, NULL, 0, 0, 11);
    ok(e >= 0 && e < 1e-6, "gradcheck batchnorm rank 2 (err %.3g)", e);
    e = gradcheck("batchnorm", b4, 3, NULL, 0, 0, 12);
    ok(e >= 0 && e < 1e-6, "gradcheck batchnorm rank 4 (err %.3g)", e);
    a[0] = AS_ATTR_F("eps", 0.1);
    e = gradcheck("batchnorm", b3, 3, a, 1, 0, 13);
    ok(e >= 0 && e < 1e-6, "gradcheck batchnorm rank 3, eps 0.1 (err %.3g)", e);
    a[0] = AS_ATTR_V("kernel", 1, k2);
    e = gradcheck("maxpool2d", &p, 1, a, 1, 0, 14);
    ok(e >= 0 && e < 1e-6, "gradcheck maxpool2d 2x2 (err %.3g)", e);
    a[0] = AS_ATTR_V("kernel", 2, k3);
    a[1] = AS_ATTR_V("stride", 2, s2);
    a[2] = AS_ATTR_V("padding", 2, p1);
    e = gradcheck("maxpool2d", &p, 1, a, 3, 0, 15);
    ok(e >= 0 && e < 1e-6, "gradcheck maxpool2d 3x3 stride 2 padding 1 (err %.3g)", e);
    e = gradcheck("avgpool2d", &p, 1, a, 3, 0, 16);
    ok(e >= 0 && e < 1e-6, "gradcheck avgpool2d 3x3 stride 2 padding 1 (err %.3g)", e);
    a[1] = AS_ATTR_V("stride", 1, s1);
    a[2] = AS_ATTR_V("padding", 2, p1);
    a[3] = AS_ATTR_V("input_shape", 4, ish);
    e = gradcheck("avgpool2d_grad", &p, 1, a, 4, 0, 17);
    ok(e >= 0 && e < 1e-6, "gradcheck avgpool2d_grad (err %.3g)", e);
}

int
main(void)
{
    as_err err;

    plan_lazy();
    ok(as_registry_selfcheck(&err) == AS_OK, "registry selfcheck: %s", err.msg);
    test_conv_values();
    test_conv_groups();
    test_conv_errors();
    test_batchnorm();
    test_pools();
    test_conv_gradcheck();
    test_norm_pool_gradcheck();
    return done_testing();
}
