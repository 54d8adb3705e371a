/* A Mixture-of-Experts decoder trained with expert parallelism on 2
 * devices, one thread per rank (Megatron-core MoE layer with the all-to-all
 * token dispatcher and GroupedMLP; the dense part wrapped in PyTorch DDP),
 * with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one cudaMalloc per tensor).
 *
 * What is modelled (sources read: megatron/core/transformer/moe/
 * token_dispatcher.py `MoEAlltoAllTokenDispatcher.preprocess`
 * (`num_local_tokens_per_expert = routing_map.sum(dim=0)`, input_splits
 * `.to("cpu")`, the counts gathered over the expert-parallel group, output
 * splits and tokens_per_expert to the host), `token_permutation` (`permute`,
 * `all_to_all`, `sort_chunks_by_idxs`), `token_unpermutation` (the reverse
 * all-to-all, `unpermute`); moe/experts.py `GroupedMLP` (weight1 =
 * hidden x (ffn x local experts), weight2 the reverse, one tensor each,
 * `gg.ops.gmm(..., tokens_per_expert)`); grouped_gemm csrc/grouped_gemm.cu
 * `MakeArguments` -> `CopyToDevice` (per gmm call the problem sizes,
 * leading dimensions and pointer arrays built on the host, each a
 * `torch::empty` on the device and a cudaMemcpyAsync); torch/nn/parallel/
 * distributed.py `_sync_module_states` (rank 0's parameters broadcast) and
 * `_set_params_and_buffers_to_ignore_for_model` (the experts kept out of
 * DDP), reducer.cpp (buckets of the dense gradients, 1 MiB first then
 * bucket_cap_mb=25, reverse order; gradients copied in, all-reduced,
 * copied back); torch/optim/adam.py `_init_group`):
 *  - init per rank: every parameter made on the device (initialised by
 *    kernels); the dense parameters (embedding, attention, norms, router,
 *    output layer: replicated) broadcast from rank 0 by peer copies; the
 *    rank's 4 of 8 experts per layer (two tensors each layer) its own;
 *    DDP's buckets for the dense gradients; NCCL's buffer;
 *  - per step: the rank's tokens and labels uploaded; per layer attention,
 *    then the MoE layer: router logits, probabilities, top-2, routing map,
 *    the per-expert token counts (read back), gathered from both ranks
 *    into a small buffer (a peer copy; read back), permuted tokens, the
 *    dispatch all-to-all (a receive buffer sized by the tokens this rank's
 *    experts got: its own share copied, the other rank's by a peer copy),
 *    sorted by expert, two grouped GEMMs (each uploading its 7 argument
 *    arrays) with the activation between, unsorted, the combine
 *    all-to-all, unpermuted; logits and loss; the backward in reverse (the
 *    two all-to-alls again, four grouped GEMMs for the input and weight
 *    gradients, `.grad`s made), the dense gradients through DDP's buckets
 *    and NCCL's buffer (peer copies), the expert gradients not reduced;
 *    Adam (state at the first step) on everything the rank holds;
 *    `zero_grad(set_to_none=True)`.
 * No markers, driver by dlsym.
 *
 * Truth per device: dense and expert parameters weights; `.grad`s and
 * DDP's buckets gradients; Adam state optimizer; NCCL's buffer other; the
 * grouped GEMM argument arrays other (kernel arguments built on the host,
 * like a library's scratch); tokens and labels prefetch (depth 1); every
 * other per-step tensor (counts on the device, gathered counts, permuted
 * tokens, dispatch and combine receive buffers) activations (the pipeline
 * convention: data exchanged between devices mid-step is activations). No
 * dataset; 5 steps on each device. Coincidences: the permuted tokens and
 * the combine receive buffer (2 x 2048 x 512 float32, 8 MiB) are exactly
 * an expert weight tensor (512 x 4096 float32) and its gradient and Adam
 * state; the dispatch receive buffers change size every layer and step. */
#include "vtc.h"

#include <pthread.h>
#include <stdlib.h>

#define NRANK 2
#define NLAYERS 4
#define EXPERTS 8
#define LOCAL (EXPERTS / NRANK)
#define TOPK 2
#define DENSE_PER_LAYER 8 /* ln1 w, b; qkv w, b; proj; ln2 w, b; router */
#define NDENSE (1 + NLAYERS * DENSE_PER_LAYER + 2 + 1)
#define NEXPERT (NLAYERS * 2)
#define MAXBUCKETS 16

