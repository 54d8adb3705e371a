#!/usr/bin/env python3
"""Chunk seals on a real trace (the trainer under `vramtrace run` on the
simulated driver, small chunks so that there are many sealed ones):

- single bits flipped across the sealed chunks' headers and records: every
  flip is reported (the chunk fails its seal check, or its header is
  skipped as damaged), none changes the report silently;
- the log cut at a chunk boundary: the report says how many chunks are
  missing;
- the untouched log: every chunk sealed, no warning.

  seal_check.py VRAMTRACE TRAINER SIMDRIVER_DIR WORKDIR
"""
import glob
import json
import os
import random
import shutil
import subprocess
import sys

FLIPS = 400


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    vt, trainer, simdriver, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = simdriver + (":" + env["LD_LIBRARY_PATH"]
                                          if env.get("LD_LIBRARY_PATH") else "")
    env.update(VT_SIM_DEVICES="1", VT_SIM_CAPACITY=str(16 << 30),
               VRAMTRACE_CHUNK_SIZE="8192")
    trace = os.path.join(work, "trace")
    subprocess.run([vt, "run", "-o", trace, "--", trainer, "--steps", "200"], env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    logs = glob.glob(os.path.join(trace, "vramtrace.*.log"))
    if len(logs) != 1:
        fail("want one log, got %r" % logs)
    log = logs[0]
    pristine = open(log, "rb").read()

    def report(text=False):
        cmd = [vt, "report", trace] + ([] if text else ["--json"])
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return r.returncode, r.stdout, r.stderr.decode()

    def dump_chunks():
        r = subprocess.run([vt, "dump", log, "--json"], env=env, check=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        recs = [json.loads(line) for line in r.stdout.splitlines()]
        return [c for c in recs if c["record"] == "chunk"], r.stderr.decode()

    chunks, err = dump_chunks()
    if err or not chunks or any(c["verdict"] != "sealed" for c in chunks):
        fail("untouched log: %s %r" % (err, [c["verdict"] for c in chunks]))
    if len(chunks) < 4:
        fail("want several sealed chunks, got %d" % len(chunks))
    rc, base, err = report()
    if rc != 0 or err:
        fail("report of the untouched log: rc %d, %s" % (rc, err))

    # every byte a seal vouches for: chunk header and records
    spans = [(c["offset"], c["offset"] + c["seal_bytes"]) for c in chunks]
    total = sum(hi - lo for lo, hi in spans)
    rng = random.Random(1234)
    detected = 0
    for _ in range(FLIPS):
        k = rng.randrange(total)
        for lo, hi in spans:
            if k < hi - lo:
                off = lo + k
                break
            k -= hi - lo
        bit = rng.randrange(8)
        damaged = bytearray(pristine)
        damaged[off] ^= 1 << bit
        open(log, "wb").write(damaged)
        rc, out, err = report()
        if "fails its seal check" in err or "damaged chunk" in err:
            detected += 1
        elif out != base:
            fail("bit %d of byte %d changed the report silently: %s" % (bit, off, err))
        else:
            fail("bit %d of byte %d not reported" % (bit, off))
        if rc != 0:
            fail("bit %d of byte %d: report exit %d" % (bit, off, rc))
    print("%d of %d flips reported" % (detected, FLIPS))

    # cut at a chunk boundary: the chunks past it are missing, and said so
    keep = 2
    cut = chunks[0]["offset"] - chunks[0]["index"] * 8192 + keep * 8192
    open(log, "wb").write(pristine[:cut])
    claimed = (len(pristine) - 4096) // 8192
    rc, out, err = report(text=True)
    want = "%d of %d chunks missing" % (claimed - keep, claimed)
    if rc != 0 or want not in out.decode() or "trace incomplete" not in out.decode():
        fail("cut log: rc %d, want %r in the report; stderr %s" % (rc, want, err))
    open(log, "wb").write(pristine)
    print("PASS")
    shutil.rmtree(work, ignore_errors=True)


main()
