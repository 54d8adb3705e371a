/* Internal state of the simulated CUDA driver (tests/simdriver).
 *
 * One mutex (sim_lock) protects everything below except the per-thread
 * context stack: this is a test double, so simplicity beats scalability.
 * Device memory is modelled as:
 *   - per device a VA *window* reserved PROT_NONE (so fake device addresses
 *     never alias a host address and a host dereference faults, as on a GPU)
 *     plus a same-sized MAP_NORESERVE *backing* mapping that holds the bytes of
 *     plain allocations (window offset == backing offset);
 *   - VMM physical handles carry their own backing mapping;
 *   - one global tree of live ranges (allocations and VMM mappings; they
 *     never overlap) answers "which allocation holds this address" for
 *     copies and cuPointerGetAttribute. */
#ifndef VTSIM_INTERNAL_H
#define VTSIM_INTERNAL_H

/* Expose the legacy (32-bit ABI, _v1) declarations and typedefs exactly as the
 * driver itself is compiled, and keep the API names un-#defined. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define VTSIM_MAX_DEVICES 8
#define VTSIM_ALIGN 256u                    /* allocation alignment */
#define VTSIM_GRANULARITY (2u << 20)        /* VMM granularity: 2 MiB */
#define VTSIM_PITCH_ALIGN 512u
#define VTSIM_CTX_STACK 16

#define VTSIM_HIDDEN __attribute__((visibility("hidden")))
/* Code that may run inside an ifunc resolver, before any sanitizer runtime is
 * initialised: no instrumentation, no libc calls. */
#define VTSIM_NOSAN __attribute__((no_sanitize("address", "undefined", "thread")))

#define SIM_TRY(expr)                                                          \
	do {                                                                   \
		CUresult sim_try_r_ = (expr);                                  \
		if (sim_try_r_ != CUDA_SUCCESS)                                \
			return sim_try_r_;                                     \
	} while (0)

/* ---- declarations of every implementation, from its exact PFN type ----- */
#define VTSIM(base, version, per_thread, symbol, pfn)                          \
	VTSIM_HIDDEN extern __typeof__(*(pfn)0) sim_##symbol;
#include "sim_exports.def"
#undef VTSIM

/* ---- handles: cuda.h leaves these structs incomplete ------------------- */
struct CUctx_st {
	int device;
	int valid;
	int primary;
	unsigned int flags;
	int retains; /* primary: cuDevicePrimaryCtxRetain count */
	struct CUctx_st *next_all;
};

struct CUstream_st {
	struct CUctx_st *ctx;
	int valid;
	unsigned int flags;
	int priority;
	unsigned long long id;
	struct CUstream_st *next_all;
};

struct CUevent_st {
	struct CUctx_st *ctx;
	int valid;
	unsigned int flags;
	unsigned long long recorded_ns; /* 0: never recorded */
	struct CUevent_st *next_all;
};

/* Pinned host memory (cuMemAllocHost/cuMemHostAlloc): host bytes, no charge. */
struct sim_host {
	void *ptr;
	size_t size;
	struct CUctx_st *ctx;
	struct sim_host *next_all;
};

struct CUmemPoolHandle_st {
	int device;
	int valid;
	int is_default;
	size_t live_bytes;
	struct CUmemPoolHandle_st *next_all;
};

struct CUarray_st {
	int device;
	int valid;
	size_t charged;
	size_t row_bytes;   /* width * element size: the array's pitch */
	size_t rows;        /* height (1 for 1D): rows per layer */
	unsigned char *bytes; /* linear storage, row after row, layer after layer */
	struct CUarray_st *next_all;
};

struct CUmipmappedArray_st {
	int device;
	int valid;
	size_t charged;
	struct CUmipmappedArray_st *next_all;
};

/* A VMM physical allocation (cuMemCreate). */
struct sim_handle {
	int device;
	int released; /* cuMemRelease called */
	int maps;     /* live cuMemMap mappings referencing it */
	size_t size;
	unsigned char *backing;
	struct sim_handle *next_all;
};

enum sim_range_kind { SIM_RANGE_ALLOC, SIM_RANGE_MANAGED, SIM_RANGE_POOL, SIM_RANGE_MAPPING };

/* A live device address range that holds bytes. */
struct sim_range {
	CUdeviceptr start;
	size_t size;    /* requested size: copies past it are rejected */
	size_t carved;  /* VA taken from the window (0 for mappings) */
	size_t charged; /* bytes charged against capacity (0 for mappings) */
	unsigned char *host;
	int device;
	enum sim_range_kind kind;
	struct CUctx_st *ctx;
	struct CUmemPoolHandle_st *pool;
	struct sim_handle *handle;
	unsigned long long buffer_id;
};

/* A VA-only reservation (cuMemAddressReserve). */
struct sim_reservation {
	CUdeviceptr start;
	size_t size;
	int device; /* window it was carved from */
};

struct sim_extent {
	size_t off, len;
};

