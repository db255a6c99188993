/* presets_misc.c -- the synthetic benchmarks: a deep MLP (DistIR/Alpa-style
 * square layers) and a dense graph attention network.
 *
 * MLP: x [B, h] through L layers of matmul [h, h] + bias + relu, then an
 * MSE loss against a target y [B, h].
 *
 * GAT (Velickovic et al. 2018) on N nodes with a dense adjacency: per layer
 * Wh = X · W [h, h], split into heads [nh, N, hd]; attention logits are the
 * sum of a source and a destination projection (per head [hd, 1]),
 * broadcast [nh, N, 1] + [nh, 1, N]; leaky relu as max(e, 0.2 e); the
 * adjacency enters as an additive mask constant [N, N] (0 / -1e9); softmax
 * over neighbours; the context is softmax · Wh, merged back to [N, h], with
 * a relu between layers (GAT uses ELU; the cost is the same) and an MSE loss
 * against target features at the end.  The node dimension is not a batch
 * dimension (every node attends to every other), so inputs have none.
 */
#include "config.h"

#include <stdio.h>

#include "presets_internal.h"

void
as_preset_i_build_mlp(as_pbuild *b)
{
    const as_preset_cfg *c = b->cfg;
    int32_t x, y;
    char sc[32];
    int l;

    x = as_preset_i_input(b, b->dt, 0, AS_DIMS(c->batch, c->hidden), "x");
    y = as_preset_i_input(b, b->dt, 0, AS_DIMS(c->batch, c->hidden), "y");
    for (l = 0; l < c->layers && b->rc == AS_OK; l++) {
        snprintf(sc, sizeof sc, "h.%d.fc", l);
        x = as_preset_i_linear(b, sc, x, c->hidden, c->hidden, 1);
        snprintf(sc, sizeof sc, "h.%d.relu", l);
        x = as_preset_i_op1(b, "relu", x, sc);
    }
    x = as_preset_i_op2(b, "mse_loss", x, y, "loss");
    if (b->rc == AS_OK)
        as_graph_mark_output(b->g, x);
}

/* One GAT layer SCOPE ("h.2") on X [N, h]; returns [N, h]. */
static int32_t
gat_layer(as_pbuild *b, const char *scope, int32_t x, int32_t adj)
{
    const as_preset_cfg *c = b->cfg;
    int64_t n = c->batch, h = c->hidden, nh = c->heads, hd = h / nh;
    int64_t split[3] = {n, nh, hd}, merged[2] = {n, h};
    static const int64_t perm[3] = {1, 0, 2}, swap[3] = {0, 2, 1};
    int32_t wh, src, dst, e, in[2];
    char sc[64];
    as_attr a;

    snprintf(sc, sizeof sc, "%s.proj", scope);
    wh = as_preset_i_linear(b, sc, x, h, h, 0);
    a = AS_ATTR_V("shape", 3, split);
    wh = as_preset_i_op(b, "reshape", &wh, 1, &a, 1, "%s.proj.heads", scope);
    a = AS_ATTR_V("perm", 3, perm);
    wh = as_preset_i_op(b, "transpose", &wh, 1, &a, 1, "%s.proj.t", scope);
    in[0] = wh;
    in[1] = as_preset_i_param(b, AS_DIMS(nh, hd, 1), "%s.att.src.w", scope);
    src = as_preset_i_op(b, "matmul", in, 2, NULL, 0, "%s.att.src", scope);
    in[1] = as_preset_i_param(b, AS_DIMS(nh, hd, 1), "%s.att.dst.w", scope);
    dst = as_preset_i_op(b, "matmul", in, 2, NULL, 0, "%s.att.dst", scope);
    a = AS_ATTR_V("perm", 3, swap);
    dst = as_preset_i_op(b, "transpose", &dst, 1, &a, 1, "%s.att.dst.t", scope);
    in[0] = src;
    in[1] = dst;
    e = as_preset_i_op(b, "add", in, 2, NULL, 0, "%s.att.logits", scope);
    /* Leaky relu with slope 0.2: max(e, 0.2 e). */
    a = AS_ATTR_F("factor", 0.2);
    in[0] = e;
    in[1] = as_preset_i_op(b, "scale", &e, 1, &a, 1, "%s.att.leak", scope);
    e = as_preset_i_op(b, "max", in, 2, NULL, 0, "%s.att.lrelu", scope);
    in[0] = e;
    in[1] = adj;
    e = as_preset_i_op(b, "add", in, 2, NULL, 0, "%s.att.masked", scope);
    e = as_preset_i_op(b, "softmax", &e, 1, NULL, 0, "%s.att.probs", scope);
    in[0] = e;
    in[1] = wh;
    e = as_preset_i_op(b, "matmul", in, 2, NULL, 0, "%s.att.ctx", scope);
    a = AS_ATTR_V("perm", 3, perm);
    e = as_preset_i_op(b, "transpose", &e, 1, &a, 1, "%s.att.ctx.t", scope);
    a = AS_ATTR_V("shape", 2, merged);
    return as_preset_i_op(b, "reshape", &e, 1, &a, 1, "%s.out", scope);
}

void
as_preset_i_build_gat(as_pbuild *b)
{
    const as_preset_cfg *c = b->cfg;
    int32_t x, y, adj;
    char sc[32];
    int l;

    x = as_preset_i_input(b, b->dt, -1, AS_DIMS(c->batch, c->hidden), "features");
    y = as_preset_i_input(b, b->dt, -1, AS_DIMS(c->batch, c->hidden), "target");
    adj = as_preset_i_const(b, AS_DIMS(c->batch, c->batch), "adjacency_mask");
    for (l = 0; l < c->layers && b->rc == AS_OK; l++) {
        snprintf(sc, sizeof sc, "h.%d", l);
        x = gat_layer(b, sc, x, adj);
        if (l + 1 < c->layers) {
            snprintf(sc, sizeof sc, "h.%d.act", l);
            x = as_preset_i_op1(b, "relu", x, sc);
        }
    }
    x = as_preset_i_op2(b, "mse_loss", x, y, "loss");
    if (b->rc == AS_OK)
        as_graph_mark_output(b->g, x);
}
