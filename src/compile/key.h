/* Cache keys of compiled programs: XXH3-128 over a canonical record of everything that
 * determines the binary (docs/cache.md, "Key record"). */
#ifndef GJ_COMPILE_KEY_H
#define GJ_COMPILE_KEY_H

#include "compile/nvrtc_job.h"
#include "store/store.h"

/* Bumped whenever the record changes shape, so old entries stop matching. */
#define GJ__KEY_SCHEMA 2u

typedef struct gj__key_request {
    const gj__unit *unit;
    const gj__arch *arch;
    const char *const *options; /* as gj__compile_options states them */
    size_t n_options;
    const gj__nvrtc_identity *nvrtc; /* NULL: NVRTC is unavailable, only the configuration key */
} gj__key_request;

/* The full key (the whole record, NVRTC included: the store's key) and the configuration
 * key (the same record without the NVRTC fields: the store's group), which finds an
 * entry when NVRTC is absent. */
typedef struct gj__compile_key {
    gj__store_key key, config;
    char hex[33]; /* "" when the request had no NVRTC identity */
    char config_hex[33];
} gj__compile_key;

/* 0, or -1 when out of memory. */
int gj__compile_key_make(const gj__key_request *req, gj__compile_key *out);
/* The key record itself (malloc()ed): its first *config_size bytes are the configuration
 * key's record, all *size bytes the full key's. NULL on OOM. For tests and debugging. */
char *gj__compile_key_record(const gj__key_request *req, size_t *config_size, size_t *size);

#endif
