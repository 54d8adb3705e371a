#!/usr/bin/env bash
# run_rtld_next.sh TEST_RTLD_NEXT LOCAL_LIB SHIM
# dlsym(RTLD_NEXT, ...) from libraries gives the same answers with the shim
# preloaded as without it, and those answers are the ELF ones (the program
# checks them itself and fails otherwise).
set -uo pipefail
test=$1 local_lib=$2 shim=$3
plain=$("$test" "$local_lib"); prc=$?
preloaded=$(LD_PRELOAD=$shim "$test" "$local_lib"); lrc=$?
echo "$preloaded"
if [[ $prc != 0 || $lrc != 0 ]]; then
	echo "FAIL: exit codes $prc (plain) $lrc (preloaded)" >&2
	exit 1
fi
if [[ $plain != "$preloaded" ]]; then
	echo "FAIL: answers differ with the shim preloaded" >&2
	diff <(echo "$plain") <(echo "$preloaded") >&2
	exit 1
fi
