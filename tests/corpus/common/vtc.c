/* vtc: see vtc.h. */
#define _GNU_SOURCE
#include "vtc.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vtc_driver vtc;
CUcontext vtc_ctx[VTC_MAX_DEVICES];

static const char *const cat_names[] = {
	"dataset", "weights", "gradients", "optimizer", "prefetch", "activations", "pool", "other",
};

enum rec_type { R_ALLOC, R_FREE, R_PART, R_PART_FREE, R_LINE };
struct rec {
	enum rec_type type;
	int dev, cat;
	uint64_t addr, bytes, order;
	char *text;
};

static struct {
	pthread_mutex_t lock;
	struct rec *r;
	size_t n, cap;
	uint64_t order;
	const char *truth_path, *job;
	int markers;
	int argc;
	char **argv;
	void (*mark)(const char *);
	unsigned char *host;
	uint64_t host_bytes;
	/* outgrown host buffers, kept to the end: a job's other thread may
	 * still be copying from one when this one grows the buffer */
	unsigned char **retired;
	size_t nretired;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER, .markers = 1};

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", S.job ? S.job : "vtc");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

void vtc_check(CUresult rc, const char *what)
{
	if (rc != CUDA_SUCCESS)
		die("%s failed with CUresult %d", what, (int)rc);
}

/* ---- the driver, three ways ------------------------------------------- */

/* field, exported symbol (dlsym), base name and version (cuGetProcAddress) */
#define VTC_FUNCS(X)                                                          \
	X(Init, cuInit, "cuInit", "cuInit", 2000)                                 \
	X(DeviceGetCount, cuDeviceGetCount, "cuDeviceGetCount", "cuDeviceGetCount", 2000) \
	X(DeviceGet, cuDeviceGet, "cuDeviceGet", "cuDeviceGet", 2000)             \
	X(PrimaryCtxRetain, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", \
	  "cuDevicePrimaryCtxRetain", 7000)                                       \
	X(CtxSetCurrent, cuCtxSetCurrent, "cuCtxSetCurrent", "cuCtxSetCurrent", 4000) \
	X(MemAlloc, cuMemAlloc_v2, "cuMemAlloc_v2", "cuMemAlloc", 3020)           \
	X(MemFree, cuMemFree_v2, "cuMemFree_v2", "cuMemFree", 3020)               \
	X(MemAllocAsync, cuMemAllocAsync, "cuMemAllocAsync", "cuMemAllocAsync", 11020) \
	X(MemFreeAsync, cuMemFreeAsync, "cuMemFreeAsync", "cuMemFreeAsync", 11020) \
	X(MemcpyHtoD, cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2", "cuMemcpyHtoD", 3020)   \
	X(MemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync", 3020) \
	X(MemcpyDtoH, cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2", "cuMemcpyDtoH", 3020)   \
	X(MemcpyDtoD, cuMemcpyDtoD_v2, "cuMemcpyDtoD_v2", "cuMemcpyDtoD", 3020)   \
	X(MemcpyPeer, cuMemcpyPeer, "cuMemcpyPeer", "cuMemcpyPeer", 4000)         \
	X(MemsetD8, cuMemsetD8_v2, "cuMemsetD8_v2", "cuMemsetD8", 3020)           \
	X(MemAllocHost, cuMemAllocHost_v2, "cuMemAllocHost_v2", "cuMemAllocHost", 3020) \
	X(MemFreeHost, cuMemFreeHost, "cuMemFreeHost", "cuMemFreeHost", 2000)     \
	X(MemGetInfo, cuMemGetInfo_v2, "cuMemGetInfo_v2", "cuMemGetInfo", 3020)   \
	X(StreamCreate, cuStreamCreate, "cuStreamCreate", "cuStreamCreate", 2000) \
	X(StreamSynchronize, cuStreamSynchronize, "cuStreamSynchronize", "cuStreamSynchronize", 2000) \
	X(MemAddressReserve, cuMemAddressReserve, "cuMemAddressReserve", "cuMemAddressReserve", 10020) \
	X(MemAddressFree, cuMemAddressFree, "cuMemAddressFree", "cuMemAddressFree", 10020) \
	X(MemCreate, cuMemCreate, "cuMemCreate", "cuMemCreate", 10020)            \
	X(MemRelease, cuMemRelease, "cuMemRelease", "cuMemRelease", 10020)        \
	X(MemMap, cuMemMap, "cuMemMap", "cuMemMap", 10020)                        \
	X(MemUnmap, cuMemUnmap, "cuMemUnmap", "cuMemUnmap", 10020)                \
	X(MemSetAccess, cuMemSetAccess, "cuMemSetAccess", "cuMemSetAccess", 10020)

