/* `vramtrace report` as text, top-down: a one-line verdict, the
 * out-of-memory finding when the job failed, then processes, devices, bytes
 * by category with a bar each, top sites, flags with advice, and last what
 * recording cost each process (under --verbose after each process instead).
 * Colour (term.h) only on a TTY and never with NO_COLOR: headings bold,
 * each category in its colour (the HTML page's), a process that died and
 * the flags in red/yellow; piped, the text is plain. */
#include "report_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "findings.h"
#include "oom.h"
#include "record_text.h"
#include "report.h"
#include "site_names.h"
#include "steps.h"
#include "term.h"
#include "units.h"
#include "model_query.h"

#define BAR_WIDTH 40

/* A category's colour on out (vt_category_rgb); buf holds the escape. */
static const char *cat_on(FILE *out, int cat, char *buf, size_t len)
{
	return vt_term_rgb(out, vt_category_rgb(cat < VT_CAT_COUNT ? cat : VT_CAT_UNKNOWN), buf,
	                   len);
}

/* A flag's kind: red for the upload that breaks jobs, yellow for the rest. */
static enum vt_color flag_color(int kind)
{
	return kind == VT_FINDING_WHOLE_DATASET ? VT_COLOR_RED : VT_COLOR_YELLOW;
}

static const char *on(FILE *out, enum vt_color c)
{
	return vt_term_color(out, c);
}

static const char *off(FILE *out)
{
	return vt_term_color(out, VT_COLOR_RESET);
}

static void heading(FILE *out, const char *lead, const char *text)
{
	fprintf(out, "%s%s%s%s\n", lead, on(out, VT_COLOR_BOLD), text, off(out));
}

/* No bar at all for nothing: a row of 0 B shows blanks. */
static void bar(FILE *out, uint64_t part, uint64_t whole, int cat)
{
	char esc[32];
	int n = whole ? (int)((part * BAR_WIDTH + whole / 2) / whole) : 0;
	if (!part) {
		fprintf(out, "%*s", BAR_WIDTH, "");
		return;
	}
	if (!n)
		n = 1;
	if (n > 0) {
		fputs(cat_on(out, cat, esc, sizeof esc), out);
		for (int i = 0; i < n; i++)
			fputc('#', out);
		fputs(off(out), out);
	}
	if (n < BAR_WIDTH) {
		fputs(on(out, VT_COLOR_DIM), out);
		for (int i = n; i < BAR_WIDTH; i++)
			fputc('.', out);
		fputs(off(out), out);
	}
}

int vt_report_proc_status(const struct vt_proc *p, char *buf, size_t len)
{
	char when[32];
	if (p->clean_exit) {
		snprintf(buf, len, "exited %d", p->exit_code);
	} else if (VT_STATE_OF(p->state_word) == VT_STATE_EXECED) {
		snprintf(buf, len, "exec'd");
	} else if (p->running) {
		vt_format_seconds(p->last_t_ns, when, sizeof when);
		snprintf(buf, len, "running, last event at %s", when);
	} else
		return snprintf(buf, len, "did NOT exit cleanly") > 0;
	return 0;
}

void vt_report_recording_cost_text(const struct vt_proc *p, FILE *out)
{
	struct vt_self_cost_summary sc;
	if (vt_self_cost_summarize(&p->self_cost, vt_proc_span_ns(p), &sc) != 0)
		return;
	char text[256];
	vt_self_cost_text(&sc, vt_proc_span_ns(p), text, sizeof text);
	fprintf(out, "            recording cost (vramtrace's own time): %s\n", text);
	if (vt_stack_counts_text(&p->self_cost, text, sizeof text))
		fprintf(out, "            stacks: %s\n", text);
}

void vt_report_integrity_text(const struct vt_proc *p, FILE *out)
{
	const struct vt_log_integrity *in = &p->integrity;
	if (in->chunks_missing && !p->running)
		fprintf(out,
		        "            trace incomplete: log cut short, %" PRIu64 " of %" PRIu64
		        " chunks missing (their records lost)\n",
		        in->chunks_missing, in->chunks_claimed);
	if (in->damaged)
		fprintf(out,
		        "            trace incomplete: %u chunk%s of the log fail%s the seal "
		        "check: %" PRIu64 " events kept that may be wrong, %" PRIu64
		        " records lost\n",
		        in->damaged, in->damaged == 1 ? "" : "s", in->damaged == 1 ? "s" : "",
		        in->damaged_events, in->damaged_lost);
}

