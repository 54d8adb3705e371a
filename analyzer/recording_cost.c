/* The shim's measure of its own time, summarized (recording_cost.h). */
#include "recording_cost.h"

#include <stdio.h>

#include "units.h"

int vt_self_cost_summarize(const struct vt_self_cost *c, uint64_t run_ns,
                           struct vt_self_cost_summary *out)
{
	if (c->timed == 0 || c->timed > c->calls)
		return -1;
	/* the tail's calls were not timed: they cost what the others did */
	double calls = (double)c->calls + (double)c->tail_calls;
	*out = (struct vt_self_cost_summary){.calls = c->calls + c->tail_calls, .timed = c->timed};
	out->mean_ns = (double)c->est_ns / (double)c->calls;
	out->total_ns = out->mean_ns * calls;
	out->share = run_ns ? out->total_ns / (double)run_ns : 0;
	/* the histogram's own count: it and `timed` are added one after the
	 * other, so a process killed between them leaves them one apart */
	uint64_t n = 0, seen = 0;
	for (unsigned b = 0; b < VT_SELF_HIST; b++)
		n += c->hist[b];
	for (unsigned b = 0; b < VT_SELF_HIST && n; b++) {
		seen += c->hist[b];
		if (2 * seen >= n) {
			out->median_lo_ns = b == 0 ? 0 : 1ull << b;
			out->median_hi_ns = 1ull << (b + 1);
			break;
		}
	}
	return 0;
}

static void format_ns(double ns, char *buf, size_t len)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.1f s", ns / 1e9);
}

static void format_count(uint64_t n, char *buf, size_t len)
{
	if (n < 10000)
		snprintf(buf, len, "%llu", (unsigned long long)n);
	else if (n < 1000000)
		snprintf(buf, len, "%.1f k", (double)n / 1e3);
	else
		snprintf(buf, len, "%.2f M", (double)n / 1e6);
}

void vt_self_cost_text(const struct vt_self_cost_summary *s, uint64_t run_ns, char *buf, size_t len)
{
	char mean[32], total[32], calls[32], median[48] = "", run[32];
	format_ns(s->mean_ns, mean, sizeof mean);
	format_ns(s->total_ns, total, sizeof total);
	format_count(s->calls, calls, sizeof calls);
	if (s->median_hi_ns)
		snprintf(median, sizeof median, " (median %llu-%llu ns)",
		         (unsigned long long)s->median_lo_ns,
		         (unsigned long long)s->median_hi_ns - 1);
	int n = snprintf(buf, len, "%s a call on average%s, %s in all over %s calls", mean, median,
	                 total, calls);
	if (run_ns && n > 0 && (size_t)n < len) {
		vt_format_seconds(run_ns, run, sizeof run);
		snprintf(buf + n, len - (size_t)n, ", %.2g %% of the %s recorded", 100 * s->share,
		         run);
	}
}
