/* ops_optim.c -- op family 'optim' (being written). */
#include "config.h"

#include "ops_internal.h"

const as_op_def as_ops_optim[] = {{0}};
const int as_ops_optim_count = 0;
