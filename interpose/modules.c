/* Module records (modules.h). */
#define _GNU_SOURCE
#include "modules.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log_writer.h"
#include "vramtrace/format.h"

#define MAX_MODULES 16384u
#define POOL_BYTES (8u << 20)
#define MAX_BUILD_ID 32u
#define NT_GNU_BUILD_ID_TYPE 3u

struct module {
	uint64_t base, lo, hi;
	uint64_t path_hash;
	uint32_t path_off, path_len; /* into the list's string pool */
	uint8_t build_id_len;
	uint8_t build_id[MAX_BUILD_ID];
};

/* A list of modules with its own string pool, in one MAP_NORESERVE mapping
 * (pages are touched only as they fill; no malloc anywhere). */
struct module_list {
	struct module *mods;
	char *pool;
	uint32_t count, pool_used;
	int overflow;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t modules_once = PTHREAD_ONCE_INIT;
static struct module_list recorded; /* what this process's log holds */
static struct module_list scanned;  /* scratch for one scan */
static _Atomic int logged;          /* recorded reflects the loader's list */
static _Atomic unsigned long long seen_adds, seen_subs; /* loader counters at the last scan */
static _Atomic uint32_t generation;
static _Atomic uint64_t records_written;

/* ---- lists -------------------------------------------------------------- */

static int list_map(struct module_list *l)
{
	size_t bytes = MAX_MODULES * sizeof(struct module) + POOL_BYTES;
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	l->mods = p;
	l->pool = (char *)p + MAX_MODULES * sizeof(struct module);
	return 0;
}

static const char *mod_path(const struct module_list *l, const struct module *m)
{
	return l->pool + m->path_off;
}

static uint64_t path_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* Append m (whose path is `path`) to l; -1 when the list is full. */
static int list_add(struct module_list *l, const struct module *m, const char *path)
{
	if (l->count >= MAX_MODULES || POOL_BYTES - l->pool_used < m->path_len + 1u) {
		l->overflow = 1;
		return -1;
	}
	struct module *dst = &l->mods[l->count++];
	*dst = *m;
	dst->path_off = l->pool_used;
	memcpy(l->pool + l->pool_used, path, m->path_len);
	l->pool[l->pool_used + m->path_len] = '\0';
	l->pool_used += m->path_len + 1;
	return 0;
}

static int same_module(const struct module *a, const struct module *b)
{
	return a->base == b->base && a->lo == b->lo && a->path_hash == b->path_hash;
}

static int list_has(const struct module_list *l, const struct module *m)
{
	for (uint32_t i = 0; i < l->count; i++)
		if (same_module(&l->mods[i], m))
			return 1;
	return 0;
}

/* ---- scanning the loader's list ----------------------------------------- */

/* GNU build id from the object's mapped PT_NOTE segments. */
static uint8_t read_build_id(const struct dl_phdr_info *info, uint8_t *out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;
		while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t name_sz = (nh->n_namesz + 3u) & ~3u;
			size_t desc_sz = (nh->n_descsz + 3u) & ~3u;
			const char *name = p + sizeof *nh;
			const char *desc = name + name_sz;
			if (name_sz > (size_t)(end - name) || desc_sz > (size_t)(end - desc))
				break;
			if (nh->n_type == NT_GNU_BUILD_ID_TYPE && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && nh->n_descsz > 0) {
				uint8_t n = nh->n_descsz > MAX_BUILD_ID ? MAX_BUILD_ID
									 : (uint8_t)nh->n_descsz;
				memcpy(out, desc, n);
				return n;
			}
			p = desc + desc_sz;
		}
	}
	return 0;
}

struct scan_ctx {
	int index;
	char abs[PATH_MAX];
	char exe[PATH_MAX];
	ssize_t exe_len;
};

static int scan_cb(struct dl_phdr_info *info, size_t size, void *p)
{
	struct scan_ctx *ctx = p;
	int is_main = ctx->index++ == 0;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		atomic_store_explicit(&seen_adds, info->dlpi_adds, memory_order_relaxed);
		atomic_store_explicit(&seen_subs, info->dlpi_subs, memory_order_relaxed);
	}
	struct module m = {0};
	m.base = info->dlpi_addr;
	m.lo = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < m.lo)
			m.lo = a;
		if (a + ph->p_memsz > m.hi)
			m.hi = a + ph->p_memsz;
	}
	if (m.lo == UINT64_MAX)
		return 0; /* nothing mapped: nothing a frame can point into */
	const char *path = info->dlpi_name ? info->dlpi_name : "";
	if (is_main && !*path && ctx->exe_len > 0)
		path = ctx->exe;
	/* dlopen("build/libx.so") leaves the name relative to the working
	 * directory of that moment: make it absolute while it still means
	 * the same file (we run right after the dlopen) */
	if (path[0] != '/' && strchr(path, '/') && realpath(path, ctx->abs))
		path = ctx->abs;
	size_t len = strnlen(path, PATH_MAX);
	m.path_len = (uint32_t)len;
	m.path_hash = path_hash(path, len);
	m.build_id_len = read_build_id(info, m.build_id);
	list_add(&scanned, &m, path);
	return 0;
}

