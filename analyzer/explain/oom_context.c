/* Findings in the light of an out-of-memory failure (see oom_context.h). */
#include "oom_context.h"

#include <stdlib.h>
#include <string.h>

#include "nomem.h"
#include "site_names.h"

/* Steps process p had begun by t_ns. */
static uint32_t steps_begun(const struct vt_proc *p, uint64_t t_ns)
{
	uint32_t n = 0;
	while (n < p->nsteps && p->step_t[n] <= t_ns)
		n++;
	return n;
}

/* Another whole_dataset_upload flag of the same process, device, size and
 * upload site: the site fills batches, not one dataset. */
static int has_twin(const struct vt_model *m, const struct vt_findings *f, uint32_t k)
{
	const struct vt_finding *a = &f->v[k];
	char site_a[256], site_b[256];
	vt_name_site(m, a->proc, a->stack_id, site_a, sizeof site_a);
	for (uint32_t i = 0; i < f->n; i++) {
		const struct vt_finding *b = &f->v[i];
		if (i == k || b->kind != VT_FINDING_WHOLE_DATASET || b->proc != a->proc ||
		    b->ndev != a->ndev || memcmp(b->devices, a->devices, a->ndev) ||
		    vt_finding_bytes_max(b) != vt_finding_bytes_max(a))
			continue;
		vt_name_site(m, b->proc, b->stack_id, site_b, sizeof site_b);
		if (!strcmp(site_a, site_b))
			return 1;
	}
	return 0;
}

/* 1 if finding k says nothing true about a job that failed at t_ns. */
static int untrue_before_oom(const struct vt_model *m, const struct vt_findings *f, uint32_t k,
                             uint32_t proc, uint64_t t_ns)
{
	const struct vt_finding *x = &f->v[k];
	const struct vt_proc *p = &m->procs[proc];
	uint32_t begun = steps_begun(p, t_ns);
	if (x->proc != proc)
		return 0;
	if (x->kind == VT_FINDING_PREFETCH_DEPTH)
		return begun < 3;
	if (x->kind != VT_FINDING_WHOLE_DATASET)
		return 0;
	if (begun && x->t_ns >= p->step_t[begun - 1] && x->t_ns <= t_ns)
		return 1; /* uploaded in the step that failed */
	return has_twin(m, f, k);
}

void vt_findings_before_oom(const struct vt_model *m, uint32_t proc, uint64_t t_ns,
                            struct vt_findings *f)
{
	uint8_t *drop = calloc(f->n ? f->n : 1, 1);
	if (!drop)
		vt_nomem();
	/* decide on the whole list first: twins are found among all of them */
	for (uint32_t k = 0; k < f->n; k++)
		drop[k] = (uint8_t)untrue_before_oom(m, f, k, proc, t_ns);
	uint32_t kept = 0;
	for (uint32_t k = 0; k < f->n; k++)
		if (!drop[k])
			f->v[kept++] = f->v[k];
	f->n = kept;
	free(drop);
}
