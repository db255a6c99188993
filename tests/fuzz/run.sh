#!/bin/sh
# run.sh SRCDIR FUZZDIR SECONDS NAME... -- `make fuzz`: run each libFuzzer
# target FUZZDIR/fuzz_NAME for SECONDS (one at a time, one job, niced),
# on a working corpus FUZZDIR/corpus/NAME seeded from SRCDIR/tests/fuzz/corpus/NAME
# and SRCDIR/tests/fuzz/regress/NAME.  Prints one line per target:
#   fuzz NAME: EXECS execs in S s, cov C, ft F, corpus N; ok | CRASH ARTIFACT
# appends the same figures to FUZZDIR/stats.tsv, and exits 1 if any target
# found a crash, a leak or a hang (its input is in FUZZDIR/crashes/).
# Environment: FUZZ_MAX_LEN (default 16384), FUZZ_RSS_MB (2048),
# FUZZ_TIMEOUT (10 s per input), FUZZ_FLAGS (more libFuzzer flags).
set -u
src=$1 dir=$2 secs=$3
shift 3
mkdir -p "$dir/crashes"
status=0
for name in "$@"; do
    bin=$dir/fuzz_$name
    work=$dir/corpus/$name
    log=$dir/$name.log
    mkdir -p "$work"
    seeds="$src/tests/fuzz/corpus/$name"
    [ -d "$src/tests/fuzz/regress/$name" ] && seeds="$seeds $src/tests/fuzz/regress/$name"
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        nice -n 10 "$bin" -max_total_time="$secs" -timeout="${FUZZ_TIMEOUT:-10}" \
        -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -max_len="${FUZZ_MAX_LEN:-16384}" \
        -print_final_stats=1 -artifact_prefix="$dir/crashes/$name-" ${FUZZ_FLAGS:-} \
        "$work" $seeds >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
    if [ $rc -eq 0 ]; then
        result=ok
    else
        status=1
        art=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
        kind=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer|UndefinedBehaviorSanitizer)[^(]*|runtime error:.*|fuzz finding:.*' "$log" | head -1)
        result="CRASH ${art:-?} ($kind)"
    fi
    echo "fuzz $name: ${execs:-0} execs in $secs s, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}; $result"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$name" "$secs" \
        "${execs:-0}" "${cov:-}" "${ft:-}" "$result" >>"$dir/stats.tsv"
done
exit $status
