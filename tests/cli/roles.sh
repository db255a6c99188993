#!/bin/sh
# roles.sh -- axis roles (--role AXIS=data|tensor|auto) and ZeRO (--zero 1|2|3)
# in solve, simulate and sweep (issue 14 item 2; docs/strategies.md "Axis roles").
. "${top_srcdir:-.}/tests/cli/lib.sh"

# f32, so every byte count below is easy to check by hand: w1 and w2 are
# 256x1024 and 1024x256 floats, 1 MiB each; Adam keeps two states of each.
cp "$top_srcdir/tests/data/asg/mlp2_adam.asg" "$T/mlp.asg"
G="$T/mlp.asg"
M="--mesh dp=2,tp=2"

# strategy of op/tensor NAME in the last `solve --all` table
strat() { awk -v n="$1" '$1 == n { print $3 }' "$T/out"; }
spec() { jq -r --arg n "$1" '.tensors[] | select(.name == $n) | .spec' "$2"; }

# --- roles: D-way data x T-way Megatron ---
as solve "$G" $M --role dp=data,tp=tensor --all -o "$T/r.json"
ok $([ $rc -eq 0 ] && echo 0 || echo 1) "solve --role dp=data,tp=tensor runs"
ok $([ "$(strat h)" = "batch(dp)+column(tp)" ] && echo 0 || echo 1) \
    "first matmul: batch split on dp, Megatron column on tp (got $(strat h))"
ok $(strat p | grep -q '^batch(dp)+row(tp)' && echo 0 || echo 1) \
    "second matmul: batch split on dp, Megatron row on tp (got $(strat p))"
ok $([ "$(spec x "$T/r.json")" = "[dp,None]" ] && [ "$(spec w1 "$T/r.json")" = "[None,tp]" ] &&
     [ "$(spec w2 "$T/r.json")" = "[tp,None]" ] && echo 0 || echo 1) \
    "data split on dp, weights split on tp only"
# the weight gradients contract the batch: partial over dp, all-reduced there
ok $(strat d.h | grep -q '^row(dp)+column(tp)' && echo 0 || echo 1) \
    "weight gradient: batch contraction on dp (got $(strat d.h))"
# no parameter, state or gradient split on the data axis; no batch dim split on tp
ok $(jq -r '.tensors[] | select(.kind == "param" or .kind == "state") | .spec' "$T/r.json" |
     grep -q dp && echo 1 || echo 0) "no parameter or optimizer state split on dp"
ok $([ "$(jq -r .roles "$T/r.json")" = "dp=data,tp=tensor" ] && echo 0 || echo 1) \
    "the plan records the roles"
ok $(awk '$1 == "x" { print $2 }' "$T/out" | grep -qx input &&
     awk '$1 == "w1" { print $2 }' "$T/out" | grep -qx param && echo 0 || echo 1) \
    "the --all table labels the data input 'input' and a weight 'param'"
# without roles the ILP is free (and does not split the batch on dp here)
as solve "$G" $M --all
ok $([ $rc -eq 0 ] && [ "$(strat h)" != "batch(dp)+column(tp)" ] && echo 0 || echo 1) \
    "without --role the solver chooses otherwise (the roles filter something)"
# a positional list, one role per axis
as solve "$G" $M --role data,tensor --all
ok $([ $rc -eq 0 ] && [ "$(strat h)" = "batch(dp)+column(tp)" ] && echo 0 || echo 1) \
    "--role data,tensor: one role per axis in order"
# tensor everywhere: no batch split at all
as solve "$G" $M --role tensor,tensor -o "$T/t.json"
ok $([ $rc -eq 0 ] && [ "$(spec x "$T/t.json")" != "[dp,None]" ] &&
     ! jq -r '.tensors[] | select(.name == "x" or .name == "h") | .spec' "$T/t.json" |
       grep -q '^\[[a-z]' && echo 0 || echo 1) "tensor axes never split the batch dim"

# --- ZeRO: memory per device drops as computed by hand ---
# per device with tp=2: values 2 x 0.5 MiB, gradients 2 x 0.5 MiB, states 4 x 0.5 MiB
# = 4 MiB resident; ZeRO-1 halves the states over dp=2 (-1 MiB), ZeRO-2 also the
# gradients (-0.5 MiB), ZeRO-3 the values too (-0.5 MiB: 2 MiB resident), which
# it gathers whole (0.5 MiB each) before every op that reads them.
for z in 0 1 2 3; do
    as solve "$G" $M --role dp=data,tp=tensor --zero $z -o "$T/z$z.json"
    eval "obj$z=\$(awk '\$1 == \"objective\" { print \$2 }' \"\$T/out\")"
    eval "rows$z=\$(sed -n 's/.*ILP rows \\([0-9.]*\\) MiB.*/\\1/p' \"\$T/out\")"
    as simulate "$G" --plan "$T/z$z.json" --json
    eval "res$z=\$(jq '.per_device[0].resident' \"\$T/out\")"
    eval "time$z=\$(jq '.time' \"\$T/out\")"
    eval "peak$z=\$(jq '.per_device[0].peak_memory' \"\$T/out\")"
    as simulate "$G" --plan "$T/z$z.json" --json --no-overlap
    eval "serial$z=\$(jq '.time' \"\$T/out\")"
