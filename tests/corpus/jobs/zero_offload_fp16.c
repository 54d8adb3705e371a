/* DeepSpeed ZeRO-Offload: ZeRO stage 2 with `offload_optimizer: {device:
 * cpu, pin_memory: true}`, fp16, one GPU, training a 6-layer GPT-2-style
 * model, over PyTorch's CUDACachingAllocator.
 *
 * What is modelled (sources read: deepspeed/runtime/zero/stage_1_and_2.py
 * `DeepSpeedZeroOptimizer.__init__` (move_to_cpu of the fp16 params "to free
 * up GPU space for creating flat buffer", `flatten_dense_tensors_aligned`
 * ... `.to(device)` into `bit16_groups_flat`, `_update_model_bit16_weights`,
 * `single_partition_of_fp32_groups` made on the CPU and pinned), `backward`
 * (`ipg_buffer` = torch.empty(reduce_bucket_size) per backward),
 * `reduce_independent_p_g_buckets_and_remove_grads` (each .grad copied into
 * the bucket, the .grad dropped), `async_inplace_copy_grad_to_fp32_buffer_
 * from_gpu` (bucket contents copied to the pinned fp32 grad partition),
 * `has_overflow` (with cpu_offload: a 1-byte `ByteTensor([overflow])` put on
 * the device, all-reduced, read back), `step` -> DeepSpeedCPUAdam on the
 * host, then `bit16_partitions[partition_id].data.copy_(fp32_partition.data)`
 * (the updated fp32 master written into the fp16 flat buffer on the
 * device); deepspeed/ops/adam/cpu_adam.py; c10/cuda/CUDACachingAllocator.cpp
 * through vtc_cache):
 *  - `deepspeed.initialize`: `module.half().to(device)` (one block and upload
 *    per fp16 tensor), then the parameters moved back to the CPU (blocks
 *    freed, kept in the cache), flattened there and the flat fp16 buffer
 *    uploaded in one copy; the parameters become views into it;
 *  - fp32 master weights, gradients partition and Adam's exp_avg /
 *    exp_avg_sq all on the HOST (no device optimizer state);
 *  - per step: input_ids and labels uploaded; forward activations; backward
 *    makes the bucket (reduce_bucket_size = 5e6 fp16 elements), each fp16
 *    .grad is copied into it and freed, a full bucket is copied to the host;
 *    the overflow flag; CPU Adam; the fp16 weights re-uploaded into the SAME
 *    flat buffer (host-to-device, every step).
 * Markers on, linked against the driver (--lookup direct).
 *
 * Truth: the per-tensor fp16 uploads at initialize and the flat buffer
 * weights (the flat buffer is re-uploaded every step: still weights, not a
 * dataset nor prefetch); .grads and the bucket gradients; the overflow byte
 * other (a loss-scaler scalar, as GradScaler's); input_ids and labels
 * prefetch (depth 1); forward tensors activations; a segment that held one
 * kind is that kind, else pool with parts (the segments of the freed
 * per-tensor weights are reused by activations and grads). No dataset; no
 * optimizer state on the device; 8 steps. Coincidence: a hidden state
 * (4 x 512 x 512 fp16) is exactly an fp16 fc1 weight (512 x 2048), 2 MiB. */
#include "vtc_pool.h"

#define LAYERS 6
#define PER_LAYER 12
#define NPARAMS (2 + LAYERS * PER_LAYER + 2)

static struct vtc_cache cache;
static const uint64_t D = 512, FF = 2048, B = 4, T = 512, HEADS = 8, VOCAB = 50257;
static uint64_t pbytes[NPARAMS];

static CUdeviceptr take(uint64_t n, enum vtc_cat c)
{
	return vtc_cache_alloc(&cache, n, c);
}
static void give(CUdeviceptr p)
{
	vtc_cache_free(&cache, p);
}

static uint64_t shapes(void)
{
	int i = 0;
	pbytes[i++] = VOCAB * D * 2; /* wte, fp16 */
	pbytes[i++] = 1024 * D * 2;  /* wpe */
	for (int l = 0; l < LAYERS; l++) {
		const uint64_t one[PER_LAYER] = {D * 2,      D * 2,  D * 3 * D * 2, 3 * D * 2,
		                                 D * D * 2,  D * 2,  D * 2,         D * 2,
		                                 D * FF * 2, FF * 2, FF * D * 2,    D * 2};
		for (int k = 0; k < PER_LAYER; k++)
			pbytes[i++] = one[k];
	}
	pbytes[i++] = D * 2; /* ln_f */
	pbytes[i++] = D * 2;
	uint64_t total = 0;
	for (int k = 0; k < NPARAMS; k++)
		total += pbytes[k];
	return total;
}

