/* sim.h -- the schedule-exact simulator: event programs, the event engine,
 * memory tracking, pipeline schedules, reports and Chrome traces.
 *
 * An event program (as_sim_prog) lists, per device, events in program
 * order: computations on one device, collectives over a device group and
 * sends between two devices.  Each event reads and writes named tensors;
 * a tensor lives per device (the pair name+device is one buffer, written at
 * most once).  as_sim_run() replays the program with DistIR's semantics and
 * two streams per device (docs/sim.md) and returns an as_sim_result.
 *
 * Programs are built with the builder (as_sim_prog_new, as_sim_tensor,
 * as_sim_add_*), read from the text form (as_sim_prog_parse/read) or
 * generated for pipelines (as_sim_pipeline); lowering a plan adds one more
 * producer that calls the same builder.
 *
 * Ownership: a program owns every string, shape and attribute it was given
 * (copied on add).  An as_sim_result is independent of its program except
 * that event indices in it refer to that program.  Both are freed with
 * their _free function; NULL is a no-op.
 */
#ifndef AS_SIM_H
#define AS_SIM_H

#include <stdint.h>
#include <stdio.h>

#include "../autoshard.h"
#include "../graph/registry.h"
#include "../spmd/cost.h"

#define AS_SIM_MAX_TIME 1e9   /* longest event, seconds */
#define AS_SIM_MAX_BYTES 1e18 /* largest transfer or buffer, bytes */

typedef struct as_sim_prog as_sim_prog;

/* Event kinds. */
typedef enum as_sim_kind {
    AS_SIM_COMPUTE = 0, /* one device, compute stream */
    AS_SIM_COLL,        /* a collective over a group, communication stream */
    AS_SIM_SEND         /* point-to-point, both ends, communication stream */
} as_sim_kind;

/* Streams of a device. */
#define AS_SIM_STREAM_COMPUTE 0
#define AS_SIM_STREAM_COMM 1

/* Tensor declarations that are not produced by an event. */
typedef enum as_sim_decl {
    AS_SIM_RESIDENT = 0, /* parameters, gradients, optimizer state: always counted */
    AS_SIM_INPUT         /* present at time 0, freed after its last use */
} as_sim_decl;

/* Create, free, header. */
/**
 * New empty program NAME (copied) on NDEVICES devices (1 .. 65536).
 * AS_EUSAGE for a bad device count.
 */
int as_sim_prog_new(const char *name, int ndevices, as_sim_prog **out, as_err *err);
void as_sim_prog_free(as_sim_prog *p); /* NULL is a no-op */
/** Hardware profile name recorded in the header ("" = none); copied. */
void as_sim_prog_set_hw(as_sim_prog *p, const char *hw);
/** Cost model name recorded in the header ("" = none); copied. */
void as_sim_prog_set_cost_model(as_sim_prog *p, const char *model);
/** Samples per iteration, for throughput (0 = unknown). */
void as_sim_prog_set_batch(as_sim_prog *p, double batch);
/** Name of the file the program came from, used in messages ("" = built). */
void as_sim_prog_set_path(as_sim_prog *p, const char *path);

/**
 * Symmetry (DistSim): devices DEVS[0..N) run exactly the program of device
 * REP (same events, same shapes, collectives over groups of the same size
 * and link class), so only REP is simulated and its figures are copied to
 * them.  Events then list REP (computes, sends); collectives keep their
 * whole group (its size and link class cost them) and wait for the
 * representatives in it.  Call before adding events or declarations.
 * AS_EUSAGE for an unknown device, a representative that mirrors another,
 * or a program that already has events.
 */
int as_sim_mirror(as_sim_prog *p, const int *devs, int n, int rep, as_err *err);
/** Devices simulated explicitly (their own representatives). */
int as_sim_prog_nexplicit(const as_sim_prog *p);
/** Representative of device D (D when it mirrors nobody). */
int as_sim_prog_rep(const as_sim_prog *p, int d);

/* Queries. */
const char *as_sim_prog_name(const as_sim_prog *p);
int as_sim_prog_ndevices(const as_sim_prog *p);
const char *as_sim_prog_hw(const as_sim_prog *p);         /* "" if none */
const char *as_sim_prog_cost_model(const as_sim_prog *p); /* "" if none */
double as_sim_prog_batch(const as_sim_prog *p);
size_t as_sim_prog_nevents(const as_sim_prog *p);
/** Kind, label ("" if none) and source line (0 if built) of event I. */
as_sim_kind as_sim_event_kind(const as_sim_prog *p, size_t i);
const char *as_sim_event_label(const as_sim_prog *p, size_t i);
int as_sim_event_line(const as_sim_prog *p, size_t i);
/** Devices of event I: *N gets the count; the array is borrowed from P. */
const int32_t *as_sim_event_devices(const as_sim_prog *p, size_t i, int *n);
/** Stream of event I without --no-overlap (AS_SIM_STREAM_*). */
int as_sim_event_stream(const as_sim_prog *p, size_t i);

