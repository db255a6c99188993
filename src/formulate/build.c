/* build.c -- graph + mesh + cost model -> choice problem; assignment -> plan.
 *
 * Strategy sets come from one strategy context (spmd/strategy.h), so ops
 * with the same signature share a set and every edge between two such
 * signatures shares a resharding matrix.  Liveness follows program order
 * (graph/check.h): tensor t is live at op i for def(t) <= i <= last_use(t);
 * data inputs from the start.  Point i is dropped when it is contained in a
 * neighbour: nothing dies at i (then live(i) is inside live(i+1)), or
 * nothing is born at i and point i-1 is kept (live(i) inside live(i-1)).
 * Gradients of trained parameters and updated values are not activations
 * here: the parameter's node carries value + gradient + optimizer states,
 * and updates are written in place.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formulate/build.h"
#include "formulate/group.h"
#include "formulate/progress.h"
#include "graph/check.h"
#include "graph/registry.h"

struct as_build_map {
    const as_graph *g;
    const as_cost_model *cm;
    as_strat_ctx *ctx;
    size_t nnodes;
    int32_t *node_op, *node_tensor;     /* [nnodes] */
    const as_strategy_set **node_set;   /* [nnodes] */
    size_t *op_node;                    /* [nops] */
    size_t *tensor_node;                /* [ntensors] */
    int *tensor_out;                    /* [ntensors] output index in the node's set */
    AS_VEC(int32_t) point_op;           /* op of each liveness point, in problem order */
    int micro;                          /* K microbatches (as_build_opts.microbatches) */
    int inflight;                       /* as_build_opts.inflight */
    as_build_stats st;
    double deadline;                    /* as_build_opts.deadline */
    int share;                          /* edges borrow the context's matrices (map kept) */
    uint8_t role[AS_MESH_MAX_AXES];     /* axis roles (as_build_opts.roles) */
    int roles;                          /* some axis of more than one device has a role */
    int zero;                           /* ZeRO stage (as_build_opts.zero) */
    double *zuse;                       /* [ntensors] ZeRO-3: weighted uses of each parameter */
    as_progress pg;
    /* with K > 1 microbatches: K x each shared matrix, made once (open addressing by the
       shared matrix's address; a power-of-two capacity): every edge that reshards alike
       borrows it, as without microbatches, instead of a copy per edge (a 3-axis stage of
       gpt3-1.3b at K = 4: 1836 edge copies of up to 10^4 entries each) */
    const double **scaled_src;
    double **scaled;
    size_t scaled_cap, scaled_n;
};

void
as_build_opts_init(as_build_opts *o)
{
    memset(o, 0, sizeof *o);
    o->liveness = 1;
}

void
as_build_map_free(as_build_map *map)
{
    if (map == NULL)
        return;
    as_strat_ctx_free(map->ctx);
    free(map->node_op);
    free(map->node_tensor);
    free(map->node_set);
    free(map->op_node);
    free(map->tensor_node);
    free(map->tensor_out);
    AS_VEC_FREE(&map->point_op);
    free(map->zuse);
    for (size_t i = 0; i < map->scaled_cap; i++)
        free(map->scaled[i]);
    free(map->scaled);
    free(map->scaled_src);
    free(map);
}

void
as_build_map_stats(const as_build_map *map, as_build_stats *st)
{
    *st = map->st;
    as_strat_ctx_stats(map->ctx, &st->strat);
}

size_t
as_build_map_op_node(const as_build_map *map, int32_t op)
{
    return map->op_node[op];
}

size_t
as_build_map_tensor_node(const as_build_map *map, int32_t t)
{
    return map->tensor_node[t];
}

int32_t
as_build_map_node_op(const as_build_map *map, size_t node)
{
    return map->node_op[node];
}

int32_t
as_build_map_node_tensor(const as_build_map *map, size_t node)
{
    return map->node_tensor[node];
}

const uint8_t *
as_build_map_roles(const as_build_map *map, int *zero)
{
    if (zero != NULL)
        *zero = map->zero;
    return map->role;
}

const as_strategy_set *
as_build_map_node_set(const as_build_map *map, size_t node)
{
    return map->node_set[node];
}

const as_spec *
as_build_map_tensor_spec(const as_build_map *map, int32_t t, const size_t *choice)
{
    size_t v = map->tensor_node[t];

    return &map->node_set[v]->s[choice[v]].out[map->tensor_out[t]];
}

/* ---- nodes ---- */

/*
 * Gradient accumulation (K microbatches): how many times op O's compute
 * (*WC) and its own communication (*WD) run per iteration.  Forward and
 * backward ops run once per microbatch; optimizer ops once; a backward op
 * whose outputs are parameter gradients read only by the optimizer resolves
 * their partial sums once, after the last microbatch (sim/lower.c defers
 * that synchronisation).
 */
static void
op_weights(const as_build_map *map, int32_t o, double *wc, double *wd)
{
    const as_graph *g = map->g;
    const as_op *op;
    int k, deferred = 1;

    *wc = *wd = 1;
    if (map->micro <= 1 || o < 0)
        return;
    op = as_graph_op(g, o);
    if (op->flags & AS_OF_OPTIMIZER)
        return;
    *wc = *wd = map->micro;
    if (!(op->flags & AS_OF_BACKWARD))
        return;
    for (k = 0; k < op->nout && deferred; k++) {
        const as_tensor *t = as_graph_tensor(g, op->out[k]);
        int32_t i;
        int j;
        deferred = (t->flags & AS_TF_GRAD) != 0;
        for (i = o + 1; i < as_graph_nops(g) && deferred; i++) {
            const as_op *r = as_graph_op(g, i);
            if (r->flags & AS_OF_OPTIMIZER)
                continue;
            for (j = 0; j < r->nin; j++)
                if (r->in[j] == op->out[k])
                    deferred = 0;
        }
    }
    if (deferred)
        *wd = 1;
}

/*
 * Alpa's space on a 2-D mesh: a matmul whose output carries the batch dim
 * (BATCH >= 0) keeps only the strategies splitting it over mesh axis 0
 * (Alpa's FilterStrategy on dots); the others cost AS_STRAT_INFINITY_COST,
 * which the ILP drops.
 */
static double
batch_filter(const as_build_map *map, const as_strategy_set *set, int32_t op, int batch, int s)
{
    if (op < 0 || batch < 0 || !as_strat_alpa_batch_forced(map->ctx) ||
        strcmp(as_graph_op(map->g, op)->def->name, "matmul") != 0)
        return 0;
    return set->s[s].out[0].axis[0] == batch ? 0 : AS_STRAT_INFINITY_COST;
}

/*
 * Axis roles (as_build_opts.roles): AS_STRAT_INFINITY_COST when strategy S of
 * SET breaks a role, else 0.  INB[nin] / OUTB[nout] are the batch dims of
 * the inputs and outputs (-1 none).  On a data axis every input that has a
 * batch dim arrives split along it (STRICT; 0 lets it be replicated too, for
 * a node where nothing else is left) and no other dim is split; partial sums
 * are no split (the weight gradient of a batch contraction is partial over
 * the data axis).  On a tensor axis no batch dim is split.
 */
static double
role_filter(const as_build_map *map, const as_strategy_set *set, const int *inb,
            const int *outb, int s, int strict)
{
    const as_strategy *st = &set->s[s];
    const as_mesh *m = as_cost_model_mesh(map->cm);
    int k, j;

    if (!map->roles)
        return 0;
    for (k = 0; k < as_mesh_naxes(m); k++) {
        int data = map->role[k] == AS_ROLE_DATA;
        if (map->role[k] == AS_ROLE_AUTO || as_mesh_axis_size(m, k) < 2)
            continue;
        for (j = 0; j < set->nin; j++) {
            int d = st->in[j].axis[k];
            if (data && strict && inb[j] >= 0 && d != inb[j])
                return AS_STRAT_INFINITY_COST;
            if (d >= 0 && (data ? d != inb[j] : d == inb[j]))
                return AS_STRAT_INFINITY_COST;
        }
        for (j = 0; j < set->nout; j++) {
            int d = st->out[j].axis[k];
            if (data && strict && set->nin == 0 && outb[j] >= 0 && d != outb[j])
                return AS_STRAT_INFINITY_COST; /* a data input */
            if (d >= 0 && (data ? d != outb[j] : d == outb[j]))
                return AS_STRAT_INFINITY_COST;
        }
    }
    return 0;
}

/*
 * Memory factors of declared tensor T (tensor_factor's sum): *VALUE the
 * tensor itself, *STATE its optimizer states, in bytes relative to its own.
 * A parameter's gradient buffer is a liveness entry of its own (grad_buffer),
 * which ZeRO-2 shards in add_point.
 */
static void tensor_factor_parts(const as_graph *g, const as_tensor *t, int micro, double *value,
                                double *state);

/* ---- ZeRO-3 (docs/strategies.md "Axis roles"; sim/lower.c lower_gather, lower_declare) ---- */

/* Is T a parameter ZeRO-3 keeps sharded over the data axes its layout replicates? */
static int
zero3_param(const as_build_map *map, const as_tensor *t)
{
    return map->zero >= 3 && t->kind == AS_TK_PARAM && t->update >= 0 && t->producer < 0;
}

