/* The rank-to-rank comparison as text and JSON (rank_diff_out.h). */
#include "rank_diff_out.h"

#include <stdint.h>

#include "units.h"

void vt_rank_change_label(const struct vt_rank_change *c, char *buf, size_t len)
{
	vt_rank_label(c->base ? c->base : c->new_, buf, len);
}

static void signed_bytes(int64_t delta, char *buf, size_t len)
{
	char b[32];
	vt_format_bytes(delta < 0 ? (uint64_t)-delta : (uint64_t)delta, b, sizeof b);
	snprintf(buf, len, "%s%s", delta < 0 ? "-" : delta > 0 ? "+" : " ", b);
}

static void side_peak(const struct vt_rank_row *row, char *buf, size_t len)
{
	if (row)
		vt_format_bytes(row->peak_bytes, buf, len);
	else
		snprintf(buf, len, "-");
}

static void text_change(const struct vt_rank_change *c, FILE *out)
{
	char label[96], b[32], n[32], delta[40], cat[40];
	vt_rank_change_label(c, label, sizeof label);
	side_peak(c->base, b, sizeof b);
	side_peak(c->new_, n, sizeof n);
	signed_bytes(c->peak_delta, delta, sizeof delta);
	fprintf(out, "  %-22s %10s -> %10s  %11s", label, b, n, delta);
	if (c->top_category >= 0) {
		signed_bytes(c->cat_delta[c->top_category], cat, sizeof cat);
		fprintf(out, "  %s %s", vt_category_name(c->top_category), cat);
	}
	if (!c->base || !c->new_)
		fprintf(out, "  (only in the %s run)", c->base ? "base" : "new");
	fputc('\n', out);
}

void vt_rank_diff_write_text(const struct vt_rank_diff *d, FILE *out)
{
	fprintf(out, "Ranks (each at its own peak; matched by %s)\n",
	        d->by_rank ? "the launcher's rank"
	                   : "position: some processes have no launcher's rank");
	fprintf(out, "  %-22s %10s    %10s  %11s  %s\n", "rank", "base peak", "new peak", "change",
	        "category that moved most");
	for (uint32_t i = 0; i < d->n; i++)
		text_change(&d->v[i], out);
	if (d->most < 0) {
		fprintf(out, "no rank changed\n\n");
		return;
	}
	const struct vt_rank_change *m = &d->v[d->most];
	char label[96], size[40];
	vt_rank_change_label(m, label, sizeof label);
	if (m->top_category >= 0) {
		signed_bytes(m->cat_delta[m->top_category], size, sizeof size);
		fprintf(out, "changed most: %s, %s %s\n\n", label,
		        vt_category_name(m->top_category), size);
	} else {
		signed_bytes(m->peak_delta, size, sizeof size);
		fprintf(out, "changed most: %s, peak %s\n\n", label, size);
	}
}

static void json_peak(struct vt_json *j, const char *key, const struct vt_rank_row *row)
{
	vt_json_key(j, key);
	if (row)
		vt_json_u64(j, row->peak_bytes);
	else
		vt_json_null(j);
}

static void json_rank(struct vt_json *j, const struct vt_rank_change *c)
{
	const struct vt_rank_row *row = c->base ? c->base : c->new_;
	vt_json_key(j, "rank");
	if (row->rank >= 0)
		vt_json_i64(j, row->rank);
	else
		vt_json_null(j);
	char label[96];
	vt_rank_change_label(c, label, sizeof label);
	vt_json_kv_string(j, "label", label);
}

static void json_change(struct vt_json *j, const struct vt_rank_change *c)
{
	vt_json_begin_object(j);
	json_rank(j, c);
	json_peak(j, "base_peak_bytes", c->base);
	json_peak(j, "new_peak_bytes", c->new_);
	vt_json_kv_i64(j, "peak_delta", c->peak_delta);
	vt_json_key(j, "categories_delta");
	vt_json_begin_object(j);
	for (int k = 0; k < VT_CAT_COUNT; k++)
		vt_json_kv_i64(j, vt_category_name(k), c->cat_delta[k]);
	vt_json_end_object(j);
	vt_json_kv_string(j, "moved_most",
	                  c->top_category >= 0 ? vt_category_name(c->top_category) : "");
	vt_json_end_object(j);
}

void vt_rank_diff_json_fields(const struct vt_rank_diff *d, struct vt_json *j)
{
	vt_json_kv_string(j, "ranks_matched_by", d->by_rank ? "rank" : "position");
	vt_json_key(j, "ranks");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < d->n; i++)
		json_change(j, &d->v[i]);
	vt_json_end_array(j);
	vt_json_key(j, "rank_changed_most");
	if (d->most < 0) {
		vt_json_null(j);
		return;
	}
	const struct vt_rank_change *m = &d->v[d->most];
	vt_json_begin_object(j);
	json_rank(j, m);
	vt_json_kv_string(j, "category",
	                  m->top_category >= 0 ? vt_category_name(m->top_category) : "");
	vt_json_kv_i64(j, "bytes",
	               m->top_category >= 0 ? m->cat_delta[m->top_category] : m->peak_delta);
	vt_json_kv_i64(j, "peak_delta", m->peak_delta);
	vt_json_end_object(j);
}
