/* Where the cache lives: choosing the writable directory from the API and the
 * environment, refusing unsafe or unusable ones with one warning (and working uncached),
 * read-only layers searched first and never modified, byte counts. */
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
#include "test_env.h"

static const char *const cache_env[] = {"GRIDJIT_CACHE_DIR", "GRIDJIT_CACHE_PATH", "GRIDJIT_CACHE_DISABLE",
                                        "GRIDJIT_CACHE_MAX_BYTES", "GRIDJIT_CACHE_SOURCE", "XDG_CACHE_HOME",
                                        "GRIDJIT_NVRTC"};
static char *saved_home;

static int clear_env(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof cache_env / sizeof cache_env[0]; i++) {
        unsetenv(cache_env[i]);
    }
    return 0;
}

/* A context that takes everything from the environment. */
static gj_context *env_context(gjt_log_capture *log) {
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    memset(log, 0, sizeof *log);
    gj_context_set_log(ctx, gjt_log, log);
    return ctx;
}

/* Fetches blob variant v through ctx's store (see gjt_fetch). */
static int fetch_variant(gj_context *ctx, int v) {
    gjt_blob b;
    gjt_blob_init(&b, v, 500);
    const int status = gjt_fetch(ctx, &b);
    gjt_blob_free(&b);
    return status;
}

/* Where NVRTC exists: a real compile through ctx succeeds with the given cache status. */
static void assert_compiles(gj_context *ctx, gj_cache_status expect) {
    if (!gj_test_have_nvrtc()) {
        return; /* the store-level checks stand alone; the message said SKIPPED */
    }
    gj_program *prog = NULL;
    assert_int_equal(gjt_compile_tiny(ctx, 0, "sm_80", &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), expect);
    gj_program_destroy(prog);
}

/* ------------------------------------------------------- choosing the root */

static void root_from_environment(void **state) {
    (void)state;
    char *base = gjt_scratch("env_root");
    char want[2200];
    gjt_log_capture log;

    /* HOME only */
    setenv("HOME", base, 1);
    gj_context *ctx = env_context(&log);
    snprintf(want, sizeof want, "%s/.cache/gridjit", base);
    assert_string_equal(gj_context_cache_dir(ctx), want);
    struct stat st;
    assert_int_equal(stat(want, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    gj_context_destroy(ctx);

    /* XDG_CACHE_HOME beats HOME; a relative one is ignored (XDG spec) */
    char xdg[2200];
    snprintf(xdg, sizeof xdg, "%s/xdg", base);
    setenv("XDG_CACHE_HOME", xdg, 1);
    ctx = env_context(&log);
    snprintf(want, sizeof want, "%s/xdg/gridjit", base);
    assert_string_equal(gj_context_cache_dir(ctx), want);
    gj_context_destroy(ctx);
    setenv("XDG_CACHE_HOME", "relative/dir", 1);
    ctx = env_context(&log);
    snprintf(want, sizeof want, "%s/.cache/gridjit", base);
    assert_string_equal(gj_context_cache_dir(ctx), want);
    gj_context_destroy(ctx);

    /* GRIDJIT_CACHE_DIR beats both; the API beats the environment */
    char dir[2200];
    snprintf(dir, sizeof dir, "%s/explicit", base);
    setenv("GRIDJIT_CACHE_DIR", dir, 1);
    ctx = env_context(&log);
    assert_string_equal(gj_context_cache_dir(ctx), dir);
    snprintf(want, sizeof want, "%s/api/deeper", base);
    assert_int_equal(gj_context_set_cache_dir(ctx, want), GJ_OK);
    assert_string_equal(gj_context_cache_dir(ctx), want);
    assert_int_equal(gj_context_set_cache_dir(ctx, NULL), GJ_OK);
    assert_string_equal(gj_context_cache_dir(ctx), dir);
    assert_int_equal(log.warnings, 0);
    gj_context_destroy(ctx);

    /* a CACHEDIR.TAG marks the directory for backup tools */
    char tag[2300];
    snprintf(tag, sizeof tag, "%s/CACHEDIR.TAG", dir);
    size_t n = 0;
    uint8_t *text = gjt_read_file(tag, &n);
    assert_non_null(text);
    assert_memory_equal(text, "Signature: 8a477f597d28d172789f06886806bc55", 43);
    free(text);
    free(base);
}

static void no_home_works_uncached(void **state) {
    (void)state;
    const char *home = getenv("HOME");
    saved_home = home ? strdup(home) : NULL;
    unsetenv("HOME");
    gjt_log_capture log;
    gj_context *ctx = env_context(&log);
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_OFF);
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_OFF);
    assert_int_equal(fetch_variant(ctx, 1), GJ_CACHE_OFF);
    assert_compiles(ctx, GJ_CACHE_OFF);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "HOME"));
    assert_null(gj_context_cache_dir(ctx));
    assert_string_equal(gj__store_situation(&ctx->store, &ctx->diag), " (no usable cache directory)");
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.hits + stats.misses, 0); /* nothing was looked up */
    gj_context_destroy(ctx);
    if (saved_home) {
        setenv("HOME", saved_home, 1);
        free(saved_home);
    }
}

