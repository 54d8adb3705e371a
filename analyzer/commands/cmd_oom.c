/* `vramtrace oom DIR [--json] [--index N]`: the out-of-memory post-mortem
 * (computed in oom.c), as text for a person or JSON for a script. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_load.h"
#include "commands.h"
#include "json_out.h"
#include "accounting.h"
#include "oom.h"
#include "ranks.h" /* a process's rank and wall clock */
#include "report_json.h"
#include "report_text.h"
#include "record_text.h"
#include "site_names.h"
#include "units.h"
#include "term.h"

/* ---- text ------------------------------------------------------------------- */

/* The exe's file name, safe to print (term.h). One call per printf. */
static const char *exe_base(const struct vt_proc *p)
{
	static char buf[512];
	const char *b = strrchr(p->exe, '/');
	return vt_term_safe(b ? b + 1 : p->exe, buf, sizeof buf);
}

static void text_device(char *buf, size_t len, int dev)
{
	if (dev < 0)
		snprintf(buf, len, "all devices");
	else
		snprintf(buf, len, "GPU %d", dev);
}

static void text_event(const struct vt_oom_report *r, FILE *out)
{
	char bytes[32], when[32], dev[32];
	vt_format_bytes(r->request_bytes, bytes, sizeof bytes);
	vt_format_seconds(r->t_ns, when, sizeof when);
	text_device(dev, sizeof dev, r->device);
	if (r->source == VT_OOM_DRIVER) {
		const char *api = vt_api_name(r->failed->api);
		fprintf(out, "Out of memory %u of %u: %s of %s (%" PRIu64 " bytes) on %s at %s\n",
		        r->index, r->driver_count, api ? api : "allocation", bytes,
		        r->request_bytes, dev, when);
		fprintf(out, "  requested from %s (pid %d)\n", r->site,
		        r->m->procs[r->failed->proc].pid);
	} else {
		if (r->fw_parsed && r->fw.host)
			fprintf(out,
			        "Framework out of HOST memory %u of %u (the message names the CPU, "
			        "not a GPU) at %s; GPU memory on %s shown\n",
			        r->index, r->framework_count, when, dev);
		else
			fprintf(
			    out,
			    "Framework out of memory %u of %u (no driver allocation failed: the "
			    "framework's own pool was exhausted) on %s at %s\n",
			    r->index, r->framework_count, dev, when);
		fprintf(out, "  %s said: %s\n",
		        r->fw_parsed ? vt_oom_framework_name(r->fw.framework) : "the job",
		        r->fw_mark->text);
		if (r->request_bytes)
			fprintf(out, "  request: %s (%" PRIu64 " bytes%s)\n", bytes,
			        r->request_bytes,
			        r->fw_parsed && !r->fw.bytes_exact ? ", as rounded in the message"
			                                           : "");
	}
}

static void text_capacity(const struct vt_oom_report *r, FILE *out)
{
	char total[32], freeb[32], need[32], tracked[32], untracked[32], dev[32];
	text_device(dev, sizeof dev, r->device);
	vt_format_bytes(r->tracked_bytes, tracked, sizeof tracked);
	if (r->have_meminfo) {
		vt_format_bytes(r->total_bytes, total, sizeof total);
		vt_format_bytes(r->free_bytes, freeb, sizeof freeb);
		fprintf(out, "  %s: capacity %s, free %s%s then", dev, total,
		        r->free_estimated ? "~" : "", freeb);
		if (r->have_need && r->need_to_free) {
			vt_format_bytes(r->need_to_free, need, sizeof need);
			fprintf(out, "; %s (%" PRIu64 " bytes) more would have had to be free\n",
			        need, r->need_to_free);
		} else if (r->have_need) {
			fprintf(out,
			        "; the request was not larger than the free total (fragmentation, "
			        "or a limit below the device's)\n");
		} else {
			fputc('\n', out);
		}
		vt_format_bytes(r->untracked_bytes, untracked, sizeof untracked);
		fprintf(out,
		        "  in use: %s tracked in %u live allocations, %s untracked (contexts, "
		        "kernels, libraries, other processes)\n",
		        tracked, r->live_allocs, untracked);
	} else {
		fprintf(out,
		        "  %s: no cuMemGetInfo reading then; %s tracked in %u live allocations\n",
		        dev, tracked, r->live_allocs);
	}
}

