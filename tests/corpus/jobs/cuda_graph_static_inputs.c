/* A PyTorch MLP trained by replaying one CUDA graph of the whole iteration
 * (forward, loss, backward and SGD with momentum captured together), over
 * the CUDACachingAllocator: the capture's tensors come from the graph's
 * private memory pool, the inputs are static buffers refilled from pinned
 * host memory before every replay.
 *
 * What is modelled (sources read: PyTorch's CUDA semantics notes, "Whole-
 * network capture" (static_input / static_target made before warmup, 3
 * warmup iterations on a side stream, `optimizer.zero_grad(set_to_none=
 * True)` before `with torch.cuda.graph(g):` so that the backward makes the
 * `.grad`s inside the capture, `static_input.copy_(data)` then
 * `g.replay()`); torch/cuda/graphs.py `CUDAGraph.capture_begin(pool=...)`,
 * `graph_pool_handle`; c10/cuda/CUDACachingAllocator.cpp
 * `beginAllocateToPool` / `PrivatePool` (during capture every block comes
 * from the graph's own pool, whose segments are cudaMalloc'd then and kept
 * as long as the graph lives; blocks freed during the capture are reused
 * within it; a replay allocates nothing); megatron core full_cuda_graph.py
 * `StaticBufferLoader` (data copied into static buffers); torch/optim/sgd.py
 * `_multi_tensor_sgd` (`momentum_buffer` = clone(grad) at the first step, in
 * place after, so capturable); vtc_cache for the allocator's rules):
 *  - `model.cuda()`: every parameter a block and an upload;
 *  - static_input (512 x 784 float32) and static_target (512 int64) made
 *    once in the ordinary pool;
 *  - 3 warmup iterations, eager, each a real optimizer step: the batch
 *    copied into the static buffers (cudaMemcpyAsync from pinned memory),
 *    forward, backward (`.grad`s), SGD (momentum buffers at the first);
 *    then `zero_grad(set_to_none=True)`;
 *  - the capture: forward activations, log-softmax, loss, the backward's
 *    gradients of activations and every `.grad`, all carved from the
 *    private pool's segments (nothing runs: no step); the saved tensors
 *    freed at the end of the backward stay in the pool, which keeps its
 *    segments;
 *  - 17 replays, each a step: static_input.copy_(x), static_target.copy_(y)
 *    (cudaMemcpyAsync into the same addresses), g.replay(); the loss read
 *    back every 4th step.
 * Markers on (a `step N` per warmup iteration and per replay), driver
 * linked (--lookup direct).
 *
 * Truth: a segment that held one kind is that kind, else pool with parts:
 * parameters weights, momentum buffers optimizer, `.grad`s gradients,
 * forward tensors and gradients of activations activations, the static
 * buffers prefetch (one batch on the device, refilled in place: depth 1).
 * The warmup's segments stay cached (free) to the end. No dataset; 20
 * steps (3 eager, 17 replays). Coincidences: every block of 1 to 10 MiB lies
 * in a 20 MiB segment, so the weights + inputs segment, the warmup's
 * activation segments and the private pool's activation + gradient
 * segments are all one size; the 2048 x 2048 weights and their `.grad`s
 * (16 MiB, segments of their own) are one size too. */
#include "vtc_pool.h"

#define NLAYERS 4
#define WARMUP 3

static struct vtc_cache cache, graph_pool;
static const uint64_t B = 512, IN = 784, HID = 2048, OUT = 10;
static uint64_t wbytes[NLAYERS], bbytes[NLAYERS];

static void shapes(void)
{
	const uint64_t din[NLAYERS] = {IN, HID, HID, HID}, dout[NLAYERS] = {HID, HID, HID, OUT};
	for (int l = 0; l < NLAYERS; l++) {
		wbytes[l] = din[l] * dout[l] * 4;
		bbytes[l] = dout[l] * 4;
	}
}

/* One iteration's allocations from pool c: returns after the backward with
 * the saved tensors given back, the .grads made in grad[], the loss kept in
 * *loss (the graph's static output, or the eager loss). */
static void iteration(struct vtc_cache *c, CUdeviceptr wgrad[], CUdeviceptr bgrad[],
                      CUdeviceptr *loss)
{
	CUdeviceptr saved[2 * NLAYERS + 2];
	int n = 0;
	for (int l = 0; l < NLAYERS; l++) {
		uint64_t width = l == NLAYERS - 1 ? OUT : HID;
		saved[n++] = vtc_cache_alloc(c, B * width * 4, VTC_ACTIVATIONS); /* addmm */
		if (l < NLAYERS - 1)
			saved[n++] = vtc_cache_alloc(c, B * width * 4, VTC_ACTIVATIONS); /* relu */
	}
	saved[n++] = vtc_cache_alloc(c, B * OUT * 4, VTC_ACTIVATIONS); /* log_softmax */
	*loss = vtc_cache_alloc(c, 4, VTC_ACTIVATIONS);                /* nll_loss */
	/* backward */
	CUdeviceptr g = vtc_cache_alloc(c, B * OUT * 4, VTC_ACTIVATIONS);
	for (int l = NLAYERS - 1; l >= 0; l--) {
		wgrad[l] = vtc_cache_alloc(c, wbytes[l], VTC_GRADIENTS); /* AccumulateGrad */
		bgrad[l] = vtc_cache_alloc(c, bbytes[l], VTC_GRADIENTS);
		if (l > 0) { /* the gradient of the layer's input, then of the relu */
			CUdeviceptr gi = vtc_cache_alloc(c, B * HID * 4, VTC_ACTIVATIONS);
			vtc_cache_free(c, g);
			g = vtc_cache_alloc(c, B * HID * 4, VTC_ACTIVATIONS);
			vtc_cache_free(c, gi);
		}
	}
	vtc_cache_free(c, g);
	while (n > 0)
		vtc_cache_free(c, saved[--n]);
}

