/* hw.h -- hardware profiles: what one device and its links can do.
 *
 * A profile gives, per device, peak FLOP/s per element type, HBM bandwidth,
 * memory capacity and kernel launch overhead; per node, the number of
 * devices; and the bandwidth and latency of intra-node and inter-node links
 * (per device, per direction).  It also carries the parameters of DistIR's
 * cost model, derived from the same numbers unless a file sets them.
 *
 * Profiles are built in (v100-dgx2, a100-dgx, h100-dgx, a10-pcie, from
 * vendor datasheets; see hw.c) or read from a key=value file documented in
 * docs/hw.md.  as_hw is a plain record copied by value: the caller owns it.
 */
#ifndef AS_HW_H
#define AS_HW_H

#include <stdio.h>

#include "../autoshard.h"
#include "../graph/graph.h"

#define AS_HW_NAME_MAX 64 /* longest profile name, bytes with the NUL */

typedef struct as_hw {
    char name[AS_HW_NAME_MAX]; /**< "a100-dgx" */
    char desc[160];            /**< one line: "8x A100 SXM4 80GB, NVSwitch, 8x HDR IB" */
    /**
     * The profile file it was read from, as given; "" for a built-in.  Plans
     * record it, so that a plan costed with a file is simulated with that file
     * even when the file's name is a built-in's.
     */
    char file[512];
    /**
     * Peak FLOP/s per element type, indexed by as_dtype.  0 = not given:
     * as_hw_peak_flops() then falls back to the f32 figure.  For f16, bf16
     * and int8 these are dense tensor-core figures; f32 is the CUDA-core
     * (non-tensor-core) figure; f64 is the FP64 tensor-core figure where the
     * device has one.
     */
    double peak_flops[AS_DT_COUNT];
    double peak_flops_tf32;       /**< FLOP/s of f32 matmuls on TF32 tensor cores, 0 = none */
    double hbm_bandwidth;         /**< bytes/s of device memory */
    double memory;                /**< bytes of device memory, as the driver reports it */
    /**
     * Bytes of that memory a training process cannot use for tensors: the CUDA
     * context, NCCL buffers, cuBLAS/cuDNN workspaces and allocator slack.  The
     * usable budget is memory - reserved_memory (as_hw_usable_memory).
     */
    double reserved_memory;
    double kernel_overhead;       /**< seconds added to every kernel */
    int devices_per_node;         /**< devices sharing one node's fast links */
    double intra_node_bandwidth;  /**< bytes/s per device per direction inside a node */
    double intra_node_latency;    /**< seconds per step inside a node */
    double inter_node_bandwidth;  /**< bytes/s per device per direction between nodes */
    double inter_node_latency;    /**< seconds per step between nodes */
    char intra_node_link[48];     /**< "NVSwitch (NVLink3)", for display */
    char inter_node_link[48];     /**< "8x HDR InfiniBand", for display */
    /* DistIR's cost model (0 = derive; see as_hw_derive). */
    double distir_throughput;     /**< FLOP/s, default peak f32 */
    double distir_dram_bandwidth; /**< bytes/s, default hbm_bandwidth */
    double distir_overhead;       /**< seconds per kernel, default kernel_overhead */
    double distir_link_bandwidth; /**< bytes/s intra-node, default intra_node_bandwidth */
    double distir_inter_link_bandwidth; /**< bytes/s inter-node, default inter_node_bandwidth */
} as_hw;

/* Built-in profiles. */
/** Number of built-in profiles (sorted by name). */
int as_hw_builtin_count(void);
/** Copy built-in profile I (0 <= I < count) into *OUT, derived fields filled in. */
void as_hw_builtin(int i, as_hw *out);
/** Copy the built-in profile NAME into *OUT; returns 0 if there is none. */
int as_hw_find_builtin(const char *name, as_hw *out);

/* Loading. */
/**
 * Resolve a --hw argument: the name of a built-in profile, else the path of
 * a profile file.  An unknown name that is not an existing file is
 * AS_EUSAGE: "unknown hardware profile 'b200' (known: a10-pcie, ...)".
 */
int as_hw_load(const char *name_or_path, as_hw *out, as_err *err);
/** Read a profile file (AS_EIO if unreadable, AS_EPARSE if malformed). */
int as_hw_read(const char *path, as_hw *out, as_err *err);
/**
 * Parse profile TEXT (NUL-terminated; PATH names it in messages).  Errors
 * are AS_EPARSE "PATH:LINE:COL: ..." for a missing '=', an unknown key, a
 * bad number, a value that must be positive, a duplicate key or an unknown
 * base; "PATH: missing required key 'memory'" when a key is absent.  *OUT is
 * written only on success.
 */
int as_hw_parse(const char *path, const char *text, as_hw *out, as_err *err);
/** Fill the DistIR fields left at 0 from the other fields. */
void as_hw_derive(as_hw *hw);

/* Queries. */
/**
 * Peak FLOP/s for arithmetic in element type T: the profile's figure for T,
 * else (not given, or an integer type other than i8) the f32 figure.
 */
double as_hw_peak_flops(const as_hw *hw, as_dtype t);
/**
 * Bytes of device memory a plan may use: memory - reserved_memory.  The one
 * figure `--memory auto`, the sweep's pruning and the simulator's default OOM
 * capacity all use.
 */
double as_hw_usable_memory(const as_hw *hw);
/** Bandwidth (bytes/s) and latency (s) of link class INTER (0 intra, 1 inter). */
double as_hw_link_bandwidth(const as_hw *hw, int inter);
double as_hw_link_latency(const as_hw *hw, int inter);

/* Output. */
/** One line per built-in profile: name, devices/node, memory, peak bf16, links. */
void as_hw_list(FILE *fp);
/** Every field with units, one per line. */
void as_hw_print(const as_hw *hw, FILE *fp);
/**
 * Every field as a JSON object (jansson, new reference; the caller
 * json_decref()s it).  Keys are the profile-file keys; numbers in SI units.
 */
struct json_t *as_hw_to_json(const as_hw *hw);

#endif /* AS_HW_H */
