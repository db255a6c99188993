/* cost.h -- cost models as plugins: compute, collectives, memory.
 *
 * A cost model answers three questions for the strategy, ILP and simulator
 * code: how long an op runs on its local (sharded) shapes, how long a
 * collective of S bytes takes over a mesh axis (or any group of n devices on
 * a link class), and how many bytes a tensor occupies per device when its
 * dims are split.  Implementations (cost_roofline.c, cost_alpa.c,
 * cost_distir.c) are const as_cost_ops tables in SCIP's plugin style; the
 * driver (cost.c) binds one to a hardware profile and a mesh, applies
 * per-model parameters ("alpha=1,1") and routes the calls.
 *
 * Units: time in seconds (alpa: Alpa's dimensionless cost units), sizes in
 * bytes.  Byte conventions for collectives (DESIGN.md "Cost models"):
 * all-reduce S = the buffer every device holds; all-gather and
 * reduce-scatter S = the full (gathered) size; all-to-all S = the per-device
 * size; send S = the bytes sent.
 *
 * Ownership: an as_cost_model copies the profile and borrows the mesh, which
 * must outlive it.  A model is read-only after creation and safe to share
 * between threads.
 */
#ifndef AS_COST_H
#define AS_COST_H

#include <stdio.h>

#include "../autoshard.h"
#include "../graph/registry.h"
#include "hw.h"
#include "mesh.h"

/* Collective kinds. */
typedef enum as_coll {
    AS_COLL_ALL_REDUCE = 0,
    AS_COLL_ALL_GATHER,
    AS_COLL_REDUCE_SCATTER,
    AS_COLL_ALL_TO_ALL,
    AS_COLL_SEND,
    AS_COLL_COUNT
} as_coll;

/** "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "send". */
const char *as_coll_name(as_coll k);
/** Parse a collective name (as printed by as_coll_name); 0 if unknown. */
int as_coll_parse(const char *s, as_coll *out);

/* A group of devices a collective runs over. */
typedef struct as_comm_group {
    int n;        /**< devices taking part (>= 1) */
    as_link link; /**< AS_LINK_INTRA or AS_LINK_INTER */
    int axis;     /**< mesh axis it runs along, -1 if it is not one axis */
} as_comm_group;

/* Plugin interface. */
typedef struct as_cost_data as_cost_data; /* completed privately in each cost_*.c */
typedef struct as_cost_model as_cost_model;

/** Create private data for HW and MESH (both outlive it); defaults for every param. */
#define AS_DECL_COST_NEW(x) int x(const as_hw *hw, const as_mesh *mesh, as_cost_data **data, \
                                  as_err *err)
#define AS_DECL_COST_FREE(x) void x(as_cost_data *data)
/** Set parameter KEY to VALUE; AS_EUSAGE for an unknown key or a bad value. */
#define AS_DECL_COST_PARAM(x) int x(as_cost_data *data, const char *key, const char *value, \
                                    as_err *err)
/** Seconds for one execution of the op described by INFO (local shapes). */
#define AS_DECL_COST_COMPUTE(x) double x(const as_cost_data *data, const as_opinfo *info)
/** Seconds for collective KIND of BYTES over group G. */
#define AS_DECL_COST_COLL(x) double x(const as_cost_data *data, as_coll kind, double bytes, \
                                      const as_comm_group *g)
/** Bytes per device of a tensor of BYTES split into NTILES tiles with LOCAL bytes per shard. */
#define AS_DECL_COST_MEMORY(x) double x(const as_cost_data *data, double bytes, double local, \
                                        int64_t ntiles)
/** Extra cost of keeping a parameter replicated (0 for most models). */
#define AS_DECL_COST_PENALTY(x) double x(const as_cost_data *data)

typedef struct as_cost_ops {
    const char *name;                        /**< "roofline", "alpa", "distir" */
    const char *desc;                        /**< one line for --help */
    const char *params;                      /**< "alpha=A0,A1 beta=B0,B1" for --help, or "" */
    AS_DECL_COST_NEW((*new_data));           /**< required */
    AS_DECL_COST_FREE((*free_data));         /**< may be NULL: free() */
    AS_DECL_COST_PARAM((*set_param));        /**< may be NULL: the model has no params */
    AS_DECL_COST_COMPUTE((*compute));        /**< required */
    AS_DECL_COST_COLL((*collective));        /**< required */
    AS_DECL_COST_MEMORY((*memory));          /**< may be NULL: LOCAL (the largest shard) */
    AS_DECL_COST_PENALTY((*replicated_penalty)); /**< may be NULL: 0 */
    /**
     * 1: a contraction computed redundantly over a mesh axis of more than one
     * device pays an all-reduce of its local input bytes over that axis (Alpa's
     * DotCost; its compute model is free, so nothing else prices the lost
     * parallelism).  0 (most models): compute time already does.
     */
    int recompute_allreduce;
    /**
     * 1: the strategy layer reshards as Alpa does by default: no
     * reduce-scatter (a partial sum is all-reduced, then sliced: costed as
     * all-reduce + 0.001, and ops get no "+reducescatter" variants), and an
     * all-to-all is costed on the whole tensor (Alpa's ReshardingCost).
     */
    int alpa_resharding;
} as_cost_ops;