static void copy_batch(CUdeviceptr x, CUdeviceptr y, const void *pinned, CUstream s)
{
	vtc_htod_from(0, x, pinned, B * IN * 4, s); /* static_input.copy_(data) */
	vtc_htod_from(0, y, pinned, B * 8, s);      /* static_target.copy_(target) */
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "cuda_graph_static_inputs", 1, VTC_DIRECT);
	int replays = (int)vtc_opt_size("--replays", 17);
	shapes();
	vtc_cache_init(&cache, 0);
	vtc_cache_init(&graph_pool, 0);
	CUstream side;
	VTC_CHECK(vtc.StreamCreate(&side, 0));
	CUdeviceptr w[NLAYERS], b[NLAYERS], wgrad[NLAYERS] = {0}, bgrad[NLAYERS] = {0};
	CUdeviceptr wmom[NLAYERS] = {0}, bmom[NLAYERS] = {0};
	for (int l = 0; l < NLAYERS; l++) { /* model.cuda(): _apply(convert) */
		w[l] = vtc_cache_alloc(&cache, wbytes[l], VTC_WEIGHTS);
		vtc_htod(0, w[l], wbytes[l]);
		b[l] = vtc_cache_alloc(&cache, bbytes[l], VTC_WEIGHTS);
		vtc_htod(0, b[l], bbytes[l]);
	}
	CUdeviceptr x = vtc_cache_alloc(&cache, B * IN * 4, VTC_PREFETCH); /* static_input */
	CUdeviceptr y = vtc_cache_alloc(&cache, B * 8, VTC_PREFETCH);      /* static_target */
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, B * IN * 4));
	int step = 0;
	/* warmup on the side stream: eager steps in the ordinary pool */
	for (int i = 0; i < WARMUP; i++, step++) {
		vtc_step(step);
		copy_batch(x, y, pinned, side);
		for (int l = 0; l < NLAYERS; l++) { /* zero_grad(set_to_none=True) */
			if (wgrad[l]) {
				vtc_cache_free(&cache, wgrad[l]);
				vtc_cache_free(&cache, bgrad[l]);
			}
		}
		CUdeviceptr loss;
		iteration(&cache, wgrad, bgrad, &loss);
		for (int l = 0; l < NLAYERS; l++)
			if (!wmom[l]) { /* momentum_buffer = torch.clone(grad).detach() */
				wmom[l] = vtc_cache_alloc(&cache, wbytes[l], VTC_OPTIMIZER);
				vtc_dtod(0, wmom[l], wgrad[l], wbytes[l]);
				bmom[l] = vtc_cache_alloc(&cache, bbytes[l], VTC_OPTIMIZER);
				vtc_dtod(0, bmom[l], bgrad[l], bbytes[l]);
			}
		vtc_cache_free(&cache, loss);
	}
	for (int l = 0; l < NLAYERS; l++) { /* optimizer.zero_grad(set_to_none=True) */
		vtc_cache_free(&cache, wgrad[l]);
		vtc_cache_free(&cache, bgrad[l]);
	}
	/* with torch.cuda.graph(g): every block from the graph's private pool */
	CUdeviceptr static_loss;
	iteration(&graph_pool, wgrad, bgrad, &static_loss);
	/* the captured optimizer.step(): in-place foreach kernels, no allocation */
	for (int r = 0; r < replays; r++, step++) {
		vtc_step(step);
		copy_batch(x, y, pinned, side);
		/* g.replay(): the captured kernels run on the pool's addresses */
		if (r % 4 == 3)
			vtc_dtoh(0, static_loss, 4); /* static_loss.item() for the log */
	}
	VTC_CHECK(vtc.StreamSynchronize(side));
	VTC_CHECK(vtc.MemFreeHost(pinned));
	/* del g: the graph's tensors and pool go, then the model */
	for (int l = 0; l < NLAYERS; l++) {
		vtc_cache_free(&graph_pool, wgrad[l]);
		vtc_cache_free(&graph_pool, bgrad[l]);
	}
	vtc_cache_free(&graph_pool, static_loss);
	vtc_cache_empty(&graph_pool);
	for (int l = 0; l < NLAYERS; l++) {
		vtc_cache_free(&cache, w[l]);
		vtc_cache_free(&cache, b[l]);
		vtc_cache_free(&cache, wmom[l]);
		vtc_cache_free(&cache, bmom[l]);
	}
	vtc_cache_free(&cache, x);
	vtc_cache_free(&cache, y);
	vtc_cache_empty(&cache);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)(B * IN * 4 + B * 8));
	vtc_line("steps 0 %d", step);
	vtc_finish();
	return 0;
}
