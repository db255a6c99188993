/* cost_roofline.c -- the default cost model: roofline compute, ring collectives.
 *
 * compute = max(flops / peak[dtype], bytes / hbm_bw) + kernel_overhead on the
 * op's local shapes; collectives follow the ring algorithm on the link
 * class of the group (intra- or inter-node bandwidth and per-step latency):
 *   all-reduce      2(n-1)/n * S / bw + 2(n-1) * lat
 *   all-gather      (n-1)/n * S / bw + (n-1) * lat      (S = full size)
 *   reduce-scatter  (n-1)/n * S / bw + (n-1) * lat      (S = full size)
 *   all-to-all      (n-1)/n * S / bw + (n-1) * lat      (S = per-device size)
 *   send            S / bw + lat
 * (DESIGN.md "Cost models"; the ring all-reduce bound is DistSim's 2(N-1)/N S.)
 * Parameter tf32=1 costs f32 contractions at the TF32 tensor-core rate (JAX's
 * default on Ampere and later) instead of the CUDA-core f32 rate (PyTorch's).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cost.h"

#define COST_NAME "roofline"
#define COST_DESC "roofline compute (max of FLOPs and bytes) + ring collectives with latency"

struct as_cost_data {
    const as_hw *hw; /**< the model's copy of the profile */
    int tf32;        /**< 1: f32 contractions at the TF32 rate, "tf32" */
};

static AS_DECL_COST_NEW(roofline_new)
{
    struct as_cost_data *d = as_xcalloc(1, sizeof *d);

    (void)mesh;
    (void)err;
    d->hw = hw;
    *data = d;
    return AS_OK;
}

static AS_DECL_COST_PARAM(roofline_param)
{
    double v;

    if (strcmp(key, "tf32") == 0) {
        AS_CHECK(as_cost_parse_double(key, value, 0, &v, err));
        if (v != 0 && v != 1)
            return as_errf(err, AS_EUSAGE, "'tf32' must be 0 or 1 (got %s)", value);
        data->tf32 = (int)v;
        return AS_OK;
    }
    return as_errf(err, AS_EUSAGE, "unknown parameter '%s' (known: tf32)", key);
}

static AS_DECL_COST_COMPUTE(roofline_compute)
{
    const as_hw *hw = data->hw;
    as_dtype t = as_cost_op_dtype(info);
    double peak = as_hw_peak_flops(hw, t);
    double tf, tm;

    if (data->tf32 && t == AS_DT_F32 && hw->peak_flops_tf32 > 0 && as_cost_is_contraction(info))
        peak = hw->peak_flops_tf32;
    tf = as_op_flops(info) / peak;
    tm = as_op_bytes(info) / hw->hbm_bandwidth;
    return (tf > tm ? tf : tm) + hw->kernel_overhead;
}

static AS_DECL_COST_COLL(roofline_collective)
{
    int inter = g->link == AS_LINK_INTER;
    double bw = as_hw_link_bandwidth(data->hw, inter);
    double lat = as_hw_link_latency(data->hw, inter);
    double n = g->n;

    switch (kind) {
    case AS_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n * bytes / bw + 2.0 * (n - 1) * lat;
    case AS_COLL_ALL_GATHER:
    case AS_COLL_REDUCE_SCATTER:
    case AS_COLL_ALL_TO_ALL:
        return (n - 1) / n * bytes / bw + (n - 1) * lat;
    case AS_COLL_SEND:
    default:
        return bytes / bw + lat;
    }
}

const as_cost_ops as_cost_roofline = {
    .name = COST_NAME,
    .desc = COST_DESC,
    .params = "tf32=0|1",
    .new_data = roofline_new,
    .free_data = NULL,
    .set_param = roofline_param,
    .compute = roofline_compute,
    .collective = roofline_collective,
    .memory = NULL,
    .replicated_penalty = NULL,
};
