/* The crash-safe log writer (contract: log_writer.h, format.h).
 *
 * Who owns what:
 *  - g_cfg: the configuration, set once by vt_log_init and inherited by fork
 *    children (they open their own log in the same directory).
 *  - g_log: the log this process opened (fd, mapping, header pointer, and
 *    the file's device and inode). The descriptor number is the job's to
 *    reuse: a job may close every descriptor (daemonizing, closefrom) and
 *    get that number for a file of its own. So the writer never uses or
 *    closes g_log.fd without first checking, on a private duplicate, that
 *    it is still the log (log_fd_dup); if it is not, the log is opened
 *    again by its path. Records need no descriptor: the mapping stays.
 *  - g_token: a tiny page that says WHICH process g_log belongs to. It is
 *    mapped MADV_WIPEONFORK, so in any fork child (pthread_atfork ran or not:
 *    raw clone() too) it reads zero and the child's first record opens the
 *    child's own log. The atfork child handler also zeroes it (kernels
 *    without WIPEONFORK).
 *  - t_log (initial-exec TLS): the chunk this thread appends to, valid only
 *    while t_log.gen equals g_token->gen; a fork child's copy of the parent's
 *    TLS therefore never writes into the parent's (MAP_SHARED) chunk.
 *
 * Hot path (vt_log_reserve with room left in the chunk): one TLS flag, one
 * acquire load of the token, a bounds check and a bump. No lock, no malloc,
 * no stdio, no syscall. Syscalls (gettid, getpid, dup+fstat+fallocate+close) happen once per
 * chunk (256 KiB by default).
 */
#define _GNU_SOURCE /* strerrordesc_np, MADV_WIPEONFORK */
#include "log_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vramtrace/crc32c.h"
#include "vramtrace/env_flag.h"
#include "event_clock.h"
#include "log_file.h"
#include "rank_env.h"
#include "vramtrace/event_packed.h"
#include "vramtrace/size_text.h"

#define VT_VIRTUAL_RESERVE (64ull << 30) /* address space, not memory */
#define VT_MIN_CHUNK_SIZE (8u * 1024u)
#define VT_MAX_CHUNK_SIZE (64u * 1024u * 1024u)
#define VT_MAX_TEXT 4096u /* marks and notes: longer text is cut */
#define VT_PAGE 4096u

struct vt_config_copy {
	char dir[VT_PATH_MAX];
	uint64_t max_size;
	uint32_t chunk_size;
	uint32_t stack_depth;
	int free_stacks;
	int configured; /* atomic: 0 no, 1 being set, 2 set (fields valid) */
	int disabled;   /* atomic: a permanent failure was reported once */
};

struct vt_open_log {
	int fd;    /* atomic: may be replaced by log_fd_dup */
	dev_t dev; /* the file fd was opened on */
	ino_t ino;
	uint8_t *base; /* the whole reserved mapping */
	uint64_t map_size;
	struct vt_file_header *hdr; /* == base */
	uint32_t chunk_size;
	uint32_t record_limit; /* chunk_size less the seal's room */
	uint64_t max_chunks;
	int pid;
	uint64_t clock_base;
	int finished; /* atomic: EXIT record written */
	char path[VT_PATH_MAX];
};

/* Which process g_log belongs to; zero in a fork child (see top). */
struct vt_proc_token {
	uint32_t gen;     /* != 0: g_log is this process's open log */
	uint32_t opening; /* a thread of this process is opening (or failed) */
};

struct vt_thread_log {
	uint8_t *chunk;      /* start of the chunk this thread owns */
	uint32_t used;       /* bytes used in it, chunk header included */
	uint32_t gen;        /* g_token->gen the chunk belongs to */
	uint64_t thread_seq; /* next chunk's vt_chunk_header.thread_seq */
	uint64_t first_seq;  /* the chunk header's bases for packed events, */
	uint64_t first_t_ns; /* kept here: no read of the shared page */
	uint8_t busy;        /* inside reserve: a signal handler must not enter */
};

static struct vt_config_copy g_cfg;
static struct vt_open_log g_log;
static struct vt_proc_token g_token_static;
static struct vt_proc_token *g_token = &g_token_static;
static uint32_t g_gen_counter;
/* The process-wide sequence number; 0 means "fill in" for
 * vt_log_write_event. Alone on its cache line: every event of every thread
 * adds to it, and a read-mostly neighbour (the linker had put the stack depth
 * there) would be taken from the other threads' caches at each add. */
