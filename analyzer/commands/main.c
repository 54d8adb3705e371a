/* vramtrace: dispatch to the subcommand named by argv[1]. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

struct command {
	const char *name;
	const char *usage;
	int (*fn)(int argc, char **argv);
};

#define VT_COMMAND_ENTRY(name, usage) {#name, usage, cmd_##name},
static const struct command commands[] = {VT_COMMAND_LIST(VT_COMMAND_ENTRY)};
#undef VT_COMMAND_ENTRY

static void usage(FILE *to)
{
	fprintf(to, "usage: vramtrace COMMAND ...\n\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(to, "  vramtrace %s\n", commands[i].usage);
	fprintf(to, "  vramtrace --version\n");
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf("vramtrace %s\n", VT_VERSION);
		return 0;
	}
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "vramtrace: unknown command '%s' (try vramtrace --help)\n", argv[1]);
	return 2;
}
