/* vramtrace report DIR [--json] [--top N] [--at peak|end|SECONDS] [--allocs] [--html FILE]
 *                  [--stream] [--verbose] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_load.h"
#include "commands.h"
#include "export_html.h" /* --html (export/) */
#include "model.h"
#include "model_stream.h"
#include "report.h"
#include "report_json.h"
#include "report_text.h"
#include "report_stream.h"

static void print_usage(FILE *to)
{
	fprintf(to, "usage: vramtrace report DIR [--json] [--top N] [--at peak|end|SECONDS] "
	            "[--allocs] [--html FILE] [--stream] [--verbose]\n");
}

static int usage(void)
{
	print_usage(stderr);
	return 2;
}

/* What parse returns for --help: the usage went to stdout, exit 0. */
#define HELP_SHOWN (-1)

/* Parse the options into opt; the trace directory into *dir. 0 or exit code. */
static int parse(int argc, char **argv, struct vt_report_options *opt, const char **dir,
                 const char **html, int *stream)
{
	memset(opt, 0, sizeof *opt);
	opt->top = 10;
	*dir = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--json")) {
			opt->json = 1;
		} else if (!strcmp(a, "--verbose")) {
			opt->verbose = 1;
		} else if (!strcmp(a, "--stream")) {
			*stream = 1;
		} else if (!strcmp(a, "--allocs")) {
			opt->with_allocs = 1;
		} else if (!strcmp(a, "--html")) { /* export part: the HTML timeline too */
			if (i + 1 >= argc) {
				fprintf(stderr, "vramtrace report: --html needs a file\n");
				return 2;
			}
			*html = argv[++i];
		} else if (!strcmp(a, "--top") || !strcmp(a, "--at")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "vramtrace report: %s needs a value\n", a);
				return 2;
			}
			const char *v = argv[++i];
			if (!strcmp(a, "--at")) {
				opt->at = v;
				continue;
			}
			char *end;
			long n = strtol(v, &end, 10);
			if (*end || n < 1 || n > 100000) {
				fprintf(stderr, "vramtrace report: --top wants a count, not '%s'\n",
				        v);
				return 2;
			}
			opt->top = (int)n;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			print_usage(stdout);
			return HELP_SHOWN;
		} else if (a[0] == '-') {
			fprintf(stderr, "vramtrace report: unknown option '%s'\n", a);
			return usage();
		} else if (!*dir) {
			*dir = a;
		} else {
			fprintf(stderr, "vramtrace report: one trace directory, please ('%s')\n",
			        a);
			return 2;
		}
	}
	if (!*dir)
		return usage();
	if (*stream && (opt->at || opt->with_allocs || *html)) {
		fprintf(stderr, "vramtrace report: --stream keeps only what was live at each peak: "
		                "no --at, --allocs or --html with it\n");
		return 2;
	}
	return 0;
}

/* --stream: a streaming model, memory for what is live (model_stream.h). */
static int report_stream(const char *dir, const struct vt_report_options *opt)
{
	struct vt_model *m = vt_cmd_load("report", dir, 1);
	if (!m)
		return 1;
	int rc = opt->json ? vt_report_stream_json(m, dir, opt->top, stdout)
	                   : vt_report_stream_text(m, dir, opt->top, stdout);
	if (rc)
		fprintf(stderr, "vramtrace report: writing the report failed\n");
	vt_model_free(m);
	return rc ? 1 : 0;
}

int cmd_report(int argc, char **argv)
{
	struct vt_report_options opt;
	const char *dir, *html = NULL;
	int stream = 0;
	int rc = parse(argc, argv, &opt, &dir, &html, &stream);
	if (rc)
		return rc == HELP_SHOWN ? 0 : rc;
	if (stream)
		return report_stream(dir, &opt);
	opt.title = dir;
	struct vt_model *m = vt_cmd_load("report", dir, 0);
	if (!m)
		return 1;
	char err[512] = "";
	struct vt_report r;
	if (vt_report_build(&r, m, &opt, err, sizeof err) != 0) {
		fprintf(stderr, "vramtrace report: %s\n", err);
		vt_model_free(m);
		return 2;
	}
	rc = opt.json ? vt_report_write_json(&r, stdout) : vt_report_write_text(&r, stdout);
	if (rc)
		fprintf(stderr, "vramtrace report: writing the report failed\n");
	vt_report_free(&r);
	/* --html FILE: `vramtrace export DIR --format html -o FILE` (export part) */
	if (html && vt_export_html_file(m, dir, html, err, sizeof err) != 0) {
		fprintf(stderr, "vramtrace report: %s\n", err);
		rc = 1;
	}
	vt_model_free(m);
	return rc ? 1 : 0;
}
