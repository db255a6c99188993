/* cmd_sweep.c -- `autoshard sweep`: options and the graph; the sweep is
 * src/sweep/sweep.c (docs/sweep.md).
 *
 *   autoshard sweep GRAPH|PRESET --devices N [--hw H] [--batch B]
 *                   [--pipeline 1,2,4] [--microbatches 1,2,4] [--accumulate]
 *                   [--recompute none,full] [--solver glpk,beam] [--max-axes A]
 *                   [--tp-max T] [--time-limit S] [-o FILE.jsonl] [--top N]
 *                   [--csv FILE] [--svg FILE] [--plans DIR] [-j N] [-q]
 */
#include "config.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "graph/autodiff.h"
#include "graph/check.h"
#include "graph/io.h"
#include "graph/presets.h"
#include "solve/solver.h"
#include "spmd/cost.h"
#include "spmd/rules.h"
#include "sweep/sweep.h"

enum { OPT_DEV = 256, OPT_HW, OPT_BATCH, OPT_PIPE, OPT_MICRO, OPT_ACC, OPT_RECOMP, OPT_AXES,
       OPT_TPMAX, OPT_TIME, OPT_TOP, OPT_CSV, OPT_LIST, OPT_PLANS, OPT_SVG, OPT_ROLE, OPT_ZERO,
       OPT_COST, OPT_MBSIZE };


static int sweep_exec(int argc, char **argv);

const struct as_cmd as_cmd_sweep = {
    .name = "sweep",
    .args = "GRAPH|PRESET --devices N [--hw H] [--batch B] [--pipeline LIST] "
            "[--microbatches LIST] [-o FILE.jsonl]",
    .summary = "solve and simulate every mesh shape, pipeline degree, microbatch count, "
               "recomputation and solver of a job",
    .help = "GRAPH is a graph file (a training step); PRESET a preset name (`autoshard gen\n"
            "--list`), built as `gen PRESET --batch B --train` does.  Every configuration is\n"
            "solved as `solve GRAPH --pipeline P --microbatches K --mesh M --recompute R\n"
            "--solver S --memory auto` (stages balanced by FLOPs, 1F1B) and simulated; one\n"
            "JSON line per configuration goes to -o as soon as it is done (docs/sweep.md).\n"
            "\nOptions:\n"
            "  --devices N|LIST     devices in all (required); a list (1,2,4,8) sweeps each\n"
            "                       count, its keys prefixed by n=N\n"
            "  --hw NAME|FILE       hardware profile (default a100-dgx)\n"
            "  --cost-model C[,C..] roofline (default), alpa or distir (as solve); a list\n"
            "                       makes it a dimension (keys end \",cost=C\"; the\n"
            "                       simulator times every plan alike)\n"
            "  --batch B|LIST       global batch of a PRESET (default the preset's); a list\n"
            "                       (256,1024) runs one sweep per batch into one -o, keys\n"
            "                       prefixed by b=B, one table each\n"
            "  --pipeline LIST      pipeline degrees P (default every divisor of N up to the\n"
            "                       layer count); each must divide N\n"
            "  --microbatches LIST  microbatch counts K, each dividing the batch (default:\n"
            "                       K = 1 for P = 1, else 2P (P, or B, if 2P does not divide B))\n"
            "  --accumulate         the --microbatches list applies to P = 1 too (gradient\n"
            "                       accumulation); else P = 1 runs K = 1\n"
            "  --microbatch-size LIST  samples b per microbatch and data replica: K =\n"
            "                       batch / D / b for each mesh (D = its data degree, 1\n"
            "                       without data axes), every P (Megatron's b)\n"
            "  --recompute LIST     none (default), full, selective\n"
            "  -s, --solver LIST    glpk (default), cbc, brute, beam, mcts\n"
            "  --max-axes A         mesh axes per stage, 1..3 (default 3): every ordered\n"
            "                       factorisation of N/P into at most A factors >= 2\n"
            "  --tp-max T           no mesh axis larger than T; with --role, no tensor\n"
            "                       or auto axis (data axes unbounded)\n"
            "  --role R1,R2,..      one role per mesh axis (data, tensor, auto; as solve\n"
            "                       --role): every mesh has exactly that many axes, factors\n"
            "                       >= 1 (--role data,tensor on 8: 1x8, 2x4, 4x2, 8x1);\n"
            "                       a mesh with D devices on data axes needs batch / D / K >= 1\n"
            "  --zero Z[,Z...]      ZeRO 0, 1, 2 or 3 over the data axes (as solve\n"
            "                       --zero); a list makes it a dimension (keys end\n"
            "                       \",zero=Z\")\n"
            "  --time-limit S       seconds per configuration (build and solves)\n"
            "  -o FILE.jsonl        append one JSON line per configuration; started again\n"
            "                       with the same command it skips the configurations done\n"
            "  --top N              rows of the final table (default 10)\n"
            "  --csv FILE           every configuration of this sweep as CSV (a batch column:\n"
            "                       with a --batch list, one file for every batch)\n"
            "  --svg FILE           Pareto chart: peak memory per device vs throughput; with a\n"
            "                       --batch list one per batch, FILE-bB.svg (pareto-b256.svg)\n"
            "  --plans DIR          write each configuration's plan to DIR (made if missing);\n"
            "                       its line gives the path\n"
            "  -j, --jobs N         run configurations in N worker processes (default 1);\n"
            "                       the JSONL is the same as with one (in enumeration order)\n"
            "  -q, --quiet          no progress line on stderr\n"
#ifdef HAVE_MPI
            "  (MPI) mpirun -n R autoshard sweep ...: rank 0 deals the configurations to\n"
            "                       ranks 1..R-1 and writes the JSONL --jobs 1 writes\n"
#endif
            "  --list               print the configurations, one a line, and stop\n"
            "\nConfigurations whose memory lower bound exceeds the usable memory are pruned\n"
            "before any solve and counted.  Exit 2 for bad options or a JSONL written by\n"
            "another command line (graph, devices, hw, batch).\n",
    .exec = sweep_exec,
};

