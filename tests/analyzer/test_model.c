/* The memory model, fed in-memory records: address reuse, async frees, VMM
 * handles and mappings, copies, peaks per device and state at any moment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model_history.h"

#include "model_builder.h"
#include "model_query.h"

static struct vt_model *new_model(struct builder *b)
{
	struct vt_model *m = vt_model_new();
	assert_non_null(m);
	b_begin(b, m, 100, 1000, 1000);
	return m;
}

static void test_address_reuse(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = new_model(&b);
	b_alloc(&b, 10, 0x1000, 256, 0);
	b_htod(&b, 11, 0x1000, 256, 0);
	b_free(&b, 20, 0x1000, 0);
	b_alloc(&b, 30, 0x1000, 512, 0); /* same address, new allocation */
	b_htod(&b, 31, 0x1080, 64, 0);   /* interior copy goes to the new one */
	vt_model_finish(m);
	assert_int_equal(m->nallocs, 2);
	assert_int_equal(m->allocs[0].t_free, 20);
	assert_int_equal(vt_model_copies(m, &m->allocs[0])->h2d_bytes, 256);
	assert_int_equal(vt_model_copies(m, &m->allocs[1])->h2d_bytes, 64);
	assert_int_equal(m->allocs[1].t_free, VT_T_NEVER);
	assert_int_equal(m->totals.alloc_calls, 2);
	assert_int_equal(m->totals.free_calls, 1);
	assert_int_equal(m->totals.htod_calls, 2);
	assert_int_equal(m->totals.htod_bytes, 320);
	assert_int_equal(m->devices[0].peak_bytes, 512);
	assert_int_equal(m->devices[0].peak_t_ns, 30);
	/* the interior copy is kept as a range of the second allocation */
	uint32_t n;
	const struct vt_copy_range *r = vt_model_ranges(m, 1, &n);
	assert_int_equal(n, 1);
	assert_int_equal(r->offset, 0x80);
	assert_int_equal(r->bytes, 64);
	vt_model_free(m);
}

static void test_lost_free_closes_stale(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = new_model(&b);
	b_alloc(&b, 10, 0x1000, 100, 0);
	b_alloc(&b, 20, 0x1000, 300, 0); /* FREE never recorded */
	vt_model_finish(m);
	assert_int_equal(m->allocs[0].t_free, 20);
	assert_true(m->allocs[0].flags & VT_AF_IMPLICIT_FREE);
	assert_int_equal(m->totals.implicit_frees, 1);
	assert_int_equal(m->devices[0].peak_bytes, 300); /* not 400 */
	vt_model_free(m);
}

static void test_async_free(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = new_model(&b);
	b_event(&b, VT_REC_ALLOC, 10, 0x2000, 1000, 0, VT_ALLOC_ASYNC, 1, API_ALLOC_ASYNC);
	b_event(&b, VT_REC_FREE, 20, 0x2000, 0, 0, VT_ALLOC_ASYNC, 1, API_FREE_ASYNC);
	/* the stream-ordered pool hands the address out again at once */
	b_event(&b, VT_REC_ALLOC, 21, 0x2000, 1000, 0, VT_ALLOC_ASYNC, 1, API_ALLOC_ASYNC);
	vt_model_finish(m);
	assert_int_equal(m->nallocs, 2);
	assert_int_equal(m->allocs[0].t_free, 20);
	assert_int_equal(m->totals.implicit_frees, 0);
	assert_int_equal(m->devices[1].peak_bytes, 1000);
	assert_int_equal(m->devices[1].end_bytes, 1000);
	assert_int_equal(m->devices[0].peak_bytes, 0);
	vt_model_free(m);
}

