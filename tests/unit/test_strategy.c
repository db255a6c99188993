/* test_strategy.c -- sharding specs (text round trip, local shapes,
 * divisibility), strategy enumeration for matmul on 1-D and 2-D meshes,
 * declared tensors, and resharding costs against hand-computed collectives
 * (cost.h's roofline formulas on a made-up device with round numbers).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/registry.h"
#include "spmd/cost.h"
#include "spmd/rules.h"
#include "spmd/spec.h"
#include "spmd/strategy.h"
#include "tap.h"

#define REL 1e-12

static const char my_gpu[] = "name = my-gpu\n"
                             "peak_flops.f32 = 19.5e12\n"
                             "hbm_bandwidth = 2.0e12\n"
                             "memory = 80GiB\n"
                             "devices_per_node = 8\n"
                             "intra_node_bandwidth = 300e9\n"
                             "intra_node_latency = 2e-6\n"
                             "inter_node_bandwidth = 25e9\n"
                             "inter_node_latency = 5e-6\n"
                             "kernel_overhead = 5e-6\n";

static as_hw hw;

/* A roofline model on MESH (caller frees both). */
static as_cost_model *
model(const char *mesh, as_mesh **m)
{
    as_cost_model *cm = NULL;
    as_err err;

    if (as_mesh_parse(mesh, m, &err) != AS_OK ||
        as_cost_model_new(&as_cost_roofline, &hw, *m, NULL, 0, &cm, &err) != AS_OK) {
        diag("model %s: %s", mesh, err.msg);
        exit(1);
    }
    return cm;
}

static as_shape
shape2(int64_t a, int64_t b)
{
    as_shape s;

    memset(&s, 0, sizeof s);
    s.dtype = AS_DT_F32;
    s.rank = 2;
    s.dim[0] = a;
    s.dim[1] = b;
    return s;
}

static void
test_spec_text(void)
{
    static const char *const good[] = {"[None,tp]", "[(dp,tp),None]", "[dp,tp]",
                                       "[None,None] partial(sum:tp)",
                                       "[tp,None] partial(max:dp)", "[]"};
    static const char *const bad[] = {"[None,xx]", "[tp,tp]", "[(tp,dp),None]", "[None",
                                      "[None,None] partial(add:tp)", "[None,None] junk",
                                      "[tp] partial(sum:tp)"};
    as_mesh *m;
    as_spec s;
    as_err err;
    char buf[AS_SPEC_TEXT_MAX];
    size_t i;

    as_mesh_parse("dp=2,tp=4", &m, &err);
    for (i = 0; i < sizeof good / sizeof *good; i++) {
        int rc = as_spec_parse(good[i], m, -1, &s, &err);
        is_int(rc, AS_OK, "parse %s", good[i]);
        is_str(as_spec_str(&s, m, buf, sizeof buf), good[i], "round trip %s", good[i]);
    }
    is_int(as_spec_parse(" [ ( dp , tp ) , None ] ", m, 2, &s, &err), AS_OK, "spaces accepted");
    is_str(as_spec_str(&s, m, buf, sizeof buf), "[(dp,tp),None]", "spaces normalised");
    is_int(s.axis[0], 0, "dp splits dim 0");
    is_int(s.axis[1], 0, "tp splits dim 0");
    for (i = 0; i < sizeof bad / sizeof *bad; i++)
        is_int(as_spec_parse(bad[i], m, -1, &s, &err), AS_EUSAGE, "reject %s (%s)", bad[i],
               err.msg);
    is_int(as_spec_parse("[None,tp]", m, 3, &s, &err), AS_EUSAGE, "rank mismatch rejected");
    as_mesh_free(m);
}

