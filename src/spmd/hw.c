/* hw.c -- built-in hardware profiles and the key=value profile file format.
 *
 * DESIGN: every field of as_hw is described once in hw_keys[] (key, kind,
 * offset, unit); the file parser, the required-key check, `hw show` and the
 * JSON writer are all driven by that table, so a new field is one line.
 * A file is parsed in two passes: the first splits lines into (key, value)
 * and reports syntax errors, unknown and duplicate keys; then the base
 * profile (if any) is copied and the values are applied in file order.
 * DistIR parameters not set explicitly are derived afterwards, so a file
 * that overrides hbm_bandwidth also moves distir.dram_bandwidth.
 *
 * Built-in numbers come from vendor datasheets; each carries its source.
 * Link bandwidths are per device and per direction (half the "bidirectional"
 * NVLink figure); latencies are NCCL's per-step ring latencies for the
 * Simple protocol (src/graph/tuning.cc, hwLat[...][RING][SIMPLE]:
 * NVLink 3.4 us, PCIe 5.7 us, network 14 us).
 */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "hw.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

/* Device memory is the total the driver reports (nvidia-smi's memory.total, NVML's
 * nvmlDeviceGetMemoryInfo), not the marketing "GB": an A10 "24 GB" is 23028 MiB and an
 * H100 "80GB" 81559 MiB.  A training process cannot put tensors in all of it: the CUDA
 * context with the framework's kernels takes several hundred MiB as soon as a process
 * touches the device (PyTorch: 781 MB in nvidia-smi before any tensor,
 * github.com/pytorch/pytorch/issues/34323), NCCL its per-peer buffers (NCCL_BUFFSIZE,
 * 4 MiB per channel), cuBLAS/cuDNN their workspaces, and the caching allocator leaves
 * fragments.  RESERVED is that share, 1 GiB on every built-in profile; the usable budget
 * is memory - reserved_memory (as_hw_usable_memory). */
#define RESERVED (1.0 * GIB)

/* Launch overhead charged per kernel: CUDA launch-to-start latency is a few
 * microseconds on all four GPUs (e.g. SuperBench's kernel-launch benchmark
 * reports ~2-5 us); 5 us also covers the host-side dispatch of frameworks. */
#define KERNEL_OVERHEAD 5e-6
#define NCCL_LAT_NVLINK 3.4e-6 /* NCCL tuning.cc hwLat NVLINK / Ring / Simple */
#define NCCL_LAT_PCI 5.7e-6    /* NCCL tuning.cc hwLat PCI / Ring / Simple */
#define NCCL_LAT_NET 14e-6     /* NCCL tuning.cc hwLat NET / Ring / Simple */

