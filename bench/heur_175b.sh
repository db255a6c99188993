#!/bin/sh
# heur_175b.sh -- the heuristics at the sizes users run: gpt3-175b's training step
# (batch 64) on 64 devices as a 3-axis mesh (4x4x4) under a binding budget, and on 8x8,
# each solver in one command under one --time-limit, as a user runs it:
#   autoshard gen gpt3-175b --batch 64 --train
#   autoshard solve G --mesh M --memory B --solver S --time-limit T
# Prints per case the solver's lines on stderr (whose plan won), objective, bound, gap,
# the peak, and the whole command's CPU (user + sys), wall and max RSS.  The exact
# backend's row is the reference (its bound is tighter: it has the whole time for it).
#
#   bench/heur_175b.sh   (AUTOSHARD=path/to/autoshard, default ./autoshard; LIMIT=s,
#                         default 60; SOLVERS="glpk beam mcts"; CASES="4x4x4:324GiB ...")
#
# Not a test.  Under a time limit the heuristics' start depends on the time (the lines
# say so): on a loaded machine the figures move; compare CPU times.
set -u
A=${AUTOSHARD:-./autoshard}
LIMIT=${LIMIT:-60}
SOLVERS=${SOLVERS:-glpk beam mcts}
CASES=${CASES:-4x4x4:324GiB 8x8:394GiB}
[ -x "$A" ] || { echo "heur_175b.sh: build $A first (make)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/heur175b.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$A" gen gpt3-175b --batch 64 --train -o "$T/g.asg" || exit 1
for c in $CASES; do
    mesh=${c%%:*}
    mem=${c#*:}
    for s in $SOLVERS; do
        /usr/bin/time -f "%U %S %e %M" -o "$T/time" "$A" solve "$T/g.asg" --mesh "$mesh" \
            --memory "$mem" --solver "$s" --time-limit "$LIMIT" -o /dev/null \
            > "$T/out" 2> "$T/err" || { cat "$T/err" >&2; exit 1; }
        read -r us ss wall rss < "$T/time"
        printf '%s under %s, %s: %s | %.1f s CPU, %.1f s wall, %d MB\n' "$mesh" "$mem" "$s" \
            "$({ grep '^objective ' "$T/out"; grep '^bound ' "$T/out" | tail -1
                 grep '^gap ' "$T/out" | tail -1; grep '^peak memory ' "$T/out"; } |
               tr -s ' ' | paste -sd'|' | sed 's/|/ | /g')" \
            "$(awk "BEGIN { print $us + $ss }")" "$wall" $((rss / 1024))
        grep -E '^gap .*the plan fits' "$T/out" | tr -s ' ' | sed 's/^/    /'
        grep -E '^(beam|mcts): ' "$T/err" | sed 's/^/    /'
    done
done
