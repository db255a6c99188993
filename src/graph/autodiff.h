/* autodiff.h -- reverse-mode differentiation and optimizer updates, and the
 * reference interpreter that evaluates a graph with the registry's kernels.
 *
 * as_autodiff() turns a forward graph whose first output is a scalar loss
 * into a training step: backward ops are appended in reverse program order
 * (each op's gradient rule, registry.h), gradients of tensors read by several
 * ops are accumulated with `add`, and every parameter gets its optimizer
 * update (tensors named "grad.P", "P.new", "adam_m.P" ...).
 */
#ifndef AS_AUTODIFF_H
#define AS_AUTODIFF_H

#include "graph.h"
#include "registry.h"

/** Append the backward pass and optimizer updates described by O to G. */
int as_autodiff(as_graph *g, const as_train_opts *o, as_err *err);

/**
 * Reverse-mode core: given tensors YS[0..N) and their cotangents DYS (tensors
 * of the same shapes already in G), append backward ops for every op that
 * lies between a float parameter/input and a Y, in reverse program order.
 * GRAD_OF (length = as_graph_ntensors(g) on entry) receives, per tensor, its
 * gradient tensor id or -1.  Ops appended get AS_OF_BACKWARD.
 */
int as_grad_backward(as_graph *g, int n, const int32_t *ys, const int32_t *dys, int32_t *grad_of,
                     as_err *err);

/* For gradient rules (registry.h as_grad_fn). */
/** The graph being extended. */
as_graph *as_grad_graph(as_gradctx *c);
/** Does input J of the current op need a gradient? */
int as_grad_needs(const as_gradctx *c, int j);
/**
 * Emit one backward op of type OPTYPE on IN[0..NIN) with attributes and
 * return its first output's id in *OUT (named after the op being
 * differentiated).  Outputs beyond the first are at *OUT + k.
 */
int as_grad_emit(as_gradctx *c, const char *optype, const int32_t *in, int nin,
                 const as_attr *attr, int nattr, int32_t *out, as_err *err);
/**
 * Reduce gradient G (of a broadcast result) to SHAPE, the shape of the
 * operand that was broadcast (numpy rules): sums over broadcast dims and
 * reshapes; returns G itself when shapes already match.
 */
int as_grad_unbroadcast(as_gradctx *c, int32_t g, const as_shape *shape, int32_t *out, as_err *err);

/* Reference interpreter. */
/**
 * Evaluate every op of G in program order with the reference kernels.
 * VALUES[t] is a malloc'ed array of numel(t) doubles for every declared
 * tensor on entry (inputs, params, states, consts); on success the produced
 * tensors are filled in (caller frees all of VALUES[i]).  AS_EUSAGE for an
 * opaque op (no kernel).
 */
int as_graph_eval(const as_graph *g, double **values, as_err *err);
/**
 * Fill VALUES for declared tensors with deterministic random data from RNG:
 * floats uniform in [-1, 1), integer inputs in the op's valid range.
 */
void as_graph_random_inputs(const as_graph *g, as_rng *rng, double **values);

#endif /* AS_AUTODIFF_H */
