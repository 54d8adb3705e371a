/* GRPO with verl on ONE device, actor, rollout and reference model
 * colocated: the actor's AdamW state is created at the first step, moved to
 * the host after every update and brought back before the next one; the
 * reference model's parameters live on the host (FSDP CPUOffload) and are
 * put on the device unit by unit at every forward. PyTorch's caching
 * allocator throughout.
 *
 * What is modelled (sources read: verl workers/fsdp_workers.py
 * `_build_model_optimizer` (FSDP with MixedPrecision(param_dtype=bf16,
 * reduce_dtype=fp32), `cpu_offload=CPUOffload(offload_params=True)` for the
 * reference only), `update_actor` (`load_fsdp_optimizer` before,
 * `offload_fsdp_optimizer` and `empty_cache` after), `compute_log_prob`,
 * `compute_ref_log_prob`, `generate_sequences`; verl utils/fsdp_utils.py
 * `offload_fsdp_optimizer` / `load_fsdp_optimizer` (every tensor in the
 * optimizer state, `step` included, `.to("cpu", non_blocking=True)` and back
 * `.to(device)`: new device tensors filled from the host); verl
 * workers/rollout/hf_rollout.py (`module.generate` under autocast,
 * do_sample, the prompts repeated `n` times); workers/actor/dp_actor.py
 * (`data.to(device)`, mini-batches of `ppo_mini_batch_size`, micro-batches
 * with gradient accumulation, `clip_grad_norm_`, `optimizer.step()`,
 * `zero_grad()`); torch/distributed/fsdp (world size 1: NO_SHARD;
 * `_move_module_to_device` then `flatten_tensors_into_flat_param`, one flat
 * parameter per decoder layer and one for the root;
 * `_use_low_precision_shard` allocating the bf16 `_mp_shard` at each
 * forward and pre-backward and `_free_low_precision_sharded_param` after;
 * with CPU offload `_local_shard.to(device)` first, an upload of the fp32
 * flat parameter; the unsharded bf16 gradient cast into the fp32
 * `flat_param.grad`, accumulated over micro-batches); torch/optim/adamw.py
 * (state at the first `step`); torch/amp autocast (`cached_cast`: inside
 * generate's one autocast region each weight's bf16 copy made once and kept
 * to the region's end); transformers generation/utils.py `_sample`
 * (`DynamicCache` cat per layer and step, float32 next-token logits,
 * temperature and top-p, softmax, `multinomial`, `input_ids` and
 * `attention_mask` grown by cat); vtc_cache):
 *  - the actor built: per decoder layer and for the root its tensors
 *    uploaded, flattened into a new flat parameter (fp32), the originals
 *    freed; the reference's flat parameters stay on the host, its rotary
 *    buffer is uploaded;
 *  - 4 iterations: 8 prompts uploaded and repeated 4 times on the device,
 *    128 sampled tokens (the autocast copies of the actor's weights, the KV
 *    cache grown every step), `empty_cache`; old log-probs (actor) and
 *    reference log-probs in micro-batches of 8, each with its batch
 *    uploaded; the update: `load_fsdp_optimizer` (nothing at the first
 *    iteration), the batch (7 tensors) uploaded, 2 mini-batches of 4
 *    micro-batches: forward and backward with the bf16 shards and the
 *    fp32 gradients, `clip_grad_norm_`, `step` (AdamW state created at the
 *    first), `zero_grad`; `offload_fsdp_optimizer`, `empty_cache`.
 * Markers (a `step N` per optimizer step), driver linked (--lookup direct).
 *
 * Truth: caching segments by what they held (one kind, else pool with
 * parts): the actor's uploaded tensors and flat parameters, the bf16
 * `_mp_shard`s and the reference's uploaded fp32 flat parameters and their
 * bf16 shards weights (FSDP's unsharded parameters, README convention);
 * `flat_param.grad` and the bf16 unsharded gradients gradients; AdamW's
 * `exp_avg`, `exp_avg_sq` and `step`, made on the device or uploaded back
 * from the host, optimizer (README convention: state filled from the host
 * is optimizer); the uploaded prompts and batches prefetch (depth 1); the
 * KV cache and the rotary buffer other; autocast's weight copies (kept for
 * the whole generate) and every other tensor activations. No dataset
 * (neither the optimizer state nor the reference weights, uploaded again
 * and again, are a dataset); 8 steps. Coincidences: a layer's `exp_avg`,
 * `exp_avg_sq`, `.grad`, flat parameter and the reference's uploaded copy
 * of it are one size (7,085,568 B), its bf16 shard half that. */
