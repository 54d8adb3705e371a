/* `vramtrace diff BASE_DIR NEW_DIR [--json] [--fail-over PERCENT] [--min-bytes SIZE] [--stream]`:
 * what changed between two runs (computed in diff.c); --stream reads both
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
    "diff", "BASE_DIR NEW_DIR",
    "Compare two runs by name, never by address: peaks, categories, sites, findings.",
    diff_options_table,
    "exit: 0; 1 when --fail-over is exceeded; 2 for a usage error or a trace that cannot\n"
    "be read (so that 1 always means \"grew\").\n"};
#define DIFF_TOP 10

struct diff_options {
	const char *base_dir, *new_dir;
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

static void write_text(const struct vt_diff *d, const struct diff_options *o,
                       const struct reasons *why, FILE *out)
{
	fprintf(out, "vramtrace diff: %s -> %s\n", o->base_dir, o->new_dir);
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

static int write_json(const struct vt_diff *d, const struct diff_options *o,
                      const struct reasons *why, FILE *out)
{
	struct vt_json j;
	vt_json_init(&j, out, 1);
	vt_json_begin_object(&j);
	vt_json_kv_string(&j, "base", o->base_dir);
	vt_json_kv_string(&j, "new", o->new_dir);
	vt_json_kv_string(&j, "mode", d->stream ? "stream" : "full");
	vt_json_kv_bool(&j, "changed", !vt_diff_unchanged(d));
	vt_json_key(&j, "peak");
	vt_json_begin_object(&j);
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++) {
		if (!d->dev_used[dev])
			continue;
		char key[8];
		snprintf(key, sizeof key, "%d", dev);
		json_triple(&j, key, d->peak_base[dev], d->peak_new[dev]);
	}
	vt_json_end_object(&j);
	vt_json_key(&j, "categories");
	if (d->stream) {
		vt_json_null(&j);
	} else {
		vt_json_begin_object(&j);
		for (int c = 0; c < VT_CAT_COUNT; c++)
			json_triple(&j, vt_category_name(c), d->base.cats_at_peak[c],
			            d->new_.cats_at_peak[c]);
		vt_json_end_object(&j);
	}
	json_flags(&j, "flags_new", d->findings_new, d->nfindings_new);
	json_flags(&j, "flags_gone", d->findings_gone, d->nfindings_gone);
	vt_json_key(&j, "flags_moved");
	vt_json_begin_array(&j);
	for (uint32_t i = 0; i < d->nfindings_moved; i++) {
		vt_json_begin_object(&j);
		vt_json_kv_string(&j, "kind", vt_finding_kind_name(d->findings_moved[i].f->kind));
		vt_json_kv_string(&j, "site", d->findings_moved[i].site);
		vt_json_kv_string(&j, "base_site", d->findings_moved[i].base_site);
		vt_json_end_object(&j);
	}
	vt_json_end_array(&j);
	json_sites(&j, d);
	vt_json_key(&j, "fail_over");
	if (o->have_fail_over) {
		vt_json_begin_object(&j);
		vt_json_kv_double(&j, "percent", o->fail_over);
		vt_json_kv_u64(&j, "min_bytes", o->min_bytes);
		vt_json_kv_bool(&j, "exceeded", why->n > 0);
		vt_json_key(&j, "reasons");
		vt_json_begin_array(&j);
		for (int i = 0; i < why->n; i++)
			vt_json_string(&j, why->text[i]);
		vt_json_end_array(&j);
		vt_json_end_object(&j);
	} else {
		vt_json_null(&j);
	}
	vt_json_end_object(&j);
	return vt_json_finish(&j);
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
		return vt_cli_usage_error("diff", "two trace directories, not a third ('%s')", arg);
	*(o->base_dir ? &o->new_dir : &o->base_dir) = arg;
	return 0;
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
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_options o;
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc == VT_CLI_HELP_SHOWN ? 0 : rc;
	struct vt_model *base = vt_cmd_load("diff", o.base_dir, o.stream);
	struct vt_model *new_ = base ? vt_cmd_load("diff", o.new_dir, o.stream) : NULL;
	if (!base || !new_) {
		if (base)
			vt_model_free(base);
		return 2;
	}
	struct vt_diff d;
	char err[1024];
	rc = 0;
	if (vt_diff_build(&d, base, new_, err, sizeof err) < 0) {
		fprintf(stderr, "vramtrace diff: %s\n", err);
		rc = 2;
	} else {
		struct reasons why = {0};
		if (o.have_fail_over)
			check_fail_over(&d, &o, &why);
		int werr = o.json ? write_json(&d, &o, &why, stdout)
		                  : (write_text(&d, &o, &why, stdout), 0);
		rc = werr ? 2 : why.n ? 1 : 0;
	}
	vt_diff_free(&d);
	vt_model_free(base);
	vt_model_free(new_);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "vramtrace diff: cannot write the output\n");
		rc = 2;
	}
	return rc;
}
