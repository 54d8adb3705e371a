#!/usr/bin/env python3
"""JAX `jit` with sharded parameters (FSDP-style: a 1-D mesh ("fsdp",) over
2 devices, `NamedSharding(mesh, P("fsdp"))` on every matrix, small leaves
replicated) for a GPT-2-small-shaped model, driven from ONE Python thread
with JAX's default allocator: XLA_PYTHON_CLIENT_PREALLOCATE=true and
XLA_PYTHON_CLIENT_MEM_FRACTION=.75, so each device's BFC allocator takes
0.75 x total memory in ONE cuMemAlloc at its first allocation and carves
every buffer out of it.

What is modelled (sources read: xla/pjrt/gpu/gpu_helpers.cc
`CreateBFCAllocator` (`DeviceMemoryUsage`, allocator_memory = total x
memory_fraction, `allow_growth = !preallocate`); tsl bfc_allocator.cc
(`Extend` once, 256-byte rounding, best-fit chunks); jax/_src/api.py
`device_put` with a `NamedSharding` (host array sliced per device, each
shard copied to its device; a replicated leaf copied to every device);
jax/_src/pjit.py `jit(..., in_shardings, out_shardings, donate_argnums=(0,
1))` (donated params and opt_state aliased to the outputs: updated in
place); optax `adamw` -> `scale_by_adam.init_fn` (mu, nu = zeros_like,
count = zeros([], int32)) jitted with the params' shardings (made on the
devices, nothing uploaded); XLA's buffer assignment (one temp allocation
per execution per device: the all-gathered weights, the full gradients
before their reduce-scatter, the activations); NCCL's communicator buffer
(cudaMalloc outside XLA's allocator) made at the first collective;
`float(loss)` reading the replicated loss back; orbax `save` at the end
(each shard copied to the host)).
No markers, driver by dlsym (XLA dlsyms it).

Truth per device: the BFC region is pool, its parts recorded: parameter
shards and replicated leaves weights, mu / nu / count optimizer, batch
shards prefetch (depth 1: one `device_put` per step, synchronous), the temp
buffer as three parts (gathered weights, gradients, activations), the loss
activations; the NCCL buffer other. No dataset; 10 steps on each device.
Coincidences: each device's token shard and target shard are one size
(8 x 1024 int32 = 32 KiB); mu and nu of a shard are the shard's size; the
gathered weights and the full gradients in the temp buffer are one size."""
import ctypes

import vtc

job = vtc.Job("jax_fsdp_prealloc", "dlsym", __doc__)
NDEV, STEPS = 2, 10
V, D, L, SEQ, GB = 50257, 768, 12, 1024, 16
ALIGN = 256


class BFCRegion:
    """One preallocated region per device, best-fit chunks."""

    def __init__(self, dev):
        self.dev = dev
        self.base = None
        self.chunks = []  # [off, size, used]

    def _extend(self):
        free_b, total_b = ctypes.c_size_t(0), ctypes.c_size_t(0)
        fn = job.lib.cuMemGetInfo_v2
        fn.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
        job.use(self.dev)
        if fn(ctypes.byref(free_b), ctypes.byref(total_b)) != 0:
            raise SystemExit("jax_fsdp_prealloc: cuMemGetInfo failed")
        size = int(total_b.value * 0.75) // ALIGN * ALIGN
        self.base = job.mem_alloc(self.dev, size, "pool")
        self.chunks = [[0, size, False]]

    def take(self, nbytes, cat):
        if self.base is None:
            self._extend()
        n = (nbytes + ALIGN - 1) // ALIGN * ALIGN
        best = None
        for i, c in enumerate(self.chunks):
            if not c[2] and c[1] >= n and (best is None or c[1] < self.chunks[best][1]):
                best = i
        if best is None:
            raise SystemExit("jax_fsdp_prealloc: region full")
        off, size, _ = self.chunks[best]
        self.chunks[best] = [off, n, True]
        if size > n:
            self.chunks.insert(best + 1, [off + n, size - n, False])
        p = self.base + off
        job.part(self.dev, p, nbytes, cat)
        return p

    def give(self, p):
        off = p - self.base
        for i, c in enumerate(self.chunks):
            if c[0] == off:
                c[2] = False
                job.part_free(self.dev, p)
                if i + 1 < len(self.chunks) and not self.chunks[i + 1][2]:
                    c[1] += self.chunks.pop(i + 1)[1]
                if i > 0 and not self.chunks[i - 1][2]:
                    self.chunks[i - 1][1] += self.chunks.pop(i)[1]
                return
        raise SystemExit("jax_fsdp_prealloc: unknown buffer")


