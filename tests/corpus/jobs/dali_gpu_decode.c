/* A DALI pipeline decoding ImageNet JPEGs on the GPU feeding a PyTorch
 * ResNet-50, DALI with DALI_USE_CUDA_MALLOC_ASYNC=1 (each DALI buffer a
 * cudaMallocAsync on its stream), PyTorch over the CUDACachingAllocator.
 *
 * What is modelled (sources read: DALI's docs/examples/use_cases/pytorch/
 * resnet50/main.py `create_dali_pipeline` (`fn.readers.file`,
 * `fn.decoders.image_random_crop(device="mixed")`, `fn.resize`,
 * `fn.crop_mirror_normalize(dtype=FLOAT, output_layout="CHW")`,
 * `labels.gpu()`, `prefetch_queue_depth=3`); dali/pipeline/data/buffer.h
 * `Buffer::resize` (a buffer that must grow takes max(needed, capacity x
 * growth_factor_), growth_factor_ = 1.1; `reserve` frees the old storage
 * first; a GPU buffer never shrinks, shrink_threshold_ = 0); DALI's
 * environment variables page (DALI_USE_CUDA_MALLOC_ASYNC);
 * nvidia/dali/plugin/pytorch `DALIGenericIterator.__next__` (per output a
 * `torch.empty` of the batch's shape, `feed_ndarray` -> `copy_to_external`,
 * a device-to-device copy, then `release_outputs` and `schedule_run`: the
 * freed slot is filled with the iteration 3 ahead); torchvision
 * models/resnet.py; torch/optim/sgd.py (momentum buffers at the first step);
 * vtc_cache for the caching allocator):
 *  - `model.cuda()`: every parameter and BatchNorm buffer a block and an
 *    upload;
 *  - the first `next()` schedules 3 iterations; every iteration: the
 *    batch's encoded JPEG streams (32 images, 2.9 to 4.4 MB in all) copied
 *    from pinned host memory into the decoder's device bitstream buffer,
 *    reallocated larger when they do not fit, else reused; decoding and
 *    random cropping into the slot's crop buffer (HWC uint8, variable:
 *    grows the same way), resize into the slot's 224 x 224 buffer,
 *    crop_mirror_normalize into the slot's float32 CHW batch, the labels
 *    uploaded into the slot's label buffer: 3 slots, one per queued
 *    iteration, each made at its first use and reused;
 *  - per step: the ready slot's images and labels copied into new torch
 *    tensors, the slot released and refilled with the iteration 3 ahead;
 *    labels `.long()`; forward, loss, backward (`.grad`s freed by
 *    `zero_grad(set_to_none=True)`), SGD with momentum.
 * Markers on, driver linked (--lookup direct).
 *
 * Truth: parameters and BatchNorm buffers weights, `.grad`s gradients,
 * momentum buffers optimizer, torch segments by kind or pool (parts);
 * the bitstream buffer (uploaded every iteration) and each slot's float32
 * batch and labels prefetch (3 batches decoded ahead: depth 3); the crop
 * and resize buffers activations (the pipeline's intermediates); the
 * iterator's torch copies of the batch activations (a batch copied on the
 * device, README convention for batches made on the device). No dataset;
 * 20 steps. Coincidences: the three float32 slots are one size (19,267,584 B),
 * four times each resize slot; the bitstream and crop buffers change size
 * through the run. */
#include "vtc_pool.h"

#include <string.h>

#define DEPTH 3

static struct vtc_cache cache;
static const uint64_t B = 32, CROP_HW = 224;
static CUstream dali_stream;

/* ---- DALI ---------------------------------------------------------------- */

struct dali_buffer { /* Buffer<GPUBackend> */
	CUdeviceptr p;
	uint64_t capacity;
	enum vtc_cat cat;
};

static void buffer_resize(struct dali_buffer *b, uint64_t bytes)
{
	if (bytes <= b->capacity)
		return;
	uint64_t grow = b->capacity + b->capacity / 10; /* num_bytes_ * growth_factor_ */
	if (grow > bytes)
		bytes = grow;
	if (b->p) /* reserve(): free_storage() first */
		vtc_free_async(0, b->p, dali_stream);
	b->p = vtc_alloc_async(0, bytes, b->cat, dali_stream);
	b->capacity = bytes;
}

static struct dali_buffer bitstream = {0, 0, VTC_PREFETCH};
static struct dali_buffer crops[DEPTH], resized[DEPTH], images[DEPTH], labels[DEPTH];
static uint32_t lcg = 12345;

