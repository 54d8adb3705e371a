#!/usr/bin/env python3
"""tf.keras (Keras 2, TensorFlow >= 2.6) `model.fit(x, y,
sample_weight=w, validation_split=0.2, batch_size=256, epochs=3)` on numpy
arrays (12,000 flattened 28 x 28 float32 images, int32 labels, float32
per-sample weights), an MLP 784-256-256-10 with Adam, under
TF_GPU_ALLOCATOR=cuda_malloc_async (one stream-ordered allocation per
tensor, cuMemAllocAsync / cuMemFreeAsync).

What is modelled (sources read: keras/engine/training.py `Model.fit`
(`data_adapter.train_validation_split((x, y, sample_weight),
validation_split)` BEFORE any conversion; the training DataHandler made at
the start of fit; `_eval_data_handler` made at the first evaluation, at
the end of epoch 1, and kept for the rest of fit; `validation_freq=1`);
keras/engine/data_adapter.py (`train_validation_split`: numpy arrays are
split on the host, `split_at = floor(n * (1 - validation_split))`, the
last 20 % being validation; `TensorLikeDataAdapter.__init__` ->
`_process_tensorlike` -> `_convert_numpy_and_scipy` ->
`convert_to_tensor_v2_with_dispatch`: each of x, y and sample_weight
becomes one eager tensor, whose `_EagerConst` op is placed on the GPU in
TF >= 2.6: the whole array copied once; the `grab_batch` map gathers each
batch from them with `tf.gather`; the last batch of an epoch is partial);
keras/engine/base_layer.py `add_weight` (kernels and biases made by their
initializers on the device); keras/optimizers/optimizer_v2/optimizer_v2.py
`apply_gradients` -> `_create_all_weights` (`iterations` int64, then
`add_slot` 'm' and 'v' per variable at the first step); keras/metrics
`Mean` / `SparseCategoricalAccuracy` (`total` and `count` variables,
made at compile, reset each epoch)). No markers (Keras calls none), driver
by dlsym (TensorFlow's stream executor).

Truth: the six arrays converted whole (x, y and sample_weight of the
training split at the start of fit, the validation split's three at the
end of epoch 1) dataset, one whole_dataset_upload finding each; kernels
and biases weights; `iterations`, m and v optimizer; metric variables
other; gathered batches, forward tensors and the batch indices
activations (README convention: a batch sliced on the device is
activations); gradients gradients. No prefetch (nothing is uploaded per
step). 3 epochs x 38 steps = 114 steps. Coincidences: a gathered training
batch of 256 rows (802,816 B) is exactly the first kernel (784 x 256
float32); y and sample_weight are one size (38,400 B training, 9,600 B
validation); the hidden activations of a full batch (262,144 B) are the
second kernel."""
import vtc

job = vtc.Job("keras_sample_weight_split", "dlsym", __doc__)
N, FEAT, SPLIT = 12000, 784, 0.2
N_TRAIN = int(N * (1.0 - SPLIT))          # 9,600
N_VAL = N - N_TRAIN                       # 2,400
BATCH, EPOCHS = 256, 3
LAYERS = ((784, 256), (256, 256), (256, 10))


def alloc(n, cat):
    return job.mem_alloc_async(0, n, cat)


def free(*ptrs):
    for p in ptrs:
        job.mem_free_async(0, p)


def _eager_const(nbytes):
    p = alloc(nbytes, "dataset")
    job.htod(0, p, nbytes)
    return p


def convert_to_tensor_v2_with_dispatch(nbytes):
    return _eager_const(nbytes)


def _convert_numpy_and_scipy(nbytes):
    return convert_to_tensor_v2_with_dispatch(nbytes)


def _process_tensorlike(arrays):
    return [_convert_numpy_and_scipy(n) for n in arrays]


def train_validation_split(rows):
    """numpy slices on the host: nothing reaches the device here."""
    split_at = int(rows * (1.0 - SPLIT))
    return split_at, rows - split_at


