/* `vramtrace predict DIR=N DIR=N ... [--at N]... [--capacity SIZE] [--margin PCT]
 * [--granularity SIZE] [--json] [--fail-if-over SIZE] [--require-batch N]`:
 * the peak of one job at other batch sizes, from traces at two or more
 * (fitted in predict.c). Each trace is loaded, reported on and freed before
 * the next: memory for one model at a time.
 * Exit status: 0; 3 when a gate (--fail-if-over, --require-batch) fails,
 * an uncertain prediction included; 1 for a trace that cannot be read or
 * has no batch size; 2 for bad usage. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_load.h"
#include "commands.h"
#include "json_out.h"
#include "nomem.h"
#include "predict.h"
#include "report.h"
#include "units.h"
#include "vramtrace/size_text.h"

#define MAX_RUNS 64
#define MAX_AT 32
#define GATE_FAILED 3

struct predict_options {
	const char *dirs[MAX_RUNS];
	uint64_t batches[MAX_RUNS]; /* 0: from the trace's batch_size marker */
	int nruns;
	uint64_t at[MAX_AT];
	int nat;
	uint64_t capacity, granularity, fail_if_over, require_batch;
	double margin;
	int json;
};

/* What the devices hold: the capacity each is judged against. */
struct capacities {
	uint64_t total[VT_MAX_DEVICES], usable[VT_MAX_DEVICES];
	const char *source[VT_MAX_DEVICES]; /* "flag", "trace" or NULL: unknown */
	int known;                          /* every device used has one */
	uint64_t largest;                   /* largest batch that fits (predict.h) */
};

struct lines {
	char text[32][240];
	int n;
};

static void add_line(struct lines *l, const char *text)
{
	if (l->n < 32)
		snprintf(l->text[l->n++], sizeof l->text[0], "%s", text);
}

/* ---- the fit's doubts, in words ------------------------------------------------- */

static void cat_doubts(const struct vt_predict *p, int dev, int cat, struct lines *out)
{
	const struct vt_predict_cat *c = &p->cat[dev][cat];
	char line[240], most[32], chunk[32];
	const char *name = vt_category_name(cat);
	vt_format_bytes(c->most, most, sizeof most);
	vt_format_bytes(c->chunk, chunk, sizeof chunk);
	if (c->uncertain & VT_DOUBT_SHRINKS) {
		snprintf(line, sizeof line, "GPU %d %s: fewer bytes at a larger batch; held at %s",
		         dev, name, most);
		add_line(out, line);
	}
	if (c->uncertain & VT_DOUBT_OFF_LINE) {
		snprintf(line, sizeof line,
		         "GPU %d %s: a run in between is %.1f%% off the line through the others",
		         dev, name, 100.0 * c->worst_miss);
		add_line(out, line);
	}
	if (c->uncertain & VT_DOUBT_COUNT) {
		snprintf(line, sizeof line,
		         "GPU %d %s: a different number of allocations at the peak between runs",
		         dev, name);
		add_line(out, line);
	}
	if (c->uncertain & VT_DOUBT_POOL_CHUNKS) {
		snprintf(line, sizeof line,
		         "GPU %d %s: grows in chunks of %s; rounded up to whole chunks", dev, name,
		         chunk);
		add_line(out, line);
	}
}

static void doubts(const struct vt_predict *p, struct lines *out)
{
	memset(out, 0, sizeof *out);
	if (p->allocs_per_step_differ) {
		char line[240];
		int n = snprintf(line, sizeof line, "allocations per step differ between runs:");
		for (int i = 0; i < p->nruns && n < (int)sizeof line; i++)
			n += snprintf(line + n, sizeof line - (size_t)n, " %.1f at batch %llu",
			              (double)p->runs[i].allocs_per_step_x10 / 10.0,
			              (unsigned long long)p->runs[i].batch);
		add_line(out, line);
	}
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++)
		for (int cat = 0; p->dev_used[dev] && cat < VT_CAT_COUNT; cat++)
			cat_doubts(p, dev, cat, out);
}

/* ---- capacity and gates ------------------------------------------------------------ */

