/* test_sim.c -- the schedule-exact simulator against hand-computed
 * timelines: program order and swaps, overlap, collective sync, pipeline
 * bubbles and memory, peak memory, deadlocks, malformed programs, the
 * distir cost model, the cost cache and the balanced split.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tap.h"

/* Parse TEXT; NULL (with a diagnostic) on error. */
static as_sim_prog *
parse(const char *text)
{
    as_sim_prog *p = NULL;
    as_err err = {0};

    if (as_sim_prog_parse("t.prog", text, &p, &err) != AS_OK) {
        diag("parse failed: %s", err.msg);
        return NULL;
    }
    return p;
}

/* Simulate TEXT; returns the iteration time, or -1 on error (message in ERR). */
static double
sim_time(const char *text, int overlap, as_err *err)
{
    as_sim_prog *p = NULL;
    as_sim_result *r = NULL;
    as_sim_opts o;
    double t = -1;

    as_sim_opts_init(&o);
    o.overlap = overlap;
    if (as_sim_prog_parse("t.prog", text, &p, err) == AS_OK && as_sim_run(p, &o, &r, err) == AS_OK)
        t = r->time;
    as_sim_result_free(r);
    as_sim_prog_free(p);
    return t;
}

/* Index of the first event labelled LABEL. */
static size_t
find_event(const as_sim_prog *p, const char *label)
{
    size_t i;

    for (i = 0; i < as_sim_prog_nevents(p); i++)
        if (strcmp(as_sim_event_label(p, i), label) == 0)
            return i;
    return (size_t)-1;
}

static void
test_swap(void)
{
    /* dev1 runs the send then c (2 s): with one stream the send waits for a (ends 1),
     * so s 1-1.5, c 1.5-3.5, d 3.5-4.5.  Swapped: c 0-2, s 2-2.5, d 2.5-3.5. */
    const char *a = "program swap devices=2\n"
                    "a: compute dev=0 time=1 writes=h:100\n"
                    "s: send dev=0->1 tensor=h bytes=100 time=0.5\n"
                    "c: compute dev=1 time=2 writes=z:0\n"
                    "d: compute dev=1 time=1 reads=h,z\n";
    const char *b = "program swap devices=2\n"
                    "a: compute dev=0 time=1 writes=h:100\n"
                    "c: compute dev=1 time=2 writes=z:0\n"
                    "s: send dev=0->1 tensor=h bytes=100 time=0.5\n"
                    "d: compute dev=1 time=1 reads=h,z\n";
    as_err err = {0};

    is_double(sim_time(a, 0, &err), 4.5, 1e-12, "swap: send before compute, one stream: 4.5 s");
    is_double(sim_time(b, 0, &err), 3.5, 1e-12, "swap: compute before send, one stream: 3.5 s");
    /* with two streams the send overlaps c: d starts at max(1.5, 2) = 2 either way */
    is_double(sim_time(a, 1, &err), 3.0, 1e-12, "swap: overlap hides the order (3 s)");
    is_double(sim_time(b, 1, &err), 3.0, 1e-12, "swap: overlap, swapped (3 s)");
}

static void
test_swap_comm(void)
{
    /* Two sends share dev1's comm stream: s1 (0->1, ready at 1) before s2 (2->1, ready at 0)
     * makes s2 wait: s1 1-2, s2 2-3, d reads y: 3-4.  Swapped: s2 0-1, d 1-2 (s1 1-2). */
    const char *a = "program swap2 devices=3\n"
                    "input 2 y 8\n"
                    "a: compute dev=0 time=1 writes=x:8\n"
                    "s1: send dev=0->1 tensor=x time=1\n"
                    "s2: send dev=2->1 tensor=y time=1\n"
                    "d: compute dev=1 time=1 reads=y\n";
    const char *b = "program swap2 devices=3\n"
                    "input 2 y 8\n"
                    "a: compute dev=0 time=1 writes=x:8\n"
                    "s2: send dev=2->1 tensor=y time=1\n"
                    "s1: send dev=0->1 tensor=x time=1\n"
                    "d: compute dev=1 time=1 reads=y\n";
    as_err err = {0};

    is_double(sim_time(a, 1, &err), 4.0, 1e-12, "swap of two sends on one comm stream: 4 s");
    is_double(sim_time(b, 1, &err), 2.0, 1e-12, "swapped sends: 2 s");
}

