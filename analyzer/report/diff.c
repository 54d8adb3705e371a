/* Comparing two reports (see diff.h). Names are matched with a sort-merge
 * over keys, so duplicates pair one to one and big traces stay
 * O(n log n): first the whole name, then, for what is left on both sides,
 * the name without its line number when that key is unique on each side. */
#include "diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "site_names.h"
#include "report_stream.h"
#include "nomem.h"
#include "model_query.h"

/* ---- matching names ------------------------------------------------------- */

/* An unsymbolized site "0x55d0c0de1234 (module+0x1234)": the address moves
 * with every run (ASLR), the module offset does not. Returns the part to
 * compare. */
static const char *without_address(const char *name, size_t *len)
{
	*len = strlen(name);
	if (strncmp(name, "0x", 2))
		return name;
	size_t i = 2;
	while ((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))
		i++;
	if (i == 2 || strncmp(name + i, " (", 2) || name[*len - 1] != ')')
		return name;
	*len -= i + 3;
	return name + i + 2;
}

static void whole_name(const char *name, char *out, size_t len)
{
	size_t n;
	const char *p = without_address(name, &n);
	snprintf(out, len, "%.*s", (int)n, p);
}

/* "function (file:123)" -> "function (file)"; other names unchanged. */
static void strip_line(const char *name, char *out, size_t len)
{
	whole_name(name, out, len);
	size_t n = strlen(out);
	if (n < 3 || out[n - 1] != ')')
		return;
	size_t i = n - 1;
	while (i > 0 && out[i - 1] >= '0' && out[i - 1] <= '9')
		i--;
	if (i > 0 && i < n - 1 && out[i - 1] == ':') {
		out[i - 1] = ')';
		out[i] = '\0';
	}
}

struct keyed {
	char key[300];
	uint32_t idx;
};

static int keyed_cmp(const void *x, const void *y)
{
	const struct keyed *a = x, *b = y;
	int c = strcmp(a->key, b->key);
	return c ? c : (a->idx > b->idx) - (a->idx < b->idx);
}

/* "kind site" -> "kind" (flags: the same finding named from another site). */
static void first_word(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%.*s", (int)strcspn(name, " "), name);
}

typedef void (*key_fn)(const char *name, char *out, size_t len);

/* The still unmatched names of one side, keyed and sorted. */
static struct keyed *keys_of(char *const *names, uint32_t n, const int32_t *paired, key_fn key,
                             uint32_t *out_n)
{
	struct keyed *k = vt_xcalloc(n, sizeof *k);
	uint32_t m = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (paired[i] >= 0)
			continue;
		key(names[i], k[m].key, sizeof k[m].key);
		k[m++].idx = i;
	}
	qsort(k, m, sizeof *k, keyed_cmp);
	*out_n = m;
	return k;
}

static uint32_t run_length(const struct keyed *k, uint32_t n, uint32_t at)
{
	uint32_t e = at;
	while (e < n && !strcmp(k[e].key, k[at].key))
		e++;
	return e - at;
}

/* One pass: pair equal keys; a loose key (unique) only when it is unique on
 * both sides. */
static void match_pass(char *const *a, uint32_t na, char *const *b, uint32_t nb, int32_t *a2b,
                       int32_t *b2a, key_fn key, int unique)
{
	uint32_t ka_n, kb_n;
	struct keyed *ka = keys_of(a, na, a2b, key, &ka_n);
	struct keyed *kb = keys_of(b, nb, b2a, key, &kb_n);
	uint32_t i = 0, j = 0;
	while (i < ka_n && j < kb_n) {
		int c = strcmp(ka[i].key, kb[j].key);
		if (c) {
			c < 0 ? i++ : j++;
			continue;
		}
		uint32_t ra = run_length(ka, ka_n, i), rb = run_length(kb, kb_n, j);
		uint32_t pairs = unique ? (ra == 1 && rb == 1) : (ra < rb ? ra : rb);
		for (uint32_t p = 0; p < pairs; p++) {
			a2b[ka[i + p].idx] = (int32_t)kb[j + p].idx;
			b2a[kb[j + p].idx] = (int32_t)ka[i + p].idx;
		}
		i += ra;
		j += rb;
	}
	free(ka);
	free(kb);
}

