/* open_clip contrastive training of a small CLIP (ViT image tower, text
 * transformer) on 2 devices under DistributedDataParallel, one thread per
 * rank, with `--local-loss --gather-with-grad` and PyTorch's caching
 * allocator.
 *
 * What is modelled (sources read: open_clip src/open_clip/loss.py
 * `ClipLoss.get_ground_truth` (`torch.arange(num_logits, device=device)`,
 * `+ num_logits * rank` with local_loss, kept in `self.labels[device]` while
 * the batch size stays the same), `get_logits` (local loss:
 * `logit_scale * image_features @ all_text_features.T` and the text
 * counterpart), `gather_features` with gather_with_grad
 * (`torch.cat(torch.distributed.nn.all_gather(features), dim=0)`);
 * torch/distributed/nn/functional.py `_AllGather` (`torch.empty_like` per
 * rank for the outputs; backward `dist.reduce_scatter` into
 * `torch.empty_like(tensor)`); src/open_clip/model.py `CLIP.encode_image`,
 * `encode_text` (`token_embedding`, `positional_embedding`, causal
 * `attn_mask` buffer, `ln_final`, the EOT token picked with
 * `text.argmax(dim=-1)` and an `arange`, `@ text_projection`),
 * `F.normalize`, `logit_scale.exp()`; transformer.py `VisionTransformer`
 * (conv1 patches, class embedding, `ln_pre`, `ln_post` of the class token,
 * `@ proj`), `ResidualAttentionBlock`; src/training/train.py
 * `train_one_epoch` (`images.to(device, non_blocking=True)`,
 * `texts.to(...)`, `optimizer.zero_grad()` after the upload, the loss, the
 * step, `logit_scale.clamp_` in place); torch/nn/parallel/distributed.py
 * `_sync_module_states` -> `_broadcast_coalesced` (a flat buffer per side),
 * reducer.cpp buckets (`bucket_cap_mb=25`, the first bucket 1 MiB,
 * parameters in reverse order, `.grad`s copied in and back out around the
 * all-reduce); torch/optim/adamw.py `_multi_tensor_adamw` (state at the
 * first step, `_foreach_sqrt` temporaries); c10/cuda/CUDACachingAllocator.cpp
 * through vtc_cache):
 *  - each rank: `model.to(device)` (every tensor a block and an upload), the
 *    causal mask buffer, NCCL's 4 MiB channel buffer (cudaMalloc), DDP's
 *    broadcast of rank 0's parameters through a flat buffer on each rank
 *    (peer copies in 4 MiB chunks), the reducer's buckets;
 *  - 8 steps per rank: 64 images (3 x 224 x 224 float32) and 64 x 77 token
 *    ids uploaded, `zero_grad` (the previous `.grad`s freed), both towers
 *    forward, normalised features, the all-gathers (outputs made by
 *    `empty_like`, the other rank's share by a peer copy into its channel
 *    buffer), the two logit matrices (64 x 128), labels made at the first
 *    step and kept, two cross-entropies; backward (gradients of logits and
 *    features, reduce-scatters, both towers, `.grad`s), buckets all-reduced,
 *    AdamW.
 * Markers from rank 0 only, driver by cuGetProcAddress (libcudart).
 *
 * Truth: caching segments by what they held (one kind, else pool with
 * parts): parameters weights (the broadcast's flat buffers too: a copy of
 * the weights), `.grad`s and DDP buckets gradients, AdamW state optimizer,
 * the uploaded images and token ids prefetch (depth 1, synchronous),
 * the cached labels and the attention-mask buffer other, everything else
 * activations (the gathered features and their gradients included); NCCL's
 * channel buffer other. No dataset; 8 steps on each device. Coincidences:
 * each rank's features, every all-gather output and every reduce-scatter
 * result are one size (64 x 256 float32); the two logit matrices are one
 * size; visual.proj and text_projection are one size. */
#include "vtc_pool.h"

#include <pthread.h>
#include <stdlib.h>

#define NRANK 2
#define MAXP 256
#define MAXB 16
#define MAXS 1024

static const uint64_t B = 64, W = 256, E = 256, LAYERS = 6, HEADS = 4;
static const uint64_t PATCHES = 49, VTOK = 50, TTOK = 77, VOCAB = 49408;
static const uint64_t NCCL_BUF = 4 * MIB;
static int steps;

static uint64_t pbytes[MAXP], block_tokens[MAXP]; /* tokens, at a block's first parameter */
static int np;
static int bucket_first[MAXB + 1], nbucket; /* bucket b: params [first[b], first[b+1]) reversed */
static uint64_t bucket_bytes[MAXB];
static pthread_barrier_t bar;
static CUdeviceptr channel[NRANK];

