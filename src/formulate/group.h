/* group.h -- repeated layers: find blocks of a graph's problem that repeat
 * one another and tie them, so that they share one set of strategy
 * variables (docs/ilp.md, "Repeated layers").
 *
 * A block is the set of problem nodes (declared tensors and ops) of one
 * layer, in node order.  Layers are found from the names: automatically,
 * the first "SEG.N." of a name (h.3.mlp.fc1.mm, d.h.3.ln2.12,
 * adam_m.h.3.attn.q.w) puts the node in layer N of family SEG; with a
 * regex (PCRE2), the first capture group of its first match is the layer.
 * Two blocks are isomorphic when their canonical forms agree: node by node
 * the same strategy set (same op type, shapes and attributes: the strategy
 * context shares one set per signature), and the same inputs, each either
 * the same position inside the block or from outside it.  Blocks of a
 * family that are isomorphic to each other are tied: the j-th node of every
 * block but the first follows the j-th node of the first (as_problem
 * follow links).  The reductions (AS_REDUCE_FOLLOW) then give the whole
 * class one set of variables; memory rows keep every copy's bytes, and an
 * edge between two blocks lands on the representative's nodes.
 */
#ifndef AS_GROUP_H
#define AS_GROUP_H

#include <stddef.h>

#include "autoshard.h"
#include "formulate/build.h"
#include "formulate/problem.h"
#include "graph/graph.h"

/** Default period of tying (as_group_tie): even and odd layers apart. */
#define AS_GROUP_PERIOD 2
/** Largest period as_group_tie takes (larger ones are clamped). */
#define AS_GROUP_MAX_PERIOD 8

/** One class of isomorphic blocks. */
typedef struct as_group_class {
    char *family;    /**< "h" (automatic) or the regex */
    char *first;     /**< label of the representative block, "h.0" */
    char *last;      /**< label of the last block of the class, "h.23" */
    size_t nblocks;  /**< blocks of the class (>= 2) */
    size_t nodes;    /**< nodes per block */
    size_t sets;     /**< sets of variables the class keeps: min(period, nblocks) when tied
                          (blocks of one residue share one set), 0 when not tied */
    size_t *lead[AS_GROUP_MAX_PERIOD]; /**< [sets][nodes]: problem node j of each set's leader
                                            block, in residue order */
} as_group_class;

/** What as_group_tie found and tied. */
typedef struct as_group_result {
    size_t nclass;
    as_group_class *cls;
    size_t blocks;    /**< blocks found (tied or not) */
    size_t untied;    /**< blocks left apart: isomorphic to no other block of their family */
    size_t followers; /**< follow links set */
    int period;       /**< period asked of as_group_tie (0: blocks found, not tied) */
    size_t settled;   /**< classes as_group_settle made uniform (one set in the plan) */
    size_t loose;     /**< nodes of a block whose role not every block of the family has:
                           left out of the blocks (solved apart) */
} as_group_result;

/**
 * Find the blocks of G's problem P (built with MAP) and, when PERIOD >= 1,
 * tie the isomorphic ones with follow links in P: inside a class, the
 * block d layers after the first follows the first block of residue
 * d mod PERIOD (PERIOD 1: all blocks share one set of variables; 2: even
 * and odd layers keep one set each, which Megatron's column/row
 * alternation needs; docs/ilp.md "Repeated layers").  PERIOD 0 finds the
 * blocks without tying them.  REGEX NULL: automatic (classes of isomorphic
 * blocks per family; blocks that differ stay apart).  With a REGEX every
 * block it finds must be isomorphic to the first.  Errors (AS_EUSAGE): the
 * regex does not compile, has no capture group, matches no node name, or
 * two of its blocks are not isomorphic.
 */
int as_group_tie(const as_graph *g, const as_build_map *map, as_problem *p, const char *regex,
                 int period, as_group_result *res, as_err *err);

/**
 * Make CHOICE, a plan of the tied problem P, uniform where that costs
 * nothing: for each class with several sets of variables, every set takes
 * the choices of one of them (each tried) when the plan's objective does
 * not grow (relative 1e-9) and its peak stays within max(P's budget, the
 * plan's peak).  The period-PERIOD problem relaxes the period-1 one, so a
 * uniform plan that reaches its objective is a period-1 optimum.  Updates
 * CHOICE (followers included), *OBJECTIVE and *PEAK (either may be NULL)
 * and RES->settled; returns the number of classes made uniform.
 */
size_t as_group_settle(as_group_result *res, const as_problem *p, size_t *choice,
                       double *objective, double *peak);

void as_group_result_free(as_group_result *res); /* zeroed or filled RES */

#endif /* AS_GROUP_H */