static void
test_local_shapes(void)
{
    as_mesh *m;
    as_spec s;
    as_err err;
    as_shape sh = shape2(16, 6), loc;

    as_mesh_parse("dp=2,tp=4", &m, &err);
    as_spec_parse("[(dp,tp),None]", m, 2, &s, &err);
    ok(as_spec_fits(&s, &sh, m), "16 splits over 8");
    as_spec_local_shape(&s, &sh, m, &loc);
    is_int(loc.dim[0], 2, "local dim 0 = 16/8");
    is_int(loc.dim[1], 6, "local dim 1 whole");
    is_double(as_spec_local_bytes(&s, &sh, m), 2 * 6 * 4, REL, "per-device bytes");
    as_spec_parse("[dp,tp]", m, 2, &s, &err);
    ok(!as_spec_fits(&s, &sh, m), "dim 6 over an axis of 4 does not fit");
    is_int(as_spec_check(&s, &sh, m, &err), AS_EUSAGE, "check says why: %s", err.msg);
    ok(strstr(err.msg, "dim 1 (6) is not divisible by 4") != NULL, "message names the dim");
    as_spec_parse("[None,None] partial(sum:tp)", m, 2, &s, &err);
    is_double(as_spec_local_bytes(&s, &sh, m), 16 * 6 * 4, REL, "partial does not shrink");
    as_mesh_free(m);
}

/* Matmul [m,k] x [k,n] op info. */
static as_opinfo
mm_info(as_shape *in, int64_t m, int64_t k, int64_t n)
{
    as_opinfo info;

    in[0] = shape2(m, k);
    in[1] = shape2(k, n);
    memset(&info, 0, sizeof info);
    info.def = as_registry_find("matmul", (size_t)-1);
    info.nin = 2;
    info.in = in;
    return info;
}

static int
has(const as_strategy_set *set, const char *name)
{
    return as_strat_find(set, name) >= 0;
}

static void
test_matmul_1d(void)
{
    as_mesh *m;
    as_cost_model *cm = model("tp=4", &m);
    as_strat_ctx *ctx = as_strat_ctx_new(cm);
    as_shape in[2];
    as_opinfo info = mm_info(in, 64, 128, 256);
    const as_strategy_set *set, *again;
    const as_strategy *s;
    char buf[AS_SPEC_TEXT_MAX];
    as_err err;
    int i;
    double ar;

    is_int(as_strat_op(ctx, &info, &set, &err), AS_OK, "matmul strategies");
    for (i = 0; i < set->n; i++)
        diag("  %-28s in %s x %s -> %s", set->s[i].name,
             as_spec_str(&set->s[i].in[0], m, buf, sizeof buf),
             as_spec_str(&set->s[i].in[1], m, buf + 60, sizeof buf - 60),
             as_spec_str(&set->s[i].out[0], m, buf + 110, sizeof buf - 110));
    is_int(set->n, 7, "rep + 3 splits + allreduce + 2 reduce-scatters");
    is_str(set->s[0].name, "rep", "first is replicated");
    ok(has(set, "batch(tp)") && has(set, "row(tp)") && has(set, "column(tp)"), "3 splits named");
    ok(has(set, "row(tp)+allreduce") && has(set, "row(tp)+reducescatter(0)") &&
           has(set, "row(tp)+reducescatter(1)"),
       "partial resolutions");
    s = &set->s[as_strat_find(set, "row(tp)")];
    is_str(as_spec_str(&s->out[0], m, buf, sizeof buf), "[None,None] partial(sum:tp)",
           "row keeps a partial sum");
    is_str(as_spec_str(&s->in[0], m, buf, sizeof buf), "[None,tp]", "row splits a's k");
    is_str(as_spec_str(&s->in[1], m, buf, sizeof buf), "[tp,None]", "row splits b's k");
    is_double(s->comm, 0, REL, "keeping the partial costs nothing in the op");
    ar = as_cost_collective(cm, AS_COLL_ALL_REDUCE, 64 * 256 * 4, 0);
    is_double(set->s[as_strat_find(set, "row(tp)+allreduce")].comm, ar, REL,
              "allreduce variant charges one all-reduce of the output");
    is_double(set->s[as_strat_find(set, "row(tp)+reducescatter(1)")].comm,
              as_cost_collective(cm, AS_COLL_REDUCE_SCATTER, 64 * 256 * 4, 0), REL,
              "reduce-scatter variant charges one reduce-scatter");
    s = &set->s[as_strat_find(set, "column(tp)")];
    is_str(as_spec_str(&s->out[0], m, buf, sizeof buf), "[None,tp]", "column splits the output");
    is_double(s->mem, 64 * 64 * 4, REL, "column output bytes per device");
    ok(s->compute < set->s[0].compute, "sharded compute is faster than replicated");
    {
        as_shape loc[2] = {shape2(64, 128), shape2(128, 64)}, lo = shape2(64, 64);
        as_opinfo li = info;
        li.in = loc;
        li.out = &lo;
        li.nout = 1;
        is_double(s->compute, as_cost_compute(cm, &li), REL, "compute on local shapes");
    }
    is_int(as_strat_op(ctx, &info, &again, &err), AS_OK, "again");
    ok(again == set, "second lookup is cached");
    /* dims not divisible by 4: only replicated */
    info = mm_info(in, 6, 6, 6);
    is_int(as_strat_op(ctx, &info, &set, &err), AS_OK, "6x6 matmul");
    is_int(set->n, 1, "dim 6 on an axis of 4: only replicated");
    info = mm_info(in, 8, 6, 6);
    as_strat_op(ctx, &info, &set, &err);
    is_int(set->n, 2, "only the batch split divides");
    as_strat_ctx_free(ctx);
    as_cost_model_free(cm);
    as_mesh_free(m);
}

