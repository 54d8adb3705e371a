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

/* A symbol without a size (an assembly label): dwfl's fallback when no
 * sized symbol holds an address. */
struct label {
	GElf_Addr value;
	const char *name;
	uint32_t index;
	uint8_t global;
	uint8_t absolute; /* SHN_ABS and friends: they match only their value */
};

/* An allocated section, as dwfl's section lookup sees it (derelocate.c):
 * [start, end], the end inside unless the next section starts there. */
struct section {
	GElf_Addr start, end;
	size_t ndx;
};

struct vt_symtab_index {
	struct sized *syms; /* sized symbols by lo */
	GElf_Addr *reach;   /* reach[i]: the greatest hi of syms[0..i] */
	GElf_Addr *reach_g; /* the same over the first pass's symbols only */
	size_t n;
	struct label *labels; /* by value, then table index */
	size_t nlabels;
	struct section *sections; /* by start */
	size_t nsections;
	int first_global;
	int usable;               /* 0: every address goes to dwfl */
	unsigned long own, asked; /* addresses answered here, asked of dwfl */
};

static int cmp_sized(const void *a, const void *b)
{
	const struct sized *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_label(const void *a, const void *b)
{
	const struct label *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* By start only, as dwfl sorts them: glibc's qsort then leaves sections of
 * one start in the same (table) order for both. */
static int cmp_section(const void *a, const void *b)
{
	const struct section *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
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
 * labels. shndx: its section, SHN_XINDEX resolved. */
static void add_symbol(struct vt_symtab_index *ix, int i, int global, const char *name,
                       const GElf_Sym *sym, GElf_Addr value, GElf_Word shndx)
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
	ix->labels[ix->nlabels++] = (struct label){.value = value,
	                                           .name = name,
	                                           .index = (uint32_t)i,
	                                           .global = (uint8_t)global,
	                                           .absolute = shndx >= SHN_LORESERVE};
}

/* The allocated sections of the module's file (bias 0: addresses are the
 * file's own). */
static void add_sections(struct vt_symtab_index *ix, Elf *elf)
{
	size_t count = 0;
	if (elf_getshdrnum(elf, &count) != 0)
		return;
	ix->sections = vt_xcalloc(count, sizeof *ix->sections);
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || ix->nsections == count)
			continue;
		ix->sections[ix->nsections++] =
		    (struct section){sh.sh_addr, sh.sh_addr + sh.sh_size, elf_ndxscn(scn)};
	}
	if (ix->nsections)
		qsort(ix->sections, ix->nsections, sizeof *ix->sections, cmp_section);
}

/* Sort what add_symbol gathered; each sized symbol's reach. */
static void sort_index(struct vt_symtab_index *ix)
{
	if (ix->n)
		qsort(ix->syms, ix->n, sizeof *ix->syms, cmp_sized);
	if (ix->nlabels)
		qsort(ix->labels, ix->nlabels, sizeof *ix->labels, cmp_label);
	ix->reach = vt_xcalloc(ix->n, sizeof *ix->reach);
	ix->reach_g = vt_xcalloc(ix->n, sizeof *ix->reach_g);
	for (size_t i = 0; i < ix->n; i++) {
		GElf_Addr hi = ix->syms[i].hi, before = i ? ix->reach[i - 1] : 0,
		          before_g = i ? ix->reach_g[i - 1] : 0;
		ix->reach[i] = before > hi ? before : hi;
		ix->reach_g[i] = ix->syms[i].global && hi > before_g ? hi : before_g;
	}
}

struct vt_symtab_index *vt_symtab_index_build(Dwfl_Module *mod)
{
	struct vt_symtab_index *ix = vt_xcalloc(1, sizeof *ix);
	int n = dwfl_module_getsymtab(mod);
	int first_global = dwfl_module_getsymtab_first_global(mod);
	if (n <= 1 || first_global < 0 || !plain_module(mod))
		return ix;
	ix->first_global = first_global;
	ix->syms = vt_xcalloc((size_t)n, sizeof *ix->syms);
	ix->labels = vt_xcalloc((size_t)n, sizeof *ix->labels);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr value;
		GElf_Word shndx = SHN_UNDEF;
		const char *name =
		    dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, NULL, NULL);
		/* dwfl's first pass: the globals, or all when only the dynamic
		 * table was found (first_global 0) */
		if (searched(name, &sym))
			add_symbol(ix, i, first_global == 0 || i >= first_global, name, &sym, value,
			           shndx);
	}
	sort_index(ix);
	GElf_Addr bias;
	add_sections(ix, dwfl_module_getelf(mod, &bias));
	ix->usable = 1;
	return ix;
}

void vt_symtab_index_free(struct vt_symtab_index *ix)
{
	if (!ix)
		return;
	free(ix->syms);
	free(ix->reach);
	free(ix->reach_g);
	free(ix->labels);
	free(ix->sections);
	free(ix);
}

