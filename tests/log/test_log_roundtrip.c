/* Writer -> reader round trip for every record kind; a log cut at every byte
 * of its last 4 KiB; damaged chunks and records; hostile headers; trace
 * directories. Each log is written by a forked child (one log per process). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log_test_util.h"
#include "log_writer.h"
#include "vramtrace/crc32c.h"
#include "trace_dir.h"

#define NRECORDS 700u
#define CHUNK 8192u

static const uint32_t kinds[] = {
    VT_REC_ALLOC,   VT_REC_FREE,      VT_REC_COPY,   VT_REC_MAP,       VT_REC_UNMAP,
    VT_REC_RESERVE, VT_REC_UNRESERVE, VT_REC_MEMSET, VT_REC_POOL_TRIM, VT_REC_STACK,
    VT_REC_MODULE,  VT_REC_MEMINFO,   VT_REC_MARK,   VT_REC_THREAD,    VT_REC_EXIT,
    VT_REC_DEVICE,  VT_REC_LOOKUP,    VT_REC_PYSTR,  VT_REC_NOTE,
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

/* ---- deterministic records: record i, complete with its header word ---- */

static uint32_t put_text(uint8_t *buf, size_t fixed, const char *text)
{
	size_t len = strlen(text);
	memcpy(buf + fixed, text, len);
	return VT_ALIGN8((uint32_t)(fixed + len));
}

static uint32_t gen_event(unsigned i, uint8_t *buf)
{
	struct vt_event ev = {
	    .stack_id = i % 9,
	    .seq = i + 1,
	    .t_ns = 1000ull * i + 7,
	    .addr = 0x7f0000000000ull + 4096ull * i,
	    .bytes = 17ull * i + 1,
	    .aux = i ^ 0x55u,
	    .stream = i % 3,
	    .api = (uint8_t)(i % 87 + 1),
	    .rt_api = (uint8_t)(i % 10),
	    .device = (uint8_t)(i % 4),
	    .kind = (uint8_t)(i % 7),
	    .result = i % 5 ? 0 : 2,
	};
	memcpy(buf, &ev, sizeof ev);
	return sizeof ev;
}

static uint32_t gen_stack(unsigned i, uint8_t *buf)
{
	struct vt_stack_rec s = {.stack_id = i + 1,
	                         .depth = (uint16_t)(i % 6 + 1),
	                         .py_depth = (uint16_t)(i % 3),
	                         .hash = i * 31};
	memcpy(buf, &s, sizeof s);
	unsigned words = s.depth + 2u * s.py_depth;
	for (unsigned j = 0; j < words; j++) {
		uint64_t w = 0x400000ull + 64ull * i + j;
		memcpy(buf + sizeof s + 8 * j, &w, 8);
	}
	return (uint32_t)(sizeof s + 8 * words);
}

