"""What the GPU check kit measures in a trace and checks against a job's
truth line, and the summary it writes. Pure functions over the records
kit.py collects (no processes started here), so they are tested alone."""
import json
import math
import time
from collections import Counter, defaultdict

import vtlog

PASS, FAIL, WARN, INFO = "PASS", "FAIL", "WARN", "INFO"
NOT_DEVICE_MEMORY = {6, 8}  # vt_alloc_kind host (pinned) and ipc (imported)
PATHS = ("dlsym", "get_proc", "get_proc_v2")
EXIT_NO_GPU = 3  # samples/frameworks/vt_job.py


# ---- measurements ---------------------------------------------------------

def measure(logs, api_names):
    """Counts from every process log of one run."""
    events = [e for log in logs for e in log.events]
    lookups = [l for log in logs for l in log.lookups]
    ok_allocs = [e for e in events if e.type == vtlog.REC_ALLOC and e.result == 0
                 and e.kind not in NOT_DEVICE_MEMORY]
    htod = [e for e in events if e.type == vtlog.REC_COPY and e.kind == vtlog.COPY_HTOD and e.result == 0]
    routes = routed_paths(lookups)
    by_path = Counter()
    by_api = Counter()
    for e in ok_allocs:
        by_path["+".join(sorted(routes.get(e.api, ()))) or "direct"] += 1
        by_api[api_names.get(e.api, f"api{e.api}")] += 1
    return {
        "processes": len(logs),
        "allocs": len(ok_allocs),
        "alloc_bytes": sum(e.bytes for e in ok_allocs),
        "failed_allocs": sum(1 for e in events if e.type == vtlog.REC_ALLOC and e.result != 0),
        "frees": sum(1 for e in events if e.type == vtlog.REC_FREE and e.result == 0),
        "alloc_kinds": dict(Counter(vtlog.ALLOC_KINDS.get(e.kind, str(e.kind)) for e in ok_allocs)),
        "vmm_creates": sum(1 for e in ok_allocs if e.kind == 4),
        "vmm_maps": sum(1 for e in events if e.type == vtlog.REC_MAP and e.result == 0),
        "htod_copies": len(htod),
        "htod_bytes": sum(e.bytes for e in htod),
        "htod_max": max((e.bytes for e in htod), default=0),
        "lookups": lookup_counts(lookups),
        "routed_names": sorted({f"{l.path}:{l.name}" for l in lookups if l.outcome.startswith("routed")}),
        "allocs_by_path": dict(by_path),
        "allocs_by_api": dict(by_api),
        "notes": [n for log in logs for n in log.notes],
        "states": [(log.pid, log.state, log.exit_code) for log in logs],
    }


def routed_paths(lookups):
    """VT_API id -> the lookup paths that handed the job its wrapper."""
    routes = defaultdict(set)
    for l in lookups:
        if l.outcome.startswith("routed") and l.api:
            routes[l.api].add(l.path)
    return routes


def lookup_counts(lookups):
    counts = {path: Counter() for path in PATHS}
    for l in lookups:
        counts.setdefault(l.path, Counter())[l.outcome] += 1
    return {path: dict(c, total=sum(c.values())) for path, c in counts.items()}


def htod_into(logs, ptr, nbytes):
    """Bytes host-to-device copies wrote inside [ptr, ptr + nbytes)."""
    end = ptr + nbytes
    total = 0
    for log in logs:
        for e in log.events:
            if e.type == vtlog.REC_COPY and e.kind == vtlog.COPY_HTOD and e.result == 0:
                total += max(0, min(e.addr + e.bytes, end) - max(e.addr, ptr))
    return total


# ---- checks ----------------------------------------------------------------

def check(name, status, detail, hard=True):
    return {"name": name, "status": status, "detail": detail, "hard": hard and status == FAIL}


def verdict(ok, name, detail, hard=True, soft_status=FAIL):
    return check(name, PASS if ok else soft_status, detail, hard)


