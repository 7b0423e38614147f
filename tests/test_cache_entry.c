/* Entry files (store level): the format round trip, and every kind of damage
 * (truncation, flipped bytes, appended bytes, garbage, a wrong format version, a valid
 * entry of another key, a symlink) is detected; the entry is removed and counted, the
 * caller's fresh value replaces it, and the next lookup hits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "cache_support.h"
#include "test_env.h"

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p) {
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Stores b once into dir through a fresh fetch (a miss), returns the entry's path. */
static char *make_entry(gj_context *ctx, const gjt_blob *b, const char *dir) {
    assert_int_equal(gjt_fetch(ctx, b), GJ_CACHE_MISS);
    char *path = gjt_only_file(dir, ".gjc");
    assert_non_null(path);
    return path;
}

/* The header layout of src/store/entry.c (format version 2), read back byte by byte. */
static void layout_matches_the_format(void **state) {
    (void)state;
    char *dir = gjt_scratch("layout");
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_blob b;
    gjt_blob_init(&b, 0, 1000);
    char *path = make_entry(ctx, &b, dir);
    size_t size = 0;
    uint8_t *file = gjt_read_file(path, &size);

    assert_memory_equal(file, "\x89GJC\r\n\x1a\n", 8);
    assert_int_equal(le32(file + 8), 2);
    const uint32_t h = le32(file + 12);
    assert_int_equal(h, 72 + b.meta_size + 8);
    assert_int_equal(size, h + 1000);
    assert_memory_equal(file + 16, b.key.bytes, 16);
    assert_memory_equal(file + 32, b.group.bytes, 16);
    assert_int_equal(le64(file + 48), 1000);
    assert_true(le64(file + 56) == XXH3_64bits(b.payload, 1000));
    assert_int_equal(le32(file + 64), b.meta_size);
    assert_int_equal(le32(file + 68), 0); /* reserved */
    assert_memory_equal(file + 72, b.meta, b.meta_size);
    assert_true(le64(file + h - 8) == XXH3_64bits(file, h - 8));
    assert_memory_equal(file + h, b.payload, 1000);
    /* the name is GROUP-KEY.gjc in the shard of the group's first two digits */
    char tail[100];
    snprintf(tail, sizeof tail, "/%.2s/%s-%s.gjc", b.group_hex, b.group_hex, b.key_hex);
    assert_string_equal(path + strlen(path) - strlen(tail), tail);
    /* and the store's own encoder says the same */
    gj__entry e = {.key = b.key, .group = b.group, .payload_size = 1000,
                   .payload_checksum = XXH3_64bits(b.payload, 1000), .meta = b.meta, .meta_size = b.meta_size};
    size_t header_size = 0;
    uint8_t *header = gj__entry_encode_header(&e, &header_size);
    assert_int_equal(header_size, h);
    assert_memory_equal(header, file, h);

    free(header);
    free(file);
    free(path);
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    free(dir);
}

/* Flipping any single bit (lowest and highest of each byte), header or payload, is
 * caught by the reader. */
static void every_flipped_byte_is_detected(void **state) {
    (void)state;
    char *dir = gjt_scratch("flip_all");
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_blob b;
    gjt_blob_init(&b, 1, 300);
    char *path = make_entry(ctx, &b, dir);
    size_t size = 0;
    uint8_t *original = gjt_read_file(path, &size);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    for (size_t i = 0; i < size; i++) {
        for (int bit = 0; bit < 8; bit += 7) {
            uint8_t flipped = original[i] ^ (uint8_t)(1u << bit);
            assert_int_equal(pwrite(fd, &flipped, 1, (off_t)i), 1);
            gj__entry e;
            if (gj__entry_read(fd, size, &e, 1) == GJ__ENTRY_OK) {
                fail_msg("flipping bit %d of byte %zu went unnoticed", bit, i);
            }
            assert_int_equal(pwrite(fd, &original[i], 1, (off_t)i), 1);
        }
    }
    gj__entry e;
    assert_int_equal(gj__entry_read(fd, size, &e, 1), GJ__ENTRY_OK);
    assert_int_equal(e.meta_size, b.meta_size);
    assert_memory_equal(e.payload, b.payload, 300);
    gj__entry_free(&e);
    close(fd);
    free(original);
    free(path);
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    free(dir);
}

/* ------------------------------------------------ damage, then a full cycle */

typedef void (*damage_fn)(const char *path, size_t header_size, size_t size);

