/* The pipe protocol between a kill-test job and kill_harness: 8-byte
 * messages (atomic on a pipe) written to the fd named by VT_ACK_FD.
 *   VT_ACK_PID(pid)        the job is running (first message)
 *   VT_ACK(thread, count)  thread has completed `count` events (each event
 *                          acknowledged only AFTER the call that records it
 *                          returned)
 * The job reads its shape from VT_JOB_THREADS and VT_JOB_PER_THREAD. */
#ifndef VT_KILL_PROTOCOL_H
#define VT_KILL_PROTOCOL_H

#include <stdint.h>

#define VT_ACK_PID_TAG 0xffffull
#define VT_ACK_PID(pid) (VT_ACK_PID_TAG << 48 | (uint32_t)(pid))
#define VT_ACK(thread, count) ((uint64_t)(thread) << 48 | (uint64_t)(count))
#define VT_ACK_THREAD(m) ((uint32_t)((m) >> 48))
#define VT_ACK_COUNT(m) ((m) & 0xffffffffffffull)

/* Shim jobs: the size of event k of thread t (multiple of 256, unique). */
#define VT_JOB_SIZE(t, k, per_thread) (256ull * (1 + (uint64_t)(t) * (per_thread) + (k)))

#endif
