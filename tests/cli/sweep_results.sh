#!/bin/sh
# sweep_results.sh -- what a sweep records (issue 14): stages that differ only in the
# microbatches they hold share a plan (one truth: the same objective as `solve
# --pipeline`), a configuration that ran out of time keeps its best plan (status limit,
# ranked) instead of an error, a --batch list puts every batch in the CSV and one chart
# per batch, and --microbatch-size / --tp-max with --role enumerate Megatron's (t, p, d, b).
. "${top_srcdir:-.}/tests/cli/lib.sh"

command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
close() { # close A B TOL: |A - B| <= TOL * |B|
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN{d=a-b; if(d<0)d=-d; if(b<0)b=-b; exit !(d<=t*b)}'; }

as gen gpt --layers 16 --hidden 64 --heads 4 --seq 16 --batch 16 --train -o "$T/g.asg"
ok $rc "16-layer GPT, hidden 64, batch 16"

# ---- stages of one kind: solved at the ends of the chain, the middle ones take a plan ----
S="$T/g.asg --devices 16 --pipeline 8 --max-axes 1 -q"
as sweep $S -o "$T/a.jsonl"
ok $rc "P = 8 on 16 devices (mesh 2 per stage)"
check "some middle stages took a tighter stage's plan (stages_copied > 0), status ok, gap 0" \
    test "$(jq -r 'select(.config) | "\(.status) \(.stages_copied > 0) \(.gap)"' "$T/a.jsonl")" = "ok true 0"
as solve "$T/g.asg" --pipeline 8 --microbatches 16 --mesh 2 --memory auto
obj=$(sed -n 's/^objective  *\([0-9.e+-]*\) s per iteration.*/\1/p' "$T/out" "$T/err")
sobj=$(jq -r 'select(.config) | .objective' "$T/a.jsonl")
check "one truth: the sweep's objective $sobj = solve --pipeline 8's $obj (every stage solved)" \
    close "$sobj" "$obj" 1e-5

# ---- out of time: the best plan found, status limit, ranked ----
# AUTOSHARD_SWEEP_SOLVES=N ends a configuration's time after N stage solves (as a clock
# would); here the tight ends (4) are solved, the loose end of the chain is not.
n=$(jq -r 'select(.config) | .stages_copied' "$T/a.jsonl")
AUTOSHARD_SWEEP_SOLVES=4 as sweep $S --time-limit 600 -o "$T/l.jsonl"
ok $rc "a sweep whose time runs out after 4 stage solves"
check "status limit with its plan: throughput, objective, copied stages ($n + 1)" \
    test "$(jq -r 'select(.config) | "\(.status) \(.throughput > 0) \(.stages_copied)"' "$T/l.jsonl")" = "limit true $((n + 1))"
check "its gap is unknown (null): no bound for the stages without a solve" \
    test "$(jq -r 'select(.config) | .gap' "$T/l.jsonl")" = null
check "ranked in the table, counted at the time limit" \
    sh -c "grep -q '^1  *p=8,k=16,mesh=2,.* limit\$' '$T/out' && grep -q '0 failed, 1 at the time limit' '$T/out'"
check "the plan it kept is the full solve's (objective equal)" \
    close "$(jq -r 'select(.config) | .objective' "$T/l.jsonl")" "$sobj" 1e-9
AUTOSHARD_SWEEP_SOLVES=2 as sweep $S --time-limit 600 -o "$T/e.jsonl"
check "2 solves: a stage with no plan at all is an error naming it truthfully" \
    sh -c "jq -r 'select(.config) | .status + \": \" + .error' '$T/e.jsonl' | grep -q '^error: time limit (600 s) reached before stage [0-9] was solved\$'"

# ---- a start from a sibling: a mesh that splits an axis of a mesh already solved ----
# Meshes come fewer axes first (8, then 2x4 and 4x2, then 2x2x2), so a plan on 4 is there
# when 2x2 runs: the same layout with the axis of 4 read as the two axes (x,y).
as sweep "$T/g.asg" --devices 8 --list
check "meshes with fewer axes first: 8, 2x4, 4x2, 2x2x2 at p=1" \
    test "$(grep '^p=1,' "$T/out" | sed 's/.*mesh=\([^,]*\),.*/\1/' | tr '\n' ' ')" = "8 2x4 4x2 2x2x2 "
# AUTOSHARD_SWEEP_SOLVES=0@2: no solve at all on meshes of 2 axes or more (a clock that ran
# out at once); before, such a configuration was an error, "no plan"
AUTOSHARD_SWEEP_SOLVES=0@2 as sweep "$T/g.asg" --devices 8 --pipeline 2 --max-axes 2 \
    --time-limit 600 -q -o "$T/st.jsonl" --plans "$T/plans"
ok $rc "p=2 on 8 devices, mesh 4 solved, mesh 2x2 out of time before any solve"
check "2x2: status limit with a plan that every stage took from mesh 4, simulated" \
    test "$(jq -r 'select(.mesh == "2x2") | "\(.status) \(.start_mesh) \(.stages_started) \(.throughput > 0) \(.gap)"' "$T/st.jsonl")" = "limit 4 2 true null"
check "its objective is the start's (the stage objectives summed)" \
    close "$(jq -r 'select(.mesh == "2x2") | .stage_objective_sum' "$T/st.jsonl")" \
        "$(jq -r 'select(.mesh == "2x2") | .start_objective' "$T/st.jsonl")" 1e-12
# the same layout: every tensor of the 2x2 plan is split as on mesh 4, over (x,y) for x
# (a partial sum over x is one over x and y)
F='.tensors[] | (.spec | split(" ")) as $p | "\(.name) \($p[0] | gsub("x"; "(x,y)"))\(if ($p | length) > 1 then " " + ($p[1] | gsub("(?<o>[a-z]+):x"; "\(.o):x,\(.o):y")) else "" end)"'
check "the same layout: mesh 4's specs with x read as (x,y)" \
    test "$(jq -r "$F" "$T/plans/p-2_k-4_mesh-4_recompute-none_solver-glpk.json" | md5sum)" = \
         "$(jq -r '.tensors[] | "\(.name) \(.spec)"' "$T/plans/p-2_k-4_mesh-2x2_recompute-none_solver-glpk.json" | md5sum)"
as simulate "$T/g.asg" --plan "$T/plans/p-2_k-4_mesh-2x2_recompute-none_solver-glpk.json" --json
check "one truth: simulate --plan gives the line's time" \
    close "$(jq -r .time "$T/out")" "$(jq -r 'select(.mesh == "2x2") | .time' "$T/st.jsonl")" 1e-9

# ---- a --batch list: one CSV with a batch column, one chart per batch ----
B="mlp-1b --devices 2 --cost-model distir --role data,tensor --batch 256,1024 -q"
as sweep $B -o "$T/b.jsonl" --csv "$T/b.csv" --svg "$T/b.svg"
ok $rc "--batch 256,1024 with --csv and --svg"
check "CSV: the header and 3 rows per batch" \
    test "$(head -1 "$T/b.csv" | cut -d, -f1) $(grep -c '^256,' "$T/b.csv") $(grep -c '^1024,' "$T/b.csv") $(wc -l <"$T/b.csv" | tr -d ' ')" = "batch 3 3 7"
check "CSV rows = JSONL lines (config, status)" \
    test "$(tail -n +2 "$T/b.csv" | cut -d'"' -f2 | sort | md5sum)" = "$(jq -r 'select(.config) | .config' "$T/b.jsonl" | sort | md5sum)"
check "one chart per batch: b-b256.svg and b-b1024.svg, no b.svg" \
    sh -c "grep -q 'batch 256,' '$T/b-b256.svg' && grep -q 'batch 1024,' '$T/b-b1024.svg' && test ! -e '$T/b.svg'"
as sweep $B -o "$T/b.jsonl" --csv "$T/b.csv"
check "run again (all done): the CSV is started anew, not appended to" \
    test "$(wc -l <"$T/b.csv" | tr -d ' ')" = 7

# ---- Megatron's question: --role data,tensor --tp-max T --microbatch-size b ----
# 16 devices, 16 layers, batch 16; tensor axis <= 4, data axis unbounded; K = 16 / D / b.
# P=1: 4x4 (K 4), 8x2 (K 2), 16x1 (K 1) = 3 (2x8, 1x16: tensor > 4);  P=2: 2x4 (K 8),
# 4x2, 8x1 = 3;  P=4: 1x4 (16), 2x2, 4x1 = 3;  P=8: 1x2, 2x1 = 2;  P=16: 1x1 = 1.  12
as sweep "$T/g.asg" --devices 16 --role data,tensor --tp-max 4 --microbatch-size 1 --list
check "12 configurations (tensor <= 4, data unbounded)" test "$(grep -c . "$T/out")" = 12
check "K = batch / D / b: p=2 mesh 2x4 runs 8 microbatches, p=16 1x1 16" \
    sh -c "grep -qx 'p=2,k=8,mesh=2x4,recompute=none,solver=glpk' '$T/out' &&
        grep -qx 'p=16,k=16,mesh=1x1,recompute=none,solver=glpk' '$T/out' &&
        grep -qx 'p=1,k=1,mesh=16x1,recompute=none,solver=glpk' '$T/out'"
as sweep "$T/g.asg" --devices 16 --role data,tensor --tp-max 4 --microbatch-size 2 --list
check "b = 2: 16 data replicas cannot take 2 samples each (16x1 gone): 11" \
    test "$(grep -c . "$T/out")" = 11
as sweep "$T/g.asg" --devices 16 --microbatch-size 1 --microbatches 2
check "--microbatch-size with --microbatches: exit 2, one autoshard: line" \
    sh -c "[ $rc -eq 2 ] && [ \$(grep -c '^autoshard: .*microbatch-size' '$T/err') -eq 1 ]"

# ---- ZeRO as a dimension: --zero 0,3 (keys, line field, CSV column, resume) ----
# 4 devices, --role data,tensor, P = 1: meshes 1x4, 2x2, 4x1; ZeRO 3 over a data degree of 1
# is ZeRO 0 (left out): 5 configurations.
Z="$T/g.asg --devices 4 --pipeline 1 --role data,tensor -q"
as sweep $Z --zero 0,3 --list
check "--zero 0,3: 5 configurations, keys ending zero=Z (1x4 only with zero=0)" \
    test "$(grep -c ',zero=[03]$' "$T/out") $(grep -c 'mesh=1x4,.*zero=3' "$T/out")" = "5 0"
as sweep $Z --zero 0,3 -o "$T/z.jsonl" --csv "$T/z.csv"
ok $rc "sweep --zero 0,3"
check "the header lists the stages, each line has its zero field" \
    test "$(head -1 "$T/z.jsonl" | jq -c .sweep.zero) $(jq -r 'select(.config) | .zero' "$T/z.jsonl" | sort | tr -d '\n')" = "[0,3] 00033"
check "CSV: a zero column, equal to the key's" \
    test "$(head -1 "$T/z.csv" | awk -F, '{print $NF}') $(tail -n +2 "$T/z.csv" | awk -F, '{ k = $0; sub(/.*zero=/, "", k); sub(/".*/, "", k); if (k != $NF) bad++ } END { print bad + 0 }')" = "zero 0"
