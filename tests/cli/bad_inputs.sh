#!/bin/sh
# bad_inputs.sh -- the catalogue of bad inputs (issue 17 item 3): every
# reader (.asg, HLO text, hardware profiles, cost graphs, plans, solver
# solutions, event programs) and the command line, fed empty, truncated,
# binary and over-long input, overflowing, negative, NaN and infinite
# numbers, duplicates, cycles, deep nesting, wrong JSON types, a plan for
# another graph, bad meshes and sizes, a directory, a missing output
# directory, /dev/full and an unreadable file.  Each case asserts the exit
# status and the first line of stderr; for input errors (exit 2) the only
# other stderr lines allowed are a usage reminder; no output file appears.
. "${top_srcdir:-.}/tests/cli/lib.sh"

D="$top_srcdir/tests/data"
G="$D/asg/mlp.asg"
TINY="$D/costgraph/tiny.json"

# bad CODE FIRST DESCRIPTION ARGS...: autoshard ARGS exits CODE, the first
# stderr line is exactly FIRST (FIRST ending in '*': starts with the rest),
# every other stderr line is "usage: ..." or "Try '...", and stdout is empty
# unless the case writes there on purpose.
bad() {
    local code=$1 first=$2 desc=$3 s=0 got
    shift 3
    as "$@"
    [ "$rc" -eq "$code" ] || s=1
    got=$(head -n 1 "$T/err")
    case "$first" in
    *'*') case "$got" in "${first%\*}"*) ;; *) s=1 ;; esac ;;
    *) [ "$got" = "$first" ] || s=1 ;;
    esac
    if [ "$(grep -v -c -e '^usage: autoshard ' -e "^Try 'autoshard" "$T/err")" -ne 1 ]; then s=1; fi
    if [ $s -ne 0 ]; then
        echo "# exit $rc (want $code); want first line: $first"
        head -c 600 "$T/err" | head -3 | sed 's/^/#   got: /'
    fi
    ok $s "$desc"
}

# Inputs made here (dash's printf: octal escapes only).
big() { head -c "$1" /dev/zero | tr '\0' "$2"; } # big N CHAR: N copies of CHAR
: >"$T/empty"
printf '\177ELF\002\001\001\000\000\000\377\376' >"$T/bin"

# --- .asg -------------------------------------------------------------------
head -c 260 "$G" >"$T/trunc.asg"
printf 'graph g\ninput x : f32[2]\000\nh = relu(x)\noutput h\n' >"$T/nul.asg"
{ printf 'graph '; big 10485760 a; printf '\n'; } >"$T/long.asg"
printf 'input x : f32[99999999999999999999,2]\nh = relu(x)\n' >"$T/dimovf.asg"
printf 'input x : f32[4294967296,4294967296,16]\nh = relu(x)\n' >"$T/prodovf.asg"
printf 'input x : f32[-1,2]\nh = relu(x)\n' >"$T/negdim.asg"
printf 'input x : f32[2]\nh = relu(x)\ntrain optimizer=adam lr=nan\n' >"$T/nanlr.asg"
printf 'input x : f32[2]\nh = relu(x)\ntrain optimizer=adam lr=1e400\n' >"$T/inflr.asg"
printf 'input x : f32[2]\nh = relu(x)\ntrain optimizer=adam lr=-1\n' >"$T/neglr.asg"
printf 'input x : f32[2]\ninput x : f32[2]\nh = relu(x)\n' >"$T/dup.asg"
{ printf 'input x : f32[2]\nh = relu('; big 100000 '('; printf 'x'; big 100000 ')'; printf ')\n'; } \
    >"$T/deep.asg"
bad 2 "autoshard: $T/empty:1:1: empty graph: no ops" "asg: empty file" inspect "$T/empty"
bad 2 "autoshard: $T/trunc.asg:8:19: expected an op type, got end of line" \
    "asg: truncated in a statement" inspect "$T/trunc.asg"
