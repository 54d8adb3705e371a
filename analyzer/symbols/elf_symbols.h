/* A module's ELF symbol table by address: the name dwfl_module_addrinfo
 * gives an address, without its walk of the whole table where the answer
 * is certain.
 *
 * Why: dwfl_module_addrinfo reads every symbol of the table for every
 * address it is asked about (elfutils 0.188), so naming the distinct
 * addresses of a library known by its symbol table alone (the usual case
 * for framework wheels: no DWARF, tens of thousands of exported symbols)
 * costs the table's length each time. Here the table is read once and
 * an address is answered from sorted arrays by dwfl's own rules: a sized
 * symbol holding it (global symbols first, then the stronger binding,
 * then the first in the table), else the label (a symbol without a size)
 * dwfl's fallback would take: the greatest one at or below the address,
 * past every sized symbol's end, in the address's section, the last of
 * its ties in dwfl's search order. What the arrays cannot settle (nested
 * or overlapping sized symbols, crowds of them, function descriptors, a
 * load bias) is still asked of dwfl, so the answer is always dwfl's.
 */
#ifndef VT_ELF_SYMBOLS_H
#define VT_ELF_SYMBOLS_H

#include <elfutils/libdwfl.h>

struct vt_symtab_index;

/* Read mod's symbol table once. Never NULL (an empty index asks dwfl). */
struct vt_symtab_index *vt_symtab_index_build(Dwfl_Module *mod);
void vt_symtab_index_free(struct vt_symtab_index *ix);

/* The symbol name dwfl_module_addrinfo(mod, addr, ...) returns, or NULL. */
const char *vt_symtab_name_at(struct vt_symtab_index *ix, Dwfl_Module *mod, GElf_Addr addr);

/* How many addresses the index answered itself, and how many it asked
 * dwfl about (for tests and benchmarks). */
void vt_symtab_index_stats(const struct vt_symtab_index *ix, unsigned long *own,
                           unsigned long *asked);

#endif
