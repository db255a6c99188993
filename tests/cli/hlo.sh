#!/bin/sh
# hlo.sh -- XLA HLO import through the CLI: one small file per construct,
# and the malformed files (FILE:LINE:COL message, exit 2).
. "${top_srcdir:-.}/tests/cli/lib.sh"
D="$top_srcdir/tests/data/hlo"
has() { if grep -q -- "$1" "$2"; then ok 0 "$3"; else ok 1 "$3"; fi; }

for f in mlp_train dot_general shape_ops gather_scatter conv_window collectives fusion_call \
         while_cond opaque extern_typed conv_nchw; do
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

as convert "$D/conv_window.hlo" -o "$T/c.asg"
has '= conv_general(x, w) dim_labels="b01f_01io->b01f" stride=\[2,2\] pad_lo=\[1,1\]' "$T/c.asg" \
    "an NHWC convolution becomes conv_general"
as convert "$D/conv_nchw.hlo" -o "$T/n.asg"
has '^convolution.1 : f32\[8,16,16,16\] = conv2d(x, w) stride=\[2,2\] padding=\[1,1\] dilation=\[1,1\] groups=1$' \
    "$T/n.asg" "an NCHW/OIHW convolution with symmetric padding becomes conv2d"
has '^convolution.2 : .* = conv_general(v, k) dim_labels="b012f_012io->b012f"' "$T/n.asg" \
    "a 3-D convolution becomes conv_general"
as inspect "$D/conv_nchw.hlo"
# 2*8*16*16*16*27 + 2*(2*4*6*6*5)*3*27 + 2*8*16*17*17*27 = 1769472 + 233280 + 1997568
has '^flops per step: .*(4.00032e+06)' "$T/out" "convolution FLOPs: 2 * out * C/groups * window"

as convert "$D/extern_typed.hlo" -o "$T/e.asg"
ok $rc "a module reading undefined but typed operands imports"
W="5:72: 2 instructions ('all-reduce.9' first) are not defined in this module;"
W="$W imported as inputs of their written types"
has "warning: .*extern_typed.hlo:$W" "$T/err" "one warning line counts the undefined typed operands"
has '^input all-reduce.9.0 : f32\[4,8\] batch=0$' "$T/e.asg" "undefined tuple operand: one input per element (0)"
has '^input all-reduce.9.1 : f32\[8\] batch=0$' "$T/e.asg" "undefined tuple operand: one input per element (1)"
has '^input scale.2 : f32\[8\] batch=0$' "$T/e.asg" "undefined array operand: one input"
has '^add.5 : f32\[8\] = add(all-reduce.9.1, neg.4)$' "$T/e.asg" "get-tuple-element resolves to the element input"

as inspect "$D/bad_undefined_retyped.hlo"
expect_fail 2 "bad_undefined_retyped.hlo:6:56: undefined instruction 'ext.7' is written with another type than at line 5" \
    "an undefined operand written with two types"
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
expect_fail 2 "bad_undefined.hlo:5:34: undefined instruction 'y.7' in 'main'" \
    "undefined instruction without a written type"
if grep -q 'warning' "$T/err"; then ok 1 "no warning before that error"; else ok 0 "no warning before that error"; fi
as inspect "$D/bad_undefined_comp.hlo"
expect_fail 2 "bad_undefined_comp.hlo:6:60: undefined computation '%nosuch'" \
    "undefined computation"
as inspect "$D/bad_recursion.hlo"
expect_fail 2 "bad_recursion.hlo:10:38: recursion between computations: 'a' calls 'b' calls 'a'" \
    "recursion between computations"
as inspect "$D/bad_garbage.hlo"
expect_fail 2 "bad_garbage.hlo:3:1: unexpected byte 0x7f" "binary garbage"

# Issue 13 item 13: a combined all-gather/reduce-scatter with a scalar token operand (as
# PyTorch/XLA writes them): the token passes through, the array is gathered/scattered.
as convert "$D/allgather_token.hlo" -o "$T/tok.asg"
ok $rc "all-gather with a scalar token over 4 devices imports"
has '^all-gather.1.0 : bf16\[384,32\] = all_gather(x) dim=0 group_size=4$' "$T/tok.asg" \
    "the array operand is gathered over 4"
