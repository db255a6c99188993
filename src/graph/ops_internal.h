/* ops_internal.h -- helpers shared by the op family files (ops_*.c) and the
 * graph module: attribute access on an as_opinfo, axis normalisation,
 * broadcasting, strides and index iteration for reference kernels.
 * Internal to src/graph; not a public API.
 */
#ifndef AS_OPS_INTERNAL_H
#define AS_OPS_INTERNAL_H

#include "registry.h"

/* Attributes of the op being inferred/run. */
#define OPI_INT(info, key, d) as_attr_int((info)->attr, (info)->nattr, (key), (d))
#define OPI_FLOAT(info, key, d) as_attr_float((info)->attr, (info)->nattr, (key), (d))
#define OPI_STR(info, key, d) as_attr_str((info)->attr, (info)->nattr, (key), (d))
#define OPI_INTS(info, key, vp) as_attr_ints((info)->attr, (info)->nattr, (key), (vp))

/** Normalise AXIS (may be negative) for RANK into *OUT; 0 if out of range. */
int as_graph_i_axis(int64_t axis, int rank, int *out);
/**
 * Numpy broadcasting of A and B into *OUT (dtype of A).  Returns AS_EPARSE
 * "OPNAME: cannot broadcast f32[2,3] with f32[4]" on mismatch.
 */
int as_graph_i_broadcast(const char *opname, const as_shape *a, const as_shape *b, as_shape *out,
                         as_err *err);
/** Row-major strides of S into STRIDES[0..rank). */
void as_graph_i_strides(const as_shape *s, int64_t *strides);
/**
 * Strides of operand S viewed as broadcast to OUT (numpy alignment on the
 * right; broadcast dims get stride 0).  STRIDES has OUT->rank entries.
 */
void as_graph_i_bcast_strides(const as_shape *s, const as_shape *out, int64_t *strides);
/** Advance multi-index IDX over SHAPE (row-major); returns 0 after the last. */
int as_graph_i_next(int64_t *idx, const as_shape *shape);
/** Format an inference error "OPNAME: " + message (AS_EPARSE). */
int as_graph_i_shape_err(as_err *err, const as_opinfo *info, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Check that input J has a float dtype (AS_EPARSE otherwise). */
int as_graph_i_need_float(const as_opinfo *info, int j, as_err *err);
/** Check that input J has an integer dtype (AS_EPARSE otherwise). */
int as_graph_i_need_int(const as_opinfo *info, int j, as_err *err);
/** Check that inputs I and J have the same dtype. */
int as_graph_i_same_dtype(const as_opinfo *info, int i, int j, as_err *err);

/* Simple cost helpers. */
/** FLOPs = k * numel(output 0). */
double as_graph_i_flops_per_out(const as_opinfo *info, double k);
/** Sum of all input and output bytes. */
double as_graph_i_bytes_default(const as_opinfo *info);

#endif /* AS_OPS_INTERNAL_H */
