#!/usr/bin/env python3
"""JAX + optax: an MLP classifier on CIFAR-10-shaped data held WHOLE on the
device, with XLA_PYTHON_CLIENT_PREALLOCATE=false (the BFC allocator grows
region by region instead of taking 75 % of the device at start).

What is modelled (sources read: xla/pjrt/gpu/gpu_helpers.cc
`CreateBFCAllocator` (`opts.allow_growth = !preallocate`, a
DeviceMemAllocator sub-allocator: one cuMemAlloc per region);
tsl/framework/bfc_allocator.cc (with allow_growth the first region size
is `RoundedBytes(min(total_memory, 2 MiB))`; `Extend` doubles
`curr_region_allocation_bytes_` until the request fits, allocates that
many bytes, and doubles it once more when it did not have to grow; 256-byte
rounding; `FindChunkPtr` takes the smallest free chunk that fits and splits
it only when the chunk is at least twice the request (or more than 128 MiB
would be wasted), so a large tensor can own a whole region; freed chunks
merge with free neighbours; regions are never given back); jax
`device_put` of numpy arrays (one host-to-device copy into a new buffer);
`jax.jit` executables (outputs are new buffers, one temp allocation per
execution holding every intermediate, `donate_argnums=(0, 1)` aliases the
donated params and optimizer state to the outputs, updated in place);
optax `adam` (`init`: mu and nu zeros like params, `count` int32);
`jax.random.split` / `permutation` (keys and the epoch's permutation made
on the device), `perm[i * B:(i + 1) * B]` (a dynamic slice: a new small
buffer per step), `float(loss)` (read back)).
  - params made by a jitted `init` (weights, an init temp), THEN x_train
    (uint8 20,000 x 3,072) and y_train (int32) `device_put`, then the test
    set (5,000 images, labels) the same way, then `jit(tx.init)`;
  - 2 epochs x 156 steps of 128: the jitted train step gathers the batch
    from x_train inside its temp buffer (gathered images, their float
    conversion, activations and gradients), updates the donated state in
    place, returns a new loss scalar; an evaluation of the test set in one
    jitted call after each epoch.
Markers on (the user's loop marks each step), driver by dlsym.

Truth (per BFC region, settled at the end: one kind, or pool with part
lines): x_train, y_train, x_test, y_test dataset, FOUR whole_dataset_upload
findings (61,440,000 / 80,000 / 15,360,000 / 20,000 B); params weights;
mu, nu, count optimizer; temps (train: gradients and activations; eval,
init: activations), losses and slices activations; keys and the
permutation other. No prefetch (nothing uploaded per step). 312 steps.
Coincidences: x_train's region is a 64 MiB region it owns whole (BFC does
not split it), as is the first kernel's 16 MiB region; y_train and the
epoch permutation are both 80,000 B; mu and nu are their params' sizes."""
import vtc

job = vtc.Job("jax_bfc_growth_devput", "dlsym", __doc__)
MIB = vtc.MIB
N_TRAIN, N_TEST, PIX, B, EPOCHS = 20000, 5000, 32 * 32 * 3, 128, 2
PARAMS = [PIX * 1024 * 4, 1024 * 4, 1024 * 512 * 4, 512 * 4, 512 * 10 * 4, 10 * 4]
bfc = vtc.BFC(job, 0)


def device_put(nbytes):
    p = bfc.alloc(nbytes, "dataset")
    job.htod(0, p, nbytes)
    return p


def jit_init():
    temp = bfc.alloc(8 * MIB, "activations")    # RNG bits for the initializers
    params = [bfc.alloc(n, "weights") for n in PARAMS]
    bfc.free(temp)
    return params


def jit_tx_init():
    mu = [bfc.alloc(n, "optimizer") for n in PARAMS]
    nu = [bfc.alloc(n, "optimizer") for n in PARAMS]
    count = bfc.alloc(4, "optimizer")
    for p, n in zip(mu + nu, PARAMS + PARAMS):
        job.zero(0, p, n)
    return mu + nu + [count]


def random_split(key):
    new = bfc.alloc(8, "other"), bfc.alloc(8, "other")
    bfc.free(key)
    return new


def train_step(x, y, idx):
    """donate_argnums=(0, 1): params and opt_state updated in place."""
    grads, acts = sum(PARAMS), B * PIX + B * PIX * 4 + B * 1024 * 4 * 3
    # one temp buffer: x_train[idx] (uint8), / 255.0, hidden layers; gradients
    temp = bfc.alloc(acts + grads, "pool", [(acts, "activations"), (grads, "gradients")])
    job.dtod(0, temp, x, B * PIX)
    loss = bfc.alloc(4, "activations")
    bfc.free(temp)
    return loss


def evaluate(x_test):
    temp = bfc.alloc(500 * PIX * 4 + 500 * 1024 * 4 * 2, "activations")  # lax.map over 10
    acc = bfc.alloc(4, "activations")
    bfc.free(temp)
    job.dtoh(0, acc, 4)
    bfc.free(acc)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    key = bfc.alloc(8, "other")                  # jax.random.PRNGKey(0)
    key, sub = random_split(key)
    params = jit_init()
    bfc.free(sub)
    data = [device_put(N_TRAIN * PIX), device_put(N_TRAIN * 4),
            device_put(N_TEST * PIX), device_put(N_TEST * 4)]
    opt_state = jit_tx_init()
    step = 0
    for _epoch in range(EPOCHS):
        key, sub = random_split(key)
        perm = bfc.alloc(N_TRAIN * 4, "other")   # jax.random.permutation(sub, N)
        bfc.free(sub)
        for i in range(N_TRAIN // B):
            job.step(step)
            idx = bfc.alloc(B * 4, "other")      # perm[i * B:(i + 1) * B]
            loss = train_step(data[0], data[1], idx)
            job.dtoh(0, loss, 4)                 # float(loss)
            bfc.free(idx, loss)
            step += 1
        bfc.free(perm)
        evaluate(data[2])
    bfc.free(key, *data, *params, *opt_state)
    bfc.settle()
    bfc.release()
    for nbytes in (N_TRAIN * PIX, N_TRAIN * 4, N_TEST * PIX, N_TEST * 4):
        job.line("finding whole_dataset_upload 0 %d" % nbytes)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % step)
    job.finish()


main()
