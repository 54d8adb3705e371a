/* Twins: gradients and the weights they mirror, see classify_twins.h. */
#include "classify_twins.h"

#include <stdlib.h>

#include "frame_evidence.h"
#include "model_fold.h"
#include "model_query.h"

static struct size_count *size_entry(struct size_count **sizes, uint64_t bytes)
{
	struct size_count *s;
	HASH_FIND(hh, *sizes, &bytes, sizeof bytes, s);
	if (!s) {
		s = calloc(1, sizeof *s);
		if (!s)
			vt_nomem();
		s->bytes = bytes;
		s->last_step = -2;
		s->cur_step = -2;
		HASH_ADD(hh, *sizes, bytes, sizeof s->bytes, s);
	}
	return s;
}

/* Lookup only: every size the rules ask about was entered by count_sizes. */
struct size_count *vt_cls_size_find(struct size_count *sizes, uint64_t bytes)
{
	struct size_count *s;
	HASH_FIND(hh, sizes, &bytes, sizeof bytes, s);
	return s;
}

void vt_cls_free_sizes(struct size_count **sizes)
{
	struct size_count *s, *tmp;
	HASH_ITER(hh, *sizes, s, tmp)
	{
		HASH_DEL(*sizes, s);
		free(s->is_grad);
		free(s);
	}
}

/* The step just left made in_step allocations of this size: count it. */
static void close_step(struct size_count *s)
{
	if (!s->in_step)
		return;
	for (int i = 0; i < PER_STEP_HIST; i++) {
		if (s->hist[i].steps && s->hist[i].count != s->in_step)
			continue;
		s->hist[i].count = s->in_step;
		s->hist[i].steps++;
		break;
	}
	s->in_step = 0;
}

/* How many of this size a step makes: the most common count (a step cut in
 * two by an estimated boundary, or one that made extra, does not move it). */
uint32_t vt_cls_per_step(const struct size_count *s)
{
	uint32_t best = 0, best_steps = 0;
	for (int i = 0; i < PER_STEP_HIST; i++)
		if (s->hist[i].steps > best_steps ||
		    (s->hist[i].steps == best_steps && s->hist[i].count > best)) {
			best = s->hist[i].count;
			best_steps = s->hist[i].steps;
		}
	return best ? best : 1;
}

/* Whether ll[lo..hi] were all made before the first step: a model's
 * weights are, before its first gradient bucket; tensors a step made and
 * kept (a caching allocator's activation segments) that add up to a
 * bucket's size do so by chance. */
static int made_before_training(const struct ctx *c, const uint32_t *ll, uint32_t lo, uint32_t hi)
{
	for (uint32_t i = lo; i <= hi; i++)
		if (c->f[ll[i] - c->p->alloc_begin].born >= 0)
			return 0;
	return 1;
}

/* A run of consecutive long-lived allocations whose sizes add up to a
 * recurring flat gradient bucket: those are the weights. */
int vt_cls_find_flat_bucket(struct ctx *c, struct size_count *sizes, const uint32_t *ll, uint32_t n)
{
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	{
		if (!s->recurring || s->long_lived)
			continue;
		uint64_t sum = 0;
		uint32_t lo = 0;
		for (uint32_t hi = 0; hi < n; hi++) {
			sum += c->m->allocs[ll[hi]].bytes;
			while (sum > s->bytes && lo <= hi)
				sum -= c->m->allocs[ll[lo++]].bytes;
			if (sum != s->bytes || hi - lo + 1 < 2)
				continue;
			/* each of them with a per-step twin of its own: their
			 * gradients are made one by one, and a tensor the size of
			 * their sum is a coincidence (LoRA's 8 adapters of 256 KiB
			 * and a 2 MiB activation) */
			uint32_t own = 0;
			for (uint32_t i = lo; i <= hi; i++) {
				const struct size_count *m =
				    vt_cls_size_find(sizes, c->m->allocs[ll[i]].bytes);
				own += m && m->recurring;
			}
			if (own == hi - lo + 1 || !made_before_training(c, ll, lo, hi))
				continue;
			for (uint32_t i = lo; i <= hi; i++) {
				struct vt_alloc *a = &c->m->allocs[ll[i]];
				set_cat(a, &c->f[ll[i] - c->p->alloc_begin], VT_CAT_WEIGHTS, 85,
				        R_FLAT_BUCKET);
				vt_cls_size_find(sizes, a->bytes)->weights++;
			}
			s->gradient_size = 1;
			s->grads_per_step = vt_cls_per_step(s);
			return 1;
		}
	}
	return 0;
}

