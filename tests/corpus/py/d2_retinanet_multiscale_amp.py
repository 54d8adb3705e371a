#!/usr/bin/env python3
"""detectron2 RetinaNet training with multi-scale inputs: a ResNet-18-shaped
backbone (stem and res2 frozen, FrozenBatchNorm2d everywhere), an FPN
(P3-P7) and the shared RetinaNet head, `SOLVER.AMP.ENABLED=True` (the
`AMPTrainer`: autocast + `GradScaler`), AdamW, `IMS_PER_BATCH=2`,
`INPUT.MIN_SIZE_TRAIN=(640, ..., 800)`, `MAX_SIZE_TRAIN=1333`, 40
iterations, under PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one cudaMalloc /
cudaFree per tensor). Every iteration's two images have their own
shortest edge and aspect ratio, so the uploads, the padded batch, every
activation and the anchors differ in size from one step to the next.

What is modelled (sources: detectron2 data/transforms/augmentation_impl.py
`ResizeShortestEdge` (`get_output_shape`: scale the shorter side to the
sampled size, cap the longer at max_size, `int(x + 0.5)`);
data/dataset_mapper.py `DatasetMapper.__call__` (`torch.as_tensor` of the
HWC->CHW uint8 image on the host, `annotations_to_instances`);
modeling/meta_arch/retinanet.py `RetinaNet.forward` (`preprocess_image`
from dense_detector.py: each image `.to(self.device)`, `(x - pixel_mean)
/ pixel_std` (float, the uint8 copy dropped), `ImageList.from_tensors(...,
size_divisibility=32)`: `new_full` of the padded batch and a copy per
image; `gt_instances = [x["instances"].to(self.device)]`; `label_anchors`:
`pairwise_iou` per image, the Matcher's matched indices and labels,
`gt_labels` and `matched_gt_boxes` kept; `losses`: `F.one_hot` of the
labels, `sigmoid_focal_loss_jit`, `smooth_l1` on the box deltas);
modeling/anchor_generator.py `DefaultAnchorGenerator` (`cell_anchors` a
`BufferList` moved by `model.to`, `_grid_anchors`: `arange` shifts on the
device per level and per call); layers/batch_norm.py `FrozenBatchNorm2d`
(weight, bias, running_mean, running_var buffers; `x * scale + bias`);
modeling/backbone/fpn.py (lateral 1x1, nearest upsampling, output 3x3,
`LastLevelP6P7` from res5); engine/train_loop.py `AMPTrainer.run_step`
(`optimizer.zero_grad()` first (set_to_none), `autocast`,
`grad_scaler.scale(losses).backward()`, `grad_scaler.step(optimizer)`,
`grad_scaler.update()`, metrics read back with `.item()`);
torch/amp/grad_scaler.py (`_lazy_init_scale_growth_tracker`: `_scale` and
`_growth_tracker` 4-byte tensors at the first `scale`; `unscale_`:
`inv_scale = self._scale.double().reciprocal().float()`, `found_inf =
torch.full((), 0.0, device)`, `_amp_foreach_non_finite_check_and_unscale_`
in place; `step` reads `found_inf` back; `update` resets the per-optimizer
state); torch/amp/autocast_mode.py / aten autocast `cached_cast` (fp16
weight copies cached for the forward only when the weight requires grad;
frozen weights cast per call and dropped); torch/optim/adamw.py
`_multi_tensor_adamw` (`exp_avg` / `exp_avg_sq` by `zeros_like` at the
first step, `step` on the host, a `_foreach_sqrt` temporary per
parameter)). Markers on (one per iteration), driver by cuGetProcAddress.

Truth: parameters and FrozenBatchNorm buffers weights (uploaded by
`model.to`); `pixel_mean`, `pixel_std`, the five `cell_anchors` tables,
GradScaler's `_scale` / `_growth_tracker` and each step's `inv_scale` /
`found_inf` other; AdamW's `exp_avg` / `exp_avg_sq` (trainable parameters
only) optimizer; `.grad`s gradients; the uploaded uint8 images, gt boxes
and gt classes prefetch (depth 1, a different size nearly every step);
normalised images, the padded batch, fp16 weight casts, backbone / FPN /
head outputs, anchors, IoU matrices, matcher outputs, focal-loss and
backward temporaries and AdamW's temporaries activations. No dataset. 40
steps. Coincidences: a 768 x 1024 image normalised to float32 (9,437,184
B, activations) is res5's 3 x 3 x 512 x 512 conv weight (weights), its
`.grad` and AdamW states; the same image's uint8 upload (2,359,296 B,
prefetch) is each 3 x 3 x 256 x 256 FPN output / head conv weight, its
`.grad` and states; a 256-channel bias (1,024 B) is a 256-channel
FrozenBatchNorm buffer."""
import random

