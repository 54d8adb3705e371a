#!/usr/bin/env bash
# End to end, stacks part: a client with allocations from three functions in
# two files, a dlopen'ed + dlclose'd library, 16 threads and a forked child
# writes real logs;
# the sites name the right functions and lines (from the files), the 16
# threads' identical stacks fold into one, the sidecar names everything after
# the binary and the library are deleted, and without it the frames are
# reported unnamed with module+offset.
#   usage: e2e_sites.sh CLIENT SITES_TOOL DL_LIB SOURCE_DIR
set -euo pipefail
client=$1 tool=$2 lib=$3 src=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
line() { grep -n "$1" "$src/$2" | cut -d: -f1; }

cp "$client" "$tmp/client"
cp "$lib" "$tmp/libvt_stacks_dl.so"
VRAMTRACE_DIR=$tmp/trace "$tmp/client" "$tmp/libvt_stacks_dl.so"

export VRAMTRACE_SITE_SKIP="function:alloc_via_lib,function:client_record"
expect() { # output, site, allocs, bytes, stacks, records, source
	local want
	want=$(printf '%s\t%s\t%s\t%s\t%s\t%s' "$2" "$3" "$4" "$5" "$6" "$7")
	grep -qxF "$want" <<<"$1" || fail "missing line: $want
--- got:
$1"
}
check_named() { # output, source
	expect "$1" "client_alloc_dataset (client_b.c:$(line SITE_DATASET client_b.c))" 1 67108864 1 1 "$2"
	# parent and forked child, one call site: two logs, one stack
	expect "$1" "client_alloc_weights (client.c:$(line SITE_WEIGHTS client.c))" 2 8388608 1 2 "$2"
	expect "$1" "dl_lib_site (dl_lib.c:$(line 'asserted by tests' dl_lib.c))" 1 2097152 1 1 "$2"
	# one call from main, 16 threads x 50: two canonical stacks, the
	# threads' 16 records folded into one of them
	expect "$1" "client_alloc_batch (client_b.c:$(line SITE_BATCH client_b.c))" 801 839909376 2 17 "$2"
}

out=$("$tool" "$tmp/trace")
check_named "$out" dwarf
echo "named from the module files: ok"

# full stacks: innermost first, the site marked, main below it
out=$("$tool" "$tmp/trace" --stacks)
stack=$(sed -n '/^stack of client_alloc_dataset/,/^stack of/p' <<<"$out")
# (the hook stand-in client_record is dropped at capture: skip 1)
grep -qxF "  #0 * client_alloc_dataset (client_b.c:$(line SITE_DATASET client_b.c))" <<<"$stack" ||
	fail "site frame: $stack"
grep -qE "^  #1   main \(client.c:[0-9]+\)$" <<<"$stack" || fail "caller frame: $stack"
echo "full stack: ok"

out=$("$tool" "$tmp/trace" --write-sidecar)
[[ -s $tmp/trace/symbols.vtsym ]] || fail "no sidecar written"
[[ $(stat -c %a "$tmp/trace/symbols.vtsym") == 600 ]] || fail "sidecar not 0600"
rm "$tmp/client" "$tmp/libvt_stacks_dl.so"
out=$("$tool" "$tmp/trace")
check_named "$out" sidecar
echo "named from the sidecar after deleting the binary and the library: ok"

out=$("$tool" "$tmp/trace" --no-sidecar)
grep -qE $'^0x[0-9a-f]+ \\(client\\+0x[0-9a-f]+\\)\t1\t67108864\t' <<<"$out" ||
	fail "unnamed frames not reported as module+offset:
$out"
# function rules cannot see unnamed frames: the library call's site is now
# its innermost frame, alloc_via_lib in the client
[[ $(grep -cE $'^0x[0-9a-f]+ \\(client\\+0x[0-9a-f]+\\)\t.*\tunnamed$' <<<"$out") == 4 ]] ||
	fail "expected 4 unnamed client sites:
$out"
echo "unnamed without binary and sidecar, with module+offset: ok"
