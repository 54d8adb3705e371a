/* `vramtrace diff BASE NEW [--json] [--fail-over PERCENT] [--min-bytes SIZE] [--stream]`:
 * what changed between two runs (computed in diff.c; a job's runs also rank
 * to rank, rank_diff.h); --stream reads both
 * into streaming models (model_stream.h: peaks and sites, in memory that
 * follows what was live). Exit status: 0, or 1 when
 * --fail-over is exceeded; 2 for bad usage or a trace that cannot be read,
 * so that 1 always means "grew". */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_load.h"
#include "commands.h"
#include "diff.h"
#include "rank_diff.h"
#include "rank_diff_out.h"
#include "ranks.h"
#include "json_out.h"
#include "model_stream.h"
#include "units.h"
#include "term.h"
#include "vramtrace/size_text.h"

static const struct vt_cli_option diff_options_table[] = {
    {"--json", NULL, "the comparison as JSON"},
    {"--fail-over", "PERCENT", "exit 1 when a device's peak or a category grew by more"},
    {"--min-bytes", "SIZE", "growth smaller than SIZE never fails --fail-over (default 1M)"},
    {"--stream", NULL, "peaks and sites only, for traces of any length"},
    {NULL, NULL, NULL},
};

static const struct vt_cli_help diff_help = {
    "diff", "BASE NEW",
    "Compare two runs by name, never by address: peaks, categories, sites, findings.",
    diff_options_table,
    "BASE and NEW are trace directories, or job folders (a folder of traces, one per\n"
    "host or rank): a job's runs are compared trace to trace in name order and rank to\n"
    "rank by the launcher's rank.\n"
    "exit: 0; 1 when --fail-over is exceeded; 2 for a usage error or a trace that cannot\n"
    "be read (so that 1 always means \"grew\").\n"};
#define DIFF_TOP 10

struct diff_options {
	const char *base_dir, *new_dir;  /* as given: a trace or a job folder each */
	struct vt_cli_traces base, new_; /* their traces, in name order */
	char *names[VT_CLI_MAX_TRACES];  /* the traces found in job folders */
	unsigned nnames;
	int json;
	int stream; /* --stream */
	int have_fail_over;
	double fail_over;
	/* growth smaller than this never fails the gate: on the H200 runs a
	 * PyTorch job's activations "grew" 0 -> 20 B between allocator modes,
	 * infinitely many percent (1 MiB unless --min-bytes) */
	uint64_t min_bytes;
};

/* ---- --fail-over --------------------------------------------------------- */

struct reasons {
	char text[16][160];
	int n;
};

static void add_reason(struct reasons *r, const char *what, uint64_t b, uint64_t n)
{
	if (r->n >= 16)
		return;
	char bs[32], ns[32];
	vt_format_bytes(b, bs, sizeof bs);
	vt_format_bytes(n, ns, sizeof ns);
	if (b)
		snprintf(r->text[r->n++], sizeof r->text[0], "%s grew %s -> %s (+%.1f%%)", what, bs,
		         ns, 100.0 * (double)(n - b) / (double)b);
	else
		snprintf(r->text[r->n++], sizeof r->text[0], "%s grew %s -> %s (from nothing)",
		         what, bs, ns);
}

/* b -> n is growth over the gate: more than `percent`, by at least min_bytes */
static int over_gate(uint64_t b, uint64_t n, const struct diff_options *o)
{
	return vt_diff_grew_over(b, n, o->fail_over) && n - b >= o->min_bytes;
}

static void check_fail_over(const struct vt_diff *d, const struct diff_options *o,
                            struct reasons *out)
{
	memset(out, 0, sizeof *out);
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++) {
		if (d->dev_used[dev] && over_gate(d->peak_base[dev], d->peak_new[dev], o)) {
			char what[32];
			snprintf(what, sizeof what, "peak on GPU %d", dev);
			add_reason(out, what, d->peak_base[dev], d->peak_new[dev]);
		}
	}
	for (int c = 0; c < VT_CAT_COUNT; c++) {
		uint64_t b = d->base.cats_at_peak[c], n = d->new_.cats_at_peak[c];
		if (over_gate(b, n, o))
			add_reason(out, vt_category_name(c), b, n);
	}
}

