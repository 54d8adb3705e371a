#!/usr/bin/env python3
"""PyTorch Lightning `Trainer(max_steps=24, val_check_interval=8,
limit_val_batches=3, callbacks=[ModelCheckpoint(monitor="val_loss",
save_top_k=2, save_last=True), EMA(decay=0.999)]).fit(model, dm)` on a
4-layer BERT-small-shaped text classifier, fp32, AdamW, under
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (one cuMemAllocAsync per
tensor, cuMemFreeAsync when it dies).

What is modelled (sources read: lightning/pytorch/loops/fit_loop.py,
training_epoch_loop.py `_should_check_val_fx` (validation every 8 batches),
evaluation_loop.py (`torch.no_grad`, 3 batches); core/module.py
`_apply_batch_transfer_handler` -> utilities/apply_func `move_data_to_device`
(input_ids, attention_mask, labels copied per batch); trainer/connectors/
logger_connector/result.py `_ResultMetric` (`value` and
`cumulated_batch_size` made as device tensors at the first `self.log` of
each key, kept; `compute()` reads them back); callbacks/model_checkpoint.py
`_save_topk_checkpoint` -> `trainer.save_checkpoint` -> checkpoint_connector
`dump_checkpoint` (model `state_dict`, optimizer `state_dict`, callback
states) -> torch.save: every device tensor copied to the host, nothing
allocated on the device); NeMo collections/common/callbacks/ema.py `EMA`
and `EMAOptimizer` (`ema_params = tuple(copy.deepcopy(p.data.detach()))`
made on the first step, `torch._foreach_mul_` / `_foreach_add_` in place
every step, `swap_model_weights` around validation and checkpoint saving:
`swap_tensors_tuple` makes an `empty_like` temporary per parameter);
torch/optim/adamw.py `_multi_tensor_adamw` (exp_avg / exp_avg_sq at the
first step, `_foreach_sqrt` temporaries, `step` on the host)):
  - `model.to(device)` in `strategy.model_to_device`: every parameter
    uploaded;
  - each training batch moved to the device, forward, backward (`.grad`s
    made at the first backward, zeroed with set_to_none after each step),
    AdamW, then the EMA update;
  - every 8 steps: EMA weights swapped in, 3 validation batches (64 rows,
    no_grad), `val_loss` logged, a checkpoint saved with the EMA weights
    in (ModelCheckpoint runs in `on_validation_end`), weights swapped
    back.
Markers on, driver by cuGetProcAddress (libcudart).

Truth: parameters and EMA shadows weights (the EMA copies are a second
model, kept); `.grad`s gradients; exp_avg / exp_avg_sq optimizer; batches
prefetch (depth 1: copied synchronously, one at a time); forward, backward,
swap temporaries and AdamW temporaries activations; the logged metrics'
device scalars other. No dataset; 24 steps. Coincidences: attention_mask is
input_ids' size; a validation batch's input_ids (64 x 256 int64 = 131,072
B) are one 256 x 128 float32 pooler weight; each EMA shadow, exp_avg and
exp_avg_sq is its parameter's size; the FFN intermediate (32 x 256 x 1024
float32) is the attention probabilities' size (32 MiB)."""
import vtc

job = vtc.Job("lightning_ckpt_ema", "getproc", __doc__)
V, D, L, FF, SEQ, B, VB = 30522, 256, 4, 1024, 256, 32, 64
STEPS, VAL_EVERY, VAL_BATCHES = 24, 8, 3


def empty(n, cat):
    return job.mem_alloc_async(0, n, cat)


def free(*ptrs):
    for p in ptrs:
        job.mem_free_async(0, p)


def param_sizes():
    out = [V * D * 4, SEQ * D * 4, 2 * D * 4, D * 4, D * 4]  # word, position, type, LN
    for _ in range(L):
        out += [D * 3 * D * 4, 3 * D * 4, D * D * 4, D * 4, D * 4, D * 4,
                D * FF * 4, FF * 4, FF * D * 4, D * 4, D * 4, D * 4]
    out += [D * 128 * 4, 128 * 4, 128 * 2 * 4, 2 * 4]  # pooler (256 -> 128), classifier
    return out


