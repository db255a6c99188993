/* reduce.c -- exact reductions of the choice problem, and recovery.
 *
 * DESIGN: the problem is copied into a working multigraph over leaders.
 * Every original node v has a leader L(v) and a map f_v from the leader's
 * strategies to its own (identity for the leader and its followers), so
 * that choosing s for L chooses f_v(s) for v.  Nodes join a leader in two
 * ways: a follower (Alpa's s_follow) with the identity map, and one side of
 * an alias pair when the other side determines it (every strategy of one
 * leader allows exactly one of the other's: parameter and updated
 * parameter, optimizer state and its update), with that function as map.
 * Strategies of a leader that no plan can use (an alias row forbids them
 * against every partner) are masked out.  Costs of the members are added
 * into the leader's, their edges re-attached through the maps (an edge
 * inside one group becomes cost), parallel edges are summed and constant
 * matrices go to the objective offset.
 *
 * Then, on nodes that no memory, alias or no-good row mentions (memory rows
 * that cannot bind do not count), the PBQP reductions (Scholz & Eckstein;
 * Hames & Scholz) run to a fixpoint:
 *   R0: degree 0 -> pick argmin c_x, offset += min;
 *   R1: neighbour y -> c_y[p] += min_q (R_yx[p,q] + c_x[q]);
 *   R2: neighbours y, z -> R_yz[p,r] += min_q (R_yx[p,q] + c_x[q] + R_xz[q,r]);
 *   RS: one strategy left -> each neighbour's cost gains its row of R.
 * Each elimination stores the argmin table indexed by its neighbours'
 * choices; recovery replays them in reverse order.
 *
 * Bound pruning (AS_REDUCE_BOUND) alternates with them: TRW-S message
 * passing on what is left (dual.h) gives a lower bound LB, reduced costs
 * gap_x(p) and a plan of cost UB; when that plan satisfies every memory and
 * alias row, every plan with s_x = p costs at least LB + gap_x(p) (rows only
 * remove plans), so strategies with LB + gap_x(p) > UB are dropped: no
 * optimal plan uses them.  Fewer strategies make more nodes single-strategy
 * or low-degree, so PBQP runs again.  All of it is exact: the minimum over
 * the reduced problem equals the original's and the recovered plan attains it.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glpk.h>

#include "formulate/dual.h"
#include "formulate/problem.h"
#include "formulate/progress.h"

#define NONE ((size_t)-1)

int as_reduce_plain = 0;
int as_reduce_no_leaf_plans = 0;
int as_reduce_no_pool_ilp = 0;
size_t as_reduce_shortcuts = 0;
#define BOUND_ROUNDS 12
#define BOUND_SWEEPS 2000
#define LAGR_SWEEPS 30
/* the first run with live memory rows, at no multipliers: the Lagrangian's runs go on from
   its messages at theirs (gpt3-175b 4x4x4 under 324 GiB: 438 sweeps, 9.8 s, to 15.863 where
   the ascent starts from 15.80 after 100 sweeps, 3.1 s, and reaches the same 16.13237) */
#define ROWS_SWEEPS 100
/* the ascent stops where the master's bound is within this share of the gap asked for */
#define LAGR_TOL 0.01

typedef struct wedge {
    size_t u, v;  /**< leader indices */
    double *r;    /**< k_u x k_v row-major, leader strategy spaces */
    int alive;
} wedge;

typedef struct wnode {
    double *cost;        /**< leader space: costs of the whole group plus folded costs */
    unsigned char *ok;   /**< leader space: strategy still possible */
    size_t nok;
    int pinned;          /**< in an alias or no-good row or a follow link: kept */
    int inmem;           /**< has memory in a live memory row: kept unless decided */
    size_t fixed;        /**< the one strategy it was eliminated with (RS), or NONE */
    int frozen;          /**< end of an unmerged follow link: strategies stay whole */
    unsigned char dirty; /**< its costs, edges, neighbours' strategies or rows changed since
                              dominance last looked at it */
    int alive;
    size_t k;            /**< strategies of the node in the problem (kof) */
    AS_VEC(size_t) adj;  /**< incident edge indices (dead ones skipped) */
} wnode;

typedef struct elim {
    size_t x, y, z;   /**< eliminated node, neighbours (deg 1: y; deg 2: y, z) */
    size_t kz;        /**< strategies of z (deg 2) */
    int deg;
    size_t choice;    /**< deg 0 */
    size_t *best;     /**< deg 1: [p_y]; deg 2: [p_y * k_z + p_z] */
} elim;

struct as_reduction {
    size_t n;               /**< nodes of the original problem */
    size_t *leader;         /**< leader of each original node */
    size_t **map;           /**< per node: leader strategy -> own strategy (NULL: identity) */
    size_t *origin;         /**< reduced index -> original index */
    size_t **sub;           /**< reduced index -> (reduced strategy -> original strategy) */
    size_t nred;
    size_t *start;          /**< a plan of the reduced problem that fits, or NULL */
    size_t ncand;           /**< k-best: single-node variations of start that fit */
    size_t *cand_node, *cand_strat;
    AS_VEC(elim) elims;
    as_reduce_stats stats;
    as_duals *duals;        /**< the rounds' multipliers at their end, or NULL */
};

/* A binding memory row in leader spaces. */
typedef struct wrow {
    int alive;         /**< 0 once it cannot bind any more */
    size_t n;
    size_t *node;      /**< leaders */
    double **m;        /**< leader-space vectors, summed per leader */
    double room;       /**< budget - resident */
    double resident;   /**< constant bytes of the point */
    double lam;        /**< Lagrange multiplier of the bound, seconds per byte */
    size_t *wit;       /**< work_refresh's witnesses, 3 per entry, or NULL: a possible
                            strategy of largest memory (REF_NONPOS: none above 0), and two
                            possible strategies of different memory (NONE: not known) */
} wrow;

typedef struct work {
    const as_problem *p;
    unsigned flags;
    wnode *nodes;
    AS_VEC(wedge) edges;
    AS_VEC(size_t) kept_alias;  /**< alias pairs that stay rows */
    AS_VEC(wrow) rows;
    double offset;
    size_t round;               /**< bound round under way (0: the first) */
    int has_inc;                /**< started from the caller's plan (as_reduce_opts.incumbent) */
    int for_gap;                /**< as_reduce_opts.branch: the bound is wanted, not plans */
    int lagrange;               /**< the last bound round ran the Lagrangian (live memory rows) */
    int scale_paid;             /**< the last scale search lowered the plan's cost */
    double gap;                 /**< relative tolerance of the bound pruning (0: exact) */
    size_t top;                 /**< plans the bound pruning keeps (k-best), >= 1 */
    size_t ncand;               /**< k-best: the moves of the last round's top-th plan */
    size_t *cand_v, *cand_s;    /**< (leader, leader strategy), cheapest first */
    int dbg;                    /**< AS_DEBUG_REDUCE set: phase times on stderr */
    double deadline;            /**< as_now() after which the bound rounds stop; 0 = none */
    int safety_hit;             /**< fixed work: a TRW-S run stopped at its share of SAFETY */
    double safety;              /**< as_reduce_opts.fixed_work: its deadline, which only stops
                                     work that overruns (past()); 0 = none */
    size_t bb_evals;            /**< as_reduce_opts.bb_evals */
    int bb_plain;               /**< as_reduce_opts.bb_plain: no mixed splits (fcnt NULL) */
    double abort_at;            /**< as_now() after which the reductions give up; 0 = never */
    double stop;                /**< as_reduce_opts.own_plan: abort_at, after which the bound
                                     round gives up at once (0 = never) */
    int stopped;                /**< a bound round passed STOP: it gave up, pruning nothing */
    as_progress pg;             /**< progress line of the bound rounds */
    const as_duals *duals_from; /**< as_reduce_opts.duals_from */
    int warm;                   /**< its messages are in MSG: the first round starts at its
                                     multipliers (work_msg_carry) */
    double *lam_best;           /**< the multipliers of the first round's best Lagrangian bound
                                     (NULL: none yet), LAM_BEST_LB (offsets included) */
    double lam_best_lb;
    /* per compact node and strategy: the weight (per mille) of the plans choosing it in the
       Lagrangian's last master mix since the last reset (NULL: not counted); the branching
       splits where they differ */
    size_t **fcnt;
    double **msg_best;          /**< the messages at LAM_BEST (as MSG), or NULL */
    size_t nmsg_best;
    int in_bb;                  /**< in the branching: its leaves' multipliers are no bound of
                                     the whole problem */
    double *room0;              /**< the rows' rooms as work_init built them (the rows' identity
                                     for as_duals: work_refresh lowers rooms) */
    size_t *best;               /**< best plan that fits (leader strategies), or NULL */
    /* the last bound round's TRW-S messages, 2 per work edge (u end, v end) in the leaders'
       strategy spaces (NULL: none): the next round starts from them */
    double **msg;
    size_t nmsg;                /**< work edges they cover */
    /* per leader, in its strategy space: a lower bound on every plan that fits with that
       strategy (the bound rounds' LB + gap_x(p), offsets included, the best over rounds),
       -INFINITY where no round gave one; NULL before a round found a plan */
    double **floor;
    /* the rows' vectors, each distinct one once (rows hold pointers into it, read-only once
       built): a binding budget on gpt3-175b 4x4x4 has 0.6-1 M row entries of up to k doubles,
       most of them repeats (tied layers' copies at many points) */
    as_vpool pool;
    struct dwpool *dw;          /**< the Lagrangian's plans, shared by the branching's leaves
                                     (work_lagrange); freed at the end of the bound round */
    size_t dw_clock;            /**< their ages */
    size_t **plans0;            /**< the first round's pool in leader strategies (n entries,
                                     NONE off the leaders): as_duals.plans */
    size_t nplans0;
    as_reduction *red;
} work;

static size_t
kof(const work *w, size_t v)
{
    return w->nodes[v].k;
}

/* Strategy of original node V when its leader takes S. */
static size_t
fmap(const as_reduction *red, size_t v, size_t s)
{
    return red->map[v] == NULL ? s : red->map[v][s];
}

/* R value for node FROM at strategy A and the other end at B. */
static double
rget(const work *w, const wedge *e, size_t from, size_t a, size_t b)
{
    return e->u == from ? e->r[a * kof(w, e->v) + b] : e->r[b * kof(w, e->v) + a];
}

/* 1 if R is constant over the possible strategies of U and V. */
static int
is_const(const work *w, size_t u, size_t v, const double *r)
{
    size_t ku = kof(w, u), kv = kof(w, v), p, q;
    const unsigned char *ou = w->nodes[u].ok, *ov = w->nodes[v].ok;
    int first = 1;
    double r0 = 0;

    for (p = 0; p < ku; p++)
        for (q = 0; ou[p] && q < kv; q++) {
            if (!ov[q])
                continue;
            if (first) {
                r0 = r[p * kv + q];
                first = 0;
            } else if (r[p * kv + q] != r0) {
                return 0;
            }
        }
    return 1;
}

/* The value of a constant matrix (see is_const). */
static double
const_value(const work *w, size_t u, size_t v, const double *r)
{
    size_t ku = kof(w, u), kv = kof(w, v), p, q;

    for (p = 0; p < ku; p++)
        for (q = 0; w->nodes[u].ok[p] && q < kv; q++)
            if (w->nodes[v].ok[q])
                return r[p * kv + q];
    return 0;
}

/* Drop live edge E into the offset when its matrix is constant. */
static void
work_try_const(work *w, wedge *e)
{
    if ((w->flags & AS_REDUCE_CONST) && e->alive && is_const(w, e->u, e->v, e->r)) {
        w->offset += const_value(w, e->u, e->v, e->r);
        e->alive = 0;
        w->red->stats.const_edges++;
    }
}

/* Add matrix R (k_u x k_v) between U and V, merging with a live edge there. Takes R. */
static void
work_add_edge(work *w, size_t u, size_t v, double *r)
{
    size_t i, p, q, ku = kof(w, u), kv = kof(w, v);
    wedge e;

    for (i = 0; i < w->nodes[u].adj.n; i++) {
        wedge *o = &w->edges.v[w->nodes[u].adj.v[i]];
        if (!o->alive || (o->u != v && o->v != v))
            continue;
        for (p = 0; p < ku; p++)
            for (q = 0; q < kv; q++)
                if (o->u == u)
                    o->r[p * kv + q] += r[p * kv + q];
                else
                    o->r[q * ku + p] += r[p * kv + q];
        free(r);
        w->red->stats.merged_edges++;
        work_try_const(w, o);
        return;
    }
    e.u = u;
    e.v = v;
    e.r = r;
    e.alive = 1;
    AS_VEC_PUSH(&w->edges, e);
    AS_VEC_PUSH(&w->nodes[u].adj, w->edges.n - 1);
    AS_VEC_PUSH(&w->nodes[v].adj, w->edges.n - 1);
    work_try_const(w, &w->edges.v[w->edges.n - 1]);
}

/* Live incident edges of X, up to 3, into OUT; returns the count (3 = "3 or more"). */
static size_t
work_degree(const work *w, size_t x, size_t out[3])
{
    size_t i, d = 0;

    for (i = 0; i < w->nodes[x].adj.n && d < 3; i++)
        if (w->edges.v[w->nodes[x].adj.v[i]].alive)
            out[d++] = w->nodes[x].adj.v[i];
    return d;
}

/* The time limit has passed: the bound rounds stop (what they pruned stays exact). */
static int
past(const work *w)
{
    return (w->deadline > 0 && as_now() > w->deadline) ||
           (w->safety > 0 && as_now() > w->safety);
}

/*
 * The gap asked for, in seconds at the plan cost UB (the reduced problem's units: its offset
 * and the problem's are added back, as the gap is reported).  The pruning's cut and the
 * branching's leaves use GAP_CUT of it: the reported gap is against the plan as the caller
 * settles it (tied layers: gpt3-13b 2x8's went up by 4e-6 relative, and a gap of 1e-4 came
 * out 1.00004e-4), and at the whole gap gpt3-175b 16x8 under 298.65 GiB ended "feasible" at
 * 1.00001e-4, its bound the cut to 9 digits.
 */
#define GAP_CUT 0.9

static double
gap_abs(const work *w, double ub)
{
    return w->gap * fabs(ub + w->offset + as_problem_offset(w->p));
}

/* Dominance must look at X's neighbours again (X lost strategies, or its edges changed). */
static void
mark_nbrs(work *w, size_t x)
{
    size_t i;

    for (i = 0; i < w->nodes[x].adj.n; i++) {
        const wedge *e = &w->edges.v[w->nodes[x].adj.v[i]];
        if (e->alive)
            w->nodes[e->u == x ? e->v : e->u].dirty = 1;
    }
}

/* ---- groups: followers and alias pairs ---- */

/* Is the alias entry for leader strategies S (of a's leader) and T (of b's) forbidden? */
static int
alias_bad(const work *w, const as_palias *a, size_t s, size_t t)
{
    return a->bad[fmap(w->red, a->a, s) * kof(w, a->b) + fmap(w->red, a->b, t)] != 0;
}

/* Move every member of leader FROM under leader TO; SIGMA maps TO's strategies to FROM's. */
static void
group_merge(work *w, size_t to, size_t from, const size_t *sigma)
{
    as_reduction *red = w->red;
    size_t v, s, kto = kof(w, to);

    for (v = 0; v < red->n; v++) {
        size_t *m;
        if (red->leader[v] != from)
            continue;
        m = as_xmalloc(kto * sizeof *m);
        for (s = 0; s < kto; s++)
            m[s] = w->nodes[to].ok[s] ? fmap(red, v, sigma[s]) : NONE;
        free(red->map[v]);
        red->map[v] = m;
        red->leader[v] = to;
    }
    w->nodes[from].nok = 0;
    red->stats.aliases++;
}

/*
 * If every possible strategy of leader X allows exactly one of Y's (or
 * none: then it is masked), merge Y into X and return 1.  SWAP says X is
 * the alias's b side.
 */
static int
alias_functional(work *w, const as_palias *a, size_t x, size_t y, int swap)
{
    size_t kx = kof(w, x), ky = kof(w, y), s, t, cnt, left = 0;
    size_t *sigma = as_xcalloc(kx, sizeof *sigma);
    unsigned char *drop = as_xcalloc(kx, 1);
    int ok = 1;

    for (s = 0; s < kx && ok; s++) {
        if (!w->nodes[x].ok[s])
            continue;
        for (t = cnt = 0; t < ky; t++)
            if (w->nodes[y].ok[t] && !(swap ? alias_bad(w, a, t, s) : alias_bad(w, a, s, t))) {
                cnt++;
                sigma[s] = t;
            }
        if (cnt > 1)
            ok = 0;
        else if (cnt == 0)
            drop[s] = 1;
        else
            left++;
    }
    if (ok && left > 0) {
        for (s = 0; s < kx; s++)
            if (drop[s]) {
                w->nodes[x].ok[s] = 0;
                w->nodes[x].nok--;
                w->red->stats.pruned++;
            }
        group_merge(w, x, y, sigma);
    }
    free(sigma);
    free(drop);
    return ok && left > 0;
}

/* Apply alias pair I: mask, merge, or keep it as a row. */
static void
alias_apply(work *w, size_t i)
{
    const as_palias *a = as_problem_alias(w->p, i);
    size_t x = w->red->leader[a->a], y = w->red->leader[a->b], s, left = 0;

    if (w->nodes[x].frozen || w->nodes[y].frozen) {
        AS_VEC_PUSH(&w->kept_alias, i);
        return;
    }
    if (x == y) { /* one group: the pair is a condition on the leader's strategy */
        for (s = 0; s < kof(w, x); s++)
            left += w->nodes[x].ok[s] && !alias_bad(w, a, s, s);
        if (left == 0) { /* nothing possible: leave it to the solver to say infeasible */
            AS_VEC_PUSH(&w->kept_alias, i);
            return;
        }
        for (s = 0; s < kof(w, x); s++)
            if (w->nodes[x].ok[s] && alias_bad(w, a, s, s)) {
                w->nodes[x].ok[s] = 0;
                w->nodes[x].nok--;
                w->red->stats.pruned++;
            }
        return;
    }
    if (!alias_functional(w, a, x, y, 0) && !alias_functional(w, a, y, x, 1))
        AS_VEC_PUSH(&w->kept_alias, i);
}

/* L's vector in row R (leader space), added when R has none yet (STAMP[L] != MARK). */
static double *
row_slot(const work *w, wrow *r, size_t L, size_t *slot, size_t *stamp, size_t mark)
{
    if (stamp[L] != mark) {
        stamp[L] = mark;
        slot[L] = r->n;
        r->node[r->n] = L;
        r->m[r->n++] = as_xcalloc(kof(w, L), sizeof **r->m);
    }
    return r->m[slot[L]];
}

/* Adds the entries of E (a point or a segment, its own only) to R in leader space; entries
   with no memory are skipped.  INMEM: mark their leaders as in a memory row. */
static void
row_add_entries(work *w, wrow *r, const as_plive *e, size_t *slot, size_t *stamp, size_t mark,
                int inmem)
{
    const as_reduction *red = w->red;
    size_t ie, s;

    for (ie = 0; ie < e->n; ie++) {
        size_t v0 = e->nodes[ie], L = red->leader[v0], kl = kof(w, L);
        double *m;
        int nz = 0;
        for (s = 0; s < kof(w, v0); s++)
            nz |= e->m[ie][s] != 0;
        if (!nz)
            continue;
        if (inmem)
            w->nodes[L].inmem = 1;
        m = row_slot(w, r, L, slot, stamp, mark);
        for (s = 0; s < kl; s++)
            if (w->nodes[L].ok[s])
                m[s] += e->m[ie][fmap(red, v0, s)];
    }
}

/* Adds segment row G (leader space) to R.  INMEM: mark its leaders as in a memory row. */
static void
row_add(work *w, wrow *r, const wrow *g, size_t *slot, size_t *stamp, size_t mark, int inmem)
{
    size_t i, s;

    for (i = 0; i < g->n; i++) {
        size_t L = g->node[i];
        double *m = row_slot(w, r, L, slot, stamp, mark);
        if (inmem)
            w->nodes[L].inmem = 1;
        for (s = 0; s < kof(w, L); s++)
            m[s] += g->m[i][s];
    }
}

/* 1 when the abort time came first (memory rows left out). */
static int
work_init(work *w, const as_problem *p)
{
    size_t n = as_problem_nnodes(p), v, s, t, i, j, *slot, *stamp, nseg, mark;
    as_reduction *red = w->red;
    wrow *segs;
    int rc = 0;

    w->nodes = as_xcalloc(n, sizeof *w->nodes);
    for (v = 0; v < n; v++)
        w->nodes[v].k = as_problem_node(p, v)->k;
    red->map = as_xcalloc(n + 1, sizeof *red->map);
    for (v = 0; v < n; v++) {
        size_t l = v;
        while ((w->flags & AS_REDUCE_FOLLOW) && as_problem_node(p, l)->follow != AS_NO_FOLLOW)
            l = as_problem_node(p, l)->follow;
        red->leader[v] = l;
        if (l != v)
            red->stats.followers++;
        w->nodes[v].ok = as_xmalloc(kof(w, v));
        memset(w->nodes[v].ok, 1, kof(w, v));
        w->nodes[v].nok = kof(w, v);
        w->nodes[v].fixed = NONE;
    }
    for (v = 0; v < n; v++) /* unmerged follow links must stay visible: pin both ends */
        if (as_problem_node(p, v)->follow != AS_NO_FOLLOW && red->leader[v] == v)
            w->nodes[v].pinned = w->nodes[v].frozen = w->nodes[as_problem_node(p, v)->follow]
                                                          .pinned =
                w->nodes[as_problem_node(p, v)->follow].frozen = 1;
    for (i = 0; i < as_problem_naliases(p); i++)
        if (w->flags & AS_REDUCE_ALIAS)
            alias_apply(w, i);
        else
            AS_VEC_PUSH(&w->kept_alias, i);
    for (v = 0; v < n; v++) {
        const as_pnode *nd = as_problem_node(p, v);
        size_t l = red->leader[v];
        wnode *L = &w->nodes[l];
        if (L->cost == NULL)
            L->cost = as_xcalloc(kof(w, l), sizeof *L->cost);
        for (s = 0; s < kof(w, l); s++)
            if (L->ok[s])
                L->cost[s] += nd->c[fmap(red, v, s)] + nd->d[fmap(red, v, s)];
        L->alive = 1;
    }
    for (i = 0; i < w->kept_alias.n; i++) {
        const as_palias *a = as_problem_alias(p, w->kept_alias.v[i]);
        w->nodes[red->leader[a->a]].pinned = w->nodes[red->leader[a->b]].pinned = 1;
    }
    slot = as_xcalloc(n + 1, sizeof *slot);   /* L's index in the row being built */
    stamp = as_xcalloc(n + 1, sizeof *stamp); /* row + 1 that slot[L] is for */
    nseg = as_problem_memory(p) > 0 ? as_problem_nsegs(p) : 0;
    segs = as_xcalloc(nseg + 1, sizeof *segs);
    /* each segment's chain (its parents' entries included) in leader space, once: a point
       adds its own entries and its chains' sums, as as_problem_live_bytes does, instead of
       walking every chain again (175b: 23 M entries over 6346 points, 4121 in segments) */
    for (j = 0; j < nseg; j++) {
        const as_plive *e = as_problem_live_seg(p, j);
        wrow *r = &segs[j];
        size_t cap = e->n + (e->seg != AS_NO_SEG ? segs[e->seg].n : 0);
        r->node = as_xcalloc(cap + 1, sizeof *r->node);
        r->m = as_xcalloc(cap + 1, sizeof *r->m);
        if (e->seg != AS_NO_SEG) /* parents come first (as_problem_add_live_seg) */
            row_add(w, r, &segs[e->seg], slot, stamp, j + 1, 0);
        row_add_entries(w, r, e, slot, stamp, j + 1, 0);
    }
    for (t = 0; as_problem_memory(p) > 0 && t < as_problem_nlive(p); t++) {
        const as_plive *l = as_problem_live(p, t);
        size_t cap = l->n, k;
        wrow row = {0};
        /* rows with every copy of a budgeted gpt3-175b take 9 s: the limit counts */
        if ((t & 15) == 15 && w->abort_at > 0 && as_now() > w->abort_at) {
            rc = 1;
            break;
        }
        if (!as_problem_live_binds(p, t))
            continue;
        if (l->seg != AS_NO_SEG)
            cap += segs[l->seg].n;
        for (k = 0; k < AS_LIVE_MORE; k++)
            if (l->more[k] != AS_NO_SEG)
                cap += segs[l->more[k]].n;
        row.node = as_xcalloc(cap + 1, sizeof *row.node);
        row.m = as_xcalloc(cap + 1, sizeof *row.m);
        row.room = as_problem_memory(p) - l->resident;
        row.resident = l->resident;
        mark = nseg + 1 + t;
        /* the point's entries, then its chains' */
        row_add_entries(w, &row, l, slot, stamp, mark, 1);
        if (l->seg != AS_NO_SEG)
            row_add(w, &row, &segs[l->seg], slot, stamp, mark, 1);
        for (k = 0; k < AS_LIVE_MORE; k++)
            if (l->more[k] != AS_NO_SEG)
                row_add(w, &row, &segs[l->more[k]], slot, stamp, mark, 1);
        row.alive = 1;
        for (i = 0; i < row.n; i++) /* read-only from here on: repeats are shared */
            row.m[i] = as_vpool_take(&w->pool, row.m[i], kof(w, row.node[i]));
        AS_VEC_PUSH(&w->rows, row);
    }
    for (j = 0; j < nseg; j++) {
        for (i = 0; i < segs[j].n; i++)
            free(segs[j].m[i]);
        free(segs[j].node);
        free(segs[j].m);
    }
    free(segs);
    free(slot);
    free(stamp);
    if (rc != 0)
        return rc;
    for (v = 0; as_problem_nnogoods(p) > 0 && v < n; v++)
        w->nodes[v].pinned = 1;
    return 0;
}

