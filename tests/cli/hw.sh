#!/bin/sh
# hw.sh -- `autoshard hw`: list, show (text and JSON), profile files and
# their errors, meshes on nodes and collective costs per axis.
. "${top_srcdir:-.}/tests/cli/lib.sh"
D="$top_srcdir/tests/data/hw"

as hw list
n=$(grep -c -E '^(a10-pcie|a100-dgx|h100-dgx|v100-dgx2) ' "$T/out")
ok $([ $rc -eq 0 ] && [ "$n" -eq 4 ]; echo $?) "hw list: one line per built-in profile"
ok $(grep -q '^a100-dgx  *8  *80.00 GiB  *79.00 GiB  *312 TF/s  NVSwitch' "$T/out"; echo $?) \
    "hw list: a100-dgx line has devices/node, memory, usable memory, bf16 peak, links"
ok $(grep -q '^a10-pcie  *4  *22.49 GiB  *21.49 GiB ' "$T/out" &&
     grep -q '^h100-dgx  *8  *79.65 GiB  *78.65 GiB ' "$T/out" &&
     grep -q '^v100-dgx2  *16  *31.75 GiB  *30.75 GiB ' "$T/out"; echo $?) \
    "hw list: memory as the driver reports it (A10 23028 MiB, H100 81559, V100 32510), 1 GiB reserved"

as hw show a100-dgx
ok $([ $rc -eq 0 ] && grep -q '^peak_flops.bf16  *= 3.12e+14 ' "$T/out" &&
     grep -q '^memory  *= 85899345920 ' "$T/out" && grep -q '^devices_per_node  *= 8$' "$T/out"
     echo $?) "hw show a100-dgx: fields with values"
ok $(grep -q 'intra_node_bandwidth *= 3e+11 *# 300 GB/s' "$T/out"; echo $?) \
    "hw show: units in comments"
ok $(grep -q '^reserved_memory  *= 1073741824  *# 1.00 GiB$' "$T/out" &&
     grep -q '^# usable: memory - reserved_memory = 79.00 GiB$' "$T/out"; echo $?) \
    "hw show: reserved_memory and the usable figure"
cp "$T/out" "$T/a100.hw"
as hw show "$T/a100.hw"
ok $([ $rc -eq 0 ] && cmp -s "$T/out" "$T/a100.hw"; echo $?) \
    "hw show output reads back as a profile"

as hw show a100-dgx --json
ok $([ $rc -eq 0 ] && grep -q '"name": "a100-dgx"' "$T/out" && grep -q '"bf16": 3.12e14' "$T/out" &&
     grep -q '"memory": 85899345920' "$T/out" && grep -q '"reserved_memory": 1073741824' "$T/out" &&
     grep -q '"usable_memory": 84825604096' "$T/out"; echo $?) "hw show --json"
if command -v python3 >/dev/null 2>&1; then
    py='import json,sys; d=json.load(open(sys.argv[1]))
sys.exit(d["devices_per_node"] != 8 or d["peak_flops"]["bf16"] != 312e12
         or d["distir"]["dram_bandwidth"] != 2.039e12)'
    ok $(python3 -c "$py" "$T/out"; echo $?) \
        "hw show --json is valid JSON with nested peak_flops and distir"
fi

as hw show "$D/my-gpu.hw"
ok $([ $rc -eq 0 ] && grep -q '^name *= my-gpu$' "$T/out" &&
     grep -q '^distir.dram_bandwidth *= 2e+12 ' "$T/out"; echo $?) \
    "hw show FILE (derived distir fields)"
as hw show "$D/a100-slow-ib.hw"
ok $([ $rc -eq 0 ] && grep -q '^inter_node_bandwidth *= 1.25e+10 ' "$T/out" &&
     grep -q '^peak_flops.bf16 *= 3.12e+14 ' "$T/out" && grep -q '# 40.00 GiB' "$T/out"
     echo $?) "hw show FILE with base: overrides and inherited fields"

