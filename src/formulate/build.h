/* build.h -- the choice problem of a graph on a mesh: graph + mesh + cost
 * model -> cost graph (problem.h), and a solved assignment -> plan (plan.h).
 *
 * Nodes: one per declared tensor (inputs, parameters, optimizer states,
 * constants; in tensor order), then one per op (program order).  Node
 * names are tensor names and op names.  Edges: one per (producer, consumer)
 * pair, the resharding matrices of every input the consumer reads from that
 * producer summed.  Memory: at every liveness point of program order that
 * no other point contains (docs/strategies.md), the live activations and
 * data inputs with their per-strategy bytes, plus every parameter (value,
 * gradient, optimizer states) and constant.  Alias rows tie each optimizer
 * state to its parameter's spec, and each parameter or state to the spec of
 * the op output that holds its updated value.  No follow links: the exact
 * reductions of problem.h are left to the solver layer.
 *
 * Ownership: the map owns the strategy context (every set and spec it
 * returns) and borrows the graph and the cost model, which must outlive it.
 * A problem built with a map borrows the context's resharding matrices
 * (one per pair of strategy sets, as_problem_add_edge_ref): read it only
 * while the map lives (freeing the two in either order is fine).
 */
#ifndef AS_BUILD_H
#define AS_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "autoshard.h"
#include "formulate/plan.h"
#include "formulate/problem.h"
#include "graph/graph.h"
#include "spmd/cost.h"
#include "spmd/hw.h"
#include "spmd/strategy.h"

typedef struct as_build_opts {
    double memory; /**< budget, bytes per device; 0 = none; < 0 = the profile's memory */
    int liveness;  /**< add liveness points (default 1); 0 skips them (no peak either) */
    double deadline; /**< as_now() time by which building must end, else AS_ESOLVER "time
                          limit"; 0 = none */
    int microbatches; /**< K > 1: G is one of K microbatches of a gradient-accumulation step
                           (graph.h as_graph_microbatch): forward and backward costs and the
                           reshards into them count K times, the optimizer's and the deferred
                           gradient synchronisation once, data inputs K times in memory */
    int inflight;     /**< M > 1: G is one pipeline stage holding M microbatches in flight
                           (formulate/pipeline.h): every activation a forward op leaves for
                           the backward (read after the last forward op) counts M - 1 more
                           times at every liveness point (the earlier microbatches' copies) */
    const char *roles; /**< axis roles, `--role` text ("dp=data,tp=tensor"; NULL = all auto,
                            spmd/mesh.h as_mesh_parse_roles): on a data axis only batch dims
                            split and declared tensors other than data inputs are replicated;
                            on a tensor axis no batch dim splits.  Strategies a role forbids
                            cost AS_STRAT_INFINITY_COST (the ILP drops them) */
    int zero;          /**< ZeRO stage 0..3 over the data axes: 1 keeps each parameter's
                            optimizer states (master weights included) 1/D per device, 2 its
                            gradient too, 3 the parameter too, all-gathered before each
                            forward or backward op that reads it (D = the data axes' devices
                            it is replicated over) */
} as_build_opts;

void as_build_opts_init(as_build_opts *o);

typedef struct as_build_map as_build_map;

/** Sizes of a built problem, for reports and benchmarks. */
typedef struct as_build_stats {
    size_t nodes, edges, live_points, live_entries, aliases;
    size_t live_segs, live_seg_entries; /**< liveness segments (entries shared by points) */
    size_t points_dropped;     /**< liveness points contained in another */
    double strategies;         /**< sum of k over nodes */
    double matrix_entries;     /**< sum of k_u * k_v over edges */
    as_strat_stats strat;      /**< cache counters */
} as_build_stats;

/* Build. */
/**
 * Build the choice problem of G on MESH under cost model CM (whose mesh
 * must be MESH) into *OUT, with *MAP (may be NULL) relating nodes to graph
 * ops and tensors.  Errors: AS_EUSAGE when CM is bound to another mesh;
 * rule discovery errors (AS_EPARSE) prefixed with the op name.
 */
int as_problem_from_graph(const as_graph *g, const as_mesh *mesh, const as_cost_model *cm,
                          const as_build_opts *o, as_problem **out, as_build_map **map,
                          as_err *err);
void as_build_map_free(as_build_map *map); /* NULL is a no-op */
void as_build_map_stats(const as_build_map *map, as_build_stats *st);

/**
 * Communication buffers of a known plan in the memory rows: for every
 * tensor that the plan of CHOICE reshards with a collective
 * (as_reshard_copies) into a layout some ops need, a copy lives from the
 * first of those ops to the last (the lowering makes it once and keeps it
 * for all of them).  Each liveness point inside such a span is added again
 * with, per copy, an entry on the first consumer's node: the copy's bytes
 * for every strategy of that node that needs a layout the producer's
 * current one does not give, 0 for the others.  Solving again with these
 * rows is a step of an iterated best response: exact for the plan's
 * neighbourhood, not globally (docs/ilp.md "Memory").  *ADDED (may be
 * NULL) gets the number of points added.  Past DEADLINE (as_now(), 0 =
 * none) it stops with AS_ESOLVER ("time limit"): the points added by then
 * stay in P (each a valid row of its own), *ADDED counts them.
 */
