/* reader_onnx_internal.h -- what reader_onnx.c (loading, checks, constants,
 * parameter roles, the driver) and reader_onnx_ops.c (one mapping per ONNX
 * op type) share.  Not a public API.
 */
#ifndef AS_READER_ONNX_INTERNAL_H
#define AS_READER_ONNX_INTERNAL_H

#include "graph.h"
#include "onnx.pb-c.h"
#include "registry.h"

/* A constant value known at import time (folded Shape chains, Constant nodes, small initializers). */
typedef struct ox_const {
    as_shape shape;
    int64_t n;   /**< elements */
    int64_t *i;  /**< integer and pred values (NULL for floats) */
    double *f;   /**< float values (NULL for integers) */
} ox_const;

/* What a value name stands for. */
typedef struct ox_val {
    const char *name;       /**< ONNX name */
    int32_t tid;            /**< graph tensor, -1 if none yet */
    ox_const *c;            /**< its value when constant, else NULL */
    const Onnx__TensorProto *init; /**< initializer of that name, or NULL */
    int input;              /**< index in graph.input, -1 */
    int role;               /**< OX_ROLE_* for graph inputs and initializers */
    int producer;           /**< node index, -1 */
    int nuse;               /**< nodes (and graph outputs) reading it */
    int user;               /**< the first node reading it, -1 */
    int tr;                 /**< TID holds this value with its last two dims swapped */
    int has_decl;           /**< DECL holds a declared type (value_info, output) */
    as_shape decl;          /**< declared type; dims < 0 are symbolic */
} ox_val;

enum { OX_ROLE_NONE = 0, OX_ROLE_INPUT, OX_ROLE_PARAM, OX_ROLE_CONST };

typedef struct ox_count {
    const char *name;
    int n;
} ox_count;

/* Importer state. */
typedef struct ox {
    const char *path;
    as_err *err;
    as_graph *g;
    as_arena *arena;          /**< constants and scratch that live until the import ends */
    Onnx__ModelProto *model;
    Onnx__GraphProto *graph;
    int64_t opset;            /**< default-domain opset */
    AS_VEC(ox_val) vals;
    as_strmap names;          /**< ONNX value name -> index in vals */
    int *order;               /**< nodes in topological order */
    int *vin, *vout;          /**< per node: first index into vin_idx/vout_idx */
    char *skip;               /**< per node: consumed by a fused pattern */
    AS_VEC(ox_count) opaque;  /**< unsupported op types kept as opaque */
    int cur;                  /**< node being emitted */
    AS_VEC(int32_t) t2v;      /**< graph tensor id -> value index of a declared input, -1 */
    int redo;                 /**< a role changed while emitting: import again */
} ox;

/* reader_onnx.c */
int ox_err(ox *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Error at node N: "PATH: node 'NAME' (OpType): MSG". */
int ox_nerr(ox *o, const Onnx__NodeProto *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Value index of NAME, or -1. */
int ox_find(const ox *o, const char *name);
/** Tensor id of input J of node N (materialising a constant as a const tensor). */
int ox_in(ox *o, const Onnx__NodeProto *n, int j, int32_t *tid);
/** The node reading output K of N if it is its only reader (not a graph output), else -1. */
int ox_single_user(ox *o, const Onnx__NodeProto *n, int k);
/** Number of present inputs: trailing "" inputs dropped. */
int ox_nin(const Onnx__NodeProto *n);
/** Input J is present (not "" and in range). */
int ox_has_in(const Onnx__NodeProto *n, int j);
/** Constant value of input J, or NULL. */
const ox_const *ox_cin(ox *o, const Onnx__NodeProto *n, int j);
/** Shape of input J (graph tensor or constant); 0 if absent. */
int ox_in_shape(ox *o, const Onnx__NodeProto *n, int j, as_shape *s);
/** A sanitised .asg name for ONNX name S (not yet used in the graph). */
const char *ox_name(ox *o, const char *s);
/**
 * Append registry op OPTYPE for node N.  OUTNAME NULL: a fresh name after
 * the node's first output ("NAME.k").  Output ids go to OUTS (may be NULL).
 */
int ox_op(ox *o, const Onnx__NodeProto *n, const char *optype, const char *outname,
          const int32_t *in, int nin, const as_attr *attr, int nattr, int32_t *outs, int *nout);
/** Bind output K of node N to tensor TID (checks its declared type). */
int ox_bind(ox *o, const Onnx__NodeProto *n, int k, int32_t tid);
/** Bind output K of node N to constant C (arena-owned). */
int ox_bind_const(ox *o, const Onnx__NodeProto *n, int k, ox_const *c);
/** A scalar constant tensor (f32 etc.) as a const graph tensor. */
int ox_scalar(ox *o, as_dtype dt, double v, int32_t *tid);
/** A new constant in the arena. */
ox_const *ox_const_new(ox *o, const as_shape *s);
/** Count node N's op type as opaque and emit it with the declared/guessed output shapes. */
int ox_opaque(ox *o, const Onnx__NodeProto *n, double flops);
/** Shape of tensor TID. */
const as_shape *ox_shape(ox *o, int32_t tid);

/* Attributes. */
const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name);
int64_t ox_attr_i(const Onnx__NodeProto *n, const char *name, int64_t dflt);
double ox_attr_f(const Onnx__NodeProto *n, const char *name, double dflt);
/** Int list attribute into V (at most MAX); count, or -1 if absent. */
int ox_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *v, int max);
/** String attribute into BUF; 0 if absent. */
int ox_attr_s(const Onnx__NodeProto *n, const char *name, char *buf, size_t cap);

/** Shape of TensorProto T into *S (WHAT names it in errors). */
int ox_tensor_shape(ox *o, const Onnx__TensorProto *t, const char *what, as_shape *s);
/** Values of T (shape S) as a constant in *OUT; NULL without error when it has no data or is too big. */
int ox_tensor_const(ox *o, const Onnx__TensorProto *t, const as_shape *s, ox_const **out);
/**
 * A binary op reads A and B: a data input reached through view ops only
 * (reshape, transpose, slice, cast) that has lower rank than a computed
 * activation on the other side is a bias or position table: make it a
 * parameter (the import runs again with the new role).
 */
void ox_bias_role(ox *o, int32_t a, int32_t b);
/** ONNX TensorProto.DataType -> dtype; 0 if unsupported. */
int ox_dtype(int32_t onnx_type, as_dtype *dt);

/* reader_onnx_ops.c */
/** Fold node N when every input it needs is constant; *DONE = 1 if folded. */
int ox_fold(ox *o, const Onnx__NodeProto *n, int *done);
/** Emit node N (index NI) as registry ops. */
int ox_emit(ox *o, int ni, const Onnx__NodeProto *n);

#endif /* AS_READER_ONNX_INTERNAL_H */
