#!/bin/sh
# simulate.sh -- `autoshard simulate --program`: reports, JSON, traces,
# swaps, overlap, deadlocks and malformed programs.
. "${top_srcdir:-.}/tests/cli/lib.sh"
D="$top_srcdir/tests/data/sim"

as simulate --program "$D/demo.prog"
ok $(( rc != 0 )) "demo program simulates"
grep -q '^iteration time' "$T/out"; ok $? "text report has the iteration time"
grep -q '^critical path: 4 events' "$T/out"; ok $? "text report has the critical path"
grep -q 'samples/s' "$T/out"; ok $? "throughput from the header's batch"

as simulate --program "$D/swap_a.prog" --no-overlap --json
grep -q '"time": 4.5,' "$T/out"; ok $? "send before compute: 4.5 s"
as simulate --program "$D/swap_b.prog" --no-overlap --json
grep -q '"time": 3.5,' "$T/out"; ok $? "swapped lines: 3.5 s"
as simulate --program "$D/swap_a.prog" --json
grep -q '"time": 3.0,' "$T/out"; ok $? "with overlap the order does not matter: 3 s"

as simulate --program "$D/overlap.prog" --json
grep -q '"time": 2.0,' "$T/out"; ok $? "overlap: 2 s"
as simulate --program "$D/overlap.prog" --json --no-overlap
grep -q '"time": 2.5,' "$T/out"; ok $? "--no-overlap: 2.5 s"

as simulate --program "$D/demo.prog" --trace "$T/trace.json"
ok $rc "--trace runs"
grep -q '"traceEvents"' "$T/trace.json" && grep -q '"ph":"X"' "$T/trace.json"
ok $? "trace has complete events"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/trace.json"
    ok $? "trace is valid JSON"
fi
ls "$T" | grep -q '\.tmp\.' && s=1 || s=0
ok $s "no temporary file left behind"

as simulate --program "$D/demo.prog" --print-program
cp "$T/out" "$T/p1.prog"
as simulate --program "$T/p1.prog" --print-program
cmp -s "$T/out" "$T/p1.prog"; ok $? "print -> read -> print is identical"

as simulate --program "$D/deadlock.prog"
expect_fail 2 "deadlock: 4 of 4 events can never start" "deadlock detected"
grep -q "line 3 'e1'" "$T/err"; ok $? "deadlock names the lines"
as simulate --program "$D/bad_device.prog"
expect_fail 2 "bad_device.prog:2:17: unknown device 3" "unknown device"
as simulate --program "$D/bad_number.prog"
expect_fail 2 "bad_number.prog:2:24: bad number '1e-3x' for 'time'" "bad number"
as simulate --program "$D/truncated.prog"
expect_fail 2 "truncated.prog:3:32: missing value for 'bytes'" "truncated line"
as simulate --program "$D/garbage.prog"
expect_fail 2 "garbage.prog:2:1: unknown statement '@@@'" "garbage"
as simulate --program "$D/unproduced.prog"
expect_fail 2 "unproduced.prog:2:32: tensor 'ghost' on device 0 is never produced" "unproduced tensor"
as simulate --program "$T/missing.prog"
ok $(( rc != 1 )) "missing file: exit 1"
as simulate
[ "$rc" -eq 2 ] && grep -q "give --program FILE, or GRAPH and --plan PLAN" "$T/err"; ok $? "no --program or plan: usage error"
as simulate --program "$D/demo.prog" --cost-model nope
expect_fail 2 "unknown cost model 'nope'" "unknown cost model"
done_testing
