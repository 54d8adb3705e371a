/* Step detection (see steps.h). */
#include "steps.h"

#include <stdlib.h>
#include <string.h>

#include "model_query.h"
#include "nomem.h"
#include "sorted_u64.h"

const char *vt_step_source_name(enum vt_step_source s)
{
	switch (s) {
	case VT_STEPS_MARKERS:
		return "markers";
	case VT_STEPS_PERIOD:
		return "period";
	default:
		return "none";
	}
}

/* The step a loop of steps of one length would put t in (first <= t <
 * last): the classifier asks once or twice for each allocation, and a
 * search through a long job's steps was a third of the findings' time. */
static uint32_t step_guess(const uint64_t *step_t, uint32_t nsteps, uint64_t t_ns)
{
	double at = (double)(t_ns - step_t[0]) / (double)(step_t[nsteps - 1] - step_t[0]);
	uint32_t g = (uint32_t)(at * (double)(nsteps - 1));
	return g < nsteps - 1 ? g : nsteps - 2;
}

int vt_step_in(const uint64_t *step_t, uint32_t nsteps, uint64_t t_ns)
{
	if (!nsteps || t_ns < step_t[0])
		return -1;
	if (t_ns >= step_t[nsteps - 1])
		return (int)nsteps - 1;
	/* the start times ascend: the step whose start is the last <= t is
	 * the one answer, the guess's when it holds, else the search's */
	uint32_t g = step_guess(step_t, nsteps, t_ns);
	if (step_t[g] <= t_ns && step_t[g + 1] > t_ns)
		return (int)g;
	uint32_t lo = 0, hi = nsteps; /* last step start <= t */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (step_t[mid] <= t_ns)
			lo = mid;
		else
			hi = mid;
	}
	return (int)lo;
}

int vt_step_of(const struct vt_proc *p, uint64_t t_ns)
{
	return vt_step_in(p->step_t, p->nsteps, t_ns);
}

/* Sort v[0..n): step markers come in time order, and the gaps of a loop
 * are often all one value, so the check in one pass spares most sorts (the
 * two of a long trace were 1 % of its report). */
static void sort_u64(uint64_t *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		if (v[i] < v[i - 1]) {
			qsort(v, n, sizeof *v, vt_cmp_u64);
			return;
		}
}

/* Of the gaps t[i] - t[i - 1] whose bits under `mask` are `prefix`, how
 * many have each value of the byte at `shift`. */
static void gap_bytes(const uint64_t *t, uint32_t n, uint64_t mask, uint64_t prefix, int shift,
                      uint32_t *count)
{
	for (uint32_t i = 1; i < n; i++) {
		uint64_t g = t[i] - t[i - 1];
		if ((g & mask) == prefix)
			count[(g >> shift) & 0xff]++;
	}
}

/* The median gap between the times t[0..n) (the (n - 1) / 2-th smallest
 * gap), a byte at a time from the top (a radix select) over the gaps as
 * they are read: a sorted copy of them was a third of a long trace's peak
 * memory, with a marker a step. */
static uint64_t median_gap(const uint64_t *t, uint32_t n)
{
	if (n < 2)
		return 0;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (uint32_t i = 1; i < n; i++) {
		uint64_t g = t[i] - t[i - 1];
		lo = g < lo ? g : lo;
		hi = g > hi ? g : hi;
	}
	uint32_t k = (n - 1) / 2; /* of the gaps left, the k-th smallest */
	uint64_t mask = 0, prefix = 0;
	for (int shift = 56; shift >= 0; shift -= 8) {
		uint64_t byte = 0xffull << shift;
		if (!((lo ^ hi) >> shift)) { /* the same in every gap */
			mask |= byte;
			prefix |= lo & byte;
			continue;
		}
		uint32_t count[256] = {0}, b = 0;
		gap_bytes(t, n, mask, prefix, shift, count);
		while (k >= count[b])
			k -= count[b++];
		mask |= byte;
		prefix |= (uint64_t)b << shift;
	}
	return prefix;
}

static int is_step_mark(const struct vt_mark *mk)
{
	return vt_mark_is_step(mk->kind, mk->text, strlen(mk->text));
}

static int steps_from_markers(struct vt_proc *p)
{
	uint32_t n = p->nstep_marks; /* a folding model's, kept as times */
	for (uint32_t i = 0; i < p->nmarks; i++)
		n += is_step_mark(&p->marks[i]);
	if (!n)
		return 0;
	if (n == p->nstep_marks) { /* they are the steps: lent, not copied (give_back_marks) */
		p->step_t = p->step_marks;
		p->nsteps = n;
		p->step_marks = NULL;
		sort_u64(p->step_t, p->nsteps);
		p->step_source = VT_STEPS_MARKERS;
		return 1;
	}
	p->step_t = malloc(n * sizeof *p->step_t);
	if (!p->step_t)
		return 0;
	for (uint32_t i = 0; i < p->nstep_marks; i++)
		p->step_t[p->nsteps++] = p->step_marks[i];
	for (uint32_t i = 0; i < p->nmarks; i++)
		if (is_step_mark(&p->marks[i]))
			p->step_t[p->nsteps++] = p->marks[i].t_ns;
	sort_u64(p->step_t, p->nsteps);
	p->step_source = VT_STEPS_MARKERS;
	return 1;
}

