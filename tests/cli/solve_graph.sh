#!/bin/sh
# solve_graph.sh -- `autoshard solve GRAPH --mesh M` and `autoshard export GRAPH`:
# plans, emitters, k best, memory limits, external solutions, the expert
# patterns (data parallelism on a wide-batch MLP), and the built-in default.
. "${top_srcdir:-.}/tests/cli/lib.sh"

# op_strategy PLAN OP: the strategy of op OP in plan file PLAN (plan JSON, one key a line)
op_strategy() {
    awk -v op="\"$2\"," '$1 == "\"ops\":" { o = 1 } o && $1 == "\"name\":" && $2 == op { f = 1; next }
        f && $1 == "\"strategy\":" { gsub(/[",]/, "", $2); print $2; exit }' "$1"
}

as gen mlp-1b --layers 2 --hidden 256 --batch 64 --train -o "$T/mlp.asg"
ok $rc "gen small mlp"

# --- plans ---
as solve "$T/mlp.asg" --mesh 4 -o "$T/plan.json"
ok $rc "solve graph on mesh 4"
s=0; for k in '"mesh": "x=4"' '"hardware": "a100-dgx"' '"cost_model": "roofline"' \
    '"solver": "glpk"' '"status": "optimal"' '"objective"' '"bound"' '"tensors"' '"ops"'; do
    grep -q "$k" "$T/plan.json" || { s=1; echo "# missing $k"; }
done
ok $s "plan JSON has mesh, hardware, cost model, solver, status, objective, bound"
s=0; for k in 'ILP before' 'ILP after' 'status ' 'objective ' 'bound ' 'gap ' 'time ' \
    'layer h.' 'h.0.fc.mm ' 'all-reduce ' 'all-gather ' 'reduce-scatter ' 'all-to-all '; do
    grep -q "$k" "$T/out" || { s=1; echo "# summary lacks '$k'"; }
done
ok $s "summary: sizes, status, objective, bound, gap, time, layer table, bytes per collective"
as solve "$T/mlp.asg" --mesh 2x2 --emit jax
ok $(( rc != 0 )) "emit jax on 2x2"
grep -q "^    'h.0.fc.w': NamedSharding(mesh, PartitionSpec(" "$T/out"; ok $? "jax PartitionSpec per parameter"
grep -q "^    'x': NamedSharding(mesh, PartitionSpec(" "$T/out"; ok $? "jax PartitionSpec per input"
as solve "$T/mlp.asg" --mesh 2x2 --emit dtensor
grep -q "^    'h.0.fc.w': \[.*\(Replicate\|Shard\)" "$T/out"; ok $? "dtensor placements per parameter"
as solve - --mesh 4 < "$T/mlp.asg"
ok $rc "graph from stdin"

# --- solvers agree ---
if "$AUTOSHARD" solve --help | grep -q '^Solvers: glpk (linked, default), cbc' && \
   "$AUTOSHARD" solve --costgraph "$top_srcdir/tests/data/costgraph/tiny.json" -s cbc \
       >/dev/null 2>&1; then
    as solve "$T/mlp.asg" --mesh 2x2 -s cbc -o "$T/cbc.json"
    as solve "$T/mlp.asg" --mesh 2x2 -s glpk -o "$T/glpk.json"
    a=$(sed -n 's/.*"objective": *\([-+0-9.eE]*\).*/\1/p' "$T/cbc.json")
    b=$(sed -n 's/.*"objective": *\([-+0-9.eE]*\).*/\1/p' "$T/glpk.json")
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a + 0 > 0 && d <= 1e-6 * a) }'
    ok $? "glpk and cbc agree on a graph ($a, $b)"
fi

# --- a 3-axis mesh: the reduced problem (edges sharing the strategy context's matrices) has
# the unreduced ILP's optimum, and cbc finds it too ---
as gen mlp-1b --layers 1 --hidden 64 --batch 16 --train -o "$T/mlp1.asg"
as solve "$T/mlp1.asg" --mesh 2x2x2 -o "$T/r3.json"
a=$(sed -n 's/.*"objective": *\([-+0-9.eE]*\).*/\1/p' "$T/r3.json")
as solve "$T/mlp1.asg" --mesh 2x2x2 --no-reduce -o "$T/n3.json"
b=$(sed -n 's/.*"objective": *\([-+0-9.eE]*\).*/\1/p' "$T/n3.json")
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a + 0 > 0 && d <= 1e-6 * a) }'
ok $? "2x2x2: reductions keep the unreduced optimum ($a, $b)"
if "$AUTOSHARD" solve --help | grep -q '^Solvers: glpk (linked, default), cbc'; then
    as solve "$T/mlp1.asg" --mesh 2x2x2 -s cbc -o "$T/c3.json"
    c=$(sed -n 's/.*"objective": *\([-+0-9.eE]*\).*/\1/p' "$T/c3.json")
    awk -v a="$a" -v b="$c" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a + 0 > 0 && d <= 1e-6 * a) }'
    ok $? "2x2x2: glpk and cbc agree ($a, $c)"
