/* lower.c -- graph + plan (+ pipeline) -> event program.
 *
 * Every op becomes one compute event on each device of its (stage's) mesh,
 * costed from its local input shapes (the strategy's input specs); the op
 * is interned once per distinct local signature.  Before an op, each input
 * whose plan spec differs from the spec the strategy wants is resharded
 * with the steps of as_reshard_steps: per step one collective per device
 * group of its mesh axis (groups run in parallel).  An op whose strategy
 * resolves its partial outputs itself ("+allreduce", "+reducescatter(D)")
 * writes the partial result, then all-reduces / reduce-scatters it.
 * Parameters, optimizer states, constants and gradient buffers are
 * resident (their local shard bytes); data inputs are inputs.
 *
 * Pipelines: forward ops are cut into P contiguous stages of balanced
 * cost (their backward ops included), backward ops go to the stage of the
 * forward tensor they differentiate ("d.NAME"), optimizer ops to their
 * parameter's stage; as_sim_pipeline() orders the passes and this file's
 * emit callback writes each pass's events for one microbatch (batch dims
 * divided by K).  See docs/sim.md "Lowering".
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../formulate/pipeline.h"
#include "../spmd/rules.h"
#include "../spmd/strategy.h"
#include "lower.h"
#include "sim_internal.h"

/* Op roles. */
enum { ROLE_FWD = 0, ROLE_BWD, ROLE_OPT };

typedef struct lower {
    const as_graph *g;
    const as_shard_plan *plan;
    const char *pname;
    const as_graph *mg;        /* K > 1: the graph of one microbatch (same ids), else NULL */
    const as_mesh *mesh;       /* the plan's (one stage's) mesh */
    int n;                     /* devices per stage */
    as_cost_model *cm;
    as_strat_ctx *sctx;
    as_sim_prog *p;
    as_arena *arena;
    int32_t nops, nt;
    const as_strategy **strat; /* [nops] */
    const as_strategy **pstr;  /* [nops] partial variant when the strategy resolves, else NULL */
    as_spec *spec;             /* [nt] plan spec */
    char **sname;              /* [nt] program-safe name */
    /* pipeline */
    int np, nmicro, cur_stage;
    int sym;                   /* 1: device 0 of each stage represents the stage (symmetry) */
    int ne;                    /* devices per stage that events list: 1 with symmetry, else n */
    const int *layers;         /* [np] layers per stage (the plan's), NULL: balanced here */
    int *stage;                /* [nops] */
    uint8_t *role;             /* [nops] */
    int *tstage;               /* [nt] stage of a declared tensor's first reader (-1 none) */
    uint8_t *defer;            /* [nt] gradient whose partial sums are resolved in the tail */
    int *mbdim;                /* [nt] dim divided by K, -1 none */
    int32_t *ids;              /* [nmicro * nt] program tensor id, -1 = not yet */
    double *act_bytes;         /* [np] bytes per device sent forward per microbatch */
    as_strmap rcache;          /* reshard cache "t/micro/stage/phase/spec" -> tensor id */
    int phase;                 /* of the op being lowered: 0 forward, 1 backward, 2 optimizer */
    int32_t *last_wr;          /* [np] each stage's last compute event's first output, -1 none */
    int32_t dep;               /* lower_coll_on: a second tensor the collective waits for, -1 */
    long nrs;                  /* resharded tensors so far (fresh names) */
    const uint8_t *mrole;      /* [AS_MESH_MAX_AXES] axis roles of the plan */
    int zero;                  /* ZeRO stage of the plan (0..3) */
    int nocache;               /* lower_reshard: fresh copies, none cached (ZeRO-3 gathers) */
    int *grp;                  /* scratch group */
    int *devs;                 /* scratch device list */
    struct lower_icache *icache; /* [nops] the last interning of each op */
} lower;

/* Op O's last interning: its local input and output shapes and the result; the
 * microbatches of a pipeline (and the stages' copies) repeat them, and building
 * the op's canonical text per event cost a third of the lowering. */
typedef struct lower_icache {
    as_shape *sh;    /* [nin + nout] (NULL: not interned yet) */
    int32_t id;
    double time;
} lower_icache;

void
as_lower_opts_init(as_lower_opts *o)
{
    memset(o, 0, sizeof *o);
    o->pipeline = 1;
    o->nmicro = 1;
    o->sched = AS_SIM_1F1B;
}

/* Program-safe copy of NAME: characters outside A-Z a-z 0-9 _ . / - become '_'. */
static char *
lower_safe(as_arena *a, const char *name)
{
    char *s = as_arena_strdup(a, name), *c;

    for (c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '.' || *c == '/' || *c == '-'))
            *c = '_';
    return s;
}

static int
declared(const as_tensor *t)
{
    return t->producer < 0;
}

/* Global shape of tensor T for one microbatch. */
static as_shape
lower_shape(const lower *L, int32_t t)
{
    as_shape s = as_graph_tensor(L->g, t)->shape;

    if (L->mbdim[t] >= 0)
        s.dim[L->mbdim[t]] /= L->nmicro;
    return s;
}

/* Per-device bytes of T under SPEC for one microbatch. */
static double
lower_bytes(const lower *L, int32_t t, const as_spec *spec)
{
    as_shape s = lower_shape(L, t);

    return as_spec_local_bytes(spec, &s, L->mesh);
}

/* ---- matching the plan to the graph ---------------------------------- */

static int
lower_match(lower *L, as_err *err)
{
    const as_shard_plan *pl = L->plan;
    const char *gname = as_graph_name(L->g);
    uint8_t *seen_t = as_xcalloc((size_t)L->nt + 1, 1), *seen_o = as_xcalloc((size_t)L->nops + 1, 1);
    const as_plan_op **pop = as_xcalloc((size_t)L->nops + 1, sizeof *pop);
    char sb[AS_SPEC_TEXT_MAX], sb2[AS_SPEC_TEXT_MAX], shb[128], shb2[128];
    int rc = AS_OK;
    size_t i;
    int32_t t, o;

    for (i = 0; i < pl->nops && rc == AS_OK; i++) {
        const as_plan_op *po = &pl->ops[i];
        const as_tensor *gt;

        t = as_graph_find(L->g, po->name);
        if (t < 0 || (gt = as_graph_tensor(L->g, t))->producer < 0 ||
            strcmp(as_graph_op(L->g, gt->producer)->name, po->name) != 0) {
            rc = as_errf(err, AS_EUSAGE, "plan '%s': op '%s' not in graph '%s'", L->pname,
                         po->name, gname);
            break;
        }
        o = gt->producer;
        if (strcmp(as_graph_op(L->g, o)->def->name, po->type) != 0) {
            rc = as_errf(err, AS_EUSAGE, "plan '%s': op '%s' is a %s in the plan but a %s in graph "
                         "'%s'", L->pname, po->name, po->type, as_graph_op(L->g, o)->def->name,
                         gname);
            break;
        }
        seen_o[o] = 1;
        pop[o] = po;
    }
    for (i = 0; i < pl->ntensors && rc == AS_OK; i++) {
        const as_plan_tensor *pt = &pl->tensors[i];
        const as_tensor *gt;

        if ((t = as_graph_find(L->g, pt->name)) < 0) {
            rc = as_errf(err, AS_EUSAGE, "plan '%s': tensor '%s' not in graph '%s'", L->pname,
                         pt->name, gname);
            break;
        }
        gt = as_graph_tensor(L->g, t);
        if (!as_shape_equal(&gt->shape, &pt->shape)) {
            rc = as_errf(err, AS_EUSAGE, "plan '%s': tensor '%s' is %s in the plan but %s in graph "
                         "'%s'", L->pname, pt->name, as_shape_str(&pt->shape, shb, sizeof shb),
                         as_shape_str(&gt->shape, shb2, sizeof shb2), gname);
            break;
        }
        if ((rc = as_spec_check(&pt->spec, &gt->shape, L->mesh, err)) != AS_OK) {
            as_err_prefix(err, "plan '%s': tensor '%s': ", L->pname, pt->name);
            break;
        }
        L->spec[t] = pt->spec;
        seen_t[t] = 1;
    }
    for (t = 0; t < L->nt && rc == AS_OK; t++)
        if (!seen_t[t])
            rc = as_errf(err, AS_EUSAGE, "plan '%s': tensor '%s' of graph '%s' has no spec",
                         L->pname, as_graph_tensor(L->g, t)->name, gname);
    for (o = 0; o < L->nops && rc == AS_OK; o++) {
        const as_op *op = as_graph_op(L->g, o);
        const as_strategy_set *set;
        const as_strategy *s;
        as_opview v;
        int k, pv;

        if (!seen_o[o]) {
            rc = as_errf(err, AS_EUSAGE, "plan '%s': op '%s' of graph '%s' has no strategy",
                         L->pname, op->name, gname);
            break;
        }
        /* K > 1: the strategies of the op's microbatch shapes, the ones `solve` chose
         * among (a reshape of [1,512,768] names its split of output dim 0 after input
         * dim 1, one of [4,512,768] after input dim 0); a plan solved on the whole
         * batch names the whole batch's */
        k = -1;
        if (L->mg != NULL) {
            as_opview_init(&v, L->mg, as_graph_op(L->mg, o));
            rc = as_strat_op(L->sctx, &v.info, &set, err);
            as_opview_free(&v);
            if (rc != AS_OK) {
                as_err_prefix(err, "op '%s': ", op->name);
                break;
            }
            k = as_plan_op_strategy(pop[o], set);
        }
        if (k < 0) {
            as_opview_init(&v, L->g, op);
            rc = as_strat_op(L->sctx, &v.info, &set, err);
            as_opview_free(&v);
            if (rc != AS_OK) {
                as_err_prefix(err, "op '%s': ", op->name);
                break;
            }
        }
        /* By name: cost models and strategy spaces list different strategies, so the
         * plan's index is only a hint (as_plan_op_strategy). */
        if (k < 0 && (k = as_plan_op_strategy(pop[o], set)) < 0) {
            rc = as_errf(err, AS_EUSAGE, "plan '%s': op '%s': no strategy '%s' among its %d on %s",
                         L->pname, op->name, pop[o]->strategy, set->n, as_mesh_str(L->mesh));
            break;
        }
        s = &set->s[k];
        for (k = 0; k < op->nout; k++)
            if (!as_spec_equal(&s->out[k], &L->spec[op->out[k]])) {
                rc = as_errf(err, AS_EUSAGE, "plan '%s': tensor '%s' has spec %s but op '%s' "
                             "under '%s' produces %s", L->pname,
                             as_graph_tensor(L->g, op->out[k])->name,
                             as_spec_str(&L->spec[op->out[k]], L->mesh, sb, sizeof sb), op->name,
                             s->name, as_spec_str(&s->out[k], L->mesh, sb2, sizeof sb2));
                break;
            }
        if (rc != AS_OK)
            break;
        L->strat[o] = s;
        L->pstr[o] = NULL;
        if ((pv = as_strat_partial_variant(set, (int)(s - set->s))) >= 0)
            L->pstr[o] = &set->s[pv];
    }
    free(seen_t);
    free(seen_o);
    free(pop);
    return rc;
}

