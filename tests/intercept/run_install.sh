#!/usr/bin/env bash
# run_install.sh BUILD_DIR WORKDIR CUDA_CLIENT
# `cmake --install` puts bin/vramtrace and lib/libvramtrace.so where they find
# each other: the installed command traces a driver job.
set -euo pipefail
build=$1 work=$2 client=$3
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
[[ -x $work/prefix/bin/vramtrace && -f $work/prefix/lib/libvramtrace.so ]] ||
	{ echo "FAIL: install layout: $(cd "$work/prefix" && find . -type f | head)" >&2; exit 1; }
"$work/prefix/bin/vramtrace" run -o "$work/trace" -- "$client" --count 1 >/dev/null 2>"$work/err"
cat "$work/err"
grep -q "$work/prefix/lib/libvramtrace.so" <("$work/prefix/bin/vramtrace" run -o "$work/env" -- sh -c 'echo $LD_PRELOAD' 2>/dev/null) ||
	{ echo "FAIL: installed command does not preload the installed shim" >&2; exit 1; }
compgen -G "$work/trace/vramtrace.*.log" >/dev/null || { echo "FAIL: installed shim recorded nothing" >&2; exit 1; }
