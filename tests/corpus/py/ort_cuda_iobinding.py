#!/usr/bin/env python3
"""A sentence-embedding service on ONNX Runtime's CUDA execution provider:
a MiniLM-L12-shaped fp32 encoder (vocab 30,522, hidden 384, 12 layers,
FFN 1,536) exported to ONNX, `InferenceSession(providers=[("CUDAExecutionProvider",
{"arena_extend_strategy": "kSameAsRequested"})])`, then 24 requests of 8
sentences padded to a bucket of 128 or 256 tokens, each through IOBinding:
`OrtValue.ortvalue_from_numpy(x, "cuda", 0)` for input_ids,
attention_mask and token_type_ids, `bind_output("sentence_embedding",
"cuda")`, `run_with_iobinding`, `copy_outputs_to_cpu()`. Inference only.

What is modelled (sources read: onnxruntime/core/framework/bfc_arena.cc
(`Extend`: kNextPowerOfTwo doubles `curr_region_allocation_bytes_` from
the 1 MiB initial chunk, kSameAsRequested extends by exactly the rounded
request; `Reserve`: a direct device allocation kept apart from the bins;
`FindChunkPtr` / `SplitFreeChunkFromBin`: smallest fitting free chunk,
split when at least twice the request or 128 MiB would be wasted; 256-B
rounding), tensor_allocator_with_mem_pattern.h
(`AllocatePlannedBuffersAndReportTotalSize`: ALL initializers in one
buffer of the planned peak from `Reserve`, "so they don't affect arena
growth patterns"; each initializer deserialized and copied into its
offset), execution_frame.cc (a run whose input shapes have no cached
memory pattern allocates each intermediate from the arena and frees it
after its last consumer, then caches the pattern; a later run of the same
shapes takes ONE block of the pattern's peak from the arena; graph outputs
are allocated apart), python/onnxruntime_pybind_state.cc (`GetCudaAllocator`:
the OrtValues made from numpy come from a SEPARATE process-wide CUDA arena
with the default kNextPowerOfTwo configuration, never freed), IOBinding
(inputs already on the device are used in place; the bound output lives
until the binding is dropped)). The arenas are `vtc.BFC` regions (the
pybind arena starting at 1 MiB). No markers, driver by dlsym.

Truth: the initializer buffer (132,848,640 B, one Reserve, 197 copies at
offsets) weights, NO whole_dataset_upload (weights from the host, as for
any served model); the pybind arena's region prefetch (only the request
inputs ever lived there), depth 1 (one request's three inputs at a time);
the session arena's regions activations (intermediates, pattern blocks and
bound outputs), each settled by what it held. No dataset. 0 steps.
Coincidences: the three inputs of a request are one size (8,192 B for
128 tokens); a 128-token batch's attention scores (8 x 12 x 128 x 128
float32) and its FFN activation (8 x 128 x 1,536 float32) are one size
(6,291,456 B); the int64 mask cast made by the first node of a
128-token run is an input's size (8,192 B: activations beside prefetch)."""
import vtc

job = vtc.Job("ort_cuda_iobinding", "dlsym", __doc__)
VOCAB, HID, LAYERS, FFN, HEADS, MAXPOS = 30522, 384, 12, 1536, 12, 512
BATCH = 8
BUCKETS = [128, 128, 256, 128, 256, 256, 128, 128, 256, 128, 128, 256,
           128, 256, 128, 128, 256, 256, 128, 128, 256, 128, 256, 128]
ALIGN = 256


class SameAsRequestedBFC(vtc.BFC):
    """bfc_arena.cc Extend with kSameAsRequested: each new region is the
    rounded request, no doubling."""

    def _extend(self, rounded):
        ptr = self.job.mem_alloc(self.dev, rounded, "pool")
        rec = self.job.records[-1]
        region = [ptr, rounded, set(), rec]
        self.regions.append(region)
        self.chunks[ptr] = [rounded, True, region]


class PowerOfTwoBFC(vtc.BFC):
    """The default arena configuration: the first region 1 MiB, doubling."""

    def __init__(self, job, dev):
        super().__init__(job, dev)
        self.curr = 1 * vtc.MIB


