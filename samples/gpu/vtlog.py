"""An independent reader of vramtrace logs (include/vramtrace/format.h),
stdlib only, for the GPU check kit.

Why not only `vramtrace dump --json`: the kit checks the shim against ground
truth, and a second reader written from the format contract alone also
checks the analyzer's reader (kit.py compares the totals with
`vramtrace report --json`). It reads only what the kit needs: the header,
events, driver lookups, devices and exit records.
"""
import os
import re
import struct
from collections import namedtuple

MAGIC = b"VRAMTRC\0"
CHUNK_MAGIC = 0x4B435456
CHUNK_HEADER = struct.Struct("<IIQQQ")
HEADER = struct.Struct("<8sIIIIiiIIQQQQQQQII64s1024s2048s")
EVENT = struct.Struct("<IIQQQQQQBBBBi")
FREE_SHORT = struct.Struct("<IIQQQBBBBi")  # struct vt_free_event: a free with bytes/aux/stream 0
LOOKUP = struct.Struct("<IBBBBIIQ")
DEVICE = struct.Struct("<IIQII")
EXIT = struct.Struct("<IiQQ")
NOTE = struct.Struct("<IIQ")

# enum vt_rec
REC_ALLOC, REC_FREE, REC_COPY, REC_MAP, REC_UNMAP, REC_RESERVE = 1, 2, 3, 4, 5, 6
REC_UNRESERVE = 7
RELEASE_TYPES = (REC_FREE, REC_UNMAP, REC_UNRESERVE)  # a packed one without a device byte: 255
EVENT_TYPES = range(1, 10)
REC_FREE_SHORT = 10
REC_PACKED = 11  # any event in 16-80 bytes: include/vramtrace/event_packed.h
REC_DEVICE, REC_LOOKUP, REC_EXIT, REC_NOTE = 22, 23, 21, 25
# enum vt_copy_dir / vt_alloc_kind
COPY_HTOD = 1
ALLOC_KINDS = {0: "device", 1: "managed", 2: "async", 3: "pool", 4: "vmm", 5: "array",
               6: "host", 7: "graph", 8: "ipc"}
LOOKUP_PATHS = {0: "dlsym", 1: "get_proc", 2: "get_proc_v2"}
LOOKUP_OUTCOMES = {0: "routed", 1: "routed_by_name", 2: "passed", 3: "unrouted", 4: "failed"}
STATES = {0: "running", 1: "exited", 2: "execed"}
LOG_NAME = re.compile(r"^vramtrace\.(\d+)\.(\d+)\.log$")

Event = namedtuple("Event", "type stack_id seq t_ns addr bytes aux stream api rt_api device kind result")
Lookup = namedtuple("Lookup", "path outcome api version flags name")


class LogError(Exception):
    pass


def api_names(repo_root):
    """VT_API id -> symbol, from include/vramtrace/api.def (the one table)."""
    path = os.path.join(repo_root, "include", "vramtrace", "api.def")
    names = {}
    with open(path) as table:
        for match in re.finditer(r"^VT_API\((\d+),\s*(\w+),\s*(\w+)\)", table.read(), re.M):
            names[int(match.group(1))] = match.group(2)
    return names


def cstr(raw):
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


