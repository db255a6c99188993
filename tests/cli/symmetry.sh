#!/bin/sh
# symmetry.sh -- devices whose programs are identical are simulated once
# (docs/sim.md "Symmetry"): on 2-D meshes (data x tensor parallel), with
# and without pipelines, the reduced simulation reports exactly the time
# and per-device figures of the full one (--no-symmetry); lowered programs
# carry 'mirror' lines that read back; a bad mirror is an input error.
. "${top_srcdir:-.}/tests/cli/lib.sh"

G="$T/g.asg"
as gen gpt2-small --layers 2 --hidden 64 --heads 4 --seq 16 --batch 8 --vocab 128 --train -o "$G"
ok $rc "gen"
as solve "$G" --mesh 2x2 -o "$T/p.json"
ok $rc "solve on a 2x2 mesh"

# same A B: time and every per-device figure agree to 1e-12 (relative)
py='
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
w = abs(a["time"] - b["time"]) / b["time"]
for x, y in zip(a["per_device"], b["per_device"]):
    for k in ("compute", "comm", "idle", "resident", "peak_memory", "peak_time", "oom"):
        d = abs(x[k] - y[k]) / max(abs(y[k]), 1e-300)
        w = max(w, d)
ok = w <= 1e-12 and len(a["per_device"]) == len(b["per_device"]) == a["devices"]
ok = ok and a["explicit_devices"] < b["explicit_devices"] == b["devices"]
sys.exit(0 if ok else 1)
'
for pipe in "" "--pipeline 2 --microbatches 2" "--pipeline 3 --microbatches 2 --schedule gpipe"; do
    # shellcheck disable=SC2086
    as simulate "$G" --plan "$T/p.json" $pipe --json
    s=$rc; cp "$T/out" "$T/a.json"
    # shellcheck disable=SC2086
    as simulate "$G" --plan "$T/p.json" $pipe --json --no-symmetry
    s=$((s + rc)); cp "$T/out" "$T/b.json"
    [ "$pipe" != "--pipeline 2 --microbatches 2" ] || cp "$T/out" "$T/b2.json"
    if command -v python3 >/dev/null 2>&1; then
        [ $s -eq 0 ] && python3 -c "$py" "$T/a.json" "$T/b.json"
        ok $? "2x2${pipe:+ $pipe}: reduced == full (--no-symmetry)"
    else
        ok $s "2x2${pipe:+ $pipe}: reduced and full run"
    fi
done

as simulate "$G" --plan "$T/p.json" --pipeline 2 --microbatches 2
ok $(grep -q "symmetry *2 of 8 devices simulated explicitly" "$T/out" && echo 0 || echo 1) \
    "the report says how many devices were simulated"
as lower "$G" --plan "$T/p.json" --pipeline 2 --microbatches 2 -o "$T/p.prog"
ok $(grep -q "^mirror 1-3 as 0$" "$T/p.prog" && grep -q "^mirror 5-7 as 4$" "$T/p.prog" &&
    echo 0 || echo 1) "lowered program has mirror lines"
as simulate --program "$T/p.prog" --json
cp "$T/out" "$T/c.json"
if command -v python3 >/dev/null 2>&1; then
    s=0; python3 -c "$py" "$T/c.json" "$T/b2.json" || s=1
    ok $s "the text with mirrors simulates as the full program"
fi
as lower "$G" --plan "$T/p.json" --no-symmetry -o "$T/f.prog"
ok $(grep -q "^mirror" "$T/f.prog" && echo 1 || echo 0) "--no-symmetry: no mirror lines"

printf 'program m devices=4\nmirror 1-3 as 0\na: compute dev=1 time=1\n' >"$T/bad.prog"
as simulate --program "$T/bad.prog"
expect_fail 2 "bad.prog:3:.*device 1 mirrors device 0" "an event on a mirror is named"
printf 'program m devices=4\nmirror 1 as 0\nmirror 2 as 1\n' >"$T/bad2.prog"
as simulate --program "$T/bad2.prog"
expect_fail 2 "bad2.prog:3:.*mirrors device 0" "a mirror cannot represent another"
printf 'program m devices=4\nmirror 1 0\n' >"$T/bad3.prog"
as simulate --program "$T/bad3.prog"
expect_fail 2 "bad3.prog:2:1: expected 'mirror DEVICES as DEVICE'" "a malformed mirror line"
printf 'program m devices=2\nmirror 1 as 0\nr: all-reduce group=0,1 bytes=1000\n' >"$T/ok.prog"
as simulate --program "$T/ok.prog" --json
ok $([ $rc -eq 0 ] && grep -q '"explicit_devices": 1' "$T/out" && echo 0 || echo 1) \
    "a collective over a representative and its mirror"
done_testing
