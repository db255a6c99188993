/* ops_conv.c -- op family 'conv' (being written). */
#include "config.h"

#include "ops_internal.h"

const as_op_def as_ops_conv[] = {{0}};
const int as_ops_conv_count = 0;
