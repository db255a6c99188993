#!/bin/sh
# solve_budget.sh -- issue 13 items 6-8: budgets at the edge of what plans need, huge costs,
# and exported models that every solver reads alike.
. "${top_srcdir:-.}/tests/cli/lib.sh"
D="$top_srcdir/tests/data/costgraph"

# Item 6: GLPK's tolerances let a plan exceed the memory rows by 4 bytes of 2.45 MiB; that was
# "returned an invalid plan" (exit 1).  Now the plan returned fits, or exit 3.
as gen mlp-1b --layers 2 --hidden 256 --batch 64 --train -o "$T/m.asg"
as solve "$T/m.asg" --mesh 2 -o "$T/free.json"
free=$(grep '^objective' "$T/out" | awk '{print $2}')
for opt in "" "--no-reduce" "--solver cbc"; do
    for m in 2564099 2564100 2564103; do
        as solve "$T/m.asg" --mesh 2 --memory $m $opt
        ok $rc "budget $m B ${opt:-(default)}: a plan (exit $rc)"
    done
    as solve "$T/m.asg" --mesh 2 --memory 2564104 $opt
    obj=$(grep '^objective' "$T/out" | awk '{print $2}')
    if [ "$rc" -eq 0 ] && [ "$obj" = "$free" ]; then ok 0 "budget 2564104 B ${opt:-(default)}: the unconstrained optimum fits exactly"; else
        ok 1 "budget 2564104 B ${opt:-(default)}: objective $obj, unconstrained $free"; fi
done
as solve "$T/m.asg" --mesh 2 --memory 1000000
expect_fail 3 "no plan fits in 976.56 KiB per device" "a budget under every plan: exit 3"
# a plan 1 byte over a budget of 976.56 KiB: the two sides are told apart
as solve --costgraph "$D/mem_edge.json" --solution "$D/sol_mem_over.txt"
expect_fail 2 "liveness point 0 needs 1000001 B per device, budget 1000000 B" \
    "1 byte over: exact bytes when the rounded sizes look alike"

# Item 7: costs of 1e13 (Alpa's INFINITY_COST) are forbidden choices; GLPK called a plan of
# 9593 optimal, with bound 9593, when 8729 is the optimum (huge_costs.json: 5 nodes).
for f in huge_costs huge_costs2; do
    as solve --costgraph "$D/$f.json" --solver brute
    want=$(grep '^objective' "$T/out" | awk '{print $2}')
    for opt in "" "--no-reduce" "--solver cbc" "--solver cbc --no-reduce"; do
        as solve --costgraph "$D/$f.json" $opt
        got=$(grep '^objective' "$T/out" | awk '{print $2}')
        bound=$(grep -E '^bound +[-0-9.e+]+ s$' "$T/out" | awk '{print $2}')
        if [ "$rc" -eq 0 ] && [ "$got" = "$want" ] && awk "BEGIN{exit !($bound <= $want)}"; then
            ok 0 "$f ${opt:-(default)}: the optimum $want, bound $bound"
        else
            ok 1 "$f ${opt:-(default)}: $got (bound $bound), brute force says $want"
        fi
    done
done

done_testing
