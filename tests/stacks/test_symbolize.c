/* Symbolization from module files (libdwfl): function, file:line, inline
 * chains; refuses a file whose build id differs; says why a frame is
 * unnamed; formats frames and sites; caches. The per-unit scope index
 * (dwarf_scopes.h) gives the inline chain libdw's own dwarf_getscopes walk
 * gives, at thousands of addresses of this program's optimised code. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "sites.h"
#include "stack_store.h"
#include "sym_fixture.h"
#include "symbolize.h"

/* This program as a module record would describe it. */
static struct vt_module_info self_module;
static char self_path[4096];
static uint64_t self_bias;

static int find_self(struct dl_phdr_info *info, size_t size, void *p)
{
	(void)size, (void)p;
	self_bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *n = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)n;
		if (nh->n_type == 3 && nh->n_namesz == 4) {
			self_module.build_id_len = (uint8_t)nh->n_descsz;
			memcpy(self_module.build_id, n + sizeof *nh + 4, nh->n_descsz);
		}
	}
	return 1; /* the main program is first */
}

static int setup(void **state)
{
	(void)state;
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
	assert_true(n > 0);
	self_path[n] = '\0';
	self_module.index = 1;
	self_module.path = self_path;
	dl_iterate_phdr(find_self, NULL);
	assert_true(self_module.build_id_len >= 8);
	return 0;
}

static uint64_t offset_of_last(void)
{
	return (uint64_t)(uintptr_t)fixture_last.ra - 1 - self_bias;
}

static void names_function_file_and_line(void **state)
{
	(void)state;
	struct vt_symbolizer *sym = vt_symbolizer_open(NULL, 0);
	fixture_alpha();
	struct vt_frame_names fn;
	assert_int_equal(vt_symbolize(sym, &self_module, offset_of_last(), &fn), VT_SYM_OK);
	assert_int_equal(fn.n, 1);
	assert_string_equal(fn.source, "dwarf");
	assert_string_equal(fn.sym[0].function, "fixture_alpha");
	assert_string_equal(vt_path_basename(fn.sym[0].file), "sym_fixture.c");
	assert_int_equal(fn.sym[0].line, fixture_last.line);
	char text[256];
	vt_format_symbol(&fn.sym[0], text, sizeof text);
	char want[256];
	snprintf(want, sizeof want, "fixture_alpha (sym_fixture.c:%d)", fixture_last.line);
	assert_string_equal(text, want);
	/* cached: the same answer, the same storage */
	struct vt_frame_names again;
	vt_symbolize(sym, &self_module, offset_of_last(), &again);
	assert_ptr_equal(again.sym, fn.sym);
	vt_symbolizer_close(sym);
}

static void resolves_inline_chain(void **state)
{
	(void)state;
	struct vt_symbolizer *sym = vt_symbolizer_open(NULL, 0);
	fixture_inline_outer();
	struct vt_frame_names fn;
	assert_int_equal(vt_symbolize(sym, &self_module, offset_of_last(), &fn), VT_SYM_OK);
	assert_int_equal(fn.n, 2);
	assert_string_equal(fn.sym[0].function, "fixture_inlined_helper");
	assert_string_equal(vt_path_basename(fn.sym[0].file), "sym_fixture_inl.h");
	assert_int_equal(fn.sym[0].line, fixture_last.line);
	assert_int_equal(fn.sym[0].inlined, 1);
	assert_string_equal(fn.sym[1].function, "fixture_inline_outer");
	assert_string_equal(vt_path_basename(fn.sym[1].file), "sym_fixture.c");
	assert_int_equal(fn.sym[1].line, fixture_last.outer_line);
	assert_int_equal(fn.sym[1].inlined, 0);
	vt_symbolizer_close(sym);
}

/* ---- the chain as libdw finds it: the reference --------------------------- */

struct ref_frame {
	const char *name;
	int inlined;
	int call_line; /* where it was inlined: the next frame's line */
};

static const char *ref_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	return n ? n : dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

/* dwarf_getscopes at pc, then the concrete ancestors of its innermost scope
 * (dwarf_getscopes_die), functions and inlined calls only: the walk from
 * the unit's top for every address that the index replaces. */
