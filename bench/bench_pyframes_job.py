"""Per-event cost of Python frames in a real traced job: a Python program
calls cuMemAlloc_v2/cuMemFree_v2 on the simulated driver through ctypes,
N times at a given Python stack depth, under `vramtrace run`.

usage: bench_pyframes_job.py VRAMTRACE SIMDRIVER_DIR [PYTHON...]
Prints rows of the bench table ("pyframes<TAB>case<TAB>value<TAB>unit"): ns
per event (one alloc or one free) with no shim, with the shim and
VRAMTRACE_PYTHON=0, and with Python frames on."""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time

N = 20000


def job(depth):
    cuda = ctypes.CDLL(os.environ["VT_TEST_LIBCUDA"])
    assert cuda.cuInit(0) == 0
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0
    alloc, free = cuda.cuMemAlloc_v2, cuda.cuMemFree_v2
    ptr = ctypes.c_uint64()
    ref, size = ctypes.byref(ptr), ctypes.c_size_t(4096)

    def loop():
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter_ns()
            for _ in range(N):
                alloc(ref, size)
                free(ptr)
            best = min(best, time.perf_counter_ns() - t0)
        return best / (2 * N)

    def nest(d):
        return loop() if d <= 1 else nest(d - 1)
    print(f"{nest(depth):.0f}")


def main():
    if sys.argv[1] == "--job":
        job(int(sys.argv[2]))
        return
    vramtrace, simdir = sys.argv[1], sys.argv[2]
    pythons = sys.argv[3:] or [sys.executable]
    lib = os.path.join(simdir, "libcuda.so.1")
    work = tempfile.mkdtemp(prefix="vt-bench-py-")
    try:
        for py in pythons:
            ver = subprocess.run([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True).stdout.strip()
            for depth in (10, 50):
                for label, shim, env in (("no shim", False, {}),
                                         ("shim, VRAMTRACE_PYTHON=0", True, {"VRAMTRACE_PYTHON": "0"}),
                                         ("shim, Python frames on", True, {})):
                    e = dict(os.environ, VT_TEST_LIBCUDA=lib, LD_LIBRARY_PATH=simdir, **env)
                    cmd = [py, __file__, "--job", str(depth)]
                    if shim:
                        trace = os.path.join(work, "t")
                        shutil.rmtree(trace, ignore_errors=True)
                        cmd = [vramtrace, "run", "-o", trace, "--"] + cmd
                    out = subprocess.run(cmd, env=e, capture_output=True, text=True)
                    value = out.stdout.split()[0] if out.returncode == 0 else "n/a (failed)"
                    print(f"pyframes\tpy{ver} traced job, depth {depth}: {label}\t{value}\tns/event")
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