class Log:
    """One process's log: header fields, then records in sequence order."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < HEADER.size or data[:8] != MAGIC:
            raise LogError(f"{path}: not a vramtrace log (bad magic)")
        fields = HEADER.unpack_from(data)
        (_, self.version, _, header_size, chunk_size, self.pid, self.ppid, self.exec_index,
         self.stack_depth, _, _, _, state, self.flags, _, self.events_dropped, exe_len,
         _, _, exe, cmdline) = fields
        if self.version not in (1, 2):  # 2: packed addresses may be 6 bytes (ADDR48)
            raise LogError(f"{path}: format version {self.version}, this reader knows 1 and 2")
        self.state = STATES.get(state & 0xFFFFFFFF, "unknown")
        code = state >> 32
        self.exit_code = code - (1 << 32) if code & 0x80000000 else code
        self.exe = exe[:exe_len].decode("utf-8", "replace")
        self.cmdline = [part.decode("utf-8", "replace") for part in cmdline.rstrip(b"\0").split(b"\0")]
        self.events, self.lookups, self.devices, self.notes = [], [], {}, []
        self.corrupt_chunks = 0
        if chunk_size == 0 or chunk_size % 4096:
            raise LogError(f"{path}: chunk size {chunk_size} is not a multiple of 4096")
        for start in range(header_size, len(data) - CHUNK_HEADER.size + 1, chunk_size):
            self._read_chunk(data, start, min(start + chunk_size, len(data)))
        self.events.sort(key=lambda e: e.seq)

    def _read_chunk(self, data, start, end):
        magic, _, _, self._first_seq, self._first_t_ns = CHUNK_HEADER.unpack_from(data, start)
        if magic != CHUNK_MAGIC:
            return  # never claimed, or not yet published
        offset = start + CHUNK_HEADER.size
        while offset + 4 <= end:
            word = struct.unpack_from("<I", data, offset)[0]
            if word == 0:
                return  # end of this thread's records
            size, rtype = word & 0xFFFF, (word >> 16) & 0xFF
            if size < 8 or size % 8 or offset + size > end:
                self.corrupt_chunks += 1
                return
            self._record(rtype, data, offset, size)
            offset += size

    def _record(self, rtype, data, offset, size):
        if rtype in EVENT_TYPES and size >= EVENT.size:
            raw = EVENT.unpack_from(data, offset)
            self.events.append(Event(rtype, *raw[1:]))
        elif rtype == REC_FREE_SHORT and size >= FREE_SHORT.size:
            _, stack_id, seq, t_ns, addr, api, rt_api, device, kind, result = FREE_SHORT.unpack_from(data, offset)
            self.events.append(Event(REC_FREE, stack_id, seq, t_ns, addr, 0, 0, 0, api, rt_api, device, kind, result))
        elif rtype == REC_PACKED:
            event = unpack_event(data[offset:offset + size], self._first_seq, self._first_t_ns)
            if event:
                self.events.append(event)
        elif rtype == REC_LOOKUP and size >= LOOKUP.size:
            _, path, outcome, api, _, version, name_len, flags = LOOKUP.unpack_from(data, offset)
            name = data[offset + LOOKUP.size: offset + LOOKUP.size + name_len].decode("utf-8", "replace")
            self.lookups.append(Lookup(LOOKUP_PATHS.get(path, str(path)),
                                       LOOKUP_OUTCOMES.get(outcome, str(outcome)), api, version, flags, name))
        elif rtype == REC_DEVICE and size >= DEVICE.size:
            _, ordinal, total, name_len, _ = DEVICE.unpack_from(data, offset)
            name = data[offset + DEVICE.size: offset + DEVICE.size + name_len].decode("utf-8", "replace")
            self.devices[ordinal] = {"ordinal": ordinal, "total_bytes": total, "name": name}
        elif rtype == REC_NOTE and size >= NOTE.size:
            _, length, _ = NOTE.unpack_from(data, offset)
            self.notes.append(data[offset + NOTE.size: offset + NOTE.size + length].decode("utf-8", "replace"))


def _varint(raw, pos):
    value = shift = 0
    while pos < len(raw) and shift < 70:
        byte = raw[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise ValueError("varint runs past the record")


def _unzigzag(v):
    return (v >> 1) ^ -(v & 1)


ADDR48 = 0x80  # present bit 7 (include/vramtrace/event_packed.h)


def unpack_event(raw, first_seq, first_t_ns):
    """A VT_REC_PACKED record -> Event, or None when it is malformed."""
    if len(raw) < 16 or not 1 <= raw[4] <= 9:
        return None
    etype, api, present = raw[4], raw[5], raw[6]
    try:
        stack_id, pos = _varint(raw, 7)
        dseq, pos = _varint(raw, pos)
        dt, pos = _varint(raw, pos)
        if present & ADDR48:  # a device address in 6 little-endian bytes
            if pos + 6 > len(raw):
                return None
            addr, pos = int.from_bytes(raw[pos:pos + 6], "little"), pos + 6
        else:
            addr, pos = _varint(raw, pos)
        # rt_api, device, kind: one byte each; a release left out says "device unknown"
        small = [0, 255 if etype in RELEASE_TYPES else 0, 0]
        for bit in range(3):
            if present & (1 << bit):
                small[bit] = raw[pos]
                pos += 1
        wide = []
        for bit in range(3, 7):  # bytes, aux, stream, zigzag(result)
            value = 0
            if present & (1 << bit):
                value, pos = _varint(raw, pos)
            wide.append(value)
    except (ValueError, IndexError):
        return None
    mask = (1 << 64) - 1
    seq = (first_seq + _unzigzag(dseq)) & mask
    t_ns = (first_t_ns + _unzigzag(dt)) & mask
    return Event(etype, stack_id, seq, t_ns, addr, wide[0], wide[1], wide[2], api,
                 small[0], small[1], small[2], _unzigzag(wide[3]))


def read_trace(directory):
    """Every log in a trace directory, by (pid, exec index)."""
    logs = []
    for name in sorted(os.listdir(directory)):
        if LOG_NAME.match(name):
            logs.append(Log(os.path.join(directory, name)))
    return logs
