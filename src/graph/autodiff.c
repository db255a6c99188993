/* autodiff.c -- reverse-mode differentiation of a graph and the optimizer
 * step that turns a forward graph into a training step.
 *
 * DESIGN: the backward pass is emitted into the same graph.  Ops are visited
 * in reverse program order; an op whose outputs carry gradients calls its
 * registry gradient rule, which emits backward ops through as_grad_emit and
 * returns one gradient per input.  Gradients arriving at a tensor from
 * several users are summed with `add` as they arrive, so every tensor's
 * gradient is complete before its producer is visited (all users come later
 * in program order).  Only tensors that depend on a float parameter get
 * gradients.  Gradient rules receive a stack copy of their op and the graph
 * arrays are reserved ahead of each rule, so pointers a rule holds stay
 * valid while it emits ops.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "graph_internal.h"

/* Room reserved in the op/tensor arrays before each gradient rule runs. */
#define GRAD_RESERVE 256

struct as_gradctx {
    as_graph *g;                /**< graph being extended */
    const as_op *op;            /**< op being differentiated (a stable copy) */
    const unsigned char *needs; /**< per input of op: gradient wanted */
};

as_graph *
as_grad_graph(as_gradctx *c)
{
    return c->g;
}

int
as_grad_needs(const as_gradctx *c, int j)
{
    return j >= 0 && j < c->op->nin && c->needs[j];
}

int
as_grad_emit(as_gradctx *c, const char *optype, const int32_t *in, int nin, const as_attr *attr,
             int nattr, int32_t *out, as_err *err)
{
    char prefix[512];
    const char *name;
    int32_t op_id;
    int rc;

    snprintf(prefix, sizeof prefix, "d.%s", c->op->name);
    name = as_graph_fresh_name(c->g, prefix);
    rc = as_graph_add_op(c->g, optype, &name, 1, in, nin, attr, nattr, &op_id, err);
    if (rc != AS_OK) {
        as_err_prefix(err, "gradient of '%s' (%s): ", c->op->name, c->op->def->name);
        return rc;
    }
    as_graph_op_meta(c->g, op_id, AS_OF_BACKWARD, 0);
    *out = c->g->ops.v[op_id].nout > 0 ? c->g->ops.v[op_id].out[0] : -1;
    return AS_OK;
}

int
as_grad_unbroadcast(as_gradctx *c, int32_t g, const as_shape *shape, int32_t *out, as_err *err)
{
    as_shape gs = c->g->tensors.v[g].shape;
    int64_t dims[AS_MAX_RANK], newshape[AS_MAX_RANK];
    int nd = 0, lead = gs.rank - shape->rank, i;
    int32_t cur = g;

    if (lead < 0)
        return as_errf(err, AS_EINTERNAL, "unbroadcast: gradient has rank %d < operand rank %d",
                       gs.rank, shape->rank);
    for (i = 0; i < gs.rank; i++)
        if (i < lead || (shape->dim[i - lead] == 1 && gs.dim[i] != 1))
            dims[nd++] = i;
    if (nd > 0) {
        as_attr a[2] = {AS_ATTR_V("dims", nd, dims), AS_ATTR_I("keepdims", 0)};
        AS_CHECK(as_grad_emit(c, "reduce_sum", &cur, 1, a, 2, &cur, err));
    }
    if (!as_shape_equal(&c->g->tensors.v[cur].shape, shape)) {
        as_attr a;
        for (i = 0; i < shape->rank; i++)
            newshape[i] = shape->dim[i];
        a = AS_ATTR_V("shape", shape->rank, newshape);
        AS_CHECK(as_grad_emit(c, "reshape", &cur, 1, &a, 1, &cur, err));
    }
    *out = cur;
    return AS_OK;
}

