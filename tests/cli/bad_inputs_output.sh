#!/bin/sh
# bad_inputs_output.sh -- outputs (issue 17 item 4): a `solve -o`, `export -o`,
# `convert -o` or `gen -o` killed with SIGKILL at any moment leaves either
# nothing (or the old file, untouched) or the complete output under the
# output's name, and no temporary file beside it (but a complete copy when the
# kill falls between linkat and rename: util.c's DESIGN); a failing run never
# replaces an existing output.
. "${top_srcdir:-.}/tests/cli/lib.sh"

D="$top_srcdir/tests/data"
mkdir "$T/in" "$T/o"
as gen gpt2-small --layers 2 --train -o "$T/in/g.asg"
ok $rc "a two-layer GPT-2 training graph to work on"

# killed NAME REF DESCRIPTION ARGS...: run autoshard ARGS (writing $T/o/NAME) several
# times, each killed with SIGKILL after a longer delay (from 10 ms: gen is fast), starting with an
# old $T/o/NAME; after each kill $T/o holds only NAME, which is either the
# old text or identical to REF; at least one kill hit a running process.
killed() {
    local name=$1 ref=$2 desc=$3 s=0 hits=0 pid d
    shift 3
    for d in 0.01 0.03 0.05 0.15 0.3 0.5 0.8 1.2 2; do
        rm -rf "$T/o" && mkdir "$T/o"
        echo OLD >"$T/o/$name"
        $VALGRIND_CMD "$AUTOSHARD" "$@" >/dev/null 2>&1 &
        pid=$!
        sleep $d
        if kill -9 $pid 2>/dev/null; then hits=$((hits + 1)); fi
        wait $pid 2>/dev/null || true
        # a kill between linkat and rename (util.c link_unnamed: Linux has no linkat that
        # replaces a file) leaves a complete copy under a temporary name: allowed only so
        leftover=$(ls -A "$T/o" | grep -v -x -F "$name" || true)
        if [ -n "$leftover" ] && [ "$(echo "$leftover" | wc -l)" = 1 ] &&
            case $leftover in "$name".tmp.*) true ;; *) false ;; esac &&
            cmp -s "$T/o/$leftover" "$ref"; then
            echo "# killed after ${d}s between link and rename: $leftover is the complete output"
            rm -f "$T/o/$leftover"
        fi
        if [ "$(ls -A "$T/o")" != "$name" ]; then
            echo "# killed after ${d}s: $T/o holds: $(ls -A "$T/o" | tr '\n' ' ')"
            s=1
        elif [ "$(cat "$T/o/$name")" != OLD ] && ! cmp -s "$T/o/$name" "$ref"; then
            echo "# killed after ${d}s: $name is neither the old file nor the complete output"
            s=1
        fi
    done
    [ $hits -gt 0 ] || { echo "# every run ended before its kill"; s=1; }
    ok $s "$desc killed at 9 moments: old or complete output, no partial or other temporary file ($hits kills)"
}

as export "$T/in/g.asg" --mesh 2x4 -o "$T/in/ref.mps"
ok $rc "export: the reference MPS"
killed g.mps "$T/in/ref.mps" "export -o" export "$T/in/g.asg" --mesh 2x4 -o "$T/o/g.mps"
as solve "$T/in/g.asg" --mesh 2x4 -o "$T/in/ref.json"
ok $rc "solve: the reference plan"
killed g.json "$T/in/ref.json" "solve -o" solve "$T/in/g.asg" --mesh 2x4 -o "$T/o/g.json"
as gen gpt3-1.3b --train -o "$T/in/ref.asg"
ok $rc "gen: the reference graph"
killed g.asg "$T/in/ref.asg" "gen -o" gen gpt3-1.3b --train -o "$T/o/g.asg"

# A failing run leaves an existing output as it was.
# same NAME CODE DESCRIPTION ARGS...: with an old $T/o/NAME, autoshard ARGS exits CODE
# and $T/o holds only the untouched NAME.
same() {
    local name=$1 code=$2 desc=$3 s=0
    shift 3
    rm -rf "$T/o" && mkdir "$T/o"
    echo OLD >"$T/o/$name"
    as "$@"
    [ "$rc" -eq "$code" ] || s=1
    [ "$(ls -A "$T/o")" = "$name" ] && [ "$(cat "$T/o/$name")" = OLD ] || s=1
    [ $s -eq 0 ] || { echo "# exit $rc; $T/o: $(ls -A "$T/o" | tr '\n' ' ')"; head -2 "$T/err" | sed 's/^/#   /'; }
    ok $s "$desc: exit $code, the old output stays"
}
printf 'graph g\ninput x : f32[2]\nh = relu(\n' >"$T/in/bad.asg"
same p.json 2 "solve of a bad graph" solve "$T/in/bad.asg" --mesh 2 -o "$T/o/p.json"
same p.json 2 "solve with a bad mesh" solve "$T/in/g.asg" --mesh 2x -o "$T/o/p.json"
same p.json 3 "solve with no plan under the budget" solve "$T/in/g.asg" --mesh 2x4 --memory 1 \
    -o "$T/o/p.json"
same p.json 3 "solve of a cost graph with no plan under the budget" \
    solve --costgraph "$D/costgraph/tiny.json" --memory 1 -o "$T/o/p.json"
same p.json 2 "solve with a bad solution file" solve --costgraph "$D/costgraph/tiny.json" --no-reduce \
    --solution "$D/costgraph/bad_sol_garbage.txt" -o "$T/o/p.json"
same m.mps 2 "export of a bad cost graph" export --costgraph "$D/costgraph/bad_trunc.json" -o "$T/o/m.mps"
same m.mps 2 "export with a bad memory" export "$T/in/g.asg" --mesh 2 --memory -1 -o "$T/o/m.mps"
same g.asg 2 "convert of a bad graph" convert "$T/in/bad.asg" -o "$T/o/g.asg"
same g.asg 2 "gen with a bad option" gen gpt2-small --layers 0 -o "$T/o/g.asg"
same p.prog 2 "lower with a plan for another graph" lower "$D/asg/shapes.asg" --plan "$T/in/ref.json" \
    -o "$T/o/p.prog"
done_testing
