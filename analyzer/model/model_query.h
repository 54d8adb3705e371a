/* Questions a finished model answers (model.h): moments and what was live
 * then, bytes by category, stacks, copy ranges, devices. */
#ifndef VT_MODEL_QUERY_H
#define VT_MODEL_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

int vt_moment_cmp(const struct vt_moment *a, const struct vt_moment *b);
/* The moment of an allocation's birth / death (death = infinitely late if live). */
struct vt_moment vt_alloc_born(const struct vt_model *m, const struct vt_alloc *a);
struct vt_moment vt_alloc_died(const struct vt_model *m, const struct vt_alloc *a);
/* After every event at time t (the state "at t"). */
struct vt_moment vt_moment_at_time(uint64_t t_ns);
/* Right after event seq of process proc (its time is looked up from the
 * allocation/free/failed record when known, else t_ns is used). */
struct vt_moment vt_moment_at_seq(uint32_t proc, uint64_t seq, uint64_t t_ns);
/* The moment device dev reached its peak; the end of the trace for dev < 0. */
struct vt_moment vt_moment_peak(const struct vt_model *m, int dev);
struct vt_moment vt_moment_end(const struct vt_model *m);

int vt_alloc_live_at(const struct vt_model *m, const struct vt_alloc *a,
                     const struct vt_moment *at);

/* One process's allocations and frees in the order they happened:
 * allocations are kept in that order and frees in free_order, so a walk is
 * a merge (a free and the allocation that closed it implicitly share a seq:
 * the free first). */
struct vt_proc_walk {
	uint32_t ai, fi;
};
void vt_proc_walk_begin(const struct vt_proc *p, struct vt_proc_walk *w);
/* The next event: 1 with its allocation's index in *idx and *is_free set,
 * 0 after the last. */
int vt_proc_walk_next(const struct vt_model *m, const struct vt_proc *p, struct vt_proc_walk *w,
                      uint32_t *idx, int *is_free);

/* Visit the charged allocations live at a moment (dev < 0: all devices).
 * Stops when fn returns non-zero. */
typedef int (*vt_alloc_fn)(const struct vt_model *m, uint32_t idx, const struct vt_alloc *a,
                           void *ctx);
int vt_model_for_each_live(const struct vt_model *m, const struct vt_moment *at, int dev,
                           vt_alloc_fn fn, void *ctx);

/* A device's live bytes at a moment, and those bytes split by category. */
uint64_t vt_model_live_bytes(const struct vt_model *m, const struct vt_moment *at, int dev);
void vt_model_bytes_by_category(const struct vt_model *m, const struct vt_moment *at, int dev,
                                uint64_t out[VT_CAT_COUNT]);

/* Parse --at: "peak", "end" or seconds from the trace start ("3.25").
 * Returns 0 and the moment, or -1 on a malformed value. For "peak" with
 * several devices, the moment of the highest per-device peak. */
int vt_model_parse_at(const struct vt_model *m, const char *spec, struct vt_moment *out,
                      char *label, size_t labellen);

/* How many of process proc's unique allocation stacks contain ip: a frame
 * every allocation passes through (an allocator wrapper) names no site. */
uint32_t vt_model_frame_fanin(const struct vt_model *m, uint32_t proc, uint64_t ip);
const struct vt_model_stack *vt_model_stack(const struct vt_model *m, uint32_t proc, uint32_t id);
/* The stack that filled a: its first host-to-device copy's, else its
 * allocation's (0: neither has one). */
uint32_t vt_alloc_fill_stack(const struct vt_model *m, const struct vt_alloc *a);
/* The bytes of data a holds: what the host copied into it, each offset
 * counted once, where that is less than a (an allocator's region holding
 * the array, its size the allocator's choice), else a's own. */
uint64_t vt_alloc_data_bytes(const struct vt_model *m, const struct vt_alloc *a);
/* a's copy range, when every host-to-device copy into it landed at one
 * offset not covering it whole (an array written into an allocator's
 * region, once or again); NULL otherwise. */
const struct vt_copy_range *vt_alloc_only_range(const struct vt_model *m, const struct vt_alloc *a);
/* The copy ranges of an allocation (contiguous in vt_model.ranges after finish()). */
const struct vt_copy_range *vt_model_ranges(const struct vt_model *m, uint32_t alloc, uint32_t *n);
/* Devices a report lists: those the job allocated on (failed attempts
 * included); every device seen when it allocated nothing at all. */
int vt_model_device_used(const struct vt_model *m, int dev);
/* Device total bytes known from DEVICE/MEMINFO records (0 if never seen). */
uint64_t vt_model_device_total(const struct vt_model *m, int dev);

#endif
