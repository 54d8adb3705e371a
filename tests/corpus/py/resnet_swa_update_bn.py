#!/usr/bin/env python3
"""CIFAR-10 ResNet-18 (3 x 3 stem, BasicBlocks 64-128-256-512, BatchNorm,
`ReLU(inplace=True)`) trained with SGD (momentum 0.9, nesterov, weight
decay 5e-4) and Stochastic Weight Averaging: `swa_utils.AveragedModel`
made before training and updated after every epoch, a validation pass under `torch.no_grad()` every 10 steps,
`swa_utils.update_bn` over the training loader at the end and a final
evaluation of the averaged model, with
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (cudaMallocAsync /
cudaFreeAsync per tensor: cuMemAllocAsync / cuMemFreeAsync).

What is modelled (sources read: torch/optim/swa_utils.py (`AveragedModel.
__init__`: `deepcopy(model)`, every parameter and buffer cloned on the
device; `n_averaged` a long tensor made where `device` says, on the HOST
when device is None; `update_parameters`: the first call copies the
parameters in, later ones call `get_swa_multi_avg_fn()` ->
`_foreach_lerp_(averaged, current, 1 / (n_averaged + 1))`, with
`n_averaged.to(device)` uploaded each call and `n_averaged + 1`, its
reciprocal made on the device; `update_bn`, under no_grad: every
`_BatchNorm`'s `reset_running_stats()` and `momentum = None`, then a
forward of every training batch in train mode, the batch moved to the
device); torch/nn/modules/batchnorm.py (running_mean, running_var,
num_batches_tracked buffers; train-mode forward updates them in place;
cudnn saves mean and inverse std per forward); torch/optim/sgd.py
`_multi_tensor_sgd` (weight decay: `grads = _foreach_add(grads, params,
alpha=wd)`, new tensors; `momentum_buffer = clone(grad)` at the first
step, then `_foreach_mul_` / `_foreach_add_`; nesterov
`_foreach_add_(grads, bufs, alpha=momentum)` on the new tensors);
`zero_grad()` (set_to_none: grads freed before each forward); the
validation loop (`model.eval()`, `with torch.no_grad()`, 2 batches of 384
images uploaded one at a time, intermediates freed as soon as the next
layer is done, `(pred == y).sum().item()`)).
  - 2 epochs x 20 steps of 128 images (uint8 on the host, normalised
    float32 uploaded with int64 labels);
  - `AveragedModel(model)` before the first step; a validation pass after
    steps 10, 20, 30, 40; SWA updates at the end of both epochs
    (`swa_start = 0`: the first copies, the second averages);
  - `update_bn(train_loader, swa_model)` over 20 batches, then the SWA
    model evaluated on the 2 validation batches.
Markers on (one per optimizer step), driver by cuGetProcAddress.

Truth: parameters, BN buffers and the SWA copies (parameters, buffers)
weights; momentum buffers optimizer; gradients gradients; the uploaded
training, update_bn and validation batches and labels prefetch (depth 1:
one batch on the device at a time); the `n_averaged` uploads other; every
forward/backward intermediate, SGD's weight-decayed gradient
temporaries, the lerp weights and the accuracy counts activations. No
dataset, no whole_dataset_upload. 40 steps (validation and update_bn
forwards are not steps). Coincidences: a validation batch (384 x 3 x 32 x
32 float32 = 4,718,592 B) is exactly layer4.0.conv1's weight (512 x 256 x
3 x 3); a label batch (128 int64 = 1,024 B) is a 256-channel BN weight,
bias, running mean or var; SGD's temporaries and momentum buffers are
their parameters' sizes; the SWA copy of every tensor is its original's
size."""
import vtc

job = vtc.Job("resnet_swa_update_bn", "getproc", __doc__)
B, VAL_B, STEPS_PER_EPOCH, EPOCHS, VAL_EVERY, VAL_BATCHES = 128, 384, 20, 2, 10, 2
IMG = 3 * 32 * 32
SWA_START = 0


def alloc(n, cat):
    return job.mem_alloc_async(0, n, cat)


def free(*ptrs):
    for p in ptrs:
        job.mem_free_async(0, p)


def conv_layers():
    """(cin, cout, k, spatial out) of every conv, torchvision BasicBlock order."""
    out = [(3, 64, 3, 32)]
    cin = 64
    for cout, hw in ((64, 32), (128, 16), (256, 8), (512, 4)):
        for blk in range(2):
            out.append((cin, cout, 3, hw))
            out.append((cout, cout, 3, hw))
            if blk == 0 and cin != cout:
                out.append((cin, cout, 1, hw))               # downsample
            cin = cout
    return out


CONVS = conv_layers()


def param_sizes():
    p = []
    for cin, cout, k, _hw in CONVS:
        p += [cout * cin * k * k * 4, cout * 4, cout * 4]   # conv weight, bn weight, bn bias
    return p + [512 * 10 * 4, 10 * 4]                     # fc


