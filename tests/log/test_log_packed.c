/* The packed event (VT_REC_PACKED, vramtrace/event_packed.h):
 *  - the codec gives back every field exactly, for extreme values too
 *    (seq and time before the chunk's bases, all bits set, negative results);
 *  - a damaged packed record is refused, never half-decoded;
 *  - the word-at-a-time decoder agrees with a byte-at-a-time reference
 *    decoder on random events and on every kind of damage done to them,
 *    in each form the reader may call (portable, BMI2);
 *  - the form that decodes a run of records decodes each as the one-record
 *    form does and leaves the damaged ones to its caller;
 *  - written by the writer across many chunks (each with its own bases) and
 *    read back, every event arrives as the plain vt_event it stands for, in
 *    seq order with plain events, smaller on disk than the 64-byte form;
 *  - a damaged packed record in a log is warned about once and skipped. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log_test_util.h"
#include "log_writer.h"
#include "packed_decode.h"
#include "vramtrace/event_packed.h"

static const struct vt_event samples[] = {
    {.stack_id = 1, .seq = 100, .t_ns = 5000, .addr = 0x7f0000000000ull, .api = 3},
    {.stack_id = 0, .seq = 99, .t_ns = 4999, .addr = 0, .bytes = 256, .kind = 2, .result = 2},
    {.stack_id = UINT32_MAX,
     .seq = UINT64_MAX,
     .t_ns = UINT64_MAX,
     .addr = UINT64_MAX,
     .bytes = UINT64_MAX,
     .aux = UINT64_MAX,
     .stream = UINT64_MAX,
     .api = 255,
     .rt_api = 255,
     .device = 255,
     .kind = 255,
     .result = INT32_MIN},
    {.seq = 0,
     .t_ns = 0,
     .addr = 1,
     .aux = 0x1234,
     .stream = 0x55,
     .device = 7,
     .rt_api = 9,
     .result = -1},
};

static void codec_round_trip(void **state)
{
	(void)state;
	const uint64_t bases[][2] = {
	    {0, 0}, {100, 5000}, {UINT64_MAX, UINT64_MAX}, {1u << 20, 1ull << 40}};
	for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++) {
		for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
			for (uint32_t type = VT_REC_ALLOC; type <= VT_REC_POOL_TRIM; type++) {
				uint8_t buf[VT_PACKED_MAX_SIZE] = {0};
				uint32_t size = vt_packed_encode(buf, type, &samples[i],
				                                 bases[b][0], bases[b][1]);
				assert_true(size >= 16 && size <= VT_PACKED_MAX_SIZE &&
				            size % 8 == 0);
				struct vt_event out, want = samples[i];
				want.hdr = VT_HDR(type, sizeof want);
				assert_null(vt_packed_decode(buf, size, sizeof buf, bases[b][0],
				                             bases[b][1], &out));
				assert_memory_equal(&out, &want, sizeof want);
			}
		}
	}
	/* the common case is small: a free of a device address in 16 bytes,
	 * its address in 6 fixed bytes (a varint would take 7, and 24 in all) */
	uint8_t buf[VT_PACKED_MAX_SIZE] = {0};
	struct vt_event release = samples[0];
	release.device = VT_DEVICE_UNKNOWN; /* what the shim records for a free */
	assert_int_equal(vt_packed_encode(buf, VT_REC_FREE, &release, 90, 4990), 16);
	assert_true(buf[6] & VT_PK_ADDR48);
	/* below 2^42 an address stays a varint (5 bytes or fewer below 2^35) */
	struct vt_event low = release;
	low.addr = 0x302000000ull;
	memset(buf, 0, sizeof buf);
	vt_packed_encode(buf, VT_REC_FREE, &low, 90, 4000);
	assert_false(buf[6] & VT_PK_ADDR48);
}

/* The format's reference decoder: one byte at a time, exactly as the
 * layout in event_packed.h reads. The product's decoder must agree with it
 * on every input (same acceptance, same event). */
