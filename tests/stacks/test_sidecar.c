/* The symbol sidecar: what the writer resolves on this host reads back the
 * same; the symbolizer prefers it (names survive a deleted binary); the
 * parser survives lies: bad magic, future versions, cut at every byte, bad
 * escapes, absurd numbers, random damage. */
#define _GNU_SOURCE
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sidecar_read.h"
#include "sidecar_write.h"
#include "stack_store.h"
#include "sym_fixture.h"
#include "symbolize.h"
#include "vramtrace/format.h"

static char self_path[4096];
static uint64_t self_bias, self_lo, self_hi;
static uint8_t self_bid[32], self_bid_len;

static int find_self(struct dl_phdr_info *info, size_t size, void *p)
{
	(void)size, (void)p;
	self_bias = info->dlpi_addr;
	self_lo = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD) {
			uint64_t a = info->dlpi_addr + ph->p_vaddr;
			self_lo = a < self_lo ? a : self_lo;
			self_hi = a + ph->p_memsz > self_hi ? a + ph->p_memsz : self_hi;
		}
		if (ph->p_type != PT_NOTE)
			continue;
		const char *n = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)n;
		if (nh->n_type == 3 && nh->n_namesz == 4) {
			self_bid_len = (uint8_t)nh->n_descsz;
			memcpy(self_bid, n + sizeof *nh + 4, nh->n_descsz);
		}
	}
	return 1;
}

static uint64_t rec_buf[1024];

/* A store holding this program as a module (recorded at `path`) and one
 * stack: the fixture's two call sites. */
static struct vt_stack_store *store_of_self(const char *path, uint64_t *ips)
{
	struct vt_stack_store *st = vt_stack_store_new();
	char err[128];
	memset(rec_buf, 0, sizeof rec_buf);
	struct vt_module_rec *m = (struct vt_module_rec *)rec_buf;
	m->base = self_bias;
	m->lo = self_lo;
	m->hi = self_hi;
	m->build_id_len = self_bid_len;
	memcpy(m->build_id, self_bid, self_bid_len);
	m->path_len = (uint16_t)strlen(path);
	memcpy(m->path, path, m->path_len);
	struct vt_record_view r = {VT_REC_MODULE, VT_ALIGN8((uint32_t)(sizeof *m + m->path_len)),
				   rec_buf, 1, 0};
	assert_int_equal(vt_stack_store_add(st, 0, &r, err, sizeof err), 0);
	memset(rec_buf, 0, sizeof rec_buf);
	struct vt_stack_rec *s = (struct vt_stack_rec *)rec_buf;
	s->stack_id = 1;
	s->depth = 2;
	s->frames[0] = ips[0];
	s->frames[1] = ips[1];
	r = (struct vt_record_view){VT_REC_STACK, sizeof *s + 16, rec_buf, 1, 0};
	assert_int_equal(vt_stack_store_add(st, 0, &r, err, sizeof err), 0);
	return st;
}

static uint64_t ips[2];
static int lines[3];

static int setup(void **state)
{
	(void)state;
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
	assert_true(n > 0);
	self_path[n] = '\0';
	dl_iterate_phdr(find_self, NULL);
	fixture_alpha();
	ips[0] = (uint64_t)(uintptr_t)fixture_last.ra - 1;
	lines[0] = fixture_last.line;
	fixture_inline_outer();
	ips[1] = (uint64_t)(uintptr_t)fixture_last.ra - 1;
	lines[1] = fixture_last.line;
	lines[2] = fixture_last.outer_line;
	return 0;
}

static char *write_sidecar_text(size_t *len)
{
	struct vt_stack_store *st = store_of_self(self_path, ips);
	struct vt_symbolizer *sym = vt_symbolizer_open(NULL, VT_SYM_NO_SIDECAR);
	char *text = NULL;
	FILE *out = open_memstream(&text, len);
	size_t naddrs = 0;
	assert_int_equal(vt_sidecar_write_store(st, sym, out, &naddrs), 0);
	fclose(out);
	assert_int_equal(naddrs, 2);
	vt_symbolizer_close(sym);
	vt_stack_store_free(st);
	return text;
}