bad 2 "autoshard: $T/bin:1:1: binary data" "asg: binary file" inspect "$T/bin"
# an endless stream (/dev/zero) or a file over the cap: one line, read no further
AUTOSHARD_READ_MAX=1000000 bad 2 "autoshard: /dev/zero: input larger than 1000000 bytes, the most autoshard reads" \
    "asg: an endless stream stops at the read cap" inspect /dev/zero
AUTOSHARD_READ_MAX=300 bad 2 "autoshard: $G: input larger than 300 bytes, the most autoshard reads" \
    "asg: a file over the read cap" inspect "$G"
bad 2 "autoshard: $T/nul.asg:2:17: binary data" "asg: NUL byte in a line" inspect "$T/nul.asg"
bad 2 "autoshard: $T/long.asg:1:1: line is longer than 1 MiB" "asg: 10 MB line" inspect "$T/long.asg"
bad 2 "autoshard: $T/dimovf.asg:1:15: integer 99999999999999999999 out of range" \
    "asg: dimension overflows 64 bits" inspect "$T/dimovf.asg"
bad 2 "autoshard: $T/prodovf.asg:1:11: f32[4294967296,4294967296,16] is too large: its size overflows 64 bits" \
    "asg: product of dimensions overflows 64 bits" inspect "$T/prodovf.asg"
bad 2 "autoshard: $T/negdim.asg:1:15: negative dimension -1" "asg: negative dimension" \
    inspect "$T/negdim.asg"
bad 2 "autoshard: $T/nanlr.asg:3:22: train option 'lr' must be a finite number >= 0" \
    "asg: NaN learning rate" inspect "$T/nanlr.asg"
bad 2 "autoshard: $T/inflr.asg:3:22: train option 'lr' must be a finite number >= 0" \
    "asg: 1e400 learning rate" inspect "$T/inflr.asg"
bad 2 "autoshard: $T/neglr.asg:3:22: train option 'lr' must be a finite number >= 0" \
    "asg: negative learning rate" inspect "$T/neglr.asg"
bad 2 "autoshard: $T/dup.asg:2:7: redefinition of 'x' (first defined at line 1)" \
    "asg: duplicate name" inspect "$T/dup.asg"
bad 2 "autoshard: $D/asg/bad/cycle.asg:3:12: cycle: a -> b -> c -> a" "asg: cycle" \
    inspect "$D/asg/bad/cycle.asg"
bad 2 "autoshard: $T/deep.asg:2:10: expected an input tensor name, got '('" \
    "asg: 100000 nested parentheses" inspect "$T/deep.asg"
printf 'input x : f32[1099511627776,1048576]\ninput y : f32[1099511627776,1048576]\na = add(x, y)\noutput a\n' \
    >"$T/sumovf.asg"
printf 'input x : f32[1099511627776,1048576]\na = relu(x)\nb = add(a, x)\noutput b\n' >"$T/peakovf.asg"
bad 2 "autoshard: $T/sumovf.asg: graph 'sumovf': the bytes of its tensors overflow 64 bits" \
    "asg: inspect of tensors whose bytes add up past 64 bits" inspect "$T/sumovf.asg"
bad 2 "autoshard: $T/peakovf.asg: graph 'peakovf': the bytes of its live activations overflow 64 bits" \
    "asg: inspect of a peak past 64 bits" inspect --json "$T/peakovf.asg"

# --- HLO text ---------------------------------------------------------------
H='HloModule m\n\nENTRY %%main (x: f32[2]) -> f32[2] {\n'
E='  ROOT %%r = f32[2]{0} negate(%%x)\n}\n'
head -c 600 "$D/hlo/mlp_train.hlo" >"$T/trunc.hlo"
printf 'HloModule m\n\000\001\002\377' >"$T/bin.hlo"
{ printf "$H"'  %%x = '; big 100000 '('; printf 'f32[2]'; big 100000 ')'; printf ' parameter(0)\n'"$E"; } \
    >"$T/deep.hlo"
