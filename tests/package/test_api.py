"""The Python package's API against a CMake build tree: PYTHONPATH=python,
VRAMTRACE_PREFIX=BUILD (bin/vramtrace, lib/libvramtrace.so,
tests/simdriver/libcuda.so.1). Run by ctest (package_python_api):

  PYTHONPATH=python VRAMTRACE_PREFIX=build python3 -m unittest discover -s tests/package -v
"""
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

import vramtrace
from vramtrace import _marker, _paths

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before any tensorflow import
HERE = os.path.dirname(os.path.abspath(__file__))
FRAMEWORKS = ("tensorflow", "keras", "tf_keras", "torch", "jax", "lightning",
              "pytorch_lightning", "pandas")


def importable(name):
    return importlib.util.find_spec(name) is not None


@contextlib.contextmanager
def recorded_marks():
    """vramtrace.mark() hands its text to a list instead of the shim."""
    texts = []
    saved = _marker._fn
    _marker._fn = texts.append
    try:
        yield texts
    finally:
        _marker._fn = saved


def cli(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "vramtrace", *args], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def plain_env():
    """This environment without a driver on the loader's path or a preload."""
    env = dict(os.environ)
    for name in ("LD_LIBRARY_PATH", "LD_PRELOAD", "VRAMTRACE_SIMULATED_DRIVER"):
        env.pop(name, None)
    return env


class Untraced(unittest.TestCase):
    def test_import_loads_no_framework(self):
        code = ("import sys, vramtrace; vramtrace.mark('step 1'); "
                f"print(','.join(m for m in {FRAMEWORKS!r} if m in sys.modules))")
        done = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              check=True)
        self.assertEqual(done.stdout.strip(), "")

    def test_mark_is_a_noop_without_the_shim(self):
        self.assertNotIn("libvramtrace", os.environ.get("LD_PRELOAD", ""))
        self.assertFalse(vramtrace.active())
        self.assertFalse(vramtrace.mark("step 12"))
        self.assertFalse(vramtrace.mark_step(13))
        with vramtrace.Steps():
            pass

    def test_mark_text(self):
        with recorded_marks() as texts:
            self.assertTrue(vramtrace.mark("step 12"))
            vramtrace.mark(b"raw")
            vramtrace.mark("caf\u00e9 \0 after a NUL")
            vramtrace.mark_step("7")
        self.assertEqual(texts, [b"step 12", b"raw", "caf\u00e9 ".encode(), b"step 7"])

    def test_version(self):
        done = cli("--version", check=True)
        self.assertEqual(done.stdout.strip(), f"vramtrace {vramtrace.__version__}")
        self.assertRegex(vramtrace.__version__, r"^\d+\.\d+")

    def test_help_lists_the_commands_and_the_packaged_options(self):
        done = cli("--help", check=True)
        for text in ("\n  run ", "\n  report ", "--simulated-driver", "demo"):
            self.assertIn(text, done.stdout)

    def test_unknown_command_is_the_c_commands_answer(self):
        done = cli("no-such-command")
        self.assertEqual(done.returncode, 2)
        self.assertIn("unknown command", done.stderr)

    def test_load_of_no_trace_raises(self):
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaises(vramtrace.VramtraceError):
                vramtrace.load(os.path.join(empty, "missing"))