static int ref_chain(Dwfl_Module *mod, Dwarf_Addr addr, struct ref_frame *out, int max)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
	for (Dwarf_Die *c = NULL; !cu && (c = dwfl_module_nextcu(mod, c, &bias)) != NULL;)
		if (dwarf_haspc(c, addr - bias) > 0) /* a unit without aranges */
			cu = c;
	Dwarf_Die *scopes = NULL, innermost;
	int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
	if (n <= 0) {
		free(scopes);
		return 0;
	}
	Dwarf_Addr dwbias;
	Dwarf *dw = dwfl_module_getdwarf(mod, &dwbias);
	int ok = dw && dwarf_offdie(dw, dwarf_dieoffset(&scopes[0]), &innermost);
	free(scopes);
	scopes = NULL;
	n = ok ? dwarf_getscopes_die(&innermost, &scopes) : 0;
	int k = 0;
	for (int i = 0; i < n && k < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		Dwarf_Attribute attr;
		Dwarf_Word line = 0;
		dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &line);
		out[k++] = (struct ref_frame){ref_name(&scopes[i]),
		                              tag == DW_TAG_inlined_subroutine, (int)line};
		if (tag == DW_TAG_subprogram)
			break;
	}
	free(scopes);
	return k;
}

extern char __executable_start[], etext[];

#define MAX_ONLY_INDEX 16384

/* Where only the index names an inline chain, binutils' addr2line -i (its
 * own DWARF reader) must name the same functions, innermost first. */
static void check_with_addr2line(struct vt_symbolizer *sym, const uint64_t *at, unsigned n)
{
	if (n == 0 || system("command -v addr2line >/dev/null 2>&1") != 0)
		return; /* binutils comes with build-essential; nothing to compare without it */
	char list[] = "/tmp/vt-symtest-XXXXXX";
	int fd = mkstemp(list);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "0x%llx\n", (unsigned long long)at[i]);
	fclose(f);
	char cmd[8400];
	snprintf(cmd, sizeof cmd, "addr2line -a -f -i -e '%s' < %s", self_path, list);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[4096];
	int rec = -1;
	unsigned frame = 0, pending_name = 0;
	struct vt_frame_names fn = {0};
	while (fgets(line, sizeof line, p)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "0x", 2)) { /* a new address: the last one's chain ended */
			if (rec >= 0)
				assert_int_equal(frame, fn.n);
			rec++;
			assert_true(rec < (int)n);
			vt_symbolize_from_file(sym, &self_module, at[rec], &fn);
			frame = 0;
			pending_name = 1;
		} else if (pending_name) {
			if (frame >= fn.n || strcmp(line, fn.sym[frame].function) != 0)
				fail_msg("0x%llx frame %u: addr2line says %s, the index %s",
				         (unsigned long long)at[rec], frame, line,
				         frame < fn.n ? fn.sym[frame].function : "(none)");
			frame++;
			pending_name = 0;
		} else {
			pending_name = 1; /* the file:line; a name follows, or an address */
		}
	}
	if (rec >= 0)
		assert_int_equal(frame, fn.n);
	assert_int_equal(rec + 1, n);
	pclose(p);
	unlink(list);
}

/* Where libdw's walk finds no scope and the index names a chain: its
 * outermost frame is the function the symbol table names at off (cmp_range
 * for cmp_range.lto_priv.1). */
static void outer_frame_is_symbol(Dwfl_Module *mod, uint64_t off, const struct vt_frame_names *fn)
{
	GElf_Off symoff;
	GElf_Sym esym;
	const char *sname = dwfl_module_addrinfo(mod, off, &symoff, &esym, NULL, NULL, NULL);
	const char *outer = fn->sym[fn->n - 1].function;
	size_t len = strlen(outer);
	assert_non_null(sname);
	assert_false(fn->sym[fn->n - 1].inlined);
	if (strncmp(sname, outer, len) != 0 || (sname[len] && sname[len] != '.'))
		fail_msg("0x%llx: index says %s, the symbol table %s", (unsigned long long)off,
		         outer, sname);
}

/* The index's chain at off is libdw's (want[0..n)), frame for frame. */
static void same_chain(uint64_t off, const struct vt_frame_names *fn, const struct ref_frame *want,
                       int n)
{
	if ((int)fn->n != n)
		fail_msg("0x%llx: %u frames, libdw finds %d", (unsigned long long)off, fn->n, n);
	for (int i = 0; i < n; i++) {
		assert_string_equal(fn->sym[i].function, want[i].name);
		assert_int_equal(fn->sym[i].inlined, want[i].inlined);
		if (i > 0)
			assert_int_equal(fn->sym[i].line, want[i - 1].call_line);
	}
}

