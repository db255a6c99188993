/* cost.c -- the cost-model registry and driver.
 *
 * The driver owns what every model shares: binding to a profile and a mesh
 * (node check, intra/inter class of each axis, computed once), parameter
 * parsing ("key=value"), the byte conventions of collectives, the rule that
 * a collective over one device is free, and shard sizes for memory.  The
 * models (cost_*.c) only hold their formulas.
 */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"

struct as_cost_model {
    const as_cost_ops *ops;           /**< the plugin */
    as_cost_data *data;               /**< its private data */
    as_hw hw;                         /**< copy of the profile */
    const as_mesh *mesh;              /**< borrowed */
    as_link link[AS_MESH_MAX_AXES];   /**< class of each mesh axis on hw */
};

/* Registry: the first entry is the default. */
static const as_cost_ops *const cost_table[] = {
    &as_cost_roofline,
    &as_cost_alpa,
    &as_cost_distir,
    NULL,
};

static const char *const coll_names[AS_COLL_COUNT] = {
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "send",
};

const char *
as_coll_name(as_coll k)
{
    return (int)k >= 0 && k < AS_COLL_COUNT ? coll_names[k] : "?";
}

int
as_coll_parse(const char *s, as_coll *out)
{
    int k;

    for (k = 0; k < AS_COLL_COUNT; k++)
        if (strcmp(coll_names[k], s) == 0) {
            *out = (as_coll)k;
            return 1;
        }
    return 0;
}

/* Registry. */

int
as_cost_model_count(void)
{
    return (int)(sizeof cost_table / sizeof cost_table[0]) - 1;
}

const as_cost_ops *
as_cost_model_get(int i)
{
    return cost_table[i];
}

const as_cost_ops *
as_cost_model_find(const char *name, as_err *err)
{
    int i;

    for (i = 0; cost_table[i] != NULL; i++)
        if (strcmp(cost_table[i]->name, name) == 0)
            return cost_table[i];
    as_errf(err, AS_EUSAGE, "unknown cost model '%s' (known: alpa, distir, roofline)", name);
    return NULL;
}

void
as_cost_model_list(FILE *fp)
{
    int i;

    for (i = 0; cost_table[i] != NULL; i++) {
        fprintf(fp, "  %-9s %s%s\n", cost_table[i]->name, cost_table[i]->desc,
                i == 0 ? " (default)" : "");
        if (cost_table[i]->params[0] != '\0')
            fprintf(fp, "  %-9s params: %s\n", "", cost_table[i]->params);
    }
}

/* Create and free. */

int
as_cost_model_set_param(as_cost_model *cm, const char *key, const char *value, as_err *err)
{
    int rc;

    if (cm->ops->set_param == NULL)
        rc = as_errf(err, AS_EUSAGE, "has no parameters (got '%s')", key);
    else
        rc = cm->ops->set_param(cm->data, key, value, err);
    if (rc != AS_OK)
        as_err_prefix(err, "cost model '%s': ", cm->ops->name);
    return rc;
}

/* Split "key=value" and apply it. */
static int
cost_apply_param(as_cost_model *cm, const char *kv, as_err *err)
{
    const char *eq = strchr(kv, '=');
    char key[64];
    size_t n;

    if (eq == NULL || eq == kv || (n = (size_t)(eq - kv)) >= sizeof key)
        return as_errf(err, AS_EUSAGE, "cost model '%s': expected KEY=VALUE, got '%s'",
                       cm->ops->name, kv);
    memcpy(key, kv, n);
    key[n] = '\0';
    return as_cost_model_set_param(cm, key, eq + 1, err);
}

int
as_cost_model_new(const as_cost_ops *ops, const as_hw *hw, const as_mesh *mesh,
                  const char *const *params, size_t nparams, as_cost_model **out, as_err *err)
{
    as_cost_model *cm;
    int rc, k;
    size_t i;

    AS_CHECK(as_mesh_check_nodes(mesh, hw->devices_per_node, err));
    cm = as_xcalloc(1, sizeof *cm);
    cm->ops = ops;
    cm->hw = *hw;
    as_hw_derive(&cm->hw);
    cm->mesh = mesh;
    for (k = 0; k < as_mesh_naxes(mesh); k++)
        cm->link[k] = as_mesh_axis_link(mesh, k, hw->devices_per_node);
    rc = ops->new_data(&cm->hw, mesh, &cm->data, err);
    if (rc != AS_OK) {
        free(cm);
        return rc;
    }
    for (i = 0; i < nparams; i++)
        if ((rc = cost_apply_param(cm, params[i], err)) != AS_OK) {
            as_cost_model_free(cm);
            return rc;
        }
    *out = cm;
    return AS_OK;
}

