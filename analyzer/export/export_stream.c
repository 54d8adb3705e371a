/* The streaming model's timeline as CSV or Perfetto JSON (export_stream.h). */
#include "export_stream.h"

#include <inttypes.h>

#include "live_curve.h"
#include "model_stream.h"
#include "site_names.h"
#include "trace_event.h"

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

static void counter(struct vt_te_writer *j, const struct vt_model *m,
                    const struct vt_stream_peak *pk)
{
	const struct vt_live_curve *c = vt_stream_curve(m, pk->proc, pk->device);
	char name[32];
	snprintf(name, sizeof name, "GPU %u live bytes", pk->device);
	for (uint32_t b = 0; c && b < c->n; b++) {
		vt_te_event(j, name, "C", vt_curve_bucket_t(c, b), (uint64_t)m->procs[pk->proc].pid,
		            0);
		vt_te_args_begin(j);
		vt_te_kv_u64(j, "bytes", c->max[b]);
		vt_te_end_object(j);
		vt_te_end_object(j);
	}
}

/* An instant event: what the snapshot holds, its 10 biggest stacks' sites
 * first ("site 1" and "site 1 bytes", ...: the args are flat). */
static void instant(struct vt_te_writer *j, const struct vt_model *m,
                    const struct vt_stream_peak *s, const char *what)
{
	char name[64];
	snprintf(name, sizeof name, "%s on GPU %u", what, s->device);
	vt_te_instant(j, name, "p", s->t_ns, (uint64_t)m->procs[s->proc].pid, 0);
	vt_te_args_begin(j);
	vt_te_kv_u64(j, "live_bytes", s->bytes);
	vt_te_kv_u64(j, "live_allocs", s->live_allocs);
	for (uint32_t k = 0; k < s->nsites && k < 10; k++) {
		char site[256], key[32];
		vt_name_site(m, s->proc, s->sites[k].stack_id, site, sizeof site);
		snprintf(key, sizeof key, "site %u", k + 1);
		vt_te_kv_string(j, key, site);
		snprintf(key, sizeof key, "site %u bytes", k + 1);
		vt_te_kv_u64(j, key, s->sites[k].bytes);
	}
	vt_te_end_object(j);
	vt_te_end_object(j);
}

int vt_export_stream_perfetto(const struct vt_model *m, const char *dir, FILE *out)
{
	struct vt_te_writer j;
	vt_te_open(&j, out, dir);
	for (uint32_t i = 0; i < m->nprocs; i++)
		vt_te_metadata(&j, "process_name", (uint64_t)m->procs[i].pid, 0, "name",
		               m->procs[i].exe, 0);
	uint32_t n, nf;
	const struct vt_stream_peak *pk = vt_stream_peaks(m, &n);
	for (uint32_t i = 0; i < n; i++) {
		counter(&j, m, &pk[i]);
		instant(&j, m, &pk[i], "peak");
	}
	const struct vt_stream_peak *f = vt_stream_failures(m, &nf);
	for (uint32_t i = 0; i < nf; i++)
		instant(&j, m, &f[i], "failed allocation");
	vt_te_close(&j);
	return ferror(out) ? -1 : 0;
}
