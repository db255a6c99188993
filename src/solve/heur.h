/* heur.h -- what the search heuristics (beam, mcts) share: the problem
 * seen as decision units (a node that follows nobody with all the nodes
 * that copy its strategy), each unit's own cost vector (its members' compute
 * and communication plus the resharding between its members), the edges and
 * alias pairs that join it to other units, the memory each of its strategies
 * adds to every liveness point that can bind, and a greedy completion of a
 * partial plan.
 *
 * Units are numbered in node order, which is the graph's topological order
 * for problems built from graphs (or in reverse node order: as_heur_init_ex).  Every edge or alias pair between two
 * units is listed at both of them; a search that assigns units in order
 * costs it once, at the later one (other < u).
 */
#ifndef AS_HEUR_H
#define AS_HEUR_H

#include <stddef.h>

#include "formulate/problem.h"

/** An edge or alias pair seen from one of its two units. */
typedef struct as_hlink {
    size_t other;     /**< the unit at the other end */
    int own_is_u;     /**< 1 if this unit's member is the edge's u (alias's a) */
    size_t ko;        /**< strategies of the other unit */
    const double *r;  /**< edge: k_u x k_v matrix (NULL for an alias) */
    const unsigned char *bad; /**< alias: k_a x k_b 0/1 (NULL for an edge) */
    double *minr;     /**< edge: per strategy of this unit, the cheapest resharding to any
                           strategy of the other (a lower bound while the other is open) */
    double *minro;    /**< edge: the same per strategy of the other unit, over this one's */
    const double *ro; /**< edge: the matrix with this unit's strategy major, ro[s * ko + o]
                           (r itself or its transpose: both ends read rows, not columns) */
    const double *rt; /**< edge: the other unit's strategy major, rt[o * k + s] */
} as_hlink;

/** Memory a unit's strategies add to one liveness point that can bind. */
typedef struct as_hmem {
    size_t point;     /**< index among the binding points (0..nbind) */
    const double *dm; /**< k entries: bytes above the unit's cheapest strategy */
} as_hmem;

/** The same, as runs: the points [lo, hi) where a unit adds the same bytes (a weight
    or an optimizer state is resident at every point: one run instead of thousands). */
typedef struct as_hrun {
    size_t lo, hi;
    const double *dm; /**< k entries (shared with the first as_hmem of the run) */
} as_hrun;

typedef struct as_heur {
    const as_problem *p;
    size_t n, nu;          /**< nodes, units */
    size_t *unit;          /**< n: unit of each node */
    size_t *k;             /**< nu: strategies of each unit */
    size_t *mstart, *mem;  /**< members of unit u: mem[mstart[u] .. mstart[u+1]) */
    double **cost;         /**< nu vectors: own cost (INFINITY where an alias inside the
                                unit forbids the strategy) */
    size_t *lstart;        /**< links of unit u: link[lstart[u] .. lstart[u+1]) */
    as_hlink *link;
    size_t *hstart;        /**< memory of unit u: hm[hstart[u] .. hstart[u+1]) */
    as_hmem *hm;
    size_t *rstart;        /**< runs of unit u: run[rstart[u] .. rstart[u+1]) */
    as_hrun *run;
    size_t nbind;          /**< liveness points that can bind */
    double *base;          /**< nbind: resident + the cheapest strategy of every entry */
    double cap;            /**< budget plus the tolerance as_problem_check allows; INFINITY
                                without a budget */
    double **mw;           /**< nu vectors: bytes summed over binding points (a proxy for
                                how much memory a strategy takes), 0 without a budget */
    double *share;         /**< nu: how much the unit's choice can change the objective */
    int reverse;           /**< units numbered in reverse node order (as_heur_init_ex) */
    double deadline;       /**< as_now() time after which the local searches (single, pair
                                and chain moves) stop where they are, 0 = none (the
                                caller's --time-limit: a search over millions of columns
                                must not outlive it) */
    double **tr;           /**< ntr transposed edge matrices (owned) */
    size_t ntr;
    double **dmv;          /**< ndmv distinct memory vectors the as_hmem point into (owned:
                                a unit often adds the same bytes at many points) */
    size_t ndmv;
} as_heur;

/** Build the view of P (valid).  Costs O(nodes + edges + liveness entries * k). */
void as_heur_init(as_heur *h, const as_problem *p);
/** The same with the units numbered in reverse node order if REVERSE (a search in unit
    order then runs from the graph's end: the backward pass and the optimizer first). */
