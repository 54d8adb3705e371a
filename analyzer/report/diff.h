/* Two runs of the same job compared (`vramtrace diff BASE NEW`): each trace
 * is read, classified and reported on its own (report.h, with its own
 * symbols: traces from two machines compare fine), then the reports are
 * matched by name, never by address:
 *  - peak per device and bytes by category at peak;
 *  - sites by their symbolized name "function (file:line)"; a site left over
 *    on both sides is matched on "function (file)" when that is unique on
 *    each side (the same call a few lines away in another version);
 *  - flags keyed by (kind, site), matched the same way: new ones and
 *    vanished ones; a flag left over on both sides that is the only one of
 *    its kind on each is "moved" (the same finding named from another
 *    site: site names depend on each trace's population of stacks).
 * --fail-over P: NEW's peak on any device, or any category at peak, grew by
 * more than P percent (from zero counts as growth).
 * Two streaming models (model_stream.h, `diff --stream`) compare peaks and
 * sites only: no categories, no flags. */
#ifndef VT_DIFF_H
#define VT_DIFF_H

#include <stdint.h>

#include "model.h"
#include "report.h"

struct vt_diff_site {
	char name[256];          /* NEW's name when matched or new, else BASE's */
	char base_name[256];     /* BASE's name when it differs (matched by function) */
	uint64_t base, new_;     /* bytes live at peak */
	int category;            /* NEW's, else BASE's */
};

struct vt_diff_finding {
	const struct vt_finding *f;
	const struct vt_report *r; /* the side it belongs to */
	char site[256];
	char base_site[256];       /* findings_moved: its site in BASE */
};

struct vt_diff {
	struct vt_report base, new_;
	int dev_used[VT_MAX_DEVICES];
	uint64_t peak_base[VT_MAX_DEVICES], peak_new[VT_MAX_DEVICES];
	struct vt_diff_site *sites;   /* biggest |delta| first */
	uint32_t nsites;
	struct vt_diff_finding *findings_new, *findings_gone;
	uint32_t nfindings_new, nfindings_gone;
	struct vt_diff_finding *findings_moved; /* same kind, the only one each side, other site */
	uint32_t nfindings_moved;
	int stream; /* built from streaming models: peaks and sites only */
};

/* Reports on both models (classifying them; both full or both streaming)
 * and matches them. Returns 0, or -1 with a one-line reason in err. */
int vt_diff_build(struct vt_diff *d, struct vt_model *base, struct vt_model *new_, char *err,
                  size_t errlen);
void vt_diff_free(struct vt_diff *d);

/* 1 when nothing moved: peaks, categories, sites and flags all equal. */
int vt_diff_unchanged(const struct vt_diff *d);

/* Pair names of two lists: equal names one to one (duplicates too), then
 * what is left by "function (file)" without the line, when that is unique
 * on both sides. a2b[i] = index in b or -1; b2a likewise. */
void vt_diff_match_names(char *const *a, uint32_t na, char *const *b, uint32_t nb, int32_t *a2b,
                         int32_t *b2a);

/* --fail-over: growth of b -> n above percent (any growth from 0). */
int vt_diff_grew_over(uint64_t b, uint64_t n, double percent);

#endif
