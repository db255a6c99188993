/* spec.h -- sharding specs: how one tensor is laid out over a device mesh.
 *
 * A spec says, for each mesh axis, what that axis does to the tensor: split
 * one tensor dim (AS_SPEC_R = replicated over the axis, else the dim), or
 * hold a pending reduction (AS_SPEC_P: every device along the axis holds a
 * partial result that a sum / max / min / mean would complete).  A dim split
 * over several axes is cut into the product of their sizes, major to minor
 * in mesh-axis order: on dp=2,tp=4 a dim split over (dp,tp) gives device
 * (d,t) block d*4 + t of 8.
 *
 * Text form (JAX-like, one entry per tensor dim, then the partial axes):
 *
 *     [None,tp]                   dim 1 split over tp, replicated over dp
 *     [(dp,tp),None]              dim 0 split over dp and tp (8 blocks)
 *     [None,None] partial(sum:tp) replicated values that still need a sum over tp
 *     []                          a scalar (replicated)
 *
 * Entries are None, an axis name, or a parenthesised axis list in mesh-axis
 * order; `partial(KIND:AXIS,...)` with KIND sum, max, min or mean follows
 * after a space.  as_spec_str prints exactly this; as_spec_parse also
 * accepts extra spaces.  A spec is valid for a shape only where every split
 * divides its dim (no ragged shards).
 *
 * as_spec is a small plain value (copy it, compare with as_spec_equal).
 */
#ifndef AS_SPEC_H
#define AS_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "../autoshard.h"
#include "../graph/graph.h"
#include "mesh.h"

#define AS_SPEC_R (-1) /* axis replicates the tensor */
#define AS_SPEC_P (-2) /* axis holds partial results (see partial[]) */
#define AS_SPEC_TEXT_MAX 160 /* longest text form, bytes with the NUL */

/* Pending reduction of a partial axis. */
typedef enum as_partial {
    AS_PARTIAL_NONE = 0,
    AS_PARTIAL_SUM,
    AS_PARTIAL_MAX,
    AS_PARTIAL_MIN,
    AS_PARTIAL_MEAN
} as_partial;

typedef struct as_spec {
    int8_t rank;                       /**< tensor rank */
    int8_t naxes;                      /**< mesh axes */
    int8_t axis[AS_MESH_MAX_AXES];     /**< per axis: dim split, AS_SPEC_R or AS_SPEC_P */
    uint8_t partial[AS_MESH_MAX_AXES]; /**< as_partial where axis[k] == AS_SPEC_P, else 0 */
} as_spec;

/** "sum", "max", "min", "mean" ("none" for AS_PARTIAL_NONE). */
const char *as_partial_name(as_partial p);

/* Construction and comparison. */
/** The replicated spec of a rank-RANK tensor on a mesh of NAXES axes. */
void as_spec_replicated(as_spec *s, int rank, int naxes);
int as_spec_equal(const as_spec *a, const as_spec *b);
/** 1 if no axis splits or holds partials. */
int as_spec_is_replicated(const as_spec *s);
/** 1 if some axis holds partial results. */
int as_spec_has_partial(const as_spec *s);
/** Shard count of tensor dim DIM: product of the sizes of the axes splitting it. */
int64_t as_spec_dim_parts(const as_spec *s, const as_mesh *m, int dim);
/** PARTS[d] = as_spec_dim_parts for every dim d < rank (the form cost.h takes). */
void as_spec_parts(const as_spec *s, const as_mesh *m, int64_t *parts);
/** Axes splitting DIM, in mesh order, into AXES (>= AS_MESH_MAX_AXES); returns the count. */
int as_spec_dim_axes(const as_spec *s, int dim, int *axes);

/* Shapes and sizes. */
/**
 * Check S against SHAPE on M: ranks agree, axis entries in range, every
 * split divides its dim.  AS_EUSAGE "spec '[...]' does not fit f32[6,4]:
 * dim 0 (6) is not divisible by 4" otherwise.
 */
int as_spec_check(const as_spec *s, const as_shape *shape, const as_mesh *m, as_err *err);
/** 1 if every split divides its dim (S's rank must match SHAPE's). */
int as_spec_fits(const as_spec *s, const as_shape *shape, const as_mesh *m);
/** The shape each device holds (exact: call only on fitting specs). */
void as_spec_local_shape(const as_spec *s, const as_shape *shape, const as_mesh *m,
                         as_shape *local);
/** Bytes each device holds: bytes of the local shape. */
double as_spec_local_bytes(const as_spec *s, const as_shape *shape, const as_mesh *m);

/* Text. */
/** Canonical text of S (see above) into BUF (>= AS_SPEC_TEXT_MAX bytes); returns BUF. */
const char *as_spec_str(const as_spec *s, const as_mesh *m, char *buf, size_t n);
/**
 * Parse TEXT for a tensor of rank RANK on M (RANK < 0: take the rank from
 * the text).  AS_EUSAGE with the position on malformed text, unknown axis
 * names, an axis used twice, an axis list out of mesh order, a wrong rank.
 */
int as_spec_parse(const char *text, const as_mesh *m, int rank, as_spec *out, as_err *err);

/**
 * ZeRO's sharding of a tensor laid out as S: the product of the sizes of
 * the mesh axes whose ROLE (AS_MESH_MAX_AXES entries, as_axis_role) is data
 * and over which S replicates the tensor (1 when ROLE is NULL or none).
 * ZeRO-1 keeps optimizer states 1/that per device, ZeRO-2 gradients too.
 */
int as_spec_zero_parts(const as_spec *s, const as_mesh *m, const uint8_t *role);
/**
 * The shard of PARTS of a local shape that ZeRO-3's update runs on: the
 * first dim PARTS divides is divided (SHAPE is left whole when none does, or
 * PARTS <= 1).  Returns 1 when it divided.  The ILP's cost of an optimizer op
 * and the simulator's both take it.
 */
int as_spec_zero_shard_shape(as_shape *shape, int parts);

#endif /* AS_SPEC_H */