static void test_vmm(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = new_model(&b);
	const uint64_t handle = 0xabc, va = 0x7000000;
	b_event(&b, VT_REC_RESERVE, 5, va, 4 << 20, 0, 0, 0, 18);
	b_event(&b, VT_REC_ALLOC, 10, handle, 2 << 20, 0, VT_ALLOC_VMM, 0, API_CREATE);
	b_event(&b, VT_REC_MAP, 11, va, 2 << 20, handle, 0, 0, API_MAP);
	b_event(&b, VT_REC_MAP, 12, va + (2 << 20), 2 << 20, handle, 0, 0, API_MAP); /* alias */
	b_htod(&b, 13, va + 4096, 1024, 0);
	b_htod(&b, 14, va + (2 << 20), 2048, 0);
	b_event(&b, VT_REC_FREE, 20, handle, 0, 0, VT_ALLOC_VMM, 0, API_RELEASE);
	/* released but still mapped twice: the memory is still there */
	b_event(&b, VT_REC_UNMAP, 30, va, 2 << 20, 0, 0, 0, API_UNMAP);
	b_event(&b, VT_REC_UNMAP, 40, va + (2 << 20), 2 << 20, 0, 0, 0, API_UNMAP);
	vt_model_finish(m);
	assert_int_equal(m->nallocs, 1);
	const struct vt_alloc *a = &m->allocs[0];
	assert_int_equal(a->bytes, 2 << 20);
	assert_int_equal(vt_model_copies(m, a)->h2d_bytes, 3072);
	assert_int_equal(vt_model_copies(m, a)->h2d_copies, 2);
	assert_int_equal(vt_model_copies(m, a)->mapped_at,
	                 va);            /* the first mapping, not the alias */
	assert_int_equal(a->t_free, 40); /* the last unmap after the release */
	assert_int_equal(m->devices[0].peak_bytes, 2 << 20);
	assert_int_equal(m->devices[0].end_bytes, 0);
	struct vt_moment at35 = vt_moment_at_time(35), at45 = vt_moment_at_time(45);
	assert_int_equal(vt_model_live_bytes(m, &at35, 0), 2 << 20);
	assert_int_equal(vt_model_live_bytes(m, &at45, 0), 0);
	vt_model_free(m);
}

static void test_vmm_release_after_unmap(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = new_model(&b);
	b_event(&b, VT_REC_ALLOC, 10, 0x55, 4096, 0, VT_ALLOC_VMM, 0, API_CREATE);
	b_event(&b, VT_REC_MAP, 11, 0x9000, 4096, 0x55, 0, 0, API_MAP);
	b_event(&b, VT_REC_UNMAP, 12, 0x9000, 4096, 0, 0, 0, API_UNMAP);
	b_htod(&b, 13, 0x9000, 16, 0); /* after unmap: attaches to nothing */
	b_event(&b, VT_REC_FREE, 14, 0x55, 0, 0, VT_ALLOC_VMM, 0, API_RELEASE);
	vt_model_finish(m);
	assert_int_equal(m->allocs[0].t_free, 14);
	assert_int_equal(vt_model_copies(m, &m->allocs[0])->h2d_bytes, 0);
	assert_int_equal(m->totals.copy_unattached, 1);
	vt_model_free(m);
}

static void test_peak_and_at(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = new_model(&b);
	b_device(&b, 0, 1ull << 30, "Sim GPU 0");
	b_alloc(&b, 100, 0x1000, 1000, 0);
	b_alloc(&b, 200, 0x5000, 3000, 0);
	b_free(&b, 300, 0x1000, 0);
	b_alloc(&b, 400, 0x9000, 500, 0); /* 3500 < 4000: not a new peak */
	b_free(&b, 500, 0x5000, 0);
	b_alloc(&b, 600, 0x1000, 100, 1);
	vt_model_finish(m);
	assert_int_equal(m->devices[0].total_bytes, 1ull << 30);
	assert_string_equal(m->devices[0].name, "Sim GPU 0");
	assert_int_equal(m->devices[0].peak_bytes, 4000);
	assert_int_equal(m->devices[0].peak_t_ns, 200);
	assert_int_equal(m->devices[0].end_bytes, 500);
	assert_int_equal(m->devices[1].peak_bytes, 100);
	char label[64];
	struct vt_moment at;
	assert_int_equal(vt_model_parse_at(m, "peak", &at, label, sizeof label), 0);
	assert_int_equal(vt_model_live_bytes(m, &at, 0), 4000);
	assert_int_equal(vt_model_parse_at(m, "end", &at, label, sizeof label), 0);
	assert_int_equal(vt_model_live_bytes(m, &at, 0), 500);
	assert_int_equal(vt_model_live_bytes(m, &at, -1), 600);
	/* seconds from the trace start: 350 ns */
	assert_int_equal(vt_model_parse_at(m, "0.00000035", &at, label, sizeof label), 0);
	assert_int_equal(vt_model_live_bytes(m, &at, 0), 3000);
	assert_int_equal(vt_model_parse_at(m, "0.0000003", &at, label, sizeof label), 0);
	assert_int_equal(vt_model_live_bytes(m, &at, 0), 3000); /* the free at 300 happened */
	assert_int_equal(vt_model_parse_at(m, "soon", &at, label, sizeof label), -1);
	assert_int_equal(vt_model_parse_at(m, "-1", &at, label, sizeof label), -1);
	/* state at a seq: right after the second allocation */
	at = vt_moment_at_seq(0, m->allocs[1].seq_alloc, m->allocs[1].t_alloc);
	assert_int_equal(vt_model_live_bytes(m, &at, 0), 4000);
	at = vt_moment_at_seq(0, m->allocs[1].seq_alloc - 1, m->allocs[0].t_alloc);
	assert_int_equal(vt_model_live_bytes(m, &at, 0), 1000);
	vt_model_free(m);
}

