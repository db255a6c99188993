/* writer_asg.c -- canonical .asg text for a graph (grammar: docs/asg.md).
 *
 * Canonical means: the `graph` line; every declared tensor (input, param,
 * const, state) in id order with its batch dim and owner; the ops in
 * program order with every output's type and every attribute as bound (in
 * schema order), with `phase` lines where the backward/optimizer flags
 * change; then `output`, `update` and `grad` lines.  No `train` line: a
 * written training graph is already expanded.  Floats use the shortest of
 * %.15g, %.16g, %.17g that reads back to the same double, so parse -> write
 * -> parse -> write is byte-identical.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "registry.h"

/* Can NAME be written as a bare name token (and not read back as a number)? */
static int
writer_name_ok(const char *s)
{
    const char *c;

    if (s == NULL || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
        return 0;
    for (c = s + 1; *c; c++)
        if (!(*c == '_' || *c == '.' || *c == '-' || (*c >= '0' && *c <= '9') ||
              (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
            return 0;
    return strcmp(s, "inf") != 0 && strcmp(s, "nan") != 0;
}

static int
writer_check_name(const char *s, as_err *err)
{
    if (!writer_name_ok(s))
        return as_errf(err, AS_EPARSE, "cannot write '%s' as an .asg name", s != NULL ? s : "");
    return AS_OK;
}

static void
writer_type(FILE *fp, const as_shape *s)
{
    char buf[256];

    fputs(as_shape_str(s, buf, sizeof buf), fp);
}

/* A string attribute: bare when it is a valid name, else quoted with escapes. */
static void
writer_string(FILE *fp, const char *s)
{
    if (writer_name_ok(s)) {
        fputs(s, fp);
        return;
    }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', fp);
        if (*s == '\n')
            fputs("\\n", fp);
        else if (*s == '\t')
            fputs("\\t", fp);
        else
            fputc(*s, fp);
    }
    fputc('"', fp);
}

/* The shortest %g form of X that reads back exactly (at most %.17g). */
static void
writer_float(FILE *fp, double x)
{
    char buf[64];
    int prec;

    /* -0 as 0: "-0" reads back as the integer 0, which writes "0" (an ONNX Div by -inf
       gave a scale factor of -0; fuzz_onnx) */
    if (x == 0)
        x = 0;
    for (prec = 15; prec < 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    if (prec == 17)
        snprintf(buf, sizeof buf, "%.17g", x);
    fputs(buf, fp);
}

static void
writer_attr(FILE *fp, const as_attr *a)
{
    int k;

    fprintf(fp, " %s=", a->key);
    switch (a->kind) {
    case AS_ATTR_INT:
        fprintf(fp, "%" PRId64, a->i);
        break;
    case AS_ATTR_FLOAT:
        writer_float(fp, a->f);
        break;
    case AS_ATTR_STR:
        writer_string(fp, a->s);
        break;
    default:
        fputc('[', fp);
        for (k = 0; k < a->n; k++)
            fprintf(fp, k ? ",%" PRId64 : "%" PRId64, a->v[k]);
        fputc(']', fp);
    }
}

static int
writer_decls(const as_graph *g, FILE *fp, as_err *err)
{
    static const char *const kw[] = {
        [AS_TK_INPUT] = "input", [AS_TK_PARAM] = "param", [AS_TK_STATE] = "state",
        [AS_TK_CONST] = "const"};
    int32_t t;

    for (t = 0; t < as_graph_ntensors(g); t++) {
        const as_tensor *x = as_graph_tensor(g, t);
        if (x->kind == AS_TK_ACT)
            continue;
        AS_CHECK(writer_check_name(x->name, err));
        fprintf(fp, "%s %s : ", kw[x->kind], x->name);
        writer_type(fp, &x->shape);
        if (x->kind == AS_TK_INPUT && x->batch_dim >= 0)
            fprintf(fp, " batch=%d", x->batch_dim);
        if (x->kind == AS_TK_STATE && x->of >= 0)
            fprintf(fp, " of=%s", as_graph_tensor(g, x->of)->name);
        fputc('\n', fp);
    }
    return AS_OK;
}

/* The phase keyword for op flags F. */
static const char *
writer_phase(unsigned f)
{
    if (f & AS_OF_OPTIMIZER)
        return "optimizer";
    if (f & AS_OF_BACKWARD)
        return "backward";
    return "forward";
}

static int
writer_ops(const as_graph *g, FILE *fp, as_err *err)
{
    const char *phase = "forward";
    int32_t i;
    int k;

    for (i = 0; i < as_graph_nops(g); i++) {
        const as_op *op = as_graph_op(g, i);
        if (op->nout == 0)
            return as_errf(err, AS_EPARSE, "cannot write op %d ('%s'): it has no outputs",
                           (int)i, op->def->name);
        if (strcmp(writer_phase(op->flags), phase) != 0) {
            phase = writer_phase(op->flags);
            fprintf(fp, "phase %s\n", phase);
        }
        for (k = 0; k < op->nout; k++) {
            const as_tensor *t = as_graph_tensor(g, op->out[k]);
            AS_CHECK(writer_check_name(t->name, err));
            fprintf(fp, "%s%s : ", k ? ", " : "", t->name);
            writer_type(fp, &t->shape);
        }
        fprintf(fp, " = %s(", op->def->name);
        for (k = 0; k < op->nin; k++)
            fprintf(fp, "%s%s", k ? ", " : "", as_graph_tensor(g, op->in[k])->name);
        fputc(')', fp);
        for (k = 0; k < op->nattr; k++)
            writer_attr(fp, &op->attr[k]);
        fputc('\n', fp);
    }
    return AS_OK;
}

static void
writer_tail(const as_graph *g, FILE *fp)
{
    int32_t i, t;

    for (i = 0; i < as_graph_noutputs(g); i++)
        fprintf(fp, "%s%s", i ? ", " : "output ", as_graph_tensor(g, as_graph_output(g, i))->name);
    if (as_graph_noutputs(g) > 0)
        fputc('\n', fp);
    for (t = 0; t < as_graph_ntensors(g); t++) {
        const as_tensor *x = as_graph_tensor(g, t);
        if ((x->kind == AS_TK_PARAM || x->kind == AS_TK_STATE) && x->update >= 0)
            fprintf(fp, "update %s = %s\n", x->name, as_graph_tensor(g, x->update)->name);
    }
    for (t = 0; t < as_graph_ntensors(g); t++) {
        const as_tensor *x = as_graph_tensor(g, t);
        if ((x->flags & AS_TF_GRAD) && x->of >= 0)
            fprintf(fp, "grad %s of=%s\n", x->name, as_graph_tensor(g, x->of)->name);
    }
}

int
as_graph_write_asg(const as_graph *g, FILE *fp, as_err *err)
{
    AS_CHECK(writer_check_name(as_graph_name(g), err));
    fprintf(fp, "graph %s\n", as_graph_name(g));
    AS_CHECK(writer_decls(g, fp, err));
    AS_CHECK(writer_ops(g, fp, err));
    writer_tail(g, fp);
    if (ferror(fp))
        return as_errf(err, AS_EIO, "write error: %s", strerror(errno));
    return AS_OK;
}

int
as_graph_write_asg_buf(const as_graph *g, char **buf, size_t *len, as_err *err)
{
    char *p = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&p, &n);
    int rc;

    if (fp == NULL)
        return as_errf(err, AS_EIO, "open_memstream: %s", strerror(errno));
    rc = as_graph_write_asg(g, fp, err);
    if (fclose(fp) != 0 && rc == AS_OK)
        rc = as_errf(err, AS_EIO, "write error: %s", strerror(errno));
    if (rc != AS_OK) {
        free(p);
        return rc;
    }
    *buf = p;
    if (len != NULL)
        *len = n;
    return AS_OK;
}

int
as_graph_save(const as_graph *g, const char *path, as_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;

    AS_CHECK(as_graph_write_asg_buf(g, &buf, &len, err));
    rc = as_write_file_atomic(path, buf, len, err);
    free(buf);
    return rc;
}
