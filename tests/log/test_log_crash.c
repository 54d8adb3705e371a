/* A process writing from 16 threads is SIGKILLed; every
 * write that had RETURNED (the child says so through a pipe) is in the log,
 * all records are valid, and the state word says RUNNING (no clean exit). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log_test_util.h"
#include "log_writer.h"

#define THREADS 16u
#define PER_THREAD 20000u

static int g_ack_fd;

/* An ack is (thread << 48 | records acknowledged so far). */
static void *writer_thread(void *arg)
{
	uint32_t idx = (uint32_t)(uintptr_t)arg;
	for (uint64_t k = 0; k < PER_THREAD; k++) {
		if (lt_write_counter_event(1, idx, k) < 0)
			_exit(20);
		uint64_t msg = (uint64_t)idx << 48 | (k + 1);
		while (write(g_ack_fd, &msg, sizeof msg) < 0)
			if (errno != EINTR)
				_exit(21);
	}
	return NULL;
}

static void child(const char *dir, int ack_fd)
{
	g_ack_fd = ack_fd;
	struct vt_log_config cfg = {.dir = dir, .chunk_size = 64 * 1024};
	if (vt_log_init(&cfg) < 0)
		_exit(9);
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, writer_thread, (void *)i);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	vt_log_finish(0);
	_exit(0);
}

static int read_ack(int fd, uint64_t *msg)
{
	for (;;) {
		ssize_t n = read(fd, msg, sizeof *msg);
		if (n == (ssize_t)sizeof *msg)
			return 1;
		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n == 0); /* pipe writes of 8 bytes are atomic */
		return 0;
	}
}

static void kill_after(uint64_t kill_at)
{
	char *dir = lt_make_dir();
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child(dir, p[1]);
	}
	close(p[1]);
	uint64_t acked[THREADS] = {0}, total = 0, msg;
	int killed = 0;
	while (read_ack(p[0], &msg)) {
		uint32_t idx = (uint32_t)(msg >> 48);
		assert_true(idx < THREADS);
		uint64_t count = msg & 0xffffffffffffull;
		if (count > acked[idx])
			acked[idx] = count;
		if (++total == kill_at) {
			assert_int_equal(kill(pid, SIGKILL), 0);
			killed = 1;
		}
	}
	close(p[0]);
	assert_true(killed);
	assert_int_equal(lt_wait(pid), -SIGKILL);

	char *path = lt_log_path(dir, pid, 0), err[256];
	struct vt_log *log = vt_log_open_file(path, err, sizeof err);
	assert_non_null(log);
	assert_int_equal(VT_STATE_OF(vt_log_header(log)->state), VT_STATE_RUNNING);
	struct lt_recs recs;
	lt_collect(log, &recs);
	struct lt_tally tally = {.threads = THREADS, .per_thread = PER_THREAD};
	lt_tally_events(&recs, 1, &tally);
	assert_int_equal(tally.bad, 0);
	assert_int_equal(tally.foreign, 0);
	assert_int_equal(vt_log_warnings(log), 0);
	/* complete with unsealed chunks, never damaged: the killed threads'
	 * last chunks have no seal, the chunks they had filled have theirs */
	const struct vt_log_integrity *in = vt_log_integrity(log);
	assert_int_equal(in->damaged, 0);
	assert_int_equal(in->chunks_missing, 0);
	assert_true(in->unsealed >= 1);
	if (kill_at >= THREADS * PER_THREAD / 3) /* each thread had filled chunks */
		assert_true(in->sealed_ok >= THREADS);
	assert_int_equal(in->sealed_ok + in->unsealed, vt_log_chunk_count(log));
	uint64_t found = 0;
	for (unsigned t = 0; t < THREADS; t++) {
		uint64_t k = 0;
		/* a thread's records are a prefix: 0 .. k-1, each exactly once */
		while (k < PER_THREAD && tally.seen[t * PER_THREAD + k] == 1)
			k++;
		for (uint64_t rest = k; rest < PER_THREAD; rest++)
			assert_int_equal(tally.seen[t * PER_THREAD + rest], 0);
		if (k < acked[t])
			fail_msg("thread %u: %llu records in the log, %llu acknowledged", t,
			         (unsigned long long)k, (unsigned long long)acked[t]);
		found += k;
	}
	printf("killed after %llu acks: %llu acknowledged, %llu in the log\n",
	       (unsigned long long)kill_at, (unsigned long long)total, (unsigned long long)found);
	assert_true(found >= total);
	lt_tally_free(&tally);
	lt_recs_free(&recs);
	vt_log_close(log);
	free(path);
	lt_remove_dir(dir);
	free(dir);
}

static void test_sigkill_early(void **state)
{
	(void)state;
	kill_after(THREADS * PER_THREAD / 10);
}

static void test_sigkill_middle(void **state)
{
	(void)state;
	kill_after(THREADS * PER_THREAD / 3);
}

static void test_sigkill_late(void **state)
{
	(void)state;
	kill_after(THREADS * PER_THREAD * 3 / 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sigkill_early),
	    cmocka_unit_test(test_sigkill_middle),
	    cmocka_unit_test(test_sigkill_late),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
