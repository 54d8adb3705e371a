/* Call sites for the capture tests, in a file of their own (built -O0
 * -fno-inline -fno-optimize-sibling-calls, so every call keeps its frame). */
#ifndef VT_CAPTURE_SITES_H
#define VT_CAPTURE_SITES_H

#include <stdint.h>

/* Stands in for a hook wrapper: captures with skip = 1 (its own frame) and
 * stores its return address (a frame inside the caller) in *ra if non-NULL. */
uint32_t test_hook(void **ra);
/* Same, with skip = 0: the hook's own frame is kept. */
uint32_t test_hook_keep(void **ra);

uint32_t site_alpha(void);
uint32_t site_beta(void);
/* Recurse `levels` times, then capture from site_deep. */
uint32_t site_recurse(unsigned levels);

#endif
