/* pipeline.c -- pipeline stages of a training step (see pipeline.h). */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formulate/build.h"
#include "formulate/pipeline.h"
#include "graph/check.h"

int
as_pipe_role(const as_graph *g, int32_t o)
{
    unsigned f = as_graph_op(g, o)->flags;

    return (f & AS_OF_OPTIMIZER) ? AS_PIPE_OPT : (f & AS_OF_BACKWARD) ? AS_PIPE_BWD : AS_PIPE_FWD;
}

/* Forward op whose output tensor NAME ("d.X", "grad.X", "rc.X", "X.1") names; -2 - t for a declared
 * tensor t; -1 for none. */
static int32_t
pipe_fwd_of(const as_graph *g, const char *name)
{
    char buf[512];
    size_t len;
    int32_t t;

    if (strncmp(name, "d.", 2) == 0)
        name += 2;
    else if (strncmp(name, "grad.", 5) == 0)
        name += 5;
    else if (strncmp(name, "rc.", 3) == 0) /* a recomputed copy (graph/recompute.c) */
        name += 3;
    else
        return -1;
    snprintf(buf, sizeof buf, "%s", name);
    for (;;) {
        char *dot;
        t = as_graph_find(g, buf);
        if (t >= 0 && as_graph_tensor(g, t)->producer >= 0 &&
            as_pipe_role(g, as_graph_tensor(g, t)->producer) == AS_PIPE_FWD)
            return as_graph_tensor(g, t)->producer;
        if (t >= 0 && as_graph_tensor(g, t)->producer < 0)
            return -2 - t;
        if ((dot = strrchr(buf, '.')) == NULL)
            return -1;
        len = strspn(dot + 1, "0123456789");
        if (len == 0 || dot[1 + len] != '\0')
            return -1;
        *dot = '\0';
    }
}

void
as_pipe_units(const as_graph *g, int by_layer, int *unit, int *tunit, int *nunits)
{
    int32_t nops = as_graph_nops(g), nt = as_graph_ntensors(g), o, t;
    const char **keys = NULL;
    size_t *klen = NULL;
    int nk = 0, cur = -1, j;

    if (by_layer) {
        keys = as_xcalloc((size_t)nops + 1, sizeof *keys);
        klen = as_xcalloc((size_t)nops + 1, sizeof *klen);
    }
    /* forward ops */
    for (o = 0; o < nops; o++) {
        const as_op *op = as_graph_op(g, o);
        size_t st = 0, len;
        unit[o] = -1;
        if (as_pipe_role(g, o) != AS_PIPE_FWD)
            continue;
        if (!by_layer) {
            unit[o] = nk++;
            continue;
        }
        if ((len = as_graph_layer_key(op->name, &st)) > 0) {
            for (j = nk - 1; j >= 0; j--)
                if (klen[j] == len && memcmp(keys[j], op->name + st, len) == 0)
                    break;
            if (j < 0) {
                keys[nk] = op->name + st;
                klen[nk] = len;
                j = nk++;
            }
            cur = j;
        }
        unit[o] = cur >= 0 ? cur : -3; /* -3: before the first layer */
    }
    for (o = 0; o < nops; o++)
        if (unit[o] == -3)
            unit[o] = nk > 0 ? 0 : -1;
    *nunits = nk;
    free(keys);
    free(klen);
    /* declared tensors: their first forward reader's unit */
    for (t = 0; t < nt; t++)
        tunit[t] = -1;
    for (o = 0; o < nops; o++) {
        const as_op *op = as_graph_op(g, o);
        if (as_pipe_role(g, o) != AS_PIPE_FWD)
            continue;
        for (j = 0; j < op->nin; j++)
            if (tunit[op->in[j]] < 0 && as_graph_tensor(g, op->in[j])->producer < 0)
                tunit[op->in[j]] = unit[o];
    }
    /* backward ops: the forward op they differentiate, else the latest forward producer of
     * an input, else the declared tensor they differentiate */
    for (o = 0; o < nops; o++) {
        const as_op *op = as_graph_op(g, o);
        int32_t f;
        if (as_pipe_role(g, o) != AS_PIPE_BWD)
            continue;
        f = pipe_fwd_of(g, op->name);
        if (f >= 0) {
            unit[o] = unit[f];
            continue;
        }
        {
            int32_t best = -1;
            for (j = 0; j < op->nin; j++) {
                int32_t pr = as_graph_tensor(g, op->in[j])->producer;
                if (pr >= 0 && as_pipe_role(g, pr) == AS_PIPE_FWD && pr > best)
                    best = pr;
            }
            if (best >= 0)
                unit[o] = unit[best];
            else if (f <= -2)
                unit[o] = tunit[-2 - f];
        }
    }
    /* optimizer ops: their parameter's */
    for (o = 0; o < nops; o++) {
        const as_op *op = as_graph_op(g, o);
        if (as_pipe_role(g, o) != AS_PIPE_OPT)
            continue;
        for (j = 0; j < op->nin && unit[o] < 0; j++) {
            const as_tensor *in = as_graph_tensor(g, op->in[j]);
            int32_t par = in->kind == AS_TK_PARAM ? in->id : in->kind == AS_TK_STATE ? in->of : -1;
            if (par >= 0)
                unit[o] = tunit[par];
        }
    }
}

