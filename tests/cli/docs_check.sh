#!/usr/bin/env bash
# The generated man page and shell completions (tools/cli_docs.sh, built as
# BUILD/cli-docs/) agree with the command: bash's completion, sourced and
# asked through `complete -p` and the function it names, offers every
# command and each command's every option (those its --help lists), the
# choices of --format, --stack-memo and --at, and directories after run -o;
# the man page renders without groff warnings and names every option; the
# zsh completion parses (where zsh is installed).
#   docs_check.sh VRAMTRACE DOCS_DIR
set -uo pipefail
vt=$1 docs=$2
fail() { echo "FAIL: $*"; bad=1; }
bad=0
for f in vramtrace.1 vramtrace.bash _vramtrace; do
	[[ -s $docs/$f ]] || { echo "FAIL: $docs/$f was not generated"; exit 1; }
done

# shellcheck source=/dev/null
source "$docs/vramtrace.bash"
fn=$(complete -p vramtrace 2>/dev/null | sed -n 's/.*-F \([^ ]*\) vramtrace$/\1/p')
[[ -n $fn ]] || { echo "FAIL: no 'complete -F ... vramtrace' after sourcing"; exit 1; }
complete_words() { # the words offered for the command line "$@" (its last word being typed)
	COMP_WORDS=(vramtrace "$@")
	COMP_CWORD=$#
	COMPREPLY=()
	"$fn" vramtrace "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}"
}
offers() { # what the command line should offer, the command line...
	local want=$1; shift
	# grep reads every word (no -q): quitting at the first match would end
	# printf with SIGPIPE, which pipefail reports as a failed pipeline
	complete_words "$@" | grep -xF -- "$want" >/dev/null ||
		fail "'vramtrace $*<TAB>' does not offer $want"
}

commands=$("$vt" --help | awk '/^commands:/ {on=1; next} /^$/ {on=0} on {print $1}')
man_text=$(groff -man -Tutf8 -ww "$docs/vramtrace.1" 2>"$docs/groff.err" | sed 's/\x1b\[[0-9;]*m//g; s/.\x08//g')
[[ ! -s $docs/groff.err ]] || fail "groff: $(head -3 "$docs/groff.err")"
n=0
for c in $commands; do
	offers "$c" ""
	[[ $c == help ]] && continue
	offers "$c" help ""
	grep -q "vramtrace $c \[options\]" <<<"$man_text" || fail "the man page has no section for $c"
	for opt in $("$vt" "$c" --help | grep -oE '^  (-h, )?-[-a-z]+' | sed 's/^  \(-h, \)\{0,1\}//'); do
		offers "$opt" "$c" "${opt:0:2}"
		grep -qF -- "$opt" <<<"$man_text" || fail "the man page does not name $c $opt"
		n=$((n + 1))
	done
done
for w in html perfetto folded csv; do offers "$w" export trace --format ""; done
for w in on off verify; do offers "$w" run --stack-memo ""; done
offers end report trace --at ""
mkdir -p "$docs/probe-dir.d" && (cd "$docs" && offers probe-dir.d run -o probe-)
if command -v zsh >/dev/null; then
	zsh -n "$docs/_vramtrace" || fail "_vramtrace does not parse"
else
	echo "zsh not installed: _vramtrace not parsed"
fi
((bad == 0)) && echo "docs: $n options offered and in the man page: ok"
exit $bad