/* The out-of-memory device's reading with NVML's view beside it (the
 * highest one, else the last), or NULL. */
static const struct vt_device_account *nvml_account(const struct vt_accounting *acc, int dev)
{
	for (uint32_t i = 0; i < acc->npeak; i++)
		if (acc->peak[i].device == dev && acc->peak[i].nvml)
			return &acc->peak[i];
	for (uint32_t i = 0; i < acc->ndev; i++)
		if (acc->dev[i].device == dev && acc->dev[i].nvml)
			return &acc->dev[i];
	return NULL;
}

/* Other processes on the device, as NVML named them at the shim's nearest
 * reading: memory the job could never have had. */
static void text_other_processes(const struct vt_oom_report *r, FILE *out)
{
	struct vt_accounting acc;
	vt_accounting_build(r->m, &acc);
	const struct vt_device_account *d = r->device >= 0 ? nvml_account(&acc, r->device) : NULL;
	if (!d || !d->nvml->others)
		return;
	char b[32], when[32], names[VT_NVML_LISTED * 64];
	vt_format_bytes(d->nvml->others_bytes, b, sizeof b);
	vt_format_seconds(d->t_ns, when, sizeof when);
	vt_report_nvml_others(d->nvml, names, sizeof names);
	fprintf(out, "  other processes on GPU %d: %s (%s; per NVML at %s, the %s reading)\n",
	        d->device, b, names, when, vt_meminfo_reason_name(d->reason));
}

static void text_categories(const uint64_t cats[VT_CAT_COUNT], uint64_t total, FILE *out,
                            const char *indent)
{
	for (int c = 0; c < VT_CAT_COUNT; c++) {
		if (!cats[c])
			continue;
		char b[32];
		vt_format_bytes(cats[c], b, sizeof b);
		fprintf(out, "%s%-12s %10s  %5.1f%%\n", indent, vt_category_name(c), b,
		        total ? 100.0 * (double)cats[c] / (double)total : 0.0);
	}
}

static void text_live(const struct vt_oom_report *r, FILE *out)
{
	char dev[32];
	text_device(dev, sizeof dev, r->device);
	fprintf(out, "\nLive on %s then, by category\n", dev);
	text_categories(r->cats, r->tracked_bytes, out, "  ");
	if (!r->tracked_bytes)
		fprintf(out, "  (nothing)\n");
	fprintf(out, "\nTop live sites then\n");
	for (uint32_t i = 0; i < r->nsites && i < 10; i++) {
		char b[32];
		vt_format_bytes(r->sites[i].bytes, b, sizeof b);
		fprintf(out, "  %10s %5u  %-11s  %s\n", b, r->sites[i].allocs,
		        vt_category_name(r->sites[i].category), r->sites[i].name);
	}
	fprintf(out, "\nLargest live allocations then\n");
	for (uint32_t i = 0; i < r->nlargest; i++) {
		char b[32], t[32];
		vt_format_bytes(r->largest[i].bytes, b, sizeof b);
		vt_format_seconds(r->largest[i].t_alloc, t, sizeof t);
		fprintf(out, "  %10s  %-11s  since %-9s  %s\n", b,
		        vt_category_name(r->largest[i].category), t, r->largest[i].site);
	}
}

