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
    # shellcheck disable=SC2086
    as gen $g --precision fp32 --train # the exports are fp32; transformer presets default to bf16-mixed
    cp "$T/out" "$T/gen.asg"
    as inspect "$T/gen.asg"
    fl=$(flops)
    as convert "$D/$f.onnx" --train -o "$T/train.asg"
    as inspect "$T/train.asg"
    [ -n "$fl" ] && [ "$fl" = "$(flops)" ] && grep -q '^optimizer state bytes: .*[1-9]' "$T/out"
    ok $? "$f.onnx --train: a training step with the FLOPs of gen $g --precision fp32 --train ($fl)"
done
as convert "$D/resnet18_eval.onnx" --train
expect_fail 2 'train: the graph has no scalar loss' "--train on a graph without a loss: one line, exit 2"

# Opsets 9-15 (PyTorch 1.13 writes Softmax, Squeeze, Slice, ReduceSum differently): the same graph.
as inspect "$D/mlp_op15.onnx"
fl=$(flops)
for v in 9 11 13; do
    as inspect "$D/mlp_op$v.onnx"
    [ -n "$fl" ] && [ "$(flops)" = "$fl" ] && [ "$(params)" = "$(expect params mlp_op$v)" ]
    ok $? "mlp_op$v.onnx: the parameters and FLOPs of the opset 15 export"
done
as inspect "$D/resnet18_train.onnx"
fl=$(flops)
as inspect "$D/resnet18_train_op13.onnx"
[ -n "$fl" ] && [ "$(flops)" = "$fl" ] && [ "$(count batchnorm)" = 20 ] &&
    [ "$(params)" = "$(expect params resnet18_train_op13)" ]
ok $? "resnet18 (train, opset 13): 5-output BatchNormalization is training mode, same FLOPs as opset 17"

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

# Hand-written graphs (make.py hand): one construct each.
as convert "$D/ops_conv.onnx" -o "$T/c.asg"
ok $rc "ops_conv.onnx imports (declared output shapes checked)"
has '^c1.pad : f32\[2,4,10,10\] = pad(x) lo=\[0,0,0,0\] hi=\[0,0,1,1\] value=0$' "$T/c.asg" \
    "asymmetric Conv pads: an explicit pad, then conv2d"
has '^c2 : f32\[2,8,5,5\] = conv2d(x, w, b) stride=\[2,2\] padding=\[1,1\]' "$T/c.asg" \
    "auto_pad=SAME_UPPER with stride 2: symmetric padding 1, bias kept"
has '^p1.pad : f32\[2,4,11,11\] = pad(z) lo=\[0,0,0,0\] hi=\[0,0,1,1\] value=-inf$' "$T/c.asg" \
    "MaxPool ceil_mode: one more window, padded with -inf"
has '^p2 : f32\[2,4,5,5\] = avgpool2d(x) kernel=\[2,2\] stride=\[2,2\] padding=\[1,1\]$' "$T/c.asg" \
    "AveragePool with pads and strides"
has '^c3 : f32\[2,6,10\] = conv_general(s, w1) dim_labels="bf0_oi0->bf0"' "$T/c.asg" "a 1-D Conv is conv_general"
as convert "$D/ops_bn5.onnx" -o "$T/b.asg"
has '^y : f32\[4,3,5,5\] = batchnorm(x, sc, bi)' "$T/b.asg" "BatchNormalization with 5 outputs (opset 9) is training mode"
has '^rmean : f32\[3\] = reduce_mean(x) dims=\[0,2,3\] keepdims=0$' "$T/b.asg" "its running mean output is read: a batch mean"
has '^output y, rmean, rvar, smean, svar$' "$T/b.asg" "all 5 outputs"
as convert "$D/ops_dropout.onnx" -o "$T/d.asg"
has '^d : f32\[4,8\] = dropout(x, d.mask) p=0.25$' "$T/d.asg" "Dropout(x, ratio, training_mode=true): dropout with a mask input"
has '^input d.mask : pred\[4,8\] batch=0$' "$T/d.asg" "the mask output is a per-step pred input"
has '^y : f32\[4,8\] = relu(d)$' "$T/d.asg" "inference Dropout is no op"
as convert "$D/ops_misc.onnx" -o "$T/x.asg"
ok $rc "ops_misc.onnx imports"
has '^flat : f32\[2,12\] = reshape(x) shape=\[2,12\]$' "$T/x.asg" "Shape -> Gather -> Unsqueeze -> Concat -> Reshape: a reshape to a constant shape"
has '^sq : f32\[2,3,4\] = square(x)$' "$T/x.asg" "Pow(x, 2) is square"
has '^ng : pred\[2,3,4\] = compare(gt, const.pred) direction=eq$' "$T/x.asg" "Not is compare eq false"
has '^w : f32\[2,3,4\] = select(ng, q, x)$' "$T/x.asg" "Where is select"
has '^ex : f32\[2,3,4\] = broadcast(mu) shape=\[2,3,4\]' "$T/x.asg" "Expand is broadcast"
has '^ge : f32\[2,3,4\] = gather(w, ge.concat) offset_dims=\[\] collapsed_slice_dims=\[0,1,2\]' "$T/x.asg" \
    "GatherElements is a gather with iota index vectors"
has '^sm.softmax : f32\[2,12\] = softmax(sm.reshape) axis=1$' "$T/x.asg" "opset 11 Softmax(axis=1) normalises the flattened trailing dims"
has '^sl : f32\[2,2,3\] = slice(s1) begin=\[0,0,0\] end=\[2,3,3\] strides=\[1,2,1\]$' "$T/x.asg" "Slice with steps"
has '^tv : f32\[2,3,2\], ti2 : i64\[2,3,2\] = opaque(ex, k) hlo_op=TopK' "$T/x.asg" "an unsupported op is opaque with its declared shapes"
has 'warning: .*ops_misc.onnx: 1 unsupported ONNX op kept as opaque: TopK (1)$' "$T/err" "... counted in one warning line"
as convert "$D/ops_unsorted.onnx" -o "$T/u.asg"
ok $rc "nodes out of topological order import"

as inspect "$D/bad_cycle.onnx"
expect_fail 2 'bad_cycle.onnx: cycle: relu_b -> add_a -> relu_b$' "a cycle"
as inspect "$D/bad_undefined.onnx"
expect_fail 2 "bad_undefined.onnx: node 'r' (Relu): input 'nothere' is not defined" "an undefined input"
as inspect "$D/bad_external.onnx"
expect_fail 2 "bad_external.onnx: tensor 'w': external data file '.*w_missing.bin' is missing" "missing external data"
as inspect "$D/bad_symbolic.onnx"
expect_fail 2 "bad_symbolic.onnx: graph input 'x' has a symbolic dim 'batch'" "a symbolic input dim"
as inspect "$D/bad_shape.onnx"
expect_fail 2 "bad_shape.onnx: node 'mm' (MatMul): output 'y' is declared f32\[4,7\] but the import gives f32\[4,6\]" \
    "a declared output shape that the registry does not infer"

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
