#!/usr/bin/env python3
"""The kit's reader (samples/gpu/vtlog.py) against the project's own writer
and reader: kit_fixture_writer writes a trace with logwriter/log_writer.c;
vtlog must read the same records, field for field, as `vramtrace dump
--json`, and the kit's measurements must match what the fixture wrote.

  test_reader_interop.py FIXTURE_WRITER VRAMTRACE WORKDIR"""
import json
import os
import shutil
import subprocess
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "samples", "gpu"))
import checks  # noqa: E402
import vtlog  # noqa: E402

WRITER, VRAMTRACE, WORK = sys.argv[1:4]
API = vtlog.api_names(REPO)
EVENT_NAMES = {1: "alloc", 2: "free", 3: "copy", 4: "map", 5: "unmap", 6: "reserve", 7: "unreserve",
               8: "memset", 9: "pool_trim"}
MIB = 1 << 20


class Interop(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)
        code = subprocess.run([WRITER, WORK]).returncode
        assert code == 7, f"fixture writer exit {code}"
        dump = subprocess.run([VRAMTRACE, "dump", WORK, "--json"], capture_output=True, text=True, check=True)
        cls.dump = [json.loads(line) for line in dump.stdout.splitlines()]
        cls.logs = vtlog.read_trace(WORK)

    def test_header(self):
        (log,) = self.logs
        head = self.dump[0]
        self.assertEqual((log.pid, log.ppid, log.state, log.exit_code, log.exe, log.cmdline),
                         (head["pid"], head["ppid"], head["state"], head["exit_code"], head["exe"], head["cmdline"]))
        self.assertEqual((log.state, log.exit_code), ("exited", 7))

    def test_events_match_dump(self):
        (log,) = self.logs
        dumped = [r for r in self.dump if r["record"] in EVENT_NAMES.values()]
        self.assertEqual(len(log.events), len(dumped))
        for mine, theirs in zip(log.events, sorted(dumped, key=lambda r: r["seq"])):
            self.assertEqual((EVENT_NAMES[mine.type], mine.seq, mine.addr, mine.bytes, API.get(mine.api), mine.result),
                             (theirs["record"], theirs["seq"], int(theirs["addr"], 16), theirs["bytes"],
                              theirs["api"], theirs["result"]))

    def test_lookups_match_dump(self):
        (log,) = self.logs
        dumped = [r for r in self.dump if r["record"] == "lookup"]
        self.assertEqual([(l.path, l.outcome, API.get(l.api, "none"), l.version, l.name) for l in log.lookups],
                         [(r["path"], r["outcome"], r["api"], r["version"], r["name"]) for r in dumped])

    def test_device_and_note(self):
        (log,) = self.logs
        self.assertEqual(log.devices[0]["name"], "fixture GPU")
        self.assertEqual(log.devices[0]["total_bytes"], 80 << 30)
        self.assertEqual(log.notes, ["fixture note"])

    def test_measurements(self):
        m = checks.measure(self.logs, API)
        self.assertEqual((m["allocs"], m["failed_allocs"], m["frees"], m["vmm_creates"], m["vmm_maps"]),
                         (2, 1, 2, 1, 1))  # frees: one full, one compact record
        self.assertEqual((m["htod_copies"], m["htod_bytes"], m["htod_max"]), (5, 9 * MIB, 8 * MIB))
        self.assertEqual(checks.htod_into(self.logs, 0x7F0000000000, 8 * MIB), 8 * MIB)
        self.assertEqual(m["lookups"]["dlsym"], {"routed": 1, "passed": 1, "total": 2})
        self.assertEqual(m["lookups"]["get_proc"], {"failed": 1, "total": 1})
        self.assertEqual(m["allocs_by_path"], {"dlsym": 1, "direct": 1})


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
