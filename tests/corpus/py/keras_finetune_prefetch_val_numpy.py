#!/usr/bin/env python3
"""Transfer learning in tf.keras (Keras 2.12) as keras.io's "Transfer
learning & fine-tuning" guide runs it, with a VGG16 base (ImageNet
weights, `include_top=False`, 64 x 64 inputs), a
GlobalAveragePooling2D + Dropout + Dense(1) head, the training images
streamed by `tf.data` (decoded and resized on the host, batched by 48)
ending in `tf.data.experimental.prefetch_to_device("/gpu:0",
buffer_size=1)`, and the validation set passed as numpy arrays
(`validation_data=(x_val, y_val)`): first `fit` with the base frozen
(2 epochs), then `base_model.trainable = True`, a recompile with
`Adam(1e-5)` and a second `fit` (2 epochs). GPU memory growth on
(`set_memory_growth`): TensorFlow's BFC allocator with growing regions
(vtc.BFC).

What is modelled (sources: keras/applications/vgg16.py (13 `Conv2D` +
ReLU, 5 `MaxPooling2D`) built by `add_weight` initializers on the GPU,
then `load_weights` -> legacy/saving/hdf5_format.py
`load_weights_from_hdf5_group` -> backend.py `batch_set_value` ->
`assign` (each numpy value converted onto the GPU, the variable then
holding the converted buffer and its initialised one freed);
keras/engine/training.py `fit` (`DataHandler` over the dataset, a new
iterator per epoch; at the end of the first epoch with validation
`self._eval_data_handler = data_adapter.get_data_handler(x=val_x,
y=val_y, ...)`, reused by later epochs' `evaluate(...,
_use_cached_eval_dataset=True)`, `del self._eval_data_handler` when
`fit` returns, so each `fit` converts the arrays again);
keras/engine/data_adapter.py `TensorLikeDataAdapter` (`_process_tensorlike`
-> `_convert_numpy_and_scipy` -> `convert_to_tensor`: the whole array
an `_EagerConst` on the GPU; per batch an index batch and one gather
per array); tensorflow/python/data/experimental/ops/prefetching_ops.py
`prefetch_to_device` (`copy_to_device` then `prefetch(buffer_size)`:
the buffered element on the GPU, refilled while the step runs);
keras/optimizers/adam.py (2.11+ `Optimizer`: `_iterations` and
`_learning_rate` variables in the constructor, momentums and velocities
at `build`, the first `apply_gradients`; the old optimizer's variables
freed when the recompile drops it); compiled loss tracker and
`BinaryAccuracy` (`total` / `count` per metric, new ones at the
recompile); the base called with `training=False`, so with the base
frozen its activations are not kept for the backward, and after
unfreezing they are). No markers (Keras calls none), driver by dlsym
(TensorFlow dlsyms it).

Truth: kernels and biases weights (the initialised buffers and the
converted checkpoint values); x_val (23,592,960 B) and y_val (1,920 B)
dataset, converted whole by each `fit`: FOUR true whole_dataset_upload
findings (each array twice); the prefetched image and label batches
prefetch (depth 2: the step's batch and the one buffered); Adam's
`iterations`, `learning_rate`, momentums and velocities optimizer;
gradients gradients; metric variables and the evaluation's index
batches other; gathered validation batches, forward / backward tensors
and Adam's temporaries activations. Each region is settled at the end:
the one kind it held, or pool with part lines. 80 optimizer steps (2 x 20
frozen, 2 x 20 fine-tuning). Coincidences: an image batch (48 x 64 x 64
x 3 float32, 2,359,296 B, prefetch) is a gathered validation batch
(activations) and block3's second and third kernels (3 x 3 x 256 x 256,
weights), their gradients and Adam slots; a label batch (192 B, prefetch)
is a validation batch's gathered labels (activations)."""
import vtc

