/* How much memory the analyzer may still take, and how much the full model
 * of a trace is likely to want: so that a trace too big for the machine is
 * named before the load, not found out by the kernel's OOM killer half a
 * minute into it (Linux overcommits: malloc rarely fails, the process is
 * killed instead, and nomem.c's line never comes). */
#ifndef VT_MEM_BUDGET_H
#define VT_MEM_BUDGET_H

#include <stdint.h>

/* The least of what the machine has available (MemAvailable), what the
 * process's cgroup (v2) still allows, and what its address-space and data
 * limits leave once `to_map` bytes of files are mapped too (the reader maps
 * the logs: address space, not memory); UINT64_MAX when none of them says
 * anything. */
uint64_t vt_mem_available(uint64_t to_map);

/* What the full model of a trace with this many bytes of logs may reach at
 * its peak: 1.6 times the logs, as measured on generated traces (422 MiB for
 * 264 MiB, 4192 MiB for 2638 MiB: ~85 bytes per allocation against ~53
 * bytes of log). Real traces carry more log per allocation (copies, stacks),
 * so this errs high. */
static inline uint64_t vt_full_model_estimate(uint64_t log_bytes)
{
	return log_bytes / 5 * 8;
}

#endif
