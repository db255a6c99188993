#!/bin/sh
# bad_inputs_oom.sh -- resource failures (issue 17 item 5): every command
# run under a small `ulimit -v` (from just above what the process needs to
# start to 64 MiB more) either succeeds as without the limit or exits 1 with
# one line "autoshard: ..." -- never abort(), a signal, several lines or a
# stray output file.  Skipped under valgrind and AddressSanitizer, which
# need far more address space than the limits allow.
. "${top_srcdir:-.}/tests/cli/lib.sh"

[ -z "$VALGRIND_CMD" ] || skip_all "under valgrind"
if ! (ulimit -v 1000000 && "$AUTOSHARD" --version) >/dev/null 2>&1; then
    skip_all "the binary needs more than 1 GB of address space to start (a sanitizer build)"
fi

D="$top_srcdir/tests/data"
G="$D/asg/mlp.asg"
mkdir "$T/o"
as gen gpt2-small --layers 1 --train -o "$T/g.asg"
ok $rc "a one-layer GPT-2 training graph"
as solve "$T/g.asg" --mesh 2x2 -o "$T/g.plan"
ok $rc "its plan"
as lower "$T/g.asg" --plan "$T/g.plan" -o "$T/g.prog"
ok $rc "its event program"

# The smallest address-space limit (KiB, to 64 KiB) under which `--version` works.
runs() { (ulimit -v "$1" && "$AUTOSHARD" --version) >/dev/null 2>&1; }
lo=1024
hi=1048576
while [ $((hi - lo)) -gt 64 ]; do
    mid=$(((lo + hi) / 2))
    if runs $mid 2>/dev/null; then hi=$mid; else lo=$mid; fi
done
base=$hi
echo "# autoshard --version runs from ulimit -v $base"

# limited DESCRIPTION ARGS...: autoshard ARGS under ulimit -v base+128 KiB .. base+64 MiB:
# each run exits 0, or 1 with one line "autoshard: ..." and no file in $T/o.
limited() {
    local desc=$1 s=0 x r fails=0
    shift
    for x in 128 512 1024 2048 4096 8192 16384 32768 65536; do
        rm -rf "$T/o" && mkdir "$T/o"
        set +e
        (ulimit -v $((base + x)) && exec "$AUTOSHARD" "$@") >"$T/out" 2>"$T/err"
        r=$?
        set -e
        case $r in
        0) ;;
        1)
            fails=$((fails + 1))
            if [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -q '^autoshard: ' "$T/err" ||
                [ -n "$(ls -A "$T/o")" ]; then
                s=1
                echo "# +${x} KiB: exit 1 but stderr or $T/o is wrong: $(ls -A "$T/o" | tr '\n' ' ')"
                head -3 "$T/err" | sed 's/^/#   /'
            fi
            ;;
        *)
            s=1
            echo "# +${x} KiB: exit $r"
            head -3 "$T/err" | sed 's/^/#   /'
            ;;
        esac
    done
    ok $s "$desc: exit 0 or one line and exit 1 under 9 memory limits ($fails ran out)"
}

limited "inspect" inspect "$T/g.asg"
limited "inspect HLO" inspect "$D/hlo/mlp_train.hlo"
limited "convert" convert "$T/g.asg" -o "$T/o/g.asg"
limited "gen" gen gpt2-small --train -o "$T/o/g.asg"
limited "hw mesh" hw mesh 2x4
limited "rules" rules
limited "strategies" strategies "$T/g.asg" --mesh 2x2
limited "solve a graph" solve "$T/g.asg" --mesh 2x2 -o "$T/o/p.json"
limited "solve a cost graph with cbc" solve --costgraph "$D/costgraph/tiny.json" --solver cbc \
    -o "$T/o/p.json"
limited "solve --top 3" solve "$G" --mesh 2x2 --top 3 --memory 2MiB -o "$T/o/p.json"
limited "export" export "$T/g.asg" --mesh 2x2 -o "$T/o/m.mps"
limited "export a cost graph" export --costgraph "$D/costgraph/tiny.json" --format lp -o "$T/o/m.lp"
limited "lower" lower "$T/g.asg" --plan "$T/g.plan" -o "$T/o/p.prog"
limited "simulate a program" simulate --program "$T/g.prog" --json
limited "simulate a plan" simulate "$T/g.asg" --plan "$T/g.plan" --pipeline 2 --microbatches 4 \
    --trace "$T/o/t.json"
limited "rank" rank "$T/g.asg" --plans "$T/g.plan" "$T/g.plan"
done_testing
