#!/usr/bin/env bash
# A job that never called the driver: `report` says so in one line (exit 1),
# rather than that the directory holds no logs.
#   no_cuda_check.sh VRAMTRACE WORK_DIR
set -euo pipefail
vt=$1 work=$2
rm -rf "$work"
"$vt" run -o "$work" -- true 2>/dev/null
rc=0; err=$("$vt" report "$work" 2>&1) || rc=$?
[[ $rc == 1 ]] || { echo "FAIL: report exit $rc, want 1"; exit 1; }
[[ $err == *"the job made no CUDA calls"* && $(printf '%s\n' "$err" | wc -l) == 1 ]] ||
	{ echo "FAIL: '$err'"; exit 1; }
mkdir -p "$work-empty"
err=$("$vt" report "$work-empty" 2>&1) || true
[[ $err == *"no vramtrace logs"* ]] || { echo "FAIL: empty dir: '$err'"; exit 1; }
echo "no CUDA calls: ok"
