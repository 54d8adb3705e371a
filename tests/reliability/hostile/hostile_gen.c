/* The catalogue of hostile traces.
 *
 *   hostile_gen OUTDIR          one directory per case: OUTDIR/<case>/
 *   hostile_gen --list          the case names
 *   hostile_gen --seeds OUTDIR  every case's log as one flat file (fuzz seeds)
 *
 * Each case is one function building the exact bytes it needs with
 * log_builder (never through the shim's writer: a hostile file lies in ways
 * the writer cannot). What each case must produce (exit code, message lines,
 * records kept) lives beside it in expected.tsv, checked by run_catalogue.sh.
 * Every case starts from the same good log so "partial result" is measurable:
 * the good log has GOOD_RECORDS records.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log_builder.h"
#include "vramtrace/event_packed.h"

/* api.def ids the cases use */
enum { API_ALLOC = 2, API_FREE = 11, API_HTOD = 31 };
#define CHUNK 8192u
#define PID 4242
#define MIB (1ull << 20)

/* ---- the good log every case starts from -------------------------------------- */

static const uint64_t good_frames[] = {0x401233, 0x401455, 0x7f0000001000};

/* thread name, stack 1, alloc, copy h2d, mark, free, alloc, exit:
 * 8 records in chunk 0 of thread 100. */
static void good_body(struct lb *b)
{
	lb_chunk(b, 100, 0);
	lb_text(b, VT_REC_THREAD, "trainer");
	lb_stack(b, 1, good_frames, 3);
	lb_event(b, VT_REC_ALLOC, (struct vt_event){.stack_id = 1, .addr = 0x7f0000000000ull,
	                                            .bytes = 64 * MIB, .api = API_ALLOC});
	lb_event(b, VT_REC_COPY, (struct vt_event){.stack_id = 1, .addr = 0x7f0000000000ull,
	                                           .aux = 0x5555000, .bytes = 64 * MIB,
	                                           .api = API_HTOD, .kind = VT_COPY_HTOD});
	lb_text(b, VT_REC_MARK, "step 1");
	lb_event(b, VT_REC_FREE, (struct vt_event){.stack_id = 1, .addr = 0x7f0000000000ull,
	                                           .api = API_FREE});
	lb_event(b, VT_REC_ALLOC, (struct vt_event){.stack_id = 1, .addr = 0x7f0004000000ull,
	                                            .bytes = 2 * MIB, .api = API_ALLOC});
	struct vt_exit_rec x = {.code = 0, .seq = b->seq++, .t_ns = (b->t_ns += 1000)};
	lb_raw(b, VT_REC_EXIT, sizeof x, &x);
}

static void good_log(struct lb *b, int32_t pid)
{
	lb_init(b, pid, CHUNK);
	good_body(b);
}

/* A second thread's chunk after the damage: proves reading goes on. */
static void second_thread(struct lb *b)
{
	lb_chunk(b, 101, 0);
	lb_event(b, VT_REC_ALLOC, (struct vt_event){.addr = 0x7f0008000000ull, .bytes = MIB,
	                                            .api = API_ALLOC});
}

/* ---- cases ----------------------------------------------------------------------- */

struct out {
	const char *dir;   /* the case's trace directory */
	struct lb log;     /* the main log (saved as vramtrace.PID.0.log) */
	int saved;         /* the case saved its own files */
};

static char *path_in(const char *dir, const char *name)
{
	char *p;
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	return p;
}

static void save_as(struct out *o, struct lb *b, int32_t pid, size_t n)
{
	char name[64];
	snprintf(name, sizeof name, "vramtrace.%d.0.log", pid);
	char *p = path_in(o->dir, name);
	if (lb_save_prefix(b, p, n) < 0) {
		perror(p);
		exit(1);
	}
	free(p);
	o->saved = 1;
}

static void c_good(struct out *o) { good_log(&o->log, PID); }

