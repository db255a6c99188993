#!/bin/sh
# asg.sh -- the .asg reader on bad input (one file per case under
# tests/data/asg/bad/, plus generated binary and over-long inputs) and
# `autoshard convert` (round trip, atomic -o, stdin).
. "${top_srcdir:-.}/tests/cli/lib.sh"

D="$top_srcdir/tests/data/asg"

# bad FILE WANT [prefix]: inspect FILE exits 2 with exactly one stderr line
# "autoshard: FILE:WANT" (with "prefix": a line starting with it).
bad() {
    as inspect "$1"
    s=0
    [ "$rc" -eq 2 ] || s=1
    [ "$(wc -l <"$T/err")" -eq 1 ] || s=1
    printf 'autoshard: %s:%s\n' "$1" "$2" >"$T/want"
    if [ "${3:-}" = prefix ]; then
        [ "$(head -c "$(($(wc -c <"$T/want") - 1))" "$T/err")" = "$(head -n 1 "$T/want")" ] || s=1
    else
        cmp -s "$T/want" "$T/err" || s=1
    fi
    if [ $s -ne 0 ]; then
        echo "# exit $rc; want: $(cat "$T/want")"
        sed 's/^/# got:  /' "$T/err" | head -3
    fi
    ok $s "$(basename "$1"): $2"
}

bad "$D/bad/empty.asg" "1:1: empty graph: no ops"
bad "$D/bad/truncated.asg" "3:11: expected ',' or ')' after an input, got end of line"
bad "$D/bad/unknown_op.asg" "2:5: unknown op type 'frob'"
bad "$D/bad/arity.asg" "3:5: 'relu' takes 1 input, got 2"
bad "$D/bad/shape_mismatch.asg" "3:5: matmul: inner dims differ: f32[2,3] x f32[4,5]"
bad "$D/bad/redefinition.asg" "3:3: redefinition of 'h' (first defined at line 2)"
bad "$D/bad/use_before_def.asg" "2:10: 'a' used before its definition at line 3"
bad "$D/bad/cycle.asg" "3:12: cycle: a -> b -> c -> a"
bad "$D/bad/overflow.asg" \
    "1:11: f32[4294967296,4294967296] is too large: its size overflows 64 bits"
bad "$D/bad/unknown_attr.asg" "2:23: 'softmax' has no attribute 'bogus'" prefix
bad "$D/bad/attr_type.asg" "2:16: 'softmax': attribute 'axis' must be an integer"
bad "$D/bad/type_mismatch.asg" "2:5: 'h' is declared f32[3,2] but relu gives f32[2,3]"
bad "$D/bad/update_nonparam.asg" "3:8: 'x' is not a parameter or optimizer state"
bad "$D/bad/output_unknown.asg" "3:11: undefined name 'nothere'"
bad "$D/bad/unknown_statement.asg" "3:1: unknown statement 'bogus'"

# Generated inputs: binary garbage and a 2 MiB line.
printf 'graph x\n\000\001\002' >"$T/binary.asg"
bad "$T/binary.asg" "2:1: binary data"
printf 'graph x\ninput a : f32[2]\n' >"$T/long.asg"
head -c 2097152 /dev/zero | tr '\0' 'a' >>"$T/long.asg"
printf '\n' >>"$T/long.asg"
bad "$T/long.asg" "3:1: line is longer than 1 MiB"
printf 'input x : f32[2]\nh = relu(x)\ntrain optimizer=lbfgs\n' >"$T/opt.asg"
bad "$T/opt.asg" "3:17: unknown optimizer 'lbfgs' (expected adam, sgd or momentum)"

# Missing files are I/O errors (exit 1); usage errors exit 2.
as inspect "$T/does-not-exist.asg"
expect_fail 1 "does-not-exist.asg: No such file" "missing file is exit 1"
as convert
ok $([ $rc -eq 2 ] && grep -q '^autoshard: missing input file$' "$T/err" &&
    grep -q '^usage: autoshard convert' "$T/err"; echo $?) "convert without input is a usage error"
as convert a b
ok $([ $rc -eq 2 ] && grep -q '^autoshard: too many arguments$' "$T/err"; echo $?) \
    "convert with two inputs is a usage error"

# convert: canonical text, round trip byte-identical, atomic -o, stdin.
as convert "$D/mlp.asg" -o "$T/w1.asg"
ok $([ $rc -eq 0 ] && [ -s "$T/w1.asg" ] && [ ! -s "$T/out" ]; echo $?) "convert -o writes the file"
ok $(! ls "$T" | grep -q '\.tmp\.'; echo $?) "no temporary file left behind"
ok $(! grep -q '^train' "$T/w1.asg" && grep -q '^phase optimizer$' "$T/w1.asg"; echo $?) \
    "the written training graph is expanded (no train line)"
as convert "$T/w1.asg"
ok $([ $rc -eq 0 ] && cmp -s "$T/out" "$T/w1.asg"; echo $?) "convert of converted is byte-identical"
for f in shapes live; do
    as convert "$D/$f.asg" -o "$T/$f.1.asg"
    as convert "$T/$f.1.asg" -o -
    ok $([ $rc -eq 0 ] && cmp -s "$T/out" "$T/$f.1.asg"; echo $?) "$f: round trip byte-identical"
done
set +e
$VALGRIND_CMD "$AUTOSHARD" convert - <"$D/shapes.asg" >"$T/stdin.asg" 2>"$T/err"
rc=$?
set -e
ok $([ $rc -eq 0 ] && cmp -s "$T/stdin.asg" "$T/shapes.1.asg"; echo $?) "convert reads stdin"
printf 'h = relu(x)\n' >"$T/nox.asg"
set +e
$VALGRIND_CMD "$AUTOSHARD" convert - <"$T/nox.asg" >"$T/out" 2>"$T/err"
rc=$?
set -e
expect_fail 2 "^autoshard: <stdin>:1:10: undefined name 'x'$" "errors on stdin name <stdin>"
as convert "$D/live.asg" -o "$T/nodir/x.asg"
expect_fail 1 "nodir" "unwritable output is exit 1"
ok $([ ! -e "$T/nodir/x.asg" ]; echo $?) "no partial output"
done_testing