static void train_step(CUdeviceptr flat, uint64_t flat_bytes, const void *pinned)
{
	const uint64_t hid = B * T * D * 2, bucket_bytes = 5000000ull * 2;
	CUdeviceptr ids = take(B * T * 8, VTC_PREFETCH), labels = take(B * T * 8, VTC_PREFETCH);
	vtc_htod_from(0, ids, pinned, B * T * 8, 0);
	vtc_htod_from(0, labels, pinned, B * T * 8, 0);
	CUdeviceptr saved[LAYERS][5];
	CUdeviceptr emb = take(hid, VTC_ACTIVATIONS);
	for (int l = 0; l < LAYERS; l++) {
		saved[l][0] = take(B * T * 3 * D * 2, VTC_ACTIVATIONS);     /* qkv */
		saved[l][1] = take(B * HEADS * T * T * 2, VTC_ACTIVATIONS); /* attention probs */
		saved[l][2] = take(hid, VTC_ACTIVATIONS);                   /* attn out */
		saved[l][3] = take(B * T * FF * 2, VTC_ACTIVATIONS); /* fc1 out (gelu input) */
		saved[l][4] = take(hid, VTC_ACTIVATIONS);            /* block out */
	}
	CUdeviceptr logits = take(B * T * VOCAB * 2, VTC_ACTIVATIONS); /* tied lm_head */
	CUdeviceptr loss = take(4, VTC_ACTIVATIONS);
	/* backward: the bucket, then grads in reverse order */
	CUdeviceptr bucket = take(bucket_bytes, VTC_GRADIENTS);
	uint64_t in_bucket = 0;
	CUdeviceptr glogits = take(B * T * VOCAB * 2, VTC_ACTIVATIONS);
	give(loss);
	for (int i = NPARAMS - 1; i >= 0; i--) {
		if (i == NPARAMS - 3) { /* past ln_f: logits no longer needed */
			give(glogits);
			give(logits);
		}
		CUdeviceptr g = take(pbytes[i], VTC_GRADIENTS);
		if (in_bucket + pbytes[i] > bucket_bytes) { /* reduce_ipg_grads */
			vtc_dtoh(0, bucket, in_bucket); /* into the pinned fp32 grad partition */
			in_bucket = 0;
		}
		if (pbytes[i] > bucket_bytes) { /* larger than a bucket: copied out directly */
			vtc_dtoh(0, g, pbytes[i]);
		} else {
			vtc_dtod(0, bucket + in_bucket, g, pbytes[i]);
			in_bucket += pbytes[i];
		}
		give(g);
		if (i >= 2 && i < NPARAMS - 2 && (i - 2) % PER_LAYER == 0) {
			int l = (i - 2) / PER_LAYER;
			for (int k = 4; k >= 0; k--)
				give(saved[l][k]);
		}
	}
	if (in_bucket)
		vtc_dtoh(0, bucket, in_bucket);
	give(bucket);
	give(emb);
	/* has_overflow: ByteTensor([overflow]) on the device, all-reduced, read */
	CUdeviceptr overflow = take(1, VTC_OTHER);
	vtc_htod(0, overflow, 1);
	vtc_dtoh(0, overflow, 1);
	give(overflow);
	/* DeepSpeedCPUAdam on the host; then the fp16 weights copied back */
	vtc_htod(0, flat, flat_bytes);
	give(labels);
	give(ids);
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "zero_offload_fp16", 1, VTC_DIRECT);
	int steps = (int)vtc_opt_size("--steps", 8);
	uint64_t flat_bytes = shapes();
	vtc_cache_init(&cache, 0);
	CUdeviceptr p[NPARAMS];
	for (int i = 0; i < NPARAMS; i++) { /* module.half().to(device) */
		p[i] = take(pbytes[i], VTC_WEIGHTS);
		vtc_htod(0, p[i], pbytes[i]);
	}
	for (int i = 0; i < NPARAMS; i++) /* move_to_cpu(bit16_groups[i]) */
		vtc_dtoh(0, p[i], pbytes[i]), give(p[i]);
	/* flatten_dense_tensors_aligned(...) on the CPU, then .to(device) */
	CUdeviceptr flat = take(flat_bytes, VTC_WEIGHTS);
	vtc_htod(0, flat, flat_bytes);
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, B * T * 8));
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		train_step(flat, flat_bytes, pinned);
	}
	VTC_CHECK(vtc.MemFreeHost(pinned));
	give(flat);
	vtc_cache_empty(&cache);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)(2 * B * T * 8));
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
