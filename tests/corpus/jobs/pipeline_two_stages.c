/* Pipeline parallelism, torch.distributed.pipelining with ScheduleGPipe
 * (n_microbatches=4), 2 stages on 2 devices, one thread per stage (threads
 * stand in for the two ranks' processes). Each rank materialises its part of
 * the split model and moves it (stage_mod.to(device): Module._apply, an
 * upload per tensor). _prepare_forward_infra makes the last stage's
 * activation receive buffers, one per micro-batch, once (torch.empty from
 * the sender's shape metadata), and _prepare_backward_infra the first
 * stage's gradient receive buffers; they live for the whole run. Each step,
 * schedule.step(x) on stage 0 (x.to(device): the whole batch uploaded, split
 * into micro-batch views) and schedule.step(target=y) on stage 1 (y
 * uploaded); all 4 forwards: stage 0 runs its blocks (activations saved per
 * micro-batch) and sends its output to stage 1 (a peer copy into the
 * receive buffer of that micro-batch); then all 4 backwards: stage 1
 * computes the loss's backward, its .grads (made by the first micro-batch,
 * accumulated by the others) and the gradient of its input, sent back (a
 * peer copy into stage 0's receive buffer); stage 0 runs its backward from
 * it. Then each stage's AdamW step (exp_avg/exp_avg_sq at the first step)
 * and zero_grad(set_to_none=True). Markers from stage 0 only; linked
 * against libcuda (direct).
 *
 * Truth, per device: parameters weights; .grads gradients; AdamW state
 * optimizer; x (device 0) and y (device 1) prefetch, depth 1 on each;
 * forward tensors, the receive buffers (they hold activations and the
 * gradients of activations, not parameter gradients) and the sent outputs
 * activations; no dataset; 6 steps on each device. Coincidence: a
 * micro-batch's activation (8 x 512 x 1024 fp16 = 8 MiB) is exactly a
 * block's fc weight. */
#include <pthread.h>

#include "vtc.h"

#define MICRO 4
#define BLOCK_TENSORS 4
#define STEPS 6

static const uint64_t act = 8 * 512 * 1024 * 2ull, tokens = 32 * 512 * 8;
static const uint64_t block[BLOCK_TENSORS] = {6 * MIB, 2 * MIB, 8 * MIB,
                                              8 * MIB}; /* qkv, proj, fc1, fc2 */
static CUdeviceptr act_recv[MICRO], grad_recv[MICRO];
static pthread_barrier_t setup_done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int fwd_sent, bwd_sent; /* micro-batches sent so far, all steps */

static void wait_for(const int *counter, int at_least)
{
	pthread_mutex_lock(&lock);
	while (*counter < at_least)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
}