class TensorLikeDataAdapter:
    def __init__(self, rows):
        self.rows = rows
        self.x, self.y, self.w = _process_tensorlike((rows * FEAT * 4, rows * 4, rows * 4))

    def batches(self):
        start = 0
        while start < self.rows:
            n = min(BATCH, self.rows - start)
            yield n
            start += n

    def grab_batch(self, n):
        idx = alloc(n * 8, "activations")       # the shuffled indices of the batch
        xb = alloc(n * FEAT * 4, "activations")  # tf.gather(x, idx)
        yb = alloc(n * 4, "activations")
        wb = alloc(n * 4, "activations")
        job.dtod(0, xb, self.x, n * FEAT * 4)
        free(idx)
        return xb, yb, wb


class Dense:
    def __init__(self, fan_in, units):
        self.shapes = (fan_in * units * 4, units * 4)

    def add_weight(self, nbytes):
        p = alloc(nbytes, "weights")
        job.zero(0, p, nbytes)                  # glorot_uniform / zeros on the device
        return p

    def build(self):
        self.vars = [self.add_weight(n) for n in self.shapes]


class Adam:
    def __init__(self):
        self.iterations = None
        self.slots = []

    def add_slot(self, nbytes):
        p = alloc(nbytes, "optimizer")
        job.zero(0, p, nbytes)
        return p

    def _create_all_weights(self, layers):
        self.iterations = self.add_slot(8)
        for layer in layers:
            for n in layer.shapes:
                self.slots += [self.add_slot(n), self.add_slot(n)]  # m, v

    def apply_gradients(self, layers, grads):
        if self.iterations is None:
            self._create_all_weights(layers)
        free(*grads)


def forward(layers, n, keep):
    acts = []
    for fan_in, units in LAYERS:
        acts.append(alloc(n * units * 4, "activations"))   # matmul + bias
        if units != 10:
            acts.append(alloc(n * units * 4, "activations"))  # relu
    loss = alloc(n * 4, "activations")           # per-sample loss
    wl = alloc(n * 4, "activations")             # * sample_weight
    scalar = alloc(4, "activations")
    if not keep:
        free(*acts, loss, wl, scalar)
        return []
    return acts + [loss, wl, scalar]


def train_step(layers, opt, data, n):
    xb, yb, wb = data.grab_batch(n)
    saved = forward(layers, n, keep=True)
    grads = []
    for layer in reversed(layers):
        for g in reversed(layer.shapes):
            grads.append(alloc(g, "gradients"))
        if saved:
            free(saved.pop(), saved.pop())
    free(*saved)
    opt.apply_gradients(layers, grads)
    free(xb, yb, wb)


def evaluate(layers, data):
    for n in data.batches():
        xb, yb, wb = data.grab_batch(n)
        forward(layers, n, keep=False)
        free(xb, yb, wb)


def fit(layers, opt, metrics):
    n_train, n_val = train_validation_split(N)
    train = TensorLikeDataAdapter(n_train)
    val = None
    steps = 0
    for _epoch in range(EPOCHS):
        for m in metrics:
            job.zero(0, m, 4)                    # reset_state
        for n in train.batches():
            train_step(layers, opt, train, n)
            steps += 1
        if val is None:                          # _eval_data_handler, made once
            val = TensorLikeDataAdapter(n_val)
        evaluate(layers, val)
        job.dtoh(0, metrics[0], 4)               # logs: metric.result()
    free(train.x, train.y, train.w, val.x, val.y, val.w)
    return steps


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    layers = [Dense(*shape) for shape in LAYERS]
    for layer in layers:
        layer.build()
    metrics = [alloc(4, "other") for _ in range(4)]  # loss / accuracy: total, count
    opt = Adam()
    steps = fit(layers, opt, metrics)
    free(*metrics, opt.iterations, *opt.slots)
    for layer in layers:
        free(*layer.vars)
    for rows in (N_TRAIN, N_VAL):
        for nbytes in (rows * FEAT * 4, rows * 4, rows * 4):
            job.line("finding whole_dataset_upload 0 %d" % nbytes)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % steps)
    job.finish()


main()
