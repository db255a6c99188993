/* graph.c -- the computation graph IR: dtypes, shapes, attributes, and the
 * graph builder that checks every op against the registry as it is added.
 *
 * DESIGN: tensors and ops are dense arrays (ids are indices) so every later
 * stage can keep per-op and per-tensor side arrays; names are interned in
 * the graph's arena and indexed by a string map.  Because an op can only
 * read tensors that already exist, a graph built here is always acyclic and
 * its op array is a topological order (the igraph checks in graph_check.c
 * confirm this for graphs from any source).
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "ops_internal.h"

/* Dtypes. */

static const struct {
    const char *name;
    int size;
    int is_float;
} dtype_info[AS_DT_COUNT] = {
    [AS_DT_F32] = {"f32", 4, 1}, [AS_DT_F16] = {"f16", 2, 1},  [AS_DT_BF16] = {"bf16", 2, 1},
    [AS_DT_F64] = {"f64", 8, 1}, [AS_DT_I8] = {"i8", 1, 0},    [AS_DT_I16] = {"i16", 2, 0},
    [AS_DT_I32] = {"i32", 4, 0}, [AS_DT_I64] = {"i64", 8, 0},  [AS_DT_U8] = {"u8", 1, 0},
    [AS_DT_U16] = {"u16", 2, 0}, [AS_DT_U32] = {"u32", 4, 0},  [AS_DT_U64] = {"u64", 8, 0},
    [AS_DT_PRED] = {"pred", 1, 0},
};

const char *
as_dtype_name(as_dtype t)
{
    return (unsigned)t < AS_DT_COUNT ? dtype_info[t].name : "?";
}

int
as_dtype_parse(const char *s, size_t len, as_dtype *out)
{
    static const struct {
        const char *alias;
        as_dtype t;
    } aliases[] = {{"s8", AS_DT_I8}, {"s16", AS_DT_I16}, {"s32", AS_DT_I32}, {"s64", AS_DT_I64},
                   {"bool", AS_DT_PRED}};
    size_t i;

    for (i = 0; i < AS_DT_COUNT; i++)
        if (strlen(dtype_info[i].name) == len && memcmp(dtype_info[i].name, s, len) == 0) {
            *out = (as_dtype)i;
            return 1;
        }
    for (i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strlen(aliases[i].alias) == len && memcmp(aliases[i].alias, s, len) == 0) {
            *out = aliases[i].t;
            return 1;
        }
    return 0;
}

static const char *const precision_names[AS_PREC_COUNT] = {"fp32", "bf16", "fp16", "bf16-mixed",
                                                            "fp16-mixed"};

const char *
as_precision_name(as_precision p)
{
    return (unsigned)p < AS_PREC_COUNT ? precision_names[p] : "?";
}

int
as_precision_parse(const char *s, size_t len, as_precision *out)
{
    int i;

    for (i = 0; i < AS_PREC_COUNT; i++)
        if (strlen(precision_names[i]) == len && memcmp(precision_names[i], s, len) == 0) {
            *out = (as_precision)i;
            return 1;
        }
    return 0;
}

as_dtype
as_precision_dtype(as_precision p)
{
    return p == AS_PREC_BF16 || p == AS_PREC_BF16_MIXED   ? AS_DT_BF16
           : p == AS_PREC_FP16 || p == AS_PREC_FP16_MIXED ? AS_DT_F16
                                                          : AS_DT_F32;
}

int
as_precision_mixed(as_precision p)
{
    return p == AS_PREC_BF16_MIXED || p == AS_PREC_FP16_MIXED;
}

as_precision
as_precision_of(as_dtype dt, int mixed)
{
    if (dt == AS_DT_BF16)
        return mixed ? AS_PREC_BF16_MIXED : AS_PREC_BF16;
    if (dt == AS_DT_F16)
        return mixed ? AS_PREC_FP16_MIXED : AS_PREC_FP16;
    return AS_PREC_FP32;
}

int
as_dtype_size(as_dtype t)
{
    return (unsigned)t < AS_DT_COUNT ? dtype_info[t].size : 0;
}

int
as_dtype_is_float(as_dtype t)
{
    return (unsigned)t < AS_DT_COUNT && dtype_info[t].is_float;
}

/* Shapes. */

int64_t
as_shape_numel(const as_shape *s)
{
    int64_t n = 1;
    int i;

    for (i = 0; i < s->rank; i++)
        n *= s->dim[i];
    return n;
}

int64_t
as_shape_bytes(const as_shape *s)
{
    return as_shape_numel(s) * as_dtype_size(s->dtype);
}