void as_heur_init_ex(as_heur *h, const as_problem *p, int reverse);
void as_heur_free(as_heur *h);

/** Cost of giving unit U strategy S when the units in X (indexed by unit, (size_t)-1 =
    unassigned) have theirs: own cost plus the links to assigned units; INFINITY if an
    alias pair forbids it. */
double as_heur_step_cost(const as_heur *h, const size_t *x, size_t u, size_t s);

/**
 * Complete X (nu entries, (size_t)-1 where unassigned) in unit order: every
 * unassigned unit takes the strategy that minimises its cost against the
 * units assigned so far plus the cheapest resharding to the units still open
 * (minr), plus LAMBDA times its memory weight (LAMBDA = 0: cost only;
 * INFINITY: memory first, cost breaking ties).
 */
void as_heur_greedy(const as_heur *h, size_t *x, double lambda);

/**
 * Iterated conditional modes: sweep the units of the complete assignment X,
 * giving each the strategy that costs least against all the others' (and
 * keeps every binding liveness point within the budget), until a sweep
 * changes nothing or MAX_SWEEPS ran; then pair moves (the best strategies of
 * the two ends of an edge together) and single moves again, until neither
 * helps.  Never makes X dearer; keeps it within the budget.  1 if X changed.
 */
int as_heur_improve(const as_heur *h, size_t *x, int max_sweeps);
/** as_heur_improve with pair moves only if USE_PAIRS (single moves are much cheaper). */
int as_heur_improve_ex(const as_heur *h, size_t *x, int max_sweeps, int use_pairs);

/**
 * The objective of the complete assignment X as the units see it (own costs plus every
 * link once; the problem's constant not included), or INFINITY if an alias forbids it or
 * a binding liveness point exceeds the budget.  TOT: nbind doubles of scratch, or NULL
 * (then allocated here).  O(units + links + memory entries): cheaper than
 * as_problem_check on the expanded plan, which it agrees with up to the constant.
 */
double as_heur_eval(const as_heur *h, const size_t *x, double *tot);
/** The bytes at the highest binding liveness point of the complete assignment X (what
    as_heur_eval holds against the budget; 0 without such points).  TOT: nbind doubles of
    scratch (not NULL). */
double as_heur_peak(const as_heur *h, const size_t *x, double *tot);

/**
 * Chain moves: a unit takes another strategy and the units around it answer with their
 * best strategies, breadth first over a few links; kept if cheaper and within the
 * budget; each round followed by as_heur_improve, until a round keeps nothing or
 * MAX_ROUNDS ran.  Never makes X dearer.  1 if X changed.
 */
int as_heur_chain(const as_heur *h, size_t *x, int max_rounds);

/**
 * Local search that persists: the units' cost vectors against a current complete
 * assignment, kept up to date as units move, and what is already settled (a unit whose
 * vector and strategy did not change since it was last looked at has no better single
 * or pair move).  Moving to a new assignment costs O(units that differ x links x k), and
 * polishing it looks again only at the units whose surroundings changed, so a search
 * that polishes many similar plans (MCTS's rollouts) pays for what differs.
 */
typedef struct as_hls as_hls;
/** A local search at the complete assignment X (copied). */
as_hls *as_hls_new(const as_heur *h, const size_t *x);
void as_hls_free(as_hls *q);
/** Move to the complete assignment X. */
void as_hls_set(as_hls *q, const size_t *x);
/** as_heur_improve_ex at the current assignment.  1 if it changed. */
int as_hls_improve(as_hls *q, int max_sweeps, int use_pairs);
/** as_heur_chain at the current assignment.  1 if it changed. */
int as_hls_chain(as_hls *q, int max_rounds);
/** as_heur_repair at the current assignment, incrementally (a step costs one pass over the
    units' memory runs: no recount of the plan, no pass over links).  1 if it then fits. */
int as_hls_repair(as_hls *q, int max_steps);
/** The current assignment (nu entries; valid until the next call on Q). */
const size_t *as_hls_x(const as_hls *q);

