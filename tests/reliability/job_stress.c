/* A multi-threaded driver client for the kill, concurrency and hostile-
 * environment tests. VT_JOB_THREADS threads (<= 32), thread t using lookup
 * path t % 3; each runs VT_JOB_PER_THREAD rounds of
 *     cuMemAlloc(VT_JOB_SIZE(t, k)); cuMemcpyHtoD(8 * (t + 1) bytes); cuMemFree
 * (3 intercepted calls), acknowledging each round on VT_ACK_FD (if set; every
 * VT_JOB_ACK_EVERY rounds, default 1) only after all three returned.
 * stdout: one line with what the job computed (a checksum of bytes read back
 * from the device), identical with and without the shim. Exit 0 when every
 * call succeeded. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kill_protocol.h"
#include "rel_cuda.h"

#define MAX_THREADS 32

static int g_ack_fd = -1;
static unsigned g_per_thread, g_ack_every = 1;
static unsigned g_sums[MAX_THREADS];

static void ack(uint64_t msg)
{
	if (g_ack_fd < 0)
		return;
	while (write(g_ack_fd, &msg, sizeof msg) < 0)
		if (errno != EINTR)
			_exit(21);
}

static int round_trip(const struct rel_api *a, unsigned t, unsigned k, unsigned char *host)
{
	CUdeviceptr d;
	size_t copy = 8u * (t + 1);
	if (a->alloc(&d, VT_JOB_SIZE(t, k, g_per_thread)))
		return -1;
	memset(host, (int)(k + t), copy);
	int bad = a->htod(d, host, copy) != CUDA_SUCCESS;
	if (!bad && k + 1 == g_per_thread) { /* read the last one back: the job's result */
		unsigned char back[256];
		bad = a->dtoh(back, d, copy) != CUDA_SUCCESS;
		for (size_t i = 0; i < copy; i++)
			g_sums[t] = g_sums[t] * 31u + back[i];
	}
	return a->free(d) || bad ? -1 : 0;
}

static void *worker(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	struct rel_api a;
	unsigned char host[256];
	if (rel_api_fill((enum rel_path)(t % REL_NPATHS), &a) || rel_use_device(&a))
		return (void *)1;
	for (unsigned k = 0; k < g_per_thread; k++) {
		if (round_trip(&a, t, k, host))
			return (void *)2;
		if ((k + 1) % g_ack_every == 0 || k + 1 == g_per_thread)
			ack(VT_ACK(t, k + 1));
	}
	return NULL;
}

static unsigned env_num(const char *name, unsigned dflt)
{
	const char *v = getenv(name);
	return v && *v ? (unsigned)strtoul(v, NULL, 10) : dflt;
}

int main(void)
{
	unsigned threads = env_num("VT_JOB_THREADS", 4);
	g_per_thread = env_num("VT_JOB_PER_THREAD", 100);
	g_ack_every = env_num("VT_JOB_ACK_EVERY", 1);
	if (getenv("VT_ACK_FD"))
		g_ack_fd = (int)env_num("VT_ACK_FD", 0);
	if (threads == 0 || threads > MAX_THREADS || g_per_thread == 0 || g_ack_every == 0)
		return 2;
	ack(VT_ACK_PID(getpid()));
	pthread_t tid[MAX_THREADS];
	for (uintptr_t i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, (void *)i);
	int failed = 0;
	for (unsigned i = 0; i < threads; i++) {
		void *rc;
		pthread_join(tid[i], &rc);
		failed |= rc != NULL;
	}
	unsigned sum = 0;
	for (unsigned i = 0; i < threads; i++)
		sum = sum * 7u + g_sums[i];
	printf("stress: %u threads x %u rounds: %s, checksum %08x\n", threads, g_per_thread,
	       failed ? "FAILED" : "ok", sum);
	return failed;
}
