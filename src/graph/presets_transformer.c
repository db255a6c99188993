/* presets_transformer.c -- GPT (decoder-only, pre-LN), BERT (encoder, post-LN,
 * MLM + NSP heads) and T5 (encoder-decoder, RMSNorm, no biases) generators.
 *
 * All three share one multi-head attention block written the way the
 * Megatron and HF implementations lay it out, so that the planner sees
 * Megatron-style column/row parallel candidates: q, k and v are three
 * separate [h, h] projections, heads are split by reshape [B, S, nh, hd] and
 * transpose [B, nh, S, hd], scores are q k^T (matmul transpose_b=1), the
 * causal mask is an additive [S, S] constant (0 / -1e9, broadcast), and the
 * context is merged back and projected by an [h, h] output layer.
 *
 * Names carry the layer scope ("h.3.attn.q", "h.3.mlp.fc1", parameter
 * "h.3.attn.q.w"), which the planner uses to group repeated layers.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "presets_internal.h"

/* One attention block: queries from X [B, Sq, h], keys/values from KV [B, Sk, h]. */
typedef struct tf_attn {
    const char *scope; /**< "h.3.attn" */
    int32_t x, kv;     /**< query source, key/value source (== x for self-attention) */
    int64_t sq, sk;    /**< their sequence lengths */
    int32_t mask;      /**< additive [Sq, Sk] mask, -1 for none */
    int bias;          /**< projections have biases (GPT, BERT; not T5) */
    int scale;         /**< scale scores by 1/sqrt(hd) (GPT, BERT; T5 folds it into init) */
} tf_attn;

/* [B, S, h] -> [B, nh, S, hd], named NAME.heads and NAME.t. */
static int32_t
tf_split_heads(as_pbuild *b, int32_t t, int64_t s, const char *name)
{
    const as_preset_cfg *c = b->cfg;
    int64_t shape[4] = {c->batch, s, c->heads, c->hidden / c->heads};
    static const int64_t perm[4] = {0, 2, 1, 3};
    as_attr a;

    a = AS_ATTR_V("shape", 4, shape);
    t = as_preset_i_op(b, "reshape", &t, 1, &a, 1, "%s.heads", name);
    a = AS_ATTR_V("perm", 4, perm);
    return as_preset_i_op(b, "transpose", &t, 1, &a, 1, "%s.t", name);
}

/* Multi-head attention; returns the output projection SCOPE.out [B, Sq, h]. */
static int32_t
tf_attention(as_pbuild *b, const tf_attn *at)
{
    const as_preset_cfg *c = b->cfg;
    int64_t h = c->hidden, hd = h / c->heads;
    int64_t merged[3] = {c->batch, at->sq, h};
    static const int64_t perm[4] = {0, 2, 1, 3};
    char sc[200];
    int32_t q, k, v, in[2], s;
    as_attr a;

    snprintf(sc, sizeof sc, "%s.q", at->scope);
    q = tf_split_heads(b, as_preset_i_linear(b, sc, at->x, h, h, at->bias), at->sq, sc);
    snprintf(sc, sizeof sc, "%s.k", at->scope);
    k = tf_split_heads(b, as_preset_i_linear(b, sc, at->kv, h, h, at->bias), at->sk, sc);
    snprintf(sc, sizeof sc, "%s.v", at->scope);
    v = tf_split_heads(b, as_preset_i_linear(b, sc, at->kv, h, h, at->bias), at->sk, sc);
    in[0] = q;
    in[1] = k;
    a = AS_ATTR_I("transpose_b", 1);
    s = as_preset_i_op(b, "matmul", in, 2, &a, 1, "%s.scores", at->scope);
    if (at->scale) {
        a = AS_ATTR_F("factor", 1.0 / sqrt((double)hd));
        s = as_preset_i_op(b, "scale", &s, 1, &a, 1, "%s.scaled", at->scope);
    }
    if (at->mask >= 0) {
        in[0] = s;
        in[1] = at->mask;
        s = as_preset_i_op(b, "add", in, 2, NULL, 0, "%s.masked", at->scope);
    }
    s = as_preset_i_op(b, "softmax", &s, 1, NULL, 0, "%s.probs", at->scope);
    in[0] = s;
    in[1] = v;
    s = as_preset_i_op(b, "matmul", in, 2, NULL, 0, "%s.ctx", at->scope);
    a = AS_ATTR_V("perm", 4, perm);
    s = as_preset_i_op(b, "transpose", &s, 1, &a, 1, "%s.ctx.t", at->scope);
    a = AS_ATTR_V("shape", 3, merged);
    s = as_preset_i_op(b, "reshape", &s, 1, &a, 1, "%s.ctx.merged", at->scope);
    snprintf(sc, sizeof sc, "%s.out", at->scope);
    return as_preset_i_linear(b, sc, s, h, h, at->bias);
}