static void
test_matmul_2d(void)
{
    as_mesh *m;
    as_cost_model *cm = model("dp=2,tp=2", &m);
    as_strat_ctx *ctx = as_strat_ctx_new(cm);
    as_shape in[2];
    as_opinfo info = mm_info(in, 64, 128, 256);
    const as_strategy_set *set;
    const as_strategy *s;
    char buf[AS_SPEC_TEXT_MAX];
    as_err err;
    int i, i2;

    is_int(as_strat_op(ctx, &info, &set, &err), AS_OK, "2x2 matmul strategies");
    for (i = 0; i < set->n; i++)
        diag("  %s", set->s[i].name);
    ok(has(set, "batch(dp)+column(tp)"), "batch(dp)+column(tp)");
    ok(has(set, "batch(dp)+row(tp)+allreduce"), "megatron row with dp");
    i2 = as_strat_find(set, "column(dp,tp)");
    ok(i2 >= 0, "column over both axes");
    s = &set->s[i2];
    is_str(as_spec_str(&s->in[1], m, buf, sizeof buf), "[None,(dp,tp)]",
           "b's last dim split over both axes");
    is_double(s->mem, 64 * 64 * 4, REL, "output 1/4 per device");
    i2 = as_strat_find(set, "row(dp,tp)+allreduce");
    ok(i2 >= 0, "row over both axes");
    is_double(set->s[i2].comm,
              as_cost_collective(cm, AS_COLL_ALL_REDUCE, 64 * 256 * 4, 0) +
                  as_cost_collective(cm, AS_COLL_ALL_REDUCE, 64 * 256 * 4, 1),
              REL, "all-reduce over both axes");
    /* 5 choices per axis would be 25; pairs of different rules sharing a dim are excluded */
    for (i = 0, i2 = 0; i < set->n; i++)
        i2 += set->s[i].resolve == AS_RESOLVE_NONE;
    is_int(i2, 16, "16 rule assignments (3 rules + rep on 2 axes, all compatible)");
    as_strat_ctx_free(ctx);
    as_cost_model_free(cm);
    as_mesh_free(m);
}

