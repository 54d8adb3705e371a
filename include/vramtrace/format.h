/* vramtrace log format, version 1 — the contract between the shim (writer)
 * and the analyzer (reader). Nothing else in the project defines bytes on disk.
 *
 * One file per process: <trace dir>/vramtrace.<pid>.<n>.log  (n = 0, 1, ...
 * for successive exec images of the same pid). Created 0600, O_EXCL|O_NOFOLLOW,
 * mapped MAP_SHARED so a reader can follow it live and every committed record
 * survives a crash of the job.
 *
 *   offset 0            VT_HEADER_SIZE      + chunk_size         + 2*chunk_size
 *   +-------------------+-------------------+-------------------+----
 *   | vt_file_header    | chunk 0           | chunk 1           | ...
 *   +-------------------+-------------------+-------------------+----
 *
 * A chunk belongs to exactly one thread, from the moment the thread claims it
 * (atomic add on header.chunks_claimed, then posix_fallocate of its range, so
 * a full disk is an error return, never a SIGBUS) until it is full.
 *
 *   chunk:
 *   +------------------+----------+----------+-----+----------+----------+
 *   | vt_chunk_header  | record   | record   | ... | 0 0 0 0  | (unused) |
 *   | (32 bytes)       |          |          |     | hdr == 0 |          |
 *   +------------------+----------+----------+-----+----------+----------+
 *
 * Every record starts with a 32-bit header word, written LAST with a release
 * store after the rest of the record is in place:
 *
 *    31            24 23            16 15                              0
 *   +----------------+----------------+--------------------------------+
 *   | flags (0)      | type (vt_rec)  | size in bytes, incl. header    |
 *   +----------------+----------------+--------------------------------+
 *
 * size is a multiple of 8 and >= 8. A header word of zero means "not written":
 * the reader stops reading that chunk there (the thread was between records,
 * or died inside one). A header whose size runs past the chunk, is not a
 * multiple of 8 or is < 8 is corruption: the reader warns once with the file
 * offset and resumes at the next chunk. Unknown types with a sane size are
 * skipped (newer writers may add kinds). Records are never split across chunks.
 *
 * Order: every event carries a process-wide sequence number taken from one
 * atomic counter, so a reader merges the per-thread chunks into one ordered
 * stream. A thread's records inside its chunks are already in its own order,
 * and a stack or module record is always written (by the same thread, in the
 * same or an earlier chunk) before the first event that references it.
 *
 * All integers little-endian (the writer's native order; the header's
 * byte_order field lets a reader refuse a foreign-endian log).
 */
#ifndef VRAMTRACE_FORMAT_H
#define VRAMTRACE_FORMAT_H

#include <stdint.h>

#define VT_MAGIC "VRAMTRC\0"      /* 8 bytes, includes the NUL */
#define VT_MAGIC_LEN 8
/* 2: packed events may hold a 6-byte address (event_packed.h, present bit
 * 7). A version-1 log is a version-2 log without it, so readers take both;
 * a reader that knows only 1 refuses a 2 instead of reading its records as
 * damage. */
#define VT_FORMAT_VERSION 2u
#define VT_FORMAT_VERSION_OLDEST 1u
#define VT_BYTE_ORDER_MARK 0x01020304u
#define VT_HEADER_SIZE 4096u
#define VT_CHUNK_MAGIC 0x4b435456u /* "VTCK" */
#define VT_DEFAULT_CHUNK_SIZE (256u * 1024u)
#define VT_MAX_RECORD_SIZE 65528u
#define VT_MAX_FRAMES 512u
#define VT_SELF_SAMPLE_EVERY 64u /* a power of two */
#define VT_SELF_HIST 32u

/* ---- file header (first VT_HEADER_SIZE bytes) -------------------------- */

enum vt_state {
	VT_STATE_RUNNING = 0,  /* process has not (yet) exited cleanly: if it is
	                          gone, it died (SIGKILL, crash, _exit bypass) */
	VT_STATE_EXITED = 1,   /* exit()/return from main: exit_code is valid */
	VT_STATE_EXECED = 2,   /* image replaced by execve: see the next log of
	                          the same pid (n + 1) */
};

