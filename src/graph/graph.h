/* graph.h -- the computation graph: tensors, operators, attributes.
 *
 * A graph is a list of ops in program order.  Each op reads tensors and
 * produces new ones; a tensor is produced once (by an op, or declared as a
 * graph input, parameter, optimizer state or constant).  Ops are appended
 * with as_graph_add_op(), which checks arity and attributes against the op
 * registry (registry.h) and infers the output shapes, so a graph that exists
 * is always well-typed and in a valid topological order.
 *
 * Ownership: every op, tensor, attribute and string lives in the graph's
 * arena.  Pointers returned by as_graph_* accessors are owned by the graph
 * and valid until as_graph_free() (appending ops may move the op and tensor
 * arrays: do not keep as_op / as_tensor pointers across as_graph_add_*;
 * keep ids).
 */
#ifndef AS_GRAPH_H
#define AS_GRAPH_H

#include <stdint.h>

#include "../autoshard.h"

/* Element types. */
typedef enum as_dtype {
    AS_DT_F32 = 0,
    AS_DT_F16,
    AS_DT_BF16,
    AS_DT_F64,
    AS_DT_I8,
    AS_DT_I16,
    AS_DT_I32,
    AS_DT_I64,
    AS_DT_U8,
    AS_DT_U16,
    AS_DT_U32,
    AS_DT_U64,
    AS_DT_PRED,
    AS_DT_COUNT
} as_dtype;

/** Canonical name ("f32", "bf16", "i64", "pred"). */
const char *as_dtype_name(as_dtype t);
/** Parse a dtype name of LEN bytes; accepts HLO spellings (s32 = i32). Returns 0 if unknown. */
int as_dtype_parse(const char *s, size_t len, as_dtype *out);
/** Bytes per element (pred: 1). */
int as_dtype_size(as_dtype t);
int as_dtype_is_float(as_dtype t);

/*
 * Training precision (DESIGN.md "Training step"): the element type of
 * parameters and activations in compute, and whether the optimizer keeps
 * fp32 master weights, fp32 moments and an fp32 gradient accumulator
 * (the *-mixed modes of PyTorch AMP and Megatron).
 */
typedef enum as_precision {
    AS_PREC_FP32 = 0,
    AS_PREC_BF16,
    AS_PREC_FP16,
    AS_PREC_BF16_MIXED,
    AS_PREC_FP16_MIXED,
    AS_PREC_COUNT
} as_precision;

/** "fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed". */
const char *as_precision_name(as_precision p);
/** Parse a precision name of LEN bytes; returns 0 if unknown. */
int as_precision_parse(const char *s, size_t len, as_precision *out);
/** Element type of compute (f32, bf16 or f16). */
as_dtype as_precision_dtype(as_precision p);
/** 1 for the mixed modes (fp32 master weights, moments and gradient accumulation). */
int as_precision_mixed(as_precision p);
/** The precision with compute type DT and mixed flag MIXED (f32 is never mixed). */
as_precision as_precision_of(as_dtype dt, int mixed);

/* Shapes. */
#define AS_MAX_RANK 8
#define AS_MAX_OUTS 64 /* most outputs one op may have (split parts) */

typedef struct as_shape {
    as_dtype dtype;
    int rank;                 /**< 0 = scalar */
    int64_t dim[AS_MAX_RANK]; /**< each >= 1 (HLO may give 0) */
} as_shape;

/** Number of elements (1 for a scalar).  Valid shapes never overflow. */
int64_t as_shape_numel(const as_shape *s);
/** Bytes of the whole tensor. */
int64_t as_shape_bytes(const as_shape *s);
/** Check dims are >= MINDIM and numel * elem size fits in 2^62 (AS_EPARSE otherwise). */
int as_shape_validate(const as_shape *s, int64_t mindim, as_err *err);
/** Same dtype, rank and dims. */
int as_shape_equal(const as_shape *a, const as_shape *b);
/** Write "f32[8,512]" into BUF; returns BUF. */
char *as_shape_str(const as_shape *s, char *buf, size_t n);

