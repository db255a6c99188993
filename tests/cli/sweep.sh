#!/bin/sh
# sweep.sh -- `autoshard sweep` (docs/sweep.md): the enumeration matches a hand count,
# hopeless configurations are pruned by the memory lower bound and counted, the JSONL
# lines parse and agree with `solve --pipeline` + `simulate` run by hand (one truth),
# resume redoes only what is missing (deleted lines, a kill -9, a cut last line), and bad
# input gets one line and exit 2.
. "${top_srcdir:-.}/tests/cli/lib.sh"

command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
close() { # close A B TOL: |A - B| <= TOL * |B|
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN{d=a-b; if(d<0)d=-d; if(b<0)b=-b; exit !(d<=t*b)}'; }
count() { as sweep "$T/g.asg" --devices "$@" --list; [ $rc -eq 0 ] && wc -l <"$T/out" | tr -d ' '; }

as gen gpt --layers 4 --hidden 64 --heads 4 --seq 16 --batch 16 --train -o "$T/g.asg"
ok $rc "4-layer GPT, hidden 64, batch 16"

# ---- enumeration, by hand: 4 layers, batch 16 ----
# 8 devices, P in {1,2,4} (8 > 4 layers); ordered factorisations into <= 3 factors >= 2:
# 8 -> 8 2x4 4x2 2x2x2 (4), 4 -> 4 2x2 (2), 2 -> 2 (1): 7
check "8 devices: 7 configurations" test "$(count 8)" = 7
check "--max-axes 2: 3 + 2 + 1 = 6" test "$(count 8 --max-axes 2)" = 6
check "--tp-max 2: 2x2x2, 2x2, 2 = 3" test "$(count 8 --tp-max 2)" = 3
# P = 1 keeps K = 1: 4 meshes x 2 recompute + P = 2: 2 K x 2 meshes x 2 + P = 4: 2 x 1 x 2
check "--microbatches 2,4 --recompute none,full: 8 + 8 + 4 = 20" \
    test "$(count 8 --microbatches 2,4 --recompute none,full)" = 20
check "--accumulate: P = 1 takes the list too: 16 + 8 + 4 = 28" \
    test "$(count 8 --microbatches 2,4 --recompute none,full --accumulate)" = 28
check "--pipeline 2 --solver glpk,beam: 2 meshes x 2 solvers = 4" \
    test "$(count 8 --pipeline 2 --solver glpk,beam)" = 4
as sweep "$T/g.asg" --devices 8 --list
check "default K: 1 for P = 1, 2P else" \
    grep -qx 'p=4,k=8,mesh=2,recompute=none,solver=glpk' "$T/out"

# Runs use --pipeline 1,2: with 4 layers, P = 4 puts one layer per stage, where
# formulate/group.c's tying calls qsort(NULL, 0) (UBSan; `solve --pipeline 4` too).
R="--devices 4 --pipeline 1,2"

# ---- a sweep on 4 devices (4, 2x2; P = 2 on 2): JSONL, table, CSV ----
as sweep "$T/g.asg" $R -q -o "$T/s.jsonl" --csv "$T/s.csv" --top 3
ok $rc "sweep on 4 devices"
check "summary: 3 configurations, 3 run" \
    grep -q '^sweep: 3 configurations (0 done before), 3 run now, 0 pruned' "$T/out"
check "top table of 3 rows" test "$(grep -c '^[123]  *p=' "$T/out")" = 3
check "JSONL: header + 3 lines, all parse" test "$(jq -c . "$T/s.jsonl" | wc -l)" = 4
check "header names the command line" \
    test "$(head -1 "$T/s.jsonl" | jq -c .sweep.devices,.sweep.batch | tr '\n' ' ')" = "4 16 "
check "every configuration ok with time, throughput, peak, TFLOP/s, MFU" \
    test "$(jq -s '[.[1:][] | select(.status == "ok" and .time > 0 and .throughput > 0 and
        .peak_memory > 0 and .tflops_per_device > 0 and .mfu > 0 and .oom == false)] | length' \
        "$T/s.jsonl")" = 3
