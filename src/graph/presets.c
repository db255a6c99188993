/* presets.c -- the preset table, lookup with did-you-mean, configuration
 * checks, the build entry point and the shared graph-builder helpers.
 *
 * Each preset's numbers come from the paper named in its source field (see
 * docs/presets.md for where the published tables are ambiguous and what was
 * chosen).  Default batch sizes are the ones used for training in those
 * papers (GPT-3 Table 2.1 in tokens / 2048), except mlp (1024), wresnet (32)
 * and gat (1024 nodes), which are synthetic benchmarks.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "presets_internal.h"

/* Shorthand for table rows. */
#define TF(l, h, nh, s, bs, v, pos)                                                                \
    {.layers = (l), .hidden = (h), .heads = (nh), .seq = (s), .batch = (bs), .vocab = (v),         \
     .max_pos = (pos), .dtype = AS_DT_BF16, .mixed = 1}
#define MLP(l, h) {.layers = (l), .hidden = (h), .batch = 1024, .dtype = AS_DT_F32}

#define SRC_GPT2 "Radford et al. 2019, GPT-2 (Table 2; HF gpt2 configs)"
#define SRC_GPT3 "Brown et al. 2020, GPT-3 (Table 2.1)"
#define SRC_MLP "DistIR / Alpa-style synthetic MLP benchmark"

static const as_preset presets_table[] = {
    {"mlp-1b", "mlp", SRC_MLP, MLP(16, 8192)},
    {"mlp-17b", "mlp", SRC_MLP, MLP(64, 16384)},
    {"mlp-103b", "mlp", SRC_MLP, MLP(96, 32768)},
    {"gpt2-small", "gpt", SRC_GPT2, TF(12, 768, 12, 1024, 512, 50257, 1024)},
    {"gpt2-medium", "gpt", SRC_GPT2, TF(24, 1024, 16, 1024, 512, 50257, 1024)},
    {"gpt2-large", "gpt", SRC_GPT2, TF(36, 1280, 20, 1024, 512, 50257, 1024)},
    {"gpt2-xl", "gpt", SRC_GPT2, TF(48, 1600, 25, 1024, 512, 50257, 1024)},
    {"gpt3-1.3b", "gpt", SRC_GPT3, TF(24, 2048, 16, 2048, 512, 50257, 2048)},
    {"gpt3-2.7b", "gpt", SRC_GPT3, TF(32, 2560, 32, 2048, 512, 50257, 2048)},
    {"gpt3-6.7b", "gpt", SRC_GPT3, TF(32, 4096, 32, 2048, 1024, 50257, 2048)},
    {"gpt3-13b", "gpt", SRC_GPT3, TF(40, 5120, 40, 2048, 1024, 50257, 2048)},
    {"gpt3-175b", "gpt", SRC_GPT3, TF(96, 12288, 96, 2048, 1536, 50257, 2048)},
    {"megatron-145b", "gpt", "Narayanan et al. 2021, Megatron-LM on GPU clusters (Table 1)",
     TF(80, 12288, 96, 2048, 1536, 51200, 2048)},
    {"bert-base", "bert", "Devlin et al. 2019, BERT", TF(12, 768, 12, 512, 256, 30522, 512)},
    {"bert-large", "bert", "Devlin et al. 2019, BERT", TF(24, 1024, 16, 512, 256, 30522, 512)},
    {"bert-exlarge", "bert", "Shoeybi et al. 2019, Megatron-LM BERT 3.9B (Table 4)",
     TF(48, 2560, 40, 512, 256, 30522, 512)},
    {"t5-base", "t5", "Raffel et al. 2020, T5 (Section 3.1.1; HF t5-base)",
     TF(12, 768, 12, 512, 128, 32128, 0)},
    {"wresnet-50", "wresnet", "Zagoruyko & Komodakis 2016; torchvision wide_resnet50_2",
     {.layers = 50, .batch = 32, .width = 2, .image = 224, .classes = 1000, .dtype = AS_DT_F32}},
    {"gat", "gat", "Velickovic et al. 2018, GAT (dense attention, large synthetic sizes)",
     {.layers = 4, .hidden = 24576, .heads = 8, .batch = 1024, .dtype = AS_DT_F32}},
};

