/* problem.h -- the choice problem (cost graph): one strategy per node,
 * node cost vectors, resharding matrices on edges, memory at liveness
 * points, alias pairs, and the reductions that shrink it exactly.
 *
 * This is the input of every solver and of the ILP (formulate/ilp.h); it is
 * what Alpa's solver takes (s_len, E, r, c, d, m, L, A, s_follow, M).  A
 * problem is built node by node (as_problem_add_*), read from a cost-graph
 * file (docs/costgraph.md), validated once, and then treated as immutable.
 * All arrays are copied into the problem's arena.  Records returned by
 * accessors borrow from the problem and stay valid until the next add call
 * or as_problem_free().  Costs are seconds, memory is bytes per device.
 */
#ifndef AS_PROBLEM_H
#define AS_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "autoshard.h"

#define AS_NO_FOLLOW ((size_t)-1)

typedef struct as_problem as_problem; /* opaque: owns an arena */

/** A node (operator) and its strategies; read-only view. */
typedef struct as_pnode {
    const char *name;          /**< unique node name */
    size_t k;                  /**< number of strategies, >= 1 */
    const double *c;           /**< compute cost per strategy, seconds */
    const double *d;           /**< communication cost per strategy, seconds */
    const double *m;           /**< memory per strategy, bytes per device */
    size_t follow;             /**< node whose strategy index this one copies, or AS_NO_FOLLOW */
    const char *const *snames; /**< strategy names (k entries) or NULL: "S<i>" */
    const size_t *img;         /**< axis images (as_problem_set_axis_image): nperm x k, or NULL */
} as_pnode;

/** No image of a strategy under an axis permutation. */
#define AS_NO_IMAGE ((size_t)-1)
/** Non-identity permutations of up to 3 mesh axes (2-D: 1, 3-D: 5). */
#define AS_AXIS_PERM_MAX 5

/** An edge u -> v with its resharding matrix; read-only view. */
typedef struct as_pedge {
    size_t u, v;       /**< node indices, u != v */
    const double *r;   /**< k_u x k_v row-major, r[p * k_v + q], seconds */
} as_pedge;

#define AS_NO_SEG ((size_t)-1)
/** Segment chains a point may hold besides its first (as_plive.more). */
#define AS_LIVE_MORE 3

/** The nodes live at one point of the schedule, or a liveness segment (entries shared by
    many points, as_problem_add_live_seg); read-only view. */
typedef struct as_plive {
    size_t n;                /**< number of entries */
    const size_t *nodes;     /**< node of each entry */
    const double *const *m;  /**< memory vector of each entry (k_node), bytes per device */
    double resident;         /**< constant bytes per device (params, grads, optimizer state) */
    size_t seg;              /**< the segment whose entries (its parents' included) are live
                                  here too, or AS_NO_SEG; of a segment: its parent */
    size_t more[AS_LIVE_MORE]; /**< a point's further segments (further chains), or
                                    AS_NO_SEG; all AS_NO_SEG in a segment */
} as_plive;

/** Walks the parts of a point: the point, its segment chain, its second chain. */
typedef struct as_plive_iter {
    const as_problem *p;
    const as_plive *e;
    size_t next[AS_LIVE_MORE]; /**< the chains still to walk */
    int nnext;
} as_plive_iter;

/** Alias pair: bad[p * k_b + q] != 0 forbids s_a = p together with s_b = q. */
typedef struct as_palias {
    size_t a, b;              /**< node indices (a == b allowed: p == q forbids p) */
    const unsigned char *bad; /**< k_a x k_b row-major 0/1 */
} as_palias;

/* Build. */
/** Create an empty problem (no memory budget, objective offset 0). */
as_problem *as_problem_new(void);
/** Free P and everything it owns; NULL is a no-op. */
void as_problem_free(as_problem *p);
/** Deep copy of P (nodes, edges, liveness, aliases, no-goods, budget, offset). */
as_problem *as_problem_clone(const as_problem *p);
/**
 * Add a node with K strategies; C, D, M are copied (NULL means all zeros).
 * Sets *id to its index.  AS_EUSAGE on an empty or duplicate name, K == 0.
 */
int as_problem_add_node(as_problem *p, const char *name, size_t k, const double *c,
                        const double *d, const double *m, size_t *id, as_err *err);
/** Name strategy S of node V (copied).  AS_EUSAGE if out of range. */
int as_problem_set_strategy_name(as_problem *p, size_t v, size_t s, const char *name,
                                 as_err *err);
