#!/usr/bin/env python3
"""DreamBooth full fine-tuning of a small latent-diffusion UNet with the
latents cached on the GPU, as ShivamShrirao/diffusers
examples/dreambooth/train_dreambooth.py does by default (no
`--not_cache_latents`), with prior preservation (2 instance + 2 class
images a batch, 60 class images, 256 x 256), the text encoder frozen, and
an EMA copy of the UNet kept the way diffusers'
examples/text_to_image/train_text_to_image.py keeps it with `--use_ema`
(a second `from_pretrained` UNet wrapped in `EMAModel`, moved to the
device after `accelerator.prepare`); fp32 (`mixed_precision="no"`), 2
epochs, PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (one
cuMemAllocAsync per tensor, cuMemFreeAsync when it dies).

What is modelled (sources: ShivamShrirao/diffusers train_dreambooth.py
`main`: `vae.to(accelerator.device, dtype=weight_dtype)` and
`text_encoder.to(...)` (per-parameter uploads, the text model's
`position_ids` buffer with them), the caching loop (per batch
`pixel_values` and `input_ids` `.to(device, non_blocking=True)`,
`latents_cache.append(vae.encode(pixel_values).latent_dist)`,
`text_encoder_cache.append(text_encoder(input_ids)[0])`), `LatentsDataset`
+ `DataLoader(batch_size=1, collate_fn=lambda x: x, shuffle=True)`, `del
vae`, `del text_encoder`, `torch.cuda.empty_cache()`, then
`accelerator.prepare(unet, optimizer, ...)` (the UNet uploaded), per
step `latent_dist.sample() * 0.18215`, `randn_like`, `torch.randint(...,
device=...)`, `noise_scheduler.add_noise`, the UNet forward and
backward, the MSE instance and prior losses, `optimizer.step()`,
`optimizer.zero_grad(set_to_none=True)`; diffusers
models/vae.py `DiagonalGaussianDistribution.__init__` (`parameters` =
the moments, `mean` / `logvar` `chunk` views, `logvar = clamp(...)`,
`std = exp(0.5 * logvar)`, `var = exp(logvar)`: four tensors kept per
cached batch) and `sample` (`randn`, `mean + std * sample`);
schedulers/scheduling_ddpm.py `add_noise` (`self.alphas_cumprod` moved to
the device once and kept, per call the gathered `sqrt_alpha_prod` /
`sqrt_one_minus_alpha_prod` and the noisy latents); diffusers
training_utils.py `EMAModel` (`shadow_params` cloned on the host,
`to(device)` uploads them, `step`: `s_param.sub_(one_minus_decay *
(s_param - param))`, two temporaries per parameter); torch/optim/adamw.py
`_multi_tensor_adamw` (`exp_avg` / `exp_avg_sq` at the first step, the
`step` counters on the host, per step `_foreach_sqrt` temporaries)). No
markers (neither script calls any), driver by dlsym.

Truth: VAE and text-encoder parameters weights (uploaded, freed after
caching); the UNet's parameters and the EMA shadows weights; the cached
moments, clamped log-variances, standard deviations, variances and text
embeddings dataset (the training set, made on the device from batches
uploaded one at a time: no whole_dataset_upload); the uploaded
`pixel_values` and `input_ids` prefetch (depth 1: a batch dies when the
loop rebinds `batch`, before the next upload); `position_ids` and
`alphas_cumprod` other; `.grad`s gradients; AdamW state optimizer;
encoder, text-model and UNet tensors, sampled latents, noise, timesteps,
losses, AdamW's and EMA's temporaries activations. 60 optimizer steps.
Coincidences: a cached log-variance, standard deviation or variance
(4 x 4 x 32 x 32 fp32, 65,536 B, dataset) is the sampled latents and the
noise (activations) and each 128 x 128 attention projection of the
first level (weights), with its `.grad`, AdamW states and EMA shadow;
the moments (131,072 B) are two of them."""
import random

import vtc

