/* lower.h -- lowering a sharded graph to an event program, and simulating
 * and re-ranking plans.
 *
 * as_sim_lower() turns a graph and a plan (formulate/plan.h: per tensor its
 * spec, per op its strategy) into an event program (sim.h): per op one
 * compute event on every device with its local shapes, the collectives the
 * plan implies (resharding between producer and consumer specs, partial
 * sums an op resolves itself), resident parameters, gradients and
 * optimizer state, and data inputs; optionally split into a P-stage,
 * K-microbatch pipeline (docs/sim.md "Lowering").  as_sim_plan() lowers
 * and simulates in one call; as_sim_rank_plans() (rank.c) simulates K
 * plans and compares the simulator's order with the solver's.
 *
 * Ownership: the graph and plan are borrowed; returned programs and
 * results belong to the caller.
 */
#ifndef AS_SIM_LOWER_H
#define AS_SIM_LOWER_H

#include <stdio.h>

#include "../autoshard.h"
#include "../formulate/plan.h"
#include "../graph/graph.h"
#include "sim.h"

typedef struct as_lower_opts {
    const char *hw;            /**< profile name or file; NULL = the plan's, else a100-dgx */
    const char *cost_model;    /**< NULL = the plan's, else roofline */
    const char *const *params; /**< "key=value" cost-model parameters */
    size_t nparams;
    const char *mesh;          /**< NULL, or a mesh the plan's must agree with (see docs) */
    int pipeline;              /**< P stages (1 = no pipeline) */
    int nmicro;                /**< K microbatches (1 = none; P = 1: gradient accumulation) */
    as_sim_sched sched;        /**< gpipe or 1f1b */
    const char *plan_name;     /**< used in messages ("plan 'NAME': ..."); NULL = "plan" */
    int no_symmetry;           /**< 1: list every device's events (no mirrors) */
    unsigned given;            /**< AS_LOWER_GIVEN_*: settings the user gave; the others come
                                    from the plan when it records them (`solve --pipeline`),
                                    and a given one must agree with the plan's */
} as_lower_opts;

#define AS_LOWER_GIVEN_PIPELINE 0x1u
#define AS_LOWER_GIVEN_MICRO 0x2u
#define AS_LOWER_GIVEN_SCHED 0x4u

void as_lower_opts_init(as_lower_opts *o);

/**
 * Lower graph G under PLAN into a new program *OUT named after the graph,
 * with the profile, cost model and batch (samples: the batch input's batch
 * dim) in its header.  Errors: AS_EUSAGE "plan 'p.json': op 'x' not in
 * graph 'g'" for the first mismatch between plan and graph (names, types,
 * shapes, strategy index or name, specs that do not fit), a bad mesh,
 * profile, model or pipeline size; rule-discovery errors prefixed with the
 * op name.
 */
int as_sim_lower(const as_graph *g, const as_shard_plan *plan, const as_lower_opts *o,
                 as_sim_prog **out, as_err *err);

/**
 * MBDIM[t] (for every tensor of G) gets the dim of tensor t that K = NMICRO
 * microbatches divide, -1 for none: what lowering with K microbatches uses.
 * AS_EUSAGE when K does not divide the batch or an op cannot be split.
 */
int as_sim_microbatch_dims(const as_graph *g, int nmicro, int *mbdim, as_err *err);

/**
 * Lower and simulate in one call: as_sim_lower(G, PLAN, LO) then
 * as_sim_run with SO (NULL = defaults).  *RES gets the result; *PROG (may
 * be NULL) the program, which the result's event ids refer to.
 */
int as_sim_plan(const as_graph *g, const as_shard_plan *plan, const as_lower_opts *lo,
                const as_sim_opts *so, as_sim_result **res, as_sim_prog **prog, as_err *err);

/**
 * The pipeline plan of `solve --pipeline` and of each `sweep` configuration:
 * merge the stage plans SP[0..P) (formulate/pipeline.h as_pipe_merge; STAGE,
 * TSTAGE: the ops' and declared tensors' stages), set its objective to the
 * pipeline estimate of the stage objectives OBJ[P] with K microbatches,
 * record the step (SCHED, RECOMPUTE, COUNT[P] layers per stage), lower and
 * simulate it on profile HW (NULL = the plan's): *PLAN, *RES (replaced;
 * the caller frees them), PEAK[P] the largest simulated peak per device of
 * each stage (also recorded in the plan, whose peak is their max), *SIM_S
 * (may be NULL) the seconds spent simulating.  Errors of merging, or of
 * lowering prefixed "simulating the pipeline plan: ".
 */
int as_sim_pipeline_plan(const as_graph *g, const int *stage, const int *tstage,
                         as_shard_plan *const *sp, const double *obj, int p, int k,
                         as_sim_sched sched, const char *recompute, const int *count,
                         const char *hw, as_shard_plan **plan, as_sim_result **res,
                         double *peak, double *sim_s, as_err *err);

/* Re-ranking (rank.c). */
typedef struct as_rank_entry {
    const char *name;  /**< plan name (borrowed from the caller) */
    double objective;  /**< solver objective */
    double time;       /**< simulated iteration time, seconds */
    double peak;       /**< largest peak memory over devices, bytes */
    int oom;           /**< 1 if some device exceeds its capacity */
    int solver_rank;   /**< 1-based position by objective */
    int sim_rank;      /**< 1-based position by simulated time (fitting plans first) */
} as_rank_entry;

typedef struct as_rank_result {
    size_t n;
    as_rank_entry *e;  /**< [n] in input order */
    double spearman;   /**< Spearman's rho between objective and simulated time (NaN: undefined) */
    double kendall;    /**< Kendall's tau-b between them (NaN: undefined) */
    int best_solver;   /**< index of the plan with the lowest objective */
    int best_sim;      /**< index of the fastest plan that fits (-1: none fits) */
    double gain;       /**< time(best_solver) / time(best_sim) - 1 (0 if the same plan) */
} as_rank_result;

/**
 * Simulate each of the K plans PLANS[0..K) (NAMES[i] their names,
 * OBJECTIVES[i] their solver objectives; NULL = each plan's own) on G,
 * print both orders side by side to OUT (may be NULL), mark plans that do
 * not fit, print Spearman's rho and Kendall's tau and by how much the
 * simulator's best beats the solver's best.  *RES (may be NULL) gets the
 * figures (free with as_rank_result_free).  The first lowering or
 * simulation error stops it, prefixed with the plan's name.
 */
int as_sim_rank_plans(const as_graph *g, const as_shard_plan *const *plans,
                      const char *const *names, const double *objectives, size_t k,
                      const as_lower_opts *lo, const as_sim_opts *so, FILE *out,
                      as_rank_result *res, as_err *err);
void as_rank_result_free(as_rank_result *r);
/** The table of R (what as_sim_rank_plans prints); rho and tau "undefined" when NaN. */
void as_rank_print(const as_rank_result *r, FILE *out);
/** R as JSON (new reference): plans (in input order), spearman, kendall (null: undefined), ... */
struct json_t *as_rank_json(const as_rank_result *r);
/** Spearman's rho of X and Y (average ranks for ties); NaN (undefined) when N < 2 or X or Y is all ties. */
double as_rank_spearman(const double *x, const double *y, size_t n);
/** Kendall's tau-b of X and Y; NaN (undefined) when N < 2 or X or Y is all ties. */
double as_rank_kendall(const double *x, const double *y, size_t n);

#endif /* AS_SIM_LOWER_H */
