#!/usr/bin/env python3
"""XGBoost `xgb.train({"tree_method": "hist", "device": "cuda", "max_depth":
6, "max_bin": 256}, dtrain, 20, evals=[(dvalid, "valid")])` on a
HIGGS-shaped table (1,000,000 x 28 float32 rows, a 100,000-row validation
set), both `xgb.DMatrix` built from numpy on the host.

What is modelled (sources read: src/common/hist_util.cu `DeviceSketch`
(`batch.data.SetDevice`, `batch.offset.SetDevice`: the SparsePage's entries
and row offsets copied whole to the device and kept there by the
HostDeviceVector as long as the DMatrix lives; sorted entries in a
`caching_device_vector`); src/data/ellpack_page.cu `EllpackPageImpl` (the
compressed `gidx_buffer`, row_stride 28, 13-bit symbols for 28 x 256 + 1
bins, written on the device from the page's device span), `HistogramCuts`
(cut values, pointers, min values); src/objective/regression_obj.cu
`GetGradient` (`info.labels.SetDevice`: labels copied whole the first
time, gradient pairs written into the learner's `gpair_` (one
HostDeviceVector resized once and reused every round)); src/tree/
updater_gpu_hist.cu `GPUHistMakerDevice` (`RowPartitioner` ridx and
ridx_tmp, `DeviceHistogramStorage` grown (resize: new buffer, copy, old
freed) while the first tree adds nodes, then kept; per-round evaluator
scratch); src/predictor/gpu_predictor.cu `DeviceModel::Init` (the new
tree's nodes copied to the device per prediction, freed after) and the
prediction caches (one float per row, train and valid); src/common/
device_helpers.cuh `XGBCachingDeviceAllocator` = cub
`CachingDeviceAllocator(2, 9, 29)`: temporaries rounded up to a power of
two, cached when freed and handed out again, never given back):
  - each `caching_device_vector` block is one cudaMalloc that stays; a
    block that served several kinds of temporaries is a pool;
  - the learner's first `UpdateOneIter` sketches and builds the ELLPACK
    page of dtrain; the evaluation of dvalid at the end of round 0 copies
    its page to the device the same way (predictor path: `SetDevice`).
No markers, driver by cuGetProcAddress (libcudart).

Truth: the training and validation pages' entries and offsets and both
label vectors are dataset, each copied whole once: SIX whole_dataset_upload
findings (224,000,000 B, 8,000,008 B, 4,000,000 B; 22,400,000 B,
800,008 B, 400,000 B). The ELLPACK gidx buffer and the cuts are dataset
too (the quantised matrix, made on the device: no finding). Gradient pairs
gradients; tree nodes copied for prediction weights; prediction caches,
row partitions, histograms and the cached temporaries activations (a
cached block that held more than one kind is pool). No prefetch (no
per-round upload of data); 20 boosting rounds recorded as 20 steps (the
model is updated once per round). Coincidences: the training label vector
and the row partition (1,000,000 x 4 B) are one size, and so are the
training prediction cache and ridx_tmp; the gradient pairs (8,000,000 B)
are the training offsets less 8 B. The cached blocks go back to the driver
at exit (`FreeAllCached`)."""
import vtc

job = vtc.Job("xgboost_gpu_hist", "getproc", __doc__)
N, NV, F, BINS, ROUNDS, DEPTH = 1000000, 100000, 28, 256, 20, 6
HIST_NODE = F * BINS * 16  # GradientPairInt64 per bin


class CubCache:
    """cub::CachingDeviceAllocator(bin_growth=2, min_bin=9, max_bin=29)."""

    def __init__(self):
        self.free = {}  # rounded size -> [ptr]
        self.blocks = {}  # ptr -> (record, cats, size)

    def alloc(self, nbytes, cat):
        size = 1 << 9
        while size < nbytes:
            size <<= 1
        if size > 1 << 29:  # too big to cache: cudaMalloc and cudaFree each time
            p = job.mem_alloc(0, nbytes, cat)
            self.blocks[p] = (None, {cat}, nbytes)
            return p
        if self.free.get(size):
            p = self.free[size].pop()
            self.blocks[p][1].add(cat)
        else:
            p = job.mem_alloc(0, size, cat)
            self.blocks[p] = (job.records[-1], {cat}, size)
        job.part(0, p, nbytes, cat)
        return p

    def release(self, p):
        rec, _cats, size = self.blocks[p]
        if rec is None:
            job.mem_free(0, p)
            del self.blocks[p]
            return
        job.part_free(0, p)
        self.free.setdefault(size, []).append(p)

    def settle(self):
        for p, (rec, cats, _size) in self.blocks.items():
            if rec is not None:
                job.set_category(rec, cats.pop() if len(cats) == 1 else "pool")
                job.mem_free(0, p)  # FreeAllCached at exit


