"""On a CPython the shim has no layout for: no frames, no crash, one note."""
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
words = (ctypes.c_uint64 * 64)()
for _ in range(3):
    n = lib.probe_capture(words, 32)
    if n != 0:
        print(f"FAIL: {n} frames captured on unsupported {sys.version_info[:2]}")
        sys.exit(1)
notes = lib.vt_fake_notes()
if notes != 1:
    print(f"FAIL: expected one note saying why, got {notes}")
    sys.exit(1)
print("ok: no frames and one note on", sys.version.split()[0])
