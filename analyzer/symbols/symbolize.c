/* Offline symbolization with libdwfl, sidecar first (symbolize.h). */
#define _GNU_SOURCE
#include "symbolize.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include <uthash.h>

#include "dwarf_scopes.h"
#include "elf_symbols.h"
#include "sidecar_read.h"

#define MAX_INLINE 64

struct addr_entry {
	uint64_t offset;
	struct vt_frame_names names;
	struct vt_symbol *syms;
	UT_hash_handle hh;
};

/* One address range of one compile unit (the fallback index, below). */
struct cu_range {
	Dwarf_Addr lo, hi; /* module addresses */
	Dwarf_Addr bias;
	Dwarf_Die cu;
};

/* A compile unit's scope index (dwarf_scopes.h), built on its first
 * address. */
struct cu_scopes {
	Dwarf_Off cu_offset;
	struct vt_scope_index *index;
	UT_hash_handle hh;
};

struct mod_cache {
	char *key;
	unsigned keylen;
	UT_hash_handle hh;
	int tried_file;
	enum vt_sym_status file_status; /* VT_SYM_OK once the file is usable */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct cu_range *cu_ranges;    /* built when the file has no aranges */
	size_t ncu_ranges;
	int cu_ranges_built;
	struct cu_scopes *cu_scopes;
	struct vt_symtab_index *symtab; /* built on the first symbol-table answer */
	struct addr_entry *addrs;      /* answers of vt_symbolize */
	struct addr_entry *file_addrs; /* answers of vt_symbolize_from_file */
};

struct vt_symbolizer {
	unsigned flags;
	struct vt_sidecar *sidecar;
	struct mod_cache *mods;
};

static char *xstrdup(const char *s)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d) {
		vt_nomem();
	}
	return d;
}

const char *vt_path_basename(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	return slash ? slash + 1 : path ? path : "";
}

const char *vt_sym_status_str(enum vt_sym_status status)
{
	switch (status) {
	case VT_SYM_OK: return "named";
	case VT_SYM_NO_MODULE: return "in no recorded module";
	case VT_SYM_NO_FILE: return "module file not found and not in the sidecar";
	case VT_SYM_BUILD_ID_MISMATCH: return "module file is a different build";
	case VT_SYM_NO_SYMBOL: return "no symbol covers the address";
	}
	return "unknown";
}

/* ---- C++ names: demangled when libstdc++ is around (optional) ----------- */

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static demangle_fn demangler(void)
{
	static int tried;
	static demangle_fn fn;
	if (!tried) {
		tried = 1;
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		if (h)
			fn = (demangle_fn)dlsym(h, "__cxa_demangle");
	}
	return fn;
}

/* A malloc'd readable name. */
static char *readable_name(const char *name)
{
	if (!name)
		return xstrdup("??");
	if (name[0] == '_' && name[1] == 'Z' && demangler()) {
		int status = -1;
		char *d = demangler()(name, NULL, NULL, &status);
		if (d && status == 0)
			return d;
		free(d);
	}
	return xstrdup(name);
}

/* ---- the module cache ------------------------------------------------------- */

static struct mod_cache *module_cache(struct vt_symbolizer *sym, const struct vt_module_info *mod)
{
	size_t plen = strlen(mod->path);
	unsigned keylen = (unsigned)(mod->build_id_len + 1 + plen);
	char *key = vt_xcalloc(1, keylen);
	memcpy(key, mod->build_id, mod->build_id_len);
	memcpy(key + mod->build_id_len + 1, mod->path, plen);
	struct mod_cache *mc = NULL;
	HASH_FIND(hh, sym->mods, key, keylen, mc);
	if (mc) {
		free(key);
		return mc;
	}
	mc = vt_xcalloc(1, sizeof *mc);
	mc->key = key;
	mc->keylen = keylen;
	HASH_ADD_KEYPTR(hh, sym->mods, mc->key, mc->keylen, mc);
	return mc;
}

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Report the file at bias 0, so an address is the module offset. */
static void open_module_file(struct mod_cache *mc, const struct vt_module_info *mod)
{
	mc->tried_file = 1;
	mc->file_status = VT_SYM_NO_FILE;
	if (!mod->path[0] || mod->path[0] != '/')
		return; /* [vdso] and friends: nothing on disk */
	/* the path comes from a log, which may lie: only a regular file is
	 * read (a FIFO or a device would block or never end) */
	int fd = open(mod->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	mc->dwfl = dwfl_begin(&offline_callbacks);
	if (!mc->dwfl) {
		close(fd);
		return;
	}
	dwfl_report_begin(mc->dwfl);
	mc->mod = dwfl_report_elf(mc->dwfl, vt_path_basename(mod->path), mod->path, fd, 0, false);
	dwfl_report_end(mc->dwfl, NULL, NULL);
	if (!mc->mod) {
		close(fd); /* consumed only on success */
		return;
	}
	const unsigned char *bits = NULL;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mc->mod, &bits, &vaddr);
	if (mod->build_id_len &&
	    (len != mod->build_id_len || memcmp(bits, mod->build_id, (size_t)len) != 0)) {
		mc->file_status = VT_SYM_BUILD_ID_MISMATCH;
		return;
	}
	mc->file_status = VT_SYM_OK;
}

