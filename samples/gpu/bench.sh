#!/usr/bin/env bash
# The recording and analyzer benchmarks (bench_record, bench_analyzer: the
# "record" and "analyzer" rows of `make bench`) from the carried binaries, on
# a machine that cannot build them:
#
#   samples/gpu/bench.sh [CARRY]     (CARRY defaults to REPO/gpu-carry)
#
# Recording is timed on the simulated driver, as `make bench` does here, not
# on the machine's GPU (overhead.py times the real driver): the same rows on
# another CPU. Prints one table; heaptrack's rows say n/a where it is
# missing. The analyzer's 100 M-event case needs 2.6 GiB free in /tmp.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
carry=$(cd "${1:-$repo/gpu-carry}" && pwd)
for f in bin/bench_record bin/bench_analyzer lib/libvramtrace.so bench/simdriver/libcuda.so.1 \
	bench/null_driver/libcuda.so.1 bench/libbench_lockcount.so; do
	[[ -e $carry/$f ]] || { echo "bench.sh: $carry/$f missing (run samples/gpu/prepare_carry.sh)" >&2; exit 2; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ln -s "$carry/bin/bench_analyzer" "$dir/bench_analyzer"
ln -s "$carry/bin/bench_record" "$dir/bench_record"
VT_BENCH_SHIM=$carry/lib/libvramtrace.so \
	VT_BENCH_SIMDRIVER_DIR=$carry/bench/simdriver \
	VT_BENCH_NULLDRIVER_DIR=$carry/bench/null_driver \
	VT_BENCH_LOCKCOUNT=$carry/bench/libbench_lockcount.so \
	bash "$repo/bench/run_all.sh" "$dir"
