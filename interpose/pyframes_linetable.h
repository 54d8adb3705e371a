/* Line numbers from CPython 3.11+ location tables (co_linetable), decoded by
 * the shim itself: PyCode_Addr2Line() of 3.12+ consults sys.monitoring data
 * that another thread may be rewriting while ours runs without the GIL; the
 * table bytes themselves are immutable. Format: CPython's
 * Objects/locations.md. */
#ifndef VT_PYFRAMES_LINETABLE_H
#define VT_PYFRAMES_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* Source line of the code unit at byte offset addr (a multiple of 2), given
 * the table and co_firstlineno. A negative addr (frame not started) gives
 * firstlineno; an entry without location, or addr past the table, gives -1. */
int vt_py_location_line(const uint8_t *table, size_t len, int firstlineno, int addr);

#endif
