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

# Issue 13 item 12: concatenations of 200 inputs (PyTorch/XLA concatenates ~200 gradient
# norms for clipping) get strategies and solve; none is skipped or aborts.
gen_concat() { # gen_concat N: N parameters f32[8,16] concatenated along dim 1, and N scalar norms
    n=$1
    echo "HloModule bigconcat"
    printf 'ENTRY %%main () -> (f32[8,%d], f32[%d]) {\n' $((16 * n)) "$n"
    i=0 ops="" norms=""
    while [ $i -lt $n ]; do
        echo "  %p$i = f32[8,16]{1,0} parameter($i)"
        echo "  %s$i = f32[] parameter($((n + i)))"
        echo "  %r$i = f32[1]{0} reshape(%s$i)"
        ops="$ops${i:+}%p$i, "
        norms="$norms%r$i, "
        i=$((i + 1))
    done
    echo "  %c = f32[8,$((16 * n))]{1,0} concatenate(${ops%, }), dimensions={1}"
    echo "  %norms = f32[$n]{0} concatenate(${norms%, }), dimensions={0}"
    echo "  ROOT %t = (f32[8,$((16 * n))]{1,0}, f32[$n]{0}) tuple(%c, %norms)"
    echo "}"
}
gen_concat 200 >"$T/big.hlo"
as strategies "$T/big.hlo" --mesh 2 --op c
ok $rc "strategies: concat of 200 inputs"
has '^c  concat  .*(3 strategies)$' "$T/out" "concat of 200 [8,16]: rep and two splits"
has '^ *1  S(in0-199:0@x) ' "$T/out" "all 200 inputs split on dim 0: one short name"
as strategies "$T/big.hlo" --mesh 2
n=$(grep -c '^[a-z0-9]*  [a-z_]*  .*(.* strateg' "$T/out" || true)
if [ "$n" -eq 202 ]; then ok 0 "strategies lists all 202 ops"; else ok 1 "strategies lists $n ops, not 202"; fi
as solve "$T/big.hlo" --mesh 2 -o "$T/big.plan"
ok $rc "solve: a graph with 200-input concatenations"
as simulate "$T/big.hlo" --plan "$T/big.plan"
ok $rc "the plan simulates"

# Issue 13 item 15: an HLO training step with Adam: the moments (f32, beside a bf16 weight)
# and the step count are optimizer state, not parameters.
as inspect "$D/adam_train.hlo" --json
has '"params": 544,' "$T/out" "adam_train.hlo: 16*32+32 = 544 parameters, moments excluded"
has '"state_bytes": 4356,' "$T/out" "adam_train.hlo: state = 2 moments x 544 x 4 B + the f32 step"
as convert "$D/adam_train.hlo" -o "$T/adam.asg"
has '^state mw : f32\[16,32\] of=w$' "$T/adam.asg" "the f32 moment of a bf16 weight belongs to it"
has '^state vb : f32\[32\] of=b$' "$T/adam.asg" "the second moment of the bias belongs to it"
has '^state t : f32\[\]$' "$T/adam.asg" "the step count is state of no parameter"
as convert "$D/mlp_train.hlo" -o "$T/sgd.asg"
if grep -q '^state' "$T/sgd.asg"; then ok 1 "plain SGD: no state"; else ok 0 "plain SGD: no state"; fi

# Issue 13 item 14: PyTorch/XLA's custom calls and LayerNorm lowered to batch-norm-training /
# batch-norm-grad become registry ops (not opaque, which replicates them); --custom-call
# maps others.
as convert "$D/neuron_calls.hlo" -o "$T/nc.asg"
ok $rc "neuron_calls.hlo imports"
has '^w.t : f32\[16,16\] = identity(w)$' "$T/nc.asg" "AwsNeuronTransferWithStaticRing is identity"
has '^g : f32\[8,16\] = gelu(ln)$' "$T/nc.asg" "AwsNeuronGelu is gelu"
has '^gd : f32\[8,16\] = gelu_grad(gd.dy, ln)$' "$T/nc.asg" "AwsNeuronGeluBackward(x) is gelu_grad(1, x)"
has '^s : f32\[8,16\] = softmax(g) axis=-1$' "$T/nc.asg" "AwsNeuronSoftmax is softmax"
has '^sd : f32\[8,16\] = softmax_grad(gg, s) axis=-1$' "$T/nc.asg" "AwsNeuronSoftmaxBackward is softmax_grad"
has '^bnt.y : f32\[1,8,16\] = batchnorm(r, scale, offset) eps=1e-12$' "$T/nc.asg" \
    "batch-norm-training is batchnorm"
