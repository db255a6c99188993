/* ilp.c -- lowering a choice problem to Alpa's ILP, solver-neutral.
 *
 * DESIGN: rows are assembled one at a time into a pending buffer that is
 * sorted by column and merged (a node live twice at one point, or an alias
 * of a node with itself, adds coefficients), then appended as triplets.  The
 * CSC copy is built at the end for backends that load by column (CBC).
 * Edge variables are continuous: with the equality marginals
 *   sum_q e[p,q] = s_u[p],   sum_p e[p,q] = s_v[q]
 * and s binary, e is the outer product of two unit vectors, hence integral
 * (docs/ilp.md), so branching never needs them.
 */
#include "config.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formulate/ilp.h"

/* The e columns of one edge: first + class(s_u) * nc + class(s_v). */
typedef struct eblock {
    size_t u, v, first, nc;
    const size_t *rc, *cc;  /**< class of each strategy of u / v (arena) */
} eblock;

/* The seg_<j> row of a liveness segment: column COL = the triplets [t0, t1) but COL's own. */
typedef struct segrow {
    size_t col, t0, t1;
} segrow;

typedef struct term {
    int col;
    double val;
} term;

struct as_ilp {
    as_arena *arena;
    as_ilp_view view;
    AS_VEC(double) obj, clb, cub;
    AS_VEC(unsigned char) cint;
    AS_VEC(const char *) cname;
    AS_VEC(double) rlb, rub;
    AS_VEC(const char *) rname;
    AS_VEC(int) ti, tj;
    AS_VEC(double) tv;
    AS_VEC(term) pend;      /**< the row being assembled */
    size_t *scol;           /**< first column of each node */
    as_strmap names;        /**< column name -> index */
    size_t nnodes;
    const size_t *k;        /**< strategies per node (borrowed from the build) */
    size_t *kk;
    AS_VEC(eblock) eb;      /**< e columns of each non-constant edge */
    size_t *segcol;         /**< mseg_<j> column of each liveness segment, or SIZE_MAX */
    AS_VEC(segrow) segrows; /**< the seg_<j> rows, parents first */
};

/* Format a column or row name into the local NAME. */
#define NAMEF(ilp, ...) ((void)(ilp), (void)snprintf(name, sizeof name, __VA_ARGS__))

void
as_ilp_opts_init(as_ilp_opts *o)
{
    memset(o, 0, sizeof *o);
}

static void
add_col(as_ilp *ilp, const char *name, double obj, double ub, int integer)
{
    AS_VEC_PUSH(&ilp->obj, obj);
    AS_VEC_PUSH(&ilp->clb, 0.0);
    AS_VEC_PUSH(&ilp->cub, ub);
    AS_VEC_PUSH(&ilp->cint, (unsigned char)integer);
    AS_VEC_PUSH(&ilp->cname, as_arena_strdup(ilp->arena, name));
    as_strmap_put(&ilp->names, ilp->cname.v[ilp->cname.n - 1], (int64_t)(ilp->cname.n - 1));
}

static void
row_add(as_ilp *ilp, size_t col, double val)
{
    term t = {(int)col, val};

    AS_VEC_PUSH(&ilp->pend, t);
}

static int
term_cmp(const void *a, const void *b)
{
    const term *x = a, *y = b;

    return (x->col > y->col) - (x->col < y->col);
}

/* Close the pending row: merge duplicate columns, drop zeros, append. */
static void
row_end(as_ilp *ilp, const char *name, double lb, double ub)
{
    size_t i, n = 0;
    int row = (int)ilp->rlb.n;

    qsort(ilp->pend.v, ilp->pend.n, sizeof(term), term_cmp);
    for (i = 0; i < ilp->pend.n; i++) {
        if (n > 0 && ilp->pend.v[n - 1].col == ilp->pend.v[i].col)
            ilp->pend.v[n - 1].val += ilp->pend.v[i].val;
        else
            ilp->pend.v[n++] = ilp->pend.v[i];
    }
    for (i = 0; i < n; i++) {
        if (ilp->pend.v[i].val == 0)
            continue;
        AS_VEC_PUSH(&ilp->ti, row);
        AS_VEC_PUSH(&ilp->tj, ilp->pend.v[i].col);
        AS_VEC_PUSH(&ilp->tv, ilp->pend.v[i].val);
    }
    ilp->pend.n = 0;
    AS_VEC_PUSH(&ilp->rlb, lb);
    AS_VEC_PUSH(&ilp->rub, ub);
    AS_VEC_PUSH(&ilp->rname, as_arena_strdup(ilp->arena, name));
}

static int
is_const(const double *r, size_t n)
{
    size_t i;

    for (i = 1; i < n; i++)
        if (r[i] != r[0])
            return 0;
    return 1;
}

/* s columns and one_<id> rows. */
static void
build_nodes(as_ilp *ilp, const as_problem *p, const size_t *ids, const size_t *const *sids)
{
    char name[64];
    size_t v, s;

    for (v = 0; v < ilp->nnodes; v++) {
        const as_pnode *nd = as_problem_node(p, v);
        ilp->scol[v] = ilp->obj.n;
        for (s = 0; s < nd->k; s++) {
            NAMEF(ilp, "s_%zu_%zu", ids ? ids[v] : v, sids ? sids[v][s] : s);
            add_col(ilp, name, nd->c[s] + nd->d[s], 1.0, 1);
        }
    }
    for (v = 0; v < ilp->nnodes; v++) {
        for (s = 0; s < ilp->kk[v]; s++)
            row_add(ilp, ilp->scol[v] + s, 1.0);
        NAMEF(ilp, "one_%zu", ids ? ids[v] : v);
        row_end(ilp, name, 1.0, 1.0);
    }
}

