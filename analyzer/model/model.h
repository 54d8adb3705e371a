/* The memory model: every process log of a trace replayed into allocations
 * with lifetimes, per device, with the copies that filled them.
 *
 * Input is one record at a time (vt_model_feed), so the trace loader and the
 * unit tests share one path:
 *
 *   struct vt_model *m = vt_model_new();
 *   uint32_t p = vt_model_begin_process(m, &header, trace_start_ns);
 *   for each record of that log, in the reader's order: vt_model_feed(m, p, type, rec, size);
 *   vt_model_end_process(m, p);
 *   ... more processes ...
 *   vt_model_finish(m);          // peaks per device; the model is now read-only
 *
 * or simply vt_model_load_trace(dir, err, errlen) (model_load.h), which does
 * all of it; the questions a finished model answers are in model_query.h.
 *
 * Time: every t_* below is nanoseconds from the trace start (the smallest
 * clock base over its logs). A "moment" orders events across processes:
 * (t_ns, process, seq); an allocation is live at moment M when
 * alloc moment <= M < free moment. Within a process seq is the truth; across
 * processes time is.
 *
 * Rules the replay follows (docs/design/classification.md):
 *  - an address is one allocation from its ALLOC to its FREE; an ALLOC at an
 *    address that is still live closes the stale one first (a lost free);
 *  - cuMemFreeAsync frees at the event (the memory may be reused from then on);
 *  - VMM: bytes are charged at cuMemCreate (ALLOC kind VMM, addr = handle);
 *    cuMemMap makes an address range point into the handle; the physical
 *    memory is gone at the later of cuMemRelease and its last cuMemUnmap;
 *  - arrays are handles too (no address range);
 *  - IPC imports and host memory are tracked but not charged to a device;
 *  - a copy is attached to the allocation containing its destination (H2D,
 *    D2D in) and to the one containing its source (D2D/D2H out). Copies that
 *    fill part of an allocation (a pool region's sub-allocation, a dataset
 *    uploaded in chunks) are also kept as ranges (vt_copy_range).
 */
#ifndef VT_MODEL_H
#define VT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h" /* struct vt_log_integrity */
#include "recording_cost.h"
#include "vramtrace/format.h"

#define VT_T_NEVER UINT64_MAX /* t_free / seq_free of an allocation live at the end */
#define VT_MAX_DEVICES 256
#define VT_NO_INDEX UINT32_MAX

/* The categories (docs/design/classification.md). Order is the report's. */
enum vt_category {
	VT_CAT_DATASET = 0,
	VT_CAT_PREFETCH,
	VT_CAT_WEIGHTS,
	VT_CAT_OPTIMIZER,
	VT_CAT_GRADIENTS,
	VT_CAT_ACTIVATIONS,
	VT_CAT_POOL,
	VT_CAT_UNKNOWN,
	VT_CAT_COUNT
};
const char *vt_category_name(int cat);
int vt_category_from_name(const char *name); /* -1 if unknown */

enum vt_alloc_flag {
	VT_AF_CHARGED = 1u << 0,        /* counts against device memory */
	VT_AF_HANDLE = 1u << 1,         /* a VMM handle or array: no address range */
	VT_AF_RELEASED = 1u << 2,       /* VMM: cuMemRelease seen, maybe still mapped */
	VT_AF_IMPLICIT_FREE = 1u << 3,  /* closed by a later ALLOC at its address */
	VT_AF_PARTIAL_COPIES = 1u << 4, /* has vt_copy_range entries */
	VT_AF_COPIES = 1u << 5,         /* has a vt_alloc_copies entry */
};

/* One allocation: 64 bytes, a cache line. The model holds one per
 * allocation of the whole trace (millions), and on a VM every fresh page
 * costs microseconds to fault in, so the analyzer's time follows this
 * size. What only few allocations have (copies, VMM mappings) lives in the
 * vt_alloc_copies side table (vt_model_copies()); the classifier's reason
 * is an index into its table of texts (vt_alloc_reason()). */
