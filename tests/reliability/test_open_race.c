/* Opening the log while other threads already record: in
 * a job, the first thread to need the log opens it while its other threads
 * are making calls; a record made meanwhile must wait for the file, not be
 * dropped before there is a header to count the drop in. Here 6 threads spin
 * writing events while the main thread calls vt_log_init; vt_log_init must
 * succeed every time (before the fix it failed when a spinning thread won
 * the race to create the file), and every event a thread wrote after
 * vt_log_init returned must be in the log. 200 fresh processes. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log_test_util.h"
#include "log_writer.h"

#define SPINNERS 6u
#define AFTER 200u /* events each spinner writes once the log is open */

static atomic_int g_opened;

static void *spinner(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	uint64_t k = 0;
	while (!atomic_load(&g_opened))
		lt_write_counter_event(3, t, 0); /* may be dropped: no log yet */
	for (k = 1; k <= AFTER; k++)
		if (lt_write_counter_event(3, t, k) < 0)
			_exit(20); /* the log is open: nothing may be refused */
	return NULL;
}

static void child(const char *dir)
{
	pthread_t th[SPINNERS];
	for (uintptr_t i = 0; i < SPINNERS; i++)
		pthread_create(&th[i], NULL, spinner, (void *)i);
	struct vt_log_config cfg = {.dir = dir};
	int rc = vt_log_init(&cfg);
	atomic_store(&g_opened, 1);
	for (unsigned i = 0; i < SPINNERS; i++)
		pthread_join(th[i], NULL);
	vt_log_finish(0);
	_exit(rc == 0 ? 0 : 10);
}

static void test_open_while_recording(void **state)
{
	(void)state;
	unsigned failed_init = 0, runs = 200;
	for (unsigned run = 0; run < runs; run++) {
		char *dir = lt_make_dir();
		pid_t pid = fork();
		if (pid == 0)
			child(dir);
		int status = lt_wait(pid);
		if (status == 10)
			failed_init++;
		else
			assert_int_equal(status, 0);
		if (status == 0) {
			char *path = lt_log_path(dir, pid, 0), err[256];
			struct vt_log *log = vt_log_open_file(path, err, sizeof err);
			assert_non_null(log);
			struct lt_recs recs;
			lt_collect(log, &recs);
			struct lt_tally tally = {.threads = SPINNERS, .per_thread = AFTER + 1};
			lt_tally_events(&recs, 3, &tally);
			for (unsigned t = 0; t < SPINNERS; t++)
				for (unsigned k = 1; k <= AFTER; k++)
					if (tally.seen[t * (AFTER + 1) + k] != 1)
						fail_msg("run %u thread %u: event %u seen %u times", run, t, k,
						         tally.seen[t * (AFTER + 1) + k]);
			lt_tally_free(&tally);
			lt_recs_free(&recs);
			vt_log_close(log);
			free(path);
		}
		lt_remove_dir(dir);
		free(dir);
	}
	printf("%u runs: vt_log_init failed %u times while other threads recorded\n", runs, failed_init);
	assert_int_equal(failed_init, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_open_while_recording)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