static const uint64_t H = 512, FFN = 1024, V = 8192, B = 4, T = 512;
static const uint64_t N = 4 * 512; /* tokens per rank: B x T */
static const uint64_t nccl_bytes = 4 * MIB;
static int steps = 5;
static pthread_barrier_t barrier;
static uint64_t dense_bytes[NDENSE], expert_bytes[NEXPERT];
static CUdeviceptr dense[NRANK][NDENSE], recv_buf[NRANK], channel[NRANK];
static int nbuckets, bucket_first[MAXBUCKETS], bucket_last[MAXBUCKETS];
static uint64_t bucket_size[MAXBUCKETS];

static void shapes(void)
{
	int i = 0;
	dense_bytes[i++] = V * H * 4; /* embedding */
	for (int l = 0; l < NLAYERS; l++) {
		dense_bytes[i++] = H * 4;                      /* input_layernorm weight */
		dense_bytes[i++] = H * 4;                      /* bias */
		dense_bytes[i++] = H * 3 * H * 4;              /* linear_qkv */
		dense_bytes[i++] = 3 * H * 4;                  /* its bias */
		dense_bytes[i++] = H * H * 4;                  /* linear_proj */
		dense_bytes[i++] = H * 4;                      /* pre_mlp_layernorm weight */
		dense_bytes[i++] = H * 4;                      /* bias */
		dense_bytes[i++] = EXPERTS * H * 4;            /* router weight */
		expert_bytes[2 * l] = H * FFN * LOCAL * 4;     /* GroupedMLP weight1 */
		expert_bytes[2 * l + 1] = FFN * LOCAL * H * 4; /* weight2 */
	}
	dense_bytes[i++] = H * 4; /* final_layernorm */
	dense_bytes[i++] = H * 4;
	dense_bytes[i++] = H * V * 4; /* output_layer (untied) */
	/* _compute_bucket_assignment_by_size: reverse order, 1 MiB then 25 MiB */
	uint64_t cap = 1 * MIB, size = 0;
	int last = NDENSE - 1;
	for (int k = NDENSE - 1; k >= 0; k--) {
		size += dense_bytes[k];
		if (size >= cap || k == 0) {
			bucket_first[nbuckets] = k;
			bucket_last[nbuckets] = last;
			bucket_size[nbuckets++] = size;
			size = 0;
			last = k - 1;
			cap = 25 * MIB;
		}
	}
}

/* tokens rank src sends to rank dst in layer l of step s (top-2 copies) */
static uint64_t sent(int s, int l, int src, int dst)
{
	uint64_t to0 = N * TOPK / 2 - 600 + (uint64_t)((s * 7 + l * 13 + src * 29) % 11) * 113;
	return dst == 0 ? to0 : N * TOPK - to0;
}

/* all_to_all_single: rows[q][d] rows go from rank q to rank d; a send
 * buffer holds its rows by destination, a receive buffer by source. The
 * rank's own share is a device copy, the other rank's a peer copy. */
static CUdeviceptr all_to_all(int r, uint64_t rows[NRANK][NRANK], uint64_t row_bytes,
                              CUdeviceptr send)
{
	int o = 1 - r;
	CUdeviceptr out = vtc_alloc(r, (rows[0][r] + rows[1][r]) * row_bytes, VTC_ACTIVATIONS);
	recv_buf[r] = out;
	pthread_barrier_wait(&barrier);
	uint64_t to_o = (o == 0 ? 0 : rows[r][0]) * row_bytes; /* in my send buffer */
	uint64_t at_o = (r == 0 ? 0 : rows[0][o]) * row_bytes; /* in o's receive buffer */
	VTC_CHECK(vtc.MemcpyPeer(recv_buf[o] + at_o, vtc_ctx[o], send + to_o, vtc_ctx[r],
	                         rows[r][o] * row_bytes));
	uint64_t to_r = (r == 0 ? 0 : rows[r][0]) * row_bytes;
	uint64_t at_r = (r == 0 ? 0 : rows[0][r]) * row_bytes;
	vtc_dtod(r, out + at_r, send + to_r, rows[r][r] * row_bytes);
	pthread_barrier_wait(&barrier);
	return out;
}

/* all-gather of the per-expert token counts (int64 per expert) */
static CUdeviceptr gather_counts(int r, CUdeviceptr mine)
{
	const uint64_t n = EXPERTS * 8;
	CUdeviceptr out = vtc_alloc(r, NRANK * n, VTC_ACTIVATIONS);
	recv_buf[r] = out;
	pthread_barrier_wait(&barrier);
	VTC_CHECK(vtc.MemcpyPeer(recv_buf[1 - r] + r * n, vtc_ctx[1 - r], mine, vtc_ctx[r], n));
	vtc_dtod(r, out + r * n, mine, n);
	pthread_barrier_wait(&barrier);
	return out;
}

