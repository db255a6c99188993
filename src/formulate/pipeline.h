/* pipeline.h -- pipeline stages of a training step (DESIGN.md
 * "Pipeline-aware planning", docs/solve.md "Pipelines").
 *
 * The one stage assignment that `solve --pipeline`, lowering and the
 * simulator share: forward ops are grouped into units (layers: the ops
 * named SEG.N..., the first "SEG.N." of the name, in order of first
 * appearance; a forward op outside every layer joins the unit of the
 * forward op before it, the ops before the first layer join layer 0), a
 * stage is a run of consecutive units, a backward op belongs to the forward
 * op whose tensor it differentiates ("d.NAME", "grad.NAME", "d.NAME.N"),
 * else to the latest forward op among its inputs' producers, else to the
 * first forward reader of the declared tensor its name differentiates;
 * optimizer ops go to their parameter's stage (its first forward reader).
 * Anything left over goes to the last stage.
 *
 * The per-stage problem is the subgraph of one stage's ops (tensors
 * produced by other stages become declared inputs); the stage plans are
 * merged into one plan of the whole graph.
 */
#ifndef AS_PIPELINE_H
#define AS_PIPELINE_H

#include <stdint.h>

#include "autoshard.h"
#include "formulate/plan.h"
#include "graph/graph.h"

/** Op roles in a training step. */
enum { AS_PIPE_FWD = 0, AS_PIPE_BWD, AS_PIPE_OPT };

/** Role of op O of G (AS_PIPE_FWD/BWD/OPT from its flags). */
int as_pipe_role(const as_graph *g, int32_t o);

/**
 * Units of G: UNIT[o] (as_graph_nops entries) gets the unit of every op
 * (-1: the last stage's), TUNIT[t] (as_graph_ntensors entries) the unit of
 * each declared tensor's first forward reader (-1 none).  BY_LAYER: units
 * are layers (see above; *NUNITS = 0 when G has none); else every forward
 * op is its own unit (the lowering of plans without stages).
 */
void as_pipe_units(const as_graph *g, int by_layer, int *unit, int *tunit, int *nunits);

/**
 * FLOPs of one microbatch's forward and backward per unit (COST[nunits]),
 * the balance of the automatic split (independent of any plan).
 */
void as_pipe_unit_flops(const as_graph *g, const int *unit, int nunits, double *cost);

/**
 * Cut COST[0..N) into P contiguous non-empty runs minimising the largest
 * run's sum (exact); COUNT[s] gets the units of run s.  N >= P >= 1.
 */
void as_pipe_balance(const double *cost, int n, int p, int *count);

/**
 * Parse a --stages SPEC of P stages over NUNITS layers: comma-separated
 * layer counts ("6,6,6,6") into COUNT[P].  AS_EUSAGE (one line) when a
 * count is not a positive integer, there are not P of them, or they do not
 * add up to NUNITS.
 */
int as_pipe_parse_stages(const char *spec, int p, int nunits, int *count, as_err *err);

/**
 * STAGE[o] of every op and TSTAGE[t] of every tensor (declared: its first
 * forward reader's stage; produced: its producer's) for units cut into P
 * runs of COUNT[s] units.
 */
void as_pipe_stages(const as_graph *g, const int *unit, const int *tunit, int p, const int *count,
                    int *stage, int *tstage);

/**
 * The subgraph of stage S: its ops in program order with the same names;
 * declared tensors its ops read keep their kind, tensors produced by other
 * stages become data inputs (batch dim BATCH_DIM[t] of the caller's
 * choice, -1 none).  *OUT owned by the caller.
 */
int as_pipe_subgraph(const as_graph *g, const int *stage, int s, const int *batch_dim,
                     as_graph **out, as_err *err);

/**
 * One plan of graph G (whole-batch shapes) from the stage plans SP[0..P)
 * (plans of the stage subgraphs): each op takes its stage's strategy, each
 * tensor the spec of the stage in TSTAGE.  Mesh, hardware, cost model and
 * solver from SP[0]; the pipeline fields from the arguments.  AS_EUSAGE if
 * a stage plan lacks an op or tensor.
 */
int as_pipe_merge(const as_graph *g, const int *stage, const int *tstage,
                  as_shard_plan *const *sp, int p, as_shard_plan **out, as_err *err);

/**
 * Iteration time of a pipeline from per-stage times T[s] of K microbatches
 * each (forward and backward of every microbatch, synchronisation and
 * update): sum T[s] / K + (K - 1) / K max T[s] (the classic estimate: the
 * slowest stage paces the steady state, every stage runs once in the
 * fill and drain).  *BUBBLE (may be NULL) gets 1 - mean(T) / estimate.
 */
double as_pipe_estimate(const double *t, int p, int k, double *bubble);

struct as_graph_problem;
struct as_graph_setup;

/** Microbatches stage S of P holds at once with K microbatches: 1F1B min(K, P - S), GPipe K. */
int as_pipe_inflight(int p, int k, int s, int gpipe);

/**
 * Build stage S's problem into *GP: the stage's subgraph of G (cut by STAGE;
 * with K > 1, G is the microbatched graph and MBDIM its batch dims) with
 * SETUP, K microbatches of which INFLIGHT are in flight.  Errors are
 * prefixed "stage S: ".  What `solve --pipeline` and `sweep` build.
 */
int as_pipe_stage_problem(const as_graph *g, const int *stage, int s, const int *mbdim,
                          const struct as_graph_setup *setup, int k, int inflight,
                          struct as_graph_problem *gp, as_err *err);

/**
 * The ILP rows' budget of a stage solved again after its simulated peak PEAK
 * exceeded its device budget BUDGET: RB less the excess and 0.5% of BUDGET.
 */
double as_pipe_refit_budget(double rb, double peak, double budget);

#endif /* AS_PIPELINE_H */