#include "vtc_pool.h"

#include <stdlib.h>

#define LAYERS 8
#define UNITS (LAYERS + 1) /* unit 0 the root (embeddings, final norm) */

static struct vtc_cache C;
static const uint64_t V = 32000, D = 384, MLP = 1024, HEADS = 6;
static const uint64_t PROMPTS = 8, N = 4, PLEN = 128, RLEN = 128, ITERS = 4;
static const uint64_t MINI = 16, MICRO = 4, LOGP_MICRO = 8;
static uint64_t unit_bytes[UNITS]; /* fp32 flat parameter */
static CUdeviceptr flat[UNITS], grad[UNITS], exp_avg[UNITS], exp_avg_sq[UNITS], step_t[UNITS];
static int opt_on_device;

static CUdeviceptr act(uint64_t bytes)
{
	return vtc_cache_alloc(&C, bytes, VTC_ACTIVATIONS);
}

static void drop(CUdeviceptr p)
{
	vtc_cache_free(&C, p);
}

static CUdeviceptr upload(uint64_t bytes, enum vtc_cat cat)
{
	CUdeviceptr p = vtc_cache_alloc(&C, bytes, cat);
	vtc_htod(0, p, bytes);
	return p;
}

/* the parameters of a unit, in module order (fp32 elements) */
static int unit_params(int u, uint64_t *elems)
{
	if (u == 0) { /* embed_tokens, norm (lm_head tied) */
		elems[0] = V * D, elems[1] = D;
		return 2;
	}
	uint64_t e[] = {D, D * D, D, D * D, D, D * D, D, D * D, D, MLP * D, MLP * D, D * MLP};
	for (int i = 0; i < 12; i++)
		elems[i] = e[i];
	return 12;
}

static void build_actor(void)
{
	for (int u = 1; u <= UNITS; u++) { /* FSDP wraps the layers first, the root last */
		int unit = u % UNITS;
		uint64_t elems[12], total = 0;
		int n = unit_params(unit, elems);
		CUdeviceptr p[12];
		for (int i = 0; i < n; i++) { /* _move_module_to_device */
			p[i] = upload(elems[i] * 4, VTC_WEIGHTS);
			total += elems[i] * 4;
		}
		flat[unit] =
		    vtc_cache_alloc(&C, total, VTC_WEIGHTS); /* flatten_tensors_into_flat_param */
		uint64_t off = 0;
		for (int i = 0; i < n; i++) {
			vtc_dtod(0, flat[unit] + off, p[i], elems[i] * 4);
			off += elems[i] * 4;
			drop(p[i]);
		}
		unit_bytes[unit] = total;
	}
}

/* the bf16 shard of a unit for one forward or backward (with CPU offload
 * the fp32 flat parameter is put on the device first) */
static CUdeviceptr mp_shard(int u, int offloaded)
{
	CUdeviceptr tmp = offloaded ? upload(unit_bytes[u], VTC_WEIGHTS) : 0;
	CUdeviceptr s = vtc_cache_alloc(&C, unit_bytes[u] / 2, VTC_WEIGHTS);
	if (tmp)
		drop(tmp);
	return s;
}

struct saved {
	CUdeviceptr p[1024];
	int n;
};

static void keep(struct saved *s, uint64_t bytes)
{
	s->p[s->n++] = act(bytes);
}

/* a decoder layer over b x t tokens (bf16): what a grad-enabled forward
 * keeps; with no grad everything goes at once */
