#!/usr/bin/env python3
"""vLLM-style serving with a paged KV cache (PagedAttention), one cudaMalloc
per tensor. Worker.load_model -> DefaultModelLoader.load_model: the model is
built under `with torch.device("cuda")` (every parameter an uninitialised
device tensor), then model.load_weights iterates the safetensors shards and
each parameter's weight_loader copies the saved tensor in
(param.data.copy_: an upload; the fused qkv_proj and gate_up_proj receive
their q/k/v and gate/up shards at offsets, QKVParallelLinear /
MergedColumnParallelLinear weight_loader narrow()). Worker.
determine_num_available_blocks: profile_run (a dummy forward of
max_num_batched_tokens, its activations freed, torch.cuda.empty_cache),
torch.cuda.mem_get_info, then num_gpu_blocks = (total *
gpu_memory_utilization - peak) // block_bytes. The KV cache is then ONE
preallocated torch.empty of num_gpu_blocks blocks (the layout of one
shared int8 KV tensor viewed per layer), most of the device, never freed.
The block manager (host side) hands blocks of it to sequences; no driver
allocation follows. Each engine step (LLMEngine.step ->
ModelRunner.execute_model -> _prepare_model_input_tensors -> async_tensor_h2d)
uploads input_tokens, input_positions, slot_mapping and block_tables; the
forward's hidden states and logits come and go. One sequence is preempted
by swapping (CacheEngine.swap_out: its blocks copied to the host) and
resumed later (swap_in: its blocks copied from the host into NEW blocks, at
their offsets in the KV region). No markers, driver by dlsym.

Truth: parameters weights (filled from the host, tensor by tensor); the KV
region `other` (the corpus convention for an inference server's KV cache;
it only ever holds KV blocks, so it is one kind: a part line per block run
handed to a sequence, all `other`); the per-step input tensors prefetch
(depth 1: one step's inputs at a time); the profile run's and each
forward's tensors activations; no dataset (the swap-in copies fill the KV
region block by block: not a dataset); 0 optimizer steps. Coincidences: the
1024-token prompt's hidden state (1024 x 1024 fp16) is exactly an o_proj's
bytes; a step's input_tokens, input_positions and slot_mapping are equal."""
import ctypes

import vtc

