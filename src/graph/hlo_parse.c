/* hlo_parse.c -- lexer and parser for XLA HloModule text.
 *
 * The text XLA prints has one instruction per line, so the parser works line
 * by line: PCRE2 patterns (compiled once per parse, JIT when available)
 * recognise the line heads (`HloModule`, computation headers, `[ROOT] %name
 * =`), array shapes and opcodes; a small hand-written scanner handles the
 * rest, where nesting matters: tuple types, operand lists with optional
 * types and `/ *index=5* /` comments, and attribute values with nested
 * braces and quoted strings, which are kept as raw text for the importer.
 *
 * After the text: operand names are resolved per computation (defined before
 * use), computation references (to_apply, calls, body, ...) are resolved and
 * the call graph is checked for recursion.
 */
#include "config.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_internal.h"
#include "libhooks.h"

enum { RE_HEAD, RE_COMP, RE_SHAPE, RE_OPCODE, RE_COUNT };

static const char *const parse_patterns[RE_COUNT] = {
    /* instruction head: [ROOT] %name = */
    "[ \\t]*(ROOT[ \\t]+)?%?([A-Za-z_][A-Za-z0-9_.\\-]*)[ \\t]*=[ \\t]*",
    /* computation header: [ENTRY] %name [(params) -> type] { */
    "[ \\t]*(ENTRY[ \\t]+)?%?([A-Za-z_][A-Za-z0-9_.\\-]*)[ \\t]*(?:\\(.*\\)[ \\t]*->.*)?\\{[ \\t]*$",
    /* array shape with optional layout: f32[8,512]{1,0} */
    "([a-z][a-z0-9]*)\\[([0-9, ]*)\\](?:\\{[^{}]*\\})?",
    /* opcode and its open paren */
    "([a-z][a-z0-9\\-]*)\\(",
};

/* Parser state: the current line and position. */
typedef struct parser {
    const char *path;
    const char *text, *end;
    const char *ls, *le; /**< current line [ls, le) */
    const char *p;       /**< position in the line */
    const char *next;    /**< start of the next line */
    int line;
    hlo_module *m;
    pcre2_code *re[RE_COUNT];
    pcre2_match_data *md;
    as_err *err;
} parser;

/* Copy N bytes of P (may be NULL when N is 0) into the arena; never returns NULL. */
static void *
parse_dup(as_arena *a, const void *p, size_t n)
{
    void *q = as_arena_alloc(a, n + 1);

    if (n > 0)
        memcpy(q, p, n);
    return q;
}

static int
perr(parser *ps, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Error at position AT of the current line. */
static int
perr(parser *ps, const char *at, const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return as_errf(ps->err, AS_EPARSE, "%s:%d:%d: %s", ps->path, ps->line,
                   (int)(at - ps->ls) + 1, msg);
}

static int
parse_compile(parser *ps)
{
    int i, ec;
    PCRE2_SIZE off;

    for (i = 0; i < RE_COUNT; i++) {
        ps->re[i] = pcre2_compile((PCRE2_SPTR)parse_patterns[i], PCRE2_ZERO_TERMINATED,
                                  PCRE2_ANCHORED, &ec, &off, as_pcre2_ccontext());
        if (ps->re[i] == NULL) {
            PCRE2_UCHAR buf[200];
            pcre2_get_error_message(ec, buf, sizeof buf);
            return as_errf(ps->err, AS_EINTERNAL, "hlo pattern %d:%d: %s", i, (int)off,
                           (const char *)buf);
        }
        (void)pcre2_jit_compile(ps->re[i], PCRE2_JIT_COMPLETE); /* optional speed-up */
    }
    ps->md = pcre2_match_data_create(8, as_pcre2_gcontext());
    return AS_OK;
}

/* Match pattern R at the cursor; returns 1 and leaves groups in ps->md. */
static int
parse_match(parser *ps, int r)
{
    return pcre2_match(ps->re[r], (PCRE2_SPTR)ps->p, (PCRE2_SIZE)(ps->le - ps->p), 0, 0, ps->md,
                       NULL) >= 0;
}

/* Group G of the last match: start pointer (relative to ps->p) and length. */
static const char *
parse_group(parser *ps, int g, size_t *len)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(ps->md);

    if (ov[2 * g] == PCRE2_UNSET) {
        *len = 0;
        return NULL;
    }
    *len = ov[2 * g + 1] - ov[2 * g];
    return ps->p + ov[2 * g];
}

static size_t
parse_match_end(parser *ps)
{
    return pcre2_get_ovector_pointer(ps->md)[1];
}

/* Skip blanks and C comments inside the line. */
static int
parse_ws(parser *ps)
{
    for (;;) {
        while (ps->p < ps->le && (*ps->p == ' ' || *ps->p == '\t'))
            ps->p++;
        if (ps->le - ps->p >= 2 && ps->p[0] == '/' && ps->p[1] == '*') {
            const char *c = ps->p;
            ps->p += 2;
            while (ps->le - ps->p >= 2 && !(ps->p[0] == '*' && ps->p[1] == '/'))
                ps->p++;
            if (ps->le - ps->p < 2)
                return perr(ps, c, "unterminated comment");
            ps->p += 2;
            continue;
        }
        return AS_OK;
    }
}