/**
 * Axis images: the problem's mesh axes permuted NPERM ways (the builder's non-identity
 * permutations, as_problem_axis_perms), IMG[j * k + s] is the strategy of node V whose
 * input and output specs are those of S with the axes permuted the j-th way, or
 * AS_NO_IMAGE (copied).  What the heuristics' axis-map move reads (solve/heur.h); a
 * problem without them (a cost-graph file) has no such move.  The first call fixes NPERM
 * (<= AS_AXIS_PERM_MAX); AS_EUSAGE on another NPERM, or V, an image out of range.
 */
int as_problem_set_axis_image(as_problem *p, size_t v, size_t nperm, const size_t *img,
                              as_err *err);
/** NPERM of as_problem_set_axis_image, 0 if no node has images. */
size_t as_problem_axis_perms(const as_problem *p);
/** Node V copies the strategy index of LEADER (Alpa's s_follow); checked by validate. */
int as_problem_set_follow(as_problem *p, size_t v, size_t leader, as_err *err);
/** Add edge U -> V with the k_u x k_v row-major matrix R (copied). */
int as_problem_add_edge(as_problem *p, size_t u, size_t v, const double *r, as_err *err);
/**
 * Add edge U -> V with the matrix R borrowed, not copied: R must stay valid and unchanged
 * until P is freed (the problem builder's resharding matrices, shared by every edge between
 * two strategy sets; as_problem_clone copies them).
 */
int as_problem_add_edge_ref(as_problem *p, size_t u, size_t v, const double *r, as_err *err);
/** Add a liveness point: NODES[0..n) are live with their own m vectors, plus RESIDENT bytes. */
int as_problem_add_liveness(as_problem *p, const size_t *nodes, size_t n, double resident,
                            as_err *err);
/** Like as_problem_add_liveness, with an explicit memory vector M[i] (k entries; NULL = the
    node's own m) per entry.  M[i] is copied; entries (of points and segments) given equal
    vectors share one copy (as_plive.m is read-only). */
int as_problem_add_liveness_m(as_problem *p, const size_t *nodes, const double *const *m,
                              size_t n, double resident, as_err *err);
/**
 * Liveness segments: entries shared by many points, stored once (the parameters and
 * gradient buffers live at every point, the activations kept for the backward pass).  A
 * segment holds its own entries and those of its PARENT (an earlier segment, or
 * AS_NO_SEG); a point holds its own entries and those of its segments (as_plive.seg and
 * as_plive.more: one chain each).
 * Every reader of points adds the segment chain (as_problem_seg_bytes,
 * as_problem_live_bytes).  Appends a segment of NODES[0..n) with memory vectors M[i]
 * (M or M[i] NULL: the node's own m); sets *ID (may be NULL) to its index.
 */
int as_problem_add_live_seg(as_problem *p, const size_t *nodes, const double *const *m,
                            size_t n, size_t parent, size_t *id, as_err *err);
/** Like as_problem_add_liveness_m, the point holding the entries of segments SEG[0..NSEG)
    too (NSEG <= 1 + AS_LIVE_MORE; AS_NO_SEG entries are skipped), with their parents'. */
int as_problem_add_liveness_seg(as_problem *p, const size_t *nodes, const double *const *m,
                                size_t n, double resident, const size_t *seg, size_t nseg,
                                as_err *err);
/** Add an alias pair; BAD is k_a x k_b row-major 0/1 (copied). */
int as_problem_add_alias(as_problem *p, size_t a, size_t b, const unsigned char *bad,
                         as_err *err);
/** Forbid one complete assignment CHOICE (n_nodes entries): a no-good cut for k-best. */
int as_problem_add_nogood(as_problem *p, const size_t *choice, as_err *err);
/** Memory budget in bytes per device; 0 = no memory rows. */
void as_problem_set_memory(as_problem *p, double bytes);
/** Constant added to every plan's objective, seconds (reductions fold costs into it). */
void as_problem_set_offset(as_problem *p, double seconds);

