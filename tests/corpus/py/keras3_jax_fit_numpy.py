#!/usr/bin/env python3
"""Keras 3 on the JAX backend (KERAS_BACKEND=jax): `model.fit(x, y,
batch_size=1024, epochs=2, validation_data=(x_val, y_val))` on numpy
arrays (6,144 x 256 float32 tabular features, int32 labels; 2,048
validation rows), an MLP 256-1024-1024-10 with Adam, under
XLA_PYTHON_CLIENT_ALLOCATOR=platform (one cuMemAlloc / cuMemFree per
buffer, no arena).

What is modelled (sources read: keras/src/trainers/data_adapters/
array_data_adapter.py (`ArrayDataAdapter`: numpy inputs stay numpy,
`get_numpy_iterator` slices each batch on the HOST (shuffle="batch"
indices), `get_jax_iterator` yields those host slices) -- unlike Keras 2,
whose TensorLikeDataAdapter converts the whole array on the device;
keras/src/backend/jax/trainer.py (`JAXEpochIterator._get_iterator` ->
`_prefetch_numpy_iterator`: `enqueue(n=2)` of `jax.device_put` batches,
then after each yield `enqueue(1)`; `fit` -> `_symbolic_build` (model
variables built by their initializers in jitted calls, optimizer
`build`: `iterations`, `learning_rate`, m and v per variable, metric
`total` / `count`), `make_train_function` (`jax.jit(train_step,
donate_argnums=0)`: the state tuple donated and aliased to the outputs,
one temp allocation per execution for activations and gradients, the
logs new scalars), `evaluate` per epoch through its own epoch iterator,
same prefetch); the progress bar reads the logs back after each step).
No markers (Keras calls none), driver by dlsym (XLA's stream executor).

Truth: kernels and biases weights; `iterations`, `learning_rate`, m and v
optimizer; metric variables other; the per-step temp buffer pool
(activations and gradients: part lines), the evaluation temp
activations, logs activations; every device_put batch prefetch. Depth 2:
the iterator holds two device batches when it yields the first, and
`enqueue(1)` runs after the step's batch is dropped, so two are alive at
once at most. No dataset and no whole_dataset_upload: nothing is ever
uploaded whole. 2 epochs x 6 steps = 12 steps. Coincidences: a 1,024-row
x batch (1 MiB) is the first kernel (256 x 1,024 float32) and its m and
v; the 1,024 x 1,024 kernel (4 MiB) is one validation temp."""
import vtc

job = vtc.Job("keras3_jax_fit_numpy", "dlsym", __doc__)
N, N_VAL, FEAT, BATCH, EPOCHS = 6144, 2048, 256, 1024, 2
LAYERS = ((256, 1024), (1024, 1024), (1024, 10))
VAR_SIZES = [n for fi, fo in LAYERS for n in (fi * fo * 4, fo * 4)]


def alloc(n, cat, parts=None):
    p = job.mem_alloc(0, n, cat)
    if parts:
        off = 0
        for size, kind in parts:
            job.part(0, p + off, size, kind)
            off += size
    return p


def free(*ptrs):
    job.mem_free(0, *ptrs)


def device_put(nbytes):
    p = alloc(nbytes, "prefetch")
    job.htod(0, p, nbytes)
    return p


def get_numpy_iterator(rows):
    """host slices of (x, y): nothing reaches the device here."""
    for start in range(0, rows, BATCH):
        n = min(BATCH, rows - start)
        yield n * FEAT * 4, n * 4


def _prefetch_numpy_iterator(numpy_iterator):
    queue = []

    def enqueue(n):
        for _ in range(n):
            item = next(numpy_iterator, None)
            if item is None:
                return
            queue.append(tuple(device_put(b) for b in item))

    enqueue(2)
    while queue:
        yield queue.pop(0)
        enqueue(1)


def symbolic_build():
    weights = []
    for n in VAR_SIZES:                          # initializers under jit: outputs
        weights.append(alloc(n, "weights"))
    opt = [alloc(8, "optimizer"), alloc(4, "optimizer")]         # iterations, learning_rate
    job.htod(0, opt[1], 4)                       # the learning rate's initial value
    for n in VAR_SIZES:
        for _ in ("m", "v"):
            p = alloc(n, "optimizer")
            job.zero(0, p, n)
            opt.append(p)
    metrics = [alloc(4, "other") for _ in range(4)]               # loss / accuracy total, count
    return weights, opt, metrics


def train_step(rows):
    acts = rows * (1024 + 1024 + 1024 + 1024 + 10) * 4
    temp = alloc(acts + sum(VAR_SIZES), "pool", [(acts, "activations"), (sum(VAR_SIZES), "gradients")])
    logs = [alloc(4, "activations"), alloc(4, "activations")]    # loss, accuracy
    free(temp)
    return logs


def evaluate():
    for xb, yb in _prefetch_numpy_iterator(get_numpy_iterator(N_VAL)):
        temp = alloc(BATCH * 1024 * 4, "activations")
        logs = [alloc(4, "activations"), alloc(4, "activations")]
        free(temp, xb, yb)
        job.dtoh(0, logs[0], 4)
        free(*logs)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    weights, opt, metrics = symbolic_build()
    step = 0
    for _epoch in range(EPOCHS):
        for m in metrics:
            job.zero(0, m, 4)                    # reset_state
        for xb, yb in _prefetch_numpy_iterator(get_numpy_iterator(N)):
            job.step(step)
            logs = train_step(BATCH)
            free(xb, yb)                         # the step's batch dropped
            for p in logs:
                job.dtoh(0, p, 4)                # progbar: logs to Python floats
            free(*logs)
            step += 1
        evaluate()
    free(*metrics, *opt, *weights)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 2 %d" % (BATCH * FEAT * 4 + BATCH * 4))
    job.line("steps 0 %d" % step)
    job.finish()


main()
