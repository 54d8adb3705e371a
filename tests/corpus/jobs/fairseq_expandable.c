/* fairseq-train of transformer_iwslt_de_en with `--max-tokens 4096`
 * (batches of varying shape, bucketed by length) under
 * PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and
 * `--empty-cache-freq 4`.
 *
 * What is modelled (sources read: c10/cuda/CUDACachingAllocator.cpp, Note
 * [Expandable Segments] and `ExpandableSegment` (per pool one VA
 * reservation of 1 1/8 of the device's memory, physical memory added as
 * needed in pages of 2 MiB for the small pool and 20 MiB for the large one:
 * one `cuMemCreate` per page, `cuMemMap` and `cuMemSetAccess`; `unmap`
 * releases the pages wholly inside free blocks, done by
 * `release_cached_blocks`, i.e. `empty_cache`); fairseq/trainer.py
 * `train_step` (`zero_grad` (grads set to None), `torch.cuda.empty_cache()`
 * every `empty_cache_freq` updates, `_prepare_sample` -> `utils.move_to_cuda`
 * (src_tokens, src_lengths, prev_output_tokens, target and id each
 * `.cuda(non_blocking=True)`)); fairseq/data/data_utils.py
 * `batch_by_size` (batches of up to 4096 tokens, sizes grouped by length, so
 * their shapes change from step to step); models/transformer
 * (`TransformerEncoder`, `TransformerDecoder`, shared decoder input and
 * output embedding); modules/sinusoidal_positional_embedding.py (the table
 * made on the host at the first forward and moved to the device:
 * `self.weights.to(self._float_tensor)`); modules/multihead_attention.py;
 * criterions/label_smoothed_cross_entropy.py (`get_normalized_probs(
 * log_probs=True)`, nll and smooth losses); optim/adam.py (fairseq's Adam:
 * `exp_avg`, `exp_avg_sq` = `zeros_like` at the first step, a `denom`
 * tensor per parameter per step)):
 *  - `model.cuda()`: every parameter and the `_float_tensor` buffers
 *    uploaded into the expandable segments;
 *  - 24 updates over 8 batch shapes in turn (bsz x source x target from
 *    256 x 15 x 16 to 24 x 170 x 160): the 5 sample tensors uploaded,
 *    encoder and decoder forward, log-probs, losses, backward (`.grad`s),
 *    Adam; at the first forward the two sinusoidal tables uploaded; every
 *    4th update empty_cache unmaps the free pages, which are mapped again
 *    by the next step;
 *  - validation after the last update: 4 batches, no grad.
 * Blocks are placed first fit in the segment (the allocator is best fit).
 * A copy or fill that crosses a page boundary is issued once per page: the
 * simulated driver wants each copy inside one mapping (a GPU copies across
 * contiguous mappings in one call).
 * The small pool's reservation is 1/8 of the device: the simulated driver's
 * address window cannot hold two reservations of 1 1/8 of it.
 * No markers, driver by cuGetProcAddress (libcudart).
 *
 * Truth: every physical page (ADDR = its handle) by what the blocks over it
 * held while it was mapped: one kind, else pool (parts recorded at their
 * VA): parameters weights, `.grad`s gradients, Adam state optimizer, the
 * uploaded samples prefetch (depth 1), the sinusoidal tables and
 * `_float_tensor` other, every forward, backward, validation and Adam
 * temporary activations. No dataset; 24 steps. Coincidences: every large
 * page is 20 MiB whatever it holds; `exp_avg`, `exp_avg_sq`, `.grad` and
 * parameter are one size for each parameter; the two embedding tables'
 * Adam states differ by less than the page size. */
#include "vtc_pool.h"

#include <stdio.h>
#include <stdlib.h>

#define MAXPAGES 1024
#define MAXP 256
#define MAXS 2048

struct expseg {
	struct vtc_region r; /* over the whole reservation */
	CUdeviceptr va;
	uint64_t page, reserve;
	CUmemGenericAllocationHandle h[MAXPAGES];
	int rec[MAXPAGES];
	unsigned cats[MAXPAGES];
};

static struct expseg small_seg, large_seg;
static const uint64_t D = 512, FFN = 1024, H = 4, LAYERS = 6, SRC_V = 8848, TGT_V = 6632;
static const uint64_t SMALL = 1 * MIB;

