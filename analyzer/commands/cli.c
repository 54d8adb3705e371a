/* The help text and usage errors of the subcommands (cli.h). */
#include "cli.h"

#include <stdarg.h>
#include <string.h>

static const struct vt_cli_option help_option = {"--help", NULL, "print this help and exit"};

/* Width of the option column: the longest "NAME ARG" of h, at most 24. */
static int option_column(const struct vt_cli_help *h)
{
	int width = 10; /* "-h, --help" */
	for (const struct vt_cli_option *o = h->options; o->name; o++) {
		int w = (int)strlen(o->name) + (o->arg ? 1 + (int)strlen(o->arg) : 0);
		if (w > width)
			width = w;
	}
	return width > 24 ? 24 : width;
}

static void print_option(const struct vt_cli_option *o, int column, FILE *to)
{
	char left[128];
	snprintf(left, sizeof left, "%s%s%s", o == &help_option ? "-h, " : "", o->name,
	         o->arg ? " " : "");
	if (o->arg)
		strncat(left, o->arg, sizeof left - strlen(left) - 1);
	if ((int)strlen(left) > column)
		fprintf(to, "  %s\n  %*s  %s\n", left, column, "", o->help);
	else
		fprintf(to, "  %-*s  %s\n", column, left, o->help);
}

void vt_cli_print_help(const struct vt_cli_help *h, FILE *to)
{
	fprintf(to, "usage: vramtrace %s [options] %s\n\n%s\n\noptions:\n", h->command, h->operands,
	        h->summary);
	int column = option_column(h);
	for (const struct vt_cli_option *o = h->options; o->name; o++)
		print_option(o, column, to);
	print_option(&help_option, column, to);
	if (h->notes)
		fprintf(to, "\n%s", h->notes);
}

int vt_cli_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

const struct vt_cli_option *vt_cli_find(const struct vt_cli_help *h, const char *name)
{
	for (const struct vt_cli_option *o = h->options; o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

/* One option at argv[*i] (advanced past its value): 0 or an exit code. */
static int parse_option(const struct vt_cli_parser *p, int argc, char **argv, int *i, void *ctx)
{
	const char *name = argv[*i];
	const struct vt_cli_option *o = vt_cli_find(p->help, name);
	if (!o)
		return vt_cli_usage_error(p->help->command, "unknown option '%s'", name);
	if (!o->arg)
		return p->option(ctx, o, NULL);
	if (*i + 1 >= argc)
		return vt_cli_usage_error(p->help->command, "%s needs a value (%s)", name, o->arg);
	return p->option(ctx, o, argv[++*i]);
}

int vt_cli_parse(const struct vt_cli_parser *p, int argc, char **argv, void *ctx, int *next)
{
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		int rc;
		if (p->stop_at_operand && !strcmp(a, "--")) {
			i++;
			break;
		}
		if (vt_cli_is_help(a)) {
			vt_cli_print_help(p->help, stdout);
			return VT_CLI_HELP_SHOWN;
		}
		if (a[0] == '-' && a[1])
			rc = parse_option(p, argc, argv, &i, ctx);
		else if (p->stop_at_operand)
			break;
		else
			rc = p->operand(ctx, a);
		if (rc)
			return rc;
	}
	*next = i;
	return 0;
}

int vt_cli_usage_error(const char *command, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "vramtrace %s: ", command);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'vramtrace %s --help' for more information.\n", command);
	return 2;
}

int vt_cli_one_trace(const char *command, const char **slot, const char *arg)
{
	if (*slot)
		return vt_cli_usage_error(command, "one trace at a time ('%s')", arg);
	*slot = arg;
	return 0;
}

int vt_cli_add_trace(const char *command, struct vt_cli_traces *t, const char *arg)
{
	if (t->n == VT_CLI_MAX_TRACES)
		return vt_cli_usage_error(command, "at most %d traces ('%s')", VT_CLI_MAX_TRACES,
		                          arg);
	t->dir[t->n++] = arg;
	return 0;
}