done
ok $([ "$res0" = 4194304 ] && [ "$res1" = 3145728 ] && [ "$res2" = 2621440 ] && echo 0 || echo 1) \
    "simulated resident bytes: 4, 3, 2.5 MiB for --zero 0, 1, 2 (got $res0 $res1 $res2)"
ok $(awk -v a="$rows0" -v b="$rows1" -v c="$rows2" \
     'BEGIN { exit !(a - b == 1 && b - c == 0.5) }' && echo 0 || echo 1) \
    "ILP memory rows drop by 1 and 0.5 MiB (got $rows0 $rows1 $rows2 MiB)"
ok $([ "$obj0" = "$obj1" ] && [ "$obj1" = "$obj2" ] && [ "$time0" = "$time1" ] &&
     [ "$time1" = "$time2" ] && echo 0 || echo 1) \
    "reduce-scatter + all-gather cost the all-reduce they replace (solve and simulate)"
ok $([ "$(jq -r .zero "$T/z2.json")" = 2 ] && echo 0 || echo 1) "the plan records --zero"

# --- ZeRO-3: parameters sharded too, gathered whole before each use ---
ok $([ "$res3" = 2097152 ] && echo 0 || echo 1) \
    "--zero 3: simulated resident 2 MiB (values, gradients, states all halved over dp; got $res3)"
ok $(awk -v r="$rows3" -v p="$peak3" 'BEGIN { d = r * 1048576 - p; if (d < 0) d = -d;
     exit !(p > 0 && d <= 0.01 * p) }' && echo 0 || echo 1) \
    "--zero 3: ILP rows = simulated peak within 1% (rows $rows3 MiB, peak $peak3 B)"
# the ILP's objective charges every gather, the reduce-scatters and the update on the shard
# exactly as the simulator runs them when nothing overlaps
for z in 0 2 3; do
    eval "o=\$obj$z s=\$serial$z"
    ok $(awk -v o="$o" -v s="$s" 'BEGIN { d = o - s; if (d < 0) d = -d; exit !(o > 0 && d <= 1e-6 * o) }' &&
         echo 0 || echo 1) "--zero $z: objective = simulated time without overlap ($o, $s)"
done
ok $([ "$(jq -r .zero "$T/z3.json")" = 3 ] && echo 0 || echo 1) "the plan records --zero 3"
as lower "$G" --plan "$T/z3.json"
cp "$T/out" "$T/z3.prog"
# w1 is read by h (forward) only, w2 by p (forward) and d.p (backward): three gathers of the
# 0.5 MiB tensor-parallel slice over dp, on the compute stream, each read by its op only
ok $([ "$(grep -c 'zero3.dp: all-gather group=0,2 bytes=524288 stream=compute' "$T/z3.prog")" -eq 3 ] &&
     [ "$(grep -c '^w2/zero3.dp' "$T/z3.prog")" -eq 2 ] && grep -q '^resident 0 w1 262144$' "$T/z3.prog" &&
     grep -q '^h: .*reads=x,w1/zg' "$T/z3.prog" && echo 0 || echo 1) \
    "--zero 3 lowers a 0.25 MiB shard and an all-gather before each forward and backward reader"
ok $([ "$(grep -c 'zero.dp: reduce-scatter group=0,2 bytes=524288' "$T/z3.prog")" -eq 2 ] &&
     ! grep -q 'zero.dp: all-gather' "$T/z3.prog" && ! grep -q 'all-reduce group=0,2' "$T/z3.prog" &&
     echo 0 || echo 1) "--zero 3: gradients reduce-scattered, nothing gathered after the update"
ok $(grep -q '^w1.new: compute .*in=f32\[128,512\],f32\[128,512\],f32\[128,512\]' "$T/z3.prog" &&
     echo 0 || echo 1) "--zero 3: the update runs on the 128x512 shard of the 256x512 slice"