as hw show "$D/bad-noeq.hw"
expect_fail 2 "bad-noeq.hw:3:1: expected 'key = value'" "missing '=' names FILE:LINE:COL"
as hw show "$D/bad-key.hw"
expect_fail 2 "bad-key.hw:3:3: unknown key 'colour'" "unknown key"
as hw show "$D/bad-number.hw"
expect_fail 2 "bad-number.hw:3:17: bad number 'fast' for 'hbm_bandwidth'" "bad number"
as hw show "$D/bad-zero.hw"
expect_fail 2 "bad-zero.hw:3:24: 'intra_node_bandwidth' must be > 0 (got 0)" "zero bandwidth"
as hw show "$D/bad-negative.hw"
expect_fail 2 "bad-negative.hw:3:22: 'inter_node_latency' must be >= 0 (got -5e-6)" \
    "negative latency"
as hw show "$D/bad-duplicate.hw"
expect_fail 2 "bad-duplicate.hw:4:1: duplicate key 'memory' (first set on line 3)" "duplicate key"
as hw show "$D/bad-missing.hw"
expect_fail 2 "bad-missing.hw:[0-9]*:1: missing required keys 'devices_per_node', 'intra_node_bandwidth'" \
    "missing required keys"
as hw show "$D/bad-base.hw"
expect_fail 2 "bad-base.hw:1:8: unknown base profile 'b200'" "unknown base profile"
as hw show "$D/bad-memory.hw"
expect_fail 2 "bad-memory.hw:3:10: bad size '80 gigs' for 'memory'" "bad memory suffix"
printf 'base = a100-dgx\nname = small\nmemory = 512MiB\n' >"$T/small.hw"
as hw show "$T/small.hw"
expect_fail 2 "small.hw:3:10: reserved_memory (1.00 GiB) must be less than memory (512.00 MiB)" \
    "memory at or under the inherited reserved_memory"
printf 'base = a100-dgx\nname = small\nmemory = 512MiB\nreserved_memory = 0\n' >"$T/small.hw"
as hw show "$T/small.hw"
ok $([ $rc -eq 0 ] && grep -q '^reserved_memory *= 0 ' "$T/out"; echo $?) "reserved_memory = 0 is allowed"
printf 'base = a100-dgx\nname = small\nreserved_memory = -1\n' >"$T/small.hw"
as hw show "$T/small.hw"
expect_fail 2 "small.hw:3:19: 'reserved_memory' must be >= 0 (got -1)" "negative reserved_memory"
as hw show "$D/my-gpu.hw"
ok $([ $rc -eq 0 ] && grep -q '^reserved_memory *= 0 ' "$T/out"; echo $?) \
    "a file without base reserves nothing unless it says so"
printf 'base = a100-dgx\nname = big\nmemory = 1e24\n' >"$T/big.hw"
as hw show "$T/big.hw" --json
ok $([ $rc -eq 0 ] && grep -q '"memory": 1e24,' "$T/out" && grep -q '"usable_memory": 1e24,' "$T/out"
     echo $?) "hw show --json: a memory past int64 is a JSON real (no overflowing cast)"
as hw show b200
expect_fail 2 \
    "^autoshard: unknown hardware profile 'b200' (known: a10-pcie, a100-dgx, h100-dgx, v100-dgx2)$"\
    "unknown profile name"
as hw show "$T/nonexistent/x.hw"
expect_fail 1 "x.hw: No such file" "missing profile file is an I/O error (exit 1)"

as hw mesh dp=2,tp=8
ok $([ $rc -eq 0 ] && grep -q '^0 *dp *2 *8 *inter$' "$T/out" &&
     grep -q '^1 *tp *8 *1 *intra$' "$T/out"; echo $?) \
    "hw mesh dp=2,tp=8 on a100-dgx: dp inter, tp intra"
ok $(grep -q '^dp *0.040028 ' "$T/out"; echo $?) \
    "hw mesh: all-reduce of 1e9 B over dp = 2*1/2*1e9/25e9 + 2*14e-6"
as hw mesh 4x4 --hw a100-dgx
ok $([ $rc -eq 0 ] && grep -q '^0 *x *4 *4 *inter$' "$T/out"; echo $?) \
    "4x4 on a100-dgx: axis 0 inter"