/* Whether a folded key's counts per step are the uploads': the host filled
 * every allocation folded there, which count_sizes does not count, so its
 * kept records count as in the full model. A key that folded uploads and
 * others has counts per step that are neither's. */
static int upload_key(const struct ctx *c, const struct key_count *k)
{
	if (!k->fold || !k->fold->uploads)
		return 0;
	if (k->fold->uploads != k->fold->folded)
		vt_fold_set_inexact(c->m, "a size folded uploads and other allocations");
	return 1;
}

/* A kept record of a folded key's era: the folding model counted it with
 * the folded ones, which is right only if it counts as they do (recurring,
 * not host-filled, undecided). */
static int folded_era(struct ctx *c, const struct facts *f)
{
	const struct key_count *k = c->keys[f->key];
	if (!k->fold || f->born < (int)vt_fold_keep_steps(c->m) || upload_key(c, k))
		return 0;
	if (!f->recurring || f->host_filled || f->decided)
		vt_fold_set_inexact(c->m, "a folded size has other allocations in its steps");
	return 1;
}

/* steps more steps that made count of a size (close_step, many at once). */
static void close_steps(struct size_count *s, uint32_t count, uint32_t steps)
{
	for (int i = 0; i < PER_STEP_HIST; i++) {
		if (s->hist[i].steps && s->hist[i].count != count)
			continue;
		s->hist[i].count = count;
		s->hist[i].steps += steps;
		break;
	}
}

/* The steps a folding model counted for a folded key of dev, after the
 * steps its kept records made (the steps come in that order). */
static void merge_folded_sizes(struct ctx *c, int dev, struct size_count **sizes)
{
	for (uint32_t i = 0; i < c->nkeys; i++) {
		const struct key_count *k = c->keys[i];
		if (!k->fold || (int)k->key.device != dev || upload_key(c, k))
			continue;
		struct size_count *s = size_entry(sizes, k->key.bytes);
		c->size_by_key[i] = s;
		close_step(s);
		for (uint32_t h = 0; h < k->fold->nhist; h++)
			close_steps(s, k->fold->hist[h].count, k->fold->hist[h].steps);
		s->recurring += (uint32_t)k->fold->era_allocs;
	}
}

/* Per size: how many recurring (not host-filled) allocations each step makes,
 * how many long-lived allocations exist. */
void vt_cls_count_sizes(struct ctx *c, int dev, struct size_count **sizes, const uint32_t *ll,
                        uint32_t n)
{
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != dev || folded_era(c, f))
			continue;
		if (f->decided || !f->recurring || f->host_filled)
			continue;
		struct size_count **slot = &c->size_by_key[f->key];
		if (!*slot)
			*slot = size_entry(sizes, fact_bytes(c, f));
		struct size_count *s = *slot;
		s->recurring++;
		int st = f->born;
		if (st != s->last_step) {
			close_step(s);
			s->steps_seen++;
			s->last_step = st;
		}
		s->in_step++;
	}
	merge_folded_sizes(c, dev, sizes);
	struct size_count *s, *tmp;
	HASH_ITER(hh, *sizes, s, tmp) close_step(s);
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : VT_T_NEVER;
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &c->m->allocs[ll[i]];
		struct size_count *s = size_entry(sizes, a->bytes);
		s->long_lived++;
		if (a->t_alloc < first_step)
			s->ll_before++;
		else if (!c->f[ll[i] - c->p->alloc_begin].host_filled)
			s->ll_during++; /* training's twins are made on the device; an
			                   upload during it is data (an epoch's) */
	}
}

