/* Without NVRTC: a precompiled entry loads (found by its configuration key), anything
 * else fails clearly, naming the configuration key, the full key it would have with the
 * NVRTC that last filled the directory, and the `gridjit compile` command that makes
 * it; and the switch that turns NVRTC off per context. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_support.h"
#include "codegen/options.h"
#include "compile/encoding_unit.h"
#include "compile/key.h"
#include "compile/meta.h"
#include "compile/options.h"
#include "test_env.h"

/* A small configuration: generated and keyed quickly, compiled in a fraction of a second. */
#define CONFIG "{\"n_levels\": 1, \"log2_hashmap_size\": 10}"
#define PRECOMPILE_NVRTC "12.4 gnu-build-id:feedface\n"

static const gj__nvrtc_identity nvrtc_12_4 = {.major = 12, .minor = 4, .build = "gnu-build-id:feedface"};

static int clear_env(void **state) {
    (void)state;
    unsetenv("GRIDJIT_NVRTC");
    unsetenv("GRIDJIT_LINEINFO");
    unsetenv("GRIDJIT_CACHE_PATH");
    unsetenv("GRIDJIT_CACHE_DISABLE");
    return 0;
}

static void assert_contains(const char *text, const char *part) {
    if (!strstr(text, part)) {
        fail_msg("\"%s\" lacks \"%s\"", text, part);
    }
}

/* ------------------------------------------------- gj_compile_source units */

/* The keys gj_compile_source uses for gjt_tiny_source(variant) on arch (nvrtc NULL: only
 * the configuration key). */
static gj__compile_key tiny_key(int variant, const char *arch_name, const gj__nvrtc_identity *nvrtc) {
    gj__arch arch;
    assert_int_equal(gj__arch_parse(NULL, arch_name, &arch), GJ_OK);
    const char *options[GJ__MAX_COMPILE_OPTIONS];
    char buffer[GJ__COMPILE_OPTIONS_BUFFER];
    size_t n = gj__compile_options(arch.name, 0, options, GJ__MAX_COMPILE_OPTIONS, buffer, sizeof buffer);
    assert_true(n > 0);
    gj__unit unit = {.source = gjt_tiny_source(variant), .file_name = GJ__PROGRAM_NAME, .names = GJT_TINY_NAMES,
                     .n_names = 2};
    gj__key_request req = {&unit, &arch, options, n, nvrtc};
    gj__compile_key key;
    assert_int_equal(gj__compile_key_make(&req, &key), 0);
    return key;
}

/* What `precompile` with NVRTC 12.4 leaves for the tiny source: the entry under its full
 * key in its configuration group, and the note of the NVRTC that filled the directory. */
static void precompile_by_hand(gj_context *ctx, int variant, const char *target, const gjt_blob *payload) {
    gj__compile_key key = tiny_key(variant, "sm_80", &nvrtc_12_4);
    gj_program *prog = gj__program_new();
    prog->kind = GJ_BINARY_CUBIN;
    snprintf(prog->arch, sizeof prog->arch, "%s", target);
    prog->n_kernels = 2;
    prog->kernel_names = calloc(2, sizeof(char *));
    prog->lowered_names = calloc(2, sizeof(char *));
    prog->kernel_names[0] = strdup("&k0");
    prog->kernel_names[1] = strdup("&k1");
    prog->lowered_names[0] = strdup("_Z2k0Pf");
    prog->lowered_names[1] = strdup("_Z2k1Pf");
    size_t meta_size = 0;
    uint8_t *meta = gj__meta_encode(prog, &nvrtc_12_4, &meta_size);
    assert_non_null(meta);
    gj__store_put(&ctx->store, &ctx->diag, &key.key, &key.config, meta, meta_size, payload->payload,
                  payload->payload_size, NULL);
    gj__store_note_put(&ctx->store, &ctx->diag, "nvrtc-identity", PRECOMPILE_NVRTC);
    free(meta);
    gj_program_destroy(prog);
}