/* Attributes: key=value pairs on ops. */
typedef enum as_attr_kind {
    AS_ATTR_INT = 0, /* 3, -1 */
    AS_ATTR_FLOAT,   /* 0.1, 1e-5 */
    AS_ATTR_STR,     /* an identifier or "quoted string" */
    AS_ATTR_INTS     /* [0,2,1] (possibly empty) */
} as_attr_kind;

typedef struct as_attr {
    const char *key;
    as_attr_kind kind;
    int64_t i;        /**< AS_ATTR_INT */
    double f;         /**< AS_ATTR_FLOAT (also set for INT) */
    const char *s;    /**< AS_ATTR_STR */
    int n;            /**< AS_ATTR_INTS: count */
    const int64_t *v; /**< AS_ATTR_INTS: values */
} as_attr;

/* Literals for building attribute arrays. */
#define AS_ATTR_I(k, x) ((as_attr){.key = (k), .kind = AS_ATTR_INT, .i = (x), .f = (double)(x)})
#define AS_ATTR_F(k, x) ((as_attr){.key = (k), .kind = AS_ATTR_FLOAT, .f = (x)})
#define AS_ATTR_S(k, x) ((as_attr){.key = (k), .kind = AS_ATTR_STR, .s = (x)})
#define AS_ATTR_V(k, cnt, arr) ((as_attr){.key = (k), .kind = AS_ATTR_INTS, .n = (cnt), .v = (arr)})

/** Find attribute KEY among N, or NULL. */
const as_attr *as_attr_find(const as_attr *a, int n, const char *key);
int64_t as_attr_int(const as_attr *a, int n, const char *key, int64_t dflt);
double as_attr_float(const as_attr *a, int n, const char *key, double dflt);
const char *as_attr_str(const as_attr *a, int n, const char *key, const char *dflt);
/** Int list: returns its length and sets *v, or -1 if absent. */
int as_attr_ints(const as_attr *a, int n, const char *key, const int64_t **v);

/* Tensors. */
typedef enum as_tensor_kind {
    AS_TK_ACT = 0, /* produced by an op (activation, gradient, update) */
    AS_TK_INPUT,   /* data input (one batch) */
    AS_TK_PARAM,   /* trainable parameter, resident */
    AS_TK_STATE,   /* optimizer state of a parameter, resident */
    AS_TK_CONST    /* constant (not trained), resident */
} as_tensor_kind;

#define AS_TF_OUTPUT 0x1u /* a graph output */
#define AS_TF_GRAD 0x2u   /* gradient of a parameter (the optimizer's input) */
#define AS_TF_RECV 0x4u   /* INPUT of a pipeline stage graph: received from another stage */

typedef struct as_tensor {
    int32_t id;          /**< dense index */
    const char *name;    /**< unique in the graph */
    as_shape shape;      /**< global (unsharded) shape */
    as_tensor_kind kind; /**< role */
    int batch_dim;       /**< INPUT: the batch dimension, -1 if none */
    int32_t producer;    /**< op id, -1 for declared tensors */
    int32_t of;          /**< STATE: the parameter it belongs to; AS_TF_GRAD: that param; else -1 */
    int32_t update;      /**< PARAM/STATE: tensor holding the new value, -1 if none */
    int32_t update_of;   /**< inverse of update: the PARAM/STATE this tensor updates, -1 */
    unsigned flags;      /**< AS_TF_* */
    int line;            /**< source line, 0 if generated */
} as_tensor;

/* Ops. */
struct as_op_def; /* registry.h */

#define AS_OF_BACKWARD 0x1u  /* emitted by autodiff for the backward pass */
#define AS_OF_OPTIMIZER 0x2u /* optimizer update */

