/* ops_optim.c -- op family 'optim': the parameter updates autodiff appends
 * after the backward pass (SGD, momentum, Adam), docs/ops.md "optim".
 *
 * Every op here is elementwise over tensors of exactly one shape (the
 * parameter's), so the planner may shard it like its first operand
 * (AS_OPF_FOLLOW) and must give a parameter, its state and its update one
 * sharding.  They are not differentiable: nothing flows back through an
 * optimizer step.
 */
#include "config.h"

#include <math.h>

#include "ops_internal.h"

#define OPT_FLAGS (AS_OPF_OPTIMIZER | AS_OPF_ELEMENTWISE | AS_OPF_FOLLOW)

/* Check a coefficient attribute KEY lies in [0, 1). */
static int
opt_check_beta(const as_opinfo *info, const char *key, as_err *err)
{
    double b = OPI_FLOAT(info, key, 0.0);

    if (!(b >= 0.0 && b < 1.0))
        return as_graph_i_shape_err(err, info, "%s must be in [0, 1), got %g", key, b);
    return AS_OK;
}

/* All inputs are float tensors of the first input's shape; the output too. */
static int
opt_infer(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    char s0[128], sj[128];
    int j;

    AS_CHECK(as_graph_i_need_float(info, 0, err));
    for (j = 1; j < info->nin; j++)
        if (!as_shape_equal(&info->in[0], &info->in[j]))
            return as_graph_i_shape_err(err, info,
                                        "input %d must have the shape of input 0: %s vs %s", j,
                                        as_shape_str(&info->in[j], sj, sizeof sj),
                                        as_shape_str(&info->in[0], s0, sizeof s0));
    if (as_attr_find(info->attr, info->nattr, "beta1") != NULL)
        AS_CHECK(opt_check_beta(info, "beta1", err));
    if (as_attr_find(info->attr, info->nattr, "beta2") != NULL)
        AS_CHECK(opt_check_beta(info, "beta2", err));
    if (as_attr_find(info->attr, info->nattr, "mu") != NULL)
        AS_CHECK(opt_check_beta(info, "mu", err));
    if (OPI_INT(info, "step", 1) < 1)
        return as_graph_i_shape_err(err, info, "step must be >= 1, got %lld",
                                    (long long)OPI_INT(info, "step", 1));
    if (OPI_FLOAT(info, "eps", 0.0) < 0.0)
        return as_graph_i_shape_err(err, info, "eps must be >= 0");
    out[0] = info->in[0];
    *nout = 1;
    return AS_OK;
}

/*
 * Mixed precision: inputs of one shape but possibly different float types
 * (an fp32 accumulator or master weight next to a 16-bit gradient or
 * parameter); the output has input 0's type.
 */
static int
opt_infer_mixed(const as_opinfo *info, as_shape *out, int *nout, as_err *err)
{
    char s0[128], s1[128];
    as_shape b = info->in[1];

    AS_CHECK(as_graph_i_need_float(info, 0, err));
    AS_CHECK(as_graph_i_need_float(info, 1, err));
    b.dtype = info->in[0].dtype;
    if (!as_shape_equal(&info->in[0], &b))
        return as_graph_i_shape_err(err, info, "input 1 must have the dims of input 0: %s vs %s",
                                    as_shape_str(&info->in[1], s1, sizeof s1),
                                    as_shape_str(&info->in[0], s0, sizeof s0));
    out[0] = info->in[0];
    *nout = 1;
    return AS_OK;
}

/* acc + g (fp32 gradient accumulation of a 16-bit gradient). */
static void
grad_accum_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t n = as_shape_numel(&info->in[0]), i;

    for (i = 0; i < n; i++)
        out[0][i] = in[0][i] + in[1][i];
}

/* The master weight rounded to the parameter's type (the kernels compute in doubles). */
static void
master_copy_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    int64_t n = as_shape_numel(&info->in[0]), i;

    for (i = 0; i < n; i++)
        out[0][i] = in[1][i];
}

/* One operation per element. */
static double
flops_1(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 1.0);
}

/* p − lr·g (also momentum_update: p − lr·buf′). */
static void
sgd_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    double lr = OPI_FLOAT(info, "lr", 1e-3);
    int64_t n = as_shape_numel(&info->in[0]), i;

    for (i = 0; i < n; i++)
        out[0][i] = in[0][i] - lr * in[1][i];
}