struct vt_alloc {
	uint64_t addr; /* device address (handle for VMM/arrays) */
	uint64_t bytes;
	uint64_t t_alloc, t_free;     /* trace ns; t_free = VT_T_NEVER if live at end */
	uint64_t seq_alloc, seq_free; /* process seq; seq_free = VT_T_NEVER if live */
	uint32_t stack_id;            /* allocating call's stack (process-local id) */
	uint32_t proc;                /* index into vt_model.procs */
	uint8_t api;                  /* VT_API_* id of the allocating call (a byte in the log) */
	uint8_t rt_api, device, kind; /* vt_alloc_kind */
	uint8_t flags;                /* enum vt_alloc_flag */
	/* set by the classifier (classify.h) */
	uint8_t category;   /* enum vt_category */
	uint8_t confidence; /* 0..100 */
	uint8_t reason;     /* vt_alloc_reason(); VT_REASON_UNCLASSIFIED before */
};
#define VT_REASON_UNCLASSIFIED 0

/* The copies attached to an allocation (and a VMM handle's mappings): only
 * allocations with VT_AF_COPIES have one; vt_model_copies() gives every
 * other allocation an all-zero record (t_*_h2d VT_T_NEVER, d2d_src
 * VT_NO_INDEX). */
struct vt_alloc_copies {
	uint64_t h2d_bytes, d2d_in_bytes, d2d_out_bytes, d2h_bytes;
	uint64_t t_first_h2d, t_last_h2d; /* VT_T_NEVER if none */
	uint32_t h2d_copies, d2d_in_copies, d2d_out_copies, d2h_copies;
	uint32_t h2d_stack_id; /* stack of its first host-to-device copy */
	uint32_t d2d_src;      /* allocation its first D2D-in copy came from */
	uint32_t alloc;        /* the allocation (index into vt_model.allocs) */
	uint32_t maps;         /* VMM: live mappings of this handle (replay state) */
	uint64_t mapped_at;    /* VMM: where the handle was first mapped, 0 if never: the
	                          address the job's tensors have (the record's addr is
	                          the handle) */
};

/* A part of an allocation filled by host-to-device copies at one offset. */
struct vt_copy_range {
	uint32_t alloc;
	uint32_t copies;
	uint32_t stack_id; /* first copy's stack */
	uint32_t pad;
	uint64_t offset, bytes; /* bytes = largest single copy at this offset */
	uint64_t total_bytes;   /* all copies at this offset */
	uint64_t t_first, t_last;
};

struct vt_mark {
	uint64_t t_ns, seq, value;
	uint16_t kind; /* vt_mark_kind */
	char *text;
};

/* A step marker: kind VT_MARK_STEP, or text "step N" / "step=N". */
int vt_mark_is_step(uint16_t kind, const char *text, size_t len);

struct vt_module {
	uint64_t seq, base, lo, hi;
	uint8_t event; /* vt_module_event */
	char *path;
};

struct vt_meminfo {
	uint64_t t_ns, seq, free_bytes, total_bytes;
	uint8_t device, reason;
};

/* NVML's per-process view of a device (VT_REC_NVML), beside the reading of
 * the same process whose seq is reading_seq. */
struct vt_nvml_reading {
	uint64_t t_ns, seq, reading_seq;
	uint64_t self_bytes;   /* VT_NVML_UNKNOWN: NVML did not list this process */
	uint64_t others_bytes; /* all the other processes NVML could size */
	uint32_t others, nlisted;
	uint8_t device, reason;
	struct vt_nvml_proc listed[VT_NVML_LISTED]; /* most bytes first */
};

/* A failed allocation (out of memory or another error). */
struct vt_failed_alloc {
	uint64_t t_ns, seq, bytes;
	uint32_t proc, stack_id;
	int32_t result;
	uint16_t api;
	uint8_t device, kind;
};

struct vt_model_stack {
	uint32_t id;
	uint16_t depth, py_depth;
	uint64_t *frames;    /* depth native ips (+ 2*py_depth words) */
	uint32_t alloc_uses; /* allocations made with this stack (after finish) */
	uint32_t copy_uses;  /* first host-to-device copies into an allocation
	                        (or a part of one) made with it */
};

/* Steps of one process (filled by steps.c). */
enum vt_step_source { VT_STEPS_NONE = 0, VT_STEPS_MARKERS, VT_STEPS_PERIOD };

