#!/usr/bin/env python3
"""A k-nearest-neighbour graph with RAPIDS cuML on numpy input, under an
RMM pool: `rmm.reinitialize(pool_allocator=True,
initial_pool_size=256 MiB)`, `nn = cuml.NearestNeighbors(n_neighbors=16)`,
`nn.fit(X)`, `dist, idx = nn.kneighbors(X)` (the graph of the training
set itself, as UMAP / HDBSCAN pipelines build it), both results returned
as numpy. X is 500,000 x 64 float32 (128,000,000 B). No training.

What is modelled (sources read: rmm/mr/device/pool_memory_resource.hpp
(the initial pool taken from the upstream cuda_memory_resource in ONE
cudaMalloc; a coalescing best-fit free list, blocks aligned to 256 B;
`try_to_expand` -> `size_to_grow`: with no maximum the pool grows by
max(request, current pool size) in a new upstream allocation; blocks are
returned to the free list and merged with neighbours in the same upstream
allocation; nothing is given back before the pool is destroyed);
cuml/internals/input_utils.py `input_to_cuml_array` (a numpy array is
copied whole into a new CumlArray: `cp.asarray` / `rmm.DeviceBuffer`);
cuml/neighbors/nearest_neighbors.pyx `fit` (X kept as `self._fit_X`) and
`kneighbors` (the query array converted again even when it is the same
numpy object; `I` int64 and `D` float32 outputs, `to_output("numpy")`);
raft/neighbors/detail/knn_brute_force.cuh `tiled_brute_force_knn`
(row norms of the index and the queries, a distance tile of tile_rows x
tile_cols reused over the column tiles, per-row-tile top-k candidates
merged into the outputs; tiles of 4,096 queries x 16,384 index rows
here)). No markers, driver by cuGetProcAddress (libcudart, RMM's
upstream resource).

Truth (per upstream allocation, settled at the end: one kind, or pool
with part lines): X converted by fit, and X converted AGAIN by
kneighbors, dataset: TWO whole_dataset_upload findings of 128,000,000 B
each; norms, distance tiles and candidate lists activations; the
kneighbors outputs (D 32,000,000 B, I 64,000,000 B) activations, freed
once copied back. No prefetch, 0 steps. Coincidences: the two
conversions of X are one size; a distance tile (4,096 x 16,384 float32,
256 MiB) is the pool's initial size; X's and the queries' row norms are
one size (2,000,000 B)."""
import vtc

job = vtc.Job("cuml_knn_rmm_pool", "getproc", __doc__)
MIB = vtc.MIB
N, D, K = 500000, 64, 16
TILE_ROWS, TILE_COLS = 4096, 16384
ALIGN = 256


class PoolMemoryResource:
    def __init__(self, dev, initial):
        self.dev = dev
        self.uploads = []                      # [ptr, size, kinds, rec]
        self.free_list = []                    # [ptr, size, upstream]
        self.live = {}                         # ptr -> (size, upstream)
        self._expand(initial)

    def _expand(self, size):
        ptr = job.mem_alloc(self.dev, size, "pool")
        up = [ptr, size, set(), job.records[-1]]
        self.uploads.append(up)
        self.free_list.append([ptr, size, up])

    def pool_size(self):
        return sum(u[1] for u in self.uploads)

    def allocate(self, nbytes, kind):
        size = -(-nbytes // ALIGN) * ALIGN
        fits = [b for b in self.free_list if b[1] >= size]
        if not fits:
            self._expand(max(size, self.pool_size()))             # size_to_grow
            fits = [self.free_list[-1]]
        blk = min(fits, key=lambda b: (b[1], b[0]))
        ptr, up = blk[0], blk[2]
        if blk[1] > size:
            blk[0] += size
            blk[1] -= size
        else:
            self.free_list.remove(blk)
        self.live[ptr] = (size, up)
        up[2].add(kind)
        job.part(self.dev, ptr, size, kind)
        return ptr

    def deallocate(self, *ptrs):
        for ptr in ptrs:
            size, up = self.live.pop(ptr)
            job.part_free(self.dev, ptr)
            blk = [ptr, size, up]
            for other in [b for b in self.free_list if b[2] is up]:
                if other[0] + other[1] == blk[0]:           # merge with the block before
                    blk = [other[0], other[1] + blk[1], up]
                    self.free_list.remove(other)
                elif blk[0] + blk[1] == other[0]:           # ... and the one after
                    blk[1] += other[1]
                    self.free_list.remove(other)
            self.free_list.append(blk)

    def release(self):
        for up in self.uploads:
            job.set_category(up[3], next(iter(up[2])) if len(up[2]) == 1 else "pool")
        job.mem_free(self.dev, *[u[0] for u in self.uploads])


mr = None


def input_to_cuml_array(nbytes):
    p = mr.allocate(nbytes, "dataset")
    job.htod(0, p, nbytes)
    return p


def tiled_brute_force_knn(index, queries):
    index_norms = mr.allocate(N * 4, "activations")
    query_norms = mr.allocate(N * 4, "activations")
    dist = mr.allocate(N * K * 4, "activations")
    idx = mr.allocate(N * K * 8, "activations")
    for _q in range(0, N, TILE_ROWS):          # a row tile: its distance tile reused
        tile = mr.allocate(TILE_ROWS * TILE_COLS * 4, "activations")
        cand_d = mr.allocate(TILE_ROWS * K * 4 * (N // TILE_COLS + 1), "activations")
        cand_i = mr.allocate(TILE_ROWS * K * 8 * (N // TILE_COLS + 1), "activations")
        mr.deallocate(tile, cand_d, cand_i)
    mr.deallocate(index_norms, query_norms)
    return dist, idx


def main():
    global mr
    job.start(markers_default=False)
    job.open_devices(1)
    mr = PoolMemoryResource(0, 256 * MIB)      # rmm.reinitialize(pool_allocator=True, ...)
    fit_x = input_to_cuml_array(N * D * 4)     # nn.fit(X): self._fit_X
    query = input_to_cuml_array(N * D * 4)     # nn.kneighbors(X): converted again
    dist, idx = tiled_brute_force_knn(fit_x, query)
    mr.deallocate(query)
    job.dtoh(0, dist, N * K * 4)               # to_output("numpy")
    job.dtoh(0, idx, N * K * 8)
    mr.deallocate(dist, idx)
    mr.deallocate(fit_x)                       # del nn
    mr.release()
    job.line("finding whole_dataset_upload 0 %d" % (N * D * 4))
    job.line("finding whole_dataset_upload 0 %d" % (N * D * 4))
    job.line("no_finding prefetch_depth")
    job.line("steps 0 0")
    job.finish()


main()
