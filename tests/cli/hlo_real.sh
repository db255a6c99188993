#!/bin/sh
# hlo_real.sh -- every real HLO dump in ../shared/hlo (at least 51; 52 today) imports with
# exit 0, and a few have the parameter counts verified by hand from their text.
. "${top_srcdir:-.}/tests/cli/lib.sh"
R="$top_srcdir/../shared/hlo"
has() { if grep -q -- "$1" "$2"; then ok 0 "$3"; else ok 1 "$3"; fi; }
[ -d "$R" ] || skip_all "../shared/hlo not present"

n=0
for f in "$R"/*.hlo; do
    b=$(basename "$f")
    as inspect "$f"
    ok $rc "$b imports"
    n=$((n + 1))
done
if [ "$n" -ge 51 ]; then ok 0 "all $n real dumps tried (at least 51)"; else ok 1 "only $n real dumps found"; fi

# mlp__test.hlo is a 4-line fragment whose only instruction reads 'all-reduce.307', which the
# file does not define; its tuple type is written with the operand, so it becomes inputs.
as inspect "$R/mlp__test.hlo"
W="4:175: 'all-reduce.307' is not defined in this module; imported as an input of its written type"
has "warning: .*mlp__test.hlo:$W" "$T/err" "mlp__test.hlo: one warning for the undefined all-reduce.307"
n=$(grep -c 'warning' "$T/err")
if [ "$n" -eq 1 ]; then ok 0 "mlp__test.hlo: exactly one warning line"; else ok 1 "mlp__test.hlo: $n warning lines"; fi
as convert "$R/mlp__test.hlo" -o "$T/t.asg"
has '^input all-reduce.307.5 : f32\[120,784\] batch=0$' "$T/t.asg" \
    "mlp__test.hlo: element 5 of the tuple is an input f32[120,784]"
has '^output all-reduce.307.5$' "$T/t.asg" "mlp__test.hlo: get-tuple-element index=5 is the output"

# Issue 13 item 16: a real module cut down to its computations, or to its entry's body.
sed 1d "$R/misc__linear.hlo" >"$T/nohead.hlo"
as inspect "$T/nohead.hlo"
expect_fail 2 "nohead.hlo:2:1: missing 'HloModule NAME' line: the text starts with computation 'scalar_add_computation'" \
    "misc__linear.hlo without its first line"
sed -n '/^ENTRY/,/^}/p' "$R/misc__linear.hlo" | sed '1d;$d' >"$T/body.hlo"
as inspect "$T/body.hlo"
expect_fail 2 "body.hlo:1:3: missing 'HloModule NAME' line and an ENTRY computation: the text starts with instruction 'p6.52'" \
    "misc__linear.hlo's entry body alone"

# params FILE COUNT: `inspect` reports exactly COUNT parameters
params() {
    as inspect "$R/$1"
    has "^parameters: .*($2)\$" "$T/out" "$1: $2 parameters"
}
params mlp__mini_mlp_single.hlo 7850        # linear 784->10: 7840 + 10
params mlp__mlp_single_final.hlo 105214     # 784->120->84->10 with biases
params gpt__gpt2_tp=1.hlo 46476288          # 1 GPT-2 block + 768x50257 head + KV cache + x
params misc__linear.hlo 163

# Issue 6: `strategies` (mesh 2x2) and `solve` (mesh 2, default solver, a time
# limit): success or a clean exit 3, never a crash or exit 1/2.
for f in "$R"/*.hlo; do
    b=$(basename "$f")
    as strategies "$f" --mesh 2x2
    ok $rc "$b: strategies on 2x2"
    as solve "$f" --mesh 2 --time-limit 10
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]; then ok 0 "$b: solve on 2 devices (exit $rc)"; else
        ok 1 "$b: solve on 2 devices exited $rc"; fi
done

done_testing
