/* graph_internal.h -- the graph's private layout, shared by the files of
 * src/graph (builder, readers, writer, checks, autodiff).  Not a public API.
 */
#ifndef AS_GRAPH_INTERNAL_H
#define AS_GRAPH_INTERNAL_H

#include <assert.h>

#include "graph.h"
#include "registry.h"

struct as_graph {
    as_arena *arena;           /**< names, attributes, op in/out arrays */
    const char *name;          /**< graph name */
    AS_VEC(as_tensor) tensors; /**< by id */
    AS_VEC(as_op) ops;         /**< program order */
    AS_VEC(int32_t) outputs;   /**< graph outputs, in declaration order */
    AS_VEC(int32_t) nusers;    /**< per tensor: number of ops reading it */
    as_strmap names;           /**< tensor name -> id */
    int has_train;             /**< a `train` directive is pending */
    as_train_opts train;       /**< its options */
    int64_t fresh;             /**< counter for fresh names */
};

#define assert_tensor(g, id) assert((id) >= 0 && (size_t)(id) < (g)->tensors.n)

/** Forget the pending `train` directive (after autodiff applied it). */
void as_graph_i_clear_train(as_graph *g);

#endif /* AS_GRAPH_INTERNAL_H */