static int ref_decode(const uint8_t *rec, uint32_t size, uint64_t base_seq, uint64_t base_t,
                      struct vt_event *ev)
{
	if (size < 16 || size > VT_PACKED_MAX_SIZE || (size & 7u))
		return -1;
	const uint8_t *p = rec + VT_PACKED_FIXED, *end = rec + size;
	uint8_t present = rec[6];
	if (!vt_packed_type_ok(rec[4]))
		return -1;
	memset(ev, 0, sizeof *ev);
	ev->hdr = VT_HDR(rec[4], sizeof *ev);
	ev->api = rec[5];
	ev->device = vt_packed_default_device(rec[4]);
	uint64_t stack, dseq, dt, v;
	if (vt_get_varint(&p, end, &stack) || stack > UINT32_MAX || vt_get_varint(&p, end, &dseq) ||
	    vt_get_varint(&p, end, &dt))
		return -1;
	if (present & VT_PK_ADDR48) {
		for (unsigned i = 0; i < 6; i++) {
			if (p >= end)
				return -1;
			ev->addr |= (uint64_t)*p++ << (8 * i);
		}
	} else if (vt_get_varint(&p, end, &ev->addr)) {
		return -1;
	}
	ev->stack_id = (uint32_t)stack;
	ev->seq = base_seq + (uint64_t)vt_unzigzag(dseq);
	ev->t_ns = base_t + (uint64_t)vt_unzigzag(dt);
	uint8_t *small[3] = {&ev->rt_api, &ev->device, &ev->kind};
	for (unsigned i = 0; i < 3; i++) {
		if (!(present & (1u << i)))
			continue;
		if (p >= end)
			return -1;
		*small[i] = *p++;
	}
	uint64_t *wide[3] = {&ev->bytes, &ev->aux, &ev->stream};
	for (unsigned i = 0; i < 3; i++)
		if ((present & (VT_PK_BYTES << i)) && vt_get_varint(&p, end, wide[i]))
			return -1;
	if (present & VT_PK_RESULT) {
		if (vt_get_varint(&p, end, &v))
			return -1;
		ev->result = (int32_t)vt_unzigzag(v);
	}
	while (p < end)
		if (*p++)
			return -1;
	return 0;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* A value of random magnitude (0, small, 7-bit boundaries, all 64 bits). */
static uint64_t rnd_value(void)
{
	unsigned bits = (unsigned)(rnd() % 65);
	return bits == 0 ? 0 : rnd() >> (64 - bits);
}

static struct vt_event rnd_event(void)
{
	struct vt_event ev = {
	    .stack_id = (uint32_t)rnd_value(),
	    .seq = rnd_value(),
	    .t_ns = rnd_value(),
	    .addr = rnd_value(),
	    .bytes = rnd() % 2 ? rnd_value() : 0,
	    .aux = rnd() % 4 ? 0 : rnd_value(),
	    .stream = rnd() % 2 ? rnd_value() : 0,
	    .api = (uint8_t)rnd(),
	    .rt_api = (uint8_t)(rnd() % 2 ? rnd() : 0),
	    .device = (uint8_t)(rnd() % 2 ? rnd() : 0),
	    .kind = (uint8_t)(rnd() % 2 ? rnd() : 0),
	    .result = rnd() % 3 ? 0 : (int32_t)rnd(),
	};
	return ev;
}

/* Damage a record the ways a torn or hostile log does: a flipped bit, a
 * random byte, a "more" bit set, a shorter or longer size. */
static uint32_t damage(uint8_t *buf, uint32_t size)
{
	switch (rnd() % 5) {
	case 0:
		buf[rnd() % VT_PACKED_MAX_SIZE] ^= (uint8_t)(1u << (rnd() % 8));
		return size;
	case 1:
		buf[4 + rnd() % (VT_PACKED_MAX_SIZE - 4)] = (uint8_t)rnd();
		return size;
	case 2:
		buf[VT_PACKED_FIXED + rnd() % (size - VT_PACKED_FIXED)] |= 0x80;
		return size;
	case 3:
		return size > 16 ? size - 8 : size;
	default:
		return size + 8 <= VT_PACKED_MAX_SIZE ? size + 8 : size;
	}
}

/* Random events, half of them damaged, each decoded in place (random bytes
 * after the record, as the next record in a log) and from the end of a
 * mapping (nothing readable after it). */
static void decoder_matches_reference(vt_packed_decode_fn decode)
{
	unsigned accepted_damaged = 0, refused = 0;
	for (unsigned i = 0; i < 200000; i++) {
		uint8_t buf[VT_PACKED_MAX_SIZE + 16] = {0};
		struct vt_event ev = rnd_event(), want, got;
		uint64_t bs = rnd_value(), bt = rnd_value();
		uint32_t type =
		    VT_REC_ALLOC + (uint32_t)(rnd() % (VT_REC_POOL_TRIM - VT_REC_ALLOC + 1));
		uint32_t size = vt_packed_encode(buf, type, &ev, bs, bt);
		int damaged = i % 2;
		if (damaged)
			size = damage(buf, size);
		for (size_t k = size; k < sizeof buf; k++)
			buf[k] = (uint8_t)rnd();
		uint64_t readable = i % 4 < 2 ? size : sizeof buf;
		int ref = ref_decode(buf, size, bs, bt, &want);
		const char *fast = decode(buf, size, readable, bs, bt, &got);
		assert_int_equal(ref == 0, fast == NULL);
		if (ref == 0)
			assert_memory_equal(&got, &want, sizeof want);
		if (!damaged)
			assert_int_equal(ref, 0);
		accepted_damaged += damaged && ref == 0;
		refused += ref != 0;
	}
	/* both sides of the comparison were exercised */
	assert_true(refused > 10000 && accepted_damaged > 1000);
}

/* The decoder as the header inlines it, and each form the analyzer's
 * reader may call (packed_decode.h). */
static const char *inline_decode(const uint8_t *rec, uint32_t size, uint64_t readable, uint64_t bs,
                                 uint64_t bt, struct vt_event *ev)
{
	return vt_packed_decode(rec, size, readable, bs, bt, ev);
}

static void fast_decoder_matches_reference(void **state)
{
	(void)state;
	decoder_matches_reference(inline_decode);
}

static void portable_form_matches_reference(void **state)
{
	(void)state;
	decoder_matches_reference(vt_packed_decode_portable);
}

/* Checked wherever the CPU has BMI2, fast PEXT or not. */
static void bmi2_form_matches_reference(void **state)
{
	(void)state;
#if defined(__x86_64__)
	if (vt_packed_decode_bmi2 && __builtin_cpu_supports("bmi") &&
	    __builtin_cpu_supports("bmi2")) {
		decoder_matches_reference(vt_packed_decode_bmi2);
		return;
	}
#endif
	skip(); /* not built for this machine, or its CPU lacks BMI2 */
}

/* A run of records back to back, as in a chunk, a third of them damaged
 * in their fields (their fixed part stays sound, as the reader's index
 * checked it), the last ones at the end of what is readable: the run form
 * decodes each record as vt_packed_decode does, and stops exactly at the
 * ones it leaves to its caller (damaged, or too near the end). */
static void run_matches_decoder(vt_packed_run_fn run)
{
	enum { RECORDS = 4000 };
	static uint8_t buf[RECORDS * VT_PACKED_MAX_SIZE];
	static uint32_t off[RECORDS + 1];
	static struct vt_event out[RECORDS];
	uint64_t bs = rnd_value(), bt = rnd_value();
	uint32_t n = 0, len = 0;
	memset(buf, 0, sizeof buf);
	for (; n < RECORDS; n++) {
		struct vt_event ev = rnd_event();
		uint32_t type =
		    VT_REC_ALLOC + (uint32_t)(rnd() % (VT_REC_POOL_TRIM - VT_REC_ALLOC + 1));
		uint8_t one[VT_PACKED_MAX_SIZE + 8] = {0};
		uint32_t size = vt_packed_encode(one, type, &ev, bs, bt);
		if (n % 3 == 0)
			one[VT_PACKED_FIXED + rnd() % (size - VT_PACKED_FIXED)] |= 0x80;
		uint32_t word = VT_HDR(VT_REC_PACKED, size);
		memcpy(one, &word, sizeof word);
		memcpy(buf + len, one, size);
		off[n] = len;
		len += size;
	}
	off[n] = len;
	uint32_t at = 0, runs = 0, left = 0;
	while (at < n) {
		const uint8_t *from = buf + off[at];
		uint32_t got = run(&from, buf + len, buf + len, bs, bt, out, 1 + rnd() % 64);
		assert_ptr_equal(from, buf + off[at + got]); /* moved past what it decoded */
		for (uint32_t k = 0; k < got; k++) {
			struct vt_event want;
			assert_null(vt_packed_decode(buf + off[at + k],
			                             off[at + k + 1] - off[at + k],
			                             len - off[at + k], bs, bt, &want));
			assert_memory_equal(&out[k], &want, sizeof want);
		}
		at += got;
		runs += got > 0;
		if (at < n && !got) { /* left to the caller: damaged, or at the end */
			struct vt_event want;
			uint32_t size = off[at + 1] - off[at];
			assert_true(
			    len - off[at] < size + 8 ||
			    vt_packed_decode(buf + off[at], size, len - off[at], bs, bt, &want));
			left++;
			at++;
		}
	}
	assert_true(runs > 100 && left > 100); /* both ways were taken */
}

static void run_forms_match_decoder(void **state)
{
	(void)state;
	run_matches_decoder(vt_packed_decode_run_portable);
#if defined(__x86_64__)
	if (vt_packed_decode_run_bmi2 && __builtin_cpu_supports("bmi") &&
	    __builtin_cpu_supports("bmi2"))
		run_matches_decoder(vt_packed_decode_run_bmi2);
#endif
}

static uint32_t encode_one(uint8_t *buf, const struct vt_event *ev)
{
	memset(buf, 0, VT_PACKED_MAX_SIZE);
	return vt_packed_encode(buf, VT_REC_ALLOC, ev, 0, 0);
}

static void damage_is_refused(void **state)
{
	(void)state;
	uint8_t buf[VT_PACKED_MAX_SIZE];
	struct vt_event out;
	uint32_t size = encode_one(buf, &samples[2]);
	buf[4] = VT_REC_STACK; /* not an event */
	assert_non_null(vt_packed_decode(buf, size, sizeof buf, 0, 0, &out));
	/* a 6-byte address that runs past the record: stack, seq and time take
	 * 4 bytes, the address would end at byte 17 of 16 */
	memset(buf, 0, sizeof buf);
	buf[4] = VT_REC_FREE;
	buf[6] = VT_PK_ADDR48;
	assert_null(vt_packed_decode(buf, 16, sizeof buf, 0, 0, &out)); /* 3 bytes: fits */
	buf[7] = 0x81;                                                  /* a stack id of 2 bytes */
	buf[8] = 0x01;
	assert_non_null(vt_packed_decode(buf, 16, sizeof buf, 0, 0, &out));
	size = encode_one(buf, &samples[2]);
	assert_non_null(vt_packed_decode(buf, size - 8, sizeof buf, 0, 0, &out)); /* cut short */
	size = encode_one(buf, &samples[0]);
	buf[size - 1] = 1; /* padding must be zero */
	assert_non_null(vt_packed_decode(buf, size, sizeof buf, 0, 0, &out));
	memset(buf, 0xff, sizeof buf); /* endless varints */
	buf[4] = VT_REC_ALLOC;
	buf[6] = 0;
	assert_non_null(vt_packed_decode(buf, VT_PACKED_MAX_SIZE, sizeof buf, 0, 0, &out));
	assert_non_null(vt_packed_decode(buf, 8, sizeof buf, 0, 0, &out));  /* below the minimum */
	assert_non_null(vt_packed_decode(buf, 88, sizeof buf, 0, 0, &out)); /* over the maximum */
}

struct seen {
	const struct vt_log *log;
	uint64_t n, bad, stored_total, last_seq;
};

static int check_event(const struct vt_record_view *rec, void *ctx)
{
	struct seen *s = ctx;
	if (rec->type < VT_REC_ALLOC || rec->type > VT_REC_POOL_TRIM)
		return 0;
	const struct vt_event *e = rec->data;
	uint64_t i = e->bytes; /* the writer's counter */
	int ok = rec->size == sizeof *e && e->hdr == VT_HDR(rec->type, sizeof *e) &&
	         e->seq > s->last_seq && e->addr == 0x7f0000000000ull + 256 * i &&
	         e->t_ns == 1000 + 7 * i && e->stack_id == i % 5 && e->result == (i % 3 ? 0 : -2) &&
	         rec->type == (i % 2 ? VT_REC_FREE : VT_REC_ALLOC);
	s->bad += !ok;
	s->last_seq = e->seq;
	s->stored_total += vt_log_stored_size(s->log, rec);
	s->n++;
	return 0;
}

/* One log per process: each writer runs in a forked child. */
static pid_t run_writer(const char *dir, uint32_t chunk_size, void (*body)(void))
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct vt_log_config cfg = {.dir = dir, .chunk_size = chunk_size};
		if (vt_log_init(&cfg) < 0)
			_exit(9);
		body();
		vt_log_finish(0);
		_exit(0);
	}
	assert_int_equal(lt_wait(pid), 0);
	return pid;
}

