/* bench_strategies.c -- strategies, costs and resharding matrices of the
 * gpt3-175b training step (as_preset_build + as_autodiff, adam) on a 2-D
 * mesh (dp=8,tp=8) and a 3-D mesh (4x4x4) of a100-dgx devices: the whole
 * cost graph (as_problem_from_graph), once without and once with liveness
 * points.  Prints ops, nodes, edges, total strategies, matrix entries,
 * distinct sets and matrices, time and peak RSS.  First, per mesh, the
 * strategies, costs and resharding matrices alone (what issue 3 times:
 * every op's and tensor's strategy set and every edge's matrix, shared
 * where identical), then the whole cost graph.  Target: under 2 s per
 * mesh.  Rules come from a fresh memory cache (disk cache off), so rule
 * discovery is included in the first mesh's time.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "formulate/build.h"
#include "graph/autodiff.h"
#include "graph/presets.h"
#include "spmd/rules.h"
#include "spmd/strategy.h"

/* Strategies + costs + resharding matrices of every op, tensor and edge of G. */
static int
bench_strategies(const as_graph *g, const as_cost_model *cm, const char *spec)
{
    const as_strategy_set **set = as_xcalloc((size_t)as_graph_ntensors(g) + 1, sizeof *set);
    int *outidx = as_xcalloc((size_t)as_graph_ntensors(g) + 1, sizeof *outidx);
    as_strat_ctx *ctx = as_strat_ctx_new(cm);
    double t0 = as_now(), nstrat = 0, entries = 0;
    long edges = 0;
    as_strat_stats st;
    as_err err;
    int32_t i;
    int j, rc = AS_OK;

    for (i = 0; i < as_graph_ntensors(g); i++) {
        const as_tensor *t = as_graph_tensor(g, i);
        if (t->producer < 0) {
            set[i] = as_strat_tensor(ctx, &t->shape, t->kind, 1.0);
            nstrat += set[i]->n;
        }
    }
    for (i = 0; i < as_graph_nops(g) && rc == AS_OK; i++) {
        const as_op *op = as_graph_op(g, i);
        const as_strategy_set *os;
        as_opview v;
        as_opview_init(&v, g, op);
        rc = as_strat_op(ctx, &v.info, &os, &err);
        as_opview_free(&v);
        if (rc != AS_OK)
            break;
        nstrat += os->n;
        for (j = 0; j < op->nin; j++) {
            const as_strategy_set *u = set[op->in[j]];
            if (as_strat_reshard_matrix(ctx, u, outidx[op->in[j]], os, j) != NULL) {
                entries += (double)u->n * os->n;
                edges++;
            }
        }
        for (j = 0; j < op->nout; j++) {
            set[op->out[j]] = os;
            outidx[op->out[j]] = j;
        }
    }
    if (rc == AS_OK) {
        as_strat_ctx_stats(ctx, &st);
        printf("mesh %-10s strategies+costs+matrices: ops %d edges %ld strategies %.0f "
               "matrix_entries %.0f sets %ld (reused %ld) matrices %ld (reused %ld) "
               "time %.3f s peak_rss %.1f MiB\n",
               spec, as_graph_nops(g), edges, nstrat, entries, st.sets, st.set_hits,
               st.matrices, st.matrix_hits, as_now() - t0, (double)as_peak_rss() / 1048576.0);
    } else {
        fprintf(stderr, "bench_strategies: %s\n", err.msg);
    }
    as_strat_ctx_free(ctx);
    free(outidx);
    free(set);
    return rc != AS_OK;
}

static int
bench_mesh(const as_graph *g, const char *spec, int liveness)
{
    as_mesh *m = NULL;
    as_cost_model *cm = NULL;
    as_problem *p = NULL;
    as_build_map *map = NULL;
    as_build_opts o;
    as_build_stats st;
    as_hw hw;
    as_err err;
    double t0;
    int rc;

    as_hw_find_builtin("a100-dgx", &hw);
    if (as_mesh_parse(spec, &m, &err) != AS_OK ||
        as_cost_model_new(&as_cost_roofline, &hw, m, NULL, 0, &cm, &err) != AS_OK) {
        fprintf(stderr, "bench_strategies: %s\n", err.msg);
        as_mesh_free(m);
        return 1;
    }
    if (liveness == 0 && bench_strategies(g, cm, spec) != 0) {
        as_cost_model_free(cm);
        as_mesh_free(m);
        return 1;
    }
    as_build_opts_init(&o);
    o.liveness = liveness;
    t0 = as_now();
    rc = as_problem_from_graph(g, m, cm, &o, &p, &map, &err);
    if (rc == AS_OK) {
        as_build_map_stats(map, &st);
        printf("mesh %-10s liveness %d: ops %d nodes %zu edges %zu strategies %.0f "
               "matrix_entries %.0f live_points %zu (dropped %zu) live_entries %zu aliases %zu "
               "sets %ld (reused %ld) matrices %ld (reused %ld) time %.3f s peak_rss %.1f MiB\n",
               spec, liveness, as_graph_nops(g), st.nodes, st.edges, st.strategies,
               st.matrix_entries, st.live_points, st.points_dropped, st.live_entries,
               st.aliases, st.strat.sets, st.strat.set_hits, st.strat.matrices,
               st.strat.matrix_hits, as_now() - t0, (double)as_peak_rss() / 1048576.0);
    } else {
        fprintf(stderr, "bench_strategies: %s\n", err.msg);
    }
    as_build_map_free(map);
    as_problem_free(p);
    as_cost_model_free(cm);
    as_mesh_free(m);
    return rc != AS_OK;
}

int
main(void)
{
    const as_preset *pre = as_preset_find("gpt3-175b");
    as_graph *g = NULL;
    as_train_opts o;
    as_err err;
    double t0 = as_now();
    int fails = 0;

    as_rules_set_cache_path("off");
    as_train_opts_init(&o);
    if (pre == NULL || as_preset_build(pre, NULL, &g, &err) != AS_OK ||
        as_autodiff(g, &o, &err) != AS_OK) {
        fprintf(stderr, "bench_strategies: %s\n", pre == NULL ? "no gpt3-175b" : err.msg);
        as_graph_free(g);
        return 1;
    }
    printf("graph gpt3-175b training step: %d ops, %d tensors, built in %.3f s\n",
           as_graph_nops(g), as_graph_ntensors(g), as_now() - t0);
    fails += bench_mesh(g, "dp=8,tp=8", 0);
    fails += bench_mesh(g, "dp=8,tp=8", 1);
    fails += bench_mesh(g, "4x4x4", 0);
    fails += bench_mesh(g, "4x4x4", 1);
    as_graph_free(g);
    as_rules_reset();
    return fails != 0;
}
