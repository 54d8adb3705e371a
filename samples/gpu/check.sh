#!/usr/bin/env bash
# The GPU check kit: proves in one call (at most 8 minutes) that vramtrace
# sees what real frameworks do on a real driver.
#
#   samples/gpu/check.sh [-o OUT] [options]      on a machine with a GPU
#   samples/gpu/check.sh --dry-run [-o OUT]      anywhere: the simulated driver
#
# Steps: get the vramtrace binaries (build here if the tools and libraries
# exist, else use carried ones: samples/gpu/prepare_carry.sh makes them),
# print driver/CUDA/framework versions, run each job of samples/frameworks/
# without vramtrace and under `vramtrace run` (default and --per-tensor),
# check each trace against the job's own truth line, write summary.md,
# summary.json, versions.txt, traces.tar.gz and check.log into OUT; then
# time recording on this driver (overhead.py -> OUT/overhead.md).
# Exit: 0 all hard checks passed, 1 a check failed, 2 usage or setup error.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=
work=
build=
prefix=
dry_run=0
no_build=0
jobs=all
modes=default,per-tensor
budget=480        # seconds for the whole script
run_timeout=150   # seconds for one job run
overhead_seconds=90 # step 3, when bench_record is there

usage() {
	cat <<-EOF
	usage: $0 [--dry-run] [-o OUT] [--work DIR] [--build DIR] [--no-build] [--prefix DIR]
	          [--jobs a,b] [--modes default,per-tensor] [--budget SECONDS] [--run-timeout SECONDS]
	          [--overhead SECONDS]

	  --dry-run      no GPU needed: the driver job runs on the simulated driver
	                 (BUILD/tests/simdriver), the framework jobs must fail early and cleanly
	  -o OUT         summary and traces go here (default BUILD/gpu-check)
	  --work DIR     scratch folder for the runs (default OUT.work)
	  --build DIR    build folder BUILD (default build for --dry-run, else build-gpu)
	  --no-build     use the binaries already in --build, build nothing
	  --prefix DIR   use DIR/bin/vramtrace and DIR/lib/libvramtrace.so (carried binaries);
	                 default when the build tools are missing: REPO/gpu-carry
	  --jobs LIST    driver,torch-whole,torch-stream,torch-expandable,jax-whole,jax-stream,cupy,keras
	                 (default all)
	  --budget S     seconds for the whole check (default $budget)
	  --overhead S   seconds of it for step 3, the recording cost (default $overhead_seconds; 0: skip)
	EOF
}

die() { echo "check.sh: $*" >&2; exit 2; }
step() { printf '\n== [%3ds] %s\n' "$SECONDS" "$*"; }
need_value() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (try --help)"; }

while [[ $# -gt 0 ]]; do
	case $1 in
	--dry-run) dry_run=1 ;;
	-o | --out) need_value "$@"; out=$2; shift ;;
	--work) need_value "$@"; work=$2; shift ;;
	--build) need_value "$@"; build=$2; shift ;;
	--no-build) no_build=1 ;;
	--prefix) need_value "$@"; prefix=$2; shift ;;
	--jobs) need_value "$@"; jobs=$2; shift ;;
	--modes) need_value "$@"; modes=$2; shift ;;
	--budget) need_value "$@"; budget=$2; shift ;;
	--run-timeout) need_value "$@"; run_timeout=$2; shift ;;
	--overhead) need_value "$@"; overhead_seconds=$2; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument '$1'" ;;
	esac
	shift
done
[[ $budget =~ ^[0-9]+$ && $run_timeout =~ ^[0-9]+$ && $overhead_seconds =~ ^[0-9]+$ ]] ||
	die "--budget, --run-timeout and --overhead take whole seconds"

if [[ -z $build ]]; then
	if ((dry_run)); then build=$repo/build; else build=$repo/build-gpu; fi
fi
out=${out:-$build/gpu-check} # build*/ is git-ignored: nothing here travels or gets committed
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
work=${work:-$out.work}
mkdir -p "$work" || die "cannot create $work"
rm -rf "$work/traces" "$work/baseline" # only what kit.py writes there
exec > >(tee "$out/check.log") 2>&1
export PYTHONDONTWRITEBYTECODE=1 # keep the source tree clean

# ---- 1. the vramtrace binaries ----------------------------------------------
missing_build_tools() {
	local gaps=()
	command -v cmake >/dev/null || gaps+=(cmake)
	command -v ninja >/dev/null || command -v make >/dev/null || gaps+=("ninja or make")
	command -v cc >/dev/null || gaps+=("a C compiler")
	if command -v pkg-config >/dev/null; then
		for lib in libunwind libdw cmocka; do pkg-config --exists $lib || gaps+=("$lib (pkg-config)"); done
	else
		gaps+=(pkg-config)
	fi
	[[ -f /usr/include/uthash.h ]] || gaps+=(uthash.h)
	[[ -f ${CUDA_HOME:-/usr/local/cuda}/include/cudaTypedefs.h ]] || gaps+=("CUDA headers")
	echo "${gaps[*]}"
}

