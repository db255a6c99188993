/* strategy.h -- per-op sharding strategies on a mesh, their costs, and the
 * cost of resharding a tensor from one spec to another.
 *
 * A strategy of an op gives each mesh axis one rule of the op's rule set
 * (rules.h) or leaves the op replicated over it; axes given the same rule
 * split the same dims further (one dim over several axes).  It carries the
 * spec of every input and output, the compute time on local shapes, the
 * communication its combine functions imply and the per-device bytes of its
 * outputs.  An output left partial by a reduce rule comes in variants
 * (docs/strategies.md): keep the partial (the consumers' edges pay the
 * all-reduce / reduce-scatter), resolve it inside the op with an all-reduce
 * (output replicated over those axes, "+allreduce"), or with a
 * reduce-scatter along an output dim ("+reducescatter(D)").  Resolving in
 * the op charges the collective once, however many consumers read it.
 *
 * Declared tensors (inputs, parameters, states, constants) have one
 * strategy per spec in which every mesh axis replicates or splits one dim.
 *
 * Sets are interned in a context per (op type, attributes, shapes) -- or
 * (tensor kind, shape, memory factor) -- signature, so identical layers are
 * costed once (DistSim); resharding matrices are cached per (producer set,
 * output, consumer set, input).
 *
 * Ownership: an as_strat_ctx borrows its cost model (and the model's mesh)
 * and owns every set, strategy, spec, name and matrix it returns; they stay
 * valid until as_strat_ctx_free().  A context is not thread-safe.
 */
#ifndef AS_STRATEGY_H
#define AS_STRATEGY_H

#include <stddef.h>
#include <stdint.h>

#include "../autoshard.h"
#include "../graph/registry.h"
#include "cost.h"
#include "spec.h"

/* How the partial outputs of a strategy are resolved inside the op. */
#define AS_RESOLVE_NONE (-1)      /* no partial output, or kept partial */
#define AS_RESOLVE_ALLREDUCE (-2) /* all-reduced: replicated over the partial axes */
/* >= 0: reduce-scattered along that output dim over the partial axes */

typedef struct as_strategy {
    const char *name;              /**< "column(tp)", "row(tp)+allreduce", "rep", "[dp,None]" */
    const as_spec *in;             /**< [nin] spec each input must arrive in */
    const as_spec *out;            /**< [nout] spec of each output as it leaves the op */
    int8_t rule[AS_MESH_MAX_AXES]; /**< rule id per mesh axis, -1 = replicated (tensors: -1) */
    int resolve;                   /**< AS_RESOLVE_* or the reduce-scatter dim */
    double compute;                /**< seconds on local shapes (alpa: 0; params: penalty) */
    double comm;                   /**< seconds of the collectives the strategy implies */
    double mem;                    /**< bytes per device of its outputs (params: see above) */
} as_strategy;

typedef struct as_strategy_set {
    int id;                  /**< dense index in its context */
    const char *key;         /**< signature it is cached under */
    int nin, nout;           /**< arity (declared tensors: 0 inputs, 1 output) */
    as_shape *out_shape;     /**< [nout] global output shapes */
    int n;                   /**< number of strategies, >= 1 (index 0 is fully replicated) */
    const as_strategy *s;    /**< [n] */
} as_strategy_set;

typedef struct as_strat_ctx as_strat_ctx;

/* Context. */
/** A context for cost model CM (borrowed; its mesh too). */
as_strat_ctx *as_strat_ctx_new(const as_cost_model *cm);

/* Which strategies are enumerated (--strategy-space). */
typedef enum as_strat_space {
    AS_SPACE_DEFAULT = 0, /* a dim may split over several axes; all-to-all resharding */
    AS_SPACE_ALPA         /* Alpa's: one axis per dim; no all-to-all on meshes of 2+ axes */
} as_strat_space;
/**
 * Alpa's INFINITY_COST (auto_sharding.py): in Alpa's space, the entries of a
 * resharding matrix into an op of one input where the specs differ.  Alpa
 * makes such an op (elementwise, reduce, broadcast, reshape, transpose)
 * follow its operand: one strategy per operand strategy, with the same
 * layout (FollowInsCostVector), so nothing is resharded on that edge.  The
 * ILP drops choices costing this much (AS_ILP_FORBIDDEN_COST).
 */