/* every record kind the format knows, each well-formed */
static void c_every_kind(struct out *o)
{
	struct lb *b = &o->log;
	good_log(b, PID);
	struct {
		struct vt_module_rec m;
		char path[24];
	} mod = {.m = {.seq = b->seq++, .base = 0x7f0000000000ull, .lo = 0x7f0000000000ull,
	               .hi = 0x7f0000100000ull, .build_id_len = 20, .path_len = 20},
	         .path = "/usr/lib/libcuda.so1"};
	memset(mod.m.build_id, 0xab, 20);
	lb_raw(b, VT_REC_MODULE, sizeof mod, &mod);
	struct vt_meminfo_rec mi = {.reason = VT_MEMINFO_OOM, .seq = b->seq++, .t_ns = 99000,
	                            .free_bytes = MIB, .total_bytes = 80 * 1024 * MIB};
	lb_raw(b, VT_REC_MEMINFO, sizeof mi, &mi);
	struct {
		struct vt_device_rec d;
		char name[16];
	} dev = {.d = {.ordinal = 0, .total_bytes = 80 * 1024 * MIB, .name_len = 16},
	         .name = "Simulated H100 0"};
	lb_raw(b, VT_REC_DEVICE, sizeof dev, &dev);
	struct {
		struct vt_lookup_rec l;
		char name[16];
	} look = {.l = {.path = VT_LOOKUP_GET_PROC_V2, .outcome = VT_LOOKUP_ROUTED, .api = API_ALLOC,
	                .version = 3020, .name_len = 10, .flags = 2},
	          .name = "cuMemAlloc"};
	lb_raw(b, VT_REC_LOOKUP, sizeof look, &look);
	struct {
		struct vt_pystr_rec p;
		char text[8];
	} py = {.p = {.id = 1, .len = 8}, .text = "train.py"};
	lb_raw(b, VT_REC_PYSTR, sizeof py, &py);
	struct {
		struct vt_stack_rec s;
		uint64_t words[4];
	} pst = {.s = {.stack_id = 2, .depth = 2, .py_depth = 1},
	         .words = {0x401000, 0x402000, 1ull << 32 | 1, 42ull << 32 | 1}};
	lb_raw(b, VT_REC_STACK, sizeof pst, &pst);
	lb_text(b, VT_REC_NOTE, "cuGetProcAddress: 1 lookup not routed");
}

static void c_bad_magic(struct out *o)
{
	good_log(&o->log, PID);
	memcpy(lb_header(&o->log)->magic, "NOTVRAMT", 8);
}

static void c_future_version(struct out *o)
{
	good_log(&o->log, PID);
	lb_header(&o->log)->version = 7;
}

static void c_foreign_byte_order(struct out *o)
{
	good_log(&o->log, PID);
	lb_header(&o->log)->byte_order = __builtin_bswap32(VT_BYTE_ORDER_MARK);
}

static void c_empty_file(struct out *o)
{
	good_log(&o->log, PID);
	save_as(o, &o->log, PID, 0);
}

static void c_truncated_header(struct out *o)
{
	good_log(&o->log, PID);
	save_as(o, &o->log, PID, 100);
}

static void c_header_size_past_end(struct out *o)
{
	good_log(&o->log, PID);
	lb_header(&o->log)->header_size = 512 * 1024;
}

static void c_header_size_overflow(struct out *o)
{
	good_log(&o->log, PID);
	lb_header(&o->log)->header_size = 0xfffffff8u;
}

static void c_bad_chunk_size(struct out *o)
{
	good_log(&o->log, PID);
	lb_header(&o->log)->chunk_size = 1000;
}

static void c_huge_chunk_size(struct out *o)
{
	good_log(&o->log, PID);
	lb_header(&o->log)->chunk_size = 1u << 30; /* file is 12 KiB */
}

/* record header says size 0: the reader must not loop on it */
static void c_record_size_zero(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	lb_chunk(&o->log, 100, 0);
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x1000, .bytes = 4096, .api = API_ALLOC});
	lb_raw(&o->log, VT_REC_ALLOC, 0, NULL);
	second_thread(&o->log);
}

static void c_record_size_unaligned(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	lb_chunk(&o->log, 100, 0);
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x1000, .bytes = 4096, .api = API_ALLOC});
	struct {
		struct vt_event ev;
		uint8_t pad[8];
	} rec = {.ev = {.addr = 0x2000, .bytes = 4096}};
	lb_raw(&o->log, VT_REC_ALLOC, 65, &rec);
	second_thread(&o->log);
}

