/* graph_check.c -- igraph analyses of a graph: DAG check with the ops of a
 * cycle, topological order, liveness, peak activation memory, longest path
 * and the statistics `autoshard inspect` prints.
 *
 * DESIGN: every analysis runs on one bipartite igraph (ops and tensors are
 * vertices; tensor -> reader and producer -> tensor edges), so def/use
 * relations come from igraph adjacency rather than from the op arrays and
 * the checks also hold for graphs imported from elsewhere.  igraph's default
 * error handler aborts; as_igraph_setup() replaces it with one that records
 * the reason and frees igraph's temporaries, and AS_IGRAPH turns the failing
 * call into AS_EINTERNAL.  Note: Debian's igraph is built without thread
 * safety, so these functions must not run concurrently in several threads.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph_internal.h"

static pthread_once_t check_once = PTHREAD_ONCE_INIT;
static char check_reason[256];

/* Record igraph's reason and release its temporaries instead of aborting. */
static void
check_error_handler(const char *reason, const char *file, int line, igraph_error_t code)
{
    snprintf(check_reason, sizeof check_reason, "%s (%s)", reason != NULL ? reason : "error",
             igraph_strerror(code));
    (void)file;
    (void)line;
    if (code == IGRAPH_ENOMEM)
        as_oom(0, "igraph");
    IGRAPH_FINALLY_FREE();
}

static void
check_setup_once(void)
{
    igraph_set_error_handler(check_error_handler);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
}

void
as_igraph_setup(void)
{
    pthread_once(&check_once, check_setup_once);
}

const char *
as_igraph_reason(void)
{
    return check_reason;
}

/* Cycles. */

/* Shortest path FROM -> TO into PATH (vertices); *LEN is its vertex count or 0 if none. */
static int
check_path(const igraph_t *g, igraph_integer_t from, igraph_integer_t to,
           igraph_vector_int_t *path, as_err *err)
{
    igraph_vector_int_clear(path);
    if (from == to) {
        return AS_IGRAPH(err, igraph_vector_int_push_back(path, from));
    }
    return AS_IGRAPH(err, igraph_get_shortest_path(g, path, NULL, from, to, IGRAPH_OUT));
}

int
as_igraph_find_cycle(const igraph_t *g, igraph_vector_int_t *vertices, int *found, as_err *err)
{
    igraph_vector_int_t memb, csize, neis, path;
    igraph_integer_t n = igraph_vcount(g), ncomp = 0, v, best = -1, k;
    int rc = AS_OK;

    as_igraph_setup();
    *found = 0;
    igraph_vector_int_clear(vertices);
    igraph_vector_int_init(&memb, 0);
    igraph_vector_int_init(&csize, 0);
    igraph_vector_int_init(&neis, 0);
    igraph_vector_int_init(&path, 0);
    AS_CHECK_GOTO(rc, AS_IGRAPH(err, igraph_connected_components(g, &memb, &csize, &ncomp,
                                                                 IGRAPH_STRONG)),
                  out);
    /* The first vertex on a cycle: in a strong component of size > 1 or with a self-loop. */
    for (v = 0; v < n && best < 0; v++) {
        AS_CHECK_GOTO(rc, AS_IGRAPH(err, igraph_neighbors(g, &neis, v, IGRAPH_OUT)), out);
        for (k = 0; k < igraph_vector_int_size(&neis); k++) {
            igraph_integer_t u = VECTOR(neis)[k];
            if (u == v || VECTOR(memb)[u] == VECTOR(memb)[v]) {
                best = v;
                break;
            }
        }
    }
    if (best < 0)
        goto out;
    /* Shortest way back: over v's successors in its component, the shortest path to v. */
    for (k = 0; k < igraph_vector_int_size(&neis); k++) {
        igraph_integer_t u = VECTOR(neis)[k];
        if (u != best && VECTOR(memb)[u] != VECTOR(memb)[best])
            continue;
        AS_CHECK_GOTO(rc, check_path(g, u, best, &path, err), out);
        if (u == best)
            igraph_vector_int_clear(&path); /* self-loop: the cycle is v alone */
        else
            igraph_vector_int_pop_back(&path); /* drop the final v */
        if (!*found || igraph_vector_int_size(&path) + 1 < igraph_vector_int_size(vertices)) {
            igraph_integer_t j;
            igraph_vector_int_clear(vertices);
            AS_CHECK_GOTO(rc, AS_IGRAPH(err, igraph_vector_int_push_back(vertices, best)), out);
            for (j = 0; j < igraph_vector_int_size(&path); j++)
                AS_CHECK_GOTO(rc,
                              AS_IGRAPH(err, igraph_vector_int_push_back(vertices,
                                                                         VECTOR(path)[j])),
                              out);
            *found = 1;
        }
    }
out:
    igraph_vector_int_destroy(&path);
    igraph_vector_int_destroy(&neis);
    igraph_vector_int_destroy(&csize);
    igraph_vector_int_destroy(&memb);
    return rc;
}

