/* rules.h -- sharding rules of op types (ShardCombine), their discovery
 * through the registry's reference kernels, analytic rules for reshape-like
 * ops, an in-memory and an on-disk rule cache, and canonical examples.
 *
 * A rule says which input dims are split together (one ShardDim group: per
 * input the dim split, or -1 when that input stays whole) and how each
 * output's local results recombine into the global result (as_combine).
 * A rule set holds every rule of one (op type, attributes, input shapes
 * after the size mapping) key; see docs/rules.md.
 *
 * Using a rule set on a mesh (for the strategy enumeration): each mesh axis
 * takes one rule id, or leaves the op replicated.  Axes that take the same
 * rule split the same dims further (a dim may be split over several axes:
 * the shard count is the product of their sizes).  A strategy is valid only
 * where every split input dim (and, for gather, block and halo, the output
 * dim) is divisible by its shard count.  An axis with a SUM / MEAN / MAX /
 * MIN rule leaves the output partial over that axis (an all-reduce or a
 * reduce-scatter follows); GATHER leaves it split along `dim`; IDENTITY
 * leaves it whole (replicated over that axis); HALO needs a neighbour
 * exchange of `halo` input rows per boundary before running; BLOCK leaves
 * the output split blockwise (one block per concat input).  An op with no
 * rule (opaque, collective, undiscoverable) is replicated on every axis.
 *
 * Ownership: rule sets returned by as_rules_get() are owned by the process
 * cache and stay valid until as_rules_reset().  All functions are
 * thread-safe unless noted.
 */
#ifndef AS_RULES_H
#define AS_RULES_H

#include <stdint.h>

#include "../autoshard.h"
#include "../graph/registry.h"

/* How local results of one output recombine into the global result. */
typedef enum as_combine_kind {
    AS_COMBINE_IDENTITY = 0, /* each local result already is the global one (dim -1); for ops
                                without inputs, dim >= 0: the output is made split along dim */
    AS_COMBINE_GATHER,       /* concatenate the local results along dim */
    AS_COMBINE_BLOCK,        /* local results hold one piece of each of K blocks along dim
                                (K = split inputs, concatenation): gather block by block */
    AS_COMBINE_SUM,          /* elementwise sum of the local results (partial sums) */
    AS_COMBINE_MEAN,         /* elementwise mean (equal-sized shards) */
    AS_COMBINE_MAX,          /* elementwise max */
    AS_COMBINE_MIN,          /* elementwise min */
    AS_COMBINE_HALO,         /* inputs split with `halo` overlapping rows, gather along dim */
    AS_COMBINE_COUNT
} as_combine_kind;

typedef struct as_combine {
    as_combine_kind kind;
    int dim; /**< output dim for IDENTITY (>= 0 only without inputs), GATHER, BLOCK, HALO; else -1 */
} as_combine;

typedef struct as_shard_rule {
    int id;                 /**< 0 .. nrules-1, ordered by in_dim */
    const int8_t *in_dim;   /**< [nin]: dim of input j split by this rule, -1 = whole */
    const as_combine *out;  /**< [nout]: how each output recombines */
    int halo;               /**< HALO: overlap in input elements (on the discovery shapes), else 0 */
} as_shard_rule;

/* Where a rule set came from. */
#define AS_RULES_DISCOVERED 0x1u /* ShardCombine, through the reference kernel */
#define AS_RULES_ANALYTIC 0x2u   /* derived by hand (reshape, slice, zeros, ...) */
#define AS_RULES_REPLICATE 0x4u  /* no rule possible: opaque, collective, or not discoverable */
#define AS_RULES_FROM_DISK 0x8u  /* read from the on-disk cache */

typedef struct as_rule_set {
    const char *key;            /**< cache key (op|attrs|shapes) */
    int nin, nout;              /**< arity of the op instance */
    int nrules;                 /**< 0: replicate only */
    const as_shard_rule *rules; /**< [nrules] */
    unsigned flags;             /**< AS_RULES_* */
    const char *why;            /**< REPLICATE: the reason; else NULL */
} as_rule_set;

/* Counters (for benchmarks and `autoshard rules -v`). */
typedef struct as_rules_stats {
    long discovered;  /**< keys discovered by running kernels */
    long analytic;    /**< keys given analytic or replicate-only rules */
    long mem_hits;    /**< as_rules_get answered from memory */
    long disk_loaded; /**< entries read from the disk cache */
    long candidates;  /**< candidate groups tried */
    long kernel_runs; /**< reference kernel executions */
} as_rules_stats;

/* Getting rules. */
/**
 * Rules of the op instance INFO (def, input shapes and bound attributes;
 * info->out may be NULL).  Looks in the memory cache, then the disk cache,
 * else derives them (analytic, replicate-only, or discovery on shrunken
 * shapes) and stores them (memory; disk for discovered sets).  *OUT is
 * owned by the cache.  AS_EPARSE if the op's shapes do not infer.
 */
int as_rules_get(const as_opinfo *info, const as_rule_set **out, as_err *err);
/** Discover the rules of INFO without any cache (caller frees with as_rules_set_free). */
int as_rules_compute(const as_opinfo *info, as_rule_set **out, as_err *err);
void as_rules_set_free(as_rule_set *set);
/** Snapshot of the process counters (thread-safe). */
void as_rules_get_stats(as_rules_stats *st);
/** Drop the memory cache (rule sets returned before become invalid) and zero the counters. */
void as_rules_reset(void);

