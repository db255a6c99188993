/* rules_examples.c -- a canonical example instance of every op type, used
 * by `autoshard rules`, the rule tests and the discovery benchmark.
 *
 * An example is text: input shapes separated by spaces, then optionally
 * "; key=value ..." attributes (lists as [a,b], no spaces).  Sizes are
 * distinct multiples of 6 taken in order (6, 12, 18, ...), so the size
 * mapping of discovery leaves them unchanged, and dims that must match
 * (matmul's k, layernorm's h) are equal.  Sizes below 6 (kernel windows)
 * are never split.  test_rules fails for any registered op without one.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "rules.h"

typedef struct ex_entry {
    const char *op;
    const char *sig;
} ex_entry;

#define EX_UNARY "f32[6,12]"
#define EX_BINARY "f32[6,12] f32[6,12]"
#define EX_TERNARY "f32[6,12] f32[6,12] f32[6,12]"

/* Sorted by op name (binary search). */
static const ex_entry ex_table[] = {
    {"abs", EX_UNARY},
    {"adam_m", EX_BINARY},
    {"adam_update", EX_TERNARY},
    {"adam_v", EX_BINARY},
    {"add", EX_BINARY},
    {"all_gather", "f32[6,12]; dim=0 group_size=2"},
    {"all_reduce", "f32[6,12]; group_size=2"},
    {"all_to_all", "f32[6,12]; dim=0 group_size=2"},
    {"avgpool2d", "f32[6,18,12,12]; kernel=[2,2]"},
    {"avgpool2d_grad", "f32[6,18,12,12]; kernel=[2,2] input_shape=[6,18,24,24]"},
    {"batchnorm", "f32[6,12,18] f32[12] f32[12]"},
    {"batchnorm_grad_gamma", "f32[6,12,18] f32[6,12,18]"},
    {"batchnorm_grad_x", "f32[6,12,18] f32[6,12,18] f32[12]"},
    {"bias_add", "f32[6,12] f32[12]"},
    {"broadcast", "f32[12]; shape=[6,12]"},
    {"cast", "f32[6,12]; dtype=i32"},
    {"clamp", EX_TERNARY},
    {"collective_permute", "f32[6,12]; group_size=2"},
    {"compare", "f32[6,12] f32[6,12]; direction=lt"},
    {"concat", "f32[6,12] f32[6,12]; axis=1"},
    {"conv2d", "f32[6,18,12,5] f32[24,18,3,3]"},
    {"conv2d_grad_input", "f32[6,24,12,5] f32[24,18,3,3]; padding=[1,1] "
                          "input_shape=[6,18,12,5]"},
    {"conv2d_grad_weight", "f32[6,24,12,5] f32[6,18,12,5]; padding=[1,1] "
                           "weight_shape=[24,18,3,3]"},
    {"conv_general", "f32[6,12,12,18] f32[3,3,18,24]; dim_labels=b01f_01io->b01f"},
    {"cross_entropy", "f32[6,12] i32[6]"},
    {"cross_entropy_grad", "f32[] f32[6,12] i32[6]; count=6"},
    {"div", EX_BINARY},
    {"dot_general", "f32[6,12,18] f32[6,18,24]; lhs_batch=[0] rhs_batch=[0] lhs_contract=[2] "
                    "rhs_contract=[1]"},
    {"dropout", EX_BINARY},
    {"dynamic_slice", "f32[6,12] i32[] i32[]; sizes=[6,4]"},
    {"dynamic_update_slice", "f32[6,12] f32[6,4] i32[] i32[]"},
    {"embedding", "f32[18,12] i32[6]"},
    {"embedding_grad", "f32[6,12] i32[6]; vocab=18"},
    {"erf", EX_UNARY},
    {"erf_grad", EX_BINARY},
    {"exp", EX_UNARY},
    {"fill", "; shape=[6,12] value=1"},
    {"gather", "f32[18,12] i32[6,1]; offset_dims=[1] collapsed_slice_dims=[0] "
               "start_index_map=[0] index_vector_dim=1 slice_sizes=[1,12]"},
    {"gelu", EX_UNARY},
    {"gelu_grad", EX_BINARY},
    {"grad_accum", "f32[6,12] bf16[6,12]"},
    {"identity", EX_UNARY},
    {"iota", "; shape=[6,12] dim=1"},
    {"layernorm", "f32[6,12] f32[12] f32[12]"},
    {"layernorm_grad_gamma", EX_BINARY},
    {"layernorm_grad_x", "f32[6,12] f32[6,12] f32[12]"},
    {"log", EX_UNARY},
    {"log_softmax", "f32[6,12]; axis=-1"},
    {"log_softmax_grad", "f32[6,12] f32[6,12]; axis=-1"},
    {"master_copy", "bf16[6,12] f32[6,12]"},
    {"matmul", "f32[6,12] f32[12,18]"},
    {"max", EX_BINARY},
    {"maxpool2d", "f32[6,18,12,12]; kernel=[2,2]"},
    {"maxpool2d_grad", "f32[6,18,12,12] f32[6,18,24,24]; kernel=[2,2]"},
    {"min", EX_BINARY},
    {"minmax_grad", EX_TERNARY},
    {"momentum_buf", EX_BINARY},
    {"momentum_update", EX_BINARY},
    {"mse_loss", EX_BINARY},
    {"mse_loss_grad", "f32[] f32[6,12] f32[6,12]; count=72"},
    {"mul", EX_BINARY},
    {"neg", EX_UNARY},
    {"one_hot", "i32[6]; depth=12"},
    {"opaque", "; hlo_op=custom-call out_dtypes=f32 out_ranks=[2] out_dims=[6,12]"},
    {"pad", "f32[6,12]; lo=[0,1] hi=[0,2]"},
    {"pow", EX_BINARY},
    {"pow_grad_a", EX_TERNARY},
    {"pow_grad_b", EX_TERNARY},
    {"reduce_max", "f32[6,12]; dims=[1]"},
    {"reduce_max_grad", "f32[6] f32[6,12] f32[6]; dims=[1]"},
    {"reduce_mean", "f32[6,12]; dims=[1]"},
    {"reduce_min", "f32[6,12]; dims=[1]"},
    {"reduce_min_grad", "f32[6] f32[6,12] f32[6]; dims=[1]"},
    {"reduce_scatter", "f32[6,12]; dim=0 group_size=2"},
    {"reduce_sum", "f32[6,12]; dims=[1]"},
    {"reduce_window", "f32[6,12]; window=[1,2] stride=[1,2]"},
    {"relu", EX_UNARY},
    {"relu_grad", EX_BINARY},
    {"reshape", "f32[6,12,24]; shape=[6,12,4,6]"},
    {"rmsnorm", "f32[6,12] f32[12]"},
    {"rmsnorm_grad_gamma", EX_BINARY},
    {"rmsnorm_grad_x", "f32[6,12] f32[6,12] f32[12]"},
    {"rsqrt", EX_UNARY},
    {"rsqrt_grad", EX_BINARY},
    {"scale", "f32[6,12]; factor=0.5"},
    {"scatter", "f32[18,12] i32[6,1] f32[6,12]; update_window_dims=[1] "
                "inserted_window_dims=[0] scatter_dims_to_operand_dims=[0] index_vector_dim=1 "
                "combine=add"},
    {"select", "pred[6,12] f32[6,12] f32[6,12]"},
    {"sgd_update", EX_BINARY},
    {"sigmoid", EX_UNARY},
    {"sigmoid_grad", EX_BINARY},
    {"sign", EX_UNARY},
    {"slice", "f32[6,12]; begin=[0,2] end=[6,10]"},
    {"slice_grad", "f32[6,8]; input_shape=[6,12] begin=[0,2] end=[6,10]"},
    {"softmax", "f32[6,12]; axis=-1"},
    {"softmax_grad", "f32[6,12] f32[6,12]; axis=-1"},
    {"split", "f32[6,12]; axis=1 parts=2"},
    {"sqrt", EX_UNARY},
    {"sqrt_grad", EX_BINARY},
    {"square", EX_UNARY},
    {"sub", EX_BINARY},
    {"tanh", EX_UNARY},
    {"tanh_grad", EX_BINARY},
    {"transpose", "f32[6,12]; perm=[1,0]"},
    {"zeros", "; shape=[6,12]"},
};