/* The live edge between U and V, or NULL. */
static wedge *
find_edge(work *w, size_t u, size_t v)
{
    size_t i, x = w->nodes[u].adj.n <= w->nodes[v].adj.n ? u : v, y = x == u ? v : u;

    for (i = 0; i < w->nodes[x].adj.n; i++) {
        wedge *o = &w->edges.v[w->nodes[x].adj.v[i]];
        if (o->alive && (o->u == y || o->v == y))
            return o;
    }
    return NULL;
}

/*
 * Problem edge E (K_V columns) into leader space A x B: added straight into the live edge
 * between A and B when there is one (tied layers put dozens of parallel edges on one pair
 * of leaders: no matrix is allocated for them), else as a new edge.  The same sums, in the
 * same order, as building the leader-space matrix first (0 where a strategy is gone) and
 * adding it.
 */
static void
edge_into(work *w, const as_pedge *e, size_t a, size_t b, size_t kv)
{
    const as_reduction *red = w->red;
    size_t ka = kof(w, a), kb = kof(w, b), s, q;
    const unsigned char *oka = w->nodes[a].ok, *okb = w->nodes[b].ok;
    size_t *mb = as_xmalloc((kb + 1) * sizeof *mb);
    wedge *o = find_edge(w, a, b);

    int plain = red->map[e->v] == NULL; /* B's strategies are e->v's, all possible */

    for (q = 0; q < kb; q++) {
        mb[q] = fmap(red, e->v, q);
        plain &= okb[q] != 0;
    }
    if (o != NULL && o->u == a && plain && kb == kv) { /* the same sums, vectorised */
        for (s = 0; s < ka; s++) {
            const double *restrict row = e->r + fmap(red, e->u, s) * kv;
            double *restrict dst = o->r + s * kb;
            if (oka[s])
                for (q = 0; q < kb; q++)
                    dst[q] += row[q];
        }
    } else if (o != NULL && o->u == a) {
        for (s = 0; s < ka; s++) {
            const double *row = e->r + fmap(red, e->u, s) * kv;
            double *dst = o->r + s * kb;
            for (q = 0; oka[s] && q < kb; q++)
                if (okb[q])
                    dst[q] += row[mb[q]];
        }
    } else if (o != NULL) { /* stored B x A */
        for (s = 0; s < ka; s++) {
            const double *row = e->r + fmap(red, e->u, s) * kv;
            for (q = 0; oka[s] && q < kb; q++)
                if (okb[q])
                    o->r[q * ka + s] += row[mb[q]];
        }
    }
    if (o != NULL) {
        w->red->stats.merged_edges++;
        work_try_const(w, o);
    } else {
        double *r = as_xmalloc((ka * kb + 1) * sizeof *r);
        for (s = 0; s < ka; s++) {
            const double *row = e->r + fmap(red, e->u, s) * kv;
            for (q = 0; q < kb; q++)
                r[s * kb + q] = oka[s] && okb[q] ? row[mb[q]] : 0;
        }
        work_add_edge(w, a, b, r);
    }
    free(mb);
}

/* 1 if problem edge E (K_V columns) is constant over the possible strategies of leaders A
   (its u end) and B: is_const on the matrix edge_into would make for it. */
static int
edge_const(const work *w, const as_pedge *e, size_t a, size_t b, size_t kv)
{
    const as_reduction *red = w->red;
    size_t ka = kof(w, a), kb = kof(w, b), s, q;
    const unsigned char *oka = w->nodes[a].ok, *okb = w->nodes[b].ok;
    int first = 1;
    double r0 = 0;

    for (s = 0; s < ka; s++) {
        const double *row = e->r + fmap(red, e->u, s) * kv;
        for (q = 0; oka[s] && q < kb; q++) {
            double v;
            if (!okb[q])
                continue;
            v = row[fmap(red, e->v, q)];
            if (first) {
                r0 = v;
                first = 0;
            } else if (v != r0) {
                return 0;
            }
        }
    }
    return 1;
}

/* A run of parallel problem edges that edge_into would sum into one work edge. */
typedef struct eseg {
    size_t a, b;      /**< leaders, as the first edge has them (the work edge's u and v) */
    size_t first;     /**< index of its first edge in the list of edges (eseg_js) */
    size_t n;         /**< edges in it */
    int dead;         /**< one edge, constant: edge_into drops it into the offset */
    double *r;        /**< the summed matrix (k_a x k_b), once computed */
} eseg;

/*
 * Sums segment G's edges (JS) into a new matrix row by row: each row stays in cache while
 * every edge adds to it, where edge_into walks the whole matrix once per edge.  The same
 * sums in the same order, entry for entry.  Returns 0 when a sum of 2 or more of its first
 * edges is constant (edge_into would have dropped the edge there and started again).
 */
static int
eseg_sum(work *w, eseg *g, const size_t *js, size_t *mb, unsigned char *nonconst, double *v0)
{
    const as_problem *p = w->p;
    const as_reduction *red = w->red;
    size_t a = g->a, b = g->b, ka = kof(w, a), kb = kof(w, b), i, k, q, q0 = NONE;
    const unsigned char *oka = w->nodes[a].ok, *okb = w->nodes[b].ok;
    double *r = as_xcalloc(ka * kb + 1, sizeof *r);
    int seen = 0;

    for (q = 0; q < kb && q0 == NONE; q++)
        if (okb[q])
            q0 = q;
    for (k = 0; k < g->n; k++)
        nonconst[k] = k == 0;
    for (i = 0; i < ka; i++) {
        double *dst = r + i * kb;
        if (!oka[i])
            continue;
        for (k = 0; k < g->n; k++) {
            const as_pedge *e = as_problem_edge(p, js[g->first + k]);
            size_t kv = kof(w, e->v);
            if (red->leader[e->u] == a) { /* dst[q] gets e's (f_u(i), f_v(q)) */
                const double *row = e->r + fmap(red, e->u, i) * kv;
                for (q = 0; q < kb; q++)
                    mb[q] = fmap(red, e->v, q);
                if (k == 0) {
                    for (q = 0; q < kb; q++)
                        dst[q] = okb[q] ? row[mb[q]] : 0;
                } else {
                    for (q = 0; q < kb; q++)
                        if (okb[q])
                            dst[q] += row[mb[q]];
                }
            } else { /* stored B x A by edge_into's merge: dst[q] gets e's (f_u(q), f_v(i)) */
                size_t c = fmap(red, e->v, i);
                for (q = 0; q < kb; q++)
                    if (okb[q])
                        dst[q] += e->r[fmap(red, e->u, q) * kv + c];
            }
            if (q0 == NONE)
                continue;
            if (!seen)
                v0[k] = dst[q0]; /* the first possible entry of the sum of edges 0..k */
            for (q = 0; !nonconst[k] && q < kb; q++)
                if (okb[q] && dst[q] != v0[k])
                    nonconst[k] = 1;
        }
        seen = 1;
    }
    g->r = r;
    for (k = 0; k < g->n; k++)
        if (!nonconst[k])
            return 0;
    return 1;
}

/* Copy P's edges into leader spaces, one at a time (as_reduce_plain, and the fallback of
   work_edges); 1 when the abort time came first (edges left out). */
static int
work_edges_plain(work *w)
{
    const as_problem *p = w->p;
    const as_reduction *red = w->red;
    size_t j, a, b, ka, s;

    for (j = 0; j < as_problem_nedges(p); j++) {
        const as_pedge *e = as_problem_edge(p, j);
        size_t kv = kof(w, e->v);
        if ((j & 63) == 63 && w->abort_at > 0 && as_now() > w->abort_at)
            return 1;
        a = red->leader[e->u];
        b = red->leader[e->v];
        ka = kof(w, a);
        if (a == b) { /* both ends are decided by one strategy of their leader */
            for (s = 0; s < ka; s++)
                if (w->nodes[a].ok[s])
                    w->nodes[a].cost[s] += e->r[fmap(red, e->u, s) * kv + fmap(red, e->v, s)];
            continue;
        }
        edge_into(w, e, a, b, kv);
    }
    return 0;
}

/*
 * Copy P's edges into leader spaces; 1 when the abort time came first (edges left out).
 * The result is work_edges_plain's, bit for bit: the parallel edges that edge_into would
 * merge one by one into a work edge are found first (segments), each segment is summed row
 * by row (eseg_sum), and then the edges are replayed in order, so that work edges, node
 * costs and the offset are made in the same order.  When a merge would have made a matrix
 * constant (edge_into then drops it), it falls back to work_edges_plain.
 */
static int
work_edges(work *w)
{
    const as_problem *p = w->p;
    const as_reduction *red = w->red;
    size_t ne = as_problem_nedges(p), n = as_problem_nnodes(p), j, a, b, s, cap = 16, h, kmax = 1;
    size_t *segof, *js, *tab, *fill, *mb, nseg = 0;
    AS_VEC(eseg) segs = {0};
    unsigned char *nonconst = NULL;
    double *v0 = NULL;
    int ok = 1, rc = 0;

    if (as_reduce_plain)
        return work_edges_plain(w);
    while (cap < 2 * ne + 2)
        cap *= 2;
    tab = as_xmalloc(cap * sizeof *tab); /* (min, max) leader pair -> its open segment */
    for (h = 0; h < cap; h++)
        tab[h] = NONE;
    segof = as_xmalloc((ne + 1) * sizeof *segof);
    for (j = 0; j < ne; j++) {
        const as_pedge *e = as_problem_edge(p, j);
        size_t lo, hi;
        if ((j & 63) == 63 && w->abort_at > 0 && as_now() > w->abort_at) {
            rc = 1;
            goto out;
        }
        a = red->leader[e->u];
        b = red->leader[e->v];
        segof[j] = NONE;
        if (a == b)
            continue;
        lo = a < b ? a : b;
        hi = a < b ? b : a;
        for (h = (lo * 0x9e3779b97f4a7c15ULL ^ hi * 0xc2b2ae3d27d4eb4fULL) >> 7 & (cap - 1);
             tab[h] != NONE && !(segs.v[tab[h]].a == lo && segs.v[tab[h]].b == hi) &&
             !(segs.v[tab[h]].a == hi && segs.v[tab[h]].b == lo);
             h = (h + 1) & (cap - 1))
            ;
        if (tab[h] != NONE && !segs.v[tab[h]].dead) {
            segof[j] = tab[h];
            segs.v[tab[h]].n++;
            continue;
        }
        {
            eseg g = {.a = a, .b = b, .n = 1};
            g.dead = (w->flags & AS_REDUCE_CONST) && edge_const(w, e, a, b, kof(w, e->v));
            AS_VEC_PUSH(&segs, g);
            segof[j] = segs.n - 1;
            if (tab[h] == NONE || !g.dead) /* a dead one is not open: keep the slot's */
                tab[h] = g.dead && tab[h] == NONE ? NONE : segs.n - 1;
        }
    }
    nseg = segs.n;
    /* each segment's edges, in order */
    fill = as_xcalloc(nseg + 1, sizeof *fill);
    for (s = 0, j = 0; s < nseg; s++) {
        segs.v[s].first = j;
        j += segs.v[s].n;
    }
    js = as_xmalloc((ne + 1) * sizeof *js);
    for (j = 0; j < ne; j++)
        if (segof[j] != NONE) {
            s = segof[j];
            js[segs.v[s].first + fill[s]++] = j;
        }
    free(fill);
    for (s = 0; s < n; s++)
        kmax = kof(w, s) > kmax ? kof(w, s) : kmax;
    mb = as_xmalloc((kmax + 1) * sizeof *mb);
    for (s = 0; s < nseg; s++)
        if (segs.v[s].n > kmax)
            kmax = segs.v[s].n;
    nonconst = as_xmalloc(kmax + 1);
    v0 = as_xmalloc((kmax + 1) * sizeof *v0);
    for (s = 0; s < nseg && ok; s++) {
        if (segs.v[s].dead)
            continue;
        if ((s & 15) == 15 && w->abort_at > 0 && as_now() > w->abort_at) {
            rc = 1;
            break;
        }
        ok = eseg_sum(w, &segs.v[s], js, mb, nonconst, v0);
    }
    free(mb);
    if (rc == 0 && ok) { /* replay, in order */
        for (j = 0; j < ne; j++) {
            const as_pedge *e = as_problem_edge(p, j);
            size_t kv = kof(w, e->v), ka;
            eseg *g;
            a = red->leader[e->u];
            b = red->leader[e->v];
            if (a == b) { /* as work_edges_plain */
                ka = kof(w, a);
                for (s = 0; s < ka; s++)
                    if (w->nodes[a].ok[s])
                        w->nodes[a].cost[s] +=
                            e->r[fmap(red, e->u, s) * kv + fmap(red, e->v, s)];
                continue;
            }
            g = &segs.v[segof[j]];
            if (g->dead) { /* made and dropped at once, as edge_into does */
                edge_into(w, e, a, b, kv);
            } else if (js[g->first] == j) {
                wedge we = {.u = g->a, .v = g->b, .r = g->r, .alive = 1};
                AS_VEC_PUSH(&w->edges, we);
                AS_VEC_PUSH(&w->nodes[g->a].adj, w->edges.n - 1);
                AS_VEC_PUSH(&w->nodes[g->b].adj, w->edges.n - 1);
                g->r = NULL;
            } else {
                w->red->stats.merged_edges++;
                as_reduce_shortcuts++;
            }
        }
    }
    free(js);
out:
    for (s = 0; s < segs.n; s++)
        free(segs.v[s].r);
    AS_VEC_FREE(&segs);
    free(segof);
    free(tab);
    free(nonconst);
    free(v0);
    if (rc == 0 && !ok)
        return work_edges_plain(w);
    return rc;
}

/* ---- PBQP ---- */

static void
elim_deg0(work *w, size_t x)
{
    elim el = {.x = x, .deg = 0, .choice = NONE};
    size_t s;

    for (s = 0; s < kof(w, x); s++)
        if (w->nodes[x].ok[s] &&
            (el.choice == NONE || w->nodes[x].cost[s] < w->nodes[x].cost[el.choice]))
            el.choice = s;
    w->offset += w->nodes[x].cost[el.choice];
    AS_VEC_PUSH(&w->red->elims, el);
    w->red->stats.elim[0]++;
}

/* Best strategy of X and its value, for neighbour strategies through the two callbacks. */
static void
elim_deg1(work *w, size_t x, wedge *e)
{
    size_t y = e->u == x ? e->v : e->u, ky = kof(w, y), kx = kof(w, x), p, q;
    elim el = {.x = x, .y = y, .deg = 1};

    el.best = as_xcalloc(ky, sizeof *el.best);
    for (p = 0; p < ky; p++) {
        double best = INFINITY;
        if (!w->nodes[y].ok[p])
            continue;
        for (q = 0; q < kx; q++) {
            double v;
            if (!w->nodes[x].ok[q])
                continue;
            v = rget(w, e, y, p, q) + w->nodes[x].cost[q];
            if (v < best) {
                best = v;
                el.best[p] = q;
            }
        }
        w->nodes[y].cost[p] += best;
    }
    e->alive = 0;
    AS_VEC_PUSH(&w->red->elims, el);
    w->red->stats.elim[1]++;
}

/* An entry of a row of elim_deg2: value and index, ascending by value, then index. */
typedef struct vidx {
    double v;
    size_t i;
} vidx;

