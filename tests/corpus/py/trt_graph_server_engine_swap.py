#!/usr/bin/env python3
"""A sentence-embedding service on TensorRT 10's Python API: a MiniLM-shaped
fp16 encoder engine (mean pooling inside, 192 tokens, a dynamic-batch
profile up to 32) served with one CUDA graph per batch bucket (1, 8, 32);
after 80 requests a rebuilt plan with a profile up to 64 (buckets 1, 16,
64) is deserialised beside it, its graphs captured, traffic moved to it
and the first engine released; 80 more requests. TensorRT's default GPU
allocator and cuda-python's `cudart.cudaMalloc`: one cudaMalloc /
cudaFree per buffer.

What is modelled (sources: NVIDIA/TensorRT samples/python/common_runtime.py
(`HostDeviceMem`: `cudaMallocHost` + `cudaMalloc` per I/O tensor,
`allocate_buffers(engine, profile_idx)`: each binding sized from
`get_tensor_profile_shape(name, profile)[-1]`, the profile's maximum;
`_do_inference_base`: `cudaMemcpyAsync` host-to-device into the bound
input buffers, `execute_async_v3`, device-to-host from the output
buffer; `free_buffers`); the TensorRT developer guide's CUDA-graph recipe
(`set_input_shape` for the bucket, one eager `execute_async_v3` to flush
deferred updates, `cudaStreamBeginCapture` / `execute_async_v3` /
`cudaStreamEndCapture` / `cudaGraphInstantiate` with the addresses set
by `set_tensor_address`, then per request only the input copies,
`cudaGraphLaunch` and the output copy: a replay allocates nothing);
`IRuntime.deserialize_cuda_engine` (the plan's weights placed on the
device: one allocation filled by one copy) and
`ICudaEngine.create_execution_context` (the static strategy: one
allocation of `device_memory_size` for activations and scratch); a
server's model-version swap (the new version loaded and warmed before
the old one is unloaded: `del context`, `del engine`)). No markers,
driver by cuGetProcAddress (libcudart).

Truth: both engines' weight blobs weights (45,426,688 B each, one upload
each: no whole_dataset_upload); execution-context memory activations;
the bound input buffers prefetch (depth 1: every request's token ids and
mask copied into the same two buffers of the engine in service); the
bound output buffers activations; 0 steps. Coincidences: the first
engine's output buffer (32 x 384 fp16, 24,576 B, activations) is each of
its input buffers (32 x 192 int32, prefetch); the second engine's are
twice that (49,152 B), as are the first engine's two input buffers
together; the two blobs are one size."""
import random

import vtc

job = vtc.Job("trt_graph_server_engine_swap", "getproc", __doc__)
SEQ, HID = 192, 384
BLOB = 45426688
REQUESTS = 80


def alloc(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


class Engine:
    def __init__(self, max_batch, ctx_mem, buckets):
        self.max_batch, self.buckets = max_batch, buckets
        self.weights = alloc(BLOB, "weights")        # deserialize_cuda_engine
        job.htod(0, self.weights, BLOB)
        self.ctx = alloc(ctx_mem, "activations")     # create_execution_context
        self.io = []                                 # allocate_buffers(engine, 0)
        for name, nbytes, cat in (("input_ids", max_batch * SEQ * 4, "prefetch"),
                                  ("attention_mask", max_batch * SEQ * 4, "prefetch"),
                                  ("sentence_embedding", max_batch * HID * 2, "activations")):
            host = job.pinned(nbytes)                # cudaMallocHost
            self.io.append((name, host, alloc(nbytes, cat), nbytes))
        self.graphs = []
        for b in buckets:                            # set_input_shape + warm-up + capture
            self.run(b, capture=True)

    def bucket(self, n):
        return next(b for b in self.buckets if b >= n)

    def run(self, b, capture=False):
        """Input copies into the bound buffers, a graph launch, the output copy."""
        for _name, host, dev, _n in self.io[:2]:
            job.htod(0, dev, b * SEQ * 4, src=host)
        if capture:
            self.graphs.append(b)                    # eager enqueue, then capture: no allocation
        _name, host, dev, _n = self.io[2]
        job.dtoh(0, dev, b * HID * 2)

    def release(self):
        """free_buffers, del context, del engine."""
        free(*[dev for _n, _h, dev, _b in self.io])
        for _n, host, _d, _b in self.io:
            job.call("cuMemFreeHost", host)
        free(self.ctx, self.weights)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    rng = random.Random(23)
    v1 = Engine(32, 48 * vtc.MIB, (1, 8, 32))
    for _r in range(REQUESTS):
        v1.run(v1.bucket(rng.randint(1, 32)))
    v2 = Engine(64, 88 * vtc.MIB, (1, 16, 64))      # the new plan, warmed before the swap
    v1.release()
    for _r in range(REQUESTS):
        v2.run(v2.bucket(rng.randint(1, 64)))
    v2.release()
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (2 * 32 * SEQ * 4))
    job.line("steps 0 0")
    job.finish()


main()
