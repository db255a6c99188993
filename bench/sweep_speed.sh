#!/bin/sh
# sweep_speed.sh -- issue 14 item 9: configurations per second of `autoshard sweep`.
#   1. gpt3-1.3b, global batch 64: every configuration on 8 devices (8) and on 16 devices
#      with meshes of at most 2 axes (11): 19 configurations (target: under 20 s);
#   2. with BIG=1, gpt3-175b over 1024 devices (batch 1536), Megatron's space as
#      bench/megatron_175b.sh sweeps it (TIME_LIMIT per configuration, default 15 s).
# Prints, per sweep, the command, CPU time (user + sys), wall time and max RSS, the
# configurations/s, and where the time went (sums of the JSONL's solve_s, simulate_s
# and wall_s; the rest of wall_s is building the stage problems).
#
#   bench/sweep_speed.sh   (AUTOSHARD=path/to/autoshard, default ./autoshard; JOBS=2 adds -j 2)
#
# Timings on a machine shared with other work are 2-5x slow: compare CPU times.
set -u
A=${AUTOSHARD:-./autoshard}
T=$(mktemp -d "${TMPDIR:-/tmp}/sweepspeed.XXXXXX")
trap 'rm -rf "$T"' EXIT

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

run s8 sweep gpt3-1.3b --devices 8 --batch 64
run s16 sweep gpt3-1.3b --devices 16 --batch 64 --max-axes 2
awk '{u += $1; s += $2; e += $3} END {printf "gpt3-1.3b, 19 configurations: %.1f s CPU, %.1f s wall (target: under 20 s)\n", u + s, e}' "$T/total"
if [ "${BIG:-0}" = 1 ]; then
    run m175 sweep gpt3-175b --devices 1024 --hw a100-dgx --batch 1536 --role data,tensor \
        --tp-max 8 --microbatch-size 1 --recompute full --pipeline 8,16,32,64 \
        --time-limit "${TIME_LIMIT:-15}"
fi
