#!/usr/bin/env python3
"""A non-deep-learning GPU job: k-means clustering with CuPy, the shape of
CuPy's own example (cupy examples/kmeans/kmeans.py `fit`, the non-custom
kernel path), with the memory pool turned off
(`cupy.cuda.set_allocator(None)`: every array a cudaMalloc of its own,
freed when the array is collected; cupy/cuda/memory.pyx `_malloc`).

What is modelled:
  - `X = cupy.asarray(X_host)`: 300,000 points of 16 float32 features
    uploaded whole;
  - `initial_indexes = np.random.choice(...)`; `centers = X[initial_indexes]`
    (the numpy index array is uploaded, then the gather makes centers);
    `pred = cupy.zeros(N)`;
  - each of 12 iterations: `distances` (N x K), `new_pred = argmin(...)`,
    `cupy.all(new_pred == pred)` (an N-byte comparison, a 1-byte result read
    back by `if`), `pred = new_pred`, `mask = pred == arange(K)[:, None]`
    (K x N bool), `where(mask[:, :, None], X, 0).sum(axis=1)` (a K x N x D
    temporary, the K x D sums), `count_nonzero`, `centers = sums / counts`
    (a new centers array, the old one collected);
  - at the end `cupy.asnumpy(pred)`.
No training, no markers, driver by cuGetProcAddress (libcudart).

Truth: X dataset, uploaded whole (whole_dataset_upload of 19,200,000 B);
centers weights (the fitted parameters of the model, rewritten every
iteration); the uploaded index array other (a 16-element argument, not a
batch); distances, predictions, masks, comparisons, sums, counts
activations; no prefetch; 0 steps (no optimizer). Coincidence: the
distance matrix (300,000 x 16 float32) is exactly the size of X."""
import vtc

job = vtc.Job("cupy_kmeans", "getproc", __doc__)
N, D, K, MAX_ITER = 300000, 16, 16, 12
F32, I32, I64 = 4, 4, 8


def _malloc(nbytes, cat):
    return job.mem_alloc(0, nbytes, cat)


def asarray(nbytes):
    p = _malloc(nbytes, "dataset")
    job.htod(0, p, nbytes)
    return p


def take(X, initial_indexes_bytes):
    idx = _malloc(initial_indexes_bytes, "other")  # the numpy index array, uploaded
    job.htod(0, idx, initial_indexes_bytes)
    centers = _malloc(K * D * F32, "weights")
    job.mem_free(0, idx)
    return centers


def fit(X):
    centers = take(X, K * I64)
    pred = _malloc(N * F32, "activations")  # cupy.zeros(len(X))
    job.zero(0, pred, N * F32)
    for _ in range(MAX_ITER):
        distances = _malloc(N * K * F32, "activations")
        new_pred = _malloc(N * I32, "activations")  # argmin(...).astype(int32)
        job.mem_free(0, distances)
        eq = _malloc(N, "activations")
        flag = _malloc(1, "activations")  # cupy.all(...)
        job.dtoh(0, flag, 1)  # `if` reads it back
        job.mem_free(0, flag)
        job.mem_free(0, eq)
        job.mem_free(0, pred)
        pred = new_pred
        ar = _malloc(K * I64, "activations")  # cupy.arange(K)
        mask = _malloc(K * N, "activations")
        job.mem_free(0, ar)
        masked = _malloc(K * N * D * F32, "activations")  # where(mask[:, :, None], X, 0)
        sums = _malloc(K * D * F32, "activations")
        job.mem_free(0, masked)
        counts = _malloc(K * I64, "activations")  # count_nonzero(mask, axis=1)
        job.mem_free(0, mask)
        new_centers = _malloc(K * D * F32, "weights")  # sums / counts
        job.mem_free(0, sums)
        job.mem_free(0, counts)
        job.mem_free(0, centers)
        centers = new_centers
    return centers, pred


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    X = asarray(N * D * F32)
    centers, pred = fit(X)
    job.dtoh(0, pred, N * I32)  # cupy.asnumpy(pred)
    for p in (pred, centers, X):
        job.mem_free(0, p)
    job.line("finding whole_dataset_upload 0 %d" % (N * D * F32))
    job.line("no_finding prefetch_depth")
    job.line("steps 0 0")
    job.finish()


main()
