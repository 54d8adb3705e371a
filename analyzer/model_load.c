/* Loading a trace directory into the model through the log reader. */
#include <stdio.h>

#include "log_reader.h"
#include "model.h"

struct feed_ctx {
	struct vt_model *m;
	uint32_t proc;
};

static int feed_one(const struct vt_record_view *rec, void *vctx)
{
	struct feed_ctx *c = vctx;
	vt_model_feed(c->m, c->proc, rec->type, rec->data, rec->size);
	return 0;
}

struct vt_model *vt_model_load_trace(const char *dir, char *err, size_t errlen)
{
	struct vt_trace trace;
	if (vt_trace_open(dir, &trace, err, errlen) != 0)
		return NULL;
	if (trace.nlogs == 0) {
		snprintf(err, errlen, "%s: no vramtrace logs in this directory", dir);
		vt_trace_close(&trace);
		return NULL;
	}
	struct vt_model *m = vt_model_new();
	if (!m) {
		snprintf(err, errlen, "out of memory");
		vt_trace_close(&trace);
		return NULL;
	}
	uint64_t start = vt_trace_start_ns(&trace);
	for (size_t i = 0; i < trace.nlogs; i++) {
		struct feed_ctx c = {m, vt_model_begin_process(m, vt_log_header(trace.logs[i]), start)};
		vt_log_for_each(trace.logs[i], feed_one, &c);
		m->warnings += vt_log_warnings(trace.logs[i]);
		vt_model_end_process(m, c.proc);
	}
	vt_trace_close(&trace);
	vt_model_finish(m);
	return m;
}
