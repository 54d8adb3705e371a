/* Copies of the simulated driver. Every copy validates that each device
 * side lies inside ONE live allocation or mapping (else
 * CUDA_ERROR_INVALID_VALUE) and moves real bytes, so a job's results can be
 * compared with and without the shim. Streams are synchronous: an async copy
 * is complete when it returns. A CUDA array endpoint (2D/3D copies) is its
 * linear storage: pitch = row bytes, height = its rows. */
#include "sim_internal.h"

#include <stdint.h>
#include <string.h>

/* One endpoint of a 1D/2D/3D copy, in the driver's own terms. */
struct side {
	CUmemorytype type; /* HOST, DEVICE, UNIFIED, ARRAY */
	unsigned char *host;
	CUarray array;
	CUdeviceptr dptr;
	size_t x, y, z, pitch, height;
	CUcontext ctx; /* peer copies: the device must match */
};

struct shape {
	size_t width, height, depth;
};

/* Resolve an endpoint to host-addressable bytes for its whole span (sim_lock
 * held). A "host" pointer inside a device window is rejected: the real driver
 * would not treat device memory as pageable host memory either. */
static CUresult resolve_array(const struct side *s, const struct shape *sh, unsigned char **out)
{
	const struct CUarray_st *a = sim_array_find(s->array);
	if (!a)
		return CUDA_ERROR_INVALID_HANDLE;
	size_t offset = (s->z * a->rows + s->y) * a->row_bytes + s->x;
	size_t span = ((sh->depth - 1) * a->rows + (sh->height - 1)) * a->row_bytes + sh->width;
	if (s->x + sh->width > a->row_bytes || s->y + sh->height > a->rows || offset > a->charged ||
	    span > a->charged - offset)
		return CUDA_ERROR_INVALID_VALUE;
	*out = a->bytes + offset;
	return CUDA_SUCCESS;
}

