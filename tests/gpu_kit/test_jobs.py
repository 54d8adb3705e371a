#!/usr/bin/env python3
"""The framework jobs on a machine without a GPU: each must end EARLY with
one clear line on stderr and its distinct exit code (3 no CUDA device,
4 package missing, 2 usage), never a Python traceback. Also check.sh's
argument handling. Runs without any vramtrace binary."""
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOBS = os.path.join(REPO, "samples", "frameworks")
CHECK = os.path.join(REPO, "samples", "gpu", "check.sh")

# script, the module it needs, extra arguments
CASES = [
    ("torch_train.py", "torch", ["--feed", "whole"]),
    ("torch_train.py", "torch", ["--feed", "stream"]),
    ("jax_train.py", "jax", ["--feed", "whole"]),
    ("jax_train.py", "jax", ["--feed", "stream"]),
    ("cupy_job.py", "cupy", []),
    ("keras_slices.py", "tensorflow", []),
]


def no_driver_env(**extra):
    """This machine's environment minus any driver on the library path."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    env.update(extra)
    return env


def run_job(script, args, env):
    return subprocess.run([sys.executable, os.path.join(JOBS, script), *args], env=env,
                          capture_output=True, text=True, timeout=120)


class FailsEarly(unittest.TestCase):
    def assert_clean_failure(self, proc, script, code, words):
        name = script[:-3]
        self.assertEqual(proc.returncode, code, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        self.assertNotIn("VRAMTRACE_RESULT", proc.stdout)
        last = proc.stderr.strip().splitlines()[-1]
        self.assertTrue(last.startswith(f"{name}: "), last)
        self.assertIn(words, last)
        # Our message is one line: nothing of ours before it.
        self.assertEqual(sum(l.startswith(f"{name}: ") for l in proc.stderr.splitlines()), 1, proc.stderr)

    def test_each_job_without_gpu(self):
        for script, module, args in CASES:
            with self.subTest(script=script, args=args):
                installed = importlib.util.find_spec(module) is not None
                proc = run_job(script, args, no_driver_env())
                if installed:
                    self.assert_clean_failure(proc, script, 3, "no CUDA device: ")
                else:
                    self.assert_clean_failure(proc, script, 4, "is not installed")

    def test_each_job_with_its_package_broken(self):
        """Installed or not here: a package that fails to import is exit 4."""
        with tempfile.TemporaryDirectory() as blocked:
            for module in {m for _, m, _ in CASES}:
                os.makedirs(os.path.join(blocked, module))
                with open(os.path.join(blocked, module, "__init__.py"), "w") as f:
                    f.write(f"raise ImportError('{module} blocked by the test')\n")
            env = no_driver_env(PYTHONPATH=blocked)
            # the jobs import numpy first: without it, that is the package named
            numpy = importlib.util.find_spec("numpy") is not None
            for script, module, args in CASES:
                with self.subTest(script=script):
                    proc = run_job(script, args, env)
                    words = f"{module} blocked by the test" if numpy else "numpy is not installed"
                    self.assert_clean_failure(proc, script, 4, words)

    def test_driver_job_without_driver(self):
        proc = run_job("driver_ctypes.py", [], no_driver_env(VT_JOB_LIBCUDA="libcuda-absent.so.1"))
        self.assert_clean_failure(proc, "driver_ctypes.py", 3, "cannot load the driver")

    def test_bad_sizes_are_usage_errors(self):
        proc = run_job("torch_train.py", ["--samples", "100", "--batch", "64"], no_driver_env())
        self.assert_clean_failure(proc, "torch_train.py", 2, "multiple of --batch")
        proc = run_job("keras_slices.py", ["--epochs", "0"], no_driver_env())
        self.assert_clean_failure(proc, "keras_slices.py", 2, "--epochs must be positive")


class CheckArguments(unittest.TestCase):
    def check(self, *args):
        return subprocess.run(["bash", CHECK, *args], capture_output=True, text=True, timeout=60)

    def test_help(self):
        proc = self.check("--help")
        self.assertEqual(proc.returncode, 0)
        self.assertIn("--dry-run", proc.stdout)

    def test_bad_arguments(self):
        with tempfile.TemporaryDirectory() as out:
            for args, words in ((["--bogus"], "unknown argument '--bogus'"), (["-o"], "-o needs a value"),
                                (["--budget", "soon"], "take whole seconds"),
                                (["--prefix", "/nonexistent", "-o", out + "/o", "--work", out + "/w"],
                                 "/nonexistent/bin/vramtrace is missing")):
                with self.subTest(args=args):
                    proc = self.check(*args)
                    self.assertEqual(proc.returncode, 2, proc.stderr + proc.stdout)
                    self.assertIn(words, proc.stderr + proc.stdout)

    def test_unknown_job_is_refused_by_the_runner(self):
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([sys.executable, os.path.join(REPO, "samples", "gpu", "kit.py"), "--vramtrace",
                                   "x", "--out", out, "--work", out, "--jobs", "torch-whole,pytorch"],
                                  capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("unknown job or mode: pytorch", proc.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
