"""`vramtrace` and `python -m vramtrace`: the packaged vramtrace command.

Arguments go to the C command (bin/vramtrace in the package) unchanged,
except for what this wrapper answers itself:

  vramtrace --version                the package's version
  vramtrace --prefix                 the folder holding bin/, lib/, include/
                                     (lib/pkgconfig/vramtrace.pc for C/C++ jobs)
  vramtrace --simulated-driver CMD   CMD (run, ...) on the packaged simulated
                                     CUDA driver: no GPU needed. Only when asked:
                                     this flag or VRAMTRACE_SIMULATED_DRIVER=1
  vramtrace demo [-o DIR]            trace a small job on the simulated driver,
                                     then print its report
"""
import os
import subprocess
import sys
import tempfile

from . import __version__, _paths

USAGE_EXTRA = """
packaged (Python) options:
  vramtrace --version
  vramtrace --prefix
  vramtrace --simulated-driver COMMAND ...   (or VRAMTRACE_SIMULATED_DRIVER=1)
  vramtrace demo [-o DIR]
"""


def _sim_env(env):
    """env with the packaged simulated driver first on LD_LIBRARY_PATH."""
    folder = _paths.simdriver_dir()
    env = dict(env)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = folder + (":" + old if old else "")
    print(f"vramtrace: on the simulated CUDA driver ({folder}/libcuda.so.1): no GPU is used",
          file=sys.stderr)
    return env


def _demo(args):
    out = None
    rest = list(args)
    while rest:
        a = rest.pop(0)
        if a in ("-o", "--output") and rest:
            out = rest.pop(0)
        elif a in ("-h", "--help"):
            print("usage: vramtrace demo [-o DIR]\n\nTraces a small job (the CUDA driver API "
                  "through ctypes, with step markers) on the packaged simulated driver, "
                  "then prints `vramtrace report DIR`.")
            return 0
        else:
            print(f"vramtrace demo: unknown option '{a}'", file=sys.stderr)
            return 2
    if out is None:
        out = os.path.join(tempfile.mkdtemp(prefix="vramtrace-demo-"), "trace")
    binary = _paths.binary()
    env = _sim_env(os.environ)
    env.setdefault("VT_SIM_CAPACITY", "4G")
    package_parent = os.path.dirname(_paths.PACKAGE_DIR)  # the job imports vramtrace
    env["PYTHONPATH"] = package_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    job = os.path.join(_paths.PACKAGE_DIR, "_demo_job.py")
    ran = subprocess.run([binary, "run", "-o", out, "--", sys.executable, job], env=env)
    if ran.returncode != 0:
        return ran.returncode
    print(f"\n$ vramtrace report {out}\n", flush=True)
    return subprocess.run([binary, "report", out]).returncode


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    env = os.environ
    simulated = os.environ.get("VRAMTRACE_SIMULATED_DRIVER", "") not in ("", "0")
    while args and args[0] == "--simulated-driver":
        simulated = True
        args.pop(0)
    if args[:1] == ["--version"]:
        print(f"vramtrace {__version__}")
        return 0
    if args[:1] == ["--prefix"]:
        print(_paths.prefix())
        return 0
    if args[:1] == ["demo"]:
        return _demo(args[1:])
    try:
        binary = _paths.binary()
        if simulated:
            env = _sim_env(env)
    except FileNotFoundError as error:
        print(f"vramtrace: {error}", file=sys.stderr)
        return 1
    if args[:1] in (["-h"], ["--help"]):
        sys.stdout.flush()
        code = subprocess.run([binary] + args, env=env).returncode
        try:
            print(USAGE_EXTRA, end="", flush=True)
        except BrokenPipeError:  # `vramtrace --help | head`
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return code
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(binary, [binary] + args, env)


if __name__ == "__main__":
    sys.exit(main())
