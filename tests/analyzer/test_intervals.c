/* The replay's address map (model_intervals.c) against a plain array:
 * random inserts (some, as the replay inserts an allocation, at the hint
 * of a lookup made before an erase), erases and lookups, over a small
 * address space (starts collide, intervals nest, nodes are reused from the
 * free list) and over a larger one that the map fills and drains several
 * times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model_intervals.h"

/* The reference: a plain array indexed by start (starts are small here). */
struct naive {
	uint64_t slots;
	int *used;
	struct vt_ival *iv;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The greatest start <= addr, if it contains addr. */
static const struct vt_ival *naive_find(const struct naive *n, uint64_t addr)
{
	for (uint64_t s = addr < n->slots ? addr + 1 : n->slots; s-- > 0;)
		if (n->used[s])
			return addr - s < n->iv[s].len ? &n->iv[s] : NULL;
	return NULL;
}

/* Random inserts, erases and lookups over `slots` starts, checked against
 * the array after every step. The mix swings between filling (3 inserts to
 * 1 erase) up to 60 % and draining down to 10 %, so the tree grows and
 * shrinks by whole levels: splits, borrows and merges on every level. */
static void run_against_array(uint64_t slots, uint32_t steps, uint64_t seed)
{
	struct naive n = {slots, calloc(slots, sizeof *n.used), calloc(slots, sizeof *n.iv)};
	assert_non_null(n.used);
	assert_non_null(n.iv);
	struct vt_ival_map m;
	vt_ival_init(&m);
	uint32_t count = 0;
	int filling = 1;
	for (uint32_t step = 0; step < steps; step++) {
		if (filling && count * 10 >= slots * 6)
			filling = 0;
		else if (!filling && count * 10 <= slots)
			filling = 1;
		uint64_t r = rnd(&seed);
		uint64_t start = r % slots, len = 1 + (r >> 16) % 24;
		unsigned op = (r >> 32) % 8; /* 0-2 insert, 3-5 erase, 6-7 lookups */
		if (op < 6 && (op < 3) != filling && (r >> 40) % 3 != 0)
			op = 6 - 1 - op; /* tilt the mix towards the phase's operation */
		switch (op) {
		case 0:
		case 1:
		case 2: { /* insert (replace when the start exists) */
			struct vt_ival iv = {.start = start, .len = len, .alloc = step};
			/* op 2 the replay's way: look up, erase another, insert at the hint */
			if (op == 2) {
				uint32_t at;
				vt_ival_find_at(&m, start, &at);
				uint64_t other = (r >> 24) % slots;
				if (other != start && vt_ival_erase(&m, other, NULL)) {
					n.used[other] = 0;
					count--;
				}
				assert_int_equal(vt_ival_insert_at(&m, &iv, at), 0);
			} else {
				assert_int_equal(vt_ival_insert(&m, &iv), 0);
			}
			count += !n.used[start];
			n.used[start] = 1;
			n.iv[start] = iv;
			break;
		}
		case 3:
		case 4:
		case 5: { /* erase */
			struct vt_ival out;
			int found = vt_ival_erase(&m, start, &out);
			assert_int_equal(found, n.used[start]);
			if (found) {
				assert_int_equal(out.alloc, n.iv[start].alloc);
				n.used[start] = 0;
				count--;
			}
			break;
		}
		default: { /* lookups */
			const struct vt_ival *a = vt_ival_find(&m, start),
			                     *b = naive_find(&n, start);
			assert_int_equal(a != NULL, b != NULL);
			if (a)
				assert_int_equal(a->alloc, b->alloc);
			const struct vt_ival *e = vt_ival_exact(&m, start);
			assert_int_equal(e != NULL, n.used[start]);
			if (e)
				assert_int_equal(e->alloc, n.iv[start].alloc);
		}
		}
		assert_int_equal(vt_ival_count(&m), count);
	}
	/* drain it all: every start comes out once, the map ends empty */
	for (uint64_t s = 0; s < slots; s++)
		assert_int_equal(vt_ival_erase(&m, s, NULL), n.used[s]);
	assert_int_equal(vt_ival_count(&m), 0);
	assert_null(vt_ival_find(&m, slots / 2));
	vt_ival_destroy(&m);
	free(n.used);
	free(n.iv);
}

/* Few starts: they collide, intervals nest, nodes come off the free list. */
static void test_small_space(void **state)
{
	(void)state;
	run_against_array(512, 200000, 0x1234567);
}

/* Enough starts for a tree four levels deep. */
static void test_deep_tree(void **state)
{
	(void)state;
	run_against_array(20000, 600000, 0x89abcdef);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_small_space),
	    cmocka_unit_test(test_deep_tree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
