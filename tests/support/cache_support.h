/* Helpers for the disk-cache tests (tests/test_cache_*.c): scratch directories, captured
 * log messages, made-up store entries ("blobs"), a tiny NVRTC source, child processes
 * that start together, file inspection. The tests reach the store through the context's
 * internals (ctx->store, &ctx->diag), hence the internal headers. */
#ifndef GJ_TEST_CACHE_SUPPORT_H
#define GJ_TEST_CACHE_SUPPORT_H

#include "gridjit.h"

#include "api/context.h"
#include "store/store_impl.h"

#include <stddef.h>
#include <stdint.h>

/* A fresh, empty directory $GRIDJIT_TEST_TMP/name (else /tmp/gridjit-test-PID/name),
 * mode 0700. Returns a malloc()ed path. */
char *gjt_scratch(const char *name);
/* rm -rf path. */
void gjt_remove_tree(const char *path);

/* Log capture: install with gj_context_set_log(ctx, gjt_log, &capture). The context's
 * level decides what arrives (default WARNING: call gj_context_set_log_level for infos). */
typedef struct gjt_log_capture {
    int warnings;
    int infos;
    char last[2048];      /* the last warning or error */
    char last_info[2048]; /* the last info */
} gjt_log_capture;
void gjt_log(void *user, gj_log_level level, const char *message);

/* A context using dir as its writable directory, no read-only layers, log captured. */
gj_context *gjt_context(const char *dir, gjt_log_capture *capture);

/* ------------------------------------------------------------------ blobs */

/* A made-up entry for store-level tests. Everything derives from the variant alone, so a
 * blob can be made again (in another process, after damage) and compared byte for byte.
 * The metadata is real program metadata (compile/meta.h) of a cubin for sm_80 with two
 * kernels, so that gj_cache_list and the CLI describe these entries like compiled ones. */
typedef struct gjt_blob {
    int variant;
    gj__store_key key, group;
    char key_hex[33], group_hex[33];
    uint8_t *meta;
    size_t meta_size;
    uint8_t *payload;
    size_t payload_size;
    char sidecar[128]; /* the text kept beside the entry when the store keeps sidecars */
} gjt_blob;

#define GJT_BLOB_TARGET "sm_80"

void gjt_blob_init(gjt_blob *b, int variant, size_t payload_size);
/* Puts b in the group of blob group_variant (another key of the same request). */
void gjt_blob_set_group(gjt_blob *b, int group_variant);
void gjt_blob_free(gjt_blob *b);
/* dir/SH/GROUP-KEY + ext, where the store keeps b (malloc()ed). */
char *gjt_blob_path(const char *dir, const gjt_blob *b, const char *ext);

/* gj__store_put of b (with its sidecar) into ctx's store. */
void gjt_blob_put(gj_context *ctx, const gjt_blob *b);
/* gj__store_get of b's key and group (no accept function). */
gj_status gjt_blob_get(gj_context *ctx, const gjt_blob *b, gj__blob *out);
/* Whether got holds exactly b's metadata and payload, and names b's keys. */
int gjt_blob_same(const gjt_blob *b, const gj__blob *got);

/* What the compile path does with the store, with the blob as the "compiled" result:
 * look b up; on a miss count the miss, count a fill and put b. Returns GJ_CACHE_HIT,
 * GJ_CACHE_MISS, GJ_CACHE_OFF (nothing searchable: only the fill is counted), or -1 when
 * a hit returned other bytes than b's. */
int gjt_fetch(gj_context *ctx, const gjt_blob *b);

/* ------------------------------------------------------------- NVRTC units */

/* A CUDA source that compiles in a fraction of a second; variant changes its text. Two
 * kernels, name expressions GJT_TINY_NAMES. */
const char *gjt_tiny_source(int variant);
extern const char *const GJT_TINY_NAMES[2];
/* gj_compile_source of gjt_tiny_source(variant) for arch. */
gj_status gjt_compile_tiny(gj_context *ctx, int variant, const char *arch, gj_program **out);

/* -------------------------------------------------------- child processes */

/* Forks n children (at most 64) that wait on a pipe until all exist, then run
 * fn(index, arg) and _exit with its result. Returns 0 when every child exited 0; else
 * describes the first failure in why. */
typedef int (*gjt_child_fn)(int index, void *arg);
int gjt_run_children(int n, gjt_child_fn fn, void *arg, char *why, size_t why_size);

/* Milliseconds of a monotonic clock. */
double gjt_now_ms(void);

/* ------------------------------------------------------------------ files */

/* Counts regular files under dir (recursively) whose names end with suffix / start with prefix. */
size_t gjt_count_suffix(const char *dir, const char *suffix);
size_t gjt_count_prefix(const char *dir, const char *prefix);
/* The path of the only file under dir ending with suffix (malloc()ed), NULL if not exactly one. */
char *gjt_only_file(const char *dir, const char *suffix);

uint8_t *gjt_read_file(const char *path, size_t *size);
void gjt_write_file(const char *path, const void *data, size_t size);
/* Sets path's modification (and access) time to seconds_ago; 0 on success. */
int gjt_age(const char *path, int seconds_ago);
/* st_size of path; UINT64_MAX when it cannot be examined. */
uint64_t gjt_file_size(const char *path);

#endif
