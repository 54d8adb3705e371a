/* Upload sites: how many distinct tensors each host-to-device copy site of a
 * process filled, and how many of them were alive at once
 * (docs/design/classification.md, "dataset or weights").
 *
 * A model is loaded tensor by tensor (Module.to -> _apply, load_weights,
 * device_put leaf by leaf, safetensors): one site fills many tensors, all
 * alive together. A dataset is one array per input (x, y; train and
 * validation): its site fills one or two, or one an epoch (a day's data, a
 * reshuffled copy), each replacing the one before. A tensor here is a long-lived allocation filled
 * from the host (its first copy's stack), or one range of a pool region filled by a single copy
 * (its stack; a block refilled batch after batch is no tensor). The caller says which allocations
 * are candidates. */
#ifndef VT_UPLOAD_SITES_H
#define VT_UPLOAD_SITES_H

#include <stdint.h>

#include "model.h"

/* From this many tensors alive at once a site is a loader of many tensors. */
#define VT_LOADER_TENSORS 3

struct vt_upload_sites;

/* Count the sites of process proc: every allocation for which
 * counts(m, index, arg) says yes, and every single-copy range of every
 * allocation for which pool(m, index, arg) says yes (pool may be NULL). */
struct vt_upload_sites *
vt_upload_sites_count(const struct vt_model *m, uint32_t proc,
                      int (*counts)(const struct vt_model *, uint32_t, void *),
                      int (*pool)(const struct vt_model *, uint32_t, void *), void *arg);

/* Tensors filled by the site (stack id; 0, no stack: 0). */
uint32_t vt_upload_site_tensors(const struct vt_upload_sites *s, uint32_t stack_id);

/* The site's tensors alive at once, at most. */
uint32_t vt_upload_site_most_alive(const struct vt_upload_sites *s, uint32_t stack_id);

/* From the site's first tensor's upload to its last's (0: none). */
uint64_t vt_upload_site_span_ns(const struct vt_upload_sites *s, uint32_t stack_id);

/* The site had VT_LOADER_TENSORS tensors or more alive at once, and the tensor of
 * `bytes` is not most of what it filled: a loader of many tensors (weights),
 * or a batch feeder. A tensor four times all the rest of its site together
 * is not taken for one of many: XLA makes every copy of a process on one
 * worker thread, one stack for the dataset and a few tiny scalars alike. */
int vt_upload_site_is_loader(const struct vt_upload_sites *s, uint32_t stack_id, uint64_t bytes);

/* A site that sent VT_FEEDER_TENSORS tensors or more, never
 * VT_LOADER_TENSORS alive at once, feeds batches whatever its pace: each
 * tensor replaces the one before (a loop's batches, an encoding pass's
 * inputs). Data uploaded while a job runs comes a handful of tensors at a
 * time (an epoch's reshuffled set, a day's data). */
#define VT_FEEDER_TENSORS 16
int vt_upload_site_is_feeder(const struct vt_upload_sites *s, uint32_t stack_id);

/* From this many tensors alive at once one site loaded a model (a data
 * helper uploads x and y, a validation pair, an index: a handful). */
#define VT_MODEL_TENSORS 8

/* Some site had VT_MODEL_TENSORS tensors or more alive at once: a model
 * was loaded tensor by tensor. */
int vt_upload_sites_model_loaded(const struct vt_upload_sites *s);

void vt_upload_sites_free(struct vt_upload_sites *s);

#endif