/* ---- text ------------------------------------------------------------------ */

static void signed_bytes(int64_t delta, char *buf, size_t len)
{
	char b[32];
	vt_format_bytes(delta < 0 ? (uint64_t)-delta : (uint64_t)delta, b, sizeof b);
	snprintf(buf, len, "%s%s", delta < 0 ? "-" : delta > 0 ? "+" : " ", b);
}

static void text_row(FILE *out, const char *label, uint64_t b, uint64_t n)
{
	char bs[32], ns[32], ds[40];
	vt_format_bytes(b, bs, sizeof bs);
	vt_format_bytes(n, ns, sizeof ns);
	signed_bytes((int64_t)(n - b), ds, sizeof ds);
	fprintf(out, "  %-12s %10s -> %10s  %11s", label, bs, ns, ds);
	if (b && n != b)
		fprintf(out, " (%+.1f%%)", 100.0 * ((double)n - (double)b) / (double)b);
	fputc('\n', out);
}

static void text_flags(FILE *out, const char *label, const struct vt_diff_finding *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		char b[32], site[1024];
		vt_format_bytes(vt_finding_bytes_max(v[i].f), b, sizeof b);
		fprintf(out, "  %-5s %s at %s: %s\n", label, vt_finding_kind_name(v[i].f->kind),
		        vt_term_safe(v[i].site, site, sizeof site), b);
	}
}

static void write_text(const struct vt_diff *d, const char *base_dir, const char *new_dir,
                       FILE *out)
{
	fprintf(out, "vramtrace diff: %s -> %s\n", base_dir, new_dir);
	if (vt_diff_unchanged(d))
		fprintf(out, "No change: same peaks, categories, sites and flags.\n");
	fprintf(out, "\nPeak per device\n");
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++) {
		if (!d->dev_used[dev])
			continue;
		char label[16];
		snprintf(label, sizeof label, "GPU %d", dev);
		text_row(out, label, d->peak_base[dev], d->peak_new[dev]);
	}
	if (d->stream) {
		fprintf(
		    out,
		    "\n(--stream: peaks and sites; categories and flags need the full models)\n");
	} else {
		fprintf(out, "\nBytes by category at peak\n");
		for (int c = 0; c < VT_CAT_COUNT; c++)
			if (d->base.cats_at_peak[c] || d->new_.cats_at_peak[c])
				text_row(out, vt_category_name(c), d->base.cats_at_peak[c],
				         d->new_.cats_at_peak[c]);
	}
	if (!d->stream)
		fprintf(out, "\nFlags\n");
	text_flags(out, "new", d->findings_new, d->nfindings_new);
	text_flags(out, "gone", d->findings_gone, d->nfindings_gone);
	for (uint32_t i = 0; i < d->nfindings_moved; i++) {
		char now[1024], was[1024];
		fprintf(out, "  same  %s, now at %s (was %s)\n",
		        vt_finding_kind_name(d->findings_moved[i].f->kind),
		        vt_term_safe(d->findings_moved[i].site, now, sizeof now),
		        vt_term_safe(d->findings_moved[i].base_site, was, sizeof was));
	}
	if (!d->nfindings_new && !d->nfindings_gone && !d->stream)
		fprintf(out, "  no flag appeared or vanished\n");
	fprintf(out, "\nBiggest movers (bytes live at peak, by site)\n");
	uint32_t shown = 0;
	for (uint32_t i = 0; i < d->nsites && shown < DIFF_TOP; i++) {
		const struct vt_diff_site *s = &d->sites[i];
		if (s->base == s->new_)
			break; /* sorted by |delta|: the rest did not move */
		char bs[32], ns[32], ds[40], name[1024], base_name[1024];
		vt_format_bytes(s->base, bs, sizeof bs);
		vt_format_bytes(s->new_, ns, sizeof ns);
		signed_bytes((int64_t)(s->new_ - s->base), ds, sizeof ds);
		fprintf(out, "  %11s  %10s -> %10s  %-11s  %s%s%s%s\n", ds, bs, ns,
		        d->stream ? "-" : vt_category_name(s->category),
		        vt_term_safe(s->name, name, sizeof name), s->base_name[0] ? " (was " : "",
		        vt_term_safe(s->base_name, base_name, sizeof base_name),
		        s->base_name[0] ? ")" : "");
		shown++;
	}
	if (!shown)
		fprintf(out, "  no site moved\n");
}

