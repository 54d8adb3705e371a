#!/usr/bin/env bash
# Hostile environment: the job must run to completion with
# the output and exit code it has without vramtrace, print at most one
# vramtrace warning line, and leave either no log or a valid one (marked
# truncated when a size cap stopped it), never a damaged one.
#   hostile_env.sh VRAMTRACE SHIM STRESS_CLIENT KILL_HARNESS WORKDIR
# (LD_LIBRARY_PATH must name the simulated driver.)
set -u
vt=$1 shim=$2 job=$3 harness=$4 work=$5
rm -rf "$work"
mkdir -p "$work"
export VT_JOB_THREADS=6 VT_JOB_PER_THREAD=300
fails=0 cases=0
fail() { echo "FAIL [$name]: $*"; sed 's/^/    stderr: /' "$work/err" | head; fails=$((fails + 1)); }

plain_out=$("$job" 2>/dev/null)
plain_rc=$?
[[ $plain_rc == 0 && $plain_out == *ok* ]] || { echo "FAIL: the job fails without vramtrace"; exit 1; }

# expect_job NAME WARN_MAX CMD...: same stdout and exit code as plain; at most
# WARN_MAX vramtrace lines besides the launcher's summary
expect_job() {
	name=$1 warn_max=$2
	shift 2
	cases=$((cases + 1))
	local out rc warns
	out=$("$@" 2>"$work/err")
	rc=$?
	[[ $rc == "$plain_rc" ]] || { fail "exit $rc, plain $plain_rc"; return 1; }
	[[ $out == "$plain_out" ]] || { fail "output '$out', plain '$plain_out'"; return 1; }
	warns=$(grep '^vramtrace' "$work/err" | grep -vc '^vramtrace: trace in \|^vramtrace: peak ')
	((warns <= warn_max)) || { fail "$warns warning lines, at most $warn_max"; return 1; }
	return 0
}

# no_logs DIR: nothing that looks like a log was left
no_logs() {
	[[ -z $(find "$1" -name 'vramtrace.*.log' 2>/dev/null) ]] || fail "a log was written in $1"
}

# valid_trace DIR [truncated]: dump reads it with no warning; state and flag
valid_trace() {
	local head
	"$vt" dump "$1" >"$work/dump" 2>"$work/err" || { fail "dump exit $?"; return; }
	[[ -s $work/err ]] && { fail "dump warned: damaged log"; return; }
	head=$(head -1 "$work/dump")
	[[ $head == *state=exited\ exit_code=0* ]] || fail "log header: ${head:0:200}"
	if [[ ${2:-} == truncated ]]; then
		[[ $head == *truncated=yes* && $head != *dropped=0\ * ]] || fail "not marked truncated with drops"
	else
		[[ $head == *truncated=no* ]] || fail "marked truncated"
	fi
}

echo "== trace directory missing: created 0700, everything recorded"
d=$work/missing/a/b/c
expect_job missing_dir 0 env VRAMTRACE_DIR="$d" LD_PRELOAD="$shim" "$job" &&
	valid_trace "$d" && [[ $(stat -c %a "$d") == 700 ]] || fail "missing dir: mode $(stat -c %a "$d" 2>&1)"
[[ $(grep -c '^alloc ' "$work/dump") == $((VT_JOB_THREADS * VT_JOB_PER_THREAD)) ]] || fail "missing dir: alloc count"

echo "== a file where the trace directory should be"
: >"$work/a-file"
expect_job file_as_dir 1 env VRAMTRACE_DIR="$work/a-file" LD_PRELOAD="$shim" "$job"
expect_job file_as_parent 1 env VRAMTRACE_DIR="$work/a-file/sub" LD_PRELOAD="$shim" "$job"
[[ ! -s $work/a-file ]] || fail "the file was written to"
# the launcher refuses before starting the job: one line, exit 2
name=launcher_file_as_dir cases=$((cases + 1))
"$vt" run -o "$work/a-file" -- "$job" >"$work/out" 2>"$work/err"
rc=$?
[[ $rc == 2 && $(wc -l <"$work/err") == 1 && ! -s $work/out ]] || fail "launcher: exit $rc"

