/* reader_asg.c -- the native .asg text format reader (grammar: docs/asg.md).
 *
 * DESIGN: reading runs in five passes so that every error can name a file
 * position and forward references get precise messages.
 *  1. scan the raw bytes (binary data, over-long lines);
 *  2. tokenize each line with one PCRE2 pattern (compiled once per process)
 *     and parse it into a statement record; nothing is built yet;
 *  3. resolve every name over the whole file (redefinitions, unknown names);
 *  4. build an igraph of def -> use dependencies between op statements and
 *     check it is a DAG (a cycle is reported with its ops' names), then check
 *     that every use follows its definition in file order;
 *  5. build the graph in file order with as_graph_add_op (arity, attributes,
 *     shape inference), check written output types, and expand `train` with
 *     as_autodiff.
 * Records and their strings live in a parse-time arena freed at the end.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "autodiff.h"
#include "check.h"
#include "io.h"
#include "libhooks.h"

#define ASG_MAX_LINE ((size_t)1 << 20) /* longest accepted line: 1 MiB */
#define ASG_MAX_ARGS 4096              /* most inputs of one op */

/* One token regex; the matching group says the kind (groups are exclusive). */
static const char asg_token_re[] =
    "([ \\t\\r]+)"                                                                 /* 1 blank */
    "|(#.*)"                                                                       /* 2 comment */
    "|([-+]?(?:(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?"            /* 3 number */
    "|(?:inf|nan)(?![A-Za-z0-9_.\\-])))"
    "|([A-Za-z_][A-Za-z0-9_.\\-]*)"                                                /* 4 name */
    "|(\"(?:[^\"\\\\]|\\\\.)*\")"                                                  /* 5 string */
    "|([\\[\\](),:=])";                                                            /* 6 punct */

enum { TOK_BLANK = 1, TOK_COMMENT, TOK_NUM, TOK_NAME, TOK_STR, TOK_PUNCT, TOK_END };

typedef struct asg_tok {
    int kind;      /**< TOK_* */
    const char *p; /**< text (not NUL-terminated) */
    size_t len;
    int col; /**< 1-based column */
} asg_tok;

typedef struct asg_use {
    const char *name;
    int col;
    int32_t def; /**< statement defining it (after resolution) */
} asg_use;

typedef AS_VEC(asg_use) asg_uses;

typedef struct asg_out {
    const char *name;
    int col;
    int typed;     /**< a `: TYPE` was written */
    int type_col;
    as_shape type;
} asg_out;

enum { ST_GRAPH, ST_DECL, ST_OP, ST_OUTPUT, ST_UPDATE, ST_TRAIN, ST_GRAD, ST_PHASE, ST_PRECISION };

typedef struct asg_stmt {
    int kind; /**< ST_* */
    int line;
    const char *name; /**< ST_GRAPH, ST_DECL: the name */
    int name_col;
    as_tensor_kind tk; /**< ST_DECL */
    as_shape shape;
    int shape_col;
    int batch;       /**< ST_DECL input: batch dim or -1 */
    int has_of;      /**< ST_DECL state: uses[0] is its parameter */
    asg_out *outs;   /**< ST_OP */
    int nout;
    const char *optype;
    int optype_col;
    asg_use *uses; /**< op args; output names; update lhs, rhs; grad name, of; state of */
    int nuse;
    as_attr *attrs; /**< ST_OP */
    int *attr_cols;
    int nattr;
    as_train_opts train; /**< ST_TRAIN */
    unsigned phase;      /**< ST_PHASE: AS_OF_* flags for the ops that follow */
    as_precision prec;   /**< ST_PRECISION */
} asg_stmt;

typedef struct asg_parser {
    const char *path; /**< for messages */
    const char *src;  /**< the path as given ("-" = stdin), for the default name */
    as_arena *ar;     /**< records and strings */
    AS_VEC(asg_stmt) st;
    AS_VEC(asg_tok) toks; /**< tokens of the current line */
    size_t ti;            /**< cursor in toks */
    int line;             /**< current line (pass 2) */
    int eol_col;          /**< column just past the current line */
    pcre2_match_data *md;
    as_strmap defs; /**< name -> index of the defining statement */
    as_err *err;
} asg_parser;

static pcre2_code *asg_re;
static char asg_re_error[160];
static pthread_once_t asg_re_once = PTHREAD_ONCE_INIT;

static void
asg_compile(void)
{
    PCRE2_SIZE off;
    int code;

    asg_re = pcre2_compile((PCRE2_SPTR)asg_token_re, PCRE2_ZERO_TERMINATED, 0, &code, &off,
                           as_pcre2_ccontext());
    if (asg_re == NULL) {
        PCRE2_UCHAR msg[120];
        pcre2_get_error_message(code, msg, sizeof msg);
        snprintf(asg_re_error, sizeof asg_re_error, "token pattern, offset %zu: %s", (size_t)off,
                 (const char *)msg);
    }
}

/* Errors. */

/* Set an AS_EPARSE error "PATH:LINE:COL: message". */
static int __attribute__((format(printf, 4, 5)))
asg_error(asg_parser *p, int line, int col, const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return as_errf(p->err, AS_EPARSE, "%s:%d:%d: %s", p->path, line, col, msg);
}

/* Prefix a message from the builder with PATH:LINE:COL (keeping its status). */
static int
asg_prefix(asg_parser *p, int rc, int line, int col)
{
    as_err_prefix(p->err, "%s:%d:%d: ", p->path, line, col);
    return rc;
}

/* Describe token T for messages: "end of line" or "'text'". */
static const char *
asg_tok_desc(const asg_tok *t, char *buf, size_t n)
{
    if (t->kind == TOK_END)
        return "end of line";
    snprintf(buf, n, "'%.*s%s'", (int)(t->len > 40 ? 40 : t->len), t->p, t->len > 40 ? "..." : "");
    return buf;
}

/* Pass 1: raw bytes. */

