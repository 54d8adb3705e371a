/* CUDA arrays: opaque device memory charged width*height*depth*element
 * size (mipmaps: every level). An array (not a mipmap) keeps its bytes in a
 * linear layout, so 2D/3D copies can use it as an endpoint. */
#include "sim_internal.h"

#include <stdlib.h>
#include <sys/mman.h>

struct CUarray_st *sim_array_find(CUarray a)
{
	for (struct CUarray_st *x = sim.arrays; x; x = x->next_all)
		if (x == a && x->valid)
			return x;
	return NULL;
}

void sim_array_free_all(void)
{
	for (struct CUarray_st *a = sim.arrays, *next; a; a = next) {
		next = a->next_all;
		if (a->bytes)
			munmap(a->bytes, a->charged);
		free(a);
	}
	sim.arrays = NULL;
}

/* Bytes per channel of each format; anything else counts 4 (approximation). */
static const struct {
	CUarray_format format;
	unsigned bytes;
} format_bytes[] = {
	{CU_AD_FORMAT_UNSIGNED_INT8, 1}, {CU_AD_FORMAT_SIGNED_INT8, 1},     {CU_AD_FORMAT_UNSIGNED_INT16, 2},
	{CU_AD_FORMAT_SIGNED_INT16, 2},  {CU_AD_FORMAT_HALF, 2},            {CU_AD_FORMAT_UNSIGNED_INT32, 4},
	{CU_AD_FORMAT_SIGNED_INT32, 4},  {CU_AD_FORMAT_FLOAT, 4},           {CU_AD_FORMAT_UNORM_INT8X1, 1},
	{CU_AD_FORMAT_UNORM_INT8X2, 2},  {CU_AD_FORMAT_UNORM_INT8X4, 4},    {CU_AD_FORMAT_SNORM_INT8X1, 1},
	{CU_AD_FORMAT_SNORM_INT8X2, 2},  {CU_AD_FORMAT_SNORM_INT8X4, 4},    {CU_AD_FORMAT_UNORM_INT16X1, 2},
	{CU_AD_FORMAT_UNORM_INT16X2, 4}, {CU_AD_FORMAT_UNORM_INT16X4, 8},   {CU_AD_FORMAT_SNORM_INT16X1, 2},
	{CU_AD_FORMAT_SNORM_INT16X2, 4}, {CU_AD_FORMAT_SNORM_INT16X4, 8},
};

static size_t element_size(CUarray_format format, unsigned channels)
{
	unsigned bytes = 4;
	for (size_t i = 0; i < sizeof format_bytes / sizeof format_bytes[0]; i++)
		if (format_bytes[i].format == format)
			bytes = format_bytes[i].bytes;
	return (size_t)bytes * channels;
}

static size_t at_least_1(size_t v) { return v ? v : 1; }

/* w*h*d*elem, or 0 on overflow or bad channel count. */
static size_t volume(size_t w, size_t h, size_t d, CUarray_format format, unsigned channels)
{
	if (!w || (channels != 1 && channels != 2 && channels != 4))
		return 0;
	size_t bytes = element_size(format, channels);
	size_t dims[3] = {w, at_least_1(h), at_least_1(d)};
	for (int i = 0; i < 3; i++) {
		if (dims[i] > ~(size_t)0 / bytes)
			return 0;
		bytes *= dims[i];
	}
	return bytes;
}

static CUresult charge_array(size_t bytes, int *dev)
{
	struct CUctx_st *ctx;
	SIM_TRY(sim_need_ctx(&ctx));
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_lock);
	CUresult r = sim_charge(ctx->device, bytes);
	pthread_mutex_unlock(&sim_lock);
	*dev = ctx->device;
	return r;
}

static CUresult array_create(CUarray *pHandle, size_t bytes, size_t row_bytes, size_t rows)
{
	int dev;
	if (!pHandle)
		return CUDA_ERROR_INVALID_VALUE;
	SIM_TRY(charge_array(bytes, &dev));
	struct CUarray_st *a = calloc(1, sizeof *a);
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int ok = a && mem != MAP_FAILED;
	pthread_mutex_lock(&sim_lock);
	if (!ok) {
		sim_uncharge(dev, bytes);
	} else {
		*a = (struct CUarray_st){.device = dev, .valid = 1, .charged = bytes, .row_bytes = row_bytes,
					 .rows = rows, .bytes = mem, .next_all = sim.arrays};
		sim.arrays = a;
	}
	pthread_mutex_unlock(&sim_lock);
	if (!ok) {
		free(a);
		if (mem != MAP_FAILED)
			munmap(mem, bytes);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pHandle = a;
	return CUDA_SUCCESS;
}

#define ARRAY_CREATE(h, d, depth)                                                                      \
	array_create(h, volume((d)->Width, (d)->Height, depth, (d)->Format, (d)->NumChannels),           \
		     (d)->Width * element_size((d)->Format, (d)->NumChannels), at_least_1((d)->Height))

CUresult sim_cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	return ARRAY_CREATE(pHandle, d, 1);
}

CUresult sim_cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *d)
{
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	return ARRAY_CREATE(pHandle, d, 1);
}

CUresult sim_cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	return ARRAY_CREATE(pHandle, d, d->Depth);
}

CUresult sim_cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *d)
{
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	return ARRAY_CREATE(pHandle, d, d->Depth);
}

CUresult sim_cuArrayDestroy(CUarray hArray)
{
	SIM_TRY(sim_need_init());
	CUresult r = CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_lock);
	struct CUarray_st *a = sim_array_find(hArray);
	if (a) {
		a->valid = 0; /* the handle stays known (and invalid); the bytes go */
		sim_uncharge(a->device, a->charged);
		munmap(a->bytes, a->charged);
		a->bytes = NULL;
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

CUresult sim_cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d,
				    unsigned int numMipmapLevels)
{
	int dev;
	if (!pHandle || !d || !numMipmapLevels)
		return CUDA_ERROR_INVALID_VALUE;
	size_t total = 0, w = d->Width, h = d->Height, z = d->Depth;
	for (unsigned l = 0; l < numMipmapLevels; l++) {
		size_t level = volume(w, h, z, d->Format, d->NumChannels);
		if (!level || total + level < total)
			return CUDA_ERROR_INVALID_VALUE;
		total += level;
		w = at_least_1(w / 2);
		h = h ? at_least_1(h / 2) : 0;
		z = z ? at_least_1(z / 2) : 0;
	}
	SIM_TRY(charge_array(total, &dev));
	struct CUmipmappedArray_st *m = calloc(1, sizeof *m);
	pthread_mutex_lock(&sim_lock);
	if (!m) {
		sim_uncharge(dev, total);
	} else {
		*m = (struct CUmipmappedArray_st){.device = dev, .valid = 1, .charged = total, .next_all = sim.mipmaps};
		sim.mipmaps = m;
	}
	pthread_mutex_unlock(&sim_lock);
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pHandle = m;
	return CUDA_SUCCESS;
}

CUresult sim_cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
	SIM_TRY(sim_need_init());
	CUresult r = CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_lock);
	for (struct CUmipmappedArray_st *m = sim.mipmaps; m; m = m->next_all)
		if (m == hMipmappedArray && m->valid) {
			m->valid = 0;
			sim_uncharge(m->device, m->charged);
			r = CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&sim_lock);
	return r;
}
