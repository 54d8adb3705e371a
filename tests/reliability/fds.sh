#!/usr/bin/env bash
# The job's descriptors and address space are the job's (job_fds.c): each
# scenario runs with the shim preloaded and must end as it does without it;
# the trace must be readable and hold what the job did.
#   fds.sh VRAMTRACE SHIM FDS_JOB WORKDIR SANITIZER
# (LD_LIBRARY_PATH must name the simulated driver.)
set -u
vt=$1 shim=$2 job=$3 work=$4 sanitizer=${5:-}
rm -rf "$work"
mkdir -p "$work"
fails=0
fail() { echo "FAIL [$name]: $*"; sed 's/^/    stderr: /' "$work/$name.err" 2>/dev/null | head -5; fails=$((fails + 1)); }

# traced NAME [ENV=V...] -- ARGS...: the job with the shim, trace in $work/NAME
traced() {
	name=$1
	shift
	local envs=()
	while [[ $1 != -- ]]; do envs+=("$1"); shift; done
	shift
	echo "== $name: $*"
	env "${envs[@]}" LD_PRELOAD="$shim" VRAMTRACE_DIR="$work/$name" "$job" "$@" \
		>"$work/$name.out" 2>"$work/$name.err"
}
# dumped: the trace of the last run, read with no warning, in $work/NAME.txt
dumped() {
	"$vt" dump "$work/$name" >"$work/$name.txt" 2>"$work/$name.dumperr" || { fail "dump exit $?"; return 1; }
	[[ -s $work/$name.dumperr ]] && { fail "dump warned: $(head -2 "$work/$name.dumperr")"; return 1; }
	return 0
}
count() { awk -v k="$1" '$1 == k { n++ } END { print n + 0 }' "$work/$name.txt"; }

# the job closes every descriptor >= 3 and opens a file, which gets the
# number the log had; new chunks must still be claimed in the log, never
# in the job's file
if traced closefrom VRAMTRACE_CHUNK_SIZE=8K -- closefrom "$work/closefrom.file" 3000; then
	if dumped; then
		[[ $(count alloc) == 3001 ]] || fail "$(count alloc) allocations in the trace, job made 3001"
		grep -q 'truncated=no' "$work/$name.txt" || fail "log marked truncated"
	fi
else
	fail "job exit $? ($(cat "$work/closefrom.out"))"
fi

# the same, then fork: the child opens its own log and must not close the
# descriptor it inherited under the log's old number (the job's file now)
traced fork_close -- fork-close "$work/fork_close.file" || fail "job exit $?"

# stdin and stdout closed: the log must not take fd 0 or 1
name=stdio_closed
echo "== $name"
env LD_PRELOAD="$shim" VRAMTRACE_DIR="$work/$name" "$job" stdio-closed <&- >&- 2>"$work/$name.err" ||
	fail "job exit $?"
dumped && [[ $(count alloc) == 1 ]] || fail "$(count alloc) allocations in the trace, job made 1"

# stderr closed: the job's file on fd 2 gets no warning (the log is capped)
name=stderr_closed
echo "== $name"
env LD_PRELOAD="$shim" VRAMTRACE_DIR="$work/$name" VRAMTRACE_MAX_SIZE=64K \
	"$job" stderr-closed "$work/$name.file" 3000 >"$work/$name.out" 2>&- ||
	fail "job exit $?: $(cat "$work/$name.out")"
[[ $(cat "$work/$name.file") == job ]] || fail "the job's file: $(head -c 300 "$work/$name.file")"
dumped && { grep -q 'truncated=yes' "$work/$name.txt" || fail "capped log not marked truncated"; }

# ulimit -v: the log's reserve must leave the job the address space it has
# without the shim (a malloc of 2 GiB under a 5 GiB limit, the simulated device taking 1.1 GiB); not in a
# sanitizer build, whose shadow memory needs more than the limit
name=address_space
if [[ -z $sanitizer ]]; then
echo "== $name"
(ulimit -v $((5 << 20)) && VT_SIM_DEVICES=1 VT_SIM_CAPACITY=64M "$job" big-malloc 2048) >/dev/null 2>&1 || {
	echo "FAIL [$name]: the job fails under ulimit -v without the shim"
	fails=$((fails + 1))
}
(ulimit -v $((5 << 20)) && exec env VT_SIM_DEVICES=1 VT_SIM_CAPACITY=64M LD_PRELOAD="$shim" VRAMTRACE_DIR="$work/$name" "$job" big-malloc 2048) \
	>"$work/$name.out" 2>"$work/$name.err" || fail "job exit $?"
dumped && [[ $(count alloc) == 1 ]] || fail "$(count alloc) allocations in the trace, job made 1"
fi

((fails == 0)) && echo "fds: all passed" || echo "fds: $fails failed"
((fails == 0))
