/* Process lifecycle around the log: exec (state EXECED, the new image writes
 * vramtrace.<pid>.1.log), a vfork child (must not touch the parent's state
 * word), and a raw clone() child that skipped pthread_atfork (it must open
 * its own log, never write into the parent's chunks). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log_test_util.h"
#include "log_writer.h"

#define CHILD_RECORDS 3000u

static struct vt_log *open_log(const char *dir, pid_t pid, unsigned n)
{
	char *path = lt_log_path(dir, pid, n), err[256];
	struct vt_log *log = vt_log_open_file(path, err, sizeof err);
	if (!log)
		fail_msg("%s", err);
	free(path);
	return log;
}

static void count_events(struct vt_log *log, uint32_t writer, uint64_t n, uint64_t *foreign)
{
	struct lt_recs recs;
	lt_collect(log, &recs);
	struct lt_tally tally = {.threads = 1, .per_thread = n};
	lt_tally_events(&recs, writer, &tally);
	assert_int_equal(tally.bad, 0);
	for (uint64_t k = 0; k < n; k++)
		assert_int_equal(tally.seen[k], 1);
	*foreign = tally.foreign;
	lt_tally_free(&tally);
	lt_recs_free(&recs);
}

/* ---- exec ---------------------------------------------------------------- */

static char g_self[4096];

static void test_exec_gets_next_log(void **state)
{
	(void)state;
	char *dir = lt_make_dir();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct vt_log_config cfg = {.dir = dir};
		if (vt_log_init(&cfg) < 0 || lt_write_counter_event(1, 0, 0) < 0)
			_exit(9);
		vt_log_before_exec();
		execl("/nonexistent/binary", "x", (char *)NULL);
		vt_log_exec_failed(); /* back to RUNNING */
		if (lt_write_counter_event(1, 0, 1) < 0)
			_exit(10);
		vt_log_before_exec();
		execl(g_self, g_self, "--exec-image", dir, (char *)NULL);
		_exit(11);
	}
	assert_int_equal(lt_wait(pid), 0);
	uint64_t foreign;
	struct vt_log *first = open_log(dir, pid, 0), *second = open_log(dir, pid, 1);
	assert_int_equal(VT_STATE_OF(vt_log_header(first)->state), VT_STATE_EXECED);
	count_events(first, 1, 2, &foreign);
	assert_int_equal(foreign, 0);
	const struct vt_file_header *h = vt_log_header(second);
	assert_int_equal(h->exec_index, 1);
	assert_int_equal(h->pid, pid);
	assert_int_equal(VT_STATE_OF(h->state), VT_STATE_EXITED);
	assert_non_null(strstr(h->cmdline + strlen(h->cmdline) + 1, "--exec-image"));
	count_events(second, 2, 10, &foreign);
	assert_int_equal(foreign, 0);
	vt_log_close(first);
	vt_log_close(second);
	lt_remove_dir(dir);
	free(dir);
}

/* The image after exec: a fresh shim would do exactly this. */
static int exec_image(const char *dir)
{
	struct vt_log_config cfg = {.dir = dir};
	if (vt_log_init(&cfg) < 0)
		return 20;
	for (uint64_t k = 0; k < 10; k++)
		if (lt_write_counter_event(2, 0, k) < 0)
			return 21;
	vt_log_finish(0);
	return 0;
}

/* ---- vfork ------------------------------------------------------------------ */

static void test_vfork_child_leaves_parent_state(void **state)
{
	(void)state;
	char *dir = lt_make_dir();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct vt_log_config cfg = {.dir = dir};
		if (vt_log_init(&cfg) < 0 || lt_write_counter_event(1, 0, 0) < 0)
			_exit(9);
		pid_t v = vfork();
		if (v == 0) {
			/* what a shim's exec/exit hooks would do in a vfork child */
			vt_log_before_exec();
			vt_log_finish(77);
			_exit(0);
		}
		if (lt_wait(v) != 0 || lt_write_counter_event(1, 0, 1) < 0)
			_exit(10);
		_exit(0); /* no finish: the parent's state must still be RUNNING */
	}
	assert_int_equal(lt_wait(pid), 0);
	struct vt_log *log = open_log(dir, pid, 0);
	assert_int_equal(vt_log_header(log)->state, VT_STATE_WORD(VT_STATE_RUNNING, 0));
	uint64_t foreign;
	count_events(log, 1, 2, &foreign);
	assert_int_equal(lt_count_logs(dir), 1);
	vt_log_close(log);
	lt_remove_dir(dir);
	free(dir);
}