static uint32_t gen_meta(unsigned i, uint32_t type, uint8_t *buf)
{
	char text[64];
	snprintf(text, sizeof text, "name-%u%.*s", i, (int)(i % 13), "abcdefghijklm");
	size_t tl = strlen(text);
	switch (type) {
	case VT_REC_MODULE: {
		struct vt_module_rec m = {.generation = i,
		                          .seq = i + 1,
		                          .base = 0x1000ull * i,
		                          .lo = 0x1000ull * i,
		                          .hi = 0x1000ull * i + 0xfff,
		                          .event = (uint8_t)(i % 2),
		                          .build_id_len = 20,
		                          .path_len = (uint16_t)tl};
		for (unsigned b = 0; b < 20; b++)
			m.build_id[b] = (uint8_t)(i + b);
		memcpy(buf, &m, sizeof m);
		return put_text(buf, sizeof m, text);
	}
	case VT_REC_MEMINFO: {
		struct vt_meminfo_rec m = {.device = (uint8_t)(i % 4),
		                           .reason = (uint8_t)(i % 4),
		                           .seq = i + 1,
		                           .t_ns = 1000ull * i + 7,
		                           .free_bytes = 1ull << 30,
		                           .total_bytes = 16ull << 30};
		memcpy(buf, &m, sizeof m);
		return sizeof m;
	}
	case VT_REC_MARK: {
		struct vt_mark_rec m = {.kind = (uint16_t)(i % 4),
		                        .text_len = (uint16_t)tl,
		                        .seq = i + 1,
		                        .t_ns = 1000ull * i + 7,
		                        .value = i};
		memcpy(buf, &m, sizeof m);
		return put_text(buf, sizeof m, text);
	}
	case VT_REC_THREAD: {
		struct vt_thread_rec t = {.tid = 1000 + i, .name_len = (uint32_t)tl};
		memcpy(buf, &t, sizeof t);
		return put_text(buf, sizeof t, text);
	}
	case VT_REC_EXIT: {
		struct vt_exit_rec x = {
		    .code = (int32_t)i - 300, .seq = i + 1, .t_ns = 1000ull * i};
		memcpy(buf, &x, sizeof x);
		return sizeof x;
	}
	case VT_REC_DEVICE: {
		struct vt_device_rec d = {
		    .ordinal = i % 8, .total_bytes = 80ull << 30, .name_len = (uint32_t)tl};
		memcpy(buf, &d, sizeof d);
		return put_text(buf, sizeof d, text);
	}
	case VT_REC_LOOKUP: {
		struct vt_lookup_rec l = {.path = (uint8_t)(i % 3),
		                          .outcome = (uint8_t)(i % 5),
		                          .api = (uint8_t)(i % 87),
		                          .version = 12000 + i,
		                          .name_len = (uint32_t)tl,
		                          .flags = i % 3};
		memcpy(buf, &l, sizeof l);
		return put_text(buf, sizeof l, text);
	}
	case VT_REC_PYSTR: {
		struct vt_pystr_rec p = {.id = i + 1, .len = (uint32_t)tl};
		memcpy(buf, &p, sizeof p);
		return put_text(buf, sizeof p, text);
	}
	default: { /* VT_REC_NOTE */
		struct vt_note_rec n = {.len = (uint32_t)tl, .seq = i + 1};
		memcpy(buf, &n, sizeof n);
		return put_text(buf, sizeof n, text);
	}
	}
}

/* Record i in buf (zeroed by the caller); returns its size. */
static uint32_t gen_record(unsigned i, uint8_t *buf)
{
	uint32_t type = kinds[i % NKINDS];
	uint32_t size = type <= VT_REC_POOL_TRIM ? gen_event(i, buf)
	                : type == VT_REC_STACK   ? gen_stack(i, buf)
	                                         : gen_meta(i, type, buf);
	uint32_t word = VT_HDR(type, size);
	memcpy(buf, &word, sizeof word);
	return size;
}

/* ---- the writer child ----------------------------------------------------- */

static void write_all(void)
{
	for (unsigned i = 0; i < NRECORDS; i++) {
		uint8_t buf[1024] = {0};
		uint32_t size = gen_record(i, buf), type = VT_HDR_TYPE(*(uint32_t *)buf);
		if (type <= VT_REC_POOL_TRIM) {
			if (vt_log_write_event(type, (const struct vt_event *)buf) < 0)
				_exit(10);
			continue;
		}
		uint8_t *rec = vt_log_reserve(size);
		if (!rec)
			_exit(11);
		memcpy(rec + 4, buf + 4, size - 4);
		vt_log_commit(rec, type, size);
	}
	if (vt_log_write_mark(VT_MARK_STEP, "step 99", 99) || vt_log_write_note("bye \"now\"\n"))
		_exit(12);
	vt_log_finish(7);
}

static pid_t run_writer(const char *dir, uint32_t chunk_size, void (*body)(void))
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct vt_log_config cfg = {
		    .dir = dir, .chunk_size = chunk_size, .stack_depth = 16};
		if (vt_log_init(&cfg) < 0)
			_exit(9);
		body();
		_exit(0);
	}
	assert_int_equal(lt_wait(pid), 0);
	return pid;
}

/* ---- shared fixture: one complete log --------------------------------------- */

static char *g_dir, *g_path;
static struct lt_recs g_full;

