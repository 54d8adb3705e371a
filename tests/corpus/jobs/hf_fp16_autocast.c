/* Hugging Face Trainer with `fp16=True` and `gradient_accumulation_steps=2`
 * fine-tuning a 6-layer BERT-style encoder for sequence classification,
 * over PyTorch's CUDACachingAllocator.
 *
 * What is modelled (sources read: transformers/trainer.py `_inner_training_
 * loop`, `training_step`, `_prepare_inputs`; accelerate's `Accelerator.
 * backward` / `autocast`; torch/amp/grad_scaler.py `GradScaler.scale` ->
 * `_lazy_init_scale_growth_tracker`, `unscale_` -> `_unscale_grads_`,
 * `update`; aten/src/ATen/autocast_mode.cpp `cached_cast` (fp16 casts of
 * fp32 leaf weights cached while the autocast region is open,
 * `clear_cache()` when the outermost region exits); torch/optim/adamw.py
 * `_init_group`; c10/cuda/CUDACachingAllocator.cpp through vtc_cache):
 *  - `model.to(device)`: every fp32 parameter a block and an upload
 *    (Module._apply(convert)); no fp32 master copies: autocast keeps the
 *    parameters fp32 and casts them per forward.
 *  - per micro-batch, `_prepare_inputs`: input_ids, attention_mask and
 *    labels copied from the DataLoader's pinned batch (`.to(device)`);
 *  - forward under `torch.autocast("cuda", dtype=torch.float16)`: each
 *    Linear's weight cast to fp16 (cached for the forward; the cache is
 *    cleared when the region exits, but autograd keeps each cast saved for
 *    its matmul's backward, so each is freed in the backward of its layer);
 *    outputs in fp16, layer norms in fp32;
 *  - `GradScaler.scale(loss)`: `_scale` and `_growth_tracker` (4 B each)
 *    made at the first call and kept;
 *  - backward: the first micro-batch's AccumulateGrad makes each fp32
 *    `.grad`; the second micro-batch's gradient of each parameter is a new
 *    fp32 tensor added into `.grad` and freed;
 *  - every 2nd micro-batch the optimizer step: `scaler.unscale_` makes
 *    `found_inf` (4 B, per step), `clip_grad_norm_` (per-parameter norms,
 *    the total norm), AdamW's `exp_avg`/`exp_avg_sq` at the first step
 *    (`step` stays a CPU tensor), `scaler.update`, `zero_grad(set_to_none=
 *    True)` frees the `.grad`s.
 * No markers, driver by cuGetProcAddress (libcudart).
 *
 * Truth: fp32 parameters weights; autocast's fp16 casts activations (a
 * transient per-forward copy, like the dequantized copies of qlora_4bit,
 * unlike the persistent fp16 model of apex O2, which is weights); `.grad`s
 * and the second micro-batch's transient parameter gradients gradients;
 * AdamW state optimizer; GradScaler's scalars other (README convention);
 * the three input tensors prefetch (one micro-batch on the device at a
 * time: depth 1); a segment that held one kind is that kind, else pool with
 * parts. No dataset; 6 optimizer steps (12 micro-batches).
 * Coincidences: a hidden state (8 x 192 x 768 fp16) is exactly the
 * attention output weight and its gradient (768 x 768 fp32, 2.25 MiB); the
 * fc1 output (8 x 192 x 3072 fp16) is exactly the fc1 weight (9 MiB); the
 * attention scores (8 x 12 x 192 x 192 fp16) are exactly the fp32 qkv
 * weight (6.75 MiB). */
#include "vtc_pool.h"

#define LAYERS 6
#define PER_LAYER 10 /* qkv w, b; out w, b; ln1 and ln2 (weight + bias each); fc1 w, b; fc2 w, b   \
	              */
#define NPARAMS (2 + LAYERS * PER_LAYER + 2)
#define ACCUM 2