job = vtc.Job("keras_finetune_prefetch_val_numpy", "dlsym", __doc__)
F32 = 4
RES, BATCH = 64, 48
N_TRAIN, N_VAL = 960, 480
EPOCHS = 2
IMG = BATCH * RES * RES * 3 * F32
LBL = BATCH * F32
X_VAL, Y_VAL = N_VAL * RES * RES * 3 * F32, N_VAL * F32
STEPS = N_TRAIN // BATCH
VGG = [(3, 64), (64, 64), "pool", (64, 128), (128, 128), "pool",
       (128, 256), (256, 256), (256, 256), "pool",
       (256, 512), (512, 512), (512, 512), "pool",
       (512, 512), (512, 512), (512, 512), "pool"]

bfc = None


def layers():
    """(cin, cout, hw_out) per conv, None per pool, over the 64 x 64 input."""
    out, hw = [], RES
    for item in VGG:
        if item == "pool":
            hw //= 2
            out.append(("pool", hw))
        else:
            out.append((item[0], item[1], hw))
    return out


class Var:
    def __init__(self, nbytes, trainable=True):
        self.n = nbytes
        self.trainable = trainable
        self.p = bfc.alloc(nbytes, "weights")                  # add_weight: initializer on GPU


class Model:
    def __init__(self):
        self.base = []
        for item in layers():
            if item[0] != "pool":
                cin, cout, _hw = item
                self.base += [Var(3 * 3 * cin * cout * F32), Var(cout * F32)]
        self.head = []
        self.base_trainable = True

    def build_head(self):
        """keras.Model(inputs, Dense(1)(Dropout(GAP(base(inputs))))): the
        Dense layer built when it is first called, after the base's load."""
        self.head = [Var(512 * F32), Var(F32)]

    def load_weights(self):
        """batch_set_value: each value converted, the variable takes it."""
        for v in self.base:
            new = bfc.alloc(v.n, "weights")
            job.htod(0, new, v.n)
            bfc.free(v.p)
            v.p = new

    def trainable(self):
        return (self.base if self.base_trainable else []) + self.head

    def forward(self, rows, train):
        """Returns kept tensors (for the backward) and the logits."""
        keep_base = train and self.base_trainable
        kept = []
        x = None
        c = 3
        for item in layers():
            if item[0] == "pool":
                hw = item[1]
                y = bfc.alloc(rows * hw * hw * c * F32, "activations")               # MaxPool
            else:
                _cin, c, hw = item
                cout = c
                conv = bfc.alloc(rows * hw * hw * cout * F32, "activations")    # Conv2D + BiasAdd
                y = bfc.alloc(rows * hw * hw * cout * F32, "activations")       # Relu
                bfc.free(conv)
            if keep_base:
                kept.append(y)
            elif x is not None:
                bfc.free(x)
            x = y
        gap = bfc.alloc(rows * 512 * F32, "activations")
        if not keep_base:
            bfc.free(x)
        kept.append(gap)
        if train:
            mask = bfc.alloc(rows * 512, "activations")                         # Dropout
            drop = bfc.alloc(rows * 512 * F32, "activations")
            kept += [mask, drop]
        logits = bfc.alloc(rows * F32, "activations")
        kept.append(logits)
        return kept

    def backward(self, rows):
        """A gradient per trainable variable, last layer first."""
        grads = []
        g = bfc.alloc(rows * F32, "activations")                                 # d loss / d logits
        for v in reversed(self.head):
            grads.append(bfc.alloc(v.n, "gradients"))
        gd = bfc.alloc(rows * 512 * F32, "activations")
        bfc.free(g)
        g = bfc.alloc(rows * 512 * F32, "activations")                           # through Dropout
        bfc.free(gd)
        if self.base_trainable:
            gx = bfc.alloc(rows * 2 * 2 * 512 * F32, "activations")             # GAP backward
            bfc.free(g)
            g = gx
            convs = [it for it in layers() if it[0] != "pool"]
            vi = len(self.base)
            for cin, cout, hw in reversed(convs):
                gr = bfc.alloc(rows * hw * hw * cout * F32, "activations")       # ReluGrad
                bfc.free(g)
                vi -= 2
                grads.append(bfc.alloc(self.base[vi + 1].n, "gradients"))       # BiasAddGrad
                grads.append(bfc.alloc(self.base[vi].n, "gradients"))           # Conv2DBackpropFilter
                g = bfc.alloc(rows * hw * hw * cin * F32, "activations")         # ...BackpropInput
                bfc.free(gr)
        bfc.free(g)
        return grads


