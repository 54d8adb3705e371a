/* Call sites for the capture tests (capture_sites.h). */
#include "capture_sites.h"

#include "stack_capture.h"

uint32_t test_hook(void **ra)
{
	if (ra)
		*ra = __builtin_extract_return_addr(__builtin_return_address(0));
	uint32_t id = vt_stack_capture(1);
	return id;
}

uint32_t test_hook_keep(void **ra)
{
	if (ra)
		*ra = __builtin_extract_return_addr(__builtin_return_address(0));
	uint32_t id = vt_stack_capture(0);
	return id;
}

uint32_t site_alpha(void)
{
	uint32_t id = test_hook(0);
	return id;
}

uint32_t site_beta(void)
{
	uint32_t id = test_hook(0);
	return id;
}

uint32_t site_deep(void);
uint32_t site_deep(void)
{
	uint32_t id = test_hook(0);
	return id;
}

uint32_t site_recurse(unsigned levels)
{
	uint32_t id = levels ? site_recurse(levels - 1) : site_deep();
	return id;
}
