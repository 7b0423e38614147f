/* Where the cache lives (issue 4 §3, §5, §7, §9): choosing the writable directory,
 * refusing unsafe or unusable ones with one warning, read-only layers searched first,
 * and loading without NVRTC. */
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

/* Compiles request variant v through ctx; returns the program's cache status. */
static gj_cache_status compile_variant(gj_context *ctx, int v, gjt_compiler *compiler, gjt_request *r) {
    gjt_request_init(r, v, "sm_80", GJ_BINARY_CUBIN);
    compiler->request = r;
    if (!compiler->payload_size) {
        compiler->payload_size = 500;
    }
    gj_program *prog = NULL;
    assert_int_equal(gj__cache_compile(ctx, &r->req, gjt_compile, compiler, &prog), GJ_OK);
    assert_non_null(prog);
    gj_cache_status status = gj_program_cache_status(prog);
    gj_program_destroy(prog);
    return status;
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
    gjt_compiler compiler = {0};
    gjt_request r;
    assert_int_equal(compile_variant(ctx, 0, &compiler, &r), GJ_CACHE_OFF);
    assert_int_equal(compile_variant(ctx, 1, &compiler, &r), GJ_CACHE_OFF);
    assert_int_equal(compiler.calls, 2);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "HOME"));
    assert_null(gj_context_cache_dir(ctx));
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
    gjt_compiler compiler = {0};
    gjt_request r;
    assert_int_equal(compile_variant(ctx, 0, &compiler, &r), GJ_CACHE_OFF);
    assert_int_equal(compile_variant(ctx, 0, &compiler, &r), GJ_CACHE_OFF);
    assert_int_equal(compiler.calls, 2);
    assert_int_equal(gjt_count_suffix(dir, ".gjc"), 0);
    assert_int_equal(log.warnings, 0);
    /* the API overrides the environment */
    assert_int_equal(gj_context_set_cache_enabled(ctx, 1), GJ_OK);
    assert_int_equal(compile_variant(ctx, 0, &compiler, &r), GJ_CACHE_MISS);
    assert_int_equal(compile_variant(ctx, 0, &compiler, &r), GJ_CACHE_HIT);
    gj_context_destroy(ctx);
    setenv("GRIDJIT_CACHE_DISABLE", "0", 1);
    ctx = env_context(&log);
    assert_int_equal(compile_variant(ctx, 0, &compiler, &r), GJ_CACHE_HIT);
    gj_context_destroy(ctx);
    free(dir);
}

/* --------------------------------------------------- refusing a directory */

