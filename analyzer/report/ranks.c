/* The ranks of a distributed job (ranks.h). Each process's peak is its
 * own: ranks run on different devices and hosts, and the device peak of a
 * trace mixes them. Hosts' clocks are never compared as monotonic times:
 * each log's start is placed by its recorded wall-clock base, and when every
 * rank marked its steps, steps are matched by number. */
#include "ranks.h"

#include <stdlib.h>
#include <string.h>

#include "model_query.h"
#include "site_names.h"
#include "steps.h"

/* Walk p's charged allocations and frees in its own order (seq) and note
 * the moment it held the most. */
static void proc_peak(const struct vt_model *m, uint32_t pi, struct vt_rank_row *row)
{
	const struct vt_proc *p = &m->procs[pi];
	uint32_t a = p->alloc_begin, f = p->free_begin;
	uint64_t live = 0;
	row->peak = vt_moment_at_seq(pi, 0, p->clock_offset_ns);
	while (a < p->alloc_end) {
		const struct vt_alloc *al = &m->allocs[a];
		const struct vt_alloc *fr = f < p->free_end ? &m->allocs[m->free_order[f]] : NULL;
		if (fr && fr->seq_free < al->seq_alloc) {
			if (fr->flags & VT_AF_CHARGED)
				live -= fr->bytes < live ? fr->bytes : live;
			f++;
			continue;
		}
		a++;
		if (!(al->flags & VT_AF_CHARGED))
			continue;
		live += al->bytes;
		if (live > row->peak_bytes) {
			row->peak_bytes = live;
			row->peak = vt_moment_at_seq(pi, al->seq_alloc, al->t_alloc);
		}
	}
}

/* Its bytes by category and by device at its peak: the device with most. */
static void peak_contents(const struct vt_model *m, struct vt_rank_row *row)
{
	const struct vt_proc *p = &m->procs[row->proc];
	uint64_t *by_dev = calloc(VT_MAX_DEVICES, sizeof *by_dev);
	row->device = -1;
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (!(a->flags & VT_AF_CHARGED) || !vt_alloc_live_at(m, a, &row->peak))
			continue;
		row->cats[a->category < VT_CAT_COUNT ? a->category : VT_CAT_UNKNOWN] += a->bytes;
		if (by_dev)
			by_dev[a->device] += a->bytes;
	}
	for (int d = 0; by_dev && d < VT_MAX_DEVICES; d++)
		if (by_dev[d] && (row->device < 0 || by_dev[d] > by_dev[row->device]))
			row->device = d;
	free(by_dev);
}

/* CLOCK_REALTIME of trace time t in process p: its log's wall-clock base
 * plus the time since the log started. */
uint64_t vt_proc_wall_ns(const struct vt_proc *p, uint64_t t_ns)
{
	return p->realtime_base_ns + (t_ns > p->clock_offset_ns ? t_ns - p->clock_offset_ns : 0);
}

static void fill_row(struct vt_rank_row *row, const struct vt_report *r, uint32_t trace,
                     uint32_t pi)
{
	const struct vt_model *m = r->m;
	const struct vt_proc *p = &m->procs[pi];
	memset(row, 0, sizeof *row);
	row->r = r;
	row->trace = trace;
	row->proc = pi;
	row->rank = p->rank_source ? p->rank : -1;
	proc_peak(m, pi, row);
	peak_contents(m, row);
	for (uint32_t i = 0; i < r->findings.n; i++)
		row->findings += r->findings.v[i].proc == pi;
	for (uint32_t i = 0; i < m->nfailed; i++)
		row->failed_allocs += m->failed[i].proc == pi;
	row->peak_step = p->nsteps ? vt_step_of(p, row->peak.t_ns) : -1;
	row->start_wall_ns = p->realtime_base_ns;
	if (p->step_source == VT_STEPS_MARKERS && p->nsteps)
		row->step0_wall_ns = vt_proc_wall_ns(p, p->step_t[0]);
}

/* Ranked rows first by rank, then the others by host and pid. */
static int row_cmp(const void *x, const void *y)
{
	const struct vt_rank_row *a = x, *b = y;
	if ((a->rank < 0) != (b->rank < 0))
		return a->rank < 0 ? 1 : -1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	const struct vt_proc *pa = &a->r->m->procs[a->proc], *pb = &b->r->m->procs[b->proc];
	int h = strcmp(pa->hostname, pb->hostname);
	if (h)
		return h;
	return pa->pid < pb->pid ? -1 : pa->pid > pb->pid;
}

