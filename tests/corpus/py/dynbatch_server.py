#!/usr/bin/env python3
"""An inference server with dynamic batching: a Triton Inference Server
custom backend serving a 12-layer fp16 BERT-base encoder (sentence
embeddings), `dynamic_batching { max_queue_delay_microseconds: 500 }`,
max_batch_size 32. No training.

What is modelled (sources read: triton-inference-server/backend
src/backend_input_collector.cc `BackendInputCollector::ProcessTensor` (each
request's input copied into one contiguous batch buffer at its offset),
src/backend_output_responder.cc `BackendOutputResponder::ProcessTensor`
(each response's slice of the batch output copied back), src/backend_
memory.cc `BackendMemory::Create` (GPU buffers from Triton's CUDA memory
pool first: `--cuda-memory-pool-byte-size`, one cudaMalloc'd pool per GPU at
server start, carved per request); the FasterTransformer-style model
instance: one weight buffer per layer (the layer's tensors packed and
uploaded in one copy), activation buffers allocated once for max_batch_size
and reused, a cuBLAS workspace allocated once):
  - server start: the CUDA memory pool (64 MiB);
  - model load: the embedding blob, then one blob per layer, each allocated
    and uploaded whole; the activation buffers for 32 x 128 tokens; the
    cuBLAS workspace;
  - per batch (1 to 32 requests, as the scheduler formed them): input_ids
    and attention_mask buffers from the pool, each request's rows copied in
    at its offset; the encoder runs in the preallocated buffers; the pooled
    output buffer from the pool, each response's rows copied back; the pool
    buffers released.
No markers, driver by cuGetProcAddress (libcudart).

Truth: embedding and layer blobs weights (uploaded whole, once: not a
dataset); the memory pool pool (parts: the batch inputs prefetch, the
outputs activations); the preallocated activation buffers activations; the
cuBLAS workspace other (library scratch, as NCCL's buffer); prefetch depth
1 (one batch's inputs at a time; batch bytes recorded for the largest
batch); 0 steps. Sizes: the batch buffers vary with the batch (1 to 32
requests), 512 B to 16 KiB per input; each layer blob is 14,175,744 B."""
import vtc

job = vtc.Job("dynbatch_server", "getproc", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
LAYERS, H, FF, SEQ, MAXB, HEADS = 12, 768, 3072, 128, 32, 12
POOL_BYTES = 64 * MIB
BATCHES = (1, 7, 32, 3, 16, 32, 5, 24, 2, 32, 11, 8, 29, 1, 32, 13)


class CudaMemoryPool:
    """The server's pool: one cudaMalloc, first-fit carving (cnmem-like)."""

    def __init__(self):
        self.base = job.mem_alloc(0, POOL_BYTES, "pool")
        self.blocks = [[0, POOL_BYTES, False]]

    def alloc(self, nbytes, kind):
        size = (nbytes + 255) // 256 * 256
        for i, (off, bsize, used) in enumerate(self.blocks):
            if used or bsize < size:
                continue
            if bsize > size:
                self.blocks[i:i + 1] = [[off, size, False], [off + size, bsize - size, False]]
            self.blocks[i][2] = True
            job.part(0, self.base + off, size, kind)
            return self.base + off
        raise SystemExit("dynbatch_server: pool exhausted")

    def release(self, ptr):
        off = ptr - self.base
        for i, b in enumerate(self.blocks):
            if b[0] == off and b[2]:
                b[2] = False
                job.part_free(0, ptr)
                if i + 1 < len(self.blocks) and not self.blocks[i + 1][2]:
                    b[1] += self.blocks.pop(i + 1)[1]
                if i > 0 and not self.blocks[i - 1][2]:
                    self.blocks[i - 1][1] += self.blocks.pop(i)[1]
                return
        raise SystemExit("dynbatch_server: release of 0x%x, not a block" % ptr)


def layer_blob_bytes():
    per = (H * 3 * H + 3 * H + H * H + H + 2 * H + H * FF + FF + FF * H + H + 2 * H) * 2
    return per


def load_weights():
    """One buffer and one upload per blob (embeddings, then layer by layer)."""
    emb = (30522 * H + 512 * H + 2 * H + 2 * H) * 2
    blobs = []
    for n in [emb] + [layer_blob_bytes()] * LAYERS:
        p = job.mem_alloc(0, n, "weights")
        job.htod(0, p, n)
        blobs.append(p)
    return blobs


def allocate_buffers():
    """Activation buffers for max_batch_size, allocated once."""
    sizes = (MAXB * SEQ * H * 2, MAXB * SEQ * H * 2, MAXB * SEQ * 3 * H * 2,
             MAXB * HEADS * SEQ * SEQ * 2, MAXB * SEQ * FF * 2)
    return [job.mem_alloc(0, n, "activations") for n in sizes]


def ProcessTensor_inputs(pool, requests):
    bufs = []
    for name in ("input_ids", "attention_mask"):
        buf = pool.alloc(requests * SEQ * 4, "prefetch")
        for r in range(requests):  # each request's rows at its offset
            job.htod(0, buf + r * SEQ * 4, SEQ * 4)
        bufs.append(buf)
    return bufs


def ProcessTensor_outputs(pool, requests):
    out = pool.alloc(requests * H * 2, "activations")
    for r in range(requests):
        job.dtoh(0, out + r * H * 2, H * 2)
    return out


def TRITONBACKEND_ModelInstanceExecute(pool, requests):
    inputs = ProcessTensor_inputs(pool, requests)
    out = ProcessTensor_outputs(pool, requests)
    for b in [out] + inputs:
        pool.release(b)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    pool = CudaMemoryPool()
    blobs = load_weights()
    acts = allocate_buffers()
    workspace = job.mem_alloc(0, 4096 * KIB * 2 + 16 * KIB * 8, "other")
    for requests in BATCHES:
        TRITONBACKEND_ModelInstanceExecute(pool, requests)
    for p in [workspace] + acts + blobs + [pool.base]:
        job.mem_free(0, p)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (2 * MAXB * SEQ * 4))
    job.line("steps 0 0")
    job.finish()


main()
