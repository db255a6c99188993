#!/bin/sh
# solve_sim.sh -- `solve --simulate`: the solver's plans checked by the simulator.
. "${top_srcdir:-.}/tests/cli/lib.sh"

as gen mlp-1b --layers 2 --hidden 256 --batch 64 --train -o "$T/m.asg"
ok $rc "a small MLP training graph"

as solve "$T/m.asg" --mesh 4 --simulate
ok $([ $rc -eq 0 ] && grep -q '^simulated (a100-dgx, roofline): iteration [0-9.e+-]* s, [0-9.e+-]* samples/s, peak memory .* per device (fits 79.00 GiB)$' "$T/out" && echo 0 || echo 1) \
    "one plan: simulated iteration time, throughput and peak memory"
ok $(grep -q '^bubble [0-9.]*, [0-9]* events ([0-9]* costed once, [0-9]* from the cache)$' "$T/out" && echo 0 || echo 1) \
    "identical events are costed once"

as solve "$T/m.asg" --mesh 4 --top 3 --simulate
ok $([ $rc -eq 0 ] && grep -q '^spearman rho' "$T/out" && grep -q 'solver order' "$T/out" && echo 0 || echo 1) \
    "top 3: both orders side by side with rank correlations"
ok $(grep -Eq "^the solver's best plan .* (is also the simulator's best|is beaten by)" "$T/out" && echo 0 || echo 1) \
    "says how the simulator's best compares with the solver's"

as solve "$T/m.asg" --mesh 4 --simulate -o "$T/p.json"
t2=$(sed -n 's/^simulated .*: iteration \([0-9.e+-]*\) s.*/\1/p' "$T/out")
as simulate "$T/m.asg" --plan "$T/p.json"
t1=$(awk '/^iteration time/{print $3}' "$T/out")
ok $(awk -v a="$t1" -v b="$t2" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(a>0 && d<=1e-3*a)}' && echo 0 || echo 1) \
    "solve --simulate agrees with simulate --plan ($t1 s vs $t2 s)"
# Every cost model's plan lowers, simulates and ranks (strategies are looked up by name:
# alpa lists other strategies than the simulator's roofline, at other indexes).
for cm in roofline alpa distir; do
    as solve "$T/m.asg" --mesh 2x2 --cost-model $cm -o "$T/p_$cm.json"
    ok $rc "solve --cost-model $cm on 2x2"
    as lower "$T/m.asg" --plan "$T/p_$cm.json" -o "$T/p_$cm.prog"
    ok $([ $rc -eq 0 ] && [ -s "$T/p_$cm.prog" ]; echo $?) "the $cm plan lowers"
    as simulate "$T/m.asg" --plan "$T/p_$cm.json"
    ok $([ $rc -eq 0 ] && grep -q '^iteration time' "$T/out"; echo $?) "the $cm plan simulates"
done
as rank "$T/m.asg" --plans "$T/p_roofline.json" "$T/p_alpa.json" "$T/p_distir.json"
ok $([ $rc -eq 0 ] && grep -q 'over 3 plans' "$T/out"; echo $?) "the three models' plans rank"
done_testing
