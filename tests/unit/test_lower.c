/* test_lower.c -- lowering graphs under sharding plans (src/sim/lower.c)
 * and re-ranking (src/sim/rank.c).
 *
 * A three-layer MLP training step (tests/data/sim/mlp.asg) under a
 * Megatron plan on tp=2 and a data-parallel plan on dp=2, both built here
 * by strategy name: the collectives inserted are exactly the expected
 * ones; with --no-overlap the simulated time equals the sum of the costs
 * of device 0's events computed independently with the cost model; plan
 * mismatches are rejected naming the first one; text round trip; P=2 K=4
 * pipelines under gpipe and 1f1b; rank correlations.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formulate/plan.h"
#include "graph/io.h"
#include "sim/lower.h"
#include "sim/sim_internal.h"
#include "spmd/rules.h"
#include "spmd/strategy.h"
#include "tap.h"


typedef struct pick {
    const char *name, *choice; /* op -> strategy name, declared tensor -> spec text */
} pick;

static const pick megatron[] = {
    {"w1", "[None,tp]"}, {"w2", "[tp,None]"},
    {"h", "column(tp)"}, {"a", "S(in0:1@tp)"}, {"p", "row(tp)+allreduce"},
    {"d.p", "column(tp)"}, {"d.p.1", "batch1(tp)"}, {"d.a", "S(in0:1,in1:1@tp)"},
    {"d.h", "row(tp)+allreduce"}, {"d.h.2", "column(tp)"},
    {"w1.new", "S(in0:1,in1:1@tp)"}, {"w2.new", "S(in0:0,in1:0@tp)"},
    {NULL, NULL}};

static const pick dataparallel[] = {
    {"x", "[dp,None]"}, {"y", "[dp,None]"},
    {"h0", "batch(dp)"}, {"a0", "S(in0:0@dp)"}, {"h", "batch(dp)"}, {"a", "S(in0:0@dp)"},
    {"p", "batch(dp)"}, {"l", "S(in0:0,in1:0@dp)"}, {"d.l", "S(in1:0,in2:0@dp)"},
    {"d.p", "batch(dp)"}, {"d.p.1", "row(dp)+allreduce"}, {"d.a", "S(in0:0,in1:0@dp)"},
    {"d.h", "batch(dp)"}, {"d.h.2", "row(dp)+allreduce"}, {"d.a0", "S(in0:0,in1:0@dp)"},
    {"d.h0", "row(dp)"}, /* kept partial: the optimizer's input resharding all-reduces it */
    {NULL, NULL}};

static const pick replicated[] = {{NULL, NULL}};

/* sq.asg (hidden size = batch size) data parallel: every activation and its gradient split by
 * rows; weight gradients partial, resolved by their own all-reduce or by the optimizer's input
 * resharding (d.h0). */
static const pick sqdp[] = {
    {"x", "[dp,None]"}, {"y", "[dp,None]"},
    {"h0", "batch(dp)"}, {"a0", "S(in0:0@dp)"}, {"h1", "batch(dp)"}, {"a1", "S(in0:0@dp)"},
    {"h2", "batch(dp)"}, {"a2", "S(in0:0@dp)"}, {"p", "batch(dp)"},
    {"l", "S(in0:0,in1:0@dp)"}, {"d.l", "S(in1:0,in2:0@dp)"},
    {"d.p", "batch(dp)"}, {"d.p.1", "row(dp)+allreduce"}, {"d.a2", "S(in0:0,in1:0@dp)"},
    {"d.h2", "batch(dp)"}, {"d.h2.2", "row(dp)+allreduce"}, {"d.a1", "S(in0:0,in1:0@dp)"},
    {"d.h1", "batch(dp)"}, {"d.h1.3", "row(dp)+allreduce"}, {"d.a0", "S(in0:0,in1:0@dp)"},
    {"d.h0", "row(dp)"},
    {NULL, NULL}};

static const char *
pick_of(const pick *p, const char *name)
{
    for (; p->name != NULL; p++)
        if (strcmp(p->name, name) == 0)
            return p->choice;
    return NULL;
}

