/* Lookup path 3, cuGetProcAddress (proc_address.c): what the real resolver
 * returned, routed to our wrapper of the same ABI. */
#ifndef VT_PROC_ADDRESS_H
#define VT_PROC_ADDRESS_H

#include <stdint.h>

/* After the real cuGetProcAddress[_v2] returned `result` for (symbol,
 * version, flags): *pfn becomes the wrapper (wrappers, indexed by route) of
 * the function it points to, if we wrap it; the lookup is recorded (`path`:
 * VT_LOOKUP_GET_PROC or _V2). Called with the guard raised. */
void vt_proc_address_route(int result, const char *symbol, void **pfn, int version, uint64_t flags,
                           uint8_t path, void *const *wrappers);

#endif
