/* Symbol lookup inside one loaded object (dlsym_elf.c). */
#ifndef VT_DLSYM_ELF_H
#define VT_DLSYM_ELF_H

struct link_map;

/* Does `map` itself define `name` (default version)? Its address in *addr. */
int vt_elf_defines(const struct link_map *map, const char *name, void **addr);
/* The index-th DT_NEEDED name of `map`, or NULL past the last. */
const char *vt_elf_needed(const struct link_map *map, unsigned index);

/* strcmp(a, b) == 0 and the file name part of a path, without libc. */
int vt_elf_streq(const char *a, const char *b);
const char *vt_elf_basename(const char *path);

#endif