static CUresult resolve(struct side *s, const struct shape *sh, unsigned char **out)
{
	if (s->type == CU_MEMORYTYPE_ARRAY) {
		const struct CUarray_st *a = sim_array_find(s->array);
		if (a) { /* the copy loop walks the array with its own geometry */
			s->pitch = a->row_bytes;
			s->height = a->rows;
		}
		return resolve_array(s, sh, out);
	}
	size_t rows = (sh->depth - 1) * (sh->depth > 1 ? s->height : 0) + (sh->height - 1);
	if ((sh->height > 1 || sh->depth > 1) && s->pitch < sh->width)
		return CUDA_ERROR_INVALID_VALUE;
	if (sh->depth > 1 && s->height < sh->height)
		return CUDA_ERROR_INVALID_VALUE;
	size_t offset = (s->z * s->height + s->y) * s->pitch + s->x;
	size_t span = rows * s->pitch + sh->width;
	CUmemorytype type = s->type;
	if (type == CU_MEMORYTYPE_UNIFIED)
		type = sim_window_of(s->dptr) >= 0 ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
	if (type == CU_MEMORYTYPE_HOST) {
		unsigned char *base = s->type == CU_MEMORYTYPE_UNIFIED ? (unsigned char *)(uintptr_t)s->dptr : s->host;
		if (!base || sim_window_of((CUdeviceptr)(uintptr_t)base) >= 0)
			return CUDA_ERROR_INVALID_VALUE;
		*out = base + offset;
		return CUDA_SUCCESS;
	}
	if (type != CU_MEMORYTYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	CUdeviceptr start = s->dptr + offset;
	const struct sim_range *r = sim_range_find(start);
	if (!r || span > r->size - (start - r->start))
		return CUDA_ERROR_INVALID_VALUE;
	if (s->ctx && s->ctx->device != r->device)
		return CUDA_ERROR_INVALID_VALUE;
	*out = r->host + (start - r->start);
	return CUDA_SUCCESS;
}

static CUresult copy_shape(struct side *dst, struct side *src, const struct shape *sh)
{
	if (!sh->width || !sh->height || !sh->depth)
		return CUDA_SUCCESS; /* nothing to move */
	unsigned char *d, *s;
	pthread_mutex_lock(&sim_lock);
	CUresult r = resolve(dst, sh, &d);
	if (r == CUDA_SUCCESS)
		r = resolve(src, sh, &s);
	if (r == CUDA_SUCCESS) {
		for (size_t z = 0; z < sh->depth; z++)
			for (size_t y = 0; y < sh->height; y++)
				memmove(d + (z * dst->height + y) * dst->pitch, s + (z * src->height + y) * src->pitch,
					sh->width);
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

static CUresult copy_1d(struct side dst, struct side src, size_t n)
{
	struct shape sh = {n, 1, 1};
	dst.pitch = src.pitch = n;
	return copy_shape(&dst, &src, &sh);
}

static struct side host_side(const void *p) { return (struct side){.type = CU_MEMORYTYPE_HOST, .host = (unsigned char *)p}; }
static struct side dev_side(CUdeviceptr p) { return (struct side){.type = CU_MEMORYTYPE_DEVICE, .dptr = p}; }
static struct side any_side(CUdeviceptr p) { return (struct side){.type = CU_MEMORYTYPE_UNIFIED, .dptr = p}; }

CUresult sim_copy_linear(CUdeviceptr dst, CUdeviceptr src, size_t n) { return copy_1d(any_side(dst), any_side(src), n); }

/* ---- the linear family: each body once, each variant a one-liner ------- */

static CUresult need_ctx(void)
{
	struct CUctx_st *ctx;
	return sim_need_ctx(&ctx);
}

static CUresult need_stream(CUstream s)
{
	struct CUctx_st *ctx;
	return sim_stream_ctx(s, &ctx);
}

static CUresult htod(CUdeviceptr dst, const void *src, size_t n) { return copy_1d(dev_side(dst), host_side(src), n); }
static CUresult dtoh(void *dst, CUdeviceptr src, size_t n) { return copy_1d(host_side(dst), dev_side(src), n); }
static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n) { return copy_1d(dev_side(dst), dev_side(src), n); }

#define SYNC_COPY(name, call, ...)                                                                     \
	CUresult sim_##name(__VA_ARGS__)                                                               \
	{                                                                                              \
		SIM_TRY(need_ctx());                                                                   \
		return call;                                                                           \
	}
#define ASYNC_COPY(name, call, ...)                                                                    \
	CUresult sim_##name(__VA_ARGS__)                                                               \
	{                                                                                              \
		SIM_TRY(need_stream(hStream));                                                         \
		return call;                                                                           \
	}

SYNC_COPY(cuMemcpyHtoD_v2, htod(d, s, n), CUdeviceptr d, const void *s, size_t n)
SYNC_COPY(cuMemcpyHtoD_v2_ptds, htod(d, s, n), CUdeviceptr d, const void *s, size_t n)
SYNC_COPY(cuMemcpyDtoH_v2, dtoh(d, s, n), void *d, CUdeviceptr s, size_t n)
SYNC_COPY(cuMemcpyDtoH_v2_ptds, dtoh(d, s, n), void *d, CUdeviceptr s, size_t n)
SYNC_COPY(cuMemcpyDtoD_v2, dtod(d, s, n), CUdeviceptr d, CUdeviceptr s, size_t n)
SYNC_COPY(cuMemcpyDtoD_v2_ptds, dtod(d, s, n), CUdeviceptr d, CUdeviceptr s, size_t n)
SYNC_COPY(cuMemcpy, sim_copy_linear(d, s, n), CUdeviceptr d, CUdeviceptr s, size_t n)
SYNC_COPY(cuMemcpy_ptds, sim_copy_linear(d, s, n), CUdeviceptr d, CUdeviceptr s, size_t n)
ASYNC_COPY(cuMemcpyHtoDAsync_v2, htod(d, s, n), CUdeviceptr d, const void *s, size_t n, CUstream hStream)
ASYNC_COPY(cuMemcpyHtoDAsync_v2_ptsz, htod(d, s, n), CUdeviceptr d, const void *s, size_t n, CUstream hStream)
ASYNC_COPY(cuMemcpyDtoHAsync_v2, dtoh(d, s, n), void *d, CUdeviceptr s, size_t n, CUstream hStream)
ASYNC_COPY(cuMemcpyDtoHAsync_v2_ptsz, dtoh(d, s, n), void *d, CUdeviceptr s, size_t n, CUstream hStream)
ASYNC_COPY(cuMemcpyDtoDAsync_v2, dtod(d, s, n), CUdeviceptr d, CUdeviceptr s, size_t n, CUstream hStream)
ASYNC_COPY(cuMemcpyDtoDAsync_v2_ptsz, dtod(d, s, n), CUdeviceptr d, CUdeviceptr s, size_t n, CUstream hStream)
ASYNC_COPY(cuMemcpyAsync, sim_copy_linear(d, s, n), CUdeviceptr d, CUdeviceptr s, size_t n, CUstream hStream)
ASYNC_COPY(cuMemcpyAsync_ptsz, sim_copy_linear(d, s, n), CUdeviceptr d, CUdeviceptr s, size_t n, CUstream hStream)

/* ---- peer ------------------------------------------------------------------ */

static CUresult peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n)
{
	SIM_TRY(sim_need_init());
	if (!sim_ctx_valid(dctx) || !sim_ctx_valid(sctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	struct side d = dev_side(dst), s = dev_side(src);
	d.ctx = dctx;
	s.ctx = sctx;
	return copy_1d(d, s, n);
}

CUresult sim_cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n)
{
	return peer(d, dc, s, sc, n);
}

CUresult sim_cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n)
{
	return peer(d, dc, s, sc, n);
}

CUresult sim_cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream hStream)
{
	SIM_TRY(need_stream(hStream));
	return peer(d, dc, s, sc, n);
}