job = vtc.Job("dreambooth_cached_latents_ema", "dlsym", __doc__)
F32 = 4
RES, LAT, BATCH = 256, 32, 4                 # 2 instance + 2 class images a batch
N_BATCHES, EPOCHS = 30, 2
SEQ, TXT, TXT_LAYERS, VOCAB = 77, 512, 6, 49408
LATENT = BATCH * 4 * LAT * LAT * F32         # 65,536 B
PIXELS = BATCH * 3 * RES * RES * F32
IDS = BATCH * SEQ * 8
TEMB = 512
UNET_CH = (128, 256, 256)


def alloc(n, cat="activations"):
    return job.mem_alloc_async(0, n, cat)


def free(*ptrs):
    for p in ptrs:
        job.mem_free_async(0, p)


def upload(n, cat):
    p = alloc(n, cat)
    job.htod(0, p, n)
    return p


def resnet(cin, cout, temb=True):
    ps = [cin, cin, cout * cin * 9, cout]
    if temb:
        ps += [TEMB * cout, cout]
    ps += [cout, cout, cout * cout * 9, cout]
    if cin != cout:
        ps += [cout * cin, cout]                 # conv_shortcut (1 x 1)
    return ps


def transformer(c, cross):
    ps = [c, c, c * c, c]                        # norm, proj_in
    ps += [c, c, c * c, c * c, c * c, c * c, c]  # norm1, attn1 q k v out
    ps += [c, c, c * c, cross * c, cross * c, c * c, c]  # norm2, attn2
    ps += [c, c, c * 8 * c, 8 * c, 4 * c * c, c]         # norm3, GEGLU ff
    ps += [c * c, c]                             # proj_out
    return ps


def unet_params():
    """UNet2DConditionModel(block_out_channels=(128, 256, 256),
    layers_per_block=1, two cross-attention levels), registration order,
    in elements."""
    ps = [4 * UNET_CH[0] * 9, UNET_CH[0], UNET_CH[0] * TEMB, TEMB, TEMB * TEMB, TEMB]
    cin, skips = UNET_CH[0], [UNET_CH[0]]
    for i, c in enumerate(UNET_CH):
        ps += resnet(cin, c)
        if i < 2:
            ps += transformer(c, TXT)
            ps += [c * c * 9, c]                 # downsampler
        cin = c
        skips += [c, c] if i < 2 else [c]
    ps += resnet(cin, cin) + transformer(cin, TXT) + resnet(cin, cin)   # mid block
    for i, c in enumerate(reversed(UNET_CH)):
        for _j in range(2):
            skip = skips.pop()
            ps += resnet(cin + skip, c)
            if i > 0:
                ps += transformer(c, TXT)
            cin = c
        if i < 2:
            ps += [c * c * 9, c]                 # upsampler
    ps += [UNET_CH[0], UNET_CH[0], UNET_CH[0] * 4 * 9, 4]
    return [n * F32 for n in ps]


def vae_params():
    """AutoencoderKL(block_out_channels=(64, 128, 256, 256)), encoder then
    decoder, quant_conv and post_quant_conv."""
    ch = (64, 128, 256, 256)
    enc = [ch[0] * 3 * 9, ch[0]]
    cin = ch[0]
    for i, c in enumerate(ch):
        enc += resnet(cin, c, temb=False) + resnet(c, c, temb=False)
        if i < 3:
            enc += [c * c * 9, c]
        cin = c
    enc += resnet(cin, cin, False) + [cin, cin, cin * cin, cin, cin * cin, cin, cin * cin, cin,
                                      cin * cin, cin] + resnet(cin, cin, False)
    enc += [cin, cin, 8 * cin * 9, 8, 8 * 8, 8]
    dec = [4 * 4, 4, cin * 4 * 9, cin]
    dec += resnet(cin, cin, False) + [cin, cin] + [cin * cin, cin] * 4 + resnet(cin, cin, False)
    for i, c in enumerate(reversed(ch)):
        for _j in range(3):
            dec += resnet(cin, c, temb=False)
            cin = c
        if i < 3:
            dec += [c * c * 9, c]
    dec += [cin, cin, 3 * cin * 9, 3]
    return [n * F32 for n in enc + dec]


