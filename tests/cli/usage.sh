#!/bin/sh
# usage.sh -- global options, help and unknown commands.
. "${top_srcdir:-.}/tests/cli/lib.sh"

as --version
ok $([ $rc -eq 0 ] && grep -q '^autoshard ' "$T/out" && echo 0 || echo 1) "--version prints the version"
as --help
ok $([ $rc -eq 0 ] && grep -q 'Commands:' "$T/out" && echo 0 || echo 1) "--help lists commands on stdout"
as help
ok $([ $rc -eq 0 ] && grep -q 'Commands:' "$T/out" && echo 0 || echo 1) "help lists commands"
as
ok $([ $rc -eq 2 ] && echo 0 || echo 1) "no command is a usage error (exit 2)"
as frobnicate
expect_fail 2 "unknown command 'frobnicate'" "unknown command is exit 2 with a clear message"
as --bogus
ok $([ $rc -eq 2 ] && echo 0 || echo 1) "unknown global option is exit 2"

# Issue 13 item 17: global options after the command; `autoshard CMD FILE --help`.
H="$top_srcdir/tests/data/hlo/opaque.hlo"
as inspect "$H"
ok $([ $rc -eq 0 ] && grep -q 'warning' "$T/err" && echo 0 || echo 1) "inspect opaque.hlo warns"
as inspect "$H" -q
ok $([ $rc -eq 0 ] && [ ! -s "$T/err" ] && echo 0 || echo 1) "-q after the command silences it"
as inspect --quiet "$H"
ok $([ $rc -eq 0 ] && [ ! -s "$T/err" ] && echo 0 || echo 1) "--quiet after the command too"
as -q inspect "$H"
ok $([ $rc -eq 0 ] && [ ! -s "$T/err" ] && echo 0 || echo 1) "-q before the command as before"
G="$top_srcdir/tests/data/asg/mlp.asg"
as gen mlp-1b --layers 2 --hidden 64 --batch 8 -o "$T/g.asg" -v
ok $([ $rc -eq 0 ] && grep -q 'parameters' "$T/err" && echo 0 || echo 1) "-v after the command: detail on stderr"
as gen mlp-1b --layers 2 --hidden 64 --batch 8 -o "$T/g.asg"
ok $([ $rc -eq 0 ] && [ ! -s "$T/err" ] && echo 0 || echo 1) "without -v: none"
as solve "$G" --help
ok $([ $rc -eq 0 ] && grep -q '^usage: autoshard solve' "$T/out" && echo 0 || echo 1) "solve FILE --help"
as inspect "$G" -h
ok $([ $rc -eq 0 ] && grep -q '^usage: autoshard inspect' "$T/out" && echo 0 || echo 1) "inspect FILE -h"
as solve "$G" --mesh 2 --hw a100-dxg
expect_fail 2 "unknown hardware profile 'a100-dxg' (did you mean 'a100-dgx'?" "--hw: did you mean"
as solve "$G" --mesh 2 --hw h100
expect_fail 2 "(did you mean 'h100-dgx'?" "--hw: a prefix of a profile"
as solve "$G" --mesh 2 --hw zzzzzzzz
expect_fail 2 "unknown hardware profile 'zzzzzzzz' (known: " "--hw: nothing close, no guess"
# simulate: a device out of memory is exit 3 (the report still printed)
as solve "$G" --mesh 2 -o "$T/p.json"
as simulate "$G" --plan "$T/p.json" --capacity 1000
ok $([ $rc -eq 3 ] && grep -q 'OOM' "$T/out" && grep -q '^autoshard: out of memory on 2 of 2 devices (capacity 1000 B)$' "$T/err" && echo 0 || echo 1) \
    "simulate: out of memory is exit 3, report on stdout, one line on stderr"
as simulate "$G" --plan "$T/p.json"
ok $rc "simulate: fits, exit 0"
# sizes in binary units everywhere: solve --top lists peaks in KiB/MiB/GiB
as solve "$G" --mesh 2 --top 2
ok $([ $rc -eq 0 ] && grep -q '^plan 2 .*peak [0-9.]* [KMG]iB per device)$' "$T/out" && echo 0 || echo 1) \
    "solve --top: the second plan's peak in binary units"
# Issue 13 item 5: --strategy-space alpa (before or after the command)
as gen gpt --layers 1 --hidden 64 --heads 4 --seq 16 --batch 8 --train -o "$T/g2.asg"
as solve "$T/g2.asg" --mesh 2x2
d=$(grep '^objective' "$T/out" | awk '{print $2}')
as --strategy-space alpa solve "$T/g2.asg" --mesh 2x2
a=$(grep '^objective' "$T/out" | awk '{print $2}')
ok $([ $rc -eq 0 ] && awk "BEGIN{exit !($a >= $d)}" && echo 0 || echo 1) \
    "alpa's space is a subset: its optimum ($a) is no cheaper than the default's ($d)"
as strategies "$T/g2.asg" --mesh 2x2 --strategy-space alpa
# partial(x,y) (a partial sum over both axes passing through a linear op) splits no dim
ok $([ $rc -eq 0 ] && ! sed 's/partial([xy,]*)//g' "$T/out" | grep -q '(x,y)\|(y,x)' && echo 0 || echo 1) \
    "strategies --strategy-space alpa: no dim over both axes"
as strategies "$T/g2.asg" --mesh 2x2
ok $([ $rc -eq 0 ] && grep -q '(x,y)' "$T/out" && echo 0 || echo 1) "the default space has them"
as solve "$T/g2.asg" --mesh 2x2 --strategy-space megatron
expect_fail 2 "--strategy-space takes default or alpa, got 'megatron'" "--strategy-space: unknown name"
as inspect -- -q
expect_fail 1 "^autoshard: -q: No such file" "after --, -q is an operand (a file name)"
done_testing
