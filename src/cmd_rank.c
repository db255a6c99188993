/* cmd_rank.c -- `autoshard rank`: simulate several plans of one graph and
 * compare the simulator's order with the solver's (src/sim/rank.c).
 *
 *   autoshard rank GRAPH --plans P1.json P2.json ... | --plans-from DIR
 *                  [--hw H] [--cost-model C] [--set KEY=VALUE]...
 *                  [--pipeline P --microbatches K --schedule S]
 *                  [--no-overlap] [--capacity BYTES] [--json]
 */
#include "config.h"

#include <dirent.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"
#include "cmd_train.h"
#include "graph/io.h"
#include "sim/lower.h"
#include "spmd/rules.h"

enum {
    OPT_PLANS = 256,
    OPT_FROM,
    OPT_HW,
    OPT_COST,
    OPT_SET,
    OPT_PIPELINE,
    OPT_MICRO,
    OPT_SCHED,
    OPT_NO_OVERLAP,
    OPT_CAPACITY,
    OPT_NO_SYM,
    OPT_JSON
};

#define RANK_MAX_PARAMS 16

typedef struct rank_cli {
    const char *graph, *dir;
    AS_VEC(char *) plans; /* owned paths */
    const char *params[RANK_MAX_PARAMS];
    as_lower_opts lo;
    as_sim_opts so;
    int json;
} rank_cli;

static int rank_exec(int argc, char **argv);

const struct as_cmd as_cmd_rank = {
    .name = "rank",
    .args = "GRAPH (--plans P1 P2 ... | --plans-from DIR) [--pipeline P --microbatches K] "
            "[--hw H] [--cost-model C]",
    .summary = "simulate several plans and compare the simulator's ranking with the solver's",
    .help = "Options:\n"
            "  --plans P1 P2 ...    plan files (JSON from `autoshard solve`), up to the next\n"
            "                       option; a file may hold the array of plans that\n"
            "                       `solve --top K -o` writes (named FILE#1, FILE#2, ...)\n"
            "  --plans-from DIR     every *.json file in DIR (sorted by name)\n"
            "  --hw NAME|FILE       hardware profile (default: each plan's)\n"
            "  --cost-model M       roofline or distir (default: each plan's)\n"
            "  --set KEY=VALUE      cost-model parameter (repeatable)\n"
            "  --pipeline P, --microbatches K, --schedule S, --no-symmetry   as for `autoshard\n"
            "                       simulate`\n"
            "  --no-overlap         communication does not overlap computation\n"
            "  --capacity BYTES     memory per device for the fit check (default: the\n"
            "                       profile's usable memory: memory - reserved_memory)\n"
            "  --json               the result as one JSON object on stdout\n"
            "\nPrints the solver's order (objective) and the simulator's (iteration time,\n"
            "plans that fit first) side by side, Spearman's rho and Kendall's tau between\n"
            "them (\"undefined\" when either order is all ties), and how much faster the simulator's best plan is than the solver's.\n",
    .exec = rank_exec,
};

static int
rank_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
rank_dir(rank_cli *c, as_err *err)
{
    DIR *d = opendir(c->dir);
    struct dirent *de;
    size_t n0 = c->plans.n;

    if (d == NULL)
        return as_errf(err, AS_EIO, "%s: cannot open directory", c->dir);
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        char *p;
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        p = as_xmalloc(strlen(c->dir) + len + 2);
        sprintf(p, "%s/%s", c->dir, de->d_name);
        AS_VEC_PUSH(&c->plans, p);
    }
    closedir(d);
    if (c->plans.n == n0)
        return as_errf(err, AS_EUSAGE, "%s: no *.json plan files", c->dir);
    qsort(c->plans.v + n0, c->plans.n - n0, sizeof *c->plans.v, rank_cmp);
    return AS_OK;
}

