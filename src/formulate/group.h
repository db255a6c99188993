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

/** One class of tied blocks. */
typedef struct as_group_class {
    char *family;    /**< "h" (automatic) or the regex */
    char *first;     /**< label of the representative block, "h.0" */
    char *last;      /**< label of the last tied block, "h.23" */
    size_t nblocks;  /**< blocks tied together (>= 2) */
    size_t nodes;    /**< nodes per block */
} as_group_class;

/** What as_group_tie found and tied. */
typedef struct as_group_result {
    size_t nclass;
    as_group_class *cls;
    size_t blocks;    /**< blocks found (tied or not) */
    size_t untied;    /**< blocks left apart: isomorphic to no other block of their family */
    size_t followers; /**< follow links set */
    size_t loose;     /**< nodes of a block whose role not every block of the family has:
                           left out of the blocks (solved apart) */
} as_group_result;

/**
 * Find the blocks of G's problem P (built with MAP) and, when TIE, tie the
 * isomorphic ones with follow links in P.  REGEX NULL: automatic (classes
 * of isomorphic blocks per family; blocks that differ stay apart).  With a
 * REGEX every block it finds must be isomorphic to the first.  Errors
 * (AS_EUSAGE): the regex does not compile, has no capture group, matches
 * no node name, or two of its blocks are not isomorphic.
 */
int as_group_tie(const as_graph *g, const as_build_map *map, as_problem *p, const char *regex,
                 int tie, as_group_result *res, as_err *err);
void as_group_result_free(as_group_result *res); /* zeroed or filled RES */

#endif /* AS_GROUP_H */
