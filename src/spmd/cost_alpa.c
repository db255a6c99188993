/* cost_alpa.c -- Alpa's alpha-beta model, for comparing with Alpa's objectives.
 *
 * Alpa (Zheng et al., OSDI 2022) costs communication on a logical mesh
 * whose axis k has n_k devices and coefficients alpha_k, beta_k
 * (alpa/shard_parallel/auto_sharding.py, LogicalDeviceMesh):
 *   all-gather(B)      alpha_k + beta_k (n_k-1)/n_k B + 0.1
 *   all-reduce(B)      alpha_k + 2 beta_k (n_k-1)/n_k B + 0.01
 *   reduce-scatter(B)  alpha_k + beta_k (n_k-1)/n_k B + 0.001
 *   all-to-all(B)      alpha_k + beta_k (n_k-1)/n_k^2 B (n_k/2) + 0.001
 * The small constants break ties.  Compute costs 0; a tensor's memory is
 * bytes / number of tiles; a replicated parameter pays
 * round(sum_k all-reduce(1 byte, k)) (auto_sharding.cc: replicated_penalty
 * = std::round(AllReduceCost(1, 0) + AllReduceCost(1, 1))).
 * The strategy layer follows Alpa's defaults through the flags below
 * (strategy.c, reshard.c): no reduce-scatter (prefer_reduce_scatter =
 * false: a partial sum is all-reduced, then sliced), all-to-all of the whole
 * tensor (ReshardingCost passes GetBytes(shape) to AllToAllCost).
 * Defaults follow Alpa's get_logical_mesh(): alpha = (1, 1),
 * beta = (1, 0.1) (axis 0 = across hosts); axes 2 and 3 get alpha 1,
 * beta 0.1.  A group that is not one axis uses the largest alpha and beta
 * (as Alpa's two-axis all-reduce does).  send(B) = alpha_k + beta_k B is our
 * extension: Alpa's intra-op pass has no point-to-point transfer.
 * A contraction (dot) left replicated over an axis is recomputed there:
 * Alpa forbids that by default (allow_recompute_heavy_op = false) and
 * otherwise charges DotCost = all-reduce(lhs + rhs bytes) per axis; we
 * charge the latter (recompute_allreduce, strategy.c), so the ILP stays
 * feasible and a replicated matmul is never free (docs/strategies.md).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"

#define COST_NAME "alpa"
#define COST_DESC "Alpa's alpha-beta model per mesh axis (compute free; tie-break constants)"

struct as_cost_data {
    int naxes;                      /**< mesh axes */
    int size[AS_MESH_MAX_AXES];     /**< devices per axis */
    double alpha[AS_MESH_MAX_AXES]; /**< per-axis latency term, "alpha" */
    double beta[AS_MESH_MAX_AXES];  /**< per-axis inverse bandwidth, "beta" */
};

static AS_DECL_COST_NEW(alpa_new)
{
    struct as_cost_data *d = as_xcalloc(1, sizeof *d);
    int k;

    (void)hw;
    (void)err;
    d->naxes = as_mesh_naxes(mesh);
    for (k = 0; k < d->naxes; k++) {
        d->size[k] = as_mesh_axis_size(mesh, k);
        d->alpha[k] = 1.0;
        d->beta[k] = k == 0 ? 1.0 : 0.1;
    }
    *data = d;
    return AS_OK;
}

static AS_DECL_COST_PARAM(alpa_param)
{
    double v[AS_MESH_MAX_AXES];
    int n, k;

    if (strcmp(key, "alpha") != 0 && strcmp(key, "beta") != 0)
        return as_errf(err, AS_EUSAGE, "unknown parameter '%s' (known: alpha, beta)", key);
    AS_CHECK(as_cost_parse_list(key, value, v, AS_MESH_MAX_AXES, &n, err));
    if (n != data->naxes)
        return as_errf(err, AS_EUSAGE, "'%s' has %d value%s but the mesh has %d ax%s", key, n,
                       n == 1 ? "" : "s", data->naxes, data->naxes == 1 ? "is" : "es");
    for (k = 0; k < n; k++)
        (key[0] == 'a' ? data->alpha : data->beta)[k] = v[k];
    return AS_OK;
}

static AS_DECL_COST_COMPUTE(alpa_compute)
{
    (void)data;
    (void)info;
    return 0.0;
}

/* Alpa's formula for KIND with coefficients A, B over N devices. */
static double
alpa_formula(as_coll kind, double a, double b, double n, double bytes)
{
    switch (kind) {
    case AS_COLL_ALL_GATHER:
        return a + b * (n - 1) / n * bytes + 0.1;
    case AS_COLL_ALL_REDUCE:
        return a + 2 * b * (n - 1) / n * bytes + 0.01;
    case AS_COLL_REDUCE_SCATTER:
        return a + b * (n - 1) / n * bytes + 0.001;
    case AS_COLL_ALL_TO_ALL:
        return a + b * (n - 1) / n / n * bytes * (n / 2.0) + 0.001;
    case AS_COLL_SEND:
    default:
        return a + b * bytes;
    }
}

static AS_DECL_COST_COLL(alpa_collective)
{
    double a = 0, b = 0;
    int k;

    if (g->axis >= 0 && g->axis < data->naxes) {
        a = data->alpha[g->axis];
        b = data->beta[g->axis];
    } else {
        for (k = 0; k < data->naxes; k++) {
            a = fmax(a, data->alpha[k]);
            b = fmax(b, data->beta[k]);
        }
    }
    return alpa_formula(kind, a, b, g->n, bytes);
}

static AS_DECL_COST_MEMORY(alpa_memory)
{
    (void)data;
    (void)local;
    return bytes / (double)ntiles;
}

static AS_DECL_COST_PENALTY(alpa_penalty)
{
    double p = 0;
    int k;

    for (k = 0; k < data->naxes; k++)
        p += alpa_formula(AS_COLL_ALL_REDUCE, data->alpha[k], data->beta[k], data->size[k], 1.0);
    return round(p);
}

const as_cost_ops as_cost_alpa = {
    .name = COST_NAME,
    .desc = COST_DESC,
    .params = "alpha=A0,A1,.. beta=B0,B1,.. (one per mesh axis; default alpha 1, beta 1,0.1)",
    .new_data = alpa_new,
    .free_data = NULL,
    .set_param = alpa_param,
    .compute = alpa_compute,
    .collective = alpa_collective,
    .memory = alpa_memory,
    .replicated_penalty = alpa_penalty,
    .recompute_allreduce = 1,
    .alpa_resharding = 1,
};
