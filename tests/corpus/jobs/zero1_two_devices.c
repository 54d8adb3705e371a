/* ZeRO stage 1 on 2 devices, one thread per rank: torch's
 * ZeroRedundancyOptimizer(Adam) under DistributedDataParallel.
 * Every rank holds the full model (parameters uploaded by `Module.to`) and
 * full `.grad`s (made by the first backward, kept: zero_grad(
 * set_to_none=False)); DDP's Reducer copies the grads into its one flat
 * bucket (bucket_cap_mb=64 holds all 56 MiB of them), all-reduces it through
 * NCCL's 4 MiB channel buffer (peer copies in chunks) and copies it back.
 * `_partition_parameters` gives each rank the parameters of half the bytes
 * (sorted by size, each to the rank with fewer bytes so far: rank 0 gets
 * 16, 8, 4 MiB, rank 1 the other 16, 8, 4 MiB), so the local Adam makes
 * `exp_avg`/`exp_avg_sq` at its first step for those only: each device
 * holds half of the optimizer state. After its step each rank broadcasts
 * the parameters it owns (`_sync_params`: peer copies into the other rank's
 * parameters). Batches are uploaded per step (the 4 MiB batch is the size of
 * a parameter). No markers.
 *
 * Truth per device: parameters weights, grads and the bucket gradients,
 * exp_avg/exp_avg_sq optimizer (28 MiB x 2 of the 56 MiB model), the NCCL
 * buffer other, the batch prefetch, the forward's tensors activations; no
 * dataset; prefetch depth 1 on both; 6 steps on both. */
#include "vtc.h"

#include <pthread.h>

#define PARAMS 6
#define NRANK 2

static const uint64_t param_bytes[PARAMS] = {16 * MIB, 16 * MIB, 8 * MIB,
                                             8 * MIB,  4 * MIB,  4 * MIB};
static const uint64_t batch_bytes = 4 * MIB, act_bytes = 10 * MIB, nccl_bytes = 4 * MIB;
static int steps = 6;
static pthread_barrier_t barrier;
static CUdeviceptr params[NRANK][PARAMS], channel[NRANK];

/* _partition_parameters: largest first, each to the rank with fewer bytes */
static int owner_of(int p)
{
	uint64_t load[NRANK] = {0};
	int owner = 0;
	for (int i = 0; i <= p; i++) {
		owner = load[1] < load[0];
		load[owner] += param_bytes[i];
	}
	return owner;
}

static void all_reduce(int r, CUdeviceptr bucket, uint64_t bytes)
{
	for (uint64_t done = 0; done < bytes; done += nccl_bytes) {
		uint64_t n = bytes - done < nccl_bytes ? bytes - done : nccl_bytes;
		VTC_CHECK(
		    vtc.MemcpyPeer(channel[1 - r], vtc_ctx[1 - r], bucket + done, vtc_ctx[r], n));
	}
}

static void adam_owned(int r, CUdeviceptr m[PARAMS], CUdeviceptr v[PARAMS])
{
	for (int p = 0; p < PARAMS; p++)
		if (owner_of(p) == r && !m[p]) {
			m[p] = vtc_alloc(r, param_bytes[p], VTC_OPTIMIZER);
			vtc_zero(r, m[p], param_bytes[p]);
			v[p] = vtc_alloc(r, param_bytes[p], VTC_OPTIMIZER);
			vtc_zero(r, v[p], param_bytes[p]);
		}
}

static void sync_params(int r)
{
	for (int p = 0; p < PARAMS; p++)
		if (owner_of(p) == r)
			VTC_CHECK(vtc.MemcpyPeer(params[1 - r][p], vtc_ctx[1 - r], params[r][p],
			                         vtc_ctx[r], param_bytes[p]));
}

static void train_step(int r, CUdeviceptr grads[PARAMS], CUdeviceptr bucket, uint64_t bucket_bytes)
{
	CUdeviceptr batch = vtc_alloc(r, batch_bytes, VTC_PREFETCH);
	vtc_htod(r, batch, batch_bytes);
	CUdeviceptr act[3];
	for (int i = 0; i < 3; i++)
		act[i] = vtc_alloc(r, act_bytes, VTC_ACTIVATIONS);
	uint64_t off = 0;
	for (int p = PARAMS - 1; p >= 0; p--) { /* backward: last parameter first */
		if (!grads[p])
			grads[p] = vtc_alloc(r, param_bytes[p], VTC_GRADIENTS);
		vtc_dtod(r, bucket + off, grads[p], param_bytes[p]);
		off += param_bytes[p];
	}
	for (int i = 2; i >= 0; i--)
		vtc_free(r, act[i]);
	pthread_barrier_wait(&barrier);
	all_reduce(r, bucket, bucket_bytes);
	pthread_barrier_wait(&barrier);
	vtc_free(r, batch);
}

static void *rank_main(void *arg)
{
	int r = (int)(intptr_t)arg;
	CUdeviceptr grads[PARAMS] = {0}, m[PARAMS] = {0}, v[PARAMS] = {0};
	vtc_use(r);
	for (int p = 0; p < PARAMS; p++) {
		params[r][p] = vtc_alloc(r, param_bytes[p], VTC_WEIGHTS);
		vtc_htod(r, params[r][p], param_bytes[p]);
	}
	channel[r] = vtc_alloc(r, nccl_bytes, VTC_OTHER); /* ncclCommInitRank */
	uint64_t bucket_bytes = 0;
	for (int p = 0; p < PARAMS; p++)
		bucket_bytes += param_bytes[p];
	CUdeviceptr bucket = vtc_alloc(r, bucket_bytes, VTC_GRADIENTS);
	pthread_barrier_wait(&barrier);
	for (int s = 0; s < steps; s++) {
		train_step(r, grads, bucket, bucket_bytes);
		adam_owned(r, m, v);
		pthread_barrier_wait(&barrier);
		sync_params(r);
		pthread_barrier_wait(&barrier);
	}
	for (int p = 0; p < PARAMS; p++) {
		vtc_free(r, m[p]);
		vtc_free(r, v[p]);
		vtc_free(r, grads[p]);
		vtc_free(r, params[r][p]);
	}
	vtc_free(r, bucket);
	vtc_free(r, channel[r]);
	return NULL;
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "zero1_two_devices", NRANK, VTC_DIRECT);
	steps = (int)vtc_opt_size("--steps", 6);
	pthread_barrier_init(&barrier, NULL, NRANK);
	pthread_t th[NRANK];
	for (int r = 0; r < NRANK; r++)
		pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r);
	for (int r = 0; r < NRANK; r++)
		pthread_join(th[r], NULL);
	vtc_line("no_finding whole_dataset_upload");
	for (int r = 0; r < NRANK; r++) {
		vtc_line("finding prefetch_depth %d 1 %llu", r, (unsigned long long)batch_bytes);
		vtc_line("steps %d %d", r, steps);
	}
	vtc_finish();
	return 0;
}