static int
is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

/* An array shape at the cursor. */
static int
parse_shape(parser *ps, as_shape *s)
{
    const char *dt, *dims, *q;
    size_t dlen, nlen;

    if (!parse_match(ps, RE_SHAPE)) {
        const char *e = ps->p;
        while (e < ps->le && is_name_char(*e))
            e++;
        if (e < ps->le && *e == '[')
            return perr(ps, ps->p, "malformed shape '%.*s'", (int)(e - ps->p + 1), ps->p);
        return perr(ps, ps->p, "expected a type, got '%.*s'", (int)(e > ps->p ? e - ps->p : 1),
                    ps->p);
    }
    dt = parse_group(ps, 1, &dlen);
    dims = parse_group(ps, 2, &nlen);
    memset(s, 0, sizeof *s);
    if (!as_dtype_parse(dt, dlen, &s->dtype))
        return perr(ps, dt, "unknown type '%.*s'", (int)dlen, dt);
    for (q = dims; q < dims + nlen;) {
        int64_t v = 0;
        while (q < dims + nlen && (*q == ' ' || *q == ','))
            q++;
        if (q >= dims + nlen)
            break;
        if (s->rank >= AS_MAX_RANK)
            return perr(ps, dt, "rank exceeds %d", AS_MAX_RANK);
        while (q < dims + nlen && *q >= '0' && *q <= '9') {
            if (!as_mul_ok(v, 10, &v) || !as_add_ok(v, *q - '0', &v))
                return perr(ps, q, "dimension too large");
            q++;
        }
        s->dim[s->rank++] = v;
        if (q < dims + nlen && *q != ',' && *q != ' ')
            return perr(ps, q, "malformed dimension list");
    }
    if (as_shape_validate(s, 0, ps->err) != AS_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ps->err->msg);
        return perr(ps, dt, "%s", msg);
    }
    ps->p += parse_match_end(ps);
    return AS_OK;
}

/* A type: an array shape or a (possibly nested) tuple. */
static int
parse_type(parser *ps, hlo_type *t, int depth)
{
    AS_VEC(hlo_type) elts = {0};
    int rc = AS_OK;

    AS_CHECK(parse_ws(ps));
    if (ps->p >= ps->le || *ps->p != '(') {
        t->ntuple = -1;
        t->elts = NULL;
        return parse_shape(ps, &t->shape);
    }
    if (depth > 32)
        return perr(ps, ps->p, "tuple types nested too deeply");
    ps->p++;
    for (;;) {
        hlo_type e;
        AS_CHECK_GOTO(rc, parse_ws(ps), out);
        if (ps->p < ps->le && *ps->p == ')' && elts.n == 0)
            break;
        memset(&e, 0, sizeof e);
        AS_CHECK_GOTO(rc, parse_type(ps, &e, depth + 1), out);
        AS_VEC_PUSH(&elts, e);
        AS_CHECK_GOTO(rc, parse_ws(ps), out);
        if (ps->p < ps->le && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->le && *ps->p == ')')
            break;
        rc = perr(ps, ps->p, "expected ',' or ')' in tuple type");
        goto out;
    }
    ps->p++;
    memset(&t->shape, 0, sizeof t->shape);
    t->ntuple = (int)elts.n;
    t->elts = elts.n ? as_arena_memdup(ps->m->arena, elts.v, elts.n * sizeof *elts.v) : NULL;
out:
    free(elts.v);
    return rc;
}

/* Skip a balanced span starting at the cursor up to a ',' or CLOSE at depth 0. */
static int
parse_balanced(parser *ps, char close)
{
    char stack[64];
    const char *open[64];
    int depth = 0;

    while (ps->p < ps->le) {
        char c = *ps->p;
        if (depth == 0 && (c == ',' || c == close))
            return AS_OK;
        if (c == '"') {
            const char *q = ps->p++;
            while (ps->p < ps->le && *ps->p != '"')
                ps->p += (*ps->p == '\\' && ps->p + 1 < ps->le) ? 2 : 1;
            if (ps->p >= ps->le)
                return perr(ps, q, "unterminated string");
        } else if (c == '{' || c == '[' || c == '(') {
            if (depth >= 64)
                return perr(ps, ps->p, "brackets nested too deeply");
            open[depth] = ps->p;
            stack[depth++] = c == '{' ? '}' : c == '[' ? ']' : ')';
        } else if (c == '}' || c == ']' || c == ')') {
            if (depth == 0 || stack[depth - 1] != c)
                return perr(ps, ps->p, "unbalanced '%c'", c);
            depth--;
        }
        ps->p++;
    }
    if (depth > 0)
        return perr(ps, open[depth - 1], "unbalanced '%c'", *open[depth - 1]);
    return AS_OK;
}

