"""Make traces of the simulated trainer for the export tests: the trainer
under `vramtrace run` on the simulated driver, as tests/analyzer does.
    make_trace(vramtrace, trainer, simdir, outdir, trainer_args, devices=2,
               capacity="1G") -> outdir
    report_json(vramtrace, trace, *extra) -> dict of `report --json`"""
import json
import os
import subprocess


def make_trace(vramtrace, trainer, simdir, outdir, args, devices=2, capacity="1G",
               expect_ok=True):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = simdir + (":" + env["LD_LIBRARY_PATH"]
                                       if env.get("LD_LIBRARY_PATH") else "")
    env["VT_SIM_DEVICES"] = str(devices)
    env["VT_SIM_CAPACITY"] = capacity
    env["NO_COLOR"] = "1"
    p = subprocess.run([vramtrace, "run", "-o", outdir, "--", trainer] + args, env=env,
                       capture_output=True, text=True)
    if expect_ok and p.returncode != 0:
        raise SystemExit(f"FAIL: trainer {args} exited {p.returncode}: {p.stderr}")
    if not expect_ok and p.returncode == 0:
        raise SystemExit(f"FAIL: trainer {args} was expected to run out of memory")
    return outdir


def report_json(vramtrace, trace, *extra):
    out = subprocess.run([vramtrace, "report", trace, "--json", *extra], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def export(vramtrace, trace, fmt, out, *extra):
    p = subprocess.run([vramtrace, "export", trace, "--format", fmt, "-o", out, *extra],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: export {fmt} {extra} exited {p.returncode}: {p.stderr}")
    return out