check "CSV: header + 3 rows" test "$(wc -l <"$T/s.csv" | tr -d ' ')" = 4

# ---- one truth: the same configuration by hand ----
for cfg in "2 4 2" "1 1 2x2"; do
    set -- $cfg
    key="p=$1,k=$2,mesh=$3,recompute=none,solver=glpk"
    if [ "$1" -gt 1 ]; then pipe="--pipeline $1 --microbatches $2"; else pipe=""; fi
    as solve "$T/g.asg" $pipe --mesh "$3" --memory auto -o "$T/p.json"
    s=$rc
    as simulate "$T/g.asg" --plan "$T/p.json" --json
    [ $rc -eq 0 ] || s=1
    sim=$(jq .time "$T/out")
    obj=$(jq .objective "$T/p.json")
    swobj=$(jq -r "select(.config == \"$key\") | .objective" "$T/s.jsonl")
    swsim=$(jq -r "select(.config == \"$key\") | .time" "$T/s.jsonl")
    close "$swobj" "$obj" 1e-9 || s=1
    close "$swsim" "$sim" 1e-9 || s=1
    ok $s "$key: objective $swobj and simulated $swsim s = solve + simulate by hand"
done

# ---- resume ----
head -3 "$T/s.jsonl" >"$T/r.jsonl"
as sweep "$T/g.asg" $R -q -o "$T/r.jsonl"
check "resume after deleting the last line: 2 done before kept, 1 run" \
    grep -q '^sweep: 3 configurations (2 done before), 1 run now' "$T/out"
check "the same 3 configurations, none twice" \
    test "$(jq -r 'select(.config) | .config' "$T/r.jsonl" | sort -u | wc -l)$(wc -l <"$T/r.jsonl" | tr -d ' ')" = 34
cp "$T/r.jsonl" "$T/before.jsonl"
as sweep "$T/g.asg" $R -q -o "$T/r.jsonl"
check "resume of a finished sweep solves nothing and leaves the file" \
    sh -c "grep -q '(3 done before), 0 run now' '$T/out' && cmp -s '$T/r.jsonl' '$T/before.jsonl'"
# a cut last line (a kill in the middle of a write) is dropped and redone
head -3 "$T/s.jsonl" >"$T/c.jsonl"
tail -1 "$T/s.jsonl" | head -c 40 >>"$T/c.jsonl"
as sweep "$T/g.asg" $R -q -o "$T/c.jsonl"
check "cut last line: redone, every line parses" \
    sh -c "grep -q '(2 done before), 1 run now' '$T/out' && test \$(jq -c . '$T/c.jsonl' | wc -l) = 4"
# kill -9 in the middle, then resume
# (--max-axes 2: the 2x2x2 ILP alone takes a minute with glpk)
$AUTOSHARD sweep "$T/g.asg" --devices 8 --pipeline 1,2 --max-axes 2 -q -o "$T/k.jsonl" >/dev/null 2>&1 &
pid=$!
i=0
lines() { if [ -f "$1" ]; then wc -l <"$1" | tr -d ' '; else echo 0; fi; }
while [ $i -lt 300 ] && [ "$(lines "$T/k.jsonl")" -lt 3 ]; do
    sleep 0.1; i=$((i + 1)); done
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
check "killed in the middle: fewer than 5 configurations written" test "$(lines "$T/k.jsonl")" -lt 6
as sweep "$T/g.asg" --devices 8 --pipeline 1,2 --max-axes 2 -q -o "$T/k.jsonl"
n=$(jq -r 'select(.config) | .config' "$T/k.jsonl" | sort -u | wc -l | tr -d ' ')
check "kill -9 then resume: 5 configurations (8 2x4 4x2; 4 2x2), each once" \
    test "$n$(lines "$T/k.jsonl")" = 56

