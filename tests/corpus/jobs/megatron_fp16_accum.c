/* Megatron-LM-style fp16 training with gradient accumulation and a dynamic
 * loss scaler (one tensor per cudaMalloc, PYTORCH_NO_CUDA_MEMORY_CACHING=1).
 *
 * Setup, nothing uploaded but scalars: the GPT's parameters are made on the
 * device in fp32 (torch.empty(device=cuda) + init kernels), Float16Module ->
 * module.half() (_apply: an fp16 tensor per parameter, cast on the device,
 * the fp32 one freed), then Float16OptimizerWithFloat16Params makes the
 * fp32 masters (param.detach().clone().float(): a new fp32 tensor per fp16
 * parameter, cast on the device: the master is twice its fp16 copy).
 * DynamicGradScaler.__init__ uploads its scalars (torch.tensor([...],
 * device="cuda"): _scale, min_scale, growth_factor, backoff_factor),
 * MixedPrecisionOptimizer its found_inf, FusedAdam its _dummy_overflow_buf.
 *
 * Each optimizer step (forward_backward_no_pipelining, 4 micro-batches):
 * get_batch -> broadcast_data uploads the key sizes (sizes_cuda, int64) and
 * the flattened token batch (the micro-batch), then slices tokens and labels
 * on the device and builds the causal mask and position ids there; fp16
 * activations (a hidden state is exactly an fp16 fc1 weight); the first
 * micro-batch's backward creates the fp16 .grads (AccumulateGrad), the next
 * three add into them. Then _copy_model_grads_to_main_grads (main_param.grad
 * = grad.float(): fp32 grads), _unscale_main_grads_and_check_for_nan
 * (inv_scale = _scale.double().reciprocal().float(): two scalars; found_inf
 * read back), clip_grad_norm_fp32 (dummy_overflow_buf =
 * torch.tensor([0], device="cuda"): a 4-byte upload every step, the l2 norm
 * a 4-byte result), FusedAdam on the masters (exp_avg/exp_avg_sq at the
 * first step), the masters cast back into the fp16 parameters, the
 * scaler's update (a new _scale every growth_interval steps),
 * zero_grad(set_to_none=True) (fp16 and fp32 grads freed). No markers;
 * driver by cuGetProcAddress.
 *
 * Truth: fp32 masters and fp16 parameters weights (the fp16 working copy is
 * a weight, the corpus convention); fp16 .grads and fp32 main grads
 * gradients; Adam state optimizer; the token micro-batch and its sizes
 * prefetch (uploaded per micro-batch, one at a time: depth 1); every scaler
 * / overflow / norm scalar other (the GradScaler convention), also those
 * uploaded each step; tokens, labels, mask, position ids and forward
 * tensors activations; no dataset; 6 optimizer steps (24 micro-batches). */
#include "vtc.h"

#define LAYERS 4
#define PER_LAYER 7
#define NPARAM (2 + LAYERS * PER_LAYER)
#define MICRO 4

static uint64_t fp32_bytes[NPARAM];
static CUdeviceptr fp16[NPARAM], master[NPARAM], grad16[NPARAM], grad32[NPARAM];
static CUdeviceptr adam_m[NPARAM], adam_v[NPARAM];

/* GPT, hidden 1024, vocab 8192: word + position embeddings, per layer qkv,
 * its bias, proj, fc1, fc2 and two layer norms (fp32 bytes) */
static void gpt_shapes(void)
{
	const uint64_t per_layer[PER_LAYER] = {12 * MIB, 12 * KIB, 4 * MIB, 16 * MIB,
	                                       16 * MIB, 8 * KIB,  8 * KIB};
	fp32_bytes[0] = 32 * MIB; /* word embeddings 8192 x 1024 */
	fp32_bytes[1] = 4 * MIB;  /* position embeddings 1024 x 1024 */
	for (int l = 0; l < LAYERS; l++)
		for (int k = 0; k < PER_LAYER; k++)
			fp32_bytes[2 + l * PER_LAYER + k] = per_layer[k];
}

/* build in fp32 on the device, half() it, clone fp32 masters from it */
static void build_model_and_masters(void)
{
	for (int i = 0; i < NPARAM; i++) {
		CUdeviceptr p32 = vtc_alloc(0, fp32_bytes[i], VTC_WEIGHTS);
		vtc_zero(0, p32, fp32_bytes[i]); /* init_method_normal: a kernel */
		fp16[i] = vtc_alloc(0, fp32_bytes[i] / 2, VTC_WEIGHTS);
		vtc_free(0, p32);
	}
	for (int i = 0; i < NPARAM; i++)
		master[i] = vtc_alloc(0, fp32_bytes[i], VTC_WEIGHTS);
}

static CUdeviceptr upload_scalar(uint64_t bytes, enum vtc_cat cat)
{
	CUdeviceptr p = vtc_alloc(0, bytes, cat);
	vtc_htod(0, p, bytes);
	return p;
}

