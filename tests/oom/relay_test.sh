#!/usr/bin/env bash
# The stderr relay, pipe and terminal: every byte the job writes reaches the
# launcher's stderr unchanged, the job sees a terminal exactly when the
# launcher has one, and each framework OOM message becomes a mark with its
# parsed size in the launcher's log.
#   relay_test.sh RELAY_RUNNER OOM_TALKER VRAMTRACE WORKDIR [--through-run]
# --through-run also checks the same through `vramtrace run`: the shim is
# preloaded there, so that part is not run in sanitizer builds (a sanitized
# shim cannot be preloaded into the job).
set -u
runner=$1 talker=$2 vt=$3 work=$4 through_run=${5:-}
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

"$talker" --expected >"$work/expected.bin" || fail "talker --expected"

# The marks a trace must hold: launcher mark, then the four OOM lines.
check_marks() { # DIR
	"$vt" dump "$1" >"$1.dump" || fail "dump $1"
	grep -q '^mark .* kind=launcher value=[1-9][0-9]* text="stderr relay of pid [0-9]*"' "$1.dump" ||
		fail "launcher mark in $1: $(grep '^mark' "$1.dump")"
	local got
	got=$(grep -o 'kind=framework_oom value=[0-9]*' "$1.dump" | cut -d= -f3 | tr '\n' ' ')
	[[ $got == "1073741824 0 7406166528 2147483648 " ]] || fail "OOM mark sizes in $1: '$got'"
	grep -q 'kind=framework_oom value=1073741824 text="2026-12-02 16:00:00.000001: W tensorflow.*OOM when allocating tensor with shape\[262144,1024\]' "$1.dump" ||
		fail "TF mark text"
	grep -q '^log .*state=exited exit_code=0' "$1.dump" || fail "launcher log not finished"
}

# ---- pipe: the launcher's stderr is a file ---------------------------------
"$runner" "$work/pipe" "$talker" "$work/pipe.isatty" >"$work/pipe.out" 2>"$work/pipe.err" ||
	fail "runner (pipe) exit $?"
cat "$work/pipe.out"
grep -q '^mode=pipe ' "$work/pipe.out" || fail "mode: $(cat "$work/pipe.out")"
cmp "$work/expected.bin" "$work/pipe.err" || fail "pipe: stderr bytes differ"
[[ $(cat "$work/pipe.isatty") == isatty=0 ]] || fail "pipe: job saw a terminal"
check_marks "$work/pipe"

# ---- pty: the launcher's stderr is a terminal (util-linux script) ----------
# stty -opost: the outer terminal passes bytes as they come, so what `script`
# records is exactly what the launcher wrote to its terminal.
script -qefc "stty -opost rows 33 cols 111; '$runner' '$work/pty' '$talker' '$work/pty.isatty' >'$work/pty.out'" \
	/dev/null </dev/null >"$work/pty.err" || fail "runner (pty) exit $?"
cat "$work/pty.out"
grep -q '^mode=pty ' "$work/pty.out" || fail "mode: $(cat "$work/pty.out")"
cmp "$work/expected.bin" "$work/pty.err" || fail "pty: terminal bytes differ"
[[ $(cat "$work/pty.isatty") == "isatty=1 rows=33 cols=111" ]] ||
	fail "pty: job did not see the terminal and its size: $(cat "$work/pty.isatty")"
check_marks "$work/pty"
# With the terminal's default settings (output processing on), the terminal
# shows the same bytes as when the job writes to it directly: the relay's pty
# must not translate newlines a second time.
script -qefc "'$talker' '$work/direct.isatty'" /dev/null </dev/null >"$work/direct.tty" ||
	fail "talker under script"
script -qefc "'$runner' '$work/pty2' '$talker' '$work/pty2.isatty' >'$work/pty2.out'" \
	/dev/null </dev/null >"$work/pty2.tty" || fail "runner (pty, default settings)"
grep -q '^mode=pty ' "$work/pty2.out" || fail "mode: $(cat "$work/pty2.out")"
cmp "$work/direct.tty" "$work/pty2.tty" || fail "pty: terminal output differs from the job's own"
cmp -s "$work/direct.tty" "$work/expected.bin" && fail "the terminal did not translate newlines (test is blind)"

# ---- the same through `vramtrace run` (the shim preloaded) -----------------
# The job's bytes come first, unchanged, then the launcher's summary line.
if [[ $through_run == --through-run ]]; then
n=$(stat -c %s "$work/expected.bin")
"$vt" run -o "$work/run_pipe" -- "$talker" "$work/run_pipe.isatty" 2>"$work/run_pipe.err" ||
	fail "vramtrace run (pipe) exit $?"
cmp -n "$n" "$work/expected.bin" "$work/run_pipe.err" || fail "run pipe: stderr bytes differ"
tail -c +$((n + 1)) "$work/run_pipe.err" | grep -q '^vramtrace: trace in ' || fail "run pipe: summary"
[[ $(cat "$work/run_pipe.isatty") == isatty=0 ]] || fail "run pipe: job saw a terminal"
check_marks "$work/run_pipe"
script -qefc "'$vt' run -o '$work/run_pty' -- '$talker' '$work/run_pty.isatty'" \
	/dev/null </dev/null >"$work/run_pty.tty" || fail "vramtrace run (pty) exit $?"
n=$(stat -c %s "$work/direct.tty")
cmp -n "$n" "$work/direct.tty" "$work/run_pty.tty" || fail "run pty: terminal bytes differ"
[[ $(cat "$work/run_pty.isatty") == isatty=1* ]] || fail "run pty: job did not see a terminal"
check_marks "$work/run_pty"
fi

# ---- off: no relay, no launcher log ----------------------------------------
VRAMTRACE_RELAY=0 "$runner" "$work/off" "$talker" "$work/off.isatty" >"$work/off.out" 2>"$work/off.err" ||
	fail "runner (off)"
grep -q '^mode=off ' "$work/off.out" || fail "mode off"
cmp "$work/expected.bin" "$work/off.err" || fail "off: bytes differ"
[[ -z $(ls "$work/off") ]] || fail "off: a log was written"

# ---- exit codes pass through; a job with no OOM text leaves no log ---------
"$runner" "$work/quiet" sh -c 'echo hello >&2; exit 7' >/dev/null 2>"$work/quiet.err"
[[ $? == 7 ]] || fail "exit code"
[[ $(cat "$work/quiet.err") == hello ]] || fail "quiet bytes"
[[ -z $(ls "$work/quiet") ]] || fail "quiet: a log was written"

echo "PASS"
rm -rf "$work"
