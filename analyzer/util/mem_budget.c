/* The memory the analyzer may still take (see mem_budget.h). */
#define _GNU_SOURCE
#include "mem_budget.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static uint64_t least(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* MemAvailable of /proc/meminfo, in bytes. */
static uint64_t machine_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	uint64_t kib = 0, found = UINT64_MAX;
	char line[256];
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kib) == 1) {
			found = kib * 1024u;
			break;
		}
	if (f)
		fclose(f);
	return found;
}

/* One number in a cgroup file; UINT64_MAX for "max" or no file. */
static uint64_t cgroup_value(const char *group, const char *file)
{
	char path[4096 + 64];
	snprintf(path, sizeof path, "/sys/fs/cgroup%s/%s", group, file);
	FILE *f = fopen(path, "re");
	uint64_t v = UINT64_MAX;
	if (f && fscanf(f, "%" SCNu64, &v) != 1)
		v = UINT64_MAX;
	if (f)
		fclose(f);
	return v;
}

/* What this process's cgroup and every group above it still allow (cgroup
 * v2: the "0::/path" line of /proc/self/cgroup). */
static uint64_t cgroup_available(void)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096], group[4096] = "";
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "0::", 3)) {
			snprintf(group, sizeof group, "%s", line + 3);
			group[strcspn(group, "\n")] = 0;
			break;
		}
	if (f)
		fclose(f);
	uint64_t left = UINT64_MAX;
	for (int depth = 0; group[0] && depth < 64; depth++) {
		uint64_t max = cgroup_value(group, "memory.max");
		uint64_t cur = cgroup_value(group, "memory.current");
		if (max != UINT64_MAX && cur != UINT64_MAX)
			left = least(left, max > cur ? max - cur : 0);
		char *slash = strrchr(group, '/');
		if (!slash || slash == group)
			break; /* the root group has no limit files */
		*slash = 0;
	}
	return left;
}

/* What RLIMIT_AS (with to_map more mapped) and RLIMIT_DATA leave, from
 * /proc/self/statm's sizes. */
static uint64_t rlimit_available(uint64_t to_map)
{
	unsigned long long pages_total = 0, resident, shared, text, lib, data = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	if (f && fscanf(f, "%llu %llu %llu %llu %llu %llu", &pages_total, &resident, &shared, &text,
	                &lib, &data) != 6)
		pages_total = data = 0;
	if (f)
		fclose(f);
	long page = sysconf(_SC_PAGESIZE);
	uint64_t in_use[2] = {pages_total * (uint64_t)(page > 0 ? page : 4096) + to_map,
	                      data * (uint64_t)(page > 0 ? page : 4096)};
	static const int which[2] = {RLIMIT_AS, RLIMIT_DATA};
	uint64_t left = UINT64_MAX;
	for (int i = 0; i < 2; i++) {
		struct rlimit rl;
		if (getrlimit(which[i], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
			left = least(left, rl.rlim_cur > in_use[i] ? rl.rlim_cur - in_use[i] : 0);
	}
	return left;
}

uint64_t vt_mem_available(uint64_t to_map)
{
	return least(machine_available(), least(cgroup_available(), rlimit_available(to_map)));
}
