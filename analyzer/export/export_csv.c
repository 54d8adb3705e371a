/* CSV export (see export_csv.h). */
#include "export_csv.h"
#include "model_query.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A spreadsheet runs a cell that starts with one of these as a formula. */
static int starts_formula(const char *s)
{
	return *s && strchr("=+-@", *s);
}

static int is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

void vt_csv_field(FILE *out, const char *s)
{
	int quoted = strpbrk(s, ",\"") != NULL;
	if (quoted)
		fputc('"', out);
	if (starts_formula(s))
		fputc('\'', out);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (is_control(*c))
			fprintf(out, "\\x%02x", *c);
		else if (*c == '"')
			fputs("\"\"", out);
		else
			fputc(*c, out);
	}
	if (quoted)
		fputc('"', out);
}

static const struct vt_model *sort_model;

static int born_cmp(const void *pa, const void *pb)
{
	const struct vt_alloc *a = &sort_model->allocs[*(const uint32_t *)pa];
	const struct vt_alloc *b = &sort_model->allocs[*(const uint32_t *)pb];
	struct vt_moment ma = vt_alloc_born(sort_model, a), mb = vt_alloc_born(sort_model, b);
	return vt_moment_cmp(&ma, &mb);
}

static void write_row(const struct vt_export *x, uint32_t i, FILE *out)
{
	const struct vt_alloc *a = &x->m->allocs[i];
	fprintf(out, "%" PRIu64 ",", a->t_alloc);
	if (a->t_free != VT_T_NEVER)
		fprintf(out, "%" PRIu64, a->t_free);
	fputc(',', out);
	if (a->device != VT_DEVICE_UNKNOWN)
		fprintf(out, "%u", a->device);
	fprintf(out, ",%" PRIu64 ",%s,", a->bytes,
	        vt_category_name(a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN));
	uint32_t s = x->alloc_site[i];
	vt_csv_field(out, s == VT_NO_INDEX ? "(no stack)" : x->r.sites[s].name);
	fputc('\n', out);
}

int vt_export_csv(const struct vt_export *x, FILE *out)
{
	uint32_t n = 0, *order = malloc((x->m->nallocs ? x->m->nallocs : 1) * sizeof *order);
	if (!order)
		return -1;
	for (uint32_t i = 0; i < x->m->nallocs; i++)
		if (x->m->allocs[i].flags & VT_AF_CHARGED)
			order[n++] = i;
	sort_model = x->m;
	qsort(order, n, sizeof *order, born_cmp);
	fputs("start_ns,end_ns,device,bytes,category,site\n", out);
	for (uint32_t k = 0; k < n; k++)
		write_row(x, order[k], out);
	free(order);
	return ferror(out) ? -1 : 0;
}
