/* The site of a stack: innermost frame outside driver, runtime, shim and
 * allocator internals (sites.h). */
#define _GNU_SOURCE
#include "sites.h"

#include "pystack.h"
#include "nomem.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_RULE 1024

const char *const vt_site_default_rules[] = {
	/* the driver, the runtime, the shim */
	"module:libcuda.so*",
	"module:libcudart.so*",
	"module:libvramtrace.so*",
	"module:libcudadebugger.so*",
	"function:cu[A-Z]*",       /* driver API entry points linked statically */
	"function:cuda[A-Z]*",     /* runtime API (static libcudart) */
	"function:__cuda*",
	"function:*cudart::*",
	"function:_ZN6cudart*",
	/* NVIDIA's math and communication libraries allocate their own
	 * workspaces from stripped code (on the H200 trace a 32 MiB cuBLAS
	 * handle's was named libcublas.so.13+0x5b45ed): name who asked */
	"module:libcublas*.so*",
	"module:libcudnn*.so*",
	"module:libnccl.so*",
	"module:libcufft*.so*",
	"module:libcusparse*.so*",
	"module:libcusolver*.so*",
	"module:libcurand.so*",
	/* TensorFlow, XLA, TSL: allocators and StreamExecutor */
	"function:*BFCAllocator*",
	"function:*GPUcudaMallocAllocator*",
	"function:*CudaMallocAsyncAllocator*",
	"function:*GpuCudaMallocAsyncAllocator*",
	"function:*DeviceMemAllocator*",
	"function:*SubAllocator*",
	"function:*AllocatorRetry*",
	"function:*StreamExecutorMemoryAllocator*",
	"function:*GpuExecutor*Allocate*",
	"function:*CudaExecutor*Allocate*",
	"function:*GpuDriver*Allocate*",
	"function:*GpuDriver*DeviceAllocate*",
	/* PyTorch */
	"function:*CUDACachingAllocator*",
	"function:*CUDAMallocAsyncAllocator*",
	"function:*c10*cuda*Alloc*",
	/* PyTorch's tensor factories and dispatcher, seen on an H200 (2.11):
	 * a backward op's output is made on the autograd thread, which has no
	 * Python frame, through ~12 of these below the op that asked */
	"function:at::detail::empty*",
	"function:at::native::empty*",
	"function:at::_ops::*",
	"function:at::meta::*",
	"function:at::(anonymous namespace)::*",
	"function:c10::impl::*",
	"function:c10::Dispatcher::*",
	"function:torch::autograd::VariableType::*",
	/* CuPy memory pools (Cython) */
	"function:*cupy_4cuda_6memory*",
	"function:*cupy*cuda*memory*Pool*",
	NULL,
};

enum rule_kind { RULE_MODULE, RULE_FUNCTION, RULE_FILE };

struct rule {
	enum rule_kind kind;
	char *glob;
};

struct vt_site_rules {
	struct rule *rules;
	size_t n, cap;
};

struct vt_site_rules *vt_site_rules_new(void)
{
	struct vt_site_rules *r = calloc(1, sizeof *r);
	if (!r) {
		vt_nomem();
	}
	return r;
}

void vt_site_rules_free(struct vt_site_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->rules[i].glob);
	free(r->rules);
	free(r);
}

size_t vt_site_rules_count(const struct vt_site_rules *r)
{
	return r->n;
}

int vt_site_rules_add(struct vt_site_rules *r, const char *rule, char *err, size_t errlen)
{
	static const struct {
		const char *prefix;
		enum rule_kind kind;
	} kinds[] = {{"module:", RULE_MODULE}, {"function:", RULE_FUNCTION}, {"file:", RULE_FILE}};
	size_t len = strlen(rule);
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		size_t plen = strlen(kinds[k].prefix);
		if (strncmp(rule, kinds[k].prefix, plen))
			continue;
		if (len == plen || len > MAX_RULE) {
			snprintf(err, errlen, "site rule '%.64s': empty or too long pattern", rule);
			return -1;
		}
		if (r->n == r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 32;
			struct rule *nr = realloc(r->rules, cap * sizeof *nr);
			if (!nr) {
				vt_nomem();
			}
			r->rules = nr;
			r->cap = cap;
		}
		r->rules[r->n].kind = kinds[k].kind;
		r->rules[r->n].glob = strdup(rule + plen);
		if (!r->rules[r->n].glob) {
			vt_nomem();
		}
		r->n++;
		return 0;
	}
	snprintf(err, errlen,
		 "site rule '%.64s': expected module:GLOB, function:GLOB or file:GLOB", rule);
	return -1;
}

