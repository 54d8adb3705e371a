/* The function scopes of one compile unit, indexed by address: which
 * inlined call and which function an address of the unit's code is in.
 *
 * Why not dwarf_getscopes: it walks the unit's DIE tree from the top for
 * every address it is asked about (and dwarf_getscopes_die walks it again to
 * find the concrete callers of an inline), so naming the distinct addresses
 * of a big unit costs its whole tree each time: 240 us an address on this
 * project's own bench program, far more in a C++ library whose units hold
 * tens of thousands of DIEs. Here the tree is walked once per unit (the
 * tags dwarf_getscopes would descend into, imported units followed), every
 * subprogram and inlined-subroutine range is kept with the range that
 * encloses it, and a lookup is a binary search and a short climb.
 *
 * Addresses are the unit's own (module address minus the Dwfl bias). */
#ifndef VT_DWARF_SCOPES_H
#define VT_DWARF_SCOPES_H

#include <stddef.h>
#include <elfutils/libdw.h>

struct vt_scope_index;

/* Index the unit (walks its DIE tree once). Never NULL: an unreadable
 * unit gives an empty index. */
struct vt_scope_index *vt_scope_index_build(Dwarf_Die *cu);
void vt_scope_index_free(struct vt_scope_index *ix);

/* How many functions and inlined calls with code the index holds. */
size_t vt_scope_index_count(const struct vt_scope_index *ix);

/* The scopes at pc, innermost first: the inlined subroutines, each inside
 * the next, then the function they were inlined into (the DIE-tree
 * ancestors dwarf_getscopes_die gives, lexical blocks left out); at most
 * max of them. 0 when no function of the unit covers pc. */
size_t vt_scope_chain(const struct vt_scope_index *ix, Dwarf_Addr pc, Dwarf_Die *out, size_t max);

#endif
