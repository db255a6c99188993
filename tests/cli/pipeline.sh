#!/bin/sh
# pipeline.sh -- pipeline-aware solve (`solve --pipeline P --microbatches K`, DESIGN.md
# "Pipeline-aware planning", docs/solve.md "Pipelines"): the layers cut into P stages
# (balanced, or --stages), each stage solved on its own mesh with microbatch shapes, one
# plan file that records the step; lower / simulate / rank take P, K, the schedule and the
# stages from it, and simulate's peak per device of each stage is solve's (within 1 %).
. "${top_srcdir:-.}/tests/cli/lib.sh"

close() { # close A B TOL: |A - B| <= TOL * B
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(a>0 && b>0 && d<=t*b)}'; }
# simulated peak of device D (simulate --json in $T/out)
devpeak() {
    tr -d '\n ' <"$T/out" | sed 's/},{/}\n{/g' | sed -n "s/.*\"device\":$1,.*\"peak_memory\":\([0-9.e+]*\).*/\1/p" | head -1
}
# the plan's recorded peak of stage S (pipeline.peaks[S])
stagepeak() {
    tr -d '\n ' <"$1" | sed -n 's/.*"peaks":\[\([^]]*\)\].*/\1/p' | cut -d, -f$(($2 + 1))
}

as gen gpt --layers 4 --hidden 64 --heads 4 --seq 32 --batch 8 --vocab 128 --train -o "$T/g.asg"
ok $rc "4-layer GPT, hidden 64, batch 8"

# ---- the split report, both schedules, and the memory agreement ----
for sched in 1f1b gpipe; do
    as solve "$T/g.asg" --pipeline 2 --microbatches 4 --schedule $sched --mesh 2 -o "$T/$sched.json"
    s=$rc
    grep -q '^split        h\.0\.\.h\.1 (2) | h\.2\.\.h\.3 (2) (balanced by FLOPs)$' "$T/out" || s=1
    grep -q "^pipeline     2 stages x mesh 2, 4 microbatches, $sched" "$T/out" || s=1
    grep -q '^stage 0      2 layers, .* devices 0\.\.1: ' "$T/out" || s=1
    grep -q '^stage 1      2 layers, .* devices 2\.\.3: ' "$T/out" || s=1
    ok $s "$sched: split h.0..h.1 | h.2..h.3 reported, stage s on devices 2s..2s+1"
    # microbatches in flight: 1F1B min(K, P - s), GPipe K
    if [ $sched = 1f1b ]; then f0=2 f1=1; else f0=4 f1=4; fi
    s=0
    grep -q "^stage 0 .*, $f0 in flight)$" "$T/out" || s=1
    grep -q "^stage 1 .*, $f1 in flight)$" "$T/out" || s=1
    ok $s "$sched: stage 0 holds $f0 microbatches in flight, stage 1 $f1"
    # the ILP's rows count the in-flight microbatches' stashed activations too
    s=0
    for st in 0 1; do
        l=$(sed -n "s/^stage $st .*peak \([0-9.]*\) MiB per device (ILP rows \([0-9.]*\) MiB.*/\1 \2/p" "$T/out")
        close "${l#* }" "${l% *}" 0.01 || s=1
    done
    ok $s "$sched: each stage's ILP rows within 1 % of its simulated peak"
    grep -q '"layers": \[' "$T/$sched.json" && grep -q "\"schedule\": \"$sched\"" "$T/$sched.json"
    ok $? "$sched: the plan file records stages, layers and schedule"
    # simulate with no settings: they come from the plan; no microbatch-shape failure
    as simulate "$T/g.asg" --plan "$T/$sched.json" --json
    s=$rc
    for st in 0 1; do
        sp=$(stagepeak "$T/$sched.json" $st)
        for d in $((2 * st)) $((2 * st + 1)); do
            close "${sp:-0}" "$(devpeak $d)" 0.01 || s=1
        done
        eval "peak_${sched}_$st=${sp:-0}"
    done
    ok $s "$sched: simulate's peak on every device = solve's stage peak within 1 % ($(stagepeak "$T/$sched.json" 0) / $(devpeak 0))"
    as simulate "$T/g.asg" --plan "$T/$sched.json" --pipeline 2 --microbatches 4 --schedule $sched
    ok $rc "$sched: simulate with the same settings given"
    as lower "$T/g.asg" --plan "$T/$sched.json" -o "$T/$sched.prog"
    s=$rc
    grep -q '^program .* devices=4 ' "$T/$sched.prog" || s=1
    ok $s "$sched: lower takes P from the plan (4 devices)"
