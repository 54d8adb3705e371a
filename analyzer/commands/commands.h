/* The subcommands of `vramtrace`, one file each (cmd_<name>.c). */
#ifndef VT_COMMANDS_H
#define VT_COMMANDS_H

/* X(name, what it does): the subcommands, in the order `vramtrace --help`
 * lists them. Each command's options are its own table (cli.h). */
#define VT_COMMAND_LIST(X)                                                                         \
	X(run, "record a job's GPU memory into a trace directory")                                 \
	X(report, "what held each device at its peak, and why")                                    \
	X(top, "watch a running job's GPU memory live")                                            \
	X(oom, "explain an out-of-memory event")                                                   \
	X(diff, "compare two runs; --fail-over gates CI on growth")                                \
	X(predict, "the peak at another batch size, and the largest batch that fits")              \
	X(export, "HTML timeline, Perfetto trace, folded stacks or CSV")                           \
	X(dump, "every record of the log")

/* Each returns the process exit code. */
#define VT_DECLARE_COMMAND(name, summary) int cmd_##name(int argc, char **argv);
VT_COMMAND_LIST(VT_DECLARE_COMMAND)
#undef VT_DECLARE_COMMAND

#endif