typedef struct as_op {
    int32_t id;                  /**< dense index = position in program order */
    const char *name;            /**< = name of its first output */
    const struct as_op_def *def; /**< its type in the registry */
    int nin;
    const int32_t *in; /**< tensor ids */
    int nout;
    const int32_t *out; /**< tensor ids */
    int nattr;
    const as_attr *attr;
    unsigned flags; /**< AS_OF_* */
    int line;       /**< source line, 0 if generated */
} as_op;

/** The pass OP runs in: 0 forward, 1 backward (recomputed forward ops too), 2 optimizer. */
static inline int
as_op_phase(const as_op *op)
{
    return (op->flags & AS_OF_OPTIMIZER) ? 2 : (op->flags & AS_OF_BACKWARD) ? 1 : 0;
}

typedef struct as_graph as_graph;

/* Training configuration (the `train` directive). */
typedef struct as_train_opts {
    const char *optimizer; /**< "adam", "sgd", "momentum" */
    double lr;             /**< learning rate */
    double beta1, beta2;   /**< adam */
    double eps;            /**< adam */
    double momentum;       /**< momentum */
    int mixed;             /**< fp32 master weights, moments and gradient accumulator for
                                16-bit parameters (bf16-mixed / fp16-mixed); 0 = none */
} as_train_opts;
void as_train_opts_init(as_train_opts *o);

/* Create and free. */
as_graph *as_graph_new(const char *name);
void as_graph_free(as_graph *g);

/* Building. */
/**
 * Declare a graph-level tensor (input, parameter, state or constant).
 * BATCH_DIM is the batch dimension of an input (-1 for none).  Fails with
 * AS_EPARSE on a duplicate name or an invalid shape.
 */
int as_graph_add_tensor(as_graph *g, const char *name, const as_shape *shape, as_tensor_kind kind,
                        int batch_dim, int32_t *id, as_err *err);
/**
 * Append an op of type OPTYPE reading tensors IN[0..NIN) with attributes
 * ATTR[0..NATTR) (copied).  Output tensors are named OUTNAMES[0..NOUTNAMES);
 * a NULL name (or NOUTNAMES smaller than the op's output count) gets a fresh
 * name "OUT0.k" / "t.N".  Arity, attributes and shapes are checked
 * (AS_EPARSE, message without file position: the caller prefixes it).
 * On success *OP_ID (may be NULL) is the new op's id.
 */
int as_graph_add_op(as_graph *g, const char *optype, const char *const *outnames, int noutnames,
                    const int32_t *in, int nin, const as_attr *attr, int nattr, int32_t *op_id,
                    as_err *err);
/** Mark tensor ID as a graph output. */
void as_graph_mark_output(as_graph *g, int32_t id);
/** Record that NEW_ID holds the updated value of PARAM/STATE tensor OLD_ID (alias). */
int as_graph_set_update(as_graph *g, int32_t old_id, int32_t new_id, as_err *err);
/** Record that STATE tensor ID belongs to parameter PARAM_ID. */
int as_graph_set_state_of(as_graph *g, int32_t id, int32_t param_id, as_err *err);
/** Set flags on tensor ID (AS_TF_*), and its `of` (-1 to leave unchanged). */
void as_graph_tensor_flag(as_graph *g, int32_t id, unsigned flags, int32_t of);
/** Set op flags and source line of op ID. */
void as_graph_op_meta(as_graph *g, int32_t id, unsigned flags, int line);
/** Set the source line of tensor ID. */
void as_graph_tensor_line(as_graph *g, int32_t id, int line);
/** Ask for a training step (used by readers for the `train` directive). */
void as_graph_set_train(as_graph *g, const as_train_opts *o);
/** The pending training request, or NULL. */
const as_train_opts *as_graph_train(const as_graph *g);
/** A fresh tensor name "PREFIX" or "PREFIX.N" not used yet (arena-owned). */
const char *as_graph_fresh_name(as_graph *g, const char *prefix);
/** Intern a string in the graph's arena. */
const char *as_graph_strdup(as_graph *g, const char *s);