done
# GPipe keeps all K microbatches: more memory on stage 0 than 1F1B's 2
awk -v a="$peak_1f1b_0" -v b="$peak_gpipe_0" 'BEGIN{exit !(a > 0 && b > a)}'
ok $? "stage 0 peaks higher under GPipe ($peak_gpipe_0) than 1F1B ($peak_1f1b_0)"
as rank "$T/g.asg" --plans "$T/1f1b.json" "$T/gpipe.json" --schedule 1f1b
expect_fail 2 "plan '.*gpipe.json' was solved for --schedule gpipe, not 1f1b" \
    "rank: a schedule that contradicts a plan is one line, exit 2"

# ---- a memory budget: every stage fits it, as simulated; a hopeless one exits 3 ----
as solve "$T/g.asg" --pipeline 2 --microbatches 4 --mesh 2 --memory 2.5MiB -o "$T/m25.json"
s=$rc
as simulate "$T/g.asg" --plan "$T/m25.json" --capacity 2621440
[ $rc -eq 0 ] || s=1
awk -v a="$(stagepeak "$T/m25.json" 0)" -v b="$peak_1f1b_0" 'BEGIN{exit !(a > 0 && a <= 2.5*1048576 && a < b)}' || s=1
ok $s "--memory 2.5MiB: stage 0 re-planned to fit ($(stagepeak "$T/m25.json" 0) bytes), simulate agrees"
as solve "$T/g.asg" --pipeline 2 --microbatches 4 --mesh 2 --memory 1MiB
expect_fail 3 "stage 0: no plan fits in 1.00 MiB per device" "--memory 1MiB: exit 3 naming the stage"

# ---- --stages by hand ----
as solve "$T/g.asg" --pipeline 2 --microbatches 2 --stages 1,3 --mesh 2 -o "$T/s13.json"
s=$rc
grep -q '^split        h\.0\.\.h\.0 (1) | h\.1\.\.h\.3 (3) (--stages)$' "$T/out" || s=1
grep -q '^stage 0      1 layers' "$T/out" || s=1
tr -d '\n ' <"$T/s13.json" | grep -q '"layers":\[1,3\]' || s=1
ok $s "--stages 1,3: one layer on stage 0, three on stage 1, recorded in the plan"
as simulate "$T/g.asg" --plan "$T/s13.json" --json
s=$rc
close "$(stagepeak "$T/s13.json" 1)" "$(devpeak 2)" 0.01 || s=1
ok $s "--stages 1,3: simulate cuts where the plan says (stage 1 peak agrees)"
# one stage assignment: the lowering runs each layer on the stage the plan gives it
placed() { # placed PROG: "L:DEV" for the first microbatch's fc1 matmul of each layer
    sed -n 's/^h\.\([0-9]\)\.mlp\.fc1\.mm\/m0: compute dev=\([0-9]*\) .*/\1:\2/p' "$1" | tr '\n' ' '; }
as lower "$T/g.asg" --plan "$T/s13.json" -o "$T/s13.prog"
p13=$(placed "$T/s13.prog")
p22=$(placed "$T/1f1b.prog")
[ "$p13" = "0:0 1:2 2:2 3:2 " ] && [ "$p22" = "0:0 1:0 2:2 3:2 " ]
ok $? "lower places layers where solve cut them (--stages 1,3: $p13; balanced: $p22)"
as rank "$T/g.asg" --plans "$T/1f1b.json" "$T/gpipe.json" "$T/s13.json"
s=$rc
grep -q "over 3 plans" "$T/out" || s=1
ok $s "rank: three pipeline plans, each simulated with its own recorded step"

# ---- recomputation is recorded too ----
as solve "$T/g.asg" --pipeline 2 --microbatches 4 --recompute full --mesh 2 -o "$T/rc.json"
s=$rc
as simulate "$T/g.asg" --plan "$T/rc.json" --json
[ $rc -eq 0 ] || s=1
close "$(stagepeak "$T/rc.json" 0)" "$(devpeak 0)" 0.01 || s=1
awk -v a="$(stagepeak "$T/rc.json" 0)" -v b="$peak_1f1b_0" 'BEGIN{exit !(a > 0 && a < b)}' || s=1
ok $s "--recompute full: simulate takes it from the plan; stage 0 peak lower than without"

