#!/usr/bin/env bash
# `vramtrace dump`: text and JSON lines for a real log, exit codes, and a
# damaged log still dumped (warning on stderr, exit 0).
#   dump_test.sh VRAMTRACE LOG_FILL_HELPER WORKDIR
set -u
vt=$1 helper=$2 work=$3
rm -rf "$work"
mkdir -p "$work/empty"
fail() { echo "FAIL: $*"; exit 1; }
# the writer reads the TSC where the kernel keeps time with an invariant one
want_clock=clock_gettime
if [[ $(uname -m) == x86_64 && $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null) == tsc ]] &&
	grep -q '^flags.* nonstop_tsc' /proc/cpuinfo; then
	want_clock=tsc
fi

"$helper" write "$work/trace" 1000 >/dev/null || fail "writer"
"$vt" dump "$work/trace" >"$work/out.txt" 2>"$work/err.txt" || fail "dump exit $?"
head -3 "$work/out.txt"
[[ -s $work/err.txt ]] && fail "unexpected stderr: $(cat "$work/err.txt")"
[[ $(head -1 "$work/out.txt") == log\ path=*state=exited\ exit_code=0\ truncated=no\ dropped=0* ]] ||
	fail "header line: $(head -1 "$work/out.txt")"
[[ $(grep -c '^alloc pid=[0-9]* tid=[0-9]* seq=' "$work/out.txt") == 1000 ]] || fail "alloc lines"
[[ $(grep -c '^exit .* code=0$' "$work/out.txt") == 1 ]] || fail "exit line"
[[ $(wc -l <"$work/out.txt") == 1007 ]] || fail "line count"
# each writer thread's chunk and the exiting thread's: all sealed, their seals hold
[[ $(grep -c '^chunk pid=[0-9]* tid=[0-9]* index=[0-4] offset=[0-9]* verdict=sealed .*seal_crc=0x' "$work/out.txt") == 5 ]] ||
	fail "chunk lines: $(grep ^chunk "$work/out.txt")"
grep -q ' api=cuMemAlloc_v2 ' "$work/out.txt" || fail "api names"

"$vt" dump "$work/trace" --json >"$work/out.json" || fail "dump --json exit $?"
[[ $(grep -c '^{"record":"[a-z_]*",.*}$' "$work/out.json") == 1007 ]] || fail "JSON line shape"
if ! command -v python3 >/dev/null; then
	echo "python3 not found: JSON lines checked for shape only"
else python3 - "$work/out.json" "$want_clock" <<'PY' || fail "JSON lines"
import json, sys
recs = [json.loads(line) for line in open(sys.argv[1])]
assert recs[0]["record"] == "log" and recs[0]["state"] == "exited" and recs[0]["truncated"] is False
assert recs[0]["clock"] == sys.argv[2], recs[0]["clock"]
assert isinstance(recs[0]["cmdline"], list) and recs[0]["cmdline"][1] == "write"
allocs = [r for r in recs if r["record"] == "alloc"]
assert len(allocs) == 1000 and all(r["api"] == "cuMemAlloc_v2" for r in allocs)
assert all(r["addr"].startswith("0x") for r in allocs)
chunks = [r for r in recs if r["record"] == "chunk"]
assert len(chunks) == 5 and all(c["verdict"] == "sealed" and c["seal_records"] == c["records"] for c in chunks)
seqs = [r["seq"] for r in recs[1:] if "seq" in r]
assert seqs == sorted(seqs), "records in seq order"
print("json ok:", len(recs), "lines")
PY
fi

# the clock the writer read, said in the header: VRAMTRACE_TSC=0 forces clock_gettime
VRAMTRACE_TSC=0 "$helper" write "$work/trace_syscall" 10 >/dev/null || fail "writer (VRAMTRACE_TSC=0)"
"$vt" dump "$work/trace_syscall" | head -1 | grep -q ' clock="clock_gettime"' ||
	fail "VRAMTRACE_TSC=0 header: $("$vt" dump "$work/trace_syscall" | head -1)"

# exit codes: unreadable input 1 with one line; bad usage 2
"$vt" dump "$work/nonexistent" 2>"$work/e1"; rc=$?
[[ $rc == 1 && $(wc -l <"$work/e1") == 1 ]] || fail "missing dir: rc $rc"
"$vt" dump "$work/empty" 2>"$work/e2"; rc=$?
[[ $rc == 1 ]] && grep -q 'no vramtrace logs' "$work/e2" || fail "empty dir: rc $rc"
"$vt" dump "$work/trace" --bogus 2>/dev/null; [[ $? == 2 ]] || fail "bad flag"
"$vt" dump 2>/dev/null; [[ $? == 2 ]] || fail "no argument"

# damage: a garbage record header in the first chunk -> warned about by the
# record check and by the chunk's seal, exit 0
log=$(ls "$work"/trace/vramtrace.*.log)
printf '\x0c\x00\x01\x00' | dd of="$log" bs=1 seek=$((4096 + 32 + 64 * 10)) conv=notrunc status=none
"$vt" dump "$log" >"$work/out2.txt" 2>"$work/err2.txt" || fail "damaged dump exit $?"
cat "$work/err2.txt"
[[ $(wc -l <"$work/err2.txt") == 2 ]] && grep -q "damaged record at offset $((4096 + 32 + 640))" "$work/err2.txt" &&
	grep -q "chunk 0 at offset 4096 (thread [0-9]*) fails its seal check" "$work/err2.txt" ||
	fail "damage warning"
grep -q '^chunk .* index=0 offset=4096 verdict=damaged ' "$work/out2.txt" || fail "damaged chunk line"

# cut at a chunk boundary: the chunks the header counts that the file lacks
cp "$log" "$work/cut.log"
truncate -s $((4096 + 2 * 262144)) "$work/cut.log"
"$vt" dump "$work/cut.log" >"$work/out3.txt" 2>"$work/err3.txt" || fail "cut dump exit $?"
grep -q 'the header counts 5 chunks, the file holds 2 (3 missing' "$work/err3.txt" || fail "cut warning: $(cat "$work/err3.txt")"
grep -q '^chunk .* index=2 verdict=missing count=3$' "$work/out3.txt" || fail "missing chunk line"
[[ $(grep -c '^alloc' "$work/out2.txt") -ge 10 ]] || fail "records before the damage"
echo "PASS"
rm -rf "$work"
