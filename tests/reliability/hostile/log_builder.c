/* See log_builder.h. */
#define _GNU_SOURCE
#include "log_builder.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void grow(struct lb *b, size_t need)
{
	if (need <= b->size)
		return;
	b->buf = realloc(b->buf, need);
	if (!b->buf) {
		perror("log_builder");
		abort();
	}
	memset(b->buf + b->size, 0, need - b->size);
	b->size = need;
}

void lb_init(struct lb *b, int32_t pid, uint32_t chunk_size)
{
	memset(b, 0, sizeof *b);
	b->chunk_size = chunk_size;
	b->seq = 1;
	b->t_ns = 1000;
	grow(b, VT_HEADER_SIZE);
	struct vt_file_header *h = lb_header(b);
	memcpy(h->magic, VT_MAGIC, VT_MAGIC_LEN);
	h->version = VT_FORMAT_VERSION;
	h->byte_order = VT_BYTE_ORDER_MARK;
	h->header_size = VT_HEADER_SIZE;
	h->chunk_size = chunk_size;
	h->pid = pid;
	h->ppid = 1;
	h->stack_depth = 64;
	h->clock_base_ns = 1000000000ull;
	h->realtime_base_ns = 1700000000000000000ull;
	h->state = VT_STATE_WORD(VT_STATE_EXITED, 0);
	strcpy(h->hostname, "hostile");
	static const char exe[] = "/usr/bin/hostile-job";
	memcpy(h->exe, exe, sizeof exe - 1);
	h->exe_len = sizeof exe - 1;
	static const char cmd[] = "hostile-job\0--epochs\0" "1";
	memcpy(h->cmdline, cmd, sizeof cmd);
	h->cmdline_len = sizeof cmd;
}

struct vt_file_header *lb_header(struct lb *b)
{
	return (struct vt_file_header *)(void *)b->buf;
}

void lb_chunk(struct lb *b, uint32_t tid, uint64_t thread_seq)
{
	size_t off = b->size;
	grow(b, off + b->chunk_size);
	struct vt_chunk_header ch = {.magic = VT_CHUNK_MAGIC, .tid = tid,
	                             .thread_seq = thread_seq, .first_seq = b->seq};
	memcpy(b->buf + off, &ch, sizeof ch);
	b->chunk_off = off;
	b->pos = off + sizeof ch;
	lb_header(b)->chunks_claimed++;
}

size_t lb_raw(struct lb *b, uint32_t type, uint32_t size, const void *rec)
{
	size_t off = b->pos;
	size_t span = size >= 4 ? size : 4;
	grow(b, off + span); /* a lying size may run past the chunk: grow the file */
	uint32_t word = VT_HDR(type, size);
	if (rec && size > 4)
		memcpy(b->buf + off + 4, (const uint8_t *)rec + 4, size - 4);
	memcpy(b->buf + off, &word, sizeof word);
	b->pos = off + (size >= 8 && size % 8 == 0 ? size : VT_ALIGN8(span));
	return off;
}

size_t lb_event(struct lb *b, uint32_t type, struct vt_event ev)
{
	if (!ev.seq)
		ev.seq = b->seq++;
	if (!ev.t_ns)
		ev.t_ns = (b->t_ns += 1000);
	return lb_raw(b, type, sizeof ev, &ev);
}

size_t lb_stack(struct lb *b, uint32_t id, const uint64_t *frames, uint16_t depth)
{
	uint32_t size = (uint32_t)(sizeof(struct vt_stack_rec) + 8u * depth);
	uint8_t *rec = calloc(1, size);
	struct vt_stack_rec s = {.stack_id = id, .depth = depth, .hash = id * 2654435761u};
	memcpy(rec, &s, sizeof s);
	if (frames)
		memcpy(rec + sizeof s, frames, 8u * depth);
	size_t off = lb_raw(b, VT_REC_STACK, size, rec);
	free(rec);
	return off;
}

size_t lb_text(struct lb *b, uint32_t type, const char *text)
{
	uint32_t len = (uint32_t)strlen(text), fixed;
	uint8_t rec[4096] = {0};
	if (type == VT_REC_MARK) {
		struct vt_mark_rec m = {.text_len = (uint16_t)len, .seq = b->seq++,
		                        .t_ns = (b->t_ns += 1000)};
		fixed = sizeof m;
		memcpy(rec, &m, fixed);
	} else if (type == VT_REC_THREAD) {
		struct vt_thread_rec t = {.tid = 7, .name_len = len};
		fixed = sizeof t;
		memcpy(rec, &t, fixed);
	} else {
		struct vt_note_rec n = {.len = len, .seq = b->seq++};
		fixed = sizeof n;
		memcpy(rec, &n, fixed);
	}
	if (fixed + len > sizeof rec)
		abort();
	memcpy(rec + fixed, text, len);
	return lb_raw(b, type, VT_ALIGN8(fixed + len), rec);
}

int lb_save_prefix(const struct lb *b, const char *path, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, b->buf + done, n - done);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	return close(fd);
}

int lb_save(const struct lb *b, const char *path)
{
	return lb_save_prefix(b, path, b->size);
}

void lb_free(struct lb *b)
{
	free(b->buf);
	memset(b, 0, sizeof *b);
}
