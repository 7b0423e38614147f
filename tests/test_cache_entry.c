/* Entry files: format round trip, and every kind of damage (truncation, flipped bytes,
 * appended bytes, garbage, a wrong format version) is detected, the entry removed,
 * recompiled and replaced (issue 4 §2, §4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "cache_support.h"

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p) {
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Compiles r once into dir, returns the entry's path. */
static char *make_entry(gj_context *ctx, gjt_request *r, gjt_compiler *compiler, const char *dir) {
    gj_program *prog = NULL;
    assert_int_equal(gj__cache_compile(ctx, &r->req, gjt_compile, compiler, &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_MISS);
    gj_program_destroy(prog);
    char *path = gjt_only_file(dir, ".gjc");
    assert_non_null(path);
    return path;
}

/* The header layout of docs/cache.md, read back byte by byte. */
static void layout_matches_the_documentation(void **state) {
    (void)state;
    char *dir = gjt_scratch("layout");
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_request r;
    gjt_request_init(&r, 0, "sm_80", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &r, .payload_size = 1000};
    char *path = make_entry(ctx, &r, &compiler, dir);
    size_t size = 0;
    uint8_t *file = gjt_read_file(path, &size);

    assert_memory_equal(file, "\x89GJC\r\n\x1a\n", 8);
    assert_int_equal(le32(file + 8), 1);
    uint32_t h = le32(file + 12);
    assert_int_equal(size, h + 1000);
    gj__cache_key key;
    gj__cache_key_compute(&r.req, &key);
    assert_memory_equal(file + 16, key.key, 16);
    assert_memory_equal(file + 32, key.config_key, 16);
    assert_int_equal(le32(file + 48), GJ_BINARY_CUBIN);
    assert_int_equal(le32(file + 52), 13);
    assert_int_equal(le32(file + 56), 0);
    assert_int_equal(le32(file + 60), 2);
    assert_int_equal(le64(file + 64), 1000);
    uint8_t *expected = gjt_expected_binary(&r, 1000);
    assert_true(le64(file + 72) == XXH3_64bits(expected, 1000));
    assert_memory_equal(file + h, expected, 1000);
    assert_true(le64(file + h - 8) == XXH3_64bits(file, h - 8));
    /* strings: target, version, build, then name/lowered pairs */
    const char *want[] = {"sm_80", GJ_VERSION_STRING, r.nvrtc.build, "&k0", "k0", "&k1", "k1"};
    size_t pos = 80;
    for (size_t i = 0; i < 7; i++) {
        uint32_t n = le32(file + pos);
        assert_int_equal(n, strlen(want[i]));
        assert_memory_equal(file + pos + 4, want[i], n);
        pos += 4 + n;
    }
    assert_int_equal(pos, h - 8);
    /* the name is CONFIGKEY-KEY.gjc in the shard of the config key's first two digits */
    char tail[100];
    snprintf(tail, sizeof tail, "/%.2s/%s-%s.gjc", key.config_hex, key.config_hex, key.hex);
    assert_string_equal(path + strlen(path) - strlen(tail), tail);

    free(expected);
    free(file);
    free(path);
    gj_context_destroy(ctx);
    free(dir);
}

/* Flipping any single byte of the file, header or payload, is caught by the reader. */
static void every_flipped_byte_is_detected(void **state) {
    (void)state;
    char *dir = gjt_scratch("flip_all");
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_request r;
    gjt_request_init(&r, 1, "sm_90a", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &r, .payload_size = 300};
    char *path = make_entry(ctx, &r, &compiler, dir);
    size_t size = 0;
    uint8_t *original = gjt_read_file(path, &size);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    for (size_t i = 0; i < size; i++) {
        for (int bit = 0; bit < 8; bit += 7) { /* lowest and highest bit of each byte */
            uint8_t b = original[i] ^ (uint8_t)(1u << bit);
            assert_int_equal(pwrite(fd, &b, 1, (off_t)i), 1);
            gj__entry e;
            gj__entry_check check = gj__entry_read(fd, size, &e, 1);
            if (check == GJ__ENTRY_OK) {
                fail_msg("flipping bit %d of byte %zu went unnoticed", bit, i);
            }
            assert_int_equal(pwrite(fd, &original[i], 1, (off_t)i), 1);
        }
    }
    gj__entry e;
    assert_int_equal(gj__entry_read(fd, size, &e, 1), GJ__ENTRY_OK);
    gj__entry_free(&e);
    close(fd);
    free(original);
    free(path);
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

static void flip_kernel_name(const char *path, size_t h, size_t size) {
    (void)size;
    flip(path, h - 10);
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
    data[8] = 2;
    uint64_t sum = XXH3_64bits(data, h - 8);
    for (int i = 0; i < 8; i++) {
        data[h - 8 + i] = (uint8_t)(sum >> (8 * i));
    }
    gjt_write_file(path, data, size);
    free(data);
}

/* Replaced by a valid entry of another configuration: every byte is right, only the
 * key is not the one the name promises. */
static void other_entry(const char *path, size_t h, size_t size) {
    (void)h;
    (void)size;
    gjt_request other;
    gjt_request_init(&other, 99, "sm_80", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &other, .payload_size = 64};
    char *dir = gjt_scratch("other_entry_source");
    gj_context *ctx = gjt_context(dir, NULL);
    char *other_path = make_entry(ctx, &other, &compiler, dir);
    size_t n = 0;
    uint8_t *data = gjt_read_file(other_path, &n);
    gjt_write_file(path, data, n);
    free(data);
    free(other_path);
    gj_context_destroy(ctx);
    free(dir);
}

static void damaged_entry_is_recompiled_and_replaced(damage_fn damage, const char *name) {
    char *dir = gjt_scratch(name);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_request r;
    gjt_request_init(&r, 2, "sm_80", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &r, .payload_size = 2048};
    char *path = make_entry(ctx, &r, &compiler, dir);
    size_t size = 0;
    uint8_t *good = gjt_read_file(path, &size);
    damage(path, le32(good + 12), size);

    gj_program *prog = NULL;
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_MISS);
    assert_int_equal(compiler.calls, 2); /* recompiled */
    assert_true(log.warnings >= 1);
    assert_non_null(strstr(log.last, "broken"));
    size_t n = 0;
    uint8_t *expected = gjt_expected_binary(&r, 2048);
    const void *binary = gj_program_binary(prog, &n);
    assert_int_equal(n, 2048);
    assert_memory_equal(binary, expected, 2048);
    gj_program_destroy(prog);

    /* replaced: the file is the good one again, and the next lookup is a hit */
    size_t now = 0;
    uint8_t *replaced = gjt_read_file(path, &now);
    assert_int_equal(now, size);
    assert_memory_equal(replaced, good, size);
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_HIT);
    assert_int_equal(compiler.calls, 2);
    binary = gj_program_binary(prog, &n);
    assert_memory_equal(binary, expected, 2048);
    gj_program_destroy(prog);
    assert_int_equal(gjt_count_prefix(dir, ".tmp-"), 0);

    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.corrupt, 1);
    assert_int_equal(stats.hits, 1);
    assert_int_equal(stats.misses, 2);
    assert_int_equal(stats.compiles, 2);
    free(replaced);
    free(expected);
    free(good);
    free(path);
    gj_context_destroy(ctx);
    free(dir);
}