# ---- bad input: one line, exit 2 ----
as solve "$T/g.asg" --pipeline 5 --mesh 2
expect_fail 2 "has only 4 layers" "P larger than the layer count"
as solve "$T/g.asg" --pipeline 2 --microbatches 3 --mesh 2
expect_fail 2 "3 microbatches do not divide the batch (8)" "K not dividing the batch"
as solve "$T/g.asg" --pipeline 2 --stages 2,1 --mesh 2
expect_fail 2 "covers 3 layers, the graph has 4" "--stages that does not cover the layers"
as solve "$T/g.asg" --pipeline 2 --stages 1,1,2 --mesh 2
expect_fail 2 "gives 3 stages, --pipeline 2" "--stages with more stages than P"
as solve "$T/g.asg" --pipeline 2 --stages 0,4 --mesh 2
expect_fail 2 "every stage needs at least one layer" "--stages with an empty stage"
as solve "$T/g.asg" --pipeline 2 --stages 2:2 --mesh 2
expect_fail 2 "expected comma-separated layer counts" "--stages that does not parse"
as solve "$T/g.asg" --stages 2,2 --mesh 2
[ $rc -eq 2 ] && grep -q "^autoshard: --stages and --schedule need --pipeline" "$T/err"
ok $? "--stages without --pipeline: usage error, exit 2"
as gen mlp --layers 2 --hidden 64 --batch 8 --train -o "$T/m.asg"
sed 's/h\.\([0-9]\)\./h\1_/g' "$T/m.asg" >"$T/flat.asg"
as solve "$T/flat.asg" --pipeline 2 --mesh 2
expect_fail 2 "has no layers" "--pipeline on a graph without layers"
as simulate "$T/g.asg" --plan "$T/1f1b.json" --pipeline 4
expect_fail 2 "was solved for --pipeline 2, not 4" "simulate: a contradicting P"
as simulate "$T/g.asg" --plan "$T/1f1b.json" --microbatches 2
expect_fail 2 "was solved for --microbatches 4, not 2" "simulate: a contradicting K"
as simulate "$T/g.asg" --plan "$T/rc.json" --recompute none
expect_fail 2 "was solved for --recompute full, not none" "simulate: a contradicting --recompute"
sed 's/"stages": 2/"stages": 0/' "$T/1f1b.json" >"$T/bad.json"
as simulate "$T/g.asg" --plan "$T/bad.json"
expect_fail 2 "pipeline.stages: expected a positive integer" "a plan with 0 stages"
sed 's/"layers": \[/"layers": [7, /' "$T/1f1b.json" >"$T/bad2.json"
as simulate "$T/g.asg" --plan "$T/bad2.json"
expect_fail 2 "pipeline.layers: expected an array of 2" "a plan whose layers do not match its stages"

# ---- plans without a record still read and lower (balanced at lowering, as before) ----
as solve "$T/g.asg" --mesh 2 -o "$T/flat.json"
as simulate "$T/g.asg" --plan "$T/flat.json" --pipeline 2
ok $rc "a plan without a pipeline record simulates with --pipeline 2"

# ---- one sample per microbatch: a stage plan names its strategies after microbatch shapes ----
# (reshape [1,512,768] -> [512,768] splits output dim 0 through input dim 1; the whole
# batch's [4,512,768] has no such strategy: lowering looked the plan up there and failed)
as gen bert --train --layers 2 --hidden 768 --heads 12 --seq 512 --batch 4 -o "$T/b1.asg"
as solve "$T/b1.asg" --mesh 2 --pipeline 2 --microbatches 4 -o "$T/b1.json"
ok $rc "bert, one sample per microbatch: solve --pipeline 2 --microbatches 4 simulates its plan"
grep -q '"S(in0:1@x)"' "$T/b1.json"
ok $? "the plan splits a reshape through the sequence dim (the case that failed)"
sim1=$(sed -n 's/^simulated *\([0-9.e+-]*\) s per iteration.*/\1/p' "$T/out")
as simulate "$T/b1.asg" --plan "$T/b1.json" --json
sim2=$(sed -n 's/^  "time": \([0-9.e+-]*\),$/\1/p' "$T/out")
[ $rc -eq 0 ] && [ -n "$sim1" ] && awk -v a="$sim1" -v b="$sim2" 'BEGIN { d = a - b; exit !(b > 0 && d * d < 1e-18 + (1e-5 * b) ^ 2) }'
ok $? "simulate of the plan gives solve's simulated time ($sim1 s vs $sim2 s)"

done_testing