# ---- --jobs N: forked workers write the file --jobs 1 writes ----
untimed() { jq -c 'del(.solve_s, .simulate_s, .wall_s)' "$1"; }
as sweep "$T/g.asg" $R -q --jobs 3 -o "$T/j.jsonl"
ok $rc "--jobs 3"
check "--jobs 3: the same lines as --jobs 1 (timing fields aside), in the same order" \
    sh -c "[ \"\$(jq -c 'del(.solve_s, .simulate_s, .wall_s)' '$T/j.jsonl')\" = \
            \"\$(jq -c 'del(.solve_s, .simulate_s, .wall_s)' '$T/s.jsonl')\" ]"
check "--jobs 3: the set of lines equals --jobs 1's" \
    test "$(untimed "$T/j.jsonl" | sort | md5sum)" = "$(untimed "$T/s.jsonl" | sort | md5sum)"
check "--jobs 3: the same top table" \
    test "$(grep -c '^[123]  *p=' "$T/out")" = 3
# a worker that dies (the test hook kills it on one configuration): recorded, the sweep goes on
key='p=2,k=4,mesh=2,recompute=none,solver=glpk'
AUTOSHARD_SWEEP_CRASH=$key as sweep "$T/g.asg" $R -q --jobs 2 -o "$T/x.jsonl"
ok $rc "--jobs 2 with a worker killed on $key: exit 0"
check "the dead worker's configuration is failed with its error, the 2 others ok" \
    sh -c "grep -q '3 run now, 0 pruned by the memory lower bound, 0 OOM, 0 infeasible, 1 failed' '$T/out' &&
        test \"\$(jq -r 'select(.config == \"$key\") | .status + \": \" + .error' '$T/x.jsonl')\" = 'error: the worker died: Killed' &&
        test \"\$(jq -r 'select(.status == \"ok\") | .config' '$T/x.jsonl' | wc -l)\" = 2"
grep -v "$key" "$T/x.jsonl" >"$T/x2.jsonl"
as sweep "$T/g.asg" $R -q --jobs 2 -o "$T/x2.jsonl"
check "resume redoes it: then the file equals --jobs 1's" \
    test "$(untimed "$T/x2.jsonl" | sort | md5sum)" = "$(untimed "$T/s.jsonl" | sort | md5sum)"
as sweep "$T/g.asg" $R -q --jobs 2 --time-limit 0.001 -o "$T/tl.jsonl"
check "--jobs 2 --time-limit 0.001: every configuration failed on its time limit, exit 0" \
    sh -c "[ $rc -eq 0 ] && test \"\$(jq -r 'select(.config) | .error' '$T/tl.jsonl' | grep -c 'time limit')\" = 3"
# the progress line: on a terminal only (script(1) gives one), not with -q
if command -v script >/dev/null 2>&1; then
    rm -f "$T/t.jsonl"
    script -qec "$AUTOSHARD sweep $T/g.asg $R --jobs 2 -o $T/t.jsonl >/dev/null" /dev/null >"$T/tty" 2>&1 || true
    check "progress on a terminal: done/total, running, best so far, ETA" \
        sh -c "tr '\\r' '\\n' <'$T/tty' | grep -q '^sweep: [0-3]/3 done, [0-2] running, best .* ETA '"
    rm -f "$T/t.jsonl"
    script -qec "$AUTOSHARD sweep $T/g.asg $R --jobs 2 -q -o $T/t.jsonl >/dev/null" /dev/null >"$T/tty" 2>&1 || true
    check "-q: no progress line" test ! -s "$T/tty"
else
    echo "ok $((tap_n + 1)) # SKIP script(1) not installed"; tap_n=$((tap_n + 1))
    echo "ok $((tap_n + 1)) # SKIP script(1) not installed"; tap_n=$((tap_n + 1))
fi

# ---- --plans DIR: one plan file per configuration, named in its line ----
as sweep "$T/g.asg" $R -q --jobs 2 --plans "$T/plans" -o "$T/pl.jsonl"
ok $rc "--plans DIR (made when missing)"
p1=$(jq -r 'select(.config == "p=1,k=1,mesh=2x2,recompute=none,solver=glpk") | .plan' "$T/pl.jsonl")
check "each line names its plan file, which exists" \
    sh -c "test \"\$(jq -r 'select(.config) | .plan' '$T/pl.jsonl' | xargs -n1 test -s && echo y)\" = y &&
        test \"$p1\" = '$T/plans/p-1_k-1_mesh-2x2_recompute-none_solver-glpk.json'"