static void disable_turns_it_off(void **state) {
    (void)state;
    char *dir = gjt_scratch("disabled");
    setenv("GRIDJIT_CACHE_DIR", dir, 1);
    setenv("GRIDJIT_CACHE_DISABLE", "1", 1);
    gjt_log_capture log;
    gj_context *ctx = env_context(&log);
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_OFF);
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_OFF);
    assert_compiles(ctx, GJ_CACHE_OFF);
    assert_int_equal(gjt_count_suffix(dir, ".gjc"), 0);
    assert_int_equal(log.warnings, 0);
    assert_string_equal(gj__store_situation(&ctx->store, &ctx->diag), " (the disk cache is off)");
    /* the API overrides the environment */
    assert_int_equal(gj_context_set_cache_enabled(ctx, 1), GJ_OK);
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_MISS);
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_HIT);
    gj_context_destroy(ctx);
    setenv("GRIDJIT_CACHE_DISABLE", "0", 1);
    ctx = env_context(&log);
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_HIT);
    assert_string_equal(gj__store_situation(&ctx->store, &ctx->diag), "");
    gj_context_destroy(ctx);
    free(dir);
}

/* --------------------------------------------------- refusing a directory */

/* The directory is refused with exactly one warning mentioning why; work goes on uncached. */
static void assert_refused(const char *dir, const char *why) {
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_OFF);
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_OFF);
    assert_int_equal(fetch_variant(ctx, 1), GJ_CACHE_OFF);
    assert_compiles(ctx, GJ_CACHE_OFF);
    assert_int_equal(log.warnings, 1);
    if (!strstr(log.last, why)) {
        fail_msg("warning \"%s\" does not say \"%s\"", log.last, why);
    }
    assert_null(gj_context_cache_dir(ctx));
    gj_context_destroy(ctx);
}

static void world_writable_root_is_refused(void **state) {
    (void)state;
    char *dir = gjt_scratch("world_writable");
    assert_int_equal(chmod(dir, 0777), 0);
    assert_refused(dir, "world-writable");
    assert_int_equal(gjt_count_suffix(dir, ".gjc"), 0);
    assert_int_equal(chmod(dir, 01777), 0); /* sticky does not make it safe */
    assert_refused(dir, "world-writable");
    free(dir);
}

static void foreign_root_is_refused(void **state) {
    (void)state;
    if (geteuid() == 0) {
        char *dir = gjt_scratch("foreign");
        assert_int_equal(chown(dir, 65534, 65534), 0); /* nobody */
        assert_refused(dir, "owned by uid 65534");
        assert_int_equal(gjt_count_suffix(dir, ".gjc"), 0);
        free(dir);
    } else {
        assert_refused("/", "owned by uid 0");
    }
}