/* The device with the most allocations in this process. */
static int busiest_device(const struct vt_model *m, const struct vt_proc *p)
{
	uint32_t count[VT_MAX_DEVICES] = {0};
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++)
		if (m->allocs[i].device != VT_DEVICE_UNKNOWN)
			count[m->allocs[i].device]++;
	int best = 0;
	for (int d = 1; d < VT_MAX_DEVICES; d++)
		if (count[d] > count[best])
			best = d;
	return best;
}

struct valley {
	uint64_t bytes, t_ns;
	uint64_t allocs; /* allocations on the device before it */
};

/* Local minima of live bytes on dev: a free (or run of frees) followed by an
 * allocation. The frees after the last allocation (teardown) are not one.
 * Allocations freed after `kept_from` are left out (VT_T_NEVER: none). */
static struct valley *find_valleys(const struct vt_model *m, const struct vt_proc *p, int dev,
                                   uint64_t kept_from, uint32_t *nout, uint64_t *total_allocs)
{
	uint64_t allocs = 0;
	uint32_t cap = 64, n = 0;
	struct valley *v = malloc(cap * sizeof *v);
	struct vt_proc_walk w;
	uint32_t idx;
	int take_free;
	uint64_t live = 0;
	int pending = 0;
	struct valley cand = {0, 0, 0};
	vt_proc_walk_begin(p, &w);
	while (v && vt_proc_walk_next(m, p, &w, &idx, &take_free)) {
		const struct vt_alloc *e = &m->allocs[idx];
		if (e->device != dev || !(e->flags & VT_AF_CHARGED) ||
		    (kept_from != VT_T_NEVER && e->t_free > kept_from))
			continue;
		if (take_free) {
			live -= e->bytes;
			pending = 1;
			cand = (struct valley){live, e->t_free, allocs};
			continue;
		}
		if (pending) {
			if (n == cap) {
				cap *= 2;
				struct valley *nv = realloc(v, cap * sizeof *v);
				if (!nv)
					break;
				v = nv;
			}
			v[n++] = cand;
			pending = 0;
		}
		live += e->bytes;
		allocs++;
	}
	*nout = v ? n : 0;
	*total_allocs = allocs;
	return v;
}

/* Valley levels this close count as one: a job that keeps a few bytes more
 * every step (metrics, a growing list of losses) still has its steps. */
static uint64_t level_slack(uint64_t level)
{
	return level / 200; /* 0.5 % */
}

struct level_pick {
	uint64_t bytes;
	uint32_t index; /* position in the valley sequence */
};

static int cmp_level(const void *a, const void *b)
{
	const struct level_pick *x = a, *y = b;
	return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/* The run's valleys in this many parts, for where a level recurs. */
#define LEVEL_PARTS 8

/* Whether the valleys of a level reach three parts in four of the run that
 * they could (as many parts as valleys, up to LEVEL_PARTS): step ends come
 * all through the training, the valleys of evaluation passes (between
 * epochs, below the level while the epoch's data is freed) in a few
 * clusters. `hit` counts the parts holding one. */
static int spread_through(uint32_t hit, uint32_t count)
{
	uint32_t reach = count < LEVEL_PARTS ? count : LEVEL_PARTS;
	return hit * 4 >= reach * 3;
}

/* The step-end level: the lowest valley level that recurs >= 3 times across
 * at least half of the run, all through it (the first step's own valleys,
 * before the optimizer state exists, recur too but only at the start; an
 * evaluation pass between epochs returns lower, but only there). */
static int step_level(const struct valley *v, uint32_t n, uint64_t *level)
{
	struct level_pick *b = malloc((n ? n : 1) * sizeof *b);
	if (!b)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		b[i] = (struct level_pick){v[i].bytes, i};
	qsort(b, n, sizeof *b, cmp_level);
	/* sliding window [i, j) of levels within the slack of b[i]; the
	 * smallest and largest position inside it from two monotonic queues */
	uint32_t *qmin = malloc((n ? n : 1) * sizeof *qmin),
	         *qmax = malloc((n ? n : 1) * sizeof *qmax);
	uint32_t hmin = 0, tmin = 0, hmax = 0, tmax = 0, j = 0;
	uint32_t parts[LEVEL_PARTS] = {0}, hit = 0; /* the window's valleys by part of the run */
	int found = 0;
	for (uint32_t i = 0; qmin && qmax && i < n && !found; i++) {
		if (i > 0 && --parts[(uint64_t)b[i - 1].index * LEVEL_PARTS / n] == 0)
			hit--;
		while (j < n && b[j].bytes <= b[i].bytes + level_slack(b[i].bytes)) {
			if (parts[(uint64_t)b[j].index * LEVEL_PARTS / n]++ == 0)
				hit++;
			while (tmin > hmin && b[qmin[tmin - 1]].index >= b[j].index)
				tmin--;
			qmin[tmin++] = j;
			while (tmax > hmax && b[qmax[tmax - 1]].index <= b[j].index)
				tmax--;
			qmax[tmax++] = j;
			j++;
		}
		while (hmin < tmin && qmin[hmin] < i)
			hmin++;
		while (hmax < tmax && qmax[hmax] < i)
			hmax++;
		if (hmin == tmin || hmax == tmax)
			continue; /* an empty window (never with sane levels): no index to read */
		uint32_t lo = b[qmin[hmin]].index, hi = b[qmax[hmax]].index;
		if (j - i >= 3 && (hi - lo) * 2 >= n - 1 && spread_through(hit, j - i)) {
			*level = b[i].bytes;
			found = 1;
		}
	}
	free(qmin);
	free(qmax);
	free(b);
	return found;
}

/* A prefetcher that does not reach across epochs (Keras 3's, a DataLoader's)
 * holds the next batch at every step end but the last of an epoch: its
 * step ends sit one batch above the lowest level that recurs, the epochs'
 * ends. The batch: the sizes of the buffers filled from the host and freed
 * that recur (4 times or more) on dev, all together (x and y), or the
 * largest alone. */
static uint64_t batch_bytes_on(const struct vt_model *m, const struct vt_proc *p, int dev,
                               uint64_t *largest)
{
	uint64_t *sizes = NULL, batch = 0;
	uint32_t n = 0, cap = 0;
	*largest = 0;
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (a->device != dev || a->t_free == VT_T_NEVER ||
		    !vt_model_copies(m, a)->h2d_copies)
			continue;
		if (n == cap &&
		    !(sizes = realloc(sizes, (cap = cap ? 2 * cap : 64) * sizeof *sizes)))
			vt_nomem();
		sizes[n++] = a->bytes;
	}
	sort_u64(sizes, n);
	for (uint32_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && sizes[j] == sizes[i]; j++)
			;
		if (j - i >= 4) {
			batch += sizes[i];
			*largest = sizes[i];
		}
	}
	free(sizes);
	return batch;
}

