/* vramtrace public API: the few calls a job MAY make. A job never has to:
 * everything else is recorded under LD_PRELOAD alone.
 *
 * The shim (libvramtrace.so) exports these symbols. A program that should
 * also run without the shim looks them up at run time instead of linking:
 *   C:      void (*mark)(const char *) = dlsym(RTLD_DEFAULT, "vramtrace_mark");
 *   Python: ctypes.CDLL(None).vramtrace_mark(b"step 3")   (when preloaded)
 */
#ifndef VRAMTRACE_H
#define VRAMTRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Record a marker with the current time. Text of the form "step N" marks the
 * start of training step N; the analyzer uses step markers, when present, to
 * find the steady state. Safe from any thread; never fails the caller. */
void vramtrace_mark(const char *text);

#ifdef __cplusplus
}
#endif
#endif
