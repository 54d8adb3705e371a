/* Human-readable units (see units.h). */
#include "units.h"

#include <inttypes.h>
#include <stdio.h>

void vt_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return;
	}
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024.0 && u < 5) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, len, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, unit[u]);
}

void vt_format_seconds(uint64_t ns, char *buf, size_t len)
{
	double s = (double)ns / 1e9;
	if (s >= 10)
		snprintf(buf, len, "%.1f s", s);
	else if (s >= 0.01)
		snprintf(buf, len, "%.3f s", s);
	else
		snprintf(buf, len, "%.6f s", s);
}

const char *vt_count(uint64_t n, const char *one, const char *many, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64 " %s", n, n == 1 ? one : many);
	return buf;
}
