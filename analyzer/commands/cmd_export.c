/* vramtrace export DIR [--format html|perfetto|folded|csv] [--at T] [-o FILE]
 *   --stream: the streaming model's timeline (export_stream.h), csv or perfetto
 * The format defaults to the one -o's extension names, else html; the file
 * to vramtrace-<trace>.<extension> here. -o's missing folders are made. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd_load.h"
#include "commands.h"
#include "export_csv.h"
#include "export_data.h"
#include "export_folded.h"
#include "export_html.h"
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
} formats[] = {
    {"html", ".html", write_html},
    {"perfetto", ".json", write_perfetto},
    {"folded", ".folded", write_folded},
    {"csv", ".csv", write_csv},
};

struct export_args {
	const char *dir, *at, *out;
	const struct format *format;
	int stream;                      /* --stream */
	char default_out[PATH_MAX + 32]; /* vramtrace-<trace>.<ext> when no -o: room for any name */
};

static void print_usage(FILE *to)
{
	fprintf(to, "usage: vramtrace export DIR [--format html|perfetto|folded|csv] "
	            "[--at peak|end|SECONDS] [--stream] [-o FILE]   (FILE '-': standard output; "
	            "the format defaults to FILE's extension, else html; "
	            "--stream: perfetto or csv)\n");
}

static int usage(void)
{
	print_usage(stderr);
	return 2;
}

/* What parse returns for --help: the usage went to stdout, exit 0. */
#define HELP_SHOWN (-1)

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
		if (!(a->format = format_of_path(a->out))) {
			fprintf(stderr,
			        "vramtrace export: cannot tell the format from '%s' "
			        "(.html, .json, .folded or .csv; or --format)\n",
			        a->out);
			return 2;
		}
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

static int parse(int argc, char **argv, struct export_args *a)
{
	memset(a, 0, sizeof *a);
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		int takes_value = !strcmp(o, "--format") || !strcmp(o, "--at") || !strcmp(o, "-o");
		if (takes_value && i + 1 >= argc) {
			fprintf(stderr, "vramtrace export: %s needs a value\n", o);
			return 2;
		}
		if (!strcmp(o, "--format")) {
			if (!(a->format = find_format(argv[++i]))) {
				fprintf(stderr,
				        "vramtrace export: unknown format '%s' "
				        "(html, perfetto, folded or csv)\n",
				        argv[i]);
				return 2;
			}
		} else if (!strcmp(o, "--at")) {
			a->at = argv[++i];
		} else if (!strcmp(o, "--stream")) {
			a->stream = 1;
		} else if (!strcmp(o, "-o")) {
			a->out = argv[++i];
		} else if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			print_usage(stdout);
			return HELP_SHOWN;
		} else if (o[0] == '-') {
			fprintf(stderr, "vramtrace export: unknown option '%s'\n", o);
			return usage();
		} else if (!a->dir) {
			a->dir = o;
		} else {
			fprintf(stderr, "vramtrace export: one trace directory, please ('%s')\n",
			        o);
			return 2;
		}
	}
	if (!a->dir)
		return usage();
	int rc = settle_format_and_output(a);
	if (rc)
		return rc;
	if (a->stream &&
	    (a->at || (strcmp(a->format->name, "perfetto") && strcmp(a->format->name, "csv")))) {
		fprintf(stderr,
		        "vramtrace export: --stream writes the timeline as perfetto or csv, "
		        "with no --at\n");
		return 2;
	}
	return 0;
}

struct format_job {
	const struct export_args *a;
	const struct vt_export *x;
};

static int write_format_job(FILE *out, void *ctx)
{
	const struct format_job *job = ctx;
	return job->a->format->write(job->x, job->a->dir, out);
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

static int write_output(const struct export_args *a, const struct vt_export *x)
{
	struct format_job job = {a, x};
	return write_to(a, write_format_job, &job);
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

int cmd_export(int argc, char **argv)
{
	struct export_args a;
	int rc = parse(argc, argv, &a);
	if (rc)
		return rc == HELP_SHOWN ? 0 : rc;
	if (a.stream)
		return export_stream(&a);
	struct vt_model *m = vt_cmd_load("export", a.dir, 0);
	if (!m)
		return 1;
	char err[512] = "";
	struct vt_export x;
	if (vt_export_open(&x, m, a.at, err, sizeof err) != 0) {
		fprintf(stderr, "vramtrace export: %s\n", err);
		vt_model_free(m);
		return 2;
	}
	rc = write_output(&a, &x);
	if (rc == 0)
		say_written(&a);
	vt_export_close(&x);
	vt_model_free(m);
	return rc ? 1 : 0;
}