/* a record whose size runs past its chunk into the next one */
static void c_record_crosses_chunk(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	lb_chunk(&o->log, 100, 0);
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x1000, .bytes = 4096, .api = API_ALLOC});
	size_t at = o->log.pos;
	second_thread(&o->log);
	uint32_t word = VT_HDR(VT_REC_ALLOC, 65528);
	memcpy(o->log.buf + at, &word, 4);
}

/* the file ends in the middle of a record (copied while being written) */
static void c_record_crosses_file_end(struct out *o)
{
	good_log(&o->log, PID);
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x9000, .bytes = 4096, .api = API_ALLOC});
	size_t end = o->log.pos - 20;
	save_as(o, &o->log, PID, end);
}

/* the file ends inside a chunk header */
static void c_file_ends_in_chunk_header(struct out *o)
{
	good_log(&o->log, PID);
	second_thread(&o->log);
	save_as(o, &o->log, PID, VT_HEADER_SIZE + CHUNK + 12);
}

static void c_mark_length_overflow(struct out *o)
{
	good_log(&o->log, PID);
	size_t at = lb_text(&o->log, VT_REC_MARK, "step 2");
	uint16_t len = 0xffff;
	memcpy(o->log.buf + at + offsetof(struct vt_mark_rec, text_len), &len, 2);
	second_thread(&o->log);
}

static void c_thread_name_length_overflow(struct out *o)
{
	good_log(&o->log, PID);
	size_t at = lb_text(&o->log, VT_REC_THREAD, "worker");
	uint32_t len = 0xffffffffu; /* fixed + len wraps in 32 bits */
	memcpy(o->log.buf + at + offsetof(struct vt_thread_rec, name_len), &len, 4);
	second_thread(&o->log);
}

static void c_stack_depth_overflow(struct out *o)
{
	good_log(&o->log, PID);
	size_t at = lb_stack(&o->log, 2, good_frames, 3);
	uint16_t depth = 0xffff;
	memcpy(o->log.buf + at + offsetof(struct vt_stack_rec, depth), &depth, 2);
	second_thread(&o->log);
}

static void c_module_build_id_overflow(struct out *o)
{
	good_log(&o->log, PID);
	struct {
		struct vt_module_rec m;
		char path[16];
	} rec = {.m = {.build_id_len = 200, .path_len = 16, .hi = 0x1000}, .path = "/lib/libcuda.so"};
	lb_raw(&o->log, VT_REC_MODULE, sizeof rec, &rec);
	second_thread(&o->log);
}

static void c_unknown_record_type(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	lb_chunk(&o->log, 100, 0);
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x1000, .bytes = 4096, .api = API_ALLOC});
	uint8_t future[48] = {0};
	lb_raw(&o->log, 200, sizeof future, future);
	lb_raw(&o->log, 15, sizeof future, future); /* a gap in the known range */
	lb_event(&o->log, VT_REC_FREE, (struct vt_event){.addr = 0x1000, .api = API_FREE});
}

static void c_bad_chunk_magic(struct out *o)
{
	good_log(&o->log, PID);
	size_t at = o->log.size;
	second_thread(&o->log);
	memcpy(o->log.buf + at, "JUNK", 4);
}

/* garbage api/kind/device numbers the name tables do not know */
static void c_unknown_enum_values(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	lb_chunk(&o->log, 100, 0);
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x1000, .bytes = 4096, .api = 250,
	                                                  .rt_api = 250, .kind = 250, .device = 77});
	lb_event(&o->log, VT_REC_COPY, (struct vt_event){.addr = 0x1000, .bytes = 16, .api = 0, .kind = 99});
	struct vt_meminfo_rec m = {.device = 200, .reason = 99, .seq = o->log.seq++};
	lb_raw(&o->log, VT_REC_MEMINFO, sizeof m, &m);
	lb_header(&o->log)->state = VT_STATE_WORD(77, -5);
}

