#!/usr/bin/env bash
# `vramtrace export` without --format or -o: the format from -o's extension,
# a default file name, missing folders made, an unknown extension refused
# with exit 2: one line that says why, then where the help is; several
# traces as one job in html (vramtrace-job.html), refused in csv and folded.
#   cli_check.sh VRAMTRACE TRACE_DIR WORK_DIR
set -euo pipefail
vt=$1 trace=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$vt" export "$trace" -o deep/er/out.csv 2>/dev/null || fail "-o deep/er/out.csv"
[[ $(head -1 deep/er/out.csv) == start_ns,end_ns,device,bytes,category,site ]] ||
	fail ".csv is not CSV: $(head -1 deep/er/out.csv)"
"$vt" export "$trace" -o p.json 2>/dev/null || fail "-o p.json"
python3 -c 'import json,sys; d=json.load(open("p.json")); assert "traceEvents" in d' ||
	fail ".json is not a Perfetto trace"
"$vt" export "$trace" -o f.folded 2>/dev/null || fail "-o f.folded"
grep -q ';' f.folded || fail ".folded has no stacks"
"$vt" export "$trace/" 2>/dev/null || fail "no -o"
grep -q '<html' vramtrace-trace.html || fail "default name vramtrace-trace.html, html"
"$vt" export "$trace" --format csv 2>/dev/null || fail "--format csv, no -o"
[[ -s vramtrace-trace.csv ]] || fail "default name with --format csv"
rc=0; err=$("$vt" export "$trace" -o out.bin 2>&1) || rc=$?
[[ $rc == 2 ]] || fail "unknown extension: exit $rc, want 2"
[[ $(printf '%s\n' "$err" | wc -l) == 2 && $err == "vramtrace export: cannot tell the format"* &&
	$err == *"Try 'vramtrace export --help' for more information." ]] ||
	fail "unknown extension: '$err'"
[[ ! -e out.bin ]] || fail "out.bin written"
# several traces are one job: html or perfetto, by default vramtrace-job.<ext>
"$vt" export "$trace" "$trace" 2>/dev/null || fail "two traces, no -o"
grep -q '"job":' vramtrace-job.html || fail "two traces: vramtrace-job.html has no job"
for fmt in "--format csv" "--format folded" "--stream"; do
	rc=0; err=$("$vt" export "$trace" "$trace" $fmt -o - 2>&1 >/dev/null) || rc=$?
	[[ $rc == 2 && $err == "vramtrace export: several traces are exported as one job"* ]] ||
		fail "two traces with $fmt: exit $rc, '$err'"
done
echo "export cli: ok"