#define AS_STRAT_INFINITY_COST 1e13
/** Set the strategy space for every later enumeration (process-wide; not thread-safe). */
void as_strat_set_space(as_strat_space space);
as_strat_space as_strat_get_space(void);
void as_strat_ctx_free(as_strat_ctx *ctx); /* NULL is a no-op */
const as_cost_model *as_strat_ctx_model(const as_strat_ctx *ctx);
/** Counters: sets built, set lookups answered from the cache, matrices built / reused. */
typedef struct as_strat_stats {
    long sets, set_hits, matrices, matrix_hits;
    double matrix_entries; /**< entries of the distinct matrices built */
} as_strat_stats;
void as_strat_ctx_stats(const as_strat_ctx *ctx, as_strat_stats *st);

/* Enumeration. */
/**
 * The strategies of the op instance INFO (def, input shapes, bound
 * attributes; info->out may be NULL).  Rules come from as_rules_get.
 * *OUT is owned by CTX.  Errors: those of as_rules_get.
 */
int as_strat_op(as_strat_ctx *ctx, const as_opinfo *info, const as_strategy_set **out,
                as_err *err);
/**
 * The strategies of a declared tensor of SHAPE and KIND: every fitting
 * spec.  MEM_FACTOR multiplies the local bytes (a parameter: 2 + its number
 * of optimizer states, for the value, its gradient and its states);
 * parameters pay the model's replicated penalty (as compute) in proportion
 * to the axes they are replicated over; in Alpa's space parameters, states
 * and inputs pay all of it when replicated over every axis, else nothing.
 */
const as_strategy_set *as_strat_tensor(as_strat_ctx *ctx, const as_shape *shape,
                                       as_tensor_kind kind, double mem_factor);
/**
 * as_strat_tensor for a data input whose dim BATCH_DIM is the batch (-1:
 * none).  In Alpa's space a declared tensor splits over one mesh axis at
 * most, and on a mesh whose axes 0 and 1 both have more than one device an
 * input's batch dim is split over axis 0 (Alpa's force_batch_dim_to_mesh_dim).
 */
const as_strategy_set *as_strat_tensor_batch(as_strat_ctx *ctx, const as_shape *shape,
                                             as_tensor_kind kind, double mem_factor,
                                             int batch_dim);
/**
 * Batch dims of SET's outputs (OUT_BATCH[nout], -1 for none) from those of
 * its inputs (IN_BATCH[nin], -1 for none): output dim d is the batch when
 * some strategy splits an input's batch dim and d over the same mesh axis
 * without resolving a partial sum into d (a reduce-scatter of a contraction
 * over the batch is no batch; Alpa's InstructionBatchDimMap, propagated
 * forward).
 */
void as_strat_batch_dims(const as_strategy_set *set, const int *in_batch, int *out_batch);
/**
 * 1 when Alpa would force batch dims onto mesh axis 0: Alpa's space on a mesh
 * whose axes 0 and 1 both have more than one device (auto_sharding.py sets
 * force_batch_dim_to_mesh_dim = 0 there; FilterStrategy then keeps, for the
 * entry parameters and the dots that carry a batch dim, the strategies that
 * split it over axis 0).
 */
int as_strat_alpa_batch_forced(const as_strat_ctx *ctx);
/** Index of the strategy of SET whose name is NAME, or -1. */
int as_strat_find(const as_strategy_set *set, const char *name);
/**
 * Index of the strategy of SET that keeps the partial outputs strategy S
 * resolves itself ("row(tp)+allreduce" -> "row(tp)"), or -1 when S resolves
 * nothing: the layout its outputs have before the all-reduce or
 * reduce-scatter.
 */
int as_strat_partial_variant(const as_strategy_set *set, int s);
/** Does strategy S of SET split a dim of some input or output over more than one mesh axis? */
int as_strat_multi_axis(const as_strategy_set *set, int s);