/* `, key=value` pairs up to the end of the line. */
static int
parse_attrs(parser *ps, hlo_attr **out, int *nout)
{
    AS_VEC(hlo_attr) v = {0};
    int rc = AS_OK;

    for (;;) {
        hlo_attr a;
        const char *k;
        AS_CHECK_GOTO(rc, parse_ws(ps), out);
        if (ps->p >= ps->le)
            break;
        if (*ps->p != ',') {
            rc = perr(ps, ps->p, "expected ',' before attribute, got '%c'", *ps->p);
            goto out;
        }
        ps->p++;
        AS_CHECK_GOTO(rc, parse_ws(ps), out);
        k = ps->p;
        while (ps->p < ps->le && is_name_char(*ps->p))
            ps->p++;
        if (ps->p == k || ps->p >= ps->le || *ps->p != '=') {
            rc = perr(ps, k, "expected attribute 'key=value'");
            goto out;
        }
        a.key = as_arena_strndup(ps->m->arena, k, (size_t)(ps->p - k));
        a.line = ps->line;
        a.col = (int)(k - ps->ls) + 1;
        ps->p++;
        a.val = ps->p;
        AS_CHECK_GOTO(rc, parse_balanced(ps, '\0'), out);
        a.vlen = (size_t)(ps->p - a.val);
        while (a.vlen > 0 && (a.val[a.vlen - 1] == ' ' || a.val[a.vlen - 1] == '\t'))
            a.vlen--;
        AS_VEC_PUSH(&v, a);
    }
    *nout = (int)v.n;
    *out = v.n ? as_arena_memdup(ps->m->arena, v.v, v.n * sizeof *v.v) : NULL;
out:
    free(v.v);
    return rc;
}

/* The operand list after `opcode(`; the cursor ends after ')'. */
static int
parse_operands(parser *ps, hlo_instr *ins)
{
    AS_VEC(const char *) names = {0}, types = {0};
    AS_VEC(int) cols = {0};
    int rc = AS_OK;

    for (;;) {
        const char *q, *ty = NULL;
        AS_CHECK_GOTO(rc, parse_ws(ps), out);
        if (ps->p < ps->le && *ps->p == ')' && names.n == 0)
            break;
        q = ps->p;
        while (q < ps->le && is_name_char(*q))
            q++;
        if (ps->p < ps->le && (*ps->p == '(' || (q < ps->le && *q == '[' && q > ps->p))) {
            hlo_type t; /* checked for syntax; only its position is kept (parse_externs) */
            ty = ps->p;
            AS_CHECK_GOTO(rc, parse_type(ps, &t, 0), out);
            AS_CHECK_GOTO(rc, parse_ws(ps), out);
        }
        if (ps->p < ps->le && *ps->p == '%')
            ps->p++;
        q = ps->p;
        while (ps->p < ps->le && is_name_char(*ps->p))
            ps->p++;
        if (ps->p == q) {
            rc = perr(ps, q, ps->p < ps->le ? "expected an operand name" :
                                               "unexpected end of line in operand list");
            goto out;
        }
        AS_VEC_PUSH(&names, as_arena_strndup(ps->m->arena, q, (size_t)(ps->p - q)));
        AS_VEC_PUSH(&cols, (int)(q - ps->ls) + 1);
        AS_VEC_PUSH(&types, ty);
        AS_CHECK_GOTO(rc, parse_ws(ps), out);
        if (ps->p < ps->le && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->le && *ps->p == ')')
            break;
        rc = perr(ps, ps->p, "expected ',' or ')' in operand list");
        goto out;
    }
    ps->p++;
    ins->nops = (int)names.n;
    ins->opname = parse_dup(ps->m->arena, names.v, names.n * sizeof(char *));
    ins->opcol = parse_dup(ps->m->arena, cols.v, cols.n * sizeof(int));
    ins->optype = parse_dup(ps->m->arena, types.v, types.n * sizeof(char *));
    ins->opline = as_arena_alloc(ps->m->arena, names.n * sizeof(int) + 1);
    ins->opidx = as_arena_alloc(ps->m->arena, names.n * sizeof(int) + 1);
    for (size_t i = 0; i < names.n; i++)
        ins->opline[i] = ps->line;
out:
    free(names.v);
    free(types.v);
    free(cols.v);
    return rc;
}

