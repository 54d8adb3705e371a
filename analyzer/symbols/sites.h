/* The "site" of an event: the innermost frame of its stack that is the
 * job's own code — not the CUDA driver, the CUDA runtime, the vramtrace shim,
 * nor a framework's allocator internals. "Who asked for this memory", as one
 * line: `function (file:line)`.
 *
 * A site rule is one pattern (fnmatch(3) glob) on one part of a frame:
 *   module:GLOB    the module file's basename    module:libcuda.so*
 *   function:GLOB  the function name (each inline entry is tried; C++ names
 *                  as demangled, or mangled when no demangler was found)
 *   file:GLOB      the source file's basename
 * A frame (or inline entry) matching any rule is skipped. Frames that cannot
 * be named are matched on their module alone.
 *
 * The default rules (vt_site_default_rules below) cover the driver, the
 * runtime, the shim, TensorFlow/XLA/TSL (BFC and cudaMallocAsync
 * allocators, StreamExecutor), PyTorch (c10 caching allocator) and CuPy
 * memory pools. Change them without rebuilding:
 *   VRAMTRACE_SITE_SKIP="function:my_pool_*,module:libmyalloc.so"
 *                       extra rules, comma-separated; a leading '=' drops
 *                       the defaults: VRAMTRACE_SITE_SKIP="=module:libcuda*"
 *   VRAMTRACE_SITE_SKIP_FILE=PATH
 *                       more rules, one a line, '#' starts a comment
 * If every frame of a stack is skipped, the site is the innermost frame that
 * is in no driver/runtime/shim module (else the innermost frame), so a site
 * is never empty.
 *
 *   struct vt_site_rules *rules = vt_site_rules_from_env(err, sizeof err);
 *   char site[512];
 *   int i = vt_site_of_stack(rules, sym, store, stack, site, sizeof site);
 *       -> "load_dataset (train.c:88)", i = index of that native frame
 */
#ifndef VT_SITES_H
#define VT_SITES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stack_store.h"
#include "symbolize.h"

/* NULL-terminated list of the built-in rules. */
extern const char *const vt_site_default_rules[];

struct vt_site_rules;

/* Defaults + VRAMTRACE_SITE_SKIP + VRAMTRACE_SITE_SKIP_FILE. A bad rule or
 * unreadable file: NULL and a one-line reason in err. */
struct vt_site_rules *vt_site_rules_from_env(char *err, size_t errlen);
/* Empty rule set (tests, callers that build their own). */
struct vt_site_rules *vt_site_rules_new(void);
void vt_site_rules_free(struct vt_site_rules *r);
/* Add "kind:GLOB". Returns 0, or -1 with a reason in err. */
int vt_site_rules_add(struct vt_site_rules *r, const char *rule, char *err, size_t errlen);
int vt_site_rules_add_defaults(struct vt_site_rules *r);
/* Rules from a file, one a line. Returns 0, or -1 with a reason in err. */
int vt_site_rules_load_file(struct vt_site_rules *r, const char *path, char *err, size_t errlen);
size_t vt_site_rules_count(const struct vt_site_rules *r);

/* Does the rule set skip this entry? module_path may be NULL, s may be NULL
 * (an unnamed frame: only module rules apply). */
int vt_site_rules_skip(const struct vt_site_rules *r, const char *module_path,
		       const struct vt_symbol *s);

/* The site of a stack, formatted into buf ("function (file:line)"; unnamed:
 * "0x7f.. (libfoo.so+0x1234)"). Returns the index of the native frame chosen,
 * or -1 for a stack with no frames (buf gets "(no stack)"), or
 * VT_SITE_PYTHON when the stack has Python frames: buf then names
 * the innermost Python frame in user code (pystack.h) and no native frame
 * was chosen. */
#define VT_SITE_PYTHON (-2)
int vt_site_of_stack(const struct vt_site_rules *r, struct vt_symbolizer *sym,
		     const struct vt_stack_store *st, const struct vt_stack *s, char *buf,
		     size_t len);

/* ---- the one-stop API for commands (report, dump, diff, export) ----------
 *
 *   struct vt_sites sites;
 *   if (vt_sites_open(&sites, &trace, 0, err, sizeof err)) die(err);
 *   // for each event, with i = the index of its log in trace.logs:
 *   const char *site = vt_sites_of_event(&sites, i, ev->stack_id);
 *   //   -> "load_dataset (train.c:88)"; "(no stack)" when stack_id is 0 or
 *   //      unknown. Cached per canonical stack: cheap to call per event.
 *   uint32_t c = vt_stack_store_canonical(sites.store, i, ev->stack_id);
 *   vt_sites_print_stack(&sites, c, stdout, "    ");  // full stack on request
 *   vt_sites_close(&sites);
 *
 * Sites reflect VRAMTRACE_SITE_SKIP / VRAMTRACE_SITE_SKIP_FILE; names come
 * from the trace's sidecar first (symbolize.h). */
struct vt_sites {
	struct vt_stack_store *store;
	struct vt_symbolizer *sym;
	struct vt_site_rules *rules;
	char **cache; /* site text per canonical id (index id - 1), lazily */
	size_t ncache;
};

/* Load every stack and module record of the trace, open the symbolizer on
 * its directory (sym_flags: VT_SYM_*), read the site rules. Returns 0, or -1
 * with a one-line reason in err (bad site rules). */
int vt_sites_open(struct vt_sites *s, const struct vt_trace *t, unsigned sym_flags, char *err,
		  size_t errlen);
void vt_sites_close(struct vt_sites *s);

/* Site text of (log index, stack id); valid until close. */
const char *vt_sites_of_event(struct vt_sites *s, uint32_t log_index, uint32_t stack_id);
/* Same for a canonical stack id. */
const char *vt_sites_of_stack(struct vt_sites *s, uint32_t canonical);

/* Whether canonical stacks a and b are one call path: the same functions
 * calling one another, frame for frame, whatever lines they call from (x
 * and y converted by one function, a line apart). A frame that cannot be
 * named matches only itself. */
int vt_sites_same_functions(struct vt_sites *s, uint32_t a, uint32_t b);

/* Every frame of a canonical stack, innermost first, one line each; a
 * frame's inlined functions come first, marked, then the function they are
 * inlined into; the site's frame is marked with '*':
 *   indent#0   cuMemAlloc_v2 (libcuda.so.1)
 *   indent#1 * read_batch (io.h:12) [inlined]
 *   indent     load_dataset (train.c:88)
 *   indent#2   main (train.c:120)
 *   indent#3   0x7f12c0001234 (libfoo.so+0x1234)      (unnamed) */
void vt_sites_print_stack(struct vt_sites *s, uint32_t canonical, FILE *out, const char *indent);

#endif
