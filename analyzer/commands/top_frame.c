/* One refresh of `vramtrace top` (top_frame.h). */
#include "top_frame.h"

#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "model_load.h"
#include "model_query.h"
#include "model_stream.h"
#include "nomem.h"
#include "report.h"
#include "site_names.h"
#include "units.h"

const char *vt_top_state_name(int state)
{
	static const char *const names[] = {"running", "exited", "execed", "killed"};
	return state >= 0 && state <= VT_FOLLOW_KILLED ? names[state] : "unknown";
}

/* The job runs while any process does; else it was killed when its first
 * process (the job the launcher started) died without its exit. */
static void fill_procs(struct vt_top_frame *fr, const struct vt_trace_follow *f)
{
	size_t n = vt_trace_follow_logs(f);
	const struct vt_model *m = vt_trace_follow_model(f);
	fr->nprocs = (uint32_t)n;
	fr->state = n ? VT_FOLLOW_EXITED : VT_FOLLOW_RUNNING;
	for (size_t i = 0; i < n; i++) {
		int st = vt_trace_follow_state(f, i);
		const struct vt_proc *p = &m->procs[vt_trace_follow_proc(f, i)];
		if (i < sizeof fr->procs / sizeof fr->procs[0])
			fr->procs[i] = (struct vt_top_proc){p->pid, p->exit_code, st};
		if (st == VT_FOLLOW_RUNNING)
			fr->state = VT_FOLLOW_RUNNING;
		else
			fr->left++;
		if (i == 0 && st == VT_FOLLOW_KILLED && fr->state != VT_FOLLOW_RUNNING)
			fr->state = VT_FOLLOW_KILLED;
	}
	for (size_t i = 1; i < n && fr->state == VT_FOLLOW_KILLED; i++)
		if (vt_trace_follow_state(f, i) == VT_FOLLOW_RUNNING)
			fr->state = VT_FOLLOW_RUNNING;
}

static struct vt_top_device *device_slot(struct vt_top_frame *fr, int ordinal)
{
	for (int i = 0; i < fr->ndevs; i++)
		if (fr->devs[i].ordinal == ordinal)
			return &fr->devs[i];
	fr->devs[fr->ndevs] = (struct vt_top_device){.ordinal = ordinal};
	return &fr->devs[fr->ndevs++];
}

/* Keep site s among the largest (a sorted list of VT_TOP_SITES). */
static void keep_site(struct vt_top_frame *fr, const struct vt_top_site *s)
{
	int n = fr->nsites;
	if (n == VT_TOP_SITES && s->bytes <= fr->sites[n - 1].bytes)
		return;
	int i = n < VT_TOP_SITES ? n++ : n - 1;
	while (i > 0 && fr->sites[i - 1].bytes < s->bytes) {
		fr->sites[i] = fr->sites[i - 1];
		i--;
	}
	fr->sites[i] = *s;
	fr->nsites = n;
}

/* Live and peak bytes per device, summed over the processes (the peak: the
 * largest of any one process's and of the sums seen at refreshes), and the
 * sites holding memory now. */
static void fill_devices(struct vt_top_frame *fr, struct vt_model *m,
                         const struct vt_top_frame *prev)
{
	for (int d = 0; d < VT_MAX_DEVICES; d++) {
		if (!vt_model_device_used(m, d))
			continue;
		struct vt_top_device *dv = device_slot(fr, d);
		dv->capacity = m->devices[d].total_bytes;
		for (uint32_t p = 0; p < m->nprocs; p++) {
			uint64_t live, peak;
			vt_stream_live_now(m, p, (uint8_t)d, &live, &peak);
			dv->live += live;
			dv->peak = peak > dv->peak ? peak : dv->peak;
			struct vt_stream_peak snap;
			if (!live || !vt_stream_snapshot_now(m, p, (uint8_t)d, &snap)) {
				continue;
			}
			for (uint32_t k = 0; k < snap.nsites; k++) {
				struct vt_top_site s = {.device = d,
				                        .bytes = snap.sites[k].bytes,
				                        .allocs = snap.sites[k].allocs};
				if (fr->nsites == VT_TOP_SITES &&
				    s.bytes <= fr->sites[VT_TOP_SITES - 1].bytes)
					break; /* the rest are smaller */
				vt_name_site(m, p, snap.sites[k].stack_id, s.name, sizeof s.name);
				keep_site(fr, &s);
			}
			free(snap.sites);
		}
		dv->peak = dv->live > dv->peak ? dv->live : dv->peak;
		for (int i = 0; prev && i < prev->ndevs; i++)
			if (prev->devs[i].ordinal == d && prev->devs[i].peak > dv->peak)
				dv->peak = prev->devs[i].peak;
	}
}