/* A plan for G on MESH choosing strategies and declared specs from PICKS (default replicated). */
static as_shard_plan *
make_plan(const as_graph *g, const char *mesh, const pick *picks)
{
    as_shard_plan *pl = NULL;
    as_cost_model *cm = NULL;
    as_strat_ctx *ctx;
    as_err err = {0};
    as_hw hw;
    int32_t i;
    int k;

    if (as_shard_plan_new(mesh, &pl, &err) != AS_OK || as_hw_load("a100-dgx", &hw, &err) != AS_OK ||
        as_cost_model_new(&as_cost_roofline, &hw, pl->mesh, NULL, 0, &cm, &err) != AS_OK) {
        diag("make_plan: %s", err.msg);
        return NULL;
    }
    ctx = as_strat_ctx_new(cm);
    pl->graph = as_shard_plan_strdup(pl, as_graph_name(g));
    pl->hw = as_shard_plan_strdup(pl, "a100-dgx");
    pl->cost_model = as_shard_plan_strdup(pl, "distir");
    for (i = 0; i < as_graph_ntensors(g); i++) {
        const as_tensor *t = as_graph_tensor(g, i);
        const char *c = pick_of(picks, t->name);
        as_spec s;
        if (t->producer >= 0)
            continue;
        as_spec_replicated(&s, t->shape.rank, as_mesh_naxes(pl->mesh));
        if (c != NULL && as_spec_parse(c, pl->mesh, t->shape.rank, &s, &err) != AS_OK)
            diag("spec %s: %s", c, err.msg);
        if (as_shard_plan_add_tensor(pl, t->name, t->kind, &t->shape, &s, &err) != AS_OK)
            diag("add %s: %s", t->name, err.msg);
    }
    for (i = 0; i < as_graph_nops(g); i++) {
        const as_op *op = as_graph_op(g, i);
        const char *c = pick_of(picks, op->name);
        const as_strategy_set *set;
        as_opview v;
        int idx;
        as_opview_init(&v, g, op);
        if (as_strat_op(ctx, &v.info, &set, &err) != AS_OK)
            diag("strat %s: %s", op->name, err.msg);
        as_opview_free(&v);
        idx = c ? as_strat_find(set, c) : 0;
        if (idx < 0) {
            diag("no strategy '%s' for %s", c, op->name);
            idx = 0;
        }
        as_shard_plan_add_op(pl, op->name, op->def->name, set->s[idx].name, idx);
        for (k = 0; k < op->nout; k++) {
            const as_tensor *t = as_graph_tensor(g, op->out[k]);
            if (as_shard_plan_add_tensor(pl, t->name, t->kind, &t->shape, &set->s[idx].out[k],
                                         &err) != AS_OK)
                diag("add %s: %s", t->name, err.msg);
        }
    }
    as_strat_ctx_free(ctx);
    as_cost_model_free(cm);
    return pl;
}

/* Collectives of P whose label contains KIND ("all-reduce"). */
static int
count_coll(const as_sim_prog *p, const char *kind)
{
    size_t i;
    int n = 0;

    for (i = 0; i < as_sim_prog_nevents(p); i++)
        if (as_sim_event_kind(p, i) == AS_SIM_COLL && strstr(as_sim_event_label(p, i), kind))
            n++;
    return n;
}

/* Expected no-overlap time: every event of device 0 costed with the model, summed. */
static double
hand_time(const as_sim_prog *p, const char *model)
{
    as_mesh *m = NULL;
    as_cost_model *cm = NULL;
    as_err err = {0};
    as_hw hw;
    double t = 0;
    size_t i;
    int64_t one = 2;

    as_mesh_new(1, &one, NULL, &m, &err);
    as_hw_load("a100-dgx", &hw, &err);
    as_cost_model_new(as_cost_model_find(model, &err), &hw, m, NULL, 0, &cm, &err);
    for (i = 0; i < p->ev.n; i++) {
        const sim_event *e = &p->ev.v[i];
        int on0 = 0, k;
        for (k = 0; k < e->ndev; k++)
            on0 |= p->devs.v[e->dev_off + k] == 0;
        if (!on0)
            continue;
        if (e->time >= 0) {
            t += e->time;
        } else if (e->kind == AS_SIM_COMPUTE) {
            t += as_cost_compute(cm, &p->ops.v[e->op].info);
        } else {
            as_comm_group gr = {e->ndev, AS_LINK_INTRA, -1};
            t += as_cost_collective_group(cm, (as_coll)e->coll, e->bytes, &gr);
        }
    }
    as_cost_model_free(cm);
    as_mesh_free(m);
    return t;
}

