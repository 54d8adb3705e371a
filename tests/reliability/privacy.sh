#!/usr/bin/env bash
# Privacy: a job uploads a known secret pattern through the
# simulated driver under `vramtrace run`; no file of the trace contains it
# (whole, or its first or last 12 bytes), every file is 0600 and every
# directory 0700, owned by the user, whatever the umask.
#   privacy.sh VRAMTRACE SECRET_JOB WORKDIR
set -u
vt=$1 job=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
export VT_SECRET="vtSECRET-7c3f19e2a84b6d05-keep-OUT"
parts=("$VT_SECRET" "${VT_SECRET:0:12}" "${VT_SECRET: -12}")

# the search itself must be able to fail: a planted copy is found
printf 'xx\0%s\0yy' "$VT_SECRET" >"$work/planted.bin"
grep -rqaF -- "${parts[1]}" "$work/planted.bin" || { echo "FAIL: grep cannot find a planted secret"; exit 1; }
rm "$work/planted.bin"

check_trace() { # DIR
	local dir=$1 files f mode
	files=$(find "$dir" -type f | wc -l)
	((files > 0)) || { fail "$dir: no files"; return; }
	for p in "${parts[@]}"; do
		if grep -rlaF -- "$p" "$dir"; then fail "$dir holds the secret ('$p')"; fi
	done
	while IFS= read -r f; do
		mode=$(stat -c '%a %u' "$f")
		[[ $mode == "600 $(id -u)" ]] || fail "$f: mode/owner $mode"
	done < <(find "$dir" -type f)
	while IFS= read -r f; do
		mode=$(stat -c '%a %u' "$f")
		[[ $mode == "700 $(id -u)" ]] || fail "$f: mode/owner $mode (directory)"
	done < <(find "$dir" -type d)
	[[ -z $(find "$dir" ! -type f ! -type d) ]] || fail "$dir: something neither file nor directory"
	echo "$dir: $files files, none holds the secret; modes ok"
}

# 1. -o DIR, umask 000
(umask 000 && "$vt" run -o "$work/trace" -- "$job") >"$work/out" 2>"$work/err" ||
	fail "job under vramtrace run: $(cat "$work/err")"
grep -q 'round trip ok' "$work/out" || fail "job output: $(cat "$work/out")"
[[ $("$vt" dump "$work/trace" | grep -c '^copy ') -ge 4 ]] || fail "copies not recorded"
check_trace "$work/trace"
# 2. the default directory (vramtrace-<name>-<time> in the working directory)
mkdir "$work/cwd"
(cd "$work/cwd" && umask 022 && "$vt" run -- "$job") >"$work/out" 2>"$work/err" ||
	fail "default dir run: $(cat "$work/err")"
dir=$(find "$work/cwd" -mindepth 1 -maxdepth 1 -type d)
[[ -n $dir ]] && check_trace "$dir" || fail "no default trace directory"
# 3. preloaded directly, a fork-free child environment: VRAMTRACE_DIR
(umask 000 && VRAMTRACE_DIR="$work/preload" LD_PRELOAD="$(dirname "$vt")/../lib/libvramtrace.so" "$job") \
	>"$work/out" 2>"$work/err" || fail "preloaded run"
check_trace "$work/preload"

((fails == 0)) && rm -rf "$work" && echo PASS
((fails == 0))
