#!/bin/sh
# run_errno.sh VRAMTRACE SHIM CLIENT TRACEDIR FAILING_MADVISE: the client
# prints errno after each driver call; it must read the same plain, traced,
# traced with a trace directory that cannot be created, and traced with small
# chunks whose every madvise fails (the shim's own failing syscalls set
# errno, before the driver call and after it: the job must never see that).
set -u
vramtrace=$1 shim=$2 client=$3 dir=$4 failing=$5
rm -rf "$dir"
plain=$("$client") || { echo "FAIL: client failed plain"; exit 1; }
[ -n "$plain" ] || { echo "FAIL: no output"; exit 1; }
traced=$("$vramtrace" run -o "$dir" -- "$client" 2>/dev/null)
unwritable=$(LD_PRELOAD="$shim" VRAMTRACE_DIR=/dev/null/not-a-dir "$client" 2>/dev/null)
chunks=$(LD_PRELOAD="$shim $failing" VRAMTRACE_DIR="$dir.chunks" VRAMTRACE_CHUNK_SIZE=8192 "$client" 2>/dev/null)
rm -rf "$dir.chunks"
echo "$plain"
[ "$plain" = "$traced" ] || { echo "FAIL: errno differs under vramtrace run:"; echo "$traced"; exit 1; }
[ "$plain" = "$unwritable" ] || { echo "FAIL: errno differs when the log cannot be created:"; echo "$unwritable"; exit 1; }
[ "$plain" = "$chunks" ] || { echo "FAIL: errno differs when claiming a chunk fails after a call:"; echo "$chunks"; exit 1; }
echo "errno unchanged in all three traced runs"
