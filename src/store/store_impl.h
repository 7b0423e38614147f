/* Internals shared by the store's sources. docs/cache.md describes the entry format and
 * the directory protocol these implement. Everything here is called with the store's
 * lock held, except the pure functions (entry format, paths, publication). */
#ifndef GJ_STORE_STORE_IMPL_H
#define GJ_STORE_STORE_IMPL_H

#include "store/store.h"

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

/* ---------------------------------------------------------- entry format */
#define GJ__ENTRY_MAGIC "\x89GJC\r\n\x1a\n" /* 8 bytes: binary, catches text-mode mangling */
#define GJ__ENTRY_FORMAT_VERSION 2u
#define GJ__ENTRY_FIXED_SIZE 72u
#define GJ__ENTRY_MIN_HEADER (GJ__ENTRY_FIXED_SIZE + 8u)
#define GJ__ENTRY_MAX_HEADER (1u << 20)
#define GJ__ENTRY_MAX_PAYLOAD ((uint64_t)1 << 32)
#define GJ__ENTRY_EXT ".gjc"
#define GJ__SIDECAR_EXT ".cu" /* the text kept beside an entry: gridjit keeps the CUDA source */
#define GJ__LOCK_EXT ".lock"
#define GJ__TEMP_PREFIX ".tmp-"
#define GJ__TEMP_MAX_AGE_S 3600

typedef struct gj__entry {
    gj__store_key key, group;
    uint64_t payload_size;
    uint64_t payload_checksum; /* XXH3-64 of the payload */
    void *meta;                /* meta_size bytes */
    size_t meta_size;
    void *payload;             /* NULL until read */
} gj__entry;

/* Why an entry file was refused. IO and OOM say nothing about the file itself. */
typedef enum gj__entry_check {
    GJ__ENTRY_OK = 0,
    GJ__ENTRY_TRUNCATED,
    GJ__ENTRY_BAD_MAGIC,
    GJ__ENTRY_BAD_VERSION,
    GJ__ENTRY_BAD_HEADER_LENGTH,
    GJ__ENTRY_BAD_HEADER_CHECKSUM,
    GJ__ENTRY_MALFORMED,
    GJ__ENTRY_BAD_SIZE, /* file longer than header + payload */
    GJ__ENTRY_BAD_PAYLOAD_CHECKSUM,
    GJ__ENTRY_NOT_REGULAR,
    GJ__ENTRY_IO,
    GJ__ENTRY_OOM
} gj__entry_check;

const char *gj__entry_check_message(gj__entry_check check);
/* Whether the check proves the file bad (as opposed to a failure to read it). */
int gj__entry_check_is_damage(gj__entry_check check);

/* The header bytes of e (payload_size and payload_checksum already set). malloc()ed. */
uint8_t *gj__entry_encode_header(const gj__entry *e, size_t *size);
/* Parses and checks a header at the start of buf (size bytes available). On success
 * fills *out (meta allocated) and *header_size. */
gj__entry_check gj__entry_decode_header(const uint8_t *buf, size_t size, gj__entry *out, size_t *header_size);
/* Reads the entry in fd (file_size bytes): header always, payload and its checksum when
 * with_payload. Checks that the file is exactly header + payload long. */
gj__entry_check gj__entry_read(int fd, uint64_t file_size, gj__entry *out, int with_payload);
/* Opens path for reading as an entry, never following a symlink nor blocking on a FIFO:
 * GJ__ENTRY_OK and *fd (the caller closes it) for a regular file; otherwise *fd is -1,
 * GJ__ENTRY_NOT_REGULAR (a symlink, or anything else that is not a regular file) or
 * GJ__ENTRY_IO (errno says why). *st receives the file's fstat, zeroed when the file
 * could not be opened or examined (as for a symlink). Opening apart from reading lets
 * a caller decide from st whether the file is worth reading. */
gj__entry_check gj__entry_open(const char *path, int *fd, struct stat *st);
/* gj__entry_open and gj__entry_read in a row. */
gj__entry_check gj__entry_read_path(const char *path, gj__entry *out, int with_payload, struct stat *st);
void gj__entry_free(gj__entry *e);

/* ----------------------------------------------------------- publication */
/* Publishes the concatenation of parts as dir/name: temporary file in dir (O_CREAT |
 * O_EXCL | O_NOFOLLOW, 0600), write, fsync, close, rename. Returns 0 or an errno; on
 * failure nothing is left behind. */
int gj__store_publish(const char *dir, const char *name, const struct iovec *parts, int n_parts);
/* Removes path only if it is still the file (dev, ino). 0 or an errno. */
int gj__store_remove_if_same(const char *path, uint64_t dev, uint64_t ino);
/* Sets path's modification time (the recency stamp) to now. */
void gj__store_touch(const char *path);

#ifdef GJ_TEST_HOOKS
/* Test builds only: every write and read of an entry goes through these (default
 * write(2) and pread(2)); a test swaps in one that fails with ENOSPC, EIO, ... */
#include <stdatomic.h>
typedef ssize_t (*gj__store_write_fn)(int fd, const void *buf, size_t n);
typedef ssize_t (*gj__store_pread_fn)(int fd, void *buf, size_t n, off_t offset);
extern _Atomic(gj__store_write_fn) gj__store_test_write;
extern _Atomic(gj__store_pread_fn) gj__store_test_pread;
#endif