void vt_top_frame_fill(struct vt_top_frame *fr, struct vt_trace_follow *f, const char *dir,
                       const struct vt_top_frame *prev, double dt_s)
{
	memset(fr, 0, sizeof *fr);
	fr->dir = dir;
	struct vt_model *m = vt_trace_follow_model(f);
	fill_procs(fr, f);
	fr->events = m->totals.records;
	for (uint32_t p = 0; p < m->nprocs; p++)
		fr->steps += vt_stream_steps(m, p);
	fill_devices(fr, m, prev);
	if (prev) {
		fr->joined = fr->nprocs - prev->nprocs;
		if (prev->have_report) { /* the run had ended: nothing changes since */
			fr->have_report = 1;
			memcpy(fr->findings, prev->findings, sizeof fr->findings);
			fr->nfindings = prev->nfindings;
			for (int i = 0; i < fr->ndevs && i < prev->ndevs; i++) {
				fr->devs[i].have_cats = prev->devs[i].have_cats;
				memcpy(fr->devs[i].cats, prev->devs[i].cats,
				       sizeof fr->devs[i].cats);
			}
		}
	}
	if (prev && dt_s > 0) {
		fr->events_per_s = (double)(fr->events - prev->events) / dt_s;
		fr->steps_per_s = (double)(fr->steps - prev->steps) / dt_s;
	}
}

int vt_top_frame_add_report(struct vt_top_frame *fr, const char *dir)
{
	char err[512];
	struct vt_model *m = vt_model_load_trace(dir, err, sizeof err);
	if (!m)
		return -1;
	struct vt_report r;
	struct vt_report_options opt = {.json = 1, .top = VT_TOP_SITES};
	if (vt_report_build(&r, m, &opt, err, sizeof err) != 0) {
		vt_model_free(m);
		return -1;
	}
	for (int i = 0; i < fr->ndevs; i++) {
		fr->devs[i].have_cats = 1;
		memcpy(fr->devs[i].cats, r.dev_cats[fr->devs[i].ordinal], sizeof fr->devs[i].cats);
	}
	fr->nfindings = 0;
	for (uint32_t i = 0; i < r.findings.n && fr->nfindings < VT_TOP_FINDINGS; i++) {
		const struct vt_finding *fd = &r.findings.v[i];
		char site[160], bytes[32];
		vt_name_site(m, fd->proc, fd->stack_id, site, sizeof site);
		vt_format_bytes(vt_finding_bytes_max(fd), bytes, sizeof bytes);
		snprintf(fr->findings[fr->nfindings++], sizeof fr->findings[0], "%s: %s at %s",
		         vt_finding_kind_name(fd->kind), bytes, site);
	}
	fr->have_report = 1;
	vt_report_free(&r);
	vt_model_free(m);
	return 0;
}

/* ---- output ------------------------------------------------------------- */

