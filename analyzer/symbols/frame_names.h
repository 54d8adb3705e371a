/* A frame's names: the function, file:line and inline chain at one address,
 * with why it has none. What the symbolizer (symbolize.h) answers and the
 * symbol sidecar's reader (sidecar_read.h) finds; the types alone, so that
 * the reader need not know the symbolizer that uses it. */
#ifndef VT_FRAME_NAMES_H
#define VT_FRAME_NAMES_H

#include <stddef.h>
#include <stdint.h>

enum vt_sym_status {
	VT_SYM_OK = 0,            /* named: at least the function */
	VT_SYM_NO_MODULE,         /* the address lies in no recorded module */
	VT_SYM_NO_FILE,           /* not in the sidecar, module file not here */
	VT_SYM_BUILD_ID_MISMATCH, /* the file here is another build of it */
	VT_SYM_NO_SYMBOL,         /* file read, nothing covers the address */
};

/* One function at an address: the real one, or one inlined into it. */
struct vt_symbol {
	const char *function;  /* never NULL */
	const char *file;      /* source path as in DWARF, NULL if unknown */
	uint32_t line;         /* 0 if unknown */
	uint32_t inlined;      /* 1: inlined into the next entry */
};

struct vt_frame_names {
	enum vt_sym_status status;
	const char *source;    /* "sidecar", "dwarf", "symtab"; NULL if unnamed */
	size_t n;              /* entries, innermost (deepest inline) first;
				  >= 1 exactly when status == VT_SYM_OK */
	const struct vt_symbol *sym;  /* owned by the symbolizer: valid until close */
};

#endif
