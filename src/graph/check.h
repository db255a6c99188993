/* check.h -- graph analyses built on igraph: DAG check (naming the ops on a
 * cycle), topological order, tensor liveness, peak activation memory, the
 * longest path, and the summary statistics `autoshard inspect` prints.
 *
 * The analyses view a graph as a bipartite igraph: vertex i < nops is op i,
 * vertex nops + t is tensor t; edges run tensor -> reading op and op ->
 * produced tensor.  Arrays handed back are owned by the caller.
 */
#ifndef AS_GRAPH_CHECK_H
#define AS_GRAPH_CHECK_H

#include <igraph.h>

#include "graph.h"

/* igraph setup. */
/**
 * Install a non-aborting igraph error handler (once per process; safe to
 * call from every entry point).  igraph failures then surface through
 * AS_IGRAPH as AS_EINTERNAL with igraph's reason.
 */
void as_igraph_setup(void);
/** igraph's reason for the last failure in this thread ("" if none). */
const char *as_igraph_reason(void);
#define AS_IGRAPH(err, expr)                                                                       \
    ((expr) == IGRAPH_SUCCESS ? AS_OK                                                              \
                              : as_errf((err), AS_EINTERNAL, "igraph: %s (%s:%d)",                \
                                        as_igraph_reason(), __FILE__, __LINE__))

/**
 * Find a cycle of directed graph G: VERTICES holds v0 v1 ... vk with edges
 * v0->v1->...->vk->v0, v0 the smallest vertex id on any cycle.  Sets *FOUND
 * to 0 (VERTICES empty) when G is a DAG.
 */
int as_igraph_find_cycle(const igraph_t *g, igraph_vector_int_t *vertices, int *found,
                         as_err *err);

/* Checks. */
/**
 * Check that G is a DAG whose ops read only tensors defined before them and
 * whose outputs exist (AS_EPARSE, "cycle: a -> b -> a" names the ops).  Ops
 * whose results nobody reads and that are not outputs or updates are
 * reported in one warning line.
 */
int as_graph_check(const as_graph *g, as_err *err);
/** Op ids of G in a topological order (igraph); ORDER has as_graph_nops(g) entries. */
int as_graph_topo_order(const as_graph *g, int32_t *order, as_err *err);
/**
 * Liveness in program order, per tensor t: DEF[t] the producing op (-1 for
 * declared tensors) and LAST_USE[t] the last op reading it (-1 if none;
 * as_graph_nops(g) for graph outputs, which live to the end of the step).
 * Both arrays have as_graph_ntensors(g) entries.
 */
int as_graph_liveness(const as_graph *g, int32_t *def, int32_t *last_use, as_err *err);
/** FLOPs of one execution of op OP (as_op_flops on its shapes and attributes). */
double as_graph_op_flops(const as_graph *g, int32_t op);

/* Statistics. */
typedef struct as_op_count {
    const char *type; /**< op type name (static registry string) */
    int64_t count;
} as_op_count;

typedef struct as_graph_stats {
    int64_t nops, ntensors;
    as_op_count *by_type;          /**< sorted by count (descending), then name */
    int nby_type;
    int64_t params;                /**< parameter elements */
    int64_t param_bytes;           /**< AS_TK_PARAM */
    int64_t grad_bytes;            /**< tensors flagged AS_TF_GRAD + fp32 gradient accumulators */
    int64_t master_bytes;          /**< fp32 master weights (AS_STATE_MASTER) */
    int64_t state_bytes;           /**< other AS_TK_STATE (optimizer moments) */
    int64_t const_bytes;           /**< AS_TK_CONST */
    int64_t input_bytes;           /**< AS_TK_INPUT (one batch) */
    double flops;                  /**< sum of as_op_flops over all ops (one step) */
    int64_t peak_activation_bytes; /**< op outputs + data inputs live at once (max) */
    int32_t peak_op;               /**< op at which the peak is reached (-1: no ops) */
    int64_t longest_path_ops;      /**< ops on the longest dependency chain */
    double longest_path_flops;     /**< FLOPs on the most expensive dependency chain */
    int training;                  /**< has optimizer updates */
    as_precision precision;        /**< as_graph_precision */
    double tokens;                 /**< tokens per step (see as_graph_stats_compute), 0 if no input */
} as_graph_stats;

/**
 * Fill *ST for G.  Activation memory sweeps program order: an op's outputs
 * are allocated when it runs and freed after their last use, data inputs are
 * live from the start; parameters, constants, optimizer states (resident)
 * and update results (written in place) are not activations.  Tokens: the
 * element count of the largest integer-typed input, else the batch input's
 * dims without its trailing feature dim (at most the first two).
 */
int as_graph_stats_compute(const as_graph *g, as_graph_stats *st, as_err *err);
void as_graph_stats_free(as_graph_stats *st);

#endif /* AS_GRAPH_CHECK_H */