int vt_site_rules_add_defaults(struct vt_site_rules *r)
{
	char err[128];
	for (size_t i = 0; vt_site_default_rules[i]; i++)
		if (vt_site_rules_add(r, vt_site_default_rules[i], err, sizeof err))
			return -1;
	return 0;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = '\0';
	return s;
}

int vt_site_rules_load_file(struct vt_site_rules *r, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "site rules %s: %s", path, strerror(errno));
		return -1;
	}
	char line[MAX_RULE + 64];
	int rc = 0;
	unsigned lineno = 0;
	while (rc == 0 && fgets(line, sizeof line, f)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *rule = trim(line);
		if (*rule && vt_site_rules_add(r, rule, err, errlen)) {
			size_t used = strlen(err);
			snprintf(err + used, errlen > used ? errlen - used : 0, " (%s:%u)", path, lineno);
			rc = -1;
		}
	}
	fclose(f);
	return rc;
}

struct vt_site_rules *vt_site_rules_from_env(char *err, size_t errlen)
{
	struct vt_site_rules *r = vt_site_rules_new();
	const char *env = getenv("VRAMTRACE_SITE_SKIP");
	if (!env || env[0] != '=')
		vt_site_rules_add_defaults(r);
	if (env && *env) {
		char *copy = strdup(env[0] == '=' ? env + 1 : env), *save = NULL;
		for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *rule = trim(tok);
			if (*rule && vt_site_rules_add(r, rule, err, errlen)) {
				free(copy);
				vt_site_rules_free(r);
				return NULL;
			}
		}
		free(copy);
	}
	const char *file = getenv("VRAMTRACE_SITE_SKIP_FILE");
	if (file && *file && vt_site_rules_load_file(r, file, err, errlen)) {
		vt_site_rules_free(r);
		return NULL;
	}
	return r;
}

static int module_skipped(const struct vt_site_rules *r, const char *module_path)
{
	const char *base = vt_path_basename(module_path);
	for (size_t i = 0; module_path && i < r->n; i++)
		if (r->rules[i].kind == RULE_MODULE && !fnmatch(r->rules[i].glob, base, 0))
			return 1;
	return 0;
}

int vt_site_rules_skip(const struct vt_site_rules *r, const char *module_path,
		       const struct vt_symbol *s)
{
	if (module_skipped(r, module_path))
		return 1;
	for (size_t i = 0; s && i < r->n; i++) {
		const char *subject = r->rules[i].kind == RULE_FUNCTION ? s->function
				    : r->rules[i].kind == RULE_FILE && s->file ? vt_path_basename(s->file)
									   : NULL;
		if (subject && !fnmatch(r->rules[i].glob, subject, 0))
			return 1;
	}
	return 0;
}

/* Text for entry j of a named frame, or the unnamed frame. */
static void format_site(const struct vt_frame_names *fn, size_t j, const struct vt_stack_store *st,
			const struct vt_frame *f, char *buf, size_t len)
{
	if (fn->status != VT_SYM_OK) {
		vt_format_frame(fn, st, f, buf, len);
		return;
	}
	const struct vt_symbol *s = &fn->sym[j];
	if (s->file && s->line) {
		vt_format_symbol(s, buf, len);
		return;
	}
	const struct vt_module_info *mod = vt_stack_store_module(st, f->module);
	snprintf(buf, len, "%s (%s)", s->function, mod ? vt_path_basename(mod->path) : "?");
}

