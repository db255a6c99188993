/* mesh.c -- parsing of mesh specs, row-major device layout, node placement.
 *
 * DESIGN: a mesh is a handful of small integers, so it is one flat struct
 * with fixed arrays (no arena).  Strides are computed once at creation.
 * Whether an axis stays inside a node is answered by walking the first
 * device of every group (the devices whose coordinate on the axis is 0) and
 * comparing the node of the first and last member: group members are
 * increasing, so if both ends sit in one node every member does.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh.h"

struct as_mesh {
    int naxes;                                   /**< 1 .. AS_MESH_MAX_AXES */
    int ndev;                                    /**< product of sizes */
    int size[AS_MESH_MAX_AXES];                  /**< devices along each axis */
    int stride[AS_MESH_MAX_AXES];                /**< row-major stride of each axis */
    char name[AS_MESH_MAX_AXES][AS_MESH_MAX_NAME]; /**< axis names */
    char str[AS_MESH_MAX_AXES * (AS_MESH_MAX_NAME + 16)]; /**< canonical "dp=2,tp=4" */
};

/* A size too large to be valid; parsing saturates here. */
#define MESH_BIG ((int64_t)1 << 40)

const char *
as_link_name(as_link l)
{
    return l == AS_LINK_INTRA ? "intra" : "inter";
}

/* Default name of axis K in a mesh of N axes: x, y, z, or a0..a3. */
static void
mesh_default_name(int k, int n, char *buf, size_t len)
{
    if (n <= 3)
        snprintf(buf, len, "%c", "xyz"[k]);
    else
        snprintf(buf, len, "a%d", k);
}

