#!/bin/sh
# onnx.sh -- ONNX import through the CLI: the models tests/data/onnx/make.py
# exports from PyTorch (parameter counts from its .expect files), conversion
# to .asg, --train, and malformed files (one line, exit 2).
. "${top_srcdir:-.}/tests/cli/lib.sh"
D="$top_srcdir/tests/data/onnx"
has() { if grep -q -- "$1" "$2"; then ok 0 "$3"; else ok 1 "$3"; fi; }
expect() { sed -n "s/^$1 //p" "$D/$2.expect"; }
params() { sed -n 's/^parameters: .*(\([0-9]*\))$/\1/p' "$T/out"; }

# Every committed model imports and has the module's parameter count.
for f in mlp mlp_w; do
    as inspect "$D/$f.onnx"
    ok $rc "$f.onnx imports"
    [ "$(params)" = "$(expect params $f)" ]
    ok $? "$f.onnx: $(expect params $f) parameters, as PyTorch counts them"
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