CUresult sim_cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n,
				    CUstream hStream)
{
	return sim_cuMemcpyPeerAsync(d, dc, s, sc, n, hStream);
}

/* ---- 2D / 3D ------------------------------------------------------------- */

#define SIDE_OF(p, pre, zz, hh, cc)                                                                    \
	((struct side){.type = (p)->pre##MemoryType,                                                   \
		       .host = (unsigned char *)(p)->pre##Host,                                         \
		       .dptr = (p)->pre##Device,                                                         \
		       .array = (p)->pre##Array,                                                         \
		       .x = (p)->pre##XInBytes,                                                          \
		       .y = (p)->pre##Y,                                                                 \
		       .z = (zz),                                                                        \
		       .pitch = (p)->pre##Pitch,                                                         \
		       .height = (hh),                                                                   \
		       .ctx = (cc)})

static CUresult copy2d(const CUDA_MEMCPY2D *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	struct side d = SIDE_OF(p, dst, 0, 0, NULL), s = SIDE_OF(p, src, 0, 0, NULL);
	struct shape sh = {p->WidthInBytes, p->Height, 1};
	return copy_shape(&d, &s, &sh);
}

static CUresult copy3d(const CUDA_MEMCPY3D *p)
{
	if (!p || p->srcLOD || p->dstLOD)
		return CUDA_ERROR_INVALID_VALUE;
	struct side d = SIDE_OF(p, dst, p->dstZ, p->dstHeight, NULL), s = SIDE_OF(p, src, p->srcZ, p->srcHeight, NULL);
	struct shape sh = {p->WidthInBytes, p->Height, p->Depth};
	return copy_shape(&d, &s, &sh);
}

static CUresult copy3d_peer(const CUDA_MEMCPY3D_PEER *p)
{
	if (!p || p->srcLOD || p->dstLOD)
		return CUDA_ERROR_INVALID_VALUE;
	if ((p->dstContext && !sim_ctx_valid(p->dstContext)) || (p->srcContext && !sim_ctx_valid(p->srcContext)))
		return CUDA_ERROR_INVALID_CONTEXT;
	struct side d = SIDE_OF(p, dst, p->dstZ, p->dstHeight, p->dstContext);
	struct side s = SIDE_OF(p, src, p->srcZ, p->srcHeight, p->srcContext);
	struct shape sh = {p->WidthInBytes, p->Height, p->Depth};
	return copy_shape(&d, &s, &sh);
}

SYNC_COPY(cuMemcpy2D_v2, copy2d(p), const CUDA_MEMCPY2D *p)
SYNC_COPY(cuMemcpy2D_v2_ptds, copy2d(p), const CUDA_MEMCPY2D *p)
SYNC_COPY(cuMemcpy2DUnaligned_v2, copy2d(p), const CUDA_MEMCPY2D *p)
SYNC_COPY(cuMemcpy2DUnaligned_v2_ptds, copy2d(p), const CUDA_MEMCPY2D *p)
SYNC_COPY(cuMemcpy3D_v2, copy3d(p), const CUDA_MEMCPY3D *p)
SYNC_COPY(cuMemcpy3D_v2_ptds, copy3d(p), const CUDA_MEMCPY3D *p)
SYNC_COPY(cuMemcpy3DPeer, copy3d_peer(p), const CUDA_MEMCPY3D_PEER *p)
SYNC_COPY(cuMemcpy3DPeer_ptds, copy3d_peer(p), const CUDA_MEMCPY3D_PEER *p)
ASYNC_COPY(cuMemcpy2DAsync_v2, copy2d(p), const CUDA_MEMCPY2D *p, CUstream hStream)
ASYNC_COPY(cuMemcpy2DAsync_v2_ptsz, copy2d(p), const CUDA_MEMCPY2D *p, CUstream hStream)
ASYNC_COPY(cuMemcpy3DAsync_v2, copy3d(p), const CUDA_MEMCPY3D *p, CUstream hStream)
ASYNC_COPY(cuMemcpy3DAsync_v2_ptsz, copy3d(p), const CUDA_MEMCPY3D *p, CUstream hStream)
ASYNC_COPY(cuMemcpy3DPeerAsync, copy3d_peer(p), const CUDA_MEMCPY3D_PEER *p, CUstream hStream)
ASYNC_COPY(cuMemcpy3DPeerAsync_ptsz, copy3d_peer(p), const CUDA_MEMCPY3D_PEER *p, CUstream hStream)