/*
 * Classes of identical rows (BY_ROW) or columns of the KU x KV matrix R:
 * CLS[i] gets the class of row/column i, REP[c] the first member of class
 * c; returns the number of classes.
 */
static size_t
edge_classes(const double *r, size_t ku, size_t kv, int by_row, size_t *cls, size_t *rep)
{
    size_t n = by_row ? ku : kv, len = by_row ? kv : ku, i, c, x, nc = 0;

    for (i = 0; i < n; i++) {
        for (c = 0; c < nc; c++) {
            for (x = 0; x < len; x++) {
                double a = by_row ? r[i * kv + x] : r[x * kv + i];
                double b = by_row ? r[rep[c] * kv + x] : r[x * kv + rep[c]];
                if (a != b)
                    break;
            }
            if (x == len)
                break;
        }
        if (c == nc)
            rep[nc++] = i;
        cls[i] = c;
    }
    return nc;
}

/*
 * e columns and the marginal rows of every non-constant edge, aggregated
 * over classes of identical rows and columns (docs/ilp.md): strategies of u
 * whose rows of R are equal share one marginal row, likewise for v.  An
 * edge whose matrix depends on one end only adds its costs to that end's s
 * columns; a constant one goes to the offset.
 */
static void
build_edges(as_ilp *ilp, const as_problem *p)
{
    char name[80];
    size_t j, ku, kv, a, b, first, nr, nc, kmax = 1;
    size_t *rc, *cc, *rrep, *crep;

    for (j = 0; j < ilp->nnodes; j++)
        kmax = ilp->kk[j] > kmax ? ilp->kk[j] : kmax;
    rc = as_xcalloc(4 * kmax, sizeof *rc);
    cc = rc + kmax;
    rrep = cc + kmax;
    crep = rrep + kmax;
    for (j = 0; j < as_problem_nedges(p); j++) {
        const as_pedge *e = as_problem_edge(p, j);
        ku = ilp->kk[e->u];
        kv = ilp->kk[e->v];
        if (is_const(e->r, ku * kv)) {
            ilp->view.offset += e->r[0];
            continue;
        }
        nr = edge_classes(e->r, ku, kv, 1, rc, rrep);
        nc = edge_classes(e->r, ku, kv, 0, cc, crep);
        if (nr == 1 || nc == 1) { /* R[p,q] = f(q) or g(p): a node cost */
            for (b = 0; nr == 1 && b < kv; b++)
                ilp->obj.v[ilp->scol[e->v] + b] += e->r[b];
            for (a = 0; nc == 1 && a < ku; a++)
                ilp->obj.v[ilp->scol[e->u] + a] += e->r[a * kv];
            continue;
        }
        first = ilp->obj.n;
        {
            eblock blk = {e->u, e->v, first, nc, NULL, NULL};
            size_t *x = as_arena_alloc(ilp->arena, (ku + kv) * sizeof *x);
            memcpy(x, rc, ku * sizeof *x);
            memcpy(x + ku, cc, kv * sizeof *x);
            blk.rc = x;
            blk.cc = x + ku;
            AS_VEC_PUSH(&ilp->eb, blk);
        }
        for (a = 0; a < nr; a++)
            for (b = 0; b < nc; b++) {
                NAMEF(ilp, "e_%zu_%zu_%zu", j, a, b);
                add_col(ilp, name, e->r[rrep[a] * kv + crep[b]], 1.0, 0);
            }
        for (a = 0; a < nr; a++) {
            size_t q;
            for (b = 0; b < nc; b++)
                row_add(ilp, first + a * nc + b, 1.0);
            for (q = 0; q < ku; q++)
                if (rc[q] == a)
                    row_add(ilp, ilp->scol[e->u] + q, -1.0);
            NAMEF(ilp, "eu_%zu_%zu", j, a);
            row_end(ilp, name, 0.0, 0.0);
        }
        for (b = 0; b < nc; b++) {
            size_t q;
            for (a = 0; a < nr; a++)
                row_add(ilp, first + a * nc + b, 1.0);
            for (q = 0; q < kv; q++)
                if (cc[q] == b)
                    row_add(ilp, ilp->scol[e->v] + q, -1.0);
            NAMEF(ilp, "ev_%zu_%zu", j, b);
            row_end(ilp, name, 0.0, 0.0);
        }
    }
    free(rc);
}

/* Segment C (0: as_plive.seg, then as_plive.more) of point L, or AS_NO_SEG. */
static size_t
point_seg(const as_plive *l, int c)
{
    return c == 0 ? l->seg : l->more[c - 1];
}

/*
 * The liveness segments that get a column: those of a memory row that can bind and their
 * parents (USED[j] = 1, nsegs entries); returns how many.  None without a budget.
 */
