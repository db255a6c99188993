/* sweep.h -- `autoshard sweep`: enumerate the configurations of a training
 * job (pipeline degree P, microbatches K, mesh shapes of each stage's N/P
 * devices, recomputation, solver), solve and simulate each in one process
 * and append one JSON line per configuration (docs/sweep.md).
 *
 * Uses graph, spmd, formulate, solve and sim; nothing uses sweep.  Each
 * configuration is solved like `solve GRAPH --pipeline P --microbatches K
 * --mesh M --recompute R --solver S --memory auto` (stages balanced by
 * FLOPs, 1F1B) and simulated like `simulate` on the merged plan.
 */
#ifndef AS_SWEEP_H
#define AS_SWEEP_H

#include <stdint.h>
#include <stdio.h>

#include "autoshard.h"
#include "graph/graph.h"

#define AS_SWEEP_MAX_LIST 32
#define AS_SWEEP_KEY_MAX 160

/** One configuration. */
typedef struct as_sweep_cfg {
    int n;                     /**< devices of this configuration (one of --devices) */
    int p, k;                  /**< pipeline stages, microbatches */
    char mesh[64];             /**< one stage's mesh, "2x4" */
    as_recompute recompute;
    const char *solver;        /**< borrowed from the options */
    int zero;                  /**< ZeRO stage (as_build_opts.zero) */
    const char *cost;          /**< cost model (NULL = roofline; borrowed from the options) */
    char key[AS_SWEEP_KEY_MAX]; /**< canonical string "p=2,k=4,mesh=2x2,recompute=none,solver=glpk",
                                     prefixed by "n=8," when --devices lists several counts,
                                     ",zero=Z" after it with a --zero list, ",cost=C"
                                     with a --cost-model list */
} as_sweep_cfg;

typedef struct as_sweep_opts {
    const char *source;        /**< graph path or preset name (the JSONL header) */
    int devices;               /**< N (the largest of DEVS) */
    int devs[AS_SWEEP_MAX_LIST], ndevs; /**< `--devices 1,2,4,8`: every count (0 entries = DEVICES) */
    const char *cost;          /**< cost model (NULL = roofline): the single --cost-model, or
                                    the first of the list */
    const char *costs[4]; int ncost; /**< `--cost-model roofline,alpa`: with more than one, the
                                    cost model is a dimension (keys end ",cost=C", the header
                                    lists them); the simulator ranks every plan the same way */
    const char *hw;            /**< profile (NULL = a100-dgx) */
    int64_t batch;             /**< global batch of the graph */
    int batch_index;           /**< which of BATCHES this run is (the caller sets it): the
                                    first starts the CSV, later ones append their rows; each
                                    batch's chart goes to SVG with "-bB" before its extension */
    int64_t batches[AS_SWEEP_MAX_LIST]; int nbatches; /**< `--batch 256,1024`: the command runs one
                                    sweep per batch (one graph each) into one JSONL; with more
                                    than one, keys are prefixed by "b=B," (0 entries = BATCH) */
    int pipeline[AS_SWEEP_MAX_LIST], npipeline;  /**< 0 entries = every divisor of N */
    int micro[AS_SWEEP_MAX_LIST], nmicro;        /**< 0 entries = 1 for P = 1, else 2P */
    int mbsize[AS_SWEEP_MAX_LIST], nmbsize;     /**< `--microbatch-size 1,2`: K = batch / D / b per
                                    mesh (D its data degree, 1 without data axes), every P
                                    (0 entries = the micro list or its default) */
    int accumulate;            /**< 1: the --microbatches list applies to P = 1 too */
    as_recompute recompute[4]; int nrecompute;   /**< 0 entries = none */
    const char *solver[AS_SWEEP_MAX_LIST]; int nsolver; /**< 0 entries = glpk */
    int max_axes;              /**< mesh axes per stage, 1..3 (default 3) */
    int tp_max;                /**< no mesh axis larger than this (0 = no limit); with roles,
                                    only the tensor and auto axes (data axes unbounded) */
    double time_limit;         /**< seconds per configuration (0 = none) */
    const char *out;           /**< JSONL (NULL = none: nothing to resume) */
    const char *csv;           /**< NULL = none */
    int top;                   /**< rows of the final table */
    int quiet;                 /**< no progress line */
    int jobs;                  /**< worker processes (<= 1: this process) */
    const char *plans;         /**< directory of one plan file per configuration (NULL = none) */
    const char *svg;           /**< Pareto chart (NULL = none) */
    const char *roles;         /**< `--role data,tensor`: one role per mesh axis, in order
                                    (NULL = none); every mesh then has exactly NROLES axes,
                                    factors >= 1 ("1x8", "2x4", ...) */
    int nroles;                /**< entries of ROLES (1..3) */
    int zero;                  /**< ZeRO stage 0..3 over the data axes (as_build_opts.zero): the
                                    single --zero value, or the first of the list */
    int zeros[4], nzero;       /**< `--zero 0,1,2,3`: with more than one, ZeRO is a dimension
                                    (keys end ",zero=Z", the header lists them); a Z > 0 on a mesh
                                    whose data degree is 1 is left out when 0 is listed (the same
                                    configuration) */
} as_sweep_opts;

