#define _GNU_SOURCE
#include "log_test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log_writer.h"

static void die(const char *what)
{
	fprintf(stderr, "test helper: %s: %s\n", what, strerror(errno));
	abort();
}

char *lt_make_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	char *path;
	if (asprintf(&path, "%s/vt-logtest-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
		die("asprintf");
	if (!mkdtemp(path))
		die("mkdtemp");
	return path;
}

void lt_remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	rmdir(dir);
}

char *lt_log_path(const char *dir, pid_t pid, unsigned exec_index)
{
	char *path;
	if (asprintf(&path, "%s/vramtrace.%d.%u.log", dir, (int)pid, exec_index) < 0)
		die("asprintf");
	return path;
}

size_t lt_count_logs(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL)
		if (!strncmp(de->d_name, "vramtrace.", 10))
			n++;
	if (d)
		closedir(d);
	return n;
}

static int collect_one(const struct vt_record_view *v, void *ctx)
{
	struct lt_recs *r = ctx;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 1024;
		r->v = realloc(r->v, r->cap * sizeof *r->v);
		if (!r->v)
			die("realloc");
	}
	struct lt_rec *x = &r->v[r->n++];
	x->type = v->type;
	x->size = v->size;
	x->tid = v->tid;
	x->offset = v->offset;
	x->bytes = malloc(v->size);
	if (!x->bytes)
		die("malloc");
	memcpy(x->bytes, v->data, v->size);
	return 0;
}

void lt_collect(struct vt_log *log, struct lt_recs *out)
{
	memset(out, 0, sizeof *out);
	vt_log_for_each(log, collect_one, out);
}

void lt_recs_free(struct lt_recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].bytes);
	free(r->v);
	memset(r, 0, sizeof *r);
}

void lt_tally_events(const struct lt_recs *r, uint32_t writer, struct lt_tally *t)
{
	t->seen = calloc((size_t)t->threads * t->per_thread, sizeof *t->seen);
	t->foreign = t->bad = 0;
	if (!t->seen)
		die("calloc");
	for (size_t i = 0; i < r->n; i++) {
		if (r->v[i].type != VT_REC_ALLOC)
			continue;
		struct vt_event ev;
		memcpy(&ev, r->v[i].bytes, sizeof ev);
		uint32_t who = (uint32_t)(ev.addr >> 32), thread = (uint32_t)ev.addr;
		if (who != writer)
			t->foreign++;
		else if (thread >= t->threads || ev.bytes >= t->per_thread)
			t->bad++;
		else
			t->seen[(size_t)thread * t->per_thread + ev.bytes]++;
	}
}

void lt_tally_free(struct lt_tally *t)
{
	free(t->seen);
	t->seen = NULL;
}

static int saved_stderr = -1;
static FILE *capture_file;

void lt_capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	if (!capture_file)
		die("tmpfile");
	saved_stderr = dup(STDERR_FILENO);
	dup2(fileno(capture_file), STDERR_FILENO);
}

char *lt_capture_end(void)
{
	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	long n = ftell(capture_file);
	char *text = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
	rewind(capture_file);
	if (n > 0 && fread(text, 1, (size_t)n, capture_file) != (size_t)n)
		die("fread");
	fclose(capture_file);
	fputs(text, stderr); /* keep the evidence in the test log */
	return text;
}

unsigned lt_count_lines(const char *text)
{
	unsigned n = 0;
	for (; *text; text++)
		n += *text == '\n';
	return n;
}

int lt_write_counter_event(uint32_t writer, uint32_t thread, uint64_t counter)
{
	struct vt_event ev = {
		.addr = (uint64_t)writer << 32 | thread,
		.bytes = counter,
		.api = 2,
		.device = 0,
	};
	return vt_log_write_event(VT_REC_ALLOC, &ev);
}

int lt_wait(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}
