/* Symbolization: time to name 10 000 unique stacks, offline, cached per
 * module (analyzer/symbolize.h) and per address.
 *
 *   bench_symbolize           record, then time; print TSV rows
 *   bench_symbolize record    child (under the shim): allocate from 10 000
 *                             different call paths
 *
 * The child reaches cuMemAlloc through 7 levels, each one of 4 functions
 * chosen by the path number's base-4 digits: 10 000 unique stacks whose
 * frames repeat (as in a real job, where many stacks share few functions).
 * The parent loads the trace and, with a fresh symbolizer (nothing cached),
 * names every frame of every stack (DWARF lines and inline chains, no
 * sidecar), then the site of every stack (sites.h). A second case names
 * 10 000 DISTINCT addresses in this program's own code: the per-address
 * cost when nothing repeats; and as many in the text of the Python library
 * python3 runs on, when that library carries DWARF (a real library's
 * compile units: ceval.c alone holds thousands of inlined calls); and as
 * many in a library Debian ships with its dynamic symbol table only (as
 * framework wheels ship theirs), through the symbolizer and through
 * dwfl_module_addrinfo alone, which reads the whole table every time.
 * Rows: "symbolize<TAB>case<TAB>value<TAB>unit".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "log_reader.h"
#include "trace_dir.h"
#include "sites.h"
#include "stack_store.h"
#include "symbolize.h"

#define STACKS 10000u
#define LEVELS 7

typedef int (*alloc_fn)(unsigned long long *, size_t);
static alloc_fn mem_alloc;

/* CPU time of this process: single-threaded work, and the machine is shared
 * (wall time would count other jobs' time slices). */
static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ---- the child: 10 000 call paths --------------------------------------- */

typedef void (*level_fn)(int level, unsigned path);
static void path_a(int level, unsigned path);
static void path_b(int level, unsigned path);
static void path_c(int level, unsigned path);
static void path_d(int level, unsigned path);
static level_fn const paths[4] = {path_a, path_b, path_c, path_d};

/* allocate only (never freed): one stack per path, not two */
static __attribute__((noinline)) void leaf(void)
{
	unsigned long long p = 0;
	mem_alloc(&p, 256);
}

#define PATH_FN(name)                                                                              \
	static __attribute__((noinline)) void name(int level, unsigned path)                       \
	{                                                                                          \
		if (level == 0)                                                                    \
			leaf();                                                                    \
		else                                                                               \
			paths[path & 3](level - 1, path >> 2);                                     \
		__asm__ volatile("" ::: "memory"); /* not a tail call */                           \
	}
PATH_FN(path_a)
PATH_FN(path_b)
PATH_FN(path_c)
PATH_FN(path_d)