/* header.flags bits (set with atomic OR, never cleared) */
enum vt_header_flag {
	VT_FLAG_TRUNCATED = 1u << 0,  /* disk full or --max-size reached: records
	                                 after some point were dropped */
	VT_FLAG_STACKS_OFF = 1u << 1, /* recorded with --stack-depth 0 */
	VT_FLAG_FREE_STACKS = 1u << 2,/* frees carry their stacks too (--free-stacks);
	                                 without it a free's stack_id is 0 */
	VT_FLAG_TSC_CLOCK = 1u << 3,  /* event times read from the TSC, scaled to
	                                 CLOCK_MONOTONIC (logwriter/event_clock.c);
	                                 without it each from clock_gettime */
	VT_FLAG_RESERVE_LIMITED = 1u << 4, /* the process ran under RLIMIT_AS
	                                 (ulimit -v): the log reserved 1/16 of the
	                                 limit (reserve_size), not 64 GiB; a log
	                                 that fills it is marked truncated */
	VT_FLAG_SEALS = 1u << 5,      /* the writer keeps each chunk's last
	                                 VT_SEAL_SIZE bytes for its seal (below) */
};

/* state word: low 32 bits enum vt_state, high 32 bits exit code (int32). */
#define VT_STATE_WORD(state, code) \
	((uint64_t)(uint32_t)(state) | ((uint64_t)(uint32_t)(int32_t)(code) << 32))
#define VT_STATE_OF(word) ((uint32_t)((word) & 0xffffffffu))
#define VT_EXIT_CODE_OF(word) ((int32_t)(uint32_t)((word) >> 32))

struct vt_file_header {
	char magic[VT_MAGIC_LEN];     /* VT_MAGIC */
	uint32_t version;             /* VT_FORMAT_VERSION */
	uint32_t byte_order;          /* VT_BYTE_ORDER_MARK as written natively */
	uint32_t header_size;         /* VT_HEADER_SIZE: chunks start here */
	uint32_t chunk_size;          /* bytes per chunk, multiple of 4096 */
	int32_t pid;
	int32_t ppid;
	uint32_t exec_index;          /* n in the file name */
	uint32_t stack_depth;         /* max native frames captured (0 = off) */
	uint64_t clock_base_ns;       /* CLOCK_MONOTONIC at creation; event t_ns
	                                 is relative to this */
	uint64_t realtime_base_ns;    /* CLOCK_REALTIME at the same instant */
	uint64_t max_size;            /* size cap in bytes (0 = none) */
	/* fields below are updated while the process runs (atomics) */
	uint64_t state;               /* VT_STATE_WORD(); written with release */
	uint64_t flags;               /* enum vt_header_flag bits */
	uint64_t chunks_claimed;      /* hint only: chunks handed out so far
	                                 (some may never have been written) */
	uint64_t
	    events_dropped; /* records not written (log full, or made before the log existed) */
	uint32_t exe_len;             /* bytes used in exe[] (no NUL counted) */
	uint32_t cmdline_len;         /* bytes used in cmdline[] */
	char hostname[64];            /* NUL-terminated */
	char exe[1024];               /* /proc/self/exe target, truncated */
	char cmdline[2048];           /* argv, NUL-separated, truncated */
	/* The shim's own time (interpose/self_cost.c), updated while the
	 * process runs (atomics): each thread times one recorded call in
	 * VT_SELF_SAMPLE_EVERY on average, the wrapper's work before and after
	 * the driver call (not the call); a timed call stands for the interval
	 * of calls it ends. A thread's first call is timed apart (self_first_*):
	 * it sets the thread's recording up (the process's first creates the
	 * log), a cost once, not a rate. Zero in logs from before it (the bytes
	 * were padding), so a reader takes self_timed == self_first_calls == 0
	 * as "not measured". */
	uint64_t self_calls;              /* recorded calls in the timed calls' intervals */
	uint64_t self_timed;              /* calls timed */
	uint64_t self_est_ns;             /* each timed call's time x the calls of its
	                                     interval, summed: their time, estimated */
	uint64_t self_tail_calls;         /* calls after the exiting thread's last timed
	                                     one (no time of their own: the average) */
	uint64_t self_first_calls;        /* threads whose first call was timed */
	uint64_t self_first_ns;           /* those first calls' time, summed */
	uint32_t self_hist[VT_SELF_HIST]; /* timed calls by time: bucket b holds
	                                     [2^b, 2^(b+1)) ns, bucket 0 [0, 2) */
	/* Stack captures and the stack memo (interpose/stack_memo.h), added by
	 * each thread in batches and when it exits (interpose/stack_capture.c;
	 * a thread killed with the process may miss its last few); a mismatch
	 * is added at once. Zero in logs from before (padding). */
	uint64_t stack_captures;        /* calls whose stack was taken */
	uint64_t stack_memo_hits;       /* of them, frames from the memo */
	uint64_t stack_memo_verified;   /* hits also unwound (VRAMTRACE_STACK_MEMO=verify) */
	uint64_t stack_memo_mismatches; /* of those, where the unwinder disagreed */
	/* Address space the log reserved, header included: the most the file
	 * can grow to (64 GiB, less under --max-size or RLIMIT_AS, or when the
	 * kernel refused more). Zero in logs from before (padding). */
	uint64_t reserve_size;
	/* Chunks whose file space the writer allocated (after posix_fallocate
	 * succeeded): a process killed between claiming a chunk and that leaves
	 * chunks_claimed one ahead with nothing lost. What a reader compares the
	 * file's chunks with when the writer seals (VT_FLAG_SEALS). */
	uint64_t chunks_ready;
	/* The launcher's rank environment when the log was made
	 * (logwriter/rank_env.c). Ranks are stored plus one and sizes as they
	 * are, so zero (older logs, padding, or nothing set) is "unknown". */
	uint32_t rank_p1, local_rank_p1, world_size, local_world_size;
	uint32_t rank_source; /* enum vt_rank_source: the variables rank_p1 came from */
	char rank_role[20];   /* TF_CONFIG's task type ("worker"), NUL-terminated */
};