static int setup(void **state)
{
	(void)state;
	g_dir = lt_make_dir();
	pid_t pid = run_writer(g_dir, CHUNK, write_all);
	g_path = lt_log_path(g_dir, pid, 0);
	char err[256];
	struct vt_log *log = vt_log_open_file(g_path, err, sizeof err);
	if (!log) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	lt_collect(log, &g_full);
	vt_log_close(log);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	lt_recs_free(&g_full);
	lt_remove_dir(g_dir);
	free(g_dir);
	free(g_path);
	return 0;
}

static void test_every_kind_round_trips(void **state)
{
	(void)state;
	assert_int_equal(g_full.n, NRECORDS + 3);
	for (unsigned i = 0; i < NRECORDS; i++) {
		uint8_t want[1024] = {0};
		uint32_t size = gen_record(i, want);
		assert_int_equal(g_full.v[i].size, size);
		assert_int_equal(g_full.v[i].type, kinds[i % NKINDS]);
		assert_memory_equal(g_full.v[i].bytes, want, size);
	}
	const struct lt_rec *mark = &g_full.v[NRECORDS], *note = mark + 1, *exit_rec = mark + 2;
	assert_int_equal(mark->type, VT_REC_MARK);
	const struct vt_mark_rec *m = (const void *)mark->bytes;
	assert_int_equal(m->kind, VT_MARK_STEP);
	assert_int_equal(m->value, 99);
	assert_int_equal(m->text_len, 7);
	assert_memory_equal(m->text, "step 99", 7);
	assert_int_equal(note->type, VT_REC_NOTE);
	const struct vt_note_rec *n = (const void *)note->bytes;
	assert_int_equal(n->len, 10);
	assert_memory_equal(n->text, "bye \"now\"\n", 10);
	assert_int_equal(exit_rec->type, VT_REC_EXIT);
	assert_int_equal(((const struct vt_exit_rec *)(const void *)exit_rec->bytes)->code, 7);
	/* the helpers' seqs come from the writer's counter: after the writes */
	assert_true(m->seq < n->seq);
}