/* Whether live bytes `bytes` are at `level`, within its slack either way. */
static int near_level(uint64_t bytes, uint64_t level)
{
	return bytes + level_slack(level) >= level && bytes <= level + level_slack(level);
}

static uint32_t valleys_near(const struct valley *v, uint32_t n, uint64_t level)
{
	uint32_t c = 0;
	for (uint32_t i = 0; i < n; i++)
		c += near_level(v[i].bytes, level);
	return c;
}

/* The step-end level when `level` is the epochs' end: valleys one batch
 * above it, at least twice as many. */
static uint64_t level_above_drained_epochs(const struct vt_model *m, const struct vt_proc *p,
                                           int dev, const struct valley *v, uint32_t n,
                                           uint64_t level)
{
	uint64_t largest, batch = batch_bytes_on(m, p, dev, &largest);
	uint32_t at_level = valleys_near(v, n, level);
	const uint64_t above[2] = {batch, largest};
	for (int k = 0; k < 2; k++) {
		uint32_t c = above[k] ? valleys_near(v, n, level + above[k]) : 0;
		if (c >= 3 && c >= 2 * at_level)
			return level + above[k];
	}
	return level;
}

/* Does the activity after the last step end look like one more step (at
 * least half the allocations of a median step), or like teardown? */
static int one_more_step(const uint64_t *allocs_at_end, uint32_t k, uint64_t total)
{
	uint64_t *per = malloc(k * sizeof *per);
	if (!per)
		return 1;
	for (uint32_t i = 1; i < k; i++)
		per[i - 1] = allocs_at_end[i] - allocs_at_end[i - 1];
	sort_u64(per, k - 1);
	uint64_t median = per[(k - 1) / 2];
	free(per);
	return (total - allocs_at_end[k - 1]) * 2 >= median;
}

/* When the first allocation on dev that is freed by `end` (the first step's
 * end) was made: the first step's first transient tensor, or a setup
 * temporary before it. What comes before it outlives the first step: the
 * job's setup (weights made before any step). */
static uint64_t first_transient(const struct vt_model *m, const struct vt_proc *p, int dev,
                                uint64_t end)
{
	for (uint32_t i = p->alloc_begin; i < p->alloc_end; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (a->t_alloc > end)
			break;
		if (a->device == dev && (a->flags & VT_AF_CHARGED) && a->t_free <= end)
			return a->t_alloc;
	}
	return VT_T_NEVER;
}

/* How many valleys one step has. A job that frees and allocates within a
 * step (PyTorch without its cache: every temporary is a cudaMalloc) returns
 * to the step-end level several times a step, seen on an H200: 1157
 * "steps" for 128. Its valleys then repeat in a pattern of allocations
 * between them ([3, 2, 5], [3, 2, 5], ...): the step is the pattern's
 * period q, the smallest whose gaps repeat at least 80 % of the time, and
 * for 80 % of the allocations: a step that returns once a parameter (an
 * optimizer's per-parameter temporaries, one or two allocations apart)
 * repeats "every return a step" for nearly all returns but not for the
 * passes between them, where most allocations are. Where no q holds for
 * the allocations, the smallest that holds for the returns; 0 when none. */
#define MAX_VALLEYS_PER_STEP 512
#define MAX_VALLEY_READS (1ull << 28)
static uint32_t valleys_per_step(const uint64_t *allocs, uint32_t k)
{
	uint32_t by_count = 0;
	/* each q reads all k returns: a long run without markers looks for
	 * steps of hundreds of returns only where it can afford to */
	uint64_t max_q = MAX_VALLEY_READS / (k ? k : 1);
	for (uint32_t q = 1; q <= MAX_VALLEYS_PER_STEP && q <= max_q && 3 * q + 1 <= k; q++) {
		uint32_t same = 0, pairs = k - 1 - q;
		uint64_t same_allocs = 0, all_allocs = 0;
		for (uint32_t i = 0; i < pairs; i++) {
			uint64_t gap = allocs[i + 1] - allocs[i];
			int repeats = gap == allocs[i + q + 1] - allocs[i + q];
			same += repeats;
			same_allocs += repeats ? gap : 0;
			all_allocs += gap;
		}
		if (same * 5 < pairs * 4)
			continue;
		if (same_allocs * 5 >= all_allocs * 4)
			return q;
		if (!by_count)
			by_count = q;
	}
	return by_count;
}

