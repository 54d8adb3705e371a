/* TensorRT inference of a ResNet-50 fp16 engine built with one dynamic-
 * batch optimization profile (min 1, opt 16, max 32), serving 24 requests
 * of varying batch size.
 *
 * What is modelled (sources read: TensorRT's samples/python/common_runtime.py
 * `allocate_buffers` (per I/O tensor a pinned host buffer and a device
 * buffer of the profile's maximum shape, `HostDeviceMem`), `do_inference` /
 * `_do_inference_base` (host-to-device copy of every input,
 * `execute_async_v3`, device-to-host copy of every output, stream
 * synchronize); the IRuntime / ICudaEngine / IExecutionContext API
 * (`deserializeCudaEngine`, `getDeviceMemorySize` (the activation memory the
 * builder sized for the largest profile shape), `createExecutionContext`
 * (allocates that memory once), `setInputShape`, `setTensorAddress`)):
 *  - `runtime.deserialize_cuda_engine(plan)`: the engine's weights in ONE
 *    device allocation filled by ONE copy from the plan in host memory;
 *  - `engine.create_execution_context()`: the activation memory, one
 *    allocation of the size the builder computed, reused by every
 *    enqueue;
 *  - `allocate_buffers`: the input binding (32 x 3 x 224 x 224 fp16) and
 *    the output binding (32 x 1000 fp32), each once;
 *  - per request: `set_input_shape` to the request's batch, the request's
 *    images copied into the start of the input binding, enqueue, the
 *    request's logits copied back;
 *  - the end: bindings freed, `del context` (its activation memory), `del
 *    engine` (the weights).
 * No markers, driver by cuGetProcAddress (TensorRT's static cudart).
 *
 * Truth: the weight blob weights (loaded once, not a dataset); the
 * activation memory activations; the input binding prefetch (one request
 * on the device at a time, refilled in place: depth 1); the output binding
 * activations (the engine's output, read back). No dataset; 0 steps
 * (inference). */
#include "vtc.h"

#include <string.h>

static const uint64_t IMAGE = 3 * 224 * 224 * 2; /* fp16 */
static const uint64_t LOGITS = 1000 * 4;
static const uint64_t MAX_BATCH = 32;
static const uint64_t WEIGHTS = 51118080;      /* ResNet-50, fp16, as serialized */
static const uint64_t ACTIVATIONS = 205520896; /* getDeviceMemorySize() at batch 32 */

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "trt_engine_inference", 1, VTC_GETPROC);
	int requests = (int)vtc_opt_size("--requests", 24);
	CUstream stream;
	VTC_CHECK(vtc.StreamCreate(&stream, 0));
	/* deserializeCudaEngine: the plan is in host memory; the weights go up
	 * in one piece */
	CUdeviceptr weights = vtc_alloc(0, WEIGHTS, VTC_WEIGHTS);
	vtc_htod(0, weights, WEIGHTS);
	/* createExecutionContext: the builder-sized activation memory */
	CUdeviceptr activation_mem = vtc_alloc(0, ACTIVATIONS, VTC_ACTIVATIONS);
	/* allocate_buffers: profile-max shapes */
	void *host_in, *host_out;
	VTC_CHECK(vtc.MemAllocHost(&host_in, MAX_BATCH * IMAGE));
	VTC_CHECK(vtc.MemAllocHost(&host_out, MAX_BATCH * LOGITS));
	memset(host_in, 0x5a, MAX_BATCH * IMAGE);
	CUdeviceptr in = vtc_alloc(0, MAX_BATCH * IMAGE, VTC_PREFETCH);
	CUdeviceptr out = vtc_alloc(0, MAX_BATCH * LOGITS, VTC_ACTIVATIONS);
	/* requests of 1 to 32 images, in the order the server got them */
	static const int sizes[] = {32, 7,  16, 1, 25, 32, 3,  12, 30, 16, 9,  32,
	                            2,  20, 32, 5, 14, 27, 32, 8,  16, 4,  31, 11};
	const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
	for (int r = 0; r < requests; r++) {
		uint64_t n = (uint64_t)sizes[r % nsizes];
		/* context.set_input_shape("input", (n, 3, 224, 224)) */
		vtc_htod_from(0, in, host_in, n * IMAGE, stream);
		/* context.execute_async_v3(stream): kernels on weights, activation
		 * memory and the bindings */
		vtc_use(0);
		VTC_CHECK(vtc.MemcpyDtoH(host_out, out, n * LOGITS));
		VTC_CHECK(vtc.StreamSynchronize(stream));
	}
	vtc_free(0, in);
	vtc_free(0, out);
	VTC_CHECK(vtc.MemFreeHost(host_in));
	VTC_CHECK(vtc.MemFreeHost(host_out));
	vtc_free(0, activation_mem); /* del context */
	vtc_free(0, weights);        /* del engine */
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)(MAX_BATCH * IMAGE));
	vtc_line("steps 0 0");
	vtc_finish();
	return 0;
}
