/* plan.c -- sharding plans in graph terms: building, JSON write and read
 * (jansson), and JAX / DTensor text.
 *
 * The JSON form is one object: format, version, graph, mesh, hardware,
 * cost_model, solver, status, objective, bound (null when unknown), peak
 * (bytes per device, omitted when unknown), tensors (name, kind, shape,
 * spec text) and ops (name, type, strategy, index).  Reading checks every
 * field and every spec against its shape on the plan's mesh.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formulate/plan.h"

static const char *const tkind_names[] = {"act", "input", "param", "state", "const"};

int
as_shard_plan_new(const char *mesh_spec, as_shard_plan **out, as_err *err)
{
    as_shard_plan *p;
    as_mesh *m;

    AS_CHECK(as_mesh_parse(mesh_spec, &m, err));
    p = as_xcalloc(1, sizeof *p);
    p->arena = as_arena_new();
    p->mesh = m;
    p->graph = p->hw = p->hw_file = p->cost_model = p->solver = p->status = "";
    p->schedule = p->recompute = p->recompute_layers = "";
    p->bound = -HUGE_VAL;
    p->peak = -1;
    *out = p;
    return AS_OK;
}

void
as_shard_plan_free(as_shard_plan *p)
{
    if (p == NULL)
        return;
    as_mesh_free(p->mesh);
    free(p->tensors);
    free(p->ops);
    as_arena_free(p->arena);
    free(p);
}

const char *
as_shard_plan_strdup(as_shard_plan *p, const char *s)
{
    return as_arena_strdup(p->arena, s != NULL ? s : "");
}

void
as_shard_plan_set_step(as_shard_plan *p, int np, int k, const char *schedule,
                       const char *recompute, const int *layers, const double *peaks)
{
    p->pipeline = np;
    p->microbatches = k;
    p->schedule = as_shard_plan_strdup(p, schedule);
    p->recompute = as_shard_plan_strdup(p, recompute);
    p->stage_layers = NULL;
    p->stage_peak = NULL;
    if (layers != NULL && np > 0) {
        p->stage_layers = as_arena_alloc(p->arena, (size_t)np * sizeof *p->stage_layers);
        memcpy(p->stage_layers, layers, (size_t)np * sizeof *p->stage_layers);
    }
    if (peaks != NULL && np > 0) {
        p->stage_peak = as_arena_alloc(p->arena, (size_t)np * sizeof *p->stage_peak);
        memcpy(p->stage_peak, peaks, (size_t)np * sizeof *p->stage_peak);
    }
}

int
as_shard_plan_add_tensor(as_shard_plan *p, const char *name, as_tensor_kind kind,
                         const as_shape *shape, const as_spec *spec, as_err *err)
{
    as_plan_tensor *t;

    if (as_spec_check(spec, shape, p->mesh, err) != AS_OK) {
        as_err_prefix(err, "tensor '%s': ", name);
        return err->code;
    }
    if (p->ntensors == p->cap_tensors) {
        p->cap_tensors = p->cap_tensors ? 2 * p->cap_tensors : 64;
        p->tensors = as_xreallocarray(p->tensors, p->cap_tensors, sizeof *p->tensors);
    }
    t = &p->tensors[p->ntensors++];
    t->name = as_shard_plan_strdup(p, name);
    t->kind = kind;
    t->shape = *shape;
    t->spec = *spec;
    return AS_OK;
}

void
as_shard_plan_add_op(as_shard_plan *p, const char *name, const char *type, const char *strategy,
                     int index)
{
    as_plan_op *o;

    if (p->nops == p->cap_ops) {
        p->cap_ops = p->cap_ops ? 2 * p->cap_ops : 64;
        p->ops = as_xreallocarray(p->ops, p->cap_ops, sizeof *p->ops);
    }
    o = &p->ops[p->nops++];
    o->name = as_shard_plan_strdup(p, name);
    o->type = as_shard_plan_strdup(p, type);
    o->strategy = as_shard_plan_strdup(p, strategy);
    o->index = index;
}

const as_plan_tensor *
as_shard_plan_tensor(const as_shard_plan *p, const char *name)
{
    size_t i;

    for (i = 0; i < p->ntensors; i++)
        if (strcmp(p->tensors[i].name, name) == 0)
            return &p->tensors[i];
    return NULL;
}

const as_plan_op *
as_shard_plan_op(const as_shard_plan *p, const char *name)
{
    size_t i;

    for (i = 0; i < p->nops; i++)
        if (strcmp(p->ops[i].name, name) == 0)
            return &p->ops[i];
    return NULL;
}

/* ---- JSON ---- */

