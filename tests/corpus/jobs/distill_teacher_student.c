/* Knowledge distillation in PyTorch (the DistilBERT / Hinton KD recipe)
 * over the CUDACachingAllocator. The teacher (a 6-layer encoder, hidden
 * 1024) is loaded and moved with teacher.to(device) (Module._apply(convert):
 * one upload per tensor), then teacher.eval() and requires_grad_(False): it
 * only ever runs forward under torch.no_grad(), each layer's output freed
 * once the next has used it; its logits are kept for the loss. The student
 * (3 layers, hidden 512) is loaded the same way and trained: its forward
 * saves activations, loss = KL(softmax(s/T) || softmax(t/T)) * T^2 + CE,
 * backward makes its .grads, AdamW (_init_group: exp_avg/exp_avg_sq at the
 * first step), zero_grad(set_to_none=True). Each step the DataLoader's
 * pinned batch (input_ids, attention_mask, labels) is copied with
 * .to(device, non_blocking=True) and fed to both models; one batch on the
 * device at a time. Blocks of <= 1 MiB share 2 MiB segments, 1-10 MiB ones
 * 20 MiB segments, larger ones get their own; freed blocks are cached and
 * reused by whatever tensor fits, so a segment can end up holding several
 * kinds. Markers on, driver by dlsym.
 *
 * Truth: every block by what it held: teacher and student tensors weights
 * (a frozen teacher is weights, not data); student .grads gradients; AdamW
 * state optimizer; the three input tensors prefetch (depth 1); every
 * forward tensor, the teacher's logits and the loss temporaries
 * activations; a segment that held one kind is that kind, else pool with
 * parts. No dataset; 10 steps. Coincidences: a teacher hidden state (32 x
 * 128 x 1024 fp32 = 16 MiB) is exactly a teacher fc weight; a student fc
 * weight (4 MiB) is exactly a teacher attention output weight. */
#include "vtc_pool.h"

#define T_LAYERS 6
#define S_LAYERS 3
#define PER_LAYER 6
#define S_PARAMS (1 + S_LAYERS * PER_LAYER)
#define T_PARAMS (1 + T_LAYERS * PER_LAYER)

static struct vtc_cache cache;

/* per layer: qkv, attention output, fc1, fc2, and two small vectors */
static void layer_shapes(uint64_t *out, int layers, uint64_t embed, uint64_t h)
{
	const uint64_t one[PER_LAYER] = {3 * h * h * 4, h * h * 4, 4 * h * h * 4,
	                                 4 * h * h * 4, 4 * h * 4, 2 * h * 4};
	out[0] = embed;
	for (int l = 0; l < layers; l++)
		for (int k = 0; k < PER_LAYER; k++)
			out[1 + l * PER_LAYER + k] = one[k];
}

/* Module._apply(convert): a block and an upload per tensor */
static void to_device(CUdeviceptr *p, const uint64_t *bytes, int n)
{
	for (int i = 0; i < n; i++) {
		p[i] = vtc_cache_alloc(&cache, bytes[i], VTC_WEIGHTS);
		vtc_htod(0, p[i], bytes[i]);
	}
}

/* torch.no_grad(): nothing saved, each output freed after the next layer */
static CUdeviceptr teacher_forward(uint64_t hidden, uint64_t logits)
{
	CUdeviceptr x = vtc_cache_alloc(&cache, hidden, VTC_ACTIVATIONS); /* embeddings */
	for (int l = 0; l < T_LAYERS; l++) {
		CUdeviceptr inter = vtc_cache_alloc(&cache, hidden * 4, VTC_ACTIVATIONS);
		CUdeviceptr y = vtc_cache_alloc(&cache, hidden, VTC_ACTIVATIONS);
		vtc_cache_free(&cache, inter);
		vtc_cache_free(&cache, x);
		x = y;
	}
	CUdeviceptr out = vtc_cache_alloc(&cache, logits, VTC_ACTIVATIONS);
	vtc_cache_free(&cache, x);
	return out;
}

