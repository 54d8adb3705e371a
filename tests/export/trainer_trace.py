"""Make traces of the simulated trainer for the export tests: the trainer
under `vramtrace run` on the simulated driver, as tests/analyzer does.
    make_trace(vramtrace, trainer, simdir, outdir, trainer_args, devices=2,
               capacity="1G") -> outdir
    report_json(vramtrace, trace, *extra) -> dict of `report --json`
    make_job(vramtrace, trainer, simdir, workdir) -> a 4-rank job's trace dirs"""
import json
import os
import shlex
import subprocess


def make_trace(vramtrace, trainer, simdir, outdir, args, devices=2, capacity="1G",
               expect_ok=True):
    """trainer: the program `vramtrace run` starts (the trainer, or a shell)."""
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
    """trace: a directory, or a list of them (a job)."""
    traces = trace if isinstance(trace, list) else [trace]
    p = subprocess.run([vramtrace, "export", *traces, "--format", fmt, "-o", out, *extra],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: export {fmt} {extra} exited {p.returncode}: {p.stderr}")
    return out


# A 4-rank job on two hosts: rank 0 uploads its whole dataset, the others
# stream theirs; every rank marks its steps. (rank, local rank, dataset).
JOB_HOSTS = (("hostA", ((0, 0, "whole"), (1, 1, "stream"))),
             ("hostB", ((2, 0, "stream"), (3, 1, "stream"))))


def make_job(vramtrace, trainer, simdir, workdir, hosts=JOB_HOSTS, markers=True):
    """One trace directory per host, each `vramtrace run` of a shell that
    starts that host's ranks with the launcher's environment, one host after
    the other. markers: the ranks mark their steps. -> [dirs]"""
    dirs = []
    marks = "--markers" if markers else "--no-markers"
    for host, ranks in hosts:
        cmds = [f"RANK={r} LOCAL_RANK={lr} WORLD_SIZE=4 {shlex.quote(trainer)} "
                f"--first-device {lr} --dataset {ds} --dataset-bytes 512M --batch-bytes 4M "
                f"--layers 3 --layer-bytes 32M --steps 6 {marks} &" for r, lr, ds in ranks]
        out = os.path.join(workdir, host + (".trace" if markers else ".nomarks.trace"))
        make_trace(vramtrace, "bash", simdir, out, ["-c", " ".join(cmds) + " wait"],
                   capacity="4G")
        dirs.append(out)
    return dirs