as solve "$T/g.asg" --mesh 4x1 --role data,tensor --zero 3 --memory auto
obj=$(sed -n 's/^objective  *\([0-9.e+-]*\) s.*/\1/p' "$T/out" "$T/err")
sobj=$(jq -r 'select(.config == "p=1,k=1,mesh=4x1,recompute=none,solver=glpk,zero=3") | .objective' "$T/z.jsonl")
check "one truth: the zero=3 line's objective $sobj = solve --zero 3's $obj" close "$sobj" "$obj" 1e-6
check "ZeRO 3 lowers the peak (4x1: zero=3 below zero=0)" \
    test "$(jq -s -r 'map(select(.mesh == "4x1")) | sort_by(.zero) | (.[0].peak_memory > .[1].peak_memory)' "$T/z.jsonl")" = true
as sweep $Z --zero 0,3 -o "$T/z.jsonl"
check "run again: resumed, nothing run" grep -q '(5 done before), 0 run now' "$T/out"
as sweep $Z --zero 0,1 -o "$T/z.jsonl"
check "another --zero list on that JSONL: refused, exit 2, one line" \
    sh -c "[ $rc -eq 2 ] && [ \$(grep -c '^autoshard: .*written by another sweep' '$T/err') -eq 1 ]"
as sweep "$T/g.asg" --devices 4 --zero 0,2 --list
check "--zero 0,2 without a data role: exit 2, one line" \
    sh -c "[ $rc -eq 2 ] && [ \$(grep -c '^autoshard: --zero 2 needs a data axis' '$T/err') -eq 1 ]"

