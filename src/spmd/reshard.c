/* reshard.c -- the cost of moving a tensor from one sharding spec to another.
 *
 * Resharding is decomposed into per-axis moves on a current layout that
 * starts at FROM and ends at TO; every intermediate layout is a valid spec
 * (each dim's axes in mesh order).  A move on axis k is one of: a local
 * slice (replicated -> split, free), an all-reduce (partial -> replicated),
 * a reduce-scatter (partial -> split), an all-gather (split -> replicated)
 * or an all-to-all (dim i -> dim j).  A split or a scatter may only append
 * k after the axes already splitting that dim, and a gather or an all-to-all
 * may only take the last (most minor) axis of a dim; anything else (axes
 * reordered, a dim moving to a more major axis) therefore gathers first and
 * slices again -- never free.  Bytes follow cost.h: all-gather and
 * reduce-scatter the full size over the group, all-reduce and all-to-all
 * the size each device holds.
 */
#include "config.h"

#include <string.h>

#include "spmd/strategy.h"

typedef struct rs_state {
    const as_cost_model *cm;
    const as_mesh *m;
    const as_shape *shape;
    as_spec cur;
    const as_spec *to;
    as_reshard_step *steps;
    int nsteps;
    double cost;
} rs_state;

static double
rs_bytes(const rs_state *st)
{
    return as_spec_local_bytes(&st->cur, st->shape, st->m);
}

double
as_strat_coll_cost(const as_cost_model *cm, as_coll kind, double bytes, int axis)
{
    if (!as_cost_model_ops(cm)->alpa_resharding)
        return as_cost_collective(cm, kind, bytes, axis);
    if (kind == AS_COLL_REDUCE_SCATTER)
        return as_cost_collective(cm, AS_COLL_ALL_REDUCE, bytes, axis) + 0.001;
    if (kind == AS_COLL_ALL_TO_ALL)
        return as_cost_collective(cm, kind, bytes * as_mesh_axis_size(as_cost_model_mesh(cm), axis),
                                  axis);
    return as_cost_collective(cm, kind, bytes, axis);
}

static void
rs_emit(rs_state *st, int kind, int axis, double bytes)
{
    double c = kind < 0 ? 0 : as_strat_coll_cost(st->cm, (as_coll)kind, bytes, axis);

    if (st->steps != NULL && st->nsteps < AS_RESHARD_MAX_STEPS) {
        as_reshard_step *s = &st->steps[st->nsteps];
        s->kind = kind;
        s->axis = axis;
        s->bytes = bytes;
        s->cost = c;
    }
    st->nsteps++;
    st->cost += c;
}

/* Length of the common prefix of the axis lists of DIM in CUR and TO. */
static int
rs_prefix(const rs_state *st, int dim, int *ncur)
{
    int a[AS_MESH_MAX_AXES], b[AS_MESH_MAX_AXES], na, nb, g = 0;

    na = as_spec_dim_axes(&st->cur, dim, a);
    nb = as_spec_dim_axes(st->to, dim, b);
    while (g < na && g < nb && a[g] == b[g])
        g++;
    if (ncur != NULL)
        *ncur = na;
    return g;
}

/* Can axis K be appended to DIM's axes now, moving CUR toward TO? */
static int
rs_can_append(const rs_state *st, int dim, int k)
{
    int b[AS_MESH_MAX_AXES], nb, na, g;

    if (dim < 0)
        return 0;
    g = rs_prefix(st, dim, &na);
    nb = as_spec_dim_axes(st->to, dim, b);
    return g == na && na < nb && b[na] == k;
}

/* Free slices that move toward TO; returns 1 if any was made. */
static int
rs_slices(rs_state *st)
{
    int k, any = 0, again = 1;

    while (again) {
        again = 0;
        for (k = 0; k < st->cur.naxes; k++)
            if (st->cur.axis[k] == AS_SPEC_R && rs_can_append(st, st->to->axis[k], k)) {
                rs_emit(st, -1, k, 0);
                st->cur.axis[k] = st->to->axis[k];
                again = any = 1;
            }
    }
    return any;
}

/* Resolve partial axes that TO does not keep partial (same kind). */
static void
rs_partials(rs_state *st)
{
    int k;

    for (k = 0; k < st->cur.naxes; k++) {
        if (st->cur.axis[k] != AS_SPEC_P)
            continue;
        if (st->to->axis[k] == AS_SPEC_P && st->to->partial[k] == st->cur.partial[k])
            continue;
        if (rs_can_append(st, st->to->axis[k], k)) {
            rs_emit(st, AS_COLL_REDUCE_SCATTER, k, rs_bytes(st));
            st->cur.axis[k] = st->to->axis[k];
        } else {
            rs_emit(st, AS_COLL_ALL_REDUCE, k, rs_bytes(st));
            st->cur.axis[k] = AS_SPEC_R;
        }
        st->cur.partial[k] = 0;
        rs_slices(st);
    }
}

/* Alpa's space on a mesh of 2+ axes (of size > 1): no all-to-all; gather, then slice. */
static int
rs_no_a2a(const rs_state *st)
{
    int k, n = 0;

    if (as_strat_get_space() != AS_SPACE_ALPA)
        return 0;
    for (k = 0; k < as_mesh_naxes(st->m); k++)
        n += as_mesh_axis_size(st->m, k) > 1;
    return n >= 2;
}

