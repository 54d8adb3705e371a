/* The streaming model (analyzer/model_stream.h): the same replay as the
 * full model, records recycled after their free. Fed the same random event
 * streams (address reuse, lost frees, VMM handles and mappings, copies),
 * it must find the full model's peaks and end bytes, and its snapshots must
 * hold exactly what the full model says was live at each peak and at each
 * failed allocation; its memory
 * must follow the live allocations, not the events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "model_history.h"

#include "model_builder.h"
#include "live_curve.h"
#include "model_stream.h"
#include "model_query.h"

struct op {
	uint32_t type, stack;
	uint64_t t, addr, bytes, aux;
	uint8_t kind, dev, api;
	int32_t result; /* an allocation that failed (out of memory: 2) */
};

static uint64_t rng_state;
static uint64_t rnd(uint64_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state % n;
}

#define ADDR(k) (0x7f0000000000ull + (uint64_t)(k)*0x100000ull)
#define VA(k) (0x7f8000000000ull + (uint64_t)(k)*0x1000000ull)
#define HANDLE(k) (0x5000ull + (uint64_t)(k))

static void set(struct op *o, uint32_t type, uint64_t addr, uint64_t bytes, uint64_t aux,
                uint8_t kind, uint8_t api)
{
	o->type = type;
	o->addr = addr;
	o->bytes = bytes;
	o->aux = aux;
	o->kind = kind;
	o->api = api;
}

/* n events of every kind the replay treats differently, times rising. */
static struct op *random_ops(uint64_t seed, uint32_t n)
{
	struct op *ops = calloc(n, sizeof *ops);
	assert_non_null(ops);
	rng_state = seed * 2654435761u + 1;
	for (uint32_t i = 0; i < n; i++) {
		struct op *o = &ops[i];
		o->t = 10 * (uint64_t)(i + 1);
		o->dev = (uint8_t)rnd(2);
		o->stack = 1 + (uint32_t)rnd(6);
		uint64_t r = rnd(100);
		if (r < 40) { /* allocation; a few large ones cover their neighbours */
			set(o, VT_REC_ALLOC, ADDR(rnd(48)), rnd(10) ? 1 + rnd(65536) : 3 << 20, 0,
			    VT_ALLOC_DEVICE, API_ALLOC);
			o->result = rnd(40) ? 0 : 2; /* one in 40 fails: out of memory */
		} else if (r < 70) {                 /* free, some of memory never allocated */
			set(o, VT_REC_FREE, ADDR(rnd(56)), 0, 0, VT_ALLOC_DEVICE, API_FREE);
		} else if (r < 80) { /* host-to-device copy, whole or partial */
			set(o, VT_REC_COPY, ADDR(rnd(48)) + rnd(2) * 256, 1 + rnd(4096), 0x1000,
			    VT_COPY_HTOD, API_HTOD);
		} else if (r < 84) { /* device-to-device copy */
			set(o, VT_REC_COPY, ADDR(rnd(48)), 64, ADDR(rnd(48)), VT_COPY_DTOD,
			    API_DTOD);
		} else if (r < 89) { /* VMM: a handle made (or its value reused) */
			set(o, VT_REC_ALLOC, HANDLE(rnd(6)), 1 + rnd(1 << 21), 0, VT_ALLOC_VMM,
			    API_CREATE);
		} else if (r < 94) { /* mapped */
			set(o, VT_REC_MAP, VA(rnd(6)), 1 << 20, HANDLE(rnd(6)), 0, API_MAP);
		} else if (r < 97) { /* unmapped */
			set(o, VT_REC_UNMAP, VA(rnd(6)), 1 << 20, 0, 0, API_UNMAP);
		} else { /* released */
			set(o, VT_REC_FREE, HANDLE(rnd(6)), 0, 0, VT_ALLOC_VMM, API_RELEASE);
		}
	}
	return ops;
}