/* Reject NUL and other control bytes, and lines longer than ASG_MAX_LINE. */
static int
asg_scan(asg_parser *p, const char *text, size_t len)
{
    size_t i, col = 0;
    int line = 1;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') {
            line++;
            col = 0;
            continue;
        }
        if (++col > ASG_MAX_LINE)
            return asg_error(p, line, 1, "line is longer than 1 MiB");
        if (c == 0 || c == 0x7f || (c < 0x20 && c != '\t' && c != '\r'))
            return asg_error(p, line, (int)col, "binary data");
    }
    return AS_OK;
}

/* Pass 2: tokens and statements. */

/* Split line LP[0..LEN) into p->toks. */
static int
asg_tokenize(asg_parser *p, const char *lp, size_t len)
{
    size_t off = 0;

    p->toks.n = 0;
    p->ti = 0;
    p->eol_col = (int)len + 1;
    while (off < len) {
        PCRE2_SIZE *ov;
        asg_tok t;
        int rc = pcre2_match(asg_re, (PCRE2_SPTR)lp, len, off, PCRE2_ANCHORED, p->md, NULL);
        if (rc < 0) {
            unsigned char c = (unsigned char)lp[off];
            if (c == '"')
                return asg_error(p, p->line, (int)off + 1, "unterminated string");
            if (c >= 0x80)
                return asg_error(p, p->line, (int)off + 1, "unexpected byte 0x%02x", c);
            return asg_error(p, p->line, (int)off + 1, "unexpected character '%c'", c);
        }
        ov = pcre2_get_ovector_pointer(p->md);
        t.kind = rc - 1;
        if (t.kind == TOK_COMMENT)
            break;
        t.p = lp + ov[0];
        t.len = ov[1] - ov[0];
        t.col = (int)ov[0] + 1;
        off = ov[1];
        if (t.kind != TOK_BLANK)
            AS_VEC_PUSH(&p->toks, t);
    }
    return AS_OK;
}

static asg_tok
asg_peek_at(const asg_parser *p, size_t k)
{
    asg_tok end = {TOK_END, "", 0, p->eol_col};

    return p->ti + k < p->toks.n ? p->toks.v[p->ti + k] : end;
}

static asg_tok
asg_peek(const asg_parser *p)
{
    return asg_peek_at(p, 0);
}

static int
asg_is_punct(const asg_tok *t, char c)
{
    return t->kind == TOK_PUNCT && t->p[0] == c;
}

static int
asg_is_word(const asg_tok *t, const char *w)
{
    return t->kind == TOK_NAME && t->len == strlen(w) && memcmp(t->p, w, t->len) == 0;
}

/* Consume punctuation C or fail with "expected 'C' CONTEXT". */
static int
asg_expect(asg_parser *p, char c, const char *context)
{
    asg_tok t = asg_peek(p);
    char buf[64];

    if (!asg_is_punct(&t, c))
        return asg_error(p, p->line, t.col, "expected '%c' %s, got %s", c, context,
                         asg_tok_desc(&t, buf, sizeof buf));
    p->ti++;
    return AS_OK;
}

/* Consume a name (WHAT describes it) into *NAME (arena) and *COL. */
static int
asg_name(asg_parser *p, const char *what, const char **name, int *col)
{
    asg_tok t = asg_peek(p);
    char buf[64];

    if (t.kind != TOK_NAME)
        return asg_error(p, p->line, t.col, "expected %s, got %s", what,
                         asg_tok_desc(&t, buf, sizeof buf));
    *name = as_arena_strndup(p->ar, t.p, t.len);
    if (col != NULL)
        *col = t.col;
    p->ti++;
    return AS_OK;
}

/* Is T an integer literal (no fraction, exponent, inf or nan)? */
static int
asg_tok_is_int(const asg_tok *t)
{
    size_t i;

    if (t->kind != TOK_NUM)
        return 0;
    for (i = 0; i < t->len; i++)
        if (strchr(".eEin", t->p[i]) != NULL)
            return 0;
    return 1;
}

/* Copy N elements of SIZE bytes from V into the arena (V may be NULL when N is 0). */
static void *
asg_dup(asg_parser *p, const void *v, size_t n, size_t size)
{
    void *d = as_arena_calloc(p->ar, n > 0 ? n : 1, size);

    if (n > 0)
        memcpy(d, v, n * size);
    return d;
}

/* Consume an integer literal into *V. */
static int
asg_int(asg_parser *p, const char *what, int64_t *v)
{
    asg_tok t = asg_peek(p);
    char buf[64], num[64];
    long long x;

    if (!asg_tok_is_int(&t))
        return asg_error(p, p->line, t.col, "expected %s, got %s", what,
                         asg_tok_desc(&t, buf, sizeof buf));
    if (t.len >= sizeof num)
        return asg_error(p, p->line, t.col, "integer out of range");
    memcpy(num, t.p, t.len);
    num[t.len] = '\0';
    errno = 0;
    x = strtoll(num, NULL, 10);
    if (errno == ERANGE)
        return asg_error(p, p->line, t.col, "integer %s out of range", num);
    *v = (int64_t)x;
    p->ti++;
    return AS_OK;
}

/* Consume a number (int or float) into *V. */
static int
asg_number(asg_parser *p, const char *what, double *v)
{
    asg_tok t = asg_peek(p);
    char buf[64], num[64];

    if (t.kind != TOK_NUM || t.len >= sizeof num)
        return asg_error(p, p->line, t.col, "expected %s, got %s", what,
                         asg_tok_desc(&t, buf, sizeof buf));
    memcpy(num, t.p, t.len);
    num[t.len] = '\0';
    *v = strtod(num, NULL);
    p->ti++;
    return AS_OK;
}