#define NPRESETS ((int)(sizeof presets_table / sizeof presets_table[0]))

/* Per family: accepted options and the build function. */
static const struct family {
    const char *name;
    unsigned opts;
    void (*build)(as_pbuild *b);
} families[] = {
    {"mlp", AS_PRESET_OPT_LAYERS | AS_PRESET_OPT_HIDDEN | AS_PRESET_OPT_BATCH | AS_PRESET_OPT_DTYPE,
     as_preset_i_build_mlp},
    {"gpt", 0x7fu, as_preset_i_build_gpt},
    {"bert", 0x7fu, as_preset_i_build_bert},
    {"t5", 0x7fu, as_preset_i_build_t5},
    {"wresnet",
     AS_PRESET_OPT_LAYERS | AS_PRESET_OPT_BATCH | AS_PRESET_OPT_DTYPE | AS_PRESET_OPT_WIDTH,
     as_preset_i_build_wresnet},
    {"gat",
     AS_PRESET_OPT_LAYERS | AS_PRESET_OPT_HIDDEN | AS_PRESET_OPT_HEADS | AS_PRESET_OPT_BATCH |
         AS_PRESET_OPT_DTYPE,
     as_preset_i_build_gat},
};

static const struct family *
presets_family(const as_preset *p)
{
    size_t i;

    for (i = 0; i < sizeof families / sizeof families[0]; i++)
        if (strcmp(families[i].name, p->family) == 0)
            return &families[i];
    return NULL;
}

int
as_preset_count(void)
{
    return NPRESETS;
}

const as_preset *
as_preset_get(int i)
{
    return i >= 0 && i < NPRESETS ? &presets_table[i] : NULL;
}

const as_preset *
as_preset_find(const char *name)
{
    int i;

    for (i = 0; i < NPRESETS; i++)
        if (strcmp(presets_table[i].name, name) == 0)
            return &presets_table[i];
    /* a family name ("mlp", "gpt", "bert", ...): its first, smallest preset */
    for (i = 0; i < NPRESETS; i++)
        if (strcmp(presets_table[i].family, name) == 0)
            return &presets_table[i];
    return NULL;
}

/* Levenshtein distance of A and B (both short: preset names). */
static size_t
presets_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), i, j, *row, prev, cur, d;

    row = as_xmalloc((lb + 1) * sizeof *row);
    for (j = 0; j <= lb; j++)
        row[j] = j;
    for (i = 1; i <= la; i++) {
        prev = row[0];
        row[0] = i;
        for (j = 1; j <= lb; j++) {
            cur = row[j];
            d = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < d)
                d = row[j] + 1;
            if (row[j - 1] + 1 < d)
                d = row[j - 1] + 1;
            row[j] = d;
            prev = cur;
        }
    }
    d = row[lb];
    free(row);
    return d;
}

int
as_preset_suggest(const char *name, char *buf, size_t n)
{
    size_t len = 0, lim = strlen(name) / 3 + 1, d[NPRESETS], best = (size_t)-1;
    int i, pass, count = 0;

    if (n > 0)
        buf[0] = '\0';
    if (lim < 2)
        lim = 2;
    for (i = 0; i < NPRESETS; i++) {
        d[i] = presets_distance(name, presets_table[i].name);
        if (d[i] < best)
            best = d[i];
    }
    /* Pass 0: the closest names within the edit limit; pass 1 (only if pass
     * 0 found none): every preset sharing the first three characters. */
    for (pass = 0; pass < 2 && count == 0; pass++)
        for (i = 0; i < NPRESETS && count < 6; i++) {
            const char *pn = presets_table[i].name;
            int close = pass == 0 ? d[i] <= lim && d[i] == best
                                  : strlen(name) >= 3 && strncmp(name, pn, 3) == 0;
            if (!close || len + strlen(pn) + 3 >= n)
                continue;
            len += (size_t)snprintf(buf + len, n - len, "%s%s", count ? ", " : "", pn);
            count++;
        }
    return count;
}

