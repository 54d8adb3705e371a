/* faiss GPU IVF-PQ: build an index, then serve searches.
 *
 * `res = faiss.StandardGpuResources(); index = faiss.GpuIndexIVFPQ(res, 128,
 * 1024, 16, 8, faiss.METRIC_L2); index.train(xt); index.add(xb);
 * index.nprobe = 32; index.search(xq, 10)` with 262,144 training vectors,
 * 1,000,000 database vectors and 20 query batches of 1,024, all float32
 * numpy arrays on the host.
 *
 * What is modelled (sources read: faiss/gpu/StandardGpuResources.cpp
 * `getDefaultTempMemForGPU` (1 GiB of temporary memory on a device of
 * <= 8 GiB; the device's total memory, here from cuMemGetInfo),
 * `initializeForDevice` (the temporary memory one cudaMalloc, a 256 MiB
 * pinned host buffer), `allocMemory` (anything not temporary: a cudaMalloc
 * of its own); faiss/gpu/utils/StackDeviceMemory.cpp (temporaries carved
 * from the stack, LIFO); faiss/gpu/GpuIndex.cu `search` ->
 * `searchNonPaged_` (host queries under minPagedSize_ copied whole into
 * temporary memory by `toDeviceTemporary`), `addPaged_` (kAddVecSize:
 * 512 Ki vectors a page, each page copied into temporary memory);
 * faiss/Clustering.cpp (25 iterations, max_points_per_centroid 256: all
 * 262,144 = 1024 x 256 points used; each iteration `index.reset()` then
 * `index.add(centroids)` into the GPU flat quantizer and
 * `index.search(x, 1)`); faiss/gpu/GpuIndexIVFPQ.cu
 * `trainResidualQuantizer_` (a 16,384-vector sample = 64 x 2^8, assigned
 * and its residuals computed on the device), `IVFPQ` construction (PQ
 * centroids in two layouts); faiss/gpu/impl/IVFBase.cu (per-list codes and
 * indices as DeviceVectors, `deviceListDataPointers_`,
 * `deviceListIndexPointers_`, `deviceListLengths_`); faiss/gpu/utils/
 * DeviceVector.cuh `reserve` / `getNewCapacity_` (a growing list gets a
 * new buffer of the next power of two, the old one copied and freed)).
 * No markers, driver by dlsym.
 *
 * Truth: the temporary-memory stack is pool (parts: copied training sets,
 * database pages and query batches, and the distance, residual, code and
 * lookup-table scratch); the coarse centroids (the flat quantizer's
 * storage, re-added every k-means iteration) and PQ centroids are weights;
 * the inverted lists' codes and indices are dataset (the encoded database,
 * built on the device page by page: no finding); the list pointer and
 * length vectors other. The k-means training set is copied whole into the
 * stack for every one of the 25 assignment passes: 25 whole_dataset_upload
 * findings of 134,217,728 B (the README's "uploaded whole again" rule); the
 * residual sample and the database pages are pieces, not whole arrays.
 * Query batches are prefetch (depth 1, 512 KiB each, copied synchronously);
 * 0 steps (training the index is k-means, not an optimizer). Coincidences:
 * the coarse centroids (1024 x 128 float32, 512 KiB) are one query batch;
 * the PQ centroids' two layouts are one size (128 KiB).
 */
#include <stdio.h>
#include <stdlib.h>

#include "vtc.h"
#include "vtc_pool.h"

#define D 128
#define NLIST 1024
#define M 16
#define NT (NLIST * 256)
#define NB 1000000
#define PAGE (512 * 1024)
#define NQ 1024
#define NBATCH 20
#define NPROBE 32
#define K 10
#define ITERS 25

static struct vtc_region stack;
static CUdeviceptr codes[NLIST], ids[NLIST];
static uint64_t cap[NLIST], len[NLIST];

static CUdeviceptr tmp(uint64_t bytes, enum vtc_cat cat)
{
	CUdeviceptr p = vtc_region_take(&stack, bytes, cat);
	if (!p) {
		fprintf(stderr, "faiss_ivfpq_build_search: temporary memory full\n");
		exit(1);
	}
	return p;
}

static void untmp(CUdeviceptr p)
{
	vtc_region_give(&stack, p);
}

static uint64_t pow2(uint64_t n)
{
	uint64_t p = 256;
	while (p < n)
		p <<= 1;
	return p;
}

