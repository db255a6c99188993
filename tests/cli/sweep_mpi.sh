#!/bin/sh
# sweep_mpi.sh -- distributed sweeps (docs/sweep.md "Distributed"): built --with-mpi,
# `mpirun --oversubscribe -n R autoshard sweep ...` on localhost writes the JSONL that
# --jobs 1 writes (the same lines, timing fields aside, in the same order), rank 0
# deals the configurations and ranks > 0 evaluate them, a resumed run evaluates only
# what is missing (a cut file; mpirun killed with -9 six times), and a JSONL of another sweep is refused with exit 2 without leaving
# the other ranks waiting.  Skipped when the binary was built without MPI (its
# `sweep --help` has no "(MPI)" line) or mpirun is missing.
. "${top_srcdir:-.}/tests/cli/lib.sh"

command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
"$AUTOSHARD" sweep --help 2>/dev/null | grep -q '^  (MPI) ' || skip_all "built without --with-mpi"
command -v mpirun >/dev/null 2>&1 || skip_all "mpirun not installed"
if [ "$(id -u)" -eq 0 ]; then # Open MPI refuses root unless told
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
# containers often forbid the cross-memory attach of Open MPI's shared-memory transport
OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_btl_vader_single_copy_mechanism
# mpi R ARGS...: autoshard under mpirun with R ranks on this machine; out, err, rc as `as`
mpi() {
    r=$1
    shift
    set +e
    timeout 120 mpirun --oversubscribe -n "$r" "$AUTOSHARD" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    set -e
}
fields() { jq -c '[.config, .status, .objective, .time, .throughput, .peak_memory]' "$1"; }
untimed() { jq -c 'del(.solve_s, .simulate_s, .wall_s)' "$1"; }
evaluated() { # configurations the ranks > 0 say they evaluated, summed
    sed -n 's/^sweep: rank [0-9]* of [0-9]* evaluated \([0-9]*\) configurations.*/\1/p' "$T/err" |
        awk '{s += $1} END {print s + 0}'; }

as gen gpt --layers 4 --hidden 64 --heads 4 --seq 16 --batch 16 --train -o "$T/g.asg"
ok $rc "4-layer GPT, hidden 64, batch 16"
# 3 configurations: P = 1 on 4 and 2x2, P = 2 (K = 4) on 2
R="--devices 4 --pipeline 1,2"
as sweep "$T/g.asg" $R -q --jobs 1 -o "$T/s.jsonl"
ok $rc "--jobs 1 (the reference)"
cp "$T/out" "$T/s.out"

mpi 2 sweep "$T/g.asg" $R -o "$T/m.jsonl"
ok $rc "mpirun -n 2: exit 0"
check "mpirun -n 2: the lines of --jobs 1 (timing fields aside), in the same order" \
    test "$(untimed "$T/m.jsonl" | md5sum)" = "$(untimed "$T/s.jsonl" | md5sum)"
check "mpirun -n 2: config, status, objective, time, throughput, peak memory equal --jobs 1's" \
    test "$(fields "$T/m.jsonl" | md5sum)" = "$(fields "$T/s.jsonl" | md5sum)"
check "mpirun -n 2: rank 1 evaluated the 3 configurations" \
    grep -q '^sweep: rank 1 of 2 evaluated 3 configurations' "$T/err"
