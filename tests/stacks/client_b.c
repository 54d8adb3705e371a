/* Second source file of the e2e client: two of its three allocation sites. */
#include "client_record.h"

void client_alloc_dataset(void)
{
	client_record(64u << 20); /* SITE_DATASET */
}

void client_alloc_batch(void)
{
	client_record(1u << 20); /* SITE_BATCH */
}
