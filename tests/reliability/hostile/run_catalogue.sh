#!/usr/bin/env bash
# The hostile-log catalogue: every case hostile_gen builds
# is fed to the analyzer's commands; each must end with the exit code, the
# message lines and the records expected.tsv names. Never a crash (exit >= 124
# or a sanitizer report), a hang (20 s) or unbounded memory (512 MiB of heap:
# RLIMIT_DATA in a normal build, ASan's allocator limits in an ASan build).
# --json output must be valid JSON lines in strict UTF-8 (when python3 exists).
#   run_catalogue.sh VRAMTRACE HOSTILE_GEN EXPECTED_TSV WORKDIR [SANITIZER [K/N]]
# K/N: run only the cases whose place in `hostile_gen --list` is K modulo N
# (ctest runs the shards side by side; shard 0 also checks that every case
# has a row in expected.tsv).
set -u
vt=$1 gen=$2 expected=$3 work=$4 san=${5:-} shard=${6:-0/1}
shard_k=${shard%/*} shard_n=${shard#*/}
rm -rf "$work"
mkdir -p "$work"
"$gen" "$work/cases" || { echo "FAIL: hostile_gen"; exit 1; }
declare -A in_shard
place=0
for case in $("$gen" --list); do
	((place % shard_n == shard_k)) && in_shard[$case]=1
	place=$((place + 1))
done
export ASAN_OPTIONS="max_allocation_size_mb=512:hard_rss_limit_mb=1024:allocator_may_return_null=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
have_py=0
command -v python3 >/dev/null && have_py=1
failures=0 runs=0
bad() {
	echo "FAIL [$case $cmd${json:+ --json}]: $*"
	sed 's/^/    stderr: /' "$work/err" | head -20
	failures=$((failures + 1))
}

# Run one command on one case; stdout/stderr in $work/out, $work/err.
run() {
	(
		[[ -z $san ]] && ulimit -d $((512 * 1024))
		exec timeout -s KILL 20 "$vt" "$cmd" "$work/cases/$case" ${json:+--json}
	) >"$work/out" 2>"$work/err"
}

# Records in the output: every line but the per-log header lines.
count_records() {
	if [[ -n $json ]]; then grep -vcE '^\{"record":"(log|chunk)",' "$work/out"
	else grep -vcE '^(log|chunk) ' "$work/out"; fi
}

# dump --json: one JSON object a line; report --json: one document
json_is_valid() {
	((have_py)) || return 0
	python3 - "$work/out" "$cmd" <<'PY'
import json, sys
with open(sys.argv[1], encoding="utf-8", errors="strict") as f:
    if sys.argv[2] != "dump":
        json.load(f)
        sys.exit(0)
    for n, line in enumerate(f, 1):
        try:
            json.loads(line)
        except ValueError as e:
            sys.exit(f"line {n}: {e}")
PY
}