static void processes(const struct vt_report *r, FILE *out)
{
	heading(out, "\n", "Processes");
	for (uint32_t i = 0; i < r->m->nprocs; i++) {
		const struct vt_proc *p = &r->m->procs[i];
		char status[64], exe[1024], steps[32];
		int died = vt_report_proc_status(p, status, sizeof status);
		int fw = vt_framework_of(p);
		/* a period found where nothing trains is a pass over requests */
		int passes = p->step_source == VT_STEPS_PERIOD && !p->trains;
		fprintf(out, "  pid %-7d %s  %s%s%s, %s allocator, %s (%s%s)%s%s\n", p->pid,
		        vt_term_safe(p->exe, exe, sizeof exe), died ? on(out, VT_COLOR_RED) : "",
		        status, died ? off(out) : "", p->pool_mode ? "pool" : "per-tensor",
		        passes ? vt_count(p->nsteps, "pass", "passes", steps, sizeof steps)
		               : vt_count(p->nsteps, "step", "steps", steps, sizeof steps),
		        vt_step_source_name(p->step_source),
		        passes ? ", nothing trains: no gradients or optimizer state" : "",
		        fw ? ", " : "", fw ? vt_framework_name(fw) : "");
		if (p->header_flags & VT_FLAG_TRUNCATED)
			fprintf(out, "            log truncated: %" PRIu64 " records dropped\n",
			        p->events_dropped);
		vt_report_integrity_text(p, out);
		if (r->opt.verbose)
			vt_report_recording_cost_text(p, out);
	}
}

void vt_report_nvml_others(const struct vt_nvml_reading *n, char *buf, size_t len)
{
	char b[32], safe[64];
	size_t at = 0;
	buf[0] = 0;
	for (uint32_t i = 0; i < n->nlisted && at < len; i++) {
		if (n->listed[i].used_bytes == VT_NVML_UNKNOWN)
			snprintf(b, sizeof b, "size unknown");
		else
			vt_format_bytes(n->listed[i].used_bytes, b, sizeof b);
		const char *comm = n->listed[i].comm[0] ? n->listed[i].comm : "?";
		at += (size_t)snprintf(buf + at, len - at, "%spid %d %s %s", i ? ", " : "",
		                       n->listed[i].pid, vt_term_safe(comm, safe, sizeof safe), b);
	}
	if (n->others > n->nlisted && at < len)
		snprintf(buf + at, len - at, " and %u more", n->others - n->nlisted);
}

/* The other processes NVML named on the device, as an accounting line. */
static void other_processes_text(const struct vt_device_account *d, FILE *out)
{
	char b[32], names[VT_NVML_LISTED * 64];
	if (!d->nvml->others)
		return;
	vt_format_bytes(d->other_processes_bytes, b, sizeof b);
	vt_report_nvml_others(d->nvml, names, sizeof names);
	fprintf(out, "    %10s  other processes on GPU %d (%s; per NVML)\n", b, d->device, names);
}

/* This process's bytes per NVML, beside the driver's used. */
static void nvml_self_text(const struct vt_nvml_reading *n, FILE *out)
{
	char b[32];
	if (n->self_bytes == VT_NVML_UNKNOWN) {
		fprintf(out, "                NVML did not list this process\n");
		return;
	}
	vt_format_bytes(n->self_bytes, b, sizeof b);
	fprintf(out, "                this process per NVML: %s (its context included)\n", b);
}

/* One device's used memory at one reading, by holder. */
static void device_account(const struct vt_device_account *d, FILE *out)
{
	char used[32], total[32], when[32], b[32], safe[128];
	vt_format_bytes(d->used_bytes, used, sizeof used);
	vt_format_bytes(d->total_bytes, total, sizeof total);
	vt_format_seconds(d->t_ns, when, sizeof when);
	fprintf(out, "  GPU %d: %s used of %s at %s (%s)\n", d->device, used, total, when,
	        vt_meminfo_reason_name(d->reason));
	const struct {
		const char *what;
		uint64_t bytes;
	} part[] = {
	    {"framework allocations", d->framework_bytes},
	    {"allocator pools", d->pool_bytes},
	    {"VMM mappings", d->vmm_bytes},
	};
	for (size_t k = 0; k < sizeof part / sizeof part[0]; k++) {
		vt_format_bytes(part[k].bytes, b, sizeof b);
		fprintf(out, "    %10s  %s\n", b, part[k].what);
	}
	for (uint32_t k = 0; k < d->nlibs; k++) {
		vt_format_bytes(d->libs[k].bytes, b, sizeof b);
		fprintf(out, "    %10s  library %s (its own allocations)\n", b,
		        vt_term_safe(d->libs[k].module, safe, sizeof safe));
	}
	if (d->nvml)
		other_processes_text(d, out);
	vt_format_bytes(d->unexplained_bytes, b, sizeof b);
	fprintf(out,
	        "    %10s  unexplained: used minus all of the above (context, kernel images%s)\n",
	        b, d->nvml ? "" : ", other processes");
	if (d->nvml)
		nvml_self_text(d->nvml, out);
}

