#!/usr/bin/env python3
"""MoCo v2 contrastive pretraining of a ResNet-50 on one device (moco's
builder without the DDP-only ShuffleBN and all-gather), the model built
under `with torch.device("cuda"):` so that its tensors are made on the
device, with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one cudaMalloc per tensor).

What is modelled (sources read: moco/builder.py `MoCo.__init__`
(`register_buffer("queue", torch.randn(dim, K))`, `self.queue =
nn.functional.normalize(self.queue, dim=0)`, `queue_ptr`),
`_momentum_update_key_encoder` (`param_k.data = param_k.data * self.m +
param_q.data * (1. - self.m)`: three new tensors, the old key parameter
freed), `_dequeue_and_enqueue` (`ptr = int(self.queue_ptr)`, `self.queue[:,
ptr:ptr + batch_size] = keys.T`: a copy kernel into the queue), `forward`
(`l_neg = torch.einsum('nc,ck->nk', [q, self.queue.clone().detach()])`,
`labels = torch.zeros(N, dtype=torch.long).cuda()`); main_moco.py `train`
(`images[0].cuda(non_blocking=True)`, `images[1].cuda(...)`,
`optimizer.zero_grad()` keeping the grads); torch/nn/functional.py
`normalize`; torch/_tensor.py `Tensor.__deepcopy__` and torch/nn/parameter.py
`Parameter.__deepcopy__` (a device clone per tensor); torch/optim/sgd.py
`_multi_tensor_sgd` (weight decay: `torch._foreach_add(grads, params)`, new
tensors every step; `momentum_buffer` = clone at the first step);
torchvision/models/resnet.py `Bottleneck`):
  - encoder_q (ResNet-50 with the MoCo v2 MLP head, dim 128) made on the
    device: parameters and BatchNorm buffers allocated and initialised by
    kernels (nothing uploaded); encoder_k = copy.deepcopy(encoder_q): every
    parameter and buffer cloned device-to-device (moco's builder constructs
    encoder_k a second time and copies `param_q.data` into it; MoCo
    re-implementations build it with `copy.deepcopy`, as here);
  - the queue: randn (128 x 65536 float32, 32 MiB), normalised into a new
    tensor (the column norms and their clamp in between), the randn freed;
    queue_ptr (8 B);
  - per step: two augmented views uploaded (pinned, non_blocking); the
    query forward (saved tensors); under no_grad the key encoder's
    momentum update (per parameter: k*m, q*(1-m), their sum becomes the
    new key parameter, the temporaries and the old key parameter freed),
    the key forward (each block's output freed once the next is made),
    the normalised keys kept; l_pos, the queue's clone (saved for the
    backward of the einsum), l_neg, the concatenated logits, the zero
    labels made on the host and uploaded; the enqueue reads queue_ptr back;
    cross entropy, backward (`.grad`s made at the first backward and kept:
    `zero_grad()` zeroes them), SGD with momentum and weight decay.
No markers, driver by dlsym.

Truth: encoder_q's parameters and BatchNorm buffers weights; encoder_k's
parameters and buffers weights (the momentum copy, like EMA weights: a new
allocation per parameter every step); the queue and queue_ptr other (a
ring of features kept across steps and overwritten in place, like the KV
cache of an inference server: not a parameter, not data); the queue's
per-step clone activations; `.grad`s gradients; momentum buffers optimizer;
the weight-decayed gradients of `_foreach_add` activations (transient);
the two views and the zero labels prefetch (depth 1); every forward tensor
activations. No dataset; 8 steps. Coincidences: the queue's clone is
exactly the queue (32 MiB); l_neg (32 x 65536 float32, 8 MiB) is exactly
layer4's downsample conv weight (2048 x 1024 x 1 x 1 float32), its
gradient, its momentum buffer and its key copy."""
import vtc

