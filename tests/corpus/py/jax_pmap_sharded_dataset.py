#!/usr/bin/env python3
"""Flax + optax data-parallel training with `jax.pmap` on 2 devices from
ONE Python thread, the whole CIFAR-10 training set (uint8 images, int32
labels) put on the devices once with `jax.device_put_sharded` (half of the
rows on each device) and every batch sliced from it inside the pmapped
step. XLA_PYTHON_CLIENT_PREALLOCATE=false: the default BFC allocator with
memory growth, one per device (vtc.BFC: regions from cuMemAlloc, growing).

What is modelled (sources: jax/_src/api.py `device_put_sharded` ->
`pxla.batched_device_put(stacked_aval, sharding, xs, devices)`: each host
shard copied to its own device, one upload per device and array;
`device_put_replicated` (as `flax.jax_utils.replicate` calls it):
`device_put(x[None], devices[0])` -- a new buffer on device 0 made from the
initialised leaf -- then `batched_device_put(..., [buf] * n, devices)`,
which keeps that buffer for device 0 and copies it to device 1; flax
`Module.init` jitted on device 0 (the parameters made there, nothing
uploaded); optax `adam` -> `scale_by_adam.init_fn` under `jax.pmap(tx.init)`
(mu, nu = zeros_like(params), count = zeros([], int32), made on each
device); `jax.pmap(train_step, axis_name="batch", donate_argnums=(0, 1))`:
params and opt state donated (updated in place), per execution one XLA
temp buffer (the uint8 batch gathered from the shard by the permutation
slice, its float32 conversion, conv / pool / dense activations and their
gradients, the parameter gradients), `lax.pmean` of the gradients through
NCCL (its device buffer made by NCCL with cudaMalloc at the first
collective), the pmean'd loss and accuracy scalars read back by
`device_get`; the step number passed as `np.full(2, i)`, which pmap shards
and uploads (4 B per device); per epoch `jax.random.split` on device 0,
sharded to the devices (a copy each), and `jax.random.permutation` of the
local row indices on each device). Model: the Flax CIFAR example CNN (two
3x3 convs with 2x2 average pooling, Dense 256, Dense 10). No markers (JAX
calls none), driver by dlsym (XLA dlsyms it).

Truth per device, each BFC region settled at the end (the one kind it
held, or pool with part lines): image and label shards dataset, and TRUE
whole_dataset_upload findings on EACH device: 76,800,000 B (25,000 images)
and 100,000 B (25,000 labels); parameters (device 0's replicate copy and
device 1's copy; the initial leaves on device 0 too) weights; mu, nu,
count optimizer; the temp buffer pool-like chunk with parts (gradients =
the parameters' bytes, activations the rest); loss / accuracy outputs
activations; PRNG keys, the epoch permutation and the step-number uploads
other; NCCL buffer other. No prefetch (nothing is uploaded per step but the
4-byte step number). 194 steps on each device (2 epochs of 97).
Coincidences: the permutation (25,000 int32) is exactly the label shard
(100,000 B, other vs dataset); the second pooled activation (256 x 8 x 8 x
64 float32, 4,194,304 B) is the Dense_0 kernel; the step-number upload and
the count are 4 B."""
import vtc

job = vtc.Job("jax_pmap_sharded_dataset", "dlsym", __doc__)
DEVS = 2
N, IMG, CLASSES = 50000, 32 * 32 * 3, 10
N_LOCAL = N // DEVS
X_SHARD, Y_SHARD = N_LOCAL * IMG, N_LOCAL * 4
BATCH = 256
STEPS_PER_EPOCH, EPOCHS = N_LOCAL // BATCH, 2
NCCL_BUF = 4 * vtc.MIB
# flax param tree, leaves in sorted-key order: Conv_0, Conv_1, Dense_0, Dense_1 (bias, kernel)
PARAMS = [32 * 4, 3 * 3 * 3 * 32 * 4, 64 * 4, 3 * 3 * 32 * 64 * 4,
          256 * 4, 8 * 8 * 64 * 256 * 4, CLASSES * 4, 256 * CLASSES * 4]
# one step's activations per device (batch 256): uint8 gather, float32 copy,
# conv0, pool0, conv1, pool1, dense0, logits, and the backward's equals
ACTS = [BATCH * IMG, BATCH * IMG * 4, BATCH * 32 * 32 * 32 * 4, BATCH * 16 * 16 * 32 * 4,
        BATCH * 16 * 16 * 64 * 4, BATCH * 8 * 8 * 64 * 4, BATCH * 256 * 4, BATCH * CLASSES * 4]

bfc = []