static int
lower_str(const as_graph *g, const as_shard_plan *pl, const as_lower_opts *lo, char *msg,
          size_t n)
{
    as_sim_prog *p = NULL;
    as_err err = {0};
    int rc = as_sim_lower(g, pl, lo, &p, &err);
    snprintf(msg, n, "%s", rc == AS_OK ? "" : err.msg);
    as_sim_prog_free(p);
    return rc;
}

static void
test_megatron(const as_graph *g)
{
    as_shard_plan *pl = make_plan(g, "tp=2", megatron);
    as_sim_prog *p = NULL;
    as_sim_result *r = NULL;
    as_sim_opts so;
    as_lower_opts lo;
    as_err err = {0};

    as_lower_opts_init(&lo);
    lo.plan_name = "megatron";
    ok(pl != NULL && as_sim_lower(g, pl, &lo, &p, &err) == AS_OK, "megatron lowers (%s)",
       err.msg);
    if (p == NULL)
        goto out;
    is_int(count_coll(p, "all-reduce"), 2, "megatron: two all-reduces (p forward, d.h backward)");
    is_int(count_coll(p, "all-gather") + count_coll(p, "reduce-scatter") +
               count_coll(p, "all-to-all"), 0, "megatron: no other collective");
    ok(count_coll(p, "p/all-reduce") == 1 && count_coll(p, "d.h/all-reduce") == 1,
       "megatron: on p and d.h");
    is_int(as_sim_prog_ndevices(p), 2, "two devices");
    as_sim_opts_init(&so);
    so.overlap = 0;
    ok(as_sim_run(p, &so, &r, &err) == AS_OK, "megatron simulates (%s)", err.msg);
    if (r != NULL) {
        double h = hand_time(p, "distir");
        is_double(r->time, h, 1e-12, "no-overlap time = hand sum with distir (%.9g)", h);
        ok(r->cost_hits > 0, "repeated signatures hit the cost cache (%zu hits)", r->cost_hits);
        is_double(r->throughput, 8 / r->time, 1e-9, "throughput = batch 8 / time");
        /* resident: w0 replicated (1 KiB) + w1, w2 halves (1 KiB each) + gradient buffers */
        is_double(r->dev[0].resident, 2 * (16 * 16 * 4 + 16 * 16 * 4 + 32 * 8 * 4), 0,
                  "resident: parameters and gradients, sharded per plan");
    }
out:
    as_sim_result_free(r);
    as_sim_prog_free(p);
    as_shard_plan_free(pl);
}

static void
test_dp(const as_graph *g)
{
    as_shard_plan *pl = make_plan(g, "dp=2", dataparallel);
    as_sim_prog *p = NULL;
    as_err err = {0};

    ok(pl != NULL && as_sim_lower(g, pl, NULL, &p, &err) == AS_OK, "data parallel lowers (%s)",
       err.msg);
    if (p != NULL) {
        is_int(count_coll(p, "all-reduce"), 3, "dp: one all-reduce per weight gradient");
        ok(count_coll(p, "d.h0/all-reduce") == 1 && count_coll(p, "d.h.2/all-reduce") == 1 &&
               count_coll(p, "d.p.1/all-reduce") == 1, "dp: on d.h0, d.h.2, d.p.1");
        is_int(count_coll(p, "all-gather") + count_coll(p, "all-to-all") +
                   count_coll(p, "reduce-scatter"), 0, "dp: nothing else");
    }
    as_sim_prog_free(p);
    as_shard_plan_free(pl);
}