static void round_trip(void **state)
{
	(void)state;
	size_t len;
	char *text = write_sidecar_text(&len);
	assert_memory_equal(text, "vtsym\t1\nM\t1\t", 12);
	char err[256];
	struct vt_sidecar *sc = vt_sidecar_parse(text, len, "mem", err, sizeof err);
	assert_non_null(sc);
	assert_true(vt_sidecar_complete(sc));
	assert_int_equal(vt_sidecar_warnings(sc), 0);
	assert_int_equal(vt_sidecar_addresses(sc), 2);
	/* matched by build id: the path may differ */
	struct vt_module_info mod = {1, "/elsewhere/renamed", {0}, self_bid_len};
	memcpy(mod.build_id, self_bid, self_bid_len);
	struct vt_frame_names fn;
	assert_int_equal(vt_sidecar_lookup(sc, &mod, ips[1] - self_bias, &fn), 0);
	assert_string_equal(fn.source, "sidecar");
	assert_int_equal(fn.n, 2);
	assert_string_equal(fn.sym[0].function, "fixture_inlined_helper");
	assert_int_equal(fn.sym[0].line, lines[1]);
	assert_int_equal(fn.sym[0].inlined, 1);
	assert_string_equal(fn.sym[1].function, "fixture_inline_outer");
	assert_int_equal(fn.sym[1].line, lines[2]);
	assert_int_equal(vt_sidecar_lookup(sc, &mod, ips[0] - self_bias + 1, &fn), -1);
	mod.build_id[0] ^= 1;
	assert_int_equal(vt_sidecar_lookup(sc, &mod, ips[1] - self_bias, &fn), -1);
	vt_sidecar_free(sc);
	free(text);
}

/* The binary is gone (its recorded path names nothing): names come from the
 * sidecar in the trace directory. */
static void symbolizer_prefers_sidecar(void **state)
{
	(void)state;
	char dir[] = "/tmp/vt_sidecar_XXXXXX";
	assert_non_null(mkdtemp(dir));
	size_t len;
	char *text = write_sidecar_text(&len);
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, VT_SIDECAR_NAME);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fwrite(text, 1, len, f);
	fclose(f);

	struct vt_stack_store *st = store_of_self("/deleted/vt-client", ips);
	const struct vt_stack *s = vt_stack_store_stack(st, 1);
	struct vt_symbolizer *sym = vt_symbolizer_open(dir, 0);
	struct vt_frame_names fn;
	assert_int_equal(vt_symbolize_frame(sym, st, &s->frames[0], &fn), VT_SYM_OK);
	assert_string_equal(fn.source, "sidecar");
	assert_string_equal(fn.sym[0].function, "fixture_alpha");
	assert_int_equal(fn.sym[0].line, lines[0]);
	vt_symbolizer_close(sym);
	/* without the sidecar the same frame cannot be named, and says why */
	sym = vt_symbolizer_open(dir, VT_SYM_NO_SIDECAR);
	assert_int_equal(vt_symbolize_frame(sym, st, &s->frames[0], &fn), VT_SYM_NO_FILE);
	char text2[256];
	vt_format_frame(&fn, st, &s->frames[0], text2, sizeof text2);
	assert_non_null(strstr(text2, "(vt-client+0x"));
	vt_symbolizer_close(sym);
	vt_stack_store_free(st);
	unlink(path);
	rmdir(dir);
	free(text);
}

static struct vt_sidecar *parse(const char *text, char *err, size_t errlen)
{
	return vt_sidecar_parse(text, strlen(text), "test", err, errlen);
}

static void refuses_what_it_cannot_read(void **state)
{
	(void)state;
	char err[256];
	assert_null(parse("", err, sizeof err));
	assert_non_null(strstr(err, "not a vramtrace symbol sidecar"));
	assert_null(parse("ELF\x7f garbage", err, sizeof err));
	assert_null(parse("vtsym\t2\nE\t0\n", err, sizeof err));
	assert_non_null(strstr(err, "version 2"));
	assert_null(parse("vtsym\t99999999999999999999\n", err, sizeof err));
	char missing[] = "/nonexistent/vramtrace/symbols.vtsym";
	assert_null(vt_sidecar_load(missing, err, sizeof err));
	assert_string_equal(err, ""); /* absent is not an error */
}

