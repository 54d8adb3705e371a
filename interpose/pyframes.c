/* Python frames of the calling thread (see pyframes.h for what is stored).
 *
 * Life of a process:
 *   unknown --first capture--> on   (CPython 3.9-3.13 found, layout checked)
 *                          \-> off  (no CPython, VRAMTRACE_PYTHON=0,
 *                                    unsupported or unrecognised build)
 * "off" costs one predictable branch per event. The first thread that finds
 * Python frames walks its chain once with reads that cannot fault
 * (process_vm_readv on ourselves) and checks every code object's and
 * string's type; only then are plain loads used. Every frame's code object
 * type is still checked on the hot path, so a layout we misread stops the walk
 * instead of following garbage.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log_writer.h"
#include "pyframes.h"
#include "pyframes_intern.h"
#include "pyframes_layout.h"
#include "pyframes_linetable.h"
#include "real_dl.h"
#include "vramtrace/env_flag.h"

#define MAX_WALK 4096u     /* frames visited per capture: guards a cycle */
#define NAME_BUF 1024u     /* longest name read from a str object */
#define CACHE_SETS 64u     /* per-thread (code, offset) -> frame cache, */
#define CACHE_WAYS 2u      /* 2-way: a recursion's two call sites never thrash */

/* Weak: the shim always has it; unit tests of other parts that link the
 * capture code with their own fake log need not provide it. */
extern int vt_log_write_note(const char *text) __attribute__((weak));

static void note(const char *text)
{
	if (vt_log_write_note)
		vt_log_write_note(text);
}

enum py_state { PY_UNKNOWN = 0, PY_INITIALIZING, PY_OFF, PY_CHECKING, PY_ON };

/* What the interpreter gave us, resolved once. */
struct py_runtime {
	const struct vt_py_layout *layout;
	unsigned version;                 /* 0x030b */
	void *(*this_thread_state)(void); /* PyGILState_GetThisThreadState */
	int (*addr2line)(void *code, int addr); /* PyCode_Addr2Line (<= 3.10) */
	uintptr_t code_type, str_type, bytes_type; /* &PyCode_Type, ... */
	uintptr_t eval_lo, eval_hi;       /* _PyEval_EvalFrameDefault */
};

static struct py_runtime rt;
static _Atomic int state = PY_UNKNOWN;
static _Atomic(const char *) description = "not initialised";
static _Atomic uint32_t epoch = 1; /* bumped in a fork child: caches stale */
static _Atomic int look_again;     /* off only because no CPython was found */
static int safe_reads_work;        /* process_vm_readv on ourselves works */