printf "$H"'  %%x = f32[99999999999999999999]{0} parameter(0)\n'"$E" >"$T/dimovf.hlo"
printf "$H"'  %%x = f32[4294967296,4294967296,16]{2,1,0} parameter(0)\n'"$E" >"$T/prodovf.hlo"
printf "$H"'  %%x = f32[2]{0} parameter(0)\n  %%x = f32[2]{0} parameter(0)\n'"$E" >"$T/dup.hlo"
printf "$H"'  %%x = f32[2]{0} parameter(0)\n  %%a = f32[2]{0} negate(%%b)\n  %%b = f32[2]{0} negate(%%a)\n'"$E" \
    >"$T/cycle.hlo"
printf "$H"'  %%x = f32[2]{0} parameter(0)\n  %%s = f32[1]{0} slice(%%x), slice={[0:2:99999999999999999999]}\n'"$E" \
    >"$T/strideovf.hlo"
{ printf "$H"'  %%x = f32[2]{0} parameter(0)\n'; big 10485760 a; printf '\n'"$E"; } >"$T/long.hlo"
bad 2 "autoshard: $T/trunc.hlo:11:47: unbalanced '{'" "hlo: truncated" inspect "$T/trunc.hlo"
bad 2 "autoshard: $T/bin.hlo:2:1: unexpected byte 0x00 (binary file?)" "hlo: binary after the header" \
    inspect "$T/bin.hlo"
bad 2 "autoshard: $T/deep.hlo:4:41: tuple types nested too deeply" "hlo: 100000 nested tuple types" \
    inspect "$T/deep.hlo"
bad 2 "autoshard: $T/dimovf.hlo:4:30: dimension too large" "hlo: dimension overflows 64 bits" \
    inspect "$T/dimovf.hlo"
bad 2 "autoshard: $T/strideovf.hlo:5:4: 's': malformed slice={[begin:end:stride],...}" \
    "hlo: a slice stride past 64 bits (not read as INT64_MAX)" inspect "$T/strideovf.hlo"
bad 2 "autoshard: $T/prodovf.hlo:4:8: f32[4294967296,4294967296,16] is too large: its size overflows 64 bits" \
    "hlo: product of dimensions overflows 64 bits" inspect "$T/prodovf.hlo"
bad 2 "autoshard: $T/dup.hlo:5:4: redefinition of 'x' (first at line 4)" "hlo: duplicate instruction" \
    inspect "$T/dup.hlo"
bad 2 "autoshard: $T/cycle.hlo:5:26: undefined instruction 'b' in 'main'" "hlo: cycle (use before definition)" \
    inspect "$T/cycle.hlo"
bad 2 "autoshard: $T/long.hlo:5:1: expected an instruction '%name = TYPE op(...)' or '}'" \
    "hlo: 10 MB garbage line" inspect "$T/long.hlo"

# --- hardware profiles ------------------------------------------------------
HW="$D/hw/my-gpu.hw"
sed 's/^memory = .*/memory = -1/' "$HW" >"$T/neg.hw"
sed 's/^memory = .*/memory = 1e400/' "$HW" >"$T/big.hw"
sed 's/^hbm_bandwidth = .*/hbm_bandwidth = nan/' "$HW" >"$T/nan.hw"
sed 's/^hbm_bandwidth = .*/hbm_bandwidth = inf/' "$HW" >"$T/inf.hw"
sed 's/^devices_per_node = .*/devices_per_node = 99999999999999999999/' "$HW" >"$T/ovf.hw"
{ cat "$HW"; echo 'memory = 40GiB'; } >"$T/dup.hw"
{ printf 'name = '; big 10485760 a; printf '\n'; } >"$T/long.hw"
head -c 150 "$HW" >"$T/trunc.hw"
bad 2 "autoshard: $T/empty:1:1: missing required keys 'name'*" "hw: empty profile" hw show "$T/empty"
bad 2 "autoshard: $T/trunc.hw:4:1: missing required keys 'hbm_bandwidth'*" "hw: truncated profile" \
    hw show "$T/trunc.hw"
