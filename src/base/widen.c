/* Older descriptor layouts widened to the current one. */
#include "base/widen.h"

#include <stdint.h>
#include <string.h>

const void *gj__widened(const void *desc, size_t first, size_t size, void *full) {
    uint32_t struct_size = 0;
    if (desc) {
        memcpy(&struct_size, desc, sizeof struct_size);
    }
    if (!desc || struct_size < first || struct_size >= size) {
        return desc; /* the current size, or one the check refuses */
    }
    memset(full, 0, size);
    memcpy(full, desc, struct_size);
    const uint32_t now = (uint32_t)size;
    memcpy(full, &now, sizeof now);
    return full;
}
