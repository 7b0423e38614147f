/*
 * The disk cache as the rest of the library sees it: a verified blob store
 * (docs/cache.md). Entries are named by two opaque 128-bit keys, the key and its group
 * (a coarser key under which entries of one request made by different producers are
 * found when the exact key cannot be computed), and carry a small opaque metadata blob,
 * a payload and optionally a sidecar text kept beside them. The store checks every byte
 * it hands out and knows nothing of what the bytes mean.
 *
 * Layers: read-only directories (GRIDJIT_CACHE_PATH) are searched first, then the
 * writable directory (GRIDJIT_CACHE_DIR, $XDG_CACHE_HOME/gridjit, ~/.cache/gridjit).
 * A store that cannot be used never fails a call: it misses and logs one warning.
 * Safe to use from several threads.
 */
#ifndef GJ_STORE_STORE_H
#define GJ_STORE_STORE_H

#include "base/diag.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gj__store_key {
    uint8_t bytes[16];
} gj__store_key;

/* 32 lowercase hex digits and a NUL. */
void gj__store_key_hex(const gj__store_key *key, char hex[33]);

/* The counters the store keeps; "fills" are the values a caller produced after a miss
 * (for gridjit: compilations) and the time they took. */
typedef struct gj__store_counters {
    uint64_t hits, misses, fills, bytes_read, bytes_written, evictions, corrupt;
    double fill_ms;
} gj__store_counters;

/* Where a returned entry came from, so that the caller can have it forgotten. */
typedef struct gj__store_ref {
    int layer;         /* 0: the writable directory; i + 1: read-only layer i */
    uint64_t dev, ino; /* the file read */
    gj__store_key key, group;
} gj__store_ref;

typedef struct gj__blob {
    gj__store_ref ref;
    void *meta;
    size_t meta_size;
    void *payload;
    size_t payload_size;
} gj__blob;

void gj__blob_free(gj__blob *blob);

struct gj__store_state; /* store_impl.h */

typedef struct gj__store {
    pthread_mutex_t lock;
    struct gj__store_state *state; /* settings, resolved directories, counters */
} gj__store;

/* 0, or -1 when out of memory. */
int gj__store_init(gj__store *s);
/* Flushes this context's counters to the directory and frees everything. */
void gj__store_release(gj__store *s);

/* ---- settings (NULL / -1 / 0: back to the environment) ---- */
gj_status gj__store_set_dir(gj__store *s, const gj__diag *d, const char *dir);
gj_status gj__store_set_path(gj__store *s, const gj__diag *d, const char *path);
void gj__store_set_enabled(gj__store *s, int enabled);
void gj__store_set_max_bytes(gj__store *s, uint64_t max_bytes);
void gj__store_set_keep_sidecar(gj__store *s, int keep);

/* The writable directory (copied into out, "" when there is none or the store is off). */
void gj__store_dir(gj__store *s, const gj__diag *d, char *out, size_t size);
/* Whether any directory can be searched. */
int gj__store_searchable(gj__store *s, const gj__diag *d);
/* Whether a store into the writable directory failed (warned once; nothing is stored
 * after it), so that a caller whose job is to fill the cache can fail. */
int gj__store_write_failed(gj__store *s);
/* What to say about where the store stands when nothing was found (" (the disk cache is
 * off)", " (no usable cache directory)" or ""). */
const char *gj__store_situation(gj__store *s, const gj__diag *d);

/* Decides whether an entry's metadata belongs to what the caller asked for; returns NULL
 * to accept, else why not ("target mismatch"): the entry is then treated as broken. */
typedef const char *(*gj__store_accept_fn)(void *user, const void *meta, size_t meta_size);

/* The entry (key, group), checked: GJ_OK and *out on a hit; GJ_ERROR_NOT_FOUND on a miss
 * (a broken entry is removed where writable, counted, and logged); GJ_ERROR_OUT_OF_MEMORY.
 * Counts a hit (not a miss: the caller decides what a miss is, gj__store_count_miss). */