static struct {
	uint64_t next;
	char pad[64 - sizeof(uint64_t)];
} g_seq __attribute__((aligned(64))) = {.next = 1};
static int g_opener_tid; /* the thread creating this process's log */
static __thread struct vt_thread_log t_log __attribute__((tls_model("initial-exec")));

/* ---- small helpers ------------------------------------------------------ */

static inline struct vt_proc_token *token(void)
{
	return __atomic_load_n(&g_token, __ATOMIC_ACQUIRE);
}

static inline uint32_t current_gen(void)
{
	return __atomic_load_n(&token()->gen, __ATOMIC_ACQUIRE);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int owner_here(void)
{
	return current_gen() != 0 && g_log.pid == getpid();
}

/* Records dropped while this process had no log yet (atomic): the header
 * made next starts from them, so no drop goes uncounted. */
static uint64_t g_drops_before_log;

static void count_drop(void)
{
	if (current_gen())
		__atomic_fetch_add(&g_log.hdr->events_dropped, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&g_drops_before_log, 1, __ATOMIC_RELAXED);
}

void vt_log_count_drop(void)
{
	count_drop();
}

void vt_log_add_self_tail(uint32_t calls)
{
	if (current_gen()) /* else no log of this process yet: no header */
		__atomic_fetch_add(&g_log.hdr->self_tail_calls, calls, __ATOMIC_RELAXED);
}

void vt_log_add_stack_counts(uint64_t captures, uint64_t hits, uint64_t verified,
                             uint64_t mismatches)
{
	if (!current_gen())
		return;
	struct vt_file_header *h = g_log.hdr;
	__atomic_fetch_add(&h->stack_captures, captures, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->stack_memo_hits, hits, __ATOMIC_RELAXED);
	if (verified)
		__atomic_fetch_add(&h->stack_memo_verified, verified, __ATOMIC_RELAXED);
	if (mismatches)
		__atomic_fetch_add(&h->stack_memo_mismatches, mismatches, __ATOMIC_RELAXED);
}

void vt_log_add_self_first(uint64_t ns)
{
	if (!current_gen())
		return;
	__atomic_fetch_add(&g_log.hdr->self_first_ns, ns, __ATOMIC_RELAXED);
	__atomic_fetch_add(&g_log.hdr->self_first_calls, 1, __ATOMIC_RELAXED);
}

void vt_log_add_self_cost(uint32_t calls, uint64_t est_ns, unsigned bucket)
{
	if (!current_gen() || bucket >= VT_SELF_HIST)
		return;
	struct vt_file_header *h = g_log.hdr;
	__atomic_fetch_add(&h->self_calls, calls, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->self_est_ns, est_ns, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->self_hist[bucket], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->self_timed, 1, __ATOMIC_RELAXED);
}

/* ---- configuration ------------------------------------------------------ */

/* 0 when unset or not a size: the launcher refuses bad sizes, the shim
 * never fails. */
static uint64_t size_from_env(const char *name)
{
	uint64_t v;
	return vt_parse_size(getenv(name), &v) == 0 ? v : 0;
}

void vt_log_config_from_env(struct vt_log_config *cfg)
{
	const char *dir = getenv("VRAMTRACE_DIR");
	cfg->dir = dir && *dir ? dir : ".";
	cfg->max_size = size_from_env("VRAMTRACE_MAX_SIZE");
	cfg->chunk_size = (uint32_t)size_from_env("VRAMTRACE_CHUNK_SIZE");
	const char *depth = getenv("VRAMTRACE_STACK_DEPTH");
	cfg->stack_depth = depth && *depth ? (uint32_t)strtoul(depth, NULL, 10) : 128u;
	cfg->free_stacks = vt_env_flag("VRAMTRACE_FREE_STACKS");
}

static uint32_t sane_chunk_size(uint32_t want)
{
	if (want == 0)
		return VT_DEFAULT_CHUNK_SIZE;
	if (want < VT_MIN_CHUNK_SIZE)
		want = VT_MIN_CHUNK_SIZE;
	if (want > VT_MAX_CHUNK_SIZE)
		want = VT_MAX_CHUNK_SIZE;
	return (want + VT_PAGE - 1) & ~(VT_PAGE - 1);
}

/* ---- opening this process's log ----------------------------------------- */

static void disable_with_warning(const char *why)
{
	if (!__atomic_exchange_n(&g_cfg.disabled, 1, __ATOMIC_ACQ_REL)) {
		struct vt_sbuf s;
		char line[1024];
		vt_sbuf_init(&s, line, sizeof line);
		vt_sbuf_str(&s, why);
		vt_sbuf_str(&s, "; recording disabled");
		vt_warn_line(line);
	}
}

/* Under a limit on address space (RLIMIT_AS, ulimit -v) the log reserves
 * at most this fraction of it: the rest is the job's, whose own mappings
 * would otherwise fail only under the shim. */
#define VT_RESERVE_SHARE_OF_LIMIT 16

/* The most address space the log may reserve: VT_VIRTUAL_RESERVE, less
 * under RLIMIT_AS (*limited set then). */
static uint64_t reserve_cap(int *limited)
{
	struct rlimit rl;
	*limited = 0;
	if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur / VT_RESERVE_SHARE_OF_LIMIT >= VT_VIRTUAL_RESERVE)
		return VT_VIRTUAL_RESERVE;
	*limited = 1;
	return (uint64_t)rl.rlim_cur / VT_RESERVE_SHARE_OF_LIMIT;
}