static int child_record(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h)
		return 3;
	int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
	int (*dev_get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
	int (*retain)(void **, int) = (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
	int (*set_current)(void *) = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
	mem_alloc = (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
	int dev;
	void *ctx;
	if (!init || !dev_get || !retain || !set_current || !mem_alloc || init(0) ||
	    dev_get(&dev, 0) || retain(&ctx, dev) || set_current(ctx))
		return 3;
	for (unsigned i = 0; i < STACKS; i++)
		paths[i & 3](LEVELS - 1, i >> 2);
	return 0;
}

/* ---- the parent ------------------------------------------------------------ */

static int record(const char *dir)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);
		setenv("LD_LIBRARY_PATH", VT_BENCH_SIMDRIVER_DIR, 1);
		setenv("LD_PRELOAD", VT_BENCH_SHIM, 1);
		setenv("VRAMTRACE_DIR", dir, 1);
		execl("/proc/self/exe", "bench_symbolize", "record", (char *)NULL);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void row(const char *name, double value, const char *unit)
{
	printf("symbolize\t%s\t%.1f\t%s\n", name, value, unit);
	fflush(stdout);
}

/* Name every frame of every canonical stack with a fresh symbolizer. */
static void name_all_frames(const char *dir, struct vt_stack_store *st)
{
	size_t nstacks = vt_stack_store_count(st), frames = 0, named = 0;
	double t0 = now_ns();
	struct vt_symbolizer *sym = vt_symbolizer_open(dir, VT_SYM_NO_SIDECAR);
	for (uint32_t c = 1; c <= nstacks; c++) {
		const struct vt_stack *s = vt_stack_store_stack(st, c);
		for (unsigned i = 0; s && i < s->depth; i++) {
			struct vt_frame_names fn;
			char text[512];
			frames++;
			if (vt_symbolize_frame(sym, st, &s->frames[i], &fn) == VT_SYM_OK)
				named++;
			vt_format_frame(&fn, st, &s->frames[i], text, sizeof text);
		}
	}
	vt_symbolizer_close(sym);
	double ms = (now_ns() - t0) / 1e6;
	char name[160];
	snprintf(name, sizeof name,
	         "%zu unique stacks, every frame (%zu frames, %.0f%% named), cold", nstacks, frames,
	         frames ? 100.0 * named / frames : 0.0);
	row(name, ms, "ms cpu");
}

/* The site of every stack, through the commands' own API. */
static void name_all_sites(struct vt_trace *t)
{
	struct vt_sites sites;
	char err[256];
	double t0 = now_ns();
	if (vt_sites_open(&sites, t, VT_SYM_NO_SIDECAR, err, sizeof err) != 0) {
		printf("symbolize\tsites\tn/a (%s)\t\n", err);
		return;
	}
	size_t n = vt_stack_store_count(sites.store);
	for (uint32_t c = 1; c <= n; c++)
		vt_sites_of_stack(&sites, c);
	vt_sites_close(&sites);
	char name[160];
	snprintf(name, sizeof name, "%zu unique stacks, site of each (load + name), cold", n);
	row(name, (now_ns() - t0) / 1e6, "ms cpu");
}

/* 10 000 distinct addresses spread over this program's code, in the module
 * the trace recorded for it (same file, same build id). */
extern char __executable_start[], etext[];

static void name_distinct_addresses(struct vt_stack_store *st)
{
	const struct vt_module_info *self = NULL;
	for (uint32_t m = 1; m <= vt_stack_store_module_count(st); m++) {
		const struct vt_module_info *mi = vt_stack_store_module(st, m);
		if (mi && strstr(mi->path, "bench_symbolize"))
			self = mi;
	}
	if (!self) {
		printf("symbolize\t10000 distinct addresses\tn/a (program not in the trace)\t\n");
		return;
	}
	uint64_t lo = (uint64_t)(uintptr_t)__executable_start, hi = (uint64_t)(uintptr_t)etext;
	struct vt_symbolizer *sym = vt_symbolizer_open(NULL, VT_SYM_NO_SIDECAR);
	size_t named = 0;
	double t0 = now_ns();
	for (unsigned i = 0; i < STACKS; i++) {
		uint64_t offset =
		    lo + (hi - lo) * i / STACKS - lo; /* ELF vaddr of a PIE = offset */
		struct vt_frame_names fn;
		if (vt_symbolize(sym, self, offset, &fn) == VT_SYM_OK)
			named++;
	}
	double ms = (now_ns() - t0) / 1e6;
	vt_symbolizer_close(sym);
	char name[160];
	snprintf(name, sizeof name, "%u distinct addresses in one module (%.0f%% named), cold",
	         STACKS, 100.0 * named / STACKS);
	row(name, ms, "ms cpu");
}

/* The shared libpython python3 runs on, or "" (a static build, no python3). */
static void python_library(char *out, size_t len)
{
	out[0] = 0;
	FILE *p = popen("python3 -c 'import sysconfig as s, os; d = s.get_config_var; "
	                "print(os.path.join(d(\"LIBDIR\") or \"\", d(\"INSTSONAME\") or \"\"))' "
	                "2>/dev/null",
	                "r");
	if (!p)
		return;
	if (!fgets(out, (int)len, p))
		out[0] = 0;
	out[strcspn(out, "\n")] = 0;
	pclose(p);
}

/* The file at path as a module at its own addresses (bias 0, as the
 * symbolizer reports files), in a Dwfl of its own: dwfl_end(*dwfl). */
static Dwfl_Module *open_offline(const char *path, Dwfl **dwfl)
{
	static const Dwfl_Callbacks cb = {.find_elf = dwfl_build_id_find_elf,
	                                  .find_debuginfo = dwfl_standard_find_debuginfo,
	                                  .section_address = dwfl_offline_section_address};
	*dwfl = dwfl_begin(&cb);
	dwfl_report_begin(*dwfl);
	Dwfl_Module *mod = dwfl_report_elf(*dwfl, "lib", path, -1, 0, false);
	dwfl_report_end(*dwfl, NULL, NULL);
	return mod;
}

/* The file's .text as ELF virtual addresses (what a frame's offset is). */
static int text_range(const char *path, uint64_t *lo, uint64_t *hi)
{
	Dwfl *dwfl;
	Dwfl_Module *mod = open_offline(path, &dwfl);
	GElf_Addr bias;
	Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	size_t strndx;
	int found = 0;
	if (elf && elf_getshdrstrndx(elf, &strndx) == 0) {
		for (Elf_Scn *scn = NULL; !found && (scn = elf_nextscn(elf, scn)) != NULL;) {
			GElf_Shdr sh;
			const char *name =
			    gelf_getshdr(scn, &sh) ? elf_strptr(elf, strndx, sh.sh_name) : NULL;
			if (name && !strcmp(name, ".text")) {
				*lo = sh.sh_addr;
				*hi = sh.sh_addr + sh.sh_size;
				found = 1;
			}
		}
	}
	dwfl_end(dwfl);
	return found ? 0 : -1;
}

static void name_python_addresses(void)
{
	char path[4096];
	python_library(path, sizeof path);
	uint64_t lo, hi;
	if (!path[0] || access(path, R_OK) != 0 || text_range(path, &lo, &hi) != 0) {
		printf("symbolize\t10000 distinct addresses in libpython\tn/a (no shared "
		       "libpython)\t\n");
		return;
	}
	struct vt_module_info mod = {.index = 1, .path = path}; /* no build id: not checked */
	struct vt_symbolizer *sym = vt_symbolizer_open(NULL, VT_SYM_NO_SIDECAR);
	size_t from_dwarf = 0, with_inlines = 0;
	double t0 = now_ns();
	for (unsigned i = 0; i < STACKS; i++) {
		struct vt_frame_names fn;
		if (vt_symbolize(sym, &mod, lo + (hi - lo) * i / STACKS, &fn) == VT_SYM_OK &&
		    fn.n && fn.sym[0].file) {
			from_dwarf++;
			with_inlines += fn.n > 1;
		}
	}
	double ms = (now_ns() - t0) / 1e6;
	vt_symbolizer_close(sym);
	if (from_dwarf == 0) {
		printf(
		    "symbolize\t10000 distinct addresses in libpython\tn/a (%s has no DWARF)\t\n",
		    path);
		return;
	}
	char name[160];
	snprintf(
	    name, sizeof name,
	    "%u distinct addresses in %s (%.0f%% with file:line, %.0f%% in inlined calls), cold",
	    STACKS, vt_path_basename(path), 100.0 * from_dwarf / STACKS,
	    100.0 * with_inlines / STACKS);
	row(name, ms, "ms cpu");
}

/* A library on every build machine that has no DWARF here (libc does when
 * libc6-dbg is installed, which valgrind pulls in): its path, or NULL. */
static const char *library_without_dwarf(char *path, size_t len)
{
	static const char *const candidates[] = {"libstdc++.so.6", "libz.so.1"};
	for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
		void *h = dlopen(candidates[i], RTLD_LAZY | RTLD_LOCAL);
		struct link_map *lm = NULL;
		if (!h)
			continue;
		if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name[0] == '/')
			snprintf(path, len, "%s", lm->l_name);
		dlclose(h);
		Dwfl *dwfl;
		Dwarf_Addr bias;
		Dwfl_Module *m = lm ? open_offline(path, &dwfl) : NULL;
		int dwarf = m && dwfl_module_getdwarf(m, &bias) != NULL;
		if (lm)
			dwfl_end(dwfl);
		if (m && !dwarf)
			return path;
	}
	return NULL;
}

