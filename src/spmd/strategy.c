/* strategy.c -- enumerating the sharding strategies of ops and declared
 * tensors on a mesh, costing them, and caching sets and resharding matrices.
 *
 * An op's strategies are the assignments of mesh axes to its rules (or to
 * "replicated"): an odometer over (nrules + 1)^naxes with size-1 axes kept
 * replicated.  Two different rules may share the mesh only if they split
 * different dims of every input and gather different output dims, and
 * reduce rules on different axes must reduce the same way (a sum of maxima
 * is not a maximum of sums).  Each valid assignment yields one strategy
 * whose outputs stay partial where reduce rules leave them, plus the
 * variants that resolve the partial inside the op (all-reduce, or
 * reduce-scatter along each output dim that divides); docs/strategies.md.
 *
 * Sets are interned by signature text in the context's string map; a
 * resharding matrix is computed once per (producer set, output, consumer
 * set, input), costing each distinct pair of specs once.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spmd/rules.h"
#include "spmd/strategy.h"

struct as_strat_ctx {
    const as_cost_model *cm;
    const as_mesh *mesh;
    as_arena *arena;
    as_strmap sets_by_key;
    AS_VEC(as_strategy_set *) sets;
    as_strmap mats_by_key;
    AS_VEC(double *) mats;
    as_strat_stats st;
};

as_strat_ctx *
as_strat_ctx_new(const as_cost_model *cm)
{
    as_strat_ctx *ctx = as_xcalloc(1, sizeof *ctx);

    ctx->cm = cm;
    ctx->mesh = as_cost_model_mesh(cm);
    ctx->arena = as_arena_new();
    as_strmap_init(&ctx->sets_by_key);
    as_strmap_init(&ctx->mats_by_key);
    return ctx;
}

void
as_strat_ctx_free(as_strat_ctx *ctx)
{
    if (ctx == NULL)
        return;
    as_strmap_destroy(&ctx->sets_by_key);
    as_strmap_destroy(&ctx->mats_by_key);
    AS_VEC_FREE(&ctx->sets);
    AS_VEC_FREE(&ctx->mats);
    as_arena_free(ctx->arena);
    free(ctx);
}

const as_cost_model *
as_strat_ctx_model(const as_strat_ctx *ctx)
{
    return ctx->cm;
}

void
as_strat_ctx_stats(const as_strat_ctx *ctx, as_strat_stats *st)
{
    *st = ctx->st;
}

int
as_strat_find(const as_strategy_set *set, const char *name)
{
    int i;

    for (i = 0; i < set->n; i++)
        if (strcmp(set->s[i].name, name) == 0)
            return i;
    return -1;
}

int
as_strat_partial_variant(const as_strategy_set *set, int s)
{
    const char *name = set->s[s].name, *c;
    char buf[256];
    size_t len;

    if (set->s[s].resolve == AS_RESOLVE_NONE)
        return -1;
    if ((c = strstr(name, "+allreduce")) == NULL && (c = strstr(name, "+reducescatter(")) == NULL)
        return -1;
    len = (size_t)(c - name);
    if (len >= sizeof buf)
        return -1;
    memcpy(buf, name, len);
    buf[len] = '\0';
    return as_strat_find(set, buf);
}

/* ---- text helpers ---- */

typedef struct sbuf {
    char b[512];
    size_t n;
} sbuf;

