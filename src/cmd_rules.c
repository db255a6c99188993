/* cmd_rules.c -- `autoshard rules`: print the sharding rules of every op
 * type (or one) on its canonical example, discovered through the reference
 * kernels or derived analytically, as text or JSON.
 *
 *   autoshard rules [OP] [--json] [--rules-cache FILE|off]
 */
#include "config.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"
#include "spmd/rules.h"

enum { OPT_JSON = 256, OPT_CACHE };

static int rules_exec(int argc, char **argv);

const struct as_cmd as_cmd_rules = {
    .name = "rules",
    .args = "[OP] [--json] [--rules-cache FILE|off]",
    .summary = "show the sharding rules of each op type (ShardCombine)",
    .help = "For every op type (or OP), print its canonical example and each rule: the\n"
            "input dims split together (in0:1 in1:- = input 0 split on dim 1, input 1\n"
            "whole) and how each output recombines: identity, gather(D), block(D),\n"
            "sum, mean, max, min, halo(D).  Rules are discovered by running the op's\n"
            "reference kernel on shards and comparing with the whole result, or derived\n"
            "by hand for reshape-like ops; an op without rules is replicated.\n"
            "\nOptions:\n"
            "  --json                    print JSON instead\n"
            "  --rules-cache FILE|off    rule cache file (default $AUTOSHARD_RULES_CACHE,\n"
            "                            else $XDG_CACHE_HOME/autoshard/rules.cache)\n",
    .exec = rules_exec,
};

/* Levenshtein distance of A and B (short names only). */
static int
rules_dist(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b), i, j, row[64];

    if (la >= 63 || lb >= 63)
        return 99;
    for (j = 0; j <= lb; j++)
        row[j] = j;
    for (i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = i;
        for (j = 1; j <= lb; j++) {
            int cur = row[j], best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

/* Unknown op NAME: one line with the registered names close to it. */
static int
rules_unknown(const char *name)
{
    int i, n = 0;

    fprintf(stderr, "autoshard: unknown op type '%s'", name);
    for (i = 0; i < as_registry_count(); i++) {
        const char *cand = as_registry_get(i)->name;
        if (rules_dist(name, cand) <= 2 || strncmp(name, cand, strlen(name) > 3 ? 3 : 0) == 0)
            fprintf(stderr, "%s%s", n++ ? ", " : " (did you mean: ", cand);
    }
    fprintf(stderr, "%s\n", n ? ")" : "; see docs/ops.md");
    return AS_EXIT_USAGE;
}

static const char *
rules_source(const as_rule_set *set)
{
    if (set->flags & AS_RULES_REPLICATE)
        return "replicate";
    return (set->flags & AS_RULES_ANALYTIC) ? "analytic" : "discovered";
}

static void
rules_print_text(const as_op_def *def, const char *sig, const as_rule_set *set)
{
    char ibuf[256], cbuf[32];
    int r, k;

    printf("%s  %s  [%s]\n", def->name, sig[0] == ';' ? sig + 2 : sig, rules_source(set));
    if (set->nrules == 0)
        printf("  replicate only: %s\n", set->why != NULL ? set->why : "no dim can be split");
    for (r = 0; r < set->nrules; r++) {
        const as_shard_rule *rule = &set->rules[r];
        printf("  %d: %-22s ->", rule->id, as_rule_in_str(set, rule, ibuf, sizeof ibuf));
        for (k = 0; k < set->nout; k++)
            printf("%s%s", k ? ", " : " ", as_combine_str(&rule->out[k], cbuf, sizeof cbuf));
        if (rule->halo > 0)
            printf("  (overlap %d)", rule->halo);
        printf("\n");
    }
}

static json_t *
rules_json(const as_op_def *def, const char *sig, const as_rule_set *set)
{
    json_t *o = json_object(), *arr = json_array();
    char cbuf[32];
    int r, j;

    json_object_set_new(o, "op", json_string(def->name));
    json_object_set_new(o, "example", json_string(sig));
    json_object_set_new(o, "source", json_string(rules_source(set)));
    json_object_set_new(o, "key", json_string(set->key));
    if (set->nrules == 0)
        json_object_set_new(o, "replicate_reason",
                            json_string(set->why != NULL ? set->why : "no dim can be split"));
    for (r = 0; r < set->nrules; r++) {
        const as_shard_rule *rule = &set->rules[r];
        json_t *ro = json_object(), *in = json_array(), *out = json_array();
        for (j = 0; j < set->nin; j++)
            json_array_append_new(in, json_integer(rule->in_dim[j]));
        for (j = 0; j < set->nout; j++)
            json_array_append_new(out,
                                  json_string(as_combine_str(&rule->out[j], cbuf, sizeof cbuf)));
        json_object_set_new(ro, "id", json_integer(rule->id));
        json_object_set_new(ro, "in_dims", in);
        json_object_set_new(ro, "combine", out);
        if (rule->halo > 0)
            json_object_set_new(ro, "halo", json_integer(rule->halo));
        json_array_append_new(arr, ro);
    }
    json_object_set_new(o, "rules", arr);
    return o;
}

/* Rules of DEF's example: print them, or append them to JSON. */
static int
rules_one(const as_op_def *def, json_t *json)
{
    as_arena *arena = as_arena_new();
    as_opinfo info;
    const as_rule_set *set;
    const char *sig;
    as_err err;
    int rc = AS_EXIT_OK;

    if (as_rules_example(def, arena, &info, &sig, &err) != AS_OK ||
        as_rules_get(&info, &set, &err) != AS_OK) {
        rc = as_cmd_fail(&err);
        goto out;
    }
    if (json != NULL)
        json_array_append_new(json, rules_json(def, sig, set));
    else
        rules_print_text(def, sig, set);
out:
    as_arena_free(arena);
    return rc;
}

static int
rules_exec(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, OPT_JSON},
                                         {"rules-cache", required_argument, NULL, OPT_CACHE},
                                         {NULL, 0, NULL, 0}};
    const as_op_def *only = NULL;
    json_t *json = NULL;
    as_rules_stats st;
    double t0 = as_now();
    int c, i, rc = AS_EXIT_OK;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == OPT_JSON)
            json = json_array();
        else if (c == OPT_CACHE)
            as_rules_set_cache_path(optarg);
        else {
            json_decref(json);
            as_rules_reset();
            return as_cmd_usage(&as_cmd_rules, "unknown or incomplete option '%s'",
                                argv[optind - 1]);
        }
    }
    if (argc - optind > 1) {
        json_decref(json);
        as_rules_reset();
        return as_cmd_usage(&as_cmd_rules, "at most one op type, got %d", argc - optind);
    }
    if (optind < argc && (only = as_registry_find(argv[optind], (size_t)-1)) == NULL) {
        json_decref(json);
        as_rules_reset();
        return rules_unknown(argv[optind]);
    }
    for (i = 0; i < as_registry_count() && rc == AS_EXIT_OK; i++)
        if (only == NULL || as_registry_get(i) == only)
            rc = rules_one(as_registry_get(i), json);
    if (rc == AS_EXIT_OK && json != NULL) {
        char *s = json_dumps(only != NULL ? json_array_get(json, 0) : json,
                             JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (s != NULL)
            printf("%s\n", s);
        free(s);
    }
    json_decref(json);
    as_rules_get_stats(&st);
    as_debug("rules: %ld discovered, %ld analytic, %ld from memory, %ld from disk; "
             "%ld candidates, %ld kernel runs, %.3f s",
             st.discovered, st.analytic, st.mem_hits, st.disk_loaded, st.candidates,
             st.kernel_runs, as_now() - t0);
    as_rules_reset();
    return rc;
}
