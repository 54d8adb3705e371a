/* A kill-test job that records through the log writer API directly (before
 * the shim exists; and to kill inside vt_log_init itself): THREADS threads
 * each write PER_THREAD counter events (addr = 1 << 32 | thread, bytes = k)
 * and, every 16th, a variable-length mark; each acknowledged on VT_ACK_FD
 * after the write returned. The pid goes out BEFORE the log is opened, so a
 * kill can land during creation. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kill_protocol.h"
#include "log_test_util.h"
#include "log_writer.h"

static int g_fd;
static unsigned g_per_thread;
static int g_ack_first; /* VT_JOB_ACK_FIRST=1: a lying job (the harness's own test) */

static void ack(uint64_t msg)
{
	while (write(g_fd, &msg, sizeof msg) < 0)
		if (errno != EINTR)
			_exit(21);
}

static void *worker(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	char text[48];
	for (uint64_t k = 0; k < g_per_thread; k++) {
		if (g_ack_first)
			ack(VT_ACK(t, k + 1));
		if (lt_write_counter_event(1, t, k) < 0)
			_exit(20);
		if (k % 16 == 15) {
			snprintf(text, sizeof text, "thread %u event %llu", t, (unsigned long long)k);
			if (vt_log_write_mark(VT_MARK_USER, text, k) < 0)
				_exit(22);
		}
		if (!g_ack_first)
			ack(VT_ACK(t, k + 1));
	}
	return NULL;
}

int main(void)
{
	const char *fd = getenv("VT_ACK_FD"), *th = getenv("VT_JOB_THREADS"),
	           *pt = getenv("VT_JOB_PER_THREAD");
	if (!fd || !th || !pt)
		return 2;
	g_fd = atoi(fd);
	unsigned threads = (unsigned)atoi(th);
	g_per_thread = (unsigned)atoi(pt);
	g_ack_first = getenv("VT_JOB_ACK_FIRST") != NULL;
	ack(VT_ACK_PID(getpid()));
	struct vt_log_config cfg;
	vt_log_config_from_env(&cfg);
	cfg.chunk_size = 16 * 1024; /* many chunk claims: more moments to die in */
	if (vt_log_init(&cfg) < 0)
		return 9;
	pthread_t tid[64];
	if (threads > 64)
		return 2;
	for (uintptr_t i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, (void *)i);
	for (unsigned i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	vt_log_finish(0);
	return 0;
}
