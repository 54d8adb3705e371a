#!/usr/bin/env python3
"""JAX / Flax language-model training with gradient accumulation through
`optax.MultiSteps(optax.adamw(3e-4), every_k_schedule=4)`, the step jitted
with `donate_argnums=(0, 1)`, under XLA_PYTHON_CLIENT_ALLOCATOR=platform
(no BFC arena: every device buffer is its own cuMemAlloc, freed with
cuMemFree when the buffer dies).

What is modelled (sources read: xla/pjrt/gpu/gpu_helpers.h and
se_gpu_pjrt_client.cc (`GpuAllocatorConfig::Kind::kPlatform`: the
StreamExecutor's own allocator, one driver allocation per buffer, no
preallocation); the XLA aliasing documentation and jax's buffer-donation
notes (`donate_argnums`: an input buffer donated to an output of the same
shape holds that output, so the updated params and optimizer state are
written into the buffers they were read from and no new ones are made;
outputs not aliased (the loss) get fresh buffers); XLA buffer assignment
(all of an executable's intermediates in ONE temp allocation per run,
freed when the run ends); optax `MultiSteps` / `MultiStepsState`
(`mini_step`, `gradient_step` int32 scalars, `inner_opt_state`,
`acc_grads = zeros_like(params)`; `update` runs the inner adamw only
every k-th call, inside a `lax.cond`, so every call runs the same
executable); optax `scale_by_adam` init (mu, nu, count); flax
`Module.init` under jit (parameters are the executable's outputs, made on
the device, nothing uploaded)):
  - `params = jax.jit(model.init)(rng, jnp.ones((1, 512), int32))`: the
    dummy tokens uploaded, one temp buffer, one output buffer per
    parameter leaf;
  - `opt_state = jax.jit(tx.init)(params)`: acc_grads, mu, nu and three
    int32 counters made on the device;
  - 32 calls of `train_step(params, opt_state, batch)`: per call the
    token and target arrays `device_put` (the loop's names rebound to the
    next host batch first), the temp buffer (the micro-batch's gradients
    and the activations), a new 4-byte loss; params and opt_state updated
    in place (donated);
  - every 16 calls `eval_step(params, batch)` (not donating) on one
    evaluation batch: its own temp buffer, its loss; `float(loss)` reads
    the losses back.
No markers (JAX calls none), driver by dlsym (XLA dlsyms it).

Truth: parameters weights; acc_grads gradients (the accumulated gradient,
kept across calls); mu, nu and the counters optimizer; token and target
uploads prefetch (depth 1); each train step's temp buffer pool, its parts
gradients (the micro-batch's gradients, the params' bytes) and
activations (the rest); eval temp buffers, init's temp buffer, losses and
the dummy tokens activations. No dataset; 8 optimizer steps (32 calls of
one executable, the inner adamw applied on every 4th). Coincidences: acc_
grads, mu and nu are each the params' size, as is the temp buffer's
gradient part; the token and target arrays are one size (8 x 512 int32 =
16 KiB); the position embedding (512 x 512 float32) is exactly one
attention output kernel; the dummy tokens (2 KiB) are one layer-norm
scale."""
import vtc

job = vtc.Job("jax_multisteps_donate", "dlsym", __doc__)
V, D, L, SEQ, B = 32000, 512, 8, 512, 8
CALLS, K, EVAL_EVERY = 32, 4, 16
TOK = B * SEQ * 4
ACT_TRAIN = 96 * vtc.MIB
ACT_EVAL = 24 * vtc.MIB


def alloc(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def device_put(n, cat):
    return job.upload(0, n, cat)


def leaves():
    out = [V * D * 4, SEQ * D * 4]  # wte, wpe
    for _ in range(L):
        out += [D * 4, D * 4, D * 3 * D * 4, 3 * D * 4, D * D * 4, D * 4,
                D * 4, D * 4, D * 4 * D * 4, 4 * D * 4, 4 * D * D * 4, D * 4]
    out += [D * 4, D * 4]  # ln_f
    return out


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    sizes = leaves()
    pbytes = sum(sizes)
    # jax.jit(model.init)(rng, dummy)
    dummy = device_put(SEQ * 4, "activations")
    tmp = alloc(8 * vtc.MIB, "activations")
    params = [alloc(n, "weights") for n in sizes]
    free(tmp)
    free(dummy)
    # jax.jit(tx.init)(params): MultiStepsState(mini_step, gradient_step,
    # inner_opt_state=(ScaleByAdamState(count, mu, nu), ...), acc_grads)
    mini_step = alloc(4, "optimizer")
    gradient_step = alloc(4, "optimizer")
    count = alloc(4, "optimizer")
    mu = [alloc(n, "optimizer") for n in sizes]
    nu = [alloc(n, "optimizer") for n in sizes]
    acc = [alloc(n, "gradients") for n in sizes]
    for p, n in zip(mu + nu + acc, sizes * 3):
        job.zero(0, p, n)
    for p in (mini_step, gradient_step, count):
        job.zero(0, p, 4)
    loss = None
    x = y = None
    losses = []
    for call in range(CALLS):
        if x is not None:
            free(x, y)  # `for x, y in loader`: names rebound to host arrays
        x = device_put(TOK, "prefetch")
        y = device_put(TOK, "prefetch")
        # train_step: one temp allocation, a new loss; donated params /
        # opt_state written in place
        total = pbytes + ACT_TRAIN
        temp = alloc(total, "pool")
        job.part(0, temp, pbytes, "gradients")
        job.part(0, temp + pbytes, ACT_TRAIN, "activations")
        new_loss = alloc(4, "activations")
        job.part_free(0, temp)
        job.part_free(0, temp + pbytes)
        free(temp)
        if loss is not None:
            losses.append(loss)  # kept by the metrics list until logged
        loss = new_loss
        if (call + 1) % EVAL_EVERY == 0:
            ex = device_put(TOK, "prefetch")
            ey = device_put(TOK, "prefetch")
            etemp = alloc(ACT_EVAL, "activations")
            eloss = alloc(4, "activations")
            free(etemp)
            free(ex, ey)
            job.dtoh(0, eloss, 4)  # float(eval_loss)
            free(eloss)
            for lp in losses + [loss]:
                job.dtoh(0, lp, 4)  # jax.device_get(metrics)
            free(*losses)
            losses = []
    free(x, y, loss, *losses)
    free(*params, *mu, *nu, *acc, mini_step, gradient_step, count)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (2 * TOK))
    job.line("steps 0 %d" % (CALLS // K))
    job.finish()


main()