#define N_EVENTS 5000u

static void write_many(void)
{
	for (uint64_t i = 0; i < N_EVENTS; i++) {
		struct vt_event ev = {.stack_id = (uint32_t)(i % 5),
		                      .seq = vt_log_next_seq(),
		                      .t_ns = 1000 + 7 * i,
		                      .addr = 0x7f0000000000ull + 256 * i,
		                      .bytes = i,
		                      .result = i % 3 ? 0 : -2};
		uint32_t type = i % 2 ? VT_REC_FREE : VT_REC_ALLOC;
		/* plain events interleave */
		int rc =
		    i % 100 == 50 ? vt_log_write_event(type, &ev) : vt_log_write_packed(type, &ev);
		if (rc)
			_exit(10);
	}
}

static void written_and_read_back(void **state)
{
	(void)state;
	char *dir = lt_make_dir();
	pid_t pid = run_writer(dir, 8192, write_many); /* many chunks, many bases */
	const uint64_t n = N_EVENTS;
	char *path = lt_log_path(dir, pid, 0);
	char err[256];
	struct vt_log *log = vt_log_open_file(path, err, sizeof err);
	assert_non_null(log);
	struct seen s = {.log = log};
	assert_int_equal(vt_log_for_each(log, check_event, &s), 0);
	assert_int_equal(vt_log_warnings(log), 0);
	assert_int_equal(s.n, n);
	assert_int_equal(s.bad, 0);
	assert_true(s.stored_total < n * 40); /* 64 for the 50 plain ones */
	vt_log_close(log);
	free(path);
	lt_remove_dir(dir);
	free(dir);
}

