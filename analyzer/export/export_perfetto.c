/* Trace Event Format export (see export_perfetto.h), written with the
 * flat event writer (trace_event.h). */
#include "export_perfetto.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "findings.h"
#include "json_out.h"
#include "log_reader.h"
#include "trace_dir.h"
#include "record_text.h"
#include "trace_event.h"
#include "site_names.h"
#include "units.h"
#include "classify.h"
#include "ranks.h"

/* A name from record_text.h, or "unknown" for a value it does not know (a
 * newer writer or a damaged log): NULL must never reach a printer. */
static const char *known(const char *name)
{
	return name ? name : "unknown";
}

/* Where one trace's events go in the document: a trace alone keeps its
 * pids and times; the traces of a job (export_job.h) each get their own
 * pids (two hosts may have the same pid) and are moved onto the job's
 * timeline. */
struct place {
	const struct vt_export *x;
	struct vt_te_writer *j;
	const struct vt_export_job *job; /* NULL: the trace alone */
	uint32_t trace;
	uint64_t pid_base;  /* added to a process's pid */
	uint64_t gpu_pid;   /* the pid of its GPU 0 */
	uint64_t offset_ns; /* added to its times */
};

static uint64_t proc_pid(const struct place *pl, uint32_t proc)
{
	return pl->pid_base + (uint64_t)pl->x->m->procs[proc].pid;
}

static uint64_t gpu_pid(const struct place *pl, int dev)
{
	return pl->gpu_pid + (uint64_t)dev;
}

static uint64_t at(const struct place *pl, uint64_t t_ns)
{
	return t_ns + pl->offset_ns;
}

/* A process of a job: "rank N (host:pid)" sorted by rank, a process
 * without a rank "host:pid" after the ranks; one that allocated no device
 * memory (a launcher) by its executable, last. */
static void name_job_process(const struct place *pl, uint32_t p, const char *exe)
{
	const struct vt_proc *pr = &pl->x->m->procs[p];
	const char *host = pr->hostname && pr->hostname[0] ? pr->hostname : "?";
	int64_t row = vt_export_job_row_of(pl->job, pl->trace, p);
	char name[512], label[96];
	if (row >= 0)
		vt_rank_label(&pl->job->job.rows[row], label, sizeof label);
	if (row >= 0 && pl->job->job.rows[row].rank >= 0)
		snprintf(name, sizeof name, "%s (%s:%d)", label, host, (int)pr->pid);
	else if (row >= 0)
		snprintf(name, sizeof name, "%s", label);
	else
		snprintf(name, sizeof name, "%s (%s:%d)", exe, host, (int)pr->pid);
	uint64_t pid = proc_pid(pl, p);
	vt_te_metadata(pl->j, "process_name", pid, 0, "name", name, 0);
	vt_te_metadata(pl->j, "process_sort_index", pid, 0, "sort_index", NULL,
	               row >= 0 ? row : (int64_t)pl->job->job.nrows + p);
}

/* Devices first (sorted before the processes), "GPU N name", with the
 * trace's directory when the job has several. */
static void name_processes(const struct place *pl)
{
	const struct vt_export *x = pl->x;
	int devs[VT_MAX_DEVICES], nd = vt_export_devices(x, devs);
	char buf[512];
	const char *dir = pl->job && pl->job->dirs[pl->trace] ? pl->job->dirs[pl->trace] : "";
	int several = pl->job && pl->job->n > 1;
	for (int i = 0; i < nd; i++) {
		const struct vt_device *d = &x->m->devices[devs[i]];
		uint64_t pid = gpu_pid(pl, devs[i]);
		snprintf(buf, sizeof buf, "GPU %d%s%s%s%s%s", devs[i], d->name ? " " : "",
		         d->name ? d->name : "", several ? " (" : "", several ? dir : "",
		         several ? ")" : "");
		vt_te_metadata(pl->j, "process_name", pid, 0, "name", buf, 0);
		vt_te_metadata(pl->j, "process_sort_index", pid, 0, "sort_index", NULL,
		               -1000 * (int64_t)(several ? pl->job->n - pl->trace : 1) + devs[i]);
	}
	for (uint32_t p = 0; p < x->m->nprocs; p++) {
		const struct vt_proc *pr = &x->m->procs[p];
		const char *exe = pr->exe ? strrchr(pr->exe, '/') : NULL;
		exe = exe ? exe + 1 : pr->exe ? pr->exe : "process";
		if (pl->job)
			name_job_process(pl, p, exe);
		else
			vt_te_metadata(pl->j, "process_name", proc_pid(pl, p), 0, "name", exe, 0);
	}
}