static void
test_mismatch(const as_graph *g)
{
    as_shard_plan *pl = make_plan(g, "tp=2", megatron);
    as_lower_opts lo;
    char msg[512];
    size_t i;

    as_lower_opts_init(&lo);
    lo.plan_name = "p.json";
    for (i = 0; i < pl->nops; i++)
        if (strcmp(pl->ops[i].name, "d.a") == 0)
            pl->ops[i].index = 99;
    ok(lower_str(g, pl, &lo, msg, sizeof msg) == AS_OK,
       "a stale strategy index is only a hint: the name decides");
    for (i = 0; i < pl->nops; i++)
        if (strcmp(pl->ops[i].name, "d.a") == 0) {
            pl->ops[i].index = 2;
            pl->ops[i].name = "h.3.mlp.fc1";
        }
    ok(lower_str(g, pl, &lo, msg, sizeof msg) == AS_EUSAGE &&
           strcmp(msg, "plan 'p.json': op 'h.3.mlp.fc1' not in graph 'mlp'") == 0,
       "unknown op named: %s", msg);
    as_shard_plan_free(pl);
    pl = make_plan(g, "tp=2", megatron);
    for (i = 0; i < pl->nops; i++)
        if (strcmp(pl->ops[i].name, "h") == 0)
            pl->ops[i].strategy = "column(dp)";
    ok(lower_str(g, pl, &lo, msg, sizeof msg) == AS_EUSAGE &&
           strstr(msg, "plan 'p.json': op 'h': no strategy 'column(dp)' among its ") != NULL,
       "unknown strategy name named: %s", msg);
    for (i = 0; i < pl->nops; i++)
        if (strcmp(pl->ops[i].name, "h") == 0)
            pl->ops[i].strategy = "row(tp)";
    ok(lower_str(g, pl, &lo, msg, sizeof msg) == AS_EUSAGE &&
           strstr(msg, "tensor 'h' has spec [None,tp] but op 'h' under 'row(tp)' produces") != NULL,
       "a strategy whose output is not the plan's spec: %s", msg);
    as_shard_plan_free(pl);
    pl = make_plan(g, "tp=2", megatron);
    pl->tensors[0].name = "nosuch";
    ok(lower_str(g, pl, &lo, msg, sizeof msg) == AS_EUSAGE &&
           strstr(msg, "tensor 'nosuch' not in graph 'mlp'") != NULL, "unknown tensor: %s", msg);
    as_shard_plan_free(pl);
    pl = make_plan(g, "tp=2", megatron);
    for (i = 0; i < pl->ntensors; i++)
        if (strcmp(pl->tensors[i].name, "w1") == 0)
            pl->tensors[i].spec.axis[0] = 0; /* [tp,None] for w1 */
    ok(lower_str(g, pl, &lo, msg, sizeof msg) == AS_OK, "a declared tensor in another spec is "
       "resharded (%s)", msg);
    for (i = 0; i < pl->ntensors; i++)
        if (strcmp(pl->tensors[i].name, "h") == 0)
            pl->tensors[i].spec.axis[0] = 0;
    ok(lower_str(g, pl, &lo, msg, sizeof msg) == AS_EUSAGE && strstr(msg, "tensor 'h' has spec") !=
       NULL, "an output spec that its strategy does not produce: %s", msg);
    lo.mesh = "tp=4";
    as_shard_plan_free(pl);
    pl = make_plan(g, "tp=2", megatron);
    ok(lower_str(g, pl, &lo, msg, sizeof msg) == AS_EUSAGE && strstr(msg, "does not match") != NULL,
       "a mesh that is not the plan's: %s", msg);
    as_shard_plan_free(pl);
}

static void
test_roundtrip(const as_graph *g)
{
    as_shard_plan *pl = make_plan(g, "tp=2", megatron);
    as_sim_prog *p = NULL, *q = NULL;
    as_sim_result *r1 = NULL, *r2 = NULL;
    as_err err = {0};
    char *buf = NULL;
    size_t len = 0;
    FILE *fp;

    as_sim_plan(g, pl, NULL, NULL, &r1, &p, &err);
    fp = open_memstream(&buf, &len);
    as_sim_prog_write(p, fp, &err);
    fclose(fp);
    ok(as_sim_prog_parse("mem", buf, &q, &err) == AS_OK && as_sim_run(q, NULL, &r2, &err) ==
       AS_OK, "lowered text parses and runs (%s)", err.msg);
    ok(r1 && r2 && r1->time == r2->time && r1->dev[0].peak == r2->dev[0].peak,
       "text round trip: same time and peak");
    free(buf);
    as_sim_result_free(r1);
    as_sim_result_free(r2);
    as_sim_prog_free(p);
    as_sim_prog_free(q);
    as_shard_plan_free(pl);
}

