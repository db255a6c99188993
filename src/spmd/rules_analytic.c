/* rules_analytic.c -- sharding rules derived by hand, for ops whose rule
 * depends on a global argument or position (reshape, slice, split,
 * dynamic_slice, ...), ops without inputs (zeros, iota, fill), and
 * replicate-only sets for ops that cannot be run (opaque, collectives).
 *
 * Reshape: input and output dims are cut into the shortest segments with
 * equal products ([B,S,H] -> [B,S,nh,hd]: {B}={B}, {S}={S}, {H}={nh,hd}).
 * Cutting a segment's flattened elements into n contiguous chunks is the
 * same as splitting its leading input dim and its leading output dim into n,
 * so that pair is a rule (gather along the output dim) whenever the two
 * sizes share a factor >= 2; the strategy layer checks that n divides both.
 * Inner dims of a merged segment (S in [B,S] -> [B*S]) cannot split.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "rules.h"

static int64_t
an_gcd(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* A rule splitting input J along IN_DIM and gathering every output along OUT_DIM. */
static void
an_add_gather(as_rule_set *set, int j, int in_dim, int out_dim)
{
    int8_t *g = as_xmalloc((size_t)set->nin + 1);
    as_combine c[AS_MAX_OUTS];
    int k;

    memset(g, -1, (size_t)set->nin + 1);
    g[j] = (int8_t)in_dim;
    for (k = 0; k < set->nout; k++) {
        c[k].kind = AS_COMBINE_GATHER;
        c[k].dim = out_dim;
    }
    as_rules_i_set_add(set, g, c, 0);
    free(g);
}

/* concat along AXIS, for instances with more inputs than discovery takes (ShardCombine finds
 * the same rules on smaller ones; test_rules compares): a dim other than AXIS that every
 * input has with one size >= 2 splits in all inputs together and gathers; AXIS itself, when
 * every input has the same size >= 2 along it, splits in all inputs and recombines block by
 * block. */
static void
an_concat(const as_opinfo *info, as_rule_set *set)
{
    int64_t ax = as_attr_int(info->attr, info->nattr, "axis", 0);
    int rank = info->in[0].rank, axis = (int)(ax < 0 ? ax + rank : ax), d, j;
    int8_t *g = as_xmalloc((size_t)info->nin + 1);
    as_combine c;

    for (d = 0; d < rank; d++) {
        int64_t s = info->in[0].dim[d];
        for (j = 1; j < info->nin && s >= 2; j++)
            if (info->in[j].rank != rank || info->in[j].dim[d] != s)
                s = 0;
        if (s < 2)
            continue;
        memset(g, (int8_t)d, (size_t)info->nin);
        c.kind = d == axis ? AS_COMBINE_BLOCK : AS_COMBINE_GATHER;
        c.dim = d;
        as_rules_i_set_add(set, g, &c, 0);
    }
    free(g);
}

static void
an_reshape(const as_opinfo *info, as_rule_set *set)
{
    const as_shape *a = &info->in[0], *b = &info->out[0];
    int i = 0, j = 0;

    if (as_shape_numel(a) != as_shape_numel(b))
        return;
    while (i < a->rank && j < b->rank) {
        int i0, j0;
        int64_t pa, pb;
        if (a->dim[i] == 1) {
            i++;
            continue;
        }
        if (b->dim[j] == 1) {
            j++;
            continue;
        }
        i0 = i;
        j0 = j;
        pa = a->dim[i++];
        pb = b->dim[j++];
        while (pa != pb) {
            if (pa < pb && i < a->rank)
                pa *= a->dim[i++];
            else if (pb < pa && j < b->rank)
                pb *= b->dim[j++];
            else
                return;
        }
        if (an_gcd(a->dim[i0], b->dim[j0]) >= 2)
            an_add_gather(set, 0, i0, j0);
    }
}

/* slice (x; begin end strides) and slice_grad (dy; input_shape begin end strides). */
static void
an_slice(const as_opinfo *info, as_rule_set *set, int grad)
{
    const int64_t *beg, *end, *st, *ishape = NULL;
    int nb = as_attr_ints(info->attr, info->nattr, "begin", &beg);
    int ne = as_attr_ints(info->attr, info->nattr, "end", &end);
    int ns = as_attr_ints(info->attr, info->nattr, "strides", &st);
    int ni = grad ? as_attr_ints(info->attr, info->nattr, "input_shape", &ishape) : 0;
    const as_shape *x = &info->in[0];
    int d;

    for (d = 0; d < x->rank; d++) {
        int64_t full = grad ? (d < ni ? ishape[d] : -1) : x->dim[d];
        if (d >= nb || d >= ne || beg[d] != 0 || end[d] != full || x->dim[d] != full)
            continue;
        if (d < ns && st[d] != 1)
            continue;
        if (full >= 2)
            an_add_gather(set, 0, d, d);
    }
}