/* One counter sample: the device's bytes by category after a step, the
 * categories the device ever holds (every sample has the same args, as
 * chrome://tracing's stacked counters want). */
static void counter(const struct place *pl, int dev, uint64_t t_ns,
                    const uint64_t cats[VT_CAT_COUNT], const uint8_t used[VT_CAT_COUNT])
{
	struct vt_te_writer *j = pl->j;
	char name[32];
	snprintf(name, sizeof name, "GPU %d bytes", dev);
	vt_te_event(j, name, "C", at(pl, t_ns), gpu_pid(pl, dev), 0);
	vt_te_args_begin(j);
	for (int c = 0; c < VT_CAT_COUNT; c++)
		if (used[c])
			vt_te_kv_u64(j, vt_category_name(c), cats[c]);
	vt_te_end_object(j);
	vt_te_end_object(j);
}

static void alloc_slice(const struct place *pl, uint32_t idx, int begin, uint64_t t_ns)
{
	const struct vt_export *x = pl->x;
	struct vt_te_writer *j = pl->j;
	const struct vt_alloc *a = &x->m->allocs[idx];
	const char *cat =
	    vt_category_name(a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN);
	vt_te_event(j, cat, begin ? "b" : "e", at(pl, t_ns), gpu_pid(pl, a->device), 0);
	vt_te_kv_string(j, "cat", cat);
	char id[24]; /* one id space for the document: the trace in the high half */
	snprintf(id, sizeof id, "0x%" PRIx64, ((uint64_t)pl->trace << 32) | idx);
	vt_te_kv_string(j, "id", id);
	if (begin) {
		vt_te_args_begin(j);
		vt_te_kv_u64(j, "bytes", a->bytes);
		uint32_t s = x->alloc_site[idx];
		vt_te_kv_string(j, "site", s == VT_NO_INDEX ? "(no stack)" : x->r.sites[s].name);
		vt_te_kv_i64(j, "pid", x->m->procs[a->proc].pid);
		char addr[24];
		snprintf(addr, sizeof addr, "0x%" PRIx64, a->addr);
		vt_te_kv_string(j, "address", addr);
		vt_te_kv_string(j, "api", known(vt_api_name(a->api)));
		vt_te_kv_u64(j, "confidence", a->confidence);
		vt_te_kv_string(j, "reason", vt_alloc_reason(a));
		vt_te_end_object(j);
	}
	vt_te_end_object(j);
}

/* The timeline: an async slice edge and a counter sample per step. */
static int write_timeline(const struct place *pl)
{
	const struct vt_export *x = pl->x;
	uint32_t n;
	struct vt_step *steps = vt_export_timeline(x, &n);
	if (!steps)
		return -1;
	static uint64_t cats[VT_MAX_DEVICES][VT_CAT_COUNT];
	static uint8_t used[VT_MAX_DEVICES][VT_CAT_COUNT];
	memset(cats, 0, sizeof cats);
	memset(used, 0, sizeof used);
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &x->m->allocs[steps[i].alloc];
		used[a->device][a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN] = 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &x->m->allocs[steps[i].alloc];
		int c = a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN;
		cats[a->device][c] += steps[i].sign > 0 ? a->bytes : (uint64_t)-a->bytes;
		alloc_slice(pl, steps[i].alloc, steps[i].sign > 0, steps[i].when.t_ns);
		counter(pl, a->device, steps[i].when.t_ns, cats[a->device], used[a->device]);
	}
	free(steps);
	return 0;
}

