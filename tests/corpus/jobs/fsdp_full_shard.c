/* PyTorch FSDP (FullyShardedDataParallel, ShardingStrategy.FULL_SHARD,
 * backward_prefetch=BACKWARD_PRE, use_orig_params=False) on 2 devices, one
 * thread per rank, with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (every tensor its
 * own cudaMalloc, so FSDP's storage frees reach the driver), training a
 * LLaMA-style decoder wrapped per block (3 blocks + the root unit holding
 * the embeddings and the final norm).
 *
 * What is modelled (sources read: torch/distributed/fsdp/_flat_param.py
 * `FlatParamHandle.flatten_tensors_into_flat_param`, `shard` ->
 * `_get_shard` (the rank's chunk cloned, the full flat storage freed),
 * `_alloc_padded_unsharded_flat_param`, `_all_gather_flat_param`,
 * `_free_unsharded_flat_param`; torch/distributed/fsdp/_runtime_utils.py
 * `_unshard`, `_reshard`, `_pre_backward_hook` (BACKWARD_PRE prefetches the
 * next unit's all-gather), `_post_backward_hook` -> `_reduce_grad`
 * (`_get_reduce_scatter_tensors`: `new_sharded_grad = torch.empty_like(
 * chunks[0])`, `dist.reduce_scatter_tensor`, the unsharded gradient freed,
 * `_accumulate_sharded_grad` keeps it as `_saved_grad_shard`);
 * torch/optim/adam.py `_init_group`):
 *  - init: `_move_module_to_device` uploads each parameter, the unit's
 *    parameters are copied into one flat parameter (freed one by one), the
 *    rank's half cloned as the sharded flat parameter, the full flat freed;
 *  - per step: the rank's batch uploaded; forward: each unit all-gathered
 *    into a new unsharded flat buffer (own shard copied in, the other
 *    rank's shard arriving by a peer copy), run, freed (reshard after
 *    forward); backward in reverse: the unit all-gathered again (the next
 *    one prefetched before this one's gradients are computed), its
 *    unsharded flat gradient, reduce-scattered through NCCL's buffer (peer
 *    copies) into a new sharded gradient, the unsharded gradient and
 *    parameter freed; Adam on the sharded flat parameters (state at the
 *    first step), zero_grad(set_to_none=True).
 * No markers, driver by dlsym.
 *
 * Truth per device: per-parameter uploads, the flat parameters, the
 * sharded flat parameters and the all-gathered unsharded flat parameters
 * weights (the gathered buffer IS the parameters' storage while the unit
 * runs; it is neither a dataset nor a prefetch, although it arrives from
 * the other device every forward and backward); unsharded and sharded flat
 * gradients gradients; exp_avg/exp_avg_sq (half the model per rank)
 * optimizer; NCCL's buffer other; the batch prefetch (depth 1); forward
 * tensors activations. No dataset; 6 steps on each device. */
#include "vtc.h"

#include <pthread.h>

#define NRANK 2
#define UNITS 4 /* unit 0: root (embeddings, final norm); 1..3: blocks */
#define BLOCK_PARAMS 9

static const uint64_t D = 1024, VOCAB = 32000, B = 4, T = 512, HEADS = 16;
static const uint64_t nccl_bytes = 4 * MIB;
static int steps = 6;
static pthread_barrier_t barrier;
static uint64_t unit_bytes[UNITS];
static CUdeviceptr shard[NRANK][UNITS], gathered[NRANK][UNITS], channel[NRANK];

static int unit_params(int u, uint64_t *out)
{
	if (u == 0) {
		out[0] = VOCAB * D * 4; /* tok_embeddings */
		out[1] = D * 4;         /* norm */
		out[2] = VOCAB * D * 4; /* output (untied) */
		return 3;
	}
	const uint64_t one[BLOCK_PARAMS] = {D * D * 4,     D * D * 4,     D * D * 4,
	                                    D * D * 4,     D * 4 * D * 4, D * 4 * D * 4,
	                                    4 * D * D * 4, D * 4,         D * 4};
	for (int k = 0; k < BLOCK_PARAMS; k++)
		out[k] = one[k];
	return BLOCK_PARAMS;
}

static void wrap_unit(int r, int u)
{
	uint64_t pb[BLOCK_PARAMS];
	int n = unit_params(u, pb);
	CUdeviceptr p[BLOCK_PARAMS];
	uint64_t total = 0;
	for (int k = 0; k < n; k++) { /* _move_module_to_device */
		p[k] = vtc_alloc(r, pb[k], VTC_WEIGHTS);
		vtc_htod(r, p[k], pb[k]);
		total += pb[k];
	}
	unit_bytes[u] = total; /* even element counts: no padding */
	CUdeviceptr flat = vtc_alloc(r, total, VTC_WEIGHTS);
	uint64_t off = 0;
	for (int k = 0; k < n; k++) {
		vtc_dtod(r, flat + off, p[k], pb[k]);
		off += pb[k];
		vtc_free(r, p[k]);
	}
	shard[r][u] = vtc_alloc(r, total / 2, VTC_WEIGHTS); /* _get_shard: chunk.clone() */
	vtc_dtod(r, shard[r][u], flat + r * (total / 2), total / 2);
	vtc_free(r, flat);
}

/* _unshard: every rank allocates, then the shards are exchanged */
static void all_gather(int r, int u)
{
	uint64_t half = unit_bytes[u] / 2;
	gathered[r][u] = vtc_alloc(r, unit_bytes[u], VTC_WEIGHTS);
	vtc_dtod(r, gathered[r][u] + r * half, shard[r][u], half);
	pthread_barrier_wait(&barrier);
	VTC_CHECK(vtc.MemcpyPeer(gathered[1 - r][u] + r * half, vtc_ctx[1 - r], shard[r][u],
	                         vtc_ctx[r], half));
	pthread_barrier_wait(&barrier);
}

