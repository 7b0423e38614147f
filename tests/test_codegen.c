/*
 * Code generation: golden sources, determinism, structure, options.
 *
 * Golden files live in tests/golden/NAME.cu. To regenerate them after an intended
 * change of the generated code:
 *     GRIDJIT_UPDATE_GOLDEN=1 ctest --test-dir build -R test_codegen
 * then review the diff (git diff tests/golden) before committing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridjit.h"
#include "test_env.h"

typedef struct golden_case {
    const char *name;
    const char *json;
    uint32_t passes;
    uint32_t pad_to;
    int device_functions_only;
    gj_order order;
} golden_case;

static const golden_case golden_cases[] = {
    {"hashgrid_default_3d", "{\"otype\":\"HashGrid\"}", GJ_PASS_ALL, 1, 0, GJ_ORDER_LEVEL_MAJOR},
    {"dense_2d_smoothstep_fp32_padded",
     "{\"otype\":\"DenseGrid\",\"n_levels\":4,\"base_resolution\":8,\"interpolation\":\"Smoothstep\","
     "\"precision\":\"fp32\",\"n_dims_to_encode\":2}",
     GJ_PASS_ALL, 16, 0, GJ_ORDER_POINT_MAJOR},
    {"tiled_1d_nearest_f1_stochastic",
     "{\"otype\":\"TiledGrid\",\"n_levels\":3,\"n_features_per_level\":1,\"base_resolution\":32,"
     "\"interpolation\":\"Nearest\",\"stochastic_interpolation\":true,\"n_dims_to_encode\":1}",
     GJ_PASS_ALL, 1, 0, GJ_ORDER_LEVEL_MAJOR},
    {"baseconvert_12d_f8_fixed_point_device_functions",
     "{\"otype\":\"Grid\",\"hash\":\"BaseConvert\",\"n_levels\":2,\"n_features_per_level\":8,\"base_resolution\":2,"
     "\"log2_hashmap_size\":14,\"fixed_point_pos\":true,\"n_dims_to_encode\":12}",
     GJ_PASS_ALL, 1, 1, GJ_ORDER_LEVEL_MAJOR},
    {"rng_4d_f4_backward_only",
     "{\"otype\":\"HashGrid\",\"hash\":\"Rng\",\"n_levels\":3,\"n_features_per_level\":4,\"log2_hashmap_size\":15,"
     "\"n_dims_to_encode\":4}",
     GJ_PASS_BACKWARD, 1, 0, GJ_ORDER_LEVEL_MAJOR},
};

/* gj_codegen_options.unroll_levels for generate() (the default: 0). */
static int g_unroll_levels;

/* The source of json (its own n_dims) generated with opts. */
static char *generate_with(const char *json, const gj_codegen_options *opts) {
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    if (gj_encoding_create(ctx, json, 0, &enc) != GJ_OK) {
        fail_msg("config refused: %s", gj_context_errmsg(ctx));
    }
    char *source = NULL;
    size_t length = 0;
    assert_int_equal(gj_encoding_generate(ctx, enc, opts, &source, &length), GJ_OK);
    assert_int_equal(length, strlen(source));
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
    return source;
}

static char *generate(const char *json, uint32_t passes, uint32_t pad_to, int device_functions_only, gj_order order,
                      const char *name) {
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.passes = passes;
    opts.output_width_multiple = pad_to;
    opts.device_functions_only = device_functions_only;
    opts.order = order;
    opts.unroll_levels = g_unroll_levels;
    if (name) {
        opts.name = name;
    }
    return generate_with(json, &opts);
}

static void golden_sources_match(void **state) {
    (void)state;
    const int update = getenv("GRIDJIT_UPDATE_GOLDEN") && strcmp(getenv("GRIDJIT_UPDATE_GOLDEN"), "1") == 0;
    for (size_t i = 0; i < sizeof golden_cases / sizeof golden_cases[0]; ++i) {
        const golden_case *g = &golden_cases[i];
        char *source = generate(g->json, g->passes, g->pad_to, g->device_functions_only, g->order, NULL);
        char relative[256];
        snprintf(relative, sizeof relative, "tests/golden/%s.cu", g->name);
        const char *path = gj_test_source_path(relative);
        if (update) {
            assert_int_equal(gj_test_write_file(path, source, strlen(source)), 0);
            printf("updated %s\n", path);
        } else {
            size_t size = 0;
            char *expected = gj_test_read_file(path, &size);
            if (!expected) {
                fail_msg("missing golden file %s (regenerate with GRIDJIT_UPDATE_GOLDEN=1)", path);
            }
            if (strcmp(expected, source) != 0) {
                fail_msg("generated source for %s differs from %s (if intended: GRIDJIT_UPDATE_GOLDEN=1, review the diff)",
                         g->name, path);
            }
            free(expected);
        }
        free(source);
    }
}