static void precompiled_entry_loads_without_nvrtc(void **state) {
    (void)state;
    char *dir = gjt_scratch("no_nvrtc");
    gj_context *ctx = gjt_context(dir, NULL);
    gjt_blob payload;
    gjt_blob_init(&payload, 0, 700);
    precompile_by_hand(ctx, 0, "sm_80", &payload);
    gj_context_destroy(ctx);

    /* without NVRTC: loaded from the entry, which tells the full key */
    gjt_log_capture log;
    ctx = gjt_context(dir, &log);
    assert_int_equal(gj_context_set_nvrtc_enabled(ctx, 0), GJ_OK);
    gj_program *prog = NULL;
    assert_int_equal(gjt_compile_tiny(ctx, 0, "sm_80", &prog), GJ_OK);
    assert_int_equal(gj_program_cache_status(prog), GJ_CACHE_HIT);
    gj__compile_key full = tiny_key(0, "sm_80", &nvrtc_12_4);
    assert_string_equal(gj_program_cache_key(prog), full.hex);
    size_t size = 0;
    const void *binary = gj_program_binary(prog, &size);
    assert_int_equal(size, 700);
    assert_memory_equal(binary, payload.payload, 700);
    assert_int_equal(gj_program_kind(prog), GJ_BINARY_CUBIN);
    assert_string_equal(gj_program_arch(prog), "sm_80");
    assert_int_equal(gj_program_n_kernels(prog), 2);
    assert_string_equal(gj_program_kernel_name(prog, 1), "&k1");
    assert_string_equal(gj_program_lowered_name(prog, 1), "_Z2k1Pf");
    assert_string_equal(gj_program_source(prog), gjt_tiny_source(0));
    gj_program_destroy(prog);

    /* another source: a clear failure naming both keys, why NVRTC is missing, and advice */
    assert_int_equal(gjt_compile_tiny(ctx, 1, "sm_80", &prog), GJ_ERROR_NO_NVRTC);
    assert_null(prog);
    const char *msg = gj_context_errmsg(ctx);
    assert_contains(msg, tiny_key(1, "sm_80", NULL).config_hex);
    assert_contains(msg, tiny_key(1, "sm_80", &nvrtc_12_4).hex); /* with the NVRTC last used here */
    assert_contains(msg, "NVRTC 12.4");
    assert_contains(msg, "gj_context_set_nvrtc_enabled");
    assert_contains(msg, "compiling it once with NVRTC available");
    assert_int_equal(log.warnings, 0);
    gj_context_destroy(ctx);

    /* GRIDJIT_NVRTC=off says so instead */
    setenv("GRIDJIT_NVRTC", "off", 1);
    ctx = gjt_context(dir, NULL);
    assert_int_equal(gjt_compile_tiny(ctx, 0, "sm_80", &prog), GJ_OK);
    gj_program_destroy(prog);
    assert_int_equal(gjt_compile_tiny(ctx, 1, "sm_80", &prog), GJ_ERROR_NO_NVRTC);
    assert_contains(gj_context_errmsg(ctx), "GRIDJIT_NVRTC=off");
    gj_context_destroy(ctx);
    unsetenv("GRIDJIT_NVRTC");
    gjt_blob_free(&payload);
    free(dir);
}

/* An entry whose metadata names another target than its key is refused (broken, removed,
 * counted) rather than loaded. */
static void entry_for_another_target_is_refused(void **state) {
    (void)state;
    char *dir = gjt_scratch("no_nvrtc_mismatch");
    gjt_log_capture log;
    gj_context *ctx = gjt_context(dir, &log);
    gjt_blob payload;
    gjt_blob_init(&payload, 1, 300);
    precompile_by_hand(ctx, 0, "sm_90", &payload);
    assert_int_equal(gj_context_set_nvrtc_enabled(ctx, 0), GJ_OK);
    gj_program *prog = NULL;
    assert_int_equal(gjt_compile_tiny(ctx, 0, "sm_80", &prog), GJ_ERROR_NO_NVRTC);
    assert_null(prog);
    assert_int_equal(log.warnings, 1);
    assert_contains(log.last, "target mismatch");
    assert_int_equal(gjt_count_suffix(dir, ".gjc"), 0);
    gj_cache_stats stats;
    assert_int_equal(gj_context_cache_stats(ctx, GJ_CACHE_STATS_CONTEXT, &stats), GJ_OK);
    assert_int_equal(stats.corrupt, 1);
    assert_int_equal(stats.misses, 1);
    assert_int_equal(stats.hits, 0);
    gjt_blob_free(&payload);
    gj_context_destroy(ctx);
    free(dir);
}

/* ------------------------------------------------------ gj_compile's hint */

typedef struct hint_case {
    gj_context *ctx;
    gj_encoding *enc;
    char *dir;
} hint_case;

