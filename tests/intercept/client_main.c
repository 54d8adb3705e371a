/* vt-client-*: run the shared workload through one lookup path (or, with
 * --threads, every linked path at once), optionally fork+exec a child that
 * runs it too. Exit status: --exit N, or 1 if a call misbehaved. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"

typedef int (*fill_fn)(struct cu_api *);

static fill_fn fill_of(const char *path)
{
	if (!strcmp(path, "linked"))
		return vt_client_fill_linked;
	if (!strcmp(path, "dlsym"))
		return vt_client_fill_dlsym;
	if (!strcmp(path, "getproc"))
		return vt_client_fill_getproc;
	return NULL;
}

struct thread_arg {
	fill_fn fill;
	struct workload w;
	int failed;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	struct cu_api api;
	a->failed = a->fill(&api) || vt_client_run(&api, &a->w);
	return NULL;
}

/* T threads, thread t on path t % (number of linked paths). */
static int run_threads(int threads, struct workload w)
{
	fill_fn paths[3];
	int npaths = 0;
	const char *names[] = {"linked", "dlsym", "getproc"};
	for (int i = 0; i < 3; i++)
		if (fill_of(names[i]))
			paths[npaths++] = fill_of(names[i]);
	struct thread_arg args[64];
	pthread_t tids[64];
	int failed = 0;
	for (int t = 0; t < threads && t < 64; t++) {
		args[t] = (struct thread_arg){.fill = paths[t % npaths], .w = w};
		args[t].w.tag = t;
		args[t].w.quiet = 1;
		pthread_create(&tids[t], NULL, thread_main, &args[t]);
	}
	for (int t = 0; t < threads && t < 64; t++) {
		pthread_join(tids[t], NULL);
		failed |= args[t].failed;
	}
	printf("threads: %d, failed: %d\n", threads, failed);
	return failed;
}

/* fork, and exec ourselves in the child with --path and --count only */
static int run_child(const char *path, int count)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		char n[16];
		snprintf(n, sizeof n, "%d", count);
		execl("/proc/self/exe", "vt-client-child", "--path", path, "--count", n, (char *)NULL);
		_exit(127);
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return 1;
	printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

int main(int argc, char **argv)
{
	const char *path = vt_client_fill_linked ? "linked" : vt_client_fill_dlsym ? "dlsym" : "getproc";
	struct workload w = {.count = 4, .devices = 1};
	int threads = 0, exit_code = -1, child = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *opt = argv[i], *val = argv[i + 1];
		if (!strcmp(opt, "--path"))
			path = val;
		else if (!strcmp(opt, "--count"))
			w.count = atoi(val);
		else if (!strcmp(opt, "--devices"))
			w.devices = atoi(val);
		else if (!strcmp(opt, "--oom"))
			w.oom_bytes = strtoull(val, NULL, 0);
		else if (!strcmp(opt, "--threads"))
			threads = atoi(val);
		else if (!strcmp(opt, "--exit"))
			exit_code = atoi(val);
		else if (!strcmp(opt, "--exec-child"))
			child = atoi(val);
		else {
			fprintf(stderr, "unknown option %s\n", opt);
			return 2;
		}
	}
	int failed;
	if (threads) {
		failed = run_threads(threads, w);
	} else {
		fill_fn fill = fill_of(path);
		struct cu_api api;
		if (!fill || fill(&api)) {
			fprintf(stderr, "path %s not available\n", path);
			return 2;
		}
		failed = vt_client_run(&api, &w);
		if (child)
			failed |= run_child(path, child);
	}
	printf("done: %s\n", failed ? "FAILED" : "ok");
	return exit_code >= 0 ? exit_code : failed;
}