/**
 * Set O's roles from TEXT (borrowed): one role per mesh axis in order, at
 * most 3 ("data,tensor").  AS_EUSAGE with one line for anything else.
 */
int as_sweep_set_roles(as_sweep_opts *o, const char *text, as_err *err);

/** Defaults: max_axes 3, top 10, everything else 0. */
void as_sweep_opts_init(as_sweep_opts *o);

/**
 * The configurations of O for a graph of NLAYERS layers and batch BATCH, in
 * a fixed order (P, K, mesh, recompute, solver): *CFG (owned, free()) and
 * *N.  AS_EUSAGE when a listed P does not divide N or exceeds NLAYERS, a
 * listed K does not divide the batch, or nothing is left.
 */
int as_sweep_enumerate(const as_sweep_opts *o, int nlayers, int64_t batch, as_sweep_cfg **cfg,
                       size_t *n, as_err *err);

/** Print the configurations of O for G, one key a line, to FP (as_sweep_enumerate). */
int as_sweep_list(const as_graph *g, const as_sweep_opts *o, FILE *fp, as_err *err);

/** Summary of a run. */
typedef struct as_sweep_summary {
    size_t total, skipped, done, pruned, failed, oom;
    size_t infeasible;         /**< no plan fits the stages' memory (status infeasible);
                                    not counted in failed: an answer, not an error */
    size_t limit;              /**< plans that fit, at the time limit (status limit) */
    double wall;               /**< seconds of this run */
    int rank;                  /**< > 0: an MPI rank that only evaluated (built --with-mpi,
                                    under mpirun); rank 0 wrote the JSONL, the table and the
                                    counts, this one has nothing to print */
} as_sweep_summary;

/**
 * Run the sweep of O on G (the training step, borrowed): resume from O->out
 * when it exists (AS_EUSAGE when its header names another command line),
 * solve and simulate every configuration not done, append its line, print
 * the progress to stderr (a terminal, not quiet), then the top table to
 * TABLE and the CSV.  A configuration that fails is recorded with its error.
 * Built --with-mpi and started by mpirun with R > 1 ranks, rank 0 deals the
 * configurations to ranks 1..R-1 and writes as above; the other ranks only
 * evaluate (SUM->rank > 0) and return AS_OK without output.
 */
int as_sweep_run(const as_graph *g, const as_sweep_opts *o, FILE *table, as_sweep_summary *sum,
                 as_err *err);

/**
 * Seconds the progress line's ETA gives for LEFT configurations still to run, JOBS at a
 * time: LEFT x the mean wall time of the NSOLVED lines received that were not pruned
 * (SOLVED_S seconds in all).  Pruned lines (a build and a bound: a tenth of a second)
 * are not a sample of what is left: at 1024 devices they come in runs, and counting them
 * made the ETA low.  With none solved yet: TIME_LIMIT a configuration (> 0), else ELAPSED
 * / GOT each (GOT lines received); NAN with nothing to go on.
 */
double as_sweep_eta(size_t left, size_t nsolved, double solved_s, size_t got, double elapsed,
                    int jobs, double time_limit);

/** This process's MPI rank under mpirun with more than one rank (built --with-mpi or not,
    as Open MPI's environment says), else 0: ranks > 0 print nothing. */
int as_sweep_rank(void);

#endif /* AS_SWEEP_H */