bad 2 "autoshard: $T/bin:1:8: contains a NUL byte (not a text profile)" "hw: binary profile" hw show "$T/bin"
bad 2 "autoshard: $T/neg.hw:7:10: 'memory' must be > 0 (got -1)" "hw: memory -1" hw show "$T/neg.hw"
bad 2 "autoshard: $T/big.hw:7:10: bad size '1e400' for 'memory'*" "hw: memory 1e400" hw show "$T/big.hw"
bad 2 "autoshard: $T/nan.hw:6:17: bad number 'nan' for 'hbm_bandwidth'" "hw: NaN bandwidth" \
    hw show "$T/nan.hw"
bad 2 "autoshard: $T/inf.hw:6:17: bad number 'inf' for 'hbm_bandwidth'" "hw: infinite bandwidth" \
    hw show "$T/inf.hw"
bad 2 "autoshard: $T/ovf.hw:9:20: 'devices_per_node' must be an integer in 1..65536 (got 99999999999999999999)" \
    "hw: devices per node overflows" hw show "$T/ovf.hw"
bad 2 "autoshard: $T/dup.hw:14:1: duplicate key 'memory' (first set on line 7)" "hw: duplicate key" \
    hw show "$T/dup.hw"
bad 2 "autoshard: $T/long.hw:1:8: bad name 'aaaa*" "hw: 10 MB value" hw show "$T/long.hw"

# --- cost graphs (JSON) -----------------------------------------------------
head -c 150 "$TINY" >"$T/trunc.json"
echo '{"memory":0,"nodes":5,"edges":[]}' >"$T/types.json"
echo '{"memory":0,"nodes":[{"name":"a","c":["x"]}],"edges":[]}' >"$T/types2.json"
{ big 100000 '['; big 100000 ']'; echo; } >"$T/deep.json"
echo '{"memory":0,"nodes":[{"name":"a","c":[1]},{"name":"a","c":[1]}],"edges":[]}' >"$T/dupname.json"
echo '{"memory":0,"memory":1,"nodes":[{"name":"a","c":[1]}],"edges":[]}' >"$T/dupkey.json"
echo '{"memory":0,"nodes":[{"name":"a","c":[1]},{"name":"b","c":[1]}],"edges":[{"u":0,"v":99999999999999999999,"r":[[0]]}]}' \
    >"$T/ovf.json"
echo '{"memory":-1,"nodes":[{"name":"a","c":[1]}],"edges":[]}' >"$T/negmem.json"
echo '{"memory":1e400,"nodes":[{"name":"a","c":[1]}],"edges":[]}' >"$T/bigmem.json"
printf '{"memory":0,\000"nodes":[]}' >"$T/nul.json"
{ printf '{"memory":"'; big 10485760 a; printf '","nodes":[{"name":"a","c":[1]}],"edges":[]}\n'; } \
    >"$T/long.json"
bad 2 "autoshard: $T/empty:1:1: '[' or '{' expected near end of file" "costgraph: empty" \
    solve --costgraph "$T/empty"
bad 2 "autoshard: $T/trunc.json:5:17: premature end of input near '\"'" "costgraph: truncated" \
    solve --costgraph "$T/trunc.json"
bad 2 "autoshard: $T/bin:1:1: '[' or '{' expected near '\\x7f'" "costgraph: binary" \
    solve --costgraph "$T/bin"
bad 2 "autoshard: $T/nul.json:1:13: string or '}' expected near end of file" "costgraph: NUL byte" \
    solve --costgraph "$T/nul.json"
bad 2 "autoshard: $T/types.json:1:21: nodes: expected a non-empty array" "costgraph: nodes is a number" \
    solve --costgraph "$T/types.json"
bad 2 "autoshard: $T/types2.json:1:39: nodes[0].c[0]: expected a number" "costgraph: a cost is a string" \
    export --costgraph "$T/types2.json"
bad 2 "autoshard: $T/deep.json:1:2049: maximum parsing depth reached near '['" \
    "costgraph: 100000 nested arrays" solve --costgraph "$T/deep.json"