# bytes each device sends over dp (ring: all-gather and reduce-scatter (n-1)/n S, all-reduce
# 2 (n-1)/n S): w2 moves 3 x its 0.5 MiB slice / 2 against 2 x without ZeRO; w1, gathered
# once, 2 x against 2 x; 1.25 MiB against 1 MiB in all
as lower "$G" --plan "$T/z0.json"
vol() { awk '/group=0,2 / { for (i = 1; i <= NF; i++) if ($i ~ /^bytes=/) b = substr($i, 7);
              f = $0 ~ /all-reduce/ ? 2 : 1; if (w == "" || $1 ~ ("^(" w ")/")) v += f * b / 2 }
         END { print v + 0 }' w="${2:-}" "$1"; }
# (w2's gradient is d.p.1)
ok $([ "$(vol "$T/z3.prog" 'w2|d\.p\.1')" = 786432 ] && [ "$(vol "$T/out" 'w2|d\.p\.1')" = 524288 ] &&
     [ "$(vol "$T/z3.prog")" = 1310720 ] && [ "$(vol "$T/out")" = 1048576 ] && echo 0 || echo 1) \
    "communication over dp: w2 3x its bytes under --zero 3 vs 2x all-reduced ($(vol "$T/z3.prog" 'w2|d\.p\.1'), $(vol "$T/out" 'w2|d\.p\.1')); in all $(vol "$T/z3.prog") vs $(vol "$T/out")"
# solve's summary counts the same: 3 gathers of 0.5 MiB and 2 reduce-scatters of 0.5 MiB over dp
# (+ 32 KiB each of the output's reduce-scatter / all-gather over tp), no all-reduce
as solve "$G" $M --role dp=data,tp=tensor --zero 3
ok $(grep -q '^  all-reduce *0 B$' "$T/out" && grep -q '^  all-gather *1.53 MiB$' "$T/out" &&
     grep -q '^  reduce-scatter *1.03 MiB$' "$T/out" && echo 0 || echo 1) \
    "solve --zero 3: bytes moved per step, gathers and reduce-scatters by hand"
# gpt2-small, 2 layers, bf16 on dp=4,tp=2: ZeRO-3 takes 3/4 of each device's tensor-parallel
# slice of the parameters off the resident bytes (3/8 of the parameters' bytes, the layer
# norms aside), and the peak goes down from --zero 2 to --zero 3
as gen gpt2-small --layers 2 --batch 16 --train -o "$T/g.asg"
pbytes=$(awk '$1 == "param" { s = $4; dt = s; sub(/\[.*/, "", dt); gsub(/.*\[|\].*/, "", s)
              n = split(s, d, ","); p = 1; for (i = 1; i <= n; i++) p *= d[i]
              b += p * (dt == "f32" ? 4 : 2) } END { printf "%d\n", b }' "$T/g.asg")
for z in 2 3; do
    as solve "$T/g.asg" --mesh dp=4,tp=2 --role dp=data,tp=tensor --zero $z --memory auto -o "$T/g$z.json"
    eval "grows$z=\$(sed -n 's/.*ILP rows \([0-9.]*\) GiB.*/\1/p' \"\$T/out\")"
    as simulate "$T/g.asg" --plan "$T/g$z.json" --json
    eval "gres$z=\$(jq '.per_device[0].resident' \"\$T/out\")"
    eval "gpeak$z=\$(jq '.per_device[0].peak_memory' \"\$T/out\")"
done
ok $(awk -v a="$gres2" -v b="$gres3" -v p="$pbytes" 'BEGIN { d = (a - b) - 3 / 8 * p; if (d < 0) d = -d
     exit !(p > 0 && d <= 0.01 * p * 3 / 8) }' && echo 0 || echo 1) \
    "gpt2-small --zero 3: resident down by 3/8 of the $pbytes parameter bytes ($gres2 -> $gres3)"
ok $(awk -v a="$gpeak2" -v b="$gpeak3" -v r="$grows3" 'BEGIN { d = r * 1073741824 - b; if (d < 0) d = -d
     exit !(b > 0 && b < a && d <= 0.01 * b + 0.005 * 1073741824) }' && echo 0 || echo 1) \
    "gpt2-small: simulated peak $gpeak2 -> $gpeak3 B from --zero 2 to 3, ILP rows $grows3 GiB within 1% (+ the printed rounding)"
as lower "$G" --plan "$T/z1.json"
ok $([ $rc -eq 0 ] && grep -q 'zero.dp: reduce-scatter group=0,2' "$T/out" &&
     grep -q 'zero.dp: all-gather group=0,2' "$T/out" && ! grep -q 'all-reduce group=0,2' "$T/out" &&
     echo 0 || echo 1) "ZeRO lowers the gradients' dp all-reduce as reduce-scatter + all-gather"