/* The bipartite view. */

/* Build the op/tensor graph of G into *IG (initialised on success only). */
static int
check_build(const as_graph *g, igraph_t *ig, as_err *err)
{
    igraph_vector_int_t edges;
    int32_t nops = as_graph_nops(g), ntens = as_graph_ntensors(g), i;
    int j, rc = AS_OK;

    as_igraph_setup();
    igraph_vector_int_init(&edges, 0);
    for (i = 0; i < nops; i++) {
        const as_op *op = as_graph_op(g, i);
        for (j = 0; j < op->nin; j++) {
            if (op->in[j] < 0 || op->in[j] >= ntens) {
                rc = as_errf(err, AS_EPARSE, "op '%s' reads an invalid tensor id %d", op->name,
                             (int)op->in[j]);
                goto out;
            }
            igraph_vector_int_push_back(&edges, (igraph_integer_t)nops + op->in[j]);
            igraph_vector_int_push_back(&edges, i);
        }
        for (j = 0; j < op->nout; j++) {
            if (op->out[j] < 0 || op->out[j] >= ntens) {
                rc = as_errf(err, AS_EPARSE, "op '%s' writes an invalid tensor id %d", op->name,
                             (int)op->out[j]);
                goto out;
            }
            igraph_vector_int_push_back(&edges, i);
            igraph_vector_int_push_back(&edges, (igraph_integer_t)nops + op->out[j]);
        }
    }
    rc = AS_IGRAPH(err, igraph_create(ig, &edges, (igraph_integer_t)nops + ntens, IGRAPH_DIRECTED));
out:
    igraph_vector_int_destroy(&edges);
    return rc;
}

/* Report the cycle of IG (which is not a DAG) by the names of its ops. */
static int
check_cycle_error(const as_graph *g, const igraph_t *ig, as_err *err)
{
    igraph_vector_int_t cyc;
    int32_t nops = as_graph_nops(g);
    char msg[400];
    size_t off = 0;
    igraph_integer_t k;
    int found = 0, rc;

    igraph_vector_int_init(&cyc, 0);
    rc = as_igraph_find_cycle(ig, &cyc, &found, err);
    if (rc == AS_OK && !found)
        rc = as_errf(err, AS_EINTERNAL, "graph is not a DAG but no cycle was found");
    if (rc != AS_OK)
        goto out;
    msg[0] = '\0';
    for (k = 0; k <= igraph_vector_int_size(&cyc); k++) {
        igraph_integer_t v = VECTOR(cyc)[k % igraph_vector_int_size(&cyc)];
        if (v >= nops || off >= sizeof msg)
            continue;
        off += (size_t)snprintf(msg + off, sizeof msg - off, "%s%s", off ? " -> " : "",
                                as_graph_op(g, (int32_t)v)->name);
    }
    rc = as_errf(err, AS_EPARSE, "cycle: %s", msg);
out:
    igraph_vector_int_destroy(&cyc);
    return rc;
}

/* Checks. */

int
as_graph_check(const as_graph *g, as_err *err)
{
    int32_t nops = as_graph_nops(g), ntens = as_graph_ntensors(g), i, ndead = 0, first = -1;
    igraph_t ig;
    igraph_bool_t dag = 0;
    int j, rc;

    AS_CHECK(check_build(g, &ig, err));
    rc = AS_IGRAPH(err, igraph_is_dag(&ig, &dag));
    if (rc == AS_OK && !dag)
        rc = check_cycle_error(g, &ig, err);
    igraph_destroy(&ig);
    if (rc != AS_OK)
        return rc;
    for (i = 0; i < nops; i++) {
        const as_op *op = as_graph_op(g, i);
        int dead = op->nout > 0;
        for (j = 0; j < op->nin; j++) {
            const as_tensor *t = as_graph_tensor(g, op->in[j]);
            if (t->kind == AS_TK_ACT && t->producer >= i)
                return as_errf(err, AS_EPARSE, "op '%s' reads '%s' before its definition",
                               op->name, t->name);
        }
        for (j = 0; j < op->nout; j++) {
            const as_tensor *t = as_graph_tensor(g, op->out[j]);
            if (t->producer != i)
                return as_errf(err, AS_EPARSE, "tensor '%s' is defined more than once", t->name);
            if (as_graph_nusers(g, t->id) > 0 || (t->flags & AS_TF_OUTPUT) || t->update_of >= 0)
                dead = 0;
        }
        if (dead && ndead++ == 0)
            first = i;
    }
    for (i = 0; i < as_graph_noutputs(g); i++)
        if (as_graph_output(g, i) < 0 || as_graph_output(g, i) >= ntens)
            return as_errf(err, AS_EPARSE, "graph output %d does not exist", (int)i);
    if (ndead > 0)
        as_warn("%s: %d op%s compute%s results nobody uses (first: '%s')", as_graph_name(g),
                (int)ndead, ndead == 1 ? "" : "s", ndead == 1 ? "s" : "",
                as_graph_op(g, first)->name);
    return AS_OK;
}