static int
rank_parse(int argc, char **argv, rank_cli *c)
{
    static const struct option opts[] = {
        {"plans", required_argument, NULL, OPT_PLANS},
        {"plans-from", required_argument, NULL, OPT_FROM},
        {"hw", required_argument, NULL, OPT_HW},
        {"cost-model", required_argument, NULL, OPT_COST},
        {"set", required_argument, NULL, OPT_SET},
        {"pipeline", required_argument, NULL, OPT_PIPELINE},
        {"microbatches", required_argument, NULL, OPT_MICRO},
        {"schedule", required_argument, NULL, OPT_SCHED},
        {"no-overlap", no_argument, NULL, OPT_NO_OVERLAP},
        {"capacity", required_argument, NULL, OPT_CAPACITY},
        {"no-symmetry", no_argument, NULL, OPT_NO_SYM},
        {"json", no_argument, NULL, OPT_JSON},
        {NULL, 0, NULL, 0}};
    char *end;
    int ch;

    opterr = 0;
    /* '-' first: non-options come back as 1, so --plans can take a list */
    while ((ch = getopt_long(argc, argv, "-", opts, NULL)) != -1) {
        switch (ch) {
        case 1:
            if (c->graph == NULL && c->plans.n == 0)
                c->graph = optarg;
            else if (c->plans.n > 0 && c->dir == NULL)
                AS_VEC_PUSH(&c->plans, as_xstrdup(optarg));
            else
                return as_cmd_usage(&as_cmd_rank, "unexpected argument '%s'", optarg);
            break;
        case OPT_PLANS:
            AS_VEC_PUSH(&c->plans, as_xstrdup(optarg));
            break;
        case OPT_FROM:
            c->dir = optarg;
            break;
        case OPT_HW:
            c->lo.hw = c->so.hw = optarg;
            break;
        case OPT_COST:
            c->lo.cost_model = c->so.cost_model = optarg;
            break;
        case OPT_SET:
            if (c->lo.nparams == RANK_MAX_PARAMS)
                return as_cmd_usage(&as_cmd_rank, "too many --set (at most %d)", RANK_MAX_PARAMS);
            c->params[c->lo.nparams++] = optarg;
            break;
        case OPT_PIPELINE:
            if (as_cmd_count_opt(&as_cmd_rank, "pipeline", optarg, &c->lo.pipeline) != AS_EXIT_OK)
                return AS_EXIT_USAGE;
            c->lo.given |= AS_LOWER_GIVEN_PIPELINE;
            break;
        case OPT_MICRO:
            if (as_cmd_count_opt(&as_cmd_rank, "microbatches", optarg, &c->lo.nmicro) != AS_EXIT_OK)
                return AS_EXIT_USAGE;
            c->lo.given |= AS_LOWER_GIVEN_MICRO;
            break;
        case OPT_SCHED:
            if (!as_sim_sched_parse(optarg, &c->lo.sched))
                return as_cmd_usage(&as_cmd_rank, "--schedule must be gpipe or 1f1b, got '%s'",
                                    optarg);
            c->lo.given |= AS_LOWER_GIVEN_SCHED;
            break;
        case OPT_NO_SYM:
            c->lo.no_symmetry = 1;
            break;
        case OPT_JSON:
            c->json = 1;
            break;
        case OPT_NO_OVERLAP:
            c->so.overlap = 0;
            break;
        case OPT_CAPACITY:
            c->so.capacity = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !isfinite(c->so.capacity) || c->so.capacity <= 0)
                return as_cmd_usage(&as_cmd_rank, "--capacity must be a number > 0, got '%s'",
                                    optarg);
            break;
        default:
            return as_cmd_usage(&as_cmd_rank, "unknown or incomplete option '%s'",
                                argv[optind - 1]);
        }
    }
    if (c->graph == NULL)
        return as_cmd_usage(&as_cmd_rank, "GRAPH is required");
    if ((c->plans.n == 0) == (c->dir == NULL))
        return as_cmd_usage(&as_cmd_rank, "give --plans P1 P2 ... or --plans-from DIR");
    c->lo.params = c->so.params = c->params;
    c->so.nparams = c->lo.nparams;
    return AS_EXIT_OK;
}

static int
rank_exec(int argc, char **argv)
{
    as_graph *g = NULL;
    as_shard_plan **plans = NULL;
    char **names = NULL;
    const char **paths = NULL;
    as_rank_result rr;
    size_t np = 0;
    as_err err = {0};
    rank_cli c;
    as_recompute rm = AS_RECOMPUTE_NONE;
    const char *rl = NULL;
    size_t i;
    int rc;

    memset(&c, 0, sizeof c);
    as_lower_opts_init(&c.lo);
    as_sim_opts_init(&c.so);
    if ((rc = rank_parse(argc, argv, &c)) != AS_EXIT_OK)
        goto out;
    rc = c.dir != NULL ? rank_dir(&c, &err) : AS_OK;
    if (rc == AS_OK)
        rc = as_graph_read(c.graph, &g, &err);
    /* each file: one plan, or the array `solve --top K -o` writes */
    for (i = 0; i < c.plans.n && rc == AS_OK; i++) {
        as_shard_plan **pl = NULL;
        const char *base = strrchr(c.plans.v[i], '/') ? strrchr(c.plans.v[i], '/') + 1
                                                      : c.plans.v[i];
        size_t k, j;
        if ((rc = as_shard_plan_read_list(c.plans.v[i], &pl, &k, &err)) != AS_OK)
            break;
        plans = as_xreallocarray(plans, np + k + 1, sizeof *plans);
        names = as_xreallocarray(names, np + k + 1, sizeof *names);
        paths = as_xreallocarray(paths, np + k + 1, sizeof *paths);
        for (j = 0; j < k; j++, np++) {
            plans[np] = pl[j];
            paths[np] = c.plans.v[i];
            names[np] = k > 1 ? as_xasprintf("%s#%zu", base, j + 1) : as_xstrdup(base);
        }
        free(pl);
    }
    for (i = 0; i < np && rc == AS_OK; i++) /* the step `solve --pipeline` recorded */
        rc = as_train_plan_recompute(plans[i], paths[i], i > 0, &rm, &rl, &err);
    if (rc == AS_OK)
        rc = as_train_apply_recompute(rm, rl, &g, &err);
    if (rc == AS_OK)
        rc = as_sim_rank_plans(g, (const as_shard_plan *const *)plans,
                               (const char *const *)names, NULL, np, &c.lo, &c.so,
                               c.json ? NULL : stdout, &rr, &err);
    if (rc == AS_OK) {
        if (c.json) {
            json_t *j = as_rank_json(&rr);
            char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
            if (s == NULL)
                as_oom(0, "rank --json");
            printf("%s\n", s);
            free(s);
            json_decref(j);
        }
        as_rank_result_free(&rr);
    }
    rc = rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
out:
    for (i = 0; i < np; i++) {
        as_shard_plan_free(plans[i]);
        free(names[i]);
    }
    for (i = 0; i < c.plans.n; i++)
        free(c.plans.v[i]);
    free(plans);
    free(names);
    free(paths);
    AS_VEC_FREE(&c.plans);
    as_graph_free(g);
    as_rules_reset();
    return rc;
}
