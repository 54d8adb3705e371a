/* Test tool: the allocation sites of a trace, one line each:
 *   <site>\t<allocs>\t<bytes>\t<canonical stacks>\t<stack records>\t<source>
 * sorted by bytes. Options: --write-sidecar (write DIR/symbols.vtsym first),
 * --no-sidecar, --no-files (symbolizer flags), --stacks (then the full stack
 * of each site's first stack). Exit 1 on a trace error. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_reader.h"
#include "trace_dir.h"
#include "sidecar_read.h"
#include "sidecar_write.h"
#include "sites.h"
#include "stack_store.h"
#include "symbolize.h"

struct site_sum {
	char site[512];
	const char *source;
	uint64_t allocs, bytes;
	uint32_t stacks[64];
	unsigned nstacks;
	uint32_t records;
};

struct ctx {
	struct vt_sites sites;
	uint32_t log_index;
	struct site_sum sums[256];
	unsigned nsums;
};

static void add_stack_once(struct site_sum *s, const struct vt_stack *stack)
{
	for (unsigned i = 0; i < s->nstacks; i++)
		if (s->stacks[i] == stack->id)
			return;
	if (s->nstacks < 64) {
		s->stacks[s->nstacks++] = stack->id;
		s->records += stack->records;
	}
}

static int on_record(const struct vt_record_view *rec, void *p)
{
	struct ctx *c = p;
	if (rec->type != VT_REC_ALLOC)
		return 0;
	const struct vt_event *ev = rec->data;
	struct vt_stack_store *st = c->sites.store;
	const struct vt_stack *s =
		vt_stack_store_stack(st, vt_stack_store_canonical(st, c->log_index, ev->stack_id));
	const char *site = vt_sites_of_event(&c->sites, c->log_index, ev->stack_id);
	char again[512];
	int frame = vt_site_of_stack(c->sites.rules, c->sites.sym, st, s, again, sizeof again);
	if (strcmp(again, site)) {
		fprintf(stderr, "sites_tool: cached site '%s' != '%s'\n", site, again);
		exit(1);
	}
	const char *source = "-";
	if (frame >= 0) {
		struct vt_frame_names fn;
		vt_symbolize_frame(c->sites.sym, st, &s->frames[frame], &fn);
		source = fn.source ? fn.source : "unnamed";
	}
	struct site_sum *sum = NULL;
	for (unsigned i = 0; i < c->nsums && !sum; i++)
		if (!strcmp(c->sums[i].site, site))
			sum = &c->sums[i];
	if (!sum && c->nsums < 256) {
		sum = &c->sums[c->nsums++];
		snprintf(sum->site, sizeof sum->site, "%s", site);
		sum->source = source;
	}
	if (sum) {
		sum->allocs++;
		sum->bytes += ev->bytes;
		if (s)
			add_stack_once(sum, s);
	}
	return 0;
}

static int by_bytes(const void *a, const void *b)
{
	const struct site_sum *x = a, *y = b;
	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: sites_tool DIR [--write-sidecar] [--no-sidecar] [--no-files]\n");
		return 2;
	}
	unsigned flags = 0;
	int stacks = 0;
	for (int i = 2; i < argc; i++) {
		stacks |= !strcmp(argv[i], "--stacks");
		if (!strcmp(argv[i], "--write-sidecar") && vt_sidecar_write(argv[1]) != 0)
			return 1;
		flags |= !strcmp(argv[i], "--no-sidecar") ? VT_SYM_NO_SIDECAR : 0;
		flags |= !strcmp(argv[i], "--no-files") ? VT_SYM_NO_FILES : 0;
	}
	char err[512];
	struct vt_trace t;
	if (vt_trace_open(argv[1], &t, err, sizeof err) != 0) {
		fprintf(stderr, "sites_tool: %s\n", err);
		return 1;
	}
	static struct ctx c;
	if (vt_sites_open(&c.sites, &t, flags, err, sizeof err)) {
		fprintf(stderr, "sites_tool: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < t.nlogs; i++) {
		c.log_index = (uint32_t)i;
		vt_log_for_each(t.logs[i], on_record, &c);
	}
	qsort(c.sums, c.nsums, sizeof c.sums[0], by_bytes);
	for (unsigned i = 0; i < c.nsums; i++)
		printf("%s\t%llu\t%llu\t%u\t%u\t%s\n", c.sums[i].site,
		       (unsigned long long)c.sums[i].allocs, (unsigned long long)c.sums[i].bytes,
		       c.sums[i].nstacks, c.sums[i].records, c.sums[i].source);
	for (unsigned i = 0; stacks && i < c.nsums; i++) {
		printf("stack of %s:\n", c.sums[i].site);
		vt_sites_print_stack(&c.sites, c.sums[i].stacks[0], stdout, "  ");
	}
	vt_sites_close(&c.sites);
	vt_trace_close(&t);
	return 0;
}