/* One instruction line. */
static int
parse_instr(parser *ps, hlo_instr *ins, int *is_root)
{
    const char *name, *op;
    size_t len, olen;

    memset(ins, 0, sizeof *ins);
    if (!parse_match(ps, RE_HEAD)) {
        const char *q = ps->p;
        while (q < ps->le && (*q == ' ' || *q == '\t'))
            q++;
        return perr(ps, q, "expected an instruction '%%name = TYPE op(...)' or '}'");
    }
    *is_root = parse_group(ps, 1, &len) != NULL;
    name = parse_group(ps, 2, &len);
    ins->name = as_arena_strndup(ps->m->arena, name, len);
    ins->line = ps->line;
    ins->col = (int)(name - ps->ls) + 1;
    ps->p += parse_match_end(ps);
    AS_CHECK(parse_type(ps, &ins->type, 0));
    AS_CHECK(parse_ws(ps));
    if (!parse_match(ps, RE_OPCODE))
        return perr(ps, ps->p, "expected an opcode after the type of '%s'", ins->name);
    op = parse_group(ps, 1, &olen);
    ins->opcode = as_arena_strndup(ps->m->arena, op, olen);
    ps->p += parse_match_end(ps);
    if (strcmp(ins->opcode, "constant") == 0 || strcmp(ins->opcode, "parameter") == 0) {
        ins->args = ps->p;
        AS_CHECK(parse_balanced(ps, ')'));
        if (ps->p >= ps->le || *ps->p != ')')
            return perr(ps, ps->p, "expected ')' after the value of '%s'", ins->name);
        ins->argslen = (size_t)(ps->p - ins->args);
        ps->p++;
        ins->opname = NULL;
    } else {
        AS_CHECK(parse_operands(ps, ins));
    }
    return parse_attrs(ps, &ins->attr, &ins->nattr);
}

/* Advance to the next line (trailing blanks and '\r' trimmed); 0 at the end of the text. */
static int
parse_next_line(parser *ps)
{
    const char *nl;

    if (ps->next >= ps->end)
        return 0;
    ps->ls = ps->next;
    nl = memchr(ps->ls, '\n', (size_t)(ps->end - ps->ls));
    ps->le = nl != NULL ? nl : ps->end;
    ps->next = nl != NULL ? nl + 1 : ps->end;
    while (ps->le > ps->ls && (ps->le[-1] == '\r' || ps->le[-1] == ' ' || ps->le[-1] == '\t'))
        ps->le--;
    ps->p = ps->ls;
    ps->line++;
    return 1;
}

static int
line_blank(const parser *ps)
{
    const char *q = ps->ls;

    while (q < ps->le && (*q == ' ' || *q == '\t'))
        q++;
    return q == ps->le || (ps->le - q >= 2 && q[0] == '/' && q[1] == '/');
}

/* Parse again the operand type written at AT on line LINE (it parsed once already). */
static int
parse_type_at(parser *ps, const char *at, int line, hlo_type *t)
{
    parser saved = *ps;
    const char *nl;
    int rc;

    ps->ls = at;
    while (ps->ls > ps->text && ps->ls[-1] != '\n')
        ps->ls--;
    nl = memchr(at, '\n', (size_t)(ps->end - at));
    ps->le = nl != NULL ? nl : ps->end;
    ps->p = at;
    ps->line = line;
    memset(t, 0, sizeof *t);
    rc = parse_type(ps, t, 0);
    ps->ls = saved.ls;
    ps->le = saved.le;
    ps->p = saved.p;
    ps->line = saved.line;
    return rc;
}

static int
type_equal(const hlo_type *a, const hlo_type *b)
{
    int i;

    if (a->ntuple != b->ntuple)
        return 0;
    if (a->ntuple < 0)
        return as_shape_equal(&a->shape, &b->shape);
    for (i = 0; i < a->ntuple; i++)
        if (!type_equal(&a->elts[i], &b->elts[i]))
            return 0;
    return 1;
}

/*
 * Operands of C that name no instruction of C but have their type written
 * with them become AS_HLO_EXTERN instructions placed before all others (so
 * the importer makes them inputs); untyped ones stay errors in
 * parse_finish_comp.  A name written twice must have the same type.
 */
static int
parse_externs(parser *ps, hlo_comp *c)
{
    as_strmap defined, ext;
    AS_VEC(hlo_instr) v = {0};
    hlo_instr *all;
    int i, j, rc = AS_OK;

    as_strmap_init(&defined);
    as_strmap_init(&ext);
    for (i = 0; i < c->nins; i++)
        if (!as_strmap_get(&defined, c->ins[i].name, (size_t)-1, NULL))
            as_strmap_put(&defined, c->ins[i].name, i);
    for (i = 0; i < c->nins; i++) {
        const hlo_instr *in = &c->ins[i];
        for (j = 0; j < in->nops; j++) {
            hlo_type t;
            int64_t k;
            if (in->optype[j] == NULL ||
                as_strmap_get(&defined, in->opname[j], (size_t)-1, NULL))
                continue;
            AS_CHECK_GOTO(rc, parse_type_at(ps, in->optype[j], in->opline[j], &t), out);
            if (as_strmap_get(&ext, in->opname[j], (size_t)-1, &k)) {
                if (!type_equal(&t, &v.v[k].type)) {
                    rc = as_errf(ps->err, AS_EPARSE, "%s:%d:%d: undefined instruction '%s' is "
                                 "written with another type than at line %d", ps->path,
                                 in->opline[j], in->opcol[j], in->opname[j], v.v[k].line);
                    goto out;
                }
                continue;
            }
            {
                hlo_instr e;
                memset(&e, 0, sizeof e);
                e.name = in->opname[j];
                e.opcode = AS_HLO_EXTERN;
                e.type = t;
                e.line = in->opline[j];
                e.col = in->opcol[j];
                as_strmap_put(&ext, e.name, (int64_t)v.n);
                AS_VEC_PUSH(&v, e);
            }
            if (ps->m->nextern++ == 0) {
                ps->m->extern_name = in->opname[j];
                ps->m->extern_line = in->opline[j];
                ps->m->extern_col = in->opcol[j];
            }
        }
    }
    if (v.n > 0) {
        all = as_arena_alloc(ps->m->arena, (v.n + (size_t)c->nins) * sizeof *all);
        memcpy(all, v.v, v.n * sizeof *all);
        memcpy(all + v.n, c->ins, (size_t)c->nins * sizeof *all);
        c->ins = all;
        c->nins += (int)v.n;
        c->root += (int)v.n;
        c->nextern = (int)v.n;
    }
out:
    as_strmap_destroy(&defined);
    as_strmap_destroy(&ext);
    free(v.v);
    return rc;
}

