/* The driver's view of used memory at moments the shim chooses, so that the
 * job pays nothing per call for it (accounting.h reads them).
 *
 * The shim does not know what a free gives back (a FREE record holds the
 * address only), so it cannot count live bytes. What it counts is bytes
 * allocated on each device since its last reading; once they reach the
 * trigger (64 MiB, or 1/16 of the used memory last read if that is less,
 * at least 1 MiB) the device is armed, and the next free on a thread whose
 * current context is on that device reads cuMemGetInfo before the real free
 * runs. Live memory is at a local maximum right before a free, so a job
 * that grows and then shrinks is read at its top, not on the way up.
 *
 * The reading is recorded (VT_MEMINFO_PEAK) only when used memory passed the
 * highest PEAK reading so far, and readings are at least
 * VT_PEAK_INTERVAL_NS apart: a job allocating and freeing in a loop pays for
 * at most a few driver calls a second.
 *
 * Where it runs, and why that is safe:
 *   - inside the wrapper of the job's own free, before the real call: the
 *     job holds no driver lock there (the driver takes its locks inside the
 *     call), and the thread is the one that is about to call the driver
 *     anyway;
 *   - in the job's current context: nothing here sets, pushes or pops a
 *     context, and cuMemGetInfo leaves no error state behind (the driver
 *     API has no last-error; a failed reading is dropped);
 *   - never in a fork child (a driver lock held by another thread of the
 *     parent stays locked there) and never from a signal handler of the
 *     shim's own (it installs none); a job that frees from a signal handler
 *     calls the driver there itself;
 *   - at exit from the on_exit handler, which runs before the CUDA runtime's
 *     own teardown (registered later, so run earlier); if the context is
 *     already gone, the call fails and nothing is recorded.
 * The real cuMemGetInfo is called through its real pointer: the reading is
 * never recorded as a call of the job's. Each recorded PEAK reading and the
 * EXIT reading are followed by NVML's per-process view of the device where
 * libnvidia-ml is installed (nvml_sample.c). */
#define _GNU_SOURCE
#include "peak_sample.h"

#include <errno.h>

#include "driver_facts.h"
#include "log_open.h"
#include "log_writer.h"
#include "nvml_sample.h"
#include "routing.h"
#include "shim_state.h"

#define VT_PEAK_TRIGGER_MAX (64ull << 20)
#define VT_PEAK_TRIGGER_MIN (1ull << 20)
#define VT_PEAK_INTERVAL_NS 250000000ull /* at most 4 readings a second */

uint64_t vt_peak_grown[256];
uint64_t vt_peak_trigger[256] = {[0 ... 255] = VT_PEAK_TRIGGER_MAX};
unsigned char vt_peak_armed;

static unsigned char armed_device[256];
static uint64_t peak_used[256];  /* highest PEAK reading recorded */
static uint64_t last_reading_ns; /* of any PEAK reading (0: none yet) */

void vt_peak_arm(uint8_t device)
{
	if (device == VT_DEVICE_UNKNOWN)
		return;
	__atomic_store_n(&armed_device[device], 1, __ATOMIC_RELAXED);
	__atomic_store_n(&vt_peak_armed, 1, __ATOMIC_RELAXED);
}

static uint64_t trigger_after(uint64_t used)
{
	uint64_t t = used / 16;
	if (t > VT_PEAK_TRIGGER_MAX)
		t = VT_PEAK_TRIGGER_MAX;
	return t < VT_PEAK_TRIGGER_MIN ? VT_PEAK_TRIGGER_MIN : t;
}

/* Too soon after the last reading? (the first one is never too soon) */
static int too_soon(uint64_t now_ns)
{
	uint64_t last = __atomic_load_n(&last_reading_ns, __ATOMIC_RELAXED);
	return last && now_ns - last < VT_PEAK_INTERVAL_NS;
}

static void read_peak(uint8_t device)
{
	uint64_t free_bytes, total_bytes;
	__atomic_store_n(&last_reading_ns, vt_log_now_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&armed_device[device], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&vt_peak_grown[device], 0, __ATOMIC_RELAXED);
	if (!vt_read_meminfo(&free_bytes, &total_bytes))
		return;
	uint64_t used = total_bytes > free_bytes ? total_bytes - free_bytes : 0;
	__atomic_store_n(&vt_peak_trigger[device], trigger_after(used), __ATOMIC_RELAXED);
	if (used <= __atomic_load_n(&peak_used[device], __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&peak_used[device], used, __ATOMIC_RELAXED);
	uint64_t seq = vt_write_meminfo(device, VT_MEMINFO_PEAK, free_bytes, total_bytes);
	vt_nvml_sample(device, VT_MEMINFO_PEAK, seq);
}

static int any_armed(void)
{
	for (unsigned d = 0; d < VT_DEVICE_UNKNOWN; d++)
		if (__atomic_load_n(&armed_device[d], __ATOMIC_RELAXED))
			return 1;
	return 0;
}

void vt_peak_sample_before_free_slow(void)
{
	if (vt_shim_forked_child() || too_soon(vt_log_now_ns()))
		return;
	uint8_t device = vt_current_device();
	if (device != VT_DEVICE_UNKNOWN && __atomic_load_n(&armed_device[device], __ATOMIC_RELAXED))
		read_peak(device);
	if (!any_armed())
		__atomic_store_n(&vt_peak_armed, 0, __ATOMIC_RELAXED);
}

void vt_peak_sample_at_exit(void)
{
	/* never creates the log: a process that never used a device has no
	 * reading to take */
	if (__atomic_load_n(&vt_shim_log_state, __ATOMIC_ACQUIRE) != VT_LOG_READY || !vt_driver() ||
	    vt_shim_forked_child())
		return;
	int outer = vt_guard, saved_errno = errno;
	vt_guard = VT_GUARD_SHIM; /* whatever the driver calls back is its own */
	uint8_t device = vt_current_device();
	if (device != VT_DEVICE_UNKNOWN &&
	    __atomic_load_n(&vt_device_seen[device], __ATOMIC_RELAXED))
		vt_nvml_sample(device, VT_MEMINFO_EXIT,
		               vt_record_meminfo_now(device, VT_MEMINFO_EXIT));
	vt_guard = outer;
	errno = saved_errno;
}

void vt_peak_forget(void)
{
	for (unsigned d = 0; d < 256; d++) {
		vt_peak_grown[d] = 0;
		vt_peak_trigger[d] = VT_PEAK_TRIGGER_MAX;
		armed_device[d] = 0;
		peak_used[d] = 0;
	}
	vt_peak_armed = 0;
	last_reading_ns = 0;
}