static void generation_is_deterministic(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof golden_cases / sizeof golden_cases[0]; ++i) {
        const golden_case *g = &golden_cases[i];
        char *a = generate(g->json, g->passes, g->pad_to, g->device_functions_only, g->order, NULL);
        char *b = generate(g->json, g->passes, g->pad_to, g->device_functions_only, g->order, NULL);
        assert_string_equal(a, b);
        free(a);
        free(b);
    }
}

static size_t count(const char *haystack, const char *needle) {
    size_t n = 0;
    for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle)) {
        ++n;
    }
    return n;
}

/* By default the device functions loop over the level table, which is emitted before
 * them (also without kernels); each level's row appears once. */
static void device_functions_loop_over_the_level_table(void **state) {
    (void)state;
    const char *json = "{\"otype\":\"HashGrid\",\"n_levels\":7,\"per_level_scale\":1.3819,\"base_resolution\":5}";
    for (int only = 0; only <= 1; ++only) {
        char *source = generate(json, GJ_PASS_ALL, 1, only, GJ_ORDER_LEVEL_MAJOR, NULL);
        assert_int_equal(count(source, "// Level "), 0);
        assert_int_equal(count(source, "gj_levels_forward<C, gj_encode_levels>"), 1);
        assert_int_equal(count(source, "gj_levels_backward<C, gj_encode_levels>"), 1);
        assert_int_equal(count(source, "gj_levels_backward_backward<C, gj_encode_levels>"), 1);
        for (uint32_t l = 0; l < 7; ++l) {
            char table_row[32];
            snprintf(table_row, sizeof table_row, " // level %u\n", l);
            assert_int_equal(count(source, table_row), 1);
        }
        const char *table = strstr(source, "__constant__ gj_level gj_encode_level_table[7]");
        const char *forward = strstr(source, "__device__ gj_encode_out_t gj_encode(");
        assert_non_null(table);
        assert_non_null(forward);
        assert_true(table < forward);
        free(source);
    }
}

/* With unroll_levels, every per-level constant appears as a literal, once per device
 * function and once in the kernels' level table. */
static void levels_are_unrolled_with_literal_constants(void **state) {
    (void)state;
    const char *json = "{\"otype\":\"HashGrid\",\"n_levels\":7,\"per_level_scale\":1.3819,\"base_resolution\":5}";
    g_unroll_levels = 1;
    char *source = generate(json, GJ_PASS_ALL, 1, 0, GJ_ORDER_LEVEL_MAJOR, NULL);
    g_unroll_levels = 0;
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_encoding_create(ctx, json, 0, &enc), GJ_OK);
    for (uint32_t l = 0; l < 7; ++l) {
        gj_level_info info;
        assert_int_equal(gj_encoding_level(enc, l, &info), GJ_OK);
        char comment[96], row[160], table_row[200];
        snprintf(comment, sizeof comment, "// Level %u: scale ", l);
        /* A comment above the level in each of the three device functions. */
        assert_int_equal(count(source, comment), 3);
        /* Its row of literals (offset, scale, resolution, entries): in the three device
         * functions and in the level table. */
        snprintf(row, sizeof row, "{%lluull, ", (unsigned long long)(info.offset * 2));
        assert_int_equal(count(source, row), 4);
        snprintf(row, sizeof row, ", %uu, %uu, ", info.resolution, info.entries);
        assert_int_equal(count(source, row), 4);
        snprintf(table_row, sizeof table_row, " // level %u\n", l);
        assert_int_equal(count(source, table_row), 1);
        /* The scale literal round-trips to the layout's float. */
        const char *at = strstr(source, comment);
        assert_non_null(at);
        const float parsed = strtof(at + strlen(comment), NULL);
        assert_true(parsed == info.scale);
    }
    assert_int_equal(count(source, "// Level "), 3 * 7);
    assert_null(strstr(source, "#include"));
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
    free(source);
}

static void header_states_version_config_and_options(void **state) {
    (void)state;
    char *source = generate("{\"otype\":\"HashGrid\",\"n_levels\":2}", GJ_PASS_ALL, 1, 0, GJ_ORDER_LEVEL_MAJOR, NULL);
    char version[64];
    snprintf(version, sizeof version, "// Generated by gridjit %s.", GJ_VERSION_STRING);
    assert_true(strncmp(source, "// ====", 7) == 0);
    assert_non_null(strstr(source, version));
    assert_non_null(strstr(source, "\"log2_hashmap_size\""));
    assert_non_null(strstr(source, "--gpu-architecture=<target>"));
    free(source);
}

