/* ops_core.c -- ops the graph machinery itself needs: `fill`, a constant
 * tensor of one value (autodiff seeds the loss gradient with fill value=1).
 */
#include "config.h"

#include <string.h>

#include "ops_internal.h"

/* Parse a shape attribute with a dtype attribute into *OUT. */
static int
core_shape_attr(const as_opinfo *info, as_shape *out, as_err *err)
{
    const int64_t *v = NULL;
    int n = OPI_INTS(info, "shape", &v), i;
    const char *dt = OPI_STR(info, "dtype", "f32");

    if (n < 0 || n > AS_MAX_RANK)
        return as_graph_i_shape_err(err, info, "shape has %d dims (at most %d)", n, AS_MAX_RANK);
    if (!as_dtype_parse(dt, strlen(dt), &out->dtype))
        return as_graph_i_shape_err(err, info, "unknown dtype '%s'", dt);
    out->rank = n;
    for (i = 0; i < n; i++) {
        if (v[i] < 1)
            return as_graph_i_shape_err(err, info, "shape dim %d is %lld (must be >= 1)", i,
                                        (long long)v[i]);
        out->dim[i] = v[i];
    }
    return AS_OK;
}

static int
fill_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    AS_CHECK(core_shape_attr(info, &out[0], err));
    *nout = 1;
    return AS_OK;
}

static void
fill_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t n = as_shape_numel(&info->out[0]), i;
    double v = OPI_FLOAT(info, "value", 0.0);

    (void)in;
    for (i = 0; i < n; i++)
        out[0][i] = v;
}

const as_op_def as_ops_core[] = {
    {.name = "fill",
     .min_in = 0,
     .max_in = 0,
     .flags = AS_OPF_NOGRAD,
     .attrs = "shape:I value:f=0 dtype:s=f32",
     .doc = "a tensor of the given shape holding one value",
     .infer = fill_infer,
     .kernel = fill_kernel},
};
const int as_ops_core_count = (int)(sizeof as_ops_core / sizeof as_ops_core[0]);