/* gg.ops.gmm: MakeArguments uploads 7 arrays (problem sizes, lda, ldb, ldc,
 * pointers to A, B, C), each a torch::empty freed after the kernel */
static void gmm_arguments(int r)
{
	const uint64_t bytes[7] = {LOCAL * 12, LOCAL * 8, LOCAL * 8, LOCAL * 8,
	                           LOCAL * 8,  LOCAL * 8, LOCAL * 8};
	CUdeviceptr a[7];
	for (int k = 0; k < 7; k++) {
		a[k] = vtc_alloc(r, bytes[k], VTC_OTHER);
		vtc_htod(r, a[k], bytes[k]);
	}
	for (int k = 0; k < 7; k++)
		vtc_free(r, a[k]);
}

struct moe_saved {
	CUdeviceptr t[16];
	int n;
	uint64_t disp[NRANK][NRANK], comb[NRANK][NRANK];
};

static CUdeviceptr act(int r, uint64_t bytes, struct moe_saved *sv)
{
	CUdeviceptr p = vtc_alloc(r, bytes, VTC_ACTIVATIONS);
	sv->t[sv->n++] = p;
	return p;
}

static void moe_forward(int r, int s, int l, struct moe_saved *sv)
{
	act(r, N * EXPERTS * 4, sv); /* router logits */
	act(r, N * EXPERTS * 4, sv); /* softmax probs */
	act(r, N * TOPK * 8, sv);    /* top-k indices */
	act(r, N * TOPK * 4, sv);    /* top-k probs */
	act(r, N * EXPERTS, sv);     /* routing_map (bool) */
	CUdeviceptr counts = vtc_alloc(r, EXPERTS * 8, VTC_ACTIVATIONS);
	vtc_dtoh(r, counts, EXPERTS * 8); /* input_splits .to("cpu") */
	CUdeviceptr global = gather_counts(r, counts);
	vtc_dtoh(r, global, NRANK * EXPERTS * 8); /* output_splits, tokens_per_expert */
	vtc_free(r, global);
	vtc_free(r, counts);
	for (int q = 0; q < NRANK; q++)
		for (int d = 0; d < NRANK; d++) {
			sv->disp[q][d] = sent(s, l, q, d);
			sv->comb[d][q] = sv->disp[q][d];
		}
	uint64_t got = sv->disp[0][r] + sv->disp[1][r];
	CUdeviceptr permuted = act(r, N * TOPK * H * 4, sv); /* permute */
	act(r, N * TOPK * 8, sv);                            /* sorted_indices */
	CUdeviceptr dispatched = all_to_all(r, sv->disp, H * 4, permuted);
	sv->t[sv->n++] = dispatched;
	act(r, got * H * 4, sv); /* sort_chunks_by_idxs */
	gmm_arguments(r);
	act(r, got * FFN * 4, sv); /* fc1 */
	act(r, got * FFN * 4, sv); /* gelu */
	gmm_arguments(r);
	CUdeviceptr expert_out = act(r, got * H * 4, sv); /* fc2 */
	CUdeviceptr unsorted = vtc_alloc(r, got * H * 4, VTC_ACTIVATIONS);
	(void)expert_out;
	CUdeviceptr combined = all_to_all(r, sv->comb, H * 4, unsorted);
	vtc_free(r, unsorted);
	sv->t[sv->n++] = combined;
	act(r, N * H * 4, sv); /* unpermute (probs applied) */
}

static void moe_backward(int r, struct moe_saved *sv, CUdeviceptr *egrad)
{
	/* grad of the combine: back to the expert ranks; grad of the dispatch */
	CUdeviceptr g_perm = vtc_alloc(r, N * TOPK * H * 4, VTC_ACTIVATIONS);
	CUdeviceptr g_exp = all_to_all(r, sv->disp, H * 4, g_perm);
	vtc_free(r, g_perm);
	uint64_t got = sv->disp[0][r] + sv->disp[1][r];
	for (int k = 0; k < 2; k++) { /* fc2 then fc1: input grad and weight grad */
		gmm_arguments(r);
		CUdeviceptr g_in = vtc_alloc(r, got * (k == 0 ? FFN : H) * 4, VTC_ACTIVATIONS);
		gmm_arguments(r);
		if (!egrad[1 - k])
			egrad[1 - k] = vtc_alloc(r, FFN * LOCAL * H * 4, VTC_GRADIENTS);
		vtc_free(r, g_in);
	}
	CUdeviceptr g_sorted = vtc_alloc(r, got * H * 4, VTC_ACTIVATIONS);
	CUdeviceptr g_tokens = all_to_all(r, sv->comb, H * 4, g_sorted);
	vtc_free(r, g_sorted);
	vtc_free(r, g_exp);
	vtc_free(r, g_tokens);
	while (sv->n > 0)
		vtc_free(r, sv->t[--sv->n]);
}