static void layer_forward(struct saved *s, uint64_t b, uint64_t t, int train)
{
	uint64_t h = b * t * D * 2;
	int first = s->n;
	keep(s, h), keep(s, h), keep(s, h), keep(s, h); /* norm, q, k, v */
	keep(s, h), keep(s, h);                         /* rotary q, k */
	CUdeviceptr lse = act(b * HEADS * t * 4);       /* SDPA (flash): output and logsumexp */
	keep(s, h);
	keep(s, h), keep(s, h);                             /* o_proj, residual */
	keep(s, h);                                         /* post_attention_layernorm */
	keep(s, b * t * MLP * 2), keep(s, b * t * MLP * 2); /* gate, up */
	keep(s, b * t * MLP * 2), keep(s, b * t * MLP * 2); /* silu, product */
	keep(s, h), keep(s, h);                             /* down, residual */
	if (train) {
		s->p[s->n++] = lse;
		return;
	}
	/* no_grad: only the layer's output goes on; its input dies with it */
	CUdeviceptr out = s->p[--s->n];
	while (s->n > first)
		drop(s->p[--s->n]);
	drop(lse);
	drop(s->p[s->n - 1]);
	s->p[s->n - 1] = out;
}

/* log-probs of the response tokens of b sequences: the full forward and
 * the log-softmax; train: keep for backward, else read back and free */
static void policy_forward(struct saved *s, uint64_t b, int offloaded, int train)
{
	uint64_t t = PLEN + RLEN;
	s->n = 0;
	keep(s, b * t * 8);     /* position_ids */
	keep(s, b * t * D * 2); /* embed_tokens */
	for (int u = 1; u < UNITS; u++) {
		CUdeviceptr sh = mp_shard(u, offloaded);
		layer_forward(s, b, t, train);
		drop(sh); /* reshard after forward */
	}
	CUdeviceptr sh = mp_shard(0, offloaded);
	keep(s, b * t * D * 2); /* norm */
	keep(s, b * t * V * 2); /* lm_head (tied) */
	drop(sh);
	keep(s, b * RLEN * V * 4); /* logits[:, -RLEN:].float() / temperature: log_softmax */
	keep(s, b * RLEN * 4);     /* gathered log-probs */
	if (train) {
		keep(s, b * RLEN * V * 4); /* entropy: softmax */
		keep(s, b * RLEN * 4);
		return;
	}
	vtc_dtoh(0, s->p[s->n - 1], b * RLEN * 4); /* output.to("cpu") */
	while (s->n > 0)
		drop(s->p[--s->n]);
}

static void policy_backward(struct saved *s, uint64_t b, int first_micro)
{
	uint64_t t = PLEN + RLEN;
	CUdeviceptr g = act(b * RLEN * V * 4);
	CUdeviceptr gl = act(b * t * V * 2);
	drop(g);
	for (int u = 0; u < UNITS; u++) { /* root first (the head), then layers in reverse */
		int unit = u == 0 ? 0 : UNITS - u;
		CUdeviceptr sh = mp_shard(unit, 0); /* pre-backward unshard */
		CUdeviceptr gx = act(b * t * D * 2);
		CUdeviceptr g16 = vtc_cache_alloc(&C, unit_bytes[unit] / 2, VTC_GRADIENTS);
		if (first_micro) /* flat_param.grad: the fp32 cast of the first one */
			grad[unit] = vtc_cache_alloc(&C, unit_bytes[unit], VTC_GRADIENTS);
		drop(g16);
		drop(sh);
		drop(gx);
	}
	drop(gl);
	while (s->n > 0)
		drop(s->p[--s->n]);
}

static CUdeviceptr upload_batch(uint64_t bytes)
{
	return upload(bytes, VTC_PREFETCH);
}