static void
test_overlap(void)
{
    /* c1 0-1, all-reduce 1-1.5 on comm, c2 independent: 1-2 (overlap) or 1.5-2.5 (not) */
    const char *t = "program ov devices=2\n"
                    "c1: compute dev=0,1 time=1 writes=g:0\n"
                    "ar: all-reduce group=0,1 bytes=0 time=0.5 reads=g writes=g2:0\n"
                    "c2: compute dev=0,1 time=1 writes=q:0\n";
    as_err err = {0};

    is_double(sim_time(t, 1, &err), 2.0, 1e-12, "overlap: all-reduce hidden behind c2 (2 s)");
    is_double(sim_time(t, 0, &err), 2.5, 1e-12, "no overlap: serialised (2.5 s)");
}

static void
test_sync(void)
{
    const char *t = "program sync devices=3\n"
                    "a: compute dev=0 time=1 writes=u:0\n"
                    "b: compute dev=1 time=3 writes=v:0\n"
                    "c: compute dev=2 time=2 writes=w:0\n"
                    "ar: all-reduce group=0-2 bytes=0 time=0.5 stream=compute\n"
                    "n0: compute dev=0 time=1\n"
                    "n2: compute dev=2 time=1\n";
    as_sim_prog *p = parse(t);
    as_sim_result *r = NULL;
    as_err err = {0};
    size_t ar, n0, n2;

    ok(p != NULL && as_sim_run(p, NULL, &r, &err) == AS_OK, "sync program runs");
    if (r == NULL) {
        as_sim_prog_free(p);
        return;
    }
    ar = find_event(p, "ar");
    n0 = find_event(p, "n0");
    n2 = find_event(p, "n2");
    is_double(r->start[ar], 3.0, 1e-12, "collective starts when the last participant arrives");
    is_double(r->end[ar], 3.5, 1e-12, "collective ends at 3.5");
    is_double(r->start[n0], 3.5, 1e-12, "device 0 continues at the common end");
    is_double(r->start[n2], 3.5, 1e-12, "device 2 continues at the common end");
    is_double(r->time, 4.5, 1e-12, "iteration 4.5 s");
    is_double(r->dev[0].idle, 4.5 - 2.5, 1e-12, "device 0 idles 2 s (it waits 2 s for dev 1)");
    ok(r->ncrit == 3 && r->crit[0] == (int32_t)find_event(p, "b") && r->crit[1] == (int32_t)ar,
       "critical path b -> ar -> n*");
    ok(r->ncrit == 3 && r->crit_why[1] == AS_SIM_WHY_SYNC, "ar waited for the last participant");
    as_sim_result_free(r);
    as_sim_prog_free(p);
}

/* Simulate a P-stage pipeline of equal stages; fills *PEAK0 with device 0's peak. */
static as_sim_result *
run_pipe(int np, int k, as_sim_sched sched, double f, double b, double stash, int dp,
         as_sim_prog **pp)
{
    as_sim_stage st[16];
    int devs[16];
    as_sim_pipe_opts o;
    as_sim_prog *p = NULL;
    as_sim_result *r = NULL;
    as_err err = {0};
    int s;

    for (s = 0; s < np; s++) {
        devs[s] = s;
        memset(&st[s], 0, sizeof st[s]);
        st[s].devs = &devs[s];
        st[s].ndevs = 1;
        st[s].fwd = f;
        st[s].bwd = b;
        st[s].stash_bytes = stash;
        st[s].act_bytes = 0;
        st[s].grad_bytes = 1e6;
        st[s].param_bytes = 100;
    }
    as_sim_pipe_opts_init(&o);
    o.sched = sched;
    o.nmicro = k;
    o.dp = dp;
    o.send_time = 0;
    o.ar_time = 0.25;
    if (as_sim_prog_new("pipe", np * dp, &p, &err) != AS_OK ||
        as_sim_pipeline(p, st, np, &o, &err) != AS_OK || as_sim_run(p, NULL, &r, &err) != AS_OK)
        diag("pipeline P=%d K=%d: %s", np, k, err.msg);
    *pp = p;
    return r;
}