/* Where a log's rank came from (vt_file_header.rank_source). */
enum vt_rank_source {
	VT_RANK_NONE = 0,
	VT_RANK_TORCH,     /* RANK, LOCAL_RANK, WORLD_SIZE (torchrun, accelerate) */
	VT_RANK_OMPI,      /* OMPI_COMM_WORLD_* (mpirun) */
	VT_RANK_HOROVOD,   /* HOROVOD_RANK (horovodrun) */
	VT_RANK_PMI,       /* PMI_RANK (MPICH, Intel MPI) */
	VT_RANK_SLURM,     /* SLURM_PROCID (srun) */
	VT_RANK_TF_CONFIG, /* TF_CONFIG's task index */
	VT_RANK_SOURCE_COUNT
};
_Static_assert(sizeof(struct vt_file_header) <= VT_HEADER_SIZE, "header fits");

/* ---- chunk header (first 32 bytes of every chunk) ---------------------- */

struct vt_chunk_header {
	uint32_t magic;               /* VT_CHUNK_MAGIC, release-stored last */
	uint32_t tid;                 /* kernel thread id of the owner */
	uint64_t thread_seq;          /* 0, 1, 2... per thread: chunk order */
	uint64_t first_seq;           /* global seq when the chunk was claimed */
	uint64_t first_t_ns;          /* t_ns when the chunk was claimed (0 in
	                                 logs from before VT_REC_PACKED); packed
	                                 events are relative to these two */
};
_Static_assert(sizeof(struct vt_chunk_header) == 32, "chunk header is 32");

/* ---- records ------------------------------------------------------------ */