/* Resolve the operand names and parameters of computation C. */
static int
parse_finish_comp(parser *ps, hlo_comp *c)
{
    as_strmap names;
    int i, j, rc = AS_OK, externs_done = 0;

    as_strmap_init(&names);
restart:
    c->nparams = 0;
    for (i = 0; i < c->nins; i++) {
        hlo_instr *in = &c->ins[i];
        int64_t prev;
        if (as_strmap_get(&names, in->name, (size_t)-1, &prev)) {
            rc = as_errf(ps->err, AS_EPARSE, "%s:%d:%d: redefinition of '%s' (first at line %d)",
                         ps->path, in->line, in->col, in->name, c->ins[prev].line);
            goto out;
        }
        for (j = 0; j < in->nops; j++) {
            int64_t k;
            if (!as_strmap_get(&names, in->opname[j], (size_t)-1, &k)) {
                if (in->optype[j] != NULL && !externs_done) { /* rare: a fragment of a dump */
                    externs_done = 1;
                    AS_CHECK_GOTO(rc, parse_externs(ps, c), out);
                    if (c->nextern > 0) {
                        as_strmap_destroy(&names);
                        as_strmap_init(&names);
                        goto restart;
                    }
                }
                rc = as_errf(ps->err, AS_EPARSE, "%s:%d:%d: undefined instruction '%s' in '%s'",
                             ps->path, in->opline[j], in->opcol[j], in->opname[j], c->name);
                goto out;
            }
            in->opidx[j] = (int)k;
        }
        as_strmap_put(&names, in->name, i);
        if (strcmp(in->opcode, "parameter") == 0) {
            char *end;
            long k = strtol(in->args, &end, 10);
            if (end == in->args || k < 0 || k > 1000000) {
                rc = as_errf(ps->err, AS_EPARSE, "%s:%d:%d: bad parameter number in '%s'",
                             ps->path, in->line, in->col, in->name);
                goto out;
            }
            if (k + 1 > c->nparams)
                c->nparams = (int)k + 1;
        }
    }
    c->param = as_arena_alloc(ps->m->arena, (size_t)c->nparams * sizeof(int) + 1);
    for (i = 0; i < c->nparams; i++)
        c->param[i] = -1;
    for (i = 0; i < c->nins; i++)
        if (strcmp(c->ins[i].opcode, "parameter") == 0) {
            int k = (int)strtol(c->ins[i].args, NULL, 10);
            if (c->param[k] >= 0) {
                rc = as_errf(ps->err, AS_EPARSE, "%s:%d:%d: parameter %d defined twice",
                             ps->path, c->ins[i].line, c->ins[i].col, k);
                goto out;
            }
            c->param[k] = i;
        }
    for (i = 0; i < c->nparams; i++)
        if (c->param[i] < 0) {
            rc = as_errf(ps->err, AS_EPARSE, "%s:%d:%d: computation '%s' has no parameter %d",
                         ps->path, c->line, c->col, c->name, i);
            goto out;
        }
out:
    as_strmap_destroy(&names);
    return rc;
}

/* The body of a computation, after its header line, up to '}'. */
static int
parse_comp_body(parser *ps, hlo_comp *c)
{
    AS_VEC(hlo_instr) ins = {0};
    int rc = AS_OK, root = -1, header_line = ps->line;

    while (parse_next_line(ps)) {
        hlo_instr in;
        int is_root = 0;
        if (line_blank(ps)) {
            continue;
        }
        while (ps->p < ps->le && (*ps->p == ' ' || *ps->p == '\t'))
            ps->p++;
        if (*ps->p == '}' && ps->p + 1 == ps->le)
            goto done;
        ps->p = ps->ls;
        AS_CHECK_GOTO(rc, parse_instr(ps, &in, &is_root), out);
        if (is_root) {
            if (root >= 0) {
                rc = perr(ps, ps->ls, "second ROOT in computation '%s'", c->name);
                goto out;
            }
            root = (int)ins.n;
        }
        AS_VEC_PUSH(&ins, in);
    }
    rc = as_errf(ps->err, AS_EPARSE, "%s:%d:%d: unexpected end of file: computation '%s' (line %d) "
                 "is not closed with '}'", ps->path, ps->line + (ps->line == 0), 1, c->name,
                 header_line);
    goto out;
done:
    if (ins.n == 0) {
        rc = perr(ps, ps->ls, "computation '%s' is empty", c->name);
        goto out;
    }
    c->nins = (int)ins.n;
    c->ins = as_arena_memdup(ps->m->arena, ins.v, ins.n * sizeof *ins.v);
    c->root = root >= 0 ? root : c->nins - 1;
    rc = parse_finish_comp(ps, c);
out:
    free(ins.v);
    return rc;
}

