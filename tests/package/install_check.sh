#!/usr/bin/env bash
# `cmake --install` for a C/C++ job that marks steps: the header and
# lib/pkgconfig/vramtrace.pc land in the prefix; a C program built with
# `pkg-config --cflags vramtrace` looks vramtrace_mark up with dlsym, runs
# untraced (no shim: no marks, no failure) and under the installed
# `bin/vramtrace run` on the simulated driver, whose report counts its steps.
#
# The man page and the completions land in share/, found through the prefix.
#
#   tests/package/install_check.sh BUILD_DIR [OUT_DIR]
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd) || exit 2
out=${2:-$build/tests/package/install}
prefix=$out/prefix
fail() { echo "FAIL: $*"; exit 1; }

rm -rf "$out" && mkdir -p "$out"
cmake --install "$build" --prefix "$prefix" >"$out/install.log" || fail "cmake --install failed"
for f in bin/vramtrace lib/libvramtrace.so include/vramtrace/vramtrace.h lib/pkgconfig/vramtrace.pc \
	share/man/man1/vramtrace.1 share/bash-completion/completions/vramtrace \
	share/zsh/site-functions/_vramtrace; do
	[[ -f $prefix/$f ]] || fail "cmake --install did not install $f"
done
# the man page is found through the prefix, and says the installed version
MANPATH=$prefix/share/man man -w vramtrace 2>/dev/null | grep -qx "$prefix/share/man/man1/vramtrace.1" ||
	fail "man -w vramtrace with MANPATH=$prefix/share/man does not find the page"
grep -qF "$("$prefix/bin/vramtrace" --version)" "$prefix/share/man/man1/vramtrace.1" ||
	fail "the installed man page is not the installed command's version"
# the installed bash completion offers run's options
complete_run=$(bash -c 'source "$1/share/bash-completion/completions/vramtrace"
	COMP_WORDS=(vramtrace run --s); COMP_CWORD=2; _vramtrace vramtrace --s run
	printf "%s\n" "${COMPREPLY[@]}"' _ "$prefix")
[[ $complete_run == *--simulated-driver* && $complete_run == *--stack-depth* ]] ||
	fail "the installed bash completion: 'vramtrace run --s<TAB>' offers: $complete_run"
# no test, tool or sample program is installed: bin/ holds the command only
[[ $(ls "$prefix/bin") == vramtrace ]] || fail "bin/ holds more than vramtrace: $(ls "$prefix/bin")"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
version=$(pkg-config --modversion vramtrace) || fail "pkg-config does not find vramtrace.pc"
cflags=$(pkg-config --cflags vramtrace)
[[ -f $(pkg-config --variable=shim vramtrace) ]] || fail "vramtrace.pc: its shim variable names no file"
echo "vramtrace.pc: version $version, cflags $cflags"

cat >"$out/marks.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
#include <vramtrace/vramtrace.h>
int main(void)
{
	/* the header's declaration gives the type; nothing is linked */
	__typeof__(vramtrace_mark) *mark = (__typeof__(vramtrace_mark) *)dlsym(RTLD_DEFAULT, "vramtrace_mark");
	char text[32];
	for (int step = 0; step < 4; step++) {
		snprintf(text, sizeof text, "step %d", step);
		if (mark)
			mark(text);
	}
	printf("traced: %s\n", mark ? "yes" : "no");
	return 0;
}
C
cc $cflags -Wall -Werror -o "$out/marks" "$out/marks.c" -ldl ||
	fail "the C program does not build with pkg-config --cflags vramtrace"
[[ $("$out/marks") == "traced: no" ]] || fail "untraced run"
LD_LIBRARY_PATH=$build/tests/simdriver "$prefix/bin/vramtrace" run -o "$out/trace" -- "$out/marks" \
	>"$out/traced.stdout" 2>"$out/traced.stderr" || fail "traced run: $(tail -1 "$out/traced.stderr")"
[[ $(cat "$out/traced.stdout") == "traced: yes" ]] || fail "traced run: vramtrace_mark not found"
steps=$("$prefix/bin/vramtrace" report "$out/trace" --json |
	python3 -c 'import json,sys; s=json.load(sys.stdin)["steps"]; print(s["count"], s["source"])')
[[ $steps == "4 markers" ]] || fail "the report says steps: $steps, not 4 markers"
echo "PASS: installed header + pkg-config, man page, completions; a C job's 4 step marks in the installed command's report"