int
as_graph_topo_order(const as_graph *g, int32_t *order, as_err *err)
{
    igraph_vector_int_t res;
    int32_t nops = as_graph_nops(g), n = 0;
    igraph_integer_t k;
    igraph_t ig;
    int rc;

    AS_CHECK(check_build(g, &ig, err));
    igraph_vector_int_init(&res, 0);
    AS_CHECK_GOTO(rc, AS_IGRAPH(err, igraph_topological_sorting(&ig, &res, IGRAPH_OUT)), out);
    for (k = 0; k < igraph_vector_int_size(&res); k++)
        if (VECTOR(res)[k] < nops)
            order[n++] = (int32_t)VECTOR(res)[k];
    if (n != nops)
        rc = check_cycle_error(g, &ig, err);
out:
    igraph_vector_int_destroy(&res);
    igraph_destroy(&ig);
    return rc;
}

/* Liveness from adjacency of the bipartite graph IG. */
static int
check_liveness(const as_graph *g, const igraph_t *ig, int32_t *def, int32_t *last_use,
               as_err *err)
{
    int32_t nops = as_graph_nops(g), ntens = as_graph_ntensors(g), t;
    igraph_vector_int_t neis;
    igraph_integer_t k;
    int rc = AS_OK;

    igraph_vector_int_init(&neis, 0);
    for (t = 0; t < ntens; t++) {
        igraph_integer_t v = (igraph_integer_t)nops + t;
        def[t] = -1;
        last_use[t] = -1;
        AS_CHECK_GOTO(rc, AS_IGRAPH(err, igraph_neighbors(ig, &neis, v, IGRAPH_IN)), out);
        if (igraph_vector_int_size(&neis) > 0)
            def[t] = (int32_t)VECTOR(neis)[0];
        AS_CHECK_GOTO(rc, AS_IGRAPH(err, igraph_neighbors(ig, &neis, v, IGRAPH_OUT)), out);
        for (k = 0; k < igraph_vector_int_size(&neis); k++)
            if (VECTOR(neis)[k] > last_use[t])
                last_use[t] = (int32_t)VECTOR(neis)[k];
        if (as_graph_tensor(g, t)->flags & AS_TF_OUTPUT)
            last_use[t] = nops;
    }
out:
    igraph_vector_int_destroy(&neis);
    return rc;
}

int
as_graph_liveness(const as_graph *g, int32_t *def, int32_t *last_use, as_err *err)
{
    igraph_t ig;
    int rc;

    AS_CHECK(check_build(g, &ig, err));
    rc = check_liveness(g, &ig, def, last_use, err);
    igraph_destroy(&ig);
    return rc;
}

double
as_graph_op_flops(const as_graph *g, int32_t op_id)
{
    as_opview v;
    double f;

    as_opview_init(&v, g, as_graph_op(g, op_id));
    f = as_op_flops(&v.info);
    as_opview_free(&v);
    return f;
}

/* Statistics. */

static int
check_count_cmp(const void *a, const void *b)
{
    const as_op_count *x = a, *y = b;

    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->type, y->type);
}

/* Op counts by type, sorted by count then name. */
static void
check_count_types(const as_graph *g, as_graph_stats *st)
{
    int32_t i;
    int k;

    st->by_type = as_xcalloc((size_t)(st->nops > 0 ? st->nops : 1), sizeof *st->by_type);
    st->nby_type = 0;
    for (i = 0; i < st->nops; i++) {
        const char *type = as_graph_op(g, i)->def->name;
        for (k = 0; k < st->nby_type; k++)
            if (st->by_type[k].type == type)
                break;
        if (k == st->nby_type) {
            st->by_type[k].type = type;
            st->nby_type++;
        }
        st->by_type[k].count++;
    }
    qsort(st->by_type, (size_t)st->nby_type, sizeof *st->by_type, check_count_cmp);
}

