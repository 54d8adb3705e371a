/* cuMemsetD8/16/32 and their 2D, async and per-thread variants: validated
 * like copies (the whole span inside one live allocation) and really filled.
 * A 16/32-bit memset needs an address aligned to its element. */
#include "sim_internal.h"

#include <string.h>

static CUresult fill(CUdeviceptr dst, size_t pitch, unsigned int value, unsigned elem, size_t width, size_t height)
{
	if (!width || !height)
		return CUDA_SUCCESS;
	size_t row = width * elem;
	if (dst % elem || width > ~(size_t)0 / elem || (height > 1 && pitch < row))
		return CUDA_ERROR_INVALID_VALUE;
	size_t span = (height - 1) * pitch + row;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_lock);
	const struct sim_range *range = sim_range_find(dst);
	if (range && span <= range->size - (dst - range->start)) {
		unsigned char *base = range->host + (dst - range->start);
		for (size_t y = 0; y < height; y++) {
			unsigned char *p = base + y * pitch;
			if (elem == 1)
				memset(p, (int)value, row);
			for (size_t x = 0; elem > 1 && x < width; x++)
				memcpy(p + x * elem, elem == 2 ? (void *)&(unsigned short){(unsigned short)value}
							       : (void *)&value, elem);
		}
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

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

#define SET_1D(name, T, elem)                                                                          \
	CUresult sim_##name(CUdeviceptr d, T v, size_t n)                                              \
	{                                                                                              \
		SIM_TRY(need_ctx());                                                                   \
		return fill(d, 0, v, elem, n, 1);                                                      \
	}
#define SET_2D(name, T, elem)                                                                          \
	CUresult sim_##name(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h)                      \
	{                                                                                              \
		SIM_TRY(need_ctx());                                                                   \
		return fill(d, pitch, v, elem, w, h);                                                  \
	}
#define SET_1D_ASYNC(name, T, elem)                                                                    \
	CUresult sim_##name(CUdeviceptr d, T v, size_t n, CUstream hStream)                            \
	{                                                                                              \
		SIM_TRY(need_stream(hStream));                                                         \
		return fill(d, 0, v, elem, n, 1);                                                      \
	}
#define SET_2D_ASYNC(name, T, elem)                                                                    \
	CUresult sim_##name(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h, CUstream hStream)    \
	{                                                                                              \
		SIM_TRY(need_stream(hStream));                                                         \
		return fill(d, pitch, v, elem, w, h);                                                  \
	}

SET_1D(cuMemsetD8_v2, unsigned char, 1)
SET_1D(cuMemsetD8_v2_ptds, unsigned char, 1)
SET_1D(cuMemsetD16_v2, unsigned short, 2)
SET_1D(cuMemsetD16_v2_ptds, unsigned short, 2)
SET_1D(cuMemsetD32_v2, unsigned int, 4)
SET_1D(cuMemsetD32_v2_ptds, unsigned int, 4)
SET_2D(cuMemsetD2D8_v2, unsigned char, 1)
SET_2D(cuMemsetD2D8_v2_ptds, unsigned char, 1)
SET_2D(cuMemsetD2D16_v2, unsigned short, 2)
SET_2D(cuMemsetD2D16_v2_ptds, unsigned short, 2)
SET_2D(cuMemsetD2D32_v2, unsigned int, 4)
SET_2D(cuMemsetD2D32_v2_ptds, unsigned int, 4)
SET_1D_ASYNC(cuMemsetD8Async, unsigned char, 1)
SET_1D_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1)
SET_1D_ASYNC(cuMemsetD16Async, unsigned short, 2)
SET_1D_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2)
SET_1D_ASYNC(cuMemsetD32Async, unsigned int, 4)
SET_1D_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4)
SET_2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1)
SET_2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1)
SET_2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2)
SET_2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2)
SET_2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4)
SET_2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4)