/* Training steps with an evaluation pass every few of them: a step keeps
 * its activations until its backward, so it returns to the level once, at
 * its end, while a pass without gradients frees each batch's tensors and
 * returns there after every batch. The valleys then repeat in a period of
 * two runs: the steps (r >= 2 alike) and the passes' batches (alike, with
 * fewer allocations: no backward, no optimizer). A period of any other
 * shape (a step that returns to the level between parts of its own) is the
 * step itself. The steps' gap (allocations between two valleys), or 0. */
static uint64_t training_gap(const uint64_t *allocs, uint32_t k, uint32_t q)
{
	if (q < 3 || k < 2 * q + 1)
		return 0;
	uint64_t gap[MAX_VALLEYS_PER_STEP] = {0};
	/* a period from the middle: the first steps hold the set-up, the last
	 * drain the batches in flight */
	uint32_t from = (k - q) / 2 + 1;
	for (uint32_t i = 0; i < q; i++)
		gap[i] = allocs[from + i] - allocs[from + i - 1];
	uint32_t runs = 0;
	for (uint32_t i = 0; i < q; i++)
		runs += gap[i] != gap[(i + q - 1) % q];
	if (runs != 2)
		return 0;
	uint64_t a = gap[0], b = 0;
	uint32_t na = 0;
	for (uint32_t i = 0; i < q; i++) {
		na += gap[i] == a;
		if (gap[i] != a)
			b = gap[i];
	}
	uint64_t steps = a > b ? a : b;
	uint32_t nsteps = a > b ? na : q - na;
	return nsteps >= 2 ? steps : 0;
}

/* Keep the first valley and those that end a training step. */
static uint32_t training_valleys(uint64_t *ends, uint64_t *allocs, uint32_t k, uint64_t gap)
{
	uint32_t n = 1;
	for (uint32_t i = 1; i < k; i++)
		if (allocs[i] - allocs[i - 1] == gap) {
			ends[n] = ends[i];
			allocs[n++] = allocs[i];
		}
	return n;
}

/* Valleys at the level this many times closer together than the
 * average two are one return. */
#define CLOSE_RETURNS_DIV 16

/* Runs of valleys at the level only a few allocations apart, each kept as
 * its last: a batch handed over (the last input freed, the next one made)
 * returns to the level twice in a row, once as each buffer goes, and
 * every step doing so halves the share of gaps that repeat. The count
 * left. */
static uint32_t merge_close_returns(uint64_t *ends, uint64_t *allocs, uint32_t k)
{
	if (k < 3)
		return k;
	uint64_t close = (allocs[k - 1] - allocs[0]) / (k - 1) / CLOSE_RETURNS_DIV;
	uint32_t n = 0;
	for (uint32_t i = 0; i < k; i++) {
		if (n && allocs[i] - allocs[n - 1] <= close)
			n--; /* the run's last so far replaces it */
		ends[n] = ends[i];
		allocs[n++] = allocs[i];
	}
	return n;
}

/* The valleys at the level that end steps, and the valleys a step has
 * (q), in place of the k valleys at the level. */
static uint32_t level_steps(uint64_t *ends, uint64_t *allocs, uint32_t k, uint32_t *q)
{
	k = merge_close_returns(ends, allocs, k);
	*q = valleys_per_step(allocs, k);
	uint64_t gap = training_gap(allocs, k, *q);
	if (gap) {
		*q = 1;
		return training_valleys(ends, allocs, k, gap);
	}
	*q = *q ? *q : 1; /* the level alone marks the steps */
	return k;
}

/* Keep every q-th valley end (with its allocation count): the step ends. */
static uint32_t every_qth(uint64_t *ends, uint64_t *allocs, uint32_t k, uint32_t q)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < k; i += q) {
		ends[n] = ends[i];
		allocs[n++] = allocs[i];
	}
	return n;
}

/* Where valley v sits against the level cur, which follows a slow drift
 * up from `level`: above it (not a step end), at it, or below it; a valley
 * a little higher moves the level up. A valley back at `level` itself is
 * at it and brings the level back down: a pass that climbs a staircase of
 * valleys each within the slack of the last (an evaluation keeping a
 * little per batch) does not leave the steps after it below the level. */
enum valley_place { VALLEY_ABOVE, VALLEY_AT, VALLEY_BELOW };
static enum valley_place against_level(const struct valley *v, uint64_t level, uint64_t *cur)
{
	if (v->bytes > *cur + level_slack(*cur))
		return VALLEY_ABOVE;
	if (near_level(v->bytes, level) && v->bytes < *cur) {
		*cur = v->bytes;
		return VALLEY_AT;
	}
	enum valley_place where = v->bytes + level_slack(*cur) >= *cur ? VALLEY_AT : VALLEY_BELOW;
	if (v->bytes > *cur)
		*cur = v->bytes;
	return where;
}

/* The valleys at the level, following a slow drift of it: the step-end
 * candidates. The first valley at the level ends the first steady step;
 * every later valley at it ends one more, and so do the valleys below it
 * after the last at it (the last steps drain the batches in flight, so
 * their valleys sit lower). Valleys below it between two at it are passes
 * of another kind (an evaluation pass while the epoch's data is freed). */
