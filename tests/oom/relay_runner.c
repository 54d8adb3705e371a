/* The relay (analyzer/run_relay.h) around a command, the way `vramtrace run`
 * uses it, without the shim: relay_runner TRACE_DIR CMD ARGS...
 * Exits with the command's exit code; prints the relay mode and counts on
 * stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_relay.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: relay_runner TRACE_DIR CMD ARGS...\n");
		return 2;
	}
	mkdir(argv[1], 0700);
	struct vt_relay relay;
	vt_relay_setup(&relay, argv[1]);
	int mode = relay.mode;
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		vt_relay_in_child(&relay);
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	vt_relay_start(&relay, pid);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0)
		;
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	vt_relay_finish(&relay, code);
	printf("mode=%s bytes=%llu marks=%u\n", vt_relay_mode_name(mode),
	       (unsigned long long)relay.bytes_relayed, relay.marks);
	return code;
}