/* A packed record whose fixed part is sound and whose fields are not: its
 * varints never end. Only decoding it finds that (the open-time scan checks
 * the fixed part). */
static void write_bad_fields(void)
{
	uint8_t *bad = vt_log_reserve(24);
	if (!bad)
		_exit(13);
	bad[4] = VT_REC_ALLOC;
	memset(bad + VT_PACKED_FIXED, 0xff, 24 - VT_PACKED_FIXED);
	vt_log_commit(bad, VT_REC_PACKED, 24);
}

static void write_pair_around_damage(uint64_t first_seq, uint64_t second_seq)
{
	struct vt_event ev = {.seq = first_seq, .t_ns = 10, .addr = 0x1000 + first_seq};
	if (vt_log_write_packed(VT_REC_ALLOC, &ev))
		_exit(10);
	write_bad_fields();
	ev.seq = second_seq;
	if (vt_log_write_packed(VT_REC_FREE, &ev))
		_exit(12);
}

static void *other_thread(void *arg)
{
	(void)arg;
	write_pair_around_damage(2, 3); /* between the main thread's 1 and 4 */
	return NULL;
}

/* Two threads (so the reader merges streams), each with a record whose
 * fields do not decode between its events; the main thread's log also has
 * one whose fixed part names no event type. */