/* ---- one address from the file -------------------------------------------- */

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	return n;
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *inl)
{
	Dwarf_Attribute attr;
	Dwarf_Word idx;
	Dwarf_Files *files;
	size_t nfiles;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &idx) != 0 ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static uint32_t call_line(Dwarf_Die *inl)
{
	Dwarf_Attribute attr;
	Dwarf_Word line;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &line) != 0)
		return 0;
	return (uint32_t)line;
}

/* cu_range by start address. */
static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every CU's address ranges, sorted: for files without .debug_aranges
 * (clang does not emit them), where dwfl_module_addrdie finds nothing. */
static void build_cu_ranges(struct mod_cache *mc)
{
	mc->cu_ranges_built = 1;
	size_t n = 0, cap = 0;
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias;
	while ((cu = dwfl_module_nextcu(mc->mod, cu, &bias)) != NULL) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0) {
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				struct cu_range *r = realloc(mc->cu_ranges, cap * sizeof *r);
				if (!r) {
					vt_nomem();
				}
				mc->cu_ranges = r;
			}
			mc->cu_ranges[n++] = (struct cu_range){lo + bias, hi + bias, bias, *cu};
		}
	}
	if (n) /* qsort(NULL, 0) is undefined (UBSan, on Python traces' modules) */
		qsort(mc->cu_ranges, n, sizeof *mc->cu_ranges, cmp_range);
	mc->ncu_ranges = n;
}

