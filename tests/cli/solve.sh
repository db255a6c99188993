#!/bin/sh
# solve.sh -- `autoshard solve` and `autoshard export` on cost graphs: backends
# agree, reductions keep the optimum, k-best, memory exit 3, external solvers
# (cbc, glpsol) round trips through MPS and --solution, malformed input.
. "${top_srcdir:-.}/tests/cli/lib.sh"
D="$top_srcdir/tests/data/costgraph"
I="$top_srcdir/instances"
TINY="$D/tiny.json"
obj() { awk '$1 == "objective" { print $2; exit }' "$T/out"; }
same() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; s = (a < 0 ? -a : a); if (s < 1) s = 1; exit !(a != "" && d <= 1e-6 * s) }'; }
SOLVERS="glpk brute"
# expect_usage PATTERN DESC: exit 2, the message, a usage line and the --help hint.
expect_usage() {
    local s=0
    [ "$rc" -eq 2 ] || s=1
    grep -q -- "$1" "$T/err" || s=1
    grep -q '^usage: autoshard' "$T/err" || s=1
    ok $s "$2"
}
if "$AUTOSHARD" solve --help | grep -q 'cbc (when built'; then :; fi
if "$AUTOSHARD" solve --costgraph "$TINY" -s cbc >/dev/null 2>&1; then SOLVERS="glpk cbc brute"; fi

as solve --help
ok $rc "solve --help exits 0"
as export --help
ok $rc "export --help exits 0"

# every backend, with and without reductions, finds 6.5 on tiny.json
for s in $SOLVERS; do
    for r in "" --no-reduce; do
        as solve --costgraph "$TINY" -s $s $r
        s_ok=$rc; same "$(obj)" 6.5 || s_ok=1
        ok $s_ok "tiny: $s $r objective 6.5"
    done
done

as solve --costgraph "$TINY" -o "$T/plan.json"
s=$rc
grep -q '"solver": "glpk"' "$T/plan.json" || s=1
grep -q '"status": "optimal"' "$T/plan.json" || s=1
grep -q '"strategy_name": "S"' "$T/plan.json" || s=1
ok $s "plan JSON has solver, status and strategy names"
grep -q 'ILP before   31 variables (10 binary), 22 rows' "$T/out"
ok $? "summary reports the ILP size before reductions"

as solve --costgraph "$TINY" --top 4 -o "$T/top.json"
s=$rc
[ "$(grep -c '"objective"' "$T/top.json")" -eq 5 ] || s=1
grep -q '^plan 4 ' "$T/out" || s=1
awk '$1 == "objective" { print $2 } $1 == "plan" { print $3 }' "$T/out" | sort -c -g || s=1
ok $s "--top 4: four plans in non-decreasing order"

# memory: 4 B fits, 2 B does not (every plan needs at least 3 B: the lower bound)
as solve --costgraph "$TINY" --memory 4
ok $rc "memory budget that fits: exit 0"
as solve --costgraph "$TINY" --memory 2
expect_fail 3 "no plan fits in 2 B per device: every plan needs at least 3 B" \
    "memory too small: exit 3 with the memory every plan needs (lower bound, before the ILP)"

# malformed cost graphs
for f in nan:"1:" sizes:"nodes\[0\].d: expected 2 numbers" negmem:"memory -1 is negative" \
         dupedge:"duplicate of edge 0" range:"node index 5 out of range" trunc:"bad_trunc.json:2:" \
         garbage:"bad_garbage.json:1:" cycle:"follow cycle"; do
    as solve --costgraph "$D/bad_${f%%:*}.json"
    expect_fail 2 "${f#*:}" "malformed cost graph bad_${f%%:*}.json: exit 2"
done
as solve --costgraph "$D/missing.json"
expect_fail 1 "missing.json" "missing file: exit 1"
as solve --costgraph "$TINY" -s nosuch
expect_usage "unknown solver 'nosuch'" "unknown solver: exit 2"
as solve --costgraph "$I/hard400.cg" -s brute --no-reduce
expect_fail 2 "more than the limit" "brute force refuses a huge instance"
as solve --costgraph "$TINY" --time-limit -1
expect_usage "time-limit must be" "negative time limit: usage error"

