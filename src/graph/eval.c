/* eval.c -- the reference interpreter: runs a graph's ops in program order
 * with the registry's double-precision kernels.  Used by the gradient
 * checks and by tests that compare a transformed graph with the original;
 * meant for small tensors only.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "graph_internal.h"

int
as_graph_eval(const as_graph *g, double **values, as_err *err)
{
    double *outv[AS_MAX_OUTS];
    const double **inv;
    as_opview v;
    size_t i;
    int j;

    for (i = 0; i < g->ops.n; i++) {
        const as_op *op = &g->ops.v[i];
        if (op->def->kernel == NULL)
            return as_errf(err, AS_EUSAGE, "cannot evaluate '%s': op type '%s' has no kernel",
                           op->name, op->def->name);
        for (j = 0; j < op->nin; j++)
            if (values[op->in[j]] == NULL)
                return as_errf(err, AS_EINTERNAL, "eval: '%s' reads '%s', which has no value",
                               op->name, g->tensors.v[op->in[j]].name);
        inv = as_xmalloc((size_t)(op->nin + 1) * sizeof *inv);
        for (j = 0; j < op->nin; j++)
            inv[j] = values[op->in[j]];
        for (j = 0; j < op->nout; j++) {
            int64_t n = as_shape_numel(&g->tensors.v[op->out[j]].shape);
            free(values[op->out[j]]);
            values[op->out[j]] = as_xcalloc((size_t)(n ? n : 1), sizeof(double));
            outv[j] = values[op->out[j]];
        }
        as_opview_init(&v, g, op);
        op->def->kernel(&v.info, inv, outv);
        as_opview_free(&v);
        free(inv);
    }
    return AS_OK;
}

/* The valid integer range of declared tensor T, from the first op reading it. */
static void
eval_int_range(const as_graph *g, int32_t t, int64_t *lo, int64_t *hi)
{
    as_opview v;
    size_t i;
    int j;

    *lo = 0;
    *hi = 7;
    if (g->tensors.v[t].shape.dtype == AS_DT_PRED) {
        *hi = 1;
        return;
    }
    for (i = 0; i < g->ops.n; i++) {
        const as_op *op = &g->ops.v[i];
        for (j = 0; j < op->nin; j++) {
            if (op->in[j] != t || op->def->irange == NULL)
                continue;
            as_opview_init(&v, g, op);
            op->def->irange(&v.info, j, lo, hi);
            as_opview_free(&v);
            return;
        }
    }
}

void
as_graph_random_inputs(const as_graph *g, as_rng *rng, double **values)
{
    size_t i;
    int64_t k, n, lo, hi;

    for (i = 0; i < g->tensors.n; i++) {
        const as_tensor *t = &g->tensors.v[i];
        if (t->kind == AS_TK_ACT)
            continue;
        n = as_shape_numel(&t->shape);
        free(values[i]);
        values[i] = as_xmalloc((size_t)(n ? n : 1) * sizeof(double));
        if (as_dtype_is_float(t->shape.dtype)) {
            for (k = 0; k < n; k++)
                values[i][k] = 2.0 * as_rng_uniform(rng) - 1.0;
        } else {
            eval_int_range(g, t->id, &lo, &hi);
            for (k = 0; k < n; k++)
                values[i][k] = (double)as_rng_range(rng, lo, hi);
        }
    }
}
