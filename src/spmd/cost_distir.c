/* cost_distir.c -- DistIR's simulator cost model, for comparing with DistIR.
 *
 * DistIR (Santhanam et al., "DistIR: An Intermediate Representation for
 * Optimizing Distributed Neural Networks", EuroMLSys 2021) costs ops with a
 * per-device throughput, DRAM bandwidth and kernel overhead, and
 * communication with link bandwidth only (no latency term):
 *   matmul (contractions)  overhead + input bytes / dram_bw + flops / throughput
 *                          (flops = 2mkn, as_op_flops)
 *   other ops              overhead + input bytes / dram_bw + elements / throughput
 *                          (DistIR's elementwise cost: it reads the inputs and
 *                          counts one operation per element of the largest
 *                          input; outputs are not charged.  Ops without inputs
 *                          count their largest output's elements.)
 *   send                   S / bw (charged on both ends by the simulator)
 *   all-reduce             2(n-1)/n * S / bw
 *   all-gather             2(n-1)/n * (S/n) / bw: DistIR charges an all-gather
 *                          like an all-reduce of its mean input size, which is
 *                          one shard (S/n) of the gathered S
 *   reduce-scatter         (n-1)/n * S / bw  (not in DistIR; ring lower bound)
 *   all-to-all             (n-1)/n * S / bw  (not in DistIR; ring lower bound)
 * The parameters default to the profile's distir.* fields and can be set
 * with throughput=, dram_bandwidth=, overhead=, link_bandwidth=,
 * inter_link_bandwidth=.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cost.h"

#define COST_NAME "distir"
#define COST_DESC "DistIR's model: overhead + input bytes/dram_bw + work/throughput, no latency"

struct as_cost_data {
    double throughput;     /**< FLOP/s, "throughput" */
    double dram_bandwidth; /**< bytes/s, "dram_bandwidth" */
    double overhead;       /**< seconds per kernel, "overhead" */
    double link_bw;        /**< bytes/s intra-node, "link_bandwidth" */
    double inter_link_bw;  /**< bytes/s inter-node, "inter_link_bandwidth" */
};

static AS_DECL_COST_NEW(distir_new)
{
    struct as_cost_data *d = as_xcalloc(1, sizeof *d);

    (void)mesh;
    (void)err;
    d->throughput = hw->distir_throughput;
    d->dram_bandwidth = hw->distir_dram_bandwidth;
    d->overhead = hw->distir_overhead;
    d->link_bw = hw->distir_link_bandwidth;
    d->inter_link_bw = hw->distir_inter_link_bandwidth;
    *data = d;
    return AS_OK;
}

static AS_DECL_COST_PARAM(distir_param)
{
    if (strcmp(key, "throughput") == 0)
        return as_cost_parse_double(key, value, 1, &data->throughput, err);
    if (strcmp(key, "dram_bandwidth") == 0)
        return as_cost_parse_double(key, value, 1, &data->dram_bandwidth, err);
    if (strcmp(key, "overhead") == 0)
        return as_cost_parse_double(key, value, 0, &data->overhead, err);
    if (strcmp(key, "link_bandwidth") == 0)
        return as_cost_parse_double(key, value, 1, &data->link_bw, err);
    if (strcmp(key, "inter_link_bandwidth") == 0)
        return as_cost_parse_double(key, value, 1, &data->inter_link_bw, err);
    return as_errf(err, AS_EUSAGE,
                   "unknown parameter '%s' (known: throughput, dram_bandwidth, overhead, "
                   "link_bandwidth, inter_link_bandwidth)",
                   key);
}

static AS_DECL_COST_COMPUTE(distir_compute)
{
    double in_bytes = 0, elems = 0, n;
    int i;

    for (i = 0; i < info->nin; i++) {
        in_bytes += (double)as_shape_bytes(&info->in[i]);
        if ((n = (double)as_shape_numel(&info->in[i])) > elems)
            elems = n;
    }
    if (as_cost_is_contraction(info))
        return data->overhead + in_bytes / data->dram_bandwidth +
               as_op_flops(info) / data->throughput;
    for (i = 0; info->nin == 0 && info->out != NULL && i < info->nout; i++)
        if ((n = (double)as_shape_numel(&info->out[i])) > elems)
            elems = n;
    return data->overhead + in_bytes / data->dram_bandwidth + elems / data->throughput;
}

static AS_DECL_COST_COLL(distir_collective)
{
    double bw = g->link == AS_LINK_INTER ? data->inter_link_bw : data->link_bw;
    double n = g->n;

    switch (kind) {
    case AS_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n * bytes / bw;
    case AS_COLL_ALL_GATHER:
        return 2.0 * (n - 1) / n * (bytes / n) / bw;
    case AS_COLL_REDUCE_SCATTER:
    case AS_COLL_ALL_TO_ALL:
        return (n - 1) / n * bytes / bw;
    case AS_COLL_SEND:
    default:
        return bytes / bw;
    }
}

const as_cost_ops as_cost_distir = {
    .name = COST_NAME,
    .desc = COST_DESC,
    .params = "throughput= dram_bandwidth= overhead= link_bandwidth= inter_link_bandwidth=",
    .new_data = distir_new,
    .free_data = NULL,
    .set_param = distir_param,
    .compute = distir_compute,
    .collective = distir_collective,
    .memory = NULL,
    .replicated_penalty = NULL,
};
