/* Shared by the fuzz targets: inputs become files the analyzer opens the way
 * it opens a real trace (the reader maps files, so a memfd, not a buffer). */
#ifndef VT_FUZZ_COMMON_H
#define VT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Replace the contents of the fuzz file with (head, nhead) + (data, size);
 * returns its path (/proc/self/fd/N), valid until the next call. */
const char *fz_file(const void *head, size_t nhead, const uint8_t *data, size_t size);

/* stdout to /dev/null once (the commands print everything they read). */
void fz_quiet_stdout(void);

/* Run `vramtrace dump PATH [--json]` in-process; returns its exit code. */
int fz_dump(const char *path, int json);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
