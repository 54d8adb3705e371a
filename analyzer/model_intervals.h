/* An ordered map from address to [start, start+len) intervals, used by the
 * model to find the allocation (or VMM mapping) that contains an address.
 * A treap in one growable node array with a free list: O(log n) insert,
 * erase and floor lookup, memory proportional to what is live. Intervals
 * are keyed by start; overlapping inserts are the caller's business (the
 * model closes a stale interval before inserting at the same start). */
#ifndef VT_MODEL_INTERVALS_H
#define VT_MODEL_INTERVALS_H

#include <stddef.h>
#include <stdint.h>

struct vt_ival {
	uint64_t start, len;
	uint64_t offset;     /* VMM mapping: offset into the handle */
	uint32_t alloc;      /* index into the model's allocations */
	uint32_t is_mapping; /* 1: a VMM mapping of a handle, 0: an allocation */
};

struct vt_ival_map {
	struct vt_ival_node *nodes;
	uint32_t cap, used, root, free_head, count;
	uint64_t rng;
};

void vt_ival_init(struct vt_ival_map *m);
void vt_ival_destroy(struct vt_ival_map *m);
/* Insert (replaces an interval with the same start). Returns 0 or -1 (OOM). */
int vt_ival_insert(struct vt_ival_map *m, const struct vt_ival *iv);
/* Remove the interval starting at start; copy it out if found. 1 found, 0 not. */
int vt_ival_erase(struct vt_ival_map *m, uint64_t start, struct vt_ival *out);
/* The interval with the greatest start <= addr that contains addr, or NULL. */
const struct vt_ival *vt_ival_find(const struct vt_ival_map *m, uint64_t addr);
/* The interval starting exactly at start, or NULL. */
const struct vt_ival *vt_ival_exact(const struct vt_ival_map *m, uint64_t start);
static inline uint32_t vt_ival_count(const struct vt_ival_map *m) { return m->count; }

#endif
