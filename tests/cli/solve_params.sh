#!/bin/sh
# solve_params.sh -- `--set` parameters of the chosen solver are checked up front
# (as_solve_problem), also when the reductions solve the problem and the backend never
# runs: a bad one is one line and exit 2 (before 2b7d764 such runs exited 0).
. "${top_srcdir:-.}/tests/cli/lib.sh"

as gen gpt2-small --layers 2 --batch 8 --seq 128 --train -o "$T/g.asg"
ok $rc "gen a 2-layer GPT-2 training step"
# the reductions solve this one alone: the backend does not run
as solve "$T/g.asg" --mesh 2x2 --set glpk/presolve=0
st=0
[ "$rc" -eq 0 ] || st=1
grep -q "^status  *optimal\$" "$T/out" || st=1
ok $st "glpk: a good parameter, the plan"
as solve "$T/g.asg" --mesh 2x2 --set glpk/bogus=1
expect_fail 2 "unknown parameter 'glpk/bogus'" "--set glpk/bogus=1: exit 2"
as solve "$T/g.asg" --mesh 2x2 --set glpk/presolve
expect_fail 2 "parameter 'glpk/presolve': expected KEY=VALUE" "--set glpk/presolve: exit 2"
if "$AUTOSHARD" solve --costgraph "$top_srcdir/tests/data/costgraph/tiny.json" -s cbc \
    >/dev/null 2>&1; then
    as solve "$T/g.asg" --mesh 2x2 --solver cbc --set cbc/bogus=1
    expect_fail 2 "unknown parameter 'cbc/bogus'" "--solver cbc --set cbc/bogus=1: exit 2"
    as solve "$T/g.asg" --mesh 2x2 --solver cbc --set cbc/start=foo
    expect_fail 2 "parameter 'cbc/start' must be none or mip" "--set cbc/start=foo: exit 2"
fi
# a parameter of another solver is left to that solver (bench_heur passes beam's and mcts's)
as solve "$T/g.asg" --mesh 2x2 --set mcts/bogus=1
ok $rc "glpk: another solver's parameter is not glpk's to check"
done_testing