bad 2 "autoshard: $T/dupname.json:1:43: nodes[1]: duplicate node name 'a' (nodes 0 and 1)" \
    "costgraph: duplicate node name" solve --costgraph "$T/dupname.json"
bad 2 "autoshard: $T/dupkey.json:1:20: duplicate object key near '\"memory\"'" "costgraph: duplicate key" \
    solve --costgraph "$T/dupkey.json"
bad 2 "autoshard: $T/ovf.json:1:104: too big integer near '99999999999999999999'" \
    "costgraph: node index overflows 64 bits" solve --costgraph "$T/ovf.json"
bad 2 "autoshard: $T/negmem.json:1:11: memory: expected bytes >= 0" "costgraph: memory -1" \
    solve --costgraph "$T/negmem.json"
bad 2 "autoshard: $T/bigmem.json:1:15: real number overflow near '1e400'" "costgraph: memory 1e400" \
    solve --costgraph "$T/bigmem.json"
bad 2 "autoshard: $D/costgraph/bad_nan.json:1:37: invalid token near 'NaN'" "costgraph: NaN" \
    solve --costgraph "$D/costgraph/bad_nan.json"
bad 2 "autoshard: $D/costgraph/bad_cycle.json:1:1: node 'a': follow cycle" "costgraph: follow cycle" \
    solve --costgraph "$D/costgraph/bad_cycle.json"
bad 2 "autoshard: $T/long.json:1:11: memory: expected bytes >= 0" "costgraph: 10 MB string as the budget" \
    solve --costgraph "$T/long.json"

# --- plans (JSON) -----------------------------------------------------------
as solve "$G" --mesh 2x2 -o "$T/mlp.plan"
ok $rc "a plan for the catalogue"
P="$T/mlp.plan"
head -c 700 "$P" >"$T/trunc.plan"
sed 's/"tensors": \[/"tensors": 5, "x": [/' "$P" >"$T/types.plan"
sed 's/"mesh": "x=2,y=2"/"mesh": "x=0"/' "$P" >"$T/mesh0.plan"
sed 's/"mesh": "x=2,y=2"/"mesh": "x=99999999999,y=2"/' "$P" >"$T/meshbig.plan"
sed '0,/"spec": "\[None,None\]"/s//"spec": "[S9,None]"/' "$P" >"$T/spec.plan"
sed 's/"version": 1,/"version": 1, "version": 1,/' "$P" >"$T/dupkey.plan"
bad 2 "autoshard: $T/empty:1:1: '[' or '{' expected near end of file" "plan: empty" \
    lower "$G" --plan "$T/empty"
bad 2 "autoshard: $T/trunc.plan:*" "plan: truncated" lower "$G" --plan "$T/trunc.plan"
bad 2 "autoshard: $T/bin:1:1: '[' or '{' expected near '\\x7f'" "plan: binary" lower "$G" --plan "$T/bin"
bad 2 "autoshard: $T/deep.json:1:2049: maximum parsing depth reached near '['" "plan: 100000 nested arrays" \
    lower "$G" --plan "$T/deep.json"
bad 2 "autoshard: $T/types.plan:1:1: 'tensors' and 'ops' must be arrays" "plan: tensors is a number" \
    lower "$G" --plan "$T/types.plan"
bad 2 "autoshard: $T/mesh0.plan:5:10: mesh 'x=0': axis 1 has size 0 (must be >= 1)" "plan: mesh x=0" \
    lower "$G" --plan "$T/mesh0.plan"
bad 2 "autoshard: $T/meshbig.plan:5:10: mesh 'x=99999999999,y=2': axis 1 has size 99999999999 (at most 65536 devices)" \
    "plan: mesh 99999999999" lower "$G" --plan "$T/meshbig.plan"
bad 2 "autoshard: $T/spec.plan:14:3: tensors[0]: spec '[S9,None]': col 2: unknown mesh axis 'S9'" \
    "plan: unknown mesh axis in a spec" simulate "$G" --plan "$T/spec.plan"
