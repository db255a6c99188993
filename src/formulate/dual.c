/* dual.c -- TRW-S message passing, a lower bound with reduced costs, and a
 * plan improved by ICM, for a pairwise choice problem (dual.h).
 *
 * DESIGN: the state is a reparametrisation.  Every edge e = (u, v) keeps
 * two vectors f_eu, f_ev; the current node costs are t_v = c_v + sum_e f_ev
 * and the current edge costs are t_e(p, q) = r_e(p, q) - f_eu(p) - f_ev(q),
 * so every plan costs the same under (t_v, t_e) as under (c_v, r_e).  A
 * forward sweep visits the nodes in index order; node v hands the share
 * g_v = 1 / max(#earlier neighbours, #later neighbours) of its cost to each
 * edge towards a later node w (f_ev -= g_v t_v) and the edge passes its
 * min-marginal on to w (f_ew(q) = min_p r_e(p, q) - f_ev(p)); the backward
 * sweep does the same in reverse order.  That is Kolmogorov's TRW-S with
 * monotonic chains: the bound never decreases.  After a backward sweep
 * every edge has min_q t_e(p, q) = 0, so sum_v min t_v is the bound; the
 * final bound adds the exact min of every t_e to be safe from rounding.
 * Plans are decoded after each backward sweep in index order from the
 * messages of later nodes and the real costs to earlier ones (TRW-S's
 * rounding), and the best is polished by ICM.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "autoshard.h"
#include "formulate/dual.h"

typedef struct inc {
    size_t e;    /**< edge */
    size_t w;    /**< the other end */
    int side;    /**< 0: this node is eu[e]; 1: it is ev[e] */
} inc;

struct as_mrf_state {
    const as_mrf *g;
    size_t *off;     /**< n + 1: incident edges of v are inc[off[v] .. off[v+1]) */
    inc *inc;        /**< sorted by the other end */
    size_t *nbefore; /**< incident edges to lower-index nodes (they come first) */
    double **f;      /**< 2 m vectors: f[2e] (k[eu]), f[2e + 1] (k[ev]) */
    double **t;      /**< n current node costs */
    double *tmp, *msg;
    size_t kmax;
    /* Classes of identical rows and columns of each edge's matrix (a resharding cost
       depends on the layouts only, and many strategies share one): cls[2e] (k[eu]) and
       cls[2e + 1] (k[ev]) give the class of each row / column, ncls[2e], ncls[2e + 1]
       their numbers, rc[e] the ncls[2e] x ncls[2e + 1] matrix of the classes; rc[e] NULL
       when it would not be much smaller. */
    size_t **cls, *ncls;
    double **rc, **rct; /* rct[e]: rc[e] transposed, so that both ends read rows */
    double *gmax, *cmin; /* scratch, kmax */
    double deadline; /**< as_now() after which a run stops after its current sweep; 0 = none */
    int min_iters;   /**< sweeps a run makes past DEADLINE (not past HARD) */
    double hard;     /**< as_now() after which a run stops regardless; 0 = none */
    double stop;     /**< as_now() after which a run gives up mid-sweep (res->stopped); 0 = never */
};
typedef struct as_mrf_state dual;

typedef as_hidx hidx;

static void edge_compress(dual *d, size_t j, hidx *h, size_t *rrep, size_t *crep);

int as_mrf_no_classes = 0;

static int
inc_cmp(const void *a, const void *b)
{
    const inc *x = a, *y = b;

    return (x->w > y->w) - (x->w < y->w);
}

