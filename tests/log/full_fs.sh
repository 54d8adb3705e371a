#!/usr/bin/env bash
# Issue 2, test 3: a full filesystem ends recording, never the job.
# A 1 MiB tmpfs in a private mount namespace (unshare -m); where mounting is
# not permitted, the same check with VRAMTRACE_MAX_SIZE=1M (said below).
#   full_fs.sh LOG_FILL_HELPER WORKDIR
set -u
helper=$1
work=$2
rm -rf "$work"
mkdir -p "$work/mnt"
events=40000 # 2.5 MiB of 64-byte events: well past 1 MiB

check_warning() {
	local n
	n=$(grep -c '^vramtrace: ' "$work/err")
	cat "$work/err"
	if [[ $n != 1 ]] || ! grep -q 'marked truncated' "$work/err"; then
		echo "FAIL: expected exactly one 'vramtrace:' warning about truncation, got $n"
		return 1
	fi
}

run_in_tmpfs() {
	# everything that needs the mount runs inside the namespace
	unshare -m --propagation private bash -c '
		set -e
		mount -t tmpfs -o size=1m,mode=0700 vt-full-fs "$1/mnt"
		"$2" write "$1/mnt/trace" "$3" >"$1/acks" 2>"$1/err"
		"$2" verify "$1/mnt/trace" "$1/acks"
		df -k "$1/mnt" | tail -1
		ls -l "$1/mnt/trace"
	' full_fs "$work" "$helper" "$events"
}

if unshare -m --propagation private bash -c "mount -t tmpfs -o size=1m none '$work/mnt'" 2>/dev/null; then
	echo "full_fs: writing into a 1 MiB tmpfs (unshare -m)"
	run_in_tmpfs || { echo "FAIL: tmpfs run"; cat "$work/err" 2>/dev/null; exit 1; }
else
	echo "full_fs: unshare -m / mount not permitted here; FALLING BACK to VRAMTRACE_MAX_SIZE=1M"
	VRAMTRACE_MAX_SIZE=1M "$helper" write "$work/trace" "$events" >"$work/acks" 2>"$work/err" ||
		{ echo "FAIL: writer exited $?"; exit 1; }
	"$helper" verify "$work/trace" "$work/acks" || exit 1
fi
check_warning || exit 1
echo "PASS: the writer ran to completion, the log is marked truncated, acknowledged records intact"
rm -rf "$work"