enum vt_rec {
	VT_REC_NONE = 0,
	/* events: struct vt_event */
	VT_REC_ALLOC = 1,      /* device memory handed out (or failed: result) */
	VT_REC_FREE = 2,       /* device memory given back (seq taken BEFORE the
	                          real free) */
	VT_REC_COPY = 3,       /* memcpy: addr = dst, aux = src, kind = dir */
	VT_REC_MAP = 4,        /* VMM cuMemMap: addr = va, aux = handle,
	                          stream = offset into handle */
	VT_REC_UNMAP = 5,      /* VMM cuMemUnmap: addr = va, bytes */
	VT_REC_RESERVE = 6,    /* cuMemAddressReserve: addr, bytes (no memory) */
	VT_REC_UNRESERVE = 7,  /* cuMemAddressFree */
	VT_REC_MEMSET = 8,     /* memset into device memory: addr, bytes */
	VT_REC_POOL_TRIM = 9,  /* cuMemPoolTrimTo: aux = pool, bytes = keep */
	VT_REC_FREE_SHORT = 10,/* struct vt_free_event: a VT_REC_FREE whose
	                          bytes, aux and stream are all 0 (readers treat
	                          it exactly as that VT_REC_FREE) */
	VT_REC_PACKED = 11,    /* any event above in 16-80 bytes
	                          (vramtrace/event_packed.h); readers expand it
	                          to the struct vt_event it stands for */
	/* metadata */
	VT_REC_STACK = 16,     /* struct vt_stack_rec */
	VT_REC_MODULE = 17,    /* struct vt_module_rec */
	VT_REC_MEMINFO = 18,   /* struct vt_meminfo_rec */
	VT_REC_MARK = 19,      /* struct vt_mark_rec */
	VT_REC_THREAD = 20,    /* struct vt_thread_rec */
	VT_REC_EXIT = 21,      /* struct vt_exit_rec */
	VT_REC_DEVICE = 22,    /* struct vt_device_rec */
	VT_REC_LOOKUP = 23,    /* struct vt_lookup_rec */
	VT_REC_PYSTR = 24,     /* struct vt_pystr_rec: interned Python string */
	VT_REC_NOTE = 25,      /* struct vt_note_rec: a warning the shim had */
	VT_REC_SEAL = 26,      /* struct vt_chunk_seal: only in a chunk's last
	                          VT_SEAL_SIZE bytes (a reader that does not
	                          know it skips it as an unknown kind) */
	VT_REC_NVML = 27,      /* struct vt_nvml_rec (older readers skip it) */
};

/* How a copy moved bytes (vt_event.kind for VT_REC_COPY). */
enum vt_copy_dir {
	VT_COPY_UNKNOWN = 0,
	VT_COPY_HTOD = 1,
	VT_COPY_DTOH = 2,
	VT_COPY_DTOD = 3,
	VT_COPY_HTOH = 4,
	VT_COPY_PEER = 5,      /* device to device across contexts */
	VT_COPY_ARRAY = 6,     /* to or from a CUDA array */
};

/* What kind of memory an allocation is (vt_event.kind for ALLOC/FREE). */
enum vt_alloc_kind {
	VT_ALLOC_DEVICE = 0,   /* cuMemAlloc, cuMemAllocPitch */
	VT_ALLOC_MANAGED = 1,  /* cuMemAllocManaged */
	VT_ALLOC_ASYNC = 2,    /* stream-ordered, default pool */
	VT_ALLOC_POOL = 3,     /* cuMemAllocFromPoolAsync: aux = pool */
	VT_ALLOC_VMM = 4,      /* cuMemCreate: addr = handle, bytes physical */
	VT_ALLOC_ARRAY = 5,    /* cuArrayCreate & co: addr = array handle */
	VT_ALLOC_HOST = 6,     /* pinned host memory: not device bytes */
	VT_ALLOC_GRAPH = 7,    /* graph memory node */
	VT_ALLOC_IPC = 8,      /* imported: not new memory */
};

#define VT_DEVICE_UNKNOWN 0xffu

/* The event record: every alloc/free/copy/map. 64 bytes, one cache line.
 *
 *   0      4      8             16            24            32
 *   +------+------+-------------+-------------+-------------+
 *   | hdr  |stack | seq         | t_ns        | addr        |
 *   +------+------+-------------+-------------+-------------+
 *   32            40            48            56  57  58  59  60     64
 *   +-------------+-------------+-------------+---+---+---+---+------+
 *   | bytes       | aux         | stream      |api|rt |dev|knd|result|
 *   +-------------+-------------+-------------+---+---+---+---+------+
 */