static void
test_bubble(void)
{
    static const int cases[][2] = {{2, 1}, {2, 4}, {4, 4}, {4, 8}, {8, 16}, {3, 5}, {8, 32}};
    size_t i;
    int sc;

    for (sc = 0; sc < 2; sc++)
        for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            int np = cases[i][0], k = cases[i][1];
            as_sim_prog *p = NULL;
            as_sim_result *r = run_pipe(np, k, sc ? AS_SIM_1F1B : AS_SIM_GPIPE, 1.0, 2.0, 0, 1, &p);

            if (r == NULL) {
                ok(0, "pipeline P=%d K=%d ran", np, k);
                as_sim_prog_free(p);
                continue;
            }
            is_double(r->bubble, (double)(np - 1) / (k + np - 1), 1e-12,
                      "%s P=%d K=%d: bubble = (P-1)/(K+P-1)", sc ? "1f1b" : "gpipe", np, k);
            is_double(r->time, 3.0 * (k + np - 1), 1e-12, "%s P=%d K=%d: time = (K+P-1)(f+b)",
                      sc ? "1f1b" : "gpipe", np, k);
            as_sim_result_free(r);
            as_sim_prog_free(p);
        }
}

static void
test_pipe_memory(void)
{
    as_sim_prog *p1 = NULL, *p2 = NULL;
    as_sim_result *g = run_pipe(4, 8, AS_SIM_GPIPE, 1, 2, 1000, 1, &p1);
    as_sim_result *f = run_pipe(4, 8, AS_SIM_1F1B, 1, 2, 1000, 1, &p2);

    if (g != NULL && f != NULL) {
        /* stage 0 keeps every microbatch's stash under GPipe (K), at most P under 1F1B */
        is_double(g->dev[0].peak, 100 + 8 * 1000, 1e-12, "gpipe stage 0 peak: params + K stashes");
        is_double(f->dev[0].peak, 100 + 4 * 1000, 1e-12, "1f1b stage 0 peak: params + P stashes");
        ok(f->dev[0].peak < g->dev[0].peak, "1f1b peak activation memory below gpipe (K > P)");
        is_double(f->dev[3].peak, 100 + 1000, 1e-12, "1f1b last stage holds one stash");
    } else {
        ok(0, "pipelines for memory ran");
    }
    as_sim_result_free(g);
    as_sim_result_free(f);
    as_sim_prog_free(p1);
    as_sim_prog_free(p2);
}

static void
test_pipe_dp(void)
{
    as_sim_prog *p = NULL;
    as_sim_result *r = run_pipe(2, 2, AS_SIM_GPIPE, 1, 1, 10, 2, &p);

    if (r == NULL) {
        ok(0, "dp pipeline ran");
        as_sim_prog_free(p);
        return;
    }
    /* each replica: (K+P-1)(f+b) = 6 s; stage 1 ends its backwards at 5, stage 0 at 6;
     * the dp all-reduce of stage 0 (0.25 s) ends last */
    is_double(r->time, 6.25, 1e-12, "pipeline + data-parallel all-reduce: 6.25 s");
    ok(find_event(p, "dp-allreduce0.0") != (size_t)-1, "dp all-reduce emitted");
    is_int(as_sim_prog_ndevices(p), 4, "2 stages x 2 replicas");
    as_sim_result_free(r);
    as_sim_prog_free(p);
}

static void
test_memory(void)
{
    /* x [0,1] 100, h [0,2] 200, i [1,3] 300, o [2,3] 50; resident 1000.
     * t=0: 300; t=1: 500 (x freed first); t=2: 350.  Peak 1500 at t=1. */
    const char *t = "program mem devices=1\n"
                    "resident 0 w 1000\n"
                    "input 0 x 100\n"
                    "a: compute dev=0 time=1 reads=x writes=h:200\n"
                    "b: compute dev=0 time=1 reads=h writes=i:300\n"
                    "c: compute dev=0 time=1 reads=i,w writes=o:50\n";
    as_sim_prog *p = parse(t);
    as_sim_result *r = NULL;
    as_sim_opts o;
    as_err err = {0};

    as_sim_opts_init(&o);
    o.capacity = 1400;
    if (p == NULL || as_sim_run(p, &o, &r, &err) != AS_OK) {
        ok(0, "memory program runs: %s", err.msg);
        as_sim_prog_free(p);
        return;
    }
    is_double(r->dev[0].peak, 1500, 1e-12, "peak memory 1500 bytes (hand-computed)");
    is_double(r->dev[0].peak_time, 1.0, 1e-12, "peak reached at t = 1");
    is_double(r->dev[0].resident, 1000, 1e-12, "resident bytes counted");
    ok(r->dev[0].oom == 1, "capacity 1400: OOM flagged");
    as_sim_result_free(r);
    o.capacity = 1500;
    r = NULL;
    ok(as_sim_run(p, &o, &r, &err) == AS_OK && r->dev[0].oom == 0, "capacity 1500: fits");
    as_sim_result_free(r);
    as_sim_prog_free(p);
}