static void
test_tensor_strategies(void)
{
    as_mesh *m;
    as_cost_model *cm = model("dp=2,tp=4", &m);
    as_strat_ctx *ctx = as_strat_ctx_new(cm);
    as_shape sh = shape2(8, 12);
    const as_strategy_set *set;
    int i;

    set = as_strat_tensor(ctx, &sh, AS_TK_PARAM, 4);
    for (i = 0; i < set->n; i++)
        diag("  %s mem %.0f", set->s[i].name, set->s[i].mem);
    /* dp: R, 0, 1; tp: R, 0, 1 -> 9 specs; [None,(dp,tp)] needs 12 % 8: 8 fit */
    is_int(set->n, 8, "8 specs of a [8,12] parameter on 2x4");
    is_str(set->s[0].name, "[None,None]", "first replicated");
    is_double(set->s[0].mem, 8 * 12 * 4 * 4, REL, "param + grad + 2 states");
    ok(as_strat_find(set, "[(dp,tp),None]") >= 0, "dim 0 over both axes");
    is_double(set->s[as_strat_find(set, "[dp,tp]")].mem, 4 * 3 * 4 * 4, REL, "split memory");
    sh = shape2(6, 5);
    set = as_strat_tensor(ctx, &sh, AS_TK_INPUT, 1);
    is_int(set->n, 2, "[6,5] input: replicated or dim 0 over dp");
    as_strat_ctx_free(ctx);
    as_cost_model_free(cm);
    as_mesh_free(m);
}

static double
ag(double s, int n, int inter)
{
    double bw = inter ? 25e9 : 300e9, lat = inter ? 5e-6 : 2e-6;

    return (n - 1.0) / n * s / bw + (n - 1) * lat;
}

static double
ar(double s, int n, int inter)
{
    double bw = inter ? 25e9 : 300e9, lat = inter ? 5e-6 : 2e-6;

    return 2.0 * (n - 1.0) / n * s / bw + 2.0 * (n - 1) * lat;
}

static double
rcost(as_cost_model *cm, as_mesh *m, const as_shape *sh, const char *a, const char *b)
{
    as_spec sa, sb;
    as_err err;

    if (as_spec_parse(a, m, sh->rank, &sa, &err) != AS_OK ||
        as_spec_parse(b, m, sh->rank, &sb, &err) != AS_OK) {
        diag("%s", err.msg);
        return -1;
    }
    return as_reshard_cost(cm, sh, &sa, &sb);
}

static void
test_reshard(void)
{
    static const int sizes[] = {2, 4, 8};
    as_shape sh = shape2(1024, 2048);
    double S = 1024.0 * 2048 * 4;
    size_t i;

    for (i = 0; i < 3; i++) {
        char mesh[16];
        int n = sizes[i];
        as_mesh *m;
        as_cost_model *cm;

        snprintf(mesh, sizeof mesh, "x=%d", n);
        cm = model(mesh, &m);
        is_double(rcost(cm, m, &sh, "[x,None]", "[None,None]"), ag(S, n, 0), REL,
                  "n=%d sharded -> replicated = all-gather of the full size", n);
        is_double(rcost(cm, m, &sh, "[None,None]", "[None,x]"), 0, REL,
                  "n=%d replicated -> sharded is a free slice", n);
        is_double(rcost(cm, m, &sh, "[x,None]", "[None,x]"), ag(S / n, n, 0), REL,
                  "n=%d dim 0 -> dim 1 = all-to-all of the per-device size", n);
        is_double(rcost(cm, m, &sh, "[None,None] partial(sum:x)", "[None,None]"), ar(S, n, 0),
                  REL, "n=%d partial -> replicated = all-reduce", n);
        is_double(rcost(cm, m, &sh, "[None,None] partial(sum:x)", "[x,None]"), ag(S, n, 0), REL,
                  "n=%d partial -> sharded = reduce-scatter of the full size", n);
        is_double(rcost(cm, m, &sh, "[x,None]", "[x,None]"), 0, REL, "n=%d same spec free", n);
        as_cost_model_free(cm);
        as_mesh_free(m);
    }
    {
        as_mesh *m;
        as_cost_model *cm = model("a=2,b=4", &m);
        as_reshard_step st[AS_RESHARD_MAX_STEPS];
        as_spec sa, sb;
        as_err err;
        double c;
        int n;

        /* a dim moving from the minor axis to the major one: gather, then slice */
        is_double(rcost(cm, m, &sh, "[b,None]", "[a,None]"), ag(S, 4, 0), REL,
                  "dim 0 from b to a: all-gather over b, slice over a");
        /* reordered axes (b,a) cannot be written; (a,b) -> b only: gather both, slice */
        is_double(rcost(cm, m, &sh, "[(a,b),None]", "[b,None]"),
                  ag(S / 2, 4, 0) + ag(S, 2, 0), REL,
                  "(a,b) -> b: gather b then a, then slice b");
        is_double(rcost(cm, m, &sh, "[(a,b),None]", "[a,None]"), ag(S / 2, 4, 0), REL,
                  "(a,b) -> a: gather the minor axis only");
        is_double(rcost(cm, m, &sh, "[None,None] partial(sum:b)", "[a,b]"), ag(S / 2, 4, 0),
                  REL, "slice a first, then reduce-scatter b on half the bytes");
        as_spec_parse("[a,b]", m, 2, &sa, &err);
        as_spec_parse("[b,a]", m, 2, &sb, &err);
        n = as_reshard_steps(cm, &sh, &sa, &sb, st, &c);
        ok(n >= 3 && c > 0, "transpose of a 2-D layout is never free (%d steps)", n);
    is_double(c, ag(S / 2, 4, 0) + ag(S / 2, 2, 0), REL,
              "[a,b] -> [b,a]: gather b, all-to-all a, slice b");
        as_cost_model_free(cm);
        as_mesh_free(m);
    }
    {
        as_mesh *m;
        as_cost_model *cm = model("x=2,y=8", &m);
        is_double(rcost(cm, m, &sh, "[x,None]", "[None,None]"), ag(S, 2, 1), REL,
                  "inter-node axis uses inter-node links");
        as_cost_model_free(cm);
        as_mesh_free(m);
    }
}