def buffer_sizes():
    b = []
    for _cin, cout, _k, _hw in CONVS:
        b += [cout * 4, cout * 4, 8]                      # running_mean, running_var, num_batches
    return b


PARAMS, BUFFERS = param_sizes(), buffer_sizes()


def upload(n, cat):
    p = alloc(n, cat)
    job.htod(0, p, n)
    return p


class Model:
    def __init__(self, params, buffers):
        self.params, self.buffers = params, buffers

    def forward(self, n, keep):
        saved = []
        for _cin, cout, _k, hw in CONVS:
            conv = alloc(n * cout * hw * hw * 4, "activations")
            bn = alloc(n * cout * hw * hw * 4, "activations")  # relu in place on it
            stats = [alloc(cout * 4, "activations"), alloc(cout * 4, "activations")]
            if keep:
                saved += [conv, bn] + stats
            else:
                free(conv, *stats)
                if saved:
                    free(*saved)
                saved = [bn]
        pooled = alloc(n * 512 * 4, "activations")
        logits = alloc(n * 10 * 4, "activations")
        if keep:
            return saved + [pooled], logits
        free(*saved, pooled)
        return [], logits


def backward(saved):
    grads = []
    for i in reversed(range(len(PARAMS))):
        grads.append(alloc(PARAMS[i], "gradients"))
        if saved and i % 3 == 0:
            free(*saved[-4:])
            del saved[-4:]
    free(*saved)
    return grads[::-1]


class SGD:
    def __init__(self):
        self.momentum = None

    def step(self, params, grads):
        decayed = [alloc(n, "activations") for n in PARAMS]    # _foreach_add(grads, params)
        if self.momentum is None:
            self.momentum = []
            for g, n in zip(decayed, PARAMS):                  # clone(grad)
                m = alloc(n, "optimizer")
                job.dtod(0, m, g, n)
                self.momentum.append(m)
        free(*decayed)


class AveragedModel:
    def __init__(self, model):
        copies = []
        for src, n in zip(model.params + model.buffers, PARAMS + BUFFERS):  # deepcopy
            p = alloc(n, "weights")
            job.dtod(0, p, src, n)
            copies.append(p)
        self.model = Model(copies[:len(PARAMS)], copies[len(PARAMS):])
        self.n_averaged = 0                                    # a host tensor

    def update_parameters(self, model):
        n_avg = upload(8, "other")                             # n_averaged.to(device)
        if self.n_averaged == 0:
            for dst, src, n in zip(self.model.params, model.params, PARAMS):
                job.dtod(0, dst, src, n)
        else:
            plus = alloc(8, "activations")                     # n_averaged + 1
            weight = alloc(4, "activations")                   # 1 / (...)
            free(plus, weight)
        free(n_avg)
        self.n_averaged += 1


def validate(model):
    for _ in range(VAL_BATCHES):
        x = upload(VAL_B * IMG * 4, "prefetch")
        y = upload(VAL_B * 8, "prefetch")
        _s, logits = model.forward(VAL_B, keep=False)
        pred = alloc(VAL_B * 8, "activations")
        correct = alloc(8, "activations")
        job.dtoh(0, correct, 8)                                # .item()
        free(logits, pred, correct, x, y)


def update_bn(swa):
    for buf, n in zip(swa.model.buffers, BUFFERS):             # reset_running_stats
        job.zero(0, buf, n)
    for _ in range(STEPS_PER_EPOCH):
        x = upload(B * IMG * 4, "prefetch")                    # input.to(device)
        _s, logits = swa.model.forward(B, keep=False)
        free(logits, x)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    model = Model([upload(n, "weights") for n in PARAMS],     # model.to(device)
                  [upload(n, "weights") for n in BUFFERS])
    opt = SGD()
    swa = AveragedModel(model)
    step = 0
    grads = None
    for epoch in range(EPOCHS):
        for _ in range(STEPS_PER_EPOCH):
            job.step(step)
            x = upload(B * IMG * 4, "prefetch")
            y = upload(B * 8, "prefetch")
            if grads:
                free(*grads)                                   # zero_grad()
            saved, logits = model.forward(B, keep=True)
            loss = alloc(4, "activations")
            grads = backward(saved + [logits])
            opt.step(model.params, grads)
            free(loss, x, y)
            step += 1
            if step % VAL_EVERY == 0:
                validate(model)
        if epoch >= SWA_START:
            swa.update_parameters(model)
    free(*grads)
    update_bn(swa)
    validate(swa.model)
    free(*opt.momentum, *swa.model.params, *swa.model.buffers, *model.params, *model.buffers)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (B * IMG * 4 + B * 8))
    job.line("steps 0 %d" % step)
    job.finish()


main()