static void text_fail_over(const struct diff_options *o, const struct reasons *why, FILE *out)
{
	if (o->have_fail_over) {
		char floor[32];
		vt_format_bytes(o->min_bytes, floor, sizeof floor);
		fprintf(out, "\n--fail-over %g%% (growth of %s or more): %s\n", o->fail_over, floor,
		        why->n ? "EXCEEDED" : "within");
		for (int i = 0; i < why->n; i++)
			fprintf(out, "  %s\n", why->text[i]);
	}
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_triple(struct vt_json *j, const char *key, uint64_t b, uint64_t n)
{
	vt_json_key(j, key);
	vt_json_begin_object(j);
	vt_json_kv_u64(j, "base", b);
	vt_json_kv_u64(j, "new", n);
	vt_json_kv_i64(j, "delta", (int64_t)(n - b));
	vt_json_end_object(j);
}

static void json_flags(struct vt_json *j, const char *key, const struct vt_diff_finding *v,
                       uint32_t n)
{
	vt_json_key(j, key);
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_finding *f = v[i].f;
		vt_json_begin_object(j);
		vt_json_kv_string(j, "kind", vt_finding_kind_name(f->kind));
		vt_json_kv_string(j, "site", v[i].site);
		vt_json_key(j, "devices");
		vt_json_begin_array(j);
		for (uint32_t k = 0; k < f->ndev; k++)
			vt_json_u64(j, f->devices[k]);
		vt_json_end_array(j);
		vt_json_key(j, "bytes");
		vt_json_begin_array(j);
		for (uint32_t k = 0; k < f->ndev; k++)
			vt_json_u64(j, f->bytes[k]);
		vt_json_end_array(j);
		vt_json_kv_string(j, "advice", f->advice);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static void json_sites(struct vt_json *j, const struct vt_diff *d)
{
	vt_json_key(j, "sites");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < d->nsites; i++) {
		const struct vt_diff_site *s = &d->sites[i];
		vt_json_begin_object(j);
		vt_json_kv_string(j, "site", s->name);
		if (s->base_name[0])
			vt_json_kv_string(j, "base_site", s->base_name);
		if (!d->stream)
			vt_json_kv_string(j, "category", vt_category_name(s->category));
		vt_json_kv_u64(j, "base", s->base);
		vt_json_kv_u64(j, "new", s->new_);
		vt_json_kv_i64(j, "delta", (int64_t)(s->new_ - s->base));
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

/* One pair of traces compared, into an object j has open. */
static void json_diff_fields(struct vt_json *j, const struct vt_diff *d, const char *base_dir,
                             const char *new_dir)
{
	vt_json_kv_string(j, "base", base_dir);
	vt_json_kv_string(j, "new", new_dir);
	vt_json_kv_string(j, "mode", d->stream ? "stream" : "full");
	vt_json_kv_bool(j, "changed", !vt_diff_unchanged(d));
	vt_json_key(j, "peak");
	vt_json_begin_object(j);
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++) {
		if (!d->dev_used[dev])
			continue;
		char key[8];
		snprintf(key, sizeof key, "%d", dev);
		json_triple(j, key, d->peak_base[dev], d->peak_new[dev]);
	}
	vt_json_end_object(j);
	vt_json_key(j, "categories");
	if (d->stream) {
		vt_json_null(j);
	} else {
		vt_json_begin_object(j);
		for (int c = 0; c < VT_CAT_COUNT; c++)
			json_triple(j, vt_category_name(c), d->base.cats_at_peak[c],
			            d->new_.cats_at_peak[c]);
		vt_json_end_object(j);
	}
	json_flags(j, "flags_new", d->findings_new, d->nfindings_new);
	json_flags(j, "flags_gone", d->findings_gone, d->nfindings_gone);
	vt_json_key(j, "flags_moved");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < d->nfindings_moved; i++) {
		vt_json_begin_object(j);
		vt_json_kv_string(j, "kind", vt_finding_kind_name(d->findings_moved[i].f->kind));
		vt_json_kv_string(j, "site", d->findings_moved[i].site);
		vt_json_kv_string(j, "base_site", d->findings_moved[i].base_site);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
	json_sites(j, d);
}

static void json_fail_over(struct vt_json *j, const struct diff_options *o,
                           const struct reasons *why)
{
	vt_json_key(j, "fail_over");
	if (o->have_fail_over) {
		vt_json_begin_object(j);
		vt_json_kv_double(j, "percent", o->fail_over);
		vt_json_kv_u64(j, "min_bytes", o->min_bytes);
		vt_json_kv_bool(j, "exceeded", why->n > 0);
		vt_json_key(j, "reasons");
		vt_json_begin_array(j);
		for (int i = 0; i < why->n; i++)
			vt_json_string(j, why->text[i]);
		vt_json_end_array(j);
		vt_json_end_object(j);
	} else {
		vt_json_null(j);
	}
}

/* ---- command ---------------------------------------------------------------- */

static int parse_percent(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v) || v < 0)
		return -1;
	*out = v;
	return 0;
}

