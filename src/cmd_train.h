/* cmd_train.h -- the training-step options of `solve` (DESIGN.md "Training
 * step"): gradient accumulation over K microbatches.  Wiring between the
 * command line, the microbatch graph (graph/microbatch.c), the ILP's build
 * options and the lowering, kept out of cmd_solve.c.
 */
#ifndef AS_CMD_TRAIN_H
#define AS_CMD_TRAIN_H

#include "formulate/build.h"
#include "formulate/plan.h"
#include "graph/graph.h"
#include "sim/lower.h"

typedef struct as_train_cli {
    int micro;      /**< --microbatches K (1 = none) */
    as_recompute recompute; /**< --recompute */
    as_graph *full; /**< the whole-batch graph when K > 1 (owned); the ILP sees microbatches */
} as_train_cli;

/** Parse --microbatches ARG; AS_EXIT_OK or the usage exit status (message printed). */
int as_train_cli_micro(as_train_cli *t, const char *arg);
/** Parse --recompute ARG of command CMD; AS_EXIT_OK or the usage exit status. */
int as_train_cli_recompute(const struct as_cmd *cmd, as_recompute *m, const char *arg);
/** Apply recomputation M to *G (replaced; AS_EUSAGE when it cannot apply). */
int as_train_apply_recompute(as_recompute m, as_graph **g, as_err *err);
/**
 * Turn *G into what the ILP is built on: with recomputation the rewritten
 * step (graph/recompute.c); with K > 1 the graph of one
 * microbatch (*G replaced; the whole graph kept in T->full) and BUILD's
 * microbatches set.  AS_EUSAGE when K does not divide the batch.
 */
int as_train_cli_graph(as_train_cli *t, as_graph **g, as_build_opts *build, as_err *err);
/** The graph to lower plans on: the whole one (G is the ILP's). */
const as_graph *as_train_cli_lower_graph(const as_train_cli *t, const as_graph *g);
/** Lowering options of the same step: K microbatches. */
void as_train_cli_lower_opts(const as_train_cli *t, as_lower_opts *lo);
/** A plan of the ILP's graph as a plan of the whole graph (tensor shapes). */
void as_train_cli_plan(const as_train_cli *t, as_shard_plan *pl);
void as_train_cli_free(as_train_cli *t);

#endif /* AS_CMD_TRAIN_H */