static void
test_pipeline(const as_graph *g)
{
    as_shard_plan *pl = make_plan(g, "tp=2", megatron);
    as_sim_result *r[2] = {NULL, NULL};
    as_sim_prog *p[2] = {NULL, NULL};
    as_lower_opts lo;
    as_err err = {0};
    double comp[2] = {0, 0};
    int s, d;

    as_lower_opts_init(&lo);
    lo.pipeline = 2;
    lo.nmicro = 4;
    for (s = 0; s < 2; s++) {
        lo.sched = s ? AS_SIM_1F1B : AS_SIM_GPIPE;
        ok(as_sim_plan(g, pl, &lo, NULL, &r[s], &p[s], &err) == AS_OK, "P=2 K=4 %s (%s)",
           as_sim_sched_name(lo.sched), err.msg);
        if (r[s] == NULL)
            goto out;
        for (d = 0; d < r[s]->ndevices; d++)
            comp[s] += r[s]->dev[d].compute;
    }
    is_int(as_sim_prog_ndevices(p[0]), 4, "2 stages x 2 devices");
    is_double(comp[0], comp[1], 1e-12, "same total compute under both schedules");
    ok(r[1]->dev[0].peak < r[0]->dev[0].peak, "1F1B peak on stage 0 lower than GPipe (%.0f < %.0f)",
       r[1]->dev[0].peak, r[0]->dev[0].peak);
    ok(r[0]->bubble > 0 && r[1]->bubble > 0, "bubbles: %.3f %.3f", r[0]->bubble, r[1]->bubble);
    lo.nmicro = 3;
    ok(as_sim_lower(g, pl, &lo, &p[0], &err) == AS_EUSAGE && strstr(err.msg, "do not divide"),
       "K must divide the batch: %s", err.msg);
out:
    for (s = 0; s < 2; s++) {
        as_sim_result_free(r[s]);
        as_sim_prog_free(p[s]);
    }
    as_shard_plan_free(pl);
}


/* Stage S's order of passes under Megatron's 1F1B (warm-up min(P-1-s, K)) or GPipe: MB[i],
 * BW[i] for i < 2K. */
static void
megatron_order(int sched_1f1b, int s, int np, int k, int *mb, int *bw)
{
    int i, n = 0, w = np - 1 - s < k ? np - 1 - s : k;

    if (!sched_1f1b)
        w = k;
    for (i = 0; i < w; i++, n++)
        mb[n] = i, bw[n] = 0;
    for (i = 0; i < k - w; i++) {
        mb[n] = w + i, bw[n++] = 0;
        mb[n] = i, bw[n++] = 1;
    }
    for (i = k - w; i < k; i++, n++)
        mb[n] = i, bw[n] = 1;
}

/*
 * Exact pipelines on sq.asg (hidden = batch = 1680), data parallel on D=2 inside each stage,
 * P = 2..4 stages, K = 2..8 microbatches, both schedules:
 *  - every activation, gradient and send is cut by K along the batch (a replica's compute
 *    events read [840/K,1680] activations, never [840,1680]; sends carry 840/K rows);
 *  - with free communication, the end of every pass equals the hand recurrence of the
 *    schedule (pass (s,m) starts when stage s is free and its input pass has ended; per
 *    stage, forward and backward passes take the compute of their ops), and the iteration
 *    ends at max over stages of (last backward + gradient sync + update);
 *  - on a100-dgx, every collective of a stage (its gradient all-reduces) starts after the
 *    stage's last backward send has ended and comes after it in program order.
 */
