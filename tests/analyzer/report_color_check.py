#!/usr/bin/env python3
"""`vramtrace report` (text) in colour only on a terminal and never with
NO_COLOR: under a pty the headings are bold and the dataset's bar in the HTML page's
dataset colour; with
NO_COLOR=1 under the same pty, and piped, there is no escape at all; the
coloured text minus its escapes is the piped text.
    report_color_check.py VRAMTRACE TRACE_DIR"""
import os
import re
import subprocess
import sys

from checklib import check, failures, under_pty


def main():
    vt, trace = sys.argv[1:3]
    cmd = [vt, "report", trace]
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    rc, tty = under_pty(cmd, env)
    tty = tty.replace("\r\n", "\n")
    check(rc == 0, "report under a pty exits 0")
    check("\x1b[1mProcesses\x1b[0m" in tty, "headings bold on a terminal")
    # the HTML page's colour of the dataset (#d9534f), as a 24-bit escape
    check(re.search(r"dataset +[0-9.]+ MiB +\x1b\[38;2;217;83;79m#+\x1b\[0m", tty) is not None,
          "the dataset's bar is the page's dataset red on a terminal")
    check("\x1b[31m[whole_dataset_upload]\x1b[0m" in tty, "the upload flag is red")
    rc, no_color = under_pty(cmd, dict(env, NO_COLOR="1"))
    no_color = no_color.replace("\r\n", "\n")
    check(rc == 0 and "\x1b" not in no_color and "Processes" in no_color,
          "NO_COLOR=1 on a terminal: no escape")
    piped = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    check("\x1b" not in piped, "piped: no escape")
    check(re.sub(r"\x1b\[[0-9;]*m", "", tty) == piped, "coloured text minus escapes == piped text")
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
