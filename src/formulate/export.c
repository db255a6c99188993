/* export.c -- the ILP in other people's formats: loading into GLPK, writing
 * free MPS / CPLEX LP with GLPK's writers, and reading back the solution
 * files external solvers write for those models.
 *
 * Solution formats understood (detected from the first lines):
 *   CBC `solu` files       "Optimal - objective value 3.5" then "idx name value rc"
 *   glpsol --write (raw)   "c ..." comments, "s mip ROWS COLS o|f|n|u OBJ", "j COL VAL"
 *   glpsol -o (printable)  "Problem:", "Status: INTEGER OPTIMAL", the column table
 *   name-value files       Gurobi .sol ("# Objective value = X", "name value") and
 *                          HiGHS ("Model status", "# Columns N", "name value")
 * Column names are the ILP's stable names (s_<node>_<p>, e_<edge>_<p>_<q>).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glpk.h>

#include "formulate/ilp.h"
#include "libhooks.h"

static int
load_check(const as_ilp_view *iv, as_err *err)
{
    size_t i;

    if (iv->ncols == 0 || iv->nrows == 0)
        return as_errf(err, AS_EINTERNAL, "empty ILP (%zu columns, %zu rows)", iv->ncols,
                       iv->nrows);
    if (iv->ncols >= INT32_MAX || iv->nrows >= INT32_MAX || iv->nnz >= INT32_MAX)
        return as_errf(err, AS_EINTERNAL, "ILP too large for GLPK");
    for (i = 0; i < iv->ncols; i++)
        if (!isfinite(iv->obj[i]) || !isfinite(iv->col_lb[i]) || !isfinite(iv->col_ub[i]) ||
            iv->col_lb[i] > iv->col_ub[i] || strlen(iv->col_name[i]) > 255)
            return as_errf(err, AS_EINTERNAL, "ILP column %zu is malformed", i);
    for (i = 0; i < iv->nrows; i++)
        if (isnan(iv->row_lb[i]) || isnan(iv->row_ub[i]) || iv->row_lb[i] > iv->row_ub[i] ||
            strlen(iv->row_name[i]) > 255)
            return as_errf(err, AS_EINTERNAL, "ILP row %zu ('%s') is malformed", i,
                           iv->row_name[i]);
    for (i = 0; i < iv->nnz; i++)
        if (iv->ti[i] < 0 || (size_t)iv->ti[i] >= iv->nrows || iv->tj[i] < 0 ||
            (size_t)iv->tj[i] >= iv->ncols || !isfinite(iv->tv[i]) || iv->tv[i] == 0)
            return as_errf(err, AS_EINTERNAL, "ILP matrix entry %zu is malformed", i);
    return AS_OK;
}

static int
glpk_row_type(double lb, double ub)
{
    if (lb == -HUGE_VAL && ub == HUGE_VAL)
        return GLP_FR;
    if (lb == -HUGE_VAL)
        return GLP_UP;
    if (ub == HUGE_VAL)
        return GLP_LO;
    return lb == ub ? GLP_FX : GLP_DB;
}

int
as_ilp_load_glpk(const as_ilp *ilp, glp_prob *lp, as_err *err)
{
    const as_ilp_view *iv = as_ilp_data(ilp);
    int *ia, *ja;
    double *ar;
    size_t i;

    AS_CHECK(load_check(iv, err));
    as_glpk_hooks();
    glp_set_prob_name(lp, "autoshard");
    glp_set_obj_name(lp, "obj");
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, (int)iv->nrows);
    glp_add_cols(lp, (int)iv->ncols);
    glp_set_obj_coef(lp, 0, iv->offset);
    for (i = 0; i < iv->nrows; i++) {
        double lb = iv->row_lb[i], ub = iv->row_ub[i];
        int type = glpk_row_type(lb, ub);
        glp_set_row_name(lp, (int)i + 1, iv->row_name[i]);
        glp_set_row_bnds(lp, (int)i + 1, type, type == GLP_UP || type == GLP_FR ? 0 : lb,
                         type == GLP_LO || type == GLP_FR ? 0 : ub);
    }
    for (i = 0; i < iv->ncols; i++) {
        glp_set_col_name(lp, (int)i + 1, iv->col_name[i]);
        glp_set_obj_coef(lp, (int)i + 1, iv->obj[i]);
        if (iv->col_int[i] && iv->col_lb[i] == 0 && iv->col_ub[i] == 1)
            glp_set_col_kind(lp, (int)i + 1, GLP_BV);
        else
            glp_set_col_bnds(lp, (int)i + 1, iv->col_lb[i] == iv->col_ub[i] ? GLP_FX : GLP_DB,
                             iv->col_lb[i], iv->col_ub[i]);
    }
    ia = as_xcalloc(iv->nnz + 1, sizeof *ia);
    ja = as_xcalloc(iv->nnz + 1, sizeof *ja);
    ar = as_xcalloc(iv->nnz + 1, sizeof *ar);
    for (i = 0; i < iv->nnz; i++) {
        ia[i + 1] = iv->ti[i] + 1;
        ja[i + 1] = iv->tj[i] + 1;
        ar[i + 1] = iv->tv[i];
    }
    if (iv->nnz > 0)
        glp_load_matrix(lp, (int)iv->nnz, ia, ja, ar);
    free(ar);
    free(ja);
    free(ia);
    return AS_OK;
}

/* Copy file SRC to stdout. */
static int
cat_stdout(const char *src, as_err *err)
{
    char *buf;
    size_t len;
    int rc;

    AS_CHECK(as_read_file(src, &buf, &len, err));
    rc = as_write_file_atomic("-", buf, len, err);
    free(buf);
    return rc;
}