/* Expect simulating TEXT to fail with a message containing WANT. */
static void
expect_error(const char *text, int overlap, const char *want, const char *desc)
{
    as_err err = {0};
    double t = sim_time(text, overlap, &err);

    if (!ok(t < 0 && strstr(err.msg, want) != NULL && err.code == AS_EPARSE, "%s", desc))
        diag("  message: '%s' (wanted '%s')", err.msg, want);
}

static void
test_deadlock(void)
{
    const char *cycle = "program dl devices=2\n"
                        "e1: compute dev=0 time=1 reads=b writes=a:8\n"
                        "e2: send dev=0->1 tensor=a bytes=8\n"
                        "e3: compute dev=1 time=1 reads=a writes=b:8\n"
                        "e4: send dev=1->0 tensor=b bytes=8\n";
    /* the send waits for a later compute: fine on two streams, a deadlock on one */
    const char *order = "program dl2 devices=2\n"
                        "s: send dev=0->1 tensor=p bytes=8 time=1\n"
                        "c: compute dev=0 time=1 writes=p:8\n";
    as_err err = {0};

    expect_error(cycle, 1, "deadlock: 4 of 4 events can never start", "data cycle: deadlock");
    expect_error(cycle, 1, "line 2 'e1'", "deadlock names line 2");
    expect_error(cycle, 1, "line 5 'e4'", "deadlock names line 5");
    is_double(sim_time(order, 1, &err), 2.0, 1e-12, "send after its producer on another stream");
    expect_error(order, 0, "line 2 's' waits for line 3 'c'", "one stream: program-order deadlock");
}

/* 60 more fields: 4 + 60 is the limit, so one more is too many */
#define FIELDS10 " a a a a a a a a a a"
#define FIELDS60 FIELDS10 FIELDS10 FIELDS10 FIELDS10 FIELDS10 FIELDS10 " a"