# export: cost graph round trip, MPS, LP
as export --costgraph "$TINY" --format costgraph -o "$T/rt.json"
as solve --costgraph "$T/rt.json"
s=$rc; same "$(obj)" 6.5 || s=1
ok $s "exported cost graph solves to the same objective"
as export --costgraph "$TINY" --format lp --no-reduce -o "$T/tiny.lp"
s=$rc; grep -q 's_3_2' "$T/tiny.lp" || s=1
ok $s "LP export names s_<node>_<strategy>"
as export --costgraph "$TINY" --format xml
expect_usage "format must be" "unknown export format: exit 2"

for r in "" --no-reduce; do
    as export --costgraph "$I/mem60.cg" $r -o "$T/m.mps"
    ok $rc "export mem60 $r as MPS"
    want=$(awk '$2 == "mem60" { print $3 }' "$I/short.solu")
    if [ -n "${CBC_PROG:-}" ]; then
        (cd "$T" && "$CBC_PROG" m.mps solve solu cbc.sol >/dev/null 2>&1)
        as solve --costgraph "$I/mem60.cg" $r --solution "$T/cbc.sol"
        s=$rc; same "$(obj)" "$want" || s=1
        ok $s "cbc program on exported MPS $r: --solution gives the optimum"
    else
        echo "ok $((tap_n += 1)) - # SKIP CBC_PROG not set"
    fi
    if [ -n "${GLPSOL_PROG:-}" ]; then
        "$GLPSOL_PROG" --freemps "$T/m.mps" -w "$T/g.raw" -o "$T/g.txt" >/dev/null 2>&1
        as solve --costgraph "$I/mem60.cg" $r --solution "$T/g.raw"
        s=$rc; same "$(obj)" "$want" || s=1
        as solve --costgraph "$I/mem60.cg" $r --solution "$T/g.txt" -o "$T/gp.json"
        [ $rc -eq 0 ] || s=1; same "$(obj)" "$want" || s=1
        ok $s "glpsol on exported MPS $r: -w and -o solutions give the optimum"
    else
        echo "ok $((tap_n += 1)) - # SKIP GLPSOL_PROG not set"
    fi
done

# malformed and unhelpful solution files (for the plain ILP of tiny.json)
for f in unknown:"bad_sol_unknown.txt:3: unknown variable 'bogus_var'" \
         garbage:"bad_sol_garbage.txt:1: expected 'NAME VALUE'" \
         trunc:"bad_sol_trunc.txt:3: expected 'j COLUMN VALUE'" \
         twice:"strategies set"; do
    as solve --costgraph "$TINY" --no-reduce --solution "$D/bad_sol_${f%%:*}.txt"
    expect_fail 2 "${f#*:}" "malformed solution bad_sol_${f%%:*}.txt: exit 2"
done
as solve --costgraph "$TINY" --no-reduce --solution "$D/sol_infeasible.txt"
expect_fail 3 "infeasible" "solution file reporting infeasibility: exit 3"

# time limit on a hard instance: a feasible plan with its gap, or exit 1
for s in $SOLVERS; do
    [ "$s" = brute ] && continue
    as solve --costgraph "$I/hard400.cg" -s $s --time-limit 0.5
    if [ $rc -eq 0 ]; then
        grep -Eq '^status +(feasible|optimal)' "$T/out" && grep -q '^gap' "$T/out"
        ok $? "$s --time-limit 0.5: plan with status and gap"
    else
        expect_fail 1 "stopped at the time limit (0.5 s) without a feasible plan" \
            "$s --time-limit 0.5: exit 1 without an incumbent"
    fi
done

# instance regression (SCIP's .solu): every exact backend, reduced and plain
while read -r f; do
    case $f in \#*|"") continue ;; esac
    want=$(awk -v n="${f%.cg}" '$2 == n { print $3 }' "$I/short.solu")
    for s in $SOLVERS; do
        [ "$s" = brute ] && continue
        for r in "" --no-reduce; do
            as solve --costgraph "$I/$f" -s $s $r
            st=$rc; same "$(obj)" "$want" || st=1
            ok $st "$f: $s $r matches short.solu"
        done
    done
done < "$I/short.test"
done_testing
