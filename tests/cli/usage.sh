#!/bin/sh
# usage.sh -- global options, help and unknown commands.
. "${top_srcdir:-.}/tests/cli/lib.sh"

as --version
ok $([ $rc -eq 0 ] && grep -q '^autoshard ' "$T/out" && echo 0 || echo 1) "--version prints the version"
as --help
ok $([ $rc -eq 0 ] && grep -q 'Commands:' "$T/out" && echo 0 || echo 1) "--help lists commands on stdout"
as help
ok $([ $rc -eq 0 ] && grep -q 'Commands:' "$T/out" && echo 0 || echo 1) "help lists commands"
as
ok $([ $rc -eq 2 ] && echo 0 || echo 1) "no command is a usage error (exit 2)"
as frobnicate
expect_fail 2 "unknown command 'frobnicate'" "unknown command is exit 2 with a clear message"
as --bogus
ok $([ $rc -eq 2 ] && echo 0 || echo 1) "unknown global option is exit 2"
done_testing