static void passes_and_names_select_what_is_emitted(void **state) {
    (void)state;
    const char *json = "{\"otype\":\"HashGrid\",\"n_levels\":2}";
    char *fwd = generate(json, GJ_PASS_FORWARD, 1, 0, GJ_ORDER_LEVEL_MAJOR, "my_grid");
    assert_non_null(strstr(fwd, "__device__ my_grid_out_t my_grid(const my_grid_in_t& x"));
    assert_null(strstr(fwd, "my_grid_bwd("));
    assert_null(strstr(fwd, "my_grid_bwdbwd("));
    assert_non_null(strstr(fwd, "__global__ void __launch_bounds__(256) my_grid_forward("));
    assert_null(strstr(fwd, "my_grid_backward("));
    free(fwd);

    char *funcs = generate(json, GJ_PASS_ALL, 1, 1, GJ_ORDER_LEVEL_MAJOR, NULL);
    assert_null(strstr(funcs, "__global__"));
    assert_non_null(strstr(funcs, "gj_encode_bwdbwd("));
    free(funcs);
}

static void padding_widens_the_output_vector(void **state) {
    (void)state;
    /* 3 levels x 2 features = 6 outputs, padded to a multiple of 16. */
    char *source = generate("{\"otype\":\"HashGrid\",\"n_levels\":3}", GJ_PASS_ALL, 16, 0, GJ_ORDER_LEVEL_MAJOR, NULL);
    assert_non_null(strstr(source, "typedef gj_vec<gj_half, 16> gj_encode_out_t;"));
    assert_non_null(strstr(source, "// Padding: outputs 6..15 are 0."));
    free(source);
}

