/* A stand-in for libnvidia-ml.so.1 over the simulated driver: the few
 * entry points the shim calls (interpose/nvml_sample.c). It knows the
 * simulated devices by their UUIDs (sim_context.c: "vramtrace-sim-0" with
 * the ordinal's digit last) and lists, as the compute processes on each:
 *   - VT_FAKE_NVML_OTHERS: "PID:BYTES,PID:BYTES" (plain byte counts), the
 *     same on every device; a test holds their bytes back on the simulated
 *     device with VT_SIM_CONTEXT_RESERVE, so the driver's used counts them;
 *   - the calling process, with the rest of what the simulated driver
 *     charges (vtsim_live_bytes, the reservation included) as NVML counts a
 *     process's context with it.
 * VT_FAKE_NVML_LOG=FILE appends a line per call, for tests that count them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vtsim.h"

#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define MAX_DEVICES 8
#define MAX_OTHERS 16

struct process_info { /* nvmlProcessInfo_t (_v2, _v3) */
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance, compute_instance;
};

static void note(const char *what)
{
	const char *path = getenv("VT_FAKE_NVML_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;
	if (f) {
		fprintf(f, "%s\n", what);
		fclose(f);
	}
}

int nvmlInit_v2(void)
{
	note("init");
	return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
	note("shutdown");
	return NVML_SUCCESS;
}

/* The UUID text of simulated device dev, as the shim writes it. */
static void sim_uuid_text(int dev, char out[48])
{
	char raw[16] = "vramtrace-sim-0";
	raw[15] = (char)('0' + dev);
	char *p = out + sprintf(out, "GPU-");
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		p += sprintf(p, "%02x", (unsigned char)raw[i]);
	}
}

int nvmlDeviceGetHandleByUUID(const char *uuid, void **device)
{
	note("by_uuid");
	if (!uuid || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int dev = 0; dev < MAX_DEVICES; dev++) {
		char want[48];
		sim_uuid_text(dev, want);
		if (!strcmp(uuid, want)) {
			*device = (void *)(uintptr_t)(dev + 1);
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

/* VT_FAKE_NVML_OTHERS into v: how many. */
static unsigned others(struct process_info *v)
{
	const char *p = getenv("VT_FAKE_NVML_OTHERS");
	unsigned n = 0;
	while (p && *p && n < MAX_OTHERS) {
		char *end;
		unsigned long pid = strtoul(p, &end, 10);
		if (*end != ':')
			break;
		unsigned long long bytes = strtoull(end + 1, &end, 10);
		v[n++] = (struct process_info){.pid = (unsigned)pid, .used = bytes};
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *device, unsigned int *count,
                                            struct process_info *infos)
{
	note("processes");
	int dev = (int)(uintptr_t)device - 1;
	if (dev < 0 || dev >= MAX_DEVICES || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	struct process_info all[MAX_OTHERS + 1];
	unsigned n = 1 + others(all + 1);
	unsigned long long charged = vtsim_live_bytes(dev);
	for (unsigned i = 1; i < n; i++)
		charged -= charged > all[i].used ? all[i].used : charged;
	all[0] = (struct process_info){.pid = (unsigned)getpid(), .used = charged};
	if (*count < n) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	memcpy(infos, all, n * sizeof all[0]);
	*count = n;
	return NVML_SUCCESS;
}