/* Reserve the address range once; fewer chunks if the kernel refuses. */
static uint8_t *map_log(int fd, uint64_t *max_chunks, uint64_t *map_size, int *limited)
{
	uint64_t cap = reserve_cap(limited);
	if (g_cfg.max_size && g_cfg.max_size < cap) {
		cap = g_cfg.max_size;
		*limited = 0; /* the cap the user asked for is the smaller one */
	}
	uint64_t chunks = cap > VT_HEADER_SIZE ? (cap - VT_HEADER_SIZE) / g_cfg.chunk_size : 0;
	for (;;) {
		uint64_t size = VT_HEADER_SIZE + chunks * g_cfg.chunk_size;
		void *p =
		    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
		if (p != MAP_FAILED) {
			*max_chunks = chunks;
			*map_size = size;
			return p;
		}
		if (chunks == 0)
			return NULL;
		chunks /= 2;
	}
}

static void fill_header(struct vt_file_header *h, int pid, uint32_t exec_index)
{
	h->version = VT_FORMAT_VERSION;
	h->byte_order = VT_BYTE_ORDER_MARK;
	h->header_size = VT_HEADER_SIZE;
	h->chunk_size = g_cfg.chunk_size;
	h->pid = pid;
	h->ppid = getppid();
	h->exec_index = exec_index;
	h->stack_depth = g_cfg.stack_depth;
	/* A fork child keeps its parent's base: a hook may have taken an event's
	 * time (vt_log_now_ns) just before the record that opened this log. */
	uint64_t realtime = clock_ns(CLOCK_REALTIME), mono = vt_clock_ns();
	uint64_t base = g_log.clock_base ? g_log.clock_base : mono;
	h->clock_base_ns = base;
	h->realtime_base_ns = realtime - (mono - base);
	h->max_size = g_cfg.max_size;
	h->events_dropped = __atomic_exchange_n(&g_drops_before_log, 0, __ATOMIC_RELAXED);
	h->state = VT_STATE_WORD(VT_STATE_RUNNING, 0);
	if (g_cfg.stack_depth == 0)
		h->flags = VT_FLAG_STACKS_OFF;
	else if (g_cfg.free_stacks)
		h->flags = VT_FLAG_FREE_STACKS;
	if (vt_clock_uses_tsc()) /* decided by the vt_clock_ns above */
		h->flags |= VT_FLAG_TSC_CLOCK;
	h->flags |= VT_FLAG_SEALS;
	vt_log_file_describe(h);
	vt_rank_env_describe(h);
	/* magic last: a reader never trusts a half-written header */
	uint64_t magic;
	memcpy(&magic, VT_MAGIC, sizeof magic);
	__atomic_store_n((uint64_t *)(void *)h->magic, magic, __ATOMIC_RELEASE);
}

/* ---- the log's descriptor ------------------------------------------------- */

/* Descriptor numbers the writer keeps start here (or at half the soft
 * RLIMIT_NOFILE when that is lower): never 0-2, where a job started with
 * stdio closed would take the log for its stdin/stdout, and above the
 * numbers a job's next few open()s get. Not higher: a number past the
 * descriptor table's first 64 slots makes the kernel grow the table, which
 * in a threaded process waits for an RCU grace period (milliseconds) in the
 * middle of the job's first recorded call. Which number it is does not
 * matter for correctness: a descriptor is checked before every use. */
#define VT_FD_MIN 32

static int fd_floor(void)
{
	struct rlimit rl;
	int floor = VT_FD_MIN;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 < (rlim_t)floor)
		floor = (int)(rl.rlim_cur / 2);
	return floor < 3 ? 3 : floor;
}

