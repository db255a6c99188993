#!/bin/sh
# docs.sh -- issue 13 item 17: the docs point only to files in the repository, and the man
# page lists every command's options, the environment variables and the exit codes.
. "${top_srcdir:-.}/tests/cli/lib.sh"
cd "$top_srcdir"

# Paths named in README.md, docs/*.md and the man page exist.  bench/NAME and
# tests/fuzz/replay_NAME are programs built from NAME.c; FILE.[ch] is FILE.c and FILE.h;
# NAME is a placeholder; a file of another project is named with its owner ("NCCL's src/...").
s=0
grep -ohE "([A-Za-z]+'s )?\`?(src|docs|tests|bench|instances|\.ci)/[][A-Za-z0-9_./+*{}<>-]+" \
    README.md docs/*.md docs/autoshard.1 | sed 's/^`//; s/[.,)]*$//' | sort -u >"$T/refs"
while read -r ref; do
    case "$ref" in *"'s "*) continue ;; esac
    p=${ref#\`}
    case "$p" in *'[ch]') ;; *']') p=${p%]} ;; esac
    case "$p" in *NAME* | *'*'* | *'{'* | *'<'*) continue ;; esac  # placeholders and globs
    case "$p" in
    *'.[ch]') [ -e "${p%.\[ch\]}.c" ] && [ -e "${p%.\[ch\]}.h" ] && continue ;;
    bench/bench_*) [ -e "$p.c" ] || [ -e "$p" ] && continue ;;
    tests/fuzz/replay_*) [ -e "tests/fuzz/replay.c" ] && continue ;;
    tests/unit/test_*) [ -e "$p.c" ] || [ -e "$p" ] && continue ;; # programs built from .c
    esac
    [ -e "$p" ] && continue
    [ -e "${p%/}" ] && continue
    echo "# missing: $p"
    s=1
done <"$T/refs"
ok $s "every file the docs name is in the repository ($(wc -l <"$T/refs") references)"

# The man page lists every long option of every command, the environment, exit codes.
M=docs/autoshard.1
s=0
for c in gen inspect convert hw rules strategies solve export lower simulate rank sweep; do
    "$AUTOSHARD" $c --help | grep -oE '^  +(-[a-zA-Z], )?--[a-z][a-z-]*' | grep -oE -- '--[a-z-]+' |
        sort -u >"$T/o"
    while read -r o; do
        e=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
        grep -q -- "$e" "$M" || { echo "# $c: $o not in the man page"; s=1; }
    done <"$T/o"
done
ok $s "the man page lists every command's long options"
s=0
for w in AUTOSHARD_RULES_CACHE XDG_CACHE_HOME '\.SH ENVIRONMENT' '\.SH EXIT STATUS' '\.SH EXAMPLES' \
    'custom\\-call'; do
    grep -q "$w" "$M" || { echo "# man page lacks $w"; s=1; }
done
ok $s "the man page has ENVIRONMENT, EXIT STATUS, EXAMPLES and --custom-call"
n=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH/p' "$M" | grep -c '^\.B [0-3]$' || true)
if [ "$n" -eq 4 ]; then ok 0 "exit codes 0-3 each described"; else ok 1 "$n exit codes described"; fi
done_testing