struct vt_proc {
	int32_t pid, ppid;
	uint32_t exec_index;
	uint64_t state_word;       /* header.state */
	uint64_t header_flags;     /* header.flags */
	uint64_t clock_offset_ns;  /* header.clock_base_ns - trace start */
	uint64_t realtime_base_ns; /* header: CLOCK_REALTIME when its log started */
	uint64_t events_dropped;
	struct vt_log_integrity integrity; /* its chunks against their seals and the header */
	int clean_exit;                    /* exited through exit()/return */
	int32_t exit_code;
	int have_exit_rec;
	int running; /* neither exited nor exec'd, and its process runs now */
	char *exe, *cmdline, *hostname;
	/* the launcher's rank environment when its log was made (header rank_*) */
	int32_t rank, local_rank;              /* -1: unknown */
	uint32_t world_size, local_world_size; /* 0: unknown */
	uint32_t rank_source;                  /* enum vt_rank_source (VT_RANK_NONE: no rank) */
	char rank_role[20];                    /* TF_CONFIG task type, or "" */
	/* allocations of this process: [alloc_begin, alloc_end) of vt_model.allocs */
	uint32_t alloc_begin, alloc_end;
	/* frees in the order they happened: [free_begin, free_end) of model.free_order */
	uint32_t free_begin, free_end;
	uint64_t last_t_ns, last_seq;
	/* replay state: each thread's last event time (only a thread's own
	 * events are ordered in time; the merged order is by sequence number,
	 * and threads read their clocks independently) */
	struct vt_thread_time *thread_times; /* uthash by tid */
	struct vt_thread_time *last_thread;  /* the entry of the last event's thread */
	struct vt_mark *marks;
	uint32_t nmarks, cap_marks;
	/* step markers (kind VT_MARK_STEP) a folding model keeps as their times
	 * only, not in marks (model_fold.h): one a step, with no text */
	uint64_t *step_marks;
	uint32_t nstep_marks, cap_step_marks;
	struct vt_module *modules;
	uint32_t nmodules, cap_modules;
	struct vt_meminfo *meminfo;
	uint32_t nmeminfo, cap_meminfo;
	struct vt_nvml_reading *nvml; /* kept in every mode: a few per run */
	uint32_t nnvml, cap_nvml;
	struct vt_stack_entry *stacks; /* uthash by id */
	struct vt_frame_fanin *fanin;  /* uthash ip -> allocation stacks holding it */
	uint32_t alloc_stacks;         /* unique stacks that allocated */
	/* replay state (freed at end_process) */
	struct vt_ival_map *live;        /* address -> allocation / mapping */
	struct vt_handle_entry *handles; /* uthash: VMM handle / array -> allocation */
	uint32_t known_stacks[64];       /* stack ids found recorded, by id % 64 */
	/* steps (steps.c) */
	enum vt_step_source step_source;
	uint64_t *step_t;
	uint32_t nsteps;         /* start time of each step */
	uint64_t step_period_ns; /* median step length, 0 if none */
	/* classification (classify.c, classify_pools.c) */
	int pool_mode; /* 1: opaque allocator pool seen */
	/* 1: some of its bytes are gradients or optimizer state; 0: nothing
	 * trains (an inference job), so its steps are passes */
	int trains;
	int framework; /* enum vt_framework (explain/findings.h) */
	/* the shim's measure of its own time (header self_*; recording_cost.h) */
	struct vt_self_cost self_cost;
};

/* How long a process recorded: from its log's start to its last event. */
static inline uint64_t vt_proc_span_ns(const struct vt_proc *p)
{
	return p->last_t_ns > p->clock_offset_ns ? p->last_t_ns - p->clock_offset_ns : 0;
}

struct vt_device {
	int seen;
	char *name;
	uint64_t total_bytes; /* from DEVICE or MEMINFO records, 0 unknown */
	uint64_t peak_bytes, peak_t_ns;
	uint32_t peak_proc;
	uint64_t peak_seq;  /* the event that reached the peak */
	uint64_t end_bytes; /* live at the end of the trace */
	uint64_t alloc_calls;
};

struct vt_totals {
	uint64_t alloc_calls, free_calls, htod_calls, htod_bytes, failed_allocs;
	uint64_t dtoh_calls, dtod_calls, copy_calls, copy_unattached;
	uint64_t map_calls, unmap_calls, events, records;
	uint64_t frees_unmatched; /* a FREE of an address nobody allocated */
	uint64_t implicit_frees;  /* an ALLOC over a live address */
	/* what a damaged or hostile trace shows (model_load.c says so) */
	uint64_t time_backwards;    /* an event earlier than its thread's one before it */
	uint64_t unknown_stacks;    /* an event naming a stack never recorded */
	uint64_t copies_to_nowhere; /* H2D into no allocation, mapping or handle */
	uint64_t implausible;       /* size > VT_MODEL_MAX_BYTES or a range past
	                               2^64: the event is ignored */
};
#define VT_MODEL_MAX_BYTES (1ull << 50) /* 1 PiB: no device holds more */