/* A close-on-exec duplicate of fd at fd_floor() or above (else at 3 or
 * above); -1 if none. */
static int dup_high(int fd)
{
	int n = fcntl(fd, F_DUPFD_CLOEXEC, fd_floor());
	if (n < 0)
		n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return n;
}

/* fd moved above 2 (see VT_FD_MIN); the original is closed. -1 (fd closed
 * too) if no number is free. */
static int move_fd_high(int fd)
{
	int n = dup_high(fd);
	close(fd);
	return n;
}

void vt_log_note_stderr(void)
{
	vt_warn_note_stderr();
}

int vt_log_fd_move_high(int fd, int cloexec)
{
	int n = move_fd_high(fd);
	if (n >= 0 && !cloexec)
		fcntl(n, F_SETFD, 0);
	return n;
}

static int is_log_file(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_dev == g_log.dev && st.st_ino == g_log.ino;
}

/* A private duplicate of the log's descriptor, for one use, then close()d by
 * the caller; -1 when the log cannot be reached. The duplicate is checked,
 * not g_log.fd: a job thread may close and reuse g_log.fd's number at any
 * moment, never a number it was not given. When g_log.fd is not the log
 * any more, the file is opened again by its path (it stays the log while
 * its device and inode match) and that descriptor replaces the old number,
 * which is left to the job. */