void
as_pipe_unit_flops(const as_graph *g, const int *unit, int nunits, double *cost)
{
    int32_t o;

    memset(cost, 0, (size_t)nunits * sizeof *cost);
    for (o = 0; o < as_graph_nops(g); o++) {
        double f;
        if (as_pipe_role(g, o) == AS_PIPE_OPT || unit[o] < 0 || unit[o] >= nunits)
            continue;
        f = as_graph_op_flops(g, o);
        if (f > 0 && isfinite(f))
            cost[unit[o]] += f;
    }
}

void
as_pipe_balance(const double *cost, int n, int p, int *count)
{
    /* best[s][i]: the smallest largest run of the first i units in s runs */
    double *best = as_xmalloc((size_t)(p + 1) * (size_t)(n + 1) * sizeof *best);
    int *cut = as_xmalloc((size_t)(p + 1) * (size_t)(n + 1) * sizeof *cut);
    double *pre = as_xmalloc((size_t)(n + 1) * sizeof *pre);
    int s, i, j;

#define B(s, i) best[(size_t)(s) * (size_t)(n + 1) + (size_t)(i)]
#define C(s, i) cut[(size_t)(s) * (size_t)(n + 1) + (size_t)(i)]
    pre[0] = 0;
    for (i = 0; i < n; i++)
        pre[i + 1] = pre[i] + cost[i];
    for (i = 0; i <= n; i++) {
        B(1, i) = i > 0 ? pre[i] : HUGE_VAL;
        C(1, i) = 0;
    }
    for (s = 2; s <= p; s++)
        for (i = 0; i <= n; i++) {
            B(s, i) = HUGE_VAL;
            C(s, i) = -1;
            for (j = s - 1; j < i; j++) { /* the last run is units j .. i-1 */
                double v = fmax(B(s - 1, j), pre[i] - pre[j]);
                if (v < B(s, i) * (1 - 1e-12)) {
                    B(s, i) = v;
                    C(s, i) = j;
                }
            }
        }
    for (s = p, i = n; s >= 1; s--) {
        j = C(s, i);
        count[s - 1] = i - j;
        i = j;
    }
#undef B
#undef C
    free(best);
    free(cut);
    free(pre);
}

