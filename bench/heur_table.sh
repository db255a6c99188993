#!/bin/sh
# heur_table.sh -- issue 15 item 5: the table of the heuristics against the ILP.
# For gpt2-small, bert-large, t5-base, gpt3-1.3b and gpt3-13b (batch 8, training
# step, layers tied) on meshes 8, 2x4 and 2x8, without a budget and with a binding
# one (halfway between the smallest peak any plan can have and the ILP's plan's
# peak): CPU seconds and gap to the ILP's plan of beam K = 1, 10, 100 and mcts
# 1,000 and 10,000 episodes.  The ILP (GLPK) is solved once per preset and mesh
# and its results kept in REFS, so a second run times only the heuristics.
#
#   bench/heur_table.sh [SECONDS] [REFS]     (BENCH_HEUR=path, default bench/bench_heur)
#
# SECONDS limits every solve (default 60, wall clock: on a loaded machine mcts
# 10k may stop early, its ms/episode line says at what rate).  Takes 15-40
# minutes; not a test.  The table (markdown) is printed last.
set -eu
B=${BENCH_HEUR:-bench/bench_heur}
LIM=${1:-60}
REFS=${2:-heur_table.refs}
[ -x "$B" ] || { echo "heur_table.sh: build $B first (make bench/bench_heur)" >&2; exit 2; }
if [ ! -s "$REFS" ]; then
    echo "== the ILP's plans (once; kept in $REFS)"
    "$B" -t "$LIM" -s none -w "$REFS" | grep -v '^|' | grep -v '^(CPU'
fi
echo "== the heuristics"
exec "$B" -t "$LIM" -r "$REFS"
