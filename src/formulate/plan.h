/* plan.h -- a sharding plan: per tensor its spec, per op its strategy, and
 * where the plan came from (mesh, hardware, cost model, solver, status,
 * objective, bound); JSON (jansson) write and read; JAX PartitionSpec and
 * PyTorch DTensor placement text.
 *
 * The solver layer has its own as_plan (a choice vector per node); this is
 * the user-facing plan in graph terms, hence as_shard_plan.  A plan owns an
 * arena (all strings) and a copy of its mesh; as_shard_plan_free releases
 * everything.  JSON layout: docs/strategies.md ("Plan files").
 */
#ifndef AS_PLAN_H
#define AS_PLAN_H

#include <stdio.h>

#include "autoshard.h"
#include "graph/graph.h"
#include "spmd/mesh.h"
#include "spmd/spec.h"
#include "spmd/strategy.h"

typedef struct as_plan_tensor {
    const char *name;    /**< tensor name */
    as_tensor_kind kind; /**< role in the graph */
    as_shape shape;      /**< global shape */
    as_spec spec;        /**< layout chosen */
} as_plan_tensor;

typedef struct as_plan_op {
    const char *name;     /**< op name */
    const char *type;     /**< op type ("matmul") */
    const char *strategy; /**< strategy name ("column(tp)") */
    int index;            /**< index in the solver's strategy set (a hint; -1 unknown) */
} as_plan_op;

typedef struct as_shard_plan {
    const char *graph;      /**< graph name */
    const char *hw;         /**< hardware profile name */
    const char *hw_file;    /**< profile file the plan was costed with, "" = the built-in `hw` */
    const char *cost_model; /**< cost model name */
    const char *solver;     /**< solver name ("" if none) */
    const char *status;     /**< "optimal", "feasible", ... */
    double objective;       /**< seconds (alpa: cost units) */
    double bound;           /**< best bound, -HUGE_VAL when unknown (JSON null) */
    double peak;            /**< bytes per device at the worst liveness point, < 0 unknown */
    as_mesh *mesh;          /**< owned copy */
    size_t ntensors, nops;
    as_plan_tensor *tensors; /**< [ntensors], graph order */
    as_plan_op *ops;         /**< [nops], program order */
    as_arena *arena;         /**< owns strings and arrays */
    size_t cap_tensors, cap_ops;
    /* The step it was solved for (JSON "pipeline", optional; docs/strategies.md): */
    int pipeline;            /**< P stages of the plan's mesh each; 0 = not recorded */
    int microbatches;        /**< K; 0 = not recorded */
    const char *schedule;    /**< "1f1b" / "gpipe"; "" = not recorded */
    const char *recompute;   /**< "none" / "full" / "selective" / "auto"; "" = not recorded */
    const char *recompute_layers; /**< "auto": the layers recomputed fully, comma-separated */
    int *stage_layers;       /**< [pipeline] layers per stage (arena), NULL = not recorded */
    double *stage_peak;      /**< [pipeline] peak per device of each stage (arena), or NULL */
    /* Axis roles and ZeRO (JSON "roles", "zero", optional; docs/strategies.md): */
    uint8_t role[AS_MESH_MAX_AXES]; /**< as_axis_role per axis of the mesh (auto if absent) */
    int zero;                /**< ZeRO stage over the data axes, 0..2 */
} as_shard_plan;

/* Create and fill. */
/** An empty plan on the mesh MESH_SPEC (parsed; AS_EUSAGE if malformed). */
int as_shard_plan_new(const char *mesh_spec, as_shard_plan **out, as_err *err);
void as_shard_plan_free(as_shard_plan *p); /* NULL is a no-op */
/** Copy S into the plan's arena (NULL gives ""). */
const char *as_shard_plan_strdup(as_shard_plan *p, const char *s);
/** Append a tensor (NAME copied); SPEC must fit SHAPE on the plan's mesh. */
int as_shard_plan_add_tensor(as_shard_plan *p, const char *name, as_tensor_kind kind,
                             const as_shape *shape, const as_spec *spec, as_err *err);
/** Append an op (strings copied). */
void as_shard_plan_add_op(as_shard_plan *p, const char *name, const char *type,
                          const char *strategy, int index);
/**
 * Record the step the plan was solved for: P stages (of LAYERS[P] layers
 * each, NULL = not recorded; PEAKS[P] bytes per device, NULL = unknown), K
 * microbatches, SCHEDULE and RECOMPUTE names (NULL = "").
 */
void as_shard_plan_set_step(as_shard_plan *p, int np, int k, const char *schedule,
                            const char *recompute, const int *layers, const double *peaks);
/** The tensor called NAME, or NULL. */
const as_plan_tensor *as_shard_plan_tensor(const as_shard_plan *p, const char *name);
/** The op called NAME, or NULL. */
const as_plan_op *as_shard_plan_op(const as_shard_plan *p, const char *name);
/**
 * Index of OP's strategy in SET, found by name: strategy lists differ
 * between cost models and strategy spaces, so OP->index is used only when
 * the strategy there has the plan's name.  -1 when SET has no such name.
 */
int as_plan_op_strategy(const as_plan_op *op, const as_strategy_set *set);

/* JSON. */
/** The plan as a malloc'ed JSON text (stable key order, ends with a newline). */
char *as_shard_plan_dumps(const as_shard_plan *p);
/** Write the plan as JSON to PATH atomically ("-" or NULL = stdout). */
int as_shard_plan_write(const as_shard_plan *p, const char *path, as_err *err);
/** Parse plan JSON TEXT (NAME used in messages: AS_EPARSE "NAME:LINE:COL: ..." / "NAME: ..."). */
int as_shard_plan_parse(const char *text, size_t len, const char *name, as_shard_plan **out,
                        as_err *err);
/** Read a plan file ("-" = stdin). */
int as_shard_plan_read(const char *path, as_shard_plan **out, as_err *err);
/**
 * Read a plan file or the JSON array of plans `solve --top K -o` writes:
 * *OUT (owned, each as_shard_plan_free, then free) and *N (>= 1).
 */
int as_shard_plan_read_list(const char *path, as_shard_plan ***out, size_t *n, as_err *err);

/* Framework text. */
/**
 * Print one line per parameter and data input: FORMAT "jax" gives
 * `w1: PartitionSpec(None, 'tp')`, "dtensor" gives `w1: [Replicate(),
 * Shard(1)]` (one placement per mesh axis; Partial() for pending sums).
 * AS_EUSAGE for another FORMAT.
 */
int as_shard_plan_emit(const as_shard_plan *p, const char *format, FILE *fp, as_err *err);

#endif /* AS_PLAN_H */
