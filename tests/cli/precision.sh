#!/bin/sh
# precision.sh -- mixed precision (DESIGN.md "Training step"): gen --precision and the
# .asg `precision` directive, the bytes per class inspect reports (checked by hand),
# 16-bit compute at the tensor-core peak, the transformer default (bf16-mixed), and
# the ILP's memory rows counting the same bytes as the simulator.
. "${top_srcdir:-.}/tests/cli/lib.sh"

jnum() { sed -n "s/^  \"$1\": \\([0-9.e+]*\\).*/\\1/p" "$T/out" | head -1; }

# mlp-1b, 1 layer of 64: w 64x64 + b 64 = 4160 parameters.  Adam, bf16-mixed:
# bf16 weights 2 B, fp32 master 4 B, bf16 gradient 2 B + fp32 accumulator 4 B,
# fp32 moments 8 B = 20 B per parameter.
as gen mlp-1b --layers 1 --hidden 64 --batch 8 --train --precision bf16-mixed -o "$T/m.asg"
as inspect --json "$T/m.asg"
s=$rc
[ "$(jnum param_bytes)" = 8320 ] || s=1
[ "$(jnum master_bytes)" = 16640 ] || s=1
[ "$(jnum grad_bytes)" = 24960 ] || s=1
[ "$(jnum state_bytes)" = 33280 ] || s=1
grep -q '"precision": "bf16-mixed"' "$T/out" || s=1
ok $s "bf16-mixed adam: 2 + 4 + (2 + 4) + 8 bytes per parameter"
as inspect "$T/m.asg"
ok $(grep -q '^precision: bf16-mixed$' "$T/out" && grep -q '^master weight bytes: 16.25 KiB$' "$T/out";
    echo $?) "inspect text: precision and master weight bytes"

for p in fp32 bf16 fp16; do
    as gen mlp-1b --layers 1 --hidden 64 --batch 8 --train --precision $p -o "$T/$p.asg"
    as inspect --json "$T/$p.asg"
    s=$rc
    b=4; [ $p = fp32 ] || b=2
    [ "$(jnum param_bytes)" = $((4160 * b)) ] || s=1
    [ "$(jnum master_bytes)" = 0 ] || s=1
    [ "$(jnum state_bytes)" = $((2 * 4160 * b)) ] || s=1
    grep -q "\"precision\": \"$p\"" "$T/out" || s=1
    ok $s "$p: $b bytes per weight, gradient and moment; no master weights"
done
as gen mlp-1b --layers 1 --hidden 64 --batch 8 --train --precision fp16-mixed -o "$T/f.asg"
ok $(grep -q '^param h.0.fc.w : f16\[64,64\]$' "$T/f.asg" &&
    grep -q '^state master.h.0.fc.w : f32\[64,64\] of=h.0.fc.w$' "$T/f.asg" &&
    grep -q '= master_copy(h.0.fc.w, master.h.0.fc.w.new)$' "$T/f.asg"; echo $?) \
    "fp16-mixed: f16 weights, fp32 master, master_copy into the weight"
as inspect "$T/f.asg"
ok $(grep -q '^precision: fp16-mixed$' "$T/out"; echo $?) "the written step reads back as fp16-mixed"

# transformer presets default to bf16-mixed, the others to fp32
as gen gpt2-small --layers 1 --seq 32 --batch 2 --vocab 512 --train -o "$T/g.asg"
as inspect "$T/g.asg"
ok $(grep -q '^precision: bf16-mixed$' "$T/out"; echo $?) "gpt2-small defaults to bf16-mixed"
as gen mlp-1b --layers 1 --hidden 64 --batch 8 --train -o "$T/m32.asg"
as inspect "$T/m32.asg"
ok $(grep -q '^precision: fp32$' "$T/out"; echo $?) "mlp defaults to fp32"

# the .asg directive gives the same step as gen
as gen mlp-1b --layers 1 --hidden 64 --batch 8 -o "$T/fwd.asg"
{ echo "precision bf16-mixed"; cat "$T/fwd.asg"; echo "train optimizer=adam"; } >"$T/d.asg"
as convert "$T/d.asg" -o "$T/d2.asg"
ok $([ $rc -eq 0 ] && cmp -s "$T/d2.asg" "$T/m.asg"; echo $?) \
    "precision directive + train = gen --precision bf16-mixed --train"

# 16-bit compute at the tensor-core peak: a 8192^3 matmul on an A100 is
# 2*8192^3 / 312e12 + 5 us = 3.529 ms in bf16, / 19.5e12 = 56.39 ms in fp32
for p in bf16 fp32; do
    as gen mlp-1b --layers 1 --hidden 8192 --batch 8192 --precision $p -o "$T/big.asg"
    as strategies "$T/big.asg" --mesh 1 --op h.0.fc.mm
    c=$(awk '$2 == "rep" {print $3}' "$T/out")
    want=0.003529; [ $p = fp32 ] && want=0.05639
    ok $([ "$c" = $want ]; echo $?) "$p matmul costed at the profile's $p peak ($c s)"
done

# one memory model: with nothing resharded (1 device; a data-parallel MLP) the ILP's
# rows count exactly the simulator's bytes
for m in 1 2; do
    for f in m g; do
        as solve "$T/$f.asg" --mesh $m -o "$T/$f.json"
        s=$rc
        a=$(sed -n 's/^peak memory  \(.*\) per device (budget none; ILP rows \(.*\))$/\1=\2/p' "$T/out")
        [ -n "$a" ] && [ "${a%%=*}" = "${a#*=}" ] || s=1
        as simulate "$T/$f.asg" --plan "$T/$f.json"
        [ $rc -eq 0 ] || s=1
        [ "$f" = g ] && [ $m = 2 ] && continue
        ok $s "bf16-mixed $f on $m: ILP rows = simulator peak ($a)"
    done
done

# bad settings: one line, exit 2
as gen mlp-1b --precision bf8
expect_fail 2 "^autoshard: --precision must be fp32, bf16, fp16, bf16-mixed or fp16-mixed, got 'bf8'$" \
    "unknown precision"
as gen mlp-1b --precision bf16 --dtype f32
expect_fail 2 "^autoshard: give --dtype or --precision, not both$" "--dtype with --precision"
printf 'graph x\nprecision bf17\ninput x : f32[2]\nh = relu(x)\noutput h\n' >"$T/bad.asg"
as inspect "$T/bad.asg"
expect_fail 2 "bad.asg:2:11: expected fp32, bf16, fp16, bf16-mixed or fp16-mixed, got 'bf17'" \
    "unknown precision in .asg"
{ echo "precision bf16"; cat "$T/m32.asg"; } >"$T/bad2.asg"
as inspect "$T/bad2.asg"
expect_fail 2 "bad2.asg:1:1: precision bf16 applies to a forward graph" \
    "precision on an expanded training step"
printf 'precision bf16\nprecision fp16\ninput x : f32[2]\nh = relu(x)\noutput h\n' >"$T/bad3.asg"
as inspect "$T/bad3.asg"
expect_fail 2 "bad3.asg:2:1: second precision directive (first at line 1)" "two precision lines"

done_testing