static size_t
seg_used(const as_problem *p, unsigned char *used)
{
    size_t t, j, n = 0;

    for (t = 0; as_problem_memory(p) > 0 && t < as_problem_nlive(p); t++) {
        const as_plive *l = as_problem_live(p, t);
        if (!as_problem_live_binds(p, t))
            continue;
        int c;
        for (c = 0; c <= AS_LIVE_MORE; c++)
            if (point_seg(l, c) != AS_NO_SEG)
                used[point_seg(l, c)] = 1;
    }
    for (j = as_problem_nsegs(p); j-- > 0;)
        if (used[j]) {
            size_t up = as_problem_live_seg(p, j)->seg;
            n++;
            if (up != AS_NO_SEG)
                used[up] = 1;
        }
    return n;
}

/*
 * mseg_<j> columns and seg_<j> rows: the bytes of liveness segment j (its parent's
 * included), once, in units of the budget: mseg_<j> = its entries + mseg_<parent>.  A
 * memory row adds the column of its segment instead of repeating the entries.
 */
static void
build_segs(as_ilp *ilp, const as_problem *p)
{
    char name[64];
    size_t ns = as_problem_nsegs(p), j, i, s;
    unsigned char *used = as_xcalloc(ns + 1, 1);
    double mem = as_problem_memory(p), *hi = as_xcalloc(ns + 1, sizeof *hi), mx;

    ilp->segcol = as_xmalloc((ns + 1) * sizeof *ilp->segcol);
    for (j = 0; j < ns; j++)
        ilp->segcol[j] = SIZE_MAX;
    for (j = 0, ns = seg_used(p, used) > 0 ? ns : 0; j < ns; j++) {
        const as_plive *g = as_problem_live_seg(p, j);
        segrow r;
        hi[j] = g->seg != AS_NO_SEG ? hi[g->seg] : 0;
        for (i = 0; i < g->n; i++) {
            mx = 0;
            for (s = 0; s < ilp->kk[g->nodes[i]]; s++)
                mx = fmax(mx, g->m[i][s] / mem);
            hi[j] += mx;
        }
        if (!used[j])
            continue;
        ilp->segcol[j] = r.col = ilp->obj.n;
        NAMEF(ilp, "mseg_%zu", j);
        add_col(ilp, name, 0.0, hi[j] * (1 + 1e-9) + 1e-12, 0);
        for (i = 0; i < g->n; i++)
            for (s = 0; s < ilp->kk[g->nodes[i]]; s++)
                row_add(ilp, ilp->scol[g->nodes[i]] + s, g->m[i][s] / mem);
        if (g->seg != AS_NO_SEG)
            row_add(ilp, ilp->segcol[g->seg], 1.0);
        row_add(ilp, r.col, -1.0);
        r.t0 = ilp->tv.n;
        NAMEF(ilp, "seg_%zu", j);
        row_end(ilp, name, 0.0, 0.0);
        r.t1 = ilp->tv.n;
        AS_VEC_PUSH(&ilp->segrows, r);
    }
    free(used);
    free(hi);
}

/* Bits of X with -0 as 0, so that equal values (==) hash alike. */
static uint64_t
dbits(double x)
{
    uint64_t b = 0;

    if (x != 0)
        memcpy(&b, &x, sizeof b);
    return b;
}

typedef struct hrow {
    uint64_t h;
    size_t i;
} hrow;

