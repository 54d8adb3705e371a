/* Per-process used memory per NVML (nvml_sample.h).
 *
 * The driver's used memory (cuMemGetInfo) counts every process on the
 * device; NVML (libnvidia-ml, installed with the driver where there is one)
 * tells them apart. The shim asks it only at the moments it already reads
 * cuMemGetInfo for itself (a new peak, exit: peak_sample.c), never per call
 * and never at start-up:
 *   - loading: the first such moment tries dlopen("libnvidia-ml.so.1") with
 *     RTLD_NOLOAD (the job may have it loaded already), then RTLD_LAZY |
 *     RTLD_LOCAL, through the dynamic linker's own dlopen (real_dl.h) so the
 *     shim's dlopen wrapper does not take it for the job's. A failure is
 *     kept: an absent library costs one try in the whole run, and leaves
 *     nothing in dlerror() (vt_own_dlopen). A loaded library stays loaded
 *     (NVML is not made to be unloaded).
 *   - each reading is nvmlInit_v2 ... nvmlShutdown: initialised, NVML holds
 *     the driver's device files open; shut down, it closes them, so the
 *     job's descriptor numbers are as they were after the reading (a job
 *     that initialised NVML itself keeps its reference: NVML counts them).
 *   - the device: the CUDA device's UUID (cuDeviceGetUuid) names the NVML
 *     device, so a CUDA_VISIBLE_DEVICES order does not matter.
 *   - the other processes' command names are read here, from
 *     /proc/PID/comm: by the time the log is read the process may be gone,
 *     or the log on another machine.
 * errno is kept; nothing here touches the current context. In a container
 * with its own PID namespace NVML gives the host's pids: this process is
 * then not recognised (self_bytes unknown) and is counted among the others. */
#define _GNU_SOURCE
#include "nvml_sample.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "driver_facts.h"
#include "log_writer.h"
#include "real_dl.h"
#include "shim_state.h"
#include "vramtrace/env_flag.h"
#include "vramtrace/format.h"

#define NVML_SUCCESS 0
#define NVML_MAX_PROCS 64 /* processes on one device that one reading takes */
#define NVML_NOT_AVAILABLE 0xffffffffffffffffull

/* nvmlProcessInfo_v2_t (the _v2 and _v3 calls) and nvmlProcessInfo_v1_t
 * (the unversioned call), as nvml.h has them */
struct nvml_info_v2 {
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance, compute_instance;
};
struct nvml_info_v1 {
	unsigned int pid;
	unsigned long long used;
};

typedef int (*nvml_void_fn)(void);
typedef int (*nvml_by_uuid_fn)(const char *, void **);
typedef int (*nvml_procs_fn)(void *, unsigned int *, void *);

enum { NVML_UNTRIED, NVML_LOADING, NVML_READY, NVML_ABSENT };
static int nvml_state;
static struct {
	nvml_void_fn init, shutdown;
	nvml_by_uuid_fn by_uuid;
	nvml_procs_fn procs;
	int v1; /* procs takes nvml_info_v1 entries */
} nvml;

static void *nvml_symbol(void *lib, const char *name)
{
	return vt_own_dlsym(lib, name);
}

