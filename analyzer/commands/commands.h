/* The subcommands of `vramtrace`, one file each (cmd_<name>.c). */
#ifndef VT_COMMANDS_H
#define VT_COMMANDS_H

/* X(name, one-line usage) */
#define VT_COMMAND_LIST(X)                                                                         \
	X(run, "run [-o DIR] [--per-tensor] [--stack-depth N] [--max-size SIZE] [--shm] "          \
	       "[--free-stacks] [--stack-memo on|off|verify] -- CMD ...")                          \
	X(dump, "dump DIR|LOG [--json]")                                                           \
	X(report,                                                                                  \
	  "report DIR [--json] [--top N] [--at peak|end|SECONDS] [--allocs] [--html FILE] "        \
	  "[--stream]")                                                                            \
	X(oom, "oom DIR [--json] [--index N]")                                                     \
	X(diff,                                                                                    \
	  "diff BASE_DIR NEW_DIR [--json] [--fail-over PERCENT] [--min-bytes SIZE] [--stream]")    \
	X(predict,                                                                                 \
	  "predict DIR[=BATCH] DIR[=BATCH]... [--at BATCH]... [--capacity SIZE] [--margin PCT] "   \
	  "[--granularity SIZE] [--json] [--fail-if-over SIZE] [--require-batch BATCH]")           \
	X(export, "export DIR [--format html|perfetto|folded|csv] [--at peak|end|SECONDS] "        \
	          "[--stream] [-o FILE]")

/* Each returns the process exit code. */
#define VT_DECLARE_COMMAND(name, usage) int cmd_##name(int argc, char **argv);
VT_COMMAND_LIST(VT_DECLARE_COMMAND)
#undef VT_DECLARE_COMMAND

/* The trace in dir as a model (streaming: the streaming model), with a
 * progress bar on a terminal (cmd_load.c); NULL after one line on stderr,
 * "vramtrace CMD: why". */

#endif