/* Returns 0, or 1 when STOP (an as_now() time, 0 = never) passed while it built the classes. */
static int
dual_init(dual *d, const as_mrf *g, double stop)
{
    size_t v, j, *fill;

    memset(d, 0, sizeof *d);
    d->g = g;
    d->off = as_xcalloc(g->n + 1, sizeof *d->off);
    d->inc = as_xcalloc(2 * g->m + 1, sizeof *d->inc);
    d->nbefore = as_xcalloc(g->n + 1, sizeof *d->nbefore);
    d->f = as_xcalloc(2 * g->m + 1, sizeof *d->f);
    d->t = as_xcalloc(g->n + 1, sizeof *d->t);
    for (j = 0; j < g->m; j++) {
        d->off[g->eu[j] + 1]++;
        d->off[g->ev[j] + 1]++;
        d->f[2 * j] = as_xcalloc(g->k[g->eu[j]], sizeof **d->f);
        d->f[2 * j + 1] = as_xcalloc(g->k[g->ev[j]], sizeof **d->f);
    }
    for (v = 0; v < g->n; v++) {
        d->off[v + 1] += d->off[v];
        d->t[v] = as_xmalloc(g->k[v] * sizeof **d->t);
        memcpy(d->t[v], g->c[v], g->k[v] * sizeof **d->t);
        if (g->k[v] > d->kmax)
            d->kmax = g->k[v];
    }
    fill = as_xcalloc(g->n + 1, sizeof *fill);
    for (j = 0; j < g->m; j++) {
        size_t u = g->eu[j], w = g->ev[j];
        d->inc[d->off[u] + fill[u]++] = (inc){j, w, 0};
        d->inc[d->off[w] + fill[w]++] = (inc){j, u, 1};
    }
    for (v = 0; v < g->n; v++) {
        qsort(d->inc + d->off[v], d->off[v + 1] - d->off[v], sizeof *d->inc, inc_cmp);
        for (j = d->off[v]; j < d->off[v + 1] && d->inc[j].w < v; j++)
            d->nbefore[v]++;
    }
    free(fill);
    d->tmp = as_xcalloc(d->kmax + 1, sizeof *d->tmp);
    d->msg = as_xcalloc(d->kmax + 1, sizeof *d->msg);
    d->gmax = as_xcalloc(d->kmax + 1, sizeof *d->gmax);
    d->cmin = as_xcalloc(d->kmax + 1, sizeof *d->cmin);
    d->cls = as_xcalloc(2 * g->m + 1, sizeof *d->cls);
    d->ncls = as_xcalloc(2 * g->m + 1, sizeof *d->ncls);
    d->rc = as_xcalloc(g->m + 1, sizeof *d->rc);
    d->rct = as_xcalloc(g->m + 1, sizeof *d->rct);
    {
        hidx *h = as_xcalloc(d->kmax + 1, sizeof *h);
        size_t *rrep = as_xcalloc(d->kmax + 1, sizeof *rrep);
        size_t *crep = as_xcalloc(d->kmax + 1, sizeof *crep);
        for (j = 0; j < g->m; j++) {
            /* the classes cost a pass over every matrix (gpt3-1.3b 2x2x2, 1646 edges: 0.8 s) */
            if (stop > 0 && (j & 15) == 15 && as_now() > stop)
                break;
            edge_compress(d, j, h, rrep, crep);
        }
        free(h);
        free(rrep);
        free(crep);
        return j < g->m;
    }
}

static void
dual_free(dual *d)
{
    size_t v, j;

    for (j = 0; j < 2 * d->g->m; j++) {
        free(d->f[j]);
        free(d->cls[j]);
    }
    for (j = 0; j < d->g->m; j++) {
        free(d->rc[j]);
        free(d->rct[j]);
    }
    free(d->cls);
    free(d->ncls);
    free(d->rc);
    free(d->rct);
    free(d->gmax);
    free(d->cmin);
    for (v = 0; v < d->g->n; v++)
        free(d->t[v]);
    free(d->f);
    free(d->t);
    free(d->off);
    free(d->inc);
    free(d->nbefore);
    free(d->tmp);
    free(d->msg);
}

/* ---- classes of identical rows and columns ---- */

