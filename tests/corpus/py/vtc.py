"""vtc.py: the Python corpus jobs' shared plumbing (see ../common/vtc.h and
../README.md). The CUDA driver through ctypes, found by dlsym (ctypes
attribute lookup on the loaded libcuda.so.1, as TensorFlow and XLA dlsym
each symbol) or by cuGetProcAddress_v2 (as libcudart, so PyTorch and CuPy);
every driver allocation is recorded as ground truth:

  alloc DEV ADDR BYTES CATEGORY ORDER   free DEV ADDR
  part DEV ADDR BYTES CATEGORY          part_free DEV ADDR
  finding/no_finding/steps/leak ...     written verbatim by the job

Common options: --truth FILE, --lookup dlsym|getproc, --markers/--no-markers.
Nothing here is named after a framework: the jobs carry the names."""
import argparse
import ctypes

CATEGORIES = ("dataset", "weights", "gradients", "optimizer", "prefetch",
              "activations", "pool", "other")
KIB = 1 << 10
MIB = 1 << 20

_u64 = ctypes.c_uint64
_PROTOS = {  # base name: (version, exported symbol, argument types)
    "cuInit": (2000, "cuInit", [ctypes.c_uint]),
    "cuDeviceGetCount": (2000, "cuDeviceGetCount", [ctypes.POINTER(ctypes.c_int)]),
    "cuDeviceGet": (2000, "cuDeviceGet", [ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
    "cuDevicePrimaryCtxRetain": (7000, "cuDevicePrimaryCtxRetain",
                                 [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]),
    "cuCtxSetCurrent": (4000, "cuCtxSetCurrent", [ctypes.c_void_p]),
    "cuMemAlloc": (3020, "cuMemAlloc_v2", [ctypes.POINTER(_u64), ctypes.c_size_t]),
    "cuMemFree": (3020, "cuMemFree_v2", [_u64]),
    "cuMemAllocAsync": (11020, "cuMemAllocAsync", [ctypes.POINTER(_u64), ctypes.c_size_t, ctypes.c_void_p]),
    "cuMemFreeAsync": (11020, "cuMemFreeAsync", [_u64, ctypes.c_void_p]),
    "cuMemcpyHtoD": (3020, "cuMemcpyHtoD_v2", [_u64, ctypes.c_void_p, ctypes.c_size_t]),
    "cuMemcpyHtoDAsync": (3020, "cuMemcpyHtoDAsync_v2", [_u64, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]),
    "cuMemcpyDtoH": (3020, "cuMemcpyDtoH_v2", [ctypes.c_void_p, _u64, ctypes.c_size_t]),
    "cuMemcpyDtoD": (3020, "cuMemcpyDtoD_v2", [_u64, _u64, ctypes.c_size_t]),
    "cuMemsetD8": (3020, "cuMemsetD8_v2", [_u64, ctypes.c_ubyte, ctypes.c_size_t]),
    "cuMemAllocHost": (3020, "cuMemAllocHost_v2", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]),
    "cuMemFreeHost": (2000, "cuMemFreeHost", [ctypes.c_void_p]),
}


def _ok(job, base, rc):
    if rc != 0:
        raise SystemExit(f"{job.name}: {base} returned CUresult {rc}")


class Job:
    def __init__(self, name, default_lookup, description=""):
        ap = argparse.ArgumentParser(description=description)
        ap.add_argument("--truth")
        ap.add_argument("--lookup", choices=("dlsym", "getproc"), default=default_lookup)
        ap.add_argument("--markers", dest="markers", action="store_true", default=None)
        ap.add_argument("--no-markers", dest="markers", action="store_false")
        self.ap = ap
        self.name = name
        self.records = []
        self.order = 0
        self._host = None
        self.fns = {}

    def start(self, markers_default=True):
        self.args = self.ap.parse_args()
        if self.args.markers is None:
            self.args.markers = markers_default
        self.lib = ctypes.CDLL("libcuda.so.1")
        if self.args.lookup == "getproc":
            gp = self.lib.cuGetProcAddress_v2
            gp.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                           ctypes.c_uint64, ctypes.c_void_p]
            for base, (ver, _sym, argtypes) in _PROTOS.items():
                pfn = ctypes.c_void_p()
                st = ctypes.c_int(0)
                if gp(base.encode(), ctypes.byref(pfn), 12000, 0, ctypes.byref(st)) or not pfn.value:
                    raise SystemExit(f"{self.name}: cuGetProcAddress_v2({base}) failed")
                self.fns[base] = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(pfn.value)
        else:
            for base, (_ver, sym, argtypes) in _PROTOS.items():
                fn = getattr(self.lib, sym)
                fn.argtypes = argtypes
                fn.restype = ctypes.c_int
                self.fns[base] = fn
        self._mark = None
        if self.args.markers:
            try:
                self._mark = ctypes.CDLL(None).vramtrace_mark
                self._mark.argtypes = [ctypes.c_char_p]
            except AttributeError:  # not under vramtrace
                self._mark = None
        self.call("cuInit", 0)
        self.ctx = []
        return self.args

    def call(self, base, *args):
        rc = self.fns[base](*args)
        if rc != 0:
            raise SystemExit(f"{self.name}: {base} returned CUresult {rc}")

    def open_devices(self, n):
        count = ctypes.c_int(0)
        self.call("cuDeviceGetCount", ctypes.byref(count))
        if count.value < n:
            raise SystemExit(f"{self.name}: {n} devices needed, {count.value} present")
        for d in range(n):
            dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
            self.call("cuDeviceGet", ctypes.byref(dev), d)
            self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
            self.ctx.append(ctx)
        self.use(0)
        self.line(f"config job={self.name} lookup={self.args.lookup} "
                  f"markers={int(bool(self.args.markers))} devices={n}")

    def use(self, dev):
        self.call("cuCtxSetCurrent", self.ctx[dev])

    # ---- truth -----------------------------------------------------------
    def line(self, text):
        self.records.append(["line", text])

    def _alloc_rec(self, dev, ptr, nbytes, cat):
        assert cat in CATEGORIES, cat
        rec = ["alloc", dev, ptr, nbytes, cat, self.order]
        self.order += 1
        self.records.append(rec)
        return rec

    def set_category(self, rec, cat):
        rec[4] = cat

    def finish(self):
        if not self.args.truth:
            return
        import sys
        with open(self.args.truth, "w") as f:
            f.write("# vramtrace corpus ground truth: " + " ".join(sys.argv) + "\n")
            for r in self.records:
                if r[0] == "alloc":
                    f.write("alloc %d 0x%x %d %s %d\n" % tuple(r[1:]))
                elif r[0] == "free":
                    f.write("free %d 0x%x\n" % (r[1], r[2]))
                elif r[0] == "part":
                    f.write("part %d 0x%x %d %s\n" % tuple(r[1:]))
                elif r[0] == "part_free":
                    f.write("part_free %d 0x%x\n" % (r[1], r[2]))
                else:
                    f.write(r[1] + "\n")

    # ---- memory ----------------------------------------------------------
    def mem_alloc(self, dev, nbytes, cat):
        """cuMemAlloc, one tensor (or one region)."""
        self.use(dev)
        p = ctypes.c_uint64(0)
        _ok(self, "cuMemAlloc", self.fns["cuMemAlloc"](ctypes.byref(p), nbytes))
        self._alloc_rec(dev, p.value, nbytes, cat)
        return p.value

    def mem_alloc_async(self, dev, nbytes, cat, stream=None):
        """cuMemAllocAsync (stream-ordered allocator)."""
        self.use(dev)
        p = ctypes.c_uint64(0)
        _ok(self, "cuMemAllocAsync", self.fns["cuMemAllocAsync"](ctypes.byref(p), nbytes, stream))
        self._alloc_rec(dev, p.value, nbytes, cat)
        return p.value

    def mem_alloc_managed(self, dev, nbytes, cat):
        """cuMemAllocManaged (CU_MEM_ATTACH_GLOBAL), unified memory as a
        paged optimizer takes it; resolved at its first use, as `peer`, so
        the jobs that never ask for it look up nothing more."""
        if "cuMemAllocManaged" not in self.fns:
            argtypes = [ctypes.POINTER(_u64), ctypes.c_size_t, ctypes.c_uint]
            if self.args.lookup == "getproc":
                pfn, st = ctypes.c_void_p(), ctypes.c_int(0)
                if self.lib.cuGetProcAddress_v2(b"cuMemAllocManaged", ctypes.byref(pfn), 12000, 0,
                                                ctypes.byref(st)) or not pfn.value:
                    raise SystemExit(f"{self.name}: cuGetProcAddress_v2(cuMemAllocManaged) failed")
                self.fns["cuMemAllocManaged"] = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(pfn.value)
            else:
                fn = self.lib.cuMemAllocManaged
                fn.argtypes = argtypes
                fn.restype = ctypes.c_int
                self.fns["cuMemAllocManaged"] = fn
        self.use(dev)
        p = ctypes.c_uint64(0)
        _ok(self, "cuMemAllocManaged", self.fns["cuMemAllocManaged"](ctypes.byref(p), nbytes, 1))
        self._alloc_rec(dev, p.value, nbytes, cat)
        return p.value

    def mem_free(self, dev, *ptrs):
        """cuMemFree of each pointer, in order."""
        self.use(dev)
        for ptr in ptrs:
            self.records.append(["free", dev, ptr])
            _ok(self, "cuMemFree", self.fns["cuMemFree"](ptr))

    def mem_free_async(self, dev, ptr, stream=None):
        self.use(dev)
        self.records.append(["free", dev, ptr])
        _ok(self, "cuMemFreeAsync", self.fns["cuMemFreeAsync"](ptr, stream))

    def part(self, dev, ptr, nbytes, cat):
        self.records.append(["part", dev, ptr, nbytes, cat])

    def part_free(self, dev, ptr):
        self.records.append(["part_free", dev, ptr])

    def host(self, nbytes):
        """A host buffer of at least nbytes (one, patterned, reused)."""
        if self._host is None or len(self._host) < nbytes:
            self._host = ctypes.create_string_buffer(b"\x5a" * nbytes, nbytes)
        return self._host

    def pinned(self, nbytes):
        p = ctypes.c_void_p()
        self.call("cuMemAllocHost", ctypes.byref(p), nbytes)
        return p.value

    def upload(self, dev, nbytes, cat, src=None):
        """cuMemAlloc and one upload of the whole tensor from the host."""
        p = self.mem_alloc(dev, nbytes, cat)
        self.htod(dev, p, nbytes, src=src)
        return p

    def htod(self, dev, dst, nbytes, src=None, stream=None):
        self.use(dev)
        if src is None:
            src = self.host(nbytes)
        if stream is not None:
            _ok(self, "cuMemcpyHtoDAsync", self.fns["cuMemcpyHtoDAsync"](dst, src, nbytes, stream))
        else:
            _ok(self, "cuMemcpyHtoD", self.fns["cuMemcpyHtoD"](dst, src, nbytes))

    def dtoh(self, dev, src, nbytes):
        self.use(dev)
        buf = ctypes.create_string_buffer(nbytes)
        _ok(self, "cuMemcpyDtoH", self.fns["cuMemcpyDtoH"](buf, src, nbytes))
        return buf

    def dtod(self, dev, dst, src, nbytes):
        self.use(dev)
        _ok(self, "cuMemcpyDtoD", self.fns["cuMemcpyDtoD"](dst, src, nbytes))

    def peer(self, dst_dev, dst, src_dev, src, nbytes):
        """cuMemcpyPeer from src on src_dev to dst on dst_dev (resolved at its
        first use, so jobs that never copy between devices look up nothing more)."""
        if "cuMemcpyPeer" not in self.fns:
            argtypes = [_u64, ctypes.c_void_p, _u64, ctypes.c_void_p, ctypes.c_size_t]
            if self.args.lookup == "getproc":
                pfn, st = ctypes.c_void_p(), ctypes.c_int(0)
                if self.lib.cuGetProcAddress_v2(b"cuMemcpyPeer", ctypes.byref(pfn), 12000, 0,
                                                ctypes.byref(st)) or not pfn.value:
                    raise SystemExit(f"{self.name}: cuGetProcAddress_v2(cuMemcpyPeer) failed")
                self.fns["cuMemcpyPeer"] = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(pfn.value)
            else:
                fn = self.lib.cuMemcpyPeer
                fn.argtypes = argtypes
                fn.restype = ctypes.c_int
                self.fns["cuMemcpyPeer"] = fn
        _ok(self, "cuMemcpyPeer", self.fns["cuMemcpyPeer"](dst, self.ctx[dst_dev], src,
                                                          self.ctx[src_dev], nbytes))

    def zero(self, dev, dst, nbytes):
        self.use(dev)
        _ok(self, "cuMemsetD8", self.fns["cuMemsetD8"](dst, 0, nbytes))

    def step(self, s):
        if self._mark:
            self._mark(b"step %d" % s)


