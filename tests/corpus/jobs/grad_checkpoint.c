/* Activation checkpointing (torch.utils.checkpoint.checkpoint_sequential,
 * 6 blocks in 3 segments of 2), PYTORCH_NO_CUDA_MEMORY_CACHING=1 so every
 * tensor is its own cudaMalloc. Forward: each segment runs under no_grad, so
 * its intermediate tensors (per block: an attention output, the MLP's 4x
 * hidden, the block output) are freed as soon as the next one is made; only
 * each segment's input (the checkpoint) and the loss survive. Backward, last
 * segment first: the segment's forward is run again with grad enabled (the
 * intermediates now kept), then the backward through it makes the `.grad`s
 * of its parameters (AccumulateGrad, first use of the step) and the input
 * grads, and frees the recomputed tensors. So each step has two bursts of
 * short-lived allocations (the forward's, the recomputation's). Adam
 * (`exp_avg`/`exp_avg_sq`) at the first `step`; `zero_grad(set_to_none=
 * True)` frees the grads. The batch is uploaded each step (pinned,
 * synchronous), and the attention output and block output are the size of a
 * block's weights.
 *
 * Truth: parameters weights, .grads gradients, Adam state optimizer, the
 * batch prefetch (depth 1), checkpoints, intermediates and input grads
 * activations; no dataset; 8 steps, markers on, driver linked directly. */
#include "vtc.h"

#define BLOCKS 6
#define PER_SEGMENT 2
#define STEPS 8

static const uint64_t block_bytes = 6 * MIB, head_bytes = 2 * MIB;
static const uint64_t batch_bytes = 3 * MIB, hidden_bytes = 24 * MIB, x_bytes = 6 * MIB;

struct model {
	CUdeviceptr w[BLOCKS + 1], g[BLOCKS + 1], m[BLOCKS + 1], v[BLOCKS + 1];
};

static uint64_t param_bytes(int i)
{
	return i == BLOCKS ? head_bytes : block_bytes;
}

/* one block forward: attention out, MLP hidden, block out. keep: 0 frees
 * each tensor once the next is made (no_grad), 1 keeps them in out[] */
static CUdeviceptr block_forward(int keep, CUdeviceptr out[3])
{
	static const uint64_t sizes[3] = {x_bytes, hidden_bytes, x_bytes};
	CUdeviceptr prev = 0;
	for (int i = 0; i < 3; i++) {
		CUdeviceptr t = vtc_alloc(0, sizes[i], VTC_ACTIVATIONS);
		if (keep)
			out[i] = t;
		else if (prev)
			vtc_free(0, prev);
		prev = t;
	}
	return prev; /* the block's output */
}

/* checkpoint(): no_grad forward of a segment, returns its output */
static CUdeviceptr segment_no_grad(CUdeviceptr input)
{
	CUdeviceptr x = input;
	for (int b = 0; b < PER_SEGMENT; b++) {
		CUdeviceptr y = block_forward(0, NULL);
		if (x != input)
			vtc_free(0, x);
		x = y;
	}
	return x;
}

/* recompute the segment with grad, then backward through it */
static CUdeviceptr segment_backward(struct model *m, int seg, CUdeviceptr grad_out)
{
	CUdeviceptr kept[PER_SEGMENT][3];
	for (int b = 0; b < PER_SEGMENT; b++)
		block_forward(1, kept[b]);
	for (int b = PER_SEGMENT - 1; b >= 0; b--) {
		int p = seg * PER_SEGMENT + b;
		m->g[p] = vtc_alloc(0, block_bytes, VTC_GRADIENTS);
		CUdeviceptr grad_in = vtc_alloc(0, x_bytes, VTC_ACTIVATIONS);
		for (int i = 2; i >= 0; i--)
			vtc_free(0, kept[b][i]);
		vtc_free(0, grad_out);
		grad_out = grad_in;
	}
	return grad_out;
}

static void adam_step(struct model *m)
{
	for (int p = 0; p <= BLOCKS; p++)
		if (!m->m[p]) {
			m->m[p] = vtc_alloc(0, param_bytes(p), VTC_OPTIMIZER);
			vtc_zero(0, m->m[p], param_bytes(p));
			m->v[p] = vtc_alloc(0, param_bytes(p), VTC_OPTIMIZER);
			vtc_zero(0, m->v[p], param_bytes(p));
		}
}

static void train_step(struct model *m, const void *pinned)
{
	CUdeviceptr batch = vtc_alloc(0, batch_bytes, VTC_PREFETCH);
	vtc_htod_from(0, batch, pinned, batch_bytes, 0);
	CUdeviceptr ckpt[BLOCKS / PER_SEGMENT + 1];
	ckpt[0] = vtc_alloc(0, x_bytes, VTC_ACTIVATIONS); /* embedding of the batch */
	for (int s = 0; s < BLOCKS / PER_SEGMENT; s++)
		ckpt[s + 1] = segment_no_grad(ckpt[s]);
	CUdeviceptr loss = vtc_alloc(0, 4 * KIB, VTC_ACTIVATIONS);
	m->g[BLOCKS] = vtc_alloc(0, head_bytes, VTC_GRADIENTS);
	CUdeviceptr grad = vtc_alloc(0, x_bytes, VTC_ACTIVATIONS);
	vtc_free(0, loss);
	vtc_free(0, ckpt[BLOCKS / PER_SEGMENT]);
	for (int s = BLOCKS / PER_SEGMENT - 1; s >= 0; s--) {
		grad = segment_backward(m, s, grad);
		vtc_free(0, ckpt[s]);
	}
	vtc_free(0, grad);
	vtc_free(0, batch);
	adam_step(m);
	for (int p = 0; p <= BLOCKS; p++) { /* zero_grad(set_to_none=True) */
		vtc_free(0, m->g[p]);
		m->g[p] = 0;
	}
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "grad_checkpoint", 1, VTC_DIRECT);
	struct model m = {0};
	for (int p = 0; p <= BLOCKS; p++) { /* Module.to -> _apply(convert) */
		m.w[p] = vtc_alloc(0, param_bytes(p), VTC_WEIGHTS);
		vtc_htod(0, m.w[p], param_bytes(p));
	}
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, batch_bytes));
	for (int s = 0; s < STEPS; s++) {
		vtc_step(s);
		train_step(&m, pinned);
	}
	for (int p = 0; p <= BLOCKS; p++) {
		vtc_free(0, m.w[p]);
		vtc_free(0, m.m[p]);
		vtc_free(0, m.v[p]);
	}
	VTC_CHECK(vtc.MemFreeHost(pinned));
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)batch_bytes);
	vtc_line("steps 0 %d", STEPS);
	vtc_finish();
	return 0;
}
