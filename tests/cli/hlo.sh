#!/bin/sh
# hlo.sh -- XLA HLO import through the CLI: one small file per construct,
# and the malformed files (FILE:LINE:COL message, exit 2).
. "${top_srcdir:-.}/tests/cli/lib.sh"
D="$top_srcdir/tests/data/hlo"
has() { if grep -q -- "$1" "$2"; then ok 0 "$3"; else ok 1 "$3"; fi; }

for f in mlp_train dot_general shape_ops gather_scatter conv_window collectives fusion_call \
         while_cond opaque; do
    as inspect "$D/$f.hlo"
    ok $rc "$f.hlo imports"
done

as inspect "$D/mlp_train.hlo"
has '^parameters: .*(544)' "$T/out" "mlp_train: 16*32+32 = 544 parameters"
as convert "$D/mlp_train.hlo" -o "$T/m.asg"
ok $rc "convert mlp_train.hlo to .asg"
has 'matmul' "$T/m.asg" "dot becomes matmul"
has 'reduce_sum' "$T/m.asg" "reduce with an add reducer becomes reduce_sum"
as inspect "$T/m.asg"
ok $rc "the converted .asg reads back"

as convert "$D/dot_general.hlo" -o "$T/d.asg"
has 'dot_general' "$T/d.asg" "a dot that is not a matmul becomes dot_general"
as convert "$D/fusion_call.hlo" -o "$T/f.asg"
has 'fusion.3__add.1' "$T/f.asg" "fusion bodies are inlined with a name prefix"
has 'call.4__fusion.9__multiply.2' "$T/f.asg" "nested call/fusion inlined"
as inspect "$D/opaque.hlo"
has 'warning: .*opaque.hlo: 5 unsupported HLO ops kept as opaque: sine (2), cosine (1), custom-call (1), rng-bit-generator (1)' "$T/err" "one warning line counts the opaque ops"
as inspect "$D/while_cond.hlo"
has 'while/conditional' "$T/err" "while/conditional warned"

as inspect "$D/bad_truncated.hlo"
expect_fail 2 'bad_truncated.hlo:14:1: unexpected end of file' "truncated file"
as inspect "$D/bad_unbalanced.hlo"
expect_fail 2 "bad_unbalanced.hlo:5:44: unbalanced '{'" "unbalanced braces"
as inspect "$D/bad_type.hlo"
expect_fail 2 "bad_type.hlo:4:8: unknown type 'f33'" "unknown type"
as inspect "$D/bad_shape.hlo"
expect_fail 2 "bad_shape.hlo:6:9: 'dot.5' declares f32\[8,16\] but dot gives f32\[8,32\]" \
    "declared shape disagrees with the op"
as inspect "$D/bad_operand_shape.hlo"
expect_fail 2 "bad_operand_shape.hlo:6:9: 'add': add: cannot broadcast" "operands do not fit the op"
as inspect "$D/bad_undefined.hlo"
expect_fail 2 "bad_undefined.hlo:5:34: undefined instruction 'y.7'" "undefined instruction"
as inspect "$D/bad_undefined_comp.hlo"
expect_fail 2 "bad_undefined_comp.hlo:6:60: undefined computation '%nosuch'" \
    "undefined computation"
as inspect "$D/bad_recursion.hlo"
expect_fail 2 "bad_recursion.hlo:10:38: recursion between computations: 'a' calls 'b' calls 'a'" \
    "recursion between computations"
as inspect "$D/bad_garbage.hlo"
expect_fail 2 "bad_garbage.hlo:3:1: unexpected byte 0x7f" "binary garbage"

done_testing
