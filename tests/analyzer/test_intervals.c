/* The replay's address map (model_intervals.c) against a plain array:
 * random inserts, erases and lookups over a small address space, so starts
 * collide, intervals nest and nodes are reused from the free list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model_intervals.h"

#define SLOTS 512

struct naive {
	int used[SLOTS];
	struct vt_ival iv[SLOTS]; /* by start: starts are small numbers here */
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
	for (uint64_t s = addr < SLOTS ? addr + 1 : SLOTS; s-- > 0;)
		if (n->used[s])
			return addr - s < n->iv[s].len ? &n->iv[s] : NULL;
	return NULL;
}

static void test_against_array(void **state)
{
	(void)state;
	static struct naive n;
	memset(&n, 0, sizeof n);
	struct vt_ival_map m;
	vt_ival_init(&m);
	uint64_t seed = 0x1234567;
	uint32_t count = 0;
	for (uint32_t step = 0; step < 200000; step++) {
		uint64_t r = rnd(&seed);
		uint64_t start = r % SLOTS, len = 1 + (r >> 16) % 24;
		switch ((r >> 32) % 4) {
		case 0:
		case 1: { /* insert (replace when the start exists) */
			struct vt_ival iv = {.start = start, .len = len, .alloc = step};
			if (n.used[start])
				assert_int_equal(vt_ival_insert(&m, &iv), 0);
			else {
				assert_int_equal(vt_ival_insert_new(&m, &iv), 0);
				count++;
			}
			n.used[start] = 1;
			n.iv[start] = iv;
			break;
		}
		case 2: { /* erase */
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
	vt_ival_destroy(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_against_array),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