/* The directory is refused with exactly one warning mentioning what; compiles work. */
static void assert_refused(const char *dir, const char *why) {
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_compiler compiler = {0};
    gjt_request r;
    assert_int_equal(compile_variant(ctx, 0, &compiler, &r), GJ_CACHE_OFF);
    assert_int_equal(compile_variant(ctx, 0, &compiler, &r), GJ_CACHE_OFF);
    assert_int_equal(compile_variant(ctx, 1, &compiler, &r), GJ_CACHE_OFF);
    assert_int_equal(compiler.calls, 3);
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

/* Compiles variant v with ctx writing into dir; returns the entry's mtime. */
static void populate(const char *dir, int v, size_t payload) {
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_compiler compiler = {.payload_size = payload};
    gjt_request r;
    assert_int_equal(compile_variant(ctx, v, &compiler, &r), GJ_CACHE_MISS);
    gj_context_destroy(ctx);
}

static void read_only_layer_is_searched_first(void **state) {
    (void)state;
    char *layer_a = gjt_scratch("layer_a");
    char *layer_b = gjt_scratch("layer_b");
    char *rw = gjt_scratch("layer_rw");
    populate(layer_a, 0, 100);
    populate(layer_b, 0, 100);
    populate(layer_b, 1, 100);
    populate(rw, 0, 100);
    char *a_entry = gjt_only_file(layer_a, ".gjc");
    struct stat before;
    assert_int_equal(stat(a_entry, &before), 0);

    char path[4500];
    snprintf(path, sizeof path, "%s:%s", layer_a, layer_b);
    setenv("GRIDJIT_CACHE_PATH", path, 1);
    setenv("GRIDJIT_CACHE_DIR", rw, 1);
    gjt_log_capture log;
    gj_context *ctx = env_context(&log);
    gjt_request r;
    gjt_request_init(&r, 0, "sm_80", GJ_BINARY_CUBIN);
    gjt_compiler compiler = {.request = &r, .payload_size = 100};
    gj_program *prog = NULL;
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_HIT);
    assert_int_equal(prog->cache.layer, 1); /* the first read-only layer, not the writable one */
    struct stat after;
    assert_int_equal(stat(a_entry, &after), 0);
    assert_true(after.st_ino == prog->cache.ino);
    assert_true(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    gj_program_destroy(prog);

    /* variant 1 only in layer b: found there, nothing written */
    gjt_request_init(&r, 1, "sm_80", GJ_BINARY_CUBIN);
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_HIT);
    assert_int_equal(prog->cache.layer, 2);
    gj_program_destroy(prog);

    /* variant 2 nowhere: compiled and stored in the writable directory only */
    gjt_request_init(&r, 2, "sm_80", GJ_BINARY_CUBIN);
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_MISS);
    gj_program_destroy(prog);
    assert_int_equal(compiler.calls, 1);
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
    populate(layer, 0, 100);
    char *entry = gjt_only_file(layer, ".gjc");
    assert_int_equal(truncate(entry, 50), 0);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(rw, &log);
    assert_int_equal(gj_context_set_cache_path(ctx, layer), GJ_OK);
    gjt_compiler compiler = {0};
    gjt_request r;
    assert_int_equal(compile_variant(ctx, 0, &compiler, &r), GJ_CACHE_MISS);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "truncated"));
    assert_int_equal(access(entry, F_OK), 0); /* a read-only layer is never modified */
    assert_int_equal(compile_variant(ctx, 0, &compiler, &r), GJ_CACHE_HIT);
    assert_int_equal(log.warnings, 1); /* skipped from now on */
    assert_int_equal(compiler.calls, 1);
    gj_context_destroy(ctx);
    free(entry);
    free(layer);
    free(rw);
}

static void unsafe_layers_are_refused(void **state) {
    (void)state;
    char *layer = gjt_scratch("layer_unsafe");
    char *rw = gjt_scratch("layer_unsafe_rw");
    populate(layer, 0, 100);
    assert_int_equal(chmod(layer, 0777), 0);
    gjt_log_capture log;
    gj_context *ctx = gjt_context(rw, &log);
    char path[4500];
    snprintf(path, sizeof path, "%s::%s/does-not-exist", layer, rw);
    assert_int_equal(gj_context_set_cache_path(ctx, path), GJ_OK);
    gjt_compiler compiler = {0};
    gjt_request r;
    assert_int_equal(compile_variant(ctx, 0, &compiler, &r), GJ_CACHE_MISS); /* not served from it */
    assert_int_equal(log.warnings, 1); /* the missing layer is only an info */
    assert_non_null(strstr(log.last, "world-writable"));
    assert_int_equal(log.infos, 1);
    gj_context_destroy(ctx);
    free(layer);
    free(rw);
}

/* ------------------------------------------------------------ no NVRTC */

