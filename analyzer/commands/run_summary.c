/* The run's short answer (run_summary.h), from the same report and
 * out-of-memory post-mortem the `report` and `oom` commands build. */
#include "run_summary.h"

#include <string.h>

#include "model.h"
#include "model_load.h"
#include "oom.h"
#include "report.h"
#include "units.h"

/* dir as the user would type it: in single quotes when the shell would
 * split or expand it. */
static void put_shell_word(const char *dir, FILE *to)
{
	if (!dir[strspn(dir,
	                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._+-")]) {
		fputs(dir, to);
		return;
	}
	fputc('\'', to);
	for (const char *c = dir; *c; c++)
		fputs(*c == '\'' ? "'\\''" : (char[]){*c, 0}, to);
	fputc('\'', to);
}

/* "peak GPU 0 1.77 GiB (44% of 4.00 GiB), GPU 1 ..." */
static void put_peaks(const struct vt_model *m, FILE *to)
{
	const char *sep = "peak ";
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		const struct vt_device *dev = &m->devices[d];
		if (!dev->seen)
			continue;
		char peak[32], cap[32];
		vt_format_bytes(dev->peak_bytes, peak, sizeof peak);
		fprintf(to, "%sGPU %d %s", sep, d, peak);
		if (dev->total_bytes) {
			vt_format_bytes(dev->total_bytes, cap, sizeof cap);
			fprintf(to, " (%.0f%% of %s)",
			        100.0 * (double)dev->peak_bytes / (double)dev->total_bytes, cap);
		}
		sep = ", ";
	}
	if (*sep == 'p')
		fputs("no device memory allocated", to);
}

/* "; flags: a, b" (each kind once, in the report's order), or "; no flags" */
static void put_flags(const struct vt_findings *f, FILE *to)
{
	int shown[VT_FINDING_KIND_COUNT] = {0};
	const char *sep = "; flags: ";
	for (uint32_t i = 0; i < f->n; i++) {
		int kind = f->v[i].kind;
		if (kind < 0 || kind >= VT_FINDING_KIND_COUNT || shown[kind]++)
			continue;
		fprintf(to, "%s%s", sep, vt_finding_kind_name(kind));
		sep = ", ";
	}
	if (*sep == ';')
		fputs("; no flags", to);
}

/* "; out of memory on GPU 0 at 3.536 s (4.00 MiB asked)"; 1 if there was one */
static int put_oom(struct vt_model *m, FILE *to)
{
	struct vt_oom_report r;
	char err[256];
	int oom = vt_oom_build(&r, m, 1, err, sizeof err) == 0 && r.source != VT_OOM_NONE;
	if (oom) {
		char t[32], asked[32];
		vt_format_seconds(r.t_ns, t, sizeof t);
		fprintf(to, "; out of memory");
		if (r.device >= 0)
			fprintf(to, " on GPU %d", r.device);
		fprintf(to, " at %s", t);
		if (r.request_bytes) {
			vt_format_bytes(r.request_bytes, asked, sizeof asked);
			fprintf(to, " (%s asked)", asked);
		}
	}
	vt_oom_free(&r);
	return oom;
}

void vt_run_summary(const char *dir, uint64_t events, FILE *to)
{
	if (events == 0)
		return;
	if (events > VT_RUN_SUMMARY_MAX_EVENTS) {
		fprintf(to,
		        "vramtrace: a long trace (%llu events); next: vramtrace report --stream ",
		        (unsigned long long)events);
		put_shell_word(dir, to);
		fputc('\n', to);
		return;
	}
	char err[256];
	struct vt_model *m = vt_model_load_trace(dir, err, sizeof err);
	if (!m)
		return;
	struct vt_report_options opt = {.top = 1};
	struct vt_report r;
	if (vt_report_build(&r, m, &opt, err, sizeof err) == 0) {
		fputs("vramtrace: ", to);
		put_peaks(m, to);
		put_flags(&r.findings, to);
		int oom = put_oom(m, to);
		fprintf(to, "; next: vramtrace %s ", oom ? "oom" : "report");
		put_shell_word(dir, to);
		fputc('\n', to);
		vt_report_free(&r);
	}
	vt_model_free(m);
}