/* ---- emission ---------------------------------------------------------- */

/*
 * BUF = "NAME/mMICRO", what snprintf(BUF, N, "%s/m%d", NAME, MICRO) writes (this runs
 * per tensor and event of a pipeline, and printf's formatting was a tenth of the
 * lowering).
 */
static void
lower_name_micro(char *buf, size_t n, const char *name, int micro)
{
    size_t len = strlen(name), k = 0;
    char dig[12];
    unsigned u = (unsigned)micro;

    if (micro < 0 || len + 2 + sizeof dig >= n) {
        snprintf(buf, n, "%s/m%d", name, micro);
        return;
    }
    do
        dig[k++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    memcpy(buf, name, len);
    buf[len++] = '/';
    buf[len++] = 'm';
    while (k > 0)
        buf[len++] = dig[--k];
    buf[len] = '\0';
}

/* Program tensor id of graph tensor T for microbatch MICRO (declared params: one id). */
static int32_t
lower_id(lower *L, int32_t t, int micro)
{
    const as_tensor *gt = as_graph_tensor(L->g, t);
    size_t k;
    char buf[512];

    if (declared(gt) && gt->kind != AS_TK_INPUT)
        micro = 0;
    k = (size_t)micro * (size_t)L->nt + (size_t)t;
    if (L->ids[k] < 0) {
        if (L->np > 1 || L->nmicro > 1) {
            if (declared(gt) && gt->kind != AS_TK_INPUT)
                snprintf(buf, sizeof buf, "%s", L->sname[t]);
            else
                lower_name_micro(buf, sizeof buf, L->sname[t], micro);
            L->ids[k] = as_sim_tensor(L->p, buf);
        } else {
            L->ids[k] = as_sim_tensor(L->p, L->sname[t]);
        }
    }
    return L->ids[k];
}

/* Devices BASE .. BASE+n-1 into L->devs. */
static const int *
lower_devs(lower *L, int base)
{
    int i;

    for (i = 0; i < L->ne; i++)
        L->devs[i] = base + i;
    return L->devs;
}

/*
 * One collective of KIND and BYTES per device group along AXIS (stage at BASE), on
 * STREAM (AS_SIM_STREAM_*, -1: the comm stream).
 */
static int
lower_coll_on(lower *L, as_coll kind, int axis, double bytes, int32_t rd, int32_t wr, double wb,
              int base, const char *label, int stream, as_err *err)
{
    int size = as_mesh_axis_size(L->mesh, axis), d, i;
    int coords[AS_MESH_MAX_AXES];

    for (d = 0; d < (L->sym ? 1 : L->n); d++) { /* symmetry: the group of the representative */
        as_mesh_coords(L->mesh, d, coords);
        if (coords[axis] != 0)
            continue;
        as_mesh_group(L->mesh, axis, d, L->grp);
        for (i = 0; i < size; i++)
            L->grp[i] += base;
        as_sim_event_spec e;
        as_sim_event_spec_init(&e);
        e.kind = AS_SIM_COLL;
        e.coll = kind;
        e.devs = L->grp;
        e.ndevs = size;
        e.bytes = bytes;
        int32_t rds[2] = {rd, L->dep};
        e.reads = rds;
        e.nreads = L->dep >= 0 && L->dep != rd ? 2 : 1;
        e.writes = &wr;
        e.wbytes = wb >= 0 ? &wb : NULL;
        e.nwrites = 1;
        e.label = label;
        e.stream = stream;
        AS_CHECK(as_sim_add(L->p, &e, err));
    }
    return AS_OK;
}

static int
lower_coll(lower *L, as_coll kind, int axis, double bytes, int32_t rd, int32_t wr, double wb,
           int base, const char *label, as_err *err)
{
    return lower_coll_on(L, kind, axis, bytes, rd, wr, wb, base, label, -1, err);
}

/*
 * Reshard graph tensor T (microbatch shape) held as SRC in spec FROM into TO.
 * DST >= 0 forces the final tensor id (partial resolution); else a fresh
 * name, cached per (T, micro, stage, phase, TO): a copy made for the forward
 * is not kept for the backward but made again there, as the ILP charges a
 * reshard per reading edge and as ZeRO-3/FSDP gather again for the backward
 * (formulate/build.c as_build_add_copies keys its spans alike).  *OUT gets
 * the id to read.
 */
static int
lower_reshard(lower *L, int32_t t, int micro, const as_spec *from, const as_spec *to, int32_t src,
              int32_t dst, int base, int32_t *out, as_err *err)
{
    as_reshard_step st[AS_RESHARD_MAX_STEPS];
    as_shape shape = lower_shape(L, t);
    const as_tensor *gt = as_graph_tensor(L->g, t);
    int inplace = (gt->flags & AS_TF_GRAD) || gt->update_of >= 0;
    char key[AS_SPEC_TEXT_MAX + 64], name[600], label[600];
    int ns, i, last = -1, rc;
    double zdiv = 1; /* ZeRO-3: devices the gradient is already reduce-scattered over */
    int32_t cur = src;
    int64_t v;

    if (as_spec_equal(from, to) && dst < 0) {
        *out = src;
        return AS_OK;
    }
    if (dst < 0 && !L->nocache) {
        int len = snprintf(key, sizeof key, "%d/%d/%d/%d/", (int)t, micro, L->cur_stage,
                           L->phase);
        as_spec_str(to, L->mesh, key + len, sizeof key - (size_t)len);
        if (as_strmap_get(&L->rcache, key, (size_t)-1, &v)) {
            *out = (int32_t)v;
            return AS_OK;
        }
    }
    ns = as_reshard_steps(L->cm, &shape, from, to, st, NULL);
    for (i = 0; i < ns; i++)
        if (st[i].kind >= 0 && as_mesh_axis_size(L->mesh, st[i].axis) > 1)
            last = i;
    if (dst < 0 && L->phase == 1 && L->last_wr[L->cur_stage] >= 0 &&
        (gt->producer < 0 || as_op_phase(as_graph_op(L->g, gt->producer)) != 1))
        /* the backward's copy of a tensor made before it is made when the backward
         * reaches its reader (after the stage's last compute), not prefetched as
         * soon as the source exists: it lives over the reader's span, as the ILP's
         * rows and as_build_add_copies count it */
        L->dep = L->last_wr[L->cur_stage];
    for (i = 0; i <= last; i++) {
        int32_t next;
        double wb = -1;

        if (st[i].kind < 0 || as_mesh_axis_size(L->mesh, st[i].axis) <= 1)
            continue;
        if (i == last && dst >= 0) {
            next = dst;
        } else {
            snprintf(name, sizeof name, "%s/rs%ld", as_sim_tensor_name(L->p, src), L->nrs++);
            next = as_sim_tensor(L->p, name);
        }
        if (inplace)
            wb = 0;
        if (L->zero >= 1 && st[i].kind == AS_COLL_ALL_REDUCE && (gt->flags & AS_TF_GRAD) &&
            gt->of >= 0 && L->mrole[st[i].axis] == AS_ROLE_DATA) {
            /* ZeRO: the gradient is reduce-scattered, each device updates its 1/D of the
             * parameter and the updated shards are all-gathered (the bytes of the
             * all-reduce's buffer are both collectives' full size); ZeRO-3 keeps the
             * parameter sharded (gathered before each use: lower_gather), so the
             * reduce-scatter is all (formulate/build.c: as_zero_reduce_saving) */
            int32_t mid;
            if (L->zero >= 3) {
                snprintf(label, sizeof label, "%s/zero.%s", L->sname[t],
                         as_mesh_axis_name(L->mesh, st[i].axis));
                AS_CHECK(lower_coll(L, AS_COLL_REDUCE_SCATTER, st[i].axis, st[i].bytes / zdiv, cur,
                                    next, wb, base, label, err));
                zdiv *= as_mesh_axis_size(L->mesh, st[i].axis);
                cur = next;
                continue;
            }
            snprintf(name, sizeof name, "%s/rs%ld", as_sim_tensor_name(L->p, src), L->nrs++);
            mid = as_sim_tensor(L->p, name);
            snprintf(label, sizeof label, "%s%s/zero.%s", L->sname[t], L->np > 1 ? "" : "",
                     as_mesh_axis_name(L->mesh, st[i].axis));
            AS_CHECK(lower_coll(L, AS_COLL_REDUCE_SCATTER, st[i].axis, st[i].bytes, cur, mid, wb,
                                base, label, err));
            AS_CHECK(lower_coll(L, AS_COLL_ALL_GATHER, st[i].axis, st[i].bytes, mid, next, wb,
                                base, label, err));
            cur = next;
            continue;
        }
        if (L->np > 1) /* pipelines: the microbatch in the label (critical path, traces) */
            snprintf(label, sizeof label, "%s/m%d/%s.%s", L->sname[t], micro,
                     as_coll_name((as_coll)st[i].kind), as_mesh_axis_name(L->mesh, st[i].axis));
        else
            snprintf(label, sizeof label, "%s/%s.%s", L->sname[t],
                     as_coll_name((as_coll)st[i].kind), as_mesh_axis_name(L->mesh, st[i].axis));
        rc = lower_coll(L, (as_coll)st[i].kind, st[i].axis, st[i].bytes, cur, next, wb, base,
                        label, err);
        L->dep = -1; /* the later steps wait for this one */
        AS_CHECK(rc);
        cur = next;
    }
    L->dep = -1;
    if (last < 0 && dst >= 0) {
        /* nothing to communicate (size-1 axes): a free local copy */
        double wb = inplace ? 0 : lower_bytes(L, t, to);
        for (i = 0; i < L->ne; i++)
            AS_CHECK(as_sim_add_compute(L->p, base + i, 0, &src, 1, &dst, &wb, 1, L->sname[t],
                                        err));
        cur = dst;
    }
    if (dst < 0 && !L->nocache)
        as_strmap_put(&L->rcache, as_arena_strdup(L->arena, key), cur);
    *out = cur;
    return AS_OK;
}

/* Intern op OP on local shapes IN (outputs OUT); bytes fallback when inference refuses them. */
static int
lower_intern(lower *L, const as_op *op, const as_shape *in, const as_shape *lout, int32_t *id,
             double *time)
{
    as_sim_op so;
    as_err e2 = {0};
    as_attr *at;
    as_opinfo info;
    int k;

    *time = -1;
    so.def = op->def;
    so.in = in;
    so.nin = op->nin;
    so.attr = op->attr;
    so.nattr = op->nattr;
    if (as_sim_intern_op(L->p, &so, id, &e2) == AS_OK)
        return AS_OK;
    /* shape-carrying attributes hold global sizes: rewrite "shape" with the local output */
    at = as_xmalloc(((size_t)op->nattr + 1) * sizeof *at);
    memcpy(at, op->attr, (size_t)op->nattr * sizeof *at);
    for (k = 0; k < op->nattr; k++)
        if (strcmp(at[k].key, "shape") == 0 && at[k].kind == AS_ATTR_INTS && op->nout == 1) {
            at[k].n = lout[0].rank;
            at[k].v = lout[0].dim;
        }
    so.attr = at;
    if (as_sim_intern_op(L->p, &so, id, &e2) == AS_OK) {
        free(at);
        return AS_OK;
    }
    free(at);
    /* still not inferable on local shapes: a fixed time from the lowering's model */
    info = (as_opinfo){op->def, op->nin, in, op->nout, lout, op->nattr, op->attr};
    *time = as_cost_compute(L->cm, &info);
    *id = -1;
    return AS_OK;
}

/* lower_intern of op O, reusing its last result when the local shapes are the same. */
static int
lower_intern_cached(lower *L, int32_t o, const as_op *op, const as_shape *in,
                    const as_shape *lout, int32_t *id, double *time)
{
    lower_icache *c = &L->icache[o];
    int k, same = c->sh != NULL;

    for (k = 0; same && k < op->nin; k++)
        same = as_shape_equal(&c->sh[k], &in[k]);
    for (k = 0; same && k < op->nout; k++)
        same = as_shape_equal(&c->sh[op->nin + k], &lout[k]);
    if (same) {
        *id = c->id;
        *time = c->time;
        return AS_OK;
    }
    AS_CHECK(lower_intern(L, op, in, lout, id, time));
    if (c->sh == NULL)
        c->sh = as_arena_alloc(L->arena, ((size_t)op->nin + (size_t)op->nout + 1) * sizeof *c->sh);
    if (op->nin > 0)
        memcpy(c->sh, in, (size_t)op->nin * sizeof *c->sh);
    if (op->nout > 0)
        memcpy(c->sh + op->nin, lout, (size_t)op->nout * sizeof *c->sh);
    c->id = *id;
    c->time = *time;
    return AS_OK;
}

/* Source of input T of an op of stage L->cur_stage in a pipeline pass C (substitutes). */
static int32_t
lower_src(lower *L, int32_t t, int micro, const as_sim_pipe_ctx *c)
{
    const as_tensor *gt = as_graph_tensor(L->g, t);
    char buf[64];
    int ps;

    if (c == NULL || declared(gt))
        return lower_id(L, t, micro);
    ps = L->stage[gt->producer];
    if (ps == L->cur_stage)
        return lower_id(L, t, micro);
    if (!c->backward)
        return c->in >= 0 ? c->in : -1;
    if (L->role[gt->producer] != ROLE_FWD)
        return c->in >= 0 ? c->in : -1; /* a gradient from the next stage */
    if (ps < L->cur_stage && L->cur_stage > 0) {
        snprintf(buf, sizeof buf, "pipe/a%d.%d", L->cur_stage, micro); /* pipeline.c's */
        return as_sim_tensor(L->p, buf);
    }
    return -1;
}

/* Id of the partial result "NAME/part" of graph tensor T for microbatch MICRO. */
static int32_t
lower_part(lower *L, int32_t t, int micro)
{
    char name[600];

    snprintf(name, sizeof name, "%s/part", as_sim_tensor_name(L->p, lower_id(L, t, micro)));
    return as_sim_tensor(L->p, name);
}

/*
 * Whether the resolution of gradient T's partial sums waits for the stage's
 * tail (pipelines: each microbatch accumulates into the gradient buffer, the
 * buffer is synchronised once after the last backward, DistIR/Megatron).  Only
 * gradients that nothing but the optimizer reads.
 */
static int
lower_defer(const lower *L, const as_sim_pipe_ctx *c, int32_t t)
{
    return c != NULL && L->defer != NULL && L->defer[t];
}

/* Is T a parameter ZeRO-3 keeps sharded (a trained parameter; its layout decides the parts)? */
static int
lower_zero3_param(const lower *L, int32_t t)
{
    const as_tensor *gt = as_graph_tensor(L->g, t);

    return L->zero >= 3 && gt->kind == AS_TK_PARAM && gt->update >= 0 && declared(gt);
}

/*
 * ZeRO-3: all-gather parameter T's resident shard SRC over the data axes its
 * layout replicates (as_zero_gather_steps), on the compute stream, so the
 * whole-layout copy is made just before the op that reads it and freed when
 * that op ends (the ILP counts it at that op's liveness point only, and adds
 * the gathers' time to the objective, exposed).  *OUT gets the copy's id.
 */
static int
lower_gather(lower *L, int32_t t, int32_t src, int base, int32_t *out, as_err *err)
{
    as_reshard_step st[AS_MESH_MAX_AXES];
    as_shape shape = lower_shape(L, t);
    int n = as_zero_gather_steps(L->cm, &shape, &L->spec[t], L->mrole, st, NULL), i;
    char name[600], label[600];
    int32_t cur = src;

    for (i = 0; i < n; i++) {
        int32_t next;
        snprintf(name, sizeof name, "%s/zg%ld", L->sname[t], L->nrs++);
        next = as_sim_tensor(L->p, name);
        snprintf(label, sizeof label, "%s/zero3.%s", L->sname[t],
                 as_mesh_axis_name(L->mesh, st[i].axis));
        AS_CHECK(lower_coll_on(L, AS_COLL_ALL_GATHER, st[i].axis, st[i].bytes, cur, next, -1,
                               base, label, AS_SIM_STREAM_COMPUTE, err));
        cur = next;
    }
    *out = cur;
    return AS_OK;
}

/* Emit op O of microbatch MICRO on the stage at BASE (pass C, NULL without pipeline). */
static int
lower_op(lower *L, int32_t o, int micro, int base, const as_sim_pipe_ctx *c, as_err *err)
{
    const as_op *op = as_graph_op(L->g, o);
    const as_strategy *s = L->strat[o], *ps = L->pstr[o] ? L->pstr[o] : s;
    as_shape *lin = as_xmalloc(((size_t)op->nin + 1) * sizeof *lin), lout[AS_MAX_OUTS];
    int32_t *rd = as_xmalloc(((size_t)op->nin + 1) * sizeof *rd), wr[AS_MAX_OUTS], id;
    int32_t *gsrc = as_xmalloc(((size_t)op->nin + 1) * sizeof *gsrc);
    int opt = (op->flags & AS_OF_OPTIMIZER) != 0;
    double wb[AS_MAX_OUTS], time;
    as_sim_event_spec e;
    char name[600];
    int j, k, nr = 0, rc = AS_OK;

    L->phase = as_op_phase(op);
    for (j = 0; j < op->nin; j++) {
        int32_t t = op->in[j], src = lower_src(L, t, micro, c), r;
        as_shape gs = lower_shape(L, t);

        if (!as_spec_fits(&s->in[j], &gs, L->mesh)) {
            char sb[AS_SPEC_TEXT_MAX], shb[128];
            rc = as_errf(err, AS_EUSAGE, "plan '%s': op '%s': microbatch shape %s of input '%s' "
                         "does not fit spec %s", L->pname, op->name,
                         as_shape_str(&gs, shb, sizeof shb), as_graph_tensor(L->g, t)->name,
                         as_spec_str(&s->in[j], L->mesh, sb, sizeof sb));
            goto out;
        }
        as_spec_local_shape(&s->in[j], &gs, L->mesh, &lin[j]);
        if (opt && L->zero >= 3) /* ZeRO-3: the update runs on the shard */
            as_spec_zero_shard_shape(&lin[j], as_spec_zero_parts(&s->in[j], L->mesh, L->mrole));
        gsrc[j] = -1;
        if (src < 0)
            continue;
        if (!opt && lower_zero3_param(L, t)) {
            /* ZeRO-3: gathered once per reading op, resharded from that copy uncached */
            for (k = 0; k < j && op->in[k] != t; k++)
                ;
            if (k < j && gsrc[k] >= 0)
                gsrc[j] = gsrc[k];
            else
                AS_CHECK_GOTO(rc, lower_gather(L, t, src, base, &gsrc[j], err), out);
            L->nocache = 1;
            rc = lower_reshard(L, t, micro, &L->spec[t], &s->in[j], gsrc[j], -1, base, &r, err);
            L->nocache = 0;
            if (rc != AS_OK)
                goto out;
        } else {
            AS_CHECK_GOTO(rc, lower_reshard(L, t, micro, &L->spec[t], &s->in[j], src, -1, base,
                                            &r, err), out);
        }
        for (k = 0; k < nr; k++)
            if (rd[k] == r)
                break;
        if (k == nr)
            rd[nr++] = r;
    }
    for (k = 0; k < op->nout; k++) {
        int32_t t = op->out[k];
        const as_tensor *gt = as_graph_tensor(L->g, t);
        as_shape gs = lower_shape(L, t);

        as_spec_local_shape(&ps->out[k], &gs, L->mesh, &lout[k]);
        if (opt && L->zero >= 3)
            as_spec_zero_shard_shape(&lout[k], as_spec_zero_parts(&ps->out[k], L->mesh, L->mrole));
        if (L->pstr[o] != NULL && !as_spec_equal(&ps->out[k], &s->out[k])) {
            wr[k] = lower_part(L, t, micro);
        } else {
            wr[k] = lower_id(L, t, micro);
        }
        wb[k] = ((gt->flags & AS_TF_GRAD) || gt->update_of >= 0) &&
                        (wr[k] == lower_id(L, t, micro) || lower_defer(L, c, t))
                    ? 0
                    : (double)as_shape_bytes(&lout[k]);
    }
    AS_CHECK_GOTO(rc, lower_intern_cached(L, o, op, lin, lout, &id, &time), out);
    as_sim_event_spec_init(&e);
    e.kind = AS_SIM_COMPUTE;
    e.devs = lower_devs(L, base);
    e.ndevs = L->ne;
    e.op_id = id;
    e.time = time;
    e.reads = rd;
    e.nreads = nr;
    e.writes = wr;
    e.wbytes = wb;
    e.nwrites = op->nout;
    e.label = L->sname[op->out[0]];
    if (L->np > 1 && L->role[o] != ROLE_OPT) { /* pipelines: the microbatch in the label */
        lower_name_micro(name, sizeof name, L->sname[op->out[0]], micro);
        e.label = name;
    }
    AS_CHECK_GOTO(rc, as_sim_add(L->p, &e, err), out);
    if (op->nout > 0)
        L->last_wr[L->cur_stage] = wr[0];
    for (k = 0; k < op->nout; k++) {
        int32_t t = op->out[k], r;

        if (wr[k] == lower_id(L, t, micro) || lower_defer(L, c, t))
            continue;
        AS_CHECK_GOTO(rc, lower_reshard(L, t, micro, &ps->out[k], &s->out[k], wr[k],
                                        lower_id(L, t, micro), base, &r, err), out);
    }
out:
    free(lin);
    free(rd);
    free(gsrc);
    return rc;
}

/* Declare tensor T on the stage at BASE (inputs per microbatch). */
static int
lower_declare(lower *L, int32_t t, int base, as_err *err)
{
    const as_tensor *gt = as_graph_tensor(L->g, t);
    double b = lower_bytes(L, t, &L->spec[t]);
    int m;

    if (gt->kind == AS_TK_INPUT) {
        for (m = 0; m < L->nmicro; m++)
            AS_CHECK(as_sim_declare(L->p, AS_SIM_INPUT, lower_devs(L, base), L->ne,
                                    lower_id(L, t, m), b, err));
        return AS_OK;
    }
    if (L->zero >= 1 && gt->kind == AS_TK_STATE && gt->of >= 0) /* ZeRO-1: a 1/D shard */
        b /= as_spec_zero_parts(&L->spec[gt->of], L->mesh, L->mrole);
    if (lower_zero3_param(L, t)) /* ZeRO-3: the parameter too (gathered per use: lower_gather) */
        b /= as_spec_zero_parts(&L->spec[t], L->mesh, L->mrole);
    return as_sim_declare(L->p, AS_SIM_RESIDENT, lower_devs(L, base), L->ne, lower_id(L, t, 0), b,
                          err);
}

/* Resident gradient buffer of gradient tensor T on the stage at BASE. */
static int
lower_grad_buf(lower *L, int32_t t, int base, as_err *err)
{
    const as_tensor *gt = as_graph_tensor(L->g, t);
    double b = lower_bytes(L, t, &L->spec[t]);
    char name[600];

    /* ZeRO-2: the buffer is reduce-scattered over the data axes its own layout replicates
       (the ILP's rows divide the producer's output the same way: formulate/build.c add_point) */
    if (L->zero >= 2 && gt->of >= 0)
        b /= as_spec_zero_parts(&L->spec[t], L->mesh, L->mrole);
    snprintf(name, sizeof name, "%s/buf", L->sname[t]);
    return as_sim_declare(L->p, AS_SIM_RESIDENT, lower_devs(L, base), L->ne,
                          as_sim_tensor(L->p, name), b, err);
}

/* ---- pipeline ---------------------------------------------------------- */

/*
 * Microbatch dims of op O's outputs when no sharding rule splits its batch
 * exactly (batch normalisation: each microbatch is normalised by its own
 * statistics): infer the op's outputs on its microbatch input shapes; an
 * output one of whose dims shrinks by K is microbatched along it, one that
 * keeps its shape is whole.
 */
static int
lower_mb_infer(lower *L, int32_t o, as_err *err)
{
    const as_op *op = as_graph_op(L->g, o);
    as_shape *in = as_xmalloc(((size_t)op->nin + 1) * sizeof *in), out[AS_MAX_OUTS];
    int j, k, d, nout = 0, rc;

    for (j = 0; j < op->nin; j++)
        in[j] = lower_shape(L, op->in[j]);
    rc = as_op_infer(op->def, in, op->nin, op->attr, op->nattr, out, &nout, err);
    free(in);
    if (rc != AS_OK || nout != op->nout)
        return as_errf(err, AS_EUSAGE, "op '%s' (%s) cannot be split into microbatches: no "
                       "sharding rule splits its batch, and it does not infer on microbatch "
                       "shapes", op->name, op->def->name);
    for (k = 0; k < op->nout; k++) {
        const as_shape *gs = &as_graph_tensor(L->g, op->out[k])->shape;
        int mb = -1, bad = out[k].rank != gs->rank;

        for (d = 0; d < gs->rank && !bad; d++) {
            if (out[k].dim[d] == gs->dim[d])
                continue;
            if (mb >= 0 || out[k].dim[d] * L->nmicro != gs->dim[d])
                bad = 1;
            mb = d;
        }
        if (bad)
            return as_errf(err, AS_EUSAGE, "op '%s' (%s) cannot be split into microbatches: its "
                           "output '%s' does not shrink by %d along one dim", op->name,
                           op->def->name, as_graph_tensor(L->g, op->out[k])->name, L->nmicro);
        L->mbdim[op->out[k]] = mb;
    }
    return AS_OK;
}

/* Microbatch dims of op O's outputs from its inputs' (see lower_stages). */
static int
lower_mb_op(lower *L, int32_t o, as_err *err)
{
    const as_op *op = as_graph_op(L->g, o);
    const as_rule_set *set;
    const as_shard_rule *r = NULL;
    as_opview v;
    int j, k, any = 0, rc;

    for (j = 0; j < op->nin; j++)
        any |= L->mbdim[op->in[j]] >= 0;
    if (!any)
        return AS_OK;
    as_opview_init(&v, L->g, op);
    rc = as_rules_get(&v.info, &set, err);
    as_opview_free(&v);
    if (rc != AS_OK) {
        as_err_prefix(err, "op '%s': ", op->name);
        return rc;
    }
    for (k = 0; k < set->nrules && r == NULL; k++) {
        for (j = 0; j < op->nin && set->rules[k].in_dim[j] == L->mbdim[op->in[j]]; j++)
            ;
        if (j == op->nin)
            r = &set->rules[k];
    }
    if (r == NULL)
        return lower_mb_infer(L, o, err);
    for (k = 0; k < op->nout; k++)
        L->mbdim[op->out[k]] = r->out[k].kind == AS_COMBINE_GATHER ? r->out[k].dim : -1;
    return AS_OK;
}

/*
 * Stages, roles, microbatch dims.  Stages come from formulate/pipeline.h,
 * the assignment `solve --pipeline` uses: a plan that records its stages
 * (layers per stage) is cut there; otherwise every forward op is a unit and
 * the units are cut into P runs of balanced strategy compute (their
 * backward ops included), as_sim_balanced_split.
 */
static int
lower_stages(lower *L, as_err *err)
{
    const as_graph *g = L->g;
    int *unit = as_xmalloc(((size_t)L->nops + 1) * sizeof *unit);
    int *tunit = as_xmalloc(((size_t)L->nt + 1) * sizeof *tunit);
    int *count = as_xcalloc((size_t)L->np + 1, sizeof *count);
    double *cost = NULL, maxc;
    size_t *bounds = NULL;
    int64_t batch = 0;
    int rc = AS_OK, s, j, nu = 0;
    int32_t o, t;

    for (o = 0; o < L->nops; o++)
        L->role[o] = (uint8_t)as_pipe_role(g, o);
    if (L->layers != NULL) {
        as_pipe_units(g, 1, unit, tunit, &nu);
        for (s = 0, j = 0; s < L->np; s++)
            j += L->layers[s];
        if (nu != j) {
            rc = as_errf(err, AS_EUSAGE, "plan '%s': its %d stages cover %d layers, graph '%s' "
                         "has %d", L->pname, L->np, j, as_graph_name(g), nu);
            goto out;
        }
        memcpy(count, L->layers, (size_t)L->np * sizeof *count);
    } else {
        as_pipe_units(g, 0, unit, tunit, &nu);
        if (nu < L->np) {
            rc = as_errf(err, AS_EUSAGE, "pipeline of %d stages needs at least %d forward ops; "
                         "graph '%s' has %d", L->np, L->np, as_graph_name(g), nu);
            goto out;
        }
        cost = as_xcalloc((size_t)nu + 1, sizeof *cost);
        bounds = as_xmalloc(((size_t)L->np + 1) * sizeof *bounds);
        for (o = 0; o < L->nops; o++) {
            double c = L->strat[o]->compute > 0 ? L->strat[o]->compute : 0;
            if (L->role[o] != ROLE_OPT && unit[o] >= 0)
                cost[unit[o]] += c;
        }
        AS_CHECK_GOTO(rc, as_sim_balanced_split(cost, (size_t)nu, L->np, bounds, &maxc, err),
                      out);
        for (s = 0; s < L->np; s++)
            count[s] = (int)(bounds[s + 1] - bounds[s]);
    }
    as_pipe_stages(g, unit, tunit, L->np, count, L->stage, L->tstage);
    /* microbatch dims: batch inputs, and activations derived from them */
    for (t = 0; t < L->nt; t++) {
        const as_tensor *gt = as_graph_tensor(g, t);
        L->mbdim[t] = -1;
        if (gt->kind == AS_TK_INPUT && gt->batch_dim >= 0 && batch == 0)
            batch = gt->shape.dim[gt->batch_dim];
    }
    if (L->nmicro > 1 && (batch == 0 || batch % L->nmicro != 0)) {
        rc = as_errf(err, AS_EUSAGE, "%d microbatches do not divide the batch (%lld) of graph "
                     "'%s'", L->nmicro, (long long)batch, as_graph_name(g));
        goto out;
    }
    for (t = 0; t < L->nt; t++) {
        const as_tensor *gt = as_graph_tensor(g, t);
        if (gt->kind == AS_TK_INPUT && gt->batch_dim >= 0 && L->nmicro > 1)
            L->mbdim[t] = gt->batch_dim;
    }
    /* through each op's sharding rules: the rule that splits every microbatched input along
     * its microbatch dim and leaves the other inputs whole; the outputs it gathers along a
     * dim are microbatched along that dim, the others (sums such as weight gradients, means
     * such as the loss) are whole per microbatch */
    for (o = 0; o < L->nops && L->nmicro > 1 && rc == AS_OK; o++)
        if (L->role[o] != ROLE_OPT)
            rc = lower_mb_op(L, o, err);
    /* parameter gradients read only by the optimizer are synchronised in the tail */
    L->defer = as_xcalloc((size_t)L->nt + 1, 1);
    for (t = 0; t < L->nt; t++) {
        const as_tensor *gt = as_graph_tensor(g, t);
        L->defer[t] = (gt->flags & AS_TF_GRAD) && !declared(gt) &&
                      L->role[gt->producer] == ROLE_BWD;
    }
    for (o = 0; o < L->nops; o++) {
        const as_op *op = as_graph_op(g, o);
        if (L->role[o] != ROLE_OPT)
            for (j = 0; j < op->nin; j++)
                L->defer[op->in[j]] = 0;
    }
    /* bytes sent forward from stage s to s+1 per microbatch (per device) */
    for (t = 0; t < L->nt; t++) {
        const as_tensor *gt = as_graph_tensor(g, t);
        int last = -1;
        if (declared(gt) || L->role[gt->producer] != ROLE_FWD)
            continue;
        for (o = gt->producer + 1; o < L->nops; o++) {
            const as_op *op = as_graph_op(g, o);
            if (L->role[o] != ROLE_FWD)
                continue;
            for (j = 0; j < op->nin; j++)
                if (op->in[j] == t && L->stage[o] > last)
                    last = L->stage[o];
        }
        for (s = L->stage[gt->producer]; s < last; s++)
            L->act_bytes[s] += lower_bytes(L, t, &L->spec[t]);
    }
out:
    free(cost);
    free(bounds);
    free(unit);
    free(tunit);
    free(count);
    return rc;
}

/* The deferred synchronisation of backward op O's gradient outputs (stage tail). */
static int
lower_grad_sync(lower *L, int32_t o, int micro, int base, as_err *err)
{
    const as_op *op = as_graph_op(L->g, o);
    const as_strategy *s = L->strat[o], *ps = L->pstr[o];
    int k;
    int32_t r;

    if (ps == NULL)
        return AS_OK;
    for (k = 0; k < op->nout; k++) {
        int32_t t = op->out[k];
        if (!L->defer[t] || as_spec_equal(&ps->out[k], &s->out[k]))
            continue;
        AS_CHECK(lower_reshard(L, t, micro, &ps->out[k], &s->out[k], lower_part(L, t, micro),
                               lower_id(L, t, micro), base, &r, err));
    }
    return AS_OK;
}

/* The emit callback: ops of stage C->stage for one microbatch and direction. */
static int
lower_emit(as_sim_prog *p, const as_sim_pipe_ctx *c, void *ud, as_err *err)
{
    lower *L = ud;
    int base = c->devs[0];
    int32_t o, wr[3];
    double wb[3];
    int nw = 0;
    as_sim_event_spec e;
    char label[64];

    (void)p;
    L->cur_stage = c->stage;
    if (c->tail) {
        /* after the stage's last backward and its send: the gradients' deferred
         * synchronisation, then the optimizer */
        for (o = 0; o < L->nops; o++)
            if (L->stage[o] == c->stage && L->role[o] == ROLE_BWD)
                AS_CHECK(lower_grad_sync(L, o, c->micro, base, err));
        for (o = 0; o < L->nops; o++)
            if (L->stage[o] == c->stage && L->role[o] == ROLE_OPT)
                AS_CHECK(lower_op(L, o, c->micro, base, c, err));
        return AS_OK;
    }
    for (o = 0; o < L->nops; o++) {
        if (L->stage[o] != c->stage)
            continue;
        if ((c->backward && L->role[o] == ROLE_BWD) || (!c->backward && L->role[o] == ROLE_FWD))
            AS_CHECK(lower_op(L, o, c->micro, base, c, err));
    }
    /* the pass's handoff: activations / gradients to send, stash and gradient markers */
    if (c->out >= 0) {
        wr[nw] = c->out;
        wb[nw++] = c->backward ? L->act_bytes[c->stage - 1] : L->act_bytes[c->stage];
    }
    if (!c->backward) {
        wr[nw] = c->stash;
        wb[nw++] = 0;
    } else if (c->grad >= 0) {
        wr[nw] = c->grad;
        wb[nw++] = 0;
    }
    /* always a marker, so every pass ends with one (traces, tests) */
    snprintf(label, sizeof label, "%c%d.%d", c->backward ? 'B' : 'F', c->stage, c->micro);
    as_sim_event_spec_init(&e);
    e.kind = AS_SIM_COMPUTE;
    e.devs = c->devs;
    e.ndevs = c->ndevs;
    e.time = 0;
    e.writes = wr;
    e.wbytes = wb;
    e.nwrites = nw;
    e.label = label;
    return as_sim_add(L->p, &e, err);
}

/* Compute seconds of op O on one microbatch's local shapes (what its event costs). */
static double
lower_op_cost(const lower *L, int32_t o)
{
    const as_op *op = as_graph_op(L->g, o);
    const as_strategy *s = L->strat[o], *ps = L->pstr[o] ? L->pstr[o] : s;
    as_shape *lin = as_xmalloc(((size_t)op->nin + 1) * sizeof *lin), lout[AS_MAX_OUTS];
    as_opinfo info;
    double c;
    int j;

    for (j = 0; j < op->nin; j++) {
        as_shape gs = lower_shape(L, op->in[j]);
        as_spec_local_shape(&s->in[j], &gs, L->mesh, &lin[j]);
    }
    for (j = 0; j < op->nout; j++) {
        as_shape gs = lower_shape(L, op->out[j]);
        as_spec_local_shape(&ps->out[j], &gs, L->mesh, &lout[j]);
    }
    info = (as_opinfo){op->def, op->nin, lin, op->nout, lout, op->nattr, op->attr};
    c = as_cost_compute(L->cm, &info);
    free(lin);
    return c > 0 && isfinite(c) ? c : 0;
}

static int
lower_pipeline(lower *L, as_sim_sched sched, as_err *err)
{
    as_sim_stage *st = as_xcalloc((size_t)L->np, sizeof *st);
    int **sd = as_xcalloc((size_t)L->np, sizeof *sd);
    as_sim_pipe_opts po;
    int s, i, rc = AS_OK;
    int32_t o, t;

    for (s = 0; s < L->np; s++) {
        sd[s] = as_xmalloc((size_t)L->ne * sizeof **sd);
        for (i = 0; i < L->ne; i++)
            sd[s][i] = s * L->n + i;
        st[s].devs = sd[s];
        st[s].ndevs = L->ne;
        st[s].act_bytes = L->act_bytes[s];
    }
    /* the passes' compute on microbatch shapes: as_sim_pipeline orders the passes by it, so
     * with free communication the program runs them exactly as that list schedule */
    for (o = 0; o < L->nops; o++) {
        if (L->role[o] == ROLE_FWD)
            st[L->stage[o]].fwd += lower_op_cost(L, o);
        else if (L->role[o] == ROLE_BWD)
            st[L->stage[o]].bwd += lower_op_cost(L, o);
    }
    /* declared tensors on every stage that reads them; gradient buffers on their op's stage */
    for (s = 0; s < L->np && rc == AS_OK; s++) {
        uint8_t *need = as_xcalloc((size_t)L->nt + 1, 1);
        for (o = 0; o < L->nops; o++) {
            const as_op *op = as_graph_op(L->g, o);
            if (L->stage[o] != s)
                continue;
            for (i = 0; i < op->nin; i++)
                if (need[op->in[i]] == 0) /* a gradient read by the optimizer stays a buffer */
                    need[op->in[i]] = 1;
            for (i = 0; i < op->nout; i++)
                if (as_graph_tensor(L->g, op->out[i])->flags & AS_TF_GRAD)
                    need[op->out[i]] = 2;
        }
        for (t = 0; t < L->nt && rc == AS_OK; t++) {
            if (need[t] == 1 && declared(as_graph_tensor(L->g, t)))
                rc = lower_declare(L, t, s * L->n, err);
            else if (need[t] == 2)
                rc = lower_grad_buf(L, t, s * L->n, err);
        }
        free(need);
    }
    if (rc == AS_OK) {
        as_sim_pipe_opts_init(&po);
        po.sched = sched;
        po.nmicro = L->nmicro;
        po.dp = 1;
        po.send_time = -1;
        po.ar_time = -1;
        po.emit = lower_emit;
        po.ud = L;
        rc = as_sim_pipeline(L->p, st, L->np, &po, err);
    }
    for (s = 0; s < L->np; s++)
        free(sd[s]);
    free(sd);
    free(st);
    return rc;
}

/*
 * Whether every device of a stage can mirror the stage's device 0: the
 * lowering emits the same events on all of them (SPMD), so that holds when
 * every group along each mesh axis has the link class of device 0's group
 * and every pipeline send between two stages the link class of device 0's.
 */
static int
lower_symmetric(const lower *L)
{
    int dpn = as_cost_model_hw(L->cm)->devices_per_node, s, a, d, i, ok = 1;
    int coords[AS_MESH_MAX_AXES];
    int *g = as_xmalloc((size_t)L->n * sizeof *g);

    if (L->n == 1) {
        free(g);
        return 1;
    }
    for (s = 0; s < L->np && ok; s++) {
        int base = s * L->n;
        for (a = 0; a < as_mesh_naxes(L->mesh) && ok; a++) {
            int size = as_mesh_axis_size(L->mesh, a), link0 = -1;
            for (d = 0; d < L->n && ok; d++) {
                int32_t gd[AS_MESH_MAX_DEVICES > 4096 ? 4096 : AS_MESH_MAX_DEVICES];
                as_link lk;
                as_mesh_coords(L->mesh, d, coords);
                if (coords[a] != 0 || size > (int)(sizeof gd / sizeof gd[0]))
                    continue;
                as_mesh_group(L->mesh, a, d, g);
                for (i = 0; i < size; i++)
                    gd[i] = g[i] + base;
                lk = as_sim_i_group_link(gd, size, dpn);
                if (link0 < 0)
                    link0 = (int)lk;
                ok = (int)lk == link0;
            }
        }
        if (s + 1 < L->np) {
            int32_t pr[2];
            int link0 = -1;
            for (d = 0; d < L->n && ok; d++) {
                pr[0] = base + d;
                pr[1] = base + L->n + d;
                if (link0 < 0)
                    link0 = (int)as_sim_i_group_link(pr, 2, dpn);
                ok = (int)as_sim_i_group_link(pr, 2, dpn) == link0;
            }
        }
    }
    free(g);
    return ok;
}

/* ---- entry points ------------------------------------------------------ */

static int
lower_flat(lower *L, as_err *err)
{
    int32_t t, o;

    for (t = 0; t < L->nt; t++) {
        const as_tensor *gt = as_graph_tensor(L->g, t);
        if (declared(gt))
            AS_CHECK(lower_declare(L, t, 0, err));
        else if (gt->flags & AS_TF_GRAD)
            AS_CHECK(lower_grad_buf(L, t, 0, err));
    }
    for (o = 0; o < L->nops; o++)
        AS_CHECK(lower_op(L, o, 0, 0, NULL, err));
    return AS_OK;
}

/*
 * The step of the plan (formulate/plan.h: P, K, schedule, stages of `solve
 * --pipeline`) over the options: a setting the command did not give (O->given)
 * comes from the plan, one it gave must agree.
 */
static int
lower_plan_step(const as_shard_plan *plan, as_lower_opts *o, const char *pname, as_err *err)
{
    as_sim_sched ps;

    if (plan->pipeline > 0) {
        if ((o->given & AS_LOWER_GIVEN_PIPELINE) && o->pipeline != plan->pipeline)
            return as_errf(err, AS_EUSAGE, "plan '%s' was solved for --pipeline %d, not %d",
                           pname, plan->pipeline, o->pipeline);
        o->pipeline = plan->pipeline;
    }
    if (plan->microbatches > 0) {
        if ((o->given & AS_LOWER_GIVEN_MICRO) && o->nmicro != plan->microbatches)
            return as_errf(err, AS_EUSAGE, "plan '%s' was solved for --microbatches %d, not %d",
                           pname, plan->microbatches, o->nmicro);
        o->nmicro = plan->microbatches;
    }
    if (*plan->schedule && as_sim_sched_parse(plan->schedule, &ps)) {
        if ((o->given & AS_LOWER_GIVEN_SCHED) && o->sched != ps)
            return as_errf(err, AS_EUSAGE, "plan '%s' was solved for --schedule %s, not %s",
                           pname, plan->schedule, as_sim_sched_name(o->sched));
        o->sched = ps;
    }
    return AS_OK;
}

/* Check --mesh against the plan's mesh (times P when pipelining). */
static int
lower_check_mesh(const lower *L, const char *spec, as_err *err)
{
    as_mesh *m = NULL;
    int rc = AS_OK, k, off;

    if (spec == NULL)
        return AS_OK;
    AS_CHECK(as_mesh_parse(spec, &m, err));
    off = L->np > 1 ? 1 : 0;
    if (L->np > 1 && as_mesh_axis_size(m, 0) != L->np)
        rc = as_errf(err, AS_EUSAGE, "mesh '%s': its first axis must have the %d pipeline "
                     "stages", spec, L->np);
    else if (as_mesh_naxes(m) - off != as_mesh_naxes(L->mesh))
        rc = as_errf(err, AS_EUSAGE, "mesh '%s' does not match plan '%s' (mesh %s%s)", spec,
                     L->pname, as_mesh_str(L->mesh), L->np > 1 ? " per stage" : "");
    for (k = 0; rc == AS_OK && k < as_mesh_naxes(L->mesh); k++)
        if (as_mesh_axis_size(m, k + off) != as_mesh_axis_size(L->mesh, k))
            rc = as_errf(err, AS_EUSAGE, "mesh '%s' does not match plan '%s' (mesh %s%s)", spec,
                         L->pname, as_mesh_str(L->mesh), L->np > 1 ? " per stage" : "");
    as_mesh_free(m);
    return rc;
}

int
as_sim_lower(const as_graph *g, const as_shard_plan *plan, const as_lower_opts *o0,
             as_sim_prog **out, as_err *err)
{
    as_lower_opts o;
    lower L;
    const as_cost_ops *ops;
    const char *hwname, *model;
    as_hw hw;
    int32_t t;
    size_t nids;
    double batch = 0;
    int rc;

    if (o0 != NULL)
        o = *o0;
    else
        as_lower_opts_init(&o);
    memset(&L, 0, sizeof L);
    L.g = g;
    L.plan = plan;
    L.pname = o.plan_name ? o.plan_name : "plan";
    AS_CHECK(lower_plan_step(plan, &o, L.pname, err));
    if (o.pipeline > 1 && plan->stage_layers != NULL && plan->pipeline == o.pipeline)
        L.layers = plan->stage_layers;
    L.mesh = plan->mesh;
    L.mrole = plan->role;
    L.zero = plan->zero;
    L.n = as_mesh_ndevices(plan->mesh);
    L.np = o.pipeline;
    L.nmicro = o.nmicro;
    L.nops = as_graph_nops(g);
    L.nt = as_graph_ntensors(g);
    if (L.np < 1 || L.nmicro < 1)
        return as_errf(err, AS_EUSAGE, "pipeline needs P >= 1 stages and K >= 1 microbatches "
                       "(got P=%d, K=%d)", L.np, L.nmicro);
    if ((long)L.n * L.np > AS_MESH_MAX_DEVICES)
        return as_errf(err, AS_EUSAGE, "%d stages of %d devices exceed %d devices", L.np, L.n,
                       AS_MESH_MAX_DEVICES);
    AS_CHECK(lower_check_mesh(&L, o.mesh, err));
    /* The plan's own profile: the file it was costed with, else its built-in. */
    hwname = o.hw                                  ? o.hw
             : plan->hw_file && *plan->hw_file     ? plan->hw_file
             : plan->hw && *plan->hw               ? plan->hw
                                                   : "a100-dgx";
    model = o.cost_model ? o.cost_model : plan->cost_model && *plan->cost_model ? plan->cost_model
                                                                              : "roofline";
    if (strcmp(model, "alpa") == 0)
        model = "roofline"; /* the simulator needs seconds; alpa plans are costed in time */
    if ((rc = as_hw_load(hwname, &hw, err)) != AS_OK) {
        if (o.hw == NULL && hwname == plan->hw_file)
            as_err_prefix(err, "the plan was costed with hardware profile %s (give --hw): ",
                          plan->hw_file);
        return rc;
    }
    if ((ops = as_cost_model_find(model, err)) == NULL)
        return err->code;
    AS_CHECK(as_cost_model_new(ops, &hw, plan->mesh, o.params, o.nparams, &L.cm, err));
    L.sctx = as_strat_ctx_new(L.cm);
    L.arena = as_arena_new();
    as_strmap_init(&L.rcache);
    L.dep = -1;
    L.last_wr = as_xmalloc((size_t)L.np * sizeof *L.last_wr);
    for (int st = 0; st < L.np; st++)
        L.last_wr[st] = -1;
    L.strat = as_xcalloc((size_t)L.nops + 1, sizeof *L.strat);
    L.pstr = as_xcalloc((size_t)L.nops + 1, sizeof *L.pstr);
    L.spec = as_xcalloc((size_t)L.nt + 1, sizeof *L.spec);
    L.sname = as_xcalloc((size_t)L.nt + 1, sizeof *L.sname);
    L.stage = as_xcalloc((size_t)L.nops + 1, sizeof *L.stage);
    L.role = as_xcalloc((size_t)L.nops + 1, 1);
    L.tstage = as_xcalloc((size_t)L.nt + 1, sizeof *L.tstage);
    L.mbdim = as_xmalloc(((size_t)L.nt + 1) * sizeof *L.mbdim);
    L.act_bytes = as_xcalloc((size_t)L.np, sizeof *L.act_bytes);
    L.grp = as_xmalloc((size_t)L.n * sizeof *L.grp);
    L.devs = as_xmalloc((size_t)L.n * sizeof *L.devs);
    nids = (size_t)L.nmicro * (size_t)L.nt + 1;
    L.ids = as_xmalloc(nids * sizeof *L.ids);
    L.icache = as_xcalloc((size_t)L.nops + 1, sizeof *L.icache);
    memset(L.ids, 0xff, nids * sizeof *L.ids);
    for (t = 0; t < L.nt; t++) {
        const as_tensor *gt = as_graph_tensor(g, t);
        L.sname[t] = lower_safe(L.arena, gt->name);
        L.mbdim[t] = -1;
        if (gt->kind == AS_TK_INPUT && gt->batch_dim >= 0 && batch == 0)
            batch = (double)gt->shape.dim[gt->batch_dim];
    }
    if (L.nmicro > 1) { /* the microbatch graph, when the batch splits (else lowering says why) */
        int *mb = as_xmalloc(((size_t)L.nt + 1) * sizeof *mb);
        as_graph *m = NULL;
        as_err e2 = {0};
        if (as_sim_microbatch_dims(g, L.nmicro, mb, &e2) == AS_OK &&
            as_graph_microbatch(g, L.nmicro, mb, &m, &e2) == AS_OK)
            L.mg = m;
        free(mb);
    }
    AS_CHECK_GOTO(rc, lower_match(&L, err), out);
    AS_CHECK_GOTO(rc, as_sim_prog_new(as_graph_name(g), L.n * L.np, &L.p, err), out);
    L.sym = !o.no_symmetry && lower_symmetric(&L);
    L.ne = L.sym ? 1 : L.n;
    if (L.sym && L.n > 1) {
        int s, i;
        for (s = 0; s < L.np; s++) {
            for (i = 1; i < L.n; i++)
                L.devs[i - 1] = s * L.n + i;
            AS_CHECK_GOTO(rc, as_sim_mirror(L.p, L.devs, L.n - 1, s * L.n, err), out);
        }
    }
    as_sim_prog_set_hw(L.p, hwname);
    as_sim_prog_set_cost_model(L.p, model);
    as_sim_prog_set_batch(L.p, batch);
    if (L.np > 1 || L.nmicro > 1) { /* P = 1, K > 1: gradient accumulation */
        AS_CHECK_GOTO(rc, lower_stages(&L, err), out);
        AS_CHECK_GOTO(rc, lower_pipeline(&L, o.sched, err), out);
    } else {
        AS_CHECK_GOTO(rc, lower_flat(&L, err), out);
    }
    AS_CHECK_GOTO(rc, as_sim_prog_check(L.p, err), out);
    *out = L.p;
    L.p = NULL;
out:
    as_sim_prog_free(L.p);
    free(L.strat);
    free(L.pstr);
    free(L.spec);
    free(L.sname);
    free(L.stage);
    free(L.role);
    free(L.tstage);
    free(L.defer);
    free(L.mbdim);
    free(L.act_bytes);
    free(L.grp);
    free(L.devs);
    free(L.ids);
    free(L.icache);
    free(L.last_wr);
    as_strmap_destroy(&L.rcache);
    as_arena_free(L.arena);
    as_strat_ctx_free(L.sctx);
    as_cost_model_free(L.cm);
    as_graph_free((as_graph *)L.mg);
    return rc;
}

int
as_sim_plan(const as_graph *g, const as_shard_plan *plan, const as_lower_opts *lo,
            const as_sim_opts *so, as_sim_result **res, as_sim_prog **prog, as_err *err)
{
    as_sim_prog *p = NULL;
    as_sim_opts d;
    int rc;

    if (so == NULL) {
        as_sim_opts_init(&d);
        so = &d;
    }
    AS_CHECK(as_sim_lower(g, plan, lo, &p, err));
    rc = as_sim_run(p, so, res, err);
    if (rc == AS_OK && prog != NULL)
        *prog = p;
    else
        as_sim_prog_free(p);
    return rc;
}

/*
 * Gradient accumulation in `solve` (graph/microbatch.c): the dim of every
 * tensor of G that K microbatches divide, by the same rules as lowering
 * (batch inputs, then each non-optimizer op's sharding rules).
 */
int
as_sim_microbatch_dims(const as_graph *g, int nmicro, int *mbdim, as_err *err)
{
    lower L;
    int64_t batch = 0;
    int32_t t, o;
    int rc = AS_OK;

    memset(&L, 0, sizeof L);
    L.g = g;
    L.nmicro = nmicro;
    L.nops = as_graph_nops(g);
    L.nt = as_graph_ntensors(g);
    L.mbdim = mbdim;
    for (t = 0; t < L.nt; t++) {
        const as_tensor *gt = as_graph_tensor(g, t);
        mbdim[t] = -1;
        if (gt->kind == AS_TK_INPUT && gt->batch_dim >= 0 && batch == 0)
            batch = gt->shape.dim[gt->batch_dim];
    }
    if (nmicro > 1 && (batch == 0 || batch % nmicro != 0))
        return as_errf(err, AS_EUSAGE, "%d microbatches do not divide the batch (%lld) of graph "
                       "'%s'", nmicro, (long long)batch, as_graph_name(g));
    for (t = 0; t < L.nt; t++) {
        const as_tensor *gt = as_graph_tensor(g, t);
        if (gt->kind == AS_TK_INPUT && gt->batch_dim >= 0 && nmicro > 1)
            mbdim[t] = gt->batch_dim;
    }
    for (o = 0; o < L.nops && nmicro > 1 && rc == AS_OK; o++)
        if (!(as_graph_op(g, o)->flags & AS_OF_OPTIMIZER))
            rc = lower_mb_op(&L, o, err);
    return rc;
}

int
as_sim_pipeline_plan(const as_graph *g, const int *stage, const int *tstage,
                     as_shard_plan *const *sp, const double *obj, int p, int k,
                     as_sim_sched sched, const char *recompute, const int *count, const char *hw,
                     as_shard_plan **plan, as_sim_result **res, double *peak, double *sim_s,
                     as_err *err)
{
    as_lower_opts lo;
    double t;
    int s, d, n, rc;

    as_shard_plan_free(*plan);
    *plan = NULL;
    as_sim_result_free(*res);
    *res = NULL;
    AS_CHECK(as_pipe_merge(g, stage, tstage, sp, p, plan, err));
    (*plan)->objective = as_pipe_estimate(obj, p, k, NULL);
    as_shard_plan_set_step(*plan, p, k, as_sim_sched_name(sched), recompute, count, NULL);
    as_lower_opts_init(&lo);
    lo.hw = hw;
    lo.pipeline = p;
    lo.nmicro = k;
    lo.sched = sched;
    lo.given = AS_LOWER_GIVEN_PIPELINE | AS_LOWER_GIVEN_MICRO | AS_LOWER_GIVEN_SCHED;
    t = as_now();
    rc = as_sim_plan(g, *plan, &lo, NULL, res, NULL, err);
    if (sim_s != NULL)
        *sim_s += as_now() - t;
    if (rc != AS_OK) {
        as_err_prefix(err, "simulating the pipeline plan: ");
        return rc;
    }
    n = (*res)->ndevices / p;
    (*plan)->peak = 0;
    for (s = 0; s < p; s++) {
        peak[s] = 0;
        for (d = s * n; d < (s + 1) * n; d++)
            peak[s] = fmax(peak[s], (*res)->dev[d].peak);
        (*plan)->peak = fmax((*plan)->peak, peak[s]);
    }
    as_shard_plan_set_step(*plan, p, k, as_sim_sched_name(sched), recompute, count, peak);
    return AS_OK;
}
