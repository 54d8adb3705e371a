"""What the analyzer's check scripts share: a named check that is printed
and remembered, and a run on a pseudo-terminal (for what the commands do
only on a terminal: colour, the progress bar), and the real-trace fixtures
unpacked."""
import contextlib
import lzma
import os
import pty
import shutil
import subprocess
import tempfile

failures = []


def check(cond, what):
    """Print "ok" or "FAIL" and what was checked; remember a failure."""
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def summary():
    """Print how many checks failed; the script's exit code."""
    print("%d failed" % len(failures))
    return 1 if failures else 0


@contextlib.contextmanager
def generated_trace(gen_trace, events):
    """A trace of `events` generated events (bench/gen_trace.c) in a
    temporary directory, removed afterwards."""
    tmp = tempfile.mkdtemp(prefix="vt-check-")
    try:
        trace = os.path.join(tmp, "trace")
        subprocess.run([gen_trace, trace, str(events)], check=True, stdout=subprocess.DEVNULL)
        yield trace
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def under_pty(cmd, env=None, stderr_too=False):
    """stdout (and stderr with stderr_too, else /dev/null) on a new pty:
    (exit code, what the terminal received, decoded)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=slave, stderr=slave if stderr_too else subprocess.DEVNULL,
                         env=env)
    os.close(slave)
    out = b""
    while True:  # until the child closes its end (EIO on Linux)
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    os.close(master)
    p.wait()
    return p.returncode, out.decode(errors="replace")


def unpack_fixture(fixture, into):
    """A real-trace fixture (tests/analyzer/real/NAME) as a trace directory:
    *.xz decompressed (the logs' unused chunk space is zeros), the rest
    copied. Returns into."""
    for name in os.listdir(fixture):
        src = os.path.join(fixture, name)
        if name.endswith(".xz"):
            with lzma.open(src) as f, open(os.path.join(into, name[:-3]), "wb") as out:
                shutil.copyfileobj(f, out)
        else:
            shutil.copy(src, into)
    return into