static uint64_t next_rand(uint64_t lo, uint64_t hi)
{
	lcg = lcg * 1103515245u + 12345u;
	return lo + (uint64_t)((lcg >> 8) % (uint32_t)(hi - lo));
}

/* one pipeline iteration into slot k */
static void run_iteration(int k, const void *pinned)
{
	uint64_t encoded = 0, cropped = 0;
	for (uint64_t i = 0; i < B; i++) {
		encoded += next_rand(90000, 138000);     /* a JPEG, bytes */
		cropped += next_rand(60000, 400000) * 3; /* the random crop, HWC uint8 */
	}
	buffer_resize(&bitstream, encoded); /* the decoder's input TensorList */
	vtc_htod_from(0, bitstream.p, pinned, encoded, dali_stream);
	buffer_resize(&crops[k], cropped);
	buffer_resize(&resized[k], B * CROP_HW * CROP_HW * 3);
	buffer_resize(&images[k], B * 3 * CROP_HW * CROP_HW * 4);
	buffer_resize(&labels[k], B * 4); /* labels.gpu() */
	vtc_htod_from(0, labels[k].p, pinned, B * 4, dali_stream);
}

/* ---- PyTorch ------------------------------------------------------------- */

#define MAXP 400
static uint64_t pbytes[MAXP];
static int nparams;
static const uint64_t WIDTH[4] = {64, 128, 256, 512}, BLOCKS[4] = {3, 4, 6, 3},
                      RES[4] = {56, 28, 14, 7};

static void add_bn(uint64_t c, int *is_param)
{
	for (int k = 0; k < 5; k++) { /* weight, bias; running_mean, running_var, count */
		is_param[nparams] = k < 2;
		pbytes[nparams++] = k == 4 ? 8 : c * 4;
	}
}

static void shapes(int *is_param)
{
	is_param[nparams] = 1;
	pbytes[nparams++] = 64 * 3 * 7 * 7 * 4;
	add_bn(64, is_param);
	uint64_t cin = 64;
	for (int s = 0; s < 4; s++)
		for (uint64_t b = 0; b < BLOCKS[s]; b++) {
			uint64_t w = WIDTH[s];
			const uint64_t conv[3] = {cin * w * 4, w * w * 9 * 4, w * 4 * w * 4};
			const uint64_t ch[3] = {w, w, 4 * w};
			for (int c = 0; c < 3; c++) {
				is_param[nparams] = 1;
				pbytes[nparams++] = conv[c];
				add_bn(ch[c], is_param);
			}
			if (b == 0) {
				is_param[nparams] = 1;
				pbytes[nparams++] = cin * 4 * w * 4;
				add_bn(4 * w, is_param);
			}
			cin = 4 * w;
		}
	is_param[nparams] = 1;
	pbytes[nparams++] = 2048 * 1000 * 4;
	is_param[nparams] = 1;
	pbytes[nparams++] = 1000 * 4;
}

static CUdeviceptr take(uint64_t n, enum vtc_cat c)
{
	return vtc_cache_alloc(&cache, n, c);
}
static void give(CUdeviceptr p)
{
	vtc_cache_free(&cache, p);
}

