/* Small pieces of the exports: RFC 4180 quoting of CSV fields, hostile
 * names (a device, a module path) that stay inert in HTML, CSV and folded
 * output, colour only on a terminal and never with NO_COLOR, the progress
 * bar only on a terminal stderr; a job's traces on one timeline, with pids
 * of their own in Perfetto. */
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

#include "model_history.h"

#include "export_csv.h"
#include "export_data.h"
#include "export_folded.h"
#include "export_html.h"
#include "export_job.h"
#include "export_perfetto.h"
#include "model_builder.h"
#include "term.h"

#define HOSTILE_DEVICE "GPU \"</script><!--<script>x"
#define HOSTILE_MODULE "/opt/lib\"x,y;z<!--.so"

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
}

/* Control bytes reach no terminal or parser raw; formulas stay text. */
static void csv_fields_stay_inert(void **state)
{
	(void)state;
	field("two\nlines", "two\\x0alines");
	field("cr\rhere", "cr\\x0dhere");
	field("\x1b]0;pwned\x07title", "\\x1b]0;pwned\\x07title");
	field("del\x7f", "del\\x7f");
	field("=HYPERLINK(\"http://x\")", "\"'=HYPERLINK(\"\"http://x\"\")\"");
	field("+1", "'+1");
	field("-2+3", "'-2+3");
	field("@SUM(A1)", "'@SUM(A1)");
	field("a=b", "a=b");
	field("\tcmd", "\\x09cmd");
}

static void b_module(struct builder *b, const char *path, uint64_t lo, uint64_t hi)
{
	union {
		struct vt_module_rec r;
		char buf[512];
	} u;
	memset(&u, 0, sizeof u);
	size_t n = strlen(path);
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof u.r + n));
	u.r.hdr = VT_HDR(VT_REC_MODULE, size);
	u.r.seq = ++b->seq;
	u.r.base = lo;
	u.r.lo = lo;
	u.r.hi = hi;
	u.r.event = VT_MODULE_LOAD;
	u.r.path_len = (uint16_t)n;
	memcpy(u.r.path, path, n);
	vt_model_feed(b->m, b->proc, VT_REC_MODULE, &u, size);
}

static void b_stack(struct builder *b, uint32_t id, uint64_t ip)
{
	union {
		struct vt_stack_rec r;
		char buf[64];
	} u;
	memset(&u, 0, sizeof u);
	uint32_t size = (uint32_t)(sizeof u.r + sizeof(uint64_t));
	u.r.hdr = VT_HDR(VT_REC_STACK, size);
	u.r.stack_id = id;
	u.r.depth = 1;
	u.r.frames[0] = ip;
	vt_model_feed(b->m, b->proc, VT_REC_STACK, &u, size);
}

/* One device with a hostile name; two allocations from a module with a
 * hostile path, one freed: live at the peak 3 MiB, at the end 1 MiB. */
static struct vt_model *hostile_model(void)
{
	struct vt_model *m = vt_model_new();
	struct builder b;
	b_begin(&b, m, 77, 1000, 1000);
	b_device(&b, 0, 1ull << 30, HOSTILE_DEVICE);
	b_module(&b, HOSTILE_MODULE, 0x400000, 0x500000);
	b_stack(&b, 1, 0x400010);
	struct vt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.hdr = VT_HDR(VT_REC_ALLOC, sizeof ev);
	ev.stack_id = 1;
	ev.api = API_ALLOC;
	uint64_t sizes[2] = {1u << 20, 2u << 20};
	for (int i = 0; i < 2; i++) {
		ev.seq = ++b.seq;
		ev.t_ns = 100 + 100 * (uint64_t)i;
		ev.addr = 0x7f0000000000ull + ((uint64_t)i << 24);
		ev.bytes = sizes[i];
		vt_model_feed(m, b.proc, VT_REC_ALLOC, &ev, sizeof ev);
	}
	b_free(&b, 400, 0x7f0000000000ull + (1ull << 24), 0);
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	return m;
}

static size_t count(const char *hay, const char *needle)
{
	/* by index: GCC 12 at -O3 takes a strstr loop for a dangling pointer */
	size_t n = 0, k = strlen(needle);
	for (size_t i = 0; hay[i]; i++)
		n += !strncmp(hay + i, needle, k);
	return n;
}

