/* Writes a small trace with the project's own log writer, holding every
 * record kind the GPU check kit reads (events of each kind, driver lookups
 * of each path, a device, a note), from two threads so the records sit in
 * two chunks. test_reader_interop.py reads it with the kit's reader
 * (samples/gpu/vtlog.py) and with `vramtrace dump --json` and compares.
 *
 *   kit_fixture_writer DIR */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "log_writer.h"

/* VT_API ids by name, from the one table. */
enum {
#define VT_API(id, symbol, class) API_##symbol = id,
#include "vramtrace/api.def"
};

#define MIB (1ull << 20)
#define DATASET 0x7f0000000000ull

static void event(uint32_t type, uint8_t api, uint8_t kind, uint64_t addr, uint64_t bytes,
		  uint64_t aux, int32_t result)
{
	struct vt_event ev = {.addr = addr, .bytes = bytes, .aux = aux, .api = api,
			      .kind = kind, .device = 0, .result = result};
	vt_log_write_event(type, &ev);
}

/* A compact free (VT_REC_FREE_SHORT): what the shim writes for a plain free. */
static void free_short(uint8_t api, uint8_t kind, uint64_t addr)
{
	struct vt_free_event *ev = vt_log_reserve(sizeof *ev);
	if (!ev)
		return;
	ev->seq = vt_log_next_seq();
	ev->t_ns = vt_log_now_ns();
	ev->addr = addr;
	ev->api = api;
	ev->kind = kind;
	vt_log_commit(ev, VT_REC_FREE_SHORT, sizeof *ev);
}

static void lookup(uint8_t path, uint8_t outcome, uint8_t api, uint32_t version, const char *name)
{
	uint32_t len = (uint32_t)strlen(name);
	uint32_t size = VT_ALIGN8((uint32_t)sizeof(struct vt_lookup_rec) + len);
	struct vt_lookup_rec *rec = vt_log_reserve(size);
	if (!rec)
		return;
	rec->path = path;
	rec->outcome = outcome;
	rec->api = api;
	rec->version = version;
	rec->name_len = len;
	memcpy(rec->name, name, len);
	vt_log_commit(rec, VT_REC_LOOKUP, size);
}

static void device(uint32_t ordinal, uint64_t total, const char *name)
{
	uint32_t len = (uint32_t)strlen(name);
	uint32_t size = VT_ALIGN8((uint32_t)sizeof(struct vt_device_rec) + len);
	struct vt_device_rec *rec = vt_log_reserve(size);
	if (!rec)
		return;
	rec->ordinal = ordinal;
	rec->total_bytes = total;
	rec->name_len = len;
	memcpy(rec->name, name, len);
	vt_log_commit(rec, VT_REC_DEVICE, size);
}

/* A second thread: the batch uploads, in its own chunk. */
static void *batches(void *unused)
{
	(void)unused;
	for (uint64_t i = 0; i < 4; i++)
		event(VT_REC_COPY, API_cuMemcpyHtoDAsync_v2, VT_COPY_HTOD, DATASET + 8 * MIB, MIB / 4,
		      0x1000 + i, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: kit_fixture_writer DIR\n");
		return 2;
	}
	struct vt_log_config cfg = {.dir = argv[1], .stack_depth = 0};
	if (vt_log_init(&cfg) != 0)
		return 1;
	device(0, 80ull << 30, "fixture GPU");
	lookup(VT_LOOKUP_DLSYM, VT_LOOKUP_ROUTED, API_cuMemAlloc_v2, 0, "cuMemAlloc_v2");
	lookup(VT_LOOKUP_DLSYM, VT_LOOKUP_PASSED, 0, 0, "cuInit");
	lookup(VT_LOOKUP_GET_PROC_V2, VT_LOOKUP_ROUTED, API_cuMemcpyHtoDAsync_v2, 3020, "cuMemcpyHtoDAsync");
	lookup(VT_LOOKUP_GET_PROC, VT_LOOKUP_FAILED, 0, 12000, "cuNoSuchThing");
	event(VT_REC_ALLOC, API_cuMemAlloc_v2, VT_ALLOC_DEVICE, DATASET, 8 * MIB, 0, 0);
	event(VT_REC_COPY, API_cuMemcpyHtoD_v2, VT_COPY_HTOD, DATASET, 8 * MIB, 0x5000, 0);
	event(VT_REC_ALLOC, API_cuMemAlloc_v2, VT_ALLOC_DEVICE, 0, 1ull << 40, 0, 2 /* OOM */);
	event(VT_REC_ALLOC, API_cuMemCreate, VT_ALLOC_VMM, 0x42, 2 * MIB, 0, 0);
	event(VT_REC_MAP, API_cuMemMap, 0, DATASET + 64 * MIB, 2 * MIB, 0x42, 0);
	pthread_t thread;
	if (pthread_create(&thread, NULL, batches, NULL) == 0)
		pthread_join(thread, NULL);
	event(VT_REC_FREE, API_cuMemFree_v2, VT_ALLOC_DEVICE, DATASET, 8 * MIB, 0, 0);
	event(VT_REC_UNMAP, API_cuMemUnmap, 0, DATASET + 64 * MIB, 2 * MIB, 0, 0);
	free_short(API_cuMemRelease, VT_ALLOC_VMM, 0x42);
	vt_log_write_note("fixture note");
	vt_log_finish(7);
	return 7;
}