/* Used memory per device at its highest reading (where that is not the
 * last) and at its last one, by holder. */
static void accounting(const struct vt_report *r, FILE *out)
{
	const struct vt_accounting *a = &r->accounting;
	if (!a->ndev)
		return;
	heading(out, "\n", "Accounting (used per cuMemGetInfo, by holder)");
	for (uint32_t i = 0; i < a->npeak; i++)
		device_account(&a->peak[i], out);
	for (uint32_t i = 0; i < a->ndev; i++)
		device_account(&a->dev[i], out);
}

/* What vramtrace itself cost each process: last, it is about the tool. */
static void recording_costs(const struct vt_report *r, FILE *out)
{
	if (r->opt.verbose)
		return; /* said after each process */
	heading(out, "\n", "Recording cost");
	for (uint32_t i = 0; i < r->m->nprocs; i++) {
		fprintf(out, "  pid %d\n", r->m->procs[i].pid);
		vt_report_recording_cost_text(&r->m->procs[i], out);
	}
}

static void devices(const struct vt_report *r, FILE *out)
{
	heading(out, "\n", "Devices");
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		const struct vt_device *dv = &r->m->devices[d];
		if (!vt_model_device_used(r->m, d))
			continue;
		char cap[32], peak[32], when[32], endb[32];
		vt_format_bytes(dv->total_bytes, cap, sizeof cap);
		vt_format_bytes(dv->peak_bytes, peak, sizeof peak);
		vt_format_bytes(dv->end_bytes, endb, sizeof endb);
		vt_format_seconds(dv->peak_t_ns, when, sizeof when);
		fprintf(out, "  GPU %d  %-20s capacity %-10s peak %-10s at %s", d,
		        dv->name ? dv->name : "?", dv->total_bytes ? cap : "unknown", peak, when);
		if (dv->total_bytes)
			fprintf(out, " (%.1f%% of capacity)",
			        100.0 * (double)dv->peak_bytes / (double)dv->total_bytes);
		fprintf(out, ", %s at the end\n", endb);
	}
}

static void category_table(FILE *out, const uint64_t *cats)
{
	uint64_t total = 0;
	for (int c = 0; c < VT_CAT_COUNT; c++)
		total += cats[c];
	for (int c = 0; c < VT_CAT_COUNT; c++) {
		char b[32];
		vt_format_bytes(cats[c], b, sizeof b);
		fprintf(out, "  %-12s %10s  ", vt_category_name(c), b);
		bar(out, cats[c], total, c);
		fprintf(out, " %5.1f%%\n", total ? 100.0 * (double)cats[c] / (double)total : 0.0);
	}
}

/* Bytes at peak the classifier is unsure of, briefly: "48.0 MiB: dataset
 * or weights?" (its verdict, then the most likely alternative). */
static void unsure(const struct vt_report *r, FILE *out)
{
	int any = 0;
	for (int c = 0; c < VT_CAT_COUNT; c++)
		for (int o = 0; o <= VT_CAT_COUNT; o++) {
			if (!r->unsure_at_peak[c][o])
				continue;
			char b[32];
			vt_format_bytes(r->unsure_at_peak[c][o], b, sizeof b);
			fprintf(out, "%s %s: %s%s%s?", any ? "," : "  low confidence:", b,
			        vt_category_name(c), o < VT_CAT_COUNT ? " or " : "",
			        o < VT_CAT_COUNT ? vt_category_name(o) : "");
			any = 1;
		}
	if (any)
		fprintf(out, "\n");
}