int
as_pipe_parse_stages(const char *spec, int p, int nunits, int *count, as_err *err)
{
    const char *s = spec;
    long sum = 0;
    int n = 0;

    for (;;) {
        char *end;
        long v;
        if (!isdigit((unsigned char)*s))
            return as_errf(err, AS_EUSAGE, "--stages '%s': expected comma-separated layer counts "
                           "(e.g. 6,6,6,6)", spec);
        v = strtol(s, &end, 10);
        if (v < 1 || v > 1000000)
            return as_errf(err, AS_EUSAGE, "--stages '%s': every stage needs at least one "
                           "layer", spec);
        if (n < p)
            count[n] = (int)v;
        n++;
        sum += v;
        s = end;
        if (*s == '\0')
            break;
        if (*s != ',')
            return as_errf(err, AS_EUSAGE, "--stages '%s': expected comma-separated layer counts "
                           "(e.g. 6,6,6,6)", spec);
        s++;
    }
    if (n != p)
        return as_errf(err, AS_EUSAGE, "--stages '%s' gives %d stages, --pipeline %d", spec, n, p);
    if (sum != nunits)
        return as_errf(err, AS_EUSAGE, "--stages '%s' covers %ld layers, the graph has %d", spec,
                       sum, nunits);
    return AS_OK;
}

void
as_pipe_stages(const as_graph *g, const int *unit, const int *tunit, int p, const int *count,
               int *stage, int *tstage)
{
    int32_t nops = as_graph_nops(g), nt = as_graph_ntensors(g), o, t;
    int nu = 0, s, i;
    int *ustage;

    for (s = 0; s < p; s++)
        nu += count[s];
    ustage = as_xmalloc(((size_t)nu + 1) * sizeof *ustage);
    for (s = 0, i = 0; s < p; s++) {
        int k;
        for (k = 0; k < count[s]; k++)
            ustage[i++] = s;
    }
    for (o = 0; o < nops; o++)
        stage[o] = unit[o] >= 0 && unit[o] < nu ? ustage[unit[o]] : p - 1;
    for (t = 0; t < nt; t++) {
        const as_tensor *gt = as_graph_tensor(g, t);
        if (gt->producer >= 0)
            tstage[t] = stage[gt->producer];
        else
            tstage[t] = tunit[t] >= 0 && tunit[t] < nu ? ustage[tunit[t]] : p - 1;
    }
    free(ustage);
}

int
as_pipe_subgraph(const as_graph *g, const int *stage, int s, const int *batch_dim,
                 as_graph **out, as_err *err)
{
    int32_t nops = as_graph_nops(g), nt = as_graph_ntensors(g), o, t, id;
    int32_t *map = as_xmalloc(((size_t)nt + 1) * sizeof *map);
    int32_t *in = NULL;
    uint8_t *used = as_xcalloc((size_t)nt + 1, 1);
    as_graph *m = as_graph_new(as_graph_name(g));
    const as_train_opts *tr = as_graph_train(g);
    int rc = AS_OK, j;

    if (tr != NULL)
        as_graph_set_train(m, tr);
    for (t = 0; t < nt; t++)
        map[t] = -1;
    for (o = 0; o < nops; o++) {
        const as_op *op = as_graph_op(g, o);
        if (stage[o] == s)
            for (j = 0; j < op->nin; j++)
                used[op->in[j]] = 1;
    }
    /* declared tensors of the graph first, in graph order */
    for (t = 0; t < nt && rc == AS_OK; t++) {
        const as_tensor *gt = as_graph_tensor(g, t);
        if (!used[t] || gt->producer >= 0)
            continue;
        rc = as_graph_add_tensor(m, gt->name, &gt->shape, gt->kind, gt->batch_dim, &map[t], err);
    }
    for (o = 0; o < nops && rc == AS_OK; o++) {
        const as_op *op = as_graph_op(g, o);
        const char *names[AS_MAX_OUTS];
        if (stage[o] != s)
            continue;
        free(in);
        in = as_xmalloc(((size_t)op->nin + 1) * sizeof *in);
        for (j = 0; j < op->nin && rc == AS_OK; j++) {
            t = op->in[j];
            if (map[t] < 0) { /* produced by another stage: received */
                const as_tensor *gt = as_graph_tensor(g, t);
                rc = as_graph_add_tensor(m, gt->name, &gt->shape, AS_TK_INPUT,
                                         batch_dim != NULL ? batch_dim[t] : -1, &map[t], err);
                if (rc == AS_OK)
                    as_graph_tensor_flag(m, map[t], AS_TF_RECV, -1);
            }
            in[j] = map[t];
        }
        for (j = 0; j < op->nout; j++)
            names[j] = as_graph_tensor(g, op->out[j])->name;
        if (rc == AS_OK)
            rc = as_graph_add_op(m, op->def->name, names, op->nout, in, op->nin, op->attr,
                                 op->nattr, &id, err);
        if (rc != AS_OK) {
            as_err_prefix(err, "stage %d: op '%s': ", s, op->name);
            break;
        }
        as_graph_op_meta(m, id, op->flags, op->line);
        for (j = 0; j < op->nout; j++)
            map[op->out[j]] = as_graph_op(m, id)->out[j];
    }
    for (t = 0; t < nt && rc == AS_OK; t++) {
        const as_tensor *gt = as_graph_tensor(g, t);
        if (map[t] < 0)
            continue;
        if (gt->kind == AS_TK_STATE && gt->of >= 0 && map[gt->of] >= 0)
            rc = as_graph_set_state_of(m, map[t], map[gt->of], err);
        if (rc == AS_OK && (gt->kind == AS_TK_PARAM || gt->kind == AS_TK_STATE) &&
            gt->update >= 0 && map[gt->update] >= 0)
            rc = as_graph_set_update(m, map[t], map[gt->update], err);
        if (gt->flags & AS_TF_GRAD)
            as_graph_tensor_flag(m, map[t], AS_TF_GRAD, gt->of >= 0 ? map[gt->of] : -1);
        if (gt->flags & AS_TF_OUTPUT)
            as_graph_mark_output(m, map[t]);
    }
    free(in);
    free(map);
    free(used);
    if (rc != AS_OK) {
        as_graph_free(m);
        return rc;
    }
    *out = m;
    return AS_OK;
}