int
as_shape_validate(const as_shape *s, int64_t mindim, as_err *err)
{
    int64_t n = as_dtype_size(s->dtype);
    char buf[160];
    int i;

    if (s->rank < 0 || s->rank > AS_MAX_RANK)
        return as_errf(err, AS_EPARSE, "rank %d is out of range (at most %d dims)", s->rank,
                       AS_MAX_RANK);
    for (i = 0; i < s->rank; i++) {
        if (s->dim[i] < mindim)
            return as_errf(err, AS_EPARSE, "dim %d of %s is %" PRId64 " (must be >= %" PRId64 ")",
                           i, as_shape_str(s, buf, sizeof buf), s->dim[i], mindim);
        if (!as_mul_ok(n, s->dim[i], &n) || n > ((int64_t)1 << 62))
            return as_errf(err, AS_EPARSE, "%s is too large: its size overflows 64 bits",
                           as_shape_str(s, buf, sizeof buf));
    }
    return AS_OK;
}

int
as_shape_equal(const as_shape *a, const as_shape *b)
{
    int i;

    if (a->dtype != b->dtype || a->rank != b->rank)
        return 0;
    for (i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i])
            return 0;
    return 1;
}

char *
as_shape_str(const as_shape *s, char *buf, size_t n)
{
    /* by hand, not snprintf per dim: rule keys and the simulator print shapes in loops */
    char tmp[32 + AS_MAX_RANK * 22], dig[24];
    const char *dt = as_dtype_name(s->dtype);
    size_t off = 0, len = strlen(dt);
    int i;

    if (len > 31)
        len = 31;
    memcpy(tmp, dt, len);
    off = len;
    tmp[off++] = '[';
    for (i = 0; i < s->rank && i < AS_MAX_RANK; i++) {
        int64_t v = s->dim[i];
        uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
        int d = 0;
        if (i)
            tmp[off++] = ',';
        if (v < 0)
            tmp[off++] = '-';
        do {
            dig[d++] = (char)('0' + u % 10);
            u /= 10;
        } while (u != 0);
        while (d > 0)
            tmp[off++] = dig[--d];
    }
    tmp[off++] = ']';
    if (n > 0) {
        size_t c = off < n - 1 ? off : n - 1;
        memcpy(buf, tmp, c);
        buf[c] = '\0';
    }
    return buf;
}

/* Attributes. */

const as_attr *
as_attr_find(const as_attr *a, int n, const char *key)
{
    int i;

    for (i = 0; i < n; i++)
        if (strcmp(a[i].key, key) == 0)
            return &a[i];
    return NULL;
}

int64_t
as_attr_int(const as_attr *a, int n, const char *key, int64_t dflt)
{
    const as_attr *p = as_attr_find(a, n, key);

    if (p == NULL)
        return dflt;
    if (p->kind == AS_ATTR_INT)
        return p->i;
    if (p->kind == AS_ATTR_FLOAT)
        return (int64_t)p->f;
    return dflt;
}

double
as_attr_float(const as_attr *a, int n, const char *key, double dflt)
{
    const as_attr *p = as_attr_find(a, n, key);

    if (p == NULL)
        return dflt;
    if (p->kind == AS_ATTR_FLOAT)
        return p->f;
    if (p->kind == AS_ATTR_INT)
        return (double)p->i;
    return dflt;
}

const char *
as_attr_str(const as_attr *a, int n, const char *key, const char *dflt)
{
    const as_attr *p = as_attr_find(a, n, key);

    return p != NULL && p->kind == AS_ATTR_STR ? p->s : dflt;
}

int
as_attr_ints(const as_attr *a, int n, const char *key, const int64_t **v)
{
    const as_attr *p = as_attr_find(a, n, key);

    if (p == NULL || p->kind != AS_ATTR_INTS)
        return -1;
    if (v != NULL)
        *v = p->v;
    return p->n;
}

/* Training options. */

void
as_train_opts_init(as_train_opts *o)
{
    memset(o, 0, sizeof *o);
    o->optimizer = "adam";
    o->lr = 1e-3;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
    o->momentum = 0.9;
}

/* Create and free. */

as_graph *
as_graph_new(const char *name)
{
    as_graph *g = as_xcalloc(1, sizeof *g);

    g->arena = as_arena_new();
    g->name = as_arena_strdup(g->arena, name != NULL ? name : "graph");
    as_strmap_init(&g->names);
    return g;
}

void
as_graph_free(as_graph *g)
{
    if (g == NULL)
        return;
    AS_VEC_FREE(&g->tensors);
    AS_VEC_FREE(&g->ops);
    AS_VEC_FREE(&g->outputs);
    AS_VEC_FREE(&g->nusers);
    as_strmap_destroy(&g->names);
    as_arena_free(g->arena);
    free(g);
}

