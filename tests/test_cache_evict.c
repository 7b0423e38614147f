/* Bounded size (store level): least recently used entries leave first, a hit makes an
 * entry recent, eviction happens after insertion, kept sidecars go with their entry,
 * prune applies a smaller cap now. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_support.h"

#define PAYLOAD 1000
#define N_BLOBS 8

typedef struct fixture {
    char *dir;
    gj_context *ctx;
    gjt_log_capture log;
    gjt_blob b[N_BLOBS];
} fixture;

static void setup_fixture(fixture *f, const char *name) {
    memset(f, 0, sizeof *f);
    f->dir = gjt_scratch(name);
    f->ctx = gjt_context(f->dir, &f->log);
    for (int i = 0; i < N_BLOBS; i++) {
        gjt_blob_init(&f->b[i], 100 + i, PAYLOAD);
    }
}

static void teardown_fixture(fixture *f) {
    for (int i = 0; i < N_BLOBS; i++) {
        gjt_blob_free(&f->b[i]);
    }
    gj_context_destroy(f->ctx);
    free(f->dir);
}

static int fetch(fixture *f, int i) {
    return gjt_fetch(f->ctx, &f->b[i]);
}

static int present(fixture *f, int i) {
    char *path = gjt_blob_path(f->dir, &f->b[i], GJ__ENTRY_EXT);
    int ok = access(path, F_OK) == 0;
    free(path);
    return ok;
}

/* Sets entry i's recency stamp to seconds_ago. */
static void age(fixture *f, int i, int seconds_ago) {
    char *path = gjt_blob_path(f->dir, &f->b[i], GJ__ENTRY_EXT);
    assert_int_equal(gjt_age(path, seconds_ago), 0);
    free(path);
}

static uint64_t entry_size(fixture *f, int i) {
    char *path = gjt_blob_path(f->dir, &f->b[i], GJ__ENTRY_EXT);
    uint64_t size = gjt_file_size(path);
    assert_true(size != UINT64_MAX);
    free(path);
    return size;
}

static void least_recently_used_goes_first(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, "lru");
    assert_int_equal(fetch(&f, 0), GJ_CACHE_MISS);
    uint64_t one = entry_size(&f, 0);
    /* room for three entries, not four */
    assert_int_equal(gj_context_set_cache_max_bytes(f.ctx, 3 * one + one / 2), GJ_OK);
    assert_int_equal(fetch(&f, 1), GJ_CACHE_MISS);
    assert_int_equal(fetch(&f, 2), GJ_CACHE_MISS);
    age(&f, 0, 300);
    age(&f, 1, 200);
    age(&f, 2, 100);
    assert_int_equal(fetch(&f, 0), GJ_CACHE_HIT); /* 0 becomes the most recent */

    assert_int_equal(fetch(&f, 3), GJ_CACHE_MISS); /* 4 entries: 1 is the least recent */
    assert_true(present(&f, 0));
    assert_false(present(&f, 1));
    assert_true(present(&f, 2));
    assert_true(present(&f, 3));

    age(&f, 3, 50);
    assert_int_equal(fetch(&f, 4), GJ_CACHE_MISS); /* then 2 */
    assert_false(present(&f, 2));
    assert_true(present(&f, 0) && present(&f, 3) && present(&f, 4));

    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(f.ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.evictions, 2);
    assert_int_equal(stats.entries, 3);
    assert_true(stats.disk_bytes <= stats.max_bytes);
    assert_int_equal(fetch(&f, 1), GJ_CACHE_MISS); /* an evicted entry is simply a miss */
    assert_int_equal(f.log.warnings, 0);
    teardown_fixture(&f);
}

static void sidecars_leave_with_their_entry(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, "lru_sidecars");
    assert_int_equal(gj_context_set_cache_keep_source(f.ctx, 1), GJ_OK);
    assert_int_equal(fetch(&f, 0), GJ_CACHE_MISS);
    char *sidecar = gjt_blob_path(f.dir, &f.b[0], GJ__SIDECAR_EXT);
    size_t n = 0;
    uint8_t *text = gjt_read_file(sidecar, &n);
    assert_int_equal(n, strlen(f.b[0].sidecar));
    assert_memory_equal(text, f.b[0].sidecar, n);
    free(text);
    uint64_t pair = entry_size(&f, 0) + gjt_file_size(sidecar);
    /* two pairs fit, three do not */
    assert_int_equal(gj_context_set_cache_max_bytes(f.ctx, 2 * pair + pair / 2), GJ_OK);
    assert_int_equal(fetch(&f, 1), GJ_CACHE_MISS);
    age(&f, 0, 100);
    assert_int_equal(fetch(&f, 2), GJ_CACHE_MISS);
    assert_false(present(&f, 0));
    assert_int_equal(access(sidecar, F_OK), -1);
    assert_int_equal(gjt_count_suffix(f.dir, GJ__SIDECAR_EXT), 2);
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(f.ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.evictions, 1);
    assert_int_equal(stats.entries, 2);
    assert_int_equal(stats.disk_bytes, 2 * pair); /* sidecars count */
    free(sidecar);
    teardown_fixture(&f);
}

/* Without the setting, no sidecar is kept. */
static void sidecars_only_when_asked(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, "no_sidecars");
    assert_int_equal(fetch(&f, 0), GJ_CACHE_MISS);
    assert_int_equal(gjt_count_suffix(f.dir, GJ__SIDECAR_EXT), 0);
    assert_int_equal(gj_context_set_cache_keep_source(f.ctx, 1), GJ_OK);
    assert_int_equal(fetch(&f, 1), GJ_CACHE_MISS);
    assert_int_equal(gjt_count_suffix(f.dir, GJ__SIDECAR_EXT), 1);
    teardown_fixture(&f);
}

static void prune_applies_a_smaller_cap(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, "prune");
    for (int i = 0; i < 5; i++) {
        assert_int_equal(fetch(&f, i), GJ_CACHE_MISS);
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
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(f.ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.evictions, 3);
    teardown_fixture(&f);
}

/* An entry larger than the cap does not stay, and the caller is not bothered. */
static void cap_below_one_entry(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f, "tiny_cap");
    assert_int_equal(gj_context_set_cache_max_bytes(f.ctx, 10), GJ_OK);
    assert_int_equal(fetch(&f, 0), GJ_CACHE_MISS);
    assert_false(present(&f, 0));
    assert_int_equal(fetch(&f, 0), GJ_CACHE_MISS);
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(f.ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.compiles, 2);
    assert_int_equal(stats.evictions, 2);
    assert_int_equal(f.log.warnings, 0);
    teardown_fixture(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(least_recently_used_goes_first),
        cmocka_unit_test(sidecars_leave_with_their_entry),
        cmocka_unit_test(sidecars_only_when_asked),
        cmocka_unit_test(prune_applies_a_smaller_cap),
        cmocka_unit_test(cap_below_one_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