job = vtc.Job("moco_queue", "dlsym", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
DIM, K = 128, 65536  # feature dimension, queue length (momentum m = 0.999)
B, STEPS = 32, 8
VIEW = B * 3 * 224 * 224 * 4
STAGES = ((64, 3, 56), (128, 4, 28), (256, 6, 14), (512, 3, 7))  # width, blocks, out res


def bn(name, c):
    return [(name + ".weight", c * 4, True), (name + ".bias", c * 4, True),
            (name + ".running_mean", c * 4, False), (name + ".running_var", c * 4, False),
            (name + ".num_batches_tracked", 8, False)]


def resnet50_tensors():
    """(name, bytes, is_parameter) in module-tree order, and the creation
    order (`_make_layer` builds a stage's downsample before its first block;
    the MLP head's Linear(2048, 2048) is made after resnet50(num_classes=128))."""
    tree = [("conv1.weight", 64 * 3 * 7 * 7 * 4, True)] + bn("bn1", 64)
    made = list(tree)
    cin = 64
    for s, (w, blocks, _res) in enumerate(STAGES):
        for b in range(blocks):
            pre = "layer%d.%d." % (s + 1, b)
            block = [(pre + "conv1.weight", cin * w * 4, True)] + bn(pre + "bn1", w)
            block += [(pre + "conv2.weight", w * w * 9 * 4, True)] + bn(pre + "bn2", w)
            block += [(pre + "conv3.weight", w * 4 * w * 4, True)] + bn(pre + "bn3", 4 * w)
            down = []
            if b == 0:
                down = [(pre + "downsample.0.weight", cin * 4 * w * 4, True)]
                down += bn(pre + "downsample.1", 4 * w)
            tree += block + down
            made += down + block
            cin = 4 * w
    head_new = [("fc.0.weight", 2048 * 2048 * 4, True), ("fc.0.bias", 2048 * 4, True)]
    head_old = [("fc.2.weight", DIM * 2048 * 4, True), ("fc.2.bias", DIM * 4, True)]
    return tree + head_new + head_old, made + head_old + head_new


def empty(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


class ResNet:
    def __init__(self, tensors):
        self.tensors = tensors  # name -> (ptr, bytes, is_parameter)

    def parameters(self):
        return [(name, t[0], t[1]) for name, t in self.tensors.items() if t[2]]

    def __deepcopy__(self):
        """Parameter.__deepcopy__ / Tensor.__deepcopy__: a device clone each."""
        out = {}
        for name, (p, n, is_param) in self.tensors.items():
            c = empty(n, "weights")
            job.dtod(0, c, p, n)
            out[name] = (c, n, is_param)
        return ResNet(out)

    def forward(self, images, keep):
        """The forward of the bottlenecks and the MLP head. keep: autograd
        saves every tensor (returned); else (no_grad) each block's tensors
        are freed once its output exists. Returns (saved, output)."""
        saved = []
        stem = [empty(B * 64 * 112 * 112 * 4, "activations") for _ in range(2)]  # conv1, bn1
        x = empty(B * 64 * 56 * 56 * 4, "activations")  # maxpool
        if keep:
            saved += stem
        else:
            free(*stem)
        cin, res_in = 64, 56
        for w, blocks, res in STAGES:
            for b in range(blocks):
                t = [empty(B * w * res_in * res_in * 4, "activations") for _ in range(2)]
                t += [empty(B * w * res * res * 4, "activations") for _ in range(2)]
                t += [empty(B * 4 * w * res * res * 4, "activations") for _ in range(2)]
                if b == 0:
                    t += [empty(B * 4 * w * res * res * 4, "activations") for _ in range(2)]
                out = empty(B * 4 * w * res * res * 4, "activations")  # += identity, relu
                if keep:
                    saved += [x] + t
                else:
                    free(x, *t)
                x, cin, res_in = out, 4 * w, res
        pooled = empty(B * 2048 * 4, "activations")
        h = [empty(B * 2048 * 4, "activations") for _ in range(2)]  # fc.0, relu
        z = empty(B * DIM * 4, "activations")  # fc.2
        if keep:
            saved += [x, pooled] + h + [z]
        else:
            free(x, pooled, *h)
        return saved, z


def build_on_device(made):
    """with torch.device("cuda"): resnet50(num_classes=128), MLP head: every
    tensor allocated on the device and filled by an init kernel."""
    tensors = {}
    for name, n, is_param in made:
        tensors[name] = (empty(n, "weights"), n, is_param)
    return tensors


def normalize(norm_bytes):
    """F.normalize: input / input.norm(dim).clamp_min(eps).expand_as(input)."""
    norm = empty(norm_bytes, "activations")
    clamped = empty(norm_bytes, "activations")
    free(norm)
    return clamped


class MoCo:
    def __init__(self):
        tree, made = resnet50_tensors()
        tensors = build_on_device(made)
        self.encoder_q = ResNet({name: tensors[name] for name, _n, _p in tree})
        self.encoder_k = self.encoder_q.__deepcopy__()
        # register_buffer("queue", torch.randn(dim, K)); queue = normalize(queue, dim=0)
        randn = empty(DIM * K * 4, "other")
        clamped = normalize(K * 4)
        self.queue = empty(DIM * K * 4, "other")
        free(clamped)
        free(randn)
        self.queue_ptr = empty(8, "other")  # torch.zeros(1, dtype=torch.long)

    def _momentum_update_key_encoder(self):
        for name, (pk, n, is_param) in list(self.encoder_k.tensors.items()):
            if not is_param:
                continue
            t1 = empty(n, "activations")  # param_k.data * self.m
            t2 = empty(n, "activations")  # param_q.data * (1. - self.m)
            new = empty(n, "weights")  # t1 + t2
            free(t1, t2)
            free(pk)  # param_k.data = new
            self.encoder_k.tensors[name] = (new, n, True)

    def _dequeue_and_enqueue(self, keys):
        job.dtoh(0, self.queue_ptr, 8)  # ptr = int(self.queue_ptr)
        # self.queue[:, ptr:ptr + batch_size] = keys.T ; queue_ptr[0] = ptr: kernels

    def forward(self, im_q, im_k):
        saved, q_raw = self.encoder_q.forward(im_q, True)
        q = normalize(B * 4)
        q_out = empty(B * DIM * 4, "activations")
        free(q)
        saved += [q_out]
        self._momentum_update_key_encoder()  # under torch.no_grad()
        _none, k_raw = self.encoder_k.forward(im_k, False)
        kn = normalize(B * 4)
        k = empty(B * DIM * 4, "activations")
        free(kn, k_raw)
        l_pos = empty(B * 4, "activations")  # einsum('nc,nc->n').unsqueeze(-1)
        clone = empty(DIM * K * 4, "activations")  # self.queue.clone().detach()
        job.dtod(0, clone, self.queue, DIM * K * 4)
        l_neg = empty(B * K * 4, "activations")  # einsum('nc,ck->nk')
        logits = empty(B * (K + 1) * 4, "activations")  # cat; logits /= T in place
        labels = empty(B * 8, "prefetch")  # torch.zeros(N, dtype=torch.long).cuda()
        job.htod(0, labels, B * 8)
        self._dequeue_and_enqueue(k)
        free(k)
        saved += [l_pos, clone, l_neg]
        return saved, logits, labels


class SGD:
    """momentum=0.9, weight_decay=1e-4, foreach (the CUDA default)."""

    def __init__(self, params):
        self.params = params
        self.momentum_buffer = None

    def step(self, grads):
        decayed = [empty(n, "activations") for _name, _p, n in self.params]  # _foreach_add
        if self.momentum_buffer is None:  # torch.clone(grad).detach()
            self.momentum_buffer = []
            for (_name, _p, n), g in zip(self.params, decayed):
                buf = empty(n, "optimizer")
                job.dtod(0, buf, g, n)
                self.momentum_buffer.append(buf)
        free(*decayed)


def train(model, opt, pinned):
    grads = None
    for s in range(STEPS):
        job.step(s)
        im_q = empty(VIEW, "prefetch")  # images[0].cuda(non_blocking=True)
        job.htod(0, im_q, VIEW, src=pinned)
        im_k = empty(VIEW, "prefetch")
        job.htod(0, im_k, VIEW, src=pinned)
        saved, logits, labels = model.forward(im_q, im_k)
        logp = empty(B * (K + 1) * 4, "activations")  # CrossEntropyLoss
        loss = empty(4, "activations")
        # backward: the logits' gradient, then the encoder in reverse
        g_logits = empty(B * (K + 1) * 4, "activations")
        free(logp, logits)
        g_q = empty(B * DIM * 4, "activations")
        free(g_logits)
        if grads is None:  # AccumulateGrad at the first backward; kept after
            grads = [empty(n, "gradients") for _name, _p, n in reversed(opt.params)]
        for t in reversed(saved):
            free(t)
        free(g_q)
        opt.step(grads)
        job.dtoh(0, loss, 4)  # losses.update(loss.item())
        free(loss, labels, im_q, im_k)
    return grads


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    model = MoCo()
    opt = SGD(model.encoder_q.parameters())
    pinned = job.pinned(VIEW)
    grads = train(model, opt, pinned)
    job.call("cuMemFreeHost", pinned)
    free(*grads, *opt.momentum_buffer, model.queue, model.queue_ptr)
    for enc in (model.encoder_q, model.encoder_k):
        free(*[t[0] for t in enc.tensors.values()])
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (2 * VIEW + B * 8))
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