/* Built-in profiles, sorted by name.  DistIR fields are 0 here (derived). */
static const as_hw hw_builtin[] = {
    {
        .name = "a10-pcie",
        .desc = "4x A10 24GB PCIe per node, PCIe 4.0 x16, 100 Gb/s network per node",
        /* NVIDIA A10 datasheet: FP32 31.2 TF, TF32 62.5 TF, BF16/FP16 125 TF, INT8 250 TOPS
         * (tensor core, dense; the datasheet's 2x figures are with sparsity). */
        .peak_flops[AS_DT_F32] = 31.2e12,
        .peak_flops_tf32 = 62.5e12,
        .peak_flops[AS_DT_F16] = 125e12,
        .peak_flops[AS_DT_BF16] = 125e12,
        .peak_flops[AS_DT_I8] = 250e12,
        /* GA102 runs FP64 at 1/64 of the FP32 rate (NVIDIA Ampere GA102 whitepaper). */
        .peak_flops[AS_DT_F64] = 31.2e12 / 64,
        .hbm_bandwidth = 600e9,   /* A10 datasheet: 24 GB GDDR6, 600 GB/s */
        /* "24 GB" GDDR6 = 24146608128 B = 23028 MiB as the driver reports it (NVML total,
         * github.com/mayooot/detect-gpu/issues/3; nvidia-smi 23028MiB,
         * github.com/modal-labs/modal-client/pull/2797). */
        .memory = 23028 * MIB,
        .reserved_memory = RESERVED,
        .kernel_overhead = KERNEL_OVERHEAD,
        .devices_per_node = 4,    /* a common 4-GPU A10 server (no NVLink on A10) */
        .intra_node_bandwidth = 32e9, /* PCIe 4.0 x16: 64 GB/s bidirectional, 32 per direction */
        .intra_node_latency = NCCL_LAT_PCI,
        /* Assumption (no reference node design): one 100 Gb/s NIC per node shared by
         * 4 GPUs = 12.5 GB/s / 4 per device. */
        .inter_node_bandwidth = 12.5e9 / 4,
        .inter_node_latency = NCCL_LAT_NET,
        .intra_node_link = "PCIe 4.0 x16",
        .inter_node_link = "1x 100 Gb/s Ethernet",
    },
    {
        .name = "a100-dgx",
        .desc = "DGX A100: 8x A100 SXM4 80GB, NVSwitch (NVLink3), 8x HDR InfiniBand",
        /* A100 SXM 80GB datasheet: 312 TFLOPS bf16/fp16 dense tensor core, 19.5 fp32
         * (156 TF32), 19.5 FP64 tensor core, 624 INT8 TOPS. */
        .peak_flops[AS_DT_F32] = 19.5e12,
        .peak_flops_tf32 = 156e12,
        .peak_flops[AS_DT_F16] = 312e12,
        .peak_flops[AS_DT_BF16] = 312e12,
        .peak_flops[AS_DT_F64] = 19.5e12,
        .peak_flops[AS_DT_I8] = 624e12,
        .hbm_bandwidth = 2039e9,  /* A100 80GB SXM datasheet: HBM2e 2,039 GB/s */
        /* nvidia-smi: 81920MiB (github.com/modal-labs/modal-client/pull/2797) = 80 GiB. */
        .memory = 81920 * MIB,
        .reserved_memory = RESERVED,
        .kernel_overhead = KERNEL_OVERHEAD,
        .devices_per_node = 8,    /* DGX A100 */
        .intra_node_bandwidth = 300e9, /* NVLink3 600 GB/s bidirectional per GPU */
        .intra_node_latency = NCCL_LAT_NVLINK,
        .inter_node_bandwidth = 25e9, /* DGX A100: 8x 200 Gb/s HDR InfiniBand, one per GPU */
        .inter_node_latency = NCCL_LAT_NET,
        .intra_node_link = "NVSwitch (NVLink3)",
        .inter_node_link = "8x 200 Gb/s HDR InfiniBand",
    },
    {
        .name = "h100-dgx",
        .desc = "DGX H100: 8x H100 SXM5 80GB, NVSwitch (NVLink4), 8x NDR InfiniBand",
        /* H100 SXM datasheet: FP32 67 TF, TF32 494.5 TF, BF16/FP16 989.5 TF, INT8 1979 TOPS
         * (tensor core, dense = half the "with sparsity" figures), FP64 tensor core 67 TF. */
        .peak_flops[AS_DT_F32] = 67e12,
        .peak_flops_tf32 = 494.5e12,
        .peak_flops[AS_DT_F16] = 989.5e12,
        .peak_flops[AS_DT_BF16] = 989.5e12,
        .peak_flops[AS_DT_F64] = 67e12,
        .peak_flops[AS_DT_I8] = 1979e12,
        .hbm_bandwidth = 3.35e12, /* H100 SXM datasheet: HBM3 3.35 TB/s */
        /* "80GB" HBM3: nvidia-smi 81559MiB (github.com/NVIDIA/nccl/issues/1264,
         * github.com/modal-labs/modal-client/pull/2797), 361 MiB under 80 GiB. */
        .memory = 81559 * MIB,
        .reserved_memory = RESERVED,
        .kernel_overhead = KERNEL_OVERHEAD,
        .devices_per_node = 8,    /* DGX H100 */
        .intra_node_bandwidth = 450e9, /* NVLink4 900 GB/s bidirectional per GPU */
        .intra_node_latency = NCCL_LAT_NVLINK,
        .inter_node_bandwidth = 50e9, /* DGX H100: 8x 400 Gb/s ConnectX-7 (NDR), one per GPU */
        .inter_node_latency = NCCL_LAT_NET,
        .intra_node_link = "NVSwitch (NVLink4)",
        .inter_node_link = "8x 400 Gb/s NDR InfiniBand",
    },
    {
        .name = "v100-dgx2",
        .desc = "DGX-2: 16x V100 SXM3 32GB, NVSwitch (NVLink2), 8x EDR InfiniBand",
        /* V100 SXM datasheet: FP64 7.8 TF, FP32 15.7 TF, tensor (fp16) 125 TF; DGX-2
         * datasheet: 2 PFLOPS = 16 x 125.  Volta has no bf16 or int8 tensor cores: bf16
         * falls back to the f32 rate. */
        .peak_flops[AS_DT_F32] = 15.7e12,
        .peak_flops[AS_DT_F16] = 125e12,
        .peak_flops[AS_DT_F64] = 7.8e12,
        .hbm_bandwidth = 900e9,   /* V100 datasheet: HBM2 900 GB/s */
        /* "32GB" HBM2: nvidia-smi on a V100-SXM3-32GB (driver 470) prints 32510MiB; PyTorch
         * reports "31.74 GiB total capacity" (github.com/liucongg/ChatGLM-Finetuning/issues/73).
         * (Newer drivers print 32768MiB in nvidia-smi; PyTorch's total_memory stays near
         * 32500 MiB, e.g. "Tesla V100-SXM2-32GB, 32494MiB" in a YOLOv5 log.) */
        .memory = 32510 * MIB,
        .reserved_memory = RESERVED,
        .kernel_overhead = KERNEL_OVERHEAD,
        .devices_per_node = 16,   /* DGX-2: 16 GPUs on 12 NVSwitches */
        .intra_node_bandwidth = 150e9, /* 6 NVLink2 links x 25 GB/s per direction */
        .intra_node_latency = NCCL_LAT_NVLINK,
        /* DGX-2 datasheet: 8x 100 Gb/s EDR InfiniBand = 100 GB/s per node, 16 GPUs. */
        .inter_node_bandwidth = 100e9 / 16,
        .inter_node_latency = NCCL_LAT_NET,
        .intra_node_link = "NVSwitch (NVLink2)",
        .inter_node_link = "8x 100 Gb/s EDR InfiniBand",
    },
};