static void c_stack_id_nowhere(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	lb_chunk(&o->log, 100, 0);
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.stack_id = 999, .addr = 0x1000,
	                                                  .bytes = 4096, .api = API_ALLOC});
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.stack_id = 0xffffffffu, .addr = 0x3000,
	                                                  .bytes = 4096, .api = API_ALLOC});
}

static void c_stack_id_zero_record(struct out *o)
{
	good_log(&o->log, PID);
	lb_stack(&o->log, 0, good_frames, 3);
	second_thread(&o->log);
}

/* compact frees (VT_REC_FREE_SHORT): one well-formed, one too short */
static void c_free_short(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	lb_chunk(&o->log, 100, 0);
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x1000, .bytes = 4096, .api = API_ALLOC});
	struct vt_free_event f = {.seq = o->log.seq++, .t_ns = (o->log.t_ns += 1000), .addr = 0x1000,
	                          .api = API_FREE};
	lb_raw(&o->log, VT_REC_FREE_SHORT, sizeof f, &f);
	lb_raw(&o->log, VT_REC_FREE_SHORT, 24, &f);
	second_thread(&o->log);
}

/* packed events (VT_REC_PACKED): one well-formed free, then one whose
 * varints never end, one naming no event type, one with non-zero padding;
 * the chunk's bases are huge, so the good one's seq and time wrap */
static void c_packed(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	lb_chunk(&o->log, 100, 0);
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x1000, .bytes = 4096, .api = API_ALLOC});
	struct vt_chunk_header *ch = (struct vt_chunk_header *)(void *)(o->log.buf + o->log.chunk_off);
	ch->first_t_ns = UINT64_MAX - 10;
	uint8_t rec[VT_PACKED_MAX_SIZE] = {0};
	struct vt_event f = {.seq = o->log.seq++, .t_ns = 5, .addr = 0x1000, .api = API_FREE};
	uint32_t size = vt_packed_encode(rec, VT_REC_FREE, &f, ch->first_seq, 0);
	lb_raw(&o->log, VT_REC_PACKED, size, rec);
	uint8_t endless[32];
	memset(endless, 0xff, sizeof endless);
	endless[4] = VT_REC_ALLOC;
	endless[6] = 0;
	lb_raw(&o->log, VT_REC_PACKED, sizeof endless, endless);
	uint8_t no_type[16] = {[4] = 99};
	lb_raw(&o->log, VT_REC_PACKED, sizeof no_type, no_type);
	rec[size - 1] = 7;
	lb_raw(&o->log, VT_REC_PACKED, size, rec);
	second_thread(&o->log);
}

static void c_double_free(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	lb_chunk(&o->log, 100, 0);
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x1000, .bytes = 4096, .api = API_ALLOC});
	lb_event(&o->log, VT_REC_FREE, (struct vt_event){.addr = 0x1000, .api = API_FREE});
	lb_event(&o->log, VT_REC_FREE, (struct vt_event){.addr = 0x1000, .api = API_FREE});
	lb_event(&o->log, VT_REC_FREE, (struct vt_event){.addr = 0xdead0000, .api = API_FREE});
}

static void c_copy_into_unknown(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	lb_chunk(&o->log, 100, 0);
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x100000, .bytes = 4096, .api = API_ALLOC});
	lb_event(&o->log, VT_REC_COPY, (struct vt_event){.addr = 0xbad00000, .aux = 0x5000, .bytes = 1 << 20,
	                                                 .api = API_HTOD, .kind = VT_COPY_HTOD});
	lb_event(&o->log, VT_REC_COPY, (struct vt_event){.addr = 0x100000, .aux = 0x5000, .bytes = 1 << 20,
	                                                 .api = API_HTOD, .kind = VT_COPY_HTOD});
}

static void c_time_backwards(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	lb_chunk(&o->log, 100, 0);
	uint64_t t[] = {5000000, 9000000, 1000, 3000000};
	for (unsigned i = 0; i < 4; i++)
		lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.t_ns = t[i], .addr = 0x1000 + 0x1000 * i,
		                                                  .bytes = 4096, .api = API_ALLOC});
	lb_header(&o->log)->clock_base_ns = UINT64_MAX - 10; /* t_ns + offset wraps */
}

/* two threads whose events interleave by seq, each thread's times rising
 * while the merged order's go up and down (each thread's clock anchors on
 * its own reading): consistent, nothing to warn about */
