/* How every command loads its trace (cmd_load.h): a progress bar on stderr
 * while the logs are read, when stderr is a terminal and the read takes
 * longer than half a second (a 100 M-event trace takes the full model half a
 * minute, which should not look like a hang); and before the full model, a
 * line when the trace looks too big for the memory the analyzer may take. */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_load.h"
#include "log_reader.h"
#include "trace_dir.h"
#include "mem_budget.h"
#include "model.h"
#include "model_load.h"
#include "model_stream.h"
#include "run_lock.h" /* what holds a trace */
#include "term.h"
#include "units.h"
#include <unistd.h>

/* Said before the load: under Linux's overcommit the full model of a huge
 * trace is more often killed than refused, and a killed analyzer says
 * nothing (mem_budget.h). A warning, not a refusal: the estimate errs high. */
static void warn_if_too_big(const char *dir)
{
	uint64_t logs = vt_trace_log_bytes(dir);
	uint64_t need = vt_full_model_estimate(logs), have = vt_mem_available(logs);
	if (logs == 0 || need <= have)
		return;
	char l[32], n[32], h[32];
	vt_format_bytes(logs, l, sizeof l);
	vt_format_bytes(need, n, sizeof n);
	vt_format_bytes(have, h, sizeof h);
	fprintf(stderr,
	        "vramtrace: this trace (%s of logs) may need up to %s for the full model and %s "
	        "is available to it; if it runs out, `report --stream` and `diff --stream` read it "
	        "in memory that follows only what is live\n",
	        l, n, h);
}

enum load_mode { LOAD_FULL, LOAD_STREAMING, LOAD_FOLDING };

static struct vt_model *load(const char *cmd, const char *dir, enum load_mode mode)
{
	if (mode != LOAD_STREAMING) /* a folding model may need the full one's memory */
		warn_if_too_big(dir);
	char err[1024] = "";
	struct vt_progress bar;
	vt_progress_begin(&bar, "reading trace");
	vt_model_set_load_progress(vt_progress_hook, &bar);
	struct vt_model *m =
	    mode == LOAD_STREAMING ? vt_model_load_trace_streaming(dir, err, sizeof err)
	    : mode == LOAD_FOLDING ? vt_model_load_trace_folding(dir, err, sizeof err)
	                           : vt_model_load_trace(dir, err, sizeof err);
	vt_model_set_load_progress(NULL, NULL);
	vt_progress_end(&bar);
	if (!m)
		fprintf(stderr, "vramtrace %s: %s\n", cmd, err[0] ? err : "cannot read the trace");
	return m;
}

struct vt_model *vt_cmd_load(const char *cmd, const char *dir, int streaming)
{
	return load(cmd, dir, streaming ? LOAD_STREAMING : LOAD_FULL);
}

struct vt_model *vt_cmd_load_folding(const char *cmd, const char *dir)
{
	return load(cmd, dir, LOAD_FOLDING);
}

/* The reader, the model and the loader each print their warnings about a
 * trace to stderr as they meet them (a cut log, an inconsistent trace);
 * read twice, the trace would get each twice. Only this command knows it
 * is the second read, so it points fd 2 at /dev/null for the read and says
 * a failure itself afterwards. */
struct vt_model *vt_cmd_reload_full(const char *cmd, const char *dir)
{
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (saved < 0 || null < 0 || dup2(null, STDERR_FILENO) < 0) {
		if (saved >= 0)
			close(saved);
		if (null >= 0)
			close(null);
		return vt_cmd_load(cmd, dir, 0); /* then the warnings twice */
	}
	close(null);
	char err[1024] = "";
	struct vt_model *m = vt_model_load_trace(dir, err, sizeof err);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	if (!m)
		fprintf(stderr, "vramtrace %s: %s\n", cmd, err[0] ? err : "cannot read the trace");
	return m;
}

int vt_cmd_load_all(const char *cmd, const struct vt_cli_traces *t, struct vt_model **models)
{
	for (unsigned i = 0; i < t->n; i++) {
		models[i] = vt_cmd_load(cmd, t->dir[i], 0);
		if (!models[i]) {
			vt_cmd_free_all(models, i);
			return 1;
		}
	}
	return 0;
}

void vt_cmd_free_all(struct vt_model **models, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		vt_model_free(models[i]);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The trace directories directly inside `dir`, sorted, into names[]. */
static unsigned traces_inside(const char *dir, char **names, unsigned cap)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	unsigned n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < cap) {
		if (e->d_name[0] == '.')
			continue;
		size_t len = strlen(dir) + strlen(e->d_name) + 2;
		char *path = malloc(len);
		if (!path)
			break;
		snprintf(path, len, "%s/%s", dir, e->d_name);
		if (vt_run_dir_holds_trace(path))
			names[n++] = path;
		else
			free(path);
	}
	closedir(d);
	qsort(names, n, sizeof *names, name_cmp);
	return n;
}

int vt_cmd_add_traces(const char *cmd, struct vt_cli_traces *t, const char *arg, char **names,
                      unsigned *nnames)
{
	if (vt_run_dir_holds_trace(arg))
		return vt_cli_add_trace(cmd, t, arg);
	unsigned room = VT_CLI_MAX_TRACES - *nnames;
	unsigned found = traces_inside(arg, names + *nnames, room);
	if (!found) /* not a job folder: the load says what it is */
		return vt_cli_add_trace(cmd, t, arg);
	if (found == room) {
		vt_cmd_free_names(names + *nnames, found);
		return vt_cli_usage_error(cmd, "%s holds %u traces or more: at most %d at once",
		                          arg, room, VT_CLI_MAX_TRACES);
	}
	int rc = 0;
	for (unsigned i = 0; i < found && !rc; i++)
		rc = vt_cli_add_trace(cmd, t, names[*nnames + i]);
	*nnames += found;
	return rc;
}

void vt_cmd_free_names(char **names, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(names[i]);
}