static uint32_t level_valleys(const struct valley *v, uint32_t n, uint64_t level, uint64_t *ends,
                              uint64_t *allocs)
{
	uint32_t first = 0, k = 0, last_at = 0;
	while (first < n && (v[first].bytes < level || v[first].bytes - level > level_slack(level)))
		first++;
	uint64_t cur = first < n ? v[first].bytes : 0;
	for (uint32_t i = first; i < n; i++)
		if (against_level(&v[i], level, &cur) == VALLEY_AT)
			last_at = i;
	cur = first < n ? v[first].bytes : 0;
	for (uint32_t i = first; i < n; i++) {
		enum valley_place where = against_level(&v[i], level, &cur);
		if (where == VALLEY_ABOVE || (where == VALLEY_BELOW && i < last_at))
			continue;
		ends[k] = v[i].t_ns;
		allocs[k++] = v[i].allocs;
	}
	return k;
}

/* Valleys that never return to one level: a job that keeps something of
 * every step on the device (JAX, each step's loss in its own 2 MiB buffer
 * under the platform allocator, seen on an H200: the level rose 2 MiB a
 * step). All valleys are candidates; only a repeating pattern makes steps. */
static uint32_t all_valleys(const struct valley *v, uint32_t n, uint64_t *ends, uint64_t *allocs)
{
	for (uint32_t i = 0; i < n; i++) {
		ends[i] = v[i].t_ns;
		allocs[i] = v[i].allocs;
	}
	return n;
}

/* The lowest valley among the h after valley i (out[i], UINT64_MAX when
 * none), or before it with `before`: a sliding minimum over a deque of
 * positions whose bytes rise from its head, each pushed and popped once. */
static void window_min(const struct valley *v, uint32_t n, uint32_t h, int before, uint32_t *q,
                       uint64_t *out)
{
	uint32_t head = 0, tail = 0;
	for (uint32_t s = 0; s < n; s++) {
		uint32_t i = before ? s : n - 1 - s;
		if (s > 0) {
			uint32_t j = before ? i - 1 : i + 1;
			while (tail > head && v[q[tail - 1]].bytes >= v[j].bytes)
				tail--;
			q[tail++] = j;
		}
		while (tail > head && (before ? q[head] + h < i : q[head] > i + h))
			head++;
		out[i] = tail > head ? v[q[head]].bytes : UINT64_MAX;
	}
}

/* Valleys on the run's lower envelope, for a job whose step-end level
 * drifts too far for one level to hold it (an encoder keeping every batch's
 * embeddings, each batch's passes through its layers returning to a level
 * a layer's hidden state higher): a valley no higher than the lowest of the
 * MAX_VALLEYS_PER_STEP after it, or of those before it (the level may rise
 * or fall), within the slack. A step has fewer valleys than that, so a
 * valley inside one always has a lower step end on either side. Their
 * positions in `at`; the count, 0 when the deque cannot be had. */
static uint32_t envelope_valleys(const struct valley *v, uint32_t n, uint32_t *at)
{
	uint32_t *q = malloc((n ? n : 1) * sizeof *q);
	uint64_t *after = malloc((n ? n : 1) * sizeof *after);
	uint64_t *before = malloc((n ? n : 1) * sizeof *before);
	uint32_t k = 0;
	if (q && after && before) {
		window_min(v, n, MAX_VALLEYS_PER_STEP, 0, q, after);
		window_min(v, n, MAX_VALLEYS_PER_STEP, 1, q, before);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t slack = level_slack(v[i].bytes);
			if ((after[i] != UINT64_MAX && v[i].bytes <= after[i] + slack) ||
			    (before[i] != UINT64_MAX && v[i].bytes <= before[i] + slack))
				at[k++] = i;
		}
	}
	free(q);
	free(after);
	free(before);
	return k;
}

/* Of q candidates a step, the one that ends it: the place in the pattern
 * that most often holds the lowest valley of its q, where the step has
 * freed the most (the others are inside it: its batch's uploads replacing
 * the last batch's, its first layer's set-up). A vote, not a mean: the
 * valleys of the set-up before the first step are not in the pattern. The
 * first place on a tie. */
static uint32_t lowest_phase(const struct valley *v, const uint32_t *at, uint32_t k, uint32_t q)
{
	uint32_t votes[MAX_VALLEYS_PER_STEP] = {0};
	for (uint32_t w = 0; w + q <= k; w += q) {
		uint32_t low = 0;
		for (uint32_t ph = 1; ph < q; ph++)
			if (v[at[w + ph]].bytes < v[at[w + low]].bytes)
				low = ph;
		votes[low]++;
	}
	uint32_t best = 0;
	for (uint32_t ph = 1; ph < q; ph++)
		if (votes[ph] > votes[best])
			best = ph;
	return best;
}

/* Whether the allocations between candidates x and x + 1 are those of
 * the pattern of q at x's place in it, as it runs from candidate mid. */
static int in_pattern(const uint64_t *allocs, uint32_t x, uint32_t mid, uint32_t q)
{
	uint32_t r = mid + (x + q - mid % q) % q;
	return allocs[x + 1] - allocs[x] == allocs[r + 1] - allocs[r];
}

/* The candidates that follow the pattern of q a step as it runs in the
 * middle of the run, [*from, *to): the valleys of a model's set-up (each
 * load a little higher than the one before), of the first step's layers
 * (nothing lower before them yet) and of the last one's (nothing lower
 * after) lie on the envelope too, but out of the pattern. */
