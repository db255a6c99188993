#!/bin/sh
# rules.sh -- `autoshard rules`: text and JSON output, one op or all,
# unknown ops, bad options, and the rule cache file.
. "${top_srcdir:-.}/tests/cli/lib.sh"

as rules matmul --rules-cache off
ok $(set +e; [ $rc -eq 0 ] && grep -q '^matmul  f32\[6,12\] f32\[12,18\]' "$T/out"; echo $?) \
    "rules matmul prints the example signature"
ok $(set +e; [ "$(grep -c '^  [0-9]:' "$T/out")" -eq 3 ]; echo $?) "matmul has three rules"
ok $(set +e; grep -q '1: in0:1 in1:0 .*-> sum' "$T/out"; echo $?) "matmul rule 1 splits k and sums"
as rules conv2d --rules-cache off
ok $(set +e; [ $rc -eq 0 ] && grep -q 'in0:2 in1:- .*-> halo(2)' "$T/out"; echo $?) \
    "conv2d: spatial split is a halo gather"
as rules opaque --rules-cache off
ok $(set +e; [ $rc -eq 0 ] && grep -q 'replicate only: opaque op' "$T/out"; echo $?) \
    "opaque ops are replicate only"
as rules reshape --json --rules-cache off
ok $(set +e; [ $rc -eq 0 ] && grep -q '"source": "analytic"' "$T/out" && \
     grep -q '"combine": \[' "$T/out"; echo $?) "--json for one op"
as rules --json --rules-cache off
ok $(set +e; [ $rc -eq 0 ] && [ "$(grep -c '"op":' "$T/out")" -ge 100 ]; echo $?) \
    "--json for every op type"
as rules --rules-cache off
ok $(set +e; [ $rc -eq 0 ] && grep -q '^softmax ' "$T/out" && grep -q '^adam_update ' "$T/out"; echo $?) \
    "rules lists every op type"
as rules matmull
expect_fail 2 "unknown op type 'matmull' (did you mean: matmul)" "unknown op: did-you-mean, exit 2"
# Usage errors: message, usage line and hint on stderr, exit 2.
as rules matmul softmax
ok $(set +e; [ $rc -eq 2 ] && grep -q "^autoshard: at most one op type" "$T/err" && \
     grep -q '^usage: autoshard rules' "$T/err"; echo $?) "two op names are a usage error"
as rules --bogus
ok $(set +e; [ $rc -eq 2 ] && grep -q "unknown or incomplete option '--bogus'" "$T/err"; \
     echo $?) "unknown option is exit 2"
as rules --help
ok $(set +e; [ $rc -eq 0 ] && grep -q 'usage: autoshard rules' "$T/out"; echo $?) "--help on stdout"

# The cache file: written on discovery, reused, rebuilt when corrupt.
as rules matmul --rules-cache "$T/r.cache"
ok $(set +e; [ $rc -eq 0 ] && head -1 "$T/r.cache" | grep -q '^autoshard-rules-cache 1 '; echo $?) \
    "discovery writes a versioned cache file"
cp "$T/out" "$T/first"
cp "$T/r.cache" "$T/first.cache"
as -v rules matmul --rules-cache "$T/r.cache"
ok $(set +e; cmp -s "$T/out" "$T/first" && grep -q '1 from disk' "$T/err"; echo $?) \
    "second run reads the cache and prints the same"
sed '2s/:0$/:1/' "$T/r.cache" >"$T/bad" && cp "$T/bad" "$T/r.cache"
ok $(set +e; ! cmp -s "$T/bad" "$T/first.cache"; echo $?) "cache file corrupted for the test"
as -v rules matmul --rules-cache "$T/r.cache"
ok $(set +e; [ $rc -eq 0 ] && cmp -s "$T/out" "$T/first" && grep -q 'corrupt' "$T/err"; echo $?) \
    "a corrupt cache is reported at -v and rebuilt"
# Issue 13 item 17: the cache is keyed by the executable's content, not its mtime: a copy of
# the binary with another mtime reads the cache the original wrote.
cp "$AUTOSHARD" "$T/copy"
"$T/copy" rules relu --rules-cache "$T/c.cache" >/dev/null 2>&1
touch -d '2001-01-01 00:00' "$T/copy"
set +e; "$T/copy" -v rules relu --rules-cache "$T/c.cache" >/dev/null 2>"$T/err"; set -e
ok $(set +e; grep -q '1 from disk' "$T/err" && ! grep -q 'stale' "$T/err"; echo $?) \
    "a copied, touched binary keeps the cache (keyed by content)"
AUTOSHARD_RULES_CACHE="$T/env.cache" as rules add
ok $(set +e; [ $rc -eq 0 ] && [ -s "$T/env.cache" ]; echo $?) "AUTOSHARD_RULES_CACHE names the file"
done_testing
