/* Reading logs (format: include/vramtrace/format.h) written by the shim.
 *
 * A log may be live (process running), cut short (process killed), damaged
 * or hostile. The reader never trusts a length it has not bounds-checked,
 * warns once per damaged spot (one line naming the file and offset) and
 * returns every valid record before and after it.
 */
#ifndef VT_LOG_READER_H
#define VT_LOG_READER_H

#include <stddef.h>
#include <stdint.h>

#include "vramtrace/format.h"

struct vt_log; /* one process log, mapped read-only */

/* A compact record is delivered expanded: a VT_REC_FREE_SHORT arrives as the
 * VT_REC_FREE struct vt_event it stands for (type VT_REC_FREE, size 64, data
 * pointing at a copy valid during the callback), so no consumer needs to know
 * the compact form exists. vt_log_stored_size() says what it took in the file. */
struct vt_record_view {
	uint32_t type;    /* enum vt_rec */
	uint32_t size;    /* bytes, incl. the header word; bounds-checked */
	const void *data; /* the record, starting at its header word */
	uint32_t tid;     /* owner thread (from the chunk header) */
	uint64_t offset;  /* file offset, for messages */
};

/* Open and validate a log file. On failure returns NULL and writes a one-line
 * reason into err (if errlen > 0). */
struct vt_log *vt_log_open_file(const char *path, char *err, size_t errlen);
void vt_log_close(struct vt_log *log);

const struct vt_file_header *vt_log_header(const struct vt_log *log);
const char *vt_log_path(const struct vt_log *log);

/* Number of damage warnings issued so far for this log. */
unsigned vt_log_warnings(const struct vt_log *log);

/* 0 when the log holds no record of this type as stored in the file (before
 * any expansion: a compact free is VT_REC_FREE_SHORT here), so a pass that
 * wants only that type can skip the log; 1 when it may (types >= 64 always). */
int vt_log_may_hold(const struct vt_log *log, uint32_t type);

/* What a chunk's seal (format.h, struct vt_chunk_seal) says of it. */
enum vt_chunk_verdict {
	VT_CHUNK_UNSEALED = 0, /* no seal: its thread or process died, or an older writer */
	VT_CHUNK_SEALED_OK,    /* the seal's count, length and CRC32C match */
	VT_CHUNK_DAMAGED,      /* sealed, but the check fails (or the seal itself is damaged) */
	VT_CHUNK_CUT,          /* the file ends inside it: its seal is gone */
};

struct vt_chunk_info {
	uint64_t index;  /* chunk number: (offset - header size) / chunk size */
	uint64_t offset; /* file offset of its header */
	uint32_t tid;
	uint32_t verdict; /* enum vt_chunk_verdict */
	uint32_t records; /* records read in it */
	uint32_t events;  /* of them, events (all kept, even when damaged) */
	int have_seal;    /* seal holds the seal as read (its own check passed) */
	struct vt_chunk_seal seal;
};

/* The log as a whole, against what its header claims. */
struct vt_log_integrity {
	int seals;               /* the writer seals chunks (VT_FLAG_SEALS) */
	uint64_t chunks_claimed; /* the header's count of chunks handed out */
	uint64_t chunks_in_file; /* chunks whose start the file holds */
	uint64_t chunks_missing; /* claimed beyond the file's end: cut short */
	uint32_t sealed_ok, unsealed, damaged, cut;
	uint64_t damaged_events; /* events read in damaged chunks (kept) */
	uint64_t damaged_lost;   /* records their seals count that could not be read */
};

const struct vt_log_integrity *vt_log_integrity(const struct vt_log *log);

/* The chunks that hold data, by thread, then in file order; -1 for i past
 * the last. */
uint32_t vt_log_chunk_count(const struct vt_log *log);
int vt_log_chunk_info(const struct vt_log *log, uint32_t i, struct vt_chunk_info *out);

/* Visit every valid record. Events are delivered in global seq order (the
 * per-thread chunk streams are merged); a metadata record is delivered before
 * the next event of its own thread, so a stack or module always precedes the
 * first event that uses it. Stop early by returning non-zero from fn (that
 * value is returned). */
typedef int (*vt_record_fn)(const struct vt_record_view *rec, void *ctx);
int vt_log_for_each(struct vt_log *log, vt_record_fn fn, void *ctx);

/* Packed events in a run, as vt_log_for_each_run delivers them: ev[i] is
 * a struct vt_event of its own type (VT_HDR_TYPE(ev[i].hdr)) and size, in
 * seq order after the records delivered before the run; valid during the
 * call. ev[0]'s record is at file offset offset, the others follow it. */
struct vt_event_run {
	const struct vt_event *ev;
	const uint8_t *rec; /* ev[0]'s record in the log's mapping */
	uint64_t offset;    /* its file offset */
	uint32_t n;         /* at least 1 */
	uint32_t tid;       /* their thread (from the chunk header) */
};
/* The file offset of ev[k]'s record (k < run->n). Why not an offset per
 * event in the run: walking the records' sizes for each was 2 % of a
 * replay, and a progress line asks once in thousands of records. */
uint64_t vt_event_run_offset(const struct vt_event_run *run, uint32_t k);
typedef int (*vt_run_fn)(const struct vt_event_run *run, void *ctx);

/* vt_log_for_each, with runs of the events (a few dozen at most) delivered
 * to run, one call a run, and the other records to fn one by one, all in
 * the order vt_log_for_each delivers them. Why: a replay whose every event
 * is a call, with its saved registers and the checks a record of any type
 * needs, spent a tenth of its instructions on that. A non-zero answer of
 * run stops the pass after the whole run. */
int vt_log_for_each_run(struct vt_log *log, vt_record_fn fn, vt_run_fn run, void *ctx);

/* Follow a log its process is still writing: each call delivers the
 * records written since the last one (the first: all so far), in seq order
 * among those, then returns. It reads the shared mapping only (never a
 * lock, never a write); it maps the file again when it grew, reads on in
 * every thread's current chunk and stops at a record whose header word is
 * still 0 (not yet written: the next call resumes there). The state it keeps
 * is a cursor per thread and the chunk index. Records a thread has taken a
 * seq for but not yet committed can arrive after a later seq of another
 * thread: the order is exact for what was written when the call read it.
 * Do not mix with vt_log_for_each on the same log. Returns fn's non-zero
 * answer, -1 when out of memory or the file vanished, else 0. */
int vt_log_follow(struct vt_log *log, vt_record_fn fn, void *ctx);

/* Bytes a delivered record takes in the log's file (rec->size, except for a
 * compact record delivered expanded). */
uint32_t vt_log_stored_size(const struct vt_log *log, const struct vt_record_view *rec);

#endif
