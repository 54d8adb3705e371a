/* uthash entries the model keeps per process; private to model*.c. */
#ifndef VT_MODEL_INTERNAL_H
#define VT_MODEL_INTERNAL_H

#include "nomem.h"      /* before <uthash.h>: its out-of-memory exit */
#include "model_hash.h" /* every table below hashed the same way in every file */
#include <uthash.h>

#include "model.h"

struct vt_stack_entry {
	struct vt_model_stack s;
	UT_hash_handle hh;
};

struct vt_frame_fanin {
	uint64_t ip;
	uint32_t stacks;
	UT_hash_handle hh;
};

struct vt_site_name {
	struct {
		uint32_t proc, stack;
	} key;
	char *name;
	UT_hash_handle hh;
};

/* A function the allocation stacks pass through (report_site.c): in how
 * many stacks, and whether it always calls the same function below it. */
struct vt_site_funnel {
	char *function;
	uint32_t stacks, last_stack;
	char *inner;           /* the function below it, first seen */
	int many_inner;        /* it calls different functions: a dispatcher */
	UT_hash_handle hh;
};

struct vt_handle_entry {
	uint64_t handle;
	uint32_t alloc;
	UT_hash_handle hh;
};

struct vt_range_key {
	uint32_t alloc;
	uint32_t pad;
	uint64_t offset;
};

struct vt_range_entry {
	struct vt_range_key key;
	uint32_t range;
	UT_hash_handle hh;
};

/* Drop the (alloc, offset) -> range index once replay is over. */
void vt_model_drop_range_index(struct vt_model *m);

#endif
