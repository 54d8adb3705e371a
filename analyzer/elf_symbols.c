/* A module's ELF symbol table by address (elf_symbols.h). */
#include "elf_symbols.h"

#include <elf.h>
#include <stdint.h>
#include <stdlib.h>

#include "nomem.h"

/* Symbols an answer may be looked for behind the last one starting at or
 * below the address (each still reaching past it); beyond that, dwfl. */
#define MAX_SCAN 64

struct sized {
	GElf_Addr lo, hi;
	const char *name; /* dwfl's string: lives as long as the module */
	uint32_t index;   /* in the table: dwfl keeps the first of equals */
	uint8_t global;   /* in dwfl's first pass (index >= first global) */
	uint8_t binding;  /* dwfl's preference: global 3, weak 2, local 1 */
};

struct vt_symtab_index {
	struct sized *syms; /* sized symbols by lo */
	GElf_Addr *reach;   /* reach[i]: the greatest hi of syms[0..i] */
	size_t n;
	GElf_Addr *label; /* sizeless symbols searched in dwfl's first pass, sorted */
	size_t nlabel;
	GElf_Addr *any_label; /* every sizeless symbol dwfl searches, sorted */
	size_t nany_label;
	GElf_Addr *abs_label; /* of those, the absolute ones: they match only */
	size_t nabs_label;    /* an address equal to their value */
	int usable;           /* 0: every address goes to dwfl */
	/* counters, not part of the answer: mutable through a const index */
	unsigned long *own, *asked;
	unsigned long counts[2];
};

static int cmp_sized(const void *a, const void *b)
{
	const struct sized *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_addr(const void *a, const void *b)
{
	GElf_Addr x = *(const GElf_Addr *)a, y = *(const GElf_Addr *)b;
	return x < y ? -1 : x > y;
}

/* The symbols dwfl's search considers at all. */
static int searched(const char *name, const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);
	return name && name[0] && sym->st_shndx != SHN_UNDEF && type != STT_SECTION &&
	       type != STT_FILE && type != STT_TLS;
}

static uint8_t binding_rank(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		vt_nomem();
	return p;
}

/* Function descriptors (ppc64 ELFv1) make dwfl match a symbol at two
 * values, and with a load bias its search compares st_value where
 * getsym_info gives the moved address: such modules are left to dwfl (the
 * symbolizer reports every file at its own addresses: bias 0). */
static int plain_module(Dwfl_Module *mod)
{
	GElf_Addr bias = 1;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	GElf_Ehdr eh;
	return elf && bias == 0 && gelf_getehdr(elf, &eh) && eh.e_machine != EM_PPC64;
}

/* One symbol dwfl searches: a sized one into syms, a label (no size) into
 * the label lists. */
static void add_symbol(struct vt_symtab_index *ix, int i, int global, const char *name,
                       const GElf_Sym *sym, GElf_Addr value)
{
	if (sym->st_size) {
		/* a size past the end of the address space (a damaged table)
		 * ends there: dwfl's "addr - value < size" does not wrap */
		GElf_Addr end = value + sym->st_size < value ? UINT64_MAX : value + sym->st_size;
		ix->syms[ix->n++] = (struct sized){.lo = value,
		                                   .hi = end,
		                                   .name = name,
		                                   .index = (uint32_t)i,
		                                   .global = (uint8_t)global,
		                                   .binding = binding_rank(sym)};
		return;
	}
	if (sym->st_shndx >= SHN_LORESERVE)
		ix->abs_label[ix->nabs_label++] = value;
	else
		ix->any_label[ix->nany_label++] = value;
	if (global)
		ix->label[ix->nlabel++] = value;
}

/* Sort what add_symbol gathered; each sized symbol's reach. */
static void sort_index(struct vt_symtab_index *ix)
{
	if (ix->n)
		qsort(ix->syms, ix->n, sizeof *ix->syms, cmp_sized);
	if (ix->nlabel)
		qsort(ix->label, ix->nlabel, sizeof *ix->label, cmp_addr);
	if (ix->nany_label)
		qsort(ix->any_label, ix->nany_label, sizeof *ix->any_label, cmp_addr);
	if (ix->nabs_label)
		qsort(ix->abs_label, ix->nabs_label, sizeof *ix->abs_label, cmp_addr);
	ix->reach = xcalloc(ix->n, sizeof *ix->reach);
	for (size_t i = 0; i < ix->n; i++)
		ix->reach[i] =
		    i && ix->reach[i - 1] > ix->syms[i].hi ? ix->reach[i - 1] : ix->syms[i].hi;
}