/* html: 1 HTML, 2 CSV, 3 Perfetto, 0 folded */
static char *export_to_string(struct vt_export *x, int html)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	int rc = html == 1   ? vt_export_html(x, "trace", f)
	         : html == 2 ? vt_export_csv(x, f)
	         : html == 3 ? vt_export_perfetto(x, NULL, f)
	                     : vt_export_folded(x, f);
	assert_int_equal(rc, 0);
	fclose(f);
	return buf;
}

static void hostile_names_stay_inert(void **state)
{
	(void)state;
	struct vt_model *m = hostile_model();
	char err[256];
	struct vt_export x;
	assert_int_equal(vt_export_open(&x, m, NULL, err, sizeof err), 0);
	/* HTML: the page's own two </script> and one comment, nothing more */
	char *html = export_to_string(&x, 1);
	assert_int_equal(count(html, "</script>"), 2);
	assert_int_equal(count(html, "<!--"), 1);
	assert_non_null(strstr(html, "GPU \\\"\\u003c/script>\\u003c!--\\u003cscript>x"));
	free(html);
	/* CSV: the site field quoted, its quote doubled */
	char *csv = export_to_string(&x, 2);
	assert_non_null(strstr(csv, ",weights,\"lib\"\"x,y;z<!--.so+0x10\"\n") ||
	                strstr(csv, ",\"lib\"\"x,y;z<!--.so+0x10\"\n"));
	assert_int_equal(count(csv, "\n"), 3); /* header + 2 allocations */
	free(csv);
	/* folded: ';' inside a frame would split it */
	char *folded = export_to_string(&x, 0);
	assert_non_null(strstr(folded, "GPU 0;lib\"x,y:z<!--.so+0x10;["));
	assert_non_null(strstr(folded, "] 3145728\n"));
	free(folded);
	vt_export_close(&x);
	/* --at end: only the first allocation is left */
	assert_int_equal(vt_export_open(&x, m, "end", err, sizeof err), 0);
	folded = export_to_string(&x, 0);
	assert_non_null(strstr(folded, "] 1048576\n"));
	free(folded);
	vt_export_close(&x);
	vt_model_free(m);
}

/* A process that allocated nothing: every format still writes a file. */
static void empty_trace_exports(void **state)
{
	(void)state;
	struct vt_model *m = vt_model_new();
	struct builder b;
	b_begin(&b, m, 78, 1000, 1000);
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	char err[256];
	struct vt_export x;
	assert_int_equal(vt_export_open(&x, m, NULL, err, sizeof err), 0);
	char *html = export_to_string(&x, 1);
	assert_non_null(strstr(html, "\"devices\":[]"));
	free(html);
	char *csv = export_to_string(&x, 2);
	assert_string_equal(csv, "start_ns,end_ns,device,bytes,category,site\n");
	free(csv);
	char *folded = export_to_string(&x, 0);
	assert_string_equal(folded, "");
	free(folded);
	char *trace = export_to_string(&x, 3);
	assert_non_null(strstr(trace, "\"traceEvents\":["));
	assert_non_null(strstr(trace, "\"name\":\"process_name\",\"ph\":\"M\""));
	assert_string_equal(trace + strlen(trace) - 4, "\n]}\n"); /* the array and object closed */
	free(trace);
	vt_export_close(&x);
	vt_model_free(m);
}

/* One host's trace of a job: rank `rank`, pid 50 on every host, its log
 * started at wall clock `realtime` (0: not recorded); 1 MiB allocated at
 * t=100 ns and freed at 900, steps marked at first_step and first_step + 100
 * (0: none). */
static struct vt_model *rank_trace(int rank, uint64_t realtime, uint64_t first_step)
{
	struct vt_model *m = vt_model_new();
	struct vt_file_header h;
	b_header(&h, 50, 1000);
	h.rank_p1 = (uint32_t)rank + 1;
	h.rank_source = VT_RANK_TORCH;
	h.realtime_base_ns = realtime;
	snprintf(h.hostname, sizeof h.hostname, "host%d", rank);
	struct builder b;
	b_begin_with(&b, m, &h, 1000);
	b_alloc(&b, 100, 0x7f0000000000ull, 1u << 20, 0);
	if (first_step) {
		b_mark(&b, first_step, "step 0");
		b_mark(&b, first_step + 100, "step 1");
	}
	b_free(&b, 900, 0x7f0000000000ull, 0);
	vt_model_end_process(m, b.proc);
	vt_model_finish(m);
	return m;
}