int vt_site_of_stack(const struct vt_site_rules *r, struct vt_symbolizer *sym,
		     const struct vt_stack_store *st, const struct vt_stack *s, char *buf,
		     size_t len)
{
	if (!s || (s->depth == 0 && s->py_depth == 0)) {
		snprintf(buf, len, "(no stack)");
		return -1;
	}
	/* Python frames: the innermost one in user code is the site */
	if (vt_pystack_site_text(vt_stack_store_pystrs(st), s->py_words, s->py_depth, buf, len,
				 NULL) >= 0)
		return VT_SITE_PYTHON;
	int fallback = -1;
	for (unsigned i = 0; i < s->depth; i++) {
		const struct vt_frame *f = &s->frames[i];
		const struct vt_module_info *mod = vt_stack_store_module(st, f->module);
		const char *path = mod ? mod->path : NULL;
		if (module_skipped(r, path))
			continue;
		struct vt_frame_names fn;
		vt_symbolize_frame(sym, st, f, &fn);
		if (fn.status != VT_SYM_OK) {
			format_site(&fn, 0, st, f, buf, len);
			return (int)i;
		}
		for (size_t j = 0; j < fn.n; j++) {
			if (!vt_site_rules_skip(r, path, &fn.sym[j])) {
				format_site(&fn, j, st, f, buf, len);
				return (int)i;
			}
		}
		if (fallback < 0)
			fallback = (int)i; /* skipped by function: kept in mind */
	}
	/* everything skipped: the innermost frame outside the skipped modules,
	 * else the innermost frame at all */
	unsigned i = fallback >= 0 ? (unsigned)fallback : 0;
	struct vt_frame_names fn;
	vt_symbolize_frame(sym, st, &s->frames[i], &fn);
	format_site(&fn, 0, st, &s->frames[i], buf, len);
	return (int)i;
}

/* ---- the one-stop API ------------------------------------------------------ */

int vt_sites_open(struct vt_sites *s, const struct vt_trace *t, unsigned sym_flags, char *err,
		  size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->rules = vt_site_rules_from_env(err, errlen);
	if (!s->rules)
		return -1;
	s->store = vt_stack_store_new();
	vt_stack_store_load_trace(s->store, t);
	/* a trace opened as one log file: its sidecar is beside it */
	char dir[4096];
	struct stat sb;
	snprintf(dir, sizeof dir, "%s", t->dir ? t->dir : ".");
	if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(dir, sizeof dir, ".");
	}
	s->sym = vt_symbolizer_open(dir, sym_flags);
	return 0;
}

void vt_sites_close(struct vt_sites *s)
{
	for (size_t i = 0; i < s->ncache; i++)
		free(s->cache[i]);
	free(s->cache);
	vt_symbolizer_close(s->sym);
	vt_stack_store_free(s->store);
	vt_site_rules_free(s->rules);
	memset(s, 0, sizeof *s);
}

const char *vt_sites_of_stack(struct vt_sites *s, uint32_t canonical)
{
	const struct vt_stack *stack = vt_stack_store_stack(s->store, canonical);
	if (!stack)
		return "(no stack)";
	if (canonical > s->ncache) {
		size_t n = vt_stack_store_count(s->store);
		char **c = realloc(s->cache, n * sizeof *c);
		if (!c) {
			vt_nomem();
		}
		memset(c + s->ncache, 0, (n - s->ncache) * sizeof *c);
		s->cache = c;
		s->ncache = n;
	}
	char **slot = &s->cache[canonical - 1];
	if (!*slot) {
		char buf[1024];
		vt_site_of_stack(s->rules, s->sym, s->store, stack, buf, sizeof buf);
		*slot = strdup(buf);
		if (!*slot) {
			vt_nomem();
		}
	}
	return *slot;
}

const char *vt_sites_of_event(struct vt_sites *s, uint32_t log_index, uint32_t stack_id)
{
	if (!stack_id)
		return "(no stack)";
	return vt_sites_of_stack(s, vt_stack_store_canonical(s->store, log_index, stack_id));
}

/* One native frame of a full stack: inlined entries first, then the real
 * function; mark '*' on the site. */
static void print_native_frame(struct vt_sites *s, const struct vt_frame *f, unsigned i, char mark,
			       FILE *out, const char *indent)
{
	char buf[1024];
	struct vt_frame_names fn;
	vt_symbolize_frame(s->sym, s->store, f, &fn);
	if (fn.status != VT_SYM_OK) {
		vt_format_frame(&fn, s->store, f, buf, sizeof buf);
		fprintf(out, "%s#%-2u%c %s\n", indent, i, mark, buf);
		return;
	}
	/* innermost first: inlined entries, then the real function */
	for (size_t j = 0; j < fn.n; j++) {
		format_site(&fn, j, s->store, f, buf, sizeof buf);
		if (j == 0)
			fprintf(out, "%s#%-2u%c %s%s\n", indent, i, mark, buf,
				fn.sym[j].inlined ? " [inlined]" : "");
		else
			fprintf(out, "%s     %s%s\n", indent, buf, fn.sym[j].inlined ? " [inlined]" : "");
	}
}

/* Python frames merged in: each takes the place of the
 * interpreter's eval-loop frame it ran in (pystack.h); printed "py". */
