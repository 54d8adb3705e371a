/* What every export format shares, computed once from a loaded model:
 * the report (classification, flags, sites: the numbers `report` prints),
 * the site of each allocation, the moment(s) an export is taken at, and the
 * bytes-in-use timeline as a sorted list of +/- steps.
 *
 *   struct vt_export x;
 *   if (vt_export_open(&x, model, at_spec, err, sizeof err)) die(err);
 *   ... vt_export_folded(&x, out) / _csv / _perfetto / _html ...
 *   vt_export_close(&x);
 *
 * "At": no --at, or --at peak, means each device at its OWN peak (as
 * report's categories_at_peak); --at end or --at SECONDS means that one
 * moment on every device. */
#ifndef VT_EXPORT_DATA_H
#define VT_EXPORT_DATA_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"
#include "report.h"

struct vt_export {
	struct vt_model *m;
	struct vt_report r;             /* sites sorted biggest first */
	uint32_t *alloc_site;           /* per allocation: index into r.sites,
	                                   VT_NO_INDEX if not charged to a device */
	int at_each_peak;               /* 1: each device at its own peak */
	struct vt_moment at;            /* otherwise: this moment */
};

/* Classifies the model (through the report) if not yet. 0, or -1 and a
 * one-line reason (a malformed --at). */
int vt_export_open(struct vt_export *x, struct vt_model *m, const char *at, char *err,
                   size_t errlen);
void vt_export_close(struct vt_export *x);

/* The moment an export looks at on device dev. */
struct vt_moment vt_export_moment(const struct vt_export *x, int dev);
/* A charged allocation live at that moment on its own device. */
int vt_export_live(const struct vt_export *x, const struct vt_alloc *a);
/* The devices an export lists (vt_model_device_used), in order. */
int vt_export_devices(const struct vt_export *x, int out[VT_MAX_DEVICES]);

/* One step of the bytes-in-use timeline: allocation `alloc` is born
 * (sign +1) or dies (-1) at moment `when`. Sorted by vt_moment_cmp; only
 * allocations charged to a known device. */
struct vt_step {
	struct vt_moment when;
	uint32_t alloc;
	int32_t sign;
};
/* A new array of every step (caller frees), count in *n. NULL on no memory. */
struct vt_step *vt_export_timeline(const struct vt_export *x, uint32_t *n);

/* Write path through fn: into a new file of an unpredictable name in path's
 * folder first (mkostemp: exclusive, mode 0600, never through a symlink),
 * renamed over path when all went well, so a failed export leaves no half
 * file and nobody else can have opened or redirected it. 0, or -1 and a
 * reason. */
typedef int (*vt_export_writer)(FILE *out, void *ctx);
int vt_export_write_file(const char *path, vt_export_writer fn, void *ctx, char *err,
                         size_t errlen);

#endif
