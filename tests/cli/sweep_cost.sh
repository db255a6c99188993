#!/bin/sh
# sweep_cost.sh -- the cost model as a sweep dimension (issue 14 item 1): `--cost-model
# roofline,alpa` solves every configuration under each model, keys end ",cost=C", each
# line's objective is `solve --cost-model C`'s, the simulator times every plan alike
# (so its order compares the models' choices), and bad lists are one line, exit 2.
. "${top_srcdir:-.}/tests/cli/lib.sh"

command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
close() { # close A B TOL: |A - B| <= TOL * |B|
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN{d=a-b; if(d<0)d=-d; if(b<0)b=-b; exit !(d<=t*b)}'; }

as gen mlp --layers 4 --hidden 256 --batch 32 --train -o "$T/g.asg"
ok $rc "4-layer MLP, hidden 256, batch 32"

as sweep "$T/g.asg" --devices 4 --pipeline 1 --cost-model roofline,alpa -q -o "$T/c.jsonl"
ok $rc "sweep --cost-model roofline,alpa"
check "the header lists both models" \
    test "$(head -1 "$T/c.jsonl" | jq -c .sweep.cost_model)" = '["roofline","alpa"]'
check "4 configurations: meshes 2x2 and 4, each under both models (keys end cost=C)" \
    test "$(jq -r 'select(.config) | .config' "$T/c.jsonl" | sed 's/.*,cost=//' | sort | uniq -c |
            awk '{printf "%s%s ", $1, $2}')" = "2alpa 2roofline "
for m in roofline alpa; do
    as solve "$T/g.asg" --mesh 2x2 --cost-model $m
    obj=$(sed -n 's/^objective  *\([0-9.e+-]*\) s.*/\1/p' "$T/out")
    sobj=$(jq -r "select(.config == \"p=1,k=1,mesh=2x2,recompute=none,solver=glpk,cost=$m\") | .objective" "$T/c.jsonl")
    check "one truth: the $m line's objective $sobj = solve --cost-model $m's $obj" close "$sobj" "$obj" 1e-5
    check "each line names its model ($m)" \
        test "$(jq -r "select(.config | endswith(\"cost=$m\")) | .cost_model" "$T/c.jsonl" | sort -u)" = "$m"
done
check "the simulator times the models' plans differently (the objectives are in other units)" \
    test "$(jq -r 'select(.config | startswith("p=1,k=1,mesh=4,")) | .time' "$T/c.jsonl" | sort -u | wc -l)" -eq 2

as sweep "$T/g.asg" --devices 4 --pipeline 1 --cost-model alpa -q -o "$T/c.jsonl"
check "resuming with another --cost-model is refused (exit 2, one line)" \
    sh -c "[ $rc -eq 2 ] && [ \$(grep -c '^autoshard: .*written by another sweep' '$T/err') -eq 1 ]"
as sweep "$T/g.asg" --devices 4 --cost-model roofline,bogus --list
check "an unknown model in the list: exit 2, one line" \
    sh -c "[ $rc -eq 2 ] && [ \$(wc -l <'$T/err') -eq 1 ] && grep -q 'unknown cost model' '$T/err'"
as sweep "$T/g.asg" --devices 4 --cost-model alpa,alpa --list
check "a model listed twice: exit 2, one line" \
    sh -c "[ $rc -eq 2 ] && [ \$(wc -l <'$T/err') -eq 1 ] && grep -q 'twice' '$T/err'"

done_testing
