#!/usr/bin/env bash
# A configure that fails does not poison the next one: `make` with a bad
# option fails and leaves no CMakeCache.txt; `make` again with good options
# configures (the bad value was not kept in a cache).
#   configure_retry.sh SOURCE_DIR WORK_DIR
set -uo pipefail
src=$1 work=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || exit 2
target=$work/build/build.ninja
make -s -C "$src" BUILD="$work/build" CMAKE_ARGS="-DVT_SANITIZE=bogus" "$target" >"$work/first.log" 2>&1 &&
	fail "the configure with VT_SANITIZE=bogus succeeded"
grep -q "VT_SANITIZE must be" "$work/first.log" || fail "not the expected failure: $(tail -3 "$work/first.log")"
[[ ! -e $work/build/CMakeCache.txt ]] || fail "the failed configure left CMakeCache.txt"
make -s -C "$src" BUILD="$work/build" CMAKE_ARGS="-DBUILD_TESTING=OFF" "$target" >"$work/second.log" 2>&1 ||
	fail "the next configure failed: $(tail -3 "$work/second.log")"
[[ -f $target ]] || fail "no build.ninja after the second configure"
echo "configure retry: ok"