static void precompiled_entry_loads_without_nvrtc(void **state) {
    (void)state;
    char *dir = gjt_scratch("no_nvrtc");
    /* "precompile": an NVRTC 12.4 made the entry */
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_request r;
    gjt_request_init(&r, 0, "sm_80", GJ_BINARY_CUBIN);
    r.nvrtc.major = 12;
    r.nvrtc.minor = 4;
    gjt_compiler compiler = {.request = &r, .payload_size = 700};
    gj_program *prog = NULL;
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    char full_key[33];
    snprintf(full_key, sizeof full_key, "%s", gj_program_cache_key(prog));
    gj_program_destroy(prog);
    gj_context_destroy(ctx);

    /* without NVRTC: loaded from the entry, which tells the full key */
    gjt_log_capture log;
    ctx = gjt_context(dir, &log);
    gjt_request_init(&r, 0, "sm_80", GJ_BINARY_CUBIN);
    r.req.nvrtc = NULL;
    compiler.calls = 0;
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_HIT);
    assert_string_equal(gj_program_cache_key(prog), full_key);
    assert_int_equal(compiler.calls, 0);
    uint8_t *expected = gjt_expected_binary(&r, 700);
    assert_int_equal(prog->binary_size, 700);
    assert_memory_equal(prog->binary, expected, 700);
    assert_string_equal(prog->lowered_names[1], "k1");
    free(expected);
    gj_program_destroy(prog);

    /* another configuration: a clear failure naming the key and the command */
    gjt_request_init(&r, 1, "sm_80", GJ_BINARY_CUBIN);
    r.req.nvrtc = NULL;
    r.req.nvrtc_error = "GRIDJIT_NVRTC=off";
    gj__cache_key key;
    gj__cache_key_compute(&r.req, &key);
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_ERROR_NO_NVRTC);
    assert_null(prog);
    assert_int_equal(compiler.calls, 0);
    const char *msg = gj_context_errmsg(ctx);
    assert_non_null(strstr(msg, key.config_hex));
    /* and the full key it would have with the NVRTC that last stored here (12.4) */
    gjt_request with;
    gjt_request_init(&with, 1, "sm_80", GJ_BINARY_CUBIN);
    with.nvrtc.major = 12;
    with.nvrtc.minor = 4;
    gj__cache_key full;
    gj__cache_key_compute(&with.req, &full);
    assert_non_null(strstr(msg, full.hex));
    assert_non_null(strstr(msg, "GRIDJIT_NVRTC=off"));
    char command[3000];
    snprintf(command, sizeof command,
             "gridjit precompile --config '{\"otype\":\"HashGrid\",\"n_levels\":16}' --dims 3 --arch sm_80 "
             "--cache-dir '%s'",
             dir);
    if (!strstr(msg, command)) {
        fail_msg("message \"%s\" lacks \"%s\"", msg, command);
    }
    /* a PTX target is asked for with --ptx */
    gjt_request_init(&r, 1, "compute_90", GJ_BINARY_PTX);
    r.req.nvrtc = NULL;
    assert_int_equal(gj__cache_compile(ctx, &r.req, gjt_compile, &compiler, &prog), GJ_ERROR_NO_NVRTC);
    assert_non_null(strstr(gj_context_errmsg(ctx), "--arch sm_90 --ptx"));
    gj_context_destroy(ctx);
    free(dir);
}

static void nvrtc_switch(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    gj_context_create(&ctx);
    assert_true(gj__cache_nvrtc_allowed(ctx));
    assert_int_equal(gj_context_set_nvrtc_enabled(ctx, 0), GJ_OK);
    assert_false(gj__cache_nvrtc_allowed(ctx));
    int major = 0, minor = 0;
    assert_int_equal(gj_nvrtc_version(ctx, &major, &minor), GJ_ERROR_NO_NVRTC); /* the loader honours it */
    assert_non_null(strstr(gj_context_errmsg(ctx), "gj_context_set_nvrtc_enabled"));
    assert_int_equal(gj_context_set_nvrtc_enabled(ctx, 1), GJ_OK);
    assert_true(gj__cache_nvrtc_allowed(ctx));
    gj_context_destroy(ctx);
}

static void byte_counts_parse(void **state) {
    (void)state;
    uint64_t n = 0;
    assert_int_equal(gj__cache_parse_bytes("1024", &n), 0);
    assert_int_equal(n, 1024);
    assert_int_equal(gj__cache_parse_bytes("4K", &n), 0);
    assert_int_equal(n, 4096);
    assert_int_equal(gj__cache_parse_bytes("3M", &n), 0);
    assert_int_equal(n, 3u << 20);
    assert_int_equal(gj__cache_parse_bytes("1GiB", &n), 0);
    assert_int_equal(n, 1u << 30);
    assert_int_equal(gj__cache_parse_bytes("2g", &n), 0);
    assert_true(n == (uint64_t)2 << 30);
    assert_int_equal(gj__cache_parse_bytes("", &n), -1);
    assert_int_equal(gj__cache_parse_bytes("-5", &n), -1);
    assert_int_equal(gj__cache_parse_bytes("12Q", &n), -1);
    assert_int_equal(gj__cache_parse_bytes("99999999999999999999", &n), -1);
    assert_int_equal(gj__cache_parse_bytes("20000000T", &n), -1);

    gjt_log_capture log;
    setenv("GRIDJIT_CACHE_MAX_BYTES", "lots", 1);
    gj_context *ctx = env_context(&log);
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_true(stats.max_bytes == (uint64_t)1 << 30);
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
        cmocka_unit_test_setup(precompiled_entry_loads_without_nvrtc, clear_env),
        cmocka_unit_test_setup(nvrtc_switch, clear_env),
        cmocka_unit_test_setup(byte_counts_parse, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
