#!/bin/sh
# inspect.sh -- `autoshard inspect` text and --json against golden files,
# stdin input, dead-op warnings, and stats surviving `convert`.
. "${top_srcdir:-.}/tests/cli/lib.sh"

D="$top_srcdir/tests/data/asg"
G="$top_srcdir/tests/golden"

for f in mlp live shapes; do
    as inspect "$D/$f.asg"
    ok $([ $rc -eq 0 ] && cmp -s "$T/out" "$G/inspect_$f.out" && [ ! -s "$T/err" ]; echo $?) \
        "inspect $f matches golden"
    [ $rc -eq 0 ] && ! cmp -s "$T/out" "$G/inspect_$f.out" && diff "$G/inspect_$f.out" "$T/out" |
        sed 's/^/# /' | head -10
    as inspect --json "$D/$f.asg"
    ok $([ $rc -eq 0 ] && cmp -s "$T/out" "$G/inspect_${f}_json.out"; echo $?) \
        "inspect --json $f matches golden"
done

# The required JSON keys are all there.
as inspect "$D/mlp.asg" --json
s=0
for k in name ops ops_by_type params flops param_bytes grad_bytes state_bytes \
    peak_activation_bytes longest_path_ops; do
    grep -q "^  \"$k\": " "$T/out" || { echo "# missing key $k"; s=1; }
done
ok $s "--json has every documented key"

# A converted training graph has the same statistics as its source.
as convert "$D/mlp.asg" -o "$T/mlp.asg"
as inspect --json "$T/mlp.asg"
ok $([ $rc -eq 0 ] && cmp -s "$T/out" "$G/inspect_mlp_json.out"; echo $?) \
    "converted graph: same statistics (gradients, states, phases kept)"

# Standard input.
set +e
$VALGRIND_CMD "$AUTOSHARD" inspect - <"$D/live.asg" >"$T/out" 2>"$T/err"
rc=$?
set -e
ok $([ $rc -eq 0 ] && cmp -s "$T/out" "$G/inspect_live.out"; echo $?) "inspect reads stdin"

# Dead ops: one warning line with the count, exit 0.
printf 'input x : f32[2]\nh = relu(x)\ng = neg(x)\nk = abs(x)\noutput h\n' >"$T/dead.asg"
as inspect "$T/dead.asg"
ok $([ $rc -eq 0 ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
    grep -q "warning: dead: 2 ops compute results nobody uses (first: 'g')" "$T/err"; echo $?) \
    "unused results: one warning line with the count"
as -q inspect "$T/dead.asg"
ok $([ $rc -eq 0 ] && [ ! -s "$T/err" ]; echo $?) "-q silences the warning"

# Usage.
as inspect
ok $([ $rc -eq 2 ] && grep -q '^autoshard: missing graph file$' "$T/err"; echo $?) \
    "inspect without a file is a usage error"
as inspect --frobnicate "$D/live.asg"
ok $([ $rc -eq 2 ] && grep -q '^usage: autoshard inspect' "$T/err"; echo $?) \
    "unknown option is a usage error"
as inspect --help
ok $([ $rc -eq 0 ] && grep -q -- '--json' "$T/out"; echo $?) "--help documents --json"
done_testing