static void train_step(CUdeviceptr x, CUdeviceptr y, const int *is_param, CUdeviceptr *grad,
                       CUdeviceptr *mom)
{
	static CUdeviceptr saved[256];
	int n = 0;
	CUdeviceptr target = take(B * 8, VTC_ACTIVATIONS); /* labels.squeeze(-1).long() */
	saved[n++] = take(B * 64 * 112 * 112 * 4 * 2, VTC_ACTIVATIONS); /* conv1, bn1 */
	saved[n++] = take(B * 64 * 56 * 56 * 4, VTC_ACTIVATIONS);       /* maxpool */
	uint64_t res_in = 56;
	for (int s = 0; s < 4; s++)
		for (uint64_t b = 0; b < BLOCKS[s]; b++) {
			uint64_t w = WIDTH[s], r = RES[s];
			saved[n++] = take(B * w * res_in * res_in * 4 * 2, VTC_ACTIVATIONS);
			saved[n++] = take(B * w * r * r * 4 * 2, VTC_ACTIVATIONS);
			saved[n++] = take(B * 4 * w * r * r * 4 * 2, VTC_ACTIVATIONS);
			if (b == 0)
				saved[n++] = take(B * 4 * w * r * r * 4 * 2, VTC_ACTIVATIONS);
			saved[n++] = take(B * 4 * w * r * r * 4, VTC_ACTIVATIONS); /* add, relu */
			res_in = r;
		}
	saved[n++] = take(B * 2048 * 4, VTC_ACTIVATIONS); /* avgpool */
	saved[n++] = take(B * 1000 * 4, VTC_ACTIVATIONS); /* fc */
	CUdeviceptr loss = take(4, VTC_ACTIVATIONS);
	(void)x;
	(void)y;
	/* backward: a gradient of activations at a time, the .grads in reverse */
	CUdeviceptr g = take(B * 2048 * 7 * 7 * 4, VTC_ACTIVATIONS);
	for (int i = nparams - 1; i >= 0; i--)
		if (is_param[i])
			grad[i] = take(pbytes[i], VTC_GRADIENTS);
	while (n > 0)
		give(saved[--n]);
	give(g);
	for (int i = 0; i < nparams; i++)
		if (is_param[i] && !mom[i]) { /* momentum_buffer = clone(grad) */
			mom[i] = take(pbytes[i], VTC_OPTIMIZER);
			vtc_dtod(0, mom[i], grad[i], pbytes[i]);
		}
	vtc_dtoh(0, loss, 4); /* loss.item() for the log */
	give(loss);
	give(target);
	for (int i = 0; i < nparams; i++) /* zero_grad(set_to_none=True) */
		if (grad[i]) {
			give(grad[i]);
			grad[i] = 0;
		}
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "dali_gpu_decode", 1, VTC_DIRECT);
	int steps = (int)vtc_opt_size("--steps", 20);
	static int is_param[MAXP];
	shapes(is_param);
	vtc_cache_init(&cache, 0);
	VTC_CHECK(vtc.StreamCreate(&dali_stream, 0));
	for (int k = 0; k < DEPTH; k++) {
		crops[k].cat = VTC_ACTIVATIONS;
		resized[k].cat = VTC_ACTIVATIONS;
		images[k].cat = VTC_PREFETCH;
		labels[k].cat = VTC_PREFETCH;
	}
	CUdeviceptr param[MAXP], grad[MAXP] = {0}, mom[MAXP] = {0};
	for (int i = 0; i < nparams; i++) { /* model.cuda() */
		param[i] = take(pbytes[i], VTC_WEIGHTS);
		vtc_htod(0, param[i], pbytes[i]);
	}
	void *pinned; /* the reader's and decoder's pinned host buffers */
	VTC_CHECK(vtc.MemAllocHost(&pinned, 8 * MIB));
	memset(pinned, 0x5a, 8 * MIB);
	for (int k = 0; k < DEPTH; k++) /* the first next(): _prefetch() */
		run_iteration(k, pinned);
	const uint64_t img_bytes = B * 3 * CROP_HW * CROP_HW * 4;
	for (int s = 0; s < steps; s++) {
		vtc_step(s);
		int k = s % DEPTH;
		VTC_CHECK(vtc.StreamSynchronize(dali_stream));
		CUdeviceptr x = take(img_bytes, VTC_ACTIVATIONS); /* torch.empty, feed_ndarray */
		vtc_dtod(0, x, images[k].p, img_bytes);
		CUdeviceptr y = take(B * 4, VTC_ACTIVATIONS);
		vtc_dtod(0, y, labels[k].p, B * 4);
		run_iteration(k, pinned); /* release_outputs(); schedule_run() */
		train_step(x, y, is_param, grad, mom);
		give(x);
		give(y);
	}
	VTC_CHECK(vtc.StreamSynchronize(dali_stream));
	VTC_CHECK(vtc.MemFreeHost(pinned));
	vtc_free_async(0, bitstream.p, dali_stream); /* del pipe */
	for (int k = 0; k < DEPTH; k++) {
		vtc_free_async(0, crops[k].p, dali_stream);
		vtc_free_async(0, resized[k].p, dali_stream);
		vtc_free_async(0, images[k].p, dali_stream);
		vtc_free_async(0, labels[k].p, dali_stream);
	}
	for (int i = 0; i < nparams; i++) {
		give(param[i]);
		if (mom[i])
			give(mom[i]);
	}
	vtc_cache_empty(&cache);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 %d %llu", DEPTH,
	         (unsigned long long)(img_bytes + B * 4));
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
