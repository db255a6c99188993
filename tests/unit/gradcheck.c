/* gradcheck.c -- test support: finite-difference checks of gradient rules
 * and direct kernel runs (see gradcheck.h).
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "tap.h"

as_shape
mkshape(as_dtype t, int rank, ...)
{
    as_shape s;
    va_list ap;
    int i;

    memset(&s, 0, sizeof s);
    s.dtype = t;
    s.rank = rank;
    va_start(ap, rank);
    for (i = 0; i < rank; i++)
        s.dim[i] = va_arg(ap, int);
    va_end(ap);
    return s;
}

int
run_kernel(const char *optype, const as_shape *shapes, int nin, const double *const *in,
           const as_attr *attr, int nattr, double *out, as_shape *outshape, as_err *err)
{
    const as_op_def *def = as_registry_find(optype, (size_t)-1);
    as_arena *arena = as_arena_new();
    as_shape outs[AS_MAX_OUTS];
    double *outv[AS_MAX_OUTS];
    as_attr *bound = NULL;
    as_opinfo info;
    int nbound = 0, nout = 0, k, rc;

    if (def == NULL) {
        as_arena_free(arena);
        return as_errf(err, AS_EPARSE, "unknown op type '%s'", optype);
    }
    rc = as_registry_bind_attrs(def, attr, nattr, arena, &bound, &nbound, err);
    if (rc == AS_OK)
        rc = as_op_infer(def, shapes, nin, bound, nbound, outs, &nout, err);
    if (rc == AS_OK && def->kernel == NULL)
        rc = as_errf(err, AS_EUSAGE, "'%s' has no kernel", optype);
    if (rc != AS_OK) {
        as_arena_free(arena);
        return rc;
    }
    outv[0] = out;
    for (k = 1; k < nout; k++)
        outv[k] = as_xcalloc((size_t)as_shape_numel(&outs[k]) + 1, sizeof(double));
    info.def = def;
    info.nin = nin;
    info.in = shapes;
    info.nout = nout;
    info.out = outs;
    info.nattr = nbound;
    info.attr = bound;
    def->kernel(&info, in, outv);
    for (k = 1; k < nout; k++)
        free(outv[k]);
    if (outshape != NULL && nout > 0)
        *outshape = outs[0];
    as_arena_free(arena);
    return AS_OK;
}

/* sum_k r_k . y_k over the float outputs of the op under test. */
static double
gc_objective(const as_graph *g, double **vals, const int32_t *ys, const int32_t *rs, int ny)
{
    double f = 0.0;
    int k;
    int64_t i, n;

    for (k = 0; k < ny; k++) {
        n = as_shape_numel(&as_graph_tensor(g, ys[k])->shape);
        for (i = 0; i < n; i++)
            f += vals[rs[k]][i] * vals[ys[k]][i];
    }
    return f;
}

double
gradcheck(const char *optype, const as_shape *in, int nin, const as_attr *attr, int nattr,
          unsigned positive_mask, uint64_t seed)
{
    as_graph *g = as_graph_new("gradcheck");
    int32_t xs[16], ys[AS_MAX_OUTS], rs[AS_MAX_OUTS], *grad_of = NULL, op_id;
    double **vals = NULL, *saved[16] = {NULL}, worst = 0.0;
    const as_op *op;
    int ny = 0, j, k, nt;
    as_err err;
    as_rng rng;
    char name[32];

    as_err_clear(&err);
    as_rng_seed(&rng, seed);
    if (nin > 16)
        goto fail;
    for (j = 0; j < nin; j++) {
        snprintf(name, sizeof name, "x%d", j);
        if (as_graph_add_tensor(g, name, &in[j],
                                as_dtype_is_float(in[j].dtype) ? AS_TK_PARAM : AS_TK_INPUT, -1,
                                &xs[j], &err) != AS_OK)
            goto fail;
    }
    if (as_graph_add_op(g, optype, NULL, 0, xs, nin, attr, nattr, &op_id, &err) != AS_OK)
        goto fail;
    op = as_graph_op(g, op_id);
    for (k = 0; k < op->nout; k++) {
        as_shape s = as_graph_tensor(g, op->out[k])->shape;
        if (!as_dtype_is_float(s.dtype))
            continue;
        ys[ny] = op->out[k];
        snprintf(name, sizeof name, "r%d", k);
        if (as_graph_add_tensor(g, name, &s, AS_TK_CONST, -1, &rs[ny], &err) != AS_OK)
            goto fail;
        op = as_graph_op(g, op_id);
        ny++;
    }
    nt = as_graph_ntensors(g);
    grad_of = as_xmalloc((size_t)nt * sizeof *grad_of);
    if (as_grad_backward(g, ny, ys, rs, grad_of, &err) != AS_OK)
        goto fail;
    nt = as_graph_ntensors(g);
    vals = as_xcalloc((size_t)nt, sizeof *vals);
    as_graph_random_inputs(g, &rng, vals);
    for (j = 0; j < nin; j++)
        if (positive_mask & (1u << j)) {
            int64_t i, n = as_shape_numel(&in[j]);
            for (i = 0; i < n; i++)
                vals[xs[j]][i] = 1.0 + 0.5 * vals[xs[j]][i];
        }
    if (as_graph_eval(g, vals, &err) != AS_OK)
        goto fail;
    /* Keep every analytic gradient first: re-evaluation overwrites produced tensors. */
    for (j = 0; j < nin; j++) {
        int64_t n = as_shape_numel(&in[j]);
        saved[j] = as_xcalloc((size_t)n + 1, sizeof(double));
        if (as_dtype_is_float(in[j].dtype) && grad_of[xs[j]] >= 0)
            memcpy(saved[j], vals[grad_of[xs[j]]], (size_t)n * sizeof(double));
    }
    for (j = 0; j < nin; j++) {
        int64_t i, n = as_shape_numel(&in[j]);
        double *x = vals[xs[j]];
        if (!as_dtype_is_float(in[j].dtype))
            continue;
        for (i = 0; i < n; i++) {
            const double h = 1e-6, x0 = x[i];
            double fp, fm, fd, e;
            x[i] = x0 + h;
            if (as_graph_eval(g, vals, &err) != AS_OK)
                goto fail;
            fp = gc_objective(g, vals, ys, rs, ny);
            x[i] = x0 - h;
            if (as_graph_eval(g, vals, &err) != AS_OK)
                goto fail;
            fm = gc_objective(g, vals, ys, rs, ny);
            x[i] = x0;
            fd = (fp - fm) / (2 * h);
            e = fabs(fd - saved[j][i]) / (fabs(saved[j][i]) > 1.0 ? fabs(saved[j][i]) : 1.0);
            if (e > worst)
                worst = e;
        }
    }
    goto done;
fail:
    diag("gradcheck %s: %s", optype, err.msg);
    worst = -1.0;
done:
    for (j = 0; j < 16; j++)
        free(saved[j]);
    if (vals != NULL) {
        for (j = 0; j < as_graph_ntensors(g); j++)
            free(vals[j]);
        free(vals);
    }
    free(grad_of);
    as_graph_free(g);
    return worst;
}
