#!/bin/sh
# distir_grid.sh -- issue 14 item 8, DistIR's space: the D/T/P/K grid of a 16-layer,
# 8192-wide MLP (preset mlp-1b, fp32) at batch 256, 1024 and 8192 on 1, 2, 4 and 8
# devices, in one `autoshard sweep`, under --cost-model distir with DistIR's simulator
# constants (14 TFLOP/s, 900 GB/s DRAM, 10 us kernel overhead, 25 Gbit/s between any
# two devices).  D is a data axis, T a Megatron tensor axis (--role data,tensor), P the
# stages, K the microbatches: powers of two, K = 1 when P = 1, batch / D / K >= 1, and
# K <= 64 (240 configurations; DistIR's own grid search takes 156 s for its 239).
#
#   bench/distir_grid.sh [TOP]   (AUTOSHARD=path/to/autoshard, default ./autoshard)
#
# Prints the CPU time and max RSS (/usr/bin/time), then the TOP (default 5) best
# configurations of each batch.  Add -j 2 by JOBS=2.
set -u
A=${AUTOSHARD:-./autoshard}
TOP=${1:-5}
T=$(mktemp -d "${TMPDIR:-/tmp}/distir.XXXXXX")
trap 'rm -rf "$T"' EXIT

"$A" hw show a100-dgx | sed -e 's/^name .*/name = distir-grid/' \
    -e 's/^desc .*/desc = DistIR grid_search constants: 14 TFLOP\/s, 900 GB\/s, 10 us, 25 Gbit\/s/' \
    -e 's/^peak_flops.f32 .*/peak_flops.f32 = 1.4e13/' \
    -e 's/^hbm_bandwidth .*/hbm_bandwidth = 9e11/' \
    -e 's/^kernel_overhead .*/kernel_overhead = 1e-5/' \
    -e 's/^intra_node_bandwidth .*/intra_node_bandwidth = 3.125e9/' \
    -e 's/^inter_node_bandwidth .*/inter_node_bandwidth = 3.125e9/' \
    -e 's/^distir.throughput .*/distir.throughput = 1.4e13/' \
    -e 's/^distir.dram_bandwidth .*/distir.dram_bandwidth = 9e11/' \
    -e 's/^distir.overhead .*/distir.overhead = 1e-5/' \
    -e 's/^distir.link_bandwidth .*/distir.link_bandwidth = 3.125e9/' \
    -e 's/^distir.inter_link_bandwidth .*/distir.inter_link_bandwidth = 3.125e9/' >"$T/distir.hw"

set -- sweep mlp-1b --hw "$T/distir.hw" --cost-model distir --role data,tensor \
    --devices 1,2,4,8 --batch 256,1024,8192 --microbatches 1,2,4,8,16,32,64 \
    -q --top "$TOP" -o "$T/grid.jsonl" -j "${JOBS:-1}"
echo "autoshard $*"
/usr/bin/time -f "time: %U s user + %S s system, %e s wall, max RSS %M KiB" "$A" "$@"
echo "JSONL lines (header + configurations): $(wc -l <"$T/grid.jsonl")"
