#!/usr/bin/env python3
"""A distributed job as one view: ranks from the launcher's environment,
one trace directory per host, the imbalance, the steps lined up, and two
runs compared rank to rank.

  ranks_check.py VRAMTRACE TRAINER WORK_DIR

The job: 4 ranks (RANK/LOCAL_RANK/WORLD_SIZE as torchrun sets them) on 2
simulated devices per "host", two `vramtrace run`s at once writing
run/hostA and run/hostB. Rank 0 uploads its whole dataset (512 MiB), the
others stream batches: the deliberate imbalance. The second run gives
rank 2 the whole dataset too."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "analyzer"))
from checklib import check, summary  # noqa: E402

vt, trainer, work = sys.argv[1:4]
ENV = dict(os.environ, VT_SIM_DEVICES="2", VT_SIM_CAPACITY="4G")
STEPS = 6


def rank_cmd(rank, local, dataset, launcher="torch", extra=""):
    """The shell words of one rank, with its launcher's variables."""
    env = {"torch": f"RANK={rank} LOCAL_RANK={local} WORLD_SIZE=4 LOCAL_WORLD_SIZE=2",
           "ompi": f"OMPI_COMM_WORLD_RANK={rank} OMPI_COMM_WORLD_LOCAL_RANK={local} "
                   f"OMPI_COMM_WORLD_SIZE=4",
           "slurm": f"SLURM_PROCID={rank} SLURM_LOCALID={local} SLURM_NTASKS=4",
           "tf": "TF_CONFIG='{\"cluster\": {\"worker\": [\"a:1\", \"b:2\"]}, "
                 f"\"task\": {{\"type\": \"worker\", \"index\": {rank}}}}}'"}[launcher]
    return (f"{env} {extra} {trainer} --first-device {local} --dataset {dataset} --dataset-bytes 512M "
            f"--batch-bytes 4M --layers 3 --layer-bytes 32M --steps {STEPS} --markers "
            f"--step-sleep-ms 20 >/dev/null")