static void truncate_to(const char *path, size_t n) {
    assert_int_equal(truncate(path, (off_t)n), 0);
}

static void flip(const char *path, size_t at) {
    size_t size = 0;
    uint8_t *data = gjt_read_file(path, &size);
    assert_true(at < size);
    data[at] ^= 0x20;
    gjt_write_file(path, data, size);
    free(data);
}

static void to_zero(const char *path, size_t h, size_t size) {
    (void)h;
    (void)size;
    truncate_to(path, 0);
}

static void inside_magic(const char *path, size_t h, size_t size) {
    (void)h;
    (void)size;
    truncate_to(path, 5);
}

static void inside_header(const char *path, size_t h, size_t size) {
    (void)size;
    truncate_to(path, h / 2);
}

static void inside_payload(const char *path, size_t h, size_t size) {
    truncate_to(path, h + (size - h) / 2);
}

static void one_byte_short(const char *path, size_t h, size_t size) {
    (void)h;
    truncate_to(path, size - 1);
}

static void flip_magic(const char *path, size_t h, size_t size) {
    (void)h;
    (void)size;
    flip(path, 2);
}

static void flip_key(const char *path, size_t h, size_t size) {
    (void)h;
    (void)size;
    flip(path, 20);
}

static void flip_meta(const char *path, size_t h, size_t size) {
    (void)size;
    flip(path, h - 10); /* the metadata's last bytes: the lowered names */
}

static void flip_header_checksum(const char *path, size_t h, size_t size) {
    (void)size;
    flip(path, h - 1);
}

static void flip_payload(const char *path, size_t h, size_t size) {
    flip(path, h + (size - h) / 3);
}

static void flip_last_byte(const char *path, size_t h, size_t size) {
    (void)h;
    flip(path, size - 1);
}

static void append(const char *path, size_t h, size_t size) {
    (void)h;
    (void)size;
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fputs("trailing", f);
    fclose(f);
}

static void garbage(const char *path, size_t h, size_t size) {
    (void)h;
    uint8_t *data = malloc(size);
    srand(7);
    for (size_t i = 0; i < size; i++) {
        data[i] = (uint8_t)rand();
    }
    gjt_write_file(path, data, size);
    free(data);
}

/* A version this build does not know, with a correct header checksum, so that only the
 * version check can catch it. */
static void future_version(const char *path, size_t h, size_t size) {
    uint8_t *data = gjt_read_file(path, &size);
    data[8] = GJ__ENTRY_FORMAT_VERSION + 1;
    uint64_t sum = XXH3_64bits(data, h - 8);
    for (int i = 0; i < 8; i++) {
        data[h - 8 + i] = (uint8_t)(sum >> (8 * i));
    }
    gjt_write_file(path, data, size);
    free(data);
}

/* Replaced by a valid entry of another key: every byte is right, only the key is not
 * the one the name promises. */
static void other_entry(const char *path, size_t h, size_t size) {
    (void)h;
    (void)size;
    char *dir = gjt_scratch("other_entry_source");
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_blob other;
    gjt_blob_init(&other, 99, 64);
    char *other_path = make_entry(ctx, &other, dir);
    size_t n = 0;
    uint8_t *data = gjt_read_file(other_path, &n);
    gjt_write_file(path, data, n);
    free(data);
    free(other_path);
    gjt_blob_free(&other);
    gj_context_destroy(ctx);
    free(dir);
}

static void damaged_entry_is_refilled_and_replaced(damage_fn damage, const char *name) {
    char *dir = gjt_scratch(name);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_blob b;
    gjt_blob_init(&b, 2, 2048);
    char *path = make_entry(ctx, &b, dir);
    size_t size = 0;
    uint8_t *good = gjt_read_file(path, &size);
    damage(path, le32(good + 12), size);

    assert_int_equal(gjt_fetch(ctx, &b), GJ_CACHE_MISS); /* refilled */
    assert_int_equal(log.warnings, 1);
    if (!strstr(log.last, "broken")) {
        fail_msg("warning \"%s\" does not say \"broken\"", log.last);
    }
    /* replaced: the file is the good one again, and the next lookup is a hit */
    size_t now = 0;
    uint8_t *replaced = gjt_read_file(path, &now);
    assert_int_equal(now, size);
    assert_memory_equal(replaced, good, size);
    assert_int_equal(gjt_fetch(ctx, &b), GJ_CACHE_HIT);
    assert_int_equal(gjt_count_prefix(dir, ".tmp-"), 0);

    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.corrupt, 1);
    assert_int_equal(stats.hits, 1);
    assert_int_equal(stats.misses, 2);
    assert_int_equal(stats.compiles, 2);
    assert_int_equal(log.warnings, 1);
    free(replaced);
    free(good);
    free(path);
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    free(dir);
}