/*
 * The objective as written for other solvers: scaled as the linked backends solve it
 * (as_ilp_obj_scale: O(1) coefficients), and its constant as a column fixed at 1
 * (AS_ILP_CONST_COL) instead of the objective row's right-hand side, which glpsol adds and
 * CBC subtracts (1179657.03 against -1179645.03 for one file).
 */
static void
export_objective(const as_ilp *ilp, glp_prob *lp)
{
    const as_ilp_view *iv = as_ilp_data(ilp);
    double scale = as_ilp_obj_scale(ilp);
    int j;

    for (j = 1; j <= (int)iv->ncols; j++)
        glp_set_obj_coef(lp, j, iv->obj[j - 1] * scale);
    glp_set_obj_coef(lp, 0, 0.0);
    if (iv->offset != 0) {
        j = glp_add_cols(lp, 1);
        glp_set_col_name(lp, j, AS_ILP_CONST_COL);
        glp_set_col_bnds(lp, j, GLP_FX, 1.0, 1.0);
        glp_set_obj_coef(lp, j, iv->offset * scale);
    }
}

/* Put a comment line saying how the objective is scaled at the top of FILE. */
static int
export_comment(const as_ilp *ilp, as_ilp_format fmt, const char *file, const char *shown,
               as_err *err)
{
    char *text = NULL, head[400];
    size_t len;
    int n, rc;
    FILE *fp;

    AS_CHECK(as_read_file(file, &text, &len, err));
    n = snprintf(head, sizeof head,
                 "%s autoshard: objective = seconds x %.17g (as autoshard's solvers scale it); "
                 "constant %.17g s in column %s fixed at 1%s\n",
                 fmt == AS_ILP_MPS ? "*" : "\\", as_ilp_obj_scale(ilp), as_ilp_data(ilp)->offset,
                 AS_ILP_CONST_COL, as_ilp_data(ilp)->offset != 0 ? "" : " (none: 0)");
    fp = fopen(file, "w");
    rc = fp == NULL || fwrite(head, 1, (size_t)n, fp) != (size_t)n ||
         fwrite(text, 1, len, fp) != len;
    if (fp != NULL && fclose(fp) != 0)
        rc = 1;
    free(text);
    if (rc)
        return as_errf(err, AS_EIO, "%s: cannot write the %s file", shown,
                       fmt == AS_ILP_MPS ? "MPS" : "LP");
    return AS_OK;
}

int
as_ilp_write(const as_ilp *ilp, as_ilp_format fmt, const char *path, as_err *err)
{
    int tostdout = path == NULL || strcmp(path, "-") == 0;
    const char *tmpdir = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    char *tmp = NULL;
    const char *target;
    as_outfile o;
    glp_prob *lp = NULL;
    int fd, ret, rc = AS_OK;

    memset(&o, 0, sizeof o);
    if (tostdout) {
        tmp = as_xasprintf("%s/autoshard-ilp", tmpdir);
        if ((fd = as_mkstemp_beside(tmp, &o.tmp, err)) < 0) {
            free(tmp);
            return AS_EIO;
        }
        free(tmp);
        close(fd);
        target = o.tmp;
    } else {
        /* GLPK writes by name: it reopens the unnamed (or temporary) file through o.path. */
        AS_CHECK(as_outfile_open(&o, path, err));
        target = o.path;
    }
    lp = glp_create_prob();
    AS_CHECK_GOTO(rc, as_ilp_load_glpk(ilp, lp, err), out);
    export_objective(ilp, lp);
    ret = fmt == AS_ILP_MPS ? glp_write_mps(lp, GLP_MPS_FILE, NULL, target)
                            : glp_write_lp(lp, NULL, target);
    if (ret != 0) {
        rc = as_errf(err, AS_EIO, "%s: cannot write the %s file", tostdout ? "<stdout>" : path,
                     fmt == AS_ILP_MPS ? "MPS" : "LP");
        goto out;
    }
    AS_CHECK_GOTO(rc, export_comment(ilp, fmt, target, tostdout ? "<stdout>" : path, err), out);
    if (tostdout)
        rc = cat_stdout(target, err);
    else
        rc = as_outfile_commit(&o, err);
out:
    if (tostdout)
        as_tmp_remove(o.tmp);
    else if (rc != AS_OK)
        as_outfile_abort(&o);
    glp_delete_prob(lp);
    return rc;
}

