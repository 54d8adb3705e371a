/* A simulated training job over the CUDA driver API, with known ground truth.
 *
 * It allocates, uploads and frees device memory the way a deep-learning job
 * does (weights, dataset, prefetched batches, activations, gradients,
 * optimizer state) and writes what each allocation truly is to --truth FILE,
 * so the analyzer's classification is a measured number. It computes
 * nothing: the device memory is never read. Options cover the cases that
 * break naive classification rules (see tests/analyzer/matrix.txt).
 *
 * The driver is found the three ways a real job finds it (--lookup):
 *   direct   linked against libcuda.so.1 (only in the trainer-linked build)
 *   dlsym    dlopen("libcuda.so.1") + dlsym of the _v2 names (TensorFlow)
 *   getproc  cuGetProcAddress_v2 by base name and version (CUDA runtime)
 *
 * Ground truth file (one line each, '#' comments):
 *   config KEY=VALUE ...
 *   alloc DEVICE ADDR BYTES CATEGORY ORDER     (ADDR hex; ORDER = call index)
 *   dataset DEVICE BYTES COPIES                (whole-dataset uploads)
 * An allocation is identified by (DEVICE, ADDR, n-th allocation at ADDR).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool_alloc.h"

#define MAX_LAYERS 64
#define MAX_DEVICES 8
#define KIB 1024ull
#define MIB (1024ull * 1024ull)

/* ---- options ---------------------------------------------------------- */

enum lookup { LOOKUP_DIRECT, LOOKUP_DLSYM, LOOKUP_GETPROC };
enum dataset_mode { DS_WHOLE, DS_STREAM, DS_SLICED };

struct options {
	uint64_t dataset_bytes, batch_bytes, act_bytes, upload_chunk, pool_bytes;
	uint64_t layer_bytes[MAX_LAYERS];
	int layers, steps, prefetch, devices, opt_slots;
	int first_device; /* --first-device: the first device ordinal used */
	uint64_t batch; /* --batch: samples per step, 0 = not given */
	enum lookup lookup;
	int pool_mode;
	enum dataset_mode dataset;
	int weights_from_host, flat_grads, markers, opt_early, dataset_first;
	int step_sleep_ms;       /* pause per step: time to kill the job mid-run */
	const char *truth_path;
};

static void usage(FILE *to)
{
	fprintf(to,
	        "usage: vt-trainer [options]        (SIZE: bytes, or with a K/M/G suffix)\n"
	        "  --dataset-bytes SIZE  dataset size (default 64M)\n"
	        "  --batch-bytes SIZE    bytes uploaded per step and device (default 2M)\n"
	        "  --steps N             training steps (default 10)\n"
	        "  --layers N            layers (default 4)\n"
	        "  --layer-bytes LIST    weight bytes per layer: 4M,2M,...; SIZExN (N equal\n"
	        "                        layers); or one SIZE for all --layers\n"
	        "  --act-bytes SIZE      activation bytes per layer and step (default 768K)\n"
	        "  --batch N             N samples per step: --batch-bytes and --act-bytes are\n"
	        "                        then per sample, and the job marks \"batch_size N\"\n"
	        "  --prefetch N          batches alive at once, the one in use included\n"
	        "                        (default 2; 1 = synchronous upload)\n"
	        "  --devices N           data-parallel replicas, dataset replicated (default 1)\n"
	        "  --first-device N      use devices N.. (one rank per device: N = LOCAL_RANK)\n"
	        "  --optimizer sgd|momentum|adam   0, 1 or 2 state slots per weight (default adam)\n"
	        "  --lookup direct|dlsym|getproc   how the driver is found (default getproc)\n"
	        "  --alloc per-tensor|pool         pool: one region, sub-allocated inside\n"
	        "  --pool-bytes SIZE     pool region size (default: what the job needs + 25%%)\n"
	        "  --dataset whole|stream|sliced   uploaded whole / per batch / whole and\n"
	        "                        sliced on the device (default stream)\n"
	        "  --upload-chunk SIZE   upload the whole dataset in chunks (default one copy)\n"
	        "  --dataset-first       upload the dataset before creating the weights\n"
	        "  --weights device|host initialised on the device or loaded from the host\n"
	        "  --flat-grads          one flat gradient bucket per step (DDP, XLA)\n"
	        "  --opt-early           optimizer state created before the first step (JAX)\n"
	        "  --markers             call vramtrace_mark(\"step N\") (default)\n"
	        "  --no-markers          do not\n"
	        "  --step-sleep-ms N     sleep N ms in every step (to interrupt a run)\n"
	        "  --truth FILE          write the ground truth here\n");
}