struct vt_event {
	uint32_t hdr;       /* size 64, type VT_REC_ALLOC..VT_REC_POOL_TRIM */
	uint32_t stack_id;  /* VT_REC_STACK id, 0 = no stack */
	uint64_t seq;       /* process-wide order */
	uint64_t t_ns;      /* CLOCK_MONOTONIC - header.clock_base_ns */
	uint64_t addr;      /* device pointer / VMM handle / copy destination */
	uint64_t bytes;     /* size (requested size if the call failed) */
	uint64_t aux;       /* copy source; pool; VMM handle; pitch */
	uint64_t stream;    /* CUstream, 0 = legacy default */
	uint8_t api;        /* driver entry point, VT_API_* (api.def) */
	uint8_t rt_api;     /* runtime call that caused it, VT_RT_* (0 none) */
	uint8_t device;     /* ordinal, VT_DEVICE_UNKNOWN if not known */
	uint8_t kind;       /* vt_alloc_kind or vt_copy_dir */
	int32_t result;     /* CUresult the real call returned */
};
_Static_assert(sizeof(struct vt_event) == 64, "event budget is 64 bytes");

/* The compact free: a VT_REC_FREE event whose bytes, aux and stream would all
 * be 0 (cuMemFree*, cuMemRelease, array destroys, cuMemFreeAsync on the
 * legacy default stream): those three words are left out. A free with any of
 * them non-zero (an async free on a stream, a graph free) is written as the
 * full 64-byte VT_REC_FREE, so nothing is lost. 40 bytes; the common fields
 * sit at the same offsets as in vt_event up to addr.
 *
 *   0      4      8             16            24            32  33  34  35  36     40
 *   +------+------+-------------+-------------+-------------+---+---+---+---+------+
 *   | hdr  |stack | seq         | t_ns        | addr        |api|rt |dev|knd|result|
 *   +------+------+-------------+-------------+-------------+---+---+---+---+------+
 */
struct vt_free_event {
	uint32_t hdr;       /* size 40, type VT_REC_FREE_SHORT */
	uint32_t stack_id;
	uint64_t seq;
	uint64_t t_ns;
	uint64_t addr;
	uint8_t api;
	uint8_t rt_api;
	uint8_t device;
	uint8_t kind;       /* vt_alloc_kind */
	int32_t result;
};
_Static_assert(sizeof(struct vt_free_event) == 40, "compact free is 40 bytes");

/* A unique call stack. ids are process-unique, > 0. frames[0] is the
 * innermost; return addresses have already had 1 subtracted so they point
 * into the call instruction. Python frames (if any, innermost first) follow
 * the native ones: each is two words,
 *   (file_id << 32 | func_id,  line << 32 | eval_ord << 16 | native_index)
 * with ids from VT_REC_PYSTR records of the same log (two ids may carry the
 * same text: key names by text); eval_ord counts the C-level invocations of
 * the interpreter's eval loop from the innermost (0); native_index is the
 * index in frames[] of that invocation's _PyEval_EvalFrameDefault frame, the
 * one the Python frame replaces, or 0xffff when it was not captured.
 * interpose/pyframes.h has the details. */
struct vt_stack_rec {
	uint32_t hdr;
	uint32_t stack_id;
	uint16_t depth;      /* native frames */
	uint16_t py_depth;   /* python frames (2 words each) */
	uint32_t hash;       /* writer's hash, informative */
	uint64_t frames[];   /* depth native ips, then 2*py_depth words */
};

enum vt_module_event { VT_MODULE_LOAD = 0, VT_MODULE_UNLOAD = 1 };

/* A loaded object: written at start and after every dlopen/dlclose. */
struct vt_module_rec {
	uint32_t hdr;
	uint32_t generation;  /* bumps on every dlopen/dlclose the shim sees */
	uint64_t seq;         /* global seq at the time: valid from here on */
	uint64_t base;        /* load bias (dlpi_addr) */
	uint64_t lo, hi;      /* lowest and highest mapped address (PT_LOAD) */
	uint8_t event;        /* vt_module_event */
	uint8_t build_id_len; /* <= 32 */
	uint16_t path_len;    /* bytes of path, no NUL */
	uint32_t reserved;
	uint8_t build_id[32];
	char path[];          /* path_len bytes, padded to 8 */
};

