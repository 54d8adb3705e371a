#!/usr/bin/env bash
# End to end under the real shim and the simulated driver:
#   1. `vramtrace run` records a client whose allocations come from three
#      functions in two files, a dlopen'ed + dlclose'd library and 16
#      threads: the sites name the right functions and lines; identical
#      stacks from 16 threads fold into one; the run leaves a sidecar;
#   2. after the binary and the library are deleted, names come from it;
#   3. stacks off (VRAMTRACE_STACK_DEPTH=0): events are recorded, and the
#      unwinder is never called (counted by a preloaded unw_backtrace).
#   usage: e2e_shim.sh VRAMTRACE SHIM CLIENT LIB UNW_COUNTER SITES_TOOL SRC_DIR SIMDRIVER_DIR
set -euo pipefail
vt=$1 shim=$2 client=$3 lib=$4 counter=$5 tool=$6 src=$7 simdir=$8
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
line() { grep -n "$1" "$src/$2" | cut -d: -f1; }
expect() { # output, site, allocs, bytes, stacks, records, source
	local want
	want=$(printf '%s\t%s\t%s\t%s\t%s\t%s' "$2" "$3" "$4" "$5" "$6" "$7")
	grep -qxF "$want" <<<"$1" || fail "missing line: $want
--- got:
$1"
}
check_named() { # output, source
	expect "$1" "upload_dataset (shim_client_b.c:$(line SHIM_SITE_DATASET shim_client_b.c))" 1 67108864 1 1 "$2"
	expect "$1" "load_weights (shim_client.c:$(line SHIM_SITE_WEIGHTS shim_client.c))" 1 4194304 1 1 "$2"
	expect "$1" "shim_lib_alloc (shim_lib.c:$(line SHIM_SITE_LIB shim_lib.c))" 1 2097152 1 1 "$2"
	expect "$1" "alloc_batch (shim_client_b.c:$(line SHIM_SITE_BATCH shim_client_b.c))" 801 839909376 2 17 "$2"
}
export LD_LIBRARY_PATH=$simdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cp "$client" "$tmp/client"
cp "$lib" "$tmp/libshim_lib.so"

# the library by a relative path: its module record must still name a file
(cd "$tmp" && "$vt" run -o "$tmp/trace" -- ./client ./libshim_lib.so 2>"$tmp/run.err") ||
	fail "vramtrace run: $(cat "$tmp/run.err")"
[[ -s $tmp/trace/symbols.vtsym ]] || fail "vramtrace run left no symbol sidecar"
out=$("$tool" "$tmp/trace" --no-sidecar)
check_named "$out" dwarf
# the same run without the stack memo (on above): the same sites and stacks
(cd "$tmp" && VRAMTRACE_STACK_MEMO=0 "$vt" run -o "$tmp/nomemo" -- ./client ./libshim_lib.so 2>"$tmp/run.err") ||
	fail "vramtrace run without the memo: $(cat "$tmp/run.err")"
[[ $("$tool" "$tmp/nomemo" --no-sidecar) == "$out" ]] ||
	fail "the stack memo changed the recorded stacks:
$(diff <("$tool" "$tmp/nomemo" --no-sidecar) <(echo "$out"))"
echo "the stack memo records the stacks a fresh unwind does: ok"
# the header counts the stacks taken and the memo's share; =verify checks
# every hit against a fresh unwind and counts what differed
header_field() { # trace, field: summed over its logs
	local d
	d=$("$vt" dump "$1")
	grep -oE "(^| )$2=[0-9]+" <<<"$d" | cut -d= -f2 | awk '{s += $1} END {print s + 0}'
}
(($(header_field "$tmp/trace" stack_memo_hits) > 0)) || fail "the memo answered no stack"
(($(header_field "$tmp/nomemo" stack_memo_hits) == 0)) || fail "VRAMTRACE_STACK_MEMO=0, yet the memo answered"
(cd "$tmp" && "$vt" run --stack-memo verify -o "$tmp/verify" -- ./client ./libshim_lib.so 2>"$tmp/run.err") ||
	fail "vramtrace run --stack-memo verify: $(cat "$tmp/run.err")"