/* Builder. */
/**
 * Id of tensor NAME (interned; the same name gives the same id).  A tensor
 * id names one buffer per device.
 */
int32_t as_sim_tensor(as_sim_prog *p, const char *name);
/** Name of tensor id T (borrowed). */
const char *as_sim_tensor_name(const as_sim_prog *p, int32_t t);
/**
 * Declare tensor T on each of DEVS[0..NDEVS) as resident or input, BYTES
 * per device.  AS_EUSAGE for an unknown device or a buffer already written.
 */
int as_sim_declare(as_sim_prog *p, as_sim_decl kind, const int *devs, int ndevs, int32_t t,
                   double bytes, as_err *err);

/** The op a compute event is costed from: type, local shapes, attributes. */
typedef struct as_sim_op {
    const as_op_def *def;  /**< registry entry */
    const as_shape *in;    /**< NIN local input shapes (copied on add) */
    int nin;
    const as_attr *attr;   /**< NATTR attributes, bound to DEF's schema on add */
    int nattr;
} as_sim_op;

/** Everything one event needs; initialise with as_sim_event_spec_init(). */
typedef struct as_sim_event_spec {
    as_sim_kind kind;
    as_coll coll;          /**< AS_SIM_COLL: all-reduce, all-gather, reduce-scatter, all-to-all */
    const int *devs;       /**< compute: one event per device; coll: group; send: {src, dst} */
    int ndevs;
    double time;           /**< seconds; < 0 = cost with the model (default -1) */
    double bytes;          /**< coll/send: payload S (cost.h conventions), bytes */
    const as_sim_op *op;   /**< compute without time: the op to cost (copied) */
    int32_t op_id;         /**< >= 0: an op from as_sim_intern_op instead of OP (default -1) */
    const int32_t *reads;  /**< tensor ids read on every device of the event */
    int nreads;
    const int32_t *writes; /**< tensor ids written on every device (send: on dst) */
    const double *wbytes;  /**< bytes per device of each write; NULL or < 0: default */
    int nwrites;
    const char *label;     /**< NULL or "" = none; copied */
    int line, col;         /**< source position for messages (0 = built) */
    int reads_col;         /**< column of the reads= token, for "never produced" */
    int stream;            /**< -1 = by kind (compute vs comm), else AS_SIM_STREAM_* */
} as_sim_event_spec;

void as_sim_event_spec_init(as_sim_event_spec *s);
/**
 * Append the event S describes (compute on several devices appends one
 * event per device).  Checks devices (range, duplicates, sizes: send has
 * two distinct devices, a collective at least one), that a send reads
 * exactly one tensor, that no buffer is written twice, and that a compute
 * has a time or an op; errors are AS_EPARSE "PATH:LINE:COL: ..." for
 * parsed events, AS_EUSAGE naming the label for built ones.  Reads may
 * name buffers written by later events; as_sim_prog_check resolves them.
 */
int as_sim_add(as_sim_prog *p, const as_sim_event_spec *s, as_err *err);
/**
 * Intern OP once (bind attributes, infer output shapes) and return its id
 * in *ID, for as_sim_event_spec.op_id: builders that emit the same op many
 * times skip the per-event interning.  Identical ops get the same id.
 * AS_EUSAGE for a bad arity, shape or attribute.
 */
int as_sim_intern_op(as_sim_prog *p, const as_sim_op *op, int32_t *id, as_err *err);
/** Shorthand: compute on DEV for TIME seconds (writes get WBYTES each). */
int as_sim_add_compute(as_sim_prog *p, int dev, double time, const int32_t *reads, int nreads,
                       const int32_t *writes, const double *wbytes, int nwrites,
                       const char *label, as_err *err);
/** Shorthand: collective KIND of BYTES over GROUP[0..N); TIME < 0 = costed. */
int as_sim_add_collective(as_sim_prog *p, as_coll kind, const int *group, int n, double bytes,
                          double time, const int32_t *reads, int nreads, const int32_t *writes,
                          const double *wbytes, int nwrites, const char *label, as_err *err);
/** Shorthand: send tensor T (BYTES) from SRC to DST, written there under the same id. */
int as_sim_add_send(as_sim_prog *p, int src, int dst, int32_t t, double bytes, double time,
                    const char *label, as_err *err);