#define HW_NBUILTIN ((int)(sizeof hw_builtin / sizeof hw_builtin[0]))

/* Field kinds of the profile file. */
enum hw_kind {
    HW_NAME,   /* profile name: letters, digits, '.', '_', '-' */
    HW_STR,    /* free text to the end of the line */
    HW_POS,    /* number > 0 */
    HW_NONNEG, /* number >= 0 */
    HW_BYTES,  /* number > 0 with an optional KB/MB/GB/TB or KiB/MiB/GiB/TiB suffix */
    HW_BYTES0, /* the same, >= 0 */
    HW_COUNT,  /* integer >= 1 */
    HW_BASE    /* name of a built-in profile to start from */
};

#define HW_REQ 0x1u    /* required in a file without base */
#define HW_DERIV 0x2u  /* derived when not set */

struct hw_key {
    const char *key;
    enum hw_kind kind;
    size_t off;       /* offset in as_hw (unused for HW_BASE) */
    size_t len;       /* buffer size for strings */
    unsigned flags;   /* HW_REQ, HW_DERIV */
    const char *unit; /* for hw show */
};

#define F(m) offsetof(as_hw, m)
static const struct hw_key hw_keys[] = {
    {"base", HW_BASE, 0, 0, 0, ""},
    {"name", HW_NAME, F(name), sizeof(((as_hw *)0)->name), HW_REQ, ""},
    {"desc", HW_STR, F(desc), sizeof(((as_hw *)0)->desc), 0, ""},
    {"peak_flops.f32", HW_POS, F(peak_flops[AS_DT_F32]), 0, HW_REQ, "FLOP/s"},
    {"peak_flops.tf32", HW_POS, F(peak_flops_tf32), 0, 0, "FLOP/s"},
    {"peak_flops.f16", HW_POS, F(peak_flops[AS_DT_F16]), 0, 0, "FLOP/s"},
    {"peak_flops.bf16", HW_POS, F(peak_flops[AS_DT_BF16]), 0, 0, "FLOP/s"},
    {"peak_flops.f64", HW_POS, F(peak_flops[AS_DT_F64]), 0, 0, "FLOP/s"},
    {"peak_flops.int8", HW_POS, F(peak_flops[AS_DT_I8]), 0, 0, "OP/s"},
    {"hbm_bandwidth", HW_POS, F(hbm_bandwidth), 0, HW_REQ, "B/s"},
    {"memory", HW_BYTES, F(memory), 0, HW_REQ, "B"},
    {"reserved_memory", HW_BYTES0, F(reserved_memory), 0, 0, "B"},
    {"kernel_overhead", HW_NONNEG, F(kernel_overhead), 0, HW_REQ, "s"},
    {"devices_per_node", HW_COUNT, F(devices_per_node), 0, HW_REQ, ""},
    {"intra_node_bandwidth", HW_POS, F(intra_node_bandwidth), 0, HW_REQ, "B/s"},
    {"intra_node_latency", HW_NONNEG, F(intra_node_latency), 0, HW_REQ, "s"},
    {"inter_node_bandwidth", HW_POS, F(inter_node_bandwidth), 0, HW_REQ, "B/s"},
    {"inter_node_latency", HW_NONNEG, F(inter_node_latency), 0, HW_REQ, "s"},
    {"intra_node_link", HW_STR, F(intra_node_link), sizeof(((as_hw *)0)->intra_node_link), 0, ""},
    {"inter_node_link", HW_STR, F(inter_node_link), sizeof(((as_hw *)0)->inter_node_link), 0, ""},
    {"distir.throughput", HW_POS, F(distir_throughput), 0, HW_DERIV, "FLOP/s"},
    {"distir.dram_bandwidth", HW_POS, F(distir_dram_bandwidth), 0, HW_DERIV, "B/s"},
    {"distir.overhead", HW_NONNEG, F(distir_overhead), 0, HW_DERIV, "s"},
    {"distir.link_bandwidth", HW_POS, F(distir_link_bandwidth), 0, HW_DERIV, "B/s"},
    {"distir.inter_link_bandwidth", HW_POS, F(distir_inter_link_bandwidth), 0, HW_DERIV, "B/s"},
};
#undef F
#define HW_NKEYS ((int)(sizeof hw_keys / sizeof hw_keys[0]))