extern const as_cost_ops as_cost_roofline, as_cost_alpa, as_cost_distir;

/* Registry. */
/**
 * The model called NAME; NULL with AS_EUSAGE "unknown cost model 'x'
 * (known: alpa, distir, roofline)" otherwise.
 */
const as_cost_ops *as_cost_model_find(const char *name, as_err *err);
/** One line per model: name, description, parameters. */
void as_cost_model_list(FILE *fp);
/** Number of models and the i-th (registry order; 0 is the default, roofline). */
int as_cost_model_count(void);
const as_cost_ops *as_cost_model_get(int i);

/* Create and free. */
/**
 * Bind model OPS to a copy of HW and to MESH (borrowed).  Checks that the
 * mesh fits the profile's nodes (as_mesh_check_nodes, AS_EUSAGE) and
 * classifies every axis as intra- or inter-node.  PARAMS[0..NPARAMS) are
 * "key=value" strings applied in order with set_param (AS_EUSAGE messages
 * name the model: "cost model 'alpa': ...").
 */
int as_cost_model_new(const as_cost_ops *ops, const as_hw *hw, const as_mesh *mesh,
                      const char *const *params, size_t nparams, as_cost_model **out,
                      as_err *err);
void as_cost_model_free(as_cost_model *cm); /* NULL is a no-op */
/** Set one parameter after creation (same as one "key=value" of as_cost_model_new). */
int as_cost_model_set_param(as_cost_model *cm, const char *key, const char *value, as_err *err);

/* Accessors. */
const as_cost_ops *as_cost_model_ops(const as_cost_model *cm);
const as_hw *as_cost_model_hw(const as_cost_model *cm);
const as_mesh *as_cost_model_mesh(const as_cost_model *cm);
/** Link class of mesh axis AXIS on this model's profile. */
as_link as_cost_axis_link(const as_cost_model *cm, int axis);

/* Costs. */
/** Time of one execution of the op INFO describes, on its local shapes (as_op_flops/bytes). */
double as_cost_compute(const as_cost_model *cm, const as_opinfo *info);
/**
 * Time of collective KIND of BYTES over mesh axis AXIS (n = axis size, the
 * axis's link class).  A size-1 axis costs 0 for every kind but send.
 */
double as_cost_collective(const as_cost_model *cm, as_coll kind, double bytes, int axis);
/** Time of collective KIND of BYTES over an arbitrary group G. */
double as_cost_collective_group(const as_cost_model *cm, as_coll kind, double bytes,
                                const as_comm_group *g);
/**
 * Bytes per device of a tensor of global shape S whose dim d is split into
 * PARTS[d] shards (PARTS NULL = replicated).  roofline and distir charge the
 * largest shard (ceil(dim / parts) per dim); alpa charges bytes / tiles.
 */
double as_cost_memory(const as_cost_model *cm, const as_shape *s, const int64_t *parts);
/** Bytes of the largest shard of S split by PARTS (NULL = the whole tensor). */
double as_cost_shard_bytes(const as_shape *s, const int64_t *parts);
/**
 * Cost a strategy pays for leaving a parameter replicated: alpa's
 * round(sum over axes of all-reduce(1 byte, axis)), 0 for the others.
 */
double as_cost_replicated_penalty(const as_cost_model *cm);

/* Helpers shared by the model files. */
/**
 * 1 if INFO's op is a contraction that runs on tensor cores / GEMM units
 * (matmul, conv2d and their gradient ops, dot_general, conv_general).
 */
int as_cost_is_contraction(const as_opinfo *info);
/** Element type an op computes in: its first output's, else its first input's, else f32. */
as_dtype as_cost_op_dtype(const as_opinfo *info);
/**
 * Parse a decimal number for parameter KEY: AS_EUSAGE "bad number 'x' for
 * 'KEY'", or "'KEY' must be > 0" (POSITIVE) / ">= 0" (otherwise).
 */
int as_cost_parse_double(const char *key, const char *value, int positive, double *out,
                         as_err *err);
/**
 * Parse a comma-separated list of numbers >= 0 ("1,0.1") into OUT[0..MAX);
 * *N gets the count.  AS_EUSAGE on a bad number or more than MAX values.
 */
int as_cost_parse_list(const char *key, const char *value, double *out, int max, int *n,
                       as_err *err);

#endif /* AS_COST_H */