static void unusable_root_is_refused(void **state) {
    (void)state;
    char *base = gjt_scratch("unusable");
    char file[2200], below[2300];
    snprintf(file, sizeof file, "%s/a-file", base);
    gjt_write_file(file, "x", 1);
    assert_refused(file, "Not a directory"); /* ENOTDIR: the root is a file */
    snprintf(below, sizeof below, "%s/sub/dir", file);
    assert_refused(below, "Not a directory"); /* a parent is a file */
    if (geteuid() != 0) { /* root ignores permission bits */
        char ro[2200];
        snprintf(ro, sizeof ro, "%s/read-only", base);
        assert_int_equal(mkdir(ro, 0500), 0);
        assert_refused(ro, "Permission denied");
        char sub[2300];
        snprintf(sub, sizeof sub, "%s/cache", ro);
        assert_refused(sub, "Permission denied");
        chmod(ro, 0700);
    }
    free(base);
}

/* --------------------------------------------------------------- layers */

/* Stores blob variant v into dir as its own writable directory. */
static void populate(const char *dir, int v) {
    gj_context *ctx = gjt_context(dir, NULL);
    assert_int_equal(fetch_variant(ctx, v), GJ_CACHE_MISS);
    gj_context_destroy(ctx);
}

/* Looks blob variant v up; returns the layer it came from, or -1 on a miss. */
static int layer_of(gj_context *ctx, int v, uint64_t *ino) {
    gjt_blob b;
    gjt_blob_init(&b, v, 500);
    gj__blob got;
    int layer = -1;
    if (gjt_blob_get(ctx, &b, &got) == GJ_OK) {
        assert_true(gjt_blob_same(&b, &got));
        layer = got.ref.layer;
        if (ino) {
            *ino = got.ref.ino;
        }
        gj__blob_free(&got);
    }
    gjt_blob_free(&b);
    return layer;
}

static void read_only_layer_is_searched_first(void **state) {
    (void)state;
    char *layer_a = gjt_scratch("layer_a");
    char *layer_b = gjt_scratch("layer_b");
    char *rw = gjt_scratch("layer_rw");
    populate(layer_a, 0);
    populate(layer_b, 0);
    populate(layer_b, 1);
    populate(rw, 0);
    char *a_entry = gjt_only_file(layer_a, ".gjc");
    assert_int_equal(gjt_age(a_entry, 500), 0);
    struct stat before;
    assert_int_equal(stat(a_entry, &before), 0);

    char path[4500];
    snprintf(path, sizeof path, "%s:%s", layer_a, layer_b);
    setenv("GRIDJIT_CACHE_PATH", path, 1);
    setenv("GRIDJIT_CACHE_DIR", rw, 1);
    gjt_log_capture log;
    gj_context *ctx = env_context(&log);
    uint64_t ino = 0;
    assert_int_equal(layer_of(ctx, 0, &ino), 1); /* the first read-only layer, not the writable one */
    struct stat after;
    assert_int_equal(stat(a_entry, &after), 0);
    assert_true(after.st_ino == ino);
    /* a hit in a read-only layer leaves its recency stamp alone */
    assert_true(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);

    /* variant 1 only in layer b: found there, nothing written */
    assert_int_equal(layer_of(ctx, 1, NULL), 2);
    assert_int_equal(fetch_variant(ctx, 1), GJ_CACHE_HIT);
    /* variant 2 nowhere: a miss, stored in the writable directory only */
    assert_int_equal(fetch_variant(ctx, 2), GJ_CACHE_MISS);
    assert_int_equal(layer_of(ctx, 2, NULL), 0);
    assert_int_equal(gjt_count_suffix(layer_a, ".gjc"), 1);
    assert_int_equal(gjt_count_suffix(layer_b, ".gjc"), 2);
    assert_int_equal(gjt_count_suffix(rw, ".gjc"), 2);
    assert_int_equal(log.warnings, 0);
    gj_context_destroy(ctx);
    free(a_entry);
    free(layer_a);
    free(layer_b);
    free(rw);
}