static void
test_matrix(void)
{
    as_mesh *m;
    as_cost_model *cm = model("tp=4", &m);
    as_strat_ctx *ctx = as_strat_ctx_new(cm);
    as_shape in[2];
    as_opinfo info = mm_info(in, 64, 128, 256);
    const as_strategy_set *u, *v;
    const double *r;
    as_err err;
    int p, q, bad = 0;

    as_strat_op(ctx, &info, &u, &err);
    v = as_strat_tensor(ctx, &in[0], AS_TK_INPUT, 1);
    r = as_strat_reshard_matrix(ctx, v, 0, u, 0);
    for (p = 0; p < v->n; p++)
        for (q = 0; q < u->n; q++)
            if (fabs(r[p * u->n + q] - as_reshard_cost(cm, &in[0], &v->s[p].out[0],
                                                       &u->s[q].in[0])) > 0)
                bad++;
    is_int(bad, 0, "matrix entries equal pairwise costs");
    ok(as_strat_reshard_matrix(ctx, v, 0, u, 0) == r, "matrix cached");
    as_strat_ctx_free(ctx);
    as_cost_model_free(cm);
    as_mesh_free(m);
}

/* Issue 13 item 5: Alpa's strategy space (--strategy-space alpa). */
static void
test_space(void)
{
    as_mesh *m;
    as_cost_model *cm = model("a=2,b=4", &m);
    as_shape sh = {.dtype = AS_DT_F32, .rank = 2, .dim = {64, 128}};
    double S = 64.0 * 128 * 4;
    as_strat_ctx *ctx;
    as_shape in[2];
    as_opinfo info = mm_info(in, 64, 128, 256);
    const as_strategy_set *u, *t;
    as_err err;
    int i, d, multi = 0, axes[AS_MESH_MAX_AXES];

    is_double(rcost(cm, m, &sh, "[a,b]", "[b,a]"), ag(S / 2, 4, 0) + ag(S / 2, 2, 0), REL,
              "default space: [a,b] -> [b,a] moves a by all-to-all");
    as_strat_set_space(AS_SPACE_ALPA);
    is_double(rcost(cm, m, &sh, "[a,b]", "[b,a]"), ag(S / 2, 4, 0) + ag(S, 2, 0), REL,
              "alpa space on 2 axes: no all-to-all, gather a then slice");
    ctx = as_strat_ctx_new(cm);
    as_strat_op(ctx, &info, &u, &err);
    t = as_strat_tensor(ctx, &in[0], AS_TK_INPUT, 1);
    for (i = 0; i < u->n; i++)
        for (d = 0; d < 2; d++)
            multi += as_spec_dim_axes(&u->s[i].in[0], d, axes) > 1 ||
                     as_spec_dim_axes(&u->s[i].in[1], d, axes) > 1 ||
                     as_spec_dim_axes(&u->s[i].out[0], d, axes) > 1;
    for (i = 0; i < t->n; i++)
        for (d = 0; d < 2; d++)
            multi += as_spec_dim_axes(&t->s[i].out[0], d, axes) > 1;
    ok(u->n > 1 && t->n > 1 && multi == 0,
       "alpa space: no dim split over both axes (%d matmul, %d tensor strategies)", u->n, t->n);
    as_strat_ctx_free(ctx);
    as_strat_set_space(AS_SPACE_DEFAULT);
    ctx = as_strat_ctx_new(cm);
    as_strat_op(ctx, &info, &u, &err);
    for (i = 0, multi = 0; i < u->n; i++)
        multi += as_spec_dim_axes(&u->s[i].out[0], 0, axes) > 1;
    ok(multi > 0, "default space: some dim splits over both axes (%d)", multi);
    as_strat_ctx_free(ctx);
    as_cost_model_free(cm);
    as_mesh_free(m);
}