/* Building. */

const char *
as_graph_strdup(as_graph *g, const char *s)
{
    return as_arena_strdup(g->arena, s);
}

const char *
as_graph_fresh_name(as_graph *g, const char *prefix)
{
    char buf[512];

    if (!as_strmap_get(&g->names, prefix, (size_t)-1, NULL))
        return as_arena_strdup(g->arena, prefix);
    for (;;) {
        snprintf(buf, sizeof buf, "%s.%" PRId64, prefix, ++g->fresh);
        if (!as_strmap_get(&g->names, buf, (size_t)-1, NULL))
            return as_arena_strdup(g->arena, buf);
    }
}

static int32_t
graph_new_tensor(as_graph *g, const char *name, const as_shape *shape, as_tensor_kind kind)
{
    as_tensor t;

    memset(&t, 0, sizeof t);
    t.id = (int32_t)g->tensors.n;
    t.name = name;
    t.shape = *shape;
    t.kind = kind;
    t.batch_dim = -1;
    t.producer = -1;
    t.of = t.update = t.update_of = -1;
    AS_VEC_PUSH(&g->tensors, t);
    AS_VEC_PUSH(&g->nusers, 0);
    as_strmap_put(&g->names, name, t.id);
    return t.id;
}

static int
graph_name_free(const as_graph *g, const char *name, as_err *err)
{
    int64_t prev;

    if (name[0] == '\0')
        return as_errf(err, AS_EPARSE, "empty tensor name");
    if (as_strmap_get(&g->names, name, (size_t)-1, &prev)) {
        const as_tensor *t = &g->tensors.v[prev];
        if (t->line > 0)
            return as_errf(err, AS_EPARSE, "redefinition of '%s' (first defined at line %d)", name,
                           t->line);
        return as_errf(err, AS_EPARSE, "redefinition of '%s'", name);
    }
    return AS_OK;
}

int
as_graph_add_tensor(as_graph *g, const char *name, const as_shape *shape, as_tensor_kind kind,
                    int batch_dim, int32_t *id, as_err *err)
{
    int32_t tid;

    AS_CHECK(graph_name_free(g, name, err));
    if (as_shape_validate(shape, 1, err) != AS_OK) {
        as_err_prefix(err, "'%s': ", name);
        return AS_EPARSE;
    }
    if (batch_dim < -1 || batch_dim >= (shape->rank > 0 ? shape->rank : 0) + (batch_dim == -1))
        return as_errf(err, AS_EPARSE, "'%s': batch dim %d out of range for rank %d", name,
                       batch_dim, shape->rank);
    tid = graph_new_tensor(g, as_arena_strdup(g->arena, name), shape, kind);
    g->tensors.v[tid].batch_dim = batch_dim;
    if (id != NULL)
        *id = tid;
    return AS_OK;
}