static void index_matches_libdw_walk(void **state)
{
	(void)state;
	static const Dwfl_Callbacks cb = {
	    .find_elf = dwfl_build_id_find_elf,
	    .find_debuginfo = dwfl_standard_find_debuginfo,
	    .section_address = dwfl_offline_section_address,
	};
	Dwfl *dwfl = dwfl_begin(&cb);
	assert_non_null(dwfl);
	dwfl_report_begin(dwfl);
	Dwfl_Module *mod = dwfl_report_elf(dwfl, "self", self_path, -1, 0, false);
	dwfl_report_end(dwfl, NULL, NULL);
	assert_non_null(mod);
	struct vt_symbolizer *sym = vt_symbolizer_open(NULL, 0);
	uint64_t lo = (uintptr_t)__executable_start - self_bias, hi = (uintptr_t)etext - self_bias;
	unsigned with_chain = 0, inlined = 0, only_index = 0;
	static uint64_t only_index_at[MAX_ONLY_INDEX];
	for (uint64_t off = lo; off < hi; off += 7) {
		struct ref_frame want[64];
		int n = ref_chain(mod, off, want, 64);
		struct vt_frame_names fn;
		vt_symbolize_from_file(sym, &self_module, off, &fn);
		if (n == 0) {
			/* libdw's walk finds no scope in some of GCC's LTO units
			 * (dwarf_getscopes gives up there, addr2line -i does not);
			 * the index may: checked against the symbol table here,
			 * against addr2line below */
			if (fn.n > 1 && only_index < MAX_ONLY_INDEX)
				only_index_at[only_index++] = off;
			if (fn.n > 1 && strcmp(fn.source, "dwarf") == 0)
				outer_frame_is_symbol(mod, off, &fn);
			continue;
		}
		with_chain++;
		inlined += n > 1;
		same_chain(off, &fn, want, n);
	}
	/* the walk saw real code: named functions, and inlined calls in them */
	assert_true(with_chain > 1000);
	assert_true(inlined > 50);
	check_with_addr2line(sym, only_index_at, only_index);
	vt_symbolizer_close(sym);
	dwfl_end(dwfl);
}

static void refuses_other_builds_and_missing_files(void **state)
{
	(void)state;
	struct vt_symbolizer *sym = vt_symbolizer_open(NULL, 0);
	fixture_alpha();
	struct vt_module_info other = self_module;
	other.index = 2;
	other.build_id[0] ^= 0xff;
	struct vt_frame_names fn;
	assert_int_equal(vt_symbolize(sym, &other, offset_of_last(), &fn),
	                 VT_SYM_BUILD_ID_MISMATCH);
	assert_int_equal(fn.n, 0);

	struct vt_module_info gone = self_module;
	gone.path = "/nonexistent/vramtrace/libgone.so";
	assert_int_equal(vt_symbolize(sym, &gone, 0x1234, &fn), VT_SYM_NO_FILE);
	assert_int_equal(vt_symbolize(sym, NULL, 0x1234, &fn), VT_SYM_NO_MODULE);
	/* a log may name a FIFO or a device: never read (it would block) */
	char fifo[] = "/tmp/vt_sym_fifo_XXXXXX";
	int tmpfd = mkstemp(fifo);
	assert_true(tmpfd >= 0);
	close(tmpfd);
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	struct vt_module_info pipe_mod = {3, fifo, {0}, 0};
	assert_int_equal(vt_symbolize(sym, &pipe_mod, 0x10, &fn), VT_SYM_NO_FILE);
	unlink(fifo);
	struct vt_module_info dev_mod = {4, "/dev/zero", {0}, 0};
	assert_int_equal(vt_symbolize(sym, &dev_mod, 0x10, &fn), VT_SYM_NO_FILE);
	struct vt_module_info not_elf = {5, "/etc/passwd", {0}, 0};
	assert_int_equal(vt_symbolize(sym, &not_elf, 0x10, &fn), VT_SYM_NO_FILE);
	/* far outside any function of the file */
	assert_int_equal(vt_symbolize(sym, &self_module, 0x7fffffff0, &fn), VT_SYM_NO_SYMBOL);
	assert_non_null(vt_sym_status_str(VT_SYM_BUILD_ID_MISMATCH));

	/* an unnamed frame says where it was */
	struct vt_frame f = {0, 0x1234, 0x7f0000001234};
	char text[128];
	vt_symbolize(sym, &gone, 0x1234, &fn);
	struct vt_stack_store *st = vt_stack_store_new();
	vt_format_frame(&fn, st, &f, text, sizeof text);
	assert_string_equal(text, "0x7f0000001234 (?)");
	vt_stack_store_free(st);
	vt_symbolizer_close(sym);
}

static void files_off_means_sidecar_only(void **state)
{
	(void)state;
	struct vt_symbolizer *sym = vt_symbolizer_open(NULL, VT_SYM_NO_FILES);
	fixture_alpha();
	struct vt_frame_names fn;
	assert_int_equal(vt_symbolize(sym, &self_module, offset_of_last(), &fn), VT_SYM_NO_FILE);
	vt_symbolizer_close(sym);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(names_function_file_and_line),
	    cmocka_unit_test(resolves_inline_chain),
	    cmocka_unit_test(index_matches_libdw_walk),
	    cmocka_unit_test(refuses_other_builds_and_missing_files),
	    cmocka_unit_test(files_off_means_sidecar_only),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