as lower "$G" --plan "$T/z0.json"
ok $([ $rc -eq 0 ] && grep -q 'all-reduce group=0,2' "$T/out" && echo 0 || echo 1) \
    "without ZeRO it is an all-reduce"

# --- bad input: one line, exit 2 ---
as solve "$G" $M --role dp=date
expect_fail 2 "unknown role 'date' for axis 'dp'" "unknown role"
ok $([ "$(wc -l <"$T/err")" -eq 1 ] && echo 0 || echo 1) "... on one line"
as solve "$G" $M --role pp=data
expect_fail 2 "mesh dp=2,tp=2 has no axis 'pp'" "unknown axis"
as solve "$G" $M --role dp=data,dp=tensor
expect_fail 2 "axis 'dp' given twice" "axis named twice"
as solve "$G" $M --role data
expect_fail 2 "1 roles for the 2 axes" "positional list of the wrong length"
as solve "$G" $M --zero 1
expect_fail 2 "needs a data axis" "--zero without a data axis"
as solve "$G" $M --role dp=data --zero 4
expect_fail 2 "--zero takes 0, 1, 2 or 3" "--zero 4"
jq '.roles = "dp=bogus"' "$T/z1.json" >"$T/bad.json"
as simulate "$G" --plan "$T/bad.json"
expect_fail 2 "unknown role 'bogus'" "a plan with a bad role is refused"

# --- sweep ---
as sweep "$G" --devices 4 --role data,tensor --list
ok $([ $rc -eq 0 ] && [ "$(grep -c 'mesh=' "$T/out")" -eq 3 ] && grep -q 'mesh=1x4,' "$T/out" &&
     grep -q 'mesh=4x1,' "$T/out" && echo 0 || echo 1) "sweep --role data,tensor: meshes 1x4, 2x2, 4x1"
as sweep "$G" --devices 4 --role data,tensr --list
expect_fail 2 "unknown role 'tensr'" "sweep: unknown role"
as sweep "$G" --devices 4 --zero 1 --list
expect_fail 2 "needs a data axis" "sweep: --zero without a data axis"
as sweep "$G" --devices 4 --role data,tensor --zero 1 -q -o "$T/s.jsonl"
ok $([ $rc -eq 0 ] && [ "$(grep -c '"status": *"ok"' "$T/s.jsonl")" -eq 3 ] && echo 0 || echo 1) \
    "sweep --role data,tensor --zero 1 solves and simulates 3 configurations"
# the 2x2 line is solve --role data,tensor --zero 1 on mesh 2x2 + simulate
as solve "$G" --mesh 2x2 --role data,tensor --zero 1 --memory auto -o "$T/s22.json"
as simulate "$G" --plan "$T/s22.json" --json
a=$(jq -c 'select(.config != null and (.config | contains("mesh=2x2,"))) | .time' "$T/s.jsonl")
b=$(jq -c .time "$T/out")
ok $(awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-9 * a) }' &&
     echo 0 || echo 1) "a sweep line equals solve + simulate by hand ($a, $b)"
# --zero 3 in a sweep: the 2x2 line is solve --zero 3 + simulate
as sweep "$G" --devices 4 --role data,tensor --zero 3 -q -o "$T/s3.jsonl"
as solve "$G" --mesh 2x2 --role data,tensor --zero 3 --memory auto -o "$T/s322.json"
as simulate "$G" --plan "$T/s322.json" --json
a=$(jq -c 'select(.config != null and (.config | contains("mesh=2x2,"))) | [.time, .peak_memory]' "$T/s3.jsonl")
b=$(jq -c '[.time, .per_device[0].peak_memory]' "$T/out")
ok $([ "$(grep -c '"status": *"ok"' "$T/s3.jsonl")" -eq 3 ] && [ "$(jq -r .zero "$T/s322.json")" = 3 ] &&
     awk -v a="$a" -v b="$b" 'BEGIN { gsub(/[][]/, "", a); gsub(/[][]/, "", b); split(a, x, ","); split(b, y, ",")
     d = x[1] - y[1]; if (d < 0) d = -d; exit !(x[1] > 0 && d <= 1e-9 * x[1] && x[2] == y[2] && x[2] == 2883584) }' &&
     echo 0 || echo 1) "sweep --zero 3: the 2x2 line equals solve + simulate, peak 2.75 MiB ($a, $b)"
as sweep "$G" --devices 4 --role data,tensor --zero 2 -q -o "$T/s.jsonl"
expect_fail 2 "" "resuming with another --zero is refused"

done_testing