class Module:
    def __init__(self):
        self.sizes = param_sizes()
        self.params = [job.upload(0, n, "weights") for n in self.sizes]
        self.grads = None

    def forward(self, rows, train):
        saved = []
        h = empty(rows * SEQ * D * 4, "activations")  # embeddings + LN
        for _ in range(L):
            qkv = empty(rows * SEQ * 3 * D * 4, "activations")
            scores = empty(rows * 4 * SEQ * SEQ * 4, "activations")
            probs = empty(rows * 4 * SEQ * SEQ * 4, "activations")
            free(scores)
            ctx = empty(rows * SEQ * D * 4, "activations")
            h1 = empty(rows * SEQ * D * 4, "activations")
            f1 = empty(rows * SEQ * FF * 4, "activations")
            f2 = empty(rows * SEQ * D * 4, "activations")
            if train:
                saved += [h, qkv, probs, ctx, h1, f1]
            else:
                free(h, qkv, probs, ctx, h1, f1)
            h = f2
        logits = empty(rows * 2 * 4, "activations")
        saved.append(h)
        if not train:
            free(h)
            saved = []
        return logits, saved

    def backward(self, saved):
        if self.grads is None:
            self.grads = [empty(n, "gradients") for n in reversed(self.sizes)][::-1]
        g = empty(B * SEQ * D * 4, "activations")
        for _ in range(L):
            g2 = empty(B * SEQ * FF * 4, "activations")
            free(g)
            g = empty(B * SEQ * D * 4, "activations")
            free(g2)
        free(g, *saved)


class AdamW:
    def __init__(self, sizes):
        self.sizes, self.state = sizes, None

    def step(self):
        if self.state is None:
            self.state = []
            for n in self.sizes:
                for _ in range(2):
                    s = empty(n, "optimizer")
                    job.zero(0, s, n)
                    self.state.append(s)
        tmp = [empty(n, "activations") for n in self.sizes]  # _foreach_sqrt
        free(*tmp)


class EMA:
    def __init__(self):
        self.shadow = None

    def update(self, model):
        if self.shadow is None:  # deepcopy of p.data on the first step
            self.shadow = []
            for p, n in zip(model.params, model.sizes):
                s = empty(n, "weights")
                job.dtod(0, s, p, n)
                self.shadow.append(s)
        # _foreach_mul_ / _foreach_add_ in place: nothing allocated

    def swap(self, model):
        for p, s, n in zip(model.params, self.shadow, model.sizes):
            tmp = empty(n, "activations")  # swap_tensors_tuple
            job.dtod(0, tmp, p, n)
            job.dtod(0, p, s, n)
            job.dtod(0, s, tmp, n)
            free(tmp)


class Metrics:
    def __init__(self):
        self.keys = {}

    def log(self, key, value):
        if key not in self.keys:  # _ResultMetric: value, cumulated_batch_size
            self.keys[key] = [empty(4, "other"), empty(8, "other")]
        job.dtod(0, self.keys[key][0], value, 4)


def move_batch(rows):
    return [job.upload(0, rows * SEQ * 8, "prefetch"), job.upload(0, rows * SEQ * 8, "prefetch"),
            job.upload(0, rows * 8, "prefetch")]


def save_checkpoint(model, opt, ema):
    for p, n in zip(model.params, model.sizes):  # state_dict -> torch.save
        job.dtoh(0, p, n)
    for s, n in zip(opt.state, [n for n in model.sizes for _ in range(2)]):
        job.dtoh(0, s, n)
    for s, n in zip(ema.shadow, model.sizes):  # EMA.state_dict
        job.dtoh(0, s, n)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    model = Module()
    opt, ema, metrics = AdamW(model.sizes), EMA(), Metrics()
    for step in range(STEPS):
        job.step(step)
        batch = move_batch(B)
        logits, saved = model.forward(B, train=True)
        loss = empty(4, "activations")
        free(logits)
        model.backward(saved)
        opt.step()
        ema.update(model)
        metrics.log("train_loss", loss)
        free(loss, *batch)
        free(*model.grads)  # zero_grad(set_to_none=True)
        model.grads = None
        if (step + 1) % VAL_EVERY == 0:
            ema.swap(model)
            for _ in range(VAL_BATCHES):
                vb = move_batch(VB)
                vl, _ = model.forward(VB, train=False)
                vloss = empty(4, "activations")
                metrics.log("val_loss", vloss)
                free(vl, vloss, *vb)
            for key in metrics.keys.values():
                job.dtoh(0, key[0], 4)  # compute() for the monitor
            save_checkpoint(model, opt, ema)
            ema.swap(model)
    free(*opt.state, *ema.shadow, *model.params)
    for key in metrics.keys.values():
        free(*key)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (B * SEQ * 16 + B * 8))
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
