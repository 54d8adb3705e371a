/* The symbol-table index (analyzer/elf_symbols.h) gives the name
 * dwfl_module_addrinfo gives, at 4000 addresses spread over each object
 * this test has loaded (itself, libc, libdw, libelf, cmocka...: real
 * tables, with aliases, local and weak symbols, labels without a size),
 * and answers most of them itself: the point of it. And at every byte of
 * labels.so (labels.s), built to need dwfl's label rules: labels inside
 * and past sized functions, local and global ones, two at one address, a
 * second code section. */
#define _GNU_SOURCE
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <elfutils/libdwfl.h>

#include "elf_symbols.h"

#define ADDRESSES 4000
#define MAX_OBJECTS 32

static char paths[MAX_OBJECTS][4096];
static int nobjects;

static int collect(struct dl_phdr_info *info, size_t size, void *p)
{
	(void)size, (void)p;
	const char *name = info->dlpi_name;
	if (nobjects == 0 && !name[0]) { /* the program itself */
		ssize_t n = readlink("/proc/self/exe", paths[0], sizeof paths[0] - 1);
		if (n > 0)
			paths[nobjects++][n] = 0;
	} else if (name[0] == '/' && nobjects < MAX_OBJECTS && !strstr(name, "linux-vdso")) {
		snprintf(paths[nobjects++], sizeof paths[0], "%s", name);
	}
	return 0;
}

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

struct tally {
	unsigned long total, own;
	unsigned long labels, nothing; /* answers: a label's name, no name */
};

/* One object at `count` addresses, `step` apart from its start (0: spread
 * over the whole module): every answer the same as dwfl's. */
static void compare_object(const char *path, unsigned count, GElf_Addr step, struct tally *t)
{
	Dwfl *dwfl = dwfl_begin(&callbacks);
	assert_non_null(dwfl);
	dwfl_report_begin(dwfl);
	Dwfl_Module *mod = dwfl_report_elf(dwfl, "obj", path, -1, 0, false);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		dwfl_end(dwfl);
		return;
	}
	Dwarf_Addr lo, hi;
	dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
	struct vt_symtab_index *ix = vt_symtab_index_build(mod);
	for (unsigned i = 0; i < count; i++) {
		GElf_Addr addr = step ? lo + step * i : lo + (hi - lo) / count * i + i % 7;
		GElf_Off off;
		GElf_Sym sym;
		const char *want = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
		const char *got = vt_symtab_name_at(ix, mod, addr);
		if ((want == NULL) != (got == NULL) || (want && strcmp(want, got) != 0))
			fail_msg("%s+0x%llx: dwfl names %s, the index %s", path,
			         (unsigned long long)addr, want ? want : "nothing",
			         got ? got : "nothing");
		t->nothing += !got;
		t->labels += got && sym.st_size == 0;
	}
	unsigned long own, asked;
	vt_symtab_index_stats(ix, &own, &asked);
	assert_int_equal(own + asked, count);
	t->total += count;
	t->own += own;
	vt_symtab_index_free(ix);
	dwfl_end(dwfl);
}

static void same_names_as_dwfl(void **state)
{
	(void)state;
	dl_iterate_phdr(collect, NULL);
	assert_true(nobjects >= 4); /* the program, libc, libdw, cmocka at least */
	struct tally t = {0};
	for (int i = 0; i < nobjects; i++)
		compare_object(paths[i], ADDRESSES, 0, &t);
	print_message("%d objects, %lu addresses: %lu answered by the index, %lu asked of dwfl\n",
	              nobjects, t.total, t.own, t.total - t.own);
	assert_true(t.total >= 4 * ADDRESSES);
	assert_true(t.own * 100 >= t.total * 99); /* dwfl asked about one in 100 at most */
}

static void labels_as_dwfl(void **state)
{
	(void)state;
	struct tally t = {0};
	compare_object(VT_LABELS_SO, 0x1100, 1, &t); /* headers, .text, .code2 */
	assert_int_equal(t.own, t.total);            /* every one by the index */
	assert_true(t.labels > 0x80);                /* some named by labels */
	assert_true(t.nothing > 0x1000);             /* the rest: where no label may be taken */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(same_names_as_dwfl),
	    cmocka_unit_test(labels_as_dwfl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
