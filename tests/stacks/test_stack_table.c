/* The per-thread dedupe table on its own: finds what was inserted, never
 * confuses two keys with the same hash, survives growth and its size cap,
 * and forgets everything after invalidate_all (fork). Its cache of recent
 * keys (no hash) finds a key found or added lately, never another key with
 * the same innermost frame, and nothing after the table was dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stack_table.h"

static void make_key(uint64_t *key, unsigned depth, uint64_t salt)
{
	key[0] = depth;
	for (unsigned i = 0; i < depth; i++)
		key[1 + i] = 0x400000 + salt * 4096 + i * 16;
}

static void finds_what_was_inserted(void **state)
{
	(void)state;
	struct vt_stack_table *t = vt_stack_table_self();
	assert_non_null(t);
	uint64_t key[33];
	for (uint32_t s = 1; s <= 5000; s++) {
		make_key(key, 1 + s % 32, s);
		uint32_t h = vt_stack_hash(key, 2 + s % 32);
		assert_int_equal(vt_stack_table_find(t, key, 2 + s % 32, h), 0);
		assert_int_equal(vt_stack_table_insert(t, key, 2 + s % 32, h, s), 0);
	}
	for (uint32_t s = 1; s <= 5000; s++) {
		make_key(key, 1 + s % 32, s);
		assert_int_equal(vt_stack_table_find(t, key, 2 + s % 32, vt_stack_hash(key, 2 + s % 32)), s);
	}
	assert_int_equal(vt_stack_table_count(t), 5000);
	assert_true(vt_stack_table_bytes(t) > 0);
}

static void equal_hash_different_keys_stay_apart(void **state)
{
	(void)state;
	struct vt_stack_table *t = vt_stack_table_self();
	uint64_t a[4] = {3, 1, 2, 3}, b[4] = {3, 1, 2, 4}, c[3] = {2, 1, 2};
	/* force one hash value for all three */
	assert_int_equal(vt_stack_table_insert(t, a, 4, 42, 7001), 0);
	assert_int_equal(vt_stack_table_find(t, b, 4, 42), 0);
	assert_int_equal(vt_stack_table_find(t, c, 3, 42), 0);
	assert_int_equal(vt_stack_table_insert(t, b, 4, 42, 7002), 0);
	assert_int_equal(vt_stack_table_find(t, a, 4, 42), 7001);
	assert_int_equal(vt_stack_table_find(t, b, 4, 42), 7002);
	/* depth word is part of the key: 2 native frames != same words as 1+py */
	uint64_t d[3] = {2, 1, 2}, e[3] = {1 | 1u << 16, 1, 2};
	assert_int_not_equal(vt_stack_hash(d, 3), vt_stack_hash(e, 3));
}

static void recent_keys_without_hashing(void **state)
{
	(void)state;
	struct vt_stack_table *t = vt_stack_table_self();
	/* the same innermost frame (one cache slot), different callers */
	uint64_t a[4] = {3, 0x7000, 0x8000, 0x9000}, b[4] = {3, 0x7000, 0x8000, 0x9999};
	assert_int_equal(vt_stack_table_find_recent(t, a, 4), 0);
	assert_int_equal(vt_stack_table_insert(t, a, 4, vt_stack_hash(a, 4), 8001), 0);
	assert_int_equal(vt_stack_table_find_recent(t, a, 4), 8001);
	assert_int_equal(vt_stack_table_find_recent(t, b, 4), 0); /* not a's id */
	assert_int_equal(vt_stack_table_find_recent(t, a, 3), 0); /* a shorter key */
	assert_int_equal(vt_stack_table_insert(t, b, 4, vt_stack_hash(b, 4), 8002), 0);
	assert_int_equal(vt_stack_table_find_recent(t, b, 4), 8002);
	assert_int_equal(vt_stack_table_find_recent(t, a, 4), 0); /* b took the slot */
	/* a full find puts a back */
	assert_int_equal(vt_stack_table_find(t, a, 4, vt_stack_hash(a, 4)), 8001);
	assert_int_equal(vt_stack_table_find_recent(t, a, 4), 8001);
	/* forgotten with the table (fork): no entry of the old arena is read */
	vt_stack_table_invalidate_all();
	t = vt_stack_table_self();
	assert_int_equal(vt_stack_table_find_recent(t, a, 4), 0);
}

static void hash_is_deterministic_and_spreads(void **state)
{
	(void)state;
	uint64_t k1[3] = {2, 0x401000, 0x402000}, k2[3] = {2, 0x401000, 0x402000};
	assert_int_equal(vt_stack_hash(k1, 3), vt_stack_hash(k2, 3));
	k2[2]++;
	assert_int_not_equal(vt_stack_hash(k1, 3), vt_stack_hash(k2, 3));
}

static void cap_resets_instead_of_growing(void **state)
{
	(void)state;
	/* VRAMTRACE_STACK_TABLE_MB=1 for this program (CMake): 1 MiB of
	 * 4 KiB keys is ~250 entries; insert far more and stay bounded */
	struct vt_stack_table *t = vt_stack_table_self();
	static uint64_t key[1 + 500];
	for (uint32_t s = 1; s <= 2000; s++) {
		make_key(key, 500, 100000 + s);
		assert_int_equal(vt_stack_table_insert(t, key, 501, vt_stack_hash(key, 501), s), 0);
		assert_true(vt_stack_table_bytes(t) <= (1u << 20));
	}
	make_key(key, 500, 100000 + 2000);
	assert_int_equal(vt_stack_table_find(t, key, 501, vt_stack_hash(key, 501)), 2000);
	assert_true(vt_stack_table_count(t) < 2000);
	/* keys of the arenas dropped on the way are gone from the cache too */
	make_key(key, 500, 100000 + 1);
	assert_int_equal(vt_stack_table_find_recent(t, key, 501), 0);
}

static void invalidate_all_forgets(void **state)
{
	(void)state;
	struct vt_stack_table *t = vt_stack_table_self();
	uint64_t key[3] = {2, 0x1234, 0x5678};
	uint32_t h = vt_stack_hash(key, 3);
	assert_int_equal(vt_stack_table_insert(t, key, 3, h, 99), 0);
	assert_int_equal(vt_stack_table_find(t, key, 3, h), 99);
	vt_stack_table_invalidate_all();
	t = vt_stack_table_self();
	assert_int_equal(vt_stack_table_find(t, key, 3, h), 0);
	assert_int_equal(vt_stack_table_count(t), 0);
}

/* `test_stack_table cap` runs only the cap test (its size cap comes from
 * the environment, read once per process). */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(finds_what_was_inserted),
	    cmocka_unit_test(equal_hash_different_keys_stay_apart),
	    cmocka_unit_test(hash_is_deterministic_and_spreads),
	    cmocka_unit_test(recent_keys_without_hashing),
	    cmocka_unit_test(invalidate_all_forgets),
	};
	const struct CMUnitTest cap_tests[] = {
		cmocka_unit_test(cap_resets_instead_of_growing),
	};
	if (argc > 1 && !strcmp(argv[1], "cap"))
		return cmocka_run_group_tests(cap_tests, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
