#!/usr/bin/env python3
"""Keras 2 (tf.keras) Model.fit(x, y, validation_data=(x_val, y_val),
epochs=3) on numpy arrays, TF_GPU_ALLOCATOR=cuda_malloc (TensorFlow's
GPUcudaMallocAllocator: one cuMemAlloc per tensor, cuMemFree when it dies).
The model is built and compiled first (Layer.build -> add_weight: the
initializers run on the device, no upload). fit: DataHandler ->
TensorLikeDataAdapter -> _process_tensorlike -> convert_to_tensor puts the
WHOLE of x and y on the GPU; batches are sliced on the device. The
validation arrays are converted later: Model.fit builds
self._eval_data_handler at the end of the first epoch (the first time
_should_eval is true), so x_val and y_val are uploaded whole AFTER 5
training steps; each epoch ends with an evaluation pass over them (forward
only: no grads, no optimizer step, validation batches of 2x the training
batch). Adam's slots (m, v) at the first apply_gradients. At the end of
fit the data handlers are deleted (x, y, x_val, y_val freed). No markers
(Keras calls none), driver by dlsym.

Truth: x 36 MiB, y 144 KiB, x_val 9 MiB, y_val 36 KiB: dataset, four true
whole_dataset_upload findings; the first kernel is 9 MiB, the size of
x_val (weights, made on the device); grads gradients; slots optimizer;
batches sliced on the device and everything of the forward activations;
no prefetch; 15 optimizer steps (the evaluation passes are none)."""
import vtc

job = vtc.Job("keras_fit_validation", "dlsym", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
X, Y, X_VAL, Y_VAL = 36 * MIB, 144 * KIB, 9 * MIB, 36 * KIB
KERNELS = (9 * MIB, 3 * MIB, 768 * KIB)
BIAS = 6 * KIB
BATCH_ROWS_BYTES, EPOCHS, STEPS_PER_EPOCH, VAL_STEPS = 1152 * KIB, 3, 5, 2


def convert_to_eager_tensor(nbytes):
    p = job.mem_alloc(0, nbytes, "dataset")
    job.htod(0, p, nbytes)
    return p


def convert_to_tensor(nbytes):
    return convert_to_eager_tensor(nbytes)


def _process_tensorlike(arrays):
    return [convert_to_tensor(n) for n in arrays]


class TensorLikeDataAdapter:
    def __init__(self, x, y):
        self.x, self.y = _process_tensorlike((x, y))
        self.sizes = (x, y)

    def slice_batch(self, i, rows_bytes):
        xb = job.mem_alloc(0, rows_bytes, "activations")  # tf.gather on the device
        job.dtod(0, xb, self.x + (i * rows_bytes) % (self.sizes[0] - rows_bytes), rows_bytes)
        yb = job.mem_alloc(0, 4 * KIB, "activations")
        return xb, yb

    def delete(self):
        job.mem_free(0, self.x)
        job.mem_free(0, self.y)


def get_data_handler(x, y):
    return TensorLikeDataAdapter(x, y)


class Dense:
    def __init__(self, kernel_bytes):
        self.kernel_bytes = kernel_bytes

    def add_weight(self, nbytes):
        p = job.mem_alloc(0, nbytes, "weights")
        job.zero(0, p, nbytes)  # glorot_uniform / zeros, run on the device
        return p

    def build(self):
        self.kernel = self.add_weight(self.kernel_bytes)
        self.bias = self.add_weight(BIAS)


class Adam:
    def __init__(self):
        self.slots = None

    def add_slot(self, nbytes):
        p = job.mem_alloc(0, nbytes, "optimizer")
        job.zero(0, p, nbytes)
        return p

    def apply_gradients(self, layers):
        if self.slots is None:
            self.slots = [self.add_slot(n) for layer in layers
                          for n in (layer.kernel_bytes, BIAS) for _ in ("m", "v")]


def forward(layers, rows_bytes):
    return [job.mem_alloc(0, rows_bytes // 2, "activations") for _ in layers]


def train_step(layers, opt, data, i):
    xb, yb = data.slice_batch(i, BATCH_ROWS_BYTES)
    acts = forward(layers, BATCH_ROWS_BYTES)
    grads = []
    for layer, a in zip(reversed(layers), reversed(acts)):
        grads += [job.mem_alloc(0, layer.kernel_bytes, "gradients"),
                  job.mem_alloc(0, BIAS, "gradients")]
        job.mem_free(0, a)
    opt.apply_gradients(layers)
    for t in grads + [yb, xb]:
        job.mem_free(0, t)


def test_step(layers, data, i):
    xb, yb = data.slice_batch(i, 2 * BATCH_ROWS_BYTES)
    for t in forward(layers, 2 * BATCH_ROWS_BYTES) + [yb, xb]:
        job.mem_free(0, t)


class Model:
    def __init__(self):
        self.layers = [Dense(n) for n in KERNELS]
        for layer in self.layers:
            layer.build()
        self.optimizer = Adam()
        self._eval_data_handler = None

    def evaluate(self):
        for i in range(VAL_STEPS):
            test_step(self.layers, self._eval_data_handler, i)

    def fit(self, x, y, validation_data):
        data_handler = get_data_handler(x, y)
        steps = 0
        for _ in range(EPOCHS):
            for _ in range(STEPS_PER_EPOCH):
                train_step(self.layers, self.optimizer, data_handler, steps)
                steps += 1
            if self._eval_data_handler is None:
                self._eval_data_handler = get_data_handler(*validation_data)
            self.evaluate()
        self._eval_data_handler.delete()
        data_handler.delete()
        return steps

    def free(self):
        for layer in self.layers:
            job.mem_free(0, layer.kernel)
            job.mem_free(0, layer.bias)
        for p in self.optimizer.slots:
            job.mem_free(0, p)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    model = Model()
    steps = model.fit(X, Y, validation_data=(X_VAL, Y_VAL))
    model.free()
    for n in (X, Y, X_VAL, Y_VAL):
        job.line("finding whole_dataset_upload 0 %d" % n)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % steps)
    job.finish()


main()
