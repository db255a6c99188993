#!/bin/sh
# lower.sh -- `autoshard lower`, `simulate GRAPH --plan` and `rank`: a
# three-layer MLP under Megatron (tp=2) and data-parallel (dp=2) plans.
. "${top_srcdir:-.}/tests/cli/lib.sh"
D="$top_srcdir/tests/data/sim"
G="$D/mlp.asg"
MP="$D/mlp_megatron.plan.json"
DP="$D/mlp_dp.plan.json"

as lower "$G" --plan "$MP" -o "$T/m.prog"
ok $rc "lower writes a program"
n=$(grep -c 'all-reduce group=' "$T/m.prog" || true)
[ "$n" -eq 2 ]; ok $? "megatron: exactly two all-reduces (got $n)"
n=$(grep -c 'all-gather\|reduce-scatter\|all-to-all' "$T/m.prog" || true)
[ "$n" -eq 0 ]; ok $? "megatron: no other collective"

as simulate --program "$T/m.prog" --json
ok $rc "simulate --program reads the lowered text"
grep '"time"' "$T/out" | head -1 > "$T/t1"
as simulate "$G" --plan "$MP" --json
ok $rc "simulate GRAPH --plan"
grep '"time"' "$T/out" | head -1 > "$T/t2"
[ -s "$T/t1" ] && cmp -s "$T/t1" "$T/t2"; ok $? "lower -> text -> simulate: same time as simulate --plan"
grep -q '"critical_path"' "$T/out"; ok $? "report has the critical path"

as simulate "$G" --plan "$MP" --no-overlap
grep -q '^iteration time' "$T/out"; ok $? "text report"
grep -q 'd\.h/all-reduce\.tp' "$T/out"; ok $? "critical path names the backward all-reduce"

as lower "$G" --plan "$DP" -o "$T/d.prog"
n=$(grep -c 'all-reduce group=' "$T/d.prog" || true)
[ "$n" -eq 3 ]; ok $? "data parallel: one all-reduce per weight gradient (got $n)"

as simulate "$G" --plan "$MP" --pipeline 2 --microbatches 4 --schedule gpipe --json
ok $rc "pipeline P=2 K=4 gpipe"
grep -q '"devices": 4' "$T/out"; ok $? "2 stages x 2 devices"
as lower "$G" --plan "$MP" --pipeline 2 --microbatches 4 --schedule 1f1b -o "$T/p.prog"
as simulate --program "$T/p.prog"
ok $rc "lowered 1f1b pipeline reads back"
grep -q 'send dev=' "$T/p.prog"; ok $? "pipeline sends between stages"

as rank "$G" --plans "$MP" "$DP"
ok $rc "rank two plans"
grep -q 'spearman rho' "$T/out"; ok $? "rank prints the correlations"

as simulate "$G" --plan "$MP" --mesh tp=4
expect_fail 2 "mesh 'tp=4' does not match plan" "a mesh that is not the plan's"
sed 's/"name": "d.a"/"name": "h.3.mlp.fc1"/' "$MP" > "$T/bad.json"
as lower "$G" --plan "$T/bad.json"
expect_fail 2 "plan '$T/bad.json': op 'h.3.mlp.fc1' not in graph 'mlp'" "unknown op named"
# Plans are read by strategy name: the index is a hint (cost models list different strategies).
sed 's/"index": 6/"index": 60/' "$MP" > "$T/idx.json"
as simulate "$G" --plan "$T/idx.json" --json
grep '"time"' "$T/out" | head -1 > "$T/t3"
ok $([ $rc -eq 0 ] && cmp -s "$T/t1" "$T/t3"; echo $?) "a stale strategy index: the name decides"
sed '/"index": [0-9]*/d; s/"strategy": \("[^"]*"\),$/"strategy": \1/' "$MP" > "$T/noidx.json"
as simulate "$G" --plan "$T/noidx.json" --json
grep '"time"' "$T/out" | head -1 > "$T/t3"
ok $([ $rc -eq 0 ] && cmp -s "$T/t1" "$T/t3"; echo $?) "a plan without strategy indexes"
sed '0,/"strategy": "column(tp)"/s//"strategy": "column(dp)"/' "$MP" > "$T/bad2.json"
as simulate "$G" --plan "$T/bad2.json"
expect_fail 2 "plan '$T/bad2.json': op 'h': no strategy 'column(dp)' among its [0-9]* on tp=2" \
    "a strategy name the op does not have"
as lower "$G" --plan "$MP" --pipeline 2 --microbatches 3
expect_fail 2 "do not divide the batch" "microbatches must divide the batch"
as lower "$G" --plan "$MP" --microbatches 2
[ $rc -eq 0 ] && grep -q "^input 0 x/m1 " "$T/out"; ok $? "microbatches without a pipeline: gradient accumulation"
as lower "$G"
[ $rc -eq 2 ] && grep -q "GRAPH and --plan" "$T/err"; ok $? "lower needs a plan"
done_testing
