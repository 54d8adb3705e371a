#!/usr/bin/env python3
"""The kit's own reader (samples/gpu/vtlog.py) and checks (checks.py) on
logs written here byte by byte from include/vramtrace/format.h, so a wrong
offset or a check that passes on bad numbers fails without any GPU."""
import os
import struct
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "samples", "gpu"))
import checks  # noqa: E402
import vtlog  # noqa: E402

CHUNK = 4096
API = vtlog.api_names(REPO)
ID = {name: i for i, name in API.items()}


def header(pid=42, state=1, code=0):
    word = state | ((code & 0xFFFFFFFF) << 32)
    exe = b"/usr/bin/python3"
    cmd = b"python3\0job.py\0"
    return vtlog.HEADER.pack(vtlog.MAGIC, 1, 0x01020304, 4096, CHUNK, pid, 1, 0, 32, 0, 0, 0, word, 0, 1,
                             0, len(exe), len(cmd), b"host", exe, cmd).ljust(4096, b"\0")


def event(rtype, seq, addr, nbytes, api="", kind=0, result=0):
    return vtlog.EVENT.pack(64 | rtype << 16, 0, seq, seq * 10, addr, nbytes, 0, 0, ID.get(api, 0), 0, 0, kind, result)


def lookup(path, outcome, api, name):
    raw = name.encode()
    size = vtlog.LOOKUP.size + ((len(raw) + 7) & ~7)
    body = vtlog.LOOKUP.pack(size | vtlog.REC_LOOKUP << 16, path, outcome, ID.get(api, 0), 0, 3020, len(raw), 0)
    return (body + raw).ljust(size, b"\0")


def chunk(records, tid=7):
    body = vtlog.CHUNK_HEADER.pack(vtlog.CHUNK_MAGIC, tid, 0, 0, 0) + b"".join(records)
    assert len(body) <= CHUNK
    return body.ljust(CHUNK, b"\0")


def write_log(folder, chunks, pid=42, **state):
    path = os.path.join(folder, f"vramtrace.{pid}.0.log")
    with open(path, "wb") as f:
        f.write(header(pid, **state) + b"".join(chunks))
    return path


DATASET, BATCH = 0x7000_0000_0000, 0x7000_1000_0000
STANDARD = [
    lookup(0, 0, "cuMemAlloc_v2", "cuMemAlloc_v2"),      # dlsym, routed
    lookup(2, 0, "cuMemAlloc_v2", "cuMemAlloc"),         # get_proc_v2, routed
    lookup(2, 2, "", "cuDeviceGetName"),                 # get_proc_v2, passed
    event(vtlog.REC_ALLOC, 1, DATASET, 4 << 20, "cuMemAlloc_v2"),
    event(vtlog.REC_COPY, 2, DATASET, 3 << 20, "cuMemcpyHtoD_v2", kind=vtlog.COPY_HTOD),
    event(vtlog.REC_COPY, 3, DATASET + (3 << 20), 2 << 20, "cuMemcpyHtoD_v2", kind=vtlog.COPY_HTOD),  # 1 MiB spills out
    event(vtlog.REC_ALLOC, 4, 0, 1 << 40, "cuMemAlloc_v2", result=2),   # out of memory
    event(vtlog.REC_ALLOC, 5, 0xABC, 2 << 20, "cuMemCreate", kind=4),   # VMM handle
    event(vtlog.REC_FREE, 6, DATASET, 4 << 20, "cuMemFree_v2"),
]


