/* A PyTorch training loop whose steps take very different times, with no
 * step markers (one cudaMalloc per tensor, PYTORCH_NO_CUDA_MEMORY_CACHING=1).
 * The DataLoader (num_workers=2, prefetch_factor=2) runs dry every 5th step:
 * the main process waits in _MultiProcessingDataLoaderIter._next_data
 * (here 120 ms) before the batch comes; other steps wait ~2 ms of compute.
 * Every 4th step, after optimizer.step(), the loop runs an evaluation pass
 * (model.eval(), torch.no_grad(): 3 validation batches of twice the training
 * batch, uploaded one at a time, forward only, larger activations, nothing
 * saved, no optimizer step). Training: the batch uploaded with .cuda(),
 * activations saved for backward, .grads made by the backward and freed by
 * zero_grad(set_to_none=True), SGD with momentum (momentum_buffer created by
 * the first step, torch/optim/sgd.py). Parameters are uploaded once
 * (Module.to -> _apply). Driver by cuGetProcAddress.
 *
 * Truth: parameters weights; .grads gradients; momentum buffers optimizer;
 * training and validation batches prefetch (one batch at a time: depth 1);
 * forward tensors activations; no dataset; 20 optimizer steps (the 5
 * evaluation passes are not steps). Coincidence: the training batch (3 MiB)
 * is exactly the second layer's weight; a validation batch is twice it. */
#define _POSIX_C_SOURCE 199309L
#include <time.h>

#include "vtc.h"

#define LAYERS 4

static const uint64_t weight[LAYERS] = {12 * MIB, 3 * MIB, 3 * MIB + 768 * KIB, 40 * KIB};

static void wait_ms(long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
}

static CUdeviceptr upload_batch(uint64_t bytes)
{
	CUdeviceptr b = vtc_alloc(0, bytes, VTC_PREFETCH);
	vtc_htod(0, b, bytes);
	return b;
}

static void train_step(int s, uint64_t batch, CUdeviceptr *momentum)
{
	if (s % 5 == 4)
		wait_ms(120); /* the workers fell behind */
	CUdeviceptr x = upload_batch(batch);
	CUdeviceptr act[LAYERS], grad[LAYERS];
	for (int l = 0; l < LAYERS; l++)
		act[l] = vtc_alloc(0, 2 * MIB, VTC_ACTIVATIONS);
	wait_ms(2);
	for (int l = LAYERS - 1; l >= 0; l--) {
		grad[l] = vtc_alloc(0, weight[l], VTC_GRADIENTS);
		vtc_free(0, act[l]);
	}
	if (s == 0)
		for (int l = 0; l < LAYERS; l++) {
			momentum[l] = vtc_alloc(0, weight[l], VTC_OPTIMIZER); /* clone(grad) */
			vtc_dtod(0, momentum[l], grad[l], weight[l]);
		}
	for (int l = 0; l < LAYERS; l++)
		vtc_free(0, grad[l]);
	vtc_free(0, x);
}

static void evaluate(uint64_t batch)
{
	for (int b = 0; b < 3; b++) {
		CUdeviceptr x = upload_batch(2 * batch);
		for (int l = 0; l < LAYERS; l++) { /* no_grad: each output freed at once */
			CUdeviceptr a = vtc_alloc(0, 4 * MIB, VTC_ACTIVATIONS);
			wait_ms(3);
			vtc_free(0, a);
		}
		CUdeviceptr logits = vtc_alloc(0, 64 * KIB, VTC_ACTIVATIONS);
		vtc_dtoh(0, logits, 64 * KIB);
		vtc_free(0, logits);
		vtc_free(0, x);
	}
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "uneven_steps", 1, VTC_GETPROC);
	const int steps = 20;
	const uint64_t batch = 3 * MIB;
	CUdeviceptr w[LAYERS], momentum[LAYERS];
	for (int l = 0; l < LAYERS; l++) {
		w[l] = vtc_alloc(0, weight[l], VTC_WEIGHTS);
		vtc_htod(0, w[l], weight[l]);
	}
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		train_step(s, batch, momentum);
		if (s % 4 == 3)
			evaluate(batch);
	}
	for (int l = 0; l < LAYERS; l++) {
		vtc_free(0, momentum[l]);
		vtc_free(0, w[l]);
	}
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)batch);
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
