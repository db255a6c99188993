/* recompute.c -- activation recomputation as a graph rewrite (DESIGN.md
 * "Training step").
 *
 * A training step's backward ops read forward activations; the rewrite
 * gives the backward ops of each layer (ops named SEG.N..., the first
 * "SEG.N." of the name) copies of those activations recomputed from the
 * layer's kept inputs, emitted as backward ops ("rc.NAME") just before the
 * layer's first backward reader.  The originals then die in the forward
 * pass.  Full recomputation (Megatron) recomputes every forward op of the
 * layer that the backward needs, keeping only the layer's inputs;
 * selective recomputation (Korthikanti et al. 2022) recomputes only the
 * attention core: ops whose output ends in two equal dims (scores and
 * probabilities [.., S, S]), from their kept inputs (q, k, v).  Because the
 * rewrite is a graph, the ILP (costs, liveness rows) and the simulator
 * (lowering) see the same recomputation, time and bytes.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

const char *
as_recompute_name(as_recompute m)
{
    return m == AS_RECOMPUTE_FULL        ? "full"
           : m == AS_RECOMPUTE_SELECTIVE ? "selective"
           : m == AS_RECOMPUTE_AUTO      ? "auto"
                                         : "none";
}

int
as_recompute_parse(const char *s, as_recompute *out)
{
    if (strcmp(s, "none") == 0)
        *out = AS_RECOMPUTE_NONE;
    else if (strcmp(s, "full") == 0)
        *out = AS_RECOMPUTE_FULL;
    else if (strcmp(s, "selective") == 0)
        *out = AS_RECOMPUTE_SELECTIVE;
    else if (strcmp(s, "auto") == 0)
        *out = AS_RECOMPUTE_AUTO;
    else
        return 0;
    return 1;
}

size_t
as_graph_layer_key(const char *name, size_t *start)
{
    const char *p = name;

    while (*p) {
        const char *seg = p, *dot = strchr(p, '.'), *q;
        if (dot == NULL)
            return 0;
        q = dot + 1;
        if (dot > seg && isdigit((unsigned char)*q)) {
            while (isdigit((unsigned char)*q))
                q++;
            if (*q == '.') {
                *start = (size_t)(seg - name);
                return (size_t)(q - seg);
            }
        }
        p = dot + 1;
    }
    return 0;
}

/* Does op O's layer key equal KEY (LEN bytes)? */
static int
rc_same_layer(const as_graph *g, int32_t o, const char *key, size_t len)
{
    size_t st, n = as_graph_layer_key(g->ops.v[o].name, &st);

    return n == len && memcmp(g->ops.v[o].name + st, key, len) == 0;
}

/* Is the layer key KEY (LEN bytes) in the comma-separated list LAYERS (NULL = every layer)? */
static int
rc_listed(const char *layers, const char *key, size_t len)
{
    const char *p = layers;

    if (layers == NULL)
        return 1;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e != NULL ? (size_t)(e - p) : strlen(p);
        if (n == len && memcmp(p, key, len) == 0)
            return 1;
        if (e == NULL)
            break;
        p = e + 1;
    }
    return 0;
}

static int
rc_fwd(const as_op *op)
{
    return !(op->flags & (AS_OF_BACKWARD | AS_OF_OPTIMIZER));
}

/* Attention core: an output of rank >= 3 whose last two dims are equal and > 1. */
static int
rc_core(const as_graph *g, const as_op *op)
{
    const as_shape *s = &g->tensors.v[op->out[0]].shape;

    return s->rank >= 3 && s->dim[s->rank - 1] == s->dim[s->rank - 2] && s->dim[s->rank - 1] > 1;
}

/* Does op O (backward, or a copy) read the copy of needed op P's outputs: same layer? */
static int
rc_uses_copy(const as_graph *g, const as_op *o, int32_t p)
{
    size_t st, len = as_graph_layer_key(o->name, &st);

    return len > 0 && rc_same_layer(g, p, o->name + st, len);
}

/* Append KEY (LEN bytes) to the comma-separated list *S (LEN_, CAP bytes) unless listed. */
static void
rc_list_add(char **s, size_t *len, size_t *cap, const char *key, size_t n, int *count)
{
    if (rc_listed(*s, key, n))
        return;
    while (*len + n + 2 > *cap) {
        *cap *= 2;
        *s = as_xrealloc(*s, *cap);
    }
    if (*len > 0)
        (*s)[(*len)++] = ',';
    memcpy(*s + *len, key, n);
    *len += n;
    (*s)[*len] = 0;
    (*count)++;
}

