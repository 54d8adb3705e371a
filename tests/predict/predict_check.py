#!/usr/bin/env python3
"""`vramtrace predict` end to end: the simulated trainer under `vramtrace run`
on the simulated driver (VT_SIM_CAPACITY makes out-of-memory real) at a few
batch sizes, the predictions checked against runs at the predicted sizes.

  predict_check.py --vramtrace BIN --trainer BIN --simdriver DIR --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

MIB = 1 << 20
# per sample: 256 KiB uploaded (two batches live: the one in use and the
# next), 1 MiB of activations in each of the 4 layers; big enough that the
# peak is where all four activations are live at every batch tried
PER_SAMPLE = ["--batch-bytes", "256K", "--act-bytes", "1M", "--steps", "6"]
CAPACITY = "200M"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


class Env:
    def __init__(self, a):
        self.vt, self.trainer, self.work = a.vramtrace, a.trainer, a.work
        self.env = dict(os.environ, LD_LIBRARY_PATH=a.simdriver)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)

    def path(self, name):
        return os.path.join(self.work, name)

    def trace(self, name, args, capacity=CAPACITY):
        """The trainer with args under `vramtrace run`; the job's exit code."""
        env = dict(self.env, VT_SIM_CAPACITY=capacity)
        p = subprocess.run([self.vt, "run", "-o", self.path(name), "--", self.trainer] + args,
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=120)
        return p.returncode

    def batch(self, n, capacity=CAPACITY):
        name = f"b{n}"
        rc = self.trace(name, ["--batch", str(n)] + PER_SAMPLE, capacity)
        check(rc == 0, f"trainer at batch {n} exited {rc}")
        return self.path(name)

    def predict(self, *args, want_rc=0):
        p = subprocess.run([self.vt, "predict"] + list(args) + ["--json"], capture_output=True,
                           text=True, timeout=120)
        check(p.returncode == want_rc,
              f"predict {' '.join(args)}: exit {p.returncode}, want {want_rc}: {p.stderr}")
        return json.loads(p.stdout)

    def rc(self, *args):
        p = subprocess.run([self.vt, "predict"] + list(args), capture_output=True, text=True,
                           timeout=120)
        return p.returncode, p.stderr

    def measured_peak(self, trace):
        p = subprocess.run([self.vt, "report", trace, "--json"], capture_output=True, text=True,
                           timeout=120)
        check(p.returncode == 0, f"report {trace}")
        return json.loads(p.stdout)["devices"][0]["peak_bytes"]


def test_peak_at_8b(e):
    """From b and 2b (batch sizes read from the trainer's batch_size marker),
    the peak at 8b within 5 % of a run at 8b."""
    b = 4
    d = e.predict(e.batch(b), e.batch(2 * b), "--at", str(8 * b))
    check([r["batch"] for r in d["runs"]] == [b, 2 * b], f"batches from the markers: {d['runs']}")
    predicted = d["devices"]["0"]["predicted"][0]["peak"]
    measured = e.measured_peak(e.batch(8 * b))
    miss = abs(predicted - measured) / measured
    print(f"batch {8 * b}: predicted {predicted} B, measured {measured} B, off by {100 * miss:.2f} %")
    check(miss <= 0.05, f"predicted {predicted} vs measured {measured}: {100 * miss:.1f} % off")
    cats = d["devices"]["0"]["categories"]
    per_sample = cats["activations"]["per_sample"]  # JSON doubles keep 6 digits
    check(cats["activations"]["shape"] == "linear" and abs(per_sample - 4 * MIB) < 16,
          f"activations grow 4 MiB a sample: {cats['activations']}")
    check(cats["weights"]["shape"] == "constant", f"weights constant: {cats['weights']}")
    check(not d["uncertain"], f"nothing uncertain: {d['doubts']}")