bad 2 "autoshard: $T/dupkey.plan:3:24: duplicate object key near '\"version\"'" "plan: duplicate key" \
    lower "$G" --plan "$T/dupkey.plan"
bad 2 "autoshard: plan '$P': op 'h' not in graph 'shapes-test.v2'" "plan for another graph (lower)" \
    lower "$D/asg/shapes.asg" --plan "$P"
bad 2 "autoshard: plan 'mlp.plan': op 'h' not in graph 'shapes-test.v2'" "plan for another graph (rank)" \
    rank "$D/asg/shapes.asg" --plans "$P"

# --- solver solution files --------------------------------------------------
S="solve --costgraph $TINY --no-reduce --solution"
printf 'Optimal - objective value \n      0 s_0_1   1   0\n' >"$T/emptyobj.sol"
printf 'Optimal - objective value nan\n      0 s_0_1   1   0\n' >"$T/nan.sol"
printf 'Optimal - objective value 1e400\n      0 s_0_1   1   0\n' >"$T/big.sol"
printf 'Optimal - objective value 6.5\n      0 s_0_1   inf   0\n' >"$T/infval.sol"
printf 'Optimal - objective value 6.5\n      0 s_0_1   -1   0\n' >"$T/negval.sol"
{ printf 'Optimal - objective value 6.5\n'; big 10485760 a; echo; } >"$T/long.sol"
bad 2 "autoshard: $T/empty: empty or binary file, not a solution" "solution: empty" $S "$T/empty"
bad 2 "autoshard: $T/bin: empty or binary file, not a solution" "solution: binary" $S "$T/bin"
bad 2 "autoshard: $T/emptyobj.sol:1: the objective value is missing" "solution: empty objective" \
    $S "$T/emptyobj.sol"
bad 2 "autoshard: $T/nan.sol:1: the objective value is not a finite number" "solution: NaN objective" \
    $S "$T/nan.sol"
bad 2 "autoshard: $T/big.sol:1: the objective value is not a finite number" "solution: 1e400 objective" \
    $S "$T/big.sol"
bad 2 "autoshard: $T/infval.sol:2: value 'inf' of 's_0_1' is not a finite number" "solution: infinite value" \
    $S "$T/infval.sol"
bad 2 "autoshard: $T/negval.sol: variable s_0_1 = -1 is not 0 or 1" "solution: negative value" \
    $S "$T/negval.sol"
bad 2 "autoshard: $T/long.sol:2: expected 'INDEX NAME VALUE'" "solution: 10 MB line" $S "$T/long.sol"
bad 2 "autoshard: $D/costgraph/bad_sol_unknown.txt:*" "solution: unknown variable" \
    $S "$D/costgraph/bad_sol_unknown.txt"

# --- event programs ---------------------------------------------------------
PH='program p devices=2 hw=a100-dgx\n'
printf "$PH"'e1: compute dev=0 op=iota writes=h:16\n' >"$T/iota.prog"
printf 'program p devices=0\n' >"$T/dev0.prog"
printf 'program p devices=99999999999\n' >"$T/devbig.prog"
printf "$PH"'input 0 x -1\n' >"$T/negbytes.prog"
printf "$PH"'input 0 x 16\ne1: compute dev=0 time=nan reads=x writes=h:16\n' >"$T/nantime.prog"
printf "$PH"'input 0 x 16\ne1: compute dev=0 time=1e400 reads=x writes=h:16\n' >"$T/inftime.prog"
printf "$PH"'input 0 x 16\ne1: compute dev=0 time=1 reads=x,b writes=a:16\ne2: compute dev=0 time=1 reads=a writes=b:16\n' \
    >"$T/cycle.prog"
printf "$PH"'e1: compute dev=0 op=matmul in=f32[4294967296,4294967296],f32[4294967296,4294967296] writes=h:16\n' \
    >"$T/ovf.prog"