static void
test_parse_errors(void)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"program x devices=2\ne: compute dev=2 time=1\n", "t.prog:2:16: unknown device 2"},
        {"program x devices=2\ne: send dev=0->5 tensor=q bytes=1\n",
         "t.prog:2:13: unknown device 5"},
        {"program x devices=2\ne: compute dev=0 time=1.2.3\n", "t.prog:2:23: bad number '1.2.3'"},
        {"program x devices=2\ne: compute dev=0 time=abc\n", "bad number 'abc' for 'time'"},
        {"program x devices=2\ne: compute dev=0 time=\n", "t.prog:2:23: missing value for 'time'"},
        {"program x devices=2\ne: compute dev=0\n", "t.prog:2:17: compute needs time= or op="},
        {"program x devices=2\ne:\n", "t.prog:2:3: expected an event kind"},
        {"program x devices=2\n%%garbage!\n", "t.prog:2:1: unknown statement '%%garbage!'"},
        {"e: compute dev=0 time=1\n", "t.prog:1:1: expected 'program NAME devices=N' first"},
        {"program x\n", "t.prog:1:1: program header needs devices=N"},
        {"program x devices=0\n", "devices must be an integer"},
        {"", "empty program"},
        {"program x devices=2\ne: compute dev=0 time=1 reads=nope\n",
         "t.prog:2:31: tensor 'nope' on device 0 is never produced"},
        {"program x devices=2\na: compute dev=0 time=1 writes=h:1\n"
         "b: compute dev=0 time=1 writes=h:1\n",
         "t.prog:3:4: tensor 'h' on device 0 is already written at line 2"},
        {"program x devices=2\ne: compute dev=0 op=frobnicate in=f32[2]\n",
         "unknown op type 'frobnicate'"},
        {"program x devices=2\ne: compute dev=0 op=matmul in=f32[2,3],f32[4,5]\n", "t.prog:2:4:"},
        {"program x devices=2\ne: compute dev=0 op=matmul in=f32[2,3\n", "lacks ']'"},
        {"program x devices=2\ne: all-reduce group=0,1 reads=q\n", "all-reduce needs bytes="},
        {"program x devices=2\ne: all-reduce group=0,0 bytes=1\n", "device 0 listed twice"},
        {"program x devices=2\ne: compute dev=0 time=1 color=red\n", "unknown key 'color'"},
        {"program x devices=2\nresident 0 w\n", "expected 'resident DEVICES NAME BYTES'"},
        {"program x devices=2\ne: send dev=0->0 tensor=q bytes=1\n", "device 0 listed twice"},
        /* the one-pass tokenizer: control characters, field limit, repeated values */
        {"program x devices=2\ne: compute dev=0 time=1\001\n",
         "t.prog:2:24: unexpected control character"},
        {"program x devices=2\ne: compute\tdev=0 \b time=1 # \001\n",
         "t.prog:2:18: unexpected control character"},
        {"program x devices=2\ne: compute dev=0 time=1" FIELDS60 "\001\n",
         "t.prog:2:146: unexpected control character"},
        {"program x devices=2\ne: compute dev=0 time=1" FIELDS60 "\n",
         "t.prog:2:1: too many fields on one line (at most 64)"},
        {"program x devices=2\na: compute dev=0,1 time=1 writes=h:1\n"
         "b: compute dev=1 time=1 writes=h:1\n",
         "t.prog:3:4: tensor 'h' on device 1 is already written at line 2"},
        {"program x devices=2\na: compute dev=0 time=1 writes=h:1\n"
         "b: compute dev=0 time=1 reads=h\nc: compute dev=1 time=1 reads=h\n",
         "t.prog:4:31: tensor 'h' on device 1 is never produced"},
    };
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        as_sim_prog *p = NULL;
        as_err err = {0};
        int rc = as_sim_prog_parse("t.prog", bad[i].text, &p, &err);

        if (!ok(rc == AS_EPARSE && strstr(err.msg, bad[i].want) != NULL, "malformed %zu: %s", i,
                bad[i].want))
            diag("  rc %d, message '%s'", rc, err.msg);
        as_sim_prog_free(p);
    }
}

/* Buffers by device: a tensor's row grows both ways, a sparse one moves to the hash. */
static void
test_buffer_index(void)
{
    const char *t = "program sp devices=1000\n"
                    "a: compute dev=500 time=1 writes=h:8\n"
                    "b: compute dev=3 time=1 writes=h:8\n"   /* below the row: sparse, hashed */
                    "c: compute dev=999 time=1 writes=h:8\n"
                    "d: compute dev=10 time=1 writes=k:8\n"
                    "e: compute dev=9 time=1 writes=k:8\n"   /* the row grows down */
                    "f: compute dev=40 time=1 writes=k:8\n"  /* and up */
                    "g: compute dev=3 time=1 reads=h\n"
                    "h: compute dev=999 time=1 reads=h\n"
                    "i: compute dev=500 time=1 reads=h,k\n"  /* k is never produced on 500 */
                    "j: compute dev=9 time=1 reads=k\n";
    const char *u = "program sp devices=1000\n"
                    "a: compute dev=500 time=1 writes=h:8\n"
                    "b: compute dev=3 time=1 writes=h:8\n"
                    "c: compute dev=999 time=1 writes=h:8\n"
                    "d: compute dev=10 time=1 writes=k:8\n"
                    "e: compute dev=9 time=1 writes=k:8\n"
                    "f: compute dev=40 time=1 writes=k:8\n"
                    "g: compute dev=3 time=1 reads=h\n"
                    "h: compute dev=999 time=1 reads=h\n"
                    "i: compute dev=40,9,10 time=2 reads=k\n"
                    "j: compute dev=500 time=1 reads=h\n"
                    "k: compute dev=3 time=1 writes=h:8\n";
    as_err err = {0};

    expect_error(t, 1, "t.prog:10:33: tensor 'k' on device 500 is never produced",
                 "sparse and growing rows: a read nobody produces");
    expect_error(u, 1, "t.prog:12:4: tensor 'h' on device 3 is already written at line 3",
                 "hashed tensor: written twice on one device");
    /* without the last line: every read finds its buffer */
    {
        char v[1024];
        const char *end = strstr(u, "k: compute");

        memcpy(v, u, (size_t)(end - u));
        v[end - u] = '\0';
        is_double(sim_time(v, 1, &err), 3.0, 1e-12, "sparse and growing rows: every read found");
    }
}

