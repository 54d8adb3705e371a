#!/usr/bin/env bash
# A driver whose entry points call its other exported entry points
# (VT_SIM_NESTED=1: cuMemAllocAsync_ptsz -> cuMemAllocAsync -> cuMemAlloc_v2):
# each call the job made is recorded once, under the entry point the job
# called; the calls the driver made inside it are not recorded.
#   nested.sh VRAMTRACE NESTED_JOB WORKDIR
# (LD_LIBRARY_PATH must name the simulated driver.)
set -u
vt=$1 job=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

VT_SIM_NESTED=1 "$vt" run -o "$work/trace" -- "$job" 2>"$work/run.err" ||
	fail "the job failed: $(cat "$work/run.err")"
"$vt" dump "$work/trace" >"$work/dump.txt" 2>"$work/dump.err" || fail "dump failed"
allocs=$(grep -c '^alloc ' "$work/dump.txt")
[[ $allocs == 3 ]] || fail "$allocs allocations recorded, want the job's 3: $(grep '^alloc ' "$work/dump.txt")"
for api in cuMemAllocAsync_ptsz cuMemAllocAsync cuMemAlloc_v2; do
	n=$(grep '^alloc ' "$work/dump.txt" | grep -c " api=$api ")
	[[ $n == 1 ]] || fail "$n allocations under $api, want 1"
done
frees=$(grep -c '^free ' "$work/dump.txt")
[[ $frees == 3 ]] || fail "$frees frees recorded, want 3"

((fails == 0)) && echo "nested: all passed" || echo "nested: $fails failed"
((fails == 0))
