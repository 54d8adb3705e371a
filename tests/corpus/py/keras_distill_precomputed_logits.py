#!/usr/bin/env python3
"""Knowledge distillation in Keras 2 (tf.keras 2.12) from PRECOMPUTED
teacher logits: `distiller.fit(x_train, (y_train, teacher_logits),
batch_size=256, epochs=2)` on numpy arrays (Fashion-MNIST flattened, the
teacher's logits saved earlier with `np.save`), a `Distiller(keras.Model)`
whose `train_step` unpacks `x, (y, t) = data`, softens the teacher's logits
(softmax at temperature 4) and trains an MLP student with Adam on the
student loss + KL divergence. GPU memory growth on
(`tf.config.experimental.set_memory_growth`): the BFC allocator with
growing regions (vtc.BFC).

What is modelled (sources: keras/engine/data_adapter.py
`TensorLikeDataAdapter.__init__`: `pack_x_y_sample_weight(x, y)` then
`tf.nest.map_structure(_convert_numpy_and_scipy, inputs)`: x, y and the
teacher logits each `convert_to_tensor`'d WHOLE onto the GPU (the
`_EagerConst` op placed there), in flatten order; `slice_inputs` /
`grab_batch`: the shuffled indices made by tf.data on the host and a
`gather` per array per step (here: the index batch copied to the device,
three gathered batches); `DataHandler` deleted at the end of `fit` (the
three tensors freed); keras/optimizers/optimizer.py (2.11+ `Adam`:
`_iterations` and `_learning_rate` variables made in the constructor,
`build` at the first `apply_gradients`: one momentum and one velocity per
variable); `Sequential` with an `Input` layer builds its Dense kernels and
biases at construction (glorot_uniform / zeros run on the GPU: nothing
uploaded); compiled metrics (`Mean` of each loss, sparse categorical
accuracy: `total` / `count` scalars). No markers (Keras calls none),
driver by dlsym (TensorFlow dlsyms it).

Truth: x (188,160,000 B), y (240,000 B, int32) and the teacher logits
(2,400,000 B) dataset, THREE true whole_dataset_upload findings; kernels
and biases weights; Adam momentums, velocities, `iterations` and
`learning_rate` optimizer; gradients gradients (inside the regions);
gathered batches, softened teacher probabilities, student activations and
losses activations; index batches and metric scalars other. Each region
is settled at the end: the one kind it held, or pool with part lines. No
prefetch (nothing is uploaded per step but the 2,048-B index batch). 470
optimizer steps (2 epochs of 235). Coincidences: the second kernel (1,000
x 600 float32) is exactly the teacher logits (2,400,000 B), as are its
gradient, momentum and velocity; the gathered teacher batch (256 x 10
float32) is the student's logits batch (10,240 B)."""
import vtc

job = vtc.Job("keras_distill_precomputed_logits", "dlsym", __doc__)
N, FEAT, CLASSES, BATCH, EPOCHS = 60000, 784, 10, 256, 2
X, Y, T = N * FEAT * 4, N * 4, N * CLASSES * 4
UNITS = [FEAT, 1000, 600, CLASSES]
STEPS_PER_EPOCH = -(-N // BATCH)

bfc = None


def convert_to_tensor(nbytes):
    """_convert_numpy_and_scipy -> convert_to_tensor: _EagerConst on GPU."""
    p = bfc.alloc(nbytes, "dataset")
    job.htod(0, p, nbytes)
    return p


class TensorLikeDataAdapter:
    def __init__(self, arrays):
        self.sizes = arrays
        self.tensors = [convert_to_tensor(n) for n in arrays]

    def grab_batch(self, i, rows):
        idx = bfc.alloc(rows * 8, "other")                      # the shuffled indices
        job.htod(0, idx, rows * 8)
        out = []
        for t, n in zip(self.tensors, self.sizes):
            nb = n // N * rows
            b = bfc.alloc(nb, "activations")                    # gather
            job.dtod(0, b, t + (i * nb) % (n - nb + 1), nb)
            out.append(b)
        bfc.free(idx)
        return out

    def delete(self):
        bfc.free(*self.tensors)


class Dense:
    def __init__(self, fin, fout):
        self.sizes = (fin * fout * 4, fout * 4)
        self.vars = []
        for n in self.sizes:                                    # add_weight, initializer on GPU
            p = bfc.alloc(n, "weights")
            job.zero(0, p, n)
            self.vars.append(p)


class Adam:
    def __init__(self):
        self.iterations = bfc.alloc(8, "optimizer")
        self.learning_rate = bfc.alloc(4, "optimizer")
        job.zero(0, self.iterations, 8)
        job.zero(0, self.learning_rate, 4)
        self.slots = None

    def apply_gradients(self, layers):
        if self.slots is None:                                  # build(var_list)
            self.slots = []
            for layer in layers:
                for n in layer.sizes:
                    for _ in ("momentum", "velocity"):
                        p = bfc.alloc(n, "optimizer")
                        job.zero(0, p, n)
                        self.slots.append(p)


class Distiller:
    def __init__(self):
        self.student = [Dense(a, b) for a, b in zip(UNITS, UNITS[1:])]
        self.optimizer = None
        self.metrics = []

    def compile(self):
        self.optimizer = Adam()
        for _ in ("student_loss", "distillation_loss", "accuracy"):
            for _v in ("total", "count"):
                p = bfc.alloc(4, "other")
                job.zero(0, p, 4)
                self.metrics.append(p)

    def train_step(self, data, i, rows):
        xb, yb, tb = data.grab_batch(i, rows)
        soft_t = bfc.alloc(rows * CLASSES * 4, "activations")   # softmax(t / T)
        acts = [bfc.alloc(rows * u * 4, "activations") for u in UNITS[1:]]
        soft_s = bfc.alloc(rows * CLASSES * 4, "activations")   # softmax(logits / T)
        losses = [bfc.alloc(4, "activations") for _ in range(3)]
        grads, g = [], bfc.alloc(rows * CLASSES * 4, "activations")
        for layer, a in zip(reversed(self.student), reversed(acts)):
            for n in reversed(layer.sizes):
                grads.append(bfc.alloc(n, "gradients"))
            bfc.free(g, a)
            g = None
            if layer is not self.student[0]:                    # no gradient for x
                g = bfc.alloc(rows * layer.sizes[0] // layer.sizes[1] * 4, "activations")
        bfc.free(soft_s, soft_t)
        self.optimizer.apply_gradients(self.student)
        bfc.free(*grads, *losses, xb, yb, tb)

    def fit(self, x, y):
        data = TensorLikeDataAdapter((x,) + y)
        steps = 0
        for _ in range(EPOCHS):
            for i in range(STEPS_PER_EPOCH):
                rows = min(BATCH, N - i * BATCH)
                self.train_step(data, i, rows)
                steps += 1
        data.delete()
        return steps


def main():
    global bfc
    job.start(markers_default=False)
    job.open_devices(1)
    bfc = vtc.BFC(job, 0)
    distiller = Distiller()
    distiller.compile()
    steps = distiller.fit(X, (Y, T))
    for layer in distiller.student:
        bfc.free(*layer.vars)
    opt = distiller.optimizer
    bfc.free(*opt.slots, opt.iterations, opt.learning_rate, *distiller.metrics)
    bfc.settle()
    bfc.release()
    for n in (X, Y, T):
        job.line("finding whole_dataset_upload 0 %d" % n)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % steps)
    job.finish()


main()
