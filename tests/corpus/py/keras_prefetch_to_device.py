#!/usr/bin/env python3
"""tf.keras `model.fit(ds, epochs=2)` where the input pipeline ends in
`ds.apply(tf.data.experimental.prefetch_to_device("/gpu:0", buffer_size=2))`
(CIFAR-shaped images decoded and augmented on the host by `map`, batched
by 128), a small convnet, Adam, `metrics=["accuracy"]`, under
TF_GPU_ALLOCATOR=cuda_malloc_async (TensorFlow's GpuCudaMallocAsyncAllocator:
one cuMemAllocAsync per tensor, cuMemFreeAsync when it dies).

What is modelled (sources read: tensorflow/python/data/experimental/ops/
prefetching_ops.py `prefetch_to_device` (= `copy_to_device(device)`
followed by `prefetch(buffer_size)`: the prefetch buffer lives on the GPU,
so up to `buffer_size` elements are copied there ahead of the consumer,
refilled by a background thread as soon as one is taken) and
`copy_to_device` / `_CopyToDeviceDataset` (each element's tensors copied
host-to-device); keras/engine/data_adapter.py `DataHandler`
(`DatasetAdapter`, `enumerate_epochs`: a new iterator per epoch, the old
one and its buffer released at the epoch's end); keras/engine/training.py
`make_train_function` / `train_step` (`next(iterator)` inside the
tf.function, `tape.gradient`, `optimizer.minimize`), `compiled_metrics`
(`Mean` / `MeanMetricWrapper` state `total` / `count`, 4-byte variables on
the device, read at each epoch end by `sync_to_numpy_or_python_type`);
keras/optimizers/adam.py `build` (`iterations`, then `m` / `v` per
trainable variable through `add_variable_from_reference` at the first
`apply_gradients`); keras/layers `Conv2D` / `Dense` `build` ->
`add_weight` (glorot_uniform and zeros initializers run on the device:
nothing uploaded)):
  - model built (kernels and biases made on the device), compiled (loss
    and accuracy metric variables);
  - per epoch a new iterator: 2 batches copied to the device at once,
    then each step takes one and the buffer is refilled with the next, so
    the step's batch and the two behind it are on the device while it
    runs; the step's batch is released when the step returns; forward,
    gradients (one per variable, dropped after apply_gradients), Adam
    update temporaries;
  - 2 epochs of 12 steps (1,536 images per epoch).
No markers (Keras calls none), driver by dlsym (TensorFlow dlsyms it).

Truth: kernels and biases weights; Adam's `iterations`, m and v
optimizer; the metric and loss-tracker variables other; the copied
images and labels prefetch (depth 3: the batch being trained on and the
two in the device buffer); gradients gradients; forward, backward and
update temporaries activations. No dataset (the arrays stay on the host:
each batch is produced by the pipeline); 24 steps. Coincidences: one
image batch (128 x 32 x 32 x 3 float32 = 1,572,864 B) is exactly the
4096 x 96 dense kernel; a label batch (128 int64 = 1,024 B) is the 256
conv3 bias; m and v are each their variable's size, as is its gradient."""
import vtc

job = vtc.Job("keras_prefetch_to_device", "dlsym", __doc__)
B, EPOCHS, STEPS, BUFFER = 128, 2, 12, 2
IMG, LBL = B * 32 * 32 * 3 * 4, B * 8
VARS = [3 * 3 * 3 * 64 * 4, 64 * 4, 3 * 3 * 64 * 128 * 4, 128 * 4, 3 * 3 * 128 * 256 * 4, 256 * 4,
        4096 * 96 * 4, 96 * 4, 96 * 10 * 4, 10 * 4]


def alloc(n, cat):
    return job.mem_alloc_async(0, n, cat)


def free(*ptrs):
    for p in ptrs:
        job.mem_free_async(0, p)


class DeviceIterator:
    """copy_to_device + prefetch(2): a buffer of elements on the GPU."""

    def __init__(self, nbatches):
        self.left = nbatches
        self.buf = []
        self._fill()

    def _fill(self):
        while len(self.buf) < BUFFER and self.left > 0:
            x = alloc(IMG, "prefetch")
            job.htod(0, x, IMG)
            y = alloc(LBL, "prefetch")
            job.htod(0, y, LBL)
            self.buf.append((x, y))
            self.left -= 1

    def next(self):
        elem = self.buf.pop(0)
        self._fill()  # the background thread refills at once
        return elem

    def close(self):
        for x, y in self.buf:
            free(x, y)
        self.buf = []


def train_step(variables, opt):
    acts = [alloc(B * 32 * 32 * 64 * 4, "activations"), alloc(B * 16 * 16 * 64 * 4, "activations"),
            alloc(B * 16 * 16 * 128 * 4, "activations"), alloc(B * 8 * 8 * 128 * 4, "activations"),
            alloc(B * 8 * 8 * 256 * 4, "activations"), alloc(B * 4 * 4 * 256 * 4, "activations"),
            alloc(B * 96 * 4, "activations"), alloc(B * 10 * 4, "activations")]
    loss = alloc(4, "activations")
    grads = []
    for n in reversed(VARS):  # tape.gradient, last layer first
        d = alloc(B * 16 * 16 * 64 * 4, "activations")
        grads.append(alloc(n, "gradients"))
        free(d)
    free(*acts)
    if opt["m"] is None:  # Adam.build at the first apply_gradients
        opt["m"] = [alloc(n, "optimizer") for n in VARS]
        opt["v"] = [alloc(n, "optimizer") for n in VARS]
        for p, n in zip(opt["m"] + opt["v"], VARS * 2):
            job.zero(0, p, n)
    for n in VARS:  # m_hat / v_hat temporaries
        t = alloc(n, "activations")
        free(t)
    free(*grads)
    acc = alloc(B * 4, "activations")  # sparse_categorical_accuracy matches
    free(acc, loss)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    variables = [alloc(n, "weights") for n in VARS]  # add_weight: initializers on the device
    metrics = [alloc(4, "other") for _ in range(4)]  # loss Mean total/count, accuracy total/count
    for p in metrics:
        job.zero(0, p, 4)
    opt = {"iterations": alloc(8, "optimizer"), "m": None, "v": None}
    job.zero(0, opt["iterations"], 8)
    step = 0
    for _epoch in range(EPOCHS):
        it = DeviceIterator(STEPS)
        for _ in range(STEPS):
            job.step(step)
            x, y = it.next()
            train_step(variables, opt)
            free(x, y)  # the step's input released when the function returns
            step += 1
        it.close()
        for p in metrics:
            job.dtoh(0, p, 4)  # sync_to_numpy_or_python_type(logs)
    free(*opt["m"], *opt["v"], opt["iterations"], *metrics, *variables)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 3 %d" % (IMG + LBL))
    job.line("steps 0 %d" % step)
    job.finish()


main()
