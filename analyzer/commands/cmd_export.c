/* vramtrace export [options] DIR... (the options: export_options)
 *   --stream: the streaming model's timeline (export_stream.h), csv or perfetto
 * The format defaults to the one -o's extension names, else html; the file
 * to vramtrace-<trace>.<extension> here (vramtrace-job.<extension> for
 * several traces). -o's missing folders are made. Several traces (one per
 * host), or one whose processes recorded a launcher's rank, are exported as
 * one job (export_job.h): html and perfetto only. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cmd_load.h"
#include "commands.h"
#include "export_csv.h"
#include "export_data.h"
#include "export_folded.h"
#include "export_html.h"
#include "export_job.h"
#include "export_perfetto.h"
#include "export_stream.h"
#include "model.h"
#include "model_stream.h"
#include "term.h"
#include "units.h"

static int write_html(const struct vt_export *x, const char *dir, FILE *out)
{
	return vt_export_html(x, dir, out);
}

static int write_perfetto(const struct vt_export *x, const char *dir, FILE *out)
{
	return vt_export_perfetto(x, dir, out);
}

static int write_folded(const struct vt_export *x, const char *dir, FILE *out)
{
	(void)dir;
	return vt_export_folded(x, out);
}

static int write_csv(const struct vt_export *x, const char *dir, FILE *out)
{
	(void)dir;
	return vt_export_csv(x, out);
}

static const struct format {
	const char *name;
	const char *ext; /* what -o FILE ends with for this format */
	int (*write)(const struct vt_export *x, const char *dir, FILE *out);
	int (*write_job)(const struct vt_export_job *e, FILE *out); /* NULL: one trace only */
} formats[] = {
    {"html", ".html", write_html, vt_export_html_job},
    {"perfetto", ".json", write_perfetto, vt_export_perfetto_job},
    {"folded", ".folded", write_folded, NULL},
    {"csv", ".csv", write_csv, NULL},
};

struct export_args {
	struct vt_cli_traces traces;
	char *names[VT_CLI_MAX_TRACES]; /* traces found in job folders */
	unsigned nnames;
	const char *dir, *at, *out; /* dir: the first trace */
	const struct format *format;
	int stream;                      /* --stream */
	char default_out[PATH_MAX + 32]; /* vramtrace-<trace>.<ext> when no -o: room for any name */
};

static const struct vt_cli_option export_options[] = {
    {"-o", "FILE", "where to write ('-': stdout; default vramtrace-<trace>.<ext> here)"},
    {"--format", "html|perfetto|folded|csv", "the format (default: FILE's extension, else html)"},
    {"--at", "peak|end|SECONDS",
     "the moment folded takes and html marks (default: each device's peak)"},
    {"--stream", NULL, "the timeline of a trace of any length (perfetto or csv)"},
    {NULL, NULL, NULL},
};

static const struct vt_cli_help export_help = {
    "export", "DIR...",
    "Write the trace as a self-contained HTML timeline, a Perfetto/Chrome trace, folded\n"
    "stacks or CSV.",
    export_options,
    "Several DIRs (one per host of a job), or one whose processes recorded a launcher's\n"
    "rank, export the job: html adds the ranks side by side on one scale, perfetto a\n"
    "process track per rank (several DIRs: html or perfetto only).\n"
    "extensions: .html (html), .json (perfetto), .folded (folded), .csv (csv); missing\n"
    "folders of FILE are made.\n"
    "exit: 0, 1 when the trace cannot be read or FILE written, 2 for a usage error.\n"};

static const struct format *find_format(const char *name)
{
	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
		if (!strcmp(formats[i].name, name))
			return &formats[i];
	return NULL;
}

/* The format whose extension path ends with, NULL if none does. */
static const struct format *format_of_path(const char *path)
{
	size_t n = strlen(path);
	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
		size_t e = strlen(formats[i].ext);
		if (n > e && !strcmp(path + n - e, formats[i].ext))
			return &formats[i];
	}
	return NULL;
}

/* No --format: -o's extension names it, or html; no -o:
 * vramtrace-<trace directory's name>.<ext> in the current directory. */