/**
 * The graph of one of K microbatches (graph/microbatch.c): same names and
 * ids, tensor t's dim MBDIM[t] (>= 0) divided by K.  AS_EUSAGE (one line)
 * when an op does not infer on those shapes.
 */
int as_graph_microbatch(const as_graph *g, int k, const int *mbdim, as_graph **out, as_err *err);

/**
 * The layer key "SEG.N" of an op or tensor NAME: its first "SEG.N." with SEG non-empty and
 * N digits.  Returns the key's length (0 if NAME has none) and its offset in *START.
 * Recomputation and pipeline stages name layers by it.
 */
size_t as_graph_layer_key(const char *name, size_t *start);

/* Activation recomputation (graph/recompute.c). */
typedef enum as_recompute {
    AS_RECOMPUTE_NONE = 0,
    AS_RECOMPUTE_FULL,     /* per layer: keep its inputs, recompute its forward for the backward */
    AS_RECOMPUTE_SELECTIVE, /* per layer: recompute the attention core ([.., S, S] outputs) */
    AS_RECOMPUTE_AUTO       /* `solve` chooses the layers to recompute fully (a list) */
} as_recompute;
const char *as_recompute_name(as_recompute m);
/** Parse "none", "full", "selective", "auto"; 0 if unknown. */
int as_recompute_parse(const char *s, as_recompute *out);
/**
 * The training step G with MODE's recomputation: backward ops of each layer
 * read copies ("rc.NAME", backward ops) of the forward activations they
 * need, recomputed just before the layer's first backward op.  LAYERS
 * (comma-separated layer keys, NULL = every layer) restricts it to those
 * layers; AS_RECOMPUTE_AUTO recomputes them fully.  *NLAYERS
 * (may be NULL) gets the number of layers recomputed.  AS_EUSAGE (one
 * line) when it cannot apply: no layers, nothing the backward reads.
 */
int as_graph_recompute(const as_graph *g, as_recompute mode, const char *layers, as_graph **out,
                       int *nlayers, as_err *err);
/**
 * The layer keys ("SEG.N") of G's forward ops in order of their first op,
 * comma-separated (malloc'd); *N gets their number.  RC (may be NULL): only
 * the layers that have a recomputed op ("rc.NAME") in RC, a rewrite of G.
 */
char *as_graph_layer_list(const as_graph *g, const as_graph *rc, int *n);

/* Queries. */
const char *as_graph_name(const as_graph *g);
int32_t as_graph_nops(const as_graph *g);
const as_op *as_graph_op(const as_graph *g, int32_t i);
int32_t as_graph_ntensors(const as_graph *g);
const as_tensor *as_graph_tensor(const as_graph *g, int32_t i);
/** Tensor id by name, or -1. */
int32_t as_graph_find(const as_graph *g, const char *name);
int32_t as_graph_noutputs(const as_graph *g);
int32_t as_graph_output(const as_graph *g, int32_t i);
/* What an optimizer-state tensor (AS_TK_STATE) holds, from the op that updates it. */
typedef enum as_state_role {
    AS_STATE_OPTIMIZER = 0, /* moments, momentum buffers */
    AS_STATE_MASTER,        /* fp32 master weight (updated by an *_update rule) */
    AS_STATE_GRAD           /* fp32 gradient accumulator (updated by grad_accum) */
} as_state_role;
as_state_role as_graph_state_role(const as_graph *g, int32_t id);
/** Training precision of G: its parameters' float type, mixed when it has master weights. */
as_precision as_graph_precision(const as_graph *g);
/** Number of ops that read tensor ID. */
int32_t as_graph_nusers(const as_graph *g, int32_t id);
/** Bytes held by the graph's arena and arrays (for benchmarks). */
size_t as_graph_mem_bytes(const as_graph *g);
/** Fill SHAPES[0..op->nin) with the input shapes of OP. */
void as_graph_op_in_shapes(const as_graph *g, const as_op *op, as_shape *shapes);

#endif /* AS_GRAPH_H */
