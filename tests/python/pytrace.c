/* pytrace DIR: one JSON line per event of a trace with the Python frames of
 * its stack, decoded by analyzer/pystack.c from the log as read by the real
 * reader. The end-to-end tests (e2e_check.py) assert on this output; it
 * depends on no report format.
 *   {"log":0,"type":"copy","bytes":8388608,"tid":123,"depth":40,
 *    "site":"upload (/x/e2e_data.py:33)",
 *    "python":[["/x/e2e_data.py","upload",33,0,12],...]}   file, func, line,
 *                                                            eval_ord, nidx
 * Then a summary line {"summary":{"pystr":N,"notes":N,"stacks":N,"logs":N,
 * "died":N}} (died: logs whose process never exited cleanly). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "log_reader.h"
#include "trace_dir.h"
#include "pystack.h"

struct stack_entry {
	uint32_t id;
	const struct vt_stack_rec *rec;
	UT_hash_handle hh;
};

struct ctx {
	struct vt_pystrs *ps;
	struct stack_entry *stacks;
	uint32_t log_index;
	unsigned pystr, notes, nstacks;
};

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void print_event(struct ctx *c, const struct vt_record_view *v)
{
	static const char *const names[] = {"", "alloc", "free", "copy", "map", "unmap",
					    "reserve", "unreserve", "memset", "pool_trim"};
	const struct vt_event *ev = v->data;
	struct stack_entry *se = NULL;
	HASH_FIND(hh, c->stacks, &ev->stack_id, sizeof ev->stack_id, se);
	printf("{\"log\":%u,\"type\":\"%s\",\"bytes\":%llu,\"tid\":%u,\"depth\":%u", c->log_index,
	       names[v->type], (unsigned long long)ev->bytes, v->tid, se ? se->rec->depth : 0);
	static struct vt_pyframe frames[VT_MAX_FRAMES];
	unsigned n = 0;
	if (se && se->rec->py_depth) {
		uint64_t words[2 * VT_MAX_FRAMES];
		n = se->rec->py_depth > VT_MAX_FRAMES ? VT_MAX_FRAMES : se->rec->py_depth;
		vt_pystack_globalize(c->ps, c->log_index, se->rec->frames + se->rec->depth, n, words);
		vt_pystack_decode(c->ps, words, n, frames);
	}
	int site = vt_pystack_site(frames, n);
	if (site >= 0) {
		char buf[1024];
		vt_pystack_format(&frames[site], buf, sizeof buf);
		printf(",\"site\":");
		json_str(buf);
	}
	printf(",\"python\":[");
	for (unsigned i = 0; i < n; i++) {
		printf("%s[", i ? "," : "");
		json_str(frames[i].file);
		putchar(',');
		json_str(frames[i].func);
		printf(",%u,%u,%d]", frames[i].line, frames[i].eval_ord,
		       frames[i].native_index == VT_PYSTACK_NIDX_UNKNOWN ? -1
								   : (int)frames[i].native_index);
	}
	printf("]}\n");
}

static int on_record(const struct vt_record_view *v, void *p)
{
	struct ctx *c = p;
	if (v->type == VT_REC_STACK && v->size >= sizeof(struct vt_stack_rec)) {
		const struct vt_stack_rec *rec = v->data;
		size_t words = rec->depth + 2u * rec->py_depth;
		if (sizeof *rec + words * 8 > v->size)
			return 0;
		struct stack_entry *se = calloc(1, sizeof *se);
		se->id = rec->stack_id;
		se->rec = rec;
		HASH_ADD(hh, c->stacks, id, sizeof se->id, se);
		c->nstacks++;
	} else if (v->type == VT_REC_PYSTR) {
		c->pystr++;
	} else if (v->type == VT_REC_NOTE) {
		c->notes++;
	} else if (v->type >= VT_REC_ALLOC && v->type <= VT_REC_POOL_TRIM) {
		print_event(c, v);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: pytrace TRACE_DIR\n");
		return 2;
	}
	struct vt_trace t;
	char err[256];
	if (vt_trace_open(argv[1], &t, err, sizeof err)) {
		fprintf(stderr, "pytrace: %s\n", err);
		return 1;
	}
	struct ctx c = {.ps = vt_pystrs_new()};
	unsigned died = 0; /* logs whose process never exited cleanly */
	vt_pystrs_load_trace(c.ps, &t);
	for (size_t i = 0; i < t.nlogs; i++) {
		c.log_index = (uint32_t)i;
		died += VT_STATE_OF(vt_log_header(t.logs[i])->state) == VT_STATE_RUNNING;
		vt_log_for_each(t.logs[i], on_record, &c);
		struct stack_entry *se, *tmp;
		HASH_ITER(hh, c.stacks, se, tmp) {
			HASH_DEL(c.stacks, se);
			free(se);
		}
	}
	printf("{\"summary\":{\"pystr\":%u,\"notes\":%u,\"stacks\":%u,\"logs\":%zu,"
	       "\"died\":%u}}\n",
	       c.pystr, c.notes, c.nstacks, t.nlogs, died);
	vt_pystrs_free(c.ps);
	vt_trace_close(&t);
	return 0;
}
