#!/usr/bin/env bash
# samples/gpu/check.sh --dry-run on this machine (no GPU): the driver job on
# the simulated driver must give the exact numbers below in both modes, the
# framework jobs must fail early and identically with and without vramtrace.
#
#   tests/gpu_kit/dry_run_test.sh BUILD_DIR [OUT_DIR]      exit 0 pass, 1 fail, 77 skip
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd) || exit 2
out=${2:-$build/tests/gpu_kit/dry-run}
if [[ $("$build/bin/vramtrace" run 2>&1) == *"not built into this version"* ]]; then
	echo "SKIPPED: this build has no 'vramtrace run' yet"
	exit 77
fi
rm -rf "$out" "$out.work"
bash "$repo/samples/gpu/check.sh" --dry-run --no-build --build "$build" -o "$out" --budget 300
status=$?
[[ -f $out/summary.md ]] || { echo "FAIL: no summary.md (check.sh exit $status)"; exit 1; }
((status == 0)) || { echo "FAIL: check.sh --dry-run exit $status"; exit 1; }
exec python3 "$repo/tests/gpu_kit/expect_dry_run.py" "$out"
