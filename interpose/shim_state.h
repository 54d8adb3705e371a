/* What every entry point of the shim checks first (shim_state.c): the
 * process-wide switch (VRAMTRACE_DISABLE), the calling thread's re-entrancy
 * guard, and whether this is a fork child of the process the shim started
 * in. Nothing here calls any other file of the shim. */
#ifndef VT_SHIM_STATE_H
#define VT_SHIM_STATE_H

/* ---- configuration ------------------------------------------------------ */
/* Read the environment once (idempotent, no malloc). Safe before the
 * constructor has run: every entry point calls it. */
void vt_shim_config_load(void);
/* VRAMTRACE_DISABLE=1: pure pass-through, nothing recorded or routed. */
int vt_shim_disabled_slow(void);
extern int vt_shim_config_state; /* 0 not read yet, 1 enabled, 2 disabled */
static inline int vt_shim_disabled(void)
{
	int s = __atomic_load_n(&vt_shim_config_state, __ATOMIC_ACQUIRE);
	return __builtin_expect(s != 0, 1) ? s == 2 : vt_shim_disabled_slow();
}

/* ---- the process the shim started in ------------------------------------ */
/* The constructor notes the pid it runs in (again in each exec'd image). */
void vt_shim_note_start_pid(void);
/* A fork child (not exec'd since) of the process the shim started in. The
 * shim never calls the driver on its own there: a driver lock held by
 * another thread of the parent at fork time stays locked in the child. */
int vt_shim_forked_child(void);

/* ---- re-entrancy guard --------------------------------------------------- */
/* What the calling thread is doing, in initial-exec TLS (no allocation, no
 * lock on access). A wrapper or dlsym called during the shim's own work
 * passes straight through; one called while a wrapper is inside the real
 * driver is part of that call and passes through (the outermost call is the
 * one recorded); one called while the shim works is recorded unless the
 * shim itself called it (a signal handler interrupting the shim did). */
enum vt_guard_level {
	VT_GUARD_NONE = 0,   /* the job's own code */
	VT_GUARD_DRIVER = 1, /* inside a real driver call made by a wrapper */
	VT_GUARD_SHIM = 2,   /* the shim's own work */
	VT_GUARD_EXITED = 3, /* the log is finished (exit): everything passes */
};
extern __thread int vt_guard __attribute__((tls_model("initial-exec")));

#endif
