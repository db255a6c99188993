#!/bin/sh
# layouts.sh -- `solve --top K` returns K distinct layouts: plans that differ only by a
# permutation of interchangeable mesh axes, or by a zero-cost tie, count as one
# (issue 14 item 7; docs/ilp.md "k-best plans").
. "${top_srcdir:-.}/tests/cli/lib.sh"

cp "$top_srcdir/tests/data/asg/mlp2_adam.asg" "$T/mlp.asg"

# on 2x2 (one node: x and y are interchangeable) the cheapest assignments are the
# optimum, its x<->y mirror and zero-cost variants of both
as solve "$T/mlp.asg" --mesh 2x2 --top 4 -o "$T/top.json"
ok $([ $rc -eq 0 ] && [ "$(jq length "$T/top.json")" -eq 4 ] && echo 0 || echo 1) "4 plans"
ok $(grep -q '^layouts *[1-9][0-9]* more plans cut off' "$T/out" && echo 0 || echo 1) \
    "mirrored and tied plans were cut off (and counted)"
# objectives strictly increase: no two plans tie
ok $(jq -r '.[].objective' "$T/top.json" |
     awk 'NR > 1 && !($1 > prev * (1 + 1e-9)) { bad = 1 } { prev = $1 } END { exit bad }' &&
     echo 0 || echo 1) "no two plans cost the same"
# no plan is another's mirror: every tensor's spec with x and y swapped
jq -r '.[] | [.tensors[].spec] | join(" ")' "$T/top.json" >"$T/specs"
tr xy yx <"$T/specs" >"$T/mirror"
ok $([ "$(sort -u "$T/specs" | wc -l)" -eq 4 ] &&
     awk 'NR == FNR { s[FNR] = $0; next } { for (i in s) if (i != FNR && s[i] == $0) bad = 1 }
          END { exit bad }' "$T/specs" "$T/mirror" && echo 0 || echo 1) \
    "no plan is the x<->y mirror of another"
# the best layout is still the optimum of --top 1
as solve "$T/mlp.asg" --mesh 2x2 -o "$T/one.json"
ok $([ "$(jq .objective "$T/one.json")" = "$(jq '.[0].objective' "$T/top.json")" ] &&
     echo 0 || echo 1) "the first layout is the optimum"
# rank reads the array and finds 4 distinct objectives
as rank "$T/mlp.asg" --plans "$T/top.json" --json
ok $([ $rc -eq 0 ] && [ "$(jq '.plans | length' "$T/out")" -eq 4 ] && echo 0 || echo 1) \
    "rank reads the 4 layouts"
done_testing