/* How many long-lived allocations of a size are weights: one per gradient
 * made each step. When activations share the size, a step makes more of it
 * than there are weights; then, if the optimizer state was made during
 * training (lazily, as PyTorch and Keras do), the weights are those made
 * before it. */
static uint32_t weights_of_size(const struct size_count *s)
{
	uint32_t n = vt_cls_per_step(s);
	if (s->ll_before && s->ll_during && s->ll_before < n)
		n = s->ll_before;
	return n;
}

/* Gradients kept between steps (PyTorch's zero_grad(set_to_none=False), its
 * default before 2.0) are long-lived: training gives each trained weight T
 * twins of its size, its gradient (backward) and then its optimizer slots
 * (the optimizer's first step). T is the same for every size (one
 * optimizer): the count of twins made during training, a multiple of T
 * (two trained weights of a size have 2T), not more than T for each tensor
 * of that size made before training (a frozen copy beside the trained one:
 * a target network, an EMA, which have no twins of their own), settles it,
 * also for a size a dataset array shares with a weight (on an H200, PyTorch
 * 2.11 with Adam: T = 3, and a 64 KiB label array the size of a weight).
 * The T that fits the most sizes wins, then the one by which more sizes
 * are all trained (twins = T x tensors made before), then the smallest;
 * it must fit more than half of the sizes, and two sizes at least unless
 * the one fits exactly with T >= 3 (every tensor of it made before
 * training trains: a caching allocator leaves only its big tensors outside
 * its segments; one size with two twins is as often Adam's two slots of a
 * flat buffer whose gradients come per step).
 * T = 2 is also Adam's two slots
 * beside recurring gradients, which weights_by_twin reads: it is taken
 * only where most of those sizes have no per-step twin and no flat
 * gradient bucket is made every step (two_may_be_kept). Same-size
 * allocations that recur are then the optimizer's temporaries, not
 * gradients. 0: no such pattern. */
#define MAX_TWINS_PER_WEIGHT 8
static int twins_fit(const struct size_count *s, uint32_t t)
{
	return s->ll_during % t == 0 && s->ll_during / t <= s->ll_before;
}

static uint32_t twins_per_weight(struct size_count *sizes, int two_may_be_kept)
{
	uint32_t votes[MAX_TWINS_PER_WEIGHT + 1] = {0}, exact[MAX_TWINS_PER_WEIGHT + 1] = {0};
	uint32_t voters = 0, best = 0, untwinned = 0;
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	{
		if (!s->ll_before || !s->ll_during ||
		    s->ll_during > MAX_TWINS_PER_WEIGHT * s->ll_before)
			continue;
		voters++;
		untwinned += !s->recurring;
		for (uint32_t t = 2; t <= MAX_TWINS_PER_WEIGHT; t++) {
			votes[t] += twins_fit(s, t);
			exact[t] += s->ll_during == t * s->ll_before;
		}
	}
	for (uint32_t t = 2; t <= MAX_TWINS_PER_WEIGHT; t++)
		if (votes[t] > votes[best] || (votes[t] == votes[best] && exact[t] > exact[best]))
			best = t;
	/* T = 2 reads as a gradient and one slot (SGD with momentum) only
	 * where most sizes have no per-step twin: no per-step gradients, so
	 * not Adam's two slots beside them */
	int two_ok = two_may_be_kept && untwinned * 2 > voters;
	int enough = voters >= 2 || (exact[best] == voters && best >= 3);
	return enough && (best >= 3 || (best == 2 && two_ok)) && votes[best] * 2 > voters ? best
	                                                                                  : 0;
}

