#!/usr/bin/env bash
# samples/gpu/prepare_carry.sh makes binaries for a machine that cannot build
# (the GPU machine): they must carry every non-glibc library, find it through
# RPATH $ORIGIN, and trace a job from there (here: the driver job on the
# simulated driver).
#
#   tests/gpu_kit/carry_test.sh BUILD_DIR OUT_DIR      exit 0 pass, 1 fail, 77 skip
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd) || exit 2
out=${2:-$build/tests/gpu_kit/carry}
sim=$build/tests/simdriver
fail() { echo "FAIL: $*"; exit 1; }
if [[ $("$build/bin/vramtrace" run 2>&1) == *"not built into this version"* ]]; then
	echo "SKIPPED: this build has no 'vramtrace run' yet"
	exit 77
fi
[[ -f $sim/libcuda.so.1 ]] || fail "the simulated driver $sim/libcuda.so.1 is not built"
mkdir -p "$out"
rm -rf "$out/gpu-carry" "$out/trace"
bash "$repo/samples/gpu/prepare_carry.sh" "$out/gpu-carry" "$out/build-carry" || fail "prepare_carry.sh failed"
carry=$out/gpu-carry
# Every library the binaries need, beyond glibc, lies beside them.
for file in "$carry/bin/vramtrace" "$carry/bin/bench_record" "$carry/bin/bench_analyzer" \
	"$carry/lib/libvramtrace.so"; do
	for lib in $(ldd "$file" | awk '$3 ~ /^\// {print $1}'); do
		[[ $lib =~ ^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.) ]] && continue
		[[ -f $carry/lib/$lib ]] || fail "$(basename "$file") needs $lib, which is not carried"
	done
done
readelf -d "$carry/bin/vramtrace" | grep 'RPATH.*\$ORIGIN/../lib' >/dev/null || fail "bin/vramtrace has no RPATH \$ORIGIN/../lib"
readelf -d "$carry/lib/libvramtrace.so" | grep 'RPATH.*\$ORIGIN' >/dev/null || fail "libvramtrace.so has no RPATH \$ORIGIN"
grep -q '^needs: GLIBC_' "$carry/MANIFEST" || fail "MANIFEST does not say which glibc it needs"

# The carried launcher must load the carried libraries, not the system's.
LD_DEBUG=libs "$carry/bin/vramtrace" --help 2>"$out/ld-debug.log" >/dev/null || fail "carried vramtrace does not start"
for lib in "$carry"/lib/*.so.*; do
	name=$(basename "$lib")
	ldd "$carry/bin/vramtrace" | grep "^[[:space:]]*$name " >/dev/null || continue
	grep -qE "calling init: $carry/(bin/\.\./)?lib/$name" "$out/ld-debug.log" ||
		fail "the carried $name was not the one loaded"
done

LD_LIBRARY_PATH=$sim PYTHONDONTWRITEBYTECODE=1 "$carry/bin/vramtrace" run -o "$out/trace" -- \
	python3 "$repo/samples/frameworks/driver_ctypes.py" >"$out/job.stdout" 2>"$out/job.stderr" ||
	fail "the driver job under the carried vramtrace: $(tail -1 "$out/job.stderr")"
grep -q '^VRAMTRACE_RESULT ' "$out/job.stdout" || fail "no result line"
python3 "$repo/samples/gpu/trace_lookups.py" "$out/trace" --require-path get_proc_v2 || fail "no get_proc_v2 lookups in the trace"
# (to a file first: grep -q would close the pipe under the writer)
python3 "$repo/samples/gpu/trace_lookups.py" "$out/trace" --json >"$out/lookups.json" || fail "trace_lookups --json"
grep -q '"allocs": 4,' "$out/lookups.json" || fail "the trace does not hold the job's 4 allocations"
# The carried recording-cost child runs from there too (check.sh step 3).
LD_LIBRARY_PATH=$sim "$carry/bin/bench_record" pairs cuda 100 || fail "the carried bench_record does not run"
# samples/gpu/bench.sh: the benchmarks' drivers are carried, each in a folder
# of its own (a libcuda.so.1 in lib/ would stand in for a real driver), and
# the carried children run with them.
[[ ! -e $carry/lib/libcuda.so.1 ]] || fail "a libcuda.so.1 lies among the carried libraries"
for d in simdriver null_driver; do
	LD_LIBRARY_PATH=$carry/bench/$d LD_PRELOAD=$carry/lib/libvramtrace.so VRAMTRACE_DIR=$out/bench-$d \
		"$carry/bin/bench_record" pairs cuda 100 || fail "bench_record with the carried $d"
	ls "$out/bench-$d"/vramtrace.*.log >/dev/null 2>&1 || fail "no log from bench_record with the carried $d"
	rm -rf "$out/bench-$d"
done
VT_BENCH_STREAM_EVENTS=0 "$carry/bin/bench_analyzer" --events 20000 >"$out/bench_analyzer.tsv" ||
	fail "the carried bench_analyzer does not run"
grep -q $'^analyzer\tthroughput (CPU)\t' "$out/bench_analyzer.tsv" || fail "bench_analyzer printed no throughput row"
echo "PASS: carried binaries ($(du -sh "$carry" | cut -f1)) trace the driver job"