static int diff_option(void *ctx, const struct vt_cli_option *opt, const char *v)
{
	struct diff_options *o = ctx;
	if (!strcmp(opt->name, "--json")) {
		o->json = 1;
	} else if (!strcmp(opt->name, "--stream")) {
		o->stream = 1;
	} else if (!strcmp(opt->name, "--fail-over")) {
		if (parse_percent(v, &o->fail_over))
			return vt_cli_usage_error(
			    "diff", "--fail-over wants a percentage >= 0, not '%s'", v);
		o->have_fail_over = 1;
	} else if (vt_parse_size(v, &o->min_bytes)) {
		return vt_cli_usage_error("diff", "--min-bytes wants a size like 1M or 0, not '%s'",
		                          v);
	}
	return 0;
}

static int diff_operand(void *ctx, const char *arg)
{
	struct diff_options *o = ctx;
	if (o->base_dir && o->new_dir)
		return vt_cli_usage_error("diff", "two runs, not a third ('%s')", arg);
	struct vt_cli_traces *side = o->base_dir ? &o->new_ : &o->base;
	*(o->base_dir ? &o->new_dir : &o->base_dir) = arg;
	return vt_cmd_add_traces("diff", side, arg, o->names, &o->nnames);
}

static int parse_args(int argc, char **argv, struct diff_options *o)
{
	memset(o, 0, sizeof *o);
	o->min_bytes = 1 << 20;
	const struct vt_cli_parser parser = {&diff_help, diff_option, diff_operand, 0};
	int next, rc = vt_cli_parse(&parser, argc, argv, o, &next);
	if (rc)
		return rc;
	if (!o->new_dir)
		return vt_cli_usage_error("diff",
		                          "two trace directories, please (BASE_DIR NEW_DIR)");
	if (o->base.n != o->new_.n)
		return vt_cli_usage_error(
		    "diff",
		    "%s holds %u traces and %s %u: a job's runs compare trace to trace, in "
		    "name order",
		    o->base_dir, o->base.n, o->new_dir, o->new_.n);
	if (o->stream && o->base.n > 1)
		return vt_cli_usage_error("diff",
		                          "--stream reads one trace a side, not a job folder");
	return 0;
}