as simulate "$T/g.asg" --plan "$p1" --json
check "the plan file simulates to the line's time" \
    close "$(jq .time "$T/out")" "$(jq -r 'select(.plan == "'"$p1"'") | .time' "$T/pl.jsonl")" 1e-12
echo x >"$T/notdir"
as sweep "$T/g.asg" $R -q --plans "$T/notdir" -o "$T/pl2.jsonl"
expect_fail 2 'not a directory' "--plans FILE: not a directory"

# ---- kill -9 at 20 random moments, started again each time with the same command ----
# A 4-layer MLP on 8 devices: 60 short configurations, with --plans.  Each run is killed
# a random 0..20 ms after its first new line (at most 2 s), so the kills spread over the
# sweep, in the middle of its writes, whatever the start-up takes.  20 kills with
# --jobs 1, then 4 with --jobs 2 (whose lines come in bursts, in enumeration order).
as gen mlp --layers 4 --hidden 64 --batch 16 --train -o "$T/m.asg"
K="$T/m.asg --devices 8 --max-axes 1 --solver glpk,beam --microbatches 1,2,4,8,16 --accumulate"
K="$K --recompute none,full -q"
as sweep $K -o "$T/k1.jsonl"
ok $rc "the kill test's sweep, uninterrupted: 60 configurations"
rnd() { awk -v s="$1" -v lo="$2" -v w="$3" 'BEGIN { srand(s); printf "%.3f", lo + rand() * w }'; }
kills() { # kills JOBS COUNT FILE: kill the sweep COUNT times, then run it to the end
    local i=0 cut=0 torn=0 bad=0 t0 n n0 w pid f=$3
    t0=$(date +%s)
    while [ $i -lt $2 ]; do
        n0=$(lines "$f")
        $AUTOSHARD sweep $K --jobs $1 --plans "$T/kp$1" -o "$f" >/dev/null 2>&1 &
        pid=$!
        w=0
        while [ $w -lt 200 ] && [ "$(lines "$f")" -le $n0 ] && kill -0 $pid 2>/dev/null; do
            sleep 0.01; w=$((w + 1)); done
        sleep "$(rnd "$i$$" 0 0.02)"
        kill -9 $pid 2>/dev/null || true
        wait $pid 2>/dev/null || true
        n=$(lines "$f")
        [ "$n" -lt 61 ] && cut=$((cut + 1))
        # every line but the last parses (the last may be torn: the next run repairs it)
        if [ "$n" -gt 1 ]; then head -n $((n - 1)) "$f" | jq -e . >/dev/null 2>&1 || bad=$((bad + 1)); fi
        if [ -s "$f" ] && [ "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" != '\n' ]; then
            torn=$((torn + 1)); fi
        i=$((i + 1))
    done
    echo "# --jobs $1: $cut of $2 kills interrupted the sweep ($(lines "$f") lines then)," \
        "$torn left a torn last line; $(($(date +%s) - t0)) s"
    check "--jobs $1, killed $2 times: $cut kills interrupted it, whole lines before the last ($bad bad)" \
        test "$cut" -ge $(($2 / 10 > 0 ? $2 / 10 : 1)) -a "$bad" -eq 0
    as sweep $K --jobs $1 --plans "$T/kp$1" -o "$f"
    ok $rc "--jobs $1: started again to the end"
    check "--jobs $1: no configuration lost or done twice: 60 distinct in 60 lines + header" \
        test "$(jq -r 'select(.config) | .config' "$f" | sort -u | wc -l | tr -d ' ')/$(lines "$f")" = 60/61
    check "--jobs $1: no partial line: every line parses" test "$(jq -c . "$f" | wc -l | tr -d ' ')" = 61
    check "--jobs $1: the lines equal the uninterrupted run's (timing fields aside)" \
        test "$(untimed "$f" | jq -c 'del(.plan)' | sort | md5sum)" = "$(untimed "$T/k1.jsonl" | sort | md5sum)"
    check "--jobs $1: every line's plan file exists" \
        test "$(jq -r 'select(.config) | .plan' "$f" | xargs -n1 test -s && echo y)" = y
}
kills 1 20 "$T/kk1.jsonl"
kills 2 4 "$T/kk2.jsonl"