/* Queries. */
size_t as_problem_nnodes(const as_problem *p);
size_t as_problem_nedges(const as_problem *p);
size_t as_problem_nlive(const as_problem *p);
size_t as_problem_naliases(const as_problem *p);
size_t as_problem_nnogoods(const as_problem *p);
const as_pnode *as_problem_node(const as_problem *p, size_t v);
const as_pedge *as_problem_edge(const as_problem *p, size_t j);
const as_plive *as_problem_live(const as_problem *p, size_t t);
const as_palias *as_problem_alias(const as_problem *p, size_t i);
size_t as_problem_nsegs(const as_problem *p);
/** Segment J: its own entries; seg is its parent (AS_NO_SEG: none), resident 0. */
const as_plive *as_problem_live_seg(const as_problem *p, size_t j);
/** The parts of point L, for (e = as_plive_begin(&it, p, l); e != NULL; e =
    as_plive_next(&it)): L itself, the chain of L->seg, the chains of L->more (a segment
    in two chains is visited twice, and counts twice). */
const as_plive *as_plive_begin(as_plive_iter *it, const as_problem *p, const as_plive *l);
const as_plive *as_plive_next(as_plive_iter *it);
/** Bytes per device of every segment, its parents' included, under CHOICE: a malloc'ed
    array of as_problem_nsegs entries (at least one). */
double *as_problem_seg_bytes(const as_problem *p, const size_t *choice);
/** Bytes per device at liveness point T under CHOICE: its resident bytes, its segments'
    (SEGS from as_problem_seg_bytes) and its own entries, in that order. */
double as_problem_live_bytes(const as_problem *p, size_t t, const double *segs,
                            const size_t *choice);
/** No-good I: an array of n_nodes strategy indices. */
const size_t *as_problem_nogood(const as_problem *p, size_t i);
double as_problem_memory(const as_problem *p);
/** The most bytes per device a liveness point may hold and still pass as_problem_check:
    the budget plus its rounding tolerance; INFINITY without a budget. */
double as_problem_memory_cap(const as_problem *p);
double as_problem_offset(const as_problem *p);
/** Look up a node by name; returns 1 and sets *v if found. */
int as_problem_find(const as_problem *p, const char *name, size_t *v);
/** Strategy name S of node V, "S<s>" written into BUF (>= 32 bytes) when unnamed. */
const char *as_problem_strategy_name(const as_problem *p, size_t v, size_t s, char *buf,
                                     size_t n);
/** Product of the strategy counts of the nodes that follow nobody (inf if huge). */
double as_problem_space(const as_problem *p);

/* Checks. */
/**
 * Check sizes and values: finite costs, non-negative memory, no self-loops,
 * no duplicate edges (either direction), indices in range, follow chains
 * without cycles between nodes of equal strategy counts.  AS_EPARSE with a
 * message naming the node/edge.
 */
int as_problem_validate(const as_problem *p, as_err *err);
/** Objective of a complete assignment CHOICE (no feasibility check), seconds. */
double as_problem_eval(const as_problem *p, const size_t *choice);
/** Peak over liveness points of resident + live memory under CHOICE, bytes per device
    (over the points the live mask keeps). */
double as_problem_peak(const as_problem *p, const size_t *choice);
/**
 * Keep only the liveness points T with ON[T] != 0 as rows (ON borrowed, as_problem_nlive
 * entries; NULL: every point): the others neither bind (as_problem_live_binds) nor count in
 * as_problem_peak, so P becomes a relaxation of itself.  Row generation (solve/solver.c)
 * solves it and adds the points its plans break.  Clones copy the mask.
 */
void as_problem_set_live_mask(as_problem *p, const unsigned char *on);
/** Entries of the binding points with their segment chains expanded, as the reductions'
    rows hold them before leaders merge (a double: the HLO step of 312k instructions has
    966 M). */
double as_problem_live_expanded(const as_problem *p);
/**
 * 1 if liveness point T can bind under the budget: its resident bytes plus
 * the largest memory of every entry exceed it, and the live mask keeps it.  A point that cannot bind is
 * left out of the ILP and does not stop reductions (exact).  0 without a budget.
 */
int as_problem_live_binds(const as_problem *p, size_t t);
/**
 * Smallest peak any plan could reach, bytes per device (a lower bound): the
 * largest over liveness points of resident bytes plus each entry's smallest
 * memory over the strategies a plan may hold (costs under
 * AS_ILP_FORBIDDEN_COST along the follow chain: an axis role's forbidden
 * layouts do not count).  solve's hopeless-budget check and sweep's pruning.
 */
double as_problem_peak_lower_bound(const as_problem *p);
/**
 * Check that CHOICE is a valid plan: indices in range, follows respected,
 * memory rows and alias rows hold, no no-good matched.  Sets *objective and
 * *peak when non-NULL.  AS_EINFEAS with the first violation in err.
 */
