/* A symlink planted at the log's path is never followed:
 * the target is unchanged, the process runs on, one warning line. Also: the
 * trace directory is created private (0700), the log 0600. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log_test_util.h"
#include "log_writer.h"

static const char precious[] = "precious bytes\n";

/* Child: waits until the parent planted the link, records, runs on. */
static void recording_child(const char *dir, int go_fd, const char *err_path)
{
	char c;
	if (read(go_fd, &c, 1) != 1)
		_exit(40);
	int errfd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(errfd, STDERR_FILENO);
	struct vt_log_config cfg = {.dir = dir};
	if (vt_log_init(&cfg) != -1)
		_exit(41);
	for (uint64_t k = 0; k < 1000; k++)
		if (lt_write_counter_event(1, 0, k) != -1)
			_exit(42);
	if (vt_log_write_mark(VT_MARK_USER, "x", 0) != -1 || vt_log_init(&cfg) != -1)
		_exit(43);
	vt_log_finish(0);
	_exit(0);
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void planted_link(int dangling)
{
	char *dir = lt_make_dir(), *target, *err_path;
	assert_true(asprintf(&target, "%s/target.txt", dir) > 0);
	assert_true(asprintf(&err_path, "%s/child.err", dir) > 0);
	if (!dangling) {
		FILE *f = fopen(target, "w");
		fputs(precious, f);
		fclose(f);
	}
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		recording_child(dir, go[0], err_path);
	char *link_path = lt_log_path(dir, pid, 0);
	assert_int_equal(symlink(target, link_path), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(lt_wait(pid), 0); /* the job ran on */

	struct stat st;
	assert_int_equal(lstat(link_path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	if (dangling)
		assert_int_equal(access(target, F_OK), -1); /* not created through the link */
	else
		assert_string_equal(read_file(target), precious);
	assert_int_equal(lt_count_logs(dir), 1); /* no log beside the link either */
	const char *warn = read_file(err_path);
	fputs(warn, stdout);
	assert_int_equal(lt_count_lines(warn), 1);
	assert_int_equal(strncmp(warn, "vramtrace: ", 11), 0);
	assert_non_null(strstr(warn, "symbolic link"));
	close(go[0]);
	close(go[1]);
	free(link_path);
	free(target);
	free(err_path);
	lt_remove_dir(dir);
	free(dir);
}

static void test_symlink_to_file_not_followed(void **state)
{
	(void)state;
	planted_link(0);
}

static void test_dangling_symlink_not_followed(void **state)
{
	(void)state;
	planted_link(1);
}

static void test_dir_created_private(void **state)
{
	(void)state;
	char *base = lt_make_dir(), *dir;
	assert_true(asprintf(&dir, "%s/a/b", base) > 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		umask(0);
		struct vt_log_config cfg = {.dir = dir};
		_exit(vt_log_init(&cfg) == 0 && lt_write_counter_event(1, 0, 0) == 0 ? 0 : 1);
	}
	assert_int_equal(lt_wait(pid), 0);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	char *log = lt_log_path(dir, pid, 0);
	assert_int_equal(stat(log, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	unlink(log);
	rmdir(dir);
	free(log);
	free(dir);
	assert_true(asprintf(&dir, "%s/a", base) > 0);
	rmdir(dir);
	free(dir);
	rmdir(base);
	free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symlink_to_file_not_followed),
		cmocka_unit_test(test_dangling_symlink_not_followed),
		cmocka_unit_test(test_dir_created_private),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
