#!/usr/bin/env bash
# The analyzer's own files against someone who can write where it writes, and
# input that is not what it should be:
#   - export and report --html write through a fresh exclusive file: a symlink
#     planted at the old predictable temp name (<out>.tmp.<pid>) is not
#     followed, and the output is 0600;
#   - run refuses a trace directory that others can write to, and one whose
#     path leaves no room for its files;
#   - report skips a log whose header is another pid's than its name says,
#     and (as root) one owned by another user;
#   - run.json stays valid JSON when argv is not UTF-8;
#   - more logs than mappings left: one line names the limit, the rest is read.
#   hostile_files.sh VRAMTRACE GOLDEN_TRACE WORKDIR
set -u
vt=$1 golden=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
umask 022
# In the sanitizer build the shim is instrumented too: the jobs `run` starts
# need ASan's runtime loaded first (run keeps it first in LD_PRELOAD).
asan_rt=$(ldd "$vt" | awk '$1 ~ /^libasan/ { print $3 }')
vt_run() { LD_PRELOAD=$asan_rt "$vt" run "$@"; }
fails=0
fail() { echo "FAIL [$name]: $*"; fails=$((fails + 1)); }
mode_of() { stat -c %a "$1"; }
lines_of() { wc -l <"$1"; }

trace=$work/trace
cp -r "$golden" "$trace"
chmod 700 "$trace"
log=$(cd "$trace" && ls vramtrace.*.log | head -1)

# ---- the output's temp file ---------------------------------------------------
# `exec` keeps the shell's pid, so the old temp name is known in advance.
for how in csv perfetto html report-html; do
	name="symlink at the temp name ($how)"
	victim=$work/victim.$how out=$work/out/$how.file
	mkdir -p "$work/out"
	echo keep >"$victim"
	case $how in
	report-html) cmd=(report "$trace" --html "$out") ;;
	*) cmd=(export "$trace" --format "$how" -o "$out") ;;
	esac
	sh -c 'ln -s "$1" "$2.tmp.$$"; shift 2; exec "$@"' sh "$victim" "$out" "$vt" "${cmd[@]}" \
		>/dev/null 2>"$work/$how.err" || fail "exit $?: $(head -2 "$work/$how.err")"
	[[ $(cat "$victim") == keep ]] || fail "the planted symlink was followed"
	[[ -f $out && ! -L $out ]] || fail "$out is not a plain file"
	[[ $(mode_of "$out") == 600 ]] || fail "$out has mode $(mode_of "$out"), want 600"
	ls -A "$work/out" | grep -q vramtrace-export && fail "a temp file was left behind"
done

# ---- run's trace directory ----------------------------------------------------
for m in 777 770 722; do
	name="run -o a $m directory"
	dir=$work/open$m
	mkdir "$dir" && chmod "$m" "$dir"
	vt_run -o "$dir" -- true 2>"$work/open$m.err"
	rc=$?
	[[ $rc == 2 ]] || fail "exit $rc, want 2"
	[[ $(lines_of "$work/open$m.err") == 1 ]] || fail "not one line: $(cat "$work/open$m.err")"
	grep -q "writable by other users (mode 0$m)" "$work/open$m.err" || fail "$(cat "$work/open$m.err")"
	[[ -e $dir/run.json ]] && fail "run.json written into it"
done
name="run -o an empty 0700 directory of ours"
mkdir "$work/mine" && chmod 700 "$work/mine"
vt_run -o "$work/mine" -- true 2>"$work/mine.err" || fail "exit $?: $(cat "$work/mine.err")"
[[ -f $work/mine/run.json ]] || fail "no run.json"

