/* DistributedDataParallel on 2 devices, one thread per rank (as in
 * torch.multiprocessing, but threads: one process, two current contexts).
 * Construction: rank 0's parameters are broadcast to rank 1
 * (_sync_module_states: a peer copy into rank 1's freshly allocated
 * parameters), and the Reducer allocates its flat bucket tensors
 * (bucket_cap_mb=25, parameters in reverse order). Each step: batch
 * (pin_memory + non_blocking, the next one prefetched: depth 2), forward,
 * backward creating .grad per parameter, the grads copied into the buckets,
 * all-reduce through NCCL's fixed 4 MiB channel buffer (peer copies in
 * chunks), SGD with momentum (momentum_buffer = clone(grad) in step 0),
 * zero_grad(set_to_none=True). Markers from rank 0 only. */
#include "vtc.h"

#include <pthread.h>

#define LAYERS 4
#define NRANK 2

static const uint64_t wb[LAYERS] = {12 * MIB, 12 * MIB, 8 * MIB, 4 * MIB};
static const uint64_t batch = 2 * MIB, act = 6 * MIB, nccl_buf = 4 * MIB;
static int steps;
static pthread_barrier_t bar;
static CUdeviceptr weights[NRANK][LAYERS], channel[NRANK];

static void *rank_main(void *arg)
{
	int r = (int)(intptr_t)arg;
	CUdeviceptr mom[LAYERS], bucket[2], ring[64] = {0};
	vtc_use(r);
	channel[r] = vtc_alloc(r, nccl_buf, VTC_OTHER); /* ncclCommInitRank */
	for (int l = 0; l < LAYERS; l++) {
		weights[r][l] = vtc_alloc(r, wb[l], VTC_WEIGHTS);
		if (r == 0)
			vtc_zero(r, weights[r][l], wb[l]);
	}
	pthread_barrier_wait(&bar);
	if (r == 1) /* broadcast from rank 0 */
		for (int l = 0; l < LAYERS; l++)
			VTC_CHECK(vtc.MemcpyPeer(weights[1][l], vtc_ctx[1], weights[0][l], vtc_ctx[0], wb[l]));
	/* Reducer buckets: {w3, w2, w1} = 24 MiB, {w0} = 12 MiB */
	bucket[0] = vtc_alloc(r, wb[3] + wb[2] + wb[1], VTC_GRADIENTS);
	bucket[1] = vtc_alloc(r, wb[0], VTC_GRADIENTS);
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, batch));
	ring[0] = vtc_alloc(r, batch, VTC_PREFETCH);
	vtc_htod_from(r, ring[0], pinned, batch, 0);
	pthread_barrier_wait(&bar);
	for (int s = 0; s < steps; s++) {
		if (r == 0 && vtc_markers())
			vtc_step(s);
		if (s + 1 < steps) {
			ring[(s + 1) % 64] = vtc_alloc(r, batch, VTC_PREFETCH);
			vtc_htod_from(r, ring[(s + 1) % 64], pinned, batch, 0);
		}
		CUdeviceptr a[LAYERS], g[LAYERS];
		for (int l = 0; l < LAYERS; l++)
			a[l] = vtc_alloc(r, act, VTC_ACTIVATIONS);
		uint64_t off = 0;
		for (int l = LAYERS - 1; l >= 0; l--) {
			g[l] = vtc_alloc(r, wb[l], VTC_GRADIENTS);
			vtc_free(r, a[l]);
			/* copy_grad_to_bucket */
			CUdeviceptr dst = l == 0 ? bucket[1] : bucket[0] + off;
			vtc_dtod(r, dst, g[l], wb[l]);
			if (l)
				off += wb[l];
		}
		pthread_barrier_wait(&bar);
		/* all-reduce: chunks through the peer's channel buffer */
		for (int b = 0; b < 2; b++) {
			uint64_t n = b == 0 ? wb[3] + wb[2] + wb[1] : wb[0];
			for (uint64_t done = 0; done < n; done += nccl_buf) {
				uint64_t c = n - done < nccl_buf ? n - done : nccl_buf;
				VTC_CHECK(vtc.MemcpyPeer(channel[1 - r], vtc_ctx[1 - r], bucket[b] + done,
				                         vtc_ctx[r], c));
			}
		}
		pthread_barrier_wait(&bar);
		if (s == 0)
			for (int l = 0; l < LAYERS; l++) {
				mom[l] = vtc_alloc(r, wb[l], VTC_OPTIMIZER);
				vtc_dtod(r, mom[l], g[l], wb[l]);
			}
		for (int l = 0; l < LAYERS; l++)
			vtc_free(r, g[l]);
		vtc_free(r, ring[s % 64]);
	}
	pthread_barrier_wait(&bar);
	for (int l = 0; l < LAYERS; l++) {
		vtc_free(r, weights[r][l]);
		vtc_free(r, mom[l]);
	}
	vtc_free(r, bucket[0]);
	vtc_free(r, bucket[1]);
	vtc_free(r, channel[r]);
	VTC_CHECK(vtc.MemFreeHost(pinned));
	return NULL;
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "ddp_two_devices", NRANK, VTC_GETPROC);
	steps = (int)vtc_opt_size("--steps", 5);
	pthread_barrier_init(&bar, NULL, NRANK);
	pthread_t th[NRANK];
	for (int r = 0; r < NRANK; r++)
		pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r);
	for (int r = 0; r < NRANK; r++)
		pthread_join(th[r], NULL);
	vtc_line("no_finding whole_dataset_upload");
	for (int r = 0; r < NRANK; r++) {
		vtc_line("finding prefetch_depth %d 2 %llu", r, (unsigned long long)batch);
		vtc_line("steps %d %d", r, steps);
	}
	vtc_finish();
	return 0;
}