class Adam:
    def __init__(self):
        self.iterations = bfc.alloc(8, "optimizer")
        self.learning_rate = bfc.alloc(F32, "optimizer")
        self.slots = None

    def apply_gradients(self, variables, grads):
        if self.slots is None:                                 # build(var_list)
            self.slots = [bfc.alloc(v.n, "optimizer") for v in variables for _ in (0, 1)]
        for v in variables:                                    # update_step temporaries
            a = bfc.alloc(v.n, "activations")
            b = bfc.alloc(v.n, "activations")
            bfc.free(a, b)
        bfc.free(*grads)

    def release(self):
        bfc.free(self.iterations, self.learning_rate, *(self.slots or []))


def compile_metrics():
    ps = [bfc.alloc(F32, "other") for _ in range(4)]          # loss Mean, BinaryAccuracy
    return ps


def convert(nbytes):
    p = bfc.alloc(nbytes, "dataset")                           # _EagerConst on the GPU
    job.htod(0, p, nbytes)
    return p


def evaluate(model, handler):
    x, y = handler
    for start in range(0, N_VAL, BATCH):
        rows = min(BATCH, N_VAL - start)
        idx = bfc.alloc(rows * 8, "other")
        job.htod(0, idx, rows * 8)
        xb = bfc.alloc(rows * RES * RES * 3 * F32, "activations")   # tf.gather
        yb = bfc.alloc(rows * F32, "activations")
        bfc.free(idx)
        kept = model.forward(rows, train=False)
        loss = bfc.alloc(F32, "activations")
        bfc.free(*kept, loss, xb, yb)


def fit(model, opt):
    handler = None
    steps = 0
    for epoch in range(EPOCHS):
        buffered = [bfc.alloc(IMG, "prefetch"), bfc.alloc(LBL, "prefetch")]  # new iterator
        job.htod(0, buffered[0], IMG)
        job.htod(0, buffered[1], LBL)
        for step in range(STEPS):
            batch = buffered
            if step + 1 < STEPS:                                # the buffer refilled
                buffered = [bfc.alloc(IMG, "prefetch"), bfc.alloc(LBL, "prefetch")]
                job.htod(0, buffered[0], IMG)
                job.htod(0, buffered[1], LBL)
            kept = model.forward(BATCH, train=True)
            loss = bfc.alloc(F32, "activations")
            grads = model.backward(BATCH)
            bfc.free(*kept, loss)
            opt.apply_gradients(model.trainable(), grads)
            bfc.free(*batch)
            steps += 1
        if handler is None:                                     # _eval_data_handler
            handler = (convert(X_VAL), convert(Y_VAL))
        evaluate(model, handler)
    bfc.free(*handler)                                          # del self._eval_data_handler
    return steps


def main():
    global bfc
    job.start(markers_default=False)
    job.open_devices(1)
    bfc = vtc.BFC(job, 0)
    model = Model()                                            # VGG16(weights="imagenet", ...)
    model.load_weights()
    model.build_head()
    model.base_trainable = False                               # base_model.trainable = False
    opt = Adam()                                               # Adam(1e-3)
    metrics = compile_metrics()
    steps = fit(model, opt)
    model.base_trainable = True                                # base_model.trainable = True
    opt2 = Adam()                                              # recompile: Adam(1e-5)...
    metrics2 = compile_metrics()
    opt.release()                                              # ...and the old one dropped
    bfc.free(*metrics)
    steps += fit(model, opt2)
    opt2.release()
    bfc.free(*metrics2, *[v.p for v in model.base + model.head])
    bfc.settle()
    bfc.release()
    for _fit in range(2):
        job.line("finding whole_dataset_upload 0 %d" % X_VAL)
        job.line("finding whole_dataset_upload 0 %d" % Y_VAL)
    job.line("finding prefetch_depth 0 2 %d" % (IMG + LBL))
    job.line("steps 0 %d" % steps)
    job.finish()


main()