# ---- the memory lower bound that prunes: only the strategies the roles allow ----
# 2x2 under --role data,tensor: a parameter's smallest layout splits it over the data axis,
# which the roles forbid; the sweep's bound takes the smallest allowed layout.
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
lbof() { jq -r "select(.mesh == \"$2\") | .lower_bound" "$1"; }
as sweep $Z -o "$T/r.jsonl"
ok $rc "sweep --role data,tensor on 4 devices (each line has its lower_bound)"
B=$(lbof "$T/r.jsonl" 2x2)
as solve "$T/g.asg" --mesh 2x2 --memory 1
old=$(sed -n 's/.*every plan needs at least \([0-9.]* [KMG]iB\).*/\1/p' "$T/err")
check "the bound with roles ($(mib "$B")) is above the one without roles ($old)" \
    awk -v b="$B" -v o="${old% MiB}" 'BEGIN { exit !(b > o * 1048576 * 1.2) }'
as solve "$T/g.asg" --mesh 2x2 --role data,tensor --memory 1
check "one truth: solve --role data,tensor rejects the budget with the sweep's bound ($(mib "$B"))" \
    sh -c "[ $rc -eq 3 ] && grep -q 'at least $(mib "$B") ' '$T/err'"
as solve "$T/g.asg" --mesh 2x2 --role data,tensor --memory $((${B%.*} - 1))
check "a true lower bound: the ILP proves 1 B below it infeasible (exit 3)" \
    sh -c "[ $rc -eq 3 ] && grep -q 'no plan fits' '$T/err'"
