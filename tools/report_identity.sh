#!/usr/bin/env bash
# Behaviour check for a refactoring: runs the analyzer commands of two
# `vramtrace` binaries over the same traces and compares their outputs byte
# for byte. Traces: the repository's fixture traces (tests/analyzer/golden,
# tests/analyzer/real) and any trace directories given with -t (for instance
# the demo's and the simulated trainer's, recorded once and kept).
#
#   tools/report_identity.sh OLD_VRAMTRACE NEW_VRAMTRACE [-t TRACE_DIR]...
#
# Prints one line per (trace, command) that differs and a closing count;
# exit 1 on any difference.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2; shift 2
extra=()
while (($#)); do
	case $1 in
	-t) extra+=("$2"); shift 2 ;;
	*) echo "report_identity: unknown option $1" >&2; exit 2 ;;
	esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
traces=()
for d in tests/analyzer/golden/*/trace; do traces+=("$d"); done
for d in tests/analyzer/real/*/; do
	name=$(basename "$d")
	mkdir -p "$work/real/$name"
	for f in "$d"*; do
		case $f in
		*.xz) xz -dc "$f" >"$work/real/$name/$(basename "${f%.xz}")" ;;
		*) cp "$f" "$work/real/$name/" ;;
		esac
	done
	traces+=("$work/real/$name")
done
traces+=("${extra[@]}")

# One command a line; TRACE is replaced by the trace directory, OUT by a
# scratch file the command writes (its contents are compared too).
commands=(
	"report TRACE --json"
	"report TRACE --json --at end"
	"report TRACE --json --allocs --top 50"
	"report TRACE"
	"report TRACE --stream --json"
	"report TRACE --stream"
	"oom TRACE --json"
	"oom TRACE"
	"dump TRACE --json"
	"export TRACE --format csv -o OUT"
	"export TRACE --format folded -o OUT"
	"export TRACE --format perfetto -o OUT"
	"export TRACE --format html -o OUT"
	"export TRACE --format csv --stream -o OUT"
	"diff TRACE TRACE --json"
)

run_one() { # BIN TRACE COMMAND OUTPREFIX
	local bin=$1 trace=$2 cmd=$3 prefix=$4
	cmd=${cmd//TRACE/$trace}
	# Both binaries write the same path: commands print the path they wrote.
	cmd=${cmd//OUT/$work/out.file}
	rm -f "$work/out.file"
	# shellcheck disable=SC2086
	NO_COLOR=1 "$bin" $cmd >"$prefix.out" 2>"$prefix.err" && echo 0 >"$prefix.rc" || echo $? >"$prefix.rc"
	if [[ -f $work/out.file ]]; then mv "$work/out.file" "$prefix.file"; else : >"$prefix.file"; fi
}

differ=0 total=0
for t in "${traces[@]}"; do
	for c in "${commands[@]}"; do
		total=$((total + 1))
		run_one "$old" "$t" "$c" "$work/old"
		run_one "$new" "$t" "$c" "$work/new"
		for part in out err rc file; do
			if ! cmp -s "$work/old.$part" "$work/new.$part"; then
				echo "differs ($part): $t: vramtrace $c"
				differ=$((differ + 1))
				break
			fi
		done
		rm -f "$work"/old.* "$work"/new.*
	done
done
echo "report_identity: $total runs over ${#traces[@]} traces, $differ differ"
((differ == 0))