static void
test_pipeline_exact(void)
{
    const char *top = getenv("top_srcdir");
    char path[1024], hwpath[1024];
    as_graph *g = NULL;
    as_shard_plan *pl;
    as_err err = {0};
    int np, k, sc, bad_shape = 0, bad_time = 0, bad_sync = 0, runs = 0, bad_mb = 0, bad_sym = 0;
    double worst = 0, worst_sym = 0;

    snprintf(path, sizeof path, "%s/tests/data/sim/sq.asg", top ? top : ".");
    snprintf(hwpath, sizeof hwpath, "%s/tests/data/sim/freecomm.hw", top ? top : ".");
    if (as_graph_read(path, &g, &err) != AS_OK) {
        ok(0, "read sq.asg: %s", err.msg);
        return;
    }
    pl = make_plan(g, "dp=2", sqdp);
    if (getenv("AS_WRITE_PLANS") != NULL) { /* regenerate tests/data/sim/sq_dp.plan.json */
        snprintf(path, sizeof path, "%s/sq_dp.plan.json", getenv("AS_WRITE_PLANS"));
        ok(as_shard_plan_write(pl, path, &err) == AS_OK, "wrote %s", path);
    }
    for (np = 2; np <= 4; np++)
        for (k = 2; k <= 8; k++)
            for (sc = 0; sc < 2; sc++) {
                as_lower_opts lo;
                as_sim_prog *p = NULL, *q = NULL;
                as_sim_result *r = NULL, *rq = NULL;
                char *buf = NULL, want[64], whole[64];
                size_t len = 0, e;
                FILE *fp;
                int s, i;
                double fend[4][8], bend[4][8], passt[4][2], tail[4], tmax = 0;

                as_lower_opts_init(&lo);
                lo.pipeline = np;
                lo.nmicro = k;
                lo.sched = sc ? AS_SIM_1F1B : AS_SIM_GPIPE;
                lo.hw = hwpath;
                if (as_sim_plan(g, pl, &lo, NULL, &r, &p, &err) != AS_OK) {
                    ok(0, "P=%d K=%d %s lowers: %s", np, k, as_sim_sched_name(lo.sched), err.msg);
                    continue;
                }
                runs++;
                /* shapes: microbatched rows everywhere */
                fp = open_memstream(&buf, &len);
                as_sim_prog_write(p, fp, &err);
                fclose(fp);
                snprintf(want, sizeof want, "f32[%d,1680]", 840 / k);
                snprintf(whole, sizeof whole, "f32[840,1680]");
                if (buf == NULL || strstr(buf, whole) != NULL || strstr(buf, want) == NULL)
                    bad_shape++;
                free(buf);
                /* per stage: pass durations (compute events between markers) and the tail */
                for (s = 0; s < np; s++) {
                    int dev = s * 2;
                    double acc = 0;
                    passt[s][0] = passt[s][1] = -1;
                    for (e = 0; e < as_sim_prog_nevents(p); e++) {
                        const int32_t *dv;
                        int nd, mm, ss;
                        char fb;
                        const char *lab = as_sim_event_label(p, e);
                        dv = as_sim_event_devices(p, e, &nd);
                        if (as_sim_event_kind(p, e) != AS_SIM_COMPUTE || dv[0] != dev)
                            continue;
                        if (sscanf(lab, "%c%d.%d", &fb, &ss, &mm) == 3 && (fb == 'F' || fb == 'B') &&
                            strchr(lab, '/') == NULL) {
                            if (passt[s][fb == 'B'] < 0)
                                passt[s][fb == 'B'] = acc;
                            else if (fabs(passt[s][fb == 'B'] - acc) > 1e-12 * acc)
                                bad_mb++; /* microbatches of one stage cost alike */
                            (fb == 'B' ? bend : fend)[s][mm] = r->end[e];
                            acc = 0;
                            continue;
                        }
                        acc += r->end[e] - r->start[e];
                    }
                    tail[s] = acc;
                }
                /* the hand recurrence */
                {
                    double ef[4][8], eb[4][8], fr[4] = {0, 0, 0, 0};
                    int mb[4][16], bw[4][16], idx[4] = {0, 0, 0, 0}, left = 2 * np * k, moved = 1;
                    for (s = 0; s < np; s++) {
                        megatron_order(sc, s, np, k, mb[s], bw[s]);
                        for (i = 0; i < k; i++)
                            ef[s][i] = eb[s][i] = -1;
                    }
                    while (left > 0 && moved) {
                        moved = 0;
                        for (s = 0; s < np; s++) {
                            double dep;
                            if (idx[s] == 2 * k)
                                continue;
                            i = idx[s];
                            if (!bw[s][i])
                                dep = s > 0 ? ef[s - 1][mb[s][i]] : 0;
                            else
                                dep = s < np - 1 ? eb[s + 1][mb[s][i]] : 0;
                            if (dep < 0)
                                continue; /* its input pass has not run yet */
                            fr[s] = (fr[s] > dep ? fr[s] : dep) + passt[s][bw[s][i]];
                            (bw[s][i] ? eb : ef)[s][mb[s][i]] = fr[s];
                            idx[s]++;
                            left--;
                            moved = 1;
                        }
                    }
                    for (s = 0; s < np; s++)
                        for (i = 0; i < k; i++) {
                            double d1 = fabs(ef[s][i] - fend[s][i]), d2 = fabs(eb[s][i] - bend[s][i]);
                            double rel = (d1 > d2 ? d1 : d2) / r->time;
                            if (rel > worst)
                                worst = rel;
                            if (rel > 1e-9)
                                bad_time++;
                            if (rel > 1e-9 && getenv("DBG"))
                                diag("P=%d K=%d %s s=%d m=%d: F %g vs %g, B %g vs %g", np, k,
                                     sc ? "1f1b" : "gpipe", s, i, ef[s][i], fend[s][i], eb[s][i],
                                     bend[s][i]);
                        }
                    for (s = 0; s < np; s++)
                        if (eb[s][k - 1] + tail[s] > tmax)
                            tmax = eb[s][k - 1] + tail[s];
                    if (fabs(tmax - r->time) > 1e-9 * r->time)
                        bad_time++;
                }
                /* symmetry: the full simulation (every device) gives the same figures */
                {
                    as_sim_prog *pf = NULL;
                    as_sim_result *rf = NULL;
                    lo.no_symmetry = 1;
                    if (as_sim_plan(g, pl, &lo, NULL, &rf, &pf, &err) != AS_OK) {
                        bad_sym++;
                    } else {
                        int d;
                        double w = fabs(rf->time - r->time) / rf->time;
                        for (d = 0; d < rf->ndevices; d++) {
                            const as_sim_dev_stats *x = &r->dev[d], *y = &rf->dev[d];
                            double v[6][2] = {{x->compute, y->compute}, {x->comm, y->comm},
                                              {x->idle, y->idle}, {x->resident, y->resident},
                                              {x->peak, y->peak}, {x->peak_time, y->peak_time}};
                            for (i = 0; i < 6; i++)
                                if (fabs(v[i][0] - v[i][1]) > w * fabs(v[i][1]))
                                    w = fabs(v[i][0] - v[i][1]) / fabs(v[i][1]);
                        }
                        if (w > 1e-12 || r->nexplicit != np || rf->nexplicit != 2 * np)
                            bad_sym++;
                        if (w > worst_sym)
                            worst_sym = w;
                    }
                    lo.no_symmetry = 0;
                    as_sim_result_free(rf);
                    as_sim_prog_free(pf);
                }
                /* real communication: gradient syncs follow the stage's last backward send */
                lo.hw = "a100-dgx";
                if (as_sim_plan(g, pl, &lo, NULL, &rq, &q, &err) == AS_OK) {
                    for (s = 1; s < np; s++) {
                        size_t last = 0;
                        char lab[32];
                        snprintf(lab, sizeof lab, "sendB%d.%d", s, k - 1);
                        for (e = 0; e < as_sim_prog_nevents(q); e++)
                            if (strcmp(as_sim_event_label(q, e), lab) == 0)
                                last = e;
                        for (e = 0; e < as_sim_prog_nevents(q); e++) {
                            int nd;
                            const int32_t *dv = as_sim_event_devices(q, e, &nd);
                            if (as_sim_event_kind(q, e) != AS_SIM_COLL || dv[0] / 2 != s)
                                continue;
                            if (e < last || rq->start[e] < rq->end[last])
                                bad_sync++;
                        }
                    }
                } else {
                    bad_sync++;
                }
                as_sim_result_free(r);
                as_sim_result_free(rq);
                as_sim_prog_free(p);
                as_sim_prog_free(q);
            }
    is_int(runs, 3 * 7 * 2, "P=2..4, K=2..8, both schedules, D=2 lower and run");
    is_int(bad_shape, 0, "every activation and gradient cut by K along the batch (hidden = batch)");
    is_int(bad_mb, 0, "every microbatch of a stage costs the same");
    is_int(bad_time, 0, "pass ends and iteration time equal the hand recurrence (worst %.3g)", worst);
    is_int(bad_sync, 0, "gradient all-reduces follow the stage's last backward send");
    is_int(bad_sym, 0, "one device per stage simulated (D=2 mirrors): every figure equals the full "
           "simulation's (worst relative difference %.3g)", worst_sym);
    as_shard_plan_free(pl);
    as_graph_free(g);
}

