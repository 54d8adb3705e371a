#!/usr/bin/env python3
"""`vramtrace oom` and `vramtrace diff` end to end:
real runs of the simulated trainer under `vramtrace run` and the simulated
driver (VT_SIM_CAPACITY makes out-of-memory real), then the commands' JSON
checked against what the job did.

  oom_check.py --vramtrace BIN --trainer BIN --talker BIN --simdriver DIR --work DIR
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

MIB = 1 << 20


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


class Env:
    def __init__(self, a):
        self.vt, self.trainer, self.talker, self.work = a.vramtrace, a.trainer, a.talker, a.work
        self.env = dict(os.environ)
        self.env["LD_LIBRARY_PATH"] = a.simdriver
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)

    def path(self, name):
        return os.path.join(self.work, name)

    def run(self, trace, cmd, capacity, stderr_to=None):
        env = dict(self.env, VT_SIM_CAPACITY=capacity)
        err = open(stderr_to, "wb") if stderr_to else subprocess.DEVNULL
        p = subprocess.run([self.vt, "run", "-o", self.path(trace), "--"] + cmd, env=env,
                           stdout=subprocess.DEVNULL, stderr=err, timeout=120)
        return p.returncode

    def cmd(self, *args):
        p = subprocess.run([self.vt] + list(args), capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def json(self, *args, want_rc=0):
        rc, out, err = self.cmd(*args, "--json")
        check(rc == want_rc, f"{' '.join(args)}: exit {rc}, want {want_rc}: {err}")
        return json.loads(out)

    def failed_allocs(self, trace):
        """The failed allocations as `vramtrace dump` prints them (raw records)."""
        rc, out, _ = self.cmd("dump", self.path(trace))
        check(rc == 0, "dump")
        rows = []
        for line in out.splitlines():
            if line.startswith("alloc ") and " result=2 " in line:
                rows.append(dict(re.findall(r"(\w+)=(\S+)", line)))
        return rows


# ---- 1: out of memory with the whole dataset on the device -----------------
DATASET = 1000 * MIB


def test_driver_oom(e):
    rc = e.run("oom", [e.trainer, "--dataset", "whole", "--dataset-bytes", "1000M",
                       "--steps", "10"], "1G")
    check(rc == 1, f"trainer should die of OOM (exit 1), got {rc}")
    raw = e.failed_allocs("oom")
    check(len(raw) == 1, f"one failed allocation in the log, got {raw}")
    r = e.json("oom", e.path("oom"))
    o = r["oom"]
    check(r["source"] == "driver" and o is not None, "driver OOM reported")
    check(o["bytes"] == int(raw[0]["bytes"]) and o["device"] == int(raw[0]["dev"]),
          f"request {o['bytes']} on {o['device']}, log says {raw[0]['bytes']} on {raw[0]['dev']}")
    check(o["api"] == raw[0]["api"], "api")
    check(o["total_bytes"] == 1 << 30, f"capacity {o['total_bytes']}")
    check(o["free_bytes"] < o["bytes"], "free below the request")
    check(r["need_to_free_bytes"] == o["bytes"] - o["free_bytes"], "need to free")
    # the dataset is live then and labelled so (the classifier may label a
    # batch buffer of the unfinished first step "dataset" too: >=)
    check(r["live_by_category"]["dataset"] >= DATASET,
          f"dataset live then: {r['live_by_category']['dataset']}")
    check(any(s["bytes"] == DATASET and s["category"] == "dataset" for s in r["top_sites"]),
          f"the dataset's site: {r['top_sites']}")
    used = o["total_bytes"] - o["free_bytes"]
    check(r["untracked_bytes"] == max(0, used - r["tracked_live_bytes"]), "untracked = used - tracked")
    check(r["largest_live"][0]["bytes"] == DATASET and r["largest_live"][0]["category"] == "dataset",
          f"largest live: {r['largest_live'][0]}")
    check(any(f["kind"] == "whole_dataset_upload" and f["bytes"] == DATASET for f in r["flags"]),
          f"the whole-dataset flag among those that held memory then: {r['flags']}")
    check(len(r["advice"]) >= 1 and any("dataset" in a for a in r["advice"]), f"advice {r['advice']}")
    check("(no stack)" not in o["site"] and o["site"], f"site {o['site']!r}")
    check(r["clean_exit"] is True, "the trainer exited (with an error) by itself")
    acc = r["accounting"][0]
    parts = sum(acc[k] for k in ("framework_bytes", "pool_bytes", "vmm_bytes", "library_bytes"))
    check(acc["device"] == 0 and acc["used_bytes"] == parts + acc["unexplained_bytes"] -
          acc["overcount_bytes"] and parts >= DATASET, f"accounting {acc}")
    rc, text, _ = e.cmd("oom", e.path("oom"))
    check(rc == 0 and "Out of memory 1 of 1" in text and "whole_dataset_upload" in text, text)
    print(f"  driver OOM: {o['api']} {o['bytes']} B on GPU {o['device']} from {o['site']}; "
          f"free {o['free_bytes']}, need {r['need_to_free_bytes']} more; dataset live "
          f"{r['live_by_category']['dataset']}")
    # --index past the last event: one line, exit 1; a bad index: exit 2
    rc, _, err = e.cmd("oom", e.path("oom"), "--index", "2")
    check(rc == 1 and err.count("\n") == 1 and "1 driver" in err, f"--index 2: {rc} {err}")
    rc, _, _ = e.cmd("oom", e.path("oom"), "--index", "zero")
    check(rc == 2, "--index zero")


# ---- 2: the same job SIGKILLed mid-run --------------------------------------
def wait_for_step(e, trace, step, deadline):
    while time.time() < deadline:
        rc, out, _ = e.cmd("dump", e.path(trace))
        if rc == 0 and f'text="step {step}"' in out:
            return True
        time.sleep(0.1)
    return False


def test_killed(e):
    env = dict(e.env, VT_SIM_CAPACITY="4G")
    launcher = subprocess.Popen([e.vt, "run", "-o", e.path("killed"), "--", e.trainer,
                                 "--dataset", "whole", "--dataset-bytes", "256M", "--steps",
                                 "1000", "--step-sleep-ms", "20"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        check(wait_for_step(e, "killed", 3, time.time() + 60), "the job never reached step 3")
        with open(e.path("killed/run.json")) as f:
            job_pid = json.load(f)["pid"]
        os.kill(job_pid, signal.SIGKILL)
        rc = launcher.wait(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    check(rc == 128 + signal.SIGKILL, f"vramtrace run exit {rc}")
    r = e.json("oom", e.path("killed"))
    check(r["source"] == "none" and r["oom"] is None, "no OOM in a killed run")
    check(r["clean_exit"] is False, "clean_exit must be false")
    died = [p for p in r["processes"] if p["state"] == "died"]
    check(len(died) == 1 and died[0]["pid"] == job_pid, f"processes {r['processes']}")
    d = died[0]
    check(re.fullmatch(r"step \d+", d["last_mark"] or "") is not None, f"last mark {d['last_mark']}")
    check(d["live_by_category"]["dataset"] == 256 * MIB, f"dataset at death: {d['live_by_category']}")
    check(d["live_bytes"] > 256 * MIB, "weights and the rest were live too")
    rc, text, _ = e.cmd("oom", e.path("killed"))
    check(rc == 0 and "did NOT exit cleanly" in text and "No out-of-memory event" in text, text)
    print(f"  killed: pid {job_pid} died after '{d['last_mark']}' holding {d['live_bytes']} B")


# ---- 3: framework OOM messages on stderr, no driver OOM ---------------------
FRAMEWORK_EXPECT = [  # (framework, bytes) in the order the talker prints them
    ("tensorflow", 262144 * 1024 * 4), ("tensorflow", 0), ("xla", 7406166528),
    ("pytorch", 2 << 30)]


def test_framework(e):
    expected = subprocess.run([e.talker, "--expected"], capture_output=True).stdout
    err_path = e.path("fw.err")
    rc = e.run("fw", [e.talker, e.path("fw.isatty"), "--cuda", str(64 * MIB)], "1G", err_path)
    check(rc == 0, f"talker exit {rc}")
    got = open(err_path, "rb").read()
    check(got[:len(expected)] == expected, "stderr bytes changed by the relay")
    after = got[len(expected):]
    check(after.startswith(b"vramtrace: peak ") and b"\nvramtrace: trace in " in after,
          "launcher summary after them")
    for i, (fw, size) in enumerate(FRAMEWORK_EXPECT, 1):
        r = e.json("oom", e.path("fw"), "--index", str(i))
        f = r["framework_oom"]
        check(r["source"] == "framework" and r["oom"] is None, "framework source, no driver OOM")
        check(r["framework_oom_events"] == len(FRAMEWORK_EXPECT), "count of framework messages")
        check(f["framework"] == fw and f["bytes"] == size and f["host"] is False, f"message {i}: {f}")
        check(r["tracked_live_bytes"] == 64 * MIB, f"the pool was live: {r['tracked_live_bytes']}")
    r = e.json("oom", e.path("fw"))
    check("OOM when allocating tensor with shape[262144,1024]" in r["framework_oom"]["message"],
          "message text")
    check(r["device"] == 0 and r["total_bytes"] == 1 << 30, "device and capacity")
    check(r["free_bytes_estimated"] and r["free_bytes"] == (1 << 30) - 64 * MIB,
          f"free then (estimated) {r['free_bytes']}")
    check(r["need_to_free_bytes"] == 64 * MIB, f"need {r['need_to_free_bytes']}")
    rc, text, _ = e.cmd("oom", e.path("fw"))
    check(rc == 0 and "Framework out of memory 1 of 4" in text and "tensorflow said:" in text, text)
    print(f"  framework OOM: {len(FRAMEWORK_EXPECT)} messages, sizes "
          f"{[s for _, s in FRAMEWORK_EXPECT]}, {len(expected)} stderr bytes unchanged")


# ---- 3b: real TensorFlow, when installed (CPU is enough) --------------------
TF_JOB = "import tensorflow as tf\ntf.zeros([2**40], tf.float32)\n"  # 4 TiB: never fits


def test_real_tensorflow(e):
    probe = subprocess.run([sys.executable, "-c", "import tensorflow"], capture_output=True)
    if probe.returncode != 0:
        print("  skipped: tensorflow is not importable here")
        return
    err_path = e.path("tf.err")
    rc = e.run("tf", [sys.executable, "-c", TF_JOB], "1G", err_path)
    check(rc == 1, f"the TF job should fail with ResourceExhaustedError, exit {rc}")
    text = open(err_path, "rb").read()
    check(b"ResourceExhaustedError" in text, "TensorFlow's own message reached stderr")
    first = e.json("oom", e.path("tf"))
    n = first["framework_oom_events"]
    check(n >= 2, f"TF prints its OOM on several lines, {n} recognised")
    sizes = set()
    for i in range(1, n + 1):
        f = e.json("oom", e.path("tf"), "--index", str(i))["framework_oom"]
        check(f["framework"] == "tensorflow" and f["host"] is True, f"message {i}: {f}")
        sizes.add(f["bytes"])
    check(sizes <= {4 << 40, 0} and 4 << 40 in sizes, f"sizes parsed: {sizes}")
    print(f"  real TensorFlow: {n} OOM lines recognised, {4 << 40} bytes, host memory")


# ---- 4: diff of a streaming run and a whole-dataset run ---------------------
def test_diff(e):
    # As from two machines: each run's binary at its own path, both gone
    # before the diff, so each trace is read with its own symbol sidecar.
    common = ["--dataset-bytes", "256M", "--steps", "10"]
    copies = []
    for name in ("machine_a", "machine_b"):
        os.makedirs(e.path(name))
        copies.append(shutil.copy(e.trainer, e.path(name)))
    check(e.run("stream", [copies[0], "--dataset", "stream"] + common, "4G") == 0, "stream run")
    check(e.run("whole", [copies[1], "--dataset", "whole"] + common, "4G") == 0, "whole run")
    for c in copies:
        os.unlink(c)
    d = e.json("diff", e.path("stream"), e.path("whole"))
    ds = d["categories"]["dataset"]
    check(ds["base"] == 0 and ds["new"] == 256 * MIB and ds["delta"] == 256 * MIB, f"dataset {ds}")
    check([f["kind"] for f in d["flags_new"]] == ["whole_dataset_upload"], f"new {d['flags_new']}")
    check(d["flags_new"][0]["bytes"] == [256 * MIB], "flag bytes")
    check(not any(f["kind"] == "whole_dataset_upload" for f in d["flags_gone"]), "gone")
    check(d["peak"]["0"]["delta"] >= 256 * MIB, f"peak {d['peak']}")
    top = d["sites"][0]
    check(top["delta"] == 256 * MIB and top["category"] == "dataset", f"top mover {top}")
    check(not top["site"].startswith("0x") and "(" in top["site"],
          f"sites named from the trace's own symbols: {top['site']}")
    check(all(s["delta"] == 0 for s in d["sites"][1:]), f"only the dataset moved: {d['sites']}")
    check(d["changed"] is True, "changed")
    rc, out, _ = e.cmd("diff", e.path("stream"), e.path("whole"), "--fail-over", "10")
    check(rc == 1 and "EXCEEDED" in out, f"--fail-over 10 must exit 1, got {rc}")
    # growth under --min-bytes never fails the gate (the dataset grew 256 MiB)
    rc, out, _ = e.cmd("diff", e.path("stream"), e.path("whole"), "--fail-over", "10", "--min-bytes", "512M")
    check(rc == 0 and "within" in out, f"--min-bytes 512M over 256 MiB of growth: exit {rc}")
    rc, _, _ = e.cmd("diff", e.path("stream"), e.path("whole"), "--fail-over", "10", "--min-bytes", "256M")
    check(rc == 1, f"--min-bytes 256M: exactly the growth fails the gate, exit {rc}")
    check(e.cmd("diff", e.path("whole"), e.path("whole"), "--min-bytes", "lots")[0] == 2, "bad --min-bytes")
    # the reverse: the dataset vanished, nothing grew
    rc, _, _ = e.cmd("diff", e.path("whole"), e.path("stream"), "--fail-over", "10")
    check(rc == 0, f"whole -> stream with --fail-over 10: exit {rc}")
    # a run against itself
    same = e.json("diff", e.path("whole"), e.path("whole"), "--fail-over", "10")
    check(same["changed"] is False and not same["flags_new"] and not same["flags_gone"], "self")
    check(all(s["delta"] == 0 for s in same["sites"]), "self sites")
    check(all(c["delta"] == 0 for c in same["categories"].values()), "self categories")
    check(same["fail_over"]["exceeded"] is False, "self fail-over")
    # two runs of the same job: same bytes at the same sites
    check(e.run("whole2", [e.trainer, "--dataset", "whole"] + common, "4G") == 0, "second run")
    again = e.json("diff", e.path("whole"), e.path("whole2"), "--fail-over", "0")
    check(again["changed"] is False, f"two identical runs differ: {again}")
    # usage and unreadable traces: 2
    check(e.cmd("diff", e.path("whole"))[0] == 2, "one trace")
    check(e.cmd("diff", e.path("whole"), e.path("whole"), "--fail-over", "x")[0] == 2, "bad pct")
    check(e.cmd("diff", e.path("whole"), e.path("nothing"))[0] == 2, "missing trace")
    print(f"  diff: dataset 0 -> {ds['new']}, new flags {[f['kind'] for f in d['flags_new']]}, "
          f"peak {d['peak']['0']['base']} -> {d['peak']['0']['new']}")


# ---- 6: the OOM is the report's first finding, in text and JSON -----------
def test_report_oom_first(e):
    rc, text, err = e.cmd("report", e.path("oom"))
    check(rc == 0, f"report: {err}")
    lines = text.splitlines()
    check(lines[1].startswith("Verdict: out of memory on GPU 0"), f"verdict first: {lines[:3]}")
    check(lines[2].startswith("[out_of_memory] GPU 0: cuMemAlloc"), f"the finding next: {lines[:4]}")
    check(f"vramtrace oom {e.path('oom')}" in "\n".join(lines[:8]), "the post-mortem command")
    r = e.json("report", e.path("oom"))
    o, post = r["flags"][0], e.json("oom", e.path("oom"))
    check(o["kind"] == "out_of_memory", f"first flag {o['kind']}")
    check(o["requested_bytes"] == post["oom"]["bytes"] and o["devices"] == [post["oom"]["device"]],
          f"request {o['requested_bytes']} vs {post['oom']['bytes']}")
    check(o["free_bytes"] == post["free_bytes"] and o["total_bytes"] == 1 << 30, "free then")
    check(o["live_by_category"]["dataset"] >= DATASET, f"holders {o['live_by_category']}")
    check(o["top_sites"][0]["bytes"] == DATASET and o["top_sites"][0]["category"] == "dataset",
          f"largest holder {o['top_sites'][0]}")
    check(o["command"] == "vramtrace oom " + e.path("oom"), o["command"])
    check(r["verdict"].startswith("out of memory on GPU 0"), r["verdict"])
    check(any(f["kind"] == "whole_dataset_upload" for f in r["flags"][1:]),
          "the whole dataset uploaded before training stays flagged")
    rc, text, _ = e.cmd("report", e.path("killed"))
    check("[out_of_memory]" not in text and "out_of_memory" not in
          json.dumps(e.json("report", e.path("killed"))["flags"]), "no OOM, no such finding")


# ---- 7: a job dying in its first steps, per-step batches on the device -------
def test_dying_batches(e):
    rc = e.run("dying", [e.trainer, "--dataset", "stream", "--batch-bytes", "8M", "--layer-bytes",
                         "2M", "--layers", "4", "--prefetch", "3", "--steps", "10"], "40M")
    check(rc == 1, f"the trainer should die of OOM, got {rc}")
    r = e.json("report", e.path("dying"))
    kinds = [f["kind"] for f in r["flags"]]
    check(kinds and kinds[0] == "out_of_memory", f"flags {kinds}")
    check("whole_dataset_upload" not in kinds, f"batches are no whole dataset: {kinds}")
    check("prefetch_depth" not in kinds, f"no steady prefetch in the first step: {kinds}")
    post = e.json("oom", e.path("dying"))
    check(all(f["kind"] != "whole_dataset_upload" for f in post["flags"]), f"oom flags {post['flags']}")
    check(not any("whole dataset" in a for a in post["advice"]), f"advice {post['advice']}")


# ---- 8: a job still running reads as running, then as ended -----------------
def test_running(e):
    env = dict(e.env, VT_SIM_CAPACITY="4G")
    launcher = subprocess.Popen([e.vt, "run", "-o", e.path("running"), "--", e.trainer,
                                 "--steps", "60", "--step-sleep-ms", "50"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        check(wait_for_step(e, "running", 3, time.time() + 60), "the job never reached step 3")
        r = e.json("report", e.path("running"))
        check(r["state"] == "running" and r["last_event_ns"] > 0, f"state {r['state']}")
        check([p["state"] for p in r["processes"]] == ["running"], f"{r['processes']}")
        rc, text, _ = e.cmd("report", e.path("running"))
        check("running, last event at" in text and "did NOT" not in text, text)
        check(text.splitlines()[1].startswith("Verdict: still running (last event at"),
              text.splitlines()[1])
        o = e.json("oom", e.path("running"))
        check(o["state"] == "running" and o["clean_exit"] is False, f"oom state {o['state']}")
        check(any(p["state"] == "running" for p in o["processes"]), f"{o['processes']}")
        rc, text, _ = e.cmd("oom", e.path("running"))
        check("still running" in text and "did not exit cleanly" not in text, text)
        rc = launcher.wait(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    check(rc == 0, f"vramtrace run exit {rc}")
    r = e.json("report", e.path("running"))
    check(r["state"] == "ended" and r["processes"][0]["state"] == "exited", f"after: {r['state']}")
    o = e.json("oom", e.path("running"))
    check(o["state"] == "ended" and o["clean_exit"] is True, "oom after the end")


def main():
    ap = argparse.ArgumentParser()
    for opt in ("vramtrace", "trainer", "talker", "simdriver", "work"):
        ap.add_argument("--" + opt, required=True)
    e = Env(ap.parse_args())
    for t in (test_driver_oom, test_killed, test_framework, test_real_tensorflow, test_diff,
              test_report_oom_first, test_dying_batches, test_running):
        print(t.__name__)
        t(e)
    shutil.rmtree(e.work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