def coalesce(blocks, ptr):
    """A block just marked free merged with its free neighbours in the same
    region (blocks: address -> [size, free, region]), as a best-fit
    allocator's free does."""
    blk = blocks[ptr]
    nxt = ptr + blk[0]
    if nxt in blocks and blocks[nxt][1] and blocks[nxt][2] is blk[2]:
        blk[0] += blocks.pop(nxt)[0]
    for p, other in blocks.items():
        if other[1] and other[2] is blk[2] and p + other[0] == ptr:
            other[0] += blocks.pop(ptr)[0]
            break


class BFC:
    """tsl BFCAllocator with allow_growth, as TensorFlow (memory growth) and
    XLA (XLA_PYTHON_CLIENT_PREALLOCATE=false) build it: regions from one
    cuMemAlloc each, the first 2 MiB, `Extend` doubling the region size
    until the request fits and once more when it did not have to grow;
    256-byte rounding; `FindChunkPtr` takes the smallest free chunk that
    fits and splits it only when it is at least twice the request (or more
    than 128 MiB would be wasted), so a large tensor can own a whole region;
    freed chunks merge with free neighbours; regions are never given back.
    Each region's truth is settled at the end: the one kind it held, or
    pool with part lines."""
    MIN_ALLOC = 256
    MAX_FRAG = 128 * MIB

    def __init__(self, job, dev):
        self.job = job
        self.dev = dev
        self.curr = 2 * MIB
        self.regions = []            # [ptr, size, set of kinds, rec]
        self.chunks = {}             # ptr -> [size, free, region]
        self.carved = {}             # chunk in use -> its part addresses

    def _extend(self, rounded):
        grew = False
        while rounded > self.curr:
            self.curr *= 2
            grew = True
        size = self.curr
        ptr = self.job.mem_alloc(self.dev, size, "pool")
        rec = self.job.records[-1]
        region = [ptr, size, set(), rec]
        self.regions.append(region)
        self.chunks[ptr] = [size, True, region]
        if not grew:
            self.curr *= 2

    def _find(self, rounded):
        best = None
        for ptr, (size, free, _r) in self.chunks.items():
            if free and size >= rounded and (best is None or (size, ptr) < best):
                best = (size, ptr)
        return best

    def alloc(self, nbytes, cat, parts=None):
        """parts: (bytes, kind) laid out in the chunk, for an XLA temp buffer."""
        rounded = max(self.MIN_ALLOC, (nbytes + self.MIN_ALLOC - 1) // self.MIN_ALLOC * self.MIN_ALLOC)
        best = self._find(rounded)
        if best is None:
            self._extend(rounded)
            best = self._find(rounded)
        size, ptr = best
        region = self.chunks[ptr][2]
        if size >= 2 * rounded or size - rounded >= self.MAX_FRAG:
            self.chunks[ptr + rounded] = [size - rounded, True, region]
            self.chunks[ptr] = [rounded, False, region]
        else:
            self.chunks[ptr][1] = False
        off, self.carved[ptr] = 0, []
        for n, kind in parts or [(self.chunks[ptr][0], cat)]:
            region[2].add(kind)
            self.job.part(self.dev, ptr + off, n, kind)
            self.carved[ptr].append(ptr + off)
            off += n
        return ptr

    def free(self, *ptrs):
        for ptr in ptrs:
            for p in self.carved.pop(ptr):
                self.job.part_free(self.dev, p)
            self.chunks[ptr][1] = True
            coalesce(self.chunks, ptr)

    def settle(self):
        for region in self.regions:
            kinds = region[2]
            self.job.set_category(region[3], kinds.pop() if len(kinds) == 1 else "pool")

    def release(self):
        self.job.mem_free(self.dev, *[r[0] for r in self.regions])


class Caching:
    """c10/cuda/CUDACachingAllocator.cpp as PyTorch builds it by default:
    sizes rounded to 512 B; a block <= 1 MiB (kSmallSize) from a 2 MiB
    segment, one under 10 MiB (kMinLargeAlloc) from a 20 MiB segment, a
    larger one rounded to 2 MiB (kRoundLarge) in a segment of its own; the
    smallest free block of the same pool that fits, split when a
    small-pool remainder is >= 512 B or a large-pool one > 1 MiB; freed
    blocks merge with free neighbours and stay cached. Blocks are keyed by
    address ([size, free, segment]) for `coalesce`; a segment is [ptr,
    size, small, kinds, record], settled by `settle_and_release`: the one
    kind it held, or pool."""
    SMALL_SIZE, SMALL_BUFFER, LARGE_BUFFER = MIB, 2 * MIB, 20 * MIB
    MIN_LARGE_ALLOC, ROUND_LARGE, MIN_BLOCK = 10 * MIB, 2 * MIB, 512

    def __init__(self, job, dev):
        self.job = job
        self.dev = dev
        self.segments = []
        self.blocks = {}

    def _get_allocation_size(self, size):
        if size <= self.SMALL_SIZE:
            return self.SMALL_BUFFER
        if size < self.MIN_LARGE_ALLOC:
            return self.LARGE_BUFFER
        return (size + self.ROUND_LARGE - 1) // self.ROUND_LARGE * self.ROUND_LARGE

    def malloc(self, nbytes, cat):
        size = max(self.MIN_BLOCK, (nbytes + self.MIN_BLOCK - 1) // self.MIN_BLOCK * self.MIN_BLOCK)
        small = size <= self.SMALL_SIZE
        best = None
        for ptr, (bsize, free, seg) in self.blocks.items():
            if free and seg[2] == small and bsize >= size and (best is None or (bsize, ptr) < best):
                best = (bsize, ptr)
        if best is None:
            seg_size = self._get_allocation_size(size)
            ptr = self.job.mem_alloc(self.dev, seg_size, "pool")
            seg = [ptr, seg_size, small, set(), self.job.records[-1]]
            self.segments.append(seg)
            self.blocks[ptr] = [seg_size, True, seg]
            best = (seg_size, ptr)
        bsize, ptr = best
        seg = self.blocks[ptr][2]
        remaining = bsize - size
        if (small and remaining >= self.MIN_BLOCK) or (not small and remaining > self.SMALL_SIZE):
            self.blocks[ptr + size] = [remaining, True, seg]
            self.blocks[ptr] = [size, False, seg]
        else:
            self.blocks[ptr][1] = False
        seg[3].add(cat)
        self.job.part(self.dev, ptr, self.blocks[ptr][0], cat)
        return ptr

    def free(self, *ptrs):
        for ptr in ptrs:
            self.job.part_free(self.dev, ptr)
            self.blocks[ptr][1] = True
            coalesce(self.blocks, ptr)

    def settle_and_release(self):
        for seg in self.segments:
            self.job.set_category(seg[4], seg[3].pop() if len(seg[3]) == 1 else "pool")
        self.job.mem_free(self.dev, *[s[0] for s in self.segments])
