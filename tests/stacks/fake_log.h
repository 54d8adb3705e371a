/* A test double for logwriter/log_writer.h: records go into an in-memory
 * list (with the writing thread's id) instead of a file, so the capture and
 * module code can be tested on its own. Thread-safe (a mutex: tests only). */
#ifndef VT_FAKE_LOG_H
#define VT_FAKE_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fake_rec {
	uint32_t type, size;
	pid_t tid;
	const void *data; /* starts at the header word */
};

void fake_log_reset(void);
void fake_log_set_enabled(int on); /* off: vt_log_reserve returns NULL */
size_t fake_log_count(void);
size_t fake_log_count_type(uint32_t type);
const struct fake_rec *fake_log_get(size_t i);
/* The stack record with this id, or NULL. */
const struct vt_stack_rec *fake_log_stack(uint32_t id);

#endif