/* Mark in REACH every tensor that depends on a float parameter. */
static void
grad_reach(const as_graph *g, unsigned char *reach)
{
    size_t i;
    int j, k;

    for (i = 0; i < g->tensors.n; i++)
        reach[i] = g->tensors.v[i].kind == AS_TK_PARAM &&
                   as_dtype_is_float(g->tensors.v[i].shape.dtype);
    for (i = 0; i < g->ops.n; i++) {
        const as_op *op = &g->ops.v[i];
        int any = 0;
        if (op->def->flags & AS_OPF_NOGRAD)
            continue;
        for (j = 0; j < op->nin; j++)
            any |= reach[op->in[j]];
        if (!any)
            continue;
        for (k = 0; k < op->nout; k++)
            reach[op->out[k]] = as_dtype_is_float(g->tensors.v[op->out[k]].shape.dtype);
    }
}

/* Add gradient contribution D to tensor T's accumulated gradient. */
static int
grad_accumulate(as_graph *g, int32_t *grad_of, int32_t t, int32_t d, as_err *err)
{
    char prefix[512];
    const char *name;
    int32_t in[2], op_id;

    if (!as_shape_equal(&g->tensors.v[d].shape, &g->tensors.v[t].shape)) {
        char a[128], b[128];
        return as_errf(err, AS_EINTERNAL, "gradient of '%s' has shape %s, expected %s",
                       g->tensors.v[t].name, as_shape_str(&g->tensors.v[d].shape, a, sizeof a),
                       as_shape_str(&g->tensors.v[t].shape, b, sizeof b));
    }
    if (grad_of[t] < 0) {
        grad_of[t] = d;
        return AS_OK;
    }
    in[0] = grad_of[t];
    in[1] = d;
    snprintf(prefix, sizeof prefix, "grad.%s", g->tensors.v[t].name);
    name = as_graph_fresh_name(g, prefix);
    AS_CHECK(as_graph_add_op(g, "add", &name, 1, in, 2, NULL, 0, &op_id, err));
    as_graph_op_meta(g, op_id, AS_OF_BACKWARD, 0);
    grad_of[t] = g->ops.v[op_id].out[0];
    return AS_OK;
}

/* Differentiate one op (a stable copy OP) given its output gradients. */
static int
grad_op(as_graph *g, const as_op *op, const unsigned char *reach, int32_t *grad_of, as_err *err)
{
    int32_t dout[AS_MAX_OUTS], *din = NULL;
    unsigned char *needs = NULL;
    as_gradctx c;
    int j, k, any = 0, want = 0, rc = AS_OK;

    for (k = 0; k < op->nout; k++) {
        dout[k] = grad_of[op->out[k]];
        any |= dout[k] >= 0;
    }
    if (!any)
        return AS_OK;
    for (j = 0; j < op->nin; j++)
        want |= reach[op->in[j]];
    if (!want)
        return AS_OK;
    if (op->def->grad == NULL)
        return as_errf(err, AS_EPARSE, "cannot differentiate '%s': op type '%s' has no gradient",
                       op->name, op->def->name);
    din = as_xmalloc((size_t)(op->nin + 1) * sizeof *din);
    needs = as_xmalloc((size_t)op->nin + 1);
    for (j = 0; j < op->nin; j++) {
        needs[j] = reach[op->in[j]];
        din[j] = -1;
    }
    AS_VEC_RESERVE(&g->ops, g->ops.n + GRAD_RESERVE);
    AS_VEC_RESERVE(&g->tensors, g->tensors.n + GRAD_RESERVE);
    AS_VEC_RESERVE(&g->nusers, g->tensors.n + GRAD_RESERVE);
    c.g = g;
    c.op = op;
    c.needs = needs;
    AS_CHECK_GOTO(rc, op->def->grad(&c, op, dout, din, err), out);
    for (j = 0; j < op->nin; j++)
        if (din[j] >= 0 && needs[j])
            AS_CHECK_GOTO(rc, grad_accumulate(g, grad_of, op->in[j], din[j], err), out);
out:
    free(needs);
    free(din);
    return rc;
}

