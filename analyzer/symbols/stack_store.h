/* The analyzer's table of stacks, folded across threads and processes.
 *
 * The shim writes each stack once per thread (per-thread tables, no locks),
 * so the same call path appears once per thread that took it, each time with
 * its own id. This store turns every (log, stack id) into one canonical
 * stack: frames are first rebased to (module, offset) using the module
 * records live in that log when the stack record was read — so a library
 * dlclose'd later, or loaded at another address in another process, still
 * maps to the same module — and identical rebased frame lists share one
 * canonical stack. A frame outside every recorded module keeps its raw
 * address; a stack holding such a frame folds only within its own log.
 *
 * Feed it every record of every log in log order (vt_stack_store_add; it
 * ignores records it does not use), then ask for canonical ids.
 *
 *   struct vt_stack_store *st = vt_stack_store_new();
 *   vt_stack_store_load_trace(st, &trace);            // or add() per record
 *   uint32_t c = vt_stack_store_canonical(st, log_index, ev->stack_id);
 *   const struct vt_stack *s = vt_stack_store_stack(st, c);
 *   for (i < s->depth) { s->frames[i].module, .offset, .addr }
 */
#ifndef VT_STACK_STORE_H
#define VT_STACK_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"
#include "trace_dir.h"
#include "pystack.h"

/* A module as the analyzer knows it: one per distinct (path, build id). */
struct vt_module_info {
	uint32_t index;          /* >= 1; 0 means "no module" in a frame */
	const char *path;        /* as recorded (NUL-terminated) */
	uint8_t build_id[32];
	uint8_t build_id_len;    /* 0: the object had no GNU build id */
};

struct vt_frame {
	uint32_t module;         /* vt_module_info.index, 0 = not in any module */
	uint64_t offset;         /* address - load bias = ELF virtual address in
				    the module file (the raw address if module 0) */
	uint64_t addr;           /* raw address where first seen (for display) */
};

struct vt_stack {
	uint32_t id;             /* canonical id, >= 1 */
	uint16_t depth;          /* native frames, innermost first */
	uint16_t py_depth;       /* Python frames, 2 words each */
	const struct vt_frame *frames;
	const uint64_t *py_words;/* 2 * py_depth words, file/function ids made
				    trace-wide (vt_pystack_globalize): decode
				    with vt_stack_store_pystrs() (pystack.h) */
	uint32_t first_log;      /* log index where first seen */
	uint32_t records;        /* how many (log, thread, id) records folded here */
};

struct vt_stack_store;

struct vt_stack_store *vt_stack_store_new(void);
void vt_stack_store_free(struct vt_stack_store *st);

/* Take one record of log number `log_index` (any number the caller uses
 * consistently, e.g. the index in vt_trace.logs). Uses VT_REC_STACK and
 * VT_REC_MODULE, ignores the rest. Returns 0, or -1 for a malformed stack or
 * module record (one line in err, if errlen > 0; the record is skipped). */
int vt_stack_store_add(struct vt_stack_store *st, uint32_t log_index,
		       const struct vt_record_view *rec, char *err, size_t errlen);

/* Every log of the trace, in order; malformed records are warned about on
 * stderr and skipped. Returns the number of malformed records. */
unsigned vt_stack_store_load_trace(struct vt_stack_store *st, const struct vt_trace *t);

/* Canonical id of (log, stack id), 0 if that log wrote no such stack. */
uint32_t vt_stack_store_canonical(const struct vt_stack_store *st, uint32_t log_index,
				  uint32_t stack_id);

/* NULL for an id out of range. Pointers stay valid until free. */
const struct vt_stack *vt_stack_store_stack(const struct vt_stack_store *st, uint32_t canonical);
const struct vt_module_info *vt_stack_store_module(const struct vt_stack_store *st,
						   uint32_t module_index);

/* Python names of the trace: the ids in vt_stack.py_words. */
const struct vt_pystrs *vt_stack_store_pystrs(const struct vt_stack_store *st);

/* Read every Python name (VT_REC_PYSTR) of the trace. A caller that feeds
 * records one by one with vt_stack_store_add() calls this FIRST: a name may
 * sit in another thread's chunk, after a stack that uses it, and stacks are
 * folded on names. vt_stack_store_load_trace() does it itself. Returns the
 * number of malformed records (warned about on stderr). */
unsigned vt_stack_store_load_pystrs(struct vt_stack_store *st, const struct vt_trace *t);

size_t vt_stack_store_count(const struct vt_stack_store *st);        /* canonical stacks */
size_t vt_stack_store_module_count(const struct vt_stack_store *st);
size_t vt_stack_store_records(const struct vt_stack_store *st);      /* stack records read */

#endif