has '^bng.dx : f32\[1,8,16\] = batchnorm_grad_x(sd.r, r, scale) eps=1e-12$' "$T/nc.asg" \
    "batch-norm-grad is batchnorm_grad_x"
if grep -q 'var\|mean\|dscale\|doffset' "$T/nc.asg"; then ok 1 "statistics nobody reads are not emitted"; else
    ok 0 "statistics nobody reads are not emitted"; fi
n=$(grep -c 'opaque' "$T/nc.asg" || true)
if [ "$n" -eq 1 ]; then ok 0 "only the unknown custom call is opaque"; else ok 1 "$n opaque ops"; fi
as strategies "$D/neuron_calls.hlo" --mesh 2 --op bnt.y
has '^ *1  S(in0:1,in1:0,in2:0@x) ' "$T/out" "the LayerNorm-as-batch-norm splits its rows"
as --custom-call MyActivation=relu convert "$D/neuron_calls.hlo" -o "$T/nc2.asg"
has '^m : f32\[8,16\] = relu(dx.r)$' "$T/nc2.asg" "--custom-call MyActivation=relu (before the command)"
if grep -q 'opaque' "$T/nc2.asg"; then ok 1 "then nothing is opaque"; else ok 0 "then nothing is opaque"; fi
as inspect "$D/neuron_calls.hlo" --custom-call=MyActivation=relu
has '^  relu  *1$' "$T/out" "--custom-call=NAME=OP after the command"
as inspect "$D/neuron_calls.hlo" --custom-call MyActivation=nosuch
expect_fail 2 "--custom-call MyActivation=nosuch: unknown op 'nosuch'" "--custom-call with an unknown op"
as inspect "$D/neuron_calls.hlo" --custom-call MyActivation=matmul
expect_fail 2 "neuron_calls.hlo:30:4: 'm': 'matmul' takes 2 inputs, got 1" "--custom-call with the wrong arity"
as inspect "$D/neuron_calls.hlo" --custom-call bad
expect_fail 2 "--custom-call: expected NAME=OP, got 'bad'" "--custom-call without '='"

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

# The program of a plan with opaque ops (whose custom-call target is an empty string) reads
# back: the writer left `attr.target=` with no value, which the reader refuses (the llama2
# dump of ../shared/hlo, `simulate --print-program` then `simulate --program`).
as solve "$D/opaque.hlo" --mesh 2 -o "$T/op.json"
ok $rc "opaque.hlo solves"
as simulate "$D/opaque.hlo" --plan "$T/op.json" --print-program
cp "$T/out" "$T/op.prog"
if grep -q 'op=opaque' "$T/op.prog" && ! grep -q 'attr.target= ' "$T/op.prog"; then
    ok 0 "its program has opaque ops and no empty attribute"
else
    ok 1 "its program has opaque ops and no empty attribute"
fi
as simulate --program "$T/op.prog" --print-program
ok $rc "the printed program reads back"
check "... and prints the same text" cmp "$T/out" "$T/op.prog"
# ... and of a convolution and a max-pool window: dim_labels "b01f_01io->b01f" and init -inf
as solve "$D/conv_window.hlo" --mesh 2 -o "$T/cw.json"
as simulate "$D/conv_window.hlo" --plan "$T/cw.json" --print-program
cp "$T/out" "$T/cw.prog"
has 'attr.dim_labels=b01f_01io-%3Eb01f ' "$T/cw.prog" "dim_labels written with %XX"
has 'attr.init=-inf ' "$T/cw.prog" "a max-pool's init written as -inf"
as simulate --program "$T/cw.prog" --print-program
ok $rc "that program reads back"
check "... and prints the same text" cmp "$T/out" "$T/cw.prog"

done_testing