/* ---- batches: the 12.8 ABI reports the failing index, 13.0 does not ---- */

static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
		      size_t *attrIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream)
{
	if (failIdx)
		*failIdx = SIZE_MAX; /* "not tied to one copy" until one fails */
	SIM_TRY(need_stream(hStream));
	if (!dsts || !srcs || !sizes || !count || !attrs || !attrIdxs || !numAttrs || numAttrs > count ||
	    attrIdxs[0] != 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 1; i < numAttrs; i++)
		if (attrIdxs[i] <= attrIdxs[i - 1] || attrIdxs[i] >= count)
			return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++) {
		CUresult r = sim_copy_linear(dsts[i], srcs[i], sizes[i]);
		if (r != CUDA_SUCCESS) {
			if (failIdx)
				*failIdx = i;
			return r;
		}
	}
	return CUDA_SUCCESS;
}

CUresult sim_cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
				CUmemcpyAttributes *attrs, size_t *attrIdxs, size_t numAttrs, size_t *failIdx,
				CUstream hStream)
{
	return batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, hStream);
}

CUresult sim_cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
				     CUmemcpyAttributes *attrs, size_t *attrIdxs, size_t numAttrs, size_t *failIdx,
				     CUstream hStream)
{
	return batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, hStream);
}

CUresult sim_cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
				   CUmemcpyAttributes *attrs, size_t *attrIdxs, size_t numAttrs, CUstream hStream)
{
	return batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, NULL, hStream);
}

CUresult sim_cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
					CUmemcpyAttributes *attrs, size_t *attrIdxs, size_t numAttrs, CUstream hStream)
{
	return batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, NULL, hStream);
}

/* Pointer operands only; the element is one byte (rowLength/layerHeight in
 * bytes/rows, 0 meaning "tightly packed"). */
static struct side operand_side(const CUmemcpy3DOperand *o, const CUextent3D *e)
{
	struct side s = any_side(o->op.ptr.ptr);
	s.pitch = o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width;
	s.height = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
	return s;
}

static CUresult batch3d(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags,
			CUstream hStream)
{
	if (failIdx)
		*failIdx = SIZE_MAX;
	SIM_TRY(need_stream(hStream));
	if (!numOps || !opList || flags)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < numOps; i++) {
		const CUDA_MEMCPY3D_BATCH_OP *op = &opList[i];
		CUresult r = CUDA_ERROR_NOT_SUPPORTED;
		if (op->src.type == CU_MEMCPY_OPERAND_TYPE_POINTER && op->dst.type == CU_MEMCPY_OPERAND_TYPE_POINTER) {
			struct side d = operand_side(&op->dst, &op->extent), s = operand_side(&op->src, &op->extent);
			struct shape sh = {op->extent.width, op->extent.height, op->extent.depth};
			r = sh.width && sh.height && sh.depth ? copy_shape(&d, &s, &sh) : CUDA_ERROR_INVALID_VALUE;
		}
		if (r != CUDA_SUCCESS) {
			if (failIdx)
				*failIdx = i;
			return r;
		}
	}
	return CUDA_SUCCESS;
}

CUresult sim_cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
				  unsigned long long flags, CUstream hStream)
{
	return batch3d(numOps, opList, failIdx, flags, hStream);
}

CUresult sim_cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
				       unsigned long long flags, CUstream hStream)
{
	return batch3d(numOps, opList, failIdx, flags, hStream);
}

CUresult sim_cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags,
				     CUstream hStream)
{
	return batch3d(numOps, opList, NULL, flags, hStream);
}

CUresult sim_cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags,
					  CUstream hStream)
{
	return batch3d(numOps, opList, NULL, flags, hStream);
}