static void categories(const struct vt_report *r, FILE *out)
{
	if (!strcmp(r->at_label, "peak")) {
		heading(out, "\n", "Bytes by category at peak (each device at its peak)");
		category_table(out, r->cats_at_peak);
		unsure(r, out);
		return;
	}
	char when[32];
	vt_format_seconds(r->at.t_ns == VT_T_NEVER ? 0 : r->at.t_ns, when, sizeof when);
	char title[sizeof r->at_label + 96];
	snprintf(title, sizeof title, "Bytes by category at %s (t = %s, all devices)",
	         !strncmp(r->at_label, "t=", 2) ? "that moment" : r->at_label, when);
	heading(out, "\n", title);
	category_table(out, r->at_cats);
}

static void sites(const struct vt_report *r, FILE *out)
{
	heading(out, "\n", "Top sites at peak");
	fprintf(out, "  %10s %8s  %-12s %s\n", "bytes", "allocs", "category", "site");
	for (uint32_t i = 0; i < r->nsites && i < (uint32_t)r->opt.top; i++) {
		const struct vt_site_stat *s = &r->sites[i];
		char b[32], name[4096], esc[32];
		vt_format_bytes(s->bytes_at_peak, b, sizeof b);
		fprintf(out, "  %10s %8" PRIu64 "  %s%-12s%s %s\n", b, s->allocs,
		        cat_on(out, s->category, esc, sizeof esc), vt_category_name(s->category),
		        off(out), vt_term_safe(s->name, name, sizeof name));
	}
}

/* "GPU 0" or "GPUs 0,1" */
static void gpus(FILE *out, const struct vt_finding *f)
{
	fprintf(out, "GPU%s", f->ndev > 1 ? "s" : "");
	for (uint32_t d = 0; d < f->ndev; d++)
		fprintf(out, "%s%u", d ? "," : " ", f->devices[d]);
}

/* One sentence per flag, then its advice. */
static void flag_line(const struct vt_report *r, const struct vt_finding *f, FILE *out)
{
	char raw[256], site[256], b[32], when[32], all[32];
	uint64_t sum = 0;
	for (uint32_t d = 0; d < f->ndev; d++)
		sum += f->bytes[d];
	vt_name_site(r->m, f->proc, f->stack_id, raw, sizeof raw);
	vt_term_safe(raw, site, sizeof site);
	vt_format_bytes(vt_finding_bytes_max(f), b, sizeof b);
	vt_format_bytes(sum, all, sizeof all);
	vt_format_seconds(f->t_ns, when, sizeof when);
	const char *copies = f->copies == 1 ? "copy" : "copies";
	fprintf(out, "  %s[%s]%s ", on(out, flag_color(f->kind)), vt_finding_kind_name(f->kind),
	        off(out));
	switch (f->kind) {
	case VT_FINDING_WHOLE_DATASET:
		fprintf(out, "%s dataset%s uploaded to ", b, f->ndev > 1 ? " (each)" : "");
		gpus(out, f);
		fprintf(out, " in %" PRIu64 " host-to-device %s at t=%s from %s", f->copies, copies,
		        when, site);
		break;
	case VT_FINDING_PREFETCH_DEPTH:
		fprintf(out, "prefetch holds %u batch%s (%s) on ", f->depth,
		        f->depth == 1 ? "" : "es", b);
		gpus(out, f);
		fprintf(out, ", filled from %s", site);
		break;
	case VT_FINDING_REPLICATED:
		fprintf(out, "the same %s dataset on ", b);
		gpus(out, f);
		fprintf(out, " (%s in all), uploaded from %s", all, site);
		break;
	case VT_FINDING_GROWTH: {
		char rate[512];
		vt_growth_text(&f->growth, rate, sizeof rate);
		fprintf(out, "GPU %u keeps what %s allocates: %s", f->growth.device, site, rate);
		break;
	}
	default:
		fprintf(out, "%s allocator region on ", b);
		gpus(out, f);
		fprintf(out, " made at t=%s by %s, %" PRIu64 " host-to-device %s into it", when,
		        site, f->copies, copies);
		break;
	}
	if (r->m->nprocs > 1)
		fprintf(out, " in pid %d", r->m->procs[f->proc].pid);
	fprintf(out, " (confidence %d%%)\n      %s\n", f->confidence, f->advice);
}