static void test_two_processes_share_a_device(void **state)
{
	(void)state;
	struct vt_model *m = vt_model_new();
	struct builder a, b;
	/* process B started 1000 ns after A; its t_ns are relative to its own base */
	b_begin(&a, m, 1, 5000, 5000);
	b_alloc(&a, 100, 0x1000, 700, 0);
	b_free(&a, 2000, 0x1000, 0);
	vt_model_end_process(m, a.proc);
	b_begin(&b, m, 2, 6000, 5000);
	b_alloc(&b, 50, 0x1000, 500, 0); /* trace t = 1050: both live */
	b_free(&b, 500, 0x1000, 0);      /* trace t = 1500 */
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	assert_int_equal(m->nprocs, 2);
	assert_int_equal(m->allocs[1].t_alloc, 1050);
	assert_int_equal(m->devices[0].peak_bytes, 1200);
	assert_int_equal(m->devices[0].peak_t_ns, 1050);
	assert_int_equal(m->devices[0].peak_proc, 1);
	vt_model_free(m);
}

static void test_copies_attach_to_containing(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = new_model(&b);
	b_alloc(&b, 1, 0x10000, 1 << 20, 0); /* dataset-like */
	b_alloc(&b, 2, 0x200000, 4096, 0);   /* batch */
	for (int i = 0; i < 4; i++)          /* uploaded in 4 chunks */
		b_htod(&b, 3 + i, 0x10000 + (uint64_t)i * (256 << 10), 256 << 10, 0);
	b_event(&b, VT_REC_COPY, 10, 0x200000, 4096, 0x10000 + 8192, VT_COPY_DTOD, 0, API_DTOD);
	b_htod(&b, 11, 0x900000, 16, 0); /* into nothing we know */
	vt_model_finish(m);
	assert_int_equal(vt_model_copies(m, &m->allocs[0])->h2d_bytes, 1 << 20);
	assert_int_equal(vt_model_copies(m, &m->allocs[0])->h2d_copies, 4);
	assert_int_equal(vt_model_copies(m, &m->allocs[0])->d2d_out_copies, 1);
	assert_int_equal(vt_model_copies(m, &m->allocs[1])->d2d_in_bytes, 4096);
	assert_int_equal(vt_model_copies(m, &m->allocs[1])->d2d_src, 0);
	assert_int_equal(m->totals.copy_unattached, 1);
	uint32_t n;
	vt_model_ranges(m, 0, &n);
	assert_int_equal(n, 4);
	vt_model_free(m);
}

static void test_failed_alloc_is_kept(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = new_model(&b);
	struct vt_event ev = {0};
	ev.seq = ++b.seq;
	ev.t_ns = 7;
	ev.bytes = 1ull << 40;
	ev.result = 2; /* CUDA_ERROR_OUT_OF_MEMORY */
	ev.api = API_ALLOC;
	vt_model_feed(m, b.proc, VT_REC_ALLOC, &ev, sizeof ev);
	vt_model_finish(m);
	assert_int_equal(m->nallocs, 0);
	assert_int_equal(m->nfailed, 1);
	assert_int_equal(m->failed[0].bytes, 1ull << 40);
	assert_int_equal(m->totals.failed_allocs, 1);
	vt_model_free(m);
}

static void test_short_records_ignored(void **state)
{
	(void)state;
	struct builder b;
	struct vt_model *m = new_model(&b);
	char junk[16] = {0};
	vt_model_feed(m, b.proc, VT_REC_ALLOC, junk, sizeof junk);
	vt_model_feed(m, b.proc, VT_REC_MARK, junk, 8);
	vt_model_feed(m, b.proc, VT_REC_STACK, junk, 8);
	vt_model_feed(m, 99, VT_REC_ALLOC, junk, sizeof junk);
	vt_model_finish(m);
	assert_int_equal(m->nallocs, 0);
	vt_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_address_reuse),
	    cmocka_unit_test(test_lost_free_closes_stale),
	    cmocka_unit_test(test_async_free),
	    cmocka_unit_test(test_vmm),
	    cmocka_unit_test(test_vmm_release_after_unmap),
	    cmocka_unit_test(test_peak_and_at),
	    cmocka_unit_test(test_two_processes_share_a_device),
	    cmocka_unit_test(test_copies_attach_to_containing),
	    cmocka_unit_test(test_failed_alloc_is_kept),
	    cmocka_unit_test(test_short_records_ignored),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
