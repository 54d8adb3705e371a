/* Reading one process log (contract: log_reader.h, format: format.h).
 *
 * Opening validates the header, then indexes every chunk once: its owner,
 * its place in the owner's chain, and how far its valid records reach
 * (data_end). Damage is warned about here, once, with the file offset.
 * vt_log_for_each then only walks [chunk start, data_end) ranges whose
 * record sizes were all checked, merging the threads' streams by seq.
 *
 * Nothing is allocated in proportion to a length read from the file: the
 * chunk index is bounded by the file size / chunk size.
 */
#define _GNU_SOURCE /* SEEK_DATA */
#include "log_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log_record_check.h"
#include "packed_decode.h"
#include "vramtrace/crc32c.h"
#include "vramtrace/event_packed.h"

#define VT_MIN_CHUNK 4096u
#define VT_MAX_CHUNK (1u << 30)
#define VT_MAX_HEADER_SIZE (1u << 20)

struct vt_chunk_ref {
	uint64_t off;      /* file offset of the chunk header */
	uint64_t data_end; /* file offset where its valid records end */
	uint64_t thread_seq;
	uint64_t first_seq, first_t_ns; /* bases of its packed events */
	uint32_t tid;
	uint32_t next;            /* the thread's next chunk, VT_NO_CHUNK: none (yet) */
	uint8_t clean;            /* every record passed its check at open: none is re-checked */
	uint8_t read_through;     /* a pass has left it: its damage was warned about */
	uint8_t verdict;          /* enum vt_chunk_verdict */
	uint8_t have_seal;        /* seal is the chunk's, its own check passed */
	uint32_t records, events; /* read so far */
	struct vt_chunk_seal seal;
};

#define VT_NO_CHUNK UINT32_MAX

/* One thread's chain of chunks, linked by vt_chunk_ref.next: a chain's
 * indices only grow (sorted at open, appended while following). */
struct vt_stream {
	uint32_t first;
	uint32_t last;
};

struct cursor;

