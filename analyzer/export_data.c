/* The data every export shares (see export_data.h). */
#include "export_data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include <uthash.h>

#include "report_site.h"

struct name_site {
	const char *name;               /* points into x->r.sites[site].name */
	uint32_t site;
	UT_hash_handle hh;
};

struct stack_site {
	struct {
		uint32_t proc, stack;
	} key;
	uint32_t site;
	UT_hash_handle hh;
};

/* The report's site for an allocation: named the way the report names it,
 * so an export's site column and the report's site table agree. */
static uint32_t site_of(struct vt_export *x, struct name_site **by_name,
                        struct stack_site **by_stack, const struct vt_alloc *a)
{
	struct stack_site probe, *e;
	memset(&probe, 0, sizeof probe);
	probe.key.proc = a->proc;
	probe.key.stack = a->stack_id;
	HASH_FIND(hh, *by_stack, &probe.key, sizeof probe.key, e);
	if (e)
		return e->site;
	char name[sizeof x->r.sites[0].name];
	vt_report_site(x->m, a->proc, a->stack_id, name, sizeof name);
	struct name_site *ns;
	HASH_FIND_STR(*by_name, name, ns);
	e = calloc(1, sizeof *e);
	if (!e)
		vt_nomem();
	e->key = probe.key;
	e->site = ns ? ns->site : VT_NO_INDEX;
	HASH_ADD(hh, *by_stack, key, sizeof e->key, e);
	return e->site;
}

static int map_sites(struct vt_export *x)
{
	struct name_site *by_name = NULL, *n, *ntmp;
	struct stack_site *by_stack = NULL, *s, *stmp;
	struct name_site *names = calloc(x->r.nsites ? x->r.nsites : 1, sizeof *names);
	x->alloc_site = malloc((x->m->nallocs ? x->m->nallocs : 1) * sizeof *x->alloc_site);
	if (!names || !x->alloc_site) {
		free(names);
		return -1;
	}
	for (uint32_t i = 0; i < x->r.nsites; i++) {
		names[i].name = x->r.sites[i].name;
		names[i].site = i;
		HASH_ADD_KEYPTR(hh, by_name, names[i].name, strlen(names[i].name), &names[i]);
	}
	for (uint32_t i = 0; i < x->m->nallocs; i++) {
		const struct vt_alloc *a = &x->m->allocs[i];
		x->alloc_site[i] = (a->flags & VT_AF_CHARGED) ? site_of(x, &by_name, &by_stack, a)
		                                              : VT_NO_INDEX;
	}
	HASH_ITER(hh, by_stack, s, stmp) {
		HASH_DEL(by_stack, s);
		free(s);
	}
	HASH_ITER(hh, by_name, n, ntmp) HASH_DEL(by_name, n);
	free(names);
	return 0;
}

int vt_export_open(struct vt_export *x, struct vt_model *m, const char *at, char *err,
                   size_t errlen)
{
	memset(x, 0, sizeof *x);
	x->m = m;
	struct vt_report_options opt = {.top = 10, .at = at};
	if (vt_report_build(&x->r, m, &opt, err, errlen) != 0)
		return -1;
	x->at_each_peak = !at || !strcmp(at, "peak");
	x->at = x->r.at;
	if (map_sites(x) != 0) {
		snprintf(err, errlen, "out of memory");
		vt_export_close(x);
		return -1;
	}
	return 0;
}

void vt_export_close(struct vt_export *x)
{
	if (x->r.m)
		vt_report_free(&x->r);
	free(x->alloc_site);
	memset(x, 0, sizeof *x);
}

struct vt_moment vt_export_moment(const struct vt_export *x, int dev)
{
	return x->at_each_peak ? vt_moment_peak(x->m, dev) : x->at;
}

int vt_export_live(const struct vt_export *x, const struct vt_alloc *a)
{
	if (!(a->flags & VT_AF_CHARGED) || a->device == VT_DEVICE_UNKNOWN)
		return 0;
	struct vt_moment at = vt_export_moment(x, a->device);
	return vt_alloc_live_at(x->m, a, &at);
}

int vt_export_devices(const struct vt_export *x, int out[VT_MAX_DEVICES])
{
	int n = 0;
	for (int d = 0; d < VT_MAX_DEVICES; d++)
		if (vt_model_device_used(x->m, d))
			out[n++] = d;
	return n;
}

static int step_cmp(const void *pa, const void *pb)
{
	const struct vt_step *a = pa, *b = pb;
	int c = vt_moment_cmp(&a->when, &b->when);
	if (c)
		return c;
	/* one moment is one event: a death sorts before a birth (never both) */
	return a->sign - b->sign;
}

struct vt_step *vt_export_timeline(const struct vt_export *x, uint32_t *n)
{
	const struct vt_model *m = x->m;
	size_t cap = 2 * (size_t)m->nallocs + 1, k = 0;
	struct vt_step *v = malloc(cap * sizeof *v);
	if (!v)
		return NULL;
	for (uint32_t i = 0; i < m->nallocs; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (!(a->flags & VT_AF_CHARGED) || a->device == VT_DEVICE_UNKNOWN)
			continue;
		v[k++] = (struct vt_step){vt_alloc_born(m, a), i, +1};
		if (a->t_free != VT_T_NEVER)
			v[k++] = (struct vt_step){vt_alloc_died(m, a), i, -1};
	}
	qsort(v, k, sizeof *v, step_cmp);
	*n = (uint32_t)k;
	return v;
}

int vt_export_write_file(const char *path, vt_export_writer fn, void *ctx, char *err,
                         size_t errlen)
{
	size_t len = strlen(path) + 32;
	char *tmp = malloc(len);
	if (!tmp) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	int rc = fn(f, ctx);
	if (fclose(f) != 0)
		rc = -1;
	if (rc != 0) {
		snprintf(err, errlen, "writing %s failed", tmp);
	} else if (rename(tmp, path) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		rc = -1;
	}
	if (rc != 0)
		unlink(tmp);
	free(tmp);
	return rc;
}
