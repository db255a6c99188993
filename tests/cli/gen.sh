#!/bin/sh
# gen.sh -- `autoshard gen`: the preset list, writing a preset as .asg (and
# reading it back with inspect when that command exists), training graphs,
# and the usage errors (unknown preset, inconsistent or bad overrides).
. "${top_srcdir:-.}/tests/cli/lib.sh"
# Conditions are written `ok $(A && B && echo 0 || echo 1)`: under set -e a
# failing last command of an && list would end the $(...) before `echo $?`.

as gen --list
ok $([ $rc -eq 0 ] && grep -q '^gpt3-175b  *gpt  *96  *12288  *96  *2048 ' "$T/out" &&
    grep -q '^wresnet-50  *wresnet ' "$T/out" && [ "$(grep -c . "$T/out")" -ge 20 ] &&
    echo 0 || echo 1) "gen --list shows every preset with its configuration"
ok $(grep -q '^gpt2-xl .* 1557611200 ' "$T/out" && echo 0 || echo 1) \
    "gen --list gives parameter counts"

as gen gpt2-small -o "$T/g.asg"
ok $([ $rc -eq 0 ] && [ -s "$T/g.asg" ] && [ ! -s "$T/out" ] && echo 0 || echo 1) \
    "gen gpt2-small -o FILE"
ok $(grep -q 'h\.3\.attn\.q\.w' "$T/g.asg" && grep -q 'cross_entropy' "$T/g.asg" &&
    echo 0 || echo 1) "the .asg has scoped parameters and the loss"
if "$AUTOSHARD" help inspect >/dev/null 2>&1; then
    as inspect "$T/g.asg"
    ok $([ $rc -eq 0 ] && grep -q '124439808' "$T/out" && echo 0 || echo 1) \
        "inspect reads the generated graph back (124,439,808 parameters)"
fi
as gen gpt2-small --layers 2 --seq 64 --batch 2
ok $([ $rc -eq 0 ] && grep -q 'h\.1\.mlp\.fc2' "$T/out" && ! grep -q 'h\.2\.' "$T/out" &&
    echo 0 || echo 1) "overrides change the graph, stdout by default"
as gen gpt2-small --layers 2 --seq 64 --batch 2 --train --optimizer sgd -o "$T/t.asg"
ok $([ $rc -eq 0 ] && grep -q 'sgd_update' "$T/t.asg" && ! grep -q 'adam' "$T/t.asg" &&
    echo 0 || echo 1) "gen --train --optimizer sgd writes the training step"
as gen mlp-1b --layers 2 --hidden 64 --batch 8 --train
ok $([ $rc -eq 0 ] && grep -q 'adam_update' "$T/out" && echo 0 || echo 1) \
    "--train defaults to adam"
as gen wresnet-50 --batch 2 --width 1 --dtype bf16
ok $([ $rc -eq 0 ] && grep -q 'conv2d' "$T/out" && grep -q 'bf16' "$T/out" &&
    echo 0 || echo 1) "wresnet with --width and --dtype"

as gen gpt2-smal
expect_fail 2 "unknown preset 'gpt2-smal' (did you mean: gpt2-small?)" \
    "unknown preset: did you mean"
as gen nothing-like-it
expect_fail 2 "unknown preset 'nothing-like-it' (see 'autoshard gen --list')" \
    "unknown preset without a close match"
as gen gpt2-small --heads 7
expect_fail 2 "not divisible by the number of heads 7" "--heads not dividing --hidden"
as gen gpt2-small --layers 0
expect_fail 2 "layers must be a positive integer, got '0'" "--layers 0"
as gen gpt2-small --layers 3x
expect_fail 2 "layers must be a positive integer, got '3x'" "--layers 3x"
as gen gpt2-small --dtype f13
expect_fail 2 "dtype must be f32, f16 or bf16, got 'f13'" "--dtype f13"
as gen gpt2-small --dtype i32
expect_fail 2 "dtype must be f32, f16 or bf16, got 'i32'" "--dtype i32"
as gen wresnet-50 --heads 4
expect_fail 2 "heads does not apply to wresnet-50" "option a family does not use"
as gen wresnet-50 --layers 34
expect_fail 2 "depth (--layers) must be 50, 101 or 152" "wresnet depth 34"
as gen gpt2-small --optimizer adam
expect_fail 2 "optimizer needs --train" "--optimizer without --train"
as gen gpt2-small --train --optimizer lion
expect_fail 2 "optimizer must be adam, sgd or momentum, got 'lion'" "unknown optimizer"
as gen
expect_fail 2 "missing preset name" "no preset"
as gen gpt2-small bert-base
expect_fail 2 "unexpected argument 'bert-base'" "two presets"
as gen gpt2-small --frobnicate
expect_fail 2 "unknown option '--frobnicate'" "unknown option"
as gen gpt2-small --layers
expect_fail 2 "option '--layers' needs a value" "option without its value"
as gen gpt2-small -o /nonexistent-dir/x.asg
ok $([ $rc -eq 1 ] && [ "$(grep -c . "$T/err")" -eq 1 ] && echo 0 || echo 1) \
    "unwritable output is exit 1 with one message"
as gen --help
ok $([ $rc -eq 0 ] && grep -q -- '--optimizer' "$T/out" && echo 0 || echo 1) "gen --help"
# Issue 13 item 17: a family name is its smallest preset with the default sizes
for f in mlp:mlp-1b gpt:gpt2-small bert:bert-base t5:t5-base; do
    as gen "${f%%:*}" --layers 1
    ok $([ $rc -eq 0 ] && head -1 "$T/out" | grep -q "^graph ${f#*:}\$" && echo 0 || echo 1) \
        "gen ${f%%:*} is ${f#*:}"
done
as gen wresnet
ok $([ $rc -eq 0 ] && head -1 "$T/out" | grep -q "^graph wresnet-50\$" && echo 0 || echo 1) "gen wresnet is wresnet-50"
as gen gpx
expect_fail 2 "unknown preset 'gpx'" "an unknown name is still an error"
done_testing