def test_largest_fit(e):
    """The largest batch predicted to fit VT_SIM_CAPACITY runs; one more
    runs out of memory."""
    d = e.predict(e.path("b4"), e.path("b8"))
    check(d["devices"]["0"]["capacity_from"] == "trace", "capacity from the trace")
    n = d["largest_batch"]
    check(isinstance(n, int) and n > 8, f"a largest batch: {n}")
    print(f"largest batch that fits {CAPACITY}: {n}")
    check(e.trace("fit", ["--batch", str(n)] + PER_SAMPLE) == 0, f"batch {n} should fit")
    check(e.trace("over", ["--batch", str(n + 1)] + PER_SAMPLE) == 1,
          f"batch {n + 1} should run out of memory")
    # the margin and --capacity move it; --require-batch gates on it
    d = e.predict(e.path("b4"), e.path("b8"), "--margin", "50")
    check(d["largest_batch"] < n, f"a 50 % margin fits fewer: {d['largest_batch']}")
    d = e.predict(e.path("b4"), e.path("b8"), "--capacity", "1G")
    check(d["largest_batch"] > n and d["devices"]["0"]["capacity_from"] == "flag", "--capacity")
    e.predict(e.path("b4"), e.path("b8"), "--require-batch", str(n))
    d = e.predict(e.path("b4"), e.path("b8"), "--require-batch", str(n + 1), want_rc=3)
    check(d["gate"]["failed"] and d["gate"]["reasons"], "the gate says why")
    # three runs on one line: the extra one confirms it
    d = e.predict(e.path("b4"), e.path("b8"), e.batch(16))
    check(not d["uncertain"], f"three runs on a line: {d['doubts']}")


def test_constant(e):
    """A job whose memory does not grow with the batch: constant, any batch fits."""
    for name in ("k1", "k2"):
        check(e.trace(name, ["--steps", "6"]) == 0, name)
    d = e.predict(e.path("k1") + "=8", e.path("k2") + "=16", "--at", "4096")
    cats = d["devices"]["0"]["categories"]
    check(all(c["shape"] == "constant" for c in cats.values()), f"all constant: {cats}")
    check(d["largest_batch"] is None and d["any_batch_fits"], "any batch fits")
    peak = e.measured_peak(e.path("k1"))
    check(d["devices"]["0"]["predicted"][0]["peak"] == peak, "the peak stays")


def test_disagreeing_runs(e):
    """Activations that shrink while the batch grows: uncertain, and a gate fails."""
    check(e.trace("s1", ["--act-bytes", "4M", "--steps", "6"]) == 0, "s1")
    check(e.trace("s2", ["--act-bytes", "2M", "--steps", "6"]) == 0, "s2")
    s1, s2 = e.path("s1") + "=8", e.path("s2") + "=16"
    d = e.predict(s1, s2)
    check(d["uncertain"] and any("activations" in x for x in d["doubts"]), f"doubts: {d['doubts']}")
    check(d["devices"]["0"]["categories"]["activations"]["uncertain"], "activations uncertain")
    d = e.predict(s1, s2, "--require-batch", "1", want_rc=3)
    check(any("uncertain" in x for x in d["gate"]["reasons"]), d["gate"])
    e.predict(s1, s2, "--at", "32", "--fail-if-over", "1T", want_rc=3)
    # a run in between off the line through the others
    check(e.trace("m", ["--batch", "8", "--batch-bytes", "256K", "--act-bytes", "2M",
                        "--steps", "6"]) == 0, "m")
    d = e.predict(e.path("b4"), e.path("m"), e.path("b16"))
    check(any("off the line" in x for x in d["doubts"]), f"off the line: {d['doubts']}")


def test_errors(e):
    """Usage errors exit 2, input errors 1, a failed gate 3."""
    b4, b8 = e.path("b4"), e.path("b8")
    for args in ([b4], [b4, b8, "--margin", "100"], [b4, b8, "--at", "0"],
                 [b4, b8, "--fail-if-over", "1G"], [b4, b8, "--bogus", "1"]):
        rc, err = e.rc(*args)
        check(rc == 2 and err.count("\n") <= 4, f"usage {args}: exit {rc} {err}")
    rc, err = e.rc(b4, e.path("nothing-here"))
    check(rc == 1 and "nothing-here" in err, f"a missing trace: exit {rc} {err}")
    rc, err = e.rc(b4, e.path("k1"))
    check(rc == 1 and "batch_size" in err, f"no batch size: exit {rc} {err}")
    rc, err = e.rc(b4, b4 + "=4")
    check(rc == 1 and "both at batch 4" in err, f"one batch twice: exit {rc} {err}")
    rc, _ = e.rc(b4, b8, "--at", "32", "--fail-if-over", "100M")
    check(rc == 3, f"--fail-if-over: exit {rc}")
    rc, _ = e.rc(b4, b8, "--at", "32", "--fail-if-over", "1G")
    check(rc == 0, f"--fail-if-over within: exit {rc}")


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--vramtrace", "--trainer", "--simdriver", "--work"):
        ap.add_argument(opt, required=True)
    e = Env(ap.parse_args())
    for t in (test_peak_at_8b, test_largest_fit, test_constant, test_disagreeing_runs,
              test_errors):
        t(e)
        print("ok", t.__name__)


if __name__ == "__main__":
    main()
