/* ops_util.c -- helpers shared by the op family files: axes, broadcasting,
 * strides, index iteration, dtype checks and default costs.
 */
#include "config.h"

#include <stdarg.h>
#include <string.h>

#include "ops_internal.h"

int
as_graph_i_axis(int64_t axis, int rank, int *out)
{
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return 0;
    *out = (int)axis;
    return 1;
}

int
as_graph_i_broadcast(const char *opname, const as_shape *a, const as_shape *b, as_shape *out,
                     as_err *err)
{
    int r = a->rank > b->rank ? a->rank : b->rank, i;

    out->dtype = a->dtype;
    out->rank = r;
    for (i = 0; i < r; i++) {
        int ia = a->rank - r + i, ib = b->rank - r + i;
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[128], sb[128];
            return as_errf(err, AS_EPARSE, "%s: cannot broadcast %s with %s", opname,
                           as_shape_str(a, sa, sizeof sa), as_shape_str(b, sb, sizeof sb));
        }
        out->dim[i] = da == 1 ? db : da;
    }
    return AS_OK;
}

void
as_graph_i_strides(const as_shape *s, int64_t *strides)
{
    int64_t st = 1;
    int i;

    for (i = s->rank - 1; i >= 0; i--) {
        strides[i] = st;
        st *= s->dim[i];
    }
}

void
as_graph_i_bcast_strides(const as_shape *s, const as_shape *out, int64_t *strides)
{
    int64_t own[AS_MAX_RANK];
    int i;

    as_graph_i_strides(s, own);
    for (i = 0; i < out->rank; i++) {
        int is = s->rank - out->rank + i;
        strides[i] = (is >= 0 && s->dim[is] != 1) ? own[is] : 0;
    }
}

int
as_graph_i_next(int64_t *idx, const as_shape *shape)
{
    int i;

    for (i = shape->rank - 1; i >= 0; i--) {
        if (++idx[i] < shape->dim[i])
            return 1;
        idx[i] = 0;
    }
    return 0;
}

int
as_graph_i_shape_err(as_err *err, const as_opinfo *info, const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return as_errf(err, AS_EPARSE, "%s: %s", info->def->name, msg);
}

int
as_graph_i_need_float(const as_opinfo *info, int j, as_err *err)
{
    char s[128];

    if (!as_dtype_is_float(info->in[j].dtype))
        return as_graph_i_shape_err(err, info, "input %d must be floating point, got %s", j,
                                    as_shape_str(&info->in[j], s, sizeof s));
    return AS_OK;
}

int
as_graph_i_need_int(const as_opinfo *info, int j, as_err *err)
{
    char s[128];

    if (as_dtype_is_float(info->in[j].dtype))
        return as_graph_i_shape_err(err, info, "input %d must be integer, got %s", j,
                                    as_shape_str(&info->in[j], s, sizeof s));
    return AS_OK;
}

int
as_graph_i_same_dtype(const as_opinfo *info, int i, int j, as_err *err)
{
    if (info->in[i].dtype != info->in[j].dtype)
        return as_graph_i_shape_err(err, info, "inputs %d and %d differ in type (%s vs %s)", i, j,
                                    as_dtype_name(info->in[i].dtype),
                                    as_dtype_name(info->in[j].dtype));
    return AS_OK;
}

double
as_graph_i_flops_per_out(const as_opinfo *info, double k)
{
    return info->nout > 0 && info->out != NULL ? k * (double)as_shape_numel(&info->out[0]) : 0.0;
}

double
as_graph_i_bytes_default(const as_opinfo *info)
{
    double b = 0.0;
    int i;

    for (i = 0; i < info->nin; i++)
        b += (double)as_shape_bytes(&info->in[i]);
    if (info->out != NULL)
        for (i = 0; i < info->nout; i++)
            b += (double)as_shape_bytes(&info->out[i]);
    return b;
}
