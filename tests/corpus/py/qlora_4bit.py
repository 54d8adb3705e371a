#!/usr/bin/env python3
"""QLoRA-style fine-tuning of a 4-bit quantized causal LM (transformers +
peft, PYTORCH_NO_CUDA_MEMORY_CACHING=1: one cudaMalloc per tensor).
from_pretrained of a pre-quantized checkpoint builds the model on the meta
device, then PreTrainedModel._load_pretrained_model ->
_load_state_dict_into_meta_model -> set_module_tensor_to_device uploads each
saved tensor (value.to(device)): per quantized linear the packed 4-bit
blocks (`qweight`, two weights a byte), the fp16 group scales (`scales`, one
per 128 weights) and the packed zero points (`qzeros`); the embedding,
lm_head and norms stay fp16. get_peft_model -> LoraLayer.update_layer makes
lora_A / lora_B on the host and _move_adapter_to_device_of_base_layer
uploads them (r=16 on q_proj and v_proj). Trainer: _prepare_inputs ->
_prepare_input uploads input_ids, attention_mask and labels each step (one
batch on the device); each quantized linear dequantizes its weight to a
transient fp16 tensor for its matmul, in the forward and again in the
backward, and frees it; hidden states are kept for the backward; the logits
are one fp16 tensor; the backward makes the adapters' .grads only (the base
is frozen); torch.optim.AdamW (_init_group: exp_avg/exp_avg_sq at the first
step, adapters only); zero_grad(set_to_none=True). Markers on, driver by
cuGetProcAddress.

Truth: qweight, scales, qzeros, embedding, lm_head, norms and the adapters
weights (a quantized tensor is a weight whatever its dtype); the dequantized
fp16 copies activations (a temporary of one matmul, never kept across a
step); adapter .grads gradients; AdamW state optimizer; the three input
tensors prefetch (depth 1); hidden states and logits activations; no
dataset; 8 steps. Coincidences: the logits (4 x 512 x 16000 fp16) are
exactly the embedding's bytes; an input tensor (4 x 512 int64, 16 KiB) is a
qzeros tensor's bytes; a dequantized q_proj (8 MiB) is a hidden state's."""
import vtc

job = vtc.Job("qlora_4bit", "getproc", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
HIDDEN, INTER, VOCAB, LAYERS, GROUP = 2048, 5504, 16000, 8, 128
BATCH, SEQ, RANK, STEPS = 4, 512, 16, 8
INPUT = BATCH * SEQ * 8                       # int64 ids: 16 KiB
HIDDEN_STATE = BATCH * SEQ * HIDDEN * 2       # fp16: 8 MiB
LOGITS = BATCH * SEQ * VOCAB * 2              # fp16: = the embedding
EMBED = VOCAB * HIDDEN * 2
ATTN = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP = ("gate_proj", "up_proj", "down_proj")


def linear_shape(name):
    return (HIDDEN, HIDDEN) if name in ATTN else (HIDDEN, INTER)


def quantized_tensors(name):
    """(suffix, bytes) of one 4-bit linear as saved."""
    n = linear_shape(name)[0] * linear_shape(name)[1]
    return (("qweight", n // 2), ("scales", n // GROUP * 2), ("qzeros", n // GROUP // 2))


def checkpoint_entries():
    yield "model.embed_tokens.weight", EMBED
    for l in range(LAYERS):
        for proj in ATTN + MLP:
            for suffix, nbytes in quantized_tensors(proj):
                yield "model.layers.%d.%s.%s" % (l, proj, suffix), nbytes
        for norm in ("input_layernorm", "post_attention_layernorm"):
            yield "model.layers.%d.%s.weight" % (l, norm), HIDDEN * 2
    yield "model.norm.weight", HIDDEN * 2
    yield "lm_head.weight", EMBED


def set_module_tensor_to_device(module, name, nbytes):
    t = job.mem_alloc(0, nbytes, "weights")  # value.to(device)
    job.htod(0, t, nbytes)
    module[name] = (t, nbytes)


def _load_state_dict_into_meta_model(module):
    for name, nbytes in checkpoint_entries():
        set_module_tensor_to_device(module, name, nbytes)


def from_pretrained():
    module = {}
    _load_state_dict_into_meta_model(module)
    return module


def _move_adapter_to_device_of_base_layer(adapters, key, nbytes):
    t = job.mem_alloc(0, nbytes, "weights")
    job.htod(0, t, nbytes)
    adapters[key] = (t, nbytes)


def get_peft_model(module):
    adapters = {}
    for l in range(LAYERS):
        for proj in ("q_proj", "v_proj"):
            fan_in, fan_out = linear_shape(proj)
            _move_adapter_to_device_of_base_layer(adapters, (l, proj, "A"), RANK * fan_in * 4)
            _move_adapter_to_device_of_base_layer(adapters, (l, proj, "B"), fan_out * RANK * 4)
    return adapters


def _prepare_input(pinned):
    t = job.mem_alloc(0, INPUT, "prefetch")
    job.htod(0, t, INPUT, src=pinned)
    return t


def _prepare_inputs(pinned):
    return [_prepare_input(pinned) for _ in ("input_ids", "attention_mask", "labels")]


def dequantize_4bit(proj):
    a, b = linear_shape(proj)
    return job.mem_alloc(0, a * b * 2, "activations")


def matmul_4bit(proj):
    w = dequantize_4bit(proj)
    job.mem_free(0, w)


def forward(adapters):
    saved = []
    for l in range(LAYERS):
        for proj in ATTN + MLP:
            matmul_4bit(proj)
        saved.append(job.mem_alloc(0, HIDDEN_STATE, "activations"))
    saved.append(job.mem_alloc(0, LOGITS, "activations"))
    return saved


def backward(adapters, saved):
    grads = {}
    job.mem_free(0, saved.pop())  # logits consumed by the loss's backward
    for l in reversed(range(LAYERS)):
        for proj in reversed(ATTN + MLP):
            matmul_4bit(proj)  # grad wrt the input needs the weight again
            if proj in ("q_proj", "v_proj"):
                for side in ("B", "A"):
                    grads[(l, proj, side)] = job.mem_alloc(0, adapters[(l, proj, side)][1],
                                                           "gradients")
        job.mem_free(0, saved.pop())
    return grads


class AdamW:
    def __init__(self, adapters):
        self.adapters = adapters
        self.state = []

    def _init_group(self):
        for _key, (_t, nbytes) in self.adapters.items():
            for _ in ("exp_avg", "exp_avg_sq"):
                s = job.mem_alloc(0, nbytes, "optimizer")
                job.zero(0, s, nbytes)
                self.state.append(s)

    def step(self):
        if not self.state:
            self._init_group()


def training_step(adapters, opt, pinned):
    inputs = _prepare_inputs(pinned)
    saved = forward(adapters)
    grads = backward(adapters, saved)
    opt.step()
    for g in grads.values():  # zero_grad(set_to_none=True)
        job.mem_free(0, g)
    for t in inputs:
        job.mem_free(0, t)


def train(adapters, opt, pinned):
    for s in range(STEPS):
        job.step(s)
        training_step(adapters, opt, pinned)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    module = from_pretrained()
    adapters = get_peft_model(module)
    opt = AdamW(adapters)
    pinned = job.pinned(INPUT)
    train(adapters, opt, pinned)
    for t in opt.state:
        job.mem_free(0, t)
    for t, _ in list(adapters.values()) + list(module.values()):
        job.mem_free(0, t)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (3 * INPUT))
    job.line("steps 0 %d" % STEPS)
    job.finish()


main()
