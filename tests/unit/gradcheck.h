/* gradcheck.h -- test support: check an op's gradient rule against central
 * finite differences through the reference kernels, and run an op's kernel
 * on given data.  Used by the op family tests (tests/unit/test_ops_*.c).
 */
#ifndef AS_GRADCHECK_H
#define AS_GRADCHECK_H

#include "graph/autodiff.h"
#include "graph/graph.h"
#include "graph/registry.h"

/**
 * Build a graph with one op OPTYPE on inputs of shapes IN[0..NIN) (float
 * inputs become parameters with random values in [-1, 1), integer inputs
 * data inputs with values in the op's valid range), seed every float output
 * with a random cotangent r_k, differentiate with the op's gradient rule,
 * evaluate with the reference kernels, and compare d(sum_k r_k . y_k)/dx
 * with central differences (step 1e-6) for every float input element.
 * Returns the largest error, relative to max(1, |gradient|); a negative
 * value if the graph could not be built or evaluated (with a diag line).
 * Inputs of kind "positive" can be requested with POSITIVE_MASK (bit j:
 * input j is drawn from [0.5, 1.5), e.g. for log, sqrt, pow).
 */
double gradcheck(const char *optype, const as_shape *in, int nin, const as_attr *attr, int nattr,
                 unsigned positive_mask, uint64_t seed);

/**
 * Run the kernel of OPTYPE on inputs IN[j] (numel of SHAPES[j] doubles each)
 * and write output 0 into OUT (caller-sized).  Returns AS_OK or the infer
 * error.  *OUTSHAPE (may be NULL) receives output 0's shape.
 */
int run_kernel(const char *optype, const as_shape *shapes, int nin, const double *const *in,
               const as_attr *attr, int nattr, double *out, as_shape *outshape, as_err *err);

/** Shape literal helper: SHAPE(AS_DT_F32, 2, 3) -> f32[2,3]. */
as_shape mkshape(as_dtype t, int rank, ...);

#endif /* AS_GRADCHECK_H */