def initializers():
    """(name, bytes) in graph initializer order."""
    out = [("word_embeddings", VOCAB * HID * 4), ("position_embeddings", MAXPOS * HID * 4),
           ("token_type_embeddings", 2 * HID * 4), ("emb_ln.weight", HID * 4), ("emb_ln.bias", HID * 4)]
    for i in range(LAYERS):
        for n in ("query", "key", "value", "attn_out"):
            out += [("l%d.%s.weight" % (i, n), HID * HID * 4), ("l%d.%s.bias" % (i, n), HID * 4)]
        out += [("l%d.ln1.weight" % i, HID * 4), ("l%d.ln1.bias" % i, HID * 4),
                ("l%d.ffn1.weight" % i, HID * FFN * 4), ("l%d.ffn1.bias" % i, FFN * 4),
                ("l%d.ffn2.weight" % i, FFN * HID * 4), ("l%d.ffn2.bias" % i, HID * 4),
                ("l%d.ln2.weight" % i, HID * 4), ("l%d.ln2.bias" % i, HID * 4)]
    return out


def aligned(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def save_initialized_tensors():
    """One Reserve of the planned peak, then each initializer copied in."""
    inits = initializers()
    total = sum(aligned(n) for _name, n in inits)
    buf = job.mem_alloc(0, total, "weights")            # BFCArena::Reserve
    off = 0
    for _name, n in inits:
        job.htod(0, buf + off, n)                       # DeserializeTensorProto + CopyTensor
        off += aligned(n)
    return buf, total


def graph_nodes(seq):
    """Intermediate tensors in execution order: (bytes, index of the last
    consumer step). A tensor is freed after its last consumer."""
    h = BATCH * seq * HID * 4
    sc = BATCH * HEADS * seq * seq * 4
    f = BATCH * seq * FFN * 4
    nodes = []                                          # (bytes, lifetime in nodes)
    nodes += [(BATCH * seq * 8, 3), (h, 2), (h, 1), (h, 1), (h, 3)]   # mask cast, gathers, adds, LN
    for _ in range(LAYERS):
        nodes += [(h, 3), (h, 3), (h, 4), (sc, 1), (sc, 1), (sc, 1), (h, 1), (h, 1),
                  (h, 1), (h, 5), (f, 1), (f, 1), (h, 1), (h, 1), (h, 8)]
    nodes += [(h, 1), (BATCH * HID * 4, 1), (BATCH * 4, 1)]           # masked sum, counts
    return nodes


def pattern_peak(seq):
    live, peak, t = [], 0, 0
    for n, life in graph_nodes(seq):
        live = [(b, end) for b, end in live if end >= t]
        live.append((aligned(n), t + life))
        peak = max(peak, sum(b for b, _e in live))
        t += 1
    return peak


def execute(arena, seq, patterns):
    """ExecutionFrame: per-tensor arena allocations on the first run of a
    shape, one pattern block afterwards; the bound output apart."""
    if seq in patterns:
        block = arena.alloc(patterns[seq], "activations")
        out = arena.alloc(BATCH * HID * 4, "activations")
        arena.free(block)
        return out
    live, t = [], 0
    for n, life in graph_nodes(seq):
        for p, end in [x for x in live if x[1] < t]:
            arena.free(p)
        live = [x for x in live if x[1] >= t]
        live.append((arena.alloc(n, "activations"), t + life))
        t += 1
    out = arena.alloc(BATCH * HID * 4, "activations")  # sentence_embedding (graph output)
    for p, _end in live:
        arena.free(p)
    patterns[seq] = pattern_peak(seq)
    return out


def ortvalue_from_numpy(pyarena, nbytes):
    p = pyarena.alloc(nbytes, "prefetch")
    job.htod(0, p, nbytes)
    return p


def run_with_iobinding(sess_arena, pyarena, seq, patterns):
    n = BATCH * seq * 8
    inputs = [ortvalue_from_numpy(pyarena, n) for _ in ("input_ids", "attention_mask", "token_type_ids")]
    out = execute(sess_arena, seq, patterns)
    job.dtoh(0, out, BATCH * HID * 4)                   # copy_outputs_to_cpu()
    sess_arena.free(out)                                # the binding dropped
    pyarena.free(*inputs)                               # the OrtValues dropped


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    sess_arena = SameAsRequestedBFC(job, 0)
    weights, _total = save_initialized_tensors()
    pyarena = PowerOfTwoBFC(job, 0)
    patterns = {}
    for seq in BUCKETS:
        run_with_iobinding(sess_arena, pyarena, seq, patterns)
    sess_arena.settle()
    pyarena.settle()
    sess_arena.release()                                # ~BFCArena: regions, then reserved chunks
    job.mem_free(0, weights)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (3 * BATCH * 128 * 8))
    job.line("steps 0 0")
    job.finish()


main()
