#!/bin/sh
# sim_scale.sh -- issue 12 items 2 and 3: the simulator on gpt3-175b.
#
#   bench/sim_scale.sh [DIR]   (AUTOSHARD=path/to/autoshard, BENCH_SIM=path/to/bench_sim;
#                               defaults ./autoshard and bench/bench_sim)
#
# 1. 64 devices (batch 64, `solve --mesh 8x8`, `lower --no-symmetry`: 1.05 M
#    events, 1.64 M lines): `bench_sim --program` (parse lines/s and engine
#    events/s of CPU, best of 3 and first run) and `simulate --program` end to
#    end (CPU user+sys, max RSS).  Targets: >= 5 M lines/s, >= 5 M events/s.
# 2. 1024 devices, t=8 x d=8 per stage (`--mesh 8x8`), p=16, K=64 (batch 512,
#    `solve --pipeline 16 --microbatches 64 --memory auto`, about a minute of
#    CPU): `simulate GRAPH --plan` (reads the graph and plan, lowers straight
#    into the engine, simulates) in CPU seconds and max RSS (target < 10 s and
#    < 1 GB), `lower` to text and `simulate --program` of it (same time).
# Graphs, plans and programs are kept in DIR (default a temporary directory),
# so a second run with the same DIR skips gen/solve/lower.  CPU figures: the
# machine may be shared, wall time is not reported.
set -u
A=${AUTOSHARD:-./autoshard}
B=${BENCH_SIM:-bench/bench_sim}
if [ $# -ge 1 ]; then
    D=$1
    mkdir -p "$D" || exit 1
else
    D=$(mktemp -d "${TMPDIR:-/tmp}/sim_scale.XXXXXX")
    trap 'rm -rf "$D"' EXIT
fi
# cpu LABEL CMD...: run CMD (stdout to $D/out), print CPU user+sys and max RSS
cpu() {
    label=$1
    shift
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "%U %S %M" -o "$D/time" "$@" >"$D/out" 2>"$D/err"
        s=$?
        awk -v l="$label" '{ u = $1; y = $2; m = $3 } END {
            printf "  %-44s %6.2f s CPU (%.2f user + %.2f sys), max RSS %d MB\n", l, u + y, u, y, m / 1024 }' "$D/time"
    else
        "$@" >"$D/out" 2>"$D/err"
        s=$?
        echo "  $label (no /usr/bin/time: CPU not measured)"
    fi
    [ $s -le 3 ] || { echo "  failed ($s): $(head -1 "$D/err")"; exit 1; }
}

echo "gpt3-175b, 64 devices (8x8, no pipeline), batch 64"
[ -f "$D/g64.asg" ] || "$A" gen gpt3-175b --batch 64 --train -o "$D/g64.asg" || exit 1
[ -f "$D/p64.json" ] || "$A" solve "$D/g64.asg" --mesh 8x8 -o "$D/p64.json" >/dev/null || exit 1
[ -f "$D/p64.prog" ] || "$A" lower "$D/g64.asg" --plan "$D/p64.json" --no-symmetry -o "$D/p64.prog" ||
    exit 1
"$B" --program "$D/p64.prog" 3 | sed 's/^/  /'
cpu "simulate --program (1.64 M lines, end to end)" "$A" simulate --program "$D/p64.prog"

echo "gpt3-175b, 1024 devices (t=8 x d=8 per stage, p=16, K=64, 1f1b), batch 512"
[ -f "$D/g512.asg" ] || "$A" gen gpt3-175b --batch 512 --train -o "$D/g512.asg" || exit 1
if [ ! -f "$D/p1024.json" ]; then
    cpu "solve --pipeline 16 --microbatches 64" "$A" solve "$D/g512.asg" --mesh 8x8 --pipeline 16 \
        --microbatches 64 --memory auto -o "$D/p1024.json"
fi
cpu "simulate GRAPH --plan (read, lower, simulate)" "$A" simulate "$D/g512.asg" --plan "$D/p1024.json" --json
t1=$(sed -n 's/^  "time": \([^,]*\),/\1/p' "$D/out")
sed -n 's/^  "\(events\|explicit_devices\|devices\)": \([0-9]*\),/  \1 \2/p' "$D/out" | tr '\n' ' '
echo
cpu "lower (program text)" "$A" lower "$D/g512.asg" --plan "$D/p1024.json" -o "$D/p1024.prog"
echo "  program text: $(wc -l <"$D/p1024.prog") lines, $(($(wc -c <"$D/p1024.prog") / 1000000)) MB"
cpu "simulate --program of it" "$A" simulate --program "$D/p1024.prog" --json
t2=$(sed -n 's/^  "time": \([^,]*\),/\1/p' "$D/out")
echo "  iteration time: simulate --plan $t1 s, simulate --program $t2 s$([ "$t1" = "$t2" ] && echo " (equal)" || echo " (DIFFER)")"