static void test_header_says_exited(void **state)
{
	(void)state;
	char err[256];
	struct vt_log *log = vt_log_open_file(g_path, err, sizeof err);
	assert_non_null(log);
	const struct vt_file_header *h = vt_log_header(log);
	assert_int_equal(VT_STATE_OF(h->state), VT_STATE_EXITED);
	assert_int_equal(VT_EXIT_CODE_OF(h->state), 7);
	assert_int_equal(h->chunk_size, CHUNK);
	assert_int_equal(h->pid, atoi(strrchr(g_path, '/') + 11));
	assert_int_equal(h->ppid, getpid());
	assert_int_equal(h->flags & VT_FLAG_TRUNCATED, 0);
	assert_int_equal(h->events_dropped, 0);
	assert_true(h->exe_len > 0);
	assert_non_null(strstr(h->exe, "test_log_roundtrip"));
	/* one thread: chunks are claimed one after the other, none wasted */
	uint64_t last = g_full.v[g_full.n - 1].offset;
	assert_int_equal(h->chunks_claimed, (last - VT_HEADER_SIZE) / CHUNK + 1);
	assert_true(h->chunks_claimed >= 4);
	assert_int_equal(vt_log_warnings(log), 0);
	struct stat st;
	assert_int_equal(stat(g_path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	vt_log_close(log);
}

/* ---- cut short ------------------------------------------------------------ */

static char *copy_log(const char *tag)
{
	char *copy;
	assert_true(asprintf(&copy, "%s/%s.copy", g_dir, tag) > 0);
	int in = open(g_path, O_RDONLY), out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(in >= 0 && out >= 0);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	return copy;
}

static void test_cut_at_every_byte_of_the_tail(void **state)
{
	(void)state;
	const struct lt_rec *last = &g_full.v[g_full.n - 1];
	uint64_t data_end = last->offset + last->size;
	uint64_t last_chunk = VT_HEADER_SIZE + (last->offset - VT_HEADER_SIZE) / CHUNK * CHUNK;
	uint64_t from = data_end - 4096;
	if (last_chunk - 512 < from)
		from = last_chunk - 512; /* also cut across the last chunk header */
	char *copy = copy_log("cut");
	int fd = open(copy, O_WRONLY);
	assert_true(fd >= 0);
	unsigned cuts = 0;
	for (uint64_t cut = data_end; cut >= from; cut--, cuts++) {
		assert_int_equal(ftruncate(fd, (off_t)cut), 0);
		char err[256];
		struct vt_log *log = vt_log_open_file(copy, err, sizeof err);
		assert_non_null(log);
		struct lt_recs got;
		lt_collect(log, &got);
		size_t want = 0;
		while (want < g_full.n && g_full.v[want].offset + g_full.v[want].size <= cut)
			want++;
		if (got.n != want)
			fail_msg("cut at %llu: %zu records, want %zu", (unsigned long long)cut,
			         got.n, want);
		for (size_t i = 0; i < got.n; i++) {
			assert_int_equal(got.v[i].offset, g_full.v[i].offset);
			assert_memory_equal(got.v[i].bytes, g_full.v[i].bytes, g_full.v[i].size);
		}
		/* a cut off a chunk boundary is said once (a live log always ends
		 * on one), and the chunks the header counts past it once more; the
		 * records before it are all there, nothing is invented */
		const struct vt_file_header *h = vt_log_header(log);
		const struct vt_log_integrity *in = vt_log_integrity(log);
		uint64_t into_chunk = (cut - h->header_size) % h->chunk_size;
		uint64_t held = (cut - h->header_size + h->chunk_size - 1) / h->chunk_size;
		assert_int_equal(in->chunks_missing, h->chunks_claimed - held);
		assert_true(in->chunks_missing > 0 || into_chunk);
		assert_int_equal(vt_log_warnings(log),
		                 (into_chunk ? 1 : 0) + (in->chunks_missing ? 1 : 0));
		/* the cut chunk, unless the cut is inside its header */
		assert_int_equal(in->cut, into_chunk >= sizeof(struct vt_chunk_header));
		assert_int_equal(in->damaged, 0);
		lt_recs_free(&got);
		vt_log_close(log);
	}
	assert_true(cuts >= 4097);
	/* cut inside the header: a clear error, no crash */
	for (off_t cut = 100; cut <= 4000; cut += 3900) {
		assert_int_equal(ftruncate(fd, cut), 0);
		char err[256] = "";
		assert_null(vt_log_open_file(copy, err, sizeof err));
		assert_non_null(strstr(err, copy));
	}
	close(fd);
	unlink(copy);
	free(copy);
}

/* ---- damage ---------------------------------------------------------------- */

/* Index in g_full of the first record inside chunk k (by file offset). */
static size_t first_in_chunk(unsigned k)
{
	uint64_t start = VT_HEADER_SIZE + (uint64_t)k * CHUNK;
	for (size_t i = 0; i < g_full.n; i++)
		if (g_full.v[i].offset >= start)
			return i;
	fail_msg("no chunk %u", k);
	return 0;
}

static void poke(const char *path, uint64_t off, const void *bytes, size_t n)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, n, (off_t)off), (ssize_t)n);
	close(fd);
}

/* Read path with warnings captured; check one warning naming `needle` (and,
 * when `sealed`, one more: the chunk fails its seal check), and that exactly
 * the records of g_full not in [lost_from, lost_to) came back. */
static void expect_damage_sealed(const char *path, const char *needle, size_t lost_from,
                                 size_t lost_to, int sealed)
{
	char err[256];
	lt_capture_begin();
	struct vt_log *log = vt_log_open_file(path, err, sizeof err);
	struct lt_recs got = {0};
	if (log)
		lt_collect(log, &got);
	char *warn = lt_capture_end();
	assert_non_null(log);
	assert_int_equal(vt_log_warnings(log), 1 + !!sealed);
	assert_int_equal(lt_count_lines(warn), 1 + !!sealed);
	assert_int_equal(vt_log_integrity(log)->damaged, 1);
	if (sealed)
		assert_non_null(strstr(warn, "fails its seal check"));
	assert_non_null(strstr(warn, needle));
	assert_non_null(strstr(warn, path));
	assert_int_equal(got.n, g_full.n - (lost_to - lost_from));
	for (size_t i = 0, j = 0; i < g_full.n; i++) {
		if (i >= lost_from && i < lost_to)
			continue;
		assert_int_equal(got.v[j].offset, g_full.v[i].offset);
		assert_memory_equal(got.v[j].bytes, g_full.v[i].bytes, g_full.v[i].size);
		j++;
	}
	free(warn);
	lt_recs_free(&got);
	vt_log_close(log);
}