static void text_advice(const struct vt_oom_report *r, FILE *out)
{
	if (r->likely_cause[0])
		fprintf(out, "\nLikely cause: %s\n", r->likely_cause);
	fprintf(out, "\nAdvice (from the findings that held memory then)\n");
	for (uint32_t i = 0; i < r->nadvice; i++) {
		const struct vt_finding *f = &r->findings.v[r->advice[i]];
		char b[32];
		vt_format_bytes(vt_finding_bytes_max(f), b, sizeof b);
		fprintf(out, "  [%s] %s: %s\n", vt_finding_kind_name(f->kind), b, f->advice);
	}
	if (!r->nadvice && r->nlargest) {
		char b[32];
		vt_format_bytes(r->largest[0].bytes, b, sizeof b);
		fprintf(out, "  No finding explains it; the largest holder was %s (%s, %s).\n",
		        r->largest[0].site, b, vt_category_name(r->largest[0].category));
	} else if (!r->nadvice) {
		fprintf(out, "  None: nothing tracked was live.\n");
	}
}

static void text_procs(const struct vt_oom_report *r, FILE *out)
{
	fprintf(out, "\nProcesses\n");
	for (uint32_t i = 0; i < r->nprocs; i++) {
		const struct vt_oom_proc *o = &r->procs[i];
		const struct vt_proc *p = &r->m->procs[o->proc];
		if (o->launcher) {
			fprintf(out, "  pid %d %s: the launcher (relayed the job's stderr)\n",
			        p->pid, exe_base(p));
			continue;
		}
		if (o->execed) {
			fprintf(out, "  pid %d %s: replaced itself (execve)\n", p->pid,
			        exe_base(p));
			continue;
		}
		if (o->clean) {
			fprintf(out, "  pid %d %s: exited (exit code %d)\n", p->pid, exe_base(p),
			        p->exit_code);
			continue;
		}
		char t[32], b[32];
		vt_format_seconds(o->last_t_ns, t, sizeof t);
		vt_format_bytes(o->live_bytes, b, sizeof b);
		fprintf(out, "  pid %d %s: %s; last event at %s", p->pid, exe_base(p),
		        o->running ? "running" : "did NOT exit cleanly (killed or crashed)", t);
		if (o->last_mark)
			fprintf(out, " after mark \"%s\"", o->last_mark);
		fprintf(out, "; it held %s in %u allocations then\n", b, o->live_allocs);
		text_categories(o->cats, o->live_bytes, out, "      ");
	}
}

static int write_text(const struct vt_oom_report *r, const char *dir, FILE *out)
{
	fprintf(out, "vramtrace oom: %s\n", dir);
	if (r->source == VT_OOM_NONE) {
		fprintf(out,
		        "No out-of-memory event in this trace (no failed driver allocation, no "
		        "framework OOM message).\n");
		if (r->running)
			fprintf(out, "The job is still running: its state so far is below.\n");
		else if (!r->clean_exit)
			fprintf(out, "The job did not exit cleanly: its last state is below.\n");
		text_procs(r, out);
		return 0;
	}
	text_event(r, out);
	text_capacity(r, out);
	text_other_processes(r, out);
	if (r->source == VT_OOM_DRIVER && r->fw_mark)
		fprintf(out, "  the framework also reported: %s\n", r->fw_mark->text);
	text_live(r, out);
	text_advice(r, out);
	text_procs(r, out);
	if (r->running)
		fprintf(out, "\nThe job is still running.\n");
	else if (!r->clean_exit)
		fprintf(out, "\nThe job did not exit cleanly.\n");
	return 0;
}

/* ---- JSON ------------------------------------------------------------------- */

static void json_cats(struct vt_json *j, const char *key, const uint64_t cats[VT_CAT_COUNT])
{
	vt_json_key(j, key);
	vt_json_begin_object(j);
	for (int c = 0; c < VT_CAT_COUNT; c++)
		vt_json_kv_u64(j, vt_category_name(c), cats[c]);
	vt_json_end_object(j);
}

static void json_u64_or_null(struct vt_json *j, const char *key, int have, uint64_t v)
{
	vt_json_key(j, key);
	if (have)
		vt_json_u64(j, v);
	else
		vt_json_null(j);
}