/* A read that fails instead of faulting, for the one-time layout check. */
static int safe_read(void *dst, uintptr_t src, size_t n)
{
	if (!src)
		return -1;
	struct iovec local = {dst, n}, remote = {(void *)src, n};
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

/* ---- finding the interpreter -------------------------------------------- */

static int find_libpython(struct dl_phdr_info *info, size_t size, void *out)
{
	(void)size;
	const char *slash = strrchr(info->dlpi_name, '/');
	const char *base = slash ? slash + 1 : info->dlpi_name;
	if (strncmp(base, "libpython3", 10))
		return 0;
	*(void **)out = vt_own_dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
	return *(void **)out != NULL;
}

/* Global scope first (python3 executables export the C API, statically or
 * through libpython); else a libpython a host loaded with RTLD_LOCAL. The
 * real dlsym (real_dl.h): the shim's own lookups never go through its
 * exported wrapper. */
static void *py_symbol(void *local_handle, const char *name)
{
	void *sym = vt_own_dlsym(RTLD_DEFAULT, name);
	if (!sym && local_handle)
		sym = vt_own_dlsym(local_handle, name);
	return sym;
}

static unsigned parse_version(void *handle)
{
	const unsigned long *hexversion = py_symbol(handle, "Py_Version"); /* 3.11+ */
	if (hexversion)
		return (unsigned)(*hexversion >> 16) & 0xffffu;
	const char *(*get_version)(void) = (const char *(*)(void))py_symbol(handle, "Py_GetVersion");
	if (!get_version)
		return 0;
	const char *text = get_version(); /* "3.10.13 (main, ...": static data */
	char *end;
	unsigned long major = strtoul(text, &end, 10);
	if (*end != '.')
		return 0;
	unsigned long minor = strtoul(end + 1, NULL, 10);
	return (unsigned)((major << 8) | (minor & 0xff));
}

static void eval_range(void *handle)
{
	void *eval = py_symbol(handle, "_PyEval_EvalFrameDefault");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (eval && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym) {
		rt.eval_lo = (uintptr_t)eval;
		rt.eval_hi = (uintptr_t)eval + sym->st_size;
	}
}

/* 3.13+ publishes its own struct offsets for debuggers at the start of
 * _PyRuntime (_Py_DebugOffsets, stable within a minor version): where they
 * overlap our table, they must agree, or a patch release moved something. */
static int debug_offsets_agree(void *handle)
{
	if (rt.version != 0x030d)
		return 1; /* only 3.13's struct shape is known here */
	const struct vt_py_debug_offsets_313 *d = py_symbol(handle, "_PyRuntime");
	if (!d || memcmp(d->cookie, "xdebugpy", 8) || ((d->version >> 16) & 0xffff) != rt.version)
		return 0;
	const struct vt_py_layout *L = rt.layout;
	return !d->free_threaded && d->thread_state[4] == L->tstate_frame &&
	       d->interpreter_frame[1] == L->frame_back && d->interpreter_frame[2] == L->frame_code &&
	       d->interpreter_frame[3] == L->frame_instr && d->interpreter_frame[5] == L->frame_owner &&
	       d->code_object[1] == L->code_filename && d->code_object[2] == L->code_name &&
	       d->code_object[4] == L->code_linetable && d->code_object[5] == L->code_firstlineno &&
	       d->code_object[9] == L->code_adaptive && d->pyobject[1] == VT_PY_OB_TYPE;
}

static void forget_after_fork(void)
{
	vt_py_intern_reset();
	atomic_fetch_add(&epoch, 1);
}

/* Returns the new state and sets description. */
static int discover(void)
{
	if (vt_env_off("VRAMTRACE_PYTHON")) {
		description = "off (VRAMTRACE_PYTHON=0)";
		return PY_OFF;
	}
	void *handle = NULL;
	if (!py_symbol(NULL, "PyGILState_GetThisThreadState"))
		dl_iterate_phdr(find_libpython, &handle);
	rt.this_thread_state = (void *(*)(void))py_symbol(handle, "PyGILState_GetThisThreadState");
	if (!rt.this_thread_state) {
		description = "no CPython in this process";
		atomic_store(&look_again, 1);
		return PY_OFF;
	}
	rt.version = parse_version(handle);
	rt.layout = vt_py_layout_for(rt.version);
	rt.addr2line = (int (*)(void *, int))py_symbol(handle, "PyCode_Addr2Line");
	rt.code_type = (uintptr_t)py_symbol(handle, "PyCode_Type");
	rt.str_type = (uintptr_t)py_symbol(handle, "PyUnicode_Type");
	rt.bytes_type = (uintptr_t)py_symbol(handle, "PyBytes_Type");
	/* Free-threaded (3.13t) and trace-refs builds change PyObject itself. */
	int odd_build = py_symbol(handle, "_Py_MergeZeroLocalRefcount") != NULL ||
	                py_symbol(handle, "_Py_PrintReferences") != NULL;
	if (!rt.layout || odd_build || !rt.code_type || !rt.str_type || !rt.bytes_type ||
	    (rt.layout->lines != VT_PY_LINES_LOCATIONS && !rt.addr2line)) {
		description = "CPython found, but not a version/build whose frames it can read";
		note("python: unsupported CPython version or build, no Python frames");
		return PY_OFF;
	}
	if (!debug_offsets_agree(handle)) {
		description = "CPython found, but its published offsets differ from ours";
		note("python: _Py_DebugOffsets disagree with the frame layout, no Python frames");
		return PY_OFF;
	}
	eval_range(handle);
	if (vt_py_intern_init()) {
		description = "CPython found, but no memory for the name table";
		return PY_OFF;
	}
	pthread_atfork(NULL, NULL, forget_after_fork);
	uint64_t probe = 1, copy = 0; /* a sandbox may forbid process_vm_readv */
	safe_reads_work = safe_read(&copy, (uintptr_t)&probe, sizeof probe) == 0 && copy == 1;
	description = "CPython frames on (layout being checked)";
	return PY_CHECKING;
}

/* ---- reading memory ----------------------------------------------------- */

/* The walker reads through one of these: plain loads (hot path) or safe. */
struct reader {
	int safe;
	int failed;
};

/* n bytes at addr into v (left 0 when a safe read fails; every later read
 * of a failed reader is 0 too). With a constant n the plain path is one load. */
static inline void rd_into(struct reader *r, uintptr_t addr, void *v, size_t n)
{
	if (!r->safe) {
		memcpy(v, (const void *)addr, n);
		return;
	}
	if (r->failed || safe_read(v, addr, n)) {
		r->failed = 1;
		memset(v, 0, n);
	}
}

static inline uintptr_t rd_ptr(struct reader *r, uintptr_t addr)
{
	uintptr_t v;
	rd_into(r, addr, &v, sizeof v);
	return v;
}

static inline uint32_t rd_u32(struct reader *r, uintptr_t addr)
{
	uint32_t v;
	rd_into(r, addr, &v, sizeof v);
	return v;
}

static inline uint16_t rd_u16(struct reader *r, uintptr_t addr)
{
	uint16_t v;
	rd_into(r, addr, &v, sizeof v);
	return v;
}

static inline uint8_t rd_u8(struct reader *r, uintptr_t addr)
{
	uint8_t v;
	rd_into(r, addr, &v, sizeof v);
	return v;
}

static inline int is_type(struct reader *r, uintptr_t obj, uintptr_t type)
{
	return obj && rd_ptr(r, obj + VT_PY_OB_TYPE) == type && !r->failed;
}

/* ---- names and lines ---------------------------------------------------- */

static uint32_t utf8_put(char *out, uint32_t at, uint32_t cp)
{
	if (cp < 0x80) {
		out[at] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[at] = (char)(0xc0 | (cp >> 6));
		out[at + 1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[at] = (char)(0xe0 | (cp >> 12));
		out[at + 1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[at + 2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[at] = (char)(0xf0 | (cp >> 18));
	out[at + 1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[at + 2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[at + 3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* UTF-8 text of a compact str object into buf (cut at NAME_BUF bytes).
 * Uses the canonical 1/2/4-byte data, never the utf8 cache another thread
 * may be filling. Returns the length, or -1 for a non-compact string. */
static int str_text(struct reader *r, uintptr_t s, char *buf)
{
	const struct vt_py_layout *L = rt.layout;
	uint32_t st = rd_u32(r, s + VT_PY_STR_STATE);
	uint64_t length = rd_ptr(r, s + VT_PY_STR_LENGTH);
	if (r->failed || !VT_PY_STR_COMPACT(st))
		return -1;
	unsigned kind = VT_PY_STR_KIND(st);
	uintptr_t data = s + (VT_PY_STR_ASCII(st) ? L->str_ascii_size : L->str_compact_size);
	uint32_t out = 0;
	for (uint64_t i = 0; i < length && out + 4 <= NAME_BUF; i++) {
		uint32_t cp = kind == 1   ? rd_u8(r, data + i)
		              : kind == 2 ? rd_u16(r, data + 2 * i)
		                          : rd_u32(r, data + 4 * i);
		if (r->failed)
			return -1;
		out += utf8_put(buf, out, cp);
	}
	return (int)out;
}

static uint32_t intern_str(struct reader *r, uintptr_t s)
{
	char buf[NAME_BUF];
	if (!is_type(r, s, rt.str_type))
		return 0;
	int len = str_text(r, s, buf);
	return len < 0 ? 0 : vt_py_intern(buf, (uint32_t)len);
}

/* Line for byte offset addr into the code object's instructions. */
static int code_line(struct reader *r, uintptr_t code, int addr)
{
	const struct vt_py_layout *L = rt.layout;
	if (L->lines != VT_PY_LINES_LOCATIONS)
		return rt.addr2line((void *)code, addr); /* pure read up to 3.10 */
	int first = (int)rd_u32(r, code + L->code_firstlineno);
	uintptr_t table = rd_ptr(r, code + L->code_linetable);
	if (!is_type(r, table, rt.bytes_type))
		return -1;
	uint64_t len = rd_ptr(r, table + VT_PY_BYTES_SIZE);
	if (r->safe) { /* check the bytes are readable before decoding them */
		uint8_t last;
		if (len && safe_read(&last, table + VT_PY_BYTES_DATA + len - 1, 1))
			return r->failed = 1, -1;
	}
	return vt_py_location_line((const uint8_t *)(table + VT_PY_BYTES_DATA), len, first, addr);
}

/* ---- per-thread cache: (code, offset) -> ids and line -------------------- */

struct frame_info {
	uintptr_t code, filename, name; /* names checked: code addresses get reused */
	int32_t addr;
	int32_t first_shown;            /* offset of the first traceable code unit */
	uint32_t line, file_id, func_id, epoch;
};

struct frame_cache {
	struct frame_info way[CACHE_SETS][CACHE_WAYS];
	uint8_t victim[CACHE_SETS]; /* way to replace next */
};

/* One TLS access per capture (the walk passes the pointer on): outside the
 * shim's initial-exec TLS, each access is a __tls_get_addr call. */
static __thread struct frame_cache thread_cache;

static inline unsigned cache_set(uintptr_t code, int addr)
{
	uint64_t key = (uint64_t)code ^ ((uint64_t)(uint32_t)addr << 40);
	return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 58) & (CACHE_SETS - 1);
}

static void resolve(struct reader *r, struct frame_cache *cache, uintptr_t code, int addr,
                    struct frame_info *fi)
{
	const struct vt_py_layout *L = rt.layout;
	uintptr_t filename = rd_ptr(r, code + L->code_filename);
	uintptr_t name = rd_ptr(r, code + L->code_name);
	uint32_t now = atomic_load_explicit(&epoch, memory_order_relaxed);
	unsigned set = cache_set(code, addr);
	for (unsigned way = 0; way < CACHE_WAYS && !r->safe; way++) {
		const struct frame_info *c = &cache->way[set][way];
		if (c->code == code && c->addr == addr && c->epoch == now &&
		    c->filename == filename && c->name == name) {
			*fi = *c;
			return;
		}
	}
	int line = code_line(r, code, addr);
	/* Frames still in their prologue (3.11+ "incomplete" frames) are hidden
	 * by Python's own tracebacks; kept here so hits need not read it. */
	fi->first_shown = L->walk == VT_PY_WALK_FRAMEOBJ
	                          ? INT32_MIN
	                          : 2 * (int32_t)rd_u32(r, code + L->code_firsttraceable);
	fi->code = code;
	fi->filename = filename;
	fi->name = name;
	fi->addr = addr;
	fi->line = line > 0 ? (uint32_t)line : 0;
	fi->file_id = intern_str(r, filename);
	fi->func_id = intern_str(r, name);
	fi->epoch = now;
	if (!r->failed) {
		unsigned way = cache->victim[set];
		cache->way[set][way] = *fi;
		cache->victim[set] = (uint8_t)((way + 1) % CACHE_WAYS);
	}
}

/* ---- the walk ----------------------------------------------------------- */

static uintptr_t innermost_frame(struct reader *r, uintptr_t tstate)
{
	const struct vt_py_layout *L = rt.layout;
	uintptr_t p = rd_ptr(r, tstate + L->tstate_frame);
	if (L->walk == VT_PY_WALK_CFRAME && p)
		p = rd_ptr(r, p + L->cframe_current);
	return p;
}

/* One frame: its code object, instruction byte offset, whether a generator
 * owns it, and whether it is the first frame of its eval-loop invocation.
 * Returns 0 for a C-stack shim frame (3.12+), 2 for a frame that runs no
 * code object (once the layout is checked), -1 on a bad read, else 1. */
static int read_frame(struct reader *r, uintptr_t f, uintptr_t *code, int *addr, int *generator,
                      int *ends_invocation)
{
	const struct vt_py_layout *L = rt.layout;
	*generator = 0;
	*ends_invocation = 1;
	if (L->walk == VT_PY_WALK_FRAMEOBJ) {
		*code = rd_ptr(r, f + L->frame_code);
		int lasti = (int)rd_u32(r, f + L->frame_instr);
		*addr = L->lines == VT_PY_LINES_LASTI_UNITS && lasti >= 0 ? 2 * lasti : lasti;
		return is_type(r, *code, rt.code_type) ? 1 : -1;
	}
	uint8_t owner = rd_u8(r, f + L->frame_owner);
	if (L->entry == VT_PY_ENTRY_CSTACK && owner == L->owner_cstack)
		return r->failed ? -1 : 0;
	*code = rd_ptr(r, f + L->frame_code);
	if (!is_type(r, *code, rt.code_type))
		return r->safe ? -1 : 2; /* checked layout: an interpreter-internal frame */
	uintptr_t instr = rd_ptr(r, f + L->frame_instr);
	*addr = (int)((intptr_t)instr - (intptr_t)(*code + L->code_adaptive));
	*generator = owner == L->owner_generator;
	*ends_invocation = L->entry == VT_PY_ENTRY_IS_ENTRY ? rd_u8(r, f + L->frame_is_entry) != 0 : 0;
	return r->failed ? -1 : 1;
}

/* Walks the chain from tstate. Returns the frames written, or -1 when a
 * read failed or a type did not match (only possible if the layout is
 * wrong or memory is damaged). */
static int walk(struct reader *r, uintptr_t tstate, uint64_t *words, unsigned max_frames)
{
	const struct vt_py_layout *L = rt.layout;
	unsigned n = 0, ord = 0;
	struct frame_cache *cache = &thread_cache;
	uintptr_t f = innermost_frame(r, tstate);
	for (unsigned steps = 0; f && n < max_frames && steps < MAX_WALK; steps++) {
		uintptr_t code = 0;
		int addr = 0, generator, ends;
		int kind = read_frame(r, f, &code, &addr, &generator, &ends);
		if (kind < 0)
			return -1;
		if (kind == 0) {
			ord++; /* the shim frame below an invocation's frames */
		} else if (kind == 2) {
			/* not running a code object: nothing to show, walk on */
		} else {
			struct frame_info fi;
			resolve(r, cache, code, addr, &fi);
			if (r->failed)
				return -1;
			if (generator || addr >= fi.first_shown) {
				words[2 * n] = VT_PY_WORD0(fi.file_id, fi.func_id);
				words[2 * n + 1] = VT_PY_WORD1(fi.line, ord, VT_PY_NIDX_UNKNOWN);
				n++;
			}
			ord += (unsigned)ends;
		}
		f = rd_ptr(r, f + L->frame_back);
		if (r->failed)
			return -1;
	}
	return (int)n;
}

/* The first walk in the process, with fault-proof reads. */
static unsigned check_layout(uintptr_t tstate, uint64_t *words, unsigned max_frames)
{
	int expected = PY_CHECKING;
	struct reader safe = {safe_reads_work, 0}; /* else type checks only */
	int n = walk(&safe, tstate, words, max_frames);
	if (n == 0 && !safe.failed)
		return 0; /* no frames to check yet: next time */
	if (n < 0) {
		if (atomic_compare_exchange_strong(&state, &expected, PY_OFF)) {
			description = "CPython found, but its frames did not match the expected layout";
			note("python: frame layout check failed, Python frames off");
		}
		return 0;
	}
	if (atomic_compare_exchange_strong(&state, &expected, PY_ON))
		description = "CPython frames on";
	return (unsigned)n;
}

/* ---- API ---------------------------------------------------------------- */

static __attribute__((noinline)) int initialise(void)
{
	int expected = PY_UNKNOWN;
	if (!atomic_compare_exchange_strong(&state, &expected, PY_INITIALIZING))
		return expected; /* someone else is at it: no frames this time */
	int next = discover();
	atomic_store_explicit(&state, next, memory_order_release);
	return next;
}

static __attribute__((noinline)) unsigned capture_slow(uint64_t *words, unsigned max_frames,
                                                        int st)
{
	if (st == PY_UNKNOWN)
		st = initialise();
	if (st != PY_CHECKING && st != PY_ON)
		return 0;
	uintptr_t tstate = (uintptr_t)rt.this_thread_state();
	if (!tstate || !max_frames)
		return 0;
	if (atomic_load_explicit(&state, memory_order_acquire) == PY_CHECKING)
		return check_layout(tstate, words, max_frames);
	struct reader plain = {0, 0};
	int n = walk(&plain, tstate, words, max_frames);
	return n < 0 ? 0 : (unsigned)n;
}

unsigned vt_py_capture(uint64_t *words, unsigned max_frames)
{
	int st = atomic_load_explicit(&state, memory_order_acquire);
	if (__builtin_expect(st != PY_ON, 0))
		return st == PY_OFF ? 0 : capture_slow(words, max_frames, st);
	uintptr_t tstate = (uintptr_t)rt.this_thread_state();
	if (!tstate || !max_frames)
		return 0;
	struct reader plain = {0, 0};
	int n = walk(&plain, tstate, words, max_frames);
	return n < 0 ? 0 : (unsigned)n;
}

static inline int in_eval(uint64_t ip)
{
	return ip >= rt.eval_lo && ip < rt.eval_hi;
}

void vt_py_bind_native(uint64_t *words, unsigned n, const uint64_t *ips, unsigned depth)
{
	unsigned scan = 0, next_ord = 0; /* eval frames found so far */
	long cur = -1;                    /* index of eval frame next_ord - 1 */
	for (unsigned i = 0; i < n; i++) {
		uint64_t w = words[2 * i + 1];
		unsigned ord = VT_PY_EVAL_ORD(w);
		while (rt.eval_lo && next_ord <= ord) {
			while (scan < depth && !in_eval(ips[scan]))
				scan++;
			if (scan >= depth) {
				cur = -1;
				break;
			}
			cur = scan++;
			next_ord++;
		}
		unsigned nidx = cur >= 0 && next_ord == ord + 1 && cur < VT_PY_NIDX_UNKNOWN
		                        ? (unsigned)cur
		                        : VT_PY_NIDX_UNKNOWN;
		words[2 * i + 1] = (w & ~(uint64_t)0xffffu) | nidx;
	}
}

int vt_py_active(void)
{
	int st = atomic_load_explicit(&state, memory_order_acquire);
	return st == PY_ON || st == PY_CHECKING;
}

void vt_py_rescan(void)
{
	int expected = PY_OFF;
	/* Only "no CPython" is worth another look; a switched-off or rejected
	 * interpreter stays off. */
	if (atomic_exchange(&look_again, 0) &&
	    !atomic_compare_exchange_strong(&state, &expected, PY_UNKNOWN))
		atomic_store(&look_again, 1); /* someone is looking already */
}

const char *vt_py_describe(void)
{
	return atomic_load_explicit(&description, memory_order_relaxed);
}