/**
 * Check the finished program: every buffer read is written by an event or
 * declared.  AS_EPARSE "PATH:LINE:COL: tensor 'x' on device 1 is never
 * produced" otherwise.  as_sim_run calls it.
 */
int as_sim_prog_check(const as_sim_prog *p, as_err *err);

/* Text form (docs/sim.md). */
/** Parse program TEXT (NUL-terminated) read from PATH; AS_EPARSE "PATH:LINE:COL: ...". */
int as_sim_prog_parse(const char *path, const char *text, as_sim_prog **out, as_err *err);
/** Read and parse PATH ("-" = stdin); AS_EIO if unreadable. */
int as_sim_prog_read(const char *path, as_sim_prog **out, as_err *err);
/** Write P in canonical text form; parse(write(P)) writes the same text.  AS_EIO. */
int as_sim_prog_write(const as_sim_prog *p, FILE *fp, as_err *err);

/* Running. */
typedef struct as_sim_opts {
    int overlap;                /**< 1 (default): compute and comm streams; 0: one stream */
    const as_cost_model *cm;    /**< borrowed model, or NULL: build one from the fields below */
    const char *hw;             /**< profile name or file; NULL = program header, else a100-dgx */
    const char *cost_model;     /**< NULL = program header, else roofline */
    const char *const *params;  /**< "key=value" cost-model parameters */
    size_t nparams;
    double capacity;            /**< bytes per device for OOM; 0 = the profile's memory */
} as_sim_opts;

void as_sim_opts_init(as_sim_opts *o);

typedef struct as_sim_dev_stats {
    double compute;   /**< seconds of compute events */
    double comm;      /**< seconds of communication events */
    double idle;      /**< seconds the compute stream (the only stream without overlap) idles */
    double resident;  /**< bytes always resident */
    double peak;      /**< bytes at the peak, resident included */
    double peak_time; /**< seconds: when the peak is first reached */
    int oom;          /**< 1 if peak > capacity */
} as_sim_dev_stats;

/* Why an event on the critical path started when it did. */
typedef enum as_sim_why {
    AS_SIM_WHY_START = 0, /* at time 0 */
    AS_SIM_WHY_STREAM,    /* the previous event on its stream on the same device */
    AS_SIM_WHY_DATA,      /* the producer of one of its inputs */
    AS_SIM_WHY_SYNC       /* the last participant of a multi-device event to arrive */
} as_sim_why;

typedef struct as_sim_result {
    double time;             /**< iteration time, seconds (latest end) */
    double throughput;       /**< samples/s (0 if the batch is unknown) */
    double bubble;           /**< idle compute-stream time / (devices x time) */
    double capacity;         /**< bytes per device used for OOM flags */
    int overlap;             /**< the mode it ran in */
    int ndevices;
    size_t nevents;
    as_sim_dev_stats *dev;   /**< [ndevices] */
    double *start, *end;     /**< [nevents] seconds */
    int32_t *crit;           /**< critical path, event ids from first to last */
    uint8_t *crit_why;       /**< as_sim_why per entry of crit */
    size_t ncrit;
    size_t cost_hits;        /**< events whose cost came from the cache */
    size_t cost_misses;      /**< distinct signatures costed */
    size_t nbuffers;         /**< buffers tracked by the memory model */
    int nexplicit;           /**< devices simulated explicitly (the others mirror them) */
    char hw[AS_HW_NAME_MAX]; /**< profile used */
    char model[32];          /**< cost model used */
    double wall;             /**< seconds the simulation took */
} as_sim_result;

/**
 * Simulate P (docs/sim.md "Semantics").  Costs every event without a
 * fixed time with the model (each distinct signature once), schedules with
 * per-device per-stream program order plus data dependencies, tracks
 * memory and finds the critical path.  AS_EPARSE for a deadlock ("deadlock:
 * N events cannot start; cycle: line 3 'e2' -> ...") or an unproduced
 * tensor; AS_EUSAGE for a bad profile or model.  O((events + reads) log)
 * worst case, linear plus the per-device memory sort.
 */
int as_sim_run(const as_sim_prog *p, const as_sim_opts *o, as_sim_result **out, as_err *err);
void as_sim_result_free(as_sim_result *r); /* NULL is a no-op */

/* Reports (report.c) and traces (trace.c). */
/** Human-readable report; VERBOSE adds the cost-cache counters and the full path. */
void as_sim_report_text(const as_sim_prog *p, const as_sim_result *r, int verbose, FILE *fp);
/** The report as one JSON object (stable key order) followed by a newline. */
int as_sim_report_json(const as_sim_prog *p, const as_sim_result *r, FILE *fp, as_err *err);
/**
 * Write a Chrome trace (one process per device, one thread per stream,
 * complete "X" events in microseconds) to PATH atomically.  AS_EIO.
 */
