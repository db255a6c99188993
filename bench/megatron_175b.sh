#!/bin/sh
# megatron_175b.sh -- issue 14 item 8, Megatron-LM (Narayanan et al. 2021, Table 1):
# GPT-3 175B on 1024 A100s (a100-dgx: nodes of 8, 80 GiB of which 79 usable: 1 GiB
# reserved for the CUDA context and workspaces, docs/hw.md), global batch 1536; Megatron
# runs t = 8 tensor x p = 16 pipeline x d = 8 data, microbatch size 1, full activation
# recomputation, at ~140 TFLOP/s per GPU (138 in Table 1; their count includes the
# recomputed forward).
#
# Megatron's question as one sweep: D-way data x T-way tensor meshes (--role data,tensor)
# with tensor parallelism inside a node (--tp-max 8 bounds the tensor axis only),
# microbatch size 1 (--microbatch-size 1: K = 1536 / D), full recomputation, and the
# pipeline degrees Megatron can run: P dividing the 96 layers with the model state fitting
# 79 GiB -- 16 bytes per parameter (bf16 weights and gradients, fp32 master and Adam
# moments) x 174.6e9 / (8 x P) <= 79 GiB (84.8 GB) needs P >= 5 (P = 4: 87 GB), and 96 / P whole:
# P in {8, 16, 32} (P = 64 splits 96 layers unevenly).  12 configurations, 6 of them
# pruned by the sweep's memory lower bound (roles-aware since the second round of
# 2026-11-27 b): t = 1, t <= 2 at P = 16, t <= 4 at P = 8.  The same bound prunes all
# 11 configurations with P <= 4 too (`--pipeline 1,2,4` costs ~35 s CPU, all pruned).
#
#   bench/megatron_175b.sh [TIME_LIMIT]   (default 30 s per configuration;
#                          AUTOSHARD=path/to/autoshard, default ./autoshard; JOBS=2: -j 2;
#                          KEEP=FILE keeps the JSONL)
#
# Prints the CPU and wall time, the table of every configuration, where t=8,p=16,d=8
# ranks, and its simulated TFLOP/s per GPU: the model FLOPs of the step (no
# recomputation) and x 4/3 (the recomputed forward counted, as Megatron counts).
set -u
A=${AUTOSHARD:-./autoshard}
TL=${1:-30}
T=$(mktemp -d "${TMPDIR:-/tmp}/megatron.XXXXXX")
trap '[ -n "${KEEP:-}" ] && cp "$T/m.jsonl" "$KEEP"; rm -rf "$T"' EXIT

set -- sweep gpt3-175b --devices 1024 --hw a100-dgx --batch 1536 --role data,tensor \
    --tp-max 8 --microbatch-size 1 --recompute full --pipeline 8,16,32 --time-limit "$TL" \
    -q --top 12 -o "$T/m.jsonl" ${JOBS:+-j "$JOBS"}
echo "autoshard $*"
/usr/bin/time -f "time: %U s user + %S s system, %e s wall, max RSS %M KiB" "$A" "$@"
echo
echo "every configuration (rank by throughput; t = tensor, d = data; status, gap, TFLOP/s per GPU):"
jq -rs '.[1:] | sort_by(-(if .status == "ok" or .status == "limit" then .throughput else -1 end)) |
    to_entries[] | .value as $v | ($v.mesh | split("x")) as $m |
    "\(.key + 1)\tt=\($m[1]) p=\($v.pipeline) d=\($m[0]) K=\($v.microbatches)\t\($v.status)\t" +
    "\($v.throughput // "-" | tostring | .[0:7]) samples/s\tgap \(if $v.gap == null then "-" else ($v.gap * 100 * 1000 | round / 1000 | tostring) + " %" end)\t" +
    "\($v.tflops_per_device // 0 | . * 10 | round / 10) TFLOP/s\t\($v.error // $v.limit // "")"' "$T/m.jsonl"
echo
jq -rs '.[1:] | [.[] | select(.status == "ok" or .status == "limit")] | sort_by(-.throughput) as $r |
    ($r | map(.config) | index("p=16,k=192,mesh=8x8,recompute=full,solver=glpk")) as $i |
    if $i == null then "t=8,p=16,d=8: no plan (\(.[] | select(.config == "p=16,k=192,mesh=8x8,recompute=full,solver=glpk") | .error // .status))"
    else $r[$i] as $m |
    "t=8,p=16,d=8 ranks \($i + 1) of \($r | length) with a plan (best: \($r[0].config), \($r[0].throughput * 1000 | round / 1000) samples/s)\n" +
    "  simulated \($m.time * 1000 | round / 1000) s per iteration, \($m.throughput * 1000 | round / 1000) samples/s, status \($m.status), gap \($m.gap * 100 * 1000 | round / 1000) %, peak \($m.peak_memory / 1073741824 * 100 | round / 100) GiB\n" +
    "  \($m.tflops_per_device * 10 | round / 10) TFLOP/s per GPU (model FLOPs), \($m.tflops_per_device * 4 / 3 * 10 | round / 10) counting the recomputed forward; Megatron-LM measured ~140 (138)"
    end' "$T/m.jsonl"
