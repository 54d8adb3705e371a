#!/usr/bin/env bash
# Make REPO/gpu-carry: vramtrace binaries that run on a machine that cannot
# build them (the GPU machine may lack pkg-config, libunwind-dev, libdw-dev,
# cmocka, uthash). Run it HERE, on a machine that builds the project:
#
#   samples/gpu/prepare_carry.sh [DEST [BUILD]]   -> DEST/{bin,lib,MANIFEST}
#
# (DEST defaults to REPO/gpu-carry, BUILD to REPO/build-carry.)
#
# gpu-carry/bin/vramtrace finds its libraries through RPATH $ORIGIN/../lib,
# libvramtrace.so through $ORIGIN; the non-glibc libraries they need
# (libunwind, libdw, libelf and what those pull in: lzma, zstd, bz2, z) are
# copied beside them. glibc itself is not carried: MANIFEST says which
# GLIBC_x.y the binaries need; the target's glibc must be at least that.
# gpu-carry is git-ignored (.git/info/exclude); hand it to the device tool:
#
#   run(command="bash samples/gpu/check.sh -o $OUT", carry=["gpu-carry"])
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-$repo/gpu-carry}
build=${2:-$repo/build-carry}
cd "$repo"

# Build with the install RPATH in place, so nothing needs patching later, as
# DT_RPATH (--disable-new-dtags): unlike RUNPATH it also applies to the
# libraries' own dependencies (libdw -> libelf -> libz).
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
[[ -f $build/CMakeCache.txt ]] && generator=()
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_INSTALL_RPATH='$ORIGIN/../lib;$ORIGIN' -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
	-DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags \
	-DCMAKE_SHARED_LINKER_FLAGS=-Wl,--disable-new-dtags >/dev/null
cmake --build "$build" -j"$(nproc)" --target vramtrace-cli bench_record bench_analyzer \
	vtsim_cuda bench_null_driver bench_lockcount
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/bench/simdriver" "$dest/bench/null_driver"
cp "$build/bin/vramtrace" "$dest/bin/"
# the recording-cost child, timed on the real driver by overhead.py; the
# recording and analyzer benchmarks (bench.sh) with the simulated and do-nothing
# drivers, each a libcuda.so.1 in a folder of its own: never beside the
# carried libraries, where a real job could load one
cp "$build/bench/bench_record" "$build/bench/bench_analyzer" "$dest/bin/"
cp "$build/lib/libvramtrace.so" "$dest/lib/"
cp "$build/tests/simdriver/libcuda.so.1" "$dest/bench/simdriver/"
cp "$build/bench/null_driver/libcuda.so.1" "$dest/bench/null_driver/"
cp "$build/bench/lib/libbench_lockcount.so" "$dest/bench/"

# Every shared library they load that is not part of glibc.
glibc='^(linux-vdso|ld-linux(-x86-64)?|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so'
for binary in "$dest"/bin/* "$dest/lib/libvramtrace.so"; do
	ldd "$binary" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
	[[ $name =~ $glibc ]] && continue
	cp -L "$path" "$dest/lib/$name"
done

glibc_needed=$(objdump -T "$dest"/bin/* "$dest"/lib/*.so* 2>/dev/null |
	grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
{
	echo "built on: $(hostname) $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
	echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')"
	echo "needs: $glibc_needed or newer on the target"
	echo "files: $(cd "$dest" && find . -type f | sort | tr '\n' ' ')"
} >"$dest/MANIFEST"

# The default folders stay out of git (and so out of commits), yet the device
# tool carries them when named in carry.
if [[ $# -eq 0 ]] && exclude=$(git rev-parse --git-common-dir 2>/dev/null)/info/exclude; then
	mkdir -p "$(dirname "$exclude")"
	for path in /gpu-carry/ /build-carry/; do
		grep -qxF "$path" "$exclude" 2>/dev/null || echo "$path" >>"$exclude"
	done
fi

# Prove the carry is self-contained: every NEEDED library of every carried
# file is glibc or is carried.
missing=0
for file in "$dest"/bin/* "$dest"/lib/* "$dest"/bench/*.so "$dest"/bench/*/*; do
	for needed in $(readelf -d "$file" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
		[[ $needed =~ $glibc || -f $dest/lib/$needed ]] && continue
		echo "prepare_carry: $(basename "$file") needs $needed, which is not carried" >&2
		missing=1
	done
done
((missing == 0)) || exit 1
"$dest/bin/vramtrace" --help >/dev/null
cat "$dest/MANIFEST"
du -sh "$dest"
