#!/bin/sh
# zero_stages.sh -- issue 14 item 2: ZeRO stages side by side on one model and mesh.
# For each --zero Z: solve CPU seconds (user+sys) and max RSS, objective, the
# simulated iteration time with and without overlap (the objective is the latter
# exactly), resident bytes and peak per device (simulated), the ILP's rows.
#
#   bench/zero_stages.sh [PRESET BATCH MESH ROLES [STAGES]]
#   default: gpt3-13b 16 dp=2,tp=8 dp=data,tp=tensor "1 2 3"  (each solve takes seconds)
#   AUTOSHARD=path/to/autoshard (default ./autoshard); run under `nice`.
set -u
A=${AUTOSHARD:-./autoshard}
pre=${1:-gpt3-13b} b=${2:-16} mesh=${3:-dp=2,tp=8} roles=${4:-dp=data,tp=tensor}
stages=${5:-1 2 3}
T=$(mktemp -d "${TMPDIR:-/tmp}/zero.XXXXXX")
trap 'rm -rf "$T"' EXIT

"$A" gen "$pre" --batch "$b" --train -o "$T/g.asg" || exit 1
gib() { awk -v a="$1" 'BEGIN{ printf "%.2f", a/1073741824 }'; }
printf "%s batch %s on %s, --role %s --memory auto\n" "$pre" "$b" "$mesh" "$roles"
printf "%-5s %8s %8s %12s %12s %12s %10s %10s %10s\n" zero "solve s" "RSS MB" objective \
    "sim s" "serial s" "res GiB" "peak GiB" "rows GiB"
for z in $stages; do
    if ! /usr/bin/time -f "%U %S %M" -o "$T/time" "$A" solve "$T/g.asg" --mesh "$mesh" \
        --role "$roles" --zero "$z" --memory auto -o "$T/p$z.json" >"$T/s.out" 2>"$T/s.err"; then
        printf "%-5s solve failed: %s\n" "$z" "$(head -1 "$T/s.err")"
        continue
    fi
    cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$T/time")
    rss=$(awk '{ printf "%.0f", $3 / 1024 }' "$T/time")
    rows=$(sed -n 's/.*ILP rows \([0-9.]*\) GiB.*/\1/p' "$T/s.out")
    "$A" simulate "$T/g.asg" --plan "$T/p$z.json" --json >"$T/sim.json" || continue
    "$A" simulate "$T/g.asg" --plan "$T/p$z.json" --json --no-overlap >"$T/ser.json" || continue
    printf "%-5s %8s %8s %12.6g %12.6g %12.6g %10s %10s %10s\n" "$z" "$cpu" "$rss" \
        "$(jq .objective "$T/p$z.json")" "$(jq .time "$T/sim.json")" "$(jq .time "$T/ser.json")" \
        "$(gib "$(jq '.per_device[0].resident' "$T/sim.json")")" \
        "$(gib "$(jq '.per_device[0].peak_memory' "$T/sim.json")")" "${rows:--}"
done
