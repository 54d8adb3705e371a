/* Simulated driver: init, devices, per-thread contexts, streams, errors.
 * Run with VT_SIM_DEVICES=2 VT_SIM_CAPACITY=64M. */
#include "test_util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int setup_reset(void **state)
{
	(void)state;
	vtsim_reset();
	return 0;
}

static void test_init_required(void **state)
{
	(void)state;
	int n = -1, version = 0;
	CUdeviceptr p;
	CUcontext ctx;
	assert_int_equal(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_ERROR_NOT_INITIALIZED);
	CU_OK(cuDriverGetVersion(&version)); /* allowed before cuInit */
	assert_int_equal(version, 13000);
	assert_int_equal(cuInit(1), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuInit(0));
	CU_OK(cuInit(0)); /* idempotent */
	CU_OK(cuDeviceGetCount(&n));
	assert_int_equal(n, 2);
}

static void test_devices(void **state)
{
	(void)state;
	CUdevice d;
	char name[64];
	int v = 0;
	size_t total = 0;
	CU_OK(cuInit(0));
	CU_OK(cuDeviceGet(&d, 1));
	assert_int_equal(d, 1);
	assert_int_equal(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
	CU_OK(cuDeviceGetName(name, sizeof name, 1));
	assert_string_equal(name, "vramtrace simulated GPU 1");
	CU_OK(cuDeviceTotalMem(&total, 0));
	assert_int_equal(total, 64u << 20);
	CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
	assert_int_equal(v, 1);
	CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
	assert_true(v >= 7);
	assert_int_equal(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuDeviceGetName(name, sizeof name, 5), CUDA_ERROR_INVALID_DEVICE);
}

static void test_context_required(void **state)
{
	(void)state;
	CUdeviceptr p;
	size_t f, t;
	CUdevice d;
	CUcontext cur = (CUcontext)1;
	CU_OK(cuInit(0));
	CU_OK(cuCtxGetCurrent(&cur));
	assert_null(cur);
	assert_int_equal(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(cuMemGetInfo(&f, &t), CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(cuMemcpyHtoD(0, &f, 1), CUDA_ERROR_INVALID_CONTEXT);
}

static void test_push_pop_create_destroy(void **state)
{
	(void)state;
	CUcontext p0, p1, made, got;
	CUdevice d;
	unsigned flags;
	int active;
	CU_OK(cuInit(0));
	CU_OK(cuDevicePrimaryCtxRetain(&p0, 0));
	CU_OK(cuDevicePrimaryCtxRetain(&got, 0));
	assert_ptr_equal(got, p0); /* one primary context per device */
	CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
	assert_int_equal(active, 1);
	CU_OK(cuDevicePrimaryCtxRetain(&p1, 1));
	CU_OK(cuCtxPushCurrent(p0));
	CU_OK(cuCtxPushCurrent(p1));
	CU_OK(cuCtxGetDevice(&d));
	assert_int_equal(d, 1);
	CU_OK(cuCtxPopCurrent(&got));
	assert_ptr_equal(got, p1);
	CU_OK(cuCtxGetDevice(&d));
	assert_int_equal(d, 0);
	CU_OK(cuCtxCreate(&made, NULL, 0, 1)); /* v4 in CUDA 13 headers: pushes */
	CU_OK(cuCtxGetCurrent(&got));
	assert_ptr_equal(got, made);
	CU_OK(cuCtxGetDevice(&d));
	assert_int_equal(d, 1);
	CU_OK(cuCtxDestroy(made));
	CU_OK(cuCtxGetCurrent(&got));
	assert_ptr_equal(got, p0);
	assert_int_equal(cuCtxPushCurrent(made), CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(cuCtxDestroy(p0), CUDA_ERROR_INVALID_CONTEXT); /* primary */
	CU_OK(cuCtxSynchronize());
	CU_OK(cuCtxSetCurrent(NULL));
	CU_OK(cuCtxGetCurrent(&got));
	assert_null(got);
	assert_int_equal(cuCtxPopCurrent(&got), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cuDevicePrimaryCtxRelease(0));
	CU_OK(cuDevicePrimaryCtxRelease(0));
	CU_OK(cuDevicePrimaryCtxRelease(1));
	assert_int_equal(cuDevicePrimaryCtxRelease(1), CUDA_ERROR_INVALID_CONTEXT);
}

/* Two threads, each with a different device current, allocate at once. */
struct worker {
	int device;
	pthread_barrier_t *barrier;
	CUdevice seen;
	int ordinal;
	size_t free_seen;
	CUresult result;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	CUcontext ctx;
	CUdeviceptr p[50];
	size_t total;
	w->result = cuDevicePrimaryCtxRetain(&ctx, w->device);
	if (w->result == CUDA_SUCCESS)
		w->result = cuCtxSetCurrent(ctx);
	pthread_barrier_wait(w->barrier);
	for (int i = 0; i < 50 && w->result == CUDA_SUCCESS; i++)
		w->result = cuMemAlloc(&p[i], (size_t)(w->device + 1) << 19); /* 512 KiB / 1 MiB */
	pthread_barrier_wait(w->barrier); /* both have allocated everything */
	if (w->result == CUDA_SUCCESS)
		w->result = cuCtxGetDevice(&w->seen);
	if (w->result == CUDA_SUCCESS)
		w->result = cuPointerGetAttribute(&w->ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p[49]);
	if (w->result == CUDA_SUCCESS)
		w->result = cuMemGetInfo(&w->free_seen, &total);
	for (int i = 0; i < 50 && w->result == CUDA_SUCCESS; i++)
		w->result = cuMemFree(p[i]);
	return NULL;
}

static void test_per_thread_context(void **state)
{
	(void)state;
	pthread_t t[2];
	pthread_barrier_t barrier;
	struct worker w[2] = {{.device = 0, .barrier = &barrier}, {.device = 1, .barrier = &barrier}};
	CUcontext mine;
	CU_OK(cuInit(0));
	pthread_barrier_init(&barrier, NULL, 2);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&barrier);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(w[i].result, CUDA_SUCCESS);
		assert_int_equal(w[i].seen, i);
		assert_int_equal(w[i].ordinal, i);
	}
	/* each thread's cuMemGetInfo saw its own device: 25 MiB vs 50 MiB used */
	assert_int_equal(w[0].free_seen, (64u << 20) - (25u << 20));
	assert_int_equal(w[1].free_seen, (64u << 20) - (50u << 20));
	CU_OK(cuCtxGetCurrent(&mine));
	assert_null(mine); /* the workers' contexts never leaked into this thread */
	assert_int_equal(vtsim_live_allocs(0) + vtsim_live_allocs(1), 0);
}

static void test_streams(void **state)
{
	(void)state;
	CUstream s;
	fresh_driver_on(0);
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cuStreamQuery(s));
	CU_OK(cuStreamSynchronize(s));
	CU_OK(cuStreamSynchronize(NULL));
	CU_OK(cuStreamDestroy(s));
	assert_int_equal(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
}

static void test_events_and_stream_queries(void **state)
{
	(void)state;
	CUevent a, b;
	CUstream s1, s2;
	float ms = -1;
	int prio = 1;
	unsigned long long id1 = 0, id2 = 0;
	CUcontext ctx = fresh_driver_on(1), got = NULL;
	CU_OK(cuStreamCreateWithPriority(&s1, 0, -3));
	CU_OK(cuStreamCreate(&s2, 0));
	CU_OK(cuStreamGetPriority(s1, &prio));
	assert_int_equal(prio, -3);
	CU_OK(cuStreamGetId(s1, &id1));
	CU_OK(cuStreamGetId(s2, &id2));
	assert_true(id1 != id2);
	CU_OK(cuStreamGetCtx(s2, &got));
	assert_ptr_equal(got, ctx);
	CU_OK(cuEventCreate(&a, CU_EVENT_DEFAULT));
	CU_OK(cuEventCreate(&b, CU_EVENT_DEFAULT));
	assert_int_equal(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE); /* not recorded */
	CU_OK(cuEventRecord(a, s1));
	CU_OK(cuStreamWaitEvent(s2, a, 0));
	CU_OK(cuEventRecord(b, s2));
	CU_OK(cuEventSynchronize(b));
	CU_OK(cuEventElapsedTime(&ms, a, b));
	assert_true(ms >= 0.0f && ms < 10000.0f);
	CU_OK(cuEventDestroy(a));
	assert_int_equal(cuEventQuery(a), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cuEventDestroy(b));
	CU_OK(cuStreamDestroy(s1));
	CU_OK(cuStreamDestroy(s2));
}

static size_t capacity_for(const char *text)
{
	size_t total = 0;
	setenv("VT_SIM_CAPACITY", text, 1);
	vtsim_reset(); /* the environment is read again at the next cuInit */
	CU_OK(cuInit(0));
	CU_OK(cuDeviceTotalMem(&total, 0));
	return total;
}

static void test_environment_parsing(void **state)
{
	(void)state;
	int n = 0;
	assert_int_equal(capacity_for("4096"), 4096);
	assert_int_equal(capacity_for("3K"), 3 << 10);
	assert_int_equal(capacity_for("2m"), 2u << 20);
	assert_int_equal(capacity_for("1G"), 1u << 30);
	assert_int_equal(capacity_for("2GiB"), 2ull << 30);
	assert_int_equal(capacity_for("3G"), 3ull << 30); /* (a TSan build cannot map terabytes) */
	assert_int_equal(capacity_for("lots"), 16ull << 30); /* bad: default, one warning line */
	assert_int_equal(capacity_for("-5"), 16ull << 30);
	assert_int_equal(capacity_for("0"), 16ull << 30);
	setenv("VT_SIM_DEVICES", "8", 1);
	capacity_for("1M");
	CU_OK(cuDeviceGetCount(&n));
	assert_int_equal(n, 8);
	setenv("VT_SIM_DEVICES", "9", 1);
	capacity_for("1M");
	CU_OK(cuDeviceGetCount(&n));
	assert_int_equal(n, 1);
	setenv("VT_SIM_DRIVER_VERSION", "12040", 1);
	vtsim_reset();
	CU_OK(cuDriverGetVersion(&n));
	assert_int_equal(n, 12040);
	setenv("VT_SIM_DEVICES", "2", 1);
	setenv("VT_SIM_CAPACITY", "64M", 1);
	unsetenv("VT_SIM_DRIVER_VERSION");
}

static void test_error_strings(void **state)
{
	(void)state;
	const char *s = NULL;
	CU_OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
	assert_string_equal(s, "CUDA_ERROR_OUT_OF_MEMORY");
	CU_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
	assert_string_equal(s, "out of memory");
	assert_int_equal(cuGetErrorName((CUresult)123456, &s), CUDA_ERROR_INVALID_VALUE);
	assert_null(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_required, setup_reset, teardown_reset),
		cmocka_unit_test_setup_teardown(test_devices, setup_reset, teardown_reset),
		cmocka_unit_test_setup_teardown(test_context_required, setup_reset, teardown_reset),
		cmocka_unit_test_setup_teardown(test_push_pop_create_destroy, setup_reset, teardown_reset),
		cmocka_unit_test_setup_teardown(test_per_thread_context, setup_reset, teardown_reset),
		cmocka_unit_test_setup_teardown(test_streams, setup_reset, teardown_reset),
		cmocka_unit_test_setup_teardown(test_events_and_stream_queries, setup_reset, teardown_reset),
		cmocka_unit_test_setup_teardown(test_environment_parsing, setup_reset, teardown_reset),
		cmocka_unit_test_setup_teardown(test_error_strings, setup_reset, teardown_reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