class Reader(unittest.TestCase):
    def test_reads_every_record_in_order(self):
        with tempfile.TemporaryDirectory() as trace:
            # Two chunks of one thread, written out of order on purpose.
            write_log(trace, [chunk(STANDARD[5:]), chunk(STANDARD[:5])])
            (log,) = vtlog.read_trace(trace)
        self.assertEqual((log.pid, log.state, log.exit_code), (42, "exited", 0))
        self.assertEqual(log.exe, "/usr/bin/python3")
        self.assertEqual([e.seq for e in log.events], [1, 2, 3, 4, 5, 6])
        self.assertEqual([(l.path, l.outcome, l.name) for l in log.lookups][:2],
                         [("dlsym", "routed", "cuMemAlloc_v2"), ("get_proc_v2", "routed", "cuMemAlloc")])

    def test_negative_exit_code_and_running_state(self):
        with tempfile.TemporaryDirectory() as trace:
            write_log(trace, [chunk(STANDARD)], state=0, code=-9)
            (log,) = vtlog.read_trace(trace)
        self.assertEqual((log.state, log.exit_code), ("running", -9))

    def test_corrupt_size_stops_that_chunk_only(self):
        bad = struct.pack("<I", 12 | vtlog.REC_ALLOC << 16) + b"\0" * 4  # size not a multiple of 8
        with tempfile.TemporaryDirectory() as trace:
            write_log(trace, [chunk([STANDARD[3], bad, STANDARD[4]]), chunk(STANDARD[5:])])
            (log,) = vtlog.read_trace(trace)
        self.assertEqual(log.corrupt_chunks, 1)
        self.assertEqual([e.seq for e in log.events], [1, 3, 4, 5, 6])  # seq 2 was after the bad record

    def test_not_a_log(self):
        with tempfile.TemporaryDirectory() as trace:
            with open(os.path.join(trace, "vramtrace.1.0.log"), "wb") as f:
                f.write(b"garbage" * 1000)
            with self.assertRaises(vtlog.LogError):
                vtlog.read_trace(trace)


