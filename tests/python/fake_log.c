/* A stand-in for the log writer, for testing Python frame capture inside a
 * Python process without the shim: records go into one in-memory buffer
 * that the probe reads back (vt_fake_pystr). Same contract as log_writer.h:
 * zeroed memory, header word stored last. */
#include <stdatomic.h>
#include <string.h>

#include "log_writer.h"

#define FAKE_LOG_SIZE (4u << 20)

static _Alignas(8) unsigned char buf[FAKE_LOG_SIZE];
static _Atomic uint32_t used;
static _Atomic uint32_t notes;
static _Atomic int refuse; /* simulate a full / disabled log */

void *vt_log_reserve(uint32_t size)
{
	if (atomic_load(&refuse))
		return NULL;
	uint32_t at = atomic_fetch_add(&used, size);
	if (at + size > FAKE_LOG_SIZE)
		return NULL;
	return buf + at;
}

void vt_log_commit(void *rec, uint32_t type, uint32_t size)
{
	atomic_store_explicit((_Atomic uint32_t *)rec, VT_HDR(type, size), memory_order_release);
}

int vt_log_write_note(const char *text)
{
	(void)text;
	atomic_fetch_add(&notes, 1);
	return 0;
}

/* ---- for the probe ---- */

void vt_fake_refuse(int on)
{
	atomic_store(&refuse, on);
}

unsigned vt_fake_notes(void)
{
	return atomic_load(&notes);
}

/* Text of PYSTR id into out (NUL-terminated); -1 if no such record.
 * Also counts the records carrying that id into *copies. */
int vt_fake_pystr(uint32_t id, char *out, size_t outlen, unsigned *copies)
{
	uint32_t end = atomic_load(&used), at = 0;
	int found = -1;
	*copies = 0;
	while (at + 8 <= end && at + 8 <= FAKE_LOG_SIZE) {
		uint32_t hdr = atomic_load_explicit((_Atomic uint32_t *)(buf + at), memory_order_acquire);
		if (!hdr)
			break; /* reserved, not yet committed (or a refused tail) */
		const struct vt_pystr_rec *rec = (const void *)(buf + at);
		if (VT_HDR_TYPE(hdr) == VT_REC_PYSTR && rec->id == id) {
			size_t n = rec->len < outlen - 1 ? rec->len : outlen - 1;
			memcpy(out, rec->text, n);
			out[n] = 0;
			found = 0;
			++*copies;
		}
		at += VT_HDR_SIZE(hdr);
	}
	return found;
}

/* Number of PYSTR records whose text equals s. */
unsigned vt_fake_count_text(const char *s)
{
	uint32_t end = atomic_load(&used), at = 0;
	unsigned count = 0;
	size_t len = strlen(s);
	while (at + 8 <= end) {
		uint32_t hdr = atomic_load_explicit((_Atomic uint32_t *)(buf + at), memory_order_acquire);
		if (!hdr)
			break;
		const struct vt_pystr_rec *rec = (const void *)(buf + at);
		if (VT_HDR_TYPE(hdr) == VT_REC_PYSTR && rec->len == len && !memcmp(rec->text, s, len))
			count++;
		at += VT_HDR_SIZE(hdr);
	}
	return count;
}
