#!/usr/bin/env python3
"""Offline scoring of a saved tf.keras (Keras 2) CNN on the CIFAR-10 test
set: `tf.config.experimental.set_memory_growth(gpu, True)`, `model =
tf.keras.models.load_model("cnn.h5")`, then `model.evaluate(x_test,
y_test, batch_size=250)` and `model.predict(x_test, batch_size=250)` on
the same numpy arrays. No training.

What is modelled (sources read: tensorflow/core/common_runtime/gpu/
gpu_process_state.cc + gpu_bfc_allocator.cc (memory growth: the BFC
allocator's `allow_growth`, regions grown by `Extend`; the allocator is
vtc.BFC); keras/saving/legacy/hdf5_format.py `load_model_from_hdf5`
(`model_from_config`: a Sequential with an input shape builds its layers,
`Layer.add_weight` runs each initializer on the device) then
`load_weights_from_hdf5_group` -> `backend.batch_set_value` ->
`Variable.assign(numpy)`: the value converted by `convert_to_tensor`
(an `_EagerConst` on the GPU since TF 2.6: one upload into a new chunk),
then tensorflow/core/kernels/resource_variable_ops.cc `AssignVariableOp`
forwards that input buffer to the variable and the initialised chunk is
freed; keras/engine/training.py `evaluate` and `predict` (each call
builds a NEW `DataHandler` unless fit cached one: `_use_cached_eval_dataset`
is only set inside fit), keras/engine/data_adapter.py
`TensorLikeDataAdapter` -> `_process_tensorlike` ->
`_convert_numpy_and_scipy` (each numpy array converted whole; the batch
`tf.gather`ed on the device), the handler dropped when the call returns
(the converted arrays freed); `predict` keeps every batch's output on the
device (`outputs` lists) and `concat`s them at the end before one copy to
the host (`sync_to_numpy_or_python_type`); compile_metrics (`Mean` and
`SparseCategoricalAccuracy`: `total` and `count` variables made at the
first `evaluate`). No markers (Keras calls none), driver by dlsym.

Truth (per BFC region, settled at the end: one kind, or pool with part
lines): kernels and biases weights (their initialised chunks as well);
x_test and y_test converted by evaluate, and x_test converted AGAIN by
predict, dataset: THREE whole_dataset_upload findings (122,880,000 /
80,000 / 122,880,000 B); gathered batches, conv / pool / dense outputs,
per-batch predictions and their concatenation activations; metric
variables other. No prefetch (nothing is uploaded per batch), 0 steps.
Coincidences: the two x_test conversions are one size and the second
may take the first's chunk; the first pooled output and the third conv's
output are one size (8,192,000 B); a pooled 2,048-feature batch
(2,048,000 B) is within 2.5 % of the dense kernel (2,097,152 B)."""
import vtc

job = vtc.Job("keras_eval_predict_growth", "dlsym", __doc__)
N, PIX, BATCH, CLASSES = 10000, 32 * 32 * 3, 250, 10
# (kernel bytes, bias bytes): conv 3x3x3x32, 3x3x32x64, 3x3x64x128, then dense
# layers on the 4 x 4 x 128 = 2,048 flattened features
LAYERS = [(3 * 3 * 3 * 32 * 4, 32 * 4), (3 * 3 * 32 * 64 * 4, 64 * 4),
          (3 * 3 * 64 * 128 * 4, 128 * 4), (2048 * 256 * 4, 256 * 4), (256 * CLASSES * 4, CLASSES * 4)]
bfc = vtc.BFC(job, 0)


def _eager_const(nbytes, cat):
    """convert_to_tensor of a numpy value: a new tensor on the GPU, one copy."""
    p = bfc.alloc(nbytes, cat)
    job.htod(0, p, nbytes)
    return p


def add_weight(nbytes):
    p = bfc.alloc(nbytes, "weights")
    job.zero(0, p, nbytes)                     # glorot_uniform / zeros kernels
    return p


def load_model():
    variables = []
    for kernel, bias in LAYERS:                # model_from_config: layers built
        variables += [add_weight(kernel), add_weight(bias)]
    sizes = [n for layer in LAYERS for n in layer]
    for i, n in enumerate(sizes):              # batch_set_value -> assign
        value = _eager_const(n, "weights")
        bfc.free(variables[i])                 # AssignVariableOp forwards the value
        variables[i] = value
    return variables


class TensorLikeDataAdapter:
    def __init__(self, arrays):
        self.arrays = [_eager_const(n, "dataset") for n in arrays]

    def grab_batch(self, rows):
        xb = bfc.alloc(rows * PIX * 4, "activations")      # tf.gather(x, idx)
        job.dtod(0, xb, self.arrays[0], rows * PIX * 4)
        yb = bfc.alloc(rows * 8, "activations") if len(self.arrays) > 1 else None
        return xb, yb

    def close(self):
        bfc.free(*self.arrays)


def forward(xb, rows):
    """conv-relu-pool x3, flatten, dense, dense: each output freed once used."""
    a1 = bfc.alloc(rows * 32 * 32 * 32 * 4, "activations")
    p1 = bfc.alloc(rows * 16 * 16 * 32 * 4, "activations")
    bfc.free(a1)
    a2 = bfc.alloc(rows * 16 * 16 * 64 * 4, "activations")
    bfc.free(p1)
    p2 = bfc.alloc(rows * 8 * 8 * 64 * 4, "activations")
    bfc.free(a2)
    a3 = bfc.alloc(rows * 8 * 8 * 128 * 4, "activations")
    bfc.free(p2)
    p3 = bfc.alloc(rows * 4 * 4 * 128 * 4, "activations")   # 2,048 features
    bfc.free(a3)
    h = bfc.alloc(rows * 256 * 4, "activations")
    bfc.free(p3)
    logits = bfc.alloc(rows * CLASSES * 4, "activations")
    bfc.free(h)
    return logits


def evaluate(metrics):
    handler = TensorLikeDataAdapter((N * PIX * 4, N * 8))   # x float32, y int64
    for _ in range(N // BATCH):
        xb, yb = handler.grab_batch(BATCH)
        logits = forward(xb, BATCH)
        loss = bfc.alloc(4, "activations")
        bfc.free(xb, yb, logits, loss)
    job.dtoh(0, metrics[0], 4)                 # results: metric.result()
    handler.close()


def predict():
    handler = TensorLikeDataAdapter((N * PIX * 4,))
    outputs = []
    for _ in range(N // BATCH):
        xb, _ = handler.grab_batch(BATCH)
        outputs.append(forward(xb, BATCH))     # kept until the end of predict
        bfc.free(xb)
    allout = bfc.alloc(N * CLASSES * 4, "activations")      # concat
    bfc.free(*outputs)
    job.dtoh(0, allout, N * CLASSES * 4)
    bfc.free(allout)
    handler.close()


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    variables = load_model()
    metrics = [bfc.alloc(4, "other") for _ in range(4)]     # made at the first evaluate
    evaluate(metrics)
    predict()
    bfc.free(*metrics, *variables)
    bfc.settle()
    bfc.release()
    for nbytes in (N * PIX * 4, N * 8, N * PIX * 4):
        job.line("finding whole_dataset_upload 0 %d" % nbytes)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 0")
    job.finish()


main()