static void
test_distir(void)
{
    const char *t = "program d devices=16 hw=a100-dgx cost=distir\n"
                    "mm: compute dev=0 op=matmul in=f32[512,1024],f32[1024,256]\n"
                    "input 0 x 8\n"
                    "s: send dev=0->1 tensor=x bytes=1000000\n"
                    "ar: all-reduce group=0-3 bytes=4000000\n"
                    "ar16: all-reduce group=0-15 bytes=4000000\n";
    as_sim_prog *p = parse(t);
    as_sim_result *r = NULL;
    as_err err = {0};
    as_hw hw;
    double want, d;
    size_t e;

    as_hw_find_builtin("a100-dgx", &hw);
    as_hw_derive(&hw);
    if (p == NULL || as_sim_run(p, NULL, &r, &err) != AS_OK) {
        ok(0, "distir program runs: %s", err.msg);
        as_sim_prog_free(p);
        return;
    }
    is_str(r->model, "distir", "cost model from the header");
    e = find_event(p, "mm");
    want = hw.distir_overhead + (512.0 * 1024 + 1024.0 * 256) * 4 / hw.distir_dram_bandwidth +
           2.0 * 512 * 1024 * 256 / hw.distir_throughput;
    is_double(r->end[e] - r->start[e], want, 1e-12,
              "distir matmul: overhead + input bytes/dram_bw + 2mkn/throughput");
    e = find_event(p, "s");
    want = 1e6 / hw.distir_link_bandwidth;
    is_double(r->end[e] - r->start[e], want, 1e-12, "distir send: bytes / bandwidth");
    d = want;
    e = find_event(p, "ar");
    d += r->end[e] - r->start[e];
    is_double(r->end[e] - r->start[e], 2.0 * 3 / 4 * 4e6 / hw.distir_link_bandwidth, 1e-12,
              "distir all-reduce over 4: 2(n-1)/n S / bw");
    e = find_event(p, "ar16");
    is_double(r->end[e] - r->start[e], 2.0 * 15 / 16 * 4e6 / hw.distir_inter_link_bandwidth, 1e-12,
              "distir all-reduce over 2 nodes uses the inter-node bandwidth");
    is_double(r->dev[1].comm, d + (r->end[e] - r->start[e]), 1e-12,
              "the send occupies the receiver too (device 1: send + both all-reduces)");
    as_sim_result_free(r);
    as_sim_prog_free(p);
}

static void
test_cache(void)
{
    const char *t = "program c devices=2\n"
                    "m: compute dev=0,1 op=matmul in=f32[64,64],f32[64,64] writes=a\n"
                    "m2: compute dev=0,1 op=matmul in=f32[64,64],f32[64,64] reads=a writes=b\n"
                    "m3: compute dev=0,1 op=matmul in=f32[64,64],f32[64,64] attr.transpose_b=1 "
                    "reads=b writes=c\n"
                    "ar1: all-reduce group=0,1 bytes=4096 reads=c writes=d\n"
                    "ar2: all-reduce group=0,1 bytes=4096 reads=d writes=e\n"
                    "ar3: all-reduce group=0,1 bytes=8192 reads=e writes=f\n";
    as_sim_prog *p = parse(t);
    as_sim_result *r = NULL;
    as_err err = {0};
    size_t a, b;

    if (p == NULL || as_sim_run(p, NULL, &r, &err) != AS_OK) {
        ok(0, "cache program runs: %s", err.msg);
        as_sim_prog_free(p);
        return;
    }
    /* distinct: matmul, matmul^T, ar 4096, ar 8192 = 4; the other 5 events hit */
    is_int(r->cost_misses, 4, "4 distinct signatures costed once each");
    is_int(r->cost_hits, 5, "5 events costed from the cache");
    a = find_event(p, "m");
    b = find_event(p, "m2");
    is_double(r->end[b] - r->start[b], r->end[a] - r->start[a], 0, "identical ops cost the same");
    ok(r->dev[0].peak >= 64 * 64 * 4 * 2, "default write bytes from the inferred output shape");
    as_sim_result_free(r);
    as_sim_prog_free(p);
}

