/* The shim's measure of its own time, summarized (recording_cost.h). */
#include "recording_cost.h"

#include <stdio.h>
#include <string.h>

#include "units.h"

void vt_self_cost_from_header(const struct vt_file_header *h, struct vt_self_cost *out)
{
	*out = (struct vt_self_cost){
	    .calls = h->self_calls,
	    .timed = h->self_timed,
	    .est_ns = h->self_est_ns,
	    .tail_calls = h->self_tail_calls,
	    .first_calls = h->self_first_calls,
	    .first_ns = h->self_first_ns,
	};
	memcpy(out->hist, h->self_hist, sizeof out->hist);
	out->stacks = h->stack_captures;
	out->memo_hits = h->stack_memo_hits;
	out->memo_verified = h->stack_memo_verified;
	out->memo_mismatches = h->stack_memo_mismatches;
}

/* A hostile header can say anything: keep every figure a uint64_t can hold
 * (the JSON writes them as integers; a larger double would not convert). */
static double capped(double ns)
{
	return ns < 1.8e19 ? ns : 1.8e19;
}

int vt_self_cost_summarize(const struct vt_self_cost *c, uint64_t run_ns,
                           struct vt_self_cost_summary *out)
{
	if ((c->timed == 0 && c->first_calls == 0) || c->timed > c->calls)
		return -1;
	*out = (struct vt_self_cost_summary){
	    .calls = c->first_calls + c->calls + c->tail_calls,
	    .timed = c->timed,
	    .have_rate = c->timed > 0,
	    .first_calls = c->first_calls,
	    .first_ns = capped((double)c->first_ns),
	};
	out->mean_ns = out->have_rate ? capped((double)c->est_ns / (double)c->calls) : 0;
	/* the tail's calls were not timed: they cost what the others did */
	out->total_ns =
	    capped(out->first_ns + out->mean_ns * ((double)c->calls + (double)c->tail_calls));
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
	char mean[32], total[32], first[32], calls[32], median[48] = "", run[32] = "";
	format_ns(s->mean_ns, mean, sizeof mean);
	format_ns(s->total_ns, total, sizeof total);
	format_ns(s->first_ns, first, sizeof first);
	format_count(s->calls, calls, sizeof calls);
	if (run_ns)
		vt_format_seconds(run_ns, run, sizeof run);
	if (!s->have_rate) {
		snprintf(buf, len,
		         "%s setting up its recording in the first call; its %s calls too few to "
		         "time the others (one in %u is)",
		         first, calls, VT_SELF_SAMPLE_EVERY);
		return;
	}
	if (s->median_hi_ns)
		snprintf(median, sizeof median, " (median %llu-%llu ns)",
		         (unsigned long long)s->median_lo_ns,
		         (unsigned long long)s->median_hi_ns - 1);
	int n = snprintf(buf, len, "%s a call on average%s, %s in all over %s calls", mean, median,
	                 total, calls);
	if (s->first_calls && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " (%s of it setting up %s recording)",
		              first, s->first_calls > 1 ? "each thread's" : "its");
	if (!run_ns || n <= 0 || (size_t)n >= len)
		return;
	if (s->share > 1) /* threads at once: their times add up past the span */
		snprintf(buf + n, len - (size_t)n,
		         ", %.2g times the %s recorded (summed over threads that ran at once)",
		         s->share, run);
	else
		snprintf(buf + n, len - (size_t)n, ", %.2g %% of the %s recorded", 100 * s->share,
		         run);
}

void vt_own_time_text(double total_ns, uint64_t wall_ns, char *buf, size_t len)
{
	if (wall_ns && total_ns > (double)wall_ns)
		snprintf(
		    buf, len,
		    "vramtrace's own time %.2f ms summed over threads and processes (more than "
		    "the %.2f ms the job ran: they ran at once)",
		    total_ns / 1e6, (double)wall_ns / 1e6);
	else
		snprintf(buf, len, "vramtrace's own time %.2f ms", total_ns / 1e6);
}

int vt_stack_counts_text(const struct vt_self_cost *c, char *buf, size_t len)
{
	if (!c->stacks || !len)
		return 0;
	char stacks[32], verified[32];
	format_count(c->stacks, stacks, sizeof stacks);
	/* a hostile header may claim more hits than stacks */
	double share =
	    c->memo_hits <= c->stacks ? 100.0 * (double)c->memo_hits / (double)c->stacks : 100.0;
	int n = snprintf(buf, len, "%s stack%s taken, %.0f %% from the stack memo", stacks,
	                 c->stacks == 1 ? "" : "s", share);
	if (c->memo_verified && n > 0 && (size_t)n < len) {
		format_count(c->memo_verified, verified, sizeof verified);
		if (c->memo_mismatches)
			snprintf(buf + n, len - (size_t)n,
			         "; %s of those checked against the unwinder: %llu DIFFERED (the "
			         "recorded stack is the unwinder's)",
			         verified, (unsigned long long)c->memo_mismatches);
		else
			snprintf(buf + n, len - (size_t)n,
			         "; %s of those checked against the unwinder: none differed",
			         verified);
	}
	return 1;
}
