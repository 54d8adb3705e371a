/* DeepSpeed ZeRO stage 3 on 2 devices from 2 threads (one rank each), fp16,
 * a GPT-2-medium-width model of 8 blocks, over the CUDACachingAllocator
 * (one vtc_cache per rank).
 *
 * What is modelled (sources read: deepspeed/runtime/zero/
 * partition_parameters.py `Init` (`_post_init_method`: each parameter made
 * whole on the device, `_partition_param` keeps this rank's slice
 * (`ds_tensor`) and frees the whole), `_all_gather` / `AllGatherCoalescedHandle`
 * (an empty full-size buffer per parameter, this rank's slice copied in,
 * the other's arriving through NCCL); partitioned_param_coordinator.py
 * `fetch_sub_module` (the next module's parameters prefetched while this
 * one runs: `prefetch_bucket_size`), `release_sub_module` (the full
 * buffer freed after use, in forward and again in backward); stage3.py
 * `_create_fp16_partitions_with_defragmentation` (the ds_tensors copied
 * into one flat fp16 buffer per sub-group, the per-parameter slices
 * freed), `_setup_for_real_optimizer` (`fp32_partitioned_groups_flat` =
 * the flat fp16 `.float()`), `grad_partitions_flat_buffer` (zeros),
 * `__reduce_and_partition_ipg_grads` (full `.grad`s copied into the ipg
 * bucket, reduce-scattered, this rank's slice added into its grad
 * partition, the full grads freed), `_prepare_sub_group` (the fp32 grad
 * made from the fp16 partition for the step, freed after), FusedAdam
 * `exp_avg` / `exp_avg_sq` at the first step; loss_scaler.py
 * `DynamicLossScaler` (overflow check through a device flag)).
 *   - per rank: 8 blocks (12 x 1024^2 parameters each, one flat group per
 *     block here) plus the 50,304 x 1024 embedding; NCCL's 4 MiB buffer;
 *   - 6 steps: the rank's micro-batch (8 x 1024 tokens and labels)
 *     copied in; forward gathering block by block with one prefetched;
 *     backward in reverse, gathering again, full fp16 grads reduced and
 *     scattered; the optimizer step on the fp32 partition.
 * No markers, driver by cuGetProcAddress (libcudart).
 *
 * Truth per rank: partitions, the flat fp16 partition, the fp32 master
 * partition and the gathered full parameters weights (the README's FSDP
 * rule); full fp16 `.grad`s, the ipg bucket, the grad partition and the
 * per-step fp32 grad gradients; exp_avg / exp_avg_sq optimizer; batches
 * prefetch (depth 1); activations activations; NCCL buffer and the overflow
 * flag other. Segments by kind or pool. No dataset; 6 steps on each
 * device. Coincidences: a block's fp32 master partition (6,291,456 x 4 B)
 * is exactly its gathered fp16 parameters and its full fp16 gradient
 * (24 MiB); a block's fp16 partition is half of it; tokens and labels are
 * one size.
 */
#include <pthread.h>
#include <stdint.h>

#include "vtc.h"
#include "vtc_pool.h"

#define NRANK 2
#define BLOCKS 8
#define NP (BLOCKS + 1) /* embedding first */
#define STEPS 6
#define TOK (8ull * 1024)

static const uint64_t BLOCK_NUMEL = 12ull * 1024 * 1024;
static const uint64_t EMB_NUMEL = 50304ull * 1024;
static struct vtc_cache cache[NRANK];
static CUdeviceptr nccl[NRANK];
static pthread_barrier_t ready;

static uint64_t numel(int p)
{
	return p == 0 ? EMB_NUMEL : BLOCK_NUMEL;
}

static CUdeviceptr gather(int r, int p, CUdeviceptr flat16, uint64_t off)
{
	uint64_t full = numel(p) * 2, half = full / 2;
	CUdeviceptr g = vtc_cache_alloc(&cache[r], full, VTC_WEIGHTS);
	vtc_dtod(r, g + (uint64_t)r * half, flat16 + off, half);     /* own slice */
	vtc_dtod(r, g + (uint64_t)(1 - r) * half, nccl[r], 4 * MIB); /* from NCCL */
	return g;
}

