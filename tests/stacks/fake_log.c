/* In-memory stand-in for the log writer (fake_log.h). */
#define _GNU_SOURCE
#include "fake_log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log_writer.h"

#define MAX_RECS 200000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct fake_rec recs[MAX_RECS];
static size_t nrecs;
static int enabled = 1;
static _Atomic uint64_t seq;

void fake_log_reset(void)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < nrecs; i++)
		free((void *)recs[i].data);
	nrecs = 0;
	pthread_mutex_unlock(&mu);
}

void fake_log_set_enabled(int on)
{
	enabled = on;
}

size_t fake_log_count(void)
{
	return nrecs;
}

size_t fake_log_count_type(uint32_t type)
{
	size_t n = 0;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < nrecs; i++)
		n += recs[i].type == type;
	pthread_mutex_unlock(&mu);
	return n;
}

const struct fake_rec *fake_log_get(size_t i)
{
	return i < nrecs ? &recs[i] : NULL;
}

const struct vt_stack_rec *fake_log_stack(uint32_t id)
{
	const struct vt_stack_rec *found = NULL;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < nrecs && !found; i++) {
		const struct vt_stack_rec *s = recs[i].data;
		if (recs[i].type == VT_REC_STACK && s->stack_id == id)
			found = s;
	}
	pthread_mutex_unlock(&mu);
	return found;
}

/* ---- log_writer.h ------------------------------------------------------- */

void vt_log_config_from_env(struct vt_log_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
}

int vt_log_init(const struct vt_log_config *cfg)
{
	(void)cfg;
	return 0;
}

void *vt_log_reserve(uint32_t size)
{
	return enabled ? calloc(1, size) : NULL;
}

void vt_log_commit(void *rec, uint32_t type, uint32_t size)
{
	*(uint32_t *)rec = VT_HDR(type, size);
	pthread_mutex_lock(&mu);
	if (nrecs < MAX_RECS)
		recs[nrecs++] = (struct fake_rec){type, size, gettid(), rec};
	else
		free(rec);
	pthread_mutex_unlock(&mu);
}

uint64_t vt_log_next_seq(void)
{
	return atomic_fetch_add(&seq, 1) + 1;
}

uint64_t vt_log_now_ns(void)
{
	return 0;
}

int vt_log_write_event(uint32_t type, const struct vt_event *ev)
{
	struct vt_event *e = vt_log_reserve(sizeof *e);
	if (!e)
		return -1;
	*e = *ev;
	vt_log_commit(e, type, sizeof *e);
	return 0;
}

int vt_log_write_note(const char *text)
{
	size_t len = strlen(text);
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof(struct vt_note_rec) + len));
	struct vt_note_rec *n = vt_log_reserve(size);
	if (!n)
		return -1;
	n->len = (uint32_t)len;
	memcpy(n->text, text, len);
	vt_log_commit(n, VT_REC_NOTE, size);
	return 0;
}

int vt_log_write_mark(uint16_t kind, const char *text, uint64_t value)
{
	(void)kind, (void)text, (void)value;
	return 0;
}

void vt_log_finish(int exit_code)
{
	(void)exit_code;
}

void vt_log_before_exec(void)
{
}

void vt_log_exec_failed(void)
{
}

int vt_log_active(void)
{
	return enabled;
}

/* the header's stack counts: this log has no header */
void vt_log_add_stack_counts(uint64_t captures, uint64_t hits, uint64_t verified,
                             uint64_t mismatches)
{
	(void)captures, (void)hits, (void)verified, (void)mismatches;
}