/* Name -> index maps of every stage plan's tensors and ops (the first of a name wins, as
   as_shard_plan_tensor / _op find it): the merge looks every graph tensor and op up once. */
typedef struct {
    as_strmap *tensors, *ops;
    int p;
} merge_index;

static void
merge_index_init(merge_index *ix, as_shard_plan *const *sp, int p)
{
    size_t i;
    int s;

    ix->p = p;
    ix->tensors = as_xcalloc((size_t)p + 1, sizeof *ix->tensors);
    ix->ops = as_xcalloc((size_t)p + 1, sizeof *ix->ops);
    for (s = 0; s < p; s++) {
        as_strmap_init(&ix->tensors[s]);
        as_strmap_init(&ix->ops[s]);
        for (i = sp[s]->ntensors; i-- > 0;)
            as_strmap_put(&ix->tensors[s], sp[s]->tensors[i].name, (int64_t)i);
        for (i = sp[s]->nops; i-- > 0;)
            as_strmap_put(&ix->ops[s], sp[s]->ops[i].name, (int64_t)i);
    }
}

static void
merge_index_free(merge_index *ix)
{
    int s;

    for (s = 0; s < ix->p; s++) {
        as_strmap_destroy(&ix->tensors[s]);
        as_strmap_destroy(&ix->ops[s]);
    }
    free(ix->tensors);
    free(ix->ops);
}

static const as_plan_tensor *
merge_tensor(const merge_index *ix, as_shard_plan *const *sp, int s, const char *name)
{
    int64_t i;

    return as_strmap_get(&ix->tensors[s], name, (size_t)-1, &i) ? &sp[s]->tensors[i] : NULL;
}

static const as_plan_op *
merge_op(const merge_index *ix, as_shard_plan *const *sp, int s, const char *name)
{
    int64_t i;

    return as_strmap_get(&ix->ops[s], name, (size_t)-1, &i) ? &sp[s]->ops[i] : NULL;
}

