/* The streaming model: memory for what is live, not for what happened.
 *
 * A full model (model.h) keeps a 64-byte record for every allocation of the
 * trace, because the classifier reads whole-process statistics before it
 * decides any of them: 4.1 GiB at 100 M events, and on a VM most of the
 * analyzer's time is the kernel handing out those fresh pages. The question
 * a huge trace is first asked — what held the memory at its peak, and which
 * call sites put it there — needs none of the freed records.
 *
 * A streaming model replays with the same code and the same rules
 * (model.c) but recycles an allocation's record as soon as it is freed,
 * keeps no free order, no per-offset copy ranges, no step markers (it
 * counts them) and no cuMemGetInfo records, and takes, per
 * (process, device), a snapshot of what was live at that process's peak on
 * the device: bytes per allocating stack and the largest allocations (and
 * the same at its first failed allocations, for the OOM question). The
 * snapshot is taken lazily, at the first free after the peak (or at the end
 * of the log), so a job whose live bytes rise step after step pays one
 * snapshot per step, not one per allocation. Its memory: the most
 * allocations live at once, the unique stacks, the snapshots.
 *
 *   struct vt_model *m = vt_model_load_trace_streaming(dir, err, errlen);
 *   ... vt_stream_peaks(m, &n), vt_name_site(m, proc, stack_id, ...) ...
 *
 * It is not classified: vt_classify and the report/oom/diff/export builders
 * need the full model and refuse a streaming one. Processes are replayed
 * one log after the other, so a device that several processes charged gets
 * each one's own peak (vt_stream_procs_on_device tells), not their sum in
 * time; a device one process used (one job, or one process per GPU) gets
 * exactly the full model's peak. */
#ifndef VT_MODEL_STREAM_H
#define VT_MODEL_STREAM_H

#include <stdint.h>

#include "model.h"

#define VT_STREAM_LARGEST 10 /* largest allocations kept per snapshot */
#define VT_STREAM_FAILURES 8 /* failed allocations with a snapshot */

/* What one allocating stack held at the peak. */
struct vt_stream_site {
	uint32_t stack_id;
	uint32_t allocs;
	uint64_t bytes;
};

/* One of the largest allocations live at the peak. */
struct vt_stream_alloc {
	uint64_t bytes, t_alloc, h2d_bytes;
	uint32_t stack_id;
	uint8_t api, kind;
};

/* A process's peak on one device and what was live then. */
struct vt_stream_peak {
	uint32_t proc;
	uint8_t device;
	uint64_t bytes, t_ns, seq;    /* live bytes at the peak; when (trace ns, process seq) */
	uint64_t end_bytes;           /* live when the process's log ends */
	uint32_t live_allocs;         /* allocations live at the peak */
	struct vt_stream_site *sites; /* largest first */
	uint32_t nsites;
	struct vt_stream_alloc largest[VT_STREAM_LARGEST]; /* largest first */
	uint32_t nlargest;
};

struct vt_model *vt_model_new_streaming(void);
int vt_model_is_streaming(const struct vt_model *m);

/* The snapshots, one per (process, device) that process charged, in the
 * order the processes were fed. Complete after vt_model_finish. */
const struct vt_stream_peak *vt_stream_peaks(const struct vt_model *m, uint32_t *n);
/* At each of the first VT_STREAM_FAILURES failed allocations (out of
 * memory, among others), what its process held on its device then: the
 * same snapshot, with bytes the live total and t_ns/seq the failure's;
 * element i is vt_model.failed[i] (empty for a failure on no known
 * device). */
const struct vt_stream_peak *vt_stream_failures(const struct vt_model *m, uint32_t *n);
/* Allocation records held at most at once: the model's memory bound. */
uint32_t vt_stream_records_high(const struct vt_model *m);
/* Allocations whose record was recycled after their free. */
uint64_t vt_stream_retired(const struct vt_model *m);
/* Process proc's live bytes on dev over time (live_curve.h: 1024 buckets
 * over its run at most), NULL if it charged nothing there. */
struct vt_live_curve;
const struct vt_live_curve *vt_stream_curve(const struct vt_model *m, uint32_t proc, uint8_t dev);
/* Step markers of process proc (a streaming model counts them instead of
 * keeping them; it keeps no cuMemGetInfo records either, only capacities). */
uint64_t vt_stream_steps(const struct vt_model *m, uint32_t proc);
/* Processes replayed one after the other give no exact peak for a device
 * several of them charged; their curves bound it: at least the largest one
 * process reached there (or all they left at the end), at most their bucket
 * maxima summed in time (live_curve.h). Both the peak when one process did.
 * Worked out in vt_model_finish. */
void vt_stream_combined_peak(const struct vt_model *m, int dev, uint64_t *at_least,
                             uint64_t *at_most);
/* While the model is still fed (a trace followed live): process proc's
 * live bytes on dev now and its peak there so far. */
void vt_stream_live_now(const struct vt_model *m, uint32_t proc, uint8_t dev, uint64_t *live,
                        uint64_t *peak);
/* What process proc holds on dev now, as a snapshot into *out (its sites
 * are the caller's to free). Returns the live bytes. A walk over the
 * records held, so once per refresh, not per event. */
uint64_t vt_stream_snapshot_now(struct vt_model *m, uint32_t proc, uint8_t dev,
                                struct vt_stream_peak *out);
/* How many processes charged device dev. */
uint32_t vt_stream_procs_on_device(const struct vt_model *m, int dev);

#endif