unsigned
as_preset_options(const as_preset *p)
{
    const struct family *f = presets_family(p);

    return f != NULL ? f->opts : 0;
}

int
as_preset_check(const as_preset *p, const as_preset_cfg *c, as_err *err)
{
    unsigned opts = as_preset_options(p);

    if (c->layers < 1 || c->layers > 100000)
        return as_errf(err, AS_EUSAGE, "%s: layers must be between 1 and 100000, got %d", p->name,
                       c->layers);
    if (strcmp(p->family, "wresnet") == 0 && c->layers != 50 && c->layers != 101 &&
        c->layers != 152)
        return as_errf(err, AS_EUSAGE, "%s: depth (--layers) must be 50, 101 or 152, got %d",
                       p->name, c->layers);
    if (c->dtype != AS_DT_F32 && c->dtype != AS_DT_F16 && c->dtype != AS_DT_BF16)
        return as_errf(err, AS_EUSAGE, "%s: dtype must be f32, f16 or bf16, got '%s'", p->name,
                       as_dtype_name(c->dtype));
    if (c->batch < 1)
        return as_errf(err, AS_EUSAGE, "%s: batch must be positive", p->name);
    if ((opts & AS_PRESET_OPT_HIDDEN) && c->hidden < 1)
        return as_errf(err, AS_EUSAGE, "%s: hidden must be positive", p->name);
    if ((opts & AS_PRESET_OPT_HEADS) && (c->heads < 1 || c->hidden % c->heads != 0))
        return as_errf(err, AS_EUSAGE,
                       "%s: hidden size %lld is not divisible by the number of heads %d",
                       p->name, (long long)c->hidden, c->heads);
    if ((opts & AS_PRESET_OPT_SEQ) && c->seq < 1)
        return as_errf(err, AS_EUSAGE, "%s: seq must be positive", p->name);
    if ((opts & AS_PRESET_OPT_VOCAB) && c->vocab < 2)
        return as_errf(err, AS_EUSAGE, "%s: vocab must be at least 2, got %lld", p->name,
                       (long long)c->vocab);
    if ((opts & AS_PRESET_OPT_WIDTH) && (c->width < 1 || c->width > 64))
        return as_errf(err, AS_EUSAGE, "%s: width factor must be between 1 and 64, got %d",
                       p->name, c->width);
    if (c->ffn < 0 || c->max_pos < 0)
        return as_errf(err, AS_EUSAGE, "%s: negative ffn or max_pos", p->name);
    return AS_OK;
}

int
as_preset_build(const as_preset *p, const as_preset_cfg *cfg, as_graph **out, as_err *err)
{
    const struct family *f = presets_family(p);
    as_pbuild b;

    if (cfg == NULL)
        cfg = &p->cfg;
    if (f == NULL)
        return as_errf(err, AS_EINTERNAL, "preset '%s' has unknown family '%s'", p->name,
                       p->family);
    AS_CHECK(as_preset_check(p, cfg, err));
    memset(&b, 0, sizeof b);
    b.g = as_graph_new(p->name);
    b.err = err;
    b.rc = AS_OK;
    b.cfg = cfg;
    b.dt = cfg->dtype;
    f->build(&b);
    if (b.rc != AS_OK) {
        as_err_prefix(err, "preset '%s': ", p->name);
        as_graph_free(b.g);
        return b.rc;
    }
    *out = b.g;
    return AS_OK;
}

int64_t
as_preset_nparams(const as_graph *g)
{
    int64_t n = 0;
    int32_t i;

    for (i = 0; i < as_graph_ntensors(g); i++) {
        const as_tensor *t = as_graph_tensor(g, i);
        if (t->kind == AS_TK_PARAM)
            n += as_shape_numel(&t->shape);
    }
    return n;
}

/* Builder helpers. */

