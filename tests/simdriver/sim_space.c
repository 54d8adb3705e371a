/* Device address space of the simulated driver: per-device VA windows with a
 * first-fit free list (256-byte aligned, lowest address first, so a freed
 * address is handed out again), the live-range registry, capacity charging.
 * Every function here expects sim_lock held. */
#define _GNU_SOURCE /* tdestroy */
#include "sim_internal.h"

#include <stdio.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct sim_state sim;
pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;

/* VA per device: room for allocations up to capacity plus as much again for
 * cuMemAddressReserve (frameworks reserve large ranges), plus slack. */
static size_t window_size(size_t capacity)
{
	return sim_round_up(2 * capacity + (1ull << 30), VTSIM_GRANULARITY);
}

static void *map_anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static CUresult window_create(struct sim_device *d)
{
	d->window = window_size(d->capacity);
	/* Over-reserve one granule so the fake base can be 2 MiB aligned. */
	d->reserve = map_anon(d->window + VTSIM_GRANULARITY, PROT_NONE);
	d->backing = map_anon(d->window, PROT_READ | PROT_WRITE);
	if (!d->reserve || !d->backing) {
		fprintf(stderr, "vtsim: cannot map %zu bytes of simulated device memory\n", d->window);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	d->base = sim_round_up((uintptr_t)d->reserve, VTSIM_GRANULARITY);
	d->free = malloc(sizeof *d->free * 16);
	if (!d->free)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->capfree = 16;
	d->nfree = 1;
	d->free[0] = (struct sim_extent){0, d->window};
	return CUDA_SUCCESS;
}

static void window_destroy(struct sim_device *d)
{
	if (d->reserve)
		munmap(d->reserve, d->window + VTSIM_GRANULARITY);
	if (d->backing)
		munmap(d->backing, d->window);
	free(d->free);
	d->reserve = d->backing = NULL;
	d->free = NULL;
	d->nfree = d->capfree = 0;
	d->base = 0;
}

CUresult sim_space_init(void)
{
	for (int i = 0; i < sim.ndev; i++) {
		struct sim_device *d = &sim.dev[i];
		d->capacity = sim.capacity;
		d->charged = d->live_objects = 0;
		SIM_TRY(window_create(d));
	}
	return CUDA_SUCCESS;
}

void sim_space_teardown(void)
{
	for (int i = 0; i < VTSIM_MAX_DEVICES; i++)
		window_destroy(&sim.dev[i]);
	tdestroy(sim.range_tree, free);
	free(sim.resv);
	sim.range_tree = NULL;
	sim.resv = NULL;
	sim.nranges = sim.nresv = sim.capresv = 0;
}

int sim_window_of(CUdeviceptr addr)
{
	for (int i = 0; i < sim.ndev; i++) {
		const struct sim_device *d = &sim.dev[i];
		if (d->base && addr >= d->base && addr - d->base < d->window)
			return i;
	}
	return -1;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	void *p = realloc(*arr, ncap * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* Remove [off, off+len) from free extent i, keeping what is left around it. */
static CUresult extent_take(struct sim_device *d, size_t i, size_t off, size_t len)
{
	struct sim_extent e = d->free[i];
	size_t head = off - e.off, tail = e.off + e.len - (off + len);
	if (head && tail) {
		if (grow((void **)&d->free, &d->capfree, d->nfree + 1, sizeof *d->free))
			return CUDA_ERROR_OUT_OF_MEMORY;
		memmove(&d->free[i + 2], &d->free[i + 1], (d->nfree - i - 1) * sizeof *d->free);
		d->nfree++;
		d->free[i] = (struct sim_extent){e.off, head};
		d->free[i + 1] = (struct sim_extent){off + len, tail};
	} else if (head) {
		d->free[i].len = head;
	} else if (tail) {
		d->free[i] = (struct sim_extent){off + len, tail};
	} else {
		memmove(&d->free[i], &d->free[i + 1], (d->nfree - i - 1) * sizeof *d->free);
		d->nfree--;
	}
	return CUDA_SUCCESS;
}

CUresult sim_va_carve(int dev, size_t size, size_t align, CUdeviceptr hint, CUdeviceptr *out)
{
	struct sim_device *d = &sim.dev[dev];
	if (size == 0 || size > d->window)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (hint && hint >= d->base && hint - d->base <= d->window - size && (hint - d->base) % align == 0) {
		size_t off = hint - d->base;
		for (size_t i = 0; i < d->nfree; i++) {
			const struct sim_extent *e = &d->free[i];
			if (off >= e->off && off + size <= e->off + e->len) {
				SIM_TRY(extent_take(d, i, off, size));
				*out = hint;
				return CUDA_SUCCESS;
			}
		}
	}
	for (size_t i = 0; i < d->nfree; i++) {
		const struct sim_extent *e = &d->free[i];
		size_t off = sim_round_up(e->off, align);
		if (off >= e->off + e->len || e->off + e->len - off < size)
			continue;
		SIM_TRY(extent_take(d, i, off, size));
		*out = d->base + off;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_OUT_OF_MEMORY;
}

void sim_va_release(int dev, CUdeviceptr addr, size_t size)
{
	struct sim_device *d = &sim.dev[dev];
	size_t off = addr - d->base, i = 0;
	while (i < d->nfree && d->free[i].off < off)
		i++;
	if (grow((void **)&d->free, &d->capfree, d->nfree + 1, sizeof *d->free))
		return; /* leak the VA: harmless in a test double */
	memmove(&d->free[i + 1], &d->free[i], (d->nfree - i) * sizeof *d->free);
	d->free[i] = (struct sim_extent){off, size};
	d->nfree++;
	if (i + 1 < d->nfree && d->free[i].off + d->free[i].len == d->free[i + 1].off) {
		d->free[i].len += d->free[i + 1].len;
		memmove(&d->free[i + 1], &d->free[i + 2], (d->nfree - i - 2) * sizeof *d->free);
		d->nfree--;
	}
	if (i > 0 && d->free[i - 1].off + d->free[i - 1].len == d->free[i].off) {
		d->free[i - 1].len += d->free[i].len;
		memmove(&d->free[i], &d->free[i + 1], (d->nfree - i - 1) * sizeof *d->free);
		d->nfree--;
		i--;
	}
	/* Give back the pages this free made wholly free, so a job that uploads
	 * and frees gigabytes does not keep them resident (a page shared with a
	 * live neighbour goes back when the neighbour is freed). */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t lo = sim_round_up(d->free[i].off, page), hi = (d->free[i].off + d->free[i].len) / page * page;
	size_t from = off / page * page, to = sim_round_up(off + size, page);
	lo = lo > from ? lo : from;
	hi = hi < to ? hi : to;
	if (hi > lo)
		madvise(d->backing + lo, hi - lo, MADV_DONTNEED);
}

/* Live ranges never overlap, so "overlaps" is a total order among them, and
 * a probe [addr, addr+n) compares equal to the one range it intersects:
 * tfind() then answers "which allocation contains this address". glibc's
 * tsearch is a red-black tree: O(log n) for every operation. */
static int range_cmp(const void *a, const void *b)
{
	const struct sim_range *x = a, *y = b;
	if (x->start + x->size <= y->start)
		return -1;
	if (y->start + y->size <= x->start)
		return 1;
	return 0;
}

static struct sim_range *range_probe(CUdeviceptr start, size_t size)
{
	struct sim_range key = {.start = start, .size = size ? size : 1};
	void **node = tfind(&key, &sim.range_tree, range_cmp);
	return node ? *node : NULL;
}

struct sim_range *sim_range_find(CUdeviceptr addr) { return range_probe(addr, 1); }

struct sim_range *sim_range_exact(CUdeviceptr start)
{
	struct sim_range *r = sim_range_find(start);
	return r && r->start == start ? r : NULL;
}

int sim_range_overlaps(CUdeviceptr start, size_t size) { return range_probe(start, size) != NULL; }

struct sim_range *sim_range_insert(const struct sim_range *r)
{
	struct sim_range *copy = malloc(sizeof *copy);
	if (!copy)
		return NULL;
	*copy = *r;
	copy->buffer_id = ++sim.next_buffer_id;
	void **node = tsearch(copy, &sim.range_tree, range_cmp);
	if (!node || *node != copy) { /* no memory, or an overlap: a bug upstream */
		free(copy);
		return NULL;
	}
	sim.nranges++;
	return copy;
}

void sim_range_remove(struct sim_range *r)
{
	tdelete(r, &sim.range_tree, range_cmp);
	sim.nranges--;
	free(r);
}

struct sim_reservation *sim_resv_find(CUdeviceptr addr)
{
	for (size_t i = 0; i < sim.nresv; i++)
		if (addr - sim.resv[i].start < sim.resv[i].size)
			return &sim.resv[i];
	return NULL;
}

CUresult sim_resv_insert(const struct sim_reservation *r)
{
	if (grow((void **)&sim.resv, &sim.capresv, sim.nresv + 1, sizeof *sim.resv))
		return CUDA_ERROR_OUT_OF_MEMORY;
	sim.resv[sim.nresv++] = *r;
	return CUDA_SUCCESS;
}

void sim_resv_remove(struct sim_reservation *r)
{
	size_t i = (size_t)(r - sim.resv);
	sim.resv[i] = sim.resv[--sim.nresv];
}

CUresult sim_charge(int dev, size_t bytes)
{
	struct sim_device *d = &sim.dev[dev];
	if (bytes > d->capacity - d->charged)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->charged += bytes;
	d->live_objects++;
	return CUDA_SUCCESS;
}

void sim_uncharge(int dev, size_t bytes)
{
	struct sim_device *d = &sim.dev[dev];
	d->charged -= bytes;
	d->live_objects--;
}
