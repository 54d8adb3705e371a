/* Writes a valid vramtrace trace directory, directly in the log format
 * (include/vramtrace/format.h), shaped like a long training job: weights and
 * optimizer state, a whole-dataset upload, then steps that each upload a
 * batch, allocate activations and gradients, mark the step and free them.
 *
 *   gen_trace DIR EVENTS [LAYERS]       (built with -DVT_GEN_TRACE_MAIN)
 *
 * Used by the analyzer benchmark (bench_analyzer.c) with >= 10 million
 * events; deterministic, so the same arguments give the same bytes. Events
 * are packed (vramtrace/event_packed.h), as the shim writes them. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gen_trace.h"
#include "vramtrace/event_packed.h"
#include "vramtrace/format.h"

#define CHUNK (1u << 20)
#define PID 4242

struct gen {
	FILE *f;
	unsigned char *chunk; /* the chunk being filled */
	uint32_t used;        /* bytes used in it */
	uint64_t chunk_index;
	uint64_t first_seq, first_t_ns; /* the chunk's bases */
	uint64_t seq, t_ns, events;
	uint64_t next_addr;
};

static void flush_chunk(struct gen *g)
{
	if (!g->used)
		return;
	memset(g->chunk + g->used, 0, CHUNK - g->used); /* zero header: end of chunk */
	if (fwrite(g->chunk, 1, CHUNK, g->f) != CHUNK) {
		perror("gen_trace: write");
		exit(1);
	}
	g->used = 0;
	g->chunk_index++;
}

/* Room for size bytes plus the terminating zero word; a new chunk if not. */
static void *reserve(struct gen *g, uint32_t size)
{
	if (g->used && g->used + size + 8 > CHUNK)
		flush_chunk(g);
	if (!g->used) {
		struct vt_chunk_header *ch = (void *)g->chunk;
		memset(ch, 0, sizeof *ch);
		ch->magic = VT_CHUNK_MAGIC;
		ch->tid = PID;
		ch->thread_seq = g->chunk_index;
		ch->first_seq = g->first_seq = g->seq + 1;
		ch->first_t_ns = g->first_t_ns = g->t_ns;
		g->used = sizeof *ch;
	}
	void *p = g->chunk + g->used;
	memset(p, 0, size);
	g->used += size;
	return p;
}

static void event(struct gen *g, uint32_t type, uint64_t addr, uint64_t bytes, uint64_t aux,
                  uint8_t kind, uint8_t api, uint32_t stack)
{
	g->t_ns += 150;
	struct vt_event ev = {.stack_id = stack,
	                      .seq = ++g->seq,
	                      .t_ns = g->t_ns,
	                      .addr = addr,
	                      .bytes = bytes,
	                      .aux = aux,
	                      .api = api,
	                      .kind = kind};
	/* the bases are the chunk's: make sure the record lands in this one */
	if (g->used && g->used + VT_PACKED_MAX_SIZE + 8 > CHUNK)
		flush_chunk(g);
	uint8_t *p = reserve(g, VT_PACKED_MAX_SIZE);
	uint32_t size = vt_packed_encode(p, type, &ev, g->first_seq, g->first_t_ns);
	g->used -= VT_PACKED_MAX_SIZE - size; /* the rest stays zero */
	uint32_t hdr = VT_HDR(VT_REC_PACKED, size);
	memcpy(p, &hdr, sizeof hdr);
	g->events++;
}

static uint64_t alloc(struct gen *g, uint64_t bytes, uint32_t stack)
{
	uint64_t a = g->next_addr;
	g->next_addr += (bytes + 0xfff) & ~0xfffull;
	event(g, VT_REC_ALLOC, a, bytes, 0, VT_ALLOC_DEVICE, 2, stack);
	return a;
}

static void release(struct gen *g, uint64_t addr, uint32_t stack)
{
	event(g, VT_REC_FREE, addr, 0, 0, VT_ALLOC_DEVICE, 11, stack);
}

static void htod(struct gen *g, uint64_t dst, uint64_t bytes, uint32_t stack)
{
	event(g, VT_REC_COPY, dst, bytes, 0x7f0000000000ull, VT_COPY_HTOD, 31, stack);
}

static void stack_rec(struct gen *g, uint32_t id)
{
	struct vt_stack_rec *s = reserve(g, sizeof *s + 4 * 8);
	s->stack_id = id;
	s->depth = 4;
	for (int i = 0; i < 4; i++)
		s->frames[i] = 0x400000 + id * 0x100 + (uint64_t)i * 0x10;
	s->hdr = VT_HDR(VT_REC_STACK, sizeof *s + 4 * 8);
}

static void module_rec(struct gen *g)
{
	const char path[] = "/opt/gen/trainer";
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof(struct vt_module_rec) + sizeof path - 1));
	struct vt_module_rec *m = reserve(g, size);
	m->seq = g->seq;
	m->base = 0;
	m->lo = 0x400000;
	m->hi = 0x500000;
	m->path_len = sizeof path - 1;
	memcpy(m->path, path, sizeof path - 1);
	m->hdr = VT_HDR(VT_REC_MODULE, size);
}

