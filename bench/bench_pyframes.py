"""Python half of bench_pyframes (see bench_pyframes.c): rows of the bench
table ("pyframes<TAB>case<TAB>value<TAB>unit") for the interpreter running
this script.  usage: PY bench_pyframes.py MODULE on|off full|trampolines-only"""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
mode = sys.argv[2]
only_trampolines = len(sys.argv) > 3 and sys.argv[3] == "trampolines-only"
lib.vt_bench_capture_ns.restype = ctypes.c_double
lib.vt_bench_capture_ns.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint)]
lib.vt_bench_capture_once_ns.restype = ctypes.c_double
ver = "%d.%d" % sys.version_info[:2]


def at_depth(depth, fn):
    if depth <= 1:
        return fn()
    return at_depth(depth - 1, fn)


def row(case, value, unit):
    print(f"pyframes\tpy{ver} {case}\t{value}\t{unit}")


frames = ctypes.c_uint()
for depth in (() if only_trampolines else (1, 10, 50, 200)):
    # best of many short runs: the machine is shared, the minimum is the cost
    best = min(at_depth(depth, lambda: lib.vt_bench_capture_ns(2000, 256, ctypes.byref(frames)))
               for _ in range(100))
    if mode == "off":
        row("capture, VRAMTRACE_PYTHON=0 (a Python thread)", f"{best:.1f}", "ns/event")
        break
    row(f"capture, {frames.value} frames, same stack again", f"{best:.1f}", "ns/event")

if mode == "on" and not only_trampolines:
    # A new stack each time: new code objects, new names: lines decoded and
    # names interned (written once) on every capture.
    samples = []
    for i in range(2000):
        ns = {}
        exec(compile(f"def f_{i}(lib):\n    return lib.vt_bench_capture_once_ns(256)\n",
                     f"/bench/generated_{i}.py", "exec"), ns)
        samples.append(at_depth(10, lambda: ns[f"f_{i}"](lib)))
    samples.sort()
    row("capture, ~11 frames, new code objects (names interned, lines decoded)",
        f"{samples[len(samples) // 2]:.0f}", "ns/event")

    # Our location-table decoder against PyCode_Addr2Line (3.11+).
    if sys.version_info >= (3, 11):
        import dis
        import inspect
        biggest = max((getattr(f, "__code__", None) for f in vars(inspect).values()
                       if inspect.isfunction(f)), key=lambda c: len(c.co_code))
        addrs = [a for s, e, _ in biggest.co_lines() for a in range(s, e, 2)]
        arr = (ctypes.c_int * len(addrs))(*addrs)
        own, api = ctypes.c_double(), ctypes.c_double()
        lib.vt_bench_lines.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                       ctypes.c_int, ctypes.c_void_p, ctypes.c_uint,
                                       ctypes.c_uint, ctypes.POINTER(ctypes.c_double),
                                       ctypes.POINTER(ctypes.c_double)]
        ok = lib.vt_bench_lines(id(biggest), biggest.co_linetable, len(biggest.co_linetable),
                                biggest.co_firstlineno, arr, len(addrs), 200,
                                ctypes.byref(own), ctypes.byref(api))
        what = f"line of an offset in a {len(addrs)}-offset function"
        row(f"{what}: own co_linetable decoder", f"{own.value:.0f}" if ok >= 0 else "differs", "ns")
        row(f"{what}: PyCode_Addr2Line", f"{api.value:.0f}", "ns")

if mode == "on" and sys.version_info >= (3, 12) and hasattr(sys, "activate_stack_trampoline"):
    # The other route: perf trampolines (PYTHONPERFSUPPORT=1 / -X perf). They
    # put one native frame per Python call, named in /tmp/perf-PID.map
    # ("py::func:file", no line). What they cost the job, and whether a DWARF
    # unwinder (libunwind, glibc backtrace) still walks through them.
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def timed():
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter_ns()
            fib(22)
            best = min(best, time.perf_counter_ns() - t0)
        return best

    lib.vt_bench_native_walk.argtypes = [ctypes.POINTER(ctypes.c_uint)] * 2
    depth, evals = ctypes.c_uint(), ctypes.c_uint()
    plain = timed()
    at_depth(10, lambda: lib.vt_bench_native_walk(ctypes.byref(depth), ctypes.byref(evals)))
    walk_plain = (depth.value, evals.value)
    sys.activate_stack_trampoline("perf")
    try:
        tramp = timed()
        at_depth(10, lambda: lib.vt_bench_native_walk(ctypes.byref(depth), ctypes.byref(evals)))
        walk_tramp = (depth.value, evals.value)
    finally:
        sys.deactivate_stack_trampoline()
        import os
        try:
            os.remove(f"/tmp/perf-{os.getpid()}.map")
        except OSError:
            pass
    row("perf trampolines: pure-Python fib(22) slowdown", f"{100 * (tramp - plain) / plain:+.0f}", "%")
    row("perf trampolines: native frames a DWARF unwinder sees from depth 10",
        f"{walk_plain[0]} -> {walk_tramp[0]}", "frames")
