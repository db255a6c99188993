/* presets_internal.h -- the small builder the model generators share
 * (presets.c) and the per-family build functions (presets_*.c).
 *
 * The builder keeps the first error and turns every later call into a
 * no-op returning -1, so a generator reads as straight-line model code and
 * checks b->rc once at the end (the sticky-error style of stdio's ferror).
 * Names are formatted printf-style; the graph copies them.
 */
#ifndef AS_GRAPH_PRESETS_INTERNAL_H
#define AS_GRAPH_PRESETS_INTERNAL_H

#include "presets.h"

typedef struct as_pbuild {
    as_graph *g;
    as_err *err;
    int rc;                   /**< first error, AS_OK while none */
    const as_preset_cfg *cfg; /**< configuration being built */
    as_dtype dt;              /**< dtype of parameters and activations */
} as_pbuild;

/* Dims as "rank, array": as_preset_i_param(b, AS_DIMS(v, h), "wte"). */
#define AS_DIMS(...)                                                                               \
    (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}

/** Declare a parameter of dtype b->dt and shape DIM[0..RANK), named by printf format NAME. */
int32_t as_preset_i_param(as_pbuild *b, int rank, const int64_t *dim, const char *name, ...)
    __attribute__((format(printf, 4, 5)));
/** Declare a data input of dtype DT (batch dimension BATCH_DIM, -1 none). */
int32_t as_preset_i_input(as_pbuild *b, as_dtype dt, int batch_dim, int rank, const int64_t *dim,
                          const char *name);
/** Declare a constant of dtype b->dt. */
int32_t as_preset_i_const(as_pbuild *b, int rank, const int64_t *dim, const char *name);
/**
 * Append op OPTYPE on IN[0..NIN) with attributes, naming its first output
 * by the printf format NAME; returns that output's id (-1 after an error).
 */
int32_t as_preset_i_op(as_pbuild *b, const char *optype, const int32_t *in, int nin,
                       const as_attr *attr, int nattr, const char *name, ...)
    __attribute__((format(printf, 7, 8)));
/** One-input op without attributes. */
int32_t as_preset_i_op1(as_pbuild *b, const char *optype, int32_t x, const char *name);
/** Two-input op without attributes. */
int32_t as_preset_i_op2(as_pbuild *b, const char *optype, int32_t x, int32_t y,
                        const char *name);
/**
 * Dense layer SCOPE: X[..., n_in] x SCOPE.w[n_in, n_out] (+ SCOPE.b[n_out]);
 * the result is named SCOPE (the bare product SCOPE.mm when there is a bias).
 */
int32_t as_preset_i_linear(as_pbuild *b, const char *scope, int32_t x, int64_t n_in,
                           int64_t n_out, int bias);
/** Layer norm SCOPE over the last dim H with SCOPE.g and SCOPE.b. */
int32_t as_preset_i_layernorm(as_pbuild *b, const char *scope, int32_t x, int64_t h);
/** Shape of tensor ID (valid while no error). */
const as_shape *as_preset_i_shape(as_pbuild *b, int32_t id);

/* Family builders (presets_<family>.c). */
void as_preset_i_build_mlp(as_pbuild *b);
void as_preset_i_build_gpt(as_pbuild *b);
void as_preset_i_build_bert(as_pbuild *b);
void as_preset_i_build_t5(as_pbuild *b);
void as_preset_i_build_wresnet(as_pbuild *b);
void as_preset_i_build_gat(as_pbuild *b);

#endif /* AS_GRAPH_PRESETS_INTERNAL_H */