/* Is tensor T an activation (allocated per step)? */
static int
check_is_activation(const as_tensor *t)
{
    return t->kind == AS_TK_INPUT || (t->kind == AS_TK_ACT && t->update_of < 0);
}

/* *ACC += B; on overflow set *OVF (the sum is then meaningless). */
static void
check_add(int64_t *acc, int64_t b, int *ovf)
{
    if (__builtin_add_overflow(*acc, b, acc))
        *ovf = 1;
}

/* The input error for byte totals of G (WHAT) that overflow 64 bits. */
static int
check_overflow(const as_graph *g, const char *what, as_err *err)
{
    return as_errf(err, AS_EPARSE, "graph '%s': the bytes of its %s overflow 64 bits",
                   as_graph_name(g), what);
}

/* Peak of live activation bytes over program order (difference array sweep). */
static int
check_peak(const as_graph *g, const int32_t *def, const int32_t *last_use, as_graph_stats *st,
           as_err *err)
{
    int32_t nops = as_graph_nops(g), ntens = as_graph_ntensors(g), t, i;
    int64_t *alloc = as_xcalloc((size_t)nops + 1, sizeof *alloc);
    int64_t *release = as_xcalloc((size_t)nops + 1, sizeof *release);
    int64_t cur = 0;
    int ovf = 0;

    for (t = 0; t < ntens; t++) {
        const as_tensor *tt = as_graph_tensor(g, t);
        int32_t s, e;
        if (!check_is_activation(tt))
            continue;
        s = def[t] < 0 ? 0 : def[t];
        e = last_use[t] >= nops ? nops - 1 : last_use[t];
        if (e < s)
            e = s;
        check_add(&alloc[s], as_shape_bytes(&tt->shape), &ovf);
        check_add(&release[e], as_shape_bytes(&tt->shape), &ovf);
    }
    st->peak_activation_bytes = 0;
    st->peak_op = -1;
    for (i = 0; i < nops && !ovf; i++) {
        check_add(&cur, alloc[i], &ovf);
        if (ovf)
            break; /* cur is meaningless now */
        if (cur > st->peak_activation_bytes || st->peak_op < 0) {
            st->peak_activation_bytes = cur;
            st->peak_op = i;
        }
        cur -= release[i];
    }
    free(release);
    free(alloc);
    return ovf ? check_overflow(g, "live activations", err) : AS_OK;
}

/* Longest dependency chain in ops and in FLOPs: DP over igraph's topological order. */
static int
check_longest(const as_graph *g, const igraph_t *ig, const double *opflops, as_graph_stats *st,
              as_err *err)
{
    int32_t nops = as_graph_nops(g);
    igraph_integer_t n = igraph_vcount(ig), k, j;
    igraph_vector_int_t order, neis;
    int64_t *len = as_xcalloc((size_t)n + 1, sizeof *len);
    double *fl = as_xcalloc((size_t)n + 1, sizeof *fl);
    int rc;

    igraph_vector_int_init(&order, 0);
    igraph_vector_int_init(&neis, 0);
    AS_CHECK_GOTO(rc, AS_IGRAPH(err, igraph_topological_sorting(ig, &order, IGRAPH_OUT)), out);
    st->longest_path_ops = 0;
    st->longest_path_flops = 0.0;
    for (k = 0; k < igraph_vector_int_size(&order); k++) {
        igraph_integer_t v = VECTOR(order)[k];
        AS_CHECK_GOTO(rc, AS_IGRAPH(err, igraph_neighbors(ig, &neis, v, IGRAPH_IN)), out);
        for (j = 0; j < igraph_vector_int_size(&neis); j++) {
            igraph_integer_t u = VECTOR(neis)[j];
            if (len[u] > len[v])
                len[v] = len[u];
            if (fl[u] > fl[v])
                fl[v] = fl[u];
        }
        if (v < nops) {
            len[v] += 1;
            fl[v] += opflops[v];
            if (len[v] > st->longest_path_ops)
                st->longest_path_ops = len[v];
            if (fl[v] > st->longest_path_flops)
                st->longest_path_flops = fl[v];
        }
    }
out:
    igraph_vector_int_destroy(&neis);
    igraph_vector_int_destroy(&order);
    free(fl);
    free(len);
    return rc;
}

