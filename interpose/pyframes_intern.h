/* Process-wide intern table for Python file and function names: text ->
 * VT_REC_PYSTR id, each string written to the log once (see pyframes.h for
 * the guarantees a reader gets). Lock-free open addressing over an mmap'd
 * array; no malloc. */
#ifndef VT_PYFRAMES_INTERN_H
#define VT_PYFRAMES_INTERN_H

#include <stdint.h>

/* Map the table. 0 or -1 (no memory: names are then not recorded). */
int vt_py_intern_init(void);

/* The id for text[0..len), writing its VT_REC_PYSTR record if this process
 * has not yet. 0 when the table is missing or full, or the record could not
 * be written (log off or full). */
uint32_t vt_py_intern(const char *text, uint32_t len);

/* In a fork child: forget every string (the child writes a new log). Runs
 * single-threaded. */
void vt_py_intern_reset(void);

/* Strings interned so far (for tests and the bench). */
uint32_t vt_py_intern_count(void);

#endif