int
as_grad_backward(as_graph *g, int n, const int32_t *ys, const int32_t *dys, int32_t *grad_of,
                 as_err *err)
{
    size_t nt = g->tensors.n, nops = g->ops.n;
    unsigned char *reach = as_xcalloc(nt + 1, 1);
    int32_t *acc = as_xmalloc((nt + 1) * sizeof *acc);
    size_t i;
    int rc = AS_OK;

    grad_reach(g, reach);
    /* The accumulator grows with the graph; only ids < nt matter. */
    for (i = 0; i < nt; i++)
        acc[i] = -1;
    for (i = 0; i < (size_t)n; i++)
        AS_CHECK_GOTO(rc, grad_accumulate(g, acc, ys[i], dys[i], err), out);
    for (i = nops; i-- > 0;) {
        as_op copy = g->ops.v[i];
        AS_CHECK_GOTO(rc, grad_op(g, &copy, reach, acc, err), out);
    }
    memcpy(grad_of, acc, nt * sizeof *acc);
out:
    free(acc);
    free(reach);
    return rc;
}

/* Find the loss: the first scalar float output, else the last loss op's output. */
static int32_t
autodiff_loss(const as_graph *g)
{
    size_t i;

    for (i = 0; i < g->outputs.n; i++) {
        const as_tensor *t = &g->tensors.v[g->outputs.v[i]];
        if (t->shape.rank == 0 && as_dtype_is_float(t->shape.dtype))
            return t->id;
    }
    for (i = g->ops.n; i-- > 0;)
        if ((g->ops.v[i].def->flags & AS_OPF_LOSS) && g->ops.v[i].nout > 0)
            return g->ops.v[i].out[0];
    return -1;
}

/* Declare optimizer state "PREFIX.P" of parameter P with the dims of P, element type DT. */
static int
autodiff_state(as_graph *g, const char *prefix, int32_t p, as_dtype dt, int32_t *id, as_err *err)
{
    char buf[512];
    as_shape s = g->tensors.v[p].shape;

    s.dtype = dt;
    snprintf(buf, sizeof buf, "%s.%s", prefix, g->tensors.v[p].name);
    AS_CHECK(as_graph_add_tensor(g, as_graph_fresh_name(g, buf), &s, AS_TK_STATE, -1, id, err));
    return as_graph_set_state_of(g, *id, p, err);
}

/* Append one optimizer op NAME(IN) producing "OUTNAME"; returns its output. */
static int
autodiff_opt_op(as_graph *g, const char *optype, const char *outname, const int32_t *in, int nin,
                const as_attr *attr, int nattr, int32_t *out, as_err *err)
{
    const char *name = as_graph_fresh_name(g, outname);
    int32_t op_id;

    AS_CHECK(as_graph_add_op(g, optype, &name, 1, in, nin, attr, nattr, &op_id, err));
    as_graph_op_meta(g, op_id, AS_OF_OPTIMIZER, 0);
    *out = g->ops.v[op_id].out[0];
    return AS_OK;
}

/*
 * Emit the update of weight W (parameter P itself, or P's fp32 master
 * weight) with gradient GR under options O; optimizer states belong to P
 * and have W's element type.  *NEWW is W's new value.
 */