check "mpirun -n 2: one table and one count line (rank 0's), as --jobs 1 prints" \
    sh -c "[ \"\$(grep -c '^sweep: 3 configurations (0 done before), 3 run now' '$T/out')\" = 1 ] &&
        [ \"\$(grep '^[0-9]  *p=' '$T/out')\" = \"\$(grep '^[0-9]  *p=' '$T/s.out')\" ]"

mpi 3 sweep "$T/g.asg" $R -o "$T/m3.jsonl"
ok $rc "mpirun -n 3: exit 0"
check "mpirun -n 3: the same file, each configuration evaluated once over ranks 1 and 2" \
    sh -c "[ \"\$(untimed '$T/m3.jsonl' | md5sum)\" = \"\$(untimed '$T/s.jsonl' | md5sum)\" ] &&
        [ $(evaluated) = 3 ]"

# resume: a run killed after one configuration (header + 1 line, and a cut line)
head -2 "$T/s.jsonl" >"$T/r.jsonl"
sed -n 3p "$T/s.jsonl" | head -c 40 >>"$T/r.jsonl"
mpi 2 sweep "$T/g.asg" $R -o "$T/r.jsonl"
ok $rc "mpirun -n 2 resuming a cut file: exit 0"
check "resume: 1 done before, 2 run now, evaluated by rank 1" \
    sh -c "grep -q '^sweep: 3 configurations (1 done before), 2 run now' '$T/out' && [ $(evaluated) = 2 ]"
check "resume: the file holds --jobs 1's lines, each configuration once" \
    test "$(untimed "$T/r.jsonl" | sort | md5sum)" = "$(untimed "$T/s.jsonl" | sort | md5sum)"
mpi 2 sweep "$T/g.asg" $R -o "$T/r.jsonl"
check "again: nothing left to run" \
    sh -c "[ $rc -eq 0 ] && grep -q '(3 done before), 0 run now' '$T/out' && [ $(evaluated) = 0 ]"

# kill -9 of mpirun at random moments, started again each time: no rank left running (they
# die with mpirun), no configuration lost or done twice, the lines of --jobs 1
KS="$T/g.asg --devices 4 --pipeline 1,2 --microbatches 2,4 --accumulate --recompute none,full -q"
as sweep $KS -o "$T/k1.jsonl"
ok $rc "the kill test's sweep with --jobs 1: 12 configurations"
lines() { if [ -f "$1" ]; then wc -l <"$1" | tr -d ' '; else echo 0; fi; }
i=0 cut=0 left=0
while [ $i -lt 6 ]; do
    n0=$(lines "$T/kk.jsonl")
    mpirun --oversubscribe -n 3 "$AUTOSHARD" sweep $KS -o "$T/kk.jsonl" >/dev/null 2>&1 &
    pid=$!
    w=0
    while [ $w -lt 500 ] && [ "$(lines "$T/kk.jsonl")" -le $n0 ] && kill -0 $pid 2>/dev/null; do
        sleep 0.01; w=$((w + 1)); done
    # the first kill comes at once after the first new line, so that at least one cuts the
    # sweep however fast the machine finishes the rest; the others at random moments
    [ $i -eq 0 ] || sleep "$(awk -v s="$i$$" 'BEGIN { srand(s); printf "%.3f", rand() * 0.3 }')"
    kill -9 $pid 2>/dev/null || true
    wait $pid 2>/dev/null || true
    [ "$(lines "$T/kk.jsonl")" -lt 13 ] && cut=$((cut + 1))
    sleep 0.3
    left=$((left + $(pgrep -f "sweep $T/g.asg" | wc -l)))
    i=$((i + 1))
done
echo "# mpirun -n 3 killed 6 times: $cut interrupted the sweep; $left ranks outlived mpirun"
check "6 kills of mpirun -n 3: at least 1 interrupted the sweep, no rank outlived mpirun" \
    test "$cut" -ge 1 -a "$left" -eq 0
mpi 3 sweep $KS -o "$T/kk.jsonl"
ok $rc "started again to the end"
check "no configuration lost or done twice: 12 distinct in 12 lines + header, each parses" \
    test "$(jq -r 'select(.config) | .config' "$T/kk.jsonl" | sort -u | wc -l | tr -d ' ')/$(lines "$T/kk.jsonl")/$(jq -c . "$T/kk.jsonl" | wc -l | tr -d ' ')" = 12/13/13
check "the lines equal --jobs 1's (timing fields aside)" \
    test "$(untimed "$T/kk.jsonl" | sort | md5sum)" = "$(untimed "$T/k1.jsonl" | sort | md5sum)"

# bad input on rank 0: one line, exit 2, and the other ranks end (timeout 120 guards a hang)
mpi 2 sweep "$T/g.asg" --devices 2 -o "$T/s.jsonl"
check "a JSONL of another sweep: exit 2 from mpirun, one line from rank 0, no hang" \
    sh -c "[ $rc -eq 2 ] && [ \"\$(grep -c 'written by another sweep' '$T/err')\" = 1 ]"
mpi 2 sweep "$T/g.asg" --devices 4 --pipeline 3 -o "$T/bad.jsonl"
check "an option error found by every rank: reported once, exit 2" \
    sh -c "[ $rc -eq 2 ] && [ \"\$(grep -c 'does not divide' '$T/err')\" = 1 ]"

done_testing