#define DAMAGE_TEST(fn)                                    \
    static void damage_##fn(void **state) {                \
        (void)state;                                       \
        damaged_entry_is_refilled_and_replaced(fn, #fn);   \
    }
DAMAGE_TEST(to_zero)
DAMAGE_TEST(inside_magic)
DAMAGE_TEST(inside_header)
DAMAGE_TEST(inside_payload)
DAMAGE_TEST(one_byte_short)
DAMAGE_TEST(flip_magic)
DAMAGE_TEST(flip_key)
DAMAGE_TEST(flip_meta)
DAMAGE_TEST(flip_header_checksum)
DAMAGE_TEST(flip_payload)
DAMAGE_TEST(flip_last_byte)
DAMAGE_TEST(append)
DAMAGE_TEST(garbage)
DAMAGE_TEST(future_version)
DAMAGE_TEST(other_entry)

/* The check names what is wrong: the warning is useful to a person. */
static void reasons_are_specific(void **state) {
    (void)state;
    char *dir = gjt_scratch("reasons");
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_blob b;
    gjt_blob_init(&b, 3, 100);
    char *path = make_entry(ctx, &b, dir);
    size_t size = 0;
    uint8_t *good = gjt_read_file(path, &size);
    size_t h = le32(good + 12);
    struct {
        damage_fn damage;
        gj__entry_check expect;
    } cases[] = {{to_zero, GJ__ENTRY_TRUNCATED},          {inside_header, GJ__ENTRY_TRUNCATED},
                 {inside_payload, GJ__ENTRY_TRUNCATED},   {flip_magic, GJ__ENTRY_BAD_MAGIC},
                 {future_version, GJ__ENTRY_BAD_VERSION}, {flip_key, GJ__ENTRY_BAD_HEADER_CHECKSUM},
                 {flip_payload, GJ__ENTRY_BAD_PAYLOAD_CHECKSUM}, {append, GJ__ENTRY_BAD_SIZE}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gjt_write_file(path, good, size);
        cases[i].damage(path, h, size);
        gj__entry e;
        struct stat st;
        const gj__entry_check got = gj__entry_read_path(path, &e, 1, &st);
        if (got != cases[i].expect) {
            fail_msg("case %zu: %s, expected %s", i, gj__entry_check_message(got),
                     gj__entry_check_message(cases[i].expect));
        }
        assert_true(gj__entry_check_is_damage(got));
    }
    /* A read failure says nothing about the file. */
    assert_false(gj__entry_check_is_damage(GJ__ENTRY_IO));
    assert_false(gj__entry_check_is_damage(GJ__ENTRY_OOM));
    free(good);
    free(path);
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    free(dir);
}

/* A symlink where an entry should be is not followed (nor counted as damage); the next
 * put replaces it with a real entry. A directory there is refused. */
static void non_regular_files_are_refused(void **state) {
    (void)state;
    char *dir = gjt_scratch("non_regular");
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_blob b;
    gjt_blob_init(&b, 4, 100);
    char *path = make_entry(ctx, &b, dir);
    char elsewhere[2100];
    snprintf(elsewhere, sizeof elsewhere, "%s.real", path);
    assert_int_equal(rename(path, elsewhere), 0);
    assert_int_equal(symlink(elsewhere, path), 0);
    assert_int_equal(gjt_fetch(ctx, &b), GJ_CACHE_MISS); /* the link was not followed */
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode)); /* the store replaced the link with a real entry */
    assert_int_equal(access(elsewhere, F_OK), 0);
    assert_int_equal(gjt_fetch(ctx, &b), GJ_CACHE_HIT);
    /* `gridjit cache verify` removes a link in the writable directory, never its target. */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink(elsewhere, path), 0);
    uint64_t checked = 0, bad = 0;
    assert_int_equal(gj_cache_verify(ctx, &checked, &bad), GJ_OK);
    assert_int_equal(bad, 1);
    assert_int_equal(lstat(path, &st), -1);
    assert_int_equal(access(elsewhere, F_OK), 0);
    assert_int_equal(gjt_fetch(ctx, &b), GJ_CACHE_MISS);
    assert_non_null(strstr(log.last, "symbolic link"));
    log.warnings = 0;

    gjt_blob other;
    gjt_blob_init(&other, 5, 100);
    char *shard = gj__store_shard_path(dir, other.group_hex);
    char *other_path = gjt_blob_path(dir, &other, GJ__ENTRY_EXT);
    mkdir(shard, 0700);
    assert_int_equal(mkdir(other_path, 0700), 0);
    gj__blob got;
    assert_int_equal(gjt_blob_get(ctx, &other, &got), GJ_ERROR_NOT_FOUND);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "not a regular file"));
    assert_int_equal(gjt_blob_get(ctx, &other, &got), GJ_ERROR_NOT_FOUND);
    assert_int_equal(log.warnings, 1); /* skipped from now on */
    free(other_path);
    free(shard);
    gjt_blob_free(&other);
    free(path);
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    free(dir);
}

