#!/bin/sh
# hlo_budget.sh -- issue 11's HLO target: the generated GPT-3 175B training step of
# 312k instructions (bench/bench_hlo -l 288, no repeated blocks found in it) on mesh 8,
# without a budget and under a binding one (default 1408 GiB: halfway between the lower
# bound solve prints for a hopeless budget, 486.97 GiB, and the unbudgeted peak, 2.28 TiB;
# it was 2143 GiB while broadcasts of constants could only be sharded as partial sums and
# the unbudgeted peak was 3.80 TiB).
# Per run: the row generation's rounds (solve -vv), status, objective, bound, gap, and the
# whole command's wall clock and max RSS.  Under a budget the command then refits by the
# simulator's peak (docs/solve.md says why that does not fit on this step yet): the
# "row generation" lines give the time to the rows' plan.
#
#   bench/hlo_budget.sh   (AUTOSHARD=path, default ./autoshard; BENCH_HLO=path, default
#                          bench/bench_hlo; LAYERS=288; BUDGET=1408GiB; LIMIT=60;
#                          SOLVERS="glpk cbc")
#
# Not a test: about 3 minutes and 1.5 GB per run.
set -u
A=${AUTOSHARD:-./autoshard}
H=${BENCH_HLO:-bench/bench_hlo}
LAYERS=${LAYERS:-288}
BUDGET=${BUDGET:-1408GiB}
LIMIT=${LIMIT:-60}
SOLVERS=${SOLVERS:-glpk cbc}
[ -x "$A" ] || { echo "hlo_budget.sh: build $A first (make)" >&2; exit 2; }
[ -x "$H" ] || { echo "hlo_budget.sh: build $H first (make $H)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/hlobudget.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$H" -l "$LAYERS" -o "$T/step.hlo" > /dev/null || exit 1
for s in $SOLVERS; do
    for mem in 0 "$BUDGET"; do
        /usr/bin/time -f "%e %M" -o "$T/time" "$A" -vv solve "$T/step.hlo" --mesh 8 \
            --memory "$mem" --solver "$s" --time-limit "$LIMIT" -o /dev/null \
            > "$T/out" 2> "$T/err"
        rc=$?
        read -r wall rss <<EOT
$(tail -n 1 "$T/time")
EOT
        printf '%s, memory %s: exit %d, %.1f s wall, %d MB | %s\n' "$s" "$mem" "$rc" "$wall" \
            $((rss / 1024)) "$({ grep -E '^(status|objective|gap) |^bound +[0-9.e+-]+ s$' "$T/out"; } |
                                tr -s ' ' | paste -sd'|' | sed 's/|/ | /g')"
        grep -E '^solve: row generation|^autoshard: ' "$T/err" | sed 's/^/    /'
    done
done