class Helpers(unittest.TestCase):
    def test_torch_optimizer_post_hook(self):
        class Optimizer:  # the one method mark_steps uses
            def __init__(self):
                self.hooks = []

            def register_step_post_hook(self, hook):
                self.hooks.append(hook)
                return "handle"

            def step(self):
                for hook in self.hooks:
                    hook(self, (), {})

        optimizer = Optimizer()
        with recorded_marks() as texts:
            self.assertEqual(vramtrace.torch.mark_steps(optimizer), "handle")
            self.assertEqual(texts, [])
            for _ in range(3):
                optimizer.step()
        self.assertEqual(texts, [b"step 1", b"step 2", b"step 3"])
        with self.assertRaises(TypeError):
            vramtrace.torch.mark_steps(object())
        self.assertNotIn("torch", sys.modules)

    def test_jax_decorator_and_context_manager(self):
        calls = []
        with recorded_marks() as texts:
            @vramtrace.jax.mark_steps
            def train_step(x):
                calls.append(x)
                return x + 1

            self.assertEqual([train_step(i) for i in range(3)], [1, 2, 3])
            later = vramtrace.jax.mark_steps(start=10)(lambda: None)
            later()
            steps = vramtrace.jax.Steps(start=20)
            for _ in range(2):
                with steps:
                    pass
        self.assertEqual(calls, [0, 1, 2])
        self.assertEqual(texts, [b"step 0", b"step 1", b"step 2", b"step 10", b"step 20", b"step 21"])
        self.assertNotIn("jax", sys.modules)

    def test_lightning_callback(self):
        class Callback:
            pass

        names = ("lightning", "lightning.pytorch", "lightning.pytorch.callbacks")
        fakes = {name: types.ModuleType(name) for name in names}
        fakes["lightning.pytorch.callbacks"].Callback = Callback
        saved = {name: sys.modules.get(name) for name in names + ("vramtrace.lightning",)}
        sys.modules.update(fakes)
        sys.modules.pop("vramtrace.lightning", None)
        try:
            marker = vramtrace.lightning.StepMarker(start=5)
            self.assertIsInstance(marker, Callback)
            with recorded_marks() as texts:
                for i in range(2):
                    marker.on_train_batch_start(None, None, None, i)
            self.assertEqual(texts, [b"step 5", b"step 6"])
        finally:
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module

    @unittest.skipUnless(importable("tensorflow"), "tensorflow is not installed")
    def test_keras_callback_marks_each_batch_start(self):
        import numpy as np
        import tensorflow as tf
        model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse")
        x = np.zeros((12, 4), "float32")
        y = np.zeros((12, 2), "float32")
        marker = vramtrace.keras.StepMarker()
        with recorded_marks() as texts:
            model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[marker])
        self.assertEqual(texts, [f"step {n}".encode() for n in range(6)])


class Traced(unittest.TestCase):
    """Jobs under `vramtrace --simulated-driver run` on the build's simulated driver."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="vt-package-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def trace(self, name, *job):
        out = os.path.join(self.tmp.name, name)
        done = cli("--simulated-driver", "run", "-o", out, "--", *job, env=plain_env())
        self.assertEqual(done.returncode, 0, done.stderr)
        return out, done

    def test_marks_appear_as_steps(self):
        out, done = self.trace("marks", sys.executable, os.path.join(HERE, "marks_job.py"))
        self.assertIn("marks_job: traced True", done.stdout)
        self.assertIn("on the simulated CUDA driver", done.stderr)
        report = json.loads(subprocess.run([_paths.binary(), "report", out, "--json"],
                                           stdout=subprocess.PIPE, check=True).stdout)
        self.assertEqual(report["steps"]["count"], 5)
        self.assertEqual(report["steps"]["source"], "markers")
        self.assertEqual(report["totals"]["alloc_calls"], 5)
        dump = subprocess.run([_paths.binary(), "dump", out, "--json"], stdout=subprocess.PIPE,
                              text=True, check=True).stdout
        marks = [json.loads(line) for line in dump.splitlines() if '"record":"mark"' in line]
        self.assertEqual([(m["kind"], m["text"]) for m in marks],
                         [("step", f"step {n}") for n in range(5)] + [("user", "checkpoint saved")])

        loaded = vramtrace.load(out)
        self.assertIsInstance(loaded, dict)
        self.assertEqual(loaded["steps"]["count"], 5)
        self.assertEqual(len(loaded["allocations"]), 5)
        self.assertEqual({a["bytes"] for a in loaded["allocations"]}, {1 << 20})
        self.assertNotIn("allocations", vramtrace.load(out, allocs=False))
        if importable("pandas"):
            frame = loaded.allocations_dataframe()
            self.assertEqual(len(frame), 5)
            self.assertIn("bytes", frame.columns)
        else:
            with self.assertRaisesRegex(ImportError, "pip install pandas"):
                loaded.allocations_dataframe()

    def test_the_simulated_driver_only_when_asked(self):
        code = "import os; print('LD_LIBRARY_PATH=' + os.environ.get('LD_LIBRARY_PATH', ''))"
        out = os.path.join(self.tmp.name, "not-asked")
        done = cli("run", "-o", out, "--", sys.executable, "-c", code, env=plain_env())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("LD_LIBRARY_PATH=\n", done.stdout)
        env = plain_env()
        env["VRAMTRACE_SIMULATED_DRIVER"] = "1"
        out = os.path.join(self.tmp.name, "asked-by-env")
        done = cli("run", "-o", out, "--", sys.executable, "-c", code, env=env)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(f"LD_LIBRARY_PATH={_paths.simdriver_dir()}\n", done.stdout)

    def test_demo(self):
        out = os.path.join(self.tmp.name, "demo")
        done = cli("demo", "-o", out, env=plain_env())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("demo job: 8 steps, traced: True", done.stdout)
        self.assertIn("8 steps (markers)", done.stdout)
        self.assertEqual(vramtrace.load(out, allocs=False)["steps"]["count"], 8)


if __name__ == "__main__":
    unittest.main()