/* GpuIndexFlatL2::reset + add: the quantizer's vectors and norms */
static void flat_add(CUdeviceptr *vec, CUdeviceptr *norms)
{
	if (*vec) {
		vtc_free(0, *vec);
		vtc_free(0, *norms);
	}
	*vec = vtc_alloc(0, (uint64_t)NLIST * D * 4, VTC_WEIGHTS);
	vtc_htod(0, *vec, (uint64_t)NLIST * D * 4);
	*norms = vtc_alloc(0, NLIST * 4, VTC_WEIGHTS);
}

/* searchNonPaged_ of host vectors against the flat quantizer, k = 1 */
static void flat_search(uint64_t n, enum vtc_cat what)
{
	CUdeviceptr x = tmp(n * D * 4, what);
	vtc_htod(0, x, n * D * 4);
	CUdeviceptr xnorm = tmp(n * 4, VTC_ACTIVATIONS);
	CUdeviceptr tile = tmp(2 * 512 * NLIST * 4, VTC_ACTIVATIONS); /* distance tiles */
	CUdeviceptr dist = tmp(n * 4, VTC_ACTIVATIONS), lab = tmp(n * 8, VTC_ACTIVATIONS);
	vtc_dtoh(0, lab, n * 8);
	vtc_dtoh(0, dist, n * 4);
	untmp(lab);
	untmp(dist);
	untmp(tile);
	untmp(xnorm);
	untmp(x);
}