/* ---- records ------------------------------------------------------------ */

static int write_module(const struct module_list *l, const struct module *m, uint8_t event,
			uint32_t gen)
{
	uint32_t path_len = m->path_len;
	if (path_len > VT_MAX_RECORD_SIZE - sizeof(struct vt_module_rec) - 8)
		path_len = VT_MAX_RECORD_SIZE - sizeof(struct vt_module_rec) - 8;
	uint32_t size = VT_ALIGN8((uint32_t)sizeof(struct vt_module_rec) + path_len);
	struct vt_module_rec *rec = vt_log_reserve(size);
	if (!rec)
		return -1;
	rec->generation = gen;
	rec->seq = vt_log_next_seq();
	rec->base = m->base;
	rec->lo = m->lo;
	rec->hi = m->hi;
	rec->event = event;
	rec->build_id_len = m->build_id_len;
	rec->path_len = (uint16_t)path_len;
	memcpy(rec->build_id, m->build_id, m->build_id_len);
	memcpy(rec->path, mod_path(l, m), path_len);
	vt_log_commit(rec, VT_REC_MODULE, size);
	atomic_fetch_add_explicit(&records_written, 1, memory_order_relaxed);
	return 0;
}

/* Unloads first (an address range may be reused by the next load), then
 * loads. Returns 0 when the log now matches the loader. Lock held. */
static int diff_and_record(void)
{
	uint32_t gen = atomic_load_explicit(&generation, memory_order_relaxed);
	int ok = 0;
	uint32_t keep = 0;
	for (uint32_t i = 0; i < recorded.count; i++) {
		struct module *m = &recorded.mods[i];
		if (!list_has(&scanned, m)) {
			if (write_module(&recorded, m, VT_MODULE_UNLOAD, gen) == 0)
				continue; /* gone, and the log says so; its path
					     stays in the pool (bounded leak) */
			ok = -1;
		}
		recorded.mods[keep++] = *m;
	}
	recorded.count = keep;
	for (uint32_t i = 0; i < scanned.count; i++) {
		struct module *m = &scanned.mods[i];
		if (list_has(&recorded, m))
			continue;
		if (write_module(&scanned, m, VT_MODULE_LOAD, gen) != 0 ||
		    list_add(&recorded, m, mod_path(&scanned, m)) != 0)
			ok = -1;
	}
	return ok;
}

static void child_after_fork(void)
{
	/* The child writes its own log: it must get the whole list again. A
	 * fork while another thread held the lock leaves it held: re-init. */
	pthread_mutex_init(&lock, NULL);
	recorded.count = 0;
	recorded.pool_used = 0;
	atomic_store(&logged, 0);
}

static int lists_ok;
static void modules_init(void)
{
	lists_ok = list_map(&recorded) == 0 && list_map(&scanned) == 0;
	pthread_atfork(NULL, NULL, child_after_fork);
}

/* Set while this thread holds the lock: a signal handler that lands here and
 * records a new stack must not wait for the lock its own thread holds. */
static __thread int tls_in_sync;

void vt_modules_sync(void)
{
	pthread_once(&modules_once, modules_init);
	if (!lists_ok || tls_in_sync)
		return;
	int saved_errno = errno;
	tls_in_sync = 1;
	pthread_mutex_lock(&lock);
	struct scan_ctx ctx = {0};
	ctx.exe_len = readlink("/proc/self/exe", ctx.exe, sizeof ctx.exe - 1);
	if (ctx.exe_len > 0)
		ctx.exe[ctx.exe_len] = '\0';
	scanned.count = scanned.pool_used = 0;
	scanned.overflow = 0;
	/* copy the list first, write records after: no log I/O while the
	 * loader's lock is held */
	dl_iterate_phdr(scan_cb, &ctx);
	int ok = diff_and_record();
	if (scanned.overflow)
		vt_log_write_note("vramtrace: too many loaded modules; some frames will not be named");
	atomic_store(&logged, ok == 0);
	pthread_mutex_unlock(&lock);
	tls_in_sync = 0;
	errno = saved_errno;
}

struct counters {
	unsigned long long adds, subs;
	int have;
};

static int counters_cb(struct dl_phdr_info *info, size_t size, void *p)
{
	struct counters *c = p;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
		c->have = 1;
	}
	return 1; /* the counters are the same in every entry: stop */
}

void vt_modules_ensure(void)
{
	if (atomic_load(&logged)) {
		struct counters c = {0};
		dl_iterate_phdr(counters_cb, &c);
		/* a stale read only costs a needless sync */
		if (!c.have || (c.adds == atomic_load_explicit(&seen_adds, memory_order_relaxed) &&
				c.subs == atomic_load_explicit(&seen_subs, memory_order_relaxed)))
			return;
	}
	vt_modules_sync();
}

void vt_modules_loader_changed(void)
{
	atomic_fetch_add(&generation, 1);
	vt_modules_sync();
}

uint32_t vt_modules_generation(void)
{
	return atomic_load(&generation);
}

uint64_t vt_modules_records_written(void)
{
	return atomic_load(&records_written);
}
