#!/bin/sh
# memory_step.sh -- one memory model under every training-step setting (issue 18
# item 5): for GPT, BERT and T5 graphs with gradient accumulation, recomputation
# and pipelines, and a wide ResNet with accumulation, the peak per device that `solve` reports (per stage with
# --pipeline) equals the simulator's for the same plan within 1 %, and so do the
# ILP's own rows (these settings make no resharded copies on this mesh, the one
# class of bytes the rows leave to the refit rounds; docs/ilp.md "Memory").
. "${top_srcdir:-.}/tests/cli/lib.sh"

# bytes of "A UNIT"
tobytes() {
    awk -v a="$1" -v u="$2" 'BEGIN{m=1; if(u=="KiB")m=1024; else if(u=="MiB")m=1048576;
        else if(u=="GiB")m=1073741824; printf "%.0f\n", a*m}'
}
close() { awk -v a="$1" -v b="$2" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(a>0 && b>0 && d<=0.01*b)}'; }
# simulated peak of device D (simulate --json in $T/sim)
devpeak() {
    tr -d '\n ' <"$T/sim" | sed 's/},{/}\n{/g' |
        sed -n "s/.*\"device\":$1,.*\"peak_memory\":\([0-9.e+]*\).*/\1/p" | head -1
}

as gen gpt2-small --layers 2 --seq 64 --batch 8 --vocab 2048 --train -o "$T/gpt.asg"
s=$rc
as gen bert-base --layers 2 --seq 64 --batch 8 --vocab 2048 --train -o "$T/bert.asg"
[ $rc -eq 0 ] || s=1
as gen t5-base --layers 2 --seq 32 --batch 8 --vocab 2048 --train -o "$T/t5.asg"
[ $rc -eq 0 ] || s=1
as gen wresnet-50 --width 1 --batch 8 --train -o "$T/wrn.asg"
[ $rc -eq 0 ] || s=1
ok $s "small GPT, BERT, T5 and wide ResNet training steps"

# agree GRAPH OPTIONS...: solve on mesh 2, simulate the plan, compare per stage
agree() {
    g=$1
    shift
    as solve "$T/$g.asg" --mesh 2 "$@" -o "$T/p.json"
    s=$rc
    cp "$T/out" "$T/sol"
    as simulate "$T/$g.asg" --plan "$T/p.json" --json
    [ $rc -eq 0 ] || s=1
    cp "$T/out" "$T/sim"
    if grep -q '^stage 0 ' "$T/sol"; then
        sed -n 's/^stage \([0-9]*\) .* peak \([0-9.]*\) \([KMG]iB\) per device (ILP rows \([0-9.]*\) \([KMG]iB\),.*/\1 \2 \3 \4 \5/p' \
            "$T/sol" >"$T/rows"
    else
        sed -n 's/^peak memory  \([0-9.]*\) \([KMG]iB\) per device (budget none; ILP rows \([0-9.]*\) \([KMG]iB\))$/0 \1 \2 \3 \4/p' \
            "$T/sol" >"$T/rows"
    fi
    [ -s "$T/rows" ] || s=1
    desc=
    while read -r st a ua b ub; do
        p=$(tobytes "$a" "$ua")
        r=$(tobytes "$b" "$ub")
        q=$(devpeak $((st * 2)))
        close "$p" "${q:-0}" || s=1
        close "$r" "${q:-0}" || s=1
        desc="$desc stage $st: $a $ua, rows $b $ub, simulated ${q:-?} B;"
    done <"$T/rows"
    ok $s "$g $*:$desc"
}

for g in gpt bert t5; do
    agree $g --microbatches 2
    agree $g --recompute full
    agree $g --recompute selective --microbatches 4
    agree $g --pipeline 2 --microbatches 4
    agree $g --pipeline 2 --microbatches 4 --recompute full
done
# weight gradients reduce-scattered once after K microbatches: no partial buffer per microbatch
agree wrn --microbatches 4

done_testing
