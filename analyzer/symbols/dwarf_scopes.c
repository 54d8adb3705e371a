/* Function scopes of a compile unit by address (dwarf_scopes.h). */
#include "dwarf_scopes.h"

#include <dwarf.h>
#include <stdint.h>
#include <stdlib.h>

#include "nomem.h"

/* DIE nesting deeper than this is not followed (a damaged or hostile file
 * must not exhaust the stack; real code nests a few dozen deep). */
#define MAX_NESTING 256
/* Imported units followed from one compile unit: each once (a unit that
 * imports itself, or two that import each other, would otherwise be walked
 * again at every level: exponential work on a hostile file). */
#define MAX_IMPORTS 4096

struct scope {
	Dwarf_Die die;
	int32_t parent; /* the enclosing scope in the DIE tree, -1 at the top */
	int tag;
};

struct range {
	Dwarf_Addr lo, hi;
	uint32_t scope;
	uint32_t depth;
	int32_t parent; /* the innermost range holding this one, -1 none */
};

struct vt_scope_index {
	struct scope *scopes;
	size_t nscopes, cap_scopes;
	struct range *ranges; /* by lo, then the outer first */
	size_t nranges, cap_ranges;
	Dwarf_Off *imported; /* units already walked */
	size_t nimported, cap_imported;
};

/* The tags that can hold code-bearing DIEs (libdw's own choice for
 * dwarf_getscopes, so that both find the same scopes). */
static int may_hold_scopes(int tag)
{
	switch (tag) {
	case DW_TAG_compile_unit:
	case DW_TAG_partial_unit:
	case DW_TAG_module:
	case DW_TAG_lexical_block:
	case DW_TAG_with_stmt:
	case DW_TAG_catch_block:
	case DW_TAG_try_block:
	case DW_TAG_entry_point:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_subprogram:
	case DW_TAG_namespace:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
		return 1;
	default:
		return 0;
	}
}

/* A subprogram or inlined subroutine: a scope, with each of its address
 * ranges; returns its index, or parent when it covers no code (an abstract
 * instance, a declaration). */
static int32_t add_scope(struct vt_scope_index *ix, Dwarf_Die *die, int tag, int32_t parent,
                         uint32_t depth)
{
	int32_t self = (int32_t)ix->nscopes;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	size_t before = ix->nranges;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		ix->ranges =
		    vt_xgrow(ix->ranges, &ix->cap_ranges, ix->nranges + 1, sizeof *ix->ranges);
		ix->ranges[ix->nranges++] = (struct range){lo, hi, (uint32_t)self, depth, -1};
	}
	if (ix->nranges == before)
		return parent;
	ix->scopes = vt_xgrow(ix->scopes, &ix->cap_scopes, ix->nscopes + 1, sizeof *ix->scopes);
	ix->scopes[ix->nscopes++] = (struct scope){*die, parent, tag};
	return self;
}

static void walk(struct vt_scope_index *ix, Dwarf_Die *die, int32_t parent, uint32_t depth);

/* The first import of a unit is walked; later ones, and any past
 * MAX_IMPORTS, are not. */
static void walk_import(struct vt_scope_index *ix, Dwarf_Die *import, int32_t parent,
                        uint32_t depth)
{
	Dwarf_Attribute attr;
	Dwarf_Die unit;
	if (!dwarf_formref_die(dwarf_attr(import, DW_AT_import, &attr), &unit))
		return;
	Dwarf_Off off = dwarf_dieoffset(&unit);
	for (size_t i = 0; i < ix->nimported; i++)
		if (ix->imported[i] == off)
			return;
	if (ix->nimported == MAX_IMPORTS)
		return;
	ix->imported =
	    vt_xgrow(ix->imported, &ix->cap_imported, ix->nimported + 1, sizeof *ix->imported);
	ix->imported[ix->nimported++] = off;
	walk(ix, &unit, parent, depth + 1);
}

static void walk(struct vt_scope_index *ix, Dwarf_Die *die, int32_t parent, uint32_t depth)
{
	if (depth >= MAX_NESTING)
		return;
	Dwarf_Die child;
	if (dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_imported_unit) {
			walk_import(ix, &child, parent, depth);
			continue;
		}
		if (!may_hold_scopes(tag))
			continue;
		int32_t inner = parent;
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			inner = add_scope(ix, &child, tag, parent, depth);
		if (dwarf_haschildren(&child) > 0)
			walk(ix, &child, inner, depth + 1);
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1; /* the outer first */
	return (x->depth > y->depth) - (x->depth < y->depth);
}

/* Each range's innermost holder: ranges nest (a function holds the calls
 * inlined into it), so one sweep with a stack of the open ones finds it. */
static void link_ranges(struct vt_scope_index *ix)
{
	int32_t *open = vt_xcalloc(ix->nranges, sizeof *open);
	size_t nopen = 0;
	for (size_t i = 0; i < ix->nranges; i++) {
		struct range *r = &ix->ranges[i];
		while (nopen && ix->ranges[open[nopen - 1]].hi <= r->lo)
			nopen--;
		r->parent = nopen ? open[nopen - 1] : -1;
		open[nopen++] = (int32_t)i;
	}
	free(open);
}

struct vt_scope_index *vt_scope_index_build(Dwarf_Die *cu)
{
	struct vt_scope_index *ix = vt_xcalloc(1, sizeof *ix);
	/* the unit itself counts as walked: an import of it adds nothing */
	ix->imported = vt_xgrow(ix->imported, &ix->cap_imported, 1, sizeof *ix->imported);
	ix->imported[ix->nimported++] = dwarf_dieoffset(cu);
	walk(ix, cu, -1, 0);
	if (ix->nranges) /* qsort(NULL, 0) is undefined */
		qsort(ix->ranges, ix->nranges, sizeof *ix->ranges, cmp_range);
	link_ranges(ix);
	free(ix->imported); /* needed while walking only */
	ix->imported = NULL;
	ix->nimported = ix->cap_imported = 0;
	return ix;
}

void vt_scope_index_free(struct vt_scope_index *ix)
{
	if (!ix)
		return;
	free(ix->scopes);
	free(ix->ranges);
	free(ix->imported);
	free(ix);
}

size_t vt_scope_index_count(const struct vt_scope_index *ix)
{
	return ix->nscopes;
}

size_t vt_scope_chain(const struct vt_scope_index *ix, Dwarf_Addr pc, Dwarf_Die *out, size_t max)
{
	size_t lo = 0, hi = ix->nranges;
	while (lo < hi) { /* the last range starting at or below pc */
		size_t mid = lo + (hi - lo) / 2;
		if (ix->ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the innermost range holding pc is that one or one of its holders:
	 * any range holding pc starts at or below the last one to, so holds it */
	int32_t r = (int32_t)lo - 1;
	while (r >= 0 && pc >= ix->ranges[r].hi)
		r = ix->ranges[r].parent;
	if (r < 0)
		return 0;
	size_t n = 0;
	for (int32_t s = (int32_t)ix->ranges[r].scope; s >= 0 && n < max;
	     s = ix->scopes[s].parent) {
		out[n++] = ix->scopes[s].die;
		if (ix->scopes[s].tag == DW_TAG_subprogram)
			break;
	}
	return n;
}
