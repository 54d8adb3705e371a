#!/usr/bin/env python3
"""Every command's --help, and one wording for usage and input errors.

  help_check.py VRAMTRACE SOURCE_DIR

For each command `vramtrace --help` lists: `CMD --help` prints on stdout,
nothing on stderr, exit 0, and equals `vramtrace help CMD`; every option of
the command's table in analyzer/commands/cmd_CMD.c is in it; every option
the help names is accepted by the parser (probed: never "unknown option"),
and every option name the parser compares against is in the table; an
unknown option is a usage error (exit 2, "vramtrace CMD: ..." then "Try
'vramtrace CMD --help' ..."); a trace that does not exist is an input
error (exit 1; diff: 2, its 1 means "grew")."""
import re
import subprocess
import sys

vt, src = sys.argv[1], sys.argv[2]
COMMANDS = ["run", "report", "top", "oom", "diff", "predict", "export", "dump"]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def call(*args):
    return subprocess.run([vt, *args], capture_output=True, text=True, timeout=60)


def table_options(cmd):
    """The option names of cmd's table, and the names its parser compares."""
    text = open(f"{src}/analyzer/commands/cmd_{cmd}.c").read()
    table = re.search(r"struct vt_cli_option \w+\[\] = \{(.*?)\n\};", text, re.S)
    if not table:
        fail(f"{cmd}: no option table in cmd_{cmd}.c")
        return set(), set()
    names = set(re.findall(r'\{"(-[-\w]+)"', table.group(1)))
    compared = set(re.findall(r'strcmp\(\w+->name, "(-[-\w]+)"\)', text))
    return names, compared


def help_options(text):
    """Options the help lists: ([(name, takes_value)], ...)."""
    found = []
    for m in re.finditer(r"^  (?:-h, )?(-[-\w]+)( \S+)?", text, re.M):
        found.append((m.group(1), bool(m.group(2))))
    return found


def check_usage_error(cmd, args, what):
    done = call(cmd, *args)
    lines = done.stderr.splitlines()
    if (done.returncode != 2 or len(lines) != 2 or not lines[0].startswith(f"vramtrace {cmd}: ")
            or lines[1] != f"Try 'vramtrace {cmd} --help' for more information."):
        fail(f"{cmd} {what}: exit {done.returncode}, stderr {done.stderr!r}")


top = call("--help")
listed = re.findall(r"^  (\w+)  ", top.stdout.split("commands:")[-1].split("options:")[0], re.M)
if top.returncode != 0 or listed != COMMANDS + ["help"]:
    fail(f"vramtrace --help: exit {top.returncode}, commands {listed}")

for cmd in COMMANDS:
    done = call(cmd, "--help")
    if done.returncode != 0 or done.stderr or not done.stdout.startswith(f"usage: vramtrace {cmd} "):
        fail(f"{cmd} --help: exit {done.returncode}, stderr {done.stderr!r}")
    if call("help", cmd).stdout != done.stdout:
        fail(f"vramtrace help {cmd} differs from vramtrace {cmd} --help")
    names, compared = table_options(cmd)
    in_help = dict(help_options(done.stdout))
    for name in sorted(names - set(in_help)):
        fail(f"{cmd}: {name} is in the option table but not in --help")
    for name in sorted(compared - names):
        fail(f"{cmd}: the parser handles {name}, which the option table lacks")
    if not names:
        fail(f"{cmd}: no options found")
    for name, takes_value in in_help.items():
        if name in ("-h", "--help"):
            continue
        probe = call(cmd, name, *(["x"] if takes_value else []))
        if "unknown option" in probe.stderr:
            fail(f"{cmd}: --help names {name} but the parser refuses it: {probe.stderr!r}")
    check_usage_error(cmd, ["--no-such-option"], "--no-such-option")
    if cmd != "run":
        missing = call(cmd, "/nonexistent/trace", *(["/nonexistent/b"] if cmd in ("diff", "predict") else []))
        want = 2 if cmd == "diff" else 1
        if missing.returncode != want or not missing.stderr.startswith(f"vramtrace {cmd}: "):
            fail(f"{cmd} /nonexistent/trace: exit {missing.returncode} (want {want}), "
                 f"stderr {missing.stderr!r}")
    print(f"{cmd}: {len(names)} options, all in --help and accepted")

check_usage_error("run", [], "with no command")
check_usage_error("report", [], "with no trace")
unknown = call("help", "nosuch")
if unknown.returncode != 2 or "unknown command 'nosuch'" not in unknown.stderr:
    fail(f"vramtrace help nosuch: exit {unknown.returncode}, {unknown.stderr!r}")

print("FAILED" if failures else "help: ok")
sys.exit(1 if failures else 0)