static int
hrow_cmp(const void *a, const void *b)
{
    const hrow *x = a, *y = b;

    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/*
 * Shared memory entries: the entries of the binding mem_<t> rows, numbered in row order
 * (point t's entry i), grouped by (node, memory vector) with == on every coefficient.  A
 * group that enough rows hold becomes one continuous column mv_<c> = Σ_p m[p] · s[p] (in
 * units of M) and a defining row mvd_<c>; those rows then hold mv_<c> (coefficient 1)
 * instead of the vector.  The reductions write every point's row out in full (per leader,
 * the followers' vectors summed), so a refit round's rows repeat the same few vectors:
 * gpt3-1.3b on 2x4 under 10.1 GiB, 514k entries and 1336 distinct pairs, 11.9 M non-zeros
 * before.  The LP is the same (mv_<c> is a name for a sum).
 */
typedef struct mvshare {
    size_t nent;     /**< entries of the binding rows */
    size_t *cls;     /**< each entry's shared column (0..ncls), or SIZE_MAX: written out */
    size_t ncls;
    size_t *rep_t, *rep_i; /**< the first entry of each shared column: point, entry */
    size_t *nz;      /**< non-zero coefficients of each shared column's vector */
} mvshare;

/* Non-zeros of entry I of L as one row's only terms (m[p] / MEM != 0). */
static size_t
entry_nz(const as_problem *p, const as_plive *l, size_t i, double mem, int *neg)
{
    size_t s, nz = 0, k = as_problem_node(p, l->nodes[i])->k;

    for (s = 0; s < k; s++) {
        nz += l->m[i][s] / mem != 0;
        *neg |= l->m[i][s] < 0;
    }
    return nz;
}

static void
mvshare_init(mvshare *sh, const as_problem *p)
{
    size_t t, i, e, x, c, nent = 0, nc = 0, nlead = 0, *cnt, *rt, *ri, *num, *lead;
    double mem = as_problem_memory(p);
    hrow *h;

    memset(sh, 0, sizeof *sh);
    for (t = 0; mem > 0 && t < as_problem_nlive(p); t++)
        if (as_problem_live_binds(p, t))
            nent += as_problem_live(p, t)->n;
    sh->nent = nent;
    sh->cls = as_xmalloc((nent + 1) * sizeof *sh->cls);
    if (nent == 0)
        return;
    h = as_xcalloc(nent, sizeof *h);
    rt = as_xcalloc(nent, sizeof *rt);
    ri = as_xcalloc(nent, sizeof *ri);
    for (t = 0, e = 0; t < as_problem_nlive(p); t++) {
        const as_plive *l = as_problem_live(p, t);
        if (!as_problem_live_binds(p, t))
            continue;
        for (i = 0; i < l->n; i++, e++) {
            size_t k = as_problem_node(p, l->nodes[i])->k;
            uint64_t a = 0x9e3779b97f4a7c15ull ^ (uint64_t)l->nodes[i];
            for (x = 0; x < k; x++) {
                a ^= dbits(l->m[i][x]);
                a *= 0x100000001b3ull;
                a ^= a >> 29;
            }
            h[e].h = a;
            h[e].i = e;
            rt[e] = t;
            ri[e] = i;
        }
    }
    /* groups in order of their first entry: a group's first member sorts first in its hash */
    qsort(h, nent, sizeof *h, hrow_cmp);
    cnt = as_xcalloc(nent, sizeof *cnt);
    num = as_xcalloc(nent, sizeof *num); /* group of each group-leading entry */
    lead = as_xcalloc(nent, sizeof *lead); /* the groups' first entries in this hash */
    for (e = 0; e < nent; e++) {
        size_t me = h[e].i;
        const as_plive *l = as_problem_live(p, rt[me]);
        if (e == 0 || h[e].h != h[e - 1].h)
            nlead = 0; /* the entries of a new hash start here */
        for (c = 0; c < nlead; c++) {
            size_t o = lead[c], k;
            const as_plive *lo = as_problem_live(p, rt[o]);
            if (lo->nodes[ri[o]] != l->nodes[ri[me]])
                continue;
            k = as_problem_node(p, l->nodes[ri[me]])->k;
            for (x = 0; x < k && lo->m[ri[o]][x] == l->m[ri[me]][x]; x++)
                ;
            if (x == k)
                break;
        }
        if (c == nlead)
            lead[nlead++] = me; /* a new group */
        sh->cls[me] = lead[c]; /* its group's first entry */
        cnt[sh->cls[me]]++;
    }
    free(lead);
    free(h);
    /* a shared column where it saves non-zeros: NZ in each of CNT rows, against a column, its
       row (NZ + 1) and one coefficient per row */
    for (e = 0; e < nent; e++) {
        int neg = 0;
        size_t nz;
        if (sh->cls[e] != e || cnt[e] < 2) {
            num[e] = SIZE_MAX;
            continue;
        }
        nz = entry_nz(p, as_problem_live(p, rt[e]), ri[e], mem, &neg);
        if (neg || cnt[e] * nz <= nz + 1 + cnt[e]) {
            num[e] = SIZE_MAX;
            continue;
        }
        num[e] = nc;
        cnt[nc] = nz; /* cnt[0..nc) becomes the columns' non-zeros (nc <= e) */
        rt[nc] = rt[e];
        ri[nc] = ri[e];
        nc++;
    }
    for (e = 0; e < nent; e++)
        sh->cls[e] = num[sh->cls[e]];
    free(num);
    sh->ncls = nc;
    sh->nz = cnt;
    sh->rep_t = rt;
    sh->rep_i = ri;
}

static void
mvshare_free(mvshare *sh)
{
    free(sh->cls);
    free(sh->nz);
    free(sh->rep_t);
    free(sh->rep_i);
    memset(sh, 0, sizeof *sh);
}

/* mv_<c> columns and mvd_<c> rows (defining rows, as the segments': as_ilp_point sets them). */
static void
build_mvshare(as_ilp *ilp, const as_problem *p, const mvshare *sh, size_t *mvcol)
{
    char name[64];
    double mem = as_problem_memory(p);
    size_t c, s;

    for (c = 0; c < sh->ncls; c++) {
        const as_plive *l = as_problem_live(p, sh->rep_t[c]);
        size_t i = sh->rep_i[c], v = l->nodes[i];
        double mx = 0;
        segrow r;
        for (s = 0; s < ilp->kk[v]; s++)
            mx = fmax(mx, l->m[i][s] / mem);
        mvcol[c] = r.col = ilp->obj.n;
        NAMEF(ilp, "mv_%zu", c);
        add_col(ilp, name, 0.0, mx * (1 + 1e-9) + 1e-12, 0);
        for (s = 0; s < ilp->kk[v]; s++)
            row_add(ilp, ilp->scol[v] + s, l->m[i][s] / mem);
        row_add(ilp, r.col, -1.0);
        r.t0 = ilp->tv.n;
        NAMEF(ilp, "mvd_%zu", c);
        row_end(ilp, name, 0.0, 0.0);
        r.t1 = ilp->tv.n;
        AS_VEC_PUSH(&ilp->segrows, r);
    }
}

/* Memory, alias, follow and no-good rows. */
static void
build_rows(as_ilp *ilp, const as_problem *p, const size_t *ids)
{
    char name[96];
    size_t t, i, s, q, v;
    double mem = as_problem_memory(p);
    int c;

    mvshare sh;
    size_t *mvcol, e = 0;

    build_segs(ilp, p);
    mvshare_init(&sh, p);
    mvcol = as_xcalloc(sh.ncls + 1, sizeof *mvcol);
    build_mvshare(ilp, p, &sh, mvcol);
    for (t = 0; mem > 0 && t < as_problem_nlive(p); t++) {
        const as_plive *l = as_problem_live(p, t);
        if (!as_problem_live_binds(p, t))
            continue;
        /* in units of the budget: byte counts (1e9) beside 0/1 rows upset LP tolerances */
        for (i = 0; i < l->n; i++, e++) {
            if (sh.cls[e] != SIZE_MAX) {
                row_add(ilp, mvcol[sh.cls[e]], 1.0);
                continue;
            }
            for (s = 0; s < ilp->kk[l->nodes[i]]; s++)
                row_add(ilp, ilp->scol[l->nodes[i]] + s, l->m[i][s] / mem);
        }
        for (c = 0; c <= AS_LIVE_MORE; c++)
            if (point_seg(l, c) != AS_NO_SEG)
                row_add(ilp, ilp->segcol[point_seg(l, c)], 1.0);
        NAMEF(ilp, "mem_%zu", t);
        row_end(ilp, name, -HUGE_VAL, (mem - l->resident) / mem);
    }
    free(mvcol);
    mvshare_free(&sh);
    for (i = 0; i < as_problem_naliases(p); i++) {
        const as_palias *a = as_problem_alias(p, i);
        for (s = 0; s < ilp->kk[a->a]; s++)
            for (q = 0; q < ilp->kk[a->b]; q++) {
                if (!a->bad[s * ilp->kk[a->b] + q])
                    continue;
                row_add(ilp, ilp->scol[a->a] + s, 1.0);
                row_add(ilp, ilp->scol[a->b] + q, 1.0);
                NAMEF(ilp, "alias_%zu_%zu_%zu", i, s, q);
                row_end(ilp, name, -HUGE_VAL, 1.0);
            }
    }
    for (v = 0; v < ilp->nnodes; v++) {
        size_t f = as_problem_node(p, v)->follow;
        for (s = 0; f != AS_NO_FOLLOW && s < ilp->kk[v]; s++) {
            row_add(ilp, ilp->scol[v] + s, 1.0);
            row_add(ilp, ilp->scol[f] + s, -1.0);
            NAMEF(ilp, "fol_%zu_%zu", ids ? ids[v] : v, s);
            row_end(ilp, name, 0.0, 0.0);
        }
    }
    for (i = 0; i < as_problem_nnogoods(p); i++) {
        const size_t *ng = as_problem_nogood(p, i);
        for (v = 0; v < ilp->nnodes; v++)
            row_add(ilp, ilp->scol[v] + ng[v], 1.0);
        NAMEF(ilp, "cut_%zu", i);
        row_end(ilp, name, -HUGE_VAL, (double)ilp->nnodes - 1.0);
    }
}

/* CSC copy of the triplets. */
static void
build_csc(as_ilp *ilp)
{
    size_t n = ilp->obj.n, nnz = ilp->tv.n, i;
    int *beg = as_arena_calloc(ilp->arena, n + 1, sizeof *beg);
    int *ind = as_arena_calloc(ilp->arena, nnz + 1, sizeof *ind);
    double *val = as_arena_calloc(ilp->arena, nnz + 1, sizeof *val);
    int *pos = as_xcalloc(n + 1, sizeof *pos);

    for (i = 0; i < nnz; i++)
        beg[ilp->tj.v[i] + 1]++;
    for (i = 0; i < n; i++)
        beg[i + 1] += beg[i];
    memcpy(pos, beg, n * sizeof *pos);
    for (i = 0; i < nnz; i++) {
        int at = pos[ilp->tj.v[i]]++;
        ind[at] = ilp->ti.v[i];
        val[at] = ilp->tv.v[i];
    }
    free(pos);
    ilp->view.cbeg = beg;
    ilp->view.cind = ind;
    ilp->view.cval = val;
}

/* Upper bound on the number of columns + nonzeros, to refuse int overflow early. */
static double
ilp_estimate(const as_problem *p)
{
    double x = 0;
    size_t j;

    for (j = 0; j < as_problem_nedges(p); j++)
        x += 3.0 * (double)as_problem_node(p, as_problem_edge(p, j)->u)->k *
             (double)as_problem_node(p, as_problem_edge(p, j)->v)->k;
    return x;
}

/*
 * Columns costing AS_ILP_FORBIDDEN_COST or more (Alpa's INFINITY_COST is 1e13) are forbidden
 * choices: upper bound 0 and cost 0.  Left in, GLPK's tolerances and scaling drown every real
 * cost beside them and it calls a wrong plan optimal (docs/ilp.md).  A forbidden e column
 * forbids its pair of strategy classes through the marginal rows.
 */
static void
forbid_huge(as_ilp *ilp)
{
    size_t j;

    for (j = 0; j < ilp->obj.n; j++)
        if (ilp->obj.v[j] >= AS_ILP_FORBIDDEN_COST) {
            ilp->obj.v[j] = 0.0;
            ilp->cub.v[j] = 0.0;
        }
}

static int
ilp_build(const as_problem *p, const as_ilp_opts *o, as_ilp **out, as_err *err)
{
    as_ilp *ilp;
    size_t v;

    if (ilp_estimate(p) > (double)INT_MAX / 2)
        return as_errf(err, AS_EUSAGE, "ILP too large (about %.3g non-zeros)", ilp_estimate(p));
    ilp = as_xcalloc(1, sizeof *ilp);
    ilp->arena = as_arena_new();
    as_strmap_init(&ilp->names);
    ilp->nnodes = as_problem_nnodes(p);
    ilp->scol = as_xcalloc(ilp->nnodes + 1, sizeof *ilp->scol);
    ilp->kk = as_xcalloc(ilp->nnodes + 1, sizeof *ilp->kk);
    for (v = 0; v < ilp->nnodes; v++)
        ilp->kk[v] = as_problem_node(p, v)->k;
    ilp->view.offset = as_problem_offset(p);
    build_nodes(ilp, p, o ? o->node_ids : NULL, o ? o->strategy_ids : NULL);
    build_edges(ilp, p);
    build_rows(ilp, p, o ? o->node_ids : NULL);
    forbid_huge(ilp);
    AS_VEC_FREE(&ilp->pend);
    ilp->view.ncols = ilp->obj.n;
    ilp->view.nrows = ilp->rlb.n;
    ilp->view.nnz = ilp->tv.n;
    ilp->view.obj = ilp->obj.v;
    ilp->view.col_lb = ilp->clb.v;
    ilp->view.col_ub = ilp->cub.v;
    ilp->view.col_int = ilp->cint.v;
    ilp->view.col_name = ilp->cname.v;
    ilp->view.row_lb = ilp->rlb.v;
    ilp->view.row_ub = ilp->rub.v;
    ilp->view.row_name = ilp->rname.v;
    ilp->view.ti = ilp->ti.v;
    ilp->view.tj = ilp->tj.v;
    ilp->view.tv = ilp->tv.v;
    build_csc(ilp);
    *out = ilp;
    return AS_OK;
}

int
as_ilp_build(const as_problem *p, const as_ilp_opts *o, as_ilp **out, as_err *err)
{
    return ilp_build(p, o, out, err);
}

/* ---- sizes without building (as_ilp_count) ---- */


/*
 * Number of distinct rows (BY_ROW) or columns of the KU x KV matrix R, as
 * edge_classes counts them (== on every entry), by hashing: O(KU KV log).
 * H has room for max(KU, KV) entries, REP for as many indices.
 */
static size_t
count_classes(const double *r, size_t ku, size_t kv, int by_row, hrow *h, size_t *rep)
{
    size_t n = by_row ? ku : kv, len = by_row ? kv : ku, i, x, c, nc = 0, start = 0;

    for (i = 0; i < n; i++) {
        uint64_t a = 0x9e3779b97f4a7c15ull;
        for (x = 0; x < len; x++) {
            a ^= dbits(by_row ? r[i * kv + x] : r[x * kv + i]);
            a *= 0x100000001b3ull;
            a ^= a >> 29;
        }
        h[i].h = a;
        h[i].i = i;
    }
    qsort(h, n, sizeof *h, hrow_cmp);
    for (i = 0; i < n; i++) {
        if (i > 0 && h[i].h != h[i - 1].h)
            start = nc; /* classes of this hash start here */
        for (c = start; c < nc; c++) {
            for (x = 0; x < len; x++) {
                double a = by_row ? r[h[i].i * kv + x] : r[x * kv + h[i].i];
                double b = by_row ? r[rep[c] * kv + x] : r[x * kv + rep[c]];
                if (a != b)
                    break;
            }
            if (x == len)
                break;
        }
        if (c == nc)
            rep[nc++] = h[i].i;
    }
    return nc;
}

/*
 * The sizes as_ilp_build gives, counted from P without building: the
 * columns, rows and non-zeros of each part in the order build_nodes,
 * build_edges and build_rows add them (row_end's merging of a column that
 * appears twice in a row and dropping of zeros included).  test_ilp checks
 * it against the built ILP.
 */
/* An edge by its matrix address, for counting each shared matrix once. */
typedef struct edge_ptr {
    uintptr_t r;
    size_t j;
} edge_ptr;

static int
edge_ptr_cmp(const void *a, const void *b)
{
    const edge_ptr *x = a, *y = b;

    if (x->r != y->r)
        return x->r < y->r ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

/*
 * Non-zeros of the entries of L in one row (ACC, TOUCHED: scratch over the s columns); CLS
 * (NULL: none) the entries' shared columns (mvshare), which are not written out here.
 */
static size_t
count_entries(const as_problem *p, const as_plive *l, const size_t *cls, const size_t *scol,
              double *acc, size_t *touched)
{
    double mem = as_problem_memory(p);
    size_t i, s, ntouched = 0, nnz = 0;

    for (i = 0; i < l->n; i++) {
        size_t u = l->nodes[i];
        if (cls != NULL && cls[i] != SIZE_MAX)
            continue;
        for (s = 0; s < as_problem_node(p, u)->k; s++) {
            double x = l->m[i][s] / mem;
            if (x == 0)
                continue;
            if (acc[scol[u] + s] == 0)
                touched[ntouched++] = scol[u] + s;
            acc[scol[u] + s] += x;
        }
    }
    for (i = 0; i < ntouched; i++) {
        nnz += acc[touched[i]] != 0;
        acc[touched[i]] = 0;
    }
    return nnz;
}

int
as_ilp_count(const as_problem *p, as_ilp_stats *st, as_err *err)
{
    size_t n = as_problem_nnodes(p), v, j, t, i, s, q, kmax = 1, ks = 0, nr = 1, nc = 1;
    size_t lku = 0, lkv = 0, ent, mc, *seen;
    mvshare sh;
    edge_ptr *ord;
    size_t *scol, *rep, *touched;
    double mem = as_problem_memory(p), *acc;
    unsigned char *used;
    hrow *h;

    if (ilp_estimate(p) > (double)INT_MAX / 2)
        return as_errf(err, AS_EUSAGE, "ILP too large (about %.3g non-zeros)", ilp_estimate(p));
    memset(st, 0, sizeof *st);
    scol = as_xcalloc(n + 1, sizeof *scol);
    for (v = 0; v < n; v++) {
        size_t k = as_problem_node(p, v)->k;
        scol[v] = ks;
        ks += k;
        kmax = k > kmax ? k : kmax;
    }
    /* s columns, one_<id> rows */
    st->cols = st->int_cols = ks;
    st->rows = n;
    st->nnz = ks;
    /* e columns, eu / ev rows */
    h = as_xcalloc(kmax + 1, sizeof *h);
    rep = as_xcalloc(kmax + 1, sizeof *rep);
    /* edges sharing one matrix (as_problem_add_edge_ref) are counted once: in pointer order */
    ord = as_xcalloc(as_problem_nedges(p) + 1, sizeof *ord);
    for (j = 0; j < as_problem_nedges(p); j++) {
        ord[j].r = (uintptr_t)as_problem_edge(p, j)->r;
        ord[j].j = j;
    }
    qsort(ord, as_problem_nedges(p), sizeof *ord, edge_ptr_cmp);
    for (i = 0; i < as_problem_nedges(p); i++) {
        const as_pedge *e = as_problem_edge(p, ord[i].j);
        size_t ku = as_problem_node(p, e->u)->k, kv = as_problem_node(p, e->v)->k;
        if (i == 0 || ord[i].r != ord[i - 1].r || ku != lku || kv != lkv) {
            lku = ku;
            lkv = kv;
            if (is_const(e->r, ku * kv)) {
                nr = nc = 1;
            } else {
                nr = count_classes(e->r, ku, kv, 1, h, rep);
                nc = count_classes(e->r, ku, kv, 0, h, rep);
            }
        }
        if (nr == 1 || nc == 1)
            continue;
        st->cols += nr * nc;
        st->rows += nr + nc;
        st->nnz += 2 * nr * nc + ku + kv;
    }
    free(h);
    free(rep);
    free(ord);
    /* seg_<j> and mem_<t>: the coefficients per s column, summed (a node live twice adds up) */
    acc = as_xcalloc(ks + 1, sizeof *acc);
    touched = as_xcalloc(ks + 1, sizeof *touched);
    used = as_xcalloc(as_problem_nsegs(p) + 1, 1);
    seg_used(p, used);
    for (j = 0; j < as_problem_nsegs(p); j++)
        if (used[j]) { /* mseg_<j>, seg_<j> */
            const as_plive *g = as_problem_live_seg(p, j);
            st->cols++;
            st->rows++;
            st->nnz += count_entries(p, g, NULL, scol, acc, touched) + (g->seg != AS_NO_SEG) + 1;
        }
    free(used);
    /* mv_<c>, mvd_<c>; in mem_<t>, each shared column once */
    mvshare_init(&sh, p);
    st->cols += sh.ncls;
    st->rows += sh.ncls;
    for (mc = 0; mc < sh.ncls; mc++)
        st->nnz += sh.nz[mc] + 1;
    seen = as_xcalloc(sh.ncls + 1, sizeof *seen);
    for (t = 0, ent = 0; mem > 0 && t < as_problem_nlive(p); t++) {
        const as_plive *l = as_problem_live(p, t);
        int c, d;
        if (!as_problem_live_binds(p, t))
            continue;
        st->rows++;
        st->nnz += count_entries(p, l, sh.cls + ent, scol, acc, touched);
        for (i = 0; i < l->n; i++, ent++)
            if (sh.cls[ent] != SIZE_MAX && seen[sh.cls[ent]] != t + 1) {
                seen[sh.cls[ent]] = t + 1;
                st->nnz++;
            }
        for (c = 0; c <= AS_LIVE_MORE; c++) { /* distinct segment columns */
            for (d = 0; d < c && point_seg(l, d) != point_seg(l, c); d++)
                ;
            st->nnz += point_seg(l, c) != AS_NO_SEG && d == c;
        }
    }
    free(seen);
    mvshare_free(&sh);
    free(acc);
    free(touched);
    /* alias_<i>_<p>_<q>: one row per forbidden pair */
    for (i = 0; i < as_problem_naliases(p); i++) {
        const as_palias *a = as_problem_alias(p, i);
        size_t ka = as_problem_node(p, a->a)->k, kb = as_problem_node(p, a->b)->k;
        for (s = 0; s < ka; s++)
            for (q = 0; q < kb; q++)
                if (a->bad[s * kb + q]) {
                    st->rows++;
                    st->nnz += a->a == a->b && s == q ? 1 : 2;
                }
    }
    /* fol_<id>_<p> and cut_<i> */
    for (v = 0; v < n; v++)
        if (as_problem_node(p, v)->follow != AS_NO_FOLLOW) {
            st->rows += as_problem_node(p, v)->k;
            st->nnz += 2 * as_problem_node(p, v)->k;
        }
    st->rows += as_problem_nnogoods(p);
    st->nnz += as_problem_nnogoods(p) * n;
    free(scol);
    return AS_OK;
}

void
as_ilp_free(as_ilp *ilp)
{
    if (ilp == NULL)
        return;
    AS_VEC_FREE(&ilp->obj);
    AS_VEC_FREE(&ilp->clb);
    AS_VEC_FREE(&ilp->cub);
    AS_VEC_FREE(&ilp->cint);
    AS_VEC_FREE(&ilp->eb);
    AS_VEC_FREE(&ilp->segrows);
    free(ilp->segcol);
    AS_VEC_FREE(&ilp->cname);
    AS_VEC_FREE(&ilp->rlb);
    AS_VEC_FREE(&ilp->rub);
    AS_VEC_FREE(&ilp->rname);
    AS_VEC_FREE(&ilp->ti);
    AS_VEC_FREE(&ilp->tj);
    AS_VEC_FREE(&ilp->tv);
    as_strmap_destroy(&ilp->names);
    free(ilp->scol);
    free(ilp->kk);
    as_arena_free(ilp->arena);
    free(ilp);
}

double
as_ilp_obj_scale(const as_ilp *ilp)
{
    double sum = 0;
    size_t j, n = 0;
    int e;

    for (j = 0; j < ilp->obj.n; j++)
        if (ilp->obj.v[j] != 0 && isfinite(ilp->obj.v[j])) {
            sum += log2(fabs(ilp->obj.v[j]));
            n++;
        }
    if (n == 0)
        return 1.0;
    e = (int)lround(-sum / (double)n);
    return ldexp(1.0, e < -900 ? -900 : e > 900 ? 900 : e);
}

const as_ilp_view *
as_ilp_data(const as_ilp *ilp)
{
    return &ilp->view;
}

void
as_ilp_stats_get(const as_ilp *ilp, as_ilp_stats *st)
{
    size_t j;

    st->cols = ilp->view.ncols;
    st->rows = ilp->view.nrows;
    st->nnz = ilp->view.nnz;
    st->int_cols = 0;
    for (j = 0; j < ilp->view.ncols; j++)
        st->int_cols += ilp->view.col_int[j];
}

size_t
as_ilp_scol(const as_ilp *ilp, size_t v, size_t s)
{
    return ilp->scol[v] + s;
}

int
as_ilp_find_col(const as_ilp *ilp, const char *name, size_t *j)
{
    int64_t x;

    if (!as_strmap_get(&ilp->names, name, (size_t)-1, &x))
        return 0;
    *j = (size_t)x;
    return 1;
}

void
as_ilp_point(const as_ilp *ilp, const size_t *choice, double *x)
{
    size_t v, j;

    memset(x, 0, ilp->view.ncols * sizeof *x);
    for (v = 0; v < ilp->nnodes; v++)
        x[ilp->scol[v] + choice[v]] = 1;
    for (j = 0; j < ilp->eb.n; j++) {
        const eblock *b = &ilp->eb.v[j];
        x[b->first + b->rc[choice[b->u]] * b->nc + b->cc[choice[b->v]]] = 1;
    }
    for (j = 0; j < ilp->segrows.n; j++) { /* parents first */
        const segrow *r = &ilp->segrows.v[j];
        size_t i;
        for (i = r->t0; i < r->t1; i++)
            if ((size_t)ilp->tj.v[i] != r->col)
                x[r->col] += ilp->tv.v[i] * x[ilp->tj.v[i]];
    }
}

int
as_ilp_assignment(const as_ilp *ilp, const double *x, size_t *choice, as_err *err)
{
    size_t v, s, col, ones;

    for (v = 0; v < ilp->nnodes; v++) {
        ones = 0;
        for (s = 0; s < ilp->kk[v]; s++) {
            col = ilp->scol[v] + s;
            if (!isfinite(x[col]) || fabs(x[col] - round(x[col])) > 1e-6 ||
                fabs(x[col]) > 1 + 1e-6 || x[col] < -1e-6)
                return as_errf(err, AS_ESOLVER, "variable %s = %g is not 0 or 1",
                               ilp->cname.v[col], x[col]);
            if (x[col] > 0.5) {
                choice[v] = s;
                ones++;
            }
        }
        if (ones != 1)
            return as_errf(err, AS_ESOLVER, "node %zu has %zu strategies set (s_%zu_*), want 1",
                           v, ones, v);
    }
    return AS_OK;
}