import vtc

job = vtc.Job("d2_retinanet_multiscale_amp", "getproc", __doc__)
F32, F16, I64 = 4, 2, 8
BATCH, ITERS, K, A = 2, 40, 80, 9
MIN_SIZES = (640, 672, 704, 736, 768, 800)
MAX_SIZE = 1333
# (height, width) of the source images the sampler draws from: COCO-ish aspect ratios
SOURCES = [(480, 640), (640, 480), (427, 640), (640, 427), (480, 640), (375, 500),
           (500, 375), (424, 640), (512, 512), (360, 640)]


def alloc(n, cat="activations"):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def upload(n, cat):
    p = alloc(n, cat)
    job.htod(0, p, n)
    return p


def resize_shape(h, w, size):
    """ResizeShortestEdge.get_output_shape."""
    scale = size / min(h, w)
    newh, neww = (size, scale * w) if h < w else (scale * h, size)
    if max(newh, neww) > MAX_SIZE:
        s = MAX_SIZE / max(newh, neww)
        newh, neww = newh * s, neww * s
    return int(newh + 0.5), int(neww + 0.5)


class Conv:
    """A detectron2 Conv2d (weight, optional bias) with an optional FrozenBatchNorm2d."""

    def __init__(self, cin, cout, k, stride, trainable, bias=False, norm=True):
        self.cin, self.cout, self.k, self.stride = cin, cout, k, stride
        self.trainable = trainable
        self.sizes = [k * k * cin * cout * F32] + ([cout * F32] if bias else [])
        self.bn = [cout * F32] * 4 if norm else []
        self.ptrs, self.bn_ptrs, self.grads = [], [], []
        self.cast = None

    def to(self):
        self.ptrs = [upload(n, "weights") for n in self.sizes]
        self.bn_ptrs = [upload(n, "weights") for n in self.bn]


def build():
    """ResNet-18 layout (BasicBlock), FREEZE_AT=2: stem and res2 frozen."""
    backbone = [("stem", Conv(3, 64, 7, 4, False))]
    cin = 64
    for stage, cout, stride in (("res2", 64, 4), ("res3", 128, 8), ("res4", 256, 16),
                                ("res5", 512, 32)):
        train = stage != "res2"
        for b in range(2):
            if b == 0 and cin != cout:
                backbone.append((stage + "_short", Conv(cin, cout, 1, stride, train)))
            backbone.append((stage, Conv(cin if b == 0 else cout, cout, 3, stride, train)))
            backbone.append((stage, Conv(cout, cout, 3, stride, train)))
        cin = cout
    fpn = []
    for cin, stride in ((512, 32), (256, 16), (128, 8)):
        fpn.append(("lateral", Conv(cin, 256, 1, stride, True, bias=True, norm=False)))
        fpn.append(("output", Conv(256, 256, 3, stride, True, bias=True, norm=False)))
    fpn.append(("p6", Conv(512, 256, 3, 64, True, bias=True, norm=False)))
    fpn.append(("p7", Conv(256, 256, 3, 128, True, bias=True, norm=False)))
    head = [("cls", Conv(256, 256, 3, 0, True, bias=True, norm=False)) for _ in range(4)]
    head += [("bbox", Conv(256, 256, 3, 0, True, bias=True, norm=False)) for _ in range(4)]
    head.append(("cls_score", Conv(256, A * K, 3, 0, True, bias=True, norm=False)))
    head.append(("bbox_pred", Conv(256, A * 4, 3, 0, True, bias=True, norm=False)))
    return backbone, fpn, head