static void
test_split(void)
{
    static const double c1[] = {1, 2, 3, 4, 5};
    static const double c2[] = {5, 1, 1, 1, 1, 1};
    static const double c3[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7};
    size_t b[8];
    double mx = 0;
    as_err err = {0};

    ok(as_sim_balanced_split(c1, 5, 2, b, &mx, &err) == AS_OK && mx == 9 && b[1] == 3 && b[2] == 5,
       "split 1..5 in 2: max 9 at [1,2,3|4,5]");
    ok(as_sim_balanced_split(c1, 5, 3, b, &mx, &err) == AS_OK && mx == 6, "split 1..5 in 3: 6");
    ok(as_sim_balanced_split(c1, 5, 5, b, &mx, &err) == AS_OK && mx == 5 && b[1] == 1 &&
           b[4] == 4,
       "split into singletons");
    ok(as_sim_balanced_split(c2, 6, 3, b, &mx, &err) == AS_OK && mx == 5 && b[0] == 0 &&
           b[3] == 6 && b[1] < b[2],
       "split {5,1,1,1,1,1} in 3: 5, non-empty parts");
    ok(as_sim_balanced_split(c3, 7, 3, b, &mx, &err) == AS_OK && fabs(mx - 1.1) < 1e-12,
       "split 0.1..0.7 in 3: 1.1");
    ok(as_sim_balanced_split(c1, 5, 6, b, &mx, &err) == AS_EUSAGE, "more stages than ops");
}

static void
test_roundtrip(void)
{
    as_sim_prog *p = NULL, *q = NULL;
    as_err err = {0};
    int32_t x, h, y;
    double hb = 4096;
    int g[2] = {0, 1};
    char *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    FILE *f;
    int rc;

    as_sim_prog_new("built", 2, &p, &err);
    as_sim_prog_set_batch(p, 32);
    x = as_sim_tensor(p, "x");
    h = as_sim_tensor(p, "h");
    y = as_sim_tensor(p, "y");
    rc = as_sim_declare(p, AS_SIM_INPUT, g, 2, x, 1024, &err);
    rc = rc ? rc : as_sim_add_compute(p, 0, 1e-3, &x, 1, &h, &hb, 1, "f0", &err);
    rc = rc ? rc : as_sim_add_send(p, 0, 1, h, -1, -1, "s", &err);
    rc = rc ? rc : as_sim_add_compute(p, 1, 2e-3, &h, 1, &y, &hb, 1, "f1", &err);
    rc = rc ? rc : as_sim_add_compute(p, 0, 2e-3, &x, 1, &y, &hb, 1, "f1b", &err);
    rc = rc ? rc : as_sim_add_collective(p, AS_COLL_ALL_GATHER, g, 2, 8192, -1, &y, 1, &x, NULL,
                                         0, "ag", &err);
    ok(rc == AS_OK, "builder: program built (%s)", err.msg);
    rc = as_sim_add_compute(p, 0, 1, NULL, 0, &h, &hb, 1, "dup", &err);
    ok(rc == AS_EUSAGE && strstr(err.msg, "event 'dup'") && strstr(err.msg, "already written"),
       "builder: double write named by label");
    rc = as_sim_add_compute(p, 7, 1, NULL, 0, NULL, NULL, 0, "far", &err);
    ok(rc == AS_EUSAGE && strstr(err.msg, "unknown device 7"), "builder: unknown device");
    f = open_memstream(&b1, &n1);
    as_sim_prog_write(p, f, &err);
    fclose(f);
    as_err_clear(&err);
    ok(as_sim_prog_parse("rt.prog", b1, &q, &err) == AS_OK, "written program parses (%s)",
       err.msg);
    if (q != NULL) {
        f = open_memstream(&b2, &n2);
        as_sim_prog_write(q, f, &err);
        fclose(f);
        is_str(b2, b1, "write -> parse -> write is identical");
    }
    ok(b1 != NULL && strstr(b1, "s: send dev=0->1 tensor=h bytes=4096") != NULL,
       "send bytes default to the tensor size");
    free(b1);
    free(b2);
    as_sim_prog_free(q);
    as_sim_prog_free(p);
}

int
main(void)
{
    plan_lazy();
    test_swap();
    test_swap_comm();
    test_overlap();
    test_sync();
    test_bubble();
    test_pipe_memory();
    test_pipe_dp();
    test_memory();
    test_deadlock();
    test_parse_errors();
    test_buffer_index();
    test_distir();
    test_cache();
    test_split();
    test_roundtrip();
    return done_testing();
}
