/* Loading a trace directory into the model through the log reader; the
 * stacks and modules also go to the stacks part's store (sites.h) in the
 * same pass, so reports name sites "function (file:line)". */
#include "model_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log_reader.h"
#include "proc_alive.h"
#include "trace_dir.h"
#include "model.h"
#include "model_fold.h"
#include "model_history.h"
#include "model_stream.h"
#include "nomem.h"

#include "sites.h"

static vt_load_progress_fn load_progress;
static void *load_progress_ctx;

void vt_model_set_load_progress(vt_load_progress_fn fn, void *ctx)
{
	load_progress = fn;
	load_progress_ctx = ctx;
}

struct feed_ctx {
	struct vt_model *m;
	uint32_t proc;
	uint64_t records, done_before, total; /* progress: log bytes */
	struct vt_sites *sites;
};

static int feed_one(const struct vt_record_view *rec, void *vctx)
{
	struct feed_ctx *c = vctx;
	vt_model_feed_thread(c->m, c->proc, rec->tid, rec->type, rec->data, rec->size);
	if ((++c->records & 0x3fff) == 0 && load_progress)
		load_progress(c->done_before + rec->offset, c->total, load_progress_ctx);
	if ((rec->type == VT_REC_STACK || rec->type == VT_REC_MODULE) && c->sites)
		vt_stack_store_add(c->sites->store, c->proc, rec, NULL, 0);
	return 0;
}

/* A run of events: feed_one's work for each, in one call. The progress
 * line is moved at the record where feed_one would move it (a run is far
 * shorter than the 16384 records between two moves). */
static int feed_run(const struct vt_event_run *run, void *vctx)
{
	struct feed_ctx *c = vctx;
	vt_model_feed_events(c->m, c->proc, run->tid, run->ev, run->n);
	uint64_t k = 0x3fff - (c->records & 0x3fff); /* the run's record that is a 16384th */
	c->records += run->n;
	if (k < run->n && load_progress)
		load_progress(c->done_before + vt_event_run_offset(run, k), c->total,
		              load_progress_ctx);
	return 0;
}

static void close_sites(struct vt_sites *s)
{
	vt_sites_close(s);
	free(s);
}

/* Site rules from the environment (VRAMTRACE_SITE_SKIP...), an empty stack
 * store to fill during the pass, the symbolizer on the trace's sidecar. */
static struct vt_sites *open_sites(const char *dir)
{
	char err[256];
	struct vt_sites *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->rules = vt_site_rules_from_env(err, sizeof err);
	if (!s->rules) {
		fprintf(stderr, "vramtrace: %s (using the default site rules)\n", err);
		s->rules = vt_site_rules_new();
		vt_site_rules_add_defaults(s->rules);
	}
	s->store = vt_stack_store_new();
	s->sym = vt_symbolizer_open(dir, 0);
	return s;
}

/* One line naming what does not add up in the trace (double frees, lost
 * records, damage, a hostile log), so a report built on the rest is read
 * with that in mind. Nothing when all is consistent. */
/* A log whose writer dropped records (a size cap, a full disk) said so
 * already: the frees, allocations and copies it lost are expected then. */
static int records_dropped(const struct vt_model *m)
{
	for (uint32_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].events_dropped || (m->procs[i].header_flags & VT_FLAG_TRUNCATED))
			return 1;
	return 0;
}

static void warn_inconsistencies(const struct vt_model *m, const char *dir)
{
	const struct vt_totals *t = &m->totals;
	int dropped = records_dropped(m);
	const struct {
		uint64_t n;
		const char *what;
	} items[] = {
	    {dropped ? 0 : t->frees_unmatched,
	     "frees of memory never allocated (double frees or lost records)"},
	    {dropped ? 0 : t->implicit_frees, "allocations over live memory (its free was lost)"},
	    {dropped ? 0 : t->copies_to_nowhere,
	     "host-to-device copies into memory never allocated"},
	    {t->time_backwards, "events earlier than the one before them on their thread"},
	    {t->unknown_stacks, "events naming a stack never recorded"},
	    {t->implausible, "events of impossible size (ignored)"},
	};
	char line[512];
	size_t len = 0;
	for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
		if (items[i].n && len < sizeof line)
			len += (size_t)snprintf(line + len, sizeof line - len, "%s%llu %s",
			                        len ? ", " : "", (unsigned long long)items[i].n,
			                        items[i].what);
	if (len)
		fprintf(stderr, "vramtrace: %s: inconsistent trace: %s; the report uses the rest\n",
		        dir, line);
}

/* Every log of the trace into m (a full or a streaming model). */
static struct vt_model *load_into(struct vt_model *m, const char *dir, char *err, size_t errlen)
{
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	struct vt_trace trace;
	if (vt_trace_open(dir, &trace, err, errlen) != 0) {
		vt_model_free(m);
		return NULL;
	}
	if (trace.nlogs == 0) {
		snprintf(err, errlen, "%s: no vramtrace logs in this directory", dir);
		vt_trace_close(&trace);
		vt_model_free(m);
		return NULL;
	}
	struct feed_ctx c = {.m = m};
	c.sites = open_sites(trace.dir);
	m->sites = c.sites;
	if (c.sites) /* Python names first: stacks are folded on them */
		vt_stack_store_load_pystrs(c.sites->store, &trace);
	m->sites_close = close_sites;
	uint64_t start = vt_trace_start_ns(&trace);
	for (size_t i = 0; load_progress && i < trace.nlogs; i++) {
		struct stat st;
		if (stat(vt_log_path(trace.logs[i]), &st) == 0)
			c.total += (uint64_t)st.st_size;
	}
	for (size_t i = 0; i < trace.nlogs; i++) {
		c.proc = vt_model_begin_process(m, vt_log_header(trace.logs[i]), start);
		m->procs[c.proc].running =
		    vt_log_process_running(vt_log_header(trace.logs[i]), dir);
		vt_log_for_each_run(trace.logs[i], feed_one, feed_run, &c);
		m->warnings += vt_log_warnings(trace.logs[i]);
		m->procs[c.proc].integrity = *vt_log_integrity(trace.logs[i]);
		struct stat st;
		if (load_progress && stat(vt_log_path(trace.logs[i]), &st) == 0)
			c.done_before += (uint64_t)st.st_size;
		vt_model_end_process(m, c.proc);
	}
	vt_model_finish(m);
	warn_inconsistencies(m, trace.dir);
	vt_trace_close(&trace);
	return m;
}