static int settle_format_and_output(struct export_args *a)
{
	if (!a->format && a->out && strcmp(a->out, "-")) {
		if (!(a->format = format_of_path(a->out)))
			return vt_cli_usage_error("export",
			                          "cannot tell the format from '%s' "
			                          "(.html, .json, .folded or .csv; or --format)",
			                          a->out);
	}
	if (!a->format)
		a->format = a->stream ? find_format("perfetto") : find_format("html");
	if (!a->out) {
		char name[PATH_MAX];
		snprintf(name, sizeof name, "%s", a->dir);
		size_t n = strlen(name);
		while (n > 1 && name[n - 1] == '/')
			name[--n] = 0;
		const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
		if (a->traces.n > 1)
			base = "job";
		snprintf(a->default_out, sizeof a->default_out, "vramtrace-%s%s",
		         strcmp(base, ".") && strcmp(base, "..") && *base ? base : "trace",
		         a->format->ext);
		a->out = a->default_out;
	}
	return 0;
}

/* mkdir -p of the folder that will hold path. 0, or -1 with errno. */
static int make_parents(const char *path)
{
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) {
		errno = ENAMETOOLONG;
		return -1;
	}
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	/* each folder on the way, the last one included (at the string's end) */
	for (char *p = dir + 1;; p++) {
		if (*p && *p != '/')
			continue;
		char c = *p;
		*p = 0;
		if (mkdir(dir, 0755) != 0 && errno != EEXIST)
			return -1;
		if (!(*p = c))
			return 0;
	}
}

static int export_option(void *ctx, const struct vt_cli_option *o, const char *v)
{
	struct export_args *a = ctx;
	if (!strcmp(o->name, "--format")) {
		if (!(a->format = find_format(v)))
			return vt_cli_usage_error(
			    "export", "unknown format '%s' (html, perfetto, folded or csv)", v);
	} else if (!strcmp(o->name, "--at")) {
		a->at = v;
	} else if (!strcmp(o->name, "--stream")) {
		a->stream = 1;
	} else {
		a->out = v;
	}
	return 0;
}

static int export_operand(void *ctx, const char *arg)
{
	struct export_args *a = ctx;
	int rc = vt_cmd_add_traces("export", &a->traces, arg, a->names, &a->nnames);
	a->dir = a->traces.n ? a->traces.dir[0] : arg;
	return rc;
}

static int parse(int argc, char **argv, struct export_args *a)
{
	memset(a, 0, sizeof *a);
	const struct vt_cli_parser parser = {&export_help, export_option, export_operand, 0};
	int next, rc = vt_cli_parse(&parser, argc, argv, a, &next);
	if (rc)
		return rc;
	if (!a->dir)
		return vt_cli_usage_error("export",
		                          "which trace? (a directory `vramtrace run` wrote)");
	if ((rc = settle_format_and_output(a)))
		return rc;
	if (a->stream &&
	    (a->at || (strcmp(a->format->name, "perfetto") && strcmp(a->format->name, "csv"))))
		return vt_cli_usage_error("export",
		                          "--stream writes the timeline as perfetto or csv, "
		                          "with no --at");
	if (a->traces.n > 1 && (a->stream || !a->format->write_job))
		return vt_cli_usage_error("export",
		                          "several traces are exported as one job: html or "
		                          "perfetto, no --stream");
	return 0;
}

struct format_job {
	const struct export_args *a;
	const struct vt_export *x;
	const struct vt_export_job *job; /* NULL: the trace on its own */
};

static int write_format_job(FILE *out, void *ctx)
{
	const struct format_job *fj = ctx;
	if (fj->job)
		return fj->a->format->write_job(fj->job, out);
	return fj->a->format->write(fj->x, fj->a->dir, out);
}

/* fn(out, ctx) to standard output for "-o -", else to the file (written
 * next to it and renamed). 0, or -1 with one line on stderr. */