static void device_rec(struct gen *g)
{
	const char name[] = "Generated GPU";
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof(struct vt_device_rec) + sizeof name - 1));
	struct vt_device_rec *d = reserve(g, size);
	d->ordinal = 0;
	d->total_bytes = 80ull << 30;
	d->name_len = sizeof name - 1;
	memcpy(d->name, name, sizeof name - 1);
	d->hdr = VT_HDR(VT_REC_DEVICE, size);
}

static void mark(struct gen *g, uint64_t step)
{
	char text[32];
	int n = snprintf(text, sizeof text, "step %" PRIu64, step);
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof(struct vt_mark_rec) + (uint32_t)n));
	struct vt_mark_rec *m = reserve(g, size);
	m->kind = VT_MARK_STEP;
	m->text_len = (uint16_t)n;
	m->seq = ++g->seq;
	m->t_ns = g->t_ns;
	memcpy(m->text, text, (size_t)n);
	m->hdr = VT_HDR(VT_REC_MARK, size);
}

static void write_header(FILE *f, uint64_t chunks)
{
	static struct vt_file_header h;
	static unsigned char page[VT_HEADER_SIZE];
	memset(&h, 0, sizeof h);
	memcpy(h.magic, VT_MAGIC, VT_MAGIC_LEN);
	h.version = VT_FORMAT_VERSION;
	h.byte_order = VT_BYTE_ORDER_MARK;
	h.header_size = VT_HEADER_SIZE;
	h.chunk_size = CHUNK;
	h.pid = PID;
	h.ppid = 1;
	h.stack_depth = 4;
	h.clock_base_ns = 1000000000ull;
	h.realtime_base_ns = 1700000000000000000ull;
	h.state = VT_STATE_WORD(VT_STATE_EXITED, 0);
	h.chunks_claimed = chunks;
	snprintf(h.hostname, sizeof h.hostname, "generator");
	h.exe_len = (uint32_t)snprintf(h.exe, sizeof h.exe, "/opt/gen/trainer");
	h.cmdline_len = (uint32_t)snprintf(h.cmdline, sizeof h.cmdline, "trainer");
	memcpy(page, &h, sizeof h);
	if (fseek(f, 0, SEEK_SET) != 0 || fwrite(page, 1, sizeof page, f) != sizeof page) {
		perror("gen_trace: header");
		exit(1);
	}
}

int vt_gen_trace(const char *dir, uint64_t target, int layers, uint64_t *events_out)
{
	if (layers < 1 || layers > 256)
		layers = 16;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		perror(dir);
		return -1;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/vramtrace.%d.0.log", dir, PID);
	struct gen g = {0};
	g.f = fopen(path, "w");
	g.chunk = malloc(CHUNK);
	if (!g.f || !g.chunk) {
		perror(path);
		if (g.f)
			fclose(g.f);
		free(g.chunk);
		return -1;
	}
	g.next_addr = 0x7f0000000000ull;
	write_header(g.f, 0); /* rewritten at the end with the chunk count */
	module_rec(&g);
	device_rec(&g);
	for (uint32_t s = 1; s <= 8; s++)
		stack_rec(&g, s);
	/* setup: weights, Adam slots, a whole dataset */
	uint64_t wbytes[256];
	for (int l = 0; l < layers; l++) {
		wbytes[l] = (uint64_t)(1 + l % 5) << 20;
		alloc(&g, wbytes[l], 1);
	}
	for (int l = 0; l < layers; l++)
		for (int k = 0; k < 2; k++)
			alloc(&g, wbytes[l], 2);
	uint64_t ds = alloc(&g, 4ull << 30, 3);
	htod(&g, ds, 4ull << 30, 3);
	/* steps until the event budget is spent; addresses reused per step */
	uint64_t base = g.next_addr, step = 0;
	while (g.events < target) {
		g.next_addr = base;
		mark(&g, step++);
		uint64_t batch = alloc(&g, 8 << 20, 4);
		htod(&g, batch, 8 << 20, 4);
		uint64_t act[256], grad[256];
		for (int l = 0; l < layers; l++)
			act[l] = alloc(&g, 3 << 20, 5);
		for (int l = layers - 1; l >= 0; l--) {
			grad[l] = alloc(&g, wbytes[l], 6);
			release(&g, act[l], 7);
		}
		for (int l = 0; l < layers; l++)
			release(&g, grad[l], 7);
		release(&g, batch, 8);
	}
	flush_chunk(&g);
	write_header(g.f, g.chunk_index);
	free(g.chunk);
	if (fclose(g.f) != 0) {
		perror(path);
		return -1;
	}
	if (events_out)
		*events_out = g.events;
	return 0;
}

#ifdef VT_GEN_TRACE_MAIN
int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: gen_trace DIR EVENTS [LAYERS]\n");
		return 2;
	}
	uint64_t events;
	if (vt_gen_trace(argv[1], strtoull(argv[2], NULL, 10), argc > 3 ? atoi(argv[3]) : 16,
	                 &events) != 0)
		return 1;
	printf("gen_trace: %s: %" PRIu64 " events\n", argv[1], events);
	return 0;
}
#endif