as hw mesh 2x2 --hw a10-pcie
n=$(grep -c 'intra$' "$T/out")
ok $([ $rc -eq 0 ] && [ "$n" -eq 2 ]; echo $?) "2x2 on a10-pcie: all intra"
as hw mesh 2x4 --hw "$D/my-gpu.hw" --cost-model alpa --alpha 1,1 --beta 1,0.1 --bytes 1000
ok $([ $rc -eq 0 ] && grep -q '^x *1001.01 *501.1 *501.001 *251.001 *1001$' "$T/out" &&
     grep -q 'replicated-parameter penalty: 3$' "$T/out"; echo $?) "alpa costs and penalty"
as hw mesh 2x4 --cost-model distir --bytes 1e9
ok $([ $rc -eq 0 ] && grep -q '^y *0.005 *0.00125 *0.0025 *0.0025 *0.00333333$' "$T/out"; echo $?) \
    "distir costs over the intra-node axis (all-gather on one shard, as DistIR)"

as hw mesh 2x0
expect_fail 2 "^autoshard: mesh '2x0': axis 2 has size 0 (must be >= 1)$" "mesh 2x0"
as hw mesh 2xx4
expect_fail 2 "mesh '2xx4': expected a number at column 3" "mesh 2xx4"
as hw mesh dp=2,dp=4
expect_fail 2 "mesh 'dp=2,dp=4': duplicate axis name 'dp'" "duplicate axis names"
as hw mesh 2x2x2x2x2
expect_fail 2 "5 axes (at most 4)" "more than 4 axes"
as hw mesh 1024x1024
expect_fail 2 "1048576 devices (at most 65536)" "too many devices"
as hw mesh 12
expect_fail 2 "12 devices span more than one node but are not a multiple of 8" \
    "device count not a multiple of devices per node"
as hw mesh 2x4 --cost-model lp
expect_fail 2 "unknown cost model 'lp' (known: alpa, distir, roofline)" "unknown cost model"
as hw mesh 2x4 --cost-model alpa --alpha 1
expect_fail 2 "cost model 'alpa': 'alpha' has 1 value but the mesh has 2 axes" "alpha count"
as hw mesh 2x4 --set tf32=3
expect_fail 2 "'tf32' must be 0 or 1" "bad roofline parameter"
as hw frob
ok $([ $rc -eq 2 ] && grep -q "unknown action 'frob'" "$T/err"; echo $?) "unknown action"
# A profile file that keeps a built-in's name: plans record the file, and
# simulate (without --hw) costs them with it, not with the built-in.
as hw show a100-dgx
sed -e 's/^memory .*/memory = 16777216/' -e 's/^reserved_memory .*/reserved_memory = 0/' \
    "$T/out" > "$T/small.hw"
as gen mlp-1b --layers 2 --hidden 1024 --batch 64 --train -o "$T/m.asg"
as solve "$T/m.asg" --mesh 2 --hw "$T/small.hw" -o "$T/m.json"
ok $([ $rc -eq 0 ] && grep -q '"hardware": "a100-dgx"' "$T/m.json" &&
     grep -q "\"hardware_file\": \"$T/small.hw\"" "$T/m.json"; echo $?) \
    "a plan records the profile file it was costed with"
as simulate "$T/m.asg" --plan "$T/m.json" --json
ok $([ $rc -eq 3 ] && grep -q '"oom": true' "$T/out" && grep -q 'capacity 16.00 MiB' "$T/err"
     echo $?) \
    "simulate --plan without --hw uses the plan's profile file (16 MiB: OOM, exit 3)"
as simulate "$T/m.asg" --plan "$T/m.json" --hw a100-dgx --json
ok $([ $rc -eq 0 ] && ! grep -q '"oom": true' "$T/out"; echo $?) \
    "simulate --hw overrides the plan's profile file"
rm -f "$T/small.hw"
as simulate "$T/m.asg" --plan "$T/m.json"
ok $([ $rc -ne 0 ] && [ $(wc -l < "$T/err") -eq 1 ] &&
     grep -q "^autoshard: the plan was costed with hardware profile $T/small.hw (give --hw): " "$T/err"
     echo $?) "a plan whose profile file is gone: one line naming it"

as hw show
ok $([ $rc -eq 2 ] && grep -q "^usage: autoshard hw" "$T/err"; echo $?) "show without a profile"
as hw --help
ok $([ $rc -eq 0 ] && grep -q 'docs/hw.md' "$T/out"; echo $?) "hw --help"
done_testing
