#!/usr/bin/env bash
# A full filesystem ends recording, never the job.
#  1. a 1 MiB tmpfs in a private mount namespace (unshare -m); where mounting
#     is not permitted this part says so and is replaced by 2 alone;
#  2. always: the same check with the size cap VRAMTRACE_MAX_SIZE=1M.
# Each: the writer runs to completion, exactly one warning line, the log is
# marked truncated with drops counted, every acknowledged record is intact.
#   full_fs.sh LOG_FILL_HELPER WORKDIR
set -u
helper=$1
work=$2
events=40000 # 2.5 MiB of 64-byte events: well past 1 MiB
rm -rf "$work"
mkdir -p "$work/mnt"

check_warning() {
	local n
	n=$(grep -c '^vramtrace: ' "$work/err")
	cat "$work/err"
	if [[ $n != 1 ]] || ! grep -q 'marked truncated' "$work/err"; then
		echo "FAIL: expected exactly one 'vramtrace:' warning about truncation, got $n"
		exit 1
	fi
}

# everything that needs the mount runs inside the namespace
tmpfs_run() {
	unshare -m --propagation private bash -c '
		set -e
		mount -t tmpfs -o size=1m,mode=0700 vt-full-fs "$1/mnt"
		"$2" write "$1/mnt/trace" "$3" >"$1/acks" 2>"$1/err"
		"$2" verify "$1/mnt/trace" "$1/acks"
		df -k "$1/mnt" | tail -1
	' full_fs "$work" "$helper" "$events"
}

if unshare -m --propagation private bash -c "mount -t tmpfs -o size=1m none '$work/mnt'" 2>/dev/null; then
	echo "== 1 MiB tmpfs (unshare -m): disk full"
	tmpfs_run || { echo "FAIL: tmpfs run"; cat "$work/err" 2>/dev/null; exit 1; }
	check_warning
else
	echo "== unshare -m / mount not permitted here: SKIPPING the tmpfs part, size cap only"
fi

echo "== VRAMTRACE_MAX_SIZE=1M: size cap"
VRAMTRACE_MAX_SIZE=1M "$helper" write "$work/trace" "$events" >"$work/acks" 2>"$work/err" ||
	{ echo "FAIL: writer exited $?"; exit 1; }
"$helper" verify "$work/trace" "$work/acks" || exit 1
size=$(stat -c %s "$work"/trace/vramtrace.*.log)
echo "log file: $size bytes"
((size <= 1048576)) || { echo "FAIL: log exceeds the cap"; exit 1; }
check_warning

echo "PASS: the writer ran to completion, the log is marked truncated, acknowledged records intact"
rm -rf "$work"
