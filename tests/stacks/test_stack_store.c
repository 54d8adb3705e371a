/* The reader-side stack table: stacks fold across threads and processes by
 * (module, offset), not by raw address; modules follow load/unload; a frame
 * in no module folds only within its log; malformed records are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stack_store.h"
#include "vramtrace/format.h"

static uint64_t buf[1024];

static struct vt_record_view module_rec(uint8_t event, uint64_t base, uint64_t lo, uint64_t hi,
					const char *path, uint8_t bid)
{
	memset(buf, 0, sizeof buf);
	struct vt_module_rec *m = (struct vt_module_rec *)buf;
	m->event = event;
	m->base = base;
	m->lo = lo;
	m->hi = hi;
	m->build_id_len = bid ? 20 : 0;
	memset(m->build_id, bid, m->build_id_len);
	m->path_len = (uint16_t)strlen(path);
	memcpy(m->path, path, m->path_len);
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof *m + m->path_len));
	m->hdr = VT_HDR(VT_REC_MODULE, size);
	return (struct vt_record_view){VT_REC_MODULE, size, buf, 1, 0};
}

static struct vt_record_view stack_rec(uint32_t id, const uint64_t *frames, unsigned depth)
{
	memset(buf, 0, sizeof buf);
	struct vt_stack_rec *s = (struct vt_stack_rec *)buf;
	s->stack_id = id;
	s->depth = (uint16_t)depth;
	memcpy(s->frames, frames, depth * sizeof *frames);
	uint32_t size = (uint32_t)(sizeof *s + depth * 8);
	s->hdr = VT_HDR(VT_REC_STACK, size);
	return (struct vt_record_view){VT_REC_STACK, size, buf, 1, 0};
}

static void add(struct vt_stack_store *st, uint32_t log, struct vt_record_view r)
{
	char err[128];
	assert_int_equal(vt_stack_store_add(st, log, &r, err, sizeof err), 0);
}

static void folds_threads_and_processes(void **state)
{
	(void)state;
	struct vt_stack_store *st = vt_stack_store_new();
	/* the same binary at two load addresses in two processes */
	add(st, 0, module_rec(VT_MODULE_LOAD, 0x555500000000, 0x555500001000, 0x555500009000, "/bin/job", 7));
	add(st, 1, module_rec(VT_MODULE_LOAD, 0x561200000000, 0x561200001000, 0x561200009000, "/bin/job", 7));
	uint64_t a[3] = {0x555500001233, 0x555500002455, 0x555500003677};
	uint64_t b[3] = {0x561200001233, 0x561200002455, 0x561200003677};
	add(st, 0, stack_rec(1, a, 3)); /* thread 1 */
	add(st, 0, stack_rec(2, a, 3)); /* thread 2, its own id */
	add(st, 1, stack_rec(1, b, 3)); /* other process */
	uint32_t c = vt_stack_store_canonical(st, 0, 1);
	assert_int_not_equal(c, 0);
	assert_int_equal(vt_stack_store_canonical(st, 0, 2), c);
	assert_int_equal(vt_stack_store_canonical(st, 1, 1), c);
	assert_int_equal(vt_stack_store_count(st), 1);
	assert_int_equal(vt_stack_store_records(st), 3);
	const struct vt_stack *s = vt_stack_store_stack(st, c);
	assert_int_equal(s->depth, 3);
	assert_int_equal(s->records, 3);
	assert_int_equal(s->frames[0].offset, 0x1233);
	assert_int_equal(s->frames[0].addr, 0x555500001233);
	const struct vt_module_info *m = vt_stack_store_module(st, s->frames[0].module);
	assert_non_null(m);
	assert_string_equal(m->path, "/bin/job");
	assert_int_equal(m->build_id_len, 20);
	assert_int_equal(vt_stack_store_module_count(st), 1);
	/* a different frame list is a different stack */
	b[2]++;
	add(st, 1, stack_rec(2, b, 3));
	assert_int_not_equal(vt_stack_store_canonical(st, 1, 2), c);
	assert_int_equal(vt_stack_store_canonical(st, 1, 99), 0);
	vt_stack_store_free(st);
}

