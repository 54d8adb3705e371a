#!/usr/bin/env bash
# `vramtrace run` and signals: a signal sent to the launcher alone reaches
# the job (and the launcher outlives it, its stderr going through the
# launcher); a --shm run whose launcher is killed says where its logs are,
# and one whose destination is full leaves no partial log there.
#   run_signals.sh VRAMTRACE FDS_JOB WORKDIR
# (LD_LIBRARY_PATH must name the simulated driver.)
set -u
vt=$1 job=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fails=0
fail() { echo "FAIL [$name]: $*"; fails=$((fails + 1)); }

# wait_for FILE TEXT: up to 10 s
wait_for() {
	for _ in $(seq 200); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# (not SIGQUIT: a script's background commands start with it ignored, and a
# shell cannot trap a signal ignored at its start)
for sig in USR1 USR2 ALRM TERM; do
	name=$sig
	echo "== SIG$sig to the launcher"
	"$vt" run -o "$work/$sig" -- sh -c "trap 'echo caught >&2; exit 7' $sig; echo ready >&2; "'
		i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done; exit 3' \
		2>"$work/$sig.err" &
	launcher=$!
	wait_for "$work/$sig.err" ready || fail "the job did not start"
	kill -s "$sig" $launcher
	wait $launcher
	rc=$?
	[[ $rc == 7 ]] || fail "run exit $rc, want the job's 7: $(head -3 "$work/$sig.err")"
	grep -q caught "$work/$sig.err" || fail "the job's last stderr line was not relayed"
done

# --shm, launcher SIGKILLed: run.json names the logs' directory and the
# launcher's pid; report says where the logs are
name=shm_stranded
echo "== --shm, launcher killed"
"$vt" run --shm -o "$work/shm" -- sh -c '"$0" big-malloc 1 && echo ready >&2 && sleep 0.5' "$job" \
	2>"$work/shm.err" &
launcher=$!
wait_for "$work/shm.err" ready || fail "the job did not start"
kill -KILL $launcher
wait $launcher 2>/dev/null
sleep 0.7
shm=/dev/shm/shm.$launcher
[[ -d $shm ]] || fail "no $shm"
grep -q "\"launcher_pid\": $launcher" "$work/shm/run.json" || fail "run.json lacks launcher_pid: $(cat "$work/shm/run.json")"
grep -q "\"log_dir\": \"$shm\"" "$work/shm/run.json" || fail "run.json lacks log_dir"
"$vt" report "$work/shm" >/dev/null 2>"$work/shm.report" && fail "report of an empty directory succeeded"
grep -qF "$shm" "$work/shm.report" || fail "report does not say where the logs are: $(cat "$work/shm.report")"
rm -rf "$shm"

# --shm, the destination full (the launcher may write only 64 KiB: the log
# is larger, and /dev/shm is another file system, so it is copied): no
# partial log in the trace directory, the log kept in /dev/shm, and said
name=shm_destination_full
echo "== --shm, destination full"
(
	trap '' XFSZ # the write fails with EFBIG instead of killing the launcher
	exec "$vt" run --shm -o "$work/full" -- sh -c '"$0" big-malloc 1 && echo ready >&2 && sleep 0.5' \
		"$job" 2>"$work/full.err"
) &
launcher=$!
wait_for "$work/full.err" ready || fail "the job did not start"
prlimit --fsize=65536 --pid $launcher || fail "prlimit"
wait $launcher
rc=$?
shm=/dev/shm/full.$launcher
grep -q "could not be moved" "$work/full.err" || fail "the launcher did not say: $(cat "$work/full.err")"
ls "$work"/full/vramtrace.* >/dev/null 2>&1 && fail "a partial log in the trace directory: $(ls "$work/full")"
ls "$shm"/vramtrace.*.log >/dev/null 2>&1 || fail "the log is not kept in $shm (rc $rc)"
"$vt" report "$work/full" >/dev/null 2>"$work/full.report" && fail "report read an empty trace as complete"
rm -rf "$shm"

# the launcher SIGKILLed while the job runs: the job's later stderr writes
# still reach the launcher's stderr, and the job exits 0 (not by SIGPIPE)
name=launcher_killed
echo "== launcher SIGKILLed, the job writes to stderr after"
"$vt" run -o "$work/killed" -- sh -c 'sh -c '"'"'echo ready >&2; sleep 0.5
	i=0; while [ $i -lt 100 ]; do echo "line $i" >&2; i=$((i + 1)); done'"'"'; echo $? >"$0"' \
	"$work/killed.status" 2>"$work/killed.err" &
launcher=$!
wait_for "$work/killed.err" ready || fail "the job did not start"
kill -KILL $launcher
wait $launcher 2>/dev/null
for _ in $(seq 100); do
	[[ -s $work/killed.status ]] && break
	sleep 0.1
done
status=$(cat "$work/killed.status" 2>/dev/null)
[[ $status == 0 ]] || fail "the job's writer exited '${status:-never}', want 0 (141: SIGPIPE)"
sleep 0.2
[[ $(grep -c '^line ' "$work/killed.err") == 100 ]] ||
	fail "$(grep -c '^line ' "$work/killed.err") of the job's 100 lines after the kill reached stderr"

# --shm, a worker that outlives the job's main process: its log is left in
# /dev/shm (not taken half-written into the trace and unlinked), the launcher
# says where, and once the worker ends that log is whole
name=shm_orphan
echo "== --shm, a worker outlives the job"
"$vt" run --shm -o "$work/orphan" -- sh -c '"$0" linger 3000 & sleep 0.3' "$job" \
	2>"$work/orphan.err"
launcher_rc=$?
[[ $launcher_rc == 0 ]] || fail "run exit $launcher_rc: $(cat "$work/orphan.err")"
shm=$(sed -n 's/.* in \(\/dev\/shm\/[^ ]*\) still being written.*/\1/p' "$work/orphan.err")
[[ -n $shm && -d $shm ]] || fail "the launcher did not say where the live log is: $(cat "$work/orphan.err")"
for _ in $(seq 100); do
	grep -qs state=exited <("$vt" dump "$shm" 2>/dev/null) && break
	sleep 0.1
done
if [[ -n $shm ]]; then
	"$vt" dump "$shm" >"$work/orphan.dump" 2>&1
	grep -q '^log .*state=exited' "$work/orphan.dump" || fail "the worker's log was not finished in $shm"
	[[ $(grep -c '^alloc ' "$work/orphan.dump") == 2 ]] ||
		fail "the worker's log lacks its allocations: $(grep -c '^alloc ' "$work/orphan.dump") of 2"
	rm -rf "$shm"
fi
for f in "$work/orphan"/vramtrace.*; do
	[[ -e $f ]] || continue
	[[ $f == *.tmp ]] && fail "a partial copy is left: $f"
	"$vt" dump "$f" 2>&1 | grep -q '^log .*state=running' && fail "a live log was taken into the trace: $f"
done

((fails == 0)) && echo "run_signals: all passed" || echo "run_signals: $fails failed"
((fails == 0))