static void reshard(int r, int u)
{
	vtc_free(r, gathered[r][u]);
	gathered[r][u] = 0;
}

/* _reduce_grad: the other rank's half goes out through NCCL's buffer */
static CUdeviceptr reduce_scatter(int r, int u, CUdeviceptr unsharded)
{
	uint64_t half = unit_bytes[u] / 2;
	CUdeviceptr out = vtc_alloc(r, half, VTC_GRADIENTS); /* new_sharded_grad */
	pthread_barrier_wait(&barrier);
	CUdeviceptr theirs = unsharded + (1 - r) * half;
	for (uint64_t done = 0; done < half; done += nccl_bytes) {
		uint64_t n = half - done < nccl_bytes ? half - done : nccl_bytes;
		VTC_CHECK(
		    vtc.MemcpyPeer(channel[1 - r], vtc_ctx[1 - r], theirs + done, vtc_ctx[r], n));
	}
	pthread_barrier_wait(&barrier);
	vtc_dtod(r, out, unsharded + r * half, half);
	return out;
}

static void train_step(int r, CUdeviceptr sgrad[UNITS], CUdeviceptr m[UNITS], CUdeviceptr v[UNITS])
{
	const uint64_t hid = B * T * D * 4;
	CUdeviceptr batch = vtc_alloc(r, 2 * B * T * 8, VTC_PREFETCH); /* input_ids, labels */
	vtc_htod(r, batch, 2 * B * T * 8);
	CUdeviceptr saved[UNITS][3] = {{0}};
	/* forward: the root unit stays unsharded from its forward to the end of
	 * its backward (FSDP never reshards the root after forward); each block
	 * is gathered, run and resharded */
	all_gather(r, 0);
	saved[0][0] = vtc_alloc(r, hid, VTC_ACTIVATIONS); /* embeddings */
	for (int u = 1; u < UNITS; u++) {
		all_gather(r, u);
		saved[u][0] =
		    vtc_alloc(r, B * HEADS * T * T * 2, VTC_ACTIVATIONS);       /* probs, bf16 */
		saved[u][1] = vtc_alloc(r, B * T * 4 * D * 4, VTC_ACTIVATIONS); /* mlp */
		saved[u][2] = vtc_alloc(r, hid, VTC_ACTIVATIONS);               /* block out */
		reshard(r, u);
	}
	CUdeviceptr logits = vtc_alloc(r, B * T * VOCAB * 4, VTC_ACTIVATIONS); /* root's output */
	/* backward: blocks 3..1 (the next block's all-gather issued before this
	 * one's gradients: BACKWARD_PRE), then the root */
	vtc_free(r, logits);
	all_gather(r, UNITS - 1);
	for (int u = UNITS - 1; u >= 0; u--) {
		if (u >= 2)
			all_gather(r, u - 1); /* prefetch */
		CUdeviceptr ugrad = vtc_alloc(r, unit_bytes[u], VTC_GRADIENTS);
		for (int k = 2; k >= 0; k--)
			vtc_free(r, saved[u][k]);
		CUdeviceptr g = reduce_scatter(r, u, ugrad);
		vtc_free(r, ugrad);
		reshard(r, u);
		if (!sgrad[u])
			sgrad[u] = g;
		else
			vtc_free(r, g); /* accumulated into _saved_grad_shard */
	}
	vtc_free(r, batch);
	for (int u = 0; u < UNITS; u++)
		if (!m[u]) { /* Adam on the sharded flat parameters, first step */
			m[u] = vtc_alloc(r, unit_bytes[u] / 2, VTC_OPTIMIZER);
			vtc_zero(r, m[u], unit_bytes[u] / 2);
			v[u] = vtc_alloc(r, unit_bytes[u] / 2, VTC_OPTIMIZER);
			vtc_zero(r, v[u], unit_bytes[u] / 2);
		}
	for (int u = 0; u < UNITS; u++) { /* zero_grad(set_to_none=True) */
		vtc_free(r, sgrad[u]);
		sgrad[u] = 0;
	}
}

static void *rank_main(void *arg)
{
	int r = (int)(intptr_t)arg;
	vtc_use(r);
	for (int u = 0; u < UNITS; u++)
		wrap_unit(r, u);
	channel[r] = vtc_alloc(r, nccl_bytes, VTC_OTHER); /* process group's first collective */
	pthread_barrier_wait(&barrier);
	CUdeviceptr sgrad[UNITS] = {0}, m[UNITS] = {0}, v[UNITS] = {0};
	for (int s = 0; s < steps; s++)
		train_step(r, sgrad, m, v);
	pthread_barrier_wait(&barrier);
	for (int u = 0; u < UNITS; u++) {
		vtc_free(r, m[u]);
		vtc_free(r, v[u]);
		vtc_free(r, shard[r][u]);
	}
	vtc_free(r, channel[r]);
	return NULL;
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "fsdp_full_shard", NRANK, VTC_DLSYM);
	steps = (int)vtc_opt_size("--steps", 6);
	pthread_barrier_init(&barrier, NULL, NRANK);
	pthread_t th[NRANK];
	for (int r = 0; r < NRANK; r++)
		pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r);
	for (int r = 0; r < NRANK; r++)
		pthread_join(th[r], NULL);
	vtc_line("no_finding whole_dataset_upload");
	for (int r = 0; r < NRANK; r++) {
		vtc_line("finding prefetch_depth %d 1 %llu", r,
		         (unsigned long long)(2 * B * T * 8));
		vtc_line("steps %d %d", r, steps);
	}
	vtc_finish();
	return 0;
}
