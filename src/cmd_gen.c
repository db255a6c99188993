/* cmd_gen.c -- `autoshard gen`: write the graph of a named model preset
 * (presets.h) as .asg, optionally as a full training step (autodiff +
 * optimizer), and `gen --list` to show the presets with their sizes.
 *
 * Overrides (--layers, --hidden, ...) are checked here for applicability
 * (an option the family has no use for is an error, not silently ignored)
 * and by as_preset_check for consistency; both are usage errors (exit 2).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "graph/autodiff.h"
#include "graph/check.h"
#include "graph/io.h"
#include "graph/presets.h"

enum {
    OPT_LIST = 256,
    OPT_LAYERS,
    OPT_HIDDEN,
    OPT_HEADS,
    OPT_SEQ,
    OPT_BATCH,
    OPT_VOCAB,
    OPT_DTYPE,
    OPT_WIDTH,
    OPT_TRAIN,
    OPT_OPTIMIZER,
    OPT_PRECISION
};

/* Options the user gave, before they are applied to a preset. */
typedef struct gen_opts {
    int list, train;
    const char *optimizer, *output;
    unsigned given;   /**< AS_PRESET_OPT_* bits of the overrides given */
    int64_t val[8];   /**< override values, indexed by bit number */
    as_dtype dtype;
    int prec_given;       /**< --precision given (it sets dtype and mixed) */
    as_precision prec;
} gen_opts;

static const char *const gen_optnames[8] = {"--layers", "--hidden", "--heads", "--seq",
                                            "--batch",  "--vocab",  "--dtype", "--width"};

/* Parse the positive integer value of option BIT. */
static int
gen_parse_int(gen_opts *o, int bit, const char *arg, as_err *err)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(arg, &end, 10);
    if (errno != 0 || end == arg || *end != '\0' || v < 1 || v > ((int64_t)1 << 40))
        return as_errf(err, AS_EUSAGE, "%s must be a positive integer, got '%s'",
                       gen_optnames[bit], arg);
    if ((bit == 0 || bit == 2 || bit == 7) && v > 1000000)
        return as_errf(err, AS_EUSAGE, "%s is too large: %s", gen_optnames[bit], arg);
    o->val[bit] = v;
    o->given |= 1u << bit;
    return AS_OK;
}

static int
gen_parse_dtype(gen_opts *o, const char *arg, as_err *err)
{
    if (!as_dtype_parse(arg, strlen(arg), &o->dtype) ||
        (o->dtype != AS_DT_F32 && o->dtype != AS_DT_F16 && o->dtype != AS_DT_BF16))
        return as_errf(err, AS_EUSAGE, "--dtype must be f32, f16 or bf16, got '%s'", arg);
    if (o->prec_given)
        return as_errf(err, AS_EUSAGE, "give --dtype or --precision, not both");
    o->given |= AS_PRESET_OPT_DTYPE;
    return AS_OK;
}

static int
gen_parse_precision(gen_opts *o, const char *arg, as_err *err)
{
    if (!as_precision_parse(arg, strlen(arg), &o->prec))
        return as_errf(err, AS_EUSAGE,
                       "--precision must be fp32, bf16, fp16, bf16-mixed or fp16-mixed, got '%s'",
                       arg);
    if (o->given & AS_PRESET_OPT_DTYPE)
        return as_errf(err, AS_EUSAGE, "give --dtype or --precision, not both");
    o->prec_given = 1;
    o->dtype = as_precision_dtype(o->prec);
    o->given |= AS_PRESET_OPT_DTYPE;
    return AS_OK;
}