static void
sb_put(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
sb_put(sbuf *s, const char *fmt, ...)
{
    va_list ap;
    int w;

    if (s->n >= sizeof s->b - 1)
        return;
    va_start(ap, fmt);
    w = vsnprintf(s->b + s->n, sizeof s->b - s->n, fmt, ap);
    va_end(ap);
    if (w > 0)
        s->n += (size_t)w < sizeof s->b - s->n ? (size_t)w : sizeof s->b - s->n - 1;
}

/* Signature of an op instance: type, attributes, input shapes. */
/* The strategy space (as_strat_set_space); process-wide, set before planning. */
static as_strat_space strat_space = AS_SPACE_DEFAULT;

void
as_strat_set_space(as_strat_space space)
{
    strat_space = space;
}

as_strat_space
as_strat_get_space(void)
{
    return strat_space;
}

/* Alpa's space: does SP split some dim over more than one mesh axis? */
static int
spec_multi_axis(const as_spec *sp)
{
    int d, axes[AS_MESH_MAX_AXES];

    for (d = 0; d < sp->rank; d++)
        if (as_spec_dim_axes(sp, d, axes) > 1)
            return 1;
    return 0;
}

int
as_strat_multi_axis(const as_strategy_set *set, int s)
{
    const as_strategy *st = &set->s[s];
    int i;

    for (i = 0; i < set->nin; i++)
        if (spec_multi_axis(&st->in[i]))
            return 1;
    for (i = 0; i < set->nout; i++)
        if (spec_multi_axis(&st->out[i]))
            return 1;
    return 0;
}

/* Append STR to S (as sb_put "%s", without the format parsing). */
static void
sb_str(sbuf *s, const char *str)
{
    size_t room, len;

    if (s->n >= sizeof s->b - 1)
        return;
    room = sizeof s->b - 1 - s->n;
    len = strlen(str);
    if (len > room)
        len = room;
    memcpy(s->b + s->n, str, len);
    s->n += len;
    s->b[s->n] = '\0';
}

/* Append V in decimal (as sb_put "%lld"). */
static void
sb_int(sbuf *s, long long v)
{
    char dig[24], out[24];
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    int d = 0, o = 0;

    do {
        dig[d++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        out[o++] = '-';
    while (d > 0)
        out[o++] = dig[--d];
    out[o] = '\0';
    sb_str(s, out);
}

/* Signature of an op instance (the cache key of its strategies): runs for every op of
 * every problem built, so strings and integers are appended without printf. */
static void
op_key(const as_opinfo *info, sbuf *s)
{
    char sh[96];
    int i, j;

    if (strat_space == AS_SPACE_ALPA)
        sb_str(s, "alpa:");
    sb_str(s, info->def->name);
    sb_str(s, "|");
    for (i = 0; i < info->nattr; i++) {
        const as_attr *a = &info->attr[i];
        sb_str(s, a->key);
        sb_str(s, "=");
        if (a->kind == AS_ATTR_INT)
            sb_int(s, (long long)a->i);
        else if (a->kind == AS_ATTR_FLOAT)
            sb_put(s, "%.17g", a->f);
        else if (a->kind == AS_ATTR_STR)
            sb_put(s, "\"%s\"", a->s);
        else
            for (j = 0; j < a->n; j++) {
                sb_str(s, j ? "," : "[");
                sb_int(s, (long long)a->v[j]);
            }
        sb_str(s, ";");
    }
    for (i = 0; i < info->nin; i++) {
        sb_str(s, "|");
        sb_str(s, as_shape_str(&info->in[i], sh, sizeof sh));
    }
}

static as_strategy_set *
set_lookup(as_strat_ctx *ctx, const char *key)
{
    int64_t idx;

    if (as_strmap_get(&ctx->sets_by_key, key, (size_t)-1, &idx)) {
        ctx->st.set_hits++;
        return ctx->sets.v[idx];
    }
    return NULL;
}

static as_strategy_set *
set_store(as_strat_ctx *ctx, const char *key, int nin, int nout, const as_shape *outs,
          const as_strategy *s, int n)
{
    as_strategy_set *set = as_arena_calloc(ctx->arena, 1, sizeof *set);

    set->id = (int)ctx->sets.n;
    set->key = as_arena_strdup(ctx->arena, key);
    set->nin = nin;
    set->nout = nout;
    set->out_shape = as_arena_memdup(ctx->arena, outs, (size_t)nout * sizeof *outs);
    set->n = n;
    set->s = as_arena_memdup(ctx->arena, s, (size_t)n * sizeof *s);
    AS_VEC_PUSH(&ctx->sets, set);
    as_strmap_put(&ctx->sets_by_key, set->key, set->id);
    ctx->st.sets++;
    return set;
}

/* ---- declared tensors ---- */

/*
 * Alpa's replicated penalty, shared among the axes of size > 1 that replicate S.
 * In Alpa's space it is Alpa's rule instead: the whole penalty for a tensor
 * replicated over every axis of size > 1, nothing for one split on some axis
 * (auto_sharding.cc, kParameter: split strategies cost 0, AddReplicatedStrategy
 * charges replicated_penalty).
 */
static double
tensor_penalty(const as_strat_ctx *ctx, const as_spec *s)
{
    double total = as_cost_replicated_penalty(ctx->cm), all = 0, rep = 0;
    int k;

    if (total <= 0)
        return 0;
    if (strat_space == AS_SPACE_ALPA) {
        for (k = 0; k < s->naxes; k++)
            if (as_mesh_axis_size(ctx->mesh, k) > 1 && s->axis[k] != AS_SPEC_R)
                return 0;
        return total;
    }
    for (k = 0; k < s->naxes; k++) {
        double w;
        if (as_mesh_axis_size(ctx->mesh, k) < 2)
            continue;
        w = as_cost_collective(ctx->cm, AS_COLL_ALL_REDUCE, 1, k);
        all += w;
        if (s->axis[k] == AS_SPEC_R)
            rep += w;
    }
    return all > 0 ? total * rep / all : 0;
}

static double
spec_memory(const as_strat_ctx *ctx, const as_spec *s, const as_shape *shape)
{
    int64_t parts[AS_MAX_RANK];

    as_spec_parts(s, ctx->mesh, parts);
    return as_cost_memory(ctx->cm, shape, parts);
}

static const char *const kind_names[] = {"act", "input", "param", "state", "const"};

/*
 * Which declared tensors pay the replicated penalty: parameters; in Alpa's
 * space also inputs and optimizer states, which are parameters of Alpa's
 * training step like the weights (its data-parallel test expects
 * replicated_penalty * (len(params) + len(opt_state))).
 */
static int
tensor_pays_penalty(as_tensor_kind kind)
{
    if (kind == AS_TK_PARAM)
        return 1;
    return strat_space == AS_SPACE_ALPA && (kind == AS_TK_INPUT || kind == AS_TK_STATE);
}

/*
 * Alpa's space: may a declared tensor (an entry parameter of Alpa's step)
 * take SP?  EnumerateAll1DPartition: one dim over one mesh axis at most.
 * On a mesh whose axes 0 and 1 both have more than one device, Alpa forces
 * the batch dim to mesh axis 0 (auto_sharding.py: force_batch_dim_to_mesh_dim
 * = 0 "in 2d mesh"; FilterStrategy keeps the strategies tiling BATCH_DIM on
 * that axis).
 */
static int
alpa_tensor_ok(const as_strat_ctx *ctx, const as_spec *sp, int batch_dim)
{
    int k, split = 0;

    for (k = 0; k < sp->naxes; k++)
        split += as_mesh_axis_size(ctx->mesh, k) > 1 && sp->axis[k] != AS_SPEC_R;
    if (split > 1)
        return 0;
    if (batch_dim >= 0 && sp->naxes >= 2 && as_mesh_axis_size(ctx->mesh, 0) > 1 &&
        as_mesh_axis_size(ctx->mesh, 1) > 1)
        return sp->axis[0] == batch_dim;
    return 1;
}

const as_strategy_set *
as_strat_tensor(as_strat_ctx *ctx, const as_shape *shape, as_tensor_kind kind, double mem_factor)
{
    return as_strat_tensor_batch(ctx, shape, kind, mem_factor, -1);
}

const as_strategy_set *
as_strat_tensor_batch(as_strat_ctx *ctx, const as_shape *shape, as_tensor_kind kind,
                      double mem_factor, int batch_dim)
{
    AS_VEC(as_strategy) v = {0};
    int naxes = as_mesh_naxes(ctx->mesh), choice[AS_MESH_MAX_AXES], k;
    as_strategy_set *set;
    char sh[96], txt[AS_SPEC_TEXT_MAX];
    sbuf key = {.n = 0};

    if (strat_space != AS_SPACE_ALPA || kind != AS_TK_INPUT)
        batch_dim = -1;
    sb_put(&key, "%stensor|%s|%s|%.17g|%d", strat_space == AS_SPACE_ALPA ? "alpa:" : "",
           kind_names[kind], as_shape_str(shape, sh, sizeof sh), mem_factor, batch_dim);
    if ((set = set_lookup(ctx, key.b)) != NULL)
        return set;
    for (k = 0; k < naxes; k++)
        choice[k] = -1;
    for (;;) {
        as_spec sp;
        as_spec_replicated(&sp, shape->rank, naxes);
        for (k = 0; k < naxes; k++)
            sp.axis[k] = (int8_t)choice[k];
        if (as_spec_fits(&sp, shape, ctx->mesh) &&
            !(strat_space == AS_SPACE_ALPA &&
              (spec_multi_axis(&sp) || !alpa_tensor_ok(ctx, &sp, batch_dim)))) {
            as_strategy st;
            memset(&st, 0, sizeof st);
            st.out = as_arena_memdup(ctx->arena, &sp, sizeof sp);
            st.name = as_arena_strdup(ctx->arena, as_spec_str(&sp, ctx->mesh, txt, sizeof txt));
            for (k = 0; k < AS_MESH_MAX_AXES; k++)
                st.rule[k] = -1;
            st.resolve = AS_RESOLVE_NONE;
            st.compute = tensor_pays_penalty(kind) ? tensor_penalty(ctx, &sp) : 0;
            st.mem = spec_memory(ctx, &sp, shape) * mem_factor;
            AS_VEC_PUSH(&v, st);
        }
        /* odometer: size-1 axes stay replicated */
        for (k = naxes - 1; k >= 0; k--) {
            if (as_mesh_axis_size(ctx->mesh, k) > 1 && choice[k] + 1 < shape->rank) {
                choice[k]++;
                break;
            }
            choice[k] = -1;
        }
        if (k < 0)
            break;
    }
    set = set_store(ctx, key.b, 0, 1, shape, v.v, (int)v.n);
    free(v.v);
    return set;
}

/* ---- ops ---- */

typedef struct op_enum {
    as_strat_ctx *ctx;
    const as_opinfo *info;
    const as_rule_set *rs;
    as_shape out_shape[AS_MAX_OUTS];
    int nout;
    AS_VEC(as_strategy) v;
    as_spec *in;   /* [nin] scratch */
    as_shape *lin; /* [nin] scratch */
    /* matmul naming */
    int is_matmul, contract_a, contract_b, col_b;
    int pass; /* rule id of the partial pass-through of a linear op (rs->nrules), or -1 */
} op_enum;

static int
combine_is_reduce(as_combine_kind k)
{
    return k == AS_COMBINE_SUM || k == AS_COMBINE_MEAN || k == AS_COMBINE_MAX ||
           k == AS_COMBINE_MIN;
}

static as_partial
combine_partial(as_combine_kind k)
{
    switch (k) {
    case AS_COMBINE_SUM:
        return AS_PARTIAL_SUM;
    case AS_COMBINE_MEAN:
        return AS_PARTIAL_MEAN;
    case AS_COMBINE_MAX:
        return AS_PARTIAL_MAX;
    case AS_COMBINE_MIN:
        return AS_PARTIAL_MIN;
    default:
        return AS_PARTIAL_NONE;
    }
}

/* Output dim a combine leaves split, or -1. */
static int
combine_split_dim(const as_combine *c)
{
    if (c->kind == AS_COMBINE_GATHER || c->kind == AS_COMBINE_HALO ||
        c->kind == AS_COMBINE_BLOCK || (c->kind == AS_COMBINE_IDENTITY && c->dim >= 0))
        return c->dim;
    return -1;
}

/* May rules A and B (different) be used on different axes together? */
static int
rules_compatible(const op_enum *e, const as_shard_rule *a, const as_shard_rule *b)
{
    int j;

    for (j = 0; j < e->rs->nin; j++)
        if (a->in_dim[j] >= 0 && a->in_dim[j] == b->in_dim[j])
            return 0;
    for (j = 0; j < e->rs->nout; j++) {
        int da = combine_split_dim(&a->out[j]), db = combine_split_dim(&b->out[j]);
        if (da >= 0 && da == db)
            return 0;
        if (combine_is_reduce(a->out[j].kind) && combine_is_reduce(b->out[j].kind) &&
            a->out[j].kind != b->out[j].kind)
            return 0;
    }
    return 1;
}

/* Name of rule R on the axes AXES (text list). */
static void
rule_label(const op_enum *e, const as_shard_rule *r, const char *axes, sbuf *s)
{
    int j, n = 0;

    if (e->is_matmul) {
        int d0 = r->in_dim[0], d1 = e->rs->nin > 1 ? r->in_dim[1] : -1;
        if ((d0 >= 0 && d0 == e->contract_a) || (d1 >= 0 && d1 == e->contract_b)) {
            sb_put(s, "row(%s)", axes);
            return;
        }
        if (d0 < 0 && d1 >= 0 && d1 == e->col_b) {
            sb_put(s, "column(%s)", axes);
            return;
        }
        if (d0 >= 0) {
            if (d0 == 0)
                sb_put(s, "batch(%s)", axes);
            else
                sb_put(s, "batch%d(%s)", d0, axes);
            return;
        }
    }
    sb_put(s, "S(");
    for (j = 0; j < e->rs->nin; j++) {
        int end = j;
        if (r->in_dim[j] < 0)
            continue;
        while (end + 1 < e->rs->nin && r->in_dim[end + 1] == r->in_dim[j])
            end++;
        if (end - j >= 3) { /* 4 or more inputs split alike: one range (concat of 200 inputs) */
            sb_put(s, "%sin%d-%d:%d", n++ ? "," : "", j, end, r->in_dim[j]);
            j = end;
        } else {
            sb_put(s, "%sin%d:%d", n++ ? "," : "", j, r->in_dim[j]);
        }
    }
    for (j = 0; n == 0 && j < e->rs->nout; j++)
        if (combine_split_dim(&r->out[j]) >= 0)
            sb_put(s, "%sout%d:%d", n++ ? "," : "", j, combine_split_dim(&r->out[j]));
    sb_put(s, "@%s)", axes);
}

static void
strategy_name(const op_enum *e, const int *rule, int resolve, sbuf *s)
{
    int naxes = as_mesh_naxes(e->ctx->mesh), k, l, any = 0;

    for (k = 0; k < naxes; k++) {
        sbuf axes = {.n = 0};
        int first = 1;
        if (rule[k] < 0)
            continue;
        for (l = 0; l < k; l++)
            if (rule[l] == rule[k])
                first = 0;
        if (!first)
            continue;
        for (l = k; l < naxes; l++)
            if (rule[l] == rule[k])
                sb_put(&axes, "%s%s", l > k ? "," : "", as_mesh_axis_name(e->ctx->mesh, l));
        if (any++)
            sb_put(s, "+");
        if (rule[k] == e->pass)
            sb_put(s, "partial(%s)", axes.b);
        else
            rule_label(e, &e->rs->rules[rule[k]], axes.b, s);
    }
    if (!any)
        sb_put(s, "rep");
    if (resolve == AS_RESOLVE_ALLREDUCE)
        sb_put(s, "+allreduce");
    else if (resolve >= 0)
        sb_put(s, "+reducescatter(%d)", resolve);
}

static void
push_strategy(op_enum *e, const int *rule, const as_spec *in, const as_spec *out, int resolve,
              double compute, double comm)
{
    as_strat_ctx *ctx = e->ctx;
    as_strategy st;
    sbuf name = {.n = 0};
    int k, o;

    memset(&st, 0, sizeof st);
    for (k = 0; k < AS_MESH_MAX_AXES; k++)
        st.rule[k] = (int8_t)(k < as_mesh_naxes(ctx->mesh) ? rule[k] : -1);
    strategy_name(e, rule, resolve, &name);
    st.name = as_arena_strdup(ctx->arena, name.b);
    st.in = e->info->nin ? as_arena_memdup(ctx->arena, in, (size_t)e->info->nin * sizeof *in)
                         : NULL;
    st.out = as_arena_memdup(ctx->arena, out, (size_t)e->nout * sizeof *out);
    st.resolve = resolve;
    st.compute = compute;
    st.comm = comm;
    for (o = 0; o < e->nout; o++)
        st.mem += spec_memory(ctx, &out[o], &e->out_shape[o]);
    AS_VEC_PUSH(&e->v, st);
}

/* Partial-resolution variants of a strategy whose outputs OUT are partial on some axes. */
static void
push_resolved(op_enum *e, const int *rule, const as_spec *in, const as_spec *out,
              double compute, double comm)
{
    const as_mesh *m = e->ctx->mesh;
    as_spec res[AS_MAX_OUTS];
    int naxes = as_mesh_naxes(m), o, k, d, npartial = 0, po = -1;
    double c = comm;

    for (o = 0; o < e->nout; o++)
        if (as_spec_has_partial(&out[o])) {
            npartial++;
            po = o;
        }
    if (npartial == 0)
        return;
    /* all-reduce every partial axis of every output */
    memcpy(res, out, (size_t)e->nout * sizeof *res);
    for (o = 0; o < e->nout; o++)
        for (k = 0; k < naxes; k++)
            if (res[o].axis[k] == AS_SPEC_P) {
                c += as_cost_collective(e->ctx->cm, AS_COLL_ALL_REDUCE,
                                        as_spec_local_bytes(&res[o], &e->out_shape[o], m), k);
                res[o].axis[k] = AS_SPEC_R;
                res[o].partial[k] = 0;
            }
    push_strategy(e, rule, in, res, AS_RESOLVE_ALLREDUCE, compute, c);
    if (npartial != 1 || as_cost_model_ops(e->ctx->cm)->alpa_resharding)
        return; /* Alpa's dots never reduce-scatter (prefer_reduce_scatter = false) */
    /* reduce-scatter the one partial output along each dim that divides */
    for (d = 0; d < e->out_shape[po].rank; d++) {
        as_spec s = out[po];
        int ok = 1;
        c = comm;
        for (k = 0; k < naxes && ok; k++) {
            int l;
            if (s.axis[k] != AS_SPEC_P)
                continue;
            for (l = k + 1; l < naxes; l++)
                if (out[po].axis[l] == d)
                    ok = 0; /* would land before a more minor axis of d */
            if (!ok)
                break;
            c += as_cost_collective(e->ctx->cm, AS_COLL_REDUCE_SCATTER,
                                    as_spec_local_bytes(&s, &e->out_shape[po], m), k);
            s.axis[k] = (int8_t)d;
            s.partial[k] = 0;
        }
        if (!ok || !as_spec_fits(&s, &e->out_shape[po], m) ||
            (strat_space == AS_SPACE_ALPA && spec_multi_axis(&s)))
            continue;
        memcpy(res, out, (size_t)e->nout * sizeof *res);
        res[po] = s;
        push_strategy(e, rule, in, res, d, compute, c);
    }
}

/*
 * Ops linear in all their inputs together (f(a1 + a2, b1 + b2) = f(a1, b1) + f(a2, b2)):
 * partial sums pass through them, so the sum of three partial input gradients (separate q,
 * k, v projections) is resolved once, where a non-linear op needs it, as Alpa's
 * associative-dot reassociation does.  bias_add's bias is made partial too (free: one device
 * keeps it, the others hold zeros).
 */
static int
op_linear(const as_opinfo *info)
{
    static const char *const lin[] = {"add", "sub", "bias_add", "neg", "identity", "scale",
                                      "reshape", "transpose", "reduce_sum", "broadcast"};
    size_t i;

    if (info->nout != 1 && info->nout != 0)
        return 0;
    for (i = 0; i < sizeof lin / sizeof lin[0]; i++)
        if (strcmp(info->def->name, lin[i]) == 0)
            return 1;
    return 0;
}

/* Build the strategy of assignment RULE (per axis), if valid. */
static void
enum_assignment(op_enum *e, const int *rule)
{
    const as_opinfo *info = e->info;
    const as_mesh *m = e->ctx->mesh;
    int naxes = as_mesh_naxes(m), k, l, j, o;
    as_spec *in = e->in, out[AS_MAX_OUTS];
    as_shape *lin = e->lin, lout[AS_MAX_OUTS];
    as_opinfo local;
    double compute, comm = 0;

    for (k = 0; k < naxes; k++)
        for (l = k + 1; l < naxes; l++)
            if (rule[k] >= 0 && rule[l] >= 0 && rule[k] != rule[l] && rule[k] != e->pass &&
                rule[l] != e->pass &&
                !rules_compatible(e, &e->rs->rules[rule[k]], &e->rs->rules[rule[l]]))
                return;
    for (j = 0; j < info->nin; j++) {
        as_spec_replicated(&in[j], info->in[j].rank, naxes);
        for (k = 0; k < naxes; k++)
            if (rule[k] >= 0 && rule[k] == e->pass) {
                in[j].axis[k] = AS_SPEC_P;
                in[j].partial[k] = (uint8_t)AS_PARTIAL_SUM;
            } else if (rule[k] >= 0 && e->rs->rules[rule[k]].in_dim[j] >= 0) {
                in[j].axis[k] = e->rs->rules[rule[k]].in_dim[j];
            }
        if (!as_spec_fits(&in[j], &info->in[j], m) ||
            (strat_space == AS_SPACE_ALPA && spec_multi_axis(&in[j])))
            return;
        as_spec_local_shape(&in[j], &info->in[j], m, &lin[j]);
    }
    for (o = 0; o < e->nout; o++) {
        as_spec_replicated(&out[o], e->out_shape[o].rank, naxes);
        for (k = 0; k < naxes; k++) {
            const as_combine *c;
            if (rule[k] < 0)
                continue;
            if (rule[k] == e->pass) { /* partial sums in, partial sums out */
                out[o].axis[k] = AS_SPEC_P;
                out[o].partial[k] = (uint8_t)AS_PARTIAL_SUM;
                continue;
            }
            c = &e->rs->rules[rule[k]].out[o];
            if (combine_is_reduce(c->kind)) {
                out[o].axis[k] = AS_SPEC_P;
                out[o].partial[k] = (uint8_t)combine_partial(c->kind);
            } else if (combine_split_dim(c) >= 0 && combine_split_dim(c) < out[o].rank) {
                out[o].axis[k] = (int8_t)combine_split_dim(c);
            }
        }
        if (!as_spec_fits(&out[o], &e->out_shape[o], m) ||
            (strat_space == AS_SPACE_ALPA && spec_multi_axis(&out[o])))
            return;
        as_spec_local_shape(&out[o], &e->out_shape[o], m, &lout[o]);
    }
    local = *info;
    local.in = lin;
    local.out = lout;
    local.nout = e->nout;
    compute = as_cost_compute(e->ctx->cm, &local);
    /* Alpa's DotCost: a contraction recomputed over an axis all-reduces its inputs there */
    if (as_cost_model_ops(e->ctx->cm)->recompute_allreduce && as_cost_is_contraction(info)) {
        double inb = 0;
        for (j = 0; j < info->nin; j++)
            inb += (double)as_shape_bytes(&lin[j]);
        for (k = 0; k < naxes; k++)
            if (rule[k] < 0 && as_mesh_axis_size(m, k) > 1)
                compute += as_cost_collective(e->ctx->cm, AS_COLL_ALL_REDUCE, inb, k);
    }
    /* halo exchange: send the overlapping rows of every split input to a neighbour */
    for (k = 0; k < naxes; k++) {
        const as_shard_rule *r;
        if (rule[k] < 0 || rule[k] == e->pass || (r = &e->rs->rules[rule[k]])->halo <= 0)
            continue;
        for (j = 0; j < info->nin; j++) {
            int d = r->in_dim[j];
            if (d < 0 || lin[j].dim[d] <= 0)
                continue;
            comm += as_cost_collective(e->ctx->cm, AS_COLL_SEND,
                                       (double)as_shape_bytes(&lin[j]) / (double)lin[j].dim[d] *
                                           r->halo, k);
        }
    }
    /* block outputs are gathered inside the op: one piece of each block is no spec */
    for (o = 0; o < e->nout; o++)
        for (k = naxes - 1; k >= 0; k--)
            if (rule[k] >= 0 && rule[k] != e->pass &&
                e->rs->rules[rule[k]].out[o].kind == AS_COMBINE_BLOCK &&
                out[o].axis[k] >= 0) {
                comm += as_cost_collective(
                    e->ctx->cm, AS_COLL_ALL_GATHER,
                    as_spec_local_bytes(&out[o], &e->out_shape[o], m) * as_mesh_axis_size(m, k),
                    k);
                out[o].axis[k] = AS_SPEC_R;
            }
    push_strategy(e, rule, in, out, AS_RESOLVE_NONE, compute, comm);
    push_resolved(e, rule, in, out, compute, comm);
}

static void
enum_matmul_dims(op_enum *e)
{
    const as_opinfo *info = e->info;
    int ta, tb, ra, rb;

    if (strcmp(info->def->name, "matmul") != 0 || info->nin != 2)
        return;
    ta = (int)as_attr_int(info->attr, info->nattr, "transpose_a", 0);
    tb = (int)as_attr_int(info->attr, info->nattr, "transpose_b", 0);
    ra = info->in[0].rank;
    rb = info->in[1].rank;
    if (ra < 2 || rb < 2)
        return;
    e->is_matmul = 1;
    e->contract_a = ta ? ra - 2 : ra - 1;
    e->contract_b = tb ? rb - 1 : rb - 2;
    e->col_b = tb ? rb - 2 : rb - 1;
}

int
as_strat_op(as_strat_ctx *ctx, const as_opinfo *info, const as_strategy_set **out, as_err *err)
{
    op_enum e;
    sbuf key = {.n = 0};
    int naxes = as_mesh_naxes(ctx->mesh), rule[AS_MESH_MAX_AXES], k;
    as_strategy_set *set;
    int rc = AS_OK;

    op_key(info, &key);
    if ((set = set_lookup(ctx, key.b)) != NULL) {
        *out = set;
        return AS_OK;
    }
    memset(&e, 0, sizeof e);
    e.ctx = ctx;
    e.info = info;
    if (info->out != NULL) {
        e.nout = info->nout;
        memcpy(e.out_shape, info->out, (size_t)info->nout * sizeof *info->out);
    } else {
        AS_CHECK(as_op_infer(info->def, info->in, info->nin, info->attr, info->nattr,
                             e.out_shape, &e.nout, err));
    }
    AS_CHECK(as_rules_get(info, &e.rs, err));
    if (e.rs->nout != e.nout || e.rs->nin != info->nin)
        return as_errf(err, AS_EINTERNAL, "%s: rule set arity %d/%d differs from op %d/%d",
                       info->def->name, e.rs->nin, e.rs->nout, info->nin, e.nout);
    enum_matmul_dims(&e);
    e.pass = op_linear(info) ? e.rs->nrules : -1;
    e.in = as_xcalloc((size_t)info->nin + 1, sizeof *e.in);
    e.lin = as_xcalloc((size_t)info->nin + 1, sizeof *e.lin);
    for (k = 0; k < naxes; k++)
        rule[k] = -1;
    for (;;) {
        enum_assignment(&e, rule);
        for (k = naxes - 1; k >= 0; k--) {
            if (as_mesh_axis_size(ctx->mesh, k) > 1 &&
                rule[k] + 1 < e.rs->nrules + (e.pass >= 0)) {
                rule[k]++;
                break;
            }
            rule[k] = -1;
        }
        if (k < 0)
            break;
    }
    if (e.v.n == 0)
        rc = as_errf(err, AS_EINTERNAL, "%s: not even the replicated strategy is valid",
                     info->def->name);
    else
        *out = set_store(ctx, key.b, info->nin, e.nout, e.out_shape, e.v.v, (int)e.v.n);
    free(e.v.v);
    free(e.in);
    free(e.lin);
    return rc;
}

void
as_strat_batch_dims(const as_strategy_set *set, const int *in_batch, int *out_batch)
{
    int o, i, j, k;

    for (o = 0; o < set->nout; o++)
        out_batch[o] = -1;
    for (i = 0; i < set->n; i++)
        for (j = 0; set->s[i].resolve == AS_RESOLVE_NONE && j < set->nin; j++)
            for (k = 0; in_batch[j] >= 0 && k < set->s[i].in[j].naxes; k++) {
                if (set->s[i].in[j].axis[k] != in_batch[j])
                    continue;
                for (o = 0; o < set->nout; o++)
                    if (out_batch[o] < 0 && set->s[i].out[o].axis[k] >= 0)
                        out_batch[o] = set->s[i].out[o].axis[k];
            }
}

int
as_strat_alpa_batch_forced(const as_strat_ctx *ctx)
{
    return strat_space == AS_SPACE_ALPA && as_mesh_naxes(ctx->mesh) >= 2 &&
           as_mesh_axis_size(ctx->mesh, 0) > 1 && as_mesh_axis_size(ctx->mesh, 1) > 1;
}

/* ---- resharding matrices ---- */

/* Index of SPEC among the NU distinct specs in U (adding it when new). */
static int
spec_index(as_spec *u, int *nu, const as_spec *spec)
{
    int i;

    for (i = 0; i < *nu; i++)
        if (as_spec_equal(&u[i], spec))
            return i;
    u[*nu] = *spec;
    return (*nu)++;
}

const double *
as_strat_reshard_matrix(as_strat_ctx *ctx, const as_strategy_set *u, int out_idx,
                        const as_strategy_set *v, int in_idx)
{
    sbuf key = {.n = 0};
    int64_t idx;
    int p, q, nu = 0, nv = 0, *pu, *qv, follow;
    as_spec *su, *sv;
    double *r, *pair;

    sb_put(&key, "%d:%d:%d:%d", u->id, out_idx, v->id, in_idx);
    if (as_strmap_get(&ctx->mats_by_key, key.b, (size_t)-1, &idx)) {
        ctx->st.matrix_hits++;
        return ctx->mats.v[idx];
    }
    su = as_xmalloc((size_t)u->n * sizeof *su);
    sv = as_xmalloc((size_t)v->n * sizeof *sv);
    pu = as_xmalloc((size_t)u->n * sizeof *pu);
    qv = as_xmalloc((size_t)v->n * sizeof *qv);
    for (p = 0; p < u->n; p++)
        pu[p] = spec_index(su, &nu, &u->s[p].out[out_idx]);
    for (q = 0; q < v->n; q++)
        qv[q] = spec_index(sv, &nv, &v->s[q].in[in_idx]);
    pair = as_xmalloc((size_t)nu * (size_t)nv * sizeof *pair);
    follow = strat_space == AS_SPACE_ALPA && v->nin == 1;
    for (p = 0; p < nu; p++)
        for (q = 0; q < nv; q++)
            pair[p * nv + q] =
                follow && !as_spec_equal(&su[p], &sv[q])
                    ? AS_STRAT_INFINITY_COST
                    : as_reshard_cost(ctx->cm, &u->out_shape[out_idx], &su[p], &sv[q]);
    r = as_arena_alloc(ctx->arena, (size_t)u->n * (size_t)v->n * sizeof *r);
    for (p = 0; p < u->n; p++)
        for (q = 0; q < v->n; q++)
            r[(size_t)p * (size_t)v->n + (size_t)q] = pair[pu[p] * nv + qv[q]];
    free(su);
    free(sv);
    free(pu);
    free(qv);
    free(pair);
    AS_VEC_PUSH(&ctx->mats, r);
    as_strmap_put(&ctx->mats_by_key, as_arena_strdup(ctx->arena, key.b),
                  (int64_t)ctx->mats.n - 1);
    ctx->st.matrices++;
    ctx->st.matrix_entries += (double)u->n * v->n;
    return r;
}