/* The compile unit covering addr, and its bias. */
static Dwarf_Die *find_cu(struct mod_cache *mc, Dwarf_Addr addr, Dwarf_Addr *bias)
{
	Dwarf_Die *cu = dwfl_module_addrdie(mc->mod, addr, bias);
	if (cu)
		return cu;
	if (!mc->cu_ranges_built)
		build_cu_ranges(mc);
	size_t lo = 0, hi = mc->ncu_ranges;
	while (lo < hi) { /* last range starting at or below addr */
		size_t mid = lo + (hi - lo) / 2;
		if (mc->cu_ranges[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && i + 8 >= lo;) /* nested ranges: look back a little */
		if (mc->cu_ranges[i].lo <= addr && addr < mc->cu_ranges[i].hi) {
			*bias = mc->cu_ranges[i].bias;
			return &mc->cu_ranges[i].cu;
		}
	return NULL;
}

static const struct vt_scope_index *scopes_of(struct mod_cache *mc, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct cu_scopes *c = NULL;
	HASH_FIND(hh, mc->cu_scopes, &off, sizeof off, c);
	if (!c) {
		c = vt_xcalloc(1, sizeof *c);
		c->cu_offset = off;
		c->index = vt_scope_index_build(cu);
		HASH_ADD(hh, mc->cu_scopes, cu_offset, sizeof c->cu_offset, c);
	}
	return c->index;
}

/* The inline chain at addr: the deepest inlined function first, each at the
 * line it is executing, ending with the real (out-of-line) function: the
 * concrete inlined-subroutine DIEs holding addr and the subprogram they sit
 * in (what dwarf_getscopes_die gives, the eu-addr2line -i way), from the
 * unit's scope index. */
static size_t inline_chain(struct mod_cache *mc, Dwarf_Die *cu, Dwarf_Addr bias, Dwarf_Addr addr,
                           const char *file, uint32_t line, struct vt_symbol *out, size_t max)
{
	if (!cu)
		return 0;
	Dwarf_Die scopes[MAX_INLINE];
	size_t nscopes = vt_scope_chain(scopes_of(mc, cu), addr - bias, scopes,
	                                max < MAX_INLINE ? max : MAX_INLINE);
	for (size_t i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);
		out[i].function = readable_name(die_name(&scopes[i]));
		out[i].file = xstrdup(file);
		out[i].line = line;
		out[i].inlined = tag == DW_TAG_inlined_subroutine;
		/* where it was inlined: a line of the next outer function */
		file = call_file(cu, &scopes[i]);
		line = call_line(&scopes[i]);
	}
	return nscopes;
}

static void resolve_in_file(struct mod_cache *mc, uint64_t offset, struct addr_entry *e)
{
	struct vt_symbol syms[MAX_INLINE];
	Dwarf_Addr addr = offset, bias = 0;
	const char *file = NULL;
	int line = 0;
	Dwarf_Die *cu = find_cu(mc, addr, &bias);
	Dwarf_Line *dl = cu ? dwarf_getsrc_die(cu, addr - bias) : NULL;
	if (dl) {
		file = dwarf_linesrc(dl, NULL, NULL);
		dwarf_lineno(dl, &line);
	}
	size_t n =
	    inline_chain(mc, cu, bias, addr, file, line > 0 ? (uint32_t)line : 0, syms, MAX_INLINE);
	const char *source = "dwarf";
	if (n == 0) {
		if (!mc->symtab)
			mc->symtab = vt_symtab_index_build(mc->mod);
		const char *name = vt_symtab_name_at(mc->symtab, mc->mod, addr);
		if (!name) {
			e->names.status = VT_SYM_NO_SYMBOL;
			return;
		}
		syms[0] = (struct vt_symbol){readable_name(name), xstrdup(file),
					     line > 0 ? (uint32_t)line : 0, 0};
		n = 1;
		source = file ? "dwarf" : "symtab";
	}
	e->syms = vt_xcalloc(n, sizeof *e->syms);
	memcpy(e->syms, syms, n * sizeof *e->syms);
	e->names = (struct vt_frame_names){VT_SYM_OK, source, n, e->syms};
}

static struct addr_entry *new_entry(uint64_t offset)
{
	struct addr_entry *e = vt_xcalloc(1, sizeof *e);
	e->offset = offset;
	return e;
}

enum vt_sym_status vt_symbolize_from_file(struct vt_symbolizer *sym,
					  const struct vt_module_info *mod, uint64_t offset,
					  struct vt_frame_names *out)
{
	memset(out, 0, sizeof *out);
	if (!mod)
		return out->status = VT_SYM_NO_MODULE;
	struct mod_cache *mc = module_cache(sym, mod);
	struct addr_entry *e = NULL;
	HASH_FIND(hh, mc->file_addrs, &offset, sizeof offset, e);
	if (!e) {
		if (!mc->tried_file && !(sym->flags & VT_SYM_NO_FILES))
			open_module_file(mc, mod);
		e = new_entry(offset);
		if (mc->tried_file && mc->file_status == VT_SYM_OK)
			resolve_in_file(mc, offset, e);
		else
			e->names.status = mc->tried_file ? mc->file_status : VT_SYM_NO_FILE;
		HASH_ADD(hh, mc->file_addrs, offset, sizeof e->offset, e);
	}
	*out = e->names;
	return out->status;
}

enum vt_sym_status vt_symbolize(struct vt_symbolizer *sym, const struct vt_module_info *mod,
				uint64_t offset, struct vt_frame_names *out)
{
	memset(out, 0, sizeof *out);
	if (!mod)
		return out->status = VT_SYM_NO_MODULE;
	struct mod_cache *mc = module_cache(sym, mod);
	struct addr_entry *e = NULL;
	HASH_FIND(hh, mc->addrs, &offset, sizeof offset, e);
	if (e) {
		*out = e->names;
		return out->status;
	}
	struct vt_frame_names names;
	if (!sym->sidecar || vt_sidecar_lookup(sym->sidecar, mod, offset, &names) != 0)
		vt_symbolize_from_file(sym, mod, offset, &names);
	/* the answer's strings belong to the sidecar or the file cache, both
	 * alive until close: the entry only points at them */
	e = new_entry(offset);
	e->names = names;
	HASH_ADD(hh, mc->addrs, offset, sizeof e->offset, e);
	*out = names;
	return out->status;
}

enum vt_sym_status vt_symbolize_frame(struct vt_symbolizer *sym, const struct vt_stack_store *st,
				      const struct vt_frame *f, struct vt_frame_names *out)
{
	return vt_symbolize(sym, vt_stack_store_module(st, f->module), f->offset, out);
}

/* ---- text ------------------------------------------------------------------ */

int vt_format_symbol(const struct vt_symbol *s, char *buf, size_t len)
{
	if (s->file && s->line)
		return snprintf(buf, len, "%s (%s:%u)", s->function, vt_path_basename(s->file),
				s->line);
	if (s->file)
		return snprintf(buf, len, "%s (%s)", s->function, vt_path_basename(s->file));
	return snprintf(buf, len, "%s", s->function);
}

int vt_format_frame(const struct vt_frame_names *n, const struct vt_stack_store *st,
		    const struct vt_frame *f, char *buf, size_t len)
{
	const struct vt_module_info *mod = vt_stack_store_module(st, f->module);
	if (n->status == VT_SYM_OK && n->n > 0) {
		const struct vt_symbol *s = &n->sym[0];
		if (s->file && s->line)
			return vt_format_symbol(s, buf, len);
		return snprintf(buf, len, "%s (%s)", s->function,
				mod ? vt_path_basename(mod->path) : "?");
	}
	if (!mod)
		return snprintf(buf, len, "0x%llx (?)", (unsigned long long)f->addr);
	return snprintf(buf, len, "0x%llx (%s+0x%llx)", (unsigned long long)f->addr,
			vt_path_basename(mod->path), (unsigned long long)f->offset);
}

/* ---- lifetime ---------------------------------------------------------------- */

struct vt_symbolizer *vt_symbolizer_open(const char *trace_dir, unsigned flags)
{
	struct vt_symbolizer *sym = vt_xcalloc(1, sizeof *sym);
	sym->flags = flags;
	if (trace_dir && !(flags & VT_SYM_NO_SIDECAR)) {
		char path[4096], err[512];
		snprintf(path, sizeof path, "%s/%s", trace_dir, VT_SIDECAR_NAME);
		sym->sidecar = vt_sidecar_load(path, err, sizeof err);
		if (!sym->sidecar && err[0])
			fprintf(stderr, "vramtrace: %s\n", err);
	}
	return sym;
}

static void free_entries(struct addr_entry **head, int owns_strings)
{
	struct addr_entry *e, *t;
	HASH_ITER(hh, *head, e, t) {
		HASH_DEL(*head, e);
		if (owns_strings && e->syms) {
			for (size_t i = 0; i < e->names.n; i++) {
				free((char *)e->syms[i].function);
				free((char *)e->syms[i].file);
			}
		}
		free(e->syms);
		free(e);
	}
}

static void free_cu_scopes(struct cu_scopes **head)
{
	struct cu_scopes *c, *t;
	HASH_ITER(hh, *head, c, t)
	{
		HASH_DEL(*head, c);
		vt_scope_index_free(c->index);
		free(c);
	}
}

void vt_symbolizer_close(struct vt_symbolizer *sym)
{
	if (!sym)
		return;
	struct mod_cache *mc, *t;
	HASH_ITER(hh, sym->mods, mc, t) {
		HASH_DEL(sym->mods, mc);
		free_entries(&mc->addrs, 0);
		free_entries(&mc->file_addrs, 1);
		free(mc->cu_ranges);
		free_cu_scopes(&mc->cu_scopes);
		vt_symtab_index_free(mc->symtab);
		if (mc->dwfl)
			dwfl_end(mc->dwfl);
		free(mc->key);
		free(mc);
	}
	vt_sidecar_free(sym->sidecar);
	free(sym);
}