static void add_param(uint64_t elems)
{
	pbytes[np++] = elems * 4;
}

static void add_block(uint64_t tokens)
{
	block_tokens[np] = tokens;
	add_param(W), add_param(W);             /* ln_1 */
	add_param(3 * W * W), add_param(3 * W); /* attn.in_proj */
	add_param(W * W), add_param(W);         /* attn.out_proj */
	add_param(W), add_param(W);             /* ln_2 */
	add_param(4 * W * W), add_param(4 * W); /* mlp.c_fc */
	add_param(4 * W * W), add_param(W);     /* mlp.c_proj */
}

static void build_params(void)
{
	add_param(W * 3 * 32 * 32);                                    /* visual.conv1 */
	add_param(W), add_param(VTOK * W), add_param(W), add_param(W); /* cls, pos, ln_pre */
	for (uint64_t l = 0; l < LAYERS; l++)
		add_block(VTOK);
	add_param(W), add_param(W), add_param(W * E); /* ln_post, proj */
	add_param(VOCAB * W), add_param(TTOK * W);    /* token and positional embeddings */
	for (uint64_t l = 0; l < LAYERS; l++)
		add_block(TTOK);
	add_param(W), add_param(W), add_param(W * E); /* ln_final, text_projection */
	add_param(1);                                 /* logit_scale */
	/* DDP buckets: parameters in reverse order, the first bucket capped at
	 * 1 MiB, the others at 25 MiB; a bucket closes once it reaches its cap */
	uint64_t cap = 1 * MIB, size = 0;
	bucket_first[0] = np;
	for (int i = np - 1; i >= 0; i--) {
		size += pbytes[i];
		if (size >= cap || i == 0) {
			bucket_bytes[nbucket] = size;
			bucket_first[++nbucket] = i;
			size = 0;
			cap = 25 * MIB;
		}
	}
}

/* NCCL moves `bytes` from src on rank r into the other rank's channel
 * buffer, 4 MiB at a time (only the ranks that send copy: a broadcast's
 * receiver waits); both ranks call it together */
static void nccl_move(int r, CUdeviceptr src, uint64_t bytes, int send)
{
	for (uint64_t done = 0; done < bytes; done += NCCL_BUF) {
		uint64_t c = bytes - done < NCCL_BUF ? bytes - done : NCCL_BUF;
		pthread_barrier_wait(&bar);
		if (send)
			VTC_CHECK(vtc.MemcpyPeer(channel[1 - r], vtc_ctx[1 - r], src + done,
			                         vtc_ctx[r], c));
		pthread_barrier_wait(&bar);
		vtc_use(r); /* the reduction or copy out of the channel: a kernel */
	}
}

struct saved {
	CUdeviceptr p[MAXS];
	int n;
};

static CUdeviceptr keep(struct vtc_cache *c, struct saved *s, uint64_t bytes)
{
	CUdeviceptr p = vtc_cache_alloc(c, bytes, VTC_ACTIVATIONS);
	s->p[s->n++] = p;
	return p;
}

static CUdeviceptr act(struct vtc_cache *c, uint64_t bytes)
{
	return vtc_cache_alloc(c, bytes, VTC_ACTIVATIONS);
}

/* one ResidualAttentionBlock over `tok` tokens: what autograd keeps */
static void block_forward(struct vtc_cache *c, struct saved *s, uint64_t tok)
{
	uint64_t h = B * tok * W * 4, sc = B * HEADS * tok * tok * 4;
	keep(c, s, h);     /* ln_1 */
	keep(c, s, 3 * h); /* in_proj: q, k, v */
	CUdeviceptr raw = act(c, sc);
	keep(c, s, sc); /* softmax(q k^T + mask) */
	vtc_cache_free(c, raw);
	keep(c, s, h);     /* attention output */
	keep(c, s, h);     /* out_proj + residual */
	keep(c, s, h);     /* ln_2 */
	keep(c, s, 4 * h); /* c_fc */
	keep(c, s, 4 * h); /* gelu */
	keep(c, s, h);     /* c_proj + residual */
}

static CUdeviceptr upload_batch(struct vtc_cache *c, int r, uint64_t bytes, const void *pinned)
{
	CUdeviceptr p = vtc_cache_alloc(c, bytes, VTC_PREFETCH);
	vtc_htod_from(r, p, pinned, bytes, 0);
	return p;
}