static void es_init(struct expseg *e, uint64_t page, uint64_t reserve)
{
	reserve = (reserve + page - 1) / page * page;
	if (reserve / page > MAXPAGES)
		reserve = MAXPAGES * page;
	e->page = page;
	e->reserve = reserve;
	VTC_CHECK(vtc.MemAddressReserve(&e->va, reserve, 0, 0, 0));
	vtc_region_init(&e->r, 0, e->va, reserve, -1);
}

static void es_settle(struct expseg *e, int i)
{
	unsigned c = e->cats[i];
	vtc_set_category(e->rec[i],
	                 __builtin_popcount(c) == 1 ? (enum vtc_cat)__builtin_ctz(c) : VTC_POOL);
}

static CUdeviceptr es_alloc(struct expseg *e, uint64_t bytes, enum vtc_cat cat)
{
	CUdeviceptr p = vtc_region_take(&e->r, bytes, cat);
	if (!p) {
		fprintf(stderr, "fairseq_expandable: segment full\n");
		exit(1);
	}
	uint64_t size = (bytes + 511) / 512 * 512;
	uint64_t first = (p - e->va) / e->page, last = (p + size - 1 - e->va) / e->page;
	for (uint64_t i = first; i <= last; i++) {
		if (!e->h[i]) { /* map(): a new handle for the page */
			e->h[i] = vtc_vmm_create(0, e->page, VTC_POOL);
			e->rec[i] = vtc_record_of(0, (uint64_t)e->h[i]);
			vtc_vmm_map(0, e->va + i * e->page, e->page, e->h[i]);
		}
		e->cats[i] |= 1u << cat;
	}
	return p;
}

/* release_cached_blocks: unmap the pages wholly inside free blocks */
static void es_release(struct expseg *e)
{
	for (int b = 0; b < e->r.n; b++) {
		if (e->r.b[b].used)
			continue;
		uint64_t lo = (e->r.b[b].off + e->page - 1) / e->page;
		uint64_t hi = (e->r.b[b].off + e->r.b[b].size) / e->page;
		for (uint64_t i = lo; i < hi; i++) {
			if (!e->h[i])
				continue;
			es_settle(e, (int)i);
			VTC_CHECK(vtc.MemUnmap(e->va + i * e->page, e->page));
			vtc_vmm_release(0, e->h[i]);
			e->h[i] = 0;
			e->cats[i] = 0;
		}
	}
}

static CUdeviceptr alloc(uint64_t bytes, enum vtc_cat cat)
{
	return es_alloc(bytes <= SMALL ? &small_seg : &large_seg, bytes, cat);
}

static void release(CUdeviceptr p)
{
	if (!vtc_region_give(&small_seg.r, p))
		vtc_region_give(&large_seg.r, p);
}

static void empty_cache(void)
{
	es_release(&small_seg);
	es_release(&large_seg);
}

/* an upload (src) or a fill with zeros (no src), one call per page it
 * touches: the simulated driver wants each copy inside one mapping */
static void per_page(CUdeviceptr p, uint64_t bytes, const void *src)
{
	struct expseg *e = p - small_seg.va < small_seg.reserve ? &small_seg : &large_seg;
	for (uint64_t done = 0; done < bytes;) {
		uint64_t at = p + done, end = e->va + ((at - e->va) / e->page + 1) * e->page;
		uint64_t n = end - at < bytes - done ? end - at : bytes - done;
		if (src)
			vtc_htod_from(0, at, (const char *)src + done, n, 0);
		else
			vtc_zero(0, at, n);
		done += n;
	}
}

static uint64_t pbytes[MAXP];
static int np;
static CUdeviceptr param[MAXP], grad[MAXP], exp_avg[MAXP], exp_avg_sq[MAXP];

static void add(uint64_t elems)
{
	pbytes[np++] = elems * 4;
}

static void add_attn(void)
{
	for (int i = 0; i < 4; i++) /* k_proj, v_proj, q_proj, out_proj */
		add(D * D), add(D);
	add(D), add(D); /* its layer norm */
}

static void build(void)
{
	add(SRC_V * D); /* encoder.embed_tokens */
	for (uint64_t l = 0; l < LAYERS; l++) {
		add_attn();
		add(FFN * D), add(FFN), add(D * FFN), add(D), add(D),
		    add(D); /* fc1, fc2, final_layer_norm */
	}
	add(TGT_V * D); /* decoder.embed_tokens = output projection */
	for (uint64_t l = 0; l < LAYERS; l++) {
		add_attn(); /* self_attn */
		add_attn(); /* encoder_attn */
		add(FFN * D), add(FFN), add(D * FFN), add(D), add(D), add(D);
	}
}