int64_t
as_hlo_i_int(const char *p, char **end)
{
    long long x;

    errno = 0;
    x = strtoll(p, end, 10);
    if (errno == ERANGE) {
        *end = (char *)p;
        return 0;
    }
    return (int64_t)x;
}

int
as_hlo_i_ints(const char *val, size_t len, int64_t *v, int max)
{
    const char *p = val, *end = val + len;
    int n = 0;

    while (p < end) {
        char *e;
        int64_t x;
        if (*p == '{' || *p == '}' || *p == ',' || *p == ' ' || *p == '[' || *p == ']') {
            p++;
            continue;
        }
        x = as_hlo_i_int(p, &e);
        if (e == p || e > end || n >= max)
            return -1;
        v[n++] = x;
        p = e;
    }
    return n;
}

/*
 * input_output_alias={ {0}: (1, {}, may-alias), {}: (0, {}) }: output tuple
 * index (-1 for {}) -> parameter number.  Nested output indices and
 * parameter sub-indices are skipped (they alias parts of tuples).
 */
static int
parse_alias(parser *ps, const char *val, size_t len)
{
    const char *p = val, *end = val + len;
    AS_VEC(int) outs = {0}, pars = {0};
    int rc = AS_OK;

    if (p < end && *p == '{')
        p++;
    while (p < end) {
        int64_t oi[8], pi[8];
        const char *ob, *oe, *pb, *pe, *q;
        int no, np;
        long k;
        char *e;
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        if (p >= end || *p == '}')
            break;
        if (*p != '{')
            goto bad;
        ob = p;
        oe = memchr(p, '}', (size_t)(end - p));
        if (oe == NULL)
            goto bad;
        no = as_hlo_i_ints(ob, (size_t)(oe - ob + 1), oi, 8);
        q = oe + 1;
        while (q < end && (*q == ' ' || *q == ':'))
            q++;
        if (q >= end || *q != '(')
            goto bad;
        k = (long)as_hlo_i_int(q + 1, &e);
        if (e == q + 1)
            goto bad;
        pb = memchr(e, '{', (size_t)(end - e));
        q = memchr(e, ')', (size_t)(end - e));
        if (q == NULL || pb == NULL)
            goto bad;
        pe = memchr(pb, '}', (size_t)(end - pb));
        if (pe == NULL || pe > q)
            goto bad;
        np = as_hlo_i_ints(pb, (size_t)(pe - pb + 1), pi, 8);
        if (no >= 0 && no <= 1 && np == 0) {
            AS_VEC_PUSH(&outs, no == 0 ? -1 : (int)oi[0]);
            AS_VEC_PUSH(&pars, (int)k);
        }
        p = q + 1;
    }
    ps->m->nalias = (int)outs.n;
    ps->m->alias_out = parse_dup(ps->m->arena, outs.v, outs.n * sizeof(int));
    ps->m->alias_param = parse_dup(ps->m->arena, pars.v, pars.n * sizeof(int));
    goto out;
bad:
    rc = perr(ps, ps->ls + (p - ps->ls > 0 && p < ps->le ? p - ps->ls : 0),
              "malformed input_output_alias");
out:
    free(outs.v);
    free(pars.v);
    return rc;
}

/* The first line is not `HloModule NAME`: say what is missing.  A fragment cut out of a
 * module (a computation, or bare instructions) lacks the header line, and bare instructions
 * also lack the computation around them. */
static int
parse_no_header(parser *ps)
{
    size_t len;
    const char *nm;

    if (parse_match(ps, RE_COMP)) {
        nm = parse_group(ps, 2, &len);
        return perr(ps, ps->p,
                    "missing 'HloModule NAME' line: the text starts with computation '%.*s'; "
                    "an HLO module's first line is 'HloModule NAME'",
                    (int)len, nm);
    }
    if (parse_match(ps, RE_HEAD)) {
        nm = parse_group(ps, 2, &len);
        return perr(ps, ps->p,
                    "missing 'HloModule NAME' line and an ENTRY computation: the text starts with "
                    "instruction '%.*s'; an HLO module is 'HloModule NAME' followed by "
                    "computations such as 'ENTRY %%main { ... }'",
                    (int)len, nm);
    }
    return perr(ps, ps->p, "expected 'HloModule NAME' (not an HLO module text?)");
}

