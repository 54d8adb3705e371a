/* The compact free (VT_REC_FREE_SHORT, 40 bytes): the reader delivers it as
 * the VT_REC_FREE vt_event it stands for, field for field, in seq order with
 * full events; vt_log_stored_size() tells its real size; a compact free too
 * short to hold its fields is warned about and skipped, never delivered. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log_test_util.h"
#include "log_writer.h"

static void write_short(uint64_t addr, uint32_t stack_id, int32_t result)
{
	struct vt_free_event *f = vt_log_reserve(sizeof *f);
	assert_non_null(f);
	f->stack_id = stack_id;
	f->seq = vt_log_next_seq();
	f->t_ns = 1234;
	f->addr = addr;
	f->api = 3;
	f->rt_api = 2;
	f->device = 1;
	f->kind = VT_ALLOC_VMM;
	f->result = result;
	vt_log_commit(f, VT_REC_FREE_SHORT, sizeof *f);
}

struct seen {
	const struct vt_log *log;
	struct vt_event ev[8];
	uint32_t type[8], size[8], stored[8];
	size_t n;
};

static int keep(const struct vt_record_view *rec, void *ctx)
{
	struct seen *s = ctx;
	if (rec->type > VT_REC_POOL_TRIM && rec->type != VT_REC_FREE_SHORT)
		return 0;
	assert_true(s->n < 8);
	assert_int_equal(rec->type == VT_REC_FREE_SHORT, 0); /* never raw */
	s->type[s->n] = rec->type;
	s->size[s->n] = rec->size;
	s->stored[s->n] = vt_log_stored_size(s->log, rec);
	memcpy(&s->ev[s->n++], rec->data, sizeof(struct vt_event));
	return 0;
}

static void compact_free_reads_as_free(void **state)
{
	(void)state;
	char *dir = lt_make_dir();
	struct vt_log_config cfg = {.dir = dir};
	assert_int_equal(vt_log_init(&cfg), 0);
	struct vt_event full = {
	    .addr = 0x1000, .bytes = 0, .stream = 0x77, .api = 4, .kind = VT_ALLOC_ASYNC};
	assert_int_equal(vt_log_write_event(VT_REC_FREE, &full), 0);
	write_short(0xabc000, 9, 0);
	void *bad = vt_log_reserve(32); /* a compact free cut to 32 bytes */
	assert_non_null(bad);
	vt_log_commit(bad, VT_REC_FREE_SHORT, 32);
	write_short(0xdef000, 0, 1);
	vt_log_finish(0);

	char *path = lt_log_path(dir, getpid(), 0);
	char err[256];
	lt_capture_begin();
	struct vt_log *log = vt_log_open_file(path, err, sizeof err);
	assert_non_null(log);
	struct seen s = {.log = log};
	assert_int_equal(vt_log_for_each(log, keep, &s), 0);
	char *warn = lt_capture_end();
	assert_int_equal(vt_log_warnings(log), 1);
	assert_non_null(strstr(warn, "invalid free_short record"));

	assert_int_equal(s.n, 3);
	/* the index knows the types the file holds, as stored (the Python
	 * string pass skips a log that has none) */
	assert_true(vt_log_may_hold(log, VT_REC_FREE_SHORT));
	assert_true(vt_log_may_hold(log, VT_REC_FREE));
	assert_false(vt_log_may_hold(log, VT_REC_PYSTR));
	assert_true(vt_log_may_hold(log, 100));
	assert_int_equal(s.stored[0], 64);
	assert_int_equal(s.ev[0].stream, 0x77);
	for (size_t i = 1; i < 3; i++) {
		const struct vt_event *e = &s.ev[i];
		assert_int_equal(s.type[i], VT_REC_FREE);
		assert_int_equal(s.size[i], sizeof(struct vt_event));
		assert_int_equal(s.stored[i], sizeof(struct vt_free_event));
		assert_int_equal(e->hdr, VT_HDR(VT_REC_FREE, sizeof(struct vt_event)));
		assert_true(e->seq > s.ev[i - 1].seq);
		assert_int_equal(e->t_ns, 1234);
		assert_int_equal(e->bytes | e->aux | e->stream, 0);
		assert_int_equal(e->api, 3);
		assert_int_equal(e->rt_api, 2);
		assert_int_equal(e->device, 1);
		assert_int_equal(e->kind, VT_ALLOC_VMM);
	}
	assert_int_equal(s.ev[1].addr, 0xabc000);
	assert_int_equal(s.ev[1].stack_id, 9);
	assert_int_equal(s.ev[1].result, 0);
	assert_int_equal(s.ev[2].addr, 0xdef000);
	assert_int_equal(s.ev[2].result, 1);
	free(warn);
	vt_log_close(log);
	free(path);
	lt_remove_dir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(compact_free_reads_as_free)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
