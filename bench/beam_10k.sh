#!/bin/sh
# beam_10k.sh -- issue 15 item 5's speed target "beam 10k ops x K=100 under 5 s".
# The graph: gpt3-13b's training step with 60 layers instead of 40 (batch 8), 9,937 ops,
#   autoshard gen gpt3-13b --layers 60 --train --batch 8
# solved on mesh 8 with every layer apart (--no-tie: the beam walks all 6,084 units of the
# reduced problem, not one tied layer) by
#   autoshard solve G --mesh 8 --no-tie --solver beam --beam-width 100
# RUNS times (default 3).  Prints per run the solve's own "time" line (wall clock of the
# solver: beam, its start and polish; the problem's build and the reductions are on the
# build line), the whole command's CPU (user + sys), wall and max RSS, and the objective
# and gap.
#
#   bench/beam_10k.sh   (AUTOSHARD=path/to/autoshard, default ./autoshard; RUNS=n;
#                        WIDTH=K, default 100; LAYERS=n, default 60)
#
# Not a test.  Timings on a machine shared with other work are slow: compare CPU times.
set -u
A=${AUTOSHARD:-./autoshard}
RUNS=${RUNS:-3}
WIDTH=${WIDTH:-100}
LAYERS=${LAYERS:-60}
[ -x "$A" ] || { echo "beam_10k.sh: build $A first (make)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/beam10k.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$A" gen gpt3-13b --layers "$LAYERS" --train --batch 8 -o "$T/g.asg" || exit 1
i=1
while [ "$i" -le "$RUNS" ]; do
    /usr/bin/time -f "%U %S %e %M" -o "$T/time" "$A" solve "$T/g.asg" --mesh 8 --no-tie \
        --solver beam --beam-width "$WIDTH" > "$T/out" 2> "$T/err" || { cat "$T/err" >&2; exit 1; }
    [ "$i" = 1 ] && grep -E '^(graph|build|left) ' "$T/out"
    read -r us ss wall rss < "$T/time"
    printf 'run %d: %s | whole command %.2f s CPU, %.2f s wall, %d MB | %s\n' "$i" \
        "$(grep '^time ' "$T/out" | tr -s ' ')" "$(awk "BEGIN { print $us + $ss }")" "$wall" \
        $((rss / 1024)) "$(grep -E '^(objective|gap) ' "$T/out" | tr -s ' ' | paste -sd' ')"
    i=$((i + 1))
done