class Checks(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        write_log(self.dir.name, [chunk(STANDARD)])
        self.logs = vtlog.read_trace(self.dir.name)

    def tearDown(self):
        self.dir.cleanup()

    def test_measure(self):
        m = checks.measure(self.logs, API)
        self.assertEqual((m["allocs"], m["failed_allocs"], m["frees"], m["vmm_creates"]), (2, 1, 1, 1))
        self.assertEqual(m["alloc_bytes"], (4 << 20) + (2 << 20))
        self.assertEqual((m["htod_copies"], m["htod_bytes"], m["htod_max"]), (2, 5 << 20, 3 << 20))
        self.assertEqual(m["lookups"]["get_proc_v2"], {"routed": 1, "passed": 1, "total": 2})
        self.assertEqual(m["lookups"]["get_proc"], {"total": 0})
        # cuMemAlloc_v2 reached the job through both paths; cuMemCreate through none.
        self.assertEqual(m["allocs_by_path"], {"dlsym+get_proc_v2": 1, "direct": 1})

    def test_dataset_coverage_counts_only_bytes_inside_the_buffer(self):
        self.assertEqual(checks.htod_into(self.logs, DATASET, 4 << 20), 4 << 20)
        self.assertEqual(checks.htod_into(self.logs, DATASET, 3 << 20), 3 << 20)
        self.assertEqual(checks.htod_into(self.logs, BATCH, 1 << 20), 0)

    def run_record(self, truth, result="R", base_result="R"):
        run = {"mode": "default", "exit": 0, "result_line": result, "truth": truth, "logs": self.logs,
               "read_error": "", "report": None, "report_error": "not built", "seconds": 1}
        record = {"job": "t", "expect": {}, "baseline": {"exit": 0, "result_line": base_result, "seconds": 1},
                  "runs": [run]}
        return record, run

    def statuses(self, record, run):
        return {c["name"]: c["status"] for c in checks.framework_checks(record, run, API)}

    def test_whole_dataset_seen_or_missed(self):
        truth = {"dataset_on_device": True, "dataset": [{"name": "x", "bytes": 4 << 20, "ptr": DATASET}]}
        self.assertEqual(self.statuses(*self.run_record(truth))["dataset seen as H2D (x)"], "PASS")
        truth["dataset"][0]["ptr"] = BATCH
        self.assertEqual(self.statuses(*self.run_record(truth))["dataset seen as H2D (x)"], "FAIL")

    def test_streaming_twin_must_not_upload_whole(self):
        truth = {"dataset_on_device": False, "dataset": [{"name": "x", "bytes": 3 << 20}],
                 "batches": {"uploaded_each_step": True, "count": 2, "bytes": 1 << 20}}
        self.assertEqual(self.statuses(*self.run_record(truth))["streamed, never whole"], "FAIL")
        truth["dataset"][0]["bytes"] = 8 << 20
        self.assertEqual(self.statuses(*self.run_record(truth))["streamed, never whole"], "PASS")

    def test_unreadable_trace_stops_the_checks(self):
        record, run = self.run_record({"dataset_on_device": True, "dataset": [{"name": "x", "bytes": 1, "ptr": 1}]})
        run["logs"], run["read_error"] = [], "bad magic"
        got = self.statuses(record, run)
        self.assertEqual(got["trace read"], "FAIL")
        self.assertNotIn("allocations seen", got)

    def test_changed_result_fails_and_exact_numbers_are_checked(self):
        truth = {"expect": {"allocs": 2, "htod_bytes": 5 << 20, "frees": 2,
                            "lookups": {"dlsym": ["cuMemAlloc_v2"], "get_proc_v2": ["cuMemcpyHtoD"]}}}
        record, run = self.run_record(truth, result="A", base_result="B")
        record["expect"] = {"exact": True}
        got = self.statuses(record, run)
        self.assertEqual(got["result unchanged"], "FAIL")
        self.assertEqual((got["allocs exact"], got["htod_bytes exact"], got["frees exact"]), ("PASS", "PASS", "FAIL"))
        self.assertEqual((got["dlsym lookups routed"], got["get_proc_v2 lookups routed"]), ("PASS", "FAIL"))

    def test_result_changed_by_the_allocator_switch_alone_passes(self):
        record, run = self.run_record({"dataset": []}, result="A", base_result="B")
        run["mode_baseline"] = {"result_line": "C"}  # the switch without the shim: still differs
        self.assertEqual(self.statuses(record, run)["result unchanged"], "FAIL")
        run["mode_baseline"] = {"result_line": "A"}  # the switch alone explains it
        self.assertEqual(self.statuses(record, run)["result unchanged"], "PASS")

    def test_launcher_mode_and_per_tensor_switches(self):
        record, run = self.run_record({"dataset": [], "allocator": {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}})
        run["run_json"] = {"mode": "default", "exit_code": 0}
        self.assertEqual(self.statuses(record, run)["run.json"], "PASS")
        self.assertNotIn("per-tensor switches reached the job", self.statuses(record, run))
        run["mode"] = "per-tensor"
        got = self.statuses(record, run)
        self.assertEqual((got["run.json"], got["per-tensor switches reached the job"]), ("FAIL", "PASS"))
        run["run_json"]["mode"] = "per-tensor"
        run["truth"]["allocator"]["PYTORCH_NO_CUDA_MEMORY_CACHING"] = ""
        got = self.statuses(record, run)
        self.assertEqual((got["run.json"], got["per-tensor switches reached the job"]), ("PASS", "FAIL"))

    def test_report_cross_check(self):
        record, run = self.run_record({"dataset": []})
        record["expect"] = {"report_mode": {"default": "pool"}}
        run["report"] = {"totals": {"htod_bytes": 5 << 20, "htod_calls": 2, "failed_allocs": 1},
                         "processes": [{"mode": "per-tensor"}]}
        got = self.statuses(record, run)
        self.assertEqual((got["analyzer agrees"], got["report sees the allocator mode"]), ("PASS", "WARN"))
        run["report"]["totals"]["htod_calls"] = 3
        run["report"]["processes"][0]["mode"] = "pool"
        got = self.statuses(record, run)
        self.assertEqual((got["analyzer agrees"], got["report sees the allocator mode"]), ("FAIL", "PASS"))

    def test_whole_dataset_flag(self):
        truth = {"dataset_on_device": True, "dataset": [{"name": "x", "bytes": 4 << 20, "ptr": DATASET}]}
        record, run = self.run_record(truth)
        run["report"] = {"totals": {}, "flags": [{"kind": "whole_dataset_upload", "bytes": [4 << 20]}]}
        self.assertEqual(self.statuses(record, run)["whole-dataset upload flagged"], "PASS")
        run["report"]["flags"] = []
        self.assertEqual(self.statuses(record, run)["whole-dataset upload flagged"], "WARN")
        run["truth"] = {"dataset_on_device": False, "dataset": [{"name": "x", "bytes": 8 << 20}],
                        "batches": {"uploaded_each_step": True, "count": 1, "bytes": 1}}
        self.assertEqual(self.statuses(record, run)["no whole-dataset flag for streaming"], "PASS")

    def test_vmm_hard_needs_create_and_map_soft_only_warns(self):
        record, run = self.run_record({"dataset": []})
        record["expect"] = {"vmm": "hard"}
        self.assertEqual(self.statuses(record, run)["VMM allocations seen"], "FAIL")  # no cuMemMap
        record["expect"] = {"vmm": "soft"}
        run["logs"][0].events.append(vtlog.Event(vtlog.REC_ALLOC, 0, 9, 0, 1, 1 << 20, 0, 0, 0, 0, 0, 0, 0))
        self.assertEqual(self.statuses(record, run)["VMM allocations seen"], "PASS")
        run["logs"][0].events[:] = [e for e in run["logs"][0].events if e.kind != 4]
        got = checks.framework_checks(record, run, API)
        vmm = [c for c in got if c["name"] == "VMM allocations seen"][0]
        self.assertEqual((vmm["status"], vmm["hard"]), ("WARN", False))
        record["expect"] = {"vmm": "hard"}
        run["logs"][0].events.append(vtlog.Event(vtlog.REC_ALLOC, 0, 10, 0, 2, 2 << 20, 0, 0, 0, 0, 0, 4, 0))
        run["logs"][0].events.append(vtlog.Event(vtlog.REC_MAP, 0, 11, 0, 3, 2 << 20, 2, 0, 0, 0, 0, 0, 0))
        self.assertEqual(self.statuses(record, run)["VMM allocations seen"], "PASS")

    def test_nondeterministic_job_compared_with_tolerance(self):
        record, run = self.run_record({}, result='{"l":["1.00000001"]}', base_result='{"l":["1.0"]}')
        record["baseline_again"] = {"result_line": '{"l":["1.00000002"]}'}
        self.assertEqual(self.statuses(record, run)["result unchanged"], "PASS")
        run["result_line"] = '{"l":["1.1"]}'
        self.assertEqual(self.statuses(record, run)["result unchanged"], "FAIL")

    def test_no_gpu_is_a_failure_only_on_a_gpu_run(self):
        record, run = self.run_record({})
        record["baseline"].update(exit=3, last_error="no CUDA device", result_line=None)
        record["skipped"] = "no CUDA device"
        run.update(exit=3, last_error="no CUDA device", result_line=None)
        failed = lambda dry: [c["name"] for r in checks.evaluate(record, dry, API) for c in r["checks"] if c["hard"]]
        self.assertEqual(failed(True), [])
        self.assertEqual(failed(False), ["GPU seen"])
        record["baseline"]["exit"] = run["exit"] = 4  # package missing: skipped either way
        self.assertEqual(failed(False), [])

    def test_summary_row_and_verdict(self):
        truth = {"dataset_on_device": True, "dataset": [{"name": "x", "bytes": 4 << 20, "ptr": DATASET}]}
        record, run = self.run_record(truth)
        record["checks"] = checks.evaluate(record, False, API)
        out = checks.summary([record], ["v"], False, [])
        row = [l for l in out["markdown"].splitlines() if l.startswith("| t | default")][0]
        cells = [c.strip() for c in row.strip("|").split("|")]
        self.assertEqual(cells[4:11], ["2/1", str(6 << 20), "1", "2", str(5 << 20), str(4 << 20), str(4 << 20)])
        self.assertEqual(cells[-1], "PASS")
        self.assertTrue(out["json"]["passed"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
