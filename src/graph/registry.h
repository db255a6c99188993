/* registry.h -- the op registry: what each op type is and does.
 *
 * Per op type: arity, attribute schema, shape inference, FLOPs and bytes
 * moved, a reference CPU kernel in double precision (used by the graph
 * interpreter, the gradient checks and ShardCombine rule discovery), the
 * gradient rule used by autodiff, and flags the planner reads.
 *
 * Op families live in src/graph/ops_<family>.c; each exports one array of
 * as_op_def and its length, collected by registry.c.  Definitions are static
 * data: pointers to them are valid for the life of the process.
 *
 * Layout convention for kernels: dense row-major arrays of doubles, one per
 * input and output, sized by the shapes in the as_opinfo.  Integer and pred
 * tensors hold integral doubles.
 */
#ifndef AS_REGISTRY_H
#define AS_REGISTRY_H

#include "graph.h"

/* What an op sees: its type, input/output shapes and attributes. */
typedef struct as_opinfo {
    const struct as_op_def *def;
    int nin;
    const as_shape *in;
    int nout;
    const as_shape *out; /**< NULL while inferring */
    int nattr;
    const as_attr *attr;
} as_opinfo;

typedef struct as_gradctx as_gradctx; /* autodiff.h */

/**
 * Infer output shapes: fill OUT[0..*NOUT) (at most AS_MAX_OUTS).  Checks
 * input ranks, dims and dtypes, and attribute values; on mismatch returns
 * AS_EPARSE with a message naming the op type, e.g.
 * "matmul: inner dims differ: f32[8,16] x f32[32,4]".
 */
typedef int (*as_infer_fn)(const as_opinfo *info, as_shape *out, int *nout, as_err *err);
/** Floating-point operations of one execution (multiply-add = 2). */
typedef double (*as_flops_fn)(const as_opinfo *info);
/** Bytes moved from/to memory by one execution (NULL: sum of input and output bytes). */
typedef double (*as_bytes_fn)(const as_opinfo *info);
/** Reference kernel: compute OUT from IN in double precision. */
typedef void (*as_kernel_fn)(const as_opinfo *info, const double *const *in, double *const *out);
/**
 * Gradient rule.  Given the op and the gradient tensors of its outputs
 * (DOUT[k], -1 where an output has none), emit backward ops through C and
 * store the gradient tensor of each input in DIN[j] (-1 when the input is
 * not differentiable or as_grad_needs(c, j) is false).
 */
typedef int (*as_grad_fn)(as_gradctx *c, const as_op *op, const int32_t *dout, int32_t *din,
                          as_err *err);
/**
 * Valid integer range [*lo, *hi] of integer input J (ids, labels), for
 * random test inputs.  NULL: a small signed range.
 */
typedef void (*as_range_fn)(const as_opinfo *info, int j, int64_t *lo, int64_t *hi);

/* Flags. */
#define AS_OPF_ELEMENTWISE 0x0001u /* output[i] depends on input[i] only (with broadcasting) */
#define AS_OPF_FOLLOW 0x0002u      /* planner may merge it into its first operand's choice */
#define AS_OPF_LOSS 0x0004u        /* produces a scalar loss */
#define AS_OPF_OPTIMIZER 0x0008u   /* optimizer update */
#define AS_OPF_GRAD 0x0010u        /* exists for backward passes */
#define AS_OPF_OPAQUE 0x0020u      /* no kernel or rule: replicate only */
#define AS_OPF_COLLECTIVE 0x0040u  /* a collective already present in an imported graph */
#define AS_OPF_RESHAPE 0x0080u     /* sharding rule is analytic (reshape-like) */
#define AS_OPF_NOGRAD 0x0100u      /* output is not differentiable (integer, comparison) */
#define AS_OPF_VARIADIC 0x0200u    /* max_in ignored */

typedef struct as_op_def {
    const char *name;     /**< "matmul" */
    int min_in, max_in;   /**< arity */
    unsigned flags;       /**< AS_OPF_* */
    unsigned int_inputs;  /**< bit j set: input j holds integers (ids, labels) */
    /**
     * Attribute schema: space-separated "key:T" or "key:T=default", T one of
     * i (int), f (float), s (string), I (int list).  No default = required.
     * Example: "transpose_a:i=0 transpose_b:i=0".
     */
    const char *attrs;
    const char *doc; /**< one line: "C = A x B (batched, optional transposes)" */
    as_infer_fn infer;
    as_flops_fn flops;   /**< NULL: 0 */
    as_bytes_fn bytes;   /**< NULL: default */
    as_kernel_fn kernel; /**< NULL only for AS_OPF_OPAQUE */
    as_grad_fn grad;     /**< NULL: not differentiable (error if a gradient is needed) */
    as_range_fn irange;  /**< NULL: default */
} as_op_def;

/* Lookup. */
/** The definition named NAME (LEN bytes, or (size_t)-1 for strlen), or NULL. */
const as_op_def *as_registry_find(const char *name, size_t len);
/** Number of registered op types and the i-th (sorted by name). */
int as_registry_count(void);
const as_op_def *as_registry_get(int i);
/** Check every definition's schema once (unique names, parsable attrs); AS_EINTERNAL. */
int as_registry_selfcheck(as_err *err);

/**
 * Check attributes ATTR[0..N) against DEF's schema: unknown keys, wrong
 * kinds and missing required keys are AS_EPARSE.  On success *OUT/ *NOUT
 * (arena-owned) hold the attributes with defaults filled in and ints
 * converted to floats where the schema says f, in schema order.
 */
int as_registry_bind_attrs(const as_op_def *def, const as_attr *attr, int n, as_arena *arena,
                           as_attr **out, int *nout, as_err *err);

/* Evaluate helpers built on the table. */
/** Infer shapes for DEF on inputs IN with attributes (already bound). */
int as_op_infer(const as_op_def *def, const as_shape *in, int nin, const as_attr *attr, int nattr,
                as_shape *out, int *nout, as_err *err);
double as_op_flops(const as_opinfo *info);
double as_op_bytes(const as_opinfo *info);

/* An op of a graph seen as an as_opinfo (its shapes copied out of the graph). */
typedef struct as_opview {
    as_opinfo info;                 /**< what kernels, costs and rules take */
    as_shape *in, *out;             /**< info.in / info.out storage */
    as_shape inbuf[16], outbuf[16]; /**< used when the op has <= 16 inputs/outputs */
} as_opview;
/** Fill V with op OP of G (input and output shapes, attributes); free with as_opview_free. */
void as_opview_init(as_opview *v, const as_graph *g, const as_op *op);
void as_opview_free(as_opview *v);

/* Family tables (ops_FAMILY.c). */
extern const as_op_def as_ops_core[];
extern const int as_ops_core_count;
extern const as_op_def as_ops_elementwise[];
extern const int as_ops_elementwise_count;
extern const as_op_def as_ops_shape[];
extern const int as_ops_shape_count;
extern const as_op_def as_ops_nn[];
extern const int as_ops_nn_count;
extern const as_op_def as_ops_conv[];
extern const int as_ops_conv_count;
extern const as_op_def as_ops_optim[];
extern const int as_ops_optim_count;
extern const as_op_def as_ops_hlo[];
extern const int as_ops_hlo_count;

#endif /* AS_REGISTRY_H */
