/* Runs a fuzz target once on every file named (directories: every regular
 * file inside) without libFuzzer: the committed corpus, crash inputs
 * included, is a regression test in every build, sanitizers or not.
 *   fuzz_<name>_replay DIR|FILE...   exit 0 when every input ran */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static unsigned g_inputs;

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 65536;
			if (!(buf = realloc(buf, cap)))
				abort();
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		if (got == 0)
			break;
		n += got;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	g_inputs++;
	return 0;
}

static int name_order(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int run_path(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path);
	struct dirent **names;
	int n = scandir(path, &names, NULL, name_order), rc = 0;
	if (n < 0) {
		perror(path);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char *child;
		if (names[i]->d_name[0] != '.' && asprintf(&child, "%s/%s", path, names[i]->d_name) >= 0) {
			if (stat(child, &st) == 0 && S_ISREG(st.st_mode) && run_file(child) < 0)
				rc = -1;
			free(child);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;
	for (int i = 1; i < argc; i++)
		if (run_path(argv[i]) < 0)
			rc = 1;
	fprintf(stderr, "replayed %u inputs\n", g_inputs);
	return rc || g_inputs == 0;
}
