/* The data every export shares (see export_data.h). */
#define _GNU_SOURCE
#include "export_data.h"
#include "model_query.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each charged allocation's site, as the report's site table groups them. */
static int map_sites(struct vt_export *x)
{
	x->alloc_site = malloc((x->m->nallocs ? x->m->nallocs : 1) * sizeof *x->alloc_site);
	if (!x->alloc_site)
		return -1;
	for (uint32_t i = 0; i < x->m->nallocs; i++) {
		const struct vt_alloc *a = &x->m->allocs[i];
		x->alloc_site[i] = (a->flags & VT_AF_CHARGED)
		                       ? vt_report_site_of(&x->r, a->proc, a->stack_id)
		                       : VT_NO_INDEX;
	}
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

/* A new, empty file next to path (same folder, so rename stays on one file
 * system): mkostemp's O_CREAT|O_EXCL neither follows a planted symlink nor
 * opens a file someone else made, and its mode is 0600 like the trace's.
 * The name into tmp (malloc'd). A FILE, or NULL with err. */
static FILE *open_temp_beside(const char *path, char **tmp, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	int dir_len = slash ? (int)(slash - path) + 1 : 0;
	size_t len = (size_t)dir_len + sizeof ".vramtrace-export.XXXXXX";
	if (!(*tmp = malloc(len))) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(*tmp, len, "%.*s.vramtrace-export.XXXXXX", dir_len, path);
	int fd = mkostemp(*tmp, O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(*tmp);
		}
		free(*tmp);
		*tmp = NULL;
	}
	return f;
}

int vt_export_write_file(const char *path, vt_export_writer fn, void *ctx, char *err, size_t errlen)
{
	char *tmp;
	FILE *f = open_temp_beside(path, &tmp, err, errlen);
	if (!f)
		return -1;
	int rc = fn(f, ctx);
	if (fclose(f) != 0)
		rc = -1;
	if (rc != 0) {
		snprintf(err, errlen, "writing %s failed", path);
	} else if (rename(tmp, path) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		rc = -1;
	}
	if (rc != 0)
		unlink(tmp);
	free(tmp);
	return rc;
}
