/* Symbolization from module files (libdwfl): function, file:line, inline
 * chains; refuses a file whose build id differs; says why a frame is
 * unnamed; formats frames and sites; caches. */
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

static void refuses_other_builds_and_missing_files(void **state)
{
	(void)state;
	struct vt_symbolizer *sym = vt_symbolizer_open(NULL, 0);
	fixture_alpha();
	struct vt_module_info other = self_module;
	other.index = 2;
	other.build_id[0] ^= 0xff;
	struct vt_frame_names fn;
	assert_int_equal(vt_symbolize(sym, &other, offset_of_last(), &fn), VT_SYM_BUILD_ID_MISMATCH);
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
		cmocka_unit_test(refuses_other_builds_and_missing_files),
		cmocka_unit_test(files_off_means_sidecar_only),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