/* ---- a job's runs ------------------------------------------------------------ */

/* Every pair of traces (BASE's i-th, NEW's i-th), loaded and compared. */
struct diff_run {
	unsigned n;
	struct vt_model **models; /* base then new of each pair: 2n */
	struct vt_diff *pairs;
	unsigned built; /* pairs whose vt_diff is built */
	int ranked;     /* compared rank to rank too */
	struct vt_job job_base, job_new;
	struct vt_rank_diff ranks;
};

static void diff_run_free(struct diff_run *r)
{
	if (r->ranked) {
		vt_rank_diff_free(&r->ranks);
		vt_job_free(&r->job_base);
		vt_job_free(&r->job_new);
	}
	for (unsigned i = 0; i < r->built; i++)
		vt_diff_free(&r->pairs[i]);
	for (unsigned i = 0; r->models && i < 2 * r->n; i++)
		if (r->models[i])
			vt_model_free(r->models[i]);
	free(r->models);
	free(r->pairs);
}

/* Load and compare pair i: 0, or 2 after a line on stderr. */
static int diff_pair(struct diff_run *r, unsigned i, const struct diff_options *o)
{
	struct vt_model **m = &r->models[2 * i];
	m[0] = vt_cmd_load("diff", o->base.dir[i], o->stream);
	m[1] = m[0] ? vt_cmd_load("diff", o->new_.dir[i], o->stream) : NULL;
	if (!m[1])
		return 2;
	char err[1024];
	int failed = vt_diff_build(&r->pairs[i], m[0], m[1], err, sizeof err) < 0;
	r->built++; /* freed either way, as a failed build may hold parts */
	if (failed)
		fprintf(stderr, "vramtrace diff: %s\n", err);
	return failed ? 2 : 0;
}

/* Both sides as jobs, compared rank to rank: when a side is several
 * traces, or one whose processes carry ranks. 0, or 2 out of memory. */
static int diff_ranks(struct diff_run *r)
{
	const struct vt_report *base[VT_CLI_MAX_TRACES], *new_[VT_CLI_MAX_TRACES];
	for (unsigned i = 0; i < r->n; i++) {
		base[i] = &r->pairs[i].base;
		new_[i] = &r->pairs[i].new_;
	}
	if (r->pairs[0].stream || !(vt_job_wanted(base, r->n) || vt_job_wanted(new_, r->n)))
		return 0;
	if (vt_job_build(&r->job_base, base, r->n) || vt_job_build(&r->job_new, new_, r->n))
		return 2;
	r->ranked = 1;
	return vt_rank_diff_build(&r->ranks, &r->job_base, &r->job_new) ? 2 : 0;
}

static int diff_run_build(struct diff_run *r, const struct diff_options *o)
{
	memset(r, 0, sizeof *r);
	r->n = o->base.n;
	r->models = calloc(2 * r->n, sizeof *r->models);
	r->pairs = calloc(r->n, sizeof *r->pairs);
	if (!r->models || !r->pairs)
		return 2;
	for (unsigned i = 0; i < r->n; i++)
		if (diff_pair(r, i, o))
			return 2;
	return diff_ranks(r);
}