static void
test_rank(const as_graph *g)
{
    const double x[] = {1, 2, 3, 4}, y[] = {10, 20, 30, 40}, z[] = {4, 3, 2, 1};
    const double u[] = {1, 2, 3, 4}, v[] = {2, 1, 4, 3}, c[] = {5, 5, 5, 5};
    as_shard_plan *pl[3];
    const char *names[3] = {"megatron", "dp", "rep"};
    double obj[3] = {1.0, 2.0, 3.0};
    as_rank_result rr;
    as_err err = {0};
    FILE *fp;
    char *buf = NULL;
    size_t len = 0;
    int i;

    is_double(as_rank_spearman(x, y, 4), 1, 1e-12, "spearman monotone = 1");
    is_double(as_rank_spearman(x, z, 4), -1, 1e-12, "spearman reversed = -1");
    is_double(as_rank_kendall(x, z, 4), -1, 1e-12, "kendall reversed = -1");
    is_double(as_rank_spearman(u, v, 4), 0.6, 1e-12, "spearman of two swaps = 0.6");
    is_double(as_rank_kendall(u, v, 4), 1.0 / 3.0, 1e-12, "kendall of two swaps = 1/3");
    ok(isnan(as_rank_spearman(x, c, 4)) && isnan(as_rank_kendall(c, x, 4)),
       "an order of all ties: rho and tau undefined (NaN)");
    ok(isnan(as_rank_spearman(x, y, 1)) && isnan(as_rank_kendall(x, y, 1)),
       "one plan: undefined");
    pl[0] = make_plan(g, "tp=2", megatron);
    pl[1] = make_plan(g, "dp=2", dataparallel);
    pl[2] = make_plan(g, "tp=2", replicated);
    fp = open_memstream(&buf, &len);
    ok(as_sim_rank_plans(g, (const as_shard_plan *const *)pl, names, obj, 3, NULL, NULL, fp, &rr,
                         &err) == AS_OK, "rank three plans (%s)", err.msg);
    fclose(fp);
    ok(buf && strstr(buf, "spearman rho") && strstr(buf, "kendall tau"), "table printed");
    diag("%s", buf ? buf : "");
    if (rr.e != NULL) {
        int best = 0;
        for (i = 1; i < 3; i++)
            if (rr.e[i].time < rr.e[best].time)
                best = i;
        is_int(rr.best_sim, best, "simulator's best is the fastest");
        is_int(rr.best_solver, 0, "solver's best is the lowest objective");
        is_int(rr.e[best].sim_rank, 1, "fastest gets sim rank 1");
    }
    as_rank_result_free(&rr);
    free(buf);
    for (i = 0; i < 3; i++)
        as_shard_plan_free(pl[i]);
}