def same_result(record, run):
    base = record["baseline"]["result_line"]
    if run["result_line"] == base:
        return check("result unchanged", PASS, "result line identical to the run without vramtrace")
    again = record.get("baseline_again", {}).get("result_line")
    if again is not None and again != base and close_results(base, run["result_line"]):
        return check("result unchanged", PASS,
                     "the job is not bit-reproducible (two runs without vramtrace differ); "
                     "this one agrees with them to 1e-4 relative")
    same_mode = run.get("mode_baseline", {}).get("result_line")
    if same_mode is not None and same_mode == run["result_line"]:
        return check("result unchanged", PASS,
                     "identical to a run without vramtrace with the same allocator switches "
                     "(the switches, not vramtrace, change this job's result)")
    return check("result unchanged", FAIL, f"without: {base!r}; with: {run['result_line']!r}")


def close_results(a, b):
    try:
        x, y = json.loads(a), json.loads(b)
    except (TypeError, ValueError):
        return False
    return numbers_close(x, y)


def numbers_close(x, y):
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(numbers_close(x[k], y[k]) for k in x)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(numbers_close(a, b) for a, b in zip(x, y))
    try:
        return math.isclose(float(x), float(y), rel_tol=1e-4, abs_tol=1e-6)
    except (TypeError, ValueError):
        return x == y


def trace_checks(run):
    logs = run["logs"]
    if run["read_error"] or not logs:
        return [check("trace read", FAIL, run["read_error"] or "no vramtrace.*.log in the trace")]
    states = run["metrics"]["states"]
    main = [s for s in states if s[1] == "exited"]
    ok = any(code == run["exit"] for _, _, code in main)
    return [check("trace read", PASS, f"{len(logs)} log(s), {sum(len(l.events) for l in logs)} events"),
            verdict(ok, "exit recorded", f"process states {states}, job exit {run['exit']}")]


def exact_checks(truth, m):
    """The driver job knows every number in advance."""
    expect = truth.get("expect", {})
    out = []
    for key in ("allocs", "alloc_bytes", "frees", "htod_copies", "htod_bytes"):
        if key in expect:
            out.append(verdict(m[key] == expect[key], f"{key} exact", f"trace {m[key]}, truth {expect[key]}"))
    routed = set(m["routed_names"])
    for path, names in expect.get("lookups", {}).items():
        missing = [n for n in names if f"{path}:{n}" not in routed]
        out.append(verdict(not missing, f"{path} lookups routed",
                           f"missing {missing}" if missing else f"{len(names)} names routed via {path}"))
    return out


def dataset_checks(truth, run):
    m, logs = run["metrics"], run["logs"]
    dataset = truth.get("dataset", [])
    out = []
    if truth.get("dataset_on_device"):
        for item in dataset:
            if "ptr" in item:
                seen = htod_into(logs, item["ptr"], item["bytes"])
                out.append(verdict(seen == item["bytes"], f"dataset seen as H2D ({item['name']})",
                                   f"{seen} of {item['bytes']} bytes copied into its device buffer"))
            else:
                sizes = Counter(e.bytes for log in logs for e in log.events
                                if e.type == vtlog.REC_COPY and e.kind == vtlog.COPY_HTOD and e.result == 0)
                out.append(verdict(sizes[item["bytes"]] > 0, f"dataset seen as H2D ({item['name']})",
                                   f"{sizes[item['bytes']]} host-to-device copies of exactly {item['bytes']} bytes"))
    batches = truth.get("batches", {})
    if batches.get("uploaded_each_step") and not truth.get("dataset_on_device") and dataset:
        largest = max(item["bytes"] for item in dataset)
        wanted = batches["count"] * batches["bytes"]
        out.append(verdict(m["htod_max"] < largest and m["htod_bytes"] >= wanted, "streamed, never whole",
                           f"largest H2D copy {m['htod_max']} < dataset {largest}; "
                           f"H2D total {m['htod_bytes']} >= {batches['count']} batches x {batches['bytes']}"))
    return out