/* Damage inside a sealed chunk: said twice, by the record check and by the
 * seal. */
static void expect_damage(const char *path, const char *needle, size_t lost_from, size_t lost_to)
{
	expect_damage_sealed(path, needle, lost_from, lost_to, 1);
}

/* Seal the chunk at off again over what it holds now, as a writer that
 * wrote those bytes would have. */
static void reseal(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	uint8_t *chunk = malloc(CHUNK);
	assert_non_null(chunk);
	assert_int_equal(pread(fd, chunk, CHUNK, (off_t)off), CHUNK);
	struct vt_chunk_seal *seal = (void *)(chunk + CHUNK - VT_SEAL_SIZE);
	assert_int_equal(seal->magic, VT_SEAL_MAGIC);
	seal->crc = vt_crc32c(chunk, seal->bytes);
	seal->seal_crc = vt_crc32c(&seal->magic, offsetof(struct vt_chunk_seal, seal_crc) -
	                                             offsetof(struct vt_chunk_seal, magic));
	assert_int_equal(pwrite(fd, seal, sizeof *seal, (off_t)(off + CHUNK - VT_SEAL_SIZE)),
	                 sizeof *seal);
	free(chunk);
	close(fd);
}

static void test_damaged_record_skips_to_next_chunk(void **state)
{
	(void)state;
	size_t first = first_in_chunk(1), next = first_in_chunk(2);
	size_t victim = first + 5;
	char *copy = copy_log("badrec");
	uint32_t word = VT_HDR(VT_REC_ALLOC, 12); /* not a multiple of 8 */
	poke(copy, g_full.v[victim].offset, &word, sizeof word);
	char needle[96];
	snprintf(needle, sizeof needle, "damaged record at offset %llu",
	         (unsigned long long)g_full.v[victim].offset);
	expect_damage(copy, needle, victim, next);
	/* a size running past the chunk end */
	word = VT_HDR(VT_REC_ALLOC, 65528);
	poke(copy, g_full.v[victim].offset, &word, sizeof word);
	expect_damage(copy, needle, victim, next);
	unlink(copy);
	free(copy);
}

static void test_garbage_chunk_is_skipped(void **state)
{
	(void)state;
	size_t first = first_in_chunk(2), next = first_in_chunk(3);
	char *copy = copy_log("badchunk");
	uint8_t garbage[CHUNK];
	srand(42);
	for (size_t i = 0; i < sizeof garbage; i++)
		garbage[i] = (uint8_t)rand();
	uint64_t off = VT_HEADER_SIZE + 2ull * CHUNK;
	poke(copy, off, garbage, sizeof garbage);
	char needle[96];
	snprintf(needle, sizeof needle, "damaged chunk at offset %llu", (unsigned long long)off);
	expect_damage_sealed(copy, needle, first, next, 0); /* a bad chunk magic: skipped whole */
	unlink(copy);
	free(copy);
}

static void test_overflowing_length_field(void **state)
{
	(void)state;
	size_t victim = 0;
	while (g_full.v[victim].type != VT_REC_MARK)
		victim++;
	char *copy = copy_log("badlen");
	uint16_t text_len = 60000;
	poke(copy, g_full.v[victim].offset + offsetof(struct vt_mark_rec, text_len), &text_len,
	     sizeof text_len);
	char needle[96];
	snprintf(needle, sizeof needle, "invalid mark record at offset %llu (text_len",
	         (unsigned long long)g_full.v[victim].offset);
	expect_damage(copy, needle, victim, victim + 1);
	unlink(copy);
	free(copy);
}

