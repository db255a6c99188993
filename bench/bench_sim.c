/* bench_sim.c -- simulator throughput on a GPT-3 175B-like training step.
 *
 * 64 devices = 8 pipeline stages x 8-way tensor parallelism (Megatron
 * layout: column- then row-parallel matmuls, one all-reduce after the
 * attention block and one after the MLP, forward and backward), 12 layers
 * per stage (96 in all), hidden 12288, 96 heads, sequence 2048, microbatch
 * 1, K = 32 microbatches under 1F1B, bf16.  Every compute event is costed
 * from its op and local shapes with the roofline model (once per distinct
 * signature).  Prints events, wall time, events per second (simulation
 * only, one core) and the peak RSS of this process.
 *
 *   bench/bench_sim [LAYERS_PER_STAGE [MICROBATCHES [RUNS]]]
 *   bench/bench_sim --program FILE [RUNS]
 *
 * The second form parses a program text (e.g. `autoshard lower` of gpt3-175b on
 * 64 devices, docs/sim.md) RUNS times and prints lines and MB per CPU second of
 * the best run (parse and builder checks, no simulation).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/sim.h"

#define TP 8
#define NSTAGES 8
#define SEQ 2048
#define HID 12288
#define HEADS 96
#define NOPS_FWD 12
#define NOPS_BWD 24

typedef struct bench {
    int layers;
    int32_t fwd_op[NOPS_FWD], bwd_op[NOPS_BWD];
    int fwd_ar[NOPS_FWD], bwd_ar[NOPS_BWD]; /* 1: an all-reduce follows this op */
    double ar_bytes;
    double stash_bytes;
} bench;

static as_shape
shp(int rank, int64_t a, int64_t b, int64_t c)
{
    as_shape s;

    memset(&s, 0, sizeof s);
    s.dtype = AS_DT_BF16;
    s.rank = rank;
    s.dim[0] = a;
    s.dim[1] = b;
    s.dim[2] = c;
    return s;
}

/* CPU seconds of this process (the machine is shared: wall time overstates). */
static double
cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Intern op NAME on inputs IN[0..N) with optional transpose_b. */
static int
bench_op(as_sim_prog *p, const char *name, const as_shape *in, int n, int tb, int32_t *id,
         as_err *err)
{
    as_attr at = AS_ATTR_I("transpose_b", 1);
    as_sim_op op;

    op.def = as_registry_find(name, (size_t)-1);
    op.in = in;
    op.nin = n;
    op.attr = tb ? &at : NULL;
    op.nattr = tb ? 1 : 0;
    return as_sim_intern_op(p, &op, id, err);
}