void vt_diff_match_names(char *const *a, uint32_t na, char *const *b, uint32_t nb, int32_t *a2b,
                         int32_t *b2a)
{
	for (uint32_t i = 0; i < na; i++)
		a2b[i] = -1;
	for (uint32_t i = 0; i < nb; i++)
		b2a[i] = -1;
	match_pass(a, na, b, nb, a2b, b2a, whole_name, 0);
	match_pass(a, na, b, nb, a2b, b2a, strip_line, 1);
}

/* ---- sites ------------------------------------------------------------------- */

static char **site_names(const struct vt_report *r)
{
	char **v = vt_xcalloc(r->nsites, sizeof *v);
	for (uint32_t i = 0; i < r->nsites; i++)
		v[i] = (char *)r->sites[i].name;
	return v;
}

static uint64_t abs_delta(const struct vt_diff_site *s)
{
	return s->new_ > s->base ? s->new_ - s->base : s->base - s->new_;
}

static int diff_site_cmp(const void *x, const void *y)
{
	const struct vt_diff_site *a = x, *b = y;
	if (abs_delta(a) != abs_delta(b))
		return abs_delta(a) > abs_delta(b) ? -1 : 1;
	if (a->new_ != b->new_)
		return a->new_ > b->new_ ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void add_site(struct vt_diff *d, const struct vt_site_stat *b, const struct vt_site_stat *n)
{
	if ((!b || !b->bytes_at_peak) && (!n || !n->bytes_at_peak))
		return; /* nothing live at either peak */
	struct vt_diff_site *s = &d->sites[d->nsites++];
	memset(s, 0, sizeof *s);
	const struct vt_site_stat *named = n ? n : b;
	snprintf(s->name, sizeof s->name, "%s", named->name);
	if (b && n && strcmp(b->name, n->name))
		snprintf(s->base_name, sizeof s->base_name, "%s", b->name);
	s->base = b ? b->bytes_at_peak : 0;
	s->new_ = n ? n->bytes_at_peak : 0;
	s->category = named->category;
}

static void diff_sites(struct vt_diff *d)
{
	const struct vt_report *rb = &d->base, *rn = &d->new_;
	char **nb = site_names(rb), **nn = site_names(rn);
	int32_t *b2n = vt_xcalloc(rb->nsites, sizeof *b2n),
	        *n2b = vt_xcalloc(rn->nsites, sizeof *n2b);
	vt_diff_match_names(nb, rb->nsites, nn, rn->nsites, b2n, n2b);
	d->sites = vt_xcalloc(rb->nsites + rn->nsites, sizeof *d->sites);
	for (uint32_t i = 0; i < rb->nsites; i++)
		add_site(d, &rb->sites[i], b2n[i] >= 0 ? &rn->sites[b2n[i]] : NULL);
	for (uint32_t i = 0; i < rn->nsites; i++)
		if (n2b[i] < 0)
			add_site(d, NULL, &rn->sites[i]);
	if (d->nsites)
		qsort(d->sites, d->nsites, sizeof *d->sites, diff_site_cmp);
	free(nb);
	free(nn);
	free(b2n);
	free(n2b);
}

/* ---- flags --------------------------------------------------------------------- */

/* "kind site" for every flag of a report (site without its run's address). */
static char **flag_keys(const struct vt_report *r)
{
	char **v = vt_xcalloc(r->findings.n, sizeof *v);
	for (uint32_t i = 0; i < r->findings.n; i++) {
		const struct vt_finding *f = &r->findings.v[i];
		char site[256], key[256];
		vt_name_site(r->m, f->proc, f->stack_id, site, sizeof site);
		whole_name(site, key, sizeof key);
		v[i] = vt_xcalloc(1, 300);
		snprintf(v[i], 300, "%s %s", vt_finding_kind_name(f->kind), key);
	}
	return v;
}

static void fill_flag(struct vt_diff_finding *out, const struct vt_report *r, uint32_t i)
{
	out->f = &r->findings.v[i];
	out->r = r;
	vt_name_site(r->m, out->f->proc, out->f->stack_id, out->site, sizeof out->site);
}

static void diff_flags(struct vt_diff *d)
{
	const struct vt_report *rb = &d->base, *rn = &d->new_;
	char **kb = flag_keys(rb), **kn = flag_keys(rn);
	int32_t *b2n = vt_xcalloc(rb->findings.n, sizeof *b2n),
	        *n2b = vt_xcalloc(rn->findings.n, sizeof *n2b);
	vt_diff_match_names(kb, rb->findings.n, kn, rn->findings.n, b2n, n2b);
	/* the only flag of its kind on both sides, named from another site
	 * (site naming depends on each trace's population of stacks): moved */
	int32_t *before = vt_xcalloc(rb->findings.n, sizeof *before);
	memcpy(before, b2n, rb->findings.n * sizeof *before);
	match_pass(kb, rb->findings.n, kn, rn->findings.n, b2n, n2b, first_word, 1);
	d->findings_gone = vt_xcalloc(rb->findings.n, sizeof *d->findings_gone);
	d->findings_new = vt_xcalloc(rn->findings.n, sizeof *d->findings_new);
	d->findings_moved = vt_xcalloc(rb->findings.n, sizeof *d->findings_moved);
	for (uint32_t i = 0; i < rb->findings.n; i++) {
		if (b2n[i] < 0) {
			fill_flag(&d->findings_gone[d->nfindings_gone++], rb, i);
		} else if (before[i] < 0) {
			struct vt_diff_finding *mv = &d->findings_moved[d->nfindings_moved++];
			fill_flag(mv, rn, (uint32_t)b2n[i]);
			vt_name_site(rb->m, rb->findings.v[i].proc, rb->findings.v[i].stack_id, mv->base_site,
			               sizeof mv->base_site);
		}
	}
	free(before);
	for (uint32_t i = 0; i < rn->findings.n; i++)
		if (n2b[i] < 0)
			fill_flag(&d->findings_new[d->nfindings_new++], rn, i);
	for (uint32_t i = 0; i < rb->findings.n; i++)
		free(kb[i]);
	for (uint32_t i = 0; i < rn->findings.n; i++)
		free(kn[i]);
	free(kb);
	free(kn);
	free(b2n);
	free(n2b);
}

/* ---- public ---------------------------------------------------------------------- */

int vt_diff_build(struct vt_diff *d, struct vt_model *base, struct vt_model *new_, char *err,
                  size_t errlen)
{
	memset(d, 0, sizeof *d);
	struct vt_report_options opt = {.top = 10};
	if (!base->stream != !new_->stream) {
		snprintf(err, errlen, "a streaming and a full model do not compare");
		return -1;
	}
	if (base->stream) { /* peaks and sites: no categories, no flags */
		d->stream = 1;
		vt_report_build_stream(&d->base, base);
		vt_report_build_stream(&d->new_, new_);
	} else if (vt_report_build(&d->base, base, &opt, err, errlen) < 0 ||
	           vt_report_build(&d->new_, new_, &opt, err, errlen) < 0) {
		return -1;
	}
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++) {
		d->dev_used[dev] = vt_model_device_used(base, dev) || vt_model_device_used(new_, dev);
		d->peak_base[dev] = base->devices[dev].peak_bytes;
		d->peak_new[dev] = new_->devices[dev].peak_bytes;
	}
	diff_sites(d);
	diff_flags(d);
	return 0;
}

void vt_diff_free(struct vt_diff *d)
{
	if (d->base.m)
		vt_report_free(&d->base);
	if (d->new_.m)
		vt_report_free(&d->new_);
	free(d->sites);
	free(d->findings_new);
	free(d->findings_gone);
	free(d->findings_moved);
	memset(d, 0, sizeof *d);
}

int vt_diff_unchanged(const struct vt_diff *d)
{
	if (d->nfindings_new || d->nfindings_gone || d->nfindings_moved)
		return 0;
	for (int dev = 0; dev < VT_MAX_DEVICES; dev++)
		if (d->peak_base[dev] != d->peak_new[dev])
			return 0;
	for (int c = 0; c < VT_CAT_COUNT; c++)
		if (d->base.cats_at_peak[c] != d->new_.cats_at_peak[c])
			return 0;
	for (uint32_t i = 0; i < d->nsites; i++)
		if (d->sites[i].base != d->sites[i].new_)
			return 0;
	return 1;
}

int vt_diff_grew_over(uint64_t b, uint64_t n, double percent)
{
	if (n <= b)
		return 0;
	if (b == 0)
		return 1;
	return (double)(n - b) * 100.0 > percent * (double)b;
}