static void c_threads_interleaved(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	for (uint32_t t = 0; t < 2; t++) {
		lb_chunk(&o->log, 100 + t, 0);
		for (uint64_t i = 0; i < 3; i++)
			lb_event(&o->log, VT_REC_ALLOC,
			         (struct vt_event){.seq = 1 + 2 * i + t,
			                           .t_ns = 10000 * (i + 1) - 5000 * t,
			                           .addr = 0x100000ull * (1 + 2 * i + t),
			                           .bytes = 4096,
			                           .api = API_ALLOC});
	}
}

/* a second log whose clock base is far before the first: start wraps? */
static void c_clock_base_far_apart(struct out *o)
{
	good_log(&o->log, PID);
	struct lb other;
	good_log(&other, PID + 1);
	lb_header(&other)->clock_base_ns = 0;
	lb_header(&o->log)->clock_base_ns = UINT64_MAX;
	save_as(o, &other, PID + 1, other.size);
	lb_free(&other);
	o->saved = 0; /* the main log is still to be saved */
}

static void c_enormous_counts(struct out *o)
{
	good_log(&o->log, PID);
	struct vt_file_header *h = lb_header(&o->log);
	h->chunks_claimed = UINT64_MAX;
	h->events_dropped = UINT64_MAX;
	h->exe_len = UINT32_MAX;
	h->cmdline_len = UINT32_MAX;
	h->stack_depth = UINT32_MAX;
	h->max_size = UINT64_MAX;
	memset(h->hostname, 'A', sizeof h->hostname); /* no NUL */
	memset(h->cmdline, 'c', sizeof h->cmdline);   /* no NUL */
	for (unsigned i = 0; i < 4; i++)
		lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x10000000ull * (i + 1),
		                                                  .bytes = UINT64_MAX - i, .api = API_ALLOC});
	lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.seq = UINT64_MAX, .t_ns = UINT64_MAX,
	                                                  .addr = UINT64_MAX, .bytes = 1, .api = API_ALLOC});
}

/* 1000 threads with one chunk each: the merge handles many streams */
static void c_many_threads(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	for (uint32_t t = 0; t < 1000; t++) {
		lb_chunk(&o->log, 1000 + t, 0);
		lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x100000ull * (t + 1),
		                                                  .bytes = 4096, .api = API_ALLOC});
	}
}

/* every thread claims the same seq numbers, and a thread's seqs go down */
static void c_seq_disorder(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	for (uint32_t t = 0; t < 3; t++) {
		lb_chunk(&o->log, 100 + t, 0);
		for (uint64_t s = 5; s > 0; s--)
			lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.seq = s, .addr = 0x1000 * s,
			                                                  .bytes = 4096, .api = API_ALLOC});
	}
}

/* one tid's chunks out of order, a repeated thread_seq, a reused tid */
static void c_chunk_chain_disorder(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	uint64_t order[] = {2, 0, 1, 1, 0};
	for (unsigned i = 0; i < 5; i++) {
		lb_chunk(&o->log, 100, order[i]);
		lb_event(&o->log, VT_REC_ALLOC, (struct vt_event){.addr = 0x1000 * (i + 1), .bytes = 4096,
		                                                  .api = API_ALLOC});
	}
}

/* a 1 TiB sparse file (64 GiB where the file system refuses): holes are
 * skipped, never read or indexed */
static void c_sparse_huge(struct out *o)
{
	good_log(&o->log, PID);
	save_as(o, &o->log, PID, o->log.size);
	char *p = path_in(o->dir, "vramtrace.4242.0.log");
	if (truncate(p, (off_t)1 << 40) < 0 && truncate(p, (off_t)1 << 36) < 0) {
		perror(p);
		exit(1);
	}
	free(p);
}