/* Does op O read parameter T whole (a forward or backward op: gathered for it)? */
static int
zero3_reads(const as_build_map *map, int32_t o, const as_tensor *t)
{
    return o >= 0 && zero3_param(map, t) && !(as_graph_op(map->g, o)->flags & AS_OF_OPTIMIZER);
}

/*
 * Weighted uses of each ZeRO-3 parameter (map->zuse): every forward and
 * backward op that reads it gathers it once per run (K runs per iteration
 * with K microbatches, op_weights).
 */
static void op_weights(const as_build_map *map, int32_t o, double *wc, double *wd);

static void
zero3_uses(as_build_map *map)
{
    const as_graph *g = map->g;
    int32_t o;
    int j, k;

    map->zuse = as_xcalloc((size_t)as_graph_ntensors(g) + 1, sizeof *map->zuse);
    for (o = 0; o < as_graph_nops(g); o++) {
        const as_op *op = as_graph_op(g, o);
        double wc, wd;
        op_weights(map, o, &wc, &wd);
        for (j = 0; j < op->nin; j++) {
            for (k = 0; k < j && op->in[k] != op->in[j]; k++)
                ;
            if (k == j && zero3_reads(map, o, as_graph_tensor(g, op->in[j])))
                map->zuse[op->in[j]] += wc;
        }
    }
}

/*
 * Seconds of optimizer op O under strategy ST run on the shards ZeRO-3
 * leaves (as_spec_zero_shard_shape of every local shape, as sim/lower.c
 * lower_op interns it); < 0 when nothing is sharded.
 */
static double
zero3_update_cost(const as_build_map *map, int32_t o, const as_strategy *st)
{
    const as_op *op = as_graph_op(map->g, o);
    const as_mesh *m = as_cost_model_mesh(map->cm);
    as_shape *sh = as_xmalloc(((size_t)op->nin + (size_t)op->nout + 1) * sizeof *sh);
    as_opview v;
    as_opinfo info;
    double c = -1;
    int j, any = 0;

    as_opview_init(&v, map->g, op);
    info = v.info;
    for (j = 0; j < op->nin; j++) {
        as_spec_local_shape(&st->in[j], &v.info.in[j], m, &sh[j]);
        any |= as_spec_zero_shard_shape(&sh[j], as_spec_zero_parts(&st->in[j], m, map->role));
    }
    for (j = 0; j < op->nout; j++) {
        as_spec_local_shape(&st->out[j], &v.info.out[j], m, &sh[op->nin + j]);
        any |= as_spec_zero_shard_shape(&sh[op->nin + j],
                                        as_spec_zero_parts(&st->out[j], m, map->role));
    }
    info.in = sh;
    info.out = sh + op->nin;
    if (any)
        c = as_cost_compute(map->cm, &info);
    as_opview_free(&v);
    free(sh);
    return c;
}

/*
 * ZeRO-3 reduce-scatters parameter gradient T where a whole copy would be
 * all-reduced over a data axis: the seconds that saves on resharding FROM
 * into TO (as_zero_reduce_saving; sim/lower.c lower_reshard); 0 otherwise.
 */
static double
zero3_saving(const as_build_map *map, int32_t t, const as_spec *from, const as_spec *to)
{
    const as_tensor *tt = as_graph_tensor(map->g, t);

    if (map->zero < 3 || !(tt->flags & AS_TF_GRAD) || tt->of < 0)
        return 0;
    return as_zero_reduce_saving(map->cm, &tt->shape, from, to, map->role);
}

static int
add_node(as_build_map *map, as_problem *p, const char *name, const as_strategy_set *set,
         int32_t op, int32_t tensor, int batch, const int *inb, const int *outb, as_err *err)
{
    double *c = as_xmalloc((size_t)set->n * 3 * sizeof *c), *d = c + set->n, *m = d + set->n;
    double wc, wd, fv = 1, fs = 0;
    const as_tensor *tt = tensor >= 0 ? as_graph_tensor(map->g, tensor) : NULL;
    int zero = map->zero > 0 && tt != NULL && tt->kind == AS_TK_PARAM && tt->update >= 0;
    int opt = op >= 0 && map->zero >= 3 && (as_graph_op(map->g, op)->flags & AS_OF_OPTIMIZER);
    size_t id;
    int i, rc;

    op_weights(map, op, &wc, &wd);
    if (zero)
        tensor_factor_parts(map->g, tt, map->micro, &fv, &fs);
    int strict = 0;
    for (i = 0; map->roles && i < set->n && !strict; i++)
        strict = role_filter(map, set, inb, outb, i, 1) == 0;
    for (i = 0; i < set->n; i++) {
        c[i] = set->s[i].compute * wc + batch_filter(map, set, op, batch, i) +
               role_filter(map, set, inb, outb, i, strict);
        d[i] = set->s[i].comm * wd;
        m[i] = set->s[i].mem;
        if (zero && fv + fs > 0) {
            /* ZeRO-1: optimizer states sharded over the data axes the parameter replicates
               (ZeRO-2's gradient buffers: add_point); ZeRO-3: the parameter too, gathered
               before each of its uses (the copy: add_point; the gathers' time here) */
            double parts = as_spec_zero_parts(&set->s[i].out[0], as_cost_model_mesh(map->cm),
                                              map->role), g;
            m[i] = set->s[i].mem / (fv + fs) * ((map->zero >= 3 ? fv / parts : fv) + fs / parts);
            if (zero3_param(map, tt) && map->zuse[tensor] > 0) {
                as_zero_gather_steps(map->cm, &tt->shape, &set->s[i].out[0], map->role, NULL,
                                     &g);
                d[i] += map->zuse[tensor] * g;
            }
        }
        if (opt) {
            /* ZeRO-3: the update runs on the shard */
            double u = zero3_update_cost(map, op, &set->s[i]);
            if (u >= 0)
                c[i] += (u - set->s[i].compute) * wc;
        }
        if (map->zero >= 3 && op >= 0) {
            /* ZeRO-3: a parameter gradient resolved by the op is reduce-scattered */
            int pv = as_strat_partial_variant(set, i), o;
            const as_op *gop = as_graph_op(map->g, op);
            for (o = 0; pv >= 0 && o < set->nout && o < gop->nout; o++)
                d[i] -= wd * zero3_saving(map, gop->out[o], &set->s[pv].out[o],
                                          &set->s[i].out[o]);
        }
    }
    rc = as_problem_add_node(p, name, (size_t)set->n, c, d, m, &id, err);
    for (i = 0; rc == AS_OK && i < set->n; i++)
        rc = as_problem_set_strategy_name(p, id, (size_t)i, set->s[i].name, err);
    free(c);
    if (rc != AS_OK)
        return rc;
    map->node_op[id] = op;
    map->node_tensor[id] = tensor;
    map->node_set[id] = set;
    map->st.strategies += set->n;
    return AS_OK;
}

/*
 * Memory factor of declared tensor T: a trained parameter carries its
 * optimizer states (master weights, gradient accumulator, moments), in
 * bytes relative to its own (mixed precision: a 16-bit parameter with fp32
 * states has factor 1 + 4 x 2 = 9 under Adam).  Its gradient is not in the
 * factor: the gradient buffer is laid out as the op that produces it leaves
 * it (often sharded where the parameter is replicated), so it is a resident
 * entry of its own on that op's node (grad_buffer), as the simulator
 * declares it (sim/lower.c lower_grad_buf).
 */
static void
tensor_factor_parts(const as_graph *g, const as_tensor *t, int micro, double *value,
                    double *state)
{
    double own = as_dtype_size(t->shape.dtype);
    int32_t i;

    *value = 1;
    *state = 0;
    if (t->kind == AS_TK_INPUT && (t->flags & AS_TF_RECV))
        return; /* received from another stage: one microbatch's, while it is used */
    if (t->kind == AS_TK_INPUT) {
        *value = micro > 1 ? micro : 1; /* every microbatch's inputs are loaded at the start */
        return;
    }
    if (t->kind == AS_TK_STATE) {
        *value = t->of >= 0 ? 0 : 1;
        return;
    }
    if (t->kind != AS_TK_PARAM || t->update < 0 || own <= 0)
        return;
    for (i = 0; i < as_graph_ntensors(g); i++) {
        const as_tensor *s = as_graph_tensor(g, i);
        if (s->kind == AS_TK_STATE && s->of == t->id)
            *state += as_dtype_size(s->shape.dtype) / own;
    }
}

static double
tensor_factor(const as_graph *g, const as_tensor *t, int micro)
{
    double v, st;

    tensor_factor_parts(g, t, micro, &v, &st);
    return v + st;
}

static int
add_declared(as_build_map *map, as_problem *p, as_err *err)
{
    const as_graph *g = map->g;
    int32_t t;

    for (t = 0; t < as_graph_ntensors(g); t++) {
        const as_tensor *tt = as_graph_tensor(g, t);
        const as_strategy_set *set;
        if (tt->producer >= 0)
            continue;
        int outb = tt->kind == AS_TK_INPUT ? tt->batch_dim : -1;
        set = as_strat_tensor_batch(map->ctx, &tt->shape, tt->kind,
                                    tensor_factor(g, tt, map->micro), tt->batch_dim);
        map->tensor_node[t] = map->nnodes;
        map->tensor_out[t] = 0;
        AS_CHECK(add_node(map, p, tt->name, set, -1, t, -1, NULL, &outb, err));
        map->nnodes++;
    }
    return AS_OK;
}