/**
 * Block moves (a large neighbourhood): for every unit as a seed (largest share first),
 * the units breadth first around it over the links, up to UNITS, are re-solved together
 * with the rest fixed, exactly on their breadth-first tree by dynamic programming (unary
 * terms from the cost vectors; the block's links off the tree at the current strategies,
 * or, in a second try, at their cheapest); the block's units answer with their best
 * strategies and the tree is solved again a few times; the cheapest result is kept if
 * the plan's true cost fell and it fits the budget, followed by single and pair moves.  Rounds until one keeps nothing, MAX_ROUNDS ran or
 * DEADLINE (an as_now() time, 0 = none) passed.  O(units x UNITS x k^2) a round.
 * Deterministic; never makes X dearer.  1 if X changed.
 */
/** The block size the solvers use (on 2x8, beam K=1 then blocks of 32 / 48 / 64 / 80 /
    160 units: gpt2-small at the ILP's optimum from 32 up; t5-base +1.97 / 0 / 0 / +0.99 /
    +4.42 %; gpt3-13b +9.06 / +9.06 / +1.35 / +1.35 %: larger blocks blur the tree). */
#define AS_HEUR_BLOCK_UNITS 64
int as_heur_block(const as_heur *h, size_t *x, size_t units, int max_rounds, double deadline);
/** as_heur_block at the current assignment.  1 if it changed. */
int as_hls_block(as_hls *q, size_t units, int max_rounds, double deadline);

/**
 * Relabel moves: every unit of X whose strategy is named A takes the one named B (where
 * it has it) at once -- e.g. "[y,None]" -> "[y,x]" in every layer, a mesh axis re-mapped
 * across the model, which per-unit moves and 64-unit blocks cannot reach.  Every A that
 * at least 4 units use and every B are evaluated as they are; the 6 cheapest are settled
 * by single, pair and chain moves and the best kept if the plan is cheaper and fits.
 * 1 if X changed.
 */
int as_heur_relabel(const as_heur *h, size_t *x, double deadline);

/**
 * Axis-map moves: for each permutation of the mesh axes the problem's builder gave images
 * for (as_problem_set_axis_image: 2-D the swap, 3-D the 5 non-identity ones), every unit of
 * X takes the strategy whose input and output specs are its own with the axes permuted
 * (a unit without an image keeps its strategy) -- the whole plan re-mapped at once; then
 * only the units whose own cost falls so.  Each is settled by single, pair and chain moves
 * and the best kept if the plan is cheaper and fits.  Nothing on a problem without images
 * (a cost-graph file, a 1-D mesh).  1 if X changed.
 */
int as_heur_axismap(const as_heur *h, size_t *x, double deadline);

/**
 * as_heur_relabel and as_heur_axismap settling their candidates in the local search *Q
 * (made at the first use if NULL, left for the caller to free): one search serves both,
 * so the second looks again only where its candidates differ from the first's (chain
 * moves skip what did not change).
 */
int as_heur_relabel_in(const as_heur *h, size_t *x, double deadline, as_hls **q);
int as_heur_axismap_in(const as_heur *h, size_t *x, double deadline, as_hls **q);

/**
 * The whole-plan polish both heuristics end with: block moves (as_heur_block, 3 rounds;
 * if they moved, chain moves), then relabel moves and axis-map moves (settled in *Q, as
 * as_heur_relabel_in), each followed by block moves again if it moved.  The block moves
 * run in one local search throughout, so a seed whose block tried and failed before and
 * has not changed since is not tried again (after a relabel that moved 500 units of
 * gpt3-13b, some 100 of 6084 seeds are).  Until DEADLINE (an as_now() time, 0 = none).
 * 1 if X changed.
 */
int as_heur_polish_blocks(const as_heur *h, size_t *x, double deadline, as_hls **q);

/**
 * Repair a complete assignment X over the budget: while a binding liveness point exceeds
 * it, the unit move with the least cost (against the others) per byte it takes off the
 * highest point (counting at most the excess) is made, up to MAX_STEPS moves.  1 if X
 * then fits (at once if it did).  Makes X dearer, as little as it sees.  Runs on the
 * local search's incremental state (as_hls_repair): the memory tree and the units' cost
 * vectors follow each move, so a step is one pass over the units' memory runs.
 */
int as_heur_repair(const as_heur *h, size_t *x, int max_steps);

/** Expand a unit assignment X into a node assignment CHOICE (n entries). */
void as_heur_expand(const as_heur *h, const size_t *x, size_t *choice);

#endif /* AS_HEUR_H */