enum vt_meminfo_reason {
	VT_MEMINFO_FIRST_USE = 0, /* first time a context/device was seen */
	VT_MEMINFO_OOM = 1,       /* right after an out-of-memory result */
	VT_MEMINFO_MARK = 2,      /* at a vramtrace_mark() */
	VT_MEMINFO_CALL = 3,      /* the job itself called cuMemGetInfo */
	VT_MEMINFO_PEAK = 4,      /* the shim's own, before a free once the
	                             device grew past its last sample */
	VT_MEMINFO_EXIT = 5,      /* the shim's own, at process exit */
};

struct vt_meminfo_rec {
	uint32_t hdr;
	uint8_t device;
	uint8_t reason;       /* vt_meminfo_reason */
	uint16_t reserved;
	uint64_t seq;
	uint64_t t_ns;
	uint64_t free_bytes;
	uint64_t total_bytes;
};

enum vt_mark_kind {
	VT_MARK_USER = 0,        /* vramtrace_mark() */
	VT_MARK_STEP = 1,        /* vramtrace_mark("step ...") recognised step */
	VT_MARK_LAUNCHER = 2,    /* written by `vramtrace run` */
	VT_MARK_FRAMEWORK_OOM = 3,/* framework OOM text seen on stderr; value =
	                            parsed bytes or 0 */
};

struct vt_mark_rec {
	uint32_t hdr;
	uint16_t kind;        /* vt_mark_kind */
	uint16_t text_len;    /* bytes of text, no NUL */
	uint64_t seq;
	uint64_t t_ns;
	uint64_t value;
	char text[];          /* padded to 8 */
};

struct vt_thread_rec {
	uint32_t hdr;
	uint32_t tid;
	uint32_t name_len;
	uint32_t reserved;
	char name[];
};

struct vt_exit_rec {
	uint32_t hdr;
	int32_t code;
	uint64_t seq;
	uint64_t t_ns;
};

struct vt_device_rec {
	uint32_t hdr;
	uint32_t ordinal;
	uint64_t total_bytes;
	uint32_t name_len;
	uint32_t reserved;
	char name[];
};

enum vt_lookup_path {
	VT_LOOKUP_DLSYM = 0,         /* dlsym(handle, "cu...") */
	VT_LOOKUP_GET_PROC = 1,      /* cuGetProcAddress (4 args) */
	VT_LOOKUP_GET_PROC_V2 = 2,   /* cuGetProcAddress_v2 (5 args) */
};

enum vt_lookup_outcome {
	VT_LOOKUP_ROUTED = 0,        /* pointer matched a wrapped variant */
	VT_LOOKUP_ROUTED_BY_NAME = 1,/* fell back to (name, version, flags) */
	VT_LOOKUP_PASSED = 2,        /* not a function we wrap: untouched */
	VT_LOOKUP_UNROUTED = 3,      /* looked like ours, could not route */
	VT_LOOKUP_FAILED = 4,        /* the real resolver failed */
};

/* One driver symbol lookup the shim saw (only for cu* names). */
struct vt_lookup_rec {
	uint32_t hdr;
	uint8_t path;         /* vt_lookup_path */
	uint8_t outcome;      /* vt_lookup_outcome */
	uint8_t api;          /* VT_API_* it was routed to, 0 none */
	uint8_t reserved;
	uint32_t version;     /* cudaVersion asked for (0 for dlsym) */
	uint32_t name_len;
	uint64_t flags;       /* CU_GET_PROC_ADDRESS_* */
	char name[];          /* padded to 8 */
};

/* An interned Python string (file name or function name). */
struct vt_pystr_rec {
	uint32_t hdr;
	uint32_t id;
	uint32_t len;
	uint32_t reserved;
	char text[];
};

