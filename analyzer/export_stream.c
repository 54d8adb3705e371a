/* The streaming model's timeline as CSV or Perfetto JSON (export_stream.h). */
#include "export_stream.h"

#include <inttypes.h>

#include "json_out.h"
#include "live_curve.h"
#include "model_stream.h"
#include "report_site.h"

int vt_export_stream_csv(const struct vt_model *m, FILE *out)
{
	uint32_t n;
	const struct vt_stream_peak *pk = vt_stream_peaks(m, &n);
	fputs("pid,device,t_ns,bucket_ns,max_bytes\n", out);
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_live_curve *c = vt_stream_curve(m, pk[i].proc, pk[i].device);
		for (uint32_t b = 0; c && b < c->n; b++)
			fprintf(out, "%d,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
			        m->procs[pk[i].proc].pid, pk[i].device, vt_curve_bucket_t(c, b),
			        c->width, c->max[b]);
	}
	return ferror(out) ? -1 : 0;
}

/* ---- Perfetto ------------------------------------------------------------ */

static void event_head(struct vt_json *j, const char *name, const char *ph, uint64_t t_ns, int pid)
{
	vt_json_begin_object(j);
	vt_json_kv_string(j, "name", name);
	vt_json_kv_string(j, "ph", ph);
	vt_json_kv_double(j, "ts", (double)t_ns / 1000.0); /* microseconds */
	vt_json_kv_i64(j, "pid", pid);
	vt_json_kv_i64(j, "tid", 0);
}

static void process_name(struct vt_json *j, const struct vt_proc *p)
{
	vt_json_begin_object(j);
	vt_json_kv_string(j, "name", "process_name");
	vt_json_kv_string(j, "ph", "M");
	vt_json_kv_i64(j, "pid", p->pid);
	vt_json_key(j, "args");
	vt_json_begin_object(j);
	vt_json_kv_string(j, "name", p->exe);
	vt_json_end_object(j);
	vt_json_end_object(j);
}

static void counter(struct vt_json *j, const struct vt_model *m, const struct vt_stream_peak *pk)
{
	const struct vt_live_curve *c = vt_stream_curve(m, pk->proc, pk->device);
	char name[32];
	snprintf(name, sizeof name, "GPU %u live bytes", pk->device);
	for (uint32_t b = 0; c && b < c->n; b++) {
		event_head(j, name, "C", vt_curve_bucket_t(c, b), m->procs[pk->proc].pid);
		vt_json_key(j, "args");
		vt_json_begin_object(j);
		vt_json_kv_u64(j, "bytes", c->max[b]);
		vt_json_end_object(j);
		vt_json_end_object(j);
	}
}

/* An instant event: what the snapshot holds, its biggest sites first. */
static void instant(struct vt_json *j, const struct vt_model *m, const struct vt_stream_peak *s,
                    const char *what)
{
	char name[64];
	snprintf(name, sizeof name, "%s on GPU %u", what, s->device);
	event_head(j, name, "i", s->t_ns, m->procs[s->proc].pid);
	vt_json_kv_string(j, "s", "p"); /* drawn across the process */
	vt_json_key(j, "args");
	vt_json_begin_object(j);
	vt_json_kv_u64(j, "live_bytes", s->bytes);
	vt_json_kv_u64(j, "live_allocs", s->live_allocs);
	vt_json_key(j, "sites"); /* by stack, largest first: the first 10 */
	vt_json_begin_array(j);
	for (uint32_t k = 0; k < s->nsites && k < 10; k++) {
		char site[256];
		vt_report_site(m, s->proc, s->sites[k].stack_id, site, sizeof site);
		vt_json_begin_object(j);
		vt_json_kv_string(j, "site", site);
		vt_json_kv_u64(j, "bytes", s->sites[k].bytes);
		vt_json_end_object(j);
	}
	vt_json_end_array(j);
	vt_json_end_object(j);
	vt_json_end_object(j);
}

int vt_export_stream_perfetto(const struct vt_model *m, FILE *out)
{
	struct vt_json j;
	vt_json_init(&j, out, 0);
	vt_json_begin_object(&j);
	vt_json_kv_string(&j, "displayTimeUnit", "ns");
	vt_json_key(&j, "traceEvents");
	vt_json_begin_array(&j);
	for (uint32_t i = 0; i < m->nprocs; i++)
		process_name(&j, &m->procs[i]);
	uint32_t n, nf;
	const struct vt_stream_peak *pk = vt_stream_peaks(m, &n);
	for (uint32_t i = 0; i < n; i++) {
		counter(&j, m, &pk[i]);
		instant(&j, m, &pk[i], "peak");
	}
	const struct vt_stream_peak *f = vt_stream_failures(m, &nf);
	for (uint32_t i = 0; i < nf; i++)
		instant(&j, m, &f[i], "failed allocation");
	vt_json_end_array(&j);
	vt_json_end_object(&j);
	return vt_json_finish(&j);
}