static struct vtc_cache cache;
static const uint64_t H = 768, FF = 3072, B = 8, T = 192, HEADS = 12;
static uint64_t pbytes[NPARAMS];

static void shapes(void)
{
	int i = 0;
	pbytes[i++] = 30522 * H * 4; /* word embeddings (fp32; embedding is not autocast) */
	pbytes[i++] = 512 * H * 4;   /* position embeddings */
	for (int l = 0; l < LAYERS; l++) {
		const uint64_t one[PER_LAYER] = {H * 3 * H * 4, 3 * H * 4, H * H * 4,  H * 4,
		                                 2 * H * 4,     2 * H * 4, H * FF * 4, FF * 4,
		                                 FF * H * 4,    H * 4};
		for (int k = 0; k < PER_LAYER; k++)
			pbytes[i++] = one[k];
	}
	pbytes[i++] = H * H * 4; /* pooler dense */
	pbytes[i++] = H * 2 * 4; /* classifier (2 labels) */
}

static CUdeviceptr take(uint64_t n, enum vtc_cat c)
{
	return vtc_cache_alloc(&cache, n, c);
}
static void give(CUdeviceptr p)
{
	vtc_cache_free(&cache, p);
}

/* one layer's forward under autocast: casts and saved tensors */
struct saved {
	CUdeviceptr cast[4], t[8];
	int nt;
};

static void layer_forward(int l, struct saved *sv)
{
	const uint64_t hid16 = B * T * H * 2, hid32 = B * T * H * 4;
	int base = 2 + l * PER_LAYER;
	int w[4] = {base, base + 2, base + 6, base + 8}; /* the Linear weights */
	sv->nt = 0;
	/* qkv: cast, matmul; scores; context; out: cast, matmul; ln1; fc1; gelu; fc2; ln2 */
	sv->cast[0] = take(pbytes[w[0]] / 2, VTC_ACTIVATIONS);
	sv->t[sv->nt++] = take(B * T * 3 * H * 2, VTC_ACTIVATIONS);
	sv->t[sv->nt++] = take(B * HEADS * T * T * 2, VTC_ACTIVATIONS); /* softmax probs */
	sv->t[sv->nt++] = take(hid16, VTC_ACTIVATIONS);                 /* context */
	sv->cast[1] = take(pbytes[w[1]] / 2, VTC_ACTIVATIONS);
	sv->t[sv->nt++] = take(hid32, VTC_ACTIVATIONS); /* residual + ln1, fp32 */
	sv->cast[2] = take(pbytes[w[2]] / 2, VTC_ACTIVATIONS);
	sv->t[sv->nt++] = take(B * T * FF * 2, VTC_ACTIVATIONS); /* fc1 out */
	sv->t[sv->nt++] = take(B * T * FF * 2, VTC_ACTIVATIONS); /* gelu */
	sv->cast[3] = take(pbytes[w[3]] / 2, VTC_ACTIVATIONS);
	sv->t[sv->nt++] = take(hid32, VTC_ACTIVATIONS); /* residual + ln2 */
}