static void json_device(struct vt_json *j, const char *key, int dev)
{
	vt_json_key(j, key);
	if (dev >= 0)
		vt_json_u64(j, (uint64_t)dev);
	else
		vt_json_null(j);
}

static void json_oom(struct vt_json *j, const struct vt_oom_report *r)
{
	vt_json_key(j, "oom");
	if (r->source != VT_OOM_DRIVER) {
		vt_json_null(j);
		return;
	}
	const char *api = vt_api_name(r->failed->api);
	vt_json_begin_object(j);
	vt_json_kv_string(j, "api", api ? api : "unknown");
	vt_json_kv_u64(j, "bytes", r->request_bytes);
	json_device(j, "device", r->device);
	vt_json_kv_u64(j, "t_ns", r->t_ns);
	vt_json_kv_string(j, "site", r->site);
	json_u64_or_null(j, "free_bytes", r->have_meminfo, r->free_bytes);
	json_u64_or_null(j, "total_bytes", r->have_meminfo || r->total_bytes, r->total_bytes);
	vt_json_kv_i64(j, "pid", r->m->procs[r->failed->proc].pid);
	vt_json_kv_i64(j, "result", r->failed->result);
	vt_json_end_object(j);
}

static void json_framework(struct vt_json *j, const struct vt_oom_report *r)
{
	vt_json_key(j, "framework_oom");
	if (!r->fw_mark) {
		vt_json_null(j);
		return;
	}
	vt_json_begin_object(j);
	vt_json_kv_string(j, "message", r->fw_mark->text);
	vt_json_kv_u64(j, "bytes", r->fw_mark->value);
	vt_json_kv_string(j, "framework",
	                  r->fw_parsed ? vt_oom_framework_name(r->fw.framework) : "unknown");
	vt_json_kv_bool(j, "bytes_exact", r->fw_parsed && r->fw.bytes_exact);
	vt_json_kv_bool(j, "host", r->fw_parsed && r->fw.host);
	json_device(j, "device", r->fw_parsed ? r->fw.device : -1);
	vt_json_kv_u64(j, "t_ns", r->fw_mark->t_ns);
	vt_json_end_object(j);
}