/* Of a size with kept twins, the per-step tensors made before its first
 * kept twin and freed after its last (twins_in_step counted them): one
 * for each weight means the gradients come per step
 * (`zero_grad(set_to_none=True)`) and none of the kept twins is one. A
 * gradient is made by the backward pass before the optimizer step makes
 * the slots, and lives through it; a forward activation of that size is
 * freed by the backward pass, and a temporary of the optimizer's own (a
 * weight-decayed copy of each gradient) is made after a kept gradient. */
static int grads_made_per_step(const struct size_count *s, uint32_t weights)
{
	return s->recurring && s->live_across_twins >= weights;
}

/* For each size with twins made in training: when its first and last
 * ones were made, and how many of its per-step allocations lived across
 * that span. */
static void twins_in_step(struct ctx *c, struct size_count *sizes, const uint32_t *ll, uint32_t n)
{
	uint64_t first_step = c->p->step_t[0];
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &c->m->allocs[ll[i]];
		struct size_count *s = vt_cls_size_find(sizes, a->bytes);
		if (a->t_alloc < first_step || c->f[ll[i] - c->p->alloc_begin].host_filled)
			continue;
		if (!s->t_first_twin)
			s->t_first_twin = a->t_alloc;
		s->t_last_twin = a->t_alloc;
	}
	for (uint32_t i = c->p->alloc_begin; i < c->p->alloc_end; i++) {
		const struct vt_alloc *a = &c->m->allocs[i];
		const struct facts *f = &c->f[i - c->p->alloc_begin];
		if (f->device != c->dev || !f->recurring || a->t_alloc < first_step)
			continue;
		struct size_count *s = vt_cls_size_find(sizes, a->bytes);
		if (s && s->t_first_twin && a->t_alloc < s->t_first_twin &&
		    a->t_free > s->t_last_twin)
			s->live_across_twins++;
	}
}

/* Twin k of a size's W * T kept twins beside per-step gradients: the
 * optimizer's slots (Adam's two per weight, made at its first step), then,
 * made after them, one copy of each weight that something updates without
 * a gradient (an EMA of the model, made at the first step after the
 * optimizer's). */
static void copy_or_slot(struct vt_alloc *a, struct facts *f, uint32_t k, uint32_t weights,
                         uint32_t per)
{
	if (k >= (per - 1) * weights)
		set_cat(a, f, VT_CAT_WEIGHTS, 60, R_TRAINING_COPY);
	else
		set_cat(a, f, VT_CAT_OPTIMIZER, 75, R_OPTIMIZER);
}

/* The earliest of a size are its weights (ll_during / T of them), the
 * others made before training frozen copies of them; of its twins the last
 * W * T are gradients then slots, earlier ones first-step set-up (library
 * workspaces of that size). */
void vt_cls_weights_by_kept_twins(struct ctx *c, struct size_count *sizes, const uint32_t *ll,
                                  uint32_t n, int two_may_be_kept)
{
	uint32_t per = c->p->nsteps ? twins_per_weight(sizes, two_may_be_kept) : 0;
	if (!per)
		return;
	uint64_t first_step = c->p->step_t[0];
	twins_in_step(c, sizes, ll, n);
	for (uint32_t i = 0; i < n; i++) {
		struct vt_alloc *a = &c->m->allocs[ll[i]];
		struct facts *f = &c->f[ll[i] - c->p->alloc_begin];
		struct size_count *s = vt_cls_size_find(sizes, a->bytes);
		uint32_t weights = s->ll_during / per;
		if (f->decided || !weights || s->ll_before < weights)
			continue;
		s->kept = 1;
		if (grads_made_per_step(s, weights)) {
			s->gradient_size = 1;
			s->grads_per_step = weights;
		}
		if (a->t_alloc < first_step) {
			if (s->weights < weights) {
				s->weights++;
				set_cat(a, f, VT_CAT_WEIGHTS, 80, R_KEPT_WEIGHT);
			} else if (!f->host_filled) { /* slots are among the twins: not it */
				set_cat(a, f, VT_CAT_WEIGHTS, 65, R_FROZEN_COPY);
			} /* filled from the host: what the upload rules make of it */
			continue;
		}
		if (f->host_filled)
			continue; /* not a twin (count_sizes): what the upload rules make of it */
		uint32_t idx = s->kept_seen++, first_twin = s->ll_during - weights * per;
		if (idx < first_twin)
			set_cat(a, f, VT_CAT_UNKNOWN, 30, R_LONG_UNKNOWN);
		else if (grads_made_per_step(s, weights))
			copy_or_slot(a, f, idx - first_twin, weights, per);
		else if (idx < first_twin + weights)
			set_cat(a, f, VT_CAT_GRADIENTS, 75, R_KEPT_GRADIENT);
		else
			set_cat(a, f, VT_CAT_OPTIMIZER, 85, R_OPTIMIZER);
	}
}

