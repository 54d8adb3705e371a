#!/usr/bin/env python3
"""Keras 2 (tf.keras, TensorFlow >= 2.6) Model.fit(x, y) on numpy arrays,
TF_GPU_ALLOCATOR=cuda_malloc_async (one stream-ordered allocation per
tensor). The path mirrors keras/engine/data_adapter.py: DataHandler ->
TensorLikeDataAdapter -> _process_tensorlike -> _convert_numpy_and_scipy ->
convert_to_tensor_v2_with_dispatch -> convert_to_tensor ->
convert_to_eager_tensor, whose _EagerConst op lands on the GPU: the WHOLE of
x and of y copied once. Batches are then sliced on the device (gather, no
upload). Weights: Layer.build -> add_weight (initializer on the device).
Adam: OptimizerV2.apply_gradients -> _create_all_weights -> add_slot
('m', 'v') at the first step. No markers (Keras calls none)."""
import vtc

job = vtc.Job("keras_fit_xy", "dlsym", __doc__)
X_BYTES, Y_BYTES = 48 * vtc.MIB, 192 * vtc.KIB
BATCH, ACT = 1 * vtc.MIB, 1536 * vtc.KIB
UNITS = (6 * vtc.MIB, 1536 * vtc.KIB, 96 * vtc.KIB)
EPOCHS, STEPS_PER_EPOCH = 2, 6


def convert_to_eager_tensor(nbytes):
    p = job.mem_alloc_async(0, nbytes, "dataset")
    job.htod(0, p, nbytes)
    return p


def convert_to_tensor(nbytes):
    return convert_to_eager_tensor(nbytes)


def convert_to_tensor_v2_with_dispatch(nbytes):
    return convert_to_tensor(nbytes)


def _convert_numpy_and_scipy(nbytes):
    return convert_to_tensor_v2_with_dispatch(nbytes)


def _process_tensorlike(arrays):
    return [_convert_numpy_and_scipy(n) for n in arrays]


class TensorLikeDataAdapter:
    def __init__(self, x, y):
        self.x, self.y = _process_tensorlike((x, y))


class Dense:
    def __init__(self, nbytes):
        self.nbytes = nbytes

    def add_weight(self, nbytes):
        p = job.mem_alloc_async(0, nbytes, "weights")
        job.zero(0, p, nbytes)
        return p

    def build(self):
        self.kernel = self.add_weight(self.nbytes)
        self.bias = self.add_weight(4 * vtc.KIB)


class Adam:
    def __init__(self):
        self.slots = None

    def add_slot(self, var_bytes):
        p = job.mem_alloc_async(0, var_bytes, "optimizer")
        job.zero(0, p, var_bytes)
        return p

    def _create_all_weights(self, layers):
        self.slots = []
        for layer in layers:
            for n in (layer.nbytes, 4 * vtc.KIB):
                self.slots += [self.add_slot(n), self.add_slot(n)]  # m, v

    def apply_gradients(self, layers, grads):
        if self.slots is None:
            self._create_all_weights(layers)


def train_step(layers, opt, data, s):
    xb = job.mem_alloc_async(0, BATCH, "activations")  # gather of the batch
    job.dtod(0, xb, data.x + (s % 40) * BATCH, BATCH)
    acts = [job.mem_alloc_async(0, ACT, "activations") for _ in layers]
    grads = []
    for layer, a in zip(reversed(layers), reversed(acts)):
        grads.append(job.mem_alloc_async(0, layer.nbytes, "gradients"))
        grads.append(job.mem_alloc_async(0, 4 * vtc.KIB, "gradients"))
        job.mem_free_async(0, a)
    opt.apply_gradients(layers, grads)
    for g in grads:
        job.mem_free_async(0, g)
    job.mem_free_async(0, xb)


def fit(layers, opt, x, y):
    data = TensorLikeDataAdapter(x, y)
    s = 0
    for _ in range(EPOCHS):
        for _ in range(STEPS_PER_EPOCH):
            job.step(s)
            train_step(layers, opt, data, s)
            s += 1
    return s


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    layers = [Dense(n) for n in UNITS]
    for layer in layers:
        layer.build()
    steps = fit(layers, Adam(), X_BYTES, Y_BYTES)
    job.line("finding whole_dataset_upload 0 %d" % X_BYTES)
    job.line("finding whole_dataset_upload 0 %d" % Y_BYTES)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % steps)
    job.finish()


main()