/* ---- solution files ---- */

typedef struct solreader {
    const as_ilp *ilp;
    const char *path;
    double *x;
    as_sol_status status;
    double objective;
    size_t nvals;
    as_err *err;
} solreader;

/* Split LINE in place into at most MAX whitespace-separated tokens. */
static size_t
split(char *line, char **tok, size_t max)
{
    size_t n = 0;
    char *s = line;

    while (n < max) {
        while (*s == ' ' || *s == '\t' || *s == '\r')
            s++;
        if (*s == '\0')
            break;
        tok[n++] = s;
        while (*s != '\0' && *s != ' ' && *s != '\t' && *s != '\r')
            s++;
        if (*s != '\0')
            *s++ = '\0';
    }
    return n;
}

static int
parse_num(const char *s, double *x)
{
    char *end;

    errno = 0;
    *x = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*x);
}

/* Set the value of the column called NAME. */
static int
set_named(solreader *r, size_t lineno, const char *name, const char *val)
{
    size_t j;
    double x;

    if (strcmp(name, AS_ILP_CONST_COL) == 0 && as_ilp_data(r->ilp)->offset != 0)
        return AS_OK; /* the objective's constant, fixed at 1 */
    if (!as_ilp_find_col(r->ilp, name, &j))
        return as_errf(r->err, AS_EPARSE, "%s:%zu: unknown variable '%s' (not in this model)",
                       r->path, lineno, name);
    if (!parse_num(val, &x))
        return as_errf(r->err, AS_EPARSE, "%s:%zu: value '%s' of '%s' is not a finite number",
                       r->path, lineno, val, name);
    r->x[j] = x;
    r->nvals++;
    return AS_OK;
}

/* The objective value at S (after its label) on line LINENO: a finite number, nothing else. */
static int
read_objective(solreader *r, size_t lineno, char *s)
{
    char *tok[2];
    size_t nt = s != NULL ? split(s, tok, 2) : 0;

    if (nt != 1 || !parse_num(tok[0], &r->objective))
        return as_errf(r->err, AS_EPARSE, "%s:%zu: the objective value is %s", r->path, lineno,
                       nt == 0 ? "missing" : "not a finite number");
    return AS_OK;
}

/* CBC: "Optimal - objective value 3.5", then "[**] idx name value [reduced-cost]". */
static int
read_cbc(solreader *r, char **lines, size_t n)
{
    char *tok[6], *ov = strstr(lines[0], "objective value");
    size_t i, nt, at;

    if (strncmp(lines[0], "Optimal", 7) == 0)
        r->status = AS_SOL_OPTIMAL;
    else if (strstr(lines[0], "nfeasible") != NULL)
        r->status = AS_SOL_INFEASIBLE;
    else
        r->status = AS_SOL_FEASIBLE;
    AS_CHECK(read_objective(r, 1, ov + strlen("objective value")));
    for (i = 1; i < n; i++) {
        nt = split(lines[i], tok, 6);
        if (nt == 0)
            continue;
        at = strcmp(tok[0], "**") == 0;
        if (nt < at + 3)
            return as_errf(r->err, AS_EPARSE, "%s:%zu: expected 'INDEX NAME VALUE'", r->path,
                           i + 1);
        AS_CHECK(set_named(r, i + 1, tok[at + 1], tok[at + 2]));
    }
    if (r->nvals == 0 && r->status == AS_SOL_FEASIBLE)
        r->status = AS_SOL_NONE;
    return AS_OK;
}

