#!/bin/sh
# roles.sh -- axis roles (--role AXIS=data|tensor|auto) and ZeRO (--zero 1|2)
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
# gradients (-0.5 MiB).  The ILP's rows drop by the same amounts.
for z in 0 1 2; do
    as solve "$G" $M --role dp=data,tp=tensor --zero $z -o "$T/z$z.json"
    eval "obj$z=\$(awk '\$1 == \"objective\" { print \$2 }' \"\$T/out\")"
    eval "rows$z=\$(sed -n 's/.*ILP rows \\([0-9.]*\\) MiB.*/\\1/p' \"\$T/out\")"
    as simulate "$G" --plan "$T/z$z.json" --json
    eval "res$z=\$(jq '.per_device[0].resident' \"\$T/out\")"
    eval "time$z=\$(jq '.time' \"\$T/out\")"
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
as solve "$G" $M --role dp=data --zero 3
expect_fail 2 "--zero takes 0, 1 or 2" "--zero 3"
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
as sweep "$G" --devices 4 --role data,tensor --zero 2 -q -o "$T/s.jsonl"
expect_fail 2 "" "resuming with another --zero is refused"

done_testing