/*
 * Alpa's space, on every mesh: an op of one input follows its operand
 * (FollowInsCostVector: 0 where the layouts match, INFINITY_COST elsewhere),
 * and under the alpa cost model only a fully replicated parameter, state or
 * input pays the replicated penalty (auto_sharding.cc, kParameter).
 */
static void
test_space_follow(void)
{
    as_mesh *m;
    as_cost_model *cm = NULL;
    as_shape in[2], x = shape2(64, 128), y = shape2(64, 256);
    as_opinfo info = mm_info(in, 64, 128, 256), relu;
    const as_strategy_set *u, *v, *w, *st, *dw, *ds;
    const double *r;
    as_strat_ctx *ctx;
    as_err err;
    int p, q, same = 0, bad = 0, split = -1, rep = -1;

    if (as_mesh_parse("x=2,y=2", &m, &err) != AS_OK ||
        as_cost_model_new(&as_cost_alpa, &hw, m, NULL, 0, &cm, &err) != AS_OK) {
        ok(0, "alpa model: %s", err.msg);
        return;
    }
    memset(&relu, 0, sizeof relu);
    relu.def = as_registry_find("relu", (size_t)-1);
    relu.nin = 1;
    relu.in = &y; /* the matmul's output */
    as_strat_set_space(AS_SPACE_ALPA);
    ctx = as_strat_ctx_new(cm);
    as_strat_op(ctx, &info, &u, &err);
    as_strat_op(ctx, &relu, &v, &err);
    r = as_strat_reshard_matrix(ctx, u, 0, v, 0);
    for (p = 0; p < u->n; p++)
        for (q = 0; q < v->n; q++) {
            int eq = as_spec_equal(&u->s[p].out[0], &v->s[q].in[0]);
            same += eq && r[p * v->n + q] == 0;
            bad += eq ? r[p * v->n + q] != 0 : r[p * v->n + q] < AS_STRAT_INFINITY_COST;
        }
    ok(same > 0 && bad == 0,
       "alpa space: relu follows the matmul (%d pairs free, %d wrong)", same, bad);
    w = as_strat_tensor(ctx, &x, AS_TK_PARAM, 1);
    st = as_strat_tensor(ctx, &x, AS_TK_STATE, 1);
    for (p = 0; p < w->n; p++) {
        char txt[AS_SPEC_TEXT_MAX];
        as_spec_str(w->s[p].out, m, txt, sizeof txt);
        if (strcmp(txt, "[None,y]") == 0)
            split = p;
        if (strcmp(txt, "[None,None]") == 0)
            rep = p;
    }
    ok(split >= 0 && rep >= 0 && w->s[split].compute == 0 && w->s[rep].compute == 3 &&
           st->s[as_strat_find(st, w->s[rep].name)].compute == 3,
       "alpa space: [None,y] pays no penalty, replicated params and states pay 3");
    as_strat_ctx_free(ctx);
    as_strat_set_space(AS_SPACE_DEFAULT);
    ctx = as_strat_ctx_new(cm);
    as_strat_op(ctx, &relu, &v, &err);
    as_strat_op(ctx, &info, &u, &err);
    r = as_strat_reshard_matrix(ctx, u, 0, v, 0);
    for (p = 0, bad = 0; p < u->n * v->n; p++)
        bad += r[p] >= AS_STRAT_INFINITY_COST;
    dw = as_strat_tensor(ctx, &x, AS_TK_PARAM, 1);
    ds = as_strat_tensor(ctx, &x, AS_TK_STATE, 1);
    split = as_strat_find(dw, "[None,y]");
    ok(bad == 0 && split >= 0 && dw->s[split].compute > 0 && ds->s[0].compute == 0,
       "default space: relu may slice its input; the penalty is shared, states pay none");
    as_strat_ctx_free(ctx);
    as_cost_model_free(cm);
    as_mesh_free(m);
}

