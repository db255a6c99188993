/* ops_nn.c -- op family 'nn' (being written). */
#include "config.h"

#include "ops_internal.h"

const as_op_def as_ops_nn[] = {{0}};
const int as_ops_nn_count = 0;