static void *rank_main(void *arg)
{
	int r = (int)(intptr_t)arg;
	struct vtc_cache *c = &cache[r];
	vtc_use(r);
	vtc_cache_init(c, r);
	CUdeviceptr part[NP];
	uint64_t off[NP], flat_numel = 0;
	for (int p = 0; p < NP; p++) { /* zero.Init: whole, then partitioned */
		uint64_t n = numel(p);
		CUdeviceptr whole = vtc_cache_alloc(c, n * 2, VTC_WEIGHTS);
		part[p] = vtc_cache_alloc(c, n, VTC_WEIGHTS); /* n / 2 fp16 elements */
		vtc_dtod(r, part[p], whole + (uint64_t)r * n, n);
		vtc_cache_free(c, whole);
		off[p] = flat_numel * 2;
		flat_numel += n / 2;
	}
	nccl[r] = vtc_alloc(r, 4 * MIB, VTC_OTHER);
	/* the optimizer: flat fp16, fp32 master, grad partition */
	CUdeviceptr flat16 = vtc_cache_alloc(c, flat_numel * 2, VTC_WEIGHTS);
	for (int p = 0; p < NP; p++) {
		vtc_dtod(r, flat16 + off[p], part[p], numel(p));
		vtc_cache_free(c, part[p]);
	}
	CUdeviceptr master = vtc_cache_alloc(c, flat_numel * 4, VTC_WEIGHTS);
	CUdeviceptr gpart = vtc_cache_alloc(c, flat_numel * 2, VTC_GRADIENTS);
	vtc_zero(r, gpart, flat_numel * 2);
	CUdeviceptr ipg =
	    vtc_cache_alloc(c, 20000000ull * 2, VTC_GRADIENTS); /* reduce_bucket_size */
	CUdeviceptr overflow = vtc_cache_alloc(c, 4, VTC_OTHER);
	CUdeviceptr m = 0, v = 0;
	pthread_barrier_wait(&ready);
	for (int s = 0; s < STEPS; s++) {
		CUdeviceptr ids = vtc_cache_alloc(c, TOK * 8, VTC_PREFETCH);
		vtc_htod(r, ids, TOK * 8);
		CUdeviceptr labels = vtc_cache_alloc(c, TOK * 8, VTC_PREFETCH);
		vtc_htod(r, labels, TOK * 8);
		CUdeviceptr saved[NP];
		CUdeviceptr cur = gather(r, 0, flat16, off[0]);
		for (int p = 0; p < NP; p++) { /* forward */
			CUdeviceptr next = p + 1 < NP ? gather(r, p + 1, flat16, off[p + 1]) : 0;
			saved[p] =
			    vtc_cache_alloc(c, TOK * 1024 * 2 * (p == 0 ? 1 : 6), VTC_ACTIVATIONS);
			vtc_cache_free(c, cur); /* release_sub_module */
			cur = next;
		}
		CUdeviceptr logits = vtc_cache_alloc(c, TOK * 50304 * 2, VTC_ACTIVATIONS);
		CUdeviceptr lg = gather(r, 0, flat16, off[0]); /* tied lm head */
		CUdeviceptr gl = vtc_cache_alloc(c, TOK * 50304 * 2, VTC_ACTIVATIONS);
		vtc_cache_free(c, logits);
		vtc_cache_free(c, lg);
		for (int p = NP - 1; p >= 0; p--) { /* backward */
			CUdeviceptr full = gather(r, p, flat16, off[p]);
			CUdeviceptr g = vtc_cache_alloc(c, numel(p) * 2, VTC_GRADIENTS);
			vtc_cache_free(c, saved[p]);
			vtc_cache_free(c, full);
			uint64_t half = numel(p), chunk = half < 40000000ull ? half : 40000000ull;
			vtc_dtod(r, ipg, g, chunk); /* into the ipg bucket */
			VTC_CHECK(vtc.MemcpyPeer(nccl[1 - r], vtc_ctx[1 - r],
			                         ipg + (uint64_t)(1 - r) * (chunk / 2), vtc_ctx[r],
			                         4 * MIB)); /* reduce-scatter */
			vtc_dtod(r, gpart + off[p], ipg, chunk);
			vtc_cache_free(c, g);
		}
		vtc_cache_free(c, gl);
		vtc_dtoh(r, overflow, 4); /* has_overflow */
		CUdeviceptr g32 = vtc_cache_alloc(c, flat_numel * 4, VTC_GRADIENTS);
		if (!m) {
			m = vtc_cache_alloc(c, flat_numel * 4, VTC_OPTIMIZER);
			vtc_zero(r, m, flat_numel * 4);
			v = vtc_cache_alloc(c, flat_numel * 4, VTC_OPTIMIZER);
			vtc_zero(r, v, flat_numel * 4);
		}
		vtc_cache_free(c, g32);
		vtc_zero(r, gpart, flat_numel * 2);
		vtc_cache_free(c, ids);
		vtc_cache_free(c, labels);
	}
	pthread_barrier_wait(&ready);
	vtc_cache_free(c, m);
	vtc_cache_free(c, v);
	vtc_cache_free(c, overflow);
	vtc_cache_free(c, ipg);
	vtc_cache_free(c, gpart);
	vtc_cache_free(c, master);
	vtc_cache_free(c, flat16);
	vtc_free(r, nccl[r]);
	vtc_cache_empty(c);
	return NULL;
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "deepspeed_zero3_gather", NRANK, VTC_GETPROC);
	pthread_barrier_init(&ready, NULL, NRANK);
	vtc_run_ranks(NRANK, rank_main);
	pthread_barrier_destroy(&ready);
	vtc_line("no_finding whole_dataset_upload");
	for (int r = 0; r < NRANK; r++)
		vtc_line("finding prefetch_depth %d 1 %llu", r, (unsigned long long)(2 * TOK * 8));
	for (int r = 0; r < NRANK; r++)
		vtc_line("steps %d %d", r, STEPS);
	vtc_finish();
	return 0;
}