# What `vramtrace run --per-tensor` sets (docs/run.md), as the jobs report it.
PER_TENSOR_ENV = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "XLA_PYTHON_CLIENT_ALLOCATOR": "platform",
                  "TF_GPU_ALLOCATOR": "cuda_malloc_async"}


def launcher_checks(run):
    """run.json says the mode and the exit; --per-tensor reached the job."""
    out = []
    info = run.get("run_json")
    if info is None:
        out.append(check("run.json", INFO, "the launcher left no readable run.json", hard=False))
    else:
        ok = info.get("mode") == run["mode"] and info.get("exit_code") == run["exit"]
        out.append(verdict(ok, "run.json", f"mode {info.get('mode')!r}, exit_code {info.get('exit_code')}"))
    allocator = (run["truth"] or {}).get("allocator", {})
    switches = {k: v for k, v in PER_TENSOR_ENV.items() if k in allocator}
    if run["mode"] == "per-tensor" and switches:
        seen = {k: allocator[k] for k in switches}
        out.append(verdict(seen == switches, "per-tensor switches reached the job", str(seen)))
    return out


def flag_checks(run, report):
    """The report's headline: a whole-dataset upload is flagged when the job
    made one, and not for its streaming twin (a warning: a heuristic)."""
    truth = run["truth"] or {}
    dataset = truth.get("dataset") or []
    if not dataset:
        return []
    largest = max(item["bytes"] for item in dataset)
    flagged = [sum(f.get("bytes") or [0]) for f in report.get("flags", []) if f.get("kind") == "whole_dataset_upload"]
    if truth.get("dataset_on_device"):
        return [verdict(any(b >= largest for b in flagged), "whole-dataset upload flagged",
                        f"flags of {flagged} bytes, dataset {largest}", hard=False, soft_status=WARN)]
    if truth.get("batches", {}).get("uploaded_each_step"):
        return [verdict(not flagged, "no whole-dataset flag for streaming",
                        f"flags of {flagged} bytes", hard=False, soft_status=WARN)]
    return []


# The truth line's roles and the report category each should get.
TRUTH_ROLES = (("dataset", "dataset"), ("params", "weights"), ("grads", "gradients"),
               ("optimizer_state", "optimizer"))


def categories_vs_truth(truth, allocations):
    """For each tensor of the truth line with a device address, the category
    of the report's allocation holding it: the last one made there (the job
    prints its truth after training; an address freed earlier was reused,
    and JAX remakes its parameters every step). Returns {role: (agreeing, named, [misses])}; a miss
    is "name: category" or "name: no allocation"."""
    spans = []
    for a in allocations:
        start = int(a.get("mapped_at") or a["addr"], 16)  # a VMM handle: where it was mapped
        spans.append((start, start + a["bytes"], a["t_alloc_ns"], a["category"]))
    out = {}
    for role, category in TRUTH_ROLES:
        agree, named, misses = 0, 0, []
        for tensor in truth.get(role) or []:
            ptr = tensor.get("ptr")
            if not ptr or tensor.get("bytes", 0) < 8:
                continue  # no address (TF, JAX grads) or a host scalar (Adam's step)
            holders = [s for s in spans if s[0] <= ptr < s[1]]
            named += 1
            if not holders:
                misses.append(f"{tensor['name']}: no allocation")
                continue
            got = max(holders, key=lambda s: s[2])[3]
            agree += got == category
            if got != category:
                misses.append(f"{tensor['name']}: {got}")
        if named:
            out[role] = (agree, named, misses)
    return out


def category_checks(run, report):
    """Does the classifier name what the job says it holds? A warning only:
    a heuristic, and meaningful where tensors are allocations (per-tensor)."""
    if run["mode"] != "per-tensor" or "allocations" not in report:
        return []
    result = categories_vs_truth(run["truth"] or {}, report["allocations"])
    if not result:
        return []
    ok = all(agree == named for agree, named, _ in result.values())
    detail = "; ".join(f"{role} {agree}/{named}" + (f" (misses: {', '.join(m[:4])})" if m else "")
                       for role, (agree, named, m) in result.items())
    return [verdict(ok, "categories match the truth", detail, hard=False, soft_status=WARN)]