def host_job(out, ranks):
    """`vramtrace run` of a "host": its ranks started at once by a shell."""
    script = " & ".join(rank_cmd(*r) for r in ranks) + " & wait"
    return subprocess.Popen([vt, "run", "--simulated-driver", "-o", out, "--", "bash", "-c", script],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def run_job(name, rank2_dataset, rank2_env=""):
    """Both hosts at once, as a job's hosts run."""
    hosts = [host_job(f"{work}/{name}/hostA", [(0, 0, "whole"), (1, 1, "stream")]),
             host_job(f"{work}/{name}/hostB",
                      [(2, 0, rank2_dataset, "torch", rank2_env), (3, 1, "stream")])]
    for h in hosts:
        _, err = h.communicate(timeout=120)
        check(h.returncode == 0, f"{name}: the host's run exits 0 ({err.strip()[-200:]})")


def vramtrace(*args, expect=0):
    done = subprocess.run([vt, *args], capture_output=True, text=True, timeout=120)
    check(done.returncode == expect,
          f"vramtrace {' '.join(args[:1])} exits {expect} (got {done.returncode}: "
          f"{done.stderr.strip()[:300]})")
    return done


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
run_job("base", "stream")
run_job("new", "whole")
run_job("oom", "whole", "VT_SIM_CAPACITY=600M")  # rank 2's device too small: it dies

# 1. the merged report: 4 ranks from the environment, the heavy rank named
base_dirs = [f"{work}/base/hostA", f"{work}/base/hostB"]
r = json.loads(vramtrace("report", "--json", *base_dirs).stdout)
ranks = r.get("ranks", [])
check([x["rank"] for x in ranks] == [0, 1, 2, 3], f"4 ranks in rank order: {[x['rank'] for x in ranks]}")
check(all(x["identified_by"] == "RANK" and x["world_size"] == 4 for x in ranks),
      "each rank identified by RANK, world size 4")
check([x["local_rank"] for x in ranks] == [0, 1, 0, 1] and [x["device"] for x in ranks] == [0, 1, 0, 1],
      "local ranks and devices 0,1,0,1")
check(len(r.get("traces", [])) == 2, "both traces' reports are kept under traces")
im = r.get("imbalance", [])
check(bool(im) and im[0]["category"] == "dataset" and im[0]["most"]["rank"] == 0
      and im[0]["most"]["bytes"] == 512 << 20 and im[0]["least"]["bytes"] == 0,
      f"the largest imbalance is rank 0's dataset, 512 MiB: {im[:1]}")
# (the site's name depends on inlining: create_dataset at -O2, its callee at -O0)
check(bool(im) and bool(im[0]["sites"]) and "trainer.c" in im[0]["sites"][0]["site"]
      and im[0]["sites"][0]["most_bytes"] == 512 << 20 and im[0]["sites"][0]["least_bytes"] == 0,
      f"the imbalance names the site that uploads the dataset: {im[0]['sites'] if im else None}")
peaks = {x["rank"]: x["peak_bytes"] for x in ranks}
check(peaks[0] - peaks[1] == 512 << 20 and peaks[1] == peaks[2] == peaks[3],
      f"rank 0's peak is the others' + the dataset: {peaks}")
al = r.get("alignment", {})
check(al.get("by") == "step markers" and al.get("common_steps") == STEPS,
      f"steps aligned by their markers, {STEPS} on every rank: {al}")
check(0 < al.get("max_step_skew_ns", 0) < 5 * 10**9, "a step's start spread over ranks is measured")
check(all(x["peak_step"] >= 0 for x in ranks), "each rank's peak is placed in a step")

# the job folder reads as its traces; the text report leads with the ranks
text = vramtrace("report", f"{work}/base").stdout
check(text.startswith("== ranks: 4 processes"), "report JOB_FOLDER leads with the rank table")
check("dataset     rank 0 holds 512 MiB" in text, "the text names rank 0's dataset imbalance")
check("aligned by step markers" in text, "the text says how the ranks were aligned")

# report --html of the job writes the job's page, with a row per rank
page = f"{work}/report.html"
vramtrace("report", "--html", page, f"{work}/base")
html = open(page).read() if os.path.exists(page) else ""
check('"ranks"' in html and html.count('"label": "rank ') + html.count('"label":"rank ') >= 4,
      "report --html of a job writes the rank view's data for 4 ranks")

# the job folder exports as one page and one Perfetto trace with a track per rank
vramtrace("export", f"{work}/base", "-o", f"{work}/job.json")
tracks = {}
for e in json.load(open(f"{work}/job.json")).get("traceEvents", []) if os.path.exists(
        f"{work}/job.json") else []:
    if e.get("ph") == "M" and e.get("name") == "process_name":
        tracks[e["pid"]] = e["args"]["name"]
ranked = sorted(n for n in tracks.values() if n.startswith("rank "))
check([n.split(" (")[0] for n in ranked] == ["rank 0", "rank 1", "rank 2", "rank 3"],
      f"export JOB_FOLDER: a Perfetto track per rank: {ranked}")

# 2. diff of two such runs, rank 2 changed: that rank is named
d = json.loads(vramtrace("diff", "--json", f"{work}/base", f"{work}/new").stdout)
most = d.get("rank_changed_most") or {}
check(most.get("rank") == 2 and most.get("category") == "dataset" and most.get("bytes") == 512 << 20,
      f"diff names rank 2 and its dataset, +512 MiB: {most}")
check(d.get("ranks_matched_by") == "rank", "ranks are matched by rank number")
same = [x for x in d.get("ranks", []) if x["rank"] != 2]
check(len(same) == 3 and all(x["peak_delta"] == 0 for x in same), "the other ranks did not change")
check([t["changed"] for t in d.get("traces", [])] == [False, True], "only hostB's trace changed")
gate = vramtrace("diff", "--fail-over", "10", f"{work}/base", f"{work}/new", expect=1)
check("peak of rank 2 grew" in gate.stdout, "--fail-over names rank 2's peak")
vramtrace("diff", f"{work}/base", f"{work}/base/hostA", expect=2)

# a rank that ran out of memory: oom of the job finds it, report marks it
o = json.loads(vramtrace("oom", "--json", f"{work}/oom").stdout)
first = [x for x in o.get("job", {}).get("out_of_memory", []) if x["first"]]
check(o.get("source") == "driver" and len(first) == 1 and first[0]["rank"] == "rank 2"
      and first[0]["trace"].endswith("/oom/hostB"), f"oom JOB_FOLDER names rank 2 on hostB: {first}")
check((o.get("oom") or {}).get("bytes") == 512 << 20
      and (o.get("oom") or {}).get("total_bytes") == 600 << 20,
      "the post-mortem is rank 2's: 512 MiB asked of its 600 MiB device")
r = json.loads(vramtrace("report", "--json", f"{work}/oom").stdout)
failed = {x["rank"]: x["failed_allocations"] for x in r.get("ranks", [])}
check(failed == {0: 0, 1: 0, 2: 1, 3: 0}, f"the rank table marks rank 2's failed allocation: {failed}")
text = vramtrace("oom", f"{work}/oom").stdout
check(text.startswith("vramtrace oom: 1 of 2 traces ran out of memory; the first (wall clock) was rank 2"),
      "the text's first line names the rank that ran out of memory")

# 3. one rank per `vramtrace run` inside the launcher: -o with placeholders
inside = f"{work}/inside"
procs = []
for rank, launcher in ((0, "ompi"), (1, "slurm"), (2, "tf")):
    script = (f"{rank_cmd(rank, rank % 2, 'stream', launcher).split(trainer)[0]} "
              f"{vt} run --simulated-driver -o '{inside}/%h-r%q{{VT_TEST_RANK}}' -- "
              f"{trainer} --first-device {rank % 2} --steps 3 >/dev/null")
    procs.append(subprocess.Popen(["bash", "-c", script], env=dict(ENV, VT_TEST_RANK=str(rank)),
                                  stderr=subprocess.PIPE, text=True))
for p in procs:
    _, err = p.communicate(timeout=60)
    check(p.returncode == 0, f"a rank's own run exits 0 ({err.strip()[-200:]})")
made = sorted(os.listdir(inside)) if os.path.isdir(inside) else []
check(len(made) == 3 and all(m.endswith(f"-r{i}") for i, m in enumerate(made)),
      f"-o %h-r%q{{VAR}} gives each rank its trace: {made}")
r = json.loads(vramtrace("report", "--json", inside).stdout)
by = {x["rank"]: x["identified_by"] for x in r.get("ranks", [])}
check(by == {0: "OMPI_COMM_WORLD_RANK", 1: "SLURM_PROCID", 2: "TF_CONFIG"},
      f"mpirun's, srun's and TF_CONFIG's ranks are read: {by}")
check([x["role"] for x in r.get("ranks", [])][2:] == ["worker"], "TF_CONFIG's task type is the role")
bad = vramtrace("run", "-o", f"{work}/x%q{{NO_SUCH_VAR_SET}}", "--", "true", expect=2)
check("NO_SUCH_VAR_SET is not set" in bad.stderr, "an unset %q variable is a one-line error")
check(not os.path.exists(f"{work}/x"), "and makes no directory")
sys.exit(summary())