static void
an_split(const as_opinfo *info, as_rule_set *set)
{
    int axis = 0, d;
    int64_t ax = as_attr_int(info->attr, info->nattr, "axis", 0);

    axis = (int)(ax < 0 ? ax + info->in[0].rank : ax);
    for (d = 0; d < info->in[0].rank; d++)
        if (d != axis && info->in[0].dim[d] >= 2)
            an_add_gather(set, 0, d, d);
}

/* dynamic_slice: dims taken whole; dynamic_update_slice: dims the update covers whole. */
static void
an_dynamic(const as_opinfo *info, as_rule_set *set, int update)
{
    const as_shape *x = &info->in[0];
    const int64_t *sz = NULL;
    int n = update ? 0 : as_attr_ints(info->attr, info->nattr, "sizes", &sz), d;
    int8_t g[AS_MAX_RANK + 2]; /* dynamic_slice takes 1 + rank inputs, the update 2 + rank */
    as_combine c;

    if (info->nin > (int)sizeof g)
        return;
    for (d = 0; d < x->rank; d++) {
        int64_t want = update ? info->in[1].dim[d] : (d < n ? sz[d] : -1);
        if (want != x->dim[d] || x->dim[d] < 2)
            continue;
        memset(g, -1, sizeof g);
        g[0] = (int8_t)d;
        if (update)
            g[1] = (int8_t)d;
        c.kind = AS_COMBINE_GATHER;
        c.dim = d;
        as_rules_i_set_add(set, g, &c, 0);
    }
}

/* Ops without inputs: every device makes its own slice of the output. */
static void
an_source(const as_opinfo *info, as_rule_set *set)
{
    as_combine c[AS_MAX_OUTS];
    int d, k;

    if (info->nout < 1)
        return;
    for (d = 0; d < info->out[0].rank; d++) {
        if (info->out[0].dim[d] < 2)
            continue;
        for (k = 0; k < info->nout; k++) {
            c[k].kind = AS_COMBINE_IDENTITY;
            c[k].dim = d < info->out[k].rank ? d : -1;
        }
        as_rules_i_set_add(set, NULL, c, 0);
    }
}

int
as_rules_i_analytic(const as_opinfo *info, const char *key, as_rule_set **out, as_err *err)
{
    const as_op_def *def = info->def;
    const char *name = def->name, *why = NULL;
    as_rule_set *set;

    (void)err;
    *out = NULL;
    if (def->flags & AS_OPF_COLLECTIVE)
        why = "a collective already present in the graph";
    else if (def->flags & AS_OPF_OPAQUE)
        why = "opaque op";
    else if (def->kernel == NULL)
        why = "no reference kernel";
    if (why != NULL) {
        set = as_rules_i_set_new(key, info->nin, info->nout, AS_RULES_ANALYTIC);
        as_rules_i_set_why(set, why);
        as_rules_i_set_finish(set);
        *out = set;
        return AS_OK;
    }
    set = as_rules_i_set_new(key, info->nin, info->nout, AS_RULES_ANALYTIC);
    if (info->nin == 0)
        an_source(info, set);
    else if ((def->flags & AS_OPF_RESHAPE) && info->nin == 1 && info->nout == 1)
        an_reshape(info, set);
    else if (strcmp(name, "slice") == 0)
        an_slice(info, set, 0);
    else if (strcmp(name, "slice_grad") == 0)
        an_slice(info, set, 1);
    else if (strcmp(name, "split") == 0)
        an_split(info, set);
    else if (strcmp(name, "dynamic_slice") == 0)
        an_dynamic(info, set, 0);
    else if (strcmp(name, "dynamic_update_slice") == 0 && info->nin >= 2 &&
             info->in[1].rank == info->in[0].rank)
        an_dynamic(info, set, 1);
    else if (def->flags & AS_OPF_RESHAPE)
        as_rules_i_set_why(set, "reshape-like op of unexpected arity");
    else if (strcmp(name, "concat") == 0 && info->nin > AS_RULES_DISCOVER_MAX_IN && info->nout == 1)
        an_concat(info, set);
    else if (info->nin > AS_RULES_DISCOVER_MAX_IN) {
        static int warned; /* once per process: names the first such op type */
        if (!warned++)
            as_warn("rules: %s with %d inputs (discovery takes at most %d): replicated",
                    name, info->nin, AS_RULES_DISCOVER_MAX_IN);
        as_rules_i_set_why(set, "more inputs than rule discovery takes");
    }
    else {
        as_rules_set_free(set);
        return AS_OK; /* discovered */
    }
    as_rules_i_set_finish(set);
    *out = set;
    return AS_OK;
}
