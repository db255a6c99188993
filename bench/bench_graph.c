/* bench_graph.c -- the graph layer at full scale: build the GPT-3 175B
 * training step (forward, backward, Adam), write it as .asg text in memory,
 * parse it back, and run the igraph checks and statistics.
 *
 * Prints one `key: value` line per figure (times in seconds, memory in
 * bytes) so runs can be compared with diff or awk.  Target on a 2-core
 * machine: everything under 2 s and 500 MB peak RSS.  Exit 1 on any error.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "graph/autodiff.h"
#include "graph/check.h"
#include "graph/io.h"
#include "graph/presets.h"

#define BENCH_PRESET "gpt3-175b"

int
main(void)
{
    const as_preset *p = as_preset_find(BENCH_PRESET);
    as_graph *g = NULL, *g2 = NULL;
    as_graph_stats st = {0};
    as_train_opts o;
    as_err err;
    char *text = NULL;
    size_t len = 0;
    double t0, t_build, t_ad, t_write, t_parse, t_check, t_stats, start;
    int rc = AS_OK;

    as_err_clear(&err);
    as_igraph_setup();
    start = t0 = as_now();
    AS_CHECK_GOTO(rc, as_preset_build(p, NULL, &g, &err), out);
    t_build = as_now() - t0;
    t0 = as_now();
    as_train_opts_init(&o);
    AS_CHECK_GOTO(rc, as_autodiff(g, &o, &err), out);
    t_ad = as_now() - t0;
    t0 = as_now();
    AS_CHECK_GOTO(rc, as_graph_write_asg_buf(g, &text, &len, &err), out);
    t_write = as_now() - t0;
    t0 = as_now();
    AS_CHECK_GOTO(rc, as_graph_parse_asg(BENCH_PRESET ".asg", text, len, &g2, &err), out);
    t_parse = as_now() - t0;
    t0 = as_now();
    AS_CHECK_GOTO(rc, as_graph_check(g2, &err), out);
    t_check = as_now() - t0;
    t0 = as_now();
    AS_CHECK_GOTO(rc, as_graph_stats_compute(g2, &st, &err), out);
    t_stats = as_now() - t0;
    if (as_graph_nops(g2) != as_graph_nops(g) || as_graph_ntensors(g2) != as_graph_ntensors(g)) {
        rc = as_errf(&err, AS_EINTERNAL, "round trip changed the graph: %d/%d ops, %d/%d tensors",
                     (int)as_graph_nops(g), (int)as_graph_nops(g2), (int)as_graph_ntensors(g),
                     (int)as_graph_ntensors(g2));
        goto out;
    }
    printf("preset: %s\n", BENCH_PRESET);
    printf("ops: %d\n", (int)as_graph_nops(g));
    printf("tensors: %d\n", (int)as_graph_ntensors(g));
    printf("params: %lld\n", (long long)as_preset_nparams(g));
    printf("asg_bytes: %zu\n", len);
    printf("graph_bytes: %zu\n", as_graph_mem_bytes(g));
    printf("flops_per_step: %.6g\n", st.flops);
    printf("peak_activation_bytes: %lld\n", (long long)st.peak_activation_bytes);
    printf("time_build_s: %.3f\n", t_build);
    printf("time_autodiff_s: %.3f\n", t_ad);
    printf("time_write_s: %.3f\n", t_write);
    printf("time_parse_s: %.3f\n", t_parse);
    printf("time_check_s: %.3f\n", t_check);
    printf("time_stats_s: %.3f\n", t_stats);
    printf("time_total_s: %.3f\n", as_now() - start);
    printf("peak_rss_bytes: %zu\n", as_peak_rss());
out:
    as_graph_stats_free(&st);
    free(text);
    as_graph_free(g2);
    as_graph_free(g);
    if (rc != AS_OK) {
        fprintf(stderr, "bench_graph: %s\n", err.msg);
        return 1;
    }
    return 0;
}
