/* Disk cache placeholder: no state yet. */
#include "cache.h"

void gj__cache_release(struct gj__cache *cache) {
    (void)cache;
}
