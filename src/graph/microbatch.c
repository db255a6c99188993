/* microbatch.c -- the graph of one microbatch, for gradient accumulation.
 *
 * `solve --microbatches K` states the ILP on the shapes one microbatch has:
 * every tensor dim that K microbatches divide (as the lowering decides it,
 * sim/lower.c, passed in as MBDIM) shrinks by K.  The graph is rebuilt op
 * by op with the same names and ids, so a plan of the microbatch graph is a
 * plan of the whole one.  Shape-carrying attributes (reshape's `shape`,
 * broadcast's, a gradient's `input_shape`) that equal the whole-batch dims
 * of one of the op's tensors get that tensor's microbatch dims; every
 * output must then infer to its microbatch shape, else the op cannot be
 * split and the call fails (AS_EUSAGE).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* Global shape of T with dim MB divided by K. */
static as_shape
mb_shape(const as_tensor *t, int mb, int k)
{
    as_shape s = t->shape;

    if (mb >= 0 && mb < s.rank)
        s.dim[mb] /= k;
    return s;
}

/* Does int list attribute A equal the dims of S? */
static int
mb_attr_is(const as_attr *a, const as_shape *s)
{
    int i;

    if (a->kind != AS_ATTR_INTS || a->n != s->rank || s->rank == 0)
        return 0;
    for (i = 0; i < a->n; i++)
        if (a->v[i] != s->dim[i])
            return 0;
    return 1;
}

/* Add op O of G to M with its tensors' microbatch shapes. */
static int
mb_op(const as_graph *g, const as_op *op, int k, const int *mbdim, as_graph *m, as_err *err)
{
    const char *names[AS_MAX_OUTS];
    as_attr *at = as_xmalloc(((size_t)op->nattr + 1) * sizeof *at);
    int64_t *dims = as_xmalloc(((size_t)op->nattr + 1) * AS_MAX_RANK * sizeof *dims);
    int32_t id;
    int i, j, rc;

    memcpy(at, op->attr, (size_t)op->nattr * sizeof *at);
    for (i = 0; i < op->nattr; i++) {
        const as_tensor *hit = NULL;
        for (j = 0; j < op->nout + op->nin && hit == NULL; j++) {
            const as_tensor *t = &g->tensors.v[j < op->nout ? op->out[j] : op->in[j - op->nout]];
            if (mbdim[t->id] >= 0 && mb_attr_is(&at[i], &t->shape))
                hit = t;
        }
        if (hit != NULL) {
            as_shape s = mb_shape(hit, mbdim[hit->id], k);
            memcpy(dims + (size_t)i * AS_MAX_RANK, s.dim, (size_t)s.rank * sizeof *dims);
            at[i].v = dims + (size_t)i * AS_MAX_RANK;
        }
    }
    for (j = 0; j < op->nout; j++)
        names[j] = g->tensors.v[op->out[j]].name;
    rc = as_graph_add_op(m, op->def->name, names, op->nout, op->in, op->nin, at, op->nattr, &id,
                         err);
    free(at);
    free(dims);
    if (rc != AS_OK) {
        as_err_prefix(err, "op '%s' (%s) on microbatch shapes: ", op->name, op->def->name);
        return AS_EUSAGE;
    }
    as_graph_op_meta(m, id, op->flags, op->line);
    for (j = 0; j < op->nout; j++) {
        const as_tensor *t = &g->tensors.v[op->out[j]];
        as_shape want = mb_shape(t, mbdim[t->id], k);
        char a[128], b[128];
        if (m->ops.v[id].out[j] != t->id || !as_shape_equal(&m->tensors.v[t->id].shape, &want))
            return as_errf(err, AS_EUSAGE, "op '%s' (%s) cannot be split into %d microbatches: "
                           "'%s' is %s on microbatch shapes, not %s", op->name, op->def->name, k,
                           t->name, as_shape_str(&m->tensors.v[t->id].shape, a, sizeof a),
                           as_shape_str(&want, b, sizeof b));
    }
    return AS_OK;
}

int
as_graph_microbatch(const as_graph *g, int k, const int *mbdim, as_graph **out, as_err *err)
{
    as_graph *m = as_graph_new(g->name);
    size_t t;
    int rc = AS_OK;

    for (t = 0; t < g->tensors.n && rc == AS_OK; t++) {
        const as_tensor *gt = &g->tensors.v[t];
        int32_t id;
        if (gt->producer < 0) {
            as_shape s = mb_shape(gt, mbdim[t], k);
            rc = as_graph_add_tensor(m, gt->name, &s, gt->kind, gt->batch_dim, &id, err);
            if (rc == AS_OK && (size_t)id != t)
                rc = as_errf(err, AS_EINTERNAL, "microbatch graph: tensor ids differ");
        } else if (g->ops.v[gt->producer].out[0] == (int32_t)t) {
            rc = mb_op(g, &g->ops.v[gt->producer], k, mbdim, m, err);
        }
    }
    for (t = 0; t < g->tensors.n && rc == AS_OK; t++) {
        const as_tensor *gt = &g->tensors.v[t];
        m->tensors.v[t].line = gt->line;
        if (gt->kind == AS_TK_STATE && gt->of >= 0)
            rc = as_graph_set_state_of(m, (int32_t)t, gt->of, err);
        if (rc == AS_OK && (gt->kind == AS_TK_PARAM || gt->kind == AS_TK_STATE) && gt->update >= 0)
            rc = as_graph_set_update(m, (int32_t)t, gt->update, err);
        if (gt->flags & AS_TF_GRAD)
            as_graph_tensor_flag(m, (int32_t)t, AS_TF_GRAD, gt->of);
    }
    for (t = 0; t < g->outputs.n; t++)
        as_graph_mark_output(m, g->outputs.v[t]);
    if (rc != AS_OK) {
        as_graph_free(m);
        return rc;
    }
    *out = m;
    return AS_OK;
}