static void feed(struct builder *b, const struct op *ops, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct vt_event ev;
		memset(&ev, 0, sizeof ev);
		ev.hdr = VT_HDR(ops[i].type, sizeof ev);
		ev.stack_id = ops[i].stack;
		ev.seq = ++b->seq;
		ev.t_ns = ops[i].t;
		ev.addr = ops[i].addr;
		ev.bytes = ops[i].bytes;
		ev.aux = ops[i].aux;
		ev.kind = ops[i].kind;
		ev.device = ops[i].dev;
		ev.api = ops[i].api;
		ev.result = ops[i].result;
		vt_model_feed(b->m, b->proc, ops[i].type, &ev, sizeof ev);
	}
}

/* What the full model says was live on dev at its peak. */
struct live_sum {
	uint64_t bytes, largest, by_stack[8];
	uint32_t n;
};

static int add_live(const struct vt_model *m, uint32_t idx, const struct vt_alloc *a, void *ctx)
{
	(void)m;
	(void)idx;
	struct live_sum *s = ctx;
	s->bytes += a->bytes;
	s->n++;
	s->by_stack[a->stack_id & 7] += a->bytes;
	if (a->bytes > s->largest)
		s->largest = a->bytes;
	return 0;
}

/* At each failed allocation the snapshot holds what the full model says
 * was live on that device right after the failure's event. */
static void check_failures(const struct vt_model *full, const struct vt_model *sm)
{
	uint32_t n;
	const struct vt_stream_peak *f = vt_stream_failures(sm, &n);
	assert_int_equal(n,
	                 full->nfailed < VT_STREAM_FAILURES ? full->nfailed : VT_STREAM_FAILURES);
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_failed_alloc *fa = &full->failed[i];
		struct vt_moment at = vt_moment_at_seq(fa->proc, fa->seq, fa->t_ns);
		struct live_sum s = {0};
		vt_model_for_each_live(full, &at, fa->device, add_live, &s);
		assert_int_equal(f[i].device, fa->device);
		assert_int_equal(f[i].seq, fa->seq);
		assert_int_equal(f[i].bytes, s.bytes);
		assert_int_equal(f[i].live_allocs, s.n);
		uint64_t by_stack[8] = {0};
		for (uint32_t k = 0; k < f[i].nsites; k++)
			by_stack[f[i].sites[k].stack_id & 7] += f[i].sites[k].bytes;
		assert_memory_equal(by_stack, s.by_stack, sizeof by_stack);
	}
}

static const struct vt_stream_peak *peak_of(const struct vt_model *sm, uint32_t proc, int dev)
{
	uint32_t n;
	const struct vt_stream_peak *pk = vt_stream_peaks(sm, &n);
	for (uint32_t i = 0; i < n; i++)
		if (pk[i].proc == proc && pk[i].device == dev)
			return &pk[i];
	return NULL;
}

/* The snapshot of dev agrees with the full model's state at its peak. */
static void check_snapshot(const struct vt_model *full, const struct vt_model *sm, int dev)
{
	const struct vt_device *d = &full->devices[dev];
	const struct vt_stream_peak *pk = peak_of(sm, d->peak_proc, dev);
	if (!d->peak_bytes) {
		assert_null(pk);
		return;
	}
	assert_non_null(pk);
	struct vt_moment at = vt_moment_peak(full, dev);
	struct live_sum s = {0};
	vt_model_for_each_live(full, &at, dev, add_live, &s);
	assert_int_equal(s.bytes, d->peak_bytes);
	assert_int_equal(pk->bytes, d->peak_bytes);
	assert_int_equal(pk->live_allocs, s.n);
	uint64_t by_stack[8] = {0}, sum = 0;
	for (uint32_t i = 0; i < pk->nsites; i++) {
		by_stack[pk->sites[i].stack_id & 7] += pk->sites[i].bytes;
		sum += pk->sites[i].bytes;
		if (i)
			assert_true(pk->sites[i - 1].bytes >= pk->sites[i].bytes);
	}
	assert_int_equal(sum, pk->bytes);
	assert_memory_equal(by_stack, s.by_stack, sizeof by_stack);
	assert_true(pk->nlargest > 0);
	assert_int_equal(pk->largest[0].bytes, s.largest);
}

/* The live-bytes curve of dev: its highest bucket is the peak, its last
 * value the end, and it spans the process's run in at most 1024 buckets. */
