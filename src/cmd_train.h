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
#include "solve/solver.h"

typedef struct as_train_cli {
    int micro;      /**< --microbatches K (1 = none) */
    as_recompute recompute; /**< --recompute */
    char *layers;   /**< auto: the layers recomputed fully, comma-separated (owned; NULL = all) */
    as_graph *full; /**< the whole-batch graph when K > 1 (owned); the ILP sees microbatches */
    int pipeline;   /**< --pipeline P (0 = none) */
    const char *stages; /**< --stages SPEC (layers per stage), NULL = balanced */
    const char *schedule; /**< --schedule, NULL = 1f1b */
} as_train_cli;

/** What `solve --pipeline` needs of the rest of the command line (borrowed). */
typedef struct as_pipe_cli {
    const char *path;            /**< the graph file, for the header */
    as_graph_setup *setup;       /**< mesh (one stage), profile, cost model, budget, tying */
    const as_solve_opts *o; /**< solver, limits (--time-limit counts from t_start) */
    double t_start;
    const char *out, *emit;      /**< -o, --emit */
    FILE *fp;                    /**< the summary */
} as_pipe_cli;

/** Parse --pipeline / --stages / --schedule; AS_EXIT_OK or the usage exit status. */
int as_train_cli_pipeline(as_train_cli *t, const char *opt, const char *arg);
/**
 * `solve GRAPH --pipeline P` (cmd_pipeline.c, docs/solve.md "Pipelines"):
 * G (taken over) split into P stages at layer boundaries, each stage's ILP
 * solved on its own mesh with microbatch shapes, the plans merged into one
 * plan that records the step, its memory checked per stage by the
 * simulator.  Returns the exit status (messages printed).
 */
int as_train_pipeline_solve(as_train_cli *t, as_graph *g, const as_pipe_cli *c);

/** Parse --microbatches ARG; AS_EXIT_OK or the usage exit status (message printed). */
int as_train_cli_micro(as_train_cli *t, const char *arg);
/** Parse --recompute ARG of command CMD; AS_EXIT_OK or the usage exit status. */
int as_train_cli_recompute(const struct as_cmd *cmd, as_recompute *m, const char *arg);
/**
 * Apply recomputation M to *G (replaced; AS_EUSAGE when it cannot apply).
 * AS_RECOMPUTE_AUTO recomputes LAYERS (comma-separated keys) fully; "" or
 * NULL leaves *G.
 */
int as_train_apply_recompute(as_recompute m, const char *layers, as_graph **g, as_err *err);
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
/**
 * The recomputation PLAN was solved for (its "pipeline" record, named PNAME
 * in messages) into *M when the command did not give one (GIVEN = 0), and
 * for "auto" the layers it recomputes into *LAYERS (the plan's string;
 * with GIVEN, they must equal *LAYERS when that is not NULL); AS_EUSAGE when
 * a given one differs, or when *M is auto and the plan does not record it.
 * A plan without a record leaves *M.
 */
int as_train_plan_recompute(const as_shard_plan *plan, const char *pname, int given,
                            as_recompute *m, const char **layers, as_err *err);

#endif /* AS_CMD_TRAIN_H */