def cast(conv, saved):
    """autocast: the fp16 weight, cached for the forward when it requires grad."""
    if conv.trainable:
        if conv.cast is None:
            conv.cast = alloc(conv.sizes[0] // 2)
            saved.append(conv.cast)
        return None
    return alloc(conv.sizes[0] // 2)


def conv_forward(conv, hw, saved, keep):
    """conv (+ FrozenBatchNorm: x * scale + bias); returns the output."""
    tmp = cast(conv, saved)
    out = alloc(BATCH * conv.cout * hw * F16)
    if tmp is not None:
        free(tmp)
    if conv.bn_ptrs:
        scale = alloc(conv.cout * F32)              # weight * (running_var + eps).rsqrt()
        shift = alloc(conv.cout * F32)              # bias - running_mean * scale
        mul = alloc(BATCH * conv.cout * hw * F16)
        bn = alloc(BATCH * conv.cout * hw * F16)
        free(out, mul, scale, shift)
        out = bn
    if keep:
        saved.append(out)
    return out


def forward(model, H, W, saved):
    backbone, fpn, head = model
    hw = lambda s: -(-H // s) * -(-W // s)
    feats = {}
    x = None
    for i, (name, conv) in enumerate(backbone):
        if name.endswith("_short"):                     # the block's shortcut on its input
            conv_forward(conv, hw(conv.stride), saved, True)
            continue
        keep = conv.trainable or (name == "res2" and backbone[i + 1][0] != "res2")
        y = conv_forward(conv, hw(conv.stride), saved, keep)
        if x is not None and x not in saved:
            free(x)
        x = y
        feats[name] = x
    # FPN top-down
    p = {}
    prev = None
    for j, stride in enumerate((32, 16, 8)):
        lat = conv_forward(fpn[2 * j][1], hw(stride), saved, True)
        if prev is not None:
            up = alloc(BATCH * 256 * hw(stride) * F16)   # F.interpolate(nearest, 2)
            add = alloc(BATCH * 256 * hw(stride) * F16)
            saved += [up, add]
            lat = add
        prev = lat
        p[stride] = conv_forward(fpn[2 * j + 1][1], hw(stride), saved, True)
    p[64] = conv_forward(fpn[6][1], hw(64), saved, True)
    relu = alloc(BATCH * 256 * hw(64) * F16)
    saved.append(relu)
    p[128] = conv_forward(fpn[7][1], hw(128), saved, True)
    # the shared head on P3..P7
    logits, deltas = [], []
    for stride in (8, 16, 32, 64, 128):
        for branch in ("cls", "bbox"):
            for name, conv in head:
                if name == branch:
                    conv_forward(conv, hw(stride), saved, True)
                    saved.append(alloc(BATCH * 256 * hw(stride) * F16))   # relu
        logits.append(conv_forward(head[8][1], hw(stride), saved, True))
        deltas.append(conv_forward(head[9][1], hw(stride), saved, True))
    return logits, deltas, hw


def anchors_for(hw):
    """DefaultAnchorGenerator._grid_anchors per level (one image size)."""
    out = []
    for stride in (8, 16, 32, 64, 128):
        n = hw(stride)
        sx, sy = alloc(n * F32), alloc(n * F32)         # arange shifts, meshgrid
        shifts = alloc(n * 4 * F32)                     # stack
        out.append(alloc(n * A * 4 * F32))              # shifts + base_anchors
        free(sx, sy, shifts)
    return out


def backward(model, saved, hw):
    """The scaled loss's backward: head, FPN, trainable backbone; one fp32
    .grad per trainable parameter (the fp16 weight grads summed over levels
    first)."""
    backbone, fpn, head = model
    convs = [c for _, c in backbone + fpn + head if c.trainable]
    g = None
    levels = {id(c): 5 for _, c in head}
    for conv in reversed(convs):
        ga = alloc(BATCH * conv.cin * hw(max(conv.stride, 8)) * F16)
        if g is not None:
            free(g)
        g = ga
        parts = [alloc(conv.sizes[0] // 2) for _ in range(levels.get(id(conv), 1))]
        conv.grads = [alloc(conv.sizes[0], "gradients")]          # cast backward to fp32
        free(*parts)
        if len(conv.sizes) > 1:
            conv.grads.append(alloc(conv.sizes[1], "gradients"))
    free(g, *saved)
    for conv in convs:
        conv.cast = None
    return convs


class AdamW:
    def __init__(self, convs):
        self.convs = convs
        self.state = None

    def step(self):
        sizes = [n for c in self.convs for n in c.sizes]
        if self.state is None:
            self.state = [alloc(n, "optimizer") for n in sizes for _ in (0, 1)]
        tmp = [alloc(n) for n in sizes]                 # _foreach_sqrt(exp_avg_sqs)
        free(*tmp)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    rng = random.Random(14)
    model = build()
    backbone, fpn, head = model
    pixel = [upload(3 * F32, "other"), upload(3 * F32, "other")]   # pixel_mean, pixel_std
    for _, conv in backbone + fpn + head:                           # model.to(device)
        conv.to()
    cell = [upload(A * 4 * F32, "other") for _ in range(5)]         # cell_anchors BufferList
    trainable = [c for _, c in backbone + fpn + head if c.trainable]
    opt = AdamW(trainable)
    scaler = None
    first = None
    for it in range(ITERS):
        job.step(it)
        for conv in trainable:                                      # optimizer.zero_grad()
            free(*conv.grads)
            conv.grads = []
        # the sampler's two images, resized on the host
        shapes = []
        for _ in range(BATCH):
            h, w = SOURCES[rng.randrange(len(SOURCES))]
            shapes.append(resize_shape(h, w, MIN_SIZES[rng.randrange(len(MIN_SIZES))]))
        if it == 3:
            shapes[0] = (768, 1024)                                 # a 480 x 640 source at 768
        boxes = [rng.randrange(2, 15) for _ in range(BATCH)]
        # preprocess_image
        normed = []
        for (h, w) in shapes:
            img = upload(3 * h * w, "prefetch")                     # x["image"].to(device)
            sub = alloc(3 * h * w * F32)                            # x - pixel_mean
            div = alloc(3 * h * w * F32)                            # / pixel_std
            free(img, sub)
            normed.append(div)
        H = -(-max(h for h, _ in shapes) // 32) * 32
        W = -(-max(w for _, w in shapes) // 32) * 32
        batch = alloc(BATCH * 3 * H * W * F32)                      # ImageList.from_tensors
        free(*normed)
        gt = []
        for n in boxes:                                             # instances.to(device)
            gt += [upload(n * 4 * F32, "prefetch"), upload(n * I64, "prefetch")]
        if first is None:
            first = sum(3 * h * w for h, w in shapes) + sum(n * 4 * F32 + n * I64 for n in boxes)
        saved = [batch]
        logits, deltas, hw = forward(model, H, W, saved)
        anchors = anchors_for(hw)
        R = sum(hw(s) for s in (8, 16, 32, 64, 128)) * A           # anchors per image
        labels = []
        for n in boxes:                                             # label_anchors
            iou = alloc(n * R * F32)                                # pairwise_iou
            midx = alloc(R * I64)                                   # Matcher: matched_idxs
            mlab = alloc(R)                                         # match_labels (int8)
            free(iou)
            labels += [alloc(R * I64), alloc(R * 4 * F32)]          # gt_labels, matched boxes
            free(midx, mlab)
        # losses
        pred_logits = alloc(BATCH * R * K * F16)                    # cat of the levels
        pred_deltas = alloc(BATCH * R * 4 * F16)
        onehot = alloc(BATCH * R * (K + 1) * I64)                   # F.one_hot
        target = alloc(BATCH * R * K * F32)                         # [:, :-1].to(dtype)
        free(onehot)
        p = alloc(BATCH * R * K * F32)                              # sigmoid (fp32 under autocast)
        ce = alloc(BATCH * R * K * F32)                             # bce with logits
        pt = alloc(BATCH * R * K * F32)
        focal = alloc(BATCH * R * K * F32)
        free(pt)
        gtd = alloc(BATCH * R * 4 * F32)                            # get_deltas
        l1 = alloc(BATCH * R * 4 * F32)                             # smooth_l1
        losses = [alloc(F32), alloc(F32), alloc(F32)]               # loss_cls, loss_box_reg, sum
        saved += [pred_logits, pred_deltas, target, p, ce, focal, gtd, l1, *anchors, *labels]
        if scaler is None:                                          # _lazy_init_scale_growth_tracker
            scaler = [alloc(F32, "other"), alloc(4, "other")]
        scaled = alloc(F32)                                         # losses * self._scale
        backward(model, saved + [scaled, *losses], hw)
        # grad_scaler.step(optimizer): unscale_ then step unless inf
        inv_scale = alloc(F32, "other")
        found_inf = alloc(F32, "other")
        job.dtoh(0, found_inf, F32)
        opt.step()
        free(inv_scale, found_inf)                                  # update(): state reset
        for g in gt:
            free(g)
        job.dtoh(0, scaler[0], F32)                                 # metrics
    for conv in trainable:
        free(*conv.grads)
    for _, conv in backbone + fpn + head:
        free(*conv.ptrs, *conv.bn_ptrs)
    free(*opt.state, *scaler, *pixel, *cell)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % first)
    job.line("steps 0 %d" % ITERS)
    job.finish()


main()