struct saved {
	CUdeviceptr p[MAXS];
	int n;
};

static void keep(struct saved *s, uint64_t bytes)
{
	s->p[s->n++] = alloc(bytes, VTC_ACTIVATIONS);
}

static void drop_all(struct saved *s)
{
	while (s->n > 0)
		release(s->p[--s->n]);
}

/* multi-head attention over b x tq queries and tk keys, with dropout */
static void attention(struct saved *s, uint64_t b, uint64_t tq, uint64_t tk)
{
	uint64_t q = b * tq * D * 4, k = b * tk * D * 4, sc = b * H * tq * tk * 4;
	keep(s, q), keep(s, k), keep(s, k), keep(s, q); /* q, k, v, q * scaling */
	keep(s, sc), keep(s, sc);                       /* scores, softmax */
	keep(s, b * H * tq * tk), keep(s, sc);          /* dropout mask, dropped */
	keep(s, q), keep(s, q);                         /* attn, out_proj */
	keep(s, b * tq * D), keep(s, q), keep(s, q);    /* dropout, residual */
	keep(s, q), keep(s, b * tq * 8);                /* layer norm, its statistics */
}

static void ffn(struct saved *s, uint64_t b, uint64_t t)
{
	uint64_t h = b * t * D * 4, f = b * t * FFN * 4;
	keep(s, f), keep(s, f), keep(s, b * t * FFN), keep(s, f); /* fc1, relu, dropout */
	keep(s, h), keep(s, b * t * D), keep(s, h), keep(s, h);   /* fc2, dropout, residual */
	keep(s, h), keep(s, b * t * 8);                           /* final_layer_norm */
}

static void embed(struct saved *s, uint64_t b, uint64_t t)
{
	uint64_t h = b * t * D * 4;
	keep(s, h), keep(s, h);                         /* embed_tokens, * embed_scale */
	keep(s, b * t), keep(s, b * t * 8), keep(s, h); /* positions: mask, cumsum, lookup */
	keep(s, h), keep(s, b * t * D), keep(s, h);     /* + positions, dropout */
}

static CUdeviceptr sinusoid[2];

static void forward(struct saved *s, uint64_t b, uint64_t src, uint64_t tgt)
{
	for (int k = 0; k < 2; k++)
		if (!sinusoid[k]) { /* get_embedding on the host, .to(self._float_tensor) */
			sinusoid[k] = alloc((1024 + 2) * D * 4, VTC_OTHER);
			per_page(sinusoid[k], (1024 + 2) * D * 4, vtc_host((1024 + 2) * D * 4));
		}
	embed(s, b, src);
	for (uint64_t l = 0; l < LAYERS; l++) {
		attention(s, b, src, src);
		ffn(s, b, src);
	}
	embed(s, b, tgt);
	for (uint64_t l = 0; l < LAYERS; l++) {
		attention(s, b, tgt, tgt);
		attention(s, b, tgt, src);
		ffn(s, b, tgt);
	}
	keep(s, b * tgt * TGT_V * 4); /* output projection */
	keep(s, b * tgt * TGT_V * 4); /* get_normalized_probs(log_probs=True) */
	keep(s, b * tgt * 4), keep(s, b * tgt * 4), keep(s, b * tgt); /* nll, smooth, pad mask */
	keep(s, 4), keep(s, 4);                                       /* loss, nll_loss */
}

static void backward(struct saved *s, uint64_t b, uint64_t src, uint64_t tgt)
{
	CUdeviceptr g = alloc(b * tgt * TGT_V * 4, VTC_ACTIVATIONS);
	CUdeviceptr g2 = alloc(b * tgt * TGT_V * 4, VTC_ACTIVATIONS);
	release(g);
	for (int i = np - 1; i >= 0; i--) { /* AccumulateGrad, output side first */
		uint64_t t = i >= np / 2 ? tgt : src;
		CUdeviceptr gx =
		    alloc(b * t * (pbytes[i] == FFN * D * 4 ? FFN : D) * 4, VTC_ACTIVATIONS);
		grad[i] = alloc(pbytes[i], VTC_GRADIENTS);
		release(gx);
	}
	release(g2);
	drop_all(s);
}