/* ------------------------------------------------------------ state */
struct gj__store_state {
    /* Settings from the API; "unset" values mean: take the environment. */
    char *set_dir;          /* NULL: unset */
    char *set_path;         /* NULL: unset */
    int set_enabled;        /* -1: unset */
    uint64_t set_max_bytes; /* 0: unset */
    int set_keep_sidecar;   /* -1: unset */

    /* Resolved on first use, again after a setter changed something. */
    int resolved;
    int enabled;
    char *root; /* the writable directory; NULL when none is usable */
    char **layers;
    size_t n_layers;
    uint64_t max_bytes;
    int keep_sidecar;
    int write_failed; /* a put failed: warned once, no more puts */

    gj__store_counters total;     /* since the store was made */
    gj__store_counters unflushed; /* not yet added to the directory's stats file */

    /* Entries this store was told are bad but could not remove (read-only layers). */
    struct gj__store_file_id {
        uint64_t dev, ino;
    } *skipped;
    size_t n_skipped, cap_skipped;
};

#define GJ__STORE_DEFAULT_MAX_BYTES ((uint64_t)1 << 30)

/* Resolves settings, environment and directory checks once (lock held). */
struct gj__store_state *gj__store_ready(gj__store *s, const gj__diag *d);
/* Forgets the resolution (after a setter; flushes counters to the old directory). */
void gj__store_unresolve(struct gj__store_state *st);

/* Checks a directory for use: 0, or an errno with why filled ("world-writable", ...).
 * create: make it (and missing parents) with mode 0700 first. */
int gj__store_check_dir(const char *path, int create, int writable, char *why, size_t why_size);
/* Parses a byte count with an optional K/M/G/T suffix (binary). 0 on success. */
int gj__store_parse_bytes(const char *text, uint64_t *out);

/* Room for a file name in a shard: "GROUP-KEY" and the longest extension. */
#define GJ__STORE_NAME_MAX 80
/* "GROUP-KEY" + ext, the name of a file in its shard (truncated to size). */
void gj__store_entry_name(const char *group_hex, const char *key_hex, const char *ext, char *out, size_t size);
/* "dir/sh/GROUP-KEY" + ext (NULL on OOM); sh = the first two digits of the group. */
char *gj__store_entry_path(const char *dir, const char *group_hex, const char *key_hex, const char *ext);
/* "dir/sh" (NULL on OOM). */
char *gj__store_shard_path(const char *dir, const char *group_hex);
/* "dir/sh", created (mode 0700) when missing: NULL on OOM; else *err is 0 or the errno of
 * a failed mkdir (the path is returned either way). */
char *gj__store_make_shard(const char *dir, const char *group_hex, int *err);

/* Calls fn for every directory of a store that is on: the read-only layers in order
 * (layer i + 1), then the writable directory (layer 0), until fn returns non-zero. */
typedef int (*gj__store_layer_fn)(void *user, const char *dir, int layer);
void gj__store_each_layer(const struct gj__store_state *st, gj__store_layer_fn fn, void *user);

/* What a file name in a shard is. */
typedef enum gj__store_file_kind {
    GJ__FILE_OTHER,
    GJ__FILE_ENTRY,
    GJ__FILE_SIDECAR,
    GJ__FILE_TEMP
} gj__store_file_kind;
/* Classifies name; for entries and sidecars also copies the two keys out (33 bytes each). */
gj__store_file_kind gj__store_classify(const char *name, char *group_hex, char *key_hex);
/* Whether an entry's keys are the ones its file name promises. */
int gj__entry_matches_name(const gj__entry *e, const char *group_hex, const char *key_hex);

/* Calls fn for every file in every shard of dir (only_shard: just that shard, 2 hex
 * digits, or NULL for all). path is the full path, st from lstat(). fn returns non-zero
 * to stop. Returns 0, or an errno when dir cannot be read. */
typedef int (*gj__store_walk_fn)(void *user, const char *path, const char *name, const struct stat *st);
int gj__store_walk_dir(const char *dir, const char *only_shard, gj__store_walk_fn fn, void *user);

/* -------------------------------------------------------------- eviction */
/* Sweeps stale temporaries and, when the writable directory holds more than cap bytes,
 * removes least recently used entries (with their sidecars) until it fits. */
typedef struct gj__store_evict_result {
    uint64_t entries, bytes; /* what remains */
    uint64_t evicted, freed, swept;
} gj__store_evict_result;
int gj__store_evict(const char *root, uint64_t cap, gj__store_evict_result *result);
/* gj__store_evict of st's writable directory (st->root) under st's cap, the evictions
 * counted. 0 or an errno. */
int gj__store_apply_cap(struct gj__store_state *st, gj__store_evict_result *result);

/* ------------------------------------------------------------ statistics */
void gj__store_count(struct gj__store_state *st, const gj__store_counters *delta);
/* Adds st->unflushed to root/stats under an exclusive lock and zeroes it. */
void gj__store_stats_flush(struct gj__store_state *st);

/* ------------------------------------------------------------ rejection */
/* A broken entry: counted, logged, removed when writable and still the same file,
 * otherwise skipped by this store from now on. */
void gj__store_reject(const gj__diag *d, struct gj__store_state *st, const char *path, int layer, uint64_t dev,
                      uint64_t ino, const char *reason);
int gj__store_is_skipped(const struct gj__store_state *st, uint64_t dev, uint64_t ino);

#endif