static void hint_case_init(hint_case *h, const char *name) {
    h->dir = gjt_scratch(name);
    h->ctx = gjt_context(h->dir, NULL);
    assert_int_equal(gj_context_set_nvrtc_enabled(h->ctx, 0), GJ_OK);
    assert_int_equal(gj_encoding_create(h->ctx, CONFIG, 2, &h->enc), GJ_OK);
}

static void hint_case_free(hint_case *h) {
    gj_encoding_destroy(h->enc);
    gj_context_destroy(h->ctx);
    free(h->dir);
}

/* gj_compile without NVRTC and without an entry: its message (copied into out). */
static void hint_for(hint_case *h, const gj_codegen_options *opts, const char *arch, char *out, size_t size) {
    gj_program *prog = NULL;
    assert_int_equal(gj_compile(h->ctx, h->enc, opts, arch, &prog), GJ_ERROR_NO_NVRTC);
    assert_null(prog);
    snprintf(out, size, "%s", gj_context_errmsg(h->ctx));
}

/* The configuration key gj_compile computes for enc, opts and arch. */
static void config_key_of(hint_case *h, const gj_codegen_options *opts, const char *arch_name, char hex[33]) {
    gj__arch arch;
    assert_int_equal(gj__arch_parse(NULL, arch_name, &arch), GJ_OK);
    gj_codegen_options resolved;
    assert_int_equal(gj__codegen_options_resolve(&h->ctx->diag, opts, &resolved), GJ_OK);
    gj__encoding_unit unit;
    assert_int_equal(gj__encoding_unit_make(&h->ctx->compiler, h->enc, &resolved, GJ__PART_ALL, &arch, 1, &unit), GJ_OK);
    const char *options[GJ__MAX_COMPILE_OPTIONS];
    char buffer[GJ__COMPILE_OPTIONS_BUFFER];
    /* A whole unit of kernels compiles split (compile/options.h). */
    size_t n = gj__compile_options(arch.name, unit.request.split ? GJ__OPTIONS_SPLIT : 0u, options,
                                   GJ__MAX_COMPILE_OPTIONS, buffer, sizeof buffer);
    assert_true(unit.request.split);
    gj__key_request req = {&unit.request.unit, &arch, options, n, NULL};
    gj__compile_key key;
    assert_int_equal(gj__compile_key_make(&req, &key), 0);
    snprintf(hex, 33, "%s", key.config_hex);
    gj__encoding_unit_free(&unit);
}

static void message_names_the_precompile_command(void **state) {
    (void)state;
    hint_case h;
    hint_case_init(&h, "hint_command");
    char msg[4096], want[4096], key[33];
    hint_for(&h, NULL, "sm_80", msg, sizeof msg);
    char *json = gj_encoding_hyperparams(h.enc);
    assert_null(strchr(json, '\'')); /* quoted as it is */
    /* gj_compile's whole unit is what `gridjit compile` makes (module programs: precompile) */
    snprintf(want, sizeof want, "gridjit compile --config '%s' --dims 2 --arch sm_80 --cache-dir '%s'", json,
             h.dir);
    gj_free(json);
    assert_contains(msg, want);
    assert_null(strstr(msg, "--pass")); /* every pass: the default */
    assert_null(strstr(msg, "code generation options"));
    config_key_of(&h, NULL, "sm_80", key);
    assert_contains(msg, key);
    assert_contains(msg, "configuration key");

    /* a PTX target is asked for with --ptx */
    hint_for(&h, NULL, "compute_90", msg, sizeof msg);
    assert_contains(msg, "--arch sm_90 --ptx");
    config_key_of(&h, NULL, "compute_90", key);
    assert_contains(msg, key);

    /* options the command line cannot state are pointed out */
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.block_size = 128;
    hint_for(&h, &opts, "sm_80", msg, sizeof msg);
    assert_contains(msg, "(or the library with this program's code generation options)");
    hint_case_free(&h);
}

/* The pass list names exactly the passes asked for, comma-separated, with nothing before
 * the first (regression: "--pass ,backward" for a backward-only program). */
