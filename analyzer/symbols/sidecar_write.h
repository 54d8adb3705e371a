/* The symbol sidecar's writer: DIR/symbols.vtsym, in the format of
 * sidecar_read.h, written on the recording host. */
#ifndef VT_SIDECAR_WRITE_H
#define VT_SIDECAR_WRITE_H

#include <stddef.h>
#include <stdio.h>

#include "stack_store.h"
#include "symbolize.h"

/* Write DIR/symbols.vtsym for the trace in DIR, replacing any earlier one
 * atomically (a temporary file, 0600, renamed into place). Returns 0, or -1
 * with one line on stderr. Frames that cannot be named here are left out
 * (the analyzer then tries the module files, and says what it could not
 * name). */
int vt_sidecar_write(const char *dir);

/* The writer's core: every frame of every stack in st, named with sym
 * (from the module files), to out. *naddrs gets the number of A lines. */
int vt_sidecar_write_store(const struct vt_stack_store *st, struct vt_symbolizer *sym, FILE *out,
			   size_t *naddrs);

#endif