void
as_cost_model_free(as_cost_model *cm)
{
    if (cm == NULL)
        return;
    if (cm->ops->free_data != NULL)
        cm->ops->free_data(cm->data);
    else
        free(cm->data);
    free(cm);
}

/* Accessors. */

const as_cost_ops *
as_cost_model_ops(const as_cost_model *cm)
{
    return cm->ops;
}

const as_hw *
as_cost_model_hw(const as_cost_model *cm)
{
    return &cm->hw;
}

const as_mesh *
as_cost_model_mesh(const as_cost_model *cm)
{
    return cm->mesh;
}

as_link
as_cost_axis_link(const as_cost_model *cm, int axis)
{
    return cm->link[axis];
}

/* Costs. */

double
as_cost_compute(const as_cost_model *cm, const as_opinfo *info)
{
    return cm->ops->compute(cm->data, info);
}

double
as_cost_collective_group(const as_cost_model *cm, as_coll kind, double bytes,
                         const as_comm_group *g)
{
    if (kind != AS_COLL_SEND && g->n <= 1)
        return 0.0; /* nothing leaves the device */
    return cm->ops->collective(cm->data, kind, bytes, g);
}

double
as_cost_collective(const as_cost_model *cm, as_coll kind, double bytes, int axis)
{
    as_comm_group g;

    g.n = as_mesh_axis_size(cm->mesh, axis);
    g.link = cm->link[axis];
    g.axis = axis;
    return as_cost_collective_group(cm, kind, bytes, &g);
}

double
as_cost_shard_bytes(const as_shape *s, const int64_t *parts)
{
    double n = as_dtype_size(s->dtype);
    int d;

    for (d = 0; d < s->rank; d++) {
        int64_t p = parts != NULL && parts[d] > 1 ? parts[d] : 1;

        n *= (double)((s->dim[d] + p - 1) / p);
    }
    return n;
}

double
as_cost_memory(const as_cost_model *cm, const as_shape *s, const int64_t *parts)
{
    double local = as_cost_shard_bytes(s, parts);
    int64_t tiles = 1;
    int d;

    if (cm->ops->memory == NULL)
        return local;
    for (d = 0; parts != NULL && d < s->rank; d++)
        tiles *= parts[d] > 1 ? parts[d] : 1;
    return cm->ops->memory(cm->data, (double)as_shape_bytes(s), local, tiles);
}

double
as_cost_replicated_penalty(const as_cost_model *cm)
{
    return cm->ops->replicated_penalty != NULL ? cm->ops->replicated_penalty(cm->data) : 0.0;
}

/* Helpers for the models. */

int
as_cost_is_contraction(const as_opinfo *info)
{
    static const char *const names[] = {"matmul",          "conv2d",      "conv2d_grad_input",
                                        "conv2d_grad_weight", "dot_general", "conv_general"};
    size_t i;

    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(info->def->name, names[i]) == 0)
            return 1;
    return 0;
}

as_dtype
as_cost_op_dtype(const as_opinfo *info)
{
    if (info->out != NULL && info->nout > 0)
        return info->out[0].dtype;
    if (info->nin > 0)
        return info->in[0].dtype;
    return AS_DT_F32;
}

int
as_cost_parse_double(const char *key, const char *value, int positive, double *out, as_err *err)
{
    char *end;
    double v;

    v = strtod(value, &end);
    if (value[0] == '\0' || isspace((unsigned char)value[0]) || *end != '\0' || !isfinite(v))
        return as_errf(err, AS_EUSAGE, "bad number '%s' for '%s'", value, key);
    if (positive ? v <= 0 : v < 0)
        return as_errf(err, AS_EUSAGE, "'%s' must be %s 0 (got %s)", key, positive ? ">" : ">=",
                       value);
    *out = v;
    return AS_OK;
}

int
as_cost_parse_list(const char *key, const char *value, double *out, int max, int *n,
                   as_err *err)
{
    const char *p = value;
    char item[64];
    int k = 0;

    for (;;) {
        size_t len = strcspn(p, ",");

        if (k == max)
            return as_errf(err, AS_EUSAGE, "'%s' has more than %d values ('%s')", key, max,
                           value);
        if (len == 0 || len >= sizeof item)
            return as_errf(err, AS_EUSAGE, "bad list '%s' for '%s' (expected numbers like 1,0.1)",
                           value, key);
        memcpy(item, p, len);
        item[len] = '\0';
        AS_CHECK(as_cost_parse_double(key, item, 0, &out[k], err));
        k++;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    *n = k;
    return AS_OK;
}
