/* reader_hlo.c -- import XLA HLO module text into an autoshard graph.
 *
 * hlo_parse.c turns the text into computations and instructions; this file
 * walks the ENTRY computation in program order and maps each instruction
 * onto the op registry (docs/hlo.md has the full table).  DESIGN:
 *  - Values: an instruction yields an array (one graph tensor) or a tuple of
 *    values.  tuple / get-tuple-element / opt-barrier are resolved statically
 *    and emit no op.
 *  - call and fusion are inlined: the callee's parameters are bound to the
 *    caller's operand values and its instructions are emitted with the name
 *    prefix "CALLER__" (names stay unique: "fusion.3__add.1"; .asg names have no "/").
 *  - Every emitted op's inferred shapes are compared with the shapes the
 *    text declares; a disagreement is an error at the instruction.
 *  - What the registry cannot express (custom-call, while, conditional,
 *    unknown opcodes, variadic reduce...) becomes one `opaque` op carrying
 *    the declared output shapes, counted in one warning line per file.
 *  - Entry parameters become graph inputs or parameters by the heuristic
 *    in hlo_classify_params; in-place updates (input_output_alias) are tied
 *    with as_graph_set_update.
 */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_internal.h"
#include "reader_hlo.h"
#include "registry.h"

#define MAX_LIST 64 /* longest integer list attribute we read */

/* A value: an array (tid >= 0) or a tuple (tid < 0) of N values. */
typedef struct hval {
    int32_t tid;
    int n;
    const struct hval *elts;
} hval;

typedef AS_VEC(as_shape) shape_vec;
typedef AS_VEC(int32_t) id_vec;

/* One opcode kept as opaque, and how often. */
typedef struct hlo_count {
    const char *name;
    int n;
} hlo_count;

/* Importer state. */
typedef struct importer {
    const char *path;
    hlo_module *m;
    as_graph *g;
    as_err *err;
    AS_VEC(hlo_count) opaque; /**< unsupported opcodes kept as opaque */
    int nloops;               /**< while / conditional kept as opaque */
    double *flops;            /**< per computation: estimated FLOPs, < 0 = not yet */
    as_tensor_kind *pkind;    /**< per entry parameter: its tensor kind */
    int *state_of;            /**< per entry parameter: STATE of that parameter, or -1 */
    const unsigned char *used; /**< hlo_bn_uses of the computation being emitted, or NULL */
    const hlo_comp *cur;       /**< the computation being emitted */
    int depth;                /**< calls being inlined now */
    int64_t inlined;          /**< instructions emitted through calls so far */
} importer;

/* Limits that keep a small file from expanding without bound. */
#define HLO_MAX_DEPTH 64          /* nested call / fusion levels */
#define HLO_MAX_INLINED 2000000   /* instructions emitted through inlining */

static int hlo_emit_comp(importer *im, int ci, const char *prefix, const hval *args, hval *res);

/* ---- small helpers ---- */