/* Remove one misplaced split (the last axis of some dim); returns 0 when none is left. */
static int
rs_remove_one(rs_state *st)
{
    int k, best = -1, best_a2a = 0;

    for (k = st->cur.naxes - 1; k >= 0; k--) {
        int dim = st->cur.axis[k], axes[AS_MESH_MAX_AXES], na, g, a2a;
        if (dim < 0)
            continue;
        g = rs_prefix(st, dim, &na);
        na = as_spec_dim_axes(&st->cur, dim, axes);
        if (g == na || axes[na - 1] != k)
            continue;
        a2a = st->to->axis[k] >= 0 && st->to->axis[k] != dim &&
              rs_can_append(st, st->to->axis[k], k) && !rs_no_a2a(st);
        if (best < 0 || (a2a && !best_a2a)) {
            best = k;
            best_a2a = a2a;
        }
    }
    if (best < 0)
        return 0;
    if (best_a2a) {
        rs_emit(st, AS_COLL_ALL_TO_ALL, best, rs_bytes(st));
        st->cur.axis[best] = st->to->axis[best];
    } else {
        rs_emit(st, AS_COLL_ALL_GATHER, best,
                rs_bytes(st) * as_mesh_axis_size(st->m, best));
        st->cur.axis[best] = AS_SPEC_R;
    }
    return 1;
}

int
as_reshard_steps(const as_cost_model *cm, const as_shape *shape, const as_spec *from,
                 const as_spec *to, as_reshard_step *steps, double *cost)
{
    rs_state st;
    int k, guard;

    memset(&st, 0, sizeof st);
    st.cm = cm;
    st.m = as_cost_model_mesh(cm);
    st.shape = shape;
    st.cur = *from;
    st.to = to;
    st.steps = steps;
    if (!as_spec_equal(from, to)) {
        rs_slices(&st);
        rs_partials(&st);
        for (guard = 0; guard < 4 * AS_MESH_MAX_AXES && rs_remove_one(&st); guard++)
            rs_slices(&st);
        /* Replicated -> partial: keep the value on one device, zeros elsewhere (free). */
        for (k = 0; k < st.cur.naxes; k++)
            if (to->axis[k] == AS_SPEC_P && st.cur.axis[k] == AS_SPEC_R) {
                st.cur.axis[k] = AS_SPEC_P;
                st.cur.partial[k] = to->partial[k];
            }
    }
    if (cost != NULL)
        *cost = st.cost;
    return st.nsteps < AS_RESHARD_MAX_STEPS ? st.nsteps : AS_RESHARD_MAX_STEPS;
}

int
as_reshard_copies(const as_cost_model *cm, const as_shape *shape, const as_spec *from,
                  const as_spec *to)
{
    as_reshard_step st[AS_RESHARD_MAX_STEPS];
    const as_mesh *mesh = as_cost_model_mesh(cm);
    int ns, i;

    if (as_spec_equal(from, to))
        return 0;
    ns = as_reshard_steps(cm, shape, from, to, st, NULL);
    for (i = 0; i < ns; i++)
        if (st[i].kind >= 0 && as_mesh_axis_size(mesh, st[i].axis) > 1)
            return 1;
    return 0;
}

double
as_reshard_cost(const as_cost_model *cm, const as_shape *shape, const as_spec *from,
                const as_spec *to)
{
    double c = 0;

    as_reshard_steps(cm, shape, from, to, NULL, &c);
    return c;
}

int
as_zero_gather_steps(const as_cost_model *cm, const as_shape *shape, const as_spec *spec,
                     const uint8_t *role, as_reshard_step *steps, double *cost)
{
    const as_mesh *m = as_cost_model_mesh(cm);
    int parts = as_spec_zero_parts(spec, m, role), k, n = 0;
    double b, total = 0;

    if (parts > 1) {
        b = as_spec_local_bytes(spec, shape, m) / parts;
        for (k = as_mesh_naxes(m) - 1; k >= 0; k--) { /* minor axes first, as reshards gather */
            as_reshard_step s;
            if (k >= spec->naxes || role[k] != AS_ROLE_DATA || spec->axis[k] != AS_SPEC_R ||
                as_mesh_axis_size(m, k) < 2)
                continue;
            b *= as_mesh_axis_size(m, k);
            s.kind = AS_COLL_ALL_GATHER;
            s.axis = k;
            s.bytes = b;
            s.cost = as_strat_coll_cost(cm, AS_COLL_ALL_GATHER, b, k);
            total += s.cost;
            if (steps != NULL)
                steps[n] = s;
            n++;
        }
    }
    if (cost != NULL)
        *cost = total;
    return n;
}

double
as_zero_reduce_saving(const as_cost_model *cm, const as_shape *shape, const as_spec *from,
                      const as_spec *to, const uint8_t *role)
{
    as_reshard_step st[AS_RESHARD_MAX_STEPS];
    const as_mesh *m = as_cost_model_mesh(cm);
    int n = as_reshard_steps(cm, shape, from, to, st, NULL), i;
    double saved = 0, div = 1;

    for (i = 0; i < n; i++)
        if (st[i].kind == AS_COLL_ALL_REDUCE && role[st[i].axis] == AS_ROLE_DATA &&
            as_mesh_axis_size(m, st[i].axis) > 1) {
            /* each reduce-scatter works on what the previous ones left */
            saved += st[i].cost - as_strat_coll_cost(cm, AS_COLL_REDUCE_SCATTER,
                                                     st[i].bytes / div, st[i].axis);
            div *= as_mesh_axis_size(m, st[i].axis);
        }
    return saved;
}