/* Written by device-to-device copies in most steps (a bucket, a
 * communication buffer): what a weight, updated in place, is not. */
int vt_cls_rewritten_on_device(const struct ctx *c, const struct vt_alloc *a)
{
	uint32_t steps = c->p->nsteps;
	return steps >= 3 && vt_model_copies(c->m, a)->d2d_in_copies + 1 >= steps;
}

/* Sizes with a per-step twin whose tensors made before training got
 * long-lived company during it (optimizer slots, kept gradients). */
static uint32_t slotted_sizes(struct size_count *sizes)
{
	uint32_t n = 0;
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	n += s->recurring && s->ll_before && s->ll_during;
	return n;
}

/* Optimizer slots per trained weight, by the sizes whose tensors made
 * during training are a whole multiple (1 to 4) of those made before: the
 * multiple most sizes show, the smaller on a tie; 0 when fewer than three
 * sizes show one. */
static uint32_t slots_per_weight(struct size_count *sizes)
{
	uint32_t votes[5] = {0}, best = 0;
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	{
		if (!s->recurring || !s->ll_before || !s->ll_during || s->ll_during % s->ll_before)
			continue;
		uint32_t r = s->ll_during / s->ll_before;
		votes[r <= 4 ? r : 0]++;
	}
	for (uint32_t r = 1; r <= 4; r++)
		if (votes[r] > votes[best])
			best = r;
	return votes[best] >= 3 ? best : 0;
}

/* A size shared by frozen and trained weights (a frozen VAE's tensors the
 * size of some of the UNet's): its slots say how many of its weights train,
 * and so how many of its per-step tensors are gradients; the rest of its
 * weights are frozen, all of them made before training. */
static void trained_of_size(struct size_count *sizes, uint32_t per_weight)
{
	struct size_count *s, *tmp;
	HASH_ITER(hh, sizes, s, tmp)
	{
		if (per_weight && s->recurring && s->ll_during && s->ll_during % per_weight == 0 &&
		    s->ll_during < per_weight * s->ll_before)
			s->trained = s->ll_during / per_weight;
	}
}

/* Whether the host filled a under a framework path that makes data (a
 * CONTEXT rule: cuDF's from_pandas, an estimator's fit, Keras's
 * data_adapter): what the stack says beats a size that a step's tensors
 * happen to share (a table's 4 MB columns beside a tree builder's 4 MB
 * buffers). */
static int named_data(const struct ctx *c, const struct vt_alloc *a, const struct facts *f)
{
	return f->host_filled &&
	       vt_frame_context_is(c->fe, c->proc, vt_model_copies(c->m, a)->h2d_stack_id,
	                           VT_CAT_DATASET);
}

/* Whether long-lived allocation i, made during training, came while a
 * recurring tensor of its size made earlier in its step was alive: the
 * optimizer's update, which follows the backward pass's gradient, made it
 * (a momentum buffer for a parameter packed into a flat buffer, whose own
 * tensor is gone; `torch.clone(grad)` copies it from the gradient); a
 * weight made lazily at the first step (a lazy module) comes in the
 * forward pass, before its gradient. */
