/* registry.c -- collects the op family tables into one sorted index, binds
 * attributes to an op's schema, and wraps inference and cost functions.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

#define MAX_DEFS 512

static const as_op_def *reg_index[MAX_DEFS];
static int reg_n;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;

static int
reg_cmp(const void *a, const void *b)
{
    return strcmp((*(const as_op_def *const *)a)->name, (*(const as_op_def *const *)b)->name);
}

static void
reg_add(const as_op_def *defs, int n)
{
    int i;

    for (i = 0; i < n && reg_n < MAX_DEFS; i++)
        reg_index[reg_n++] = &defs[i];
}

static void
reg_init(void)
{
    reg_add(as_ops_core, as_ops_core_count);
    reg_add(as_ops_elementwise, as_ops_elementwise_count);
    reg_add(as_ops_shape, as_ops_shape_count);
    reg_add(as_ops_nn, as_ops_nn_count);
    reg_add(as_ops_conv, as_ops_conv_count);
    reg_add(as_ops_optim, as_ops_optim_count);
    reg_add(as_ops_hlo, as_ops_hlo_count);
    qsort(reg_index, (size_t)reg_n, sizeof reg_index[0], reg_cmp);
}

const as_op_def *
as_registry_find(const char *name, size_t len)
{
    int lo = 0, hi;

    pthread_once(&reg_once, reg_init);
    if (len == (size_t)-1)
        len = strlen(name);
    hi = reg_n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = strncmp(reg_index[mid]->name, name, len);
        if (c == 0 && reg_index[mid]->name[len] != '\0')
            c = 1;
        if (c == 0)
            return reg_index[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

int
as_registry_count(void)
{
    pthread_once(&reg_once, reg_init);
    return reg_n;
}

const as_op_def *
as_registry_get(int i)
{
    pthread_once(&reg_once, reg_init);
    return i >= 0 && i < reg_n ? reg_index[i] : NULL;
}

/* Attribute schemas. */

typedef struct schema_item {
    char key[48];
    char type;       /* i f s I */
    int has_default; /* 0 = required */
    char dflt[64];   /* default's text */
} schema_item;

#define MAX_SCHEMA 24

/* Parse DEF's attribute schema into ITEMS; returns the count or -1. */
static int
schema_parse(const char *s, schema_item *items, int max)
{
    int n = 0;

    if (s == NULL)
        return 0;
    while (*s) {
        const char *start, *colon;
        size_t klen;
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        if (n >= max)
            return -1;
        start = s;
        while (*s && *s != ' ')
            s++;
        colon = memchr(start, ':', (size_t)(s - start));
        if (colon == NULL || colon + 1 >= s)
            return -1;
        klen = (size_t)(colon - start);
        if (klen == 0 || klen >= sizeof items[n].key)
            return -1;
        memcpy(items[n].key, start, klen);
        items[n].key[klen] = '\0';
        items[n].type = colon[1];
        if (strchr("ifsI", items[n].type) == NULL)
            return -1;
        items[n].has_default = 0;
        items[n].dflt[0] = '\0';
        if (colon + 2 < s) {
            size_t dlen = (size_t)(s - (colon + 3));
            if (colon[2] != '=' || dlen >= sizeof items[n].dflt)
                return -1;
            memcpy(items[n].dflt, colon + 3, dlen);
            items[n].dflt[dlen] = '\0';
            items[n].has_default = 1;
        }
        n++;
    }
    return n;
}

