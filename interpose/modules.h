/* Loaded-module records: what the analyzer needs to name a frame offline.
 *
 * The shim writes a VT_REC_MODULE record (path, load bias, lowest/highest
 * PT_LOAD address, GNU build id read from the mapped PT_NOTE) for every
 * object that is loaded, and an UNLOAD record when it goes away, by diffing
 * dl_iterate_phdr's list against what this process's log already holds:
 *   - at first use (vt_modules_ensure, called before the first stack record),
 *   - after every dlopen / dlmopen / dlclose the shim's wrappers see,
 *   - whenever a new stack is recorded and the loader's load/unload counters
 *     (dlpi_adds/dlpi_subs) moved, which also catches libc-internal loads the
 *     wrappers never see.
 * Not a hot path: a mutex serialises the diff. In a forked child the list is
 * forgotten and written again into the child's own log.
 *
 * The wrappers (dlopen, dlmopen, dlclose) are exported by the shim and call
 * the real functions found with dlvsym(RTLD_NEXT, ..., "GLIBC_2.34"), falling
 * back to "GLIBC_2.2.5" — never through dlsym, which the shim also wraps. Since
 * glibc searches the *caller's* DT_RPATH/DT_RUNPATH and namespace and the
 * caller the real dlopen sees is the shim, a bare-name dlopen that fails is
 * retried along the real caller's RUNPATH (or RPATH), with $ORIGIN expanded,
 * and a caller in a dlmopen namespace is served in that namespace.
 */
#ifndef VT_MODULES_H
#define VT_MODULES_H

#include <stdint.h>

/* Make sure this process's log holds the current module list. Cheap when
 * nothing changed since the last call (one dl_iterate_phdr step). */
void vt_modules_ensure(void);

/* Diff and record now (after a dlopen/dlclose). */
void vt_modules_sync(void);

/* Generation of the latest records (bumped by each dlopen/dlclose seen). */
uint32_t vt_modules_generation(void);

/* Records written so far by this process (tests). */
uint64_t vt_modules_records_written(void);

#endif