static void broken_read_only_entry_is_skipped(void **state) {
    (void)state;
    char *layer = gjt_scratch("layer_broken");
    char *rw = gjt_scratch("layer_broken_rw");
    populate(layer, 0);
    char *entry = gjt_only_file(layer, ".gjc");
    assert_int_equal(truncate(entry, 50), 0);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(rw, &log);
    assert_int_equal(gj_context_set_cache_path(ctx, layer), GJ_OK);
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_MISS);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "truncated"));
    assert_non_null(strstr(log.last, "ignoring it"));
    assert_int_equal(gjt_file_size(entry), 50); /* a read-only layer is never modified */
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_HIT);
    assert_int_equal(layer_of(ctx, 0, NULL), 0);
    assert_int_equal(log.warnings, 1); /* skipped from now on */
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.corrupt, 1);
    gj_context_destroy(ctx);
    free(entry);
    free(layer);
    free(rw);
}

static void unsafe_layers_are_refused(void **state) {
    (void)state;
    char *layer = gjt_scratch("layer_unsafe");
    char *rw = gjt_scratch("layer_unsafe_rw");
    populate(layer, 0);
    assert_int_equal(chmod(layer, 0777), 0);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(rw, &log);
    gj_context_set_log_level(ctx, GJ_LOG_DEBUG); /* the missing layer is an info */
    char path[4500];
    snprintf(path, sizeof path, "%s::%s/does-not-exist", layer, rw);
    assert_int_equal(gj_context_set_cache_path(ctx, path), GJ_OK);
    assert_int_equal(fetch_variant(ctx, 0), GJ_CACHE_MISS); /* not served from it */
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "world-writable"));
    assert_int_equal(log.infos, 1);
    gj_context_destroy(ctx);
    free(layer);
    free(rw);
}

/* The writable directory named again as a layer is searched once, as writable. */
static void writable_dir_is_not_also_a_layer(void **state) {
    (void)state;
    char *rw = gjt_scratch("layer_self");
    populate(rw, 0);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(rw, &log);
    assert_int_equal(gj_context_set_cache_path(ctx, rw), GJ_OK);
    assert_int_equal(layer_of(ctx, 0, NULL), 0);
    assert_int_equal(ctx->store.state->n_layers, 0);
    assert_int_equal(log.warnings, 0);
    gj_context_destroy(ctx);
    free(rw);
}

/* ------------------------------------------------------------ byte counts */

/* GRIDJIT_LOG_LEVEL sets a new context's log level (debug, info, warning, error; anything else:
 * warning). At info each compile says what NVRTC and the store took and when it began, and each
 * cache hit what the lookup took: what a slow first call waited for (docs/cache.md). */
static void the_log_level_from_the_environment(void **state) {
    (void)state;
    char *rw = gjt_scratch("log_level_rw");
    char path[4500];
    snprintf(path, sizeof path, "%s/does-not-exist", rw); /* a missing read-only layer: an info */
    const char *const levels[] = {"info", "debug", "warning", "error", "loud", NULL};
    const int delivered[] = {1, 1, 0, 0, 0, 0};
    for (int i = 0; i < 6; ++i) {
        if (levels[i]) {
            setenv("GRIDJIT_LOG_LEVEL", levels[i], 1);
        } else {
            unsetenv("GRIDJIT_LOG_LEVEL");
        }
        gjt_log_capture log;
        gj_context *ctx = gjt_context(rw, &log);
        assert_int_equal(gj_context_set_cache_path(ctx, path), GJ_OK);
        assert_int_equal(fetch_variant(ctx, i), GJ_CACHE_MISS); /* a new entry each time */
        if ((log.infos > 0) != delivered[i]) {
            fail_msg("GRIDJIT_LOG_LEVEL=%s: %d infos", levels[i] ? levels[i] : "(unset)", log.infos);
        }
        gj_context_destroy(ctx);
    }
    setenv("GRIDJIT_LOG_LEVEL", "info", 1);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(rw, &log);
    unsetenv("GRIDJIT_LOG_LEVEL");
    if (gj_test_have_nvrtc()) {
        gj_program *prog = NULL;
        assert_int_equal(gjt_compile_tiny(ctx, 0, "sm_80", &prog), GJ_OK);
        char key[9];
        snprintf(key, sizeof key, "%s", gj_program_cache_key(prog));
        gj_program_destroy(prog);
        if (log.infos != 1) {
            fail_msg("%d infos, the last: %s", log.infos, log.last_info);
        }
        assert_non_null(strstr(log.last_info, "compiled "));
        assert_non_null(strstr(log.last_info, "for sm_80"));
        assert_non_null(strstr(log.last_info, key));
        assert_non_null(strstr(log.last_info, " ms, stored in "));
        assert_non_null(strstr(log.last_info, "(t="));
        assert_int_equal(gjt_compile_tiny(ctx, 0, "sm_80", &prog), GJ_OK);
        gj_program_destroy(prog);
        assert_int_equal(log.infos, 2);
        assert_non_null(strstr(log.last_info, "found "));
        assert_non_null(strstr(log.last_info, "in the cache"));
        assert_non_null(strstr(log.last_info, key));
    }
    gj_context_destroy(ctx);
    free(rw);
}