/* Cache configuration and files. */
/**
 * Use PATH as the disk cache ("off" disables it; NULL restores the default:
 * $AUTOSHARD_RULES_CACHE, else $XDG_CACHE_HOME/autoshard/rules.cache, else
 * ~/.cache/autoshard/rules.cache).  Call before the first as_rules_get.
 */
void as_rules_set_cache_path(const char *path);
/** The disk cache path in use (NULL when disabled); borrowed, valid until the next set. */
const char *as_rules_cache_path(void);
/** Fingerprint of the registry: op names, arities, flags, attribute schemas, build id. */
uint64_t as_rules_fingerprint(void);
/**
 * Write every discovered set in memory to PATH (atomic) with fingerprint
 * FP; *NWRITTEN (may be NULL) gets the entry count.  AS_EIO on failure.
 */
int as_rules_cache_write(const char *path, uint64_t fp, int *nwritten, as_err *err);
/**
 * Read PATH into the memory cache if its header carries fingerprint FP.
 * AS_EIO: unreadable (missing: AS_EIO too; callers treat both as "empty").
 * AS_EPARSE: stale (other fingerprint or format version), corrupt
 * (checksum, syntax) or truncated; nothing is loaded then.
 */
int as_rules_cache_read(const char *path, uint64_t fp, int *nloaded, as_err *err);

/* Printing. */
/** "identity", "gather(0)", "sum", "halo(2)", "block(1)" into BUF (>= 24 bytes). */
const char *as_combine_str(const as_combine *c, char *buf, size_t n);
/** Name of a combine kind ("gather"). */
const char *as_combine_kind_name(as_combine_kind k);
/** "in0:1 in1:- in2:0" for RULE into BUF. */
const char *as_rule_in_str(const as_rule_set *set, const as_shard_rule *rule, char *buf, size_t n);

/* Canonical examples (rules_examples.c). */
/**
 * The canonical example of op type DEF as an opinfo: input shapes,
 * attributes bound with defaults and inferred outputs, all allocated in
 * ARENA.  *TEXT (may be NULL) gets the signature text ("f32[12,18],
 * f32[18,24]").  AS_EUSAGE if the op has no example, AS_EINTERNAL if the
 * example does not infer (a bug in the table).
 */
int as_rules_example(const as_op_def *def, as_arena *arena, as_opinfo *out, const char **text,
                     as_err *err);
/** Whether an example exists for op type NAME. */
int as_rules_has_example(const char *name);

/* Internal to src/spmd/rules_*.c and shardcombine.c. */
/** A new empty set (NIN inputs, NOUT outputs) with key KEY (copied). */
as_rule_set *as_rules_i_set_new(const char *key, int nin, int nout, unsigned flags);
/** Append a rule (duplicates of an existing in_dim vector are ignored). */
void as_rules_i_set_add(as_rule_set *set, const int8_t *in_dim, const as_combine *out, int halo);
/** Sort the rules by in_dim (-1 last) and number them. */
void as_rules_i_set_finish(as_rule_set *set);
/** Set the replicate-only reason (copied). */
void as_rules_i_set_why(as_rule_set *set, const char *why);
/**
 * Analytic rules for INFO if its op type has them (AS_OPF_RESHAPE, slice,
 * slice_grad, split, dynamic_slice, dynamic_update_slice, ops without
 * inputs, concat with more than AS_RULES_DISCOVER_MAX_IN inputs) or
 * replicate-only (opaque, collective, no kernel, any other op with more
 * than AS_RULES_DISCOVER_MAX_IN inputs): sets *OUT, or
 * NULL when the op is to be discovered.
 */
int as_rules_i_analytic(const as_opinfo *info, const char *key, as_rule_set **out, as_err *err);
/**
 * Shrink INFO for discovery: map distinct dim sizes >= 2 (and sizes inside
 * size-carrying attributes) to increasing multiples of 6, keeping size 1
 * and kernel windows, aligning strided dims with their stride, deriving a
 * backward op's dy through its forward op (docs/rules.md); results in
 * ARENA.  AS_EPARSE when the shrunken op does not infer.
 */
int as_rules_i_shrink(const as_opinfo *info, as_arena *arena, as_opinfo *out, as_err *err);
/** Whether attribute KEY of op type OPNAME holds sizes (shape, depth, vocab, ...). */
int as_rules_i_size_attr(const char *opname, const char *key);
/** Most inputs ShardCombine discovers rules for; concat with more has analytic rules, any
 * other op with more is replicated (one warning per process). */
#define AS_RULES_DISCOVER_MAX_IN 64
/** Discovery by ShardCombine on INFO (already shrunk); adds to the counters. */
int as_rules_i_discover(const as_opinfo *info, const char *key, as_rule_set **out, as_err *err);
/** Add to the process counters. */
void as_rules_i_count(long candidates, long kernel_runs);
/** The cache key of INFO (malloc'ed). */
char *as_rules_i_key(const as_opinfo *info);

#endif /* AS_RULES_H */
