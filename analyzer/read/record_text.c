/* Names for log numbers: tables indexed by value, generated from the .def
 * lists where one exists, so a new row there needs no edit here. */
#include "record_text.h"

#include <stddef.h>

#include "vramtrace/format.h"

#define LOOKUP(table, v) \
	((v) < sizeof(table) / sizeof((table)[0]) ? (table)[v] : NULL)

static const char *const rec_names[] = {
	[VT_REC_ALLOC] = "alloc",     [VT_REC_FREE] = "free",
	[VT_REC_COPY] = "copy",       [VT_REC_MAP] = "map",
	[VT_REC_UNMAP] = "unmap",     [VT_REC_RESERVE] = "reserve",
	[VT_REC_UNRESERVE] = "unreserve", [VT_REC_MEMSET] = "memset",
	[VT_REC_POOL_TRIM] = "pool_trim", [VT_REC_FREE_SHORT] = "free_short", [VT_REC_PACKED] = "packed",
	[VT_REC_STACK] = "stack",
	[VT_REC_MODULE] = "module",   [VT_REC_MEMINFO] = "meminfo",
	[VT_REC_MARK] = "mark",       [VT_REC_THREAD] = "thread",
	[VT_REC_EXIT] = "exit",       [VT_REC_DEVICE] = "device",
	[VT_REC_LOOKUP] = "lookup",   [VT_REC_PYSTR] = "pystr",
	[VT_REC_NOTE] = "note",       [VT_REC_NVML] = "nvml",
};

#define VT_API(id, symbol, class) [id] = #symbol,
static const char *const api_names[] = {
#include "vramtrace/api.def"
};

#define VT_API(id, symbol, class) [id] = VT_API_CLASS_##class,
static const unsigned char api_classes[] = {
#include "vramtrace/api.def"
};

#define VT_RT(id, symbol) [id] = #symbol,
static const char *const rt_names[] = {
#include "vramtrace/runtime_api.def"
};

static const char *const copy_dirs[] = {
	[VT_COPY_UNKNOWN] = "unknown", [VT_COPY_HTOD] = "htod", [VT_COPY_DTOH] = "dtoh",
	[VT_COPY_DTOD] = "dtod",       [VT_COPY_HTOH] = "htoh", [VT_COPY_PEER] = "peer",
	[VT_COPY_ARRAY] = "array",
};

static const char *const alloc_kinds[] = {
	[VT_ALLOC_DEVICE] = "device", [VT_ALLOC_MANAGED] = "managed", [VT_ALLOC_ASYNC] = "async",
	[VT_ALLOC_POOL] = "pool",     [VT_ALLOC_VMM] = "vmm",         [VT_ALLOC_ARRAY] = "array",
	[VT_ALLOC_HOST] = "host",     [VT_ALLOC_GRAPH] = "graph",     [VT_ALLOC_IPC] = "ipc",
};

static const char *const states[] = {
	[VT_STATE_RUNNING] = "running", [VT_STATE_EXITED] = "exited", [VT_STATE_EXECED] = "execed",
};

static const char *const meminfo_reasons[] = {
	[VT_MEMINFO_FIRST_USE] = "first_use", [VT_MEMINFO_OOM] = "oom",
	[VT_MEMINFO_MARK] = "mark",           [VT_MEMINFO_CALL] = "call",
	[VT_MEMINFO_PEAK] = "peak",           [VT_MEMINFO_EXIT] = "exit",
};

static const char *const mark_kinds[] = {
	[VT_MARK_USER] = "user", [VT_MARK_STEP] = "step", [VT_MARK_LAUNCHER] = "launcher",
	[VT_MARK_FRAMEWORK_OOM] = "framework_oom",
};

static const char *const module_events[] = {
	[VT_MODULE_LOAD] = "load", [VT_MODULE_UNLOAD] = "unload",
};

static const char *const lookup_paths[] = {
	[VT_LOOKUP_DLSYM] = "dlsym", [VT_LOOKUP_GET_PROC] = "get_proc",
	[VT_LOOKUP_GET_PROC_V2] = "get_proc_v2",
};

static const char *const lookup_outcomes[] = {
	[VT_LOOKUP_ROUTED] = "routed",     [VT_LOOKUP_ROUTED_BY_NAME] = "routed_by_name",
	[VT_LOOKUP_PASSED] = "passed",     [VT_LOOKUP_UNROUTED] = "unrouted",
	[VT_LOOKUP_FAILED] = "failed",
};

const char *vt_rec_name(uint32_t type) { return LOOKUP(rec_names, type); }
const char *vt_api_name(uint32_t api) { return LOOKUP(api_names, api); }
const char *vt_rt_api_name(uint32_t rt_api) { return LOOKUP(rt_names, rt_api); }
const char *vt_copy_dir_name(uint32_t dir) { return LOOKUP(copy_dirs, dir); }
const char *vt_alloc_kind_name(uint32_t kind) { return LOOKUP(alloc_kinds, kind); }
const char *vt_state_name(uint32_t state) { return LOOKUP(states, state); }
const char *vt_meminfo_reason_name(uint32_t r) { return LOOKUP(meminfo_reasons, r); }
const char *vt_mark_kind_name(uint32_t kind) { return LOOKUP(mark_kinds, kind); }
const char *vt_module_event_name(uint32_t ev) { return LOOKUP(module_events, ev); }
const char *vt_lookup_path_name(uint32_t path) { return LOOKUP(lookup_paths, path); }
const char *vt_lookup_outcome_name(uint32_t o) { return LOOKUP(lookup_outcomes, o); }

enum vt_api_class vt_api_class(uint32_t api)
{
	return api < sizeof api_classes ? (enum vt_api_class)api_classes[api] : VT_API_CLASS_UNKNOWN;
}