gj_status gj__store_get(gj__store *s, const gj__diag *d, const gj__store_key *key, const gj__store_key *group,
                        gj__store_accept_fn accept, void *user, gj__blob *out);
/* The most recently written acceptable entry of the group, from any layer (read-only
 * layers first), for when the exact key is unknown. */
gj_status gj__store_get_group(gj__store *s, const gj__diag *d, const gj__store_key *group,
                              gj__store_accept_fn accept, void *user, gj__blob *out);
void gj__store_count_miss(gj__store *s);
void gj__store_count_fill(gj__store *s, double ms);

/* Publishes an entry (and the sidecar text when the store keeps them) in the writable
 * directory; then applies the size cap. Failures are logged once and stop later puts. */
void gj__store_put(gj__store *s, const gj__diag *d, const gj__store_key *key, const gj__store_key *group,
                   const void *meta, size_t meta_size, const void *payload, size_t payload_size,
                   const char *sidecar);

/* The caller found a returned entry unusable (e.g. the driver refused it): it is removed
 * if it is still the same file (or skipped by this store from now on), counted as
 * corrupt, and reason logged. */
void gj__store_forget(gj__store *s, const gj__diag *d, const gj__store_ref *ref, const char *reason);

/* ---- one process at a time per key ---- */
/* A claim on a key: while held, other processes that claim the same key wait (at most
 * wait_ms). Returns 1 when held (release with gj__store_unclaim), 0 when the store cannot
 * lock (read-only or lock-less file system, no directory) or the wait timed out. */
typedef struct gj__store_claim {
    int fd;
} gj__store_claim;
int gj__store_claim_key(gj__store *s, const gj__diag *d, const gj__store_key *key, const gj__store_key *group,
                        unsigned wait_ms, gj__store_claim *out);
void gj__store_unclaim(gj__store_claim *claim);

/* ---- small named notes in the writable directory (advisory) ---- */
void gj__store_note_put(gj__store *s, const gj__diag *d, const char *name, const char *text);
/* 0 and the text in out, or -1 when absent. */
int gj__store_note_get(gj__store *s, const gj__diag *d, const char *name, char *out, size_t size);

/* ---- maintenance ---- */
typedef struct gj__store_item {
    const char *key_hex, *group_hex;
    const char *path;
    uint64_t bytes;
    int writable;
    int is_sidecar;       /* a kept text, not an entry */
    const void *meta;     /* the entry's metadata (for a sidecar: its entry's, or NULL) */
    size_t meta_size;
} gj__store_item;
/* Calls fn for every entry and sidecar of every layer (read-only first) until it returns
 * non-zero. Unreadable entries are skipped with a warning. */
typedef int (*gj__store_visit_fn)(void *user, const gj__store_item *item);
void gj__store_walk(gj__store *s, const gj__diag *d, gj__store_visit_fn fn, void *user);
/* Reads every entry completely; removes bad ones where writable. */
void gj__store_verify(gj__store *s, const gj__diag *d, uint64_t *checked, uint64_t *bad);
/* Applies the size cap now and sweeps stale temporaries. GJ_ERROR_NOT_FOUND without a
 * writable directory; GJ_ERROR_IO when it cannot be read. */
gj_status gj__store_prune(gj__store *s, const gj__diag *d, const char *call, uint64_t *evicted, uint64_t *freed);
gj_status gj__store_clear(gj__store *s, const gj__diag *d, const char *call, uint64_t *removed);

/* Counters of this store since it was made (scope 0), or accumulated in the directory by
 * every store that used it (scope 1, this one's flushed first); plus the directory's
 * present entries and bytes, and the cap. */
typedef struct gj__store_stats {
    gj__store_counters counters;
    uint64_t entries, disk_bytes, max_bytes;
} gj__store_stats;
void gj__store_read_stats(gj__store *s, const gj__diag *d, int directory_scope, gj__store_stats *out);

#endif