job = vtc.Job("vllm_block_pool", "dlsym", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
HIDDEN, KV_DIM, INTER, VOCAB, LAYERS = 1024, 256, 2816, 32000, 8
BLOCK_TOKENS = 16
BLOCK_BYTES = 2 * LAYERS * BLOCK_TOKENS * KV_DIM * 2    # k and v, fp16: 128 KiB
MAX_BATCHED_TOKENS = 2048
UTILIZATION = 0.9
PROMPTS = (1024, 96, 1500, 320, 64, 900)                # tokens per request
DECODE = (40, 64, 24, 80, 48, 32)                      # tokens generated


def parameter_shapes():
    """(name, bytes, shards) as built by the model class."""
    yield "embed_tokens", VOCAB * HIDDEN * 2, 1
    for l in range(LAYERS):
        yield "layers.%d.qkv_proj" % l, (HIDDEN + 2 * KV_DIM) * HIDDEN * 2, 3
        yield "layers.%d.o_proj" % l, HIDDEN * HIDDEN * 2, 1
        yield "layers.%d.gate_up_proj" % l, 2 * INTER * HIDDEN * 2, 2
        yield "layers.%d.down_proj" % l, INTER * HIDDEN * 2, 1
        yield "layers.%d.input_layernorm" % l, HIDDEN * 2, 1
        yield "layers.%d.post_attention_layernorm" % l, HIDDEN * 2, 1
    yield "norm", HIDDEN * 2, 1
    yield "lm_head", VOCAB * HIDDEN * 2, 1


def _initialize_model():
    """Parameters made under torch.device("cuda"): torch.empty, no upload."""
    return [(name, job.mem_alloc(0, n, "weights"), n, shards)
            for name, n, shards in parameter_shapes()]


def weight_loader(param, nbytes, shards):
    if shards == 1:
        job.htod(0, param, nbytes)  # default_weight_loader: param.data.copy_
        return
    # fused: q (HIDDEN rows) then k and v (KV_DIM rows each); gate then up
    if shards == 3:
        sizes = (HIDDEN * HIDDEN * 2, KV_DIM * HIDDEN * 2, KV_DIM * HIDDEN * 2)
    else:
        sizes = (nbytes // 2, nbytes // 2)
    off = 0
    for s in sizes:  # param_data.narrow(0, offset, size).copy_(loaded_weight)
        job.htod(0, param + off, s)
        off += s


def load_weights(params):
    for _name, p, n, shards in params:
        weight_loader(p, n, shards)


def load_model():
    params = _initialize_model()
    load_weights(params)
    return params


def forward(num_tokens, last_tokens):
    hidden = job.mem_alloc(0, num_tokens * HIDDEN * 2, "activations")
    inter = job.mem_alloc(0, num_tokens * INTER * 2 * 2, "activations")
    job.mem_free(0, inter)
    logits = job.mem_alloc(0, last_tokens * VOCAB * 4, "activations")
    job.mem_free(0, hidden)
    return logits


def profile_run():
    logits = forward(MAX_BATCHED_TOKENS, 256)
    job.mem_free(0, logits)


def mem_get_info():
    free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
    fn = job.lib.cuMemGetInfo_v2
    fn.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
    fn.restype = ctypes.c_int
    rc = fn(ctypes.byref(free), ctypes.byref(total))
    if rc != 0:
        raise SystemExit("vllm_block_pool: cuMemGetInfo_v2 returned %d" % rc)
    return free.value, total.value


def determine_num_available_blocks(weights_bytes, peak_activation_bytes):
    profile_run()
    free, total = mem_get_info()
    budget = int(total * UTILIZATION) - weights_bytes - peak_activation_bytes
    return budget // BLOCK_BYTES


class CacheEngine:
    def __init__(self, num_blocks):
        self.num_blocks = num_blocks
        self.base = self._allocate_kv_cache()

    def _allocate_kv_cache(self):
        return job.mem_alloc(0, self.num_blocks * BLOCK_BYTES, "other")  # torch.empty

    def swap_out(self, blocks):
        for b in blocks:  # ops.swap_blocks: device to host per block
            job.dtoh(0, self.base + b * BLOCK_BYTES, BLOCK_BYTES)

    def swap_in(self, blocks, pinned):
        for b in blocks:  # ops.swap_blocks: host to device per block
            job.htod(0, self.base + b * BLOCK_BYTES, BLOCK_BYTES, src=pinned)


class BlockSpaceManager:
    """Host-side: hands out block ids inside the one KV region."""

    def __init__(self, engine):
        self.engine = engine
        self.free_ids = list(range(engine.num_blocks))
        self.tables = {}

    def _mark(self, seq, first):
        job.part(0, self.engine.base + first * BLOCK_BYTES, BLOCK_BYTES, "other")

    def allocate(self, seq, tokens):
        table = self.tables.setdefault(seq, [])
        while len(table) * BLOCK_TOKENS < tokens:
            b = self.free_ids.pop(0)
            table.append(b)
            self._mark(seq, b)
        return table

    def free(self, seq):
        for b in self.tables.pop(seq, []):
            job.part_free(0, self.engine.base + b * BLOCK_BYTES)
            self.free_ids.insert(0, b)


def async_tensor_h2d(nbytes, pinned):
    t = job.mem_alloc(0, nbytes, "prefetch")
    job.htod(0, t, nbytes, src=pinned)
    return t


def _prepare_model_input_tensors(num_tokens, num_seqs, max_blocks, pinned):
    return [async_tensor_h2d(num_tokens * 8, pinned),            # input_tokens
            async_tensor_h2d(num_tokens * 8, pinned),            # input_positions
            async_tensor_h2d(num_tokens * 8, pinned),            # slot_mapping
            async_tensor_h2d(num_seqs * max_blocks * 4, pinned)]  # block_tables


def execute_model(num_tokens, num_seqs, max_blocks, pinned):
    inputs = _prepare_model_input_tensors(num_tokens, num_seqs, max_blocks, pinned)
    logits = forward(num_tokens, num_seqs)
    job.dtoh(0, logits, num_seqs * 8)  # sampled token ids back to the host
    job.mem_free(0, logits)
    for t in inputs:
        job.mem_free(0, t)


class LLMEngine:
    def __init__(self, manager, engine, pinned):
        self.manager, self.engine, self.pinned = manager, engine, pinned
        self.len = {}
        self.left = {}
        self.swapped = {}

    def add_request(self, seq, prompt, decode):
        self.manager.allocate(seq, prompt)
        table = self.manager.tables[seq]
        execute_model(prompt, 1, len(table), self.pinned)  # prefill alone
        self.len[seq], self.left[seq] = prompt + 1, decode - 1

    def preempt_by_swap(self, seq):
        self.engine.swap_out(self.manager.tables[seq])
        self.swapped[seq] = self.len.pop(seq)
        self.manager.free(seq)

    def resume(self, seq):
        self.len[seq] = self.swapped.pop(seq)
        table = self.manager.allocate(seq, self.len[seq])
        self.engine.swap_in(table, self.pinned)

    def step(self):
        running = [s for s in self.len if self.left[s] > 0]
        if not running:
            return
        for s in running:
            self.manager.allocate(s, self.len[s])
            self.len[s] += 1
            self.left[s] -= 1
        max_blocks = max(len(self.manager.tables[s]) for s in running)
        execute_model(len(running), len(running), max_blocks, self.pinned)
        for s in running:
            if self.left[s] == 0:
                self.manager.free(s)
                del self.len[s]


def serve(llm):
    for seq, (prompt, decode) in enumerate(zip(PROMPTS, DECODE)):
        llm.add_request(seq, prompt, decode)
        for _ in range(12):
            llm.step()
        if seq == 2:
            llm.preempt_by_swap(1)
        if seq == 4:
            llm.resume(1)
    while any(llm.left[s] > 0 for s in llm.len):
        llm.step()


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    params = load_model()
    weights_bytes = sum(n for _name, _p, n, _s in params)
    peak_act = MAX_BATCHED_TOKENS * (HIDDEN * 2 + INTER * 4) + 256 * VOCAB * 4
    engine = CacheEngine(determine_num_available_blocks(weights_bytes, peak_act))
    manager = BlockSpaceManager(engine)
    pinned = job.pinned(BLOCK_BYTES)
    llm = LLMEngine(manager, engine, pinned)
    serve(llm)
    job.mem_free(0, engine.base)  # engine shutdown
    for _name, p, _n, _s in params:
        job.mem_free(0, p)
    job.line("no_finding whole_dataset_upload")
    # batch bytes (information only): one sequence's decode step
    job.line("finding prefetch_depth 0 1 %d" % (3 * 8 + 4 * 1))
    job.line("steps 0 0")
    job.finish()


main()