struct vt_symtab_index *vt_symtab_index_build(Dwfl_Module *mod)
{
	struct vt_symtab_index *ix = xcalloc(1, sizeof *ix);
	ix->own = &ix->counts[0];
	ix->asked = &ix->counts[1];
	int n = dwfl_module_getsymtab(mod);
	int first_global = dwfl_module_getsymtab_first_global(mod);
	if (n <= 1 || first_global < 0 || !plain_module(mod))
		return ix;
	ix->syms = xcalloc((size_t)n, sizeof *ix->syms);
	ix->label = xcalloc((size_t)n, sizeof *ix->label);
	ix->any_label = xcalloc((size_t)n, sizeof *ix->any_label);
	ix->abs_label = xcalloc((size_t)n, sizeof *ix->abs_label);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr value;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, NULL, NULL, NULL);
		/* dwfl's first pass: the globals, or all when only the dynamic
		 * table was found (first_global 0) */
		if (searched(name, &sym))
			add_symbol(ix, i, first_global == 0 || i >= first_global, name, &sym,
			           value);
	}
	sort_index(ix);
	ix->usable = 1;
	return ix;
}

void vt_symtab_index_free(struct vt_symtab_index *ix)
{
	if (!ix)
		return;
	free(ix->syms);
	free(ix->reach);
	free(ix->label);
	free(ix->any_label);
	free(ix->abs_label);
	free(ix);
}

static int label_at(const struct vt_symtab_index *ix, GElf_Addr addr)
{
	return ix->nlabel && bsearch(&addr, ix->label, ix->nlabel, sizeof *ix->label, cmp_addr);
}

/* Is there a sizeless symbol dwfl could fall back on for an address `to`,
 * at or above `from`? An absolute one only at `to` itself. */
static int label_within(const struct vt_symtab_index *ix, GElf_Addr from, GElf_Addr to)
{
	if (ix->nabs_label &&
	    bsearch(&to, ix->abs_label, ix->nabs_label, sizeof *ix->abs_label, cmp_addr))
		return 1;
	size_t lo = 0, hi = ix->nany_label;
	while (lo < hi) { /* the first label at or above from */
		size_t mid = lo + (hi - lo) / 2;
		if (ix->any_label[mid] < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ix->nany_label && ix->any_label[lo] <= to;
}

enum holders { NONE, ONE, UNSURE };

/* Is a better than b, as dwfl chooses among symbols with the same start
 * and size? Its first pass (globals) before its second, then the stronger
 * binding, then the first in the table. */
static int better(const struct sized *a, const struct sized *b)
{
	if (a->global != b->global)
		return a->global;
	if (a->binding != b->binding)
		return a->binding > b->binding;
	return a->index < b->index;
}

/* How many sized symbols hold addr: none, exactly one (*one: aliases of
 * one range count as one, the one dwfl would name), or more or too many
 * to look through. *reach: the greatest end of the sized symbols
 * starting at or below addr (where dwfl's fallback labels must start). */
static enum holders holders_of(const struct vt_symtab_index *ix, GElf_Addr addr,
                               const struct sized **one, GElf_Addr *reach)
{
	size_t lo = 0, hi = ix->n;
	while (lo < hi) { /* the last symbol starting at or below addr */
		size_t mid = lo + (hi - lo) / 2;
		if (ix->syms[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	*reach = lo ? ix->reach[lo - 1] : 0;
	*one = NULL;
	unsigned looked = 0;
	for (size_t i = lo; i-- > 0 && ix->reach[i] > addr;) {
		if (++looked > MAX_SCAN)
			return UNSURE;
		const struct sized *s = &ix->syms[i];
		if (s->hi <= addr)
			continue;
		if (*one && (s->lo != (*one)->lo || s->hi != (*one)->hi))
			return UNSURE; /* nested or overlapping: dwfl's order decides */
		if (!*one || better(s, *one))
			*one = s;
	}
	return *one ? ONE : NONE;
}

const char *vt_symtab_name_at(const struct vt_symtab_index *ix, Dwfl_Module *mod, GElf_Addr addr)
{
	const struct sized *s = NULL;
	GElf_Addr reach = 0;
	enum holders h = ix->usable ? holders_of(ix, addr, &s, &reach) : UNSURE;
	/* dwfl takes a global holding addr in its first pass; a local only
	 * when that pass found nothing, and it skips the locals when a
	 * global label (sizeless) sits exactly at addr */
	if (h == ONE && (s->global || !label_at(ix, addr))) {
		(*ix->own)++;
		return s->name;
	}
	/* nothing holds addr, and no label lies where dwfl's fallback would
	 * take one (at or above the end of every sized symbol below addr) */
	if (h == NONE && !label_within(ix, reach, addr)) {
		(*ix->own)++;
		return NULL;
	}
	(*ix->asked)++;
	GElf_Off off;
	GElf_Sym sym;
	return dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
}

void vt_symtab_index_stats(const struct vt_symtab_index *ix, unsigned long *own,
                           unsigned long *asked)
{
	*own = ix->counts[0];
	*asked = ix->counts[1];
}