static void message_names_the_passes(void **state) {
    (void)state;
    hint_case h;
    hint_case_init(&h, "hint_passes");
    static const struct {
        uint32_t passes;
        const char *flag;
    } cases[] = {{GJ_PASS_BACKWARD, " --pass backward --cache-dir"},
                 {GJ_PASS_FORWARD, " --pass forward --cache-dir"},
                 {GJ_PASS_BACKWARD_BACKWARD, " --pass backward_backward --cache-dir"},
                 {GJ_PASS_FORWARD | GJ_PASS_BACKWARD_BACKWARD, " --pass forward,backward_backward --cache-dir"},
                 {GJ_PASS_BACKWARD | GJ_PASS_BACKWARD_BACKWARD, " --pass backward,backward_backward --cache-dir"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gj_codegen_options opts;
        gj_codegen_options_init(&opts);
        opts.passes = cases[i].passes;
        char msg[4096];
        hint_for(&h, &opts, "sm_80", msg, sizeof msg);
        assert_null(strstr(msg, "--pass ,"));
        assert_contains(msg, cases[i].flag);
    }
    hint_case_free(&h);
}

/* ------------------------------------------------------------ the switch */

static void nvrtc_switch(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_true(ctx->nvrtc.enabled);
    assert_int_equal(gj_context_set_nvrtc_enabled(ctx, 0), GJ_OK);
    assert_false(ctx->nvrtc.enabled);
    int major = 0, minor = 0;
    assert_int_equal(gj_nvrtc_version(ctx, &major, &minor), GJ_ERROR_NO_NVRTC); /* the loader honours it */
    assert_contains(gj_context_errmsg(ctx), "gj_context_set_nvrtc_enabled");
    assert_int_equal(gj_context_set_nvrtc_enabled(ctx, 1), GJ_OK);
    assert_true(ctx->nvrtc.enabled);
    const gj_status status = gj_nvrtc_version(ctx, &major, &minor);
    if (status == GJ_OK) {
        assert_true(major >= 12);
    } else {
        assert_int_equal(status, GJ_ERROR_NO_NVRTC);
        assert_null(strstr(gj_context_errmsg(ctx), "gj_context_set_nvrtc_enabled"));
    }
    gj_context_destroy(ctx);
}

/* ------------------------------------------------------ with a real NVRTC */

/* gj_compile stores what it compiles; with NVRTC switched off the same program loads
 * from the entry with the same key, and another one is refused naming the full key it
 * would have with this NVRTC. */
static void compiled_entry_loads_after_nvrtc_is_off(void **state) {
    (void)state;
    if (!gj_test_have_nvrtc()) {
        skip();
    }
    hint_case h;
    hint_case_init(&h, "nvrtc_roundtrip");
    assert_int_equal(gj_context_set_nvrtc_enabled(h.ctx, 1), GJ_OK);
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = GJ_PASS_FORWARD;
    gj_program *made = NULL, *loaded = NULL;
    assert_int_equal(gj_compile(h.ctx, h.enc, &opts, "sm_80", &made), GJ_OK);
    assert_int_equal(gj_program_cache_status(made), GJ_CACHE_MISS);
    assert_int_equal(strlen(gj_program_cache_key(made)), 32);

    assert_int_equal(gj_context_set_nvrtc_enabled(h.ctx, 0), GJ_OK);
    assert_int_equal(gj_compile(h.ctx, h.enc, &opts, "sm_80", &loaded), GJ_OK);
    assert_int_equal(gj_program_cache_status(loaded), GJ_CACHE_HIT);
    assert_string_equal(gj_program_cache_key(loaded), gj_program_cache_key(made));
    size_t a = 0, b = 0;
    const void *made_binary = gj_program_binary(made, &a);
    const void *loaded_binary = gj_program_binary(loaded, &b);
    assert_int_equal(a, b);
    assert_memory_equal(made_binary, loaded_binary, a);
    gj_program_destroy(loaded);

    /* with lineinfo the key differs: not there, and the message names the key it would have */
    assert_int_equal(gj_context_set_lineinfo(h.ctx, 1), GJ_OK);
    assert_int_equal(gj_compile(h.ctx, h.enc, &opts, "sm_80", &loaded), GJ_ERROR_NO_NVRTC);
    assert_contains(gj_context_errmsg(h.ctx), "last used here");
    assert_null(strstr(gj_context_errmsg(h.ctx), gj_program_cache_key(made)));
    gj_program_destroy(made);
    hint_case_free(&h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(precompiled_entry_loads_without_nvrtc, clear_env),
        cmocka_unit_test_setup(entry_for_another_target_is_refused, clear_env),
        cmocka_unit_test_setup(message_names_the_precompile_command, clear_env),
        cmocka_unit_test_setup(message_names_the_passes, clear_env),
        cmocka_unit_test_setup(nvrtc_switch, clear_env),
        cmocka_unit_test_setup(compiled_entry_loads_after_nvrtc_is_off, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