/* Convert schema default text to an attribute. */
static void
schema_default(const schema_item *it, as_arena *arena, as_attr *a)
{
    memset(a, 0, sizeof *a);
    a->key = it->key;
    switch (it->type) {
    case 'i':
        a->kind = AS_ATTR_INT;
        a->i = strtoll(it->dflt, NULL, 10);
        a->f = (double)a->i;
        break;
    case 'f':
        a->kind = AS_ATTR_FLOAT;
        a->f = strtod(it->dflt, NULL);
        break;
    case 's':
        a->kind = AS_ATTR_STR;
        a->s = as_arena_strdup(arena, it->dflt);
        break;
    default: { /* I: "[]" or "[1,2]" */
        int64_t *v = as_arena_alloc(arena, sizeof(int64_t) * 16);
        const char *p = it->dflt;
        int k = 0;
        a->kind = AS_ATTR_INTS;
        while (*p && k < 16) {
            char *end;
            long long x;
            if (*p == '[' || *p == ',' || *p == ']') {
                p++;
                continue;
            }
            x = strtoll(p, &end, 10);
            if (end == p)
                break;
            v[k++] = x;
            p = end;
        }
        a->n = k;
        a->v = v;
    }
    }
}

static const char *
attr_kind_name(char t)
{
    switch (t) {
    case 'i':
        return "an integer";
    case 'f':
        return "a number";
    case 's':
        return "a name";
    default:
        return "a list of integers";
    }
}

int
as_registry_bind_attrs(const as_op_def *def, const as_attr *attr, int n, as_arena *arena,
                       as_attr **out, int *nout, as_err *err)
{
    schema_item items[MAX_SCHEMA];
    int nitems = schema_parse(def->attrs, items, MAX_SCHEMA), i, j;
    as_attr *res;

    if (nitems < 0)
        return as_errf(err, AS_EINTERNAL, "op '%s': bad attribute schema", def->name);
    for (i = 0; i < n; i++) {
        for (j = 0; j < nitems; j++)
            if (strcmp(items[j].key, attr[i].key) == 0)
                break;
        if (j == nitems)
            return as_errf(err, AS_EPARSE, "'%s' has no attribute '%s' (it takes %s%s)",
                           def->name, attr[i].key, nitems ? "" : "none",
                           nitems ? def->attrs : "");
        for (j = 0; j < i; j++)
            if (strcmp(attr[j].key, attr[i].key) == 0)
                return as_errf(err, AS_EPARSE, "'%s': attribute '%s' given twice", def->name,
                               attr[i].key);
    }
    res = as_arena_calloc(arena, (size_t)(nitems ? nitems : 1), sizeof *res);
    for (j = 0; j < nitems; j++) {
        const as_attr *given = as_attr_find(attr, n, items[j].key);
        as_attr *a = &res[j];
        if (given == NULL) {
            if (!items[j].has_default)
                return as_errf(err, AS_EPARSE, "'%s' needs attribute '%s' (%s)", def->name,
                               items[j].key, attr_kind_name(items[j].type));
            schema_default(&items[j], arena, a);
            a->key = as_arena_strdup(arena, items[j].key);
            continue;
        }
        *a = *given;
        a->key = as_arena_strdup(arena, items[j].key);
        switch (items[j].type) {
        case 'i':
            if (given->kind != AS_ATTR_INT)
                return as_errf(err, AS_EPARSE, "'%s': attribute '%s' must be %s", def->name,
                               items[j].key, attr_kind_name('i'));
            a->f = (double)a->i;
            break;
        case 'f':
            if (given->kind == AS_ATTR_INT) {
                a->kind = AS_ATTR_FLOAT;
                a->f = (double)given->i;
            } else if (given->kind != AS_ATTR_FLOAT) {
                return as_errf(err, AS_EPARSE, "'%s': attribute '%s' must be %s", def->name,
                               items[j].key, attr_kind_name('f'));
            }
            break;
        case 's':
            if (given->kind != AS_ATTR_STR)
                return as_errf(err, AS_EPARSE, "'%s': attribute '%s' must be %s", def->name,
                               items[j].key, attr_kind_name('s'));
            a->s = as_arena_strdup(arena, given->s);
            break;
        default:
            if (given->kind == AS_ATTR_INT) { /* a single int is a one-element list */
                int64_t *v = as_arena_alloc(arena, sizeof *v);
                v[0] = given->i;
                a->kind = AS_ATTR_INTS;
                a->n = 1;
                a->v = v;
            } else if (given->kind != AS_ATTR_INTS) {
                return as_errf(err, AS_EPARSE, "'%s': attribute '%s' must be %s", def->name,
                               items[j].key, attr_kind_name('I'));
            } else if (given->n < 0) {
                return as_errf(err, AS_EPARSE, "'%s': attribute '%s' has a negative length",
                               def->name, items[j].key);
            } else {
                a->v = as_arena_memdup(arena, given->v, (size_t)given->n * sizeof(int64_t));
            }
        }
    }
    *out = res;
    *nout = nitems;
    return AS_OK;
}

