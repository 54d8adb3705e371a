/* Per-type record validation, table-driven: a fixed part that must fit and
 * at most one length field whose bytes must fit after it. */
#include "log_record_check.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "record_text.h"
#include "vramtrace/event_packed.h"
#include "vramtrace/format.h"

struct rule {
	uint32_t fixed;    /* bytes before the variable part */
	uint32_t len_off;  /* offset of the length field (0: none) */
	uint8_t len_width; /* 2 or 4 bytes */
	uint8_t unit;      /* bytes per length unit */
	const char *len_name;
};

#define LEN(type, field, unit)                                                                     \
	offsetof(type, field), sizeof(((type *)0)->field), unit, #field " runs past the record"

static const struct rule rules[] = {
    [VT_REC_ALLOC] = {sizeof(struct vt_event), 0, 0, 0, NULL},
    [VT_REC_FREE] = {sizeof(struct vt_event), 0, 0, 0, NULL},
    [VT_REC_COPY] = {sizeof(struct vt_event), 0, 0, 0, NULL},
    [VT_REC_MAP] = {sizeof(struct vt_event), 0, 0, 0, NULL},
    [VT_REC_UNMAP] = {sizeof(struct vt_event), 0, 0, 0, NULL},
    [VT_REC_RESERVE] = {sizeof(struct vt_event), 0, 0, 0, NULL},
    [VT_REC_UNRESERVE] = {sizeof(struct vt_event), 0, 0, 0, NULL},
    [VT_REC_MEMSET] = {sizeof(struct vt_event), 0, 0, 0, NULL},
    [VT_REC_POOL_TRIM] = {sizeof(struct vt_event), 0, 0, 0, NULL},
    [VT_REC_FREE_SHORT] = {sizeof(struct vt_free_event), 0, 0, 0, NULL},
    [VT_REC_PACKED] = {16, 0, 0, 0, NULL},                         /* see vt_packed_decode */
    [VT_REC_STACK] = {sizeof(struct vt_stack_rec), 0, 0, 0, NULL}, /* see stack_problem */
    [VT_REC_MODULE] = {sizeof(struct vt_module_rec), LEN(struct vt_module_rec, path_len, 1)},
    [VT_REC_MEMINFO] = {sizeof(struct vt_meminfo_rec), 0, 0, 0, NULL},
    [VT_REC_MARK] = {sizeof(struct vt_mark_rec), LEN(struct vt_mark_rec, text_len, 1)},
    [VT_REC_THREAD] = {sizeof(struct vt_thread_rec), LEN(struct vt_thread_rec, name_len, 1)},
    [VT_REC_EXIT] = {sizeof(struct vt_exit_rec), 0, 0, 0, NULL},
    [VT_REC_DEVICE] = {sizeof(struct vt_device_rec), LEN(struct vt_device_rec, name_len, 1)},
    [VT_REC_LOOKUP] = {sizeof(struct vt_lookup_rec), LEN(struct vt_lookup_rec, name_len, 1)},
    [VT_REC_PYSTR] = {sizeof(struct vt_pystr_rec), LEN(struct vt_pystr_rec, len, 1)},
    [VT_REC_NOTE] = {sizeof(struct vt_note_rec), LEN(struct vt_note_rec, len, 1)},
    [VT_REC_NVML] = {sizeof(struct vt_nvml_rec),
                     LEN(struct vt_nvml_rec, nlisted, sizeof(struct vt_nvml_proc))},
};

static uint32_t read_len(const uint8_t *rec, const struct rule *r)
{
	if (r->len_width == 2) {
		uint16_t v;
		memcpy(&v, rec + r->len_off, sizeof v);
		return v;
	}
	uint32_t v;
	memcpy(&v, rec + r->len_off, sizeof v);
	return v;
}

static const char *stack_problem(const uint8_t *rec, uint32_t size)
{
	struct vt_stack_rec s;
	memcpy(&s, rec, sizeof s);
	if (s.stack_id == 0)
		return "stack id 0";
	uint64_t words = (uint64_t)s.depth + 2u * (uint64_t)s.py_depth;
	if (sizeof s + 8 * words > size)
		return "depth runs past the record";
	return NULL;
}

const char *vt_record_problem(const uint8_t *rec, uint32_t type, uint32_t size)
{
	if (type >= sizeof rules / sizeof rules[0] || rules[type].fixed == 0)
		return ""; /* unknown kind: skipped quietly */
	const struct rule *r = &rules[type];
	if (size < r->fixed)
		return "record shorter than its fixed part";
	if (type == VT_REC_STACK)
		return stack_problem(rec, size);
	if (type == VT_REC_PACKED) /* the fields: checked where decoded (log_reader.c) */
		return vt_packed_header_problem(rec, size);
	if (type == VT_REC_MODULE && rec[offsetof(struct vt_module_rec, build_id_len)] > 32)
		return "build_id_len over 32";
	if (r->len_width && (uint64_t)r->fixed + (uint64_t)read_len(rec, r) * r->unit > size)
		return r->len_name; /* the length field that overflows */
	return NULL;
}

const char *vt_record_check_name(uint32_t type)
{
	static __thread char buf[24];
	const char *name = vt_rec_name(type);
	if (name)
		return name;
	snprintf(buf, sizeof buf, "type %u", type);
	return buf;
}
