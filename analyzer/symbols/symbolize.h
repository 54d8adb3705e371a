/* Naming frames: function, file:line and the inline chain, offline.
 *
 * A frame is (module, offset) — see stack_store.h: offset is the ELF virtual
 * address inside the module file. For each frame the symbolizer tries, in
 * order:
 *   1. the trace's symbol sidecar DIR/symbols.vtsym (sidecar_read.h), written on
 *      the recording host by `vramtrace run`, keyed by (build id, offset):
 *      names survive the binary being deleted or the trace being moved;
 *   2. the module file named in the trace, on this machine, but only if its
 *      GNU build id matches the recorded one (a rebuilt library would name
 *      the wrong lines): elfutils libdwfl, DWARF line table and inline scopes
 *      (dwarf_getscopes), the ELF symbol table when there is no DWARF;
 *   3. otherwise the frame stays unnamed, with the reason (status).
 * Results are cached per module (one Dwfl each) and per address.
 *
 * Typical use (the report command):
 *
 *   struct vt_symbolizer *sym = vt_symbolizer_open(dir, 0);
 *   struct vt_frame_names fn;
 *   vt_symbolize_frame(sym, store, &stack->frames[i], &fn);
 *   char text[512];
 *   vt_format_frame(&fn, store, &stack->frames[i], text, sizeof text);
 *       -> "train_step (model.c:42)"  or  "0x7f12c0001234 (libfoo.so+0x1234)"
 *   vt_symbolizer_close(sym);
 *
 * Not thread-safe: one symbolizer per thread.
 */
#ifndef VT_SYMBOLIZE_H
#define VT_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "frame_names.h"
#include "stack_store.h"

/* vt_symbolizer_open flags */
enum {
	VT_SYM_NO_SIDECAR = 1u << 0, /* ignore DIR/symbols.vtsym */
	VT_SYM_NO_FILES = 1u << 1,   /* never open module files (sidecar only) */
};

struct vt_symbolizer;

/* trace_dir may be NULL (no sidecar). A missing sidecar is not an error; a
 * damaged one is used as far as it is valid (warnings on stderr). Never NULL
 * (exits on out-of-memory). */
struct vt_symbolizer *vt_symbolizer_open(const char *trace_dir, unsigned flags);
void vt_symbolizer_close(struct vt_symbolizer *sym);

/* Names for offset in mod (mod NULL: VT_SYM_NO_MODULE). Returns out->status. */
enum vt_sym_status vt_symbolize(struct vt_symbolizer *sym, const struct vt_module_info *mod,
				uint64_t offset, struct vt_frame_names *out);

/* Same for a frame of a stored stack. */
enum vt_sym_status vt_symbolize_frame(struct vt_symbolizer *sym, const struct vt_stack_store *st,
				      const struct vt_frame *f, struct vt_frame_names *out);

/* Resolve from the module file only (no sidecar, no cache of misses across
 * calls of different flags): what the sidecar writer uses. */
enum vt_sym_status vt_symbolize_from_file(struct vt_symbolizer *sym,
					  const struct vt_module_info *mod, uint64_t offset,
					  struct vt_frame_names *out);

/* Text for one frame, innermost entry:
 *   "function (file:line)"            named with a line (file = basename)
 *   "function (libfoo.so)"            named, no line information
 *   "0x7f12c0001234 (libfoo.so+0x1234)"  unnamed
 *   "0x7f12c0001234 (?)"              in no module
 * Returns the length it wanted (snprintf semantics). */
int vt_format_frame(const struct vt_frame_names *n, const struct vt_stack_store *st,
		    const struct vt_frame *f, char *buf, size_t len);

/* "function (file:line)" for one symbol entry (file shortened to its
 * basename; "function" alone when no file). */
int vt_format_symbol(const struct vt_symbol *s, char *buf, size_t len);

/* Short reason for a status: "no module", "file not found", ... */
const char *vt_sym_status_str(enum vt_sym_status status);

/* Basename of a path (pointer into it). */
const char *vt_path_basename(const char *path);

#endif