static int made_after_its_gradient(const struct ctx *c, uint32_t i)
{
	const struct vt_alloc *a = &c->m->allocs[i];
	const struct facts *f = &c->f[i - c->p->alloc_begin];
	if (f->born < 0 || (uint32_t)f->born >= c->p->nsteps)
		return 0;
	/* copied from a tensor that lives on (an EMA's deepcopy of the
	 * weights) or that the host filled (a weight converted to channels
	 * last): a copy of the model, not its update's state */
	uint32_t from = vt_cls_d2d_source(c, a);
	if (from != VT_NO_INDEX && (!c->f[from - c->p->alloc_begin].recurring ||
	                            c->f[from - c->p->alloc_begin].host_filled))
		return 0;
	uint64_t start = c->p->step_t[f->born];
	for (uint32_t j = i; j-- > c->p->alloc_begin && c->m->allocs[j].t_alloc >= start;) {
		const struct facts *g = &c->f[j - c->p->alloc_begin];
		if (g->key == f->key && g->recurring && c->m->allocs[j].t_free > a->t_alloc)
			return 1;
	}
	return 0;
}

/* Whether long-lived allocation i (not from the host) was filled by
 * device-to-device copies, most of its bytes, from tensors the host filled
 * that were gone before training: a model's parameters packed into one
 * flat buffer, each parameter then a view into it (FSDP's FlatParameter,
 * apex's and Megatron's flattened buffers). Who wrote the bytes says
 * weights where no size or twin can: the flat buffer's size is no
 * parameter's. The first copy's source speaks for the rest. */
int vt_cls_flattened_weights(const struct ctx *c, uint32_t i, const struct facts *f)
{
	const struct vt_alloc *a = &c->m->allocs[i];
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : VT_T_NEVER;
	uint32_t from = vt_cls_d2d_filled_from(c, a);
	if (f->host_filled || vt_model_copies(c->m, a)->d2d_in_copies < 2 || from == VT_NO_INDEX)
		return 0;
	const struct vt_alloc *src = &c->m->allocs[from];
	const struct facts *sf = &c->f[from - c->p->alloc_begin];
	if (!sf->host_filled || src->t_free == VT_T_NEVER)
		return 0;
	/* gone before training; or, where the steps cannot say (a server
	 * whose loading reads as steps), a staging copy: it lived a tenth of
	 * what the tensor it filled lives (a tensor-parallel loader's q, k
	 * and v pieces, dropped once `torch.cat` made the fused weight) */
	uint64_t end = a->t_free != VT_T_NEVER ? a->t_free : c->p->last_t_ns;
	return src->t_free < first_step ||
	       (src->t_free >= a->t_alloc && (src->t_free - src->t_alloc) * 10 < end - a->t_alloc);
}

/* A per-step twin is a gradient only if its weight trains. Where a size
 * got optimizer state during training (an optimizer making its state
 * lazily, at its first step, makes it for every weight that trains), a
 * size that got none is frozen (a LoRA fine-tune's base beside its
 * adapters, a diffusion model's VAE and text encoder beside its trained
 * UNet, a fine-tune's frozen layers): its long-lived tensors are weights
 * that do not train, its per-step tensors activations that happen to share
 * their size. A job whose optimizer keeps no state (plain SGD), or made it
 * before training (JAX, Keras), has no such sizes to compare with. */
