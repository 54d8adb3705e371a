/* Building records in memory for the analyzer's unit tests: the model is fed
 * exactly what the reader would hand it. */
#ifndef VT_TEST_MODEL_BUILDER_H
#define VT_TEST_MODEL_BUILDER_H

#include <stdint.h>
#include <string.h>

#include "model.h"

struct builder {
	struct vt_model *m;
	uint32_t proc;
	uint64_t seq;
	uint32_t stack; /* stack id the next events carry (0: none) */
};

/* The header of an exited /usr/bin/test: more fields may be set before
 * b_begin_with. */
static inline void b_header(struct vt_file_header *h, int pid, uint64_t clock_base)
{
	memset(h, 0, sizeof *h);
	memcpy(h->magic, VT_MAGIC, VT_MAGIC_LEN);
	h->pid = pid;
	h->clock_base_ns = clock_base;
	h->state = VT_STATE_WORD(VT_STATE_EXITED, 0);
	strcpy(h->exe, "/usr/bin/test");
	h->exe_len = (uint32_t)strlen(h->exe);
}

static inline void b_begin_with(struct builder *b, struct vt_model *m,
                                const struct vt_file_header *h, uint64_t trace_start)
{
	b->m = m;
	b->proc = vt_model_begin_process(m, h, trace_start);
	b->seq = 0;
	b->stack = 0;
}

static inline void b_begin(struct builder *b, struct vt_model *m, int pid, uint64_t clock_base,
                           uint64_t trace_start)
{
	struct vt_file_header h;
	b_header(&h, pid, clock_base);
	b_begin_with(b, m, &h, trace_start);
}

static inline void b_event(struct builder *b, uint32_t type, uint64_t t, uint64_t addr,
                           uint64_t bytes, uint64_t aux, uint8_t kind, uint8_t dev, uint8_t api)
{
	struct vt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.hdr = VT_HDR(type, sizeof ev);
	ev.stack_id = b->stack;
	ev.seq = ++b->seq;
	ev.t_ns = t;
	ev.addr = addr;
	ev.bytes = bytes;
	ev.aux = aux;
	ev.kind = kind;
	ev.device = dev;
	ev.api = api;
	vt_model_feed(b->m, b->proc, type, &ev, sizeof ev);
}

/* VT_API ids used by the tests (include/vramtrace/api.def) */
enum {
	API_ALLOC = 2,
	API_FREE = 11,
	API_FREE_ASYNC = 12,
	API_ALLOC_ASYNC = 6,
	API_CREATE = 14,
	API_RELEASE = 15,
	API_MAP = 16,
	API_UNMAP = 17,
	API_HTOD = 31,
	API_DTOH = 37,
	API_DTOD = 43
};

static inline void b_alloc(struct builder *b, uint64_t t, uint64_t addr, uint64_t bytes,
                           uint8_t dev)
{
	b_event(b, VT_REC_ALLOC, t, addr, bytes, 0, VT_ALLOC_DEVICE, dev, API_ALLOC);
}

static inline void b_free(struct builder *b, uint64_t t, uint64_t addr, uint8_t dev)
{
	b_event(b, VT_REC_FREE, t, addr, 0, 0, VT_ALLOC_DEVICE, dev, API_FREE);
}

static inline void b_htod(struct builder *b, uint64_t t, uint64_t dst, uint64_t bytes, uint8_t dev)
{
	b_event(b, VT_REC_COPY, t, dst, bytes, 0x7f0000001000ull, VT_COPY_HTOD, dev, API_HTOD);
}

static inline void b_dtoh(struct builder *b, uint64_t t, uint64_t src, uint64_t bytes, uint8_t dev)
{
	b_event(b, VT_REC_COPY, t, 0x7f0000001000ull, bytes, src, VT_COPY_DTOH, dev, API_DTOH);
}

static inline void b_dtod(struct builder *b, uint64_t t, uint64_t dst, uint64_t src, uint64_t bytes,
                          uint8_t dev)
{
	b_event(b, VT_REC_COPY, t, dst, bytes, src, VT_COPY_DTOD, dev, API_DTOD);
}

static inline void b_mark(struct builder *b, uint64_t t, const char *text)
{
	union {
		struct vt_mark_rec r;
		char buf[256];
	} u;
	memset(&u, 0, sizeof u);
	size_t n = strlen(text);
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof u.r + n));
	u.r.hdr = VT_HDR(VT_REC_MARK, size);
	u.r.kind = VT_MARK_STEP;
	u.r.text_len = (uint16_t)n;
	u.r.seq = ++b->seq;
	u.r.t_ns = t;
	memcpy(u.r.text, text, n);
	vt_model_feed(b->m, b->proc, VT_REC_MARK, &u, size);
}

static inline void b_device(struct builder *b, uint32_t ordinal, uint64_t total, const char *name)
{
	union {
		struct vt_device_rec r;
		char buf[256];
	} u;
	memset(&u, 0, sizeof u);
	size_t n = strlen(name);
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof u.r + n));
	u.r.hdr = VT_HDR(VT_REC_DEVICE, size);
	u.r.ordinal = ordinal;
	u.r.total_bytes = total;
	u.r.name_len = (uint32_t)n;
	memcpy(u.r.name, name, n);
	vt_model_feed(b->m, b->proc, VT_REC_DEVICE, &u, size);
}

#endif
