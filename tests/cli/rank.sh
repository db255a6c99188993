#!/bin/sh
# rank.sh -- `autoshard rank` reads the array of plans `solve --top K -o` writes as
# well as single plans, `--json` gives the same figures as the table, and Spearman's
# rho and Kendall's tau are "undefined" (null in JSON) when an order is all ties.
. "${top_srcdir:-.}/tests/cli/lib.sh"

command -v jq >/dev/null 2>&1 || skip_all "jq not installed"

as gen gpt --layers 2 --hidden 64 --heads 4 --seq 16 --batch 16 --train -o "$T/g.asg"
ok $rc "a 2-layer GPT"
as solve "$T/g.asg" --mesh 2x2 --top 4 -o "$T/top.json"
check "solve --top 4 -o: an array of 4 plans" test "$rc$(jq -c 'type, length' "$T/top.json" | tr '\n' ' ')" = '0"array" 4 '
as solve "$T/g.asg" --mesh 2x2 -o "$T/one.json"
ok $rc "solve -o: one plan"

as rank "$T/g.asg" --plans "$T/top.json"
ok $rc "rank the array"
check "its 4 plans, named FILE#1..#4" \
    sh -c "grep -q 'over 4 plans' '$T/out' && grep -q '^1  *top.json#1 ' '$T/out' && grep -q 'top.json#4' '$T/out'"
as rank "$T/g.asg" --plans "$T/top.json" "$T/one.json"
check "an array and a single plan together: 5 plans" grep -q 'over 5 plans' "$T/out"
cp "$T/out" "$T/table"

as rank "$T/g.asg" --plans "$T/top.json" "$T/one.json" --json
ok $rc "rank --json"
check "--json: 5 plans with objective, time, peak, both ranks" \
    test "$(jq '[.plans[] | select(.objective > 0 and .time > 0 and .peak > 0 and .solver_rank >= 1 and .sim_rank >= 1)] | length' "$T/out")" = 5
check "--json: the solver's objectives are the files' (one truth)" \
    test "$(jq -c '[.plans[].objective]' "$T/out")" = "$(jq -sc '[.[0][].objective, .[1].objective]' "$T/top.json" "$T/one.json")"
rho=$(jq -r '.spearman' "$T/out"); tau=$(jq -r '.kendall' "$T/out")
check "--json: rho and tau are the table's ($(printf '%.4f %.4f' "$rho" "$tau"))" \
    grep -q "^spearman rho $(printf '%.4f' "$rho"), kendall tau $(printf '%.4f' "$tau") over 5 plans" "$T/table"
sim1=$(jq -r '.plans[] | select(.sim_rank == 1) | .name' "$T/out")
check "--json: the simulator's best ($sim1) has the least time" \
    test "$(jq -r '.plans | min_by(.time) | .name' "$T/out")" = "$sim1"

# all ties: the same plan twice (both orders tie everywhere)
as rank "$T/g.asg" --plans "$T/one.json" "$T/one.json"
ok $rc "rank a plan against itself"
check "all ties: rho and tau undefined" grep -q '^spearman rho undefined, kendall tau undefined over 2 plans' "$T/out"
as rank "$T/g.asg" --plans "$T/one.json" "$T/one.json" --json
check "all ties, --json: null" test "$(jq -c '[.spearman, .kendall]' "$T/out")" = "[null,null]"
as rank "$T/g.asg" --plans "$T/one.json"
check "one plan: undefined" grep -q '^spearman rho undefined, kendall tau undefined over 1 plans' "$T/out"

# bad input: one line, exit 2, nothing on stdout
echo '[]' >"$T/empty.json"
as rank "$T/g.asg" --plans "$T/empty.json"
expect_fail 2 'empty.json:1:1: an empty array of plans' "an empty array"
jq '.[1] = {"format": "nope"}' "$T/top.json" >"$T/badel.json"
as rank "$T/g.asg" --plans "$T/badel.json" --json
check "an array with a bad element: exit 2, one line with FILE:LINE:COL, no output" \
    sh -c "[ $rc -eq 2 ] && grep -q '^autoshard: .*badel.json:[0-9]*:[0-9]*: ' '$T/err' && [ \$(grep -c . '$T/err') -eq 1 ] && test ! -s '$T/out'"

done_testing
