"""vramtrace.mark(): the shim's vramtrace_mark, looked up in this process.

Under `vramtrace run` the shim (libvramtrace.so) is preloaded, so its
exported `void vramtrace_mark(const char *text)` (include/vramtrace/
vramtrace.h) is in the process's global symbol scope: ctypes.CDLL(None)
finds it. Anywhere else the lookup fails once and every mark is a no-op.
"""
import ctypes
import threading

_UNSET = object()
_fn = _UNSET
_lock = threading.Lock()


def _lookup():
    try:
        fn = ctypes.CDLL(None).vramtrace_mark
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = None
    return fn


def _resolve():
    global _fn
    with _lock:
        if _fn is _UNSET:
            _fn = _lookup()
        return _fn


def active():
    """True when this process is traced (the shim is loaded)."""
    fn = _fn if _fn is not _UNSET else _resolve()
    return fn is not None


def mark(text):
    """Record a marker with the current time in the trace; a no-op outside one.

    Text of the form "step N" marks the start of training step N: the report
    then finds the steady state from the markers instead of guessing it;
    "batch_size N" states the batch size for `vramtrace predict`.
    Returns True when the marker was handed to the shim, False when this
    process is not traced. Safe from any thread; never raises for a trace.
    """
    fn = _fn if _fn is not _UNSET else _resolve()
    if fn is None:
        return False
    if not isinstance(text, bytes):
        text = str(text).encode("utf-8", "replace")
    fn(text.split(b"\0", 1)[0])
    return True


def mark_step(n):
    """mark("step N"): training step N starts now."""
    return mark(f"step {int(n)}")