/* generate_sequences: HF sampling under autocast with a DynamicCache */
static void rollout(void)
{
	uint64_t b = PROMPTS * N;
	CUdeviceptr ids = upload_batch(PROMPTS * PLEN * 8), mask = upload_batch(PROMPTS * PLEN * 8);
	CUdeviceptr pos = upload_batch(PROMPTS * PLEN * 8);
	CUdeviceptr rids = act(b * PLEN * 8), rmask = act(b * PLEN * 8); /* repeat_interleave(n) */
	drop(ids);
	drop(mask);
	drop(pos);
	/* autocast's cached bf16 copy of every weight, made at its first use */
	CUdeviceptr cast[UNITS];
	for (int u = 0; u < UNITS; u++)
		cast[u] = act(unit_bytes[u] / 2);
	CUdeviceptr key[LAYERS] = {0}, val[LAYERS] = {0};
	uint64_t len = 0;
	for (uint64_t t = 0; t < RLEN; t++) {
		uint64_t n = t == 0 ? PLEN : 1, h = b * n * D * 2;
		CUdeviceptr x = act(h);
		for (int l = 0; l < LAYERS; l++) {
			CUdeviceptr tmp[8];
			for (int i = 0; i < 6; i++)
				tmp[i] = act(h);
			CUdeviceptr nk = vtc_cache_alloc(&C, b * (len + n) * D * 2, VTC_OTHER);
			CUdeviceptr nv = vtc_cache_alloc(&C, b * (len + n) * D * 2, VTC_OTHER);
			if (key[l]) {
				drop(key[l]);
				drop(val[l]);
			}
			key[l] = nk, val[l] = nv;
			tmp[6] = act(b * n * MLP * 2), tmp[7] = act(b * n * MLP * 2);
			for (int i = 0; i < 8; i++)
				drop(tmp[i]);
			CUdeviceptr y = act(h);
			drop(x);
			x = y;
		}
		len += n;
		CUdeviceptr lg = act(b * n * V * 2);
		drop(x);
		CUdeviceptr f = act(b * V * 4); /* next_token_logits (float32) */
		drop(lg);
		CUdeviceptr proc[4];
		for (int i = 0; i < 4; i++) /* temperature, top-p: sort, cumsum, scatter */
			proc[i] = act(b * V * 4);
		CUdeviceptr probs = act(b * V * 4), next = act(b * 8);
		for (int i = 0; i < 4; i++)
			drop(proc[i]);
		drop(probs);
		drop(f);
		CUdeviceptr ni = act(b * (PLEN + t + 1) * 8), nm = act(b * (PLEN + t + 1) * 8);
		drop(rids);
		drop(rmask);
		drop(next);
		rids = ni, rmask = nm;
	}
	vtc_dtoh(0, rids, b * (PLEN + RLEN) * 8); /* the DataProto goes back to the host */
	drop(rids);
	drop(rmask);
	for (int l = 0; l < LAYERS; l++) {
		drop(key[l]);
		drop(val[l]);
	}
	for (int u = 0; u < UNITS; u++)
		drop(cast[u]);
}

static void log_probs(int offloaded, struct saved *s)
{
	uint64_t b = PROMPTS * N;
	for (uint64_t m = 0; m < b; m += LOGP_MICRO) {
		CUdeviceptr in[4];
		for (int i = 0; i < 4; i++) /* input_ids, attention_mask, position_ids, responses */
			in[i] = upload_batch(LOGP_MICRO * (i == 3 ? RLEN : PLEN + RLEN) * 8);
		policy_forward(s, LOGP_MICRO, offloaded, 0);
		for (int i = 0; i < 4; i++)
			drop(in[i]);
	}
}

static void load_fsdp_optimizer(void)
{
	if (!exp_avg[0] || opt_on_device)
		return;
	for (int u = 0; u < UNITS; u++) { /* state[key] = value.to(device) */
		step_t[u] = upload(4, VTC_OPTIMIZER);
		exp_avg[u] = upload(unit_bytes[u], VTC_OPTIMIZER);
		exp_avg_sq[u] = upload(unit_bytes[u], VTC_OPTIMIZER);
	}
	opt_on_device = 1;
}

static void offload_fsdp_optimizer(void)
{
	for (int u = 0; u < UNITS; u++) { /* value.to("cpu", non_blocking=True) */
		if (step_t[u]) {          /* on the device once a load brought it there */
			vtc_dtoh(0, step_t[u], 4);
			drop(step_t[u]);
			step_t[u] = 0;
		}
		vtc_dtoh(0, exp_avg[u], unit_bytes[u]);
		vtc_dtoh(0, exp_avg_sq[u], unit_bytes[u]);
		drop(exp_avg[u]);
		drop(exp_avg_sq[u]);
	}
	opt_on_device = 0;
}

