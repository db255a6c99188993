/* bench_hlo.c -- speed of the HLO importer on a GPT-3 175B sized module.
 *
 * Synthesises the HLO text of one training step of GPT-3 175B (96 layers,
 * h=12288, 96 heads of 128, ffn 49152, seq 2048, 8 unrolled micro-batches
 * with gradient accumulation): per layer and micro-batch the forward pass
 * (layernorm, fused QKV dot, batched attention dots, softmax, projection,
 * GELU MLP, residuals) and the backward pass (input and weight gradient dots,
 * softmax and layernorm backward, GELU backward), with the broadcasts,
 * reshapes, transposes and reduces XLA prints.  Then imports it with
 * as_hlo_read and prints instructions, parse time and peak RSS.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/reader_hlo.h"

#define S 2048
#define H 12288
#define NH 96
#define HD 128
#define F 49152
#define MICRO 8

static long LAYERS = 96; /* -l */

typedef struct gen {
    AS_VEC(char) t;
    long n; /* instructions */
    long id;
} gen;

static void gen_emit(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append one formatted line. */
static void
gen_emit(gen *g, const char *fmt, ...)
{
    va_list ap;
    int len;

    AS_VEC_RESERVE(&g->t, g->t.n + 512);
    va_start(ap, fmt);
    len = vsnprintf(g->t.v + g->t.n, g->t.cap - g->t.n, fmt, ap);
    va_end(ap);
    if ((size_t)len >= g->t.cap - g->t.n) {
        AS_VEC_RESERVE(&g->t, g->t.n + (size_t)len + 1);
        va_start(ap, fmt);
        vsnprintf(g->t.v + g->t.n, g->t.cap - g->t.n, fmt, ap);
        va_end(ap);
    }
    g->t.n += (size_t)len;
}

/* One instruction "%vN = TYPE rest"; returns N. */
static long gen_ins(gen *g, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static long
gen_ins(gen *g, const char *type, const char *fmt, ...)
{
    char rest[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(rest, sizeof rest, fmt, ap);
    va_end(ap);
    gen_emit(g, "  %%v%ld = %s %s, metadata={op_type=\"aten\" op_name=\"l\"}\n", ++g->id, type,
             rest);
    g->n++;
    return g->id;
}

#define T2(a, b) "f32[" #a "," #b "]{1,0}"
#define XS "f32[2048,12288]{1,0}"

/* Elementwise binary op on [S,H] (or shape SH). */
static long
gen_bin(gen *g, const char *sh, const char *op, long a, long b)
{
    return gen_ins(g, sh, "%s(%%v%ld, %%v%ld)", op, a, b);
}

/* Layernorm of X over the hidden dim with gamma G: 12 instructions. */
static long
gen_layernorm(gen *g, long x, long gamma)
{
    long s = gen_ins(g, "f32[2048]{0}", "reduce(%%v%ld, %%zero), dimensions={1}, to_apply=%%sum", x);
    long n = gen_ins(g, "f32[2048]{0}", "broadcast(%%inv_h), dimensions={}");
    long mean = gen_ins(g, "f32[2048]{0}", "multiply(%%v%ld, %%v%ld)", s, n);
    long bm = gen_ins(g, XS, "broadcast(%%v%ld), dimensions={0}", mean);
    long c = gen_bin(g, XS, "subtract", x, bm);
    long sq = gen_bin(g, XS, "multiply", c, c);
    long vs = gen_ins(g, "f32[2048]{0}", "reduce(%%v%ld, %%zero), dimensions={1}, to_apply=%%sum", sq);
    long var = gen_ins(g, "f32[2048]{0}", "multiply(%%v%ld, %%v%ld)", vs, n);
    long r = gen_ins(g, "f32[2048]{0}", "rsqrt(%%v%ld)", var);
    long br = gen_ins(g, XS, "broadcast(%%v%ld), dimensions={0}", r);
    long y = gen_bin(g, XS, "multiply", c, br);
    long bg = gen_ins(g, XS, "broadcast(%%v%ld), dimensions={1}", gamma);
    return gen_bin(g, XS, "multiply", y, bg);
}

/* GELU (tanh form) on shape SH: 8 instructions. */
static long
gen_gelu(gen *g, const char *sh, long x)
{
    long half = gen_ins(g, sh, "broadcast(%%half), dimensions={}");
    long x2 = gen_bin(g, sh, "multiply", x, x);
    long x3 = gen_bin(g, sh, "multiply", x2, x);
    long a = gen_bin(g, sh, "add", x, x3);
    long t = gen_ins(g, sh, "tanh(%%v%ld)", a);
    long one = gen_ins(g, sh, "broadcast(%%one), dimensions={}");
    long p = gen_bin(g, sh, "add", t, one);
    return gen_bin(g, sh, "multiply", gen_bin(g, sh, "multiply", x, half), p);
}

typedef struct layer_w {
    long g1, g2, wqkv, wo, w1, w2;
} layer_w;

/* dX = dY . W^T and dW = X^T . dY for a linear layer X[S,K] W[K,N]. */
static long
gen_linear_bwd(gen *g, const char *xsh, const char *wsh, long x, long w, long dy, long *dw)
{
    long dx = gen_ins(g, xsh, "dot(%%v%ld, %%v%ld), lhs_contracting_dims={1}, "
                              "rhs_contracting_dims={1}", dy, w);
    *dw = gen_ins(g, wsh, "dot(%%v%ld, %%v%ld), lhs_contracting_dims={0}, "
                          "rhs_contracting_dims={0}", x, dy);
    return dx;
}

/* One layer, forward and backward, for one micro-batch; accumulates into ACC[6]. */
static long
gen_layer(gen *g, long x, const layer_w *w, long *acc)
{
    const char *QKV = T2(2048, 36864), *FF = T2(2048, 49152), *HS = "f32[96,2048,128]{2,1,0}";
    const char *SC = "f32[96,2048,2048]{2,1,0}", *SR = "f32[96,2048]{1,0}";
    long ln1 = gen_layernorm(g, x, w->g1);
    long qkv = gen_ins(g, QKV, "dot(%%v%ld, %%v%ld), lhs_contracting_dims={1}, "
                               "rhs_contracting_dims={0}", ln1, w->wqkv);
    long hv[3], i, sc, mx, e, se, p, ctx, ct, c2, o, r1, ln2, h1, a1, h2, y;
    long dy, dh2, dw, da1, dgl, dln2, dr1, dctx, dp, dsc, dq, dk, dv, dqkv, dln1, dx;
    for (i = 0; i < 3; i++) {
        long sl = gen_ins(g, XS, "slice(%%v%ld), slice={[0:2048], [%ld:%ld]}", qkv, i * H,
                          (i + 1) * H);
        long rs = gen_ins(g, "f32[2048,96,128]{2,1,0}", "reshape(%%v%ld)", sl);
        hv[i] = gen_ins(g, HS, "transpose(%%v%ld), dimensions={1,0,2}", rs);
    }
    sc = gen_ins(g, SC, "dot(%%v%ld, %%v%ld), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                        "rhs_batch_dims={0}, rhs_contracting_dims={2}", hv[0], hv[1]);
    mx = gen_ins(g, SR, "reduce(%%v%ld, %%ninf), dimensions={2}, to_apply=%%max", sc);
    e = gen_ins(g, SC, "exponential(%%v%ld)",
                gen_bin(g, SC, "subtract", sc, gen_ins(g, SC, "broadcast(%%v%ld), dimensions={0,1}", mx)));
    se = gen_ins(g, SR, "reduce(%%v%ld, %%zero), dimensions={2}, to_apply=%%sum", e);
    p = gen_bin(g, SC, "divide", e, gen_ins(g, SC, "broadcast(%%v%ld), dimensions={0,1}", se));
    ctx = gen_ins(g, HS, "dot(%%v%ld, %%v%ld), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                         "rhs_batch_dims={0}, rhs_contracting_dims={1}", p, hv[2]);
    ct = gen_ins(g, "f32[2048,96,128]{2,1,0}", "transpose(%%v%ld), dimensions={1,0,2}", ctx);
    c2 = gen_ins(g, XS, "reshape(%%v%ld)", ct);
    o = gen_ins(g, XS, "dot(%%v%ld, %%v%ld), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                c2, w->wo);
    r1 = gen_bin(g, XS, "add", x, o);
    ln2 = gen_layernorm(g, r1, w->g2);
    h1 = gen_ins(g, FF, "dot(%%v%ld, %%v%ld), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                 ln2, w->w1);
    a1 = gen_gelu(g, FF, h1);
    h2 = gen_ins(g, XS, "dot(%%v%ld, %%v%ld), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                 a1, w->w2);
    y = gen_bin(g, XS, "add", r1, h2);
    /* backward: the incoming gradient is modelled as y itself (shape-true, cheap to write) */
    dy = y;
    dh2 = gen_linear_bwd(g, FF, T2(49152, 12288), a1, w->w2, dy, &dw);
    acc[5] = gen_bin(g, T2(49152, 12288), "add", acc[5], dw);
    dgl = gen_bin(g, FF, "multiply", dh2, gen_gelu(g, FF, h1)); /* GELU' recomputed */
    da1 = gen_linear_bwd(g, XS, T2(12288, 49152), ln2, w->w1, dgl, &dw);
    acc[4] = gen_bin(g, T2(12288, 49152), "add", acc[4], dw);
    dln2 = gen_bin(g, XS, "multiply", da1, gen_layernorm(g, r1, w->g2));
    dr1 = gen_bin(g, XS, "add", dy, dln2);
    dctx = gen_linear_bwd(g, XS, T2(12288, 12288), c2, w->wo, dr1, &dw);
    acc[3] = gen_bin(g, T2(12288, 12288), "add", acc[3], dw);
    dctx = gen_ins(g, HS, "transpose(%%v%ld), dimensions={1,0,2}",
                   gen_ins(g, "f32[2048,96,128]{2,1,0}", "reshape(%%v%ld)", dctx));
    dp = gen_ins(g, SC, "dot(%%v%ld, %%v%ld), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                        "rhs_batch_dims={0}, rhs_contracting_dims={2}", dctx, hv[2]);
    dv = gen_ins(g, HS, "dot(%%v%ld, %%v%ld), lhs_batch_dims={0}, lhs_contracting_dims={1}, "
                        "rhs_batch_dims={0}, rhs_contracting_dims={1}", p, dctx);
    { /* softmax backward: p * (dp - sum(dp * p)) */
        long m = gen_bin(g, SC, "multiply", dp, p);
        long s = gen_ins(g, SR, "reduce(%%v%ld, %%zero), dimensions={2}, to_apply=%%sum", m);
        long d = gen_bin(g, SC, "subtract", dp, gen_ins(g, SC, "broadcast(%%v%ld), dimensions={0,1}", s));
        dsc = gen_bin(g, SC, "multiply", p, d);
    }
    dq = gen_ins(g, HS, "dot(%%v%ld, %%v%ld), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                        "rhs_batch_dims={0}, rhs_contracting_dims={1}", dsc, hv[1]);
    dk = gen_ins(g, HS, "dot(%%v%ld, %%v%ld), lhs_batch_dims={0}, lhs_contracting_dims={1}, "
                        "rhs_batch_dims={0}, rhs_contracting_dims={1}", dsc, hv[0]);
    {
        long parts[3] = {dq, dk, dv}, r[3];
        for (i = 0; i < 3; i++)
            r[i] = gen_ins(g, XS, "reshape(%%v%ld)",
                           gen_ins(g, "f32[2048,96,128]{2,1,0}", "transpose(%%v%ld), "
                                   "dimensions={1,0,2}", parts[i]));
        dqkv = gen_ins(g, QKV, "concatenate(%%v%ld, %%v%ld, %%v%ld), dimensions={1}", r[0], r[1],
                       r[2]);
    }
    dln1 = gen_linear_bwd(g, XS, T2(12288, 36864), ln1, w->wqkv, dqkv, &dw);
    acc[2] = gen_bin(g, T2(12288, 36864), "add", acc[2], dw);
    dx = gen_bin(g, XS, "multiply", dln1, gen_layernorm(g, x, w->g1));
    {
        long gs = gen_ins(g, "f32[12288]{0}", "reduce(%%v%ld, %%zero), dimensions={0}, "
                          "to_apply=%%sum", dx);
        acc[0] = gen_bin(g, "f32[12288]{0}", "add", acc[0], gs);
        acc[1] = gen_bin(g, "f32[12288]{0}", "add", acc[1], gs);
    }
    return gen_bin(g, XS, "add", dr1, dx);
}

static char *
gen_module(long *ninstr, size_t *len)
{
    gen g;
    layer_w *w = calloc((size_t)LAYERS, sizeof *w);
    long(*acc)[6] = calloc((size_t)LAYERS, sizeof *acc), x, m, l, k, np = 0, id0;

    memset(&g, 0, sizeof g);
    gen_emit(&g, "HloModule gpt3_175b_step\n\n");
    gen_emit(&g, "%%sum (a: f32[], b: f32[]) -> f32[] {\n  %%a = f32[] parameter(0)\n"
                 "  %%b = f32[] parameter(1)\n  ROOT %%s = f32[] add(%%a, %%b)\n}\n\n");
    gen_emit(&g, "%%max (a: f32[], b: f32[]) -> f32[] {\n  %%a = f32[] parameter(0)\n"
                 "  %%b = f32[] parameter(1)\n  ROOT %%m = f32[] maximum(%%a, %%b)\n}\n\n");
    gen_emit(&g, "ENTRY %%main () -> f32[2048,12288] {\n");
    gen_emit(&g, "  %%zero = f32[] constant(0)\n  %%one = f32[] constant(1)\n"
                 "  %%half = f32[] constant(0.5)\n  %%ninf = f32[] constant(-inf)\n"
                 "  %%inv_h = f32[] constant(8.138e-05)\n");
    for (l = 0; l < LAYERS; l++) {
        static const char *const shp[6] = {"f32[12288]{0}", "f32[12288]{0}",
                                           T2(12288, 36864), T2(12288, 12288),
                                           T2(12288, 49152), T2(49152, 12288)};
        long *f = &w[l].g1;
        for (k = 0; k < 6; k++) {
            f[k] = gen_ins(&g, shp[k], "parameter(%ld)", np++);
            acc[l][k] = gen_ins(&g, shp[k], "broadcast(%%zero), dimensions={}");
        }
    }
    id0 = gen_ins(&g, "f32[2048,12288]{1,0}", "parameter(%ld)", np++);
    for (m = 0; m < MICRO; m++) {
        x = id0;
        for (l = 0; l < LAYERS; l++)
            x = gen_layer(&g, x, &w[l], acc[l]);
    }
    gen_emit(&g, "  ROOT %%out = f32[2048,12288]{1,0} add(%%v%ld, %%v%ld)\n}\n", x, id0);
    g.n++;
    AS_VEC_PUSH(&g.t, '\0');
    free(w);
    free(acc);
    *ninstr = g.n;
    *len = g.t.n - 1;
    return g.t.v;
}

int
main(int argc, char **argv)
{
    long n;
    size_t len;
    double t0, t1;
    char *text, rss[32], sz[32];
    const char *out = NULL;
    as_graph *g = NULL;
    as_err err;
    int rc, c;

    while ((c = getopt(argc, argv, "l:o:")) != -1) {
        if (c == 'l' && atol(optarg) > 0 && atol(optarg) <= 10000)
            LAYERS = atol(optarg);
        else if (c == 'o')
            out = optarg;
        else {
            fprintf(stderr, "usage: bench_hlo [-l LAYERS] [-o FILE.hlo]\n");
            return 2;
        }
    }
    text = gen_module(&n, &len);
    if (out) {
        FILE *f = fopen(out, "w");
        if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
            fprintf(stderr, "bench_hlo: cannot write '%s'\n", out);
            free(text);
            return 1;
        }
    }

    t0 = as_now();
    rc = as_hlo_read("gpt3-175b.hlo", text, len, &g, &err);
    t1 = as_now();
    if (rc != AS_OK) {
        fprintf(stderr, "bench_hlo: %s\n", err.msg);
        free(text);
        return 1;
    }
    printf("hlo import: %ld instructions (%s of text) -> %d ops, %d tensors\n", n,
           as_fmt_bytes((double)len, sz, sizeof sz), (int)as_graph_nops(g),
           (int)as_graph_ntensors(g));
    printf("parse time: %.3f s (target < 2 s); peak RSS: %s (target < 1 GB)\n", t1 - t0,
           as_fmt_bytes((double)as_peak_rss(), rss, sizeof rss));
    as_graph_free(g);
    free(text);
    return (t1 - t0) < 2.0 && as_peak_rss() < (size_t)1 << 30 ? 0 : 1;
}
