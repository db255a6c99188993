#!/bin/sh
# distsim_bert.sh -- issue 14 item 8, DistSim's finding: BERT-exLarge (preset
# bert-exlarge, 48 layers, hidden 2560, seq 512, bf16-mixed) on 16 A10 in 2 nodes of 8
# (the built-in a10-pcie profile with devices_per_node = 8): DistSim ranks 2-way data x
# 8-way pipeline first and 16-way tensor parallelism near last.  Sweeps D data x T
# tensor (--role data,tensor) x P stages, each configuration within --time-limit, and
# prints the table of every configuration.
#
#   bench/distsim_bert.sh [BATCH [TIME_LIMIT [RECOMPUTE]]]   (default 64 60 none;
#                          AUTOSHARD=path/to/autoshard, default ./autoshard)
#
# No recomputation by default: DistSim profiles and predicts Megatron-LM runs, and
# Megatron-LM recomputes only when asked (--checkpoint-activations, later
# --recompute-activations; its BERT example scripts do not pass it), and the part of
# DistSim's paper we could read (its abstract) does not say it turned recomputation on.
# `bench/distsim_bert.sh 64 60 full` runs the other setting.
# The device memory is the profile's usable figure: 23028 MiB as the driver reports an
# A10 less 1 GiB reserved (CUDA context, NCCL buffers, cuBLAS/cuDNN workspaces,
# allocator), 21.49 GiB; MEMORY=22GiB sets another usable figure (reserved_memory = 0).
# 15 configurations; each takes seconds to TIME_LIMIT.  Measured (load 8, 2 cores): 48.6 s
# user, 305 s wall; 2-way data x 8 stages first (58.36 samples/s), 16-way tensor last of
# the 9 with a plan (OOM, 2.32), 6 pruned (docs/sweep.md).  KEEP=FILE keeps the JSONL.
# MICRO=4,8,16,32,64 PIPE=4,8,16 sweeps K too (default K = 2P) over those P.
set -u
A=${AUTOSHARD:-./autoshard}
B=${1:-64}
TL=${2:-60}
R=${3:-none}
T=$(mktemp -d "${TMPDIR:-/tmp}/distsim.XXXXXX")
trap 'rm -rf "$T"' EXIT

"$A" hw show a10-pcie | sed -e 's/^name .*/name = a10x8/' \
    -e 's/^desc .*/desc = 2 nodes of 8x A10 24GB PCIe (DistSim), 25 Gb\/s per device between nodes/' \
    -e 's/^devices_per_node .*/devices_per_node = 8/' >"$T/a10x8.hw"
if [ -n "${MEMORY:-}" ]; then
    sed -e "s/^memory .*/memory = $MEMORY/" -e "s/^reserved_memory .*/reserved_memory = 0/" \
        "$T/a10x8.hw" >"$T/m.hw" && mv "$T/m.hw" "$T/a10x8.hw"
fi

set -- sweep bert-exlarge --devices 16 --batch "$B" --hw "$T/a10x8.hw" --role data,tensor \
    --recompute "$R" --time-limit "$TL" -q --top 15 -o "$T/bert.jsonl" \
    ${MICRO:+--microbatches "$MICRO"} ${PIPE:+--pipeline "$PIPE"}
echo "autoshard $*"
/usr/bin/time -f "time: %U s user + %S s system, %e s wall, max RSS %M KiB" "$A" "$@"
echo "every configuration (rank by throughput; status, error):"
jq -rs '.[1:] | sort_by(-(.throughput // 0)) | to_entries[] |
    "\(.key + 1)\t\(.value.config)\t\(.value.status)\t\(.value.throughput // "-")\t\(.value.error // .value.lower_bound // "")"' \
    "$T/bert.jsonl"
[ -n "${KEEP:-}" ] && cp "$T/bert.jsonl" "$KEEP"
exit 0
