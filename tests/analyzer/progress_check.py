#!/usr/bin/env python3
"""A progress bar while a command reads a big trace, on a terminal only:
`report`, `report --stream` and `diff --stream` of a generated 24 M-event
trace (about a second for the streaming model at 25 M events/s: well past
the bar's half-second delay) draw "reading trace [###...] NN%" on stderr under a pty and clear
the line after it; with stderr piped there is none, and stdout is the same.
    progress_check.py VRAMTRACE GEN_TRACE"""
import re
import subprocess
import sys

from checklib import check, generated_trace, summary, under_pty

BAR = re.compile(r"\rreading trace \[[#.]{30}\] +\d+%")


def main():
    vt, gen = sys.argv[1:3]
    with generated_trace(gen, 24000000) as trace:
        for args in (["report", trace], ["report", trace, "--stream"],
                     ["diff", trace, trace, "--stream"]):
            name = " ".join(a if a != trace else "TRACE" for a in args)
            rc, shown = under_pty([vt] + args, stderr_too=True)
            check(rc == 0, f"{name} under a pty exits 0")
            check(BAR.search(shown) is not None, f"{name}: a progress bar on the terminal")
            check("\r\x1b[K" in shown, f"{name}: the bar's line is cleared after it")
            piped = subprocess.run([vt] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
            check("reading trace" not in piped.stderr, f"{name}: no bar with stderr piped")
            text = re.sub(r"\x1b\[[0-9;]*[mK]", "", BAR.sub("", shown)).replace("\r\n", "\n")
            check(text.strip() == piped.stdout.strip(),
                  f"{name}: the terminal shows the piped report, bar aside")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