static int
ierr(importer *im, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int
ierr(importer *im, int line, int col, const char *fmt, ...)
{
    char msg[440];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return as_errf(im->err, AS_EPARSE, "%s:%d:%d: %s", im->path, line, col, msg);
}

static int
op_is(const hlo_instr *ins, const char *name)
{
    return strcmp(ins->opcode, name) == 0;
}

/* Integer list attribute KEY of INS into V; -1 if absent or malformed. */
static int
hlo_attr_ints(const hlo_instr *ins, const char *key, int64_t *v)
{
    const hlo_attr *a = as_hlo_i_attr(ins, key);

    return a != NULL ? as_hlo_i_ints(a->val, a->vlen, v, MAX_LIST) : -1;
}

/*
 * Attributes that hold integer lists must parse as one (at most MAX_LIST
 * entries): a malformed list must not be read as an absent one.
 */
static int
hlo_check_lists(importer *im, const hlo_instr *ins)
{
    static const char *const keys[] = {
        "dimensions", "lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims",
        "rhs_contracting_dims", "offset_dims", "collapsed_slice_dims", "start_index_map",
        "slice_sizes", "operand_batching_dims", "start_indices_batching_dims",
        "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
        "input_batching_dims", "scatter_indices_batching_dims", "dynamic_slice_sizes"};
    int64_t v[MAX_LIST];
    int i;
    size_t k;

    for (i = 0; i < ins->nattr; i++)
        for (k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (strcmp(ins->attr[i].key, keys[k]) == 0 &&
                as_hlo_i_ints(ins->attr[i].val, ins->attr[i].vlen, v, MAX_LIST) < 0)
                return ierr(im, ins->attr[i].line, ins->attr[i].col,
                            "malformed %s={...}: expected a list of at most %d integers",
                            ins->attr[i].key, MAX_LIST);
    return AS_OK;
}

static int64_t
hlo_attr_int(const hlo_instr *ins, const char *key, int64_t dflt)
{
    int64_t v[MAX_LIST];

    return hlo_attr_ints(ins, key, v) == 1 ? v[0] : dflt;
}

/* Full graph name of INS under PREFIX. */
static const char *
hlo_full_name(const char *prefix, const hlo_instr *ins, char *buf, size_t n)
{
    if (prefix == NULL)
        return ins->name;
    snprintf(buf, n, "%s__%s", prefix, ins->name); /* .asg names allow [A-Za-z0-9_.-] */
    return buf;
}

/* Leaves of a type, in order. */
static void
hlo_type_leaves(const hlo_type *t, shape_vec *out)
{
    int i;

    if (t->ntuple < 0) {
        AS_VEC_PUSH(out, t->shape);
        return;
    }
    for (i = 0; i < t->ntuple; i++)
        hlo_type_leaves(&t->elts[i], out);
}

/* Leaves of a value (tensor ids), in order. */
static void
hlo_val_leaves(const hval *v, id_vec *out)
{
    int i;

    if (v->tid >= 0) {
        AS_VEC_PUSH(out, v->tid);
        return;
    }
    for (i = 0; i < v->n; i++)
        hlo_val_leaves(&v->elts[i], out);
}

/* Build a value shaped like T from the tensor ids IDS (consumed from *K). */
static hval
hlo_val_like(importer *im, const hlo_type *t, const int32_t *ids, int *k)
{
    hval v = {-1, 0, NULL};
    hval *e;
    int i;

    if (t->ntuple < 0) {
        v.tid = ids[(*k)++];
        return v;
    }
    e = as_arena_alloc(im->m->arena, sizeof *e * (size_t)(t->ntuple + 1));
    for (i = 0; i < t->ntuple; i++)
        e[i] = hlo_val_like(im, &t->elts[i], ids, k);
    v.n = t->ntuple;
    v.elts = e;
    return v;
}

static void
hlo_count_opaque(importer *im, const char *name)
{
    size_t i;

    for (i = 0; i < im->opaque.n; i++)
        if (strcmp(im->opaque.v[i].name, name) == 0) {
            im->opaque.v[i].n++;
            return;
        }
    AS_VEC_PUSH(&im->opaque, ((hlo_count){name, 1}));
}

/* The array operand J of INS as a tensor id. */
static int
hlo_operand(importer *im, const hlo_instr *ins, const hval *vals, int j, int32_t *tid)
{
    const hval *v = &vals[ins->opidx[j]];

    if (v->tid < 0)
        return ierr(im, ins->opline[j], ins->opcol[j], "operand '%s' of '%s' is a tuple",
                    ins->opname[j], ins->name);
    *tid = v->tid;
    return AS_OK;
}

/* ---- FLOP estimates from the text alone (bodies of while / conditional) ---- */

static double hlo_comp_flops(importer *im, int ci);

static int
hlo_is_elementwise(const char *op)
{
    static const char *const ew[] = {
        "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "exponential",
        "log", "tanh", "logistic", "rsqrt", "sqrt", "negate", "abs", "sign", "compare", "select",
        "clamp", "sine", "cosine", "exponential-minus-one", "log-plus-one", "erf", "atan2",
        "remainder", "cbrt", NULL};
    int i;

    for (i = 0; ew[i] != NULL; i++)
        if (strcmp(ew[i], op) == 0)
            return 1;
    return 0;
}

static double
hlo_type_numel(const hlo_type *t)
{
    double n = 0.0;
    int i;

    if (t->ntuple < 0)
        return (double)as_shape_numel(&t->shape);
    for (i = 0; i < t->ntuple; i++)
        n += hlo_type_numel(&t->elts[i]);
    return n;
}

/* Computation called by attribute KEY of INS, or -1. */
static int
hlo_callee(importer *im, const hlo_instr *ins, const char *key)
{
    const hlo_attr *a = as_hlo_i_attr(ins, key);

    return a != NULL ? as_hlo_i_comp_ref(im->m, a->val, a->vlen) : -1;
}

/* FLOPs of one execution of INS in computation C (multiply-add = 2). */
static double
hlo_instr_flops(importer *im, const hlo_comp *c, const hlo_instr *ins)
{
    const char *op = ins->opcode;

    if (strcmp(op, "dot") == 0 && ins->nops == 2) {
        const hlo_type *lt = &c->ins[ins->opidx[0]].type;
        int64_t lc[MAX_LIST];
        int n = hlo_attr_ints(ins, "lhs_contracting_dims", lc), i;
        double k = 1.0;
        for (i = 0; i < n && lt->ntuple < 0; i++)
            if (lc[i] >= 0 && lc[i] < lt->shape.rank)
                k *= (double)lt->shape.dim[lc[i]];
        return 2.0 * k * hlo_type_numel(&ins->type);
    }
    if (strcmp(op, "convolution") == 0 && ins->nops == 2) {
        const hlo_type *kt = &c->ins[ins->opidx[1]].type;
        const hlo_attr *dl = as_hlo_i_attr(ins, "dim_labels");
        const char *u;
        if (kt->ntuple >= 0 || dl == NULL || (u = memchr(dl->val, '_', dl->vlen)) == NULL)
            return 0.0;
        { /* 2 * out * kernel / output features */
            const char *o = memchr(u, 'o', dl->vlen - (size_t)(u - dl->val));
            int pos = o != NULL ? (int)(o - u - 1) : -1;
            if (pos < 0 || pos >= kt->shape.rank)
                return 0.0;
            return 2.0 * hlo_type_numel(&ins->type) * hlo_type_numel(kt) /
                   (double)kt->shape.dim[pos];
        }
    }
    if (hlo_is_elementwise(op))
        return hlo_type_numel(&ins->type);
    if ((strcmp(op, "reduce") == 0 || strcmp(op, "reduce-window") == 0) && ins->nops >= 1)
        return hlo_type_numel(&c->ins[ins->opidx[0]].type);
    if (strcmp(op, "fusion") == 0 || strcmp(op, "call") == 0) {
        int k = hlo_callee(im, ins, strcmp(op, "fusion") == 0 ? "calls" : "to_apply");
        return k >= 0 ? hlo_comp_flops(im, k) : 0.0;
    }
    if (strcmp(op, "while") == 0) {
        int b = hlo_callee(im, ins, "body"), cd = hlo_callee(im, ins, "condition");
        return (b >= 0 ? hlo_comp_flops(im, b) : 0.0) + (cd >= 0 ? hlo_comp_flops(im, cd) : 0.0);
    }
    if (strcmp(op, "conditional") == 0) { /* the costliest branch */
        const hlo_comp *cc = c;
        double best = 0.0;
        int k;
        for (k = 0; k < cc->ncalls; k++)
            if (&cc->ins[cc->call_attr[k] >> 8] == ins) {
                double f = hlo_comp_flops(im, cc->calls[k]);
                best = f > best ? f : best;
            }
        return best;
    }
    return 0.0;
}

/* Estimated FLOPs of one execution of computation CI (memoised; the call graph is acyclic). */
static double
hlo_comp_flops(importer *im, int ci)
{
    const hlo_comp *c = &im->m->comps[ci];
    double f = 0.0;
    int i;

    if (im->flops[ci] >= 0.0)
        return im->flops[ci];
    for (i = 0; i < c->nins; i++)
        f += hlo_instr_flops(im, c, &c->ins[i]);
    im->flops[ci] = f;
    return f;
}

/*
 * What computation CI computes when used as a reducer: "sum", "max", "min",
 * "prod", "assign" (returns its second parameter), or NULL.
 */
static const char *
hlo_reducer(importer *im, int ci)
{
    const hlo_comp *c;
    const hlo_instr *r;
    int a, b;

    if (ci < 0)
        return NULL;
    c = &im->m->comps[ci];
    if (c->nparams != 2)
        return NULL;
    r = &c->ins[c->root];
    if (op_is(r, "parameter"))
        return c->root == c->param[1] ? "assign" : NULL;
    if (r->nops != 2 || r->type.ntuple >= 0)
        return NULL;
    a = r->opidx[0];
    b = r->opidx[1];
    if (!((a == c->param[0] && b == c->param[1]) || (a == c->param[1] && b == c->param[0])))
        return NULL;
    if (op_is(r, "add") || op_is(r, "or"))
        return op_is(r, "add") ? "sum" : NULL;
    if (op_is(r, "maximum"))
        return "max";
    if (op_is(r, "minimum"))
        return "min";
    if (op_is(r, "multiply"))
        return "prod";
    return NULL;
}

/* The value of a scalar `constant(X)` instruction, if INS is one. */
static int
hlo_const_value(const hlo_instr *ins, double *v)
{
    char buf[64];
    char *end;

    if (!op_is(ins, "constant") || ins->type.ntuple >= 0 || ins->type.shape.rank != 0 ||
        ins->argslen == 0 || ins->argslen >= sizeof buf)
        return 0;
    memcpy(buf, ins->args, ins->argslen);
    buf[ins->argslen] = '\0';
    if (strcmp(buf, "true") == 0 || strcmp(buf, "false") == 0) {
        *v = buf[0] == 't';
        return 1;
    }
    *v = strtod(buf, &end);
    return end != buf && *end == '\0';
}

/* ---- emitting ops ---- */

/*
 * Append op OPTYPE for INS and check that its outputs have the declared
 * shapes.  Output tensor ids go to OUTS (at most AS_MAX_OUTS); *NOUT their count.
 */
static int
hlo_add_op(importer *im, const hlo_instr *ins, const char *prefix, const char *optype,
           const int32_t *in, int nin, const as_attr *attr, int nattr, int32_t *outs, int *nout)
{
    shape_vec decl = {0};
    char buf[600];
    const char *name = hlo_full_name(prefix, ins, buf, sizeof buf);
    const as_op *op;
    int32_t opid;
    int rc = AS_OK, k;

    if ((rc = as_graph_add_op(im->g, optype, &name, 1, in, nin, attr, nattr, &opid, im->err)) !=
        AS_OK) {
        as_err_prefix(im->err, "%s:%d:%d: '%s': ", im->path, ins->line, ins->col, ins->name);
        return rc;
    }
    as_graph_op_meta(im->g, opid, 0, ins->line);
    op = as_graph_op(im->g, opid);
    hlo_type_leaves(&ins->type, &decl);
    if ((size_t)op->nout != decl.n && strcmp(optype, "opaque") != 0) {
        rc = ierr(im, ins->line, ins->col, "'%s' declares %d outputs but %s gives %d", ins->name,
                  (int)decl.n, ins->opcode, op->nout);
        goto out;
    }
    for (k = 0; k < op->nout; k++) {
        const as_shape *got = &as_graph_tensor(im->g, op->out[k])->shape;
        if ((size_t)k < decl.n && !as_shape_equal(got, &decl.v[k])) {
            char a[160], b[160];
            rc = ierr(im, ins->line, ins->col, "'%s' declares %s but %s gives %s", ins->name,
                      as_shape_str(&decl.v[k], a, sizeof a), ins->opcode,
                      as_shape_str(got, b, sizeof b));
            goto out;
        }
        as_graph_tensor_line(im->g, op->out[k], ins->line);
        if (k < AS_MAX_OUTS)
            outs[k] = op->out[k];
    }
    *nout = op->nout;
out:
    free(decl.v);
    return rc;
}

/* Emit INS as a single-output registry op; its value is the output. */
static int
hlo_simple(importer *im, const hlo_instr *ins, const char *prefix, const char *optype,
           const int32_t *in, int nin, const as_attr *attr, int nattr, hval *res)
{
    int32_t outs[AS_MAX_OUTS];
    int nout;

    AS_CHECK(hlo_add_op(im, ins, prefix, optype, in, nin, attr, nattr, outs, &nout));
    res->tid = outs[0];
    res->n = 0;
    return AS_OK;
}

/*
 * Emit INS as opaque op(s) holding its declared output shapes, reading all
 * leaves of its operands.  COUNT_AS names it in the warning (NULL: not counted).
 */
static int
hlo_opaque(importer *im, const hlo_instr *ins, const char *prefix, const hval *vals,
           double flops, const char *count_as, hval *res)
{
    shape_vec decl = {0};
    id_vec in = {0}, outs = {0};
    AS_VEC(int64_t) dims = {0};
    AS_VEC(char) dts = {0};
    const hlo_attr *tgt = as_hlo_i_attr(ins, "custom_call_target");
    char tbuf[128] = "";
    size_t first = 0;
    int rc = AS_OK, j, k = 0;

    hlo_type_leaves(&ins->type, &decl);
    for (j = 0; j < ins->nops; j++)
        hlo_val_leaves(&vals[ins->opidx[j]], &in);
    if (tgt != NULL) {
        size_t n = tgt->vlen < sizeof tbuf ? tgt->vlen : sizeof tbuf - 1;
        memcpy(tbuf, tgt->val, n);
        tbuf[n] = '\0';
    }
    do { /* at most AS_MAX_OUTS outputs per op */
        size_t last = decl.n - first > AS_MAX_OUTS ? first + AS_MAX_OUTS : decl.n, i;
        int64_t ranks[AS_MAX_OUTS];
        int32_t o[AS_MAX_OUTS];
        int nout, d;
        dims.n = dts.n = 0;
        for (i = first; i < last; i++) {
            const char *dn = as_dtype_name(decl.v[i].dtype);
            if (i > first)
                AS_VEC_PUSH(&dts, ',');
            while (*dn)
                AS_VEC_PUSH(&dts, *dn++);
            ranks[i - first] = decl.v[i].rank;
            for (d = 0; d < decl.v[i].rank; d++)
                AS_VEC_PUSH(&dims, decl.v[i].dim[d]);
        }
        AS_VEC_PUSH(&dts, '\0');
        {
            as_attr at[6] = {AS_ATTR_S("hlo_op", ins->opcode), AS_ATTR_S("out_dtypes", dts.v),
                             AS_ATTR_V("out_ranks", (int)(last - first), ranks),
                             AS_ATTR_V("out_dims", (int)dims.n, dims.v),
                             AS_ATTR_F("flops", first == 0 ? flops : 0.0),
                             AS_ATTR_S("target", tbuf)};
            if (dims.v == NULL)
                at[3].v = ranks;
            AS_CHECK_GOTO(rc, hlo_add_op(im, ins, prefix, "opaque", in.v, (int)in.n, at, 6, o,
                                         &nout),
                          out);
        }
        for (d = 0; d < nout; d++)
            AS_VEC_PUSH(&outs, o[d]);
        first = last;
    } while (first < decl.n);
    if (count_as != NULL)
        hlo_count_opaque(im, count_as);
    *res = hlo_val_like(im, &ins->type, outs.v, &k);
out:
    free(decl.v);
    free(in.v);
    free(outs.v);
    free(dims.v);
    free(dts.v);
    return rc;
}

/* ---- custom calls and batch norm mapped to registry ops ---- */

static int hlo_operands(importer *im, const hlo_instr *ins, const hval *vals, int32_t *in,
                        int max);

/* Custom-call targets PyTorch/XLA (Neuron) writes, and the registry op each one is; operands
 * in the registry op's order (gelu_grad(dy, x), softmax_grad(dy, y)). */
static const char *const hlo_custom_builtin[][2] = {
    {"AwsNeuronGelu", "gelu"},
    {"AwsNeuronGeluBackward", "gelu_grad"},
    {"AwsNeuronSoftmax", "softmax"},
    {"AwsNeuronSoftmaxBackward", "softmax_grad"},
    {"AwsNeuronTransferWithStaticRing", "identity"},
    {NULL, NULL}};

#define HLO_MAX_CUSTOM 64
static char *hlo_custom_user[HLO_MAX_CUSTOM][2]; /* --custom-call NAME=OP, latest first */
static int hlo_ncustom;

int
as_hlo_custom_call_add(const char *spec, as_err *err)
{
    const char *eq = strchr(spec, '=');
    const as_op_def *def;
    int i;

    if (eq == NULL || eq == spec || eq[1] == '\0')
        return as_errf(err, AS_EUSAGE, "--custom-call: expected NAME=OP, got '%s'", spec);
    def = as_registry_find(eq + 1, (size_t)-1);
    if (def == NULL)
        return as_errf(err, AS_EUSAGE, "--custom-call %s: unknown op '%s' (see 'autoshard rules')",
                       spec, eq + 1);
    if (def->flags & (AS_OPF_OPAQUE | AS_OPF_COLLECTIVE))
        return as_errf(err, AS_EUSAGE, "--custom-call %s: '%s' cannot stand for a custom call",
                       spec, def->name);
    for (i = 0; i < hlo_ncustom; i++)
        if (strlen(hlo_custom_user[i][0]) == (size_t)(eq - spec) &&
            memcmp(hlo_custom_user[i][0], spec, (size_t)(eq - spec)) == 0) {
            free(hlo_custom_user[i][1]);
            hlo_custom_user[i][1] = as_xstrdup(eq + 1);
            return AS_OK;
        }
    if (hlo_ncustom == HLO_MAX_CUSTOM)
        return as_errf(err, AS_EUSAGE, "--custom-call: more than %d mappings", HLO_MAX_CUSTOM);
    hlo_custom_user[hlo_ncustom][0] = as_xstrndup(spec, (size_t)(eq - spec));
    hlo_custom_user[hlo_ncustom][1] = as_xstrdup(eq + 1);
    hlo_ncustom++;
    return AS_OK;
}

void
as_hlo_custom_call_clear(void)
{
    int i;

    for (i = 0; i < hlo_ncustom; i++) {
        free(hlo_custom_user[i][0]);
        free(hlo_custom_user[i][1]);
    }
    hlo_ncustom = 0;
}

/* The registry op a custom call stands for (--custom-call first, then the built-in table). */
static const char *
hlo_custom_op(const hlo_instr *ins)
{
    const hlo_attr *a = as_hlo_i_attr(ins, "custom_call_target");
    char t[128];
    size_t n;
    int i;

    if (a == NULL)
        return NULL;
    n = a->vlen;
    if (n >= 2 && a->val[0] == '"' && a->val[n - 1] == '"') {
        memcpy(t, a->val + 1, n - 2 < sizeof t - 1 ? n - 2 : sizeof t - 1);
        t[n - 2 < sizeof t - 1 ? n - 2 : sizeof t - 1] = '\0';
    } else {
        memcpy(t, a->val, n < sizeof t - 1 ? n : sizeof t - 1);
        t[n < sizeof t - 1 ? n : sizeof t - 1] = '\0';
    }
    for (i = 0; i < hlo_ncustom; i++)
        if (strcmp(hlo_custom_user[i][0], t) == 0)
            return hlo_custom_user[i][1];
    for (i = 0; hlo_custom_builtin[i][0] != NULL; i++)
        if (strcmp(hlo_custom_builtin[i][0], t) == 0)
            return hlo_custom_builtin[i][1];
    return NULL;
}

/* One registry op for part SUFFIX of INS, declared as SHAPE (checked against inference). */
static int
hlo_add_part(importer *im, const hlo_instr *ins, const char *prefix, const char *suffix,
             const as_shape *shape, const char *optype, const int32_t *in, int nin,
             const as_attr *at, int nat, int32_t *tid)
{
    hlo_instr tmp = *ins;
    char nbuf[600];
    int32_t outs[AS_MAX_OUTS];
    int nout;

    snprintf(nbuf, sizeof nbuf, "%s.%s", ins->name, suffix);
    tmp.name = as_arena_strdup(im->m->arena, nbuf);
    tmp.type.ntuple = -1;
    tmp.type.shape = *shape;
    AS_CHECK(hlo_add_op(im, &tmp, prefix, optype, in, nin, at, nat, outs, &nout));
    *tid = outs[0];
    return AS_OK;
}

/*
 * A custom call that stands for registry op OP: its operands in order.  A gradient op
 * called with one operand less than it takes gets dy = 1 first: AwsNeuronGeluBackward(x)
 * returns gelu'(x) alone (PyTorch/XLA multiplies by dy after), which is gelu_grad(1, x).
 */
static int
hlo_custom_mapped(importer *im, const hlo_instr *ins, const char *prefix, const hval *vals,
                  const char *op, hval *res)
{
    const as_op_def *def = as_registry_find(op, (size_t)-1);
    int32_t *in = as_arena_alloc(im->m->arena, sizeof *in * (size_t)(ins->nops + 2));
    int off = 0;

    if (def != NULL && (def->flags & AS_OPF_GRAD) && ins->nops >= 1 &&
        ins->nops + 1 == def->min_in) {
        const as_shape *xs;
        as_shape sc;
        int64_t shp[AS_MAX_RANK];
        int32_t one;
        char nbuf[600], full[700];
        as_attr at[2];
        int d;
        AS_CHECK(hlo_operand(im, ins, vals, 0, &in[1]));
        xs = &as_graph_tensor(im->g, in[1])->shape;
        memset(&sc, 0, sizeof sc);
        sc.dtype = xs->dtype;
        snprintf(nbuf, sizeof nbuf, "%s.one", ins->name);
        if (prefix != NULL)
            snprintf(full, sizeof full, "%s__%s", prefix, nbuf);
        if (as_graph_add_tensor(im->g, prefix != NULL ? full : nbuf, &sc, AS_TK_CONST, -1, &one,
                                im->err) != AS_OK) {
            as_err_prefix(im->err, "%s:%d:%d: ", im->path, ins->line, ins->col);
            return AS_EPARSE;
        }
        for (d = 0; d < xs->rank; d++)
            shp[d] = xs->dim[d];
        at[0] = AS_ATTR_V("shape", xs->rank, shp);
        at[1] = AS_ATTR_V("dims", 0, shp);
        AS_CHECK(hlo_add_part(im, ins, prefix, "dy", xs, "broadcast", &one, 1, at, 2, &in[0]));
        off = 1;
    }
    AS_CHECK(hlo_operands(im, ins, vals, in + off, ins->nops));
    return hlo_simple(im, ins, prefix, op, in, ins->nops + off, NULL, 0, res);
}

/* Every dim of RANK but 1 (the feature dim). */
static int
hlo_bn_dims(int rank, int64_t *dims)
{
    int d, n = 0;

    for (d = 0; d < rank; d++)
        if (d != 1)
            dims[n++] = d;
    return n;
}

/*
 * batch-norm-training(x, scale, offset) -> (y, mean, var) and batch-norm-grad(x, scale, mean,
 * var, dy) -> (dx, dscale, doffset) with feature_index 1 (BatchNorm on NCHW, and PyTorch/XLA's
 * LayerNorm on [1, rows, H]): the registry's batchnorm, batchnorm_grad_x, batchnorm_grad_gamma
 * (statistics over every dim but 1, from x: batch-norm-grad's mean and var are the same
 * statistics), reduce_mean for mean and var, reduce_sum for doffset.  Returns 0 (nothing
 * emitted) when the instruction does not have that form.
 */
static int
hlo_batch_norm(importer *im, const hlo_instr *ins, const char *prefix, const hval *vals,
               hval *res, int *done)
{
    int grad = op_is(ins, "batch-norm-grad"), nd, j;
    const hlo_attr *ea = as_hlo_i_attr(ins, "epsilon");
    double eps = 1e-3; /* XLA's default */
    int32_t in[5], *outs;
    hval *elts;
    int64_t dims[AS_MAX_RANK];
    as_shape xs, cs;
    as_attr at[3];
    char buf[64];

    *done = 0;
    if (ins->type.ntuple != 3 || ins->nops != (grad ? 5 : 3) ||
        hlo_attr_int(ins, "feature_index", -1) != 1)
        return AS_OK;
    for (j = 0; j < ins->nops; j++) {
        if (grad && (j == 2 || j == 3))
            continue; /* mean and var: recomputed from x */
        if (vals[ins->opidx[j]].tid < 0)
            return AS_OK;
        in[j] = vals[ins->opidx[j]].tid;
    }
    xs = as_graph_tensor(im->g, in[0])->shape;
    if (xs.rank < 2)
        return AS_OK;
    if (ea != NULL && ea->vlen > 0 && ea->vlen < sizeof buf) {
        char *end;
        memcpy(buf, ea->val, ea->vlen);
        buf[ea->vlen] = '\0';
        eps = strtod(buf, &end);
        if (end == buf || *end != '\0')
            return ierr(im, ea->line, ea->col, "malformed epsilon");
    }
    cs = xs;
    cs.rank = 1;
    cs.dim[0] = xs.dim[1];
    nd = hlo_bn_dims(xs.rank, dims);
    *done = 1;
    elts = as_arena_alloc(im->m->arena, sizeof *elts * 3);
    outs = as_arena_alloc(im->m->arena, sizeof *outs * 3);
    at[0] = AS_ATTR_F("eps", eps);
    if (!grad) {
        int32_t m, c, q;
        const unsigned char *u = im->used;
        int self = (int)(ins - im->cur->ins);
        int want_mean = u == NULL || (u[self] & 4u), want_var = u == NULL || (u[self] & 8u);
        int64_t shp[AS_MAX_RANK], one = 1;
        AS_CHECK(hlo_add_part(im, ins, prefix, "y", &xs, "batchnorm", in, 3, at, 1, &outs[0]));
        outs[1] = outs[2] = -1;
        if (!want_mean && !want_var)
            goto done;
        at[0] = AS_ATTR_V("dims", nd, dims);
        at[1] = AS_ATTR_I("keepdims", 0);
        AS_CHECK(hlo_add_part(im, ins, prefix, "mean", &cs, "reduce_mean", in, 1, at, 2,
                              &outs[1]));
        if (!want_var)
            goto done;
        for (j = 0; j < xs.rank; j++)
            shp[j] = xs.dim[j];
        at[0] = AS_ATTR_V("shape", xs.rank, shp);
        at[1] = AS_ATTR_V("dims", 1, &one);
        AS_CHECK(hlo_add_part(im, ins, prefix, "mean_b", &xs, "broadcast", &outs[1], 1, at, 2,
                              &m));
        {
            int32_t xm[2] = {in[0], m};
            AS_CHECK(hlo_add_part(im, ins, prefix, "xc", &xs, "sub", xm, 2, NULL, 0, &c));
        }
        AS_CHECK(hlo_add_part(im, ins, prefix, "xc2", &xs, "square", &c, 1, NULL, 0, &q));
        at[0] = AS_ATTR_V("dims", nd, dims);
        at[1] = AS_ATTR_I("keepdims", 0);
        AS_CHECK(hlo_add_part(im, ins, prefix, "var", &cs, "reduce_mean", &q, 1, at, 2,
                              &outs[2]));
    } else {
        int32_t tri[3] = {in[4], in[0], in[1]};
        const unsigned char *u = im->used;
        int self = (int)(ins - im->cur->ins);
        outs[1] = outs[2] = -1;
        AS_CHECK(hlo_add_part(im, ins, prefix, "dx", &xs, "batchnorm_grad_x", tri, 3, at, 1,
                              &outs[0]));
        if (u == NULL || (u[self] & 4u)) /* PyTorch/XLA's LayerNorm reads dx only */
            AS_CHECK(hlo_add_part(im, ins, prefix, "dscale", &cs, "batchnorm_grad_gamma", tri, 2,
                                  at, 1, &outs[1]));
        at[0] = AS_ATTR_V("dims", nd, dims);
        at[1] = AS_ATTR_I("keepdims", 0);
        if (u == NULL || (u[self] & 8u))
            AS_CHECK(hlo_add_part(im, ins, prefix, "doffset", &cs, "reduce_sum", &in[4], 1, at,
                                  2, &outs[2]));
    }
done:
    for (j = 0; j < 3; j++) {
        elts[j].tid = outs[j];
        elts[j].n = 0;
        elts[j].elts = NULL;
    }
    res->tid = -1;
    res->n = 3;
    res->elts = elts;
    return AS_OK;
}

/* Operands of INS as tensor ids (all must be arrays). */
static int
hlo_operands(importer *im, const hlo_instr *ins, const hval *vals, int32_t *in, int max)
{
    int j;

    if (ins->nops > max)
        return ierr(im, ins->line, ins->col, "'%s' has too many operands (%d)", ins->name,
                    ins->nops);
    for (j = 0; j < ins->nops; j++)
        AS_CHECK(hlo_operand(im, ins, vals, j, &in[j]));
    return AS_OK;
}

static const char *
hlo_map_name(const char *const (*map)[2], const char *op)
{
    int i;

    for (i = 0; map[i][0] != NULL; i++)
        if (strcmp(map[i][0], op) == 0)
            return map[i][1];
    return NULL;
}

static const char *const hlo_unary[][2] = {
    {"exponential", "exp"}, {"log", "log"}, {"tanh", "tanh"}, {"logistic", "sigmoid"},
    {"rsqrt", "rsqrt"}, {"sqrt", "sqrt"}, {"negate", "neg"}, {"abs", "abs"},
    {"sign", "sign"}, {"copy", "identity"}, {"erf", "erf"}, {NULL, NULL}};
static const char *const hlo_binary[][2] = {
    {"add", "add"}, {"subtract", "sub"}, {"multiply", "mul"}, {"divide", "div"},
    {"maximum", "max"}, {"minimum", "min"}, {"power", "pow"}, {NULL, NULL}};

/* dot: the registry's matmul when it fits [b..., m, k] x [b..., k, n], else dot_general. */
static int
hlo_dot(importer *im, const hlo_instr *ins, const char *prefix, const int32_t *in, hval *res)
{
    int64_t lb[MAX_LIST], rb[MAX_LIST], lc[MAX_LIST], rc[MAX_LIST];
    int nlb = hlo_attr_ints(ins, "lhs_batch_dims", lb), nrb = hlo_attr_ints(ins, "rhs_batch_dims", rb);
    int nlc = hlo_attr_ints(ins, "lhs_contracting_dims", lc);
    int nrc = hlo_attr_ints(ins, "rhs_contracting_dims", rc);
    int ra = as_graph_tensor(im->g, in[0])->shape.rank, rbk = as_graph_tensor(im->g, in[1])->shape.rank;
    int nb, i, fits;

    nlb = nlb < 0 ? 0 : nlb;
    nrb = nrb < 0 ? 0 : nrb;
    nlc = nlc < 0 ? 0 : nlc;
    nrc = nrc < 0 ? 0 : nrc;
    nb = nlb;
    fits = nlb == nrb && nlc == 1 && nrc == 1;
    for (i = 0; fits && i < nb; i++)
        fits = lb[i] == i && rb[i] == i;
    if (fits && nb > 0)
        fits = ra == nb + 2 && rbk == nb + 2;
    else if (fits)
        fits = ra >= 2 && rbk == 2;
    if (fits)
        fits = (lc[0] == ra - 1 || lc[0] == ra - 2) && (rc[0] == rbk - 2 || rc[0] == rbk - 1) &&
               (ra == nb + 2 || lc[0] == ra - 1);
    if (fits) {
        as_attr at[2] = {AS_ATTR_I("transpose_a", lc[0] == ra - 2),
                         AS_ATTR_I("transpose_b", rc[0] == rbk - 1)};
        return hlo_simple(im, ins, prefix, "matmul", in, 2, at, 2, res);
    }
    {
        as_attr at[4] = {AS_ATTR_V("lhs_batch", nlb, lb), AS_ATTR_V("rhs_batch", nrb, rb),
                         AS_ATTR_V("lhs_contract", nlc, lc), AS_ATTR_V("rhs_contract", nrc, rc)};
        return hlo_simple(im, ins, prefix, "dot_general", in, 2, at, 4, res);
    }
}

/* slice={[0:8], [2:4:2]} into begin/end/strides; 0 if malformed. */
static int
hlo_parse_slice(const hlo_attr *a, int64_t *b, int64_t *e, int64_t *s, int *n)
{
    const char *p = a->val, *end = a->val + a->vlen;

    *n = 0;
    while (p < end) {
        int64_t v[3] = {0, 0, 1};
        int k = 0;
        char *q;
        p = memchr(p, '[', (size_t)(end - p));
        if (p == NULL)
            break;
        p++;
        while (k < 3) {
            v[k++] = as_hlo_i_int(p, &q);
            if (q == p)
                return 0;
            p = q;
            if (*p != ':')
                break;
            p++;
        }
        if (*p != ']' || k < 2 || *n >= AS_MAX_RANK)
            return 0;
        b[*n] = v[0];
        e[*n] = v[1];
        s[*n] = v[2];
        (*n)++;
    }
    return 1;
}

/*
 * window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1
 * rhs_reversal=0x1}: fill per-dim arrays (defaults 1 / 0; REV[k] = 1 for
 * lhs_reversal | 2 for rhs_reversal); returns the rank or -1.
 */
static int
hlo_parse_window(const hlo_attr *a, int64_t *size, int64_t *stride, int64_t *lo, int64_t *hi,
                 int64_t *ldil, int64_t *rdil, int64_t *rev)
{
    char buf[512], *tok, *save = NULL;
    int rank = -1, i;

    if (a == NULL || a->vlen >= sizeof buf)
        return -1;
    memcpy(buf, a->val, a->vlen);
    buf[a->vlen] = '\0';
    for (i = 0; i < AS_MAX_RANK; i++) {
        size[i] = stride[i] = ldil[i] = rdil[i] = 1;
        lo[i] = hi[i] = rev[i] = 0;
    }
    for (tok = strtok_r(buf, "{} ", &save); tok != NULL; tok = strtok_r(NULL, "{} ", &save)) {
        char *eq = strchr(tok, '='), *p;
        int k = 0;
        if (eq == NULL)
            return -1;
        *eq = '\0';
        for (p = eq + 1; *p && k < AS_MAX_RANK; k++) {
            char *q;
            int64_t x = as_hlo_i_int(p, &q), y = 0;
            if (q == p)
                return -1;
            if (*q == '_') {
                p = q + 1;
                y = as_hlo_i_int(p, &q);
            }
            if (strcmp(tok, "size") == 0)
                size[k] = x;
            else if (strcmp(tok, "stride") == 0)
                stride[k] = x;
            else if (strcmp(tok, "pad") == 0)
                lo[k] = x, hi[k] = y;
            else if (strcmp(tok, "lhs_dilate") == 0)
                ldil[k] = x;
            else if (strcmp(tok, "rhs_dilate") == 0)
                rdil[k] = x;
            else if (strcmp(tok, "lhs_reversal") == 0 || strcmp(tok, "rhs_reversal") == 0)
                rev[k] |= x != 0 ? (tok[0] == 'l' ? 1 : 2) : 0;
            else
                return -1;
            p = *q == 'x' ? q + 1 : q;
        }
        rank = rank > k ? rank : k;
    }
    return rank;
}

/* replica_groups={{0,1},{2,3}} (or [2,4]<=[8]): size of one group, 0 if unknown. */
static int64_t
hlo_group_size(const hlo_instr *ins)
{
    const hlo_attr *a = as_hlo_i_attr(ins, "replica_groups");
    const char *p, *e;
    int64_t v[MAX_LIST];
    int n;

    if (a == NULL || a->vlen < 2)
        return 0;
    if (a->val[0] == '[') { /* iota form [groups,size]<=[n] */
        e = memchr(a->val, ']', a->vlen);
        n = e != NULL ? as_hlo_i_ints(a->val, (size_t)(e - a->val + 1), v, MAX_LIST) : -1;
        return n >= 2 ? v[n - 1] : 0;
    }
    p = memchr(a->val + 1, '{', a->vlen - 1);
    if (p == NULL)
        return 0;
    e = memchr(p, '}', a->vlen - (size_t)(p - a->val));
    if (e == NULL)
        return 0;
    n = as_hlo_i_ints(p, (size_t)(e - p + 1), v, MAX_LIST);
    if (n < 0) { /* more than MAX_LIST members: count commas */
        const char *q;
        n = 1;
        for (q = p; q < e; q++)
            n += *q == ',';
    }
    return n;
}

/* all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute: one op per operand. */
static int
hlo_collective(importer *im, const hlo_instr *ins, const char *prefix, const hval *vals,
               const char *optype, hval *res)
{
    shape_vec decl = {0};
    hval *elts = NULL;
    int64_t gs = hlo_group_size(ins), dim = hlo_attr_int(ins, "dimensions", 0);
    const char *red = hlo_reducer(im, hlo_callee(im, ins, "to_apply"));
    int rc = AS_OK, j;

    hlo_type_leaves(&ins->type, &decl);
    if (decl.n != (size_t)ins->nops || ins->nops == 0) {
        free(decl.v);
        return hlo_opaque(im, ins, prefix, vals, 0.0, ins->opcode, res);
    }
    elts = as_arena_alloc(im->m->arena, sizeof *elts * (size_t)ins->nops);
    for (j = 0; j < ins->nops; j++) {
        const hlo_instr *one = ins;
        hlo_instr tmp;
        int32_t in, outs[AS_MAX_OUTS];
        int nout, na = 0;
        char nbuf[600];
        int64_t g = gs;
        const as_shape *is;
        as_attr at[3];
        AS_CHECK_GOTO(rc, hlo_operand(im, ins, vals, j, &in), out);
        is = &as_graph_tensor(im->g, in)->shape;
        if (ins->nops > 1 && is->rank == 0 && decl.v[j].rank == 0 &&
            (strcmp(optype, "all_gather") == 0 || strcmp(optype, "reduce_scatter") == 0)) {
            /* a scalar token (PyTorch/XLA orders its combined collectives with one) has no
             * dim to gather or scatter: XLA passes it through, and so does the import */
            elts[j].tid = in;
            elts[j].n = 0;
            elts[j].elts = NULL;
            continue;
        }
        if (ins->nops > 1) { /* name the parts NAME.j, check each against its declared leaf */
            tmp = *ins;
            snprintf(nbuf, sizeof nbuf, "%s.%d", ins->name, j);
            tmp.name = as_arena_strdup(im->m->arena, nbuf);
            tmp.type.ntuple = -1;
            tmp.type.shape = decl.v[j];
            one = &tmp;
        }
        if (dim >= 0 && dim < is->rank && decl.v[j].rank == is->rank &&
            (strcmp(optype, "all_gather") == 0 || strcmp(optype, "reduce_scatter") == 0)) {
            int64_t a = is->dim[dim], b = decl.v[j].dim[dim];
            int64_t derived = strcmp(optype, "all_gather") == 0 ? (a ? b / a : 1) : (b ? a / b : 1);
            if (g <= 0)
                g = derived > 0 ? derived : 1;
        }
        if (g <= 0)
            g = 1;
        if (strcmp(optype, "all_gather") == 0 || strcmp(optype, "reduce_scatter") == 0 ||
            strcmp(optype, "all_to_all") == 0)
            at[na++] = AS_ATTR_I("dim", dim);
        if (strcmp(optype, "all_reduce") == 0 || strcmp(optype, "reduce_scatter") == 0)
            at[na++] = AS_ATTR_S("reducer", red != NULL ? red : "other");
        at[na++] = AS_ATTR_I("group_size", g);
        AS_CHECK_GOTO(rc, hlo_add_op(im, one, prefix, optype, &in, 1, at, na, outs, &nout), out);
        elts[j].tid = outs[0];
        elts[j].n = 0;
        elts[j].elts = NULL;
    }
    if (ins->type.ntuple < 0) {
        *res = elts[0];
    } else {
        res->tid = -1;
        res->n = ins->nops;
        res->elts = elts;
    }
out:
    free(decl.v);
    return rc;
}

/* reduce with a sum/max/min reducer and one operand; anything else is opaque. */
static int
hlo_reduce(importer *im, const hlo_comp *c, const hlo_instr *ins, const char *prefix,
           const hval *vals, hval *res)
{
    const char *red = hlo_reducer(im, hlo_callee(im, ins, "to_apply"));
    int64_t dims[MAX_LIST];
    int nd = hlo_attr_ints(ins, "dimensions", dims);
    int32_t in;
    const char *optype = NULL;

    if (red != NULL && strcmp(red, "sum") == 0)
        optype = "reduce_sum";
    else if (red != NULL && strcmp(red, "max") == 0)
        optype = "reduce_max";
    else if (red != NULL && strcmp(red, "min") == 0)
        optype = "reduce_min";
    if (optype == NULL || ins->nops != 2 || ins->type.ntuple >= 0 || nd < 0 ||
        vals[ins->opidx[0]].tid < 0)
        return hlo_opaque(im, ins, prefix, vals, hlo_instr_flops(im, c, ins),
                          "reduce (variadic or custom reducer)", res);
    AS_CHECK(hlo_operand(im, ins, vals, 0, &in));
    {
        as_attr at[2] = {AS_ATTR_V("dims", nd, dims), AS_ATTR_I("keepdims", 0)};
        return hlo_simple(im, ins, prefix, optype, &in, 1, at, 2, res);
    }
}

/* pad: the registry's pad when padding is non-negative, has no interior part and the value is a
 * scalar constant; else opaque. */
static int
hlo_pad(importer *im, const hlo_comp *c, const hlo_instr *ins, const char *prefix,
        const hval *vals, hval *res)
{
    const hlo_attr *a = as_hlo_i_attr(ins, "padding");
    int64_t lo[AS_MAX_RANK], hi[AS_MAX_RANK];
    const char *p, *end;
    double value;
    int n = 0, ok = a != NULL && ins->nops == 2;
    int32_t in;

    ok = ok && hlo_const_value(&c->ins[ins->opidx[1]], &value);
    for (p = ok ? a->val : NULL, end = ok ? a->val + a->vlen : NULL; ok && p < end; n++) {
        char *q;
        int64_t v[3] = {0, 0, 0};
        int k;
        for (k = 0; k < 3; k++) {
            v[k] = as_hlo_i_int(p, &q);
            if (q == p)
                break;
            p = q;
            if (p < end && *p == '_')
                p++;
            else {
                k++;
                break;
            }
        }
        ok = k >= 2 && n < AS_MAX_RANK && v[0] >= 0 && v[1] >= 0 && v[2] == 0;
        if (ok) {
            lo[n] = v[0];
            hi[n] = v[1];
        }
        if (p < end && *p == 'x')
            p++;
        else if (p < end)
            ok = 0;
    }
    if (!ok)
        return hlo_opaque(im, ins, prefix, vals, 0.0, "pad (interior, negative or dynamic)", res);
    AS_CHECK(hlo_operand(im, ins, vals, 0, &in));
    {
        as_attr at[3] = {AS_ATTR_V("lo", n, lo), AS_ATTR_V("hi", n, hi), AS_ATTR_F("value", value)};
        return hlo_simple(im, ins, prefix, "pad", &in, 1, at, 3, res);
    }
}

/*
 * convolution: the registry's conv2d when the layout is NCHW/OIHW
 * (bf01_oi01->bf01), the padding symmetric and there is no lhs dilation,
 * batch grouping or reversal; else conv_general with the full window.
 */
static int
hlo_conv(importer *im, const hlo_instr *ins, const char *prefix, const hval *vals, hval *res)
{
    int64_t sz[AS_MAX_RANK], st[AS_MAX_RANK], lo[AS_MAX_RANK], hi[AS_MAX_RANK];
    int64_t ld[AS_MAX_RANK], rd[AS_MAX_RANK], rev[AS_MAX_RANK], rrev[AS_MAX_RANK];
    const hlo_attr *dl = as_hlo_i_attr(ins, "dim_labels");
    int r = hlo_parse_window(as_hlo_i_attr(ins, "window"), sz, st, lo, hi, ld, rd, rev);
    int64_t groups = hlo_attr_int(ins, "feature_group_count", 1);
    int64_t bgroups = hlo_attr_int(ins, "batch_group_count", 1);
    int k, nchw, lrev = 0;
    char lab[64];
    int32_t in[2];

    for (k = 0; k < r; k++) {
        lrev |= (rev[k] & 1) != 0;
        rrev[k] = (rev[k] & 2) != 0;
    }
    if (r < 0 || lrev || dl == NULL || dl->vlen >= sizeof lab || ins->nops != 2)
        return hlo_opaque(im, ins, prefix, vals, 0.0,
                          "convolution (unparsed window or lhs_reversal)", res);
    memcpy(lab, dl->val, dl->vlen);
    lab[dl->vlen] = '\0';
    AS_CHECK(hlo_operands(im, ins, vals, in, 2));
    nchw = strcmp(lab, "bf01_oi01->bf01") == 0 && r == 2 && bgroups == 1 &&
           as_dtype_is_float(as_graph_tensor(im->g, in[0])->shape.dtype);
    for (k = 0; nchw && k < r; k++)
        nchw = ld[k] == 1 && lo[k] == hi[k] && lo[k] >= 0 && rrev[k] == 0;
    if (nchw) {
        as_attr at[4] = {AS_ATTR_V("stride", 2, st), AS_ATTR_V("padding", 2, lo),
                         AS_ATTR_V("dilation", 2, rd), AS_ATTR_I("groups", groups)};
        return hlo_simple(im, ins, prefix, "conv2d", in, 2, at, 4, res);
    }
    {
        as_attr at[9] = {AS_ATTR_S("dim_labels", lab),
                         AS_ATTR_V("stride", r, st),
                         AS_ATTR_V("pad_lo", r, lo),
                         AS_ATTR_V("pad_hi", r, hi),
                         AS_ATTR_V("lhs_dilate", r, ld),
                         AS_ATTR_V("rhs_dilate", r, rd),
                         AS_ATTR_V("rhs_reversal", r, rrev),
                         AS_ATTR_I("feature_group_count", groups),
                         AS_ATTR_I("batch_group_count", bgroups)};
        return hlo_simple(im, ins, prefix, "conv_general", in, 2, at, 9, res);
    }
}

static int
hlo_reduce_window(importer *im, const hlo_comp *c, const hlo_instr *ins, const char *prefix,
                  const hval *vals, hval *res)
{
    int64_t sz[AS_MAX_RANK], st[AS_MAX_RANK], lo[AS_MAX_RANK], hi[AS_MAX_RANK];
    int64_t ld[AS_MAX_RANK], rd[AS_MAX_RANK], rev[AS_MAX_RANK];
    int r = hlo_parse_window(as_hlo_i_attr(ins, "window"), sz, st, lo, hi, ld, rd, rev), i;
    int dil = 0;
    const char *red = hlo_reducer(im, hlo_callee(im, ins, "to_apply"));
    double init = 0.0;
    int32_t in;

    for (i = 0; i < r; i++)
        dil |= ld[i] != 1 || rd[i] != 1 || rev[i] != 0;
    if (r < 0 || dil || ins->nops != 2 || red == NULL || strcmp(red, "prod") == 0 ||
        strcmp(red, "assign") == 0 || !hlo_const_value(&c->ins[ins->opidx[1]], &init))
        return hlo_opaque(im, ins, prefix, vals, hlo_instr_flops(im, c, ins),
                          "reduce-window (variadic, dilated or custom reducer)", res);
    AS_CHECK(hlo_operand(im, ins, vals, 0, &in));
    {
        as_attr at[6] = {AS_ATTR_V("window", r, sz), AS_ATTR_V("stride", r, st),
                         AS_ATTR_V("pad_lo", r, lo), AS_ATTR_V("pad_hi", r, hi),
                         AS_ATTR_S("reducer", red), AS_ATTR_F("init", init)};
        return hlo_simple(im, ins, prefix, "reduce_window", &in, 1, at, 6, res);
    }
}

static int
hlo_gather(importer *im, const hlo_instr *ins, const char *prefix, const hval *vals, hval *res)
{
    int64_t off[MAX_LIST], col[MAX_LIST], map[MAX_LIST], sizes[MAX_LIST], bd[MAX_LIST];
    int noff = hlo_attr_ints(ins, "offset_dims", off);
    int ncol = hlo_attr_ints(ins, "collapsed_slice_dims", col);
    int nmap = hlo_attr_ints(ins, "start_index_map", map);
    int nsz = hlo_attr_ints(ins, "slice_sizes", sizes);
    int nbd = hlo_attr_ints(ins, "operand_batching_dims", bd);
    int32_t in[2];

    if (ins->nops != 2 || nsz < 0 || nmap < 0 || nbd > 0)
        return hlo_opaque(im, ins, prefix, vals, 0.0, "gather (batching dims)", res);
    AS_CHECK(hlo_operands(im, ins, vals, in, 2));
    {
        as_attr at[5] = {AS_ATTR_V("offset_dims", noff < 0 ? 0 : noff, off),
                         AS_ATTR_V("collapsed_slice_dims", ncol < 0 ? 0 : ncol, col),
                         AS_ATTR_V("start_index_map", nmap, map),
                         AS_ATTR_I("index_vector_dim", hlo_attr_int(ins, "index_vector_dim", 0)),
                         AS_ATTR_V("slice_sizes", nsz, sizes)};
        return hlo_simple(im, ins, prefix, "gather", in, 2, at, 5, res);
    }
}

static int
hlo_scatter(importer *im, const hlo_instr *ins, const char *prefix, const hval *vals, hval *res)
{
    int64_t win[MAX_LIST], ins_d[MAX_LIST], map[MAX_LIST], bd[MAX_LIST];
    int nwin = hlo_attr_ints(ins, "update_window_dims", win);
    int nins = hlo_attr_ints(ins, "inserted_window_dims", ins_d);
    int nmap = hlo_attr_ints(ins, "scatter_dims_to_operand_dims", map);
    int nbd = hlo_attr_ints(ins, "input_batching_dims", bd);
    const char *red = hlo_reducer(im, hlo_callee(im, ins, "to_apply"));
    const char *comb;
    int32_t in[3];

    comb = red == NULL ? NULL : strcmp(red, "sum") == 0 ? "add" : strcmp(red, "prod") == 0 ? "mul" : red;
    if (ins->nops != 3 || nmap < 0 || comb == NULL || nbd > 0)
        return hlo_opaque(im, ins, prefix, vals, 0.0, "scatter (variadic or custom combiner)",
                          res);
    AS_CHECK(hlo_operands(im, ins, vals, in, 3));
    {
        as_attr at[5] = {AS_ATTR_V("update_window_dims", nwin < 0 ? 0 : nwin, win),
                         AS_ATTR_V("inserted_window_dims", nins < 0 ? 0 : nins, ins_d),
                         AS_ATTR_V("scatter_dims_to_operand_dims", nmap, map),
                         AS_ATTR_I("index_vector_dim", hlo_attr_int(ins, "index_vector_dim", 0)),
                         AS_ATTR_S("combine", comb)};
        return hlo_simple(im, ins, prefix, "scatter", in, 3, at, 5, res);
    }
}

/* Inline call / fusion: bind the callee's parameters to the operands. */
static int
hlo_inline(importer *im, const hlo_instr *ins, const char *prefix, const hval *vals,
           const char *key, hval *res)
{
    int callee = hlo_callee(im, ins, key), j, rc;
    hval *args;
    char buf[600];

    if (callee < 0)
        return ierr(im, ins->line, ins->col, "'%s' has no '%s' computation", ins->name, key);
    if (im->m->comps[callee].nparams != ins->nops)
        return ierr(im, ins->line, ins->col, "'%s' passes %d operands to '%s', which takes %d",
                    ins->name, ins->nops, im->m->comps[callee].name,
                    im->m->comps[callee].nparams);
    if (im->depth >= HLO_MAX_DEPTH)
        return ierr(im, ins->line, ins->col, "calls nested more than %d deep", HLO_MAX_DEPTH);
    im->inlined += im->m->comps[callee].nins;
    if (im->inlined > HLO_MAX_INLINED)
        return ierr(im, ins->line, ins->col, "inlining calls expands the module to more than %d "
                    "instructions", HLO_MAX_INLINED);
    args = as_xcalloc((size_t)ins->nops + 1, sizeof *args);
    for (j = 0; j < ins->nops; j++)
        args[j] = vals[ins->opidx[j]];
    im->depth++;
    rc = hlo_emit_comp(im, callee, as_graph_strdup(im->g, hlo_full_name(prefix, ins, buf,
                                                                       sizeof buf)),
                       args, res);
    im->depth--;
    free(args);
    return rc;
}

/*
 * An operand the module does not define but whose type is written with it:
 * one input per leaf of that type (an array: NAME; a tuple: NAME.0, NAME.1,
 * ... over its leaves in order), batch dim 0.
 */
static int
hlo_extern(importer *im, const hlo_instr *ins, const char *prefix, hval *res)
{
    shape_vec leaves = {0};
    id_vec ids = {0};
    char base[600], name[640];
    int rc = AS_OK, k = 0;
    size_t i;

    hlo_full_name(prefix, ins, base, sizeof base);
    if (prefix == NULL)
        snprintf(base, sizeof base, "%s", ins->name);
    hlo_type_leaves(&ins->type, &leaves);
    for (i = 0; i < leaves.n; i++) {
        int32_t tid;
        if (ins->type.ntuple < 0)
            snprintf(name, sizeof name, "%s", base);
        else
            snprintf(name, sizeof name, "%s.%d", base, (int)i);
        if (as_graph_add_tensor(im->g, name, &leaves.v[i], AS_TK_INPUT,
                                leaves.v[i].rank > 0 ? 0 : -1, &tid, im->err) != AS_OK) {
            as_err_prefix(im->err, "%s:%d:%d: ", im->path, ins->line, ins->col);
            rc = AS_EPARSE;
            goto out;
        }
        as_graph_tensor_line(im->g, tid, ins->line);
        AS_VEC_PUSH(&ids, tid);
    }
    *res = hlo_val_like(im, &ins->type, ids.v, &k);
out:
    free(leaves.v);
    free(ids.v);
    return rc;
}

/* Instructions that carry a value through unchanged or only rearrange a tuple. */
static int
hlo_structural(importer *im, const hlo_instr *ins, const hval *vals, hval *res)
{
    if (op_is(ins, "tuple")) {
        hval *e = as_arena_alloc(im->m->arena, sizeof *e * (size_t)(ins->nops + 1));
        int j;
        for (j = 0; j < ins->nops; j++)
            e[j] = vals[ins->opidx[j]];
        res->tid = -1;
        res->n = ins->nops;
        res->elts = e;
        return AS_OK;
    }
    if (ins->nops != 1)
        return ierr(im, ins->line, ins->col, "'%s' takes 1 operand, got %d", ins->opcode,
                    ins->nops);
    if (op_is(ins, "get-tuple-element")) {
        const hval *t = &vals[ins->opidx[0]];
        int64_t k = hlo_attr_int(ins, "index", -1);
        if (t->tid >= 0 || k < 0 || k >= t->n)
            return ierr(im, ins->line, ins->col, "'%s': tuple index %lld out of range", ins->name,
                        (long long)k);
        *res = t->elts[k];
        return AS_OK;
    }
    *res = vals[ins->opidx[0]]; /* opt-barrier */
    return AS_OK;
}

/* Emit instruction I of computation C. */
static int
hlo_emit_instr(importer *im, const hlo_comp *c, int i, const char *prefix, const hval *args,
               hval *vals)
{
    const hlo_instr *ins = &c->ins[i];
    const char *op = ins->opcode, *mapped;
    hval *res = &vals[i];
    int32_t *in;
    char buf[600];

    res->tid = -1;
    res->n = 0;
    res->elts = NULL;
    AS_CHECK(hlo_check_lists(im, ins));
    if (op_is(ins, "parameter")) {
        int k = (int)strtol(ins->args, NULL, 10);
        if (args != NULL) {
            *res = args[k];
            return AS_OK;
        }
        if (ins->type.ntuple >= 0)
            return ierr(im, ins->line, ins->col, "tuple-shaped entry parameter '%s' is not "
                        "supported", ins->name);
        if (as_graph_add_tensor(im->g, ins->name, &ins->type.shape, im->pkind[k],
                                im->pkind[k] == AS_TK_INPUT && ins->type.shape.rank > 0 ? 0 : -1,
                                &res->tid, im->err) != AS_OK) {
            as_err_prefix(im->err, "%s:%d:%d: ", im->path, ins->line, ins->col);
            return AS_EPARSE;
        }
        as_graph_tensor_line(im->g, res->tid, ins->line);
        return AS_OK;
    }
    if (op_is(ins, AS_HLO_EXTERN))
        return hlo_extern(im, ins, prefix, res);
    if (op_is(ins, "constant")) {
        if (ins->type.ntuple >= 0)
            return hlo_opaque(im, ins, prefix, vals, 0.0, "constant (tuple)", res);
        if (as_graph_add_tensor(im->g, hlo_full_name(prefix, ins, buf, sizeof buf),
                                &ins->type.shape, AS_TK_CONST, -1, &res->tid, im->err) != AS_OK) {
            as_err_prefix(im->err, "%s:%d:%d: ", im->path, ins->line, ins->col);
            return AS_EPARSE;
        }
        as_graph_tensor_line(im->g, res->tid, ins->line);
        return AS_OK;
    }
    if (op_is(ins, "tuple") || op_is(ins, "get-tuple-element") || op_is(ins, "opt-barrier"))
        return hlo_structural(im, ins, vals, res);
    if (op_is(ins, "call"))
        return hlo_inline(im, ins, prefix, vals, "to_apply", res);
    if (op_is(ins, "fusion"))
        return hlo_inline(im, ins, prefix, vals, "calls", res);
    if (op_is(ins, "while") || op_is(ins, "conditional")) {
        im->nloops++;
        return hlo_opaque(im, ins, prefix, vals, hlo_instr_flops(im, c, ins), NULL, res);
    }
    if (op_is(ins, "custom-call") && ins->type.ntuple < 0 && (mapped = hlo_custom_op(ins)) != NULL)
        return hlo_custom_mapped(im, ins, prefix, vals, mapped, res);
    if (op_is(ins, "batch-norm-training") || op_is(ins, "batch-norm-grad")) {
        int done;
        AS_CHECK(hlo_batch_norm(im, ins, prefix, vals, res, &done));
        if (done)
            return AS_OK;
    }
    if (op_is(ins, "custom-call") || op_is(ins, "batch-norm-training") ||
        op_is(ins, "batch-norm-grad") || op_is(ins, "batch-norm-inference") ||
        op_is(ins, "rng-bit-generator") || op_is(ins, "rng") || op_is(ins, "sort") ||
        op_is(ins, "reverse") || op_is(ins, "bitcast-convert") || op_is(ins, "reduce-precision") ||
        ins->type.ntuple >= 0) {
        if (!op_is(ins, "all-reduce") && !op_is(ins, "all-gather") &&
            !op_is(ins, "reduce-scatter") && !op_is(ins, "all-to-all") && !op_is(ins, "reduce"))
            return hlo_opaque(im, ins, prefix, vals,
                              hlo_is_elementwise(op) ? hlo_type_numel(&ins->type) : 0.0, op,
                              res);
    }
    if (op_is(ins, "all-reduce"))
        return hlo_collective(im, ins, prefix, vals, "all_reduce", res);
    if (op_is(ins, "all-gather"))
        return hlo_collective(im, ins, prefix, vals, "all_gather", res);
    if (op_is(ins, "reduce-scatter"))
        return hlo_collective(im, ins, prefix, vals, "reduce_scatter", res);
    if (op_is(ins, "all-to-all"))
        return hlo_collective(im, ins, prefix, vals, "all_to_all", res);
    if (op_is(ins, "collective-permute"))
        return hlo_collective(im, ins, prefix, vals, "collective_permute", res);
    if (op_is(ins, "reduce"))
        return hlo_reduce(im, c, ins, prefix, vals, res);
    if (op_is(ins, "pad"))
        return hlo_pad(im, c, ins, prefix, vals, res);
    if (op_is(ins, "convolution"))
        return hlo_conv(im, ins, prefix, vals, res);
    if (op_is(ins, "reduce-window"))
        return hlo_reduce_window(im, c, ins, prefix, vals, res);
    if (op_is(ins, "gather"))
        return hlo_gather(im, ins, prefix, vals, res);
    if (op_is(ins, "scatter"))
        return hlo_scatter(im, ins, prefix, vals, res);
    if (op_is(ins, "iota")) {
        as_attr at[3] = {
            AS_ATTR_V("shape", ins->type.shape.rank, ins->type.shape.dim),
            AS_ATTR_I("dim", hlo_attr_int(ins, "iota_dimension", 0)),
            AS_ATTR_S("dtype", as_dtype_name(ins->type.shape.dtype))};
        return hlo_simple(im, ins, prefix, "iota", NULL, 0, at, 3, res);
    }
    in = as_arena_alloc(im->m->arena, sizeof *in * (size_t)(ins->nops + 1));
    AS_CHECK(hlo_operands(im, ins, vals, in, ins->nops));
    if ((mapped = hlo_map_name(hlo_unary, op)) != NULL && ins->nops == 1)
        return hlo_simple(im, ins, prefix, mapped, in, 1, NULL, 0, res);
    if ((mapped = hlo_map_name(hlo_binary, op)) != NULL && ins->nops == 2)
        return hlo_simple(im, ins, prefix, mapped, in, 2, NULL, 0, res);
    if (op_is(ins, "dot") && ins->nops == 2)
        return hlo_dot(im, ins, prefix, in, res);
    if (op_is(ins, "select") || op_is(ins, "clamp"))
        return hlo_simple(im, ins, prefix, op, in, ins->nops, NULL, 0, res);
    if (op_is(ins, "compare") && ins->nops == 2) {
        const hlo_attr *d = as_hlo_i_attr(ins, "direction");
        char dir[8];
        size_t k;
        if (d == NULL || d->vlen != 2)
            return ierr(im, ins->line, ins->col, "'%s': compare needs direction=EQ|NE|LT|LE|GT|GE",
                        ins->name);
        for (k = 0; k < 2; k++)
            dir[k] = (char)(d->val[k] | 0x20);
        dir[2] = '\0';
        {
            as_attr at[1] = {AS_ATTR_S("direction", dir)};
            return hlo_simple(im, ins, prefix, "compare", in, 2, at, 1, res);
        }
    }
    if (op_is(ins, "convert") && ins->nops == 1) {
        as_attr at[1] = {AS_ATTR_S("dtype", as_dtype_name(ins->type.shape.dtype))};
        return hlo_simple(im, ins, prefix, "cast", in, 1, at, 1, res);
    }
    if (op_is(ins, "broadcast") && ins->nops == 1) {
        int64_t d[MAX_LIST];
        int nd = hlo_attr_ints(ins, "dimensions", d);
        as_attr at[2] = {AS_ATTR_V("shape", ins->type.shape.rank, ins->type.shape.dim),
                         AS_ATTR_V("dims", nd < 0 ? 0 : nd, d)};
        return hlo_simple(im, ins, prefix, "broadcast", in, 1, at, 2, res);
    }
    if ((op_is(ins, "reshape") || op_is(ins, "bitcast")) && ins->nops == 1) {
        as_attr at[1] = {AS_ATTR_V("shape", ins->type.shape.rank, ins->type.shape.dim)};
        return hlo_simple(im, ins, prefix, "reshape", in, 1, at, 1, res);
    }
    if (op_is(ins, "transpose") && ins->nops == 1) {
        int64_t d[MAX_LIST];
        int nd = hlo_attr_ints(ins, "dimensions", d);
        as_attr at[1] = {AS_ATTR_V("perm", nd < 0 ? 0 : nd, d)};
        return hlo_simple(im, ins, prefix, "transpose", in, 1, at, 1, res);
    }
    if (op_is(ins, "concatenate") && ins->nops >= 1) {
        as_attr at[1] = {AS_ATTR_I("axis", hlo_attr_int(ins, "dimensions", 0))};
        return hlo_simple(im, ins, prefix, "concat", in, ins->nops, at, 1, res);
    }
    if (op_is(ins, "slice") && ins->nops == 1) {
        int64_t b[AS_MAX_RANK], e[AS_MAX_RANK], s[AS_MAX_RANK];
        const hlo_attr *a = as_hlo_i_attr(ins, "slice");
        int n;
        if (a == NULL || !hlo_parse_slice(a, b, e, s, &n))
            return ierr(im, ins->line, ins->col, "'%s': malformed slice={[begin:end:stride],...}",
                        ins->name);
        {
            as_attr at[3] = {AS_ATTR_V("begin", n, b), AS_ATTR_V("end", n, e),
                             AS_ATTR_V("strides", n, s)};
            return hlo_simple(im, ins, prefix, "slice", in, 1, at, 3, res);
        }
    }
    if (op_is(ins, "dynamic-slice") && ins->nops >= 2) {
        int64_t sz[MAX_LIST];
        int n = hlo_attr_ints(ins, "dynamic_slice_sizes", sz);
        as_attr at[1] = {AS_ATTR_V("sizes", n < 0 ? 0 : n, sz)};
        return hlo_simple(im, ins, prefix, "dynamic_slice", in, ins->nops, at, 1, res);
    }
    if (op_is(ins, "dynamic-update-slice") && ins->nops >= 3)
        return hlo_simple(im, ins, prefix, "dynamic_update_slice", in, ins->nops, NULL, 0, res);
    /* Anything else: keep its shapes, estimate 1 FLOP per element for elementwise ones. */
    return hlo_opaque(im, ins, prefix, vals,
                      hlo_is_elementwise(op) ? hlo_type_numel(&ins->type) : 0.0, op, res);
}

/* Is instruction I of C a batch-norm-grad hlo_batch_norm maps (it reads operands 0, 1, 4)? */
static int
hlo_bn_grad_mapped(const hlo_comp *c, int i)
{
    const hlo_instr *ins = &c->ins[i];

    return op_is(ins, "batch-norm-grad") && ins->nops == 5 && ins->type.ntuple == 3 &&
           hlo_attr_int(ins, "feature_index", -1) == 1;
}

/*
 * Which results of C's instructions are used once batch norms are mapped (*USED, malloc'ed,
 * NULL when C has no batch norm): bit 0 the instruction is live (reached from ROOT), bits
 * 1..7 tuple elements 0..6 read through get-tuple-element, all bits when read whole.  A
 * mapped batch-norm-grad does not read mean and var (operands 2 and 3: it recomputes them
 * from x), so what only fed them is not emitted, and batch-norm-training's mean and var are
 * emitted only when something reads them.
 */
static unsigned char *
hlo_bn_uses(const hlo_comp *c, char **skip)
{
    unsigned char *used;
    int i, j, any = 0;

    *skip = NULL;
    for (i = 0; i < c->nins && !any; i++)
        any = op_is(&c->ins[i], "batch-norm-training") || hlo_bn_grad_mapped(c, i);
    if (!any)
        return NULL;
    /* skip: live when every operand is read, dead when mapped batch-norm-grads are not */
    *skip = as_xcalloc((size_t)c->nins + 1, 1);
    (*skip)[c->root] = 1;
    for (i = c->nins - 1; i >= 0; i--)
        for (j = 0; (*skip)[i] && j < c->ins[i].nops; j++)
            if (c->ins[i].opidx[j] >= 0 && c->ins[i].opidx[j] < c->nins)
                (*skip)[c->ins[i].opidx[j]] = 1;
    used = as_xcalloc((size_t)c->nins + 1, 1);
    used[c->root] = 0xff;
    for (i = c->nins - 1; i >= 0; i--) { /* operands come before their users */
        const hlo_instr *ins = &c->ins[i];
        int bng = hlo_bn_grad_mapped(c, i);
        if (!(used[i] & 1))
            continue;
        for (j = 0; j < ins->nops; j++) {
            int x = ins->opidx[j];
            if (x < 0 || x >= c->nins || (bng && (j == 2 || j == 3)))
                continue;
            if (op_is(ins, "get-tuple-element")) {
                int64_t k = hlo_attr_int(ins, "index", -1);
                used[x] |= (unsigned char)(1u | (k >= 0 && k < 7 ? 2u << k : 0xfeu));
            } else {
                used[x] = 0xff;
            }
        }
    }
    for (i = 0; i < c->nins; i++)
        (*skip)[i] = (*skip)[i] && !(used[i] & 1) && !op_is(&c->ins[i], "parameter");
    return used;
}

static int
hlo_emit_comp(importer *im, int ci, const char *prefix, const hval *args, hval *res)
{
    const hlo_comp *c = &im->m->comps[ci];
    hval *vals = as_xcalloc((size_t)c->nins, sizeof *vals);
    char *skip;
    unsigned char *used = hlo_bn_uses(c, &skip);
    const unsigned char *outer = im->used;
    const hlo_comp *outer_c = im->cur;
    int i, rc = AS_OK;

    for (i = 0; i < c->nins; i++) {
        if (skip != NULL && skip[i]) {
            vals[i].tid = -1; /* fed only batch-norm-grad's mean/var: not emitted */
            continue;
        }
        im->used = used;
        im->cur = c;
        rc = hlo_emit_instr(im, c, i, prefix, args, vals);
        im->used = outer;
        im->cur = outer_c;
        if (rc != AS_OK)
            goto out;
    }
    *res = vals[c->root];
out:
    im->used = outer;
    free(skip);
    free(used);
    free(vals);
    return rc;
}

/*
 * Decide the role of each entry parameter (documented in docs/hlo.md):
 *  - in input_output_alias and its output is computed (not the parameter
 *    passed through): a float one is a trainable parameter (PARAM), an
 *    integer one optimizer/loop state (STATE, e.g. a step counter);
 *  - in input_output_alias but returned unchanged: an INPUT (data);
 *  - not aliased: integer, pred and float scalar parameters (ids, labels,
 *    learning rate, seeds) are INPUTs; float parameters of rank >= 1 are
 *    PARAMs (read-only weights of an inference or forward-only dump).
 */
/*
 * Optimizer state among the updated float parameters: in a training step, a moment's new
 * value feeds its parameter's new value (Adam: p' = p - lr * m' / (sqrt(v') + eps); SGD with
 * momentum: p' = p - lr * b'), while a parameter's new value feeds no other update.  So an
 * updated parameter whose new value (instruction SRC[k] of the entry) is an ancestor of
 * another one's is optimizer state: of the first non-state parameter of its dims it feeds
 * (im->state_of[k]; mixed precision keeps bf16 weights with f32 moments), else of none
 * (Adam's step count).
 */
static void
hlo_classify_state(importer *im, const hlo_comp *e, const int *src)
{
    int *owner = as_xmalloc(sizeof *owner * (size_t)(e->nins + 1));
    int *seen = as_xcalloc((size_t)e->nins + 1, sizeof *seen);
    int *stack = as_xmalloc(sizeof *stack * (size_t)(e->nins + 1));
    char *feeds = as_xcalloc((size_t)e->nparams + 1, 1);
    int *fed = as_xmalloc(sizeof *fed * (size_t)(e->nparams + 1));
    int k, i, j, stamp = e->nparams + 1;

    for (i = 0; i < e->nins; i++)
        owner[i] = -1;
    for (k = 0; k < e->nparams; k++)
        if (src[k] >= 0 && owner[src[k]] < 0)
            owner[src[k]] = k;
    /* feeds[j]: SRC[j] is an ancestor of another update's new value */
    for (k = 0; k < e->nparams; k++) {
        int top = 0;
        if (src[k] < 0)
            continue;
        stack[top++] = src[k];
        seen[src[k]] = k + 1;
        while (top > 0) {
            const hlo_instr *ins = &e->ins[stack[--top]];
            for (i = 0; i < ins->nops; i++) {
                int x = ins->opidx[i];
                if (x < 0 || x >= e->nins || seen[x] == k + 1)
                    continue;
                seen[x] = k + 1;
                stack[top++] = x;
                if ((j = owner[x]) >= 0 && j != k)
                    feeds[j] = 1;
            }
        }
    }
    /* the parameter each state belongs to: an update of its shape that it feeds */
    for (j = 0; j < e->nparams; j++) {
        const as_shape *sj = &e->ins[e->param[j]].type.shape;
        im->state_of[j] = -1;
        fed[j] = -1;
        if (!feeds[j])
            continue;
        for (k = 0; k < e->nparams && fed[j] < 0; k++) {
            int top = 0;
            const as_shape *sk = &e->ins[e->param[k]].type.shape;
            if (k == j || feeds[k] || src[k] < 0 || im->pkind[k] != AS_TK_PARAM ||
                sk->rank != sj->rank || memcmp(sk->dim, sj->dim, sizeof *sk->dim * sk->rank) != 0)
                continue; /* dims alike; the dtype may differ (bf16 weights, f32 moments) */
            /* does SRC[j] reach SRC[k]? */
            stamp++; /* one walk per pair (j, k) */
            stack[top++] = src[k];
            seen[src[k]] = stamp;
            while (top > 0 && fed[j] < 0) {
                const hlo_instr *ins = &e->ins[stack[--top]];
                for (i = 0; i < ins->nops; i++) {
                    int x = ins->opidx[i];
                    if (x < 0 || x >= e->nins || seen[x] == stamp)
                        continue;
                    seen[x] = stamp;
                    stack[top++] = x;
                    if (x == src[j])
                        fed[j] = k;
                }
            }
        }
    }
    for (j = 0; j < e->nparams; j++)
        if (feeds[j] && (im->pkind[j] == AS_TK_PARAM || im->pkind[j] == AS_TK_STATE)) {
            im->pkind[j] = AS_TK_STATE;
            im->state_of[j] = fed[j];
        }
    free(fed);
    free(feeds);
    free(stack);
    free(seen);
    free(owner);
}

static void
hlo_classify_params(importer *im, const hlo_comp *e, char *updated)
{
    const hlo_instr *root = &e->ins[e->root];
    int *src = as_xmalloc(sizeof *src * (size_t)(e->nparams + 1));
    int k, a;

    for (k = 0; k < e->nparams; k++)
        src[k] = -1;
    for (a = 0; a < im->m->nalias; a++) {
        int p = im->m->alias_param[a], o = im->m->alias_out[a], at = -1;
        if (p < 0 || p >= e->nparams)
            continue;
        if (o < 0)
            at = e->root;
        else if (op_is(root, "tuple") && o < root->nops)
            at = root->opidx[o];
        if (at >= 0)
            updated[p] = at == e->param[p] ? 2 : 1; /* 2: returned unchanged */
        if (at >= 0 && at != e->param[p])
            src[p] = at;
    }
    for (k = 0; k < e->nparams; k++) {
        const hlo_type *t = &e->ins[e->param[k]].type;
        int isf = t->ntuple < 0 && as_dtype_is_float(t->shape.dtype);
        if (updated[k] == 1)
            im->pkind[k] = isf ? AS_TK_PARAM : AS_TK_STATE;
        else if (updated[k] == 2)
            im->pkind[k] = AS_TK_INPUT;
        else if (isf && t->shape.rank >= 1)
            im->pkind[k] = AS_TK_PARAM;
        else
            im->pkind[k] = AS_TK_INPUT;
    }
    hlo_classify_state(im, e, src);
    free(src);
}

/* Mark the entry result as graph outputs and tie in-place updates. */
static int
hlo_outputs(importer *im, const hlo_comp *e, const hval *root, const char *updated)
{
    id_vec leaves = {0};
    size_t i;
    int a;

    hlo_val_leaves(root, &leaves);
    for (i = 0; i < leaves.n; i++)
        as_graph_mark_output(im->g, leaves.v[i]);
    free(leaves.v);
    for (a = 0; a < im->m->nalias; a++) {
        int p = im->m->alias_param[a], o = im->m->alias_out[a];
        const hval *v = o < 0 ? root : (root->tid < 0 && o < root->n ? &root->elts[o] : NULL);
        int32_t pid;
        as_err e2;
        if (p < 0 || p >= e->nparams || updated[p] != 1 || v == NULL || v->tid < 0)
            continue;
        pid = as_graph_find(im->g, e->ins[e->param[p]].name);
        if (pid < 0)
            continue;
        if (as_graph_set_update(im->g, pid, v->tid, &e2) != AS_OK)
            as_warn("%s: input_output_alias {%d}: (%d): not tied: %s", im->path, o, p, e2.msg);
    }
    for (a = 0; a < e->nparams; a++) {
        int32_t sid, pid;
        as_err e2;
        if (im->pkind[a] != AS_TK_STATE || im->state_of[a] < 0)
            continue;
        sid = as_graph_find(im->g, e->ins[e->param[a]].name);
        pid = as_graph_find(im->g, e->ins[e->param[im->state_of[a]]].name);
        if (sid >= 0 && pid >= 0 && as_graph_set_state_of(im->g, sid, pid, &e2) != AS_OK)
            as_warn("%s: parameter %d: not tied to parameter %d: %s", im->path, a,
                    im->state_of[a], e2.msg);
    }
    return AS_OK;
}

static void
hlo_warn_opaque(importer *im)
{
    char buf[1024];
    size_t i, j, len = 0;
    int total = 0;

    /* sort by count (descending), then name */
    for (i = 1; i < im->opaque.n; i++)
        for (j = i; j > 0; j--) {
            hlo_count *a = &im->opaque.v[j - 1], *b = &im->opaque.v[j];
            if (a->n > b->n || (a->n == b->n && strcmp(a->name, b->name) <= 0))
                break;
            hlo_count t = *a;
            *a = *b;
            *b = t;
        }
    buf[0] = '\0';
    for (i = 0; i < im->opaque.n; i++) {
        total += im->opaque.v[i].n;
        if (len < sizeof buf - 64)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s (%d)", i ? ", " : "",
                                    im->opaque.v[i].name, im->opaque.v[i].n);
    }
    if (total > 0)
        as_warn("%s: %d unsupported HLO op%s kept as opaque: %s", im->path, total,
                total == 1 ? "" : "s", buf);
    if (im->m->nextern == 1)
        as_warn("%s:%d:%d: '%s' is not defined in this module; imported as an input of its "
                "written type", im->path, im->m->extern_line, im->m->extern_col,
                im->m->extern_name);
    else if (im->m->nextern > 1)
        as_warn("%s:%d:%d: %d instructions ('%s' first) are not defined in this module; "
                "imported as inputs of their written types", im->path, im->m->extern_line,
                im->m->extern_col, im->m->nextern, im->m->extern_name);
    if (im->nloops > 0)
        as_warn("%s: %d while/conditional op%s kept as opaque, costed as one execution of the "
                "body", im->path, im->nloops, im->nloops == 1 ? "" : "s");
}

/* Does the line at T (the first non-blank one) look like a piece of HLO text without its
 * `HloModule` header: `ENTRY ...`, `ROOT ...`, `%name ...`, or `name = TYPE[...` (an .asg
 * definition is `name = op(...)`, never a typed value)?  Such text goes to the HLO reader,
 * which says what is missing. */
static int
hlo_looks_like_fragment(const char *t, size_t n)
{
    size_t j = 0;

    if ((n > 6 && memcmp(t, "ENTRY", 5) == 0 && (t[5] == ' ' || t[5] == '\t')) ||
        (n > 5 && memcmp(t, "ROOT", 4) == 0 && (t[4] == ' ' || t[4] == '\t')) ||
        (n > 1 && t[0] == '%' && (isalpha((unsigned char)t[1]) || t[1] == '_')))
        return 1;
    while (j < n && (isalnum((unsigned char)t[j]) || t[j] == '_' || t[j] == '.' || t[j] == '-'))
        j++;
    if (j == 0)
        return 0;
    while (j < n && (t[j] == ' ' || t[j] == '\t'))
        j++;
    if (j >= n || t[j] != '=')
        return 0;
    j++;
    while (j < n && (t[j] == ' ' || t[j] == '\t'))
        j++;
    if (j < n && t[j] == '(') /* a tuple type */
        return 1;
    if (j >= n || !islower((unsigned char)t[j]))
        return 0;
    while (j < n && (islower((unsigned char)t[j]) || isdigit((unsigned char)t[j])))
        j++;
    return j < n && t[j] == '[';
}

int
as_hlo_detect(const char *text, size_t len)
{
    size_t i = 0;

    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    if (len - i >= 10 && memcmp(text + i, "HloModule", 9) == 0 &&
        (text[i + 9] == ' ' || text[i + 9] == '\t'))
        return 1;
    return hlo_looks_like_fragment(text + i, len - i);
}

int
as_hlo_read(const char *path, const char *text, size_t len, as_graph **out, as_err *err)
{
    importer im;
    hval root;
    char *updated = NULL;
    const hlo_comp *e;
    int rc, i;

    memset(&im, 0, sizeof im);
    im.path = path;
    im.err = err;
    AS_CHECK(as_hlo_i_parse(path, text, len, &im.m, err));
    e = &im.m->comps[im.m->entry];
    im.g = as_graph_new(im.m->name);
    im.flops = as_xmalloc(sizeof *im.flops * (size_t)im.m->ncomps);
    for (i = 0; i < im.m->ncomps; i++)
        im.flops[i] = -1.0;
    im.pkind = as_xcalloc((size_t)e->nparams + 1, sizeof *im.pkind);
    im.state_of = as_xcalloc((size_t)e->nparams + 1, sizeof *im.state_of);
    updated = as_xcalloc((size_t)e->nparams + 1, 1);
    hlo_classify_params(&im, e, updated);
    AS_CHECK_GOTO(rc, hlo_emit_comp(&im, im.m->entry, NULL, NULL, &root), out);
    AS_CHECK_GOTO(rc, hlo_outputs(&im, e, &root, updated), out);
    hlo_warn_opaque(&im);
    *out = im.g;
    im.g = NULL;
out:
    as_graph_free(im.g);
    free(updated);
    free(im.pkind);
    free(im.state_of);
    free(im.flops);
    free(im.opaque.v);
    as_hlo_i_free(im.m);
    return rc;
}