/* A process is a rank when it allocated device memory: the launcher
 * (torchrun's agent, mpirun) allocates none. */
static int allocated(const struct vt_model *m, uint32_t pi)
{
	const struct vt_proc *p = &m->procs[pi];
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++)
		if (m->allocs[i].flags & VT_AF_CHARGED)
			return 1;
	return 0;
}

static int collect_rows(struct vt_job *j, const struct vt_report *const *reports, uint32_t n)
{
	uint32_t cap = 0;
	for (uint32_t t = 0; t < n; t++)
		cap += reports[t]->m->nprocs;
	j->rows = calloc(cap ? cap : 1, sizeof *j->rows);
	if (!j->rows)
		return -1;
	for (uint32_t t = 0; t < n; t++)
		for (uint32_t pi = 0; pi < reports[t]->m->nprocs; pi++)
			if (allocated(reports[t]->m, pi))
				fill_row(&j->rows[j->nrows++], reports[t], t, pi);
	qsort(j->rows, j->nrows, sizeof *j->rows, row_cmp);
	j->all_ranked = j->nrows > 0;
	for (uint32_t i = 0; i < j->nrows; i++)
		j->all_ranked &= j->rows[i].rank >= 0;
	return 0;
}

/* Bytes of one category a row held at its peak, by site. */
struct site_sum {
	char name[256];
	uint64_t bytes;
};
#define MAX_SITE_SUMS 256 /* more sites than this share the last entry */

static uint32_t site_sums(const struct vt_rank_row *row, int cat, struct site_sum *out)
{
	const struct vt_model *m = row->r->m;
	const struct vt_proc *p = &m->procs[row->proc];
	uint32_t n = 0;
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (!(a->flags & VT_AF_CHARGED) || a->category != cat ||
		    !vt_alloc_live_at(m, a, &row->peak))
			continue;
		char name[256];
		vt_name_site(m, row->proc, a->stack_id, name, sizeof name);
		uint32_t k = 0;
		while (k < n && strcmp(out[k].name, name))
			k++;
		if (k == n && n < MAX_SITE_SUMS)
			snprintf(out[n++].name, sizeof out->name, "%s", name);
		else if (k == n)
			k = n - 1;
		out[k].bytes += a->bytes;
	}
	return n;
}

static uint64_t bytes_of_site(const struct site_sum *s, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(s[i].name, name))
			return s[i].bytes;
	return 0;
}

/* The sites where hi holds the most more than lo, largest gap first. */
static void name_gap_sites(struct vt_job *j, struct vt_rank_imbalance *im)
{
	struct site_sum *hi = calloc(2 * MAX_SITE_SUMS, sizeof *hi), *lo = hi + MAX_SITE_SUMS;
	if (!hi)
		return;
	uint32_t nhi = site_sums(&j->rows[im->hi], im->category, hi);
	uint32_t nlo = site_sums(&j->rows[im->lo], im->category, lo);
	for (uint32_t i = 0; i < nhi; i++) {
		uint64_t other = bytes_of_site(lo, nlo, hi[i].name);
		if (hi[i].bytes <= other)
			continue;
		uint32_t at = im->nsites;
		while (at > 0 && im->sites[at - 1].hi_bytes - im->sites[at - 1].lo_bytes <
		                     hi[i].bytes - other)
			at--;
		if (at >= VT_RANK_DIFF_SITES)
			continue;
		uint32_t last =
		    im->nsites < VT_RANK_DIFF_SITES ? im->nsites : VT_RANK_DIFF_SITES - 1;
		memmove(&im->sites[at + 1], &im->sites[at], (last - at) * sizeof im->sites[0]);
		snprintf(im->sites[at].name, sizeof im->sites[at].name, "%s", hi[i].name);
		im->sites[at].hi_bytes = hi[i].bytes;
		im->sites[at].lo_bytes = other;
		if (im->nsites < VT_RANK_DIFF_SITES)
			im->nsites++;
	}
	free(hi);
}

static uint64_t gap_of(const struct vt_job *j, const struct vt_rank_imbalance *im)
{
	return j->rows[im->hi].cats[im->category] - j->rows[im->lo].cats[im->category];
}

static int gap_cmp_job(const struct vt_job *j, const struct vt_rank_imbalance *a,
                       const struct vt_rank_imbalance *b)
{
	uint64_t ga = gap_of(j, a), gb = gap_of(j, b);
	return ga > gb ? -1 : ga < gb;
}

