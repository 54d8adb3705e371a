#!/usr/bin/env bash
# Two tools preloaded together: libvramtrace.so with another
# LD_PRELOAD library that also wraps dlsym, and with an ASan-built job (the
# sanitizer runtime preloaded first). Each run: exact counts through all
# three lookup paths (kill_harness, 0 kills), and the other tool still sees
# every lookup it sees without vramtrace.
#   coexist.sh VRAMTRACE SHIM OTHER_SHIM STRESS STRESS_ASAN|- KILL_HARNESS WORKDIR
set -u
vt=$1 shim=$2 other=$3 job=$4 job_asan=$5 harness=$6 work=$7
rm -rf "$work"
mkdir -p "$work"
fails=0
fail() { echo "FAIL [$name]: $*"; fails=$((fails + 1)); }
export VT_OTHER_SHIM_REPORT=1

# the most lookups one process of the run reported to the other shim
other_saw() { sed -n 's/^other-shim: \([0-9]*\) dlsym lookups$/\1/p' "$work/err" | sort -n | tail -1; }

name=baseline
VT_JOB_THREADS=6 VT_JOB_PER_THREAD=300 LD_PRELOAD=$other "$job" >/dev/null 2>"$work/err" || fail "job alone"
alone=$(other_saw)
echo "the other shim alone sees $alone lookups"

# counted NAME CMD...: the harness's exact-count run of CMD
counted() {
	name=$1
	shift
	"$harness" shim 0 6 300 "$work/$name" -- "$@" >"$work/out" 2>"$work/err" ||
		{ fail "$(cat "$work/out") $(grep -v 'trace in' "$work/err" | head -3)"; return 1; }
	echo "$name: $(cat "$work/out")"
}

counted launcher_keeps_other env LD_PRELOAD="$other" "$vt" run -o {DIR} -- "$job" &&
	{ (($(other_saw) >= alone)) || fail "the other shim saw $(other_saw) lookups, $alone without vramtrace"; }
counted shim_then_other env LD_PRELOAD="$shim:$other" VRAMTRACE_DIR={DIR} "$job" &&
	{ (($(other_saw) >= alone)) || fail "the other shim saw $(other_saw) lookups, $alone without vramtrace"; }

if [[ $job_asan != - ]]; then
	asan_rt=$(${CC:-cc} -print-file-name=libasan.so)
	counted asan_job env LD_PRELOAD="$asan_rt" ASAN_OPTIONS=detect_leaks=0 "$vt" run -o {DIR} -- "$job_asan"
	grep -q 'AddressSanitizer' "$work/err" && fail "ASan report"
fi

echo "coexist: $fails failures"
((fails == 0)) && rm -rf "$work" && echo PASS
((fails == 0))