static void adam_step(void)
{
	for (int i = 0; i < np; i++) {
		if (!exp_avg[i]) {
			exp_avg[i] = alloc(pbytes[i], VTC_OPTIMIZER);
			per_page(exp_avg[i], pbytes[i], NULL);
			exp_avg_sq[i] = alloc(pbytes[i], VTC_OPTIMIZER);
			per_page(exp_avg_sq[i], pbytes[i], NULL);
		}
		CUdeviceptr denom =
		    alloc(pbytes[i], VTC_ACTIVATIONS); /* exp_avg_sq.sqrt().add_(eps) */
		release(denom);
	}
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "fairseq_expandable", 1, VTC_GETPROC);
	int updates = (int)vtc_opt_size("--updates", 24);
	size_t free_b = 0, total = 0;
	VTC_CHECK(vtc.MemGetInfo(&free_b, &total));
	es_init(&large_seg, 20 * MIB, total + total / 8);
	es_init(&small_seg, 2 * MIB, total / 8);
	build();
	CUdeviceptr float_tensor[2];
	for (int i = 0; i < np; i++) { /* model.cuda() */
		param[i] = alloc(pbytes[i], VTC_WEIGHTS);
		per_page(param[i], pbytes[i], vtc_host(pbytes[i]));
		if (i == 0 || i == np / 2) { /* SinusoidalPositionalEmbedding._float_tensor */
			float_tensor[i ? 1 : 0] = alloc(4, VTC_OTHER);
			per_page(float_tensor[i ? 1 : 0], 4, vtc_host(4));
		}
	}
	static const uint64_t shapes[][3] = {{128, 30, 32}, {64, 62, 60},  {32, 126, 124},
	                                     {256, 15, 16}, {96, 40, 43},  {48, 84, 80},
	                                     {160, 24, 25}, {24, 170, 160}};
	struct saved *s = malloc(sizeof *s);
	s->n = 0;
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, 256 * 1024));
	for (int u = 0; u < updates; u++) {
		const uint64_t *sh = shapes[u % 8];
		uint64_t b = sh[0], src = sh[1], tgt = sh[2];
		for (int i = 0; i < np; i++) /* zero_grad: p.grad = None */
			if (grad[i]) {
				release(grad[i]);
				grad[i] = 0;
			}
		/* move_to_cuda: src_tokens, src_lengths, prev_output_tokens, target, id */
		const uint64_t in_bytes[5] = {b * src * 8, b * 8, b * tgt * 8, b * tgt * 8, b * 8};
		CUdeviceptr in[5];
		for (int k = 0; k < 5; k++) {
			in[k] = alloc(in_bytes[k], VTC_PREFETCH);
			per_page(in[k], in_bytes[k], pinned);
		}
		forward(s, b, src, tgt);
		backward(s, b, src, tgt);
		adam_step();
		vtc_dtoh(0, in[4], 8); /* logging: sample size */
		for (int k = 0; k < 5; k++)
			release(in[k]);
		if ((u + 1) % 4 == 0) /* empty_cache_freq */
			empty_cache();
	}
	for (int v = 0; v < 4; v++) { /* validation: no grad, 4 batches */
		const uint64_t *sh = shapes[(v * 3) % 8];
		uint64_t b = sh[0], src = sh[1], tgt = sh[2];
		const uint64_t in_bytes[5] = {b * src * 8, b * 8, b * tgt * 8, b * tgt * 8, b * 8};
		CUdeviceptr in[5];
		for (int k = 0; k < 5; k++) {
			in[k] = alloc(in_bytes[k], VTC_PREFETCH);
			per_page(in[k], in_bytes[k], pinned);
		}
		forward(s, b, src, tgt); /* modelled as the training forward, freed at its end */
		drop_all(s);
		for (int k = 0; k < 5; k++)
			release(in[k]);
	}
	for (int i = 0; i < np; i++) {
		release(param[i]);
		release(exp_avg[i]);
		release(exp_avg_sq[i]);
		if (grad[i])
			release(grad[i]);
	}
	release(float_tensor[0]);
	release(float_tensor[1]);
	release(sinusoid[0]);
	release(sinusoid[1]);
	empty_cache();
	VTC_CHECK(vtc.MemAddressFree(small_seg.va, small_seg.reserve));
	VTC_CHECK(vtc.MemAddressFree(large_seg.va, large_seg.reserve));
	VTC_CHECK(vtc.MemFreeHost(pinned));
	free(s);
	uint64_t largest = 0; /* batch bytes vary by shape: the largest sample */
	for (int k = 0; k < 8; k++) {
		uint64_t n = shapes[k][0] * (shapes[k][1] + 2 * shapes[k][2] + 2) * 8;
		largest = n > largest ? n : largest;
	}
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)largest);
	vtc_line("steps 0 %d", updates);
	vtc_finish();
	return 0;
}