/* Resharding (reshard.c). */
/** One collective (or free local slice) of a resharding. */
typedef struct as_reshard_step {
    int kind;      /**< as_coll, or -1 for a local slice (free) */
    int axis;      /**< mesh axis */
    double bytes;  /**< bytes in cost.h's convention for KIND */
    double cost;   /**< seconds */
} as_reshard_step;

#define AS_RESHARD_MAX_STEPS (4 * AS_MESH_MAX_AXES)

/**
 * The steps that turn a tensor of global SHAPE laid out as FROM into TO,
 * per mesh axis (DESIGN.md "Cost models"): sharded -> replicated all-gather,
 * replicated -> sharded slice (free), dim i -> dim j all-to-all, partial ->
 * replicated all-reduce, partial -> sharded reduce-scatter; a change the
 * per-axis moves cannot express (axes reordered, a dim moving to a more
 * major axis) gathers the dim and slices again.  Free slices that shrink
 * the tensor are done first, all-reduces and reduce-scatters next, then
 * gathers and all-to-alls (minor axes first).  Writes at most
 * AS_RESHARD_MAX_STEPS steps into STEPS (may be NULL); returns the count.
 * *COST (may be NULL) gets the total seconds.
 */
int as_reshard_steps(const as_cost_model *cm, const as_shape *shape, const as_spec *from,
                     const as_spec *to, as_reshard_step *steps, double *cost);
/**
 * Seconds of collective KIND of BYTES (cost.h's convention) over mesh axis
 * AXIS as the strategy layer charges it: as_cost_collective, except under
 * a model with alpa_resharding (reduce-scatter = all-reduce + 0.001,
 * all-to-all on the whole tensor).
 */
double as_strat_coll_cost(const as_cost_model *cm, as_coll kind, double bytes, int axis);
/**
 * 1 when resharding FROM into TO communicates (some step of
 * as_reshard_steps is a collective over a mesh axis of more than one
 * device), so that the result is a new buffer; 0 when it is the same
 * buffer or a local slice of it.  The simulator's lowering and the ILP's
 * memory rows both count such a buffer (docs/sim.md "Memory").
 */
int as_reshard_copies(const as_cost_model *cm, const as_shape *shape, const as_spec *from,
                      const as_spec *to);
/** Total seconds of as_reshard_steps (0 when FROM equals TO). */
double as_reshard_cost(const as_cost_model *cm, const as_shape *shape, const as_spec *from,
                       const as_spec *to);
/**
 * ZeRO-3's gather of a trained parameter laid out as SPEC (ROLE: the axis
 * roles, AS_MESH_MAX_AXES entries): the device holds a 1/as_spec_zero_parts
 * shard and, before each use, all-gathers it over every data axis the layout
 * replicates (minor axes first) into a copy of the whole layout.  STEPS (may
 * be NULL; at most AS_MESH_MAX_AXES) get the all-gathers, their bytes the
 * size after the step (cost.h's convention), their cost as_strat_coll_cost;
 * returns the count (0: nothing to gather); *COST (may be NULL) the total.
 * The ILP (formulate/build.c) and the lowering (sim/lower.c) both use it.
 */
int as_zero_gather_steps(const as_cost_model *cm, const as_shape *shape, const as_spec *spec,
                         const uint8_t *role, as_reshard_step *steps, double *cost);
/**
 * ZeRO-3 reduce-scatters a parameter gradient where a replicated copy would
 * all-reduce it over a data axis (the update runs on the shard): the seconds
 * that saves on resharding FROM into TO, the all-reduce steps over data axes
 * of as_reshard_steps less a reduce-scatter of the same bytes divided by the
 * sizes of the data axes reduce-scattered before it.
 */
double as_zero_reduce_saving(const as_cost_model *cm, const as_shape *shape, const as_spec *from,
                             const as_spec *to, const uint8_t *role);
/**
 * The k_u x k_v matrix (row-major) of resharding output OUT_IDX of U's
 * strategies into input IN_IDX of V's strategies, cached in CTX.
 */
const double *as_strat_reshard_matrix(as_strat_ctx *ctx, const as_strategy_set *u, int out_idx,
                                      const as_strategy_set *v, int in_idx);

#endif /* AS_STRATEGY_H */
