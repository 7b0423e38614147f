/* Internals shared by the disk-cache sources (src/cache*.c). docs/cache.md describes the
 * key record, the entry format and the directory protocol these implement. */
#ifndef GJ_CACHE_IMPL_H
#define GJ_CACHE_IMPL_H

#include "cache.h"

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

/* ------------------------------------------------------------ key record */
/* Bumped whenever the record changes shape, so old entries stop matching. */
#define GJ__CACHE_KEY_SCHEMA 1u

/* Returns a printable identity of the shared library containing addr: its GNU build id
 * when it has one (read from the loaded image, no file access), else a hash of the
 * file's size and first MiB. 0 on success, -1 when addr is in no loaded object. */
int gj__cache_library_identity(const void *addr, char *out, size_t out_size);

void gj__cache_hex(const uint8_t bytes[16], char hex[33]);

/* ---------------------------------------------------------- entry format */
#define GJ__ENTRY_MAGIC "\x89GJC\r\n\x1a\n" /* 8 bytes: binary, catches text-mode mangling */
#define GJ__ENTRY_FORMAT_VERSION 1u
#define GJ__ENTRY_FIXED_SIZE 80u
#define GJ__ENTRY_MIN_HEADER (GJ__ENTRY_FIXED_SIZE + 3u * 4u + 8u)
#define GJ__ENTRY_MAX_HEADER (1u << 20)
#define GJ__ENTRY_MAX_PAYLOAD ((uint64_t)1 << 32)
#define GJ__ENTRY_EXT ".gjc"
#define GJ__SOURCE_EXT ".cu"
#define GJ__TEMP_PREFIX ".tmp-"
#define GJ__TEMP_MAX_AGE_S 3600

typedef struct gj__entry {
    uint8_t key[16];
    uint8_t config_key[16];
    gj_binary_kind kind;
    uint32_t nvrtc_major, nvrtc_minor;
    char *target;
    char *gridjit_version;
    char *nvrtc_build;
    size_t n_kernels;
    char **names;   /* name expressions */
    char **lowered; /* lowered names */
    uint64_t payload_size;
    uint64_t payload_checksum; /* XXH3-64 of the payload */
    void *payload;             /* NULL until read */
} gj__entry;

/* Why an entry file was refused. */
typedef enum gj__entry_check {
    GJ__ENTRY_OK = 0,
    GJ__ENTRY_TRUNCATED,
    GJ__ENTRY_BAD_MAGIC,
    GJ__ENTRY_BAD_VERSION,
    GJ__ENTRY_BAD_HEADER_LENGTH,
    GJ__ENTRY_BAD_HEADER_CHECKSUM,
    GJ__ENTRY_MALFORMED,
    GJ__ENTRY_BAD_SIZE, /* file longer or shorter than header + payload */
    GJ__ENTRY_BAD_PAYLOAD_CHECKSUM,
    GJ__ENTRY_NOT_REGULAR,
    GJ__ENTRY_IO,
    GJ__ENTRY_OOM
} gj__entry_check;

const char *gj__entry_check_message(gj__entry_check check);

/* The header bytes of e (payload_size and payload_checksum already set). malloc()ed. */
uint8_t *gj__entry_encode_header(const gj__entry *e, size_t *size);
/* Parses and checks a header at the start of buf (size bytes available). On success
 * fills *out (strings allocated) and *header_size. */
gj__entry_check gj__entry_decode_header(const uint8_t *buf, size_t size, gj__entry *out, size_t *header_size);
/* Reads the entry in fd (file_size bytes): header always, payload and its checksum when
 * with_payload. Checks that the file is exactly header + payload long. */
gj__entry_check gj__entry_read(int fd, uint64_t file_size, gj__entry *out, int with_payload);
void gj__entry_free(gj__entry *e);

/* ----------------------------------------------------------- publication */
/* Test hook: every write of an entry goes through it (default: write(2)). A test sets
 * it to a function that fails with ENOSPC etc. */
extern ssize_t (*gj__cache_test_write)(int fd, const void *buf, size_t n);

/* Publishes the concatenation of parts as dir/name: temporary file in dir (O_CREAT |
 * O_EXCL | O_NOFOLLOW, 0600), write, fsync, close, rename. Returns 0 or an errno; on
 * failure nothing is left behind. */
int gj__cache_publish(const char *dir, const char *name, const struct iovec *parts, int n_parts);
/* Removes path only if it is still the file (dev, ino). 0 or an errno. */
int gj__cache_remove_if_same(const char *path, uint64_t dev, uint64_t ino);
/* Sets path's modification time (the recency stamp) to now. */
void gj__cache_touch(const char *path);

