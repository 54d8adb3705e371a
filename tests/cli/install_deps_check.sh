#!/usr/bin/env bash
# tools/install-deps.sh against fake dpkg-query, apt-get, apt-cache, sudo and
# id: quiet when nothing is missing; installs what is missing as root or with
# password-less sudo; otherwise installs nothing, prints the one command to
# run and exits 1; --check never installs; --ci adds the optional packages;
# missing CUDA headers are named.
#   install_deps_check.sh SOURCE_DIR WORK_DIR
set -uo pipefail
src=$1 work=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work/bin" "$work/cuda/include" || exit 2
touch "$work/cuda/include/cuda.h" "$work/cuda/include/cudaTypedefs.h"
cd "$work" || exit 2

# dpkg-query: every package is installed but those in $FAKE_MISSING
cat >bin/dpkg-query <<'SH'
#!/bin/sh
for p in $FAKE_MISSING; do [ "$p" = "$3" ] && { echo "unknown ok not-installed"; exit 0; }; done
echo "install ok installed"
SH
printf '#!/bin/sh\necho "apt-get $*" >>"%s/apt.log"\n' "$work" >bin/apt-get
printf '#!/bin/sh\necho "  Candidate: ${FAKE_CANDIDATE:-(none)}"\n' >bin/apt-cache
printf '#!/bin/sh\necho "${FAKE_UID:-1000}"\n' >bin/id
cat >bin/sudo <<SH
#!/bin/sh
[ "\$FAKE_SUDO" = ok ] || exit 1
[ "\$1" = -n ] && shift
echo "sudo \$*" >>"$work/sudo.log"
exec "\$@"
SH
chmod +x bin/*

run() { # expected-exit name [args]: runs the script, output in out.txt
	local want=$1 name=$2; shift 2
	rm -f apt.log sudo.log
	local rc=0
	PATH=$work/bin:/usr/bin:/bin CUDA_HOME=${CUDA_HOME_CASE:-$work/cuda} "$src/tools/install-deps.sh" "$@" \
		>out.txt 2>&1 || rc=$?
	[[ $rc == "$want" ]] || fail "$name: exit $rc, want $want: $(cat out.txt)"
	echo "$name: exit $rc"
}

FAKE_MISSING= run 0 "nothing missing"
[[ ! -s out.txt && ! -e apt.log ]] || fail "nothing missing: said '$(cat out.txt)' or ran apt-get"

export FAKE_MISSING="cmake libdw-dev"
FAKE_SUDO=no run 1 "missing, no sudo"
grep -qx '  install them with:  sudo apt-get install -y cmake libdw-dev' out.txt ||
	fail "no sudo: the command to run is not printed: $(cat out.txt)"
[[ ! -e apt.log ]] || fail "no sudo: apt-get ran"

FAKE_SUDO=ok run 0 "missing, password-less sudo"
grep -q 'sudo apt-get install -y -qq --no-install-recommends cmake libdw-dev$' sudo.log ||
	fail "sudo: not installed through sudo: $(cat sudo.log 2>/dev/null)"

FAKE_UID=0 run 0 "missing, root"
grep -q '^apt-get install .* cmake libdw-dev$' apt.log && [[ ! -e sudo.log ]] ||
	fail "root: apt-get not run directly: $(cat apt.log 2>/dev/null)"

FAKE_UID=0 run 1 "--check as root" --check
[[ ! -e apt.log ]] || fail "--check ran apt-get"

FAKE_MISSING="chromium" run 0 "only a CI package missing"
[[ ! -e apt.log && ! -s out.txt ]] || fail "without --ci, chromium is not needed"
FAKE_MISSING="chromium" run 1 "--ci: a CI package missing" --ci
grep -q 'sudo apt-get install -y chromium$' out.txt || fail "--ci: chromium not named: $(cat out.txt)"

FAKE_MISSING= CUDA_HOME_CASE=$work/none run 1 "no CUDA headers, no package" --check
grep -q 'cuda.h, cudaTypedefs.h' out.txt || fail "CUDA headers not named: $(cat out.txt)"
FAKE_MISSING= FAKE_UID=0 FAKE_CANDIDATE=12.0.140~12.0.1-4 CUDA_HOME_CASE=$work/none \
	run 0 "no CUDA headers, the package"
grep -q 'install .* nvidia-cuda-dev$' apt.log || fail "nvidia-cuda-dev not installed"
echo "install-deps: ok"
