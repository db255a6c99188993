#!/bin/sh
# program_big.sh -- program files of 1 MB and more are mapped rather than read
# (src/sim/program.c, rd_map_file): the same report as from stdin (read into a
# buffer), also when the file ends exactly at a page boundary (the NUL after
# it is a page of its own), and the same messages for a NUL byte, a bad last
# line and an unterminated last line.
. "${top_srcdir:-.}/tests/cli/lib.sh"

# big.prog: a chain of N compute events over two devices, padded with a comment
# so that the file is exactly SIZE bytes (SIZE a multiple of 4096); TAIL is
# appended without a newline.
mk() { # mk FILE SIZE TAIL
    awk -v size="$2" -v tail="$3" 'BEGIN {
        s = "program big devices=2\n"; printf "%s", s; n = length(s)
        printf "e0: compute dev=0 time=0.001 writes=t0:100\n"
        n += length("e0: compute dev=0 time=0.001 writes=t0:100\n")
        for (i = 1; n < size - 200; i++) {
            l = sprintf("e%d: compute dev=%d time=0.001 reads=t%d writes=t%d\n", i, i % 2, i - 1, i)
            if (i % 2 == 1)
                l = sprintf("s%d: send dev=0->1 tensor=t%d\n", i, i - 1) \
                    sprintf("e%d: compute dev=1 time=0.001 reads=t%d writes=t%d\n", i, i - 1, i)
            else
                l = sprintf("s%d: send dev=1->0 tensor=t%d\n", i, i - 1) \
                    sprintf("e%d: compute dev=0 time=0.001 reads=t%d writes=t%d\n", i, i - 1, i)
            printf "%s", l; n += length(l)
        }
        pad = size - n - length(tail) - 1
        c = "#"; for (j = 1; j < pad; j++) c = c "x"
        printf "%s\n%s", c, tail
    }' >"$1"
}
mk "$T/big.prog" 1048576 ""
sz=$(wc -c <"$T/big.prog")
ok $([ "$sz" -eq 1048576 ] && echo 0 || echo 1) "a 1 MiB program file ($sz bytes, a whole number of pages)"
as simulate --program "$T/big.prog" --json
s=$rc; cp "$T/out" "$T/a.json"
set +e
$VALGRIND_CMD "$AUTOSHARD" simulate --program - --json <"$T/big.prog" >"$T/b.json" 2>"$T/err"
s=$((s + $?))
set -e
ok $([ $s -eq 0 ] && grep -q '"events": [1-9][0-9]*' "$T/a.json" && cmp -s "$T/a.json" "$T/b.json" &&
    echo 0 || echo 1) "mapped file and stdin give the same report"

# the last line (no newline at the end of a file of whole pages) is an event
mk "$T/tail.prog" 1052672 "last: compute dev=0 time=0.5"
sz=$(wc -c <"$T/tail.prog")
ne=$(grep -c '^[a-z0-9]*: ' "$T/tail.prog")
as simulate --program "$T/tail.prog" --json
ok $([ $rc -eq 0 ] && [ $((sz % 4096)) -eq 0 ] && grep -q "\"events\": $ne," "$T/out" &&
    echo 0 || echo 1) "an unterminated last line at a page boundary is an event ($ne events)"

# a bad last line: its line and column
mk "$T/bad.prog" 1052672 "last: compute dev=0 time=x"
n=$(wc -l <"$T/bad.prog")
as simulate --program "$T/bad.prog"
expect_fail 2 "autoshard: $T/bad.prog:$((n + 1)):26: " "a bad unterminated last line: FILE:LINE:COL"
set +e
$VALGRIND_CMD "$AUTOSHARD" simulate --program - <"$T/bad.prog" >/dev/null 2>"$T/err2"
set -e
ok $(sed "s|$T/bad.prog|-|" "$T/err" | cmp -s - "$T/err2" && echo 0 || echo 1) \
    "the same message from stdin"

# a NUL byte deep in a big file
mk "$T/nul.prog" 1048576 ""
printf 'e9x: compute dev=0 time=1\000\n' >>"$T/nul.prog"
n=$(wc -l <"$T/nul.prog")
as simulate --program "$T/nul.prog"
expect_fail 2 "autoshard: $T/nul.prog:$n:26: contains a NUL byte (not a program text)" \
    "a NUL byte in a mapped file"
done_testing
