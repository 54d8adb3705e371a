#!/usr/bin/env bash
# The README's quick start, verbatim: the commands between the
# `<!-- quickstart` and `<!-- /quickstart -->` lines of README.md, run in
# order with `bash -e` in a fresh `git clone` of this working tree (its
# uncommitted changes and new files included). The build there leaves the
# tests out (CMAKE_ARGS) to stay quick; each command must succeed and the
# demo's report must name the dataset upload.
#   quickstart_check.sh SOURCE_DIR WORK_DIR
set -uo pipefail
src=$(cd "$1" && pwd) work=$2
fail() { echo "FAIL: $*"; exit 1; }
command -v git >/dev/null && git -C "$src" rev-parse --git-dir >/dev/null 2>&1 ||
	{ echo "SKIPPED: not a git checkout"; exit 77; }
rm -rf "$work" && mkdir -p "$work" || exit 2

awk '/^<!-- quickstart/ {on=1; next} /^<!-- \/quickstart -->/ {on=0}
     on && /^```/ {fence=!fence; next} on && fence' "$src/README.md" >"$work/quickstart.sh"
[[ -s $work/quickstart.sh ]] || fail "README.md has no <!-- quickstart --> block"
grep -q '^make demo' "$work/quickstart.sh" || fail "the quick start does not start with make demo"
echo "the README's quick start:" && sed 's/^/  | /' "$work/quickstart.sh"

git clone -q "$src" "$work/clone" || fail "git clone"
git -C "$src" diff HEAD --binary >"$work/changes.diff"
[[ ! -s $work/changes.diff ]] || git -C "$work/clone" apply "$work/changes.diff" ||
	fail "the working tree's changes do not apply to its clone"
(cd "$src" && git ls-files -z --others --exclude-standard | tar --null -T - -cf -) |
	tar -C "$work/clone" -xf - || fail "copying the new files"

start=$(date +%s)
(cd "$work/clone" && HOME=$work PATH=$PATH CMAKE_ARGS="-DBUILD_TESTING=OFF -DVT_ANALYZER_LTO=OFF" \
	JOBS=${JOBS:-2} bash -e "$work/quickstart.sh") >"$work/out.txt" 2>&1
rc=$?
echo "quick start: exit $rc in $(($(date +%s) - start)) s (log: $work/out.txt)"
((rc == 0)) || { tail -20 "$work/out.txt"; fail "a quick start command failed"; }
grep -q 'whole_dataset_upload' "$work/out.txt" || fail "the demo's report has no whole_dataset_upload"
grep -q '^usage: vramtrace run' "$work/out.txt" || fail "vramtrace on PATH did not answer"
[[ -s $work/clone/demo.html ]] || fail "no demo.html"
echo "quick start: ok"
