#!/usr/bin/env bash
# The analyzer out of memory (nomem.h): a trace too big for the memory it is
# given must end with exit status 3 and one line that says it was memory,
# from every command that builds the model; never a silent exit, never the
# status that means something else (diff's 1 is "grew"). The streaming
# model (report --stream) needs no allocation that grows with the trace.
#   analyzer_nomem.sh VRAMTRACE GEN_TRACE ALLOC_LIMIT_LIB WORKDIR
set -uo pipefail
vt=$1 gen=$2 lib=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
"$gen" "$work/trace" 1000000 >/dev/null || { echo "FAIL: gen_trace"; exit 1; }
fail=0
check() { # name expected_rc cmd...
	local name=$1 want=$2
	shift 2
	LD_PRELOAD=$lib VT_TEST_ALLOC_LIMIT=4194304 "$@" >"$work/out" 2>"$work/err"
	local rc=$?
	local lines
	lines=$(wc -l <"$work/err")
	if [[ $rc != "$want" ]]; then
		echo "FAIL: $name: exit $rc, want $want; stderr: $(head -c 300 "$work/err")"
		fail=1
	elif [[ $want == 3 ]] && ! { [[ $lines == 1 ]] && grep -q '^vramtrace: out of memory after [0-9]* MiB' "$work/err"; }; then
		echo "FAIL: $name: stderr is not the one out-of-memory line: $(head -c 300 "$work/err")"
		fail=1
	else
		echo "ok: $name: exit $rc"
	fi
}
# the same trace reads fine with the memory it needs
if ! "$vt" report "$work/trace" >/dev/null 2>"$work/err"; then
	echo "FAIL: report without a limit: $(head -c 300 "$work/err")"
	exit 1
fi
# the full model (report folds this generated loop: VRAMTRACE_FOLD=0 keeps
# every record, as --allocs and --at do)
check "report" 3 env VRAMTRACE_FOLD=0 "$vt" report "$work/trace"
check "report --json" 3 env VRAMTRACE_FOLD=0 "$vt" report --json "$work/trace"
check "oom" 3 "$vt" oom "$work/trace"
check "diff --fail-over" 3 "$vt" diff --fail-over 10 "$work/trace" "$work/trace"
check "export csv" 3 "$vt" export "$work/trace" --format csv -o "$work/x.csv"
# the streaming model holds what is live, not what happened: under the same
# limit it reads the whole trace
check "report --stream" 0 "$vt" report --stream "$work/trace"
check "report --stream --json" 0 "$vt" report --stream --json "$work/trace"
check "diff --stream --fail-over" 0 "$vt" diff --stream --fail-over 10 "$work/trace" "$work/trace"
check "export --stream perfetto" 0 "$vt" export "$work/trace" --stream --format perfetto -o "$work/t.json"
# a limit above what the model needs changes nothing (the double is not the failure)
VT_TEST_ALLOC_LIMIT=17179869184 LD_PRELOAD=$lib "$vt" report "$work/trace" >/dev/null 2>"$work/err" ||
	{ echo "FAIL: report under a limit it never reaches"; fail=1; }
exit $fail