static void allreduce(int r, CUdeviceptr bucket, uint64_t bytes)
{
	pthread_barrier_wait(&barrier);
	for (uint64_t done = 0; done < bytes; done += nccl_bytes) {
		uint64_t n = bytes - done < nccl_bytes ? bytes - done : nccl_bytes;
		VTC_CHECK(
		    vtc.MemcpyPeer(channel[1 - r], vtc_ctx[1 - r], bucket + done, vtc_ctx[r], n));
	}
	pthread_barrier_wait(&barrier);
}

/* Adam's _init_group at the first step: exp_avg and exp_avg_sq, zeros */
static void adam_state(int r, int n, const uint64_t *bytes, CUdeviceptr *m, CUdeviceptr *v)
{
	for (int k = 0; k < n; k++)
		if (!m[k]) {
			m[k] = vtc_alloc(r, bytes[k], VTC_OPTIMIZER);
			vtc_zero(r, m[k], bytes[k]);
			v[k] = vtc_alloc(r, bytes[k], VTC_OPTIMIZER);
			vtc_zero(r, v[k], bytes[k]);
		}
}

static void *rank_main(void *arg)
{
	int r = (int)(intptr_t)arg;
	vtc_use(r);
	CUdeviceptr expert[NEXPERT], dgrad[NDENSE] = {0}, egrad[NEXPERT] = {0};
	CUdeviceptr dm[NDENSE] = {0}, dv[NDENSE] = {0}, em[NEXPERT] = {0}, ev[NEXPERT] = {0};
	dense[r][0] = vtc_alloc(r, dense_bytes[0], VTC_WEIGHTS); /* GPTModel: embedding first */
	for (int l = 0; l < NLAYERS; l++) { /* then the layers, initialised on the device */
		for (int k = 1 + l * DENSE_PER_LAYER; k < 1 + (l + 1) * DENSE_PER_LAYER; k++)
			dense[r][k] = vtc_alloc(r, dense_bytes[k], VTC_WEIGHTS);
		expert[2 * l] = vtc_alloc(r, expert_bytes[2 * l], VTC_WEIGHTS);
		expert[2 * l + 1] = vtc_alloc(r, expert_bytes[2 * l + 1], VTC_WEIGHTS);
	}
	for (int k = 1 + NLAYERS * DENSE_PER_LAYER; k < NDENSE; k++) /* final norm, output */
		if (!dense[r][k])
			dense[r][k] = vtc_alloc(r, dense_bytes[k], VTC_WEIGHTS);
	/* DDP: _sync_module_states broadcasts rank 0's dense parameters */
	pthread_barrier_wait(&barrier);
	if (r == 0)
		for (int k = 0; k < NDENSE; k++)
			VTC_CHECK(vtc.MemcpyPeer(dense[1][k], vtc_ctx[1], dense[0][k], vtc_ctx[0],
			                         dense_bytes[k]));
	pthread_barrier_wait(&barrier);
	CUdeviceptr bucket[MAXBUCKETS];
	for (int b = 0; b < nbuckets; b++) { /* Reducer: the dense gradients only */
		bucket[b] = vtc_alloc(r, bucket_size[b], VTC_GRADIENTS);
		vtc_zero(r, bucket[b], bucket_size[b]);
	}
	channel[r] = vtc_alloc(r, nccl_bytes, VTC_OTHER);
	for (int s = 0; s < steps; s++) {
		CUdeviceptr tokens = vtc_alloc(r, B * T * 8, VTC_PREFETCH);
		vtc_htod(r, tokens, B * T * 8);
		CUdeviceptr labels = vtc_alloc(r, B * T * 8, VTC_PREFETCH);
		vtc_htod(r, labels, B * T * 8);
		CUdeviceptr emb = vtc_alloc(r, N * H * 4, VTC_ACTIVATIONS);
		struct moe_saved moe[NLAYERS];
		CUdeviceptr attn[NLAYERS][6];
		for (int l = 0; l < NLAYERS; l++) {
			const uint64_t sz[6] = {
			    N * H * 4, N * 3 * H * 4, N * H * 4, B * 8 * T * 4,
			    N * H * 4, N * H * 4}; /* ln1, qkv, core, lse, proj, ln2 */
			for (int k = 0; k < 6; k++)
				attn[l][k] = vtc_alloc(r, sz[k], VTC_ACTIVATIONS);
			moe[l].n = 0;
			moe_forward(r, s, l, &moe[l]);
		}
		CUdeviceptr fin = vtc_alloc(r, N * H * 4, VTC_ACTIVATIONS);
		CUdeviceptr logits = vtc_alloc(r, N * V * 4, VTC_ACTIVATIONS);
		CUdeviceptr logp = vtc_alloc(r, N * V * 4, VTC_ACTIVATIONS);
		CUdeviceptr loss = vtc_alloc(r, 4, VTC_ACTIVATIONS);
		/* backward */
		CUdeviceptr g_logits = vtc_alloc(r, N * V * 4, VTC_ACTIVATIONS);
		vtc_free(r, logp);
		vtc_free(r, logits);
		dgrad[NDENSE - 1] = vtc_alloc(r, dense_bytes[NDENSE - 1], VTC_GRADIENTS);
		vtc_free(r, g_logits);
		dgrad[NDENSE - 2] = vtc_alloc(r, dense_bytes[NDENSE - 2], VTC_GRADIENTS);
		dgrad[NDENSE - 3] = vtc_alloc(r, dense_bytes[NDENSE - 3], VTC_GRADIENTS);
		vtc_free(r, fin);
		for (int l = NLAYERS - 1; l >= 0; l--) {
			CUdeviceptr g = vtc_alloc(r, N * H * 4, VTC_ACTIVATIONS);
			moe_backward(r, &moe[l], &egrad[2 * l]);
			for (int k = 1 + (l + 1) * DENSE_PER_LAYER - 1;
			     k >= 1 + l * DENSE_PER_LAYER; k--)
				dgrad[k] = vtc_alloc(r, dense_bytes[k], VTC_GRADIENTS);
			for (int k = 5; k >= 0; k--)
				vtc_free(r, attn[l][k]);
			vtc_free(r, g);
		}
		dgrad[0] = vtc_alloc(r, dense_bytes[0], VTC_GRADIENTS);
		vtc_free(r, emb);
		/* DDP: each dense .grad copied into its bucket, all-reduced, copied back */
		for (int b = 0; b < nbuckets; b++) {
			uint64_t off = 0;
			for (int k = bucket_last[b]; k >= bucket_first[b]; k--) {
				vtc_dtod(r, bucket[b] + off, dgrad[k], dense_bytes[k]);
				off += dense_bytes[k];
			}
			allreduce(r, bucket[b], bucket_size[b]);
			off = 0;
			for (int k = bucket_last[b]; k >= bucket_first[b]; k--) {
				vtc_dtod(r, dgrad[k], bucket[b] + off, dense_bytes[k]);
				off += dense_bytes[k];
			}
		}
		/* Adam on the dense parameters and the rank's experts */
		adam_state(r, NDENSE, dense_bytes, dm, dv);
		adam_state(r, NEXPERT, expert_bytes, em, ev);
		vtc_dtoh(r, loss, 4);
		vtc_free(r, loss);
		for (int k = 0; k < NDENSE; k++) { /* zero_grad(set_to_none=True) */
			vtc_free(r, dgrad[k]);
			dgrad[k] = 0;
		}
		for (int k = 0; k < NEXPERT; k++) {
			vtc_free(r, egrad[k]);
			egrad[k] = 0;
		}
		vtc_free(r, tokens);
		vtc_free(r, labels);
	}
	pthread_barrier_wait(&barrier);
	for (int k = 0; k < NDENSE; k++) {
		vtc_free(r, dm[k]);
		vtc_free(r, dv[k]);
		vtc_free(r, dense[r][k]);
	}
	for (int k = 0; k < NEXPERT; k++) {
		vtc_free(r, em[k]);
		vtc_free(r, ev[k]);
		vtc_free(r, expert[k]);
	}
	for (int b = 0; b < nbuckets; b++)
		vtc_free(r, bucket[b]);
	vtc_free(r, channel[r]);
	return NULL;
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "moe_expert_parallel", NRANK, VTC_DLSYM);
	steps = (int)vtc_opt_size("--steps", 5);
	shapes();
	pthread_barrier_init(&barrier, NULL, NRANK);
	vtc_run_ranks(NRANK, rank_main);
	vtc_line("no_finding whole_dataset_upload");
	for (int r = 0; r < NRANK; r++) /* tokens and labels, one micro-batch */
		vtc_line("finding prefetch_depth %d 1 %llu", r,
		         (unsigned long long)(2 * B * T * 8));
	for (int r = 0; r < NRANK; r++)
		vtc_line("steps %d %d", r, steps);
	vtc_finish();
	return 0;
}
