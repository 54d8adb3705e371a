/* vramtrace_mark(): the one call a job may make (include/vramtrace/vramtrace.h).
 * "step N" marks the start of training step N. With a driver and a current
 * context, the device's free/total memory is recorded at the mark too. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "driver_facts.h"
#include "log_open.h"
#include "log_writer.h"
#include "routing.h"
#include "shim.h"
#include "shim_state.h"
#include "vramtrace/vramtrace.h"

static int is_step(const char *text, uint64_t *step)
{
	if (strncmp(text, "step", 4) != 0 || (text[4] != ' ' && text[4] != 0))
		return 0;
	*step = strtoull(text + 4, NULL, 10);
	return 1;
}

VT_EXPORT void vramtrace_mark(const char *text)
{
	if (!text || vt_guard >= VT_GUARD_SHIM || vt_shim_disabled())
		return;
	int saved_errno = errno, outer = vt_guard;
	vt_guard = VT_GUARD_SHIM;
	if (vt_shim_log_ready()) {
		uint64_t step = 0;
		int step_mark = is_step(text, &step);
		vt_log_write_mark(step_mark ? VT_MARK_STEP : VT_MARK_USER, text, step);
		if (vt_driver() && !vt_shim_forked_child()) { /* see vt_shim_forked_child */
			uint8_t device = vt_current_device();
			if (device != VT_DEVICE_UNKNOWN)
				vt_record_meminfo_now(device, VT_MEMINFO_MARK);
		}
	}
	vt_guard = outer;
	errno = saved_errno;
}
