/* A record-emitting stand-in for libcuda.so.1, for the analyzer's own tests:
 * it answers the driver calls the simulated trainer makes and writes, for
 * each one, the record the shim would have written (format.h), one after
 * another, to $FAKECUDA_OUT. It lets the classifier be tested on the trainer
 * matrix without the shim in the loop (tests/analyzer/test_matrix_fake.sh);
 * the real path (simulated driver + libvramtrace.so + reader) is tested by
 * the matrix test proper. Single-threaded, like the trainer. */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vramtrace/format.h"

#define EXPORT __attribute__((visibility("default")))
#define NDEV 8
#define MAX_FREE 65536

static FILE *out;
static uint64_t seq, t0;
static int cur_dev;
static uint64_t next_addr[NDEV];
static struct { uint64_t addr, bytes; int dev; } freed[MAX_FREE], live[MAX_FREE];
static int nfreed, nlive;
static uint64_t stacks[4096];
static int nstacks;

static uint64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void emit(const void *rec, uint32_t size)
{
	if (out)
		fwrite(rec, 1, size, out);
}

static void open_out(void)
{
	if (out)
		return;
	const char *p = getenv("FAKECUDA_OUT");
	out = fopen(p ? p : "/dev/null", "w");
	t0 = now();
	struct vt_device_rec d[2];
	for (int i = 0; i < NDEV; i++) {
		memset(d, 0, sizeof d);
		d[0].hdr = VT_HDR(VT_REC_DEVICE, sizeof d);
		d[0].ordinal = (uint32_t)i;
		d[0].total_bytes = 8ull << 30;
		d[0].name_len = 8;
		memcpy(d[0].name, "Fake GPU", 8);
		emit(d, sizeof d);
		next_addr[i] = 0x700000000000ull + ((uint64_t)i << 36);
	}
}

/* One-frame stack per distinct caller address. */
static uint32_t stack_of(void *ra)
{
	uint64_t ip = (uint64_t)ra - 1;
	for (int i = 0; i < nstacks; i++)
		if (stacks[i] == ip)
			return (uint32_t)i + 1;
	if (nstacks == 4096)
		return 0;
	stacks[nstacks++] = ip;
	struct {
		struct vt_stack_rec r;
		uint64_t f;
	} s;
	memset(&s, 0, sizeof s);
	s.r.hdr = VT_HDR(VT_REC_STACK, sizeof s);
	s.r.stack_id = (uint32_t)nstacks;
	s.r.depth = 1;
	s.f = ip;
	emit(&s, sizeof s);
	return (uint32_t)nstacks;
}

static void event(uint32_t type, uint32_t stack, uint64_t addr, uint64_t bytes, uint64_t aux,
                  uint8_t kind, uint8_t api)
{
	struct vt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.hdr = VT_HDR(type, sizeof ev);
	ev.stack_id = stack;
	ev.seq = ++seq;
	ev.t_ns = now() - t0;
	ev.addr = addr;
	ev.bytes = bytes;
	ev.aux = aux;
	ev.api = api;
	ev.device = (uint8_t)cur_dev;
	ev.kind = kind;
	emit(&ev, sizeof ev);
}

EXPORT CUresult cuInit(unsigned flags) { (void)flags; open_out(); return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGetCount(int *n) { *n = NDEV; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) { *d = ordinal; return CUDA_SUCCESS; }
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	*c = (CUcontext)(uintptr_t)(d + 1);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSetCurrent(CUcontext c) { cur_dev = (int)(uintptr_t)c - 1; return CUDA_SUCCESS; }

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
	uint32_t st = stack_of(__builtin_return_address(0));
	uint64_t a = 0;
	for (int i = nfreed - 1; i >= 0; i--) /* reuse a freed block of the same size */
		if (freed[i].bytes == bytes && freed[i].dev == cur_dev) {
			a = freed[i].addr;
			freed[i] = freed[--nfreed];
			break;
		}
	if (!a) {
		a = next_addr[cur_dev];
		next_addr[cur_dev] += (bytes + 4095) & ~4095ull;
	}
	if (nlive < MAX_FREE)
		live[nlive++] = (typeof(live[0])){a, bytes, cur_dev};
	*p = a;
	event(VT_REC_ALLOC, st, a, bytes, 0, VT_ALLOC_DEVICE, 2);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	uint32_t st = stack_of(__builtin_return_address(0));
	event(VT_REC_FREE, st, p, 0, 0, VT_ALLOC_DEVICE, 11);
	for (int i = 0; i < nlive; i++)
		if (live[i].addr == p) {
			if (nfreed < MAX_FREE)
				freed[nfreed++] = live[i];
			live[i] = live[--nlive];
			break;
		}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	event(VT_REC_COPY, stack_of(__builtin_return_address(0)), dst, n, (uint64_t)src,
	      VT_COPY_HTOD, 31);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	event(VT_REC_COPY, stack_of(__builtin_return_address(0)), dst, n, src, VT_COPY_DTOD, 43);
	return CUDA_SUCCESS;
}

EXPORT void vramtrace_mark(const char *text)
{
	open_out();
	union {
		struct vt_mark_rec r;
		char buf[128];
	} u;
	memset(&u, 0, sizeof u);
	size_t n = strnlen(text, 64);
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof u.r + n));
	u.r.hdr = VT_HDR(VT_REC_MARK, size);
	u.r.kind = strncmp(text, "step ", 5) ? VT_MARK_USER : VT_MARK_STEP;
	u.r.text_len = (uint16_t)n;
	u.r.seq = ++seq;
	u.r.t_ns = now() - t0;
	memcpy(u.r.text, text, n);
	emit(&u, size);
}

static const struct { const char *name; void *fn; } table[] = {
	{"cuInit", (void *)cuInit},
	{"cuDeviceGetCount", (void *)cuDeviceGetCount},
	{"cuDeviceGet", (void *)cuDeviceGet},
	{"cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain},
	{"cuCtxSetCurrent", (void *)cuCtxSetCurrent},
	{"cuMemAlloc", (void *)cuMemAlloc_v2},
	{"cuMemFree", (void *)cuMemFree_v2},
	{"cuMemcpyHtoD", (void *)cuMemcpyHtoD_v2},
	{"cuMemcpyDtoD", (void *)cuMemcpyDtoD_v2},
};

EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *st)
{
	(void)ver;
	(void)flags;
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (!strcmp(sym, table[i].name)) {
			*pfn = table[i].fn;
			if (st)
				*st = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
	*pfn = NULL;
	if (st)
		*st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_ERROR_NOT_FOUND;
}

__attribute__((destructor)) static void finish(void)
{
	if (out) {
		struct vt_exit_rec e;
		memset(&e, 0, sizeof e);
		e.hdr = VT_HDR(VT_REC_EXIT, sizeof e);
		e.seq = ++seq;
		e.t_ns = now() - t0;
		emit(&e, sizeof e);
		fclose(out);
		out = NULL;
	}
}