struct vt_model *vt_model_load_trace(const char *dir, char *err, size_t errlen)
{
	return load_into(vt_model_new(), dir, err, errlen);
}

struct vt_model *vt_model_load_trace_folding(const char *dir, char *err, size_t errlen)
{
	return load_into(vt_model_new_folding(), dir, err, errlen);
}

struct vt_model *vt_model_load_trace_streaming(const char *dir, char *err, size_t errlen)
{
	return load_into(vt_model_new_streaming(), dir, err, errlen);
}

/* ---- following a trace while its job runs -------------------------------- */

struct vt_trace_follow {
	struct vt_trace trace;
	struct vt_model *m;
	struct feed_ctx feed;
	uint32_t *procs; /* the model's process of each log */
	uint8_t *state;  /* enum vt_follow_state of each log */
	size_t nknown, cap;
	uint64_t start_ns;
};

struct vt_trace_follow *vt_trace_follow_open(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: not a trace directory", dir);
		return NULL;
	}
	struct vt_trace_follow *f = calloc(1, sizeof *f);
	if (!f || !(f->trace.dir = strdup(dir)) || !(f->m = vt_model_new_streaming())) {
		vt_trace_follow_close(f);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	f->feed.m = f->m;
	f->feed.sites = open_sites(dir);
	f->m->sites = f->feed.sites;
	f->m->sites_close = close_sites;
	return f;
}

void vt_trace_follow_close(struct vt_trace_follow *f)
{
	if (!f)
		return;
	vt_model_free(f->m);
	vt_trace_close(&f->trace);
	free(f->procs);
	free(f->state);
	free(f);
}

/* Logs that appeared: a process each in the model. */
static void follow_new_logs(struct vt_trace_follow *f)
{
	vt_trace_open_new(&f->trace);
	if (f->trace.nlogs > f->cap) {
		f->cap = f->trace.nlogs * 2;
		f->procs = realloc(f->procs, f->cap * sizeof *f->procs);
		f->state = realloc(f->state, f->cap * sizeof *f->state);
		if (!f->procs || !f->state)
			vt_nomem();
	}
	for (size_t i = f->nknown; i < f->trace.nlogs; i++) {
		const struct vt_file_header *h = vt_log_header(f->trace.logs[i]);
		if (!f->start_ns || h->clock_base_ns < f->start_ns)
			f->start_ns = h->clock_base_ns;
		f->procs[i] = vt_model_begin_process(f->m, h, f->start_ns);
		f->state[i] = VT_FOLLOW_RUNNING;
	}
	f->nknown = f->trace.nlogs;
}

/* What the header says of log i's process now (its process is gone: it
 * wrote its exit, was replaced by exec, or died without either). */
static enum vt_follow_state log_state(const struct vt_trace_follow *f, size_t i)
{
	const struct vt_file_header *h = vt_log_header(f->trace.logs[i]);
	switch (VT_STATE_OF(h->state)) {
	case VT_STATE_EXITED:
		return VT_FOLLOW_EXITED;
	case VT_STATE_EXECED:
		return VT_FOLLOW_EXECED;
	default:
		return vt_log_process_running(h, f->trace.dir) ? VT_FOLLOW_RUNNING
		                                               : VT_FOLLOW_KILLED;
	}
}

uint64_t vt_trace_follow_poll(struct vt_trace_follow *f)
{
	follow_new_logs(f);
	uint64_t before = f->feed.records;
	for (size_t i = 0; i < f->nknown; i++) {
		if (f->state[i] != VT_FOLLOW_RUNNING)
			continue;
		/* the state before the records: a process seen gone has written
		 * everything it will, so this pass reads its last records */
		enum vt_follow_state st = log_state(f, i);
		struct vt_log *log = f->trace.logs[i];
		f->feed.proc = f->procs[i];
		vt_log_follow(log, feed_one, &f->feed);
		struct vt_proc *p = &f->m->procs[f->procs[i]];
		p->state_word = vt_log_header(log)->state;
		p->running = st == VT_FOLLOW_RUNNING;
		if (st != VT_FOLLOW_RUNNING) {
			p->clean_exit = st == VT_FOLLOW_EXITED;
			p->exit_code = p->clean_exit ? VT_EXIT_CODE_OF(p->state_word) : 0;
			vt_model_end_process(f->m, f->procs[i]);
			f->state[i] = (uint8_t)st;
		}
	}
	return f->feed.records - before;
}

struct vt_model *vt_trace_follow_model(const struct vt_trace_follow *f)
{
	return f->m;
}

size_t vt_trace_follow_logs(const struct vt_trace_follow *f)
{
	return f->nknown;
}

uint32_t vt_trace_follow_proc(const struct vt_trace_follow *f, size_t i)
{
	return f->procs[i];
}

enum vt_follow_state vt_trace_follow_state(const struct vt_trace_follow *f, size_t i)
{
	return (enum vt_follow_state)f->state[i];
}