static int
cmp_vidx(const void *x, const void *y)
{
    const vidx *a = x, *b = y;

    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/*
 * REP[p] for the K rows of M (LEN doubles each): the first possible row (OK) with the same
 * bits, p itself when none comes before; NONE for rows that are not possible.  Equal rows
 * give equal results in elim_deg2, so only the first of each is computed.
 */
static void
row_reps(const double *m, size_t k, size_t len, const unsigned char *ok, size_t *rep)
{
    size_t cap = 16, mask, p, i, h;
    size_t *tab;

    while (cap < 2 * k)
        cap *= 2;
    mask = cap - 1;
    tab = as_xmalloc(cap * sizeof *tab);
    for (i = 0; i < cap; i++)
        tab[i] = NONE;
    for (p = 0; p < k; p++) {
        const double *row = m + p * len;
        unsigned long long hv = 1469598103934665603ULL;
        rep[p] = NONE;
        if (!ok[p])
            continue;
        for (i = 0; i < len; i++) {
            unsigned long long bits;
            memcpy(&bits, &row[i], sizeof bits);
            hv = (hv ^ bits) * 1099511628211ULL;
            hv ^= hv >> 29;
        }
        if (as_reduce_plain) {
            rep[p] = p;
            continue;
        }
        for (h = (size_t)(hv ^ (hv >> 32)) & mask;; h = (h + 1) & mask) {
            if (tab[h] == NONE) {
                tab[h] = p;
                rep[p] = p;
                break;
            }
            if (memcmp(m + tab[h] * len, row, len * sizeof *row) == 0) {
                rep[p] = tab[h];
                as_reduce_shortcuts++;
                break;
            }
        }
    }
    free(tab);
}

static void
elim_deg2(work *w, size_t x, wedge *e1, wedge *e2)
{
    size_t y = e1->u == x ? e1->v : e1->u, z = e2->u == x ? e2->v : e2->u;
    size_t ky = kof(w, y), kz = kof(w, z), kx = kof(w, x), p, r, q, nq = 0, i;
    elim el = {.x = x, .y = y, .z = z, .deg = 2, .kz = kz};
    double *n = as_xcalloc(ky * kz, sizeof *n);
    size_t *qs = as_xmalloc((kx + 1) * sizeof *qs);
    double *a, *b, *bmin;
    size_t *repa, *repb;
    vidx *ord;

    /* dense copies over X's possible strategies: a[p][i] = R1 + c, b[r][i] = R2 */
    for (q = 0; q < kx; q++)
        if (w->nodes[x].ok[q])
            qs[nq++] = q;
    a = as_xmalloc((ky * nq + 1) * sizeof *a);
    b = as_xmalloc((kz * nq + 1) * sizeof *b);
    for (p = 0; p < ky; p++)
        for (i = 0; w->nodes[y].ok[p] && i < nq; i++)
            a[p * nq + i] = rget(w, e1, y, p, qs[i]) + w->nodes[x].cost[qs[i]];
    for (r = 0; r < kz; r++)
        for (i = 0; w->nodes[z].ok[r] && i < nq; i++)
            b[r * nq + i] = rget(w, e2, z, r, qs[i]);
    bmin = as_xmalloc((kz + 1) * sizeof *bmin);
    ord = as_xmalloc((nq + 1) * sizeof *ord);
    for (r = 0; r < kz; r++) {
        bmin[r] = INFINITY;
        for (i = 0; w->nodes[z].ok[r] && i < nq; i++)
            bmin[r] = fmin(bmin[r], b[r * nq + i]);
    }
    el.best = as_xcalloc(ky * kz, sizeof *el.best);
    /* repeated rows of a and of b (tied layers, strategies that differ only where X does not
       look) are computed once and copied: the same sums and the same argmin */
    repa = as_xmalloc((ky + 1) * sizeof *repa);
    repb = as_xmalloc((kz + 1) * sizeof *repb);
    row_reps(a, ky, nq, w->nodes[y].ok, repa);
    row_reps(b, kz, nq, w->nodes[z].ok, repb);
    for (p = 0; p < ky; p++) {
        const double *ap = a + p * nq;
        if (!w->nodes[y].ok[p])
            continue;
        if (repa[p] != p) {
            memcpy(n + p * kz, n + repa[p] * kz, kz * sizeof *n);
            memcpy(el.best + p * kz, el.best + repa[p] * kz, kz * sizeof *el.best);
            continue;
        }
        /* X's strategies by a[p][.] ascending: for each r the scan stops at the first i with
           a[p][i] + min_i b[r][i] > best, past which nothing can be as cheap; ties keep the
           lowest index, so the result is the plain scan's, entry for entry */
        for (i = 0; i < nq; i++) {
            ord[i].v = ap[i];
            ord[i].i = i;
        }
        qsort(ord, nq, sizeof *ord, cmp_vidx);
        for (r = 0; r < kz; r++) {
            const double *br = b + r * nq;
            double best = INFINITY;
            size_t bi = 0, j;
            if (!w->nodes[z].ok[r])
                continue;
            if (repb[r] != r) { /* an earlier r, done */
                el.best[p * kz + r] = el.best[p * kz + repb[r]];
                n[p * kz + r] = n[p * kz + repb[r]];
                continue;
            }
            for (j = 0; j < nq; j++) {
                double v;
                i = ord[j].i;
                if (ap[i] + bmin[r] > best)
                    break;
                v = ap[i] + br[i];
                if (v < best || (v == best && i < bi)) {
                    best = v;
                    bi = i;
                }
            }
            if (nq > 0)
                el.best[p * kz + r] = qs[bi];
            n[p * kz + r] = best;
        }
    }
    free(a);
    free(b);
    free(bmin);
    free(ord);
    free(qs);
    free(repa);
    free(repb);
    e1->alive = e2->alive = 0; /* before work_add_edge, which may move w->edges.v */
    AS_VEC_PUSH(&w->red->elims, el);
    w->red->stats.elim[2]++;
    work_add_edge(w, y, z, n);
}

/* X has one possible strategy: its edges become costs of its neighbours. */
static void
elim_single(work *w, size_t x)
{
    size_t i, s0, p;
    elim el = {.x = x, .deg = 0};

    for (s0 = 0; !w->nodes[x].ok[s0]; s0++)
        ;
    for (i = 0; i < w->nodes[x].adj.n; i++) {
        wedge *e = &w->edges.v[w->nodes[x].adj.v[i]];
        size_t y;
        if (!e->alive)
            continue;
        y = e->u == x ? e->v : e->u;
        for (p = 0; p < kof(w, y); p++)
            if (w->nodes[y].ok[p])
                w->nodes[y].cost[p] += rget(w, e, y, p, s0);
        e->alive = 0;
    }
    el.choice = s0;
    w->nodes[x].fixed = s0;
    w->offset += w->nodes[x].cost[s0];
    AS_VEC_PUSH(&w->red->elims, el);
    w->red->stats.single++;
}

/* Run R0/R1/R2/RS on unpinned leaders until nothing changes. */
static void
work_pbqp(work *w)
{
    size_t n = as_problem_nnodes(w->p), x, deg, inc[3], y, z, i, steps = 0;
    AS_VEC(size_t) stack = {0};

    for (x = n; x-- > 0;)
        if (w->nodes[x].alive && !w->nodes[x].pinned)
            AS_VEC_PUSH(&stack, x);
    while (stack.n > 0) {
        if ((++steps & 63) == 0 && past(w))
            break; /* the time limit: every elimination so far is exact, the rest stay */
        x = stack.v[--stack.n];
        if (!w->nodes[x].alive || w->nodes[x].pinned)
            continue;
        if (w->nodes[x].nok == 1) { /* decided: its memory is a constant (work_refresh) */
            for (i = 0; i < w->nodes[x].adj.n; i++) {
                const wedge *e = &w->edges.v[w->nodes[x].adj.v[i]];
                if (e->alive)
                    AS_VEC_PUSH(&stack, e->u == x ? e->v : e->u);
            }
            mark_nbrs(w, x); /* their costs change */
            w->nodes[x].alive = 0;
            elim_single(w, x);
            continue;
        }
        deg = work_degree(w, x, inc);
        if (deg > 2 || w->nodes[x].inmem)
            continue;
        w->nodes[x].alive = 0;
        if (deg == 0) {
            elim_deg0(w, x);
            continue;
        }
        y = w->edges.v[inc[0]].u == x ? w->edges.v[inc[0]].v : w->edges.v[inc[0]].u;
        AS_VEC_PUSH(&stack, y);
        w->nodes[y].dirty = 1; /* a cost or an edge changes */
        if (deg == 1) {
            elim_deg1(w, x, &w->edges.v[inc[0]]);
            continue;
        }
        z = w->edges.v[inc[1]].u == x ? w->edges.v[inc[1]].v : w->edges.v[inc[1]].u;
        AS_VEC_PUSH(&stack, z);
        w->nodes[z].dirty = 1;
        elim_deg2(w, x, &w->edges.v[inc[0]], &w->edges.v[inc[1]]);
    }
    AS_VEC_FREE(&stack);
}

/* ---- dominance ---- */

/*
 * Dead-end elimination (Goldstein's criterion): strategy p of X is dropped
 * when another possible strategy t is no worse whatever the neighbours
 * choose -- c(t) - c(p) + sum_e max_q (R_e[t][q] - R_e[p][q]) <= 0 -- and
 * uses no more memory in any live row.  Some optimal plan avoids p: in any
 * plan using p, switching X to t costs no more and still fits.  Returns
 * how many strategies went.
 */
/* A column of X's rows on one edge: a neighbour strategy, its hash over X's possible rows. */
typedef struct dcol {
    uint64_t h;
    size_t q;
} dcol;
typedef AS_VEC(double) dvec;

static int
dcol_cmp(const void *a, const void *b)
{
    const dcol *x = a, *y = b;

    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->q < y->q ? -1 : x->q > y->q;
}

/*
 * X's rows on edge E (x's strategies by the neighbour's), over the neighbour's possible
 * strategies only, one column per class of equal columns (neighbour strategies that cost
 * the same against every possible strategy of X: a resharding cost depends on the
 * layouts, and many strategies share one): CM (kx x nc, row-major) gets them, returns
 * nc.  A maximum of R[a][q] - R[p][q] over the possible q is the same over the classes,
 * bit for bit (the same differences).  With as_reduce_plain every possible q is its own
 * column.  COLS (ky) is scratch.
 */
static size_t
dom_columns(const work *w, size_t x, const wedge *e, dvec *cm, dcol *cols)
{
    size_t y = e->u == x ? e->v : e->u, kx = kof(w, x), ky = kof(w, y), q, p, nc = 0, i, j;
    const unsigned char *oy = w->nodes[y].ok, *ox = w->nodes[x].ok;
    size_t sp = e->u == x ? ky : 1, sq = e->u == x ? 1 : kx; /* entry (p, q) at p sp + q sq */
    const double *r = e->r;
    double *out;

    for (q = 0; q < ky; q++)
        if (oy[q]) {
            cols[nc].h = 0x9e3779b97f4a7c15ULL;
            cols[nc++].q = q;
        }
    /* hashes of the columns over x's possible rows, in the matrix's memory order */
    for (p = 0; !as_reduce_plain && sq == 1 && p < kx; p++) { /* x's rows are r's rows */
        const double *row = r + p * sp;
        for (i = 0; ox[p] && i < nc; i++) {
            uint64_t b, h = cols[i].h;
            memcpy(&b, &row[cols[i].q], sizeof b);
            h = (h ^ b) * 0x100000001b3ULL;
            cols[i].h = h ^ (h >> 29);
        }
    }
    for (i = 0; !as_reduce_plain && sq != 1 && i < nc; i++) { /* columns are r's rows */
        const double *col = r + cols[i].q * sq;
        uint64_t h = cols[i].h;
        for (p = 0; p < kx; p++)
            if (ox[p]) {
                uint64_t b;
                memcpy(&b, &col[p], sizeof b);
                h = (h ^ b) * 0x100000001b3ULL;
                h ^= h >> 29;
            }
        cols[i].h = h;
    }
    if (!as_reduce_plain && nc > 1) { /* equal hashes next to each other, q ascending */
        size_t m = 0;
        qsort(cols, nc, sizeof *cols, dcol_cmp);
        for (i = 0; i < nc; i++) {
            for (j = m; j > 0 && cols[j - 1].h == cols[i].h; j--) { /* reps of this hash */
                size_t a = cols[j - 1].q, b = cols[i].q;
                for (p = 0; p < kx; p++)
                    if (ox[p] && memcmp(&r[p * sp + a * sq], &r[p * sp + b * sq],
                                        sizeof *r) != 0)
                        break;
                if (p == kx)
                    break; /* equal to rep a */
            }
            if (j > 0 && cols[j - 1].h == cols[i].h)
                continue;
            cols[m++] = cols[i];
        }
        if (m < nc)
            as_reduce_shortcuts++;
        nc = m;
    }
    AS_VEC_RESERVE(cm, cm->n + kx * nc + 1);
    out = cm->v + cm->n;
    for (p = 0; p < kx; p++)
        for (i = 0; ox[p] && i < nc; i++)
            out[p * nc + i] = r[p * sp + cols[i].q * sq];
    cm->n += kx * nc;
    return nc;
}

static size_t
work_dominance(work *w)
{
    size_t n = as_problem_nnodes(w->p), x, t, i, p, q, a, removed = 0, gone;
    size_t *off = as_xcalloc(n + 2, sizeof *off), *fill = as_xcalloc(n + 1, sizeof *fill);
    size_t *cmo = NULL, *cmn = NULL, *wit = NULL, *arg = NULL, kmax = 1;
    dvec cm = {0};
    AS_VEC(double) ext = {0};
    const double **mv;
    dcol *cols;

    for (t = 0; t < w->rows.n; t++)
        for (i = 0; w->rows.v[t].alive && i < w->rows.v[t].n; i++)
            off[w->rows.v[t].node[i] + 1]++;
    for (x = 0; x < n; x++) {
        off[x + 1] += off[x];
        if (kof(w, x) > kmax)
            kmax = kof(w, x);
    }
    cols = as_xmalloc((kmax + 1) * sizeof *cols);
    mv = as_xcalloc(off[n] + 1, sizeof *mv);
    for (t = 0; t < w->rows.n; t++)
        for (i = 0; w->rows.v[t].alive && i < w->rows.v[t].n; i++) {
            x = w->rows.v[t].node[i];
            mv[off[x] + fill[x]++] = w->rows.v[t].m[i];
        }
    for (x = 0; x < n; x++) {
        wnode *nd = &w->nodes[x];
        size_t kx = kof(w, x);
        if (!nd->alive || nd->pinned || nd->nok < 2 || !nd->dirty)
            continue;
        /* the time limit: what was removed so far is exact.  Checked at every node looked
           at (a node of gpt3-1.3b 4x2x2 takes ms: every 64 nodes ran 0.3 s past it) */
        if (past(w))
            break;
        nd->dirty = 0;
        gone = removed;
        /* x's rows on each live edge over the neighbour's classes of possible strategies */
        cm.n = 0;
        cmo = as_xrealloc(cmo, (nd->adj.n + 1) * sizeof *cmo);
        cmn = as_xrealloc(cmn, (nd->adj.n + 1) * sizeof *cmn);
        wit = as_xrealloc(wit, (nd->adj.n + 1) * sizeof *wit);
        for (i = 0; i < nd->adj.n; i++) {
            const wedge *e = &w->edges.v[nd->adj.v[i]];
            cmo[i] = cm.n;
            cmn[i] = e->alive ? dom_columns(w, x, e, &cm, cols) : 0;
            wit[i] = NONE;
        }
        /* per live edge and strategy of x: max and min of its row over the neighbour's
           possible strategies; max_q (R[a][q] - R[p][q]) is at least the difference of the
           maxima and of the minima, which rules most pairs out cheaply */
        ext.n = 0;
        AS_VEC_RESERVE(&ext, 2 * nd->adj.n * kx + 1);
        arg = as_xrealloc(arg, (2 * nd->adj.n * kx + 1) * sizeof *arg);
        for (i = 0; i < nd->adj.n; i++) {
            const wedge *e = &w->edges.v[nd->adj.v[i]];
            size_t nc = cmn[i];
            double *mx = ext.v + 2 * i * kx, *mn = mx + kx;
            size_t *amx = arg + 2 * i * kx, *amn = amx + kx;
            for (p = 0; p < kx; p++) {
                const double *rp = cm.v + cmo[i] + p * nc;
                mx[p] = -INFINITY;
                mn[p] = INFINITY;
                amx[p] = amn[p] = NONE;
                for (q = 0; e->alive && nd->ok[p] && q < nc; q++) {
                    if (rp[q] > mx[p]) {
                        mx[p] = rp[q];
                        amx[p] = q;
                    }
                    if (rp[q] < mn[p]) {
                        mn[p] = rp[q];
                        amn[p] = q;
                    }
                }
            }
        }
        for (p = 0; p < kx && nd->nok > 1; p++) {
            if (!nd->ok[p])
                continue;
            for (a = 0; a < kx; a++) {
                double d, lb, tol;
                if (a == p || !nd->ok[a])
                    continue;
                lb = nd->cost[a] - nd->cost[p];
                tol = fabs(nd->cost[a]) + fabs(nd->cost[p]);
                for (i = 0; i < nd->adj.n; i++) {
                    const double *mx = ext.v + 2 * i * kx, *mn = mx + kx;
                    double d1 = mx[a] - mx[p], d2 = mn[a] - mn[p];
                    if (!w->edges.v[nd->adj.v[i]].alive)
                        continue;
                    lb += d1 > d2 ? d1 : d2;
                    tol += fabs(mx[a]) + fabs(mx[p]) + fabs(mn[a]) + fabs(mn[p]);
                }
                if (lb > 1e-9 * tol)
                    continue; /* a cannot dominate p (beyond any rounding) */
                d = nd->cost[a] - nd->cost[p];
                for (i = 0; d <= 0 && i < nd->adj.n; i++) {
                    const wedge *e = &w->edges.v[nd->adj.v[i]];
                    size_t nc = cmn[i];
                    const double *ra = cm.v + cmo[i] + a * nc, *rp = cm.v + cmo[i] + p * nc;
                    double mx = -INFINITY;
                    if (!e->alive)
                        continue;
                    /* d + mx only grows: once it is positive, a does not dominate p.  The
                       entry that showed it for the last a is tried first (as_reduce_plain:
                       not): the max, and whether d + mx gets positive, do not depend on the
                       order */
                    q = wit[i];
                    if (q != NONE && ra[q] - rp[q] > mx)
                        mx = ra[q] - rp[q];
                    if (!as_reduce_plain) { /* where a's row peaks, where p's row is lowest */
                        const size_t *amx = arg + 2 * i * kx, *amn = amx + kx;
                        q = amx[a];
                        if (q != NONE && ra[q] - rp[q] > mx)
                            mx = ra[q] - rp[q];
                        q = amn[p];
                        if (q != NONE && ra[q] - rp[q] > mx)
                            mx = ra[q] - rp[q];
                    }
                    for (q = 0; q < nc && !(d + mx > 0); q++)
                        if (ra[q] - rp[q] > mx)
                            mx = ra[q] - rp[q];
                    if (d + mx > 0 && q > 0 && !as_reduce_plain) {
                        if (q - 1 != wit[i])
                            as_reduce_shortcuts++;
                        wit[i] = q - 1;
                    }
                    d += mx;
                }
                for (i = off[x]; d <= 0 && i < off[x + 1]; i++)
                    if (mv[i][a] > mv[i][p])
                        d = INFINITY;
                if (d <= 0) { /* a dominates p */
                    if (w->best != NULL && w->best[x] == p)
                        w->best[x] = a; /* no worse, and still fits */
                    nd->ok[p] = 0;
                    nd->nok--;
                    removed++;
                    break;
                }
            }
        }
        if (removed > gone)
            mark_nbrs(w, x); /* their maxima over x's strategies may drop */
    }
    free(off);
    free(fill);
    free(mv);
    free(cols);
    free(cmo);
    free(cmn);
    free(wit);
    free(arg);
    AS_VEC_FREE(&cm);
    AS_VEC_FREE(&ext);
    w->red->stats.dominated += removed;
    return removed;
}

/* ---- memory rows ---- */

/*
 * Is live row A implied by live row B: every entry of A is in B with no
 * more memory for any possible strategy, and A's constant is no larger?
 * POS (n entries, NONE-filled) is scratch: it maps B's leaders to entries.
 */
static int
row_within(const work *w, const wrow *a, const wrow *b, size_t *pos)
{
    size_t i, s, ok = 1;

    if (a->resident > b->resident || a->n > b->n)
        return 0;
    for (i = 0; i < b->n; i++)
        pos[b->node[i]] = i;
    for (i = 0; ok && i < a->n; i++) {
        size_t L = a->node[i], j = pos[L];
        if (j == NONE) {
            ok = 0;
            break;
        }
        for (s = 0; s < kof(w, L); s++)
            if (w->nodes[L].ok[s] && a->m[i][s] > b->m[j][s]) {
                ok = 0;
                break;
            }
    }
    for (i = 0; i < b->n; i++)
        pos[b->node[i]] = NONE;
    return (int)ok;
}

/* Drop rows implied by a neighbouring live row (liveness points are in schedule order). */
static void
work_row_dominance(work *w)
{
    size_t n = as_problem_nnodes(w->p), t, i, *pos = as_xmalloc((n + 1) * sizeof *pos);
    AS_VEC(size_t) stack = {0};

    for (i = 0; i < n; i++)
        pos[i] = NONE;
    for (t = 0; t < w->rows.n; t++) {
        wrow *r = &w->rows.v[t];
        if (!r->alive)
            continue;
        while (stack.n > 0 && row_within(w, &w->rows.v[stack.v[stack.n - 1]], r, pos))
            w->rows.v[stack.v[--stack.n]].alive = 0;
        if (stack.n > 0 && row_within(w, r, &w->rows.v[stack.v[stack.n - 1]], pos))
            r->alive = 0;
        else
            AS_VEC_PUSH(&stack, t);
    }
    AS_VEC_FREE(&stack);
    free(pos);
}

/*
 * Fold decided nodes into the rows' constants, drop rows that can no longer
 * bind (constants plus every entry's largest possible memory fit), and
 * recompute which leaders are still in a row.  Returns how many leaders
 * left every row (so PBQP may take them now).
 */
/* A row entry's largest memory over its node's possible strategies is not above 0. */
#define REF_NONPOS (NONE - 1)

static size_t
work_refresh(work *w)
{
    size_t n = as_problem_nnodes(w->p), t, i, j, s, freed = 0;
    double budget = as_problem_memory(w->p);
    unsigned char *was = as_xcalloc(n + 1, 1), *rowlive = as_xcalloc(w->rows.n + 1, 1);
    int cache = !as_reduce_plain; /* possible strategies only go: a witness that is still
                                     possible still shows the same (as_reduce_plain: scans) */

    for (t = 0; t < w->rows.n; t++)
        rowlive[t] = (unsigned char)w->rows.v[t].alive;
    for (t = 0; t < w->rows.n; t++) {
        wrow *r = &w->rows.v[t];
        double top = r->resident;
        if (!r->alive)
            continue;
        if (cache && r->wit == NULL) {
            r->wit = as_xmalloc((3 * r->n + 1) * sizeof *r->wit);
            for (i = 0; i < 3 * r->n; i++)
                r->wit[i] = NONE;
        }
        for (i = j = 0; i < r->n; i++) {
            wnode *x = &w->nodes[r->node[i]];
            size_t s0 = x->fixed, *wi = cache ? r->wit + 3 * i : NULL;
            if (x->alive && wi != NULL && wi[1] != NONE && x->ok[wi[1]] && x->ok[wi[2]]) {
                s0 = NONE - 1; /* still two possible strategies of different memory */
                as_reduce_shortcuts++;
            } else if (x->alive) { /* the same memory whatever it chooses: a constant too */
                for (s0 = 0; !x->ok[s0]; s0++)
                    ;
                for (s = s0 + 1; s < kof(w, r->node[i]); s++)
                    if (x->ok[s] && r->m[i][s] != r->m[i][s0])
                        break;
                if (s < kof(w, r->node[i])) {
                    if (wi != NULL) {
                        wi[1] = s0;
                        wi[2] = s;
                    }
                    s0 = NONE - 1; /* varies: stays */
                }
            }
            if (s0 != NONE - 1) {
                if (s0 != NONE) {
                    r->resident += r->m[i][s0];
                    r->room -= r->m[i][s0];
                }
                continue; /* the vector is the pool's (work_init) */
            }
            if (wi != NULL && j < i)
                memcpy(r->wit + 3 * j, wi, 3 * sizeof *wi);
            r->node[j] = r->node[i];
            r->m[j++] = r->m[i];
        }
        r->n = j;
        top = r->resident;
        for (i = 0; i < r->n; i++) {
            const unsigned char *ok = w->nodes[r->node[i]].ok;
            size_t *wi = cache ? r->wit + 3 * i : NULL, h = NONE;
            double mx = 0;
            if (wi != NULL && (wi[0] == REF_NONPOS || (wi[0] != NONE && ok[wi[0]]))) {
                /* the largest over more strategies, and still possible: still the largest */
                mx = wi[0] == REF_NONPOS || !(r->m[i][wi[0]] > 0) ? 0 : r->m[i][wi[0]];
                as_reduce_shortcuts++;
            } else {
                for (s = 0; s < kof(w, r->node[i]); s++)
                    if (ok[s] && r->m[i][s] > mx) {
                        mx = r->m[i][s];
                        h = s;
                    }
                if (wi != NULL)
                    wi[0] = h == NONE ? REF_NONPOS : h;
            }
            top += mx;
        }
        if (top <= budget)
            r->alive = 0;
    }
    work_row_dominance(w);
    for (i = 0; i < n; i++) {
        was[i] = (unsigned char)w->nodes[i].inmem;
        w->nodes[i].inmem = 0;
    }
    for (t = 0; t < w->rows.n; t++)
        for (i = 0; w->rows.v[t].alive && i < w->rows.v[t].n; i++) {
            size_t L = w->rows.v[t].node[i], h = cache ? w->rows.v[t].wit[3 * i] : NONE;
            if (h != NONE && h != REF_NONPOS && w->nodes[L].ok[h] &&
                w->rows.v[t].m[i][h] != 0) {
                w->nodes[L].inmem = 1; /* a possible strategy with memory there */
                continue;
            }
            for (s = 0; !w->nodes[L].inmem && s < kof(w, L); s++) /* once is enough */
                if (w->nodes[L].ok[s] && w->rows.v[t].m[i][s] != 0)
                    w->nodes[L].inmem = 1;
        }
    for (i = 0; i < n; i++)
        freed += was[i] && !w->nodes[i].inmem && w->nodes[i].alive;
    for (t = 0; t < w->rows.n; t++) /* a row gone: its nodes' memory no longer binds there */
        for (i = 0; rowlive[t] && !w->rows.v[t].alive && i < w->rows.v[t].n; i++)
            w->nodes[w->rows.v[t].node[i]].dirty = 1;
    free(was);
    free(rowlive);
    return freed;
}

/* ---- bound pruning ---- */

/* Does PLAN (leader strategies, NONE for dead leaders) satisfy every memory and alias row? */
static int
work_plan_ok(const work *w, const size_t *plan)
{
    size_t t, i;

    for (t = 0; t < w->rows.n; t++) {
        const wrow *r = &w->rows.v[t];
        double sum = 0;
        if (!r->alive)
            continue;
        for (i = 0; i < r->n; i++)
            if (plan[r->node[i]] != NONE)
                sum += r->m[i][plan[r->node[i]]];
        if (sum > r->room * (1 + 1e-12))
            return 0;
    }
    for (i = 0; i < w->kept_alias.n; i++) {
        const as_palias *a = as_problem_alias(w->p, w->kept_alias.v[i]);
        size_t x = plan[w->red->leader[a->a]], y = plan[w->red->leader[a->b]];
        if (x != NONE && y != NONE && alias_bad(w, a, x, y))
            return 0;
    }
    return 1;
}

/* The bound's problem over the live leaders: compact strategy lists. */
typedef struct cgraph {
    as_mrf g;
    size_t *node;     /**< compact -> leader */
    size_t *cidx;     /**< leader -> compact */
    size_t **sub;     /**< compact strategy -> leader strategy */
    size_t *aoff;     /**< adjacency CSR: edges of c are adj[aoff[c] .. aoff[c+1]) */
    size_t *adj;      /**< 2 * edge + side (0: c is eu) */
    size_t *we;       /**< edge -> work edge */
} cgraph;

/* Cost change of moving compact node C from strategy A to B, neighbours at PLAN. */
static double
move_cost(const cgraph *cg, const size_t *plan, size_t c, size_t a, size_t b)
{
    const as_mrf *g = &cg->g;
    double d = g->c[c][b] - g->c[c][a];
    size_t i;

    for (i = cg->aoff[c]; i < cg->aoff[c + 1]; i++) {
        size_t j = cg->adj[i] / 2, kv = g->k[g->ev[j]];
        if (cg->adj[i] % 2 == 0)
            d += g->r[j][b * kv + plan[g->ev[j]]] - g->r[j][a * kv + plan[g->ev[j]]];
        else
            d += g->r[j][plan[g->eu[j]] * kv + b] - g->r[j][plan[g->eu[j]] * kv + a];
    }
    return d;
}

/* Memory rows seen from the compact nodes: entries of C are x in [off[c], off[c+1]). */
typedef struct crows {
    size_t *off, *row, *ent;
} crows;

static void
crows_init(crows *cr, const work *w, const cgraph *cg)
{
    size_t nn = cg->g.n, t, i, c, *fill = as_xcalloc(nn + 1, sizeof *fill);

    cr->off = as_xcalloc(nn + 1, sizeof *cr->off);
    for (t = 0; t < w->rows.n; t++)
        for (i = 0; w->rows.v[t].alive && i < w->rows.v[t].n; i++)
            cr->off[cg->cidx[w->rows.v[t].node[i]] + 1]++;
    for (c = 0; c < nn; c++)
        cr->off[c + 1] += cr->off[c];
    cr->row = as_xcalloc(cr->off[nn] + 1, sizeof *cr->row);
    cr->ent = as_xcalloc(cr->off[nn] + 1, sizeof *cr->ent);
    for (t = 0; t < w->rows.n; t++)
        for (i = 0; w->rows.v[t].alive && i < w->rows.v[t].n; i++) {
            c = cg->cidx[w->rows.v[t].node[i]];
            cr->row[cr->off[c] + fill[c]] = t;
            cr->ent[cr->off[c] + fill[c]++] = i;
        }
    free(fill);
}

static void
crows_free(crows *cr)
{
    free(cr->off);
    free(cr->row);
    free(cr->ent);
}

/* SUM[t] = memory of live row t under compact PLAN. */
static void
crows_sums(const work *w, const cgraph *cg, const crows *cr, const size_t *plan, double *sum)
{
    size_t c, x;

    memset(sum, 0, (w->rows.n + 1) * sizeof *sum);
    for (c = 0; c < cg->g.n; c++)
        for (x = cr->off[c]; x < cr->off[c + 1]; x++)
            sum[cr->row[x]] += w->rows.v[cr->row[x]].m[cr->ent[x]][cg->sub[c][plan[c]]];
}

/* A repair move: node C to strategy B, its cost per byte of excess removed. */
typedef struct rmove {
    double score;
    size_t c, b;
} rmove;

static int
rmove_cmp(const void *a, const void *b)
{
    const rmove *x = a, *y = b;

    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    return x->c < y->c ? -1 : x->c > y->c;
}

/*
 * Make PLAN (compact) satisfy the live memory rows: greedily apply the
 * single-node move with the least cost increase per byte of excess removed,
 * then improve by moves that keep every row within its room.  Returns 1 if
 * the plan fits; 0 also when the deadline passes first.
 */
static int
work_repair(const work *w, const cgraph *cg, const crows *cr, size_t *plan)
{
    size_t nn = cg->g.n, t, i, c, b, it, nr = w->rows.n;
    const size_t *ioff = cr->off, *irow = cr->row, *ient = cr->ent;
    size_t *stamp = as_xcalloc(nn + 1, sizeof *stamp), *touched = as_xcalloc(nn + 1, sizeof *touched);
    size_t *doff = as_xcalloc(nn + 1, sizeof *doff);
    double *sum = as_xcalloc(nr + 1, sizeof *sum), excess = 0, *de;
    rmove *mv;
    int fits = 0;

    for (c = 0; c < nn; c++)
        doff[c + 1] = doff[c] + cg->g.k[c];
    de = as_xcalloc(doff[nn] + 1, sizeof *de);
    mv = as_xcalloc(nn + 1, sizeof *mv);
    crows_sums(w, cg, cr, plan, sum);
#define ROWM(x) (w->rows.v[irow[x]].m[ient[x]])
#define OVER(t_, x_) fmax(0, (x_) - w->rows.v[t_].room * (1 + 1e-12))
    for (t = 0; t < nr; t++)
        if (w->rows.v[t].alive)
            excess += OVER(t, sum[t]);
    for (it = 1; excess > 0 && it <= 20 * nn + 100; it++) {
        double best = INFINITY;
        if (it > 1 && past(w)) /* a scan of the rows can take a second */
            break; /* out of time: no plan (the bound rounds only prune less) */
        size_t bc = NONE, bb = 0, ntouch = 0, nmv, j, moved;
        /* excess removed by each move, over the rows over their room now */
        for (t = 0; t < nr; t++) {
            double e;
            if (!w->rows.v[t].alive || (e = OVER(t, sum[t])) <= 0)
                continue;
            for (i = 0; i < w->rows.v[t].n; i++) {
                const double *m = w->rows.v[t].m[i];
                c = cg->cidx[w->rows.v[t].node[i]];
                if (stamp[c] != it) {
                    stamp[c] = it;
                    touched[ntouch++] = c;
                    memset(de + doff[c], 0, cg->g.k[c] * sizeof *de);
                }
                for (b = 0; b < cg->g.k[c]; b++)
                    de[doff[c] + b] += fmax(-e, m[cg->sub[c][b]] - m[cg->sub[c][plan[c]]]);
            }
        }
        nmv = 0;
        for (i = 0; i < ntouch; i++) { /* each node's best move */
            double nb = INFINITY;
            size_t nbb = 0;
            c = touched[i];
            for (b = 0; b < cg->g.k[c]; b++) {
                double dc, score;
                if (b == plan[c] || !(de[doff[c] + b] < 0))
                    continue;
                dc = move_cost(cg, plan, c, plan[c], b);
                score = dc / -de[doff[c] + b];
                if (score < nb) {
                    nb = score;
                    nbb = b;
                }
            }
            if (nb < INFINITY)
                mv[nmv++] = (rmove){nb, c, nbb};
            if (nb < best)
                best = nb;
        }
        if (nmv == 0)
            break;
        /* the moves in order of score, each checked again after those before it: one scan
           of the rows makes several (a scan of gpt3-175b 4x4x4's 619k row entries took
           longer than the time the reductions had left) */
        qsort(mv, nmv, sizeof *mv, rmove_cmp);
        for (j = 0, moved = 0; j < nmv && excess > 0; j++) {
            double dx = 0, dc;
            bc = mv[j].c;
            bb = mv[j].b;
            for (i = ioff[bc]; i < ioff[bc + 1]; i++) {
                double was = sum[irow[i]],
                       now = was + ROWM(i)[cg->sub[bc][bb]] - ROWM(i)[cg->sub[bc][plan[bc]]];
                dx += OVER(irow[i], now) - OVER(irow[i], was);
            }
            if (!(dx < 0))
                continue;
            dc = move_cost(cg, plan, bc, plan[bc], bb);
            if (moved > 0 && dc > 0 && dc / -dx > 2 * fmax(best, 0))
                continue;
            for (i = ioff[bc]; i < ioff[bc + 1]; i++)
                sum[irow[i]] += ROWM(i)[cg->sub[bc][bb]] - ROWM(i)[cg->sub[bc][plan[bc]]];
            plan[bc] = bb;
            moved++;
            excess = 0;
            for (t = 0; t < nr; t++)
                if (w->rows.v[t].alive)
                    excess += OVER(t, sum[t]);
        }
        if (moved == 0)
            break;
    }
    fits = !(excess > 0);
    for (it = 0; fits && it < 20; it++) { /* cheaper moves that keep every row within room */
        int moved = 0;
        for (c = 0; c < nn; c++) {
            size_t a = plan[c], bb = a;
            double best = -1e-12 * fabs(cg->g.c[c][a]);
            for (b = 0; b < cg->g.k[c]; b++) {
                size_t x;
                double dc;
                if (b == a)
                    continue;
                for (x = ioff[c]; x < ioff[c + 1]; x++)
                    if (OVER(irow[x], sum[irow[x]] + ROWM(x)[cg->sub[c][b]] -
                                          ROWM(x)[cg->sub[c][a]]) > 0)
                        break;
                if (x < ioff[c + 1])
                    continue;
                dc = move_cost(cg, plan, c, a, b);
                if (dc < best) {
                    best = dc;
                    bb = b;
                }
            }
            if (bb != a) {
                for (i = ioff[c]; i < ioff[c + 1]; i++)
                    sum[irow[i]] += ROWM(i)[cg->sub[c][bb]] - ROWM(i)[cg->sub[c][a]];
                plan[c] = bb;
                moved = 1;
            }
        }
        if (!moved)
            break;
    }
#undef ROWM
#undef OVER
    free(stamp);
    free(touched);
    free(doff);
    free(de);
    free(mv);
    free(sum);
    return fits;
}

/* Build the compact problem of the live leaders. */
static void
cgraph_init(cgraph *cg, const work *w)
{
    size_t n = as_problem_nnodes(w->p), v, j, nn = 0, ne = 0, i, q, s;
    size_t *k = as_xcalloc(n + 1, sizeof *k), *eu, *ev;
    double **c = as_xcalloc(n + 1, sizeof *c), **r;

    memset(cg, 0, sizeof *cg);
    cg->cidx = as_xcalloc(n + 1, sizeof *cg->cidx);
    cg->node = as_xcalloc(n + 1, sizeof *cg->node);
    cg->sub = as_xcalloc(n + 1, sizeof *cg->sub);
    for (v = 0; v < n; v++) {
        cg->cidx[v] = NONE;
        if (!w->nodes[v].alive)
            continue;
        cg->cidx[v] = nn;
        cg->node[nn] = v;
        cg->sub[nn] = as_xcalloc(w->nodes[v].nok, sizeof **cg->sub);
        c[nn] = as_xcalloc(w->nodes[v].nok, sizeof **c);
        for (s = 0; s < kof(w, v); s++)
            if (w->nodes[v].ok[s]) {
                c[nn][k[nn]] = w->nodes[v].cost[s];
                cg->sub[nn][k[nn]++] = s;
            }
        nn++;
    }
    eu = as_xcalloc(w->edges.n + 1, sizeof *eu);
    ev = as_xcalloc(w->edges.n + 1, sizeof *ev);
    r = as_xcalloc(w->edges.n + 1, sizeof *r);
    cg->we = as_xcalloc(w->edges.n + 1, sizeof *cg->we);
    cg->aoff = as_xcalloc(nn + 2, sizeof *cg->aoff);
    for (j = 0; j < w->edges.n; j++) {
        const wedge *e = &w->edges.v[j];
        size_t a, b, kv = kof(w, e->v);
        if (!e->alive)
            continue;
        a = eu[ne] = cg->cidx[e->u];
        b = ev[ne] = cg->cidx[e->v];
        cg->we[ne] = j;
        r[ne] = as_xmalloc(k[a] * k[b] * sizeof **r);
        for (i = 0; i < k[a]; i++)
            for (q = 0; q < k[b]; q++)
                r[ne][i * k[b] + q] = e->r[cg->sub[a][i] * kv + cg->sub[b][q]];
        cg->aoff[a + 1]++;
        cg->aoff[b + 1]++;
        ne++;
    }
    for (v = 0; v < nn; v++)
        cg->aoff[v + 1] += cg->aoff[v];
    cg->adj = as_xcalloc(2 * ne + 1, sizeof *cg->adj);
    for (j = 0; j < ne; j++) {
        cg->adj[cg->aoff[eu[j]]++] = 2 * j;
        cg->adj[cg->aoff[ev[j]]++] = 2 * j + 1;
    }
    for (v = nn; v > 0; v--) /* the fill moved every start one list ahead */
        cg->aoff[v] = cg->aoff[v - 1];
    cg->aoff[0] = 0;
    cg->g.n = nn;
    cg->g.k = k;
    cg->g.c = (const double *const *)c;
    cg->g.m = ne;
    cg->g.eu = eu;
    cg->g.ev = ev;
    cg->g.r = (const double *const *)r;
}

static void
cgraph_free(cgraph *cg)
{
    size_t i;

    free(cg->we);
    for (i = 0; i < cg->g.n; i++) {
        free(cg->sub[i]);
        free((double *)cg->g.c[i]);
    }
    for (i = 0; i < cg->g.m; i++)
        free((double *)cg->g.r[i]);
    free((size_t *)cg->g.k);
    free((double **)cg->g.c);
    free((size_t *)cg->g.eu);
    free((size_t *)cg->g.ev);
    free((double **)cg->g.r);
    free(cg->node);
    free(cg->cidx);
    free(cg->sub);
    free(cg->aoff);
    free(cg->adj);
}

/*
 * Make compact PLAN satisfy the kept alias pairs (TRW-S does not see them: they are not
 * edges, so its plans break them and no plan came out of the bound on the llama2 HLO dump
 * of ../shared/hlo, 54 pairs kept, where GLPK then took 20 s on 8 devices and none came in
 * 60 s on 2x2x2).  Per broken pair, the cheapest change of one side (or of both, when no
 * single side can) to a pair it allows, by the cost change with the neighbours where they
 * are; again until no pair is broken.  Returns 1 when none is.
 */
static int
work_alias_repair(const work *w, const cgraph *cg, size_t *plan)
{
    size_t it, i, j, t, na = w->kept_alias.n;

    for (it = 0; it < 4 * na + 16; it++) {
        int broken = 0;
        if (it > 0 && past(w))
            return 0;
        for (i = 0; i < na; i++) {
            const as_palias *a = as_problem_alias(w->p, w->kept_alias.v[i]);
            size_t cx = cg->cidx[w->red->leader[a->a]], cy = cg->cidx[w->red->leader[a->b]];
            size_t bx = NONE, by = NONE, kx, ky;
            double best = INFINITY, d;
            if (cx == NONE || cy == NONE ||
                !alias_bad(w, a, cg->sub[cx][plan[cx]], cg->sub[cy][plan[cy]]))
                continue;
            broken = 1;
            kx = cg->g.k[cx];
            ky = cg->g.k[cy];
            if (cx == cy) { /* one group: a strategy the pair allows with itself */
                for (j = 0; j < kx; j++)
                    if (!alias_bad(w, a, cg->sub[cx][j], cg->sub[cx][j]) &&
                        (d = move_cost(cg, plan, cx, plan[cx], j)) < best) {
                        best = d;
                        bx = by = j;
                    }
            } else {
                for (j = 0; j < kx; j++)
                    if (!alias_bad(w, a, cg->sub[cx][j], cg->sub[cy][plan[cy]]) &&
                        (d = move_cost(cg, plan, cx, plan[cx], j)) < best) {
                        best = d;
                        bx = j;
                        by = plan[cy];
                    }
                for (t = 0; t < ky; t++)
                    if (!alias_bad(w, a, cg->sub[cx][plan[cx]], cg->sub[cy][t]) &&
                        (d = move_cost(cg, plan, cy, plan[cy], t)) < best) {
                        best = d;
                        bx = plan[cx];
                        by = t;
                    }
                for (j = 0; bx == NONE && j < kx && kx * ky <= 1000000; j++)
                    for (t = 0; t < ky; t++)
                        if (!alias_bad(w, a, cg->sub[cx][j], cg->sub[cy][t]) &&
                            (d = move_cost(cg, plan, cx, plan[cx], j) +
                                 move_cost(cg, plan, cy, plan[cy], t)) < best) {
                            best = d;
                            bx = j;
                            by = t;
                        }
            }
            if (bx == NONE)
                return 0; /* no pair it allows: the solver says infeasible */
            plan[cx] = bx;
            plan[cy] = by;
        }
        if (!broken)
            return 1;
    }
    return 0;
}

/* Does compact PLAN satisfy every row?  (Leader plan in LP, n entries.) */
static int
cplan_ok(const work *w, const cgraph *cg, const size_t *plan, size_t *lp)
{
    size_t v, i;

    for (v = 0; v < as_problem_nnodes(w->p); v++)
        lp[v] = NONE;
    for (i = 0; i < cg->g.n; i++)
        lp[cg->node[i]] = cg->sub[i][plan[i]];
    return work_plan_ok(w, lp);
}

/* Cost of compact PLAN under the costs C0 (not the penalised ones in CG). */
static double
cplan_cost(cgraph *cg, double **c0, const size_t *plan)
{
    const double *const *cur = cg->g.c;
    double v;

    cg->g.c = (const double *const *)c0;
    v = as_mrf_eval(&cg->g, plan);
    cg->g.c = cur;
    return v;
}

/* Node costs of CG = C0 plus the rows' multipliers times memory; returns sum_t lam_t room_t. */
static double
cg_penalise(const work *w, cgraph *cg, const crows *cr, double **c0)
{
    double **cc = (double **)cg->g.c, pen = 0;
    size_t c, x, j, t;

    for (t = 0; t < w->rows.n; t++)
        if (w->rows.v[t].alive)
            pen += w->rows.v[t].lam * w->rows.v[t].room;
    for (c = 0; c < cg->g.n; c++) {
        memcpy(cc[c], c0[c], cg->g.k[c] * sizeof **cc);
        for (x = cr->off[c]; x < cr->off[c + 1]; x++) {
            const double *m = w->rows.v[cr->row[x]].m[cr->ent[x]];
            double l = w->rows.v[cr->row[x]].lam;
            for (j = 0; l > 0 && j < cg->g.k[c]; j++)
                cc[c][j] += l * m[cg->sub[c][j]];
        }
    }
    return pen;
}

/* Keep compact PLAN as the best plan if it fits and costs less than *UB (under C0). */
static void
consider(const work *w, cgraph *cg, double **c0, const size_t *plan, size_t *lp, double *ub,
         size_t *ubplan)
{
    double cost;

    if (cplan_ok(w, cg, plan, lp) && (cost = cplan_cost(cg, c0, plan)) < *ub) {
        *ub = cost;
        memcpy(ubplan, plan, cg->g.n * sizeof *plan);
    }
}

static void lam_best_take(work *w, const cgraph *cg, as_mrf_state *st, double abs_lb);

/*
 * Lagrangian bound for the memory rows: with multipliers l_t >= 0, every plan that fits costs
 * at least min_s [cost(s) + sum_t l_t (mem_t(s) - room_t)], and the penalties are node costs,
 * so TRW-S bounds it at any multipliers.  They come from column generation (Dantzig-Wolfe):
 * the plans the runs returned are the columns of a master LP,
 *   min sum_k mu_k cost_k  s.t.  sum_k mu_k mem_t(k) <= room_t,  sum_k mu_k = 1,  mu >= 0,
 * with the rows some mix of plans breaks (added as they are broken), and its row duals are the
 * next multipliers, taken halfway from the best ones so far (Wentges' smoothing; at the
 * master's own when that found no new plan).  The master's value is the bound of the plans it
 * has; when TRW-S's bound reaches it, or its plan is one the master has at the master's own
 * multipliers, the bound is the LP's over the plans' hull.  (Projected subgradient steps were
 * here before: gpt3-175b 8x8 under 394 GiB, 40 steps reached 13.857 in 0.56 s where this
 * reaches 13.90692 in 0.10 s, CBC's LP relaxation of the reduced ILP to 7 digits, and the
 * branching's leaves rise as far in a few steps.)  Each run's plan that fits may lower UB.
 * The multipliers end at the best bound's and carry over to the next round; BEST holds that
 * bound's result (its lb net of the penalty constant).  The plans stay in w->dw for the
 * branching's leaves, whose fixings price them (BB_BIG on a strategy a leaf excludes).
 */
typedef struct dwpool {
    size_t n;
    size_t **plan;
    double **sum;   /**< row sums of each plan (w->rows.n) */
    double *cost;   /**< under the current costs c0 */
    size_t *age;    /**< when it came */
} dwpool;

#define DW_CAP 400          /* plans kept */
#define DW_ITERS 60         /* runs at the root (it usually stops after 10-20) */
#define DW_ITERS_WARM 20    /* in a leaf, or a later round */
#define DW_ALPHA 0.5        /* the smoothing's weight on the best multipliers */
#define DW_GIB 1073741824.0 /* the master's rows in GiB */
#define DW_ROWS 200         /* rows added per pass */

static void
dw_free(work *w)
{
    dwpool *d = w->dw;
    size_t i;

    if (d == NULL)
        return;
    for (i = 0; i < d->n; i++) {
        free(d->plan[i]);
        free(d->sum[i]);
    }
    free(d->plan);
    free(d->sum);
    free(d->cost);
    free(d->age);
    free(d);
    w->dw = NULL;
}

/* Keep the KEEP newest plans of the pool. */
static void
dw_trim(dwpool *d, size_t keep)
{
    while (d->n > keep) {
        size_t o = 0, i;
        for (i = 1; i < d->n; i++)
            if (d->age[i] < d->age[o])
                o = i;
        free(d->plan[o]);
        free(d->sum[o]);
        d->n--;
        d->plan[o] = d->plan[d->n];
        d->sum[o] = d->sum[d->n];
        d->cost[o] = d->cost[d->n];
        d->age[o] = d->age[d->n];
    }
}

/* Index of compact PLAN in the pool, adding it (its row sums, its cost under C0) if new;
   NONE when new and the pool is full. */
static size_t
dw_add(work *w, cgraph *cg, const crows *cr, double **c0, const size_t *plan)
{
    dwpool *d = w->dw;
    size_t i, nn = cg->g.n;

    for (i = 0; i < d->n; i++)
        if (memcmp(d->plan[i], plan, nn * sizeof *plan) == 0)
            return i;
    if (d->n == DW_CAP)
        return NONE;
    i = d->n++;
    d->plan[i] = as_xmalloc((nn + 1) * sizeof *plan);
    memcpy(d->plan[i], plan, nn * sizeof *plan);
    d->sum[i] = as_xcalloc(w->rows.n + 1, sizeof **d->sum);
    crows_sums(w, cg, cr, plan, d->sum[i]);
    d->cost[i] = cplan_cost(cg, c0, plan);
    d->age[i] = ++w->dw_clock;
    return i;
}

static int duals_alike(const work *w, const as_duals *d);
static void consider(const work *w, cgraph *cg, double **c0, const size_t *plan, size_t *lp,
                     double *ub, size_t *ubplan);

/* The pool of an earlier reduction of the same problem (as_duals.plans): its plans that are
   still plans here, whose master then starts where that one ended (on gpt3-175b 4x4x4 under
   324 GiB the solve for the gap's master took 14 s of its 28 to find its plans again). */
static void
dw_carry(work *w, cgraph *cg, const crows *cr, double **c0, double *ub, size_t *ubplan,
         size_t *lp)
{
    const as_duals *dd = w->duals_from;
    size_t k, c, j, nn = cg->g.n, got = 0, *plan = as_xcalloc(nn + 1, sizeof *plan);

    for (k = 0; k < dd->nplans && w->dw->n < DW_CAP / 2; k++) {
        for (c = 0; c < nn; c++) {
            size_t want = dd->plans[k][cg->node[c]];
            for (j = 0; j < cg->g.k[c] && cg->sub[c][j] != want; j++)
                ;
            if (j == cg->g.k[c])
                break; /* that strategy is gone here */
            plan[c] = j;
        }
        if (c < nn)
            continue;
        dw_add(w, cg, cr, c0, plan);
        consider(w, cg, c0, plan, lp, ub, ubplan);
        got++;
    }
    w->red->stats.plans_carried = got;
    if (w->dbg)
        fprintf(stderr, "  plans carried over: %zu of %zu\n", got, dd->nplans);
    free(plan);
}

/* The master LP of the column generation (above): GLPK, rows and columns added as they come. */
typedef struct dwmaster {
    glp_prob *lp;
    glp_smcp sm;
    size_t *rowof; /**< master row of each work row (0: not in it) */
    size_t *colk;  /**< pool plan of each master column after the first */
    size_t ncol, nrow;
    int *ind;
    double *val, *comb;
} dwmaster;

static void
dwm_init(dwmaster *m, const work *w, double ub)
{
    size_t nr = w->rows.n, big = nr > DW_CAP ? nr : DW_CAP;
    int one[2] = {0, 1};
    double v1[2] = {0, 1};

    memset(m, 0, sizeof *m);
    m->rowof = as_xcalloc(nr + 1, sizeof *m->rowof);
    m->colk = as_xcalloc(DW_CAP + 1, sizeof *m->colk);
    m->ind = as_xcalloc(big + 2, sizeof *m->ind); /* a column or a row */
    m->val = as_xcalloc(big + 2, sizeof *m->val);
    m->comb = as_xcalloc(nr + 1, sizeof *m->comb);
    m->lp = glp_create_prob();
    glp_set_obj_dir(m->lp, GLP_MIN);
    glp_add_rows(m->lp, 1); /* row 1: sum mu = 1 */
    glp_set_row_bnds(m->lp, 1, GLP_FX, 1, 1);
    m->nrow = 1;
    /* column 1: no memory at all, dearer than any plan with a split's penalty: it keeps the
       master feasible where no mix of the plans fits (a leaf whose fixings they break); at
       twice UB it mixed with cheap plans over the budget, and the bound stopped at that
       mix's cost */
    glp_add_cols(m->lp, 1);
    glp_set_col_bnds(m->lp, 1, GLP_LO, 0, 0);
    glp_set_obj_coef(m->lp, 1, 100 * (fabs(ub) + 1e3 + 1));
    glp_set_mat_col(m->lp, 1, 1, one, v1);
    glp_init_smcp(&m->sm);
    m->sm.msg_lev = GLP_MSG_OFF;
    m->sm.meth = GLP_DUALP;
}

static void
dwm_free(dwmaster *m)
{
    glp_delete_prob(m->lp);
    free(m->rowof);
    free(m->colk);
    free(m->ind);
    free(m->val);
    free(m->comb);
}

/* Add the pool's plans the master does not have yet. */
static void
dwm_columns(dwmaster *m, const work *w)
{
    const dwpool *d = w->dw;
    size_t k, j, t;

    for (k = 0; k < d->n && m->ncol < DW_CAP; k++) {
        size_t nz = 0;
        for (j = 0; j < m->ncol && m->colk[j] != k; j++)
            ;
        if (j < m->ncol)
            continue;
        m->colk[m->ncol++] = k;
        glp_add_cols(m->lp, 1);
        glp_set_col_bnds(m->lp, (int)m->ncol + 1, GLP_LO, 0, 0);
        glp_set_obj_coef(m->lp, (int)m->ncol + 1, d->cost[k]);
        m->ind[++nz] = 1;
        m->val[nz] = 1;
        for (t = 0; t < w->rows.n; t++)
            if (m->rowof[t] > 0) {
                m->ind[++nz] = (int)m->rowof[t];
                m->val[nz] = d->sum[k][t] / DW_GIB;
            }
        glp_set_mat_col(m->lp, (int)m->ncol + 1, (int)nz, m->ind, m->val);
    }
}

/* Solve the master, adding the rows its mix breaks until it breaks none; 0, or -1 when GLPK
   fails. */
static int
dwm_solve(dwmaster *m, const work *w)
{
    const dwpool *d = w->dw;
    size_t nr = w->rows.n, t, i, added;

    do {
        if (glp_simplex(m->lp, &m->sm) != 0 || glp_get_status(m->lp) != GLP_OPT) {
            glp_std_basis(m->lp);
            if (glp_simplex(m->lp, &m->sm) != 0 || glp_get_status(m->lp) != GLP_OPT)
                return -1;
        }
        memset(m->comb, 0, (nr + 1) * sizeof *m->comb);
        for (i = 0; i < m->ncol; i++) {
            double mu = glp_get_col_prim(m->lp, (int)i + 2);
            for (t = 0; mu > 1e-12 && t < nr; t++)
                m->comb[t] += mu * d->sum[m->colk[i]][t];
        }
        for (t = added = 0; t < nr && added < DW_ROWS; t++) {
            const wrow *r = &w->rows.v[t];
            size_t nz = 0;
            if (m->rowof[t] > 0 || !r->alive || m->comb[t] <= r->room + 1e-9 * fabs(r->room))
                continue;
            m->rowof[t] = ++m->nrow;
            glp_add_rows(m->lp, 1);
            glp_set_row_bnds(m->lp, (int)m->nrow, GLP_UP, 0, r->room / DW_GIB);
            for (i = 0; i < m->ncol; i++) {
                m->ind[++nz] = (int)i + 2;
                m->val[nz] = d->sum[m->colk[i]][t] / DW_GIB;
            }
            glp_set_mat_row(m->lp, (int)m->nrow, (int)nz, m->ind, m->val);
            added++;
        }
    } while (added > 0);
    return 0;
}

/*
 * The plans' ILP: the plans of the pool mixed node by node.  The master mixes whole plans: on
 * gpt3-175b 4x4x4 under 324 GiB its mix was 0.88 of a plan 2.6 GiB over at 16.112 s and 0.12
 * of one 20 GiB under, 16 nodes apart, its bound 16.13237 s; the best plan that fit cost
 * 16.2264 s and no repair came closer.  The ILP over the compact problem keeps, per node, the
 * strategies the best plan and the pool's plans chosen by USE (NULL: all) take (a node with
 * one is a constant); an edge between two nodes with a choice gets the local polytope's
 * columns (exact for integral x), the other edges are costs of the node with the choice; a
 * kept alias pair gets one row per pair of strategies it forbids; a memory row the entries
 * that can change, only when they can break it, at first only when the best plan nearly
 * fills it, then as the solution breaks it (solved again).  GLPK solves it from the best
 * plan (its first incumbent) until STOP (0: none) and for at most POOL_NODES
 * branch-and-bound nodes a solve (the same answer without a deadline).  A plan that fits
 * and costs less than *UB replaces UBPLAN.  (That run's whole pool, 6243 columns, gave
 * 16.19649 s, the optimum of its ILP.)
 */
#define POOL_NODES 200   /* branch-and-bound nodes of the plans' ILP */
/* the ILP's columns at most (more: not solved; the 312k-instruction HLO step's pool gave 126k,
   which got no LP relaxation in 4.5 s) */
#define POOL_COLS 30000
#define POOL_SHARE 0.3   /* of the time left to the deadline */
#define POOL_TIGHT 0.01  /* a row the plan that fits fills within this share is in at once */

typedef struct poolcb {
    double *x;           /**< the best plan's columns, offered once (glp_ios_heur_sol) */
    int given;
    double stop;
} poolcb;

static void
pool_cb(glp_tree *T, void *info)
{
    poolcb *p = info;
    int a = 0, b = 0, tot = 0;

    if (glp_ios_reason(T) == GLP_IHEUR && !p->given && p->x != NULL) {
        p->given = 1;
        glp_ios_heur_sol(T, p->x);
    }
    glp_ios_tree_size(T, &a, &b, &tot);
    if (tot > POOL_NODES || (p->stop > 0 && as_now() > p->stop))
        glp_ios_terminate(T);
}

/* Add memory row T to the plans' ILP LP in GiB above MN, its least over the domains (IND, VAL:
   room for a row); returns 1. */
static size_t
pool_row(glp_prob *lp, const work *w, const cgraph *cg, const size_t *doff, const size_t *col,
         const size_t *dom, size_t t, double mn, int *ind, double *val)
{
    const wrow *rw = &w->rows.v[t];
    size_t k, c, s, nz = 0;
    int row = glp_add_rows(lp, 1);

    glp_set_row_bnds(lp, row, GLP_UP, 0, (rw->room - mn) / DW_GIB);
    for (k = 0; k < rw->n; k++) {
        const double *m = rw->m[k];
        double lo = INFINITY;
        c = cg->cidx[rw->node[k]];
        if (c == NONE || dom[c] < 2)
            continue;
        for (s = 0; s < cg->g.k[c]; s++)
            if (col[doff[c] + s])
                lo = fmin(lo, m[cg->sub[c][s]]);
        for (s = 0; s < cg->g.k[c]; s++)
            if (col[doff[c] + s] && m[cg->sub[c][s]] > lo) {
                ind[++nz] = (int)col[doff[c] + s];
                val[nz] = (m[cg->sub[c][s]] - lo) / DW_GIB;
            }
    }
    glp_set_mat_row(lp, row, (int)nz, ind, val);
    return 1;
}

/* Is plan UB more than the gap above bound LB? */
static int
pool_gap(const work *w, double ub, double lb)
{
    return isfinite(ub) && ub - lb > fmax(1e-9 * fmax(fabs(ub), fabs(lb)), gap_abs(w, ub));
}

static void
work_pool_ilp(const work *w, cgraph *cg, const crows *cr, double **c0, const unsigned char *use,
              double stop, double *ub, size_t *ubplan)
{
    const dwpool *d = w->dw;
    size_t nn = cg->g.n, c, s, k, j, e, t, nr = w->rows.n, ncol = 0, nrow = 0, nz = 0;
    size_t *doff, *dom, *col, *ecol, *plan, *one, *lp_, round, cap = 0;
    unsigned char *state = NULL;
    int *ind = NULL;
    double *val = NULL, *us = NULL, *sum;
    unsigned char *in;
    glp_prob *lp;
    glp_iocp io;
    glp_smcp sm;
    poolcb pc;
    int *ia = NULL, *ja = NULL, ret;
    double *ar = NULL, t0 = as_now(), *mx = NULL, *mn = NULL;

    if (as_reduce_no_pool_ilp)
        return;
    doff = as_xcalloc(nn + 2, sizeof *doff);
    lp_ = as_xcalloc(as_problem_nnodes(w->p) + 1, sizeof *lp_);
    /* the domains */
    for (c = 0; c < nn; c++)
        doff[c + 1] = doff[c] + cg->g.k[c];
    in = as_xcalloc(doff[nn] + 1, 1);
    for (c = 0; c < nn; c++) {
        in[doff[c] + ubplan[c]] = 1;
        for (k = 0; d != NULL && k < d->n; k++)
            if (use == NULL || use[k])
                in[doff[c] + d->plan[k][c]] = 1;
    }
    col = as_xcalloc(doff[nn] + 1, sizeof *col); /* 0: not in the ILP (or fixed) */
    dom = as_xcalloc(nn + 1, sizeof *dom);       /* its size */
    one = as_xcalloc(nn + 1, sizeof *one);       /* a strategy of it */
    for (c = 0; c < nn; c++)
        for (s = 0; s < cg->g.k[c]; s++)
            if (in[doff[c] + s]) {
                dom[c]++;
                one[c] = s;
            }
    for (c = 0; c < nn; c++) /* a node with one strategy is a constant */
        for (s = 0; dom[c] > 1 && s < cg->g.k[c]; s++)
            if (in[doff[c] + s])
                col[doff[c] + s] = ++ncol;
    ecol = as_xcalloc(cg->g.m + 1, sizeof *ecol);
    for (e = 0; e < cg->g.m; e++)
        if (dom[cg->g.eu[e]] > 1 && dom[cg->g.ev[e]] > 1) {
            ecol[e] = ncol + 1;
            ncol += dom[cg->g.eu[e]] * dom[cg->g.ev[e]];
        }
    if (ncol == 0 || ncol > POOL_COLS) {
        if (w->dbg)
            fprintf(stderr, "  plans' ilp: %zu columns, not solved\n", ncol);
        goto out;
    }

    lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, (int)ncol);
#define PUT(r_, c_, v_)                                                                        \
    do {                                                                                   \
        if (nz + 1 >= cap) {                                                               \
            cap = 2 * cap + 1024;                                                          \
            ia = as_xrealloc(ia, cap * sizeof *ia);                                        \
            ja = as_xrealloc(ja, cap * sizeof *ja);                                        \
            ar = as_xrealloc(ar, cap * sizeof *ar);                                        \
        }                                                                                  \
        nz++;                                                                              \
        ia[nz] = (int)(r_);                                                                \
        ja[nz] = (int)(c_);                                                                \
        ar[nz] = (v_);                                                                     \
    } while (0)
    /* x: one strategy per node */
    for (c = 0; c < nn; c++) {
        if (dom[c] < 2)
            continue;
        glp_add_rows(lp, 1);
        glp_set_row_bnds(lp, (int)++nrow, GLP_FX, 1, 1);
        for (s = 0; s < cg->g.k[c]; s++)
            if (col[doff[c] + s]) {
                int x = (int)col[doff[c] + s];
                glp_set_col_kind(lp, x, GLP_BV);
                glp_set_obj_coef(lp, x, c0[c][s]);
                PUT(nrow, x, 1.0);
            }
    }
    /* edges: linear in the side with a choice, or the local polytope */
    for (e = 0; e < cg->g.m; e++) {
        size_t u = cg->g.eu[e], v = cg->g.ev[e], kv = cg->g.k[v], a, b, q;
        const double *r = cg->g.r[e];
        if (ecol[e] == 0) { /* a cost of the side with a choice, if any */
            for (a = 0; dom[u] > 1 && a < cg->g.k[u]; a++)
                if (col[doff[u] + a]) {
                    int x = (int)col[doff[u] + a];
                    glp_set_obj_coef(lp, x, glp_get_obj_coef(lp, x) + r[a * kv + one[v]]);
                }
            for (b = 0; dom[v] > 1 && b < kv; b++)
                if (col[doff[v] + b]) {
                    int x = (int)col[doff[v] + b];
                    glp_set_obj_coef(lp, x, glp_get_obj_coef(lp, x) + r[one[u] * kv + b]);
                }
            continue;
        }
        q = ecol[e];
        for (a = 0; a < cg->g.k[u]; a++) /* sum_b y_ab = x_a */
            if (col[doff[u] + a]) {
                size_t qq = q;
                glp_add_rows(lp, 1);
                glp_set_row_bnds(lp, (int)++nrow, GLP_FX, 0, 0);
                PUT(nrow, col[doff[u] + a], -1.0);
                for (b = 0; b < kv; b++)
                    if (col[doff[v] + b]) {
                        glp_set_col_bnds(lp, (int)qq, GLP_LO, 0, 0);
                        glp_set_obj_coef(lp, (int)qq, r[a * kv + b]);
                        PUT(nrow, qq, 1.0);
                        qq++;
                    }
                q = qq;
            }
        for (b = 0, j = 0; b < kv; b++) /* sum_a y_ab = x_b */
            if (col[doff[v] + b]) {
                size_t i = 0;
                glp_add_rows(lp, 1);
                glp_set_row_bnds(lp, (int)++nrow, GLP_FX, 0, 0);
                PUT(nrow, col[doff[v] + b], -1.0);
                for (a = 0; a < cg->g.k[u]; a++)
                    if (col[doff[u] + a])
                        PUT(nrow, ecol[e] + (i++) * dom[v] + j, 1.0);
                j++;
            }
    }
    /* the memory rows that a choice can break (pool_row): those the plan that fits nearly
       fills, the others as the solution breaks them (on gpt3-175b 16x8 under 298.65 GiB 6175
       of them could break with 34 columns) */
    mx = as_xcalloc(nr + 1, sizeof *mx);
    mn = as_xcalloc(nr + 1, sizeof *mn);
    us = as_xcalloc(nr + 1, sizeof *us);
    state = as_xcalloc(nr + 1, 1); /* 0: cannot break, 1: not in yet, 2: in */
    for (c = 0; c < nn; c++)
        for (k = cr->off[c]; k < cr->off[c + 1]; k++) {
            const double *m = w->rows.v[cr->row[k]].m[cr->ent[k]];
            double hi = -INFINITY, lo = INFINITY;
            for (s = 0; s < cg->g.k[c]; s++)
                if (in[doff[c] + s]) {
                    hi = fmax(hi, m[cg->sub[c][s]]);
                    lo = fmin(lo, m[cg->sub[c][s]]);
                }
            mx[cr->row[k]] += hi;
            mn[cr->row[k]] += lo;
        }
    crows_sums(w, cg, cr, ubplan, us);
    for (t = 0; t < nr; t++) {
        const wrow *rw = &w->rows.v[t];
        if (!rw->alive || mx[t] <= rw->room * (1 + 1e-12))
            continue;
        state[t] = us[t] >= (1 - POOL_TIGHT) * rw->room ? 2 : 1;
    }
    /* the kept alias pairs */
    for (j = 0; j < w->kept_alias.n; j++) {
        const as_palias *a = as_problem_alias(w->p, w->kept_alias.v[j]);
        size_t cx = cg->cidx[w->red->leader[a->a]], cy = cg->cidx[w->red->leader[a->b]], sx, sy;
        if (cx == NONE || cy == NONE)
            continue;
        for (sx = 0; sx < cg->g.k[cx]; sx++)
            for (sy = 0; in[doff[cx] + sx] && sy < cg->g.k[cy]; sy++) {
                size_t kx = col[doff[cx] + sx], ky = col[doff[cy] + sy];
                if (!in[doff[cy] + sy] || (cx == cy && sx != sy) ||
                    !alias_bad(w, a, cg->sub[cx][sx], cg->sub[cy][sy]))
                    continue;
                if (kx == 0 && ky == 0)
                    goto out_lp; /* both fixed there: no plan of the pool keeps the pair */
                glp_add_rows(lp, 1);
                /* x + y <= 1, or the one with a choice 0 when the other is fixed there */
                glp_set_row_bnds(lp, (int)++nrow, GLP_UP, 0,
                                 cx == cy || kx == 0 || ky == 0 ? 0 : 1);
                if (kx != 0)
                    PUT(nrow, kx, 1.0);
                if (ky != 0 && cx != cy)
                    PUT(nrow, ky, 1.0);
            }
    }
#undef PUT
    glp_load_matrix(lp, (int)nz, ia, ja, ar);
    ind = as_xcalloc(ncol + 2, sizeof *ind);
    val = as_xcalloc(ncol + 2, sizeof *val);
    for (t = 0; t < nr; t++)
        if (state[t] == 2)
            nrow += pool_row(lp, w, cg, doff, col, dom, t, mn[t], ind, val);
    /* the best plan as GLPK's first incumbent */
    memset(&pc, 0, sizeof pc);
    pc.x = as_xcalloc(ncol + 1, sizeof *pc.x);
    for (c = 0; c < nn; c++)
        if (dom[c] > 1)
            pc.x[col[doff[c] + ubplan[c]]] = 1;
    for (e = 0; e < cg->g.m; e++)
        if (ecol[e] > 0) {
            size_t u = cg->g.eu[e], v = cg->g.ev[e], ia_ = 0, ib = 0;
            for (s = 0; s < ubplan[u]; s++)
                ia_ += col[doff[u] + s] != 0;
            for (s = 0; s < ubplan[v]; s++)
                ib += col[doff[v] + s] != 0;
            pc.x[ecol[e] + ia_ * dom[v] + ib] = 1;
        }
    pc.stop = stop;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.meth = GLP_DUALP;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.tol_obj = 1e-12;
    io.cb_func = pool_cb;
    io.cb_info = &pc;
    io.mip_gap = w->gap;
    plan = as_xcalloc(nn + 1, sizeof *plan);
    sum = as_xcalloc(nr + 1, sizeof *sum);
    for (round = 0;; round++) {
        size_t added = 0;
        if (pc.stop > 0)
            sm.tm_lim = (int)fmin(1e9, fmax(1, 1000 * (pc.stop - as_now())));
        glp_scale_prob(lp, GLP_SF_AUTO); /* as glpsol does: bytes and seconds */
        /* the relaxation first: without the MIP presolver (the callback's columns are these)
           intopt wants an optimal basis */
        if (glp_simplex(lp, &sm) != 0 || glp_get_status(lp) != GLP_OPT) {
            if (w->dbg)
                fprintf(stderr, "  plans' ilp: %zu columns, %zu rows, no relaxation (%.3f s)\n",
                        ncol, nrow, as_now() - t0);
            break;
        }
        if (pc.stop > 0)
            io.tm_lim = (int)fmin(1e9, fmax(1, 1000 * (pc.stop - as_now())));
        pc.given = 0;
        ret = glp_intopt(lp, &io);
        if (!((ret == 0 || ret == GLP_ETMLIM || ret == GLP_ESTOP || ret == GLP_EMIPGAP) &&
              (glp_mip_status(lp) == GLP_OPT || glp_mip_status(lp) == GLP_FEAS))) {
            if (w->dbg)
                fprintf(stderr, "  plans' ilp: %zu columns, %zu rows, no plan (%d, %.3f s)\n",
                        ncol, nrow, ret, as_now() - t0);
            break;
        }
        for (c = 0; c < nn; c++)
            for (plan[c] = one[c], s = 0; dom[c] > 1 && s < cg->g.k[c]; s++)
                if (col[doff[c] + s] && glp_mip_col_val(lp, (int)col[doff[c] + s]) > 0.5)
                    plan[c] = s;
        crows_sums(w, cg, cr, plan, sum);
        for (t = 0; t < nr; t++) /* the rows it breaks that are not in yet */
            if (state[t] == 1 && sum[t] > w->rows.v[t].room * (1 + 1e-12)) {
                nrow += pool_row(lp, w, cg, doff, col, dom, t, mn[t], ind, val);
                state[t] = 2;
                added++;
            }
        if (added == 0 || (pc.stop > 0 && as_now() > pc.stop)) {
            double was = *ub;
            if (added == 0)
                consider(w, cg, c0, plan, lp_, ub, ubplan);
            if (w->dbg)
                fprintf(stderr, "  plans' ilp: %zu columns, %zu rows (%zu rounds), %s, plan "
                        "%.12g -> %.12g (%.3f s)\n", ncol, nrow, round + 1,
                        added > 0 ? "out of time" : glp_mip_status(lp) == GLP_OPT ? "optimal"
                                                                                : "feasible",
                        was, *ub, as_now() - t0);
            break;
        }
    }
    free(plan);
    free(sum);
    free(pc.x);
out_lp:
    glp_delete_prob(lp);
    free(ia);
    free(ja);
    free(ar);
out:
    free(mx);
    free(mn);
    free(us);
    free(state);
    free(ind);
    free(val);
    free(one);
    free(doff);
    free(in);
    free(col);
    free(dom);
    free(ecol);
    free(lp_);
}

