#!/bin/sh
# accumulate.sh -- gradient accumulation (`solve --microbatches K` without a pipeline,
# DESIGN.md "Training step"): the ILP sees microbatch shapes, one microbatch of
# activations, one gradient synchronisation and one update; its objective and its
# memory rows agree with `simulate --microbatches K` of the plan it writes.
. "${top_srcdir:-.}/tests/cli/lib.sh"

obj() { sed -n 's/^objective *\([0-9.e+-]*\) s$/\1/p' "$T/out"; }
peaks() { sed -n 's/^peak memory  \(.*\) per device (budget none; ILP rows \(.*\))$/\1=\2/p' "$T/out"; }
simtime() { sed -n 's/^iteration time *\([0-9.e+-]*\) s$/\1/p' "$T/out"; }
simpeak() { sed -n 's/.*"peak_memory": \([0-9.e+]*\).*/\1/p' "$T/out" | sort -g | tail -1; }
plan_peak() { sed -n 's/^ *"peak": \([0-9.e+]*\).*/\1/p' "$1" | head -1; }
close() { # close A B TOL: |A - B| <= TOL * B
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(a>0 && b>0 && d<=t*b)}'; }

as gen mlp-1b --layers 2 --hidden 1024 --batch 64 --train -o "$T/m.asg"
as gen gpt2-small --layers 1 --seq 64 --batch 8 --vocab 2048 --train -o "$T/g.asg"
ok $rc "graphs"

prev=
for k in 1 2 4; do
    as solve "$T/m.asg" --mesh 2 --microbatches $k -o "$T/m$k.json"
    s=$rc
    o=$(obj)
    p=$(peaks)
    # a data-parallel MLP reshards nothing: the rows count exactly the simulator's bytes
    [ -n "$p" ] && [ "${p%%=*}" = "${p#*=}" ] || s=1
    as simulate "$T/m.asg" --plan "$T/m$k.json" --microbatches $k
    [ $rc -eq 0 ] || s=1
    close "${o:-0}" "$(simtime)" 0.05 || s=1
    ok $s "mlp K=$k: ILP rows = simulated peak (${p:-?}); objective ${o:-?} s ~ simulated $(simtime) s"
    eval "obj$k=${o:-0}"
done
# K x (forward + backward) + one synchronisation + one update: the objective grows with K,
# by less than K times (the update and the gradient all-reduce are paid once)
awk -v a="$obj1" -v b="$obj2" -v c="$obj4" 'BEGIN{exit !(a < b && b < c && c < 4*a)}'
ok $? "objective grows with K, less than K-fold ($obj1 < $obj2 < $obj4)"

for k in 2 4; do
    as solve "$T/g.asg" --mesh 2x2 --microbatches $k -o "$T/g$k.json"
    s=$rc
    o=$(obj)
    as simulate "$T/g.asg" --plan "$T/g$k.json" --microbatches $k
    [ $rc -eq 0 ] || s=1
    close "${o:-0}" "$(simtime)" 0.08 || s=1
    as simulate "$T/g.asg" --plan "$T/g$k.json" --microbatches $k --json
    q=$(simpeak)
    close "$(plan_peak "$T/g$k.json")" "${q:-0}" 0.01 || s=1
    ok $s "gpt2 K=$k on 2x2: objective ${o:-?} s ~ simulated; plan's peak = simulate's (${q:-?})"
done

# one microbatch of activations: with the plan fixed, K=4 needs less than K=1
as solve "$T/g.asg" --mesh 2 -o "$T/g1.json"
as simulate "$T/g.asg" --plan "$T/g1.json" --json
a=$(simpeak)
as simulate "$T/g.asg" --plan "$T/g1.json" --microbatches 4 --json
b=$(simpeak)
awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN{exit !(b > 0 && b < a)}'
ok $? "the same plan with 4 microbatches peaks lower ($b < $a bytes)"

# bad settings: one line, exit 2
as solve "$T/g.asg" --mesh 2 --microbatches 3
expect_fail 2 "^autoshard: --microbatches 3: 3 microbatches do not divide the batch (8) of graph" \
    "K must divide the batch"
as solve "$T/g.asg" --mesh 2 --microbatches 0
[ $rc -eq 2 ] && grep -q "^autoshard: --microbatches must be an integer in 1..65536, got '0'" "$T/err"
ok $? "K must be a positive integer"
as solve "$T/g.asg" --mesh 8 --microbatches 2
[ $rc -eq 0 ]; ok $? "K=2 on 8 devices: batch 4 per microbatch still solves (not split 8 ways)"

done_testing