#define DAMAGE_TEST(fn)                                      \
    static void damage_##fn(void **state) {                  \
        (void)state;                                         \
        damaged_entry_is_recompiled_and_replaced(fn, #fn);   \
    }
DAMAGE_TEST(to_zero)
DAMAGE_TEST(inside_magic)
DAMAGE_TEST(inside_header)
DAMAGE_TEST(inside_payload)
DAMAGE_TEST(one_byte_short)
DAMAGE_TEST(flip_magic)
DAMAGE_TEST(flip_key)
DAMAGE_TEST(flip_kernel_name)
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
    gjt_request r;
    gjt_request_init(&r, 3, "sm_80", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &r, .payload_size = 100};
    char *path = make_entry(ctx, &r, &compiler, dir);
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
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        int fd = open(path, O_RDONLY);
        gj__entry e;
        assert_int_equal(gj__entry_read(fd, (uint64_t)st.st_size, &e, 1), cases[i].expect);
        close(fd);
    }
    free(good);
    free(path);
    gj_context_destroy(ctx);
    free(dir);
}

/* A symlink or a directory where an entry should be is not followed or read. */
static void non_regular_files_are_refused(void **state) {
    (void)state;
    char *dir = gjt_scratch("non_regular");
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_request r;
    gjt_request_init(&r, 4, "sm_80", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &r, .payload_size = 100};
    char *path = make_entry(ctx, &r, &compiler, dir);
    char elsewhere[2100];
    snprintf(elsewhere, sizeof elsewhere, "%s.real", path);
    assert_int_equal(rename(path, elsewhere), 0);
    assert_int_equal(symlink(elsewhere, path), 0);
    gj_program *prog = NULL;
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_MISS); /* the link was not followed */
    assert_int_equal(compiler.calls, 2);
    gj_program_destroy(prog);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode)); /* the store replaced the link with a real entry */
    free(path);
    gj_context_destroy(ctx);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layout_matches_the_documentation),
        cmocka_unit_test(every_flipped_byte_is_detected),
        cmocka_unit_test(damage_to_zero),
        cmocka_unit_test(damage_inside_magic),
        cmocka_unit_test(damage_inside_header),
        cmocka_unit_test(damage_inside_payload),
        cmocka_unit_test(damage_one_byte_short),
        cmocka_unit_test(damage_flip_magic),
        cmocka_unit_test(damage_flip_key),
        cmocka_unit_test(damage_flip_kernel_name),
        cmocka_unit_test(damage_flip_header_checksum),
        cmocka_unit_test(damage_flip_payload),
        cmocka_unit_test(damage_flip_last_byte),
        cmocka_unit_test(damage_append),
        cmocka_unit_test(damage_garbage),
        cmocka_unit_test(damage_future_version),
        cmocka_unit_test(damage_other_entry),
        cmocka_unit_test(reasons_are_specific),
        cmocka_unit_test(non_regular_files_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
