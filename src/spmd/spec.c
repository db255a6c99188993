/* spec.c -- sharding specs: construction, local shapes, text form.
 *
 * A spec is stored per mesh axis (which dim the axis splits), which makes
 * "one dim over several axes, in mesh-axis order" the only representable
 * multi-axis layout; the text form is per tensor dim, as JAX writes it.
 * See spec.h for the grammar.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "spmd/spec.h"

static const char *const partial_names[] = {"none", "sum", "max", "min", "mean"};

const char *
as_partial_name(as_partial p)
{
    return (unsigned)p < 5 ? partial_names[p] : "?";
}

void
as_spec_replicated(as_spec *s, int rank, int naxes)
{
    int k;

    memset(s, 0, sizeof *s);
    s->rank = (int8_t)rank;
    s->naxes = (int8_t)naxes;
    for (k = 0; k < AS_MESH_MAX_AXES; k++)
        s->axis[k] = AS_SPEC_R;
}

int
as_spec_equal(const as_spec *a, const as_spec *b)
{
    int k;

    if (a->rank != b->rank || a->naxes != b->naxes)
        return 0;
    for (k = 0; k < a->naxes; k++)
        if (a->axis[k] != b->axis[k] || a->partial[k] != b->partial[k])
            return 0;
    return 1;
}

int
as_spec_is_replicated(const as_spec *s)
{
    int k;

    for (k = 0; k < s->naxes; k++)
        if (s->axis[k] != AS_SPEC_R)
            return 0;
    return 1;
}

int
as_spec_has_partial(const as_spec *s)
{
    int k;

    for (k = 0; k < s->naxes; k++)
        if (s->axis[k] == AS_SPEC_P)
            return 1;
    return 0;
}

int64_t
as_spec_dim_parts(const as_spec *s, const as_mesh *m, int dim)
{
    int64_t p = 1;
    int k;

    for (k = 0; k < s->naxes; k++)
        if (s->axis[k] == dim)
            p *= as_mesh_axis_size(m, k);
    return p;
}

void
as_spec_parts(const as_spec *s, const as_mesh *m, int64_t *parts)
{
    int d;

    for (d = 0; d < s->rank; d++)
        parts[d] = as_spec_dim_parts(s, m, d);
}

int
as_spec_dim_axes(const as_spec *s, int dim, int *axes)
{
    int k, n = 0;

    for (k = 0; k < s->naxes; k++)
        if (s->axis[k] == dim)
            axes[n++] = k;
    return n;
}

int
as_spec_fits(const as_spec *s, const as_shape *shape, const as_mesh *m)
{
    int d;

    if (s->rank != shape->rank)
        return 0;
    for (d = 0; d < s->rank; d++)
        if (shape->dim[d] % as_spec_dim_parts(s, m, d) != 0)
            return 0;
    return 1;
}

int
as_spec_check(const as_spec *s, const as_shape *shape, const as_mesh *m, as_err *err)
{
    char buf[AS_SPEC_TEXT_MAX], sb[64];
    int d, k;

    if (s->naxes != as_mesh_naxes(m))
        return as_errf(err, AS_EUSAGE, "spec has %d mesh axes, mesh '%s' has %d", s->naxes,
                       as_mesh_str(m), as_mesh_naxes(m));
    for (k = 0; k < s->naxes; k++)
        if (s->axis[k] >= s->rank || s->axis[k] < AS_SPEC_P ||
            (s->axis[k] == AS_SPEC_P && (s->partial[k] == 0 || s->partial[k] > AS_PARTIAL_MEAN)))
            return as_errf(err, AS_EUSAGE, "spec: mesh axis %d has a bad entry %d", k,
                           s->axis[k]);
    as_spec_str(s, m, buf, sizeof buf);
    as_shape_str(shape, sb, sizeof sb);
    if (s->rank != shape->rank)
        return as_errf(err, AS_EUSAGE, "spec '%s' has rank %d, tensor %s has rank %d", buf,
                       s->rank, sb, shape->rank);
    for (d = 0; d < s->rank; d++) {
        int64_t p = as_spec_dim_parts(s, m, d);
        if (shape->dim[d] % p != 0)
            return as_errf(err, AS_EUSAGE,
                           "spec '%s' does not fit %s: dim %d (%lld) is not divisible by %lld",
                           buf, sb, d, (long long)shape->dim[d], (long long)p);
    }
    return AS_OK;
}

void
as_spec_local_shape(const as_spec *s, const as_shape *shape, const as_mesh *m, as_shape *local)
{
    int d;

    *local = *shape;
    for (d = 0; d < shape->rank && d < s->rank; d++)
        local->dim[d] = shape->dim[d] / as_spec_dim_parts(s, m, d);
}

double
as_spec_local_bytes(const as_spec *s, const as_shape *shape, const as_mesh *m)
{
    double b = as_dtype_size(shape->dtype);
    int d;

    for (d = 0; d < shape->rank; d++)
        b *= (double)(shape->dim[d] / (d < s->rank ? as_spec_dim_parts(s, m, d) : 1));
    return b;
}

/* ---- text ---- */