cache = CubCache()


def set_device(nbytes, cat):
    """HostDeviceVector::SetDevice on host data: allocate and copy whole."""
    return job.upload(0, nbytes, cat)


class Page:
    def __init__(self, rows):
        self.rows = rows
        self.data = self.offset = self.gidx = None

    def sketch_and_compress(self):
        # DeviceSketch: the page's entries (index, value) and offsets to the device
        self.data = set_device(self.rows * F * 8, "dataset")
        self.offset = set_device((self.rows + 1) * 8, "dataset")
        sorted_entries = cache.alloc(self.rows * F * 8, "activations")
        sort_tmp = cache.alloc(self.rows * F * 8 // 4, "activations")  # cub radix sort
        cache.release(sort_tmp)
        cuts = [job.mem_alloc(0, n, "dataset") for n in (F * BINS * 4, (F + 1) * 4, F * 4)]
        cache.release(sorted_entries)
        # EllpackPageImpl: compressed bin indices written on the device
        nbytes = (self.rows * F * 13 + 7) // 8 + 4
        self.gidx = job.mem_alloc(0, nbytes, "dataset")
        job.zero(0, self.gidx, nbytes)
        self.cuts = cuts
        return self

    def free(self):
        job.mem_free(0, self.data, self.offset, self.gidx, *self.cuts)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    train = Page(N).sketch_and_compress()
    labels = set_device(N * 4, "dataset")
    pred_train = job.mem_alloc(0, N * 4, "activations")  # base_score filled
    job.zero(0, pred_train, N * 4)
    gpair = job.mem_alloc(0, N * 8, "gradients")  # gpair_.Resize, kept
    ridx = job.mem_alloc(0, N * 4, "activations")  # RowPartitioner
    ridx_tmp = job.mem_alloc(0, N * 4, "activations")
    hist, hist_nodes = None, 0
    valid = vlabels = pred_valid = None
    for r in range(ROUNDS):
        job.step(r)
        # GetGradient: labels and predictions -> gpair (on the device)
        scratch = cache.alloc(64 * 1024, "activations")  # root sum reduction
        cache.release(scratch)
        for depth in range(DEPTH):
            nodes = 1 << depth
            if hist_nodes < 2 * nodes + 1:  # DeviceHistogramStorage::AllocateHistograms
                want = 2 * nodes + 1
                new = job.mem_alloc(0, want * HIST_NODE, "activations")
                if hist is not None:
                    job.dtod(0, new, hist, hist_nodes * HIST_NODE)
                    job.mem_free(0, hist)
                hist, hist_nodes = new, want
            evalbuf = cache.alloc(nodes * 2 * F * 32, "activations")  # split candidates
            keys = cache.alloc(N * 4 // 8, "activations")  # partition scan scratch
            cache.release(keys)
            cache.release(evalbuf)
            job.dtoh(0, evalbuf, nodes * 2 * 32)  # best splits to the host
        # UpdatePredictionCache from the final positions
        pos = cache.alloc(N * 4, "activations")
        cache.release(pos)
        if valid is None:  # the first evaluation builds dvalid's page
            valid = Page(NV).sketch_and_compress()
            vlabels = set_device(NV * 4, "dataset")
            pred_valid = job.mem_alloc(0, NV * 4, "activations")
            job.zero(0, pred_valid, NV * 4)
        nodes_bytes = (2 ** (DEPTH + 1) - 1) * 20
        tree = job.upload(0, nodes_bytes, "weights")  # DeviceModel: nodes
        seg = job.upload(0, 16, "weights")  # tree segments
        metric = cache.alloc(NV * 4, "activations")  # rmse per row
        cache.release(metric)
        job.dtoh(0, metric, 8)
        job.mem_free(0, tree, seg)
    job.mem_free(0, hist, ridx, ridx_tmp, gpair, pred_train, pred_valid, labels, vlabels)
    train.free()
    valid.free()
    cache.settle()
    for n in (N * F * 8, (N + 1) * 8, N * 4, NV * F * 8, (NV + 1) * 8, NV * 4):
        job.line("finding whole_dataset_upload 0 %d" % n)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % ROUNDS)
    job.finish()


main()