static int
autodiff_step(as_graph *g, const as_train_opts *o, int32_t p, int32_t w, int32_t gr, int32_t *neww,
              as_err *err)
{
    char nm[512];
    as_dtype dt = g->tensors.v[w].shape.dtype;
    int32_t in[3], s1, s2, n1, n2;

    snprintf(nm, sizeof nm, "%s.new", g->tensors.v[w].name);
    if (strcmp(o->optimizer, "sgd") == 0) {
        as_attr a[] = {AS_ATTR_F("lr", o->lr)};
        in[0] = w;
        in[1] = gr;
        AS_CHECK(autodiff_opt_op(g, "sgd_update", nm, in, 2, a, 1, neww, err));
    } else if (strcmp(o->optimizer, "momentum") == 0) {
        as_attr am[] = {AS_ATTR_F("mu", o->momentum)};
        as_attr au[] = {AS_ATTR_F("lr", o->lr)};
        char bn[512];
        AS_CHECK(autodiff_state(g, "momentum", p, dt, &s1, err));
        snprintf(bn, sizeof bn, "%s.new", g->tensors.v[s1].name);
        in[0] = s1;
        in[1] = gr;
        AS_CHECK(autodiff_opt_op(g, "momentum_buf", bn, in, 2, am, 1, &n1, err));
        AS_CHECK(as_graph_set_update(g, s1, n1, err));
        in[0] = w;
        in[1] = n1;
        AS_CHECK(autodiff_opt_op(g, "momentum_update", nm, in, 2, au, 1, neww, err));
    } else if (strcmp(o->optimizer, "adam") == 0) {
        as_attr a1[] = {AS_ATTR_F("beta1", o->beta1)};
        as_attr a2[] = {AS_ATTR_F("beta2", o->beta2)};
        as_attr au[] = {AS_ATTR_F("lr", o->lr), AS_ATTR_F("beta1", o->beta1),
                        AS_ATTR_F("beta2", o->beta2), AS_ATTR_F("eps", o->eps),
                        AS_ATTR_I("step", 1)};
        char mn[512], vn[512];
        AS_CHECK(autodiff_state(g, "adam_m", p, dt, &s1, err));
        AS_CHECK(autodiff_state(g, "adam_v", p, dt, &s2, err));
        snprintf(mn, sizeof mn, "%s.new", g->tensors.v[s1].name);
        snprintf(vn, sizeof vn, "%s.new", g->tensors.v[s2].name);
        in[0] = s1;
        in[1] = gr;
        AS_CHECK(autodiff_opt_op(g, "adam_m", mn, in, 2, a1, 1, &n1, err));
        in[0] = s2;
        AS_CHECK(autodiff_opt_op(g, "adam_v", vn, in, 2, a2, 1, &n2, err));
        AS_CHECK(as_graph_set_update(g, s1, n1, err));
        AS_CHECK(as_graph_set_update(g, s2, n2, err));
        in[0] = w;
        in[1] = n1;
        in[2] = n2;
        AS_CHECK(autodiff_opt_op(g, "adam_update", nm, in, 3, au, 5, neww, err));
    } else {
        return as_errf(err, AS_EPARSE, "unknown optimizer '%s' (known: adam, momentum, sgd)",
                       o->optimizer);
    }
    return AS_OK;
}

/*
 * Emit the update of parameter P with gradient GR under options O.  Mixed
 * precision (O->mixed, P 16-bit): the gradient is added to an fp32
 * accumulator ("main_grad.P", grad_accum), the optimizer steps the fp32
 * master weight ("master.P") with fp32 states, and P gets the master's new
 * value in its own type (master_copy), as PyTorch AMP and Megatron do.
 */
static int
autodiff_update(as_graph *g, const as_train_opts *o, int32_t p, int32_t gr, as_err *err)
{
    as_dtype dt = g->tensors.v[p].shape.dtype;
    int32_t master, acc, accn, newm, newp, in[2];
    char nm[512];

    if (!o->mixed || (dt != AS_DT_BF16 && dt != AS_DT_F16)) {
        AS_CHECK(autodiff_step(g, o, p, p, gr, &newp, err));
        return as_graph_set_update(g, p, newp, err);
    }
    AS_CHECK(autodiff_state(g, "main_grad", p, AS_DT_F32, &acc, err));
    snprintf(nm, sizeof nm, "%s.new", g->tensors.v[acc].name);
    in[0] = acc;
    in[1] = gr;
    AS_CHECK(autodiff_opt_op(g, "grad_accum", nm, in, 2, NULL, 0, &accn, err));
    AS_CHECK(as_graph_set_update(g, acc, accn, err));
    AS_CHECK(autodiff_state(g, "master", p, AS_DT_F32, &master, err));
    AS_CHECK(autodiff_step(g, o, p, master, accn, &newm, err));
    AS_CHECK(as_graph_set_update(g, master, newm, err));
    snprintf(nm, sizeof nm, "%s.new", g->tensors.v[p].name);
    in[0] = p;
    in[1] = newm;
    AS_CHECK(autodiff_opt_op(g, "master_copy", nm, in, 2, NULL, 0, &newp, err));
    return as_graph_set_update(g, p, newp, err);
}