def recording_cost_check(report):
    """What recording cost this job, by the shim's own measure (the report's
    recording_cost: one call in 64 timed in the job). A warning when no
    process of a traced job has it."""
    parts = []
    for p in report.get("processes", []):
        c = p.get("recording_cost")
        if not c:
            continue
        share = c["total_ns"] / c["recorded_ns"] if c.get("recorded_ns") else 0
        rate = (f"{c['ns_per_call']} ns a call" if c.get("ns_per_call") is not None
                else "too few calls for a rate")
        parts.append(f"pid {p.get('pid')}: {rate} over {c['calls']} calls "
                     f"({c['timed_calls']} timed at random), {c['total_ns'] / 1e6:.2f} ms in all "
                     f"({c.get('first_calls_ns', 0) / 1e6:.2f} ms of it setting up), "
                     f"{100 * share:.2g} % of the {c.get('recorded_ns', 0) / 1e9:.2f} s recorded")
    if not parts:
        return check("recording cost", WARN, "no process has the shim's measure of its own time",
                     hard=False)
    return check("recording cost", INFO, "; ".join(parts), hard=False)


def stack_memo_check(run, report):
    """The stack memo on a real framework's stacks: under
    VRAMTRACE_STACK_MEMO=verify (the per-tensor runs) every hit was also
    unwound; a difference fails (the trace kept the unwinder's frames)."""
    procs = [p.get("recording_cost") or {} for p in report.get("processes", [])]
    stacks = sum(c.get("stacks", 0) for c in procs)
    hits = sum(c.get("stacks_from_memo", 0) for c in procs)
    verified = sum(c.get("stacks_verified", 0) for c in procs)
    differed = sum(c.get("stacks_differed", 0) for c in procs)
    detail = f"{stacks} stacks taken, {hits} from the memo"
    if run["mode"] != "per-tensor":
        return check("stack memo", INFO, detail, hard=False)
    detail += f"; {verified} checked against the unwinder, {differed} differed"
    return verdict(differed == 0, "stack memo matches the unwinder", detail)


def report_checks(run, expect):
    report = run.get("report")
    if report is None:
        return [check("analyzer agrees", INFO, f"vramtrace report --json not available: {run['report_error']}",
                      hard=False)]
    totals = report.get("totals", {})
    m = run["metrics"]
    pairs = (("htod_bytes", m["htod_bytes"]), ("htod_calls", m["htod_copies"]),
             ("failed_allocs", m["failed_allocs"]))
    ok = all(totals.get(key) == mine for key, mine in pairs)
    detail = "; ".join(f"report {key} {totals.get(key)} vs {mine}" for key, mine in pairs)
    detail += f"; alloc_calls {totals.get('alloc_calls')} vs {m['allocs']} ok + {m['failed_allocs']} failed"
    out = [verdict(ok, "analyzer agrees", detail)]
    out += flag_checks(run, report)
    out += category_checks(run, report)
    out.append(recording_cost_check(report))
    out.append(stack_memo_check(run, report))
    # The report infers "pool" or "per-tensor" from how the job allocated.
    wanted = expect.get("report_mode", {}).get(run["mode"])
    if wanted:
        modes = sorted({p.get("mode") for p in report.get("processes", []) if p.get("mode")})
        out.append(verdict(wanted in modes, "report sees the allocator mode",
                           f"report says {modes}, expected {wanted!r} for a {run['mode']} run",
                           hard=False, soft_status=WARN))
    return out