def text_params():
    ps = [VOCAB * TXT, SEQ * TXT]
    for _l in range(TXT_LAYERS):
        ps += [TXT, TXT] + [TXT * TXT, TXT] * 4 + [TXT, TXT, TXT * 4 * TXT, 4 * TXT, 4 * TXT * TXT, TXT]
    return [n * F32 for n in ps + [TXT, TXT]]


class Model:
    def __init__(self, sizes):
        self.sizes = sizes
        self.ptrs = []

    def to_device(self, cat="weights"):
        self.ptrs = [upload(n, cat) for n in self.sizes]


def vae_encode():
    """AutoencoderKL.encode under no_grad: the encoder's feature maps, one
    level at a time, then quant_conv and the distribution."""
    h = alloc(BATCH * 64 * RES * RES * F32)      # conv_in
    for c, hw in ((64, RES), (128, RES // 2), (256, RES // 4), (256, RES // 8)):
        for _r in range(2):                      # resnet: norm, silu, conv, norm, silu, conv, add
            n = BATCH * c * hw * hw * F32
            a = alloc(n)
            b = alloc(n)
            free(a)
            a = alloc(n)
            free(b)
            out = alloc(n)
            free(a, h)
            h = out
        if hw > RES // 8:
            d = alloc(BATCH * c * (hw // 2) * (hw // 2) * F32)   # downsample
            free(h)
            h = d
    n = BATCH * 256 * LAT * LAT * F32
    att = [alloc(n) for _ in range(3)]           # mid-block attention q, k, v
    free(*att)
    no = alloc(n)                                # conv_norm_out + silu
    free(h)
    ce = alloc(BATCH * 8 * LAT * LAT * F32)      # conv_out
    free(no)
    moments = alloc(2 * LATENT, "dataset")       # quant_conv -> DiagonalGaussianDistribution
    free(ce)
    logvar = alloc(LATENT, "dataset")            # clamp
    half = alloc(LATENT)                         # 0.5 * logvar
    std = alloc(LATENT, "dataset")               # exp
    free(half)
    var = alloc(LATENT, "dataset")               # exp(logvar)
    return [moments, logvar, std, var]


def text_encode(position_ids):
    """CLIPTextModel forward under no_grad; [0] = last_hidden_state kept."""
    hs = BATCH * SEQ * TXT * F32
    emb = alloc(hs)                              # token + position embeddings
    mask = alloc(BATCH * SEQ * SEQ * F32)        # _build_causal_attention_mask
    h = emb
    for _l in range(TXT_LAYERS):
        ln = alloc(hs)
        qkv = [alloc(hs) for _ in range(3)]
        free(ln)
        sc = alloc(BATCH * 8 * SEQ * SEQ * F32)
        pr = alloc(BATCH * 8 * SEQ * SEQ * F32)
        free(sc)
        o = alloc(hs)
        free(pr, *qkv)
        r = alloc(hs)
        free(o, h)
        ln = alloc(hs)
        fc = alloc(hs * 4)
        g = alloc(hs * 4)
        free(fc, ln)
        fc2 = alloc(hs)
        free(g)
        h = alloc(hs)
        free(fc2, r)
    last = alloc(hs, "dataset")                  # final_layer_norm -> last_hidden_state
    pooled = alloc(BATCH * TXT * F32)            # pooler_output (dropped)
    free(h, mask, pooled)
    return last


def unet_forward_backward(unet, noisy, ehs, timesteps):
    """UNet2DConditionModel forward (tensors saved for backward), the
    losses, the backward (a .grad per parameter, made as it is reached)."""
    saved = []
    tproj = alloc(BATCH * UNET_CH[0] * F32)      # time_proj
    temb = [alloc(BATCH * TEMB * F32) for _ in range(3)]
    saved += [tproj] + temb
    hw = LAT
    for i, c in enumerate(UNET_CH):
        n = BATCH * c * hw * hw * F32
        saved += [alloc(n) for _ in range(6)]    # resnet: norms, silus, convs
        if i < 2:
            saved += [alloc(n) for _ in range(6)]                   # attention: q, k, v, out...
            saved.append(alloc(BATCH * 8 * hw * hw * SEQ * F32))    # cross-attention probs
            saved.append(alloc(BATCH * c * 8 * hw * hw * F32 // 2))  # GEGLU
            hw //= 2
    for i, c in enumerate(reversed(UNET_CH)):
        n = BATCH * c * hw * hw * F32
        saved += [alloc(2 * n) for _ in range(2)]                   # concatenated skips
        saved += [alloc(n) for _ in range(8)]
        if i > 0:
            saved += [alloc(n) for _ in range(6)]
            saved.append(alloc(BATCH * 8 * hw * hw * SEQ * F32))
        if i < 2:
            hw *= 2
    pred = alloc(LATENT)                         # conv_out: noise_pred
    mse = [alloc(LATENT // 2), alloc(LATENT // 2)]   # instance / prior mse (reduction="none")
    losses = [alloc(F32) for _ in range(5)]      # means, prior mean, weighted sum
    free(*mse)
    # backward
    g = alloc(LATENT)
    free(pred)
    grads = []
    for n in reversed(unet.sizes):
        grads.append(alloc(n, "gradients"))
        if len(grads) % 12 == 0:                 # activation grads of a block
            gn = alloc(n if n > LATENT else LATENT)
            free(g)
            g = gn
    free(g, *saved, *losses)
    return grads


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    vae, text_encoder = Model(vae_params()), Model(text_params())
    unet = Model(unet_params())
    ema = Model(unet.sizes)                      # EMAModel(ema_unet.parameters()) on the host
    vae.to_device()
    te = text_encoder.sizes                      # _apply: the embeddings' weights, then their
    text_encoder.ptrs = [upload(n, "weights") for n in te[:2]]
    position_ids = upload(SEQ * 8, "other")      # position_ids buffer, then the encoder
    text_encoder.ptrs += [upload(n, "weights") for n in te[2:]]
    cache = []
    batch = None
    for _b in range(N_BATCHES):                  # "Caching latents"
        if batch:
            free(*batch)                         # the previous batch dict dies
        batch = [upload(PIXELS, "prefetch"), upload(IDS, "prefetch")]
        dist = vae_encode()
        ehs = text_encode(position_ids)
        cache.append((dist, ehs))
    free(*batch)
    free(*vae.ptrs)                              # del vae
    free(*text_encoder.ptrs, position_ids)       # del text_encoder; empty_cache()
    unet.to_device()                             # accelerator.prepare
    ema.to_device()                              # ema_unet.to(accelerator.device)
    state = None
    alphas = None
    steps = 0
    rng = random.Random(3)
    for _epoch in range(EPOCHS):
        order = list(range(N_BATCHES))
        rng.shuffle(order)                       # DataLoader(shuffle=True) over the cache
        for b in order:
            dist, ehs = cache[b]
            r = alloc(LATENT)                    # sample(): randn
            sd = alloc(LATENT)                   # std * sample
            x = alloc(LATENT)                    # mean + ...
            free(r, sd)
            lat = alloc(LATENT)                  # * 0.18215
            free(x)
            noise = alloc(LATENT)                # randn_like
            ts = alloc(BATCH * 8)                # randint(device=...)
            if alphas is None:
                alphas = upload(1000 * F32, "other")   # alphas_cumprod.to(device), kept
            sm = [alloc(BATCH * F32) for _ in range(5)]  # gathers, pow, 1 -, pow
            a, bn = alloc(LATENT), alloc(LATENT)
            noisy = alloc(LATENT)
            free(a, bn, *sm, lat)
            grads = unet_forward_backward(unet, noisy, ehs, ts)
            if state is None:                    # AdamW _init_group
                state = [alloc(n, "optimizer") for n in unet.sizes for _ in (0, 1)]
            sq = [alloc(n) for n in unet.sizes]  # _foreach_sqrt(exp_avg_sqs)
            free(*sq)
            free(*grads)                         # zero_grad(set_to_none=True)
            for n in unet.sizes:                 # EMAModel.step
                d = alloc(n)                     # s_param - param
                m = alloc(n)                     # one_minus_decay * ...
                free(d, m)
            free(noise, ts, noisy)
            steps += 1
    free(*state, *ema.ptrs, *unet.ptrs, alphas)
    for dist, ehs in cache:
        free(*dist, ehs)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (PIXELS + IDS))
    job.line("steps 0 %d" % steps)
    job.finish()


main()