static void
work_lagrange(work *w, cgraph *cg, const crows *cr, double **c0, as_mrf_state *st,
              as_mrf_result *best, double *ub, size_t *ubplan)
{
    size_t nn = cg->g.n, nr = w->rows.n, t, it, k, i, nit;
    double *center = as_xcalloc(nr + 1, sizeof *center), *lm = as_xcalloc(nr + 1, sizeof *lm);
    size_t *lpl = as_xcalloc(as_problem_nnodes(w->p) + 1, sizeof *lpl);
    size_t *rp = as_xcalloc(nn + 1, sizeof *rp);
    double alpha = DW_ALPHA;
    dwpool *d;
    dwmaster m;

    if (w->dw == NULL) {
        d = w->dw = as_xcalloc(1, sizeof *d);
        d->plan = as_xcalloc(DW_CAP, sizeof *d->plan);
        d->sum = as_xcalloc(DW_CAP, sizeof *d->sum);
        d->cost = as_xcalloc(DW_CAP, sizeof *d->cost);
        d->age = as_xcalloc(DW_CAP, sizeof *d->age);
    }
    d = w->dw;
    if (d->n == 0 && w->round == 0 && !w->in_bb && w->duals_from != NULL &&
        w->duals_from->nnodes == as_problem_nnodes(w->p) && duals_alike(w, w->duals_from))
        dw_carry(w, cg, cr, c0, ub, ubplan, lpl);
    dw_trim(d, DW_CAP / 2); /* room for this run's plans */
    for (i = 0; i < d->n; i++) /* this leaf's costs */
        d->cost[i] = cplan_cost(cg, c0, d->plan[i]);
    dw_add(w, cg, cr, c0, best->plan);
    dw_add(w, cg, cr, c0, ubplan);
    if (w->lam_best == NULL) /* the start, should no run raise it */
        lam_best_take(w, cg, st, best->lb + w->offset + as_problem_offset(w->p));
    for (t = 0; t < nr; t++)
        center[t] = w->rows.v[t].lam;
    dwm_init(&m, w, *ub);
    nit = w->round == 0 && !w->in_bb ? DW_ITERS : DW_ITERS_WARM;
    for (it = 0; it < nit && !past(w); it++) {
        double pen, cur, zm, tol;
        as_mrf_result r;
        dwm_columns(&m, w);
        if (dwm_solve(&m, w) != 0) {
            if (w->dbg)
                fprintf(stderr, "  lagrange %zu: the master LP failed\n", it);
            break; /* the bound so far stands */
        }
        zm = glp_get_obj_val(m.lp);
        tol = fmax(1e-9 * fmax(fabs(*ub), fabs(best->lb)), gap_abs(w, *ub));
        /* the bound is the master's to a hundredth of the gap asked for: the last steps
           of the ascent raised gpt3-175b 4x4x4 under 324 GiB by 4e-6 s in 9 of its 27
           runs (16.13236 to 16.1323654), the plans' ILP below then had no time left */
        if (*ub - best->lb <= tol ||
            zm - best->lb <= fmax(1e-9 * fmax(1, fabs(zm)),
                                  LAGR_TOL * gap_abs(w, *ub)))
            break; /* the plan is proven, or the bound is the master's */
        for (t = 0; t < nr; t++) {
            lm[t] = m.rowof[t] > 0 ? fmax(0, -glp_get_row_dual(m.lp, (int)m.rowof[t]) / DW_GIB)
                                   : 0;
            w->rows.v[t].lam =
                w->rows.v[t].alive ? alpha * center[t] + (1 - alpha) * lm[t] : 0;
        }
        pen = cg_penalise(w, cg, cr, c0);
        as_mrf_state_sync(st);
        as_mrf_state_run(st, LAGR_SWEEPS, &r);
        cur = r.lb - pen;
        k = d->n;
        i = dw_add(w, cg, cr, c0, r.plan);
        consider(w, cg, c0, r.plan, lpl, ub, ubplan);
        if (d->n > k && d->cost[i] < *ub) {
            /* a new plan cheaper than the best that fits: repaired at the real costs (on
               gpt3-175b 4x4x4 under 324 GiB the mix was 0.88 of a plan 2.6 GiB over at
               16.112 s and 0.12 of the plan that fit, 16.2875 s; repaired plans brought that
               to 16.2112 s) */
            const double *const *pc = cg->g.c;
            int fits;
            memcpy(rp, r.plan, nn * sizeof *rp);
            cg->g.c = (const double *const *)c0;
            fits = work_repair(w, cg, cr, rp);
            cg->g.c = pc;
            if (fits)
                consider(w, cg, c0, rp, lpl, ub, ubplan);
        }
        if (w->dbg)
            fprintf(stderr, "  lagrange %zu: lb %.12g (best %.12g) master %.12g ub %.12g, %zu "
                    "plans, %zu rows, alpha %.2f, sweeps %d%s\n", it, cur, best->lb, zm, *ub,
                    m.ncol, m.nrow - 1, alpha, r.iters, d->n == k ? " (a plan it has)" : "");
        if (cur > best->lb) {
            as_mrf_result_free(best, nn);
            *best = r;
            best->lb = cur;
            for (t = 0; t < nr; t++)
                center[t] = w->rows.v[t].lam;
            lam_best_take(w, cg, st, cur + w->offset + as_problem_offset(w->p));
        } else {
            as_mrf_result_free(&r, nn);
        }
        if (i == NONE)
            break; /* the pool is full */
        if (d->n == k) { /* mispriced: the master's own multipliers next */
            if (alpha == 0)
                break; /* there too: the runs find no plan the master lacks */
            alpha = 0;
        } else {
            alpha = DW_ALPHA;
        }
    }
    if (w->dbg && !w->in_bb)
        for (i = 0; i < m.ncol; i++) {
            double mu = glp_get_col_prim(m.lp, (int)i + 2), ex = -INFINITY;
            size_t nd = 0;
            for (t = 0; t < nr; t++)
                if (w->rows.v[t].alive)
                    ex = fmax(ex, d->sum[m.colk[i]][t] - w->rows.v[t].room);
            for (k = 0; k < nn; k++)
                nd += d->plan[m.colk[i]][k] != ubplan[k];
            if (mu > 1e-6)
                fprintf(stderr, "  mix: %.4f of a plan costing %.9g, %.3f GiB over its tightest "
                        "row, %zu nodes differ from the plan\n", mu, d->cost[m.colk[i]],
                        ex / DW_GIB, nd);
        }
    if (w->fcnt != NULL) /* the master's mix: the branching splits where its plans differ */
        for (i = 0; i < m.ncol; i++) {
            double mu = glp_get_col_prim(m.lp, (int)i + 2);
            for (k = 0; mu > 1e-6 && k < nn; k++)
                w->fcnt[k][d->plan[m.colk[i]][k]] += (size_t)(1000 * mu + 0.5);
        }
    /* the plans mixed node by node, where their mix as whole plans leaves a gap: the
       master's (a few hundred columns), then the whole pool's, each for a share of the time
       left (after the branching, whose leaves take seconds each, none was left on gpt3-175b
       4x4x4 under 324 GiB, where the pool's 6243 columns gave 16.19649 s and the best plan
       had been 16.2264 s) */
    for (k = 0; k < 2 && w->round == 0 && !w->in_bb && !past(w) && pool_gap(w, *ub, best->lb);
         k++) {
        unsigned char *use = as_xcalloc(d->n + 1, 1);
        double dl = w->deadline > 0 ? w->deadline : w->safety;
        for (i = 0; i < m.ncol; i++)
            use[m.colk[i]] = glp_get_col_prim(m.lp, (int)i + 2) > 1e-6;
        work_pool_ilp(w, cg, cr, c0, k == 0 ? use : NULL,
                      dl > 0 ? as_now() + POOL_SHARE * fmax(0, dl - as_now()) : 0, ub, ubplan);
        free(use);
    }
    for (t = 0; t < nr; t++)
        w->rows.v[t].lam = center[t];
    dwm_free(&m);
    free(center);
    free(lm);
    free(lpl);
    free(rp);
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*
 * k-best: the cost (under C0) of a TOP-th distinct plan that fits every row:
 * PLAN, which fits and costs UB, and its TOP - 1 cheapest single-node moves
 * that fit.  INFINITY when fewer moves fit.
 */
static double
kth_plan_cost(work *w, cgraph *cg, const crows *cr, double **c0, size_t *plan, double ub)
{
    size_t nn = cg->g.n, nr = w->rows.n, c, b, x, nmv = 0, i, found = 0;
    size_t *lp = as_xcalloc(as_problem_nnodes(w->p) + 1, sizeof *lp);
    double *sum = as_xcalloc(nr + 1, sizeof *sum), kth = INFINITY;
    const double *const *cur = cg->g.c;
    struct mv {
        double d;
        size_t c, b;
    } *mv;

    for (c = 0; c < nn; c++)
        nmv += cg->g.k[c] - 1;
    mv = as_xcalloc(nmv + 1, sizeof *mv);
    crows_sums(w, cg, cr, plan, sum);
    cg->g.c = (const double *const *)c0;
    for (c = nmv = 0; c < nn; c++)
        for (b = 0; b < cg->g.k[c]; b++) {
            if (b == plan[c] || w->nodes[cg->node[c]].frozen) /* a move would break a follow */
                continue;
            for (x = cr->off[c]; x < cr->off[c + 1]; x++) { /* memory rows, incrementally */
                const double *m = w->rows.v[cr->row[x]].m[cr->ent[x]];
                if (sum[cr->row[x]] + m[cg->sub[c][b]] - m[cg->sub[c][plan[c]]] >
                    w->rows.v[cr->row[x]].room * (1 + 1e-12))
                    break;
            }
            if (x < cr->off[c + 1])
                continue;
            mv[nmv].d = move_cost(cg, plan, c, plan[c], b);
            mv[nmv].c = c;
            mv[nmv++].b = b;
        }
    cg->g.c = cur;
    qsort(mv, nmv, sizeof *mv, cmp_double); /* d is the first member */
    w->cand_v = as_xreallocarray(w->cand_v, w->top, sizeof *w->cand_v);
    w->cand_s = as_xreallocarray(w->cand_s, w->top, sizeof *w->cand_s);
    for (i = 0; i < nmv && found + 1 < w->top; i++) { /* alias rows: the whole check */
        size_t a = plan[mv[i].c];
        plan[mv[i].c] = mv[i].b;
        if (cplan_ok(w, cg, plan, lp)) {
            w->cand_v[found] = cg->node[mv[i].c];
            w->cand_s[found++] = cg->sub[mv[i].c][mv[i].b];
            kth = ub + mv[i].d;
        }
        plan[mv[i].c] = a;
    }
    w->ncand = found;
    if (found + 1 < w->top)
        kth = INFINITY;
    free(mv);
    free(sum);
    free(lp);
    return kth;
}

/*
 * Primal search along the multipliers: the plan of multipliers t * lam fits
 * for t large enough and is cheap for t small; bisect t between a scale
 * whose plan does not fit (repaired) and one whose plan fits, and keep every
 * plan that fits.  The multipliers are restored.
 */
static void
work_scale_search(work *w, cgraph *cg, const crows *cr, double **c0, as_mrf_state *st,
                  double *ub, size_t *ubplan)
{
    size_t nr = w->rows.n, nn = cg->g.n, t, k;
    double *lam0 = as_xcalloc(nr + 1, sizeof *lam0), lo = 0, hi = 1, any = 0;
    size_t *lp = as_xcalloc(as_problem_nnodes(w->p) + 1, sizeof *lp);
    size_t *tmp = as_xcalloc(nn + 1, sizeof *tmp), *last = as_xcalloc(nn + 1, sizeof *last);
    int fits = 0, have_last = 0;

    for (t = 0; t < nr; t++)
        any += lam0[t] = w->rows.v[t].alive ? w->rows.v[t].lam : 0;
    /* down to a 64th of the scale: on gpt3-13b 2x8 under a binding budget the plans jump at
       0.9995 from the optimum without a budget to the one that fits, and the 7 steps below
       a 64th found no other plan (2-4 s) */
    for (k = 0; any > 0 && k < 14 && !(fits && hi - lo <= hi / 64) && !past(w); k++) {
        double sc = fits ? 0.5 * (lo + hi) : hi;
        as_mrf_result r;
        for (t = 0; t < nr; t++)
            w->rows.v[t].lam = sc * lam0[t];
        cg_penalise(w, cg, cr, c0);
        as_mrf_state_sync(st);
        as_mrf_state_run(st, LAGR_SWEEPS, &r);
        memcpy(tmp, r.plan, nn * sizeof *tmp);
        as_mrf_result_free(&r, nn);
        if (cplan_ok(w, cg, tmp, lp)) {
            consider(w, cg, c0, tmp, lp, ub, ubplan);
            hi = sc;
            fits = 1;
        } else {
            /* the repair is deterministic: the plan repaired last time gives the same */
            if (!(have_last && memcmp(tmp, last, nn * sizeof *tmp) == 0)) {
                memcpy(last, tmp, nn * sizeof *tmp);
                have_last = 1;
                if (work_repair(w, cg, cr, tmp))
                    consider(w, cg, c0, tmp, lp, ub, ubplan);
            }
            if (fits)
                lo = sc;
            else if (k < 6)
                lo = hi, hi *= 2;
            else
                break;
        }
    }
    for (t = 0; t < nr; t++)
        w->rows.v[t].lam = lam0[t];
    free(lam0);
    free(lp);
    free(tmp);
    free(last);
}

/*
 * Branching on the memory rows' nodes, for the bound only.  The Lagrangian bound is the LP's
 * (local polytope with the rows), and with tied layers one strategy moves every copy's bytes:
 * on gpt3-13b 2x8 under 53.61 GiB the multipliers' plans jump from the optimum without a
 * budget (66.8 GiB) to one of 45.4 GiB, the bound stays 1.1 % under the plan, and CBC for
 * 500 s did not move it.  Split the plans on a node's strategy q (s = q on one side, s != q
 * on the other) and bound each side with the Lagrangian again (the strategies a side excludes
 * cost BB_BIG more: a bound of the penalised problem is one of every plan of that side).  The
 * sides are leaves of a tree; the minimum over the leaves bounds every plan that fits.
 * Best first: the open leaf of lowest bound is split next (a depth-first dive spent its
 * bounds under the first split while the other side, the lowest, stayed as it was: gpt3-175b
 * 8x8 under 394 GiB, 26 bounds raised the root's 13.857 to 13.861 only).  A leaf whose bound
 * reaches the plan (within the gap) is closed.  The node a leaf splits on: where the plans of
 * its Lagrangian's master mix choose between strategies (bb_frac); else one where the
 * leaf's own Lagrangian plan and the plan that fits differ, the most multiplier-weighted
 * bytes first (at the root: the round's first plan, before the multipliers); q is the fitting
 * plan's strategy there, or the leaf's when the node was split on already.  A plan that fits
 * found in a leaf lowers the plan (its cost there is its own: it is in the leaf).  It only
 * raises the reported bound (stats.lb); the pruning uses the root's.
 */
#define BB_DEPTH 8          /* the root's candidates, and leaves' fallback */
#define BB_EVALS 24         /* bounds without a deadline */
#define BB_EVALS_TIMED 4096 /* with one: the time stops it */
#define BB_FIX 64           /* splits on one path */
#define BB_BIG 1e3
/* A leaf's first message passing, from its parent's messages, before its Lagrangian (whose
   steps pass messages again): a few sweeps, not to convergence.  On gpt3-13b 2x8 under
   53.61 GiB the leaf h.1.ln1 != 1 reached 1.179436 from converged messages (each time)
   and 1.179666 from 10 sweeps (when a deadline cut the run there), and the runs ended at a
   gap of 0.028 % and 0.009 %; with 10 sweeps always, the first solve's branching proved
   1e-4 alone in 8 of 12 runs on a loaded machine (0.008-0.009 %, in about 4 s; the other 4
   ended at 0.011-0.43 %, 3 of them with 3.8-4.6 s of CPU in 9.5 s) */
#define BB_SWEEPS 10

typedef struct bbfix {
    size_t c, q;
    int eq; /**< 1: s_c = q, 0: s_c != q */
} bbfix;

typedef struct bbleaf {
    double lb;
    size_t nfix;
    bbfix *fix;   /**< the splits on its path */
    size_t *plan; /**< the Lagrangian's plan at its bound (compact) */
    double *lam;  /**< the multipliers it ended with (warm start of its sides) */
    int frac;     /**< its Lagrangian's mix chose more than one strategy at FC: */
    size_t fc, fq; /**< split there, on the strategy they chose most */
} bbleaf;

typedef struct bbctx {
    work *w;
    cgraph *cg;
    const crows *cr;
    double **c0, **base, *ub, tol, *lam0;
    double stop; /**< as_now() after which no more splits (0: none) */
    as_mrf_state *st;
    size_t *ubplan; /**< the plan that fits, costing *ub (lowered by the leaves' plans) */
    const size_t *cand;
    size_t ncand, evals, max_evals;
} bbctx;

static void bb_frac(const bbctx *b, bbleaf *l);

static void
bb_leaf_free(bbleaf *l)
{
    free(l->fix);
    free(l->plan);
    free(l->lam);
}

/* The Lagrangian bound of the live problem with the splits FIX (NF of them), from multipliers
   LAM; the leaf's plan and multipliers into L. */
static double
bb_eval(bbctx *b, const bbfix *fix, size_t nf, const double *lam, bbleaf *l)
{
    work *w = b->w;
    size_t nn = b->cg->g.n, t, i, s, round = w->round;
    double ub2 = *b->ub, pen, lb;
    size_t *up = as_xcalloc(nn + 1, sizeof *up);
    as_mrf_result r;

    memcpy(up, b->ubplan, nn * sizeof *up);
    for (i = 0; i < nf; i++)
        for (s = 0; s < b->cg->g.k[fix[i].c]; s++)
            if ((s == fix[i].q) != (fix[i].eq != 0))
                b->c0[fix[i].c][s] += BB_BIG;
    for (t = 0; t < w->rows.n; t++)
        w->rows.v[t].lam = lam[t];
    pen = cg_penalise(w, b->cg, b->cr, b->c0);
    as_mrf_state_sync(b->st);
    as_mrf_state_run(b->st, BB_SWEEPS, &r);
    r.lb -= pen;
    w->round = 0;
    w->in_bb = 1;
    work_lagrange(w, b->cg, b->cr, b->c0, b->st, &r, &ub2, up);
    w->in_bb = 0;
    w->round = round;
    lb = r.lb;
    for (i = 0; i < nf; i++) /* the costs as they were */
        memcpy(b->c0[fix[i].c], b->base[fix[i].c], b->cg->g.k[fix[i].c] * sizeof **b->c0);
    if (ub2 < *b->ub && !as_reduce_no_leaf_plans) { /* a plan that fits, of this leaf: its
                                                        cost is its own */
        double c = cplan_cost(b->cg, b->c0, up);
        if (c < *b->ub) {
            *b->ub = c;
            memcpy(b->ubplan, up, nn * sizeof *up);
        }
    }
    l->plan = as_xcalloc(nn + 1, sizeof *l->plan);
    memcpy(l->plan, r.plan, nn * sizeof *l->plan);
    l->lam = as_xcalloc(w->rows.n + 1, sizeof *l->lam);
    for (t = 0; t < w->rows.n; t++)
        l->lam[t] = w->rows.v[t].lam;
    bb_frac(b, l);
    as_mrf_result_free(&r, nn);
    free(up);
    b->evals++;
    w->red->stats.bb_nodes++;
    return lb;
}

/* The weight of node C's choice between strategies A and B in the rows (root multipliers). */
static double
bb_score(const bbctx *b, size_t c, size_t a, size_t s)
{
    const crows *cr = b->cr;
    double sc = 0;
    size_t x;

    for (x = cr->off[c]; x < cr->off[c + 1]; x++) {
        const double *m = b->w->rows.v[cr->row[x]].m[cr->ent[x]];
        sc += b->lam0[cr->row[x]] * fabs(m[b->cg->sub[c][a]] - m[b->cg->sub[c][s]]);
    }
    return sc;
}

/*
 * Leaf L's split from its Lagrangian's master mix (w->fcnt, which it resets): the node where
 * the mix's plans choose most evenly between strategies, weighted by the bytes between the
 * two chosen most (root multipliers); the split is on the one chosen most.  The relaxation's
 * optimum is that mix, and a node where every plan of it chooses one strategy is whole in
 * it: a side that keeps that strategy keeps its parent's bound too (gpt3-175b 8x8 under
 * 394 GiB: "= h.0.ln2[4]" stayed at 13.8597820951, four splits in a row).
 */
static void
bb_frac(const bbctx *b, bbleaf *l)
{
    work *w = b->w;
    size_t nn = b->cg->g.n, c, s, i;
    double bs = 0;

    l->frac = 0;
    if (w->fcnt == NULL)
        return;
    for (c = 0; c < nn; c++) {
        size_t k = b->cg->g.k[c], tot = 0, q1 = 0, q2 = NONE;
        const size_t *n = w->fcnt[c];
        int eq = 0;
        double sc;
        for (s = 0; s < k; s++) {
            tot += n[s];
            if (n[s] > n[q1])
                q1 = s;
        }
        for (s = 0; s < k; s++)
            if (s != q1 && n[s] > 0 && (q2 == NONE || n[s] > n[q2]))
                q2 = s;
        if (q2 == NONE || w->nodes[b->cg->node[c]].frozen)
            continue;
        for (i = 0; i < l->nfix; i++)
            eq |= l->fix[i].c == c && (l->fix[i].eq || l->fix[i].q == q1);
        if (eq)
            continue;
        sc = (1 - (double)n[q1] / (double)tot) * bb_score(b, c, q1, q2);
        if (sc > bs) {
            bs = sc;
            l->frac = 1;
            l->fc = c;
            l->fq = q1;
        }
    }
    for (c = 0; c < nn; c++)
        memset(w->fcnt[c], 0, b->cg->g.k[c] * sizeof **w->fcnt);
}

/* The split of leaf L (node *C, strategy *Q); 0 if none. */
static int
bb_pick(const bbctx *b, const bbleaf *l, size_t *c, size_t *q)
{
    size_t nn = b->cg->g.n, i, x, best = NONE;
    double bs = 0;

    if (l->nfix >= BB_FIX)
        return 0;
    if (l->frac) {
        *c = l->fc;
        *q = l->fq;
        b->w->red->stats.bb_mixed++;
        return 1;
    }
    for (x = 0; x < nn; x++) {
        int fixed = 0, eq = 0;
        double sc;
        if (l->plan[x] == b->ubplan[x] || b->w->nodes[b->cg->node[x]].frozen)
            continue;
        for (i = 0; i < l->nfix; i++)
            if (l->fix[i].c == x) {
                fixed = 1;
                eq |= l->fix[i].eq || l->fix[i].q == l->plan[x];
            }
        if (eq)
            continue; /* one strategy left there (or the plan pays a split's penalty) */
        sc = bb_score(b, x, b->ubplan[x], l->plan[x]);
        if (sc > bs) {
            bs = sc;
            best = x;
            *q = fixed ? l->plan[x] : b->ubplan[x];
        }
    }
    for (x = 0; best == NONE && x < b->ncand; x++) { /* the root's list */
        for (i = 0; i < l->nfix && l->fix[i].c != b->cand[x]; i++)
            ;
        if (i == l->nfix) {
            best = b->cand[x];
            *q = b->ubplan[best];
        }
    }
    *c = best;
    return best != NONE;
}

/* A bound of every plan that fits from branching (see above), or LB; *UB and UBPLAN may
   get a cheaper plan that fits. */
static double
work_branch(work *w, cgraph *cg, const crows *cr, double **c0, as_mrf_state *st,
            const size_t *bplan, double lb, double *ub, size_t *ubplan)
{
    size_t nn = cg->g.n, c, x, t, nc = 0, nopen = 0, cap = 16, i;
    double *score = as_xcalloc(nn + 1, sizeof *score), out, closed = INFINITY;
    size_t *cand = as_xcalloc(nn + 1, sizeof *cand);
    bbleaf *open = as_xcalloc(cap, sizeof *open);
    bbctx b = {.w = w, .cg = cg, .cr = cr, .c0 = c0, .ub = ub, .st = st, .ubplan = ubplan,
               .cand = cand};

    /* under a deadline, half the time left to it: the solver after the reductions may close
       the gap where this does not */
    b.stop = w->deadline > 0 ? as_now() + (w->for_gap ? 1 : 0.5) * (w->deadline - as_now())
                             : 0; /* for the gap alone: up to the deadline */
    b.max_evals = w->bb_evals > 0 ? w->bb_evals : w->deadline > 0 ? BB_EVALS_TIMED : BB_EVALS;
    b.lam0 = as_xcalloc(w->rows.n + 1, sizeof *b.lam0);
    for (t = 0; t < w->rows.n; t++)
        b.lam0[t] = w->rows.v[t].lam;
    for (c = 0; c < nn; c++) {
        if (bplan[c] == ubplan[c] || w->nodes[cg->node[c]].frozen)
            continue;
        score[c] = bb_score(&b, c, ubplan[c], bplan[c]);
        if (score[c] > 0)
            cand[nc++] = c;
    }
    for (c = 1; c < nc; c++) { /* most weighted bytes first (insertion sort: few) */
        size_t v = cand[c], j = c;
        for (; j > 0 && score[cand[j - 1]] < score[v]; j--)
            cand[j] = cand[j - 1];
        cand[j] = v;
    }
    b.ncand = nc < BB_DEPTH ? nc : BB_DEPTH;
    b.base = as_xcalloc(nn + 1, sizeof *b.base);
    for (c = 0; c < nn; c++) {
        b.base[c] = as_xmalloc((cg->g.k[c] + 1) * sizeof **b.base);
        memcpy(b.base[c], c0[c], cg->g.k[c] * sizeof **b.base);
    }
    /* the root: its bound LB, the round's first plan */
    open[0].lb = lb;
    open[0].plan = as_xcalloc(nn + 1, sizeof *open[0].plan);
    memcpy(open[0].plan, bplan, nn * sizeof *open[0].plan);
    open[0].lam = as_xcalloc(w->rows.n + 1, sizeof *open[0].lam);
    memcpy(open[0].lam, b.lam0, w->rows.n * sizeof *b.lam0);
    bb_frac(&b, &open[0]); /* the root Lagrangian's mix */
    nopen = 1;
    while (nopen > 0) {
        size_t lo = 0, side;
        bbleaf L;
        for (i = 1; i < nopen; i++)
            if (open[i].lb < open[lo].lb)
                lo = i;
        b.tol = fmax(1e-9 * fabs(*ub), GAP_CUT * gap_abs(w, *ub)); /* see GAP_CUT */
        if (open[lo].lb >= *ub - b.tol || b.evals + 2 > b.max_evals || past(w) ||
            (b.stop > 0 && as_now() > b.stop)) {
            if (w->dbg)
                fprintf(stderr, "  branching stops: lowest leaf %.12g, %zu open, %zu bounds%s\n",
                        open[lo].lb, nopen, b.evals, past(w) || (b.stop > 0 && as_now() > b.stop)
                                                         ? ", time" : "");
            break; /* every open leaf reaches the plan, or out of bounds or time */
        }
        L = open[lo];
        open[lo] = open[--nopen];
        if (!bb_pick(&b, &L, &c, &x)) { /* a leaf with nothing to split: its bound stays */
            if (w->dbg)
                fprintf(stderr, "  branch %zu: nothing to split, lb %.12g\n", L.nfix, L.lb);
            closed = fmin(closed, L.lb);
            bb_leaf_free(&L);
            continue;
        }
        for (side = 0; side < 2; side++) {
            bbleaf K = {0};
            double l;
            K.nfix = L.nfix + 1;
            K.fix = as_xcalloc(K.nfix, sizeof *K.fix);
            if (L.nfix > 0) /* the root leaf has no fixings (L.fix NULL) */
                memcpy(K.fix, L.fix, L.nfix * sizeof *K.fix);
            K.fix[L.nfix].c = c;
            K.fix[L.nfix].q = x;
            K.fix[L.nfix].eq = side == 0;
            l = fmax(L.lb, bb_eval(&b, K.fix, K.nfix, L.lam, &K)); /* a side's plans
                                                                     are the parent's too */
            K.lb = l;
            if (w->dbg)
                fprintf(stderr, "  branch %zu %s %s[%zu]: lb %.12g (%zu open)\n", L.nfix,
                        side ? "!=" : "=", as_problem_node(w->p, cg->node[c])->name, x, l,
                        nopen);
            if (l >= *ub - b.tol) {
                closed = fmin(closed, l);
                bb_leaf_free(&K);
                continue;
            }
            if (nopen == cap)
                open = as_xreallocarray(open, cap *= 2, sizeof *open);
            open[nopen++] = K;
        }
        bb_leaf_free(&L);
    }
    /* not clipped at UB: the leaf that holds the plan has a bound at most its cost, and
       tests/unit/test_formulate checks the minimum against enumeration */
    out = closed;
    for (i = 0; i < nopen; i++) {
        out = fmin(out, open[i].lb);
        bb_leaf_free(&open[i]);
    }
    free(open);
    for (t = 0; t < w->rows.n; t++)
        w->rows.v[t].lam = b.lam0[t];
    cg_penalise(w, cg, cr, c0);
    as_mrf_state_sync(st);
    for (c = 0; c < nn; c++)
        free(b.base[c]);
    free(b.base);
    free(b.lam0);
    free(score);
    free(cand);
    return fmax(out, lb);
}

/* Keep ST's messages for the next round, in the leaders' strategy spaces. */
static void
msg_save_into(work *w, const cgraph *cg, as_mrf_state *st, double ***msgp, size_t *nmsgp)
{
    size_t j, i, side;

    if (*nmsgp < w->edges.n) {
        *msgp = as_xrealloc(*msgp, (2 * w->edges.n + 1) * sizeof **msgp);
        memset(*msgp + 2 * *nmsgp, 0, 2 * (w->edges.n - *nmsgp) * sizeof **msgp);
        *nmsgp = w->edges.n;
    }
    for (j = 0; j < cg->g.m; j++)
        for (side = 0; side < 2; side++) {
            size_t c = side ? cg->g.ev[j] : cg->g.eu[j], we = cg->we[j];
            const wedge *e = &w->edges.v[we];
            const double *f = as_mrf_state_msg(st, j, (int)side);
            double **m = &(*msgp)[2 * we + side];
            if (*m == NULL)
                *m = as_xcalloc(kof(w, side ? e->v : e->u) + 1, sizeof **m);
            for (i = 0; i < cg->g.k[c]; i++)
                (*m)[cg->sub[c][i]] = f[i];
        }
}

static void
work_msg_save(work *w, const cgraph *cg, as_mrf_state *st)
{
    msg_save_into(w, cg, st, &w->msg, &w->nmsg);
}

/* The first round's Lagrangian reached ABS_LB (offsets included) at the rows' multipliers,
   with ST's messages: the best so far is kept for a later reduction (work_duals_export). */
static void
lam_best_take(work *w, const cgraph *cg, as_mrf_state *st, double abs_lb)
{
    size_t t;

    if (w->in_bb || w->round != 0 || (w->lam_best != NULL && !(abs_lb > w->lam_best_lb)))
        return;
    if (w->lam_best == NULL)
        w->lam_best = as_xcalloc(w->rows.n + 1, sizeof *w->lam_best);
    for (t = 0; t < w->rows.n; t++)
        w->lam_best[t] = w->rows.v[t].lam;
    w->lam_best_lb = abs_lb;
    msg_save_into(w, cg, st, &w->msg_best, &w->nmsg_best);
}

/* Start ST from the last round's messages where an edge lives on (any messages keep the
   bound valid: they are a reparametrisation; gpt3-175b 4x4x4: round 2 from zero got
   15.829 against round 1's 15.849). */
static void
work_msg_load(work *w, const cgraph *cg, as_mrf_state *st)
{
    size_t j, i, side;
    int any = 0;

    for (j = 0; j < cg->g.m; j++)
        for (side = 0; side < 2 && cg->we[j] < w->nmsg; side++) {
            size_t c = side ? cg->g.ev[j] : cg->g.eu[j];
            const double *m = w->msg[2 * cg->we[j] + side];
            double *f = as_mrf_state_msg(st, j, (int)side);
            if (m == NULL)
                continue;
            for (i = 0; i < cg->g.k[c]; i++)
                f[i] = m[cg->sub[c][i]];
            any = 1;
        }
    if (any)
        as_mrf_state_sync(st);
}

/* The earlier reduction's rows are W's (in order, same rooms, multipliers >= 0). */
static int
duals_alike(const work *w, const as_duals *d)
{
    size_t t;

    for (t = 0; t < d->nrows && t < w->rows.n; t++)
        if (d->room[t] != w->room0[t] || !(d->lam[t] >= 0))
            break;
    if (w->dbg)
        fprintf(stderr, "  multipliers: %zu rows there, %zu here, the first %zu alike\n",
                d->nrows, w->rows.n, t);
    return d->nrows == w->rows.n && t == d->nrows;
}

/*
 * Before the rounds: the earlier reduction's (duals_from's) last messages into W's on the
 * live edges between the same leaders, when its rows are W's.  Then the first round starts
 * TRW-S from them at its multipliers, not from none at none (gpt3-175b 4x4x4 under 324 GiB:
 * the solve for the gap spent 6-9 s of its round there to reach 15.84, then ran again at the
 * multipliers).  Exact: any messages are a reparametrisation, any multipliers >= 0 a bound.
 */
static void
work_msg_carry(work *w)
{
    const as_duals *d = w->duals_from;
    size_t i, side, n = 0;

    if (d == NULL || d->nmsg == 0 || w->top != 1 || !duals_alike(w, d))
        return;
    if (w->nmsg < w->edges.n) {
        w->msg = as_xrealloc(w->msg, (2 * w->edges.n + 1) * sizeof *w->msg);
        memset(w->msg + 2 * w->nmsg, 0, 2 * (w->edges.n - w->nmsg) * sizeof *w->msg);
        w->nmsg = w->edges.n;
    }
    for (i = 0; i < d->nmsg; i++) {
        wedge *e = find_edge(w, d->mu[i], d->mv[i]);
        size_t we;
        if (e == NULL)
            continue;
        we = (size_t)(e - w->edges.v);
        for (side = 0; side < 2; side++) {
            const double *m = d->msg[2 * i + (e->u == d->mu[i] ? side : 1 - side)];
            size_t x = side ? e->v : e->u;
            if (m == NULL)
                continue;
            if (w->msg[2 * we + side] == NULL)
                w->msg[2 * we + side] = as_xmalloc((kof(w, x) + 1) * sizeof **w->msg);
            memcpy(w->msg[2 * we + side], m, kof(w, x) * sizeof **w->msg);
        }
        n++;
    }
    w->red->stats.msg_carried = n;
    w->warm = n > 0;
    if (w->dbg)
        fprintf(stderr, "  messages carried over: %zu of %zu edges\n", n, d->nmsg);
}

/*
 * The first round: an earlier reduction's multipliers (the same problem's rows, in order,
 * same rooms) in the rows, when their bound beats RES's (then RES is theirs); else the rows'
 * stay.  Exact: any multipliers >= 0 give a bound.
 */
static void
work_duals_load(work *w, cgraph *cg, const crows *cr, double **c0, as_mrf_state *st,
                as_mrf_result *res, size_t *lp, double *ub, size_t *ubplan)
{
    const as_duals *d = w->duals_from;
    size_t t, nn = cg->g.n;
    double *keep, pen;
    as_mrf_result r;

    if (!duals_alike(w, d))
        return;
    keep = as_xcalloc(w->rows.n + 1, sizeof *keep);
    for (t = 0; t < w->rows.n; t++) {
        keep[t] = w->rows.v[t].lam;
        w->rows.v[t].lam = w->rows.v[t].alive ? d->lam[t] : 0;
    }
    pen = cg_penalise(w, cg, cr, c0);
    as_mrf_state_sync(st);
    as_mrf_state_run(st, BOUND_SWEEPS, &r);
    r.lb -= pen;
    consider(w, cg, c0, r.plan, lp, ub, ubplan);
    if (w->dbg)
        fprintf(stderr, "  multipliers carried over: lb %.12g (without: %.12g)\n", r.lb,
                res->lb);
    if (r.lb > res->lb) {
        as_mrf_result_free(res, nn);
        *res = r;
        w->red->stats.duals_used = 1;
    } else {
        as_mrf_result_free(&r, nn);
        for (t = 0; t < w->rows.n; t++)
            w->rows.v[t].lam = keep[t];
        cg_penalise(w, cg, cr, c0);
        as_mrf_state_sync(st);
    }
    free(keep);
}

/*
 * One round: bound the live problem (with Lagrangian multipliers on the
 * memory rows); when a plan satisfies every row (the bound's own, the best
 * of earlier rounds, or one repaired to fit), drop the strategies that
 * cannot be optimal.  Returns how many.
 */
static size_t
work_bound(work *w)
{
    size_t n = as_problem_nnodes(w->p), i, s, removed = 0, nn, *lp = NULL, *ubplan = NULL,
           *tmp = NULL, *aplan = NULL;
    cgraph cg;
    crows cr;
    as_mrf_state *st;
    as_mrf_result res;
    double ub = INFINITY, t0 = as_now(), **c0, pen, bblb, tdl;
    int dbg = w->dbg, branched = 0;

    cgraph_init(&cg, w);
    crows_init(&cr, w, &cg);
    nn = cg.g.n;
    c0 = as_xcalloc(nn + 1, sizeof *c0);
    for (i = 0; i < nn; i++) {
        c0[i] = as_xmalloc(cg.g.k[i] * sizeof **c0);
        memcpy(c0[i], cg.g.c[i], cg.g.k[i] * sizeof **c0);
    }
    if (w->round == 0 && w->warm) { /* the earlier reduction's multipliers, with its messages */
        for (i = 0; i < w->rows.n; i++)
            w->rows.v[i].lam = w->rows.v[i].alive ? w->duals_from->lam[i] : 0;
        w->red->stats.duals_used = 1;
    }
    pen = cg_penalise(w, &cg, &cr, c0);
    memset(&res, 0, sizeof res);
    st = as_mrf_state_new_until(&cg.g, w->stop); /* the caller's plan stands past STOP */
    if (st == NULL)
        goto stopped;
    work_msg_load(w, &cg, st);
    /* with live rows and no plan that fits yet, half the time left is the repair's and the
       Lagrangian's (gpt3-175b 4x4x4 under 324 GiB: TRW-S ran to the deadline, the repair
       had no time and the round found no plan, so pruned nothing) */
    /* in the first round also with a plan (a caller's incumbent, solve/fit.c's solve for the
       gap): the Lagrangian finds the plans and raises the bound (gpt3-175b 4x4x4 under 324
       GiB: TRW-S took the gap solve's whole round, the Lagrangian got nothing) */
    /* also at a fixed work's safety stop: past it the start depends on the time anyway, and
       a repaired plan is a start where none is not (gpt3-175b 4x4x4 under 324 GiB, beam at
       -t 60: TRW-S ran 410 sweeps to the safety stop, no plan, beam's own 80 % above) */
    {
        double dl = w->deadline > 0 ? w->deadline : w->safety;
        tdl = dl > 0 && cr.off[nn] > 0 && (w->best == NULL || w->round == 0)
                  ? t0 + 0.5 * fmax(0, dl - t0)
                  : dl;
        as_mrf_state_set_deadline(st, tdl);
    }
    /* the first round's bound is the one a run under a tight limit reports: a few sweeps
       past the soft deadline, up to half the slack before the reductions give up (gpt3-1.3b
       2x4x2 in the sweep's 5 s: dominance left TRW-S one sweep, lb 6-18 % under the plan) */
    if (w->round == 0 && w->deadline > 0 && w->abort_at > w->deadline)
        as_mrf_state_set_floor(st, 10, w->deadline + 0.5 * (w->abort_at - w->deadline));
    as_mrf_state_set_stop(st, w->stop);
    /* from carried messages at their multipliers: as many sweeps as a Lagrangian step (the
       steps raise the bound: gpt3-175b 4x4x4 under 324 GiB, the solve for the gap's run
       went on 187 sweeps, 24 s loaded, from 16.09279 to 16.09279) */
    as_mrf_state_run(st, w->round == 0 && w->warm ? LAGR_SWEEPS
                        : cr.off[nn] > 0        ? ROWS_SWEEPS
                                                : BOUND_SWEEPS,
                     &res);
    as_mrf_state_set_stop(st, 0); /* the Lagrangian's runs use their results */
    if (res.stopped)
        goto stopped;
    if (w->deadline == 0 && tdl > 0 && as_now() >= tdl)
        w->safety_hit = 1; /* fixed work: the sweeps depended on the time */
    res.lb -= pen;
    bblb = res.lb;
    if (w->round == 0 && w->warm) {
        w->red->stats.warm_lb = res.lb + w->offset + as_problem_offset(w->p);
        w->red->stats.msg_edges = cg.g.m;
        if (dbg)
            fprintf(stderr, "  from the carried messages and multipliers: lb %.12g (there %.12g)\n",
                    w->red->stats.warm_lb, w->duals_from->lb);
    }
    aplan = as_xcalloc(nn + 1, sizeof *aplan); /* the branching's: the plan before the rows */
    memcpy(aplan, res.plan, nn * sizeof *aplan);
    if (w->round == 0 && w->warm) {
        /* that plan is the multipliers' (on gpt3-13b 2x8 under 53.61 GiB it was the plan
           that fits on every node the branching weighs: nothing to split, the solve for
           the gap got no bound): one sweep at none, from these messages, which stay */
        double *keep = as_xcalloc(w->rows.n + 1, sizeof *keep);
        as_mrf_result r0;
        work_msg_save(w, &cg, st);
        for (i = 0; i < w->rows.n; i++) {
            keep[i] = w->rows.v[i].lam;
            w->rows.v[i].lam = 0;
        }
        cg_penalise(w, &cg, &cr, c0);
        as_mrf_state_sync(st);
        as_mrf_state_run(st, 1, &r0);
        memcpy(aplan, r0.plan, nn * sizeof *aplan);
        as_mrf_result_free(&r0, nn);
        for (i = 0; i < w->rows.n; i++)
            w->rows.v[i].lam = keep[i];
        free(keep);
        cg_penalise(w, &cg, &cr, c0);
        work_msg_load(w, &cg, st);
    }
    lp = as_xcalloc(n + 1, sizeof *lp);
    ubplan = as_xcalloc(nn + 1, sizeof *ubplan);
    tmp = as_xcalloc(nn + 1, sizeof *tmp);
    consider(w, &cg, c0, res.plan, lp, &ub, ubplan);
    if (w->best != NULL) { /* still a plan of the reduced problem, and it still fits */
        for (i = 0; i < nn; i++) {
            for (tmp[i] = 0; tmp[i] < cg.g.k[i] && cg.sub[i][tmp[i]] != w->best[cg.node[i]];
                 tmp[i]++)
                ;
            if (tmp[i] == cg.g.k[i])
                break; /* pruning and dominance keep it; a caller's incumbent may have lost
                          a strategy to the alias masks */
        }
        if (i == nn)
            consider(w, &cg, c0, tmp, lp, &ub, ubplan);
    }
    if (!isfinite(ub)) {
        /* the kept alias pairs, then the rows (whose moves may break a pair again) */
        memcpy(tmp, res.plan, nn * sizeof *tmp);
        if (w->kept_alias.n > 0 && work_alias_repair(w, &cg, tmp))
            consider(w, &cg, c0, tmp, lp, &ub, ubplan);
        if (!isfinite(ub) && work_repair(w, &cg, &cr, tmp) &&
            (w->kept_alias.n == 0 || work_alias_repair(w, &cg, tmp)))
            consider(w, &cg, c0, tmp, lp, &ub, ubplan);
    }
    if (dbg)
        fprintf(stderr, "  trw-s %d sweeps lb %.12g, plan %.12g (%.3f s)\n", res.iters, res.lb, ub,
                as_now() - t0);
    w->lagrange = 0;
    if (isfinite(ub) && cr.off[nn] > 0) {
        w->lagrange = 1;
        if (!w->bb_plain) {
            w->fcnt = as_xcalloc(nn + 1, sizeof *w->fcnt);
            for (i = 0; i < nn; i++)
                w->fcnt[i] = as_xcalloc(cg.g.k[i] + 1, sizeof **w->fcnt);
        }
        if (w->round == 0 && w->duals_from != NULL && !w->warm)
            work_duals_load(w, &cg, &cr, c0, st, &res, lp, &ub, ubplan);
        work_lagrange(w, &cg, &cr, c0, st, &res, &ub, ubplan);
        if (dbg)
            fprintf(stderr, "  lagrange: lb %.12g plan %.12g (%.3f s)\n", res.lb, ub,
                    as_now() - t0);
        /* the scale search looks for plans, not bounds: after the first round only when the
           last one found a cheaper plan (the best plan carries over between rounds) */
        /* for a plan's gap (for_gap) within 2 % of the bound: the branching wants the time */
        if (ub - res.lb > fmax(w->for_gap ? 0.02 : 1e-4, w->gap) *
                              fabs(ub + w->offset + as_problem_offset(w->p)) &&
            (w->round == 0 || w->scale_paid)) {
            double was = ub;
            work_scale_search(w, &cg, &cr, c0, st, &ub, ubplan);
            w->scale_paid = ub < was;
            if (dbg)
                fprintf(stderr, "  scale search: plan %.12g -> %.12g (%.3f s)\n", was, ub,
                        as_now() - t0);
        }
    }
    /* not from a caller's plan: the refit rounds (solve/fit.c) report the first solve's
       bound and want this round's time for plans */
    if (w->lagrange && w->round == 0 && w->top == 1 && (!w->has_inc || w->for_gap) &&
        isfinite(ub) &&
        !past(w) &&
        ub - res.lb > fmax(1e-9 * fabs(ub), gap_abs(w, ub))) {
        double was = bblb;
        /* the messages of the Lagrangian's end, not of the branching's last leaf (its
           fixings' costs): the next round's and a later reduction's start */
        work_msg_save(w, &cg, st);
        branched = 1;
        bblb = work_branch(w, &cg, &cr, c0, st, aplan, res.lb, &ub, ubplan);
        if (dbg)
            fprintf(stderr, "  branching: lb %.12g -> %.12g, %zu bounds (%.3f s)\n", was, bblb,
                    w->red->stats.bb_nodes, as_now() - t0);
    }
    { /* a bound of the live problem holds for P up to the gap pruning's cut */
        double lb = fmin(fmax(res.lb, bblb) + w->offset + as_problem_offset(w->p),
                         w->red->stats.cut);
        if (!(w->red->stats.lb >= lb))
            w->red->stats.lb = lb;
    }
    w->red->stats.ub = ub + w->offset + as_problem_offset(w->p);
    w->red->stats.bound_rounds++;
    if (isfinite(ub)) {
        /* exact: drop what costs more than the plan; with a gap, also what cannot beat the
           plan by more than the gap (every plan it drops costs more than the cut) */
        double exact = ub + 1e-9 * fmax(fabs(ub), fabs(res.lb)) + 1e-300, thr = exact;
        if (w->top > 1) { /* k-best: only what is dearer than a top-th plan */
            double kth = kth_plan_cost(w, &cg, &cr, c0, ubplan, ub);
            exact = thr = kth + 1e-9 * fmax(fabs(kth), fabs(res.lb)) + 1e-300;
            if (dbg)
                fprintf(stderr, "  k-best: plan %zu costs %.12g (best %.12g)\n", w->top, kth, ub);
        }
        if (w->gap > 0) /* as the branching closes its leaves (GAP_CUT) */
            thr = fmin(exact, ub - GAP_CUT * gap_abs(w, ub));
        if (w->best == NULL)
            w->best = as_xcalloc(n + 1, sizeof *w->best);
        if (w->floor == NULL)
            w->floor = as_xcalloc(n + 1, sizeof *w->floor);
        for (i = 0; i < nn; i++) { /* every plan with s_x = p costs at least LB + gap_x(p) */
            size_t v = cg.node[i];
            double off = w->offset + as_problem_offset(w->p);
            if (w->floor[v] == NULL) {
                w->floor[v] = as_xmalloc((w->nodes[v].k + 1) * sizeof **w->floor);
                for (s = 0; s < w->nodes[v].k; s++)
                    w->floor[v][s] = -INFINITY;
            }
            for (s = 0; s < cg.g.k[i]; s++)
                w->floor[v][cg.sub[i][s]] =
                    fmax(w->floor[v][cg.sub[i][s]], res.lb + res.gap[i][s] + off);
        }
        for (i = 0; i < nn; i++) {
            wnode *x = &w->nodes[cg.node[i]];
            w->best[cg.node[i]] = cg.sub[i][ubplan[i]];
            if (x->frozen)
                continue;
            for (s = 0; s < cg.g.k[i]; s++)
                if (res.lb + res.gap[i][s] > thr && x->nok > 1 && s != ubplan[i]) {
                    if (!(res.lb + res.gap[i][s] > exact)) /* only the gap drops it */
                        w->red->stats.cut = fmin(w->red->stats.cut,
                                                 thr + w->offset + as_problem_offset(w->p));
                    x->ok[cg.sub[i][s]] = 0;
                    x->nok--;
                    removed++;
                }
        }
    }
    w->red->stats.pruned += removed;
    if (dbg)
        fprintf(stderr, "bound: %zu nodes %zu edges %zu rows-entries lb %.12g ub %.12g "
                "removed %zu (%.3f s)\n", nn, cg.g.m, cr.off[nn], res.lb, ub, removed,
                as_now() - t0);
    if (0) {
    stopped: /* own_plan: past STOP, no bound, nothing pruned, the messages stay as they were */
        w->stopped = 1;
        if (dbg)
            fprintf(stderr, "bound: stopped at the caller's limit (%.3f s)\n", as_now() - t0);
    }
    for (i = 0; i < nn; i++) { /* the cgraph frees its own cost arrays */
        memcpy((double *)cg.g.c[i], c0[i], cg.g.k[i] * sizeof **c0);
        free(c0[i]);
    }
    free(c0);
    if (w->fcnt != NULL) {
        for (i = 0; i < nn; i++)
            free(w->fcnt[i]);
        free(w->fcnt);
        w->fcnt = NULL;
    }
    as_mrf_result_free(&res, nn);
    if (!w->stopped && !branched)
        work_msg_save(w, &cg, st);
    if (w->round == 0 && w->dw != NULL && w->plans0 == NULL) { /* for a later solve */
        size_t k, v;
        w->nplans0 = w->dw->n;
        w->plans0 = as_xcalloc(w->nplans0 + 1, sizeof *w->plans0);
        for (k = 0; k < w->nplans0; k++) {
            w->plans0[k] = as_xmalloc((n + 1) * sizeof **w->plans0);
            for (v = 0; v < n; v++)
                w->plans0[k][v] = NONE;
            for (i = 0; i < nn; i++)
                w->plans0[k][cg.node[i]] = cg.sub[i][w->dw->plan[k][i]];
        }
    }
    dw_free(w);
    as_mrf_state_free(st);
    crows_free(&cr);
    cgraph_free(&cg);
    free(lp);
    free(ubplan);
    free(tmp);
    free(aplan);
    return removed;
}

/*
 * Strategies no plan that fits can use: with p, some live row holds more than its room even
 * when every other entry of it takes its least memory.  Exact (only plans over the budget
 * go); a node's last strategy stays (then no plan fits at all, and the rows say so).
 * Returns the strategies dropped.
 */
static size_t
work_mem_prune(work *w)
{
    size_t t, i, s, gone = 0;
    int pass;

    /* pass 0: every row fits its least memory with a margin (else no plan fits, or only
       within the solvers' tolerances: left to the rows as it is); pass 1: prune */
    for (pass = 0; pass < 2; pass++)
    for (t = 0; t < w->rows.n; t++) {
        wrow *r = &w->rows.v[t];
        double least = 0, room = r->room * (1 + 1e-12);
        if (!r->alive)
            continue;
        for (i = 0; i < r->n; i++) {
            const wnode *x = &w->nodes[r->node[i]];
            double mn = INFINITY;
            for (s = 0; s < x->k; s++)
                if (x->ok[s] && r->m[i][s] < mn)
                    mn = r->m[i][s];
            least += isfinite(mn) ? mn : 0;
        }
        if (pass == 0 && !(least <= r->room * (1 - 1e-6)))
            return 0;
        for (i = 0; pass == 1 && i < r->n; i++) {
            wnode *x = &w->nodes[r->node[i]];
            double mn = INFINITY;
            if (!x->alive || x->frozen || x->nok <= 1)
                continue;
            for (s = 0; s < x->k; s++)
                if (x->ok[s] && r->m[i][s] < mn)
                    mn = r->m[i][s];
            for (s = 0; s < x->k && x->nok > 1; s++)
                if (x->ok[s] && least - mn + r->m[i][s] > room &&
                    (w->best == NULL || w->best[r->node[i]] != s)) {
                    x->ok[s] = 0;
                    x->nok--;
                    x->dirty = 1;
                    gone++;
                }
        }
    }
    return gone;
}

/* ---- the ILP size cap ---- */

typedef as_hidx hidx; /* dual.h */

/* Is row (BY_ROW) or column A of E's matrix equal to B over the possible strategies? */
static int
line_eq(const work *w, const wedge *e, int by_row, size_t a, size_t b)
{
    size_t ku = kof(w, e->u), kv = kof(w, e->v), x;
    const unsigned char *ok = by_row ? w->nodes[e->v].ok : w->nodes[e->u].ok;

    for (x = 0; x < (by_row ? kv : ku); x++)
        if (ok[x] && (by_row ? e->r[a * kv + x] != e->r[b * kv + x]
                             : e->r[x * kv + a] != e->r[x * kv + b]))
            return 0;
    return 1;
}

/*
 * Classes of equal rows (BY_ROW) or columns of live edge E over the possible strategies, into
 * CLS (the leader's strategy space; NONE where not possible), as ilp.c aggregates its e
 * columns (an upper bound on them: a restriction only merges more).
 */
static void
line_classes(const work *w, const wedge *e, int by_row, size_t *cls, hidx *tmp)
{
    size_t ku = kof(w, e->u), kv = kof(w, e->v), n = by_row ? ku : kv, m = 0, a, x, g, c = 0;
    const unsigned char *own = by_row ? w->nodes[e->u].ok : w->nodes[e->v].ok;
    const unsigned char *ok = by_row ? w->nodes[e->v].ok : w->nodes[e->u].ok;

    for (a = 0; a < n; a++) {
        uint64_t h = 1469598103934665603ull;
        cls[a] = NONE;
        if (!own[a])
            continue;
        for (x = 0; x < (by_row ? kv : ku); x++) {
            double d = by_row ? e->r[a * kv + x] : e->r[x * kv + a];
            uint64_t bits;
            if (!ok[x])
                continue;
            d = d == 0 ? 0 : d; /* -0 and 0 are one cost */
            memcpy(&bits, &d, sizeof bits);
            h = (h ^ bits) * 1099511628211ull;
        }
        tmp[m].h = h;
        tmp[m++].i = a;
    }
    qsort(tmp, m, sizeof *tmp, as_hidx_cmp);
    for (a = 0; a < m; a = g) { /* one hash: classes by comparing with each class's first */
        for (g = a; g < m && tmp[g].h == tmp[a].h; g++) {
            size_t r;
            for (r = a; r < g; r++)
                if (line_eq(w, e, by_row, tmp[r].i, tmp[g].i)) {
                    cls[tmp[g].i] = cls[tmp[r].i];
                    break;
                }
            if (r == g)
                cls[tmp[g].i] = c++;
        }
    }
}

/* May strategy S of leader V be kept out under threshold TAU (keep: floor <= TAU)? */
static int
cap_drops(const work *w, size_t v, size_t s, double tau)
{
    const wnode *x = &w->nodes[v];

    return x->alive && !x->frozen && x->ok[s] && x->nok > 1 && w->floor[v] != NULL &&
           s != w->best[v] && w->floor[v][s] > tau;
}

/* The e columns of the ILP (an upper bound) when the strategies with floors above TAU go. */
static double
cap_estimate(const work *w, size_t *const *rc, size_t *const *cc, double tau, size_t *stamp,
             size_t *mark)
{
    size_t j, s;
    double cols = 0;

    for (j = 0; j < w->edges.n; j++) {
        const wedge *e = &w->edges.v[j];
        size_t nr = 0, nc = 0;
        if (!e->alive)
            continue;
        ++*mark;
        for (s = 0; s < kof(w, e->u); s++)
            if (rc[j][s] != NONE && !cap_drops(w, e->u, s, tau) && stamp[rc[j][s]] != *mark) {
                stamp[rc[j][s]] = *mark;
                nr++;
            }
        ++*mark;
        for (s = 0; s < kof(w, e->v); s++)
            if (cc[j][s] != NONE && !cap_drops(w, e->v, s, tau) && stamp[cc[j][s]] != *mark) {
                stamp[cc[j][s]] = *mark;
                nc++;
            }
        if (nr > 1 && nc > 1) /* one class on a side: node costs, no e columns */
            cols += (double)nr * (double)nc;
    }
    return cols;
}

/*
 * The ILP size cap (as_reduce_opts.ilp_cap): when the e columns of what is left would exceed
 * CAP, keep only the strategies whose floor (a lower bound on every plan that fits with them,
 * from the bound rounds) is at most a threshold, chosen as high as the cap allows, and the
 * best plan's.  The result is a restriction, not a reduction: its optimum is a plan that fits,
 * and every plan with a strategy left out costs at least the lowest floor left out, which
 * becomes stats.cut (P's optimum >= min(optimum of the result, cut)).  Returns the strategies
 * left out.
 */
static size_t
work_restrict(work *w, size_t cap)
{
    size_t n = as_problem_nnodes(w->p), j, v, s, nf = 0, kmax = 1, mark = 0, lo, hi, out = 0;
    size_t **rc, **cc, *stamp;
    hidx *tmp;
    double *fl, tau, low = INFINITY, t0 = as_now(), full, est;

    if (cap == 0 || w->best == NULL || w->floor == NULL || w->top > 1)
        return 0;
    for (v = 0; v < n; v++)
        if (w->nodes[v].alive && w->nodes[v].k > kmax)
            kmax = w->nodes[v].k;
    rc = as_xcalloc(w->edges.n + 1, sizeof *rc);
    cc = as_xcalloc(w->edges.n + 1, sizeof *cc);
    stamp = as_xcalloc(kmax + 1, sizeof *stamp);
    tmp = as_xcalloc(kmax + 1, sizeof *tmp);
    for (j = 0; j < w->edges.n; j++) {
        const wedge *e = &w->edges.v[j];
        if (!e->alive)
            continue;
        rc[j] = as_xmalloc((kof(w, e->u) + 1) * sizeof **rc);
        cc[j] = as_xmalloc((kof(w, e->v) + 1) * sizeof **cc);
        line_classes(w, e, 1, rc[j], tmp);
        line_classes(w, e, 0, cc[j], tmp);
    }
    full = cap_estimate(w, rc, cc, INFINITY, stamp, &mark);
    if (full > (double)cap) {
        /* the thresholds: the floors of the strategies that may go, lowest first */
        for (v = 0; v < n; v++)
            for (s = 0; s < w->nodes[v].k; s++)
                nf += cap_drops(w, v, s, -INFINITY);
        fl = as_xcalloc(nf + 1, sizeof *fl);
        for (v = nf = 0; v < n; v++)
            for (s = 0; s < w->nodes[v].k; s++)
                if (cap_drops(w, v, s, -INFINITY))
                    fl[nf++] = w->floor[v][s];
        qsort(fl, nf, sizeof *fl, cmp_double);
        /* the largest threshold whose estimate fits: lo fits (lo = 0: keep none of them) */
        lo = 0;
        hi = nf;
        while (lo < hi) {
            size_t mid = lo + (hi - lo + 1) / 2;
            if (cap_estimate(w, rc, cc, fl[mid - 1], stamp, &mark) <= (double)cap)
                lo = mid;
            else
                hi = mid - 1;
        }
        tau = lo > 0 ? fl[lo - 1] : -INFINITY;
        est = cap_estimate(w, rc, cc, tau, stamp, &mark);
        for (v = 0; v < n; v++)
            for (s = 0; s < w->nodes[v].k; s++)
                if (cap_drops(w, v, s, tau)) {
                    low = fmin(low, w->floor[v][s]);
                    w->nodes[v].ok[s] = 0;
                    w->nodes[v].nok--;
                    w->nodes[v].dirty = 1;
                    out++;
                }
        w->red->stats.cut = fmin(w->red->stats.cut, low);
        w->red->stats.restricted += out;
        if (w->dbg)
            fprintf(stderr, "restrict: e columns %.0f > cap %zu: %zu strategies out, "
                    "threshold %.12g, cut %.12g, estimate %.0f (%.3f s)\n", full, cap, out, tau,
                    low, est, as_now() - t0);
        free(fl);
    }
    for (j = 0; j < w->edges.n; j++) {
        free(rc[j]);
        free(cc[j]);
    }
    free(rc);
    free(cc);
    free(stamp);
    free(tmp);
    return out;
}

/* ---- output ---- */

/* Map liveness, aliases and no-goods of P onto the reduced problem Q. */
static void
work_rows(work *w, as_problem *q, const size_t *newidx)
{
    const as_problem *p = w->p;
    const as_reduction *red = w->red;
    size_t t, i, j, v, s, n = as_problem_nnodes(p), *nodes, *choice;

    for (t = 0; t < w->rows.n; t++) {
        const wrow *r = &w->rows.v[t];
        double **m = as_xcalloc(r->n + 1, sizeof *m);
        size_t cnt = 0;
        if (!r->alive) {
            free(m);
            continue;
        }
        nodes = as_xcalloc(r->n + 1, sizeof *nodes);
        for (i = 0; i < r->n; i++) {
            size_t L = r->node[i], id = newidx[L];
            if (id == NONE)
                continue; /* work_refresh folded the decided ones, the others have none */
            nodes[cnt] = id;
            m[cnt] = as_xcalloc(as_problem_node(q, id)->k, sizeof **m);
            for (s = 0; s < as_problem_node(q, id)->k; s++)
                m[cnt][s] = r->m[i][red->sub[id][s]];
            cnt++;
        }
        as_problem_add_liveness_m(q, nodes, (const double *const *)m, cnt, r->resident, NULL);
        for (i = 0; i < cnt; i++)
            free(m[i]);
        free(m);
        free(nodes);
    }
    for (i = 0; i < w->kept_alias.n; i++) {
        const as_palias *a = as_problem_alias(p, w->kept_alias.v[i]);
        size_t x = newidx[red->leader[a->a]], y = newidx[red->leader[a->b]];
        size_t kx = as_problem_node(q, x)->k, ky = as_problem_node(q, y)->k;
        unsigned char *bad = as_xcalloc(kx * ky + 1, 1);
        for (s = 0; s < kx; s++)
            for (j = 0; j < ky; j++)
                bad[s * ky + j] = (unsigned char)alias_bad(w, a, red->sub[x][s], red->sub[y][j]);
        as_problem_add_alias(q, x, y, bad, NULL);
        free(bad);
    }
    choice = as_xcalloc(as_problem_nnodes(q) + 1, sizeof *choice);
    for (i = 0; i < as_problem_nnogoods(p); i++) {
        const size_t *ng = as_problem_nogood(p, i);
        for (v = 0; v < n; v++) {
            size_t L = red->leader[v], sl = ng[L], id = newidx[L];
            if (id == NONE || !w->nodes[L].ok[sl] || fmap(red, v, sl) != ng[v])
                break;
            for (s = 0; red->sub[id][s] != sl; s++)
                ;
            choice[id] = s;
        }
        if (v == n) /* a no-good outside the reduced plans cannot match any plan */
            as_problem_add_nogood(q, choice, NULL);
    }
    free(choice);
}

static as_problem *
work_output(work *w)
{
    const as_problem *p = w->p;
    size_t n = as_problem_nnodes(p), v, s, j, id, kk, a, b;
    size_t *newidx = as_xcalloc(n + 1, sizeof *newidx);
    as_problem *q = as_problem_new();
    as_reduction *red = w->red;
    double *c = as_xcalloc(1, sizeof *c), *m = as_xcalloc(1, sizeof *m);

    red->origin = as_xcalloc(n + 1, sizeof *red->origin);
    red->sub = as_xcalloc(n + 1, sizeof *red->sub);
    for (v = 0; v < n; v++) {
        const as_pnode *nd = as_problem_node(p, v);
        wnode *x = &w->nodes[v];
        newidx[v] = NONE;
        if (!x->alive)
            continue;
        c = as_xrealloc(c, nd->k * sizeof *c);
        m = as_xrealloc(m, nd->k * sizeof *m);
        id = as_problem_nnodes(q);
        red->sub[id] = as_xcalloc(x->nok, sizeof **red->sub);
        for (s = kk = 0; s < nd->k; s++)
            if (x->ok[s]) {
                c[kk] = x->cost[s];
                m[kk] = nd->m[s];
                red->sub[id][kk++] = s;
            }
        as_problem_add_node(q, nd->name, kk, c, NULL, m, &id, NULL);
        for (s = 0; nd->snames != NULL && s < kk; s++)
            if (nd->snames[red->sub[id][s]] != NULL)
                as_problem_set_strategy_name(q, id, s, nd->snames[red->sub[id][s]], NULL);
        if (nd->img != NULL) { /* the images among the strategies kept */
            size_t np = as_problem_axis_perms(p), *im = as_xcalloc(np * kk + 1, sizeof *im), t;
            for (j = 0; j < np; j++)
                for (s = 0; s < kk; s++) {
                    size_t o = nd->img[j * nd->k + red->sub[id][s]];
                    im[j * kk + s] = AS_NO_IMAGE;
                    for (t = 0; o != AS_NO_IMAGE && t < kk; t++)
                        if (red->sub[id][t] == o)
                            im[j * kk + s] = t;
                }
            as_problem_set_axis_image(q, id, np, im, NULL);
            free(im);
        }
        newidx[v] = id;
        red->origin[id] = v;
        red->stats.strategies += kk;
    }
    red->nred = as_problem_nnodes(q);
    for (v = 0; v < n; v++) /* follow links kept when not merged (frozen: strategies whole) */
        if (w->nodes[v].alive && as_problem_node(p, v)->follow != AS_NO_FOLLOW)
            as_problem_set_follow(q, newidx[v], newidx[as_problem_node(p, v)->follow], NULL);
    for (j = 0; j < w->edges.n; j++) {
        const wedge *e = &w->edges.v[j];
        size_t kv = kof(w, e->v), ka, kb, i;
        double *r;
        if (!e->alive)
            continue;
        a = newidx[e->u];
        b = newidx[e->v];
        ka = as_problem_node(q, a)->k;
        kb = as_problem_node(q, b)->k;
        r = as_xmalloc(ka * kb * sizeof *r);
        for (i = 0; i < ka; i++)
            for (s = 0; s < kb; s++)
                r[i * kb + s] = e->r[red->sub[a][i] * kv + red->sub[b][s]];
        as_problem_add_edge(q, a, b, r, NULL);
        free(r);
    }
    work_rows(w, q, newidx);
    as_problem_set_memory(q, as_problem_memory(p));
    as_problem_set_offset(q, as_problem_offset(p) + w->offset);
    red->stats.nodes = as_problem_nnodes(q);
    red->stats.edges = as_problem_nedges(q);
    if (w->best != NULL && red->nred > 0) { /* the pruning's plan, for the solver to start from */
        red->start = as_xcalloc(red->nred, sizeof *red->start);
        for (id = 0; id < red->nred && red->start != NULL; id++) {
            for (s = 0; s < as_problem_node(q, id)->k; s++)
                if (red->sub[id][s] == w->best[red->origin[id]])
                    break;
            red->start[id] = s;
            if (s == as_problem_node(q, id)->k) { /* cannot happen: pruning keeps it */
                free(red->start);
                red->start = NULL;
            }
        }
    }
    if (red->start != NULL && w->ncand > 0) { /* k-best: the moves in reduced indices */
        red->cand_node = as_xcalloc(w->ncand, sizeof *red->cand_node);
        red->cand_strat = as_xcalloc(w->ncand, sizeof *red->cand_strat);
        for (j = 0; j < w->ncand; j++) {
            id = newidx[w->cand_v[j]];
            if (id == NONE || !w->nodes[w->cand_v[j]].ok[w->cand_s[j]])
                continue; /* cannot happen: the moves' strategies are within the bound */
            for (s = 0; red->sub[id][s] != w->cand_s[j]; s++)
                ;
            red->cand_node[red->ncand] = id;
            red->cand_strat[red->ncand++] = s;
        }
    }
    free(newidx);
    free(c);
    free(m);
    return q;
}

/* Are the constant edges of the live graph all gone (matrices may have become constant)? */
static void
work_const_sweep(work *w)
{
    size_t j;

    for (j = 0; j < w->edges.n; j++)
        work_try_const(w, &w->edges.v[j]);
}

/* The share of the live edges' matrix entries (possible strategies at both ends) in all
   the live edges' entries. */
static double
work_live_share(const work *w)
{
    double all = 0, live = 0;
    size_t j;

    for (j = 0; j < w->edges.n; j++) {
        const wedge *e = &w->edges.v[j];
        if (!e->alive)
            continue;
        all += (double)kof(w, e->u) * (double)kof(w, e->v);
        live += (double)w->nodes[e->u].nok * (double)w->nodes[e->v].nok;
    }
    return all > 0 ? live / all : 0;
}

/* Constant edges out, PBQP, dominance and row refresh until nothing changes. */
static void
work_simplify(work *w)
{
    size_t more, v;

    for (v = 0; v < as_problem_nnodes(w->p); v++) /* bound rounds changed anything */
        w->nodes[v].dirty = 1;
    do {
        work_const_sweep(w);
        if (w->flags & AS_REDUCE_PBQP)
            work_pbqp(w);
        more = work_refresh(w) > 0 && (w->flags & AS_REDUCE_PBQP);
        if ((w->flags & AS_REDUCE_DOMINATED) && as_problem_nnogoods(w->p) == 0) {
            double t0 = as_now();
            size_t gone = work_dominance(w);
            if (w->dbg)
                fprintf(stderr, "  dominance: %zu strategies (%.3f s)\n", gone, as_now() - t0);
            if (gone > 0)
                more = 1;
        }
    } while (more && !past(w)); /* at the time limit: less reduced, still exact */
}

/*
 * After the first bound round: its multipliers (those of its best Lagrangian bound) and its
 * messages, for a later reduction of the same problem (solve/fit.c's solve for the gap),
 * whose first round bounds the same live problem (later rounds' are pruned: multipliers fit
 * for those gave gpt3-13b 2x8 under 53.61 GiB a lower first bound than none).
 */
static void
work_duals_export(work *w)
{
    as_duals *d = as_xcalloc(1, sizeof *d);
    double **msg = w->msg_best != NULL ? w->msg_best : w->msg;
    size_t t, j, k, nmsg = w->msg_best != NULL ? w->nmsg_best : w->nmsg;

    d->nrows = w->rows.n;
    d->lam = as_xcalloc(w->rows.n + 1, sizeof *d->lam);
    d->room = as_xcalloc(w->rows.n + 1, sizeof *d->room);
    for (t = 0; t < w->rows.n; t++) {
        d->lam[t] = w->lam_best != NULL ? w->lam_best[t] : w->rows.v[t].lam;
        d->room[t] = w->room0[t];
    }
    d->lb = w->lam_best != NULL ? w->lam_best_lb : -INFINITY;
    d->nplans = w->nplans0; /* the pool goes with them */
    d->nnodes = as_problem_nnodes(w->p);
    d->plans = w->plans0;
    w->plans0 = NULL;
    w->nplans0 = 0;
    for (j = 0; j < nmsg; j++)
        if (w->edges.v[j].alive && (msg[2 * j] != NULL || msg[2 * j + 1] != NULL))
            d->nmsg++;
    d->mu = as_xcalloc(d->nmsg + 1, sizeof *d->mu);
    d->mv = as_xcalloc(d->nmsg + 1, sizeof *d->mv);
    d->msg = as_xcalloc(2 * d->nmsg + 1, sizeof *d->msg);
    for (j = 0, t = 0; j < nmsg; j++) {
        const wedge *e = &w->edges.v[j];
        if (!e->alive || (msg[2 * j] == NULL && msg[2 * j + 1] == NULL))
            continue;
        d->mu[t] = e->u;
        d->mv[t] = e->v;
        for (k = 0; k < 2; k++)
            if (msg[2 * j + k] != NULL) {
                size_t len = kof(w, k ? e->v : e->u);
                d->msg[2 * t + k] = as_xmalloc((len + 1) * sizeof **d->msg);
                memcpy(d->msg[2 * t + k], msg[2 * j + k], len * sizeof **d->msg);
            }
        t++;
    }
    as_duals_free(w->red->duals);
    w->red->duals = d;
}

int
as_reduce(const as_problem *p, unsigned flags, as_problem **out, as_reduction **redp,
          as_err *err)
{
    as_reduce_opts o = {.flags = flags, .gap = 0, .top = 1};

    return as_reduce_ex(p, &o, out, redp, err);
}

int
as_reduce_ex(const as_problem *p, const as_reduce_opts *o, as_problem **out,
             as_reduction **redp, as_err *err)
{
    size_t n = as_problem_nnodes(p), v, j, t;
    /* k-best: no eliminations; dominance only for distinct layouts (it drops zero-cost ties) */
    unsigned flags = o->top > 1 ? o->flags & ~(AS_REDUCE_PBQP |
                                              (o->layouts ? 0u : AS_REDUCE_DOMINATED))
                                : o->flags;
    work w = {.p = p, .flags = flags, .top = o->top > 1 ? o->top : 1,
              .gap = o->top <= 1 && o->gap > 0 ? o->gap : 0,
              .dbg = getenv("AS_DEBUG_REDUCE") != NULL,
              .deadline = o->fixed_work ? 0 : o->deadline, /* fixed work: a safety stop */
              .safety = o->fixed_work ? o->deadline : 0, .bb_evals = o->bb_evals,
              .bb_plain = o->bb_plain,
              .abort_at = o->abort_at, .stop = o->own_plan ? o->abort_at : 0};
    double t0 = as_now(), edges_s = 0;
#define DBG(what)                                                                                 \
    do {                                                                                          \
        if (w.dbg)                                                                                \
            fprintf(stderr, "reduce: %s %.3f s\n", what, as_now() - t0);                          \
    } while (0)
    as_reduction *red;
    int round, rc = AS_OK;

    AS_CHECK(as_problem_validate(p, err));
    red = as_xcalloc(1, sizeof *red);
    red->n = n;
    red->leader = as_xcalloc(n + 1, sizeof *red->leader);
    red->stats.lb = red->stats.ub = red->stats.warm_lb = NAN;
    red->stats.cut = INFINITY;
    w.red = red;
    if (work_init(&w, p) != 0) {
        rc = as_errf(err, AS_ESOLVER, "time limit reached while reducing the problem (memory "
                     "rows), no plan");
        goto done;
    }
    DBG("init");
    w.room0 = as_xcalloc(w.rows.n + 1, sizeof *w.room0);
    for (t = 0; t < w.rows.n; t++)
        w.room0[t] = w.rows.v[t].room;
    if (o->incumbent != NULL && w.top == 1) { /* leaders' own strategies are their leader's */
        w.best = as_xcalloc(n + 1, sizeof *w.best);
        memcpy(w.best, o->incumbent, n * sizeof *w.best);
        w.has_inc = 1;
        w.for_gap = o->branch;
        w.duals_from = o->duals_from;
    }
    edges_s = as_now();
    if (work_edges(&w) != 0) {
        rc = as_errf(err, AS_ESOLVER, "time limit reached while reducing the problem (edges), "
                     "no plan");
        goto done;
    }
    edges_s = as_now() - edges_s;
    DBG("edges");
    if (w.deadline > 0 && !o->whole) {
        /* dominance may take half the time left before the bound rounds: the rest is the
           first round's, whose bound a tight limit reports (gpt3-1.3b 2x2x4 in the sweep's
           5 s: dominance took 1.7 s of it and left TRW-S one sweep, 8-18 % under the
           plan); the nodes it did not reach stay due for the next simplify.  Not for a
           whole reduction (export): a less reduced problem would be another ILP */
        double dl = w.deadline, now = as_now();
        w.deadline = now + 0.5 * fmax(0, dl - now);
        work_simplify(&w);
        w.deadline = dl;
    } else {
        work_simplify(&w);
    }
    DBG("simplify");
    work_msg_carry(&w);
    as_progress_start(&w.pg, "reductions: bound rounds");
    for (round = 0; (flags & AS_REDUCE_BOUND) && as_problem_nnogoods(p) == 0 &&
                    round < BOUND_ROUNDS;
         round++) {
        size_t live = 0, removed;
        for (v = 0; v < n; v++)
            if (w.nodes[v].alive)
                live += w.nodes[v].nok;
        /* the first round gives a plan that fits (unless the caller has one: below) */
        if ((round > 0 || o->whole || (o->own_plan && live > 0)) && past(&w)) {
            red->stats.timed_out = 1;
            w.stopped |= round == 0 && o->own_plan; /* no plan of the rounds */
            break;
        }
        if (round == 0 && w.stop > 0 && live > 0 &&
            as_now() + 2 * edges_s * work_live_share(&w) > w.stop) {
            /* own_plan: the round would not get past copying the live matrices and sorting
               their rows into classes before the stop (each a pass over them, as building
               the edges was; gpt3-1.3b 16 devices P = 2 2x2x2: 0.8 s each) */
            red->stats.timed_out = 1;
            w.stopped = 1;
            break;
        }
        as_progress_update(&w.pg, round, BOUND_ROUNDS, red->stats.ub, red->stats.lb);
        w.round = (size_t)round;
        /* not for a whole reduction (export): the exported model stays the one external
           solvers' solution files were written for */
        if (round == 0 && as_problem_memory(p) > 0 && !o->whole) {
            size_t gone = work_mem_prune(&w);
            red->stats.pruned += gone;
            if (w.dbg)
                fprintf(stderr, "  memory: %zu strategies fit no row\n", gone);
            if (gone > 0)
                work_simplify(&w);
        }
        removed = work_bound(&w);
        if (round == 0 && w.lagrange && w.top == 1) /* for a later solve (solve/fit.c) */
            work_duals_export(&w);
        if (removed == 0 || (w.stop > 0 && as_now() > w.stop))
            break;
        work_simplify(&w);
        DBG("round");
        /* with live memory rows a round costs a Lagrangian ascent (seconds on large graphs);
           one that pruned under 1 % of the strategies left is the last (exact: the rounds
           only prune) */
        if (w.lagrange && removed * 100 < live)
            break;
    }
    as_progress_end(&w.pg);
    if (past(&w) || w.safety_hit)
        red->stats.timed_out = 1;
    /* the caller's plan stands, unless the rounds found a cheaper one: out of time, no
       output (gpt3-1.3b 16 devices P = 2 2x2x2, a 1 s share: the first round and its
       output ran 2.5 s past it for a dearer plan) */
    if (o->own_plan && (w.stopped || (w.stop > 0 && as_now() > w.stop)) &&
        !(red->stats.ub <= o->own_obj + 1e-12 * fabs(o->own_obj))) {
        red->stats.timed_out = 1;
        rc = as_errf(err, AS_ESOLVER, "time limit reached while reducing the problem (the "
                     "caller's plan is no dearer)");
        goto done;
    }
    if (!o->whole && work_restrict(&w, o->ilp_cap) > 0) {
        work_simplify(&w); /* nodes left with one strategy fold into their neighbours */
        DBG("restrict");
    }
    if (o->whole && red->stats.timed_out) { /* less reduced would be another problem */
        rc = as_errf(err, AS_ESOLVER, "time limit reached while reducing the problem (%s)",
                     red->stats.bound_rounds > 0 ? "bound rounds" : "eliminations");
        goto done;
    }
    *out = work_output(&w);
    *redp = red;
done:
    for (v = 0; v < n; v++) {
        free(w.nodes[v].cost);
        free(w.nodes[v].ok);
        AS_VEC_FREE(&w.nodes[v].adj);
    }
    for (j = 0; j < w.edges.n; j++)
        free(w.edges.v[j].r);
    for (j = 0; j < w.pool.n; j++) /* the rows' vectors */
        free((double *)w.pool.v[j]);
    as_vpool_destroy(&w.pool);
    for (t = 0; t < w.rows.n; t++) {
        free(w.rows.v[t].m);
        free(w.rows.v[t].node);
        free(w.rows.v[t].wit);
    }
    AS_VEC_FREE(&w.rows);
    free(w.room0);
    free(w.lam_best);
    for (j = 0; j < w.nplans0; j++)
        free(w.plans0[j]);
    free(w.plans0);
    free(w.best);
    for (v = 0; w.floor != NULL && v < n; v++)
        free(w.floor[v]);
    free(w.floor);
    for (j = 0; j < 2 * w.nmsg; j++)
        free(w.msg[j]);
    free(w.msg);
    for (j = 0; j < 2 * w.nmsg_best; j++)
        free(w.msg_best[j]);
    free(w.msg_best);
    free(w.cand_v);
    free(w.cand_s);
    AS_VEC_FREE(&w.kept_alias);
    AS_VEC_FREE(&w.edges);
    free(w.nodes);
    if (rc != AS_OK)
        as_reduction_free(red);
    return rc;
}

size_t
as_reduction_origin(const as_reduction *red, size_t i)
{
    return red->origin[i];
}

const size_t *
as_reduction_start(const as_reduction *red)
{
    return red->start;
}

size_t
as_reduction_candidates(const as_reduction *red, const size_t **node, const size_t **strat)
{
    *node = red->cand_node;
    *strat = red->cand_strat;
    return red->ncand;
}

size_t
as_reduction_leader(const as_reduction *red, size_t v)
{
    return red->leader[v];
}

size_t
as_reduction_map(const as_reduction *red, size_t v, size_t s)
{
    return fmap(red, v, s);
}

size_t
as_reduction_strategy(const as_reduction *red, size_t i, size_t s)
{
    return red->sub[i][s];
}

void
as_reduction_recover(const as_reduction *red, const size_t *reduced, size_t *full)
{
    size_t i, v;

    for (i = 0; i < red->nred; i++)
        full[red->origin[i]] = red->sub[i][reduced[i]];
    for (i = red->elims.n; i-- > 0;) {
        const elim *el = &red->elims.v[i];
        if (el->deg == 0)
            full[el->x] = el->choice;
        else if (el->deg == 1)
            full[el->x] = el->best[full[el->y]];
        else
            full[el->x] = el->best[full[el->y] * el->kz + full[el->z]];
    }
    for (v = 0; v < red->n; v++)
        if (red->leader[v] != v)
            full[v] = fmap(red, v, full[red->leader[v]]);
}

const as_reduce_stats *
as_reduction_stats(const as_reduction *red)
{
    return &red->stats;
}

as_duals *
as_reduction_take_duals(as_reduction *red)
{
    as_duals *d = red->duals;

    red->duals = NULL;
    return d;
}

void
as_duals_free(as_duals *d)
{
    size_t i;

    if (d == NULL)
        return;
    for (i = 0; i < 2 * d->nmsg; i++)
        free(d->msg[i]);
    free(d->msg);
    for (i = 0; i < d->nplans; i++)
        free(d->plans[i]);
    free(d->plans);
    free(d->mu);
    free(d->mv);
    free(d->lam);
    free(d->room);
    free(d);
}

void
as_reduction_free(as_reduction *red)
{
    size_t i;

    if (red == NULL)
        return;
    for (i = 0; i < red->elims.n; i++)
        free(red->elims.v[i].best);
    for (i = 0; i < red->n; i++)
        free(red->map[i]);
    for (i = 0; i < red->nred; i++)
        free(red->sub[i]);
    AS_VEC_FREE(&red->elims);
    free(red->map);
    free(red->sub);
    free(red->leader);
    free(red->origin);
    free(red->start);
    free(red->cand_node);
    free(red->cand_strat);
    as_duals_free(red->duals);
    free(red);
}
