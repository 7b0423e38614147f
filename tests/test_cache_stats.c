/* Statistics per context and accumulated in the directory (across contexts and
 * processes), and the maintenance functions behind `gridjit cache list|verify|clear`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_support.h"

static int fetch(gj_context *ctx, int v, size_t payload) {
    gjt_blob b;
    gjt_blob_init(&b, v, payload);
    const int status = gjt_fetch(ctx, &b);
    gjt_blob_free(&b);
    return status;
}

static void context_counters(void **state) {
    (void)state;
    char *dir = gjt_scratch("stats_context");
    gj_context *ctx = gjt_context(dir, NULL);
    gj_cache_stats s;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &s), GJ_OK);
    assert_int_equal(s.hits + s.misses + s.compiles + s.entries, 0);

    assert_int_equal(fetch(ctx, 0, 4000), GJ_CACHE_MISS);
    char *entry = gjt_only_file(dir, ".gjc");
    uint64_t size = gjt_file_size(entry);
    assert_int_equal(fetch(ctx, 0, 4000), GJ_CACHE_HIT);
    assert_int_equal(fetch(ctx, 0, 4000), GJ_CACHE_HIT);
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &s), GJ_OK);
    assert_int_equal(s.hits, 2);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.compiles, 1);
    assert_true(s.compile_ms == 1.0); /* what the fill reported */
    assert_int_equal(s.bytes_written, size);
    assert_int_equal(s.bytes_read, 2 * size);
    assert_int_equal(s.entries, 1);
    assert_int_equal(s.disk_bytes, size);
    assert_int_equal(s.corrupt, 0);
    assert_int_equal(s.evictions, 0);

    assert_int_equal(truncate(entry, 10), 0);
    assert_int_equal(fetch(ctx, 0, 4000), GJ_CACHE_MISS);
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &s), GJ_OK);
    assert_int_equal(s.corrupt, 1);
    assert_int_equal(s.compiles, 2);
    assert_int_equal(s.misses, 2);
    assert_int_equal(gj_context_cache_stats(ctx, 7, &s), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, NULL), GJ_ERROR_INVALID_ARGUMENT);
    free(entry);
    gj_context_destroy(ctx);
    free(dir);
}

/* Counters of every context that used a directory add up there. */
static void directory_counters_accumulate(void **state) {
    (void)state;
    char *dir = gjt_scratch("stats_directory");
    for (int round = 0; round < 3; round++) {
        gj_context *ctx = gjt_context(dir, NULL);
        fetch(ctx, round, 100);  /* a miss each */
        fetch(ctx, 0, 100);      /* a hit each */
        gj_context_destroy(ctx); /* flushes */
    }
    gj_context *ctx = gjt_context(dir, NULL);
    fetch(ctx, 0, 100);
    gj_cache_stats s;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_DIRECTORY, &s), GJ_OK);
    assert_int_equal(s.misses, 3);
    assert_int_equal(s.compiles, 3);
    assert_true(s.compile_ms == 3.0);
    assert_int_equal(s.hits, 4); /* including this context's, flushed by the call */
    assert_int_equal(s.entries, 3);
    /* asking again does not count twice */
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_DIRECTORY, &s), GJ_OK);
    assert_int_equal(s.hits, 4);
    /* the context's own counters are still its own */
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &s), GJ_OK);
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.misses, 0);
    gj_context_destroy(ctx);

    /* a damaged stats file reads as what it still says, never fails */
    char path[2200];
    snprintf(path, sizeof path, "%s/stats", dir);
    gjt_write_file(path, "hits 7\ngarbage\xff\n misses\n", 25);
    ctx = gjt_context(dir, NULL);
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_DIRECTORY, &s), GJ_OK);
    assert_int_equal(s.hits, 7);
    assert_int_equal(s.misses, 0);
    gj_context_destroy(ctx);
    free(dir);
}

/* Several processes flush into one stats file at once: nothing is lost. */
static int count_child(int index, void *arg) {
    gj_context *ctx = gjt_context(arg, NULL);
    for (int i = 0; i < 5; i++) {
        fetch(ctx, 50 + index, 100); /* one miss, then four hits */
        gj_cache_stats s;
        gj_context_cache_stats(ctx, GJ_CACHE_STATS_DIRECTORY, &s); /* flushes */
    }
    gj_context_destroy(ctx);
    return 0;
}

static void directory_counters_across_processes(void **state) {
    (void)state;
    char *dir = gjt_scratch("stats_processes");
    char why[200];
    if (gjt_run_children(6, count_child, dir, why, sizeof why) != 0) {
        fail_msg("%s", why);
    }
    gj_context *ctx = gjt_context(dir, NULL);
    gj_cache_stats s;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_DIRECTORY, &s), GJ_OK);
    assert_int_equal(s.misses, 6);
    assert_int_equal(s.compiles, 6);
    assert_int_equal(s.hits, 24);
    assert_int_equal(s.entries, 6);
    gj_context_destroy(ctx);
    free(dir);
}

/* ------------------------------------------------------------------ list */

typedef struct listing {
    int n, sources, cubins, writable;
    char keys[8][33];
} listing;