int
as_hidx_cmp(const void *a, const void *b)
{
    const hidx *x = a, *y = b;

    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static uint64_t
hmix(uint64_t h, double v)
{
    uint64_t b;

    memcpy(&b, &v, sizeof b);
    return (h ^ b) * 0x100000001b3ULL;
}

/* Rows (BY_ROW) or columns of the KU x KV matrix R equal bit for bit? */
static int
same_line(const double *r, size_t ku, size_t kv, int by_row, size_t a, size_t b)
{
    size_t i;

    if (by_row)
        return memcmp(r + a * kv, r + b * kv, kv * sizeof *r) == 0;
    for (i = 0; i < ku; i++)
        if (memcmp(&r[i * kv + a], &r[i * kv + b], sizeof *r) != 0)
            return 0;
    return 1;
}

/* CLS[i] = the class of row (BY_ROW) or column i of R, REP[c] its first member; returns
   the number of classes.  H is scratch (max(ku, kv) entries). */
static size_t
line_classes(const double *r, size_t ku, size_t kv, int by_row, size_t *cls, size_t *rep,
             hidx *h)
{
    size_t n = by_row ? ku : kv, i, j, a, b, nc = 0, first;

    for (i = 0; i < n; i++) {
        h[i].h = 0xcbf29ce484222325ULL;
        h[i].i = i;
    }
    if (by_row) { /* a row's hash in registers, four lanes: through memory each entry waited
                     for the last one's store, and one lane for the last multiply (together
                     60 % of the setup on gpt3-1.3b 2x2x4's first round) */
        for (a = 0; a < ku; a++) {
            const double *row = r + a * kv;
            uint64_t x0 = h[a].h, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;
            for (b = 0; b + 4 <= kv; b += 4) {
                x0 = hmix(x0, row[b]);
                x1 = hmix(x1, row[b + 1]);
                x2 = hmix(x2, row[b + 2]);
                x3 = hmix(x3, row[b + 3]);
            }
            for (; b < kv; b++)
                x0 = hmix(x0, row[b]);
            h[a].h = (((x0 ^ x1) * 0x100000001b3ULL ^ x2) * 0x100000001b3ULL ^ x3) *
                     0x100000001b3ULL;
        }
    } else {
        for (a = 0; a < ku; a++)
            for (b = 0; b < kv; b++)
                h[b].h = hmix(h[b].h, r[a * kv + b]);
    }
    qsort(h, n, sizeof *h, as_hidx_cmp);
    for (i = 0; i < n; i = j) {
        first = nc;
        for (j = i; j < n && h[j].h == h[i].h; j++) {
            size_t c;
            for (c = first; c < nc && !same_line(r, ku, kv, by_row, rep[c], h[j].i); c++)
                ;
            if (c == nc)
                rep[nc++] = h[j].i;
            cls[h[j].i] = c;
        }
    }
    return nc;
}

/* The classes of edge J, and its matrix over them when that is at most half the size. */
static void
edge_compress(dual *d, size_t j, hidx *h, size_t *rrep, size_t *crep)
{
    const as_mrf *g = d->g;
    size_t ku = g->k[g->eu[j]], kv = g->k[g->ev[j]], nr, nc, a, b;
    const double *r = g->r[j];

    if (ku * kv < 64 || as_mrf_no_classes)
        return;
    d->cls[2 * j] = as_xmalloc(ku * sizeof **d->cls);
    d->cls[2 * j + 1] = as_xmalloc(kv * sizeof **d->cls);
    nr = line_classes(r, ku, kv, 1, d->cls[2 * j], rrep, h);
    nc = line_classes(r, ku, kv, 0, d->cls[2 * j + 1], crep, h);
    if (2 * nr * nc > ku * kv) {
        free(d->cls[2 * j]);
        free(d->cls[2 * j + 1]);
        d->cls[2 * j] = d->cls[2 * j + 1] = NULL;
        return;
    }
    d->ncls[2 * j] = nr;
    d->ncls[2 * j + 1] = nc;
    d->rc[j] = as_xmalloc(nr * nc * sizeof **d->rc);
    d->rct[j] = as_xmalloc(nr * nc * sizeof **d->rct);
    for (a = 0; a < nr; a++)
        for (b = 0; b < nc; b++)
            d->rc[j][a * nc + b] = d->rct[j][b * nr + a] = r[rrep[a] * kv + crep[b]];
}

/* CM[o] = min(CM[o], min over the NR rows c of RC (NO columns) of RC[c][o] - GM[c]).  Two
   rows at a time (half the loads and stores of CM); GCC vectorises the loop at O3 (minpd
   computes exactly a < m ? a : m). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
static void
class_min(const double *rc, size_t nr, size_t no, const double *gm, double *restrict cm)
{
    size_t c, o;

    for (c = 0; c + 2 <= nr; c += 2) {
        const double *restrict r0 = rc + c * no, *restrict r1 = r0 + no;
        double b0 = gm[c], b1 = gm[c + 1];
        for (o = 0; o < no; o++) {
            double a0 = r0[o] - b0, a1 = r1[o] - b1, m = cm[o];
            a0 = a1 < a0 ? a1 : a0;
            cm[o] = a0 < m ? a0 : m;
        }
    }
    for (; c < nr; c++) {
        const double *restrict r0 = rc + c * no;
        double b0 = gm[c];
        for (o = 0; o < no; o++) {
            double a0 = r0[o] - b0, m = cm[o];
            cm[o] = a0 < m ? a0 : m;
        }
    }
}

/*
 * edge_min over the classes: min_p r(p, q) - fv(p) = min over row classes c of
 * r(c, q) - max_(p in c) fv(p), the same for every q of a column class (and the other way
 * round); a - b only falls as b grows, so these are the same numbers as the plain minima.
 */
static void
edge_min_cls(const dual *d, const inc *x, const double *fv, double *out)
{
    size_t j = x->e, side = (size_t)x->side, ko = d->g->k[x->w];
    size_t kme = d->g->k[side == 0 ? d->g->eu[j] : d->g->ev[j]];
    const size_t *mine = d->cls[2 * j + side], *other = d->cls[2 * j + 1 - side];
    size_t nme = d->ncls[2 * j + side], no = d->ncls[2 * j + 1 - side];
    const double *rc = side == 0 ? d->rc[j] : d->rct[j]; /* nme x no */
    double *gm = d->gmax, *cm = d->cmin;
    size_t p, c, o;

    for (c = 0; c < nme; c++)
        gm[c] = -INFINITY;
    for (p = 0; p < kme; p++)
        if (fv[p] > gm[mine[p]])
            gm[mine[p]] = fv[p];
    for (o = 0; o < no; o++)
        cm[o] = INFINITY;
    class_min(rc, nme, no, gm, cm);
    for (p = 0; p < ko; p++)
        out[p] = cm[other[p]];
}

/* OUT[q] = min_p r(p, q) - fv(p) over the strategies p of V, q of the other end. */
static void
edge_min(const dual *d, const inc *x, const double *fv, double *out)
{
    const as_mrf *g = d->g;
    size_t j = x->e, ku = g->k[g->eu[j]], kv = g->k[g->ev[j]], p, q;
    const double *r = g->r[j];

    if (d->rc[j] != NULL) {
        edge_min_cls(d, x, fv, out);
        return;
    }

    /* Branch-free selects, and four running minima on a row: the same minima (a minimum
       does not depend on the order it is taken in), without a mispredicted branch per
       entry or one long chain of dependent compares; this is most of the bound's time
       (3-axis meshes: hundreds of strategies a node). */
    if (x->side == 0) { /* v = eu: rows are p */
        for (q = 0; q < kv; q++)
            out[q] = INFINITY;
        for (p = 0; p < ku; p++) {
            const double *row = r + p * kv;
            double base = -fv[p];
            for (q = 0; q < kv; q++) {
                double a = row[q] + base, o = out[q];
                out[q] = a < o ? a : o;
            }
        }
    } else { /* v = ev: columns are p */
        for (q = 0; q < ku; q++) {
            const double *row = r + q * kv;
            double b0 = INFINITY, b1 = INFINITY, b2 = INFINITY, b3 = INFINITY, a;
            for (p = 0; p + 4 <= kv; p += 4) {
                double a0 = row[p] - fv[p], a1 = row[p + 1] - fv[p + 1];
                double a2 = row[p + 2] - fv[p + 2], a3 = row[p + 3] - fv[p + 3];
                b0 = a0 < b0 ? a0 : b0;
                b1 = a1 < b1 ? a1 : b1;
                b2 = a2 < b2 ? a2 : b2;
                b3 = a3 < b3 ? a3 : b3;
            }
            for (; p < kv; p++) {
                a = row[p] - fv[p];
                b0 = a < b0 ? a : b0;
            }
            b0 = b1 < b0 ? b1 : b0;
            b2 = b3 < b2 ? b3 : b2;
            out[q] = b2 < b0 ? b2 : b0;
        }
    }
}

/* Pass node V's share to the edges [lo, hi) of its incidence list. */
static void
dual_send(dual *d, size_t v, size_t lo, size_t hi, double gamma)
{
    const as_mrf *g = d->g;
    size_t i, p, q, kv = g->k[v];

    memcpy(d->tmp, d->t[v], kv * sizeof *d->tmp);
    for (i = lo; i < hi; i++) {
        const inc *x = &d->inc[i];
        double *fv = d->f[2 * x->e + (size_t)x->side];
        double *fw = d->f[2 * x->e + 1 - (size_t)x->side];
        double *tw = d->t[x->w];
        for (p = 0; p < kv; p++) {
            fv[p] -= gamma * d->tmp[p];
            d->t[v][p] -= gamma * d->tmp[p];
        }
        edge_min(d, x, fv, d->msg);
        for (q = 0; q < g->k[x->w]; q++) {
            tw[q] += d->msg[q] - fw[q];
            fw[q] = d->msg[q];
        }
    }
}

static double
vmin(const double *x, size_t n)
{
    double m = x[0];
    size_t i;

    for (i = 1; i < n; i++)
        if (x[i] < m)
            m = x[i];
    return m;
}

/* Returns 1 when d->stop passed (the sweep is unfinished), else 0. */
static int
dual_sweep(dual *d, int forward)
{
    const as_mrf *g = d->g;
    size_t i, v, nb, na;

    for (i = 0; i < g->n; i++) {
        if (d->stop > 0 && (i & 63) == 63 && as_now() > d->stop)
            return 1;
        v = forward ? i : g->n - 1 - i;
        nb = d->nbefore[v];
        na = d->off[v + 1] - d->off[v] - nb;
        if (forward && na > 0)
            dual_send(d, v, d->off[v] + nb, d->off[v + 1], 1.0 / (double)(na > nb ? na : nb));
        else if (!forward && nb > 0)
            dual_send(d, v, d->off[v], d->off[v] + nb, 1.0 / (double)(na > nb ? na : nb));
    }
    return 0;
}

/* R value with V at P and the other end at Q. */
static double
rat(const as_mrf *g, const inc *x, size_t p, size_t q)
{
    size_t kv = g->k[g->ev[x->e]];

    return x->side == 0 ? g->r[x->e][p * kv + q] : g->r[x->e][q * kv + p];
}

/* TRW-S rounding: real costs to earlier nodes, messages from later ones. */
static void
dual_decode(dual *d, size_t *plan)
{
    const as_mrf *g = d->g;
    size_t v, i, p;

    for (v = 0; v < g->n; v++) {
        double best = INFINITY;
        for (p = 0; p < g->k[v]; p++) {
            double s = g->c[v][p];
            for (i = d->off[v]; i < d->off[v + 1]; i++) {
                const inc *x = &d->inc[i];
                s += x->w < v ? rat(g, x, p, plan[x->w]) : d->f[2 * x->e + (size_t)x->side][p];
            }
            if (s < best) {
                best = s;
                plan[v] = p;
            }
        }
    }
}

/* Iterated conditional modes: move single nodes to their best response until none improves. */
static void
dual_icm(dual *d, size_t *plan)
{
    const as_mrf *g = d->g;
    size_t v, i, p, sweep;
    int changed = 1;

    for (sweep = 0; changed && sweep < 100; sweep++) {
        changed = 0;
        for (v = 0; v < g->n; v++) {
            double cur = 0, best;
            size_t bp = plan[v];
            for (p = 0; p < g->k[v]; p++) {
                double s = g->c[v][p];
                for (i = d->off[v]; i < d->off[v + 1]; i++)
                    s += rat(g, &d->inc[i], p, plan[d->inc[i].w]);
                if (p == plan[v])
                    cur = s;
                d->tmp[p] = s;
            }
            best = cur;
            for (p = 0; p < g->k[v]; p++)
                if (d->tmp[p] < best - 1e-12 * fabs(best)) {
                    best = d->tmp[p];
                    bp = p;
                }
            if (bp != plan[v]) {
                plan[v] = bp;
                changed = 1;
            }
        }
    }
}

double
as_mrf_eval(const as_mrf *g, const size_t *plan)
{
    double s = 0;
    size_t v, j;

    for (v = 0; v < g->n; v++)
        s += g->c[v][plan[v]];
    for (j = 0; j < g->m; j++)
        s += g->r[j][plan[g->eu[j]] * g->k[g->ev[j]] + plan[g->ev[j]]];
    return s;
}

/*
 * Add each edge's share to the reduced costs GAP: a plan with s_v = p pays at least
 * min_q t_e(p, q) on every edge e at v, so it costs at least
 * LB + (t_v(p) - min t_v) + sum_(e at v) (min_q t_e(p, q) - min t_e).  After a sweep a node
 * often hands all of t_v to its edges (t_v flat: gpt3-1.3b 2x4x2, 100 of 163 nodes), and
 * its reduced costs are then on the edges to its earlier neighbours.  Returns the sum of
 * the edges' minima min t_e (the bound adds them to the nodes' minima to be safe from
 * rounding: after a sweep they are 0 up to it).
 */
static double
dual_edge_gaps(dual *d, double **gap)
{
    const as_mrf *g = d->g;
    size_t j, p;
    double *rm = d->tmp, *cm = d->msg, sum = 0;

    for (j = 0; j < g->m; j++) {
        size_t u = g->eu[j], v = g->ev[j], ku = g->k[u], kv = g->k[v];
        const double *fu = d->f[2 * j], *fv = d->f[2 * j + 1];
        inc from_v = {j, u, 1}, from_u = {j, v, 0};
        double m = INFINITY;
        /* min_q t_e(p, q) = min_q (r(p, q) - fv(q)) - fu(p): edge_min over the classes */
        edge_min(d, &from_v, fv, rm);
        for (p = 0; p < ku; p++) {
            rm[p] -= fu[p];
            m = rm[p] < m ? rm[p] : m;
        }
        edge_min(d, &from_u, fu, cm);
        for (p = 0; p < kv; p++)
            cm[p] -= fv[p];
        for (p = 0; p < ku; p++)
            gap[u][p] += rm[p] - m;
        for (p = 0; p < kv; p++)
            gap[v][p] += cm[p] > m ? cm[p] - m : 0; /* the same minimum, up to rounding */
        sum += m;
    }
    return sum;
}

as_mrf_state *
as_mrf_state_new(const as_mrf *g)
{
    dual *d = as_xcalloc(1, sizeof *d);

    dual_init(d, g, 0);
    return d;
}

as_mrf_state *
as_mrf_state_new_until(const as_mrf *g, double stop)
{
    dual *d = as_xcalloc(1, sizeof *d);

    if (dual_init(d, g, stop) != 0) {
        dual_free(d);
        free(d);
        return NULL;
    }
    return d;
}

void
as_mrf_state_set_stop(as_mrf_state *d, double stop)
{
    d->stop = stop;
}

void
as_mrf_state_free(as_mrf_state *st)
{
    if (st == NULL)
        return;
    dual_free(st);
    free(st);
}

void
as_mrf_state_set_deadline(as_mrf_state *d, double deadline)
{
    d->deadline = deadline;
}

double *
as_mrf_state_msg(as_mrf_state *d, size_t e, int side)
{
    return d->f[2 * e + (side != 0)];
}

void
as_mrf_state_set_floor(as_mrf_state *d, int min_iters, double hard)
{
    d->min_iters = min_iters;
    d->hard = hard;
}

void
as_mrf_state_sync(as_mrf_state *d)
{
    const as_mrf *g = d->g;
    size_t v, i, p;

    for (v = 0; v < g->n; v++) {
        memcpy(d->t[v], g->c[v], g->k[v] * sizeof **d->t);
        for (i = d->off[v]; i < d->off[v + 1]; i++) {
            const double *f = d->f[2 * d->inc[i].e + (size_t)d->inc[i].side];
            for (p = 0; p < g->k[v]; p++)
                d->t[v][p] += f[p];
        }
    }
}

void
as_mrf_state_run(as_mrf_state *d, int max_iters, as_mrf_result *res)
{
    const as_mrf *g = d->g;
    size_t v, p, *plan;
    double hist[10], lb = -INFINITY, ub;
    int it;

    memset(res, 0, sizeof *res);
    res->plan = as_xcalloc(g->n + 1, sizeof *res->plan);
    res->gap = as_xcalloc(g->n + 1, sizeof *res->gap);
    if (g->n == 0)
        return;
    plan = as_xcalloc(g->n + 1, sizeof *plan);
    ub = INFINITY;
    for (it = 0; it < max_iters; it++) {
        double cost;
        if (dual_sweep(d, 1) || dual_sweep(d, 0) || (d->stop > 0 && as_now() > d->stop)) {
            res->stopped = 1; /* the caller gives up: no bound, no plan */
            free(plan);
            return;
        }
        dual_decode(d, plan);
        cost = as_mrf_eval(g, plan);
        if (cost < ub) {
            ub = cost;
            memcpy(res->plan, plan, g->n * sizeof *plan);
        }
        lb = 0;
        for (v = 0; v < g->n; v++)
            lb += vmin(d->t[v], g->k[v]);
        res->iters = it + 1;
        if (ub - lb <= 1e-9 * fabs(ub))
            break; /* the bound meets the plan: nothing left to gain */
        if (it >= 10 && lb - hist[it % 10] <= 1e-12 * fabs(lb))
            break; /* stalled over the last 10 sweeps */
        hist[it % 10] = lb;
        if (d->deadline > 0 && as_now() > d->deadline &&
            (it + 1 >= d->min_iters || (d->hard > 0 && as_now() > d->hard)))
            break; /* the time limit: the bound holds after any sweep */
    }
    dual_icm(d, res->plan);
    res->ub = as_mrf_eval(g, res->plan);
    res->lb = 0;
    for (v = 0; v < g->n; v++) {
        double m = vmin(d->t[v], g->k[v]);
        res->lb += m;
        res->gap[v] = as_xmalloc(g->k[v] * sizeof **res->gap);
        for (p = 0; p < g->k[v]; p++)
            res->gap[v][p] = d->t[v][p] - m;
    }
    /* the exact bound of the reparametrisation: node minima and edge minima (the edges'
       over their classes, as the messages are: a pass over every plain matrix was most of
       a short run's time, and the Lagrangian makes one run a step) */
    res->lb += dual_edge_gaps(d, res->gap);
    free(plan);
}

void
as_mrf_dual(const as_mrf *g, int max_iters, as_mrf_result *res)
{
    as_mrf_state *d = as_mrf_state_new(g);

    as_mrf_state_run(d, max_iters, res);
    as_mrf_state_free(d);
}

void
as_mrf_result_free(as_mrf_result *res, size_t n)
{
    size_t v;

    if (res->gap != NULL)
        for (v = 0; v < n; v++)
            free(res->gap[v]);
    free(res->gap);
    free(res->plan);
    memset(res, 0, sizeof *res);
}
