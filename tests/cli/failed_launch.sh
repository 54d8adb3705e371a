#!/usr/bin/env bash
# A command that cannot be run: one line on stderr, the shell's exit code
# (127 not found, 126 not executable), and no trace directory left behind
# that would refuse the next `vramtrace run -o` of the same name.
#   failed_launch.sh VRAMTRACE WORK_DIR
set -uo pipefail
vt=$1 work=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2

launch() { # want_code what CMD...: exit code, one line, no directory X
	local want=$1 what=$2; shift 2
	local rc=0 err
	err=$("$vt" run -o X -- "$@" 2>&1 >/dev/null) || rc=$?
	[[ $rc == "$want" ]] || fail "$what: exit $rc, want $want ($err)"
	[[ $(printf '%s\n' "$err" | wc -l) == 1 && $err == "vramtrace run: "* ]] ||
		fail "$what: not one line: '$err'"
	[[ ! -e X ]] || fail "$what: left $(ls -a X | tr '\n' ' ') in X"
	echo "$what: exit $rc, '$err'"
}

launch 127 "not found" nosuchcmd-vramtrace --flag
printf '#!/bin/sh\necho hi\n' >not-executable
launch 126 "not executable" ./not-executable
launch 126 "a directory" /
# an existing empty directory is kept (it was the user's), and empty
mkdir Y
rc=0; "$vt" run -o Y -- nosuchcmd-vramtrace 2>/dev/null || rc=$?
[[ $rc == 127 && -d Y && -z $(ls -A Y) ]] || fail "existing -o Y: exit $rc, Y holds: $(ls -A Y)"
# the next run into the same name works
rc=0; "$vt" run -o X -- true 2>/dev/null || rc=$?
[[ $rc == 0 && -f X/run.json ]] || fail "the next run -o X: exit $rc"
echo "failed launch: ok"
