#!/bin/sh
# onnx.sh -- ONNX import through the CLI: the models tests/data/onnx/make.py
# exports from PyTorch (parameter counts from its .expect files), conversion
# to .asg, --train, and malformed files (one line, exit 2).
. "${top_srcdir:-.}/tests/cli/lib.sh"
D="$top_srcdir/tests/data/onnx"
has() { if grep -q -- "$1" "$2"; then ok 0 "$3"; else ok 1 "$3"; fi; }
expect() { sed -n "s/^$1 //p" "$D/$2.expect"; }
params() { sed -n 's/^parameters: .*(\([0-9]*\))$/\1/p' "$T/out"; }

flops() { sed -n 's/^flops per step: .*(\(.*\))$/\1/p' "$T/out"; }
count() { sed -n "s/^  $1  *\([0-9]*\)$/\1/p" "$T/out"; }

# Every committed model imports with the module's parameter count (torchvision's
# for the CNNs), and with the FLOPs of the same model built by `gen` where one exists.
for f in mlp mlp_w resnet18_eval resnet18_train wide_resnet50_2_eval wide_resnet50_2_train \
         gpt2_block bert_block; do
    as inspect "$D/$f.onnx"
    ok $rc "$f.onnx imports"
    [ "$(params)" = "$(expect params $f)" ]
    ok $? "$f.onnx: $(expect params $f) parameters, as PyTorch counts them"
    g=$(expect gen $f)
    [ -n "$g" ] || continue
    fl=$(flops)
    # shellcheck disable=SC2086
    as gen $g
    cp "$T/out" "$T/gen.asg"
    as inspect "$T/gen.asg"
    [ -n "$fl" ] && [ "$fl" = "$(flops)" ] && [ "$(params)" = "$(expect params $f)" ]
    ok $? "$f.onnx: FLOPs per step ($fl) and parameters equal those of gen $g"
done

# Op counts: what each PyTorch construct becomes.
as inspect "$D/resnet18_train.onnx"
[ "$(count conv2d)" = 20 ] && [ "$(count batchnorm)" = 20 ] && [ "$(count maxpool2d)" = 1 ] &&
    [ "$(count avgpool2d)" = 1 ] && [ "$(count relu)" = 17 ]
ok $? "resnet18 (train): 20 conv2d, 20 batchnorm (batch statistics), maxpool, global avgpool, 17 relu"
as inspect "$D/resnet18_eval.onnx"
[ -z "$(count batchnorm)" ] && [ "$(count conv2d)" = 20 ] && [ "$(count sqrt)" = 20 ]
ok $? "resnet18 (eval): batchnorm in inference mode is elementwise (running statistics)"
as convert "$D/resnet18_eval.onnx" -o "$T/r.asg"
has '^const bn1.running_mean : f32\[64\]$' "$T/r.asg" "running statistics are constants, not parameters"
has '^param bn1.weight : f32\[64\]$' "$T/r.asg" "batchnorm scale is a parameter"
as inspect "$D/gpt2_block.onnx"
[ "$(count matmul)" = 17 ] && [ "$(count transpose)" = 8 ] && [ "$(count gelu)" = 2 ] &&
    [ "$(count layernorm)" = 5 ] && [ "$(count softmax)" = 2 ] && [ "$(count embedding)" = 1 ]
ok $? "gpt2_block: 17 matmul (weight transposes folded into the flags), 8 transpose, 2 gelu, 5 layernorm"
as convert "$D/gpt2_block.onnx" -o "$T/g.asg"
has '^param wpe : f32\[1024,64\]$' "$T/g.asg" "a position table read through a slice is a parameter"
has '^const .* : f32\[16,16\]$' "$T/g.asg" "the causal mask (Trilu of a constant) is folded into a constant"
has '= reshape(.*) shape=\[2,16,4,16\]$' "$T/g.asg" "Shape -> Gather -> Unsqueeze -> Concat -> Reshape folds to a constant shape"
as inspect "$D/bert_block.onnx"
[ "$(count tanh)" = 1 ] && [ "$(count slice)" = 2 ] && [ "$(count cross_entropy)" = 2 ] &&
    [ "$(count embedding)" = 2 ]