static void micro_batch(CUdeviceptr *grad, const void *pinned)
{
	const uint64_t ids = B * T * 8, lab = B * 8;
	CUdeviceptr in[3];
	for (int k = 0; k < 3; k++) { /* _prepare_inputs */
		uint64_t n = k == 2 ? lab : ids;
		in[k] = take(n, VTC_PREFETCH);
		vtc_htod_from(0, in[k], pinned, n, 0);
	}
	CUdeviceptr emb = take(B * T * H * 4, VTC_ACTIVATIONS); /* embeddings + ln, fp32 */
	struct saved sv[LAYERS];
	for (int l = 0; l < LAYERS; l++)
		layer_forward(l, &sv[l]);
	CUdeviceptr pool_cast = take(pbytes[NPARAMS - 2] / 2, VTC_ACTIVATIONS);
	CUdeviceptr logits = take(B * 2 * 2, VTC_ACTIVATIONS);
	CUdeviceptr loss = take(4, VTC_ACTIVATIONS);
	/* autocast exit: clear_cache() drops the cache's references; the casts
	 * live on as saved tensors */
	CUdeviceptr scaled = take(4, VTC_ACTIVATIONS); /* scaler.scale(loss) */
	/* backward, last parameter first */
	for (int i = NPARAMS - 1; i >= 0; i--) {
		if (!grad[i]) {
			grad[i] = take(pbytes[i], VTC_GRADIENTS);
		} else { /* the new fp32 gradient, added into .grad, freed */
			CUdeviceptr g = take(pbytes[i], VTC_GRADIENTS);
			give(g);
		}
		if (i == NPARAMS - 2) {
			give(loss);
			give(scaled);
			give(logits);
			give(pool_cast);
		}
		if (i >= 2 && i < NPARAMS - 2 && (i - 2) % PER_LAYER == 0) { /* layer done */
			struct saved *s = &sv[(i - 2) / PER_LAYER];
			CUdeviceptr gh = take(B * T * H * 2, VTC_ACTIVATIONS); /* grad of hidden */
			for (int k = s->nt - 1; k >= 0; k--)
				give(s->t[k]);
			for (int k = 3; k >= 0; k--)
				give(s->cast[k]);
			give(gh);
		}
	}
	give(emb);
	for (int k = 0; k < 3; k++)
		give(in[k]);
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "hf_fp16_autocast", 1, VTC_GETPROC);
	int steps = (int)vtc_opt_size("--steps", 6);
	shapes();
	vtc_cache_init(&cache, 0);
	CUdeviceptr param[NPARAMS], grad[NPARAMS] = {0}, m[NPARAMS] = {0}, v[NPARAMS] = {0};
	for (int i = 0; i < NPARAMS; i++) { /* model.to(device) */
		param[i] = take(pbytes[i], VTC_WEIGHTS);
		vtc_htod(0, param[i], pbytes[i]);
	}
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, B * T * 8));
	CUdeviceptr scale = 0, growth = 0;
	for (int s = 0; s < steps; s++) {
		for (int mb = 0; mb < ACCUM; mb++) {
			if (!scale) { /* _lazy_init_scale_growth_tracker */
				scale = take(4, VTC_OTHER);
				vtc_htod(0, scale, 4);
				growth = take(4, VTC_OTHER);
				vtc_zero(0, growth, 4);
			}
			micro_batch(grad, pinned);
		}
		CUdeviceptr found_inf = take(4, VTC_OTHER); /* scaler.unscale_ */
		vtc_zero(0, found_inf, 4);
		CUdeviceptr norms = take(NPARAMS * 4, VTC_ACTIVATIONS); /* clip_grad_norm_ */
		CUdeviceptr total = take(4, VTC_ACTIVATIONS);
		vtc_dtoh(0, found_inf, 4); /* scaler.step: found_inf.item() */
		for (int i = 0; i < NPARAMS; i++)
			if (!m[i]) { /* AdamW _init_group at the first step */
				m[i] = take(pbytes[i], VTC_OPTIMIZER);
				vtc_zero(0, m[i], pbytes[i]);
				v[i] = take(pbytes[i], VTC_OPTIMIZER);
				vtc_zero(0, v[i], pbytes[i]);
			}
		give(total);
		give(norms);
		give(found_inf);                    /* scaler.update */
		for (int i = 0; i < NPARAMS; i++) { /* zero_grad(set_to_none=True) */
			give(grad[i]);
			grad[i] = 0;
		}
	}
	VTC_CHECK(vtc.MemFreeHost(pinned));
	give(scale);
	give(growth);
	for (int i = 0; i < NPARAMS; i++) {
		give(param[i]);
		give(m[i]);
		give(v[i]);
	}
	vtc_cache_empty(&cache);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)(2 * B * T * 8 + B * 8));
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