fi

# --- k best ---
as solve "$T/mlp.asg" --mesh 4 --top 3 -o "$T/top.json"
ok $rc "--top 3"
[ "$(head -c 1 "$T/top.json")" = "[" ] && [ "$(grep -c '"format"' "$T/top.json")" -eq 3 ]
ok $? "--top 3 -o writes a JSON array of 3 plans"
awk '/"objective"/ { gsub(/[",]/, "", $2); v[n++] = $2 + 0 }
     END { for (i = 1; i < n; i++) if (v[i] < v[i - 1] - 1e-12) exit 1; exit n != 3 }' "$T/top.json"
ok $? "plans in order of objective"

# --- memory ---
as solve "$T/mlp.asg" --mesh 4 --memory 1KiB
expect_fail 3 "no plan fits in 1.00 KiB per device: every plan needs at least [0-9.]* [KMG]iB" \
    "too small a memory limit exits 3 with what every plan needs"
as solve "$T/mlp.asg" --mesh 4 --memory auto
ok $rc "--memory auto (the profile's usable memory: 80 GiB less 1 GiB reserved)"
grep -q "^memory  *79.00 GiB" "$T/out"; ok $? "auto memory is the profile's usable memory"
as solve "$T/mlp.asg" --mesh 4 --memory 3GB
ok $rc "--memory with a GB suffix"
as solve "$T/mlp.asg" --mesh 4 --memory lots
[ $rc -eq 2 ] && grep -q "bad byte count 'lots'" "$T/err"; ok $? "bad --memory: usage error"
as solve "$T/mlp.asg"
[ $rc -eq 2 ] && grep -q "missing --mesh" "$T/err"; ok $? "graph without --mesh: usage error"
as solve "$T/nope.asg" --mesh 4
expect_fail 1 "nope.asg" "missing graph file"

# --- data parallelism: wide batch, narrow hidden ---
as gen mlp-1b --layers 2 --hidden 256 --batch 32768 --train -o "$T/wide.asg"
as solve "$T/wide.asg" --mesh 4 -o "$T/dp.json"
ok $rc "solve wide-batch mlp"
s=0; for op in h.0.fc.mm h.1.fc.mm d.h.1.fc.mm; do
    st=$(op_strategy "$T/dp.json" $op)
    [ "$st" = "batch(x)" ] || { s=1; echo "# $op: $st"; }
done
ok $s "wide-batch narrow-hidden MLP: every forward and input-gradient matmul splits the batch"
s=0; for op in d.h.1.fc.mm.1 d.h.0.fc.mm; do
    case $(op_strategy "$T/dp.json" $op) in row\(x\)*) ;; *) s=1; echo "# $op";; esac
done
ok $s "weight gradients reduce over the batch (data-parallel all-reduce / reduce-scatter)"

# --- export and external solutions ---
as export "$T/mlp.asg" --mesh 4 --format mps -o "$T/mlp.mps"
ok $rc "export graph as MPS"
grep -q '^ROWS' "$T/mlp.mps"; ok $? "MPS has ROWS"
as export "$T/mlp.asg" --mesh 4 --format lp -o "$T/mlp.lp"
ok $rc "export graph as LP"
as export "$T/mlp.asg" --mesh 4 --format costgraph -o "$T/mlp.cg"
ok $rc "export graph as cost graph"
as solve --costgraph "$T/mlp.cg" -o "$T/cg.json"
ok $rc "solve the exported cost graph"
a=$(grep '"objective"' "$T/plan.json" | tr -dc '0-9.e-'); b=$(grep '"objective"' "$T/cg.json" | head -1 | tr -dc '0-9.e-')
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * a) }'
ok $? "cost graph export keeps the objective ($a, $b)"
CBC=${CBC_PROG:-cbc}
if command -v "$CBC" >/dev/null 2>&1; then
    (cd "$T" && "$CBC" mlp.mps solve solu mlp.sol >/dev/null 2>&1)
    as solve "$T/mlp.asg" --mesh 4 --solution "$T/mlp.sol" -o "$T/ext.json"
    ok $rc "graph plan from the cbc program's solution of the exported MPS"
    b=$(grep '"objective"' "$T/ext.json" | tr -dc '0-9.e-')
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-6 * a) }'
    ok $? "cbc program's solution has the same objective ($a, $b)"
fi
printf 'garbage\n' > "$T/bad.sol"
as solve "$T/mlp.asg" --mesh 4 --solution "$T/bad.sol"
expect_fail 2 "bad.sol" "malformed solution file"

# --- the built-in default ---
as solve --time-limit 120
ok $rc "bare autoshard solve (GPT-2 small training step on 8 A100s)"
grep -q "^graph  *gpt2-small" "$T/out" && grep -q "^status  *\(optimal\|feasible\)" "$T/out"
ok $? "default solves gpt2-small"

done_testing
