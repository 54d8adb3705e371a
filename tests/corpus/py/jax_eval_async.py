#!/usr/bin/env python3
"""JAX evaluation only, XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async (XLA's
GpuAllocatorConfig kCudaAsync: every device buffer a cuMemAllocAsync, freed
with cuMemFreeAsync when the Python array is collected). A trained ViT is
restored (orbax CheckpointManager.restore -> jax.device_put per leaf: one
buffer and one upload each, in tree order). The evaluation set is put on the
device whole: jnp.asarray(x_eval) uploads the uint8 images, jnp.asarray
(y_eval) the int32 labels, then `x / 255.0` makes the float32 copy ON the
device and the uint8 buffer is dropped. evaluate() runs a jitted eval_step
per batch: lax.dynamic_slice of the on-device arrays (new buffers, no host
copy), the forward's temp buffer (XLA's one allocation for all
intermediates of the executable), the logits, and a 4-byte count of correct
predictions read back (device_get). No optimizer, no markers, driver by
dlsym (XLA dlsyms the driver).

Truth: parameters weights; the uint8 images, the float32 images and the
labels dataset; whole_dataset_upload IS true: the whole evaluation set is
on the device at once and came from the host in one upload per array (the
uint8 images, 29,491,200 B, and the labels, 38,400 B: those are the arrays
uploaded whole; the float32 array is their on-device derivative, dataset
too, but never uploaded); slices, the temp buffer, logits and counts
activations; no prefetch (nothing uploaded per batch); 0 steps (no
optimizer). Coincidence: an image slice (192 x 32 x 32 x 3 float32) is
exactly an MLP kernel's bytes (384 x 1536 float32)."""
import vtc

job = vtc.Job("jax_eval_async", "dlsym", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
N, BATCH, PIXELS, CLASSES = 9600, 192, 32 * 32 * 3, 100
D, MLP_D, BLOCKS, PATCHES = 384, 1536, 8, 64


def param_leaves():
    """(path, bytes) in tree order, float32."""
    yield "embedding/kernel", 4 * 4 * 3 * D * 4
    yield "embedding/bias", D * 4
    yield "cls", D * 4
    yield "pos_embedding", (PATCHES + 1) * D * 4
    for b in range(BLOCKS):
        for name, n in (("LayerNorm_0/scale", D), ("LayerNorm_0/bias", D),
                        ("MultiHeadDotProductAttention_0/qkv/kernel", D * 3 * D),
                        ("MultiHeadDotProductAttention_0/out/kernel", D * D),
                        ("LayerNorm_1/scale", D), ("LayerNorm_1/bias", D),
                        ("MlpBlock_0/Dense_0/kernel", D * MLP_D), ("MlpBlock_0/Dense_0/bias", MLP_D),
                        ("MlpBlock_0/Dense_1/kernel", MLP_D * D), ("MlpBlock_0/Dense_1/bias", D)):
            yield "encoderblock_%d/%s" % (b, name), n * 4
    yield "head/kernel", D * CLASSES * 4
    yield "head/bias", CLASSES * 4


def device_put(nbytes, cat):
    buf = job.mem_alloc_async(0, nbytes, cat)
    job.htod(0, buf, nbytes)
    return buf


def restore(manager_step):
    return [device_put(n, "weights") for _path, n in param_leaves()]


def asarray(nbytes):
    return device_put(nbytes, "dataset")


def true_divide(src, nbytes_out):
    return job.mem_alloc_async(0, nbytes_out, "dataset")


def dynamic_slice(nbytes):
    return job.mem_alloc_async(0, nbytes, "activations")


def eval_step(x, y, i):
    xb = dynamic_slice(BATCH * PIXELS * 4)
    yb = dynamic_slice(BATCH * 4)
    temp = job.mem_alloc_async(0, BATCH * (PATCHES + 1) * MLP_D * 4, "activations")
    logits = job.mem_alloc_async(0, BATCH * CLASSES * 4, "activations")
    correct = job.mem_alloc_async(0, 4, "activations")
    job.mem_free_async(0, temp)  # freed when the executable finishes
    return xb, yb, logits, correct


def device_get(buf):
    job.dtoh(0, buf, 4)


def evaluate(x, y):
    for i in range(N // BATCH):
        bufs = eval_step(x, y, i)
        device_get(bufs[-1])
        for b in bufs:  # the step's outputs collected by Python
            job.mem_free_async(0, b)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    params = restore(manager_step=30000)
    x_u8 = asarray(N * PIXELS)
    y = asarray(N * 4)
    x = true_divide(x_u8, N * PIXELS * 4)
    job.mem_free_async(0, x_u8)  # the uint8 array goes out of scope
    evaluate(x, y)
    for b in [x, y] + params:
        job.mem_free_async(0, b)
    job.line("finding whole_dataset_upload 0 %d" % (N * PIXELS))
    job.line("finding whole_dataset_upload 0 %d" % (N * 4))
    job.line("no_finding prefetch_depth")
    job.line("steps 0 0")
    job.finish()


main()