ok $? "bert_block: pooler x[:, 0] is a slice, two losses, two embeddings"

# Solve and simulate run on each model.
for f in mlp resnet18_eval resnet18_train wide_resnet50_2_train gpt2_block bert_block; do
    as solve "$D/$f.onnx" --mesh 2 -o "$T/$f.plan.json"
    ok $rc "solve $f.onnx --mesh 2"
    as simulate "$D/$f.onnx" --plan "$T/$f.plan.json"
    ok $rc "simulate $f.onnx with that plan"
done

as inspect "$D/mlp.onnx"
has '^  matmul  *3$' "$T/out" "mlp: Gemm becomes matmul (transB=1) ..."
has '^  bias_add  *3$' "$T/out" "... plus bias_add"
has '^  cross_entropy  *1$' "$T/out" "SoftmaxCrossEntropyLoss becomes cross_entropy"
as convert "$D/mlp.onnx" -o "$T/m.asg"
ok $rc "convert mlp.onnx to .asg"
has '^input x : f32\[32,784\] batch=0$' "$T/m.asg" "the data input keeps its name, batch dim 0"
has '^param layers.0.weight : f32\[128,784\]$' "$T/m.asg" "a weight graph input (export_params=False) is a param"
has '^input y : i64\[32\] batch=0$' "$T/m.asg" "integer labels are an input"
as convert "$T/m.asg" -o "$T/m2.asg"
cmp -s "$T/m.asg" "$T/m2.asg"
ok $? "the converted .asg is canonical (converts to the same bytes)"
as convert "$D/mlp_w.onnx" -o "$T/w.asg"
has '^param layers.0.weight : f32\[32,16\]$' "$T/w.asg" "an initializer with data is a param"

as convert "$D/mlp.onnx" --train -o "$T/t.asg"
ok $rc "convert --train"
has 'adam_update' "$T/t.asg" "--train appends the optimizer (adam by default)"
has 'relu_grad' "$T/t.asg" "--train appends the backward pass"
as convert "$D/mlp.onnx" --train --optimizer sgd -o "$T/s.asg"
has 'sgd_update' "$T/s.asg" "--optimizer sgd"
as convert "$D/mlp.onnx" --optimizer sgd
[ $rc -eq 2 ] && grep -q 'needs --train' "$T/err"
ok $? "--optimizer without --train is a usage error"

# Malformed files: one line, exit 2, no output file.
printf '\010\007\072\377\377\377\377\007' >"$T/big.onnx"         # graph: 2 GB length prefix
as convert "$T/big.onnx" -o "$T/big.asg"
expect_fail 2 "big.onnx: byte 2: field 'graph' (7) claims 2147483647 bytes but 0 are left: truncated file?" \
    "a 2 GB length prefix"
[ ! -e "$T/big.asg" ]
ok $? "no output file is left behind"
head -c 500 "$D/mlp.onnx" >"$T/trunc.onnx"
as inspect "$T/trunc.onnx"
expect_fail 2 'trunc.onnx: byte [0-9]*: .*truncated' "a truncated file"
printf '\010\007\070\001' >"$T/wt.onnx"                           # graph (7) as a varint
as inspect "$T/wt.onnx"
expect_fail 2 "wt.onnx: byte 2: field 'graph' (7) of ModelProto has wire type varint, expected length-delimited" \
    "a field with the wrong wire type"
printf '\010\007\102\002\020\021' >"$T/nog.onnx"                  # opset only, no graph
as inspect "$T/nog.onnx"
expect_fail 2 "nog.onnx: the model has no graph" "a model without a graph"
done_testing