has '^reduce-scatter.4.0 : bf16\[24,32\] = reduce_scatter(x) dim=0 reducer=sum group_size=4$' \
    "$T/tok.asg" "the array operand is scattered over 4"
has '^output all-gather.1.0, t, reduce-scatter.4.0$' "$T/tok.asg" "the token passes through both"
as solve "$D/allgather_token.hlo" --mesh 4
ok $rc "solve on a module with a token all-gather"

# Issue 13 item 16: fragments without the `HloModule` line say what is missing.
printf 'ENTRY %%main (x: f32[4]) -> f32[4] {\n  %%x = f32[4]{0} parameter(0)\n  ROOT %%n = f32[4]{0} negate(%%x)\n}\n' >"$T/frag1.hlo"
as inspect "$T/frag1.hlo"
expect_fail 2 "frag1.hlo:1:1: missing 'HloModule NAME' line: the text starts with computation 'main'" \
    "a computation without the HloModule line"
printf '  %%x = f32[4]{0} parameter(0)\n  ROOT %%n = f32[4]{0} negate(%%x)\n' >"$T/frag2.hlo"
as inspect "$T/frag2.hlo"
expect_fail 2 "frag2.hlo:1:3: missing 'HloModule NAME' line and an ENTRY computation: the text starts with instruction 'x'" \
    "bare instructions: header and computation missing"
printf 'x = f32[4]{0} parameter(0)\n' >"$T/frag3.hlo"
as inspect "$T/frag3.hlo"
expect_fail 2 "frag3.hlo:1:1: missing 'HloModule NAME' line and an ENTRY computation: the text starts with instruction 'x'" \
    "bare instruction without % is taken for HLO"
printf 'HloModule m\n\n%%x = f32[4]{0} parameter(0)\n' >"$T/frag4.hlo"
as inspect "$T/frag4.hlo"
expect_fail 2 "frag4.hlo:3:1: instruction 'x' outside a computation: missing a computation header" \
    "instructions after the header but outside a computation"

# Generated modules: a deep call chain and a call tree that doubles at every level.
chain() { # chain N FANOUT: computation c_i calls c_{i+1} FANOUT times
    n=$1 f=$2 i=$(($1 - 1))
    echo "HloModule gen"
    echo "%c$i (x: f32[4]) -> f32[4] {"
    echo "  %x = f32[4]{0} parameter(0)"
    echo "  ROOT %r = f32[4]{0} negate(%x)"
    echo "}"
    while [ $i -gt 0 ]; do
        i=$((i - 1))
        echo "%c$i (x: f32[4]) -> f32[4] {"
        echo "  %x = f32[4]{0} parameter(0)"
        echo "  %a = f32[4]{0} call(%x), to_apply=%c$((i + 1))"
        if [ "$f" -eq 2 ]; then
            echo "  %b = f32[4]{0} call(%x), to_apply=%c$((i + 1))"
            echo "  ROOT %r = f32[4]{0} add(%a, %b)"
        else
            echo "  ROOT %r = f32[4]{0} negate(%a)"
        fi
        echo "}"
    done
    echo "ENTRY %main (x: f32[4]) -> f32[4] {"
    echo "  %x = f32[4]{0} parameter(0)"
    echo "  ROOT %r = f32[4]{0} call(%x), to_apply=%c0"
    echo "}"
}
chain 300 1 >"$T/deep.hlo"
as inspect "$T/deep.hlo"
expect_fail 2 "deep.hlo:[0-9]*:[0-9]*: calls nested more than 64 deep" "deeply nested calls"
chain 40 2 >"$T/fanout.hlo"
as inspect "$T/fanout.hlo"
expect_fail 2 "fanout.hlo:[0-9]*:[0-9]*: inlining calls expands the module to more than" \
    "exponential inlining is refused"
printf 'HloModule m\nENTRY %%main (x: f32[2,3]) -> f32[3,2] {\n  %%x = f32[2,3]{1,0} parameter(0)\n  ROOT %%t = f32[3,2]{1,0} transpose(%%x), dimensions={zz}\n}\n' >"$T/baddims.hlo"
as inspect "$T/baddims.hlo"
expect_fail 2 "baddims.hlo:4:[0-9]*: malformed dimensions={...}" "malformed integer list"

done_testing
