#!/bin/sh
# usage: check_layout.sh PYTHON LAYOUT_TABLE_EXE CC PROBE_SRC
# Compiles layout_probe.c against PYTHON's own (internal) headers and
# compares every offset with the shim's table. Fails on any difference.
set -eu
py=$1 table=$2 cc=$3 src=$4
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ -f "$inc/internal/pycore_frame.h" ] || [ -f "$inc/frameobject.h" ] || {
	echo "check_layout: $py has no headers in $inc" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cc" -I"$inc" -I"$inc/internal" "$src" -o "$tmp/probe"
"$tmp/probe" > "$tmp/headers"
"$table" "$ver" > "$tmp/table"
if ! diff -u "$tmp/headers" "$tmp/table"; then
	echo "FAIL: layout table for $ver differs from $py's headers (- headers, + table)"
	exit 1
fi
echo "ok: layout table for $ver matches $py's headers ($(wc -l < "$tmp/table") offsets)"
