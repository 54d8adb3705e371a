#!/usr/bin/env python3
"""A Flax CNN trained on Fashion-MNIST held whole on the GPU, under
XLA_PYTHON_CLIENT_ALLOCATOR=platform (one cuMemAlloc per XLA buffer,
cuMemFree as soon as it is dead: the only JAX mode that gives memory back):
the four numpy arrays are `jax.device_put` once; every epoch a numpy
permutation of the 60,000 rows is uploaded, cut to whole batches on the
device, and each step slices its 128 indices and calls a jitted
`train_step(state, x_all, y_all, idx)` that gathers and normalises the
batch itself; the `TrainState` (params, optax `adamw` state, step) is
donated, so the updated state reuses its buffers; per-step loss and
accuracy scalars are kept in a list until the epoch's end; evaluation
on the resident test arrays in ten slices after each epoch. Two epochs
of 468 steps.

What is modelled (sources: the JAX GPU memory allocation notes
(`XLA_PYTHON_CLIENT_ALLOCATOR=platform` "allocate exactly what is needed
on demand, and deallocate memory that is no longer needed"); xla
stream_executor / pjrt `PjRtStreamExecutorClient` (`BufferFromHostBuffer`:
one device buffer and one host-to-device copy per array; an executable's
outputs a buffer each and ONE temp allocation per run for every
intermediate, freed when the run ends; donated input buffers aliased by
the outputs of the same shape, nothing allocated for them);
flax/training/train_state.py (`TrainState.create`: `step=0` a Python
int, transferred at the first call, `tx.init(params)`; `apply_gradients`:
`step + 1`, `optax.apply_updates`); optax `adamw` = `chain(
scale_by_adam, add_decayed_weights, scale_by_learning_rate)` (`init`:
`ScaleByAdamState(count, mu, nu)` with `zeros_like` per leaf, empty
states for the rest); the Flax MNIST example's `train_epoch` /
`eval_model` layout (`perms[:steps_per_epoch * batch_size].reshape`,
`for perm in perms`, `epoch_loss.append(loss)` then `jax.device_get`);
flax linen `Conv`, `avg_pool`, `Dense`, `Module.init` jitted (a PRNG key
and a `jnp.ones` dummy input made on the device)). Markers on (one per
step), driver by dlsym (XLA dlsyms the driver).

Truth: x_train (47,040,000 B), y_train (240,000 B), x_test (7,840,000 B)
and y_test (40,000 B) dataset, uploaded whole: FOUR true
whole_dataset_upload findings; parameters weights (made by the jitted
init on the device); `count`, `mu`, `nu` and the uploaded `step`
optimizer (donated, so never re-made); each train run's temp allocation
pool (parts: the gathered, normalised batch and the forward tensors
activations, the gradients gradients); each epoch's uploaded
permutation, its reshaped copy, the per-step index slices, the PRNG key
and the kept loss / accuracy scalars other; the init's dummy input and
temp, the evaluation slices, temps and logits activations. No prefetch:
nothing of a batch is uploaded (the indices are). 936 steps.
Coincidences: the uploaded permutation (60,000 int32, 240,000 B, other)
is y_train (dataset); the first average pool's output inside the temp
allocation (128 x 14 x 14 x 32 floats, 3,211,264 B, an activations part)
is the Dense(256) kernel (3,136 x 256 floats, weights), its `mu` and
`nu`; the per-step index slice (128 int32, 512 B, other) is the
gathered label batch inside the temp allocation (an activations part)."""
import random

import vtc

job = vtc.Job("flax_platform_resident_fmnist", "dlsym", __doc__)
F32, I32 = 4, 4
N_TRAIN, N_TEST, PIX, CLASSES = 60000, 10000, 28 * 28, 10
BATCH, EPOCHS, EVAL_SLICES = 128, 2, 10
STEPS = N_TRAIN // BATCH
PARAMS = [3 * 3 * 1 * 32 * F32, 32 * F32,           # Conv_0 kernel, bias
          3 * 3 * 32 * 64 * F32, 64 * F32,          # Conv_1
          7 * 7 * 64 * 256 * F32, 256 * F32,        # Dense_0
          256 * CLASSES * F32, CLASSES * F32]       # Dense_1