printf "$PH"'input 0 x 16\000\n' >"$T/nul.prog"
head -c 100 "$D/sim/demo.prog" >"$T/trunc.prog"
{ printf "$PH"'input 0 x '; big 10485760 1; printf '\n'; } >"$T/long.prog"
bad 2 "autoshard: $T/empty:1:1: empty program (expected 'program NAME devices=N')" "program: empty" \
    simulate --program "$T/empty"
bad 2 "autoshard: $T/trunc.prog:2:27: bad value for 'hw'" "program: truncated" simulate --program "$T/trunc.prog"
bad 2 "autoshard: $T/bin:1:8: contains a NUL byte (not a program text)" "program: binary" simulate --program "$T/bin"
bad 2 "autoshard: $T/nul.prog:2:13: contains a NUL byte (not a program text)" "program: NUL byte" \
    simulate --program "$T/nul.prog"
bad 2 "autoshard: $T/iota.prog:2:5: 'iota' needs attribute 'shape' (a list of integers)" \
    "program: compute without inputs" simulate --program "$T/iota.prog"
bad 2 "autoshard: $T/dev0.prog:1:19: devices must be an integer from 1 to 65536" "program: devices=0" \
    simulate --program "$T/dev0.prog"
bad 2 "autoshard: $T/devbig.prog:1:19: devices must be an integer from 1 to 65536" \
    "program: devices=99999999999" simulate --program "$T/devbig.prog"
bad 2 "autoshard: $T/negbytes.prog:2:11: bad number '-1' for 'bytes'" "program: bytes -1" \
    simulate --program "$T/negbytes.prog"
bad 2 "autoshard: $T/nantime.prog:3:24: bad number 'nan' for 'time'" "program: time NaN" \
    simulate --program "$T/nantime.prog"
bad 2 "autoshard: $T/inftime.prog:3:24: bad number '1e400' for 'time'" "program: time 1e400" \
    simulate --program "$T/inftime.prog"
bad 2 "autoshard: $T/cycle.prog: deadlock: 2 of 2 events can never start; cycle: line 3 'e1' waits for line 4 'e2' waits for line 3 'e1'" \
    "program: cycle" simulate --program "$T/cycle.prog"
bad 2 "autoshard: $T/ovf.prog:2:36: bad dimension in shape*" "program: shape overflows 64 bits" \
    simulate --program "$T/ovf.prog"
bad 2 "autoshard: $T/long.prog:2:*" "program: 10 MB line" simulate --program "$T/long.prog"

# --- command line -----------------------------------------------------------
bad 2 "autoshard: mesh '0': axis 1 has size 0 (must be >= 1)" "mesh 0" solve "$G" --mesh 0
bad 2 "autoshard: mesh '2x': expected a number at column 3" "mesh 2x" solve "$G" --mesh 2x
bad 2 "autoshard: mesh '99999999999x2': axis 1 has size 99999999999 (at most 65536 devices)" \
    "mesh 99999999999x2" strategies "$G" --mesh 99999999999x2
bad 2 "autoshard: mesh 'dp=2,dp=2': duplicate axis name 'dp'" "mesh with a duplicate axis" \
    export "$G" --mesh dp=2,dp=2
bad 2 "autoshard: --memory: bad byte count '-1' (e.g. 16GiB, 40GB, auto)" "memory -1" \
    solve "$G" --mesh 2 --memory -1
bad 2 "autoshard: --memory: bad byte count '1e400' (e.g. 16GiB, 40GB, auto)" "memory 1e400" \
    solve "$G" --mesh 2 --memory 1e400
bad 2 "autoshard: --memory: bad byte count 'nan' (e.g. 16GiB, 40GB, auto)" "memory nan" \
    solve "$G" --mesh 2 --memory nan
bad 2 "autoshard: --top must be an integer in 1..10000, got '0'" "--top 0" solve "$G" --mesh 2 --top 0
bad 2 "autoshard: --threads must be an integer in 1..1024, got '-1'" "--threads -1" \
    solve "$G" --mesh 2 --threads -1