int
as_graph_add_op(as_graph *g, const char *optype, const char *const *outnames, int noutnames,
                const int32_t *in, int nin, const as_attr *attr, int nattr, int32_t *op_id,
                as_err *err)
{
    const as_op_def *def = as_registry_find(optype, (size_t)-1);
    as_shape inshape[64], *inbuf = inshape, outshape[AS_MAX_OUTS];
    const char *names[AS_MAX_OUTS];
    as_attr *bound = NULL;
    int nbound = 0, nout = 0, i, rc = AS_OK;
    int32_t *outs, *ins;
    as_op op;

    if (def == NULL)
        return as_errf(err, AS_EPARSE, "unknown op type '%s'", optype);
    if (nin < def->min_in || (!(def->flags & AS_OPF_VARIADIC) && nin > def->max_in)) {
        if (def->min_in == def->max_in)
            return as_errf(err, AS_EPARSE, "'%s' takes %d input%s, got %d", def->name,
                           def->min_in, def->min_in == 1 ? "" : "s", nin);
        if (def->flags & AS_OPF_VARIADIC)
            return as_errf(err, AS_EPARSE, "'%s' takes at least %d inputs, got %d", def->name,
                           def->min_in, nin);
        return as_errf(err, AS_EPARSE, "'%s' takes %d to %d inputs, got %d", def->name,
                       def->min_in, def->max_in, nin);
    }
    for (i = 0; i < nin; i++)
        if (in[i] < 0 || (size_t)in[i] >= g->tensors.n)
            return as_errf(err, AS_EINTERNAL, "'%s': input %d has invalid tensor id %d",
                           def->name, i, (int)in[i]);
    AS_CHECK(as_registry_bind_attrs(def, attr, nattr, g->arena, &bound, &nbound, err));
    if (nin > 64)
        inbuf = as_xmalloc((size_t)nin * sizeof *inbuf);
    for (i = 0; i < nin; i++)
        inbuf[i] = g->tensors.v[in[i]].shape;
    rc = as_op_infer(def, inbuf, nin, bound, nbound, outshape, &nout, err);
    if (inbuf != inshape)
        free(inbuf);
    if (rc != AS_OK)
        return rc;
    for (i = 0; i < nout; i++) {
        if ((rc = as_shape_validate(&outshape[i], 0, err)) != AS_OK) {
            as_err_prefix(err, "%s: output %d: ", def->name, i);
            return rc;
        }
        names[i] = i < noutnames && outnames != NULL ? outnames[i] : NULL;
        if (names[i] != NULL) {
            int j;
            AS_CHECK(graph_name_free(g, names[i], err));
            for (j = 0; j < i; j++)
                if (names[j] != NULL && strcmp(names[j], names[i]) == 0)
                    return as_errf(err, AS_EPARSE, "redefinition of '%s'", names[i]);
        }
    }
    memset(&op, 0, sizeof op);
    op.id = (int32_t)g->ops.n;
    op.def = def;
    op.nin = nin;
    ins = as_arena_memdup(g->arena, in, (size_t)nin * sizeof *in);
    op.in = ins;
    op.nout = nout;
    outs = as_arena_alloc(g->arena, (size_t)(nout ? nout : 1) * sizeof *outs);
    for (i = 0; i < nout; i++) {
        const char *nm;
        char buf[600];
        if (names[i] != NULL) {
            nm = as_arena_strdup(g->arena, names[i]);
        } else if (i > 0 && names[0] != NULL) {
            snprintf(buf, sizeof buf, "%s.%d", names[0], i);
            nm = as_graph_fresh_name(g, buf);
        } else {
            snprintf(buf, sizeof buf, "%s", i > 0 ? g->tensors.v[outs[0]].name : "t");
            nm = as_graph_fresh_name(g, buf);
        }
        outs[i] = graph_new_tensor(g, nm, &outshape[i], AS_TK_ACT);
        g->tensors.v[outs[i]].producer = op.id;
    }
    op.out = outs;
    op.name = nout > 0 ? g->tensors.v[outs[0]].name : as_graph_fresh_name(g, def->name);
    op.nattr = nbound;
    op.attr = bound;
    for (i = 0; i < nin; i++)
        g->nusers.v[in[i]]++;
    AS_VEC_PUSH(&g->ops, op);
    if (op_id != NULL)
        *op_id = op.id;
    return AS_OK;
}

void
as_graph_mark_output(as_graph *g, int32_t id)
{
    assert_tensor(g, id);
    if (!(g->tensors.v[id].flags & AS_TF_OUTPUT)) {
        g->tensors.v[id].flags |= AS_TF_OUTPUT;
        AS_VEC_PUSH(&g->outputs, id);
    }
}

int
as_graph_set_update(as_graph *g, int32_t old_id, int32_t new_id, as_err *err)
{
    as_tensor *o, *n;

    assert_tensor(g, old_id);
    assert_tensor(g, new_id);
    o = &g->tensors.v[old_id];
    n = &g->tensors.v[new_id];
    if (o->kind != AS_TK_PARAM && o->kind != AS_TK_STATE)
        return as_errf(err, AS_EPARSE, "'%s' is not a parameter or optimizer state", o->name);
    if (o->update >= 0)
        return as_errf(err, AS_EPARSE, "'%s' already has an update ('%s')", o->name,
                       g->tensors.v[o->update].name);
    if (n->update_of >= 0)
        return as_errf(err, AS_EPARSE, "'%s' already updates '%s'", n->name,
                       g->tensors.v[n->update_of].name);
    if (n->kind != AS_TK_ACT)
        return as_errf(err, AS_EPARSE, "'%s' is not computed by an op", n->name);
    if (!as_shape_equal(&o->shape, &n->shape)) {
        char a[128], b[128];
        return as_errf(err, AS_EPARSE, "update of '%s' has shape %s, expected %s", o->name,
                       as_shape_str(&n->shape, b, sizeof b), as_shape_str(&o->shape, a, sizeof a));
    }
    o->update = new_id;
    n->update_of = old_id;
    return AS_OK;
}

