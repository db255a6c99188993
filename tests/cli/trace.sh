#!/bin/sh
# trace.sh -- Chrome traces (issue 13 item 18): events of one thread never
# overlap after rounding (whole nanoseconds), pipeline event names carry
# the microbatch, sends have flow arrows, and each device has a memory
# counter track; mirrored devices share their representative's process.
. "${top_srcdir:-.}/tests/cli/lib.sh"
D="${top_srcdir:-.}/tests/data/sim"

# thirds of a microsecond: rounding start and duration apart would overlap
{
    echo "program r devices=2"
    i=0
    while [ $i -lt 30 ]; do
        echo "c$i: compute dev=0 time=3.33333333333e-7 writes=t$i:$((i + 1))"
        i=$((i + 1))
    done
    echo "s: send dev=0->1 tensor=t29 bytes=1000 time=1.11111111e-7"
} >"$T/r.prog"
as simulate --program "$T/r.prog" --trace "$T/r.json"
ok $rc "trace of a program with sub-nanosecond times"
as simulate "$D/sq.asg" --plan "$D/sq_dp.plan.json" --pipeline 2 --microbatches 4 --trace "$T/p.json"
ok $rc "trace of a lowered pipeline"

if command -v python3 >/dev/null 2>&1; then
    py='
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
threads = {}
for e in ev:
    if e["ph"] == "X":
        ts = round(e["ts"] * 1000); dur = round(e["dur"] * 1000)
        assert abs(e["ts"] * 1000 - ts) < 1e-3 and abs(e["dur"] * 1000 - dur) < 1e-3, e
        threads.setdefault((e["pid"], e["tid"]), []).append((ts, dur))
for l in threads.values():
    l.sort()
    for a, b in zip(l, l[1:]):
        assert a[0] + a[1] <= b[0], (a, b)
ph = [e["ph"] for e in ev]
assert ph.count("s") == ph.count("f") == sum(1 for e in ev if e["ph"] == "X" and e["cat"] == "send") // 2 > 0
flows = {e["id"]: e for e in ev if e["ph"] == "s"}
assert all(e["id"] in flows and flows[e["id"]]["pid"] != e["pid"] for e in ev if e["ph"] == "f")
mem = [e for e in ev if e["ph"] == "C" and e["name"] == "memory"]
assert mem and all("bytes" in e["args"] for e in mem)
if len(sys.argv) > 2:
    names = [e["name"] for e in ev if e["ph"] == "X" and e["cat"] == "compute"]
    assert any(n.endswith("/m3") for n in names) and "F1.3" in names, names[:5]
    procs = [e["args"]["name"] for e in ev if e["name"] == "process_name"]
    assert procs == ["device 0 (and 1 mirrors)", "device 2 (and 1 mirrors)"], procs
    peak = max(e["args"]["bytes"] for e in mem if e["pid"] == 0)
    assert abs(peak - float(sys.argv[2])) <= 1e-9 * peak, (peak, sys.argv[2])
'
    s=0; python3 -c "$py" "$T/r.json" || s=1
    ok $s "no overlap after rounding; flow arrows for sends; memory counter track"
    as simulate "$D/sq.asg" --plan "$D/sq_dp.plan.json" --pipeline 2 --microbatches 4 --json
    peak=$(sed -n 's/.*"peak_memory": \([0-9.e+]*\).*/\1/p' "$T/out" | head -1)
    s=0; python3 -c "$py" "$T/p.json" "$peak" || s=1
    ok $s "pipeline trace: microbatch in names, mirrors, memory counter peaks at the reported peak"
fi
done_testing