/* --fail-over over every pair and every rank's own peak. */
static void diff_run_fail_over(const struct diff_run *r, const struct diff_options *o,
                               struct reasons *why)
{
	memset(why, 0, sizeof *why);
	for (unsigned i = 0; i < r->n; i++) {
		struct reasons one;
		check_fail_over(&r->pairs[i], o, &one);
		for (int k = 0; k < one.n && why->n < 16; k++)
			memcpy(why->text[why->n++], one.text[k], sizeof one.text[k]);
	}
	for (uint32_t i = 0; r->ranked && i < r->ranks.n; i++) {
		const struct vt_rank_change *c = &r->ranks.v[i];
		uint64_t b = c->base ? c->base->peak_bytes : 0,
		         n = c->new_ ? c->new_->peak_bytes : 0;
		if (!over_gate(b, n, o))
			continue;
		char label[96], what[128];
		vt_rank_change_label(c, label, sizeof label);
		snprintf(what, sizeof what, "peak of %s", label);
		add_reason(why, what, b, n);
	}
}

static int diff_run_changed(const struct diff_run *r)
{
	for (unsigned i = 0; i < r->n; i++)
		if (!vt_diff_unchanged(&r->pairs[i]))
			return 1;
	return r->ranked && r->ranks.most >= 0;
}

static void diff_run_text(const struct diff_run *r, const struct diff_options *o,
                          const struct reasons *why, FILE *out)
{
	if (r->ranked) {
		fprintf(out, "vramtrace diff: %s -> %s, rank to rank\n\n", o->base_dir, o->new_dir);
		vt_rank_diff_write_text(&r->ranks, out);
	}
	for (unsigned i = 0; i < r->n; i++) {
		if (r->n > 1 && vt_diff_unchanged(&r->pairs[i])) {
			fprintf(out, "vramtrace diff: %s -> %s: no change\n", o->base.dir[i],
			        o->new_.dir[i]);
			continue;
		}
		write_text(&r->pairs[i], o->base.dir[i], o->new_.dir[i], out);
		if (i + 1 < r->n)
			fputc('\n', out);
	}
	text_fail_over(o, why, out);
}

/* One pair: the object it always was. A job: its runs, the ranks and an
 * object per pair of traces under "traces". */
static int diff_run_json(const struct diff_run *r, const struct diff_options *o,
                         const struct reasons *why, FILE *out)
{
	struct vt_json j;
	vt_json_init(&j, out, 1);
	vt_json_begin_object(&j);
	if (r->n == 1 && !r->ranked) {
		json_diff_fields(&j, &r->pairs[0], o->base_dir, o->new_dir);
	} else {
		vt_json_kv_string(&j, "base", o->base_dir);
		vt_json_kv_string(&j, "new", o->new_dir);
		vt_json_kv_bool(&j, "changed", diff_run_changed(r));
		if (r->ranked)
			vt_rank_diff_json_fields(&r->ranks, &j);
		vt_json_key(&j, "traces");
		vt_json_begin_array(&j);
		for (unsigned i = 0; i < r->n; i++) {
			vt_json_begin_object(&j);
			json_diff_fields(&j, &r->pairs[i], o->base.dir[i], o->new_.dir[i]);
			vt_json_end_object(&j);
		}
		vt_json_end_array(&j);
	}
	json_fail_over(&j, o, why);
	vt_json_end_object(&j);
	return vt_json_finish(&j);
}

static int diff_runs(const struct diff_options *o)
{
	struct diff_run r;
	int rc = diff_run_build(&r, o);
	if (!rc) {
		struct reasons why = {0};
		if (o->have_fail_over)
			diff_run_fail_over(&r, o, &why);
		int werr = o->json ? diff_run_json(&r, o, &why, stdout)
		                   : (diff_run_text(&r, o, &why, stdout), 0);
		rc = werr ? 2 : why.n ? 1 : 0;
	}
	diff_run_free(&r);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "vramtrace diff: cannot write the output\n");
		rc = 2;
	}
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_options o;
	int rc = parse_args(argc, argv, &o);
	if (!rc)
		rc = diff_runs(&o);
	else if (rc == VT_CLI_HELP_SHOWN)
		rc = 0;
	vt_cmd_free_names(o.names, o.nnames);
	return rc;
}