/* Comma-separated positive integers into OUT[*N]. */
static int
parse_ints(const char *opt, const char *arg, int *out, int *n)
{
    const char *p = arg;
    char *end;

    *n = 0;
    for (;;) {
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 1 << 30 || (*end != ',' && *end != '\0') ||
            *n == AS_SWEEP_MAX_LIST)
            return as_cmd_usage(&as_cmd_sweep, "%s takes up to %d comma-separated positive "
                                "integers, got '%s'", opt, AS_SWEEP_MAX_LIST, arg);
        out[(*n)++] = (int)v;
        if (*end == '\0')
            return AS_EXIT_OK;
        p = end + 1;
    }
}

static int
parse_words(char *arg, const char **out, int *n, int max)
{
    char *tok, *save = NULL;

    *n = 0;
    for (tok = strtok_r(arg, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (*n == max)
            return 0;
        out[(*n)++] = tok;
    }
    return *n > 0;
}

static int
sweep_opt(as_sweep_opts *o, int opt, int64_t *batch)
{
    const char *w[AS_SWEEP_MAX_LIST];
    int n, i;
    as_err err = {0};

    switch (opt) {
    case OPT_DEV:
        if (parse_ints("--devices", optarg, o->devs, &o->ndevs) != AS_EXIT_OK)
            return AS_EXIT_USAGE;
        for (o->devices = 0, i = 0; i < o->ndevs; i++)
            o->devices = o->devs[i] > o->devices ? o->devs[i] : o->devices;
        if (o->ndevs == 1)
            o->ndevs = 0; /* one count: the keys and header stay as they were */
        return AS_EXIT_OK;
    case OPT_COST: {
        /* Parsed from a copy: argv stays as the user gave it, and the
         * names kept are the models' own (static) names. */
        char buf[256], *q, *save = NULL;
        const as_cost_ops *m;
        if (strlen(optarg) >= sizeof buf) {
            fprintf(stderr, "autoshard: --cost-model: list too long\n");
            return AS_EXIT_USAGE;
        }
        strcpy(buf, optarg);
        o->ncost = 0;
        for (q = strtok_r(buf, ",", &save); q != NULL; q = strtok_r(NULL, ",", &save)) {
            if ((m = as_cost_model_find(q, &err)) == NULL) {
                fprintf(stderr, "autoshard: --cost-model: %s\n", err.msg);
                return AS_EXIT_USAGE;
            }
            for (i = 0; i < o->ncost; i++)
                if (strcmp(o->costs[i], m->name) == 0) {
                    fprintf(stderr, "autoshard: --cost-model lists %s twice\n", q);
                    return AS_EXIT_USAGE;
                }
            if (o->ncost == 4) {
                fprintf(stderr, "autoshard: --cost-model lists more than 4 models\n");
                return AS_EXIT_USAGE;
            }
            o->costs[o->ncost++] = m->name;
        }
        if (o->ncost == 0) {
            fprintf(stderr, "autoshard: --cost-model needs a model (roofline, alpa, distir)\n");
            return AS_EXIT_USAGE;
        }
        o->cost = o->costs[0];
        return AS_EXIT_OK;
    }
    case OPT_HW:
        o->hw = optarg;
        return AS_EXIT_OK;
    case OPT_BATCH: {
        int b[AS_SWEEP_MAX_LIST];
        if (parse_ints("--batch", optarg, b, &n) != AS_EXIT_OK)
            return AS_EXIT_USAGE;
        for (i = 0; i < n; i++)
            o->batches[i] = b[i];
        o->nbatches = n > 1 ? n : 0;
        *batch = b[0];
        return AS_EXIT_OK;
    }
    case OPT_PIPE:
        return parse_ints("--pipeline", optarg, o->pipeline, &o->npipeline);
    case OPT_MICRO:
        return parse_ints("--microbatches", optarg, o->micro, &o->nmicro);
    case OPT_MBSIZE:
        return parse_ints("--microbatch-size", optarg, o->mbsize, &o->nmbsize);
    case OPT_ACC:
        o->accumulate = 1;
        return AS_EXIT_OK;
    case OPT_RECOMP:
        if (!parse_words(optarg, w, &n, 3))
            return as_cmd_usage(&as_cmd_sweep, "--recompute takes none, full, selective");
        for (i = 0; i < n; i++)
            if (!as_recompute_parse(w[i], &o->recompute[i]) ||
                o->recompute[i] == AS_RECOMPUTE_AUTO)
                return as_cmd_usage(&as_cmd_sweep, "--recompute: unknown mode '%s' (none, full, "
                                    "selective)", w[i]);
        o->nrecompute = n;
        return AS_EXIT_OK;
    case 's':
        if (!parse_words(optarg, o->solver, &o->nsolver, AS_SWEEP_MAX_LIST))
            return as_cmd_usage(&as_cmd_sweep, "--solver takes a comma-separated list");
        for (i = 0; i < o->nsolver; i++)
            if (as_solver_find(o->solver[i], &err) == NULL)
                return as_cmd_usage(&as_cmd_sweep, "%s", err.msg);
        return AS_EXIT_OK;
    case OPT_AXES:
        if (as_cmd_count_opt(&as_cmd_sweep, "max-axes", optarg, &o->max_axes) != AS_EXIT_OK)
            return AS_EXIT_USAGE;
        if (o->max_axes > 3)
            return as_cmd_usage(&as_cmd_sweep, "--max-axes must be 1, 2 or 3, got %d",
                                o->max_axes);
        return AS_EXIT_OK;
    case OPT_TPMAX:
        return as_cmd_count_opt(&as_cmd_sweep, "tp-max", optarg, &o->tp_max);
    case OPT_ROLE:
        return as_sweep_set_roles(o, optarg, &err) == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
    case OPT_ZERO: {
        const char *q = optarg;
        o->nzero = 0;
        for (;;) {
            int z = q[0] - '0', j;
            if (q[0] < '0' || q[0] > '3' || (q[1] != ',' && q[1] != '\0') || o->nzero == 4) {
                fprintf(stderr, "autoshard: --zero takes 0, 1, 2 or 3 (or a list of them), got "
                        "'%s'\n", optarg);
                return AS_EXIT_USAGE;
            }
            for (j = 0; j < o->nzero; j++)
                if (o->zeros[j] == z) {
                    fprintf(stderr, "autoshard: --zero lists %d twice\n", z);
                    return AS_EXIT_USAGE;
                }
            o->zeros[o->nzero++] = z;
            if (q[1] == '\0')
                break;
            q += 2;
        }
        o->zero = o->zeros[0];
        return AS_EXIT_OK;
    }
    case OPT_TIME: {
        char *end;
        o->time_limit = strtod(optarg, &end);
        if (end == optarg || *end != '\0' || !(o->time_limit >= 0) || o->time_limit > 1e9)
            return as_cmd_usage(&as_cmd_sweep, "--time-limit must be a number >= 0, got '%s'",
                                optarg);
        return AS_EXIT_OK;
    }
    case OPT_TOP:
        return as_cmd_count_opt(&as_cmd_sweep, "top", optarg, &o->top);
    case OPT_CSV:
        o->csv = optarg;
        return AS_EXIT_OK;
    case 'j':
        if (as_cmd_count_opt(&as_cmd_sweep, "jobs", optarg, &o->jobs) != AS_EXIT_OK)
            return AS_EXIT_USAGE;
        if (o->jobs > 1024)
            return as_cmd_usage(&as_cmd_sweep, "--jobs must be at most 1024, got %d", o->jobs);
        return AS_EXIT_OK;
    case OPT_PLANS:
        o->plans = optarg;
        return AS_EXIT_OK;
    case OPT_SVG:
        o->svg = optarg;
        return AS_EXIT_OK;
    case 'o':
        o->out = optarg;
        return AS_EXIT_OK;
    case 'q':
        o->quiet = 1;
        return AS_EXIT_OK;
    default:
        return as_cmd_usage(&as_cmd_sweep, "unknown option");
    }
}

/* Batch of a graph file: the batch dim of its first data input with one (0: none). */
static int64_t
graph_batch(const as_graph *g)
{
    int32_t t;

    for (t = 0; t < as_graph_ntensors(g); t++) {
        const as_tensor *x = as_graph_tensor(g, t);
        if (x->kind == AS_TK_INPUT && x->batch_dim >= 0 && x->batch_dim < x->shape.rank)
            return x->shape.dim[x->batch_dim];
    }
    return 0;
}

static int
load_graph(const char *what, int64_t batch, as_graph **g, int64_t *gb, as_err *err)
{
    const as_preset *pr = as_preset_find(what);
    as_preset_cfg cfg;
    as_train_opts t;

    *g = NULL;
    if (pr == NULL) {
        AS_CHECK(as_graph_read(what, g, err));
        *gb = graph_batch(*g);
        if (batch > 0 && batch != *gb) {
            as_graph_free(*g);
            *g = NULL;
            return as_errf(err, AS_EUSAGE, "--batch %lld: graph '%s' has batch %lld (--batch "
                           "is for presets; regenerate the graph)", (long long)batch, what,
                           (long long)*gb);
        }
        return AS_OK;
    }
    cfg = pr->cfg;
    if (batch > 0)
        cfg.batch = batch;
    AS_CHECK(as_preset_check(pr, &cfg, err));
    AS_CHECK(as_preset_build(pr, &cfg, g, err));
    as_train_opts_init(&t);
    t.mixed = cfg.mixed;
    if (as_autodiff(*g, &t, err) != AS_OK) {
        as_graph_free(*g);
        *g = NULL;
        return err->code;
    }
    *gb = cfg.batch;
    return AS_OK;
}

static int
sweep_exec(int argc, char **argv)
{
    static const struct option opts[] = {
        {"devices", required_argument, NULL, OPT_DEV}, {"hw", required_argument, NULL, OPT_HW},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"pipeline", required_argument, NULL, OPT_PIPE},
        {"microbatches", required_argument, NULL, OPT_MICRO},
        {"microbatch-size", required_argument, NULL, OPT_MBSIZE},
        {"accumulate", no_argument, NULL, OPT_ACC},
        {"recompute", required_argument, NULL, OPT_RECOMP},
        {"solver", required_argument, NULL, 's'}, {"max-axes", required_argument, NULL, OPT_AXES},
        {"tp-max", required_argument, NULL, OPT_TPMAX},
        {"time-limit", required_argument, NULL, OPT_TIME}, {"output", required_argument, NULL, 'o'},
        {"top", required_argument, NULL, OPT_TOP}, {"csv", required_argument, NULL, OPT_CSV},
        {"jobs", required_argument, NULL, 'j'}, {"plans", required_argument, NULL, OPT_PLANS},
        {"svg", required_argument, NULL, OPT_SVG},
        {"role", required_argument, NULL, OPT_ROLE},
        {"cost-model", required_argument, NULL, OPT_COST}, {"zero", required_argument, NULL, OPT_ZERO},
        {"quiet", no_argument, NULL, 'q'}, {"list", no_argument, NULL, OPT_LIST},
        {NULL, 0, NULL, 0}};
    as_sweep_opts o;
    as_sweep_summary sum;
    as_graph *g = NULL;
    as_err err = {0};
    int64_t batch = 0;
    int opt, rc, list = 0, b;

    as_sweep_opts_init(&o);
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "s:o:qj:", opts, NULL)) != -1) {
        if (opt == '?' || opt == ':')
            return as_cmd_usage(&as_cmd_sweep, "bad or incomplete option '%s'", argv[optind - 1]);
        if (opt == OPT_LIST) {
            list = 1;
            continue;
        }
        if ((rc = sweep_opt(&o, opt, &batch)) != AS_EXIT_OK)
            return rc;
    }
    if (argc - optind != 1)
        return as_cmd_usage(&as_cmd_sweep, "expected one GRAPH or PRESET, got %d", argc - optind);
    if (o.devices < 1)
        return as_cmd_usage(&as_cmd_sweep, "missing --devices N");
    if (o.nmbsize > 0 && (o.nmicro > 0 || o.accumulate))
        return as_cmd_usage(&as_cmd_sweep, "--microbatch-size sets K itself: not with "
                            "--microbatches or --accumulate");
    if (o.accumulate && o.nmicro == 0)
        return as_cmd_usage(&as_cmd_sweep, "--accumulate needs --microbatches LIST");
    for (b = 0; b < o.nzero; b++)
        if (o.zeros[b] > 0 && (o.roles == NULL || strstr(o.roles, "data") == NULL)) {
            fprintf(stderr, "autoshard: --zero %d needs a data axis to shard over (--role with "
                    "data)\n", o.zeros[b]);
            return AS_EXIT_USAGE;
        }
    o.source = argv[optind];
    if (as_verbosity == 0) /* -q is also a global option, taken before ours */
        o.quiet = 1;
    if (o.nbatches > 1 && as_preset_find(o.source) == NULL) {
        fprintf(stderr, "autoshard: a --batch list needs a PRESET ('%s' is a graph file, of one "
                "batch)\n", o.source);
        return AS_EXIT_USAGE;
    }
    for (b = 0; b < (o.nbatches > 1 ? o.nbatches : 1); b++) {
        /* one graph per batch; the sweeps share the JSONL (keys b=B,...) */
        if (o.nbatches > 1)
            batch = o.batches[b];
        o.batch_index = b;
        if (load_graph(o.source, batch, &g, &o.batch, &err) != AS_OK)
            return as_cmd_fail(&err);
        if (o.batch <= 0) {
            as_graph_free(g);
            fprintf(stderr, "autoshard: graph '%s' has no data input with a batch dim\n",
                    o.source);
            return AS_EXIT_USAGE;
        }
        if (list) {
            rc = as_sweep_list(g, &o, stdout, &err);
            as_graph_free(g);
            if (rc != AS_OK)
                return as_cmd_fail(&err);
            continue;
        }
        if (o.nbatches > 1 && as_sweep_rank() == 0)
            fprintf(stdout, "%sbatch %lld:\n", b > 0 ? "\n" : "", (long long)o.batch);
        rc = as_sweep_run(g, &o, stdout, &sum, &err);
        as_graph_free(g);
        as_rules_reset();
        if (rc != AS_OK)
            return as_cmd_fail(&err);
        if (sum.rank > 0) /* an MPI rank that only evaluated: rank 0 reports */
            continue;
        fprintf(stdout, "sweep: %zu configurations (%zu done before), %zu run now, %zu pruned by "
                "the memory lower bound, %zu OOM, %zu infeasible, %zu failed, %zu at the time limit, "
                "%.3f s (%.3g configurations/s)\n",
                sum.total, sum.skipped, sum.done, sum.pruned, sum.oom, sum.infeasible, sum.failed,
                sum.limit,
                sum.wall,
                sum.wall > 0 ? (double)sum.done / sum.wall : 0.0);
    }
    return AS_EXIT_OK;
}