/* Declare a graph-level tensor of shape DIM[0..RANK). */
static int32_t
presets_declare(as_pbuild *b, const char *name, as_dtype dt, as_tensor_kind kind, int batch_dim,
                int rank, const int64_t *dim)
{
    as_shape s;
    int32_t id = -1;
    int i;

    if (b->rc != AS_OK)
        return -1;
    memset(&s, 0, sizeof s);
    s.dtype = dt;
    s.rank = rank;
    for (i = 0; i < rank; i++)
        s.dim[i] = dim[i];
    b->rc = as_graph_add_tensor(b->g, name, &s, kind, batch_dim, &id, b->err);
    if (b->rc != AS_OK)
        as_err_prefix(b->err, "%s: ", name);
    return b->rc == AS_OK ? id : -1;
}

int32_t
as_preset_i_param(as_pbuild *b, int rank, const int64_t *dim, const char *name, ...)
{
    char buf[256];
    va_list ap;

    va_start(ap, name);
    vsnprintf(buf, sizeof buf, name, ap);
    va_end(ap);
    return presets_declare(b, buf, b->dt, AS_TK_PARAM, -1, rank, dim);
}

int32_t
as_preset_i_input(as_pbuild *b, as_dtype dt, int batch_dim, int rank, const int64_t *dim,
                  const char *name)
{
    return presets_declare(b, name, dt, AS_TK_INPUT, batch_dim, rank, dim);
}

int32_t
as_preset_i_const(as_pbuild *b, int rank, const int64_t *dim, const char *name)
{
    return presets_declare(b, name, b->dt, AS_TK_CONST, -1, rank, dim);
}

int32_t
as_preset_i_op(as_pbuild *b, const char *optype, const int32_t *in, int nin, const as_attr *attr,
               int nattr, const char *name, ...)
{
    char buf[256];
    const char *names[1];
    va_list ap;
    int32_t op = -1;
    int i;

    if (b->rc != AS_OK)
        return -1;
    for (i = 0; i < nin; i++)
        if (in[i] < 0)
            return -1;
    va_start(ap, name);
    vsnprintf(buf, sizeof buf, name, ap);
    va_end(ap);
    names[0] = buf;
    b->rc = as_graph_add_op(b->g, optype, names, 1, in, nin, attr, nattr, &op, b->err);
    if (b->rc != AS_OK) {
        as_err_prefix(b->err, "%s: ", buf);
        return -1;
    }
    return as_graph_op(b->g, op)->out[0];
}

int32_t
as_preset_i_op1(as_pbuild *b, const char *optype, int32_t x, const char *name)
{
    return as_preset_i_op(b, optype, &x, 1, NULL, 0, "%s", name);
}

int32_t
as_preset_i_op2(as_pbuild *b, const char *optype, int32_t x, int32_t y, const char *name)
{
    int32_t in[2] = {x, y};

    return as_preset_i_op(b, optype, in, 2, NULL, 0, "%s", name);
}

int32_t
as_preset_i_linear(as_pbuild *b, const char *scope, int32_t x, int64_t n_in, int64_t n_out,
                   int bias)
{
    int32_t in[2], y;

    in[0] = x;
    in[1] = as_preset_i_param(b, AS_DIMS(n_in, n_out), "%s.w", scope);
    if (!bias)
        return as_preset_i_op(b, "matmul", in, 2, NULL, 0, "%s", scope);
    y = as_preset_i_op(b, "matmul", in, 2, NULL, 0, "%s.mm", scope);
    in[0] = y;
    in[1] = as_preset_i_param(b, AS_DIMS(n_out), "%s.b", scope);
    return as_preset_i_op(b, "bias_add", in, 2, NULL, 0, "%s", scope);
}

int32_t
as_preset_i_layernorm(as_pbuild *b, const char *scope, int32_t x, int64_t h)
{
    int32_t in[3];

    in[0] = x;
    in[1] = as_preset_i_param(b, AS_DIMS(h), "%s.g", scope);
    in[2] = as_preset_i_param(b, AS_DIMS(h), "%s.b", scope);
    return as_preset_i_op(b, "layernorm", in, 3, NULL, 0, "%s", scope);
}

const as_shape *
as_preset_i_shape(as_pbuild *b, int32_t id)
{
    return &as_graph_tensor(b->g, id)->shape;
}