/* The forward and backward op lists of one transformer layer, local to one TP shard. */
static int
bench_ops(as_sim_prog *p, bench *b, as_err *err)
{
    int64_t h = HID, s = SEQ, hl = HID / TP, f = 4 * HID / TP, hd = HEADS / TP, dk = HID / HEADS;
    as_shape x = shp(2, s, h, 0), g = shp(1, h, 0, 0);
    as_shape ln[3] = {x, g, g};
    as_shape qkv[2] = {x, shp(2, h, 3 * hl, 0)};
    as_shape sc[2] = {shp(3, hd, s, dk), shp(3, hd, dk, s)};
    as_shape sm = shp(3, hd, s, s);
    as_shape ctx[2] = {sm, shp(3, hd, s, dk)};
    as_shape proj[2] = {shp(2, s, hl, 0), shp(2, hl, h, 0)};
    as_shape add[2] = {x, x};
    as_shape fc1[2] = {x, shp(2, h, f, 0)};
    as_shape act = shp(2, s, f, 0);
    as_shape fc2[2] = {act, shp(2, f, h, 0)};
    int k = 0, i;

    AS_CHECK(bench_op(p, "layernorm", ln, 3, 0, &b->fwd_op[k++], err));
    AS_CHECK(bench_op(p, "matmul", qkv, 2, 0, &b->fwd_op[k++], err));
    AS_CHECK(bench_op(p, "matmul", sc, 2, 0, &b->fwd_op[k++], err));
    AS_CHECK(bench_op(p, "softmax", &sm, 1, 0, &b->fwd_op[k++], err));
    AS_CHECK(bench_op(p, "matmul", ctx, 2, 0, &b->fwd_op[k++], err));
    AS_CHECK(bench_op(p, "matmul", proj, 2, 0, &b->fwd_op[k], err));
    b->fwd_ar[k++] = 1;
    AS_CHECK(bench_op(p, "add", add, 2, 0, &b->fwd_op[k++], err));
    AS_CHECK(bench_op(p, "layernorm", ln, 3, 0, &b->fwd_op[k++], err));
    AS_CHECK(bench_op(p, "matmul", fc1, 2, 0, &b->fwd_op[k++], err));
    AS_CHECK(bench_op(p, "gelu", &act, 1, 0, &b->fwd_op[k++], err));
    AS_CHECK(bench_op(p, "matmul", fc2, 2, 0, &b->fwd_op[k], err));
    b->fwd_ar[k++] = 1;
    AS_CHECK(bench_op(p, "add", add, 2, 0, &b->fwd_op[k++], err));
    /* backward: each matmul becomes two (data and weight gradients), others one or two */
    for (i = 0; i < NOPS_FWD; i++) {
        b->bwd_op[2 * i] = b->fwd_op[NOPS_FWD - 1 - i];
        b->bwd_op[2 * i + 1] = b->fwd_op[NOPS_FWD - 1 - i];
        b->bwd_ar[2 * i + 1] = i == 1 || i == 7; /* after fc1's and qkv's data gradients */
    }
    b->ar_bytes = (double)(s * h * 2);
    b->stash_bytes = 34.0 * (double)(s * h) / TP + 5.0 * HEADS * (double)(s * s) / TP;
    return AS_OK;
}

/* Emit one stage pass: the layer ops on every device, all-reduces over the stage. */
static int
bench_emit(as_sim_prog *p, const as_sim_pipe_ctx *c, void *ud, as_err *err)
{
    bench *b = ud;
    const int32_t *ops = c->backward ? b->bwd_op : b->fwd_op;
    const int *ar = c->backward ? b->bwd_ar : b->fwd_ar;
    int nops = c->backward ? NOPS_BWD : NOPS_FWD, l, j, n = 0, total = b->layers * nops;
    int32_t prev = c->in, rd[2], wr[3];
    double wb[3];
    char name[64];

    if (c->tail)
        return AS_OK; /* nothing after the last backward: no data-parallel replicas */
    for (l = 0; l < b->layers; l++)
        for (j = 0; j < nops; j++, n++) {
            as_sim_event_spec s;
            int nr = 0, nw = 0;
            int32_t t;

            snprintf(name, sizeof name, "%c%d.%d.%d", c->backward ? 'b' : 'f', l, j, c->micro);
            t = as_sim_tensor(p, name);
            if (prev >= 0)
                rd[nr++] = prev;
            if (c->backward && n == 0)
                rd[nr++] = c->stash;
            wr[nw] = t;
            wb[nw++] = b->ar_bytes / TP;
            if (n == total - 1) {
                if (c->out >= 0) {
                    wr[nw] = c->out;
                    wb[nw++] = b->ar_bytes;
                }
                if (!c->backward) {
                    wr[nw] = c->stash;
                    wb[nw++] = b->stash_bytes * b->layers;
                } else if (c->grad >= 0) {
                    wr[nw] = c->grad;
                    wb[nw++] = 0;
                }
            }
            as_sim_event_spec_init(&s);
            s.devs = c->devs;
            s.ndevs = c->ndevs;
            s.op_id = ops[j];
            s.reads = rd;
            s.nreads = nr;
            s.writes = wr;
            s.wbytes = wb;
            s.nwrites = nw;
            AS_CHECK(as_sim_add(p, &s, err));
            prev = t;
            if (ar[j]) {
                int32_t o;

                snprintf(name, sizeof name, "%c%d.%d.%d.ar", c->backward ? 'b' : 'f', l, j,
                         c->micro);
                o = as_sim_tensor(p, name);
                AS_CHECK(as_sim_add_collective(p, AS_COLL_ALL_REDUCE, c->devs, c->ndevs,
                                               b->ar_bytes, -1, &prev, 1, &o, NULL, 1, NULL, err));
                prev = o;
            }
        }
    return AS_OK;
}