struct two_traces {
	struct vt_model *m[2];
	struct vt_export x[2];
	struct vt_export_job job;
};

static void open_job(struct two_traces *t, uint64_t realtime0, uint64_t realtime1, uint64_t step0,
                     uint64_t step1)
{
	static const char *const dirs[2] = {NULL, NULL}; /* no logs to read copies from */
	char err[256];
	t->m[0] = rank_trace(0, realtime0, step0);
	t->m[1] = rank_trace(1, realtime1, step1);
	for (int i = 0; i < 2; i++)
		assert_int_equal(vt_export_open(&t->x[i], t->m[i], NULL, err, sizeof err), 0);
	assert_true(vt_export_job_wanted(t->x, 2));
	assert_int_equal(vt_export_job_open(&t->job, t->x, dirs, 2), 0);
	assert_int_equal(t->job.job.nrows, 2);
}

static void close_job(struct two_traces *t)
{
	vt_export_job_close(&t->job);
	for (int i = 0; i < 2; i++) {
		vt_export_close(&t->x[i]);
		vt_model_free(t->m[i]);
	}
}

/* By wall clock, the later log's trace is moved by the difference; with no
 * wall clock recorded, neither moves; by step markers, the first steps
 * meet. */
static void job_traces_share_a_timeline(void **state)
{
	(void)state;
	struct two_traces t;
	open_job(&t, 7000000000ull, 7000005000ull, 0, 0);
	assert_int_equal(t.job.job.alignment.by, VT_ALIGN_WALL_CLOCK);
	assert_int_equal(vt_export_job_time(&t.job, 0, 100), 100);
	assert_int_equal(vt_export_job_time(&t.job, 1, 100), 5100);
	close_job(&t);
	open_job(&t, 7000005000ull, 7000000000ull, 0, 0);
	assert_int_equal(vt_export_job_time(&t.job, 0, 100), 5100);
	assert_int_equal(vt_export_job_time(&t.job, 1, 100), 100);
	close_job(&t);
	open_job(&t, 0, 7000000000ull, 0, 0);
	assert_int_equal(vt_export_job_time(&t.job, 0, 100), 100);
	assert_int_equal(vt_export_job_time(&t.job, 1, 100), 100);
	close_job(&t);
	open_job(&t, 7000000000ull, 7000005000ull, 300, 200);
	assert_int_equal(t.job.job.alignment.by, VT_ALIGN_STEP_MARKERS);
	assert_int_equal(vt_export_job_time(&t.job, 0, 300), vt_export_job_time(&t.job, 1, 200));
	assert_int_equal(vt_export_job_time(&t.job, 1, 0), 100);
	close_job(&t);
}

/* Perfetto: pid 50 on both hosts, two tracks named by rank, in rank
 * order, and no event of one host on the other's. */
static void job_perfetto_pids_apart(void **state)
{
	(void)state;
	struct two_traces t;
	open_job(&t, 7000000000ull, 7000005000ull, 0, 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(vt_export_perfetto_job(&t.job, f), 0);
	fclose(f);
	assert_non_null(
	    strstr(buf, "\"pid\":50,\"tid\":0,\"args\":{\"name\":\"rank 0 (host0:50)\"}"));
	assert_non_null(
	    strstr(buf, "\"pid\":4194354,\"tid\":0,\"args\":{\"name\":\"rank 1 (host1:50)\"}"));
	assert_non_null(strstr(buf, "\"pid\":4194354,\"tid\":0,\"args\":{\"sort_index\":1}"));
	/* each host's GPU 0 a track of its own, its allocation on it */
	/* name, sort index, b, e, 2 counter samples, the peak */
	assert_int_equal(count(buf, "\"pid\":1073741824,"), 7);
	assert_int_equal(count(buf, "\"pid\":1073742080,"), 7);
	free(buf);
	close_job(&t);
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
	int master = -1;
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
	    cmocka_unit_test(csv_fields_stay_inert),
	    cmocka_unit_test(hostile_names_stay_inert),
	    cmocka_unit_test(empty_trace_exports),
	    cmocka_unit_test(job_traces_share_a_timeline),
	    cmocka_unit_test(job_perfetto_pids_apart),
	    cmocka_unit_test(no_color_off_a_terminal),
	    cmocka_unit_test(color_on_a_terminal_unless_no_color),
	    cmocka_unit_test(progress_only_on_a_terminal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