/* A kind this reader does not know (a newer writer): skipped, no warning. */
static void test_unknown_kind_skipped_quietly(void **state)
{
	(void)state;
	size_t victim = first_in_chunk(1) + 3;
	char *copy = copy_log("newkind");
	uint32_t word = VT_HDR(77, g_full.v[victim].size);
	poke(copy, g_full.v[victim].offset, &word, sizeof word);
	reseal(copy, VT_HEADER_SIZE + CHUNK); /* the newer writer sealed what it wrote */
	char err[256];
	lt_capture_begin();
	struct vt_log *log = vt_log_open_file(copy, err, sizeof err);
	struct lt_recs got = {0};
	if (log)
		lt_collect(log, &got);
	char *warn = lt_capture_end();
	assert_non_null(log);
	assert_string_equal(warn, "");
	assert_int_equal(vt_log_warnings(log), 0);
	assert_int_equal(got.n, g_full.n - 1);
	assert_int_equal(got.v[victim].offset, g_full.v[victim + 1].offset);
	free(warn);
	lt_recs_free(&got);
	vt_log_close(log);
	unlink(copy);
	free(copy);
}

/* A version-1 log (no 6-byte addresses) reads as it did: every record. */
static void test_version_1_still_reads(void **state)
{
	(void)state;
	char *copy = copy_log("v1");
	uint32_t v = 1;
	poke(copy, offsetof(struct vt_file_header, version), &v, sizeof v);
	char err[256] = "";
	struct vt_log *log = vt_log_open_file(copy, err, sizeof err);
	assert_non_null(log);
	struct lt_recs got;
	lt_collect(log, &got);
	assert_int_equal(got.n, g_full.n);
	assert_int_equal(vt_log_warnings(log), 0);
	lt_recs_free(&got);
	vt_log_close(log);
	unlink(copy);
	free(copy);
}

/* ---- hostile headers ---------------------------------------------------------- */

static void expect_refused(const char *tag, size_t off, const void *bytes, size_t n,
                           const char *needle)
{
	char *copy = copy_log(tag);
	poke(copy, off, bytes, n);
	char err[256] = "";
	assert_null(vt_log_open_file(copy, err, sizeof err));
	if (!strstr(err, needle))
		fail_msg("error '%s' does not say '%s'", err, needle);
	unlink(copy);
	free(copy);
}

static void test_hostile_headers_are_refused(void **state)
{
	(void)state;
	uint32_t v;
	expect_refused("magic", 0, "NOTATRACE", 8, "bad magic");
	v = VT_FORMAT_VERSION + 1;
	expect_refused("version", offsetof(struct vt_file_header, version), &v, 4, "version 3");
	v = 0;
	expect_refused("version0", offsetof(struct vt_file_header, version), &v, 4, "version 0");
	v = __builtin_bswap32(VT_BYTE_ORDER_MARK);
	expect_refused("order", offsetof(struct vt_file_header, byte_order), &v, 4, "byte order");
	v = 1000;
	expect_refused("chunk", offsetof(struct vt_file_header, chunk_size), &v, 4, "chunk size");
	v = 0xfffffff0u;
	expect_refused("hsize", offsetof(struct vt_file_header, header_size), &v, 4, "header size");
	/* lengths that lie are clamped, not trusted */
	char *copy = copy_log("exelen");
	v = 0xffffffffu;
	poke(copy, offsetof(struct vt_file_header, exe_len), &v, 4);
	poke(copy, offsetof(struct vt_file_header, cmdline_len), &v, 4);
	char err[256];
	struct vt_log *log = vt_log_open_file(copy, err, sizeof err);
	assert_non_null(log);
	assert_true(vt_log_header(log)->exe_len < sizeof vt_log_header(log)->exe);
	assert_true(vt_log_header(log)->cmdline_len <= sizeof vt_log_header(log)->cmdline);
	vt_log_close(log);
	unlink(copy);
	free(copy);
}