static int write_to(const struct export_args *a, vt_export_writer fn, void *ctx)
{
	char err[512];
	if (!strcmp(a->out, "-")) {
		if (fn(stdout, ctx) == 0 && fflush(stdout) == 0)
			return 0;
		fprintf(stderr, "vramtrace export: writing the %s export failed\n",
		        a->format->name);
		return -1;
	}
	if (make_parents(a->out) != 0) {
		fprintf(stderr, "vramtrace export: cannot make the folder for %s: %s\n", a->out,
		        strerror(errno));
		return -1;
	}
	if (vt_export_write_file(a->out, fn, ctx, err, sizeof err) == 0)
		return 0;
	fprintf(stderr, "vramtrace export: %s\n", err);
	return -1;
}

static int write_output(const struct export_args *a, const struct vt_export *x,
                        const struct vt_export_job *job)
{
	struct format_job fj = {a, x, job};
	return write_to(a, write_format_job, &fj);
}

/* The traces x[0..n) as one job when they make one and the format has a
 * job view, else the first on its own. */
static int write_traces(const struct export_args *a, const struct vt_export *x, unsigned n)
{
	if (!a->format->write_job || !vt_export_job_wanted(x, n))
		return write_output(a, x, NULL);
	struct vt_export_job job;
	if (vt_export_job_open(&job, x, a->traces.dir, n) != 0) {
		fprintf(stderr, "vramtrace export: out of memory\n");
		return -1;
	}
	int rc = write_output(a, x, &job);
	vt_export_job_close(&job);
	return rc;
}

static void say_written(const struct export_args *a)
{
	struct stat st;
	if (!strcmp(a->out, "-") || stat(a->out, &st) != 0)
		return;
	char size[32];
	vt_format_bytes((uint64_t)st.st_size, size, sizeof size);
	fprintf(stderr, "vramtrace export: wrote %s%s%s (%s, %s)\n",
	        vt_term_color(stderr, VT_COLOR_BOLD), a->out, vt_term_color(stderr, VT_COLOR_RESET),
	        a->format->name, size);
}

struct stream_job {
	const struct export_args *a;
	const struct vt_model *m;
};

static int write_stream_job(FILE *out, void *ctx)
{
	const struct stream_job *job = ctx;
	return strcmp(job->a->format->name, "perfetto")
	           ? vt_export_stream_csv(job->m, out)
	           : vt_export_stream_perfetto(job->m, job->a->dir, out);
}

/* --stream: the timeline of a streaming model. */
static int export_stream(const struct export_args *a)
{
	struct vt_model *m = vt_cmd_load("export", a->dir, 1);
	if (!m)
		return 1;
	struct stream_job job = {a, m};
	int rc = write_to(a, write_stream_job, &job);
	if (rc == 0)
		say_written(a);
	vt_model_free(m);
	return rc ? 1 : 0;
}

/* The export of a's traces: 0, or the command's exit code. */
static int export_traces(struct export_args *a)
{
	if (a->stream)
		return export_stream(a);
	unsigned n = a->traces.n;
	struct vt_model *models[VT_CLI_MAX_TRACES];
	/* an export holds a report with per-device tables: on the heap */
	struct vt_export *x = calloc(n, sizeof *x);
	if (!x || vt_cmd_load_all("export", &a->traces, models) != 0) {
		free(x);
		return 1;
	}
	char err[512] = "";
	int rc = 0;
	unsigned opened = 0;
	while (opened < n &&
	       vt_export_open(&x[opened], models[opened], a->at, err, sizeof err) == 0)
		opened++;
	if (opened < n) {
		fprintf(stderr, "vramtrace export: %s\n", err);
		rc = 2;
	} else {
		rc = write_traces(a, x, n) ? 1 : 0;
		if (rc == 0)
			say_written(a);
	}
	while (opened-- > 0)
		vt_export_close(&x[opened]);
	free(x);
	vt_cmd_free_all(models, n);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	struct export_args a;
	int rc = parse(argc, argv, &a);
	if (!rc)
		rc = export_traces(&a);
	else if (rc == VT_CLI_HELP_SHOWN)
		rc = 0;
	vt_cmd_free_names(a.names, a.nnames);
	return rc;
}
