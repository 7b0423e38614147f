/* What the disk cache records on a gj_program (struct gj_program in compile.h holds one). */
#ifndef GJ_CACHE_TAG_H
#define GJ_CACHE_TAG_H

#include "gridjit.h"

#include <stdint.h>

typedef struct gj__cache_tag {
    gj_cache_status status; /* GJ_CACHE_OFF when the program never met the cache */
    char key[33];           /* full key, 32 hex digits; "" when unknown */
    char config_key[33];
    int layer;              /* hits: 0 the writable directory, i + 1 read-only layer i */
    uint64_t dev, ino;      /* hits: the entry file it was read from */
} gj__cache_tag;

#endif