/* Tokens per step: largest integer input's elements, else the batch input minus its feature dim. */
static double
check_tokens(const as_graph *g)
{
    int32_t t, ntens = as_graph_ntensors(g);
    const as_tensor *best_int = NULL, *batch = NULL;
    double tok = 1.0;
    int k, n;

    for (t = 0; t < ntens; t++) {
        const as_tensor *tt = as_graph_tensor(g, t);
        if (tt->kind != AS_TK_INPUT)
            continue;
        if (!as_dtype_is_float(tt->shape.dtype) && tt->shape.dtype != AS_DT_PRED &&
            (best_int == NULL || as_shape_numel(&tt->shape) > as_shape_numel(&best_int->shape)))
            best_int = tt;
        if (batch == NULL && tt->batch_dim >= 0)
            batch = tt;
    }
    if (best_int != NULL)
        return (double)as_shape_numel(&best_int->shape);
    if (batch == NULL)
        return 0.0;
    n = batch->shape.rank - 1;
    if (n > 2)
        n = 2;
    if (n < 1)
        n = batch->shape.rank;
    for (k = 0; k < n; k++)
        tok *= (double)batch->shape.dim[k];
    return tok;
}

/* Byte and element totals per tensor role. */
static int
check_totals(const as_graph *g, as_graph_stats *st, as_err *err)
{
    int32_t t, i;
    int ovf = 0;

    for (t = 0; t < st->ntensors; t++) {
        const as_tensor *tt = as_graph_tensor(g, t);
        int64_t b = as_shape_bytes(&tt->shape);
        if (tt->kind == AS_TK_PARAM) {
            check_add(&st->params, as_shape_numel(&tt->shape), &ovf);
            check_add(&st->param_bytes, b, &ovf);
        } else if (tt->kind == AS_TK_STATE) {
            as_state_role r = as_graph_state_role(g, t);
            if (r == AS_STATE_MASTER)
                check_add(&st->master_bytes, b, &ovf);
            else if (r == AS_STATE_GRAD)
                check_add(&st->grad_bytes, b, &ovf);
            else
                check_add(&st->state_bytes, b, &ovf);
        } else if (tt->kind == AS_TK_CONST) {
            check_add(&st->const_bytes, b, &ovf);
        } else if (tt->kind == AS_TK_INPUT) {
            check_add(&st->input_bytes, b, &ovf);
        }
        if (tt->flags & AS_TF_GRAD)
            check_add(&st->grad_bytes, b, &ovf);
        if (ovf)
            return check_overflow(g, "tensors", err);
        if ((tt->kind == AS_TK_PARAM || tt->kind == AS_TK_STATE) && tt->update >= 0)
            st->training = 1;
    }
    st->precision = as_graph_precision(g);
    for (i = 0; i < st->nops; i++) {
        const as_op *op = as_graph_op(g, i);
        if ((op->flags & AS_OF_OPTIMIZER) || (op->def->flags & AS_OPF_OPTIMIZER))
            st->training = 1;
    }
    return AS_OK;
}

int
as_graph_stats_compute(const as_graph *g, as_graph_stats *st, as_err *err)
{
    int32_t *def = NULL, *last = NULL, i;
    double *opflops = NULL;
    igraph_t ig;
    int rc;

    memset(st, 0, sizeof *st);
    st->nops = as_graph_nops(g);
    st->ntensors = as_graph_ntensors(g);
    st->peak_op = -1;
    AS_CHECK(check_build(g, &ig, err));
    def = as_xcalloc((size_t)st->ntensors + 1, sizeof *def);
    last = as_xcalloc((size_t)st->ntensors + 1, sizeof *last);
    opflops = as_xcalloc((size_t)st->nops + 1, sizeof *opflops);
    check_count_types(g, st);
    AS_CHECK_GOTO(rc, check_totals(g, st, err), out);
    for (i = 0; i < st->nops; i++) {
        opflops[i] = as_graph_op_flops(g, i);
        st->flops += opflops[i];
    }
    AS_CHECK_GOTO(rc, check_liveness(g, &ig, def, last, err), out);
    AS_CHECK_GOTO(rc, check_peak(g, def, last, st, err), out);
    AS_CHECK_GOTO(rc, check_longest(g, &ig, opflops, st, err), out);
    st->tokens = check_tokens(g);
out:
    if (rc != AS_OK)
        as_graph_stats_free(st);
    free(opflops);
    free(last);
    free(def);
    igraph_destroy(&ig);
    return rc;
}

void
as_graph_stats_free(as_graph_stats *st)
{
    if (st == NULL)
        return;
    free(st->by_type);
    st->by_type = NULL;
    st->nby_type = 0;
}