/* glpsol --write: "s mip ROWS COLS STATUS OBJ", "j COL VAL". */
static int
read_glpk_raw(solreader *r, char **lines, size_t n)
{
    const as_ilp_view *iv = as_ilp_data(r->ilp);
    char *tok[8];
    size_t i, nt, seen = 0;
    double col, val;

    for (i = 0; i < n; i++) {
        nt = split(lines[i], tok, 8);
        if (nt == 0 || strcmp(tok[0], "c") == 0 || strcmp(tok[0], "i") == 0 ||
            strcmp(tok[0], "e") == 0)
            continue;
        if (strcmp(tok[0], "s") == 0) {
            if (nt < 6 || strcmp(tok[1], "mip") != 0)
                return as_errf(r->err, AS_EPARSE, "%s:%zu: expected 's mip ROWS COLS STATUS "
                               "OBJ' (a MIP solution)", r->path, i + 1);
            if (strtoul(tok[2], NULL, 10) != iv->nrows ||
                (strtoul(tok[3], NULL, 10) != iv->ncols &&
                 !(iv->offset != 0 && strtoul(tok[3], NULL, 10) == iv->ncols + 1)))
                return as_errf(r->err, AS_EPARSE, "%s:%zu: solution has %s rows and %s columns, "
                               "the model %zu and %zu", r->path, i + 1, tok[2], tok[3], iv->nrows,
                               iv->ncols);
            r->status = tok[4][0] == 'o' ? AS_SOL_OPTIMAL : tok[4][0] == 'f' ? AS_SOL_FEASIBLE
                        : tok[4][0] == 'n' ? AS_SOL_INFEASIBLE : AS_SOL_NONE;
            if (nt != 6)
                return as_errf(r->err, AS_EPARSE, "%s:%zu: expected 's mip ROWS COLS STATUS "
                               "OBJ' (a MIP solution)", r->path, i + 1);
            AS_CHECK(read_objective(r, i + 1, tok[5]));
            seen = 1;
            continue;
        }
        if (strcmp(tok[0], "j") != 0 || nt != 3 || !parse_num(tok[1], &col) ||
            !parse_num(tok[2], &val) || col < 1 || col != floor(col) ||
            col > (double)iv->ncols + (iv->offset != 0))
            return as_errf(r->err, AS_EPARSE, "%s:%zu: expected 'j COLUMN VALUE' with a column "
                           "in 1..%zu", r->path, i + 1, iv->ncols + (iv->offset != 0));
        if (col == (double)iv->ncols + 1)
            continue; /* the objective's constant column */
        r->x[(size_t)col - 1] = val;
        r->nvals++;
    }
    if (!seen)
        return as_errf(r->err, AS_EPARSE, "%s: no 's mip' line", r->path);
    return AS_OK;
}

/* glpsol -o: the "Column name" table; long names put the values on the next line. */
static int
read_glpk_print(solreader *r, char **lines, size_t n)
{
    char *tok[8], *st, *ob;
    size_t i, nt, at;
    int incols = 0;

    r->status = AS_SOL_UNKNOWN;
    for (i = 0; i < n; i++) {
        if ((st = strstr(lines[i], "Status:")) == lines[i]) {
            r->status = strstr(st, "INTEGER OPTIMAL") ? AS_SOL_OPTIMAL
                        : strstr(st, "NON-OPTIMAL")   ? AS_SOL_FEASIBLE
                        : strstr(st, "EMPTY")         ? AS_SOL_INFEASIBLE
                                                      : AS_SOL_NONE;
            continue;
        }
        if ((ob = strstr(lines[i], "Objective:")) == lines[i]) {
            /* "Objective:  obj = 3.5 (MINimum)" */
            char *paren;

            if ((ob = strchr(ob, '=')) == NULL)
                return as_errf(r->err, AS_EPARSE, "%s:%zu: the objective value is missing",
                               r->path, i + 1);
            if ((paren = strchr(ob, '(')) != NULL)
                *paren = '\0';
            AS_CHECK(read_objective(r, i + 1, ob + 1));
            continue;
        }
        if (strstr(lines[i], "Column name") != NULL) {
            incols = 1;
            i++; /* the ------ line */
            continue;
        }
        if (!incols)
            continue;
        nt = split(lines[i], tok, 8);
        if (nt == 0)
            break;
        if (nt == 2 && i + 1 < n) /* long name: values on the next line */
            nt = split(lines[++i], tok + 2, 6) + 2;
        at = nt > 2 && strcmp(tok[2], "*") == 0;
        if (nt < at + 3)
            return as_errf(r->err, AS_EPARSE, "%s:%zu: expected 'No. NAME [*] ACTIVITY ...'",
                           r->path, i + 1);
        AS_CHECK(set_named(r, i + 1, tok[1], tok[at + 2]));
    }
    if (!incols && r->status != AS_SOL_INFEASIBLE)
        return as_errf(r->err, AS_EPARSE, "%s: no column table (glpsol -o output?)", r->path);
    return AS_OK;
}

