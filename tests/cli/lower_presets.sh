#!/bin/sh
# lower_presets.sh -- `lower | simulate --program` gives the report of
# `simulate GRAPH --plan` for every preset (small sizes), with and without
# a pipeline; nullary ops (fill) in the program text parse.
. "${top_srcdir:-.}/tests/cli/lib.sh"

small() { # small PRESET: gen options that keep PRESET's family small
    case $("$AUTOSHARD" gen --list | awk -v p="$1" '$1 == p {print $2}') in
    mlp) echo "--layers 2 --hidden 64 --batch 16" ;;
    gpt | bert | t5) echo "--layers 2 --hidden 64 --heads 4 --seq 16 --batch 8 --vocab 128" ;;
    wresnet) echo "--layers 50 --width 1 --batch 4" ;;
    gat) echo "--layers 2 --hidden 64 --heads 4 --batch 16" ;;
    *) echo "unknown" ;;
    esac
}
# same A B: the two reports agree once source lines (0 for built programs) are dropped
same() {
    sed 's/"line": [0-9]*,//' "$1" >"$1.n"
    sed 's/"line": [0-9]*,//' "$2" >"$2.n"
    cmp -s "$1.n" "$2.n"
}

for p in $("$AUTOSHARD" gen --list | awk 'NR > 1 {print $1}'); do
    # shellcheck disable=SC2046
    as gen "$p" $(small "$p") --train -o "$T/$p.asg"
    [ $rc -eq 0 ] || { ok 1 "$p: gen"; continue; }
    as solve "$T/$p.asg" --mesh 2 -o "$T/$p.json"
    [ $rc -eq 0 ] || { ok 1 "$p: solve"; continue; }
    k=2
    [ "$p" != gat ] || k=1 # a graph without a batch: one microbatch
    for pipe in "" "--pipeline 2 --microbatches $k"; do
        # shellcheck disable=SC2086
        as lower "$T/$p.asg" --plan "$T/$p.json" $pipe -o "$T/$p.prog"
        s=$rc
        as simulate --program "$T/$p.prog" --json
        s=$((s + rc)); cp "$T/out" "$T/a.json"
        # shellcheck disable=SC2086
        as simulate "$T/$p.asg" --plan "$T/$p.json" $pipe --json
        s=$((s + rc)); cp "$T/out" "$T/b.json"
        ok $([ $s -eq 0 ] && same "$T/a.json" "$T/b.json" && echo 0 || echo 1) \
            "$p${pipe:+ ($pipe)}: lower | simulate --program == simulate --plan"
    done
done

# a program whose first op has no inputs (the parser once read a NULL shape list)
printf 'program z devices=1\na: compute dev=0 op=fill attr.shape=[4] attr.value=1.0 attr.dtype=f32 writes=x\nb: compute dev=0 op=relu in=f32[4] reads=x\n' >"$T/z.prog"
as simulate --program "$T/z.prog" --json
ok $([ $rc -eq 0 ] && grep -q '"events": 2,' "$T/out" && echo 0 || echo 1) "a nullary op first in the program"
done_testing
