#!/usr/bin/env bash
# Two `vramtrace run -o DIR` started at the same moment, 30 times: exactly
# one runs its job, the other exits 2 with one line and runs nothing.
#   run_lock.sh VRAMTRACE WORKDIR
set -u
vt=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
fails=0
fail() { echo "FAIL [round $i]: $*"; fails=$((fails + 1)); }

for i in $(seq 30); do
	dir=$work/trace.$i ran=$work/ran.$i
	# half the rounds with the directory made beforehand (the empty one is accepted)
	((i % 2)) && mkdir -m 700 "$dir"
	"$vt" run -o "$dir" -- sh -c 'echo $$ >>"$0"; sleep 0.2' "$ran" 2>"$work/a.$i.err" &
	a=$!
	"$vt" run -o "$dir" -- sh -c 'echo $$ >>"$0"; sleep 0.2' "$ran" 2>"$work/b.$i.err" &
	b=$!
	wait $a
	rca=$?
	wait $b
	rcb=$?
	runs=$(wc -l <"$ran" 2>/dev/null || echo 0)
	[[ $runs == 1 ]] || fail "$runs jobs ran in one directory"
	if [[ $rca == 0 ]]; then loser=b rc=$rcb; else loser=a rc=$rca; fi
	[[ $rca == 0 || $rcb == 0 ]] || fail "neither run succeeded: $rca $rcb"
	[[ $rc == 2 ]] || fail "the refused run exited $rc, want 2"
	lines=$(wc -l <"$work/$loser.$i.err")
	[[ $lines == 1 ]] || fail "the refused run said $lines lines: $(cat "$work/$loser.$i.err")"
	grep -qE 'in use by another vramtrace run|already holds a trace' "$work/$loser.$i.err" ||
		fail "the refused run's message: $(cat "$work/$loser.$i.err")"
done

((fails == 0)) && echo "run_lock: all passed" || echo "run_lock: $fails failed"
((fails == 0))