/* A hostile 1 TiB sparse file: holes are skipped, not indexed or scanned. */
static void test_huge_sparse_file(void **state)
{
	(void)state;
	char *copy = copy_log("sparse");
	if (truncate(copy, (off_t)1 << 40) < 0)
		assert_int_equal(truncate(copy, (off_t)1 << 34), 0);
	char err[256];
	struct vt_log *log = vt_log_open_file(copy, err, sizeof err);
	assert_non_null(log);
	struct lt_recs got;
	lt_collect(log, &got);
	assert_int_equal(got.n, g_full.n);
	assert_int_equal(vt_log_warnings(log), 1); /* its size is off a chunk boundary: said once */
	lt_recs_free(&got);
	vt_log_close(log);
	unlink(copy);
	free(copy);
}

/* ---- trace directories ----------------------------------------------------------- */

static int count_all(const struct vt_record_view *rec, void *ctx)
{
	(void)rec;
	++*(uint64_t *)ctx;
	return 0;
}

/* Stops the pass at the record that makes the count reach its limit. */
struct stop_at {
	uint64_t seen, limit;
};

static int stop_at_limit(const struct vt_record_view *rec, void *ctx)
{
	(void)rec;
	struct stop_at *s = ctx;
	return ++s->seen == s->limit ? 42 : 0;
}

/* vt_trace_for_each: every log's records, and an early stop ends the whole pass. */
static void check_trace_for_each(const struct vt_trace *t)
{
	uint64_t each = 0, all = 0;
	for (size_t i = 0; i < t->nlogs; i++)
		vt_log_for_each(t->logs[i], count_all, &each);
	assert_int_equal(vt_trace_for_each(t, count_all, &all), 0);
	assert_int_equal(all, each);
	assert_true(all > 2);
	struct stop_at s = {.limit = 2};
	assert_int_equal(vt_trace_for_each(t, stop_at_limit, &s), 42);
	assert_int_equal(s.seen, 2);
}

static void test_trace_dir(void **state)
{
	(void)state;
	char *dir = lt_make_dir();
	struct vt_trace t;
	char err[512] = "";
	assert_int_equal(vt_trace_open(dir, &t, err, sizeof err), -1);
	assert_non_null(strstr(err, "no vramtrace logs"));
	/* two writers + one impostor: sorted by pid, the impostor skipped */
	pid_t a = run_writer(dir, CHUNK, write_all), b = run_writer(dir, CHUNK, write_all);
	char *fake = lt_log_path(dir, 1, 0);
	FILE *f = fopen(fake, "w");
	fputs("not a log at all, but long enough? no.", f);
	fclose(f);
	lt_capture_begin();
	int rc = vt_trace_open(dir, &t, err, sizeof err);
	char *warn = lt_capture_end();
	assert_int_equal(rc, 0);
	assert_int_equal(t.nlogs, 2);
	assert_int_equal(lt_count_lines(warn), 1);
	assert_non_null(strstr(warn, fake));
	pid_t lo = a < b ? a : b;
	assert_int_equal(vt_log_header(t.logs[0])->pid, lo);
	assert_true(vt_trace_start_ns(&t) <= vt_log_header(t.logs[1])->clock_base_ns);
	check_trace_for_each(&t);
	vt_trace_close(&t);
	/* a single file works as a trace */
	char *one = lt_log_path(dir, a, 0);
	assert_int_equal(vt_trace_open(one, &t, err, sizeof err), 0);
	assert_int_equal(t.nlogs, 1);
	vt_trace_close(&t);
	free(warn);
	free(one);
	free(fake);
	lt_remove_dir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_kind_round_trips),
	    cmocka_unit_test(test_header_says_exited),
	    cmocka_unit_test(test_cut_at_every_byte_of_the_tail),
	    cmocka_unit_test(test_damaged_record_skips_to_next_chunk),
	    cmocka_unit_test(test_garbage_chunk_is_skipped),
	    cmocka_unit_test(test_overflowing_length_field),
	    cmocka_unit_test(test_unknown_kind_skipped_quietly),
	    cmocka_unit_test(test_version_1_still_reads),
	    cmocka_unit_test(test_hostile_headers_are_refused),
	    cmocka_unit_test(test_huge_sparse_file),
	    cmocka_unit_test(test_trace_dir),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
