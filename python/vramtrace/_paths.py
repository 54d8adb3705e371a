"""Where the packaged C parts are.

Installed (pip), the package holds them in the layout `cmake --install`
makes: bin/vramtrace (the command), lib/libvramtrace.so (the shim, found by
the command at ../lib/ relative to itself) and lib/simdriver/libcuda.so.1
(the simulated driver). VRAMTRACE_PREFIX points elsewhere: a CMake build
tree (build/bin, build/lib, build/tests/simdriver) or an install prefix.
"""
import os

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def prefix():
    return os.environ.get("VRAMTRACE_PREFIX") or PACKAGE_DIR


def binary():
    """The vramtrace command (C), or FileNotFoundError."""
    path = os.path.join(prefix(), "bin", "vramtrace")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"the vramtrace command is not at {path} (install the package with "
            f"`pip install`, or set VRAMTRACE_PREFIX to a build or install prefix)")
    return path


def simdriver_dir():
    """The folder holding the simulated libcuda.so.1, or FileNotFoundError."""
    root = prefix()
    for folder in (os.path.join(root, "lib", "simdriver"), os.path.join(root, "tests", "simdriver")):
        if os.path.isfile(os.path.join(folder, "libcuda.so.1")):
            return folder
    raise FileNotFoundError(f"no simulated driver (lib/simdriver/libcuda.so.1) under {root}")
