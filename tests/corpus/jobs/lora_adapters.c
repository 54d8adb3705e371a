/* LoRA fine-tune (peft LoraLayer over a frozen base): the base weights are
 * loaded from the host and frozen (requires_grad=False: no .grad, no
 * optimizer state), each adapted layer adds lora_A (kaiming init on the
 * device) and lora_B (zeros), the only trainable tensors. AdamW state
 * (exp_avg, exp_avg_sq) is created lazily in the first optimizer.step() for
 * the adapters only; adapter grads are freed by zero_grad(set_to_none=True).
 * Input: DataLoader(pin_memory=True), two batches on the device at once
 * (the one in use and the next, copied non_blocking on a side stream). */
#include "vtc.h"

#define LAYERS 6

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "lora_adapters", 1, VTC_DIRECT);
	int steps = (int)vtc_opt_size("--steps", 6);
	const uint64_t base = 8 * MIB, rank_bytes = 256 * KIB, batch = 1 * MIB, act = 2 * MIB;
	CUdeviceptr w[LAYERS], a[LAYERS], b[LAYERS], ma[LAYERS], va[LAYERS], mb[LAYERS], vb[LAYERS];
	for (int l = 0; l < LAYERS; l++) { /* from_pretrained: base weights uploaded */
		w[l] = vtc_alloc(0, base, VTC_WEIGHTS);
		vtc_htod(0, w[l], base);
	}
	for (int l = 0; l < LAYERS; l++) { /* get_peft_model: adapters made on the device */
		a[l] = vtc_alloc(0, rank_bytes, VTC_WEIGHTS);
		b[l] = vtc_alloc(0, rank_bytes, VTC_WEIGHTS);
		vtc_zero(0, b[l], rank_bytes);
	}
	CUstream side;
	VTC_CHECK(vtc.StreamCreate(&side, 1));
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, batch));
	CUdeviceptr ring[64] = {0};
	for (int s = 0; s < 2 && s < steps; s++) {
		ring[s] = vtc_alloc(0, batch, VTC_PREFETCH);
		vtc_htod_from(0, ring[s], pinned, batch, side);
	}
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		CUdeviceptr x[LAYERS], ga[LAYERS], gb[LAYERS];
		for (int l = 0; l < LAYERS; l++) /* forward: activations saved for backward */
			x[l] = vtc_alloc(0, act, VTC_ACTIVATIONS);
		for (int l = LAYERS - 1; l >= 0; l--) { /* backward: adapter grads only */
			ga[l] = vtc_alloc(0, rank_bytes, VTC_GRADIENTS);
			gb[l] = vtc_alloc(0, rank_bytes, VTC_GRADIENTS);
			vtc_free(0, x[l]);
		}
		if (s == 0)
			for (int l = 0; l < LAYERS; l++) {
				ma[l] = vtc_alloc(0, rank_bytes, VTC_OPTIMIZER);
				va[l] = vtc_alloc(0, rank_bytes, VTC_OPTIMIZER);
				mb[l] = vtc_alloc(0, rank_bytes, VTC_OPTIMIZER);
				vb[l] = vtc_alloc(0, rank_bytes, VTC_OPTIMIZER);
			}
		for (int l = 0; l < LAYERS; l++) { /* zero_grad(set_to_none=True) */
			vtc_free(0, ga[l]);
			vtc_free(0, gb[l]);
		}
		vtc_free(0, ring[s % 64]);
		if (s + 2 < steps) {
			ring[(s + 2) % 64] = vtc_alloc(0, batch, VTC_PREFETCH);
			vtc_htod_from(0, ring[(s + 2) % 64], pinned, batch, side);
		}
	}
	for (int l = 0; l < LAYERS; l++) {
		vtc_free(0, w[l]); vtc_free(0, a[l]); vtc_free(0, b[l]);
		vtc_free(0, ma[l]); vtc_free(0, va[l]); vtc_free(0, mb[l]); vtc_free(0, vb[l]);
	}
	VTC_CHECK(vtc.MemFreeHost(pinned));
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 2 %llu", (unsigned long long)batch);
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
