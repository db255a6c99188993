#!/bin/sh
# emit.sh -- issue 13 item 10: `solve --emit jax|dtensor` prints Python that parses as it is
# (python3's ast): imports, the mesh with the plan's axis names and shape, and one entry per
# parameter, optimizer state and input.  (Debian's python3-torch 1.13 has no DTensor to run.)
. "${top_srcdir:-.}/tests/cli/lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 not found"
parse() { python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$1"; }

as gen mlp-1b --layers 2 --hidden 64 --batch 8 --train -o "$T/m.asg"
as gen gpt2-small --layers 1 --hidden 64 --heads 2 --seq 16 --batch 8 --train -o "$T/g.asg"
for g in m g; do
    for mesh in 4 2x2 dp=2,tp=2; do
        for f in jax dtensor; do
            as solve "$T/$g.asg" --mesh $mesh --emit $f
            cp "$T/out" "$T/$g.$f.py"
            check "$g.asg on $mesh: --emit $f is valid Python" parse "$T/$g.$f.py"
        done
    done
done
P="$T/m.jax.py"
grep -q "^MESH_AXES = ('dp', 'tp')$" "$P"; ok $? "jax: the plan's axis names"
grep -q "^MESH_SHAPE = (2, 2)$" "$P"; ok $? "jax: the plan's mesh shape"
grep -q '^from jax.sharding import Mesh, NamedSharding, PartitionSpec$' "$P"; ok $? "jax: imports"
n=$(grep -c 'NamedSharding(mesh, PartitionSpec(' "$P" || true)
w=$(grep -c '^\(param\|input\|state\) ' "$T/m.asg" || true)
if [ "$n" -eq "$w" ] && [ "$n" -gt 0 ]; then ok 0 "jax: one sharding per parameter, state and input ($n)"; else
    ok 1 "jax: $n shardings for $w declared tensors"; fi
grep -q "^    'adam_m.h.0.fc.w': NamedSharding" "$P"; ok $? "jax: optimizer state included"
P="$T/m.dtensor.py"
grep -q 'init_device_mesh(device, MESH_SHAPE, mesh_dim_names=MESH_AXES)' "$P"; ok $? "dtensor: init_device_mesh"
n=$(grep -c "^    '.*': \[" "$P" || true)
if [ "$n" -eq "$w" ]; then ok 0 "dtensor: one placement list per tensor ($n)"; else ok 1 "dtensor: $n for $w"; fi
# a tensor name that needs quoting stays a valid string literal
printf "graph q\ninput x : f32[8,4] batch=0\nz = relu(x)\noutput z\n" >"$T/q.asg"
as solve "$T/q.asg" --mesh 2 --emit jax
cp "$T/out" "$T/q.py"; check "a one-axis mesh: (2,) and ('x',) tuples" parse "$T/q.py"
grep -q "^MESH_AXES = ('x',)$" "$T/q.py"; ok $? "one axis is a 1-tuple"
done_testing