def model_init():
    """jit(model.init)(rng, jnp.ones((1, 32, 32, 3))) on device 0."""
    b = bfc[0]
    rng = b.alloc(8, "other")                          # PRNGKey(0)
    dummy = b.alloc(IMG * 4, "activations")
    temp = b.alloc(sum(ACTS) // BATCH, "activations")
    leaves = [b.alloc(n, "weights") for n in PARAMS]
    for p, n in zip(leaves, PARAMS):
        job.zero(0, p, n)                              # lecun_normal / zeros, on device
    b.free(temp, dummy)
    return rng, leaves


def replicate(leaves):
    """flax.jax_utils.replicate -> jax.device_put_replicated per leaf."""
    out = [[], []]
    for p, n in zip(leaves, PARAMS):
        r0 = bfc[0].alloc(n, "weights")                # x[None] on devices[0]
        job.dtod(0, r0, p, n)
        r1 = bfc[1].alloc(n, "weights")                # batched_device_put to devices[1]
        job.peer(1, r1, 0, r0, n)
        out[0].append(r0)
        out[1].append(r1)
    return out


def tx_init(params):
    """jax.pmap(tx.init): scale_by_adam's mu, nu and count on each device."""
    state = []
    for d in range(DEVS):
        leaves = []
        for n in PARAMS + PARAMS + [4]:
            p = bfc[d].alloc(n, "optimizer")
            job.zero(d, p, n)
            leaves.append(p)
        state.append(leaves)
    return state


def device_put_sharded(nbytes_per_device):
    """Each host shard uploaded to its device (batched_device_put)."""
    out = []
    for d in range(DEVS):
        p = bfc[d].alloc(nbytes_per_device, "dataset")
        job.htod(d, p, nbytes_per_device)
        out.append(p)
    return out


def epoch_permutations(rng):
    """rngs = jax.random.split(rng, 2), sharded by pmap; p_permute(rngs)."""
    keys = bfc[0].alloc(16, "other")
    perms = []
    for d in range(DEVS):
        k = bfc[d].alloc(8, "other")
        if d == 0:
            job.dtod(0, k, keys, 8)
        else:
            job.peer(d, k, 0, keys, 8)
        sort_tmp = bfc[d].alloc(2 * Y_SHARD, "activations")   # the sort behind permutation
        perm = bfc[d].alloc(Y_SHARD, "other")
        bfc[d].free(sort_tmp, k)
        perms.append(perm)
    bfc[0].free(keys)
    return perms


def p_train_step(step, nccl, outs):
    """One pmapped execution on each device: params / opt state donated."""
    for d in range(DEVS):
        for p in outs[d]:                              # last step's loss, accuracy dropped
            bfc[d].free(p)
        outs[d] = []
    idx = []
    for d in range(DEVS):                              # np.full(2, step) sharded
        p = bfc[d].alloc(4, "other")
        job.htod(d, p, 4)
        idx.append(p)
    temps = []
    for d in range(DEVS):
        temps.append(bfc[d].alloc(sum(PARAMS) + sum(ACTS), "pool",
                                  parts=[(sum(PARAMS), "gradients"), (sum(ACTS), "activations")]))
    for d in range(DEVS):                              # lax.pmean(grads): ring through NCCL
        other = 1 - d
        job.peer(other, nccl[other], d, temps[d], min(NCCL_BUF, sum(PARAMS)))
    for d in range(DEVS):
        loss = bfc[d].alloc(4, "activations")
        acc = bfc[d].alloc(4, "activations")
        bfc[d].free(temps[d], idx[d])
        outs[d] = [loss, acc]
    for d in range(DEVS):                              # device_get(unreplicate(metrics))
        job.dtoh(d, outs[d][0], 4)
        job.dtoh(d, outs[d][1], 4)


def main():
    job.start(markers_default=False)
    job.open_devices(DEVS)
    for d in range(DEVS):
        bfc.append(vtc.BFC(job, d))
    x_sh = device_put_sharded(X_SHARD)                 # train_ds["image"]
    y_sh = device_put_sharded(Y_SHARD)                 # train_ds["label"]
    rng, leaves = model_init()
    params = replicate(leaves)
    bfc[0].free(*leaves)                               # the unreplicated tree dropped
    opt_state = tx_init(params)
    nccl, outs, perms, steps = None, [[], []], None, 0
    for _ in range(EPOCHS):
        if perms:
            for d in range(DEVS):
                bfc[d].free(perms[d])
        perms = epoch_permutations(rng)
        for _ in range(STEPS_PER_EPOCH):
            if nccl is None:                           # NCCL communicator, first collective
                nccl = [job.mem_alloc(d, NCCL_BUF, "other") for d in range(DEVS)]
            job.step(steps)
            p_train_step(steps, nccl, outs)
            steps += 1
    for d in range(DEVS):
        bfc[d].free(*outs[d], perms[d], x_sh[d], y_sh[d], *params[d], *opt_state[d])
    bfc[0].free(rng)
    for d in range(DEVS):
        bfc[d].settle()
        bfc[d].release()
        job.mem_free(d, nccl[d])
    for d in range(DEVS):
        job.line("finding whole_dataset_upload %d %d" % (d, X_SHARD))
        job.line("finding whole_dataset_upload %d %d" % (d, Y_SHARD))
    job.line("no_finding prefetch_depth")
    for d in range(DEVS):
        job.line("steps %d %d" % (d, steps))
    job.finish()


main()
