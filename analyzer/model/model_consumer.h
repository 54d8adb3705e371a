/* What the replay (model.c) hands to the model's consumer as it goes.
 *
 * The replay turns records into allocations, copies and live ranges; what
 * else a model keeps is its consumer's choice, made by the constructor:
 *   - the full model (model_history.c) keeps the whole history: the order
 *     of frees, per-offset copy ranges, every marker and cuMemGetInfo
 *     record, and sweeps the peaks from them at the end;
 *   - the streaming model (model_stream.c) recycles a freed allocation's
 *     record, counts instead of keeping, and snapshots what was live at
 *     each process's peak.
 * The replay calls every entry (add_record is optional; where it is set
 * and freed_charges too, take_record and charge are never called) and
 * knows no consumer: the way perf's `struct perf_tool` is filled by a tool and
 * driven by perf_session. Times are trace times (ns from the trace's start). */
#ifndef VT_MODEL_CONSUMER_H
#define VT_MODEL_CONSUMER_H

#include <stdint.h>

struct vt_model;
struct vt_proc;
struct vt_alloc;
struct vt_event;
struct vt_mark_rec;
struct vt_meminfo_rec;

struct vt_replay_consumer {
	/* A record to reuse for the allocation of proc about to be recorded
	 * with this stack, or VT_NO_INDEX to append one. */
	uint32_t (*take_record)(struct vt_model *m, uint32_t proc, uint32_t stack_id);
	/* Optional (NULL: take_record, then charge): record the allocation ev
	 * of proc at trace time t, with flags, in a record of its own
	 * (reused, or appended to vt_model.allocs; vt_model_new_record fills
	 * it) and charge it where charge() would be called (a charged one on a
	 * known device); returns its index. One call an allocation instead of
	 * two, and a record counted as it is made. */
	uint32_t (*add_record)(struct vt_model *m, uint32_t proc, const struct vt_event *ev,
	                       uint64_t t, uint8_t flags);
	/* A charged allocation on a known device was made (is_free 0) or freed. */
	void (*charge)(struct vt_model *m, const struct vt_alloc *a, int is_free, uint64_t t,
	               uint64_t seq);
	/* Allocation idx of process p is freed and its free recorded. */
	void (*freed)(struct vt_model *m, struct vt_proc *p, uint32_t idx);
	/* Non-zero: a free is not charged through charge(); freed() takes the
	 * free's charge itself (one call a free, not two: the folding model,
	 * whose charge of a free is only the live bytes going down). */
	int freed_charges;
	/* An allocation of proc on dev failed (already in vt_model.failed). */
	void (*failed)(struct vt_model *m, uint32_t proc, uint8_t dev, uint64_t t, uint64_t seq);
	/* A host-to-device copy ev into allocation idx at offset off; first: its
	 * first, partial: at an offset or shorter than the allocation. */
	void (*uploaded)(struct vt_model *m, uint32_t idx, uint64_t off, const struct vt_event *ev,
	                 uint64_t t, int first, int partial);
	/* A well-formed marker of process p, at trace time t. */
	void (*mark)(struct vt_model *m, struct vt_proc *p, const struct vt_mark_rec *r,
	             uint64_t t);
	/* A cuMemGetInfo record of process p, at trace time t (the device's
	 * capacity is already taken from it). */
	void (*meminfo)(struct vt_model *m, struct vt_proc *p, const struct vt_meminfo_rec *r,
	                uint64_t t);
	/* Process proc's log ended with allocations still live. */
	void (*end_process)(struct vt_model *m, uint32_t proc);
	/* The last process ended: the devices' peaks and end bytes, and the
	 * stacks' allocation and upload counts (vt_model_stack.*_uses). */
	void (*finish)(struct vt_model *m);
	/* The model is being freed: the consumer's own state goes. */
	void (*destroy)(struct vt_model *m);
};

#endif