int
as_pipe_merge(const as_graph *g, const int *stage, const int *tstage,
              as_shard_plan *const *sp, int p, as_shard_plan **out, as_err *err)
{
    as_shard_plan *pl = NULL;
    merge_index ix;
    int32_t t, o;
    int rc, s;

    AS_CHECK(as_shard_plan_new(as_mesh_str(sp[0]->mesh), &pl, err));
    pl->graph = as_shard_plan_strdup(pl, as_graph_name(g));
    pl->hw = as_shard_plan_strdup(pl, sp[0]->hw);
    pl->hw_file = as_shard_plan_strdup(pl, sp[0]->hw_file != NULL ? sp[0]->hw_file : "");
    pl->cost_model = as_shard_plan_strdup(pl, sp[0]->cost_model);
    pl->solver = as_shard_plan_strdup(pl, sp[0]->solver);
    pl->status = as_shard_plan_strdup(pl, sp[0]->status);
    memcpy(pl->role, sp[0]->role, sizeof pl->role);
    pl->zero = sp[0]->zero;
    pl->bound = -HUGE_VAL;
    pl->peak = -1;
    for (s = 0; s < p; s++)
        if (strcmp(sp[s]->status, pl->status) != 0) /* the weakest: "feasible" over "optimal" */
            pl->status = as_shard_plan_strdup(pl, sp[s]->status);
    merge_index_init(&ix, sp, p);
    for (t = 0; t < as_graph_ntensors(g); t++) {
        const as_tensor *gt = as_graph_tensor(g, t);
        const as_plan_tensor *pt = merge_tensor(&ix, sp, tstage[t], gt->name);
        if (pt == NULL) {
            /* a declared tensor no forward op reads: the first stage plan that has it */
            for (s = 0; s < p && pt == NULL; s++)
                pt = merge_tensor(&ix, sp, s, gt->name);
        }
        if (pt == NULL) {
            rc = as_errf(err, AS_EUSAGE, "pipeline: no stage plans tensor '%s'", gt->name);
            goto fail;
        }
        if ((rc = as_shard_plan_add_tensor(pl, gt->name, gt->kind, &gt->shape, &pt->spec, err)) !=
            AS_OK)
            goto fail;
    }
    for (o = 0; o < as_graph_nops(g); o++) {
        const as_op *op = as_graph_op(g, o);
        const as_plan_op *po = merge_op(&ix, sp, stage[o], op->name);
        if (po == NULL) {
            rc = as_errf(err, AS_EUSAGE, "pipeline: stage %d does not plan op '%s'", stage[o],
                         op->name);
            goto fail;
        }
        as_shard_plan_add_op(pl, op->name, op->def->name, po->strategy, po->index);
    }
    merge_index_free(&ix);
    *out = pl;
    return AS_OK;
fail:
    merge_index_free(&ix);
    as_shard_plan_free(pl);
    return rc;
}

double
as_pipe_estimate(const double *t, int p, int k, double *bubble)
{
    double sum = 0, mx = 0, est;
    int s;

    for (s = 0; s < p; s++) {
        sum += t[s];
        mx = fmax(mx, t[s]);
    }
    est = k > 0 ? sum / k + (double)(k - 1) / k * mx : 0;
    if (bubble != NULL)
        *bubble = est > 0 ? 1 - sum / p / est : 0;
    return est;
}

int
as_pipe_inflight(int p, int k, int s, int gpipe)
{
    return gpipe ? k : k < p - s ? k : p - s;
}

int
as_pipe_stage_problem(const as_graph *g, const int *stage, int s, const int *mbdim,
                      const as_graph_setup *setup, int k, int inflight, as_graph_problem *gp,
                      as_err *err)
{
    as_graph *sub = NULL;
    as_graph_setup st = *setup;

    st.build.microbatches = k;
    st.build.inflight = inflight;
    AS_CHECK(as_pipe_subgraph(g, stage, s, mbdim, &sub, err));
    if (as_graph_problem_init(gp, sub, &st, err) != AS_OK) {
        as_err_prefix(err, "stage %d: ", s);
        return err->code;
    }
    return AS_OK;
}

double
as_pipe_refit_budget(double rb, double peak, double budget)
{
    return rb - (peak - budget + 0.005 * budget);
}