/* Append printf-style text at *POS of BUF (size N), truncating safely. */
static void
spec_put(char *buf, size_t n, size_t *pos, const char *s)
{
    size_t len = strlen(s);

    if (*pos + len >= n)
        len = *pos + 1 < n ? n - *pos - 1 : 0;
    memcpy(buf + *pos, s, len);
    *pos += len;
    buf[*pos] = '\0';
}

const char *
as_spec_str(const as_spec *s, const as_mesh *m, char *buf, size_t n)
{
    size_t pos = 0;
    int d, k, axes[AS_MESH_MAX_AXES], na, first = 1;

    if (n == 0)
        return buf;
    buf[0] = '\0';
    spec_put(buf, n, &pos, "[");
    for (d = 0; d < s->rank; d++) {
        if (d > 0)
            spec_put(buf, n, &pos, ",");
        na = as_spec_dim_axes(s, d, axes);
        if (na == 0)
            spec_put(buf, n, &pos, "None");
        if (na > 1)
            spec_put(buf, n, &pos, "(");
        for (k = 0; k < na; k++) {
            if (k > 0)
                spec_put(buf, n, &pos, ",");
            spec_put(buf, n, &pos, as_mesh_axis_name(m, axes[k]));
        }
        if (na > 1)
            spec_put(buf, n, &pos, ")");
    }
    spec_put(buf, n, &pos, "]");
    for (k = 0; k < s->naxes; k++) {
        if (s->axis[k] != AS_SPEC_P)
            continue;
        spec_put(buf, n, &pos, first ? " partial(" : ",");
        spec_put(buf, n, &pos, as_partial_name((as_partial)s->partial[k]));
        spec_put(buf, n, &pos, ":");
        spec_put(buf, n, &pos, as_mesh_axis_name(m, k));
        first = 0;
    }
    if (!first)
        spec_put(buf, n, &pos, ")");
    return buf;
}

typedef struct spec_lex {
    const char *text, *p;
    const as_mesh *m;
    as_err *err;
} spec_lex;

static void
lex_ws(spec_lex *l)
{
    while (*l->p == ' ' || *l->p == '\t')
        l->p++;
}

static int
lex_fail(spec_lex *l, const char *what)
{
    return as_errf(l->err, AS_EUSAGE, "spec '%s': col %d: %s", l->text,
                   (int)(l->p - l->text) + 1, what);
}

static int
lex_expect(spec_lex *l, char c)
{
    char what[32];

    lex_ws(l);
    if (*l->p != c) {
        snprintf(what, sizeof what, "expected '%c'", c);
        return lex_fail(l, what);
    }
    l->p++;
    return AS_OK;
}

/* An identifier into NAME (>= AS_MESH_MAX_NAME bytes). */
static int
lex_ident(spec_lex *l, char *name)
{
    size_t len = 0;

    lex_ws(l);
    while (isalnum((unsigned char)l->p[len]) || l->p[len] == '_')
        len++;
    if (len == 0)
        return lex_fail(l, "expected an axis name or None");
    if (len >= AS_MESH_MAX_NAME)
        return lex_fail(l, "name too long");
    memcpy(name, l->p, len);
    name[len] = '\0';
    l->p += len;
    return AS_OK;
}

/* An axis name: its index into *AXIS; checks it is unused in OUT. */
static int
lex_axis(spec_lex *l, const as_spec *out, int *axis)
{
    char name[AS_MESH_MAX_NAME], what[96];
    const char *at;

    lex_ws(l);
    at = l->p;
    AS_CHECK(lex_ident(l, name));
    *axis = as_mesh_axis_find(l->m, name);
    if (*axis < 0 || out->axis[*axis] != AS_SPEC_R) {
        l->p = at;
        snprintf(what, sizeof what, *axis < 0 ? "unknown mesh axis '%s'" : "axis '%s' used twice",
                 name);
        return lex_fail(l, what);
    }
    return AS_OK;
}