int as_problem_check(const as_problem *p, const size_t *choice, double *objective, double *peak,
                     as_err *err);

/* Cost-graph files (JSON, docs/costgraph.md). */
/** Read and validate PATH ("-" = stdin).  AS_EIO, or AS_EPARSE "FILE:LINE:COL: ..." / "FILE: nodes[3].c[1]: ...". */
int as_problem_read(const char *path, as_problem **out, as_err *err);
/** Parse a cost graph from TEXT; NAME is used in messages. */
int as_problem_parse(const char *text, size_t len, const char *name, as_problem **out,
                     as_err *err);
/** Write P as a cost-graph file (atomically; "-" = stdout).  Round-trips exactly. */
int as_problem_write(const as_problem *p, const char *path, as_err *err);
/** Serialise P to a malloc'ed NUL-terminated JSON string. */
char *as_problem_dumps(const as_problem *p);

/* Random instances (tests, benchmarks). */
/** Shape of a random Alpa-style cost graph; initialise with as_random_opts_init. */
typedef struct as_random_opts {
    size_t nodes;       /**< number of nodes */
    size_t edges;       /**< total edges, >= nodes - 1: a chain plus skip edges */
    size_t kmin, kmax;  /**< strategies per node */
    double follow;      /**< fraction of nodes that follow their predecessor */
    size_t live_window; /**< liveness point i holds nodes i-w+1..i; 0 = no liveness */
    size_t aliases;     /**< alias pairs (must share a spec) */
    double memory_frac; /**< budget = lb + frac * (max - lb) of the peak; 0 = no budget */
    uint64_t seed;
} as_random_opts;

void as_random_opts_init(as_random_opts *o);
/**
 * Generate a random cost graph: each strategy has one of 4 spec labels;
 * resharding is 0 between equal labels and proportional to a tensor size
 * otherwise; sharded strategies compute faster and use less memory but may
 * communicate.  Deterministic in O->seed.
 */
as_problem *as_problem_random(const as_random_opts *o);

/* Reductions (reduce.c). */
#define AS_REDUCE_FOLLOW 0x1u /**< merge followers into their leaders */
#define AS_REDUCE_CONST 0x2u  /**< drop constant resharding matrices into the offset */
#define AS_REDUCE_PBQP 0x4u   /**< eliminate degree 0/1/2 and single-strategy nodes outside
                                   memory/alias rows */
#define AS_REDUCE_ALIAS 0x8u  /**< merge alias pairs where one side determines the other */
#define AS_REDUCE_BOUND 0x10u /**< drop strategies whose lower bound exceeds a known plan
                                   (keeps one optimum; with as_reduce_opts.top, the top) */
#define AS_REDUCE_DOMINATED 0x20u /**< drop strategies another one beats in every context
                                       (keeps one optimum: not for k-best) */
#define AS_REDUCE_ALL 0x3fu

/** Tests: nonzero makes the reductions compute everything in full, without their shortcuts
    (rows of an elimination taken from an equal row); the results are the same, bit for bit. */
extern int as_reduce_plain;
/** Tests: how many times a shortcut of the reductions ran (rows taken from an equal row). */
extern size_t as_reduce_shortcuts;
/** Tests: nonzero keeps the plans the branching's leaves find (reduce.c work_branch) from
    lowering the plan: the bounds are the same, the plan may be dearer (test_solve makes
    --ilp-cap's restriction lose the optimum with it). */
extern int as_reduce_no_leaf_plans;
/** Tests: nonzero turns the plans' ILP off (reduce.c work_pool_ilp: the Lagrangian's plans
    mixed node by node, a plan that may lower the reductions' plan). */
extern int as_reduce_no_pool_ilp;

typedef struct as_reduction as_reduction; /* opaque: how to recover eliminated choices */

