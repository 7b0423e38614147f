/* Bounded size (issue 4 §6): least recently used entries leave first, a hit makes an
 * entry recent, eviction happens after insertion, kept sources go with their entry. */
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

#include "cache_support.h"

#define PAYLOAD 1000

typedef struct fixture {
    char *dir;
    gj_context *ctx;
    gjt_log_capture log;
    gjt_request r[8];
    gjt_compiler compiler;
} fixture;

static void setup_fixture(fixture *f, const char *name) {
    memset(f, 0, sizeof *f);
    f->dir = gjt_scratch(name);
    f->ctx = gjt_context(f->dir, &f->log);
    for (int i = 0; i < 8; i++) {
        gjt_request_init(&f->r[i], 100 + i, "sm_80", GJ_BINARY_CUBIN);
    }
    f->compiler.payload_size = PAYLOAD;
}

static void teardown_fixture(fixture *f) {
    gj_context_destroy(f->ctx);
    free(f->dir);
}

static gj_cache_status compile(fixture *f, int i) {
    f->compiler.request = &f->r[i];
    gj_program *prog = NULL;
    assert_int_equal(gj__cache_compile(f->ctx, &f->r[i].req, gjt_compile, &f->compiler, &prog), GJ_OK);
    gj_cache_status status = gj_program_cache_status(prog);
    gj_program_destroy(prog);
    return status;
}

static char *entry_path(fixture *f, int i, const char *ext) {
    gj__cache_key key;
    gj__cache_key_compute(&f->r[i].req, &key);
    return gj__cache_entry_path(f->dir, key.config_hex, key.hex, ext);
}

static int present(fixture *f, int i) {
    char *path = entry_path(f, i, GJ__ENTRY_EXT);
    int ok = access(path, F_OK) == 0;
    free(path);
    return ok;
}

/* Sets entry i's recency stamp to seconds_ago. */
static void age(fixture *f, int i, int seconds_ago) {
    char *path = entry_path(f, i, GJ__ENTRY_EXT);
    struct timespec t[2] = {{.tv_sec = time(NULL) - seconds_ago}, {.tv_sec = time(NULL) - seconds_ago}};
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
    free(path);
}

static uint64_t entry_size(fixture *f, int i) {
    char *path = entry_path(f, i, GJ__ENTRY_EXT);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    free(path);
    return (uint64_t)st.st_size;
}

static void least_recently_used_goes_first(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, "lru");
    assert_int_equal(compile(&f, 0), GJ_CACHE_MISS);
    uint64_t one = entry_size(&f, 0);
    /* room for three entries, not four */
    assert_int_equal(gj_context_set_cache_max_bytes(f.ctx, 3 * one + one / 2), GJ_OK);
    assert_int_equal(compile(&f, 1), GJ_CACHE_MISS);
    assert_int_equal(compile(&f, 2), GJ_CACHE_MISS);
    age(&f, 0, 300);
    age(&f, 1, 200);
    age(&f, 2, 100);
    assert_int_equal(compile(&f, 0), GJ_CACHE_HIT); /* 0 becomes the most recent */

    assert_int_equal(compile(&f, 3), GJ_CACHE_MISS); /* 4 entries: 1 is the least recent */
    assert_true(present(&f, 0));
    assert_false(present(&f, 1));
    assert_true(present(&f, 2));
    assert_true(present(&f, 3));

    age(&f, 3, 50);
    assert_int_equal(compile(&f, 4), GJ_CACHE_MISS); /* then 2 */
    assert_false(present(&f, 2));
    assert_true(present(&f, 0) && present(&f, 3) && present(&f, 4));

    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(f.ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.evictions, 2);
    assert_int_equal(stats.entries, 3);
    assert_true(stats.disk_bytes <= stats.max_bytes);
    assert_int_equal(compile(&f, 1), GJ_CACHE_MISS); /* an evicted entry is simply a miss */
    assert_int_equal(f.log.warnings, 0);
    teardown_fixture(&f);
}

static void sources_leave_with_their_entry(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, "lru_sources");
    assert_int_equal(gj_context_set_cache_keep_source(f.ctx, 1), GJ_OK);
    assert_int_equal(compile(&f, 0), GJ_CACHE_MISS);
    char *source = entry_path(&f, 0, GJ__SOURCE_EXT);
    size_t n = 0;
    uint8_t *text = gjt_read_file(source, &n);
    assert_int_equal(n, strlen(f.r[0].source));
    assert_memory_equal(text, f.r[0].source, n);
    free(text);
    struct stat st;
    assert_int_equal(stat(source, &st), 0);
    uint64_t pair = entry_size(&f, 0) + (uint64_t)st.st_size;
    /* two pairs fit, three do not */
    assert_int_equal(gj_context_set_cache_max_bytes(f.ctx, 2 * pair + pair / 2), GJ_OK);
    assert_int_equal(gj_context_set_cache_keep_source(f.ctx, 1), GJ_OK);
    assert_int_equal(compile(&f, 1), GJ_CACHE_MISS);
    age(&f, 0, 100);
    assert_int_equal(compile(&f, 2), GJ_CACHE_MISS);
    assert_false(present(&f, 0));
    assert_int_equal(access(source, F_OK), -1);
    assert_int_equal(gjt_count_suffix(f.dir, ".cu"), 2);
    free(source);
    teardown_fixture(&f);
}

static void prune_applies_a_smaller_cap(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, "prune");
    for (int i = 0; i < 5; i++) {
        assert_int_equal(compile(&f, i), GJ_CACHE_MISS);
        age(&f, i, 1000 - 10 * i); /* 0 oldest ... 4 newest */
    }
    uint64_t one = entry_size(&f, 0);
    assert_int_equal(gj_context_set_cache_max_bytes(f.ctx, 2 * one), GJ_OK);
    uint64_t evicted = 0, freed = 0;
    assert_int_equal(gj_cache_prune(f.ctx, &evicted, &freed), GJ_OK);
    assert_int_equal(evicted, 3);
    assert_int_equal(freed, 3 * one);
    assert_false(present(&f, 0) || present(&f, 1) || present(&f, 2));
    assert_true(present(&f, 3) && present(&f, 4));
    teardown_fixture(&f);
}

/* An entry larger than the cap does not stay, and the compile still succeeds. */
static void cap_below_one_entry(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, "tiny_cap");
    assert_int_equal(gj_context_set_cache_max_bytes(f.ctx, 10), GJ_OK);
    assert_int_equal(compile(&f, 0), GJ_CACHE_MISS);
    assert_false(present(&f, 0));
    assert_int_equal(compile(&f, 0), GJ_CACHE_MISS);
    assert_int_equal(f.compiler.calls, 2);
    teardown_fixture(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(least_recently_used_goes_first),
        cmocka_unit_test(sources_leave_with_their_entry),
        cmocka_unit_test(prune_applies_a_smaller_cap),
        cmocka_unit_test(cap_below_one_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
