#!/usr/bin/env python3
"""Before the full model of a trace too big for the memory the analyzer may
take, one line says so and names the streaming commands: a generated 10 M
event trace (264 MiB of logs; the full model peaks at ~422 MiB) under an
address-space limit of 400 MiB. `report` with the full model
(VRAMTRACE_FOLD=0) warns, then runs out and ends with exit 3 and nomem's
line; `report` as it is (the folding model: the trace's steps are folded)
warns the same and reads it; `report --stream` reads it with no warning;
without the limit `report` says nothing of memory.
    membudget_check.py VRAMTRACE GEN_TRACE"""
import os
import resource
import subprocess
import sys

from checklib import check, generated_trace, summary

LIMIT = 400 << 20


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run(cmd, limit, env=None):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          preexec_fn=limited if limit else None,
                          env=dict(os.environ, **env) if env else None)


def main():
    vt, gen = sys.argv[1:3]
    with generated_trace(gen, 10000000) as trace:
        full = run([vt, "report", trace], True, {"VRAMTRACE_FOLD": "0"})
        warned = [l for l in full.stderr.splitlines() if "may need up to" in l]
        check(len(warned) == 1, "report under 400 MiB: one line before the load")
        check(bool(warned) and "`report --stream`" in warned[0] and "of logs" in warned[0],
              "that line names the trace's size and report --stream")
        check(full.returncode == 3 and "out of memory after" in full.stderr,
              "report under 400 MiB: then out of memory, exit 3 (got %d)" % full.returncode)
        folding = run([vt, "report", trace], True)
        check(folding.returncode == 0,
              "report (folding model) under 400 MiB reads it (exit %d)" % folding.returncode)
        stream = run([vt, "report", trace, "--stream"], True)
        check(stream.returncode == 0 and "failed allocations:" in stream.stdout,
              "report --stream under 400 MiB reads it (exit %d)" % stream.returncode)
        check("may need up to" not in stream.stderr, "report --stream: no warning")
        free = run([vt, "report", trace], False)
        check(free.returncode == 0 and "may need up to" not in free.stderr,
              "report without a limit: no warning (exit %d)" % free.returncode)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
