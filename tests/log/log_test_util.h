/* Helpers shared by the log tests: temp dirs, reading a log back into an
 * array, capturing the reader's warnings. Tests only: they malloc freely. */
#ifndef VT_LOG_TEST_UTIL_H
#define VT_LOG_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "log_reader.h"

struct lt_rec {
	uint32_t type, size, tid;
	uint64_t offset;
	uint8_t *bytes; /* copy of the record */
};

struct lt_recs {
	struct lt_rec *v;
	size_t n, cap;
};

char *lt_make_dir(void);              /* fresh private temp dir */
void lt_remove_dir(const char *dir);  /* dir and the files in it */
char *lt_log_path(const char *dir, pid_t pid, unsigned exec_index);
size_t lt_count_logs(const char *dir);

/* Every record vt_log_for_each delivers, copied. */
void lt_collect(struct vt_log *log, struct lt_recs *out);
void lt_recs_free(struct lt_recs *r);

/* Events whose addr has `writer` in its high 32 bits, as counters per thread
 * index (low 32 bits of addr): present[t][bytes] = how often seen. */
struct lt_tally {
	unsigned threads;
	uint64_t per_thread;
	uint32_t *seen;     /* threads * per_thread */
	uint64_t foreign;   /* events of another writer */
	uint64_t bad;       /* out-of-range thread or counter */
};
void lt_tally_events(const struct lt_recs *r, uint32_t writer, struct lt_tally *t);
void lt_tally_free(struct lt_tally *t);

/* stderr into a temp file between begin and end; end returns the text
 * (malloc'd) and restores stderr. */
void lt_capture_begin(void);
char *lt_capture_end(void);
unsigned lt_count_lines(const char *text);

/* Write one test event: addr = writer << 32 | thread, bytes = counter. */
int lt_write_counter_event(uint32_t writer, uint32_t thread, uint64_t counter);

/* Wait for a child; returns its exit status or -signal. */
int lt_wait(pid_t pid);

#endif