static int log_fd_dup(void)
{
	int fd = __atomic_load_n(&g_log.fd, __ATOMIC_ACQUIRE);
	int d = fd >= 0 ? dup_high(fd) : -1;
	if (d >= 0 && is_log_file(d))
		return d;
	if (d >= 0)
		close(d);
	int again = open(g_log.path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (again < 0)
		return -1;
	again = move_fd_high(again);
	if (again < 0 || !is_log_file(again)) {
		if (again >= 0)
			close(again);
		return -1;
	}
	d = dup_high(again);
	if (!__atomic_compare_exchange_n(&g_log.fd, &fd, again, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		close(again); /* another thread replaced it first */
	return d;
}

/* A fork child inherited the parent's fd and mapping: let go of them (never
 * write there) before opening its own. The inherited number is closed only
 * while it is still the log: the job may have reused it for its own file. */
static void drop_inherited_log(void)
{
	if (g_log.base)
		munmap(g_log.base, g_log.map_size);
	if (g_log.fd >= 0 && is_log_file(g_log.fd))
		close(g_log.fd);
	g_log.base = NULL;
	g_log.hdr = NULL;
	g_log.fd = -1;
}

static int open_log(void)
{
	int pid = getpid();
	char why[512];
	uint32_t exec_index = 0;
	int fd = vt_log_file_create(g_cfg.dir, pid, g_log.path, sizeof g_log.path, &exec_index, why,
	                            sizeof why);
	if (fd >= 0 && (fd = move_fd_high(fd)) < 0) {
		unlink(g_log.path);
		disable_with_warning("no descriptor number free for the log");
		return -1;
	}
	if (fd < 0) {
		disable_with_warning(why);
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		unlink(g_log.path);
		close(fd);
		disable_with_warning("cannot stat the new log");
		return -1;
	}
	int rc;
	do
		rc = posix_fallocate(fd, 0, VT_HEADER_SIZE);
	while (rc == EINTR);
	uint64_t max_chunks = 0, map_size = 0;
	int as_limited = 0;
	uint8_t *base = rc ? NULL : map_log(fd, &max_chunks, &map_size, &as_limited);
	if (!base) {
		unlink(g_log.path);
		close(fd);
		struct vt_sbuf s;
		vt_sbuf_init(&s, why, sizeof why);
		vt_sbuf_str(&s, "cannot set up ");
		vt_sbuf_str(&s, g_log.path);
		vt_sbuf_str(&s, rc ? ": no space for the header" : ": mmap failed");
		disable_with_warning(why);
		return -1;
	}
	g_log.fd = fd;
	g_log.dev = st.st_dev;
	g_log.ino = st.st_ino;
	g_log.base = base;
	g_log.map_size = map_size;
	g_log.hdr = (struct vt_file_header *)(void *)base;
	g_log.chunk_size = g_cfg.chunk_size;
	g_log.record_limit = g_cfg.chunk_size - VT_SEAL_SIZE;
	g_log.max_chunks = max_chunks;
	g_log.pid = pid;
	g_log.finished = 0;
	fill_header(g_log.hdr, pid, exec_index);
	g_log.hdr->reserve_size = map_size;
	if (as_limited)
		__atomic_fetch_or(&g_log.hdr->flags, VT_FLAG_RESERVE_LIMITED, __ATOMIC_RELAXED);
	g_log.clock_base = g_log.hdr->clock_base_ns;
	uint32_t gen = ++g_gen_counter;
	if (gen == 0)
		gen = ++g_gen_counter;
	__atomic_store_n(&token()->gen, gen, __ATOMIC_RELEASE);
	/* drops counted while the header was being filled */
	uint64_t late = __atomic_exchange_n(&g_drops_before_log, 0, __ATOMIC_RELAXED);
	if (late)
		__atomic_fetch_add(&g_log.hdr->events_dropped, late, __ATOMIC_RELAXED);
	return 0;
}

/* Another thread is creating the file: wait for it (bounded), else every
 * record this thread makes meanwhile is dropped before there is a header to
 * count the drop in (the first events of a job's threads went missing when
 * a dlopen's module records won the race to open the log). Not when this
 * thread is the opener (a signal handler interrupted it) or opening failed. */
static int wait_for_opener(void)
{
	if (__atomic_load_n(&g_opener_tid, __ATOMIC_ACQUIRE) == (int)syscall(SYS_gettid))
		return -1;
	for (int i = 0; i < 20000 && !current_gen(); i++) {
		if (__atomic_load_n(&g_cfg.disabled, __ATOMIC_ACQUIRE))
			break;
		struct timespec pause = {0, 100000};
		nanosleep(&pause, NULL);
	}
	return current_gen() ? 0 : -1;
}

/* Open the log of the calling process unless it is open, being opened by
 * another thread (then wait for it), or recording is off. */
static int open_for_this_process(void)
{
	if (current_gen())
		return 0;
	if (__atomic_load_n(&g_cfg.configured, __ATOMIC_ACQUIRE) != 2 ||
	    __atomic_load_n(&g_cfg.disabled, __ATOMIC_ACQUIRE))
		return -1;
	uint32_t expected = 0;
	if (!__atomic_compare_exchange_n(&token()->opening, &expected, 1, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		return wait_for_opener();
	__atomic_store_n(&g_opener_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	drop_inherited_log();
	return open_log();
}

static void atfork_child(void)
{
	/* async-signal-safe: plain stores only */
	struct vt_proc_token *tok = token();
	tok->gen = 0;
	tok->opening = 0;
	g_drops_before_log = 0; /* the parent's, for the parent's log */
}

/* The token page: WIPEONFORK where the kernel has it (4.14+). */
static void setup_token(void)
{
	if (token() != &g_token_static)
		return;
	void *page =
	    mmap(NULL, VT_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return;
#ifdef MADV_WIPEONFORK
	if (madvise(page, VT_PAGE, MADV_WIPEONFORK) == 0) {
		__atomic_store_n(&g_token, (struct vt_proc_token *)page, __ATOMIC_RELEASE);
		return;
	}
#endif
	munmap(page, VT_PAGE);
}

/* The directory as an absolute path: a fork child opens its log after the
 * job may have changed its working directory. */
static int set_dir(const char *dir)
{
	struct vt_sbuf s;
	vt_sbuf_init(&s, g_cfg.dir, sizeof g_cfg.dir);
	if (dir[0] != '/') {
		char cwd[VT_PATH_MAX];
		if (!getcwd(cwd, sizeof cwd))
			return -1;
		vt_sbuf_str(&s, cwd);
		if (strcmp(dir, ".") == 0)
			dir = "";
		else if (s.len > 1)
			vt_sbuf_str(&s, "/");
	}
	size_t before = s.len;
	vt_sbuf_str(&s, dir);
	return s.len - before == strlen(dir) ? 0 : -1;
}

static int configure(const struct vt_log_config *cfg)
{
	int expected = 0;
	if (!__atomic_compare_exchange_n(&g_cfg.configured, &expected, 1, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		return expected == 2 ? 0 : -1; /* done, or another thread is at it */
	const char *dir = cfg && cfg->dir && *cfg->dir ? cfg->dir : ".";
	g_cfg.max_size = cfg ? cfg->max_size : 0;
	g_cfg.chunk_size = sane_chunk_size(cfg ? cfg->chunk_size : 0);
	g_cfg.stack_depth = cfg ? cfg->stack_depth : 0;
	g_cfg.free_stacks = cfg ? cfg->free_stacks : 0;
	g_log.fd = -1;
	setup_token();
	pthread_atfork(NULL, NULL, atfork_child);
	if (set_dir(dir) < 0)
		disable_with_warning("trace directory name too long (or no working directory)");
	__atomic_store_n(&g_cfg.configured, 2, __ATOMIC_RELEASE);
	return 0;
}

int vt_log_init(const struct vt_log_config *cfg)
{
	if (current_gen())
		return 0;
	if (configure(cfg) < 0)
		return -1;
	return open_for_this_process();
}

/* ---- chunks -------------------------------------------------------------- */

static void mark_truncated(const char *reason)
{
	uint64_t old = __atomic_fetch_or(&g_log.hdr->flags, VT_FLAG_TRUNCATED, __ATOMIC_ACQ_REL);
	if (old & VT_FLAG_TRUNCATED)
		return;
	char line[VT_PATH_MAX + 128];
	struct vt_sbuf s;
	vt_sbuf_init(&s, line, sizeof line);
	vt_sbuf_str(&s, g_log.path);
	vt_sbuf_str(&s, ": ");
	vt_sbuf_str(&s, reason);
	vt_sbuf_str(&s, "; recording stopped, log marked truncated");
	vt_warn_line(line);
}

/* The log's size is the user's cap (not a smaller reserve). */
static int map_size_is_cap(void)
{
	return g_log.map_size + g_log.chunk_size > g_cfg.max_size;
}

/* Give the calling thread a fresh chunk: claim an index, make its blocks
 * real with posix_fallocate (so a full disk is an error here, never a SIGBUS
 * later), then publish the chunk header. */
static int claim_chunk(struct vt_thread_log *t)
{
	struct vt_file_header *h = g_log.hdr;
	if (__atomic_load_n(&h->flags, __ATOMIC_ACQUIRE) & VT_FLAG_TRUNCATED)
		return -1;
	/* a vfork()/CLONE_VM child shares our memory but is another process:
	 * it must not write this log (it can open none of its own either) */
	if (getpid() != g_log.pid)
		return -1;
	uint64_t idx = __atomic_fetch_add(&h->chunks_claimed, 1, __ATOMIC_RELAXED);
	if (idx >= g_log.max_chunks) {
		mark_truncated(g_cfg.max_size && map_size_is_cap()
		                   ? "size cap (VRAMTRACE_MAX_SIZE) reached"
		               : (g_log.hdr->flags & VT_FLAG_RESERVE_LIMITED)
		                   ? "address space reserve exhausted (RLIMIT_AS / ulimit -v "
		                     "allows the log 1/16 of it)"
		                   : "address space reserve exhausted");
		return -1;
	}
	uint64_t off = VT_HEADER_SIZE + idx * g_log.chunk_size;
	int fd = log_fd_dup();
	if (fd < 0) {
		mark_truncated("the log file cannot be reopened (the job closed its descriptor)");
		return -1;
	}
	int rc;
	do
		rc = posix_fallocate(fd, (off_t)off, g_log.chunk_size);
	while (rc == EINTR);
	close(fd);
	if (rc) {
		const char *desc = strerrordesc_np(rc);
		mark_truncated(desc ? desc : "cannot extend the log");
		return -1;
	}
	__atomic_fetch_add(&h->chunks_ready, 1, __ATOMIC_RELAXED);
	struct vt_chunk_header *ch = (struct vt_chunk_header *)(void *)(g_log.base + off);
#ifdef MADV_POPULATE_WRITE
	/* one call maps the whole chunk instead of a page fault every 64
	 * events; an older kernel says EINVAL and the faults happen lazily */
	madvise(ch, g_log.chunk_size, MADV_POPULATE_WRITE);
#endif
	ch->tid = (uint32_t)syscall(SYS_gettid);
	ch->thread_seq = t->thread_seq++;
	ch->first_seq = t->first_seq = __atomic_load_n(&g_seq.next, __ATOMIC_RELAXED);
	ch->first_t_ns = t->first_t_ns = vt_log_now_ns();
	__atomic_store_n(&ch->magic, VT_CHUNK_MAGIC, __ATOMIC_RELEASE);
	t->chunk = (uint8_t *)ch;
	t->used = sizeof *ch;
	return 0;
}

/* Records in [chunk header, used) of t's chunk, or -1 when one of them is
 * not committed yet: a signal handler interrupted its writer between
 * reserve and commit (the seal would vouch for bytes still changing). */
static int64_t committed_records(const struct vt_thread_log *t)
{
	int64_t n = 0;
	for (uint32_t pos = sizeof(struct vt_chunk_header); pos < t->used; n++) {
		uint32_t word =
		    __atomic_load_n((uint32_t *)(void *)(t->chunk + pos), __ATOMIC_RELAXED);
		if (word == 0)
			return -1;
		pos += VT_HDR_SIZE(word);
	}
	return n;
}

/* Seal t's chunk (format.h, struct vt_chunk_seal) and let go of it: the
 * thread's next record claims a new chunk. Once per chunk (256 KiB of
 * records by default), so the CRC costs nothing per record. A chunk with
 * a record still being written stays unsealed: its records are read as
 * those of a thread that died. */
static void seal_chunk(struct vt_thread_log *t, uint32_t reason)
{
	if (!t->chunk || t->gen != current_gen())
		return;
	int64_t records = committed_records(t);
	struct vt_chunk_seal *seal =
	    (struct vt_chunk_seal *)(void *)(t->chunk + g_log.record_limit);
	if (records >= 0) {
		seal->magic = VT_SEAL_MAGIC;
		seal->records = (uint32_t)records;
		seal->bytes = t->used;
		seal->crc = vt_crc32c(t->chunk, t->used);
		seal->reason = reason;
		seal->seal_crc = vt_crc32c(&seal->magic, offsetof(struct vt_chunk_seal, seal_crc) -
		                                             offsetof(struct vt_chunk_seal, magic));
		vt_log_commit(seal, VT_REC_SEAL, VT_SEAL_SIZE);
	}
	t->chunk = NULL;
}

/* Where the calling thread's next `size` bytes go (a new chunk claimed if
 * this one is full), or NULL when nothing can be written. The room is not
 * taken: the caller adds what it used to t->used. */
static uint8_t *room_slow(struct vt_thread_log *t, uint32_t size)
{
	uint32_t gen = current_gen();
	if (gen == 0) {
		if (open_for_this_process() < 0)
			return NULL;
		gen = current_gen();
	}
	if (t->gen != gen) {
		/* first record of this thread in this process's log: anything in
		 * t (a parent's chunk after fork) is stale and never touched */
		t->chunk = NULL;
		t->used = 0;
		t->thread_seq = 0;
		t->gen = gen;
	}
	if (t->chunk && t->used + size <= g_log.record_limit)
		goto bump;
	seal_chunk(t, VT_SEAL_FULL);
	if (size > g_log.record_limit - sizeof(struct vt_chunk_header) || claim_chunk(t) < 0) {
		count_drop();
		return NULL;
	}
bump:
	return t->chunk + t->used;
}

static inline uint8_t *room_for(struct vt_thread_log *t, uint32_t size)
{
	uint32_t gen = current_gen();
	if (__builtin_expect(
	        gen != 0 && t->gen == gen && t->chunk && t->used + size <= g_log.record_limit, 1))
		return t->chunk + t->used;
	return room_slow(t, size);
}

/* busy brackets every use of t's chunk: a signal handler that interrupts
 * it and records gets nothing (the drop is counted) instead of the same
 * bytes. */
static inline int enter_thread_log(struct vt_thread_log *t)
{
	if (t->busy) {
		count_drop();
		return 0;
	}
	t->busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return 1;
}

static inline void leave_thread_log(struct vt_thread_log *t)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->busy = 0;
}

/* ---- public API ----------------------------------------------------------- */

void *vt_log_reserve(uint32_t size)
{
	struct vt_thread_log *t = &t_log;
	if (size < 8 || (size & 7u) || size > VT_MAX_RECORD_SIZE || !enter_thread_log(t))
		return NULL;
	uint8_t *rec = room_for(t, size);
	if (rec)
		t->used += size;
	leave_thread_log(t);
	return rec;
}

/* Encoded in place: the room for the largest form is checked, the bytes
 * the encoding took are taken (chunk memory is zero, so the padding is). */
int vt_log_write_packed(uint32_t type, const struct vt_event *ev)
{
	struct vt_thread_log *t = &t_log;
	if (!enter_thread_log(t))
		return -1;
	uint8_t *rec = room_for(t, VT_PACKED_MAX_SIZE);
	uint32_t size = 0;
	if (rec) {
		size = vt_packed_encode(rec, type, ev, t->first_seq, t->first_t_ns);
		t->used += size;
	}
	leave_thread_log(t);
	if (!rec)
		return -1;
	vt_log_commit(rec, VT_REC_PACKED, size);
	return 0;
}

void vt_log_commit(void *rec, uint32_t type, uint32_t size)
{
	if (rec)
		__atomic_store_n((uint32_t *)rec, VT_HDR(type, size), __ATOMIC_RELEASE);
}

uint64_t vt_log_next_seq(void)
{
	return __atomic_fetch_add(&g_seq.next, 1, __ATOMIC_RELAXED);
}

uint64_t vt_log_now_ns(void)
{
	/* the TSC-read clock of another thread may sit a few ns behind the
	 * base this thread read: never a time before the log began */
	uint64_t now = vt_clock_ns();
	return now > g_log.clock_base ? now - g_log.clock_base : 0;
}

int vt_log_write_event(uint32_t type, const struct vt_event *ev)
{
	uint8_t *rec = vt_log_reserve(sizeof *ev);
	if (!rec)
		return -1;
	/* everything but the header word, which vt_log_commit publishes */
	memcpy(rec + sizeof ev->hdr, (const uint8_t *)ev + sizeof ev->hdr,
	       sizeof *ev - sizeof ev->hdr);
	struct vt_event *out = (struct vt_event *)(void *)rec;
	if (!out->seq)
		out->seq = vt_log_next_seq();
	if (!out->t_ns)
		out->t_ns = vt_log_now_ns();
	vt_log_commit(rec, type, sizeof *ev);
	return 0;
}

int vt_log_write_mark(uint16_t kind, const char *text, uint64_t value)
{
	size_t len = text ? strnlen(text, VT_MAX_TEXT) : 0;
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof(struct vt_mark_rec) + len));
	struct vt_mark_rec *rec = vt_log_reserve(size);
	if (!rec)
		return -1;
	rec->kind = kind;
	rec->text_len = (uint16_t)len;
	rec->seq = vt_log_next_seq();
	rec->t_ns = vt_log_now_ns();
	rec->value = value;
	if (len)
		memcpy(rec->text, text, len);
	vt_log_commit(rec, VT_REC_MARK, size);
	return 0;
}

int vt_log_write_note(const char *text)
{
	size_t len = text ? strnlen(text, VT_MAX_TEXT) : 0;
	uint32_t size = VT_ALIGN8((uint32_t)(sizeof(struct vt_note_rec) + len));
	struct vt_note_rec *rec = vt_log_reserve(size);
	if (!rec)
		return -1;
	rec->len = (uint32_t)len;
	rec->seq = vt_log_next_seq();
	if (len)
		memcpy(rec->text, text, len);
	vt_log_commit(rec, VT_REC_NOTE, size);
	return 0;
}

/* Seal the calling thread's chunk, if it has one in this process's log. */
static void seal_own_chunk(uint32_t reason)
{
	struct vt_thread_log *t = &t_log;
	if (t->busy) /* a signal handler interrupted the writer: left unsealed, nothing dropped */
		return;
	t->busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	seal_chunk(t, reason);
	leave_thread_log(t);
}

void vt_log_thread_exit(void)
{
	seal_own_chunk(VT_SEAL_THREAD_EXIT);
}

void vt_log_finish(int exit_code)
{
	if (!owner_here() || __atomic_exchange_n(&g_log.finished, 1, __ATOMIC_ACQ_REL))
		return;
	struct vt_exit_rec *rec = vt_log_reserve(sizeof *rec);
	if (rec) {
		rec->code = exit_code;
		rec->seq = vt_log_next_seq();
		rec->t_ns = vt_log_now_ns();
		vt_log_commit(rec, VT_REC_EXIT, sizeof *rec);
	}
	seal_own_chunk(VT_SEAL_PROCESS_EXIT);
	__atomic_store_n(&g_log.hdr->state, VT_STATE_WORD(VT_STATE_EXITED, exit_code),
	                 __ATOMIC_RELEASE);
}

void vt_log_before_exec(void)
{
	if (!owner_here())
		return;
	seal_own_chunk(VT_SEAL_PROCESS_EXIT);
	__atomic_store_n(&g_log.hdr->state, VT_STATE_WORD(VT_STATE_EXECED, 0), __ATOMIC_RELEASE);
}

void vt_log_exec_failed(void)
{
	if (!owner_here())
		return;
	uint64_t expected = VT_STATE_WORD(VT_STATE_EXECED, 0);
	__atomic_compare_exchange_n(&g_log.hdr->state, &expected,
	                            VT_STATE_WORD(VT_STATE_RUNNING, 0), 0, __ATOMIC_ACQ_REL,
	                            __ATOMIC_ACQUIRE);
}

int vt_log_active(void)
{
	/* a fork child opens its own log here, so a caller that asks before
	 * recording does not mistake "not opened yet" for "off" */
	return current_gen() != 0 || open_for_this_process() == 0;
}
