/* A tiny in-memory log builder for hostile traces and fuzz seeds: it writes
 * the bytes of include/vramtrace/format.h directly (not through the shim's
 * writer) so a test can put ANY value in any field. Tests only: mallocs. */
#ifndef VT_LOG_BUILDER_H
#define VT_LOG_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "vramtrace/format.h"

struct lb {
	uint8_t *buf;
	size_t size;        /* bytes in the file so far */
	uint32_t chunk_size;
	size_t chunk_off;   /* current chunk (0: none yet) */
	size_t pos;         /* next record offset in the current chunk */
	uint64_t seq;       /* next event seq */
	uint64_t t_ns;      /* next event time */
};

/* A valid header (pid, chunk_size; exited with code 0). */
void lb_init(struct lb *b, int32_t pid, uint32_t chunk_size);
struct vt_file_header *lb_header(struct lb *b);
/* Start a new chunk owned by tid (thread_seq as given). */
void lb_chunk(struct lb *b, uint32_t tid, uint64_t thread_seq);
/* Append a record: hdr word VT_HDR(type, size), then body (size - 4 bytes
 * copied from body + 4 if body != NULL). Returns its file offset. */
size_t lb_raw(struct lb *b, uint32_t type, uint32_t size, const void *rec);
/* A 64-byte event with the next seq and time (seq/t_ns if ev has them 0). */
size_t lb_event(struct lb *b, uint32_t type, struct vt_event ev);
size_t lb_stack(struct lb *b, uint32_t id, const uint64_t *frames, uint16_t depth);
size_t lb_text(struct lb *b, uint32_t type, const char *text); /* mark/thread/note */
/* Write the file (mode 0600). Returns 0 or -1. */
int lb_save(const struct lb *b, const char *path);
/* Write only the first n bytes. */
int lb_save_prefix(const struct lb *b, const char *path, size_t n);
void lb_free(struct lb *b);

#endif