/** Sizes before and after, for reports. */
typedef struct as_reduce_stats {
    size_t followers;     /**< nodes merged into a leader */
    size_t aliases;       /**< alias pairs merged (one node determines the other) */
    size_t const_edges;   /**< constant edges dropped */
    size_t merged_edges;  /**< parallel edges merged */
    size_t elim[3];       /**< PBQP eliminations of degree 0, 1, 2 */
    size_t single;        /**< nodes left with one strategy, folded into their neighbours */
    size_t pruned;        /**< strategies removed: bound above a known plan, or alias rows */
    size_t dominated;     /**< strategies removed: another one is never worse */
    size_t strategies;    /**< strategies of the nodes that are left */
    int bound_rounds;     /**< rounds of bound pruning that ran */
    double lb, ub;        /**< last bound and plan cost of the pruning (offset included);
                               NaN when it did not run */
    double cut;           /**< as_reduce_gap: strategies were dropped only because they
                               cannot beat the plan by more than the gap, so every plan
                               costing less than this is kept; INFINITY when exact */
    size_t nodes, edges;  /**< what is left */
    int timed_out;        /**< the bound rounds stopped at as_reduce_opts.deadline */
    size_t bb_nodes;      /**< Lagrangian bounds of the branching on the memory rows'
                               nodes (reduce.c work_branch) */
    int duals_used;       /**< the first round started from as_reduce_opts.duals_from */
    size_t msg_carried;   /**< edges whose TRW-S messages came from duals_from */
    size_t plans_carried; /**< plans of duals_from's pool that started the Lagrangian's */
    size_t msg_edges;     /**< edges of the first round's bound graph (with msg_carried:
                               all carried, the bound starts where duals_from's ended) */
    double warm_lb;       /**< with them: the first round's first bound (NAN: none) */
    size_t restricted;    /**< strategies left out by as_reduce_opts.ilp_cap (a restriction:
                               the result is then not exact, cut bounds what was left out) */
    size_t bb_mixed;      /**< splits where the leaf's Lagrangian steps chose between
                               strategies */
} as_reduce_stats;

/**
 * Reduce P with the reductions in FLAGS into a new problem *OUT with no
 * follow links, whose objective (offset included) equals P's on the
 * recovered plan; *RED records how to recover.  Node names of *OUT are the
 * leaders' names; a node of *OUT may have fewer strategies than its leader
 * (as_reduction_strategy maps them back).  Exact: min over *OUT equals min
 * over P (AS_REDUCE_BOUND keeps at least one optimal plan, not every plan).
 * Time O(edges * k^3) for the eliminations, O(sweeps * sum_e k_u k_v) for
 * the bound.
 */
int as_reduce(const as_problem *p, unsigned flags, as_problem **out, as_reduction **red,
              as_err *err);
/** What as_reduce_ex does besides the flags. */
/*
 * The bound rounds' Lagrangian multipliers at their end, one per memory row (the rows as
 * work_init builds them from the problem, in order; ROOM identifies them), for a later
 * reduction of the same problem with the same rows to start its Lagrangian from (any
 * multipliers >= 0 give a bound: exact).  as_reduction_take_duals; as_duals_free.
 */
typedef struct as_duals {
    size_t nrows;
    double *lam, *room;
    /* the last round's TRW-S messages, for NMSG edges between leaders MU[i] and MV[i] (ids
       of the problem): MSG[2i] at MU[i]'s end, MSG[2i+1] at MV[i]'s, in their strategy
       spaces (NULL: none).  A later reduction starts from them at LAM, where it finds the
       same edge (any messages give a bound: exact) */
    size_t nmsg, *mu, *mv;
    double **msg;
    double lb;      /**< the bound they gave, offsets included (-INFINITY: none known) */
    /* the first round's Lagrangian plans, NPLANS of NNODES entries each (a leader's own
       strategy at each leader, SIZE_MAX elsewhere): a later reduction's Lagrangian starts
       its master from those that are still plans there */
    size_t nplans, nnodes;
    size_t **plans;
} as_duals;

void as_duals_free(as_duals *d);