/* names from the job that try to inject terminal escapes or break lines */
static void c_escape_injection(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	struct vt_file_header *h = lb_header(&o->log);
	static const char exe[] = "/tmp/\x1b]0;pwned\x07\x1b[2J\nfake line\xff\xfe";
	memcpy(h->exe, exe, sizeof exe - 1);
	h->exe_len = sizeof exe - 1;
	lb_chunk(&o->log, 100, 0);
	lb_text(&o->log, VT_REC_THREAD, "\x1b[31mred\x1b[0m\r\nalloc pid=1");
	lb_text(&o->log, VT_REC_MARK, "step \"1\"\\\x1b]8;;http://evil\x07");
	lb_text(&o->log, VT_REC_NOTE, "\xc0\xaf overlong \xed\xa0\x80 surrogate");
}

/* trace-directory entries named like logs that are not regular files */
static void c_fifo_named_like_log(struct out *o)
{
	good_log(&o->log, PID);
	char *p = path_in(o->dir, "vramtrace.1.0.log");
	if (mkfifo(p, 0600) < 0) {
		perror(p);
		exit(1);
	}
	free(p);
}

static void c_special_files_named_like_logs(struct out *o)
{
	good_log(&o->log, PID);
	char *d = path_in(o->dir, "vramtrace.2.0.log"), *z = path_in(o->dir, "vramtrace.3.0.log"),
	     *s = path_in(o->dir, "vramtrace.5.0.log");
	if (mkdir(d, 0700) < 0 || symlink("/dev/zero", z) < 0 || symlink("vramtrace.5.0.log", s) < 0) {
		perror(o->dir);
		exit(1);
	}
	free(d);
	free(z);
	free(s);
}

/* a good log and a bad one in the same trace: the good one is reported */
static void c_one_bad_log_of_two(struct out *o)
{
	good_log(&o->log, PID);
	struct lb other;
	good_log(&other, PID + 1);
	lb_header(&other)->version = 99;
	save_as(o, &other, PID + 1, other.size);
	lb_free(&other);
	o->saved = 0;
}

static void c_all_zero_file(struct out *o)
{
	lb_init(&o->log, PID, CHUNK);
	memset(o->log.buf, 0, o->log.size);
	lb_chunk(&o->log, 0, 0);
	memset(o->log.buf + VT_HEADER_SIZE, 0, CHUNK);
}

static void c_random_garbage(struct out *o)
{
	good_log(&o->log, PID);
	uint32_t x = 12345;
	for (size_t i = VT_HEADER_SIZE + 64; i < o->log.size; i++) {
		x = x * 1103515245u + 12345u;
		o->log.buf[i] = (uint8_t)(x >> 16);
	}
}

/* a module record naming a real system file without debug information
 * (/bin/true): the symbolizer reads it, finds no compile unit */
static void c_module_without_debug_info(struct out *o)
{
	struct lb *b = &o->log;
	lb_init(b, PID, CHUNK);
	lb_chunk(b, 100, 0);
	struct {
		struct vt_module_rec m;
		char path[16];
	} mod = {.m = {.seq = b->seq++, .base = 0x7f0000000000ull, .lo = 0x7f0000000000ull,
	               .hi = 0x7f0000100000ull, .path_len = 9},
	         .path = "/bin/true"};
	lb_raw(b, VT_REC_MODULE, sizeof mod, &mod);
	static const uint64_t frames[] = {0x7f0000001000, 0x7f0000002000};
	lb_stack(b, 1, frames, 2);
	lb_event(b, VT_REC_ALLOC, (struct vt_event){.stack_id = 1, .addr = 0x1000, .bytes = 4096,
	                                            .api = API_ALLOC});
}

/* ---- symbol sidecars that lie ------------------------------------------------------ */

static const uint8_t sidecar_build_id[20] = {0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab,
                                             0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab,
                                             0xab, 0xab, 0xab, 0xab, 0xab, 0xab};

/* A log whose stack 1 has a frame in a module with a build id, and the
 * sidecar text beside it. */