/* get_batch: broadcast_data's uploads, then tokens/labels/mask/positions */
static void micro_batch(int first, uint64_t tokens_bytes, uint64_t hidden)
{
	CUdeviceptr sizes = upload_scalar(32 * 8, VTC_PREFETCH);
	vtc_dtoh(0, sizes, 32 * 8);
	vtc_free(0, sizes); /* _build_key_size_numel_dictionaries returns */
	CUdeviceptr flat = upload_scalar(tokens_bytes, VTC_PREFETCH);
	CUdeviceptr tok = vtc_alloc(0, tokens_bytes - 4 * 8, VTC_ACTIVATIONS);
	CUdeviceptr lab = vtc_alloc(0, tokens_bytes - 4 * 8, VTC_ACTIVATIONS);
	CUdeviceptr mask = vtc_alloc(0, 1024 * 1024, VTC_ACTIVATIONS);
	CUdeviceptr pos = vtc_alloc(0, 1024 * 8, VTC_ACTIVATIONS);
	CUdeviceptr act[LAYERS * 2];
	for (int l = 0; l < LAYERS; l++) {
		act[2 * l] = vtc_alloc(0, hidden, VTC_ACTIVATIONS);         /* layer input */
		act[2 * l + 1] = vtc_alloc(0, hidden * 4, VTC_ACTIVATIONS); /* fc1 output */
	}
	CUdeviceptr logits = vtc_alloc(0, 4 * 1024 * 8192 * 2ull, VTC_ACTIVATIONS);
	vtc_free(0, logits);
	for (int i = NPARAM - 1; i >= 0; i--) {
		if (first)
			grad16[i] = vtc_alloc(0, fp32_bytes[i] / 2, VTC_GRADIENTS);
		if (i >= 2 && (i - 2) % PER_LAYER == 0) {
			int l = (i - 2) / PER_LAYER;
			vtc_free(0, act[2 * l + 1]);
			vtc_free(0, act[2 * l]);
		}
	}
	CUdeviceptr done[] = {pos, mask, lab, tok, flat};
	for (unsigned k = 0; k < sizeof done / sizeof done[0]; k++)
		vtc_free(0, done[k]);
}

struct scaler {
	CUdeviceptr scale, min_scale, growth, backoff, found_inf, overflow_buf;
};

static void optimizer_step(struct scaler *sc, int step)
{
	for (int i = 0; i < NPARAM; i++) /* _copy_model_grads_to_main_grads */
		grad32[i] = vtc_alloc(0, fp32_bytes[i], VTC_GRADIENTS);
	CUdeviceptr inv64 = vtc_alloc(0, 8, VTC_OTHER); /* _scale.double().reciprocal() */
	CUdeviceptr inv = vtc_alloc(0, 4, VTC_OTHER);   /* .float() */
	vtc_free(0, inv64);
	vtc_dtoh(0, sc->found_inf, 4);                   /* found_inf.item() */
	CUdeviceptr dummy = upload_scalar(4, VTC_OTHER); /* clip_grad_norm_fp32 */
	CUdeviceptr norm = vtc_alloc(0, 4, VTC_OTHER);
	vtc_dtoh(0, norm, 4);
	if (step == 0)
		for (int i = 0; i < NPARAM; i++) {
			adam_m[i] = vtc_alloc(0, fp32_bytes[i], VTC_OPTIMIZER);
			vtc_zero(0, adam_m[i], fp32_bytes[i]);
			adam_v[i] = vtc_alloc(0, fp32_bytes[i], VTC_OPTIMIZER);
			vtc_zero(0, adam_v[i], fp32_bytes[i]);
		}
	vtc_free(0, norm);
	vtc_free(0, dummy);
	vtc_free(0, inv);
	if (step % 3 == 2) { /* growth_interval reached: _scale * growth_factor */
		CUdeviceptr grown = vtc_alloc(0, 4, VTC_OTHER);
		vtc_free(0, sc->scale);
		sc->scale = grown;
	}
	for (int i = 0; i < NPARAM; i++) { /* zero_grad(set_to_none=True) */
		vtc_free(0, grad16[i]);
		vtc_free(0, grad32[i]);
	}
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "megatron_fp16_accum", 1, VTC_GETPROC);
	int steps = (int)vtc_opt_size("--steps", 6);
	const uint64_t tokens_bytes = 4 * 1025 * 8,
	               hidden = 4 * 1024 * 1024 * 2ull; /* = fp16 fc1 */
	gpt_shapes();
	build_model_and_masters();
	struct scaler sc = {
	    .scale = upload_scalar(4, VTC_OTHER),
	    .min_scale = upload_scalar(4, VTC_OTHER),
	    .growth = upload_scalar(4, VTC_OTHER),
	    .backoff = upload_scalar(4, VTC_OTHER),
	    .found_inf = upload_scalar(4, VTC_OTHER),
	    .overflow_buf = upload_scalar(4, VTC_OTHER),
	};
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		for (int m = 0; m < MICRO; m++)
			micro_batch(m == 0, tokens_bytes, hidden);
		optimizer_step(&sc, s);
	}
	CUdeviceptr scalars[] = {sc.scale,   sc.min_scale, sc.growth,
	                         sc.backoff, sc.found_inf, sc.overflow_buf};
	for (unsigned k = 0; k < sizeof scalars / sizeof scalars[0]; k++)
		vtc_free(0, scalars[k]);
	for (int i = 0; i < NPARAM; i++) {
		vtc_free(0, adam_m[i]);
		vtc_free(0, adam_v[i]);
		vtc_free(0, master[i]);
		vtc_free(0, fp16[i]);
	}
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)tokens_bytes);
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