static uint64_t parse_u64(const char *opt, const char *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v || *end) {
		fprintf(stderr, "vt-trainer: %s needs a number, not '%s'\n", opt, v);
		exit(2);
	}
	return x;
}

/* "4096", "768K", "64M", "1G" */
static uint64_t parse_size(const char *opt, const char *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	uint64_t unit = 1;
	switch (*end) {
	case 'k': case 'K': unit = KIB; end++; break;
	case 'm': case 'M': unit = MIB; end++; break;
	case 'g': case 'G': unit = 1024 * MIB; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end += *end == 'i' ? 1 : 0;
	if (*end == 'B')
		end++;
	if (errno || end == v || *end || x > (UINT64_MAX / unit)) {
		fprintf(stderr, "vt-trainer: %s needs a size (4096, 768K, 64M, 1G), not '%s'\n", opt, v);
		exit(2);
	}
	return x * unit;
}

static void die_usage(const char *msg)
{
	fprintf(stderr, "vt-trainer: %s\n", msg);
	exit(2);
}

/* --layer-bytes: LIST, SIZExCOUNT, or one SIZE for all --layers layers. */
static void apply_layers(struct options *o, const char *v, int layers)
{
	static const uint64_t kib[] = {4096, 3072, 2048, 1024, 3584, 2560, 1536, 512};
	if (!v) { /* defaults: layers of different sizes */
		o->layers = layers;
		for (int i = 0; i < layers; i++)
			o->layer_bytes[i] = kib[i % 8] * KIB;
		return;
	}
	const char *x = strchr(v, 'x');
	char *copy = strdup(v), *save = NULL;
	if (x) {
		copy[x - v] = 0;
		uint64_t size = parse_size("--layer-bytes", copy);
		layers = (int)parse_u64("--layer-bytes", x + 1);
		free(copy);
		if (layers < 1 || layers > MAX_LAYERS)
			die_usage("--layer-bytes SIZExN wants 1..64 layers");
		o->layers = layers;
		for (int i = 0; i < layers; i++)
			o->layer_bytes[i] = size;
		return;
	}
	o->layers = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (o->layers == MAX_LAYERS)
			die_usage("at most 64 layers");
		o->layer_bytes[o->layers++] = parse_size("--layer-bytes", t);
	}
	free(copy);
	if (o->layers == 1 && layers > 1) { /* one size for all layers */
		for (int i = 1; i < layers; i++)
			o->layer_bytes[i] = o->layer_bytes[0];
		o->layers = layers;
	}
	if (!o->layers)
		die_usage("--layer-bytes is empty");
}

static int pick(const char *opt, const char *v, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v, names[i]))
			return i;
	fprintf(stderr, "vt-trainer: bad value '%s' for %s\n", v, opt);
	exit(2);
}

/* --batch N: what a step uploads and keeps as activations grows with the
 * samples in it, the way a real job's does (the per-sample sizes given). */
static void apply_batch(struct options *o)
{
	if (!o->batch)
		return;
	if (o->batch > (1u << 20) || o->batch_bytes > UINT64_MAX / o->batch ||
	    o->act_bytes > UINT64_MAX / o->batch)
		die_usage("--batch wants 1..1048576 samples of a size that fits");
	o->batch_bytes *= o->batch;
	o->act_bytes *= o->batch;
}