/* Parse argv into *O and the preset name *NAME; AS_EUSAGE with a message. */
static int
gen_parse(int argc, char **argv, gen_opts *o, const char **name, as_err *err)
{
    static const struct option lopts[] = {
        {"list", no_argument, NULL, OPT_LIST},
        {"layers", required_argument, NULL, OPT_LAYERS},
        {"hidden", required_argument, NULL, OPT_HIDDEN},
        {"heads", required_argument, NULL, OPT_HEADS},
        {"seq", required_argument, NULL, OPT_SEQ},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"vocab", required_argument, NULL, OPT_VOCAB},
        {"dtype", required_argument, NULL, OPT_DTYPE},
        {"precision", required_argument, NULL, OPT_PRECISION},
        {"width", required_argument, NULL, OPT_WIDTH},
        {"train", no_argument, NULL, OPT_TRAIN},
        {"optimizer", required_argument, NULL, OPT_OPTIMIZER},
        {"output", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0}};
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:", lopts, NULL)) != -1) {
        switch (c) {
        case OPT_LIST:
            o->list = 1;
            break;
        case OPT_LAYERS:
        case OPT_HIDDEN:
        case OPT_HEADS:
        case OPT_SEQ:
        case OPT_BATCH:
        case OPT_VOCAB:
            AS_CHECK(gen_parse_int(o, c - OPT_LAYERS, optarg, err));
            break;
        case OPT_WIDTH:
            AS_CHECK(gen_parse_int(o, 7, optarg, err));
            break;
        case OPT_DTYPE:
            AS_CHECK(gen_parse_dtype(o, optarg, err));
            break;
        case OPT_PRECISION:
            AS_CHECK(gen_parse_precision(o, optarg, err));
            break;
        case OPT_TRAIN:
            o->train = 1;
            break;
        case OPT_OPTIMIZER:
            o->optimizer = optarg;
            break;
        case 'o':
            o->output = optarg;
            break;
        default:
            /* getopt sets optopt to the option's value when its argument is
             * missing, and to 0 for an unknown long option. */
            if (optopt == 'o' || optopt >= OPT_LIST)
                return as_errf(err, AS_EUSAGE, "option '%s' needs a value", argv[optind - 1]);
            if (optopt != 0)
                return as_errf(err, AS_EUSAGE, "unknown option '-%c'", optopt);
            return as_errf(err, AS_EUSAGE, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (o->optimizer != NULL && strcmp(o->optimizer, "adam") != 0 &&
        strcmp(o->optimizer, "sgd") != 0 && strcmp(o->optimizer, "momentum") != 0)
        return as_errf(err, AS_EUSAGE, "--optimizer must be adam, sgd or momentum, got '%s'",
                       o->optimizer);
    if (o->optimizer != NULL && !o->train)
        return as_errf(err, AS_EUSAGE, "--optimizer needs --train");
    if (o->list)
        return optind < argc ? as_errf(err, AS_EUSAGE, "--list takes no preset name") : AS_OK;
    if (optind >= argc)
        return as_errf(err, AS_EUSAGE, "missing preset name (see 'autoshard gen --list')");
    if (optind + 1 < argc)
        return as_errf(err, AS_EUSAGE, "unexpected argument '%s'", argv[optind + 1]);
    *name = argv[optind];
    return AS_OK;
}

/* The preset named NAME, or AS_EUSAGE naming the closest ones. */
static int
gen_find(const char *name, const as_preset **p, as_err *err)
{
    char close[512];

    if ((*p = as_preset_find(name)) != NULL)
        return AS_OK;
    if (as_preset_suggest(name, close, sizeof close) > 0)
        return as_errf(err, AS_EUSAGE, "unknown preset '%s' (did you mean: %s?)", name, close);
    return as_errf(err, AS_EUSAGE, "unknown preset '%s' (see 'autoshard gen --list')", name);
}

/* Apply the overrides in O to a copy of P's configuration. */
static int
gen_configure(const gen_opts *o, const as_preset *p, as_preset_cfg *cfg, as_err *err)
{
    unsigned bad = o->given & ~as_preset_options(p);
    int bit;

    *cfg = p->cfg;
    for (bit = 0; bit < 8; bit++)
        if (bad & (1u << bit))
            return as_errf(err, AS_EUSAGE, "%s does not apply to %s (a %s model)",
                           bit == 6 && o->prec_given ? "--precision" : gen_optnames[bit], p->name,
                           p->family);
    if (o->given & AS_PRESET_OPT_LAYERS)
        cfg->layers = (int)o->val[0];
    if (o->given & AS_PRESET_OPT_HIDDEN)
        cfg->hidden = o->val[1];
    if (o->given & AS_PRESET_OPT_HEADS)
        cfg->heads = (int)o->val[2];
    if (o->given & AS_PRESET_OPT_SEQ)
        cfg->seq = o->val[3];
    if (o->given & AS_PRESET_OPT_BATCH)
        cfg->batch = o->val[4];
    if (o->given & AS_PRESET_OPT_VOCAB)
        cfg->vocab = o->val[5];
    if (o->given & AS_PRESET_OPT_DTYPE) {
        cfg->dtype = o->dtype;
        cfg->mixed = o->prec_given && as_precision_mixed(o->prec);
    }
    if (o->given & AS_PRESET_OPT_WIDTH)
        cfg->width = (int)o->val[7];
    return as_preset_check(p, cfg, err);
}

/* "-" for a field the family does not use. */
static const char *
gen_field(char *buf, size_t n, int64_t v)
{
    if (v <= 0)
        return "-";
    snprintf(buf, n, "%lld", (long long)v);
    return buf;
}

/* Print every preset with its configuration and parameter count. */
static int
gen_list(as_err *err)
{
    char h[32], nh[32], sq[32];
    int i;

    printf("%-14s %-8s %6s %6s %5s %5s %6s %15s\n", "NAME", "FAMILY", "LAYERS", "HIDDEN", "HEADS",
           "SEQ", "BATCH", "PARAMS");
    for (i = 0; i < as_preset_count(); i++) {
        const as_preset *p = as_preset_get(i);
        as_graph *g = NULL;
        int64_t n;
        double s;

        AS_CHECK(as_preset_build(p, NULL, &g, err));
        n = as_preset_nparams(g);
        as_graph_free(g);
        s = n >= 1000000000 ? (double)n / 1e9 : (double)n / 1e6;
        printf("%-14s %-8s %6d %6s %5s %5s %6lld %15lld %7.*f%s\n", p->name, p->family,
               p->cfg.layers, gen_field(h, sizeof h, p->cfg.hidden),
               gen_field(nh, sizeof nh, p->cfg.heads), gen_field(sq, sizeof sq, p->cfg.seq),
               (long long)p->cfg.batch, (long long)n, n >= 1000000000 ? 2 : 1, s,
               n >= 1000000000 ? "B" : "M");
    }
    return AS_OK;
}

/* Build, optionally differentiate, check and write the graph. */
static int
gen_run(const gen_opts *o, const char *name, as_err *err)
{
    const as_preset *p;
    as_preset_cfg cfg;
    as_train_opts t;
    as_graph *g = NULL;
    int rc;

    AS_CHECK(gen_find(name, &p, err));
    AS_CHECK(gen_configure(o, p, &cfg, err));
    AS_CHECK(as_preset_build(p, &cfg, &g, err));
    if (o->train) {
        as_train_opts_init(&t);
        if (o->optimizer != NULL)
            t.optimizer = o->optimizer;
        t.mixed = cfg.mixed;
        AS_CHECK_GOTO(rc, as_autodiff(g, &t, err), out);
    }
    as_igraph_setup();
    AS_CHECK_GOTO(rc, as_graph_check(g, err), out);
    as_debug("%s: %d ops, %d tensors, %lld parameters", p->name, (int)as_graph_nops(g),
            (int)as_graph_ntensors(g), (long long)as_preset_nparams(g));
    rc = as_graph_save(g, o->output, err);
out:
    as_graph_free(g);
    return rc;
}

static int
cmd_gen_exec(int argc, char **argv)
{
    gen_opts o;
    const char *name = NULL;
    as_err err;

    memset(&o, 0, sizeof o);
    as_err_clear(&err);
    if (gen_parse(argc, argv, &o, &name, &err) != AS_OK)
        return as_cmd_fail(&err);
    if ((o.list ? gen_list(&err) : gen_run(&o, name, &err)) != AS_OK)
        return as_cmd_fail(&err);
    return AS_EXIT_OK;
}

const struct as_cmd as_cmd_gen = {
    "gen",
    "PRESET [--layers N] [--hidden N] [--heads N] [--seq N] [--batch N] [--vocab N] [--dtype T] "
    "[--train [--optimizer O]] [-o FILE] | --list",
    "generate the graph of a named model (GPT, BERT, T5, MLP, wide ResNet, GAT)",
    "Writes the forward graph of PRESET as .asg (stdout, or -o FILE); with --train,\n"
    "the whole training step: backward pass and optimizer update.  PRESET is a name\n"
    "from --list, or a family (mlp, gpt, bert, t5, wresnet, gat): its smallest preset.\n"
    "\n"
    "Options:\n"
    "  --list            list the presets with their sizes and parameter counts\n"
    "  --layers N        number of layers (t5: per stack; wresnet: depth 50, 101, 152)\n"
    "  --hidden N        model width (must be divisible by --heads)\n"
    "  --heads N         attention heads\n"
    "  --seq N           sequence length\n"
    "  --batch N         global batch size (gat: number of nodes)\n"
    "  --vocab N         vocabulary size\n"
    "  --precision P     fp32, bf16, fp16, bf16-mixed or fp16-mixed: 16-bit compute runs\n"
    "                    at the tensor-core peak; *-mixed training keeps fp32 master\n"
    "                    weights, Adam moments and gradient accumulator (default:\n"
    "                    bf16-mixed for gpt, bert and t5, fp32 for the others)\n"
    "  --dtype T         f32, f16 or bf16 alone (= --precision fp32, fp16, bf16)\n"
    "  --width N         wresnet: width factor of the bottleneck (default 2)\n"
    "  --train           append the backward pass and optimizer update\n"
    "  --optimizer O     adam (default), sgd or momentum\n"
    "  -o, --output FILE write the graph to FILE (default: stdout)\n"
    "\n"
    "An option a preset's family does not use is an error.  Presets and their\n"
    "sources: docs/presets.md.\n",
    cmd_gen_exec,
};