int vt_top_frame_text(const struct vt_top_frame *fr, FILE *out)
{
	char a[32], b[32], c[32];
	fprintf(out, "vramtrace top %s  state %s  processes %u (%u gone)  events %llu  steps %llu",
	        fr->dir, vt_top_state_name(fr->state), fr->nprocs, fr->left,
	        (unsigned long long)fr->events, (unsigned long long)fr->steps);
	if (fr->steps_per_s > 0)
		fprintf(out, " (%.1f/s)", fr->steps_per_s);
	fputc('\n', out);
	for (int i = 0; i < fr->ndevs; i++) {
		const struct vt_top_device *d = &fr->devs[i];
		vt_format_bytes(d->live, a, sizeof a);
		vt_format_bytes(d->peak, b, sizeof b);
		vt_format_bytes(d->capacity, c, sizeof c);
		fprintf(out, "GPU %d  live %s  peak %s  capacity %s\n", d->ordinal, a, b,
		        d->capacity ? c : "unknown");
		for (int k = 0; d->have_cats && k < VT_CAT_COUNT; k++)
			if (d->cats[k]) {
				vt_format_bytes(d->cats[k], a, sizeof a);
				fprintf(out, "  %-12s %10s at peak\n", vt_category_name(k), a);
			}
	}
	fprintf(out, "top sites now:\n");
	for (int i = 0; i < fr->nsites; i++) {
		vt_format_bytes(fr->sites[i].bytes, a, sizeof a);
		fprintf(out, "  %10s  GPU %d  %6llu allocs  %s\n", a, fr->sites[i].device,
		        (unsigned long long)fr->sites[i].allocs, fr->sites[i].name);
	}
	for (int i = 0; i < fr->nfindings; i++)
		fprintf(out, "finding: %s\n", fr->findings[i]);
	return ferror(out) ? -1 : 0;
}

static void json_devices(struct vt_json *j, const struct vt_top_frame *fr)
{
	vt_json_key(j, "devices");
	vt_json_begin_array(j);
	for (int i = 0; i < fr->ndevs; i++) {
		const struct vt_top_device *d = &fr->devs[i];
		vt_json_begin_object(j);
		vt_json_kv_i64(j, "ordinal", d->ordinal);
		vt_json_kv_u64(j, "live_bytes", d->live);
		vt_json_kv_u64(j, "peak_bytes", d->peak);
		vt_json_kv_u64(j, "total_bytes", d->capacity);
		vt_json_key(j, "categories_at_peak");
		if (!d->have_cats) {
			vt_json_null(j);
		} else {
			vt_json_begin_object(j);
			for (int c = 0; c < VT_CAT_COUNT; c++)
				vt_json_kv_u64(j, vt_category_name(c), d->cats[c]);
			vt_json_end_object(j);
		}
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static void json_procs_sites(struct vt_json *j, const struct vt_top_frame *fr)
{
	vt_json_key(j, "processes");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < fr->nprocs && i < sizeof fr->procs / sizeof fr->procs[0]; i++) {
		vt_json_begin_object(j);
		vt_json_kv_i64(j, "pid", fr->procs[i].pid);
		vt_json_kv_string(j, "state", vt_top_state_name(fr->procs[i].state));
		vt_json_kv_i64(j, "exit_code", fr->procs[i].exit_code);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
	vt_json_key(j, "top_sites");
	vt_json_begin_array(j);
	for (int i = 0; i < fr->nsites; i++) {
		vt_json_begin_object(j);
		vt_json_kv_string(j, "site", fr->sites[i].name);
		vt_json_kv_i64(j, "device", fr->sites[i].device);
		vt_json_kv_u64(j, "bytes", fr->sites[i].bytes);
		vt_json_kv_u64(j, "allocs", fr->sites[i].allocs);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

int vt_top_frame_json(const struct vt_top_frame *fr, FILE *out)
{
	struct vt_json j;
	vt_json_init(&j, out, 1);
	vt_json_begin_object(&j);
	vt_json_kv_string(&j, "state", vt_top_state_name(fr->state));
	vt_json_kv_u64(&j, "events", fr->events);
	vt_json_kv_u64(&j, "steps", fr->steps);
	vt_json_kv_double(&j, "steps_per_s", fr->steps_per_s);
	json_devices(&j, fr);
	json_procs_sites(&j, fr);
	vt_json_key(&j, "findings");
	if (!fr->have_report) {
		vt_json_null(&j);
	} else {
		vt_json_begin_array(&j);
		for (int i = 0; i < fr->nfindings; i++)
			vt_json_string(&j, fr->findings[i]);
		vt_json_end_array(&j);
	}
	vt_json_end_object(&j);
	return vt_json_finish(&j);
}