name="run -o a path too long for its files"
long=$work
while ((${#long} < 3800)); do long=$long/$(printf 'd%.0s' {1..200}); done
mkdir -p "$long"
deep=$long/$(printf 'e%.0s' $(seq $((4090 - ${#long} - 1))))
vt_run -o "$deep" -- true 2>"$work/long.err"
rc=$?
[[ $rc == 2 ]] || fail "exit $rc, want 2 (a ${#deep}-byte path)"
[[ $(lines_of "$work/long.err") == 1 ]] || fail "not one line: $(head -c 300 "$work/long.err")"
grep -q "path is too long" "$work/long.err" || fail "$(head -c 300 "$work/long.err")"
[[ -e $deep ]] && fail "the directory was made"
name="run -o a long path that fits"
fits=$long/fits
vt_run -o "$fits" -- true 2>"$work/fits.err" || fail "exit $?: $(head -c 300 "$work/fits.err")"
[[ -f $fits/run.json ]] || fail "no run.json in a ${#fits}-byte path"

# ---- a planted log ---------------------------------------------------------------
name="a log copied in under another pid's name"
planted=$work/planted
cp -r "$trace" "$planted"
cp "$planted/$log" "$planted/vramtrace.4242.0.log"
"$vt" report "$planted" --json >"$work/planted.json" 2>"$work/planted.err" ||
	fail "report exit $?: $(head -2 "$work/planted.err")"
pid=${log#vramtrace.}
pid=${pid%%.*}
grep -q "vramtrace.4242.0.log holds the log of pid $pid, not of pid 4242" "$work/planted.err" ||
	fail "no warning naming it: $(head -2 "$work/planted.err")"
grep -q "skipped" "$work/planted.err" || fail "not said to be skipped"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(len(d["processes"]) != 1)' \
	"$work/planted.json" || fail "the planted log was read as a process"

# another user's log in our trace directory (needs root to make one: skipped
# otherwise): said and skipped, not read as a process of the job
if [[ $(id -u) == 0 ]] && id nobody >/dev/null 2>&1; then
	name="a log owned by another user"
	foreign=$work/foreign
	cp -r "$trace" "$foreign"
	chown nobody "$foreign/$log"
	"$vt" report "$foreign" --json >"$work/foreign.json" 2>"$work/foreign.err"
	grep -q "is owned by uid $(id -u nobody), not by the trace directory's owner" \
		"$work/foreign.err" || fail "no warning naming the owner: $(head -2 "$work/foreign.err")"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(len(d["processes"]) == 0)' \
		"$work/foreign.json" 2>/dev/null && fail "the foreign log was read as a process"
fi

# ---- run.json with argv that is not UTF-8 ------------------------------------------
name="run.json with non-UTF-8 argv"
vt_run -o "$work/argv" -- true $'\xff\xfe' $'caf\xc3' $'\e[31mred' $'ok\xc3\xa9' 2>/dev/null ||
	fail "run exit $?"
python3 - "$work/argv/run.json" <<'PY' || fail "run.json is not valid JSON, or argv is not as documented"
import json, sys
cmd = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))["command"]
want = ["true", "\ufffd\ufffd", "caf\ufffd", "\x1b[31mred", "ok\u00e9"]
if cmd != want:
    print("  command", cmd, "want", want)
    sys.exit(1)
PY

# ---- more logs than mappings ---------------------------------------------------------
# 3000 header-only logs of distinct pids; VRAMTRACE_MAX_MAPS lowers the
# mapping limit the analyzer assumes (as a low vm.max_map_count would).
name="3000 logs over the mapping limit"
many=$work/many
mkdir "$many"
python3 - "$trace/$log" "$many" <<'PY'
import struct, sys
header = bytearray(open(sys.argv[1], "rb").read(4096))
header[80:88] = bytes(8)  # chunks_claimed: none
for pid in range(1000, 4000):
    header[24:28] = struct.pack("<i", pid)
    with open("%s/vramtrace.%d.0.log" % (sys.argv[2], pid), "wb") as f:
        f.write(header)
PY
VRAMTRACE_MAX_MAPS=4000 "$vt" report "$many" --json >"$work/many.json" 2>"$work/many.err" ||
	fail "report exit $?: $(head -2 "$work/many.err")"
grep -q "3000 logs, but this process may map only [0-9]* more files (vm.max_map_count 4000" \
	"$work/many.err" || fail "no line naming the limit: $(head -2 "$work/many.err")"
(($(lines_of "$work/many.err") == 1)) || fail "$(lines_of "$work/many.err") lines on stderr"
name="3000 logs within the system's limit"
"$vt" report "$many" --json >"$work/many_all.json" 2>"$work/many_all.err" ||
	fail "report exit $?: $(head -2 "$work/many_all.err")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(len(d["processes"]) != 3000)' \
	"$work/many_all.json" || fail "not 3000 processes"

((fails == 0)) && echo "hostile_files: all passed" || echo "hostile_files: $fails failed"
((fails == 0))
