/* A trace whose allocation sites are each reached from several call paths:
 * SITES sites x PATHS paths, one stack (and one live allocation) per pair.
 * The stacks of a site differ only in their caller frame, so the report
 * names them as one site: it must list SITES sites of PATHS allocations.
 *   many_sites DIR SITES PATHS */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "log_builder.h"

enum { API_ALLOC = 2 };
#define CHUNK (4u << 20)

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	uint32_t sites = (uint32_t)atoi(argv[2]), paths = (uint32_t)atoi(argv[3]);
	mkdir(argv[1], 0700);
	struct lb b;
	lb_init(&b, 4242, CHUNK);
	lb_chunk(&b, 100, 0);
	uint32_t id = 1;
	/* path-major: a site's later paths come after the table has grown */
	for (uint32_t p = 0; p < paths; p++)
		for (uint32_t s = 0; s < sites; s++, id++) {
			const uint64_t frames[] = {0x400000 + 0x40ull * s, 0x800000 + 0x40ull * p,
			                           0x900000};
			lb_stack(&b, id, frames, 3);
			lb_event(&b, VT_REC_ALLOC,
			         (struct vt_event){.stack_id = id, .addr = 0x7f0000000000ull + (uint64_t)id * 0x100000,
			                           .bytes = 4096, .api = API_ALLOC});
		}
	char path[4096];
	snprintf(path, sizeof path, "%s/vramtrace.4242.0.log", argv[1]);
	int rc = lb_save(&b, path);
	lb_free(&b);
	return rc ? 1 : 0;
}