static json_t *
plan_json(const as_shard_plan *p)
{
    json_t *o = json_object(), *ts = json_array(), *os = json_array();
    char buf[AS_SPEC_TEXT_MAX], sh[96];
    size_t i;

    json_object_set_new(o, "format", json_string("autoshard-plan"));
    json_object_set_new(o, "version", json_integer(1));
    json_object_set_new(o, "graph", json_string(p->graph));
    json_object_set_new(o, "mesh", json_string(as_mesh_str(p->mesh)));
    json_object_set_new(o, "hardware", json_string(p->hw));
    if (p->hw_file != NULL && *p->hw_file)
        json_object_set_new(o, "hardware_file", json_string(p->hw_file));
    json_object_set_new(o, "cost_model", json_string(p->cost_model));
    json_object_set_new(o, "solver", json_string(p->solver));
    json_object_set_new(o, "status", json_string(p->status));
    json_object_set_new(o, "objective", json_real(p->objective));
    json_object_set_new(o, "bound", isfinite(p->bound) ? json_real(p->bound) : json_null());
    if (p->peak >= 0)
        json_object_set_new(o, "peak", json_real(p->peak));
    if (*as_mesh_roles_str(p->mesh, p->role, buf, sizeof buf))
        json_object_set_new(o, "roles", json_string(buf));
    if (p->zero > 0)
        json_object_set_new(o, "zero", json_integer(p->zero));
    for (i = 0; i < p->ntensors; i++) {
        const as_plan_tensor *t = &p->tensors[i];
        json_t *jt = json_object();
        json_object_set_new(jt, "name", json_string(t->name));
        json_object_set_new(jt, "kind", json_string(tkind_names[t->kind]));
        json_object_set_new(jt, "shape", json_string(as_shape_str(&t->shape, sh, sizeof sh)));
        json_object_set_new(jt, "spec", json_string(as_spec_str(&t->spec, p->mesh, buf,
                                                                sizeof buf)));
        json_array_append_new(ts, jt);
    }
    for (i = 0; i < p->nops; i++) {
        const as_plan_op *op = &p->ops[i];
        json_t *jo = json_object();
        json_object_set_new(jo, "name", json_string(op->name));
        json_object_set_new(jo, "type", json_string(op->type));
        json_object_set_new(jo, "strategy", json_string(op->strategy));
        if (op->index >= 0)
            json_object_set_new(jo, "index", json_integer(op->index));
        json_array_append_new(os, jo);
    }
    if (p->pipeline > 0 || p->microbatches > 0) {
        json_t *pj = json_object();
        if (p->pipeline > 0)
            json_object_set_new(pj, "stages", json_integer(p->pipeline));
        if (p->microbatches > 0)
            json_object_set_new(pj, "microbatches", json_integer(p->microbatches));
        if (*p->schedule)
            json_object_set_new(pj, "schedule", json_string(p->schedule));
        if (*p->recompute)
            json_object_set_new(pj, "recompute", json_string(p->recompute));
        if (strcmp(p->recompute, "auto") == 0)
            json_object_set_new(pj, "recompute_layers", json_string(p->recompute_layers));
        if (p->stage_layers != NULL && p->pipeline > 0) {
            json_t *a = json_array();
            for (i = 0; i < (size_t)p->pipeline; i++)
                json_array_append_new(a, json_integer(p->stage_layers[i]));
            json_object_set_new(pj, "layers", a);
        }
        if (p->stage_peak != NULL && p->pipeline > 0) {
            json_t *a = json_array();
            for (i = 0; i < (size_t)p->pipeline; i++)
                json_array_append_new(a, json_real(p->stage_peak[i]));
            json_object_set_new(pj, "peaks", a);
        }
        json_object_set_new(o, "pipeline", pj);
    }
    json_object_set_new(o, "tensors", ts);
    json_object_set_new(o, "ops", os);
    return o;
}

char *
as_shard_plan_dumps(const as_shard_plan *p)
{
    json_t *o = plan_json(p);
    char *s = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    char *r;

    json_decref(o);
    if (s == NULL)
        return as_xstrdup("{}\n");
    r = as_xasprintf("%s\n", s);
    free(s);
    return r;
}

