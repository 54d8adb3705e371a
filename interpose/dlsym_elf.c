/* Symbol lookup inside ONE loaded object, from its own dynamic symbol table
 * (the GNU or SysV hash), without asking the dynamic linker: what the
 * dlsym(RTLD_NEXT) emulation needs to take "the first object after the caller
 * that defines the name" (dlsym_wrap.c).
 *
 * Why not dlsym(handle of that object)? A handle searches the object's
 * dependencies too, a startup dependency has no search list until someone
 * dlopens it, and dlopen itself may not be callable yet (a sanitizer runtime
 * asks for RTLD_NEXT while it initialises, before its dlopen interceptor
 * works). This file calls nothing at all, not even strcmp (an interceptor
 * that is not ready yet): its string helpers are its own.
 *
 * Rules, as glibc's unversioned lookup: a defined global or weak symbol, the
 * default version (a hidden version never matches an unversioned lookup);
 * GNU indirect functions are resolved by calling their resolver, as ld.so
 * does on x86-64 (no arguments). TLS symbols are not handled here. */
#define _GNU_SOURCE
#include "dlsym_elf.h"

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

int vt_elf_streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

const char *vt_elf_basename(const char *path)
{
	const char *base = path;
	for (; *path; path++)
		if (*path == '/')
			base = path + 1;
	return base;
}

struct dyn_tables {
	const ElfW(Sym) *symtab;
	const char *strtab;
	const uint32_t *gnu_hash;
	const ElfW(Word) *sysv_hash;
	const ElfW(Half) *versym;
	const ElfW(Dyn) *dynamic;
};

/* ld.so relocates these pointers in place where .dynamic is writable, and
 * leaves them as offsets where it is read-only. */
static uintptr_t dyn_addr(const struct link_map *m, ElfW(Addr) v)
{
	return v < m->l_addr ? v + m->l_addr : v;
}

static int read_tables(const struct link_map *m, struct dyn_tables *t)
{
	t->symtab = NULL;
	t->strtab = NULL;
	t->gnu_hash = NULL;
	t->sysv_hash = NULL;
	t->versym = NULL;
	for (const ElfW(Dyn) *d = m->l_ld; d && d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: t->symtab = (const void *)dyn_addr(m, d->d_un.d_ptr); break;
		case DT_STRTAB: t->strtab = (const void *)dyn_addr(m, d->d_un.d_ptr); break;
		case DT_GNU_HASH: t->gnu_hash = (const void *)dyn_addr(m, d->d_un.d_ptr); break;
		case DT_HASH: t->sysv_hash = (const void *)dyn_addr(m, d->d_un.d_ptr); break;
		case DT_VERSYM: t->versym = (const void *)dyn_addr(m, d->d_un.d_ptr); break;
		}
	}
	t->dynamic = m->l_ld;
	return t->symtab && t->strtab && (t->gnu_hash || t->sysv_hash) ? 0 : -1;
}

static int usable(const struct dyn_tables *t, uint32_t i, const char *name)
{
	const ElfW(Sym) *s = &t->symtab[i];
	unsigned type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
	if (s->st_shndx == SHN_UNDEF || type == STT_TLS ||
	    (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE))
		return 0;
	if (t->versym && (t->versym[i] & 0x8000))
		return 0; /* hidden (non-default) version */
	return vt_elf_streq(t->strtab + s->st_name, name);
}

static uint32_t gnu_hash_of(const char *name)
{
	uint32_t h = 5381;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	return h;
}

static uint32_t sysv_hash_of(const char *name)
{
	uint32_t h = 0, g;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
		h = (h << 4) + *c;
		g = h & 0xf0000000u;
		h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

static const ElfW(Sym) *find_gnu(const struct dyn_tables *t, const char *name)
{
	const uint32_t *gh = t->gnu_hash;
	uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2];
	const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)&gh[4] + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t h = gnu_hash_of(name);
	if (!nbuckets)
		return NULL;
	for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i; i++) {
		uint32_t h2 = chain[i - symoffset];
		if ((h | 1) == (h2 | 1) && usable(t, i, name))
			return &t->symtab[i];
		if (h2 & 1)
			break;
	}
	return NULL;
}

static const ElfW(Sym) *find_sysv(const struct dyn_tables *t, const char *name)
{
	ElfW(Word) nbucket = t->sysv_hash[0];
	const ElfW(Word) *bucket = &t->sysv_hash[2], *chain = bucket + nbucket;
	if (!nbucket)
		return NULL;
	for (ElfW(Word) i = bucket[sysv_hash_of(name) % nbucket]; i; i = chain[i])
		if (usable(t, i, name))
			return &t->symtab[i];
	return NULL;
}

int vt_elf_defines(const struct link_map *map, const char *name, void **addr)
{
	struct dyn_tables t;
	if (!map || read_tables(map, &t))
		return 0;
	const ElfW(Sym) *s = t.gnu_hash ? find_gnu(&t, name) : find_sysv(&t, name);
	if (!s)
		return 0;
	uintptr_t value = map->l_addr + s->st_value;
	if (ELF64_ST_TYPE(s->st_info) == STT_GNU_IFUNC) {
#if defined(__x86_64__)
		value = ((uintptr_t(*)(void))value)();
#else
		return 0; /* resolver arguments are per-architecture */
#endif
	}
	*addr = (void *)value;
	return 1;
}

const char *vt_elf_needed(const struct link_map *map, unsigned index)
{
	struct dyn_tables t;
	if (!map || read_tables(map, &t))
		return NULL;
	for (const ElfW(Dyn) *d = t.dynamic; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_NEEDED && index-- == 0)
			return t.strtab + d->d_un.d_val;
	return NULL;
}