def leaves():
    """(bytes, sharded) in pytree order (dict keys sorted: blocks, ln_f, wpe, wte)."""
    for _ in range(L):
        yield D * 4, False  # ln_1 scale
        yield D * 4, False
        yield D * 3 * D * 4, True  # c_attn kernel
        yield 3 * D * 4, False
        yield D * D * 4, True  # attn c_proj
        yield D * 4, False
        yield D * 4, False  # ln_2
        yield D * 4, False
        yield D * 4 * D * 4, True  # mlp c_fc
        yield 4 * D * 4, False
        yield 4 * D * D * 4, True  # mlp c_proj
        yield D * 4, False
    yield D * 4, False  # ln_f
    yield D * 4, False
    yield SEQ * D * 4, True  # wpe
    yield V * D * 4, True  # wte (50257 rows: shards of 25,129 and 25,128 rows)


def shard_bytes(n, sharded, dev):
    if not sharded:
        return n
    if n == V * D * 4:
        return (25129 if dev == 0 else 25128) * D * 4
    return n // NDEV


def main():
    job.start(markers_default=False)
    job.open_devices(NDEV)
    bfc = [BFCRegion(d) for d in range(NDEV)]
    tree = list(leaves())
    # device_put(params, shardings): leaf by leaf, each device's piece
    params = [[bfc[d].take(shard_bytes(n, s, d), "weights") for d in range(NDEV)] for n, s in tree]
    for (n, s), ps in zip(tree, params):
        for d in range(NDEV):
            job.htod(d, ps[d], shard_bytes(n, s, d))
    # jit(tx.init): mu, nu per leaf, count; made on the devices
    opt = []
    for part in ("mu", "nu"):
        for (n, s) in tree:
            for d in range(NDEV):
                p = bfc[d].take(shard_bytes(n, s, d), "optimizer")
                job.zero(d, p, shard_bytes(n, s, d))
                opt.append((d, p))
    for d in range(NDEV):
        opt.append((d, bfc[d].take(4, "optimizer")))
    full = sum(n for n, _ in tree)
    act = 1536 * vtc.MIB
    nccl = [None] * NDEV
    losses = [None] * NDEV
    per_dev = GB // NDEV
    for step in range(STEPS):
        job.step(step)
        batch = []
        for d in range(NDEV):  # device_put(batch, NamedSharding(mesh, P("fsdp")))
            for _ in ("tokens", "targets"):
                b = bfc[d].take(per_dev * SEQ * 4, "prefetch")
                job.htod(d, b, per_dev * SEQ * 4)
                batch.append((d, b))
        for d in range(NDEV):  # the executable on each device, in place
            if losses[d] is not None:
                bfc[d].give(losses[d])  # the previous step's loss dropped
            if nccl[d] is None:
                nccl[d] = job.mem_alloc(d, 4 * vtc.MIB, "other")
            temp = bfc[d].take(2 * full + act, "activations")
            job.records.pop()  # one temp allocation: recorded as its three parts
            job.part(d, temp, full, "weights")
            job.part(d, temp + full, full, "gradients")
            job.part(d, temp + 2 * full, act, "activations")
            losses[d] = bfc[d].take(4, "activations")
            for off in (0, full, 2 * full):
                job.part_free(d, temp + off)
            give_temp(bfc[d], temp)
        job.dtoh(0, losses[0], 4)  # float(loss)
        for d, b in batch:
            bfc[d].give(b)
    for (n, s), ps in zip(tree, params):  # orbax save: every shard to the host
        for d in range(NDEV):
            job.dtoh(d, ps[d], shard_bytes(n, s, d))
    for d in range(NDEV):
        job.mem_free(d, nccl[d])
        job.mem_free(d, bfc[d].base)
    job.line("no_finding whole_dataset_upload")
    for d in range(NDEV):
        job.line("finding prefetch_depth %d 1 %d" % (d, 2 * per_dev * SEQ * 4))
    for d in range(NDEV):
        job.line("steps %d %d" % (d, STEPS))
    job.finish()


def give_temp(region, temp):
    """Return the temp chunk without a part_free of its own (its parts are gone)."""
    off = temp - region.base
    for i, c in enumerate(region.chunks):
        if c[0] == off:
            c[2] = False
            if i + 1 < len(region.chunks) and not region.chunks[i + 1][2]:
                c[1] += region.chunks.pop(i + 1)[1]
            if i > 0 and not region.chunks[i - 1][2]:
                region.chunks[i - 1][1] += region.chunks.pop(i)[1]
            return


main()