int
as_shard_plan_write(const as_shard_plan *p, const char *path, as_err *err)
{
    char *s = as_shard_plan_dumps(p);
    int rc = as_write_file_atomic(path, s, strlen(s), err);

    free(s);
    return rc;
}

/* String member KEY of O into *OUT (arena copy). */
static int
get_str(as_shard_plan *p, json_t *o, const char *where, const char *key, const char **out,
        const char *name, as_err *err)
{
    json_t *v = json_object_get(o, key);

    if (!json_is_string(v))
        return as_errf(err, AS_EPARSE, "%s: %s.%s: expected a string", name, where, key);
    *out = as_shard_plan_strdup(p, json_string_value(v));
    return AS_OK;
}

static int
get_num(json_t *o, const char *key, double *out, int nullable, const char *name, as_err *err)
{
    json_t *v = json_object_get(o, key);

    if (nullable && json_is_null(v)) {
        *out = -HUGE_VAL;
        return AS_OK;
    }
    if (!json_is_number(v))
        return as_errf(err, AS_EPARSE, "%s: '%s': expected a number", name, key);
    *out = json_number_value(v);
    return AS_OK;
}

/* Parse a shape "f32[8,512]". */
static int
parse_shape(const char *s, as_shape *out)
{
    const char *b = strchr(s, '[');
    char *end;

    memset(out, 0, sizeof *out);
    if (b == NULL || !as_dtype_parse(s, (size_t)(b - s), &out->dtype))
        return 0;
    b++;
    if (*b == ']')
        return b[1] == '\0';
    for (;;) {
        long long d = strtoll(b, &end, 10);
        if (end == b || d < 0 || out->rank >= AS_MAX_RANK)
            return 0;
        out->dim[out->rank++] = d;
        if (*end == ']')
            return end[1] == '\0';
        if (*end != ',')
            return 0;
        b = end + 1;
    }
}

static int
parse_tensor(as_shard_plan *p, json_t *jt, size_t i, const char *name, as_err *err)
{
    char where[48];
    const char *tname, *kind, *shape, *spec;
    as_shape sh;
    as_spec sp;
    int k;

    snprintf(where, sizeof where, "tensors[%zu]", i);
    AS_CHECK(get_str(p, jt, where, "name", &tname, name, err));
    AS_CHECK(get_str(p, jt, where, "kind", &kind, name, err));
    AS_CHECK(get_str(p, jt, where, "shape", &shape, name, err));
    AS_CHECK(get_str(p, jt, where, "spec", &spec, name, err));
    for (k = 0; k < 5; k++)
        if (strcmp(kind, tkind_names[k]) == 0)
            break;
    if (k == 5)
        return as_errf(err, AS_EPARSE, "%s: %s.kind: unknown kind '%s'", name, where, kind);
    if (!parse_shape(shape, &sh))
        return as_errf(err, AS_EPARSE, "%s: %s.shape: bad shape '%s'", name, where, shape);
    if (as_spec_parse(spec, p->mesh, sh.rank, &sp, err) != AS_OK ||
        as_shard_plan_add_tensor(p, tname, (as_tensor_kind)k, &sh, &sp, err) != AS_OK) {
        as_err_prefix(err, "%s: %s: ", name, where);
        err->code = AS_EPARSE;
        return AS_EPARSE;
    }
    return AS_OK;
}

int
as_plan_op_strategy(const as_plan_op *op, const as_strategy_set *set)
{
    if (op->index >= 0 && op->index < set->n && strcmp(set->s[op->index].name, op->strategy) == 0)
        return op->index;
    return as_strat_find(set, op->strategy);
}

static int
parse_op(as_shard_plan *p, json_t *jo, size_t i, const char *name, as_err *err)
{
    char where[48];
    const char *oname, *type, *strat;
    json_t *idx = json_object_get(jo, "index");

    snprintf(where, sizeof where, "ops[%zu]", i);
    AS_CHECK(get_str(p, jo, where, "name", &oname, name, err));
    AS_CHECK(get_str(p, jo, where, "type", &type, name, err));
    AS_CHECK(get_str(p, jo, where, "strategy", &strat, name, err));
    if (idx != NULL && (!json_is_integer(idx) || json_integer_value(idx) < 0 ||
                        json_integer_value(idx) > INT32_MAX))
        return as_errf(err, AS_EPARSE, "%s: %s.index: expected an integer >= 0", name, where);
    as_shard_plan_add_op(p, oname, type, strat, idx != NULL ? (int)json_integer_value(idx) : -1);
    return AS_OK;
}

