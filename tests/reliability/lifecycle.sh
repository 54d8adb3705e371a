#!/usr/bin/env bash
# Process lifecycle under `vramtrace run`. Each scenario of
# vt-rel-lifecycle runs once; the trace (read with `vramtrace dump`, which
# must not warn) must hold exactly what the job says it did, per process.
#   lifecycle.sh VRAMTRACE LIFECYCLE_JOB DLCYCLE_LIB SLOW_READLINK_LIB
#                HEAP_CALLS_LIB WORKDIR
set -u
vt=$1 job=$2 dllib=$3 slowlib=$4 heaplib=$5 work=$6
rm -rf "$work"
mkdir -p "$work"
fails=0
fail() { echo "FAIL [$name]: $*"; fails=$((fails + 1)); }

# run NAME ARGS...: the job under vramtrace run; dump into $work/NAME.txt
run() {
	name=$1
	shift
	echo "== $name: $*"
	timeout -s KILL 60 "$vt" run -o "$work/$name" -- "$job" "$@" >"$work/$name.out" 2>"$work/$name.err"
	rc=$?
	cat "$work/$name.out"
	((rc == 0)) || { fail "job exit $rc: $(grep -v 'trace in' "$work/$name.err" | head -3)"; return 1; }
	"$vt" dump "$work/$name" >"$work/$name.txt" 2>"$work/$name.dumperr" || fail "dump exit $?"
	[[ -s $work/$name.dumperr ]] && fail "dump warned: $(head -2 "$work/$name.dumperr")"
	return 0
}
# count KIND PID [BYTES]: records of KIND by PID (of that size)
count() {
	awk -v k="$1" -v p="pid=$2" -v b="${3:+bytes=$3}" \
		'$1 == k && $2 == p && (b == "" || index($0, " " b " ")) { n++ } END { print n + 0 }' "$work/$name.txt"
}
# logs: "pid exec_index state" per log
logs() { sed -n 's/^log .* pid=\([0-9]*\) ppid=[0-9]* exec_index=\([0-9]*\) .*state=\([a-z]*\).*/\1 \2 \3/p' "$work/$name.txt"; }
field() { sed -n "s/.*$1 \\([0-9]*\\).*/\\1/p" "$work/$name.out" | head -1; }

# fork while other threads record: every child its own complete log
if run fork fork 5; then
	parent=$(logs | awk '$2 == 0 { print $1; exit }')
	rounds=$(sed -n 's/.*parent rounds \([0-9]*\).*/\1/p' "$work/$name.out")
	[[ $(logs | wc -l) == 6 ]] || fail "$(logs | wc -l) logs, want 6"
	[[ $(count alloc "$parent" 768) == "$rounds" ]] || fail "parent: $(count alloc "$parent" 768) allocs, job did $rounds"
	[[ $(count free "$parent") == "$rounds" ]] || fail "parent: $(count free "$parent") frees, job did $rounds"
	while read -r pid idx state; do
		[[ $pid == "$parent" ]] && continue
		[[ $state == exited ]] || fail "child $pid: state $state"
		[[ $(count mark "$pid") == 10 ]] || fail "child $pid: $(count mark "$pid") marks, want 10"
		[[ $(count alloc "$pid") == 0 ]] || fail "child $pid: events it did not make"
	done < <(logs)
fi

# posix_spawn, vfork + exec, fork + exec children that use the driver
if run spawn spawn 7; then
	[[ $(logs | wc -l) == 4 ]] || fail "$(logs | wc -l) logs, want 4"
	for pid in $(sed -n 's/^child \([0-9]*\):.*/\1/p' "$work/$name.out"); do
		for i in 1 2 3 4 5 6 7; do
			[[ $(count alloc "$pid" $((4096 * i))) == 1 ]] || fail "child $pid: alloc of $((4096 * i)) bytes"
		done
		[[ $(count free "$pid") == 7 ]] || fail "child $pid: $(count free "$pid") frees"
		[[ $(logs | awk -v p="$pid" '$1 == p { print $3 }') == exited ]] || fail "child $pid: state"
	done
