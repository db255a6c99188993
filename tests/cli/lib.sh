# lib.sh -- shared setup for CLI tests (sourced): TAP helpers, a temp dir,
# and the autoshard binary under test (optionally under valgrind).
set -u
export LC_ALL=C
: "${AUTOSHARD:=$(pwd)/autoshard}"
: "${top_srcdir:=$(pwd)}"
: "${VALGRIND_CMD:=}"
T=$(mktemp -d "${TMPDIR:-/tmp}/autoshard-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
tap_n=0
tap_fail=0

# as ARGS...: run autoshard, stdout to $T/out, stderr to $T/err, status in $rc.
as() {
    set +e
    $VALGRIND_CMD "$AUTOSHARD" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    set -e
}
ok() { # ok COND-STATUS DESCRIPTION
    tap_n=$((tap_n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"; else
        echo "not ok $tap_n - $2"; tap_fail=$((tap_fail + 1))
        if [ -s "$T/err" ]; then sed 's/^/# stderr: /' "$T/err" | head -5; fi
    fi
}
check() { # check DESCRIPTION CMD...: ok if CMD succeeds
    local d=$1; shift
    set +e; "$@" >/dev/null 2>&1; local s=$?; set -e
    ok $s "$d"
}
# expect_fail CODE PATTERN DESCRIPTION: last `as` exited CODE with one stderr line matching PATTERN.
expect_fail() {
    local s=0
    [ "$rc" -eq "$1" ] || s=1
    grep -q -- "$2" "$T/err" || s=1
    [ "$(grep -c . "$T/err")" -le 2 ] || s=1
    if [ $s -ne 0 ]; then echo "# exit $rc, stderr:"; head -3 "$T/err" | sed 's/^/#   /'; fi
    ok $s "$3"
}
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
done_testing() { echo "1..$tap_n"; [ $tap_fail -eq 0 ]; }
set -e