void vt_cls_weights_by_twin(struct ctx *c, struct size_count *sizes, const uint32_t *ll, uint32_t n)
{
	int slots_show = slotted_sizes(sizes) >= 1;
	trained_of_size(sizes, slots_show ? slots_per_weight(sizes) : 0);
	for (uint32_t i = 0; i < n; i++) {
		struct vt_alloc *a = &c->m->allocs[ll[i]];
		struct facts *f = &c->f[ll[i] - c->p->alloc_begin];
		struct size_count *s = vt_cls_size_find(sizes, a->bytes);
		if (f->decided || !s->recurring || s->kept || named_data(c, a, f))
			continue;
		/* a flat buffer's optimizer state is its parameters' (their
		 * views' sizes), so none of its own size says nothing */
		if (slots_show && s->ll_before && !s->ll_during &&
		    !vt_cls_flattened_weights(c, ll[i], f)) {
			s->frozen = 1;
			set_cat(a, f, VT_CAT_WEIGHTS, 75, R_FROZEN_SIZE);
			continue;
		}
		s->gradient_size = 1;
		if (vt_cls_rewritten_on_device(c, a))
			continue; /* a weight is updated in place, not copied into each step */
		if (s->trained && a->t_alloc < c->p->step_t[0]) {
			s->weights++;
			s->grads_per_step = s->trained;
			set_cat(a, f, VT_CAT_WEIGHTS, 80, R_TWIN);
		} else if (!s->trained && s->weights < weights_of_size(s) &&
		           made_after_its_gradient(c, ll[i])) {
			/* the size's first long-lived tensor, and still no weight */
			set_cat(a, f, VT_CAT_OPTIMIZER, 60, R_SLOT_AFTER_GRADIENT);
		} else if (!s->trained && s->weights < weights_of_size(s)) {
			s->weights++;
			s->grads_per_step = s->weights;
			set_cat(a, f, VT_CAT_WEIGHTS, 90, R_TWIN);
		}
	}
}

/* Optimizer state is made once, at the first optimizer step: in the first
 * two steps, or in the first quarter of them where steps are micro-batches
 * of an accumulation (the first update comes after them). */
static int early_in_training(const struct ctx *c, uint32_t i)
{
	int born = c->f[i - c->p->alloc_begin].born;
	return born < 2 || (uint32_t)born * 4 < c->p->nsteps;
}

/* A backward pass makes a gradient for every trained weight, and an
 * optimizer with state makes its slots during training. Twins that only a
 * minority of the tensors made before training have (by count and by
 * bytes), with no long-lived tensor made early in training the size of one
 * made before (optimizer slots, gradients kept between steps: at most four
 * per tensor of the size made before; a cache growing through the run
 * makes more, later),
 * are activations that happen to share a weight's size: an inference job
 * (torch_inference: four 6 MiB activations per batch beside four 6 MiB
 * weights). Then no size is a gradient size. */
int vt_cls_twins_believable(struct ctx *c, struct size_count *sizes, const uint32_t *ll, uint32_t n)
{
	uint64_t first_step = c->p->nsteps ? c->p->step_t[0] : VT_T_NEVER;
	uint32_t before = 0, twinned = 0, during = 0;
	uint64_t before_bytes = 0, twinned_bytes = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct vt_alloc *a = &c->m->allocs[ll[i]];
		const struct size_count *s = vt_cls_size_find(sizes, a->bytes);
		int twin = s && s->recurring;
		if (a->t_alloc >= first_step) { /* a slot, or a gradient kept */
			during += s && s->ll_before && s->ll_during <= 4 * s->ll_before &&
			          early_in_training(c, ll[i]);
			continue;
		}
		before++;
		before_bytes += a->bytes;
		twinned += twin;
		twinned_bytes += twin ? a->bytes : 0;
	}
	return during || !before || twinned * 2 >= before || twinned_bytes * 2 >= before_bytes;
}

uint32_t vt_cls_d2d_source(const struct ctx *c, const struct vt_alloc *a)
{
	uint32_t src = vt_model_copies(c->m, a)->d2d_src;
	return src >= c->p->alloc_begin && src < c->p->alloc_end ? src : VT_NO_INDEX;
}

uint32_t vt_cls_d2d_filled_from(const struct ctx *c, const struct vt_alloc *a)
{
	return vt_model_copies(c->m, a)->d2d_in_bytes * 10 < a->bytes * 9 ? VT_NO_INDEX
	                                                                  : vt_cls_d2d_source(c, a);
}