/* Alpa's batch-dim map: the batch passes a forward matmul, not a weight gradient. */
static void
test_batch_dims(void)
{
    as_mesh *m;
    as_cost_model *cm = model("x=2,y=2", &m);
    as_shape in[2];
    as_opinfo fwd = mm_info(in, 64, 128, 256), wgrad;
    as_shape gin[2] = {shape2(64, 128), shape2(64, 256)};
    as_attr ta = {.key = "transpose_a", .kind = AS_ATTR_INT, .i = 1};
    const as_strategy_set *u, *v;
    as_strat_ctx *ctx = as_strat_ctx_new(cm);
    as_err err;
    int inb[2] = {0, -1}, gb[2] = {0, 0}, out[AS_MAX_OUTS], outg[AS_MAX_OUTS];

    memset(&wgrad, 0, sizeof wgrad);
    wgrad.def = fwd.def;
    wgrad.nin = 2;
    wgrad.in = gin;
    wgrad.attr = &ta;
    wgrad.nattr = 1;
    as_strat_op(ctx, &fwd, &u, &err);
    as_strat_op(ctx, &wgrad, &v, &err);
    as_strat_batch_dims(u, inb, out);
    as_strat_batch_dims(v, gb, outg);
    ok(out[0] == 0 && outg[0] == -1,
       "batch dims: x[64,128] @ w keeps the batch in dim 0 (%d), x^T @ dy contracts it (%d)",
       out[0], outg[0]);
    ok(!as_strat_alpa_batch_forced(ctx), "default space: nothing forced");
    as_strat_set_space(AS_SPACE_ALPA);
    ok(as_strat_alpa_batch_forced(ctx), "alpa space on 2x2: the batch is forced onto axis 0");
    as_strat_set_space(AS_SPACE_DEFAULT);
    as_strat_ctx_free(ctx);
    as_cost_model_free(cm);
    as_mesh_free(m);
}