static void check_curve(const struct vt_model *full, const struct vt_model *sm, int dev)
{
	const struct vt_live_curve *c = vt_stream_curve(sm, 0, (uint8_t)dev);
	if (!full->devices[dev].peak_bytes)
		return;
	assert_non_null(c);
	assert_true(c->n >= 1 && c->n <= VT_CURVE_BUCKETS);
	uint64_t top = 0;
	for (uint32_t i = 0; i < c->n; i++)
		top = c->max[i] > top ? c->max[i] : top;
	assert_int_equal(top, full->devices[dev].peak_bytes);
	assert_int_equal(c->last[c->n - 1], full->devices[dev].end_bytes);
	uint32_t peak_bucket = (uint32_t)((full->devices[dev].peak_t_ns - c->t0) / c->width);
	assert_int_equal(c->max[peak_bucket], full->devices[dev].peak_bytes);
}

static void test_same_peaks_as_full_model(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 60; seed++) {
		uint32_t n = 400 + (uint32_t)(seed * 97 % 3000);
		struct op *ops = random_ops(seed, n);
		struct builder bf, bs;
		struct vt_model *full = vt_model_new(), *sm = vt_model_new_streaming();
		assert_non_null(full);
		assert_non_null(sm);
		assert_true(vt_model_is_streaming(sm));
		b_begin(&bf, full, 100, 1000, 1000);
		b_begin(&bs, sm, 100, 1000, 1000);
		feed(&bf, ops, n);
		feed(&bs, ops, n);
		vt_model_finish(full);
		vt_model_finish(sm);
		for (int dev = 0; dev < 2; dev++) {
			assert_int_equal(sm->devices[dev].peak_bytes,
			                 full->devices[dev].peak_bytes);
			assert_int_equal(sm->devices[dev].peak_t_ns, full->devices[dev].peak_t_ns);
			assert_int_equal(sm->devices[dev].peak_seq, full->devices[dev].peak_seq);
			assert_int_equal(sm->devices[dev].end_bytes, full->devices[dev].end_bytes);
			check_snapshot(full, sm, dev);
			check_curve(full, sm, dev);
			uint64_t lo, hi; /* one process: both bounds are its peak */
			vt_stream_combined_peak(sm, dev, &lo, &hi);
			assert_int_equal(lo, full->devices[dev].peak_bytes);
			assert_int_equal(hi, full->devices[dev].peak_bytes);
		}
		check_failures(full, sm);
		assert_true(full->nfailed > 0 || n < 1000);
		assert_memory_equal(&sm->totals, &full->totals, sizeof full->totals);
		/* every free's record recycled, but a handle still mapped (this
		 * stream reuses handle values under live mappings often) */
		assert_true(vt_stream_retired(sm) <= full->nfree_order);
		assert_true(vt_stream_retired(sm) * 2 >= full->nfree_order);
		assert_true(vt_stream_records_high(sm) <= full->nallocs);
		vt_model_free(full);
		vt_model_free(sm);
		free(ops);
	}
}

/* 100 000 allocations with a copy each, at most 3 live at once: 3 records
 * and 3 copy entries are all the model holds, and the live ones keep their
 * own copy statistics while the others' are forgotten around them. */
static void test_memory_follows_live_allocations(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = vt_model_new_streaming();
	assert_non_null(m);
	b_begin(&b, m, 100, 1000, 1000);
	const uint32_t n = 100000;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = ADDR(i % 3), t = 10 * (uint64_t)i;
		if (i >= 3)
			b_free(&b, t, addr, 0);
		b_alloc(&b, t + 1, addr, 4096 + i, 0);
		b_htod(&b, t + 2, addr, 100 + i, 0);
	}
	vt_model_finish(m);
	assert_int_equal(m->totals.alloc_calls, n);
	assert_int_equal(vt_stream_records_high(m), 3);
	assert_int_equal(vt_stream_retired(m), n - 3);
	assert_true(m->ncopies <= 3);
	for (uint32_t i = 0; i < m->nallocs; i++) { /* the last three: i = n-3 .. n-1 */
		const struct vt_alloc *a = &m->allocs[i];
		assert_int_equal(a->t_free, VT_T_NEVER);
		assert_int_equal(vt_model_copies(m, a)->h2d_bytes, 100 + (a->bytes - 4096));
	}
	/* the peak: the last three allocations, largest first */
	const struct vt_stream_peak *pk = peak_of(m, 0, 0);
	assert_non_null(pk);
	assert_int_equal(pk->bytes, 3 * 4096ull + (n - 3) + (n - 2) + (n - 1));
	assert_int_equal(pk->live_allocs, 3);
	assert_int_equal(pk->nlargest, 3);
	assert_int_equal(pk->largest[0].bytes, 4096 + n - 1);
	assert_int_equal(pk->largest[0].h2d_bytes, 100 + n - 1);
	assert_int_equal(pk->largest[2].bytes, 4096 + n - 3);
	vt_model_free(m);
}