static void find_capacities(const struct vt_predict *p, const struct predict_options *o,
                            struct capacities *cap)
{
	memset(cap, 0, sizeof *cap);
	cap->known = 1;
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++) {
		if (!p->dev_used[dev])
			continue;
		uint64_t total = o->capacity;
		cap->source[dev] = "flag";
		for (int i = 0; !total && i < p->nruns; i++) {
			total = p->runs[i].dev[dev].total;
			cap->source[dev] = "trace";
		}
		if (!total) {
			cap->source[dev] = NULL;
			cap->known = 0;
			continue;
		}
		cap->total[dev] = total;
		cap->usable[dev] = (uint64_t)((double)total * (100.0 - o->margin) / 100.0);
	}
	cap->largest = cap->known ? vt_predict_largest_fit(p, cap->usable) : 0;
}

static void gate_over(const struct vt_predict *p, const struct predict_options *o,
                      struct lines *why)
{
	char line[240], b[32], limit[32];
	vt_format_bytes(o->fail_if_over, limit, sizeof limit);
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++) {
		for (int k = 0; p->dev_used[dev] && k < o->nat; k++) {
			uint64_t peak = vt_predict_peak(p, dev, o->at[k]);
			if (peak <= o->fail_if_over)
				continue;
			vt_format_bytes(peak, b, sizeof b);
			snprintf(line, sizeof line, "GPU %d at batch %llu: %s, over %s", dev,
			         (unsigned long long)o->at[k], b, limit);
			add_line(why, line);
		}
	}
}

/* The gates' failures (none asked: none). Returns -1 when --require-batch
 * has no capacity to be judged against. */
static int check_gates(const struct vt_predict *p, const struct predict_options *o,
                       const struct capacities *cap, struct lines *why)
{
	memset(why, 0, sizeof *why);
	char line[240];
	if (o->fail_if_over)
		gate_over(p, o, why);
	if (o->require_batch) {
		if (!cap->known) {
			add_line(why, "--require-batch: the device's memory is unknown");
			return -1;
		}
		if (cap->largest < o->require_batch) {
			snprintf(line, sizeof line,
			         "batch %llu does not fit: the largest that does is %llu",
			         (unsigned long long)o->require_batch,
			         (unsigned long long)cap->largest);
			add_line(why, line);
		}
	}
	if ((o->fail_if_over || o->require_batch) && vt_predict_uncertain(p, 1))
		add_line(why, "the prediction is uncertain (see above): not trusted to pass");
	return 0;
}

/* ---- text ------------------------------------------------------------------------------ */

static void text_runs(const struct vt_predict *p, FILE *out)
{
	fprintf(out, "vramtrace predict: %d traces\n", p->nruns);
	for (int i = 0; i < p->nruns; i++) {
		fprintf(out, "  batch %-6llu %s, peak", (unsigned long long)p->runs[i].batch,
		        p->runs[i].dir);
		for (int dev = 0; dev < VT_MAX_DEVICES; dev++) {
			char b[32];
			if (!p->dev_used[dev])
				continue;
			vt_format_bytes(p->runs[i].dev[dev].peak, b, sizeof b);
			fprintf(out, " GPU %d %s", dev, b);
		}
		fputc('\n', out);
	}
}

static const char *shape_name(const struct vt_predict_cat *c)
{
	return c->shape == VT_SHAPE_CONSTANT ? "constant" : c->dy > 0 ? "grows" : "shrinks";
}

static void text_cats(const struct vt_predict *p, int dev, FILE *out)
{
	fprintf(out, "  %-12s", "category");
	for (int i = 0; i < p->nruns; i++)
		fprintf(out, " %9s%-5llu", "batch ", (unsigned long long)p->runs[i].batch);
	fprintf(out, " %12s  shape\n", "per sample");
	for (int cat = 0; cat < VT_CAT_COUNT; cat++) {
		const struct vt_predict_cat *c = &p->cat[dev][cat];
		if (c->shape == VT_SHAPE_ABSENT)
			continue;
		char b[32];
		fprintf(out, "  %-12s", vt_category_name(cat));
		for (int i = 0; i < p->nruns; i++) {
			vt_format_bytes(p->runs[i].dev[dev].cats[cat], b, sizeof b);
			fprintf(out, " %14s", b);
		}
		char per[40] = "0";
		if (c->shape == VT_SHAPE_LINEAR) {
			vt_format_bytes((uint64_t)llround(fabs(c->b)), b, sizeof b);
			snprintf(per, sizeof per, "%s%s", c->b < 0 ? "-" : "", b);
		}
		fprintf(out, " %12s  %s%s\n", per, shape_name(c),
		        c->uncertain ? " (uncertain)" : "");
	}
}