static void print_merged_stack(struct vt_sites *s, const struct vt_stack *stack, FILE *out,
			       const char *indent)
{
	const struct vt_pystrs *ps = vt_stack_store_pystrs(s->store);
	struct vt_pyframe *py = calloc(stack->py_depth, sizeof *py);
	uint8_t *roles = calloc(stack->depth + 1u, 1);
	unsigned max = stack->depth + stack->py_depth;
	struct vt_merged_frame *m = calloc(max, sizeof *m);
	if (!py || !roles || !m) {
		vt_nomem();
	}
	vt_pystack_decode(ps, stack->py_words, stack->py_depth, py);
	for (unsigned i = 0; i < stack->depth; i++) {
		const struct vt_frame *f = &stack->frames[i];
		const struct vt_module_info *mod = vt_stack_store_module(s->store, f->module);
		struct vt_frame_names fn;
		vt_symbolize_frame(s->sym, s->store, f, &fn);
		const char *func = fn.status == VT_SYM_OK ? fn.sym[fn.n - 1].function : NULL;
		roles[i] = vt_pystack_native_role(mod ? mod->path : NULL, func);
	}
	int site = vt_pystack_site(py, stack->py_depth);
	unsigned n = vt_pystack_merge(py, stack->py_depth, stack->depth, roles, VT_MERGE_FULL, m, max);
	char buf[1024];
	for (unsigned k = 0; k < n; k++) {
		if (!m[k].python) {
			print_native_frame(s, &stack->frames[m[k].index], m[k].index, ' ', out, indent);
			continue;
		}
		vt_pystack_format(&py[m[k].index], buf, sizeof buf);
		fprintf(out, "%spy %c %s\n", indent, (int)m[k].index == site ? '*' : ' ', buf);
	}
	free(py);
	free(roles);
	free(m);
}

void vt_sites_print_stack(struct vt_sites *s, uint32_t canonical, FILE *out, const char *indent)
{
	const struct vt_stack *stack = vt_stack_store_stack(s->store, canonical);
	if (!stack) {
		fprintf(out, "%s(no stack)\n", indent);
		return;
	}
	if (stack->py_depth) {
		print_merged_stack(s, stack, out, indent);
		return;
	}
	char buf[1024];
	int site = vt_site_of_stack(s->rules, s->sym, s->store, stack, buf, sizeof buf);
	for (unsigned i = 0; i < stack->depth; i++)
		print_native_frame(s, &stack->frames[i], i, (int)i == site ? '*' : ' ', out, indent);
}

/* The function a native frame's code belongs to (inlined code: the
 * function it was inlined into), or NULL when it cannot be named. */
static const char *frame_function(struct vt_sites *s, const struct vt_frame *f)
{
	struct vt_frame_names fn;
	if (vt_symbolize_frame(s->sym, s->store, f, &fn) != VT_SYM_OK)
		return NULL;
	return fn.sym[fn.n - 1].function;
}

static int same_native_function(struct vt_sites *s, const struct vt_frame *x,
                                const struct vt_frame *y)
{
	if (x->module != y->module)
		return 0;
	if (x->offset == y->offset)
		return 1;
	const char *fx = frame_function(s, x), *fy = frame_function(s, y);
	return fx && fy && strcmp(fx, fy) == 0;
}

static int same_python_functions(const struct vt_stack_store *st, const struct vt_stack *x,
                                 const struct vt_stack *y)
{
	enum { MAX_PY = 128 };
	struct vt_pyframe px[MAX_PY], py[MAX_PY];
	unsigned n = x->py_depth < MAX_PY ? x->py_depth : MAX_PY;
	vt_pystack_decode(vt_stack_store_pystrs(st), x->py_words, n, px);
	vt_pystack_decode(vt_stack_store_pystrs(st), y->py_words, n, py);
	for (unsigned i = 0; i < n; i++)
		if (px[i].file_gid != py[i].file_gid || px[i].func_gid != py[i].func_gid)
			return 0;
	return 1;
}

int vt_sites_same_functions(struct vt_sites *s, uint32_t a, uint32_t b)
{
	if (a == b)
		return 1;
	const struct vt_stack *x = vt_stack_store_stack(s->store, a);
	const struct vt_stack *y = vt_stack_store_stack(s->store, b);
	if (!x || !y || x->depth != y->depth || x->py_depth != y->py_depth)
		return 0;
	for (uint32_t i = 0; i < x->depth; i++)
		if (!same_native_function(s, &x->frames[i], &y->frames[i]))
			return 0;
	return same_python_functions(s->store, x, y);
}