as solve "$T/g.asg" --mesh 2x2 --role data,tensor --memory $((${B%.*} + 1))
check "at the edge: 1 B above it, the ILP finds a plan whose rows are the bound ($(mib "$B"))" \
    grep -q "(rows $(mib "$B")" "$T/out" "$T/err"
as sweep "$T/g.asg" --devices 4 --pipeline 1 --max-axes 1 -q -o "$T/n.jsonl"
as solve "$T/g.asg" --mesh 4 --memory 1
check "one truth: without roles the sweep's bound is solve's ($(sed -n 's/.*at least \([0-9.]* [KMG]iB\).*/\1/p' "$T/err"))" \
    grep -q "at least $(mib "$(lbof "$T/n.jsonl" 4)") " "$T/err"
as hw show a100-dgx
sed -e "s/^memory .*/memory = $(( (${B%.*} + ${B%.*} / 2) / 2 ))/" -e "s/^reserved_memory .*/reserved_memory = 0/" \
    "$T/out" >"$T/m.hw"
as sweep $Z --hw "$T/m.hw" -o "$T/m.jsonl"
check "with memory between the two bounds, 2x2 is pruned (lower_bound = the bound)" \
    test "$(jq -r 'select(.mesh == "2x2") | .status' "$T/m.jsonl") $(lbof "$T/m.jsonl" 2x2)" = "pruned $B"

# ---- one truth: the usable memory (memory - reserved_memory) in solve, sweep and simulate ----
as hw show a100-dgx
sed -e 's/^name .*/name = r/' -e 's/^memory .*/memory = 96MiB/' -e 's/^reserved_memory .*/reserved_memory = 32MiB/' \
    "$T/out" >"$T/r.hw"
as solve "$T/g.asg" --mesh 4 --hw "$T/r.hw" --memory auto -o "$T/r.json"
check "solve --memory auto: the budget is 96 MiB of memory less 32 MiB reserved" \
    sh -c "[ $rc -eq 0 ] && grep -q '(budget 64.00 MiB' '$T/out'"
uobj=$(sed -n 's/^objective  *\([0-9.e+-]*\) s.*/\1/p' "$T/out" "$T/err")
as simulate "$T/g.asg" --plan "$T/r.json" --hw "$T/r.hw" --json
check "simulate: the OOM capacity is the same 64 MiB" test "$(jq -r .capacity "$T/out")" = 67108864
as sweep "$T/g.asg" --devices 4 --pipeline 1 --max-axes 1 --hw "$T/r.hw" -q -o "$T/usable.jsonl"
check "sweep: the line's capacity is the same 64 MiB" \
    test "$(jq -r 'select(.config) | "\(.capacity) \(.status)"' "$T/usable.jsonl")" = "67108864 ok"
check "sweep: its objective is solve's ($uobj)" \
    close "$(jq -r 'select(.config) | .objective' "$T/usable.jsonl")" "$uobj" 1e-6
L=$(lbof "$T/usable.jsonl" 4)
sed "s/^memory .*/memory = $(( ${L%.*} + 32 * 1048576 - 1048576 ))/" "$T/r.hw" >"$T/r2.hw"
as sweep "$T/g.asg" --devices 4 --pipeline 1 --max-axes 1 --hw "$T/r2.hw" -q -o "$T/usable2.jsonl"
check "sweep: usable 1 MiB under the bound ($(mib "$L")) although memory is above it: pruned" \
    test "$(jq -r 'select(.config) | .status' "$T/usable2.jsonl")" = pruned
as solve "$T/g.asg" --mesh 4 --hw "$T/r2.hw" --memory auto
check "solve --memory auto refuses the same budget (exit 3)" test "$rc" = 3

done_testing
