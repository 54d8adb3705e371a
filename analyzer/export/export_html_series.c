/* Downsampling the bytes-in-use timeline for the HTML chart (see
 * export_html.h). Two sweeps over the sorted steps: the first picks, per
 * device and time bucket, the step with the most bytes and the last one
 * (and the step of the device's peak); the second replays again and keeps
 * the exact state at each picked step, with the sites holding most bytes. */
#include "export_html_series.h"
#include "json_out.h"
#include "nomem.h"
#include "model_query.h"

#include <stdlib.h>
#include <string.h>

enum { PICK_KEEP = 1, PICK_PEAK = 2 };

struct bucket_scan {
	uint64_t bucket, max_bytes, live;
	uint32_t max_step, last_step;
	int open;
};

static void bucket_flush(struct bucket_scan *b, uint8_t *pick)
{
	if (!b->open)
		return;
	pick[b->max_step] |= PICK_KEEP;
	pick[b->last_step] |= PICK_KEEP;
	b->open = 0;
}

/* Pass 1: mark the steps to keep. di maps a device to its series. */
static void pick_steps(const struct vt_export *x, const struct vt_step *steps, uint32_t n,
                       const int *di, int ndev, uint32_t buckets, uint64_t t_end, uint8_t *pick)
{
	struct bucket_scan *scan = calloc((size_t)ndev, sizeof *scan);
	if (!scan)
		vt_nomem();
	struct vt_moment peak[VT_MAX_DEVICES];
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		peak[d] = vt_moment_peak(x->m, d);
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &x->m->allocs[steps[i].alloc];
		if (di[a->device] < 0)
			continue;
		struct bucket_scan *b = &scan[di[a->device]];
		b->live += steps[i].sign > 0 ? a->bytes : (uint64_t)-a->bytes;
		uint64_t bucket =
		    (uint64_t)((unsigned __int128)steps[i].when.t_ns * buckets / t_end);
		if (b->open && bucket != b->bucket)
			bucket_flush(b, pick);
		if (!b->open || b->live > b->max_bytes) {
			b->max_bytes = b->live;
			b->max_step = i;
		}
		if (!b->open) {
			b->open = 1;
			b->bucket = bucket;
		}
		b->last_step = i;
		if (steps[i].sign > 0 && !vt_moment_cmp(&steps[i].when, &peak[a->device]))
			pick[i] |= PICK_PEAK;
	}
	for (int k = 0; k < ndev; k++)
		bucket_flush(&scan[k], pick);
	free(scan);
}

static void top_sites(const uint64_t *site_bytes, uint32_t nsites, struct vt_html_point *p)
{
	for (int k = 0; k < VT_HTML_TOP_SITES; k++) {
		p->top_site[k] = VT_NO_INDEX;
		p->top_bytes[k] = 0;
	}
	for (uint32_t s = 0; s < nsites; s++) {
		uint64_t b = site_bytes[s];
		if (!b || b <= p->top_bytes[VT_HTML_TOP_SITES - 1])
			continue;
		int k = VT_HTML_TOP_SITES - 1;
		for (; k > 0 && b > p->top_bytes[k - 1]; k--) {
			p->top_bytes[k] = p->top_bytes[k - 1];
			p->top_site[k] = p->top_site[k - 1];
		}
		p->top_bytes[k] = b;
		p->top_site[k] = s;
	}
}

static struct vt_html_point *append_point(struct vt_html_series *s)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		struct vt_html_point *p = realloc(s->p, s->cap * sizeof *p);
		if (!p)
			vt_nomem();
		s->p = p;
	}
	return &s->p[s->n++];
}

/* Pass 2: replay, keep the state at each picked step. */
static void keep_points(const struct vt_export *x, const struct vt_step *steps, uint32_t n,
                        const int *di, struct vt_html_series *series, int ndev, const uint8_t *pick)
{
	uint32_t nsites = x->r.nsites;
	uint64_t(*cats)[VT_CAT_COUNT] = calloc((size_t)ndev, sizeof *cats);
	uint64_t *site_bytes = calloc((size_t)ndev * (nsites ? nsites : 1), sizeof *site_bytes);
	if (!cats || !site_bytes)
		vt_nomem();
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &x->m->allocs[steps[i].alloc];
		int k = di[a->device];
		if (k < 0)
			continue;
		int c = a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN;
		uint64_t delta = steps[i].sign > 0 ? a->bytes : (uint64_t)-a->bytes;
		cats[k][c] += delta;
		series[k].used[c] = 1;
		uint32_t s = x->alloc_site[steps[i].alloc];
		if (s != VT_NO_INDEX)
			site_bytes[(size_t)k * nsites + s] += delta;
		if (!pick[i])
			continue;
		if (pick[i] & PICK_PEAK)
			series[k].peak_i = series[k].n;
		struct vt_html_point *p = append_point(&series[k]);
		p->t_ns = steps[i].when.t_ns;
		memcpy(p->cats, cats[k], sizeof p->cats);
		top_sites(site_bytes + (size_t)k * nsites, nsites, p);
	}
	free(cats);
	free(site_bytes);
}

int vt_html_series_build(const struct vt_export *x, uint32_t buckets, struct vt_html_series **out)
{
	int devs[VT_MAX_DEVICES], ndev = vt_export_devices(x, devs), di[VT_MAX_DEVICES];
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		di[d] = -1;
	struct vt_html_series *series = calloc((size_t)(ndev ? ndev : 1), sizeof *series);
	if (!series)
		return -1;
	for (int k = 0; k < ndev; k++) {
		di[devs[k]] = k;
		series[k].device = devs[k];
		series[k].peak_i = VT_NO_INDEX;
	}
	uint32_t n;
	struct vt_step *steps = vt_export_timeline(x, &n);
	uint8_t *pick = calloc(n ? n : 1, 1);
	if (!steps || !pick) {
		free(steps);
		free(pick);
		free(series);
		return -1;
	}
	uint64_t t_end = x->m->end_t_ns;
	if (n && steps[n - 1].when.t_ns > t_end)
		t_end = steps[n - 1].when.t_ns;
	t_end += 1;
	pick_steps(x, steps, n, di, ndev, buckets ? buckets : 1, t_end, pick);
	keep_points(x, steps, n, di, series, ndev, pick);
	free(pick);
	free(steps);
	*out = series;
	return ndev;
}

void vt_html_series_free(struct vt_html_series *s, int n)
{
	for (int k = 0; k < n; k++)
		free(s[k].p);
	free(s);
}

void vt_html_points_json(struct vt_json *j, const struct vt_html_point *p, uint32_t n)
{
	vt_json_key(j, "t");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < n; i++)
		vt_json_u64(j, p[i].t_ns);
	vt_json_end_array(j);
	vt_json_key(j, "v"); /* VT_CAT_COUNT values a point, flat */
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < n; i++)
		for (int c = 0; c < VT_CAT_COUNT; c++)
			vt_json_u64(j, p[i].cats[c]);
	vt_json_end_array(j);
}
