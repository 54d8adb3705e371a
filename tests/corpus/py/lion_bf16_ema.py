#!/usr/bin/env python3
"""A timm ViT-S/16 trained in pure bf16 with the Lion optimizer, an fp32 EMA
of the weights and gradient clipping, fed by a CUDA-stream prefetcher, with
PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one cudaMalloc per tensor).

What is modelled (sources read: lion-pytorch lion_pytorch.py `Lion.step`
(`state['exp_avg'] = torch.zeros_like(p)` at the first step) and `update_fn`
(`p.data.mul_(1 - lr * wd)`, `update = exp_avg.clone().mul_(beta1).add(grad,
alpha=1 - beta1).sign_()`: a clone and a new tensor per parameter,
`p.add_(update)`, `exp_avg.mul_(beta2).add_(grad)`); torch/nn/modules/
module.py `Module.to` -> `_apply(convert)` (`param.data = param_applied`:
the new tensor replaces the old storage, which is freed);
torch/nn/utils/clip_grad.py `clip_grad_norm_` (`_foreach_norm`, `torch.stack`,
`vector_norm`, `clip_coef`, `clamp`, `_foreach_mul_`); timm/models/
vision_transformer.py `Block`, `Attention` (fused_attn:
`F.scaled_dot_product_attention`, no score matrix kept); apex
examples/imagenet main_amp.py `data_prefetcher` (mean and std made by
`torch.tensor(...).cuda()`, `preload()` on a side stream: `next_input.cuda(
non_blocking=True)`, converted and normalised into a new tensor, `next()`
hands out the current batch and preloads the next one);
torch/utils/data `pin_memory`):
  - `model.to(device)`: every fp32 parameter a cudaMalloc and an upload;
    then `model.to(dtype=torch.bfloat16)`: per parameter a bf16 tensor made
    on the device by a cast kernel, the fp32 one freed;
  - the EMA: an fp32 copy of every parameter made on the device
    (`p.detach().float()`), updated after every step with a temporary fp32
    cast of the parameter (`ema.lerp_(p.float(), 1 - decay)`);
  - the prefetcher: mean and std uploaded once (3 floats each); per batch
    the pinned uint8 images and int64 labels uploaded, the images converted
    to bf16 and normalised into a new tensor, the uint8 one freed; the
    batch in use and the next one preloaded are on the device at once;
  - per step: forward (per block: norms, qkv, SDPA output and its
    logsumexp, proj, fc1, GELU, fc2), loss, backward (bf16 `.grad`s,
    freed by `zero_grad(set_to_none=True)`), clip_grad_norm_, Lion (state
    at the first step, a clone and an update per parameter), the EMA.
Markers on, driver by dlsym.

Truth: the fp32 uploads, the bf16 parameters and the fp32 EMA weights (the
EMA a shadow of the parameters, README convention); Lion's exp_avg
optimizer; `.grad`s gradients; Lion's clones and updates, clip_grad_norm_'s
norms and coefficients, the EMA's fp32 casts and every forward tensor
activations; the uploaded images and labels and the bf16 batch made from
them prefetch (2 batches on the device at once: depth 2); mean and std
other. No dataset; 12 steps. Coincidences: every exp_avg, Lion clone and
update is exactly its bf16 parameter and its `.grad`; each fp32 upload is
exactly its EMA copy; the labels of a batch (96 int64, 768 B) are exactly a
bf16 LayerNorm weight or bias or a 384-wide bias."""
import vtc

