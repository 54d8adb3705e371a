#!/usr/bin/env bash
# run_client.sh VRAMTRACE VERIFY WORKDIR NAME [--logs N] -- CLIENT ARGS...
# Runs CLIENT plain and under `vramtrace run`: stdout and exit code must be
# identical, and the trace must hold every call of the client's truth file
# exactly once (vt-verify-trace).
set -euo pipefail
vramtrace=$1 verify=$2 work=$3 name=$4
shift 4
verify_args=()
while [[ $1 != -- ]]; do verify_args+=("$1"); shift; done
shift
dir=$work/$name
rm -rf "$dir" "$dir.trace"
mkdir -p "$dir"

set +e
"$@" >"$dir/plain.out" 2>"$dir/plain.err"
plain_rc=$?
VT_TEST_TRUTH=$dir/truth "$vramtrace" run -o "$dir.trace" -- "$@" >"$dir/traced.out" 2>"$dir/traced.err"
traced_rc=$?
set -e

cat "$dir/traced.err" >&2
if [[ $plain_rc != "$traced_rc" ]]; then
	echo "FAIL: exit code $plain_rc plain, $traced_rc under vramtrace run" >&2
	exit 1
fi
if ! cmp -s "$dir/plain.out" "$dir/traced.out"; then
	echo "FAIL: stdout differs under vramtrace run" >&2
	diff "$dir/plain.out" "$dir/traced.out" >&2 || true
	exit 1
fi
grep -q "vramtrace: trace in $dir.trace" "$dir/traced.err" || { echo "FAIL: no summary line" >&2; exit 1; }
# ... saying what recording cost the job, by the shim's own measure (threads
# that ran at once may sum past the job's span: the line then says so)
grep -Eq "vramtrace: trace in $dir.trace: .* events; vramtrace's own time [0-9.]+ ms( summed over threads and processes \(more than the [0-9.]+ ms the job ran: they ran at once\))?; job exit" \
	"$dir/traced.err" || { echo "FAIL: the summary line has no recording cost" >&2; exit 1; }
[[ -f $dir.trace/run.json ]] || { echo "FAIL: no run.json" >&2; exit 1; }
grep -q "\"exit_code\": $plain_rc" "$dir.trace/run.json" || { echo "FAIL: run.json exit code" >&2; exit 1; }
"$verify" "$dir.trace" "$dir/truth" "${verify_args[@]}"
# The log itself must carry the job's exit status too (the analyzer reads it
# from there when run.json is absent, e.g. a job preloaded by hand).
header=$("$vramtrace" dump "$dir.trace" | grep '^log ') # whole output: no SIGPIPE under pipefail
if ! grep -q "state=exited exit_code=$plain_rc " <<<"$header"; then
	echo "FAIL: the log's state word does not say exited with code $plain_rc" >&2
	echo "$header" >&2
	exit 1
fi