def forward_parts(rows):
    return [rows * PIX * F32,                       # x_all[idx] / 255. (gathered, converted)
            rows * I32,                             # y_all[idx]
            rows * PIX * 32 * F32,                  # Conv_0 + relu
            rows * 14 * 14 * 32 * F32,              # avg_pool
            rows * 14 * 14 * 64 * F32,              # Conv_1 + relu
            rows * 7 * 7 * 64 * F32,                # avg_pool, reshape
            rows * 256 * F32,                       # Dense_0 + relu
            rows * CLASSES * F32,                   # logits
            rows * CLASSES * F32]                   # one_hot / log_softmax


def alloc(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def device_put(n, cat):
    p = alloc(n, cat)
    job.htod(0, p, n)
    return p


def run_temp(parts):
    """One executable run's temp allocation (pool with its parts recorded when
    it holds more than one kind); returns it."""
    total = sum(n for n, _ in parts)
    kinds = {k for _, k in parts}
    p = alloc(total, kinds.pop() if len(kinds) == 1 else "pool")
    if len({k for _, k in parts}) > 1:
        off = 0
        for n, k in parts:
            job.part(0, p + off, n, k)
            off += n
    return p


def end_temp(p, parts):
    if len({k for _, k in parts}) > 1:
        off = 0
        for n, _ in parts:
            job.part_free(0, p + off)
            off += n
    free(p)


def init_model():
    """jax.jit(model.init)(key, jnp.ones((1, 28, 28, 1)))."""
    key = alloc(8, "other")                         # random.PRNGKey(0)
    dummy = alloc(PIX * F32, "activations")         # jnp.ones
    parts = [(n, "activations") for n in forward_parts(1)]
    temp = run_temp(parts)
    params = [alloc(n, "weights") for n in PARAMS]
    end_temp(temp, parts)
    free(dummy)
    return key, params


def tx_init():
    """optax.adamw(...).init(params): count, mu, nu."""
    count = alloc(I32, "optimizer")
    mu = [alloc(n, "optimizer") for n in PARAMS]
    nu = [alloc(n, "optimizer") for n in PARAMS]
    return [count] + mu + nu


def train_step():
    """Gather, forward, grad, adamw update (in the donated buffers)."""
    parts = [(n, "activations") for n in forward_parts(BATCH)]
    parts += [(n, "gradients") for n in PARAMS]
    parts += [(n, "activations") for n in PARAMS]  # adam updates before apply_updates
    temp = run_temp(parts)
    loss = alloc(F32, "other")
    acc = alloc(F32, "other")
    end_temp(temp, parts)
    return loss, acc


def eval_model(x_test, y_test):
    rows = N_TEST // EVAL_SLICES
    for s in range(EVAL_SLICES):
        xs = alloc(rows * PIX, "activations")       # x_test[i:j]
        ys = alloc(rows * I32, "activations")
        parts = [(n, "activations") for n in forward_parts(rows)]
        temp = run_temp(parts)
        loss = alloc(F32, "activations")
        acc = alloc(F32, "activations")
        end_temp(temp, parts)
        job.dtoh(0, loss, F32)
        free(xs, ys, loss, acc)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    rng = random.Random(5)
    x_train = device_put(N_TRAIN * PIX, "dataset")  # uint8
    y_train = device_put(N_TRAIN * I32, "dataset")
    x_test = device_put(N_TEST * PIX, "dataset")
    y_test = device_put(N_TEST * I32, "dataset")
    key, params = init_model()
    opt_state = tx_init()
    step_buf = None
    step = 0
    for epoch in range(EPOCHS):
        sub = [alloc(8, "other"), alloc(8, "other")]    # random.split(key)
        free(key, sub[1])
        key = sub[0]
        rng.random()
        perm_all = device_put(N_TRAIN * I32, "other")   # np.random.permutation(n), device_put
        perms = alloc(STEPS * BATCH * I32, "other")     # [:steps * batch].reshape(steps, batch)
        free(perm_all)
        kept = []
        for i in range(STEPS):
            job.step(step)
            idx = alloc(BATCH * I32, "other")           # perms[i]
            if step_buf is None:
                step_buf = device_put(I32, "optimizer")  # TrainState.step = 0, transferred
            loss, acc = train_step()
            kept += [loss, acc]                         # epoch_loss.append(loss)
            free(idx)
            step += 1
        for p in kept:                                  # jax.device_get(epoch metrics)
            job.dtoh(0, p, F32)
        free(*kept, perms)
        eval_model(x_test, y_test)
    free(*params, *opt_state, step_buf, key, x_train, y_train, x_test, y_test)
    for n in (N_TRAIN * PIX, N_TRAIN * I32, N_TEST * PIX, N_TEST * I32):
        job.line("finding whole_dataset_upload 0 %d" % n)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % step)
    job.finish()


main()