static void *rank_main(void *arg)
{
	int r = (int)(intptr_t)arg;
	struct vtc_cache *c = malloc(sizeof *c);
	struct saved *s = malloc(sizeof *s);
	CUdeviceptr param[MAXP], grad[MAXP] = {0}, m[MAXP] = {0}, v[MAXP] = {0}, bucket[MAXB];
	CUdeviceptr labels = 0;
	vtc_use(r);
	vtc_cache_init(c, r);
	for (int i = 0; i < np; i++) { /* model.to(device) */
		param[i] = vtc_cache_alloc(c, pbytes[i], VTC_WEIGHTS);
		vtc_htod(r, param[i], pbytes[i]);
	}
	CUdeviceptr attn_mask = vtc_cache_alloc(c, TTOK * TTOK * 4, VTC_OTHER);
	vtc_htod(r, attn_mask, TTOK * TTOK * 4);
	channel[r] = vtc_alloc(r, NCCL_BUF, VTC_OTHER); /* ncclCommInitRank */
	/* _sync_module_states: _broadcast_coalesced through a flat buffer */
	uint64_t total = 0;
	for (int i = 0; i < np; i++)
		total += pbytes[i];
	CUdeviceptr flat = vtc_cache_alloc(c, total, VTC_WEIGHTS);
	uint64_t off = 0;
	for (int i = 0; i < np; off += pbytes[i++])
		if (r == 0)
			vtc_dtod(r, flat + off, param[i], pbytes[i]);
	nccl_move(r, flat, total, r == 0);
	off = 0;
	for (int i = 0; i < np; off += pbytes[i++])
		if (r == 1)
			vtc_dtod(r, param[i], flat + off, pbytes[i]);
	vtc_cache_free(c, flat);
	for (int b = 0; b < nbucket; b++) /* Reducer::initialize_buckets */
		bucket[b] = vtc_cache_alloc(c, bucket_bytes[b], VTC_GRADIENTS);
	const uint64_t img = B * 3 * 224 * 224 * 4, txt = B * TTOK * 8;
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, img));
	for (int st = 0; st < steps; st++) {
		if (r == 0 && vtc_markers())
			vtc_step(st);
		CUdeviceptr images = upload_batch(c, r, img, pinned);
		CUdeviceptr texts = upload_batch(c, r, txt, pinned);
		for (int i = 0; i < np; i++) /* optimizer.zero_grad() */
			if (grad[i]) {
				vtc_cache_free(c, grad[i]);
				grad[i] = 0;
			}
		s->n = 0;
		/* encode_image */
		keep(c, s, B * W * PATCHES * 4); /* conv1 */
		keep(c, s, B * VTOK * W * 4);    /* cat(class_embedding, patches) + pos */
		keep(c, s, B * VTOK * W * 4);    /* ln_pre */
		for (uint64_t l = 0; l < LAYERS; l++)
			block_forward(c, s, VTOK);
		keep(c, s, B * W * 4);                  /* ln_post(x[:, 0]) */
		keep(c, s, B * E * 4);                  /* @ proj */
		CUdeviceptr fi = keep(c, s, B * E * 4); /* F.normalize */
		/* encode_text */
		keep(c, s, B * TTOK * W * 4); /* token_embedding */
		keep(c, s, B * TTOK * W * 4); /* + positional_embedding */
		for (uint64_t l = 0; l < LAYERS; l++)
			block_forward(c, s, TTOK);
		keep(c, s, B * TTOK * W * 4);                        /* ln_final */
		CUdeviceptr eot = act(c, B * 8), ar = act(c, B * 8); /* argmax, arange */
		keep(c, s, B * W * 4);                               /* x[arange, eot] */
		vtc_cache_free(c, eot);
		vtc_cache_free(c, ar);
		keep(c, s, B * E * 4);                  /* @ text_projection */
		CUdeviceptr ft = keep(c, s, B * E * 4); /* F.normalize */
		keep(c, s, 4);                          /* logit_scale.exp() */
		/* gather_features: all_gather with grad (outputs by empty_like, the
		 * own share copied in, the other's through NCCL), then cat */
		CUdeviceptr gathered[2][NRANK];
		for (int k = 0; k < 2; k++) {
			CUdeviceptr f = k ? ft : fi;
			for (int q = 0; q < NRANK; q++)
				gathered[k][q] = act(c, B * E * 4);
			nccl_move(r, f, B * E * 4, 1);
			vtc_dtod(r, gathered[k][r], f, B * E * 4);
		}
		keep(c, s, NRANK * B * E * 4), keep(c, s, NRANK * B * E * 4); /* torch.cat */
		for (int k = 0; k < 2; k++)
			for (int q = 0; q < NRANK; q++)
				vtc_cache_free(c, gathered[k][q]);
		/* get_logits, get_ground_truth, cross entropies */
		uint64_t lg = B * NRANK * B * 4;
		keep(c, s, lg), keep(c, s, lg); /* logits_per_image, logits_per_text */
		if (!labels) {
			CUdeviceptr a = vtc_cache_alloc(c, B * 8, VTC_ACTIVATIONS); /* arange */
			labels =
			    vtc_cache_alloc(c, B * 8, VTC_OTHER); /* + num_logits * rank: kept */
			vtc_cache_free(c, a);
		}
		keep(c, s, lg), keep(c, s, lg); /* log_softmax of each */
		CUdeviceptr loss = keep(c, s, 4);
		keep(c, s, 4), keep(c, s, 4);
		/* backward */
		CUdeviceptr g1 = act(c, lg), g2 = act(c, lg);
		CUdeviceptr gai = act(c, NRANK * B * E * 4), gat = act(c, NRANK * B * E * 4);
		vtc_cache_free(c, g1);
		vtc_cache_free(c, g2);
		for (int k = 0; k < 2; k++) { /* _AllGather.backward: reduce_scatter */
			CUdeviceptr gout = act(c, B * E * 4);
			nccl_move(r, (k ? gat : gai) + (uint64_t)(1 - r) * B * E * 4, B * E * 4, 1);
			vtc_cache_free(c, gout);
		}
		vtc_cache_free(c, gai);
		vtc_cache_free(c, gat);
		for (int i = np - 1; i >= 0; i--) { /* both towers, backward order */
			grad[i] = vtc_cache_alloc(c, pbytes[i], VTC_GRADIENTS);
			if (block_tokens[i]) { /* the block's gradients of activations */
				uint64_t t = block_tokens[i];
				CUdeviceptr t1 = act(c, B * t * 4 * W * 4),
				            t2 = act(c, B * t * W * 4);
				vtc_cache_free(c, t1);
				vtc_cache_free(c, t2);
			}
		}
		while (s->n > 0)
			vtc_cache_free(c, s->p[--s->n]);
		/* the reducer: .grads into the buckets, all-reduce, back out */
		for (int b = 0; b < nbucket; b++) {
			off = 0;
			for (int i = bucket_first[b] - 1; i >= bucket_first[b + 1]; i--) {
				vtc_dtod(r, bucket[b] + off, grad[i], pbytes[i]);
				off += pbytes[i];
			}
			nccl_move(r, bucket[b], bucket_bytes[b], 1);
			off = 0;
			for (int i = bucket_first[b] - 1; i >= bucket_first[b + 1]; i--) {
				vtc_dtod(r, grad[i], bucket[b] + off, pbytes[i]);
				off += pbytes[i];
			}
		}
		/* AdamW */
		for (int i = 0; i < np; i++)
			if (!m[i]) {
				m[i] = vtc_cache_alloc(c, pbytes[i], VTC_OPTIMIZER);
				vtc_zero(r, m[i], pbytes[i]);
				v[i] = vtc_cache_alloc(c, pbytes[i], VTC_OPTIMIZER);
				vtc_zero(r, v[i], pbytes[i]);
			}
		CUdeviceptr tmp[MAXP];
		for (int i = 0; i < np; i++) /* _foreach_sqrt(exp_avg_sq) */
			tmp[i] = act(c, pbytes[i]);
		for (int i = 0; i < np; i++)
			vtc_cache_free(c, tmp[i]);
		vtc_dtoh(r, loss, 4); /* total_loss.item() for the log */
		vtc_cache_free(c, images);
		vtc_cache_free(c, texts);
	}
	pthread_barrier_wait(&bar);
	for (int i = 0; i < np; i++) {
		vtc_cache_free(c, grad[i]);
		vtc_cache_free(c, m[i]);
		vtc_cache_free(c, v[i]);
		vtc_cache_free(c, param[i]);
	}
	for (int b = 0; b < nbucket; b++)
		vtc_cache_free(c, bucket[b]);
	vtc_cache_free(c, labels);
	vtc_cache_free(c, attn_mask);
	vtc_cache_empty(c);
	vtc_free(r, channel[r]);
	VTC_CHECK(vtc.MemFreeHost(pinned));
	free(s);
	free(c);
	return NULL;
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "clip_ddp_gather", NRANK, VTC_GETPROC);
	steps = (int)vtc_opt_size("--steps", 8);
	build_params();
	pthread_barrier_init(&bar, NULL, NRANK);
	vtc_run_ranks(NRANK, rank_main);
	vtc_line("no_finding whole_dataset_upload");
	for (int r = 0; r < NRANK; r++) {
		vtc_line("finding prefetch_depth %d 1 %llu", r,
		         (unsigned long long)(B * 3 * 224 * 224 * 4 + B * TTOK * 8));
		vtc_line("steps %d %d", r, steps);
	}
	vtc_finish();
	return 0;
}
