#!/usr/bin/env python3
"""JAX MLP trained with momentum SGD in one jitted step. --feed whole puts
the whole dataset on the GPU with jax.device_put once and slices it inside
the step; --feed stream device_puts one batch per step (its twin).

Truth: dataset, parameters and optimizer state (momentum) with their device
buffer addresses (unsafe_buffer_pointer) and sizes; gradients live only
inside the compiled step, so only their sizes are known. XLA's allocator
settings are reported: by default it preallocates most of the GPU as one
pool, XLA_PYTHON_CLIENT_ALLOCATOR=platform gives one allocation a buffer."""
import os

import vt_job as J

ALLOCATOR_ENV = ("XLA_PYTHON_CLIENT_ALLOCATOR", "XLA_PYTHON_CLIENT_PREALLOCATE",
                 "XLA_PYTHON_CLIENT_MEM_FRACTION")


def gpu_probe(jax):
    def probe():
        devices = jax.devices("gpu")  # raises RuntimeError naming the platforms present
        return bool(devices), str(devices[0]) if devices else "jax.devices('gpu') is empty"
    return probe


def pointer(array):
    try:
        return array.unsafe_buffer_pointer()
    except Exception:  # not a single-device array, or an older jax
        return None


def entries(named):
    return [J.tensor(name, a.nbytes, ptr=pointer(a), shape=a.shape, dtype=a.dtype) for name, a in named]


def init_params(args, np, jax, device):
    rng = np.random.default_rng(J.SEED + 1)
    def dense(fan_in, fan_out):
        scale = np.float32(1.0 / np.sqrt(fan_in))
        return (rng.standard_normal((fan_in, fan_out), dtype=np.float32) * scale,
                np.zeros((fan_out,), np.float32))
    w1, b1 = dense(args.features, args.hidden)
    w2, b2 = dense(args.hidden, args.classes)
    return {name: jax.device_put(value, device) for name, value in
            (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))}


def make_step(jax, args, whole):
    jnp = jax.numpy

    def loss_fn(params, xb, yb):
        hidden = jax.nn.relu(xb @ params["w1"] + params["b1"])
        logits = hidden @ params["w2"] + params["b2"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), yb[:, None], axis=1))

    def update(params, velocity, xb, yb):
        loss, grads = jax.value_and_grad(loss_fn)(params, xb, yb)
        velocity = jax.tree_util.tree_map(lambda v, g: 0.9 * v + g, velocity, grads)
        params = jax.tree_util.tree_map(lambda p, v: p - 0.05 * v, params, velocity)
        return params, velocity, loss

    if not whole:
        return jax.jit(update)

    def sliced(params, velocity, x_all, y_all, start):
        xb = jax.lax.dynamic_slice_in_dim(x_all, start, args.batch)
        yb = jax.lax.dynamic_slice_in_dim(y_all, start, args.batch)
        return update(params, velocity, xb, yb)
    return jax.jit(sliced)


def main():
    args = J.parse_args(J.common_args(__doc__.splitlines()[0], feeds=("whole", "stream")))
    # XLA's autotuner picks GEMM algorithms by timing them, so the result is
    # not bit-reproducible: on an H200 with the platform allocator, plain runs
    # of the stream job gave two checksums and traced runs three. Without it
    # plain and traced runs were identical. Must precede the backend's start.
    if "xla_gpu_autotune_level" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_gpu_autotune_level=0").strip()
    np = J.import_framework("numpy", "numpy")
    jax = J.import_framework("jax", "jax", "JAX")
    gpu = J.require_gpu("JAX", gpu_probe(jax), args.allow_cpu)
    device = jax.devices("gpu" if gpu else "cpu")[0]

    x, y = J.dataset(args, np)
    whole = args.feed == "whole"
    params = init_params(args, np, jax, device)
    velocity = jax.tree_util.tree_map(jax.numpy.zeros_like, params)
    step_fn = make_step(jax, args, whole)
    if whole:
        x_dev, y_dev = jax.device_put(x, device), jax.device_put(y, device)
        dataset = entries((("x", x_dev), ("y", y_dev)))

    steps = args.samples // args.batch
    epoch_losses = []
    for _ in range(args.epochs):
        losses = []
        for step in range(steps):
            lo, hi = step * args.batch, (step + 1) * args.batch
            if whole:
                params, velocity, loss = step_fn(params, velocity, x_dev, y_dev, lo)
            else:
                xb, yb = jax.device_put(x[lo:hi], device), jax.device_put(y[lo:hi], device)
                params, velocity, loss = step_fn(params, velocity, xb, yb)
            losses.append(loss)
        epoch_losses.append(float(np.mean(np.asarray(jax.device_get(losses), dtype=np.float64))))
    checksum = float(sum(np.abs(np.asarray(v, dtype=np.float64)).sum() for v in params.values()))

    if not whole:
        dataset = [J.tensor("x", x.nbytes, shape=x.shape, dtype=x.dtype),
                   J.tensor("y", y.nbytes, shape=y.shape, dtype=y.dtype)]
    J.emit_truth(
        framework="jax", version=jax.__version__, device=str(device), feed=args.feed,
        allocator={name: os.environ.get(name, "") for name in ALLOCATOR_ENV},
        dataset=dataset, dataset_on_device=whole,
        params=entries(sorted(params.items())),
        grads=[J.tensor(name, value.nbytes) for name, value in sorted(params.items())],
        optimizer_state=entries(sorted((f"{n}.momentum", v) for n, v in velocity.items())),
        batches={"count": steps * args.epochs, "bytes": args.batch * (x.shape[1] * x.itemsize + y.itemsize),
                 "uploaded_each_step": not whole})
    J.emit_result(losses=J.exact(epoch_losses), checksum=J.exact([checksum])[0])


if __name__ == "__main__":
    J.run(main)