static void bad_options_are_refused(void **state) {
    (void)state;
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_encoding_create(ctx, "{}", 0, &enc), GJ_OK);
    gj_codegen_options opts;
    char *source = NULL;
    gj_codegen_options_init(&opts);
    opts.name = "1bad";
    assert_int_equal(gj_encoding_generate(ctx, enc, &opts, &source, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(source);
    assert_non_null(strstr(gj_context_errmsg(ctx), "name"));
    gj_codegen_options_init(&opts);
    opts.block_size = 100;
    assert_int_equal(gj_encoding_generate(ctx, enc, &opts, &source, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "block_size"));
    gj_codegen_options_init(&opts);
    opts.points_per_thread = 17;
    assert_int_equal(gj_encoding_generate(ctx, enc, &opts, &source, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "points_per_thread"));
    gj_codegen_options_init(&opts);
    opts.passes = 8;
    assert_int_equal(gj_encoding_generate(ctx, enc, &opts, &source, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(gj_context_errmsg(ctx), "passes"));
    assert_int_equal(gj_encoding_generate(ctx, NULL, NULL, &source, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_int_equal(gj_encoding_generate(ctx, enc, NULL, NULL, NULL), GJ_ERROR_INVALID_ARGUMENT);
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
}

/* gradients_fp32: grad_t (kernels and device functions) becomes float for fp16 encodings,
 * the header says so, and nothing else changes; the default output is untouched. */
static char *generate_with_gradients(const char *json, int gradients_fp32, int device_functions_only) {
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    assert_int_equal(opts.gradients_fp32, 0);
    opts.gradients_fp32 = gradients_fp32;
    opts.device_functions_only = device_functions_only;
    return generate_with(json, &opts);
}

static void gradients_fp32_changes_grad_t(void **state) {
    (void)state;
    static const char *const fp16_f2 = "{\"otype\":\"HashGrid\",\"n_levels\":2}";
    for (int functions_only = 0; functions_only <= 1; ++functions_only) {
        char *plain = generate_with_gradients(fp16_f2, 0, functions_only);
        char *fp32 = generate_with_gradients(fp16_f2, 1, functions_only);
        assert_non_null(strstr(plain, "    typedef gj_half grad_t;"));
        assert_null(strstr(plain, "typedef float grad_t;"));
        assert_non_null(strstr(plain, "gradients accumulated in fp16.\n"));
        assert_non_null(strstr(fp32, "    typedef float grad_t;"));
        assert_null(strstr(fp32, "typedef gj_half grad_t;"));
        assert_non_null(strstr(fp32, "gradients accumulated in fp32 (codegen option gradients_fp32).\n"));
        /* Parameters and outputs stay fp16. */
        assert_non_null(strstr(fp32, "    typedef gj_half param_t;"));
        /* The device functions take the accumulation type. */
        assert_non_null(strstr(plain, "gj_half* __restrict__ dL_dparams, gj_encode_in_t*"));
        assert_non_null(strstr(fp32, "float* __restrict__ dL_dparams, gj_encode_in_t*"));
        assert_non_null(strstr(fp32, "const gj_u8* __restrict__ fwd_ctx, float* __restrict__ dL_dparams,"));
        free(plain);
        free(fp32);
    }
    /* fp32 and F = 1 encodings accumulate in fp32 anyway: the option only shows in the header. */
    static const char *const already[] = {"{\"otype\":\"HashGrid\",\"n_levels\":2,\"precision\":\"fp32\"}",
                                          "{\"otype\":\"HashGrid\",\"n_levels\":2,\"n_features_per_level\":1}"};
    for (size_t i = 0; i < 2; ++i) {
        char *plain = generate_with_gradients(already[i], 0, 0);
        char *fp32 = generate_with_gradients(already[i], 1, 0);
        assert_non_null(strstr(plain, "    typedef float grad_t;"));
        assert_non_null(strstr(fp32, "    typedef float grad_t;"));
        assert_string_not_equal(plain, fp32);
        free(plain);
        free(fp32);
    }
    /* 0 and 1 only. */
    gj_context *ctx = NULL;
    gj_encoding *enc = NULL;
    assert_int_equal(gj_context_create(&ctx), GJ_OK);
    assert_int_equal(gj_encoding_create(ctx, "{}", 0, &enc), GJ_OK);
    gj_codegen_options opts;
    gj_codegen_options_init(&opts);
    opts.gradients_fp32 = 2;
    char *source = NULL;
    assert_int_equal(gj_encoding_generate(ctx, enc, &opts, &source, NULL), GJ_ERROR_INVALID_ARGUMENT);
    assert_null(source);
    assert_non_null(strstr(gj_context_errmsg(ctx), "gradients_fp32"));
    gj_encoding_destroy(enc);
    gj_context_destroy(ctx);
}

/* A comma-decimal LC_NUMERIC (de_DE): installed, or built with localedef into the test's
 * scratch directory (LOCPATH). 0 when neither works. */
static int use_comma_locale(void) {
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8")) {
        return 1;
    }
    const char *tmp = getenv("GRIDJIT_TEST_TMP") ? getenv("GRIDJIT_TEST_TMP") : "/tmp";
    char dir[1024], command[2400];
    snprintf(dir, sizeof dir, "%s/locale", tmp);
    snprintf(command, sizeof command, "mkdir -p '%s' && localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1",
             dir, dir);
    if (system(command) != 0) {
        return 0;
    }
    setenv("LOCPATH", dir, 1);
    return setlocale(LC_NUMERIC, "de_DE.UTF-8") != NULL;
}

/* Regression: the float literals of the generated code were printed in the host's
 * LC_NUMERIC, so an application with a comma-decimal locale got "15,0f" (not C++). The
 * source must not depend on the locale at all. */
static void the_source_does_not_depend_on_the_locale(void **state) {
    (void)state;
    const char *json = "{\"otype\":\"HashGrid\",\"n_levels\":7,\"per_level_scale\":1.3819,\"base_resolution\":5}";
    g_unroll_levels = 1; /* the per-level literals as well as the table */
    char *plain = generate(json, GJ_PASS_ALL, 1, 0, GJ_ORDER_LEVEL_MAJOR, NULL);
    if (!use_comma_locale()) {
        g_unroll_levels = 0;
        free(plain);
        printf("SKIPPED: no comma-decimal locale (de_DE) and localedef could not build one\n");
        skip();
    }
    char probe[16];
    snprintf(probe, sizeof probe, "%.1f", 1.5);
    assert_string_equal(probe, "1,5"); /* the locale is in force */
    char *localized = generate(json, GJ_PASS_ALL, 1, 0, GJ_ORDER_LEVEL_MAJOR, NULL);
    setlocale(LC_NUMERIC, "C");
    g_unroll_levels = 0;
    assert_string_equal(localized, plain);
    free(localized);
    free(plain);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_sources_match),
        cmocka_unit_test(generation_is_deterministic),
        cmocka_unit_test(levels_are_unrolled_with_literal_constants),
        cmocka_unit_test(device_functions_loop_over_the_level_table),
        cmocka_unit_test(header_states_version_config_and_options),
        cmocka_unit_test(passes_and_names_select_what_is_emitted),
        cmocka_unit_test(padding_widens_the_output_vector),
        cmocka_unit_test(bad_options_are_refused),
        cmocka_unit_test(gradients_fp32_changes_grad_t),
        cmocka_unit_test(the_source_does_not_depend_on_the_locale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
