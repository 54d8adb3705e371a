/* vramtrace: dispatch to the subcommand named by argv[1]. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

struct command {
	const char *name;
	const char *summary;
	int (*fn)(int argc, char **argv);
};

#define VT_COMMAND_ENTRY(name, summary) {#name, summary, cmd_##name},
static const struct command commands[] = {VT_COMMAND_LIST(VT_COMMAND_ENTRY)};
#undef VT_COMMAND_ENTRY
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *to)
{
	fprintf(to, "usage: vramtrace COMMAND [options] ...\n\n"
	            "Record what a CUDA job keeps in GPU memory, and explain it.\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(to, "  %-8s  %s\n", commands[i].name, commands[i].summary);
	fprintf(to, "  %-8s  %s\n", "help",
	        "help CMD: the options of CMD (= vramtrace CMD --help)");
	fprintf(to, "\noptions:\n  -V, --version  print the version and exit\n"
	            "  -h, --help     print this help and exit\n");
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

static int unknown_command(const char *name)
{
	fprintf(stderr,
	        "vramtrace: unknown command '%s'\nTry 'vramtrace --help' for more information.\n",
	        name);
	return 2;
}

/* vramtrace help [CMD]: CMD's own --help, so the two never differ. */
static int help(int argc, char **argv)
{
	if (argc < 3) {
		usage(stdout);
		return 0;
	}
	const struct command *c = find_command(argv[2]);
	if (!c)
		return unknown_command(argv[2]);
	char *args[] = {argv[2], "--help", NULL};
	return c->fn(2, args);
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf("vramtrace %s\n", VT_VERSION);
		return 0;
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return usage(stdout), 0;
	if (!strcmp(argv[1], "help"))
		return help(argc, argv);
	const struct command *c = find_command(argv[1]);
	return c ? c->fn(argc - 1, argv + 1) : unknown_command(argv[1]);
}
