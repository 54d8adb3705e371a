#!/usr/bin/env bash
# The demo behind `make demo`: trace a training job and print the report.
# On a machine with a GPU driver (libcuda.so.1 loadable) it traces the real
# simulated-trainer-shaped job against the real driver; without one it uses the
# project's simulated driver (tests/simdriver), which makes out-of-memory real.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$build/bin/vramtrace
trainer=$build/samples/trainer/vt-trainer
out=${VRAMTRACE_DEMO_DIR:-$build/demo-trace}

driver=()
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
	echo "demo: real driver found: tracing against it"
else
	export VT_SIM_CAPACITY=${VT_SIM_CAPACITY:-4G}
	driver=(--simulated-driver)
	echo "demo: no GPU driver here: using the simulated driver (capacity $VT_SIM_CAPACITY)"
fi
rm -rf "$out"
# A Keras-style job: the whole 1 GiB dataset uploaded once, 3 dense layers,
# Adam, prefetch 2, 20 steps with step markers.
"$bin" run "${driver[@]}" -o "$out" -- "$trainer" --dataset whole --dataset-bytes 1G --batch-bytes 8M \
	--layers 3 --layer-bytes 64M --optimizer adam --prefetch 2 --steps 20 --markers
echo
"$bin" report "$out"