static void parse_options(struct options *o, int argc, char **argv)
{
	static const char *const lookups[] = {"direct", "dlsym", "getproc"};
	static const char *const allocs[] = {"per-tensor", "pool"};
	static const char *const datasets[] = {"whole", "stream", "sliced"};
	static const char *const weights[] = {"device", "host"};
	static const char *const optimizers[] = {"sgd", "momentum", "adam"};
	const char *layer_spec = NULL;
	int layers = 4;
	memset(o, 0, sizeof *o);
	o->dataset_bytes = 64 * MIB;
	o->batch_bytes = 2 * MIB;
	o->act_bytes = 768 * KIB;
	o->steps = 10;
	o->prefetch = 2;
	o->devices = 1;
	o->opt_slots = 2;
	o->lookup = LOOKUP_GETPROC;
	o->dataset = DS_STREAM;
	o->markers = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define VALUE() (v ? (i++, v) : (fprintf(stderr, "vt-trainer: %s needs a value\n", a), exit(2), ""))
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--dataset-bytes")) o->dataset_bytes = parse_size(a, VALUE());
		else if (!strcmp(a, "--batch-bytes")) o->batch_bytes = parse_size(a, VALUE());
		else if (!strcmp(a, "--act-bytes")) o->act_bytes = parse_size(a, VALUE());
		else if (!strcmp(a, "--batch")) {
			if (!(o->batch = parse_u64(a, VALUE())))
				die_usage("--batch wants 1..1048576 samples");
		}
		else if (!strcmp(a, "--steps")) o->steps = (int)parse_u64(a, VALUE());
		else if (!strcmp(a, "--layers")) layers = (int)parse_u64(a, VALUE());
		else if (!strcmp(a, "--layer-bytes")) layer_spec = VALUE();
		else if (!strcmp(a, "--prefetch")) o->prefetch = (int)parse_u64(a, VALUE());
		else if (!strcmp(a, "--devices")) o->devices = (int)parse_u64(a, VALUE());
		else if (!strcmp(a, "--first-device")) o->first_device = (int)parse_u64(a, VALUE());
		else if (!strcmp(a, "--optimizer")) o->opt_slots = pick(a, VALUE(), optimizers, 3);
		else if (!strcmp(a, "--lookup")) o->lookup = pick(a, VALUE(), lookups, 3);
		else if (!strcmp(a, "--alloc")) o->pool_mode = pick(a, VALUE(), allocs, 2);
		else if (!strcmp(a, "--pool-bytes")) o->pool_bytes = parse_size(a, VALUE());
		else if (!strcmp(a, "--dataset")) o->dataset = pick(a, VALUE(), datasets, 3);
		else if (!strcmp(a, "--upload-chunk")) o->upload_chunk = parse_size(a, VALUE());
		else if (!strcmp(a, "--dataset-first")) o->dataset_first = 1;
		else if (!strcmp(a, "--weights")) o->weights_from_host = pick(a, VALUE(), weights, 2);
		else if (!strcmp(a, "--flat-grads")) o->flat_grads = 1;
		else if (!strcmp(a, "--opt-early")) o->opt_early = 1;
		else if (!strcmp(a, "--markers")) o->markers = 1;
		else if (!strcmp(a, "--no-markers")) o->markers = 0;
		else if (!strcmp(a, "--step-sleep-ms")) o->step_sleep_ms = (int)parse_u64(a, VALUE());
		else if (!strcmp(a, "--truth")) o->truth_path = VALUE();
		else {
			fprintf(stderr, "vt-trainer: unknown option '%s'\n", a);
			usage(stderr);
			exit(2);
		}
#undef VALUE
	}
	if (layers < 1 || layers > MAX_LAYERS)
		die_usage("--layers wants 1..64");
	apply_layers(o, layer_spec, layers);
	apply_batch(o);
	if (o->prefetch < 1)
		o->prefetch = 1;
	if (o->prefetch > 32)
		die_usage("--prefetch is at most 32");
	if (o->devices < 1 || o->devices > MAX_DEVICES || o->first_device >= MAX_DEVICES ||
	    o->steps < 1 || o->batch_bytes == 0 ||
	    o->dataset_bytes < o->batch_bytes)
		die_usage("need 1..8 devices, >= 1 step and a dataset at least one batch large");
}

/* ---- the driver, found the way --lookup says -------------------------- */

struct driver {
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
};

/* (field offset, exported _v2 name, base name, version asked through
 * cuGetProcAddress) — one table for both run-time lookup paths */