def framework_checks(record, run, api_names):
    truth = run["truth"] or {}
    run["metrics"] = m = measure(run["logs"], api_names)
    out = [verdict(run["exit"] == record["baseline"]["exit"], "exit unchanged",
                   f"without {record['baseline']['exit']}, with {run['exit']}"),
           same_result(record, run)]
    traced = trace_checks(run)
    out += traced
    if traced[0]["status"] == FAIL:
        return out  # every other check reads the trace
    if not run["truth"]:
        return out + [check("truth line", FAIL, "the job printed no VRAMTRACE_TRUTH line under vramtrace")]
    out.append(verdict(m["allocs"] > 0, "allocations seen",
                       f"{m['allocs']} allocations by path {m['allocs_by_path']}"))
    out.append(check("lookups", INFO, lookup_text(m), hard=False))
    if record["expect"].get("exact"):
        out += exact_checks(truth, m)
    out += dataset_checks(truth, run)
    vmm = record["expect"].get("vmm")
    if vmm == "hard":
        out.append(verdict(m["vmm_creates"] > 0 and m["vmm_maps"] > 0, "VMM allocations seen",
                           f"{m['vmm_creates']} cuMemCreate, {m['vmm_maps']} cuMemMap"))
    elif vmm == "soft":
        out.append(verdict(m["vmm_creates"] > 0, "VMM allocations seen",
                           f"{m['vmm_creates']} cuMemCreate, {m['vmm_maps']} cuMemMap "
                           "(expected; a warning, not a failure, until a GPU run settles it)",
                           hard=False, soft_status=WARN))
    return out + launcher_checks(run) + report_checks(run, record["expect"])


def skipped_checks(record, run):
    """A job that could not run must fail the same way under vramtrace."""
    base = record["baseline"]
    run["metrics"] = None
    return [verdict(run["exit"] == base["exit"], "exit unchanged", f"without {base['exit']}, with {run['exit']}"),
            verdict(run["last_error"] == base["last_error"], "message unchanged", repr(run["last_error"]))]


def evaluate(record, dry_run, api_names):
    """Checks per run; also whether a job the kit needed was missing."""
    results = []
    for run in record["runs"]:
        if "skipped" in record:
            results.append({"mode": run["mode"], "checks": skipped_checks(record, run)})
        else:
            results.append({"mode": run["mode"], "checks": framework_checks(record, run, api_names)})
    if dry_run and record["job"] != "driver" and "skipped" not in record:
        results.append({"mode": "-", "checks": [check("fails early without GPU", FAIL,
                       f"exit {record['baseline']['exit']}: expected 3 (no CUDA device) or 4 (package missing)")]})
    if not dry_run and record["baseline"]["exit"] == EXIT_NO_GPU:
        results.append({"mode": "-", "checks": [check("GPU seen", FAIL,
                       f"on the GPU machine the job found no CUDA device: {record['skipped']}")]})
    if dry_run and record["job"] == "driver" and "skipped" in record:
        results.append({"mode": "-", "checks": [check("simulated driver run", FAIL, record["skipped"])]})
    for mode in record.get("not_run", []):
        results.append({"mode": mode, "checks": [check("ran in time", FAIL, "the kit's time budget ran out")]})
    return results


# ---- summary ---------------------------------------------------------------

def lookup_text(m):
    parts = []
    for path in PATHS:
        c = m["lookups"].get(path, {})
        routed = c.get("routed", 0) + c.get("routed_by_name", 0)
        parts.append(f"{path} {routed}/{c.get('total', 0)}")
    return ", ".join(parts)


def run_status(checks_):
    if any(c["hard"] for c in checks_):
        return FAIL
    return WARN if any(c["status"] == WARN for c in checks_) else PASS


def one_line(record):
    states = [f"{r['mode']}={run_status(r['checks'])}" for r in record["checks"]]
    extra = f" (skipped: {record['skipped']})" if "skipped" in record else ""
    return f"kit: {record['job']}: {' '.join(states) or 'no runs'}{extra}"


TABLE_HEAD = ("| job | mode | exit base/shim | result same | allocs ok/failed | alloc bytes | VMM creates "
              "| H2D copies | H2D bytes | dataset bytes (truth) | dataset bytes seen as H2D "
              "| routed/total lookups | allocs by path | seconds base/shim | verdict |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")