/* list l grows to hold n more vectors: DeviceVector::resize */
static void grow(int l, uint64_t n)
{
	uint64_t want = len[l] + n;
	if (want > cap[l]) {
		uint64_t c = pow2(want * M) / M;
		CUdeviceptr nc = vtc_alloc(0, c * M, VTC_DATASET);
		CUdeviceptr ni = vtc_alloc(0, c * 8, VTC_DATASET);
		if (codes[l]) {
			vtc_dtod(0, nc, codes[l], len[l] * M);
			vtc_dtod(0, ni, ids[l], len[l] * 8);
			vtc_free(0, codes[l]);
			vtc_free(0, ids[l]);
		}
		codes[l] = nc;
		ids[l] = ni;
		cap[l] = c;
	}
	len[l] = want;
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "faiss_ivfpq_build_search", 1, VTC_DLSYM);
	size_t free_b = 0, total_b = 0;
	VTC_CHECK(vtc.MemGetInfo(&free_b, &total_b));
	uint64_t temp = total_b <= 4ull * 1024 * MIB   ? 512 * MIB
	                : total_b <= 8ull * 1024 * MIB ? 1024 * MIB
	                                               : 1536 * MIB;
	CUdeviceptr base = vtc_alloc(0, temp, VTC_POOL);
	vtc_region_init(&stack, 0, base, temp, vtc_record_of(0, base));
	void *pinned = NULL;
	VTC_CHECK(vtc.MemAllocHost(&pinned, 256 * MIB));

	/* train: k-means of the coarse quantizer */
	CUdeviceptr cent = 0, cnorm = 0;
	for (int it = 0; it < ITERS; it++) {
		flat_add(&cent, &cnorm);
		flat_search(NT, VTC_DATASET);
	}
	flat_add(&cent, &cnorm); /* the final centroids */
	/* trainResidualQuantizer_: the sample assigned, residuals on the device */
	flat_search(16384, VTC_DATASET);
	CUdeviceptr s = tmp(16384ull * D * 4, VTC_DATASET);
	vtc_htod(0, s, 16384ull * D * 4);
	CUdeviceptr sid = tmp(16384 * 8, VTC_ACTIVATIONS);
	vtc_htod(0, sid, 16384 * 8);
	CUdeviceptr res = tmp(16384ull * D * 4, VTC_ACTIVATIONS);
	vtc_dtoh(0, res, 16384ull * D * 4);
	untmp(res);
	untmp(sid);
	untmp(s);
	/* IVFPQ: PQ centroids (innermost and middle code layouts) */
	CUdeviceptr pq1 = vtc_alloc(0, M * 256 * (D / M) * 4, VTC_WEIGHTS);
	vtc_htod(0, pq1, M * 256 * (D / M) * 4);
	CUdeviceptr pq2 = vtc_alloc(0, M * 256 * (D / M) * 4, VTC_WEIGHTS);
	vtc_dtod(0, pq2, pq1, M * 256 * (D / M) * 4);
	CUdeviceptr lptr = vtc_alloc(0, NLIST * 8, VTC_OTHER),
	            iptr = vtc_alloc(0, NLIST * 8, VTC_OTHER);
	CUdeviceptr lens = vtc_alloc(0, NLIST * 4, VTC_OTHER);
	vtc_zero(0, lens, NLIST * 4);

	/* add: pages of 512 Ki vectors */
	srand(7);
	for (uint64_t at = 0; at < NB; at += PAGE) {
		uint64_t n = NB - at < PAGE ? NB - at : PAGE;
		CUdeviceptr page = tmp(n * D * 4, VTC_DATASET);
		vtc_htod(0, page, n * D * 4);
		CUdeviceptr ix = tmp(n * 8, VTC_ACTIVATIONS);
		vtc_htod(0, ix, n * 8); /* the user's ids */
		CUdeviceptr assign = tmp(n * 8, VTC_ACTIVATIONS);
		CUdeviceptr resid = tmp(n * D * 4, VTC_ACTIVATIONS);
		CUdeviceptr enc = tmp(n * M, VTC_ACTIVATIONS);
		untmp(resid);
		/* appendVectors: per list, its share of the page (uneven) */
		uint64_t left = n;
		for (int l = 0; l < NLIST; l++) {
			uint64_t share = l == NLIST - 1
			                     ? left
			                     : n / NLIST / 2 + (uint64_t)(rand() % (n / NLIST));
			if (share > left)
				share = left;
			left -= share;
			grow(l, share);
		}
		vtc_htod(0, lptr, NLIST * 8); /* updateDeviceListInfo_ */
		vtc_htod(0, iptr, NLIST * 8);
		vtc_htod(0, lens, NLIST * 4);
		untmp(enc);
		untmp(assign);
		untmp(ix);
		untmp(page);
	}

	/* search: batches of 1,024 queries, nprobe 32, k 10 */
	for (int b = 0; b < NBATCH; b++) {
		CUdeviceptr q = tmp((uint64_t)NQ * D * 4, VTC_PREFETCH);
		vtc_htod(0, q, (uint64_t)NQ * D * 4);
		CUdeviceptr cd = tmp((uint64_t)NQ * NPROBE * 4, VTC_ACTIVATIONS);
		CUdeviceptr ci = tmp((uint64_t)NQ * NPROBE * 8, VTC_ACTIVATIONS);
		CUdeviceptr tile = tmp(2 * 512 * NLIST * 4, VTC_ACTIVATIONS);
		untmp(tile);
		CUdeviceptr lut = tmp((uint64_t)NQ * NPROBE * M * 256 * 2, VTC_ACTIVATIONS);
		CUdeviceptr pre = tmp((uint64_t)NQ * NPROBE * 8, VTC_ACTIVATIONS); /* prefix sums */
		CUdeviceptr all = tmp((uint64_t)NQ * NPROBE * 1024 * 4, VTC_ACTIVATIONS);
		CUdeviceptr od = tmp((uint64_t)NQ * K * 4, VTC_ACTIVATIONS);
		CUdeviceptr ol = tmp((uint64_t)NQ * K * 8, VTC_ACTIVATIONS);
		vtc_dtoh(0, od, (uint64_t)NQ * K * 4);
		vtc_dtoh(0, ol, (uint64_t)NQ * K * 8);
		untmp(ol);
		untmp(od);
		untmp(all);
		untmp(pre);
		untmp(lut);
		untmp(ci);
		untmp(cd);
		untmp(q);
	}

	for (int l = 0; l < NLIST; l++) {
		vtc_free(0, codes[l]);
		vtc_free(0, ids[l]);
	}
	vtc_free(0, lptr);
	vtc_free(0, iptr);
	vtc_free(0, lens);
	vtc_free(0, pq1);
	vtc_free(0, pq2);
	vtc_free(0, cent);
	vtc_free(0, cnorm);
	vtc_region_settle(&stack);
	vtc_free(0, base);
	VTC_CHECK(vtc.MemFreeHost(pinned));
	for (int it = 0; it < ITERS; it++)
		vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)NT * D * 4);
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)NQ * D * 4);
	vtc_line("steps 0 0");
	vtc_finish();
	return 0;
}
