/* Caller-allocated descriptors of an older, shorter layout read as the current one (docs/ABI.md:
 * fields are only appended, the library reads struct_size bytes, zero means the default). */
#ifndef GJ_BASE_WIDEN_H
#define GJ_BASE_WIDEN_H

#include <stddef.h>

/* desc (a struct whose first field is uint32_t struct_size), or where struct_size lies in
 * [first, size), *full: a copy of its struct_size bytes, the rest zero, struct_size set to
 * size. desc itself for NULL, the current size, or a size the caller's check refuses. */
const void *gj__widened(const void *desc, size_t first, size_t size, void *full);

#endif