bad 2 "autoshard: --time-limit must be a number >= 0, got 'nan'" "--time-limit nan" \
    solve "$G" --mesh 2 --time-limit nan
bad 2 "autoshard: --gap must be a number >= 0, got 'inf'" "--gap inf" solve "$G" --mesh 2 --gap inf
bad 2 "autoshard: --layers must be a positive integer, got '99999999999999999999'" "gen --layers overflow" \
    gen gpt2-small --layers 99999999999999999999
bad 2 "autoshard: --bytes must be a number >= 0, got '-1'" "hw mesh --bytes -1" hw mesh 2x4 --bytes -1
bad 2 "autoshard: --pipeline must be an integer in 1..65536, got '0'" "simulate --pipeline 0" \
    simulate "$G" --plan "$P" --pipeline 0
bad 2 "autoshard: bad or incomplete option '--mesh'" "option without its value" solve "$G" --mesh
bad 2 "autoshard: unknown command 'frobnicate'*" "unknown command" frobnicate
bad 1 "autoshard: $T: read error: Is a directory" "a directory as a graph" inspect "$T"
bad 1 "autoshard: $T: read error: Is a directory" "a directory as a cost graph" solve --costgraph "$T"
bad 1 "autoshard: $T: read error: Is a directory" "a directory as a program" simulate --program "$T"
bad 1 "autoshard: $T/nothere.asg: No such file or directory" "a missing file" inspect "$T/nothere.asg"
bad 1 "autoshard: $T/nodir/p.json: No such file or directory" "solve -o in a missing directory" \
    solve --costgraph "$TINY" -o "$T/nodir/p.json"
bad 1 "autoshard: $T/nodir/p.mps: No such file or directory" "export -o in a missing directory" \
    export --costgraph "$TINY" -o "$T/nodir/p.mps"
bad 1 "autoshard: $T/nodir/g.asg: No such file or directory" "convert -o in a missing directory" \
    convert "$G" -o "$T/nodir/g.asg"
bad 1 "autoshard: /dev/full: write error: No space left on device" "solve -o /dev/full" \
    solve --costgraph "$TINY" -o /dev/full
bad 1 "autoshard: /dev/full: *" "export -o /dev/full" export --costgraph "$TINY" -o /dev/full
bad 1 "autoshard: /dev/full: write error: No space left on device" "convert -o /dev/full" \
    convert "$G" -o /dev/full
bad 1 "autoshard: /dev/full: *" "lower -o /dev/full" lower "$G" --plan "$P" -o /dev/full
for c in "hw list" "rules" "inspect $G" "strategies $G --mesh 2" "solve --costgraph $TINY" \
    "simulate $G --plan $P" "help solve"; do
    set +e
    # shellcheck disable=SC2086
    $VALGRIND_CMD "$AUTOSHARD" $c >/dev/full 2>"$T/err"
    rc=$?
    set -e
    s=0
    [ $rc -eq 1 ] || s=1
    [ "$(wc -l <"$T/err")" -eq 1 ] || s=1
    grep -q '^autoshard: cannot write to standard output' "$T/err" || s=1
    [ $s -eq 0 ] || { echo "# exit $rc"; sed 's/^/#   /' "$T/err" | head -3; }
    ok $s "$c >/dev/full: exit 1, one line"
done
cp "$G" "$T/unreadable.asg"
chmod 000 "$T/unreadable.asg"
if [ -r "$T/unreadable.asg" ]; then
    tap_n=$((tap_n + 1))
    echo "ok $tap_n # SKIP an unreadable file (running as root: mode 000 does not stop reads)"
else
    bad 1 "autoshard: $T/unreadable.asg: Permission denied" "an unreadable file" inspect "$T/unreadable.asg"
fi
chmod 644 "$T/unreadable.asg"

# No case left an output or a temporary file behind.
ok $([ ! -e "$T/nodir" ] && ! ls -a "$T" | grep -q -e '\.tmp' -e '^\.autoshard'; echo $?) \
    "no output or temporary file left by a failing run"
done_testing
