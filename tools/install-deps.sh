#!/usr/bin/env bash
# The Debian/Ubuntu packages the build needs, in one place (the Makefile's
# configure step, `make deps` and .ci/run all use this list).
#
#   tools/install-deps.sh [--ci] [--check]
#
# Installs what is missing with apt-get when it can (as root, or with sudo
# that needs no password); otherwise it installs nothing, prints the one
# command to run and exits 1. Quiet and exit 0 when nothing is missing, and
# on systems without dpkg (CMake's configure then names what it lacks).
#   --ci     also what the optional tests use (fuzzers, HTML export, Python)
#   --check  install nothing: exit 1 with the command when something is missing
set -uo pipefail

BUILD_PACKAGES=(build-essential cmake ninja-build pkg-config libncurses-dev
	libunwind-dev uthash-dev libdw-dev libelf-dev
	libcmocka-dev python3) # the tests' (BUILD_TESTING, on by default)
# chromium: the HTML export's browser test; clang + libclang-rt-14-dev: the
# libFuzzer targets; libpython3.11-dev: the embedded-Python stack tests.
CI_PACKAGES=(libpython3.11-dev chromium clang libclang-rt-14-dev)
# The CUDA driver API headers (cuda.h, cudaTypedefs.h): no driver or GPU is
# needed to build. Ubuntu (multiverse) and Debian (non-free) package them.
CUDA_PACKAGE=nvidia-cuda-dev

ci=0 check=0
for arg in "$@"; do
	case $arg in
	--ci) ci=1 ;;
	--check) check=1 ;;
	-h | --help) sed -n '2,15s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "install-deps.sh: unknown option '$arg' (--ci, --check)" >&2; exit 2 ;;
	esac
done

command -v dpkg-query >/dev/null && command -v apt-get >/dev/null || exit 0

wanted=("${BUILD_PACKAGES[@]}")
((ci)) && wanted+=("${CI_PACKAGES[@]}")
missing=()
for p in "${wanted[@]}"; do
	[[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
done

cuda_headers() { # where CMake looks: $CUDA_HOME, else /usr/local/cuda and /usr
	local d dirs=(/usr/local/cuda/include /usr/include)
	[[ -n ${CUDA_HOME:-} ]] && dirs=("$CUDA_HOME/include")
	for d in "${dirs[@]}"; do
		[[ -f $d/cuda.h && -f $d/cudaTypedefs.h ]] && return 0
	done
	return 1
}
cuda_missing=0
if ! cuda_headers; then
	if apt-cache policy "$CUDA_PACKAGE" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
		missing+=("$CUDA_PACKAGE")
	else
		cuda_missing=1
	fi
fi

say_cuda() {
	cat >&2 <<-MSG
		vramtrace: the CUDA headers (cuda.h, cudaTypedefs.h) are missing, and apt has no $CUDA_PACKAGE
		  (Debian: enable non-free; Ubuntu: multiverse), or install NVIDIA's CUDA toolkit
		  (https://developer.nvidia.com/cuda-downloads) and build with CUDA_HOME=/path/to/cuda.
	MSG
}

if ((${#missing[@]} == 0)); then
	((cuda_missing)) && { say_cuda; exit 1; }
	exit 0
fi

if [[ $(id -u) == 0 ]]; then
	sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
	sudo=(sudo)
else
	sudo=(none)
fi
if ((check)) || [[ ${sudo[*]} == none ]]; then
	echo "vramtrace: missing build packages: ${missing[*]}" >&2
	echo "  install them with:  sudo apt-get install -y ${missing[*]}" >&2
	((cuda_missing)) && say_cuda
	exit 1
fi

echo "vramtrace: installing missing build packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >&2 &&
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || {
	echo "vramtrace: apt-get could not install: ${missing[*]}" >&2
	exit 1
}
((cuda_missing)) && { say_cuda; exit 1; }
exit 0
