/* End-to-end stacks client (built -g -O0 -fno-inline): the real log writer
 * and the shim's capture/module code linked in, allocations from three
 * functions in two files, a library dlopen'ed and dlclose'd, 16 threads,
 * a forked child.
 *   usage: stacks_client   (VRAMTRACE_DIR names the trace directory) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_record.h"
#include "log_writer.h"
#include "stack_capture.h"

void client_record(uint64_t bytes)
{
	struct vt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.stack_id = vt_stack_capture(1);
	ev.bytes = bytes;
	ev.addr = 0x7f0000000000ull + bytes;
	ev.device = 0;
	vt_log_write_event(VT_REC_ALLOC, &ev);
}

static void client_alloc_weights(void)
{
	client_record(4u << 20); /* SITE_WEIGHTS */
}

/* called back from the dlopen'ed library */
static uint32_t alloc_via_lib(void)
{
	client_record(2u << 20);
	return 0;
}

static void *thread_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < 50; i++)
		client_alloc_batch();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *lib = argc > 1 ? argv[1] : NULL;
	struct vt_log_config cfg;
	vt_log_config_from_env(&cfg);
	if (vt_log_init(&cfg) != 0)
		return 1;
	/* the same call site in the parent and in a forked child: the child's
	 * own log must hold the stack (and modules) again, and the analyzer
	 * folds the two processes' records into one stack */
	pid_t child = -1;
	for (int round = 0; round < 2; round++) {
		client_alloc_weights();
		if (round == 0 && (child = fork()) != 0)
			break;
	}
	if (child == 0) {
		vt_log_finish(0);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	client_alloc_dataset();
	client_alloc_batch();
	if (lib) {
		void *h = dlopen(lib, RTLD_NOW);
		if (!h) {
			fprintf(stderr, "stacks_client: %s\n", dlerror());
			return 1;
		}
		uint32_t (*site)(uint32_t (*)(void)) =
			(uint32_t (*)(uint32_t (*)(void)))dlsym(h, "dl_lib_site");
		if (!site)
			return 1;
		site(alloc_via_lib);
		dlclose(h);
	}
	pthread_t th[16];
	for (int i = 0; i < 16; i++)
		pthread_create(&th[i], NULL, thread_main, NULL);
	for (int i = 0; i < 16; i++)
		pthread_join(th[i], NULL);
	vt_log_finish(0);
	return 0;
}
