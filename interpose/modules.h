/* Loaded-module records: what the analyzer needs to name a frame offline.
 *
 * The shim writes a VT_REC_MODULE record (path, load bias, lowest/highest
 * PT_LOAD address, GNU build id read from the mapped PT_NOTE) for every
 * object that is loaded, and an UNLOAD record when it goes away, by diffing
 * dl_iterate_phdr's list against what this process's log already holds:
 *   - at first use (vt_modules_ensure, called before the first stack record),
 *   - after every dlopen / dlmopen / dlclose the shim's wrappers see
 *     (dlopen_wrap.c calls vt_modules_loader_changed),
 *   - whenever a new stack is recorded and the loader's load/unload counters
 *     (dlpi_adds/dlpi_subs) moved, which also catches libc-internal loads the
 *     wrappers never see.
 * Not a hot path: a mutex serialises the diff. In a forked child the list is
 * forgotten and written again into the child's own log. */
#ifndef VT_MODULES_H
#define VT_MODULES_H

#include <stdint.h>

/* Make sure this process's log holds the current module list. Cheap when
 * nothing changed since the last call (one dl_iterate_phdr step). */
void vt_modules_ensure(void);

/* Diff and record now. */
void vt_modules_sync(void);

/* The loader's list may have changed (a dlopen, dlmopen or dlclose): a new
 * generation, then diff and record. */
void vt_modules_loader_changed(void);

/* Generation of the latest records (bumped by each dlopen/dlclose seen). */
uint32_t vt_modules_generation(void);

/* Records written so far by this process (tests). */
uint64_t vt_modules_records_written(void);

#endif