static int collect(void *user, const gj_cache_entry_info *e) {
    listing *l = user;
    assert_int_equal(strlen(e->key), 32);
    assert_int_equal(strlen(e->config_key), 32);
    assert_int_equal(e->bytes, gjt_file_size(e->path));
    assert_string_equal(e->target, GJT_BLOB_TARGET); /* from the entry's metadata */
    if (strcmp(e->kind, "source") == 0) {
        l->sources++;
    } else {
        assert_string_equal(e->kind, "cubin");
        snprintf(l->keys[l->cubins++ % 8], 33, "%s", e->key);
    }
    l->writable += e->writable;
    l->n++;
    return 0;
}

static int stop_at_first(void *user, const gj_cache_entry_info *e) {
    (void)e;
    (*(int *)user)++;
    return 1;
}

static void list_verify_clear(void **state) {
    (void)state;
    char *dir = gjt_scratch("admin");
    char *layer = gjt_scratch("admin_layer");
    gj_context *ctx = gjt_context(layer, NULL);
    fetch(ctx, 9, 100);
    gj_context_destroy(ctx);

    gjt_log_capture log;
    ctx = gjt_context(dir, &log);
    assert_int_equal(gj_context_set_cache_keep_source(ctx, 1), GJ_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fetch(ctx, i, 300), GJ_CACHE_MISS);
    }
    assert_int_equal(gj_context_set_cache_path(ctx, layer), GJ_OK);

    listing l = {0};
    assert_int_equal(gj_cache_list(ctx, collect, &l), GJ_OK);
    assert_int_equal(l.n, 7); /* 1 in the layer, 3 entries + 3 sources */
    assert_int_equal(l.cubins, 4);
    assert_int_equal(l.sources, 3);
    assert_int_equal(l.writable, 6);
    gjt_blob b0;
    gjt_blob_init(&b0, 0, 300);
    int found = 0;
    for (int i = 0; i < 4; i++) {
        found |= strcmp(l.keys[i], b0.key_hex) == 0;
    }
    assert_true(found);
    gjt_blob_free(&b0);
    int visited = 0;
    assert_int_equal(gj_cache_list(ctx, stop_at_first, &visited), GJ_OK);
    assert_int_equal(visited, 1);
    assert_int_equal(gj_cache_list(ctx, NULL, NULL), GJ_ERROR_INVALID_ARGUMENT);

    /* verify: one entry damaged in the writable directory, one in the layer */
    uint64_t checked = 0, bad = 0;
    assert_int_equal(gj_cache_verify(ctx, &checked, &bad), GJ_OK);
    assert_int_equal(checked, 4);
    assert_int_equal(bad, 0);
    char *layer_entry = gjt_only_file(layer, ".gjc");
    assert_int_equal(truncate(layer_entry, 100), 0);
    gjt_blob b1;
    gjt_blob_init(&b1, 1, 300);
    char *victim = gjt_blob_path(dir, &b1, GJ__ENTRY_EXT);
    gjt_blob_free(&b1);
    size_t n = 0;
    uint8_t *data = gjt_read_file(victim, &n);
    data[n - 1] ^= 1;
    gjt_write_file(victim, data, n);
    free(data);
    /* a listing skips the unreadable layer entry with a warning */
    memset(&l, 0, sizeof l);
    assert_int_equal(gj_cache_list(ctx, collect, &l), GJ_OK);
    assert_int_equal(l.cubins, 3);
    assert_non_null(strstr(log.last, "cache verify"));
    assert_int_equal(gj_cache_verify(ctx, &checked, &bad), GJ_OK);
    assert_int_equal(checked, 4);
    assert_int_equal(bad, 2);
    assert_int_equal(access(victim, F_OK), -1);     /* removed */
    assert_int_equal(access(layer_entry, F_OK), 0); /* read-only: reported only */
    assert_int_equal(gj_cache_verify(ctx, &checked, &bad), GJ_OK);
    assert_int_equal(checked, 3);
    assert_int_equal(bad, 1);

    /* clear: the writable directory only */
    uint64_t removed = 0;
    assert_int_equal(gj_cache_clear(ctx, &removed), GJ_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(gjt_count_suffix(dir, ".gjc"), 0);
    assert_int_equal(gjt_count_suffix(dir, ".cu"), 0);
    assert_int_equal(gjt_count_suffix(layer, ".gjc"), 1);
    free(victim);
    free(layer_entry);
    gj_context_destroy(ctx);

    /* without a usable directory, prune and clear say so */
    ctx = gjt_context(dir, NULL);
    assert_int_equal(gj_context_set_cache_enabled(ctx, 0), GJ_OK);
    assert_int_equal(gj_cache_clear(ctx, &removed), GJ_ERROR_NOT_FOUND);
    assert_non_null(strstr(gj_context_errmsg(ctx), "off"));
    uint64_t evicted = 0, freed = 0;
    assert_int_equal(gj_cache_prune(ctx, &evicted, &freed), GJ_ERROR_NOT_FOUND);
    assert_non_null(strstr(gj_context_errmsg(ctx), "off"));
    gj_context_destroy(ctx);
    char file[2200];
    snprintf(file, sizeof file, "%s/a-file", dir);
    gjt_write_file(file, "x", 1);
    ctx = gjt_context(file, NULL);
    assert_int_equal(gj_cache_clear(ctx, &removed), GJ_ERROR_NOT_FOUND);
    assert_non_null(strstr(gj_context_errmsg(ctx), "no usable cache directory"));
    gj_context_destroy(ctx);
    free(dir);
    free(layer);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(context_counters),
        cmocka_unit_test(directory_counters_accumulate),
        cmocka_unit_test(directory_counters_across_processes),
        cmocka_unit_test(list_verify_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