/* TYPE: DTYPE '[' [INT {',' INT}] ']'; dims >= 0 whose byte size fits in 64 bits. */
static int
asg_type(asg_parser *p, as_shape *s, int *col)
{
    asg_tok t = asg_peek(p);
    as_err sub;
    char buf[64];

    memset(s, 0, sizeof *s);
    *col = t.col;
    if (t.kind != TOK_NAME)
        return asg_error(p, p->line, t.col, "expected a type such as f32[8,16], got %s",
                         asg_tok_desc(&t, buf, sizeof buf));
    if (!as_dtype_parse(t.p, t.len, &s->dtype))
        return asg_error(p, p->line, t.col, "unknown dtype %s", asg_tok_desc(&t, buf, sizeof buf));
    p->ti++;
    AS_CHECK(asg_expect(p, '[', "after the dtype"));
    t = asg_peek(p);
    if (asg_is_punct(&t, ']')) {
        p->ti++;
        return AS_OK;
    }
    for (;;) {
        int64_t d;
        t = asg_peek(p);
        AS_CHECK(asg_int(p, "a dimension", &d));
        if (d < 0)
            return asg_error(p, p->line, t.col, "negative dimension %lld", (long long)d);
        if (s->rank == AS_MAX_RANK)
            return asg_error(p, p->line, t.col, "more than %d dimensions", AS_MAX_RANK);
        s->dim[s->rank++] = d;
        t = asg_peek(p);
        if (asg_is_punct(&t, ']'))
            break;
        AS_CHECK(asg_expect(p, ',', "or ']' in the dimension list"));
    }
    p->ti++;
    if (as_shape_validate(s, 0, &sub) != AS_OK)
        return asg_error(p, p->line, *col, "%s", sub.msg);
    return AS_OK;
}