static const ex_entry *
ex_find(const char *name)
{
    int lo = 0, hi = (int)(sizeof ex_table / sizeof ex_table[0]) - 1;

    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(ex_table[mid].op, name);
        if (c == 0)
            return &ex_table[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

int
as_rules_has_example(const char *name)
{
    return ex_find(name) != NULL;
}

/* Parse one shape token "f32[6,12]" ("f32[]" is a scalar). */
static int
ex_shape(const char *tok, as_shape *s)
{
    const char *lb = strchr(tok, '['), *p;
    char *end;

    memset(s, 0, sizeof *s);
    if (lb == NULL || !as_dtype_parse(tok, (size_t)(lb - tok), &s->dtype))
        return 0;
    p = lb + 1;
    while (*p != ']') {
        if (s->rank >= AS_MAX_RANK)
            return 0;
        s->dim[s->rank++] = strtoll(p, &end, 10);
        if (end == p || (*end != ',' && *end != ']'))
            return 0;
        p = *end == ',' ? end + 1 : end;
    }
    return p[1] == '\0';
}

/* Parse one attribute token "key=value" into A (strings and lists in ARENA). */
static int
ex_attr(const char *tok, as_arena *arena, as_attr *a)
{
    const char *eq = strchr(tok, '='), *v;
    char *end;

    if (eq == NULL || eq == tok)
        return 0;
    memset(a, 0, sizeof *a);
    a->key = as_arena_strndup(arena, tok, (size_t)(eq - tok));
    v = eq + 1;
    if (*v == '[') {
        int64_t *vals = as_arena_alloc(arena, sizeof(int64_t) * AS_MAX_OUTS);
        const char *p = v + 1;
        a->kind = AS_ATTR_INTS;
        while (*p != ']') {
            if (a->n >= AS_MAX_OUTS)
                return 0;
            vals[a->n++] = strtoll(p, &end, 10);
            if (end == p || (*end != ',' && *end != ']'))
                return 0;
            p = *end == ',' ? end + 1 : end;
        }
        a->v = vals;
        return p[1] == '\0';
    }
    if ((*v >= '0' && *v <= '9') || *v == '-') {
        if (strpbrk(v, ".eE") != NULL) {
            a->kind = AS_ATTR_FLOAT;
            a->f = strtod(v, &end);
        } else {
            a->kind = AS_ATTR_INT;
            a->i = strtoll(v, &end, 10);
            a->f = (double)a->i;
        }
        return *end == '\0';
    }
    a->kind = AS_ATTR_STR;
    a->s = as_arena_strdup(arena, v);
    return 1;
}

int
as_rules_example(const as_op_def *def, as_arena *arena, as_opinfo *out, const char **text,
                 as_err *err)
{
    const ex_entry *ex = ex_find(def->name);
    as_shape *in = as_arena_calloc(arena, 64, sizeof *in), *os;
    as_attr *at = as_arena_calloc(arena, 32, sizeof *at), *bound = NULL;
    char *buf, *tok, *save = NULL;
    int nin = 0, nat = 0, nb = 0, nout = 0, attrs = 0;

    if (ex == NULL)
        return as_errf(err, AS_EUSAGE, "op '%s' has no canonical example", def->name);
    buf = as_arena_strdup(arena, ex->sig);
    for (tok = strtok_r(buf, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save)) {
        if (strcmp(tok, ";") == 0 || tok[strlen(tok) - 1] == ';') {
            if (tok[0] != ';') {
                tok[strlen(tok) - 1] = '\0';
                if (nin >= 64 || !ex_shape(tok, &in[nin++]))
                    goto bad;
            }
            attrs = 1;
            continue;
        }
        if (attrs ? nat >= 32 || !ex_attr(tok, arena, &at[nat++])
                  : nin >= 64 || !ex_shape(tok, &in[nin++]))
            goto bad;
    }
    if (as_registry_bind_attrs(def, at, nat, arena, &bound, &nb, err) != AS_OK)
        goto fail;
    os = as_arena_calloc(arena, AS_MAX_OUTS, sizeof *os);
    if (as_op_infer(def, in, nin, bound, nb, os, &nout, err) != AS_OK)
        goto fail;
    out->def = def;
    out->nin = nin;
    out->in = in;
    out->nout = nout;
    out->out = os;
    out->nattr = nb;
    out->attr = bound;
    if (text != NULL)
        *text = ex->sig;
    return AS_OK;
bad:
    return as_errf(err, AS_EINTERNAL, "example of '%s' is malformed: '%s'", def->name, ex->sig);
fail:
    as_err_prefix(err, "example of '%s': ", def->name);
    err->code = AS_EINTERNAL;
    return AS_EINTERNAL;
}
