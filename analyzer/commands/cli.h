/* What every subcommand shares on its command line: its help, built from
 * one option table per command (the help text, the man page and the shell
 * completions all come from it), and one wording for usage errors. */
#ifndef VT_CLI_H
#define VT_CLI_H

#include <stdio.h>

struct vt_cli_option {
	const char *name; /* "--top", or "-o" */
	const char *arg;  /* what follows it ("N"), NULL for a flag */
	const char *help; /* one line */
};

struct vt_cli_help {
	const char *command;                 /* "report" */
	const char *operands;                /* "DIR", printed after the options */
	const char *summary;                 /* one sentence: what the command does */
	const struct vt_cli_option *options; /* ends with {NULL}; -h/--help is added */
	const char *notes;                   /* lines after the options, or NULL */
};

/* "usage: vramtrace CMD [options] OPERANDS", the summary, one line per
 * option (-h, --help last), the notes. */
void vt_cli_print_help(const struct vt_cli_help *h, FILE *to);

/* Is arg -h or --help? */
int vt_cli_is_help(const char *arg);

/* The option of h named name, NULL if h has none. */
const struct vt_cli_option *vt_cli_find(const struct vt_cli_help *h, const char *name);

/* What vt_cli_parse returns after printing the help on stdout (exit 0). */
#define VT_CLI_HELP_SHOWN (-1)

/* A command's parser: vt_cli_parse walks argv and calls back. */
struct vt_cli_parser {
	const struct vt_cli_help *help; /* the options it accepts, and no others */
	/* option o of the table with its value (NULL for a flag): 0, or an
	 * exit code after one line on stderr */
	int (*option)(void *ctx, const struct vt_cli_option *o, const char *value);
	/* an operand ("-" is one): 0, or an exit code */
	int (*operand)(void *ctx, const char *arg);
	/* run: "--" or the first operand ends the options (the job's command
	 * line starts there, left to the caller) */
	int stop_at_operand;
};

/* Parse argv[1..]: 0 (*next: the first argument not parsed, argc when
 * all were), VT_CLI_HELP_SHOWN, or an exit code (2 for a usage error). */
int vt_cli_parse(const struct vt_cli_parser *p, int argc, char **argv, void *ctx, int *next);

/* The one trace a command reads, in *slot: 0, or a usage error when
 * *slot is already set. */
int vt_cli_one_trace(const char *command, const char **slot, const char *arg);

/* The traces a command reads together: one directory per host of a job
 * (`vramtrace run` on each host), reported as one job. */
#define VT_CLI_MAX_TRACES 512
struct vt_cli_traces {
	const char *dir[VT_CLI_MAX_TRACES];
	unsigned n;
};

/* Add arg to t: 0, or a usage error past VT_CLI_MAX_TRACES. */
int vt_cli_add_trace(const char *command, struct vt_cli_traces *t, const char *arg);

/* "vramtrace CMD: <message>" and "Try 'vramtrace CMD --help' ..." on
 * stderr; returns 2, the exit code of every usage error. */
int vt_cli_usage_error(const char *command, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
