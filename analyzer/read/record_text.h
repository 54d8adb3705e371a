/* Names for the numbers in a log (format.h, api.def, runtime_api.def), for
 * every analyzer part that prints. Each returns NULL for a value it does not
 * know (a newer writer, or damage): callers print the number instead. */
#ifndef VT_RECORD_TEXT_H
#define VT_RECORD_TEXT_H

#include <stdint.h>

const char *vt_rec_name(uint32_t type);          /* "alloc", "stack", ... */
const char *vt_api_name(uint32_t api);           /* "cuMemAlloc_v2" */
const char *vt_rt_api_name(uint32_t rt_api);     /* "cudaMalloc"; NULL for 0 */
const char *vt_copy_dir_name(uint32_t dir);      /* "htod", "dtoh", ... */
const char *vt_alloc_kind_name(uint32_t kind);   /* "device", "managed", ... */
const char *vt_state_name(uint32_t state);       /* "running", "exited", "execed" */
const char *vt_meminfo_reason_name(uint32_t r);  /* "first_use", "oom", ... */
const char *vt_mark_kind_name(uint32_t kind);    /* "user", "step", ... */
const char *vt_module_event_name(uint32_t ev);   /* "load", "unload" */
const char *vt_lookup_path_name(uint32_t path);  /* "dlsym", "get_proc", ... */
const char *vt_lookup_outcome_name(uint32_t o);  /* "routed", "passed", ... */

/* The semantic class of a driver entry point (api.def third column). */
enum vt_api_class {
	VT_API_CLASS_UNKNOWN = 0,
	VT_API_CLASS_ALLOC,
	VT_API_CLASS_FREE,
	VT_API_CLASS_COPY,
	VT_API_CLASS_MAP,
	VT_API_CLASS_UNMAP,
	VT_API_CLASS_RESERVE,
	VT_API_CLASS_UNRESERVE,
	VT_API_CLASS_MEMSET,
	VT_API_CLASS_POOL_TRIM,
	VT_API_CLASS_MEMINFO,
};
enum vt_api_class vt_api_class(uint32_t api);

/* Event records (alloc .. pool_trim) share struct vt_event. */
static inline int vt_rec_is_event(uint32_t type)
{
	return type >= 1 && type <= 9;
}

#endif