job = vtc.Job("lion_bf16_ema", "dlsym", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
D, DEPTH, HEADS, MLP, TOK, CLASSES = 384, 12, 6, 1536, 197, 1000
B, STEPS = 96, 12
IMG_U8, LABELS = B * 3 * 224 * 224, B * 8


def empty(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def named_parameters():
    """timm vit_small_patch16_224 in registration order: (name, elements)."""
    yield "cls_token", D
    yield "pos_embed", TOK * D
    yield "patch_embed.proj.weight", D * 3 * 16 * 16
    yield "patch_embed.proj.bias", D
    for i in range(DEPTH):
        pre = "blocks.%d." % i
        yield pre + "norm1.weight", D
        yield pre + "norm1.bias", D
        yield pre + "attn.qkv.weight", 3 * D * D
        yield pre + "attn.qkv.bias", 3 * D
        yield pre + "attn.proj.weight", D * D
        yield pre + "attn.proj.bias", D
        yield pre + "norm2.weight", D
        yield pre + "norm2.bias", D
        yield pre + "mlp.fc1.weight", MLP * D
        yield pre + "mlp.fc1.bias", MLP
        yield pre + "mlp.fc2.weight", D * MLP
        yield pre + "mlp.fc2.bias", D
    yield "norm.weight", D
    yield "norm.bias", D
    yield "head.weight", CLASSES * D
    yield "head.bias", CLASSES


class VisionTransformer:
    def __init__(self):
        self.elems = [n for _name, n in named_parameters()]
        self.params = []
        self.grads = []

    def _apply(self, fn):
        self.params = [fn(i, p) for i, p in enumerate(self.params or [None] * len(self.elems))]

    def to(self, device=None, dtype=None):
        if device is not None:  # fp32 parameters uploaded
            def convert(i, _p):
                p = empty(self.elems[i] * 4, "weights")
                job.htod(0, p, self.elems[i] * 4)
                return p
        else:  # dtype=torch.bfloat16: a cast kernel, then param.data = param_applied
            def convert(i, p):
                bf = empty(self.elems[i] * 2, "weights")
                free(p)
                return bf
        self._apply(convert)
        return self

    def forward(self, x):
        h = B * TOK * D * 2
        saved = [empty(h, "activations")]  # patch embed + cls + pos
        for _i in range(DEPTH):
            saved.append(empty(h, "activations"))  # norm1
            saved.append(empty(3 * h, "activations"))  # qkv
            saved.append(empty(h, "activations"))  # scaled_dot_product_attention
            saved.append(empty(B * HEADS * TOK * 4, "activations"))  # its logsumexp
            saved.append(empty(h, "activations"))  # proj + residual
            saved.append(empty(h, "activations"))  # norm2
            saved.append(empty(B * TOK * MLP * 2, "activations"))  # fc1
            saved.append(empty(B * TOK * MLP * 2, "activations"))  # GELU
            saved.append(empty(h, "activations"))  # fc2 + residual
        saved.append(empty(B * D * 2, "activations"))  # norm, cls token pooled
        logits = empty(B * CLASSES * 2, "activations")
        return saved, logits

    def backward(self, saved):
        g = empty(B * TOK * D * 2, "activations")  # grad of the residual stream
        for i in reversed(range(len(self.elems))):  # AccumulateGrad, bf16
            self.grads.append(empty(self.elems[i] * 2, "gradients"))
        for t in reversed(saved):
            free(t)
        free(g)

    def zero_grad(self):
        free(*self.grads)
        self.grads = []


class Lion:
    def __init__(self, model):
        self.model = model
        self.exp_avg = None

    def update_fn(self, n):
        clone = empty(n * 2, "activations")  # exp_avg.clone().mul_(beta1)
        update = empty(n * 2, "activations")  # .add(grad, alpha=1 - beta1).sign_()
        free(clone)
        free(update)  # after p.add_(update, alpha=-lr)

    def step(self):
        if self.exp_avg is None:  # state['exp_avg'] = torch.zeros_like(p)
            self.exp_avg = []
            for n in self.model.elems:
                m = empty(n * 2, "optimizer")
                job.zero(0, m, n * 2)
                self.exp_avg.append(m)
        for n in self.model.elems:
            self.update_fn(n)


def clip_grad_norm_(model):
    n = len(model.elems)
    per_tensor = empty(n * 4, "activations")  # _foreach_norm
    stacked = empty(n * 4, "activations")  # torch.stack(norms)
    total = empty(4, "activations")  # vector_norm
    coef = empty(4, "activations")  # max_norm / (total_norm + 1e-6)
    clamped = empty(4, "activations")  # torch.clamp(clip_coef, max=1.0)
    free(per_tensor, stacked, total, coef, clamped)


class ModelEmaFp32:
    def __init__(self, model):
        self.shadow = []
        for n in model.elems:  # p.detach().float(): a cast kernel
            self.shadow.append(empty(n * 4, "weights"))
        self.model = model

    def update(self):
        for n in self.model.elems:  # ema.lerp_(p.float(), 1 - decay)
            t = empty(n * 4, "activations")
            free(t)


class data_prefetcher:
    def __init__(self, pinned):
        self.pinned = pinned
        self.mean = empty(3 * 4, "other")  # torch.tensor([...]).cuda().view(1, 3, 1, 1)
        job.htod(0, self.mean, 3 * 4)
        self.std = empty(3 * 4, "other")
        job.htod(0, self.std, 3 * 4)
        self.left = STEPS
        self.next_input = self.next_target = None
        self.preload()

    def preload(self):
        if self.left == 0:
            self.next_input = self.next_target = None
            return
        self.left -= 1
        raw = empty(IMG_U8, "prefetch")  # next_input.cuda(non_blocking=True)
        job.htod(0, raw, IMG_U8, src=self.pinned)
        self.next_target = empty(LABELS, "prefetch")
        job.htod(0, self.next_target, LABELS, src=self.pinned)
        self.next_input = empty(IMG_U8 * 2, "prefetch")  # .to(bf16).sub_(mean).div_(std)
        free(raw)

    def next(self):
        batch = (self.next_input, self.next_target)
        self.preload()
        return batch


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    model = VisionTransformer().to(device="cuda")
    model.to(dtype="bfloat16")
    ema = ModelEmaFp32(model)
    opt = Lion(model)
    pinned = job.pinned(IMG_U8)
    prefetcher = data_prefetcher(pinned)
    for s in range(STEPS):
        job.step(s)
        images, labels = prefetcher.next()
        saved, logits = model.forward(images)
        loss = empty(4, "activations")
        free(logits)
        model.backward(saved)
        clip_grad_norm_(model)
        opt.step()
        model.zero_grad()
        ema.update()
        job.dtoh(0, loss, 4)
        free(loss, images, labels)
    job.call("cuMemFreeHost", pinned)
    free(*opt.exp_avg, *ema.shadow, *model.params, prefetcher.mean, prefetcher.std)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 2 %d" % (IMG_U8 * 2 + LABELS))
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