/* Something went wrong inside the shim that the user should know. */
struct vt_note_rec {
	uint32_t hdr;
	uint32_t len;
	uint64_t seq;
	char text[];
};

/* Per-process used memory on a device per NVML (libnvidia-ml, where it is
 * installed), read right after a PEAK or EXIT reading of cuMemGetInfo and
 * written after it by the same thread (interpose/nvml_sample.c). The device
 * is matched to NVML's by UUID. Other processes: all of them counted, the
 * VT_NVML_LISTED with the most bytes listed with their command names
 * (/proc/PID/comm, read then: the process may be gone when the log is read).
 * NVML's "not available" is VT_NVML_UNKNOWN. 56 bytes + 32 per listed. */
#define VT_NVML_LISTED 8u
#define VT_NVML_UNKNOWN UINT64_MAX

struct vt_nvml_proc {
	int32_t pid;
	uint32_t reserved;
	uint64_t used_bytes;  /* VT_NVML_UNKNOWN: NVML could not say */
	char comm[16];        /* NUL-terminated; "" if unreadable */
};

struct vt_nvml_rec {
	uint32_t hdr;
	uint8_t device;
	uint8_t reason;       /* the reading's vt_meminfo_reason */
	uint16_t nlisted;     /* entries in procs[], <= VT_NVML_LISTED */
	uint64_t seq;
	uint64_t t_ns;
	uint64_t reading_seq; /* seq of the VT_REC_MEMINFO it goes with */
	uint64_t self_bytes;  /* this process; VT_NVML_UNKNOWN if not listed
	                         or not available */
	uint64_t others_bytes;/* all other processes (those NVML could size) */
	uint32_t others;      /* other processes NVML listed */
	uint32_t reserved;
	struct vt_nvml_proc procs[]; /* others, most bytes first */
};
_Static_assert(sizeof(struct vt_nvml_rec) == 56, "nvml record header is 56 bytes");
_Static_assert(sizeof(struct vt_nvml_proc) == 32, "nvml process entry is 32 bytes");

/* A chunk's seal: its last VT_SEAL_SIZE bytes (in logs with VT_FLAG_SEALS,
 * where no record goes there), written when its thread leaves it (full),
 * exits, or the process exits or execs. It proves the chunk's records are
 * the ones written: `bytes` (chunk header included, a multiple of 8) end
 * where the records end, `records` of them, `crc` the CRC32C
 * (vramtrace/crc32c.h) of those bytes. Header word last, as for a record: a
 * chunk whose tail is zero is unsealed (its thread or process died), never
 * damaged. Nothing is written into a chunk after its seal. */
#define VT_SEAL_MAGIC 0x4c535456u /* "VTSL" */
#define VT_SEAL_SIZE 32u

enum vt_seal_reason {
	VT_SEAL_FULL = 1,         /* the thread moved on to a new chunk */
	VT_SEAL_THREAD_EXIT = 2,
	VT_SEAL_PROCESS_EXIT = 3, /* exit(), or an exec replacing the image */
};

struct vt_chunk_seal {
	uint32_t hdr;      /* VT_HDR(VT_REC_SEAL, VT_SEAL_SIZE), release-stored last */
	uint32_t magic;    /* VT_SEAL_MAGIC */
	uint32_t records;  /* records in [32, bytes) */
	uint32_t bytes;    /* chunk bytes covered, from the chunk header on */
	uint32_t crc;      /* CRC32C of those bytes */
	uint32_t reason;   /* vt_seal_reason */
	uint32_t seal_crc; /* CRC32C of magic .. reason: damage to the seal */
	uint32_t reserved;
};
_Static_assert(sizeof(struct vt_chunk_seal) == VT_SEAL_SIZE, "seal is 32 bytes");

/* helpers for header words */
#define VT_HDR(type, size) ((uint32_t)(size) | ((uint32_t)(type) << 16))
#define VT_HDR_SIZE(h) ((uint32_t)(h) & 0xffffu)
#define VT_HDR_TYPE(h) (((uint32_t)(h) >> 16) & 0xffu)
#define VT_ALIGN8(n) (((n) + 7u) & ~(uint32_t)7u)

#endif
