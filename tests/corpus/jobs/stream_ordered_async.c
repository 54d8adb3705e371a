/* A hand-written CUDA C++ trainer that uses the stream-ordered allocator
 * for what lives one step (the CUDA programming guide's advice for
 * short-lived buffers): long-lived model state from cudaMalloc (parameters
 * at start, `.grad` buffers at the first backward, SGD momentum at the first
 * update, each kept to the end), per-step tensors from cudaMallocAsync /
 * cudaFreeAsync on the compute stream. A loader stages each batch in a
 * pinned host buffer (cudaMallocHost, two slots) and the trainer copies it
 * with cudaMemcpyAsync on a copy stream one step ahead: while step s
 * computes, batch s+1 is already on the device (2 batches alive at once).
 * The batch (8 MiB) is the size of a layer's weights, and the MLP's hidden
 * activation is the size of the embedding.
 *
 * Truth: parameters weights, their .grad gradients, momentum optimizer,
 * the async batches prefetch, the async temporaries activations; no
 * dataset (each batch is uploaded for its own step); prefetch depth 2;
 * 12 steps, markers on. */
#include "vtc.h"

#define LAYERS 5
#define STEPS 12
#define MAX_STEPS 64

static const uint64_t weight_bytes[LAYERS] = {16 * MIB, 8 * MIB, 8 * MIB, 8 * MIB, 2 * MIB};
static const uint64_t batch_bytes = 8 * MIB;

struct state {
	CUdeviceptr w[LAYERS], g[LAYERS], mom[LAYERS];
	CUstream compute, copy;
	unsigned char *staging;
};

static void init_params(struct state *st)
{
	for (int l = 0; l < LAYERS; l++) {
		st->w[l] = vtc_alloc(0, weight_bytes[l], VTC_WEIGHTS);
		vtc_htod(0, st->w[l], weight_bytes[l]); /* checkpoint read into the tensor */
	}
}

static CUdeviceptr load_batch(struct state *st, int s)
{
	CUdeviceptr b = vtc_alloc_async(0, batch_bytes, VTC_PREFETCH, st->copy);
	vtc_htod_from(0, b, st->staging + (uint64_t)(s % 2) * batch_bytes, batch_bytes, st->copy);
	return b;
}

static void forward_backward(struct state *st, CUdeviceptr batch)
{
	CUdeviceptr act[LAYERS];
	for (int l = 0; l < LAYERS; l++) {
		uint64_t n = l == 2 ? weight_bytes[0] : 6 * MIB; /* the MLP's 4x hidden */
		act[l] = vtc_alloc_async(0, n, VTC_ACTIVATIONS, st->compute);
	}
	vtc_dtod(0, act[0], batch, 6 * MIB);
	for (int l = LAYERS - 1; l >= 0; l--) {
		if (!st->g[l])
			st->g[l] = vtc_alloc(0, weight_bytes[l], VTC_GRADIENTS);
		CUdeviceptr dx = vtc_alloc_async(0, 6 * MIB, VTC_ACTIVATIONS, st->compute);
		vtc_free_async(0, dx, st->compute);
		vtc_free_async(0, act[l], st->compute);
	}
}

static void sgd_momentum(struct state *st)
{
	for (int l = 0; l < LAYERS; l++)
		if (!st->mom[l]) {
			st->mom[l] = vtc_alloc(0, weight_bytes[l], VTC_OPTIMIZER);
			vtc_dtod(0, st->mom[l], st->g[l], weight_bytes[l]);
		}
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "stream_ordered_async", 1, VTC_GETPROC);
	int steps = (int)vtc_opt_size("--steps", STEPS);
	if (steps < 1 || steps > MAX_STEPS)
		steps = STEPS;
	struct state st = {0};
	VTC_CHECK(vtc.StreamCreate(&st.compute, 0));
	VTC_CHECK(vtc.StreamCreate(&st.copy, 0));
	VTC_CHECK(vtc.MemAllocHost((void **)&st.staging, 2 * batch_bytes));
	init_params(&st);
	CUdeviceptr batch = load_batch(&st, 0);
	for (int s = 0; s < steps; s++) {
		vtc_step(s);
		CUdeviceptr next = s + 1 < steps ? load_batch(&st, s + 1) : 0;
		forward_backward(&st, batch);
		sgd_momentum(&st);
		vtc_free_async(0, batch, st.compute);
		batch = next;
	}
	VTC_CHECK(vtc.StreamSynchronize(st.compute));
	for (int l = 0; l < LAYERS; l++) {
		vtc_free(0, st.w[l]);
		vtc_free(0, st.g[l]);
		vtc_free(0, st.mom[l]);
	}
	VTC_CHECK(vtc.MemFreeHost(st.staging));
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 2 %llu", (unsigned long long)batch_bytes);
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