/* The first label at or above value (nlabels if none). */
static size_t first_label_from(const struct vt_symtab_index *ix, GElf_Addr value)
{
	size_t lo = 0, hi = ix->nlabels;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix->labels[mid].value < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Is a first-pass label at addr? Then dwfl does not search the locals. */
static int global_label_at(const struct vt_symtab_index *ix, GElf_Addr addr)
{
	for (size_t i = first_label_from(ix, addr); i < ix->nlabels && ix->labels[i].value == addr;
	     i++)
		if (ix->labels[i].global)
			return 1;
	return 0;
}

/* dwfl's section lookup: the index of the allocated section holding addr
 * (its end counted in unless the next one starts there), SHN_UNDEF none. */
static size_t section_of(const struct vt_symtab_index *ix, GElf_Addr addr)
{
	size_t l = 0, u = ix->nsections;
	while (l < u) {
		size_t i = (l + u) / 2;
		const struct section *s = &ix->sections[i];
		if (addr < s->start)
			u = i;
		else if (addr > s->end)
			l = i + 1;
		else if (addr == s->end && i + 1 < ix->nsections &&
		         addr == ix->sections[i + 1].start)
			return ix->sections[i + 1].ndx;
		else
			return s->ndx;
	}
	return SHN_UNDEF;
}

/* May dwfl fall back on label l for addr? An absolute one only at its own
 * value; any other when its value lies in addr's section. */
static int label_fits(const struct vt_symtab_index *ix, const struct label *l, GElf_Addr addr)
{
	return l->absolute ? l->value == addr : section_of(ix, l->value) == section_of(ix, addr);
}

/* Does dwfl examine a after b? Its first pass (the globals) before the
 * second, each in table order. */
static int examined_later(const struct label *a, const struct label *b)
{
	if (a->global != b->global)
		return !a->global;
	return a->index > b->index;
}

/* dwfl's answer where no sized symbol holds addr: a label, or none.
 * dwfl examines the first pass's symbols at or below addr, and the
 * locals too unless a first-pass label sits at addr. A label must end up
 * at or above every examined symbol's end and every examined label (its
 * final check), so only the greatest examined label value can be named,
 * and only when no sized symbol reaches past it; of the labels there, the
 * last examined that lies in addr's section. nsized: the sized symbols
 * starting at or below addr. Returns 1 with *name (NULL: no name), or 0
 * when there were too many labels to look through. */
static int label_answer(const struct vt_symtab_index *ix, GElf_Addr addr, size_t nsized,
                        const char **name)
{
	int locals = ix->first_global > 1 && !global_label_at(ix, addr);
	GElf_Addr reach = !nsized ? 0 : locals ? ix->reach[nsized - 1] : ix->reach_g[nsized - 1];
	size_t i = first_label_from(ix, addr);
	while (i < ix->nlabels && ix->labels[i].value == addr)
		i++; /* labels[0..i) lie at or below addr */
	unsigned looked = 0;
	while (i > 0 && !(locals || ix->labels[i - 1].global))
		if (i--, ++looked > MAX_SCAN)
			return 0;
	*name = NULL;
	if (i == 0 || ix->labels[i - 1].value < reach)
		return 1;
	GElf_Addr top = ix->labels[i - 1].value;
	const struct label *best = NULL;
	for (; i > 0 && ix->labels[i - 1].value == top; i--) {
		const struct label *l = &ix->labels[i - 1];
		if (++looked > MAX_SCAN)
			return 0;
		if ((locals || l->global) && label_fits(ix, l, addr) &&
		    (!best || examined_later(l, best)))
			best = l;
	}
	*name = best ? best->name : NULL;
	return 1;
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
 * to look through. *nsized: how many start at or below addr. */
static enum holders holders_of(const struct vt_symtab_index *ix, GElf_Addr addr,
                               const struct sized **one, size_t *nsized)
{
	size_t lo = 0, hi = ix->n;
	while (lo < hi) { /* the last symbol starting at or below addr */
		size_t mid = lo + (hi - lo) / 2;
		if (ix->syms[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	*nsized = lo;
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

const char *vt_symtab_name_at(struct vt_symtab_index *ix, Dwfl_Module *mod, GElf_Addr addr)
{
	const struct sized *s = NULL;
	size_t nsized = 0;
	const char *name;
	enum holders h = ix->usable ? holders_of(ix, addr, &s, &nsized) : UNSURE;
	/* dwfl takes a global holding addr in its first pass; a local only
	 * when that pass found nothing, and it skips the locals when a
	 * first-pass label sits exactly at addr */
	if (h == ONE && (s->global || !global_label_at(ix, addr))) {
		ix->own++;
		return s->name;
	}
	if (h == NONE && label_answer(ix, addr, nsized, &name)) {
		ix->own++;
		return name;
	}
	ix->asked++;
	GElf_Off off;
	GElf_Sym sym;
	return dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
}

void vt_symtab_index_stats(const struct vt_symtab_index *ix, unsigned long *own,
                           unsigned long *asked)
{
	*own = ix->own;
	*asked = ix->asked;
}