static void text_device(const struct vt_predict *p, const struct predict_options *o,
                        const struct capacities *cap, int dev, FILE *out)
{
	char b[32], u[32];
	fprintf(out, "\nGPU %d", dev);
	if (cap->source[dev]) {
		vt_format_bytes(cap->total[dev], b, sizeof b);
		vt_format_bytes(cap->usable[dev], u, sizeof u);
		fprintf(out, ": %s (from the %s), %s usable with a %g%% margin", b,
		        cap->source[dev], u, o->margin);
	}
	fprintf(out, "\n");
	text_cats(p, dev, out);
	for (int k = 0; k < o->nat; k++) {
		uint64_t peak = vt_predict_peak(p, dev, o->at[k]);
		vt_format_bytes(peak, b, sizeof b);
		fprintf(out, "  predicted peak at batch %llu: %s", (unsigned long long)o->at[k], b);
		if (cap->source[dev])
			fprintf(out, " (%.1f%% of the device)",
			        100.0 * (double)peak / (double)cap->total[dev]);
		fputc('\n', out);
	}
}

static void text_largest(const struct vt_predict *p, const struct capacities *cap, FILE *out)
{
	char b[32];
	fprintf(out, "\nLargest batch that fits: ");
	if (!cap->known)
		fprintf(
		    out,
		    "unknown: the traces do not record the device's memory (give --capacity)\n");
	else if (cap->largest == VT_PREDICT_NO_LIMIT)
		fprintf(out, "any: the peak does not grow with the batch and fits\n");
	else if (cap->largest == 0)
		fprintf(out, "none: batch 1 is predicted over the usable memory\n");
	else
		fprintf(out, "%llu%s\n", (unsigned long long)cap->largest,
		        vt_predict_uncertain(p, 0) ? " (uncertain, see below)" : "");
	for (int dev = 0; cap->known && cap->largest && cap->largest != VT_PREDICT_NO_LIMIT &&
	                  dev < VT_MAX_DEVICES;
	     dev++) {
		if (!p->dev_used[dev])
			continue;
		vt_format_bytes(vt_predict_peak(p, dev, cap->largest), b, sizeof b);
		fprintf(out, "  GPU %d at batch %llu: %s\n", dev, (unsigned long long)cap->largest,
		        b);
	}
}

static void text_lines(const char *title, const struct lines *l, FILE *out)
{
	fprintf(out, "\n%s\n", title);
	for (int i = 0; i < l->n; i++)
		fprintf(out, "  %s\n", l->text[i]);
}

static void write_text(const struct vt_predict *p, const struct predict_options *o,
                       const struct capacities *cap, const struct lines *why, FILE *out)
{
	text_runs(p, out);
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++)
		if (p->dev_used[dev])
			text_device(p, o, cap, dev, out);
	text_largest(p, cap, out);
	struct lines doubt;
	doubts(p, &doubt);
	if (doubt.n)
		text_lines("Uncertain", &doubt, out);
	else
		fprintf(out, "\nEvery category scaled consistently between the runs.\n");
	if (o->fail_if_over || o->require_batch)
		text_lines(why->n ? "Gate: FAILED" : "Gate: passed", why, out);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void json_lines(struct vt_json *j, const char *key, const struct lines *l)
{
	vt_json_key(j, key);
	vt_json_begin_array(j);
	for (int i = 0; i < l->n; i++)
		vt_json_string(j, l->text[i]);
	vt_json_end_array(j);
}