build_here() {
	local generator=()
	command -v ninja >/dev/null && generator=(-G Ninja)
	[[ -f $build/CMakeCache.txt ]] && generator=() # keep the generator it was made with
	cmake -S "$repo" -B "$build" "${generator[@]}" \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/cmake-configure.log" 2>&1 ||
		{ tail -20 "$work/cmake-configure.log"; return 1; }
	# A dry run needs the simulated driver too: build everything.
	local targets=(--target vramtrace-cli)
	((dry_run)) && targets=()
	cmake --build "$build" -j"$(nproc)" "${targets[@]}" >"$work/cmake-build.log" 2>&1 ||
		{ tail -30 "$work/cmake-build.log"; return 1; }
}

step "vramtrace binaries"
if [[ -n $prefix ]]; then
	echo "using the binaries under --prefix $prefix"
elif ((no_build)); then
	prefix=$build
	echo "using the build in $build (--no-build)"
else
	gaps=$(missing_build_tools)
	carried=$repo/gpu-carry
	if [[ -z $gaps ]] && echo "building in $build" && build_here; then
		prefix=$build
	elif [[ -x $carried/bin/vramtrace ]]; then
		echo "${gaps:+cannot build here (missing: $gaps): }using the carried binaries in $carried"
		prefix=$carried
		[[ -f $prefix/MANIFEST ]] && sed 's/^/  carry: /' "$prefix/MANIFEST"
	elif [[ -z $gaps ]]; then
		die "the build failed (logs in $work) and there are no carried binaries in $carried"
	else
		die "cannot build here (missing: $gaps) and no carried binaries in $carried:" \
			"run samples/gpu/prepare_carry.sh on a machine that builds, then carry gpu-carry"
	fi
fi
vramtrace=$prefix/bin/vramtrace
[[ -x $vramtrace ]] || die "$vramtrace is missing"
if ! "$vramtrace" --help >/dev/null 2>"$work/vramtrace-help.err"; then
	cat "$work/vramtrace-help.err"
	ldd "$vramtrace" 2>&1 | grep -E 'not found|GLIBC' || true
	die "$vramtrace does not start here (see above: a missing library or a newer glibc)"
fi
[[ -f $prefix/lib/libvramtrace.so ]] || die "$prefix/lib/libvramtrace.so is missing (vramtrace run needs it)"
echo "vramtrace: $vramtrace"

sim_args=()
if ((dry_run)); then
	sim=$build/tests/simdriver
	[[ -f $sim/libcuda.so.1 ]] || die "--dry-run needs the simulated driver $sim/libcuda.so.1 (build the project first)"
	sim_args=(--dry-run --sim-lib "$sim")
fi

# ---- 2. versions, the jobs, the checks (kit.py) -------------------------------
# bench_record's pair child, timed on this driver by overhead.py (step 3):
# carried in bin/, or built here in bench/
bench=
for candidate in "$prefix/bin/bench_record" "$prefix/bench/bench_record"; do
	[[ -x $candidate ]] && bench=$candidate && break
done
overhead_budget=0
[[ -n $bench ]] && overhead_budget=$overhead_seconds
((overhead_budget > 0)) || bench= # --overhead 0: no step 3

step "versions and jobs (budget $((budget - SECONDS - overhead_budget))s)"
left=$((budget - SECONDS - 15 - overhead_budget)) # keep time for the tarball and step 3
((left > 30)) || die "no time left for the jobs ($left s)"
command -v python3 >/dev/null || die "python3 is needed"
python3 "$here/kit.py" --vramtrace "$vramtrace" --out "$out" --work "$work" --jobs "$jobs" \
	--modes "$modes" --budget "$left" --run-timeout "$run_timeout" "${sim_args[@]}"
status=$?

# ---- 3. what recording costs on this driver (a table, never a check) --------
if [[ -n $bench ]]; then
	step "recording cost on this driver (budget ${overhead_budget}s)"
	overhead_env=()
	((dry_run)) && overhead_env=(LD_LIBRARY_PATH="$sim")
	env "${overhead_env[@]}" python3 "$here/overhead.py" --bench "$bench" \
		--shim "$prefix/lib/libvramtrace.so" --out "$out/overhead.md" --budget "$((overhead_budget - 5))" ||
		echo "overhead.py: some case failed (see above); the checks' result stands"
else
	step "recording cost: skipped (--overhead 0, or no bench_record in $prefix)"
fi
step "done: exit $status; summary in $out/summary.md"
exit $status
