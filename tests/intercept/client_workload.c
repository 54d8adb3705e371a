/* The workload every client runs: per round, allocate, upload, download and
 * free on a device, sync and stream-ordered; an allocation past capacity at
 * the end if asked. Every call is written to the truth file as the client saw
 * it, and the results (never the addresses) to stdout. */
#define _GNU_SOURCE
#include "client.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int truth_fd = -1;
static pthread_once_t truth_once = PTHREAD_ONCE_INIT;

static void open_truth(void)
{
	const char *path = getenv("VT_TEST_TRUTH");
	truth_fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;
}

void vt_truth(const char *fmt, ...)
{
	pthread_once(&truth_once, open_truth);
	int fd = truth_fd;
	if (fd < 0)
		return;
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n > 0 && write(fd, line, (size_t)n) != n)
		abort();
}

static int use_device(const struct cu_api *api, int ordinal)
{
	CUdevice dev;
	CUcontext ctx;
	return api->device_get(&dev, ordinal) || api->ctx_retain(&ctx, dev) || api->ctx_set(ctx);
}

static unsigned checksum(const unsigned char *p, size_t n)
{
	unsigned sum = 0;
	for (size_t i = 0; i < n; i++)
		sum = sum * 31u + p[i];
	return sum;
}

/* One synchronous round: alloc, H2D, D2H, free. */
static int sync_round(const struct cu_api *api, const struct workload *w, int dev, size_t bytes,
		      unsigned char *host, unsigned char *back)
{
	CUdeviceptr d = 0;
	CUresult r = api->alloc(&d, bytes);
	vt_truth("alloc %d %s %llu %zu %d %d\n", (int)getpid(), api->alloc_name, (unsigned long long)d, bytes, dev, (int)r);
	if (r)
		return 1;
	memset(host, (int)((bytes >> 6) * 37 + 1) & 0xff, bytes);
	r = api->htod(d, host, bytes);
	vt_truth("htod %d %s %llu %zu %d\n", (int)getpid(), api->htod_name, (unsigned long long)d, bytes, dev);
	r |= api->dtoh(back, d, bytes);
	if (!w->quiet)
		printf("%s dev %d: %zu bytes, checksum %08x, result %d\n", api->path, dev, bytes,
		       checksum(back, bytes), (int)r);
	vt_truth("free %d %s %llu %d\n", (int)getpid(), api->free_name, (unsigned long long)d, dev);
	return (r | api->free(d)) != CUDA_SUCCESS;
}

/* One stream-ordered round on the legacy stream. */
static int async_round(const struct cu_api *api, int dev, size_t bytes, const unsigned char *host)
{
	CUdeviceptr d = 0;
	CUresult r = api->alloc_async(&d, bytes, NULL);
	vt_truth("alloc %d %s %llu %zu %d %d\n", (int)getpid(), api->alloc_async_name, (unsigned long long)d, bytes, dev, (int)r);
	if (r)
		return 1;
	r = api->htod_async(d, host, bytes, NULL);
	vt_truth("htod %d %s %llu %zu %d\n", (int)getpid(), api->htod_async_name, (unsigned long long)d, bytes, dev);
	vt_truth("free %d %s %llu %d\n", (int)getpid(), api->free_async_name, (unsigned long long)d, dev);
	return (r | api->free_async(d, NULL)) != CUDA_SUCCESS;
}

int vt_client_run(const struct cu_api *api, const struct workload *w)
{
	if (api->init(0))
		return 1;
	int failed = 0;
	size_t max = 4096u * (size_t)(w->count + 1) + 64u * (size_t)(w->tag + 1);
	unsigned char *host = malloc(max), *back = malloc(max);
	for (int i = 0; i < w->count && host && back; i++) {
		int dev = i % (w->devices > 0 ? w->devices : 1);
		size_t bytes = 4096u * (size_t)(i + 1) + 64u * (size_t)w->tag;
		failed |= use_device(api, dev);
		failed |= sync_round(api, w, dev, bytes, host, back);
		failed |= async_round(api, dev, bytes / 2, host);
	}
	if (w->oom_bytes) {
		failed |= use_device(api, 0);
		CUdeviceptr d = 0;
		CUresult r = api->alloc(&d, (size_t)w->oom_bytes);
		vt_truth("alloc %d %s 0 %llu 0 %d\n", (int)getpid(), api->alloc_name, w->oom_bytes, (int)r);
		if (!w->quiet)
			printf("allocation of %llu bytes: result %d\n", w->oom_bytes, (int)r);
		failed |= r != CUDA_ERROR_OUT_OF_MEMORY;
	}
	free(host);
	free(back);
	return failed;
}
