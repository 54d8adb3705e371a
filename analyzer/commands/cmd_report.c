/* vramtrace report [options] DIR...: what held each device at its peak (the
 * options: report_options); several traces (one per host) or one with
 * several ranks are reported as one job (ranks.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_load.h"
#include "commands.h"
#include "export_html.h" /* --html (export/) */
#include "model.h"
#include "model_fold.h"
#include "model_stream.h"
#include "ranks.h"
#include "ranks_out.h"
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
    "report", "DIR...", "Say what held each device at its peak: categories, sites, findings.",
    report_options,
    "Several DIRs (one per host of a job), or one whose processes recorded a\n"
    "launcher's rank, add the ranks side by side: each rank's peak, the imbalance\n"
    "between ranks per category and how their steps line up.\n"
    "exit: 0, 1 when the trace cannot be read or the output written, 2 for a usage error.\n"};

struct report_args {
	struct vt_report_options opt;
	struct vt_cli_traces traces;
	char *names[VT_CLI_MAX_TRACES]; /* traces found in job folders */
	unsigned nnames;
	const char *html;
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
	struct report_args *a = ctx;
	return vt_cmd_add_traces("report", &a->traces, arg, a->names, &a->nnames);
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
	if (!a->traces.n)
		return vt_cli_usage_error("report",
		                          "which trace? (a directory `vramtrace run` wrote)");
	if (a->stream && (a->opt.at || a->opt.with_allocs || a->html))
		return vt_cli_usage_error("report",
		                          "--stream keeps only what was live at each peak: "
		                          "no --at, --allocs or --html with it");
	if (a->traces.n > 1 && a->stream)
		return vt_cli_usage_error("report", "--stream reads one trace, not several");
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

/* Whether a folding model (model_fold.h) can make this report: it answers
 * what the classifying report asks, not --at, --allocs or --html, which
 * read every allocation. VRAMTRACE_FOLD=0 turns it off. */
static int folding_wanted(const struct report_args *a)
{
	const char *env = getenv("VRAMTRACE_FOLD");
	return !a->opt.at && !a->opt.with_allocs && !a->html && !(env && !strcmp(env, "0"));
}

/* A folding model whose folded evidence could not give the full model's
 * classification is replaced by the full model, and the report built
 * again: 0, or 1 when the full model could not be loaded. */
static int unfold(struct vt_report *r, struct vt_model **m, const char *dir,
                  const struct vt_report_options *opt, char *err, size_t errlen)
{
	const char *why;
	int exact = vt_fold_exact(*m, &why);
	if (getenv("VRAMTRACE_FOLD_VERBOSE")) { /* the tests: which model answered */
		uint64_t folded = 0;
		for (uint32_t i = 0; i < (*m)->nprocs; i++)
			folded += vt_fold_folded(*m, i);
		fprintf(stderr, "vramtrace report: %llu allocations folded; %s\n",
		        (unsigned long long)folded, exact ? "exact" : why);
	}
	if (exact)
		return 0;
	vt_report_free(r);
	vt_model_free(*m);
	if (!(*m = vt_cmd_reload_full("report", dir)))
		return 1;
	return vt_report_build(r, *m, opt, err, errlen) == 0 ? 0 : 2;
}

/* Each trace's report into reports[0..n): 0, or 2 after a line on
 * stderr (a malformed --at), none left built. */
static int build_reports(struct vt_report *reports, struct vt_model **models,
                         const struct report_args *a)
{
	char err[512] = "";
	for (unsigned i = 0; i < a->traces.n; i++) {
		struct vt_report_options opt = a->opt;
		opt.title = a->traces.dir[i];
		if (vt_report_build(&reports[i], models[i], &opt, err, sizeof err) == 0 &&
		    unfold(&reports[i], &models[i], a->traces.dir[i], &opt, err, sizeof err) == 0)
			continue;
		fprintf(stderr, "vramtrace report: %s\n", err);
		while (i-- > 0)
			vt_report_free(&reports[i]);
		return 2;
	}
	return 0;
}

/* The reports of one trace, or of a job's traces with the rank view. */
static int write_reports(const struct vt_report *reports, unsigned n, const struct report_args *a)
{
	const struct vt_report *list[VT_CLI_MAX_TRACES];
	for (unsigned i = 0; i < n; i++)
		list[i] = &reports[i];
	if (!vt_job_wanted(list, n))
		return a->opt.json ? vt_report_write_json(&reports[0], stdout)
		                   : vt_report_write_text(&reports[0], stdout);
	struct vt_job job;
	if (vt_job_build(&job, list, n) != 0)
		return -1;
	int rc = vt_job_write_report(&job, list, n, a->opt.json, stdout);
	vt_job_free(&job);
	return rc;
}

/* Every trace of a as the model its report needs: 0, or 1 after a line
 * on stderr (none left loaded). */
static int load_all(const struct report_args *a, struct vt_model **models)
{
	if (!folding_wanted(a))
		return vt_cmd_load_all("report", &a->traces, models);
	for (unsigned i = 0; i < a->traces.n; i++) {
		if (!(models[i] = vt_cmd_load_folding("report", a->traces.dir[i]))) {
			vt_cmd_free_all(models, i);
			return 1;
		}
	}
	return 0;
}

/* The report of a's traces: 0, or the command's exit code. */
static int report_traces(const struct report_args *a)
{
	if (a->stream)
		return report_stream(a->traces.dir[0], &a->opt);
	struct vt_model *models[VT_CLI_MAX_TRACES];
	/* a report holds per-device tables: on the heap, not hundreds on the stack */
	struct vt_report *reports = calloc(a->traces.n, sizeof *reports);
	if (!reports || load_all(a, models) != 0) {
		free(reports);
		return 1;
	}
	int rc = build_reports(reports, models, a);
	if (rc) {
		vt_cmd_free_all(models, a->traces.n);
		free(reports);
		return rc;
	}
	rc = write_reports(reports, a->traces.n, a);
	if (rc)
		fprintf(stderr, "vramtrace report: writing the report failed\n");
	for (unsigned i = 0; i < a->traces.n; i++)
		vt_report_free(&reports[i]);
	free(reports);
	char err[512] = "";
	/* --html FILE: `vramtrace export DIR... --format html -o FILE` (export
	 * part); a job's page has the rank view above its first trace's */
	if (a->html && vt_export_html_file(models, a->traces.dir, a->traces.n, a->html, err,
	                                   sizeof err) != 0) {
		fprintf(stderr, "vramtrace report: %s\n", err);
		rc = 1;
	}
	vt_cmd_free_all(models, a->traces.n);
	return rc ? 1 : 0;
}

int cmd_report(int argc, char **argv)
{
	struct report_args a;
	int rc = parse(argc, argv, &a);
	if (!rc)
		rc = report_traces(&a);
	else if (rc == VT_CLI_HELP_SHOWN)
		rc = 0;
	vt_cmd_free_names(a.names, a.nnames);
	return rc;
}