/* The `HloModule name, attrs` line. */
static int
parse_module_line(parser *ps)
{
    const char *q;
    hlo_attr *attrs;
    int nattrs, i, have;


    while ((have = parse_next_line(ps)) && line_blank(ps))
        ;
    if (!have)
        return as_errf(ps->err, AS_EPARSE, "%s:1:1: empty file: expected 'HloModule'", ps->path);
    while (ps->p < ps->le && (*ps->p == ' ' || *ps->p == '\t'))
        ps->p++;
    if (ps->le - ps->p < 10 || memcmp(ps->p, "HloModule", 9) != 0 ||
        (ps->p[9] != ' ' && ps->p[9] != '\t'))
        return parse_no_header(ps);
    ps->p += 9;
    AS_CHECK(parse_ws(ps));
    q = ps->p;
    while (ps->p < ps->le && is_name_char(*ps->p))
        ps->p++;
    if (ps->p == q)
        return perr(ps, q, "expected a module name after 'HloModule'");
    ps->m->name = as_arena_strndup(ps->m->arena, q, (size_t)(ps->p - q));
    AS_CHECK(parse_attrs(ps, &attrs, &nattrs));
    for (i = 0; i < nattrs; i++)
        if (strcmp(attrs[i].key, "input_output_alias") == 0)
            AS_CHECK(parse_alias(ps, attrs[i].val, attrs[i].vlen));
    return AS_OK;
}

int
as_hlo_i_comp_ref(const hlo_module *m, const char *val, size_t len)
{
    int64_t k;

    while (len > 0 && (*val == '%' || *val == ' ')) {
        val++;
        len--;
    }
    while (len > 0 && val[len - 1] == ' ')
        len--;
    return as_strmap_get(&m->comp_names, val, len, &k) ? (int)k : -1;
}

const hlo_attr *
as_hlo_i_attr(const hlo_instr *ins, const char *key)
{
    int i;

    for (i = 0; i < ins->nattr; i++)
        if (strcmp(ins->attr[i].key, key) == 0)
            return &ins->attr[i];
    return NULL;
}

static int
is_comp_attr(const char *k)
{
    return strcmp(k, "to_apply") == 0 || strcmp(k, "calls") == 0 || strcmp(k, "body") == 0 ||
           strcmp(k, "condition") == 0 || strcmp(k, "true_computation") == 0 ||
           strcmp(k, "false_computation") == 0 || strcmp(k, "branch_computations") == 0;
}

/* Resolve the computation references of every instruction. */
static int
parse_resolve_calls(parser *ps)
{
    hlo_module *m = ps->m;
    int ci, i, j;

    for (ci = 0; ci < m->ncomps; ci++) {
        hlo_comp *c = &m->comps[ci];
        AS_VEC(int) calls = {0}, where = {0};
        for (i = 0; i < c->nins; i++)
            for (j = 0; j < c->ins[i].nattr; j++) {
                const hlo_attr *a = &c->ins[i].attr[j];
                const char *p = a->val, *end = a->val + a->vlen;
                if (!is_comp_attr(a->key))
                    continue;
                while (p < end) { /* one name, or {%a, %b} */
                    const char *s;
                    int k;
                    while (p < end && (*p == '{' || *p == '}' || *p == ',' || *p == ' '))
                        p++;
                    if (p >= end)
                        break;
                    s = p;
                    while (p < end && *p != ',' && *p != '}' && *p != ' ')
                        p++;
                    k = as_hlo_i_comp_ref(m, s, (size_t)(p - s));
                    if (k < 0) {
                        int col = a->col + (int)strlen(a->key) + 1 + (int)(s - a->val);
                        free(calls.v);
                        free(where.v);
                        return as_errf(ps->err, AS_EPARSE, "%s:%d:%d: undefined computation "
                                       "'%.*s'", ps->path, a->line, col, (int)(p - s), s);
                    }
                    AS_VEC_PUSH(&calls, k);
                    AS_VEC_PUSH(&where, i << 8 | (j & 0xff));
                }
            }
        c->ncalls = (int)calls.n;
        c->calls = parse_dup(m->arena, calls.v, calls.n * sizeof(int));
        c->call_attr = parse_dup(m->arena, where.v, where.n * sizeof(int));
        free(calls.v);
        free(where.v);
    }
    return AS_OK;
}

/* Depth-first search for a cycle through computation C (colour 1 = on the stack). */
static int
parse_cycle(parser *ps, int ci, char *colour, int *stack, int depth)
{
    const hlo_comp *c = &ps->m->comps[ci];
    int k;

    colour[ci] = 1;
    stack[depth] = ci;
    for (k = 0; k < c->ncalls; k++) {
        int callee = c->calls[k];
        if (colour[callee] == 1) {
            const hlo_instr *in = &c->ins[c->call_attr[k] >> 8];
            const hlo_attr *a = &in->attr[c->call_attr[k] & 0xff];
            char chain[300] = "";
            int d, start = depth;
            while (start > 0 && stack[start] != callee)
                start--;
            for (d = start; d <= depth; d++) {
                size_t n = strlen(chain);
                snprintf(chain + n, sizeof chain - n, "'%s' calls ", ps->m->comps[stack[d]].name);
            }
            return as_errf(ps->err, AS_EPARSE, "%s:%d:%d: recursion between computations: %s'%s'",
                           ps->path, a->line, a->col, chain, ps->m->comps[callee].name);
        }
        if (colour[callee] == 0)
            AS_CHECK(parse_cycle(ps, callee, colour, stack, depth + 1));
    }
    colour[ci] = 2;
    return AS_OK;
}