struct vt_moment {
	uint64_t t_ns;
	uint32_t proc;
	uint64_t seq;
};

struct vt_model {
	struct vt_alloc *allocs;
	uint32_t nallocs, cap_allocs;
	/* copy statistics of the allocations that had copies (VT_AF_COPIES),
	 * and an open-addressing index alloc -> entry (copy_slots, a power of
	 * two, VT_NO_INDEX empty) */
	struct vt_alloc_copies *copies;
	uint32_t ncopies, cap_copies;
	uint32_t *copy_index;
	uint32_t copy_slots;
	uint32_t *free_order;
	uint32_t nfree_order, cap_free_order;
	struct vt_copy_range *ranges;
	uint32_t nranges, cap_ranges;
	struct vt_range_entry *range_index; /* uthash (alloc, offset) -> range */
	struct vt_failed_alloc *failed;
	uint32_t nfailed, cap_failed;
	struct vt_proc *procs;
	uint32_t nprocs, cap_procs;
	struct vt_device devices[VT_MAX_DEVICES];
	struct vt_totals totals;
	uint64_t trace_start_ns; /* absolute CLOCK_MONOTONIC of t = 0 */
	uint64_t end_t_ns;       /* last event time seen */
	int finished;
	unsigned warnings; /* reader damage warnings, if loaded */
	/* site naming (explain/site_names.c): symbolized stacks when the loader set
	 * them up, and the names already made, per (process, stack) */
	struct vt_sites *sites;
	void (*sites_close)(struct vt_sites *sites);
	struct vt_site_name *site_names;
	/* the peak per device as the replay went, valid for a one-process trace
	 * (vt_model_finish merges processes by time otherwise); replay state */
	struct vt_replay_peak {
		uint64_t live, peak, t_ns, seq;
	} * replay_peaks;                       /* [VT_MAX_DEVICES], NULL until used */
	struct vt_site_funnel *site_funnels[2]; /* [0] allocation stacks, [1] copy stacks */
	/* what the replay hands on and who keeps it (model_consumer.h): the
	 * full model's history or the streaming model's summaries */
	const struct vt_replay_consumer *consumer;
	/* set for a streaming model (model_stream.h): freed records are reused,
	 * and allocs, free_order and ranges do not hold the whole trace */
	struct vt_stream *stream;
	/* set for a folding model (model_fold.h): allocs holds the records not
	 * folded, the folded ones are counted in its groups */
	struct vt_fold *fold;
	uint32_t site_funnel_stacks[2]; /* stacks they were counted over */
	int site_funnels_ready;
};

/* vt_model_new (model_history.h) and vt_model_new_streaming (model_stream.h)
 * make a model; this frees either. */
void vt_model_free(struct vt_model *m);

/* Replay input. hdr may be NULL in tests (a pid-0 process is made). */
uint32_t vt_model_begin_process(struct vt_model *m, const struct vt_file_header *hdr,
                                uint64_t trace_start_ns);
void vt_model_feed(struct vt_model *m, uint32_t proc, uint32_t type, const void *rec,
                   uint32_t size);
/* The same for a record of thread `tid` (vt_model_feed: all of one thread). */
void vt_model_feed_thread(struct vt_model *m, uint32_t proc, uint32_t tid, uint32_t type,
                          const void *rec, uint32_t size);
/* vt_model_feed_thread of n events of thread `tid` in a row, each a whole
 * struct vt_event of its own type: one call for a run of them (a reader's
 * run, log_reader.h). */
void vt_model_feed_events(struct vt_model *m, uint32_t proc, uint32_t tid,
                          const struct vt_event *ev, uint32_t n);
void vt_model_end_process(struct vt_model *m, uint32_t proc);
/* Peaks and end state per device. Call once, after the last process. */
void vt_model_finish(struct vt_model *m);

/* The copy statistics of allocation a (an element of m->allocs): never NULL. */
const struct vt_alloc_copies *vt_model_copies(const struct vt_model *m, const struct vt_alloc *a);

#endif
