/* Statistics (issue 4 §10) per context and accumulated in the directory, and the
 * maintenance functions behind `gridjit cache list|verify|clear`. */
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

static gj_cache_status compile(gj_context *ctx, int v, size_t payload, int *calls) {
    gjt_request r;
    gjt_request_init(&r, v, "sm_80", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &r, .payload_size = payload};
    gj_program *prog = NULL;
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    gj_cache_status status = gj_program_cache_status(prog);
    gj_program_destroy(prog);
    if (calls) {
        *calls += compiler.calls;
    }
    return status;
}

static uint64_t file_size(const char *path) {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

static void context_counters(void **state) {
    (void)state;
    char *dir = gjt_scratch("stats_context");
    gj_context *ctx = gjt_context(dir, NULL);
    gj_cache_stats s;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &s), GJ_OK);
    assert_int_equal(s.hits + s.misses + s.compiles + s.entries, 0);

    assert_int_equal(compile(ctx, 0, 4000, NULL), GJ_CACHE_MISS);
    char *entry = gjt_only_file(dir, ".gjc");
    uint64_t size = file_size(entry);
    assert_int_equal(compile(ctx, 0, 4000, NULL), GJ_CACHE_HIT);
    assert_int_equal(compile(ctx, 0, 4000, NULL), GJ_CACHE_HIT);
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &s), GJ_OK);
    assert_int_equal(s.hits, 2);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.compiles, 1);
    assert_true(s.compile_ms >= 0.0);
    assert_int_equal(s.bytes_written, size);
    assert_int_equal(s.bytes_read, 2 * size);
    assert_int_equal(s.entries, 1);
    assert_int_equal(s.disk_bytes, size);
    assert_int_equal(s.corrupt, 0);
    assert_int_equal(s.evictions, 0);

    assert_int_equal(truncate(entry, 10), 0);
    assert_int_equal(compile(ctx, 0, 4000, NULL), GJ_CACHE_MISS);
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &s), GJ_OK);
    assert_int_equal(s.corrupt, 1);
    assert_int_equal(s.compiles, 2);
    assert_int_equal(s.misses, 2);
    free(entry);
    gj_context_destroy(ctx);
    free(dir);
}

/* Counters of every context that used a directory add up there, across processes. */
static void directory_counters_accumulate(void **state) {
    (void)state;
    char *dir = gjt_scratch("stats_directory");
    for (int round = 0; round < 3; round++) {
        gj_context *ctx = gjt_context(dir, NULL);
        compile(ctx, round, 100, NULL); /* a miss each */
        compile(ctx, 0, 100, NULL);     /* round 0: a hit; later rounds: hits */
        gj_context_destroy(ctx);        /* flushes */
    }
    gj_context *ctx = gjt_context(dir, NULL);
    compile(ctx, 0, 100, NULL);
    gj_cache_stats s;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_DIRECTORY, &s), GJ_OK);
    assert_int_equal(s.misses, 3);
    assert_int_equal(s.compiles, 3);
    assert_int_equal(s.hits, 4); /* including this context's, flushed by the call */
    assert_int_equal(s.entries, 3);
    /* asking again does not count twice */
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_DIRECTORY, &s), GJ_OK);
    assert_int_equal(s.hits, 4);
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

/* ------------------------------------------------------------------ list */

typedef struct listing {
    int n, sources, cubins, writable;
    char keys[8][33];
} listing;

static int collect(void *user, const gj_cache_entry_info *e) {
    listing *l = user;
    assert_int_equal(strlen(e->key), 32);
    assert_int_equal(strlen(e->config_key), 32);
    assert_int_equal(e->bytes, file_size(e->path));
    if (strcmp(e->kind, "source") == 0) {
        l->sources++;
    } else {
        assert_string_equal(e->kind, "cubin");
        assert_string_equal(e->target, "sm_80");
        snprintf(l->keys[l->cubins++ % 8], 33, "%s", e->key);
    }
    l->writable += e->writable;
    l->n++;
    return 0;
}

static void list_verify_clear(void **state) {
    (void)state;
    char *dir = gjt_scratch("admin");
    char *layer = gjt_scratch("admin_layer");
    gj_context *ctx = gjt_context(layer, NULL);
    compile(ctx, 9, 100, NULL);
    gj_context_destroy(ctx);

    gjt_log_capture log;
    ctx = gjt_context(dir, &log);
    assert_int_equal(gj_context_set_cache_keep_source(ctx, 1), GJ_OK);
    char key0[33] = "";
    for (int i = 0; i < 3; i++) {
        gjt_request r;
        gjt_request_init(&r, i, "sm_80", GJ_BINARY_CUBIN);
        gjt_compiler compiler = {.request = &r, .payload_size = 300};
        gj_program *prog = NULL;
        assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
        if (i == 0) {
            snprintf(key0, sizeof key0, "%s", gj_program_cache_key(prog));
        }
        gj_program_destroy(prog);
    }
    assert_int_equal(gj_context_set_cache_path(ctx, layer), GJ_OK);

    listing l = {0};
    assert_int_equal(gj_cache_list(ctx, collect, &l), GJ_OK);
    assert_int_equal(l.n, 7); /* 1 in the layer, 3 entries + 3 sources */
    assert_int_equal(l.cubins, 4);
    assert_int_equal(l.sources, 3);
    assert_int_equal(l.writable, 6);
    int found = 0;
    for (int i = 0; i < 4; i++) {
        found |= strcmp(l.keys[i], key0) == 0;
    }
    assert_true(found);

    /* verify: one entry damaged in the writable directory, one in the layer */
    uint64_t checked = 0, bad = 0;
    assert_int_equal(gj_cache_verify(ctx, &checked, &bad), GJ_OK);
    assert_int_equal(checked, 4);
    assert_int_equal(bad, 0);
    char *layer_entry = gjt_only_file(layer, ".gjc");
    assert_int_equal(truncate(layer_entry, 100), 0);
    gjt_request r;
    gjt_request_init(&r, 1, "sm_80", GJ_BINARY_CUBIN);
    gj__cache_key key;
    gj__cache_key_compute(&r.req, &key);
    char *victim = gj__cache_entry_path(dir, key.config_hex, key.hex, GJ__ENTRY_EXT);
    size_t n = 0;
    uint8_t *data = gjt_read_file(victim, &n);
    data[n - 1] ^= 1;
    gjt_write_file(victim, data, n);
    free(data);
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
    gj_context_destroy(ctx);
    free(dir);
    free(layer);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(context_counters),
        cmocka_unit_test(directory_counters_accumulate),
        cmocka_unit_test(list_verify_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