/* Past the deadline while building: AS_ESOLVER naming the phase. */
static int
build_timeout(const as_build_map *map, const char *what, long done, long total, as_err *err)
{
    if (map->deadline <= 0 || as_now() <= map->deadline)
        return AS_OK;
    return as_errf(err, AS_ESOLVER, "time limit reached while building the problem (%s: %ld of "
                   "%ld done), no plan", what, done, total);
}

static int
add_ops(as_build_map *map, as_problem *p, as_err *err)
{
    const as_graph *g = map->g;
    int32_t i, t;
    int k, rc = AS_OK, outb[AS_MAX_OUTS];
    /* batch dim of each tensor (Alpa's batch-dim map; used in Alpa's space) */
    int *batch = as_xmalloc(((size_t)as_graph_ntensors(g) + 1) * sizeof *batch), *inb = NULL;

    for (t = 0; t < as_graph_ntensors(g); t++)
        batch[t] = as_graph_tensor(g, t)->kind == AS_TK_INPUT
                       ? as_graph_tensor(g, t)->batch_dim : -1;
    for (i = 0; i < as_graph_nops(g) && rc == AS_OK; i++) {
        const as_op *op = as_graph_op(g, i);
        const as_strategy_set *set;
        as_opview v;
        if ((i & 63) == 0) {
            as_progress_update(&map->pg, i, as_graph_nops(g), NAN, NAN);
            if ((rc = build_timeout(map, "strategies", i, as_graph_nops(g), err)) != AS_OK)
                break;
        }
        for (k = 0; k < op->nout; k++) {
            map->tensor_node[op->out[k]] = map->nnodes;
            map->tensor_out[op->out[k]] = k;
        }
        as_opview_init(&v, g, op);
        rc = as_strat_op(map->ctx, &v.info, &set, err);
        as_opview_free(&v);
        if (rc != AS_OK) {
            as_err_prefix(err, "op '%s': ", op->name);
            break;
        }
        map->op_node[i] = map->nnodes;
        inb = as_xrealloc(inb, ((size_t)op->nin + 1) * sizeof *inb);
        for (k = 0; k < op->nin; k++)
            inb[k] = batch[op->in[k]];
        as_strat_batch_dims(set, inb, outb);
        for (k = 0; k < op->nout && k < set->nout; k++)
            batch[op->out[k]] = outb[k];
        if ((rc = add_node(map, p, op->name, set, i, -1, set->nout > 0 ? outb[0] : -1, inb, outb,
                           err)) != AS_OK)
            break;
        map->nnodes++;
    }
    free(batch);
    free(inb);
    return rc;
}

/* ---- edges ---- */

static size_t
scaled_slot(const as_build_map *map, const double *r)
{
    size_t h = (size_t)(((uintptr_t)r >> 3) * UINT64_C(0x9E3779B97F4A7C15));

    for (h &= map->scaled_cap - 1; map->scaled_src[h] != NULL && map->scaled_src[h] != r;
         h = (h + 1) & (map->scaled_cap - 1))
        ;
    return h;
}

/* K x R (N entries; R a shared matrix of the strategy context), made once per map. */
static const double *
scaled_matrix(as_build_map *map, const double *r, size_t n, int k)
{
    size_t h, e;

    if (2 * (map->scaled_n + 1) > map->scaled_cap) {
        const double **os = map->scaled_src;
        double **od = map->scaled;
        size_t oc = map->scaled_cap, i;
        map->scaled_cap = oc ? 2 * oc : 256;
        map->scaled_src = as_xcalloc(map->scaled_cap, sizeof *map->scaled_src);
        map->scaled = as_xcalloc(map->scaled_cap, sizeof *map->scaled);
        for (i = 0; i < oc; i++)
            if (os[i] != NULL) {
                h = scaled_slot(map, os[i]);
                map->scaled_src[h] = os[i];
                map->scaled[h] = od[i];
            }
        free(os);
        free(od);
    }
    h = scaled_slot(map, r);
    if (map->scaled_src[h] == NULL) {
        map->scaled_src[h] = r;
        map->scaled[h] = as_xmalloc((n + 1) * sizeof *map->scaled[h]);
        for (e = 0; e < n; e++)
            map->scaled[h][e] = r[e] * k;
        map->scaled_n++;
    }
    return map->scaled[h];
}

static int
add_edges(as_build_map *map, as_problem *p, as_err *err)
{
    const as_graph *g = map->g;
    AS_VEC(double) acc = {0};
    int32_t i;
    int j, j2, rc = AS_OK;

    for (i = 0; i < as_graph_nops(g) && rc == AS_OK; i++) {
        const as_op *op = as_graph_op(g, i);
        size_t v = map->op_node[i];
        const as_strategy_set *sv = map->node_set[v];
        if ((i & 63) == 0 && (rc = build_timeout(map, "edges", i, as_graph_nops(g), err)) != AS_OK)
            break;
        for (j = 0; j < op->nin && rc == AS_OK; j++) {
            int32_t t = op->in[j];
            size_t u = map->tensor_node[t], n, e;
            const as_strategy_set *su = map->node_set[u];
            const double *r;
            int dup = 0;
            for (j2 = 0; j2 < j; j2++)
                if (map->tensor_node[op->in[j2]] == u)
                    dup = 1;
            if (dup)
                continue; /* summed in when the first input from U was seen */
            n = (size_t)su->n * (size_t)sv->n;
            r = as_strat_reshard_matrix(map->ctx, su, map->tensor_out[t], sv, j);
            for (j2 = j + 1; j2 < op->nin; j2++) {
                const double *r2;
                int32_t t2 = op->in[j2];
                if (map->tensor_node[t2] != u)
                    continue;
                if (r != acc.v) {
                    AS_VEC_RESERVE(&acc, n);
                    memcpy(acc.v, r, n * sizeof *r);
                    r = acc.v;
                }
                r2 = as_strat_reshard_matrix(map->ctx, su, map->tensor_out[t2], sv, j2);
                for (e = 0; e < n; e++)
                    acc.v[e] += r2[e];
            }
            for (j2 = j; j2 < op->nin && map->zero >= 3; j2++) {
                /* ZeRO-3: a parameter gradient's all-reduce over a data axis is a
                   reduce-scatter (sim/lower.c lower_reshard) */
                int32_t t2 = op->in[j2];
                const as_tensor *g2 = as_graph_tensor(g, t2);
                int a, b;
                if (map->tensor_node[t2] != u || !(g2->flags & AS_TF_GRAD) || g2->of < 0)
                    continue;
                if (r != acc.v) {
                    AS_VEC_RESERVE(&acc, n);
                    memcpy(acc.v, r, n * sizeof *r);
                    r = acc.v;
                }
                for (a = 0; a < su->n; a++)
                    for (b = 0; b < sv->n; b++)
                        acc.v[(size_t)a * sv->n + b] -=
                            zero3_saving(map, t2, &su->s[a].out[map->tensor_out[t2]],
                                         &sv->s[b].in[j2]);
            }
            if (map->micro > 1 && !(op->flags & AS_OF_OPTIMIZER) && r != acc.v && map->share) {
                /* a reshard into a forward or backward op happens once per microbatch: K x
                   the shared matrix, shared in turn */
                rc = as_problem_add_edge_ref(p, u, v, scaled_matrix(map, r, n, map->micro), err);
                map->st.edges++;
                map->st.matrix_entries += (double)n;
                continue;
            }
            if (map->micro > 1 && !(op->flags & AS_OF_OPTIMIZER)) {
                /* a reshard into a forward or backward op happens once per microbatch */
                if (r != acc.v) {
                    AS_VEC_RESERVE(&acc, n);
                    memcpy(acc.v, r, n * sizeof *r);
                    r = acc.v;
                }
                for (e = 0; e < n; e++)
                    acc.v[e] *= map->micro;
            }
            /* a matrix of the strategy context is shared (the map outlives the problem) */
            rc = r == acc.v || !map->share ? as_problem_add_edge(p, u, v, r, err)
                                           : as_problem_add_edge_ref(p, u, v, r, err);
            map->st.edges++;
            map->st.matrix_entries += (double)n;
        }
    }
    AS_VEC_FREE(&acc);
    return rc;
}

/* ---- aliases ---- */

/* Forbid the pairs where A's output OA and B's output OB differ; skipped if none differ. */
static int
add_alias(as_build_map *map, as_problem *p, size_t a, int oa, size_t b, int ob, as_err *err)
{
    const as_strategy_set *sa = map->node_set[a], *sb = map->node_set[b];
    unsigned char *bad = as_xmalloc((size_t)sa->n * (size_t)sb->n);
    int x, y, any = 0, rc = AS_OK;

    for (x = 0; x < sa->n; x++)
        for (y = 0; y < sb->n; y++) {
            int diff = !as_spec_equal(&sa->s[x].out[oa], &sb->s[y].out[ob]);
            bad[(size_t)x * sb->n + y] = (unsigned char)diff;
            any |= diff;
        }
    if (any) {
        rc = as_problem_add_alias(p, a, b, bad, err);
        map->st.aliases++;
    }
    free(bad);
    return rc;
}