/* One dim entry: None, AXIS or (AXIS,...), for dim D. */
static int
lex_entry(spec_lex *l, as_spec *out, int d)
{
    const char *at;
    int axis, last = -1;

    lex_ws(l);
    if (*l->p == '(') {
        l->p++;
        for (;;) {
            at = l->p;
            AS_CHECK(lex_axis(l, out, &axis));
            if (axis < last) {
                l->p = at;
                return lex_fail(l, "axes of one dim must be listed in mesh order");
            }
            out->axis[axis] = (int8_t)d;
            last = axis;
            lex_ws(l);
            if (*l->p == ')') {
                l->p++;
                return AS_OK;
            }
            AS_CHECK(lex_expect(l, ','));
        }
    }
    at = l->p;
    if (strncmp(l->p, "None", 4) == 0 && !isalnum((unsigned char)l->p[4]) && l->p[4] != '_') {
        l->p += 4;
        return AS_OK;
    }
    l->p = at;
    AS_CHECK(lex_axis(l, out, &axis));
    out->axis[axis] = (int8_t)d;
    return AS_OK;
}

static int
lex_partial(spec_lex *l, as_spec *out)
{
    char kind[AS_MESH_MAX_NAME];
    const char *at;
    int axis, p;

    AS_CHECK(lex_expect(l, '('));
    for (;;) {
        lex_ws(l);
        at = l->p;
        AS_CHECK(lex_ident(l, kind));
        for (p = AS_PARTIAL_SUM; p <= AS_PARTIAL_MEAN; p++)
            if (strcmp(kind, partial_names[p]) == 0)
                break;
        if (p > AS_PARTIAL_MEAN) {
            l->p = at;
            return lex_fail(l, "expected sum, max, min or mean");
        }
        AS_CHECK(lex_expect(l, ':'));
        AS_CHECK(lex_axis(l, out, &axis));
        out->axis[axis] = AS_SPEC_P;
        out->partial[axis] = (uint8_t)p;
        lex_ws(l);
        if (*l->p == ')') {
            l->p++;
            return AS_OK;
        }
        AS_CHECK(lex_expect(l, ','));
    }
}

int
as_spec_parse(const char *text, const as_mesh *m, int rank, as_spec *out, as_err *err)
{
    spec_lex l = {text, text, m, err};
    as_spec s;
    int d = 0;

    as_spec_replicated(&s, 0, as_mesh_naxes(m));
    AS_CHECK(lex_expect(&l, '['));
    lex_ws(&l);
    if (*l.p == ']')
        l.p++;
    else
        for (;;) {
            if (d >= AS_MAX_RANK)
                return lex_fail(&l, "too many dims");
            AS_CHECK(lex_entry(&l, &s, d++));
            lex_ws(&l);
            if (*l.p == ']') {
                l.p++;
                break;
            }
            AS_CHECK(lex_expect(&l, ','));
        }
    s.rank = (int8_t)d;
    lex_ws(&l);
    if (strncmp(l.p, "partial", 7) == 0) {
        l.p += 7;
        AS_CHECK(lex_partial(&l, &s));
        lex_ws(&l);
    }
    if (*l.p != '\0')
        return lex_fail(&l, "unexpected text after the spec");
    if (rank >= 0 && rank != d)
        return as_errf(err, AS_EUSAGE, "spec '%s' has %d dims, the tensor has rank %d", text, d,
                       rank);
    *out = s;
    return AS_OK;
}

int
as_spec_zero_parts(const as_spec *s, const as_mesh *m, const uint8_t *role)
{
    int k, parts = 1;

    for (k = 0; role != NULL && k < s->naxes && k < as_mesh_naxes(m); k++)
        if (role[k] == AS_ROLE_DATA && s->axis[k] == AS_SPEC_R)
            parts *= as_mesh_axis_size(m, k);
    return parts;
}

int
as_spec_zero_shard_shape(as_shape *shape, int parts)
{
    int d;

    for (d = 0; parts > 1 && d < shape->rank; d++)
        if (shape->dim[d] >= parts && shape->dim[d] % parts == 0) {
            shape->dim[d] /= parts;
            return 1;
        }
    return 0;
}
