#!/usr/bin/env python3
"""A CuPy array job over its default memory pool (cupy/cuda/memory.pyx,
SingleDeviceMemoryPool): every request is rounded up to 512 bytes
(_round_size); malloc first looks for a free chunk in the bins of that size
and up (the smallest size that fits, the most recently freed of it), splits
it when it is larger (_split: the rest goes back to the free list), and only
when none fits asks the driver for a new Memory of exactly the rounded size
(_alloc -> cudaMalloc). free() merges the chunk with free neighbours of the
same Memory (_merge) and keeps it: memory goes back to the driver only at
free_all_blocks(). The job: cp.asarray(x) of a 4099 x 4500 float32 matrix
(one upload of the whole array), then per block of 900 columns a
standardisation and a covariance (ascontiguousarray, mean, subtract, std,
divide, z.T @ z), each result copied back with cp.asnumpy. Later blocks
reuse the first block's freed chunks (same sizes), small requests split
larger free chunks. No training, no markers, driver by cuGetProcAddress.

Truth: x's Memory is dataset, the whole array uploaded in one copy (a true
whole_dataset_upload of 73,782,000 bytes); every other Memory only ever
held temporaries: activations (its chunks as part lines); no prefetch; 0
steps."""
import vtc

job = vtc.Job("cupy_mempool", "getproc", __doc__)
ROWS, COLS, BLOCK, F32 = 4099, 4500, 900, 4
UNIT = 512


def _round_size(n):
    return (n + UNIT - 1) // UNIT * UNIT


class Memory:
    def __init__(self, ptr, size, rec):
        self.ptr, self.size, self.rec = ptr, size, rec
        self.chunks = [[0, size, False]]  # offset, size, in use
        self.kinds = set()


class SingleDeviceMemoryPool:
    def __init__(self):
        self.mems = []
        self.stamp = 0
        self.freed_at = {}  # (Memory index, offset) -> when freed

    def _alloc(self, size, kind):
        ptr = job.mem_alloc(0, size, kind)
        self.mems.append(Memory(ptr, size, job.records[-1]))
        return len(self.mems) - 1

    def _find_free(self, size):
        best = None
        for mi, mem in enumerate(self.mems):
            for ci, (off, csize, used) in enumerate(mem.chunks):
                if used or csize < size:
                    continue
                key = (csize, -self.freed_at.get((mi, off), 0))
                if best is None or key < best[0]:
                    best = (key, mi, ci)
        return best

    def _split(self, mem, ci, size):
        off, csize, _ = mem.chunks[ci]
        if csize > size:
            mem.chunks[ci:ci + 1] = [[off, size, False], [off + size, csize - size, False]]

    def malloc(self, nbytes, kind):
        size = _round_size(nbytes)
        best = self._find_free(size)
        if best is None:
            mi, ci = self._alloc(size, kind), 0
        else:
            _, mi, ci = best
        mem = self.mems[mi]
        self._split(mem, ci, size)
        mem.chunks[ci][2] = True
        mem.kinds.add(kind)
        ptr = mem.ptr + mem.chunks[ci][0]
        job.part(0, ptr, size, kind)
        return ptr

    def _merge(self, mem, ci):
        if ci + 1 < len(mem.chunks) and not mem.chunks[ci + 1][2]:
            mem.chunks[ci][1] += mem.chunks.pop(ci + 1)[1]
        if ci > 0 and not mem.chunks[ci - 1][2]:
            mem.chunks[ci - 1][1] += mem.chunks.pop(ci)[1]
            ci -= 1
        return ci

    def free(self, ptr):
        for mi, mem in enumerate(self.mems):
            for ci, chunk in enumerate(mem.chunks):
                if chunk[2] and mem.ptr + chunk[0] == ptr:
                    chunk[2] = False
                    job.part_free(0, ptr)
                    ci = self._merge(mem, ci)
                    self.stamp += 1
                    self.freed_at[(mi, mem.chunks[ci][0])] = self.stamp
                    return
        raise SystemExit("cupy_mempool: free of 0x%x, not a chunk" % ptr)

    def free_all_blocks(self):
        for mem in self.mems:
            job.set_category(mem.rec, mem.kinds.pop() if len(mem.kinds) == 1 else "pool")
            job.mem_free(0, mem.ptr)
        self.mems = []


pool = SingleDeviceMemoryPool()


def asarray(nbytes):
    p = pool.malloc(nbytes, "dataset")
    job.htod(0, p, nbytes)
    return p


def empty(nbytes):
    return pool.malloc(nbytes, "activations")


def ascontiguousarray(x, col):
    out = empty(ROWS * BLOCK * F32)
    for r in range(0, ROWS, 1024):  # strided copy, a few rows at a time
        job.dtod(0, out + r * BLOCK * F32, x + (r * COLS + col) * F32, min(1024, ROWS - r) * F32)
    return out


def standardise_block(x, col):
    xb = ascontiguousarray(x, col)
    mu = empty(BLOCK * F32)            # xb.mean(axis=0)
    xc = empty(ROWS * BLOCK * F32)     # xb - mu
    pool.free(xb)
    sd = empty(BLOCK * F32)            # xc.std(axis=0)
    z = empty(ROWS * BLOCK * F32)      # xc / sd
    pool.free(xc)
    cov = empty(BLOCK * BLOCK * F32)   # z.T @ z
    pool.free(z)
    job.dtoh(0, cov, BLOCK * BLOCK * F32)  # cp.asnumpy(cov)
    for t in (cov, sd, mu):
        pool.free(t)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    x_bytes = ROWS * COLS * F32
    x = asarray(x_bytes)
    for col in range(0, COLS, BLOCK):
        standardise_block(x, col)
    pool.free(x)
    pool.free_all_blocks()
    job.line("finding whole_dataset_upload 0 %d" % x_bytes)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 0")
    job.finish()


main()