/* Positive integer member KEY of O (absent: *OUT unchanged). */
static int
get_count(json_t *o, const char *key, int *out, const char *name, as_err *err)
{
    json_t *v = json_object_get(o, key);

    if (v == NULL)
        return AS_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000000)
        return as_errf(err, AS_EPARSE, "%s: pipeline.%s: expected a positive integer", name, key);
    *out = (int)json_integer_value(v);
    return AS_OK;
}

/* The optional "pipeline" object: the step the plan was solved for. */
static int
parse_step(as_shard_plan *p, json_t *pj, const char *name, as_err *err)
{
    json_t *a, *v;
    int np = 0, k = 0;
    size_t i;

    if (!json_is_object(pj))
        return as_errf(err, AS_EPARSE, "%s: 'pipeline': expected an object", name);
    AS_CHECK(get_count(pj, "stages", &np, name, err));
    AS_CHECK(get_count(pj, "microbatches", &k, name, err));
    p->pipeline = np;
    p->microbatches = k;
    if (json_object_get(pj, "schedule") != NULL) {
        AS_CHECK(get_str(p, pj, "pipeline", "schedule", &p->schedule, name, err));
        if (strcmp(p->schedule, "1f1b") != 0 && strcmp(p->schedule, "gpipe") != 0)
            return as_errf(err, AS_EPARSE, "%s: pipeline.schedule: expected \"1f1b\" or "
                           "\"gpipe\", got \"%s\"", name, p->schedule);
    }
    if (json_object_get(pj, "recompute") != NULL) {
        AS_CHECK(get_str(p, pj, "pipeline", "recompute", &p->recompute, name, err));
        if (strcmp(p->recompute, "none") != 0 && strcmp(p->recompute, "full") != 0 &&
            strcmp(p->recompute, "selective") != 0 && strcmp(p->recompute, "auto") != 0)
            return as_errf(err, AS_EPARSE, "%s: pipeline.recompute: expected \"none\", "
                           "\"full\", \"selective\" or \"auto\", got \"%s\"", name,
                           p->recompute);
    }
    if (json_object_get(pj, "recompute_layers") != NULL) {
        const char *q;
        AS_CHECK(get_str(p, pj, "pipeline", "recompute_layers", &p->recompute_layers, name,
                         err));
        for (q = p->recompute_layers; *q; q++)
            if (*q == ' ' || (*q == ',' && (q == p->recompute_layers || q[1] == ',' || !q[1])))
                return as_errf(err, AS_EPARSE, "%s: pipeline.recompute_layers: expected layer "
                               "keys separated by commas (\"h.0,h.1\"), got \"%s\"", name,
                               p->recompute_layers);
    }
    if (strcmp(p->recompute, "auto") == 0 && json_object_get(pj, "recompute_layers") == NULL)
        return as_errf(err, AS_EPARSE, "%s: pipeline.recompute \"auto\" needs "
                       "pipeline.recompute_layers (the layers it recomputes)", name);
    if ((a = json_object_get(pj, "layers")) != NULL) {
        if (!json_is_array(a) || np == 0 || json_array_size(a) != (size_t)np)
            return as_errf(err, AS_EPARSE, "%s: pipeline.layers: expected an array of %d "
                           "layer counts (one per stage)", name, np);
        p->stage_layers = as_arena_alloc(p->arena, (size_t)np * sizeof *p->stage_layers);
        for (i = 0; i < (size_t)np; i++) {
            v = json_array_get(a, i);
            if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                json_integer_value(v) > 1000000)
                return as_errf(err, AS_EPARSE, "%s: pipeline.layers[%zu]: expected a positive "
                               "integer", name, i);
            p->stage_layers[i] = (int)json_integer_value(v);
        }
    }
    if ((a = json_object_get(pj, "peaks")) != NULL) {
        if (!json_is_array(a) || np == 0 || json_array_size(a) != (size_t)np)
            return as_errf(err, AS_EPARSE, "%s: pipeline.peaks: expected an array of %d "
                           "numbers (one per stage)", name, np);
        p->stage_peak = as_arena_alloc(p->arena, (size_t)np * sizeof *p->stage_peak);
        for (i = 0; i < (size_t)np; i++) {
            v = json_array_get(a, i);
            if (!json_is_number(v) || !isfinite(json_number_value(v)) ||
                json_number_value(v) < 0)
                return as_errf(err, AS_EPARSE, "%s: pipeline.peaks[%zu]: expected a number "
                               ">= 0", name, i);
            p->stage_peak[i] = json_number_value(v);
        }
    }
    return AS_OK;
}

