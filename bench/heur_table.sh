#!/bin/sh
# heur_table.sh -- issue 15 item 5: the table of the heuristics against the ILP.
# For gpt2-small, bert-large, t5-base, gpt3-1.3b and gpt3-13b (batch 8, training
# step, layers tied) on meshes 8, 2x4 and 2x8, without a budget and with a binding
# one (halfway between the smallest peak any plan can have and the ILP's plan's
# peak): CPU seconds and gap to the reference plan of beam K = 1, 10, 100 and mcts
# 1,000 and 10,000 episodes, and the best plan the row knows.
#
#   bench/heur_table.sh [SECONDS] [REFS...]
#       BENCH_HEUR=path (default bench/bench_heur), JOBS=n (default 2),
#       ILP_SECONDS=s (default 60), OUT=dir (default heur_table.d),
#       PRESETS="p1 p2..." (default all five),
#       EXTRA="-x solver/key=value ..." (bench_heur's -x for every heuristic run)
#
# By default the figures are what `autoshard solve` gives: beam and mcts also
# start from the driver's bound-pruning plan (a cell marked "(start)": that plan,
# polished, won; OUT/PRESET.out has each solve's stderr line saying whose plan
# won, with both figures); EXTRA="-x beam/seed=none -x mcts/start=beam"
# gives the searches' own figures (docs/ilp.md, Heuristics).
#
# REFS: files of ILP results as bench_heur -w writes them ("preset mesh tied
# nobudget_obj peak budget_obj", optionally followed by the ILP's two bounds);
# the cheapest plan of all of them is a cell's reference (e.g. long ILP runs).
# A preset and mesh in none of them is solved here once by GLPK (ILP_SECONDS wall)
# and kept in OUT/ilp.refs, so a second run times only the heuristics.
# SECONDS limits every heuristic solve (default 120, wall clock: on a loaded
# machine mcts 10k may stop early, its ms/episode line says at what rate).  The
# presets run in JOBS streams at once (nice -n 5), the dearest first; on two idle
# cores the heuristics take about 20 minutes, the ILPs up to 15 more without REFS.
# Not a test.  The table (markdown) is printed last; the streams' output is kept in
# OUT/PRESET.out.
set -eu
B=${BENCH_HEUR:-bench/bench_heur}
LIM=${1:-120}
[ $# -gt 0 ] && shift
JOBS=${JOBS:-2}
ILPLIM=${ILP_SECONDS:-60}
OUT=${OUT:-heur_table.d}
PRESETS=${PRESETS:-t5-base bert-large gpt3-1.3b gpt3-13b gpt2-small} # dearest first
EXTRA=${EXTRA:-}
MESHES="8 2x4 2x8"
[ -x "$B" ] || { echo "heur_table.sh: build $B first (make bench/bench_heur)" >&2; exit 2; }
mkdir -p "$OUT"
RARGS=""
for f in "$@"; do
    [ -r "$f" ] || { echo "heur_table.sh: cannot read $f" >&2; exit 2; }
    RARGS="$RARGS -r $f"
done
touch "$OUT/ilp.refs"
RARGS="$RARGS -r $OUT/ilp.refs"

# the ILP for the presets and meshes no refs file has
missing=""
for p in $PRESETS; do
    for m in $MESHES; do
        found=0
        for f in "$@" "$OUT/ilp.refs"; do
            if grep -q "^$p $m tied " "$f"; then found=1; fi
        done
        [ $found = 1 ] || missing="$missing $p:$m"
    done
done
if [ -n "$missing" ]; then
    echo "== the ILP's plans for$missing (kept in $OUT/ilp.refs)"
    for pm in $missing; do echo "$pm"; done |
        xargs -P "$JOBS" -I{} sh -c 'pm={}; nice -n 5 "$0" -t "$1" -s none -w "$2" \
            -p "${pm%%:*}" -m "${pm#*:}" > "$3/ilp-${pm%%:*}-${pm#*:}.out"' \
            "$B" "$ILPLIM" "$OUT/ilp.refs" "$OUT"
fi

echo "== the heuristics ($JOBS streams; output in $OUT/PRESET.out)"
start=$(date +%s)
# shellcheck disable=SC2086
for p in $PRESETS; do echo "$p"; done |
    xargs -P "$JOBS" -I{} sh -c 'nice -n 5 "$0" -t "$1" $2 -p {} > "$3/{}.out" 2>&1 ||
        echo "heur_table.sh: bench_heur -p {} failed (see $3/{}.out)" >&2' \
        "$B" "$LIM" "$RARGS $EXTRA" "$OUT"
echo "== $(( $(date +%s) - start )) s wall for the heuristics"
first=1
for p in gpt2-small bert-large t5-base gpt3-1.3b gpt3-13b; do
    case " $PRESETS " in *" $p "*) ;; *) continue ;; esac
    [ -s "$OUT/$p.out" ] || continue
    if [ $first = 1 ]; then
        grep -A1 '^| problem' "$OUT/$p.out" | head -2
        first=0
    fi
    grep '^| [a-z]' "$OUT/$p.out" | grep -v '^| problem' || true
done
for p in $PRESETS; do grep '^(CPU' "$OUT/$p.out" && break; done || true