/* A library known by its symbol table alone: the symbolizer (a frame with
 * no DWARF ends at elf_symbols.c's arrays) against dwfl_module_addrinfo on
 * the same addresses. */
static void name_symtab_addresses(void)
{
	char buf[4096];
	const char *path = library_without_dwarf(buf, sizeof buf);
	uint64_t lo, hi;
	if (!path || text_range(path, &lo, &hi) != 0) {
		printf("symbolize\t10000 distinct addresses, symbol table only\tn/a (no library "
		       "without DWARF found)\t\n");
		return;
	}
	struct vt_module_info mod = {.index = 1, .path = path};
	struct vt_symbolizer *sym = vt_symbolizer_open(NULL, VT_SYM_NO_SIDECAR);
	size_t named = 0;
	double t0 = now_ns();
	for (unsigned i = 0; i < STACKS; i++) {
		struct vt_frame_names fn;
		named += vt_symbolize(sym, &mod, lo + (hi - lo) * i / STACKS, &fn) == VT_SYM_OK;
	}
	double ms = (now_ns() - t0) / 1e6;
	vt_symbolizer_close(sym);

	Dwfl *dwfl;
	Dwfl_Module *m = open_offline(path, &dwfl);
	int nsyms = m ? dwfl_module_getsymtab(m) : 0;
	double t1 = now_ns();
	for (unsigned i = 0; m && i < STACKS; i++) {
		GElf_Off off;
		GElf_Sym esym;
		dwfl_module_addrinfo(m, lo + (hi - lo) * i / STACKS, &off, &esym, NULL, NULL, NULL);
	}
	double dwfl_ms = (now_ns() - t1) / 1e6;
	dwfl_end(dwfl);
	char name[240];
	snprintf(name, sizeof name,
	         "%u distinct addresses in %s, no DWARF (%d symbols, %.0f%% named): vramtrace / "
	         "dwfl_module_addrinfo alone, cold",
	         STACKS, vt_path_basename(path), nsyms, 100.0 * named / STACKS);
	printf("symbolize\t%s\t%.1f / %.1f\tms cpu\n", name, ms, dwfl_ms);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "record"))
		return child_record();
	char dir[] = "/tmp/vt_bench_symbolize_XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	struct vt_trace t;
	char err[256] = "";
	if (record(dir) != 0 || vt_trace_open(dir, &t, err, sizeof err) != 0) {
		printf("symbolize\t10000 unique stacks\tn/a (recording failed%s%s)\t\n",
		       *err ? ": " : "", err);
	} else {
		struct vt_stack_store *st = vt_stack_store_new();
		vt_stack_store_load_trace(st, &t);
		name_all_frames(dir, st);
		name_distinct_addresses(st);
		vt_stack_store_free(st);
		name_all_sites(&t);
		vt_trace_close(&t);
	}
	name_python_addresses();
	name_symtab_addresses();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
