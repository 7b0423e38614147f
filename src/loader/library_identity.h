/* The identity of a loaded shared library: what a cache key records about the compiler
 * that made a binary, without naming its path. */
#ifndef GJ_LOADER_LIBRARY_IDENTITY_H
#define GJ_LOADER_LIBRARY_IDENTITY_H

#include <stddef.h>

/* A printable identity of the shared library containing addr: "gnu-build-id:HEX" when it
 * has a GNU build id (read from the loaded image, no file access), else "xxh3:HEX-SIZE"
 * over the file's first MiB and size. 0 on success, -1 when addr is in no loaded object. */
int gj__library_identity(const void *addr, char *out, size_t out_size);

#endif