fi

# an exec chain: one log per image, EXECED until the last
if run exec_chain exec-chain 3; then
	pid=$(logs | awk 'NR == 1 { print $1 }')
	[[ $(logs | tr '\n' ' ') == "$pid 0 execed $pid 1 execed $pid 2 execed $pid 3 exited " ]] ||
		fail "logs: $(logs | tr '\n' ' ')"
	for img in 0 1 2 3; do
		mib=$((3 - img + 1))
		n=$(awk -v want="exec_index=$img" -v b="bytes=$((mib << 20))" \
			'/^log / { cur = index($0, " " want " ") } cur && $1 == "alloc" && index($0, " " b " ") { n++ } END { print n + 0 }' \
			"$work/$name.txt")
		[[ $n == 1 ]] || fail "image $img: $n allocations of $mib MiB"
	done
fi

# a library that dlopens the driver, used and dlclosed 20 times
if run dlopen_cycle dlopen-cycle 20 "$dllib"; then
	pid=$(logs | awk 'NR == 1 { print $1 }')
	[[ $(count alloc "$pid" 20480) == 20 && $(count free "$pid") == 20 ]] ||
		fail "$(count alloc "$pid" 20480) allocs, $(count free "$pid") frees, want 20 each"
fi

# allocations inside a signal handler that interrupts the shim's own work
if run signal_alloc signal-alloc 300; then
	pid=$(logs | awk 'NR == 1 { print $1 }')
	made=$(sed -n 's/.*: \([0-9]*\) handler allocations.*/\1/p' "$work/$name.out")
	seen=$(count alloc "$pid" 198912)
	dropped=$(sed -n 's/^log .* dropped=\([0-9]*\) .*/\1/p' "$work/$name.txt")
	echo "   handler allocations: $made made, $seen recorded, $dropped dropped and counted"
	((seen + dropped >= made && seen <= made)) || fail "$made handler allocations, $seen recorded, $dropped counted as dropped"
fi

# the same handler while its thread creates the log (slowed down to 50 ms so
# the signals surely land then): the job finishes, and every handler call is
# either recorded or counted as dropped
if LD_PRELOAD=$slowlib run signal_at_open signal-at-open 0; then
	pid=$(logs | awk 'NR == 1 { print $1 }')
	made=$(sed -n 's/.*: \([0-9]*\) handler allocations.*/\1/p' "$work/$name.out")
	seen=$(count alloc "$pid" 198912)
	dropped=$(sed -n 's/^log .* dropped=\([0-9]*\) .*/\1/p' "$work/$name.txt")
	echo "   handler allocations: $made made, $seen recorded, $dropped dropped and counted"
	# dropped > 0: some handler calls did land while the log was being made
	((made > 0 && dropped > 0 && seen + dropped >= made && seen <= made)) ||
		fail "$made handler allocations, $seen recorded, $dropped counted as dropped"
fi

# dlsym from a signal handler interrupting the shim or a driver call
if run dlsym_signal dlsym-signal 300; then
	pid=$(logs | awk 'NR == 1 { print $1 }')
	rounds=$(sed -n 's/.*rounds \([0-9]*\).*/\1/p' "$work/$name.out")
	[[ $(count alloc "$pid" 768) == "$rounds" ]] || fail "$(count alloc "$pid" 768) allocs, job did $rounds"
fi

# the shim's own failed lookups (no NVML here, absent entry points) leave
# nothing in the job's dl state: a later dlsym of the job touches no heap
# (one that does cannot run in a signal handler) and dlerror() is empty
if LD_PRELOAD=$heaplib run dl_state dl-state 4; then
	[[ $(grep -c ': lookup found, 0 heap calls, dlerror empty$' "$work/$name.out") == 2 ]] ||
		fail "the shim left dl state behind: $(grep -v ', 0 heap calls, dlerror empty$' "$work/$name.out" | head -2)"
fi

echo "lifecycle: $fails failures"
((fails == 0)) && rm -rf "$work" && echo PASS
((fails == 0))
