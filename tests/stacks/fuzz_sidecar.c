/* Fuzz target for the symbol sidecar parser (analyzer/sidecar_read.c).
 *   clang -fsanitize=fuzzer,address -DVT_LIBFUZZER ... -> a libFuzzer binary
 *   otherwise: fuzz_sidecar FILE...  parses each file (replays a corpus or a
 *   crash) and checks the invariants below. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sidecar_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct vt_sidecar *sc = vt_sidecar_parse((const char *)data, size, "fuzz", err, sizeof err);
	if (sc) {
		/* at most one address per A line, and an address needs a line */
		if (vt_sidecar_addresses(sc) > size / 8 + 1)
			abort();
		struct vt_module_info mod = {1, "/x", {0}, 0};
		struct vt_frame_names fn;
		if (vt_sidecar_lookup(sc, &mod, 0, &fn) == 0 && (fn.n == 0 || !fn.sym[0].function))
			abort();
	}
	vt_sidecar_free(sc);
	return 0;
}

#ifndef VT_LIBFUZZER
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			return 1;
		}
		static uint8_t buf[1 << 20];
		size_t n = fread(buf, 1, sizeof buf, f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
	}
	return 0;
}
#endif