static int
plan_from_json(json_t *o, const char *name, as_shard_plan **out, as_err *err)
{
    as_shard_plan *p = NULL;
    json_t *mesh = json_object_get(o, "mesh"), *ts, *os, *v;
    size_t i;
    int rc;

    if (!json_is_object(o) || !json_is_string(json_object_get(o, "format")) ||
        strcmp(json_string_value(json_object_get(o, "format")), "autoshard-plan") != 0)
        return as_errf(err, AS_EPARSE, "%s: not a plan (format is not \"autoshard-plan\")",
                       name);
    if (!json_is_string(mesh))
        return as_errf(err, AS_EPARSE, "%s: 'mesh': expected a string", name);
    if ((rc = as_shard_plan_new(json_string_value(mesh), &p, err)) != AS_OK) {
        as_err_prefix(err, "%s: ", name);
        err->code = AS_EPARSE;
        return AS_EPARSE;
    }
    AS_CHECK_GOTO(rc, get_str(p, o, "plan", "graph", &p->graph, name, err), out);
    AS_CHECK_GOTO(rc, get_str(p, o, "plan", "hardware", &p->hw, name, err), out);
    if (json_object_get(o, "hardware_file") != NULL)
        AS_CHECK_GOTO(rc, get_str(p, o, "plan", "hardware_file", &p->hw_file, name, err), out);
    AS_CHECK_GOTO(rc, get_str(p, o, "plan", "cost_model", &p->cost_model, name, err), out);
    AS_CHECK_GOTO(rc, get_str(p, o, "plan", "solver", &p->solver, name, err), out);
    AS_CHECK_GOTO(rc, get_str(p, o, "plan", "status", &p->status, name, err), out);
    AS_CHECK_GOTO(rc, get_num(o, "objective", &p->objective, 0, name, err), out);
    AS_CHECK_GOTO(rc, get_num(o, "bound", &p->bound, 1, name, err), out);
    if ((v = json_object_get(o, "peak")) != NULL)
        AS_CHECK_GOTO(rc, get_num(o, "peak", &p->peak, 0, name, err), out);
    if ((v = json_object_get(o, "pipeline")) != NULL)
        AS_CHECK_GOTO(rc, parse_step(p, v, name, err), out);
    if ((v = json_object_get(o, "roles")) != NULL) {
        if (!json_is_string(v)) {
            rc = as_errf(err, AS_EPARSE, "%s: 'roles': expected a string", name);
            goto out;
        }
        if ((rc = as_mesh_parse_roles(p->mesh, json_string_value(v), p->role, err)) != AS_OK) {
            as_err_prefix(err, "%s: 'roles': ", name);
            err->code = rc = AS_EPARSE;
            goto out;
        }
    }
    if ((v = json_object_get(o, "zero")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 3) {
            rc = as_errf(err, AS_EPARSE, "%s: 'zero': expected 0, 1, 2 or 3", name);
            goto out;
        }
        p->zero = (int)json_integer_value(v);
        if (p->zero > 0 && memchr(p->role, AS_ROLE_DATA, sizeof p->role) == NULL) {
            rc = as_errf(err, AS_EPARSE, "%s: 'zero' %d needs a data axis in 'roles'", name,
                         p->zero);
            goto out;
        }
    }
    ts = json_object_get(o, "tensors");
    os = json_object_get(o, "ops");
    if (!json_is_array(ts) || !json_is_array(os)) {
        rc = as_errf(err, AS_EPARSE, "%s: 'tensors' and 'ops' must be arrays", name);
        goto out;
    }
    for (i = 0; i < json_array_size(ts); i++)
        AS_CHECK_GOTO(rc, parse_tensor(p, json_array_get(ts, i), i, name, err), out);
    for (i = 0; i < json_array_size(os); i++)
        AS_CHECK_GOTO(rc, parse_op(p, json_array_get(os, i), i, name, err), out);
out:
    if (rc != AS_OK) {
        as_shard_plan_free(p);
        return rc;
    }
    *out = p;
    return AS_OK;
}