def table_row(record, run, checks_):
    m = run["metrics"]
    base = record["baseline"]["exit"]
    same = next((c["status"] for c in checks_ if c["name"] in ("result unchanged", "message unchanged")), "-")
    seconds = f"{record['baseline']['seconds']}/{run['seconds']}"
    if m is None:
        cells = [record["job"], run["mode"], f"{base}/{run['exit']}", same] + ["-"] * 9 + [seconds]
    else:
        truth = run["truth"] or {}
        dataset = truth.get("dataset", [])
        seen = "-"
        if truth.get("dataset_on_device") and dataset and all("ptr" in d for d in dataset):
            seen = str(sum(htod_into(run["logs"], d["ptr"], d["bytes"]) for d in dataset))
        by_path = " ".join(f"{k}:{v}" for k, v in sorted(m["allocs_by_path"].items())) or "-"
        cells = [record["job"], run["mode"], f"{base}/{run['exit']}", same,
                 f"{m['allocs']}/{m['failed_allocs']}", str(m["alloc_bytes"]), str(m["vmm_creates"]),
                 str(m["htod_copies"]), str(m["htod_bytes"]), str(sum(d["bytes"] for d in dataset)), seen,
                 lookup_text(m), by_path, seconds]
    return "| " + " | ".join(cells + [run_status(checks_)]) + " |\n"


def summary(records, version_lines, dry_run, omitted):
    title = "dry run: simulated driver, no GPU" if dry_run else "GPU run"
    md = [f"# vramtrace GPU check kit: {title}\n\n", time.strftime("%Y-%m-%d %H:%M UTC\n\n", time.gmtime()),
          "## Versions\n\n```\n", "\n".join(version_lines), "\n```\n\n## Results\n\n", TABLE_HEAD]
    failed, skipped, rows = [], [], []
    for record in records:
        runs = {r["mode"]: r for r in record["runs"]}
        for result in record["checks"]:
            run = runs.get(result["mode"])
            if run is not None:
                md.append(table_row(record, run, result["checks"]))
            else:  # a check on the job as a whole (no GPU seen, ran out of time)
                cells = [record["job"], result["mode"], f"{record['baseline']['exit']}/-"] + ["-"] * 11
                md.append("| " + " | ".join(cells + [run_status(result["checks"])]) + " |\n")
            failed += [f"{record['job']} [{result['mode']}] {c['name']}: {c['detail']}"
                       for c in result["checks"] if c["hard"]]
            rows.append({"job": record["job"], "mode": result["mode"], "status": run_status(result["checks"]),
                         "checks": result["checks"], "metrics": run and strip(run.get("metrics")),
                         "truth": run and run.get("truth"), "exit": run and run["exit"],
                         "seconds": run and run["seconds"]})
        if "skipped" in record:
            skipped.append(f"- {record['job']}: {record['skipped']}")
    md.append("\nA skipped job (package missing or no GPU) runs once under vramtrace to show its exit code "
              "and message pass through unchanged.\n\n")
    if skipped:
        md += ["## Jobs that could not run here\n\n", "\n".join(skipped), "\n\n"]
    md += ["## Failed checks\n\n", "\n".join(f"- {f}" for f in failed) if failed else "none", "\n\n"]
    md += ["## Every check\n\n"]
    for row in rows:
        md.append(f"- **{row['job']} [{row['mode']}]** {row['status']}: " +
                  "; ".join(f"{c['name']} {c['status']} ({c['detail']})" for c in row["checks"]) + "\n")
    if omitted:
        md.append(f"\nTraces left out of traces.tar.gz (size cap): {', '.join(omitted)}\n")
    return {"markdown": "".join(md),
            "json": {"dry_run": dry_run, "passed": not failed, "failed": failed, "runs": rows,
                     "versions": version_lines, "omitted_traces": omitted}}


def strip(metrics):
    return None if metrics is None else {k: v for k, v in metrics.items() if k != "states"}