static void write_with_damage(void)
{
	struct vt_event ev = {.seq = 1, .t_ns = 10, .addr = 0x1000};
	if (vt_log_write_packed(VT_REC_ALLOC, &ev))
		_exit(10);
	uint8_t *bad = vt_log_reserve(24); /* inner type 0: not an event */
	if (!bad)
		_exit(11);
	bad[7] = 1;
	vt_log_commit(bad, VT_REC_PACKED, 24);
	write_bad_fields();
	pthread_t t;
	if (pthread_create(&t, NULL, other_thread, NULL) || pthread_join(t, NULL))
		_exit(14);
	ev.seq = 4;
	if (vt_log_write_packed(VT_REC_FREE, &ev))
		_exit(12);
}

/* Every damaged record is warned about once (a second pass is quiet) and
 * skipped; the events around it arrive, in seq order across the threads. */
static void damaged_record_skipped(void **state)
{
	(void)state;
	char *dir = lt_make_dir();
	pid_t pid = run_writer(dir, 0, write_with_damage);
	char *path = lt_log_path(dir, pid, 0);
	char err[256];
	lt_capture_begin();
	struct vt_log *log = vt_log_open_file(path, err, sizeof err);
	assert_non_null(log);
	for (int pass = 0; pass < 2; pass++) {
		struct lt_recs r = {0};
		lt_collect(log, &r);
		assert_int_equal(vt_log_warnings(log), 3);
		uint64_t seqs[8], events = 0;
		for (size_t i = 0; i < r.n; i++) {
			assert_int_not_equal(r.v[i].type, VT_REC_PACKED); /* never delivered raw */
			if ((r.v[i].type == VT_REC_ALLOC || r.v[i].type == VT_REC_FREE) &&
			    events < 8)
				seqs[events++] =
				    ((const struct vt_event *)(const void *)r.v[i].bytes)->seq;
		}
		assert_int_equal(events, 4);
		for (uint64_t i = 0; i < events; i++)
			assert_int_equal(seqs[i], i + 1);
		lt_recs_free(&r);
	}
	char *warn = lt_capture_end();
	assert_non_null(strstr(warn, "not an event type"));
	assert_non_null(strstr(warn, "field runs past the record"));
	free(warn);
	vt_log_close(log);
	free(path);
	lt_remove_dir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(codec_round_trip),
	    cmocka_unit_test(damage_is_refused),
	    cmocka_unit_test(fast_decoder_matches_reference),
	    cmocka_unit_test(portable_form_matches_reference),
	    cmocka_unit_test(bmi2_form_matches_reference),
	    cmocka_unit_test(run_forms_match_decoder),
	    cmocka_unit_test(written_and_read_back),
	    cmocka_unit_test(damaged_record_skipped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
