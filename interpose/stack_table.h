/* Per-thread table of the stacks a thread has already written to the log.
 *
 * The capture path asks "has THIS thread written this frame list before?"
 * and gets back the id it was given, or 0. Each thread owns its table, so
 * lookups and inserts take no lock; the table and its entries live in an mmap
 * arena owned by the thread (uthash's uthash_malloc/uthash_free are pointed
 * at it), so the hot path never calls malloc.
 *
 * The key of an entry is the whole word array the stack record carries:
 *   key[0]            = depth | py_depth << 16   (so a 3+1 and a 4+0 never match)
 *   key[1 .. depth]   = native frames, innermost first
 *   key[depth+1 .. ]  = 2 * py_depth Python words (pyframes.h)
 * uthash compares full keys on equal hash values, so a hash collision can
 * never merge two different stacks.
 *
 * A table is dropped and rebuilt (ids handed out again, records written
 * again) after fork() — the child writes its own log, which holds none of the
 * parent's stack records — and when its arena passes the size cap, so a job
 * with unbounded unique stacks costs bounded memory per thread.
 */
#ifndef VT_STACK_TABLE_H
#define VT_STACK_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* Default cap on one thread's table memory (override VRAMTRACE_STACK_TABLE_MB). */
#define VT_STACK_TABLE_DEFAULT_CAP (64u << 20)

struct vt_stack_table;

/* The calling thread's table, created on first use. NULL when it cannot be
 * created (mmap failed): the caller then records no stack. */
struct vt_stack_table *vt_stack_table_self(void);

/* 32-bit hash of `nwords` words (the key layout above). Deterministic. */
uint32_t vt_stack_hash(const uint64_t *words, size_t nwords);

/* The id of a key found or added lately (a small cache in front of the
 * table, no hash needed), or 0: then ask vt_stack_table_find. */
uint32_t vt_stack_table_find_recent(struct vt_stack_table *t, const uint64_t *key, size_t nwords);

/* The id this thread gave the key, or 0 if it has none yet. */
uint32_t vt_stack_table_find(struct vt_stack_table *t, const uint64_t *key, size_t nwords,
			     uint32_t hash);

/* Remember key -> id (copies the key into the arena). Returns 0, or -1 when
 * out of memory (the stack is then simply written again next time). */
int vt_stack_table_insert(struct vt_stack_table *t, const uint64_t *key, size_t nwords,
			  uint32_t hash, uint32_t id);

/* Entries and arena bytes in this table (tests, bench). */
size_t vt_stack_table_count(const struct vt_stack_table *t);
size_t vt_stack_table_bytes(const struct vt_stack_table *t);

/* Forget every entry of every thread's table (lazily: each thread drops its
 * table the next time it looks). Called in the child after fork. */
void vt_stack_table_invalidate_all(void);

#endif
