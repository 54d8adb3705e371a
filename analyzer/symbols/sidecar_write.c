/* The symbol sidecar's writer (sidecar_write.h). */
#define _GNU_SOURCE
#include "sidecar_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nomem.h"
#include "sidecar_read.h" /* the format: name, version, limits */
#include "trace_dir.h"

/* ---- escaping ------------------------------------------------------------ */

static void put_escaped(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '\\')
			fputs("\\\\", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
}

struct used { /* one (module, offset) a stack uses */
	uint32_t module;
	uint64_t offset;
};

static int cmp_used(const void *a, const void *b)
{
	const struct used *x = a, *y = b;
	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Every (module, offset) of every stack, sorted, without repeats. */
static struct used *collect_used(const struct vt_stack_store *st, size_t *count)
{
	size_t n = 0, cap = 0;
	for (uint32_t id = 1; id <= vt_stack_store_count(st); id++)
		cap += vt_stack_store_stack(st, id)->depth;
	struct used *u = vt_xcalloc(cap, sizeof *u);
	for (uint32_t id = 1; id <= vt_stack_store_count(st); id++) {
		const struct vt_stack *s = vt_stack_store_stack(st, id);
		for (unsigned i = 0; i < s->depth; i++)
			if (s->frames[i].module)
				u[n++] = (struct used){s->frames[i].module, s->frames[i].offset};
	}
	qsort(u, n, sizeof *u, cmp_used);
	size_t keep = 0;
	for (size_t i = 0; i < n; i++)
		if (!keep || cmp_used(&u[keep - 1], &u[i]))
			u[keep++] = u[i];
	*count = keep;
	return u;
}

static void write_module_line(FILE *out, uint32_t n, const struct vt_module_info *mod)
{
	fprintf(out, "M\t%u\t", n);
	for (unsigned i = 0; i < mod->build_id_len; i++)
		fprintf(out, "%02x", mod->build_id[i]);
	fputc('\t', out);
	put_escaped(out, mod->path);
	fputc('\n', out);
}

int vt_sidecar_write_store(const struct vt_stack_store *st, struct vt_symbolizer *sym, FILE *out,
			   size_t *naddrs)
{
	size_t n, written = 0;
	struct used *u = collect_used(st, &n);
	uint32_t last_module = 0, file_number = 0;
	fprintf(out, "vtsym\t%d\n", VT_SIDECAR_VERSION);
	for (size_t i = 0; i < n; i++) {
		const struct vt_module_info *mod = vt_stack_store_module(st, u[i].module);
		struct vt_frame_names names;
		if (vt_symbolize_from_file(sym, mod, u[i].offset, &names) != VT_SYM_OK)
			continue;
		if (u[i].module != last_module) {
			last_module = u[i].module;
			write_module_line(out, ++file_number, mod);
		}
		size_t k = names.n > VT_SIDECAR_MAX_FRAMES ? VT_SIDECAR_MAX_FRAMES : names.n;
		fprintf(out, "A\t%u\t%llx\t%zu\n", file_number, (unsigned long long)u[i].offset, k);
		for (size_t j = 0; j < k; j++) {
			const struct vt_symbol *s = &names.sym[j];
			fputs("F\t", out);
			put_escaped(out, s->function);
			fputc('\t', out);
			put_escaped(out, s->file);
			/* the last kept entry is never "inlined into the next" */
			fprintf(out, "\t%u\t%u\n", s->line, j + 1 < k ? s->inlined : 0);
		}
		written++;
	}
	fprintf(out, "E\t%zu\n", written);
	free(u);
	if (naddrs)
		*naddrs = written;
	return ferror(out) ? -1 : 0;
}

int vt_sidecar_write(const char *dir)
{
	char err[512], tmp[4096], final[4096];
	struct vt_trace t;
	if (vt_trace_open(dir, &t, err, sizeof err) != 0) {
		fprintf(stderr, "vramtrace: symbols not written: %s\n", err);
		return -1;
	}
	struct vt_stack_store *st = vt_stack_store_new();
	vt_stack_store_load_trace(st, &t);
	struct vt_symbolizer *sym = vt_symbolizer_open(NULL, VT_SYM_NO_SIDECAR);
	int rc = -1;
	snprintf(final, sizeof final, "%s/%s", dir, VT_SIDECAR_NAME);
	int n = snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, VT_SIDECAR_NAME);
	int fd = n > 0 && (size_t)n < sizeof tmp ? mkostemp(tmp, O_CLOEXEC) : -1; /* 0600 */
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!out) {
		fprintf(stderr, "vramtrace: symbols not written: %s: %s\n", tmp, strerror(errno));
		if (fd >= 0)
			close(fd), unlink(tmp);
		goto done;
	}
	size_t naddrs = 0;
	int werr = vt_sidecar_write_store(st, sym, out, &naddrs);
	if (fclose(out) != 0 || werr != 0 || rename(tmp, final) != 0) {
		fprintf(stderr, "vramtrace: symbols not written: %s: %s\n", final, strerror(errno));
		unlink(tmp);
		goto done;
	}
	rc = 0;
done:
	vt_symbolizer_close(sym);
	vt_stack_store_free(st);
	vt_trace_close(&t);
	return rc;
}