int
as_registry_selfcheck(as_err *err)
{
    schema_item items[MAX_SCHEMA];
    int i;

    pthread_once(&reg_once, reg_init);
    if (reg_n >= MAX_DEFS)
        return as_errf(err, AS_EINTERNAL, "registry: more than %d op types", MAX_DEFS - 1);
    for (i = 0; i < reg_n; i++) {
        const as_op_def *d = reg_index[i];
        if (i > 0 && strcmp(reg_index[i - 1]->name, d->name) == 0)
            return as_errf(err, AS_EINTERNAL, "registry: op '%s' defined twice", d->name);
        if (schema_parse(d->attrs, items, MAX_SCHEMA) < 0)
            return as_errf(err, AS_EINTERNAL, "registry: op '%s': bad attribute schema '%s'",
                           d->name, d->attrs);
        if (d->infer == NULL)
            return as_errf(err, AS_EINTERNAL, "registry: op '%s' has no shape function", d->name);
        if (d->kernel == NULL && !(d->flags & AS_OPF_OPAQUE))
            return as_errf(err, AS_EINTERNAL, "registry: op '%s' has no kernel", d->name);
        if (d->min_in < 0 || (!(d->flags & AS_OPF_VARIADIC) && d->max_in < d->min_in))
            return as_errf(err, AS_EINTERNAL, "registry: op '%s': bad arity", d->name);
    }
    return AS_OK;
}

/* Inference and costs. */

int
as_op_infer(const as_op_def *def, const as_shape *in, int nin, const as_attr *attr, int nattr,
            as_shape *out, int *nout, as_err *err)
{
    as_opinfo info;
    int rc;

    info.def = def;
    info.nin = nin;
    info.in = in;
    info.nout = 0;
    info.out = NULL;
    info.nattr = nattr;
    info.attr = attr;
    *nout = 0;
    rc = def->infer(&info, out, nout, err);
    if (rc == AS_OK && (*nout < 0 || *nout > AS_MAX_OUTS))
        return as_errf(err, AS_EINTERNAL, "op '%s': shape function gave %d outputs", def->name,
                       *nout);
    return rc;
}

double
as_op_flops(const as_opinfo *info)
{
    return info->def->flops != NULL ? info->def->flops(info) : 0.0;
}

double
as_op_bytes(const as_opinfo *info)
{
    return info->def->bytes != NULL ? info->def->bytes(info) : as_graph_i_bytes_default(info);
}

void
as_opview_init(as_opview *v, const as_graph *g, const as_op *op)
{
    int k;

    v->in = op->nin <= 16 ? v->inbuf : as_xmalloc((size_t)op->nin * sizeof *v->in);
    v->out = op->nout <= 16 ? v->outbuf : as_xmalloc((size_t)op->nout * sizeof *v->out);
    as_graph_op_in_shapes(g, op, v->in);
    for (k = 0; k < op->nout; k++)
        v->out[k] = as_graph_tensor(g, op->out[k])->shape;
    v->info.def = op->def;
    v->info.nin = op->nin;
    v->info.in = v->in;
    v->info.nout = op->nout;
    v->info.out = v->out;
    v->info.nattr = op->nattr;
    v->info.attr = op->attr;
}

void
as_opview_free(as_opview *v)
{
    if (v->in != v->inbuf)
        free(v->in);
    if (v->out != v->outbuf)
        free(v->out);
    v->in = v->inbuf;
    v->out = v->outbuf;
}