static void json_largest(struct vt_json *j, const struct vt_oom_report *r)
{
	vt_json_key(j, "largest_live");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < r->nlargest; i++) {
		vt_json_begin_object(j);
		vt_json_kv_u64(j, "bytes", r->largest[i].bytes);
		vt_json_kv_string(j, "category", vt_category_name(r->largest[i].category));
		vt_json_kv_string(j, "site", r->largest[i].site);
		vt_json_kv_u64(j, "device", r->largest[i].device);
		vt_json_kv_u64(j, "t_alloc_ns", r->largest[i].t_alloc);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static void json_sites(struct vt_json *j, const struct vt_oom_report *r)
{
	vt_json_key(j, "top_sites");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < r->nsites && i < 10; i++) {
		vt_json_begin_object(j);
		vt_json_kv_string(j, "site", r->sites[i].name);
		vt_json_kv_string(j, "category", vt_category_name(r->sites[i].category));
		vt_json_kv_u64(j, "bytes", r->sites[i].bytes);
		vt_json_kv_u64(j, "allocs", r->sites[i].allocs);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static void json_advice(struct vt_json *j, const struct vt_oom_report *r)
{
	vt_json_key(j, "likely_cause");
	if (r->likely_cause[0])
		vt_json_string(j, r->likely_cause);
	else
		vt_json_null(j);
	vt_json_key(j, "advice");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < r->nadvice; i++)
		vt_json_string(j, r->findings.v[r->advice[i]].advice);
	vt_json_end_array(j);
	vt_json_key(j, "flags");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < r->nadvice; i++) {
		const struct vt_finding *f = &r->findings.v[r->advice[i]];
		char site[VT_OOM_SITE_LEN];
		vt_name_site(r->m, f->proc, f->stack_id, site, sizeof site);
		vt_json_begin_object(j);
		vt_json_kv_string(j, "kind", vt_finding_kind_name(f->kind));
		vt_json_kv_string(j, "site", site);
		vt_json_kv_u64(j, "bytes", vt_finding_bytes_max(f));
		vt_json_kv_u64(j, "t_ns", f->t_ns);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

static void json_procs(struct vt_json *j, const struct vt_oom_report *r)
{
	vt_json_key(j, "processes");
	vt_json_begin_array(j);
	for (uint32_t i = 0; i < r->nprocs; i++) {
		const struct vt_oom_proc *o = &r->procs[i];
		const struct vt_proc *p = &r->m->procs[o->proc];
		vt_json_begin_object(j);
		vt_json_kv_i64(j, "pid", p->pid);
		vt_json_kv_string(j, "exe", p->exe);
		vt_json_kv_string(j, "state",
		                  o->launcher  ? "launcher"
		                  : o->execed  ? "exec"
		                  : o->clean   ? "exited"
		                  : o->running ? "running"
		                               : "died");
		vt_json_kv_bool(j, "clean_exit", o->clean || o->execed);
		if (o->clean)
			vt_json_kv_i64(j, "exit_code", p->exit_code);
		vt_json_kv_u64(j, "last_t_ns", o->last_t_ns);
		vt_json_key(j, "last_mark");
		if (o->last_mark)
			vt_json_string(j, o->last_mark);
		else
			vt_json_null(j);
		if (!o->clean && !o->execed && !o->launcher) {
			vt_json_kv_u64(j, "live_bytes", o->live_bytes);
			vt_json_kv_u64(j, "live_allocs", o->live_allocs);
			json_cats(j, "live_by_category", o->cats);
		}
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
}

/* ---- a job's traces ------------------------------------------------------- */

/* One trace's first out-of-memory, placed on the wall clock. */
struct job_oom {
	unsigned trace;
	uint64_t wall_ns;
	char who[96]; /* "rank 2" or host:pid */
	char site[VT_OOM_SITE_LEN];
};

/* The out-of-memory events of several traces (a job's hosts). */
struct job_ooms {
	unsigned ntraces;
	const struct vt_cli_traces *traces;
	struct job_oom *v;
	unsigned n;
	unsigned first; /* earliest by wall clock */
};

/* Trace i's first out-of-memory into job (if it has one): 0, or 1. */
static int job_ooms_read(struct job_ooms *job, unsigned i)
{
	struct vt_model *m = vt_cmd_load("oom", job->traces->dir[i], 0);
	if (!m)
		return 1;
	char err[1024];
	struct vt_oom_report r;
	if (vt_oom_build(&r, m, 1, err, sizeof err) == 0 && r.source != VT_OOM_NONE) {
		struct job_oom *o = &job->v[job->n++];
		const struct vt_proc *p = &m->procs[r.at.proc < m->nprocs ? r.at.proc : 0];
		o->trace = i;
		o->wall_ns = vt_proc_wall_ns(p, r.t_ns);
		vt_proc_rank_label(p, o->who, sizeof o->who);
		snprintf(o->site, sizeof o->site, "%s", r.site);
		if (o->wall_ns < job->v[job->first].wall_ns)
			job->first = job->n - 1;
	}
	vt_oom_free(&r);
	vt_model_free(m);
	return 0;
}

static int job_ooms_find(struct job_ooms *job, const struct vt_cli_traces *traces)
{
	memset(job, 0, sizeof *job);
	job->traces = traces;
	job->ntraces = traces->n;
	job->v = calloc(traces->n, sizeof *job->v);
	if (!job->v)
		return 1;
	for (unsigned i = 0; i < traces->n; i++)
		if (job_ooms_read(job, i)) {
			free(job->v);
			return 1;
		}
	return 0;
}

/* Which traces ran out of memory, the first one's post-mortem below. */
static void job_ooms_text(const struct job_ooms *job, FILE *out)
{
	if (!job)
		return;
	if (!job->n) {
		fprintf(out,
		        "vramtrace oom: none of the %u traces has an out-of-memory event; the "
		        "first trace's state follows\n\n",
		        job->ntraces);
		return;
	}
	const struct job_oom *f = &job->v[job->first];
	fprintf(out,
	        "vramtrace oom: %u of %u traces ran out of memory; the first (wall clock) "
	        "was %s in %s, its post-mortem below\n",
	        job->n, job->ntraces, f->who, job->traces->dir[f->trace]);
	for (unsigned i = 0; i < job->n; i++) {
		char site[1024];
		if (i != job->first)
			fprintf(out, "  then %s in %s (%+.3f s)%s%s\n", job->v[i].who,
			        job->traces->dir[job->v[i].trace],
			        ((double)job->v[i].wall_ns - (double)f->wall_ns) / 1e9,
			        job->v[i].site[0] ? " at " : "",
			        vt_term_safe(job->v[i].site, site, sizeof site));
	}
	fputc('\n', out);
}

/* "job": the traces and each one's first out-of-memory. */
static void job_ooms_json(struct vt_json *j, const struct job_ooms *job)
{
	if (!job)
		return;
	vt_json_key(j, "job");
	vt_json_begin_object(j);
	vt_json_kv_u64(j, "traces", job->ntraces);
	vt_json_key(j, "out_of_memory");
	vt_json_begin_array(j);
	for (unsigned i = 0; i < job->n; i++) {
		vt_json_begin_object(j);
		vt_json_kv_string(j, "trace", job->traces->dir[job->v[i].trace]);
		vt_json_kv_string(j, "rank", job->v[i].who);
		vt_json_kv_u64(j, "realtime_ns", job->v[i].wall_ns);
		vt_json_kv_string(j, "site", job->v[i].site);
		vt_json_kv_bool(j, "first", i == job->first);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
	vt_json_end_object(j);
}

static int write_json(const struct vt_oom_report *r, const struct job_ooms *job, FILE *out)
{
	static const char *const sources[] = {"none", "driver", "framework"};
	struct vt_json j;
	vt_json_init(&j, out, 1);
	vt_json_begin_object(&j);
	vt_json_kv_string(&j, "source", sources[r->source]);
	vt_json_kv_u64(&j, "index", r->source ? r->index : 0);
	vt_json_kv_u64(&j, "oom_events", r->driver_count);
	vt_json_kv_u64(&j, "framework_oom_events", r->framework_count);
	json_oom(&j, r);
	json_framework(&j, r);
	vt_json_kv_bool(&j, "clean_exit", r->clean_exit);
	vt_json_kv_string(&j, "state", r->running ? "running" : "ended");
	json_device(&j, "device", r->device);
	vt_json_kv_u64(&j, "t_ns", r->t_ns);
	json_u64_or_null(&j, "free_bytes", r->have_meminfo, r->free_bytes);
	vt_json_kv_bool(&j, "free_bytes_estimated", r->free_estimated);
	json_u64_or_null(&j, "total_bytes", r->have_meminfo || r->total_bytes, r->total_bytes);
	vt_json_kv_u64(&j, "tracked_live_bytes", r->tracked_bytes);
	json_u64_or_null(&j, "untracked_bytes", r->have_untracked, r->untracked_bytes);
	json_u64_or_null(&j, "need_to_free_bytes", r->have_need, r->need_to_free);
	json_cats(&j, "live_by_category", r->cats);
	json_sites(&j, r);
	json_largest(&j, r);
	json_advice(&j, r);
	json_procs(&j, r);
	struct vt_accounting acc; /* used memory per device, by holder */
	vt_accounting_build(r->m, &acc);
	vt_report_accounting_json(&j, &acc);
	job_ooms_json(&j, job);
	vt_json_end_object(&j);
	return vt_json_finish(&j);
}

/* ---- command ------------------------------------------------------------------- */

static const struct vt_cli_option oom_options[] = {
    {"--json", NULL, "the post-mortem as JSON"},
    {"--index", "N", "the N-th out-of-memory event (default 1, the first)"},
    {NULL, NULL, NULL},
};

static const struct vt_cli_help oom_help = {
    "oom", "DIR...",
    "Explain an out-of-memory event: what was requested, what held the device, what would\n"
    "have had to be free; and the last state of a process that was killed.",
    oom_options,
    "Several DIRs, or a job folder (a folder of traces): which ranks ran out of memory,\n"
    "and the post-mortem of the job's first by wall clock (--index counts in its trace).\n"
    "exit: 0, 1 when the trace cannot be read, has no such event or the output cannot be\n"
    "written, 2 for a usage error.\n"};

struct oom_args {
	struct vt_cli_traces traces;
	char *names[VT_CLI_MAX_TRACES]; /* traces found in job folders */
	unsigned nnames;
	int json;
	uint32_t index;
};

static int parse_index(const char *s, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (!*s || *end || errno || v == 0 || v > UINT32_MAX || *s == '-')
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int oom_option(void *ctx, const struct vt_cli_option *o, const char *v)
{
	struct oom_args *a = ctx;
	if (!strcmp(o->name, "--json"))
		a->json = 1;
	else if (parse_index(v, &a->index))
		return vt_cli_usage_error("oom", "--index wants a number >= 1, not '%s'", v);
	return 0;
}

static int oom_operand(void *ctx, const char *arg)
{
	struct oom_args *a = ctx;
	return vt_cmd_add_traces("oom", &a->traces, arg, a->names, &a->nnames);
}

/* The post-mortem of one trace: 0, or 1 after a line on stderr. */
static int oom_trace(const char *dir, const struct oom_args *a, const struct job_ooms *job)
{
	struct vt_model *m = vt_cmd_load("oom", dir, 0);
	if (!m)
		return 1;
	char err[1024];
	struct vt_oom_report r;
	int rc = 0;
	if (vt_oom_build(&r, m, a->index, err, sizeof err) < 0) {
		fprintf(stderr, "vramtrace oom: %s\n", err);
		rc = 1;
	} else if (a->json) {
		rc = write_json(&r, job, stdout) ? 1 : 0;
	} else {
		job_ooms_text(job, stdout);
		rc = write_text(&r, dir, stdout) ? 1 : 0;
	}
	vt_oom_free(&r);
	vt_model_free(m);
	return rc;
}

/* Several traces: each read in turn for its first out-of-memory (one
 * model at a time: a 64-host job need not fit at once), then the
 * post-mortem of the job's first by wall clock. */
static int oom_job(const struct oom_args *a)
{
	struct job_ooms job;
	if (job_ooms_find(&job, &a->traces))
		return 1;
	const char *dir = a->traces.dir[job.n ? job.v[job.first].trace : 0];
	int rc = oom_trace(dir, a, &job);
	free(job.v);
	return rc;
}

int cmd_oom(int argc, char **argv)
{
	struct oom_args a;
	memset(&a, 0, sizeof a);
	a.index = 1;
	const struct vt_cli_parser parser = {&oom_help, oom_option, oom_operand, 0};
	int next, rc = vt_cli_parse(&parser, argc, argv, &a, &next);
	if (!rc && !a.traces.n)
		rc = vt_cli_usage_error("oom", "which trace? (a directory `vramtrace run` wrote)");
	if (!rc)
		rc = a.traces.n == 1 ? oom_trace(a.traces.dir[0], &a, NULL) : oom_job(&a);
	else if (rc == VT_CLI_HELP_SHOWN)
		rc = 0;
	vt_cmd_free_names(a.names, a.nnames);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "vramtrace oom: cannot write the output\n");
		rc = 1;
	}
	return rc;
}