/* Gurobi .sol and HiGHS solution files: "name value" lines with '#' headers. */
static int
read_namevalue(solreader *r, char **lines, size_t n)
{
    char *tok[4], *s;
    size_t i, nt;
    int highs = strncmp(lines[0], "Model status", 12) == 0, invals = !highs;

    for (i = 0; i < n; i++) {
        if (highs && strncmp(lines[i], "Model status", 12) == 0 && i + 1 < n) {
            s = lines[++i];
            r->status = strncmp(s, "Optimal", 7) == 0  ? AS_SOL_OPTIMAL
                        : strstr(s, "nfeasible") != NULL ? AS_SOL_INFEASIBLE
                                                         : AS_SOL_FEASIBLE;
            continue;
        }
        if (lines[i][0] == '#') {
            if ((s = strstr(lines[i], "Objective value =")) != NULL)
                AS_CHECK(read_objective(r, i + 1, s + 17));
            if (highs)
                invals = strncmp(lines[i], "# Columns", 9) == 0;
            continue;
        }
        nt = split(lines[i], tok, 4);
        if (nt == 0 || !invals) {
            if (highs && nt >= 1 && strcmp(tok[0], "Objective") == 0) {
                if (nt != 2)
                    return as_errf(r->err, AS_EPARSE, "%s:%zu: expected 'Objective VALUE'",
                                   r->path, i + 1);
                AS_CHECK(read_objective(r, i + 1, tok[1]));
            }
            continue;
        }
        if (nt != 2)
            return as_errf(r->err, AS_EPARSE, "%s:%zu: expected 'NAME VALUE'", r->path, i + 1);
        AS_CHECK(set_named(r, i + 1, tok[0], tok[1]));
    }
    if (r->nvals == 0 && r->status != AS_SOL_INFEASIBLE)
        return as_errf(r->err, AS_EPARSE, "%s: no variable values (not a solution file?)",
                       r->path);
    return AS_OK;
}

/* Split BUF into lines (in place); returns them, skipping leading blank lines. */
static char **
split_lines(char *buf, size_t *n)
{
    AS_VEC(char *) v = {0};
    char *s = buf, *e;

    while (*s == '\n' || *s == '\r' || *s == ' ')
        s++;
    while (*s != '\0') {
        e = strchr(s, '\n');
        AS_VEC_PUSH(&v, s);
        if (e == NULL)
            break;
        *e = '\0';
        if (e > s && e[-1] == '\r')
            e[-1] = '\0';
        s = e + 1;
    }
    *n = v.n;
    return v.v;
}

int
as_ilp_parse_solution(const as_ilp *ilp, const char *path, const char *text, size_t len, double *x,
                      as_sol_status *status, double *objective, as_err *err)
{
    solreader r = {ilp, path, x, AS_SOL_UNKNOWN, NAN, 0, err};
    char *buf, **lines;
    size_t n;
    int rc, binary;

    memset(x, 0, as_ilp_data(ilp)->ncols * sizeof *x);
    binary = memchr(text, '\0', len) != NULL;
    buf = as_xstrndup(text, len);
    lines = split_lines(buf, &n);
    if (n == 0 || binary) {
        rc = as_errf(err, AS_EPARSE, "%s: empty or binary file, not a solution", path);
    } else if (strstr(lines[0], "objective value") != NULL) {
        rc = read_cbc(&r, lines, n);
    } else if (lines[0][0] == 'c' && (lines[0][1] == ' ' || lines[0][1] == '\0')) {
        rc = read_glpk_raw(&r, lines, n);
    } else if (strncmp(lines[0], "s mip", 5) == 0) {
        rc = read_glpk_raw(&r, lines, n);
    } else if (strncmp(lines[0], "Problem:", 8) == 0) {
        rc = read_glpk_print(&r, lines, n);
    } else {
        rc = read_namevalue(&r, lines, n);
    }
    if (rc == AS_OK) {
        *status = r.status;
        *objective = r.objective;
    }
    free(lines);
    free(buf);
    return rc;
}

int
as_ilp_read_solution(const as_ilp *ilp, const char *path, double *x, as_sol_status *status,
                     double *objective, as_err *err)
{
    char *buf;
    size_t len;
    int rc;

    AS_CHECK(as_read_file(path, &buf, &len, err));
    rc = as_ilp_parse_solution(ilp, path, buf, len, x, status, objective, err);
    free(buf);
    return rc;
}
