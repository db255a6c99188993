#!/bin/sh
# hlo_real.sh -- every real HLO dump in ../shared/hlo imports (exit 0), and
# a few have the parameter counts verified by hand from their text.
. "${top_srcdir:-.}/tests/cli/lib.sh"
R="$top_srcdir/../shared/hlo"
has() { if grep -q -- "$1" "$2"; then ok 0 "$3"; else ok 1 "$3"; fi; }
[ -d "$R" ] || skip_all "../shared/hlo not present"

for f in "$R"/*.hlo; do
    b=$(basename "$f")
    as inspect "$f"
    if [ "$b" = mlp__test.hlo ]; then
        # a 4-line fragment whose only instruction reads the undefined 'all-reduce.307'
        expect_fail 2 "mlp__test.hlo:4:175: undefined instruction 'all-reduce.307'" \
            "$b is a fragment: rejected with its position"
    else
        ok $rc "$b imports"
    fi
done

# params FILE COUNT: `inspect` reports exactly COUNT parameters
params() {
    as inspect "$R/$1"
    has "^parameters: .*($2)\$" "$T/out" "$1: $2 parameters"
}
params mlp__mini_mlp_single.hlo 7850        # linear 784->10: 7840 + 10
params mlp__mlp_single_final.hlo 105214     # 784->120->84->10 with biases
params gpt__gpt2_tp=1.hlo 46476288          # 1 GPT-2 block + 768x50257 head + KV cache + x
params misc__linear.hlo 163

done_testing