static void modules_follow_load_and_unload(void **state)
{
	(void)state;
	struct vt_stack_store *st = vt_stack_store_new();
	add(st, 0, module_rec(VT_MODULE_LOAD, 0x7f0000000000, 0x7f0000000000, 0x7f0000010000, "/lib/liba.so", 1));
	uint64_t f[1] = {0x7f0000004000};
	add(st, 0, stack_rec(1, f, 1));
	add(st, 0, module_rec(VT_MODULE_UNLOAD, 0x7f0000000000, 0x7f0000000000, 0x7f0000010000, "/lib/liba.so", 1));
	add(st, 0, stack_rec(2, f, 1)); /* after unload: in no module */
	add(st, 0, module_rec(VT_MODULE_LOAD, 0x7f0000000000, 0x7f0000000000, 0x7f0000010000, "/lib/libb.so", 2));
	add(st, 0, stack_rec(3, f, 1)); /* same address, another library */
	const struct vt_stack *s1 = vt_stack_store_stack(st, vt_stack_store_canonical(st, 0, 1));
	const struct vt_stack *s2 = vt_stack_store_stack(st, vt_stack_store_canonical(st, 0, 2));
	const struct vt_stack *s3 = vt_stack_store_stack(st, vt_stack_store_canonical(st, 0, 3));
	assert_string_equal(vt_stack_store_module(st, s1->frames[0].module)->path, "/lib/liba.so");
	assert_int_equal(s2->frames[0].module, 0);
	assert_string_equal(vt_stack_store_module(st, s3->frames[0].module)->path, "/lib/libb.so");
	assert_int_equal(vt_stack_store_count(st), 3);
	vt_stack_store_free(st);
}

static void unknown_frames_fold_only_within_a_log(void **state)
{
	(void)state;
	struct vt_stack_store *st = vt_stack_store_new();
	uint64_t f[2] = {0x1000, 0x2000};
	add(st, 0, stack_rec(1, f, 2));
	add(st, 0, stack_rec(2, f, 2));
	add(st, 1, stack_rec(1, f, 2));
	assert_int_equal(vt_stack_store_canonical(st, 0, 1), vt_stack_store_canonical(st, 0, 2));
	assert_int_not_equal(vt_stack_store_canonical(st, 0, 1), vt_stack_store_canonical(st, 1, 1));
	vt_stack_store_free(st);
}

static void malformed_records_are_refused(void **state)
{
	(void)state;
	struct vt_stack_store *st = vt_stack_store_new();
	char err[128];
	uint64_t f[4] = {1, 2, 3, 4};
	struct vt_record_view r = stack_rec(1, f, 4);
	r.size = 24; /* claims 4 frames, holds 1 */
	assert_int_equal(vt_stack_store_add(st, 0, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "malformed stack"));
	r = stack_rec(0, f, 1); /* id 0 is "no stack" */
	assert_int_equal(vt_stack_store_add(st, 0, &r, err, sizeof err), -1);
	r = stack_rec(5, f, 1);
	((struct vt_stack_rec *)buf)->py_depth = 3000; /* python words beyond the record */
	assert_int_equal(vt_stack_store_add(st, 0, &r, err, sizeof err), -1);
	r = module_rec(VT_MODULE_LOAD, 0, 0x2000, 0x1000, "/x", 0); /* lo > hi */
	assert_int_equal(vt_stack_store_add(st, 0, &r, err, sizeof err), -1);
	r = module_rec(VT_MODULE_LOAD, 0, 0x1000, 0x2000, "/lib/long-name.so", 0);
	r.size = sizeof(struct vt_module_rec) + 4; /* path runs past the record */
	assert_int_equal(vt_stack_store_add(st, 0, &r, err, sizeof err), -1);
	r = module_rec(VT_MODULE_LOAD, 0, 0x1000, 0x2000, "/x", 0);
	((struct vt_module_rec *)buf)->build_id_len = 40;
	assert_int_equal(vt_stack_store_add(st, 0, &r, err, sizeof err), -1);
	assert_int_equal(vt_stack_store_count(st), 0);
	assert_null(vt_stack_store_stack(st, 0));
	assert_null(vt_stack_store_stack(st, 1));
	assert_null(vt_stack_store_module(st, 0));
	vt_stack_store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(folds_threads_and_processes),
		cmocka_unit_test(modules_follow_load_and_unload),
		cmocka_unit_test(unknown_frames_fold_only_within_a_log),
		cmocka_unit_test(malformed_records_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