static void json_cat(struct vt_json *j, const struct vt_predict *p, int dev, int cat)
{
	const struct vt_predict_cat *c = &p->cat[dev][cat];
	vt_json_key(j, vt_category_name(cat));
	vt_json_begin_object(j);
	vt_json_kv_string(j, "shape", c->shape == VT_SHAPE_CONSTANT ? "constant" : "linear");
	vt_json_kv_double(j, "intercept", c->a);
	vt_json_kv_double(j, "per_sample", c->b);
	vt_json_key(j, "measured");
	vt_json_begin_array(j);
	for (int i = 0; i < p->nruns; i++)
		vt_json_u64(j, p->runs[i].dev[dev].cats[cat]);
	vt_json_end_array(j);
	vt_json_kv_u64(j, "allocations", c->count);
	vt_json_kv_u64(j, "pool_chunk", c->chunk);
	vt_json_kv_double(j, "worst_miss", c->worst_miss);
	vt_json_kv_bool(j, "uncertain", c->uncertain != 0);
	vt_json_end_object(j);
}

static void json_device(struct vt_json *j, const struct vt_predict *p,
                        const struct predict_options *o, const struct capacities *cap, int dev)
{
	char key[8];
	snprintf(key, sizeof key, "%d", dev);
	vt_json_key(j, key);
	vt_json_begin_object(j);
	vt_json_key(j, "capacity");
	cap->source[dev] ? vt_json_u64(j, cap->total[dev]) : vt_json_null(j);
	vt_json_key(j, "capacity_from");
	cap->source[dev] ? vt_json_string(j, cap->source[dev]) : vt_json_null(j);
	vt_json_kv_u64(j, "usable", cap->usable[dev]);
	vt_json_key(j, "measured_peak");
	vt_json_begin_array(j);
	for (int i = 0; i < p->nruns; i++)
		vt_json_u64(j, p->runs[i].dev[dev].peak);
	vt_json_end_array(j);
	vt_json_key(j, "categories");
	vt_json_begin_object(j);
	for (int cat = 0; cat < VT_CAT_COUNT; cat++)
		if (p->cat[dev][cat].shape != VT_SHAPE_ABSENT)
			json_cat(j, p, dev, cat);
	vt_json_end_object(j);
	vt_json_key(j, "predicted");
	vt_json_begin_array(j);
	for (int k = 0; k < o->nat; k++) {
		vt_json_begin_object(j);
		vt_json_kv_u64(j, "batch", o->at[k]);
		vt_json_kv_u64(j, "peak", vt_predict_peak(p, dev, o->at[k]));
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
	vt_json_end_object(j);
}

static void json_largest(struct vt_json *j, const struct capacities *cap)
{
	vt_json_key(j, "largest_batch");
	if (!cap->known || cap->largest == VT_PREDICT_NO_LIMIT)
		vt_json_null(j);
	else
		vt_json_u64(j, cap->largest);
	vt_json_kv_bool(j, "any_batch_fits", cap->known && cap->largest == VT_PREDICT_NO_LIMIT);
}

static void json_runs(struct vt_json *j, const struct vt_predict *p)
{
	vt_json_key(j, "runs");
	vt_json_begin_array(j);
	for (int i = 0; i < p->nruns; i++) {
		vt_json_begin_object(j);
		vt_json_kv_string(j, "dir", p->runs[i].dir);
		vt_json_kv_u64(j, "batch", p->runs[i].batch);
		vt_json_kv_double(j, "allocs_per_step",
		                  (double)p->runs[i].allocs_per_step_x10 / 10.0);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static int write_json(const struct vt_predict *p, const struct predict_options *o,
                      const struct capacities *cap, const struct lines *why, FILE *out)
{
	struct vt_json j;
	vt_json_init(&j, out, 1);
	vt_json_begin_object(&j);
	json_runs(&j, p);
	vt_json_kv_u64(&j, "granularity", p->granularity);
	vt_json_kv_double(&j, "margin_percent", o->margin);
	vt_json_key(&j, "devices");
	vt_json_begin_object(&j);
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++)
		if (p->dev_used[dev])
			json_device(&j, p, o, cap, dev);
	vt_json_end_object(&j);
	json_largest(&j, cap);
	struct lines doubt;
	doubts(p, &doubt);
	vt_json_kv_bool(&j, "uncertain", doubt.n > 0);
	json_lines(&j, "doubts", &doubt);
	vt_json_key(&j, "gate");
	if (o->fail_if_over || o->require_batch) {
		vt_json_begin_object(&j);
		vt_json_kv_bool(&j, "failed", why->n > 0);
		json_lines(&j, "reasons", why);
		vt_json_end_object(&j);
	} else {
		vt_json_null(&j);
	}
	vt_json_end_object(&j);
	return vt_json_finish(&j);
}

/* ---- arguments ---------------------------------------------------------------------- */

static int parse_batch(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || *s == '-' || v == 0 || v > VT_PREDICT_MAX_BATCH)
		return -1;
	*out = v;
	return 0;
}

/* "DIR=N" (the last '=' followed by a number) or "DIR" (batch 0: the marker's). */
static int add_dir(struct predict_options *o, char *arg)
{
	if (o->nruns == MAX_RUNS) {
		fprintf(stderr, "vramtrace predict: at most %d traces\n", MAX_RUNS);
		return 2;
	}
	char *eq = strrchr(arg, '=');
	uint64_t batch = 0;
	if (eq && eq != arg && !parse_batch(eq + 1, &batch))
		*eq = '\0';
	else if (eq && eq != arg && eq[1] >= '0' && eq[1] <= '9') {
		fprintf(stderr, "vramtrace predict: '%s': the batch wants 1..%llu\n", arg,
		        (unsigned long long)VT_PREDICT_MAX_BATCH);
		return 2;
	}
	o->dirs[o->nruns] = arg;
	o->batches[o->nruns++] = batch;
	return 0;
}

static const struct vt_cli_option predict_options_table[] = {
    {"--at", "BATCH", "predict the peak at this batch size (repeatable)"},
    {"--capacity", "SIZE", "judge against this much device memory (default: the trace's)"},
    {"--margin", "PCT", "keep this share of the capacity free (default 0)"},
    {"--granularity", "SIZE", "allocations are rounded up to this (default 512)"},
    {"--json", NULL, "the prediction as JSON"},
    {"--fail-if-over", "SIZE", "exit 3 when the peak at --at is over SIZE"},
    {"--require-batch", "BATCH", "exit 3 unless this batch size is predicted to fit"},
    {NULL, NULL, NULL},
};

static const struct vt_cli_help predict_help = {
    "predict", "DIR[=BATCH] DIR[=BATCH]...",
    "Predict the peak at other batch sizes, and the largest batch that fits, from traces of "
    "one job at two or more.",
    predict_options_table,
    "A bare DIR takes its batch size from a \"batch_size N\" marker in the trace.\n"
    "exit: 0; 3 when a gate fails (an uncertain prediction included); 1 when a trace cannot\n"
    "be read or has no batch size; 2 for a usage error.\n"};

static int bad_value(const char *opt, const char *v, const char *want)
{
	return vt_cli_usage_error("predict", "%s wants %s, not '%s'", opt, want, v);
}

/* One option with its value at argv[*i]; 0, or an exit code. */
static int parse_valued(struct predict_options *o, const char *a, const char *v)
{
	if (!strcmp(a, "--at")) {
		if (o->nat == MAX_AT)
			return bad_value(a, v, "at most 32 batch sizes");
		return parse_batch(v, &o->at[o->nat++]) ? bad_value(a, v, "a batch size >= 1") : 0;
	}
	if (!strcmp(a, "--require-batch"))
		return parse_batch(v, &o->require_batch) ? bad_value(a, v, "a batch size >= 1") : 0;
	if (!strcmp(a, "--capacity") || !strcmp(a, "--granularity") ||
	    !strcmp(a, "--fail-if-over")) {
		uint64_t *dst = a[2] == 'c'   ? &o->capacity
		                : a[2] == 'g' ? &o->granularity
		                              : &o->fail_if_over;
		return vt_parse_size(v, dst) || !*dst ? bad_value(a, v, "a size like 80G") : 0;
	}
	if (!strcmp(a, "--margin")) {
		char *end;
		o->margin = strtod(v, &end);
		return *v && !*end && isfinite(o->margin) && o->margin >= 0 && o->margin < 100
		           ? 0
		           : bad_value(a, v, "a percentage 0..99");
	}
	return 0; /* not reached: the parser takes only the table's options */
}

static int predict_option(void *ctx, const struct vt_cli_option *opt, const char *v)
{
	struct predict_options *o = ctx;
	if (!strcmp(opt->name, "--json")) {
		o->json = 1;
		return 0;
	}
	return parse_valued(o, opt->name, v);
}

static int predict_operand(void *ctx, const char *arg)
{
	return add_dir(ctx, (char *)arg); /* argv's own string: DIR=N is cut at '=' */
}

static int parse_args(int argc, char **argv, struct predict_options *o)
{
	memset(o, 0, sizeof *o);
	o->granularity = 512;
	const struct vt_cli_parser parser = {&predict_help, predict_option, predict_operand, 0};
	int next, rc = vt_cli_parse(&parser, argc, argv, o, &next);
	if (rc)
		return rc;
	if (o->nruns < 2)
		return vt_cli_usage_error("predict", "need two or more traces");
	if (o->fail_if_over && !o->nat)
		return vt_cli_usage_error("predict", "--fail-if-over needs --at BATCH");
	return 0;
}

/* ---- command ---------------------------------------------------------------------------- */

/* Load, report on and summarise trace i, then free it. 0, or exit code 1. */
static int add_trace(struct vt_predict *p, const struct predict_options *o, int i)
{
	struct vt_model *m = vt_cmd_load("predict", o->dirs[i], 0);
	if (!m)
		return 1;
	struct vt_report r;
	struct vt_report_options ropt = {.title = o->dirs[i]};
	char err[1024];
	int rc = 0;
	if (vt_report_build(&r, m, &ropt, err, sizeof err) < 0) {
		fprintf(stderr, "vramtrace predict: %s: %s\n", o->dirs[i], err);
		rc = 1;
	} else {
		uint64_t batch = o->batches[i] ? o->batches[i] : vt_predict_batch_mark(m);
		if (batch)
			vt_predict_add_run(p, &r, batch, o->dirs[i]);
		else
			fprintf(
			    stderr,
			    "vramtrace predict: %s: no batch size: give %s=N, or have the job mark "
			    "\"batch_size N\"\n",
			    o->dirs[i], o->dirs[i]);
		rc = batch ? 0 : 1;
	}
	vt_report_free(&r);
	vt_model_free(m);
	return rc;
}

static int predict(struct vt_predict *p, const struct predict_options *o)
{
	for (int i = 0; i < o->nruns; i++)
		if (add_trace(p, o, i))
			return 1;
	char err[1200];
	if (vt_predict_fit(p, err, sizeof err) < 0) {
		fprintf(stderr, "vramtrace predict: %s\n", err);
		return 1;
	}
	struct capacities cap;
	struct lines why;
	find_capacities(p, o, &cap);
	int no_capacity = check_gates(p, o, &cap, &why) < 0;
	int werr = o->json ? write_json(p, o, &cap, &why, stdout)
	                   : (write_text(p, o, &cap, &why, stdout), 0);
	if (werr || fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "vramtrace predict: cannot write the output\n");
		return 1;
	}
	if (no_capacity) { /* the prediction is written; the gate cannot be judged */
		fprintf(stderr, "vramtrace predict: --require-batch: the traces do not record the "
		                "device's memory; give --capacity\n");
		return 2;
	}
	return why.n ? GATE_FAILED : 0;
}

int cmd_predict(int argc, char **argv)
{
	struct predict_options o;
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc == VT_CLI_HELP_SHOWN ? 0 : rc;
	struct vt_predict *p = vt_xcalloc(1, sizeof *p);
	vt_predict_init(p, o.granularity);
	rc = predict(p, &o);
	vt_predict_free(p);
	free(p);
	return rc;
}