static int
mesh_valid_name(const char *s)
{
    size_t i;

    if (s[0] == '\0' || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (i = 1; s[i] != '\0'; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return i < AS_MESH_MAX_NAME;
}

int
as_mesh_new(int naxes, const int64_t *sizes, const char *const *names, as_mesh **out,
            as_err *err)
{
    as_mesh *m;
    int64_t ndev = 1;
    size_t off = 0;
    int k, j;

    if (naxes < 1)
        return as_errf(err, AS_EUSAGE, "a mesh needs at least one axis");
    if (naxes > AS_MESH_MAX_AXES)
        return as_errf(err, AS_EUSAGE, "%d axes (at most %d)", naxes, AS_MESH_MAX_AXES);
    for (k = 0; k < naxes; k++) {
        if (sizes[k] < 1)
            return as_errf(err, AS_EUSAGE, "axis %d has size %lld (must be >= 1)", k + 1,
                           (long long)sizes[k]);
        if (sizes[k] > AS_MESH_MAX_DEVICES)
            return as_errf(err, AS_EUSAGE, "axis %d has size %lld (at most %d devices)", k + 1,
                           (long long)sizes[k], AS_MESH_MAX_DEVICES);
        ndev *= sizes[k]; /* each factor <= 2^16, at most 4 factors: no overflow */
    }
    if (ndev > AS_MESH_MAX_DEVICES)
        return as_errf(err, AS_EUSAGE, "%lld devices (at most %d)", (long long)ndev,
                       AS_MESH_MAX_DEVICES);
    m = as_xcalloc(1, sizeof *m);
    m->naxes = naxes;
    m->ndev = (int)ndev;
    for (k = naxes - 1; k >= 0; k--) {
        m->size[k] = (int)sizes[k];
        m->stride[k] = k == naxes - 1 ? 1 : m->stride[k + 1] * m->size[k + 1];
        if (names != NULL && names[k] != NULL) {
            if (!mesh_valid_name(names[k])) {
                as_errf(err, AS_EUSAGE, "bad axis name '%s' (letters, digits and '_', at most %d)",
                        names[k], AS_MESH_MAX_NAME - 1);
                free(m);
                return AS_EUSAGE;
            }
            snprintf(m->name[k], sizeof m->name[k], "%s", names[k]);
        } else {
            mesh_default_name(k, naxes, m->name[k], sizeof m->name[k]);
        }
    }
    for (k = 0; k < naxes; k++)
        for (j = 0; j < k; j++)
            if (strcmp(m->name[j], m->name[k]) == 0) {
                as_errf(err, AS_EUSAGE, "duplicate axis name '%s'", m->name[k]);
                free(m);
                return AS_EUSAGE;
            }
    for (k = 0; k < naxes; k++)
        off += (size_t)snprintf(m->str + off, sizeof m->str - off, "%s%s=%d", k ? "," : "",
                                m->name[k], m->size[k]);
    *out = m;
    return AS_OK;
}

/* Parse an optionally signed decimal at S+*I; saturates at MESH_BIG.  0 if no digits. */
static int
mesh_number(const char *s, size_t *i, int64_t *val)
{
    int neg = 0;
    int64_t v = 0;
    size_t j = *i;

    if (s[j] == '-' || s[j] == '+')
        neg = s[j++] == '-';
    if (!isdigit((unsigned char)s[j]))
        return 0;
    while (isdigit((unsigned char)s[j])) {
        if (v < MESH_BIG)
            v = v * 10 + (s[j] - '0');
        j++;
    }
    *val = neg ? -v : v;
    *i = j;
    return 1;
}

/* Parse the spec into sizes/names; messages without the "mesh 'S': " prefix. */
static int
mesh_scan(const char *s, int64_t *sizes, char (*names)[AS_MESH_MAX_NAME], int *naxes, as_err *err)
{
    int named = strchr(s, '=') != NULL;
    char sep = named ? ',' : 'x';
    size_t i = 0, n0;
    int k = 0;

    if (s[0] == '\0')
        return as_errf(err, AS_EUSAGE, "empty mesh (expected e.g. 2x4 or dp=2,tp=4)");
    for (;;) {
        if (k == AS_MESH_MAX_AXES) {
            int n = k + 1;

            for (; s[i] != '\0'; i++)
                n += s[i] == sep && s[i + 1] != '\0';
            return as_errf(err, AS_EUSAGE, "%d axes (at most %d)", n, AS_MESH_MAX_AXES);
        }
        if (named) {
            n0 = i;
            while (isalnum((unsigned char)s[i]) || s[i] == '_')
                i++;
            if (i == n0 || isdigit((unsigned char)s[n0]))
                return as_errf(err, AS_EUSAGE, "expected an axis name at column %zu", n0 + 1);
            if (i - n0 >= AS_MESH_MAX_NAME)
                return as_errf(err, AS_EUSAGE, "axis name at column %zu is longer than %d",
                               n0 + 1, AS_MESH_MAX_NAME - 1);
            memcpy(names[k], s + n0, i - n0);
            names[k][i - n0] = '\0';
            if (s[i] != '=')
                return as_errf(err, AS_EUSAGE, "expected '=' after '%s' at column %zu", names[k],
                               i + 1);
            i++;
        }
        if (!mesh_number(s, &i, &sizes[k]))
            return as_errf(err, AS_EUSAGE, "expected a number at column %zu", i + 1);
        k++;
        if (s[i] == '\0')
            break;
        if (s[i] != sep)
            return as_errf(err, AS_EUSAGE, "unexpected '%c' at column %zu (expected '%c')", s[i],
                           i + 1, sep);
        i++;
    }
    *naxes = k;
    return AS_OK;
}

int
as_mesh_parse(const char *spec, as_mesh **out, as_err *err)
{
    int64_t sizes[AS_MESH_MAX_AXES];
    char names[AS_MESH_MAX_AXES][AS_MESH_MAX_NAME];
    const char *np[AS_MESH_MAX_AXES] = {NULL, NULL, NULL, NULL};
    int naxes = 0, k, rc;

    rc = mesh_scan(spec, sizes, names, &naxes, err);
    if (rc == AS_OK) {
        if (strchr(spec, '=') != NULL)
            for (k = 0; k < naxes; k++)
                np[k] = names[k];
        rc = as_mesh_new(naxes, sizes, np, out, err);
    }
    if (rc != AS_OK)
        as_err_prefix(err, "mesh '%s': ", spec);
    return rc;
}

void
as_mesh_free(as_mesh *m)
{
    free(m);
}

int
as_mesh_naxes(const as_mesh *m)
{
    return m->naxes;
}

int
as_mesh_ndevices(const as_mesh *m)
{
    return m->ndev;
}

int
as_mesh_axis_size(const as_mesh *m, int axis)
{
    return m->size[axis];
}

const char *
as_mesh_axis_name(const as_mesh *m, int axis)
{
    return m->name[axis];
}

int
as_mesh_axis_stride(const as_mesh *m, int axis)
{
    return m->stride[axis];
}

int
as_mesh_axis_find(const as_mesh *m, const char *name)
{
    int k;

    for (k = 0; k < m->naxes; k++)
        if (strcmp(m->name[k], name) == 0)
            return k;
    return -1;
}

const char *
as_mesh_str(const as_mesh *m)
{
    return m->str;
}

void
as_mesh_coords(const as_mesh *m, int dev, int *coords)
{
    int k;

    for (k = 0; k < m->naxes; k++)
        coords[k] = (dev / m->stride[k]) % m->size[k];
}

int
as_mesh_device(const as_mesh *m, const int *coords)
{
    int k, d = 0;

    for (k = 0; k < m->naxes; k++)
        d += coords[k] * m->stride[k];
    return d;
}

void
as_mesh_group(const as_mesh *m, int axis, int dev, int *group)
{
    int s = m->stride[axis];
    int d0 = dev - ((dev / s) % m->size[axis]) * s;
    int j;

    for (j = 0; j < m->size[axis]; j++)
        group[j] = d0 + j * s;
}

int
as_mesh_check_nodes(const as_mesh *m, int devices_per_node, as_err *err)
{
    if (devices_per_node < 1)
        return as_errf(err, AS_EUSAGE, "devices per node must be >= 1 (got %d)",
                       devices_per_node);
    if (m->ndev > devices_per_node && m->ndev % devices_per_node != 0)
        return as_errf(err, AS_EUSAGE,
                       "mesh '%s': %d devices span more than one node but are not a multiple of "
                       "%d devices per node",
                       m->str, m->ndev, devices_per_node);
    return AS_OK;
}

int
as_mesh_nnodes(const as_mesh *m, int devices_per_node)
{
    return (m->ndev + devices_per_node - 1) / devices_per_node;
}

as_link
as_mesh_axis_link(const as_mesh *m, int axis, int devices_per_node)
{
    int s = m->stride[axis], n = m->size[axis];
    int d;

    if (n == 1)
        return AS_LINK_INTRA;
    for (d = 0; d < m->ndev; d++) {
        if ((d / s) % n != 0)
            continue; /* not the first member of its group */
        if (d / devices_per_node != (d + (n - 1) * s) / devices_per_node)
            return AS_LINK_INTER;
    }
    return AS_LINK_INTRA;
}

/* ---- axis roles ---- */

static const char *const role_names[] = {"auto", "data", "tensor"};

const char *
as_axis_role_name(as_axis_role r)
{
    return (unsigned)r < sizeof role_names / sizeof role_names[0] ? role_names[r] : "?";
}

static int
role_lookup(const char *s, size_t n)
{
    int r;

    for (r = 0; r < (int)(sizeof role_names / sizeof role_names[0]); r++)
        if (strlen(role_names[r]) == n && strncmp(role_names[r], s, n) == 0)
            return r;
    return -1;
}

int
as_mesh_parse_roles(const as_mesh *m, const char *spec, uint8_t *role, as_err *err)
{
    uint8_t out[AS_MESH_MAX_AXES] = {0}, seen[AS_MESH_MAX_AXES] = {0};
    const char *p = spec;
    int pos = 0, named = -1, k;

    if (spec == NULL || *spec == '\0')
        return as_errf(err, AS_EUSAGE, "--role: empty role list (e.g. dp=data,tp=tensor)");
    for (;;) {
        const char *end = strchr(p, ','), *eq;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char axis[AS_MESH_MAX_NAME];
        int r;

        eq = memchr(p, '=', len);
        if (named >= 0 && named != (eq != NULL))
            return as_errf(err, AS_EUSAGE, "--role '%s': give every axis as NAME=ROLE, or one "
                           "role per axis in order, not both", spec);
        named = eq != NULL;
        if (eq != NULL) {
            size_t an = (size_t)(eq - p);
            if (an == 0 || an >= sizeof axis)
                return as_errf(err, AS_EUSAGE, "--role '%s': bad axis name '%.*s'", spec,
                               (int)an, p);
            memcpy(axis, p, an);
            axis[an] = '\0';
            if ((k = as_mesh_axis_find(m, axis)) < 0)
                return as_errf(err, AS_EUSAGE, "--role '%s': mesh %s has no axis '%s'", spec,
                               as_mesh_str(m), axis);
            r = role_lookup(eq + 1, len - an - 1);
            if (r < 0)
                return as_errf(err, AS_EUSAGE, "--role '%s': unknown role '%.*s' for axis '%s' "
                               "(data, tensor or auto)", spec, (int)(len - an - 1), eq + 1, axis);
        } else {
            if ((k = pos++) >= m->naxes)
                return as_errf(err, AS_EUSAGE, "--role '%s': more roles than the %d axes of "
                               "mesh %s", spec, m->naxes, as_mesh_str(m));
            if ((r = role_lookup(p, len)) < 0)
                return as_errf(err, AS_EUSAGE, "--role '%s': unknown role '%.*s' (data, tensor "
                               "or auto)", spec, (int)len, p);
        }
        if (seen[k]++)
            return as_errf(err, AS_EUSAGE, "--role '%s': axis '%s' given twice", spec,
                           m->name[k]);
        out[k] = (uint8_t)r;
        if (end == NULL)
            break;
        p = end + 1;
    }
    if (!named && pos != m->naxes)
        return as_errf(err, AS_EUSAGE, "--role '%s': %d roles for the %d axes of mesh %s", spec,
                       pos, m->naxes, as_mesh_str(m));
    memcpy(role, out, sizeof out);
    return AS_OK;
}

const char *
as_mesh_roles_str(const as_mesh *m, const uint8_t *role, char *buf, size_t n)
{
    size_t len = 0;
    int k;

    if (n > 0)
        buf[0] = '\0';
    for (k = 0; k < m->naxes && role != NULL; k++) {
        int w;
        if (role[k] == AS_ROLE_AUTO)
            continue;
        w = snprintf(buf + len, n > len ? n - len : 0, "%s%s=%s", len ? "," : "", m->name[k],
                     as_axis_role_name((as_axis_role)role[k]));
        if (w < 0 || (size_t)w >= (n > len ? n - len : 0))
            break;
        len += (size_t)w;
    }
    return buf;
}
