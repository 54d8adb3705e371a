/* Lock-free string intern table (see pyframes_intern.h).
 *
 * Slots hold a 64-bit hash of the text (0 = empty) and the id (0 = being
 * published). The hash is the identity: two different names colliding in
 * 64 bits among the few thousand a job uses is not a practical concern.
 * Insert: CAS the empty slot's key from 0 to the hash; the winner writes the
 * string record and only then release-stores the id, so no thread can use an
 * id whose record is not in the log yet. A thread that finds the key but not
 * yet the id does not wait: it writes its own record under a fresh id (the
 * reader keys names by text), and keeps using the published id afterwards.
 * If the winner could not write the record (log off or full), the slot says
 * so and later users try to write their own.
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "log_writer.h"
#include "pyframes_intern.h"

#define TABLE_BITS 16
#define TABLE_SLOTS (1u << TABLE_BITS)
#define TABLE_LIMIT (TABLE_SLOTS / 4 * 3) /* stop inserting at 75% full */
#define MAX_TEXT 4096u                    /* longer names are cut */
#define SPIN_LIMIT 4096                   /* ~a few microseconds */
#define ID_UNWRITTEN UINT32_MAX           /* the winner could not write it */

struct slot {
	_Atomic uint64_t key;
	_Atomic uint32_t id;
	uint32_t pad;
};

static struct slot *table;
static _Atomic uint32_t next_id = 1;
static _Atomic uint32_t used;

int vt_py_intern_init(void)
{
	if (table)
		return 0;
	void *mem = mmap(NULL, TABLE_SLOTS * sizeof(struct slot), PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		return -1;
	table = mem;
	return 0;
}

void vt_py_intern_reset(void)
{
	if (table)
		madvise(table, TABLE_SLOTS * sizeof(struct slot), MADV_DONTNEED); /* reads as 0 */
	atomic_store(&used, 0);
}

uint32_t vt_py_intern_count(void)
{
	return atomic_load_explicit(&used, memory_order_relaxed);
}

/* FNV-1a, then a final mix so the low bits (the slot index) are good. */
static uint64_t text_hash(const char *text, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ len;
	for (uint32_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)text[i]) * 0x100000001b3ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h ? h : 1;
}

static uint32_t write_record(const char *text, uint32_t len)
{
	uint32_t size = VT_ALIGN8((uint32_t)sizeof(struct vt_pystr_rec) + len);
	struct vt_pystr_rec *rec = vt_log_reserve(size);
	if (!rec)
		return 0;
	uint32_t id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
	rec->id = id;
	rec->len = len;
	memcpy(rec->text, text, len);
	vt_log_commit(rec, VT_REC_PYSTR, size);
	return id;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* The id another thread is publishing: wait a bounded moment (it is writing
 * one small record), then give up and write our own copy rather than block. */
static uint32_t published_id(struct slot *s, const char *text, uint32_t len)
{
	for (int spins = 0; spins < SPIN_LIMIT; spins++) {
		uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
		if (id == ID_UNWRITTEN)
			break;
		if (id)
			return id;
		cpu_relax();
	}
	return write_record(text, len);
}

uint32_t vt_py_intern(const char *text, uint32_t len)
{
	if (!table)
		return 0;
	if (len > MAX_TEXT)
		len = MAX_TEXT;
	uint64_t h = text_hash(text, len);
	for (uint32_t i = (uint32_t)h & (TABLE_SLOTS - 1), probes = 0; probes < TABLE_SLOTS;
	     i = (i + 1) & (TABLE_SLOTS - 1), probes++) {
		struct slot *s = &table[i];
		uint64_t key = atomic_load_explicit(&s->key, memory_order_acquire);
		if (key == 0) {
			if (atomic_load_explicit(&used, memory_order_relaxed) >= TABLE_LIMIT)
				return write_record(text, len); /* full: unshared id */
			if (!atomic_compare_exchange_strong_explicit(&s->key, &key, h,
			                                             memory_order_acq_rel,
			                                             memory_order_acquire)) {
				if (key != h)
					continue; /* lost the slot to another string */
			} else {
				atomic_fetch_add_explicit(&used, 1, memory_order_relaxed);
				uint32_t id = write_record(text, len);
				atomic_store_explicit(&s->id, id ? id : ID_UNWRITTEN, memory_order_release);
				return id;
			}
		}
		if (key == h)
			return published_id(s, text, len);
	}
	return write_record(text, len);
}