/* Regression: a FIFO where an entry should be must be refused like any non-regular file,
 * without blocking. open(2) of a FIFO without O_NONBLOCK waits for a writer, so a lookup,
 * `gridjit cache verify` and `gridjit cache list` hung for good on such a file (planted,
 * say, in a group-writable read-only layer, which the directory checks allow). The calls
 * run in a child under a deadline, so that the suite fails instead of hanging. */
static int fifo_child(const char *dir) {
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_blob b;
    gjt_blob_init(&b, 9, 100);
    gj__blob got;
    int result = gjt_blob_get(ctx, &b, &got) == GJ_ERROR_NOT_FOUND ? 0 : 3;
    uint64_t checked = 0, bad = 0;
    gj__store_verify(&ctx->store, &ctx->diag, &checked, &bad);
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    return result;
}

static void fifo_is_refused_without_blocking(void **state) {
    (void)state;
    char *dir = gjt_scratch("fifo");
    gjt_blob b;
    gjt_blob_init(&b, 9, 100);
    char *shard = gj__store_shard_path(dir, b.group_hex);
    char *path = gjt_blob_path(dir, &b, GJ__ENTRY_EXT);
    assert_int_equal(mkdir(shard, 0700), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The parent's allocations are freed here too, so that valgrind following the fork
         * finds no leak in the child. */
        const int result = fifo_child(dir);
        free(path);
        free(shard);
        gjt_blob_free(&b);
        free(dir);
        _exit(result);
    }
    int status = 0;
    pid_t done = 0;
    const double start = gjt_now_ms();
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 && gjt_now_ms() - start < 3000.0) {
        struct timespec t = {.tv_nsec = 10 * 1000000L};
        nanosleep(&t, NULL);
    }
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    free(path);
    free(shard);
    gjt_blob_free(&b);
    free(dir);
    if (done == 0) {
        fail_msg("a lookup of an entry that is a FIFO blocked for 3 s (open without O_NONBLOCK in "
                 "gj__entry_read_path)");
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* The caller's accept function decides whether an entry is what it asked for; a refused
 * one is broken like a damaged one (the compile path refuses, e.g., a target mismatch). */
static const char *refuse(void *user, const void *meta, size_t meta_size) {
    const gjt_blob *b = user;
    assert_int_equal(meta_size, b->meta_size);
    assert_memory_equal(meta, b->meta, meta_size);
    return "target mismatch";
}

static void refused_entry_is_broken(void **state) {
    (void)state;
    char *dir = gjt_scratch("refused");
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_blob b;
    gjt_blob_init(&b, 6, 100);
    char *path = make_entry(ctx, &b, dir);
    gj__blob got;
    assert_int_equal(gj__store_get(&ctx->store, &ctx->diag, &b.key, &b.group, refuse, &b, &got), GJ_ERROR_NOT_FOUND);
    assert_non_null(strstr(log.last, "target mismatch"));
    assert_int_equal(access(path, F_OK), -1);
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.corrupt, 1);
    assert_int_equal(stats.hits, 0);
    free(path);
    gjt_blob_free(&b);
    gj_context_destroy(ctx);
    free(dir);
}

/* Without the exact key, the newest acceptable entry of the group serves (the compile
 * path without NVRTC); the caller can have a returned entry forgotten. */
