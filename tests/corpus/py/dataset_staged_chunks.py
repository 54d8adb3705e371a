#!/usr/bin/env python3
"""A PyTorch image classifier that keeps its whole dataset on the GPU (the
airbench / hlb-CIFAR10 style `CifarLoader`), filled in chunks through a
reused pinned staging buffer, with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one
cudaMalloc per tensor).

What is modelled (sources read: torch/storage.py `pin_memory`,
torch/_tensor.py `Tensor.copy_` with `non_blocking=True` from pinned memory
(cudaMemcpyAsync), torch/nn/modules/module.py `Module.to` -> `_apply(
convert)`, torch/optim/adam.py `_init_group` (exp_avg / exp_avg_sq at the
first step), `Optimizer.zero_grad(set_to_none=True)`):
  - `images = torch.empty((N, 3, 32, 32), dtype=torch.uint8, device="cuda")`,
    then for each chunk of the memory-mapped file: the chunk copied into a
    reused 8 MiB pinned host buffer and `images[i:j].copy_(staging[:n],
    non_blocking=True)` (several host-to-device copies at offsets of one
    device tensor); the labels uploaded in one copy; the validation set
    filled the same way after the training set;
  - the model `.to(device)` (one upload per parameter);
  - each epoch: `torch.randperm(N, device="cuda")`; per step the batch
    gathered on the device (`images[idx]`, `labels[idx]`), converted to
    float and normalised, flipped (new tensors), forward, backward (.grads),
    Adam (state at the first step), zero_grad(set_to_none=True);
  - after each epoch an evaluation pass over the validation set in slices
    (views: no allocation), under no_grad.
Markers on, driver by cuGetProcAddress (libcudart).

Truth: the four arrays dataset, each uploaded whole (the training images in
11 chunks): whole_dataset_upload of 92,160,000 B, 240,000 B, 18,432,000 B
and 48,000 B; parameters weights; .grads gradients; Adam state optimizer;
the permutation, gathered batches and every forward tensor activations (a
batch gathered on the device is activations, README convention); no
prefetch; 60 steps (2 epochs of 30). Coincidence: the gathered uint8 batch
(1000 x 3 x 32 x 32) is exactly the 768 x 1000 fc weight (3,072,000 B), and
so its gradient."""
import vtc

job = vtc.Job("dataset_staged_chunks", "getproc", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
N_TRAIN, N_VAL, PIX = 30000, 6000, 3 * 32 * 32
STAGING = 8 * MIB
BATCH, EPOCHS = 1000, 2
STEPS_PER_EPOCH = N_TRAIN // BATCH


def param_shapes():
    """(name, bytes) float32, in registration order."""
    chans = ((3, 64), (64, 128), (128, 256), (256, 256), (256, 384), (384, 768))
    for i, (cin, cout) in enumerate(chans):
        yield "conv%d.weight" % i, 3 * 3 * cin * cout * 4
        yield "bn%d.weight" % i, cout * 4
        yield "bn%d.bias" % i, cout * 4
    yield "fc.weight", 768 * 1000 * 4
    yield "fc.bias", 1000 * 4


def empty(nbytes, cat):
    return job.mem_alloc(0, nbytes, cat)


def fill_from_file(dst, nbytes, staging):
    """for i in range(0, n, chunk): staging[:k] = mm[i:i+k]; dst[i:i+k].copy_(staging[:k])"""
    for off in range(0, nbytes, STAGING):
        k = min(STAGING, nbytes - off)
        job.htod(0, dst + off, k, src=staging)


def CifarLoader(n, staging):
    images = empty(n * PIX, "dataset")
    fill_from_file(images, n * PIX, staging)
    labels = empty(n * 8, "dataset")
    job.htod(0, labels, n * 8)
    return images, labels


def to_device(shapes):
    ps = []
    for _name, n in shapes:
        p = empty(n, "weights")
        job.htod(0, p, n)
        ps.append(p)
    return ps


def forward(nbatch):
    acts = []
    hw = 32 * 32
    for i, c in enumerate((64, 128, 256, 256, 384, 768)):
        acts.append(empty(nbatch * c * hw * 4 // (4 ** (i // 2)), "activations"))
    acts.append(empty(nbatch * 1000 * 4, "activations"))  # logits
    return acts


def train_step(s, params, shapes, state, images, labels, perm):
    xb_u8 = empty(BATCH * PIX, "activations")  # images[idx]
    yb = empty(BATCH * 8, "activations")  # labels[idx]
    xb = empty(BATCH * PIX * 4, "activations")  # .float().div(255).sub(mean).div(std)
    job.mem_free(0, xb_u8)
    xf = empty(BATCH * PIX * 4, "activations")  # batch_flip_lr
    job.mem_free(0, xb)
    acts = forward(BATCH)
    loss = empty(4, "activations")
    grads = [empty(n, "gradients") for _name, n in reversed(shapes)]  # backward
    for a in reversed(acts):
        job.mem_free(0, a)
    if not state:
        for _name, n in shapes:
            m, v = empty(n, "optimizer"), empty(n, "optimizer")
            job.zero(0, m, n)
            job.zero(0, v, n)
            state += [m, v]
    job.dtoh(0, loss, 4)  # loss.item() for the log
    for g in grads:
        job.mem_free(0, g)
    for p in (loss, xf, yb):
        job.mem_free(0, p)


def evaluate(val_images, val_labels):
    for off in range(0, N_VAL, 2000):
        acts = forward(2000)
        correct = empty(8, "activations")
        job.dtoh(0, correct, 8)
        for a in acts + [correct]:
            job.mem_free(0, a)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    staging = job.pinned(STAGING)
    images, labels = CifarLoader(N_TRAIN, staging)
    val_images, val_labels = CifarLoader(N_VAL, staging)
    job.call("cuMemFreeHost", staging)
    shapes = list(param_shapes())
    params = to_device(shapes)
    state = []
    s = 0
    for _epoch in range(EPOCHS):
        perm = empty(N_TRAIN * 8, "activations")  # torch.randperm(N, device="cuda")
        for _ in range(STEPS_PER_EPOCH):
            job.step(s)
            train_step(s, params, shapes, state, images, labels, perm)
            s += 1
        job.mem_free(0, perm)
        evaluate(val_images, val_labels)
    for p in params + state + [images, labels, val_images, val_labels]:
        job.mem_free(0, p)
    for n in (N_TRAIN * PIX, N_TRAIN * 8, N_VAL * PIX, N_VAL * 8):
        job.line("finding whole_dataset_upload 0 %d" % n)
    job.line("no_finding prefetch_depth")
    job.line("steps 0 %d" % s)
    job.finish()


main()
