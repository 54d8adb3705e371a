#!/usr/bin/env bash
# Run every libFuzzer target for about SECONDS each (default 60), JOBS at a
# time (default: the number of cores), from its committed seed corpus
# (fuzz/corpus/<name>/, or the corpus beside a target another part keeps:
# VT_FUZZ_EXTERNAL in fuzz/CMakeLists.txt). Builds them
# first with clang (ASan+UBSan+libFuzzer) in BUILD_DIR (default build-fuzz).
#   fuzz/run.sh [SECONDS] [BUILD_DIR]
# Exit 0: no target crashed, leaked, timed out or ran out of memory. On a
# finding it prints the reproducer; fix the bug, then commit the input into
# its corpus folder so the replay test (ctest ..._corpus) keeps it.
# New coverage-increasing inputs stay in BUILD_DIR/fuzz-work/<name> (not
# committed automatically: merge them with -merge=1 when worthwhile).
# Needs: clang, libclang-rt-14-dev (Debian packages).
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
build=${2:-build-fuzz}
jobs=${JOBS:-$(nproc)}

if ! command -v clang >/dev/null; then
	echo "fuzz/run.sh: clang not found (apt-get install clang libclang-rt-14-dev)" >&2
	exit 2
fi
CC=clang cmake -S . -B "$build" -G Ninja -DVT_FUZZ=ON -DVT_SANITIZE=address \
	-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 2
cmake --build "$build" -j"$jobs" --target fuzz_all || exit 2

list=$build/fuzz/targets.tsv
[[ -s $list ]] || { echo "fuzz/run.sh: no fuzz targets built" >&2; exit 2; }

# One target: its output (trimmed) to LOG, its libFuzzer exit status to
# LOG.rc. Targets run JOBS at a time (each libFuzzer process is one thread),
# so every target still gets its SECONDS while the whole run takes
# about (targets / JOBS) x SECONDS.
fuzz_one() {
	local name=$1 binary=$2 corpus=$3 log=$4
	local work=$build/fuzz-work/$name art=$build/fuzz-artifacts/$name dict=() start=$SECONDS
	mkdir -p "$work" "$art"
	[[ -f fuzz/$name.dict ]] && dict=(-dict="fuzz/$name.dict")
	[[ $name == log_* ]] && dict=(-dict=fuzz/log.dict)
	{
		printf '\n== fuzz %s for %ss (corpus %s)\n' "$name" "$secs" "${corpus#"$PWD"/}"
		# close_fd_mask=3: the commands print every record; crash reports still
		# reach the log. malloc_limit: one allocation past 1 GiB is a bug
		# (the reader never allocates in proportion to a length it read).
		"$binary" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
			-malloc_limit_mb=1024 -max_len=65536 -close_fd_mask=3 -print_final_stats=1 \
			"${dict[@]}" -artifact_prefix="$art/" "$work" "$corpus" </dev/null 2>&1 |
			sed '/Recommended dictionary/,/End of recommended dictionary/d' |
			grep -vE '^#[0-9]+\s+(NEW|REDUCE|pulse)' | tail -30
		echo "${PIPESTATUS[0]}" >"$log.rc"
		echo "fuzz $name: exit $(cat "$log.rc") after $((SECONDS - start))s"
	} >"$log" 2>&1
}

logs=$build/fuzz-logs
rm -rf "$logs" && mkdir -p "$logs"
while IFS=$'\t' read -r name binary corpus; do
	while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
	fuzz_one "$name" "$binary" "$corpus" "$logs/$name" &
done <"$list"
wait

status=0
while IFS=$'\t' read -r name binary corpus; do
	cat "$logs/$name"
	rc=$(cat "$logs/$name.rc" 2>/dev/null || echo 2)
	if ((rc != 0)); then
		status=1
		echo "FINDING in fuzz $name: reproduce with"
		for f in "$build/fuzz-artifacts/$name"/*; do
			[[ -f $f ]] && echo "  $binary $f"
		done
	fi
done <"$list"
exit $status
