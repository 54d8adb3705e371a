#!/usr/bin/env bash
# Real TensorFlow on a machine without a GPU: the Keras from_tensor_slices
# job (samples/frameworks/keras_slices.py --allow-cpu) must compute exactly
# the same result with and without vramtrace, (a) with no driver at all and
# (b) with the simulated driver on LD_LIBRARY_PATH, where TensorFlow dlopens
# libcuda.so.1 and dlsyms its entry points: the trace must show those dlsym
# lookups (how many, which the shim routed).
#
#   tests/gpu_kit/tf_cpu_check.sh BUILD_DIR [OUT_DIR]
#
# Exit 0 pass, 1 fail, 77 skipped (tensorflow not importable: it is a pip
# package, `python3 -m pip install tensorflow==2.21.0`; the CUDA build, not
# tensorflow-cpu, which never looks for libcuda).
set -uo pipefail
SKIP=77
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd) || exit 2
out=${2:-$build/tests/gpu_kit/tf_cpu}
python=${PYTHON:-python3}
job=$repo/samples/frameworks/keras_slices.py
vramtrace=$build/bin/vramtrace
sim=$build/tests/simdriver

fail() { echo "FAIL: $*"; exit 1; }

if ! why=$("$python" -c 'import tensorflow' 2>&1); then
	echo "SKIPPED: tensorflow could not be installed (import tensorflow: $(tail -1 <<<"$why"))"
	exit $SKIP
fi
[[ -x $vramtrace ]] || fail "$vramtrace is not built"
if [[ $("$vramtrace" run 2>&1) == *"not built into this version"* ]]; then
	echo "SKIPPED: this build has no 'vramtrace run' yet"
	exit $SKIP
fi
[[ -f $sim/libcuda.so.1 ]] || fail "the simulated driver $sim/libcuda.so.1 is not built"
if [[ -z ${LD_LIBRARY_PATH:-} ]] && ldconfig -p 2>/dev/null | grep 'libcuda\.so\.1 ' >/dev/null; then
	echo "note: a real libcuda.so.1 is installed here: case (a) is 'real driver, no GPU used'"
fi
rm -rf "$out" && mkdir -p "$out"

# label, then the command; records exit code and result line.
declare -A result code
run() {
	local label=$1; shift
	local started=$SECONDS
	"$@" >"$out/$label.stdout" 2>"$out/$label.stderr"
	code[$label]=$?
	result[$label]=$(grep '^VRAMTRACE_RESULT ' "$out/$label.stdout" | tail -1)
	printf '%-16s exit %s in %3ds  %s\n' "$label" "${code[$label]}" $((SECONDS - started)) "${result[$label]:-(no result line)}"
}
with_sim() { env LD_LIBRARY_PATH="$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" VT_SIM_CAPACITY=8G "$@"; }

run plain "$python" "$job" --allow-cpu
run plain+sim with_sim "$python" "$job" --allow-cpu
run traced "$vramtrace" run -o "$out/trace-nodriver" -- "$python" "$job" --allow-cpu
run traced+sim with_sim "$vramtrace" run -o "$out/trace-simdriver" -- "$python" "$job" --allow-cpu

status=0
for label in plain plain+sim traced traced+sim; do
	if [[ ${code[$label]} != 0 || -z ${result[$label]} ]]; then
		echo "FAIL: $label: exit ${code[$label]}: $(tail -1 "$out/$label.stderr")"
		status=1
	elif [[ ${result[$label]} != "${result[plain]}" ]]; then
		echo "FAIL: $label: result differs from the plain run"
		status=1
	fi
done
grep -q '"device":"cpu"' "$out/plain.stdout" || { echo "FAIL: the job did not report running on the CPU"; status=1; }

lookups="$python $repo/samples/gpu/trace_lookups.py"
echo
echo "(a) no driver: lookups in $out/trace-nodriver"
if compgen -G "$out/trace-nodriver/vramtrace.*.log" >/dev/null; then
	$lookups "$out/trace-nodriver" || status=1
else
	echo "no log was written: without a driver the shim had nothing to record"
fi
echo
echo "(b) simulated driver: lookups in $out/trace-simdriver"
$lookups "$out/trace-simdriver" --require-path dlsym || status=1
$lookups "$out/trace-simdriver" --json >"$out/lookups-simdriver.json"

((status == 0)) && echo "PASS: TensorFlow $("$python" -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null) results identical in all 4 runs"
exit $status
