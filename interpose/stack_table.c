/* Per-thread stack dedupe table: uthash over an mmap arena (stack_table.h). */
#define _GNU_SOURCE
#include "stack_table.h"

#include "arena.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* uthash allocates its table and bucket arrays through these. Tables are
 * per-thread and so is the arena they draw from: tls_uthash_arena is set by
 * the one function that adds entries (the only one that can allocate). Freed
 * bucket arrays (after an expansion) stay in the arena until the table is
 * dropped: at most the size of the final bucket array is wasted. */
static __thread struct vt_arena *tls_uthash_arena __attribute__((tls_model("initial-exec")));
static __thread int tls_uthash_oom __attribute__((tls_model("initial-exec")));
#define uthash_malloc(sz) vt_arena_alloc(tls_uthash_arena, (sz))
#define uthash_free(ptr, sz) ((void)(ptr), (void)(sz))
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (tls_uthash_oom = 1)
#include <uthash.h>

/* ---- the table ---------------------------------------------------------- */

struct entry {
	UT_hash_handle hh;
	uint32_t id;
	uint64_t key[];
};

/* The entries found last, direct-mapped by the innermost frame: a loop that
 * allocates from the same place again finds its stack with one compare,
 * without hashing the whole key (callgrind, 24 frames: the hash and the
 * table's probe were ~170 of the ~390 instructions a capture spends beside
 * unwinding). */
#define RECENT_SLOTS 16u

struct vt_stack_table {
	struct vt_arena arena;
	struct entry *recent[RECENT_SLOTS]; /* into the arena: cleared with it */
	struct entry *head;
	size_t count;
	unsigned epoch;  /* table_epoch when built; stale after fork */
	int live;        /* set up in this thread */
};

static _Atomic unsigned table_epoch;
static size_t table_cap;  /* bytes, read once from the environment */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int exit_key_ok;
/* initial-exec: read on every capture, without a __tls_get_addr call */
static __thread struct vt_stack_table tls_table __attribute__((tls_model("initial-exec")));

static void table_drop(struct vt_stack_table *t)
{
	memset(t->recent, 0, sizeof t->recent);
	vt_arena_release(&t->arena);
	t->head = NULL;
	t->count = 0;
}

/* Thread exit: give the thread's arena back. */
static void table_at_thread_exit(void *p)
{
	struct vt_stack_table *t = p;
	table_drop(t);
	t->live = 0;
}

static void read_config(void)
{
	table_cap = VT_STACK_TABLE_DEFAULT_CAP;
	const char *s = getenv("VRAMTRACE_STACK_TABLE_MB");
	if (s && *s) {
		char *end;
		unsigned long mb = strtoul(s, &end, 10);
		if (!*end && mb > 0 && mb < (1ul << 20))
			table_cap = (size_t)mb << 20;
	}
	exit_key_ok = pthread_key_create(&exit_key, table_at_thread_exit) == 0;
}

struct vt_stack_table *vt_stack_table_self(void)
{
	struct vt_stack_table *t = &tls_table;
	unsigned epoch = atomic_load_explicit(&table_epoch, memory_order_relaxed);
	if (__builtin_expect(t->live && t->epoch == epoch, 1))
		return t;
	pthread_once(&once, read_config);
	if (t->live) {
		/* forked: the entries name records of the parent's log. The
		 * arena pages are this process's copy: release them. */
		table_drop(t);
	} else if (exit_key_ok) {
		pthread_setspecific(exit_key, t);
	}
	t->arena.cap = table_cap;
	t->epoch = epoch;
	t->live = 1;
	return t;
}

void vt_stack_table_invalidate_all(void)
{
	atomic_fetch_add_explicit(&table_epoch, 1, memory_order_relaxed);
}

/* Four independent multiply chains, so the CPU overlaps them: one chain
 * costs ~5 cycles a word (the multiply waits for the previous one), which
 * for 128 frames was most of a dedupe hit. The lanes are four scalars, not
 * an array: gcc kept h[4] in memory and looped over the lanes (12
 * instructions a word; 4 now). The value is the same as before. */