int
as_autodiff(as_graph *g, const as_train_opts *o, as_err *err)
{
    int32_t loss = autodiff_loss(g), seed, op_id, *grad_of = NULL;
    size_t nt, i;
    int rc = AS_OK, nparams = 0, unused = 0;
    const char *first_unused = NULL;
    char seedname[512];
    const char *sn;

    if (strcmp(o->optimizer, "adam") && strcmp(o->optimizer, "sgd") &&
        strcmp(o->optimizer, "momentum"))
        return as_errf(err, AS_EPARSE, "unknown optimizer '%s' (known: adam, momentum, sgd)",
                       o->optimizer);
    if (loss < 0)
        return as_errf(err, AS_EPARSE, "train: the graph has no scalar loss to differentiate "
                                       "(declare it with `output` or end with a loss op)");
    for (i = 0; i < g->tensors.n; i++)
        if (g->tensors.v[i].kind == AS_TK_PARAM && g->tensors.v[i].update >= 0)
            return as_errf(err, AS_EPARSE, "train: the graph already has parameter updates "
                                           "(it is a training step already)");
    if (!(g->tensors.v[loss].flags & AS_TF_OUTPUT))
        as_graph_mark_output(g, loss);
    {
        as_attr a[] = {AS_ATTR_V("shape", 0, NULL), AS_ATTR_F("value", 1.0),
                       AS_ATTR_S("dtype", as_dtype_name(g->tensors.v[loss].shape.dtype))};
        snprintf(seedname, sizeof seedname, "grad.%s", g->tensors.v[loss].name);
        sn = as_graph_fresh_name(g, seedname);
        AS_CHECK(as_graph_add_op(g, "fill", &sn, 1, NULL, 0, a, 3, &op_id, err));
        as_graph_op_meta(g, op_id, AS_OF_BACKWARD, 0);
        seed = g->ops.v[op_id].out[0];
    }
    nt = g->tensors.n;
    grad_of = as_xmalloc(nt * sizeof *grad_of);
    AS_CHECK_GOTO(rc, as_grad_backward(g, 1, &loss, &seed, grad_of, err), out);
    for (i = 0; i < nt; i++) {
        int32_t gr;
        if (g->tensors.v[i].kind != AS_TK_PARAM)
            continue;
        if ((gr = grad_of[i]) < 0) {
            if (unused++ == 0)
                first_unused = g->tensors.v[i].name;
            continue;
        }
        if (g->tensors.v[gr].flags & AS_TF_GRAD) {
            /* One tensor is the gradient of two parameters: give each its own copy. */
            char cn[512];
            const char *cname;
            snprintf(cn, sizeof cn, "grad.%s", g->tensors.v[i].name);
            cname = as_graph_fresh_name(g, cn);
            AS_CHECK_GOTO(rc, as_graph_add_op(g, "identity", &cname, 1, &gr, 1, NULL, 0, &op_id,
                                              err), out);
            as_graph_op_meta(g, op_id, AS_OF_BACKWARD, 0);
            gr = g->ops.v[op_id].out[0];
        }
        as_graph_tensor_flag(g, gr, AS_TF_GRAD, (int32_t)i);
        AS_CHECK_GOTO(rc, autodiff_update(g, o, (int32_t)i, gr, err), out);
        nparams++;
    }
    if (unused > 0)
        as_warn("%s: %d parameter%s do%s not affect the loss and get no update (first: '%s')",
                g->name, unused, unused == 1 ? "" : "s", unused == 1 ? "es" : "", first_unused);
    if (nparams == 0)
        rc = as_errf(err, AS_EPARSE, "train: no parameter affects the loss");
    as_graph_i_clear_train(g);
out:
    free(grad_of);
    return rc;
}
