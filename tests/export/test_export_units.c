/* Small pieces of the exports: RFC 4180 quoting of CSV fields, colour only
 * on a terminal and never with NO_COLOR, the progress bar only on a
 * terminal stderr. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "export_csv.h"
#include "term.h"

static void field(const char *in, const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	vt_csv_field(f, in);
	fclose(f);
	assert_string_equal(buf, want);
	free(buf);
}

static void csv_quotes_only_when_needed(void **state)
{
	(void)state;
	field("main (train.c:12)", "main (train.c:12)");
	field("", "");
	field("f(a, b) (x.cc:3)", "\"f(a, b) (x.cc:3)\"");
	field("say \"hi\"", "\"say \"\"hi\"\"\"");
	field("two\nlines", "\"two\nlines\"");
	field("cr\rhere", "\"cr\rhere\"");
}

static void no_color_off_a_terminal(void **state)
{
	(void)state;
	FILE *f = tmpfile();
	assert_non_null(f);
	unsetenv("NO_COLOR");
	assert_int_equal(vt_term_use_color(f), 0);
	assert_string_equal(vt_term_color(f, VT_COLOR_BOLD), "");
	fclose(f);
}

/* A pseudo-terminal stands in for a TTY; *master reads what it shows. */
static FILE *open_tty_master(int *master)
{
	int fd = posix_openpt(O_RDWR | O_NOCTTY);
	if (fd < 0 || grantpt(fd) || unlockpt(fd))
		return NULL;
	int slave = open(ptsname(fd), O_RDWR | O_NOCTTY);
	if (slave < 0)
		return NULL;
	if (master)
		*master = fd;
	return fdopen(slave, "w");
}

static FILE *open_tty(void)
{
	return open_tty_master(NULL);
}

static void color_on_a_terminal_unless_no_color(void **state)
{
	(void)state;
	FILE *tty = open_tty();
	if (!tty)
		skip();
	setenv("TERM", "xterm", 1);
	unsetenv("NO_COLOR");
	assert_int_equal(vt_term_use_color(tty), 1);
	assert_string_equal(vt_term_color(tty, VT_COLOR_RESET), "\033[0m");
	setenv("NO_COLOR", "1", 1);
	assert_int_equal(vt_term_use_color(tty), 0);
	assert_string_equal(vt_term_color(tty, VT_COLOR_RED), "");
	setenv("NO_COLOR", "", 1); /* empty: no-color.org says it does not count */
	assert_int_equal(vt_term_use_color(tty), 1);
	setenv("TERM", "dumb", 1);
	assert_int_equal(vt_term_use_color(tty), 0);
	unsetenv("NO_COLOR");
	fclose(tty);
}

/* Draw with stderr on fd `to`; what the other end reads, in buf. */
static void draw_progress(int to, int from, char *buf, size_t len)
{
	int saved = dup(STDERR_FILENO);
	dup2(to, STDERR_FILENO);
	struct vt_progress p;
	vt_progress_begin(&p, "reading trace");
	p.last_draw_ns = 0; /* past the initial quiet half second */
	vt_progress_hook(50, 100, &p);
	vt_progress_end(&p);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	/* a pty hands bytes over asynchronously: read until it stays quiet */
	size_t got = 0;
	struct pollfd pfd = {.fd = from, .events = POLLIN};
	while (got + 1 < len && poll(&pfd, 1, 300) > 0) {
		ssize_t n = read(from, buf + got, len - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = 0;
}

static void progress_only_on_a_terminal(void **state)
{
	(void)state;
	char buf[512];
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	draw_progress(pipefd[1], pipefd[0], buf, sizeof buf);
	assert_string_equal(buf, "");
	close(pipefd[0]);
	close(pipefd[1]);
	int master;
	FILE *tty = open_tty_master(&master);
	if (!tty)
		skip();
	draw_progress(fileno(tty), master, buf, sizeof buf);
	assert_non_null(strstr(buf, "reading trace [###############...............]  50%"));
	assert_non_null(strstr(buf, "\033[K")); /* the line is cleared at the end */
	fclose(tty);
	close(master);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(csv_quotes_only_when_needed),
		cmocka_unit_test(no_color_off_a_terminal),
		cmocka_unit_test(color_on_a_terminal_unless_no_color),
		cmocka_unit_test(progress_only_on_a_terminal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
