/* bench_rules.c -- cold rule discovery for the whole registry: every op
 * type's canonical example, no disk cache, a fresh memory cache.  Prints
 * the total time, op types, rules found, candidates and kernel runs, and
 * the slowest op types.  Target: under 1 s for the whole registry.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "spmd/rules.h"

typedef struct bench_op {
    const char *name;
    double secs;
} bench_op;

static int
bench_cmp(const void *a, const void *b)
{
    double x = ((const bench_op *)a)->secs, y = ((const bench_op *)b)->secs;

    return x < y ? 1 : x > y ? -1 : 0;
}

int
main(void)
{
    int n = as_registry_count(), i, nrules = 0, fails = 0;
    bench_op *ops = calloc((size_t)n + 1, sizeof *ops);
    as_rules_stats st;
    double t0, total;

    as_rules_set_cache_path("off");
    t0 = as_now();
    for (i = 0; i < n; i++) {
        const as_op_def *def = as_registry_get(i);
        as_arena *arena = as_arena_new();
        const as_rule_set *set;
        as_opinfo info;
        as_err err;
        double t = as_now();
        if (as_rules_example(def, arena, &info, NULL, &err) != AS_OK ||
            as_rules_get(&info, &set, &err) != AS_OK) {
            fprintf(stderr, "bench_rules: %s\n", err.msg);
            fails++;
        } else {
            nrules += set->nrules;
        }
        ops[i].name = def->name;
        ops[i].secs = as_now() - t;
        as_arena_free(arena);
    }
    total = as_now() - t0;
    as_rules_get_stats(&st);
    printf("rules: cold discovery of %d op types in %.3f s (%s 1 s target): %d rules, "
           "%ld discovered, %ld analytic, %ld candidates, %ld kernel runs\n",
           n, total, total < 1.0 ? "within" : "OVER", nrules, st.discovered, st.analytic,
           st.candidates, st.kernel_runs);
    qsort(ops, (size_t)n, sizeof *ops, bench_cmp);
    for (i = 0; i < n && i < 5; i++)
        printf("  slowest %d: %-22s %.4f s\n", i + 1, ops[i].name, ops[i].secs);
    free(ops);
    as_rules_reset();
    return fails ? 1 : 0;
}