static void sidecar_case(struct out *o, const char *text, size_t len)
{
	struct lb *b = &o->log;
	lb_init(b, PID, CHUNK);
	lb_chunk(b, 100, 0);
	struct {
		struct vt_module_rec m;
		char path[24];
	} mod = {.m = {.seq = b->seq++, .base = 0x7f0000000000ull, .lo = 0x7f0000000000ull,
	               .hi = 0x7f0000100000ull, .build_id_len = 20, .path_len = 20},
	         .path = "/usr/lib/libjob.so.1"};
	memcpy(mod.m.build_id, sidecar_build_id, 20);
	lb_raw(b, VT_REC_MODULE, sizeof mod, &mod);
	static const uint64_t frames[] = {0x7f0000001000, 0x7f0000002000};
	lb_stack(b, 1, frames, 2);
	lb_event(b, VT_REC_ALLOC, (struct vt_event){.stack_id = 1, .addr = 0x1000, .bytes = 4096,
	                                            .api = API_ALLOC});
	char *p = path_in(o->dir, "symbols.vtsym");
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
		perror(p);
		exit(1);
	}
	close(fd);
	free(p);
}
#define SIDECAR(o, lit) sidecar_case(o, lit, sizeof lit - 1)
#define BID "abababababababababababababababababababab"

static void c_sidecar_honest(struct out *o)
{
	SIDECAR(o, "vtsym\t1\nM\t1\t" BID "\t/usr/lib/libjob.so.1\nA\t1\t1000\t1\n"
	           "F\tupload_batch\t/src/job.c\t42\t0\nE\t1\n");
}

/* names for a module with another build id, and for a module number never declared */
static void c_sidecar_wrong_build_id(struct out *o)
{
	SIDECAR(o, "vtsym\t1\nM\t1\tcdcdcdcd\t/usr/lib/libjob.so.1\nA\t1\t1000\t1\n"
	           "F\tlying_function\t/src/lie.c\t1\t0\nA\t7\t2000\t1\nF\tghost\t/x.c\t2\t0\nE\t2\n");
}

/* counts that lie: k = 64 F lines promised, 1 given; E says a billion;
 * module number past the limit; an offset of 17 hex digits */
static void c_sidecar_lying_counts(struct out *o)
{
	SIDECAR(o, "vtsym\t1\nM\t1\t" BID "\t/usr/lib/libjob.so.1\nA\t1\t1000\t64\n"
	           "F\tonly_one\t/src/a.c\t1\t1\nM\t99999999\t\t/huge\n"
	           "A\t1\t12345678901234567\t1\nF\tf\t/b.c\t2\t0\nE\t1000000000\n");
}

static void c_sidecar_future_version(struct out *o)
{
	SIDECAR(o, "vtsym\t99\nM\t1\t" BID "\t/usr/lib/libjob.so.1\nE\t0\n");
}

static void c_sidecar_garbage(struct out *o)
{
	char junk[3000];
	uint32_t x = 777;
	for (size_t i = 0; i < sizeof junk; i++) {
		x = x * 1103515245u + 12345u;
		junk[i] = (char)(x >> 16);
	}
	memcpy(junk, "vtsym\t1\n", 8);
	sidecar_case(o, junk, sizeof junk);
}

/* cut short (no E line), with a line longer than the 64 KiB limit */
static void c_sidecar_cut_long_line(struct out *o)
{
	size_t n = 100 * 1024;
	char *text = malloc(n + 200);
	int k = snprintf(text, 200, "vtsym\t1\nM\t1\t" BID "\t/usr/lib/libjob.so.1\nA\t1\t1000\t1\nF\t");
	memset(text + k, 'x', n);
	memcpy(text + k + n, "\t/a.c\t1\t0\n", 11);
	sidecar_case(o, text, (size_t)k + n + 11);
	free(text);
}

/* function and file names that carry terminal escapes (sidecar \\xHH escapes
 * decode to any byte) */
static void c_sidecar_escape_names(struct out *o)
{
	SIDECAR(o, "vtsym\t1\nM\t1\t" BID "\t/usr/lib/libjob.so.1\nA\t1\t1000\t1\n"
	           "F\tf\\x1b]0;pwned\\x07\\x1b[2J\t/src/\\x1b[31mred.c\t7\t0\nE\t1\n");
}

/* a FIFO and a link to /dev/zero where the sidecar should be */
static void c_sidecar_fifo(struct out *o)
{
	sidecar_case(o, "", 0);
	char *p = path_in(o->dir, "symbols.vtsym");
	unlink(p);
	if (mkfifo(p, 0600) < 0) {
		perror(p);
		exit(1);
	}
	free(p);
}

