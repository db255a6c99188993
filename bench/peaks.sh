#!/bin/sh
# peaks.sh -- issue 18 item 5, "one memory model": for each preset and
# training-step setting, the peak per device that `solve` reports (per stage
# with --pipeline) against the peak the simulator finds when it runs the
# same plan (`simulate GRAPH --plan P --json`, settings from the plan's
# record), and the difference in %; also the ILP's own rows (the memory rows
# the ILP solved under, before the simulator's check) for comparison.
#
#   bench/peaks.sh [quick|big]  (AUTOSHARD=path/to/autoshard, default ./autoshard)
#
# quick: the small presets only; big: gpt3-1.3b and gpt3-13b only.  Each row is one `solve` and one `simulate`
# (gpt3-13b rows take minutes); run under `nice`.  Prints one row per stage.
set -u
A=${AUTOSHARD:-./autoshard}
T=$(mktemp -d "${TMPDIR:-/tmp}/peaks.XXXXXX")
trap 'rm -rf "$T"' EXIT

# bytes of "58.27 GiB" / "202.06 MiB" / "1.00 KiB"
tobytes() {
    awk -v s="$1" 'BEGIN{n=split(s,a," "); u=a[2]; m=1;
        if(u=="KiB")m=1024; else if(u=="MiB")m=1048576; else if(u=="GiB")m=1073741824;
        else if(u=="TiB")m=1099511627776; printf "%.0f\n", a[1]*m}'
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%+.2f", 100*(a-b)/b; else print "-"}'; }
gib() { awk -v a="$1" 'BEGIN{ printf "%.2f", a/1073741824 }'; }

printf "%-11s %-6s %-5s %-34s %5s %10s %10s %7s %10s %7s %7s\n" model batch mesh settings stage \
    "solve GiB" "sim GiB" "diff %" "rows GiB" "rows %" "solve s"
row() { # row PRESET BATCH MESH [solve options...]
    pre=$1 b=$2 mesh=$3
    shift 3
    g="$T/$pre-$b.asg"
    [ -f "$g" ] || "$A" gen "$pre" --batch "$b" --train -o "$g" || return
    t0=$(date +%s.%N)
    case " $* " in *" --memory "*) mem= ;; *) mem="--memory auto" ;; esac
    # shellcheck disable=SC2086
    if ! "$A" solve "$g" --mesh "$mesh" $mem "$@" -o "$T/p.json" >"$T/s.out" 2>"$T/s.err"; then
        printf "%-11s %-6s %-5s %-34s %s\n" "$pre" "$b" "$mesh" "$*" \
            "solve exit $?: $(head -1 "$T/s.err" | cut -c1-90)"
        return
    fi
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
    if ! "$A" simulate "$g" --plan "$T/p.json" --json >"$T/sim.json" 2>"$T/sim.err"; then
        printf "%-11s %-6s %-5s %-34s %s\n" "$pre" "$b" "$mesh" "$*" \
            "simulate exit: $(head -1 "$T/sim.err" | cut -c1-80)"
        return
    fi
    # the simulator's peak of every device, in device order
    sed -n 's/.*"peak_memory": \([0-9.e+]*\).*/\1/p' "$T/sim.json" >"$T/dev"
    nd=$(wc -l <"$T/dev")
    if grep -q '"stages"' "$T/p.json"; then
        np=$(sed -n 's/.*"stages": \([0-9]*\).*/\1/p' "$T/p.json" | head -1)
        # solve's stage peaks (plan record) and ILP rows (summary lines)
        tr -d ' \n' <"$T/p.json" | sed -n 's/.*"peaks":\[\([^]]*\)\].*/\1/p' | tr ',' '\n' >"$T/sp"
        sed -n 's/^stage [0-9]* .*(ILP rows \([0-9.]* [KMGT]iB\), .*/\1/p' "$T/s.out" >"$T/rows"
    else
        np=1
        sed -n 's/^ "peak": \([0-9.e+]*\),$/\1/p' "$T/p.json" >"$T/sp"
        sed -n 's/^peak memory .*ILP rows \([0-9.]* [KMGT]iB\))$/\1/p' "$T/s.out" >"$T/rows"
    fi
    s=0
    while [ $s -lt "$np" ]; do
        n=$((nd / np))
        sim=$(sed -n "$((s * n + 1)),$((s * n + n))p" "$T/dev" | sort -g | tail -1)
        sp=$(sed -n "$((s + 1))p" "$T/sp")
        r=$(sed -n "$((s + 1))p" "$T/rows")
        rb=$( [ -n "$r" ] && tobytes "$r" || echo 0)
        printf "%-11s %-6s %-5s %-34s %5s %10s %10s %7s %10s %7s %7s\n" "$pre" "$b" "$mesh" "$*" \
            "$s" "$(gib "${sp:-0}")" "$(gib "${sim:-0}")" "$(pct "${sp:-0}" "${sim:-0}")" \
            "$(gib "$rb")" "$(pct "$rb" "${sim:-0}")" "$secs"
        s=$((s + 1))
    done
}

if [ "${1:-}" != big ]; then
row gpt2-small 32 2x4
row gpt2-small 32 2x4 --recompute full
row gpt2-small 32 2x4 --recompute selective
row gpt2-small 32 2x4 --microbatches 4
row gpt2-small 32 2x4 --recompute full --microbatches 4
row gpt2-small 32 2x2 --pipeline 2 --microbatches 4
row gpt2-small 32 2x2 --pipeline 2 --microbatches 4 --recompute full
row gpt2-small 32 2x4 --memory 4GiB --recompute auto
row bert-large 32 2x4
row bert-large 32 2x4 --recompute full --microbatches 2
row bert-large 32 2x2 --pipeline 2 --microbatches 4
row t5-base 32 2x4
row t5-base 32 2x4 --recompute selective
row t5-base 32 2x2 --pipeline 2 --microbatches 4 --schedule gpipe
row wresnet-50 32 2x4 --time-limit 120
row wresnet-50 32 2x4 --microbatches 4 --time-limit 120
fi
[ "${1:-}" = quick ] && exit 0
row gpt3-1.3b 64 2x4
row gpt3-1.3b 64 2x4 --recompute full --microbatches 4
row gpt3-1.3b 64 2x4 --recompute auto
row gpt3-1.3b 64 2x2 --pipeline 2 --microbatches 8
row gpt3-1.3b 64 4x2 --recompute selective
row gpt3-13b 16 2x8
row gpt3-13b 16 2x4 --pipeline 2 --microbatches 4 --recompute full
