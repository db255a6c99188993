/* ops_elementwise.c -- op family 'elementwise' (being written). */
#include "config.h"

#include "ops_internal.h"

const as_op_def as_ops_elementwise[] = {{0}};
const int as_ops_elementwise_count = 0;
