/* The switch, the start pid and the re-entrancy guard (shim_state.h). */
#define _GNU_SOURCE
#include "shim_state.h"

#include <unistd.h>

#include "vramtrace/env_flag.h"

__thread int vt_guard __attribute__((tls_model("initial-exec")));

int vt_shim_config_state;

void vt_shim_config_load(void)
{
	if (__atomic_load_n(&vt_shim_config_state, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&vt_shim_config_state, vt_env_flag("VRAMTRACE_DISABLE") ? 2 : 1,
	                 __ATOMIC_RELEASE);
}

int vt_shim_disabled_slow(void)
{
	vt_shim_config_load();
	return __atomic_load_n(&vt_shim_config_state, __ATOMIC_ACQUIRE) == 2;
}

static pid_t start_pid; /* set by the constructor, again in each exec'd image */

void vt_shim_note_start_pid(void)
{
	start_pid = getpid();
}

int vt_shim_forked_child(void)
{
	return start_pid && getpid() != start_pid;
}