/* mu·buf + g. */
static void
momentum_buf_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    double mu = OPI_FLOAT(info, "mu", 0.9);
    int64_t n = as_shape_numel(&info->in[0]), i;

    for (i = 0; i < n; i++)
        out[0][i] = mu * in[0][i] + in[1][i];
}

/* beta1·m + (1 − beta1)·g. */
static void
adam_m_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    double b1 = OPI_FLOAT(info, "beta1", 0.9);
    int64_t n = as_shape_numel(&info->in[0]), i;

    for (i = 0; i < n; i++)
        out[0][i] = b1 * in[0][i] + (1.0 - b1) * in[1][i];
}

/* beta2·v + (1 − beta2)·g². */
static void
adam_v_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    double b2 = OPI_FLOAT(info, "beta2", 0.999);
    int64_t n = as_shape_numel(&info->in[0]), i;

    for (i = 0; i < n; i++)
        out[0][i] = b2 * in[0][i] + (1.0 - b2) * in[1][i] * in[1][i];
}

/*
 * p − lr·m̂/(√v̂ + eps) with m̂ = m′/(1 − beta1^step), v̂ = v′/(1 − beta2^step)
 * (Kingma & Ba 2015, Algorithm 1).
 */
static void
adam_update_kernel(const as_opinfo *info, const double *const *in, double *const *out)
{
    double lr = OPI_FLOAT(info, "lr", 1e-3), eps = OPI_FLOAT(info, "eps", 1e-8);
    double step = (double)OPI_INT(info, "step", 1);
    double c1 = 1.0 - pow(OPI_FLOAT(info, "beta1", 0.9), step);
    double c2 = 1.0 - pow(OPI_FLOAT(info, "beta2", 0.999), step);
    int64_t n = as_shape_numel(&info->in[0]), i;

    for (i = 0; i < n; i++)
        out[0][i] = in[0][i] - lr * (in[1][i] / c1) / (sqrt(in[2][i] / c2) + eps);
}

/* Multiply and subtract (or add): 2 per element. */
static double
flops_2(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 2.0);
}

/* Two scales and an add: 3 per element. */
static double
flops_3(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 3.0);
}

/* Square, two scales and an add: 4 per element. */
static double
flops_4(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 4.0);
}

/*
 * Two bias corrections (2), sqrt (~4: it takes several FMA slots on GPUs),
 * add eps (1), divide (1), scale by lr (1), subtract (1): ~10 per element.
 */
static double
flops_10(const as_opinfo *info)
{
    return as_graph_i_flops_per_out(info, 10.0);
}

const as_op_def as_ops_optim[] = {
    {"sgd_update", 2, 2, OPT_FLAGS, 0, "lr:f=1e-3", "p - lr*g", opt_infer, flops_2, NULL,
     sgd_kernel, NULL, NULL},
    {"momentum_buf", 2, 2, OPT_FLAGS, 0, "mu:f=0.9", "mu*buf + g", opt_infer, flops_2, NULL,
     momentum_buf_kernel, NULL, NULL},
    {"momentum_update", 2, 2, OPT_FLAGS, 0, "lr:f=1e-3", "p - lr*buf'", opt_infer, flops_2, NULL,
     sgd_kernel, NULL, NULL},
    {"adam_m", 2, 2, OPT_FLAGS, 0, "beta1:f=0.9", "beta1*m + (1-beta1)*g", opt_infer, flops_3,
     NULL, adam_m_kernel, NULL, NULL},
    {"adam_v", 2, 2, OPT_FLAGS, 0, "beta2:f=0.999", "beta2*v + (1-beta2)*g^2", opt_infer, flops_4,
     NULL, adam_v_kernel, NULL, NULL},
    {"adam_update", 3, 3, OPT_FLAGS, 0,
     "lr:f=1e-3 beta1:f=0.9 beta2:f=0.999 eps:f=1e-8 step:i=1",
     "p - lr*mhat/(sqrt(vhat)+eps), bias-corrected at step", opt_infer, flops_10, NULL,
     adam_update_kernel, NULL, NULL},
    {"grad_accum", 2, 2, OPT_FLAGS, 0, "", "acc + g in acc's type (fp32 gradient accumulation)",
     opt_infer_mixed, flops_1, NULL, grad_accum_kernel, NULL, NULL},
    {"master_copy", 2, 2, OPT_FLAGS, 0, "", "master weight (input 1) in p's type (input 0)",
     opt_infer_mixed, flops_1, NULL, master_copy_kernel, NULL, NULL},
};
const int as_ops_optim_count = (int)(sizeof as_ops_optim / sizeof as_ops_optim[0]);