static void flags(const struct vt_report *r, FILE *out)
{
	heading(out, "\n", "Flags");
	if (!r->findings.n)
		fprintf(out, "  none\n");
	for (uint32_t i = 0; i < r->findings.n; i++)
		flag_line(r, &r->findings.v[i], out);
}

/* The out-of-memory finding, first after the verdict. */
static void oom_block(const struct vt_report *r, FILE *out)
{
	const struct vt_oom_finding *o = &r->oom;
	char b[32], when[32], freeb[32], total[32], cmd[4200], safe[4200];
	vt_format_bytes(o->request_bytes, b, sizeof b);
	vt_format_seconds(o->t_ns, when, sizeof when);
	fprintf(out, "%s[out_of_memory]%s ", on(out, VT_COLOR_RED), off(out));
	if (o->device >= 0)
		fprintf(out, "GPU %d: ", o->device);
	if (o->source == VT_OOM_DRIVER)
		fprintf(out, "%s of %s failed at %s in %s, pid %d", o->api, b, when,
		        vt_term_safe(o->site[0] ? o->site : "(no site)", safe, sizeof safe),
		        o->pid);
	else
		fprintf(out, "%s ran out of memory at %s%s%s, pid %d", o->api, when,
		        o->request_bytes ? " asking for " : "", o->request_bytes ? b : "", o->pid);
	if (o->events > 1)
		fprintf(out, " (the first of %u)", o->events);
	fprintf(out, "\n");
	if (o->have_free) {
		vt_format_bytes(o->free_bytes, freeb, sizeof freeb);
		vt_format_bytes(o->total_bytes, total, sizeof total);
		fprintf(out, "    free then: %s%s of %s\n", o->free_estimated ? "~" : "", freeb,
		        total);
	}
	fprintf(out, "    held then by category:");
	for (int c = 0, first = 1; c < VT_CAT_COUNT; c++) {
		if (!o->cats[c])
			continue;
		vt_format_bytes(o->cats[c], b, sizeof b);
		fprintf(out, "%s %s %s", first ? "" : ",", vt_category_name(c), b);
		first = 0;
	}
	fprintf(out, "\n    largest holders:");
	for (uint32_t i = 0; i < o->nholders; i++) {
		vt_format_bytes(o->holders[i].bytes, b, sizeof b);
		fprintf(out, "%s %s %s %s", i ? ";" : "", b,
		        vt_category_name(o->holders[i].category),
		        vt_term_safe(o->holders[i].site, safe, sizeof safe));
	}
	fprintf(out, "%s\n", o->nholders ? "" : " none");
	if (o->likely_cause[0])
		fprintf(out, "    likely cause: %s\n",
		        vt_term_safe(o->likely_cause, safe, sizeof safe));
	vt_oom_finding_command(r->opt.title ? r->opt.title : "DIR", cmd, sizeof cmd);
	fprintf(out, "    the full post-mortem: %s\n", vt_term_safe(cmd, safe, sizeof safe));
}

int vt_report_write_text(const struct vt_report *r, FILE *out)
{
	const struct vt_totals *t = &r->m->totals;
	char h2d[32], verdict[1024], safe[1024], n[5][48];
	vt_format_bytes(t->htod_bytes, h2d, sizeof h2d);
	fprintf(out, "%svramtrace report:%s %s\n", on(out, VT_COLOR_BOLD), off(out),
	        r->opt.title ? r->opt.title : "");
	vt_report_verdict(r, verdict, sizeof verdict);
	fprintf(out, "%sVerdict:%s %s\n", on(out, VT_COLOR_BOLD), off(out),
	        vt_term_safe(verdict, safe, sizeof safe));
	if (r->oom.present)
		oom_block(r, out);
	fprintf(out, "\n  %s, %s, %s (%s), %s\n",
	        vt_count(t->alloc_calls, "allocation", "allocations", n[0], sizeof n[0]),
	        vt_count(t->free_calls, "free", "frees", n[1], sizeof n[1]),
	        vt_count(t->htod_calls, "host-to-device copy", "host-to-device copies", n[2],
	                 sizeof n[2]),
	        h2d,
	        vt_count(t->failed_allocs, "failed allocation", "failed allocations", n[3],
	                 sizeof n[3]));
	processes(r, out);
	devices(r, out);
	categories(r, out);
	sites(r, out);
	flags(r, out);
	accounting(r, out);
	recording_costs(r, out);
	fflush(out);
	return ferror(out) ? -1 : 0;
}