#define DRIVER_FUNCS(X)                                                        \
	X(Init, "cuInit", "cuInit", 2000)                                          \
	X(DeviceGetCount, "cuDeviceGetCount", "cuDeviceGetCount", 2000)            \
	X(DeviceGet, "cuDeviceGet", "cuDeviceGet", 2000)                           \
	X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", 7000) \
	X(CtxSetCurrent, "cuCtxSetCurrent", "cuCtxSetCurrent", 4000)               \
	X(MemAlloc, "cuMemAlloc_v2", "cuMemAlloc", 3020)                           \
	X(MemFree, "cuMemFree_v2", "cuMemFree", 3020)                              \
	X(MemcpyHtoD, "cuMemcpyHtoD_v2", "cuMemcpyHtoD", 3020)                     \
	X(MemcpyDtoD, "cuMemcpyDtoD_v2", "cuMemcpyDtoD", 3020)

typedef CUresult (*get_proc_v2_fn)(const char *, void **, int, cuuint64_t,
                                   CUdriverProcAddressQueryResult *);

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("vt-trainer: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

#ifdef VT_TRAINER_LINKED
static void bind_direct(struct driver *d)
{
	/* the symbols the program was linked against (resolved by ld.so, so a
	 * preloaded shim's exports win) */
	d->Init = cuInit;
	d->DeviceGetCount = cuDeviceGetCount;
	d->DeviceGet = cuDeviceGet;
	d->PrimaryCtxRetain = cuDevicePrimaryCtxRetain;
	d->CtxSetCurrent = cuCtxSetCurrent;
	d->MemAlloc = cuMemAlloc_v2;
	d->MemFree = cuMemFree_v2;
	d->MemcpyHtoD = cuMemcpyHtoD_v2;
	d->MemcpyDtoD = cuMemcpyDtoD_v2;
}
#endif

static void bind_driver(struct driver *d, enum lookup how)
{
	memset(d, 0, sizeof *d);
	if (how == LOOKUP_DIRECT) {
#ifdef VT_TRAINER_LINKED
		bind_direct(d);
		return;
#else
		die("--lookup direct needs the trainer-linked build");
#endif
	}
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		die("cannot load libcuda.so.1: %s", dlerror());
	if (how == LOOKUP_DLSYM) {
#define BIND_DLSYM(field, v2, base, ver)                                 \
	if (!(*(void **)&d->field = dlsym(lib, v2)))                         \
		die("libcuda.so.1 has no %s", v2);
		DRIVER_FUNCS(BIND_DLSYM)
#undef BIND_DLSYM
		return;
	}
	get_proc_v2_fn get_proc = (get_proc_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
	if (!get_proc)
		die("libcuda.so.1 has no cuGetProcAddress_v2");
#define BIND_GETPROC(field, v2, base, ver)                                            \
	{                                                                                 \
		CUdriverProcAddressQueryResult st;                                            \
		if (get_proc(base, (void **)&d->field, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) \
		        != CUDA_SUCCESS || !d->field)                                         \
			die("cuGetProcAddress_v2 cannot resolve %s", base);                   \
	}
	DRIVER_FUNCS(BIND_GETPROC)
#undef BIND_GETPROC
}

#define CHECK(call)                                                         \
	do {                                                                    \
		CUresult rc_ = (call);                                              \
		if (rc_ != CUDA_SUCCESS)                                            \
			die("%s failed with CUresult %d", #call, (int)rc_);             \
	} while (0)

/* ---- device memory with ground truth ---------------------------------- */

enum category { C_DATASET, C_PREFETCH, C_WEIGHTS, C_OPTIMIZER, C_GRADIENTS, C_ACTIVATIONS, C_POOL };
static const char *const category_names[] = {
	"dataset", "prefetch", "weights", "optimizer", "gradients", "activations", "pool",
};

struct job {
	struct options o;
	struct driver drv;
	FILE *truth;
	uint64_t alloc_order;
	CUcontext ctx[MAX_DEVICES];
	struct pool pool[MAX_DEVICES];   /* pool mode: one region per device */
	CUdeviceptr region[MAX_DEVICES];
	unsigned char *host;             /* host staging: dataset or largest upload */
	uint64_t host_bytes;
	void (*mark)(const char *);
};

static void use_device(struct job *j, int dev)
{
	CHECK(j->drv.CtxSetCurrent(j->ctx[dev]));
}

__attribute__((noinline)) static CUdeviceptr driver_alloc(struct job *j, int dev, uint64_t bytes, enum category cat)
{
	CUdeviceptr p = 0;
	use_device(j, dev);
	CHECK(j->drv.MemAlloc(&p, bytes));
	if (j->truth)
		fprintf(j->truth, "alloc %d 0x%llx %" PRIu64 " %s %" PRIu64 "\n", dev,
		        (unsigned long long)p, bytes, category_names[cat], j->alloc_order);
	j->alloc_order++;
	return p;
}

/* (The allocation helpers are noinline so that stacks show the job's
 * functions the same way at every optimisation level.)
 * A tensor: a driver allocation in per-tensor mode, a piece of the device's
 * pool region in pool mode (the driver only ever sees the region). */
__attribute__((noinline)) static CUdeviceptr tensor_alloc(struct job *j, int dev, uint64_t bytes, enum category cat)
{
	if (!j->o.pool_mode)
		return driver_alloc(j, dev, bytes, cat);
	uint64_t off;
	if (pool_take(&j->pool[dev], bytes, &off) != 0)
		die("pool region of device %d exhausted (%" PRIu64 " bytes asked); raise --pool-mib",
		    dev, bytes);
	return j->region[dev] + off;
}

__attribute__((noinline)) static void tensor_free(struct job *j, int dev, CUdeviceptr p)
{
	if (!p)
		return;
	if (j->o.pool_mode) {
		pool_give(&j->pool[dev], p - j->region[dev]);
		return;
	}
	use_device(j, dev);
	CHECK(j->drv.MemFree(p));
}

__attribute__((noinline)) static void upload(struct job *j, int dev, CUdeviceptr dst, uint64_t host_off, uint64_t bytes,
                   uint64_t chunk)
{
	use_device(j, dev);
	if (!chunk)
		chunk = bytes;
	for (uint64_t done = 0; done < bytes; done += chunk) {
		uint64_t n = bytes - done < chunk ? bytes - done : chunk;
		uint64_t off = (host_off + done) % (j->host_bytes - n + 1);
		CHECK(j->drv.MemcpyHtoD(dst + done, j->host + off, n));
	}
}

/* ---- the job ------------------------------------------------------------ */

struct replica {
	CUdeviceptr weights[MAX_LAYERS], slots[2][MAX_LAYERS], dataset;
	CUdeviceptr batches[64];  /* ring of prefetched batches, by step % 64 */
};

static uint64_t weight_total(const struct options *o)
{
	uint64_t s = 0;
	for (int l = 0; l < o->layers; l++)
		s += o->layer_bytes[l];
	return s;
}

static void create_weights(struct job *j, int dev, struct replica *r)
{
	for (int l = 0; l < j->o.layers; l++) {
		r->weights[l] = tensor_alloc(j, dev, j->o.layer_bytes[l], C_WEIGHTS);
		if (j->o.weights_from_host) /* a checkpoint read on the host, then uploaded */
			upload(j, dev, r->weights[l], (uint64_t)l * 4096, j->o.layer_bytes[l], 0);
	}
}

static void create_dataset(struct job *j, int dev, struct replica *r)
{
	if (j->o.dataset == DS_STREAM)
		return;
	r->dataset = tensor_alloc(j, dev, j->o.dataset_bytes, C_DATASET);
	upload(j, dev, r->dataset, 0, j->o.dataset_bytes, j->o.upload_chunk);
	if (j->truth) {
		uint64_t chunk = j->o.upload_chunk ? j->o.upload_chunk : j->o.dataset_bytes;
		fprintf(j->truth, "dataset %d %" PRIu64 " %" PRIu64 "\n", dev, j->o.dataset_bytes,
		        (j->o.dataset_bytes + chunk - 1) / chunk);
	}
}

/* Optimizer state: PyTorch creates it in the first optimizer step, one
 * tensor per parameter and slot, parameter by parameter. */
static void create_optimizer(struct job *j, int dev, struct replica *r)
{
	for (int l = 0; l < j->o.layers; l++)
		for (int k = 0; k < j->o.opt_slots; k++)
			r->slots[k][l] = tensor_alloc(j, dev, j->o.layer_bytes[l], C_OPTIMIZER);
}

/* Batch for step s: in per-batch modes a buffer filled from the host. */
static void prefetch_batch(struct job *j, int dev, struct replica *r, int s)
{
	if (j->o.dataset == DS_SLICED || s >= j->o.steps)
		return;
	CUdeviceptr b = tensor_alloc(j, dev, j->o.batch_bytes, C_PREFETCH);
	upload(j, dev, b, (uint64_t)s * j->o.batch_bytes, j->o.batch_bytes, 0);
	r->batches[s % 64] = b;
}

static void train_step(struct job *j, int dev, struct replica *r, int s)
{
	const struct options *o = &j->o;
	CUdeviceptr act[MAX_LAYERS], grad[MAX_LAYERS], bucket = 0;
	/* `prefetch` batches alive at once, the one in use included: batch
	 * s+depth-1 is fetched now (depth 1 = synchronous upload) */
	prefetch_batch(j, dev, r, s + (o->prefetch > 1 ? o->prefetch - 1 : 0));
	/* forward: one activation per layer */
	for (int l = 0; l < o->layers; l++) {
		act[l] = tensor_alloc(j, dev, o->act_bytes, C_ACTIVATIONS);
		if (l == 0 && o->dataset == DS_SLICED) { /* the batch is a slice of the dataset */
			uint64_t nb = o->dataset_bytes / o->batch_bytes;
			uint64_t n = o->batch_bytes < o->act_bytes ? o->batch_bytes : o->act_bytes;
			use_device(j, dev);
			CHECK(j->drv.MemcpyDtoD(act[0], r->dataset + (s % nb) * o->batch_bytes, n));
		}
	}
	/* backward: gradients (one bucket, or one per weight), activations freed */
	if (o->flat_grads)
		bucket = tensor_alloc(j, dev, weight_total(o), C_GRADIENTS);
	for (int l = o->layers - 1; l >= 0; l--) {
		if (!o->flat_grads)
			grad[l] = tensor_alloc(j, dev, o->layer_bytes[l], C_GRADIENTS);
		tensor_free(j, dev, act[l]);
	}
	/* optimizer: state created lazily in the first step unless it exists */
	if (s == 0 && o->opt_slots && !o->opt_early)
		create_optimizer(j, dev, r);
	if (o->flat_grads)
		tensor_free(j, dev, bucket);
	else
		for (int l = 0; l < o->layers; l++)
			tensor_free(j, dev, grad[l]);
	/* the batch is consumed */
	if (o->dataset != DS_SLICED) {
		tensor_free(j, dev, r->batches[s % 64]);
		r->batches[s % 64] = 0;
	}
}

static uint64_t pool_need(const struct options *o)
{
	uint64_t w = weight_total(o);
	uint64_t need = w * (1 + (uint64_t)o->opt_slots) + w /* grads */ +
	                (uint64_t)o->layers * o->act_bytes + ((uint64_t)o->prefetch + 1) * o->batch_bytes;
	if (o->dataset != DS_STREAM)
		need += o->dataset_bytes;
	return need + need / 4 + MIB;
}

static void setup(struct job *j)
{
	struct options *o = &j->o;
	bind_driver(&j->drv, o->lookup);
	CHECK(j->drv.Init(0));
	int n = 0;
	CHECK(j->drv.DeviceGetCount(&n));
	if (n < o->first_device + o->devices)
		die("%d devices from %d asked, the driver has %d", o->devices, o->first_device, n);
	for (int d = 0; d < o->devices; d++) {
		CUdevice dev;
		CHECK(j->drv.DeviceGet(&dev, o->first_device + d));
		CHECK(j->drv.PrimaryCtxRetain(&j->ctx[d], dev));
	}
	j->host_bytes = o->dataset_bytes > weight_total(o) ? o->dataset_bytes : weight_total(o);
	j->host_bytes += 64 * KIB;
	j->host = malloc(j->host_bytes);
	if (!j->host)
		die("no host memory for %" PRIu64 " bytes", j->host_bytes);
	memset(j->host, 0x5a, j->host_bytes);
	if (o->markers)
		*(void **)&j->mark = dlsym(RTLD_DEFAULT, "vramtrace_mark");
	if (o->pool_mode) {
		uint64_t size = o->pool_bytes ? o->pool_bytes : pool_need(o);
		for (int d = 0; d < o->devices; d++) {
			j->region[d] = driver_alloc(j, d, size, C_POOL);
			pool_init(&j->pool[d], size, 256);
		}
	}
}

static void write_config(struct job *j, int argc, char **argv)
{
	const struct options *o = &j->o;
	static const char *const ds[] = {"whole", "stream", "sliced"};
	fprintf(j->truth, "# vramtrace trainer ground truth:");
	for (int i = 0; i < argc; i++)
		fprintf(j->truth, " %s", argv[i]);
	fprintf(j->truth,
	        "\nconfig mode=%s dataset=%s dataset_bytes=%" PRIu64 " batch_bytes=%" PRIu64
	        " steps=%d prefetch=%d devices=%d opt_slots=%d layers=%d weights=%s flat_grads=%d"
	        " opt_early=%d markers=%d\n",
	        o->pool_mode ? "pool" : "per-tensor", ds[o->dataset], o->dataset_bytes,
	        o->batch_bytes, o->steps, o->dataset == DS_SLICED ? 0 : o->prefetch, o->devices,
	        o->opt_slots, o->layers, o->weights_from_host ? "host" : "device", o->flat_grads,
	        o->opt_early, o->markers);
}

int main(int argc, char **argv)
{
	static struct job job;
	static struct replica rep[MAX_DEVICES];
	struct job *j = &job;
	parse_options(&j->o, argc, argv);
	const struct options *o = &j->o;
	if (o->truth_path) {
		j->truth = fopen(o->truth_path, "w");
		if (!j->truth)
			die("cannot write %s: %s", o->truth_path, strerror(errno));
		/* a line at a time: the truth of a job killed mid-run is complete
		 * up to the kill */
		setvbuf(j->truth, NULL, _IOLBF, 0);
		write_config(j, argc, argv);
	}
	setup(j);
	for (int d = 0; d < o->devices; d++) {
		if (o->dataset_first)
			create_dataset(j, d, &rep[d]);
		create_weights(j, d, &rep[d]);
		if (!o->dataset_first)
			create_dataset(j, d, &rep[d]);
		if (o->opt_early && o->opt_slots)
			create_optimizer(j, d, &rep[d]);
		for (int s = 0; s + 1 < o->prefetch && o->dataset != DS_SLICED; s++)
			prefetch_batch(j, d, &rep[d], s);
	}
	if (j->mark && o->batch) {
		char text[40];
		snprintf(text, sizeof text, "batch_size %" PRIu64, o->batch);
		j->mark(text);
	}
	for (int s = 0; s < o->steps; s++) {
		if (j->mark) {
			char text[32];
			snprintf(text, sizeof text, "step %d", s);
			j->mark(text);
		}
		for (int d = 0; d < o->devices; d++)
			train_step(j, d, &rep[d], s);
		if (o->step_sleep_ms) {
			struct timespec ts = {o->step_sleep_ms / 1000, (long)(o->step_sleep_ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	/* teardown: everything back, as a framework does at exit */
	for (int d = 0; d < o->devices; d++) {
		for (int l = 0; l < o->layers; l++) {
			tensor_free(j, d, rep[d].weights[l]);
			for (int k = 0; k < o->opt_slots; k++)
				tensor_free(j, d, rep[d].slots[k][l]);
		}
		tensor_free(j, d, rep[d].dataset);
		if (o->pool_mode) {
			use_device(j, d);
			CHECK(j->drv.MemFree(j->region[d]));
		}
	}
	if (j->truth && fclose(j->truth) != 0)
		die("writing %s failed", o->truth_path);
	printf("vt-trainer: %d steps on %d device(s), %" PRIu64 " driver allocations\n", o->steps,
	       o->devices, j->alloc_order);
	return 0;
}
