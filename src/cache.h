/* Disk cache of compiled binaries (issue 4). Until it lands, a stub that caches nothing. */
#ifndef GJ_CACHE_H
#define GJ_CACHE_H

#include "context.h"

void gj__cache_release(struct gj__cache *cache);

#endif