static void pattern_span(const uint64_t *allocs, uint32_t k, uint32_t q, uint32_t *from,
                         uint32_t *to)
{
	uint32_t mid = (k - q) / 2, i = 0, j;
	for (; i < mid; i++) {
		for (j = 0; j < q && in_pattern(allocs, i + j, mid, q); j++)
			;
		if (j == q)
			break;
	}
	*from = i;
	for (i = k - 1; i > mid + q; i--) {
		for (j = 1; j <= q && in_pattern(allocs, i - j, mid, q); j++)
			;
		if (j > q)
			break;
	}
	*to = i + 1;
}

/* Step ends from the envelope's k candidates `at`, in a pattern of q a
 * step (set in *q); 0 when they make none. */
static uint32_t envelope_steps(const struct valley *v, uint32_t n, const uint32_t *at, uint32_t k,
                               uint64_t *ends, uint64_t *allocs, uint32_t *q)
{
	for (uint32_t i = 0; i < k; i++) {
		ends[i] = v[at[i]].t_ns;
		allocs[i] = v[at[i]].allocs;
	}
	*q = k && k < n ? valleys_per_step(allocs, k) : 0;
	uint32_t from = k, to = k, steps = 0;
	if (*q)
		pattern_span(allocs, k, *q, &from, &to);
	for (uint32_t i = from + (from < to ? lowest_phase(v, at + from, to - from, *q) : 0);
	     i < to; i += *q) {
		ends[steps] = v[at[i]].t_ns;
		allocs[steps++] = v[at[i]].allocs;
	}
	return steps;
}

/* Whether most of every q-th valley (the ends the pattern of all valleys
 * keeps) lie on the envelope (`at`, k of them, in order). */
static int ends_on_envelope(const uint32_t *at, uint32_t k, uint32_t n, uint32_t q)
{
	uint32_t on = 0, kept = 0;
	for (uint32_t i = 0, c = 0; i < n; i += q, kept++) {
		while (c < k && at[c] < i)
			c++;
		on += c < k && at[c] == i;
	}
	return on * 2 >= kept;
}

/* Steps from valleys that return to no one level. The pattern of all of
 * them counts the steps of a job that keeps a little of every step (a
 * JAX loss buffer a step: every valley a step end or beside one). Where
 * the ends that pattern keeps mostly lie above the run's lower envelope,
 * it repeats inside a step (an encoder's passes through its layers, each
 * returning a hidden state above the batch's level): the envelope's own
 * pattern counts the steps. */
static uint32_t drifting_steps(const struct valley *v, uint32_t n, uint64_t *ends, uint64_t *allocs,
                               uint32_t *q)
{
	uint32_t *at = malloc((n ? n : 1) * sizeof *at);
	uint32_t ke = at ? envelope_valleys(v, n, at) : 0;
	uint32_t k = all_valleys(v, n, ends, allocs);
	*q = valleys_per_step(allocs, k);
	if (ke && ke < n && !(*q && ends_on_envelope(at, ke, n, *q))) {
		uint32_t qe, steps = envelope_steps(v, n, at, ke, ends, allocs, &qe);
		if (steps) {
			free(at);
			*q = qe;
			return steps;
		}
		k = all_valleys(v, n, ends, allocs); /* the envelope's tries overwrote them */
	}
	free(at);
	return *q ? every_qth(ends, allocs, k, *q) : k;
}

/* Where the first step begins by its own tensors: step 1's first transient
 * tensor (site and size) seen n times in step 1, the n-th latest of that
 * site and size freed within step 0 is step 0's counterpart. A first step
 * longer than the period (optimizer state made lazily, slow first kernels)
 * starts there instead of one period before its end, which would leave its
 * first tensors, and the state it makes, before training. VT_T_NEVER when
 * step 1 has no transient tensor or step 0 fewer of its kind. */
static uint64_t first_step_counterpart(const struct vt_model *m, const struct vt_proc *p, int dev,
                                       uint64_t end0, uint64_t end1)
{
	const struct vt_alloc *first = NULL;
	uint32_t i = p->alloc_begin, n = 0;
	while (i < p->alloc_end && m->allocs[i].t_alloc <= end0)
		i++;
	uint32_t step1 = i;
	for (; i < p->alloc_end && m->allocs[i].t_alloc <= end1; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (a->device != dev || !(a->flags & VT_AF_CHARGED) || a->t_free > end1)
			continue;
		if (!first)
			first = a;
		n += a->stack_id == first->stack_id && a->bytes == first->bytes;
	}
	if (!first)
		return VT_T_NEVER;
	for (i = step1; i-- > p->alloc_begin;) {
		const struct vt_alloc *a = &m->allocs[i];
		if (a->device == dev && (a->flags & VT_AF_CHARGED) && a->t_free <= end0 &&
		    a->stack_id == first->stack_id && a->bytes == first->bytes && --n == 0)
			return a->t_alloc;
	}
	return VT_T_NEVER;
}

struct tensor_kind {
	uint64_t bytes;
	uint32_t stack_id;
};

static int by_kind(const void *x, const void *y)
{
	const struct tensor_kind *a = x, *b = y;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? -1 : 1;
	return a->stack_id < b->stack_id ? -1 : a->stack_id > b->stack_id;
}

static struct tensor_kind *kinds_grow(struct tensor_kind *k, uint32_t n, uint32_t *cap)
{
	if (n < *cap)
		return k;
	*cap = *cap ? 2 * *cap : 16;
	return realloc(k, *cap * sizeof *k);
}

/* The transient tensors of dev made in [from, to) and freed by `to`, sorted
 * by kind (size, site); NULL (n 0) when none or out of memory. */
