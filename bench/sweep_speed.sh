#!/bin/sh
# sweep_speed.sh -- issue 14 item 9: configurations per second of `autoshard sweep`.
#   1. the sweep: gpt3-1.3b, global batch 64, all ordered factorisations of 8 and
#      16 devices into <= 3 axes, P in {1, 2, 4} (the per-stage device count N / P
#      factorised: 8 -> 8, 2x4, 4x2, 2x2x2; 4 -> 4, 2x2; 2 -> 2; 16 -> 16, 2x8, 8x2, 4x4,
#      2x2x4, 2x4x2, 4x2x2), in one command:
#        sweep gpt3-1.3b --devices 8,16 --batch 64 --pipeline 1,2,4
#      7 configurations on 8 devices (4 + 2 + 1) and 13 on 16 (7 + 4 + 2): 20
#      (target: under 20 s).  K is the sweep's default: 1 for P = 1, 2P else.  With
#      --time-limit TIME_LIMIT (default 5 s per configuration; TIME_LIMIT=0: none):
#      without one, n=16 p=1 mesh 2x4x2 is an exact GLPK solve that was still in the
#      LP relaxation of its whole reduced ILP after 5 min CPU (2026-11-27, killed), as the
#      user's loop had "two runs that died without a result".  The sessions before ran
#      a smaller space without a limit (8 devices, all P: 8; 16 devices, <= 2 axes: 11);
#   2. with BIG=1, gpt3-175b over 1024 devices (batch 1536), Megatron's space as
#      bench/megatron_175b.sh sweeps it (TIME_LIMIT per configuration, default 15 s).
# Prints, per sweep, the command, CPU time (user + sys), wall time and max RSS, the
# configurations/s, and where the time went (sums of the JSONL's solve_s, simulate_s
# and wall_s; the rest of wall_s is building the stage problems), and the slowest lines.
#
#   bench/sweep_speed.sh   (AUTOSHARD=path/to/autoshard, default ./autoshard; JOBS=2 adds -j 2;
#                          KEEP=DIR keeps the JSONL files there)
#
# Timings on a machine shared with other work are 2-5x slow: compare CPU times.
set -u
A=${AUTOSHARD:-./autoshard}
T=$(mktemp -d "${TMPDIR:-/tmp}/sweepspeed.XXXXXX")
trap '[ -n "${KEEP:-}" ] && cp "$T"/*.jsonl "$KEEP"/; rm -rf "$T"' EXIT

run() { # run NAME ARGS...: one sweep, timed
    name=$1; shift
    echo "autoshard $* -q -o $name.jsonl ${JOBS:+-j $JOBS}"
    /usr/bin/time -f "%U %S %e %M" -o "$T/$name.time" "$A" "$@" -q -o "$T/$name.jsonl" \
        ${JOBS:+-j "$JOBS"} >"$T/$name.out" 2>&1
    tail -1 "$T/$name.out"
    read -r u s e m <"$T/$name.time"
    jq -rs --arg u "$u" --arg s "$s" --arg e "$e" --arg m "$m" '.[1:] as $c |
        "  \($c | length) configurations: \($u) s user + \($s) s sys, \($e) s wall, max RSS \(($m | tonumber) / 1024 | floor) MiB; " +
        "\(($c | length) / ($e | tonumber) * 1000 | round / 1000) configurations/s wall\n" +
        "  in the lines: solve \($c | map(.solve_s) | add * 100 | round / 100) s, simulate \($c | map(.simulate_s) | add * 100 | round / 100) s, " +
        "wall \($c | map(.wall_s) | add * 100 | round / 100) s (rest: building the stage problems); " +
        "statuses \($c | group_by(.status) | map("\(.[0].status) \(length)") | join(", "))"' "$T/$name.jsonl"
    echo "$u $s $e" >>"$T/total"
}

run s20 sweep gpt3-1.3b --devices 8,16 --batch 64 --pipeline 1,2,4 --time-limit "${TIME_LIMIT:-5}"
jq -rs '.[1:] | sort_by(-.wall_s) | .[0:5][] | "  \(.config): \(.wall_s * 100 | round / 100) s wall (solve \(.solve_s * 100 | round / 100) s)"' "$T/s20.jsonl"
awk '{printf "gpt3-1.3b, the issue'"'"'s 20 configurations: %.1f s CPU, %.1f s wall (target: under 20 s)\n", $1 + $2, $3}' "$T/total"
if [ "${BIG:-0}" = 1 ]; then
    run m175 sweep gpt3-175b --devices 1024 --hw a100-dgx --batch 1536 --role data,tensor \
        --tp-max 8 --microbatch-size 1 --recompute full --pipeline 8,16,32,64 \
        --time-limit "${TIME_LIMIT:-15}"
fi