/* Feed-forward block SCOPE: fc1 [h, ff] -> ACT -> fc2 [ff, h]. */
static int32_t
tf_mlp(as_pbuild *b, const char *scope, int32_t x, const char *act, int bias)
{
    const as_preset_cfg *c = b->cfg;
    int64_t h = c->hidden, ff = c->ffn > 0 ? c->ffn : 4 * c->hidden;
    char sc[200], an[200];

    snprintf(sc, sizeof sc, "%s.fc1", scope);
    x = as_preset_i_linear(b, sc, x, h, ff, bias);
    snprintf(an, sizeof an, "%s.%s", scope, act);
    x = as_preset_i_op1(b, act, x, an);
    snprintf(sc, sizeof sc, "%s.fc2", scope);
    return as_preset_i_linear(b, sc, x, ff, h, bias);
}

/* Learned position embeddings: the first S rows of a [max_pos, h] table. */
static int32_t
tf_positions(as_pbuild *b, const char *table)
{
    const as_preset_cfg *c = b->cfg;
    int64_t rows = c->max_pos > c->seq ? c->max_pos : c->seq;
    int64_t begin[2] = {0, 0}, end[2] = {c->seq, c->hidden};
    as_attr a[2];
    int32_t w;

    w = as_preset_i_param(b, AS_DIMS(rows, c->hidden), "%s", table);
    if (rows == c->seq)
        return w;
    a[0] = AS_ATTR_V("begin", 2, begin);
    a[1] = AS_ATTR_V("end", 2, end);
    return as_preset_i_op(b, "slice", &w, 1, a, 2, "emb.pos");
}

/* logits = X · TABLE^T (tied embedding), named NAME. */
static int32_t
tf_tied_logits(as_pbuild *b, int32_t x, int32_t table, const char *name)
{
    int32_t in[2] = {x, table};
    as_attr a = AS_ATTR_I("transpose_b", 1);

    return as_preset_i_op(b, "matmul", in, 2, &a, 1, "%s", name);
}

static void
tf_loss_output(as_pbuild *b, int32_t loss)
{
    if (b->rc == AS_OK && loss >= 0)
        as_graph_mark_output(b->g, loss);
}

/* GPT-2 / GPT-3 block (pre-LN): x + attn(ln1(x)), then + mlp(ln2(x)). */
static int32_t
gpt_block(as_pbuild *b, int l, int32_t x, int32_t mask)
{
    const as_preset_cfg *c = b->cfg;
    char sc[64], at[64];
    int32_t y;
    tf_attn a;

    snprintf(sc, sizeof sc, "h.%d.ln1", l);
    y = as_preset_i_layernorm(b, sc, x, c->hidden);
    snprintf(at, sizeof at, "h.%d.attn", l);
    a = (tf_attn){.scope = at, .x = y, .kv = y, .sq = c->seq, .sk = c->seq, .mask = mask,
                  .bias = 1, .scale = 1};
    y = tf_attention(b, &a);
    snprintf(sc, sizeof sc, "h.%d.res1", l);
    x = as_preset_i_op2(b, "add", x, y, sc);
    snprintf(sc, sizeof sc, "h.%d.ln2", l);
    y = as_preset_i_layernorm(b, sc, x, c->hidden);
    snprintf(sc, sizeof sc, "h.%d.mlp", l);
    y = tf_mlp(b, sc, y, "gelu", 1);
    snprintf(sc, sizeof sc, "h.%d.res2", l);
    return as_preset_i_op2(b, "add", x, y, sc);
}

void
as_preset_i_build_gpt(as_pbuild *b)
{
    const as_preset_cfg *c = b->cfg;
    int32_t ids, labels, wte, x, mask;
    int l;

    ids = as_preset_i_input(b, AS_DT_I32, 0, AS_DIMS(c->batch, c->seq), "ids");
    labels = as_preset_i_input(b, AS_DT_I32, 0, AS_DIMS(c->batch, c->seq), "labels");
    wte = as_preset_i_param(b, AS_DIMS(c->vocab, c->hidden), "wte");
    x = as_preset_i_op2(b, "embedding", wte, ids, "emb.tok");
    x = as_preset_i_op2(b, "add", x, tf_positions(b, "wpe"), "emb");
    mask = as_preset_i_const(b, AS_DIMS(c->seq, c->seq), "causal_mask");
    for (l = 0; l < c->layers && b->rc == AS_OK; l++)
        x = gpt_block(b, l, x, mask);
    x = as_preset_i_layernorm(b, "ln_f", x, c->hidden);
    x = tf_tied_logits(b, x, wte, "logits");
    tf_loss_output(b, as_preset_i_op2(b, "cross_entropy", x, labels, "loss"));
}