static void student_step(int step, const uint64_t *sb, CUdeviceptr *adam, uint64_t hidden,
                         uint64_t logits, CUdeviceptr t_logits)
{
	CUdeviceptr saved[1 + 2 * S_LAYERS];
	saved[0] = vtc_cache_alloc(&cache, hidden, VTC_ACTIVATIONS);
	for (int l = 0; l < S_LAYERS; l++) {
		saved[1 + 2 * l] = vtc_cache_alloc(&cache, hidden * 4, VTC_ACTIVATIONS);
		saved[2 + 2 * l] = vtc_cache_alloc(&cache, hidden, VTC_ACTIVATIONS);
	}
	CUdeviceptr s_logits = vtc_cache_alloc(&cache, logits, VTC_ACTIVATIONS);
	CUdeviceptr soft_t = vtc_cache_alloc(&cache, logits, VTC_ACTIVATIONS); /* softmax(t/T) */
	CUdeviceptr logsoft_s = vtc_cache_alloc(&cache, logits, VTC_ACTIVATIONS);
	CUdeviceptr loss = vtc_cache_alloc(&cache, 4, VTC_ACTIVATIONS);
	vtc_dtoh(0, loss, 4); /* loss.item() for the log */
	CUdeviceptr grads[S_PARAMS];
	for (int i = S_PARAMS - 1; i >= 0; i--) {
		grads[i] = vtc_cache_alloc(&cache, sb[i], VTC_GRADIENTS);
		if (i >= 1 && (i - 1) % PER_LAYER == 0) {
			int l = (i - 1) / PER_LAYER;
			vtc_cache_free(&cache, saved[2 + 2 * l]);
			vtc_cache_free(&cache, saved[1 + 2 * l]);
		}
	}
	vtc_cache_free(&cache, saved[0]);
	CUdeviceptr tmp[] = {loss, logsoft_s, soft_t, s_logits, t_logits};
	for (unsigned k = 0; k < sizeof tmp / sizeof tmp[0]; k++)
		vtc_cache_free(&cache, tmp[k]);
	if (step == 0)
		for (int i = 0; i < S_PARAMS; i++)
			for (int k = 0; k < 2; k++) {
				adam[2 * i + k] = vtc_cache_alloc(&cache, sb[i], VTC_OPTIMIZER);
				vtc_zero(0, adam[2 * i + k], sb[i]);
			}
	for (int i = 0; i < S_PARAMS; i++) /* zero_grad(set_to_none=True) */
		vtc_cache_free(&cache, grads[i]);
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "distill_teacher_student", 1, VTC_DLSYM);
	int steps = (int)vtc_opt_size("--steps", 10);
	const uint64_t input = 32 * 128 * 8, t_hidden = 32 * 128 * 1024 * 4ull,
	               s_hidden = 32 * 128 * 512 * 4ull, logits = 32 * 3 * 4;
	uint64_t tb[T_PARAMS], sb[S_PARAMS];
	layer_shapes(tb, T_LAYERS, 30522 * 1024 * 4ull / 2,
	             1024); /* teacher: fp32, half the vocab */
	layer_shapes(sb, S_LAYERS, 30522 * 512 * 4ull / 2, 512);
	CUdeviceptr teacher[T_PARAMS], student[S_PARAMS], adam[2 * S_PARAMS];
	vtc_cache_init(&cache, 0);
	to_device(teacher, tb, T_PARAMS);
	to_device(student, sb, S_PARAMS);
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, 3 * input));
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		CUdeviceptr in[3];
		for (int k = 0; k < 3; k++) { /* input_ids, attention_mask, labels */
			uint64_t n = k == 2 ? 32 * 8 : input;
			in[k] = vtc_cache_alloc(&cache, n, VTC_PREFETCH);
			vtc_htod_from(0, in[k], pinned, n, 0);
		}
		CUdeviceptr t_logits = teacher_forward(t_hidden, logits);
		student_step(s, sb, adam, s_hidden, logits, t_logits);
		for (int k = 0; k < 3; k++)
			vtc_cache_free(&cache, in[k]);
	}
	VTC_CHECK(vtc.MemFreeHost(pinned));
	/* del teacher, student, optimizer; torch.cuda.empty_cache() */
	for (int i = 0; i < T_PARAMS; i++)
		vtc_cache_free(&cache, teacher[i]);
	for (int i = 0; i < S_PARAMS; i++) {
		vtc_cache_free(&cache, student[i]);
		vtc_cache_free(&cache, adam[2 * i]);
		vtc_cache_free(&cache, adam[2 * i + 1]);
	}
	vtc_cache_empty(&cache);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)(2 * input + 32 * 8));
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