check() { # want_rc want_lines want_records patterns
	local want_rc=$1 want_lines=$2 want_records=$3 patterns=$4 rc
	run
	rc=$?
	runs=$((runs + 1))
	if ((rc >= 124)); then bad "crashed or hung (exit $rc)"; return; fi
	grep -qE 'runtime error|AddressSanitizer|LeakSanitizer' "$work/err" && { bad "sanitizer report"; return; }
	[[ $rc == "$want_rc" ]] || { bad "exit $rc, want $want_rc"; return; }
	local lines
	lines=$(wc -l <"$work/err")
	[[ $lines == "$want_lines" ]] || { bad "$lines message lines, want $want_lines"; return; }
	if grep -vq '^vramtrace' "$work/err"; then bad "a message line not starting with 'vramtrace'"; return; fi
	if [[ $want_records != - ]]; then
		local got
		got=$(count_records)
		[[ $got == "$want_records" ]] || { bad "$got records, want $want_records"; return; }
	fi
	local IFS=$'\x1f' p
	for p in ${patterns//' && '/$'\x1f'}; do
		[[ -z $p ]] && continue
		grep -qE -- "$p" "$work/err" || { bad "no message matching /$p/"; return; }
	done
	if [[ -n $json && -s $work/out ]]; then
		json_is_valid || { bad "invalid JSON lines"; return; }
	fi
	if grep -q $'\x1b' "$work/out"; then bad "raw escape byte in the output"; return; fi
	# a sidecar's names are used only where its module and address match
	if [[ $case == sidecar_honest ]] && ! grep -q 'upload_batch (job.c:42)' "$work/out"; then
		bad "the honest sidecar's name is not used"; return
	fi
	if grep -qE 'lying_function|ghost|only_one' "$work/out"; then bad "a lying sidecar's name was used"; return; fi
}

declare -A covered
while IFS=$'\t' read -r case cmd want_rc want_lines want_records patterns; do
	[[ -z $case || $case == \#* ]] && continue
	covered[$case]=1
	[[ -n ${in_shard[$case]:-} ]] || continue
	if [[ ! -d $work/cases/$case ]]; then
		echo "FAIL: expected.tsv names '$case', which hostile_gen does not build"
		failures=$((failures + 1))
		continue
	fi
	for json in "" 1; do
		check "$want_rc" "$want_lines" "$want_records" "$patterns"
	done
done <"$expected"

# Every other command on every case: an exit code of 0, 1 or 2, every
# message line a vramtrace line, no raw escape byte in what it prints, valid
# JSON where it writes JSON. (Messages are pinned above for dump and report.)
smoke() { # NAME OUTFILE CMD...
	local name=$1 outfile=$2 rc
	shift 2
	(
		[[ -z $san ]] && ulimit -d $((512 * 1024))
		exec timeout -s KILL 20 "$@"
	) >"$work/out" 2>"$work/err"
	rc=$?
	runs=$((runs + 1))
	local where="$case $name"
	if ((rc > 2)); then echo "FAIL [$where]: exit $rc"; sed 's/^/    stderr: /' "$work/err" | head -5; failures=$((failures + 1)); return; fi
	if grep -qE 'runtime error|AddressSanitizer|LeakSanitizer' "$work/err" || grep -vq '^vramtrace' "$work/err"; then
		echo "FAIL [$where]: unexpected message"; head -5 "$work/err"; failures=$((failures + 1)); return
	fi
	# terminal text must carry no escape byte (exported files are data)
	if [[ -z $outfile ]] && grep -q $'\x1b' "$work/out"; then echo "FAIL [$where]: raw escape byte"; failures=$((failures + 1)); fi
	if [[ $name == *json* || $name == *perfetto* ]] && ((rc == 0 && have_py)); then
		python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "${outfile:-$work/out}" 2>/dev/null ||
			{ echo "FAIL [$where]: invalid JSON"; failures=$((failures + 1)); }
	fi
	rm -f "$work/x.out"
}
for case in $("$gen" --list); do
	[[ -n ${in_shard[$case]:-} ]] || continue
	d=$work/cases/$case
	smoke oom "" "$vt" oom "$d"
	smoke oom_json "" "$vt" oom "$d" --json
	smoke diff "" "$vt" diff "$work/cases/good" "$d"
	smoke diff_json "" "$vt" diff "$d" "$work/cases/every_kind" --json
	for fmt in csv folded perfetto html; do
		smoke "export_$fmt" "$work/x.out" "$vt" export "$d" --format "$fmt" -o "$work/x.out"
	done
done

for case in $("$gen" --list); do
	((shard_k == 0)) || break
	if [[ -z ${covered[$case]:-} ]]; then
		echo "FAIL: case '$case' has no row in expected.tsv"
		failures=$((failures + 1))
	fi
done
echo "hostile logs (shard $shard): ${#in_shard[@]} of ${#covered[@]} cases, $runs runs, $failures failures"
((failures == 0)) && rm -rf "$work" && echo PASS
((failures == 0))