/* Per category held by some rank: the most and the least at the ranks'
 * peaks, most bytes apart first (a handful of categories: insertion). */
static void find_imbalance(struct vt_job *j)
{
	if (j->nrows < 2)
		return;
	for (int c = 0; c < VT_CAT_COUNT; c++) {
		struct vt_rank_imbalance im = {.category = c};
		for (uint32_t i = 1; i < j->nrows; i++) {
			if (j->rows[i].cats[c] > j->rows[im.hi].cats[c])
				im.hi = i;
			if (j->rows[i].cats[c] < j->rows[im.lo].cats[c])
				im.lo = i;
		}
		if (j->rows[im.hi].cats[c] == j->rows[im.lo].cats[c])
			continue;
		uint32_t at = j->nimbalance++;
		while (at > 0 && gap_cmp_job(j, &im, &j->imbalance[at - 1]) < 0) {
			j->imbalance[at] = j->imbalance[at - 1];
			at--;
		}
		j->imbalance[at] = im;
	}
	for (uint32_t i = 0; i < j->nimbalance; i++)
		name_gap_sites(j, &j->imbalance[i]);
}

/* Step markers when every rank marked its steps (step k of each is the
 * same step of the job), else the logs' wall-clock bases. */
static void align(struct vt_job *j)
{
	struct vt_rank_alignment *al = &j->alignment;
	uint64_t first = UINT64_MAX, last = 0;
	int markers = j->nrows > 0;
	uint32_t common = UINT32_MAX;
	for (uint32_t i = 0; i < j->nrows; i++) {
		const struct vt_rank_row *row = &j->rows[i];
		const struct vt_proc *p = &row->r->m->procs[row->proc];
		first = row->start_wall_ns < first ? row->start_wall_ns : first;
		last = row->start_wall_ns > last ? row->start_wall_ns : last;
		markers &= p->step_source == VT_STEPS_MARKERS && p->nsteps > 0;
		common = p->nsteps < common ? p->nsteps : common;
	}
	al->start_spread_ns = j->nrows ? last - first : 0;
	al->by = markers ? VT_ALIGN_STEP_MARKERS : VT_ALIGN_WALL_CLOCK;
	if (!markers)
		return;
	al->common_steps = common;
	for (uint32_t k = 0; k < common; k++) {
		uint64_t lo = UINT64_MAX, hi = 0;
		for (uint32_t i = 0; i < j->nrows; i++) {
			const struct vt_proc *p = &j->rows[i].r->m->procs[j->rows[i].proc];
			uint64_t w = vt_proc_wall_ns(p, p->step_t[k]);
			lo = w < lo ? w : lo;
			hi = w > hi ? w : hi;
		}
		if (hi - lo > al->max_skew_ns)
			al->max_skew_ns = hi - lo;
	}
}

int vt_job_build(struct vt_job *j, const struct vt_report *const *reports, uint32_t n)
{
	memset(j, 0, sizeof *j);
	if (collect_rows(j, reports, n) != 0)
		return -1;
	find_imbalance(j);
	align(j);
	return 0;
}

void vt_job_free(struct vt_job *j)
{
	free(j->rows);
	memset(j, 0, sizeof *j);
}

int vt_job_wanted(const struct vt_report *const *reports, uint32_t n)
{
	if (n != 1)
		return n > 1;
	uint32_t ranked = 0;
	for (uint32_t pi = 0; pi < reports[0]->m->nprocs; pi++)
		ranked += reports[0]->m->procs[pi].rank_source != VT_RANK_NONE;
	return ranked >= 2;
}

void vt_rank_label(const struct vt_rank_row *row, char *buf, size_t len)
{
	vt_proc_rank_label(&row->r->m->procs[row->proc], buf, len);
}

void vt_proc_rank_label(const struct vt_proc *p, char *buf, size_t len)
{
	if (p->rank_source && p->rank >= 0)
		snprintf(buf, len, "rank %d", (int)p->rank);
	else
		snprintf(buf, len, "%s:%d", p->hostname[0] ? p->hostname : "?", (int)p->pid);
}

const struct vt_rank_row *vt_job_find_rank(const struct vt_job *j, int32_t rank)
{
	for (uint32_t i = 0; i < j->nrows; i++)
		if (j->rows[i].rank == rank)
			return &j->rows[i];
	return NULL;
}