/* ZeRO-3's helpers (spmd/reshard.c, spec.c), shared by the ILP and the lowering. */
static void
test_zero(void)
{
    as_mesh *m;
    as_cost_model *cm = model("a=2,b=2,t=2", &m);
    as_shape sh = shape2(1024, 2048), x;
    double S = 1024.0 * 2048 * 4, c;
    as_reshard_step st[AS_MESH_MAX_AXES];
    uint8_t role[AS_MESH_MAX_AXES];
    as_spec sp, sr, s1, s2;
    as_err err;
    int n;

    if (as_mesh_parse_roles(m, "data,data,tensor", role, &err) != AS_OK ||
        as_spec_parse("[None,t]", m, 2, &sp, &err) != AS_OK ||
        as_spec_parse("[None,None]", m, 2, &sr, &err) != AS_OK ||
        as_spec_parse("[None,None] partial(sum:a)", m, 2, &s1, &err) != AS_OK ||
        as_spec_parse("[None,None] partial(sum:a,sum:b)", m, 2, &s2, &err) != AS_OK) {
        diag("%s", err.msg);
        ok(0, "zero: specs and roles parse");
        return;
    }
    /* the tensor-parallel slice (S/2) is kept as 1/4 over a and b, gathered b first */
    is_int(as_spec_zero_parts(&sp, m, role), 4, "zero: [None,t] is replicated over 4 data devices");
    n = as_zero_gather_steps(cm, &sh, &sp, role, st, &c);
    ok(n == 2 && st[0].kind == AS_COLL_ALL_GATHER && st[0].axis == 1 && st[1].axis == 0,
       "zero3 gather: over b (minor) then a");
    is_double(n == 2 ? st[0].bytes : 0, S / 4, REL, "zero3 gather over b: S/8 -> S/4");
    is_double(n == 2 ? st[1].bytes : 0, S / 2, REL, "zero3 gather over a: S/4 -> S/2, the slice");
    is_double(c, ag(S / 4, 2, 0) + ag(S / 2, 2, 0), REL, "zero3 gather: the two all-gathers' cost");
    as_spec_parse("[a,t]", m, 2, &sp, &err);
    n = as_zero_gather_steps(cm, &sh, &sp, role, st, &c);
    ok(n == 1 && st[0].axis == 1 && st[0].bytes == S / 4, "zero3 gather: split on a, gathered over b");
    as_spec_parse("[(a,b),t]", m, 2, &sp, &err);
    is_int(as_zero_gather_steps(cm, &sh, &sp, role, NULL, &c), 0, "zero3: nothing to gather");
    is_double(c, 0, REL, "... at no cost");
    /* the gradient's all-reduce over data axes becomes reduce-scatters */
    is_double(as_zero_reduce_saving(cm, &sh, &s1, &sr, role), ar(S, 2, 0) - ag(S, 2, 0), REL,
              "zero3 saving: all-reduce over a less a reduce-scatter of S");
    is_double(as_zero_reduce_saving(cm, &sh, &s2, &sr, role),
              2 * ar(S, 2, 0) - ag(S, 2, 0) - ag(S / 2, 2, 0), REL,
              "zero3 saving over a and b: the second reduce-scatter on half");
    role[0] = AS_ROLE_TENSOR;
    is_double(as_zero_reduce_saving(cm, &sh, &s1, &sr, role), 0, REL,
              "zero3 saving: none over a tensor axis");
    /* the update's shard: the first dim the parts divide */
    x = shape2(6, 8);
    ok(as_spec_zero_shard_shape(&x, 4) == 1 && x.dim[0] == 6 && x.dim[1] == 2,
       "zero3 shard shape: [6,8] / 4 = [6,2]");
    x = shape2(6, 8);
    ok(as_spec_zero_shard_shape(&x, 1) == 0 && x.dim[0] == 6 && x.dim[1] == 8 &&
           as_spec_zero_shard_shape(&x, 16) == 0 && x.dim[1] == 8,
       "zero3 shard shape: whole for 1 part or when nothing divides");
    as_cost_model_free(cm);
    as_mesh_free(m);
}

int
main(void)
{
    as_err err;

    as_rules_set_cache_path("off");
    if (as_hw_parse("my-gpu", my_gpu, &hw, &err) != AS_OK) {
        diag("%s", err.msg);
        return 1;
    }
    test_spec_text();
    test_local_shapes();
    test_matmul_1d();
    test_matmul_2d();
    test_tensor_strategies();
    test_reshard();
    test_zero();
    test_matrix();
    test_space();
    test_space_follow();
    test_batch_dims();
    as_rules_reset();
    return done_testing();
}