int
as_graph_set_state_of(as_graph *g, int32_t id, int32_t param_id, as_err *err)
{
    assert_tensor(g, id);
    assert_tensor(g, param_id);
    if (g->tensors.v[id].kind != AS_TK_STATE)
        return as_errf(err, AS_EPARSE, "'%s' is not an optimizer state", g->tensors.v[id].name);
    if (g->tensors.v[param_id].kind != AS_TK_PARAM)
        return as_errf(err, AS_EPARSE, "'%s' is not a parameter", g->tensors.v[param_id].name);
    g->tensors.v[id].of = param_id;
    return AS_OK;
}

void
as_graph_tensor_flag(as_graph *g, int32_t id, unsigned flags, int32_t of)
{
    assert_tensor(g, id);
    g->tensors.v[id].flags |= flags;
    if (of >= 0)
        g->tensors.v[id].of = of;
}

void
as_graph_op_meta(as_graph *g, int32_t id, unsigned flags, int line)
{
    g->ops.v[id].flags |= flags;
    if (line > 0)
        g->ops.v[id].line = line;
}

void
as_graph_tensor_line(as_graph *g, int32_t id, int line)
{
    assert_tensor(g, id);
    g->tensors.v[id].line = line;
}

void
as_graph_set_train(as_graph *g, const as_train_opts *o)
{
    g->has_train = 1;
    g->train = *o;
    g->train.optimizer = as_arena_strdup(g->arena, o->optimizer);
}

const as_train_opts *
as_graph_train(const as_graph *g)
{
    return g->has_train ? &g->train : NULL;
}

void
as_graph_i_clear_train(as_graph *g)
{
    g->has_train = 0;
}

/* Queries. */

const char *
as_graph_name(const as_graph *g)
{
    return g->name;
}

int32_t
as_graph_nops(const as_graph *g)
{
    return (int32_t)g->ops.n;
}

const as_op *
as_graph_op(const as_graph *g, int32_t i)
{
    return &g->ops.v[i];
}

int32_t
as_graph_ntensors(const as_graph *g)
{
    return (int32_t)g->tensors.n;
}

const as_tensor *
as_graph_tensor(const as_graph *g, int32_t i)
{
    return &g->tensors.v[i];
}

int32_t
as_graph_find(const as_graph *g, const char *name)
{
    int64_t v;

    return as_strmap_get(&g->names, name, (size_t)-1, &v) ? (int32_t)v : -1;
}

int32_t
as_graph_noutputs(const as_graph *g)
{
    return (int32_t)g->outputs.n;
}

int32_t
as_graph_output(const as_graph *g, int32_t i)
{
    return g->outputs.v[i];
}

int32_t
as_graph_nusers(const as_graph *g, int32_t id)
{
    return g->nusers.v[id];
}

size_t
as_graph_mem_bytes(const as_graph *g)
{
    return as_arena_bytes(g->arena) + g->tensors.cap * sizeof(as_tensor) +
           g->ops.cap * sizeof(as_op) + g->names.cap * (sizeof(char *) + sizeof(int64_t)) +
           g->nusers.cap * sizeof(int32_t);
}

void
as_graph_op_in_shapes(const as_graph *g, const as_op *op, as_shape *shapes)
{
    int i;

    for (i = 0; i < op->nin; i++)
        shapes[i] = g->tensors.v[op->in[i]].shape;
}

as_state_role
as_graph_state_role(const as_graph *g, int32_t id)
{
    const as_tensor *t = &g->tensors.v[id];
    const char *op;
    size_t n;

    if (t->kind != AS_TK_STATE || t->update < 0 || g->tensors.v[t->update].producer < 0)
        return AS_STATE_OPTIMIZER;
    op = g->ops.v[g->tensors.v[t->update].producer].def->name;
    n = strlen(op);
    if (strcmp(op, "grad_accum") == 0)
        return AS_STATE_GRAD;
    if (n > 7 && strcmp(op + n - 7, "_update") == 0)
        return AS_STATE_MASTER;
    return AS_STATE_OPTIMIZER;
}

as_precision
as_graph_precision(const as_graph *g)
{
    as_dtype dt = AS_DT_F32;
    int found = 0, mixed = 0;
    size_t i;

    for (i = 0; i < g->tensors.n; i++) {
        const as_tensor *t = &g->tensors.v[i];
        if (!found && (t->kind == AS_TK_PARAM || t->kind == AS_TK_INPUT) &&
            as_dtype_is_float(t->shape.dtype)) {
            dt = t->shape.dtype;
            found = t->kind == AS_TK_PARAM;
        }
        if (t->kind == AS_TK_STATE && as_graph_state_role(g, (int32_t)i) == AS_STATE_MASTER)
            mixed = 1;
    }
    return as_precision_of(dt, mixed);
}