char *
as_graph_layer_list(const as_graph *g, const as_graph *rc, int *n)
{
    size_t i, len = 0, cap = 64, rlen = 0, rcap = 64;
    char *s = as_xmalloc(cap), *r = NULL;
    int nr = 0;

    *s = 0;
    *n = 0;
    if (rc != NULL) { /* the layers with a recomputed op "rc.NAME" */
        r = as_xmalloc(rcap);
        *r = 0;
        for (i = 0; i < rc->ops.n; i++) {
            const char *name = rc->ops.v[i].name;
            size_t st, k = strncmp(name, "rc.", 3) == 0 ? as_graph_layer_key(name + 3, &st) : 0;
            if (k > 0)
                rc_list_add(&r, &rlen, &rcap, name + 3 + st, k, &nr);
        }
    }
    for (i = 0; i < g->ops.n; i++) {
        const as_op *op = &g->ops.v[i];
        size_t st, k = as_graph_layer_key(op->name, &st);
        if (k == 0 || !rc_fwd(op) || (r != NULL && !rc_listed(r, op->name + st, k)))
            continue;
        rc_list_add(&s, &len, &cap, op->name + st, k, n);
    }
    free(r);
    return s;
}

int
as_graph_recompute(const as_graph *g, as_recompute mode, const char *layers, as_graph **out,
                   int *nlayers, as_err *err)
{
    size_t nops = g->ops.n, nt = g->tensors.n, i;
    uint8_t *cand = as_xcalloc(nops + 1, 1), *need = as_xcalloc(nops + 1, 1);
    int32_t *at = as_xmalloc((nops + 1) * sizeof *at);     /* insertion point of op's copy */
    int32_t *leader = as_xmalloc((nops + 1) * sizeof *leader); /* first needed op of its layer */
    int32_t *map = as_xmalloc((nt + 1) * sizeof *map), *rmap = as_xmalloc((nt + 1) * sizeof *rmap);
    int32_t *ins = NULL;
    as_graph *m = NULL;
    int rc = AS_OK, any_layer = 0, nl = 0;
    int64_t o;

    *out = NULL;
    for (i = 0; i < nt; i++)
        map[i] = rmap[i] = -1;
    /* candidates: forward ops in a layer (selective: attention-core ops) */
    for (i = 0; i < nops; i++) {
        size_t st = 0, klen;
        const as_op *op = &g->ops.v[i];
        at[i] = leader[i] = -1;
        if (!rc_fwd(op) || op->nout == 0 || (klen = as_graph_layer_key(op->name, &st)) == 0)
            continue;
        any_layer = 1;
        cand[i] = (mode == AS_RECOMPUTE_FULL || mode == AS_RECOMPUTE_AUTO ||
                   (mode == AS_RECOMPUTE_SELECTIVE && rc_core(g, op))) &&
                  rc_listed(layers, op->name + st, klen);
    }
    if (!any_layer) {
        rc = as_errf(err, AS_EUSAGE, "--recompute %s: graph '%s' has no layers (ops named "
                     "SEG.N..., such as h.3.attn.q)", as_recompute_name(mode), g->name);
        goto out;
    }
    /* needed: a candidate with an output a backward op reads, or that a needed candidate of
     * the same layer reads (reverse program order closes the set) */
    for (o = (int64_t)nops - 1; o >= 0; o--) {
        const as_op *op = &g->ops.v[o];
        size_t j;
        int k;
        if (!(op->flags & AS_OF_BACKWARD) && !(rc_fwd(op) && need[o]))
            continue;
        for (k = 0; k < op->nin; k++) {
            int32_t p = g->tensors.v[op->in[k]].producer;
            size_t st, len;
            if (p < 0 || !cand[p])
                continue;
            len = as_graph_layer_key(op->name, &st);
            if (len == 0 || !rc_same_layer(g, p, op->name + st, len))
                continue; /* another layer's backward keeps reading the original */
            need[p] = 1;
        }
        (void)j;
    }
    /* the insertion point of each layer: its first backward op reading a needed output */
    for (i = 0; i < nops; i++) {
        const as_op *op = &g->ops.v[i];
        int k;
        if (!(op->flags & AS_OF_BACKWARD))
            continue;
        for (k = 0; k < op->nin; k++) {
            int32_t p = g->tensors.v[op->in[k]].producer;
            size_t st, len;
            int64_t q;
            if (p < 0 || !need[p] || at[p] >= 0 || !rc_uses_copy(g, op, p))
                continue;
            /* every needed op of P's layer is copied before op I */
            len = as_graph_layer_key(g->ops.v[p].name, &st);
            nl++;
            for (q = 0; q < (int64_t)nops; q++)
                if (need[q] && at[q] < 0 && rc_same_layer(g, (int32_t)q, g->ops.v[p].name + st, len))
                    at[q] = (int32_t)i;
        }
    }
    if (nl == 0) {
        rc = as_errf(err, AS_EUSAGE, "--recompute %s: nothing to recompute in graph '%s' (%s)",
                     as_recompute_name(mode), g->name,
                     mode == AS_RECOMPUTE_SELECTIVE ? "no attention core: no op of a layer "
                                                      "outputs [.., S, S] for the backward"
                                                    : "no backward pass reads a layer's "
                                                      "activations: is it a training step?");
        goto out;
    }
    /* rebuild: tensors in id order, copies before their insertion point */
    m = as_graph_new(g->name);
    ins = as_xmalloc(((size_t)AS_MAX_OUTS + 4096) * sizeof *ins);
    for (i = 0; i < nt && rc == AS_OK; i++) {
        const as_tensor *gt = &g->tensors.v[i];
        const as_op *op;
        const char *names[AS_MAX_OUTS];
        int32_t id, *src;
        int k, pass;
        size_t q;
        if (gt->producer < 0) {
            rc = as_graph_add_tensor(m, gt->name, &gt->shape, gt->kind, gt->batch_dim, &id, err);
            map[i] = id;
            continue;
        }
        op = &g->ops.v[gt->producer];
        if (op->out[0] != (int32_t)i)
            continue;
        /* copies whose insertion point is this op, in program order, then the op */
        for (pass = 0; pass < 2 && rc == AS_OK; pass++) {
            for (q = 0; q < (pass == 0 ? nops : 1) && rc == AS_OK; q++) {
                const as_op *c = pass == 0 ? &g->ops.v[q] : op;
                char nb[AS_MAX_OUTS][512];
                if (pass == 0 && at[q] != gt->producer)
                    continue;
                if (c->nin > 4096) {
                    rc = as_errf(err, AS_EUSAGE, "op '%s': too many inputs", c->name);
                    break;
                }
                for (k = 0; k < c->nin; k++) {
                    int32_t t = c->in[k], p = g->tensors.v[t].producer;
                    int use_copy = p >= 0 && need[p] && rmap[t] >= 0 &&
                                   (pass == 0 || ((c->flags & AS_OF_BACKWARD) &&
                                                  rc_uses_copy(g, c, p)));
                    ins[k] = use_copy ? rmap[t] : map[t];
                }
                for (k = 0; k < c->nout; k++) {
                    if (pass == 0) {
                        snprintf(nb[k], sizeof nb[k], "rc.%s", g->tensors.v[c->out[k]].name);
                        names[k] = as_graph_fresh_name(m, nb[k]);
                    } else {
                        names[k] = g->tensors.v[c->out[k]].name;
                    }
                }
                rc = as_graph_add_op(m, c->def->name, names, c->nout, ins, c->nin, c->attr,
                                     c->nattr, &id, err);
                if (rc != AS_OK)
                    break;
                as_graph_op_meta(m, id, pass == 0 ? AS_OF_BACKWARD : c->flags,
                                 pass == 0 ? 0 : c->line);
                for (k = 0; k < c->nout; k++)
                    (pass == 0 ? rmap : map)[c->out[k]] = m->ops.v[id].out[k];
            }
        }
        (void)src;
    }
    for (i = 0; i < nt && rc == AS_OK; i++) {
        const as_tensor *gt = &g->tensors.v[i];
        int32_t t = map[i];
        m->tensors.v[t].line = gt->line;
        if (gt->kind == AS_TK_STATE && gt->of >= 0)
            rc = as_graph_set_state_of(m, t, map[gt->of], err);
        if (rc == AS_OK && (gt->kind == AS_TK_PARAM || gt->kind == AS_TK_STATE) && gt->update >= 0)
            rc = as_graph_set_update(m, t, map[gt->update], err);
        if (gt->flags & AS_TF_GRAD)
            as_graph_tensor_flag(m, t, AS_TF_GRAD, gt->of >= 0 ? map[gt->of] : -1);
    }
    for (i = 0; i < g->outputs.n; i++)
        as_graph_mark_output(m, map[g->outputs.v[i]]);
    if (rc == AS_OK) {
        *out = m;
        m = NULL;
        if (nlayers != NULL)
            *nlayers = nl;
    }
out:
    as_graph_free(m);
    free(ins);
    free(cand);
    free(need);
    free(at);
    free(leader);
    free(map);
    free(rmap);
    return rc;
}
