#!/usr/bin/env bash
# Every analyzer command over every trace the suite has, for the ASan+UBSan
# build (label asan): the golden traces, the real H200 traces, the trainer
# matrix and the corpus's C jobs recorded here on the simulated driver, an
# out-of-memory run, and 600 sites reached from 3 call paths each.
# For each trace: report (text, --json --allocs), export in every format
# (and --stream), oom, dump, diff against itself. A command fails the test
# when it exits with another status than it documents for a readable trace
# or prints a sanitizer report.
#   every_trace.sh VRAMTRACE SOURCE_DIR TRAINER CORPUS_BIN_DIR SIMDRIVER_DIR MANY_SITES WORKDIR
set -u
vt=$1 src=$2 trainer=$3 corpus_bin=$4 simdriver=$5 many_sites=$6 work=$7
rm -rf "$work"
mkdir -p "$work"/{traces,out}
# In the sanitizer build the shim is instrumented too: the jobs `run` starts
# need ASan's runtime loaded first (run keeps it first in LD_PRELOAD).
asan_rt=$(ldd "$vt" | awk '$1 ~ /^libasan/ { print $3 }')
vt_run() { LD_PRELOAD=$asan_rt "$vt" run "$@"; }
fails=0
fail() { echo "FAIL [$name]: $*"; fails=$((fails + 1)); }
export LD_LIBRARY_PATH=$simdriver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VT_SIM_DEVICES=4 VT_SIM_CAPACITY=$((16 << 30))
t0=$(date +%s)

# ---- the traces -----------------------------------------------------------------
for d in "$src"/tests/analyzer/golden/*/trace; do
	cp -r "$d" "$work/traces/golden_$(basename "$(dirname "$d")")"
done
for d in "$src"/tests/analyzer/real/*; do
	t=$work/traces/real_$(basename "$d")
	cp -r "$d" "$t"
	xz -d "$t"/*.xz || fail "cannot unpack $d"
done
name=many_sites
"$many_sites" "$work/traces/many_sites_600x3" 600 3 || fail "generator exit $?"

# record NAME COMMAND...: the job under `vramtrace run` (a job's own exit
# status is its business; a trace with no log is not one to read)
record() {
	local t=$work/traces/$1
	shift
	vt_run -o "$t" -- "$@" >/dev/null 2>"$t.run.err"
	ls "$t"/vramtrace.*.log >/dev/null 2>&1 || rm -rf "$t"
}
export -f record vt_run
export vt work asan_rt
{
	grep -v '^#' "$src/tests/analyzer/matrix.txt" | awk 'NF { $1 = "matrix_" $1; print }' |
		while read -r n opts; do echo "$n $trainer $opts --steps 3"; done
	grep -v '^#' "$src/tests/corpus/jobs.txt" | awk '$3 ~ /^@BIN@/' |
		while read -r n _ cmd opts; do
			echo "corpus_$n ${cmd/@BIN@/$corpus_bin} $opts --truth $work/corpus_$n.truth"
		done
	echo "oom_whole env VT_SIM_CAPACITY=1073741824 $trainer --dataset whole --dataset-bytes 1000M --steps 3"
} >"$work/jobs.txt"
# shellcheck disable=SC2016
xargs -P "$(nproc)" -L 1 bash -c 'record "$@"' _ <"$work/jobs.txt"
ntraces=$(ls "$work/traces" | grep -c -v '\.run\.err$')
echo "== $ntraces traces ($(grep -c . "$work/jobs.txt") jobs recorded) in $(($(date +%s) - t0)) s"
((ntraces >= 40)) || { name=traces; fail "only $ntraces traces"; }

# ---- every command over each ----------------------------------------------------
# check TRACE LABEL ALLOWED_EXITS COMMAND...
check() {
	local t=$1 label=$2 allowed=$3
	shift 3
	local err=$work/out/$(basename "$t").$label.err
	"$vt" "$@" >/dev/null 2>"$err"
	local rc=$?
	local why=
	[[ ,$allowed, == *,$rc,* ]] || why="exit $rc"
	grep -qE 'Sanitizer|runtime error:' "$err" && why="$why sanitizer report"
	[[ -z $why ]] || echo "FAIL [$(basename "$t") $label]: $why: $(grep -m3 -E 'ERROR|runtime error|vramtrace' "$err")"
}
every_command() {
	local t=$1 o=$work/out/$(basename "$1")
	check "$t" report 0 report "$t"
	check "$t" json 0 report "$t" --json --allocs --top 1000
	for f in html perfetto folded csv; do
		check "$t" "$f" 0 export "$t" --format "$f" -o "$o.$f"
	done
	check "$t" stream 0 export "$t" --stream --format csv -o "$o.stream.csv"
	check "$t" oom 0 oom "$t"
	check "$t" dump 0 dump "$t"
	check "$t" diff 0 diff "$t" "$t"
}
export -f check every_command
ls -d "$work"/traces/* | grep -v '\.run\.err$' |
	xargs -P "$(nproc)" -I{} bash -c 'every_command "$1"' _ {} >"$work/results.txt"
cat "$work/results.txt"
fails=$((fails + $(grep -c '^FAIL' "$work/results.txt")))
echo "== $ntraces traces x 10 commands in $(($(date +%s) - t0)) s"
((fails == 0)) && echo "every_trace: all passed" || echo "every_trace: $fails failed"
((fails == 0))