/* Copy a quoted string token without quotes, resolving \" \\ \n \t. */
static const char *
asg_unquote(asg_parser *p, const asg_tok *t)
{
    char *s = as_arena_alloc(p->ar, t->len), *o = s;
    size_t i;

    for (i = 1; i + 1 < t->len; i++) {
        char c = t->p[i];
        if (c == '\\' && i + 2 < t->len) {
            c = t->p[++i];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        *o++ = c;
    }
    *o = '\0';
    return s;
}

/* VALUE: INT | FLOAT | NAME | STRING | '[' [INT {',' INT}] ']' into *A. */
static int
asg_value(asg_parser *p, as_attr *a)
{
    asg_tok t = asg_peek(p);
    AS_VEC(int64_t) v = {0};
    char buf[64];
    int rc = AS_OK;

    if (asg_tok_is_int(&t)) {
        a->kind = AS_ATTR_INT;
        AS_CHECK(asg_int(p, "a value", &a->i));
        a->f = (double)a->i;
    } else if (t.kind == TOK_NUM) {
        a->kind = AS_ATTR_FLOAT;
        AS_CHECK(asg_number(p, "a value", &a->f));
    } else if (t.kind == TOK_NAME) {
        a->kind = AS_ATTR_STR;
        a->s = as_arena_strndup(p->ar, t.p, t.len);
        p->ti++;
    } else if (t.kind == TOK_STR) {
        a->kind = AS_ATTR_STR;
        a->s = asg_unquote(p, &t);
        p->ti++;
    } else if (asg_is_punct(&t, '[')) {
        p->ti++;
        t = asg_peek(p);
        while (!asg_is_punct(&t, ']')) {
            int64_t x;
            AS_CHECK_GOTO(rc, asg_int(p, "an integer in the list", &x), out);
            AS_VEC_PUSH(&v, x);
            t = asg_peek(p);
            if (asg_is_punct(&t, ']'))
                break;
            AS_CHECK_GOTO(rc, asg_expect(p, ',', "or ']' in the list"), out);
            t = asg_peek(p);
        }
        p->ti++;
        a->kind = AS_ATTR_INTS;
        a->n = (int)v.n;
        a->v = asg_dup(p, v.v, v.n, sizeof(int64_t));
    } else {
        return asg_error(p, p->line, t.col, "expected a value, got %s",
                         asg_tok_desc(&t, buf, sizeof buf));
    }
out:
    AS_VEC_FREE(&v);
    return rc;
}

/* KEY '=' VALUE: the key into *KEY/ *COL, then the value into *A. */
static int
asg_keyval(asg_parser *p, const char **key, int *col, as_attr *a)
{
    memset(a, 0, sizeof *a);
    AS_CHECK(asg_name(p, "an attribute name", key, col));
    AS_CHECK(asg_expect(p, '=', "after the attribute name"));
    a->key = *key;
    return asg_value(p, a);
}

/* Fail unless the line is finished. */
static int
asg_end(asg_parser *p, const char *context)
{
    asg_tok t = asg_peek(p);
    char buf[64];

    if (t.kind != TOK_END)
        return asg_error(p, p->line, t.col, "unexpected %s %s", asg_tok_desc(&t, buf, sizeof buf),
                         context);
    return AS_OK;
}

static asg_stmt *
asg_new_stmt(asg_parser *p, int kind)
{
    asg_stmt s;

    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.line = p->line;
    s.batch = -1;
    AS_VEC_PUSH(&p->st, s);
    return &p->st.v[p->st.n - 1];
}

/* Record a use of a name in statement S. */
static int
asg_add_use(asg_parser *p, const char *what, asg_uses *uses)
{
    asg_use u;

    u.def = -1;
    AS_CHECK(asg_name(p, what, &u.name, &u.col));
    AS_VEC_PUSH(uses, u);
    return AS_OK;
}

/* input/param/const/state NAME ':' TYPE [batch=K] [of=PARAM] */
static int
asg_decl(asg_parser *p, as_tensor_kind tk, const char *kw)
{
    asg_stmt *s = asg_new_stmt(p, ST_DECL);
    asg_tok t;

    s->tk = tk;
    AS_CHECK(asg_name(p, "a tensor name", &s->name, &s->name_col));
    AS_CHECK(asg_expect(p, ':', "after the tensor name"));
    AS_CHECK(asg_type(p, &s->shape, &s->shape_col));
    while ((t = asg_peek(p)).kind != TOK_END) {
        const char *key;
        int col;
        if (tk == AS_TK_STATE && asg_is_word(&t, "of") && !s->has_of) {
            p->ti++;
            AS_CHECK(asg_expect(p, '=', "after 'of'"));
            s->uses = as_arena_calloc(p->ar, 1, sizeof *s->uses);
            s->nuse = 1;
            s->uses[0].def = -1;
            AS_CHECK(asg_name(p, "a parameter name", &s->uses[0].name, &s->uses[0].col));
            s->has_of = 1;
        } else if (tk == AS_TK_INPUT && asg_is_word(&t, "batch") && s->batch < 0) {
            int64_t b;
            asg_tok v;
            p->ti++;
            AS_CHECK(asg_expect(p, '=', "after 'batch'"));
            v = asg_peek(p);
            AS_CHECK(asg_int(p, "a dimension index", &b));
            if (s->shape.rank == 0 || b < 0 || b >= s->shape.rank)
                return asg_error(p, p->line, v.col, "batch dim %lld out of range for rank %d",
                                 (long long)b, s->shape.rank);
            s->batch = (int)b;
        } else {
            AS_CHECK(asg_name(p, "an option", &key, &col));
            return asg_error(p, p->line, col, "unknown option '%s' for %s", key, kw);
        }
    }
    return AS_OK;
}

/* OUT [':' TYPE] {',' OUT [':' TYPE]} '=' OPTYPE '(' [ARG {',' ARG}] ')' {KEY '=' VALUE} */
static int
asg_op(asg_parser *p)
{
    asg_stmt *s = asg_new_stmt(p, ST_OP);
    AS_VEC(asg_out) outs = {0};
    asg_uses uses = {0};
    AS_VEC(as_attr) attrs = {0};
    AS_VEC(int) cols = {0};
    asg_tok t;
    int rc = AS_OK;

    for (;;) {
        asg_out o;
        memset(&o, 0, sizeof o);
        AS_CHECK_GOTO(rc, asg_name(p, "an output name", &o.name, &o.col), out);
        t = asg_peek(p);
        if (asg_is_punct(&t, ':')) {
            p->ti++;
            o.typed = 1;
            AS_CHECK_GOTO(rc, asg_type(p, &o.type, &o.type_col), out);
        }
        if (outs.n == AS_MAX_OUTS) {
            rc = asg_error(p, p->line, o.col, "more than %d outputs", AS_MAX_OUTS);
            goto out;
        }
        AS_VEC_PUSH(&outs, o);
        t = asg_peek(p);
        if (asg_is_punct(&t, '='))
            break;
        AS_CHECK_GOTO(rc, asg_expect(p, ',', "or '=' after an output"), out);
    }
    p->ti++;
    AS_CHECK_GOTO(rc, asg_name(p, "an op type", &s->optype, &s->optype_col), out);
    AS_CHECK_GOTO(rc, asg_expect(p, '(', "after the op type"), out);
    t = asg_peek(p);
    while (!asg_is_punct(&t, ')')) {
        if (uses.n == ASG_MAX_ARGS) {
            rc = asg_error(p, p->line, t.col, "more than %d inputs", ASG_MAX_ARGS);
            goto out;
        }
        AS_CHECK_GOTO(rc, asg_add_use(p, "an input tensor name", &uses), out);
        t = asg_peek(p);
        if (asg_is_punct(&t, ')'))
            break;
        AS_CHECK_GOTO(rc, asg_expect(p, ',', "or ')' after an input"), out);
        t = asg_peek(p);
    }
    p->ti++;
    while (asg_peek(p).kind != TOK_END) {
        as_attr a;
        const char *key;
        int col;
        AS_CHECK_GOTO(rc, asg_keyval(p, &key, &col, &a), out);
        AS_VEC_PUSH(&attrs, a);
        AS_VEC_PUSH(&cols, col);
    }
    s->outs = asg_dup(p, outs.v, outs.n, sizeof *outs.v);
    s->nout = (int)outs.n;
    s->uses = asg_dup(p, uses.v, uses.n, sizeof *uses.v);
    s->nuse = (int)uses.n;
    s->attrs = asg_dup(p, attrs.v, attrs.n, sizeof *attrs.v);
    s->attr_cols = asg_dup(p, cols.v, cols.n, sizeof *cols.v);
    s->nattr = (int)attrs.n;
out:
    AS_VEC_FREE(&cols);
    AS_VEC_FREE(&attrs);
    AS_VEC_FREE(&uses);
    AS_VEC_FREE(&outs);
    return rc;
}

/* Directives naming tensors: output A, B; update P = Q; grad G of=P. */
static int
asg_names_stmt(asg_parser *p, int kind)
{
    asg_stmt *s = asg_new_stmt(p, kind);
    asg_uses uses = {0};
    asg_tok t;
    int rc = AS_OK;

    if (kind == ST_OUTPUT) {
        for (;;) {
            AS_CHECK_GOTO(rc, asg_add_use(p, "an output name", &uses), out);
            t = asg_peek(p);
            if (t.kind == TOK_END)
                break;
            AS_CHECK_GOTO(rc, asg_expect(p, ',', "between output names"), out);
        }
    } else if (kind == ST_UPDATE) {
        AS_CHECK_GOTO(rc, asg_add_use(p, "a parameter or state name", &uses), out);
        AS_CHECK_GOTO(rc, asg_expect(p, '=', "after the updated tensor"), out);
        AS_CHECK_GOTO(rc, asg_add_use(p, "the tensor holding its new value", &uses),
                      out);
        AS_CHECK_GOTO(rc, asg_end(p, "after the update"), out);
    } else {
        AS_CHECK_GOTO(rc, asg_add_use(p, "a gradient tensor name", &uses), out);
        t = asg_peek(p);
        if (!asg_is_word(&t, "of")) {
            char buf[64];
            rc = asg_error(p, p->line, t.col, "expected 'of=PARAM', got %s",
                           asg_tok_desc(&t, buf, sizeof buf));
            goto out;
        }
        p->ti++;
        AS_CHECK_GOTO(rc, asg_expect(p, '=', "after 'of'"), out);
        AS_CHECK_GOTO(rc, asg_add_use(p, "a parameter name", &uses), out);
        AS_CHECK_GOTO(rc, asg_end(p, "after the gradient"), out);
    }
    s->uses = asg_dup(p, uses.v, uses.n, sizeof *uses.v);
    s->nuse = (int)uses.n;
out:
    AS_VEC_FREE(&uses);
    return rc;
}

/* train [optimizer=adam|sgd|momentum] [lr=X] [beta1=X] [beta2=X] [eps=X] [momentum=X] */
static int
asg_train(asg_parser *p)
{
    static const char *const keys[] = {"lr", "beta1", "beta2", "eps", "momentum"};
    asg_stmt *s = asg_new_stmt(p, ST_TRAIN);

    as_train_opts_init(&s->train);
    while (asg_peek(p).kind != TOK_END) {
        asg_tok v;
        const char *key;
        double x;
        size_t k;
        int col;
        AS_CHECK(asg_name(p, "a train option", &key, &col));
        AS_CHECK(asg_expect(p, '=', "after the option name"));
        v = asg_peek(p);
        if (strcmp(key, "optimizer") == 0) {
            if (!asg_is_word(&v, "adam") && !asg_is_word(&v, "sgd") &&
                !asg_is_word(&v, "momentum")) {
                char buf[64];
                return asg_error(p, p->line, v.col,
                                 "unknown optimizer %s (expected adam, sgd or momentum)",
                                 asg_tok_desc(&v, buf, sizeof buf));
            }
            s->train.optimizer = as_arena_strndup(p->ar, v.p, v.len);
            p->ti++;
            continue;
        }
        for (k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (strcmp(key, keys[k]) == 0)
                break;
        if (k == sizeof keys / sizeof keys[0])
            return asg_error(p, p->line, col,
                             "unknown train option '%s' (expected optimizer, lr, beta1, beta2, "
                             "eps or momentum)",
                             key);
        AS_CHECK(asg_number(p, "a number", &x));
        if (!isfinite(x) || x < 0)
            return asg_error(p, p->line, col, "train option '%s' must be a finite number >= 0",
                             key);
        if (k == 0)
            s->train.lr = x;
        else if (k == 1)
            s->train.beta1 = x;
        else if (k == 2)
            s->train.beta2 = x;
        else if (k == 3)
            s->train.eps = x;
        else
            s->train.momentum = x;
    }
    return AS_OK;
}

/* phase forward|backward|optimizer */
static int
asg_phase(asg_parser *p)
{
    asg_stmt *s = asg_new_stmt(p, ST_PHASE);
    asg_tok t = asg_peek(p);
    char buf[64];

    if (asg_is_word(&t, "forward"))
        s->phase = 0;
    else if (asg_is_word(&t, "backward"))
        s->phase = AS_OF_BACKWARD;
    else if (asg_is_word(&t, "optimizer"))
        s->phase = AS_OF_OPTIMIZER;
    else
        return asg_error(p, p->line, t.col, "expected forward, backward or optimizer, got %s",
                         asg_tok_desc(&t, buf, sizeof buf));
    p->ti++;
    return asg_end(p, "after the phase");
}

/* precision fp32|bf16|fp16|bf16-mixed|fp16-mixed */
static int
asg_precision(asg_parser *p)
{
    asg_stmt *s = asg_new_stmt(p, ST_PRECISION);
    asg_tok t = asg_peek(p);
    char buf[64];

    if (t.kind != TOK_NAME || !as_precision_parse(t.p, t.len, &s->prec))
        return asg_error(p, p->line, t.col,
                         "expected fp32, bf16, fp16, bf16-mixed or fp16-mixed, got %s",
                         asg_tok_desc(&t, buf, sizeof buf));
    p->ti++;
    return asg_end(p, "after the precision");
}

/* Parse the tokens of the current line into a statement (blank lines add none). */
static int
asg_statement(asg_parser *p)
{
    asg_tok t0 = asg_peek(p), t1 = asg_peek_at(p, 1);
    int op_like = asg_is_punct(&t1, '=') || asg_is_punct(&t1, ':') || asg_is_punct(&t1, ',');
    char buf[64];

    if (t0.kind == TOK_END)
        return AS_OK;
    if (t0.kind != TOK_NAME)
        return asg_error(p, p->line, t0.col, "expected a statement, got %s",
                         asg_tok_desc(&t0, buf, sizeof buf));
    if (op_like)
        return asg_op(p);
    p->ti++;
    if (asg_is_word(&t0, "graph")) {
        asg_stmt *s = asg_new_stmt(p, ST_GRAPH);
        AS_CHECK(asg_name(p, "a graph name", &s->name, &s->name_col));
        return asg_end(p, "after the graph name");
    }
    if (asg_is_word(&t0, "input"))
        return asg_decl(p, AS_TK_INPUT, "input");
    if (asg_is_word(&t0, "param"))
        return asg_decl(p, AS_TK_PARAM, "param");
    if (asg_is_word(&t0, "const"))
        return asg_decl(p, AS_TK_CONST, "const");
    if (asg_is_word(&t0, "state"))
        return asg_decl(p, AS_TK_STATE, "state");
    if (asg_is_word(&t0, "output"))
        return asg_names_stmt(p, ST_OUTPUT);
    if (asg_is_word(&t0, "update"))
        return asg_names_stmt(p, ST_UPDATE);
    if (asg_is_word(&t0, "grad"))
        return asg_names_stmt(p, ST_GRAD);
    if (asg_is_word(&t0, "train"))
        return asg_train(p);
    if (asg_is_word(&t0, "phase"))
        return asg_phase(p);
    if (asg_is_word(&t0, "precision"))
        return asg_precision(p);
    return asg_error(p, p->line, t0.col, "unknown statement %s", asg_tok_desc(&t0, buf, sizeof buf));
}

/* Tokenize and parse every line of TEXT. */
static int
asg_parse_lines(asg_parser *p, const char *text, size_t len)
{
    const char *lp = text, *end = text + len;

    p->line = 0;
    while (lp < end) {
        const char *nl = memchr(lp, '\n', (size_t)(end - lp));
        size_t n = nl != NULL ? (size_t)(nl - lp) : (size_t)(end - lp);
        p->line++;
        AS_CHECK(asg_tokenize(p, lp, n));
        AS_CHECK(asg_statement(p));
        lp += n + 1;
    }
    return AS_OK;
}

/* Pass 3: names. */

/* Define NAME at statement I, column COL. */
static int
asg_define(asg_parser *p, const char *name, size_t i, int col)
{
    int64_t prev;

    if (as_strmap_get(&p->defs, name, (size_t)-1, &prev))
        return asg_error(p, p->st.v[i].line, col, "redefinition of '%s' (first defined at line %d)",
                         name, p->st.v[prev].line);
    as_strmap_put(&p->defs, name, (int64_t)i);
    return AS_OK;
}

static int
asg_resolve(asg_parser *p)
{
    size_t i;
    int k;

    for (i = 0; i < p->st.n; i++) {
        asg_stmt *s = &p->st.v[i];
        if (s->kind == ST_DECL)
            AS_CHECK(asg_define(p, s->name, i, s->name_col));
        for (k = 0; s->kind == ST_OP && k < s->nout; k++)
            AS_CHECK(asg_define(p, s->outs[k].name, i, s->outs[k].col));
    }
    for (i = 0; i < p->st.n; i++) {
        asg_stmt *s = &p->st.v[i];
        for (k = 0; k < s->nuse; k++) {
            int64_t d;
            if (!as_strmap_get(&p->defs, s->uses[k].name, (size_t)-1, &d))
                return asg_error(p, s->line, s->uses[k].col, "undefined name '%s'",
                                 s->uses[k].name);
            s->uses[k].def = (int32_t)d;
        }
    }
    return AS_OK;
}

/* Pass 4: dependencies. */

/* Report the cycle CYC (vertices = op statement indices VSTMT[v]). */
static int
asg_cycle_error(asg_parser *p, const igraph_vector_int_t *cyc, const int32_t *vstmt)
{
    igraph_integer_t n = igraph_vector_int_size(cyc), k;
    const asg_stmt *first = &p->st.v[vstmt[VECTOR(*cyc)[0]]];
    int32_t last = vstmt[VECTOR(*cyc)[n - 1]];
    char msg[400];
    size_t off = 0;
    int col = first->outs[0].col, j;

    for (k = 0; k <= n && off < sizeof msg; k++)
        off += (size_t)snprintf(msg + off, sizeof msg - off, "%s%s", k ? " -> " : "",
                                p->st.v[vstmt[VECTOR(*cyc)[k % n]]].outs[0].name);
    /* Point at the use that closes the cycle: FIRST reading a result of LAST. */
    for (j = 0; j < first->nuse; j++)
        if (first->uses[j].def == last) {
            col = first->uses[j].col;
            break;
        }
    return asg_error(p, first->line, col, "cycle: %s", msg);
}

/* Check that the def -> use graph of op statements is a DAG (igraph). */
static int
asg_check_cycles(asg_parser *p)
{
    int32_t *vof = as_xcalloc(p->st.n + 1, sizeof *vof), *vstmt, nv = 0;
    igraph_vector_int_t edges, cyc;
    igraph_bool_t dag = 1;
    igraph_t ig;
    size_t i;
    int k, found = 0, rc = AS_OK, have_graph = 0;

    vstmt = as_xcalloc(p->st.n + 1, sizeof *vstmt);
    for (i = 0; i < p->st.n; i++) {
        vof[i] = -1;
        if (p->st.v[i].kind == ST_OP) {
            vof[i] = nv;
            vstmt[nv++] = (int32_t)i;
        }
    }
    igraph_vector_int_init(&edges, 0);
    igraph_vector_int_init(&cyc, 0);
    for (i = 0; i < p->st.n; i++) {
        const asg_stmt *s = &p->st.v[i];
        for (k = 0; s->kind == ST_OP && k < s->nuse; k++)
            if (vof[s->uses[k].def] >= 0) {
                igraph_vector_int_push_back(&edges, vof[s->uses[k].def]);
                igraph_vector_int_push_back(&edges, vof[i]);
            }
    }
    AS_CHECK_GOTO(rc, AS_IGRAPH(p->err, igraph_create(&ig, &edges, nv, IGRAPH_DIRECTED)), out);
    have_graph = 1;
    AS_CHECK_GOTO(rc, AS_IGRAPH(p->err, igraph_is_dag(&ig, &dag)), out);
    if (dag)
        goto out;
    AS_CHECK_GOTO(rc, as_igraph_find_cycle(&ig, &cyc, &found, p->err), out);
    if (!found)
        rc = as_errf(p->err, AS_EINTERNAL, "%s: dependency graph is cyclic but no cycle found",
                     p->path);
    else
        rc = asg_cycle_error(p, &cyc, vstmt);
out:
    if (have_graph)
        igraph_destroy(&ig);
    igraph_vector_int_destroy(&cyc);
    igraph_vector_int_destroy(&edges);
    free(vstmt);
    free(vof);
    return rc;
}

/* Every use must come after its definition in file order. */
static int
asg_check_order(asg_parser *p)
{
    size_t i;
    int k;

    for (i = 0; i < p->st.n; i++) {
        const asg_stmt *s = &p->st.v[i];
        for (k = 0; k < s->nuse; k++)
            if ((size_t)s->uses[k].def >= i)
                return asg_error(p, s->line, s->uses[k].col,
                                 "'%s' used before its definition at line %d", s->uses[k].name,
                                 p->st.v[s->uses[k].def].line);
    }
    return AS_OK;
}

/* Pass 5: building. */

/* Column for an add_op error: the attribute it names (its second use for "given twice"),
 * else the op type. */
static int
asg_op_error_col(const asg_stmt *s, const char *msg)
{
    int twice = strstr(msg, "given twice") != NULL;
    char needle[160];
    int k;

    for (k = twice ? s->nattr - 1 : 0; k >= 0 && k < s->nattr; k += twice ? -1 : 1) {
        snprintf(needle, sizeof needle, "attribute '%s'", s->attrs[k].key);
        if (strstr(msg, needle) != NULL)
            return s->attr_cols[k];
    }
    return s->optype_col;
}

static int
asg_build_op(asg_parser *p, as_graph *g, const asg_stmt *s, unsigned phase)
{
    const char *names[AS_MAX_OUTS];
    int32_t *in = as_xcalloc((size_t)s->nuse + 1, sizeof *in), op_id;
    const as_op *op;
    int k, rc;

    for (k = 0; k < s->nout; k++)
        names[k] = s->outs[k].name;
    for (k = 0; k < s->nuse; k++)
        in[k] = as_graph_find(g, s->uses[k].name);
    rc = as_graph_add_op(g, s->optype, names, s->nout, in, s->nuse, s->attrs, s->nattr, &op_id,
                         p->err);
    free(in);
    if (rc != AS_OK)
        return asg_prefix(p, rc, s->line, asg_op_error_col(s, p->err->msg));
    as_graph_op_meta(g, op_id, phase, s->line);
    op = as_graph_op(g, op_id);
    if (s->nout > op->nout)
        return asg_error(p, s->line, s->outs[op->nout].col, "'%s' has %d output%s, %d names given",
                         s->optype, op->nout, op->nout == 1 ? "" : "s", s->nout);
    for (k = 0; k < s->nout; k++) {
        const as_tensor *t = as_graph_tensor(g, op->out[k]);
        char want[160], got[160];
        as_graph_tensor_line(g, op->out[k], s->line);
        if (s->outs[k].typed && !as_shape_equal(&s->outs[k].type, &t->shape))
            return asg_error(p, s->line, s->outs[k].type_col,
                             "'%s' is declared %s but %s gives %s", s->outs[k].name,
                             as_shape_str(&s->outs[k].type, want, sizeof want), s->optype,
                             as_shape_str(&t->shape, got, sizeof got));
    }
    return AS_OK;
}

/* Apply directive S (output, update, grad) to G. */
static int
asg_build_directive(asg_parser *p, as_graph *g, const asg_stmt *s)
{
    int32_t a = s->nuse > 0 ? as_graph_find(g, s->uses[0].name) : -1;
    int32_t b = s->nuse > 1 ? as_graph_find(g, s->uses[1].name) : -1;
    int k, rc;

    switch (s->kind) {
    case ST_OUTPUT:
        for (k = 0; k < s->nuse; k++)
            as_graph_mark_output(g, as_graph_find(g, s->uses[k].name));
        return AS_OK;
    case ST_UPDATE:
        if ((rc = as_graph_set_update(g, a, b, p->err)) != AS_OK)
            return asg_prefix(p, rc, s->line, s->uses[0].col);
        return AS_OK;
    default: /* ST_GRAD */
        if (as_graph_tensor(g, b)->kind != AS_TK_PARAM)
            return asg_error(p, s->line, s->uses[1].col, "'%s' is not a parameter",
                             s->uses[1].name);
        if (!as_shape_equal(&as_graph_tensor(g, a)->shape, &as_graph_tensor(g, b)->shape)) {
            char sa[128], sb[128];
            return asg_error(p, s->line, s->uses[0].col, "gradient '%s' is %s but '%s' is %s",
                             s->uses[0].name,
                             as_shape_str(&as_graph_tensor(g, a)->shape, sa, sizeof sa),
                             s->uses[1].name,
                             as_shape_str(&as_graph_tensor(g, b)->shape, sb, sizeof sb));
        }
        if (as_graph_tensor(g, a)->flags & AS_TF_GRAD)
            return asg_error(p, s->line, s->uses[0].col, "'%s' is already a gradient",
                             s->uses[0].name);
        for (k = 0; k < as_graph_ntensors(g); k++)
            if ((as_graph_tensor(g, k)->flags & AS_TF_GRAD) && as_graph_tensor(g, k)->of == b)
                return asg_error(p, s->line, s->uses[1].col, "'%s' already has a gradient ('%s')",
                                 s->uses[1].name, as_graph_tensor(g, k)->name);
        as_graph_tensor_flag(g, a, AS_TF_GRAD, b);
        return AS_OK;
    }
}

static int
asg_build_decl(asg_parser *p, as_graph *g, const asg_stmt *s)
{
    int32_t id;
    int rc;

    if ((rc = as_graph_add_tensor(g, s->name, &s->shape, s->tk, s->batch, &id, p->err)) != AS_OK)
        return asg_prefix(p, rc, s->line, s->shape_col);
    as_graph_tensor_line(g, id, s->line);
    if (s->has_of) {
        rc = as_graph_set_state_of(g, id, as_graph_find(g, s->uses[0].name), p->err);
        if (rc != AS_OK)
            return asg_prefix(p, rc, s->line, s->uses[0].col);
    }
    return AS_OK;
}

/* Graph name from PATH: basename without extension, made a valid name. */
static char *
asg_default_name(const char *path)
{
    const char *base = strrchr(path, '/'), *dot;
    char *s;
    size_t i, n;

    if (strcmp(path, "-") == 0)
        return as_xstrdup("stdin");
    base = base != NULL ? base + 1 : path;
    dot = strrchr(base, '.');
    n = dot != NULL && dot != base ? (size_t)(dot - base) : strlen(base);
    s = as_xmalloc(n + 2);
    s[0] = '_';
    memcpy(s + 1, base, n);
    s[n + 1] = '\0';
    for (i = 1; i <= n; i++)
        if (!(s[i] == '_' || s[i] == '.' || s[i] == '-' || (s[i] >= '0' && s[i] <= '9') ||
              (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
            s[i] = '_';
    if (n > 0 && (s[1] == '_' || (s[1] >= 'a' && s[1] <= 'z') || (s[1] >= 'A' && s[1] <= 'Z')))
        memmove(s, s + 1, n + 1);
    return s;
}

/* Header checks and the graph's name: one `graph` line at most, one `train`, one
 * `precision`, some ops. */
static int
asg_header(asg_parser *p, const char **name, const asg_stmt **train, const asg_stmt **prec)
{
    const asg_stmt *graph = NULL;
    size_t i, nops = 0;

    *name = NULL;
    *train = NULL;
    *prec = NULL;
    for (i = 0; i < p->st.n; i++) {
        const asg_stmt *s = &p->st.v[i];
        if (s->kind == ST_GRAPH) {
            if (graph != NULL)
                return asg_error(p, s->line, 1, "second graph header (first at line %d)",
                                 graph->line);
            graph = s;
            *name = s->name;
        } else if (s->kind == ST_TRAIN) {
            if (*train != NULL)
                return asg_error(p, s->line, 1, "second train directive (first at line %d)",
                                 (*train)->line);
            *train = s;
        } else if (s->kind == ST_PRECISION) {
            if (*prec != NULL)
                return asg_error(p, s->line, 1, "second precision directive (first at line %d)",
                                 (*prec)->line);
            *prec = s;
        } else if (s->kind == ST_OP) {
            nops++;
        }
    }
    if (nops == 0)
        return asg_error(p, 1, 1, "empty graph: no ops");
    return AS_OK;
}

/*
 * The `precision` directive: every f32 of the file (declared inputs,
 * parameters and constants, written op types, dtype= attributes) becomes
 * the 16-bit type, and `train` keeps fp32 master weights for *-mixed.  A
 * graph that is a training step already (states, updates, gradients) has
 * its types written out: the directive does not apply to it.
 */
static int
asg_apply_precision(asg_parser *p, const asg_stmt *prec, asg_stmt *train)
{
    as_dtype dt = as_precision_dtype(prec->prec);
    const char *dn = as_dtype_name(dt);
    size_t i;
    int k;

    if (train != NULL)
        train->train.mixed = as_precision_mixed(prec->prec);
    if (dt == AS_DT_F32)
        return AS_OK;
    for (i = 0; i < p->st.n; i++) {
        asg_stmt *s = &p->st.v[i];
        if (s->kind == ST_UPDATE || s->kind == ST_GRAD ||
            (s->kind == ST_DECL && s->tk == AS_TK_STATE))
            return asg_error(p, prec->line, 1,
                             "precision %s applies to a forward graph (with `train`); line %d "
                             "makes this one a training step already",
                             as_precision_name(prec->prec), s->line);
    }
    for (i = 0; i < p->st.n; i++) {
        asg_stmt *s = &p->st.v[i];
        if (s->kind == ST_DECL && s->shape.dtype == AS_DT_F32)
            s->shape.dtype = dt;
        if (s->kind != ST_OP)
            continue;
        for (k = 0; k < s->nout; k++)
            if (s->outs[k].typed && s->outs[k].type.dtype == AS_DT_F32)
                s->outs[k].type.dtype = dt;
        for (k = 0; k < s->nattr; k++)
            if (s->attrs[k].kind == AS_ATTR_STR && strcmp(s->attrs[k].key, "dtype") == 0 &&
                strcmp(s->attrs[k].s, "f32") == 0)
                s->attrs[k].s = dn;
    }
    return AS_OK;
}

static int
asg_build(asg_parser *p, const char *name, const asg_stmt *train, as_graph **out)
{
    char *dflt = name == NULL ? asg_default_name(p->src) : NULL;
    as_graph *g = as_graph_new(name != NULL ? name : dflt);
    unsigned phase = 0;
    size_t i;
    int rc = AS_OK;

    for (i = 0; i < p->st.n && rc == AS_OK; i++) {
        const asg_stmt *s = &p->st.v[i];
        switch (s->kind) {
        case ST_DECL:
            rc = asg_build_decl(p, g, s);
            break;
        case ST_OP:
            rc = asg_build_op(p, g, s, phase);
            break;
        case ST_OUTPUT:
        case ST_UPDATE:
        case ST_GRAD:
            rc = asg_build_directive(p, g, s);
            break;
        case ST_PHASE:
            phase = s->phase;
            break;
        default: /* graph, train, precision: handled by asg_header */
            break;
        }
    }
    if (rc == AS_OK && train != NULL) {
        as_graph_set_train(g, &train->train);
        if ((rc = as_autodiff(g, &train->train, p->err)) != AS_OK)
            asg_prefix(p, rc, train->line, 1);
    }
    free(dflt);
    if (rc != AS_OK) {
        as_graph_free(g);
        return rc;
    }
    *out = g;
    return AS_OK;
}

int
as_graph_parse_asg(const char *path, const char *text, size_t len, as_graph **out, as_err *err)
{
    asg_parser p;
    const asg_stmt *train, *prec;
    const char *name;
    int rc;

    as_igraph_setup();
    pthread_once(&asg_re_once, asg_compile);
    if (asg_re == NULL)
        return as_errf(err, AS_EINTERNAL, "asg reader: %s", asg_re_error);
    memset(&p, 0, sizeof p);
    p.path = path != NULL ? path : "-";
    p.src = p.path;
    p.err = err;
    if (strcmp(p.path, "-") == 0)
        p.path = "<stdin>";
    AS_CHECK(asg_scan(&p, text, len));
    p.ar = as_arena_new();
    p.md = pcre2_match_data_create_from_pattern(asg_re, as_pcre2_gcontext());
    as_strmap_init(&p.defs);
    AS_CHECK_GOTO(rc, asg_parse_lines(&p, text, len), out);
    AS_CHECK_GOTO(rc, asg_header(&p, &name, &train, &prec), out);
    if (prec != NULL)
        AS_CHECK_GOTO(rc, asg_apply_precision(&p, prec, (asg_stmt *)train), out);
    AS_CHECK_GOTO(rc, asg_resolve(&p), out);
    AS_CHECK_GOTO(rc, asg_check_cycles(&p), out);
    AS_CHECK_GOTO(rc, asg_check_order(&p), out);
    rc = asg_build(&p, name, train, out);
out:
    as_strmap_destroy(&p.defs);
    pcre2_match_data_free(p.md);
    AS_VEC_FREE(&p.toks);
    AS_VEC_FREE(&p.st);
    as_arena_free(p.ar);
    return rc;
}