typedef struct as_reduce_opts {
    unsigned flags; /**< AS_REDUCE_* */
    double gap;     /**< > 0: the bound pruning may also drop strategies that cannot give a
                         plan more than this relative gap cheaper than the best plan it knows
                         (that plan is kept); the optimum of the result is then within GAP of
                         P's, and P's optimum is at least min(optimum of the result,
                         stats.cut) */
    size_t top;     /**< > 1: keep the TOP best plans, not only one optimum: the bound
                         pruning drops only strategies dearer than a TOP-th distinct plan
                         that fits (gap is then ignored, PBQP and DOMINATED are off) */
    int layouts;    /**< with top > 1: distinct layouts are wanted (solver.h
                         as_solve_opts.distinct): DOMINATED stays on, a strategy no better than
                         another in every context (a zero-cost tie) is in no layout */
    double deadline; /**< as_now() time after which the bound rounds stop (exact: they only
                          prune less); 0 = none */
    double abort_at; /**< as_now() time after which the reductions give up, AS_ESOLVER "time
                          limit" (no plan yet); 0 = never */
    int whole;       /**< with a deadline: the reductions give up (AS_ESOLVER "time limit")
                          instead of stopping early, so the result never depends on the time
                          (export: `solve --solution` must rebuild the same problem) */
    const size_t *incumbent; /**< a plan of P (one strategy per node) that satisfies its rows,
                                  or NULL: with top 1 the bound pruning starts from it (a known
                                  plan: the rounds prune against its cost from the first one
                                  and run the Lagrangian even when TRW-S's own plan does not
                                  fit); the branching that raises the bound (stats.bb_nodes)
                                  does not run, unless BRANCH */
    int branch;      /**< with an incumbent: the branching runs too (the plan's gap is wanted,
                          not plans: solve/fit.c once the first plan fits) */
    int own_plan;    /**< 1: the caller holds a plan of P of cost OWN_OBJ (the sweep's sibling
                          start).  Unless the reductions have a cheaper one, they give up
                          (AS_ESOLVER "time limit") instead of running over: the first bound
                          round does not start past the deadline, and at abort_at the round
                          stops, even mid-sweep, and no output is built */
    double own_obj;  /**< with own_plan: its objective (as as_problem_eval gives it) */
    size_t ilp_cap;  /**< > 0 (top 1, not whole): when the ILP of what is left would have more
                          e columns than this, keep only the strategies whose bound (the
                          rounds' LB + reduced cost) is lowest, and the best plan's: a
                          restriction (stats.restricted), whose optimum is a plan that fits;
                          stats.cut then bounds every plan left out */
    const as_duals *duals_from; /**< an earlier reduction's multipliers (same problem, same
                                     rows): the first round's Lagrangian starts from them
                                     when they give a higher bound than none */
    int fixed_work;  /**< with a deadline: the reductions choose their amounts of work as
                          without one (the branching's bounds by count, bb_evals; TRW-S's
                          sweeps by count; dominance not cut to half the time), so the result
                          does not depend on the time; the deadline is only a safety stop of
                          work that overruns (stats.timed_out: then it may) */
    size_t bb_evals; /**< > 0: the branching computes at most this many bounds (0: 24, or
                          4096 under a deadline without fixed_work, which the time stops) */
    int bb_plain;    /**< 1: the branching never splits where the Lagrangian's steps mixed
                          (stats.bb_mixed stays 0), only on the heaviest node of its plan:
                          the heuristics' start (solver.c heuristic_bound), which wants the
                          leaves' plans more than their bound; in its 24 bounds the mixed
                          splits gave bert-large 2x8 under its budget a dearer start
                          (0.0442830 s against 0.0440763) */
} as_reduce_opts;

/** as_reduce with options; flags only (gap 0, top 1) is as_reduce. */
int as_reduce_ex(const as_problem *p, const as_reduce_opts *o, as_problem **out,
                 as_reduction **red, as_err *err);
/** Original index of node I of the reduced problem. */
size_t as_reduction_origin(const as_reduction *red, size_t i);
/** Strategy of the original node as_reduction_origin(I) that strategy S of reduced node I is. */
size_t as_reduction_strategy(const as_reduction *red, size_t i, size_t s);
/** Leader of original node V: the original node whose variables V shares (V itself if none). */
size_t as_reduction_leader(const as_reduction *red, size_t v);
/** Strategy of original node V when its leader takes strategy S (the leader's own numbering). */
size_t as_reduction_map(const as_reduction *red, size_t v, size_t s);
/**
 * The best plan of the reduced problem the bound pruning found (it fits every
 * row), to start a solver from; NULL if pruning did not run or found none.
 */
const size_t *as_reduction_start(const as_reduction *red);
/**
 * k-best (as_reduce_opts.top > 1): plans of the reduced problem that differ
 * from as_reduction_start() in one node, *NODE[j] taking strategy *STRAT[j],
 * that fit every row, cheapest first; returns how many (at most top - 1).
 */
size_t as_reduction_candidates(const as_reduction *red, const size_t **node,
                               const size_t **strat);
/** Turn an assignment of the reduced problem into one of the original (n_nodes entries). */
void as_reduction_recover(const as_reduction *red, const size_t *reduced, size_t *full);
const as_reduce_stats *as_reduction_stats(const as_reduction *red);
void as_reduction_free(as_reduction *red);
/* The bound rounds' multipliers at their end (NULL: no Lagrangian ran); the caller owns them
   (as_duals_free). */
as_duals *as_reduction_take_duals(as_reduction *red);

#endif /* AS_PROBLEM_H */
