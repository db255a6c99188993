/* ops_hlo.c -- op family 'hlo' (being written). */
#include "config.h"

#include "ops_internal.h"

const as_op_def as_ops_hlo[] = {{0}};
const int as_ops_hlo_count = 0;