static void group_lookup_and_forget(void **state) {
    (void)state;
    char *dir = gjt_scratch("group");
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_blob older, newer;
    gjt_blob_init(&older, 7, 100);
    gjt_blob_init(&newer, 8, 120);
    gjt_blob_set_group(&newer, 7);
    gjt_blob_put(ctx, &older);
    gjt_blob_put(ctx, &newer);
    char *older_path = gjt_blob_path(dir, &older, GJ__ENTRY_EXT);
    char *newer_path = gjt_blob_path(dir, &newer, GJ__ENTRY_EXT);
    assert_int_equal(gjt_age(older_path, 100), 0);

    gj__blob got;
    assert_int_equal(gj__store_get_group(&ctx->store, &ctx->diag, &older.group, NULL, NULL, &got), GJ_OK);
    assert_true(gjt_blob_same(&newer, &got));
    assert_int_equal(got.ref.layer, 0);
    /* the user of the program found it unusable: removed, counted, and the group serves the other */
    gj__store_forget(&ctx->store, &ctx->diag, &got.ref, "refused by the driver");
    gj__blob_free(&got);
    assert_int_equal(access(newer_path, F_OK), -1);
    assert_non_null(strstr(log.last, "refused by the driver"));
    assert_int_equal(gj__store_get_group(&ctx->store, &ctx->diag, &older.group, NULL, NULL, &got), GJ_OK);
    assert_true(gjt_blob_same(&older, &got));
    gj__blob_free(&got);
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.corrupt, 1);
    assert_int_equal(stats.hits, 2);
    free(older_path);
    free(newer_path);
    gjt_blob_free(&older);
    gjt_blob_free(&newer);
    gj_context_destroy(ctx);
    free(dir);
}

/* Through the compile path: a damaged entry is recompiled and replaced, and a program
 * its user refuses (the driver would not load it) is forgotten and compiled again. */
static void damaged_entry_is_recompiled(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    char *dir = gjt_scratch("recompile");
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gj_program *prog = NULL;
    assert_int_equal(gjt_compile_tiny(ctx, 3, "sm_80", &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_MISS);
    gj_program_destroy(prog);
    char *path = gjt_only_file(dir, ".gjc");
    assert_non_null(path);
    const uint64_t size = gjt_file_size(path);
    assert_int_equal(truncate(path, (off_t)size / 2), 0);

    assert_int_equal(gjt_compile_tiny(ctx, 3, "sm_80", &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_MISS);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "truncated"));
    gj_program_destroy(prog);
    assert_int_equal(gjt_file_size(path), size); /* replaced */
    assert_int_equal(gjt_compile_tiny(ctx, 3, "sm_80", &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_HIT);

    gj__compile_invalidate(&ctx->compiler, prog, "refused by the driver (test)");
    gj_program_destroy(prog);
    assert_int_equal(access(path, F_OK), -1);
    assert_non_null(strstr(log.last, "refused by the driver (test)"));
    assert_int_equal(gjt_compile_tiny(ctx, 3, "sm_80", &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_MISS);
    gj_program_destroy(prog);

    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.corrupt, 2);
    assert_int_equal(stats.compiles, 3);
    assert_int_equal(stats.hits, 1);
    free(path);
    gj_context_destroy(ctx);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layout_matches_the_format),
        cmocka_unit_test(every_flipped_byte_is_detected),
        cmocka_unit_test(damage_to_zero),
        cmocka_unit_test(damage_inside_magic),
        cmocka_unit_test(damage_inside_header),
        cmocka_unit_test(damage_inside_payload),
        cmocka_unit_test(damage_one_byte_short),
        cmocka_unit_test(damage_flip_magic),
        cmocka_unit_test(damage_flip_key),
        cmocka_unit_test(damage_flip_meta),
        cmocka_unit_test(damage_flip_header_checksum),
        cmocka_unit_test(damage_flip_payload),
        cmocka_unit_test(damage_flip_last_byte),
        cmocka_unit_test(damage_append),
        cmocka_unit_test(damage_garbage),
        cmocka_unit_test(damage_future_version),
        cmocka_unit_test(damage_other_entry),
        cmocka_unit_test(reasons_are_specific),
        cmocka_unit_test(non_regular_files_are_refused),
        cmocka_unit_test(fifo_is_refused_without_blocking),
        cmocka_unit_test(refused_entry_is_broken),
        cmocka_unit_test(group_lookup_and_forget),
        cmocka_unit_test(damaged_entry_is_recompiled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