/* bench/bench_sim --program FILE [RUNS]: parse throughput of a program text, then the
 * engine's throughput on the parsed program. */
static int
bench_parse_file(const char *path, int runs)
{
    char *text = NULL;
    size_t len = 0, nlines = 0, i;
    double best = 1e30, bests = 1e30, first = 0, firsts = 0, t0, dt;
    as_sim_result *res = NULL;
    as_err err = {0};
    as_sim_prog *q = NULL;
    size_t nev = 0;
    int r;

    if (as_read_file(path, &text, &len, &err) != AS_OK) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return 1;
    }
    for (i = 0; i < len; i++)
        nlines += text[i] == '\n';
    for (r = 0; r < (runs > 0 ? runs : 1); r++) {
        t0 = cpu_now();
        if (as_sim_prog_parse(path, text, &q, &err) != AS_OK) {
            fprintf(stderr, "bench_sim: %s\n", err.msg);
            free(text);
            return 1;
        }
        dt = cpu_now() - t0;
        if (r == 0)
            first = dt;
        if (dt < best)
            best = dt;
        nev = as_sim_prog_nevents(q);
        if (r + 1 < (runs > 0 ? runs : 1)) {
            as_sim_prog_free(q);
            q = NULL;
        }
    }
    for (r = 0; r < (runs > 0 ? runs : 1); r++) {
        as_sim_result_free(res);
        res = NULL;
        t0 = cpu_now();
        if (as_sim_run(q, NULL, &res, &err) != AS_OK) {
            fprintf(stderr, "bench_sim: %s\n", err.msg);
            as_sim_prog_free(q);
            free(text);
            return 1;
        }
        dt = cpu_now() - t0;
        if (r == 0)
            firsts = dt;
        if (dt < bests)
            bests = dt;
    }
    printf("bench_sim: parse %s\n", path);
    printf("  program text     %zu lines, %.1f MB, %zu events\n", nlines, (double)len / 1e6, nev);
    printf("  parse time       %.3f s of CPU (best of %d; first %.3f s)\n", best,
           runs > 0 ? runs : 1, first);
    printf("  lines/s          %.3g per CPU second (%.0f MB/s; first run, on fresh memory: %.3g)\n",
           (double)nlines / best, (double)len / 1e6 / best, (double)nlines / first);
    printf("  simulate time    %.3f s of CPU (best of %d; first %.3f s), %d of %d devices explicit\n",
           bests, runs > 0 ? runs : 1, firsts, res->nexplicit, res->ndevices);
    printf("  events/s         %.3g per CPU second (first run, on fresh memory: %.3g)\n",
           (double)nev / bests, (double)nev / firsts);
    printf("  iteration time   %.6g s (simulated)\n", res->time);
    as_sim_result_free(res);
    as_sim_prog_free(q);
    free(text);
    return 0;
}