/* Built-in profiles. */

int
as_hw_builtin_count(void)
{
    return HW_NBUILTIN;
}

void
as_hw_builtin(int i, as_hw *out)
{
    *out = hw_builtin[i];
    as_hw_derive(out);
}

static const as_hw *
hw_builtin_find(const char *name)
{
    int i;

    for (i = 0; i < HW_NBUILTIN; i++)
        if (strcmp(hw_builtin[i].name, name) == 0)
            return &hw_builtin[i];
    return NULL;
}

int
as_hw_find_builtin(const char *name, as_hw *out)
{
    const as_hw *b = hw_builtin_find(name);

    if (b == NULL)
        return 0;
    *out = *b;
    as_hw_derive(out);
    return 1;
}

/* "a10-pcie, a100-dgx, ..." into BUF. */
static const char *
hw_known(char *buf, size_t n)
{
    size_t off = 0;
    int i;

    buf[0] = '\0';
    for (i = 0; i < HW_NBUILTIN && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s", i ? ", " : "", hw_builtin[i].name);
    return buf;
}

void
as_hw_derive(as_hw *hw)
{
    if (hw->distir_throughput == 0)
        hw->distir_throughput = hw->peak_flops[AS_DT_F32];
    if (hw->distir_dram_bandwidth == 0)
        hw->distir_dram_bandwidth = hw->hbm_bandwidth;
    if (hw->distir_overhead == 0)
        hw->distir_overhead = hw->kernel_overhead;
    if (hw->distir_link_bandwidth == 0)
        hw->distir_link_bandwidth = hw->intra_node_bandwidth;
    if (hw->distir_inter_link_bandwidth == 0)
        hw->distir_inter_link_bandwidth = hw->inter_node_bandwidth;
}

/* Parsing. */

/* One "key = value" line of a file. */
struct hw_entry {
    int key;          /* index in hw_keys */
    const char *val;  /* NUL-terminated, trimmed, in the line buffer */
    int line, col;    /* position of the value (1-based) */
    int kcol;         /* column of the key */
};

static int
hw_key_find(const char *key)
{
    int i;

    for (i = 0; i < HW_NKEYS; i++)
        if (strcmp(hw_keys[i].key, key) == 0)
            return i;
    return -1;
}

/* Parse a plain decimal number (no hex, inf or nan). */
static int
hw_number(const char *s, double *v, const char **end)
{
    const char *p = s;
    char *e;

    if (*p == '+' || *p == '-')
        p++;
    if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
        return 0;
    *v = strtod(s, &e);
    if (e == s || !isfinite(*v))
        return 0;
    *end = e;
    return 1;
}

/* Byte size: number with optional suffix; returns 0 on a bad suffix. */
static int
hw_bytes(const char *s, double *v)
{
    static const struct {
        const char *suf;
        double mul;
    } sufs[] = {{"", 1},       {"B", 1},          {"KB", 1e3},       {"MB", 1e6},
                {"GB", 1e9},   {"TB", 1e12},      {"KiB", 1024.0},   {"MiB", 1048576.0},
                {"GiB", GIB},  {"TiB", GIB * 1024}};
    const char *e;
    size_t i;

    if (!hw_number(s, v, &e))
        return 0;
    while (*e == ' ' || *e == '\t')
        e++;
    for (i = 0; i < sizeof sufs / sizeof sufs[0]; i++)
        if (strcasecmp(e, sufs[i].suf) == 0) {
            *v *= sufs[i].mul;
            return 1;
        }
    return 0;
}

static int
hw_valid_name(const char *s)
{
    size_t i;

    for (i = 0; s[i] != '\0'; i++)
        if (!(isalnum((unsigned char)s[i]) || strchr("._-+", s[i]) != NULL))
            return 0;
    return i > 0 && i < AS_HW_NAME_MAX;
}

/* Store entry E into HW; errors at E's position. */
static int
hw_apply(as_hw *hw, const struct hw_entry *e, const char *path, as_err *err)
{
    const struct hw_key *k = &hw_keys[e->key];
    char *field = (char *)hw + k->off;
    const char *end;
    double v;

    switch (k->kind) {
    case HW_BASE:
        return AS_OK; /* applied before the others */
    case HW_NAME:
        if (!hw_valid_name(e->val))
            return as_errf(err, AS_EPARSE,
                           "%s:%d:%d: bad name '%s' (letters, digits, '.', '_', '-', at most %d)",
                           path, e->line, e->col, e->val, AS_HW_NAME_MAX - 1);
        /* fall through */
    case HW_STR:
        if (strlen(e->val) >= k->len)
            return as_errf(err, AS_EPARSE, "%s:%d:%d: value of '%s' is longer than %zu bytes",
                           path, e->line, e->col, k->key, k->len - 1);
        memcpy(field, e->val, strlen(e->val) + 1);
        return AS_OK;
    case HW_BYTES:
    case HW_BYTES0:
        if (!hw_bytes(e->val, &v))
            return as_errf(err, AS_EPARSE,
                           "%s:%d:%d: bad size '%s' for '%s' (a number, optionally with "
                           "KB/MB/GB/TB or KiB/MiB/GiB/TiB)",
                           path, e->line, e->col, e->val, k->key);
        break;
    default:
        if (!hw_number(e->val, &v, &end) || *end != '\0')
            return as_errf(err, AS_EPARSE, "%s:%d:%d: bad number '%s' for '%s'", path, e->line,
                           e->col, e->val, k->key);
        break;
    }
    if ((k->kind == HW_NONNEG || k->kind == HW_BYTES0) && v < 0)
        return as_errf(err, AS_EPARSE, "%s:%d:%d: '%s' must be >= 0 (got %s)", path, e->line,
                       e->col, k->key, e->val);
    if (k->kind != HW_NONNEG && k->kind != HW_BYTES0 && v <= 0)
        return as_errf(err, AS_EPARSE, "%s:%d:%d: '%s' must be > 0 (got %s)", path, e->line,
                       e->col, k->key, e->val);
    /* Rates, sizes and times in a range that keeps every cost finite. */
    if ((k->kind == HW_POS || k->kind == HW_BYTES) && (v < 1 || v > 1e24))
        return as_errf(err, AS_EPARSE, "%s:%d:%d: '%s' must be between 1 and 1e24 %s (got %s)",
                       path, e->line, e->col, k->key, k->unit, e->val);
    if (k->kind == HW_BYTES0 && v > 1e24)
        return as_errf(err, AS_EPARSE, "%s:%d:%d: '%s' must be at most 1e24 B (got %s)", path,
                       e->line, e->col, k->key, e->val);
    if (k->kind == HW_NONNEG && v > 1e3)
        return as_errf(err, AS_EPARSE, "%s:%d:%d: '%s' must be at most 1000 s (got %s)", path,
                       e->line, e->col, k->key, e->val);
    if (k->kind == HW_COUNT) {
        if (v != floor(v) || v > 65536)
            return as_errf(err, AS_EPARSE, "%s:%d:%d: '%s' must be an integer in 1..65536 (got %s)",
                           path, e->line, e->col, k->key, e->val);
        *(int *)(void *)field = (int)v;
    } else {
        *(double *)(void *)field = v;
    }
    return AS_OK;
}

/* Split one line (modified in place) into *E; 0 if blank.  Errors are positioned. */
static int
hw_split(char *line, int lineno, const char *path, struct hw_entry *e, int *nonblank, as_err *err)
{
    char *p, *eq, *kend, *v, *vend;
    int key;

    *nonblank = 0;
    if ((p = strchr(line, '#')) != NULL)
        *p = '\0';
    for (p = line; *p == ' ' || *p == '\t' || *p == '\r'; p++)
        ;
    if (*p == '\0')
        return AS_OK;
    *nonblank = 1;
    if ((eq = strchr(p, '=')) == NULL)
        return as_errf(err, AS_EPARSE, "%s:%d:%d: expected 'key = value'", path, lineno,
                       (int)(p - line) + 1);
    for (kend = eq; kend > p && (kend[-1] == ' ' || kend[-1] == '\t'); kend--)
        ;
    if (kend == p)
        return as_errf(err, AS_EPARSE, "%s:%d:%d: missing key before '='", path, lineno,
                       (int)(eq - line) + 1);
    *kend = '\0';
    if ((key = hw_key_find(p)) < 0)
        return as_errf(err, AS_EPARSE, "%s:%d:%d: unknown key '%s'", path, lineno,
                       (int)(p - line) + 1, p);
    for (v = eq + 1; *v == ' ' || *v == '\t'; v++)
        ;
    for (vend = v + strlen(v); vend > v && isspace((unsigned char)vend[-1]); vend--)
        ;
    *vend = '\0';
    if (*v == '\0')
        return as_errf(err, AS_EPARSE, "%s:%d:%d: missing value for '%s'", path, lineno,
                       (int)(eq - line) + 2, p);
    e->key = key;
    e->val = v;
    e->line = lineno;
    e->col = (int)(v - line) + 1;
    e->kcol = (int)(p - line) + 1;
    return AS_OK;
}

/* Check required keys of a file without base; HAVE[i] says key i was given (an error points
 * at EOF_LINE, the end of the file). */
static int
hw_check_required(const char *path, int eof_line, const unsigned char *have, int has_base,
                  as_err *err)
{
    char miss[400];
    size_t off = 0;
    int i, n = 0;

    miss[0] = '\0';
    for (i = 0; i < HW_NKEYS; i++) {
        if (have[i] || !(hw_keys[i].flags & HW_REQ))
            continue;
        if (has_base && strcmp(hw_keys[i].key, "name") != 0)
            continue;
        if (off < sizeof miss)
            off += (size_t)snprintf(miss + off, sizeof miss - off, "%s'%s'", n ? ", " : "",
                                    hw_keys[i].key);
        n++;
    }
    if (n > 0)
        return as_errf(err, AS_EPARSE, "%s:%d:1: missing required key%s %s", path, eof_line,
                       n > 1 ? "s" : "", miss);
    return AS_OK;
}

int
as_hw_parse(const char *path, const char *text, as_hw *out, as_err *err)
{
    char *buf = as_xstrdup(text), *line, *next, known[200];
    AS_VEC(struct hw_entry) ents = {0};
    unsigned char have[HW_NKEYS];
    int firstline[HW_NKEYS];
    struct hw_entry e;
    int lineno = 0, nonblank, base = -1, rc = AS_OK, i;
    as_hw hw;

    memset(have, 0, sizeof have);
    memset(&hw, 0, sizeof hw);
    for (line = buf; line != NULL; line = next) {
        if ((next = strchr(line, '\n')) != NULL)
            *next++ = '\0';
        lineno++;
        AS_CHECK_GOTO(rc, hw_split(line, lineno, path, &e, &nonblank, err), out);
        if (!nonblank)
            continue;
        if (have[e.key]) {
            rc = as_errf(err, AS_EPARSE, "%s:%d:%d: duplicate key '%s' (first set on line %d)",
                         path, lineno, e.kcol, hw_keys[e.key].key, firstline[e.key]);
            goto out;
        }
        have[e.key] = 1;
        firstline[e.key] = lineno;
        if (hw_keys[e.key].kind == HW_BASE)
            base = (int)ents.n;
        AS_VEC_PUSH(&ents, e);
    }
    if (base >= 0) {
        const as_hw *b = hw_builtin_find(ents.v[base].val);

        if (b == NULL) {
            rc = as_errf(err, AS_EPARSE, "%s:%d:%d: unknown base profile '%s' (known: %s)", path,
                         ents.v[base].line, ents.v[base].col, ents.v[base].val,
                         hw_known(known, sizeof known));
            goto out;
        }
        hw = *b; /* raw: DistIR fields are 0 and get derived below */
    }
    for (i = 0; i < (int)ents.n; i++)
        AS_CHECK_GOTO(rc, hw_apply(&hw, &ents.v[i], path, err), out);
    AS_CHECK_GOTO(rc, hw_check_required(path, lineno, have, base >= 0, err), out);
    if (hw.reserved_memory >= hw.memory) {
        /* Point at whichever of the two the file set last. */
        int k = hw_key_find("reserved_memory"), m = hw_key_find("memory"), at = -1;
        char b1[32], b2[32];

        for (i = 0; i < (int)ents.n; i++)
            if (ents.v[i].key == k || ents.v[i].key == m)
                at = i;
        rc = as_errf(err, AS_EPARSE,
                     "%s:%d:%d: reserved_memory (%s) must be less than memory (%s)", path,
                     at >= 0 ? ents.v[at].line : lineno, at >= 0 ? ents.v[at].col : 1,
                     as_fmt_bytes(hw.reserved_memory, b1, sizeof b1),
                     as_fmt_bytes(hw.memory, b2, sizeof b2));
        goto out;
    }
    as_hw_derive(&hw);
    *out = hw;
out:
    AS_VEC_FREE(&ents);
    free(buf);
    return rc;
}

int
as_hw_read(const char *path, as_hw *out, as_err *err)
{
    char *text = NULL;
    size_t len;
    int rc;

    AS_CHECK(as_read_file(path, &text, &len, err));
    if (strlen(text) != len)
        rc = as_err_nul(err, path, text, "not a text profile");
    else
        rc = as_hw_parse(path, text, out, err);
    if (rc == AS_OK && strlen(path) < sizeof out->file)
        strcpy(out->file, path);
    free(text);
    return rc;
}

/* Levenshtein distance of A and B, case-insensitive (99 for long names). */
static int
hw_dist(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b), i, j, row[64];

    if (la >= 63 || lb >= 63)
        return 99;
    for (j = 0; j <= lb; j++)
        row[j] = j;
    for (i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = i;
        for (j = 1; j <= lb; j++) {
            int cur = row[j], same = tolower((unsigned char)a[i - 1]) ==
                                     tolower((unsigned char)b[j - 1]);
            int best = prev + !same;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

/* The built-in profile closest to NAME (a typo: distance <= 3, or NAME a prefix), or NULL. */
static const char *
hw_nearest(const char *name)
{
    int i, best = 4, d;
    const char *near = NULL;

    for (i = 0; i < HW_NBUILTIN; i++) {
        d = hw_dist(name, hw_builtin[i].name);
        if (strncmp(hw_builtin[i].name, name, strlen(name)) == 0 && strlen(name) >= 2)
            d = d < 1 ? d : 1;
        if (d < best) {
            best = d;
            near = hw_builtin[i].name;
        }
    }
    return near;
}

int
as_hw_load(const char *name_or_path, as_hw *out, as_err *err)
{
    char known[200];

    if (as_hw_find_builtin(name_or_path, out))
        return AS_OK;
    if (strchr(name_or_path, '/') != NULL || access(name_or_path, F_OK) == 0)
        return as_hw_read(name_or_path, out, err);
    {
        const char *near = hw_nearest(name_or_path);
        if (near != NULL)
            return as_errf(err, AS_EUSAGE, "unknown hardware profile '%s' (did you mean '%s'? "
                           "known: %s)", name_or_path, near, hw_known(known, sizeof known));
    }
    return as_errf(err, AS_EUSAGE, "unknown hardware profile '%s' (known: %s)", name_or_path,
                   hw_known(known, sizeof known));
}

/* Queries. */

double
as_hw_peak_flops(const as_hw *hw, as_dtype t)
{
    if ((int)t >= 0 && t < AS_DT_COUNT && hw->peak_flops[t] > 0)
        return hw->peak_flops[t];
    return hw->peak_flops[AS_DT_F32];
}

double
as_hw_usable_memory(const as_hw *hw)
{
    return hw->memory - hw->reserved_memory;
}

double
as_hw_link_bandwidth(const as_hw *hw, int inter)
{
    return inter ? hw->inter_node_bandwidth : hw->intra_node_bandwidth;
}

double
as_hw_link_latency(const as_hw *hw, int inter)
{
    return inter ? hw->inter_node_latency : hw->intra_node_latency;
}

/* Output. */

void
as_hw_list(FILE *fp)
{
    char mem[32], use[32], bf[32];
    as_hw hw;
    int i;

    fprintf(fp, "%-10s %8s %10s %10s %12s  %s\n", "name", "dev/node", "memory", "usable",
            "peak bf16", "links (intra / inter)");
    for (i = 0; i < HW_NBUILTIN; i++) {
        as_hw_builtin(i, &hw);
        fprintf(fp, "%-10s %8d %10s %10s %10sF/s  %s / %s\n", hw.name, hw.devices_per_node,
                as_fmt_bytes(hw.memory, mem, sizeof mem),
                as_fmt_bytes(as_hw_usable_memory(&hw), use, sizeof use),
                as_fmt_si(as_hw_peak_flops(&hw, AS_DT_BF16), bf, sizeof bf), hw.intra_node_link,
                hw.inter_node_link);
    }
}

/* Human form of field K's value V ("19.5 TFLOP/s", "80.00 GiB"). */
static const char *
hw_human(const struct hw_key *k, double v, char *buf, size_t n)
{
    char t[32];

    if (k->kind == HW_BYTES || k->kind == HW_BYTES0)
        return as_fmt_bytes(v, buf, n);
    if (strcmp(k->unit, "s") == 0)
        snprintf(buf, n, "%g us", v * 1e6);
    else
        snprintf(buf, n, "%s%s", as_fmt_si(v, t, sizeof t), k->unit);
    return buf;
}

/* Shortest %g form of V that reads back exactly ("1.95e+13", "3.4e-06"). */
static const char *
hw_fmt_exact(double v, char *buf, size_t n)
{
    int prec;

    for (prec = 1; prec < 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return buf;
    }
    snprintf(buf, n, "%.17g", v);
    return buf;
}

void
as_hw_print(const as_hw *hw, FILE *fp)
{
    const char *field;
    char h[48], num[40];
    int i;

    fprintf(fp, "# hardware profile '%s' (key = value; units: FLOP/s, bytes/s, bytes, s)\n",
            hw->name);
    for (i = 0; i < HW_NKEYS; i++) {
        const struct hw_key *k = &hw_keys[i];

        field = (const char *)hw + k->off;
        switch (k->kind) {
        case HW_BASE:
            break;
        case HW_NAME:
        case HW_STR:
            if (field[0] != '\0')
                fprintf(fp, "%-28s = %s\n", k->key, field);
            break;
        case HW_COUNT:
            fprintf(fp, "%-28s = %d\n", k->key, *(const int *)(const void *)field);
            break;
        default: {
            double v = *(const double *)(const void *)field;

            if (v == 0 && k->kind == HW_POS)
                break; /* optional and not given */
            if ((k->kind == HW_BYTES || k->kind == HW_BYTES0) && v == floor(v) && v < 1e18)
                snprintf(num, sizeof num, "%.0f", v); /* whole bytes read better */
            else
                hw_fmt_exact(v, num, sizeof num);
            fprintf(fp, "%-28s = %-14s # %s%s\n", k->key, num,
                    hw_human(k, v, h, sizeof h), (k->flags & HW_DERIV) ? " (distir model)" : "");
            if (k->kind == HW_BYTES0 && strcmp(k->key, "reserved_memory") == 0)
                fprintf(fp, "# usable: memory - reserved_memory = %s\n",
                        as_fmt_bytes(as_hw_usable_memory(hw), h, sizeof h));
        }
        }
    }
}

/* Bytes as a JSON integer, or a real past int64 (a file may set up to 1e24 B). */
static json_t *
hw_json_bytes(double v)
{
    return v == floor(v) && fabs(v) < 9e18 ? json_integer((json_int_t)v) : json_real(v);
}

json_t *
as_hw_to_json(const as_hw *hw)
{
    json_t *o = json_object(), *peak = json_object(), *distir = json_object(), *dst;
    const char *field, *dot;
    int i;

    for (i = 0; i < HW_NKEYS; i++) {
        const struct hw_key *k = &hw_keys[i];
        const char *key = k->key;

        if (k->kind == HW_BASE)
            continue;
        field = (const char *)hw + k->off;
        dst = o;
        if ((dot = strchr(key, '.')) != NULL) {
            dst = strncmp(key, "peak_flops", 10) == 0 ? peak : distir;
            key = dot + 1;
        }
        if (k->kind == HW_NAME || k->kind == HW_STR)
            json_object_set_new(dst, key, json_string(field));
        else if (k->kind == HW_COUNT)
            json_object_set_new(dst, key, json_integer(*(const int *)(const void *)field));
        else if (k->kind == HW_BYTES || k->kind == HW_BYTES0)
            json_object_set_new(dst, key, hw_json_bytes(*(const double *)(const void *)field));
        else if (*(const double *)(const void *)field != 0 || k->kind != HW_POS)
            json_object_set_new(dst, key, json_real(*(const double *)(const void *)field));
        if (strcmp(k->key, "reserved_memory") == 0) /* derived, for readers */
            json_object_set_new(o, "usable_memory", hw_json_bytes(as_hw_usable_memory(hw)));
        if (strcmp(k->key, "desc") == 0)
            json_object_set_new(o, "peak_flops", peak); /* keep the file's key order */
    }
    json_object_set_new(o, "distir", distir);
    return o;
}
