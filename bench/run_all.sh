#!/usr/bin/env bash
# Run every bench program in DIR (default build/bench: executables named
# bench_*) and print one table. Each program prints TSV rows
# "bench<TAB>case<TAB>value<TAB>unit"; anything else it prints is ignored.
set -uo pipefail
dir=${1:-build/bench}
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
shopt -s nullglob
progs=("$dir"/bench_*)
if ((${#progs[@]} == 0)); then
	echo "no bench programs in $dir (build first: cmake --build build)" >&2
	exit 1
fi
status=0
load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
# each program's wall time is a row too: the whole run must stay under 5
# minutes on a 2-core machine, and this says which part to trim when not
start_all=$(date +%s%N)
for p in "${progs[@]}"; do
	[[ -x $p && -f $p ]] || continue
	start=$(date +%s%N)
	"$p" | awk -F'\t' 'NF == 4' >>"$rows" || { echo "$p failed" >&2; status=1; }
	printf 'run time\t%s\t%.0f\ts\n' "${p##*/}" "$((($(date +%s%N) - start) / 1000000))e-3" >>"$rows"
done
printf 'run time\tall of the above\t%.0f\ts\n' "$((($(date +%s%N) - start_all) / 1000000))e-3" >>"$rows"
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null)
echo "machine: ${cpu:-unknown cpu}, $(nproc) cores, $(uname -sr)"
# timings on a shared machine: the load says how much other work ran beside
echo "load average (1/5/15 min): before ${load_before:-?}, after $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo
awk -F'\t' '
	{ b[NR] = $1; c[NR] = $2; v[NR] = $3; u[NR] = $4
	  if (length($1) > wb) wb = length($1); if (length($2) > wc) wc = length($2)
	  if (length($3) > wv) wv = length($3) }
	END {
		if (wb < 5) wb = 5; if (wc < 4) wc = 4; if (wv < 5) wv = 5
		fmt = "| %-" wb "s | %-" wc "s | %" wv "s | %-7s |\n"
		printf fmt, "bench", "case", "value", "unit"
		printf "|%s|%s|%s|%s|\n", dash(wb + 2), dash(wc + 2), dash(wv + 2), dash(9)
		for (i = 1; i <= NR; i++) printf fmt, b[i], c[i], v[i], u[i]
	}
	function dash(n,   s) { s = ""; while (n-- > 0) s = s "-"; return s }' "$rows"
exit $status