struct sim_device {
	CUdeviceptr base; /* fake device address of window offset 0 */
	size_t window;
	unsigned char *reserve; /* PROT_NONE mapping that owns the fake VA */
	unsigned char *backing;
	size_t capacity;
	size_t charged;
	int context_charged; /* VT_SIM_CONTEXT_RESERVE taken at its first context */
	size_t live_objects;
	struct sim_extent *free; /* sorted by off, coalesced */
	size_t nfree, capfree;
	struct CUctx_st primary;
	struct CUmemPoolHandle_st default_pool;
	struct CUmemPoolHandle_st *current_pool;
};

struct sim_state {
	int initialized;
	int ndev;
	int driver_version;
	int nested; /* VT_SIM_NESTED: entry points that call other entry points */
	size_t capacity;
	struct sim_device dev[VTSIM_MAX_DEVICES];
	void *range_tree; /* tsearch tree of struct sim_range *, by address */
	size_t nranges;
	struct sim_reservation *resv; /* sorted by start */
	size_t nresv, capresv;
	unsigned long long next_buffer_id;
	struct CUctx_st *ctxs;
	struct CUstream_st *streams;
	unsigned long long next_stream_id;
	struct CUevent_st *events;
	struct sim_host *hosts;
	struct CUmemPoolHandle_st *pools;
	struct CUarray_st *arrays;
	struct CUmipmappedArray_st *mipmaps;
	struct sim_handle *handles;
};

VTSIM_HIDDEN extern struct sim_state sim;
VTSIM_HIDDEN extern pthread_mutex_t sim_lock;
VTSIM_HIDDEN extern unsigned long sim_meminfo_calls; /* sim_alloc.c */

/* sim_config.c: environment */
VTSIM_HIDDEN size_t sim_env_capacity(void);
VTSIM_HIDDEN size_t sim_env_context_reserve(void);
VTSIM_HIDDEN int sim_env_devices(void);
VTSIM_HIDDEN int sim_env_driver_version(void);
VTSIM_HIDDEN int sim_env_nested(void);
VTSIM_HIDDEN int sim_env_hides(const char *base, const char *symbol, int version);
VTSIM_HIDDEN int sim_parse_size(const char *text, size_t *out);

/* sim_space.c: windows, VA carving, live ranges (sim_lock held) */
VTSIM_HIDDEN CUresult sim_space_init(void);
VTSIM_HIDDEN void sim_space_teardown(void);
VTSIM_HIDDEN int sim_window_of(CUdeviceptr addr);
VTSIM_HIDDEN CUresult sim_va_carve(int dev, size_t size, size_t align, CUdeviceptr hint, CUdeviceptr *out);
VTSIM_HIDDEN void sim_va_release(int dev, CUdeviceptr addr, size_t size);
VTSIM_HIDDEN struct sim_range *sim_range_insert(const struct sim_range *r);
VTSIM_HIDDEN void sim_range_remove(struct sim_range *r);
VTSIM_HIDDEN struct sim_range *sim_range_find(CUdeviceptr addr);
VTSIM_HIDDEN struct sim_range *sim_range_exact(CUdeviceptr start);
VTSIM_HIDDEN int sim_range_overlaps(CUdeviceptr start, size_t size);
VTSIM_HIDDEN struct sim_reservation *sim_resv_find(CUdeviceptr addr);
VTSIM_HIDDEN CUresult sim_resv_insert(const struct sim_reservation *r);
VTSIM_HIDDEN void sim_resv_remove(struct sim_reservation *r);
VTSIM_HIDDEN CUresult sim_charge(int dev, size_t bytes);
VTSIM_HIDDEN void sim_uncharge(int dev, size_t bytes);

/* sim_context.c: init and contexts */
VTSIM_HIDDEN CUresult sim_need_init(void);
VTSIM_HIDDEN CUresult sim_need_ctx(struct CUctx_st **out);
VTSIM_HIDDEN CUresult sim_stream_ctx(CUstream stream, struct CUctx_st **out);
VTSIM_HIDDEN int sim_ctx_valid(struct CUctx_st *ctx);
VTSIM_HIDDEN void sim_reset_thread(void);
VTSIM_HIDDEN CUresult sim_stream_create(CUstream *phStream, unsigned int flags, int priority);

/* sim_host.c: pinned host memory (sim_lock held) */
VTSIM_HIDDEN const struct sim_host *sim_host_find(const void *p);
VTSIM_HIDDEN void sim_host_free_all(void);

/* sim_alloc.c: the common allocation path */
VTSIM_HIDDEN CUresult sim_alloc_range(struct CUctx_st *ctx, int dev, size_t size, enum sim_range_kind kind,
				      struct CUmemPoolHandle_st *pool, CUdeviceptr *out);
VTSIM_HIDDEN CUresult sim_free_range(CUdeviceptr ptr);

/* sim_array.c: the array handle, if live (sim_lock held) */
VTSIM_HIDDEN struct CUarray_st *sim_array_find(CUarray a);
VTSIM_HIDDEN void sim_array_free_all(void);

/* sim_copy.c */
VTSIM_HIDDEN CUresult sim_copy_linear(CUdeviceptr dst, CUdeviceptr src, size_t n);

static inline size_t sim_round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

#endif