static void sent(int *counter)
{
	pthread_mutex_lock(&lock);
	(*counter)++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

/* stage 0: embedding + 2 blocks; stage 1: 2 blocks + lm head */
static int stage_params(int r, uint64_t *bytes)
{
	int n = 0;
	if (r == 0)
		bytes[n++] = 32000 * 1024 * 2ull; /* embedding */
	for (int b = 0; b < 2; b++)
		for (int k = 0; k < BLOCK_TENSORS; k++)
			bytes[n++] = block[k];
	if (r == 1)
		bytes[n++] = 16 * MIB; /* lm head */
	return n;
}

static void send_peer(int from, CUdeviceptr dst, CUdeviceptr src)
{
	VTC_CHECK(vtc.MemcpyPeer(dst, vtc_ctx[1 - from], src, vtc_ctx[from], act));
}

struct stage {
	int r, n;
	uint64_t bytes[BLOCK_TENSORS * 2 + 1];
	CUdeviceptr w[BLOCK_TENSORS * 2 + 1], g[BLOCK_TENSORS * 2 + 1];
	CUdeviceptr m[BLOCK_TENSORS * 2 + 1], v[BLOCK_TENSORS * 2 + 1];
	CUdeviceptr saved[MICRO][3];
};

static void forward(struct stage *st, int s, int mb)
{
	int r = st->r;
	if (r == 1)
		wait_for(&fwd_sent, s * MICRO + mb + 1);
	for (int k = 0; k < 2; k++)
		st->saved[mb][k] = vtc_alloc(r, act * (k + 1), VTC_ACTIVATIONS);
	st->saved[mb][2] =
	    vtc_alloc(r, r == 0 ? act : 8 * 512 * 4, VTC_ACTIVATIONS); /* output / loss */
	if (r == 0) {
		send_peer(0, act_recv[mb], st->saved[mb][2]);
		sent(&fwd_sent);
	}
}

static void backward(struct stage *st, int s, int mb)
{
	int r = st->r;
	if (r == 0)
		wait_for(&bwd_sent, s * MICRO + mb + 1);
	for (int i = st->n - 1; i >= 0; i--)
		if (mb == 0) /* AccumulateGrad: made once, then added into */
			st->g[i] = vtc_alloc(r, st->bytes[i], VTC_GRADIENTS);
	for (int k = 2; k >= 0; k--)
		vtc_free(r, st->saved[mb][k]);
	if (r == 1) {
		CUdeviceptr input_grad = vtc_alloc(r, act, VTC_ACTIVATIONS);
		send_peer(1, grad_recv[mb], input_grad);
		sent(&bwd_sent);
		vtc_free(r, input_grad);
	}
}

static void optimizer_step(struct stage *st, int s)
{
	if (s == 0)
		for (int i = 0; i < st->n; i++) {
			st->m[i] = vtc_alloc(st->r, st->bytes[i], VTC_OPTIMIZER);
			vtc_zero(st->r, st->m[i], st->bytes[i]);
			st->v[i] = vtc_alloc(st->r, st->bytes[i], VTC_OPTIMIZER);
			vtc_zero(st->r, st->v[i], st->bytes[i]);
		}
	for (int i = 0; i < st->n; i++)
		vtc_free(st->r, st->g[i]);
}

static void *stage_main(void *arg)
{
	struct stage st = {.r = (int)(intptr_t)arg};
	int r = st.r;
	vtc_use(r);
	st.n = stage_params(r, st.bytes);
	for (int i = 0; i < st.n; i++) {
		st.w[i] = vtc_alloc(r, st.bytes[i], VTC_WEIGHTS);
		vtc_htod(r, st.w[i], st.bytes[i]);
	}
	for (int mb = 0; mb < MICRO; mb++) /* _prepare_forward/backward_infra */
		if (r == 1)
			act_recv[mb] = vtc_alloc(r, act, VTC_ACTIVATIONS);
		else
			grad_recv[mb] = vtc_alloc(r, act, VTC_ACTIVATIONS);
	pthread_barrier_wait(&setup_done);
	for (int s = 0; s < STEPS; s++) {
		if (r == 0 && vtc_markers())
			vtc_step(s);
		CUdeviceptr input = vtc_alloc(r, tokens, VTC_PREFETCH); /* x or target */
		vtc_htod(r, input, tokens);
		for (int mb = 0; mb < MICRO; mb++)
			forward(&st, s, mb);
		for (int mb = 0; mb < MICRO; mb++)
			backward(&st, s, mb);
		optimizer_step(&st, s);
		vtc_free(r, input);
	}
	pthread_barrier_wait(&setup_done);
	for (int mb = 0; mb < MICRO; mb++)
		vtc_free(r, r == 1 ? act_recv[mb] : grad_recv[mb]);
	for (int i = 0; i < st.n; i++) {
		vtc_free(r, st.v[i]);
		vtc_free(r, st.m[i]);
		vtc_free(r, st.w[i]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "pipeline_two_stages", 2, VTC_DIRECT);
	pthread_barrier_init(&setup_done, NULL, 2);
	pthread_t th[2];
	for (int r = 0; r < 2; r++)
		pthread_create(&th[r], NULL, stage_main, (void *)(intptr_t)r);
	for (int r = 0; r < 2; r++)
		pthread_join(th[r], NULL);
	vtc_line("no_finding whole_dataset_upload");
	for (int r = 0; r < 2; r++) {
		vtc_line("finding prefetch_depth %d 1 %llu", r, (unsigned long long)tokens);
		vtc_line("steps %d %d", r, STEPS);
	}
	vtc_finish();
	return 0;
}