verified=$(header_field "$tmp/verify" stack_memo_verified)
((verified > 0)) || fail "VRAMTRACE_STACK_MEMO=verify checked no hit"
[[ $(header_field "$tmp/verify" stack_memo_mismatches) == 0 ]] || fail "the memo and the unwinder differed"
"$vt" report "$tmp/verify" | grep "of those checked against the unwinder: none differed" >/dev/null ||
	fail "the report does not say the memo was verified"
echo "run --stack-memo verify: $verified hits checked, none differed: ok"
rc=0
"$vt" run --stack-memo sometimes -o "$tmp/bad" -- ./client 2>"$tmp/bad.err" || rc=$?
[[ $rc == 2 && $(wc -l <"$tmp/bad.err") == 2 ]] && grep -q -- "--stack-memo wants on, off or verify" "$tmp/bad.err" &&
	grep -q "^Try 'vramtrace run --help'" "$tmp/bad.err" ||
	fail "run --stack-memo sometimes: exit $rc, $(cat "$tmp/bad.err")"
[[ ! -e $tmp/bad ]] || fail "run --stack-memo sometimes still made a trace"
echo "run --stack-memo with a bad mode: one line and the Try line, exit 2: ok"
echo "sites named from the module files: ok"

rm "$tmp/client" "$tmp/libshim_lib.so"
out=$("$tool" "$tmp/trace")
check_named "$out" sidecar
echo "sites named from the sidecar after deleting binary and library: ok"

cp "$client" "$tmp/client"
# These checks count the unwinder's calls: the stack memo would answer the
# repeated ones without it (tests/stacks/test_stack_memo.c covers the memo).
export VRAMTRACE_STACK_MEMO=0
for depth in 0 24; do
	rm -rf "$tmp/d$depth"
	VT_UNW_COUNT_FILE=$tmp/unw.$depth VRAMTRACE_DIR=$tmp/d$depth VRAMTRACE_STACK_DEPTH=$depth \
		LD_PRELOAD="$counter:$shim" "$tmp/client"
done
[[ $(cat "$tmp/unw.0") == 0 ]] || fail "stacks off, yet unw_backtrace ran $(cat "$tmp/unw.0") times"
(($(cat "$tmp/unw.24") > 0)) || fail "the counter saw no unwinding at depth 24: the test proves nothing"
out=$("$tool" "$tmp/d0")
grep -qE $'^\\(no stack\\)\t8[0-9][0-9]\t' <<<"$out" || fail "stacks off: events missing:
$out"
echo "stacks off: events recorded, unw_backtrace never called (24 frames: $(cat "$tmp/unw.24") calls): ok"

# 4. frees are not unwound unless VRAMTRACE_FREE_STACKS=1: a free then
#    carries its own stack, and the unwinder runs once more per free
rm -rf "$tmp/dfree"
VT_UNW_COUNT_FILE=$tmp/unw.free VRAMTRACE_DIR=$tmp/dfree VRAMTRACE_STACK_DEPTH=24 VRAMTRACE_FREE_STACKS=1 \
	LD_PRELOAD="$counter:$shim" "$tmp/client"
frees_with_stack() { "$vt" dump "$1" | grep -E '^free ' | grep -cv ' stack=0$' || true; }
frees=$("$vt" dump "$tmp/d24" | grep -cE '^free ')
((frees > 0)) || fail "the client freed nothing: the free-stack check proves nothing"
[[ $(frees_with_stack "$tmp/d24") == 0 ]] || fail "a free carries a stack without VRAMTRACE_FREE_STACKS"
[[ $(frees_with_stack "$tmp/dfree") == "$frees" ]] ||
	fail "VRAMTRACE_FREE_STACKS=1: $(frees_with_stack "$tmp/dfree") of $frees frees carry a stack"
extra=$(($(cat "$tmp/unw.free") - $(cat "$tmp/unw.24")))
((extra == frees)) || fail "VRAMTRACE_FREE_STACKS=1 unwound $extra more times for $frees frees"
(cd "$tmp" && "$vt" run --free-stacks -o "$tmp/runfree" -- ./client 2>"$tmp/run.err") ||
	fail "vramtrace run --free-stacks: $(cat "$tmp/run.err")"
[[ $(frees_with_stack "$tmp/runfree") == "$frees" ]] || fail "vramtrace run --free-stacks: frees without stacks"
echo "frees unwound only with VRAMTRACE_FREE_STACKS=1 or run --free-stacks ($frees frees, $extra more unwinds): ok"
unset VRAMTRACE_STACK_MEMO
