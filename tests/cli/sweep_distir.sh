#!/bin/sh
# sweep_distir.sh -- DistIR's grid (issue 14 item 8): the 16-layer, 8192-wide MLP
# (mlp-1b) under --cost-model distir with DistIR's constants, D data x T tensor x P
# stages x K microbatches on 1, 2 and 4 devices at batch 256 in one command; the
# enumeration follows DistIR's rules (K = 1 when P = 1, batch / D / K >= 1), the data
# parallel time is compute / D plus the ring all-reduce of the gradients, and the best
# configuration has no data parallelism (25 Gbit/s makes the 4.3 GB all-reduce cost
# more than a whole single-device step).  bench/distir_grid.sh runs the full grid.
. "${top_srcdir:-.}/tests/cli/lib.sh"

command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
close() { # close A B TOL: |A - B| <= TOL * |B|
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN{d=a-b; if(d<0)d=-d; if(b<0)b=-b; exit !(d<=t*b)}'; }

# DistIR's simulator constants: 14 TFLOP/s, 900 GB/s DRAM, 10 us per kernel, 25 Gbit/s links
as hw show a100-dgx
sed -e 's/^name .*/name = distir-grid/' \
    -e 's/^distir.throughput .*/distir.throughput = 1.4e13/' \
    -e 's/^distir.dram_bandwidth .*/distir.dram_bandwidth = 9e11/' \
    -e 's/^distir.overhead .*/distir.overhead = 1e-5/' \
    -e 's/^distir.link_bandwidth .*/distir.link_bandwidth = 3.125e9/' \
    -e 's/^distir.inter_link_bandwidth .*/distir.inter_link_bandwidth = 3.125e9/' \
    "$T/out" >"$T/distir.hw"
K=1,2,4,8,16,32,64,128,256
G="mlp-1b --hw $T/distir.hw --cost-model distir --role data,tensor --microbatches $K"

# ---- enumeration by hand (powers of two; K in 1..256; batch 256) ----
# n=1: 1x1 (1).  n=2: P=1 1x2 2x1 (2) + P=2 1x1 x 9 K (9) = 11.
# n=4: P=1 1x4 2x2 4x1 (3) + P=2 1x2 x 9 K + 2x1 x 8 K (256/2/256 < 1 is out) (17)
#      + P=4 1x1 x 9 K (9) = 29.   1 + 11 + 29 = 41
as sweep $G --devices 1,2,4 --batch 256 --list
check "--devices 1,2,4: 41 configurations" test "$(grep -c . "$T/out")" = 41
check "keys carry the device count" grep -qx 'n=4,p=2,k=128,mesh=1x2,recompute=none,solver=glpk' "$T/out"
check "batch / D / K < 1 is left out (D = 2, K = 256)" \
    test "$(grep -c 'n=4,p=2,k=256,mesh=2x1' "$T/out")" = 0
check "K = 1 when P = 1" test "$(grep 'p=1,' "$T/out" | grep -vc 'k=1,')" = 0
as sweep $G --devices 1,2 --batch 256,1024 --list
check "--batch 256,1024: 12 per batch, keys b=B,n=N,..." \
    test "$(grep -c '^b=256,n=' "$T/out") $(grep -c '^b=1024,n=' "$T/out")" = "12 12"

# ---- the sweep ----
as sweep $G --devices 1,2,4 --batch 256 -q -o "$T/s.jsonl" --top 3
ok $rc "the grid at batch 256 on 1, 2, 4 devices"
check "41 run, none failed" grep -q '^sweep: 41 configurations (0 done before), 41 run now, 0 pruned by the memory lower bound, 0 OOM, 0 infeasible, 0 failed' "$T/out"
check "the JSONL names the cost model and the device list" \
    test "$(head -1 "$T/s.jsonl" | jq -c '[.sweep.cost_model, .sweep.devices_list]')" = '["distir",[1,2,4]]'
check "every configuration ok, each line gives its device count" \
    test "$(jq -s '[.[1:][] | select(.status == "ok" and .devices >= 1)] | length' "$T/s.jsonl")" = 41
t1=$(jq -r 'select(.config == "n=1,p=1,k=1,mesh=1x1,recompute=none,solver=glpk") | .time' "$T/s.jsonl")
t4=$(jq -r 'select(.config == "n=4,p=1,k=1,mesh=4x1,recompute=none,solver=glpk") | .time' "$T/s.jsonl")
# 4-way data: a quarter of the step plus the all-reduce of 16 x (8192^2 + 8192) f32
# gradients, 2 (n-1)/n S / bw (DistIR's model: no latency term)
ar=$(awk 'BEGIN{s=16*(8192*8192+8192)*4; print 2*3/4*s/3.125e9}')
exp=$(awk -v a="$t1" -v r="$ar" 'BEGIN{print a/4 + r}')
check "4-way data: t1/4 + all-reduce = $exp s (got $t4)" close "$t4" "$exp" 0.03
best=$(jq -rs '[.[1:][] | select(.status == "ok")] | max_by(.throughput) | .config' "$T/s.jsonl")
check "the best ($best) uses 4 devices and no data axis (D = 1)" \
    sh -c "echo '$best' | grep -q '^n=4,.*mesh=1x'"
bt=$(jq -rs '[.[1:][] | select(.status == "ok")] | max_by(.throughput) | .time' "$T/s.jsonl")
check "the best beats one device by more than 1.5x" awk -v a="$bt" -v b="$t1" 'BEGIN{exit !(b > 1.5*a)}'
check "the best is pipeline x tensor: p=2, k=4, T=2 (bubble 1/4 vs a 2-way all-reduce per layer)" \
    test "$best" = "n=4,p=2,k=4,mesh=1x2,recompute=none,solver=glpk"

# ---- a batch list into one JSONL, resumed ----
R="mlp-1b --hw $T/distir.hw --cost-model distir --role data,tensor --microbatches 1,2 --devices 1,2 --batch 256,1024 -q -o $T/b.jsonl"
as sweep $R
check "--batch 256,1024: one sweep per batch (5 + 5 configurations)" \
    test "$(grep -c '^sweep: 5 configurations (0 done before), 5 run now' "$T/out")" = 2
head -n 7 "$T/b.jsonl" >"$T/b2.jsonl" && mv "$T/b2.jsonl" "$T/b.jsonl"
as sweep $R
check "resumed: batch 256 done, batch 1024 keeps 1 and runs 4" \
    test "$(grep -c '^sweep: 5 configurations (5 done before), 0 run now' "$T/out") $(grep -c '^sweep: 5 configurations (1 done before), 4 run now' "$T/out")" = "1 1"
check "11 lines (header + 10), none twice" \
    test "$(jq -r '.config // "h"' "$T/b.jsonl" | sort -u | wc -l) $(wc -l <"$T/b.jsonl" | tr -d ' ')" = "11 11"

# ---- bad input ----
as sweep mlp-1b --devices 2 --cost-model nosuch
expect_fail 2 "cost model" "an unknown cost model: one line, exit 2"
as gen mlp --layers 2 --hidden 64 --batch 8 --train -o "$T/g.asg"
as sweep "$T/g.asg" --devices 2 --batch 8,16
expect_fail 2 "needs a PRESET" "a --batch list on a graph file: one line, exit 2"
done_testing