static int
add_aliases(as_build_map *map, as_problem *p, as_err *err)
{
    const as_graph *g = map->g;
    int32_t t;

    for (t = 0; t < as_graph_ntensors(g); t++) {
        const as_tensor *tt = as_graph_tensor(g, t);
        size_t a = map->tensor_node[t];
        if (tt->producer >= 0)
            continue;
        if (tt->kind == AS_TK_STATE && tt->of >= 0)
            AS_CHECK(add_alias(map, p, map->tensor_node[tt->of], 0, a, 0, err));
        if ((tt->kind == AS_TK_PARAM || tt->kind == AS_TK_STATE) && tt->update >= 0 &&
            as_graph_tensor(g, tt->update)->producer >= 0)
            AS_CHECK(add_alias(map, p, a, 0, map->tensor_node[tt->update],
                               map->tensor_out[tt->update], err));
    }
    return AS_OK;
}

/* ---- liveness ---- */

/*
 * Is T a parameter's gradient, held in a buffer for the whole iteration?
 * The simulator declares every gradient resident (sim/lower.c
 * lower_grad_buf) at the layout its producer's strategy leaves it in, so
 * the rows count it at every point, on its producer's node.
 */
static int
grad_buffer(const as_tensor *t)
{
    return t->producer >= 0 && t->update_of < 0 && (t->flags & AS_TF_GRAD);
}

/* Is T counted as an activation, data input or gradient buffer in the liveness points? */
static int
live_counted(const as_graph *g, const as_tensor *t)
{
    (void)g;
    if (t->kind == AS_TK_INPUT)
        return 1;
    if (t->producer < 0 || t->update_of >= 0)
        return 0;
    return 1;
}

/* Per-device bytes of a tensor of SHAPE laid out as SPEC (the simulator's as_spec_local_bytes). */
static double
spec_bytes(const as_build_map *map, const as_spec *spec, const as_shape *shape)
{
    int64_t parts[AS_MAX_RANK];

    as_spec_parts(spec, as_cost_model_mesh(map->cm), parts);
    return as_cost_memory(map->cm, shape, parts);
}

/*
 * Bytes per device of the partial result of output O of SET under strategy
 * S that the op writes before resolving it itself (+allreduce,
 * +reducescatter): the simulator holds it next to the resolved output until
 * the collective ends.  0 when S resolves nothing for O.
 */
static double
partial_bytes(const as_build_map *map, const as_strategy_set *set, int s, int o)
{
    int pv = as_strat_partial_variant(set, s);

    if (pv < 0 || as_spec_equal(&set->s[pv].out[o], &set->s[s].out[o]))
        return 0;
    return spec_bytes(map, &set->s[pv].out[o], &set->out_shape[o]);
}

/*
 * Is T a gradient whose partial sums are accumulated in place over the
 * microbatches and resolved once after the last (K > 1: sim/lower.c
 * lower_defer, for gradients read only by the optimizer)?  The simulator
 * then writes no separate partial buffer, so the rows count none.
 */
static int
partial_deferred(const as_build_map *map, int32_t t)
{
    const as_graph *g = map->g;
    const as_tensor *tt = as_graph_tensor(g, t);
    int32_t i;
    int j;

    if (map->micro <= 1 || !grad_buffer(tt))
        return 0;
    for (i = tt->producer + 1; i < as_graph_nops(g); i++) {
        const as_op *r = as_graph_op(g, i);
        if (r->flags & AS_OF_OPTIMIZER)
            continue;
        for (j = 0; j < r->nin; j++)
            if (r->in[j] == t)
                return 0;
    }
    return 1;
}

/* Does any strategy of op node V leave a partial result next to its output? */
static int
has_partial(const as_build_map *map, size_t v)
{
    const as_strategy_set *set = map->node_set[v];
    int s, o;

    for (s = 0; s < set->n; s++)
        for (o = 0; o < set->nout; o++)
            if (partial_bytes(map, set, s, o) > 0)
                return 1;
    return 0;
}

/*
 * Memory vector of active tensor T (node V): with OUT its resolved bytes, with PART the
 * partial result its producer's strategy writes before resolving it (partial_bytes).  A
 * malloc'ed vector, or NULL when it is V's own m.
 */
static double *
entry_vec(const as_build_map *map, int32_t t, size_t v, int out, int part)
{
    const as_strategy_set *set = map->node_set[v];
    int zero2 = map->zero >= 2 && grad_buffer(as_graph_tensor(map->g, t));
    int s, o = map->tensor_out[t];
    const as_shape *sh = &set->out_shape[o];
    double *vec;

    if (out && !part && set->nout <= 1 && !zero2)
        return NULL;
    vec = as_xmalloc((size_t)set->n * sizeof *vec);
    for (s = 0; s < set->n; s++) {
        vec[s] = (out ? (set->nout > 1 ? spec_bytes(map, &set->s[s].out[o], sh) : set->s[s].mem)
                      : 0) +
                 (part ? partial_bytes(map, set, s, o) : 0);
        /* ZeRO-2: the gradient buffer is reduce-scattered over the data axes its
           layout replicates (sim/lower.c lower_grad_buf) */
        if (zero2)
            vec[s] /= as_spec_zero_parts(&set->s[s].out[o], as_cost_model_mesh(map->cm),
                                         map->role);
    }
    return vec;
}

/* Does T's producer OP count T's partial result at its point? */
static int
counts_partial(const as_build_map *map, int32_t t, int32_t op)
{
    return as_graph_tensor(map->g, t)->producer == op && op >= 0 && !partial_deferred(map, t) &&
           has_partial(map, map->tensor_node[t]);
}

/* Pending entries of a point at least this many are shared as a new liveness segment. */
#define SEG_MIN 16
/* ... if they live at least this many more ops (the others die soon and stay pending). */
#define SEG_HORIZON 64
/* Piles of active tensors: one chain of segments each (a point holds one per pile). */
#define NPILES (1 + AS_LIVE_MORE)

/* A segment of a pile's chain: it and its parents hold the pile's tensors [0, end). */
typedef struct chain_seg {
    size_t seg, end;
} chain_seg;

/* Active tensors, latest end first, the first ones stored in a chain of segments. */
typedef struct live_pile {
    AS_VEC(int32_t) act;
    AS_VEC(chain_seg) chain;
    size_t root; /**< the segment below the chain, or AS_NO_SEG */
} live_pile;

/* Tensors of PL stored in its chain. */
static size_t
pile_done(const live_pile *pl)
{
    return pl->chain.n > 0 ? pl->chain.v[pl->chain.n - 1].end : 0;
}

