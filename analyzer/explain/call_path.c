/* Uploads tied by their call path (see call_path.h). */
#include "call_path.h"

#include "gcd.h"
#include "sites.h"

/* Whether an array of `small` bytes may hold a value or a few per row of
 * one of `big` bytes: its size over their common factor is 8 at most
 * (N labels of 8 bytes beside N x D features of 4), and it is more than
 * a handful of bytes, which divide anything. */
static int shares_rows(uint64_t big, uint64_t small)
{
	return small >= 4096 && small / vt_gcd_u64(big, small) <= 8;
}

int vt_same_call_path(const struct vt_model *m, uint32_t proc, uint32_t a, uint32_t b,
                      uint64_t data_bytes, uint64_t bytes)
{
	if (a == b)
		return 1;
	if (!a || !b || !m->sites || !shares_rows(data_bytes, bytes))
		return 0;
	const struct vt_stack_store *st = m->sites->store;
	return vt_sites_same_functions(m->sites, vt_stack_store_canonical(st, proc, a),
	                               vt_stack_store_canonical(st, proc, b));
}
