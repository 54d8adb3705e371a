#!/usr/bin/env bash
# The report's site table over many sites, each reached from several call
# paths (many_sites.c): report (text and JSON), export and diff must run,
# and the JSON must list each site once with all its allocations.
#   many_sites.sh VRAMTRACE MANY_SITES WORKDIR
set -u
vt=$1 gen=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fails=0
fail() { echo "FAIL [$name]: $*"; fails=$((fails + 1)); }

for shape in "40 3" "100 3" "600 3" "700 2"; do
	set -- $shape
	sites=$1 paths=$2 name="$1x$2"
	echo "== $sites sites x $paths paths"
	dir=$work/$name
	"$gen" "$dir" "$sites" "$paths" || { fail "generator exit $?"; continue; }
	"$vt" report "$dir" >"$work/$name.txt" 2>"$work/$name.err" || fail "report exit $?: $(head -3 "$work/$name.err")"
	"$vt" report "$dir" --json --top 100000 >"$work/$name.json" 2>"$work/$name.err" ||
		fail "report --json exit $?: $(head -3 "$work/$name.err")"
	python3 - "$work/$name.json" "$sites" "$paths" <<'PY' || fail "site table wrong"
import collections, json, sys
d = json.load(open(sys.argv[1]))
sites, paths = int(sys.argv[2]), int(sys.argv[3])
rows = d["sites"]
names = collections.Counter(r["site"] for r in rows)
bad = [r for r in rows if r["allocs"] != paths]
if len(rows) != sites or names.most_common(1)[0][1] != 1 or bad:
    print(f"  {len(rows)} rows for {sites} sites; most repeated {names.most_common(1)}; "
          f"{len(bad)} rows without {paths} allocations")
    sys.exit(1)
PY
	"$vt" export "$dir" --format csv -o "$work/$name.csv" >/dev/null 2>"$work/$name.err" ||
		fail "export exit $?: $(head -3 "$work/$name.err")"
	"$vt" diff "$dir" "$dir" >/dev/null 2>"$work/$name.err" || fail "diff exit $?: $(head -3 "$work/$name.err")"
done
((fails == 0)) && echo "many_sites: all passed" || echo "many_sites: $fails failed"
((fails == 0))