static int
parse_check_text(parser *ps)
{
    const unsigned char *q;
    int line = 1;
    const char *ls = ps->text;

    for (q = (const unsigned char *)ps->text; q < (const unsigned char *)ps->end; q++) {
        if (*q == '\n') {
            line++;
            ls = (const char *)q + 1;
        } else if ((*q < 0x20 && *q != '\t' && *q != '\r') || *q == 0x7f) {
            return as_errf(ps->err, AS_EPARSE, "%s:%d:%d: unexpected byte 0x%02x (binary file?)",
                           ps->path, line, (int)((const char *)q - ls) + 1, *q);
        }
    }
    return AS_OK;
}

static int
parse_module(parser *ps)
{
    hlo_module *m = ps->m;
    AS_VEC(hlo_comp) comps = {0};
    int rc = AS_OK, entry = -1, i;
    char *colour = NULL;
    int *stack = NULL;

    AS_CHECK(parse_check_text(ps));
    AS_CHECK(parse_module_line(ps));
    while (parse_next_line(ps)) {
        hlo_comp c;
        size_t len;
        const char *nm;
        if (line_blank(ps)) {
            continue;
        }
        if (!parse_match(ps, RE_COMP)) {
            const char *q = ps->p;
            while (q < ps->le && (*q == ' ' || *q == '\t'))
                q++;
            if (parse_match(ps, RE_HEAD)) {
                nm = parse_group(ps, 2, &len);
                rc = perr(ps, q,
                          "instruction '%.*s' outside a computation: missing a computation "
                          "header such as 'ENTRY %%main {' before it",
                          (int)len, nm);
            } else {
                rc = perr(ps, q, "expected a computation '%%name (params) -> type {'");
            }
            goto out;
        }
        memset(&c, 0, sizeof c);
        nm = parse_group(ps, 2, &len);
        c.name = as_arena_strndup(m->arena, nm, len);
        c.line = ps->line;
        c.col = (int)(nm - ps->ls) + 1;
        if (parse_group(ps, 1, &len) != NULL) {
            if (entry >= 0) {
                rc = perr(ps, ps->ls, "second ENTRY computation '%s'", c.name);
                goto out;
            }
            entry = (int)comps.n;
        }
        if (as_strmap_get(&m->comp_names, c.name, (size_t)-1, NULL)) {
            rc = perr(ps, nm, "redefinition of computation '%s'", c.name);
            goto out;
        }
        AS_CHECK_GOTO(rc, parse_comp_body(ps, &c), out);
        as_strmap_put(&m->comp_names, c.name, (int64_t)comps.n);
        AS_VEC_PUSH(&comps, c);
    }
    if (comps.n == 0) {
        rc = as_errf(ps->err, AS_EPARSE, "%s:%d:1: module '%s' has no computations", ps->path,
                     ps->line, m->name);
        goto out;
    }
    m->ncomps = (int)comps.n;
    m->comps = as_arena_memdup(m->arena, comps.v, comps.n * sizeof *comps.v);
    m->entry = entry >= 0 ? entry : m->ncomps - 1; /* as XLA: the last one by default */
    AS_CHECK_GOTO(rc, parse_resolve_calls(ps), out);
    colour = as_xcalloc((size_t)m->ncomps, 1);
    stack = as_xcalloc((size_t)m->ncomps + 1, sizeof *stack);
    for (i = 0; i < m->ncomps; i++)
        if (colour[i] == 0)
            AS_CHECK_GOTO(rc, parse_cycle(ps, i, colour, stack, 0), out);
out:
    free(stack);
    free(colour);
    free(comps.v);
    return rc;
}

int
as_hlo_i_parse(const char *path, const char *text, size_t len, hlo_module **out, as_err *err)
{
    parser ps;
    hlo_module *m;
    int rc, i;

    memset(&ps, 0, sizeof ps);
    ps.path = path;
    ps.text = text;
    ps.end = text + len;
    ps.le = ps.next = text;
    ps.err = err;
    m = as_xcalloc(1, sizeof *m);
    m->arena = as_arena_new();
    as_strmap_init(&m->comp_names);
    ps.m = m;
    AS_CHECK_GOTO(rc, parse_compile(&ps), out);
    rc = parse_module(&ps);
out:
    for (i = 0; i < RE_COUNT; i++)
        pcre2_code_free(ps.re[i]);
    pcre2_match_data_free(ps.md);
    if (rc != AS_OK) {
        as_hlo_i_free(m);
        return rc;
    }
    *out = m;
    return AS_OK;
}

void
as_hlo_i_free(hlo_module *m)
{
    if (m == NULL)
        return;
    as_strmap_destroy(&m->comp_names);
    as_arena_free(m->arena);
    free(m);
}
