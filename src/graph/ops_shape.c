/* ops_shape.c -- op family 'shape' (being written). */
#include "config.h"

#include "ops_internal.h"

const as_op_def as_ops_shape[] = {{0}};
const int as_ops_shape_count = 0;
