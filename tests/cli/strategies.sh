#!/bin/sh
# strategies.sh -- `autoshard strategies`: listing an op's strategies with
# specs and costs, JSON output, declared tensors, and the error messages
# for bad meshes, profiles, cost models and op names.
. "${top_srcdir:-.}/tests/cli/lib.sh"

G="$top_srcdir/tests/data/asg/mlp.asg"
export AUTOSHARD_RULES_CACHE=off

# A batch of 4 splits over 2 devices (dims of size 2-5 are splittable like any other).
printf 'graph t\ninput x : f32[4,64] batch=0\nz = relu(x)\noutput z\n' > "$T/s4.asg"
as strategies "$T/s4.asg" --mesh 2 --op z
ok $([ $rc -eq 0 ] && grep -q 'S(in0:0@x) .*\[x,None\] -> \[x,None\]' "$T/out" &&
     grep -q 'S(in0:1@x)' "$T/out"; echo $?) "relu on f32[4,64]: the batch of 4 splits over 2"
printf 'graph t\ninput x : f32[2,4,32,32] batch=0\nz = maxpool2d(x) kernel=[2,2] stride=[2,2]\noutput z\n' \
    > "$T/mp.asg"
as strategies "$T/mp.asg" --mesh 2 --op z
ok $([ $rc -eq 0 ] && grep -q 'S(in0:2@x) .*\[None,None,x,None\] -> \[None,None,x,None\]' "$T/out" &&
     grep -q 'S(in0:3@x)' "$T/out"; echo $?) "maxpool k2 s2 on 32x32: H and W split"

as strategies "$G" --mesh tp=4 --op h
ok $rc "strategies of one op"
grep -q '^h  matmul  f32\[64,128\] x f32\[128,256\] -> f32\[64,256\]  (7 strategies)' "$T/out"
ok $? "header names op, type, shapes and count"
grep -q 'column(tp) .*\[None,None\] x \[None,tp\] -> \[None,tp\]' "$T/out"
ok $? "column(tp) splits w1's columns"
grep -q 'row(tp)+allreduce' "$T/out" && grep -q 'row(tp)+reducescatter(1)' "$T/out"
ok $? "partial-resolution variants listed"
grep -q 'partial(sum:tp)' "$T/out"
ok $? "kept partial sum shown in the spec"

as strategies "$G" --mesh dp=2,tp=2 --op h --json
ok $rc "json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=[x["name"] for x in d[0]["strategies"]]; assert "column(dp,tp)" in s and "batch(dp)+column(tp)" in s, s' "$T/out"
ok $? "json parses and holds 2-D strategies"

as strategies "$G" --mesh dp=2,tp=2
ok $rc "all ops"
[ "$(grep -c '^[^ ]' "$T/out")" -ge 10 ] 
ok $? "one block per op of the training step"

as strategies "$G" --mesh 2x2 --op w1 --cost-model alpa --alpha 1,1 --beta 1e-9,1e-9
ok $rc "declared tensor with alpa"
grep -q '\[None,None\]' "$T/out" && grep -q '\[x,y\]' "$T/out"
ok $? "parameter specs listed"

# 3-axis mesh: per-op counts of multi-axis strategies and what the exact dominance leaves.
as strategies "$G" --mesh 2x2x2 --dominance
ok $rc "--dominance on 2x2x2"
python3 - "$T/out" <<'PY'
import re, sys
n = m = k = km = 0
ops = 0
for line in open(sys.argv[1]):
    h = re.match(r'^\S+  \S+  .*\((\d+) strateg(?:y|ies)(?:, (\d+) split a dim over several axes)?'
                 r'; dominance leaves (\d+) of (\d+), (\d+) of them multi-axis\)$', line)
    if h:
        a, b, c, d, e = (int(x or 0) for x in h.groups())
        assert 1 <= c <= d and e <= b and e <= c, line
        n += a; m += b; k += c; km += e; ops += 1
last = line
t = re.match(r'^(\d+) ops: (\d+) strategies, (\d+) split a dim over several axes; '
             r'dominance leaves (\d+), (\d+) of them multi-axis$', last)
assert t, last
assert [int(x) for x in t.groups()] == [ops, n, m, k, km], (t.groups(), ops, n, m, k, km)
assert m > 0 and k < n, (m, k, n)
PY
ok $? "every op's line and the sum agree; dominance drops strategies, multi-axis ones exist"
as strategies "$G" --mesh 2x2x2 --op h --dominance --memory 1MiB --json
ok $([ $rc -eq 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))[0]; assert d["multi_axis"] > 0 and 1 <= d["kept"] <= d["problem_strategies"] and d["kept_multi_axis"] <= d["kept"], d' "$T/out"; echo $?) "json counts under a budget"
as strategies "$G" --mesh 2x2x2 --memory 1MiB
ok $([ $rc -eq 2 ] && grep -q "memory needs --dominance" "$T/err"; echo $?) "--memory needs --dominance"

as strategies "$G" --mesh 2x0
expect_fail 2 "mesh '2x0'" "bad mesh"
as strategies "$G" --mesh 4 --hw b200
expect_fail 2 "unknown hardware profile 'b200'" "unknown profile"
as strategies "$G" --mesh 4 --cost-model foo
expect_fail 2 "unknown cost model 'foo'" "unknown cost model"
as strategies "$G" --mesh 4 --op nope
expect_fail 2 "no op or declared tensor named 'nope'" "unknown op"
as strategies "$G"
ok $([ $rc -eq 2 ] && grep -q "missing --mesh" "$T/err" && grep -q "^usage: autoshard strategies" "$T/err"; echo $?) "mesh required (usage)"
as strategies --mesh 4
ok $([ $rc -eq 2 ] && grep -q "expected one GRAPH" "$T/err"; echo $?) "graph required (usage)"
as strategies "$T/missing.asg" --mesh 4
expect_fail 1 "missing.asg" "missing file"
as strategies --help
ok $rc "help"

done_testing
