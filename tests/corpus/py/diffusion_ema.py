#!/usr/bin/env python3
"""Text-to-image diffusion fine-tuning, as diffusers' train_text_to_image.py
does it (PYTORCH_NO_CUDA_MEMORY_CACHING=1: one cudaMalloc per tensor).
The frozen VAE (AutoencoderKL) and text encoder (CLIPTextModel) get
requires_grad_(False) and vae.to / text_encoder.to(device): uploaded once per
tensor, never written again. The UNet (UNet2DConditionModel) is uploaded and
trained with AdamW (exp_avg/exp_avg_sq at the first step). EMAModel keeps
shadow copies of the UNet's parameters: built from a second from_pretrained
on the host, moved by ema_unet.to(device) (uploaded per tensor), and
updated in place on the device each step (EMAModel.step: s -= (1 - decay)
* (s - p), no allocation, no upload). Each step: the image batch and the
token ids are uploaded, the VAE encodes the images to latents, the text
encoder makes the prompt embeddings, noise and timesteps are drawn on the
device (randn_like, randint), the UNet predicts the noise, the backward
makes the .grads, optimizer.step, zero_grad(set_to_none=True). Markers on,
driver by dlsym.

Truth: UNet parameters and the EMA shadows weights (the shadows are a
second model's parameters, not optimizer state: torch.optim never sees
them), VAE and text encoder weights (frozen weights, not a dataset: they
are uploaded tensor by tensor and only read), UNet .grads gradients, AdamW
state optimizer, images and token ids prefetch (depth 1), latents,
embeddings, noise and UNet intermediates activations; no dataset; 8 steps.
The EMA shadows and each Adam buffer are the UNet's sizes; the image batch
is the size of a VAE tensor."""
import vtc

job = vtc.Job("diffusion_ema", "dlsym", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
UNET = (24 * MIB, 24 * MIB, 12 * MIB, 6 * MIB, 3 * MIB, 640 * KIB)
VAE = (16 * MIB, 8 * MIB, 8 * MIB, 2 * MIB)
TEXT = (30 * MIB, 9 * MIB, 9 * MIB, 9 * MIB)
IMAGES, TOKENS, LATENTS, EMBED = 8 * MIB, 4 * KIB, 2 * MIB, 3 * MIB
STEPS = 8


class Module:
    def __init__(self, sizes):
        self.sizes = sizes
        self.params = []

    def _apply(self):
        for n in self.sizes:  # convert(t): t.to(device)
            p = job.mem_alloc(0, n, "weights")
            job.htod(0, p, n)
            self.params.append(p)

    def to(self):
        self._apply()
        return self

    def free(self):
        for p in self.params:
            job.mem_free(0, p)


class AutoencoderKL(Module):
    def encode(self, images):
        h = job.mem_alloc(0, 4 * MIB, "activations")
        latents = job.mem_alloc(0, LATENTS, "activations")
        job.mem_free(0, h)
        return latents


class CLIPTextModel(Module):
    def forward(self, tokens):
        return job.mem_alloc(0, EMBED, "activations")


class UNet2DConditionModel(Module):
    def forward(self, noisy, t, embeds):
        return [job.mem_alloc(0, n, "activations") for n in (12 * MIB, 12 * MIB, 6 * MIB, LATENTS)]


class EMAModel:
    def __init__(self, sizes):
        self.shadow = Module(sizes)

    def to(self):
        self.shadow.to()

    def step(self, params):
        pass  # torch._foreach_sub_/mul_ in place on the device


class AdamW:
    def __init__(self, sizes):
        self.sizes = sizes
        self.state = []

    def _init_group(self):
        for n in self.sizes:
            for _ in ("exp_avg", "exp_avg_sq"):
                p = job.mem_alloc(0, n, "optimizer")
                job.zero(0, p, n)
                self.state.append(p)

    def step(self):
        if not self.state:
            self._init_group()


def collate_and_upload(pinned):
    images = job.mem_alloc(0, IMAGES, "prefetch")
    job.htod(0, images, IMAGES, src=pinned)
    tokens = job.mem_alloc(0, TOKENS, "prefetch")
    job.htod(0, tokens, TOKENS, src=pinned)
    return images, tokens


def training_step(unet, vae, text_encoder, ema, opt, pinned):
    images, tokens = collate_and_upload(pinned)
    latents = vae.encode(images)
    embeds = text_encoder.forward(tokens)
    noise = job.mem_alloc(0, LATENTS, "activations")  # randn_like(latents)
    timesteps = job.mem_alloc(0, 512, "activations")  # randint
    noisy = job.mem_alloc(0, LATENTS, "activations")  # add_noise
    acts = unet.forward(noisy, timesteps, embeds)
    grads = []
    for n in reversed(unet.sizes):  # loss.backward()
        grads.append(job.mem_alloc(0, n, "gradients"))
    for a in reversed(acts):
        job.mem_free(0, a)
    opt.step()
    ema.step(unet.params)
    for g in grads:  # zero_grad(set_to_none=True)
        job.mem_free(0, g)
    for t in (noisy, timesteps, noise, embeds, latents, tokens, images):
        job.mem_free(0, t)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    text_encoder = CLIPTextModel(TEXT).to()
    vae = AutoencoderKL(VAE).to()
    unet = UNet2DConditionModel(UNET).to()
    ema = EMAModel(UNET)
    ema.to()
    opt = AdamW(UNET)
    pinned = job.pinned(IMAGES)
    for s in range(STEPS):
        job.step(s)
        training_step(unet, vae, text_encoder, ema, opt, pinned)
    for p in opt.state:
        job.mem_free(0, p)
    for m in (ema.shadow, unet, vae, text_encoder):
        m.free()
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % IMAGES)
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
