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

/* A log that is not its process's own: one owned by another user than the
 * trace directory's (planted by someone who could write there), or whose
 * header's pid is not the pid its name says (copied in from another trace or
 * process). The reason into why, or 0 for a log of this trace. */
static int foreign_log(const struct named_log *nl, const struct vt_log *log, uid_t dir_owner,
                       char *why, size_t len)
{
	struct stat st;
	if (stat(nl->path, &st) == 0 && st.st_uid != dir_owner) {
		snprintf(why, len,
		         "%s is owned by uid %u, not by the trace directory's owner (uid %u)",
		         nl->path, (unsigned)st.st_uid, (unsigned)dir_owner);
		return 1;
	}
	long header_pid = vt_log_header(log)->pid;
	if (header_pid < 0 || (unsigned long)header_pid != nl->pid) {
		snprintf(why, len, "%s holds the log of pid %ld, not of pid %lu as its name says",
		         nl->path, header_pid, nl->pid);
		return 1;
	}
	return 0;
}

/* Each open log stays mapped (log_reader.h) and a process may hold at most
 * vm.max_map_count mappings; this many are left for the analyzer's own
 * (the heap, libraries, the symbolizer's ELF files). */
#define MAPS_KEPT_FOR_THE_ANALYZER 2048

/* A number from a one-line file, or fallback. */
static unsigned long read_number(const char *path, unsigned long fallback)
{
	FILE *f = fopen(path, "re");
	unsigned long v;
	if (!f)
		return fallback;
	int ok = fscanf(f, "%lu", &v) == 1;
	fclose(f);
	return ok ? v : fallback;
}

static unsigned long maps_in_use(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long n = 0;
	int c;
	if (!f)
		return 0;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* How many more logs this process can keep mapped: vm.max_map_count (or
 * VRAMTRACE_MAX_MAPS when lower), less the mappings in use and a reserve. */
static unsigned long mappable_logs(unsigned long *limit)
{
	*limit = read_number("/proc/sys/vm/max_map_count", 65530);
	const char *env = getenv("VRAMTRACE_MAX_MAPS");
	char *end;
	unsigned long lower = env && *env ? strtoul(env, &end, 10) : 0;
	if (lower && !*end && lower < *limit)
		*limit = lower;
	unsigned long used = maps_in_use() + MAPS_KEPT_FOR_THE_ANALYZER;
	return *limit > used ? *limit - used : 0;
}

/* More logs than mappings left: the first ones (by pid) are read, the rest
 * skipped with one line that names the limit. The count to read. */
static size_t logs_within_map_limit(const char *dir, const struct named_log *names, size_t n)
{
	unsigned long limit, room = mappable_logs(&limit);
	if (n <= room)
		return n;
	fprintf(stderr,
	        "vramtrace: %s: %zu logs, but this process may map only %lu more files "
	        "(vm.max_map_count %lu; each log stays mapped while read): the last %zu "
	        "(pid %lu and up) skipped; raise vm.max_map_count to read them all\n",
	        dir, n, room, limit, n - room, names[room].pid);
	return room;
}

/* Open each named log into t->logs, skipping (with a line on stderr) the
 * unreadable and the foreign. The count skipped. */
static size_t open_named(struct vt_trace *t, const struct named_log *names, size_t n,
                         uid_t dir_owner)
{
	size_t skipped = 0;
	for (size_t i = 0; i < n; i++) {
		char why[1024];
		struct vt_log *log = vt_log_open_file(names[i].path, why, sizeof why);
		if (log && foreign_log(&names[i], log, dir_owner, why, sizeof why)) {
			vt_log_close(log);
			log = NULL;
		}
		if (log)
			t->logs[t->nlogs++] = log;
		else {
			fprintf(stderr, "vramtrace: %s; skipped\n", why);
			skipped++;
		}
	}
	return skipped;
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
	if (out->logs && out->dir) {
		size_t readable = logs_within_map_limit(dir, names, n);
		skipped = open_named(out, names, readable, st.st_uid) + (n - readable);
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

static int trace_has(const struct vt_trace *t, const char *path)
{
	for (size_t i = 0; i < t->nlogs; i++)
		if (!strcmp(vt_log_path(t->logs[i]), path))
			return 1;
	return 0;
}

size_t vt_trace_open_new(struct vt_trace *t)
{
	struct stat st;
	char err[256];
	size_t n = 0, added = 0;
	if (stat(t->dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	struct named_log *names = list_logs(t->dir, &n, err, sizeof err);
	if (!names)
		return 0;
	size_t fresh = 0; /* the names not open yet, moved to the front */
	for (size_t i = 0; i < n; i++) {
		if (trace_has(t, names[i].path))
			continue;
		struct named_log keep = names[fresh];
		names[fresh++] = names[i];
		names[i] = keep;
	}
	struct vt_log **v = fresh ? realloc(t->logs, (t->nlogs + fresh) * sizeof *v) : NULL;
	if (v) {
		t->logs = v;
		size_t before = t->nlogs;
		open_named(t, names, fresh, st.st_uid);
		added = t->nlogs - before;
	}
	free_names(names, n);
	return added;
}