static void c_sidecar_dev_zero(struct out *o)
{
	sidecar_case(o, "", 0);
	char *p = path_in(o->dir, "symbols.vtsym");
	unlink(p);
	if (symlink("/dev/zero", p) < 0) {
		perror(p);
		exit(1);
	}
	free(p);
}

struct hcase {
	const char *name;
	void (*build)(struct out *);
};

#define CASE(n) {#n, c_##n}
static const struct hcase cases[] = {
	CASE(good),
	CASE(every_kind),
	CASE(bad_magic),
	CASE(future_version),
	CASE(foreign_byte_order),
	CASE(empty_file),
	CASE(truncated_header),
	CASE(header_size_past_end),
	CASE(header_size_overflow),
	CASE(bad_chunk_size),
	CASE(huge_chunk_size),
	CASE(record_size_zero),
	CASE(record_size_unaligned),
	CASE(record_crosses_chunk),
	CASE(record_crosses_file_end),
	CASE(file_ends_in_chunk_header),
	CASE(mark_length_overflow),
	CASE(thread_name_length_overflow),
	CASE(stack_depth_overflow),
	CASE(module_build_id_overflow),
	CASE(unknown_record_type),
	CASE(bad_chunk_magic),
	CASE(unknown_enum_values),
	CASE(stack_id_nowhere),
	CASE(stack_id_zero_record),
	CASE(free_short),
	CASE(packed),
	CASE(double_free),
	CASE(copy_into_unknown),
	CASE(time_backwards),
	CASE(threads_interleaved),
	CASE(clock_base_far_apart),
	CASE(enormous_counts),
	CASE(many_threads),
	CASE(seq_disorder),
	CASE(chunk_chain_disorder),
	CASE(sparse_huge),
	CASE(escape_injection),
	CASE(fifo_named_like_log),
	CASE(special_files_named_like_logs),
	CASE(one_bad_log_of_two),
	CASE(all_zero_file),
	CASE(random_garbage),
	CASE(module_without_debug_info),
	CASE(sidecar_honest),
	CASE(sidecar_wrong_build_id),
	CASE(sidecar_lying_counts),
	CASE(sidecar_future_version),
	CASE(sidecar_garbage),
	CASE(sidecar_cut_long_line),
	CASE(sidecar_escape_names),
	CASE(sidecar_dev_zero),
	CASE(sidecar_fifo),
};
#define NCASES (sizeof cases / sizeof cases[0])

static void build_case(const struct hcase *c, const char *dir)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		perror(dir);
		exit(1);
	}
	struct out o = {.dir = dir};
	c->build(&o);
	if (!o.saved)
		save_as(&o, &o.log, PID, o.log.size);
	lb_free(&o.log);
}

/* Seeds: only the regular, bounded-size log of each case (no 1 TiB file). */
static void write_seed(const struct hcase *c, const char *outdir)
{
	if (!strcmp(c->name, "sparse_huge") || !strcmp(c->name, "many_threads"))
		return;
	char *tmp;
	if (asprintf(&tmp, "%s/.tmp-%s", outdir, c->name) < 0)
		abort();
	build_case(c, tmp);
	char *log = path_in(tmp, "vramtrace.4242.0.log"), *seed;
	if (asprintf(&seed, "%s/%s", outdir, c->name) < 0)
		abort();
	if (rename(log, seed) < 0)
		perror(seed);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	free(log);
	free(seed);
	free(tmp);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < NCASES; i++)
			puts(cases[i].name);
		return 0;
	}
	int seeds = argc == 3 && !strcmp(argv[1], "--seeds");
	if (argc != 2 && !seeds) {
		fprintf(stderr, "usage: hostile_gen OUTDIR | --list | --seeds OUTDIR\n");
		return 2;
	}
	const char *outdir = argv[argc - 1];
	if (mkdir(outdir, 0700) < 0 && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	for (size_t i = 0; i < NCASES; i++) {
		if (seeds) {
			write_seed(&cases[i], outdir);
			continue;
		}
		char *dir = path_in(outdir, cases[i].name);
		build_case(&cases[i], dir);
		free(dir);
	}
	return 0;
}