/* The NVRTC identity last used to store into root ("MAJOR.MINOR BUILD" in
 * root/nvrtc-identity), so that without NVRTC a message can still name the full key
 * the configuration had with it. recall: 0, or -1 when unknown. */
void gj__cache_remember_nvrtc(const char *root, const gj__nvrtc_identity *id);
int gj__cache_recall_nvrtc(const char *root, gj__nvrtc_identity *out);

/* ------------------------------------------------------------ directories */
struct gj__cache_counters {
    uint64_t hits, misses, compiles, bytes_read, bytes_written, evictions, corrupt;
    double compile_ms;
};

struct gj__cache {
    /* Settings from the API; "unset" values mean: take the environment. */
    char *set_dir;        /* NULL: unset */
    char *set_path;       /* NULL: unset */
    int set_enabled;      /* -1: unset */
    uint64_t set_max_bytes; /* 0: unset */
    int set_keep_source;  /* -1: unset */
    int set_nvrtc;        /* -1: unset */

    /* Resolved on first use, again after a setter changed something. */
    int resolved;
    int enabled;
    char *root; /* the writable directory; NULL when none is usable */
    char **layers;
    size_t n_layers;
    uint64_t max_bytes;
    int keep_source;
    int write_failed; /* a store failed: warned once, no more stores */
    int remembered;   /* this context has recorded its NVRTC identity in root */

    struct gj__cache_counters total;     /* since the context was created */
    struct gj__cache_counters unflushed; /* not yet added to the directory's stats file */

    /* Entries this context was told are bad but could not remove (read-only layers). */
    struct gj__cache_file_id {
        uint64_t dev, ino;
    } *skipped;
    size_t n_skipped, cap_skipped;
};

#define GJ__CACHE_DEFAULT_MAX_BYTES ((uint64_t)1 << 30)

/* ctx->cache, allocated on first call (settings unset). NULL on OOM. */
struct gj__cache *gj__cache_get(gj_context *ctx);
/* gj__cache_get, then resolves settings, environment and directory checks once. */
struct gj__cache *gj__cache_ready(gj_context *ctx);
/* Forgets the resolution (after a setter). */
void gj__cache_unresolve(struct gj__cache *c);

/* Checks a directory for use: 0, or an errno with why filled ("world-writable", ...).
 * create: make it (and missing parents) with mode 0700 first. */
int gj__cache_check_dir(const char *path, int create, int writable, char *why, size_t why_size);

/* Parses a byte count with an optional K/M/G/T suffix (binary). 0 on success. */
int gj__cache_parse_bytes(const char *text, uint64_t *out);

/* "dir/sh/CONFIG-KEY" + ext (NULL on OOM); sh = the first two digits of the config key. */
char *gj__cache_entry_path(const char *dir, const char *config_hex, const char *hex, const char *ext);
/* "dir/sh" (NULL on OOM). */
char *gj__cache_shard_path(const char *dir, const char *config_hex);

/* What a file name in a shard is. */
typedef enum gj__cache_file_kind { GJ__FILE_OTHER, GJ__FILE_ENTRY, GJ__FILE_SOURCE, GJ__FILE_TEMP } gj__cache_file_kind;
/* Classifies name; for entries and sources also copies the two keys out (33 bytes each). */
gj__cache_file_kind gj__cache_classify(const char *name, char *config_hex, char *hex);

/* Calls fn for every file in every shard of dir (only_shard: just that shard, 2 hex
 * digits, or NULL for all). path is the full path, st from lstat(). fn returns non-zero
 * to stop. Returns 0, or an errno when dir cannot be read. */
typedef int (*gj__cache_walk_fn)(void *user, const char *path, const char *name, const struct stat *st);
int gj__cache_walk(const char *dir, const char *only_shard, gj__cache_walk_fn fn, void *user);

/* -------------------------------------------------------------- eviction */
/* Sweeps stale temporaries and, when the writable directory holds more than cap bytes,
 * removes least recently used entries (with their sources) until it fits. */
typedef struct gj__cache_evict_result {
    uint64_t entries, bytes;          /* what remains */
    uint64_t evicted, freed, swept;
} gj__cache_evict_result;
int gj__cache_evict(const char *root, uint64_t cap, gj__cache_evict_result *result);

/* ------------------------------------------------------------ statistics */
void gj__cache_count(struct gj__cache *c, const struct gj__cache_counters *delta);
/* Adds c->unflushed to root/stats under an exclusive lock and zeroes it. */
void gj__cache_stats_flush(struct gj__cache *c);
/* Reads root/stats (shared lock) into *out; zeros when absent. */
int gj__cache_stats_read(const char *root, struct gj__cache_counters *out);

#endif