static void escapes_and_lies(void **state)
{
	(void)state;
	char err[256];
	struct vt_sidecar *sc = parse(
		"vtsym\t1\n"
		"# a comment\n"
		"M\t1\t\t/lib/odd\\tname.so\n"                 /* no build id: by path */
		"A\t1\t10\t1\n"
		"F\tf\\\\un\\tc\\n\\x01\tsrc/a.c\t7\t0\n"
		"A\t1\t20\t2\n"                               /* promises 2, gives 1 */
		"F\tonly\t\t0\t0\n"
		"A\t7\t30\t1\n"                               /* no module 7 */
		"F\tx\t\t1\t0\n"
		"A\t1\t40\t65\n"                              /* too many frames */
		"A\t1\tzz\t1\n"                               /* bad hex */
		"F\tbad\\q\t\t1\t0\n"                          /* bad escape, no A */
		"M\t1\taabb\t/dup\n"                           /* module number twice */
		"M\t2\tabc\t/odd-length-id\n"
		"Q\tfuture kind\n"
		"A\t1\t50\t1\n"
		"F\tg\t\t4294967296\t0\n"                      /* line too big */
		"A\t1\t60\t1\n"
		"F\th\t\t3\t0\n"
		"E\t3\n",
		err, sizeof err);
	assert_non_null(sc);
	assert_int_equal(vt_sidecar_addresses(sc), 2);
	assert_true(vt_sidecar_warnings(sc) >= 9);
	struct vt_module_info mod = {1, "/lib/odd\tname.so", {0}, 0};
	struct vt_frame_names fn;
	assert_int_equal(vt_sidecar_lookup(sc, &mod, 0x10, &fn), 0);
	assert_string_equal(fn.sym[0].function, "f\\un\tc\n\x01");
	assert_string_equal(fn.sym[0].file, "src/a.c");
	assert_int_equal(vt_sidecar_lookup(sc, &mod, 0x20, &fn), -1);
	assert_int_equal(vt_sidecar_lookup(sc, &mod, 0x50, &fn), -1);
	assert_int_equal(vt_sidecar_lookup(sc, &mod, 0x60, &fn), 0);
	assert_null(fn.sym[0].file);
	vt_sidecar_free(sc);
}

/* Cut a real sidecar at every byte, and damage it at random: the parser
 * never reads out of bounds (ASan), never keeps more than was there. */
static void survives_cuts_and_damage(void **state)
{
	(void)state;
	size_t len;
	char *text = write_sidecar_text(&len);
	char err[256];
	for (size_t cut = 0; cut <= len; cut++) {
		char *copy = malloc(cut + 1);
		memcpy(copy, text, cut);
		struct vt_sidecar *sc = vt_sidecar_parse(copy, cut, "cut", err, sizeof err);
		if (sc) {
			assert_true(vt_sidecar_addresses(sc) <= 2);
			assert_true(vt_sidecar_complete(sc) == (cut >= len - 1));
		}
		vt_sidecar_free(sc);
		free(copy);
	}
	srand(4);
	for (int round = 0; round < 3000; round++) {
		char *copy = malloc(len);
		memcpy(copy, text, len);
		for (int k = 0; k < 1 + round % 8; k++)
			copy[(size_t)rand() % len] = (char)(rand() % 256);
		struct vt_sidecar *sc = vt_sidecar_parse(copy, len, "fuzz", err, sizeof err);
		if (sc)
			assert_true(vt_sidecar_addresses(sc) <= 2);
		vt_sidecar_free(sc);
		free(copy);
	}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(symbolizer_prefers_sidecar),
		cmocka_unit_test(refuses_what_it_cannot_read),
		cmocka_unit_test(escapes_and_lies),
		cmocka_unit_test(survives_cuts_and_damage),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
