/* Fuzz target: any bytes as a whole log file, read the way `vramtrace dump`
 * reads it (header checks, chunk index, merged iteration, every printer).
 * Odd-sized inputs go through --json, even-sized through the text format. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_quiet_stdout();
	fz_dump(fz_file(NULL, 0, data, size), (int)(size & 1));
	return 0;
}