static struct tensor_kind *step_kinds(const struct vt_model *m, const struct vt_proc *p, int dev,
                                      uint64_t from, uint64_t to, uint32_t *n)
{
	struct tensor_kind *k = NULL;
	uint32_t cap = 0;
	*n = 0;
	for (uint32_t i = p->alloc_begin; i < p->alloc_end && m->allocs[i].t_alloc < to; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (a->t_alloc < from || a->device != dev || !(a->flags & VT_AF_CHARGED) ||
		    a->t_free > to)
			continue;
		struct tensor_kind *g = kinds_grow(k, *n, &cap);
		if (!g) {
			free(k);
			*n = 0;
			return NULL;
		}
		k = g;
		k[(*n)++] = (struct tensor_kind){a->bytes, a->stack_id};
	}
	if (*n)
		qsort(k, *n, sizeof *k, by_kind);
	return k;
}

/* A step before the first one found: the last n tensors freed by the first
 * step's start (tensors made then and kept are skipped: a first step makes
 * lazy state) are, kind for kind, the n transient tensors of the first step
 * found. A first step that makes its optimizer state after its transient
 * tensors died ends in a valley below the level the later steps return to,
 * so the level finds every step but that one. When it starts, or
 * VT_T_NEVER. At least two tensors, so one batch-sized setup upload from
 * the same site does not make a step. */
static uint64_t step_before(const struct vt_model *m, const struct vt_proc *p, int dev,
                            uint64_t start, uint64_t next)
{
	uint32_t n, got = 0, cap = 0;
	struct tensor_kind *want = step_kinds(m, p, dev, start, next, &n), *k = NULL;
	uint64_t first = VT_T_NEVER;
	uint32_t i = p->alloc_begin;
	while (i < p->alloc_end && m->allocs[i].t_alloc < start)
		i++;
	while (n >= 2 && got < n && i-- > p->alloc_begin) {
		const struct vt_alloc *a = &m->allocs[i];
		if (a->device != dev || !(a->flags & VT_AF_CHARGED) || a->t_free > start)
			continue;
		struct tensor_kind *g = kinds_grow(k, got, &cap);
		if (!g)
			break;
		k = g;
		k[got++] = (struct tensor_kind){a->bytes, a->stack_id};
		first = a->t_alloc;
	}
	int same = n >= 2 && got == n;
	if (same) {
		qsort(k, n, sizeof *k, by_kind);
		for (uint32_t j = 0; same && j < n; j++)
			same = by_kind(&k[j], &want[j]) == 0;
	}
	free(want);
	free(k);
	return same ? first : VT_T_NEVER;
}

/* An upload kept past the last step end found, of this many bytes at
 * least, is a part of the model (or data) loaded before training: a step
 * sends its batches and frees them within a few steps, and a jitted step's
 * scalar (a step counter) is smaller. */
#define MODEL_UPLOAD_MIN (64u << 10)

/* When the last upload on dev before `mid` (a step end halfway through the
 * run) that outlives `last_end` (the last step end) was made; VT_T_NEVER
 * when none. The steps start after it: a job that encodes its data with
 * one model, then loads the model it trains (DreamBooth caching latents,
 * then the UNet), has valleys at the steps' level in its caching pass too,
 * which would make the load a step. */
static uint64_t last_model_upload(const struct vt_model *m, const struct vt_proc *p, int dev,
                                  uint64_t mid, uint64_t last_end)
{
	uint64_t last = VT_T_NEVER;
	for (uint32_t i = p->alloc_begin; i < p->alloc_end && m->allocs[i].t_alloc < mid; i++) {
		const struct vt_alloc *a = &m->allocs[i];
		if (a->device != dev || !(a->flags & VT_AF_CHARGED) ||
		    a->bytes < MODEL_UPLOAD_MIN || a->t_free <= last_end)
			continue;
		uint64_t h2d = vt_model_copies(m, a)->h2d_bytes;
		if (h2d * 2 >= a->bytes)
			last = a->t_alloc;
	}
	return last;
}

/* Steps from k step ends (q valleys a step before every_qth). Step i
 * starts where step i-1 ended; the first starts one period earlier, but not
 * before its first transient tensor: a first step shorter than the period
 * (a slow setup upload, a sleep between steps) would otherwise take in the
 * setup, and the weights made before it would look made during training; a
 * step may run after the last valley. With several valleys a step the
 * first kept one can lie anywhere in the first step, and a first step doing
 * lazy set-up (cuBLAS handles, autotuning) is many periods long: it starts
 * at its first transient tensor (on the H200 trace one period back cut the
 * first backward in two, and gradients read as made before training). */