int
main(int argc, char **argv)
{
    int layers = argc > 1 ? atoi(argv[1]) : 12, k = argc > 2 ? atoi(argv[2]) : 32;
    int runs = argc > 3 ? atoi(argv[3]) : 3, s;
    size_t i;
    static int devs[NSTAGES][TP];
    as_sim_stage st[NSTAGES];
    as_sim_pipe_opts o;
    as_sim_prog *p = NULL;
    as_sim_result *r = NULL;
    as_err err = {0};
    bench b;
    double t0, tb, best = 1e30, bestp = 1e30;
    char buf[32], *text = NULL;
    size_t tlen = 0, nlines = 0;
    FILE *fp = NULL;

    if (argc > 2 && strcmp(argv[1], "--program") == 0)
        return bench_parse_file(argv[2], argc > 3 ? atoi(argv[3]) : 3);
    memset(&b, 0, sizeof b);
    b.layers = layers > 0 ? layers : 12;
    t0 = as_now();
    if (as_sim_prog_new("gpt3-175b", NSTAGES * TP, &p, &err) != AS_OK || bench_ops(p, &b, &err))
        goto fail;
    for (s = 0; s < NSTAGES; s++) {
        memset(&st[s], 0, sizeof st[s]);
        for (i = 0; i < (size_t)TP; i++)
            devs[s][i] = s * TP + i;
        st[s].devs = devs[s];
        st[s].ndevs = TP;
        st[s].act_bytes = b.ar_bytes;
        st[s].fwd = 1; /* nominal: orders the passes; the events carry the real costs */
        st[s].bwd = 2;
        /* 175e9 params / 64 devices: bf16 weights + fp32 master, grads, two Adam moments */
        st[s].param_bytes = 175e9 / (NSTAGES * TP) * 16;
    }
    as_sim_pipe_opts_init(&o);
    o.sched = AS_SIM_1F1B;
    o.nmicro = k > 0 ? k : 32;
    o.emit = bench_emit;
    o.ud = &b;
    if (as_sim_pipeline(p, st, NSTAGES, &o, &err) != AS_OK)
        goto fail;
    tb = as_now() - t0;
    for (i = 0; i < (runs > 0 ? runs : 1); i++) {
        as_sim_result_free(r);
        r = NULL;
        t0 = cpu_now();
        if (as_sim_run(p, NULL, &r, &err) != AS_OK)
            goto fail;
        if (cpu_now() - t0 < best)
            best = cpu_now() - t0;
    }
    /* the program as text, parsed back: lines per CPU second */
    fp = open_memstream(&text, &tlen);
    if (fp == NULL || as_sim_prog_write(p, fp, &err) != AS_OK)
        goto fail;
    fclose(fp);
    fp = NULL;
    for (i = 0; i < tlen; i++)
        nlines += text[i] == '\n';
    for (i = 0; i < (size_t)(runs > 0 ? runs : 1); i++) {
        as_sim_prog *q = NULL;
        t0 = cpu_now();
        if (as_sim_prog_parse("bench", text, &q, &err) != AS_OK)
            goto fail;
        if (cpu_now() - t0 < bestp)
            bestp = cpu_now() - t0;
        as_sim_prog_free(q);
    }
    printf("bench_sim: gpt3-175b-like, 64 devices (P=%d x TP=%d), %d layers/stage, K=%d, 1f1b\n",
           NSTAGES, TP, b.layers, o.nmicro);
    printf("  events           %zu\n", as_sim_prog_nevents(p));
    printf("  build time       %.3f s (wall)\n", tb);
    printf("  simulate time    %.3f s of CPU (best of %d)\n", best, runs > 0 ? runs : 1);
    printf("  events/s         %.3g per CPU second\n", (double)as_sim_prog_nevents(p) / best);
    printf("  program text     %zu lines, %.1f MB\n", nlines, (double)tlen / 1e6);
    printf("  parse time       %.3f s of CPU (best of %d)\n", bestp, runs > 0 ? runs : 1);
    printf("  lines/s          %.3g per CPU second (%.0f MB/s)\n", (double)nlines / bestp,
           (double)tlen / 1e6 / bestp);
    printf("  cost cache       %zu hits, %zu misses\n", r->cost_hits, r->cost_misses);
    printf("  iteration time   %.4g s (simulated), bubble %.3f\n", r->time, r->bubble);
    printf("  peak memory dev0 %s%s\n", as_fmt_bytes(r->dev[0].peak, buf, sizeof buf),
           r->dev[0].oom ? " (OOM)" : "");
    printf("  peak RSS         %s\n", as_fmt_bytes((double)as_peak_rss(), buf, sizeof buf));
    as_sim_result_free(r);
    as_sim_prog_free(p);
    free(text);
    return 0;
fail:
    if (fp != NULL)
        fclose(fp);
    free(text);
    fprintf(stderr, "bench_sim: %s\n", err.msg);
    as_sim_result_free(r);
    as_sim_prog_free(p);
    return 1;
}