/* BERT block (post-LN): ln1(x + attn(x)), then ln2(x + mlp(x)). */
static int32_t
bert_block(as_pbuild *b, int l, int32_t x)
{
    const as_preset_cfg *c = b->cfg;
    char sc[64], at[64];
    int32_t y;
    tf_attn a;

    snprintf(at, sizeof at, "h.%d.attn", l);
    a = (tf_attn){.scope = at, .x = x, .kv = x, .sq = c->seq, .sk = c->seq, .mask = -1,
                  .bias = 1, .scale = 1};
    y = tf_attention(b, &a);
    snprintf(sc, sizeof sc, "h.%d.res1", l);
    x = as_preset_i_op2(b, "add", x, y, sc);
    snprintf(sc, sizeof sc, "h.%d.ln1", l);
    x = as_preset_i_layernorm(b, sc, x, c->hidden);
    snprintf(sc, sizeof sc, "h.%d.mlp", l);
    y = tf_mlp(b, sc, x, "gelu", 1);
    snprintf(sc, sizeof sc, "h.%d.res2", l);
    x = as_preset_i_op2(b, "add", x, y, sc);
    snprintf(sc, sizeof sc, "h.%d.ln2", l);
    return as_preset_i_layernorm(b, sc, x, c->hidden);
}

/* BERT pre-training heads: MLM on every token, NSP on the pooled first token. */
static int32_t
bert_heads(as_pbuild *b, int32_t x, int32_t wte)
{
    const as_preset_cfg *c = b->cfg;
    int64_t begin[3] = {0, 0, 0}, end[3] = {c->batch, 1, c->hidden};
    int64_t flat[2] = {c->batch, c->hidden};
    int32_t labels, nsp_labels, m, p, in[2];
    as_attr a[2];

    labels = as_preset_i_input(b, AS_DT_I32, 0, AS_DIMS(c->batch, c->seq), "labels");
    nsp_labels = as_preset_i_input(b, AS_DT_I32, 0, AS_DIMS(c->batch), "nsp_labels");
    m = as_preset_i_linear(b, "mlm.dense", x, c->hidden, c->hidden, 1);
    m = as_preset_i_op1(b, "gelu", m, "mlm.gelu");
    m = as_preset_i_layernorm(b, "mlm.ln", m, c->hidden);
    in[0] = tf_tied_logits(b, m, wte, "mlm.logits.mm");
    in[1] = as_preset_i_param(b, AS_DIMS(c->vocab), "mlm.logits.b");
    m = as_preset_i_op(b, "bias_add", in, 2, NULL, 0, "mlm.logits");
    m = as_preset_i_op2(b, "cross_entropy", m, labels, "mlm.loss");
    a[0] = AS_ATTR_V("begin", 3, begin);
    a[1] = AS_ATTR_V("end", 3, end);
    p = as_preset_i_op(b, "slice", &x, 1, a, 2, "pooler.first");
    a[0] = AS_ATTR_V("shape", 2, flat);
    p = as_preset_i_op(b, "reshape", &p, 1, a, 1, "pooler.cls");
    p = as_preset_i_linear(b, "pooler.dense", p, c->hidden, c->hidden, 1);
    p = as_preset_i_op1(b, "tanh", p, "pooler");
    p = as_preset_i_linear(b, "nsp", p, c->hidden, 2, 1);
    p = as_preset_i_op2(b, "cross_entropy", p, nsp_labels, "nsp.loss");
    return as_preset_i_op2(b, "add", m, p, "loss");
}

void
as_preset_i_build_bert(as_pbuild *b)
{
    const as_preset_cfg *c = b->cfg;
    int32_t ids, types, wte, wtt, x;
    int l;

    ids = as_preset_i_input(b, AS_DT_I32, 0, AS_DIMS(c->batch, c->seq), "ids");
    types = as_preset_i_input(b, AS_DT_I32, 0, AS_DIMS(c->batch, c->seq), "type_ids");
    wte = as_preset_i_param(b, AS_DIMS(c->vocab, c->hidden), "wte");
    wtt = as_preset_i_param(b, AS_DIMS(2, c->hidden), "wtt");
    x = as_preset_i_op2(b, "embedding", wte, ids, "emb.tok");
    x = as_preset_i_op2(b, "add", x, tf_positions(b, "wpe"), "emb.tokpos");
    x = as_preset_i_op2(b, "add", x, as_preset_i_op2(b, "embedding", wtt, types, "emb.type"),
                        "emb");
    x = as_preset_i_layernorm(b, "emb.ln", x, c->hidden);
    for (l = 0; l < c->layers && b->rc == AS_OK; l++)
        x = bert_block(b, l, x);
    tf_loss_output(b, bert_heads(b, x, wte));
}