static void write_peaks(const struct place *pl)
{
	const struct vt_export *x = pl->x;
	struct vt_te_writer *j = pl->j;
	int devs[VT_MAX_DEVICES], nd = vt_export_devices(x, devs);
	for (int i = 0; i < nd; i++) {
		const struct vt_device *d = &x->m->devices[devs[i]];
		if (!d->peak_bytes)
			continue;
		char name[64], b[32];
		vt_format_bytes(d->peak_bytes, b, sizeof b);
		snprintf(name, sizeof name, "peak %s", b);
		vt_te_instant(j, name, "p", at(pl, d->peak_t_ns), gpu_pid(pl, devs[i]), 0);
		vt_te_args_begin(j);
		vt_te_kv_u64(j, "bytes", d->peak_bytes);
		vt_te_kv_u64(j, "capacity", d->total_bytes);
		vt_te_end_object(j);
		vt_te_end_object(j);
	}
}

static void write_failed(const struct place *pl)
{
	const struct vt_export *x = pl->x;
	struct vt_te_writer *j = pl->j;
	for (uint32_t i = 0; i < x->m->nfailed; i++) {
		const struct vt_failed_alloc *f = &x->m->failed[i];
		char name[96], b[32], site[256];
		vt_format_bytes(f->bytes, b, sizeof b);
		snprintf(name, sizeof name, "%s %s failed (CUresult %d)",
		         known(vt_api_name(f->api)), b, f->result);
		vt_te_instant(j, name, "g", at(pl, f->t_ns), proc_pid(pl, f->proc), 0);
		vt_te_args_begin(j);
		vt_te_kv_u64(j, "bytes", f->bytes);
		vt_te_kv_i64(j, "result", f->result);
		if (f->device != VT_DEVICE_UNKNOWN)
			vt_te_kv_u64(j, "device", f->device);
		vt_name_site(x->m, f->proc, f->stack_id, site, sizeof site);
		vt_te_kv_string(j, "site", site);
		vt_te_end_object(j);
		vt_te_end_object(j);
	}
}

/* The report's findings, with their advice, where they happened. */
static void write_flags(const struct place *pl)
{
	const struct vt_export *x = pl->x;
	struct vt_te_writer *j = pl->j;
	for (uint32_t i = 0; i < x->r.findings.n; i++) {
		const struct vt_finding *f = &x->r.findings.v[i];
		char site[256];
		vt_name_site(x->m, f->proc, f->stack_id, site, sizeof site);
		vt_te_instant(j, vt_finding_kind_name(f->kind), "g", at(pl, f->t_ns),
		              proc_pid(pl, f->proc), 0);
		vt_te_kv_string(j, "cat", "flag");
		vt_te_args_begin(j);
		for (uint32_t d = 0; d < f->ndev; d++) {
			char key[32];
			snprintf(key, sizeof key, "bytes on GPU %u", f->devices[d]);
			vt_te_kv_u64(j, key, f->bytes[d]);
		}
		vt_te_kv_u64(j, "copies", f->copies);
		vt_te_kv_string(j, "site", site);
		vt_te_kv_i64(j, "confidence", f->confidence);
		vt_te_kv_string(j, "advice", f->advice);
		vt_te_end_object(j);
		vt_te_end_object(j);
	}
}

static void write_marks(const struct place *pl)
{
	const struct vt_export *x = pl->x;
	struct vt_te_writer *j = pl->j;
	for (uint32_t p = 0; p < x->m->nprocs; p++) {
		const struct vt_proc *pr = &x->m->procs[p];
		for (uint32_t i = 0; i < pr->nmarks; i++) {
			const struct vt_mark *mk = &pr->marks[i];
			vt_te_instant(j, mk->text ? mk->text : "mark", "p", at(pl, mk->t_ns),
			              proc_pid(pl, p), 0);
			vt_te_args_begin(j);
			vt_te_kv_string(j, "kind", known(vt_mark_kind_name(mk->kind)));
			vt_te_end_object(j);
			vt_te_end_object(j);
		}
	}
}

/* ---- copies and thread names, read again from the logs ------------------ */

struct copy_ctx {
	const struct place *pl;
	const struct vt_export *x;
	struct vt_te_writer *j;
	uint32_t proc; /* model process = index of the log in the trace */
};