static int set_steps(const struct vt_model *m, const struct vt_proc *p, int dev,
                     const uint64_t *ends, const uint64_t *allocs, uint32_t k, uint32_t q,
                     uint64_t total, uint64_t setup, struct vt_step_table *out)
{
	uint64_t period = median_gap(ends, k);
	uint32_t nsteps = k + (uint32_t)one_more_step(allocs, k, total);
	uint64_t *t = malloc(nsteps * sizeof *t);
	if (!t)
		return 0;
	t[0] = ends[0] > period ? ends[0] - period : 0;
	for (uint32_t i = 1; i < nsteps; i++)
		t[i] = ends[i - 1] + 1;
	/* the job's period from its measured steps, before the first step's
	 * start is bounded below */
	out->period_ns = median_gap(t, nsteps);
	uint64_t transient = first_transient(m, p, dev, ends[0]);
	if (transient != VT_T_NEVER && (transient > t[0] || q > 1))
		t[0] = transient;
	uint64_t counterpart =
	    k >= 2 ? first_step_counterpart(m, p, dev, ends[0], ends[1]) : VT_T_NEVER;
	if (counterpart < t[0])
		t[0] = counterpart;
	/* the model the steps train was loaded before the first of them */
	if (setup != VT_T_NEVER && setup >= t[0])
		t[0] = setup + 1;
	uint64_t before = nsteps >= 2 ? step_before(m, p, dev, t[0], t[1]) : VT_T_NEVER;
	if (before != VT_T_NEVER && setup != VT_T_NEVER && before <= setup)
		before = VT_T_NEVER; /* passes before the model was loaded: set-up */
	if (before != VT_T_NEVER) {
		uint64_t *more = realloc(t, (nsteps + 1) * sizeof *t);
		if (more) {
			memmove(more + 1, more, nsteps * sizeof *more);
			more[0] = before;
			t = more;
			nsteps++;
		}
	}
	out->t = t;
	out->n = nsteps;
	return 1;
}

/* When the last allocation on dev was made: what is freed after it is kept
 * to the end of the job (its teardown). */
static uint64_t last_alloc_on(const struct vt_model *m, const struct vt_proc *p, int dev)
{
	for (uint32_t i = p->alloc_end; i-- > p->alloc_begin;)
		if (m->allocs[i].device == dev && (m->allocs[i].flags & VT_AF_CHARGED))
			return m->allocs[i].t_alloc;
	return 0;
}

/* Drop the step ends at or before `setup` (the model's last upload): they
 * end passes of the set-up, not steps. The ends left. */
static uint32_t drop_ends_before(uint64_t *ends, uint64_t *allocs, uint32_t k, uint64_t setup)
{
	uint32_t from = 0;
	while (from < k && ends[from] <= setup)
		from++;
	memmove(ends, ends + from, (k - from) * sizeof *ends);
	memmove(allocs, allocs + from, (k - from) * sizeof *allocs);
	return k - from;
}

/* Steps from the valleys of the allocations freed after kept_from left out. */
static int steps_from_valleys(const struct vt_model *m, const struct vt_proc *p, int dev,
                              uint64_t kept_from, struct vt_step_table *out)
{
	uint32_t n;
	uint64_t total, level;
	memset(out, 0, sizeof *out);
	struct valley *v = find_valleys(m, p, dev, kept_from, &n, &total);
	/* calloc: gcc cannot see that the valleys fill what the rules read */
	uint64_t *ends = v && n >= 3 ? calloc(n, sizeof *ends) : NULL;
	uint64_t *allocs = ends ? calloc(n, sizeof *allocs) : NULL;
	int ok = 0;
	if (allocs) {
		uint32_t k, q;
		if (step_level(v, n, &level)) {
			level = level_above_drained_epochs(m, p, dev, v, n, level);
			k = level_valleys(v, n, level, ends, allocs);
			k = level_steps(ends, allocs, k, &q);
			if (q)
				k = every_qth(ends, allocs, k, q);
		} else {
			k = drifting_steps(v, n, ends, allocs, &q);
		}
		uint64_t setup =
		    k >= 3 ? last_model_upload(m, p, dev, ends[k / 2], ends[k - 1]) : VT_T_NEVER;
		if (q && setup != VT_T_NEVER)
			k = drop_ends_before(ends, allocs, k, setup);
		ok = q && k >= 3 && set_steps(m, p, dev, ends, allocs, k, q, total, setup, out);
	}
	free(v);
	free(ends);
	free(allocs);
	return ok;
}

/* The live bytes of all allocations first. A job whose state grows at no
 * fixed rate (rows of a sparse embedding made when new ids come, a cache
 * filled by requests) never comes back to one level, and its returns make
 * no pattern: then the same from the tensors it frees before its end alone,
 * its transient ones, which return to their level every step. */
int vt_steps_on_device(const struct vt_model *m, const struct vt_proc *p, int dev,
                       struct vt_step_table *out)
{
	return steps_from_valleys(m, p, dev, VT_T_NEVER, out) ||
	       steps_from_valleys(m, p, dev, last_alloc_on(m, p, dev), out);
}

static void steps_from_period(const struct vt_model *m, struct vt_proc *p)
{
	struct vt_step_table tab;
	if (!vt_steps_on_device(m, p, busiest_device(m, p), &tab))
		return;
	p->step_t = tab.t;
	p->nsteps = tab.n;
	p->step_period_ns = tab.period_ns;
	p->step_source = VT_STEPS_PERIOD;
}

/* Step markers steps_from_markers made the steps of p back where they
 * were kept: a step a marker was an array of its own 8 bytes a step, as
 * long as the step markers' own. */
static void give_back_marks(struct vt_proc *p)
{
	if (p->step_marks || !p->nstep_marks)
		return;
	p->step_marks = p->step_t;
	p->cap_step_marks = p->nstep_marks;
	p->step_t = NULL;
}

void vt_steps_find(struct vt_model *m)
{
	for (uint32_t i = 0; i < m->nprocs; i++) {
		struct vt_proc *p = &m->procs[i];
		give_back_marks(p);
		free(p->step_t);
		p->step_t = NULL;
		p->nsteps = 0;
		p->step_source = VT_STEPS_NONE;
		p->step_period_ns = 0;
		if (!steps_from_markers(p))
			steps_from_period(m, p);
		if (p->step_source != VT_STEPS_PERIOD)
			p->step_period_ns = median_gap(p->step_t, p->nsteps);
	}
}