struct vt_log {
	char *path;
	const uint8_t *map;
	uint64_t size;
	struct vt_file_header hdr; /* snapshot at open, lengths clamped */
	struct vt_chunk_ref *chunks;
	uint32_t nchunks;
	struct vt_stream *streams;
	uint32_t nstreams;
	unsigned warnings;
	struct vt_log_integrity integrity;
	uint64_t types_seen;         /* bit t: the index met a record of type t (t < 64) */
	vt_packed_decode_fn decode;  /* the packed decoder's form for this CPU */
	vt_packed_run_fn decode_run; /* its form for a run of records */
	uint32_t cap_chunks;
	/* following a live log (vt_log_follow): each stream's cursor, kept
	 * between calls; the first chunk slot not known to be indexed, and
	 * the slots after it that are (sorted) */
	int following;
	struct cursor *follow;
	uint32_t nfollow;
	uint64_t first_gap;
	uint64_t *ahead;
	uint32_t nahead, cap_ahead;
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static void warn_damage(struct vt_log *log, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	fprintf(stderr, "vramtrace: %s: %s\n", log->path, what);
	log->warnings++;
}

static inline uint32_t load_word(const uint8_t *p)
{
	/* a live log: pairs with the writer's release store of the word */
	return __atomic_load_n((const uint32_t *)(const void *)p, __ATOMIC_ACQUIRE);
}

/* ---- header ---------------------------------------------------------------- */

static int check_header(const struct vt_file_header *h, uint64_t size, char *err, size_t errlen)
{
	if (memcmp(h->magic, VT_MAGIC, VT_MAGIC_LEN) != 0) {
		set_err(err, errlen, "not a vramtrace log (bad magic)");
		return -1;
	}
	if (h->byte_order != VT_BYTE_ORDER_MARK) {
		set_err(err, errlen,
		        h->byte_order == __builtin_bswap32(VT_BYTE_ORDER_MARK)
		            ? "log written with the other byte order; not supported"
		            : "bad byte-order mark 0x%08x",
		        h->byte_order);
		return -1;
	}
	if (h->version < VT_FORMAT_VERSION_OLDEST || h->version > VT_FORMAT_VERSION) {
		set_err(err, errlen, "format version %u not supported (this reader knows %u to %u)",
		        h->version, VT_FORMAT_VERSION_OLDEST, VT_FORMAT_VERSION);
		return -1;
	}
	if (h->header_size < sizeof *h || h->header_size > VT_MAX_HEADER_SIZE ||
	    h->header_size % 8) {
		set_err(err, errlen, "bad header size %u", h->header_size);
		return -1;
	}
	if (h->header_size > size) {
		set_err(err, errlen, "file cut short inside its header (%llu of %u bytes)",
		        (unsigned long long)size, h->header_size);
		return -1;
	}
	if (h->chunk_size < VT_MIN_CHUNK || h->chunk_size > VT_MAX_CHUNK || h->chunk_size % 4096) {
		set_err(err, errlen, "bad chunk size %u", h->chunk_size);
		return -1;
	}
	return 0;
}

static void snapshot_header(struct vt_log *log)
{
	struct vt_file_header *h = &log->hdr;
	memcpy(h, log->map, sizeof *h);
	h->state = __atomic_load_n(&((const struct vt_file_header *)(const void *)log->map)->state,
	                           __ATOMIC_ACQUIRE);
	if (h->exe_len > sizeof h->exe - 1)
		h->exe_len = sizeof h->exe - 1;
	h->exe[h->exe_len] = '\0';
	if (h->cmdline_len > sizeof h->cmdline)
		h->cmdline_len = sizeof h->cmdline;
	h->hostname[sizeof h->hostname - 1] = '\0';
	h->rank_role[sizeof h->rank_role - 1] = '\0';
	if (h->rank_source >= VT_RANK_SOURCE_COUNT || !h->rank_p1)
		h->rank_source = VT_RANK_NONE; /* a rank from a source this reader does not know */
}

/* ---- chunk index -------------------------------------------------------- */

/* The common record, an event of exactly its size, is valid by construction
 * (log_record_check.c's rule for it: a fixed part, no length field); the
 * per-type check is for the rest. */
static inline int plain_event(uint32_t type, uint32_t size)
{
	return size == sizeof(struct vt_event) && type >= VT_REC_ALLOC && type <= VT_REC_POOL_TRIM;
}

/* Drop the whole pages of [lo, hi) from this process: the mapping is a
 * shared file mapping, so the data stays in the page cache and a later touch
 * faults it back. A big trace then costs the analyzer the model's memory,
 * not the file's size too. */
static void release_span(const struct vt_log *log, uint64_t lo, uint64_t hi)
{
	static long page;
	if (!page)
		page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
	lo = (lo + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page;
	hi = hi / (uint64_t)page * (uint64_t)page;
	if (hi > lo)
		madvise((void *)(log->map + lo), hi - lo, MADV_DONTNEED);
}

static inline int is_event_type(uint32_t type)
{
	return type >= VT_REC_ALLOC && type <= VT_REC_PACKED;
}

/* Walk a chunk's records from pos up to nominal_end once: warn about
 * damage, count them into c, return where valid data ends. A zero word ends
 * the data (never written, or not yet: a followed chunk is walked again
 * from there); a cut file ends it too. */
static uint64_t scan_chunk(struct vt_log *log, struct vt_chunk_ref *c, uint64_t pos,
                           uint64_t nominal_end, uint64_t file_end)
{
	uint8_t clean = 1;
	uint32_t records = 0, events = 0, packed = 0;
	uint64_t types = 0; /* a local: the compiler keeps it in a register */
	const uint64_t lim = nominal_end < file_end ? nominal_end : file_end;
	while (pos + 4 <= lim) {
		/* nearly every record is a packed event whose fixed part is
		 * sound: a loop of its own takes a run of them, each with one
		 * test of all the checks below that it passes, counted once
		 * the run ends (it is delivered as its event, whose type is
		 * below 64) */
		for (;;) {
			uint32_t word = load_word(log->map + pos), size = VT_HDR_SIZE(word);
			if (VT_HDR_TYPE(word) != VT_REC_PACKED || size > lim - pos ||
			    vt_packed_header_problem(log->map + pos, size))
				break;
			types |= 1ull << log->map[pos + 4];
			/* the log comes from the page cache, cold: the
			 * hardware's prefetcher stops at each page's end, and a
			 * request half a page ahead kept the scan from waiting
			 * at every new page (10 M events: 0.47 -> 0.44 s) */
			__builtin_prefetch(log->map + pos + 2048);
			pos += size;
			packed++;
			if (pos + 4 > lim)
				break;
		}
		if (pos + 4 > lim)
			break;
		uint32_t word = load_word(log->map + pos); /* one the run did not take */
		if (word == 0)
			break;
		uint32_t size = VT_HDR_SIZE(word), type = VT_HDR_TYPE(word);
		if (size < 8 || size % 8 || pos + size > nominal_end) {
			warn_damage(log,
			            "damaged record at offset %llu (header 0x%08x: size %u); "
			            "skipping to next chunk",
			            (unsigned long long)pos, word, size);
			break;
		}
		if (pos + size > file_end)
			break; /* cut short mid-record: the process was killed or the file copied */
		const char *problem =
		    type == VT_REC_PACKED ? vt_packed_header_problem(log->map + pos, size) : NULL;
		if (!problem && !plain_event(type, size))
			problem = vt_record_problem(log->map + pos, type, size);
		if (problem)
			clean = 0;
		records++;
		events += !problem && is_event_type(type);
		if (problem && *problem) /* "": an unknown kind, skipped quietly */
			warn_damage(log, "invalid %s record at offset %llu (%s); skipped",
			            vt_record_check_name(type), (unsigned long long)pos, problem);
		if (type < 64)
			types |= 1ull << type;
		pos += size;
	}
	if (packed)
		types |= 1ull << VT_REC_PACKED;
	log->types_seen |= types;
	c->clean &= clean;
	c->records += records + packed;
	c->events += events + packed;
	return pos;
}

/* ---- seals ---------------------------------------------------------------- */

/* The seal in the chunk's tail, if it is one whose own check passes. */
static int read_seal(const struct vt_log *log, const uint8_t *chunk, struct vt_chunk_seal *seal)
{
	memcpy(seal, chunk + log->hdr.chunk_size - VT_SEAL_SIZE, sizeof *seal);
	uint32_t own = vt_crc32c(&seal->magic, offsetof(struct vt_chunk_seal, seal_crc) -
	                                           offsetof(struct vt_chunk_seal, magic));
	return seal->hdr == VT_HDR(VT_REC_SEAL, VT_SEAL_SIZE) && seal->magic == VT_SEAL_MAGIC &&
	       seal->seal_crc == own && seal->bytes >= sizeof(struct vt_chunk_header) &&
	       seal->bytes <= log->hdr.chunk_size - VT_SEAL_SIZE && seal->bytes % 8 == 0;
}

/* No seal was committed: its header word, stored last (with release, as
 * every record's), is still zero. The other words may hold part of a seal
 * whose writer was killed while it wrote them: unsealed, not damaged. */
static int seal_not_committed(const struct vt_log *log, const uint8_t *chunk)
{
	return load_word(chunk + log->hdr.chunk_size - VT_SEAL_SIZE) == 0;
}

/* Where a chunk's records may reach, and what its seal says before they
 * are read: a sealed chunk's records end where its seal says (its CRC
 * holds) or it is damaged; in a log whose writer seals, no record reaches
 * the tail. */
static uint64_t judge_seal(const struct vt_log *log, struct vt_chunk_ref *c, uint64_t file_end)
{
	uint64_t cs = log->hdr.chunk_size;
	const uint8_t *chunk = log->map + c->off;
	if (!log->integrity.seals)
		return c->off + cs;
	if (file_end < c->off + cs) {
		c->verdict = VT_CHUNK_CUT;
		return c->off + cs - VT_SEAL_SIZE;
	}
	c->have_seal = (uint8_t)read_seal(log, chunk, &c->seal);
	if (c->have_seal && vt_crc32c(chunk, c->seal.bytes) == c->seal.crc) {
		c->verdict = VT_CHUNK_SEALED_OK;
		return c->off + c->seal.bytes;
	}
	c->verdict =
	    c->have_seal || !seal_not_committed(log, chunk) ? VT_CHUNK_DAMAGED : VT_CHUNK_UNSEALED;
	return c->off + cs - VT_SEAL_SIZE;
}

/* After the records were read: a sealed chunk whose records do not end
 * where the seal says, or are not as many, is damaged too. Damage is
 * warned about once, with what it costs; the records read are kept (see
 * docs/design/log-format.md: one flipped bit costs one record, dropping
 * the chunk would cost thousands). */
static void count_verdict(struct vt_log *log, struct vt_chunk_ref *c)
{
	struct vt_log_integrity *in = &log->integrity;
	if (c->verdict == VT_CHUNK_SEALED_OK &&
	    (c->data_end != c->off + c->seal.bytes || c->records != c->seal.records))
		c->verdict = VT_CHUNK_DAMAGED;
	switch (c->verdict) {
	case VT_CHUNK_SEALED_OK:
		in->sealed_ok++;
		return;
	case VT_CHUNK_UNSEALED:
		in->unsealed++;
		return;
	case VT_CHUNK_CUT:
		in->cut++;
		return;
	default:
		break;
	}
	in->damaged++;
	in->damaged_events += c->events;
	uint64_t lost =
	    c->have_seal && c->seal.records > c->records ? c->seal.records - c->records : 0;
	in->damaged_lost += lost;
	char held[64] = "";
	if (c->have_seal)
		snprintf(held, sizeof held, " of the %u its seal counts", c->seal.records);
	warn_damage(log,
	            "chunk %llu at offset %llu (thread %u) fails its seal check%s; %u records%s "
	            "read and kept (%u events), which may be wrong",
	            (unsigned long long)((c->off - log->hdr.header_size) / log->hdr.chunk_size),
	            (unsigned long long)c->off, c->tid, c->have_seal ? "" : " (seal damaged)",
	            c->records, held, c->events);
}

static int chunk_order(const void *a, const void *b)
{
	const struct vt_chunk_ref *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Group chunks into per-thread chains. A thread's chunks are claimed in
 * increasing file order, so within one tid a chain is a run of increasing
 * thread_seq; a restart (the kernel reused the tid) begins a new chain. */
static int build_streams(struct vt_log *log)
{
	if (log->nchunks > 1)
		qsort(log->chunks, log->nchunks, sizeof *log->chunks, chunk_order);
	log->streams = calloc(log->nchunks ? log->nchunks : 1, sizeof *log->streams);
	if (!log->streams)
		return -1;
	for (uint32_t i = 0; i < log->nchunks; i++) {
		const struct vt_chunk_ref *c = &log->chunks[i];
		int same = i > 0 && c->tid == c[-1].tid && c->thread_seq > c[-1].thread_seq;
		if (same)
			log->chunks[i - 1].next = i;
		else
			log->streams[log->nstreams++] = (struct vt_stream){i, i};
		log->streams[log->nstreams - 1].last = i;
	}
	return 0;
}

static struct vt_chunk_ref *add_chunk(struct vt_log *log)
{
	if (log->nchunks == log->cap_chunks) {
		uint32_t grown = log->cap_chunks ? 2 * log->cap_chunks : 64;
		struct vt_chunk_ref *v = realloc(log->chunks, (size_t)grown * sizeof *v);
		if (!v)
			return NULL;
		log->chunks = v;
		log->cap_chunks = grown;
	}
	return &log->chunks[log->nchunks++];
}

/* A chunk skipped whole (its header is damaged): what its seal, if it is
 * readable, says was lost. */
static void count_skipped_chunk(struct vt_log *log, uint64_t off)
{
	struct vt_chunk_seal seal;
	log->integrity.damaged++;
	if (log->integrity.seals && off + log->hdr.chunk_size <= log->size &&
	    read_seal(log, log->map + off, &seal))
		log->integrity.damaged_lost += seal.records;
}

/* The header's count of chunks handed out against the chunks the file
 * holds: fewer in the file is a log cut short (a copy, a full disk
 * elsewhere). Not for a log marked truncated: its last claims failed by
 * design. The file's size now, not at open: a live log grows. */
static void count_missing_chunks(struct vt_log *log, int fd)
{
	struct vt_log_integrity *in = &log->integrity;
	uint64_t cs = log->hdr.chunk_size, start = log->hdr.header_size, size = log->size;
	struct stat st;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > size)
		size = (uint64_t)st.st_size;
	in->seals = (log->hdr.flags & VT_FLAG_SEALS) != 0;
	/* a sealing writer also counts the chunks it gave file space: one
	 * claimed by a thread killed before that was never written */
	in->chunks_claimed = in->seals ? log->hdr.chunks_ready : log->hdr.chunks_claimed;
	in->chunks_in_file = size > start ? (size - start + cs - 1) / cs : 0;
	if (in->chunks_claimed <= in->chunks_in_file || (log->hdr.flags & VT_FLAG_TRUNCATED))
		return;
	in->chunks_missing = in->chunks_claimed - in->chunks_in_file;
	warn_damage(log,
	            "cut short: the header counts %llu chunks, the file holds %llu (%llu missing, "
	            "their records lost)",
	            (unsigned long long)in->chunks_claimed, (unsigned long long)in->chunks_in_file,
	            (unsigned long long)in->chunks_missing);
}

/* Index the chunks that hold data. Holes (a sparse file, or claimed chunks
 * the file system keeps unwritten) read as zero, i.e. unused: SEEK_DATA
 * skips them, so a huge sparse file costs neither time nor memory. The index
 * grows with the chunks actually found, never with a size the file claims. */
static int index_chunks(struct vt_log *log, int fd)
{
	uint64_t cs = log->hdr.chunk_size, start = log->hdr.header_size;
	log->first_gap = UINT64_MAX;
	count_missing_chunks(log, fd);
	/* The writer reserves whole chunks (posix_fallocate), so a log, live or
	 * finished, always ends on a chunk boundary: anything else was cut short
	 * (a partial copy, a truncation). Say so once; what precedes is intact. */
	uint64_t tail = log->size > start ? (log->size - start) % cs : 0;
	if (tail)
		warn_damage(log,
		            "cut short at offset %llu (the file ends inside the chunk at offset "
		            "%llu); records before the cut are intact",
		            (unsigned long long)log->size, (unsigned long long)(log->size - tail));
	for (uint64_t off = start; off + sizeof(struct vt_chunk_header) <= log->size; off += cs) {
		off_t data = lseek(fd, (off_t)off, SEEK_DATA);
		if (data < 0 && errno == ENXIO) {
			if (log->first_gap == UINT64_MAX)
				log->first_gap = off;
			break; /* only holes from here on */
		}
		if (data > (off_t)off) {
			if (log->first_gap == UINT64_MAX)
				log->first_gap = off;
			off = start + ((uint64_t)data - start) / cs * cs;
			if (off + sizeof(struct vt_chunk_header) > log->size)
				break; /* cut inside a chunk header */
		}
		uint32_t magic = load_word(log->map + off);
		if (magic == 0) {
			if (log->first_gap == UINT64_MAX)
				log->first_gap = off;
			continue; /* claimed but never written, or never claimed */
		}
		if (magic != VT_CHUNK_MAGIC) {
			warn_damage(
			    log,
			    "damaged chunk at offset %llu (bad chunk magic 0x%08x); skipping it",
			    (unsigned long long)off, magic);
			count_skipped_chunk(log, off);
			continue;
		}
		if (log->nchunks == UINT32_MAX)
			break;
		const struct vt_chunk_header *ch = (const void *)(log->map + off);
		struct vt_chunk_ref *c = add_chunk(log);
		if (!c)
			return -1;
		uint64_t file_end = off + cs < log->size ? off + cs : log->size;
		*c = (struct vt_chunk_ref){
		    .off = off,
		    .tid = ch->tid,
		    .thread_seq = ch->thread_seq,
		    .first_seq = ch->first_seq,
		    .first_t_ns = ch->first_t_ns,
		};
		c->clean = 1;
		c->next = VT_NO_CHUNK;
		uint64_t records_end = judge_seal(log, c, file_end);
		c->data_end =
		    scan_chunk(log, c, off + sizeof(struct vt_chunk_header), records_end, file_end);
		count_verdict(log, c);
		/* the index is made before any record is delivered: without this
		 * the whole file would be resident at once (RSS = the log size);
		 * to the chunk's end, as its seal's page was read too */
		release_span(log, off, file_end);
	}
	if (log->first_gap == UINT64_MAX)
		log->first_gap = log->size > start ? start + (log->size - start) / cs * cs : start;
	return build_streams(log);
}

/* ---- open / close ------------------------------------------------------- */

static const uint8_t *map_file(const char *path, int *fdp, uint64_t *size, char *err, size_t errlen)
{
	/* O_NONBLOCK: a FIFO named like a log must not block the open forever
	 * (fstat then refuses it); it changes nothing for a regular file. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	*fdp = fd;
	if (fd < 0) {
		set_err(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	struct stat st;
	const uint8_t *map = NULL;
	if (fstat(fd, &st) < 0) {
		set_err(err, errlen, "%s", strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		set_err(err, errlen, "not a regular file");
	} else if ((uint64_t)st.st_size < sizeof(struct vt_file_header)) {
		set_err(err, errlen, "too short to be a vramtrace log (%lld bytes)",
		        (long long)st.st_size);
	} else {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			set_err(err, errlen, "cannot map: %s", strerror(errno));
		else {
			map = p;
			*size = (uint64_t)st.st_size;
		}
	}
	return map;
}

struct vt_log *vt_log_open_file(const char *path, char *err, size_t errlen)
{
	uint64_t size = 0;
	int fd = -1;
	char why[256] = "";
	const uint8_t *map = map_file(path, &fd, &size, why, sizeof why);
	struct vt_log *log = map ? calloc(1, sizeof *log) : NULL;
	if (log && !(log->path = strdup(path))) {
		free(log);
		log = NULL;
	}
	if (!log) {
		if (map) {
			munmap((void *)map, size);
			snprintf(why, sizeof why, "out of memory");
		}
		set_err(err, errlen, "%s: %s", path, why);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	log->map = map;
	log->size = size;
	log->decode = vt_packed_decoder();
	log->decode_run = vt_packed_run_decoder(log->decode);
	int rc = check_header((const void *)map, size, why, sizeof why);
	if (rc == 0) {
		snapshot_header(log);
		if ((rc = index_chunks(log, fd)) < 0)
			snprintf(why, sizeof why, "out of memory");
	}
	close(fd);
	if (rc < 0) {
		set_err(err, errlen, "%s: %s", path, why);
		vt_log_close(log);
		return NULL;
	}
	return log;
}

void vt_log_close(struct vt_log *log)
{
	if (!log)
		return;
	if (log->map)
		munmap((void *)log->map, log->size);
	free(log->chunks);
	free(log->streams);
	free(log->follow);
	free(log->ahead);
	free(log->path);
	free(log);
}

const struct vt_file_header *vt_log_header(const struct vt_log *log)
{
	return &log->hdr;
}

const char *vt_log_path(const struct vt_log *log)
{
	return log->path;
}

unsigned vt_log_warnings(const struct vt_log *log)
{
	return log->warnings;
}

const struct vt_log_integrity *vt_log_integrity(const struct vt_log *log)
{
	return &log->integrity;
}

uint32_t vt_log_chunk_count(const struct vt_log *log)
{
	return log->nchunks;
}

int vt_log_chunk_info(const struct vt_log *log, uint32_t i, struct vt_chunk_info *out)
{
	if (i >= log->nchunks)
		return -1;
	const struct vt_chunk_ref *c = &log->chunks[i];
	*out = (struct vt_chunk_info){
	    .index = (c->off - log->hdr.header_size) / log->hdr.chunk_size,
	    .offset = c->off,
	    .tid = c->tid,
	    .verdict = c->verdict,
	    .records = c->records,
	    .events = c->events,
	    .have_seal = c->have_seal,
	    .seal = c->seal,
	};
	return 0;
}

int vt_log_may_hold(const struct vt_log *log, uint32_t type)
{
	return type >= 64 || (log->types_seen >> type & 1);
}

uint32_t vt_log_stored_size(const struct vt_log *log, const struct vt_record_view *rec)
{
	if (rec->offset + 4 > log->size)
		return rec->size;
	return VT_HDR_SIZE(load_word(log->map + rec->offset));
}

/* ---- merged iteration ----------------------------------------------------- */

/* Where a stream stands: the next record to deliver (ci, pos), and the next
 * record that carries a seq (kci, kpos, key) — the heap orders by key. */
struct cursor {
	uint32_t ci; /* its chain goes on at chunks[ci].next */
	uint64_t pos;
	uint32_t kci;
	uint64_t kpos;
	uint64_t key;        /* UINT64_MAX: no keyed record left */
	struct vt_event kev; /* the keyed record expanded, when it is packed */
};

/* Where chunk ci's records begin. */
static inline uint64_t records_start(const struct vt_log *log, uint32_t ci)
{
	return log->chunks[ci].off + sizeof(struct vt_chunk_header);
}

/* Did the open-time scan find the record at p unknown or invalid? It was
 * warned about then; every pass skips it. */
static inline int skipped_at_open(const struct vt_chunk_ref *c, const uint8_t *p, uint32_t type,
                                  uint32_t size)
{
	return !c->clean && !plain_event(type, size) && vt_record_problem(p, type, size) != NULL;
}

/* Move (ci, pos) onto the next record worth delivering; NULL at stream end. */
static const uint8_t *stream_peek(const struct vt_log *log, uint32_t *ci, uint64_t *pos)
{
	for (;;) {
		const struct vt_chunk_ref *c = &log->chunks[*ci];
		while (*pos < c->data_end) {
			const uint8_t *p = log->map + *pos;
			uint32_t word = load_word(p);
			uint32_t size = VT_HDR_SIZE(word), type = VT_HDR_TYPE(word);
			if (!skipped_at_open(c, p, type, size))
				return p;
			*pos += size;
		}
		if (c->next == VT_NO_CHUNK)
			return NULL;
		*ci = c->next;
		*pos = records_start(log, *ci);
	}
}

/* The one place that knows the packed event: its vt_event, relative to the
 * bases of the chunk holding it. The open-time scan checked only its fixed
 * part; its fields are checked here, by the decoding that has to happen
 * anyway (a 10-million-event trace then decodes each record once, not
 * twice). One that does not decode is skipped, with a warning the first
 * time a pass reads its chunk. 0: decoded. Inlined into its two callers:
 * as a call it cost 23 instructions a record (a 30th of a streaming replay).
 * The chunk, the decoder's form and the record's place and size are the
 * caller's: a chunk's loop fetches the first two once. */
static inline __attribute__((always_inline)) int
decode_packed(struct vt_log *log, const struct vt_chunk_ref *c, vt_packed_decode_fn decode,
              const uint8_t *p, uint64_t off, uint32_t size, struct vt_event *ev)
{
	/* the portable form inlined here: called, it costs 13 more
	 * instructions a record than inline, a twentieth of the decoding */
	const char *problem =
	    decode == vt_packed_decode_portable
	        ? vt_packed_decode(p, size, log->size - off, c->first_seq, c->first_t_ns, ev)
	        : decode(p, size, log->size - off, c->first_seq, c->first_t_ns, ev);
	if (!problem)
		return 0;
	if (!c->read_through)
		warn_damage(log, "invalid %s record at offset %llu (%s); skipped",
		            vt_record_check_name(VT_REC_PACKED), (unsigned long long)off, problem);
	return -1;
}

static inline __attribute__((always_inline)) int
expand_packed(struct vt_log *log, uint32_t ci, const uint8_t *p, struct vt_event *ev)
{
	return decode_packed(log, &log->chunks[ci], log->decode, p, (uint64_t)(p - log->map),
	                     VT_HDR_SIZE(load_word(p)), ev);
}

/* Move the cursor's key onto the next record that carries a seq
 * (vt_record_has_seq) and decodes. A packed record is expanded into kev
 * here, once, and delivered from it. */
static void find_key(struct vt_log *log, struct cursor *c)
{
	uint32_t ci = c->ci;
	uint64_t pos = c->pos;
	const uint8_t *p;
	while ((p = stream_peek(log, &ci, &pos)) != NULL) {
		uint32_t type = VT_HDR_TYPE(load_word(p));
		int keyed = type == VT_REC_PACKED ? expand_packed(log, ci, p, &c->kev) == 0
		                                  : vt_record_has_seq(type);
		if (keyed) {
			c->kci = ci;
			c->kpos = pos;
			if (type == VT_REC_PACKED)
				c->key = c->kev.seq;
			else
				memcpy(&c->key, p + 8, sizeof c->key);
			return;
		}
		pos += VT_HDR_SIZE(load_word(p));
	}
	c->kci = VT_NO_CHUNK;
	c->kpos = 0;
	c->key = UINT64_MAX;
}

/* The one place that knows the compact free: rebuild the VT_REC_FREE event
 * it stands for (bytes, aux and stream were 0, see format.h). */
static void expand_free_short(const uint8_t *p, struct vt_event *ev)
{
	struct vt_free_event f;
	memcpy(&f, p, sizeof f);
	*ev = (struct vt_event){
	    .hdr = VT_HDR(VT_REC_FREE, sizeof *ev),
	    .stack_id = f.stack_id,
	    .seq = f.seq,
	    .t_ns = f.t_ns,
	    .addr = f.addr,
	    .api = f.api,
	    .rt_api = f.rt_api,
	    .device = f.device,
	    .kind = f.kind,
	    .result = f.result,
	};
}

/* Chunks [from, to) were delivered: drop their pages from this process
 * (see release_span). */
static void release_chunks(struct vt_log *log, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to; i++) {
		/* to the chunk's end: the page its data ends in, and its seal's */
		uint64_t end = log->chunks[i].off + log->hdr.chunk_size;
		release_span(log, log->chunks[i].off, end < log->size ? end : log->size);
		log->chunks[i].read_through = 1;
	}
}

/* Where, in the cursor's chunk, find_key stopped: records before it were
 * looked at (a packed one there did not decode: it was warned about and is
 * skipped, not decoded again), the one at it is expanded in kev, the ones
 * after it are new. */
static uint64_t key_pos_in_chunk(const struct cursor *c)
{
	if (c->ci < c->kci) /* the key lies in a later chunk, or none is left */
		return UINT64_MAX;
	return c->ci == c->kci ? c->kpos : 0;
}

/* Events decoded by one call of the run decoder: a run of them in 2 KiB of
 * stack, read back while still in the cache. */
#define RUN_MAX 32u

/* Where a pass delivers: every record to fn, or, where run is set, the
 * runs of packed events to run in one call each. */
struct sink {
	vt_record_fn fn;
	vt_run_fn run;
	void *ctx;
};

/* Deliver the run of packed records at *pos in chunk ch (drain_chunk says
 * when there is one), moving *pos and the cursor past them. None when the
 * record at *pos is not one for a run. Returns the sink's non-zero answer,
 * or 0. */
static int deliver_run(struct vt_log *log, struct cursor *c, const struct vt_chunk_ref *ch,
                       uint64_t *pos, const struct sink *to)
{
	struct vt_event ev[RUN_MAX];
	const uint8_t *first = log->map + *pos, *next = first;
	uint32_t n = log->decode_run(&next, log->map + ch->data_end, log->map + log->size,
	                             ch->first_seq, ch->first_t_ns, ev, RUN_MAX);
	uint64_t at = *pos;
	if (to->run) {
		*pos = c->pos = at + (uint64_t)(next - first);
		struct vt_event_run run = {
		    .ev = ev, .rec = first, .offset = at, .n = n, .tid = ch->tid};
		return n ? to->run(&run, to->ctx) : 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct vt_record_view v = {
		    .type = VT_HDR_TYPE(ev[i].hdr),
		    .size = sizeof ev[i],
		    .data = &ev[i],
		    .tid = ch->tid,
		    .offset = at,
		};
		at += VT_HDR_SIZE(load_word(log->map + at));
		c->pos = at;
		int rc = to->fn(&v, to->ctx);
		if (rc) {
			*pos = at;
			return rc;
		}
	}
	*pos = at;
	return 0;
}

uint64_t vt_event_run_offset(const struct vt_event_run *run, uint32_t k)
{
	uint64_t off = 0;
	for (uint32_t i = 0; i < k; i++)
		off += VT_HDR_SIZE(load_word(run->rec + off));
	return run->offset + off;
}

/* Deliver the records of the cursor's chunk from its position on, up to
 * and including the keyed record when to_key (*stopped set then). Why a
 * loop per chunk: what a record needs of its chunk (bases, tid, clean) is
 * fetched once, and a replay spends a fifth of its instructions here.
 * Returns fn's non-zero answer, or 0. */
static int drain_chunk(struct vt_log *log, struct cursor *c, int to_key, const struct sink *to,
                       int *stopped)
{
	const struct vt_chunk_ref *ch = &log->chunks[c->ci];
	const uint64_t end = ch->data_end, key_pos = key_pos_in_chunk(c);
	const vt_packed_decode_fn decode = log->decode;
	uint64_t pos = c->pos;
	struct vt_event expanded;
	while (pos < end) {
		/* past the key, in a chunk whose every record passed the
		 * open-time checks: the packed records are new and sound in
		 * their fixed part, so a run of them is decoded in one call
		 * and delivered from there (the records it stops at take the
		 * way below, one at a time) */
		if (ch->clean && pos > key_pos) {
			uint64_t from = pos;
			int rc = deliver_run(log, c, ch, &pos, to);
			if (rc)
				return rc;
			if (pos != from)
				continue;
		}
		const uint8_t *p = log->map + pos;
		uint32_t word = load_word(p);
		struct vt_record_view v = {
		    .type = VT_HDR_TYPE(word),
		    .size = VT_HDR_SIZE(word),
		    .data = p,
		    .tid = ch->tid,
		    .offset = pos,
		};
		pos += v.size;
		if (skipped_at_open(ch, p, v.type, v.size))
			continue;
		if (v.type == VT_REC_PACKED) {
			if (v.offset < key_pos ||
			    (v.offset > key_pos &&
			     decode_packed(log, ch, decode, p, v.offset, v.size, &expanded) != 0))
				continue; /* did not decode: skipped */
			v.data = v.offset == key_pos ? &c->kev : &expanded;
			v.type = VT_HDR_TYPE(((const struct vt_event *)v.data)->hdr);
			v.size = sizeof expanded;
		} else if (v.type == VT_REC_FREE_SHORT) {
			expand_free_short(p, &expanded);
			v.type = VT_REC_FREE;
			v.size = sizeof expanded;
			v.data = &expanded;
		}
		c->pos = pos;
		int rc = to->fn(&v, to->ctx);
		if (rc)
			return rc;
		if (to_key && v.offset == key_pos) {
			*stopped = 1;
			return 0;
		}
	}
	c->pos = pos;
	return 0;
}

/* Deliver the stream's records, advancing past them: up to and including
 * its keyed record when to_key (another stream may come next), else to its
 * end (the last stream needs no keys). */
static int drain(struct vt_log *log, struct cursor *c, int to_key, const struct sink *to)
{
	for (;;) {
		int stopped = 0;
		int rc = drain_chunk(log, c, to_key, to, &stopped);
		if (rc || stopped)
			return rc;
		uint32_t next = log->chunks[c->ci].next;
		/* a followed log's last chunk may still grow: the cursor stays at
		 * its end, where the next vt_log_follow goes on */
		if (next == VT_NO_CHUNK && log->following)
			return 0;
		release_chunks(log, c->ci, c->ci + 1); /* the cursor only moves forward */
		if (next == VT_NO_CHUNK)
			return 0;
		c->ci = next;
		c->pos = records_start(log, c->ci);
	}
}

static inline int cur_less(const struct cursor *cur, uint32_t a, uint32_t b)
{
	return cur[a].key < cur[b].key || (cur[a].key == cur[b].key && a < b);
}

static void sift_down(uint32_t *heap, uint32_t n, const struct cursor *cur, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && cur_less(cur, heap[l], heap[m]))
			m = l;
		if (r < n && cur_less(cur, heap[r], heap[m]))
			m = r;
		if (m == i)
			return;
		uint32_t t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/* Streams [from, to) start reading at their beginning. */
static void start_cursors(const struct vt_log *log, struct cursor *cur, uint32_t from, uint32_t to)
{
	for (uint32_t s = from; s < to; s++)
		cur[s] = (struct cursor){.ci = log->streams[s].first,
		                         .pos = records_start(log, log->streams[s].first)};
}

/* Deliver every stream's records from its cursor on, merged by seq. */
static int merge_streams(struct vt_log *log, struct cursor *cur, uint32_t *heap,
                         const struct sink *to)
{
	uint32_t n = 0;
	for (uint32_t s = 0; s < log->nstreams; s++) {
		find_key(log, &cur[s]);
		heap[n++] = s;
	}
	for (uint32_t i = n / 2; i-- > 0;)
		sift_down(heap, n, cur, i);
	while (n > 0) {
		struct cursor *c = &cur[heap[0]];
		if (n == 1) /* one stream left (a single-threaded job: always): no merge */
			return drain(log, c, 0, to);
		int rc = drain(log, c, 1, to);
		if (rc)
			return rc;
		if (c->key == UINT64_MAX) {
			heap[0] = heap[--n]; /* stream exhausted */
		} else {
			find_key(log, c);
		}
		sift_down(heap, n, cur, 0);
	}
	return 0;
}

int vt_log_for_each(struct vt_log *log, vt_record_fn fn, void *ctx)
{
	return vt_log_for_each_run(log, fn, NULL, ctx);
}

int vt_log_for_each_run(struct vt_log *log, vt_record_fn fn, vt_run_fn run, void *ctx)
{
	const struct sink to = {fn, run, ctx};
	if (log->nstreams == 0)
		return 0;
	struct cursor *cur = malloc(log->nstreams * sizeof *cur);
	uint32_t *heap = malloc(log->nstreams * sizeof *heap);
	int rc = -1;
	if (cur && heap) {
		start_cursors(log, cur, 0, log->nstreams);
		rc = merge_streams(log, cur, heap, &to);
	}
	free(cur);
	free(heap);
	return rc;
}

/* ---- following a live log ------------------------------------------------ */

/* Map the file again when it grew (the writer adds chunks as threads claim
 * them); the old mapping goes. Offsets stay valid. 0, or -1 with the log
 * as it was. */
static int remap_grown(struct vt_log *log)
{
	int fd = open(log->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct stat st;
	int rc = fstat(fd, &st) == 0 ? 0 : -1;
	if (rc == 0 && (uint64_t)st.st_size > log->size) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			rc = -1;
		} else {
			munmap((void *)log->map, log->size);
			log->map = p;
			log->size = (uint64_t)st.st_size;
		}
	}
	close(fd);
	return rc;
}

/* Read further into a chain's last chunk, where its thread writes now. */
static void extend_chunk(struct vt_log *log, uint32_t ci)
{
	struct vt_chunk_ref *c = &log->chunks[ci];
	uint64_t cs = log->hdr.chunk_size;
	uint64_t file_end = c->off + cs < log->size ? c->off + cs : log->size;
	/* a sealing writer keeps records out of the seal's place; the seal
	 * itself is judged when the trace is opened whole, not while followed */
	uint64_t nominal_end = c->off + cs - (log->integrity.seals ? VT_SEAL_SIZE : 0);
	c->data_end = scan_chunk(log, c, c->data_end, nominal_end, file_end);
}

static int slot_ahead(const struct vt_log *log, uint64_t off)
{
	for (uint32_t i = 0; i < log->nahead; i++)
		if (log->ahead[i] == off)
			return 1;
	return 0;
}

/* A chunk found while following joins its thread's chain (after the
 * chain's last chunk has been read to its end: its thread is done with
 * it) or starts a new one. */
static int link_chunk(struct vt_log *log, uint32_t ci)
{
	const struct vt_chunk_ref *c = &log->chunks[ci];
	for (uint32_t s = 0; s < log->nstreams; s++) {
		struct vt_chunk_ref *last = &log->chunks[log->streams[s].last];
		if (last->tid == c->tid && last->thread_seq < c->thread_seq) {
			extend_chunk(log, log->streams[s].last);
			last->next = ci;
			log->streams[s].last = ci;
			return 0;
		}
	}
	struct vt_stream *v = realloc(log->streams, (log->nstreams + 1) * sizeof *v);
	if (!v)
		return -1;
	log->streams = v;
	log->streams[log->nstreams++] = (struct vt_stream){ci, ci};
	return 0;
}

/* Index the chunk at off, found while following. */
static int add_followed_chunk(struct vt_log *log, uint64_t off)
{
	const struct vt_chunk_header *ch = (const void *)(log->map + off);
	struct vt_chunk_ref *c = add_chunk(log);
	if (!c)
		return -1;
	*c = (struct vt_chunk_ref){.off = off,
	                           .tid = ch->tid,
	                           .next = VT_NO_CHUNK,
	                           .thread_seq = ch->thread_seq,
	                           .first_seq = ch->first_seq,
	                           .first_t_ns = ch->first_t_ns,
	                           .clean = 1,
	                           .data_end = off + sizeof(struct vt_chunk_header)};
	extend_chunk(log, log->nchunks - 1);
	return link_chunk(log, log->nchunks - 1);
}

/* Look at the slots from the first one not known to be indexed: a slot
 * claimed but not yet stamped reads zero now and is looked at again next
 * time (first_gap stays there); those indexed after it are remembered in
 * ahead, so none is indexed twice. */
static int discover_chunks(struct vt_log *log)
{
	uint64_t cs = log->hdr.chunk_size, gap = UINT64_MAX, off = log->first_gap;
	for (; off + sizeof(struct vt_chunk_header) <= log->size; off += cs) {
		if (slot_ahead(log, off))
			continue;
		uint32_t magic = load_word(log->map + off);
		if (magic == 0) {
			if (gap == UINT64_MAX)
				gap = off;
			continue;
		}
		if (magic != VT_CHUNK_MAGIC)
			warn_damage(
			    log,
			    "damaged chunk at offset %llu (bad chunk magic 0x%08x); skipping it",
			    (unsigned long long)off, magic);
		else if (add_followed_chunk(log, off) < 0)
			return -1;
		if (gap != UINT64_MAX) {
			if (log->nahead == log->cap_ahead) {
				uint32_t grown = log->cap_ahead ? 2 * log->cap_ahead : 16;
				uint64_t *v = realloc(log->ahead, grown * sizeof *v);
				if (!v)
					return -1;
				log->ahead = v;
				log->cap_ahead = grown;
			}
			log->ahead[log->nahead++] = off;
		}
	}
	log->first_gap = gap != UINT64_MAX ? gap : off;
	uint32_t kept = 0; /* the ones below the new gap are behind it now */
	for (uint32_t i = 0; i < log->nahead; i++)
		if (log->ahead[i] > log->first_gap)
			log->ahead[kept++] = log->ahead[i];
	log->nahead = kept;
	return 0;
}

/* Cursors for streams that appeared since the last call. */
static int grow_cursors(struct vt_log *log)
{
	if (log->nfollow == log->nstreams)
		return 0;
	struct cursor *v = realloc(log->follow, log->nstreams * sizeof *v);
	if (!v)
		return -1;
	log->follow = v;
	start_cursors(log, v, log->nfollow, log->nstreams);
	log->nfollow = log->nstreams;
	return 0;
}

int vt_log_follow(struct vt_log *log, vt_record_fn fn, void *ctx)
{
	if (!log->following) {
		log->following = 1;
		if (grow_cursors(log) < 0)
			return -1;
	} else if (remap_grown(log) < 0) {
		return -1;
	}
	snapshot_header(log);
	for (uint32_t s = 0; s < log->nstreams; s++)
		extend_chunk(log, log->streams[s].last);
	if (discover_chunks(log) < 0 || grow_cursors(log) < 0)
		return -1;
	if (log->nstreams == 0)
		return 0;
	uint32_t *heap = malloc(log->nstreams * sizeof *heap);
	if (!heap)
		return -1;
	const struct sink to = {fn, NULL, ctx};
	int rc = merge_streams(log, log->follow, heap, &to);
	free(heap);
	return rc;
}