static void byte_counts_parse(void **state) {
    (void)state;
    uint64_t n = 0;
    assert_int_equal(gj__store_parse_bytes("1024", &n), 0);
    assert_int_equal(n, 1024);
    assert_int_equal(gj__store_parse_bytes("4K", &n), 0);
    assert_int_equal(n, 4096);
    assert_int_equal(gj__store_parse_bytes("3M", &n), 0);
    assert_int_equal(n, 3u << 20);
    assert_int_equal(gj__store_parse_bytes("1GiB", &n), 0);
    assert_int_equal(n, 1u << 30);
    assert_int_equal(gj__store_parse_bytes("2g", &n), 0);
    assert_true(n == (uint64_t)2 << 30);
    assert_int_equal(gj__store_parse_bytes("", &n), -1);
    assert_int_equal(gj__store_parse_bytes("-5", &n), -1);
    assert_int_equal(gj__store_parse_bytes("12Q", &n), -1);
    assert_int_equal(gj__store_parse_bytes("99999999999999999999", &n), -1);
    assert_int_equal(gj__store_parse_bytes("20000000T", &n), -1);

    gjt_log_capture log;
    setenv("GRIDJIT_CACHE_MAX_BYTES", "lots", 1);
    gj_context *ctx = env_context(&log);
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_true(stats.max_bytes == (uint64_t)1 << 30);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "GRIDJIT_CACHE_MAX_BYTES"));
    gj_context_destroy(ctx);
    setenv("GRIDJIT_CACHE_MAX_BYTES", "64M", 1);
    ctx = env_context(&log);
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_true(stats.max_bytes == (uint64_t)64 << 20);
    assert_int_equal(gj_context_set_cache_max_bytes(ctx, 12345), GJ_OK);
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.max_bytes, 12345);
    gj_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(root_from_environment, clear_env),
        cmocka_unit_test_setup(no_home_works_uncached, clear_env),
        cmocka_unit_test_setup(disable_turns_it_off, clear_env),
        cmocka_unit_test_setup(world_writable_root_is_refused, clear_env),
        cmocka_unit_test_setup(foreign_root_is_refused, clear_env),
        cmocka_unit_test_setup(unusable_root_is_refused, clear_env),
        cmocka_unit_test_setup(read_only_layer_is_searched_first, clear_env),
        cmocka_unit_test_setup(broken_read_only_entry_is_skipped, clear_env),
        cmocka_unit_test_setup(unsafe_layers_are_refused, clear_env),
        cmocka_unit_test_setup(writable_dir_is_not_also_a_layer, clear_env),
        cmocka_unit_test_setup(the_log_level_from_the_environment, clear_env),
        cmocka_unit_test_setup(byte_counts_parse, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