/* Where a tensor ending at E goes in PL: after every tensor ending at E or later. */
static size_t
pile_pos(const live_pile *pl, int32_t e, const int32_t *end)
{
    size_t lo = 0, hi = pl->act.n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (end[pl->act.v[mid]] >= e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Drop the segments of PL's chain that hold tensors at AT or later. */
static void
pile_cut(live_pile *pl, size_t at)
{
    while (pl->chain.n > 0 && pl->chain.v[pl->chain.n - 1].end > at)
        pl->chain.n--;
}

/*
 * Put tensor T on the pile where it displaces the fewest stored tensors (the first such
 * pile): tensors die in the order of their END, at a pile's tail, and a tensor put in
 * among stored ones makes them stored again.  Activations kept for the backward pass,
 * the weights read there and the gradients made there each fill a pile of their own.
 */
static void
pile_push(live_pile *pile, int32_t t, const int32_t *end, unsigned char *inpath)
{
    size_t q, best = 0, bestcost = SIZE_MAX, at = 0, k, done, cost;
    live_pile *pl;

    for (q = 0; q < NPILES && bestcost > 0; q++) {
        k = pile_pos(&pile[q], end[t], end);
        done = pile_done(&pile[q]);
        cost = done > k ? done - k : 0;
        if (cost < bestcost) {
            best = q;
            bestcost = cost;
            at = k;
        }
    }
    pl = &pile[best];
    pile_cut(pl, at);
    AS_VEC_PUSH(&pl->act, t);
    memmove(pl->act.v + at + 1, pl->act.v + at, (pl->act.n - 1 - at) * sizeof *pl->act.v);
    pl->act.v[at] = t;
    inpath[t] = 1;
}

/*
 * A liveness segment of the active tensors ACT[0..n) (their resolved bytes), below PARENT;
 * sets *ID.
 */
static int
add_seg(as_build_map *map, as_problem *p, const int32_t *act, size_t n, size_t parent,
        size_t *id, as_err *err)
{
    size_t *nodes = as_xmalloc((n ? n : 1) * sizeof *nodes), i;
    double **m = as_xcalloc(n ? n : 1, sizeof *m);
    int rc;

    for (i = 0; i < n; i++) {
        nodes[i] = map->tensor_node[act[i]];
        m[i] = entry_vec(map, act[i], nodes[i], 1, 0);
    }
    rc = as_problem_add_live_seg(p, nodes, (const double *const *)m, n, parent, id, err);
    map->st.live_segs++;
    map->st.live_seg_entries += n;
    for (i = 0; i < n; i++)
        free(m[i]);
    free(m);
    free(nodes);
    return rc;
}

/*
 * One point (program position OP): the pending active tensors PEND[0..n) and the entries
 * of segments SEGS[0..NPILES) (the base and the older active tensors).  A tensor OP produces
 * counts the partial result its strategy writes before resolving it: in its own entry
 * when pending, else (INSEG: live in a segment) as an entry of its own.
 */
static int
add_point(as_build_map *map, as_problem *p, int32_t op, const int32_t *pend, size_t npend,
          const size_t *segs, const unsigned char *inseg, const unsigned char *inbase,
          as_err *err)
{
    const as_op *o = as_graph_op(map->g, op);
    size_t ngat = map->zero >= 3 ? (size_t)o->nin : 0;
    size_t cap = npend + (size_t)o->nout + ngat + 1, n = 0, i;
    size_t *nodes = as_xmalloc(cap * sizeof *nodes);
    double **m = as_xcalloc(cap, sizeof *m);
    int rc, k;

    for (i = 0; i < npend; i++) {
        nodes[n] = map->tensor_node[pend[i]];
        m[n] = entry_vec(map, pend[i], nodes[n], 1, counts_partial(map, pend[i], op));
        n++;
    }
    for (k = 0; k < o->nout; k++) {
        int32_t t = o->out[k];
        if ((inseg[t] || inbase[t]) && counts_partial(map, t, op)) {
            for (i = 0; i < npend && pend[i] != t; i++)
                ;
            if (i < npend)
                continue; /* pending: counted above */
            nodes[n] = map->tensor_node[t];
            m[n] = entry_vec(map, t, nodes[n], 0, 1);
            n++;
        }
    }
    /* ZeRO-3: the whole-layout copy of each parameter the op reads, gathered for it
       (sim/lower.c lower_gather) */
    for (i = 0; i < ngat; i++) {
        int32_t t = o->in[i];
        const as_tensor *tt = as_graph_tensor(map->g, t);
        const as_strategy_set *set;
        double *vec;
        size_t j;
        int s;
        for (j = 0; j < i && o->in[j] != t; j++)
            ;
        if (j < i || !zero3_reads(map, op, tt))
            continue;
        set = map->node_set[map->tensor_node[t]];
        vec = as_xmalloc((size_t)set->n * sizeof *vec);
        for (s = 0; s < set->n; s++)
            vec[s] =
                as_spec_zero_parts(&set->s[s].out[0], as_cost_model_mesh(map->cm), map->role) > 1
                    ? spec_bytes(map, &set->s[s].out[0], &tt->shape)
                    : 0;
        m[n] = vec;
        nodes[n++] = map->tensor_node[t];
    }
    rc = as_problem_add_liveness_seg(p, nodes, (const double *const *)m, n, 0, segs, NPILES,
                                     err);
    AS_VEC_PUSH(&map->point_op, op);
    map->st.live_points++;
    map->st.live_entries += n;
    for (i = 0; i < n; i++)
        free(m[i]);
    free(m);
    free(nodes);
    return rc;
}

/* Does op O gather a ZeRO-3 parameter (its point has a copy no other point has)? */
static int
zero3_gathers(const as_build_map *map, int32_t o)
{
    const as_op *op = as_graph_op(map->g, o);
    int j;

    for (j = 0; map->zero >= 3 && j < op->nin; j++)
        if (zero3_reads(map, o, as_graph_tensor(map->g, op->in[j])))
            return 1;
    return 0;
}

/*
 * The liveness base, the root segment (*ROOT; AS_NO_SEG when empty): what every point
 * holds -- the resident entries RES, the tensors INBASE marks (live from the first op to
 * the last) and, in a pipeline stage, the stashed activations of the M - 1 earlier
 * microbatches in flight.
 */
static int
add_base(as_build_map *map, as_problem *p, const size_t *res, size_t nres,
         const unsigned char *inbase, const int32_t *stash, size_t nstash, size_t *root,
         as_err *err)
{
    int32_t nt = as_graph_ntensors(map->g), t;
    AS_VEC(size_t) nodes = {0};
    AS_VEC(double *) m = {0};
    size_t i;
    int rc = AS_OK;

    for (i = 0; i < nres; i++) {
        AS_VEC_PUSH(&nodes, res[i]);
        AS_VEC_PUSH(&m, NULL);
    }
    for (t = 0; t < nt; t++)
        if (inbase[t]) {
            size_t v = map->tensor_node[t];
            AS_VEC_PUSH(&nodes, v);
            AS_VEC_PUSH(&m, entry_vec(map, t, v, 1, 0));
        }
    for (i = 0; i < nstash; i++) {
        size_t v = map->tensor_node[stash[i]];
        const as_strategy_set *set = map->node_set[v];
        int s, o = map->tensor_out[stash[i]];
        double *vec = as_xmalloc((size_t)set->n * sizeof *vec);
        for (s = 0; s < set->n; s++)
            vec[s] = (map->inflight - 1) *
                     (set->nout > 1 ? spec_bytes(map, &set->s[s].out[o], &set->out_shape[o])
                                    : set->s[s].mem);
        AS_VEC_PUSH(&nodes, v);
        AS_VEC_PUSH(&m, vec);
    }
    *root = AS_NO_SEG;
    if (nodes.n > 0) {
        rc = as_problem_add_live_seg(p, nodes.v, (const double *const *)m.v, nodes.n, AS_NO_SEG,
                                     root, err);
        map->st.live_segs++;
        map->st.live_seg_entries += nodes.n;
    }
    for (i = 0; i < m.n; i++)
        free(m.v[i]);
    AS_VEC_FREE(&nodes);
    AS_VEC_FREE(&m);
    return rc;
}

/*
 * Is T received from the previous pipeline stage for the forward pass (an
 * activation, read first by a forward op)?  The simulator receives it when
 * the microbatch's forward starts and keeps it to its last use, so it is
 * stashed like the stage's own activations while later microbatches are in
 * flight.  A tensor received for the backward (a gradient from the next
 * stage) arrives when the backward starts.  FIRST[t] is T's first reader.
 */
static int
recv_fwd(const as_tensor *t, int32_t firstbwd, const int32_t *first)
{
    return (t->flags & AS_TF_RECV) && (firstbwd < 0 || first[t->id] < firstbwd);
}

static int
add_liveness(as_build_map *map, as_problem *p, as_err *err)
{
    const as_graph *g = map->g;
    int32_t nops = as_graph_nops(g), nt = as_graph_ntensors(g), t, i;
    int32_t *def = as_xmalloc((size_t)(nt + 1) * sizeof *def);
    int32_t *last = as_xmalloc((size_t)(nt + 1) * sizeof *last);
    int32_t *start = as_xmalloc((size_t)(nt + 1) * sizeof *start);
    int32_t *end = as_xmalloc((size_t)(nt + 1) * sizeof *end);
    int32_t *first = as_xmalloc((size_t)(nt + 1) * sizeof *first);
    int32_t *births = as_xcalloc((size_t)nops + 1, sizeof *births);
    int32_t *deaths = as_xcalloc((size_t)nops + 1, sizeof *deaths);
    unsigned char *inbase = as_xcalloc((size_t)nt + 1, 1);
    unsigned char *inpath = as_xcalloc((size_t)nt + 1, 1);
    live_pile pile[NPILES];
    AS_VEC(int32_t) pend = {0};
    AS_VEC(size_t) res = {0};
    AS_VEC(int32_t) stash = {0};
    size_t a, b;
    int rc, prev_kept = 0;
    int32_t lastfwd = -1, firstbwd = -1;

    memset(pile, 0, sizeof pile);
    for (i = 0; i < NPILES; i++)
        pile[i].root = AS_NO_SEG;
    AS_CHECK_GOTO(rc, as_graph_liveness(g, def, last, err), out);
    for (i = 0; i < nops && map->inflight > 1; i++)
        if (!(as_graph_op(g, i)->flags & (AS_OF_BACKWARD | AS_OF_OPTIMIZER)))
            lastfwd = i;
    for (t = 0; t < nt; t++)
        first[t] = nops;
    for (i = nops - 1; i >= 0; i--) {
        const as_op *op = as_graph_op(g, i);
        int k;
        for (k = 0; k < op->nin; k++)
            first[op->in[k]] = i;
        if (op->flags & AS_OF_BACKWARD)
            firstbwd = i;
    }
    for (t = 0; t < nt && lastfwd >= 0; t++) {
        const as_tensor *tt = as_graph_tensor(g, t);
        if (((tt->producer >= 0 && tt->producer <= lastfwd && live_counted(g, tt) &&
              !(as_graph_op(g, tt->producer)->flags & (AS_OF_BACKWARD | AS_OF_OPTIMIZER))) ||
             recv_fwd(tt, firstbwd, first)) &&
            last[t] > lastfwd && last[t] < nops)
            AS_VEC_PUSH(&stash, t);
    }
    for (t = 0; t < nt; t++) {
        const as_tensor *tt = as_graph_tensor(g, t);
        start[t] = -1;
        if (tt->producer < 0 && (tt->kind == AS_TK_PARAM || tt->kind == AS_TK_CONST ||
                                 (tt->kind == AS_TK_STATE && tt->of < 0)))
            AS_VEC_PUSH(&res, map->tensor_node[t]);
        if (!live_counted(g, tt) || nops == 0)
            continue;
        start[t] = tt->producer >= 0 && !grad_buffer(tt) ? tt->producer : 0;
        if ((tt->flags & AS_TF_RECV) && !recv_fwd(tt, firstbwd, first) && firstbwd >= 0)
            start[t] = firstbwd; /* a gradient from the next stage: received for the backward */
        end[t] = grad_buffer(tt) ? nops - 1
                 : last[t] < 0   ? start[t]
                                 : (last[t] >= nops ? nops - 1 : last[t]);
        if (end[t] < start[t])
            end[t] = start[t];
        births[start[t]]++;
        deaths[end[t]]++;
        /* live at every point: stored once, in the base */
        inbase[t] = start[t] == 0 && end[t] == nops - 1;
    }
    if (nops > 0)
        AS_CHECK_GOTO(rc, add_base(map, p, res.v, res.n, inbase, stash.v, stash.n,
                                   &pile[0].root, err), out);
    /*
     * Sweep program order, keeping the active tensors outside the base on piles (pile_push),
     * each sorted by the op that ends them, latest first: they die at a pile's tail.  A
     * pile's first tensors are stored in a chain of segments (pile 0's below the base); a
     * point holds the piles' last segments and the tensors after them, so each tensor is
     * stored a few times, not once per point.
     */
    for (i = 0; i < nops; i++) {
        int keep, q;
        size_t top[NPILES];
        if ((i & 63) == 0)
            AS_CHECK_GOTO(rc, build_timeout(map, "liveness", i, nops, err), out);
        if (i == 0)
            for (t = 0; t < nt; t++)
                if (start[t] == 0 && !inbase[t])
                    pile_push(pile, t, end, inpath);
        keep = (!(deaths[i] == 0 && i + 1 < nops) && !(births[i] == 0 && i > 0 && prev_kept)) ||
               (births[i] > 0 && has_partial(map, map->op_node[i])) || zero3_gathers(map, i);
        if (keep) {
            pend.n = 0;
            for (q = 0; q < NPILES; q++) {
                live_pile *pl = &pile[q];
                size_t done = pile_done(pl), upto = pile_pos(pl, i + SEG_HORIZON, end);
                top[q] = pl->chain.n > 0 ? pl->chain.v[pl->chain.n - 1].seg : pl->root;
                if (upto >= done + SEG_MIN) { /* the long-lived pending tensors */
                    AS_CHECK_GOTO(rc, add_seg(map, p, pl->act.v + done, upto - done, top[q],
                                              &top[q], err), out);
                    AS_VEC_PUSH(&pl->chain, ((chain_seg){top[q], upto}));
                    done = upto;
                }
                for (a = done; a < pl->act.n; a++)
                    AS_VEC_PUSH(&pend, pl->act.v[a]);
            }
            AS_CHECK_GOTO(rc, add_point(map, p, i, pend.v, pend.n, top, inpath, inbase, err),
                          out);
        } else {
            map->st.points_dropped++;
        }
        prev_kept = keep;
        /* retire tensors ending at i (each pile's tail), admit those starting at i + 1 */
        for (q = 0; q < NPILES && deaths[i] > 0; q++) {
            live_pile *pl = &pile[q];
            for (b = pl->act.n; b > 0 && end[pl->act.v[b - 1]] <= i; b--)
                inpath[pl->act.v[b - 1]] = 0;
            pile_cut(pl, b);
            pl->act.n = b;
        }
        if (i + 1 < nops) {
            const as_op *op = as_graph_op(g, i + 1);
            int k;
            for (k = 0; k < op->nout; k++)
                if (start[op->out[k]] == i + 1 && !inbase[op->out[k]])
                    pile_push(pile, op->out[k], end, inpath);
        }
    }
    rc = AS_OK;
out:
    free(def);
    free(last);
    free(start);
    free(end);
    free(first);
    free(births);
    free(deaths);
    free(inbase);
    free(inpath);
    for (i = 0; i < NPILES; i++) {
        AS_VEC_FREE(&pile[i].act);
        AS_VEC_FREE(&pile[i].chain);
    }
    AS_VEC_FREE(&pend);
    AS_VEC_FREE(&res);
    AS_VEC_FREE(&stash);
    return rc;
}

/* ---- communication buffers of a known plan ---- */

/* A resharded copy: tensor T needed as SPEC by ops FIRST..LAST; charged to node V's input J. */
typedef struct copy_span {
    int32_t t, first, last;
    size_t v;
    int j;
    const as_spec *spec;
} copy_span;

/* Past DEADLINE (0 = none) while adding a plan's copies: AS_ESOLVER naming the step. */
static int
copies_timeout(double deadline, const char *what, size_t done, size_t total, as_err *err)
{
    if (deadline <= 0 || as_now() <= deadline)
        return AS_OK;
    return as_errf(err, AS_ESOLVER, "time limit reached while adding a plan's resharded copies "
                   "to the rows (%s: %zu of %zu done)", what, done, total);
}

int
as_build_add_copies(as_build_map *map, as_problem *p, const size_t *choice, double deadline,
                    size_t *added, as_err *err)
{
    const as_graph *g = map->g;
    AS_VEC(copy_span) sp = {0};
    as_strmap idx;
    as_arena *keys = as_arena_new();
    size_t i, c, npts = map->point_op.n, nadd = 0;
    double **vecs;
    int rc = AS_OK;
    int32_t o;

    as_strmap_init(&idx);
    /* the copies the plan makes, one per (tensor, pass, layout needed), as the lowering
     * caches them: a forward copy is made again for the backward (sim/lower.c lower_reshard) */
    for (o = 0; o < as_graph_nops(g) && rc == AS_OK; o++) {
        const as_op *op = as_graph_op(g, o);
        size_t v = map->op_node[o];
        const as_strategy *st = &map->node_set[v]->s[choice[v]];
        int j;
        if ((o & 255) == 0 &&
            (rc = copies_timeout(deadline, "spans", (size_t)o, (size_t)as_graph_nops(g), err)))
            break;
        for (j = 0; j < op->nin; j++) {
            int32_t t = op->in[j];
            const as_spec *from = as_build_map_tensor_spec(map, t, choice);
            char key[AS_SPEC_TEXT_MAX + 32];
            int64_t k;
            int len;
            if (!as_reshard_copies(map->cm, &as_graph_tensor(g, t)->shape, from, &st->in[j]))
                continue;
            /* a ZeRO-3 parameter is resharded from the copy gathered for each op, uncached */
            len = zero3_reads(map, o, as_graph_tensor(g, t))
                      ? snprintf(key, sizeof key, "%d@%d/", (int)t, (int)o)
                      : snprintf(key, sizeof key, "%d/%d/", (int)t, as_op_phase(op));
            as_spec_str(&st->in[j], as_cost_model_mesh(map->cm), key + len,
                        sizeof key - (size_t)len);
            if (as_strmap_get(&idx, key, (size_t)-1, &k)) {
                sp.v[k].last = o;
                continue;
            }
            as_strmap_put(&idx, as_arena_strdup(keys, key), (int64_t)sp.n);
            AS_VEC_PUSH(&sp, ((copy_span){t, o, o, v, j, &st->in[j]}));
        }
    }
    /* each span's bytes per strategy of its node, once: the copy is made when V's
     * strategy needs a layout the producer's does not give */
    vecs = as_xcalloc(sp.n + 1, sizeof *vecs);
    for (c = 0; c < sp.n && rc == AS_OK; c++) {
        const copy_span *cs = &sp.v[c];
        const as_strategy_set *set = map->node_set[cs->v];
        const as_shape *sh = &as_graph_tensor(g, cs->t)->shape;
        const as_spec *from = as_build_map_tensor_spec(map, cs->t, choice);
        int q;
        if ((c & 15) == 0 && (rc = copies_timeout(deadline, "bytes", c, sp.n, err)) != AS_OK)
            break;
        vecs[c] = as_xmalloc((size_t)set->n * sizeof *vecs[c]);
        for (q = 0; q < set->n; q++)
            vecs[c][q] = as_reshard_copies(map->cm, sh, from, &set->s[q].in[cs->j])
                             ? spec_bytes(map, &set->s[q].in[cs->j], sh)
                             : 0;
    }
    /* every point inside a span gets a copy of itself plus the spans' entries */
    for (i = 0; i < npts && rc == AS_OK && sp.n > 0; i++) {
        int32_t at = map->point_op.v[i];
        const as_plive *l = as_problem_live(p, i);
        AS_VEC(size_t) nodes = {0};
        AS_VEC(const double *) m = {0};
        size_t e;
        if ((i & 15) == 0 && (rc = copies_timeout(deadline, "points", i, npts, err)) != AS_OK)
            break;
        for (c = 0; c < sp.n; c++) {
            const copy_span *cs = &sp.v[c];
            if (at < cs->first || at > cs->last)
                continue;
            AS_VEC_PUSH(&nodes, cs->v);
            AS_VEC_PUSH(&m, vecs[c]);
        }
        if (nodes.n > 0) {
            for (e = 0; e < l->n; e++) {
                AS_VEC_PUSH(&nodes, l->nodes[e]);
                AS_VEC_PUSH(&m, l->m[e]);
            }
            size_t segs[1 + AS_LIVE_MORE];
            segs[0] = l->seg;
            memcpy(segs + 1, l->more, sizeof l->more);
            rc = as_problem_add_liveness_seg(p, nodes.v, m.v, nodes.n, l->resident, segs,
                                             1 + AS_LIVE_MORE, err);
            nadd++;
        }
        AS_VEC_FREE(&m);
        AS_VEC_FREE(&nodes);
    }
    for (c = 0; c < sp.n; c++)
        free(vecs[c]);
    free(vecs);
    if (added != NULL)
        *added = nadd;
    as_strmap_destroy(&idx);
    as_arena_free(keys);
    AS_VEC_FREE(&sp);
    return rc;
}

/* ---- entry point ---- */

/* ---- axis images (the heuristics' axis-map move, problem.h as_problem_set_axis_image) ---- */

/* The non-identity permutations of NAXES (<= 3) axes into PERM, in lexicographic order. */
static size_t
axis_perms(int naxes, int perm[AS_AXIS_PERM_MAX][AS_MESH_MAX_AXES])
{
    static const int p3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    size_t n = 0;
    int i, a;

    if (naxes == 2) {
        perm[0][0] = 1;
        perm[0][1] = 0;
        return 1;
    }
    if (naxes != 3)
        return 0;
    for (i = 1; i < 6; i++, n++)
        for (a = 0; a < 3; a++)
            perm[n][a] = p3[i][a];
    return n;
}

/* SP with mesh axis a moved to PERM[a]. */
static as_spec
spec_permuted(const as_spec *sp, const int *perm, int naxes)
{
    as_spec q = *sp;
    int a;

    for (a = 0; a < naxes; a++) {
        q.axis[perm[a]] = sp->axis[a];
        q.partial[perm[a]] = sp->partial[a];
    }
    return q;
}

static int
spec_same(const as_spec *a, const as_spec *b, int naxes)
{
    int k;

    if (a->rank != b->rank)
        return 0;
    for (k = 0; k < naxes; k++)
        if (a->axis[k] != b->axis[k] || a->partial[k] != b->partial[k])
            return 0;
    return 1;
}

/* IMG[j * n + s]: the strategy of SET whose specs are those of s under permutation j
   (else the cheapest whose input specs are; else AS_NO_IMAGE). */
static void
set_images(const as_strategy_set *set, int perm[AS_AXIS_PERM_MAX][AS_MESH_MAX_AXES],
           size_t nperm, int naxes, size_t *img)
{
    size_t j, n = (size_t)set->n, nio = (size_t)(set->nin + set->nout);
    as_spec *want = as_xcalloc(nio + 1, sizeof *want);
    size_t s, t, i;

    for (j = 0; j < nperm; j++)
        for (s = 0; s < n; s++) {
            const as_strategy *a = &set->s[s];
            size_t best = AS_NO_IMAGE;
            img[j * n + s] = AS_NO_IMAGE;
            for (i = 0; i < nio; i++)
                want[i] = spec_permuted(i < (size_t)set->nin ? &a->in[i] : &a->out[i - set->nin],
                                        perm[j], naxes);
            for (t = 0; t < n; t++) {
                const as_strategy *b = &set->s[t];
                for (i = 0; i < nio; i++)
                    if (!spec_same(&want[i], i < (size_t)set->nin ? &b->in[i] : &b->out[i - set->nin],
                                   naxes))
                        break;
                if (i == nio) {
                    img[j * n + s] = t;
                    break;
                }
            }
            /* none with every spec: the cheapest with the inputs' (an op whose output the
               permutation leaves without its layout: a reduce-scatter becomes an
               all-reduce) */
            for (t = 0; img[j * n + s] == AS_NO_IMAGE && set->nin > 0 && t < n; t++) {
                const as_strategy *b = &set->s[t];
                for (i = 0; i < (size_t)set->nin; i++)
                    if (!spec_same(&want[i], &b->in[i], naxes))
                        break;
                if (i == (size_t)set->nin && (best == AS_NO_IMAGE ||
                                              b->compute + b->comm < set->s[best].compute +
                                                                         set->s[best].comm))
                    best = t;
            }
            if (img[j * n + s] == AS_NO_IMAGE)
                img[j * n + s] = best;
        }
    free(want);
}

/* Every node's axis images, computed once per strategy set. */
static void
add_axis_images(as_build_map *map, as_problem *p)
{
    int perm[AS_AXIS_PERM_MAX][AS_MESH_MAX_AXES];
    int naxes = as_mesh_naxes(as_cost_model_mesh(map->cm));
    size_t nperm = axis_perms(naxes, perm), v, nsets = 0;
    size_t **cache = NULL;

    if (nperm == 0)
        return;
    for (v = 0; v < map->nnodes; v++)
        if (map->node_set[v] != NULL && (size_t)map->node_set[v]->id + 1 > nsets)
            nsets = (size_t)map->node_set[v]->id + 1;
    cache = as_xcalloc(nsets + 1, sizeof *cache);
    for (v = 0; v < map->nnodes; v++) {
        const as_strategy_set *set = map->node_set[v];
        if (set == NULL)
            continue;
        if (cache[set->id] == NULL) {
            cache[set->id] = as_xcalloc(nperm * (size_t)set->n + 1, sizeof **cache);
            set_images(set, perm, nperm, naxes, cache[set->id]);
        }
        as_problem_set_axis_image(p, v, nperm, cache[set->id], NULL);
    }
    for (v = 0; v < nsets; v++)
        free(cache[v]);
    free(cache);
}

int
as_problem_from_graph(const as_graph *g, const as_mesh *mesh, const as_cost_model *cm,
                      const as_build_opts *o, as_problem **out, as_build_map **mapp, as_err *err)
{
    as_build_opts dflt;
    as_build_map *map;
    as_problem *p;
    size_t nn = (size_t)as_graph_nops(g) + (size_t)as_graph_ntensors(g) + 1;
    int rc;

    if (o == NULL) {
        as_build_opts_init(&dflt);
        o = &dflt;
    }
    if (mesh != as_cost_model_mesh(cm) &&
        strcmp(as_mesh_str(mesh), as_mesh_str(as_cost_model_mesh(cm))) != 0)
        return as_errf(err, AS_EUSAGE, "cost model is bound to mesh '%s', not '%s'",
                       as_mesh_str(as_cost_model_mesh(cm)), as_mesh_str(mesh));
    map = as_xcalloc(1, sizeof *map);
    map->g = g;
    map->cm = cm;
    map->deadline = o->deadline;
    map->share = mapp != NULL;
    as_progress_start(&map->pg, "building the problem: ops");
    map->micro = o->microbatches > 1 ? o->microbatches : 1;
    map->inflight = o->inflight > 1 ? o->inflight : 1;
    map->ctx = as_strat_ctx_new(cm);
    map->zero = o->zero;
    if (o->roles != NULL && (rc = as_mesh_parse_roles(mesh, o->roles, map->role, err)) != AS_OK) {
        as_build_map_free(map);
        return rc;
    }
    for (rc = 0; rc < as_mesh_naxes(mesh); rc++)
        map->roles |= map->role[rc] != AS_ROLE_AUTO && as_mesh_axis_size(mesh, rc) > 1;
    if (o->zero < 0 || o->zero > 3) {
        as_build_map_free(map);
        return as_errf(err, AS_EUSAGE, "--zero must be 0, 1, 2 or 3, got %d", o->zero);
    }
    if (o->zero > 0 && memchr(map->role, AS_ROLE_DATA, sizeof map->role) == NULL) {
        as_build_map_free(map);
        return as_errf(err, AS_EUSAGE, "--zero %d needs a data axis to shard over (--role "
                       "AXIS=data)", o->zero);
    }
    map->node_op = as_xmalloc(nn * sizeof *map->node_op);
    map->node_tensor = as_xmalloc(nn * sizeof *map->node_tensor);
    map->node_set = as_xcalloc(nn, sizeof *map->node_set);
    map->op_node = as_xcalloc((size_t)as_graph_nops(g) + 1, sizeof *map->op_node);
    map->tensor_node = as_xcalloc((size_t)as_graph_ntensors(g) + 1, sizeof *map->tensor_node);
    map->tensor_out = as_xcalloc((size_t)as_graph_ntensors(g) + 1, sizeof *map->tensor_out);
    if (map->zero >= 3)
        zero3_uses(map);
    p = as_problem_new();
    AS_CHECK_GOTO(rc, add_declared(map, p, err), out);
    AS_CHECK_GOTO(rc, add_ops(map, p, err), out);
    AS_CHECK_GOTO(rc, add_edges(map, p, err), out);
    AS_CHECK_GOTO(rc, add_aliases(map, p, err), out);
    if (o->liveness)
        AS_CHECK_GOTO(rc, add_liveness(map, p, err), out);
    if (o->memory < 0)
        as_problem_set_memory(p, as_hw_usable_memory(as_cost_model_hw(cm)));
    else
        as_problem_set_memory(p, o->memory);
    map->st.nodes = map->nnodes;
    add_axis_images(map, p);
out:
    as_progress_end(&map->pg);
    if (rc != AS_OK) {
        as_problem_free(p);
        as_build_map_free(map);
        return rc;
    }
    *out = p;
    if (mapp != NULL)
        *mapp = map;
    else
        as_build_map_free(map);
    return AS_OK;
}

/* ---- plans ---- */

int
as_plan_from_choice(const as_build_map *map, const size_t *choice, const as_plan_source *src,
                    as_shard_plan **out, as_err *err)
{
    const as_graph *g = map->g;
    const as_cost_model *cm = map->cm;
    as_shard_plan *pl;
    size_t v;
    int32_t t, i;
    int rc = AS_OK;

    for (v = 0; v < map->nnodes; v++)
        if (choice[v] >= (size_t)map->node_set[v]->n)
            return as_errf(err, AS_EUSAGE, "strategy %zu of node %zu out of range (%d)",
                           choice[v], v, map->node_set[v]->n);
    AS_CHECK(as_shard_plan_new(as_mesh_str(as_cost_model_mesh(cm)), &pl, err));
    pl->graph = as_shard_plan_strdup(pl, as_graph_name(g));
    pl->hw = as_shard_plan_strdup(pl, as_cost_model_hw(cm)->name);
    pl->hw_file = as_shard_plan_strdup(pl, as_cost_model_hw(cm)->file);
    pl->cost_model = as_shard_plan_strdup(pl, as_cost_model_ops(cm)->name);
    memcpy(pl->role, map->role, sizeof pl->role);
    pl->zero = map->zero;
    if (src != NULL) {
        pl->solver = as_shard_plan_strdup(pl, src->solver);
        pl->status = as_shard_plan_strdup(pl, src->status);
        pl->objective = src->objective;
        pl->bound = src->bound;
        pl->peak = src->peak;
    }
    for (t = 0; t < as_graph_ntensors(g) && rc == AS_OK; t++) {
        const as_tensor *tt = as_graph_tensor(g, t);
        rc = as_shard_plan_add_tensor(pl, tt->name, tt->kind, &tt->shape,
                                      as_build_map_tensor_spec(map, t, choice), err);
    }
    for (i = 0; i < as_graph_nops(g) && rc == AS_OK; i++) {
        const as_op *op = as_graph_op(g, i);
        v = map->op_node[i];
        as_shard_plan_add_op(pl, op->name, op->def->name, map->node_set[v]->s[choice[v]].name,
                             (int)choice[v]);
    }
    if (rc != AS_OK) {
        as_shard_plan_free(pl);
        return rc;
    }
    *out = pl;
    return AS_OK;
}

/* ---- setup ---- */

int
as_graph_problem_init(as_graph_problem *gp, as_graph *g, const as_graph_setup *s, as_err *err)
{
    const as_cost_ops *ops;
    double t0 = as_now();
    int rc;

    memset(gp, 0, sizeof *gp);
    gp->g = g;
    if ((rc = as_mesh_parse(s->mesh, &gp->mesh, err)) != AS_OK ||
        (rc = as_hw_load(s->hw != NULL ? s->hw : "a100-dgx", &gp->hw, err)) != AS_OK)
        goto out;
    if ((ops = as_cost_model_find(s->cost != NULL ? s->cost : "roofline", err)) == NULL) {
        rc = err->code;
        goto out;
    }
    AS_CHECK_GOTO(rc, as_cost_model_new(ops, &gp->hw, gp->mesh, s->params, s->nparams, &gp->cm,
                                        err), out);
    AS_CHECK_GOTO(rc, as_problem_from_graph(g, gp->mesh, gp->cm, &s->build, &gp->p, &gp->map,
                                            err), out);
    if (s->tie || s->group != NULL) {
        int period = !s->tie ? 0 : s->tie_period > 0 ? s->tie_period : AS_GROUP_PERIOD;
        gp->groups = as_xcalloc(1, sizeof *gp->groups);
        AS_CHECK_GOTO(rc, as_group_tie(g, gp->map, gp->p, s->group, period, gp->groups, err),
                      out);
    }
    gp->build_s = as_now() - t0;
out:
    if (rc != AS_OK)
        as_graph_problem_free(gp);
    return rc;
}

void
as_graph_problem_free(as_graph_problem *gp)
{
    as_group_result_free(gp->groups);
    free(gp->groups);
    as_build_map_free(gp->map);
    as_problem_free(gp->p);
    as_cost_model_free(gp->cm);
    as_mesh_free(gp->mesh);
    as_graph_free(gp->g);
    memset(gp, 0, sizeof *gp);
}

/* ---- distinct layouts (k-best) ---- */

struct as_layout_set {
    const as_build_map *map;
    int naxes, nperm;
    int perm[24][AS_MESH_MAX_AXES]; /* permutations of interchangeable axes (identity first) */
    size_t nt, len;                 /* tensors; bytes of a full key */
    AS_VEC(unsigned char *) full;   /* canonical keys of every tensor's spec */
    AS_VEC(double) obj;
    unsigned char *cur, *best;      /* scratch [len] */
};

static void
layout_perms(as_layout_set *ls, int *p, int k, unsigned used)
{
    const as_mesh *m = as_cost_model_mesh(ls->map->cm);
    int dpn = as_cost_model_hw(ls->map->cm)->devices_per_node, a;

    if (k == ls->naxes) {
        memcpy(ls->perm[ls->nperm++], p, sizeof ls->perm[0]);
        return;
    }
    for (a = 0; a < ls->naxes; a++)
        if (!(used & (1u << a)) && as_mesh_axis_size(m, a) == as_mesh_axis_size(m, k) &&
            ls->map->role[a] == ls->map->role[k] &&
            as_mesh_axis_link(m, a, dpn) == as_mesh_axis_link(m, k, dpn)) {
            p[k] = a;
            layout_perms(ls, p, k + 1, used | (1u << a));
        }
}

as_layout_set *
as_layout_set_new(const as_build_map *map)
{
    as_layout_set *ls = as_xcalloc(1, sizeof *ls);
    int p[AS_MESH_MAX_AXES] = {0};

    ls->map = map;
    ls->naxes = as_mesh_naxes(as_cost_model_mesh(map->cm));
    layout_perms(ls, p, 0, 0);
    ls->nt = (size_t)as_graph_ntensors(map->g);
    ls->len = ls->nt * (size_t)ls->naxes * 2 + 1;
    ls->cur = as_xmalloc(ls->len);
    ls->best = as_xmalloc(ls->len);
    return ls;
}

static void
layout_forget(as_layout_set *ls)
{
    size_t i;

    for (i = 0; i < ls->full.n; i++)
        free(ls->full.v[i]);
    ls->full.n = ls->obj.n = 0;
}

void
as_layout_set_free(as_layout_set *ls)
{
    if (ls == NULL)
        return;
    layout_forget(ls);
    AS_VEC_FREE(&ls->full);
    AS_VEC_FREE(&ls->obj);
    free(ls->cur);
    free(ls->best);
    free(ls);
}

/* The canonical key of CHOICE: every tensor's spec, the least over the permutations. */
static unsigned char *
layout_key(as_layout_set *ls, const size_t *choice)
{
    unsigned char *key;
    size_t n = 0;
    int q, k;
    int32_t t;

    for (q = 0; q < ls->nperm; q++) {
        n = 0;
        for (t = 0; t < (int32_t)ls->nt; t++) {
            const as_spec *sp = as_build_map_tensor_spec(ls->map, t, choice);
            for (k = 0; k < ls->naxes; k++) {
                int a = ls->perm[q][k];
                ls->cur[n++] = (unsigned char)(sp->axis[a] + 8);
                ls->cur[n++] = sp->partial[a];
            }
        }
        if (q == 0 || memcmp(ls->cur, ls->best, n) < 0)
            memcpy(ls->best, ls->cur, n);
    }
    key = as_xcalloc(1, ls->len); /* zero-padded: keys compare over LEN bytes */
    memcpy(key, ls->best, n);
    return key;
}

int
as_layout_distinct(void *ud, const size_t *choice, double objective)
{
    as_layout_set *ls = ud;
    unsigned char *full;
    size_t i;

    if (choice == NULL) {
        layout_forget(ls);
        return 1;
    }
    full = layout_key(ls, choice);
    for (i = 0; i < ls->full.n; i++) {
        double o = ls->obj.v[i];
        if (memcmp(full, ls->full.v[i], ls->len) == 0 ||
            fabs(objective - o) <= 1e-9 * fmax(fabs(objective), fabs(o))) {
            free(full);
            return 0;
        }
    }
    AS_VEC_PUSH(&ls->full, full);
    AS_VEC_PUSH(&ls->obj, objective);
    return 1;
}
