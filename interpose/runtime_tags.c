/* CUDA runtime entry points, wrapped only to TAG the driver events they
 * cause (vt_event.rt_api = VT_RT_*): the driver level stays the one source
 * of truth, so nothing is counted twice. The real function is the next
 * definition after the shim (libcudart); results and errno pass through.
 * The types are spelled as their ABI (cudaError_t is an int-sized enum,
 * streams and pools are pointers) so no runtime header renames anything. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#include "record_event.h" /* vt_rt_tag */
#include "routing.h"       /* vt_next_symbol */
#include "shim.h"

enum vt_rt_id {
#define VT_RT(id, sym) VT_RT_##sym = id,
#include "vramtrace/runtime_api.def"
};

typedef int vt_cuda_error; /* cudaError_t */
#define VT_CUDA_ERROR_INIT 3 /* cudaErrorInitializationError: no runtime */

/* X(tag, exported symbol, params, args): the _ptds/_ptsz exports of the
 * per-thread-stream build carry the same tag. */
#define VT_RT_WRAPS(X)                                                                                        \
	X(cudaMalloc, cudaMalloc, (void **p, size_t n), (p, n))                                               \
	X(cudaFree, cudaFree, (void *p), (p))                                                                 \
	X(cudaMallocAsync, cudaMallocAsync, (void **p, size_t n, void *s), (p, n, s))                         \
	X(cudaMallocAsync, cudaMallocAsync_ptsz, (void **p, size_t n, void *s), (p, n, s))                    \
	X(cudaFreeAsync, cudaFreeAsync, (void *p, void *s), (p, s))                                           \
	X(cudaFreeAsync, cudaFreeAsync_ptsz, (void *p, void *s), (p, s))                                      \
	X(cudaMemcpy, cudaMemcpy, (void *d, const void *s, size_t n, int k), (d, s, n, k))                    \
	X(cudaMemcpy, cudaMemcpy_ptds, (void *d, const void *s, size_t n, int k), (d, s, n, k))               \
	X(cudaMemcpyAsync, cudaMemcpyAsync, (void *d, const void *s, size_t n, int k, void *st), (d, s, n, k, st)) \
	X(cudaMemcpyAsync, cudaMemcpyAsync_ptsz, (void *d, const void *s, size_t n, int k, void *st),          \
	  (d, s, n, k, st))                                                                                    \
	X(cudaMallocManaged, cudaMallocManaged, (void **p, size_t n, unsigned f), (p, n, f))                  \
	X(cudaMallocPitch, cudaMallocPitch, (void **p, size_t *pitch, size_t w, size_t h), (p, pitch, w, h))  \
	X(cudaMallocFromPoolAsync, cudaMallocFromPoolAsync, (void **p, size_t n, void *pool, void *s),        \
	  (p, n, pool, s))                                                                                     \
	X(cudaMallocFromPoolAsync, cudaMallocFromPoolAsync_ptsz, (void **p, size_t n, void *pool, void *s),   \
	  (p, n, pool, s))                                                                                     \
	X(cudaMemGetInfo, cudaMemGetInfo, (size_t *f, size_t *t), (f, t))

#define VT_RT_WRAP(tag, sym, params, args)                                                                    \
	VT_EXPORT vt_cuda_error sym params                                                                    \
	{                                                                                                     \
		static _Atomic(void *) real_p;                                                                \
		typedef vt_cuda_error(*real_t) params;                                                        \
		real_t real = (real_t)atomic_load_explicit(&real_p, memory_order_acquire);                    \
		if (!real) {                                                                                  \
			real = (real_t)vt_next_symbol(#sym);                                                  \
			if (!real)                                                                            \
				return VT_CUDA_ERROR_INIT;                                                    \
			atomic_store_explicit(&real_p, (void *)real, memory_order_release);                   \
		}                                                                                             \
		uint8_t outer = vt_rt_tag;                                                                    \
		vt_rt_tag = outer ? outer : VT_RT_##tag;                                                                \
		vt_cuda_error result = real args;                                                             \
		vt_rt_tag = outer;                                                                            \
		return result;                                                                                \
	}
VT_RT_WRAPS(VT_RT_WRAP)