/* Copy entries forgotten in every order: the open-addressing index keeps
 * finding the ones that stay. */
static void test_forgotten_copies_keep_the_rest(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = vt_model_new_streaming();
	assert_non_null(m);
	b_begin(&b, m, 100, 1000, 1000);
	enum { N = 3000 };
	static uint8_t live[N];
	rng_state = 99;
	uint64_t t = 1;
	for (uint32_t round = 0; round < 20000; round++) {
		uint32_t k = (uint32_t)rnd(N);
		if (live[k]) {
			b_free(&b, t++, ADDR(k), 0);
			live[k] = 0;
		} else {
			b_alloc(&b, t++, ADDR(k), 1000 + k, 0);
			b_htod(&b, t++, ADDR(k), k + 1, 0);
			live[k] = 1;
		}
	}
	uint32_t nlive = 0;
	for (uint32_t i = 0; i < m->nallocs; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (a->t_free != VT_T_NEVER)
			continue;
		nlive++;
		assert_int_equal(vt_model_copies(m, a)->h2d_bytes, a->bytes - 1000 + 1);
	}
	uint32_t want = 0;
	for (uint32_t k = 0; k < N; k++)
		want += live[k];
	assert_int_equal(nlive, want);
	assert_int_equal(m->ncopies, want);
	vt_model_free(m);
}

/* Two processes on their own devices: each device's peak is exact. Two
 * on one device: each one's own peak, and the model says how many. */
static void test_processes(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = vt_model_new_streaming();
	assert_non_null(m);
	b_begin(&b, m, 100, 1000, 1000);
	b_alloc(&b, 10, 0x1000, 500, 0);
	b_alloc(&b, 20, 0x9000, 700, 1);
	b_free(&b, 30, 0x1000, 0);
	vt_model_end_process(m, b.proc);
	b_begin(&b, m, 200, 1000, 1000);
	b_alloc(&b, 15, 0x1000, 300, 2); /* the same address, another process */
	b_alloc(&b, 25, 0x2000, 900, 1);
	vt_model_finish(m);
	assert_int_equal(m->devices[0].peak_bytes, 500);
	assert_int_equal(m->devices[0].end_bytes, 0);
	assert_int_equal(m->devices[2].peak_bytes, 300);
	assert_int_equal(m->devices[2].peak_proc, 1);
	assert_int_equal(vt_stream_procs_on_device(m, 1), 2);
	assert_int_equal(vt_stream_procs_on_device(m, 0), 1);
	assert_int_equal(m->devices[1].peak_bytes, 900); /* the larger own peak */
	assert_int_equal(m->devices[1].end_bytes, 1600); /* both still hold theirs */
	uint32_t n;
	vt_stream_peaks(m, &n);
	assert_int_equal(n, 4);
	assert_int_equal(peak_of(m, 0, 1)->bytes, 700);
	assert_int_equal(peak_of(m, 1, 1)->sites[0].bytes, 900);
	vt_model_free(m);
}

/* Two processes at once on the same GPUs: the full model merges them in
 * time; the streaming model's bounds must hold its peak between them. */
