#!/usr/bin/env bash
# run_no_driver.sh VRAMTRACE WORKDIR CUDA_CLIENT
# Jobs that never load a driver run unchanged under `vramtrace run` (same
# stdout, same exit code, no log written); exit codes and signals pass
# through; --shm, --per-tensor and VRAMTRACE_DISABLE behave.
set -uo pipefail
vramtrace=$1 work=$2 client=$3
rm -rf "$work"; mkdir -p "$work"
fail=0
n=0

same() { # same CMD...: stdout and exit code equal with and without the shim
	n=$((n + 1))
	local plain traced prc trc
	plain=$("$@" 2>/dev/null); prc=$?
	traced=$("$vramtrace" run -o "$work/t$n" -- "$@" 2>"$work/t$n.err"); trc=$?
	if [[ $plain != "$traced" || $prc != "$trc" ]]; then
		echo "FAIL: '$*': rc $prc/$trc, stdout '$plain' / '$traced'" >&2
		fail=1
	fi
	if compgen -G "$work/t$n/*.log" >/dev/null; then
		echo "FAIL: '$*' left a log without touching the driver" >&2
		fail=1
	fi
}

same /bin/true
same python3 -c pass
same python3 -c 'import sys; print("hello"); sys.exit(3)'
same sh -c 'printf "a b\nc d\n" | tr a-z A-Z | sort -r | cat'
same sh -c 'exit 42'
same sh -c 'ls /nonexistent-vramtrace-dir'

# a job killed by a signal: 128 + signal, and run.json says which
"$vramtrace" run -o "$work/killed" -- sh -c 'kill -TERM $$' 2>/dev/null
rc=$?
[[ $rc == 143 ]] || { echo "FAIL: killed job: rc $rc, want 143" >&2; fail=1; }
grep -q '"signal": 15' "$work/killed/run.json" || { echo "FAIL: run.json lacks the signal" >&2; fail=1; }

# SIGTERM to the launcher reaches the job
"$vramtrace" run -o "$work/forward" -- sleep 30 2>/dev/null &
launcher=$!
for _ in $(seq 50); do [[ -f $work/forward/run.json ]] && break; sleep 0.1; done # the job has started
kill -TERM $launcher
wait $launcher
rc=$?
[[ $rc == 143 ]] || { echo "FAIL: forwarded SIGTERM: rc $rc, want 143" >&2; fail=1; }

# the environment the job sees
env_of() { "$vramtrace" run -o "$work/$1" "${@:2}" -- sh -c 'env' 2>/dev/null; }
out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 env_of env1 --per-tensor --stack-depth 16 --max-size 64M)
for want in TF_GPU_ALLOCATOR=cuda_malloc_async XLA_PYTHON_CLIENT_ALLOCATOR=platform \
	PYTORCH_NO_CUDA_MEMORY_CACHING=1 VRAMTRACE_STACK_DEPTH=16 VRAMTRACE_MAX_SIZE=64M \
	"VRAMTRACE_DIR=$(cd "$work/env1" && pwd)"; do
	grep -qxF "$want" <<<"$out" || { echo "FAIL: job env lacks $want" >&2; fail=1; }
done
grep -qE '^LD_PRELOAD=/.*/libvramtrace\.so:/lib/x86_64-linux-gnu/libc\.so\.6$' <<<"$out" ||
	{ echo "FAIL: LD_PRELOAD not prepended: $(grep LD_PRELOAD <<<"$out")" >&2; fail=1; }
# a sanitizer runtime already preloaded stays first (ASan insists)
out=$(LD_PRELOAD="/nonexistent/libasan.so.8 /lib/x86_64-linux-gnu/libc.so.6" env_of env2)
grep -qE '^LD_PRELOAD=/nonexistent/libasan\.so\.8:/.*/libvramtrace\.so:/lib/x86_64-linux-gnu/libc\.so\.6$' <<<"$out" ||
	{ echo "FAIL: sanitizer runtime not kept first: $(grep LD_PRELOAD <<<"$out")" >&2; fail=1; }
grep -q '"mode": "per-tensor"' "$work/env1/run.json" || { echo "FAIL: run.json mode" >&2; fail=1; }
[[ $(stat -c %a "$work/env1") == 700 ]] || { echo "FAIL: trace dir not 0700" >&2; fail=1; }

# --shm: logs are written under /dev/shm and moved into the trace
out=$("$vramtrace" run --shm -o "$work/shm" -- sh -c 'echo "$VRAMTRACE_DIR"' 2>/dev/null)
[[ $out == /dev/shm/* ]] || { echo "FAIL: --shm dir is '$out'" >&2; fail=1; }
[[ ! -e $out ]] || { echo "FAIL: --shm left $out behind" >&2; fail=1; }

# bad options: one clear line and where the help is, exit 2
"$vramtrace" run --max-size lots -- /bin/true 2>"$work/bad.err"
rc=$?
[[ $rc == 2 && $(wc -l <"$work/bad.err") == 2 && $(tail -1 "$work/bad.err") == "Try 'vramtrace run --help'"* ]] || { echo "FAIL: bad option: rc $rc" >&2; cat "$work/bad.err" >&2; fail=1; }
"$vramtrace" run -o "$work/nocmd" 2>/dev/null
[[ $? == 2 ]] || { echo "FAIL: no command accepted" >&2; fail=1; }

# VRAMTRACE_DISABLE=1: a driver job runs unchanged and nothing is recorded
plain=$("$client" --count 2); prc=$?
traced=$(VRAMTRACE_DISABLE=1 "$vramtrace" run -o "$work/disabled" -- "$client" --count 2 2>/dev/null); trc=$?
[[ $plain == "$traced" && $prc == "$trc" ]] || { echo "FAIL: VRAMTRACE_DISABLE changed the job" >&2; fail=1; }
! compgen -G "$work/disabled/*.log" >/dev/null || { echo "FAIL: VRAMTRACE_DISABLE recorded" >&2; fail=1; }
# ... and without it the same job is recorded (the check above can fail)
"$vramtrace" run -o "$work/enabled" -- "$client" --count 2 >/dev/null 2>&1
compgen -G "$work/enabled/*.log" >/dev/null || { echo "FAIL: driver job not recorded" >&2; fail=1; }

# an unusable trace directory: the driver job runs unchanged, one warning line
shim=$(dirname "$(dirname "$vramtrace")")/lib/libvramtrace.so
traced=$(LD_PRELOAD=$shim VRAMTRACE_DIR=/proc/vramtrace-cannot-be-here "$client" --count 2 2>"$work/nodir.err"); trc=$?
[[ $plain == "$traced" && $prc == "$trc" ]] || { echo "FAIL: unusable trace dir changed the job" >&2; fail=1; }
[[ $(wc -l <"$work/nodir.err") -le 1 ]] || { echo "FAIL: more than one warning line:" >&2; cat "$work/nodir.err" >&2; fail=1; }

exit $fail