int
main(void)
{
    const char *top = getenv("top_srcdir");
    as_graph *g = NULL;
    as_err err = {0};
    char path[1024];

    as_rules_set_cache_path("off");
    snprintf(path, sizeof path, "%s/tests/data/sim/mlp.asg", top ? top : ".");
    if (as_graph_read(path, &g, &err) != AS_OK) {
        ok(0, "read mlp.asg: %s", err.msg);
        return done_testing();
    }
    if (getenv("AS_WRITE_PLANS") != NULL) { /* regenerate tests/data/sim/mlp_*.plan.json */
        as_shard_plan *a = make_plan(g, "tp=2", megatron), *b = make_plan(g, "dp=2", dataparallel);
        snprintf(path, sizeof path, "%s/mlp_megatron.plan.json", getenv("AS_WRITE_PLANS"));
        ok(as_shard_plan_write(a, path, &err) == AS_OK, "wrote %s", path);
        snprintf(path, sizeof path, "%s/mlp_dp.plan.json", getenv("AS_WRITE_PLANS"));
        ok(as_shard_plan_write(b, path, &err) == AS_OK, "wrote %s", path);
        as_shard_plan_free(a);
        as_shard_plan_free(b);
    }
    test_megatron(g);
    test_dp(g);
    test_mismatch(g);
    test_roundtrip(g);
    test_pipeline(g);
    test_rank(g);
    test_pipeline_exact();
    as_graph_free(g);
    as_rules_reset();
    return done_testing();
}
