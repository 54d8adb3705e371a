/* Gradient accumulation (the PyTorch idiom: loss / N; backward() every
 * micro-batch; optimizer.step(); optimizer.zero_grad() every N). Each .grad
 * is created by the first backward (AccumulateGrad) and accumulated in place
 * by the next N-1; zero_grad(set_to_none=True) frees them after the step.
 * Adam's exp_avg/exp_avg_sq appear in the first step. One micro-batch on the
 * device at a time (.to(device) in the loop); markers at optimizer steps. */
#include "vtc.h"

#define LAYERS 5
#define MICRO 4

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "grad_accum", 1, VTC_GETPROC);
	int steps = (int)vtc_opt_size("--steps", 4);
	const uint64_t wb[LAYERS] = {4 * MIB, 4 * MIB, 2 * MIB, 2 * MIB, 1 * MIB};
	const uint64_t micro = 2 * MIB, act = 4 * MIB; /* an activation the size of a weight */
	CUdeviceptr w[LAYERS], m[LAYERS], v[LAYERS];
	for (int l = 0; l < LAYERS; l++) {
		w[l] = vtc_alloc(0, wb[l], VTC_WEIGHTS);
		vtc_htod(0, w[l], wb[l]); /* nn.Module built on the CPU, then .to("cuda") */
	}
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		CUdeviceptr g[LAYERS] = {0};
		for (int mb = 0; mb < MICRO; mb++) {
			CUdeviceptr x = vtc_alloc(0, micro, VTC_PREFETCH);
			vtc_htod(0, x, micro);
			CUdeviceptr a[LAYERS];
			for (int l = 0; l < LAYERS; l++)
				a[l] = vtc_alloc(0, act, VTC_ACTIVATIONS);
			for (int l = LAYERS - 1; l >= 0; l--) {
				if (!g[l]) /* first backward of the step: .grad created */
					g[l] = vtc_alloc(0, wb[l], VTC_GRADIENTS);
				/* else: accumulated in place */
				vtc_free(0, a[l]);
			}
			vtc_free(0, x);
		}
		if (s == 0)
			for (int l = 0; l < LAYERS; l++) {
				m[l] = vtc_alloc(0, wb[l], VTC_OPTIMIZER);
				v[l] = vtc_alloc(0, wb[l], VTC_OPTIMIZER);
			}
		for (int l = 0; l < LAYERS; l++)
			vtc_free(0, g[l]);
	}
	for (int l = 0; l < LAYERS; l++) {
		vtc_free(0, w[l]); vtc_free(0, m[l]); vtc_free(0, v[l]);
	}
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)micro);
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