/* T5 layer norm: RMSNorm with a scale only. */
static int32_t
t5_norm(as_pbuild *b, const char *scope, int32_t x)
{
    int32_t in[2];

    in[0] = x;
    in[1] = as_preset_i_param(b, AS_DIMS(b->cfg->hidden), "%s.g", scope);
    return as_preset_i_op(b, "rmsnorm", in, 2, NULL, 0, "%s", scope);
}

/* One T5 sub-layer: x + attn(norm(x)) (self when KV < 0, else cross-attention to KV). */
static int32_t
t5_attn_sublayer(as_pbuild *b, const char *pre, const char *name, int32_t x, int32_t kv,
                 int32_t mask)
{
    const as_preset_cfg *c = b->cfg;
    char sc[64], at[64];
    int32_t y;
    tf_attn a;

    snprintf(sc, sizeof sc, "%s.%s.ln", pre, name);
    y = t5_norm(b, sc, x);
    snprintf(at, sizeof at, "%s.%s", pre, name);
    a = (tf_attn){.scope = at, .x = y, .kv = kv >= 0 ? kv : y, .sq = c->seq, .sk = c->seq,
                  .mask = mask, .bias = 0, .scale = 0};
    y = tf_attention(b, &a);
    snprintf(sc, sizeof sc, "%s.%s.res", pre, name);
    return as_preset_i_op2(b, "add", x, y, sc);
}

static int32_t
t5_ff_sublayer(as_pbuild *b, const char *pre, int32_t x)
{
    char sc[64];
    int32_t y;

    snprintf(sc, sizeof sc, "%s.mlp.ln", pre);
    y = t5_norm(b, sc, x);
    snprintf(sc, sizeof sc, "%s.mlp", pre);
    y = tf_mlp(b, sc, y, "relu", 0);
    snprintf(sc, sizeof sc, "%s.mlp.res", pre);
    return as_preset_i_op2(b, "add", x, y, sc);
}

void
as_preset_i_build_t5(as_pbuild *b)
{
    const as_preset_cfg *c = b->cfg;
    int32_t ids, dec_ids, labels, shared, x, y, mask;
    char pre[32];
    as_attr a;
    int l;

    ids = as_preset_i_input(b, AS_DT_I32, 0, AS_DIMS(c->batch, c->seq), "ids");
    dec_ids = as_preset_i_input(b, AS_DT_I32, 0, AS_DIMS(c->batch, c->seq), "dec_ids");
    labels = as_preset_i_input(b, AS_DT_I32, 0, AS_DIMS(c->batch, c->seq), "labels");
    shared = as_preset_i_param(b, AS_DIMS(c->vocab, c->hidden), "shared");
    x = as_preset_i_op2(b, "embedding", shared, ids, "enc.emb");
    for (l = 0; l < c->layers && b->rc == AS_OK; l++) {
        snprintf(pre, sizeof pre, "enc.%d", l);
        x = t5_attn_sublayer(b, pre, "attn", x, -1, -1);
        x = t5_ff_sublayer(b, pre, x);
    }
    x = t5_norm(b, "enc.ln_f", x);
    mask = as_preset_i_const(b, AS_DIMS(c->seq, c->seq), "causal_mask");
    y = as_preset_i_op2(b, "embedding", shared, dec_ids, "dec.emb");
    for (l = 0; l < c->layers && b->rc == AS_OK; l++) {
        snprintf(pre, sizeof pre, "dec.%d", l);
        y = t5_attn_sublayer(b, pre, "attn", y, -1, mask);
        y = t5_attn_sublayer(b, pre, "xattn", y, x, -1);
        y = t5_ff_sublayer(b, pre, y);
    }
    y = t5_norm(b, "dec.ln_f", y);
    /* Tied output layer: T5 rescales by d_model^-0.5 before the shared embedding. */
    a = AS_ATTR_F("factor", 1.0 / sqrt((double)c->hidden));
    y = as_preset_i_op(b, "scale", &y, 1, &a, 1, "dec.scaled");
    y = tf_tied_logits(b, y, shared, "logits");
    tf_loss_output(b, as_preset_i_op2(b, "cross_entropy", y, labels, "loss"));
}