static void copy_event(struct copy_ctx *c, const struct vt_record_view *rec)
{
	const struct vt_event *ev = rec->data;
	const struct vt_proc *pr = &c->x->m->procs[c->proc];
	char name[64], b[32], site[256], addr[24];
	vt_format_bytes(ev->bytes, b, sizeof b);
	snprintf(name, sizeof name, "%s %s", known(vt_copy_dir_name(ev->kind)), b);
	vt_te_instant(c->j, name, "t", at(c->pl, ev->t_ns + pr->clock_offset_ns),
	              proc_pid(c->pl, c->proc), rec->tid);
	vt_te_kv_string(c->j, "cat", "copy");
	vt_te_args_begin(c->j);
	vt_te_kv_string(c->j, "direction", known(vt_copy_dir_name(ev->kind)));
	vt_te_kv_u64(c->j, "bytes", ev->bytes);
	if (ev->device != VT_DEVICE_UNKNOWN)
		vt_te_kv_u64(c->j, "device", ev->device);
	snprintf(addr, sizeof addr, "0x%" PRIx64, ev->addr);
	vt_te_kv_string(c->j, "dst", addr);
	snprintf(addr, sizeof addr, "0x%" PRIx64, ev->aux);
	vt_te_kv_string(c->j, "src", addr);
	vt_te_kv_string(c->j, "api", known(vt_api_name(ev->api)));
	vt_name_site(c->x->m, c->proc, ev->stack_id, site, sizeof site);
	vt_te_kv_string(c->j, "site", site);
	vt_te_end_object(c->j);
	vt_te_end_object(c->j);
}

static int copy_or_thread(const struct vt_record_view *rec, void *vctx)
{
	struct copy_ctx *c = vctx;
	if (rec->type == VT_REC_COPY && rec->size >= sizeof(struct vt_event)) {
		const struct vt_event *ev = rec->data;
		if (ev->result == 0)
			copy_event(c, rec);
	} else if (rec->type == VT_REC_THREAD && rec->size >= sizeof(struct vt_thread_rec)) {
		const struct vt_thread_rec *t = rec->data;
		size_t max = rec->size - sizeof *t;
		size_t len = t->name_len < max ? t->name_len : max;
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)len, t->name);
		vt_te_metadata(c->j, "thread_name", proc_pid(c->pl, c->proc), t->tid, "name", name,
		               0);
	}
	return 0;
}

static int write_copies(const struct place *pl, const char *dir)
{
	const struct vt_export *x = pl->x;
	struct vt_trace t;
	char err[256];
	if (vt_trace_open(dir, &t, err, sizeof err) != 0) {
		fprintf(stderr, "vramtrace export: %s (copies left out)\n", err);
		return -1;
	}
	/* the model made one process per log, in this order */
	for (size_t i = 0; i < t.nlogs && i < x->m->nprocs; i++) {
		struct copy_ctx c = {pl, x, pl->j, (uint32_t)i};
		vt_log_for_each(t.logs[i], copy_or_thread, &c);
	}
	vt_trace_close(&t);
	return 0;
}

/* Every event of one trace, placed by pl. */
static int write_trace(const struct place *pl, const char *dir)
{
	name_processes(pl);
	int rc = write_timeline(pl);
	write_peaks(pl);
	write_failed(pl);
	write_flags(pl);
	write_marks(pl);
	if (dir)
		write_copies(pl, dir);
	return rc;
}

int vt_export_perfetto(const struct vt_export *x, const char *dir, FILE *out)
{
	struct vt_te_writer j;
	vt_te_open(&j, out, dir);
	struct place pl = {x, &j, NULL, 0, 0, VT_PERFETTO_GPU_PID, 0};
	int rc = write_trace(&pl, dir);
	vt_te_close(&j);
	return rc || ferror(out) ? -1 : 0;
}

int vt_export_perfetto_job(const struct vt_export_job *e, FILE *out)
{
	struct vt_te_writer j;
	vt_te_open(&j, out, e->dirs[0]);
	int rc = 0;
	for (uint32_t t = 0; t < e->n; t++) {
		/* one trace keeps its pids; several each get a range of their own */
		int several = e->n > 1;
		struct place pl = {&e->x[t],
		                   &j,
		                   e,
		                   t,
		                   several ? (uint64_t)t * VT_PERFETTO_PID_STRIDE : 0,
		                   several ? VT_PERFETTO_JOB_GPU_PID + (uint64_t)t * VT_MAX_DEVICES
		                           : VT_PERFETTO_GPU_PID,
		                   e->offset_ns[t]};
		if (write_trace(&pl, e->dirs[t]) != 0)
			rc = -1;
	}
	vt_te_close(&j);
	return rc || ferror(out) ? -1 : 0;
}