/* ---- raw clone ---------------------------------------------------------------- */

static void test_raw_clone_child_opens_own_log(void **state)
{
	(void)state;
	char *dir = lt_make_dir();
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct vt_log_config cfg = {.dir = dir};
		/* the parent's thread owns a chunk with room left when it clones */
		if (vt_log_init(&cfg) < 0 || lt_write_counter_event(1, 0, 0) < 0)
			_exit(9);
		long c = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0); /* no atfork */
		if (c == 0) {
			for (uint64_t k = 0; k < CHILD_RECORDS; k++)
				if (lt_write_counter_event(2, 0, k) < 0)
					_exit(30);
			vt_log_finish(3);
			pid_t me = (pid_t)syscall(SYS_getpid);
			if (write(p[1], &me, sizeof me) != sizeof me)
				_exit(31);
			_exit(3);
		}
		if (c < 0 || lt_wait((pid_t)c) != 3)
			_exit(10);
		for (uint64_t k = 1; k < 100; k++)
			lt_write_counter_event(1, 0, k);
		vt_log_finish(0);
		_exit(0);
	}
	assert_int_equal(lt_wait(pid), 0);
	pid_t cpid;
	assert_int_equal(read(p[0], &cpid, sizeof cpid), sizeof cpid);
	uint64_t foreign;
	struct vt_log *plog = open_log(dir, pid, 0), *clog = open_log(dir, cpid, 0);
	count_events(plog, 1, 100, &foreign);
	assert_int_equal(foreign, 0); /* none of the child's records */
	count_events(clog, 2, CHILD_RECORDS, &foreign);
	assert_int_equal(foreign, 0);
	assert_int_equal(vt_log_header(clog)->state, VT_STATE_WORD(VT_STATE_EXITED, 3));
	assert_int_equal(vt_log_header(plog)->state, VT_STATE_WORD(VT_STATE_EXITED, 0));
	assert_int_equal(vt_log_warnings(plog) + vt_log_warnings(clog), 0);
	vt_log_close(plog);
	vt_log_close(clog);
	close(p[0]);
	close(p[1]);
	lt_remove_dir(dir);
	free(dir);
}

/* ---- relative trace dir, then chdir ------------------------------------------ */

static void test_relative_dir_survives_chdir(void **state)
{
	(void)state;
	char *dir = lt_make_dir(), *trace;
	assert_true(asprintf(&trace, "%s/rel", dir) > 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (chdir(dir) < 0)
			_exit(8);
		struct vt_log_config cfg = {.dir = "rel"};
		if (vt_log_init(&cfg) < 0 || chdir("/") < 0)
			_exit(9);
		pid_t c = fork(); /* the child opens its log after the chdir */
		if (c == 0)
			_exit(lt_write_counter_event(2, 0, 0) == 0 ? 0 : 1);
		_exit(lt_wait(c) == 0 && lt_write_counter_event(1, 0, 0) == 0 ? 0 : 10);
	}
	assert_int_equal(lt_wait(pid), 0);
	assert_int_equal(lt_count_logs(trace), 2);
	assert_int_equal(access("/rel", F_OK), -1);
	lt_remove_dir(trace);
	lt_remove_dir(dir);
	free(trace);
	free(dir);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--exec-image"))
		return exec_image(argv[2]);
	ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
	if (n <= 0)
		return 1;
	g_self[n] = '\0';
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_gets_next_log),
		cmocka_unit_test(test_vfork_child_leaves_parent_state),
		cmocka_unit_test(test_raw_clone_child_opens_own_log),
		cmocka_unit_test(test_relative_dir_survives_chdir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
