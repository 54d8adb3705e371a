/* Following a log while threads write it (vt_log_follow): read in many
 * passes while 4 threads write small chunks full, every event arrives
 * exactly once, each thread's in its own order, and a pass after the
 * writers stopped finds nothing new. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log_test_util.h"
#include "log_writer.h"

#define THREADS 4u
#define PER_THREAD 20000u

struct seen {
	uint32_t count[THREADS][PER_THREAD];
	uint64_t last[THREADS]; /* the thread's last counter + 1 */
	uint64_t out_of_order, events;
};

static void *writer(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	for (uint64_t k = 0; k < PER_THREAD; k++) {
		if (lt_write_counter_event(1, t, k) < 0)
			return (void *)1;
		if (k % 2000 == 0)
			usleep(1000); /* let the reader catch up mid-chunk */
	}
	return NULL;
}

static int on_record(const struct vt_record_view *rec, void *ctx)
{
	struct seen *s = ctx;
	if (rec->type != VT_REC_ALLOC)
		return 0;
	const struct vt_event *ev = rec->data;
	uint32_t t = (uint32_t)ev->addr;
	if ((ev->addr >> 32) != 1 || t >= THREADS || ev->bytes >= PER_THREAD)
		return 0; /* the first event, from main */
	s->count[t][ev->bytes]++;
	if (ev->bytes + 1 <= s->last[t])
		s->out_of_order++;
	s->last[t] = ev->bytes + 1;
	s->events++;
	return 0;
}

static void test_follow_while_writing(void **state)
{
	(void)state;
	char *dir = lt_make_dir();
	struct vt_log_config cfg = {.dir = dir, .chunk_size = 16384};
	assert_int_equal(vt_log_init(&cfg), 0);
	assert_int_equal(lt_write_counter_event(0, 0, 0), 0); /* the log exists now */
	char *path = lt_log_path(dir, getpid(), 0), err[256];
	struct vt_log *log = vt_log_open_file(path, err, sizeof err);
	assert_non_null(log);
	static struct seen s;
	pthread_t th[THREADS];
	for (uint32_t t = 0; t < THREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, writer, (void *)(uintptr_t)t), 0);
	unsigned passes = 0;
	while (s.events < THREADS * PER_THREAD && passes < 100000) {
		assert_int_equal(vt_log_follow(log, on_record, &s), 0);
		passes++;
		usleep(200);
	}
	for (uint32_t t = 0; t < THREADS; t++)
		assert_null(pthread_join(th[t], NULL) == 0 ? NULL : (void *)1);
	assert_int_equal(vt_log_follow(log, on_record, &s), 0);
	uint64_t before = s.events;
	assert_int_equal(vt_log_follow(log, on_record, &s), 0);
	assert_int_equal(s.events, before); /* nothing read twice */
	assert_int_equal(s.events, THREADS * PER_THREAD);
	assert_int_equal(s.out_of_order, 0);
	for (uint32_t t = 0; t < THREADS; t++)
		for (uint32_t k = 0; k < PER_THREAD; k++)
			assert_int_equal(s.count[t][k], 1);
	assert_true(passes > 1); /* it did follow, not read once at the end */
	assert_int_equal(vt_log_warnings(log), 0);
	vt_log_close(log);
	free(path);
	lt_remove_dir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_follow_while_writing)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