typedef CUresult (*get_proc_v2_fn)(const char *, void **, int, cuuint64_t,
                                   CUdriverProcAddressQueryResult *);

static void bind_driver(enum vtc_lookup how)
{
	memset(&vtc, 0, sizeof vtc);
	if (how == VTC_DIRECT) {
#ifdef VTC_LINKED
#define BIND_DIRECT(field, sym, v2, base, ver) *(void **)&vtc.field = (void *)&sym;
		VTC_FUNCS(BIND_DIRECT)
#undef BIND_DIRECT
		return;
#else
		die("--lookup direct needs the linked build");
#endif
	}
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		die("cannot load libcuda.so.1: %s", dlerror());
	if (how == VTC_DLSYM) {
#define BIND_DLSYM(field, sym, v2, base, ver)                                 \
	if (!(*(void **)&vtc.field = dlsym(lib, v2)))                             \
		die("libcuda.so.1 has no %s", v2);
		VTC_FUNCS(BIND_DLSYM)
#undef BIND_DLSYM
		return;
	}
	get_proc_v2_fn get_proc = (get_proc_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
	if (!get_proc)
		die("libcuda.so.1 has no cuGetProcAddress_v2");
#define BIND_GETPROC(field, sym, v2, base, ver)                                          \
	{                                                                                    \
		CUdriverProcAddressQueryResult st;                                               \
		if (get_proc(base, (void **)&vtc.field, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) \
		        != CUDA_SUCCESS || !vtc.field)                                           \
			die("cuGetProcAddress_v2 cannot resolve %s", base);                      \
	}
	VTC_FUNCS(BIND_GETPROC)
#undef BIND_GETPROC
}

/* ---- options ------------------------------------------------------------ */

static const char *opt_value(const char *name)
{
	for (int i = 1; i + 1 < S.argc; i++)
		if (!strcmp(S.argv[i], name))
			return S.argv[i + 1];
	return NULL;
}

int vtc_opt_flag(const char *name)
{
	for (int i = 1; i < S.argc; i++)
		if (!strcmp(S.argv[i], name))
			return 1;
	return 0;
}

uint64_t vtc_opt_size(const char *name, uint64_t dflt)
{
	const char *v = opt_value(name);
	if (!v)
		return dflt;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	uint64_t unit = 1;
	switch (*end) {
	case 'K': case 'k': unit = KIB; end++; break;
	case 'M': case 'm': unit = MIB; end++; break;
	case 'G': case 'g': unit = 1024 * MIB; end++; break;
	default: break;
	}
	if (errno || end == v || *end)
		die("%s wants a number or size, not '%s'", name, v);
	return x * unit;
}

int vtc_markers(void) { return S.markers; }

void vtc_start(int argc, char **argv, const char *job, int devices, enum vtc_lookup default_lookup)
{
	static const char *const lookups[] = {"direct", "dlsym", "getproc"};
	S.argc = argc;
	S.argv = argv;
	S.job = job;
	S.truth_path = opt_value("--truth");
	enum vtc_lookup how = default_lookup;
	const char *l = opt_value("--lookup");
	if (l) {
		int found = 0;
		for (int i = 0; i < 3; i++)
			if (!strcmp(l, lookups[i]))
				how = (enum vtc_lookup)i, found = 1;
		if (!found)
			die("--lookup direct|dlsym|getproc, not '%s'", l);
	}
	if (vtc_opt_flag("--no-markers"))
		S.markers = 0;
	if (vtc_opt_flag("--markers"))
		S.markers = 1;
	if (S.markers)
		*(void **)&S.mark = dlsym(RTLD_DEFAULT, "vramtrace_mark");
	bind_driver(how);
	VTC_CHECK(vtc.Init(0));
	int n = 0;
	VTC_CHECK(vtc.DeviceGetCount(&n));
	if (n < devices)
		die("%d devices needed, the driver has %d (VT_SIM_DEVICES)", devices, n);
	for (int d = 0; d < devices; d++) {
		CUdevice dev;
		VTC_CHECK(vtc.DeviceGet(&dev, d));
		VTC_CHECK(vtc.PrimaryCtxRetain(&vtc_ctx[d], dev));
	}
	vtc_use(0);
	vtc_line("config job=%s lookup=%s markers=%d devices=%d", job, lookups[how], S.markers, devices);
}

void vtc_use(int dev)
{
	VTC_CHECK(vtc.CtxSetCurrent(vtc_ctx[dev]));
}

/* ---- truth records ------------------------------------------------------ */

static int push(struct rec r)
{
	pthread_mutex_lock(&S.lock);
	if (S.n == S.cap) {
		S.cap = S.cap ? 2 * S.cap : 1024;
		S.r = realloc(S.r, S.cap * sizeof *S.r);
		if (!S.r)
			die("out of host memory");
	}
	if (r.type == R_ALLOC)
		r.order = S.order++;
	int i = (int)S.n;
	S.r[S.n++] = r;
	pthread_mutex_unlock(&S.lock);
	return i;
}

int vtc_record_of(int dev, uint64_t p)
{
	pthread_mutex_lock(&S.lock);
	int found = -1;
	for (size_t i = S.n; i-- > 0;)
		if (S.r[i].type == R_ALLOC && S.r[i].dev == dev && S.r[i].addr == p) {
			found = (int)i;
			break;
		}
	pthread_mutex_unlock(&S.lock);
	return found;
}

void vtc_set_category(int record, enum vtc_cat cat)
{
	pthread_mutex_lock(&S.lock);
	if (record >= 0 && (size_t)record < S.n)
		S.r[record].cat = cat;
	pthread_mutex_unlock(&S.lock);
}

/* Allocation and its record under one lock: with threads, the truth's order
 * of allocations at one address is the driver's. */
CUdeviceptr vtc_alloc_async(int dev, uint64_t bytes, enum vtc_cat cat, CUstream s)
{
	CUdeviceptr p = 0;
	vtc_use(dev);
	VTC_CHECK(vtc.MemAllocAsync(&p, bytes, s));
	push((struct rec){.type = R_ALLOC, .dev = dev, .addr = p, .bytes = bytes, .cat = cat});
	return p;
}

CUresult vtc_try_alloc(int dev, uint64_t bytes, enum vtc_cat cat, CUdeviceptr *p)
{
	vtc_use(dev);
	*p = 0;
	CUresult rc = vtc.MemAlloc(p, bytes);
	if (rc == CUDA_SUCCESS)
		push((struct rec){.type = R_ALLOC, .dev = dev, .addr = *p, .bytes = bytes, .cat = cat});
	else
		vtc_line("failed_alloc %d %" PRIu64 " %s", dev, bytes, cat_names[cat]);
	return rc;
}

CUdeviceptr vtc_alloc(int dev, uint64_t bytes, enum vtc_cat cat)
{
	CUdeviceptr p = 0;
	VTC_CHECK(vtc_try_alloc(dev, bytes, cat, &p));
	return p;
}

void vtc_free(int dev, CUdeviceptr p)
{
	if (!p)
		return;
	vtc_use(dev);
	/* record first: another thread may be handed p again at once */
	push((struct rec){.type = R_FREE, .dev = dev, .addr = p});
	VTC_CHECK(vtc.MemFree(p));
}

void vtc_free_async(int dev, CUdeviceptr p, CUstream s)
{
	if (!p)
		return;
	vtc_use(dev);
	push((struct rec){.type = R_FREE, .dev = dev, .addr = p});
	VTC_CHECK(vtc.MemFreeAsync(p, s));
}

void vtc_part(int dev, CUdeviceptr p, uint64_t bytes, enum vtc_cat cat)
{
	push((struct rec){.type = R_PART, .dev = dev, .addr = p, .bytes = bytes, .cat = cat});
}

void vtc_part_free(int dev, CUdeviceptr p)
{
	push((struct rec){.type = R_PART_FREE, .dev = dev, .addr = p});
}

CUmemGenericAllocationHandle vtc_vmm_create(int dev, uint64_t bytes, enum vtc_cat cat)
{
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	CUmemGenericAllocationHandle h = 0;
	vtc_use(dev);
	VTC_CHECK(vtc.MemCreate(&h, bytes, &prop, 0));
	push((struct rec){.type = R_ALLOC, .dev = dev, .addr = (uint64_t)h, .bytes = bytes, .cat = cat});
	return h;
}

void vtc_vmm_release(int dev, CUmemGenericAllocationHandle h)
{
	vtc_use(dev);
	push((struct rec){.type = R_FREE, .dev = dev, .addr = (uint64_t)h});
	VTC_CHECK(vtc.MemRelease(h));
}

void vtc_vmm_map(int dev, CUdeviceptr va, uint64_t bytes, CUmemGenericAllocationHandle h)
{
	vtc_use(dev);
	VTC_CHECK(vtc.MemMap(va, bytes, 0, h, 0));
	CUmemAccessDesc acc;
	memset(&acc, 0, sizeof acc);
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = dev;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	VTC_CHECK(vtc.MemSetAccess(va, bytes, &acc, 1));
	vtc_line("mapped %d 0x%llx 0x%llx %" PRIu64, dev, (unsigned long long)h,
	         (unsigned long long)va, bytes);
}

void vtc_line(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = NULL;
	if (vasprintf(&text, fmt, ap) < 0)
		die("out of host memory");
	va_end(ap);
	push((struct rec){.type = R_LINE, .text = text});
}

/* ---- copies --------------------------------------------------------------- */

const void *vtc_host(uint64_t bytes)
{
	pthread_mutex_lock(&S.lock);
	if (bytes > S.host_bytes) {
		if (S.host) {
			unsigned char **kept = realloc(S.retired, (S.nretired + 1) * sizeof *kept);
			if (!kept)
				die("no host memory to keep an outgrown buffer");
			S.retired = kept;
			S.retired[S.nretired++] = S.host;
		}
		S.host = malloc(bytes);
		if (!S.host)
			die("no host memory for %" PRIu64 " bytes", bytes);
		memset(S.host, 0x5a, bytes);
		S.host_bytes = bytes;
	}
	const void *h = S.host;
	pthread_mutex_unlock(&S.lock);
	return h;
}

void vtc_htod(int dev, CUdeviceptr dst, uint64_t bytes)
{
	const void *h = vtc_host(bytes);
	vtc_use(dev);
	VTC_CHECK(vtc.MemcpyHtoD(dst, h, bytes));
}

void vtc_htod_from(int dev, CUdeviceptr dst, const void *src, uint64_t bytes, CUstream s)
{
	vtc_use(dev);
	if (s)
		VTC_CHECK(vtc.MemcpyHtoDAsync(dst, src, bytes, s));
	else
		VTC_CHECK(vtc.MemcpyHtoD(dst, src, bytes));
}

void vtc_dtoh(int dev, CUdeviceptr src, uint64_t bytes)
{
	static unsigned char sink[1 << 16];
	vtc_use(dev);
	for (uint64_t done = 0; done < bytes; done += sizeof sink) {
		uint64_t n = bytes - done < sizeof sink ? bytes - done : sizeof sink;
		VTC_CHECK(vtc.MemcpyDtoH(sink, src + done, n));
	}
}

void vtc_dtod(int dev, CUdeviceptr dst, CUdeviceptr src, uint64_t bytes)
{
	vtc_use(dev);
	VTC_CHECK(vtc.MemcpyDtoD(dst, src, bytes));
}

void vtc_zero(int dev, CUdeviceptr dst, uint64_t bytes)
{
	vtc_use(dev);
	VTC_CHECK(vtc.MemsetD8(dst, 0, bytes));
}

void vtc_run_ranks(int n, void *(*rank)(void *))
{
	pthread_t th[VTC_MAX_DEVICES];
	if (n > VTC_MAX_DEVICES)
		die("%d ranks, at most %d", n, VTC_MAX_DEVICES);
	for (int r = 0; r < n; r++)
		if (pthread_create(&th[r], NULL, rank, (void *)(intptr_t)r) != 0)
			die("cannot start rank %d", r);
	for (int r = 0; r < n; r++)
		pthread_join(th[r], NULL);
}

void vtc_mark(const char *text)
{
	if (S.mark)
		S.mark(text);
}

void vtc_step(int s)
{
	char text[32];
	snprintf(text, sizeof text, "step %d", s);
	vtc_mark(text);
}

/* ---- the truth file ------------------------------------------------------- */

void vtc_finish(void)
{
	if (!S.truth_path)
		return;
	FILE *f = fopen(S.truth_path, "w");
	if (!f)
		die("cannot write %s: %s", S.truth_path, strerror(errno));
	fprintf(f, "# vramtrace corpus ground truth:");
	for (int i = 0; i < S.argc; i++)
		fprintf(f, " %s", S.argv[i]);
	fputc('\n', f);
	for (size_t i = 0; i < S.n; i++) {
		const struct rec *r = &S.r[i];
		switch (r->type) {
		case R_ALLOC:
			fprintf(f, "alloc %d 0x%" PRIx64 " %" PRIu64 " %s %" PRIu64 "\n", r->dev, r->addr,
			        r->bytes, cat_names[r->cat], r->order);
			break;
		case R_FREE:
			fprintf(f, "free %d 0x%" PRIx64 "\n", r->dev, r->addr);
			break;
		case R_PART:
			fprintf(f, "part %d 0x%" PRIx64 " %" PRIu64 " %s\n", r->dev, r->addr, r->bytes,
			        cat_names[r->cat]);
			break;
		case R_PART_FREE:
			fprintf(f, "part_free %d 0x%" PRIx64 "\n", r->dev, r->addr);
			break;
		case R_LINE:
			fprintf(f, "%s\n", r->text);
			break;
		}
	}
	if (fclose(f) != 0)
		die("writing %s failed", S.truth_path);
}
