/* The e2e client's stand-in for a hook wrapper: capture the caller's stack
 * (skip 1: this function) and write an ALLOC event that carries it, as the
 * shim's hooks do. */
#ifndef VT_CLIENT_RECORD_H
#define VT_CLIENT_RECORD_H

#include <stdint.h>

void client_record(uint64_t bytes);

void client_alloc_dataset(void);
void client_alloc_batch(void);

#endif
