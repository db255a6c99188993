#!/bin/sh
. "${top_srcdir:-.}/tests/cli/lib.sh"
done_testing
