"""vramtrace: trace a CUDA job's GPU memory, then explain it.

    vramtrace run -o DIR -- python train.py     # trace (the shim is preloaded)
    vramtrace report DIR                        # explain

In the job, step markers make the report's steady state exact:
    vramtrace.mark("step 12")                   # a no-op outside a trace
    model.fit(..., callbacks=[vramtrace.keras.StepMarker()])      # Keras
    vramtrace.torch.mark_steps(optimizer)                          # PyTorch
    trainer = L.Trainer(callbacks=[vramtrace.lightning.StepMarker()])
    train_step = vramtrace.jax.mark_steps(train_step)              # JAX

After the run:
    report = vramtrace.load(DIR)                # the report as dicts and lists
    report.allocations_dataframe()              # pandas, when installed

Importing vramtrace imports no framework: vramtrace.keras, .torch,
.lightning and .jax are loaded on first use.
"""
import importlib
import json
import subprocess

from . import _paths
from ._marker import active, mark, mark_step
from ._steps import Steps

__all__ = ["mark", "mark_step", "active", "Steps", "load", "Report", "VramtraceError",
           "__version__"]

_FRAMEWORK_MODULES = ("keras", "torch", "lightning", "jax")


def _version():
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # Python < 3.8
        return "unknown"
    try:
        return version("vramtrace")
    except PackageNotFoundError:  # not installed: the source tree's version
        import os
        import re
        top = os.path.join(os.path.dirname(__file__), "..", "..", "CMakeLists.txt")
        try:
            with open(top) as f:
                found = re.search(r"project\(vramtrace\s+VERSION\s+([0-9.]+)", f.read())
        except OSError:
            found = None
        return found.group(1) if found else "unknown"


__version__ = _version()


def __getattr__(name):
    if name in _FRAMEWORK_MODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'vramtrace' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_FRAMEWORK_MODULES))


class VramtraceError(RuntimeError):
    """The vramtrace command failed; .stderr holds what it said."""

    def __init__(self, message, stderr=""):
        super().__init__(message)
        self.stderr = stderr


class Report(dict):
    """`vramtrace report DIR --json --allocs` as a dict: "totals",
    "processes", "devices", "steps", "flags", "sites", "at" and, loaded with
    allocs=True, "allocations" (one dict per allocation)."""

    def allocations_dataframe(self):
        """The allocations as a pandas.DataFrame, one row per allocation
        (pid, device, addr, bytes, t_alloc_ns, t_free_ns, category, site, ...)."""
        try:
            import pandas
        except ImportError as error:
            raise ImportError("allocations_dataframe() needs pandas: "
                              "pip install pandas (or vramtrace[pandas])") from error
        if "allocations" not in self:
            raise ValueError("this report was loaded without allocations (load(..., allocs=True))")
        return pandas.DataFrame(self["allocations"])


def load(trace_dir, *, allocs=True, at=None):
    """The report of the trace in trace_dir, as plain Python objects (a
    Report, which is a dict). Runs the packaged `vramtrace report DIR --json`
    (with --allocs unless allocs=False; at: "peak", "end" or seconds)."""
    cmd = [_paths.binary(), "report", str(trace_dir), "--json"]
    if allocs:
        cmd.append("--allocs")
    if at is not None:
        cmd += ["--at", str(at)]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stderr = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        raise VramtraceError(f"vramtrace report {trace_dir} failed (exit {done.returncode}): "
                             f"{stderr.strip()}", stderr)
    try:
        return Report(json.loads(done.stdout))
    except ValueError as error:
        raise VramtraceError(f"vramtrace report {trace_dir}: output is not JSON: {error}",
                             stderr) from error
