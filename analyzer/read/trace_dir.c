/* A trace: every vramtrace.<pid>.<n>.log of a directory (or one log file),
 * opened and sorted by pid, then exec index. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace_dir.h"

struct named_log {
	unsigned long pid, exec_index;
	char *path;
};

/* Strictly "vramtrace.<digits>.<digits>.log". */
static int parse_log_name(const char *name, unsigned long *pid, unsigned long *exec_index)
{
	const char *p = name;
	if (strncmp(p, "vramtrace.", 10) != 0)
		return 0;
	p += 10;
	unsigned long *fields[2] = {pid, exec_index};
	for (int i = 0; i < 2; i++) {
		if (*p < '0' || *p > '9')
			return 0;
		char *end;
		errno = 0;
		*fields[i] = strtoul(p, &end, 10);
		if (errno || *end != '.')
			return 0;
		p = end + 1;
	}
	return strcmp(p, "log") == 0;
}

static int named_order(const void *a, const void *b)
{
	const struct named_log *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->exec_index < y->exec_index ? -1 : x->exec_index > y->exec_index;
}

static void free_names(struct named_log *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i].path);
	free(names);
}

/* The log files of dir, sorted; *n = count. NULL with err on failure. */
static struct named_log *list_logs(const char *dir, size_t *n, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return NULL;
	}
	struct named_log *names = NULL;
	size_t cap = 0;
	*n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		struct named_log nl;
		if (!parse_log_name(de->d_name, &nl.pid, &nl.exec_index))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			struct named_log *grown = realloc(names, cap * sizeof *names);
			if (!grown)
				break;
			names = grown;
		}
		size_t len = strlen(dir) + strlen(de->d_name) + 2;
		if (!(nl.path = malloc(len)))
			break;
		snprintf(nl.path, len, "%s/%s", dir, de->d_name);
		names[(*n)++] = nl;
	}
	closedir(d);
	if (*n)
		qsort(names, *n, sizeof *names, named_order);
	return names ? names : calloc(1, sizeof *names);
}

static int open_one(const char *path, struct vt_trace *out, char *err, size_t errlen)
{
	struct vt_log *log = vt_log_open_file(path, err, errlen);
	if (!log)
		return -1;
	out->logs = malloc(sizeof *out->logs);
	out->dir = strdup(path);
	if (!out->logs || !out->dir) {
		vt_log_close(log);
		vt_trace_close(out);
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	out->logs[0] = log;
	out->nlogs = 1;
	return 0;
}

/* Did `vramtrace run` record a job into dir (its run.json is there)? A log
 * is created at a process's first driver call, so such a directory without
 * logs is a job that never used the GPU, not a wrong path. */
static int run_json_path(const char *dir, char *path, size_t len)
{
	int n = snprintf(path, len, "%s/run.json", dir);
	return n > 0 && (size_t)n < len;
}

static int launched_here(const char *dir)
{
	char path[4096];
	struct stat st;
	return run_json_path(dir, path, sizeof path) && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A `run --shm` whose launcher died before moving the logs left them in
 * the directory run.json names as "log_dir": that path into buf, or 0. */
static int stranded_log_dir(const char *dir, char *buf, size_t len)
{
	char path[4096], text[8192];
	FILE *f = run_json_path(dir, path, sizeof path) ? fopen(path, "re") : NULL;
	if (!f)
		return 0;
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	const char *key = strstr(text, "\"log_dir\": \"");
	if (!key)
		return 0;
	size_t o = 0;
	for (const char *c = key + strlen("\"log_dir\": \""); *c && *c != '"' && o + 1 < len; c++) {
		if (*c == '\\' && c[1]) /* run.json escapes only " and \ in paths */
			c++;
		buf[o++] = *c;
	}
	buf[o] = '\0';
	struct stat st;
	return o > 0 && stat(buf, &st) == 0 && S_ISDIR(st.st_mode);
}

int vt_trace_open(const char *dir, struct vt_trace *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	struct stat st;
	if (stat(dir, &st) < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return open_one(dir, out, err, errlen);
	size_t n = 0, skipped = 0;
	struct named_log *names = list_logs(dir, &n, err, errlen);
	if (!names)
		return -1;
	out->dir = strdup(dir);
	out->logs = calloc(n ? n : 1, sizeof *out->logs);
	for (size_t i = 0; out->logs && out->dir && i < n; i++) {
		char why[512];
		struct vt_log *log = vt_log_open_file(names[i].path, why, sizeof why);
		if (log)
			out->logs[out->nlogs++] = log;
		else {
			fprintf(stderr, "vramtrace: %s; skipped\n", why);
			skipped++;
		}
	}
	free_names(names, n);
	if (!out->logs || !out->dir) {
		snprintf(err, errlen, "%s: out of memory", dir);
	} else if (n == 0) {
		char shm[4096];
		if (stranded_log_dir(dir, shm, sizeof shm))
			snprintf(err, errlen,
			         "%s: no vramtrace logs here; the run used --shm and its logs are "
			         "still in %s (the launcher ended before moving them: move them "
			         "into %s)",
			         dir, shm, dir);
		else if (launched_here(dir))
			snprintf(err, errlen,
			         "%s: the job made no CUDA calls (`vramtrace run` recorded it, and "
			         "no process of it called the driver)",
			         dir);
		else
			snprintf(
			    err, errlen,
			    "%s: no vramtrace logs (vramtrace.<pid>.<n>.log) in this directory",
			    dir);
	} else if (out->nlogs == 0) {
		snprintf(err, errlen, "%s: none of its %zu logs is readable", dir, skipped);
	} else {
		return 0;
	}
	vt_trace_close(out);
	return -1;
}

void vt_trace_close(struct vt_trace *t)
{
	for (size_t i = 0; i < t->nlogs; i++)
		vt_log_close(t->logs[i]);
	free(t->logs);
	free(t->dir);
	memset(t, 0, sizeof *t);
}

int vt_trace_for_each(const struct vt_trace *t, vt_record_fn fn, void *ctx)
{
	int rc = 0;
	for (size_t i = 0; i < t->nlogs && rc == 0; i++)
		rc = vt_log_for_each(t->logs[i], fn, ctx);
	return rc;
}

/* Bytes the file holds on disk: a log's claimed but never written chunks
 * are holes, and they cost the reader nothing. */
static uint64_t stored_bytes(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return 0;
	uint64_t on_disk = (uint64_t)st.st_blocks * 512u;
	return on_disk < (uint64_t)st.st_size ? on_disk : (uint64_t)st.st_size;
}

uint64_t vt_trace_log_bytes(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode))
		return stored_bytes(dir);
	char err[256];
	size_t n = 0;
	struct named_log *names = list_logs(dir, &n, err, sizeof err);
	uint64_t bytes = 0;
	for (size_t i = 0; names && i < n; i++)
		bytes += stored_bytes(names[i].path);
	if (names)
		free_names(names, n);
	return bytes;
}

uint64_t vt_trace_start_ns(const struct vt_trace *t)
{
	uint64_t start = UINT64_MAX;
	for (size_t i = 0; i < t->nlogs; i++) {
		uint64_t base = vt_log_header(t->logs[i])->clock_base_ns;
		if (base < start)
			start = base;
	}
	return t->nlogs ? start : 0;
}
