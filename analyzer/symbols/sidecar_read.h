/* The symbol sidecar: DIR/symbols.vtsym, names resolved on the recording
 * host; its format and its reader (the writer: sidecar_write.h).
 *
 * `vramtrace run` calls vt_sidecar_write(DIR) after the job exits: every
 * (module, offset) that a stack in the trace uses is symbolized with the
 * module files of that host and written here, so the trace still reads with
 * names after the binary is deleted, rebuilt, or the trace is copied to
 * another machine. The analyzer looks here first (symbolize.h).
 *
 * Format, version 1: UTF-8/bytes text, one item a line, fields separated by
 * one TAB. Inside a field, '\\' '\t' '\n' are written \\ \t \n and every other
 * byte below 0x20 (and 0x7f) as \xHH; an empty field means "none".
 *
 *   vtsym<TAB>1                                  first line, exactly
 *   # anything                                   comment
 *   M<TAB>n<TAB>build-id-hex<TAB>path            module number n (1, 2, ...);
 *                                                build id empty if it had none
 *   A<TAB>n<TAB>offset-hex<TAB>k                 an address in module n (the
 *                                                ELF virtual address); the k
 *                                                F lines that follow name it
 *   F<TAB>function<TAB>file<TAB>line<TAB>inlined innermost (deepest inline)
 *                                                first; inlined = 1 when it is
 *                                                inlined into the next F line
 *   E<TAB>count                                  last line: count of A lines
 *
 * Example:
 *   vtsym	1
 *   M	1	8f3a...e1	/home/me/client
 *   A	1	1189	2
 *   F	add_bias	/home/me/util.h	12	1
 *   F	upload	/home/me/client.c	40	0
 *   E	1
 *
 * The reader trusts nothing: numbers are range-checked (n <= 1000000, k <= 64,
 * line < 2^31, offsets 16 hex digits at most, build ids <= 32 bytes), lines
 * are at most 64 KiB, an A whose F lines are missing or malformed is dropped,
 * an unknown line kind is skipped; each problem is one warning naming the
 * line (vt_sidecar_load prints the first and the count on stderr). A file without its E line was cut short:
 * everything before the cut is still used. A later version number is refused.
 */
#ifndef VT_SIDECAR_READ_H
#define VT_SIDECAR_READ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "frame_names.h"
#include "stack_store.h" /* struct vt_module_info */

#define VT_SIDECAR_NAME "symbols.vtsym"
#define VT_SIDECAR_VERSION 1
#define VT_SIDECAR_MAX_FRAMES 64u /* F lines of one A line, at most */

struct vt_sidecar;

/* Load a sidecar file. NULL when it cannot be used at all; then err holds a
 * one-line reason, or is empty when the file simply does not exist. */
struct vt_sidecar *vt_sidecar_load(const char *path, char *err, size_t errlen);

/* Parse from memory (fuzz targets, tests). `name` is used in warnings. */
struct vt_sidecar *vt_sidecar_parse(const char *data, size_t len, const char *name, char *err,
				    size_t errlen);
void vt_sidecar_free(struct vt_sidecar *sc);

/* Names for (module, offset): the module is matched by build id when it has
 * one, else by path. Returns 0 and fills out (status VT_SYM_OK, source
 * "sidecar"; strings owned by the sidecar), or -1 when not in the sidecar. */
int vt_sidecar_lookup(const struct vt_sidecar *sc, const struct vt_module_info *mod,
		      uint64_t offset, struct vt_frame_names *out);

size_t vt_sidecar_addresses(const struct vt_sidecar *sc); /* A entries kept */
unsigned vt_sidecar_warnings(const struct vt_sidecar *sc);
int vt_sidecar_complete(const struct vt_sidecar *sc);     /* E line seen and right */
/* "name:line: reason" of the first problem, NULL if none. */
const char *vt_sidecar_first_warning(const struct vt_sidecar *sc);

#endif
