/* Disk cache of compiled binaries (issue 4, docs/cache.md): what the rest of the library
 * calls. The cache's own pieces (key record, entry format, publication, directories,
 * eviction, statistics) share src/cache_impl.h. */
#ifndef GJ_CACHE_H
#define GJ_CACHE_H

#include "context.h"

#include <stddef.h>
#include <stdint.h>

struct gj__nvrtc;
struct gj_program;

/* Which NVRTC produced (or would produce) a binary. build identifies the exact library
 * file without naming it: "gnu-build-id:HEX" from its ELF note, else "xxh3:HEX" over its
 * size and first MiB (see gj__cache_library_identity). */
typedef struct gj__nvrtc_identity {
    int major, minor;
    char build[96];
} gj__nvrtc_identity;

/* Everything the key covers, plus what the "without NVRTC" message needs. */
typedef struct gj__cache_request {
    const char *source; /* the complete generated translation unit */
    size_t source_size;
    const char *const *names; /* name expressions registered with NVRTC */
    size_t n_names;
    const char *target; /* canonical arch spelling ("sm_90a", "compute_80") */
    gj_binary_kind kind;
    const char *const *options; /* normalised NVRTC options (gj__compile_options) */
    size_t n_options;
    const gj__nvrtc_identity *nvrtc; /* NULL: NVRTC is unavailable (absent or disabled) */
    const char *nvrtc_error;         /* why it is unavailable, for the message; may be NULL */
    const char *config_json; /* canonical configuration, for the precompile hint; may be NULL */
    uint32_t n_dims;
    const char *hint_flags;  /* further `gridjit precompile` flags (e.g. " --pass forward"); may be NULL */
    int hint_incomplete;     /* 1: codegen options the CLI cannot express differ from the defaults */
} gj__cache_request;

/* The full key (the whole record, NVRTC included) and the configuration key (the same
 * record without the NVRTC fields), which finds an entry when NVRTC is absent. */
typedef struct gj__cache_key {
    uint8_t key[16];        /* XXH128 canonical (big-endian) bytes */
    uint8_t config_key[16];
    char hex[33];           /* "" when the request had no NVRTC identity */
    char config_hex[33];
} gj__cache_key;

/* 0, or -1 when out of memory. */
int gj__cache_key_compute(const gj__cache_request *req, gj__cache_key *out);
/* The key record itself (malloc()ed): its first *config_size bytes are the configuration
 * key's record, all *size bytes the full key's. NULL on OOM. For tests and debugging. */
char *gj__cache_key_record(const gj__cache_request *req, size_t *config_size, size_t *size);

/* Compiles req through compile(ctx, arg, out) unless a valid entry exists: the
 * configuration's entry from any layer when req->nvrtc is NULL; else the entry of the
 * full key, first in the read-only layers, then in the writable directory. A fresh
 * binary is published to the writable directory. The program's cache fields say what
 * happened. Without NVRTC and without an entry: GJ_ERROR_NO_NVRTC, the message naming
 * the configuration key and the `gridjit precompile` command that would make it.
 * Cache failures never fail the call (warnings through the log callback). */
typedef gj_status (*gj__compile_fn)(gj_context *ctx, void *arg, struct gj_program **out);
gj_status gj__cache_compile(gj_context *ctx, const gj__cache_request *req, gj__compile_fn compile, void *arg,
                            struct gj_program **out);

/* gj_compile's seam: gathers the request for the generated source of enc (options of
 * arch, NVRTC identity unless NVRTC is absent or disabled, canonical configuration)
 * and calls gj__cache_compile. */
struct gj_encoding;
struct gj__arch;
gj_status gj__cache_compile_generated(gj_context *ctx, const struct gj_encoding *enc, const gj_codegen_options *opts,
                                      const struct gj__arch *arch, const char *source, const char *const *names,
                                      size_t n_names, gj__compile_fn compile, void *arg, struct gj_program **out);

/* Lower-level halves of gj__cache_compile. lookup: GJ_OK with *out on a hit,
 * GJ_ERROR_NOT_FOUND on a miss (a broken entry is removed and counted), GJ_ERROR_OUT_OF_MEMORY.
 * store: publishes prog under key (no-op when there is no writable directory). */
gj_status gj__cache_lookup(gj_context *ctx, const gj__cache_request *req, const gj__cache_key *key,
                           struct gj_program **out);
void gj__cache_store(gj_context *ctx, const gj__cache_request *req, const gj__cache_key *key,
                     const struct gj_program *prog);

/* The runtime calls this when the driver refuses a binary that came from the cache
 * (any load error, CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_NO_BINARY_FOR_GPU):
 * the entry is removed if it is still the same file (or, in a read-only layer, skipped
 * by this context from now on), counted as corrupt, and a warning logged. The caller
 * then compiles again (gj_compile misses and replaces the entry). */
void gj__cache_invalidate(gj_context *ctx, const struct gj_program *prog, const char *reason);

/* Identity of the NVRTC library nvrtc was loaded from (its Version entry point). */
gj_status gj__cache_nvrtc_identity(const struct gj__nvrtc *nvrtc, gj__nvrtc_identity *out);

/* 0 after gj_context_set_nvrtc_enabled(ctx, 0): gj__nvrtc_get then refuses, as it does
 * for GRIDJIT_NVRTC=off. */
int gj__cache_nvrtc_allowed(gj_context *ctx);

/* Flushes this context's statistics to the directory and frees everything. */
void gj__cache_release(struct gj__cache *cache);

#endif