echo "== read-only trace directory (read-only bind mount, unshare -m)"
mkdir -p "$work/ro"
if unshare -m --propagation private bash -c "mount --bind '$work/ro' '$work/ro' && mount -o remount,ro,bind '$work/ro'" 2>/dev/null; then
	name=readonly_mount cases=$((cases + 1))
	out=$(unshare -m --propagation private bash -c '
		mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" || exit 99
		VRAMTRACE_DIR="$1" LD_PRELOAD="$2" "$3"' ro "$work/ro" "$shim" "$job" 2>"$work/err")
	rc=$?
	[[ $rc == 0 && $out == "$plain_out" ]] || fail "exit $rc, output '$out'"
	(($(grep -c '^vramtrace' "$work/err") <= 1)) || fail "more than one warning"
	no_logs "$work/ro"
	grep -q 'Read-only file system' "$work/err" || fail "the warning does not say why"
else
	echo "   unshare -m / mount not permitted here: SKIPPED"
fi

echo "== VRAMTRACE_DISABLE=1: nothing recorded, nothing created"
expect_job disable_preload 0 env VRAMTRACE_DISABLE=1 VRAMTRACE_DIR="$work/disabled" LD_PRELOAD="$shim" "$job"
[[ ! -e $work/disabled ]] || fail "disabled shim created $work/disabled"
expect_job disable_run 1 env VRAMTRACE_DISABLE=1 "$vt" run -o "$work/disabled-run" -- "$job"
no_logs "$work/disabled-run"

echo "== an older driver lacking entry points (VT_SIM_MISSING, VT_SIM_DRIVER_VERSION)"
missing=cuMemAllocAsync,cuMemFreeAsync,cuMemcpyBatchAsync,cuMemCreate,cuMemMap,cuMemAllocFromPoolAsync,cuMemPoolTrimTo
expect_job old_driver 0 env VT_SIM_MISSING=$missing VT_SIM_DRIVER_VERSION=12000 \
	"$vt" run -o "$work/old" -- "$job" && valid_trace "$work/old"
name=old_driver_counts cases=$((cases + 1))
VT_SIM_MISSING=$missing VT_SIM_DRIVER_VERSION=12000 "$harness" shim 0 6 300 "$work/old-h" \
	-- "$vt" run -o {DIR} -- "$job" >"$work/out" 2>"$work/err" || fail "exact counts: $(cat "$work/out")"
# no cuGetProcAddress at all: the job's getproc threads fail the same way
name=no_get_proc_address cases=$((cases + 1))
base_out=$(VT_SIM_MISSING=cuGetProcAddress "$job" 2>/dev/null)
base_rc=$?
out=$(VT_SIM_MISSING=cuGetProcAddress "$vt" run -o "$work/nogpa" -- "$job" 2>"$work/err")
rc=$?
[[ $rc == "$base_rc" && $out == "$base_out" ]] || fail "exit $rc/$base_rc, '$out' vs '$base_out'"
valid_trace_rc() { "$vt" dump "$1" >/dev/null 2>"$work/err" && [[ ! -s $work/err ]]; }
valid_trace_rc "$work/nogpa" || fail "trace damaged"

echo "== size cap reached (--max-size 1M): job unchanged, one warning, log truncated, valid"
export VT_JOB_PER_THREAD=3000
plain_out=$("$job" 2>/dev/null)
expect_job max_size 1 "$vt" run --max-size 1M -o "$work/cap" -- "$job" && valid_trace "$work/cap" truncated
grep -q 'size cap' "$work/err" 2>/dev/null || true
size=$(stat -c %s "$work"/cap/vramtrace.*.log)
((size <= 1048576)) || fail "log is $size bytes, cap 1 MiB"
# every record that made it is valid, each thread's events a gap-free
# prefix, and what is missing is counted as dropped in the header
name=max_size_prefix cases=$((cases + 1))
VT_KILL_ALLOW_TRUNCATION=1 "$harness" shim 0 6 3000 "$work/cap-h" -- "$vt" run --max-size 1M -o {DIR} -- "$job" \
	>"$work/out" 2>"$work/err" || fail "cap run: $(cat "$work/out")"
cat "$work/out"
grep -q 'dropped and counted' "$work/out" || fail "the cap dropped nothing?"

echo "hostile environment: $cases cases, $fails failures"
((fails == 0)) && rm -rf "$work" && echo PASS
((fails == 0))
