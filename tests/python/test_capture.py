"""Python frames captured by the shim's code (interpose/pyframes.c, linked
into a probe .so with a fake log) against Python's own traceback, on the
interpreter running this script.

usage: python3 test_capture.py PROBE_SO
Exits non-zero with a message on the first mismatch."""
import ctypes
import sys
import threading
import traceback

import pf_other

lib = ctypes.CDLL(sys.argv[1])
lib.probe_capture.restype = ctypes.c_uint
lib.probe_capture.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint]
lib.probe_string.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t,
                             ctypes.POINTER(ctypes.c_uint)]
lib.probe_location_line.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int,
                                    ctypes.c_int]
failures = []


def text(ident):
    buf = ctypes.create_string_buffer(4096)
    copies = ctypes.c_uint()
    if lib.probe_string(ident, buf, len(buf), ctypes.byref(copies)) != 0:
        return None
    return buf.value.decode()


def decode(words, n):
    out = []
    for i in range(n):
        w0, w1 = words[2 * i], words[2 * i + 1]
        out.append((text(w0 >> 32), text(w0 & 0xffffffff), w1 >> 32, w1 & 0xffff))
    return out


def capture(max_frames=256):
    words = (ctypes.c_uint64 * 512)()
    n = lib.probe_capture(words, max_frames); st = traceback.extract_stack()  # noqa: E702
    return decode(words, n), st


def check(name, got, st, limit=None):
    want = [(f.filename, f.name, f.lineno) for f in reversed(st)]
    if limit is not None:
        want = want[:limit]
    have = [(g[0], g[1], g[2]) for g in got]
    if have != want:
        failures.append(name)
        at = next((i for i, (h, w) in enumerate(zip(have, want)) if h != w),
                  min(len(have), len(want)))
        print(f"FAIL {name}: {len(have)} frames, want {len(want)}; first difference at {at}:"
              f"\n  want {want[at:at + 3]}\n  have {have[at:at + 3]}")
        return
    # every frame bound to a native frame must be bound to the eval loop
    bad = [g for g in got if g[3] == 2]
    # glibc's backtrace() sees 256 native frames: a shallow stack is bound
    # entirely, and Python 3.11+ shares eval frames, so more fit.
    if len(got) <= 12:
        bad += [g for g in got if g[3] != 1]
    if bad:
        failures.append(name + " (nidx)")
        print(f"FAIL {name}: frames not bound to an eval-loop native frame: {bad}")
        return
    print(f"ok   {name}: {len(have)} frames, innermost {have[0][1]}:{have[0][2]}")


def scenario(name, runner, limit=None):
    result = {}

    def body():
        result["got"], result["st"] = capture(limit or 256)
        return 0
    runner(body)
    check(name, result["got"], result["st"], limit or 256)


def in_thread(fn):
    t = threading.Thread(target=fn)
    t.start()
    t.join()


def main():
    scenario("direct", lambda f: f())
    scenario("two files, recursion", lambda f: pf_other.relay(f, 5))
    scenario("method", lambda f: pf_other.Holder().method(f))
    scenario("generator", lambda f: next(pf_other.gen(f)))
    scenario("coroutine", lambda f: pf_other.run_coro(f))
    scenario("non-ascii latin1", lambda f: pf_other.données(f))
    scenario("non-ascii ucs2", lambda f: pf_other.数据(f))
    scenario("comprehension", lambda f: [f() for _ in range(1)])
    scenario("__init__, specialised", lambda f: pf_other.construct(f, 50))
    scenario("exec'd code", lambda f: exec("f()", {"f": f}))
    scenario("truncated to 3", lambda f: pf_other.relay(f, 20), limit=3)
    scenario("deep recursion", lambda f: pf_other.relay(f, 300))
    scenario("second thread", lambda f: in_thread(lambda: pf_other.relay(f, 3)))

    def in_except(f):
        try:
            raise ValueError("x")
        except ValueError:
            f()
    scenario("inside except", in_except)

    # Many threads at once: each sees its own frames.
    errors = []

    def worker(k):
        for _ in range(50):
            got, st = pf_other.relay(lambda: capture(), k % 7)
            want = [(f.filename, f.name, f.lineno) for f in reversed(st)]
            if [(g[0], g[1], g[2]) for g in got] != want:
                errors.append(k)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        failures.append("threads")
        print(f"FAIL 8 threads: mismatches in {errors}")
    else:
        print("ok   8 threads x 50 captures")

    # Names interned once: this file's name has one record, however many
    # captures used it (threads raced above: at most a few extra copies).
    buf = ctypes.create_string_buffer(4096)
    lib.vt_fake_count_text.argtypes = [ctypes.c_char_p]
    copies = lib.vt_fake_count_text(__file__.encode())
    if not 1 <= copies <= 3:
        failures.append("interning")
        print(f"FAIL interning: {copies} records for {__file__}")
    else:
        print(f"ok   interning: {copies} record(s) for this file")

    check_linetables()


def check_linetables():
    """Our location-table decoder against co_lines(), for every offset of
    every code object in a few big modules (3.11+ only)."""
    if sys.version_info < (3, 11):
        return
    import dis, inspect, asyncio.base_events, json.decoder  # noqa: E401
    codes, mismatches = 0, 0
    stack = [m.__dict__ for m in (dis, inspect, asyncio.base_events, json.decoder, pf_other)]
    seen = set()
    todo = []
    for d in stack:
        for v in d.values():
            if inspect.isfunction(v):
                todo.append(v.__code__)
            elif inspect.isclass(v):
                todo += [x.__code__ for x in v.__dict__.values() if inspect.isfunction(x)]
    while todo:
        co = todo.pop()
        if id(co) in seen:
            continue
        seen.add(id(co))
        codes += 1
        todo += [c for c in co.co_consts if inspect.iscode(c)]
        table = co.co_linetable
        for start, end, line in co.co_lines():
            for addr in range(start, end, 2):
                got = lib.probe_location_line(table, len(table), co.co_firstlineno, addr)
                if got != (line if line is not None else -1):
                    mismatches += 1
    if mismatches:
        failures.append("linetable")
        print(f"FAIL linetable: {mismatches} mismatches over {codes} code objects")
    else:
        print(f"ok   linetable: {codes} code objects, every offset")


main()
if failures:
    print(f"{len(failures)} failure(s): {failures}")
    sys.exit(1)
print("all python frame checks passed on", sys.version.split()[0])