uint32_t vt_stack_hash(const uint64_t *words, size_t nwords)
{
	const uint64_t k = 0xff51afd7ed558ccdull;
	uint64_t h0 = 0x243f6a8885a308d3ull ^ nwords, h1 = 0x13198a2e03707344ull,
		 h2 = 0xa4093822299f31d0ull, h3 = 0x082efa98ec4e6c89ull;
	size_t i = 0;
	for (; i + 4 <= nwords; i += 4) {
		h0 = (h0 ^ words[i]) * k;
		h1 = (h1 ^ words[i + 1]) * k;
		h2 = (h2 ^ words[i + 2]) * k;
		h3 = (h3 ^ words[i + 3]) * k;
	}
	/* the tail goes to lanes 0.. in order (i is a multiple of 4 here) */
	if (i < nwords)
		h0 = (h0 ^ words[i++]) * k;
	if (i < nwords)
		h1 = (h1 ^ words[i++]) * k;
	if (i < nwords)
		h2 = (h2 ^ words[i]) * k;
	uint64_t x = h0 ^ (h1 >> 17 | h1 << 47) ^ (h2 >> 31 | h2 << 33) ^ (h3 >> 47 | h3 << 17);
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 29;
	return (uint32_t)(x ^ (x >> 32));
}

/* key[1], the innermost kept frame (the depth word when there is none) */
static unsigned recent_slot(const uint64_t *key, size_t nwords)
{
	uint64_t w = key[nwords > 1];
	return (unsigned)((w ^ w >> 7 ^ w >> 15) % RECENT_SLOTS);
}

uint32_t vt_stack_table_find_recent(struct vt_stack_table *t, const uint64_t *key, size_t nwords)
{
	const struct entry *e = t->recent[recent_slot(key, nwords)];
	size_t bytes = nwords * sizeof *key;
	return e && e->hh.keylen == bytes && memcmp(e->key, key, bytes) == 0 ? e->id : 0;
}

uint32_t vt_stack_table_find(struct vt_stack_table *t, const uint64_t *key, size_t nwords,
			     uint32_t hash)
{
	struct entry *e = NULL;
	HASH_FIND_BYHASHVALUE(hh, t->head, key, (unsigned)(nwords * sizeof *key), hash, e);
	if (!e)
		return 0;
	t->recent[recent_slot(key, nwords)] = e;
	return e->id;
}

static int try_insert(struct vt_stack_table *t, const uint64_t *key, size_t nwords,
		      uint32_t hash, uint32_t id)
{
	size_t keybytes = nwords * sizeof *key;
	struct entry *e = vt_arena_alloc(&t->arena, sizeof *e + keybytes);
	if (!e)
		return -1;
	memset(e, 0, sizeof *e);
	memcpy(e->key, key, keybytes);
	e->id = id;
	tls_uthash_arena = &t->arena;
	tls_uthash_oom = 0;
	HASH_ADD_KEYPTR_BYHASHVALUE(hh, t->head, e->key, (unsigned)keybytes, hash, e);
	if (tls_uthash_oom)
		return -1;
	t->recent[recent_slot(key, nwords)] = e;
	t->count++;
	return 0;
}

int vt_stack_table_insert(struct vt_stack_table *t, const uint64_t *key, size_t nwords,
			  uint32_t hash, uint32_t id)
{
	if (try_insert(t, key, nwords, hash, id) == 0)
		return 0;
	/* Arena full: start over rather than grow without bound. Stacks seen
	 * again get new ids and records; the reader folds the duplicates. */
	table_drop(t);
	return try_insert(t, key, nwords, hash, id);
}

size_t vt_stack_table_count(const struct vt_stack_table *t)
{
	return t->count;
}

size_t vt_stack_table_bytes(const struct vt_stack_table *t)
{
	return t->arena.bytes;
}