int as_build_add_copies(as_build_map *map, as_problem *p, const size_t *choice, double deadline,
                        size_t *added, as_err *err);

/* Map queries. */
/** Node of op OP. */
size_t as_build_map_op_node(const as_build_map *map, int32_t op);
/** Node deciding tensor T's layout: its producer's, or its own for a declared tensor. */
size_t as_build_map_tensor_node(const as_build_map *map, int32_t t);
/** Graph op of NODE, or -1 (a declared tensor's node). */
int32_t as_build_map_node_op(const as_build_map *map, size_t node);
/** Declared tensor of NODE, or -1 (an op's node). */
int32_t as_build_map_node_tensor(const as_build_map *map, size_t node);
/** Role of each mesh axis (AS_MESH_MAX_AXES entries, as_axis_role) and the ZeRO stage. */
const uint8_t *as_build_map_roles(const as_build_map *map, int *zero);
/** Strategy set of NODE (owned by the map). */
const as_strategy_set *as_build_map_node_set(const as_build_map *map, size_t node);
/** Spec of tensor T when every node V takes strategy CHOICE[V]. */
const as_spec *as_build_map_tensor_spec(const as_build_map *map, int32_t t,
                                        const size_t *choice);

/* Plans. */
/** Where a plan came from (strings borrowed; NULL = ""). */
typedef struct as_plan_source {
    const char *solver, *status;
    double objective, bound; /**< bound -HUGE_VAL when unknown */
    double peak;             /**< < 0 unknown */
} as_plan_source;

/**
 * The plan of CHOICE (one strategy index per node of MAP's problem): per
 * op its strategy, per tensor its spec.  Mesh, hardware and cost model come
 * from the map's cost model.
 */
int as_plan_from_choice(const as_build_map *map, const size_t *choice, const as_plan_source *src,
                        as_shard_plan **out, as_err *err);

/* Distinct layouts for k-best (as_solve_opts.distinct). */
/**
 * Two plans of MAP's problem are one layout when a permutation of
 * interchangeable mesh axes (same size, link class and role) maps one onto
 * the other (every tensor's spec), or when they cost the same (1e-9
 * relative): what differs between them costs nothing (a zero-cost tie, such
 * as the labels' layout, or the axes swapped).  A set remembers the layouts
 * kept.
 */
typedef struct as_layout_set as_layout_set;
as_layout_set *as_layout_set_new(const as_build_map *map); /* MAP borrowed */
void as_layout_set_free(as_layout_set *ls);                 /* NULL is a no-op */
/** as_solve_opts.distinct for UD = an as_layout_set. */
int as_layout_distinct(void *ud, const size_t *choice, double objective);

/* Everything a command needs to solve a graph. */
/** Where a graph problem comes from (strings borrowed). */
typedef struct as_graph_setup {
    const char *mesh;           /**< mesh text, "2x4" / "dp=2,tp=4" (required) */
    const char *hw;             /**< profile name or file, NULL = "a100-dgx" */
    const char *cost;           /**< cost model name, NULL = "roofline" */
    const char *const *params;  /**< cost-model "key=value" parameters */
    size_t nparams;
    as_build_opts build;        /**< memory budget (< 0: the profile's), liveness */
    const char *group;          /**< repeated layers by this PCRE2 regex (capture = layer);
                                     NULL = found from the names (formulate/group.h) */
    int tie;                    /**< tie isomorphic blocks (follow links); 0 = apart */
    int tie_period;             /**< period of tying (formulate/group.h); 0 = AS_GROUP_PERIOD */
} as_graph_setup;

/** A graph with its mesh, profile, cost model, problem and map (all owned). */
typedef struct as_graph_problem {
    as_graph *g;
    as_mesh *mesh;
    as_hw hw;
    as_cost_model *cm;
    as_problem *p;
    as_build_map *map;
    double build_s; /**< seconds spent building the problem */
    struct as_group_result *groups; /**< blocks found and tied (tie or group set), or NULL */
} as_graph_problem;

/**
 * Parse the mesh, load the profile, bind the cost model and build the
 * problem of G, tying repeated layers when S->tie (or checking S->group) (taken over: freed with GP, also on error) into GP.
 * Errors: AS_EUSAGE for a bad mesh / cost model / parameter or --group regex, AS_EIO or
 * AS_EPARSE for a bad profile file, those of as_problem_from_graph.
 */
int as_graph_problem_init(as_graph_problem *gp, as_graph *g, const as_graph_setup *s,
                          as_err *err);
void as_graph_problem_free(as_graph_problem *gp); /* zeroed or initialised GP */

#endif /* AS_BUILD_H */
