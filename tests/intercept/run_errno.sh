#!/bin/sh
# run_errno.sh VRAMTRACE SHIM CLIENT TRACEDIR: the client prints errno after
# each driver call; it must read the same plain, traced, and traced with a
# trace directory that cannot be created (the shim's own failing syscalls set
# errno: the job must never see that).
set -u
vramtrace=$1 shim=$2 client=$3 dir=$4
rm -rf "$dir"
plain=$("$client") || { echo "FAIL: client failed plain"; exit 1; }
[ -n "$plain" ] || { echo "FAIL: no output"; exit 1; }
traced=$("$vramtrace" run -o "$dir" -- "$client" 2>/dev/null)
unwritable=$(LD_PRELOAD="$shim" VRAMTRACE_DIR=/dev/null/not-a-dir "$client" 2>/dev/null)
echo "$plain"
[ "$plain" = "$traced" ] || { echo "FAIL: errno differs under vramtrace run:"; echo "$traced"; exit 1; }
[ "$plain" = "$unwritable" ] || { echo "FAIL: errno differs when the log cannot be created:"; echo "$unwritable"; exit 1; }
echo "errno unchanged in both traced runs"