static void test_shared_device_bounds(void **state)
{
	(void)state;
	int tight = 0;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		uint32_t n1 = 300 + (uint32_t)(seed * 37 % 1500),
		         n2 = 300 + (uint32_t)(seed * 53 % 1500);
		struct op *a = random_ops(seed, n1), *b = random_ops(seed + 1000, n2);
		struct vt_model *full = vt_model_new(), *sm = vt_model_new_streaming();
		assert_non_null(full);
		assert_non_null(sm);
		struct vt_model *both[2] = {full, sm};
		for (int k = 0; k < 2; k++) {
			struct builder bb;
			b_begin(&bb, both[k], 100, 1000, 1000);
			feed(&bb, a, n1);
			vt_model_end_process(both[k], bb.proc);
			b_begin(&bb, both[k], 200, 1000 + seed * 7, 1000); /* clocks apart */
			feed(&bb, b, n2);
		}
		vt_model_finish(full);
		vt_model_finish(sm);
		for (int dev = 0; dev < 2; dev++) {
			uint64_t lo, hi, peak = full->devices[dev].peak_bytes;
			vt_stream_combined_peak(sm, dev, &lo, &hi);
			assert_true(lo <= peak);
			assert_true(peak <= hi);
			assert_int_equal(sm->devices[dev].end_bytes, full->devices[dev].end_bytes);
			tight += hi - lo < peak / 4;
		}
		vt_model_free(full);
		vt_model_free(sm);
		free(a);
		free(b);
	}
	assert_true(tight > 0); /* the bounds say something, not just 0..inf */
}

/* Times of a hostile log near 2^64 and buckets of 2^63 ns: the bound's
 * grid saturates instead of wrapping (the model-replay fuzzer found a read
 * past the grid here; ASan runs this test). */
static void test_curves_at_the_end_of_time(void **state)
{
	(void)state;
	struct vt_live_curve *a = malloc(sizeof *a), *b = malloc(sizeof *b);
	assert_non_null(a);
	assert_non_null(b);
	vt_curve_init(a, 0, 63);
	vt_curve_add(a, 0, 100);
	vt_curve_add(a, (1ull << 63) + 5, 700); /* a second 2^63-ns bucket: its end wraps */
	vt_curve_init(b, UINT64_MAX - 10, 0);
	vt_curve_add(b, UINT64_MAX - 10, 300);
	vt_curve_add(b, UINT64_MAX, 50);
	const struct vt_live_curve *both[2] = {a, b};
	uint64_t hi = vt_curves_sum_bound(both, 2);
	assert_true(hi >= 700 && hi >= 300);
	assert_true(hi <= 1000);
	free(a);
	free(b);
}

/* The curve against brute force: each bucket's max is the most bytes live
 * at any time in it (the value carried in at its start, or a point in it),
 * over random walks with gaps that make it halve many times. */
static void test_curve_buckets(void **state)
{
	(void)state;
	enum { N = 20000 };
	static uint64_t t[N], v[N];
	for (uint64_t seed = 1; seed <= 20; seed++) {
		rng_state = seed;
		struct vt_live_curve *c = malloc(sizeof *c);
		assert_non_null(c);
		uint64_t now = 5000 + rnd(1000), live = 0;
		vt_curve_init(c, now, (unsigned)rnd(7));
		for (uint32_t i = 0; i < N; i++) {
			now += rnd(100) ? rnd(50) : rnd(1 << 20); /* mostly dense, some long gaps */
			live = rnd(2) ? live + rnd(1000) : live - live / (1 + rnd(4));
			t[i] = now;
			v[i] = live;
			vt_curve_add(c, now, live);
		}
		assert_true(c->n <= VT_CURVE_BUCKETS && c->n > VT_CURVE_BUCKETS / 2);
		uint32_t k = 0;
		uint64_t before = 0; /* live at the start of the bucket */
		for (uint32_t b = 0; b < c->n; b++) {
			uint64_t end = c->t0 + (b + 1) * c->width, want = before;
			for (; k < N && t[k] < end; k++) {
				want = v[k] > want ? v[k] : want;
				before = v[k];
			}
			assert_int_equal(c->max[b], want);
			assert_int_equal(c->last[b], before);
		}
		assert_int_equal(k, N);
		free(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_peaks_as_full_model),
	    cmocka_unit_test(test_memory_follows_live_allocations),
	    cmocka_unit_test(test_forgotten_copies_keep_the_rest),
	    cmocka_unit_test(test_processes),
	    cmocka_unit_test(test_curve_buckets),
	    cmocka_unit_test(test_shared_device_bounds),
	    cmocka_unit_test(test_curves_at_the_end_of_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
