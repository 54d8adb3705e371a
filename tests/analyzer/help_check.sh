#!/usr/bin/env bash
# Each analysis command's --help: its usage on stdout, nothing on stderr, exit 0.
#   help_check.sh VRAMTRACE
set -uo pipefail
vt=$1 bad=0
for cmd in report export oom diff dump; do
	out=$("$vt" "$cmd" --help 2>/tmp/vt-help-err.$$); rc=$?
	err=$(cat /tmp/vt-help-err.$$)
	if [[ $rc != 0 || -n $err || $out != "usage: vramtrace $cmd"* ]]; then
		echo "FAIL: $cmd --help: exit $rc, stderr '$err', stdout '${out:0:60}'"
		bad=1
	fi
done
rm -f /tmp/vt-help-err.$$
out=$("$vt" --help) && [[ $out == "usage: vramtrace COMMAND"* ]] || { echo "FAIL: vramtrace --help"; bad=1; }
((bad == 0)) && echo "help: ok"
exit $bad