# ---- pruning by the memory lower bound ----
as hw show a100-dgx
sed 's/^memory *=.*/memory = 45MiB/; s/^reserved_memory *=.*/reserved_memory = 0/; s/^name *=.*/name = small/' "$T/out" >"$T/small.hw"
# P = 4 (one device per stage: a whole layer and the embedding unsharded) cannot fit
as sweep "$T/g.asg" --devices 4 --pipeline 1,4 --max-axes 1 --hw "$T/small.hw" -q -o "$T/m.jsonl"
check "45 MiB per device: 1 pruned by the memory lower bound, counted" \
    grep -q '2 configurations (0 done before), 2 run now, 1 pruned by the memory lower bound' "$T/out"
p=$(jq -r 'select(.status == "pruned" and .lower_bound > .capacity) | .pipeline' "$T/m.jsonl" | tr '\n' ' ')
q=$(jq -r 'select(.status == "ok" and .peak_memory <= .capacity) | .pipeline' "$T/m.jsonl")
check "P = 4 pruned (lower bound > capacity), P = 1 solved and fits" test "$p$q" = "4 1"

# ---- --svg: the Pareto chart ----
wellformed() {
    if command -v xmllint >/dev/null 2>&1; then xmllint --noout "$1"
    else python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$1"; fi; }
front() { # the Pareto front of the fitting configurations of a JSONL, by jq
    jq -s '[.[1:][] | select(.status == "ok")] | sort_by(.peak_memory, -.throughput) |
        reduce .[] as $r ({b: -1, n: 0}; if $r.throughput > .b then {b: $r.throughput, n: (.n + 1)}
        else . end) | .n' "$1"; }
as sweep "$T/g.asg" $R -q -o "$T/s.jsonl" --svg "$T/s.svg"
ok $rc "--svg on a finished sweep"
check "the SVG is well-formed XML" wellformed "$T/s.svg"
check "one blue dot per configuration that fits (3), none red" \
    test "$(grep -c 'class="fit"' "$T/s.svg")/$(grep -c 'class="nofit"' "$T/s.svg")" = 3/0
as sweep $K -o "$T/k1.jsonl" --svg "$T/k.svg"
nfront=$(grep -o 'class="front"[^>]*points="[^"]*"' "$T/k.svg" | sed 's/.*points="//' | tr ' ' '\n' | grep -c ,)
check "the MLP sweep's front joins its Pareto-optimal configurations ($nfront; jq finds $(front "$T/k1.jsonl"))" \
    sh -c "test '$nfront' = '$(front "$T/k1.jsonl")' && test '$nfront' -ge 2"
check "axis labels and ticks" \
    sh -c "grep -q 'peak memory per device (MiB)' '$T/s.svg' && grep -q 'throughput (samples/s)' '$T/s.svg' &&
        test \$(grep -c 'class=\"xtick\"' '$T/s.svg') -ge 3 && test \$(grep -c 'class=\"ytick\"' '$T/s.svg') -ge 3"
as sweep "$T/g.asg" --devices 4 --pipeline 1,4 --max-axes 1 --hw "$T/small.hw" -q -o "$T/m.jsonl" \
    --svg "$T/m.svg"
check "45 MiB: the pruned configuration in red, the other in blue" \
    test "$(grep -c 'class="fit"' "$T/m.svg")/$(grep -c 'class="nofit"' "$T/m.svg")" = 1/1
if command -v rsvg-convert >/dev/null 2>&1; then
    check "rsvg-convert renders it to a PNG" \
        sh -c "rsvg-convert -o '$T/s.png' '$T/s.svg' && test \"\$(head -c 4 '$T/s.png' | od -An -c | tr -d ' ')\" = 211PNG"
else
    tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP rsvg-convert not installed (Debian librsvg2-bin)"
fi
as sweep "$T/g.asg" $R -q -o "$T/s.jsonl" --svg "$T/nodir/s.svg"
check "an SVG that cannot be written: exit 1, one line, no file" \
    sh -c "[ $rc -ne 0 ] && [ \$(grep -c . '$T/err') -eq 1 ] && test ! -e '$T/nodir/s.svg'"

# ---- bad input: one "autoshard:" line (then the usage hint), exit 2 ----
expect_fail() { # the usage hint follows usage errors: one error line, nothing else
    local s=0
    [ "$rc" -eq "$1" ] || s=1
    [ "$(grep -c '^autoshard: ' "$T/err")" -eq 1 ] && grep -q -- "$2" "$T/err" || s=1
    [ "$(grep -v -e '^usage: ' -e '^Try ' "$T/err" | grep -c .)" -eq 1 ] || s=1
    if [ $s -ne 0 ]; then echo "# exit $rc, stderr:"; head -3 "$T/err" | sed 's/^/#   /'; fi
    ok $s "$3"
}
as sweep "$T/g.asg" --devices 0
expect_fail 2 'devices' "--devices 0"
as sweep "$T/g.asg" --devices 4 --solver glpk,nosuch
expect_fail 2 'nosuch' "unknown solver"
as sweep "$T/g.asg" --devices 4 --jobs 0
expect_fail 2 'jobs' "--jobs 0"
as sweep "$T/g.asg" --devices 4 --pipeline 3
expect_fail 2 'pipeline 3 does not divide --devices 4' "P not dividing N"
as sweep "$T/g.asg" --devices 4 --microbatches 3 --pipeline 2
expect_fail 2 'microbatches 3 does not divide the batch 16' "K not dividing the batch"
as sweep "$T/g.asg" --devices 8 --pipeline 1,2 -q -o "$T/s.jsonl"
expect_fail 2 'written by another sweep' "resume with another command line"
check "the other sweep's JSONL is left alone" test "$(wc -l <"$T/s.jsonl" | tr -d ' ')" = 4

# a configuration no plan fits (the ILP proves it; the lower bound did not prune it) is an
# answer, counted as infeasible, not as failed
as gen bert --layers 2 --batch 8 --seq 128 --train -o "$T/b.asg"
as hw show a10-pcie
sed -e 's/^memory .*/memory = 300MiB/' -e 's/^reserved_memory .*/reserved_memory = 0/' "$T/out" >"$T/m.hw"
as sweep "$T/b.asg" --devices 4 --hw "$T/m.hw" --role data,tensor --time-limit 5 -q -o "$T/inf.jsonl"
ok $rc "2-layer BERT on 4 devices of 300 MiB, --role data,tensor: exit 0"
check "mesh 1x4 is infeasible, with its error; the summary counts it as infeasible, not failed" \
    sh -c "test \"\$(jq -r 'select(.status == \"infeasible\") | .config + \": \" + .error' '$T/inf.jsonl')\" = \
        'p=1,k=1,mesh=1x4,recompute=none,solver=glpk: stage 0: no plan fits the memory budget' &&
        grep -q ' 0 OOM, 1 infeasible, 0 failed, ' '$T/out'"

# beam and mcts say on stderr which plan won in `solve`; in a sweep they stay silent (one line
# per stage solve would run through the progress line)
as sweep "$T/g.asg" --devices 2 --pipeline 1 --solver beam,mcts -o "$T/h.jsonl"
ok $rc "--solver beam,mcts on 2 devices"
check "the heuristics' which-plan-won lines are not printed in a sweep" \
    sh -c "! grep -q 'the plan is' '$T/err' && test \"\$(jq -r 'select(.status == \"ok\") | .config' '$T/h.jsonl' | wc -l)\" = 2"

done_testing
