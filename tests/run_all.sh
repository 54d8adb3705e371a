#!/usr/bin/env bash
# The project's test command (README, .ci/run): the normal build's whole
# suite, then the sanitizer builds on the tests labelled for them:
#   label "asan": run again under ASan+UBSan (analyzer, writer, hostile logs)
#   label "tsan": run again under TSan (the writer and the shim's threads)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=${JOBS:-$(nproc)}

stage() { printf '\n== %s\n' "$*"; }

stage "tests ($build)"
ctest --test-dir "$build" --output-on-failure -j"$jobs"

if [[ ${VT_SKIP_SANITIZERS:-0} != 1 ]]; then
	for san in address thread; do
		dir=build-${san/address/asan}; dir=${dir/thread/tsan}
		label=${san/address/asan}; label=${label/thread/tsan}
		stage "sanitizer build: $san ($dir, tests labelled $label)"
		cmake -S . -B "$dir" -G Ninja -DVT_SANITIZE="$san" -DCMAKE_BUILD_TYPE=Debug \
			-DVT_WERROR="${VT_WERROR:-OFF}" >/dev/null
		cmake --build "$dir" -j"$jobs"
		ctest --test-dir "$dir" --output-on-failure -j"$jobs" -L "^$label\$"
	done
fi
