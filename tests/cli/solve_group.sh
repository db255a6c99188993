#!/bin/sh
# solve_group.sh -- repeated layers: `solve` finds identical layers and ties
# them with period 2 (even and odd layers: one set of variables each; docs/ilp.md
# "Repeated layers"), --no-tie solves them apart with the same optimum on
# identical layers without a budget, a stacked MLP keeps its column/row
# alternation (tied optimum = untied),
# --group REGEX names the layers, and a bad regex is one line, exit 2.
. "${top_srcdir:-.}/tests/cli/lib.sh"

objective() { awk '$1 == "objective" { print $2; exit }' "$T/out"; }

as gen gpt2-small --layers 3 --hidden 64 --heads 2 --seq 16 --batch 4 --vocab 100 --train \
    -o "$T/gpt.asg"
ok $rc "gen 3-layer gpt"

for mesh in 4 2x2; do
    as solve "$T/gpt.asg" --mesh "$mesh"
    ok $rc "solve tied on $mesh"
    check "mesh $mesh: solve prints the tied blocks h.0..h.2" \
        grep -q '^tied  *h\.0\.\.h\.2: 3 blocks of [0-9]* nodes, period 2: 2 sets of variables' "$T/out"
    check "mesh $mesh: tied plan optimal" grep -q '^status  *optimal' "$T/out"
    a=$(objective)
    as solve "$T/gpt.asg" --mesh "$mesh" --no-tie
    ok $rc "solve --no-tie on $mesh"
    s=0; grep -q '^tied' "$T/out" && s=1; ok $s "mesh $mesh: --no-tie ties nothing"
    b=$(objective)
    check "mesh $mesh: tied optimum $a = untied optimum $b (identical layers, no budget)" \
        awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-9 * a) }'

done

as solve "$T/gpt.asg" --mesh 4 --group 'h\.(\d+)\.' -o "$T/plan.json"
ok $rc "--group 'h\.(\d+)\.'"
check "--group: the capture names the blocks" grep -q '^tied  *0\.\.2: 3 blocks' "$T/out"
s=0
for l in 1 2; do
    x=$(awk -v op="\"h.$l.mlp.fc1.mm\"," '$1 == "\"name\":" { f = $2 == op; next }
        f && $1 == "\"strategy\":" { print $2; exit }' "$T/plan.json")
    y=$(awk -v op="\"h.0.mlp.fc1.mm\"," '$1 == "\"name\":" { f = $2 == op; next }
        f && $1 == "\"strategy\":" { print $2; exit }' "$T/plan.json")
    [ -n "$x" ] && [ "$x" = "$y" ] || s=1
done
ok $s "tied layers choose alike (h.N.mlp.fc1.mm)"

# A stacked MLP: the optimum alternates column- and row-parallel layers (Megatron), which
# period-1 tying (every layer alike) cannot express: 1572878.23 against 1179657.03 here.
as gen mlp-1b --layers 5 --hidden 256 --batch 16 --train -o "$T/mlp.asg"
ok $rc "gen 5-layer mlp"
as solve "$T/mlp.asg" --mesh 4 --cost-model alpa -o "$T/mlp.json"
ok $rc "mlp: solve tied"
check "mlp: h.1..h.4 tied with period 2" \
    grep -q '^tied  *h\.1\.\.h\.4: 4 blocks of [0-9]* nodes, period 2: 2 sets' "$T/out"
a=$(objective)
as solve "$T/mlp.asg" --mesh 4 --cost-model alpa --no-tie
ok $rc "mlp: solve --no-tie"
b=$(objective)
check "mlp: tied optimum $a = untied optimum $b (alternating layers)" \
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-9 * a) }'
st() { awk -v op="\"$1\"," '$1 == "\"name\":" { f = $2 == op; next }
       f && $1 == "\"strategy\":" { print $2; exit }' "$T/mlp.json"; }
s1=$(st h.1.fc.mm); s2=$(st h.2.fc.mm); s3=$(st h.3.fc.mm); s4=$(st h.4.fc.mm)
s=0; [ -n "$s1" ] && [ "$s1" != "$s2" ] && [ "$s1" = "$s3" ] && [ "$s2" = "$s4" ] || s=1
ok $s "mlp: layers alternate (h.1..h.4 fc.mm: $s1 $s2 $s3 $s4)"

as solve "$T/gpt.asg" --mesh 4 --group 'h\.(\d+'
expect_fail 2 "^autoshard: --group 'h.*missing closing parenthesis" "--group: regex does not compile"
as solve "$T/gpt.asg" --mesh 4 --group '^zz(\d+)'
expect_fail 2 "matches no op or tensor name" "--group: regex matches nothing"
as solve "$T/gpt.asg" --mesh 4 --group 'h\.\d+\.'
expect_fail 2 "no capture group" "--group: regex without a capture"
as solve "$T/gpt.asg" --mesh 4 --group '^(wte|wpe)$'
expect_fail 2 "not isomorphic" "--group: blocks that are not isomorphic"
as solve --costgraph "$top_srcdir/tests/data/costgraph/tiny.json" --no-tie
s=0; [ $rc -eq 2 ] && grep -q "^autoshard: --group and --no-tie need a GRAPH" "$T/err" || s=1
ok $s "--no-tie needs a graph (usage, exit 2)"

done_testing