int as_sim_trace_write(const as_sim_prog *p, const as_sim_result *r, const char *path,
                       as_err *err);

/* Pipelines (pipeline.c). */
typedef enum as_sim_sched { AS_SIM_GPIPE = 0, AS_SIM_1F1B } as_sim_sched;

/** Parse "gpipe" or "1f1b"; 0 if unknown. */
int as_sim_sched_parse(const char *s, as_sim_sched *out);
const char *as_sim_sched_name(as_sim_sched s);

/* Ids the generator gives a stage's forward/backward of one microbatch. */
typedef struct as_sim_pipe_ctx {
    int stage, micro, replica;
    int backward;       /**< 0 forward, 1 backward */
    const int *devs;    /**< the stage's devices in this replica */
    int ndevs;
    int32_t in;         /**< tensor to read: activation (fwd) or its gradient (bwd); -1 = none */
    int32_t out;        /**< tensor to write: activation to send (fwd) / gradient (bwd) */
    int32_t stash;      /**< fwd writes it, bwd reads it: activations kept for backward */
    int32_t grad;       /**< bwd of the last microbatch writes it: gradients ready; -1 otherwise */
    int tail;           /**< 1: after the last backward's sends (gradient sync, update); in,
                             out, stash and grad are -1 then */
} as_sim_pipe_ctx;

/**
 * Emit the events of one forward or backward pass of a stage through the
 * builder: read C->in (when >= 0) and C->stash (bwd), write C->out, C->stash
 * (fwd) and C->grad (when >= 0) on every device of the stage.  Called once
 * more with C->tail = 1 after the sends of the stage's last backward, for
 * what follows it (gradient synchronisation, optimizer update).
 */
typedef int (*as_sim_pipe_emit)(as_sim_prog *p, const as_sim_pipe_ctx *c, void *ud,
                                as_err *err);

typedef struct as_sim_stage {
    const int *devs;    /**< devices of this stage in replica 0 */
    int ndevs;
    double fwd, bwd;    /**< seconds per microbatch (used when emit is NULL and for ordering) */
    double act_bytes;   /**< bytes per device sent to the next stage per microbatch */
    double stash_bytes; /**< bytes per device kept from forward to backward per microbatch */
    double param_bytes; /**< resident bytes per device (params, grads, optimizer state) */
    double grad_bytes;  /**< bytes per device all-reduced over replicas at the end */
} as_sim_stage;

typedef struct as_sim_pipe_opts {
    as_sim_sched sched;
    int nmicro;            /**< K microbatches (>= 1) */
    int dp;                /**< replicas (>= 1); replica r uses devs + r * dp_stride */
    int dp_stride;         /**< 0 = total devices of one replica */
    double send_time;      /**< < 0 = cost sends with the model, else fixed seconds */
    double ar_time;        /**< < 0 = cost the data-parallel all-reduce, else fixed seconds */
    as_sim_pipe_emit emit; /**< NULL: one compute event of stage.fwd/bwd seconds per device */
    void *ud;              /**< passed to emit */
} as_sim_pipe_opts;

void as_sim_pipe_opts_init(as_sim_pipe_opts *o);
/**
 * Append a P-stage, K-microbatch pipeline (STAGES[0..P)) under O->sched
 * to program PROG: per stage the schedule's order of forward and
 * backward passes, sends of activations (forward) and gradients
 * (backward) between consecutive stages, resident parameter bytes, and a
 * data-parallel all-reduce of each stage's gradients when O->dp > 1.
 * Events are appended in a global order consistent with the schedule, so
 * the program does not deadlock.  AS_EUSAGE for bad sizes or devices.
 */
int as_sim_pipeline(as_sim_prog *prog, const as_sim_stage *stages, int nstages,
                    const as_sim_pipe_opts *o, as_err *err);
/**
 * Split COST[0..N) into P contiguous non-empty parts minimising the
 * largest part's sum (exact: bisection over the doubles with a greedy
 * feasibility test; the optimum is one of the part sums).  BOUNDS[0..P]
 * gets part starts with BOUNDS[0] = 0, BOUNDS[P] = N; *MAXCOST the optimum.
 * AS_EUSAGE if P < 1, P > N or a cost is negative or not finite.
 * O(N * 64).
 */
int as_sim_balanced_split(const double *cost, size_t n, int p, size_t *bounds,
                          double *maxcost, as_err *err);

#endif /* AS_SIM_H */
