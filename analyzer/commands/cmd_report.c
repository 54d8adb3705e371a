/* vramtrace report [options] DIR: what held each device at its peak (the
 * options: report_options). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_load.h"
#include "commands.h"
#include "export_html.h" /* --html (export/) */
#include "model.h"
#include "model_stream.h"
#include "report.h"
#include "report_json.h"
#include "report_text.h"
#include "report_stream.h"

static const struct vt_cli_option report_options[] = {
    {"--json", NULL, "the report as JSON"},
    {"--top", "N", "N rows in each table (default 10)"},
    {"--at", "peak|end|SECONDS",
     "what was live at each device's peak (default), the end, or a time"},
    {"--allocs", NULL, "every live allocation too, with its category and stack"},
    {"--html", "FILE", "also write the HTML timeline to FILE (vramtrace export)"},
    {"--stream", NULL, "peaks and sites of a trace of any length, in little memory"},
    {"--verbose", NULL, "recording cost per process, under each process"},
    {NULL, NULL, NULL},
};

static const struct vt_cli_help report_help = {
    "report", "DIR", "Say what held each device at its peak: categories, sites, findings.",
    report_options,
    "exit: 0, 1 when the trace cannot be read or the output written, 2 for a usage error.\n"};

struct report_args {
	struct vt_report_options opt;
	const char *dir, *html;
	int stream; /* --stream */
};

static int report_option(void *ctx, const struct vt_cli_option *o, const char *v)
{
	struct report_args *a = ctx;
	if (!strcmp(o->name, "--json")) {
		a->opt.json = 1;
	} else if (!strcmp(o->name, "--verbose")) {
		a->opt.verbose = 1;
	} else if (!strcmp(o->name, "--stream")) {
		a->stream = 1;
	} else if (!strcmp(o->name, "--allocs")) {
		a->opt.with_allocs = 1;
	} else if (!strcmp(o->name, "--html")) { /* export part: the HTML timeline too */
		a->html = v;
	} else if (!strcmp(o->name, "--at")) {
		a->opt.at = v;
	} else {
		char *end;
		long n = strtol(v, &end, 10);
		if (*end || n < 1 || n > 100000)
			return vt_cli_usage_error("report", "--top wants a count, not '%s'", v);
		a->opt.top = (int)n;
	}
	return 0;
}

static int report_operand(void *ctx, const char *arg)
{
	return vt_cli_one_trace("report", &((struct report_args *)ctx)->dir, arg);
}

/* Parse the options into a: 0, VT_CLI_HELP_SHOWN or an exit code. */
static int parse(int argc, char **argv, struct report_args *a)
{
	memset(a, 0, sizeof *a);
	a->opt.top = 10;
	const struct vt_cli_parser parser = {&report_help, report_option, report_operand, 0};
	int next, rc = vt_cli_parse(&parser, argc, argv, a, &next);
	if (rc)
		return rc;
	if (!a->dir)
		return vt_cli_usage_error("report",
		                          "which trace? (a directory `vramtrace run` wrote)");
	if (a->stream && (a->opt.at || a->opt.with_allocs || a->html))
		return vt_cli_usage_error("report",
		                          "--stream keeps only what was live at each peak: "
		                          "no --at, --allocs or --html with it");
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
	struct report_args a;
	int rc = parse(argc, argv, &a);
	if (rc)
		return rc == VT_CLI_HELP_SHOWN ? 0 : rc;
	if (a.stream)
		return report_stream(a.dir, &a.opt);
	a.opt.title = a.dir;
	struct vt_model *m = vt_cmd_load("report", a.dir, 0);
	if (!m)
		return 1;
	char err[512] = "";
	struct vt_report r;
	if (vt_report_build(&r, m, &a.opt, err, sizeof err) != 0) {
		fprintf(stderr, "vramtrace report: %s\n", err);
		vt_model_free(m);
		return 2;
	}
	rc = a.opt.json ? vt_report_write_json(&r, stdout) : vt_report_write_text(&r, stdout);
	if (rc)
		fprintf(stderr, "vramtrace report: writing the report failed\n");
	vt_report_free(&r);
	/* --html FILE: `vramtrace export DIR --format html -o FILE` (export part) */
	if (a.html && vt_export_html_file(m, a.dir, a.html, err, sizeof err) != 0) {
		fprintf(stderr, "vramtrace report: %s\n", err);
		rc = 1;
	}
	vt_model_free(m);
	return rc ? 1 : 0;
}
