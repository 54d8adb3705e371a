/* An ordered map from address to [start, start+len) intervals, used by the
 * model to find the allocation (or VMM mapping) that contains an address.
 * A treap in one growable node array with a free list: O(log n) insert,
 * erase and floor lookup, memory proportional to what is live. Intervals
 * are keyed by start; overlapping inserts are the caller's business (the
 * model closes a stale interval before inserting at the same start).
 *
 * Beside the tree, a hash from start to node. An erase only marks the node
 * dead; an insert at a start whose node is dead brings it back in place. Why:
 * allocators hand the same addresses out again and again, so most frees and
 * allocations of a replay are then a hash probe each, where the tree's
 * descents and restructuring were a third of the replay's time. A lookup
 * steps over a few dead nodes (a freed address about to come back) and takes
 * out of the tree for good the ones of a longer run, and dead nodes are swept
 * when they outnumber the live ones by a margin, so neither lookups nor
 * memory grow with what was freed.
 *
 * The tree's nodes are also threaded in start order (prev, next), so a
 * lookup at an address whose node lies dead steps to the node before it
 * instead of descending the tree again. */
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
	uint32_t head; /* the node with the smallest start (nodes are threaded in start order) */
	uint64_t rng;
	uint32_t *index;   /* open addressing by start: node, 0 empty */
	uint32_t slots;    /* a power of two, or 0 before the first insert */
	uint32_t in_index; /* nodes in the tree, live and dead */
	uint32_t dead;     /* of those, erased ones */
};

void vt_ival_init(struct vt_ival_map *m);
void vt_ival_destroy(struct vt_ival_map *m);
/* Insert (replaces an interval with the same start). Returns 0 or -1 (OOM). */
int vt_ival_insert(struct vt_ival_map *m, const struct vt_ival *iv);
/* Remove the interval starting at start; copy it out if found. 1 found, 0 not. */
int vt_ival_erase(struct vt_ival_map *m, uint64_t start, struct vt_ival *out);
/* The interval with the greatest start <= addr that contains addr, or NULL.
 * Not const: it takes the dead nodes it meets out of the tree. */
const struct vt_ival *vt_ival_find(struct vt_ival_map *m, uint64_t addr);
/* vt_ival_find, and in *at a hint for vt_ival_insert_at: an allocation
 * looks for a live interval at its own address, then inserts there, and
 * the hash probe for that address is made once. */
const struct vt_ival *vt_ival_find_at(struct vt_ival_map *m, uint64_t addr, uint32_t *at);
/* vt_ival_insert, given vt_ival_find_at's hint for iv->start (any erase
 * in between is allowed). */
int vt_ival_insert_at(struct vt_ival_map *m, const struct vt_ival *iv, uint32_t at);
/* The interval starting exactly at start, or NULL. */
const struct vt_ival *vt_ival_exact(const struct vt_ival_map *m, uint64_t start);
static inline uint32_t vt_ival_count(const struct vt_ival_map *m)
{
	return m->count;
}

#endif
