#!/usr/bin/env python3
"""Flax + optax data-parallel training with jax.pmap on 2 devices, driven
from ONE Python thread, XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async (every
device buffer a cuMemAllocAsync, freed with cuMemFreeAsync).

What is modelled (sources read: jax/_src/api.py `device_put_replicated` ->
`device_put(x, devices[0])` then `pxla.batched_device_put(aval, sharding,
[buf] * len(devices), devices)`, which copies device 0's buffer to the other
device; flax/jax_utils.py `replicate`, `prefetch_to_device`; jax/_src/pmap.py
`pmap(..., donate_argnums=...)`; optax `adam` -> `scale_by_adam.init_fn`
(mu, nu = zeros_like(params), count = zeros([], int32))):
  - `checkpoints.restore_checkpoint` gives numpy params; `jax_utils.replicate`
    uploads each leaf to device 0 and copies it device-to-device to device 1;
  - `jax.pmap(tx.init)(params)`: mu, nu and the int32 count made ON each
    device (nothing uploaded);
  - the input pipeline: `prefetch_to_device(shard(batch) for batch in ds, 2)`
    keeps 2 sharded batches on the devices: each batch is split into one
    shard per device and each shard uploaded to its device (images and
    labels);
  - `p_train_step = jax.pmap(train_step, axis_name="batch",
    donate_argnums=(0, 1))`: params and opt_state are donated, so XLA
    aliases them to the outputs: the same buffers are updated in place
    every step (no new parameter buffers); per device the executable's temp
    buffer (gradients and activations, one allocation, freed when it
    finishes), the pmean'd loss (4 B, read back by `unreplicate` +
    `device_get`, dropped at the next step); `lax.pmean` of the gradients
    goes through NCCL, whose communicator buffer is made at the first step.
Markers on (one `step N` per pmapped step), driver by dlsym (XLA dlsyms it).

Truth per device: params weights; mu, nu and count optimizer; image and
label shards prefetch (depth 2: prefetch_to_device(..., 2)); the temp buffer
pool (parts: gradients = the params' bytes, activations the rest); loss
activations; NCCL buffer other. No dataset; 10 steps on each device.
Coincidences: an image shard (128 x 32 x 32 x 3 float32 = 1.5 MiB) is
exactly the 768 x 512 dense kernel; a label shard (128 int32) is exactly a
128-channel BatchNorm scale."""
import vtc

job = vtc.Job("jax_pmap_replicated", "dlsym", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
NDEV, PER_DEV, STEPS, PREFETCH = 2, 128, 10, 2
IMG_SHARD, LABEL_SHARD = PER_DEV * 32 * 32 * 3 * 4, PER_DEV * 4
ACT_PER_DEV = 24 * MIB


def param_leaves():
    """(path, bytes) in flax tree order, float32."""
    yield "Conv_0/kernel", 3 * 3 * 3 * 64 * 4
    yield "BatchNorm_0/scale", 64 * 4
    yield "BatchNorm_0/bias", 64 * 4
    chans = (64, 128, 256)
    cin = 64
    for s, c in enumerate(chans):
        for b in range(2):
            pre = "stage%d/block%d" % (s, b)
            yield pre + "/Conv_0/kernel", 3 * 3 * cin * c * 4
            yield pre + "/BatchNorm_0/scale", c * 4
            yield pre + "/BatchNorm_0/bias", c * 4
            yield pre + "/Conv_1/kernel", 3 * 3 * c * c * 4
            yield pre + "/BatchNorm_1/scale", c * 4
            yield pre + "/BatchNorm_1/bias", c * 4
            cin = c
    yield "Dense_0/kernel", 768 * 512 * 4
    yield "Dense_0/bias", 512 * 4
    yield "Dense_1/kernel", 512 * 100 * 4
    yield "Dense_1/bias", 100 * 4


def device_put(nbytes, dev, cat):
    buf = job.mem_alloc_async(dev, nbytes, cat)
    job.htod(dev, buf, nbytes)
    return buf


def batched_device_put(buf0, nbytes, cat):
    """[buf] * len(devices): device 0 keeps buf0, the others get a copy."""
    bufs = [buf0]
    for d in range(1, NDEV):
        b = job.mem_alloc_async(d, nbytes, cat)
        job.peer(d, b, 0, buf0, nbytes)
        bufs.append(b)
    return bufs


def device_put_replicated(nbytes):
    return batched_device_put(device_put(nbytes, 0, "weights"), nbytes, "weights")


def replicate(tree):
    return [device_put_replicated(n) for _path, n in tree]


def init_fn(params_repl, sizes):
    """pmap(tx.init): per device mu, nu (zeros_like) and count."""
    state = []
    for d in range(NDEV):
        mu = [job.mem_alloc_async(d, n, "optimizer") for n in sizes]
        nu = [job.mem_alloc_async(d, n, "optimizer") for n in sizes]
        for p, n in zip(mu + nu, sizes + sizes):
            job.zero(d, p, n)
        count = job.mem_alloc_async(d, 4, "optimizer")
        job.zero(d, count, 4)
        state.append(mu + nu + [count])
    return state


def shard(batch_index):
    """One global batch, split per device and put on each."""
    return [(device_put(IMG_SHARD, d, "prefetch"), device_put(LABEL_SHARD, d, "prefetch"))
            for d in range(NDEV)]


def prefetch_to_device(n_batches, size):
    queue = []
    for i in range(n_batches):
        while len(queue) < size and i + len(queue) < n_batches:
            queue.append(shard(i + len(queue)))
        yield queue.pop(0)


def train_step(d, grads_bytes, batch, nccl):
    temp = job.mem_alloc_async(d, grads_bytes + ACT_PER_DEV, "pool")
    job.part(d, temp, grads_bytes, "gradients")
    job.part(d, temp + grads_bytes, ACT_PER_DEV, "activations")
    if nccl[d] is None:  # the communicator, made by the first all-reduce
        nccl[d] = job.mem_alloc_async(d, 4 * MIB, "other")
    loss = job.mem_alloc_async(d, 4, "activations")
    job.part_free(d, temp)
    job.part_free(d, temp + grads_bytes)
    job.mem_free_async(d, temp)
    return loss


def main():
    job.start(markers_default=True)
    job.open_devices(NDEV)
    tree = list(param_leaves())
    sizes = [n for _p, n in tree]
    params = replicate(tree)  # params[leaf][device]
    opt_state = init_fn(params, sizes)
    nccl = [None] * NDEV
    losses = []
    for s, batch in enumerate(prefetch_to_device(STEPS, PREFETCH)):
        job.step(s)
        for old in losses:  # the previous step's metrics, dropped
            job.mem_free_async(*old)
        losses = []
        for d in range(NDEV):  # one executable per device, same thread
            losses.append((d, train_step(d, sum(sizes), batch[d], nccl)))
        job.dtoh(0, losses[0][1], 4)  # unreplicate(metrics) -> device_get
        for d in range(NDEV):  # the consumed shards go out of scope
            for b in batch[d]:
                job.mem_free_async(d, b)
    for d, p in losses:
        job.mem_free_async(d, p)
    for d in range(NDEV):
        for b in opt_state[d]:
            job.mem_free_async(d, b)
        for leaf in params:
            job.mem_free_async(d, leaf[d])
        job.mem_free_async(d, nccl[d])
    job.line("no_finding whole_dataset_upload")
    for d in range(NDEV):
        job.line("finding prefetch_depth %d %d %d" % (d, PREFETCH, IMG_SHARD + LABEL_SHARD))
        job.line("steps %d %d" % (d, STEPS))
    job.finish()


main()