static void optimizer_step(int *step)
{
	if (vtc_markers())
		vtc_step(*step);
	(*step)++;
	CUdeviceptr norms[UNITS];
	for (int u = 0; u < UNITS; u++) /* clip_grad_norm_: per-tensor norms */
		norms[u] = act(4);
	CUdeviceptr total = act(UNITS * 4), tn = act(4), coef = act(4);
	for (int u = 0; u < UNITS; u++)
		drop(norms[u]);
	drop(total);
	drop(tn);
	drop(coef);
	if (!opt_on_device) { /* AdamW's lazy state: zeros_like(flat_param); the
		               * step count a host tensor */
		for (int u = 0; u < UNITS; u++) {
			exp_avg[u] = vtc_cache_alloc(&C, unit_bytes[u], VTC_OPTIMIZER);
			vtc_zero(0, exp_avg[u], unit_bytes[u]);
			exp_avg_sq[u] = vtc_cache_alloc(&C, unit_bytes[u], VTC_OPTIMIZER);
			vtc_zero(0, exp_avg_sq[u], unit_bytes[u]);
		}
		opt_on_device = 1;
	}
	CUdeviceptr tmp[UNITS];
	for (int u = 0; u < UNITS; u++) /* _foreach_sqrt(exp_avg_sq) */
		tmp[u] = act(unit_bytes[u]);
	for (int u = 0; u < UNITS; u++)
		drop(tmp[u]);
	for (int u = 0; u < UNITS; u++) { /* zero_grad(set_to_none=True) */
		drop(grad[u]);
		grad[u] = 0;
	}
}

static void update_actor(struct saved *s, int *step)
{
	uint64_t b = PROMPTS * N;
	load_fsdp_optimizer();
	CUdeviceptr in[7];
	for (int i = 0; i < 7;
	     i++) /* ids, mask, positions, responses, old and ref log-probs, advantages */
		in[i] = upload_batch(b * (i < 3 ? PLEN + RLEN : RLEN) * (i < 4 ? 8 : 4));
	for (uint64_t mb = 0; mb < b; mb += MINI) {
		for (uint64_t m = 0; m < MINI; m += MICRO) {
			CUdeviceptr sel[7];
			for (int i = 0; i < 7; i++) /* the micro-batch's slices made contiguous */
				sel[i] =
				    act(MICRO * (i < 3 ? PLEN + RLEN : RLEN) * (i < 4 ? 8 : 4));
			policy_forward(s, MICRO, 0, 1);
			CUdeviceptr ratio = act(MICRO * RLEN * 4), loss = act(4);
			policy_backward(s, MICRO, m == 0);
			drop(ratio);
			drop(loss);
			for (int i = 0; i < 7; i++)
				drop(sel[i]);
		}
		optimizer_step(step);
	}
	for (int i = 0; i < 7; i++)
		drop(in[i]);
	offload_fsdp_optimizer();
	vtc_cache_release(&C); /* torch.cuda.empty_cache() */
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "grpo_optimizer_offload", 1, VTC_DIRECT);
	vtc_cache_init(&C, 0);
	struct saved *s = malloc(sizeof *s);
	build_actor(); /* the reference has the same units, kept on the host */
	CUdeviceptr ref_inv_freq =
	    upload(D / HEADS / 2 * 4, VTC_OTHER); /* a buffer: not offloaded */
	CUdeviceptr actor_inv_freq = upload(D / HEADS / 2 * 4, VTC_OTHER);
	int step = 0;
	for (uint64_t it = 0; it < ITERS; it++) {
		rollout();
		vtc_cache_release(&C);
		log_probs(0, s); /* compute_log_prob: the actor's old log-probs */
		log_probs(1, s); /* compute_ref_log_prob: the offloaded reference */
		update_actor(s, &step);
	}
	for (int u = 0; u < UNITS; u++)
		drop(flat[u]);
	drop(ref_inv_freq);
	drop(actor_inv_freq);
	vtc_cache_empty(&C);
	free(s);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line(
	    "finding prefetch_depth 0 1 %llu",
	    (unsigned long long)(PROMPTS * N * (3 * (PLEN + RLEN) * 8 + RLEN * 8 + 3 * RLEN * 4)));
	vtc_line("steps 0 %d", step);
	vtc_finish();
	return 0;
}