int
as_shard_plan_parse(const char *text, size_t len, const char *name, as_shard_plan **out,
                    as_err *err)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    int rc;

    if (o == NULL)
        return as_errf(err, AS_EPARSE, "%s:%d:%d: %s", name, je.line > 0 ? je.line : 1,
                       je.column > 0 ? je.column : 1, je.text);
    rc = plan_from_json(o, name, out, err);
    if (rc != AS_OK)
        as_err_json_pos(err, name, text, len);
    json_decref(o);
    return rc;
}

int
as_shard_plan_read(const char *path, as_shard_plan **out, as_err *err)
{
    char *buf;
    size_t len;
    int rc;

    AS_CHECK(as_read_file(path, &buf, &len, err));
    rc = as_shard_plan_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

int
as_shard_plan_read_list(const char *path, as_shard_plan ***out, size_t *n, as_err *err)
{
    char *buf;
    size_t len, i, k;
    json_error_t je;
    json_t *o;
    int rc = AS_OK;

    *out = NULL;
    *n = 0;
    AS_CHECK(as_read_file(path, &buf, &len, err));
    o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (o == NULL) {
        rc = as_errf(err, AS_EPARSE, "%s:%d:%d: %s", path, je.line > 0 ? je.line : 1,
                     je.column > 0 ? je.column : 1, je.text);
    } else if (!json_is_array(o)) {
        *out = as_xcalloc(1, sizeof **out);
        rc = plan_from_json(o, path, &(*out)[0], err);
        *n = rc == AS_OK;
    } else if ((k = json_array_size(o)) == 0) {
        rc = as_errf(err, AS_EPARSE, "%s:1:1: an empty array of plans", path);
    } else { /* `solve --top K -o`: an array of plans */
        *out = as_xcalloc(k, sizeof **out);
        for (i = 0; i < k && rc == AS_OK; i++)
            if ((rc = plan_from_json(json_array_get(o, i), path, &(*out)[i], err)) == AS_OK)
                (*n)++;
    }
    if (rc != AS_OK && o != NULL)
        as_err_json_pos(err, path, buf, len);
    json_decref(o);
    free(buf);
    if (rc != AS_OK) {
        for (i = 0; i < *n; i++)
            as_shard_plan_free((*out)[i]);
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* ---- framework text ---- */

/* NAME as a Python string literal. */
static void
py_str(const char *name, FILE *fp)
{
    const unsigned char *c;

    fputc('\'', fp);
    for (c = (const unsigned char *)name; *c; c++) {
        if (*c == '\\' || *c == '\'')
            fprintf(fp, "\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7f)
            fprintf(fp, "\\x%02x", *c);
        else
            fputc(*c, fp);
    }
    fputc('\'', fp);
}

static int
emit_wanted(const as_plan_tensor *t)
{
    return t->kind == AS_TK_PARAM || t->kind == AS_TK_INPUT || t->kind == AS_TK_STATE;
}

static const char *
emit_kind(as_tensor_kind k)
{
    return k == AS_TK_PARAM ? "parameter" : k == AS_TK_STATE ? "optimizer state" : "input";
}

static void
emit_header(const as_shard_plan *p, FILE *fp)
{
    fprintf(fp, "# autoshard plan: graph %s, mesh %s, hardware %s, cost model %s", p->graph,
            as_mesh_str(p->mesh), p->hw, p->cost_model);
    if (p->status != NULL && p->status[0] != '\0')
        fprintf(fp, ", %s, objective %.9g", p->status, p->objective);
    fputs("\n", fp);
}

/* Python tuple of the mesh's axis names, and of its sizes. */
static void
emit_axes(const as_shard_plan *p, int sizes, FILE *fp)
{
    int k, n = as_mesh_naxes(p->mesh);

    fputc('(', fp);
    for (k = 0; k < n; k++) {
        fputs(k ? ", " : "", fp);
        if (sizes)
            fprintf(fp, "%d", as_mesh_axis_size(p->mesh, k));
        else
            py_str(as_mesh_axis_name(p->mesh, k), fp);
    }
    fputs(n == 1 ? ",)" : ")", fp);
}

static void
emit_jax(const as_shard_plan *p, FILE *fp)
{
    size_t i;
    int d, k, axes[AS_MESH_MAX_AXES], na;

    emit_header(p, fp);
    fputs("# Shardings of every parameter, optimizer state and input (JAX).  Partial sums\n"
          "# cannot be written as a PartitionSpec: such an axis is left replicated.\n"
          "import numpy as np\n"
          "import jax\n"
          "from jax.sharding import Mesh, NamedSharding, PartitionSpec\n\n",
          fp);
    fprintf(fp, "MESH_SHAPE = ");
    emit_axes(p, 1, fp);
    fprintf(fp, "\nMESH_AXES = ");
    emit_axes(p, 0, fp);
    fprintf(fp, "\nmesh = Mesh(np.array(jax.devices()[:%d]).reshape(MESH_SHAPE), MESH_AXES)\n\n",
            as_mesh_ndevices(p->mesh));
    fputs("shardings = {\n", fp);
    for (i = 0; i < p->ntensors; i++) {
        const as_plan_tensor *t = &p->tensors[i];
        if (!emit_wanted(t))
            continue;
        fputs("    ", fp);
        py_str(t->name, fp);
        fputs(": NamedSharding(mesh, PartitionSpec(", fp);
        for (d = 0; d < t->spec.rank; d++) {
            fputs(d ? ", " : "", fp);
            na = as_spec_dim_axes(&t->spec, d, axes);
            if (na == 0)
                fputs("None", fp);
            else if (na == 1)
                py_str(as_mesh_axis_name(p->mesh, axes[0]), fp);
            else
                for (k = 0; k < na; k++) {
                    fputs(k ? ", " : "(", fp);
                    py_str(as_mesh_axis_name(p->mesh, axes[k]), fp);
                    fputs(k == na - 1 ? ")" : "", fp);
                }
        }
        fprintf(fp, ")),  # %s\n", emit_kind(t->kind));
    }
    fputs("}\n", fp);
}

static void
emit_dtensor(const as_shard_plan *p, FILE *fp)
{
    size_t i;
    int k;

    emit_header(p, fp);
    fputs("# Placements of every parameter, optimizer state and input (PyTorch DTensor), one\n"
          "# per mesh dimension.  Run under torchrun with one process per device.\n"
          "import torch\n"
          "from torch.distributed.device_mesh import init_device_mesh\n"
          "try:\n"
          "    from torch.distributed.tensor import Partial, Replicate, Shard, distribute_tensor\n"
          "except ImportError:  # torch < 2.4\n"
          "    from torch.distributed._tensor import Replicate, Shard, distribute_tensor\n"
          "    from torch.distributed._tensor.placement_types import _Partial as Partial\n\n",
          fp);
    fprintf(fp, "MESH_SHAPE = ");
    emit_axes(p, 1, fp);
    fprintf(fp, "\nMESH_AXES = ");
    emit_axes(p, 0, fp);
    fputs("\n\n\ndef make_mesh():\n"
          "    device = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n"
          "    return init_device_mesh(device, MESH_SHAPE, mesh_dim_names=MESH_AXES)\n\n\n"
          "placements = {\n",
          fp);
    for (i = 0; i < p->ntensors; i++) {
        const as_plan_tensor *t = &p->tensors[i];
        if (!emit_wanted(t))
            continue;
        fputs("    ", fp);
        py_str(t->name, fp);
        fputs(": [", fp);
        for (k = 0; k < as_mesh_naxes(p->mesh); k++) {
            fputs(k ? ", " : "", fp);
            if (t->spec.axis[k] >= 0)
                fprintf(fp, "Shard(%d)", t->spec.axis[k]);
            else if (t->spec.axis[k] == AS_SPEC_P)
                fprintf(fp, "Partial(\"%s\")",
                        as_partial_name((as_partial)t->spec.partial[k]));
            else
                fputs("Replicate()", fp);
        }
        fprintf(fp, "],  # %s\n", emit_kind(t->kind));
    }
    fputs("}\n\n\n"
          "def shard(mesh, name, tensor):\n"
          "    \"\"\"Distribute TENSOR (the full value of NAME) as the plan says.\"\"\"\n"
          "    return distribute_tensor(tensor, mesh, placements[name])\n",
          fp);
}

int
as_shard_plan_emit(const as_shard_plan *p, const char *format, FILE *fp, as_err *err)
{
    if (strcmp(format, "jax") == 0)
        emit_jax(p, fp);
    else if (strcmp(format, "dtensor") == 0)
        emit_dtensor(p, fp);
    else
        return as_errf(err, AS_EUSAGE, "unknown --emit format '%s' (known: jax, dtensor)",
                       format);
    return AS_OK;
}