static int resolve(void *lib)
{
	*(void **)&nvml.init = nvml_symbol(lib, "nvmlInit_v2");
	*(void **)&nvml.shutdown = nvml_symbol(lib, "nvmlShutdown");
	*(void **)&nvml.by_uuid = nvml_symbol(lib, "nvmlDeviceGetHandleByUUID");
	*(void **)&nvml.procs = nvml_symbol(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
	if (!nvml.procs)
		*(void **)&nvml.procs = nvml_symbol(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
	if (!nvml.procs) {
		*(void **)&nvml.procs = nvml_symbol(lib, "nvmlDeviceGetComputeRunningProcesses");
		nvml.v1 = 1;
	}
	return nvml.init && nvml.shutdown && nvml.by_uuid && nvml.procs;
}

/* Loaded and resolved? One thread tries, once; the others skip their
 * reading meanwhile. */
static int nvml_ready(void)
{
	int state = __atomic_load_n(&nvml_state, __ATOMIC_ACQUIRE);
	if (state != NVML_UNTRIED)
		return state == NVML_READY;
	if (!__atomic_compare_exchange_n(&nvml_state, &state, NVML_LOADING, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		return 0;
	void *lib = NULL;
	/* VRAMTRACE_NVML=0: a site that forbids loading libraries into jobs, or
	 * an NVML that misbehaves, keeps the driver's view only */
	if (!vt_env_off("VRAMTRACE_NVML")) {
		lib = vt_own_dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
		if (!lib)
			lib = vt_own_dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
	}
	int ok = lib && resolve(lib);
	__atomic_store_n(&nvml_state, ok ? NVML_READY : NVML_ABSENT, __ATOMIC_RELEASE);
	return ok;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML names devices. */
static void uuid_text(const unsigned char u[16], char out[48])
{
	static const char hex[] = "0123456789abcdef";
	char *p = out + sprintf(out, "GPU-");
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[u[i] >> 4];
		*p++ = hex[u[i] & 15];
	}
	*p = 0;
}

struct proc_used {
	int32_t pid;
	uint64_t bytes;
};

/* The compute processes on device: how many (up to NVML_MAX_PROCS), or -1. */
static int running_processes(uint8_t device, struct proc_used *out)
{
	unsigned char uuid[16];
	char name[48];
	if (!vt_device_uuid(device, uuid))
		return -1;
	uuid_text(uuid, name);
	if (nvml.init() != NVML_SUCCESS)
		return -1;
	void *handle = NULL;
	union {
		struct nvml_info_v2 v2[NVML_MAX_PROCS];
		struct nvml_info_v1 v1[NVML_MAX_PROCS];
	} info;
	unsigned int count = NVML_MAX_PROCS;
	int n = -1;
	if (nvml.by_uuid(name, &handle) == NVML_SUCCESS &&
	    nvml.procs(handle, &count, &info) == NVML_SUCCESS && count <= NVML_MAX_PROCS) {
		for (unsigned int i = 0; i < count; i++) {
			out[i].pid = (int32_t)(nvml.v1 ? info.v1[i].pid : info.v2[i].pid);
			out[i].bytes = nvml.v1 ? info.v1[i].used : info.v2[i].used;
		}
		n = (int)count;
	}
	nvml.shutdown();
	return n;
}

static void read_comm(int32_t pid, char comm[16])
{
	char path[32];
	comm[0] = 0;
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, comm, 15);
	close(fd);
	n = n < 0 ? 0 : n;
	while (n > 0 && comm[n - 1] == '\n')
		n--;
	comm[n] = 0;
}

/* Others first by bytes, most first (unknown sizes last). */
static void sort_by_bytes(struct proc_used *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int k = i; k > 0; k--) {
			uint64_t a = v[k].bytes == NVML_NOT_AVAILABLE ? 0 : v[k].bytes;
			uint64_t b = v[k - 1].bytes == NVML_NOT_AVAILABLE ? 0 : v[k - 1].bytes;
			if (a <= b)
				break;
			struct proc_used t = v[k];
			v[k] = v[k - 1];
			v[k - 1] = t;
		}
}

static void write_record(uint8_t device, uint8_t reason, uint64_t reading_seq,
                         struct proc_used *procs, int n)
{
	int32_t self = (int32_t)getpid();
	uint64_t self_bytes = VT_NVML_UNKNOWN, others_bytes = 0;
	int others = 0;
	for (int i = 0; i < n; i++) {
		if (procs[i].pid == self) {
			self_bytes = procs[i].bytes;
			continue;
		}
		if (procs[i].bytes != NVML_NOT_AVAILABLE)
			others_bytes += procs[i].bytes;
		procs[others++] = procs[i];
	}
	sort_by_bytes(procs, others);
	uint32_t listed = others < (int)VT_NVML_LISTED ? (uint32_t)others : VT_NVML_LISTED;
	uint32_t size =
	    (uint32_t)(sizeof(struct vt_nvml_rec) + listed * sizeof(struct vt_nvml_proc));
	struct vt_nvml_rec *rec = vt_log_reserve(size);
	if (!rec)
		return;
	rec->device = device;
	rec->reason = reason;
	rec->nlisted = (uint16_t)listed;
	rec->seq = vt_log_next_seq();
	rec->t_ns = vt_log_now_ns();
	rec->reading_seq = reading_seq;
	rec->self_bytes = self_bytes;
	rec->others_bytes = others_bytes;
	rec->others = (uint32_t)others;
	for (uint32_t i = 0; i < listed; i++) {
		rec->procs[i].pid = procs[i].pid;
		rec->procs[i].used_bytes = procs[i].bytes;
		read_comm(procs[i].pid, rec->procs[i].comm);
	}
	vt_log_commit(rec, VT_REC_NVML, size);
}

/* nvmlInit can take milliseconds (more without the driver's persistence
 * mode), and a PEAK reading runs inside the job's free: after each reading
 * the next PEAK one waits 99 times as long as this one took, so NVML costs
 * a job at most 1 % of its time. The EXIT reading never waits. */
static uint64_t next_peak_ns;

void vt_nvml_sample(uint8_t device, uint8_t reason, uint64_t reading_seq)
{
	if (!reading_seq || device == VT_DEVICE_UNKNOWN)
		return;
	uint64_t start = vt_log_now_ns();
	if (reason == VT_MEMINFO_PEAK && start < __atomic_load_n(&next_peak_ns, __ATOMIC_RELAXED))
		return;
	int outer = vt_guard, saved_errno = errno;
	vt_guard = VT_GUARD_SHIM; /* what NVML loads or looks up is the shim's */
	struct proc_used procs[NVML_MAX_PROCS];
	int n;
	if (nvml_ready() && (n = running_processes(device, procs)) >= 0)
		write_record(device, reason, reading_seq, procs, n);
	uint64_t end = vt_log_now_ns();
	__atomic_store_n(&next_peak_ns, end + 99 * (end - start), __ATOMIC_RELAXED);
	vt_guard = outer;
	errno = saved_errno;
}
